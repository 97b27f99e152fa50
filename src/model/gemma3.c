/*
 * gemma3.c - Gemma 3 text models from GGUF (architectures.md §3; HF
 * Gemma3ForCausalLM; llama.cpp's gemma3 graph for the GGUF conventions).
 *
 * Per layer: sandwich RMSNorms (the GGUF already carries the +1 of Gemma's
 * norm gain), GQA with per-head QK-RMSNorm, NEOX RoPE with base 1e4 on
 * sliding-window layers and rope.freq_base on global ones, GeGLU (tanh
 * GELU) MLP. Embeddings scaled by sqrt(n_embd); output tied to them unless
 * output.weight exists; optional final logit softcap.
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>

static enum wk_status gemma3_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    const char *path = wk__model_path(m);
    hp->head_dim = 256;
    hp->rms_eps = 1e-6f;
    hp->rope_base = 1e6f;
    hp->rope_base_swa = 1e4f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 8192;
    if ((st = wk__load_common_hparams(m, err)) ||
        (st = wk__hp_f32(m, "rope.freq_base_swa", false, &hp->rope_base_swa, err)) ||
        (st = wk__hp_f32(m, "rope.local.freq_base", false, &hp->rope_base_swa, err)) ||
        (st = wk__hp_f32(m, "final_logit_softcapping", false, &hp->final_softcap, err)))
        return st;
    if (!(hp->rope_base_swa > 1))
        return wk_error_set(err, WK_E_FORMAT, "%s: sliding-window RoPE base out of range", path);
    if (hp->final_softcap < 0) hp->final_softcap = 0;
    /* query_pre_attn_scalar is not in GGUF: HF uses head_dim except for the
     * 27B (62 layers), which uses n_embd / n_head (architectures.md §3.4) */
    hp->attn_scale = hp->n_layer == 62 ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head))
                                       : 1.0f / sqrtf((float)hp->head_dim);
    hp->embed_scale = sqrtf((float)hp->n_embd);
    hp->sliding_window = 0;
    if ((st = wk__hp_u32(m, "attention.sliding_window", false, &hp->sliding_window, 1 << 24, err)))
        return st;
    m->rope_mode = WK_ROPE_NEOX;
    m->act = WK_ACT_GELU_TANH;

    if ((st = wk__load_common_tensors(m, err))) return st;
    /* sliding pattern: a bool per layer if given, else every 6th is global */
    bool *pattern = wk_calloc((size_t)hp->n_layer, sizeof *pattern), found;
    if (!pattern) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    if ((st = wk__layer_bools(m, "attention.sliding_window_pattern", pattern, &found, err))) {
        wk_free(pattern);
        return st;
    }
    const int64_t E = hp->n_embd, D = hp->head_dim;
    for (int i = 0; i < hp->n_layer; i++) {
        struct wk_layer *l = &m->layers[i];
        if ((st = wk__tensor(m, &l->q_norm, false, true, D, 1, err, "blk.%d.attn_q_norm.weight", i)) ||
            (st = wk__tensor(m, &l->k_norm, false, true, D, 1, err, "blk.%d.attn_k_norm.weight", i)) ||
            (st = wk__tensor(m, &l->post_attn_norm, false, true, E, 1, err,
                             "blk.%d.post_attention_norm.weight", i)) ||
            (st = wk__tensor(m, &l->post_ffn_norm, false, true, E, 1, err,
                             "blk.%d.post_ffw_norm.weight", i))) {
            wk_free(pattern);
            return st;
        }
        l->sliding = hp->sliding_window > 0 && (found ? pattern[i] : (i + 1) % 6 != 0);
        l->rope_base = l->sliding ? hp->rope_base_swa : hp->rope_base;
        l->rope_scale = l->sliding ? 1.0f : hp->rope_freq_scale;
    }
    wk_free(pattern);
    return WK_OK;
}

WK_FAMILY(gemma3) = {
    .name = "gemma3",
    .gguf_archs = {"gemma3"},
    .hf_model_types = {"gemma3*"},
    .label = NULL,
    .load = gemma3_load,
    .chat = WK_CHAT_GEMMA,
};
