/*
 * r16_amx.c - the R16 prefill GEMM (gemm_r16, wk_cpu.h) through AMX-INT8
 * tiles, for Q4_1_R16, Q5_0_R16, Q8_0_R16 and Q4_K_R16, where the CPU and
 * the OS grant AMX (wk_cpu_features.amx_int8: CPUID, XCR0's tile state and
 * Linux's ARCH_REQ_XCOMP_PERM; Intel SDM vol. 1 ch. 18, Intel's AMX
 * instruction reference for TDPBSUD). Compiled with -mamx-tile -mamx-int8
 * beside the VNNI flags.
 *
 * The R16 layout (repack.c) already is the tiles' B operand: vector k of a
 * 32-element block holds bytes 4k .. 4k + 3 of each of the group's 16 rows
 * in 32-bit lane r, which is row k of a "VNNI-packed" B tile with N = 16
 * columns (Q8_0: the block's eight stored vectors, q + 128, loaded as they
 * lie; Q4_1, Q5_0, Q4_K: the nibbles unpacked into eight such rows on the
 * stack first, Q5_0's fifth bits added as r16_group does). The A operand is
 * 16 tokens' prepared x (r16_prepare: per block hi[32] then lo[32], each a
 * token's row of a tile, ldp floats between tokens). TDPBSUD (signed A,
 * unsigned B) gives, per token t and row r, the block's exact S_hi and S_lo
 * of decode (rows_x16_template.h); S = 256 S_hi + S_lo, and the float side
 * is the VNNI GEMM tile's, operation for operation (r16_gemm_template.h:
 * r16_gemm_b32_tile, r16_gemm_q4k_tile): acc += float(S) (d_w ds), then the
 * offset term. So every result has the bits of the VNNI gemm_r16 (tested:
 * test-cpu-r16 runs the table that has this kernel and compares its GEMM
 * with the VNNI one), and the tokens past the last whole tile of 16 go to
 * the VNNI kernel.
 *
 * Per block and 16 tokens: two TDPBSUD (16 x 16 x 32 each), two tile
 * stores of the int32 results, then 16 zmm epilogues; against the VNNI
 * tile's 16 vpdpbusd a token for every 32 elements of 16 rows.
 */
#include "avx512.h"
#include "dot_rows.h" /* ALWAYS_INLINE, UNROLL */
#include "r16_codes.h"

#include <immintrin.h>
#include <string.h>

/* The VNNI gemm_r16 entries this one falls back on for the tail tokens. */
static wk_gemm_r16_fn g_vnni[WK_DTYPE_COUNT];

enum amx_kind { AMX_Q4_1, AMX_Q5_0, AMX_Q8_0, AMX_Q4_K };

#define AMX_T 16                /* tokens a tile */
#define AMX_GROUPS 4            /* groups of 16 rows whose column chunk a token tile visits in turn */
#define AMX_CHUNK WK_R16_PREP_CHUNK

/* Tile registers: 0, 1 A (x's hi and lo bytes of 16 tokens, one block);
 * two sets of B (the codes of one block, 8 rows of 64 bytes) and C (S_hi,
 * S_lo): 2 and 4, 5; 3 and 6, 7 (amx_issue). */
struct amx_config {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

/* A constant in memory: GCC 12 treats ldtilecfg's operand as not read, so
 * a configuration built on the stack had its stores removed (#GP). */
static const struct amx_config g_config = {
    .palette = 1,
    .colsb = {32, 32, 64, 64, 64, 64, 64, 64},
    .rows = {AMX_T, AMX_T, 8, 8, AMX_T, AMX_T, AMX_T, AMX_T},
};

static void amx_configure(void)
{
    _tile_loadconfig(&g_config);
}

static inline size_t amx_block_bytes(enum amx_kind K)
{
    return K == AMX_Q4_1   ? sizeof(struct wk_block_q4_1)
           : K == AMX_Q5_0 ? sizeof(struct wk_block_q5_0)
           : K == AMX_Q8_0 ? sizeof(struct wk_block_q8_0)
                           : sizeof(struct wk_block_q4_k);
}

/* Issues one 32-element block's two products into tile set `set` (C tiles
 * 4, 5 or 6, 7; B tile 2 or 3): A from line (token 0's compact line of the
 * block, ldb bytes between tokens), B: 8 rows of 64 bytes at codes. Two
 * sets, so that the next block's products run while this block's results
 * go through the float epilogue. */
static ALWAYS_INLINE void amx_issue(const int set, const uint8_t *line, size_t ldb, const void *codes)
{
    /* GCC 12's _tile_loadd is an asm with no memory operand: without this
     * barrier the stores that unpacked the codes into the stack buffer are
     * not ordered before it (they now are only through a later
     * _tile_stored's clobber) */
    __asm__ volatile("" ::: "memory");
    _tile_loadd(0, line, ldb);
    _tile_loadd(1, line + 32, ldb);
    if (set == 0) {
        _tile_loadd(2, codes, 64);
        _tile_zero(4);
        _tile_zero(5);
        _tile_dpbsud(4, 0, 2);
        _tile_dpbsud(5, 1, 2);
    } else {
        _tile_loadd(3, codes, 64);
        _tile_zero(6);
        _tile_zero(7);
        _tile_dpbsud(6, 0, 3);
        _tile_dpbsud(7, 1, 3);
    }
}

/* The int32 S = 256 S_hi + S_lo of set `set`'s block, token t's 16 rows in s[t]. */
static ALWAYS_INLINE void amx_collect(const int set, __m512i *s)
{
    _Alignas(64) int32_t ch[AMX_T][16], cl[AMX_T][16];
    if (set == 0) {
        _tile_stored(4, ch, 64);
        _tile_stored(5, cl, 64);
    } else {
        _tile_stored(6, ch, 64);
        _tile_stored(7, cl, 64);
    }
    UNROLL
    for (int t = 0; t < AMX_T; t++)
        s[t] = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(ch[t]), 8), _mm512_load_si512(cl[t]));
}

/* The B rows of 32-element block j of a group's column chunk at g: Q8_0's
 * stored vectors; the nibbles of Q4_1, Q5_0 (fifth bits added as r16_group
 * does) and Q4_K (sub-block j % 8 of super-block j / 8) unpacked into buf. */
static ALWAYS_INLINE const void *amx_codes(const enum amx_kind K, const uint8_t *g, int64_t j, uint8_t *buf)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    if (K == AMX_Q4_K) {
        const uint8_t *v = g + (size_t)(j / 8) * WK_R16_ROWS * sizeof(struct wk_block_q4_k) + 256 + 512 * ((j % 8) / 2);
        const int hi_nib = (int)(j & 1);
        UNROLL
        for (int k = 0; k < 8; k++) {
            const __m512i x = _mm512_loadu_si512(v + 64 * k);
            _mm512_store_si512(buf + 64 * k, hi_nib ? _mm512_and_si512(_mm512_srli_epi16(x, 4), m4) : _mm512_and_si512(x, m4));
        }
        return buf;
    }
    const size_t head = K == AMX_Q4_1 ? 64 : K == AMX_Q5_0 ? 96 : 32;
    const uint8_t *b = g + (size_t)j * WK_R16_ROWS * amx_block_bytes(K);
    if (K == AMX_Q8_0) return b + head;
    const __m512i qh = K == AMX_Q5_0 ? _mm512_loadu_si512(b + 32) : _mm512_setzero_si512();
    UNROLL
    for (int k = 0; k < 4; k++) { /* B rows k (elements 4k..) and 4 + k (16 + 4k..) */
        __m512i lo, hi;
        r16_nibble_codes(_mm512_loadu_si512(b + head + 64 * k), qh, k, K == AMX_Q5_0, &lo, &hi);
        _mm512_store_si512(buf + 64 * k, lo);
        _mm512_store_si512(buf + 64 * (4 + k), hi);
    }
    return buf;
}

/* Block j's float epilogue into the 16 tokens' accumulators, the VNNI
 * tiles' operations: Q4_1, Q5_0, Q8_0 as r16_gemm_b32_tile (acc +=
 * float(S) (d_w ds), then the offset term), Q4_K as r16_gemm_q4k_tile
 * (the sub-block's scale d sc and min dmin m). ds of token t at pd[t],
 * its sums nxb floats after. */
static ALWAYS_INLINE void amx_epilogue(const enum amx_kind K, const uint8_t *g, int64_t j, int64_t nxb,
                                       const __m512i *s, const float *const *pd, __m512 *acc)
{
    if (K == AMX_Q4_K) {
        const uint8_t *b = g + (size_t)(j / 8) * WK_R16_ROWS * sizeof(struct wk_block_q4_k);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + 32)));
        __m512i sc, mn;
        r16_q4k_scale_min(_mm512_loadu_si512(b + 64), _mm512_loadu_si512(b + 128), _mm512_loadu_si512(b + 192),
                          (int)(j % 8), &sc, &mn);
        const __m512 dsc = _mm512_mul_ps(_mm512_cvtepi32_ps(sc), d), dmn = _mm512_mul_ps(_mm512_cvtepi32_ps(mn), dmin);
        UNROLL
        for (int t = 0; t < AMX_T; t++) {
            const float *ds = pd[t], *sums = ds + nxb;
            acc[t] = r16_acc_block(acc[t], s[t], dsc, ds[j], dmn, sums[j], true);
        }
        return;
    }
    const uint8_t *b = g + (size_t)j * WK_R16_ROWS * amx_block_bytes(K);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
    const __m512 cw = r16_b32_offset(b, dw, K == AMX_Q4_1, K == AMX_Q5_0 ? -16.0f : -128.0f);
    UNROLL
    for (int t = 0; t < AMX_T; t++) {
        const float *ds = pd[t], *sums = ds + nxb;
        acc[t] = r16_acc_block(acc[t], s[t], dw, ds[j], cw, sums[j], false);
    }
}

/* One group, one column chunk of nc elements at g, 16 tokens (lines at
 * p0, ldb bytes apart; ds of token t at pd[t]): out[t][0..15] (+)= the
 * rows' dots. Block j + 1's products are issued before block j's
 * epilogue, in the other tile set. */
static ALWAYS_INLINE void amx_tile(const enum amx_kind K, int64_t nc, const uint8_t *g, const uint8_t *p0, size_t ldb,
                                   const float *const *pd, float *const *out, bool add)
{
    const int64_t nj = nc / 32;
    _Alignas(64) uint8_t buf[2][8 * 64];
    __m512 acc[AMX_T];
    UNROLL
    for (int t = 0; t < AMX_T; t++) acc[t] = _mm512_setzero_ps();
    amx_issue(0, p0, ldb, amx_codes(K, g, 0, buf[0]));
    for (int64_t j = 0; j < nj; j += 2) {
        __m512i s[AMX_T];
        if (j + 1 < nj) amx_issue(1, p0 + 64 * (j + 1), ldb, amx_codes(K, g, j + 1, buf[1]));
        amx_collect(0, s);
        amx_epilogue(K, g, j, nj, s, pd, acc);
        if (j + 1 < nj) {
            if (j + 2 < nj) amx_issue(0, p0 + 64 * (j + 2), ldb, amx_codes(K, g, j + 2, buf[0]));
            amx_collect(1, s);
            amx_epilogue(K, g, j + 1, nj, s, pd, acc);
        }
    }
    UNROLL
    for (int t = 0; t < AMX_T; t++) {
        __m512 r = acc[t];
        if (add) r = _mm512_add_ps(r, _mm512_loadu_ps(out[t]));
        _mm512_storeu_ps(out[t], r);
    }
}

/* gemm_r16 for K: whole tiles of 16 tokens through AMX (rows in tiles of
 * AMX_GROUPS groups; per column chunk, each token tile over the tile's
 * groups, as r16_gemm orders them), the rest through the VNNI kernel. */
static ALWAYS_INLINE void amx_gemm(const enum amx_kind K, enum wk_dtype dt, int64_t n, const void *w, size_t stride,
                                   const float *prep, size_t ldp, int64_t n_tokens, float *out, size_t ldo,
                                   int64_t n_rows)
{
    const int64_t n_full = n_tokens / AMX_T * AMX_T;
    if (n_full) {
        const size_t bb = amx_block_bytes(K), ldb = ldp * sizeof(float);
        const int64_t bs = K == AMX_Q4_K ? WK_QK_K : 32, n_groups = n_rows / WK_R16_ROWS;
        amx_configure();
        for (int64_t g0 = 0; g0 < n_groups; g0 += AMX_GROUPS) {
            const int64_t g1 = WK_MIN(n_groups, g0 + AMX_GROUPS);
            for (int64_t c0 = 0; c0 < n; c0 += AMX_CHUNK) {
                const int64_t nc = WK_MIN(AMX_CHUNK, n - c0), nxb = nc / 32;
                for (int64_t t0 = 0; t0 < n_full; t0 += AMX_T) {
                    const float *p0 = prep + (size_t)t0 * ldp + (c0 / AMX_CHUNK) * WK_R16_PREP_CHUNK_FLOATS;
                    const float *pd[AMX_T];
                    UNROLL
                    for (int t = 0; t < AMX_T; t++) pd[t] = p0 + (size_t)t * ldp + nxb * 16; /* ds: after the lines */
                    for (int64_t gi = g0; gi < g1; gi++) {
                        const uint8_t *wg = (const uint8_t *)w + (size_t)gi * WK_R16_ROWS * stride +
                                            (size_t)(c0 / bs) * WK_R16_ROWS * bb;
                        float *o[AMX_T];
                        UNROLL
                        for (int t = 0; t < AMX_T; t++) o[t] = out + (size_t)(t0 + t) * ldo + WK_R16_ROWS * gi;
                        amx_tile(K, nc, wg, (const uint8_t *)p0, ldb, pd, o, c0 > 0);
                    }
                }
            }
        }
        _tile_release();
    }
    if (n_full < n_tokens)
        g_vnni[dt](n, w, stride, prep + (size_t)n_full * ldp, ldp, n_tokens - n_full, out + (size_t)n_full * ldo, ldo,
                   n_rows);
}

#define AMX_ENTRY(name, K, dt)                                                                                    \
    static void amx_gemm_##name(int64_t n, const void *w, size_t stride, const float *prep, size_t ldp,           \
                                int64_t n_tokens, float *out, size_t ldo, int64_t n_rows)                         \
    {                                                                                                             \
        amx_gemm(K, dt, n, w, stride, prep, ldp, n_tokens, out, ldo, n_rows);                                     \
    }
AMX_ENTRY(q4_1, AMX_Q4_1, WK_DTYPE_Q4_1_R16)
AMX_ENTRY(q5_0, AMX_Q5_0, WK_DTYPE_Q5_0_R16)
AMX_ENTRY(q8_0, AMX_Q8_0, WK_DTYPE_Q8_0_R16)
AMX_ENTRY(q4_k, AMX_Q4_K, WK_DTYPE_Q4_K_R16)

void wk__cpu_fill_amx(struct wk_cpu_kernels *k)
{
    const enum wk_dtype dts[4] = {WK_DTYPE_Q4_1_R16, WK_DTYPE_Q5_0_R16, WK_DTYPE_Q8_0_R16, WK_DTYPE_Q4_K_R16};
    const wk_gemm_r16_fn fns[4] = {amx_gemm_q4_1, amx_gemm_q5_0, amx_gemm_q8_0, amx_gemm_q4_k};
    for (int i = 0; i < 4; i++) {
        if (!k->gemm_r16[dts[i]] || k->gemm_r16[dts[i]] == fns[i]) continue; /* needs the VNNI kernel beneath */
        g_vnni[dts[i]] = k->gemm_r16[dts[i]];
        k->gemm_r16[dts[i]] = fns[i];
    }
}
