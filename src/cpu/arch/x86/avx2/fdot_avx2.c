/*
 * fdot_avx2.c - AVX2 dot products of quantized weight rows with f32
 * activation rows (the table's vec_dot): Q8_0, Q4_0, Q5_0, Q4_1, Q5_1,
 * Q4_K, Q5_K, Q6_K. This is the exact path the forward pass uses and the
 * hot loop of single-token decode, where every weight byte is read once
 * per token and x (a few KB) stays in L1.
 *
 * Cost: every weight takes a widening, an int-to-float conversion and an
 * FMA, 8 per instruction (the integer path multiplies 32 per vpmaddubsw),
 * plus a second FMA for the types with a min (Q4_1, Q5_1, Q4_K, Q5_K). On
 * a Zen 4 core that makes every type but Q8_0 compute-bound on one thread,
 * at 3-6 weights per cycle; what remains per block (scales, bit building)
 * is kept to byte-wide work and shared conversions.
 *
 * Semantics are those of wk_ref_vec_dot_<type>_f32 (src/tensor/quant_ref.c):
 * the weights are dequantized exactly as to_f32 does and multiplied with x
 * in float. Only rounding differs: block factors are applied to a block's
 * (or sub-block's) sum instead of to each weight, or folded into one FMA,
 * and the additions run in another order over several accumulators.
 *
 * Widening (Q8_0 sign-extends straight from memory instead): the quants
 * of a block are first built as 32 int8 in element order in one register
 * (nibble split, fifth or sixth bits, offsets: byte-wide work, 32 elements
 * per instruction), then vpshufb puts each byte at the top of an int32
 * lane, so vcvtdq2ps yields q * 2^24 exactly, sign included, with no
 * separate sign extension; 2^-24 is folded into the block factor (Q4_0
 * uses 2^28, see there). A block's sum is thus up to 2^28 times the
 * reference's partial sums, which overflows only for |x| above ~1e27.
 * Block layouts: src/tensor/wk_tensor.h.
 */
#include "kernels_avx2.h"

static inline __m256 ld8(const float *p)
{
    return _mm256_loadu_ps(p);
}

/* An f16 scale broadcast to 8 f32 lanes (vpbroadcastw + vcvtph2ps). */
static inline __m256 bcast_f16(wk_f16 h)
{
    return _mm256_cvtph_ps(_mm_set1_epi16((short)h));
}

/* The f16 scales of 4 consecutive 32-element blocks (the first at p, the
 * others stride bytes apart) as 4 floats times scale: gathered in a
 * general register, then one conversion for the four. */
static inline __m128 f16x4(const void *p, size_t stride, float scale)
{
    const uint8_t *c = p;
    uint16_t h[4];
    for (int k = 0; k < 4; k++)
        memcpy(&h[k], c + k * stride, 2);
    uint64_t u =
        (uint64_t)h[0] | (uint64_t)h[1] << 16 | (uint64_t)h[2] << 32 | (uint64_t)h[3] << 48;
    return _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)u)), _mm_set1_ps(scale));
}

/* Lane k of v broadcast to 8 lanes. */
static inline __m256 lane(__m128 v, int k)
{
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(v), _mm256_set1_epi32(k));
}

/* vpshufb control: int32 lane i of each 128-bit half receives byte
 * base+i (base_hi+i in the high half) of that half in bits 24-31, the
 * other bytes 0 (control bytes with bit 7 set). */
static inline __m256i top_ctl(int base, int base_hi)
{
    const int z = 0x808080;
    return _mm256_setr_epi32(base << 24 | z, (base + 1) << 24 | z, (base + 2) << 24 | z,
                             (base + 3) << 24 | z, base_hi << 24 | z, (base_hi + 1) << 24 | z,
                             (base_hi + 2) << 24 | z, (base_hi + 3) << 24 | z);
}

/* 32 int8 in element order -> the layout top_ps reads: dwords 0 2 4 6 in
 * the low half, 1 3 5 7 in the high half, so elements 8m..8m+3 and
 * 8m+4..8m+7 both sit at bytes 4m..4m+3 of their half. */
static inline __m256i spread(__m256i v)
{
    return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
}

/* Elements 8m..8m+7 of a spread vector as floats, each q * 2^24. */
static inline __m256 top_ps(__m256i spread_v, int m)
{
    return _mm256_cvtepi32_ps(_mm256_shuffle_epi8(spread_v, top_ctl(4 * m, 4 * m)));
}

/* sum_l q_l * x_l * 2^24 over 32 elements (as 8 lanes), q the int8 of v in
 * element order. Two chains so the FMAs overlap. */
static inline __m256 dot32(__m256i v, const float *x)
{
    __m256i s = spread(v);
    __m256 a = _mm256_mul_ps(top_ps(s, 0), ld8(x));
    __m256 b = _mm256_mul_ps(top_ps(s, 1), ld8(x + 8));
    a = _mm256_fmadd_ps(top_ps(s, 2), ld8(x + 16), a);
    b = _mm256_fmadd_ps(top_ps(s, 3), ld8(x + 24), b);
    return _mm256_add_ps(a, b);
}

/* acc[m] += (q * dq + mq) * x over 32 elements, q the int8 of s (spread
 * layout) scaled by 2^24 (dq carries 2^-24): the dequantized weight in one
 * FMA, then its product in a second, one accumulator per 8 elements. */
static inline void axpy32(__m256i s, __m256 dq, __m256 mq, const float *x, __m256 acc[4])
{
    for (int m = 0; m < 4; m++)
        acc[m] = _mm256_fmadd_ps(_mm256_fmadd_ps(top_ps(s, m), dq, mq), ld8(x + 8 * m), acc[m]);
}

static inline float hsum4(const __m256 acc[4])
{
    return avx2_hsum_ps(
        _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

/* ------------------------------------------------------------------ Q8_0 */

/* 8 int8 straight from memory, sign-extended and converted. */
static inline __m256 i8x8_ps(const int8_t *q)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)q)));
}

/* sum_l q_l * x_l over one block, as 8 lanes. One chain: four blocks are
 * in flight at a time, which hides the FMA latency. */
static inline __m256 q8_0_sum(const int8_t *q, const float *x)
{
    __m256 s = _mm256_mul_ps(i8x8_ps(q), ld8(x));
    s = _mm256_fmadd_ps(i8x8_ps(q + 8), ld8(x + 8), s);
    s = _mm256_fmadd_ps(i8x8_ps(q + 16), ld8(x + 16), s);
    return _mm256_fmadd_ps(i8x8_ps(q + 24), ld8(x + 24), s);
}

static float vec_dot_q8_0(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_q8_0 *b = w;
    const float *x = xv;
    int64_t nb = n / WK_QK8_0, i = 0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; i + 4 <= nb; i += 4) {
        __m128 d = f16x4(&b[i].d, sizeof b[i], 1.0f);
        const float *xb = x + 32 * i;
        acc0 = _mm256_fmadd_ps(lane(d, 0), q8_0_sum(b[i].qs, xb), acc0);
        acc1 = _mm256_fmadd_ps(lane(d, 1), q8_0_sum(b[i + 1].qs, xb + 32), acc1);
        acc0 = _mm256_fmadd_ps(lane(d, 2), q8_0_sum(b[i + 2].qs, xb + 64), acc0);
        acc1 = _mm256_fmadd_ps(lane(d, 3), q8_0_sum(b[i + 3].qs, xb + 96), acc1);
    }
    for (; i < nb; i++)
        acc0 = _mm256_fmadd_ps(bcast_f16(b[i].d), q8_0_sum(b[i].qs, x + 32 * i), acc0);
    return avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
}

/* ------------------------------------------------------------------ Q4_0 */

/*
 * Q4_0 skips the int8 stage: the 16 bytes are broadcast to both halves and
 * xor'd with 0x88, which turns each nibble q into the 4-bit two's
 * complement of q - 8. vpshufb puts byte j at the top of an int32; a shift
 * by 4 leaves the low nibble alone in bits 28-31, a mask keeps the high
 * one: both are then (q - 8) * 2^28 as int32.
 */
static inline __m256 q4_0_sum(const uint8_t *qs, const float *x)
{
    const __m256i hi_mask = _mm256_set1_epi32((int)0xF0000000);
    __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    v = _mm256_xor_si256(v, _mm256_set1_epi8((char)0x88));
    __m256i t0 = _mm256_shuffle_epi8(v, top_ctl(0, 4));  /* bytes 0-7 */
    __m256i t1 = _mm256_shuffle_epi8(v, top_ctl(8, 12)); /* bytes 8-15 */
    __m256 s0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_slli_epi32(t0, 4)), ld8(x));
    __m256 s1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_slli_epi32(t1, 4)), ld8(x + 8));
    s0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(t0, hi_mask)), ld8(x + 16), s0);
    s1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(t1, hi_mask)), ld8(x + 24), s1);
    return _mm256_add_ps(s0, s1);
}

static float vec_dot_q4_0(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_q4_0 *b = w;
    const float *x = xv;
    int64_t nb = n / WK_QK4_0, i = 0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; i + 4 <= nb; i += 4) {
        __m128 d = f16x4(&b[i].d, sizeof b[i], 0x1p-28f);
        const float *xb = x + 32 * i;
        acc0 = _mm256_fmadd_ps(lane(d, 0), q4_0_sum(b[i].qs, xb), acc0);
        acc1 = _mm256_fmadd_ps(lane(d, 1), q4_0_sum(b[i + 1].qs, xb + 32), acc1);
        acc0 = _mm256_fmadd_ps(lane(d, 2), q4_0_sum(b[i + 2].qs, xb + 64), acc0);
        acc1 = _mm256_fmadd_ps(lane(d, 3), q4_0_sum(b[i + 3].qs, xb + 96), acc1);
    }
    for (; i < nb; i++) {
        __m256 d = _mm256_mul_ps(bcast_f16(b[i].d), _mm256_set1_ps(0x1p-28f));
        acc0 = _mm256_fmadd_ps(d, q4_0_sum(b[i].qs, x + 32 * i), acc0);
    }
    return avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
}

/* ------------------------------------------------------------------ Q5_0 */

/* q - 16 as int8 in element order: nibble | 0xF0 where the fifth bit is
 * clear (the two's complement of nibble - 16), the nibble where it is set. */
static inline __m256i q5_0_quants(const struct wk_block_q5_0 *b)
{
    __m256i hi = _mm256_andnot_si256(avx2_bits_to_bytes(b->qh), _mm256_set1_epi8((char)0xF0));
    return _mm256_or_si256(avx2_nibbles_32(b->qs), hi);
}

static float vec_dot_q5_0(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_q5_0 *b = w;
    const float *x = xv;
    int64_t nb = n / WK_QK4_0, i = 0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; i + 4 <= nb; i += 4) {
        __m128 d = f16x4(&b[i].d, sizeof b[i], 0x1p-24f);
        const float *xb = x + 32 * i;
        acc0 = _mm256_fmadd_ps(lane(d, 0), dot32(q5_0_quants(&b[i]), xb), acc0);
        acc1 = _mm256_fmadd_ps(lane(d, 1), dot32(q5_0_quants(&b[i + 1]), xb + 32), acc1);
        acc0 = _mm256_fmadd_ps(lane(d, 2), dot32(q5_0_quants(&b[i + 2]), xb + 64), acc0);
        acc1 = _mm256_fmadd_ps(lane(d, 3), dot32(q5_0_quants(&b[i + 3]), xb + 96), acc1);
    }
    for (; i < nb; i++) {
        __m256 d = _mm256_mul_ps(bcast_f16(b[i].d), _mm256_set1_ps(0x1p-24f));
        acc0 = _mm256_fmadd_ps(d, dot32(q5_0_quants(&b[i]), x + 32 * i), acc0);
    }
    return avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
}

/* ----------------------------------------------------------- Q4_1, Q5_1 */

/* w = q * d + m, built by one FMA per 8 weights (axpy32); d and m of four
 * blocks are converted together. GCC leaves the four-block loop rolled
 * unless told (Q4_1 then runs ~7% slower). */
static inline __m256i q5_1_quants(const struct wk_block_q5_1 *b)
{
    __m256i hi = _mm256_and_si256(avx2_bits_to_bytes(b->qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(avx2_nibbles_32(b->qs), hi);
}

static float vec_dot_q4_1(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_q4_1 *b = w;
    const float *x = xv;
    int64_t nb = n / WK_QK4_0, i = 0;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    for (; i + 4 <= nb; i += 4) {
        __m128 d = f16x4(&b[i].d, sizeof b[i], 0x1p-24f), m = f16x4(&b[i].m, sizeof b[i], 1.0f);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            axpy32(spread(avx2_nibbles_32(b[i + k].qs)), lane(d, k), lane(m, k), x + 32 * (i + k),
                   acc);
    }
    for (; i < nb; i++) {
        __m256 d = _mm256_mul_ps(bcast_f16(b[i].d), _mm256_set1_ps(0x1p-24f));
        axpy32(spread(avx2_nibbles_32(b[i].qs)), d, bcast_f16(b[i].m), x + 32 * i, acc);
    }
    return hsum4(acc);
}

static float vec_dot_q5_1(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_q5_1 *b = w;
    const float *x = xv;
    int64_t nb = n / WK_QK4_0, i = 0;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    for (; i + 4 <= nb; i += 4) {
        __m128 d = f16x4(&b[i].d, sizeof b[i], 0x1p-24f), m = f16x4(&b[i].m, sizeof b[i], 1.0f);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            axpy32(spread(q5_1_quants(&b[i + k])), lane(d, k), lane(m, k), x + 32 * (i + k), acc);
    }
    for (; i < nb; i++) {
        __m256 d = _mm256_mul_ps(bcast_f16(b[i].d), _mm256_set1_ps(0x1p-24f));
        axpy32(spread(q5_1_quants(&b[i])), d, bcast_f16(b[i].m), x + 32 * i, acc);
    }
    return hsum4(acc);
}

/* ----------------------------------------------------------- Q4_K, Q5_K */

/*
 * Per super-block the 8 factors d*sc_j (times 2^-24) and -dmin*m_j are
 * computed once, 8 lanes at a time, and kept in small arrays so each
 * sub-block broadcasts its pair straight from memory. Each weight is then
 * d*sc_j*q - dmin*m_j in one FMA (the reference rounds twice).
 */
static inline void k4_factors(wk_f16 d, wk_f16 dmin, const uint8_t *scales, float dsc[8],
                              float dm[8])
{
    __m128i scmin = avx2_q4_k_scales(scales);
    __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(scmin));
    __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(scmin, scmin)));
    __m256 vd = _mm256_mul_ps(bcast_f16(d), _mm256_set1_ps(0x1p-24f));
    _mm256_storeu_ps(dsc, _mm256_mul_ps(vd, sc));
    _mm256_storeu_ps(dm, _mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), bcast_f16(dmin)), mn));
}

/* One Q4_K/Q5_K super-block; qh is NULL for Q4_K. */
static inline void k4_block(wk_f16 d, wk_f16 dmin, const uint8_t *scales, const uint8_t *qs,
                            const uint8_t *qh, const float *x, __m256 acc[4])
{
    float dsc[8], dm[8];
    k4_factors(d, dmin, scales, dsc, dm);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    /* the spread is applied to the loaded bytes, which the byte-wise
     * nibble and bit work commutes with */
    __m256i hb = qh ? spread(_mm256_loadu_si256((const __m256i *)qh)) : _mm256_setzero_si256();
    for (int g = 0; g < 4; g++) {
        __m256i qv = spread(_mm256_loadu_si256((const __m256i *)(qs + 32 * g)));
        __m256i lo = _mm256_and_si256(qv, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qv, 4), m4);
        if (qh) {
            /* fifth bits 2g, 2g+1 sit at bits 0, 1 of hb; move them to bit 4 */
            lo = _mm256_or_si256(lo,
                                 _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(1)), 4));
            hi = _mm256_or_si256(hi,
                                 _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(2)), 3));
            hb = _mm256_srli_epi16(hb, 2);
        }
        int j = 2 * g;
        axpy32(lo, _mm256_broadcast_ss(&dsc[j]), _mm256_broadcast_ss(&dm[j]), x + 64 * g, acc);
        axpy32(hi, _mm256_broadcast_ss(&dsc[j + 1]), _mm256_broadcast_ss(&dm[j + 1]),
               x + 64 * g + 32, acc);
    }
}

static float vec_dot_q4_k(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_q4_k *b = w;
    const float *x = xv;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    for (int64_t i = 0; i < n / WK_QK_K; i++)
        k4_block(b[i].d, b[i].dmin, b[i].scales, b[i].qs, NULL, x + WK_QK_K * i, acc);
    return hsum4(acc);
}

static float vec_dot_q5_k(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_q5_k *b = w;
    const float *x = xv;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    for (int64_t i = 0; i < n / WK_QK_K; i++)
        k4_block(b[i].d, b[i].dmin, b[i].scales, b[i].qs, b[i].qh, x + WK_QK_K * i, acc);
    return hsum4(acc);
}

/* ------------------------------------------------------------------ Q6_K */

/*
 * Q6_K: 16 sub-blocks of 16 with int8 scales; the 16 factors d*sc_j*2^-24
 * are computed once per super-block. Quarters of 32 elements are built as
 * int8 q - 32 (nibble from ql, two bits from qh at bits 4-5). The spread is
 * applied to the loaded ql and qh, which the byte-wise building commutes
 * with (three vpermd per 128 elements instead of four). After it,
 * top_ps(.., 0/1) covers a quarter's first sub-block and top_ps(.., 2/3)
 * its second; each is summed, then scaled by its factor. The unroll
 * pragmas matter: left rolled, GCC keeps the quarters in memory and the
 * kernel runs ~15% slower.
 */
static float vec_dot_q6_k(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_q6_k *b = w;
    const float *x = xv;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float dsc[16];
        __m256 vd = _mm256_mul_ps(bcast_f16(b[i].d), _mm256_set1_ps(0x1p-24f));
        __m128i sc8 = _mm_loadu_si128((const __m128i *)b[i].scales);
        __m256 sc_lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8));
        __m256 sc_hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(sc8, sc8)));
        _mm256_storeu_ps(dsc, _mm256_mul_ps(vd, sc_lo));
        _mm256_storeu_ps(dsc + 8, _mm256_mul_ps(vd, sc_hi));
        const float *xb = x + WK_QK_K * i;
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m256i l0 = spread(_mm256_loadu_si256((const __m256i *)(b[i].ql + 64 * h)));
            __m256i l1 = spread(_mm256_loadu_si256((const __m256i *)(b[i].ql + 64 * h + 32)));
            __m256i hh = spread(_mm256_loadu_si256((const __m256i *)(b[i].qh + 32 * h)));
            __m256i q[4];
            wk__avx2_q6k_quarters(l0, l1, hh, q);
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                __m256i s = _mm256_sub_epi8(q[r], _mm256_set1_epi8(32));
                const float *xq = xb + 128 * h + 32 * r;
                int sb = 8 * h + 2 * r;
                __m256 a = _mm256_mul_ps(top_ps(s, 0), ld8(xq));
                __m256 c = _mm256_mul_ps(top_ps(s, 2), ld8(xq + 16));
                a = _mm256_fmadd_ps(top_ps(s, 1), ld8(xq + 8), a);
                c = _mm256_fmadd_ps(top_ps(s, 3), ld8(xq + 24), c);
                acc0 = _mm256_fmadd_ps(_mm256_broadcast_ss(&dsc[sb]), a, acc0);
                acc1 = _mm256_fmadd_ps(_mm256_broadcast_ss(&dsc[sb + 1]), c, acc1);
            }
        }
    }
    return avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
}

/* ------------------------------------------------------------- the table */

void wk__avx2_fill_fdot(struct wk_cpu_kernels *k)
{
    k->vec_dot[WK_DTYPE_Q8_0] = vec_dot_q8_0;
    k->vec_dot[WK_DTYPE_Q4_0] = vec_dot_q4_0;
    k->vec_dot[WK_DTYPE_Q5_0] = vec_dot_q5_0;
    k->vec_dot[WK_DTYPE_Q4_1] = vec_dot_q4_1;
    k->vec_dot[WK_DTYPE_Q5_1] = vec_dot_q5_1;
    k->vec_dot[WK_DTYPE_Q4_K] = vec_dot_q4_k;
    k->vec_dot[WK_DTYPE_Q5_K] = vec_dot_q5_k;
    k->vec_dot[WK_DTYPE_Q6_K] = vec_dot_q6_k;
}
