/*
 * matmul.c - y = x · Wᵀ over the thread pool, for any weight dtype.
 *
 * Activations are first quantized to the weight type's vec_dot_type (Q8_0,
 * Q8_1 or Q8_K, as llama.cpp does) so the dot kernels can multiply 8-bit
 * integers; float weights take the f32 activations as they are. Threads
 * then split the output rows; each thread walks its rows in tiles so a tile
 * of weight rows stays in L1 while every token's activation row streams
 * past it. Each y element is exactly one vec_dot call, so the result does
 * not depend on the thread count.
 */
#include "wk_cpu.h"

#define ROW_TILE 16

size_t wk_cpu_matmul_scratch_bytes(enum wk_dtype w_dtype, int64_t n_in, int64_t n_tokens)
{
    const struct wk_dtype_traits *tr = wk_dtype_traits_get((uint32_t)w_dtype);
    if (!tr || tr->vec_dot_type == WK_DTYPE_F32) return 0;
    return wk_dtype_row_bytes(tr->vec_dot_type, n_in) * (size_t)n_tokens;
}

struct matmul_ctx {
    const struct wk_cpu_kernels *k;
    const struct wk_tensor *w;
    const float *x;
    float *y;
    int64_t n_tokens, n_in, n_out;
    const uint8_t *xq; /* activation rows in vec_dot_type */
    uint8_t *xq_out;   /* same buffer, written by the quantize phase */
    size_t xq_row_bytes;
    enum wk_dtype act_type;
};

static void quantize_task(void *p, int ith, int nth)
{
    struct matmul_ctx *c = p;
    int64_t lo, hi;
    wk_split_range(c->n_tokens, ith, nth, &lo, &hi);
    wk_from_f32_fn q = c->k->quantize[c->act_type];
    for (int64_t t = lo; t < hi; t++) q(c->x + t * c->n_in, c->xq_out + t * c->xq_row_bytes, c->n_in);
}

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
            const void *xr = c->xq + t * c->xq_row_bytes;
            float *yr = c->y + t * c->n_out;
            for (int64_t r = r0; r < r1; r++) yr[r] = dot(c->n_in, wdata + r * w_row, xr);
        }
    }
}

void wk_cpu_matmul(struct wk_threadpool *pool, const struct wk_cpu_kernels *k,
                   const struct wk_tensor *w, const float *x, float *y, int64_t n_tokens,
                   void *scratch)
{
    const struct wk_dtype_traits *tr = wk_dtype_traits_get((uint32_t)w->dtype);
    WK_ASSERT(tr && k->vec_dot[w->dtype]);
    struct matmul_ctx c = {
        .k = k, .w = w, .x = x, .y = y, .n_tokens = n_tokens,
        .n_in = w->ne[0], .n_out = w->ne[1], .act_type = tr->vec_dot_type,
    };
    if (tr->vec_dot_type == WK_DTYPE_F32) {
        c.xq = (const uint8_t *)x;
        c.xq_row_bytes = (size_t)c.n_in * sizeof(float);
    } else {
        c.xq = c.xq_out = scratch;
        c.xq_row_bytes = wk_dtype_row_bytes(tr->vec_dot_type, c.n_in);
        if (n_tokens == 1)
            quantize_task(&c, 0, 1);
        else
            wk_threadpool_run(pool, quantize_task, &c);
    }
    wk_threadpool_run(pool, dot_task, &c);
}

void wk_cpu_get_row(const struct wk_cpu_kernels *k, const struct wk_tensor *w, int64_t row,
                    float *dst)
{
    k->to_f32[w->dtype](wk_tensor_row(w, row), dst, w->ne[0]);
}
