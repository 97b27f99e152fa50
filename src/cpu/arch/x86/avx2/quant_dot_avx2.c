/*
 * quant_dot_avx2.c - AVX2 dot products of quantized weight rows with
 * quantized activation rows: Q8_0, Q4_0, Q5_0 (x in Q8_0), Q4_1, Q5_1 (x in
 * Q8_1) and Q4_K, Q5_K, Q6_K (x in Q8_K). These are the hot loop of every
 * matmul: decode streams the weights once per token (memory bound), prefill
 * reuses them across tokens (compute bound).
 *
 * Arithmetic follows src/tensor/quant_ref.c: per block (or K super-block)
 * the integer products are summed exactly in int32, then scaled by the
 * block's float factors into a float accumulator. Only the order of the
 * float additions differs from the reference (8 lanes, 2 accumulators).
 *
 * The integer core is vpmaddubsw (u8 x s8 -> pairs summed into s16) then
 * vpmaddwd (s16 x s16 -> pairs summed into s32). Offset types (Q4_0, Q5_0,
 * Q6_K) multiply the unsigned q and subtract the offset times y separately
 * (Q6_K once per super-block through bsums). Bounds that keep the s16 step
 * from saturating, with activations in [-127, 127]:
 *   Q8_0 via the sign trick: |w| <= 128, 2*128*127 = 32512;
 *   unsigned q: 2*31*127 = 7874 (Q5), 2*63*127 = 16002 (Q6_K).
 * The activation quantizers never produce -128, which the sign trick needs.
 */
#include "kernels_avx2.h"

/* Sum over each 4 consecutive bytes of u (unsigned) times s (signed), as 8
 * int32. */
static inline __m256i dot_u8_s8(__m256i u, __m256i s)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* As dot_u8_s8 for two signed vectors: a·b = |a| · (b with a's sign). */
static inline __m256i dot_s8_s8(__m256i a, __m256i b)
{
    return dot_u8_s8(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
}

/* Sum over each 4 consecutive bytes of (u - off) times s, for u, off
 * unsigned: two vpmaddubsw and a subtraction in int16, one op fewer than
 * offsetting u and using the sign trick. */
static inline __m256i dot_u8_s8_off(__m256i u, __m256i s, __m256i off)
{
    __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(u, s), _mm256_maddubs_epi16(off, s));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

static inline __m256i load32(const void *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

/* The first two f16 fields of a 32-element block (d and m, d and s, or d
 * and 2 bytes of quants; d is at offset 0 in all of them) widened to f32 in
 * lanes 0 and 1; lanes 2 and 3 are 0. A 32-bit vmovd load is cheaper than
 * inserting a 16-bit word into a register. */
static inline __m128 f16x2(const void *block)
{
    int32_t v;
    memcpy(&v, block, 4);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(v));
}

/* d_w * d_x broadcast to 8 lanes, from the two blocks. */
static inline __m256 scale_of(const void *a, const void *b)
{
    return _mm256_broadcastss_ps(_mm_mul_ss(f16x2(a), f16x2(b)));
}

/* ------------------------------------------------------ 32-element blocks */

/* Each *_block adds one block's dot to acc; the loops run two blocks per
 * step on two accumulators so consecutive FMAs do not wait on each other. */

static inline __m256 q8_0_block(const struct wk_block_q8_0 *a, const struct wk_block_q8_0 *b,
                                __m256 acc)
{
    __m256i p = dot_s8_s8(load32(a->qs), load32(b->qs));
    return _mm256_fmadd_ps(scale_of(a, b), _mm256_cvtepi32_ps(p), acc);
}

float wk__avx2_dot_q8_0(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q8_0 *a = w, *b = x;
    int64_t nb = n / WK_QK8_0, i = 0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; i + 2 <= nb; i += 2) {
        acc0 = q8_0_block(&a[i], &b[i], acc0);
        acc1 = q8_0_block(&a[i + 1], &b[i + 1], acc1);
    }
    if (i < nb) acc0 = q8_0_block(&a[i], &b[i], acc0);
    return avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
}

static inline __m256 q4_0_block(const struct wk_block_q4_0 *a, const struct wk_block_q8_0 *b,
                                __m256 acc)
{
    __m256i p = dot_u8_s8_off(avx2_nibbles_32(a->qs), load32(b->qs), _mm256_set1_epi8(8));
    return _mm256_fmadd_ps(scale_of(a, b), _mm256_cvtepi32_ps(p), acc);
}

float wk__avx2_dot_q4_0(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q4_0 *a = w;
    const struct wk_block_q8_0 *b = x;
    int64_t nb = n / WK_QK4_0, i = 0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; i + 2 <= nb; i += 2) {
        acc0 = q4_0_block(&a[i], &b[i], acc0);
        acc1 = q4_0_block(&a[i + 1], &b[i + 1], acc1);
    }
    if (i < nb) acc0 = q4_0_block(&a[i], &b[i], acc0);
    return avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
}

static inline __m256 q5_0_block(const struct wk_block_q5_0 *a, const struct wk_block_q8_0 *b,
                                __m256 acc)
{
    __m256i hi = _mm256_and_si256(avx2_bits_to_bytes(a->qh), _mm256_set1_epi8(0x10));
    __m256i q = _mm256_or_si256(avx2_nibbles_32(a->qs), hi);
    __m256i p = dot_u8_s8_off(q, load32(b->qs), _mm256_set1_epi8(16));
    return _mm256_fmadd_ps(scale_of(a, b), _mm256_cvtepi32_ps(p), acc);
}

float wk__avx2_dot_q5_0(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q5_0 *a = w;
    const struct wk_block_q8_0 *b = x;
    int64_t nb = n / WK_QK4_0, i = 0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; i + 2 <= nb; i += 2) {
        acc0 = q5_0_block(&a[i], &b[i], acc0);
        acc1 = q5_0_block(&a[i + 1], &b[i + 1], acc1);
    }
    if (i < nb) acc0 = q5_0_block(&a[i], &b[i], acc0);
    return avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
}

/*
 * Q4_1 and Q5_1 weights are unsigned, so u8 x s8 needs no sign trick. Their
 * (d, m) pair and the activation's (d, s) pair are adjacent f16s, so one
 * conversion and one multiply give both d_w*d_x (lane 0) and the min term
 * m * s (lane 1); the latter is summed in lane 1 of summ.
 */
static inline __m256 q4_1_block(const struct wk_block_q4_1 *a, const struct wk_block_q8_1 *b,
                                __m256 acc, __m128 *summ)
{
    __m256i p = dot_u8_s8(avx2_nibbles_32(a->qs), load32(b->qs));
    __m128 dm = _mm_mul_ps(f16x2(a), f16x2(b));
    *summ = _mm_add_ps(*summ, dm);
    return _mm256_fmadd_ps(_mm256_broadcastss_ps(dm), _mm256_cvtepi32_ps(p), acc);
}

/* Lane 1 of the two min-term accumulators, added. */
static inline float min_term(__m128 s0, __m128 s1)
{
    __m128 s = _mm_add_ps(s0, s1);
    return _mm_cvtss_f32(_mm_movehdup_ps(s));
}

float wk__avx2_dot_q4_1(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q4_1 *a = w;
    const struct wk_block_q8_1 *b = x;
    int64_t nb = n / WK_QK4_0, i = 0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m128 summ0 = _mm_setzero_ps(), summ1 = _mm_setzero_ps();
    for (; i + 2 <= nb; i += 2) {
        acc0 = q4_1_block(&a[i], &b[i], acc0, &summ0);
        acc1 = q4_1_block(&a[i + 1], &b[i + 1], acc1, &summ1);
    }
    if (i < nb) acc0 = q4_1_block(&a[i], &b[i], acc0, &summ0);
    return avx2_hsum_ps(_mm256_add_ps(acc0, acc1)) + min_term(summ0, summ1);
}

static inline __m256 q5_1_block(const struct wk_block_q5_1 *a, const struct wk_block_q8_1 *b,
                                __m256 acc, __m128 *summ)
{
    __m256i hi = _mm256_and_si256(avx2_bits_to_bytes(a->qh), _mm256_set1_epi8(0x10));
    __m256i p = dot_u8_s8(_mm256_or_si256(avx2_nibbles_32(a->qs), hi), load32(b->qs));
    __m128 dm = _mm_mul_ps(f16x2(a), f16x2(b));
    *summ = _mm_add_ps(*summ, dm);
    return _mm256_fmadd_ps(_mm256_broadcastss_ps(dm), _mm256_cvtepi32_ps(p), acc);
}

float wk__avx2_dot_q5_1(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q5_1 *a = w;
    const struct wk_block_q8_1 *b = x;
    int64_t nb = n / WK_QK4_0, i = 0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m128 summ0 = _mm_setzero_ps(), summ1 = _mm_setzero_ps();
    for (; i + 2 <= nb; i += 2) {
        acc0 = q5_1_block(&a[i], &b[i], acc0, &summ0);
        acc1 = q5_1_block(&a[i + 1], &b[i + 1], acc1, &summ1);
    }
    if (i < nb) acc0 = q5_1_block(&a[i], &b[i], acc0, &summ0);
    return avx2_hsum_ps(_mm256_add_ps(acc0, acc1)) + min_term(summ0, summ1);
}

/* ------------------------------------------------------------- K-quants */

/* Broadcasts int16 lane j (0-7) of each 128-bit half of v to all 8 lanes
 * of that half (vpshufb with the byte pair 2j, 2j+1 repeated). */
static inline __m256i bcast_epi16(__m256i v, int j)
{
    return _mm256_shuffle_epi8(v, _mm256_set1_epi16((short)((2 * j + 1) << 8 | 2 * j)));
}

/*
 * Q4_K and Q5_K share a skeleton. Per super-block: sumi[8] collects
 * sc_j * (q · y) for the 8 sub-blocks of 32; summ[8] collects
 * m_j * (bsums[2j] + bsums[2j+1]), for which the mins are duplicated
 * (m0 m0 m1 m1 ...) so one vpmaddwd over the 16 bsums does it. Both go to
 * float once per super-block: acc += d_x*d*sumi - d_x*dmin*summ.
 * Bounds: |sumi| <= 8 * 63 * 31 * 127 * 32, |summ| <= 63 * 2 * 16 * 127.
 */

/* Group g (0-3) of 64 elements: sub-block 2g from the low nibbles of the
 * 32 bytes qv, 2g+1 from the high; hb_lo and hb_hi hold their fifth bits
 * (Q5_K) at bit 4 of each byte, or zero (Q4_K). */
static inline __m256i q4_k_group(__m256i qv, __m256i hb_lo, __m256i hb_hi, const int8_t *y,
                                 __m256i sc16, int g)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i lo = _mm256_or_si256(_mm256_and_si256(qv, m4), hb_lo);
    __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qv, 4), m4), hb_hi);
    __m256i p0 = _mm256_maddubs_epi16(lo, load32(y + 64 * g));
    __m256i p1 = _mm256_maddubs_epi16(hi, load32(y + 64 * g + 32));
    p0 = _mm256_madd_epi16(p0, bcast_epi16(sc16, 2 * g));
    p1 = _mm256_madd_epi16(p1, bcast_epi16(sc16, 2 * g + 1));
    return _mm256_add_epi32(p0, p1);
}

/* acc += one Q4_K/Q5_K super-block, given its sumi and its scales/mins. */
static inline __m256 k_finish(__m256i sumi, __m128i scmin, const struct wk_block_q8_k *b, wk_f16 d,
                              wk_f16 dmin, __m256 acc)
{
    __m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scmin, scmin));
    __m256i summ = _mm256_madd_epi16(mins, load32(b->bsums));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(b->d * avx2_f16(d)), _mm256_cvtepi32_ps(sumi), acc);
    return _mm256_fmadd_ps(_mm256_set1_ps(-b->d * avx2_f16(dmin)), _mm256_cvtepi32_ps(summ), acc);
}

float wk__avx2_dot_q4_k(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q4_k *a = w;
    const struct wk_block_q8_k *b = x;
    const __m256i zero = _mm256_setzero_si256();
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        __m128i scmin = avx2_q4_k_scales(a[i].scales);
        __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scmin));
        const uint8_t *q = a[i].qs;
        const int8_t *y = b[i].qs;
        __m256i s0 = q4_k_group(load32(q), zero, zero, y, sc16, 0);
        __m256i s1 = q4_k_group(load32(q + 32), zero, zero, y, sc16, 1);
        __m256i s2 = q4_k_group(load32(q + 64), zero, zero, y, sc16, 2);
        __m256i s3 = q4_k_group(load32(q + 96), zero, zero, y, sc16, 3);
        __m256i sumi = _mm256_add_epi32(_mm256_add_epi32(s0, s1), _mm256_add_epi32(s2, s3));
        acc = k_finish(sumi, scmin, &b[i], a[i].d, a[i].dmin, acc);
    }
    return avx2_hsum_ps(acc);
}

/* The fifth bits of group g's low and high halves are bits 2g and 2g+1 of
 * qh[l]; after shifting qh right by 2g, bits 0 and 1 move to bit 4. The
 * 16-bit shifts leak bits across bytes only into bits the masks drop. */
static inline __m256i q5_k_lo(__m256i hb)
{
    return _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(1)), 4);
}
static inline __m256i q5_k_hi(__m256i hb)
{
    return _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(2)), 3);
}

float wk__avx2_dot_q5_k(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q5_k *a = w;
    const struct wk_block_q8_k *b = x;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        __m128i scmin = avx2_q4_k_scales(a[i].scales);
        __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scmin));
        const uint8_t *q = a[i].qs;
        const int8_t *y = b[i].qs;
        __m256i h0 = load32(a[i].qh);
        __m256i h1 = _mm256_srli_epi16(h0, 2);
        __m256i h2 = _mm256_srli_epi16(h0, 4);
        __m256i h3 = _mm256_srli_epi16(h0, 6);
        __m256i s0 = q4_k_group(load32(q), q5_k_lo(h0), q5_k_hi(h0), y, sc16, 0);
        __m256i s1 = q4_k_group(load32(q + 32), q5_k_lo(h1), q5_k_hi(h1), y, sc16, 1);
        __m256i s2 = q4_k_group(load32(q + 64), q5_k_lo(h2), q5_k_hi(h2), y, sc16, 2);
        __m256i s3 = q4_k_group(load32(q + 96), q5_k_lo(h3), q5_k_hi(h3), y, sc16, 3);
        __m256i sumi = _mm256_add_epi32(_mm256_add_epi32(s0, s1), _mm256_add_epi32(s2, s3));
        acc = k_finish(sumi, scmin, &b[i], a[i].d, a[i].dmin, acc);
    }
    return avx2_hsum_ps(acc);
}

/*
 * Q6_K: the 6-bit q (0-63) is taken unsigned and the -32 offset is applied
 * once per super-block through the activation's bsums:
 *   sum_j sc_j * sum_l (q_l - 32) y_l = sum_j sc_j * (q · y)_j - 32 * sum_j sc_j * bsums_j.
 * A 32-element quarter spans two 16-element sub-blocks, one per 128-bit
 * lane of the vpmaddubsw result, so its scale vector holds sc[2k] in the
 * low lane and sc[2k+1] in the high lane.
 * Bound: |sumi| <= 16 * 128 * 63 * 127 * 16 + 32 * 16 * 128 * 2032 < 2^31.
 */

/* Quarter k (0-7) of the block: elements 32k to 32k+31, q unsigned. */
static inline __m256i q6_k_quarter(__m256i q, const int8_t *y, __m128i sc8, int k)
{
    const __m128i pick = _mm_set_epi64x((int64_t)(0x0101010101010101ull * (uint64_t)(2 * k + 1)),
                                        (int64_t)(0x0101010101010101ull * (uint64_t)(2 * k)));
    __m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pick));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, load32(y + 32 * k)), sc);
}

/* Half h (0-1) of a Q6_K block: 128 elements from ql[64h..] and qh[32h..];
 * quarter r takes nibbles from ql (low for r = 0, 1, high for 2, 3; bytes
 * 0-31 for even r, 32-63 for odd) and bits 2r, 2r+1 of qh. */
static inline __m256i q6_k_half(const struct wk_block_q6_k *a, const int8_t *y, __m128i sc8, int h)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
    __m256i l0 = load32(a->ql + 64 * h), l1 = load32(a->ql + 64 * h + 32);
    __m256i hh = load32(a->qh + 32 * h);
    __m256i q0 =
        _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hh, m2), 4));
    __m256i q1 =
        _mm256_or_si256(_mm256_and_si256(l1, m4),
                        _mm256_slli_epi16(_mm256_and_si256(hh, _mm256_set1_epi8(0x0C)), 2));
    __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                 _mm256_and_si256(hh, _mm256_set1_epi8(0x30)));
    __m256i q3 =
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                        _mm256_and_si256(_mm256_srli_epi16(hh, 2), _mm256_set1_epi8(0x30)));
    __m256i s =
        _mm256_add_epi32(q6_k_quarter(q0, y, sc8, 4 * h + 0), q6_k_quarter(q1, y, sc8, 4 * h + 1));
    s = _mm256_add_epi32(s, q6_k_quarter(q2, y, sc8, 4 * h + 2));
    return _mm256_add_epi32(s, q6_k_quarter(q3, y, sc8, 4 * h + 3));
}

float wk__avx2_dot_q6_k(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q6_k *a = w;
    const struct wk_block_q8_k *b = x;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        __m128i sc8 = _mm_loadu_si128((const __m128i *)a[i].scales);
        __m256i sumi =
            _mm256_add_epi32(q6_k_half(&a[i], b[i].qs, sc8, 0), q6_k_half(&a[i], b[i].qs, sc8, 1));
        __m256i off = _mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), load32(b[i].bsums));
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(off, 5));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(b[i].d * avx2_f16(a[i].d)), _mm256_cvtepi32_ps(sumi),
                              acc);
    }
    return avx2_hsum_ps(acc);
}
