/*
 * matmul.c - y = x · Wᵀ over the thread pool, for any weight dtype, with
 * f32 activations.
 *
 * Threads split the output rows. For one token a thread runs the fused
 * dequantize-and-dot kernel over its rows (vec_dot_rows). For several
 * tokens a thread dequantizes WK_MATMUL_ROW_TILE rows into its scratch
 * and multiplies them with every token's row in the f32 GEMM kernel.
 * Either way each output is computed by one thread in a fixed order, so a
 * given thread count always gives the same bits (kernels that block rows
 * may round differently when the rows are split differently).
 */
#include "wk_cpu.h"
#include "wk_cpu_arch.h"

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
    if (hi <= lo) return;
    enum wk_dtype t = c->w->dtype;
    const uint8_t *w = (const uint8_t *)c->w->data + lo * c->w->nb[1];
    if (c->k->vec_dot_rows[t] != wk__vec_dot_rows_ref(t)) {
        c->k->vec_dot_rows[t](c->n_in, w, c->w->nb[1], c->x, c->y + lo, hi - lo);
        return;
    }
    /* no multi-row kernel for this ISA and type: its single-row one */
    for (int64_t r = 0; r < hi - lo; r++) c->y[lo + r] = c->k->vec_dot[t](c->n_in, w + r * c->w->nb[1], c->x);
}

void wk_cpu_gemm(const struct wk_cpu_kernels *k, int64_t m, int64_t n, int64_t kk, const float *a,
                 int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc)
{
    if (k->gemm_f32 != wk__gemm_f32_ref) {
        k->gemm_f32(m, n, kk, a, lda, b, ldb, c, ldc);
        return;
    }
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) c[j * ldc + i] = k->dot_f32(kk, a + i * lda, b + j * ldb);
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
        wk_cpu_gemm(c->k, nr, c->n_tokens, n_in, tile, n_in, c->x, n_in, c->y + r0, c->n_out);
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
