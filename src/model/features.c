/*
 * features.c - what a loaded model's blocks compute, in words, for
 * `wick show` (the family's distinctive features as its loader set them:
 * attention geometry, RoPE, windows, norms, experts). Read off struct
 * wk_model and its layers, so a new family's features show up without
 * naming the family here.
 */
#include "model_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

struct feat_buf {
    char *out;
    size_t cap, len;
};

static void add(struct feat_buf *b, const char *fmt, ...)
{
    if (b->len >= b->cap) return;
    if (b->len > 0) {
        int w = snprintf(b->out + b->len, b->cap - b->len, ", ");
        if (w > 0) b->len += (size_t)w;
        if (b->len >= b->cap) return;
    }
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->out + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (w > 0) b->len += (size_t)w;
}

/* The attention part: heads, GQA, head size, RoPE, windows, caps. */
static void attention_features(const struct wk_model *m, struct feat_buf *b)
{
    const struct wk_hparams *hp = &m->hp;
    if (hp->n_lora_kv > 0)
        add(b, "multi-head latent attention (%d heads, kv_lora_rank %d)", hp->n_head, hp->n_lora_kv);
    else if (hp->n_head_kv == hp->n_head) add(b, "multi-head attention (%d heads of %d)", hp->n_head, hp->head_dim);
    else if (hp->n_head_kv == 1) add(b, "multi-query attention (%d heads of %d)", hp->n_head, hp->head_dim);
    else add(b, "GQA (%d query heads, %d KV heads, head size %d)", hp->n_head, hp->n_head_kv, hp->head_dim);
    int32_t n_sliding = 0, n_shared = 0, n_bias = 0, n_qk_norm = 0, n_post = 0, n_nope = 0, n_sinks = 0;
    bool qk_full = false;
    for (int32_t i = 0; i < hp->n_layer; i++) {
        const struct wk_layer *l = &m->layers[i];
        n_sliding += l->sliding;
        n_shared += l->kv_layer != i && l->kv_layer >= 0;
        n_bias += l->bq != NULL || l->bo != NULL;
        n_qk_norm += l->q_norm != NULL;
        n_post += l->post_attn_norm != NULL;
        n_nope += l->n_rot == 0 && hp->n_rot > 0;
        qk_full = qk_full || l->qk_norm_full;
        n_sinks += l->attn_sinks != NULL;
    }
    add(b, "RoPE %s base %g%s", m->rope_mode == WK_ROPE_NEOX ? "NEOX" : "NORM", (double)hp->rope_base,
        hp->n_rot > 0 && hp->n_rot < hp->head_dim ? " (partial)" : "");
    if (n_nope > 0) add(b, "no RoPE on %d of %d layers", n_nope, hp->n_layer);
    if (m->rope_freqs_long)
        add(b, "LongRoPE (long factors past %d positions, attention factor %g)", hp->n_ctx_orig,
            (double)hp->rope_attn_factor);
    else if (m->rope_freqs || (hp->n_layer > 0 && m->layers[0].rope_freqs)) add(b, "RoPE frequency factors");
    if (!m->rope_freqs_long && hp->rope_attn_factor != 1.0f) add(b, "RoPE attention factor %g", (double)hp->rope_attn_factor);
    if (hp->rope_freq_scale != 1.0f) add(b, "RoPE linear scaling x%g", 1.0 / (double)hp->rope_freq_scale);
    if (n_sliding > 0)
        add(b, "sliding window %d on %d of %d layers", hp->sliding_window, n_sliding, hp->n_layer);
    if (n_shared > 0) add(b, "KV cache shared by %d layers", n_shared);
    if (n_qk_norm > 0) add(b, "%s", qk_full ? "QK norm over the whole projection" : "QK norm");
    if (n_bias > 0) add(b, "attention biases");
    if (n_sinks > 0) add(b, "attention sinks");
    if (hp->head_dim > 0 && fabsf(hp->attn_scale * sqrtf((float)hp->head_dim) - 1.0f) > 1e-4f)
        add(b, "attention scale %g", (double)hp->attn_scale);
    if (hp->attn_softcap > 0) add(b, "attention softcap %g", (double)hp->attn_softcap);
    if (n_post > 0) add(b, "%s", hp->no_pre_norm ? "post-norms only" : "sandwich norms");
}

/* The feed-forward part, embeddings and output. */
static void ffn_features(const struct wk_model *m, struct feat_buf *b)
{
    const struct wk_hparams *hp = &m->hp;
    int32_t n_moe = 0;
    bool sigmoid = false, softmax = false, topk_softmax = false, biased = false;
    float limit = 0;
    for (int32_t i = 0; i < hp->n_layer; i++) {
        const struct wk_moe_block *e = &m->layers[i].moe;
        if (!e->router) continue;
        n_moe++;
        topk_softmax = topk_softmax || e->topk_softmax;
        sigmoid = sigmoid || (e->sigmoid && !e->softmax_router && !e->topk_softmax);
        softmax = softmax || e->softmax_router;
        biased = biased || e->gate_b || e->down_b;
        if (e->swiglu_limit > 0) limit = e->swiglu_limit;
    }
    if (limit > 0) add(b, "clamped SwiGLU (limit %g)", (double)limit);
    else add(b, "%s", m->act == WK_ACT_GELU_TANH ? "GeGLU (tanh GELU)" : "SwiGLU");
    if (n_moe > 0)
        add(b, "mixture of experts on %d of %d layers (%d experts, %d per token%s%s)", n_moe, hp->n_layer,
            hp->n_expert, hp->n_expert_used,
            topk_softmax ? ", top-k then softmax" : softmax ? ", softmax router" : sigmoid ? ", sigmoid router" : "",
            biased ? ", biased experts" : "");
    if (hp->n_expert_shared > 0) add(b, "%d shared expert%s", hp->n_expert_shared, hp->n_expert_shared == 1 ? "" : "s");
    if (m->ple_embd) add(b, "per-layer embeddings (%d)", hp->n_embd_ple);
    if (hp->embed_scale != 1.0f) add(b, "embeddings scaled x%g", (double)hp->embed_scale);
    if (hp->residual_scale != 1.0f) add(b, "residual scaled x%g", (double)hp->residual_scale);
    if (hp->logit_scale != 1.0f) add(b, "logits scaled x%g", (double)hp->logit_scale);
    if (hp->final_softcap > 0) add(b, "final logit softcap %g", (double)hp->final_softcap);
    add(b, "%s", m->output == m->tok_embd ? "output tied to the embeddings" : "separate output matrix");
    if (m->is_mtp) add(b, "MTP assistant");
}

size_t wk_model_features(const struct wk_model *m, char *out, size_t cap)
{
    if (cap == 0) return 0;
    struct feat_buf b = {.out = out, .cap = cap, .len = 0};
    out[0] = '\0';
    attention_features(m, &b);
    ffn_features(m, &b);
    return b.len < cap ? b.len : cap - 1;
}

const char *wk_model_family_label(const struct wk_model *m)
{
    return m->family->label ? m->family->label : m->family->name;
}
