/*
 * gemm-r16.c - one thread's speed of the R16 integer GEMM (gemm_r16,
 * wk_cpu.h) against the path it replaces, dequantized tiles of 64 rows
 * through the f32 GEMM (gemm_f32_packed, or gemm_f32 where the table has
 * no packed path), on one random Q4_K, Q6_K, Q4_1, Q5_0 or Q8_0
 * matrix; and of R16 decode (vec_dot_rows_r16, x prepared once) in GB/s of
 * rows. A figure, not a test; the table the process gets is the one wick
 * runs (WICK_CPU caps it).
 *
 *   gemm-r16 [Q4_K|Q6_K|Q4_1|Q5_0|Q8_0] [N_IN=1536] [ROWS=1536] [TOKENS=64] [REPS=5]
 *
 * Prints "f32 tiles", "r16 gemm" (G multiply-adds a second, best of REPS;
 * the GEMM's x preparation included) and "r16 decode" (GB/s of weight
 * rows, best of 4 * REPS); "r16 tokens": the batched-decode entry
 * (vec_dot_rows_r16_tokens, x prepared included), G multiply-adds a second.
 */
#include "../src/base/wk_base.h"
#include "../src/cpu/wk_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *tn = argc > 1 ? argv[1] : "Q4_K";
    const enum wk_dtype t = !strcmp(tn, "Q6_K")   ? WK_DTYPE_Q6_K
                            : !strcmp(tn, "Q4_1") ? WK_DTYPE_Q4_1
                            : !strcmp(tn, "Q5_0") ? WK_DTYPE_Q5_0
                            : !strcmp(tn, "Q8_0") ? WK_DTYPE_Q8_0
                            : !strcmp(tn, "Q4_K") ? WK_DTYPE_Q4_K
                                                  : WK_DTYPE_COUNT;
    const int64_t n = argc > 2 ? atoll(argv[2]) : 1536, rows = argc > 3 ? atoll(argv[3]) : 1536;
    const int64_t ntok = argc > 4 ? atoll(argv[4]) : 64;
    const int reps = argc > 5 ? atoi(argv[5]) : 5;
    if (t == WK_DTYPE_COUNT || n <= 0 || n % 256 || rows <= 0 || rows % 64 || ntok <= 0 || reps <= 0) {
        fprintf(stderr, "usage: %s [Q4_K|Q6_K|Q4_1|Q5_0|Q8_0] [N_IN (a multiple of 256)] [ROWS (of 64)] [TOKENS] [REPS]\n", argv[0]);
        return 2;
    }
    const struct wk_cpu_kernels *k = wk_cpu_kernels_get();
    const enum wk_dtype r16 = wk_cpu_r16_dtype(t);
    const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
    const size_t rb = wk_dtype_row_bytes(t, n);
    uint8_t *w = wk_aligned_alloc(rb * (size_t)rows), *tmp = wk_aligned_alloc(rb * WK_R16_ROWS);
    float *x = wk_aligned_alloc((size_t)(n * ntok) * 4), *wf = wk_aligned_alloc((size_t)(64 * n) * 4);
    float *out = wk_aligned_alloc((size_t)(rows * ntok) * 4);
    const size_t ldp = wk_cpu_r16_gemm_prep_floats(k, n);
    float *prep = wk_aligned_alloc(ldp * (size_t)ntok * 4);
    if (!w || !tmp || !x || !wf || !out || !prep) return 1;
    uint64_t s = 88172645463325252ull;
    for (size_t i = 0; i < rb * (size_t)rows; i++) s ^= s << 13, s ^= s >> 7, s ^= s << 17, w[i] = (uint8_t)s;
    /* small finite f16 scales (0x2000 = 2^-7) where the block keeps them */
    const size_t bb = tr->block_bytes, nblk = rb * (size_t)rows / bb;
    const uint16_t h = 0x2000;
    for (size_t b = 0; b < nblk; b++) {
        if (t == WK_DTYPE_Q4_K || t == WK_DTYPE_Q4_1) memcpy(w + b * bb, &h, 2), memcpy(w + b * bb + 2, &h, 2);
        else if (t == WK_DTYPE_Q6_K) memcpy(w + b * bb + bb - 2, &h, 2);
        else memcpy(w + b * bb, &h, 2); /* Q5_0, Q8_0: d first */
    }
    for (int64_t i = 0; i < n * ntok; i++)
        s ^= s << 13, s ^= s >> 7, s ^= s << 17, x[i] = (float)((s >> 40) & 0xffff) / 65536.0f - 0.5f;
    const double macs = (double)n * (double)rows * (double)ntok;
    /* the matmul's prefill tiles take the packed path where the table has one */
    const wk_gemm_f32_fn gemm = k->gemm_f32_packed ? k->gemm_f32_packed : k->gemm_f32;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        const int64_t t0 = wk_time_ns();
        for (int64_t r0 = 0; r0 < rows; r0 += 64) {
            for (int i = 0; i < 64; i++) k->to_f32[t](w + (size_t)(r0 + i) * rb, wf + i * n, n);
            gemm(64, ntok, n, wf, n, x, n, out + r0, rows);
        }
        best = WK_MIN(best, (double)(wk_time_ns() - t0));
    }
    printf("f32 tiles   %6.1f G multiply-adds/s\n", macs / best);
    if (r16 == WK_DTYPE_COUNT || !k->gemm_r16[r16] || !k->r16_prepare) {
        printf("r16 gemm    (none in the %s table)\n", k->isa);
        return 0;
    }
    wk_cpu_r16_pack(t, w, n, rows, tmp);
    best = 1e30;
    for (int r = 0; r < reps; r++) {
        const int64_t t0 = wk_time_ns();
        for (int64_t j = 0; j < ntok; j++) wk_cpu_r16_prepare_gemm(k, n, x + j * n, prep + (size_t)j * ldp);
        k->gemm_r16[r16](n, w, rb, prep, ldp, ntok, out, (size_t)rows, rows);
        best = WK_MIN(best, (double)(wk_time_ns() - t0));
    }
    printf("r16 gemm    %6.1f G multiply-adds/s\n", macs / best);
    best = 1e30;
    for (int r = 0; r < 4 * reps; r++) {
        const int64_t t0 = wk_time_ns();
        k->vec_dot_rows_r16[r16](n, w, rb, prep, out, rows);
        best = WK_MIN(best, (double)(wk_time_ns() - t0));
    }
    printf("r16 decode  %6.1f GB/s of rows\n", (double)rb * (double)rows / best);
    if (!k->vec_dot_rows_r16_tokens[r16]) return 0;
    best = 1e30;
    for (int r = 0; r < reps; r++) {
        const int64_t t0 = wk_time_ns();
        for (int64_t j = 0; j < ntok; j++) k->r16_prepare(n, x + j * n, prep + (size_t)j * ldp);
        k->vec_dot_rows_r16_tokens[r16](n, w, rb, prep, ldp, (int32_t)ntok, out, (size_t)rows, rows);
        best = WK_MIN(best, (double)(wk_time_ns() - t0));
    }
    printf("r16 tokens  %6.1f G multiply-adds/s (batched decode: each token's bits its lone decode's)\n", macs / best);
    return 0;
}
