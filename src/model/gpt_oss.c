/*
 * gpt_oss.c - OpenAI's gpt-oss (GGUF architecture "gpt-oss" as llama.cpp's
 * convert_hf_to_gguf.py writes it; Hugging Face GptOssForCausalLM folders,
 * model_type "gpt_oss"). Sources followed: transformers 5.24's
 * modeling_gpt_oss.py and modeling_rope_utils.py (_compute_yarn_parameters)
 * for the math; llama.cpp's src/models/openai-moe.cpp, llama-context.cpp and
 * ggml's rope_yarn for the GGUF keys and defaults.
 *
 * Per layer: x += Wo·attn(RMSNorm(x)) + bo, x += MoE(RMSNorm(x)) (the
 * second norm is the GGUF's post_attention_norm). Attention: GQA with
 * biases on Q, K, V and the output, NEOX RoPE with YaRN scaling, scale
 * 1/sqrt(head_dim) (n_head·head_dim need not be n_embd), and a learned
 * sink logit per head joining each softmax's denominator (attn_sinks;
 * backend_cpu.c). Sliding-window attention on even layers (transformers'
 * layer_types default, llama.cpp's pattern 2) unless a per-layer pattern
 * is given. MoE on every layer: router logits with a bias, the top k of
 * the logits, softmax over those k; experts with biases on gate, up and
 * down and the clamped SwiGLU (gate ≤ limit, up in [-limit, limit],
 * gate·sigmoid(alpha·gate)·(up + 1); backend_cpu_moe.c).
 *
 * YaRN (Peng et al. 2023, as both sources compute it): pair i of n_rot
 * turns at base^(-2i/n_rot)·(r_i/s + 1 − r_i), r_i = clamp((i − low) /
 * (high − low), 0, 1), low/high the correction dims of beta_fast/beta_slow
 * over the original context; cos and sin times the attention factor
 * (config attention_factor, else 1 + 0.1·ln s). Here the per-pair factors
 * are RoPE divisors (m->rope_freqs) and the attention factor, squared, is
 * folded into the query scale: the same product q·k, since every dim is
 * rotated. low/high are floored/ceiled when truncate: always for a GGUF
 * (ggml does), per config.json's truncate (default true) for a folder -
 * the real gpt-oss config says false, so its GGUF under llama.cpp (and
 * here) turns slightly differently from transformers.
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Whether the model's RoPE scaling is YaRN: GGUF rope.scaling.type
 * "yarn", or hf.c's rope.scaling.yarn key. Other types but none are
 * WK_E_UNSUPPORTED naming the key. */
static enum wk_status is_yarn(struct wk_model *m, bool *yarn, struct wk_error *err)
{
    char key[128];
    double d;
    *yarn = false;
    snprintf(key, sizeof key, "%s.rope.scaling.yarn", m->hp.arch_name);
    if (m->hf) {
        *yarn = wk__hf_number(m->hf, key, &d) && d != 0;
        return WK_OK;
    }
    snprintf(key, sizeof key, "%s.rope.scaling.type", m->hp.arch_name);
    if (!wk_gguf_find(m->gguf, key)) return WK_OK;
    struct wk_gguf_str type;
    enum wk_status st = wk_gguf_get_str(m->gguf, key, &type, err);
    if (st) return st;
    if (wk_gguf_str_eq(type, "yarn")) *yarn = true;
    else if (!wk_gguf_str_eq(type, "none"))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: %s is not \"yarn\" or \"none\" (gpt-oss)",
                            wk__model_path(m), key);
    return WK_OK;
}

/* The correction dim of YaRN for beta rotations over context n_ctx. */
static double corr_dim(int n_rot, double n_ctx, double beta, double base)
{
    return n_rot * log(n_ctx / (beta * 2 * M_PI)) / (2 * log(base));
}

/*
 * YaRN's per-pair RoPE divisors into m->owned_f32 [n_rot/2] (m->rope_freqs
 * points at them) and its attention factor into *mscale; nothing (mscale
 * 1) without YaRN. Keys: rope.scaling.factor (> 1), .original_context_length
 * (required), .yarn_beta_fast (32), .yarn_beta_slow (1), and from a folder
 * .yarn_truncate and .yarn_attn_factor. Errors: WK_E_FORMAT naming the
 * key, WK_E_NOMEM.
 */
static enum wk_status yarn_freqs(struct wk_model *m, float *mscale, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    bool yarn;
    *mscale = 1.0f;
    if ((st = is_yarn(m, &yarn, err)) || !yarn) return st;
    float s = 0, fast = 32, slow = 1, truncate = 1, attn = 0;
    int32_t n_orig = 0;
    if ((st = wk__hp_f32(m, "rope.scaling.factor", true, &s, err)) ||
        (st = wk__hp_u32(m, "rope.scaling.original_context_length", true, &n_orig, 1 << 30, err)) ||
        (st = wk__hp_f32(m, "rope.scaling.yarn_beta_fast", false, &fast, err)) ||
        (st = wk__hp_f32(m, "rope.scaling.yarn_beta_slow", false, &slow, err)) ||
        (m->hf && (st = wk__hp_f32(m, "rope.scaling.yarn_truncate", false, &truncate, err))) ||
        (m->hf && (st = wk__hp_f32(m, "rope.scaling.yarn_attn_factor", false, &attn, err))))
        return st;
    if (!(s >= 1) || n_orig < 1 || !(fast > 0) || !(slow > 0) || !(attn >= 0))
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.rope.scaling: factor %g (>= 1), original_context_length %d, "
                            "yarn_beta_fast %g, yarn_beta_slow %g, attention factor %g out of range",
                            wk__model_path(m), hp->arch_name, s, n_orig, fast, slow, attn);
    const int32_t half = hp->n_rot / 2;
    double low = corr_dim(hp->n_rot, n_orig, fast, hp->rope_base), high = corr_dim(hp->n_rot, n_orig, slow, hp->rope_base);
    if (truncate != 0) low = floor(low), high = ceil(high);
    low = fmax(low, 0), high = fmin(high, hp->n_rot - 1);
    if (high == low) high += 0.001; /* transformers' guard (ggml: max(0.001, high − low)) */
    m->owned_f32 = wk_malloc((size_t)half * sizeof(float));
    if (!m->owned_f32) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    for (int32_t i = 0; i < half; i++) {
        double r = fmin(fmax((i - low) / (high - low), 0), 1);
        m->owned_f32[i] = (float)(1.0 / (r / s + 1 - r));
    }
    struct wk_tensor *t = &m->owned_rope_freqs;
    *t = (struct wk_tensor){.name = "rope_freqs.weight", .dtype = WK_DTYPE_F32, .n_dims = 1, .data = m->owned_f32};
    t->ne[0] = half;
    t->ne[1] = t->ne[2] = t->ne[3] = 1;
    t->nb[0] = sizeof(float);
    t->nb[1] = t->nb[2] = t->nb[3] = (size_t)half * sizeof(float);
    m->rope_freqs = t;
    hp->rope_freq_scale = 1.0f; /* the factor is in the divisors */
    *mscale = attn > 0 ? attn : s > 1 ? 1.0f + 0.1f * logf(s) : 1.0f;
    return WK_OK;
}

/* Layer i's router, experts and their biases into l. */
static enum wk_status experts(struct wk_model *m, struct wk_layer *l, int i, float alpha, float limit,
                              struct wk_error *err)
{
    const int64_t E = m->hp.n_embd, NE = m->hp.n_expert, FE = m->hp.n_ff_exp;
    struct wk_moe_block *b = &l->moe;
    enum wk_status st;
    b->sigmoid = true; /* the experts on the FFN input (context_moe.c) ... */
    b->topk_softmax = true; /* ... routed by a softmax over the top k logits */
    b->swiglu_alpha = alpha;
    b->swiglu_limit = limit;
    if ((st = wk__tensor(m, &b->router, false, false, E, NE, err, "blk.%d.ffn_gate_inp.weight", i)) ||
        (st = wk__tensor(m, &b->router_bias, false, true, NE, 1, err, "blk.%d.ffn_gate_inp.bias", i)) ||
        (st = wk__tensor3(m, &b->gate, false, E, FE, NE, err, "blk.%d.ffn_gate_exps.weight", i)) ||
        (st = wk__tensor3(m, &b->up, false, E, FE, NE, err, "blk.%d.ffn_up_exps.weight", i)) ||
        (st = wk__tensor3(m, &b->down, false, FE, E, NE, err, "blk.%d.ffn_down_exps.weight", i)) ||
        (st = wk__tensor(m, &b->gate_b, false, true, FE, NE, err, "blk.%d.ffn_gate_exps.bias", i)) ||
        (st = wk__tensor(m, &b->up_b, false, true, FE, NE, err, "blk.%d.ffn_up_exps.bias", i)) ||
        (st = wk__tensor(m, &b->down_b, false, true, E, NE, err, "blk.%d.ffn_down_exps.bias", i)))
        return st;
    return WK_OK;
}

static enum wk_status gpt_oss_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    hp->head_dim = 64;
    hp->rms_eps = 1e-5f;
    hp->rope_base = 150000.0f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 131072;
    hp->sliding_window = 128;
    hp->n_ff = 0;
    float alpha = 1.702f, limit = 7.0f, mscale; /* llama.cpp's constants; a folder's swiglu_alpha/limit */
    if ((st = wk__load_core_hparams(m, err)) ||
        (st = wk__hp_u32(m, "attention.head_count_kv", true, &hp->n_head_kv, 4096, err)) ||
        (st = wk__hp_u32(m, "attention.key_length", false, &hp->head_dim, 4096, err)) ||
        (st = wk__hp_u32(m, "attention.sliding_window", false, &hp->sliding_window, 1 << 24, err)) ||
        (st = wk__hp_u32(m, "expert_count", true, &hp->n_expert, WK_MOE_MAX_EXPERTS, err)) ||
        (st = wk__hp_u32(m, "expert_used_count", true, &hp->n_expert_used, WK_MOE_MAX_EXPERTS, err)) ||
        (st = wk__hp_u32(m, "expert_feed_forward_length", true, &hp->n_ff_exp, 1 << 20, err)) ||
        (st = wk__hp_f32(m, "swiglu_alpha", false, &alpha, err)) ||
        (st = wk__hp_f32(m, "swiglu_limit", false, &limit, err)))
        return st;
    const char *path = wk__model_path(m);
    if (hp->n_head_kv < 1 || hp->n_head % hp->n_head_kv != 0 || hp->head_dim < 2 || hp->head_dim % 2 != 0)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.attention.head_count %d is not a multiple of head_count_kv %d, "
                            "or key_length %d is odd", path, hp->arch_name, hp->n_head, hp->n_head_kv, hp->head_dim);
    if (hp->n_expert < 1 || hp->n_expert_used < 1 || hp->n_expert_used > hp->n_expert || hp->n_ff_exp < 1)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.expert_used_count %d must be 1..expert_count %d (at most %d), "
                            "expert_feed_forward_length set", path, hp->arch_name, hp->n_expert_used, hp->n_expert,
                            WK_MOE_MAX_EXPERTS);
    if (!(hp->rms_eps > 0) || !(hp->rope_base > 1) || !(limit > 0) || !(alpha == alpha))
        return wk_error_set(err, WK_E_FORMAT, "%s: rms epsilon, RoPE base, swiglu_limit (> 0) or swiglu_alpha "
                            "out of range", path);
    hp->n_rot = hp->head_dim;
    if ((st = yarn_freqs(m, &mscale, err))) return st;
    hp->rope_base_swa = hp->rope_base;
    hp->attn_scale = mscale * mscale / sqrtf((float)hp->head_dim);
    hp->embed_scale = 1.0f;
    hp->expert_weights_scale = 1.0f;
    m->rope_mode = WK_ROPE_NEOX;
    m->act = WK_ACT_SILU;
    if ((st = wk__load_embeddings(m, err))) return st;
    m->layers = wk_calloc((size_t)hp->n_layer, sizeof *m->layers);
    bool *pattern = wk_calloc((size_t)hp->n_layer, sizeof *pattern), found = false;
    if (!m->layers || !pattern) {
        wk_free(pattern);
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    st = wk__layer_bools(m, "attention.sliding_window_pattern", pattern, &found, err);
    const int64_t E = hp->n_embd, D = hp->head_dim, HQ = (int64_t)hp->n_head * D, HK = (int64_t)hp->n_head_kv * D;
    for (int i = 0; !st && i < hp->n_layer; i++) {
        struct wk_layer *l = &m->layers[i];
        if ((st = wk__tensor(m, &l->attn_norm, false, true, E, 1, err, "blk.%d.attn_norm.weight", i)) ||
            (st = wk__tensor(m, &l->wq, false, false, E, HQ, err, "blk.%d.attn_q.weight", i)) ||
            (st = wk__tensor(m, &l->wk, false, false, E, HK, err, "blk.%d.attn_k.weight", i)) ||
            (st = wk__tensor(m, &l->wv, false, false, E, HK, err, "blk.%d.attn_v.weight", i)) ||
            (st = wk__tensor(m, &l->wo, false, false, HQ, E, err, "blk.%d.attn_output.weight", i)) ||
            (st = wk__tensor(m, &l->bq, false, true, HQ, 1, err, "blk.%d.attn_q.bias", i)) ||
            (st = wk__tensor(m, &l->bk, false, true, HK, 1, err, "blk.%d.attn_k.bias", i)) ||
            (st = wk__tensor(m, &l->bv, false, true, HK, 1, err, "blk.%d.attn_v.bias", i)) ||
            (st = wk__tensor(m, &l->bo, false, true, E, 1, err, "blk.%d.attn_output.bias", i)) ||
            (st = wk__tensor(m, &l->attn_sinks, false, true, hp->n_head, 1, err, "blk.%d.attn_sinks.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_norm, false, true, E, 1, err, "blk.%d.post_attention_norm.weight", i)) ||
            (st = experts(m, l, i, alpha, limit, err)))
            break;
        l->sliding = hp->sliding_window > 0 && (found ? pattern[i] : i % 2 == 0);
        l->rope_base = hp->rope_base;
        l->rope_scale = hp->rope_freq_scale;
        l->head_dim = (int32_t)D;
        l->n_head_kv = hp->n_head_kv;
        l->n_rot = hp->n_rot;
        l->n_ff = 0;
        l->kv_layer = i;
        l->out_scale = 1.0f;
    }
    wk_free(pattern);
    return st;
}

WK_FAMILY(gpt_oss) = {
    .name = "gpt-oss",
    .gguf_archs = {"gpt-oss"},
    .hf_model_types = {"gpt_oss"},
    .label = NULL,
    .load = gpt_oss_load,
    .chat = WK_CHAT_CHATML_IF_TEMPLATE, /* the model's own (harmony) template */
};
