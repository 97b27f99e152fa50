/*
 * dot_rows_k_avx512.c - the multi-row decode dots (vec_dot_rows) for the
 * K-quants Q4_K, Q5_K and Q6_K: out[r] = dot(row r, x) with x in f32, up
 * to four rows at once sharing the loads of x (dot_rows.h has the scheme;
 * block layouts in src/tensor/wk_tensor.h).
 *
 * Spec: wk_ref_vec_dot_<type>_f32 in src/tensor/quant_ref.c. The integer q
 * are brought into 32-bit lanes (widened, or for Q4_K masked in place),
 * converted to float exactly and multiplied with x by FMA, the scales
 * factored out as in dot_f32_avx512.c:
 *   - Q4_K/Q5_K, per 32-element sub-block j of a 256-element block,
 *       sum w*x = (d*sc_j) * sum(q * x) - (dmin*m_j) * sum(x),
 *     where sum(x) comes from the per-call sums xs, so the whole min term
 *     of a block is one 8-lane FMA per row (mins times xs) instead of
 *     per-element work;
 *   - Q6_K forms to_f32's weights (d*sc_j) * (q - 32) 16 at a time.
 * Only float rounding separates the results from the reference.
 */
#include "dot_rows.h"

static inline __m128i load16(const void *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}

/*
 * sd[0..7] = d * sc_j and sd[8..15] = dmin * m_j of a Q4_K/Q5_K block (d
 * and dmin already floats): the products to_f32 forms. Kept in memory (the
 * asm tells the compiler they may have changed) so the kernels read them
 * with broadcast loads, which use a load port, instead of lane permutes on
 * the busy vector pipes.
 */
static inline void k_factors(const uint8_t *scales, const float *d, const float *dmin, float sd[16])
{
    __m512 scm = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(wk__avx512_k_scales_mins(scales)));
    __m512 dd = _mm512_insertf32x8(_mm512_set1_ps(*d), _mm256_set1_ps(*dmin), 1);
    _mm512_store_ps(sd, _mm512_mul_ps(scm, dd));
    __asm__("" : "+m"(*(float(*)[16])sd));
}

/* d and dmin of the current block of R rows, as floats in dm[0..3] and
 * dm[4..7]: two conversions for all rows. */
static ALWAYS_INLINE void k_d_dmin(const int R, const uint8_t *b, size_t stride, float dm[8])
{
    rows_spill(dm, rows_f16x4(R, b, stride, 0));
    rows_spill(dm + 4, rows_f16x4(R, b, stride, 2));
}

/*
 * acc0 += (d*sc_2g) * sum(lo * x[0..31]), acc1 += (d*sc_2g+1) * sum(hi *
 * x[32..63]) for group g (64 elements: sub-blocks 2g, 2g+1) of one row; lo0,
 * lo1, hi0, hi1 hold the q of elements 0-15, 16-31, 32-47, 48-63 as 32-bit
 * lanes, x0..x3 the matching x.
 */
static ALWAYS_INLINE void k_group(__m512i lo0, __m512i lo1, __m512i hi0, __m512i hi1,
                                  const __m512 xv[4], const float *sd, int g, __m512 *acc0,
                                  __m512 *acc1)
{
    __m512 s0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo1), xv[1],
                                _mm512_mul_ps(_mm512_cvtepi32_ps(lo0), xv[0]));
    __m512 s1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi1), xv[3],
                                _mm512_mul_ps(_mm512_cvtepi32_ps(hi0), xv[2]));
    *acc0 = _mm512_fmadd_ps(s0, _mm512_set1_ps(sd[2 * g]), *acc0);
    *acc1 = _mm512_fmadd_ps(s1, _mm512_set1_ps(sd[2 * g + 1]), *acc1);
}

/*
 * Q4_K without widening shuffles. Dword j of a 32-byte group qs[32g ..]
 * holds bytes 4j..4j+3, i.e. 8 nibbles: nibble t is the low (t even) or
 * high (t odd) nibble of byte 4j + t/2, so element 4j + t/2 of sub-block
 * 2g or 2g+1. Anding the dword with 0xF << 4t leaves q * 2^(4t), which
 * converts to float exactly (vcvtudq2ps: t = 7 needs all 32 bits). With
 * the 32 bytes in both halves of a register, one and takes nibble t in
 * half 0 and t + 2 in half 1: four ands (t = 0, 1, 4, 5) give all 64
 * elements, each vector within one sub-block. Widening the bytes to 32-bit
 * lanes instead costs 2 widenings (which occupy both kinds of vector pipe
 * on Zen 4), 2 ands and 2 shifts, and measured 8-10% slower. The elements
 * come out in a fixed order, so x is rearranged to match once per call
 * (q4k_prep), and multiplied by 2^(-4t) there (exact, unless |x| < 1e-29
 * or so lands in the subnormals).
 */
#define Q4K_CHUNK 4096              /* elements per column chunk */
#define Q4K_XP_OFF (Q4K_CHUNK / 32) /* the rearranged x follows the sums */

/* The and-mask for nibble t in half 0 and t + 2 in half 1. */
static inline __m512i q4k_mask(int t)
{
    return _mm512_inserti64x4(_mm512_set1_epi32(0xF << (4 * t)),
                              _mm256_set1_epi32((int)(0xFu << (4 * (t + 2)))), 1);
}

/*
 * scratch[0 .. n/32) = the 32-element sums of x; scratch + Q4K_XP_OFF = x
 * rearranged per 64-element group into four vectors, matching the masks
 * t = 0, 1, 4, 5: lanes 0-7 take element 4j + t/2 (low nibbles: of the
 * group's first 32 elements; high: of the last 32), scaled by 2^(-4t),
 * lanes 8-15 element 4j + t/2 + 1, scaled by 2^(-4(t+2)).
 */
static void q4k_prep(int64_t n, const float *x, float *scratch)
{
    rows_x_sums(n, x, scratch);
    float *xp = scratch + Q4K_XP_OFF;
    const __m512i i01 = _mm512_set_epi32(29, 25, 21, 17, 13, 9, 5, 1, 28, 24, 20, 16, 12, 8, 4, 0);
    const __m512i i23 = _mm512_set_epi32(31, 27, 23, 19, 15, 11, 7, 3, 30, 26, 22, 18, 14, 10, 6, 2);
    static const float k[4][2] = {{1.0f, 0x1p-8f}, {0x1p-4f, 0x1p-12f}, {0x1p-16f, 0x1p-24f},
                                  {0x1p-20f, 0x1p-28f}};
    __m512 sc[4];
    for (int v = 0; v < 4; v++)
        sc[v] = _mm512_insertf32x8(_mm512_set1_ps(k[v][0]), _mm256_set1_ps(k[v][1]), 1);
    for (int64_t g = 0; g < n / 64; g++) {
        const float *xg = x + 64 * g;
        const __m512 l0 = _mm512_loadu_ps(xg), l1 = _mm512_loadu_ps(xg + 16);
        const __m512 h0 = _mm512_loadu_ps(xg + 32), h1 = _mm512_loadu_ps(xg + 48);
        _mm512_store_ps(xp + 64 * g, _mm512_mul_ps(_mm512_permutex2var_ps(l0, i01, l1), sc[0]));
        _mm512_store_ps(xp + 64 * g + 16, _mm512_mul_ps(_mm512_permutex2var_ps(h0, i01, h1), sc[1]));
        _mm512_store_ps(xp + 64 * g + 32, _mm512_mul_ps(_mm512_permutex2var_ps(l0, i23, l1), sc[2]));
        _mm512_store_ps(xp + 64 * g + 48, _mm512_mul_ps(_mm512_permutex2var_ps(h0, i23, h1), sc[3]));
    }
}

/*
 * R rows of Q4_K or Q5_K (Q5 set); xs is the scratch of q4k_prep (Q4_K) or
 * the 32-element sums of x (Q5_K). Group g of a block holds sub-block 2g in
 * the low nibbles of qs[32g .. 32g+31] and 2g+1 in the high nibbles,
 * element r of each in byte r; Q5_K adds bit 2g (low) or 2g+1 (high) of
 * qh[r] as bit 4.
 *   - Q4_K takes the nibbles out with ands (see q4k_prep above).
 *   - Q5_K splits the nibbles on bytes (32 at a time), adds 16 where the
 *     qh bit is set with a masked byte add whose mask comes straight from
 *     vptestmb on qh, then widens each 16-byte quarter: fewer 512-bit ops
 *     than inserting the bit in 32-bit lanes. (The and trick does not carry
 *     over: the fifth bit of nibble 7 would need bit 32.)
 * Per row and sub-block: the sum of q * x in 16 lanes, then one FMA by
 * d * sc_j; per row and block, the min term as one 8-lane FMA.
 */
static ALWAYS_INLINE void rows_k45(const bool Q5, const int R, int64_t n, const uint8_t *w,
                                   size_t stride, const float *x, const float *xs, float *out,
                                   bool add)
{
    const size_t bb = Q5 ? sizeof(struct wk_block_q5_k) : sizeof(struct wk_block_q4_k);
    const size_t qs_off = Q5 ? offsetof(struct wk_block_q5_k, qs) : offsetof(struct wk_block_q4_k, qs);
    const size_t qh_off = offsetof(struct wk_block_q5_k, qh);
    const size_t pf = rows_pf_dist(R, stride);
    size_t pf_next = 0;
    _Alignas(64) float sd[4][16];
    _Alignas(16) float dm[8];
    __m512 acc0[4], acc1[4];
    __m256 accm[4]; /* per row, 8 lanes of (dmin*m_j) * xs_j */
    UNROLL
    for (int r = 0; r < 4; r++) {
        acc0[r] = acc1[r] = _mm512_setzero_ps();
        accm[r] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const uint8_t *b = w + i * bb;
        rows_prefetch(R, w, stride, pf, &pf_next, (size_t)(i + 1) * bb);
        const __m256 xsv = _mm256_loadu_ps(xs + 8 * i);
        k_d_dmin(R, b, stride, dm);
        UNROLL
        for (int r = 0; r < R; r++) {
            k_factors(b + r * stride + 4, dm + r, dm + 4 + r, sd[r]);
            accm[r] = _mm256_fmadd_ps(_mm256_load_ps(sd[r] + 8), xsv, accm[r]);
        }
        /* Q4_K reads the rearranged x of q4k_prep */
        const float *xb = (Q5 ? x : xs + Q4K_XP_OFF) + i * WK_QK_K;
        UNROLL
        for (int g = 0; g < 4; g++) {
            const __m512 xv[4] = {_mm512_loadu_ps(xb + 64 * g), _mm512_loadu_ps(xb + 64 * g + 16),
                                  _mm512_loadu_ps(xb + 64 * g + 32),
                                  _mm512_loadu_ps(xb + 64 * g + 48)};
            UNROLL
            for (int r = 0; r < R; r++) {
                const uint8_t *qs = b + r * stride + qs_off + 32 * g;
                if (!Q5) {
                    /* both 256-bit halves hold qs[32g .. 32g+31]; the masks
                     * pick, in dword j, nibble t of half 0 and t + 2 of
                     * half 1 (q4k_prep has the matching x, scaled) */
                    const __m512i v =
                        _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)qs));
                    const __m512 ca = _mm512_cvtepu32_ps(_mm512_and_si512(v, q4k_mask(0)));
                    const __m512 cb = _mm512_cvtepu32_ps(_mm512_and_si512(v, q4k_mask(1)));
                    const __m512 cc = _mm512_cvtepu32_ps(_mm512_and_si512(v, q4k_mask(4)));
                    const __m512 cd = _mm512_cvtepu32_ps(_mm512_and_si512(v, q4k_mask(5)));
                    const __m512 s0 = _mm512_fmadd_ps(cc, xv[2], _mm512_mul_ps(ca, xv[0]));
                    const __m512 s1 = _mm512_fmadd_ps(cd, xv[3], _mm512_mul_ps(cb, xv[1]));
                    acc0[r] = _mm512_fmadd_ps(s0, _mm512_set1_ps(sd[r][2 * g]), acc0[r]);
                    acc1[r] = _mm512_fmadd_ps(s1, _mm512_set1_ps(sd[r][2 * g + 1]), acc1[r]);
                } else {
                    const __m256i m4 = _mm256_set1_epi8(0x0F), c16 = _mm256_set1_epi8(16);
                    const __m256i qh = _mm256_loadu_si256((const __m256i *)(b + r * stride + qh_off));
                    const __m256i q = _mm256_loadu_si256((const __m256i *)qs);
                    const __mmask32 klo = _mm256_test_epi8_mask(qh, _mm256_set1_epi8((char)(1 << (2 * g))));
                    const __mmask32 khi = _mm256_test_epi8_mask(qh, _mm256_set1_epi8((char)(2 << (2 * g))));
                    __m256i lo = _mm256_and_si256(q, m4);
                    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                    lo = _mm256_mask_add_epi8(lo, klo, lo, c16);
                    hi = _mm256_mask_add_epi8(hi, khi, hi, c16);
                    k_group(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(lo)),
                            _mm512_cvtepu8_epi32(_mm256_extracti128_si256(lo, 1)),
                            _mm512_cvtepu8_epi32(_mm256_castsi256_si128(hi)),
                            _mm512_cvtepu8_epi32(_mm256_extracti128_si256(hi, 1)), xv, sd[r], g,
                            &acc0[r], &acc1[r]);
                }
            }
        }
    }
    /* fold the min terms (8 lanes, upper 8 zero) into the sums */
    UNROLL
    for (int r = 0; r < 4; r++)
        acc0[r] = _mm512_sub_ps(_mm512_add_ps(acc0[r], acc1[r]),
                                _mm512_insertf32x8(_mm512_setzero_ps(), accm[r], 0));
    rows_finish(R, acc0, _mm_setzero_ps(), out, add);
}

static ALWAYS_INLINE void rows_q4_k(const int R, int64_t n, const uint8_t *w, size_t stride,
                                    const float *x, const float *xs, float *out, bool add)
{
    rows_k45(false, R, n, w, stride, x, xs, out, add);
}
static ALWAYS_INLINE void rows_q5_k(const int R, int64_t n, const uint8_t *w, size_t stride,
                                    const float *x, const float *xs, float *out, bool add)
{
    rows_k45(true, R, n, w, stride, x, xs, out, add);
}

/*
 * R rows of Q6_K. Each row's block is first decoded, as in
 * dot_f32_avx512.c, into signed q - 32 bytes in a stack buffer (128
 * elements per pass: quarters 0/1 are the low nibbles of ql[0..63] with qh
 * bits 0-1 / 2-3, quarters 2/3 the high nibbles with bits 4-5 / 6-7), and
 * ds[j] = d * sc_j. The weights (d*sc_j) * (q - 32), to_f32's exact
 * values, then come 16 at a time from one widening load, one conversion
 * and one multiply, and meet x, loaded once for all rows, in an FMA.
 */
static ALWAYS_INLINE void rows_q6_k(const int R, int64_t n, const uint8_t *w, size_t stride,
                                    const float *x, const float *xs, float *out, bool add)
{
    const size_t bb = sizeof(struct wk_block_q6_k);
    const size_t pf = rows_pf_dist(R, stride);
    size_t pf_next = 0;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30),
                  c32 = _mm512_set1_epi8(32);
    const __m512i shl01 = _mm512_set_epi64(2, 2, 2, 2, 4, 4, 4, 4);
    const __m512i shr23 = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
    _Alignas(64) int8_t q[4][WK_QK_K];
    _Alignas(64) float ds[4][16];
    __m512 acc0[4], acc1[4];
    UNROLL
    for (int r = 0; r < 4; r++) acc0[r] = acc1[r] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        rows_prefetch(R, w, stride, pf, &pf_next, (size_t)(i + 1) * bb);
        UNROLL
        for (int r = 0; r < R; r++) {
            const struct wk_block_q6_k *a =
                (const struct wk_block_q6_k *)(w + r * stride + i * bb);
            __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(load16(a->scales)));
            _mm512_store_ps(ds[r], _mm512_mul_ps(_mm512_set1_ps(wk__avx512_f16(a->d)), sc));
            UNROLL
            for (int h = 0; h < 2; h++) {
                __m512i ql = _mm512_loadu_si512(a->ql + 64 * h);
                __m512i qh =
                    _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(a->qh + 32 * h)));
                /* 0xEC: (A & C) | B, nibble | top bits */
                __m512i q01 = _mm512_ternarylogic_epi32(
                    ql, _mm512_and_si512(_mm512_sllv_epi64(qh, shl01), m2), m4, 0xEC);
                __m512i q23 = _mm512_ternarylogic_epi32(
                    _mm512_srli_epi16(ql, 4), _mm512_and_si512(_mm512_srlv_epi64(qh, shr23), m2),
                    m4, 0xEC);
                _mm512_store_si512(q[r] + 128 * h, _mm512_sub_epi8(q01, c32));
                _mm512_store_si512(q[r] + 128 * h + 64, _mm512_sub_epi8(q23, c32));
            }
            __asm__("" : "+m"(ds[r]));
        }
        const float *xb = x + i * WK_QK_K;
        UNROLL
        for (int j = 0; j < 16; j++) {
            const __m512 xj = _mm512_loadu_ps(xb + 16 * j);
            UNROLL
            for (int r = 0; r < R; r++) {
                __m512 wv = _mm512_mul_ps(
                    _mm512_set1_ps(ds[r][j]),
                    _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(q[r] + 16 * j)))));
                if (j & 1) acc1[r] = _mm512_fmadd_ps(wv, xj, acc1[r]);
                else acc0[r] = _mm512_fmadd_ps(wv, xj, acc0[r]);
            }
        }
    }
    UNROLL
    for (int r = 0; r < 4; r++) acc0[r] = _mm512_add_ps(acc0[r], acc1[r]);
    rows_finish(R, acc0, _mm_setzero_ps(), out, add);
}

DOT_ROWS_FN(vec_dot_rows_q4_k, rows_q4_k, WK_QK_K, sizeof(struct wk_block_q4_k), Q4K_CHUNK,
            q4k_prep, Q4K_XP_OFF + Q4K_CHUNK)
DOT_ROWS_FN(vec_dot_rows_q5_k, rows_q5_k, WK_QK_K, sizeof(struct wk_block_q5_k), XS_CHUNK,
            rows_x_sums, XS_MAX)
DOT_ROWS_FN(vec_dot_rows_q6_k, rows_q6_k, WK_QK_K, sizeof(struct wk_block_q6_k), 0, rows_no_prep,
            1)

void wk__avx512_fill_dot_rows_k(struct wk_cpu_kernels *k)
{
    k->vec_dot_rows[WK_DTYPE_Q4_K] = vec_dot_rows_q4_k;
    k->vec_dot_rows[WK_DTYPE_Q5_K] = vec_dot_rows_q5_k;
    k->vec_dot_rows[WK_DTYPE_Q6_K] = vec_dot_rows_q6_k;
}
