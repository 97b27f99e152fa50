/*
 * rows_x16_avx2.c - the AVX2 decode dots with 16-bit activations
 * (vec_dot_rows_x16 and vec_dot_rows_x16_tokens, wk_cpu.h) for Q4_0,
 * Q4_1, Q5_0, Q5_1 (groups of four rows, below) and Q8_0, Q4_K, Q6_K (one
 * row at a time, further down). AVX2 + FMA + F16C only; the AVX-512
 * version (avx512/rows_x16_template.h) is the model. (A first 16-bit
 * Q8_0, dropped on this Zen 3 kind of CPU, ran slower than the
 * f32-activation rows of rows_avx2.c, 15.5 GB/s against 18.9 in L2; the
 * one below, one row at a time with four blocks' d_w converted at once,
 * is faster: see there.)
 *
 * Spec: rows_x16_ref.c. Per call (per column chunk of long rows), x is
 * quantized once per 32-element block (x16_prep) into hi and lo int8
 * parts, each 16-byte half of a block replicated into both 128-bit lanes
 * of a 32-byte line, plus the block's float scale d / 256 and, next to
 * it, the float sum (d / 256) sum(256 hi + lo) times -8 (Q4_0), -16
 * (Q5_0) or 1 (Q4_1, Q5_1), so that one product with [d_w, m] or
 * [d_w, d_w] gives a row's block factor and its c_w term at once.
 *
 * Rows go in groups of four, two to a register: row 2p + r in 128-bit
 * lane r of register p. A row's 16 bytes of nibbles (one block) are
 * loaded into its lane, split into low nibbles (elements 0-15) and high
 * nibbles (16-31) by an and and a shift, Q5's fifth bits or-ed in (qh of
 * both rows in one 64-bit word, spread to bytes by a shuffle and tested
 * with a compare). Four vpmaddubsw (u8 q <= 31 times s8 x: a pair sums to
 * at most 2 * 31 * 127, so no saturation, and two such pairs still fit
 * int16) give S_hi and S_lo as int16 pairs; vpmaddwd against 256 and 1
 * turns them into int32 with S = 256 S_hi + S_lo exact. One conversion
 * and one FMA with the rows' d_w times the block's scale (spread to each
 * register's lanes by one vpermps) add the block into the register's
 * float accumulator. The four rows' d_w and m are converted by one
 * vcvtph2ps, multiplied by the block's pair of x factors in one multiply,
 * and the c_w terms of all four rows summed by one add.
 *
 * Measured (one thread, Zen 4 at ~3.5 GHz, rows of 576 and 1536 in L2):
 * Q4_0/Q4_1 ~1.05 ns per 32 weights, Q5_0/Q5_1 ~1.57, against 2.0 (Q4_1)
 * and 2.5 (Q5_0) for the f32-activation kernels of rows_avx2.c. Groups
 * of two rows ran 10-15% slower, groups of eight no faster; without the
 * software prefetch, rows streamed from memory ran 20-40% slower.
 *
 * Each row's arithmetic is the same whatever group it falls in and
 * however many rows share the group (a lone row's register repeats it in
 * the second lane, computed and dropped), so results do not depend on how
 * a caller splits the rows. No row past n_rows - 1 is ever read.
 */
#include "kernels_avx2.h"

#include <stdbool.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))
/* Loops over arrays of registers must unroll completely, or the arrays
 * live in memory; -O2 alone does not unroll them. */
#define UNROLL _Pragma("GCC unroll 16")

/* Bytes of prepared x per 32-element block: hi[0:16], hi[16:32],
 * lo[0:16], lo[16:32], each replicated to 32 bytes. */
#define X16_LINE_BYTES 128
/* Column chunk: x of up to 9216 elements is prepared in one go (36 KiB of
 * lines), so that rows of up to 9216 (Qwen2.5 1.5B's ffn_down: 8960) are
 * read in one contiguous run. With 2048-element chunks (the AVX-512
 * kernels' choice, whose R16 rows interleave 16 rows) each row was read in
 * pieces of ~1.2-1.7 KB a stride apart, which the hardware prefetchers do
 * not follow: at 2 threads from memory, Q4_K and Q6_K rows of 8960 ran at
 * 2.3 GB/s (15-21% of a plain read; bench/rows-bandwidth), now 10-12
 * (65-80%); Q4_1 61% -> 91%. The unit tests' n = 9248 and more run the
 * multi-chunk path. */
#define X16_CHUNK          9216
#define X16_SCRATCH_FLOATS (X16_CHUNK / 32 * (X16_LINE_BYTES / 4 + 2))

/*
 * Software prefetch, as in avx512/dot_rows.h: four rows read side by side
 * are short streams the hardware prefetchers do not follow well, so each
 * group prefetches into L2 the same bytes of a group PF_DIST bytes
 * (rounded up to whole groups) further on, each line once. Prefetches
 * never fault, so running past the last row is harmless.
 */
#define PF_DIST 16384

/* dist bytes rounded up to whole groups of grp bytes: how far ahead a
 * group (or a lone row) prefetches the same bytes of a later one. */
static inline size_t pf_ahead(size_t dist, size_t grp) { return (dist + grp - 1) / grp * grp; }

ALWAYS_INLINE void rows_prefetch(const int R, const uint8_t *w, size_t stride, size_t pf,
                                 size_t *next, size_t end)
{
    while (*next < end) {
        UNROLL
        for (int r = 0; r < R; r++)
            _mm_prefetch((const char *)(w + r * stride + pf + *next), _MM_HINT_T1);
        *next += 64;
    }
}


/*
 * Block x [32] quantized: hi and lo bytes in element order, d / 256 and
 * sum(256 hi + lo) (unless sum_out is NULL). The arithmetic of hi and lo is wk__x16_quantize_ref's,
 * operation for operation (vroundps to nearest even as nearbyintf; vmaxps
 * returns its second operand for a NaN, as fmaxf returns the number; no
 * FMA contraction), so hi and lo are the reference's.
 */
ALWAYS_INLINE void x16_quant_block(const float *x, __m256i *h8_out, __m256i *l8_out, float *dx_out,
                                   int32_t *sum_out)
{
    const __m256 sign = _mm256_set1_ps(-0.0f), lim = _mm256_set1_ps(127.0f);
    const __m256 nlim = _mm256_set1_ps(-127.0f), k256 = _mm256_set1_ps(256.0f);
    /* vpackss leaves 4-byte groups in the order 0 2 4 6 1 3 5 7 */
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    __m256 xv[4];
    UNROLL
    for (int k = 0; k < 4; k++)
        xv[k] = _mm256_loadu_ps(x + 8 * k);
    const __m256 m01 = _mm256_max_ps(_mm256_andnot_ps(sign, xv[0]), _mm256_andnot_ps(sign, xv[1]));
    const __m256 m23 = _mm256_max_ps(_mm256_andnot_ps(sign, xv[2]), _mm256_andnot_ps(sign, xv[3]));
    const float amax = avx2_hmax_ps(_mm256_max_ps(m01, m23));
    int nan = 0;
    UNROLL
    for (int k = 0; k < 4; k++) nan |= _mm256_movemask_ps(_mm256_cmp_ps(xv[k], xv[k], _CMP_UNORD_Q));
    const float d = wk_x16_scale(amax, nan != 0), id = d > 0 ? 1.0f / d : 0.0f;
    const __m256 vd = _mm256_set1_ps(d), vid = _mm256_set1_ps(id);
    __m256i hv[4], lv[4];
    __m256i isum = _mm256_setzero_si256();
    UNROLL
    for (int k = 0; k < 4; k++) {
        __m256 q = _mm256_round_ps(_mm256_mul_ps(xv[k], vid), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q = _mm256_min_ps(_mm256_max_ps(q, nlim), lim);
        const __m256 p = _mm256_mul_ps(q, vd);
        const __m256 r = _mm256_mul_ps(_mm256_sub_ps(xv[k], p), vid);
        __m256 l = _mm256_round_ps(_mm256_mul_ps(r, k256), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        l = _mm256_min_ps(_mm256_max_ps(l, nlim), lim);
        hv[k] = _mm256_cvtps_epi32(q);
        lv[k] = _mm256_cvtps_epi32(l);
        isum = _mm256_add_epi32(isum, _mm256_add_epi32(_mm256_slli_epi32(hv[k], 8), lv[k]));
    }
    const __m256i h8 = _mm256_packs_epi16(_mm256_packs_epi32(hv[0], hv[1]), _mm256_packs_epi32(hv[2], hv[3]));
    const __m256i l8 = _mm256_packs_epi16(_mm256_packs_epi32(lv[0], lv[1]), _mm256_packs_epi32(lv[2], lv[3]));
    *h8_out = _mm256_permutevar8x32_epi32(h8, order);
    *l8_out = _mm256_permutevar8x32_epi32(l8, order);
    *dx_out = d / 256.0f;
    if (sum_out) *sum_out = avx2_hsum_epi32(isum); /* (a NULL one leaves isum dead once inlined) */
}

/*
 * Quantizes x [n] (n a multiple of 32, at most X16_CHUNK) into scratch:
 * the line of block b at byte X16_LINE_BYTES * b, then after all lines
 * the pairs [d / 256, c_scale (d / 256) sum(256 hi + lo)] [n / 32]
 * (c_scale: -8, -16 or 1, see the top).
 */
static void x16_prep(int64_t n, const float *x, float *scratch, float c_scale)
{
    const int64_t nb = n / 32;
    uint8_t *lines = (uint8_t *)scratch;
    float *dsum = scratch + nb * (X16_LINE_BYTES / 4);
    for (int64_t b = 0; b < nb; b++) {
        __m256i h8, l8;
        float dx;
        int32_t sum;
        x16_quant_block(x + 32 * b, &h8, &l8, &dx, &sum);
        __m256i *line = (__m256i *)(lines + X16_LINE_BYTES * b);
        _mm256_store_si256(line, _mm256_permute2x128_si256(h8, h8, 0x00));
        _mm256_store_si256(line + 1, _mm256_permute2x128_si256(h8, h8, 0x11));
        _mm256_store_si256(line + 2, _mm256_permute2x128_si256(l8, l8, 0x00));
        _mm256_store_si256(line + 3, _mm256_permute2x128_si256(l8, l8, 0x11));
        dsum[2 * b] = dx;
        dsum[2 * b + 1] = c_scale * (dx * (float)sum);
    }
}

/*
 * The block factors of R rows stride bytes apart as floats: d_w of row r
 * in lane 2r, and m in lane 2r + 1 (has_m) or d_w again; zeros past R.
 * The 4 bytes at the block's start (d and m, or d and two bytes of the
 * block that the duplication drops) of each row are gathered in general
 * registers and converted by one vcvtph2ps: a broadcast and a conversion
 * per row would load the FP pipes the dots run on. The empty asm keeps
 * the words out of vector shuffles.
 */
ALWAYS_INLINE __m256 rows_dm(const int R, const bool has_m, const uint8_t *p, size_t stride)
{
    uint64_t u[2] = {0, 0};
    UNROLL
    for (int r = 0; r < R; r++) {
        uint32_t v;
        memcpy(&v, p + r * stride, 4);
        u[r / 2] |= (uint64_t)v << (32 * (r % 2));
    }
    __asm__("" : "+r"(u[0]), "+r"(u[1]));
    const __m256 f = _mm256_cvtph_ps(_mm_set_epi64x((long long)u[1], (long long)u[0]));
    return has_m ? f : _mm256_moveldup_ps(f);
}

/* The 16 bytes at p (lane 0) and p + stride (lane 1); with one row, p in
 * both lanes (a broadcast load), so nothing past it is read. */
ALWAYS_INLINE __m256i x16_load_pair(const int two, const uint8_t *p, size_t stride)
{
    const __m128i a = _mm_loadu_si128((const __m128i *)p);
    if (!two) return _mm256_broadcastsi128_si256(a);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(a),
                                   _mm_loadu_si128((const __m128i *)(p + stride)), 1);
}

/* The 32-bit qh at p (lane 0) and p + stride (lane 1, or p again) in one
 * 64-bit word broadcast to every 64-bit lane. */
ALWAYS_INLINE __m256i x16_qh_pair(const int two, const uint8_t *p, size_t stride)
{
    uint32_t a, b;
    memcpy(&a, p, 4);
    if (two)
        memcpy(&b, p + stride, 4);
    else
        b = a;
    return _mm256_set1_epi64x((long long)((uint64_t)a | (uint64_t)b << 32));
}

/* 0x10 in byte j of lane r where bit j (half 0) or 16 + j (half 1) of
 * that lane's qh is set, from x16_qh_pair's word: each byte gets a copy of
 * the qh byte holding its bit, then tests its own bit. */
ALWAYS_INLINE __m256i x16_fifth_bits(__m256i qh2, int half)
{
    const char b0 = (char)(2 * half), b1 = (char)(2 * half + 1);
    const char c0 = (char)(4 + 2 * half), c1 = (char)(5 + 2 * half);
    const __m256i spread =
        _mm256_setr_epi8(b0, b0, b0, b0, b0, b0, b0, b0, b1, b1, b1, b1, b1, b1, b1, b1, c0, c0, c0,
                         c0, c0, c0, c0, c0, c1, c1, c1, c1, c1, c1, c1, c1);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
    const __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(qh2, spread), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(0x10));
}

enum x16_kind { X16_Q4_0, X16_Q4_1, X16_Q5_0, X16_Q5_1 };

/*
 * R (1-4) rows from w, stride bytes apart, against the prepared chunk of
 * n elements in scratch: out[r] = the chunk's dots (plus out[r] when add).
 */
ALWAYS_INLINE void x16_rows(const enum x16_kind K, const int R, int64_t n, const uint8_t *w,
                            size_t stride, const float *scratch, float *out, bool add)
{
    const size_t bb = K == X16_Q4_0   ? sizeof(struct wk_block_q4_0)
                      : K == X16_Q4_1 ? sizeof(struct wk_block_q4_1)
                      : K == X16_Q5_0 ? sizeof(struct wk_block_q5_0)
                                      : sizeof(struct wk_block_q5_1);
    const bool has_m = K == X16_Q4_1 || K == X16_Q5_1;
    const bool is_q5 = K == X16_Q5_0 || K == X16_Q5_1;
    const size_t qh_off = has_m ? 4 : 2;
    const size_t qs_off = qh_off + (is_q5 ? 4 : 0);
    const int NP = (R + 1) / 2; /* registers (row pairs) */
    const int64_t nb = n / 32;
    const uint8_t *lines = (const uint8_t *)scratch;
    const float *dsum = scratch + nb * (X16_LINE_BYTES / 4);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i k256 = _mm256_set1_epi16(256), ones = _mm256_set1_epi16(1);
    const __m256i expand[2] = {_mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2),
                               _mm256_setr_epi32(4, 4, 4, 4, 6, 6, 6, 6)};
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    __m256 accc = _mm256_setzero_ps(); /* the c_w terms of row r in lane 2r + 1 */
    const size_t pf = pf_ahead(PF_DIST, (size_t)R * stride);
    size_t pf_next = 0;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b = w + i * bb;
        rows_prefetch(R, w, stride, pf, &pf_next, (size_t)(i + 1) * bb);
        const __m256i *line = (const __m256i *)(lines + X16_LINE_BYTES * i);
        /* [d_w (d / 256), c_w (d / 256) sum(256 hi + lo)] of each row */
        const __m256 dx = _mm256_castsi256_ps(
            _mm256_broadcastq_epi64(_mm_loadl_epi64((const __m128i *)(dsum + 2 * i))));
        const __m256 sc = _mm256_mul_ps(rows_dm(R, has_m, b, stride), dx);
        accc = _mm256_add_ps(accc, sc);
        UNROLL
        for (int p = 0; p < NP; p++) {
            const int two = 2 * p + 1 < R;
            const uint8_t *bp = b + 2 * p * stride;
            const __m256i v = x16_load_pair(two, bp + qs_off, stride);
            __m256i lo = _mm256_and_si256(v, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            if (is_q5) {
                const __m256i qh2 = x16_qh_pair(two, bp + qh_off, stride);
                lo = _mm256_or_si256(lo, x16_fifth_bits(qh2, 0));
                hi = _mm256_or_si256(hi, x16_fifth_bits(qh2, 1));
            }
            const __m256i ph =
                _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_load_si256(line)),
                                 _mm256_maddubs_epi16(hi, _mm256_load_si256(line + 1)));
            const __m256i pl =
                _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_load_si256(line + 2)),
                                 _mm256_maddubs_epi16(hi, _mm256_load_si256(line + 3)));
            const __m256i s =
                _mm256_add_epi32(_mm256_madd_epi16(ph, k256), _mm256_madd_epi16(pl, ones));
            acc[p] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_permutevar8x32_ps(sc, expand[p]),
                                     acc[p]);
        }
    }
    /* lane sums: h = [r0 r0 r2 r2 | r1 r1 r3 r3] partials, then [r0 r2 . . | r1 r3 . .] */
    __m256 h = _mm256_hadd_ps(acc[0], acc[1]);
    h = _mm256_hadd_ps(h, h);
    const __m128 tot = _mm_unpacklo_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    const __m256 c = _mm256_permutevar8x32_ps(accc, _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7));
    float res[4];
    _mm_storeu_ps(res, _mm_add_ps(tot, _mm256_castps256_ps128(c)));
    UNROLL
    for (int r = 0; r < R; r++)
        out[r] = add ? out[r] + res[r] : res[r];
}

/* One group of R rows (1-4, known at run time): x16_rows with R as a
 * constant. */
ALWAYS_INLINE void x16_group(const enum x16_kind K, int64_t R, int64_t n, const uint8_t *w, size_t stride,
                             const float *scratch, float *out, bool add)
{
    switch (R) {
    case 4: x16_rows(K, 4, n, w, stride, scratch, out, add); break;
    case 3: x16_rows(K, 3, n, w, stride, scratch, out, add); break;
    case 2: x16_rows(K, 2, n, w, stride, scratch, out, add); break;
    default: x16_rows(K, 1, n, w, stride, scratch, out, add); break;
    }
}

/*
 * Q4_K. A super-block's 128 bytes of nibbles are four runs of 32 bytes:
 * run p holds sub-block 2p in its low nibbles and 2p + 1 in its high
 * ones, element j in byte j. One row per register: a 32-byte load read
 * as 16 int16 lanes gives, by shifts and ands, the codes of the even
 * elements of sub-block 2p (bits 0-3 of each lane), its odd elements
 * (bits 8-11), and those of 2p + 1 (bits 4-7, 12-15), each already an
 * int16 lane. x is prepared as the int16 values 256 hi + lo (|v| <=
 * 32639), even elements then odd ones (X16K_BLOCK_BYTES per block), so
 * two vpmaddwd per sub-block give S = sum q (256 hi + lo) as int32 lanes
 * (each lane at most 4 * 15 * 32639): half the multiplies of the
 * vpmaddubsw route above, which needs two per part. The eight
 * sub-blocks' int32 vectors are reduced to one vector of their eight sums
 * by six vphaddd, a lane swap and an add (exact: |S| < 2^24), converted
 * once, and multiplied by the eight factors d sc_s (d_x / 256) in one FMA;
 * the mins' terms -dmin m_s (d_x / 256) sum(256 hi + lo) are one more FMA
 * per super-block.
 */
#define X16K_BLOCK_BYTES 64
/* The one-row kinds (Q4_K, Q6_K) take the same chunks; their scratch: */
#define X16K_CHUNK          X16_CHUNK
#define X16K_SCRATCH_FLOATS (X16K_CHUNK / 32 * (X16K_BLOCK_BYTES / 4 + 3))

/* Block x [32] as X16K_BLOCK_BYTES at line (the 16 even elements' 256 hi
 * + lo as int16, then the 16 odd ones'), its d / 256 in *dx and its
 * sum(256 hi + lo) in *sum; with half_sums, also the sums over elements
 * 0-15 and 16-31 in half_sums[0] and [1]. */
/* Block x [32] quantized as the int16 values 256 hi + lo, elements 0-15
 * in *v0 and 16-31 in *v1; d / 256 in *dx, sum(256 hi + lo) in *sum
 * unless sum is NULL. */
ALWAYS_INLINE void x16_block_i16(const float *x, __m256i *v0, __m256i *v1, float *dx, int32_t *sum)
{
    __m256i h8, l8;
    x16_quant_block(x, &h8, &l8, dx, sum);
    *v0 = _mm256_add_epi16(_mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(h8)), 8),
                           _mm256_cvtepi8_epi16(_mm256_castsi256_si128(l8)));
    *v1 = _mm256_add_epi16(_mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(h8, 1)), 8),
                           _mm256_cvtepi8_epi16(_mm256_extracti128_si256(l8, 1)));
}

ALWAYS_INLINE void x16k_block(const float *x, uint8_t *line, float *dx, int32_t *sum, int32_t *half_sums)
{
    __m256i v0, v1;
    x16_block_i16(x, &v0, &v1, dx, sum);
    if (half_sums) {
        const __m256i ones = _mm256_set1_epi16(1);
        half_sums[0] = avx2_hsum_epi32(_mm256_madd_epi16(v0, ones));
        half_sums[1] = avx2_hsum_epi32(_mm256_madd_epi16(v1, ones));
    }
    /* even elements: each int32 lane's low half sign-extended; odd: its high half */
    const __m256i e = _mm256_packs_epi32(_mm256_srai_epi32(_mm256_slli_epi32(v0, 16), 16),
                                         _mm256_srai_epi32(_mm256_slli_epi32(v1, 16), 16));
    const __m256i o = _mm256_packs_epi32(_mm256_srai_epi32(v0, 16), _mm256_srai_epi32(v1, 16));
    /* vpackssdw interleaves the 128-bit lanes: 64-bit groups 0 2 1 3 */
    _mm256_store_si256((__m256i *)line, _mm256_permute4x64_epi64(e, 0xD8));
    _mm256_store_si256((__m256i *)(line + 32), _mm256_permute4x64_epi64(o, 0xD8));
}

/* x [n] (n a multiple of 32, at most X16_CHUNK) for the Q4_K rows:
 * X16K_BLOCK_BYTES per block (x16k_block), then d / 256 [n / 32], then
 * (d / 256) sum(256 hi + lo) [n / 32]. */
static void x16k_prep(int64_t n, const float *x, float *scratch) { wk__avx2_x16k_prep(n, x, scratch, NULL); }

void wk__avx2_x16k_prep(int64_t n, const float *x, float *scratch, int32_t *half_sums)
{
    const int64_t nb = n / 32;
    uint8_t *lines = (uint8_t *)scratch;
    float *dxs = scratch + nb * (X16K_BLOCK_BYTES / 4), *css = dxs + nb;
    for (int64_t b = 0; b < nb; b++) {
        int32_t sum;
        x16k_block(x + 32 * b, lines + X16K_BLOCK_BYTES * b, &dxs[b], &sum, half_sums ? half_sums + 2 * b : NULL);
        css[b] = dxs[b] * (float)sum;
    }
}

/* S = sum q (256 hi + lo) of one sub-block as int32 lanes: qe and qo the
 * codes of its even and odd elements (int16 lanes), line its x block. */
ALWAYS_INLINE __m256i x16k_sub(__m256i qe, __m256i qo, const uint8_t *line)
{
    return _mm256_add_epi32(_mm256_madd_epi16(qe, _mm256_load_si256((const __m256i *)line)),
                            _mm256_madd_epi16(qo, _mm256_load_si256((const __m256i *)(line + 32))));
}

/* One Q4_K row of n elements against T tokens' x16k_prep scratches
 * (scr + t * sstride floats, T 1-4, a constant where inlined): res[t].
 * Each super-block's codes and scales are unpacked once for all T tokens
 * (the AVX2 decode is compute bound, so verifying a draft or stepping
 * several sequences pays the unpacking once); each token's integer sums,
 * float products and their order are those of the token alone, so its
 * result has the same bits whatever T. */
ALWAYS_INLINE void x16k_row(const int T, int64_t n, const uint8_t *w, const float *scr, size_t sstride, float *res)
{
    const int64_t nb = n / 32, nsb = n / 256;
    const __m256i m4 = _mm256_set1_epi16(0x000F);
    __m256 acc[4], accm[4];
    UNROLL
    for (int t = 0; t < T; t++) acc[t] = accm[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nsb; i++) {
        const struct wk_block_q4_k *blk = (const struct wk_block_q4_k *)w + i;
        /* per token, lane 0 of ab[0]: the low halves' sums of sub-blocks 0-3, lane 1 the
         * high ones'; ab[1] likewise for sub-blocks 4-7 */
        __m256i ab[4][2], h[4];
        UNROLL
        for (int p = 0; p < 4; p++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(blk->qs + 32 * p));
            const __m256i q0e = _mm256_and_si256(v, m4), q0o = _mm256_and_si256(_mm256_srli_epi16(v, 8), m4);
            const __m256i q1e = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4), q1o = _mm256_srli_epi16(v, 12);
            UNROLL
            for (int t = 0; t < T; t++) {
                const uint8_t *ln = (const uint8_t *)(scr + (size_t)t * sstride) + X16K_BLOCK_BYTES * (8 * i + 2 * p);
                const __m256i hp = _mm256_hadd_epi32(x16k_sub(q0e, q0o, ln), x16k_sub(q1e, q1o, ln + X16K_BLOCK_BYTES));
                if (p % 2 == 0) h[t] = hp;
                else ab[t][p / 2] = _mm256_hadd_epi32(h[t], hp);
            }
        }
        const __m128i scm = avx2_q4_k_scales(blk->scales);
        const __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(scm));
        const __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(scm, 8)));
        uint32_t dd;
        memcpy(&dd, &blk->d, 4); /* d and dmin */
        const __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128((int)dd));
        const __m256 d = _mm256_broadcastss_ps(dm), dmin = _mm256_broadcastss_ps(_mm_movehdup_ps(dm));
        const __m256 dsc = _mm256_mul_ps(d, sc), dmn = _mm256_mul_ps(dmin, mn);
        UNROLL
        for (int t = 0; t < T; t++) {
            const float *dxs = scr + (size_t)t * sstride + nb * (X16K_BLOCK_BYTES / 4), *css = dxs + nb;
            const __m256i s8 = _mm256_add_epi32(_mm256_permute2x128_si256(ab[t][0], ab[t][1], 0x20),
                                                _mm256_permute2x128_si256(ab[t][0], ab[t][1], 0x31));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s8), _mm256_mul_ps(dsc, _mm256_loadu_ps(dxs + 8 * i)), acc[t]);
            accm[t] = _mm256_fmadd_ps(dmn, _mm256_loadu_ps(css + 8 * i), accm[t]);
        }
    }
    UNROLL
    for (int t = 0; t < T; t++) res[t] = avx2_hsum_ps(_mm256_sub_ps(acc[t], accm[t]));
}

/*
 * Q6_K, as Q4_K one row per register, x prepared the same way. A half
 * (128 elements) of a super-block is ql[64h..64h+63] and qh[32h..32h+31]:
 * element 32j + l (l < 32; quarter j, one 32-element block of x) takes its
 * low four bits from ql[l + 32 (j % 2)] (low nibble for j < 2, high for
 * j >= 2) and bits 2j, 2j + 1 of qh[l] as bits 4-5. Read as int16 lanes, each of the
 * three 32-byte loads gives an even element in a lane's low byte and an
 * odd one in its high byte, so shifts and ands give the codes q (0-63) of
 * a quarter's even and odd elements as int16 lanes and two vpmaddwd its
 * products with 256 hi + lo. The int32 lanes 0-3 then hold the sums of
 * the quarter's first 16 elements (one scale) and lanes 4-7 its second
 * 16: two vphaddd levels give the eight 16-element sums of a half in one
 * vector, from which 32 sum(256 hi + lo) of each (prepared with x) is
 * subtracted for the codes' -32 offset (exact: |S| < 2^24); one
 * conversion and one FMA with d sc_s (d_x / 256) add the half.
 */
/* x [n] (n a multiple of 256, at most X16_CHUNK) for the Q6_K rows: the
 * lines and d / 256 of x16k_prep, then per four blocks the int32 values
 * 32 sum(256 hi + lo) over elements 0-15 of each block, then over 16-31. */
static void x16q6_prep(int64_t n, const float *x, float *scratch)
{
    const int64_t nb = n / 32;
    uint8_t *lines = (uint8_t *)scratch;
    float *dxs = scratch + nb * (X16K_BLOCK_BYTES / 4);
    int32_t *offs = (int32_t *)(dxs + nb);
    for (int64_t b = 0; b < nb; b++) {
        int32_t sum, hs[2];
        x16k_block(x + 32 * b, lines + X16K_BLOCK_BYTES * b, &dxs[b], &sum, hs);
        offs[b / 4 * 8 + b % 4] = 32 * hs[0];
        offs[b / 4 * 8 + 4 + b % 4] = 32 * hs[1];
    }
}

/* One Q6_K row of n elements against T tokens' x16q6_prep scratches, as
 * x16k_row: each half's codes and scales unpacked once for all T, each
 * token's arithmetic that of the token alone. */
ALWAYS_INLINE void x16q6_row(const int T, int64_t n, const uint8_t *w, const float *scr, size_t sstride, float *res)
{
    const int64_t nb = n / 32, nsb = n / 256;
    const __m256i m4 = _mm256_set1_epi16(0x000F), m2 = _mm256_set1_epi16(0x0030);
    /* a half's scales: the quarters' first sub-blocks (2j), then their second ones */
    const __m128i sc_order = _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15);
    __m256 acc[4];
    UNROLL
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nsb; i++) {
        const struct wk_block_q6_k *blk = (const struct wk_block_q6_k *)w + i;
        const __m128i sc8 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)blk->scales), sc_order);
        const __m256 d = _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(blk->d)));
        UNROLL
        for (int h = 0; h < 2; h++) {
            const __m256i A = _mm256_loadu_si256((const __m256i *)(blk->ql + 64 * h));
            const __m256i B = _mm256_loadu_si256((const __m256i *)(blk->ql + 64 * h + 32));
            const __m256i H = _mm256_loadu_si256((const __m256i *)(blk->qh + 32 * h));
#define Q6_LO(v) _mm256_and_si256(v, m4)
#define Q6_HB(v) _mm256_and_si256(v, m2)
            /* quarters 0 and 1 (the even and odd elements' codes), per token their sums */
            __m256i h01[4];
            {
                const __m256i e0 = _mm256_or_si256(Q6_LO(A), Q6_HB(_mm256_slli_epi16(H, 4)));
                const __m256i o0 = _mm256_or_si256(Q6_LO(_mm256_srli_epi16(A, 8)), Q6_HB(_mm256_srli_epi16(H, 4)));
                const __m256i e1 = _mm256_or_si256(Q6_LO(B), Q6_HB(_mm256_slli_epi16(H, 2)));
                const __m256i o1 = _mm256_or_si256(Q6_LO(_mm256_srli_epi16(B, 8)), Q6_HB(_mm256_srli_epi16(H, 6)));
                UNROLL
                for (int t = 0; t < T; t++) {
                    const uint8_t *ln = (const uint8_t *)(scr + (size_t)t * sstride) + X16K_BLOCK_BYTES * (8 * i + 4 * h);
                    h01[t] = _mm256_hadd_epi32(x16k_sub(e0, o0, ln), x16k_sub(e1, o1, ln + X16K_BLOCK_BYTES));
                }
            }
            const __m256i e2 = _mm256_or_si256(Q6_LO(_mm256_srli_epi16(A, 4)), Q6_HB(H));
            const __m256i o2 = _mm256_or_si256(_mm256_srli_epi16(A, 12), Q6_HB(_mm256_srli_epi16(H, 8)));
            const __m256i e3 = _mm256_or_si256(Q6_LO(_mm256_srli_epi16(B, 4)), Q6_HB(_mm256_srli_epi16(H, 2)));
            const __m256i o3 = _mm256_or_si256(_mm256_srli_epi16(B, 12), Q6_HB(_mm256_srli_epi16(H, 10)));
#undef Q6_LO
#undef Q6_HB
            const __m256 scf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(h ? _mm_srli_si128(sc8, 8) : sc8));
            const __m256 dsc = _mm256_mul_ps(d, scf);
            UNROLL
            for (int t = 0; t < T; t++) {
                const float *st = scr + (size_t)t * sstride;
                const uint8_t *ln = (const uint8_t *)st + X16K_BLOCK_BYTES * (8 * i + 4 * h + 2);
                const float *dxs = st + nb * (X16K_BLOCK_BYTES / 4);
                const int32_t *offs = (const int32_t *)(dxs + nb);
                /* [q0 q1 q2 q3 first 16 | q0 q1 q2 q3 second 16] */
                __m256i sm = _mm256_hadd_epi32(h01[t], _mm256_hadd_epi32(x16k_sub(e2, o2, ln),
                                                                         x16k_sub(e3, o3, ln + X16K_BLOCK_BYTES)));
                sm = _mm256_sub_epi32(sm, _mm256_loadu_si256((const __m256i *)(offs + 8 * (2 * i + h))));
                const __m256 dx = _mm256_broadcast_ps((const __m128 *)(dxs + 8 * i + 4 * h));
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sm), _mm256_mul_ps(dsc, dx), acc[t]);
            }
        }
    }
    UNROLL
    for (int t = 0; t < T; t++) res[t] = avx2_hsum_ps(acc[t]);
}

/*
 * Q8_0, one row at a time. A block's 32 int8 codes are sign-extended to
 * int16 straight from memory (two vpmovsxbw) and two vpmaddwd against x
 * prepared as the int16 values 256 hi + lo in element order give S = sum
 * q (256 hi + lo) as int32 lanes (|S| <= 32 * 128 * 32639 < 2^27;
 * converted to float, rounded where |S| > 2^24); one FMA with d_w (d /
 * 256) adds the block. Four blocks' d_w are gathered and converted at
 * once. About nine FP operations a block where the f32-activation kernel
 * (rows_avx2.c: four sign extensions, four conversions and four FMAs)
 * needs fourteen. Measured on Zen 3 (bench/rows-bandwidth q8_0 640): 23.9
 * GB/s a core in L2 against 17.0, and 37-38 GB/s against 22-25 from
 * memory at 2 threads. Groups of four rows side by side (as the 4-bit
 * kinds above) computed faster in L2 (22.6) but streamed from memory at
 * only 14-22 GB/s whatever the prefetch tried (none, 16 KiB ahead into
 * L2, a group 4-8 KiB ahead into L1); one row at a time is a single
 * stream the hardware prefetchers follow.
 */
#define X16Q8_BLOCK_BYTES 64
#define X16Q8_SCRATCH_FLOATS (X16_CHUNK / 32 * (X16Q8_BLOCK_BYTES / 4 + 1))

/* x [n] (n a multiple of 32, at most X16_CHUNK) for the Q8_0 rows: per
 * block 256 hi + lo as int16 in element order (X16Q8_BLOCK_BYTES), then
 * d / 256 [n / 32]. */
static void x16q8_prep(int64_t n, const float *x, float *scratch)
{
    const int64_t nb = n / 32;
    uint8_t *lines = (uint8_t *)scratch;
    float *dxs = scratch + nb * (X16Q8_BLOCK_BYTES / 4);
    for (int64_t b = 0; b < nb; b++) {
        __m256i v0, v1;
        x16_block_i16(x + 32 * b, &v0, &v1, &dxs[b], NULL); /* Q8_0 has no offset: no sum */
        _mm256_store_si256((__m256i *)(lines + X16Q8_BLOCK_BYTES * b), v0);
        _mm256_store_si256((__m256i *)(lines + X16Q8_BLOCK_BYTES * b + 32), v1);
    }
}

/* cnt (1-4, a constant) blocks of one Q8_0 row from block i on into acc:
 * their d_w gathered and converted at once (f16 words in a general
 * register, one vcvtph2ps) times the blocks' d / 256. */
ALWAYS_INLINE void x16q8_step(const int cnt, const uint8_t *w, int64_t i, const uint8_t *lines, const float *dxs,
                              __m256 *acc)
{
    const size_t bb = sizeof(struct wk_block_q8_0);
    const uint8_t *b = w + i * bb;
    /* the blocks' d / 256, zeros past cnt (no read past the chunk's last) */
    const __m128 dx = cnt == 4 ? _mm_loadu_ps(dxs + i)
                               : _mm_maskload_ps(dxs + i, _mm_cmpgt_epi32(_mm_set1_epi32(cnt), _mm_setr_epi32(0, 1, 2, 3)));
    const __m256 sc = _mm256_castps128_ps256(_mm_mul_ps(avx2_f16x4(b, bb, cnt), dx));
    UNROLL
    for (int k = 0; k < cnt; k++) {
        const int8_t *q = (const int8_t *)(b + k * bb + 2);
        const uint8_t *ln = lines + X16Q8_BLOCK_BYTES * (i + k);
        const __m256i q0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)q));
        const __m256i q1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(q + 16)));
        const __m256i S = _mm256_add_epi32(_mm256_madd_epi16(q0, _mm256_load_si256((const __m256i *)ln)),
                                           _mm256_madd_epi16(q1, _mm256_load_si256((const __m256i *)(ln + 32))));
        acc[k & 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S), _mm256_permutevar8x32_ps(sc, _mm256_set1_epi32(k)),
                                     acc[k & 1]);
    }
}

/* One Q8_0 row against x16q8_prep's chunk of n elements: the chunk's dot.
 * Blocks four at a time (x16q8_step), two accumulators. */
ALWAYS_INLINE float x16q8_row1(int64_t n, const uint8_t *w, const float *scratch)
{
    const size_t bb = sizeof(struct wk_block_q8_0);
    const int64_t nb = n / 32;
    const uint8_t *lines = (const uint8_t *)scratch;
    const float *dxs = scratch + nb * (X16Q8_BLOCK_BYTES / 4);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    const size_t pf = pf_ahead(PF_DIST, bb);
    size_t pf_next = 0;
    int64_t i = 0;
    for (; i + 4 <= nb; i += 4) {
        rows_prefetch(1, w, 0, pf, &pf_next, (size_t)(i + 4) * bb);
        x16q8_step(4, w, i, lines, dxs, acc);
    }
    switch (nb - i) {
    case 3: x16q8_step(3, w, i, lines, dxs, acc); break;
    case 2: x16q8_step(2, w, i, lines, dxs, acc); break;
    case 1: x16q8_step(1, w, i, lines, dxs, acc); break;
    default: break;
    }
    return avx2_hsum_ps(_mm256_add_ps(acc[0], acc[1]));
}

/* Rows of one chunk, every token's prepared x (scratch[t], nt of them)
 * over each row while it is in L1: the one-token kernel's bits. */
ALWAYS_INLINE void x16q8_rows_tokens(int64_t nc, const uint8_t *wc, size_t stride,
                                     float (*scratch)[X16Q8_SCRATCH_FLOATS], int32_t nt, float *out,
                                     size_t out_stride, int64_t n_rows, bool add)
{
    for (int64_t r = 0; r < n_rows; r++)
        for (int32_t t = 0; t < nt; t++) {
            const float v = x16q8_row1(nc, wc + r * stride, scratch[t]);
            float *o = out + (size_t)t * out_stride + r;
            *o = add ? *o + v : v;
        }
}

/* Row ROW (x16k_row, x16q6_row) for nt tokens (T 1-4 a call), T a
 * constant in each call. */
#define X16_ROW_TOKENS(ROW, nc, w, scr, sstride, nt, res)                                          \
    for (int32_t t0_ = 0; t0_ < (nt); t0_ += 4) {                                                  \
        const float *s_ = (scr) + (size_t)t0_ * (sstride);                                          \
        switch (WK_MIN(4, (nt) - t0_)) {                                                           \
        case 4: ROW(4, nc, w, s_, sstride, (res) + t0_); break;                                    \
        case 3: ROW(3, nc, w, s_, sstride, (res) + t0_); break;                                    \
        case 2: ROW(2, nc, w, s_, sstride, (res) + t0_); break;                                    \
        default: ROW(1, nc, w, s_, sstride, (res) + t0_); break;                                   \
        }                                                                                          \
    }

/* The one-row kinds prefetch into L1 the bytes of the row this far
 * ahead, rounded up to whole rows (on Zen 3, 1 and 4 KiB measured slower,
 * an L2 hint alike). */
#define X16K_PF_DIST 2048
/* The bytes [p, p + bytes) asked for, a line at a time. */
ALWAYS_INLINE void x16k_prefetch(const uint8_t *p, size_t bytes)
{
    for (uintptr_t a = (uintptr_t)p & ~(uintptr_t)63; a < (uintptr_t)p + bytes; a += 64)
        _mm_prefetch((const char *)a, _MM_HINT_T0);
}

/*
 * The entries of a kind: x16_tokens_KIND (vec_dot_rows_x16_tokens): per
 * column chunk, up to X16_TOKENS tokens' x prepared by PREP, then ROWS
 * runs each group of rows (four for the 4-bit 32-element kinds, one for
 * the others) for every token while its bytes are in L1, with the
 * one-token row function; and x16_rows_KIND (vec_dot_rows_x16), the same
 * for one token. So each token's results are the one-token entry's bits.
 * Later chunks add to out.
 */
#define X16_TOKENS 8
#define X16_ENTRIES(kind, PREP, ROWS, BB, BLOCK, CHUNK, SCR)                                     \
    static void x16_tokens_##kind(int64_t n, const void *w, size_t stride, const float *x,         \
                                  size_t x_stride, int32_t n_tokens, float *out, size_t out_stride, \
                                  int64_t n_rows)                                                  \
    {                                                                                              \
        _Alignas(32) float scratch[X16_TOKENS][SCR]; /* <= 306 KiB of stack */                     \
        for (int32_t t0 = 0; t0 < n_tokens; t0 += X16_TOKENS) {                                    \
            const int32_t nt = WK_MIN(X16_TOKENS, n_tokens - t0);                                  \
            for (int64_t c0 = 0; c0 < n; c0 += (CHUNK)) {                                          \
                const int64_t nc = WK_MIN((CHUNK), n - c0);                                        \
                const uint8_t *wc = (const uint8_t *)w + c0 / (BLOCK) * (BB);                      \
                for (int32_t t = 0; t < nt; t++)                                                   \
                    PREP(nc, x + (size_t)(t0 + t) * x_stride + c0, scratch[t]);                    \
                ROWS(nc, wc, stride, scratch, nt, out + (size_t)t0 * out_stride, out_stride,       \
                     n_rows, c0 > 0);                                                              \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void x16_rows_##kind(int64_t n, const void *w, size_t stride, const float *x, float *out, \
                                int64_t n_rows)                                                    \
    {                                                                                              \
        _Alignas(32) float scratch[1][SCR];                                                        \
        for (int64_t c0 = 0; c0 < n; c0 += (CHUNK)) {                                              \
            const int64_t nc = WK_MIN((CHUNK), n - c0);                                            \
            PREP(nc, x + c0, scratch[0]);                                                          \
            ROWS(nc, (const uint8_t *)w + c0 / (BLOCK) * (BB), stride, scratch, 1, out, 0, n_rows, \
                 c0 > 0);                                                                          \
        }                                                                                          \
    }

/* One-row kinds: each row for every token, up to four tokens a pass. */
#define X16_ROW1_TOKENS(fn, ROW, BB)                                                                 \
    ALWAYS_INLINE void fn(int64_t nc, const uint8_t *wc, size_t stride,                            \
                          float (*scratch)[X16K_SCRATCH_FLOATS], int32_t nt, float *out,           \
                          size_t out_stride, int64_t n_rows, bool add)                             \
    {                                                                                              \
        const size_t pf = pf_ahead(X16K_PF_DIST, stride);                                          \
        for (int64_t r = 0; r < n_rows; r++) {                                                     \
            float v[X16_TOKENS];                                                                   \
            x16k_prefetch(wc + r * stride + pf, (size_t)nc / 256 * (BB));                          \
            X16_ROW_TOKENS(ROW, nc, wc + r * stride, scratch[0], X16K_SCRATCH_FLOATS, nt, v);      \
            for (int32_t t = 0; t < nt; t++) {                                                     \
                float *o = out + (size_t)t * out_stride + r;                                       \
                *o = add ? *o + v[t] : v[t];                                                       \
            }                                                                                      \
        }                                                                                          \
    }
X16_ROW1_TOKENS(x16k_rows_tokens, x16k_row, sizeof(struct wk_block_q4_k))
X16_ROW1_TOKENS(x16q6_rows_tokens, x16q6_row, sizeof(struct wk_block_q6_k))
X16_ENTRIES(q4_k, x16k_prep, x16k_rows_tokens, sizeof(struct wk_block_q4_k), 256, X16K_CHUNK, X16K_SCRATCH_FLOATS)
X16_ENTRIES(q6_k, x16q6_prep, x16q6_rows_tokens, sizeof(struct wk_block_q6_k), 256, X16K_CHUNK, X16K_SCRATCH_FLOATS)
X16_ENTRIES(q8_0, x16q8_prep, x16q8_rows_tokens, sizeof(struct wk_block_q8_0), 32, X16_CHUNK, X16Q8_SCRATCH_FLOATS)

/* The 32-element types: groups of four rows (x16_group), every token over a group. */
#define X16_GROUPS_TOKENS(fn, K, C_SCALE)                                                          \
    ALWAYS_INLINE void fn##_rows(int64_t nc, const uint8_t *wc, size_t stride,                     \
                                 float (*scratch)[X16_SCRATCH_FLOATS], int32_t nt, float *out,\
                                 size_t out_stride, int64_t n_rows, bool add)                      \
    {                                                                                              \
        for (int64_t r = 0; r < n_rows; r += 4)                                                    \
            for (int32_t t = 0; t < nt; t++)                                                       \
                x16_group(K, WK_MIN(4, n_rows - r), nc, wc + r * stride, stride, scratch[t],       \
                          out + (size_t)t * out_stride + r, add);                                  \
    }                                                                                              \
    static void fn##_prep(int64_t nc, const float *x, float *s) { x16_prep(nc, x, s, C_SCALE); }
X16_GROUPS_TOKENS(x16t_q4_0, X16_Q4_0, -8.0f)
X16_GROUPS_TOKENS(x16t_q4_1, X16_Q4_1, 1.0f)
X16_GROUPS_TOKENS(x16t_q5_0, X16_Q5_0, -16.0f)
X16_GROUPS_TOKENS(x16t_q5_1, X16_Q5_1, 1.0f)
X16_ENTRIES(q4_0, x16t_q4_0_prep, x16t_q4_0_rows, sizeof(struct wk_block_q4_0), 32, X16_CHUNK, X16_SCRATCH_FLOATS)
X16_ENTRIES(q4_1, x16t_q4_1_prep, x16t_q4_1_rows, sizeof(struct wk_block_q4_1), 32, X16_CHUNK, X16_SCRATCH_FLOATS)
X16_ENTRIES(q5_0, x16t_q5_0_prep, x16t_q5_0_rows, sizeof(struct wk_block_q5_0), 32, X16_CHUNK, X16_SCRATCH_FLOATS)
X16_ENTRIES(q5_1, x16t_q5_1_prep, x16t_q5_1_rows, sizeof(struct wk_block_q5_1), 32, X16_CHUNK, X16_SCRATCH_FLOATS)

void wk__avx2_fill_rows_x16(struct wk_cpu_kernels *k)
{
    k->vec_dot_rows_x16[WK_DTYPE_Q4_K] = x16_rows_q4_k;
    k->vec_dot_rows_x16[WK_DTYPE_Q6_K] = x16_rows_q6_k;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q6_K] = x16_tokens_q6_k;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q4_0] = x16_tokens_q4_0;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q4_1] = x16_tokens_q4_1;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q5_0] = x16_tokens_q5_0;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q5_1] = x16_tokens_q5_1;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q4_K] = x16_tokens_q4_k;
    k->vec_dot_rows_x16[WK_DTYPE_Q4_0] = x16_rows_q4_0;
    k->vec_dot_rows_x16[WK_DTYPE_Q4_1] = x16_rows_q4_1;
    k->vec_dot_rows_x16[WK_DTYPE_Q5_0] = x16_rows_q5_0;
    k->vec_dot_rows_x16[WK_DTYPE_Q5_1] = x16_rows_q5_1;
    k->vec_dot_rows_x16[WK_DTYPE_Q8_0] = x16_rows_q8_0;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q8_0] = x16_tokens_q8_0;
}
