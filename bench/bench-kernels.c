/*
 * bench-kernels.c - single-thread speed of each dot-product kernel, per ISA
 * and weight dtype: a matrix-vector product over a weight matrix larger
 * than the caches (64 MiB), as in decode, reported as GB/s of weight bytes
 * and billions of weights per second. Three paths are timed: f32
 * activations one row per call (vec_dot), f32 activations over all rows in
 * one call (vec_dot_rows, what decode runs with WICK_EXACT=1), the same
 * with x rounded to 16 bits (vec_dot_rows_x16, decode's default where an
 * ISA has it), and 8-bit activations (vec_dot_q, quantizing x once per
 * product included).
 *
 * Usage: build/release/bench/bench-kernels [reps [DTYPE...]]   (a figure,
 * not a test); DTYPE names ("Q4_K", "MXFP4") limit the run to those types.
 */
#include "../src/cpu/wk_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MATRIX_BYTES /* -DMATRIX_BYTES=(256u << 10) measures rows held in L2 */
#define MATRIX_BYTES (64u << 20)
#endif
#define N_IN 2048

static const enum wk_dtype g_types[] = {WK_DTYPE_F32, WK_DTYPE_F16, WK_DTYPE_BF16, WK_DTYPE_Q8_0,
                                        WK_DTYPE_Q6_K, WK_DTYPE_Q5_K, WK_DTYPE_Q5_0, WK_DTYPE_Q5_1,
                                        WK_DTYPE_Q4_K, WK_DTYPE_Q4_1, WK_DTYPE_Q4_0,
                                        WK_DTYPE_Q3_K, WK_DTYPE_Q2_K, WK_DTYPE_IQ4_XS,
                                        WK_DTYPE_IQ4_NL, WK_DTYPE_MXFP4};

/* Random bytes with every f16 scale set to a small finite value. */
static void fill(enum wk_dtype t, uint8_t *p, size_t rows, size_t row_bytes)
{
    uint64_t s = 88172645463325252ull;
    for (size_t i = 0; i < rows * row_bytes; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        p[i] = (uint8_t)s;
    }
    const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
    if (!tr->is_quantized) {
        if (t == WK_DTYPE_F32)
            for (size_t i = 0; i < rows * row_bytes / 4; i++) ((float *)p)[i] = 0.01f;
        else
            memset(p, 0x20, rows * row_bytes); /* small f16/bf16 values */
        return;
    }
    wk_f16 h = wk_f32_to_f16(0.01f);
    size_t n_blocks = rows * row_bytes / tr->block_bytes;
    for (size_t b = 0; b < n_blocks; b++) {
        uint8_t *blk = p + b * tr->block_bytes;
        if (t == WK_DTYPE_Q6_K) memcpy(blk + offsetof(struct wk_block_q6_k, d), &h, 2);
        else if (t == WK_DTYPE_Q2_K) {
            memcpy(blk + offsetof(struct wk_block_q2_k, d), &h, 2);
            memcpy(blk + offsetof(struct wk_block_q2_k, dmin), &h, 2);
        } else if (t == WK_DTYPE_Q3_K) memcpy(blk + offsetof(struct wk_block_q3_k, d), &h, 2);
        else if (t == WK_DTYPE_MXFP4) blk[0] = 120; /* d = 2^-8 */
        else if (t == WK_DTYPE_IQ4_NL || t == WK_DTYPE_IQ4_XS) memcpy(blk, &h, 2);
        else {
            memcpy(blk, &h, 2);
            if (t != WK_DTYPE_Q4_0 && t != WK_DTYPE_Q5_0 && t != WK_DTYPE_Q8_0) memcpy(blk + 2, &h, 2);
        }
    }
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    static const char *isas[] = {"ref", "avx2", "avx512"};
    float *x = wk_aligned_alloc(N_IN * sizeof(float));
    for (int i = 0; i < N_IN; i++) x[i] = (float)(i % 17) * 0.01f - 0.08f;
    void *xq = wk_aligned_alloc(N_IN * 4);
    printf("%-7s %-6s %12s %12s %12s %12s %14s %14s\n", "isa", "dtype", "f32 x GB/s", "f32 x Gw/s", "rows GB/s",
           "x16 GB/s", "int8 x GB/s", "int8 x Gw/s");
    for (size_t ti = 0; ti < WK_ARRAY_LEN(g_types); ti++) {
        enum wk_dtype t = g_types[ti];
        const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
        bool wanted = argc <= 2;
        for (int a = 2; a < argc; a++) wanted |= strcmp(argv[a], tr->name) == 0;
        if (!wanted) continue;
        size_t row = wk_dtype_row_bytes(t, N_IN), rows = MATRIX_BYTES / row;
        uint8_t *w = wk_aligned_alloc(rows * row);
        fill(t, w, rows, row);
        float *y = wk_aligned_alloc(rows * sizeof(float));
        for (size_t ii = 0; ii < WK_ARRAY_LEN(isas); ii++) {
            const struct wk_cpu_kernels *k = wk_cpu_kernels_for(isas[ii]);
            if (!k) continue;
            double best[4] = {1e30, 1e30, 1e30, 1e30};
            int n_rep = ii == 0 ? 1 : reps; /* the reference is slow */
            for (int path = 0; path < 4; path++) {
                if (path == 1 && !k->vec_dot_q[t]) continue;
                if (path == 3 && !k->vec_dot_rows_x16[t]) continue;
                for (int r = 0; r < n_rep; r++) {
                    int64_t t0 = wk_time_ns();
                    if (path == 0) {
                        for (size_t i = 0; i < rows; i++) y[i] = k->vec_dot[t](N_IN, w + i * row, x);
                    } else if (path == 2) {
                        k->vec_dot_rows[t](N_IN, w, row, x, y, (int64_t)rows);
                    } else if (path == 3) {
                        k->vec_dot_rows_x16[t](N_IN, w, row, x, y, (int64_t)rows);
                    } else {
                        k->quantize[tr->vec_dot_type](x, xq, N_IN);
                        for (size_t i = 0; i < rows; i++) y[i] = k->vec_dot_q[t](N_IN, w + i * row, xq);
                    }
                    double s = (double)(wk_time_ns() - t0) / 1e9;
                    if (s < best[path]) best[path] = s;
                }
            }
            double gb = (double)(rows * row) / 1e9, gw = (double)rows * N_IN / 1e9;
            printf("%-7s %-6s %12.1f %12.2f %12.1f", isas[ii], tr->name, gb / best[0], gw / best[0], gb / best[2]);
            if (best[3] < 1e29) printf(" %12.1f", gb / best[3]);
            else printf(" %12s", "-");
            if (best[1] < 1e29) printf(" %14.1f %14.2f\n", gb / best[1], gw / best[1]);
            else printf(" %14s %14s\n", "-", "-");
        }
        wk_aligned_free(w);
        wk_aligned_free(y);
    }
    wk_aligned_free(x);
    wk_aligned_free(xq);
    return 0;
}
