/*
 * rows_x16_template.h - the AVX-512 decode dots with 16-bit activations
 * (vec_dot_rows_x16, wk_cpu.h) for Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, I4G64, MXFP4, and
 * Q8_0 and IQ4_NL with VNNI. Compiled twice:
 * by rows_x16_avx512.c (WK_AVX512_VNNI 0: vpmaddubsw + vpmaddwd, AVX-512BW)
 * and by rows_x16_avx512_vnni.c (WK_AVX512_VNNI 1: vpdpbusd). The two give
 * the same integers, hence bit-identical results. Including files define
 * WK_AVX512_VNNI and WK_X16_FILL (the fill function to emit).
 *
 * Spec: rows_x16_ref.c. Per call, x is quantized once per 32-element block
 * (PREP) into hi and lo int8 parts, each 16-byte half of a block
 * replicated into all four 128-bit lanes of a 64-byte line, plus the
 * block's float scale d / 256 and the float sum (d / 256) sum(256 hi + lo).
 *
 * Four rows go together, row r in 128-bit lane r: their 16 bytes of
 * nibbles (one block) are loaded into one register, split into low
 * nibbles (elements 0-15) and high nibbles (16-31) by an and and a shift
 * (Q5's fifth bits or-ed in under a 64-bit mask built from the rows' qh
 * in a general register), and four u8 x s8 dot products against the
 * replicated x lines give per lane S_hi and S_lo; S = 256 S_hi + S_lo is
 * exact. One conversion and one FMA with the rows' d_w times the block's
 * scale (expanded from 4 lanes to 16 by one permute) add the block into a
 * float accumulator; the c_w terms of all four rows are one 128-bit FMA.
 * Against the f32-activation kernels (dot_rows_avx512.c) this is about
 * half the vector operations per weight, and no float conversion of the
 * weights at all.
 */
#ifndef WK_AVX512_VNNI
#error "define WK_AVX512_VNNI (0 or 1) before including rows_x16_template.h"
#endif

#include "dot_rows.h"

/* Bytes of prepared x per 32-element block: hi[0:16], hi[16:32], lo[0:16],
 * lo[16:32], each replicated to 64 bytes. */
#define X16_LINE_BYTES 256
/* Column chunk: x of up to 2048 elements is prepared in one go (16 KiB). */
#define X16_CHUNK 2048
#define X16_SCRATCH_FLOATS (X16_CHUNK / 32 * (X16_LINE_BYTES / 4 + 2))

#if WK_AVX512_VNNI
static inline __m512i x16_dot(__m512i acc, __m512i u, __m512i s)
{
    return _mm512_dpbusd_epi32(acc, u, s);
}
#else
static inline __m512i x16_dot(__m512i acc, __m512i u, __m512i s)
{
    /* u <= 31 and |s| <= 127: pairs stay far from the int16 saturation */
    const __m512i p = _mm512_maddubs_epi16(u, s);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p, _mm512_set1_epi16(1)));
}
#endif

/*
 * PREP: quantizes x [n] (n a multiple of 32, at most X16_CHUNK) into
 * scratch: the lines for block b at byte X16_LINE_BYTES * b, then after all
 * lines the scales (d / 256) [n / 32] and the sums [n / 32]. The arithmetic
 * is wk__x16_quantize_ref's, operation for operation (no FMA contraction),
 * so hi and lo are the reference's.
 */
static ALWAYS_INLINE void x16_prep_lines(int64_t n, const float *x, float *scratch, bool pairs, bool compact);
static inline void x16_prep(int64_t n, const float *x, float *scratch)
{
    x16_prep_lines(n, x, scratch, false, false);
}
/* PREP for the R16 kernels, which broadcast x's bytes four at a time and
 * need no lanes: the same quantities with each block's hi[32] and lo[32]
 * once (X16_COMPACT_BYTES a block instead of X16_LINE_BYTES), so that
 * the prepared x of a long row stays in L1 beside the weight stream
 * (2048 elements: 4 KiB against 16 KiB; with the replicated lines the R16
 * kernels read rows of 2048 from DRAM at 57-78% of a plain read). */
#define X16_COMPACT_BYTES 64
static inline void x16_prep_compact(int64_t n, const float *x, float *scratch)
{
    x16_prep_lines(n, x, scratch, false, true);
}
/* PREP for I4G64, whose byte i holds elements 2i and 2i+1: the same
 * quantities, each line's 32 elements stored as the 16 even ones (the
 * first 64-byte line of hi and of lo) and the 16 odd ones (the second). */
static inline void x16_prep_pairs(int64_t n, const float *x, float *scratch)
{
    x16_prep_lines(n, x, scratch, true, false);
}
static ALWAYS_INLINE void x16_prep_lines(int64_t n, const float *x, float *scratch, bool pairs, bool compact)
{
    const int64_t nb = n / 32;
    const size_t line_bytes = compact ? X16_COMPACT_BYTES : X16_LINE_BYTES;
    uint8_t *lines = (uint8_t *)scratch;
    float *ds = scratch + nb * (int64_t)(line_bytes / 4), *sums = ds + nb;
    const __m512 sign = _mm512_set1_ps(-0.0f), lim = _mm512_set1_ps(127.0f);
    const __m512 nlim = _mm512_set1_ps(-127.0f), k256 = _mm512_set1_ps(256.0f);
    /* Two passes: every block's d and 1/d first, then the rounding. In one
     * pass each block waited on its own horizontal max and two divisions
     * before any rounding could start (~90 cycles a block); apart, the
     * blocks' chains overlap. */
    float inv[X16_CHUNK / 32];
    for (int64_t b = 0; b < nb; b++) {
        const __m512 x0 = _mm512_loadu_ps(x + 32 * b), x1 = _mm512_loadu_ps(x + 32 * b + 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, x0),
                                                              _mm512_andnot_ps(sign, x1)));
        const bool nan = (_mm512_cmp_ps_mask(x0, x0, _CMP_UNORD_Q) |
                          _mm512_cmp_ps_mask(x1, x1, _CMP_UNORD_Q)) != 0;
        ds[b] = wk_x16_scale(amax, nan);
        inv[b] = ds[b] > 0 ? 1.0f / ds[b] : 0.0f;
    }
    for (int64_t b = 0; b < nb; b++) {
        const __m512 x0 = _mm512_loadu_ps(x + 32 * b), x1 = _mm512_loadu_ps(x + 32 * b + 16);
        const float d = ds[b], id = inv[b];
        const __m512 vd = _mm512_set1_ps(d), vid = _mm512_set1_ps(id);
        __m512i hl[2], ll[2];
        __m512i isum = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++) {
            const __m512 xv = h ? x1 : x0;
            __m512 q = _mm512_roundscale_ps(_mm512_mul_ps(xv, vid), _MM_FROUND_TO_NEAREST_INT);
            q = _mm512_min_ps(_mm512_max_ps(q, nlim), lim);
            const __m512 p = _mm512_mul_ps(q, vd);
            const __m512 r = _mm512_mul_ps(_mm512_sub_ps(xv, p), vid);
            __m512 l = _mm512_roundscale_ps(_mm512_mul_ps(r, k256), _MM_FROUND_TO_NEAREST_INT);
            l = _mm512_min_ps(_mm512_max_ps(l, nlim), lim);
            hl[h] = _mm512_cvtps_epi32(q);
            ll[h] = _mm512_cvtps_epi32(l);
            isum = _mm512_add_epi32(isum, _mm512_add_epi32(_mm512_slli_epi32(hl[h], 8), ll[h]));
        }
        uint8_t *line = lines + line_bytes * b;
        if (pairs) {
            const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
            const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
            const __m512i he = _mm512_permutex2var_epi32(hl[0], even, hl[1]);
            const __m512i ho = _mm512_permutex2var_epi32(hl[0], odd, hl[1]);
            const __m512i le = _mm512_permutex2var_epi32(ll[0], even, ll[1]);
            const __m512i lo_ = _mm512_permutex2var_epi32(ll[0], odd, ll[1]);
            hl[0] = he, hl[1] = ho, ll[0] = le, ll[1] = lo_;
        }
        for (int h = 0; h < 2; h++) {
            const __m128i vh = _mm512_cvtepi32_epi8(hl[h]), vl = _mm512_cvtepi32_epi8(ll[h]);
            if (compact) { /* hi[0:16] hi[16:32] lo[0:16] lo[16:32] */
                _mm_store_si128((__m128i *)(line + 16 * h), vh);
                _mm_store_si128((__m128i *)(line + 32 + 16 * h), vl);
            } else {
                _mm512_store_si512((__m512i *)(line + 64 * h), _mm512_broadcast_i32x4(vh));
                _mm512_store_si512((__m512i *)(line + 128 + 64 * h), _mm512_broadcast_i32x4(vl));
            }
        }
        ds[b] = d / 256.0f;
        sums[b] = ds[b] * (float)_mm512_reduce_add_epi32(isum);
    }
}

/* The 16 bytes at p + r * stride for rows r < R in 128-bit lane r (lanes
 * R..3 are left undefined: computed and dropped, their scale lanes are 0;
 * nothing past row R - 1 is read). */
static ALWAYS_INLINE __m512i x16_load_rows(const int R, const uint8_t *p, size_t stride)
{
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)p));
    if (R > 1) v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p + stride)), 1);
    if (R > 2) v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p + 2 * stride)), 2);
    if (R > 3) v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p + 3 * stride)), 3);
    return v;
}

/* The 16 bits of qh (at p + r * stride) for lane r, low (h = 0) or high half. */
static ALWAYS_INLINE __mmask64 x16_qh_mask(const int R, const uint8_t *p, size_t stride, int h)
{
    uint64_t m = 0;
    UNROLL
    for (int r = 0; r < R; r++) {
        uint32_t qh;
        memcpy(&qh, p + r * stride, 4);
        m |= (uint64_t)((qh >> (16 * h)) & 0xFFFF) << (16 * r);
    }
    return (__mmask64)m;
}

/* One 32-element block of four rows (row r in 128-bit lane r): the codes
 * lo (elements 0-15 of each lane's line pair) and hi (16-31) against the
 * block's prepared x lines, S = 256 S_hi + S_lo exact, then acc += S times
 * the rows' scales dw times the block's d / 256 (ds_i). */
static ALWAYS_INLINE __m512 x16_block(__m512i lo, __m512i hi, const uint8_t *line, __m128 dw,
                                      float ds_i, __m512 acc)
{
    const __m512i expand = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    __m512i sh = x16_dot(_mm512_setzero_si512(), lo, _mm512_load_si512((const __m512i *)line));
    sh = x16_dot(sh, hi, _mm512_load_si512((const __m512i *)(line + 64)));
    __m512i sl = x16_dot(_mm512_setzero_si512(), lo, _mm512_load_si512((const __m512i *)(line + 128)));
    sl = x16_dot(sl, hi, _mm512_load_si512((const __m512i *)(line + 192)));
    const __m512i s = _mm512_add_epi32(_mm512_slli_epi32(sh, 8), sl);
    const __m128 sc = _mm_mul_ps(dw, _mm_set1_ps(ds_i));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_permutexvar_ps(expand, _mm512_castps128_ps512(sc)),
                           acc);
}

/* The rows' totals: each 128-bit lane of acc summed (row r's ends in
 * element 4r), plus their constant terms accc, stored to out[0..R-1]. */
static ALWAYS_INLINE void x16_finish(const int R, __m512 acc, __m128 accc, float *out, bool add)
{
    acc = _mm512_add_ps(acc, _mm512_permute_ps(acc, 0x4E));
    acc = _mm512_add_ps(acc, _mm512_permute_ps(acc, 0xB1));
    const __m512i pick = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0);
    const __m128 tot = _mm512_castps512_ps128(_mm512_permutexvar_ps(pick, acc));
    rows_store(R, out, _mm_add_ps(tot, accc), add);
}

enum x16_kind { X16_Q4_0, X16_Q4_1, X16_Q5_0, X16_Q5_1, X16_Q8_0, X16_Q6_K, X16_Q4_K /* these two: R16 only */,
                X16_MXFP4, X16_IQ4_NL };

/* MXFP4 and IQ4_NL read their codes through a code book: each value plus
 * an offset that makes it unsigned (MXFP4's -12..12 + 12, IQ4_NL's
 * -127..113 + 128), in the 16 bytes of a 128-bit lane; the offset comes
 * back as c_w = -offset d_w. MXFP4's codes (<= 24) are safe for
 * vpmaddubsw's pair sums; IQ4_NL's (<= 241) are not, so it is VNNI only,
 * like Q8_0. */
static ALWAYS_INLINE __m512i x16_book(const int8_t *values, int offset)
{
    int8_t b[16];
    for (int k = 0; k < 16; k++) b[k] = (int8_t)(values[k] + offset);
    return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)b));
}

/* MXFP4's d_w = 2^(e - 128) of rows r < R in lane r, 0 in the others:
 * wk_e8m0_to_f32_half's bits made in general registers and packed as
 * rows_f16x4 packs its halves (no store of four floats reloaded as a
 * vector). */
static ALWAYS_INLINE __m128 x16_e8m0x4(const int R, const uint8_t *p, size_t stride)
{
    uint64_t lo = 0, hi = 0;
    UNROLL
    for (int r = 0; r < R; r++) {
        const uint32_t e = p[r * stride];
        const uint64_t bits = e < 2 ? 0x00200000u << e : (e - 1) << 23;
        if (r < 2) lo |= bits << (32 * r);
        else hi |= bits << (32 * (r - 2));
    }
    return _mm_castsi128_ps(_mm_set_epi64x((long long)hi, (long long)lo));
}

static ALWAYS_INLINE void x16_rows(const enum x16_kind K, const int R, int64_t n, const uint8_t *w,
                                   size_t stride, const float *x, const float *scratch, float *out,
                                   bool add)
{
    (void)x;
    const size_t bb = K == X16_Q4_0   ? sizeof(struct wk_block_q4_0)
                      : K == X16_Q4_1 ? sizeof(struct wk_block_q4_1)
                      : K == X16_Q5_0 ? sizeof(struct wk_block_q5_0)
                      : K == X16_Q5_1 ? sizeof(struct wk_block_q5_1)
                      : K == X16_MXFP4 ? sizeof(struct wk_block_mxfp4)
                      : K == X16_IQ4_NL ? sizeof(struct wk_block_iq4_nl)
                                      : sizeof(struct wk_block_q8_0);
    const bool book = K == X16_MXFP4 || K == X16_IQ4_NL;
    const __m512i lut = K == X16_MXFP4    ? x16_book(wk_mxfp4_values, 12)
                        : K == X16_IQ4_NL ? x16_book(wk_iq4nl_values, 128)
                                          : _mm512_setzero_si512();
    const bool has_m = K == X16_Q4_1 || K == X16_Q5_1;
    const bool is_q5 = K == X16_Q5_0 || K == X16_Q5_1;
    const size_t qh_off = has_m ? 4 : 2;
    const size_t qs_off = K == X16_MXFP4 ? 1 : qh_off + (is_q5 ? 4 : 0);
    /* Q8_0's codes are read as unsigned, q + 128 (a flipped top bit) */
    const float offset = K == X16_Q4_0 ? -8.0f : K == X16_Q8_0 || K == X16_IQ4_NL ? -128.0f
                         : K == X16_MXFP4 ? -12.0f : -16.0f;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const int64_t nb = n / 32;
    const uint8_t *lines = (const uint8_t *)scratch;
    const float *ds = scratch + nb * (X16_LINE_BYTES / 4), *sums = ds + nb;
    const __m512i m4 = _mm512_set1_epi8(0x0F), c16 = _mm512_set1_epi8(0x10);
    __m512 acc = _mm512_setzero_ps();
    __m128 accc = _mm_setzero_ps(); /* the c_w terms, row r in lane r */
    const size_t pf = rows_pf_dist(R, stride);
    size_t pf_next = 0;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b = w + i * bb;
        rows_prefetch(R, w, stride, pf, &pf_next, (size_t)(i + 1) * bb);
        __m512i lo, hi;
        if (K == X16_Q8_0) { /* elements 0-15 and 16-31: 16 bytes each */
            lo = _mm512_xor_si512(x16_load_rows(R, b + qs_off, stride), flip);
            hi = _mm512_xor_si512(x16_load_rows(R, b + qs_off + 16, stride), flip);
        } else {
            const __m512i v = x16_load_rows(R, b + qs_off, stride);
            lo = _mm512_and_si512(v, m4);
            hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            if (book) lo = _mm512_shuffle_epi8(lut, lo), hi = _mm512_shuffle_epi8(lut, hi);
        }
        if (is_q5) {
            lo = _mm512_mask_add_epi8(lo, x16_qh_mask(R, b + qh_off, stride, 0), lo, c16);
            hi = _mm512_mask_add_epi8(hi, x16_qh_mask(R, b + qh_off, stride, 1), hi, c16);
        }
        const __m128 dw = K == X16_MXFP4 ? x16_e8m0x4(R, b, stride) : rows_f16x4(R, b, stride, 0);
        acc = x16_block(lo, hi, lines + X16_LINE_BYTES * i, dw, ds[i], acc);
        if (has_m) accc = _mm_fmadd_ps(rows_f16x4(R, b, stride, 2), _mm_set1_ps(sums[i]), accc);
        else accc = _mm_fmadd_ps(dw, _mm_set1_ps(offset * sums[i]), accc);
    }
    x16_finish(R, acc, accc, out, add);
}

/*
 * Q4_K: a 256-element block is 8 blocks of x (sub-blocks s = 2g, 2g + 1 in
 * the low and high nibbles of qs[32g .. 32g + 31]), each with a 6-bit
 * scale sc_s and min m_s; w = d sc_s q - dmin m_s. The four rows' scales
 * and mins are unpacked once per block, transposed to [s][row] and
 * converted to floats, so that each sub-block's four sc_s (the x16_block
 * scales) are one load; d and dmin multiply the block's sums once.
 * Q5_K (q5 true) is the same with a fifth bit per element: element l of
 * sub-block s has bit s of qh[l], so bytes qh[0..15] (elements 0-15) and
 * qh[16..31] (16-31) are loaded once per block and sub-block s adds 16
 * where its bit is set (codes 0..31, still fine for vpmaddubsw).
 */
static ALWAYS_INLINE void x16_rows_k(const bool q5, const int R, int64_t n, const uint8_t *w, size_t stride,
                                     const float *x, const float *scratch, float *out, bool add)
{
    (void)x;
    const size_t bb = q5 ? sizeof(struct wk_block_q5_k) : sizeof(struct wk_block_q4_k);
    const size_t qs_off = q5 ? offsetof(struct wk_block_q5_k, qs) : offsetof(struct wk_block_q4_k, qs);
    const size_t qh_off = offsetof(struct wk_block_q5_k, qh);
    const size_t sc_off = offsetof(struct wk_block_q4_k, scales);
    _Static_assert(offsetof(struct wk_block_q5_k, scales) == offsetof(struct wk_block_q4_k, scales), "Q5_K as Q4_K");
    const __m512i c16 = _mm512_set1_epi8(0x10);
    const int64_t nb = n / 32;
    const uint8_t *lines = (const uint8_t *)scratch;
    const float *ds = scratch + nb * (X16_LINE_BYTES / 4), *sums = ds + nb;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i expand = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    __m512 acc = _mm512_setzero_ps();
    __m128 accc = _mm_setzero_ps(); /* the -dmin m_s terms, row r in lane r */
    _Alignas(64) float tf[16][4]; /* [s] scales, [8 + s] mins; row r in lane r */
    const size_t pf = rows_pf_dist(R, stride);
    size_t pf_next = 0;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const uint8_t *b = w + i * bb;
        rows_prefetch(R, w, stride, pf, &pf_next, (size_t)(i + 1) * bb);
        __m128i sm[4]; /* row r: sc_0..7, m_0..7 */
        UNROLL
        for (int r = 0; r < 4; r++)
            sm[r] = r < R ? wk__avx512_k_scales_mins(b + r * stride + sc_off) : _mm_setzero_si128();
        const __m128i t01l = _mm_unpacklo_epi8(sm[0], sm[1]), t01h = _mm_unpackhi_epi8(sm[0], sm[1]);
        const __m128i t23l = _mm_unpacklo_epi8(sm[2], sm[3]), t23h = _mm_unpackhi_epi8(sm[2], sm[3]);
        /* as floats, [s][row]: four conversions of 16 */
        _mm512_store_ps(tf[0], _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi16(t01l, t23l))));
        _mm512_store_ps(tf[4], _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi16(t01l, t23l))));
        _mm512_store_ps(tf[8], _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi16(t01h, t23h))));
        _mm512_store_ps(tf[12], _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi16(t01h, t23h))));
        const __m128 d = rows_f16x4(R, b, stride, 0), dmin = rows_f16x4(R, b, stride, 2);
        __m512 acc_b = _mm512_setzero_ps();
        __m128 acc_m = _mm_setzero_ps();
        const __m512i qh0 = q5 ? x16_load_rows(R, b + qh_off, stride) : _mm512_setzero_si512();
        const __m512i qh1 = q5 ? x16_load_rows(R, b + qh_off + 16, stride) : _mm512_setzero_si512();
        UNROLL
        for (int g = 0; g < 4; g++) {
            const __m512i v0 = x16_load_rows(R, b + qs_off + 32 * g, stride);
            const __m512i v1 = x16_load_rows(R, b + qs_off + 32 * g + 16, stride);
            UNROLL
            for (int h = 0; h < 2; h++) {
                const int s = 2 * g + h;
                const int64_t xb = 8 * i + s;
                __m512i lo = _mm512_and_si512(h ? _mm512_srli_epi16(v0, 4) : v0, m4);
                __m512i hi = _mm512_and_si512(h ? _mm512_srli_epi16(v1, 4) : v1, m4);
                if (q5) {
                    const __m512i bit = _mm512_set1_epi8((char)(1 << s));
                    lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(qh0, bit), lo, c16);
                    hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(qh1, bit), hi, c16);
                }
                const __m128 sc = _mm_load_ps(tf[s]), mn = _mm_load_ps(tf[8 + s]);
                acc_b = x16_block(lo, hi, lines + X16_LINE_BYTES * xb, sc, ds[xb], acc_b);
                acc_m = _mm_fmadd_ps(mn, _mm_set1_ps(sums[xb]), acc_m);
            }
        }
        acc = _mm512_fmadd_ps(acc_b, _mm512_permutexvar_ps(expand, _mm512_castps128_ps512(d)), acc);
        accc = _mm_fnmadd_ps(acc_m, dmin, accc);
    }
    x16_finish(R, acc, accc, out, add);
}

static ALWAYS_INLINE void x16_rows_q4k(const int R, int64_t n, const uint8_t *w, size_t stride,
                                       const float *x, const float *scratch, float *out, bool add)
{
    x16_rows_k(false, R, n, w, stride, x, scratch, out, add);
}

static ALWAYS_INLINE void x16_rows_q5k(const int R, int64_t n, const uint8_t *w, size_t stride,
                                       const float *x, const float *scratch, float *out, bool add)
{
    x16_rows_k(true, R, n, w, stride, x, scratch, out, add);
}

/*
 * I4G64: a group of 64 is two blocks of x. Bytes 16h .. 16h+15 of the
 * group's codes hold its elements 32h .. 32h+31, even ones in the low
 * nibbles and odd ones in the high, which meet x's even and odd lines
 * (x16_prep_pairs); the group's scale multiplies both blocks' sums and its
 * bias both blocks' sums of x~.
 */
static ALWAYS_INLINE void x16_rows_i4(const int R, int64_t n, const uint8_t *w, size_t stride,
                                      const float *x, const float *scratch, float *out, bool add)
{
    (void)x;
    const size_t bb = sizeof(struct wk_block_i4g64);
    const int64_t nb = n / 32;
    const uint8_t *lines = (const uint8_t *)scratch;
    const float *ds = scratch + nb * (X16_LINE_BYTES / 4), *sums = ds + nb;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc = _mm512_setzero_ps();
    __m128 accc = _mm_setzero_ps(); /* the bias terms, row r in lane r */
    const size_t pf = rows_pf_dist(R, stride);
    size_t pf_next = 0;
    for (int64_t g = 0; g < nb / 2; g++) {
        const uint8_t *b = w + g * bb;
        rows_prefetch(R, w, stride, pf, &pf_next, (size_t)(g + 1) * bb);
        const __m128 dw = rows_f16x4(R, b, stride, 0);
        UNROLL
        for (int h = 0; h < 2; h++) {
            const int64_t i = 2 * g + h;
            const __m512i v = x16_load_rows(R, b + 4 + 16 * h, stride);
            const __m512i lo = _mm512_and_si512(v, m4);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            acc = x16_block(lo, hi, lines + X16_LINE_BYTES * i, dw, ds[i], acc);
            accc = _mm_fmadd_ps(rows_f16x4(R, b, stride, 2), _mm_set1_ps(sums[i]), accc);
        }
    }
    x16_finish(R, acc, accc, out, add);
}

#define X16_ROWS(K)                                                                                \
    static ALWAYS_INLINE void x16_rows_##K(const int R, int64_t n, const uint8_t *w, size_t stride, \
                                           const float *x, const float *scratch, float *out,       \
                                           bool add)                                               \
    {                                                                                              \
        x16_rows(K, R, n, w, stride, x, scratch, out, add);                                        \
    }
X16_ROWS(X16_Q4_0)
X16_ROWS(X16_Q4_1)
X16_ROWS(X16_Q5_0)
X16_ROWS(X16_Q5_1)
X16_ROWS(X16_Q8_0)
X16_ROWS(X16_MXFP4)
X16_ROWS(X16_IQ4_NL)

DOT_ROWS_FN(x16_rows_q4_0, x16_rows_X16_Q4_0, 32, sizeof(struct wk_block_q4_0), X16_CHUNK, x16_prep,
            X16_SCRATCH_FLOATS)
DOT_ROWS_FN(x16_rows_q4_1, x16_rows_X16_Q4_1, 32, sizeof(struct wk_block_q4_1), X16_CHUNK, x16_prep,
            X16_SCRATCH_FLOATS)
DOT_ROWS_FN(x16_rows_q5_0, x16_rows_X16_Q5_0, 32, sizeof(struct wk_block_q5_0), X16_CHUNK, x16_prep,
            X16_SCRATCH_FLOATS)
DOT_ROWS_FN(x16_rows_q5_1, x16_rows_X16_Q5_1, 32, sizeof(struct wk_block_q5_1), X16_CHUNK, x16_prep,
            X16_SCRATCH_FLOATS)
DOT_ROWS_FN(x16_rows_mxfp4, x16_rows_X16_MXFP4, 32, sizeof(struct wk_block_mxfp4), X16_CHUNK, x16_prep,
            X16_SCRATCH_FLOATS)
DOT_ROWS_TOKENS_FN(x16_tokens_mxfp4, x16_rows_X16_MXFP4, 32, sizeof(struct wk_block_mxfp4), X16_CHUNK,
                   x16_prep, X16_SCRATCH_FLOATS)
/* Q8_0 only with VNNI: vpmaddubsw's pair sums of codes up to 255 would
 * saturate 16 bits */
#if WK_AVX512_VNNI
DOT_ROWS_FN(x16_rows_q8_0, x16_rows_X16_Q8_0, 32, sizeof(struct wk_block_q8_0), X16_CHUNK, x16_prep,
            X16_SCRATCH_FLOATS)
DOT_ROWS_TOKENS_FN(x16_tokens_q8_0, x16_rows_X16_Q8_0, 32, sizeof(struct wk_block_q8_0), X16_CHUNK,
                   x16_prep, X16_SCRATCH_FLOATS)
DOT_ROWS_FN(x16_rows_iq4_nl, x16_rows_X16_IQ4_NL, 32, sizeof(struct wk_block_iq4_nl), X16_CHUNK, x16_prep,
            X16_SCRATCH_FLOATS)
DOT_ROWS_TOKENS_FN(x16_tokens_iq4_nl, x16_rows_X16_IQ4_NL, 32, sizeof(struct wk_block_iq4_nl), X16_CHUNK,
                   x16_prep, X16_SCRATCH_FLOATS)
#endif
/*
 * The R16 layout (repack.c; VNNI only): 16 rows a group, row r in 32-bit
 * lane r. Vector k of a block holds bytes 4k .. 4k + 3 of each row's
 * codes, and one vpdpbusd against x's four bytes at those elements
 * (broadcast from x16_prep_compact's bytes) adds each row's four products to its
 * lane: no per-row loads or lane shuffles, the 16 rows' scales one f16
 * conversion. S = 256 S_hi + S_lo exact as in x16_block; each row's float
 * accumulation then runs in one lane (x16_rows spreads a row over four
 * lanes and adds them at the end), so the bits differ from x16_rows' by
 * float rounding only. The groups are read in address order, one stream,
 * with software prefetches (R16_PF_Q4K, R16_PF_Q6K, R16_PF_B32): on the
 * Xeon (Sapphire Rapids, 2 vCPUs) the hardware prefetchers alone served
 * the stream at 69-82% of a plain read (bench/rows-bandwidth, 256 MiB),
 * with them 85-105% (below); on the Zen 4 every distance from 512 B to
 * 8 KiB was slower than none (one-thread decode 8-23% slower, 2026-12-04),
 * so each entry point is compiled with and without them and the kernel
 * table picks by wk_cpu_features.decode_prefetch (off on AMD).
 */
#if WK_AVX512_VNNI
#include "r16_codes.h"
#include "../prefetch_part.h"

/* x's four bytes of part (0 hi, 1 lo) at elements e .. e + 3 of a block,
 * broadcast, from its compact line (x16_prep_compact). */
static ALWAYS_INLINE __m512i r16_x4(const uint8_t *line, int part, int e)
{
    int32_t v;
    memcpy(&v, line + 32 * part + e, 4);
    return _mm512_set1_epi32(v);
}

/* acc + the dot of codes c (unsigned bytes) with x's four bytes of part at
 * e (r16_x4) in each 32-bit lane: vpdpbusd with x as its broadcast memory
 * operand ({1to16}), which GCC 12 does not form from the intrinsics (it
 * emits a vpbroadcastd and a register vpdpbusd: one more operation for
 * every vpdpbusd of the R16 kernels). The same arithmetic as
 * _mm512_dpbusd_epi32(acc, c, r16_x4(line, part, e)). */
static ALWAYS_INLINE __m512i r16_dpx4(__m512i acc, __m512i c, const uint8_t *line, int part, int e)
{
#if defined(__GNUC__) && !defined(WK_NO_INLINE_ASM)
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(c), "m"(*(const int32_t *)(line + 32 * part + e)));
    return acc;
#else
    return _mm512_dpbusd_epi32(acc, c, r16_x4(line, part, e));
#endif
}

/* Bytes of one row's block of the R16 dtype of K (Q4_1, Q5_0, Q8_0, Q6_K). */
static inline size_t r16_block_bytes(const enum x16_kind K)
{
    return K == X16_Q4_1   ? sizeof(struct wk_block_q4_1)
           : K == X16_Q5_0 ? sizeof(struct wk_block_q5_0)
           : K == X16_Q6_K ? sizeof(struct wk_block_q6_k)
           : K == X16_Q4_K ? sizeof(struct wk_block_q4_k)
                           : sizeof(struct wk_block_q8_0);
}

/* x~'s sums over each 16 elements of the prepared blocks (Q6_K's scales
 * cover 16), times Q6_K's offset -32: sums16[2b + p] = -32 ((d_b / 256) *
 * sum of 256 hi + lo over elements 16p .. 16p + 15 of block b), from
 * x16_prep's lines and scales (the -32 an exact power of two, kept here so
 * that the kernels take the factor from memory, a broadcast operand, not
 * a multiply and a register broadcast per group and token). */
static inline void r16_sums16(int64_t nb, const float *scratch, float *sums16)
{
    const uint8_t *lines = (const uint8_t *)scratch;
    const float *ds = scratch + nb * (X16_COMPACT_BYTES / 4);
    for (int64_t b = 0; b < nb; b++)
        for (int p = 0; p < 2; p++) {
            const uint8_t *line = lines + X16_COMPACT_BYTES * b + 16 * p;
            const __m512i h = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)line));
            const __m512i l = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(line + 32)));
            sums16[2 * b + p] =
                -32.0f * (ds[b] * (float)_mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(h, 8), l)));
        }
}

#include "r16_prefetch.h"

/*
 * Q6_K_R16 (repack.c): per half of a 256-block and k = 0..7, vectors A and
 * B hold the elements 4k.., 32 + 4k.. (low nibbles) and 64 + 4k..,
 * 96 + 4k.. (high), vector Q their top two bits; the four
 * 6-bit codes are formed in place (and, shift, or) and each dotted with
 * x's bytes at its elements. Q6_K's scales cover 16 elements, so the four
 * quarters keep their own sums and are closed after k = 0..3 and 4..7
 * (16-element groups 8h + 2q + p); w = d sc (q - 32), the -32 through x's
 * 16-element sums.
 */
static ALWAYS_INLINE void r16_group_q6k(int64_t n, const uint8_t *g, const float *scratch, const float *sums16,
                                        float *out, bool add, const bool pf)
{
    const size_t bb = sizeof(struct wk_block_q6_k);
    const int64_t nb = n / WK_QK_K;
    const uint8_t *lines = (const uint8_t *)scratch;
    const float *ds = scratch + (n / 32) * (X16_COMPACT_BYTES / 4);
    __m512 acc = _mm512_setzero_ps(), accc = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b = g + (size_t)i * WK_R16_ROWS * bb;
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
        for (int h = 0; h < 2; h++) {
            for (int p = 0; p < 2; p++) {
                const uint8_t *ph = b + 32 + 832 * (2 * h + p);
                r16_prefetch_x(lines, ds, sums16 + 16 * (i + 1), i + 1, nb, 2 * h + p);
                __m512i sh[4], sl[4];
                UNROLL
                for (int q = 0; q < 4; q++) sh[q] = sl[q] = _mm512_setzero_si512();
                UNROLL
                for (int kk = 0; kk < 4; kk++) {
                    const int k = 4 * p + kk;
                    r16_prefetch_part(b, WK_R16_ROWS * bb, 4 * (2 * h + p) + kk, 16, pf ? R16_PF_Q6K : 0, R16_PF_L2);
                    const __m512i A = _mm512_loadu_si512(ph + 192 * kk), B = _mm512_loadu_si512(ph + 192 * kk + 64);
                    const __m512i Q = _mm512_loadu_si512(ph + 192 * kk + 128);
                    __m512i c[4];
                    UNROLL
                    for (int q = 0; q < 4; q++) c[q] = r16_q6k_code(q & 1 ? B : A, Q, q);
                    UNROLL
                    for (int q = 0; q < 4; q++) { /* elements 128h + 32q + 4k .. : x block 8i + 4h + q */
                        const uint8_t *line = lines + X16_COMPACT_BYTES * (8 * i + 4 * h + q);
                        sh[q] = r16_dpx4(sh[q], c[q], line, 0, 4 * k);
                        sl[q] = r16_dpx4(sl[q], c[q], line, 1, 4 * k);
                    }
                }
                UNROLL
                for (int q = 0; q < 4; q++) {
                    const int64_t xb = 8 * i + 4 * h + q;
                    const __m512i sc8 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(ph + 768 + 16 * q)));
                    const __m512 sc = _mm512_mul_ps(_mm512_cvtepi32_ps(sc8), d);
                    const __m512i S = _mm512_add_epi32(_mm512_slli_epi32(sh[q], 8), sl[q]);
                    r16_dec_group(&acc, &accc, S, sc, ds[xb], sc, sums16[2 * xb + p]);
                }
            }
        }
    }
    __m512 r = _mm512_add_ps(acc, accc);
    if (add) r = _mm512_add_ps(r, _mm512_loadu_ps(out));
    _mm512_storeu_ps(out, r);
}

/*
 * Q4_K_R16 (repack.c): vector k of group g holds elements 4k.. of
 * sub-blocks 2g (low nibbles) and 2g + 1 (high); each sub-block keeps its
 * own sums and is closed with its 6-bit scale, unpacked for the 16 rows at
 * once from Q4_K's packing (three vectors: scales bytes 0-3, 4-7, 8-11 of
 * each row); w = d sc_s q - dmin m_s as in x16_rows_q4k.
 */
/* r16_shr and r16_q4k_scale_min: r16_codes.h */
static ALWAYS_INLINE void r16_group_q4k(int64_t n, const uint8_t *g, const float *scratch, float *out, bool add,
                                        const bool pf)
{
    const size_t bb = sizeof(struct wk_block_q4_k);
    const int64_t nb = n / WK_QK_K, nxb = n / 32;
    const uint8_t *lines = (const uint8_t *)scratch;
    const float *ds = scratch + nxb * (X16_COMPACT_BYTES / 4), *sums = ds + nxb;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc = _mm512_setzero_ps(), accc = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b = g + (size_t)i * WK_R16_ROWS * bb;
        const __m512i d0 = _mm512_loadu_si512(b + 64), d1 = _mm512_loadu_si512(b + 128), d2 = _mm512_loadu_si512(b + 192);
        __m512 accb = _mm512_setzero_ps(), accm = _mm512_setzero_ps();
        UNROLL
        for (int gg = 0; gg < 4; gg++) {
            const uint8_t *line[2] = {lines + X16_COMPACT_BYTES * (8 * i + 2 * gg),
                                      lines + X16_COMPACT_BYTES * (8 * i + 2 * gg + 1)};
            __m512i sh[2][2], sl[2][2]; /* [sub-block 2gg + j][k parity] */
            r16_prefetch_x(lines, ds, sums + 8 * (i + 1), i + 1, nb, gg);
            UNROLL
            for (int j = 0; j < 2; j++) sh[j][0] = sh[j][1] = sl[j][0] = sl[j][1] = _mm512_setzero_si512();
            UNROLL
            for (int k = 0; k < 8; k++) {
                r16_prefetch_part(b, WK_R16_ROWS * bb, 8 * gg + k, 32, pf ? R16_PF_Q4K : 0, R16_PF_L2);
                const __m512i v = _mm512_loadu_si512(b + 256 + 64 * (8 * gg + k));
                /* the high nibbles left in place (16 q): their sums are 16 times
                 * the codes', shifted back exactly below (one shift a sub-block,
                 * not one a vector) */
                const __m512i c[2] = {_mm512_and_si512(v, m4), _mm512_andnot_si512(m4, v)};
                UNROLL
                for (int j = 0; j < 2; j++) {
                    /* the intrinsics' vpbroadcastd and register vpdpbusd: here
                     * (not in the other kernels) faster than r16_dpx4's memory
                     * operand on the Zen 4 (43.5 against 37-40 GB/s, rows in L2) */
                    sh[j][k & 1] = _mm512_dpbusd_epi32(sh[j][k & 1], c[j], r16_x4(line[j], 0, 4 * k));
                    sl[j][k & 1] = _mm512_dpbusd_epi32(sl[j][k & 1], c[j], r16_x4(line[j], 1, 4 * k));
                }
            }
            UNROLL
            for (int j = 0; j < 2; j++) {
                const int s = 2 * gg + j;
                const int64_t xb = 8 * i + s;
                __m512i sc, mn;
                r16_q4k_scale_min(d0, d1, d2, s, &sc, &mn);
                const __m512i S16 = _mm512_add_epi32(_mm512_slli_epi32(_mm512_add_epi32(sh[j][0], sh[j][1]), 8),
                                                     _mm512_add_epi32(sl[j][0], sl[j][1]));
                const __m512i S = j ? _mm512_srai_epi32(S16, 4) : S16;
                r16_dec_group(&accb, &accm, S, _mm512_cvtepi32_ps(sc), ds[xb], _mm512_cvtepi32_ps(mn), sums[xb]);
            }
        }
        acc = _mm512_fmadd_ps(accb, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b)), acc);
        accc = _mm512_fnmadd_ps(accm, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + 32))), accc);
    }
    __m512 r = _mm512_add_ps(acc, accc);
    if (add) r = _mm512_add_ps(r, _mm512_loadu_ps(out));
    _mm512_storeu_ps(out, r);
}

/* Group of 16 rows at g (the column chunk's first block), n elements: the
 * 16 dots into out (added to it when add). */
static ALWAYS_INLINE void r16_group(const enum x16_kind K, int64_t n, const uint8_t *g, const float *scratch,
                                    float *out, bool add, const bool pf)
{
    const size_t bb = r16_block_bytes(K);
    const size_t head = K == X16_Q4_1 ? 64 : K == X16_Q5_0 ? 96 : 32; /* the 16 rows' scales (and qh) */
    const int64_t nb = n / 32;
    const uint8_t *lines = (const uint8_t *)scratch;
    const float *ds = scratch + nb * (X16_COMPACT_BYTES / 4), *sums = ds + nb;
    __m512 acc = _mm512_setzero_ps(), accc = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b = g + (size_t)i * WK_R16_ROWS * bb, *line = lines + X16_COMPACT_BYTES * i;
        r16_prefetch_part(b, WK_R16_ROWS * bb, 0, 1, pf ? R16_PF_B32 : 0, R16_PF_L2);
        /* two accumulators a part, so that no chain of dots is long */
        __m512i h[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
        __m512i l[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
        if (K == X16_Q4_1 || K == X16_Q5_0) {
            /* Q5_0: byte k of a row's qh holds vector k's fifth bits */
            const __m512i qh = K == X16_Q5_0 ? _mm512_loadu_si512(b + 32) : _mm512_setzero_si512();
            UNROLL
            for (int k = 0; k < 4; k++) { /* elements 4k.. (low nibbles) and 16 + 4k.. (high) */
                __m512i lo, hi;
                r16_nibble_codes(_mm512_loadu_si512(b + head + 64 * k), qh, k, K == X16_Q5_0, &lo, &hi);
                h[k & 1] = r16_dpx4(h[k & 1], lo, line, 0, 4 * k);
                h[k & 1] = r16_dpx4(h[k & 1], hi, line, 0, 16 + 4 * k);
                l[k & 1] = r16_dpx4(l[k & 1], lo, line, 1, 4 * k);
                l[k & 1] = r16_dpx4(l[k & 1], hi, line, 1, 16 + 4 * k);
            }
        } else {
            UNROLL
            for (int k = 0; k < 8; k++) { /* elements 4k .. 4k + 3, as q + 128 */
                const __m512i v = _mm512_loadu_si512(b + head + 64 * k);
                h[k & 1] = r16_dpx4(h[k & 1], v, line, 0, 4 * k);
                l[k & 1] = r16_dpx4(l[k & 1], v, line, 1, 4 * k);
            }
        }
        const __m512i sh = _mm512_add_epi32(h[0], h[1]), sl = _mm512_add_epi32(l[0], l[1]);
        const __m512i s = _mm512_add_epi32(_mm512_slli_epi32(sh, 8), sl);
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
        if (K == X16_Q4_1)
            r16_dec_group(&acc, &accc, s, dw, ds[i], _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + 32))),
                          sums[i]);
        else
            r16_dec_group(&acc, &accc, s, dw, ds[i], dw, (K == X16_Q5_0 ? -16.0f : -128.0f) * sums[i]);
    }
    __m512 r = _mm512_add_ps(acc, accc);
    if (add) r = _mm512_add_ps(r, _mm512_loadu_ps(out));
    _mm512_storeu_ps(out, r);
}

/* One column chunk (nc elements, its first block at wc in group 0) of
 * n_rows rows, x prepared in p (x16_prep_compact) and s16 (r16_sums16,
 * Q6_K only). */
static ALWAYS_INLINE void r16_chunk(const enum x16_kind K, int64_t nc, const uint8_t *wc, size_t stride,
                                    const float *p, const float *s16, float *out, int64_t n_rows, bool add,
                                    const bool pf)
{
    for (int64_t g = 0; g < n_rows / WK_R16_ROWS; g++) {
        const uint8_t *wg = wc + (size_t)g * WK_R16_ROWS * stride;
        if (K == X16_Q6_K) r16_group_q6k(nc, wg, p, s16, out + WK_R16_ROWS * g, add, pf);
        else if (K == X16_Q4_K) r16_group_q4k(nc, wg, p, out + WK_R16_ROWS * g, add, pf);
        else r16_group(K, nc, wg, p, out + WK_R16_ROWS * g, add, pf);
    }
}

/* The prepared x of a whole row for vec_dot_rows_r16 (wk_cpu.h): per
 * column chunk of X16_CHUNK, R16_PREP_CHUNK_FLOATS floats holding what
 * r16_rows prepares for that chunk (x16_prep_compact, then r16_sums16 in
 * the chunk's last X16_CHUNK / 16 floats). */
#define R16_PREP_CHUNK_FLOATS (X16_CHUNK / 32 * (X16_COMPACT_BYTES / 4 + 2) + X16_CHUNK / 16)
_Static_assert(R16_PREP_CHUNK_FLOATS == WK_R16_PREP_CHUNK_FLOATS && X16_CHUNK == WK_R16_PREP_CHUNK,
               "wk_cpu.h's R16 prepared-x size");
static void r16_prepare(int64_t n, const float *x, float *prep)
{
    for (int64_t c0 = 0; c0 < n; c0 += X16_CHUNK) {
        float *p = prep + (c0 / X16_CHUNK) * R16_PREP_CHUNK_FLOATS;
        const int64_t nc = WK_MIN(X16_CHUNK, n - c0);
        x16_prep_compact(nc, x + c0, p);
        r16_sums16(nc / 32, p, p + R16_PREP_CHUNK_FLOATS - X16_CHUNK / 16);
    }
}

/* vec_dot_rows_r16: r16_rows' bits from x prepared by r16_prepare. Each
 * group's column chunks are taken one after another, so the weights are
 * read in address order even where a row spans several chunks (an FFN
 * down projection of 8960: chunk by chunk across the groups, the reads
 * jumped 16 rows ahead every 18 KB and a thread streamed at 36-41% of a
 * plain read from memory; in order, as a plain read). A row's chunks are
 * still added in column order, the bits r16_rows gives. */
static ALWAYS_INLINE void r16_rows_prepared(const enum x16_kind K, int64_t n, const void *w, size_t stride,
                                            const float *prep, float *out, int64_t n_rows, const bool pf)
{
    const size_t bb = r16_block_bytes(K);
    const int64_t bs = K == X16_Q6_K || K == X16_Q4_K ? WK_QK_K : 32;
    for (int64_t g = 0; g < n_rows / WK_R16_ROWS; g++) {
        const uint8_t *wg = (const uint8_t *)w + (size_t)g * WK_R16_ROWS * stride;
        for (int64_t c0 = 0; c0 < n; c0 += X16_CHUNK) {
            const float *p = prep + (c0 / X16_CHUNK) * R16_PREP_CHUNK_FLOATS;
            r16_chunk(K, WK_MIN(X16_CHUNK, n - c0), wg + (size_t)(c0 / bs) * WK_R16_ROWS * bb, stride, p,
                      p + R16_PREP_CHUNK_FLOATS - X16_CHUNK / 16, out + WK_R16_ROWS * g, WK_R16_ROWS, c0 > 0, pf);
        }
    }
}

/* r16_rows for rows too long to prepare x whole on the stack: x prepared
 * a column chunk at a time, each chunk across every group. */
static ALWAYS_INLINE void r16_rows_by_chunk(const enum x16_kind K, int64_t n, const void *w, size_t stride,
                                            const float *x, float *out, int64_t n_rows, const bool pf)
{
    _Alignas(64) float scratch[X16_SCRATCH_FLOATS], sums16[X16_CHUNK / 16];
    const size_t bb = r16_block_bytes(K);
    const int64_t bs = K == X16_Q6_K || K == X16_Q4_K ? WK_QK_K : 32;
    for (int64_t c0 = 0; c0 < n; c0 += X16_CHUNK) {
        const int64_t nc = WK_MIN(X16_CHUNK, n - c0);
        x16_prep_compact(nc, x + c0, scratch);
        if (K == X16_Q6_K) r16_sums16(nc / 32, scratch, sums16);
        r16_chunk(K, nc, (const uint8_t *)w + (size_t)(c0 / bs) * WK_R16_ROWS * bb, stride, scratch, sums16, out,
                  n_rows, c0 > 0, pf);
    }
}

/* Rows up to this long have x prepared whole on the stack by r16_rows
 * (8 chunks, 40 KB). */
#define R16_ROWS_PREP_MAX (8 * X16_CHUNK)

/* vec_dot_rows_x16 for an R16 dtype: n_rows a multiple of 16, w at a
 * group's start, stride the row-major row bytes. x is prepared whole and
 * the groups read in address order (r16_rows_prepared's bits, which are
 * r16_rows_by_chunk's). */
static ALWAYS_INLINE void r16_rows(const enum x16_kind K, int64_t n, const void *w, size_t stride,
                                   const float *x, float *out, int64_t n_rows, const bool pf)
{
    if (n > R16_ROWS_PREP_MAX) {
        r16_rows_by_chunk(K, n, w, stride, x, out, n_rows, pf);
        return;
    }
    _Alignas(64) float prep[R16_ROWS_PREP_MAX / X16_CHUNK * R16_PREP_CHUNK_FLOATS];
    r16_prepare(n, x, prep);
    r16_rows_prepared(K, n, w, stride, prep, out, n_rows, pf);
}

/* vec_dot_rows_x16_tokens for an R16 dtype: per group of up to 4 tokens
 * and column chunk, each token's x prepared, then each group of rows for
 * every token in turn; each token's results are r16_rows' bits. */
static ALWAYS_INLINE void r16_tokens(const enum x16_kind K, int64_t n, const void *w, size_t stride,
                                     const float *x, size_t ldx, int32_t n_tokens, float *out, size_t ldo,
                                     int64_t n_rows, const bool pf)
{
    _Alignas(64) float scratch[4][X16_SCRATCH_FLOATS], sums16[4][X16_CHUNK / 16];
    const size_t bb = r16_block_bytes(K);
    const int64_t bs = K == X16_Q6_K || K == X16_Q4_K ? WK_QK_K : 32;
    for (int32_t t0 = 0; t0 < n_tokens; t0 += 4) {
        const int T = (int)WK_MIN(4, n_tokens - t0);
        for (int64_t c0 = 0; c0 < n; c0 += X16_CHUNK) {
            const int64_t nc = WK_MIN(X16_CHUNK, n - c0);
            for (int t = 0; t < T; t++) {
                x16_prep_compact(nc, x + (size_t)(t0 + t) * ldx + c0, scratch[t]);
                if (K == X16_Q6_K) r16_sums16(nc / 32, scratch[t], sums16[t]);
            }
            for (int64_t g = 0; g < n_rows / WK_R16_ROWS; g++) {
                const uint8_t *wg = (const uint8_t *)w + (size_t)g * WK_R16_ROWS * stride + (size_t)(c0 / bs) * WK_R16_ROWS * bb;
                for (int t = 0; t < T; t++)
                    r16_chunk(K, nc, wg, stride, scratch[t], sums16[t], out + (size_t)(t0 + t) * ldo + WK_R16_ROWS * g,
                              WK_R16_ROWS, c0 > 0, pf);
            }
        }
    }
}

/* Prefill over the R16 layout: the integer GEMM (gemm_r16), in its own file. */
#include "r16_gemm_template.h"

/* Each entry twice: with the software prefetches of R16_PF_* (name) and
 * without them (nopf_name); wk_cpu_features' decode_prefetch picks. */
#define R16_ENTRIES(name, K, PF, pre)                                                                        \
    static void r16_rows_##pre##name(int64_t n, const void *w, size_t stride, const float *x, float *out,    \
                                     int64_t n_rows)                                                         \
    {                                                                                                        \
        r16_rows(K, n, w, stride, x, out, n_rows, PF);                                                       \
    }                                                                                                        \
    static void r16_prepared_##pre##name(int64_t n, const void *w, size_t stride, const float *prep,         \
                                         float *out, int64_t n_rows)                                         \
    {                                                                                                        \
        r16_rows_prepared(K, n, w, stride, prep, out, n_rows, PF);                                           \
    }                                                                                                        \
    static void r16_tokens_##pre##name(int64_t n, const void *w, size_t stride, const float *x, size_t ldx,  \
                                       int32_t n_tokens, float *out, size_t ldo, int64_t n_rows)             \
    {                                                                                                        \
        r16_tokens(K, n, w, stride, x, ldx, n_tokens, out, ldo, n_rows, PF);                                 \
    }
#define R16_ENTRIES_BOTH(name, K) R16_ENTRIES(name, K, true, ) R16_ENTRIES(name, K, false, nopf_)
R16_ENTRIES_BOTH(q4_1, X16_Q4_1)
R16_ENTRIES_BOTH(q5_0, X16_Q5_0)
R16_ENTRIES_BOTH(q8_0, X16_Q8_0)
R16_ENTRIES_BOTH(q6_k, X16_Q6_K)
R16_ENTRIES_BOTH(q4_k, X16_Q4_K)
#endif

DOT_ROWS_FN(x16_rows_q4_k, x16_rows_q4k, WK_QK_K, sizeof(struct wk_block_q4_k), X16_CHUNK, x16_prep,
            X16_SCRATCH_FLOATS)
DOT_ROWS_TOKENS_FN(x16_tokens_q4_k, x16_rows_q4k, WK_QK_K, sizeof(struct wk_block_q4_k), X16_CHUNK,
                   x16_prep, X16_SCRATCH_FLOATS)
DOT_ROWS_FN(x16_rows_q5_k, x16_rows_q5k, WK_QK_K, sizeof(struct wk_block_q5_k), X16_CHUNK, x16_prep,
            X16_SCRATCH_FLOATS)
DOT_ROWS_TOKENS_FN(x16_tokens_q5_k, x16_rows_q5k, WK_QK_K, sizeof(struct wk_block_q5_k), X16_CHUNK,
                   x16_prep, X16_SCRATCH_FLOATS)
DOT_ROWS_FN(x16_rows_i4g64, x16_rows_i4, 64, sizeof(struct wk_block_i4g64), X16_CHUNK, x16_prep_pairs,
            X16_SCRATCH_FLOATS)
DOT_ROWS_TOKENS_FN(x16_tokens_q4_0, x16_rows_X16_Q4_0, 32, sizeof(struct wk_block_q4_0), X16_CHUNK,
                   x16_prep, X16_SCRATCH_FLOATS)
DOT_ROWS_TOKENS_FN(x16_tokens_q4_1, x16_rows_X16_Q4_1, 32, sizeof(struct wk_block_q4_1), X16_CHUNK,
                   x16_prep, X16_SCRATCH_FLOATS)
DOT_ROWS_TOKENS_FN(x16_tokens_q5_0, x16_rows_X16_Q5_0, 32, sizeof(struct wk_block_q5_0), X16_CHUNK,
                   x16_prep, X16_SCRATCH_FLOATS)
DOT_ROWS_TOKENS_FN(x16_tokens_q5_1, x16_rows_X16_Q5_1, 32, sizeof(struct wk_block_q5_1), X16_CHUNK,
                   x16_prep, X16_SCRATCH_FLOATS)
DOT_ROWS_TOKENS_FN(x16_tokens_i4g64, x16_rows_i4, 64, sizeof(struct wk_block_i4g64), X16_CHUNK,
                   x16_prep_pairs, X16_SCRATCH_FLOATS)

void WK_X16_FILL(struct wk_cpu_kernels *k)
{
    k->vec_dot_rows_x16[WK_DTYPE_Q4_0] = x16_rows_q4_0;
    k->vec_dot_rows_x16[WK_DTYPE_Q4_1] = x16_rows_q4_1;
    k->vec_dot_rows_x16[WK_DTYPE_Q5_0] = x16_rows_q5_0;
    k->vec_dot_rows_x16[WK_DTYPE_Q5_1] = x16_rows_q5_1;
    k->vec_dot_rows_x16[WK_DTYPE_I4G64] = x16_rows_i4g64;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q4_0] = x16_tokens_q4_0;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q4_1] = x16_tokens_q4_1;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q5_0] = x16_tokens_q5_0;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q5_1] = x16_tokens_q5_1;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_I4G64] = x16_tokens_i4g64;
    k->vec_dot_rows_x16[WK_DTYPE_Q4_K] = x16_rows_q4_k;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q4_K] = x16_tokens_q4_k;
    k->vec_dot_rows_x16[WK_DTYPE_Q5_K] = x16_rows_q5_k;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q5_K] = x16_tokens_q5_k;
    k->vec_dot_rows_x16[WK_DTYPE_MXFP4] = x16_rows_mxfp4;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_MXFP4] = x16_tokens_mxfp4;
#if WK_AVX512_VNNI
    k->vec_dot_rows_x16[WK_DTYPE_Q8_0] = x16_rows_q8_0;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_Q8_0] = x16_tokens_q8_0;
    k->vec_dot_rows_x16[WK_DTYPE_IQ4_NL] = x16_rows_iq4_nl;
    k->vec_dot_rows_x16_tokens[WK_DTYPE_IQ4_NL] = x16_tokens_iq4_nl;
    /* the R16 dtypes: decode, verify, and decode with x prepared once; batched
     * decode with x prepared once through the GEMM's tiles on decode's float
     * chain (r16_gemm_template.h: the weights unpacked once for up to
     * R16_GEMM_T tokens, each token's bits its lone decode's) */
    const bool pf = wk_cpu_features_get()->decode_prefetch;
#define R16_FILL(name, dt)                                                                                       \
    (k->vec_dot_rows_x16[dt] = pf ? r16_rows_##name : r16_rows_nopf_##name,                                       \
     k->vec_dot_rows_x16_tokens[dt] = pf ? r16_tokens_##name : r16_tokens_nopf_##name,                            \
     k->vec_dot_rows_r16[dt] = pf ? r16_prepared_##name : r16_prepared_nopf_##name,                               \
     k->vec_dot_rows_r16_tokens[dt] = pf ? r16_gemm_tokens_##name : r16_gemm_tokens_nopf_##name)
    R16_FILL(q4_1, WK_DTYPE_Q4_1_R16);
    R16_FILL(q5_0, WK_DTYPE_Q5_0_R16);
    R16_FILL(q8_0, WK_DTYPE_Q8_0_R16);
    R16_FILL(q6_k, WK_DTYPE_Q6_K_R16);
    R16_FILL(q4_k, WK_DTYPE_Q4_K_R16);
#undef R16_FILL
    k->gemm_r16[WK_DTYPE_Q4_1_R16] = r16_gemm_q4_1;
    k->gemm_r16[WK_DTYPE_Q5_0_R16] = r16_gemm_q5_0;
    k->gemm_r16[WK_DTYPE_Q8_0_R16] = r16_gemm_q8_0;
    k->gemm_r16[WK_DTYPE_Q4_K_R16] = r16_gemm_q4_k;
    k->gemm_r16[WK_DTYPE_Q6_K_R16] = r16_gemm_q6_k;
    k->r16_prepare = r16_prepare;
#endif
}
