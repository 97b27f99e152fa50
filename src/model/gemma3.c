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

#define MAX_DIM (1 << 20)

enum wk_status wk__gemma3_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    const char *path = wk_gguf_path(m->gguf);
    hp->head_dim = 256;
    hp->rms_eps = 1e-6f;
    hp->rope_base = 1e6f;
    hp->rope_base_swa = 1e4f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 8192;
    if ((st = wk__hp_u32(m, "embedding_length", true, &hp->n_embd, MAX_DIM, err)) ||
        (st = wk__hp_u32(m, "block_count", true, &hp->n_layer, 4096, err)) ||
        (st = wk__hp_u32(m, "feed_forward_length", true, &hp->n_ff, MAX_DIM, err)) ||
        (st = wk__hp_u32(m, "attention.head_count", true, &hp->n_head, 4096, err)) ||
        (st = wk__hp_u32(m, "attention.key_length", false, &hp->head_dim, 4096, err)) ||
        (st = wk__hp_u32(m, "context_length", false, &hp->n_ctx_train, 1 << 24, err)) ||
        (st = wk__hp_f32(m, "attention.layer_norm_rms_epsilon", false, &hp->rms_eps, err)) ||
        (st = wk__hp_f32(m, "rope.freq_base", false, &hp->rope_base, err)) ||
        (st = wk__hp_f32(m, "rope.freq_base_swa", false, &hp->rope_base_swa, err)) ||
        (st = wk__hp_f32(m, "rope.local.freq_base", false, &hp->rope_base_swa, err)) ||
        (st = wk__hp_f32(m, "final_logit_softcapping", false, &hp->final_softcap, err)))
        return st;
    hp->n_head_kv = hp->n_head;
    if ((st = wk__hp_u32(m, "attention.head_count_kv", false, &hp->n_head_kv, 4096, err)))
        return st;
    int32_t v_len = hp->head_dim;
    if ((st = wk__hp_u32(m, "attention.value_length", false, &v_len, 4096, err))) return st;
    if (v_len != hp->head_dim)
        return wk_error_set(err, WK_E_UNSUPPORTED,
                            "%s: key_length %d differs from value_length %d", path,
                            hp->head_dim, v_len);
    if (hp->n_head % hp->n_head_kv != 0 || hp->head_dim % 2 != 0)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: head_count %d is not a multiple of head_count_kv %d, or head "
                            "dim %d is odd",
                            path, hp->n_head, hp->n_head_kv, hp->head_dim);
    hp->n_rot = hp->head_dim;
    if (!(hp->rms_eps > 0) || !(hp->rope_base > 1) || !(hp->rope_base_swa > 1))
        return wk_error_set(err, WK_E_FORMAT, "%s: rms epsilon or RoPE base out of range", path);
    if (hp->final_softcap < 0) hp->final_softcap = 0;

    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.factor", hp->arch_name);
    if (wk_gguf_find(m->gguf, key)) {
        float factor = 1;
        if ((st = wk__hp_f32(m, "rope.scaling.factor", true, &factor, err))) return st;
        if (factor > 0) hp->rope_freq_scale = 1.0f / factor;
    }
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
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", hp->arch_name);
    if (wk_gguf_find(m->gguf, key)) {
        if ((st = wk_gguf_get_arr(m->gguf, key, WK_GGUF_BOOL, &pattern, err))) return st;
        if (pattern->arr.n != (uint64_t)hp->n_layer)
            return wk_error_set(err, WK_E_FORMAT, "%s: %s has %llu entries for %d layers", path,
                                key, (unsigned long long)pattern->arr.n, hp->n_layer);
    }

    const int64_t E = hp->n_embd, D = hp->head_dim, F = hp->n_ff;
    const struct wk_gguf_tensor *te = wk_gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!te) return wk_error_set(err, WK_E_FORMAT, "%s: missing tensor token_embd.weight", path);
    int64_t n_vocab = te->t.ne[1];
    if (n_vocab > (1 << 24))
        return wk_error_set(err, WK_E_FORMAT, "%s: token_embd.weight has %lld rows", path,
                            (long long)n_vocab);
    hp->n_vocab = (int32_t)n_vocab;
    if ((st = wk__tensor(m, &m->tok_embd, false, false, E, n_vocab, err, "token_embd.weight")) ||
        (st = wk__tensor(m, &m->output_norm, false, true, E, 1, err, "output_norm.weight")) ||
        (st = wk__tensor(m, &m->output, true, false, E, n_vocab, err, "output.weight")))
        return st;
    if (!m->output) m->output = m->tok_embd;

    m->layers = wk_calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    for (int i = 0; i < hp->n_layer; i++) {
        struct wk_layer *l = &m->layers[i];
        const int64_t HQ = (int64_t)hp->n_head * D, HK = (int64_t)hp->n_head_kv * D;
        if ((st = wk__tensor(m, &l->attn_norm, false, true, E, 1, err, "blk.%d.attn_norm.weight", i)) ||
            (st = wk__tensor(m, &l->wq, false, false, E, HQ, err, "blk.%d.attn_q.weight", i)) ||
            (st = wk__tensor(m, &l->wk, false, false, E, HK, err, "blk.%d.attn_k.weight", i)) ||
            (st = wk__tensor(m, &l->wv, false, false, E, HK, err, "blk.%d.attn_v.weight", i)) ||
            (st = wk__tensor(m, &l->wo, false, false, HQ, E, err, "blk.%d.attn_output.weight", i)) ||
            (st = wk__tensor(m, &l->q_norm, false, true, D, 1, err, "blk.%d.attn_q_norm.weight", i)) ||
            (st = wk__tensor(m, &l->k_norm, false, true, D, 1, err, "blk.%d.attn_k_norm.weight", i)) ||
            (st = wk__tensor(m, &l->post_attn_norm, false, true, E, 1, err,
                             "blk.%d.post_attention_norm.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_norm, false, true, E, 1, err, "blk.%d.ffn_norm.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_gate, false, false, E, F, err, "blk.%d.ffn_gate.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_up, false, false, E, F, err, "blk.%d.ffn_up.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_down, false, false, F, E, err, "blk.%d.ffn_down.weight", i)) ||
            (st = wk__tensor(m, &l->post_ffn_norm, false, true, E, 1, err,
                             "blk.%d.post_ffw_norm.weight", i)))
            return st;
        l->sliding = hp->sliding_window > 0 &&
                     (pattern ? wk_gguf_arr_bool(pattern, (uint64_t)i) : (i + 1) % 6 != 0);
        l->rope_base = l->sliding ? hp->rope_base_swa : hp->rope_base;
        l->rope_scale = l->sliding ? 1.0f : hp->rope_freq_scale;
    }
    return WK_OK;
}
