/*
 * wk_cpu_arch.h - internal to src/cpu: the entry points of the per-ISA
 * kernel files. Each fill function overwrites the table entries its ISA
 * implements and leaves the rest (already the _ref kernels) alone. Those
 * files are compiled with their own -m flags; nothing else is.
 */
#ifndef WK_CPU_ARCH_H
#define WK_CPU_ARCH_H

#include "wk_cpu.h"

void wk__cpu_fill_avx2(struct wk_cpu_kernels *k);
void wk__cpu_fill_avx512(struct wk_cpu_kernels *k);
/* r16_amx.c: gemm_r16 through AMX-INT8 tiles for Q4_1, Q5_0, Q8_0 and Q4_K
 * R16, and vec_dot_rows_r16_tokens for those and Q6_K R16, over a filled
 * AVX-512 VNNI table (whose entries it keeps for the tokens past the last
 * whole tile); call only where wk_cpu_features_get()->amx_int8. */
void wk__cpu_fill_amx(struct wk_cpu_kernels *k);

/* Plain-C float helpers, also the fallback of the table. */
float wk__dot_f32_ref(int64_t n, const float *a, const float *b);
void wk__axpy_f32_ref(int64_t n, float a, const float *x, float *y);
void wk__gemm_f32_ref(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float *c, int64_t ldc);
/* The reference multi-row dot for dtype t: one vec_dot per row. */
wk_vec_dot_rows_fn wk__vec_dot_rows_ref(enum wk_dtype t);

/*
 * The 16-bit activation quantizer of the vec_dot_rows_x16 kernels
 * (rows_x16_ref.c has the format): x [n] f32, n a multiple of 32; writes
 * d [n / 32] (per block, max|x| / 127), hi [n] and lo [n] int8 with
 * x ~= d * (hi + lo / 256) per element.
 */
void wk__x16_quantize_ref(int64_t n, const float *x, float *d, int8_t *hi, int8_t *lo);
/* The reference vec_dot_rows_x16 for dtype t (Q4_0, Q4_1, Q5_0, Q5_1, I4G64, Q8_0, Q4_K, Q5_K, MXFP4,
 * IQ4_NL), or
 * NULL for other types. */
wk_vec_dot_rows_fn wk__vec_dot_rows_x16_ref(enum wk_dtype t);

#endif
