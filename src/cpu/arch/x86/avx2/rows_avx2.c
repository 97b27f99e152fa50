/*
 * rows_avx2.c - the decode matvec kernels of the table (vec_dot_rows):
 * out[r] = dot(row r of a weight matrix, x) for n_rows rows w_stride bytes
 * apart, x in f32, for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K and
 * F32, F16, BF16. Each thread calls one of these once for its whole range
 * of rows; every weight byte is read once and x (a few KB) stays in L1.
 *
 * The single-row kernels of fdot_avx2.c spend, per 32 weights, 4 byte
 * shuffles, 4 conversions and 4 FMAs on the weights themselves, and about
 * as much again on the block: an f16 scale broadcast and converted
 * (vpbroadcastw + vcvtph2ps, ~1.3 cycles of the FP pipes on Zen 4), a
 * vpermd to put the weights back in element order, a second FMA per 8
 * weights for the types with a min. These kernels move that work out:
 *
 * - x is prepared once per call (struct xprep): a copy in the order in
 *   which vpshufb hands out the weights ("P32", below), so the weights
 *   are never permuted, and the sum of each 32-element block, so the min
 *   or offset of a block leaves the inner loop: sum_l (d q_l + m) x_l =
 *   d sum_l q_l x_l + m sum_l x_l. Q4_0 and Q5_0 build q - 8 and q - 16 as
 *   int8 directly; Q4_1/Q5_1 pay one 4-lane FMA per four blocks for the
 *   min; Q4_K/Q5_K one 8-lane FMA per super-block.
 * - The f16 scales of four blocks are gathered in a general register and
 *   converted by one vcvtph2ps (avx2_f16x4).
 *
 * Rows go one at a time. Reading 2-4 rows side by side (to share each
 * load of x) was measured and dropped: the loads of x are memory operands
 * of the FMAs and cost no FP-pipe slot, so sharing them saved nothing,
 * while several short streams side by side defeat the hardware
 * prefetcher, which follows rows read one after another as one long
 * stream: from memory the grouped kernels ran at half their L2 speed.
 * Software prefetch won back only part of it (into L1, the misses L1 can
 * track capped memory-bound types at ~12 GB/s; into L2, compute-bound
 * types waited on L2). One row at a time is also trivially independent
 * of how a caller splits the rows.
 *
 * Measured (one thread, Zen 4 at ~3.5 GHz, cycles per 32 weights, rows of
 * 2048 in L2, against the fdot_avx2.c kernel in a loop): Q4_1 8.5 vs 10.3,
 * Q4_K 8.2 vs 9.8, Q5_0 10.5 vs 11.7, Q6_K 9.6 vs 9.7, Q8_0 at parity
 * (~15-18 GB/s from memory, near the ~22 GB/s read bandwidth of one core).
 *
 * The "P32" order: the quants of a 32-element block are built as 32 bytes,
 * elements 0-15 in the low 128-bit lane and 16-31 in the high one (the
 * natural result of splitting 16 nibble bytes, and the layout of 32 K-quant
 * bytes). vpshufb step k (0-3) moves bytes 4k..4k+3 of each lane to the top
 * of the eight int32 lanes, so it yields elements 4k..4k+3 and 16+4k..
 * 16+4k+3; vcvtdq2ps then gives q * 2^24 exactly, sign included. x is
 * permuted to match: xp[8k + i] = x[4k + i], xp[8k + 4 + i] =
 * x[16 + 4k + i] within each block. The 2^24 is taken out of each row's
 * total at the end (an exact scaling).
 *
 * Rounding differs from wk_ref_vec_dot_<type>_f32 (src/tensor/quant_ref.c)
 * only in order and in where block factors are applied; the result stays
 * well within the table's 1e-5 of sum |w x|.
 * Block layouts: src/tensor/wk_tensor.h.
 */
#include "kernels_avx2.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Elements of x prepared at a time; longer rows go in chunks of this size
 * (a multiple of 256), each adding to out[]. */
#define CHUNK 8192

/*
 * x of one chunk, prepared: xp in P32 order, and per 32-element block b
 * the sum of x times 2^24 (sxs[b], zero past the end so a batch of
 * blocks may read it whole). The 2^24 matches the scale of the quant sums
 * (q * 2^24, see top_ps); each row's total is scaled back once at the end.
 * About 33 KB of stack.
 */
struct xprep {
    const float *x; /* the chunk of x as given (borrowed) */
    _Alignas(32) float xp[CHUNK];
    float sxs[CHUNK / 32 + 8];
};

static void xprep_init(struct xprep *p, const float *x, int64_t n, int raw_x_only)
{
    p->x = x;
    if (raw_x_only)
        return;
    for (int64_t b = 0; b < n / 32; b++) {
        const float *s = x + 32 * b;
        __m256 x0 = _mm256_loadu_ps(s), x1 = _mm256_loadu_ps(s + 8);
        __m256 x2 = _mm256_loadu_ps(s + 16), x3 = _mm256_loadu_ps(s + 24);
        float *d = p->xp + 32 * b;
        _mm256_store_ps(d, _mm256_permute2f128_ps(x0, x2, 0x20));
        _mm256_store_ps(d + 8, _mm256_permute2f128_ps(x0, x2, 0x31));
        _mm256_store_ps(d + 16, _mm256_permute2f128_ps(x1, x3, 0x20));
        _mm256_store_ps(d + 24, _mm256_permute2f128_ps(x1, x3, 0x31));
        p->sxs[b] = avx2_hsum_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3))) *
                    0x1p24f;
    }
    for (int i = 0; i < 8; i++)
        p->sxs[n / 32 + i] = 0.0f;
}

/* vpshufb control for P32 step k: int32 lane i of each 128-bit half gets
 * byte 4k+i of that half in bits 24-31, zeros below. */
static inline __m256i top_ctl(int k)
{
    const int z = 0x808080, b = 4 * k;
    return _mm256_setr_epi32(b << 24 | z, (b + 1) << 24 | z, (b + 2) << 24 | z, (b + 3) << 24 | z,
                             b << 24 | z, (b + 1) << 24 | z, (b + 2) << 24 | z, (b + 3) << 24 | z);
}

/* Step k of the 32 bytes q as 8 floats q * 2^24 (P32 order). */
static inline __m256 top_ps(__m256i q, int k)
{
    return _mm256_cvtepi32_ps(_mm256_shuffle_epi8(q, top_ctl(k)));
}

/* sum over a 32-element block of q * x * 2^24, as 8 lanes. */
static inline __m256 block_dot(__m256i q, const float *xp)
{
    __m256 s = _mm256_mul_ps(top_ps(q, 0), _mm256_load_ps(xp));
    s = _mm256_fmadd_ps(top_ps(q, 1), _mm256_load_ps(xp + 8), s);
    s = _mm256_fmadd_ps(top_ps(q, 2), _mm256_load_ps(xp + 16), s);
    return _mm256_fmadd_ps(top_ps(q, 3), _mm256_load_ps(xp + 24), s);
}

static inline float hsum128(__m128 v)
{
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));
}

/* out = v on the first chunk, out += v on later ones. */
static inline void put(float *out, float v, int first)
{
    *out = first ? v : *out + v;
}

/* The driver: x prepared in chunks, then one row at a time. ROW(nb, w, p)
 * returns the chunk's part of the dot product of the row at w; BLK and
 * BLK_BYTES are the type's block size in elements and bytes; RAW is 1 for
 * a type that reads only x as given (p->x), which needs no chunks. */
#define ROWS_DRIVER(name, ROW, BLK, BLK_BYTES, RAW)                                                \
    static void name(int64_t n, const void *w, size_t stride, const float *x, float *out,          \
                     int64_t n_rows)                                                               \
    {                                                                                              \
        struct xprep p;                                                                            \
        const int64_t chunk = (RAW) ? n : CHUNK;                                                   \
        for (int64_t c0 = 0; c0 < n; c0 += chunk) {                                                \
            int64_t cn = WK_MIN(chunk, n - c0);                                                    \
            xprep_init(&p, x + c0, cn, RAW);                                                       \
            const uint8_t *wc = (const uint8_t *)w + c0 / (BLK) * (BLK_BYTES);                     \
            for (int64_t r = 0; r < n_rows; r++)                                                   \
                put(out + r, ROW(cn / (BLK), wc + r * stride, &p), c0 == 0);                       \
        }                                                                                          \
    }

/* ------------------------------------------- Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 */

/*
 * The 32-element types in one kernel, the type a constant. Quants are
 * built as 32 bytes in P32 layout: Q4_0 and Q5_0 as q - 8 and q - 16 in
 * int8, so a block is d * sum q x; Q4_1 and Q5_1 as q unsigned, plus
 * m * sum x. Q8_0 instead sign-extends its int8 straight from memory
 * against x in natural order (vpmovsxbd with a memory operand: as fast
 * as a load and vpshufb, and no prepared x). Blocks go in batches of four: their d
 * (and m) converted at once, d broadcast from a small array, the four min
 * terms one 4-lane FMA against four block sums of x. Blocks alternate
 * between two accumulators, so a row has two FMA chains.
 */
enum b32 { T_Q8_0, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1 };

/* Byte offsets of qh and qs in a block, and the block size. */
#define B32_QH(t) ((t) == T_Q5_0 ? 2 : 4)
#define B32_QS(t) ((t) == T_Q8_0 || (t) == T_Q4_0 ? 2 : (t) == T_Q4_1 ? 4 : (t) == T_Q5_0 ? 6 : 8)
#define B32_BYTES(t)                                                                               \
    ((t) == T_Q8_0 ? 34 : (t) == T_Q4_0 ? 18 : (t) == T_Q4_1 ? 20 : (t) == T_Q5_0 ? 22 : 24)
#define B32_HAS_M(t) ((t) == T_Q4_1 || (t) == T_Q5_1)

static inline __m256i b32_quants(enum b32 t, const uint8_t *blk)
{
    __m256i q = avx2_nibbles_32(blk + B32_QS(t));
    switch (t) {
    case T_Q4_0:
        return _mm256_sub_epi8(q, _mm256_set1_epi8(8));
    case T_Q5_0: /* nibble | 0xF0 where the fifth bit is clear: nibble - 16 */
        return _mm256_or_si256(q, _mm256_andnot_si256(avx2_bits_to_bytes(blk + B32_QH(t)),
                                                      _mm256_set1_epi8((char)0xF0)));
    case T_Q5_1:
        return _mm256_or_si256(q, _mm256_and_si256(avx2_bits_to_bytes(blk + B32_QH(t)),
                                                   _mm256_set1_epi8(0x10)));
    default: /* T_Q4_1 */
        return q;
    }
}

/* 8 int8 straight from memory as floats (Q8_0). */
static inline __m256 i8x8_ps(const uint8_t *q)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)q)));
}

/* sum over one block of q * x (times 2^24 except for Q8_0), as 8 lanes. */
static inline __m256 b32_dot(enum b32 t, const uint8_t *blk, const struct xprep *p, int64_t b)
{
    if (t != T_Q8_0)
        return block_dot(b32_quants(t, blk), p->xp + 32 * b);
    const uint8_t *q = blk + 2;
    const float *x = p->x + 32 * b;
    __m256 s = _mm256_mul_ps(i8x8_ps(q), _mm256_loadu_ps(x));
    s = _mm256_fmadd_ps(i8x8_ps(q + 8), _mm256_loadu_ps(x + 8), s);
    s = _mm256_fmadd_ps(i8x8_ps(q + 16), _mm256_loadu_ps(x + 16), s);
    return _mm256_fmadd_ps(i8x8_ps(q + 24), _mm256_loadu_ps(x + 24), s);
}

/* cnt (1-4, a constant) blocks from block b on into a0/a1 (d * sum) and
 * am (m * sum x). */
ALWAYS_INLINE void b32_batch(enum b32 t, int cnt, const uint8_t *w, int64_t b,
                             const struct xprep *p, __m256 *a0, __m256 *a1, __m128 *am)
{
    const size_t bb = B32_BYTES(t);
    const uint8_t *blk = w + b * bb;
    float d[4];
    _mm_storeu_ps(d, avx2_f16x4(blk, bb, cnt));
    if (B32_HAS_M(t))
        *am = _mm_fmadd_ps(avx2_f16x4(blk + 2, bb, cnt), _mm_loadu_ps(p->sxs + b), *am);
#pragma GCC unroll 4
    for (int k = 0; k < cnt; k++) {
        __m256 s = b32_dot(t, blk + k * bb, p, b + k);
        if (k % 2 == 0)
            *a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(&d[k]), s, *a0);
        else
            *a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(&d[k]), s, *a1);
    }
}

ALWAYS_INLINE float b32_row(enum b32 t, int64_t nb, const uint8_t *w, const struct xprep *p)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    __m128 am = _mm_setzero_ps();
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4)
        b32_batch(t, 4, w, b, p, &a0, &a1, &am);
    switch (nb - b) {
    case 3: b32_batch(t, 3, w, b, p, &a0, &a1, &am); break;
    case 2: b32_batch(t, 2, w, b, p, &a0, &a1, &am); break;
    case 1: b32_batch(t, 1, w, b, p, &a0, &a1, &am); break;
    default: break;
    }
    /* the block sums and min terms are scaled by 2^24 except for Q8_0 */
    float s = avx2_hsum_ps(_mm256_add_ps(a0, a1));
    if (t == T_Q8_0)
        return s;
    return (s + hsum128(am)) * 0x1p-24f;
}

#define Q8_0_ROW(...) b32_row(T_Q8_0, __VA_ARGS__)
#define Q4_0_ROW(...) b32_row(T_Q4_0, __VA_ARGS__)
#define Q4_1_ROW(...) b32_row(T_Q4_1, __VA_ARGS__)
#define Q5_0_ROW(...) b32_row(T_Q5_0, __VA_ARGS__)
#define Q5_1_ROW(...) b32_row(T_Q5_1, __VA_ARGS__)
ROWS_DRIVER(rows_q8_0, Q8_0_ROW, 32, 34, 1)
ROWS_DRIVER(rows_q4_0, Q4_0_ROW, 32, 18, 0)
ROWS_DRIVER(rows_q4_1, Q4_1_ROW, 32, 20, 0)
ROWS_DRIVER(rows_q5_0, Q5_0_ROW, 32, 22, 0)
ROWS_DRIVER(rows_q5_1, Q5_1_ROW, 32, 24, 0)

/* ------------------------------------------------------------- Q4_K, Q5_K */

/*
 * Per super-block: d and dmin converted together; the 8 sub-block factors
 * d * sc_j go to a small array (broadcast from there), and the min term
 * -dmin * sum_j m_j sum x_j is one 8-lane FNMA against the eight block
 * sums of x. The quants of group g (64 elements) are one 32-byte load:
 * low nibbles are sub-block 2g, high ones 2g+1, each in P32 layout; Q5_K's
 * fifth bits (bits 2g and 2g+1 of the qh bytes, which follow the same byte
 * order) are shifted to bit 4 by a constant per g. Low sub-blocks go to
 * one accumulator, high ones to another.
 */
static inline __m256i shift_bits_to_4(__m256i h, int bit)
{
    /* 16-bit shifts: bit 4 of each byte still comes from its own byte */
    __m256i v = bit <= 4 ? _mm256_slli_epi16(h, 4 - bit) : _mm256_srli_epi16(h, bit - 4);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* Two adjacent f16 (d, dmin) as floats in lanes 0 and 1. */
static inline __m128 f16x2(const void *p)
{
    int32_t u;
    memcpy(&u, p, 4);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(u));
}

ALWAYS_INLINE float k4_row(int q5, int64_t nb, const uint8_t *w, const struct xprep *p)
{
    const size_t bb = q5 ? sizeof(struct wk_block_q5_k) : sizeof(struct wk_block_q4_k);
    const size_t qs_off = q5 ? offsetof(struct wk_block_q5_k, qs) : offsetof(struct wk_block_q4_k, qs);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, am = a0;
    for (int64_t b = 0; b < nb; b++) {
        /* d, dmin and scales sit at the same offsets in both types */
        const struct wk_block_q4_k *blk = (const void *)(w + b * bb);
        const uint8_t *qs = w + b * bb + qs_off;
        const float *xp = p->xp + 256 * b;
        __m128 dd = f16x2(&blk->d);
        __m128i scmin = avx2_q4_k_scales(blk->scales);
        __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(scmin));
        __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(scmin, scmin)));
        float dsc[8];
        _mm256_storeu_ps(dsc, _mm256_mul_ps(_mm256_broadcastss_ps(dd), sc));
        am = _mm256_fnmadd_ps(_mm256_mul_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(dd)), mn),
                              _mm256_loadu_ps(p->sxs + 8 * b), am);
        __m256i h = q5 ? _mm256_loadu_si256(
                             (const __m256i *)(w + b * bb + offsetof(struct wk_block_q5_k, qh)))
                       : _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * g));
            __m256i lo = _mm256_and_si256(v, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            if (q5) {
                lo = _mm256_or_si256(lo, shift_bits_to_4(h, 2 * g));
                hi = _mm256_or_si256(hi, shift_bits_to_4(h, 2 * g + 1));
            }
            a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(&dsc[2 * g]), block_dot(lo, xp + 64 * g), a0);
            a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(&dsc[2 * g + 1]),
                                 block_dot(hi, xp + 64 * g + 32), a1);
        }
    }
    return avx2_hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), am)) * 0x1p-24f;
}

#define Q4_K_ROW(...) k4_row(0, __VA_ARGS__)
#define Q5_K_ROW(...) k4_row(1, __VA_ARGS__)
ROWS_DRIVER(rows_q4_k, Q4_K_ROW, 256, sizeof(struct wk_block_q4_k), 0)
ROWS_DRIVER(rows_q5_k, Q5_K_ROW, 256, sizeof(struct wk_block_q5_k), 0)

/* ------------------------------------------------------------------- Q6_K */

/*
 * Quarters of 32 elements (quarter i of half h: element 128h + 32i + l is
 * byte l of the quarter) are built as int8 q - 32 from ql and qh, then
 * dotted in P32 order. The low lane of a quarter is one 16-element
 * sub-block and the high lane the next, so the factor vector is
 * [f(sb) x4, f(sb+1) x4]: one vpermps of the eight factors of that half.
 * Halves go to separate accumulators.
 */
static inline float q6_k_row(int64_t nb, const uint8_t *w, const struct xprep *p)
{
    const __m256i k32 = _mm256_set1_epi8(32);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < nb; b++) {
        const struct wk_block_q6_k *blk = (const void *)(w + b * sizeof(struct wk_block_q6_k));
        __m256 d = _mm256_set1_ps(avx2_f16(blk->d));
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m256 f = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                            _mm_loadl_epi64((const __m128i *)(blk->scales + 8 * h)))));
            __m256i l0 = _mm256_loadu_si256((const __m256i *)(blk->ql + 64 * h));
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(blk->ql + 64 * h + 32));
            __m256i hh = _mm256_loadu_si256((const __m256i *)(blk->qh + 32 * h));
            __m256i q[4];
            wk__avx2_q6k_quarters(l0, l1, hh, q);
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                __m256 fv = _mm256_permutevar8x32_ps(
                    f, _mm256_setr_epi32(2 * i, 2 * i, 2 * i, 2 * i, 2 * i + 1, 2 * i + 1, 2 * i + 1,
                                         2 * i + 1));
                __m256 s = block_dot(_mm256_sub_epi8(q[i], k32), p->xp + 256 * b + 128 * h + 32 * i);
                acc[h] = _mm256_fmadd_ps(fv, s, acc[h]);
            }
        }
    }
    return avx2_hsum_ps(_mm256_add_ps(acc[0], acc[1])) * 0x1p-24f;
}

ROWS_DRIVER(rows_q6_k, q6_k_row, 256, sizeof(struct wk_block_q6_k), 0)

/* ------------------------------------------------------- F32, F16, BF16 */

/*
 * Plain float rows, x as given: 8 weights per load (converted for F16 and
 * BF16), four accumulators for the FMA latency, a tail of n % 8 in scalar
 * code as the single-row kernels do.
 */
enum fl { FL_F32, FL_F16, FL_BF16 };

static inline __m256 fl_load8(enum fl t, const uint8_t *row, int64_t i)
{
    if (t == FL_F32)
        return _mm256_loadu_ps((const float *)row + i);
    if (t == FL_F16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const wk_f16 *)row + i)));
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const wk_bf16 *)row + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

static inline float fl_one(enum fl t, const uint8_t *row, int64_t i)
{
    if (t == FL_F32)
        return ((const float *)row)[i];
    if (t == FL_F16)
        return avx2_f16(((const wk_f16 *)row)[i]);
    return wk_bf16_to_f32(((const wk_bf16 *)row)[i]);
}

ALWAYS_INLINE float fl_row(enum fl t, int64_t n, const uint8_t *w, const float *x)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(fl_load8(t, w, i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(fl_load8(t, w, i + 8), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(fl_load8(t, w, i + 16), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(fl_load8(t, w, i + 24), _mm256_loadu_ps(x + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(fl_load8(t, w, i), _mm256_loadu_ps(x + i), a0);
    float s = avx2_hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++)
        s += fl_one(t, w, i) * x[i];
    return s;
}

#define FL_ROWS(name, T)                                                                           \
    static void name(int64_t n, const void *w, size_t stride, const float *x, float *out,          \
                     int64_t n_rows)                                                               \
    {                                                                                              \
        for (int64_t r = 0; r < n_rows; r++)                                                       \
            out[r] = fl_row(T, n, (const uint8_t *)w + r * stride, x);                             \
    }
FL_ROWS(rows_f32, FL_F32)
FL_ROWS(rows_f16, FL_F16)
FL_ROWS(rows_bf16, FL_BF16)

/* -------------------------------------------------------------- the table */

void wk__avx2_fill_rows(struct wk_cpu_kernels *k)
{
    k->vec_dot_rows[WK_DTYPE_F32] = rows_f32;
    k->vec_dot_rows[WK_DTYPE_F16] = rows_f16;
    k->vec_dot_rows[WK_DTYPE_BF16] = rows_bf16;
    k->vec_dot_rows[WK_DTYPE_Q8_0] = rows_q8_0;
    k->vec_dot_rows[WK_DTYPE_Q4_0] = rows_q4_0;
    k->vec_dot_rows[WK_DTYPE_Q4_1] = rows_q4_1;
    k->vec_dot_rows[WK_DTYPE_Q5_0] = rows_q5_0;
    k->vec_dot_rows[WK_DTYPE_Q5_1] = rows_q5_1;
    k->vec_dot_rows[WK_DTYPE_Q4_K] = rows_q4_k;
    k->vec_dot_rows[WK_DTYPE_Q5_K] = rows_q5_k;
    k->vec_dot_rows[WK_DTYPE_Q6_K] = rows_q6_k;
}
