/*
 * dequant_avx512.c - AVX-512 dequantization (to_f32) of the quantized weight
 * types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K; block layouts in
 * src/tensor/wk_tensor.h.
 *
 * Results equal the reference (src/tensor/quant_ref.c) bit for bit: each
 * kernel unpacks the integer q exactly, converts it to float exactly, and
 * repeats the reference's float operations in its order, e.g. Q4_K's
 * (d*sc)*q - dmin*m with d*sc and dmin*m formed in scalar first. A multiply
 * that is followed by an add uses mul_round (explicit rounding mode), which
 * the compiler cannot fuse into an FMA even under -ffp-contract=fast; a
 * fused multiply-add would round once instead of twice and differ from the
 * reference in the last bit.
 *
 * Every kernel writes 16 floats per store: one 16-element half of a
 * 32-element block, or a 16-element run of a 256-element K block.
 */
#include "avx512.h"

#include <string.h>

#define F16(h) wk__avx512_f16(h)

static inline __m512 mul_round(__m512 a, __m512 b)
{
    return _mm512_mul_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* 16 unsigned bytes to 16 floats (exact). */
static inline __m512 u8_to_ps(__m128i v)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
}

/* The 16 low nibbles and the 16 high nibbles of 16 bytes. */
static inline __m128i lo_nibbles(__m128i v)
{
    return _mm_and_si128(v, _mm_set1_epi8(0x0F));
}
static inline __m128i hi_nibbles(__m128i v)
{
    return _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0F));
}

/* Adds 16 to each of the 16 bytes whose bit is set in the 16-bit mask: the
 * fifth bit of Q5_0/Q5_1. */
static inline __m128i add_bit4(__m128i v, uint32_t bits)
{
    return _mm_mask_add_epi8(v, (__mmask16)bits, v, _mm_set1_epi8(16));
}

/* ------------------------------------------------------ 32-element blocks */

static void q4_0_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q4_0 *b = src;
    const __m512 eight = _mm512_set1_ps(8.0f);
    for (int64_t i = 0; i < n / 32; i++) {
        __m512 d = _mm512_set1_ps(F16(b[i].d));
        __m128i q = _mm_loadu_si128((const __m128i *)b[i].qs);
        /* q - 8 is an exact small integer either way round */
        _mm512_storeu_ps(dst + i * 32,
                         _mm512_mul_ps(_mm512_sub_ps(u8_to_ps(lo_nibbles(q)), eight), d));
        _mm512_storeu_ps(dst + i * 32 + 16,
                         _mm512_mul_ps(_mm512_sub_ps(u8_to_ps(hi_nibbles(q)), eight), d));
    }
}

static void q4_1_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q4_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++) {
        __m512 d = _mm512_set1_ps(F16(b[i].d)), m = _mm512_set1_ps(F16(b[i].m));
        __m128i q = _mm_loadu_si128((const __m128i *)b[i].qs);
        _mm512_storeu_ps(dst + i * 32, _mm512_add_ps(mul_round(u8_to_ps(lo_nibbles(q)), d), m));
        _mm512_storeu_ps(dst + i * 32 + 16,
                         _mm512_add_ps(mul_round(u8_to_ps(hi_nibbles(q)), d), m));
    }
}

static void q5_0_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q5_0 *b = src;
    const __m512 sixteen = _mm512_set1_ps(16.0f);
    for (int64_t i = 0; i < n / 32; i++) {
        __m512 d = _mm512_set1_ps(F16(b[i].d));
        uint32_t qh;
        memcpy(&qh, b[i].qh, 4);
        __m128i q = _mm_loadu_si128((const __m128i *)b[i].qs);
        __m128i lo = add_bit4(lo_nibbles(q), qh & 0xFFFF), hi = add_bit4(hi_nibbles(q), qh >> 16);
        _mm512_storeu_ps(dst + i * 32, _mm512_mul_ps(_mm512_sub_ps(u8_to_ps(lo), sixteen), d));
        _mm512_storeu_ps(dst + i * 32 + 16, _mm512_mul_ps(_mm512_sub_ps(u8_to_ps(hi), sixteen), d));
    }
}

static void q5_1_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q5_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++) {
        __m512 d = _mm512_set1_ps(F16(b[i].d)), m = _mm512_set1_ps(F16(b[i].m));
        uint32_t qh;
        memcpy(&qh, b[i].qh, 4);
        __m128i q = _mm_loadu_si128((const __m128i *)b[i].qs);
        __m128i lo = add_bit4(lo_nibbles(q), qh & 0xFFFF), hi = add_bit4(hi_nibbles(q), qh >> 16);
        _mm512_storeu_ps(dst + i * 32, _mm512_add_ps(mul_round(u8_to_ps(lo), d), m));
        _mm512_storeu_ps(dst + i * 32 + 16, _mm512_add_ps(mul_round(u8_to_ps(hi), d), m));
    }
}

static void q8_0_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / 32; i++) {
        __m512 d = _mm512_set1_ps(F16(b[i].d));
        for (int h = 0; h < 2; h++) {
            __m128i q = _mm_loadu_si128((const __m128i *)(b[i].qs + 16 * h));
            __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q));
            _mm512_storeu_ps(dst + i * 32 + 16 * h, _mm512_mul_ps(v, d));
        }
    }
}

/* ------------------------------------------------------------- K-quants */

/* Unpacks the eight 6-bit scales (sc[0..7]) and mins (m[0..7]) of a Q4_K or
 * Q5_K block, four at a time in 32-bit words (wk_q4_k_scale_min does one):
 * sub-blocks 0-3 keep the low 6 bits of bytes 0-3 (scales) and 4-7 (mins);
 * sub-blocks 4-7 take their low 4 bits from the nibbles of bytes 8-11 and
 * their top 2 bits from the top 2 bits of bytes 0-3 / 4-7. */
static inline void k_scales_mins(const uint8_t *scales, uint8_t sc[8], uint8_t m[8])
{
    uint32_t u[3], out[4];
    memcpy(u, scales, 12);
    out[0] = u[0] & 0x3f3f3f3f;
    out[1] = (u[2] & 0x0f0f0f0f) | ((u[0] >> 2) & 0x30303030);
    out[2] = u[1] & 0x3f3f3f3f;
    out[3] = ((u[2] >> 4) & 0x0f0f0f0f) | ((u[1] >> 2) & 0x30303030);
    memcpy(sc, out, 8);
    memcpy(m, out + 2, 8);
}

/* 32 floats (d*sc)*q - dmin*m from 32 unsigned q bytes. */
static inline void store_k_sub(float *dst, __m256i q, float dsc, float dm)
{
    __m512 vd = _mm512_set1_ps(dsc), vm = _mm512_set1_ps(dm);
    __m512 lo = u8_to_ps(_mm256_castsi256_si128(q)), hi = u8_to_ps(_mm256_extracti128_si256(q, 1));
    _mm512_storeu_ps(dst, _mm512_sub_ps(mul_round(vd, lo), vm));
    _mm512_storeu_ps(dst + 16, _mm512_sub_ps(mul_round(vd, hi), vm));
}

static void q4_k_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q4_k *b = src;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float d = F16(b[i].d), dmin = F16(b[i].dmin);
        uint8_t sc[8], m[8];
        k_scales_mins(b[i].scales, sc, m);
        float *y = dst + i * WK_QK_K;
        for (int g = 0; g < 4; g++) { /* 64 elements: low nibbles, then high */
            __m256i q = _mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * g));
            store_k_sub(y + 64 * g, _mm256_and_si256(q, m4), d * sc[2 * g], dmin * m[2 * g]);
            store_k_sub(y + 64 * g + 32, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4),
                        d * sc[2 * g + 1], dmin * m[2 * g + 1]);
        }
    }
}

static void q5_k_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q5_k *b = src;
    const __m256i m4 = _mm256_set1_epi8(0x0F), c16 = _mm256_set1_epi8(16);
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float d = F16(b[i].d), dmin = F16(b[i].dmin);
        uint8_t sc[8], m[8];
        k_scales_mins(b[i].scales, sc, m);
        __m256i qh = _mm256_loadu_si256((const __m256i *)b[i].qh);
        float *y = dst + i * WK_QK_K;
        for (int g = 0; g < 4; g++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * g));
            /* the fifth bit of element r of sub-block 2g (2g+1) is bit 2g
             * (2g+1) of qh[r] */
            __mmask32 h0 = _mm256_test_epi8_mask(qh, _mm256_set1_epi8((char)(1 << (2 * g))));
            __mmask32 h1 = _mm256_test_epi8_mask(qh, _mm256_set1_epi8((char)(2 << (2 * g))));
            __m256i lo = _mm256_and_si256(q, m4),
                    hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            lo = _mm256_mask_add_epi8(lo, h0, lo, c16);
            hi = _mm256_mask_add_epi8(hi, h1, hi, c16);
            store_k_sub(y + 64 * g, lo, d * sc[2 * g], dmin * m[2 * g]);
            store_k_sub(y + 64 * g + 32, hi, d * sc[2 * g + 1], dmin * m[2 * g + 1]);
        }
    }
}

/* 16 floats (d*sc)*(q - 32) from 16 unsigned 6-bit q bytes. */
static inline void store_q6_run(float *dst, __m128i q, float dsc)
{
    __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(q), _mm512_set1_epi32(32)));
    _mm512_storeu_ps(dst, _mm512_mul_ps(_mm512_set1_ps(dsc), v));
}

static void q6_k_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q6_k *b = src;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float d = F16(b[i].d);
        float *y = dst + i * WK_QK_K;
        for (int h = 0; h < 2; h++) { /* 128-element halves */
            const uint8_t *ql = b[i].ql + 64 * h, *qhp = b[i].qh + 32 * h;
            __m256i qh = _mm256_loadu_si256((const __m256i *)qhp);
            __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            /* quarter j: nibbles of ql[0..31] or ql[32..63] (low for j < 2,
             * high otherwise), top bits from bits 2j, 2j+1 of qh */
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4),
                                   _mm256_and_si256(_mm256_slli_epi16(qh, 4), m2));
            q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                   _mm256_and_si256(_mm256_slli_epi16(qh, 2), m2));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                   _mm256_and_si256(qh, m2));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2));
            for (int j = 0; j < 4; j++) {
                int s = 8 * h + 2 * j; /* scale index of the first 16 of quarter j */
                store_q6_run(y + 128 * h + 32 * j, _mm256_castsi256_si128(q[j]),
                             d * b[i].scales[s]);
                store_q6_run(y + 128 * h + 32 * j + 16, _mm256_extracti128_si256(q[j], 1),
                             d * b[i].scales[s + 1]);
            }
        }
    }
}

void wk__avx512_fill_dequant(struct wk_cpu_kernels *k)
{
    k->to_f32[WK_DTYPE_Q4_0] = q4_0_to_f32;
    k->to_f32[WK_DTYPE_Q4_1] = q4_1_to_f32;
    k->to_f32[WK_DTYPE_Q5_0] = q5_0_to_f32;
    k->to_f32[WK_DTYPE_Q5_1] = q5_1_to_f32;
    k->to_f32[WK_DTYPE_Q8_0] = q8_0_to_f32;
    k->to_f32[WK_DTYPE_Q4_K] = q4_k_to_f32;
    k->to_f32[WK_DTYPE_Q5_K] = q5_k_to_f32;
    k->to_f32[WK_DTYPE_Q6_K] = q6_k_to_f32;
}
