/*
 * llama.c - Llama-architecture models from GGUF (architectures.md §1; HF
 * LlamaForCausalLM; SmolLM2 is one): pre-norm blocks of RMSNorm, GQA
 * attention with RoPE, SwiGLU MLP; final RMSNorm; output tied to the
 * embeddings unless output.weight exists. No embedding scale, no softcap.
 *
 * GGUF conversion permutes the rows of attn_q and attn_k so that RoPE can
 * pair dimensions 2i and 2i+1 (NORM mode) instead of i and i + d/2 (the HF
 * layout's rotate-half); wick therefore uses NORM RoPE on GGUF weights.
 * Llama 3 RoPE scaling arrives as rope_freqs.weight (per-pair divisors);
 * from a Hugging Face folder (rope_scaling type llama3, which hf.c passes
 * as rope.scaling.llama3.*) wick builds the same divisors here, as
 * transformers' _compute_llama3_parameters scales its inverse frequencies.
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>

/*
 * The per-pair RoPE divisors of Llama 3 scaling from the
 * rope.scaling.llama3.* keys (none: m->rope_freqs stays NULL). Pair i of
 * n_rot turns at f = base^(-2i/n_rot) (float, as transformers computes it)
 * with wavelength w = 2π/f; original context L, factor s, low/high
 * frequency factors a < b: w < L/b keeps f (divisor 1), w > L/a divides it
 * by s, and in between f · ((1 − t)/s + t) with t = (L/w − a)/(b − a),
 * i.e. divisor 1 / ((1 − t)/s + t). Writes m->owned_f32 [n_rot / 2] and
 * points m->rope_freqs at its view. Errors: WK_E_NOMEM.
 */
static enum wk_status llama3_rope_freqs(struct wk_model *m, struct wk_error *err)
{
    const struct wk_hparams *hp = &m->hp;
    char key[160];
    snprintf(key, sizeof key, "%s.rope.scaling.llama3.factor", hp->arch_name);
    double unused;
    if (!m->hf || !wk__hf_number(m->hf, key, &unused)) return WK_OK;
    float s = 1, a = 1, b = 4, len = 8192;
    enum wk_status st;
    if ((st = wk__hp_f32(m, "rope.scaling.llama3.factor", true, &s, err)) ||
        (st = wk__hp_f32(m, "rope.scaling.llama3.low_freq_factor", true, &a, err)) ||
        (st = wk__hp_f32(m, "rope.scaling.llama3.high_freq_factor", true, &b, err)) ||
        (st = wk__hp_f32(m, "rope.scaling.llama3.original_context_length", true, &len, err)))
        return st;
    int32_t half = hp->n_rot / 2;
    m->owned_f32 = wk_malloc((size_t)half * sizeof(float));
    if (!m->owned_f32) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    float low_wavelen = len / a, high_wavelen = len / b;
    for (int32_t i = 0; i < half; i++) {
        float f = 1.0f / powf(hp->rope_base, (float)(2 * i) / (float)hp->n_rot);
        float w = (float)(2 * M_PI) / f, d;
        if (w < high_wavelen) {
            d = 1.0f;
        } else if (w > low_wavelen) {
            d = s;
        } else {
            float t = (len / w - a) / (b - a);
            d = 1.0f / ((1.0f - t) / s + t);
        }
        m->owned_f32[i] = d;
    }
    struct wk_tensor *t = &m->owned_rope_freqs;
    *t = (struct wk_tensor){.name = "rope_freqs.weight", .dtype = WK_DTYPE_F32, .n_dims = 1, .data = m->owned_f32};
    t->ne[0] = half;
    t->ne[1] = t->ne[2] = t->ne[3] = 1;
    t->nb[0] = sizeof(float);
    t->nb[1] = t->nb[2] = t->nb[3] = (size_t)half * sizeof(float);
    m->rope_freqs = t;
    return WK_OK;
}

enum wk_status wk__llama_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    const char *path = wk__model_path(m);
    hp->head_dim = 0; /* n_embd / n_head unless key_length says otherwise */
    hp->rms_eps = 1e-5f;
    hp->rope_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 4096;
    if ((st = wk__load_common_hparams(m, err)) ||
        (st = wk__hp_u32(m, "rope.dimension_count", false, &hp->n_rot, 4096, err)))
        return st;
    if (hp->n_rot > hp->head_dim || hp->n_rot % 2 != 0)
        return wk_error_set(err, WK_E_FORMAT, "%s: rope.dimension_count %d does not fit head dim %d",
                            path, hp->n_rot, hp->head_dim);
    hp->rope_base_swa = hp->rope_base;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embed_scale = 1.0f;
    hp->sliding_window = 0;
    /* GGUF permutes Q and K rows for NORM RoPE; HF weights pair i with i + d/2 */
    m->rope_mode = m->hf ? WK_ROPE_NEOX : WK_ROPE_NORM;
    m->act = WK_ACT_SILU;
    if ((st = wk__load_common_tensors(m, err)) ||
        (st = wk__tensor(m, &m->rope_freqs, true, true, hp->n_rot / 2, 1, err, "rope_freqs.weight")))
        return st;
    if (!m->rope_freqs && (st = llama3_rope_freqs(m, err))) return st;
    return WK_OK;
}

WK_FAMILY(llama) = {
    .name = "llama",
    .gguf_archs = {"llama"},
    .hf_model_types = {"llama"},
    .label = NULL,
    .load = wk__llama_load,
    .chat = WK_CHAT_CHATML_IF_TEMPLATE,
};
