/*
 * dot_rows_avx512.c - the multi-row decode dots (vec_dot_rows) for the
 * 32-element block types Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, the affine groups
 * I8G64, I4G64 and the float types F32, F16, BF16: out[r] = dot(row r, x) with x in f32, several rows at
 * once (dot_rows.h has the scheme; the K-quants are in dot_rows_k_avx512.c).
 *
 * Spec: wk_ref_vec_dot_<type>_f32 in src/tensor/quant_ref.c. As in
 * dot_f32_avx512.c, integer q are widened to 32-bit lanes, converted to
 * float exactly and multiplied with x by FMA, with the scales factored out:
 *   sum w*x = d * sum(q * x) + c * sum(x)    per block,
 * c = m for Q4_1/Q5_1, -8d for Q4_0 and -16d for Q5_0 (their offsets
 * moved out of the per-element work), sum(x) from the per-call sums xs.
 * Per block, four rows cost:
 *   - one load of x's 32 floats, shared by the rows (up to 4);
 *   - the rows' f16 scales gathered in a general register and converted by
 *     one vcvtph2ps for all rows; the c * sum(x) terms of all four rows are
 *     then one 128-bit FMA;
 *   - per row: one 16-byte load, one widening of the 16 bytes to 32-bit
 *     lanes, where an and and a shift split both nibbles at once (Q5's
 *     fifth bits are or-ed in under a mask register taken straight from
 *     qh), two conversions, a multiply, an FMA and the scale's FMA.
 * On Zen 4 the 512-bit vector pipes are what these kernels run out of
 * (about two 512-bit ops a cycle, one of them FMA/multiply, conversions
 * and widenings on the others), which is why so much work is moved out of
 * the per-row part. Widening to 16-bit lanes and converting with vcvtph2ps
 * (small integers read as f16 subnormals) measured 10-15% slower.
 * Results differ from the reference by float rounding only (sums run in
 * 16 lanes, then a tree).
 */
#include "dot_rows.h"

/* 16 signed bytes to 16 floats (exact). */
static inline __m512 i8_to_ps(__m128i v)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
}
static inline __m128i load16(const void *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}

/* ------------------------------------------------------ 32-element blocks */

enum kind32 { K_Q8_0, K_Q4_0, K_Q4_1, K_Q5_0, K_Q5_1 };

/*
 * R rows of 32-element blocks of kind K: bb bytes a block, d at offset 0,
 * m at 2 (Q4_1, Q5_1), qh (Q5) and qs after them.
 */
static ALWAYS_INLINE void rows32(const enum kind32 K, const int R, int64_t n, const uint8_t *w,
                                 size_t stride, const float *x, const float *xs, float *out,
                                 bool add)
{
    const size_t bb = K == K_Q8_0   ? sizeof(struct wk_block_q8_0)
                      : K == K_Q4_0 ? sizeof(struct wk_block_q4_0)
                      : K == K_Q4_1 ? sizeof(struct wk_block_q4_1)
                      : K == K_Q5_0 ? sizeof(struct wk_block_q5_0)
                                    : sizeof(struct wk_block_q5_1);
    const bool has_m = K == K_Q4_1 || K == K_Q5_1;
    const bool is_q5 = K == K_Q5_0 || K == K_Q5_1;
    const size_t qh_off = has_m ? 4 : 2;
    const size_t qs_off = K == K_Q8_0 ? 2 : qh_off + (is_q5 ? 4 : 0);
    /* Q4_0's and Q5_0's offsets, applied as offset * d * sum(x) */
    const float offset = K == K_Q4_0 ? -8.0f : -16.0f;
    const __m512i m4 = _mm512_set1_epi32(0x0F), c16 = _mm512_set1_epi32(16);
    _Alignas(16) float ds[4];
    __m512 acc[4];
    UNROLL
    for (int r = 0; r < 4; r++) acc[r] = _mm512_setzero_ps();
    __m128 accc = _mm_setzero_ps(); /* the c * sum(x) terms, row r in lane r */
    const size_t pf = rows_pf_dist(R, stride);
    size_t pf_next = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        const uint8_t *b = w + i * bb;
        rows_prefetch(R, w, stride, pf, &pf_next, (size_t)(i + 1) * bb);
        const __m128 d = rows_f16x4(R, b, stride, 0);
        rows_spill(ds, d);
        if (has_m)
            accc = _mm_fmadd_ps(rows_f16x4(R, b, stride, 2), _mm_set1_ps(xs[i]), accc);
        else if (K != K_Q8_0)
            accc = _mm_fmadd_ps(d, _mm_set1_ps(offset * xs[i]), accc);
        const __m512 x0 = _mm512_loadu_ps(x + 32 * i), x1 = _mm512_loadu_ps(x + 32 * i + 16);
        UNROLL
        for (int r = 0; r < R; r++) {
            const uint8_t *br = b + r * stride;
            __m512 lo, hi;
            if (K == K_Q8_0) {
                lo = i8_to_ps(load16(br + qs_off));
                hi = i8_to_ps(load16(br + qs_off + 16));
            } else {
                /* element j of the block is the low nibble of qs[j] for
                 * j < 16 and the high nibble of qs[j - 16] otherwise */
                const __m512i v = _mm512_cvtepu8_epi32(load16(br + qs_off));
                __m512i l = _mm512_and_si512(v, m4), h = _mm512_srli_epi32(v, 4);
                if (is_q5) {
                    uint32_t qh;
                    memcpy(&qh, br + qh_off, 4);
                    l = _mm512_mask_or_epi32(l, (__mmask16)qh, l, c16);
                    h = _mm512_mask_or_epi32(h, (__mmask16)(qh >> 16), h, c16);
                }
                lo = _mm512_cvtepi32_ps(l);
                hi = _mm512_cvtepi32_ps(h);
            }
            const __m512 s = _mm512_fmadd_ps(hi, x1, _mm512_mul_ps(lo, x0));
            acc[r] = _mm512_fmadd_ps(s, _mm512_set1_ps(ds[r]), acc[r]);
        }
    }
    rows_finish(R, acc, accc, out, add);
}

#define ROWS32(K)                                                                                  \
    static ALWAYS_INLINE void rows_##K(const int R, int64_t n, const uint8_t *w, size_t stride,   \
                                       const float *x, const float *xs, float *out, bool add)      \
    {                                                                                              \
        rows32(K, R, n, w, stride, x, xs, out, add);                                               \
    }
ROWS32(K_Q8_0)
ROWS32(K_Q4_0)
ROWS32(K_Q4_1)
ROWS32(K_Q5_0)
ROWS32(K_Q5_1)

DOT_ROWS_FN(vec_dot_rows_q8_0, rows_K_Q8_0, 32, sizeof(struct wk_block_q8_0), 0, rows_no_prep, 1)
DOT_ROWS_FN(vec_dot_rows_q4_0, rows_K_Q4_0, 32, sizeof(struct wk_block_q4_0), XS_CHUNK, rows_x_sums,
            XS_MAX)
DOT_ROWS_FN(vec_dot_rows_q4_1, rows_K_Q4_1, 32, sizeof(struct wk_block_q4_1), XS_CHUNK, rows_x_sums,
            XS_MAX)
DOT_ROWS_FN(vec_dot_rows_q5_0, rows_K_Q5_0, 32, sizeof(struct wk_block_q5_0), XS_CHUNK, rows_x_sums,
            XS_MAX)
DOT_ROWS_FN(vec_dot_rows_q5_1, rows_K_Q5_1, 32, sizeof(struct wk_block_q5_1), XS_CHUNK, rows_x_sums,
            XS_MAX)

/* ------------------------------------------------------ affine groups of 64 */

/*
 * I8G64 and I4G64 (MLX's affine groups: w = scale * q + bias, q unsigned,
 * f16 scale and bias per 64 elements), as the 32-element kinds above:
 *   sum w*x = scale * sum(q * x) + bias * sum(x)    per group,
 * the bias terms of four rows one 128-bit FMA with the group's sum of x.
 * I4G64 packs element 2i in the low nibble of q[i] and 2i+1 in the high
 * one, so PREP lays each group's x out as its 32 even elements then its 32
 * odd ones (and the group sums after the chunk's x): a 16-byte load of
 * codes then meets x in two plain 16-float loads, as Q4's layout does.
 */
#define AFF_CHUNK 8192 /* elements per column chunk: x, then its 128 group sums */

/* Group sums of x for I8G64: xs[g] at scratch[g]. */
static inline void aff8_prep(int64_t n, const float *x, float *xs)
{
    for (int64_t g = 0; g < n / 64; g++) {
        __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_loadu_ps(x + 64 * g), _mm512_loadu_ps(x + 64 * g + 16)),
                                 _mm512_add_ps(_mm512_loadu_ps(x + 64 * g + 32), _mm512_loadu_ps(x + 64 * g + 48)));
        xs[g] = _mm512_reduce_add_ps(s);
    }
}

/* x deinterleaved per group for I4G64 (even elements, then odd), the
 * group sums after it at scratch[AFF_CHUNK + g]. */
static inline void aff4_prep(int64_t n, const float *x, float *scratch)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int64_t g = 0; g < n / 64; g++) {
        const float *xg = x + 64 * g;
        float *d = scratch + 64 * g;
        for (int h = 0; h < 2; h++) { /* elements 32h .. 32h+31 */
            const __m512 a = _mm512_loadu_ps(xg + 32 * h), b = _mm512_loadu_ps(xg + 32 * h + 16);
            _mm512_storeu_ps(d + 16 * h, _mm512_permutex2var_ps(a, even, b));
            _mm512_storeu_ps(d + 32 + 16 * h, _mm512_permutex2var_ps(a, odd, b));
        }
    }
    aff8_prep(n, x, scratch + AFF_CHUNK);
}

/* R rows of I8G64 (bits 8) or I4G64 (bits 4) over n elements. */
static ALWAYS_INLINE void rows_aff(const int bits, const int R, int64_t n, const uint8_t *w,
                                   size_t stride, const float *x, const float *scratch, float *out,
                                   bool add)
{
    const size_t bb = bits == 8 ? sizeof(struct wk_block_i8g64) : sizeof(struct wk_block_i4g64);
    const float *xs = bits == 8 ? scratch : scratch + AFF_CHUNK;
    const float *xp = bits == 8 ? x : scratch; /* x as the codes meet it */
    const __m512i m4 = _mm512_set1_epi32(0x0F);
    _Alignas(16) float ds[4];
    __m512 acc[4];
    UNROLL
    for (int r = 0; r < 4; r++) acc[r] = _mm512_setzero_ps();
    __m128 accc = _mm_setzero_ps();
    const size_t pf = rows_pf_dist(R, stride);
    size_t pf_next = 0;
    for (int64_t g = 0; g < n / 64; g++) {
        const uint8_t *b = w + g * bb;
        rows_prefetch(R, w, stride, pf, &pf_next, (size_t)(g + 1) * bb);
        rows_spill(ds, rows_f16x4(R, b, stride, 0));
        accc = _mm_fmadd_ps(rows_f16x4(R, b, stride, 2), _mm_set1_ps(xs[g]), accc);
        const float *xg = xp + 64 * g;
        const __m512 x0 = _mm512_loadu_ps(xg), x1 = _mm512_loadu_ps(xg + 16);
        const __m512 x2 = _mm512_loadu_ps(xg + 32), x3 = _mm512_loadu_ps(xg + 48);
        UNROLL
        for (int r = 0; r < R; r++) {
            const uint8_t *q = b + r * stride + 4;
            __m512 c0, c1, c2, c3;
            if (bits == 8) {
                c0 = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(load16(q)));
                c1 = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(load16(q + 16)));
                c2 = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(load16(q + 32)));
                c3 = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(load16(q + 48)));
            } else {
                /* bytes 0-15: elements 0..31, even ones in the low nibbles
                 * (x0: even x of 0..31, x2: odd); bytes 16-31: 32..63 */
                const __m512i v0 = _mm512_cvtepu8_epi32(load16(q)), v1 = _mm512_cvtepu8_epi32(load16(q + 16));
                c0 = _mm512_cvtepi32_ps(_mm512_and_si512(v0, m4));
                c2 = _mm512_cvtepi32_ps(_mm512_srli_epi32(v0, 4));
                c1 = _mm512_cvtepi32_ps(_mm512_and_si512(v1, m4));
                c3 = _mm512_cvtepi32_ps(_mm512_srli_epi32(v1, 4));
            }
            __m512 sum = _mm512_fmadd_ps(c1, x1, _mm512_mul_ps(c0, x0));
            sum = _mm512_fmadd_ps(c3, x3, _mm512_fmadd_ps(c2, x2, sum));
            acc[r] = _mm512_fmadd_ps(sum, _mm512_set1_ps(ds[r]), acc[r]);
        }
    }
    rows_finish(R, acc, accc, out, add);
}

static ALWAYS_INLINE void rows_I8G64(const int R, int64_t n, const uint8_t *w, size_t stride, const float *x,
                                     const float *xs, float *out, bool add)
{
    rows_aff(8, R, n, w, stride, x, xs, out, add);
}
static ALWAYS_INLINE void rows_I4G64(const int R, int64_t n, const uint8_t *w, size_t stride, const float *x,
                                     const float *xs, float *out, bool add)
{
    rows_aff(4, R, n, w, stride, x, xs, out, add);
}
DOT_ROWS_FN(vec_dot_rows_i8g64, rows_I8G64, 64, sizeof(struct wk_block_i8g64), AFF_CHUNK, aff8_prep,
            AFF_CHUNK / 64)
DOT_ROWS_FN(vec_dot_rows_i4g64, rows_I4G64, 64, sizeof(struct wk_block_i4g64), AFF_CHUNK, aff4_prep,
            AFF_CHUNK + AFF_CHUNK / 64)

/* ------------------------------------------------------------ float rows */

enum kindf { K_F32, K_F16, K_BF16 };

/* 16 weights from p as floats; m masks the lanes that exist (masked-off
 * lanes read nothing, so a row may end at the edge of a page). */
static ALWAYS_INLINE __m512 load_w(const enum kindf K, const uint8_t *p, __mmask16 m)
{
    if (K == K_F32) return _mm512_maskz_loadu_ps(m, p);
    __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if (K == K_F16) return _mm512_cvtph_ps(h);
    /* bf16 is the top half of an f32 */
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* R rows of n floats of kind K, any n (masked tail). Two accumulators a
 * row, so even a lone row keeps two FMA chains in flight. */
static ALWAYS_INLINE void rowsf(const enum kindf K, const int R, int64_t n, const uint8_t *w,
                                size_t stride, const float *x, const float *xs, float *out,
                                bool add)
{
    const size_t es = K == K_F32 ? 4 : 2;
    const __mmask16 all = 0xFFFF;
    __m512 acc[4], acc2[4];
    UNROLL
    for (int r = 0; r < 4; r++) acc[r] = acc2[r] = _mm512_setzero_ps();
    const size_t pf = rows_pf_dist(R, stride);
    size_t pf_next = 0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        rows_prefetch(R, w, stride, pf, &pf_next, (size_t)(i + 32) * es);
        const __m512 x0 = _mm512_loadu_ps(x + i), x1 = _mm512_loadu_ps(x + i + 16);
        UNROLL
        for (int r = 0; r < R; r++) {
            const uint8_t *p = w + r * stride + i * es;
            acc[r] = _mm512_fmadd_ps(load_w(K, p, all), x0, acc[r]);
            acc2[r] = _mm512_fmadd_ps(load_w(K, p + 16 * es, all), x1, acc2[r]);
        }
    }
    for (; i < n; i += 16) {
        const __mmask16 m = wk__avx512_mask16(WK_MIN(16, n - i));
        const __m512 x0 = _mm512_maskz_loadu_ps(m, x + i);
        UNROLL
        for (int r = 0; r < R; r++)
            acc[r] = _mm512_fmadd_ps(load_w(K, w + r * stride + i * es, m), x0, acc[r]);
    }
    UNROLL
    for (int r = 0; r < R; r++) acc[r] = _mm512_add_ps(acc[r], acc2[r]);
    rows_finish(R, acc, _mm_setzero_ps(), out, add);
}

#define ROWSF(K)                                                                                   \
    static ALWAYS_INLINE void rows_##K(const int R, int64_t n, const uint8_t *w, size_t stride,   \
                                       const float *x, const float *xs, float *out, bool add)      \
    {                                                                                              \
        rowsf(K, R, n, w, stride, x, xs, out, add);                                                \
    }
ROWSF(K_F32)
ROWSF(K_F16)
ROWSF(K_BF16)

/*
 * T tokens (1..4) at once over R rows (1..2) of kind K: for every (row,
 * token) exactly rowsf's arithmetic (the same two accumulators, the same
 * order, the same tail and reduction), with each 16 weights loaded and
 * converted once for the T tokens instead of once per token.
 */
static ALWAYS_INLINE void rowsf_tokens(const enum kindf K, const int R, const int T, int64_t n,
                                       const uint8_t *w, size_t stride, const float *x,
                                       size_t ldx, float *out, size_t ldo)
{
    const size_t es = K == K_F32 ? 4 : 2;
    const __mmask16 all = 0xFFFF;
    __m512 acc[4][4], acc2[4][4]; /* [token][row] */
    UNROLL
    for (int t = 0; t < 4; t++)
        UNROLL
        for (int r = 0; r < 4; r++) acc[t][r] = acc2[t][r] = _mm512_setzero_ps();
    const size_t pf = rows_pf_dist(R, stride);
    size_t pf_next = 0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        rows_prefetch(R, w, stride, pf, &pf_next, (size_t)(i + 32) * es);
        UNROLL
        for (int r = 0; r < R; r++) {
            const uint8_t *p = w + r * stride + i * es;
            const __m512 w0 = load_w(K, p, all), w1 = load_w(K, p + 16 * es, all);
            UNROLL
            for (int t = 0; t < T; t++) {
                acc[t][r] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + t * ldx + i), acc[t][r]);
                acc2[t][r] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + t * ldx + i + 16), acc2[t][r]);
            }
        }
    }
    for (; i < n; i += 16) {
        const __mmask16 m = wk__avx512_mask16(WK_MIN(16, n - i));
        UNROLL
        for (int r = 0; r < R; r++) {
            const __m512 w0 = load_w(K, w + r * stride + i * es, m);
            UNROLL
            for (int t = 0; t < T; t++)
                acc[t][r] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m, x + t * ldx + i), acc[t][r]);
        }
    }
    UNROLL
    for (int t = 0; t < T; t++) {
        UNROLL
        for (int r = 0; r < R; r++) acc[t][r] = _mm512_add_ps(acc[t][r], acc2[t][r]);
        rows_finish(R, acc[t], _mm_setzero_ps(), out + t * ldo, false);
    }
}

/* The entry point for kind K: rows in pairs, tokens in fours. */
#define ROWSF_TOKENS_FN(name, K)                                                                   \
    static void name(int64_t n, const void *w, size_t stride, const float *x, size_t ldx,          \
                     int32_t n_tokens, float *out, size_t ldo, int64_t n_rows)                     \
    {                                                                                              \
        const uint8_t *wb = w;                                                                     \
        rows_prefetch_start(wb, stride * (size_t)n_rows);                                          \
        for (int64_t r = 0; r < n_rows; r += 2) {                                                  \
            const bool two = n_rows - r >= 2;                                                      \
            for (int32_t t = 0; t < n_tokens; t += 4) {                                            \
                const float *xt = x + (size_t)t * ldx;                                             \
                float *ot = out + (size_t)t * ldo + r;                                             \
                const uint8_t *wr = wb + r * stride;                                               \
                switch (WK_MIN(4, n_tokens - t) * 2 + two) {                                       \
                case 2: rowsf_tokens(K, 1, 1, n, wr, stride, xt, ldx, ot, ldo); break;             \
                case 3: rowsf_tokens(K, 2, 1, n, wr, stride, xt, ldx, ot, ldo); break;             \
                case 4: rowsf_tokens(K, 1, 2, n, wr, stride, xt, ldx, ot, ldo); break;             \
                case 5: rowsf_tokens(K, 2, 2, n, wr, stride, xt, ldx, ot, ldo); break;             \
                case 6: rowsf_tokens(K, 1, 3, n, wr, stride, xt, ldx, ot, ldo); break;             \
                case 7: rowsf_tokens(K, 2, 3, n, wr, stride, xt, ldx, ot, ldo); break;             \
                case 8: rowsf_tokens(K, 1, 4, n, wr, stride, xt, ldx, ot, ldo); break;             \
                default: rowsf_tokens(K, 2, 4, n, wr, stride, xt, ldx, ot, ldo); break;            \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
ROWSF_TOKENS_FN(vec_dot_rows_tokens_f32, K_F32)
ROWSF_TOKENS_FN(vec_dot_rows_tokens_f16, K_F16)
ROWSF_TOKENS_FN(vec_dot_rows_tokens_bf16, K_BF16)

/* Block size 1: the float kernels take any n, in one chunk. */
DOT_ROWS_FN(vec_dot_rows_f32, rows_K_F32, 1, 4, 0, rows_no_prep, 1)
DOT_ROWS_FN(vec_dot_rows_f16, rows_K_F16, 1, 2, 0, rows_no_prep, 1)
DOT_ROWS_FN(vec_dot_rows_bf16, rows_K_BF16, 1, 2, 0, rows_no_prep, 1)

void wk__avx512_fill_dot_rows(struct wk_cpu_kernels *k)
{
    k->vec_dot_rows[WK_DTYPE_Q8_0] = vec_dot_rows_q8_0;
    k->vec_dot_rows[WK_DTYPE_Q4_0] = vec_dot_rows_q4_0;
    k->vec_dot_rows[WK_DTYPE_Q4_1] = vec_dot_rows_q4_1;
    k->vec_dot_rows[WK_DTYPE_Q5_0] = vec_dot_rows_q5_0;
    k->vec_dot_rows[WK_DTYPE_Q5_1] = vec_dot_rows_q5_1;
    k->vec_dot_rows[WK_DTYPE_F32] = vec_dot_rows_f32;
    k->vec_dot_rows[WK_DTYPE_F16] = vec_dot_rows_f16;
    k->vec_dot_rows[WK_DTYPE_BF16] = vec_dot_rows_bf16;
    k->vec_dot_rows[WK_DTYPE_I8G64] = vec_dot_rows_i8g64;
    k->vec_dot_rows[WK_DTYPE_I4G64] = vec_dot_rows_i4g64;
    k->vec_dot_rows_tokens[WK_DTYPE_F32] = vec_dot_rows_tokens_f32;
    k->vec_dot_rows_tokens[WK_DTYPE_F16] = vec_dot_rows_tokens_f16;
    k->vec_dot_rows_tokens[WK_DTYPE_BF16] = vec_dot_rows_tokens_bf16;
}
