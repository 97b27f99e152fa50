/*
 * qwen2.c - Qwen 2 and Qwen 2.5 dense models (HF Qwen2ForCausalLM, GGUF
 * architecture "qwen2" as llama.cpp's converter writes it; Qwen2.5 chat and
 * coder models, the DeepSeek-R1 Qwen distills).
 *
 * Per layer: RMSNorm, GQA attention whose Q, K and V projections carry a
 * bias (blk.N.attn_{q,k,v}.bias, F32), NEOX RoPE over the whole head with
 * base rope.freq_base, scale 1/sqrt(head_dim); RMSNorm, SwiGLU MLP. Final
 * RMSNorm; output tied to the embeddings unless output.weight exists. No
 * QK norms, no embedding scale, no softcap, plain norm gains. As for Qwen 3
 * the GGUF conversion does not permute Q and K, so NEOX RoPE serves both
 * layouts.
 *
 * Sliding-window attention as transformers' Qwen2Config defines it: only
 * when use_sliding_window is true (sliding_window is otherwise ignored),
 * on the layers layer_types marks "sliding_attention", or without
 * layer_types on layers i >= max_window_layers; a sliding layer attends to
 * the last sliding_window positions, its own included. hf.c turns
 * config.json's fields into attention.sliding_window and
 * attention.sliding_window_pattern; llama.cpp's converter writes neither
 * (its qwen2 graph has no sliding window), so a GGUF runs with full
 * attention everywhere, as llama.cpp runs it.
 *
 * Not handled: YaRN RoPE scaling (refused naming rope_scaling or
 * qwen2.rope.scaling.type), Qwen2-MoE (architecture "qwen2moe"), Qwen2-VL.
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>

static enum wk_status qwen2_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    hp->head_dim = 0; /* n_embd / n_head */
    hp->rms_eps = 1e-6f;
    hp->rope_base = 1e6f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 32768;
    hp->sliding_window = 0;
    if ((st = wk__load_common_hparams(m, err)) ||
        (st = wk__hp_u32(m, "attention.sliding_window", false, &hp->sliding_window, 1 << 24, err)))
        return st;
    hp->rope_base_swa = hp->rope_base;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embed_scale = 1.0f;
    hp->final_softcap = 0;
    m->rope_mode = WK_ROPE_NEOX;
    m->act = WK_ACT_SILU;
    if ((st = wk__load_common_tensors(m, err))) return st;
    bool *sliding = wk_calloc((size_t)hp->n_layer, sizeof *sliding), found = false;
    if (!sliding) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    if (hp->sliding_window > 0 &&
        (st = wk__layer_bools(m, "attention.sliding_window_pattern", sliding, &found, err))) {
        wk_free(sliding);
        return st;
    }
    bool any = false;
    const int64_t HQ = (int64_t)hp->n_head * hp->head_dim, HK = (int64_t)hp->n_head_kv * hp->head_dim;
    for (int i = 0; i < hp->n_layer; i++) {
        struct wk_layer *l = &m->layers[i];
        if ((st = wk__tensor(m, &l->bq, false, true, HQ, 1, err, "blk.%d.attn_q.bias", i)) ||
            (st = wk__tensor(m, &l->bk, false, true, HK, 1, err, "blk.%d.attn_k.bias", i)) ||
            (st = wk__tensor(m, &l->bv, false, true, HK, 1, err, "blk.%d.attn_v.bias", i)))
            break;
        l->sliding = hp->sliding_window > 0 && found && sliding[i];
        any |= l->sliding;
    }
    wk_free(sliding);
    if (!any) hp->sliding_window = 0; /* no sliding layer: no ring cache */
    return st;
}

WK_FAMILY(qwen2) = {
    .name = "qwen2",
    .gguf_archs = {"qwen2"},
    .hf_model_types = {"qwen2"} /* dense; qwen2_moe is not */,
    .label = NULL,
    .load = qwen2_load,
    .chat = WK_CHAT_CHATML_IF_TEMPLATE,
};
