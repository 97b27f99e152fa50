/*
 * dot_template.h - the integer dot products, the table's vec_dot_q entries
 * (weight row in its block type · activation row quantized to its
 * vec_dot_type), for Q8_0, Q4_0, Q5_0, Q4_1, Q5_1 (32-element blocks) and
 * Q4_K, Q5_K, Q6_K (256-element K blocks).
 *
 * Not an ordinary header: the kernels are written once here and compiled
 * twice, by dot_avx512.c with WK_AVX512_VNNI 0 and by dot_avx512_vnni.c
 * with WK_AVX512_VNNI 1. The two differ only in the primitives below
 * (dot4*, scale_layout*), so the VNNI path and the AVX-512BW path for CPUs
 * without VNNI cannot drift apart; they return bit-identical results. Including files define
 * WK_AVX512_VNNI and WK_AVX512_FILL_DOT (the name of the fill function to emit).
 *
 * Arithmetic (spec: wk_ref_vec_dot_<w>_<x> in src/tensor/quant_ref.c).
 * Within a block the integer products are exact; they are summed in int32
 * lanes (4 adjacent products per lane), each lane is converted to float
 * (exact: lane sums stay below 2^24) and multiplied by the block's float
 * scale with an FMA into a float accumulator. The result differs from the reference's per-block
 * order only by float rounding.
 *
 * Unsigned x signed bytes: the weight side is made unsigned (nibbles, 5- and
 * 6-bit values, or |q| for Q8_0 with the activation's sign flipped where q
 * is negative) and any offset (Q4_0's -8, Q5_0's -16, Q6_K's -32) is taken
 * off afterwards as offset * sum(activation). Without VNNI, maddubs adds two
 * u8·s8 products into a saturating int16: every caller keeps those pairs
 * below 2 * 128 * 127 = 32512, as activations are in [-127, 127].
 *
 * Layout tricks: two 32-element blocks fill one 512-bit register (block i in
 * the low 256 bits, i+1 in the high), so one scale vector carries two block
 * scales; a K block is four registers of 64 elements, each two or four
 * sub-blocks, and the per-sub-block scales are applied in the integer
 * domain (vpdpwssd / madd with the scale) before one float multiply per
 * K block.
 */
#ifndef WK_AVX512_VNNI
#error "define WK_AVX512_VNNI (0 or 1) before including dot_template.h"
#endif

#include "avx512.h"

#include <string.h>

#define F16(h) wk__avx512_f16(h)

/* ------------------------------------------------------------- primitives */

#if WK_AVX512_VNNI
/* Per int32 lane: the sum of 4 adjacent products u8(u) * s8(s). */
static inline __m512i dot4(__m512i u, __m512i s)
{
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, s);
}
/* acc + dot4(u, s) * scale, scale as laid out by scale_layout. dot4's lane
 * sums fit in int16 for every caller (|sum| <= 4 * 63 * 128), so vpdpwssd
 * with the scale in the low half and 0 in the high half multiplies them. */
static inline __m512i dot4_scaled_acc(__m512i acc, __m512i u, __m512i s, __m512i scale)
{
    return _mm512_dpwssd_epi32(acc, dot4(u, s), scale);
}
/* int32 lanes holding int16-range scales -> the layout dot4_scaled_acc
 * takes: the scale in the low 16 bits, 0 above. */
static inline __m512i scale_layout(__m512i v)
{
    return _mm512_and_si512(v, _mm512_set1_epi32(0xFFFF));
}
/* The same for scales already zero-extended from unsigned bytes. */
static inline __m512i scale_layout_u(__m512i v)
{
    return v;
}
#else
static inline __m512i dot4(__m512i u, __m512i s)
{
    return _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1));
}
/* madd multiplies both int16 pair sums of maddubs by the scale, which
 * therefore sits in both halves of the lane. */
static inline __m512i dot4_scaled_acc(__m512i acc, __m512i u, __m512i s, __m512i scale)
{
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), scale));
}
static inline __m512i scale_layout(__m512i v)
{
    __m512i lo = _mm512_and_si512(v, _mm512_set1_epi32(0xFFFF));
    return _mm512_or_si512(lo, _mm512_slli_epi32(v, 16));
}
static inline __m512i scale_layout_u(__m512i v)
{
    return _mm512_or_si512(v, _mm512_slli_epi32(v, 16));
}
#endif

/* dot4(u, s) - dot4(off, s): the dot of (u - off) with s, where off is a
 * constant byte. */
static inline __m512i dot4_offset(__m512i u, __m512i s, __m512i off)
{
#if WK_AVX512_VNNI
    return _mm512_sub_epi32(dot4(u, s), dot4(off, s));
#else
    /* subtract in int16 before widening: one madd instead of two */
    __m512i p = _mm512_sub_epi16(_mm512_maddubs_epi16(u, s), _mm512_maddubs_epi16(off, s));
    return _mm512_madd_epi16(p, _mm512_set1_epi16(1));
#endif
}

/* ------------------------------------------------------- 32-element blocks */

/* Lanes 0-7 get lane 0 of a 4-float vector, lanes 8-15 lane 1. */
static inline __m512 spread_pair(__m128 v)
{
    const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v));
}

/* [wa0 * xb0 in lanes 0-7, wa1 * xb1 in lanes 8-15] from four f16 scales:
 * the four halves travel as one 64-bit integer into one vcvtph2ps. */
static inline __m512 scale_pair(wk_f16 wa0, wk_f16 wa1, wk_f16 xb0, wk_f16 xb1)
{
    uint64_t v = wa0 | (uint64_t)wa1 << 16 | (uint64_t)xb0 << 32 | (uint64_t)xb1 << 48;
    __m128 f = _mm_cvtph_ps(_mm_cvtsi64_si128((long long)v)); /* wa0 wa1 xb0 xb1 */
    return spread_pair(_mm_mul_ps(f, _mm_movehl_ps(f, f)));
}

/* Two 32-byte runs (one per block) in one register. */
static inline __m512i load_2x32(const void *p0, const void *p1)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p0)),
                              _mm256_loadu_si256((const __m256i *)p1), 1);
}

/* The 64 nibbles of two blocks' 16-byte qs, in element order: 16-byte lanes
 * [p0, p0, p1, p1] are shifted right by [0, 4, 0, 4] bits and masked, so
 * low nibbles (elements 0-15) precede high ones (16-31) in each block. */
static inline __m512i load_2x_nibbles(const uint8_t *p0, const uint8_t *p1)
{
    const __m512i shift = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);
    __m512i v = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p0))),
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p1)), 1);
    return _mm512_and_si512(_mm512_srlv_epi64(v, shift), _mm512_set1_epi8(0x0F));
}

/* The 64 fifth bits of two Q5 blocks as a byte mask: bit j of qh is element
 * j, so two 32-bit qh words laid side by side match load_2x_nibbles. */
static inline __mmask64 load_2x_qh(const uint8_t *qh0, const uint8_t *qh1)
{
    uint32_t h0, h1;
    memcpy(&h0, qh0, 4);
    memcpy(&h1, qh1, 4);
    return _cvtu64_mask64(h0 | (uint64_t)h1 << 32);
}

/* All-zero blocks stand in for the missing second block of an odd count:
 * zero quants and zero scales add nothing. */
static const struct wk_block_q8_0 zero_wk_block_q8_0;
static const struct wk_block_q8_1 zero_wk_block_q8_1;
static const struct wk_block_q4_0 zero_wk_block_q4_0;
static const struct wk_block_q4_1 zero_wk_block_q4_1;
static const struct wk_block_q5_0 zero_wk_block_q5_0;
static const struct wk_block_q5_1 zero_wk_block_q5_1;

/* One pair step of a 32-element-block dot: acc += the pair's sums. Each
 * pair function takes the two weight and two activation blocks. */
static inline __m512 pair_q8_0(const struct wk_block_q8_0 *a0, const struct wk_block_q8_0 *a1,
                               const struct wk_block_q8_0 *b0, const struct wk_block_q8_0 *b1,
                               __m512 acc)
{
    __m512i w = load_2x32(a0->qs, a1->qs), x = load_2x32(b0->qs, b1->qs);
    /* w·x = |w| · (x with the sign of w); |-128| = 128 is fine unsigned */
    __m512i xs = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
    __m512i p = dot4(_mm512_abs_epi8(w), xs);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), scale_pair(a0->d, a1->d, b0->d, b1->d), acc);
}

static inline __m512 pair_q4_0(const struct wk_block_q4_0 *a0, const struct wk_block_q4_0 *a1,
                               const struct wk_block_q8_0 *b0, const struct wk_block_q8_0 *b1,
                               __m512 acc)
{
    __m512i w = load_2x_nibbles(a0->qs, a1->qs), x = load_2x32(b0->qs, b1->qs);
    __m512i p = dot4_offset(w, x, _mm512_set1_epi8(8));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), scale_pair(a0->d, a1->d, b0->d, b1->d), acc);
}

static inline __m512 pair_q5_0(const struct wk_block_q5_0 *a0, const struct wk_block_q5_0 *a1,
                               const struct wk_block_q8_0 *b0, const struct wk_block_q8_0 *b1,
                               __m512 acc)
{
    __m512i w = load_2x_nibbles(a0->qs, a1->qs), x = load_2x32(b0->qs, b1->qs);
    w = _mm512_mask_add_epi8(w, load_2x_qh(a0->qh, a1->qh), w, _mm512_set1_epi8(16));
    __m512i p = dot4_offset(w, x, _mm512_set1_epi8(16));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), scale_pair(a0->d, a1->d, b0->d, b1->d), acc);
}

/*
 * Q4_1 and Q5_1 against Q8_1: sum (q*d + m) * x = d*dx * sum q*xq + m * s
 * with s = dx * sum xq stored in the Q8_1 block. The (d, m) and (dx, s)
 * halves are adjacent in the blocks, so one vcvtph2ps of
 * [d0 m0 d1 m1 dx0 s0 dx1 s1] and one multiply of its halves give both
 * block scales and both min terms; the min terms gather in the 4-lane
 * *accm (lanes 1 and 3) and are added once at the end.
 */
static inline __m512 scale_pair_min(const void *a0, const void *a1, const void *b0, const void *b1,
                                    __m128 *accm)
{
    uint32_t u[4];
    memcpy(&u[0], a0, 4), memcpy(&u[1], a1, 4), memcpy(&u[2], b0, 4), memcpy(&u[3], b1, 4);
    __m256 f = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)u));
    __m128 p = _mm_mul_ps(_mm256_castps256_ps128(f), _mm256_extractf128_ps(f, 1));
    *accm = _mm_add_ps(*accm, p); /* lanes 1, 3: m0*s0, m1*s1 */
    return spread_pair(_mm_shuffle_ps(p, p, _MM_SHUFFLE(2, 2, 2, 0)));
}

static inline __m512 pair_q4_1(const struct wk_block_q4_1 *a0, const struct wk_block_q4_1 *a1,
                               const struct wk_block_q8_1 *b0, const struct wk_block_q8_1 *b1,
                               __m512 acc, __m128 *accm)
{
    __m512i w = load_2x_nibbles(a0->qs, a1->qs), x = load_2x32(b0->qs, b1->qs);
    __m512 d = scale_pair_min(a0, a1, b0, b1, accm);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot4(w, x)), d, acc);
}

static inline __m512 pair_q5_1(const struct wk_block_q5_1 *a0, const struct wk_block_q5_1 *a1,
                               const struct wk_block_q8_1 *b0, const struct wk_block_q8_1 *b1,
                               __m512 acc, __m128 *accm)
{
    __m512i w = load_2x_nibbles(a0->qs, a1->qs), x = load_2x32(b0->qs, b1->qs);
    w = _mm512_mask_add_epi8(w, load_2x_qh(a0->qh, a1->qh), w, _mm512_set1_epi8(16));
    __m512 d = scale_pair_min(a0, a1, b0, b1, accm);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot4(w, x)), d, acc);
}

static inline float hsum2(__m512 a, __m512 b)
{
    return _mm512_reduce_add_ps(_mm512_add_ps(a, b));
}

/* The loop of a 32-element-block dot: four blocks per step in two
 * independent accumulators (the FMA chain, not the integer work, would
 * otherwise bound the loop), then pairs, the last one padded with a zero
 * block. */
#define DOT_32(name, WT, XT, PAIR)                                                                 \
    static float name(int64_t n, const void *w, const void *x)                                     \
    {                                                                                              \
        const struct WT *a = w;                                                                    \
        const struct XT *b = x;                                                                    \
        const int64_t nb = n / 32;                                                                 \
        __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0;                                            \
        int64_t i = 0;                                                                             \
        for (; i + 4 <= nb; i += 4) {                                                              \
            acc0 = PAIR(a + i, a + i + 1, b + i, b + i + 1, acc0);                                 \
            acc1 = PAIR(a + i + 2, a + i + 3, b + i + 2, b + i + 3, acc1);                         \
        }                                                                                          \
        for (; i < nb; i += 2) {                                                                   \
            int two = i + 1 < nb;                                                                  \
            acc0 = PAIR(a + i, two ? a + i + 1 : &zero_##WT, b + i, two ? b + i + 1 : &zero_##XT,  \
                        acc0);                                                                     \
        }                                                                                          \
        return hsum2(acc0, acc1);                                                                  \
    }

DOT_32(vec_dot_q8_0_q8_0, wk_block_q8_0, wk_block_q8_0, pair_q8_0)
DOT_32(vec_dot_q4_0_q8_0, wk_block_q4_0, wk_block_q8_0, pair_q4_0)
DOT_32(vec_dot_q5_0_q8_0, wk_block_q5_0, wk_block_q8_0, pair_q5_0)

/* As DOT_32, with the min-term accumulator of Q4_1/Q5_1. */
#define DOT_32_MIN(name, WT, PAIR)                                                                 \
    static float name(int64_t n, const void *w, const void *x)                                     \
    {                                                                                              \
        const struct WT *a = w;                                                                    \
        const struct wk_block_q8_1 *b = x;                                                         \
        const int64_t nb = n / 32;                                                                 \
        __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0;                                            \
        __m128 accm = _mm_setzero_ps();                                                            \
        int64_t i = 0;                                                                             \
        for (; i + 4 <= nb; i += 4) {                                                              \
            acc0 = PAIR(a + i, a + i + 1, b + i, b + i + 1, acc0, &accm);                          \
            acc1 = PAIR(a + i + 2, a + i + 3, b + i + 2, b + i + 3, acc1, &accm);                  \
        }                                                                                          \
        for (; i < nb; i += 2) {                                                                   \
            int two = i + 1 < nb;                                                                  \
            acc0 = PAIR(a + i, two ? a + i + 1 : &zero_##WT, b + i,                                \
                        two ? b + i + 1 : &zero_wk_block_q8_1, acc0, &accm);                       \
        }                                                                                          \
        float mins = _mm_cvtss_f32(_mm_shuffle_ps(accm, accm, 1)) +                                \
                     _mm_cvtss_f32(_mm_shuffle_ps(accm, accm, 3));                                 \
        return hsum2(acc0, acc1) + mins;                                                           \
    }

DOT_32_MIN(vec_dot_q4_1_q8_1, wk_block_q4_1, pair_q4_1)
DOT_32_MIN(vec_dot_q5_1_q8_1, wk_block_q5_1, pair_q5_1)

/* -------------------------------------------------------------- K-quants */

/* Index vectors for spreading per-sub-block scales over int32 lanes:
 * K_IDX2(j) puts scale j in lanes 0-7 and j+1 in lanes 8-15 (two 32-element
 * sub-blocks per register), K_IDX4(j) scales j..j+3 in 4-lane runs (four
 * 16-element sub-blocks of Q6_K). */
#define K_IDX2(j)                                                                                  \
    _mm512_set_epi32(j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j, j, j, j, j, j, j, j)
#define K_IDX4(j)                                                                                  \
    _mm512_set_epi32(j + 3, j + 3, j + 3, j + 3, j + 2, j + 2, j + 2, j + 2, j + 1, j + 1, j + 1,  \
                     j + 1, j, j, j, j)

/* The 64 elements of Q4_K group g (32 bytes of qs): low nibbles (sub-block
 * 2g) in the low 256 bits, high nibbles (2g+1) in the high. */
static inline __m512i load_k_group(const uint8_t *qs)
{
    const __m512i shift = _mm512_set_epi64(4, 4, 4, 4, 0, 0, 0, 0);
    __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)qs));
    return _mm512_and_si512(_mm512_srlv_epi64(v, shift), _mm512_set1_epi8(0x0F));
}

/*
 * Shared end of a Q4_K/Q5_K block: acc += dx*d * sumi and, in lanes 8-15,
 * dx*dmin * summ, where summ = sum_j m_j * (bsums[2j] + bsums[2j+1]).
 * Folding sumi to 8 lanes puts both terms in one register, so one convert
 * and one FMA serve both; the min lanes are subtracted in k_reduce. d and
 * dmin are adjacent f16s and convert together.
 */
static inline __m512 k_finish(__m512i sumi, __m128i scm, const void *blk,
                              const struct wk_block_q8_k *b, __m512 acc)
{
    __m256i m16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scm, scm)); /* m0 m0 m1 m1 .. m7 m7 */
    __m256i summ = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)b->bsums), m16);
    __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));
    __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(s8), summ, 1);
    uint32_t dd; /* d and dmin: the first 4 bytes of a Q4_K or Q5_K block */
    memcpy(&dd, blk, 4);
    __m128 f = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128((int)dd)), _mm_set1_ps(b->d));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(both), spread_pair(f), acc);
}

/* Sum of lanes 0-7 (the sumi terms) minus lanes 8-15 (the min terms). */
static inline float k_reduce(__m512 acc)
{
    return wk__avx512_hsum256(
        _mm256_sub_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1)));
}

/*
 * Q4_K · Q8_K. Per K block: sumi = sum_j sc_j * (q_j · x_j) in int32
 * (dot4_scaled_acc folds sc_j in), summ as in k_finish, and the block adds
 * dx * (d * sumi - dmin * summ). Bounds: a lane gathers 4 groups of
 * 63 * (4 * 15 * 128), below 2^24, so the float conversion is exact.
 */
static float vec_dot_q4_k_q8_k(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q4_k *a = w;
    const struct wk_block_q8_k *b = x;
    const __m512i idx[4] = {K_IDX2(0), K_IDX2(2), K_IDX2(4), K_IDX2(6)};
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        __m128i scm = wk__avx512_k_scales_mins(a[i].scales);
        __m512i sc = scale_layout_u(_mm512_cvtepu8_epi32(scm)); /* lanes 0-7: sc0..sc7 */
        __m512i s = _mm512_setzero_si512();
        for (int g = 0; g < 4; g++)
            s = dot4_scaled_acc(s, load_k_group(a[i].qs + 32 * g),
                                _mm512_loadu_si512(b[i].qs + 64 * g),
                                _mm512_permutexvar_epi32(idx[g], sc));
        acc = k_finish(s, scm, &a[i], &b[i], acc);
    }
    return k_reduce(acc);
}

/*
 * Q5_K · Q8_K: Q4_K plus a fifth bit per element. Element r of sub-block
 * 2g (2g+1) takes bit 2g (2g+1) of qh[r]. With qh in both halves of a
 * register, rotating each 64-bit lane left by 4 (low half) or 3 (high)
 * brings bit 0 (1) of every byte to bit 4; each later group rotates right
 * by 2 more. A rotation loses no bits, and bit 4 of each byte then always
 * comes from that same byte of qh. One ternary-logic op ORs bit 4 in.
 */
static float vec_dot_q5_k_q8_k(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q5_k *a = w;
    const struct wk_block_q8_k *b = x;
    const __m512i idx[4] = {K_IDX2(0), K_IDX2(2), K_IDX2(4), K_IDX2(6)};
    const __m512i c16 = _mm512_set1_epi8(16);
    const __m512i rot0 = _mm512_set_epi64(3, 3, 3, 3, 4, 4, 4, 4);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        __m128i scm = wk__avx512_k_scales_mins(a[i].scales);
        __m512i sc = scale_layout_u(_mm512_cvtepu8_epi32(scm));
        __m512i hb = _mm512_rolv_epi64(
            _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)a[i].qh)), rot0);
        __m512i s = _mm512_setzero_si512();
        for (int g = 0; g < 4; g++) {
            /* 0xF8: A | (B & C), the nibble or bit 4 of hb */
            __m512i q = _mm512_ternarylogic_epi32(load_k_group(a[i].qs + 32 * g), hb, c16, 0xF8);
            s = dot4_scaled_acc(s, q, _mm512_loadu_si512(b[i].qs + 64 * g),
                                _mm512_permutexvar_epi32(idx[g], sc));
            hb = _mm512_ror_epi64(hb, 2);
        }
        acc = k_finish(s, scm, &a[i], &b[i], acc);
    }
    return k_reduce(acc);
}

/*
 * Q6_K · Q8_K. Each 128-element half h holds four 32-element quarters:
 * quarters 0/1 are the low nibbles of ql[0..63] with qh bits 0-1 / 2-3,
 * quarters 2/3 the high nibbles with qh bits 4-5 / 6-7 (qh[0..31] shared).
 * A register takes two quarters, so the 64 ql bytes load once and the qh
 * bits for its two halves come from one variable shift of qh broadcast to
 * both halves. The values are q in [0, 63]; the -32 offset becomes
 * -32 * sum_j sc_j * bsums[j], one madd on the Q8_K block sums.
 * Bounds: dot4 lane sums <= 4 * 63 * 127 < 2^15 (vpdpwssd's int16 input);
 * int32 lane totals stay below 2^26, so their float conversion rounds, if
 * at all, in the 25th significant bit.
 */
static float vec_dot_q6_k_q8_k(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q6_k *a = w;
    const struct wk_block_q8_k *b = x;
    const __m512i idx[4] = {K_IDX4(0), K_IDX4(4), K_IDX4(8), K_IDX4(12)};
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30);
    /* quarters 0|1: qh bits 0-1 | 2-3 to bits 4-5: left by 4 | 2;
     * quarters 2|3: bits 4-5 | 6-7: right by 0 | 2 */
    const __m512i shl01 = _mm512_set_epi64(2, 2, 2, 2, 4, 4, 4, 4);
    const __m512i shr23 = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        __m128i sc8 = _mm_loadu_si128((const __m128i *)a[i].scales);
        __m512i sc = scale_layout(_mm512_cvtepi8_epi32(sc8));
        const int8_t *y = b[i].qs;
        __m512i s[2];
        for (int h = 0; h < 2; h++) {
            __m512i ql = _mm512_loadu_si512(a[i].ql + 64 * h);
            __m512i qh =
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(a[i].qh + 32 * h)));
            /* 0xEC: (A & C) | B, i.e. nibble | top bits */
            __m512i q01 = _mm512_ternarylogic_epi32(
                ql, _mm512_and_si512(_mm512_sllv_epi64(qh, shl01), m2), m4, 0xEC);
            __m512i q23 = _mm512_ternarylogic_epi32(
                _mm512_srli_epi16(ql, 4), _mm512_and_si512(_mm512_srlv_epi64(qh, shr23), m2), m4,
                0xEC);
            __m512i t =
                dot4_scaled_acc(_mm512_setzero_si512(), q01, _mm512_loadu_si512(y + 128 * h),
                                _mm512_permutexvar_epi32(idx[2 * h], sc));
            s[h] = dot4_scaled_acc(t, q23, _mm512_loadu_si512(y + 128 * h + 64),
                                   _mm512_permutexvar_epi32(idx[2 * h + 1], sc));
        }
        /* offset: 32 * sum_j sc_j * bsums[j], pairs of j per int32 lane */
        __m256i off = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)b[i].bsums),
                                        _mm256_cvtepi8_epi16(sc8));
        __m512i sumi = _mm512_add_epi32(s[0], s[1]);
        sumi = _mm512_sub_epi32(sumi, _mm512_zextsi256_si512(_mm256_slli_epi32(off, 5)));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(b[i].d * F16(a[i].d)), acc);
    }
    return _mm512_reduce_add_ps(acc);
}

void WK_AVX512_FILL_DOT(struct wk_cpu_kernels *k)
{
    k->vec_dot_q[WK_DTYPE_Q8_0] = vec_dot_q8_0_q8_0;
    k->vec_dot_q[WK_DTYPE_Q4_0] = vec_dot_q4_0_q8_0;
    k->vec_dot_q[WK_DTYPE_Q5_0] = vec_dot_q5_0_q8_0;
    k->vec_dot_q[WK_DTYPE_Q4_1] = vec_dot_q4_1_q8_1;
    k->vec_dot_q[WK_DTYPE_Q5_1] = vec_dot_q5_1_q8_1;
    k->vec_dot_q[WK_DTYPE_Q4_K] = vec_dot_q4_k_q8_k;
    k->vec_dot_q[WK_DTYPE_Q5_K] = vec_dot_q5_k_q8_k;
    k->vec_dot_q[WK_DTYPE_Q6_K] = vec_dot_q6_k_q8_k;
}
