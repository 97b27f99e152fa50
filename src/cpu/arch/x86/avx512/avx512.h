/*
 * avx512.h - internal to src/cpu/arch/x86/avx512: the entry points of the
 * files in this folder and the few inline helpers they share.
 *
 * Every file here is compiled with -mavx512f/bw/vl/dq (plus AVX2, FMA,
 * F16C); files named *_vnni.c also get -mavx512vnni, and their code may run
 * only when wk_cpu_features_get()->avx512_vnni is true, which
 * wk__cpu_fill_avx512 checks before calling wk__avx512_fill_dot_vnni.
 * Helpers here are static inline so each file gets its own copy, built with
 * its own flags: a shared out-of-line copy could carry VNNI instructions
 * into the non-VNNI path.
 */
#ifndef WK_AVX512_H
#define WK_AVX512_H

#include "../../../wk_cpu_arch.h"

#include <immintrin.h>

/* Each fill function overwrites the table entries its file implements. */
void wk__avx512_fill_float(struct wk_cpu_kernels *k);    /* float_avx512.c */
void wk__avx512_fill_quantize(struct wk_cpu_kernels *k); /* quantize_avx512.c */
void wk__avx512_fill_dequant(struct wk_cpu_kernels *k);  /* dequant_avx512.c */
void wk__avx512_fill_dot_f32(struct wk_cpu_kernels *k);  /* dot_f32_avx512.c (vec_dot) */
void wk__avx512_fill_dot(struct wk_cpu_kernels *k);      /* dot_avx512.c (vec_dot_q, BW only) */
void wk__avx512_fill_dot_vnni(struct wk_cpu_kernels *k); /* dot_avx512_vnni.c (vec_dot_q) */
void wk__avx512_fill_gemm(struct wk_cpu_kernels *k);     /* gemm_avx512.c (gemm_f32) */
void wk__avx512_fill_dot_rows(struct wk_cpu_kernels *k); /* dot_rows_avx512.c (vec_dot_rows) */
void wk__avx512_fill_dot_rows_k(struct wk_cpu_kernels *k); /* dot_rows_k_avx512.c (vec_dot_rows) */
void wk__avx512_fill_rows_x16(struct wk_cpu_kernels *k);      /* rows_x16_avx512.c */
void wk__avx512_fill_ops(struct wk_cpu_kernels *k);           /* ops_avx512.c */
/* vec_dot, vec_dot_rows, to_f32 of Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4 */
void wk__avx512_fill_lowbit(struct wk_cpu_kernels *k);        /* lowbit_avx512.c */
void wk__avx512_fill_rows_x16_vnni(struct wk_cpu_kernels *k); /* rows_x16_avx512_vnni.c */
void wk__avx512_fill_q14_vnni(struct wk_cpu_kernels *k);      /* q14_avx512_vnni.c (q14_quantize, gemm_q14) */

/* IEEE half to float, exact (F16C). */
static inline float wk__avx512_f16(wk_f16 h)
{
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

/* Mask of the first r lanes, 0 <= r <= 16. */
static inline __mmask16 wk__avx512_mask16(int64_t r)
{
    return (__mmask16)((1u << r) - 1);
}

/* Sum of the 8 lanes of v. */
static inline float wk__avx512_hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* The sums of the 16 lanes of a, b, c and d, as lanes 0-3 of one vector.
 * Each lane goes through the same tree of additions (halves, then
 * quarters, then pairs), whichever vector it came from. */
static inline __m128 wk__avx512_hsum4(__m512 a, __m512 b, __m512 c, __m512 d)
{
    __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
    /* 128-bit lane q of s: 4 partial sums of a, b, c, d for q = 0..3 */
    __m512 s = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
    __m128 s0 = _mm512_castps512_ps128(s), s1 = _mm512_extractf32x4_ps(s, 1);
    __m128 s2 = _mm512_extractf32x4_ps(s, 2), s3 = _mm512_extractf32x4_ps(s, 3);
    return _mm_hadd_ps(_mm_hadd_ps(s0, s1), _mm_hadd_ps(s2, s3));
}

/* The 6-bit scales and mins of a Q4_K/Q5_K block (see wk_q4_k_scale_min)
 * as bytes sc0..sc7, m0..m7 of one vector, computed four at a time in
 * 32-bit lanes from the words u0, u1, u2 of scales[12]:
 *   sc0-3 = u0 & 0x3f                 m0-3 = u1 & 0x3f
 *   sc4-7 = u2 & 0x0f | (u0 >> 2) & 0x30   m4-7 = (u2 >> 4) & 0x0f | (u1 >> 2) & 0x30
 * The 16-byte load reads 4 bytes of qs past scales, inside the block. */
static inline __m128i wk__avx512_k_scales_mins(const uint8_t *scales)
{
    __m128i u = _mm_loadu_si128((const __m128i *)scales);
    __m128i lo = _mm_shuffle_epi32(u, _MM_SHUFFLE(2, 1, 2, 0)); /* u0 u2 u1 u2 */
    __m128i hi = _mm_shuffle_epi32(u, _MM_SHUFFLE(1, 1, 0, 0)); /* u0 u0 u1 u1 */
    lo = _mm_srlv_epi32(lo, _mm_set_epi32(4, 0, 0, 0));
    hi = _mm_srli_epi32(hi, 2);
    /* 0xE4: per bit, lo where the mask is 1, hi where it is 0; the final
     * and keeps 6 bits, which drops hi's stray top bits in lanes 0 and 2 */
    const __m128i keep = _mm_set_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f);
    return _mm_and_si128(_mm_ternarylogic_epi32(lo, hi, keep, 0xE4), _mm_set1_epi8(0x3f));
}

#endif /* WK_AVX512_H */
