/*
 * context_moe.c - the mixture-of-experts FFNs of the forward pass: Gemma 4's
 * experts beside the dense FFN and GLM-4-MoE-Lite's sigmoid-routed experts
 * beside a shared one (the routers in moe.c). Tokens are grouped by expert,
 * so each chosen expert's weights are read once per chunk.
 */
#include "context_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Expert e's gate, up and down matrices: views into the layer's 3-D
 * tensors (gate and up fused or apart), or its per-expert tensors. */
static void expert_mats(const struct wk_layer *l, int64_t e, int64_t E, int64_t FE, struct wk_tensor *gate,
                        struct wk_tensor *up, struct wk_tensor *down)
{
    if (l->moe.gate_e) {
        *gate = *l->moe.gate_e[e], *up = *l->moe.up_e[e], *down = *l->moe.down_e[e];
        return;
    }
    *down = expert_view(l->moe.down, e, 0, E);
    if (l->moe.gate_up) {
        *gate = expert_view(l->moe.gate_up, e, 0, FE);
        *up = expert_view(l->moe.gate_up, e, FE, FE);
    } else {
        *gate = expert_view(l->moe.gate, e, 0, FE);
        *up = expert_view(l->moe.up, e, 0, FE);
    }
}

/*
 * The routed experts for the chunk's n rows of u [n][E], each token's K
 * choices and weights in moe_idx / moe_w: moe_sum [n][E] = Σ_j w_j ·
 * down_e(act(gate_e·u) ⊙ up_e·u), summed in expert order. Tokens are
 * grouped by expert, so each chosen expert's weights are read once per
 * chunk and no other expert's are read at all; with moe_naive
 * (WICK_MOE_NAIVE=1, for bench/moe-prefill) each token's experts run
 * apart instead, as a per-token loop would, reading an expert once per
 * token that chose it.
 */
static void moe_experts(struct wk_context *c, const struct wk_layer *l, const float *u, int32_t n, enum wk_glu glu,
                        unsigned mm)
{
    const struct wk_hparams *hp = &c->m->hp;
    const int64_t E = hp->n_embd, NE = hp->n_expert, K = hp->n_expert_used, FE = hp->n_ff_exp;
    memset(c->moe_sum, 0, (size_t)(n * E) * sizeof(float));
    for (int64_t g = 0; g < (c->moe_naive ? n * K : NE); g++) {
        int32_t cnt = 0, e; /* the slots (token · K + j) that chose e, in token order */
        if (c->moe_naive) {
            e = c->moe_idx[g];
            c->moe_rows[cnt++] = (int32_t)g;
        } else {
            e = (int32_t)g;
            for (int64_t s = 0; s < n * K; s++)
                if (c->moe_idx[s] == e) c->moe_rows[cnt++] = (int32_t)s;
        }
        if (cnt == 0) continue;
        for (int32_t i = 0; i < cnt; i++)
            memcpy(c->moe_in + i * E, u + (c->moe_rows[i] / K) * E, (size_t)E * sizeof(float));
        struct wk_tensor gate, up, down;
        expert_mats(l, e, E, FE, &gate, &up, &down);
        c->be->ops->matmul_glu(c->be, &gate, &up, c->moe_in, c->moe_gate, c->moe_up, cnt, glu, mm);
        c->be->ops->matmul(c->be, &down, c->moe_gate, c->moe_y, cnt, mm);
        for (int32_t i = 0; i < cnt; i++) {
            float w = c->moe_w[c->moe_rows[i]], *dst = c->moe_sum + (c->moe_rows[i] / K) * E;
            const float *y = c->moe_y + i * E;
            for (int64_t j = 0; j < E; j++) dst[j] += y[j] * w;
        }
    }
}


/*
 * Gemma 4's expert path for the chunk's n rows of x (the post-attention
 * residual; architectures.md §4.6, HF Gemma4TextRouter/Gemma4TextExperts):
 * router on RMSNorm(x)·scale/sqrt(E), softmax over the experts, the top k
 * (ties to the lower index), renormalised, times the expert's scale; each
 * expert's GeGLU FFN on RMSNorm(x; pre_norm_2), its weighted outputs
 * summed in expert order, RMSNorm(·; post_norm_2), added to o.
 */
void wk__moe_ffn(struct wk_context *c, const struct wk_layer *l, int32_t n, unsigned mm)
{
    const struct wk_hparams *hp = &c->m->hp;
    const struct wk_cpu_kernels *k = c->k;
    const int64_t E = hp->n_embd, NE = hp->n_expert, K = hp->n_expert_used;
    const float root = 1.0f / sqrtf((float)E);
    wk__norm_rows(c, n, E, c->x, l->moe.router_scale, hp->rms_eps, c->moe_u);
    for (int64_t i = 0; i < n * E; i++) c->moe_u[i] *= root;
    c->be->ops->matmul(c->be, l->moe.router, c->moe_u, c->moe_logits, n, mm);
    const float *expert_scale = l->moe.expert_scale->data;
    for (int32_t t = 0; t < n; t++) {
        float *p = c->moe_logits + t * NE, sum = 0;
        k->softmax(NE, p);
        int32_t *idx = c->moe_idx + t * K;
        float *w = c->moe_w + t * K;
        wk__top_k(p, (int32_t)NE, (int32_t)K, idx);
        for (int64_t j = 0; j < K; j++) w[j] = p[idx[j]], sum += p[idx[j]];
        for (int64_t j = 0; j < K; j++) w[j] = w[j] / sum * expert_scale[idx[j]];
    }
    wk__norm_rows(c, n, E, c->x, l->moe.pre_norm, hp->rms_eps, c->moe_u);
    moe_experts(c, l, c->moe_u, n, WK_GLU_GELU_TANH, mm);
    wk__norm_rows(c, n, E, c->moe_sum, l->moe.post_norm_2, hp->rms_eps, c->moe_sum);
    for (int64_t i = 0; i < n * E; i++) c->o[i] += c->moe_sum[i];
}

/*
 * GLM-4-MoE-Lite's routed experts (architectures.md §6.4 step 8; HF
 * Glm4MoeLiteMoE) on the FFN input xn [n][E] (post-attention RMSNorm):
 * router logits, then per token wk__moe_select_sigmoid (sigmoid scores,
 * top k by score + selection bias as torch.topk picks them, the chosen
 * scores normalised and scaled); SwiGLU experts; their sum added to o,
 * which holds the shared expert's output (the layer's dense FFN).
 */
void wk__moe_ffn_sigmoid(struct wk_context *c, const struct wk_layer *l, int32_t n, unsigned mm)
{
    const struct wk_hparams *hp = &c->m->hp;
    const int64_t E = hp->n_embd, NE = hp->n_expert, K = hp->n_expert_used;
    c->be->ops->matmul(c->be, l->moe.router, c->xn, c->moe_logits, n, mm);
    const float *bias = l->moe.sel_bias ? l->moe.sel_bias->data : NULL;
    for (int32_t t = 0; t < n; t++)
        wk__moe_select_sigmoid(c->moe_logits + t * NE, bias, (int32_t)NE, (int32_t)K, hp->expert_weights_norm,
                               hp->expert_weights_scale, c->moe_idx + t * K, c->moe_w + t * K);
    moe_experts(c, l, c->xn, n, WK_GLU_SILU, mm);
    for (int64_t i = 0; i < n * E; i++) c->o[i] += c->moe_sum[i];
}

