/*
 * matmul.c - y = x · Wᵀ over the thread pool, for any weight dtype, with
 * f32 activations.
 *
 * Threads split the output rows; each thread walks its rows in tiles so a
 * tile of weight rows stays in L1 while every token's activation row
 * streams past it. Each y element is exactly one vec_dot call, so the
 * result does not depend on the thread count.
 */
#include "wk_cpu.h"

#define ROW_TILE 16

struct matmul_ctx {
    const struct wk_cpu_kernels *k;
    const struct wk_tensor *w;
    const float *x;
    float *y;
    int64_t n_tokens, n_in, n_out;
};

static void dot_task(void *p, int ith, int nth)
{
    struct matmul_ctx *c = p;
    int64_t lo, hi;
    wk_split_range(c->n_out, ith, nth, &lo, &hi);
    wk_vec_dot_fn dot = c->k->vec_dot[c->w->dtype];
    const uint8_t *wdata = c->w->data;
    size_t w_row = c->w->nb[1];
    for (int64_t r0 = lo; r0 < hi; r0 += ROW_TILE) {
        int64_t r1 = WK_MIN(r0 + ROW_TILE, hi);
        for (int64_t t = 0; t < c->n_tokens; t++) {
            const float *xr = c->x + t * c->n_in;
            float *yr = c->y + t * c->n_out;
            for (int64_t r = r0; r < r1; r++) yr[r] = dot(c->n_in, wdata + r * w_row, xr);
        }
    }
}

void wk_cpu_matmul(struct wk_threadpool *pool, const struct wk_cpu_kernels *k,
                   const struct wk_tensor *w, const float *x, float *y, int64_t n_tokens)
{
    WK_ASSERT(k->vec_dot[w->dtype] != NULL);
    struct matmul_ctx c = {
        .k = k, .w = w, .x = x, .y = y, .n_tokens = n_tokens, .n_in = w->ne[0], .n_out = w->ne[1],
    };
    wk_threadpool_run(pool, dot_task, &c);
}

void wk_cpu_get_row(const struct wk_cpu_kernels *k, const struct wk_tensor *w, int64_t row,
                    float *dst)
{
    k->to_f32[w->dtype](wk_tensor_row(w, row), dst, w->ne[0]);
}
