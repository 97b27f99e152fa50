/*
 * r16_gemm_template.h - the R16 integer GEMM of prefill (gemm_r16,
 * wk_cpu.h), part of rows_x16_template.h (included by it, inside its
 * AVX-512 VNNI section, after the decode kernels whose x preparation and
 * block reading it shares); not a header to include on its own.
 */
/*
 * Prefill over the R16 layout (gemm_r16, wk_cpu.h): many tokens' x
 * prepared by r16_prepare, integer dots of the weight codes with x~'s hi
 * and lo bytes (vpdpbusd), as decode does, but a micro-tile of one group
 * (16 rows, one a lane) by up to R16_GEMM_T tokens, so each weight vector
 * is loaded and unpacked once for all its tokens and each 6-bit scale once
 * for them, instead of once per token. Per token and 32-element block the
 * exact S = 256 S_hi + S_lo is the decode kernel's; the float side folds
 * the block's weight scale (d sc) and x's (ds) into one factor and takes
 * the min term (dmin m sum) into the same accumulator, so the bits differ
 * from decode's (by rounding only). Each row's sum runs over its blocks in
 * order and its column chunks are added in order: the result depends on n
 * only, not on the tokens' or rows' tiling.
 *
 * dec (vec_dot_rows_r16_tokens: batched decode, verification): the same
 * integer dots, but each token's float side is decode's own chain, in its
 * order (r16_group, r16_group_q4k, r16_group_q6k: the offset term in an
 * accumulator of its own, Q4_K's sub-block sums closed per super-block
 * with d and dmin), so every token gets its lone decode's bits; the
 * groups are taken one at a time with their column chunks in address
 * order and (pf: r16_gemm_tokens_, not _nopf_) prefetched R16_PF_DIST
 * ahead, a block at once (a few tokens read the weights from memory as
 * decode does; decode itself spreads its prefetches, which measured
 * slower here). Without pf (the AMD table) each tile instead prefetches
 * its share of the next column chunk (the bytes after this one: the next
 * chunk of the group, or the next group's first) into L2, spread over its
 * blocks (R16_NEXT_PF): left to the hardware prefetchers, the first tile
 * of a chunk asked for its weights from memory faster than one core gets
 * them while the other tiles (more than 6 tokens) asked for none. Zen 4,
 * one thread, 1536-element rows, 96 MiB of Q4_K_R16 from memory: 4 and 8
 * tokens 62-75 -> 89-91 G multiply-adds a second (94 with the rows in
 * L2); Q6_K 42-50 -> 50-58 (71 in L2). T0 instead of T1 was slower (the
 * chunk pushed the tokens' prepared x out of L1), two chunks ahead no
 * better.
 */
#ifndef R16_NEXT_PF
#define R16_NEXT_PF 1 /* 0: no next-chunk prefetch in the _nopf_ tokens kernels */
#endif
#ifndef R16_GEMM_T
#define R16_GEMM_T 6 /* tokens per micro-tile */
#endif
#ifndef R16_GEMM_GROUPS
#define R16_GEMM_GROUPS 4 /* groups of 16 rows whose column chunk a token tile visits in turn */
#endif

/* Q4_K_R16, T tokens (1..R16_GEMM_T), one group, one column chunk of nc
 * elements at g: out[t][0..15] (+)= the 16 rows' dots with token t. */
static ALWAYS_INLINE void r16_gemm_q4k_tile(const bool dec, const bool pf, const int T, int64_t nc, const uint8_t *g,
                                            uintptr_t pfa, size_t pfl,
                                            const float *const *p, float *const *out, bool add)
{
    const size_t bb = sizeof(struct wk_block_q4_k);
    const int64_t nb = nc / WK_QK_K, nxb = nc / 32;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const uint8_t *lines[R16_GEMM_T];
    const float *ds[R16_GEMM_T], *sums[R16_GEMM_T];
    __m512 acc[R16_GEMM_T], accc[R16_GEMM_T], accb[R16_GEMM_T], accm[R16_GEMM_T];
    UNROLL
    for (int t = 0; t < T; t++) {
        lines[t] = (const uint8_t *)p[t];
        ds[t] = p[t] + nxb * (X16_COMPACT_BYTES / 4);
        sums[t] = ds[t] + nxb;
        acc[t] = accc[t] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b = g + (size_t)i * WK_R16_ROWS * bb;
        if (dec && pf) r16_prefetch(b, WK_R16_ROWS * bb);
        if (pfa) wk_prefetch_part(pfa, pfl, i, nb, true);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + 32)));
        UNROLL
        for (int t = 0; dec && t < T; t++) accb[t] = accm[t] = _mm512_setzero_ps();
        UNROLL
        for (int s = 0; s < 8; s++) { /* sub-block s: vectors of group s / 2, low nibbles for even s */
            const int gg = s / 2, hi_nib = s & 1;
            const int64_t xb = 8 * i + s;
            __m512i h[R16_GEMM_T], l[R16_GEMM_T];
            UNROLL
            for (int t = 0; t < T; t++) h[t] = l[t] = _mm512_setzero_si512();
            UNROLL
            for (int k = 0; k < 8; k++) {
                const __m512i v = _mm512_loadu_si512(b + 256 + 64 * (8 * gg + k));
                const __m512i c = hi_nib ? _mm512_and_si512(_mm512_srli_epi16(v, 4), m4) : _mm512_and_si512(v, m4);
                UNROLL
                for (int t = 0; t < T; t++) {
                    const uint8_t *line = lines[t] + X16_COMPACT_BYTES * xb;
                    h[t] = r16_dpx4(h[t], c, line, 0, 4 * k);
                    l[t] = r16_dpx4(l[t], c, line, 1, 4 * k);
                }
            }
            __m512i sc, mn;
            r16_q4k_scale_min(_mm512_loadu_si512(b + 64), _mm512_loadu_si512(b + 128), _mm512_loadu_si512(b + 192), s,
                              &sc, &mn);
            if (dec) { /* r16_group_q4k's chain */
                const __m512 scf = _mm512_cvtepi32_ps(sc), mnf = _mm512_cvtepi32_ps(mn);
                UNROLL
                for (int t = 0; t < T; t++) {
                    const __m512i S = _mm512_add_epi32(_mm512_slli_epi32(h[t], 8), l[t]);
                    r16_dec_group(&accb[t], &accm[t], S, scf, ds[t][xb], mnf, sums[t][xb]);
                }
                continue;
            }
            const __m512 dsc = _mm512_mul_ps(_mm512_cvtepi32_ps(sc), d), dmn = _mm512_mul_ps(_mm512_cvtepi32_ps(mn), dmin);
            UNROLL
            for (int t = 0; t < T; t++) {
                const __m512i S = _mm512_add_epi32(_mm512_slli_epi32(h[t], 8), l[t]);
                acc[t] = r16_acc_block(acc[t], S, dsc, ds[t][xb], dmn, sums[t][xb], true);
            }
        }
        UNROLL
        for (int t = 0; dec && t < T; t++) {
            acc[t] = _mm512_fmadd_ps(accb[t], d, acc[t]);
            accc[t] = _mm512_fnmadd_ps(accm[t], dmin, accc[t]);
        }
    }
    UNROLL
    for (int t = 0; t < T; t++) {
        __m512 r = dec ? _mm512_add_ps(acc[t], accc[t]) : acc[t];
        if (add) r = _mm512_add_ps(r, _mm512_loadu_ps(out[t]));
        _mm512_storeu_ps(out[t], r);
    }
}

/* Q6_K_R16 (layout as r16_group_q6k), T tokens, one group, one column
 * chunk: out[t][0..15] (+)= the 16 rows' dots with token t. One quarter q
 * (16-element scale group 8h + 2q + p) at a time, its codes formed once
 * for the T tokens; w = d sc (q - 32), the -32 through x's 16-element sums
 * (the chunk's sums16, after its prepared lines, which hold -32 times the
 * sums: r16_sums16). */
static ALWAYS_INLINE void r16_gemm_q6k_tile(const bool dec, const bool pf, const int T, int64_t nc, const uint8_t *g,
                                            uintptr_t pfa, size_t pfl,
                                            const float *const *p, float *const *out, bool add)
{
    const size_t bb = sizeof(struct wk_block_q6_k);
    const int64_t nb = nc / WK_QK_K, nxb = nc / 32;
    const uint8_t *lines[R16_GEMM_T];
    const float *ds[R16_GEMM_T], *s16[R16_GEMM_T];
    __m512 acc[R16_GEMM_T], accc[R16_GEMM_T];
    UNROLL
    for (int t = 0; t < T; t++) {
        lines[t] = (const uint8_t *)p[t];
        ds[t] = p[t] + nxb * (X16_COMPACT_BYTES / 4);
        s16[t] = p[t] + R16_PREP_CHUNK_FLOATS - X16_CHUNK / 16;
        acc[t] = accc[t] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b = g + (size_t)i * WK_R16_ROWS * bb;
        if (dec && pf) r16_prefetch(b, WK_R16_ROWS * bb);
        if (pfa) wk_prefetch_part(pfa, pfl, i, nb, true);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
        for (int h = 0; h < 2; h++) { /* not unrolled: the quarter's code is big enough */
            for (int pp = 0; pp < 2; pp++) {
                const uint8_t *ph = b + 32 + 832 * (2 * h + pp);
                UNROLL
                for (int q = 0; q < 4; q++) { /* elements 128h + 32q + 16pp ..: x block 8i + 4h + q */
                    const int64_t xb = 8 * i + 4 * h + q;
                    __m512i hs[R16_GEMM_T], ls[R16_GEMM_T];
                    UNROLL
                    for (int t = 0; t < T; t++) hs[t] = ls[t] = _mm512_setzero_si512();
                    UNROLL
                    for (int kk = 0; kk < 4; kk++) {
                        const int k = 4 * pp + kk;
                        const __m512i AB = _mm512_loadu_si512(ph + 192 * kk + 64 * (q & 1));
                        const __m512i Q = _mm512_loadu_si512(ph + 192 * kk + 128);
                        const __m512i c = r16_q6k_code(AB, Q, q);
                        UNROLL
                        for (int t = 0; t < T; t++) {
                            const uint8_t *line = lines[t] + X16_COMPACT_BYTES * xb;
                            hs[t] = r16_dpx4(hs[t], c, line, 0, 4 * k);
                            ls[t] = r16_dpx4(ls[t], c, line, 1, 4 * k);
                        }
                    }
                    const __m512i sc8 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(ph + 768 + 16 * q)));
                    const __m512 sc = _mm512_mul_ps(_mm512_cvtepi32_ps(sc8), d);
                    UNROLL
                    for (int t = 0; t < T; t++) {
                        const __m512i S = _mm512_add_epi32(_mm512_slli_epi32(hs[t], 8), ls[t]);
                        /* dec: r16_group_q6k's separate accumulator of the offset term */
                        r16_dec_group(&acc[t], dec ? &accc[t] : &acc[t], S, sc, ds[t][xb], sc, s16[t][2 * xb + pp]);
                    }
                }
            }
        }
    }
    UNROLL
    for (int t = 0; t < T; t++) {
        __m512 r = dec ? _mm512_add_ps(acc[t], accc[t]) : acc[t];
        if (add) r = _mm512_add_ps(r, _mm512_loadu_ps(out[t]));
        _mm512_storeu_ps(out[t], r);
    }
}

/* Q4_1_R16, Q5_0_R16 and Q8_0_R16 (layouts as r16_group), T tokens, one
 * group, one column chunk of nc elements at g: out[t][0..15] (+)= the 16
 * rows' dots with token t. Per 32-element block the codes are unpacked
 * once (Q4_1 and Q5_0: four vectors of low and high nibbles, Q5_0's fifth
 * bits added as in r16_group; Q8_0: eight vectors of q + 128) and fed to
 * every token's two int32 sums; then S = 256 S_hi + S_lo, exact, is scaled
 * by d_w and the token's ds, and the offset term (Q4_1: m_w times x~'s
 * block sum; Q5_0 and Q8_0: -16 or -128 d_w times it) goes into the same
 * accumulator. */
static ALWAYS_INLINE void r16_gemm_b32_tile(const enum x16_kind K, const bool dec, const bool pf, const int T, int64_t nc,
                                            const uint8_t *g, uintptr_t pfa, size_t pfl, const float *const *p, float *const *out, bool add)
{
    const size_t bb = r16_block_bytes(K);
    const size_t head = K == X16_Q4_1 ? 64 : K == X16_Q5_0 ? 96 : 32; /* the 16 rows' scales (and qh) */
    const int64_t nb = nc / 32;
    const uint8_t *lines[R16_GEMM_T];
    const float *ds[R16_GEMM_T], *sums[R16_GEMM_T];
    __m512 acc[R16_GEMM_T], accc[R16_GEMM_T];
    UNROLL
    for (int t = 0; t < T; t++) {
        lines[t] = (const uint8_t *)p[t];
        ds[t] = p[t] + nb * (X16_COMPACT_BYTES / 4);
        sums[t] = ds[t] + nb;
        acc[t] = accc[t] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b = g + (size_t)i * WK_R16_ROWS * bb;
        if (dec && pf) r16_prefetch(b, WK_R16_ROWS * bb);
        if (pfa) wk_prefetch_part(pfa, pfl, i, nb, true);
        __m512i h[R16_GEMM_T], l[R16_GEMM_T];
        UNROLL
        for (int t = 0; t < T; t++) h[t] = l[t] = _mm512_setzero_si512();
        if (K == X16_Q4_1 || K == X16_Q5_0) {
            const __m512i qh = K == X16_Q5_0 ? _mm512_loadu_si512(b + 32) : _mm512_setzero_si512();
            UNROLL
            for (int k = 0; k < 4; k++) { /* elements 4k.. (low nibbles) and 16 + 4k.. (high) */
                __m512i lo, hi;
                r16_nibble_codes(_mm512_loadu_si512(b + head + 64 * k), qh, k, K == X16_Q5_0, &lo, &hi);
                UNROLL
                for (int t = 0; t < T; t++) {
                    const uint8_t *line = lines[t] + X16_COMPACT_BYTES * i;
                    h[t] = r16_dpx4(h[t], lo, line, 0, 4 * k);
                    h[t] = r16_dpx4(h[t], hi, line, 0, 16 + 4 * k);
                    l[t] = r16_dpx4(l[t], lo, line, 1, 4 * k);
                    l[t] = r16_dpx4(l[t], hi, line, 1, 16 + 4 * k);
                }
            }
        } else {
            UNROLL
            for (int k = 0; k < 8; k++) { /* elements 4k .. 4k + 3, as q + 128 */
                const __m512i v = _mm512_loadu_si512(b + head + 64 * k);
                UNROLL
                for (int t = 0; t < T; t++) {
                    const uint8_t *line = lines[t] + X16_COMPACT_BYTES * i;
                    h[t] = r16_dpx4(h[t], v, line, 0, 4 * k);
                    l[t] = r16_dpx4(l[t], v, line, 1, 4 * k);
                }
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
        if (dec) { /* r16_group's chain: the offset term in its own accumulator */
            const __m512 mw = K == X16_Q4_1 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + 32))) : dw;
            const float kq = K == X16_Q5_0 ? -16.0f : -128.0f;
            UNROLL
            for (int t = 0; t < T; t++) {
                const __m512i S = _mm512_add_epi32(_mm512_slli_epi32(h[t], 8), l[t]);
                r16_dec_group(&acc[t], &accc[t], S, dw, ds[t][i], mw, K == X16_Q4_1 ? sums[t][i] : kq * sums[t][i]);
            }
            continue;
        }
        const __m512 cw = r16_b32_offset(b, dw, K == X16_Q4_1, K == X16_Q5_0 ? -16.0f : -128.0f);
        UNROLL
        for (int t = 0; t < T; t++) {
            const __m512i S = _mm512_add_epi32(_mm512_slli_epi32(h[t], 8), l[t]);
            acc[t] = r16_acc_block(acc[t], S, dw, ds[t][i], cw, sums[t][i], false);
        }
    }
    UNROLL
    for (int t = 0; t < T; t++) {
        __m512 r = dec ? _mm512_add_ps(acc[t], accc[t]) : acc[t];
        if (add) r = _mm512_add_ps(r, _mm512_loadu_ps(out[t]));
        _mm512_storeu_ps(out[t], r);
    }
}

/* One micro-tile of K's R16 GEMM (T a constant after inlining). */
static ALWAYS_INLINE void r16_gemm_tile(const enum x16_kind K, const bool dec, const bool pf, const int T, int64_t nc,
                                        const uint8_t *g, uintptr_t pfa, size_t pfl, const float *const *p,
                                        float *const *out, bool add)
{
    if (K == X16_Q4_K) r16_gemm_q4k_tile(dec, pf, T, nc, g, pfa, pfl, p, out, add);
    else if (K == X16_Q6_K) r16_gemm_q6k_tile(dec, pf, T, nc, g, pfa, pfl, p, out, add);
    else r16_gemm_b32_tile(K, dec, pf, T, nc, g, pfa, pfl, p, out, add);
}

/* gemm_r16 for K: rows in tiles of R16_GEMM_GROUPS groups; in a tile,
 * each column chunk in turn, each tile of tokens over the tile's groups. */
static ALWAYS_INLINE void r16_gemm(const enum x16_kind K, const bool dec, const bool pf, int64_t n, const void *w, size_t stride,
                                   const float *prep, size_t ldp, int64_t n_tokens, float *out, size_t ldo,
                                   int64_t n_rows)
{
    const size_t bb = r16_block_bytes(K);
    const int64_t bs = K == X16_Q6_K || K == X16_Q4_K ? WK_QK_K : 32, n_groups = n_rows / WK_R16_ROWS;
    /* dec (batched decode, few tokens): decode's order, a group's column
     * chunks one after another, so the weights stream in address order
     * (prefetched: r16_prefetch) */
    const int64_t G = dec ? 1 : R16_GEMM_GROUPS;
    for (int64_t g0 = 0; g0 < n_groups; g0 += G) {
        const int64_t g1 = WK_MIN(n_groups, g0 + G);
        for (int64_t c0 = 0; c0 < n; c0 += X16_CHUNK) {
            const int64_t nc = WK_MIN(X16_CHUNK, n - c0);
            /* tiles of like width (8 tokens as 4 + 4, not 6 + 2: a narrow
             * tile unpacks the weights for few tokens) */
            const int64_t n_tiles = (n_tokens + R16_GEMM_T - 1) / R16_GEMM_T;
            for (int64_t ti = 0, t0 = 0; ti < n_tiles; ti++) {
                const int T = (int)((n_tokens - t0) / (n_tiles - ti) + ((n_tokens - t0) % (n_tiles - ti) != 0));
                const float *p[R16_GEMM_T];
                for (int t = 0; t < T; t++) p[t] = prep + (size_t)(t0 + t) * ldp + (c0 / X16_CHUNK) * R16_PREP_CHUNK_FLOATS;
                for (int64_t gi = g0; gi < g1; gi++) {
                    const uint8_t *wg = (const uint8_t *)w + (size_t)gi * WK_R16_ROWS * stride +
                                        (size_t)(c0 / bs) * WK_R16_ROWS * bb;
                    float *o[R16_GEMM_T];
                    for (int t = 0; t < T; t++) o[t] = out + (size_t)(t0 + t) * ldo + WK_R16_ROWS * gi;
                    /* dec without pf: the next chunk's bytes (they follow this one's) into L2,
                     * this tile's share of them spread over its blocks */
                    const size_t cl = (size_t)(nc / bs) * WK_R16_ROWS * bb / 64;
                    const uintptr_t pfa =
                        dec && !pf && R16_NEXT_PF ? (uintptr_t)wg + 64 * (cl + cl * (size_t)ti / (size_t)n_tiles) : 0;
                    const size_t pfl = cl * (size_t)(ti + 1) / (size_t)n_tiles - cl * (size_t)ti / (size_t)n_tiles;
                    switch (T) { /* each tile width its own unrolled code */
#if R16_GEMM_T >= 8
                    case 8: r16_gemm_tile(K, dec, pf, 8, nc, wg, pfa, pfl, p, o, c0 > 0); break;
                    case 7: r16_gemm_tile(K, dec, pf, 7, nc, wg, pfa, pfl, p, o, c0 > 0); break;
#endif
#if R16_GEMM_T >= 6
                    case 6: r16_gemm_tile(K, dec, pf, 6, nc, wg, pfa, pfl, p, o, c0 > 0); break;
                    case 5: r16_gemm_tile(K, dec, pf, 5, nc, wg, pfa, pfl, p, o, c0 > 0); break;
#endif
                    case 4: r16_gemm_tile(K, dec, pf, 4, nc, wg, pfa, pfl, p, o, c0 > 0); break;
                    case 3: r16_gemm_tile(K, dec, pf, 3, nc, wg, pfa, pfl, p, o, c0 > 0); break;
                    case 2: r16_gemm_tile(K, dec, pf, 2, nc, wg, pfa, pfl, p, o, c0 > 0); break;
                    default: r16_gemm_tile(K, dec, pf, 1, nc, wg, pfa, pfl, p, o, c0 > 0); break;
                    }
                }
                t0 += T;
            }
        }
    }
}

#define R16_GEMM_ENTRY(name, K)                                                                               \
    static void r16_gemm_##name(int64_t n, const void *w, size_t stride, const float *prep, size_t ldp,          \
                                int64_t n_tokens, float *out, size_t ldo, int64_t n_rows)                        \
    {                                                                                                            \
        r16_gemm(K, false, false, n, w, stride, prep, ldp, n_tokens, out, ldo, n_rows);                          \
    }                                                                                                            \
    static void r16_gemm_tokens_##name(int64_t n, const void *w, size_t stride, const float *prep, size_t ldp,   \
                                       int32_t n_tokens, float *out, size_t ldo, int64_t n_rows)                 \
    {                                                                                                            \
        r16_gemm(K, true, true, n, w, stride, prep, ldp, n_tokens, out, ldo, n_rows);                            \
    }                                                                                                            \
    static void r16_gemm_tokens_nopf_##name(int64_t n, const void *w, size_t stride, const float *prep,          \
                                            size_t ldp, int32_t n_tokens, float *out, size_t ldo, int64_t n_rows) \
    {                                                                                                            \
        r16_gemm(K, true, false, n, w, stride, prep, ldp, n_tokens, out, ldo, n_rows);                           \
    }
R16_GEMM_ENTRY(q4_1, X16_Q4_1)
R16_GEMM_ENTRY(q5_0, X16_Q5_0)
R16_GEMM_ENTRY(q8_0, X16_Q8_0)
R16_GEMM_ENTRY(q4_k, X16_Q4_K)
R16_GEMM_ENTRY(q6_k, X16_Q6_K)
#undef R16_GEMM_ENTRY

