/*
 * olmo2.c - AllenAI OLMo 2 models (HF Olmo2ForCausalLM, model_type "olmo2";
 * GGUF architecture "olmo2" as llama.cpp's convert_hf_to_gguf.py writes
 * it). Sources followed: transformers' modeling_olmo2.py (5.x) for the
 * math, llama.cpp's src/models/olmo2.cpp for the GGUF names.
 *
 * Per layer, with no norm before either block (hp.no_pre_norm):
 *   x += RMSNorm_post_attn(attn(x)),  x += RMSNorm_post_ffw(SwiGLU(x))
 * (post_attention_layernorm and post_feedforward_layernorm; GGUF
 * blk.N.post_attention_norm and blk.N.post_ffw_norm). Q and K are
 * RMS-normalised over the whole projection, n_head·head_dim and
 * n_head_kv·head_dim wide (q_norm, k_norm; qk_norm_full), before NEOX
 * RoPE: the converter does not permute Q and K for OLMo 2, so one RoPE
 * mode serves the GGUF and the folder. Scale head_dim^-1/2, final RMSNorm,
 * an untied output unless output.weight is absent. No biases, no
 * embedding scale.
 *
 * Not handled: OLMo 3 (Olmo3ForCausalLM; GGUF olmo2 with a sliding-window
 * pattern): a GGUF carrying olmo2.attention.sliding_window is refused;
 * rope_scaling other than linear (hf.c, or the GGUF's type).
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>

static enum wk_status olmo2_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    hp->head_dim = 0; /* n_embd / n_head unless key_length says otherwise */
    hp->rms_eps = 1e-6f;
    hp->rope_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 4096;
    int32_t window = 0;
    if ((st = wk__load_common_hparams(m, err)) ||
        (st = wk__hp_u32(m, "attention.sliding_window", false, &window, 1 << 24, err)))
        return st;
    if (window > 0)
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: %s.attention.sliding_window = %d: OLMo 3's sliding "
                            "window is not supported", wk__model_path(m), hp->arch_name, window);
    hp->rope_base_swa = hp->rope_base;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embed_scale = 1.0f;
    hp->sliding_window = 0;
    hp->no_pre_norm = true;
    m->rope_mode = WK_ROPE_NEOX;
    m->act = WK_ACT_SILU;
    if ((st = wk__load_common_tensors(m, err))) return st;
    const int64_t E = hp->n_embd, HQ = (int64_t)hp->n_head * hp->head_dim, HK = (int64_t)hp->n_head_kv * hp->head_dim;
    for (int i = 0; i < hp->n_layer; i++) {
        struct wk_layer *l = &m->layers[i];
        if ((st = wk__tensor(m, &l->q_norm, false, true, HQ, 1, err, "blk.%d.attn_q_norm.weight", i)) ||
            (st = wk__tensor(m, &l->k_norm, false, true, HK, 1, err, "blk.%d.attn_k_norm.weight", i)) ||
            (st = wk__tensor(m, &l->post_attn_norm, false, true, E, 1, err, "blk.%d.post_attention_norm.weight", i)) ||
            (st = wk__tensor(m, &l->post_ffn_norm, false, true, E, 1, err, "blk.%d.post_ffw_norm.weight", i)))
            return st;
        l->qk_norm_full = true;
    }
    return WK_OK;
}

WK_FAMILY(olmo2) = {
    .name = "olmo2",
    .gguf_archs = {"olmo2"},
    .hf_model_types = {"olmo2"},
    .label = "OLMo 2",
    .load = olmo2_load,
    .chat = WK_CHAT_CHATML_IF_TEMPLATE, /* the model's own template, rendered by wick's Jinja */
};
