/*
 * backend_cpu_moe.c - the CPU backend's mixture-of-experts operations
 * (backend.h: moe_route, moe_experts): the routers' choices on the host,
 * and the experts' FFNs with tokens grouped by expert, so each chosen
 * expert's weights are read once per chunk.
 */
#include "backend.h"
#include "model_internal.h"

#include <math.h>
#include <string.h>

static struct wk_backend_cpu *cpu(struct wk_backend *b) { return (struct wk_backend_cpu *)b; }

void wk__cpu_moe_route(struct wk_backend *b, const struct wk_moe_route_args *a)
{
    const int32_t NE = a->n_expert, K = a->k;
    if (a->topk_softmax) { /* gpt-oss: top k of the logits, softmax over them */
        for (int32_t t = 0; t < a->n; t++) {
            const float *p = a->logits + (int64_t)t * NE;
            float *w = a->w + (int64_t)t * K;
            int32_t *idx = a->idx + (int64_t)t * K;
            wk__top_k(p, NE, K, idx);
            for (int32_t j = 0; j < K; j++) w[j] = p[idx[j]];
            cpu(b)->k->softmax(K, w);
        }
        return;
    }
    if (!a->softmax) {
        const float *bias = a->sel_bias ? a->sel_bias->data : NULL;
        for (int32_t t = 0; t < a->n; t++)
            wk__moe_select_sigmoid(a->logits + (int64_t)t * NE, bias, NE, K, a->norm_weights, a->weights_scale,
                                   a->idx + (int64_t)t * K, a->w + (int64_t)t * K);
        return;
    }
    if (!a->expert_scale) { /* Qwen 3 MoE: softmax, torch's top k, renormalised when asked */
        for (int32_t t = 0; t < a->n; t++) {
            float *p = a->logits + (int64_t)t * NE, *w = a->w + (int64_t)t * K, sum = 0;
            int32_t *idx = a->idx + (int64_t)t * K;
            cpu(b)->k->softmax(NE, p);
            wk__topk_torch(p, NE, K, idx);
            for (int32_t j = 0; j < K; j++) w[j] = p[idx[j]], sum += w[j];
            for (int32_t j = 0; a->norm_weights && j < K; j++) w[j] /= sum;
        }
        return;
    }
    const float *expert_scale = a->expert_scale->data;
    for (int32_t t = 0; t < a->n; t++) {
        float *p = a->logits + (int64_t)t * NE, sum = 0;
        cpu(b)->k->softmax(NE, p);
        int32_t *idx = a->idx + (int64_t)t * K;
        float *w = a->w + (int64_t)t * K;
        wk__top_k(p, NE, K, idx);
        for (int32_t j = 0; j < K; j++) w[j] = p[idx[j]], sum += p[idx[j]];
        for (int32_t j = 0; j < K; j++) w[j] = w[j] / sum * expert_scale[idx[j]];
    }
}

/* A view of rows [row0, row0 + n_rows) of expert e's matrix in a 3-D
 * expert tensor [n_expert][rows][n_in]. */
static struct wk_tensor expert_view(const struct wk_tensor *t, int64_t e, int64_t row0, int64_t n_rows)
{
    struct wk_tensor v = *t;
    v.n_dims = 2;
    v.ne[1] = n_rows;
    v.ne[2] = 1;
    v.data = (const uint8_t *)t->data + (size_t)e * t->nb[2] + (size_t)row0 * t->nb[1];
    return v;
}

/* Expert e's gate, up and down matrices: views into the block's 3-D
 * tensors (gate and up fused or apart), or its per-expert tensors. */
static void expert_mats(const struct wk_moe_block *m, int64_t e, int64_t E, int64_t FE, struct wk_tensor *gate,
                        struct wk_tensor *up, struct wk_tensor *down)
{
    if (m->gate_e) {
        *gate = *m->gate_e[e], *up = *m->up_e[e], *down = *m->down_e[e];
        return;
    }
    *down = expert_view(m->down, e, 0, E);
    if (m->gate_up) {
        *gate = expert_view(m->gate_up, e, 0, FE);
        *up = expert_view(m->gate_up, e, FE, FE);
    } else {
        *gate = expert_view(m->gate, e, 0, FE);
        *up = expert_view(m->up, e, 0, FE);
    }
}

/*
 * gpt-oss's expert FFN on the cnt rows of in [cnt][E] (transformers'
 * GptOssExperts._apply_gate, ggml's swiglu_oai): g = in·gateᵀ + gate_b[e],
 * u = in·upᵀ + up_b[e]; g ← min(g, L), u ← clamp(u, −L, L);
 * h = g·sigmoid(alpha·g)·(u + 1); y [cnt][E] = h·downᵀ + down_b[e].
 */
static void experts_oai(struct wk_backend *b, const struct wk_moe_experts_args *a, int64_t e, int32_t cnt,
                        const struct wk_tensor *gate, const struct wk_tensor *up, const struct wk_tensor *down)
{
    const struct wk_moe_block *m = a->blk;
    const int64_t E = a->n_embd, FE = a->n_ff_exp;
    const float L = m->swiglu_limit, alpha = m->swiglu_alpha;
    const float *gb = (const float *)m->gate_b->data + e * FE, *ub = (const float *)m->up_b->data + e * FE;
    const float *db = (const float *)m->down_b->data + e * E;
    const struct wk_tensor *ws[2] = {gate, up};
    float *ys[2] = {a->gate, a->up};
    b->ops->matmul_many(b, 2, ws, ys, a->in, cnt, a->flags);
    for (int32_t i = 0; i < cnt; i++) {
        float *g = a->gate + i * FE;
        const float *u = a->up + i * FE;
        for (int64_t j = 0; j < FE; j++) {
            float x = g[j] + gb[j], y = u[j] + ub[j];
            x = x > L ? L : x;
            y = y > L ? L : y < -L ? -L : y;
            g[j] = x / (1.0f + expf(-alpha * x)) * (y + 1.0f);
        }
    }
    b->ops->matmul(b, down, a->gate, a->y, cnt, a->flags);
    for (int32_t i = 0; i < cnt; i++)
        for (int64_t j = 0; j < E; j++) a->y[i * E + j] += db[j];
}

void wk__cpu_moe_experts(struct wk_backend *b, const struct wk_moe_experts_args *a)
{
    const int64_t E = a->n_embd, NE = a->n_expert, K = a->k, n = a->n;
    memset(a->sum, 0, (size_t)(n * E) * sizeof(float));
    for (int64_t g = 0; g < (a->per_token_order ? n * K : NE); g++) {
        int32_t cnt = 0, e; /* the slots (token · K + j) that chose e, in token order */
        if (a->per_token_order) {
            e = a->idx[g];
            a->rows[cnt++] = (int32_t)g;
        } else {
            e = (int32_t)g;
            for (int64_t s = 0; s < n * K; s++)
                if (a->idx[s] == e) a->rows[cnt++] = (int32_t)s;
        }
        if (cnt == 0) continue;
        for (int32_t i = 0; i < cnt; i++)
            memcpy(a->in + i * E, a->u + (a->rows[i] / K) * E, (size_t)E * sizeof(float));
        struct wk_tensor gate, up, down;
        expert_mats(a->blk, e, E, a->n_ff_exp, &gate, &up, &down);
        if (a->blk->swiglu_limit > 0) {
            experts_oai(b, a, e, cnt, &gate, &up, &down);
        } else {
            b->ops->matmul_glu(b, &gate, &up, a->in, a->gate, a->up, cnt, a->glu, a->flags);
            b->ops->matmul(b, &down, a->gate, a->y, cnt, a->flags);
        }
        for (int32_t i = 0; i < cnt; i++) {
            float w = a->w[a->rows[i]], *dst = a->sum + (a->rows[i] / K) * E;
            const float *y = a->y + i * E;
            for (int64_t j = 0; j < E; j++) dst[j] += y[j] * w;
        }
    }
}
