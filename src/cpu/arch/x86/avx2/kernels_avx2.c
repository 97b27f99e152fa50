/*
 * kernels_avx2.c - AVX2 + FMA + F16C kernels. Compiled with -mavx2 -mfma
 * -mf16c only; reached through wk__cpu_fill_avx2 when the CPU has them.
 *
 * This file holds the table fill, the float kernels (dot products of
 * F32/F16/BF16 weights with f32 activations, the attention helpers
 * dot_f32 and axpy_f32), the activation quantizers (Q8_0, Q8_1, Q8_K) and
 * the dequantizers. The quantized types' dot products are elsewhere: with
 * f32 activations (vec_dot) in fdot_avx2.c, with quantized activations
 * (vec_dot_q) in quant_dot_avx2.c; the decode matvec over many rows
 * (vec_dot_rows) in rows_avx2.c, the same with x rounded to 16 bits
 * (vec_dot_rows_x16) in rows_x16_avx2.c, the f32 GEMM (gemm_f32) in
 * gemm_avx2.c.
 * Block layouts: src/tensor/wk_tensor.h.
 *
 * Exactness: the quantizers write the same bytes as the wk_ref_* versions
 * (same scale formula, products rounded by vcvtps2dq in the default
 * round-to-nearest-even mode as lrintf does, f16 stored by vcvtps2ph with
 * round to nearest even), and the dequantizers compute the same float
 * expression in the same order, one rounding per operation. That relies on
 * no contraction of a separate multiply and add into an FMA, which holds
 * under the -std=c11 build (GCC then defaults to -ffp-contract=off).
 */
#include "kernels_avx2.h"

#include <float.h>
#include <math.h>

/* ---------------------------------------------------------- float kernels */


static float dot_f32(int64_t n, const float *a, const float *b)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    if (i < n) {
        __m256i m = avx2_lanes(n - i);
        s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), s1);
    }
    return avx2_hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

static void axpy_f32(int64_t n, float a, const float *x, float *y)
{
    __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 y0 = _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i));
        __m256 y1 = _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8));
        _mm256_storeu_ps(y + i, y0);
        _mm256_storeu_ps(y + i + 8, y1);
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i,
                         _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    if (i < n) {
        __m256i m = avx2_lanes(n - i);
        __m256 v = _mm256_fmadd_ps(va, _mm256_maskload_ps(x + i, m), _mm256_maskload_ps(y + i, m));
        _mm256_maskstore_ps(y + i, m, v);
    }
}

static float vec_dot_f32(int64_t n, const void *w, const void *x)
{
    return dot_f32(n, w, x);
}

/* 8 f16 or bf16 values widened to f32 (both exact). */
static inline __m256 load8_f16(const wk_f16 *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline __m256 load8_bf16(const wk_bf16 *p)
{
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

static float vec_dot_f16(int64_t n, const void *w, const void *x)
{
    const wk_f16 *a = w;
    const float *b = x;
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(load8_f16(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(load8_f16(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(load8_f16(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(load8_f16(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(load8_f16(a + i), _mm256_loadu_ps(b + i), s0);
    float s = avx2_hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < n; i++)
        s += avx2_f16(a[i]) * b[i];
    return s;
}

static float vec_dot_bf16(int64_t n, const void *w, const void *x)
{
    const wk_bf16 *a = w;
    const float *b = x;
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(load8_bf16(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(load8_bf16(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(load8_bf16(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(load8_bf16(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(load8_bf16(a + i), _mm256_loadu_ps(b + i), s0);
    float s = avx2_hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < n; i++)
        s += wk_bf16_to_f32(a[i]) * b[i];
    return s;
}

/* -------------------------------------------------- activation quantizers */

static inline __m256 abs_ps(__m256 v)
{
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}


static inline wk_f16 f32_to_f16(float f)
{
    return (wk_f16)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

/*
 * The multiplier broadcast, or 0 when it is infinite. That happens when
 * 1/d overflows (max |x| below about 3.7e-37): every product is then ±inf
 * or NaN, which the reference's lrintf maps to LONG_MIN and its int8 cast
 * to 0 on x86-64, where vcvtps2dq would give INT_MIN and the packs -128.
 * Multiplying by 0 yields the reference's zeros.
 */
static inline __m256 finite_or_zero(float mul)
{
    return _mm256_set1_ps(fabsf(mul) <= FLT_MAX ? mul : 0.0f);
}

/* max |x| over 32 floats. */
static inline float amax_32(const float *x)
{
    __m256 m0 = _mm256_max_ps(abs_ps(_mm256_loadu_ps(x)), abs_ps(_mm256_loadu_ps(x + 8)));
    __m256 m1 = _mm256_max_ps(abs_ps(_mm256_loadu_ps(x + 16)), abs_ps(_mm256_loadu_ps(x + 24)));
    return avx2_hmax_ps(_mm256_max_ps(m0, m1));
}

/*
 * q = rne(x * mul) for 32 floats, stored as int8 in element order. The
 * products are within [-127.5, 127.5] for every caller, so the saturating
 * packs never clip (and stand in for Q8_K's min(127, q)). vpackss works per
 * 128-bit lane, leaving 4-byte groups in the order 0 2 4 6 1 3 5 7; the
 * final permute puts them back. Returns the sums of q over elements 0-15
 * and 16-31, each spread over 8 int32 lanes.
 */
static inline void quantize_32(const float *x, __m256 mul, int8_t *q, __m256i *sum_lo,
                               __m256i *sum_hi)
{
    __m256i v0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), mul));
    __m256i v1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), mul));
    __m256i v2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), mul));
    __m256i v3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), mul));
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v0, v1), _mm256_packs_epi32(v2, v3));
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)q, p);
    *sum_lo = _mm256_add_epi32(v0, v1);
    *sum_hi = _mm256_add_epi32(v2, v3);
}

static void quantize_q8_0(const float *src, void *dst, int64_t n)
{
    struct wk_block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / WK_QK8_0; i++) {
        const float *x = src + i * WK_QK8_0;
        float d = amax_32(x) / 127.0f;
        float id = d != 0 ? 1.0f / d : 0.0f;
        __m256i s_lo, s_hi;
        quantize_32(x, finite_or_zero(id), b[i].qs, &s_lo, &s_hi);
        b[i].d = f32_to_f16(d);
    }
}

static void quantize_q8_1(const float *src, void *dst, int64_t n)
{
    struct wk_block_q8_1 *b = dst;
    for (int64_t i = 0; i < n / WK_QK8_0; i++) {
        const float *x = src + i * WK_QK8_0;
        float d = amax_32(x) / 127.0f;
        float id = d != 0 ? 1.0f / d : 0.0f;
        __m256i s_lo, s_hi;
        quantize_32(x, finite_or_zero(id), b[i].qs, &s_lo, &s_hi);
        int32_t sum = avx2_hsum_epi32(_mm256_add_epi32(s_lo, s_hi));
        b[i].d = f32_to_f16(d);
        b[i].s = f32_to_f16(d * (float)sum);
    }
}

/* The 4 int32 totals of s[0..3] (8 lanes each): two rounds of vphaddd sum
 * within each 128-bit lane, then the two lanes are added. */
static inline __m128i hsum4_epi32(const __m256i *s)
{
    __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* Q8_K: the scale comes from the signed value of largest magnitude (the
 * first one on ties), so that element maps to exactly -127. */
static void quantize_q8_k(const float *src, void *dst, int64_t n)
{
    struct wk_block_q8_k *b = dst;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const float *x = src + i * WK_QK_K;
        __m256 m = _mm256_setzero_ps();
        for (int j = 0; j < WK_QK_K; j += 8)
            m = _mm256_max_ps(m, abs_ps(_mm256_loadu_ps(x + j)));
        float amax = avx2_hmax_ps(m);
        if (amax == 0) {
            memset(&b[i], 0, sizeof b[i]);
            continue;
        }
        float max = 0;
        for (int j = 0; j < WK_QK_K; j += 8) {
            __m256 eq =
                _mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + j)), _mm256_set1_ps(amax), _CMP_EQ_OQ);
            int bits = _mm256_movemask_ps(eq);
            if (bits) {
                max = x[j + __builtin_ctz((unsigned)bits)];
                break;
            }
        }
        float iscale = -127.0f / max;
        __m256i s[16];
        for (int c = 0; c < WK_QK_K / 32; c++)
            quantize_32(x + 32 * c, finite_or_zero(iscale), b[i].qs + 32 * c, &s[2 * c],
                        &s[2 * c + 1]);
        __m128i t0 = hsum4_epi32(s), t1 = hsum4_epi32(s + 4);
        __m128i t2 = hsum4_epi32(s + 8), t3 = hsum4_epi32(s + 12);
        _mm_storeu_si128((__m128i *)b[i].bsums, _mm_packs_epi32(t0, t1));
        _mm_storeu_si128((__m128i *)(b[i].bsums + 8), _mm_packs_epi32(t2, t3));
        b[i].d = 1.0f / iscale;
    }
}

/* ---------------------------------------------------------- dequantizers */

static void f16_to_f32(const void *src, float *dst, int64_t n)
{
    const wk_f16 *s = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, load8_f16(s + i));
    for (; i < n; i++)
        dst[i] = avx2_f16(s[i]);
}

/* f32 to f16, rounded to nearest even (vcvtps2ph): the reference's
 * wk_f32_to_f16 bit for bit, NaNs aside (each stays a NaN); the tail
 * through a zero-padded vector. */
static void f32_to_f16_rows(const float *src, void *dst, int64_t n)
{
    wk_f16 *d = dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    if (i < n) {
        float t[8] = {0};
        wk_f16 h[8];
        memcpy(t, src + i, (size_t)(n - i) * sizeof(float));
        _mm_storeu_si128((__m128i *)h, _mm256_cvtps_ph(_mm256_loadu_ps(t), _MM_FROUND_TO_NEAREST_INT));
        memcpy(d + i, h, (size_t)(n - i) * sizeof(wk_f16));
    }
}

static void bf16_to_f32(const void *src, float *dst, int64_t n)
{
    const wk_bf16 *s = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, load8_bf16(s + i));
    for (; i < n; i++)
        dst[i] = wk_bf16_to_f32(s[i]);
}

/* 8 int8 (the low 8 bytes of q) as floats. */
static inline __m256 i8x8_ps(__m128i q)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
}

/* dst[0..16) = q * d for the 16 int8 of q. */
static inline void store16_mul(__m128i q, __m256 d, float *dst)
{
    _mm256_storeu_ps(dst, _mm256_mul_ps(i8x8_ps(q), d));
    _mm256_storeu_ps(dst + 8, _mm256_mul_ps(i8x8_ps(_mm_unpackhi_epi64(q, q)), d));
}

/* dst[0..16) = q * d + m (two roundings, as the reference). */
static inline void store16_mul_add(__m128i q, __m256 d, __m256 m, float *dst)
{
    _mm256_storeu_ps(dst, _mm256_add_ps(_mm256_mul_ps(i8x8_ps(q), d), m));
    _mm256_storeu_ps(dst + 8,
                     _mm256_add_ps(_mm256_mul_ps(i8x8_ps(_mm_unpackhi_epi64(q, q)), d), m));
}

static inline void store32_mul(__m256i q, float d, float *dst)
{
    __m256 vd = _mm256_set1_ps(d);
    store16_mul(_mm256_castsi256_si128(q), vd, dst);
    store16_mul(_mm256_extracti128_si256(q, 1), vd, dst + 16);
}

static inline void store32_mul_add(__m256i q, float d, float m, float *dst)
{
    __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
    store16_mul_add(_mm256_castsi256_si128(q), vd, vm, dst);
    store16_mul_add(_mm256_extracti128_si256(q, 1), vd, vm, dst + 16);
}

static void q8_0_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / WK_QK8_0; i++)
        store32_mul(_mm256_loadu_si256((const __m256i *)b[i].qs), avx2_f16(b[i].d), dst + i * 32);
}

static void q4_0_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q4_0 *b = src;
    for (int64_t i = 0; i < n / WK_QK4_0; i++) {
        __m256i q = _mm256_sub_epi8(avx2_nibbles_32(b[i].qs), _mm256_set1_epi8(8));
        store32_mul(q, avx2_f16(b[i].d), dst + i * 32);
    }
}

static void q4_1_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q4_1 *b = src;
    for (int64_t i = 0; i < n / WK_QK4_0; i++)
        store32_mul_add(avx2_nibbles_32(b[i].qs), avx2_f16(b[i].d), avx2_f16(b[i].m), dst + i * 32);
}

/* q - 16 as int8: nibble | 0xF0 when the fifth bit is clear (see the Q5_0
 * dot product). */
static void q5_0_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q5_0 *b = src;
    for (int64_t i = 0; i < n / WK_QK4_0; i++) {
        __m256i hi = _mm256_andnot_si256(avx2_bits_to_bytes(b[i].qh), _mm256_set1_epi8((char)0xF0));
        store32_mul(_mm256_or_si256(avx2_nibbles_32(b[i].qs), hi), avx2_f16(b[i].d), dst + i * 32);
    }
}

static void q5_1_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q5_1 *b = src;
    for (int64_t i = 0; i < n / WK_QK4_0; i++) {
        __m256i hi = _mm256_and_si256(avx2_bits_to_bytes(b[i].qh), _mm256_set1_epi8(0x10));
        __m256i q = _mm256_or_si256(avx2_nibbles_32(b[i].qs), hi);
        store32_mul_add(q, avx2_f16(b[i].d), avx2_f16(b[i].m), dst + i * 32);
    }
}

/* Q4_K and Q5_K: x = (d*sc_j) * q - dmin*m_j, the reference's order. hb
 * is qh (Q5_K) or NULL (Q4_K). */
static void k4_to_f32(wk_f16 d16, wk_f16 dmin16, const uint8_t *scales, const uint8_t *qs,
                      const uint8_t *qh, float *dst)
{
    uint8_t sm[16]; /* scales 0-7, mins 8-15 */
    _mm_storeu_si128((__m128i *)sm, avx2_q4_k_scales(scales));
    float d = avx2_f16(d16), dmin = avx2_f16(dmin16);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i hb = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    for (int g = 0; g < 4; g++) {
        __m256i qv = _mm256_loadu_si256((const __m256i *)(qs + 32 * g));
        __m256i lo = _mm256_and_si256(qv, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qv, 4), m4);
        /* fifth bits 2g, 2g+1 sit at bits 0, 1 of hb; move them to bit 4 */
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(1)), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(2)), 3));
        hb = _mm256_srli_epi16(hb, 2);
        int j = 2 * g;
        store32_mul_add(lo, d * sm[j], -(dmin * sm[8 + j]), dst + 64 * g);
        store32_mul_add(hi, d * sm[j + 1], -(dmin * sm[9 + j]), dst + 64 * g + 32);
    }
}

static void q4_k_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q4_k *b = src;
    for (int64_t i = 0; i < n / WK_QK_K; i++)
        k4_to_f32(b[i].d, b[i].dmin, b[i].scales, b[i].qs, NULL, dst + i * WK_QK_K);
}

static void q5_k_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q5_k *b = src;
    for (int64_t i = 0; i < n / WK_QK_K; i++)
        k4_to_f32(b[i].d, b[i].dmin, b[i].scales, b[i].qs, b[i].qh, dst + i * WK_QK_K);
}

/* Q6_K: x = (d*sc) * (q - 32); quarters as in the Q6_K dot product, each
 * 128-bit lane of a quarter one 16-element sub-block. */
static void q6_k_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q6_k *b = src;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3), k32 = _mm256_set1_epi8(32);
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float d = avx2_f16(b[i].d);
        for (int h = 0; h < 2; h++) {
            __m256i l0 = _mm256_loadu_si256((const __m256i *)(b[i].ql + 64 * h));
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(b[i].ql + 64 * h + 32));
            __m256i hh = _mm256_loadu_si256((const __m256i *)(b[i].qh + 32 * h));
            __m256i q[4];
            q[0] = _mm256_and_si256(l0, m4);
            q[1] = _mm256_and_si256(l1, m4);
            q[2] = _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4);
            q[3] = _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4);
            for (int r = 0; r < 4; r++) {
                __m256i hi = _mm256_slli_epi16(_mm256_and_si256(hh, m3), 4);
                hh = _mm256_srli_epi16(hh, 2);
                __m256i v = _mm256_sub_epi8(_mm256_or_si256(q[r], hi), k32);
                int sb = 8 * h + 2 * r;
                float *out = dst + i * WK_QK_K + 16 * sb;
                store16_mul(_mm256_castsi256_si128(v), _mm256_set1_ps(d * b[i].scales[sb]), out);
                store16_mul(_mm256_extracti128_si256(v, 1), _mm256_set1_ps(d * b[i].scales[sb + 1]),
                            out + 16);
            }
        }
    }
}

/* --------------------------------------------------------------- the table */

void wk__cpu_fill_avx2(struct wk_cpu_kernels *k)
{
    k->vec_dot[WK_DTYPE_F32] = vec_dot_f32;
    k->vec_dot[WK_DTYPE_F16] = vec_dot_f16;
    k->vec_dot[WK_DTYPE_BF16] = vec_dot_bf16;
    wk__avx2_fill_fdot(k); /* quantized types, f32 x */
    wk__avx2_fill_rows(k); /* every type, a whole range of rows per call */
    wk__avx2_fill_rows_x16(k); /* Q4_0, Q4_1, Q5_0, Q5_1 with x in 16 bits */
    wk__avx2_fill_r16(k);      /* the R16 dtypes: decode and the integer GEMM */
    wk__avx2_fill_ops(k);      /* RMSNorm, GLU activations, softmax */
    wk__avx2_fill_affine(k);   /* I8G64, I4G64 */
    wk__avx2_fill_q14(k);      /* Q14 products (wk_cpu.h) */
    wk__avx2_fill_lowbit(k);   /* Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4 (../lowbit_template.h) */
    k->vec_dot_q[WK_DTYPE_Q8_0] = wk__avx2_dot_q8_0;
    k->vec_dot_q[WK_DTYPE_Q4_0] = wk__avx2_dot_q4_0;
    k->vec_dot_q[WK_DTYPE_Q4_1] = wk__avx2_dot_q4_1;
    k->vec_dot_q[WK_DTYPE_Q5_0] = wk__avx2_dot_q5_0;
    k->vec_dot_q[WK_DTYPE_Q5_1] = wk__avx2_dot_q5_1;
    k->vec_dot_q[WK_DTYPE_Q4_K] = wk__avx2_dot_q4_k;
    k->vec_dot_q[WK_DTYPE_Q5_K] = wk__avx2_dot_q5_k;
    k->vec_dot_q[WK_DTYPE_Q6_K] = wk__avx2_dot_q6_k;

    k->quantize[WK_DTYPE_Q8_0] = quantize_q8_0;
    k->quantize[WK_DTYPE_Q8_1] = quantize_q8_1;
    k->quantize[WK_DTYPE_Q8_K] = quantize_q8_k;

    k->to_f32[WK_DTYPE_F16] = f16_to_f32;
    k->quantize[WK_DTYPE_F16] = f32_to_f16_rows;
    k->to_f32[WK_DTYPE_BF16] = bf16_to_f32;
    k->to_f32[WK_DTYPE_Q8_0] = q8_0_to_f32;
    k->to_f32[WK_DTYPE_Q4_0] = q4_0_to_f32;
    k->to_f32[WK_DTYPE_Q4_1] = q4_1_to_f32;
    k->to_f32[WK_DTYPE_Q5_0] = q5_0_to_f32;
    k->to_f32[WK_DTYPE_Q5_1] = q5_1_to_f32;
    k->to_f32[WK_DTYPE_Q4_K] = q4_k_to_f32;
    k->to_f32[WK_DTYPE_Q5_K] = q5_k_to_f32;
    k->to_f32[WK_DTYPE_Q6_K] = q6_k_to_f32;

    k->dot_f32 = dot_f32;
    k->axpy_f32 = axpy_f32;
    k->gemm_f32 = wk__avx2_gemm_f32;
    k->gemm_f32_packed = wk__avx2_gemm_f32_packed;
    k->gemm_f32_packed_min_n = WK__AVX2_GEMM_DOT_MAX_N; /* wk__avx2_gemm_f32: gemm_dot below */
    k->gemm_rows = wk__avx2_gemm_rows;
    k->gemm_f32_pack_floats = wk__avx2_gemm_f32_pack_floats;
    k->gemm_f32_pack = wk__avx2_gemm_f32_pack;
    k->gemm_f32_prepacked = wk__avx2_gemm_f32_prepacked;
}
