/*
 * phi3.c - Phi-3, Phi-3.5, Phi-4 and Phi-4-mini text models from GGUF
 * (architecture "phi3" as llama.cpp's convert_hf_to_gguf.py writes it) and
 * from Hugging Face Phi3ForCausalLM folders. Sources followed:
 * transformers' modeling_phi3.py and modeling_rope_utils.py
 * (_compute_longrope_parameters, 5.x) for the math, llama.cpp's
 * src/models/phi3.cpp and conversion/phi.py for the GGUF keys and tensors.
 *
 * Per layer as Llama (architectures.md §1): pre-RMSNorm, GQA attention
 * with NEOX RoPE (rotate-half, the converter does not permute), SwiGLU;
 * output tied to the embeddings unless output.weight exists (Phi-4-mini
 * ties them). Phi-3 fuses two projections, which this loader does not
 * copy but views (wk__tensor_rows): attn_qkv [n_head·D + 2·n_head_kv·D, E]
 * holds the Q rows, then K, then V; ffn_up [2·n_ff, E] the gate rows, then
 * up (transformers' gate_up_proj.chunk(2)). Partial rotary (Phi-4-mini:
 * partial_rotary_factor 0.75) is rope.dimension_count < head_dim: the
 * first n_rot dims of a head turn, the rest pass.
 *
 * LongRoPE (Phi-3-*-128k, Phi-3.5, Phi-4-mini): per-pair divisors, short
 * and long (GGUF rope_factors_short.weight / rope_factors_long.weight,
 * [n_rot/2]; config.json's short_factor / long_factor), and an attention
 * factor multiplying cos and sin: GGUF rope.scaling.attn_factor; from a
 * folder config.json's attention_factor, else sqrt(1 + ln s / ln L) with
 * L = original_max_position_embeddings and s = rope_scaling's factor or
 * max_position_embeddings / L (1 when s <= 1), as transformers computes it
 * (llama.cpp's converter always takes the ratio and ignores an explicit
 * attention_factor). Which divisors: llama.cpp fixes them per context, the
 * long ones when the context holds more than L positions; transformers
 * picks per forward call, the long ones when the largest position + 1
 * exceeds L, and regenerates from scratch when a sequence crosses L.
 * wick follows llama.cpp (context.c reads m->rope_freqs_long and
 * hp.n_ctx_orig), so a context larger than L scores its first L positions
 * with the long divisors where transformers uses the short ones; the two
 * agree once a sequence is longer than L, and for any context of at most L.
 *
 * Sliding window (Phi-3-mini-4k: 2047; Phi-3.5 and Phi-4-mini: 262144;
 * Phi-4: none, which the converter writes as 0): every layer attends to
 * the last sliding_window keys, as transformers' mask does (a window of
 * at least the trained context is none). llama.cpp
 * reads the key but turns the window off for this architecture (a warning
 * that results may be suboptimal), so on prompts past the window wick
 * follows transformers, not llama.cpp.
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>

/* The LongRoPE divisors of a folder (hf.c's rope.scaling.longrope.* keys)
 * into m->owned_f32 [n_rot] (short, then long), viewed by *short_t and
 * *long_t; the attention factor into hp. Nothing without the keys. */
static enum wk_status longrope_from_config(struct wk_model *m, struct wk_tensor *short_t, struct wk_tensor *long_t,
                                           struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    char key[160];
    const int half = hp->n_rot / 2;
    snprintf(key, sizeof key, "%s.rope.scaling.longrope.short_factor", hp->arch_name);
    if (!m->hf || wk__hf_floats(m->hf, key, NULL, 0) < 0) return WK_OK;
    m->owned_f32 = wk_malloc((size_t)WK_MAX(2 * half, 1) * sizeof(float));
    if (!m->owned_f32) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    int n_short = wk__hf_floats(m->hf, key, m->owned_f32, half);
    snprintf(key, sizeof key, "%s.rope.scaling.longrope.long_factor", hp->arch_name);
    int n_long = wk__hf_floats(m->hf, key, m->owned_f32 + half, half);
    if (n_short != half || n_long != half) /* hf.c sized them from the same config */
        return wk_error_set(err, WK_E_FORMAT, "%s: rope_scaling short_factor / long_factor have %d / %d entries, "
                            "expected %d", wk__model_path(m), n_short, n_long, half);
    struct wk_tensor *views[2] = {short_t, long_t};
    static const char *const names[2] = {"rope_factors_short.weight", "rope_factors_long.weight"};
    for (int i = 0; i < 2; i++) {
        struct wk_tensor *t = views[i];
        *t = (struct wk_tensor){.name = names[i], .dtype = WK_DTYPE_F32, .n_dims = 1, .data = m->owned_f32 + i * half};
        t->ne[0] = half;
        t->ne[1] = t->ne[2] = t->ne[3] = 1;
        t->nb[0] = sizeof(float);
        t->nb[1] = t->nb[2] = t->nb[3] = (size_t)half * sizeof(float);
    }
    /* the attention factor as transformers' _compute_longrope_parameters */
    float L = (float)hp->n_ctx_orig, factor = L > 0 ? (float)hp->n_ctx_train / L : 1, attn = -1;
    enum wk_status st;
    if ((st = wk__hp_f32(m, "rope.scaling.longrope.factor", false, &factor, err)) ||
        (st = wk__hp_f32(m, "rope.scaling.longrope.attention_factor", false, &attn, err)))
        return st;
    if (attn < 0) attn = factor <= 1 || L <= 1 ? 1.0f : sqrtf(1.0f + logf(factor) / logf(L));
    hp->rope_attn_factor = attn;
    m->rope_freqs = short_t;
    m->rope_freqs_long = long_t;
    return WK_OK;
}

/* attention.sliding_window into hp, where 0 (the converter's "none",
 * Phi-4) is allowed. */
static enum wk_status phi3_window(struct wk_model *m, struct wk_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window", m->hp.arch_name);
    uint32_t v = 1;
    double d = 1;
    struct wk_error ignored;
    if (m->hf ? wk__hf_number(m->hf, key, &d) && d == 0
              : wk_gguf_find(m->gguf, key) && !wk_gguf_get_u32(m->gguf, key, &v, &ignored) && v == 0) {
        m->hp.sliding_window = 0;
        return WK_OK;
    }
    return wk__hp_u32(m, "attention.sliding_window", false, &m->hp.sliding_window, 1 << 30, err);
}

/* The hyperparameters: the common ones, rope.dimension_count, the
 * sliding window, LongRoPE's original context and attention factor. */
static enum wk_status phi3_hparams(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    const char *path = wk__model_path(m);
    enum wk_status st;
    hp->head_dim = 0; /* n_embd / n_head unless key_length says otherwise */
    hp->rms_eps = 1e-5f;
    hp->rope_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 4096;
    hp->sliding_window = 0;
    if ((st = wk__load_common_hparams(m, err)) ||
        (st = wk__hp_u32(m, "rope.dimension_count", false, &hp->n_rot, 4096, err)) ||
        (st = phi3_window(m, err)) ||
        (st = wk__hp_f32(m, "rope.scaling.attn_factor", false, &hp->rope_attn_factor, err)))
        return st;
    hp->n_ctx_orig = hp->n_ctx_train; /* llama.cpp's default for n_ctx_orig_yarn */
    if ((st = wk__hp_u32(m, "rope.scaling.original_context_length", false, &hp->n_ctx_orig, 1 << 24, err))) return st;
    if (hp->n_rot < 2 || hp->n_rot > hp->head_dim || hp->n_rot % 2 != 0)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.rope.dimension_count %d does not fit head dim %d (even, 2..%d)",
                            path, hp->arch_name, hp->n_rot, hp->head_dim, hp->head_dim);
    if (!(hp->rope_attn_factor > 0 && hp->rope_attn_factor < 1e3f))
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.rope.scaling.attn_factor %g is out of range (0, 1000)", path,
                            hp->arch_name, hp->rope_attn_factor);
    if (hp->n_ctx_orig < 1)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.rope.scaling.original_context_length %d is out of range", path,
                            hp->arch_name, hp->n_ctx_orig);
    hp->rope_base_swa = hp->rope_base;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embed_scale = 1.0f;
    return WK_OK;
}

/* Layer i's Q, K, V (views of attn_qkv's rows, or attn_q/k/v) and gate,
 * up (views of ffn_up's rows) into l; v [5] the layer's view storage. */
static enum wk_status phi3_layer_projections(struct wk_model *m, int i, struct wk_layer *l, struct wk_tensor *v,
                                             struct wk_error *err)
{
    const struct wk_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    const int64_t HQ = (int64_t)hp->n_head * hp->head_dim, HK = (int64_t)hp->n_head_kv * hp->head_dim;
    const struct wk_tensor *qkv, *up;
    enum wk_status st;
    if ((st = wk__tensor(m, &qkv, true, false, E, HQ + 2 * HK, err, "blk.%d.attn_qkv.weight", i))) return st;
    if (qkv) {
        wk__tensor_rows(qkv, 0, HQ, "attn_q (rows of attn_qkv)", &v[0]);
        wk__tensor_rows(qkv, HQ, HK, "attn_k (rows of attn_qkv)", &v[1]);
        wk__tensor_rows(qkv, HQ + HK, HK, "attn_v (rows of attn_qkv)", &v[2]);
        l->wq = &v[0];
        l->wk = &v[1];
        l->wv = &v[2];
    } else if ((st = wk__tensor(m, &l->wq, false, false, E, HQ, err, "blk.%d.attn_q.weight", i)) ||
               (st = wk__tensor(m, &l->wk, false, false, E, HK, err, "blk.%d.attn_k.weight", i)) ||
               (st = wk__tensor(m, &l->wv, false, false, E, HK, err, "blk.%d.attn_v.weight", i))) {
        return st;
    }
    if ((st = wk__tensor(m, &up, false, false, E, 2 * F, err, "blk.%d.ffn_up.weight", i))) return st;
    wk__tensor_rows(up, 0, F, "ffn_gate (rows of ffn_up)", &v[3]);
    wk__tensor_rows(up, F, F, "ffn_up (rows of ffn_up)", &v[4]);
    l->ffn_gate = &v[3];
    l->ffn_up = &v[4];
    return WK_OK;
}

static enum wk_status phi3_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    if ((st = phi3_hparams(m, err))) return st;
    m->rope_mode = WK_ROPE_NEOX;
    m->act = WK_ACT_SILU;
    if ((st = wk__load_embeddings(m, err))) return st;
    m->layers = wk_calloc((size_t)hp->n_layer, sizeof *m->layers);
    /* five views a layer, then the two LongRoPE divisor tables of a folder */
    m->n_view_tensors = 5 * hp->n_layer + 2;
    m->view_tensors = wk_calloc((size_t)m->n_view_tensors, sizeof *m->view_tensors);
    if (!m->layers || !m->view_tensors) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    const int64_t E = hp->n_embd, F = hp->n_ff, HQ = (int64_t)hp->n_head * hp->head_dim;
    for (int i = 0; i < hp->n_layer; i++) {
        struct wk_layer *l = &m->layers[i];
        if ((st = wk__tensor(m, &l->attn_norm, false, true, E, 1, err, "blk.%d.attn_norm.weight", i)) ||
            (st = phi3_layer_projections(m, i, l, &m->view_tensors[5 * i], err)) ||
            (st = wk__tensor(m, &l->wo, false, false, HQ, E, err, "blk.%d.attn_output.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_norm, false, true, E, 1, err, "blk.%d.ffn_norm.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_down, false, false, F, E, err, "blk.%d.ffn_down.weight", i)))
            return st;
        /* every layer, as transformers' Phi3 mask; a window no shorter
         * than the trained context (Phi-3.5's 262144) changes nothing and
         * is left out, sparing the KV ring */
        l->sliding = hp->sliding_window > 0 && hp->sliding_window < hp->n_ctx_train;
        l->rope_base = hp->rope_base;
        l->rope_scale = hp->rope_freq_scale;
        l->head_dim = hp->head_dim;
        l->n_head_kv = hp->n_head_kv;
        l->n_rot = hp->n_rot;
        l->n_ff = hp->n_ff;
        l->kv_layer = i;
        l->out_scale = 1.0f;
    }
    /* LongRoPE: both tables or neither (a GGUF's, else a folder's config) */
    const struct wk_tensor *fs, *fl;
    const int64_t half = hp->n_rot / 2;
    if ((st = wk__tensor(m, &fs, true, true, half, 1, err, "rope_factors_short.weight")) ||
        (st = wk__tensor(m, &fl, true, true, half, 1, err, "rope_factors_long.weight")))
        return st;
    if (!fs != !fl)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s without %s", wk__model_path(m),
                            fs ? "rope_factors_short.weight" : "rope_factors_long.weight",
                            fs ? "rope_factors_long.weight" : "rope_factors_short.weight");
    m->rope_freqs = fs;
    m->rope_freqs_long = fl;
    if (!fs) {
        struct wk_tensor *tables = &m->view_tensors[5 * hp->n_layer];
        if ((st = longrope_from_config(m, &tables[0], &tables[1], err))) return st;
    }
    return WK_OK;
}

WK_FAMILY(phi3) = {
    .name = "phi3",
    .gguf_archs = {"phi3"},
    .hf_model_types = {"phi3"},
    .label = "Phi-3",
    .load = phi3_load,
    .chat = WK_CHAT_CHATML_IF_TEMPLATE,
};
