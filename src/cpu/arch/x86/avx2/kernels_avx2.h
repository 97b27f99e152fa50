/*
 * kernels_avx2.h - internal to src/cpu/arch/x86/avx2: the integer dot
 * products of quant_dot_avx2.c, the f32-activation ones of fdot_avx2.c,
 * the decode kernels of rows_avx2.c and rows_x16_avx2.c and the GEMM of
 * gemm_avx2.c, handed to the table by kernels_avx2.c, and the small
 * vector helpers the files share. Only files compiled with -mavx2 -mfma -mf16c may include it.
 */
#ifndef WK_KERNELS_AVX2_H
#define WK_KERNELS_AVX2_H

#include "../../../wk_cpu_arch.h"

#include <immintrin.h>
#include <string.h>

/*
 * Q6_K, one half of a block (128 weights): from its 64 bytes of low
 * nibbles (l0, l1) and 32 bytes of high bit pairs (hh) the four quarters
 * q[r] of 32 unsigned 6-bit values (0..63): low nibbles of l0 / l1 for
 * r = 0 / 1, high nibbles for 2 / 3, with bits 2r, 2r+1 of hh on top.
 */
static inline void wk__avx2_q6k_quarters(__m256i l0, __m256i l1, __m256i hh, __m256i q[4])
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(hh, 4), m30));
    q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(hh, 2), m30));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hh, m30));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                           _mm256_and_si256(_mm256_srli_epi16(hh, 2), m30));
}

/* Weight row · activation row, n elements (a multiple of the block size);
 * same contract and arithmetic as the wk_ref_vec_dot_<type>_<act> (vec_dot_q) they replace. */
float wk__avx2_dot_q8_0(int64_t n, const void *w, const void *x);
float wk__avx2_dot_q4_0(int64_t n, const void *w, const void *x);
float wk__avx2_dot_q4_1(int64_t n, const void *w, const void *x);
float wk__avx2_dot_q5_0(int64_t n, const void *w, const void *x);
float wk__avx2_dot_q5_1(int64_t n, const void *w, const void *x);
float wk__avx2_dot_q4_k(int64_t n, const void *w, const void *x);
float wk__avx2_dot_q5_k(int64_t n, const void *w, const void *x);
float wk__avx2_dot_q6_k(int64_t n, const void *w, const void *x);

/* Installs the dot products of the quantized types with f32 activations
 * (vec_dot) from fdot_avx2.c. */
void wk__avx2_fill_fdot(struct wk_cpu_kernels *k);

/* Installs the decode kernels (vec_dot_rows, every weight type) of
 * rows_avx2.c. */
void wk__avx2_fill_rows(struct wk_cpu_kernels *k);

/* Installs the decode kernels with 16-bit activations (vec_dot_rows_x16:
 * Q4_0, Q4_1, Q5_0, Q5_1) of rows_x16_avx2.c. */
void wk__avx2_fill_rows_x16(struct wk_cpu_kernels *k);

/* x [n] (n a multiple of 32, at most 9216) quantized to 16 bits for the
 * Q4_K kernels into scratch [n / 32 * 18 floats, 32-byte aligned]: per
 * 32-element block the int16 values 256 hi + lo of its 16 even elements
 * then its 16 odd ones (64 bytes), then d / 256 [n / 32], then (d / 256)
 * sum(256 hi + lo) [n / 32] (wk__x16_quantize_ref's hi, lo and d;
 * rows_x16_avx2.c); unless half_sums is NULL, also sum(256 hi + lo) over
 * elements 0-15 and 16-31 of block b in half_sums[2b], [2b + 1]. */
void wk__avx2_x16k_prep(int64_t n, const float *x, float *scratch, int32_t *half_sums);

/* Installs r16_prepare and the entries of every R16 dtype
 * (vec_dot_rows_x16 and _tokens, vec_dot_rows_r16 and _tokens, gemm_r16)
 * of r16_avx2.c. */
void wk__avx2_fill_r16(struct wk_cpu_kernels *k);

/* Installs vec_dot, vec_dot_rows and to_f32 of Q2_K, Q3_K, IQ4_NL, IQ4_XS
 * and MXFP4 (lowbit_avx2.c, the AVX2 build of ../lowbit_template.h). */
void wk__avx2_fill_lowbit(struct wk_cpu_kernels *k);

/* Installs RMSNorm, GEGLU, SwiGLU and softmax built with AVX2 (ops_avx2.c). */
void wk__avx2_fill_ops(struct wk_cpu_kernels *k);
/* The affine groups I8G64, I4G64: dot with f32 x, to f32 (affine_avx2.c). */
void wk__avx2_fill_affine(struct wk_cpu_kernels *k);
/* q14_avx2.c: q14_quantize and gemm_q14 (an embedding model's products) */
void wk__avx2_fill_q14(struct wk_cpu_kernels *k);

/* The f32 GEMM (gemm_avx2.c); contract of wk_gemm_f32_fn. */
void wk__avx2_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float *c, int64_t ldc);
/* wk__avx2_gemm_f32 takes its packed path from this many rows of b on
 * (dot products below: gemm_avx2.c). */
#define WK__AVX2_GEMM_DOT_MAX_N 16
/* Its dot-product path (n < WK__AVX2_GEMM_DOT_MAX_N) over rows of a that
 * are F16, Q8_0 codes or in blocks: gemm_rows' contract (wk_cpu.h). */
void wk__avx2_gemm_rows(int64_t m, int64_t n, int64_t k, const void *a, const struct wk_cpu_rows *r, const float *b,
                        int64_t ldb, float *c, int64_t ldc);
/* The packed path of wk__avx2_gemm_f32 for any n (gemm_f32_packed). */
void wk__avx2_gemm_f32_packed(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                              int64_t ldb, float *c, int64_t ldc);

/* Weights packed once for it (gemm_f32_pack_floats, gemm_f32_pack,
 * gemm_f32_prepacked of the table). */
size_t wk__avx2_gemm_f32_pack_floats(int64_t m, int64_t k);
void wk__avx2_gemm_f32_pack(int64_t m, int64_t k, const float *a, int64_t lda, float *dst);
void wk__avx2_gemm_f32_prepacked(int64_t m, int64_t n, int64_t k, const float *pa, const float *b, int64_t ldb,
                                 float *c, int64_t ldc);

/* One f16 to f32, exact (F16C). */
static inline float avx2_f16(wk_f16 h)
{
    return _cvtsh_ss(h);
}

/* The largest of the 8 floats of v (NaNs as _mm_max_ps takes them). */
static inline float avx2_hmax_ps(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* Lanes [0, r) set (0 <= r <= 8), for masked loads and stores of a tail. */
static inline __m256i avx2_lanes(int64_t r)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Sum of the 8 floats of v. */
static inline float avx2_hsum_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Sum of the 8 int32 of v. */
static inline int32_t avx2_hsum_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* The 16 bytes of a 32-element Q4/Q5 block as 32 nibbles in element order:
 * low nibbles (elements 0-15) in the low lane, high nibbles (16-31) in the
 * high lane. Broadcasting the bytes to both lanes is a plain load; a
 * per-lane variable shift then brings the high nibbles down. */
static inline __m256i avx2_nibbles_32(const uint8_t *qs)
{
    __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    v = _mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}

/* Byte j of the result is 0xFF when bit j of bits is set, else 0: each byte
 * gets a copy of the qh byte holding its bit, then tests its own bit. */
static inline __m256i avx2_bits_to_bytes(const uint8_t *qh)
{
    uint32_t bits;
    memcpy(&bits, qh, 4);
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, /**/
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), spread);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* Unpacks the 12 scale bytes of a Q4_K/Q5_K block (layout as in
 * wk_q4_k_scale_min) into the 8 6-bit scales (bytes 0-7 of the result) and
 * the 8 6-bit mins (bytes 8-15). s12 is a block's scales member: 16 bytes
 * are read, the last four the block's next member (qs or qh). Sub-blocks
 * 0-3 are the low 6 bits of bytes 0-3 (scales) and 4-7 (mins); 4-7 take
 * their low 4 bits from the nibbles of bytes 8-11 and their top 2 bits
 * from bits 6-7 of bytes 0-3 and 4-7. In the vector unit (two shuffles,
 * shifts, ands and ors): ~4% faster Q4_K decode than the scalar
 * unpacking and its four-lane insert. */
static inline __m128i avx2_q4_k_scales(const uint8_t *s12)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)s12);
    /* [bytes 0-3 | 8-11 | 4-7 | 8-11] and the top-bit sources [- | 0-3 | - | 4-7] */
    const __m128i a = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m128i b = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    const __m128i low = _mm_or_si128(
        _mm_and_si128(a, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0)),
        _mm_and_si128(_mm_srli_epi16(a, 4), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15)));
    return _mm_or_si128(low, _mm_and_si128(_mm_srli_epi16(b, 2), _mm_setr_epi8(0, 0, 0, 0, 48, 48, 48, 48, 0, 0, 0,
                                                                                   0, 48, 48, 48, 48)));
}

/*
 * The f16 at p, p + stride, ... of cnt (1-4) blocks as floats, zeros past
 * cnt: gathered in a general register, then one vcvtph2ps for the four.
 * Broadcasting each f16 (vpbroadcastw + vcvtph2ps) costs about 1.3 cycles
 * of the FP pipes on Zen 4, as much as the arithmetic on 8 weights. The
 * empty asm keeps the word in a general register: GCC would otherwise
 * build it with vector shuffles, which compete with the arithmetic.
 */
static inline __m128 avx2_f16x4(const uint8_t *p, size_t stride, int cnt)
{
    uint64_t u = 0;
#pragma GCC unroll 4
    for (int k = 0; k < cnt; k++) {
        uint16_t h;
        memcpy(&h, p + k * stride, 2);
        u |= (uint64_t)h << (16 * k);
    }
    __asm__("" : "+r"(u));
    return _mm_cvtph_ps(_mm_cvtsi64_si128((long long)u));
}

#endif /* WK_KERNELS_AVX2_H */
