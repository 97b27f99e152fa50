/*
 * llama.c - Llama-architecture models from GGUF (architectures.md §1; HF
 * LlamaForCausalLM; SmolLM2 is one): pre-norm blocks of RMSNorm, GQA
 * attention with RoPE, SwiGLU MLP; final RMSNorm; output tied to the
 * embeddings unless output.weight exists. No embedding scale, no softcap.
 *
 * GGUF conversion permutes the rows of attn_q and attn_k so that RoPE can
 * pair dimensions 2i and 2i+1 (NORM mode) instead of i and i + d/2 (the HF
 * layout's rotate-half); wick therefore uses NORM RoPE on GGUF weights.
 * Llama 3 RoPE scaling arrives as rope_freqs.weight (per-pair divisors).
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>

#define MAX_DIM (1 << 20)

enum wk_status wk__llama_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    const char *path = wk_gguf_path(m->gguf);
    hp->rms_eps = 1e-5f;
    hp->rope_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 4096;
    if ((st = wk__hp_u32(m, "embedding_length", true, &hp->n_embd, MAX_DIM, err)) ||
        (st = wk__hp_u32(m, "block_count", true, &hp->n_layer, 4096, err)) ||
        (st = wk__hp_u32(m, "feed_forward_length", true, &hp->n_ff, MAX_DIM, err)) ||
        (st = wk__hp_u32(m, "attention.head_count", true, &hp->n_head, 4096, err)) ||
        (st = wk__hp_u32(m, "context_length", false, &hp->n_ctx_train, 1 << 24, err)) ||
        (st = wk__hp_f32(m, "attention.layer_norm_rms_epsilon", false, &hp->rms_eps, err)) ||
        (st = wk__hp_f32(m, "rope.freq_base", false, &hp->rope_base, err)))
        return st;
    hp->n_head_kv = hp->n_head;
    hp->head_dim = hp->n_embd / hp->n_head;
    if ((st = wk__hp_u32(m, "attention.head_count_kv", false, &hp->n_head_kv, 4096, err)) ||
        (st = wk__hp_u32(m, "attention.key_length", false, &hp->head_dim, 4096, err)))
        return st;
    int32_t v_len = hp->head_dim;
    if ((st = wk__hp_u32(m, "attention.value_length", false, &v_len, 4096, err))) return st;
    if (v_len != hp->head_dim)
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: key_length %d differs from value_length %d",
                            path, hp->head_dim, v_len);
    if (hp->n_head % hp->n_head_kv != 0 || hp->head_dim < 2 || hp->head_dim % 2 != 0)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: head_count %d is not a multiple of head_count_kv %d, or head "
                            "dim %d is odd",
                            path, hp->n_head, hp->n_head_kv, hp->head_dim);
    hp->n_rot = hp->head_dim;
    if ((st = wk__hp_u32(m, "rope.dimension_count", false, &hp->n_rot, 4096, err))) return st;
    if (hp->n_rot > hp->head_dim || hp->n_rot % 2 != 0)
        return wk_error_set(err, WK_E_FORMAT, "%s: rope.dimension_count %d does not fit head dim %d",
                            path, hp->n_rot, hp->head_dim);
    if (!(hp->rms_eps > 0) || !(hp->rope_base > 1))
        return wk_error_set(err, WK_E_FORMAT, "%s: rms epsilon or RoPE base out of range", path);
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.factor", hp->arch_name);
    if (wk_gguf_find(m->gguf, key)) {
        float factor = 1;
        if ((st = wk__hp_f32(m, "rope.scaling.factor", true, &factor, err))) return st;
        if (factor > 0) hp->rope_freq_scale = 1.0f / factor;
    }
    hp->rope_base_swa = hp->rope_base;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embed_scale = 1.0f;
    hp->sliding_window = 0;
    m->rope_mode = WK_ROPE_NORM;
    m->act = WK_ACT_SILU;

    const int64_t E = hp->n_embd, D = hp->head_dim, F = hp->n_ff;
    const struct wk_gguf_tensor *te = wk_gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!te) return wk_error_set(err, WK_E_FORMAT, "%s: missing tensor token_embd.weight", path);
    if (te->t.ne[1] > (1 << 24))
        return wk_error_set(err, WK_E_FORMAT, "%s: token_embd.weight has %lld rows", path,
                            (long long)te->t.ne[1]);
    hp->n_vocab = (int32_t)te->t.ne[1];
    if ((st = wk__tensor(m, &m->tok_embd, false, false, E, hp->n_vocab, err, "token_embd.weight")) ||
        (st = wk__tensor(m, &m->output_norm, false, true, E, 1, err, "output_norm.weight")) ||
        (st = wk__tensor(m, &m->output, true, false, E, hp->n_vocab, err, "output.weight")) ||
        (st = wk__tensor(m, &m->rope_freqs, true, true, hp->n_rot / 2, 1, err, "rope_freqs.weight")))
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
            (st = wk__tensor(m, &l->ffn_norm, false, true, E, 1, err, "blk.%d.ffn_norm.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_gate, false, false, E, F, err, "blk.%d.ffn_gate.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_up, false, false, E, F, err, "blk.%d.ffn_up.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_down, false, false, F, E, err, "blk.%d.ffn_down.weight", i)))
            return st;
        l->sliding = false;
        l->rope_base = hp->rope_base;
        l->rope_scale = hp->rope_freq_scale;
    }
    return WK_OK;
}
