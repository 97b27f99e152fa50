/*
 * dot_f32_avx512.c - AVX-512 dots of a quantized weight row with an f32
 * activation row (the vec_dot entries: the exact path the forward pass
 * uses) for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K.
 *
 * Spec: wk_ref_vec_dot_<type>_f32 in src/tensor/quant_ref.c, which
 * dequantizes each block as to_f32 does and sums w * x in element order.
 * Here the integer q are widened to 32-bit lanes 16 at a time
 * (vpmovzxbd/vpmovsxbd), converted to float exactly and multiplied into
 * float accumulators with FMA. The result differs from the reference only
 * by float rounding, because the scales are factored out of the sums:
 *   - 32-element blocks: d * sum(q * x), plus m * sum(x) for Q4_1/Q5_1;
 *   - Q4_K/Q5_K: (d*sc) * sum(q * x) - (dmin*m) * sum(x) per sub-block;
 *   - sums run in 16 lanes and several accumulators, not left to right.
 * Factoring saves one multiply per weight, and on these kernels the FMA
 * ports are the bottleneck. Q6_K, whose sub-blocks are one register wide,
 * forms to_f32's exact weights (d*sc) * (q - 32) instead.
 * n is a multiple of the block size (the caller checks rows at load).
 */
#include "avx512.h"

#include <string.h>

/* The f16 at p, as 16 equal floats. */
static inline __m512 bcast_f16(const wk_f16 *p)
{
    return _mm512_cvtph_ps(_mm256_set1_epi16((short)*p));
}

/* 16 bytes to 16 floats, signed or unsigned (exact). */
static inline __m512 i8_to_ps(__m128i v)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
}
static inline __m512 u8_to_ps(__m128i v)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
}

static inline __m128i load16(const void *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}

/* Low and high nibbles of 16 bytes: elements 0-15 and 16-31 of a block. */
static inline __m128i nib_lo(__m128i v)
{
    return _mm_and_si128(v, _mm_set1_epi8(0x0F));
}
static inline __m128i nib_hi(__m128i v)
{
    return _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0F));
}

/* ------------------------------------------------------ 32-element blocks */

/* sum(w * x) of one block with w = lo/hi (16 floats each, before the
 * scale) against x[0..31]. */
static inline __m512 sum_qx(__m512 lo, __m512 hi, const float *x)
{
    return _mm512_fmadd_ps(hi, _mm512_loadu_ps(x + 16), _mm512_mul_ps(lo, _mm512_loadu_ps(x)));
}

/* sum(x[0..31]) in 16 lanes, for the m term of Q4_1/Q5_1. */
static inline __m512 sum_x(const float *x)
{
    return _mm512_add_ps(_mm512_loadu_ps(x), _mm512_loadu_ps(x + 16));
}

static inline __m512 block_q8_0(const struct wk_block_q8_0 *b, const float *x, __m512 acc)
{
    __m512 s = sum_qx(i8_to_ps(load16(b->qs)), i8_to_ps(load16(b->qs + 16)), x);
    return _mm512_fmadd_ps(s, bcast_f16(&b->d), acc);
}

static inline __m512 block_q4_0(const struct wk_block_q4_0 *b, const float *x, __m512 acc)
{
    /* q - 8 in bytes (signed), before widening */
    const __m128i c8 = _mm_set1_epi8(8);
    __m128i q = load16(b->qs);
    __m128i lo = _mm_sub_epi8(nib_lo(q), c8), hi = _mm_sub_epi8(nib_hi(q), c8);
    return _mm512_fmadd_ps(sum_qx(i8_to_ps(lo), i8_to_ps(hi), x), bcast_f16(&b->d), acc);
}

static inline __m512 block_q4_1(const struct wk_block_q4_1 *b, const float *x, __m512 acc)
{
    __m128i q = load16(b->qs);
    acc =
        _mm512_fmadd_ps(sum_qx(u8_to_ps(nib_lo(q)), u8_to_ps(nib_hi(q)), x), bcast_f16(&b->d), acc);
    return _mm512_fmadd_ps(sum_x(x), bcast_f16(&b->m), acc);
}

/* Q5 values as bytes: nibble + 16 * (bit j of qh); Q5_0 then takes off 16,
 * which is "subtract 16 where the bit is clear" in one masked op. */
static inline __m512 block_q5_0(const struct wk_block_q5_0 *b, const float *x, __m512 acc)
{
    const __m128i c16 = _mm_set1_epi8(16);
    uint32_t qh;
    memcpy(&qh, b->qh, 4);
    __m128i q = load16(b->qs), lo = nib_lo(q), hi = nib_hi(q);
    lo = _mm_mask_sub_epi8(lo, (__mmask16)~qh, lo, c16);
    hi = _mm_mask_sub_epi8(hi, (__mmask16) ~(qh >> 16), hi, c16);
    return _mm512_fmadd_ps(sum_qx(i8_to_ps(lo), i8_to_ps(hi), x), bcast_f16(&b->d), acc);
}

static inline __m512 block_q5_1(const struct wk_block_q5_1 *b, const float *x, __m512 acc)
{
    const __m128i c16 = _mm_set1_epi8(16);
    uint32_t qh;
    memcpy(&qh, b->qh, 4);
    __m128i q = load16(b->qs), lo = nib_lo(q), hi = nib_hi(q);
    lo = _mm_mask_add_epi8(lo, (__mmask16)qh, lo, c16);
    hi = _mm_mask_add_epi8(hi, (__mmask16)(qh >> 16), hi, c16);
    acc = _mm512_fmadd_ps(sum_qx(u8_to_ps(lo), u8_to_ps(hi), x), bcast_f16(&b->d), acc);
    return _mm512_fmadd_ps(sum_x(x), bcast_f16(&b->m), acc);
}

/* Two blocks per step into two accumulators, so consecutive FMAs into one
 * accumulator are a block apart. */
#define DOT_32_F32(name, T, BLOCK)                                                                 \
    static float name(int64_t n, const void *w, const void *x)                                     \
    {                                                                                              \
        const struct T *a = w;                                                                     \
        const float *xf = x;                                                                       \
        const int64_t nb = n / 32;                                                                 \
        __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0;                                            \
        int64_t i = 0;                                                                             \
        for (; i + 2 <= nb; i += 2) {                                                              \
            acc0 = BLOCK(&a[i], xf + 32 * i, acc0);                                                \
            acc1 = BLOCK(&a[i + 1], xf + 32 * i + 32, acc1);                                       \
        }                                                                                          \
        if (i < nb) acc0 = BLOCK(&a[i], xf + 32 * i, acc0);                                        \
        return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));                                    \
    }

DOT_32_F32(vec_dot_q8_0_f32, wk_block_q8_0, block_q8_0)
DOT_32_F32(vec_dot_q4_0_f32, wk_block_q4_0, block_q4_0)
DOT_32_F32(vec_dot_q4_1_f32, wk_block_q4_1, block_q4_1)
DOT_32_F32(vec_dot_q5_0_f32, wk_block_q5_0, block_q5_0)
DOT_32_F32(vec_dot_q5_1_f32, wk_block_q5_1, block_q5_1)

/* -------------------------------------------------------------- K-quants */

/* K blocks feed 16 FMAs each; four accumulators keep the FMA latency
 * chain (4 cycles a link) off the critical path. */
static inline float hsum4(const __m512 acc[4])
{
    return _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

/*
 * Per-sub-block factors of a Q4_K/Q5_K block into sd[0..7] = d * sc_j and
 * sd[8..15] = dmin * m_j, the very products to_f32 forms. Kept in memory
 * so the kernels broadcast them with plain loads.
 */
static inline void k_factors(wk_f16 d, wk_f16 dmin, const uint8_t *scales, float sd[16])
{
    __m512 scm = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(wk__avx512_k_scales_mins(scales)));
    __m512 dd = _mm512_insertf32x8(_mm512_set1_ps(wk__avx512_f16(d)),
                                   _mm256_set1_ps(wk__avx512_f16(dmin)), 1);
    _mm512_store_ps(sd, _mm512_mul_ps(scm, dd));
    /* Tell the compiler sd may have changed here: it then reads each
     * factor back with a broadcast load (a load-port op), instead of
     * forwarding the stored vector through lane permutes, which would
     * compete with the widening shuffles for the same ports. */
    __asm__("" : "+m"(*(float(*)[16])sd));
}

/*
 * One group g of a Q4_K/Q5_K block: 64 elements, sub-block 2g (lo0: r <
 * 16, lo1: r >= 16) and 2g+1 (hi0, hi1), q as 32-bit lanes. With the
 * scale factored out of each 32-element sub-block,
 *   sum w*x = (d*sc) * sum q*x - (dmin*m) * sum x,
 * which costs one FMA per 16 weights plus four per group, instead of
 * forming every weight (an FMA each) and then multiplying it in.
 */
static inline void k_group(__m512i lo0, __m512i lo1, __m512i hi0, __m512i hi1, const float *sd,
                           int g, const float *x, __m512 acc[4])
{
    const float *xg = x + 64 * g;
    __m512 x0 = _mm512_loadu_ps(xg), x1 = _mm512_loadu_ps(xg + 16);
    __m512 x2 = _mm512_loadu_ps(xg + 32), x3 = _mm512_loadu_ps(xg + 48);
    __m512 s0 =
        _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo1), x1, _mm512_mul_ps(_mm512_cvtepi32_ps(lo0), x0));
    __m512 s1 =
        _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi1), x3, _mm512_mul_ps(_mm512_cvtepi32_ps(hi0), x2));
    acc[0] = _mm512_fmadd_ps(s0, _mm512_set1_ps(sd[2 * g]), acc[0]);
    acc[1] = _mm512_fmadd_ps(s1, _mm512_set1_ps(sd[2 * g + 1]), acc[1]);
    acc[2] = _mm512_fmadd_ps(_mm512_add_ps(x0, x1), _mm512_set1_ps(sd[8 + 2 * g]), acc[2]);
    acc[3] = _mm512_fmadd_ps(_mm512_add_ps(x2, x3), _mm512_set1_ps(sd[9 + 2 * g]), acc[3]);
}

/* acc[0], acc[1] hold the scaled sums, acc[2], acc[3] the min terms. */
static inline float k_reduce(const __m512 acc[4])
{
    return _mm512_reduce_add_ps(
        _mm512_sub_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

/*
 * Q4_K: group g (32 bytes of qs) holds sub-block 2g in its low nibbles and
 * 2g+1 in its high nibbles, element r of each from byte r. Widening 16
 * bytes to 32-bit lanes first lets one and / one shift split the nibbles.
 */
static inline void q4_k_group(const uint8_t *qs, const float *sd, int g, const float *x,
                              __m512 acc[4])
{
    const __m512i m4 = _mm512_set1_epi32(0x0F);
    __m512i v0 = _mm512_cvtepu8_epi32(load16(qs + 32 * g));
    __m512i v1 = _mm512_cvtepu8_epi32(load16(qs + 32 * g + 16));
    k_group(_mm512_and_si512(v0, m4), _mm512_and_si512(v1, m4), _mm512_srli_epi32(v0, 4),
            _mm512_srli_epi32(v1, 4), sd, g, x, acc);
}

static float vec_dot_q4_k_f32(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q4_k *a = w;
    const float *xf = x;
    _Alignas(64) float sd[16];
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        k_factors(a[i].d, a[i].dmin, a[i].scales, sd);
        const float *xb = xf + i * WK_QK_K;
        q4_k_group(a[i].qs, sd, 0, xb, acc);
        q4_k_group(a[i].qs, sd, 1, xb, acc);
        q4_k_group(a[i].qs, sd, 2, xb, acc);
        q4_k_group(a[i].qs, sd, 3, xb, acc);
    }
    return k_reduce(acc);
}

/*
 * Q5_K: Q4_K plus bit 2g (low nibbles) or 2g+1 (high nibbles) of qh[r] as
 * bit 4 of element r of group g. qh is widened once per block, in two
 * halves (r < 16, r >= 16); rotating its lanes left by 4 and by 3 puts bits
 * 0 and 1 at bit 4, and each group rotates them right by 2 more
 * (hb[0..3]: low/high nibble bits of halves 0 and 1). A ternary-logic op
 * ORs bit 4 into the nibble.
 */
static inline void q5_k_group(const uint8_t *qs, __m512i hb[4], const float *sd, int g,
                              const float *x, __m512 acc[4])
{
    const __m512i m4 = _mm512_set1_epi32(0x0F), b4 = _mm512_set1_epi32(0x10);
    __m512i v0 = _mm512_cvtepu8_epi32(load16(qs + 32 * g));
    __m512i v1 = _mm512_cvtepu8_epi32(load16(qs + 32 * g + 16));
    /* 0xF8: A | (B & C) */
    __m512i lo0 = _mm512_ternarylogic_epi32(_mm512_and_si512(v0, m4), hb[0], b4, 0xF8);
    __m512i lo1 = _mm512_ternarylogic_epi32(_mm512_and_si512(v1, m4), hb[2], b4, 0xF8);
    __m512i hi0 = _mm512_ternarylogic_epi32(_mm512_srli_epi32(v0, 4), hb[1], b4, 0xF8);
    __m512i hi1 = _mm512_ternarylogic_epi32(_mm512_srli_epi32(v1, 4), hb[3], b4, 0xF8);
    k_group(lo0, lo1, hi0, hi1, sd, g, x, acc);
    hb[0] = _mm512_ror_epi32(hb[0], 2);
    hb[1] = _mm512_ror_epi32(hb[1], 2);
    hb[2] = _mm512_ror_epi32(hb[2], 2);
    hb[3] = _mm512_ror_epi32(hb[3], 2);
}

static float vec_dot_q5_k_f32(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q5_k *a = w;
    const float *xf = x;
    _Alignas(64) float sd[16];
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        k_factors(a[i].d, a[i].dmin, a[i].scales, sd);
        __m512i h0 = _mm512_cvtepu8_epi32(load16(a[i].qh)),
                h1 = _mm512_cvtepu8_epi32(load16(a[i].qh + 16));
        __m512i hb[4] = {_mm512_rol_epi32(h0, 4), _mm512_rol_epi32(h0, 3), _mm512_rol_epi32(h1, 4),
                         _mm512_rol_epi32(h1, 3)};
        const float *xb = xf + i * WK_QK_K;
        q5_k_group(a[i].qs, hb, sd, 0, xb, acc);
        q5_k_group(a[i].qs, hb, sd, 1, xb, acc);
        q5_k_group(a[i].qs, hb, sd, 2, xb, acc);
        q5_k_group(a[i].qs, hb, sd, 3, xb, acc);
    }
    return k_reduce(acc);
}

/*
 * Q6_K: each 128-element half is decoded 64 bytes at a time, as in the
 * integer kernel (dot_template.h), into signed q - 32 bytes in a stack
 * buffer: quarters 0/1 are the low nibbles of ql[0..63] with qh bits 0-1 /
 * 2-3, quarters 2/3 the high nibbles with bits 4-5 / 6-7. The weights
 * (d * sc_j) * (q - 32) then come 16 at a time from one widening load, one
 * conversion and one multiply, bit-identical to to_f32.
 */
/* acc += (ds[j] * q) * x over the 16 elements of sub-block j. */
static inline __m512 q6_k_fma16(const int8_t *q, const float *ds, int j, const float *x, __m512 acc)
{
    __m512 w = _mm512_mul_ps(_mm512_set1_ps(ds[j]),
                             i8_to_ps(_mm_load_si128((const __m128i *)(q + 16 * j))));
    return _mm512_fmadd_ps(w, _mm512_loadu_ps(x + 16 * j), acc);
}

static float vec_dot_q6_k_f32(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q6_k *a = w;
    const float *xf = x;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30),
                  c32 = _mm512_set1_epi8(32);
    const __m512i shl01 = _mm512_set_epi64(2, 2, 2, 2, 4, 4, 4, 4);
    const __m512i shr23 = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
    _Alignas(64) int8_t q[WK_QK_K];
    _Alignas(64) float ds[16];
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(load16(a[i].scales)));
        _mm512_store_ps(ds, _mm512_mul_ps(_mm512_set1_ps(wk__avx512_f16(a[i].d)), sc));
        for (int h = 0; h < 2; h++) {
            __m512i ql = _mm512_loadu_si512(a[i].ql + 64 * h);
            __m512i qh =
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(a[i].qh + 32 * h)));
            /* 0xEC: (A & C) | B, nibble | top bits */
            __m512i q01 = _mm512_ternarylogic_epi32(
                ql, _mm512_and_si512(_mm512_sllv_epi64(qh, shl01), m2), m4, 0xEC);
            __m512i q23 = _mm512_ternarylogic_epi32(
                _mm512_srli_epi16(ql, 4), _mm512_and_si512(_mm512_srlv_epi64(qh, shr23), m2), m4,
                0xEC);
            _mm512_store_si512(q + 128 * h, _mm512_sub_epi8(q01, c32));
            _mm512_store_si512(q + 128 * h + 64, _mm512_sub_epi8(q23, c32));
        }
        const float *xb = xf + i * WK_QK_K;
        for (int j = 0; j < 16; j += 4) {
            acc[0] = q6_k_fma16(q, ds, j, xb, acc[0]);
            acc[1] = q6_k_fma16(q, ds, j + 1, xb, acc[1]);
            acc[2] = q6_k_fma16(q, ds, j + 2, xb, acc[2]);
            acc[3] = q6_k_fma16(q, ds, j + 3, xb, acc[3]);
        }
    }
    return hsum4(acc);
}

void wk__avx512_fill_dot_f32(struct wk_cpu_kernels *k)
{
    k->vec_dot[WK_DTYPE_Q8_0] = vec_dot_q8_0_f32;
    k->vec_dot[WK_DTYPE_Q4_0] = vec_dot_q4_0_f32;
    k->vec_dot[WK_DTYPE_Q4_1] = vec_dot_q4_1_f32;
    k->vec_dot[WK_DTYPE_Q5_0] = vec_dot_q5_0_f32;
    k->vec_dot[WK_DTYPE_Q5_1] = vec_dot_q5_1_f32;
    k->vec_dot[WK_DTYPE_Q4_K] = vec_dot_q4_k_f32;
    k->vec_dot[WK_DTYPE_Q5_K] = vec_dot_q5_k_f32;
    k->vec_dot[WK_DTYPE_Q6_K] = vec_dot_q6_k_f32;
}
