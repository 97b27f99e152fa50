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

enum wk_status wk__gemma3_load(struct wk_model *m, struct wk_error *err)
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

    /* sliding pattern: a bool per layer if given, else every 6th is global */
    const struct wk_gguf_value *pattern = NULL;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", hp->arch_name);
    bool *hf_pattern = NULL; /* the same list from config.json */
    if (m->hf) {
        hf_pattern = wk_calloc((size_t)hp->n_layer, sizeof *hf_pattern);
        if (!hf_pattern) return wk_error_set(err, WK_E_NOMEM, "out of memory");
        int n = wk__hf_bools(m->hf, key, hf_pattern, hp->n_layer);
        if (n < 0) wk_free(hf_pattern), hf_pattern = NULL;
        else if (n != hp->n_layer) {
            wk_free(hf_pattern);
            return wk_error_set(err, WK_E_FORMAT, "%s: layer_types has %d entries for %d layers", path, n,
                                hp->n_layer);
        }
    } else if (wk_gguf_find(m->gguf, key)) {
        if ((st = wk_gguf_get_arr(m->gguf, key, WK_GGUF_BOOL, &pattern, err))) return st;
        if (pattern->arr.n != (uint64_t)hp->n_layer)
            return wk_error_set(err, WK_E_FORMAT, "%s: %s has %llu entries for %d layers", path,
                                key, (unsigned long long)pattern->arr.n, hp->n_layer);
    }
    if ((st = wk__load_common_tensors(m, err))) {
        wk_free(hf_pattern);
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
            wk_free(hf_pattern);
            return st;
        }
        l->sliding = hp->sliding_window > 0 &&
                     (hf_pattern ? hf_pattern[i]
                      : pattern  ? wk_gguf_arr_bool(pattern, (uint64_t)i)
                                 : (i + 1) % 6 != 0);
        l->rope_base = l->sliding ? hp->rope_base_swa : hp->rope_base;
        l->rope_scale = l->sliding ? 1.0f : hp->rope_freq_scale;
    }
    wk_free(hf_pattern);
    return WK_OK;
}
