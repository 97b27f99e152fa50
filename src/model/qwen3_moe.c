/*
 * qwen3_moe.c - Qwen 3 MoE (HF Qwen3MoeForCausalLM, transformers 5.24's
 * modeling_qwen3_moe.py read to learn it; GGUF architecture "qwen3moe" as
 * llama.cpp's convert_hf_to_gguf.py writes it).
 *
 * Attention as Qwen 3's (qwen3.c): RMSNorm, GQA with per-head QK-RMSNorm
 * before NEOX RoPE, scale 1/sqrt(head_dim). The FFN of a sparse layer:
 * router logits on the post-attention RMSNorm, softmax over all experts,
 * the top k (torch.topk's choice), renormalised when norm_topk_prob
 * (expert_weights_norm; a GGUF without the key: renormalised, as
 * llama.cpp runs qwen3moe), SwiGLU experts summed (context_moe.c,
 * backend_cpu_moe.c); no shared expert. A layer without a router
 * (blk.N.ffn_gate_inp.weight; transformers' mlp_only_layers and
 * decoder_sparse_step) is a dense SwiGLU of feed_forward_length. Experts
 * stacked (GGUF; HF's fused gate_up_proj) or one tensor each (HF),
 * loaded by wk__moe_softmax_experts (moe.c), which Mixtral shares.
 *
 * Not handled: RoPE scaling (refused, as for Qwen 3).
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>

static enum wk_status qwen3_moe_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    hp->head_dim = 0;
    hp->rms_eps = 1e-6f;
    hp->rope_base = 1e6f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 40960;
    hp->expert_weights_norm = true; /* llama.cpp's qwen3moe; config.json's norm_topk_prob via hf.c */
    hp->expert_weights_scale = 1.0f;
    if ((st = wk__load_common_hparams(m, err)) ||
        (st = wk__hp_u32(m, "expert_count", true, &hp->n_expert, WK_MOE_MAX_EXPERTS, err)) ||
        (st = wk__hp_u32(m, "expert_used_count", true, &hp->n_expert_used, WK_MOE_MAX_EXPERTS, err)) ||
        (st = wk__hp_u32(m, "expert_feed_forward_length", true, &hp->n_ff_exp, 1 << 20, err)))
        return st;
    char key[128];
    double d;
    snprintf(key, sizeof key, "%s.expert_weights_norm", hp->arch_name);
    if (m->hf && wk__hf_number(m->hf, key, &d)) hp->expert_weights_norm = d != 0;
    else if (m->gguf && wk_gguf_find(m->gguf, key) && (st = wk_gguf_get_bool(m->gguf, key, &hp->expert_weights_norm, err)))
        return st;
    if (hp->n_expert < 1 || hp->n_expert_used < 1 || hp->n_expert_used > hp->n_expert || hp->n_ff_exp < 1)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.expert_used_count %d must be 1..expert_count %d (at most %d), "
                            "expert_feed_forward_length set", wk__model_path(m), hp->arch_name, hp->n_expert_used,
                            hp->n_expert, WK_MOE_MAX_EXPERTS);
    hp->rope_base_swa = hp->rope_base;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embed_scale = 1.0f;
    hp->final_softcap = 0;
    hp->sliding_window = 0;
    m->rope_mode = WK_ROPE_NEOX;
    m->act = WK_ACT_SILU;
    if ((st = wk__load_embeddings(m, err))) return st;
    m->layers = wk_calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (m->hf) m->expert_tables = wk_calloc((size_t)hp->n_layer * 3 * (size_t)hp->n_expert, sizeof *m->expert_tables);
    if (!m->layers || (m->hf && !m->expert_tables)) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    const int64_t E = hp->n_embd, D = hp->head_dim, HQ = (int64_t)hp->n_head * D, HK = (int64_t)hp->n_head_kv * D,
                  F = hp->n_ff;
    for (int i = 0; i < hp->n_layer; i++) {
        struct wk_layer *l = &m->layers[i];
        char name[64];
        snprintf(name, sizeof name, "blk.%d.ffn_gate_inp.weight", i);
        const bool sparse = wk__find_tensor(m, name) != NULL;
        if ((st = wk__tensor(m, &l->attn_norm, false, true, E, 1, err, "blk.%d.attn_norm.weight", i)) ||
            (st = wk__tensor(m, &l->wq, false, false, E, HQ, err, "blk.%d.attn_q.weight", i)) ||
            (st = wk__tensor(m, &l->wk, false, false, E, HK, err, "blk.%d.attn_k.weight", i)) ||
            (st = wk__tensor(m, &l->wv, false, false, E, HK, err, "blk.%d.attn_v.weight", i)) ||
            (st = wk__tensor(m, &l->wo, false, false, HQ, E, err, "blk.%d.attn_output.weight", i)) ||
            (st = wk__tensor(m, &l->q_norm, false, true, D, 1, err, "blk.%d.attn_q_norm.weight", i)) ||
            (st = wk__tensor(m, &l->k_norm, false, true, D, 1, err, "blk.%d.attn_k_norm.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_norm, false, true, E, 1, err, "blk.%d.ffn_norm.weight", i)))
            return st;
        if (sparse) {
            st = wk__moe_softmax_experts(
                m, l, i, m->expert_tables ? m->expert_tables + (size_t)i * 3 * (size_t)hp->n_expert : NULL, err);
        } else if (F < 1) {
            st = wk_error_set(err, WK_E_FORMAT, "%s: layer %d has no router (a dense layer) and %s.feed_forward_length "
                              "is not set", wk__model_path(m), i, hp->arch_name);
        } else if (!(st = wk__tensor(m, &l->ffn_gate, false, false, E, F, err, "blk.%d.ffn_gate.weight", i)) &&
                   !(st = wk__tensor(m, &l->ffn_up, false, false, E, F, err, "blk.%d.ffn_up.weight", i))) {
            st = wk__tensor(m, &l->ffn_down, false, false, F, E, err, "blk.%d.ffn_down.weight", i);
        }
        if (st) return st;
        l->rope_base = hp->rope_base;
        l->rope_scale = hp->rope_freq_scale;
        l->head_dim = (int32_t)D;
        l->n_head_kv = hp->n_head_kv;
        l->n_rot = hp->n_rot;
        l->n_ff = sparse ? 0 : hp->n_ff;
        l->kv_layer = i;
        l->out_scale = 1.0f;
    }
    return WK_OK;
}

WK_FAMILY(qwen3_moe) = {
    .name = "qwen3moe",
    .gguf_archs = {"qwen3moe"},
    .hf_model_types = {"qwen3_moe"},
    .label = "Qwen 3 MoE",
    .load = qwen3_moe_load,
    .chat = WK_CHAT_QWEN3,
};
