/*
 * gemma2.c - Gemma 2 text models from GGUF (architecture "gemma2" as
 * llama.cpp's convert_hf_to_gguf.py writes it) and from Hugging Face
 * Gemma2ForCausalLM folders. Sources followed: transformers'
 * modeling_gemma2.py / configuration_gemma2.py (5.x) for the math, and
 * llama.cpp's src/models/gemma2.cpp for the GGUF keys and defaults.
 *
 * Per layer: x += post_attn_norm(attn(attn_norm(x))), x +=
 * post_ffw_norm(GeGLU(ffn_norm(x))) (sandwich RMSNorms; the GGUF already
 * carries the +1 of Gemma's norm gain, hf.c adds it for a folder). GQA with
 * NEOX RoPE (one base for every layer, 1e4 by default), no QK-norm; q scaled
 * by query_pre_attn_scalar^-1/2 (a folder's config; a GGUF lacks it, so
 * llama.cpp's rule: head_dim, or n_embd / n_head for the 27B's 46 layers);
 * attention scores capped c·tanh(s/c) before the mask (attn_logit_softcapping,
 * 50 by default; context.c passes it to the attention op). Sliding-window
 * attention on even layers (transformers' layer_types default, llama.cpp's
 * pattern 2) unless a per-layer pattern is given. GeGLU with tanh GELU.
 * Embeddings scaled by sqrt(n_embd); output tied to them unless
 * output.weight exists; final logits capped (final_logit_softcapping, 30
 * by default).
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>

static enum wk_status gemma2_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    const char *path = wk__model_path(m);
    hp->head_dim = 256;
    hp->rms_eps = 1e-6f;
    hp->rope_base = 1e4f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 8192;
    hp->final_softcap = 30.0f; /* llama.cpp's defaults where the GGUF has none */
    hp->attn_softcap = 50.0f;
    hp->sliding_window = 4096;
    float qpas = 0;
    if ((st = wk__load_common_hparams(m, err)) ||
        (st = wk__hp_f32(m, "final_logit_softcapping", false, &hp->final_softcap, err)) ||
        (st = wk__hp_f32(m, "attn_logit_softcapping", false, &hp->attn_softcap, err)) ||
        (st = wk__hp_f32(m, "attention.query_pre_attn_scalar", false, &qpas, err)) ||
        (st = wk__hp_u32(m, "attention.sliding_window", false, &hp->sliding_window, 1 << 24, err)))
        return st;
    hp->rope_base_swa = hp->rope_base;
    if ((st = wk__hp_f32(m, "rope.freq_base_swa", false, &hp->rope_base_swa, err))) return st;
    if (!(hp->final_softcap >= 0) || !(hp->attn_softcap >= 0) || !(qpas >= 0) || !(hp->rope_base_swa > 1))
        return wk_error_set(err, WK_E_FORMAT, "%s: softcap, query_pre_attn_scalar or RoPE base out of range", path);
    hp->attn_scale = qpas > 0             ? 1.0f / sqrtf(qpas)
                     : hp->n_layer == 46 ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head))
                                         : 1.0f / sqrtf((float)hp->head_dim);
    hp->embed_scale = sqrtf((float)hp->n_embd);
    m->rope_mode = WK_ROPE_NEOX;
    m->act = WK_ACT_GELU_TANH;

    if ((st = wk__load_common_tensors(m, err))) return st;
    bool *pattern = wk_calloc((size_t)hp->n_layer, sizeof *pattern), found;
    if (!pattern) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    if ((st = wk__layer_bools(m, "attention.sliding_window_pattern", pattern, &found, err))) {
        wk_free(pattern);
        return st;
    }
    const int64_t E = hp->n_embd;
    for (int i = 0; i < hp->n_layer; i++) {
        struct wk_layer *l = &m->layers[i];
        if ((st = wk__tensor(m, &l->post_attn_norm, true, true, E, 1, err, "blk.%d.post_attention_norm.weight", i)) ||
            (st = wk__tensor(m, &l->post_ffn_norm, true, true, E, 1, err, "blk.%d.post_ffw_norm.weight", i))) {
            wk_free(pattern);
            return st;
        }
        l->sliding = hp->sliding_window > 0 && (found ? pattern[i] : i % 2 == 0);
        l->rope_base = l->sliding ? hp->rope_base_swa : hp->rope_base;
        l->rope_scale = l->sliding ? 1.0f : hp->rope_freq_scale;
    }
    wk_free(pattern);
    return WK_OK;
}

WK_FAMILY(gemma2) = {
    .name = "gemma2",
    .gguf_archs = {"gemma2"},
    .hf_model_types = {"gemma2"},
    .label = NULL,
    .load = gemma2_load,
    .chat = WK_CHAT_GEMMA,
};
