/*
 * context_moe.c - the mixture-of-experts FFNs of the forward pass: Gemma 4's
 * experts beside the dense FFN and GLM-4-MoE-Lite's sigmoid-routed experts
 * beside a shared one. The routing and the grouped experts are backend
 * operations (backend.h: moe_route, moe_experts; the CPU's in
 * backend_cpu_moe.c, the routers' math in moe.c); this file says which
 * norms, scales and sums surround them for each family.
 */
#include "context_internal.h"

#include <math.h>

/* The routed experts of layer l on u [n][E], routed by c->moe_logits (the
 * router's output, overwritten): their weighted sum into c->moe_sum. */
static void route_and_run(struct wk_context *c, const struct wk_layer *l, const float *u, int32_t n, bool softmax,
                          enum wk_glu glu, unsigned mm)
{
    const struct wk_hparams *hp = &c->m->hp;
    struct wk_backend *be = c->be;
    const struct wk_moe_route_args r = {.logits = c->moe_logits, .n = n, .n_expert = hp->n_expert,
                                        .k = hp->n_expert_used, .softmax = softmax,
                                        .expert_scale = l->moe.expert_scale, .sel_bias = l->moe.sel_bias,
                                        .norm_weights = hp->expert_weights_norm,
                                        .weights_scale = hp->expert_weights_scale,
                                        .topk_softmax = l->moe.topk_softmax, .idx = c->moe_idx, .w = c->moe_w};
    be->ops->moe_route(be, &r);
    const struct wk_moe_experts_args x = {.blk = &l->moe, .u = u, .idx = c->moe_idx, .w = c->moe_w, .n = n,
                                          .n_expert = hp->n_expert, .k = hp->n_expert_used, .n_embd = hp->n_embd,
                                          .n_ff_exp = hp->n_ff_exp, .glu = glu, .flags = mm,
                                          .per_token_order = c->moe_naive, .sum = c->moe_sum, .in = c->moe_in,
                                          .y = c->moe_y, .gate = c->moe_gate, .up = c->moe_up, .rows = c->moe_rows};
    be->ops->moe_experts(be, &x);
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
    struct wk_backend *be = c->be;
    const int64_t E = hp->n_embd;
    wk__norm_rows(c, n, E, c->x, l->moe.router_scale, hp->rms_eps, c->moe_u);
    be->ops->scale(be, n * E, c->moe_u, 1.0f / sqrtf((float)E));
    be->ops->matmul(be, l->moe.router, c->moe_u, c->moe_logits, n, mm);
    wk__norm_rows(c, n, E, c->x, l->moe.pre_norm, hp->rms_eps, c->moe_u);
    route_and_run(c, l, c->moe_u, n, true, WK_GLU_GELU_TANH, mm);
    wk__norm_rows(c, n, E, c->moe_sum, l->moe.post_norm_2, hp->rms_eps, c->moe_sum);
    be->ops->add(be, n * E, c->o, c->moe_sum);
}

/*
 * GLM-4-MoE-Lite's routed experts (architectures.md §6.4 step 8; HF
 * Glm4MoeLiteMoE) on the FFN input xn [n][E] (post-attention RMSNorm):
 * router logits, then per token wk__moe_select_sigmoid (sigmoid scores,
 * top k by score + selection bias as torch.topk picks them, the chosen
 * scores normalised and scaled); SwiGLU experts; their sum added to o,
 * which holds the shared expert's output (the layer's dense FFN).
 * Qwen 3 MoE (softmax_router) takes the same path with a softmax router
 * (backend_cpu_moe.c; no expert_scale: none) and no shared expert.
 * gpt-oss (topk_softmax) too: router logits plus its bias, the top k,
 * softmax over them; biased experts with the clamped SwiGLU.
 */
void wk__moe_ffn_sigmoid(struct wk_context *c, const struct wk_layer *l, int32_t n, unsigned mm)
{
    struct wk_backend *be = c->be;
    be->ops->matmul(be, l->moe.router, c->xn, c->moe_logits, n, mm);
    if (l->moe.router_bias) be->ops->add_bias(be, n, c->m->hp.n_expert, c->moe_logits, l->moe.router_bias);
    route_and_run(c, l, c->xn, n, l->moe.softmax_router, WK_GLU_SILU, mm);
    be->ops->add(be, n * c->m->hp.n_embd, c->o, c->moe_sum);
}
