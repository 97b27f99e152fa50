/*
 * r16_amx_tokens.h - batched decode through AMX-INT8 tiles
 * (vec_dot_rows_r16_tokens of the "amx" table), part of r16_amx.c
 * (included by it after the GEMM, whose tile helpers it shares: amx_codes,
 * amx_issue, amx_store_c, amx_sum, amx_q6k_codes); not a header to include
 * on its own.
 */
/*
 * Batched decode (vec_dot_rows_r16_tokens, wk_cpu.h): every token's
 * result must have the bits of its lone decode (vec_dot_rows_r16,
 * rows_x16_template.h), so the tiles give the exact integer dots and the
 * float side is decode's own chain, operation for operation and in its
 * order, per token (16 rows a zmm, as decode's lanes): Q4_1, Q5_0, Q8_0
 * (r16_group) acc += float(S) (d_w ds), accc += offset; Q4_K
 * (r16_group_q4k) per sub-block accb += float(S) (sc ds), accm += m sums,
 * closed per super-block with d and dmin; Q6_K (r16_group_q6k) per 16
 * elements (its scale groups: products of K = 16, half a tile's depth)
 * acc += float(S) (d sc ds), accc += d sc sums16 (sums16 holding -32 times
 * the sums: r16_sums16). A tile holds up
 * to 16 tokens (M rows of A and C; one configuration per M), or 8 with
 * their hi and lo rows in one A tile (the tile of 8, below); the tokens
 * past them go to the VNNI tokens kernel (the GEMM's tiles on decode's
 * chain, r16_gemm_template.h).
 */

/* Fewest tokens a last 16-row tile (after those of 16): below,
 * a tile's fixed cost (codes unpacked, tiles loaded and stored, every
 * step) is paid for too few tokens. bench/gemm-r16's "r16 tokens", 1536 x
 * 1536, one core, G multiply-adds/s, VNNI / 16-row tiles / the tile of 8
 * (2026-12-05, Xeon with AMX, two runs): Q4_K 4 tokens 101-105 / 63-65 /
 * 79, 6: 111 / 81-85 / 92, 8: 100-106 / 96-104 / 108-118, 9: 104-108 /
 * 108-110 / 77, 11: 102 / 112-120 / 79-89, 16: 132-134 / 133-138; Q6_K 8:
 * 63-65 / 60-65 / 76-81, 9: 65-69 / 65 / 55, 11: 69-71 / 69-72 / 63-65;
 * Q5_0 8: 90 / 100 / 110-115, 11: 92 / 118-121 / 80-83; Q8_0 8: 106-109 /
 * 122-124 / 125-130, 11: 115 / 135-138 / 103-109; Q4_1 4: 113 / 69 / 81,
 * 6: 120-123 / 91-95 / 108-111, 8: 113-116 / 105-108 / 114-120. So a
 * last tile of 9 to 15 on the 16-row tiles, of exactly 8 on the tile of 8, and
 * fewer through VNNI. Tiles of 1 to 15 rows (one configuration each) give
 * the same bits (test-cpu-r16 with -DAMX_TOK_MIN=1). */
#ifndef AMX_TOK_MIN
#define AMX_TOK_MIN 9
#endif

/* The tokens kernels' configurations: [0] products of 32 elements (A: M
 * rows of 32 bytes, B: 8 rows), [1] Q6_K's of 16 (A: M x 16, B: 4 rows);
 * C: M rows. Filled by wk__cpu_fill_amx (in memory, as g_config). */
static struct amx_config g_tok_config[2][AMX_T + 1];

/* A tokens kernel's configuration: A tiles 0, 1 of `rows` rows (32 bytes,
 * Q6_K 16), B tiles 2, 3 (8 rows, Q6_K 4), n_c C tiles from 4 of `rows`
 * rows. */
static void amx_tok_config_set(struct amx_config *c, bool q6, int rows, int n_c)
{
    memset(c, 0, sizeof *c);
    c->palette = 1;
    c->colsb[0] = c->colsb[1] = (uint16_t)(q6 ? 16 : 32);
    c->rows[0] = c->rows[1] = (uint8_t)rows;
    c->colsb[2] = c->colsb[3] = 64;
    c->rows[2] = c->rows[3] = (uint8_t)(q6 ? 4 : 8);
    for (int i = 4; i < 4 + n_c; i++) c->colsb[i] = 64, c->rows[i] = (uint8_t)rows;
}

static void amx_tok_config_fill(void)
{
    for (int q6 = 0; q6 < 2; q6++)
        for (int m = 1; m <= AMX_T; m++) amx_tok_config_set(&g_tok_config[q6][m], q6, m, 4);
}

/* The tokens kernels' prefetch distances, in bytes: every step's share of
 * its block's weights into L1 (T0) and into L2 (T1). Batched decode
 * streams the weights from memory once a step for all its tokens, and
 * without these the AMX tiles of 8 waited on them: bench/batch-decode, 8
 * rows, ms a step (2026-12-05, the Xeon, 2 threads, two interleaved runs):
 * Gemma 3 270M none 21.8-22.7 (VNNI tiles 18.9-19.5), T0 1 KiB 19.5-19.7,
 * T1 4 KiB 16.7, T0 1-2 KiB + T1 4 KiB 15.7-16.8, + T1 8 KiB 15.1-15.5,
 * + T1 12-16 KiB 15.0-16.3; Qwen2.5-Coder-1.5B (VNNI 98.5-100.9) T0 2 KiB
 * + T1 4 KiB 77.7-78.8, + T1 8 KiB 75.5-78.2, T1 8 KiB alone 77.9-80.2.
 * The tiles of 9 to 16 tokens (more compute a byte) gained less: Qwen 11
 * rows 111-114 -> 109-110 ms. */
#define AMX_PF_T0 2048
#define AMX_PF_T1 8192

/* The prefetch of step u's share of its block's weights (Q4_K: an eighth
 * of a super-block, Q6_K: a sixteenth) ahead into L1 and L2. */
static ALWAYS_INLINE void amx_tok_prefetch(const enum amx_kind K, bool q6, int64_t u, const uint8_t *g)
{
    const size_t bb = q6 ? sizeof(struct wk_block_q6_k) : amx_block_bytes(K);
    const int nit = q6 ? 16 : K == AMX_Q4_K ? 8 : 1;
    const uintptr_t b = (uintptr_t)g + (size_t)(u / nit) * WK_R16_ROWS * bb;
    const size_t lines = (WK_R16_ROWS * bb + 63) / 64;
    wk_prefetch_part(b + AMX_PF_T0, lines, u % nit, nit, false);
    wk_prefetch_part(b + AMX_PF_T1, lines, u % nit, nit, true);
}

/* The B rows of step u (a 32-element block of Q4_1, Q5_0, Q8_0, a
 * sub-block of Q4_K, or a 16-element quarter of Q6_K: u = 4 (4i + 2h + p)
 * + q) into buf[u & 1] (Q6_K: at each group's first quarter, the group's
 * four into qbuf[grp & 1]); returns where they are. */
static ALWAYS_INLINE const uint8_t *amx_tok_codes(const enum amx_kind K, bool q6, int64_t u, const uint8_t *g,
                                                  uint8_t (*buf)[8 * 64], uint8_t (*qbuf)[4 * 256])
{
    if (q6) {
        const int64_t grp = u / 4;
        if ((u & 3) == 0) amx_q6k_codes(g, grp / 4, (int)((grp / 2) & 1), (int)(grp & 1), qbuf[grp & 1]);
        return qbuf[grp & 1] + 256 * (u & 3);
    }
    return (const uint8_t *)amx_codes(K, g, u, buf[u & 1]);
}

/* Where step u's A rows start: its x block's lines at a0, `line` bytes
 * a block (Q6_K: x block 8i + 4h + q, bytes 16p.. of its lines). */
static ALWAYS_INLINE const uint8_t *amx_tok_a(bool q6, int64_t u, const uint8_t *a0, size_t line)
{
    if (!q6) return a0 + line * (size_t)u;
    const int64_t grp = u / 4, i = grp / 4;
    const int h = (int)((grp / 2) & 1), p = (int)(grp & 1), q = (int)(u & 3);
    return a0 + line * (size_t)(8 * i + 4 * h + q) + 16 * p;
}

/* Decode's float chain for step u's results (token t's S_hi and S_lo at
 * ch[rs t] and cl[rs t]: the stored tiles) into m tokens' accumulators (token t's prepared chunk at
 * pt[t], nxb 32-element blocks). */
static ALWAYS_INLINE void amx_tok_epilogue(const enum amx_kind K, bool q6, int m, int rs, int64_t u, int64_t nxb,
                                           const uint8_t *g, int32_t (*ch)[16], int32_t (*cl)[16],
                                           const float *const *pt, __m512 *acc, __m512 *accc, __m512 *accb,
                                           __m512 *accm)
{
    if (q6) { /* r16_group_q6k */
        const int64_t grp = u / 4, i = grp / 4;
        const int h = (int)((grp / 2) & 1), p = (int)(grp & 1), q = (int)(u & 3);
        const int64_t xb = 8 * i + 4 * h + q;
        const uint8_t *b = g + (size_t)i * WK_R16_ROWS * sizeof(struct wk_block_q6_k);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
        const __m512i sc8 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 32 + 832 * (2 * h + p) + 768 + 16 * q)));
        const __m512 sc = _mm512_mul_ps(_mm512_cvtepi32_ps(sc8), d);
        for (int t = 0; t < m; t++) {
            const float *ds = pt[t] + nxb * 16, *s16 = pt[t] + WK_R16_PREP_CHUNK_FLOATS - WK_R16_PREP_CHUNK / 16;
            r16_dec_group(&acc[t], &accc[t], amx_sum(ch, cl, rs * t), sc, ds[xb], sc, s16[2 * xb + p]);
        }
    } else if (K == AMX_Q4_K) { /* r16_group_q4k */
        const int s = (int)(u % 8);
        const uint8_t *b = g + (size_t)(u / 8) * WK_R16_ROWS * sizeof(struct wk_block_q4_k);
        __m512i sci, mni;
        r16_q4k_scale_min(_mm512_loadu_si512(b + 64), _mm512_loadu_si512(b + 128), _mm512_loadu_si512(b + 192), s,
                          &sci, &mni);
        const __m512 sc = _mm512_cvtepi32_ps(sci), mn = _mm512_cvtepi32_ps(mni);
        for (int t = 0; t < m; t++) {
            const float *ds = pt[t] + nxb * 16, *sums = ds + nxb;
            if (s == 0) accb[t] = accm[t] = _mm512_setzero_ps();
            r16_dec_group(&accb[t], &accm[t], amx_sum(ch, cl, rs * t), sc, ds[u], mn, sums[u]);
        }
        if (s == 7) {
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
            const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + 32)));
            for (int t = 0; t < m; t++) {
                acc[t] = _mm512_fmadd_ps(accb[t], d, acc[t]);
                accc[t] = _mm512_fnmadd_ps(accm[t], dmin, accc[t]);
            }
        }
    } else { /* r16_group */
        const uint8_t *b = g + (size_t)u * WK_R16_ROWS * amx_block_bytes(K);
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
        const __m512 mw = K == AMX_Q4_1 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + 32))) : dw;
        const float kq = K == AMX_Q5_0 ? -16.0f : -128.0f;
        for (int t = 0; t < m; t++) {
            const float *ds = pt[t] + nxb * 16, *sums = ds + nxb;
            r16_dec_group(&acc[t], &accc[t], amx_sum(ch, cl, rs * t), dw, ds[u], mw, K == AMX_Q4_1 ? sums[u] : kq * sums[u]);
        }
    }
}

/*
 * Tiles of at most 8 tokens with their hi and lo rows in one A tile: the
 * int8 tiles above need two A tiles (x~'s hi and lo bytes) and two C tiles
 * (S_hi, S_lo) a set, so their two sets share the A tiles, and tiles are
 * not renamed: step u + 1's A loads wait for step u's products (Q4_K: a
 * step of 4 tokens cost ~120 cycles at ~3.5 GHz, of 8 ~150, and 8 tokens
 * ran no faster than the VNNI tiles; a loop of 16-row products alone takes
 * 18 a step). Here A holds
 * 2m rows, token t's hi bytes in row 2t and its lo bytes in row 2t + 1,
 * and C likewise (S_hi, S_lo of token t in rows 2t, 2t + 1): three tiles a
 * set (A 0/1, B 2/3, C 4/5), so the sets' steps overlap. The rows come
 * from a copy of the tokens' prepared lines, per block the m tokens' 64
 * bytes (hi[32], lo[32]) one after another (amx_tok2_relayout), which is
 * A with a stride of 32 bytes (Q6_K's quarters: 16 bytes of each half).
 */
#define AMX_T2 8 /* tokens a tile */

static struct amx_config g_tok2_config[2]; /* [q6] */

static void amx_tok2_config_fill(void)
{
    for (int q6 = 0; q6 < 2; q6++) amx_tok_config_set(&g_tok2_config[q6], q6, 2 * AMX_T2, 2);
}

/* m tokens' prepared lines (token t's at prep + t ldp) of all n / 32
 * blocks into dst: block j's at dst + 64 m j, token t's 64 bytes at + 64 t. */
static void amx_tok2_relayout(int64_t n, const float *prep, size_t ldp, int m, uint8_t *dst)
{
    const int64_t nxb = n / 32, per = WK_R16_PREP_CHUNK / 32;
    for (int64_t j = 0; j < nxb; j++) {
        const float *src = prep + (size_t)(j / per) * WK_R16_PREP_CHUNK_FLOATS + 16 * (size_t)(j % per);
        for (int t = 0; t < m; t++)
            _mm512_store_si512(dst + 64 * ((size_t)j * m + t), _mm512_loadu_si512(src + (size_t)t * ldp));
    }
}

/* The tile of 8's products of a step into set `set` (A rows at a, 32
 * bytes apart; B rows at codes). */
static ALWAYS_INLINE void amx_tok2_issue(const int set, const uint8_t *a, const uint8_t *codes)
{
    __asm__ volatile("" ::: "memory"); /* the codes' stores before the tile loads (amx_issue) */
    if (set) {
        _tile_loadd(1, a, 32);
        _tile_loadd(3, codes, 64);
        _tile_zero(5);
        _tile_dpbsud(5, 1, 3);
    } else {
        _tile_loadd(0, a, 32);
        _tile_loadd(2, codes, 64);
        _tile_zero(4);
        _tile_dpbsud(4, 0, 2);
    }
    __asm__ volatile("" ::: "memory");
}

/* One group, one column chunk of nc elements at g, m tokens: out[t][0..15]
 * (+)= the rows' dots, each token's with decode's bits (token t's prepared
 * chunk at pt[t]). The 16-row tiles (tok2 false) read A from the tokens'
 * own lines (at a0, ldb bytes apart); the tile of 8 (tok2, m = AMX_T2) from
 * the relaid ones at a0. amx_tile's pipeline: while step u + 1's products
 * run, step u's results are stored, step u + 2's codes unpacked and step
 * u - 1's results (stored a step earlier) go through the float epilogue,
 * so no tile load reads a store of its own step nor a vector load a tile
 * store of its own step (neither is forwarded). For the 16-row tiles at 8
 * tokens this order alone changed little (bench/gemm-r16 Q4_K 85-94 G
 * multiply-adds/s before and after; the tile of 8 is what paid there).
 * The steps still reach each token's accumulators in order: decode's bits. */
static ALWAYS_INLINE void amx_tok_chunk(const enum amx_kind K, bool q6, bool tok2, int m, int64_t nc,
                                        const uint8_t *g, const uint8_t *a0, size_t ldb, const float *const *pt,
                                        float *const *out, bool add)
{
    const int64_t nxb = nc / 32, nu = q6 ? nc / 16 : nxb;
    const size_t line = tok2 ? 64 * (size_t)m : 64;
    /* results of a set: the 16-row tiles' S_hi of token t in row t, S_lo
     * in row AMX_T + t; the tile of 8's in rows 2t, 2t + 1 */
    const int lo = tok2 ? 1 : AMX_T, rs = tok2 ? 2 : 1;
    _Alignas(64) uint8_t buf[2][8 * 64], qbuf[2][4 * 256];
    _Alignas(64) int32_t c[2][2 * AMX_T][16]; /* [set][row of a C tile][weight row] */
    __m512 acc[AMX_T], accc[AMX_T], accb[AMX_T], accm[AMX_T];
    const uint8_t *codes[2];
    for (int t = 0; t < m; t++) acc[t] = accc[t] = _mm512_setzero_ps();
    codes[0] = amx_tok_codes(K, q6, 0, g, buf, qbuf);
    if (nu > 1) codes[1] = amx_tok_codes(K, q6, 1, g, buf, qbuf);
    for (int64_t u = -1; u < nu; u++) {
        const int set = (int)(u & 1);
        if (u + 1 < nu) { /* step u + 1's products, in the other set */
            const uint8_t *a = amx_tok_a(q6, u + 1, a0, line);
            if (tok2) amx_tok2_issue(set ^ 1, a, codes[set ^ 1]);
            else if (set) amx_issue(0, a, ldb, codes[0]);
            else amx_issue(1, a, ldb, codes[1]);
        }
        if (u < 0) continue;
        if (tok2 && set) _tile_stored(5, c[1], 64);
        else if (tok2) _tile_stored(4, c[0], 64);
        else if (set) amx_store_c(1, c[1], c[1] + AMX_T);
        else amx_store_c(0, c[0], c[0] + AMX_T);
        if (u + 2 < nu) codes[set] = amx_tok_codes(K, q6, u + 2, g, buf, qbuf);
        amx_tok_prefetch(K, q6, u, g);
        if (u > 0) amx_tok_epilogue(K, q6, m, rs, u - 1, nxb, g, c[set ^ 1], c[set ^ 1] + lo, pt, acc, accc, accb, accm);
    }
    const int last = (int)((nu - 1) & 1);
    amx_tok_epilogue(K, q6, m, rs, nu - 1, nxb, g, c[last], c[last] + lo, pt, acc, accc, accb, accm);
    for (int t = 0; t < m; t++) {
        __m512 r = _mm512_add_ps(acc[t], accc[t]);
        if (add) r = _mm512_add_ps(r, _mm512_loadu_ps(out[t]));
        _mm512_storeu_ps(out[t], r);
    }
}

/* A thread's scratch for the relaid lines, grown as needed; freed when the thread ends. */
struct tok2_scratch {
    size_t bytes;
    uint8_t *p;
};
static pthread_key_t g_tok2_key;
static pthread_once_t g_tok2_once = PTHREAD_ONCE_INIT;
static void tok2_free(void *v)
{
    struct tok2_scratch *s = v;
    wk_aligned_free(s->p);
    free(s);
}
static void tok2_key_init(void) { (void)pthread_key_create(&g_tok2_key, tok2_free); }

/* At least `bytes` of this thread's scratch, or NULL without memory. */
static uint8_t *tok2_scratch(size_t bytes)
{
    pthread_once(&g_tok2_once, tok2_key_init);
    struct tok2_scratch *s = pthread_getspecific(g_tok2_key);
    if (!s) {
        if (!(s = calloc(1, sizeof *s))) return NULL;
        if (pthread_setspecific(g_tok2_key, s)) {
            free(s);
            return NULL;
        }
    }
    if (s->bytes < bytes) {
        wk_aligned_free(s->p);
        s->bytes = 0;
        if (!(s->p = wk_aligned_alloc(bytes))) return NULL;
        s->bytes = bytes;
    }
    return s->p;
}

/* The VNNI tokens entries the tokens kernels fall back on. */
static wk_vec_dot_rows_tokens_fn g_vnni_tokens[WK_DTYPE_COUNT];

/* vec_dot_rows_r16_tokens for K (Q6_K: q6): decode's loop order (per
 * group, per column chunk, the tokens): whole tiles of 16 tokens and a
 * last one of AMX_TOK_MIN to 15 through amx_tok_chunk, a last one of
 * exactly AMX_T2 as the tile of 8, fewer through VNNI. */
static ALWAYS_INLINE void amx_tokens(const enum amx_kind K, bool q6, enum wk_dtype dt, int64_t n, const void *w,
                                     size_t stride, const float *prep, size_t ldp, int32_t n_tokens, float *out,
                                     size_t ldo, int64_t n_rows)
{
    int32_t n_amx = n_tokens / AMX_T * AMX_T;
    if (n_tokens - n_amx >= AMX_TOK_MIN) n_amx = n_tokens;
    /* the tile of 8: its tokens' lines relaid (amx_tok2_relayout) */
    uint8_t *rl = n_tokens - n_amx == AMX_T2 ? tok2_scratch((size_t)AMX_T2 * 2 * (size_t)n) : NULL;
    if (rl) amx_tok2_relayout(n, prep + (size_t)n_amx * ldp, ldp, AMX_T2, rl);
    const int32_t n_done = n_amx + (rl ? AMX_T2 : 0);
    if (n_done) {
        const size_t bb = q6 ? sizeof(struct wk_block_q6_k) : amx_block_bytes(K), ldb = ldp * sizeof(float);
        const int64_t bs = q6 || K == AMX_Q4_K ? WK_QK_K : 32;
        const void *cfg = NULL;
        for (int64_t gi = 0; gi < n_rows / WK_R16_ROWS; gi++) {
            const uint8_t *wg = (const uint8_t *)w + (size_t)gi * WK_R16_ROWS * stride;
            for (int64_t c0 = 0; c0 < n; c0 += AMX_CHUNK) {
                const int64_t nc = WK_MIN(AMX_CHUNK, n - c0);
                const uint8_t *g = wg + (size_t)(c0 / bs) * WK_R16_ROWS * bb;
                for (int32_t t0 = 0; t0 < n_done; t0 += AMX_T) {
                    const int m = (int)WK_MIN(AMX_T, n_done - t0);
                    const bool tok2 = t0 >= n_amx;
                    const void *want = tok2 ? &g_tok2_config[q6] : &g_tok_config[q6][m];
                    if (want != cfg) _tile_loadconfig(want), cfg = want;
                    const float *p0 = prep + (size_t)t0 * ldp + (c0 / AMX_CHUNK) * WK_R16_PREP_CHUNK_FLOATS;
                    const float *pt[AMX_T];
                    float *o[AMX_T];
                    for (int t = 0; t < m; t++) {
                        pt[t] = p0 + (size_t)t * ldp;
                        o[t] = out + (size_t)(t0 + t) * ldo + WK_R16_ROWS * gi;
                    }
                    if (tok2) amx_tok_chunk(K, q6, true, AMX_T2, nc, g, rl + (size_t)AMX_T2 * 2 * c0, 0, pt, o, c0 > 0);
                    else amx_tok_chunk(K, q6, false, m, nc, g, (const uint8_t *)p0, ldb, pt, o, c0 > 0);
                }
            }
        }
        _tile_release();
    }
    if (n_done < n_tokens)
        g_vnni_tokens[dt](n, w, stride, prep + (size_t)n_done * ldp, ldp, n_tokens - n_done, out + (size_t)n_done * ldo,
                          ldo, n_rows);
}
