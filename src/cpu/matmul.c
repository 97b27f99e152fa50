/*
 * matmul.c - y = x · Wᵀ over the thread pool, for any weight dtype, with
 * f32 activations.
 *
 * Threads split the output rows. For one token a thread runs the fused
 * dequantize-and-dot kernel over its rows (vec_dot_rows). For several
 * tokens a thread dequantizes WK_MATMUL_ROW_TILE rows into its scratch
 * and multiplies them with every token's row in the f32 GEMM kernel.
 * Either way each output is computed by one thread, in an order that does
 * not depend on how rows are split, so the result does not depend on the
 * thread count.
 */
#include "wk_cpu.h"

#define ROW_TILE WK_MATMUL_ROW_TILE

struct matmul_ctx {
    const struct wk_cpu_kernels *k;
    const struct wk_tensor *w;
    const float *x;
    float *y;
    int64_t n_tokens, n_in, n_out;
    float *scratch;
};

static void dot_task(void *p, int ith, int nth)
{
    struct matmul_ctx *c = p;
    int64_t lo, hi;
    wk_split_range(c->n_out, ith, nth, &lo, &hi);
    if (hi > lo)
        c->k->vec_dot_rows[c->w->dtype](c->n_in, (const uint8_t *)c->w->data + lo * c->w->nb[1],
                                        c->w->nb[1], c->x, c->y + lo, hi - lo);
}

static void gemm_task(void *p, int ith, int nth)
{
    struct matmul_ctx *c = p;
    int64_t lo, hi;
    wk_split_range(c->n_out, ith, nth, &lo, &hi);
    wk_to_f32_fn to_f32 = c->k->to_f32[c->w->dtype];
    const uint8_t *wdata = c->w->data;
    size_t w_row = c->w->nb[1];
    const int64_t n_in = c->n_in;
    float *tile = c->scratch + (size_t)ith * ROW_TILE * (size_t)n_in;
    for (int64_t r0 = lo; r0 < hi; r0 += ROW_TILE) {
        int64_t nr = WK_MIN(ROW_TILE, hi - r0);
        for (int64_t r = 0; r < nr; r++) to_f32(wdata + (r0 + r) * w_row, tile + r * n_in, n_in);
        c->k->gemm_f32(nr, c->n_tokens, n_in, tile, n_in, c->x, n_in, c->y + r0, c->n_out);
    }
}

void wk_cpu_matmul(struct wk_threadpool *pool, const struct wk_cpu_kernels *k,
                   const struct wk_tensor *w, const float *x, float *y, int64_t n_tokens,
                   float *scratch)
{
    WK_ASSERT(k->vec_dot[w->dtype] != NULL);
    struct matmul_ctx c = {
        .k = k, .w = w, .x = x, .y = y, .n_tokens = n_tokens, .n_in = w->ne[0], .n_out = w->ne[1],
        .scratch = scratch,
    };
    wk_threadpool_run(pool, n_tokens == 1 ? dot_task : gemm_task, &c);
}

void wk_cpu_get_row(const struct wk_cpu_kernels *k, const struct wk_tensor *w, int64_t row,
                    float *dst)
{
    k->to_f32[w->dtype](wk_tensor_row(w, row), dst, w->ne[0]);
}
