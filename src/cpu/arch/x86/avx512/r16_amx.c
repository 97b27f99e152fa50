/*
 * r16_amx.c - the R16 prefill GEMM (gemm_r16, wk_cpu.h) through AMX-INT8
 * tiles, for Q4_1_R16, Q5_0_R16, Q8_0_R16 and Q4_K_R16, and batched decode
 * (vec_dot_rows_r16_tokens, r16_amx_tokens.h) for those and Q6_K_R16, where the CPU and
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
 * tile's 16 vpdpbusd a token for every 32 elements of 16 rows. Where the
 * CPU also has AMX-BF16, Q4_1, Q4_K and Q6_K take BF16 tiles instead
 * (bf_gemm, below: the same bits, one tile of f32 results a block).
 */
#include "avx512.h"
#include "dot_rows.h" /* ALWAYS_INLINE, UNROLL */
#include "r16_codes.h"
#include "../prefetch_part.h"

#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
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
 * sets, so that one block's products run while the block before's results
 * are stored (and, in amx_tile, the one before that goes through the float
 * epilogue). */
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
    /* nor are later stores into the buffers kept after the loads */
    __asm__ volatile("" ::: "memory");
}

/* The S_hi and S_lo tiles of set `set` (m tokens' rows) into ch and cl. */
static ALWAYS_INLINE void amx_store_c(const int set, int32_t (*ch)[16], int32_t (*cl)[16])
{
    if (set == 0) {
        _tile_stored(4, ch, 64);
        _tile_stored(5, cl, 64);
    } else {
        _tile_stored(6, ch, 64);
        _tile_stored(7, cl, 64);
    }
}

/* The int32 S = 256 S_hi + S_lo of token t's 16 rows from the stored
 * S_hi and S_lo tiles (amx_store_c). */
static ALWAYS_INLINE __m512i amx_sum(int32_t (*ch)[16], int32_t (*cl)[16], int t)
{
    return _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(ch[t]), 8), _mm512_load_si512(cl[t]));
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
                                       int32_t (*ch)[16], int32_t (*cl)[16], const float *const *pd, __m512 *acc)
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
            acc[t] = r16_acc_block(acc[t], amx_sum(ch, cl, t), dsc, ds[j], dmn, sums[j], true);
        }
        return;
    }
    const uint8_t *b = g + (size_t)j * WK_R16_ROWS * amx_block_bytes(K);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
    const __m512 cw = r16_b32_offset(b, dw, K == AMX_Q4_1, K == AMX_Q5_0 ? -16.0f : -128.0f);
    UNROLL
    for (int t = 0; t < AMX_T; t++) {
        const float *ds = pd[t], *sums = ds + nxb;
        acc[t] = r16_acc_block(acc[t], amx_sum(ch, cl, t), dw, ds[j], cw, sums[j], false);
    }
}

/* One group, one column chunk of nc elements at g, 16 tokens (lines at
 * p0, ldb bytes apart; ds of token t at pd[t]): out[t][0..15] (+)= the
 * rows' dots. A software pipeline over the blocks, two tile sets in turn:
 * while block j + 1's products run, block j's results are stored, block
 * j + 2's codes unpacked, and block j - 1's results (stored a step
 * earlier) go through the float epilogue. Neither a tile load of codes
 * nor a vector load of results reads a store of the same step: the core
 * does not forward a store to a tile load, nor a tile store to a vector
 * load, and waiting for each to reach the cache held the GEMM at ~170 G
 * multiply-adds/s (Q4_1, 256 tokens, one core; without the epilogue's
 * loads ~290). The blocks still reach each token's accumulator in order:
 * the same bits. */
static ALWAYS_INLINE void amx_tile(const enum amx_kind K, int64_t nc, const uint8_t *g, const uint8_t *p0, size_t ldb,
                                   const float *const *pd, float *const *out, bool add)
{
    const int64_t nj = nc / 32;
    _Alignas(64) uint8_t buf[2][8 * 64];
    _Alignas(64) int32_t c[2][2][AMX_T][16]; /* [set][S_hi, S_lo][token][row] */
    const void *codes[2] = {amx_codes(K, g, 0, buf[0]), NULL};
    __m512 acc[AMX_T];
    UNROLL
    for (int t = 0; t < AMX_T; t++) acc[t] = _mm512_setzero_ps();
    amx_issue(0, p0, ldb, codes[0]);
    if (nj > 1) codes[1] = amx_codes(K, g, 1, buf[1]);
    for (int64_t j = 0; j < nj; j += 2) {
        /* step j: block j in set 0 */
        if (j + 1 < nj) amx_issue(1, p0 + 64 * (j + 1), ldb, codes[1]);
        amx_store_c(0, c[0][0], c[0][1]);
        if (j + 2 < nj) codes[0] = amx_codes(K, g, j + 2, buf[0]);
        if (j > 0) amx_epilogue(K, g, j - 1, nj, c[1][0], c[1][1], pd, acc);
        if (j + 1 >= nj) break;
        /* step j + 1: block j + 1 in set 1 */
        if (j + 2 < nj) amx_issue(0, p0 + 64 * (j + 2), ldb, codes[0]);
        amx_store_c(1, c[1][0], c[1][1]);
        if (j + 3 < nj) codes[1] = amx_codes(K, g, j + 3, buf[1]);
        amx_epilogue(K, g, j, nj, c[0][0], c[0][1], pd, acc);
    }
    amx_epilogue(K, g, nj - 1, nj, c[(nj - 1) & 1][0], c[(nj - 1) & 1][1], pd, acc); /* the last block */
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

/* Q6_K_R16: the B rows of the four quarters of vector group (h, p) of
 * super-block i at g into buf (quarter q at buf + 256 q: its rows kk =
 * 0..3 hold elements 128h + 32q + 16p + 4kk .. of the 16 rows). */
static ALWAYS_INLINE void amx_q6k_codes(const uint8_t *g, int64_t i, int h, int p, uint8_t *buf)
{
    const uint8_t *ph = g + (size_t)i * WK_R16_ROWS * sizeof(struct wk_block_q6_k) + 32 + 832 * (2 * h + p);
    UNROLL
    for (int kk = 0; kk < 4; kk++) {
        const __m512i A = _mm512_loadu_si512(ph + 192 * kk), B = _mm512_loadu_si512(ph + 192 * kk + 64);
        const __m512i Q = _mm512_loadu_si512(ph + 192 * kk + 128);
        UNROLL
        for (int q = 0; q < 4; q++) _mm512_store_si512(buf + 256 * q + 64 * kk, r16_q6k_code(q & 1 ? B : A, Q, q));
    }
}

/*
 * Q4_1, Q4_K and Q6_K on AMX-BF16 tiles, where the CPU has them
 * (wk_cpu_features.amx_bf16; Intel's AMX reference for TDPBF16PS). x~'s
 * 16-bit value of each element is 256 h + l (h and l its hi and lo bytes
 * as r16_prepare stores them, both in -127..127); 256 h and l are each
 * exact in BF16 (at most 8 significant bits), and so is a code: q (0..15)
 * of the 4-bit types, q - 32 (-32..31) of Q6_K. TDPBF16PS sums the
 * products of two A rows (256 h, then l) with the same B (the codes) in
 * f32, and every product and partial sum is an integer of magnitude at
 * most 32 (127 256 + 127) 15 (a 32-element block of 4-bit codes) or
 * 16 (127 256 + 127) 32 (a 16-element scale group of Q6_K), both below
 * 2^24: exact in any order. So one f32 tile holds each block's S = 256
 * S_hi + S_lo exactly (the int8 tiles' two int32 ones and their
 * combination in one); Q6_K's S with codes q is that plus 32 times the
 * group's sum of x~'s 16-bit values (T, exact, from bf_prepare_gemm), and
 * the f32 sum of the two exact terms rounds as float(S) does. The float
 * side is the VNNI GEMM's (r16_acc_block_f, r16_dec_group_f on that
 * float): the same bits.
 *
 * Against the int8 tiles (or Q6_K's VNNI tile), a block's 16 x 16 results
 * cost one tile store and, per token, one load, a multiply and two FMAs
 * (Q6_K: and an add of T); and the codes are unpacked once for all the
 * tokens, not once per 16: every token's x~ as BF16 A rows is part of its
 * preparation (bf_prepare_gemm, the table's r16_prepare_gemm: once a token
 * and matrix product, 4 bytes an element); per column chunk, for each tile of BF_GROUPS groups
 * their codes as B tiles (bf_codes: 64 KiB a group's chunk), then each
 * token tile of 16 over the groups. Tiles: 0, 1 A (256 h and l of 16
 * tokens, one block or Q6_K group); B in 2 or 3, C in 4 or 5 (two sets,
 * pipelined as amx_tile). A step is a block (32 elements) or a Q6_K group
 * (16: the order of r16_gemm_q6k_tile's quarters).
 */
#define BF_GROUPS 12 /* groups whose BF16 codes of a column chunk are kept: 768 KiB at most */

static const struct amx_config g_bf_config[2] = {
    {.palette = 1, .colsb = {64, 64, 64, 64, 64, 64}, .rows = {AMX_T, AMX_T, 16, 16, AMX_T, AMX_T}},
    /* Q6_K: 16 elements a step */
    {.palette = 1, .colsb = {32, 32, 64, 64, 64, 64}, .rows = {AMX_T, AMX_T, 8, 8, AMX_T, AMX_T}},
};

/* The VNNI table's r16_prepare, which r16_prepare_gemm extends. */
static void (*g_vnni_prepare)(int64_t n, const float *x, float *prep);

/* r16_prepare_gemm (wk_cpu.h) of the AMX-BF16 table: r16_prepare's floats,
 * then each 32-element block b's x~ as BF16 (256 h [32] then l [32], at
 * byte 128 b of the extension), 32 T of each 16 elements (n / 16 floats;
 * T the sum of their 256 h + l, an exact integer), 16 T of each block
 * (n / 32 floats). */
static void bf_prepare_gemm(int64_t n, const float *x, float *prep)
{
    g_vnni_prepare(n, x, prep);
    uint16_t *a = (uint16_t *)(prep + wk_cpu_r16_prep_floats(n));
    float *t6 = prep + wk_cpu_r16_prep_floats(n) + n, *t5 = t6 + n / 16;
    for (int64_t b = 0; b < n / 32; b++) {
        const int64_t c = b / (AMX_CHUNK / 32), j = b % (AMX_CHUNK / 32);
        const uint8_t *line = (const uint8_t *)(prep + c * WK_R16_PREP_CHUNK_FLOATS) + 64 * j;
        __m512 f[4];
        UNROLL
        for (int q = 0; q < 2; q++) {
            const __m128i h = _mm_loadu_si128((const __m128i *)(line + 16 * q));
            const __m128i l = _mm_loadu_si128((const __m128i *)(line + 32 + 16 * q));
            f[q] = _mm512_cvtepi32_ps(_mm512_slli_epi32(_mm512_cvtepi8_epi32(h), 8));
            f[2 + q] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(l));
        }
        /* the two halves' sums at once (integers: exact in any order): lane 0 and lane 8 */
        const __m512 v0 = _mm512_add_ps(f[0], f[2]), v1 = _mm512_add_ps(f[1], f[3]);
        __m512 s = _mm512_add_ps(_mm512_shuffle_f32x4(v0, v1, 0x44), _mm512_shuffle_f32x4(v0, v1, 0xEE));
        s = _mm512_add_ps(s, _mm512_shuffle_f32x4(s, s, 0xB1));
        s = _mm512_add_ps(s, _mm512_permute_ps(s, 0x4E));
        s = _mm512_add_ps(s, _mm512_permute_ps(s, 0xB1));
        _Alignas(64) float hs[16];
        _mm512_store_ps(hs, s);
        t6[2 * b] = 32.0f * hs[0], t6[2 * b + 1] = 32.0f * hs[8], t5[b] = 16.0f * (hs[0] + hs[8]);
        _mm512_store_si512(a + 64 * b, (__m512i)_mm512_cvtne2ps_pbh(f[1], f[0]));
        _mm512_store_si512(a + 64 * b + 32, (__m512i)_mm512_cvtne2ps_pbh(f[3], f[2]));
    }
}

/* BF16 of c (0..15), of c - 16 (c 0..31, Q5_0's codes) and of c - 32 (c
 * 0..63, Q6_K's), filled by wk__cpu_fill_amx */
static uint16_t g_bf_code[64] __attribute__((aligned(64))), g_bf_q5[64] __attribute__((aligned(64))),
    g_bf_q6[64] __attribute__((aligned(64)));

static uint16_t bf16_of(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return (uint16_t)(u >> 16); /* exact: the small integers here need 8 bits */
}

/* One int8 B row of codes (lane r: codes 4k .. 4k + 3 of row r, 0..63) as
 * B pair-rows 2k and 2k + 1 of BF16 at d (lane r: codes 4k, 4k + 1; then
 * 4k + 2, 4k + 3), each code c as tab[c] (tab: 64 BF16 values). */
static ALWAYS_INLINE void bf_pairs(__m512i v, uint8_t *d, const uint16_t *tab)
{
    /* each lane's bytes 0, 1 (then 2, 3) as its two 16-bit halves, then
     * each code to its BF16 */
    const __m512i s01 = _mm512_set1_epi64((long long)0x8005800480018000ull);
    const __m512i s01b = _mm512_set1_epi64((long long)0x800D800C80098008ull);
    const __m512i s23 = _mm512_set1_epi64((long long)0x8007800680038002ull);
    const __m512i s23b = _mm512_set1_epi64((long long)0x800F800E800B800Aull);
    const __m512i x = _mm512_mask_blend_epi64(0xAA, s01, s01b), y = _mm512_mask_blend_epi64(0xAA, s23, s23b);
    const __m512i t0 = _mm512_load_si512(tab), t1 = _mm512_load_si512(tab + 32);
    _mm512_store_si512(d, _mm512_permutex2var_epi16(t0, _mm512_shuffle_epi8(v, x), t1));
    _mm512_store_si512(d + 64, _mm512_permutex2var_epi16(t0, _mm512_shuffle_epi8(v, y), t1));
}

/* The B tiles of a group's chunk of nc elements at g into buf: step u's
 * (1 KiB a block; Q6_K 512 bytes a group of 16) at buf + 1024 u (512 u):
 * amx_codes' rows (amx_q6k_codes') as BF16 pairs. */
static ALWAYS_INLINE void bf_codes(const enum amx_kind K, bool q6, const uint8_t *g, int64_t nc, uint8_t *buf)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    if (q6) {
        _Alignas(64) uint8_t qbuf[4 * 256];
        for (int64_t grp = 0; grp < nc / 64; grp++) { /* (i, h, p): four steps */
            amx_q6k_codes(g, grp / 4, (int)((grp / 2) & 1), (int)(grp & 1), qbuf);
            UNROLL
            for (int q = 0; q < 4; q++)
                UNROLL
                for (int kk = 0; kk < 4; kk++)
                    bf_pairs(_mm512_load_si512(qbuf + 256 * q + 64 * kk), buf + 512 * (4 * grp + q) + 128 * kk, g_bf_q6);
        }
        return;
    }
    for (int64_t j = 0; j < nc / 32; j++) {
        uint8_t *d = buf + 1024 * j;
        if (K == AMX_Q4_K) {
            const uint8_t *v = g + (size_t)(j / 8) * WK_R16_ROWS * sizeof(struct wk_block_q4_k) + 256 + 512 * ((j % 8) / 2);
            UNROLL
            for (int k = 0; k < 8; k++) {
                const __m512i x = _mm512_loadu_si512(v + 64 * k);
                bf_pairs(j & 1 ? _mm512_and_si512(_mm512_srli_epi16(x, 4), m4) : _mm512_and_si512(x, m4), d + 128 * k,
                         g_bf_code);
            }
            continue;
        }
        const bool q5 = K == AMX_Q5_0;
        const uint8_t *b = g + (size_t)j * WK_R16_ROWS * amx_block_bytes(K);
        const __m512i qh = q5 ? _mm512_loadu_si512(b + 32) : _mm512_setzero_si512();
        UNROLL
        for (int k = 0; k < 4; k++) { /* int8 rows k and 4 + k */
            __m512i lo, hi;
            r16_nibble_codes(_mm512_loadu_si512(b + (q5 ? 96 : 64) + 64 * k), qh, k, q5, &lo, &hi);
            bf_pairs(lo, d + 128 * k, q5 ? g_bf_q5 : g_bf_code);
            bf_pairs(hi, d + 128 * (4 + k), q5 ? g_bf_q5 : g_bf_code);
        }
    }
}

/* Step u's x block (Q6_K: group u = 4 (4i + 2h + p) + q, x block 8i + 4h
 * + q, elements 16p..; *half = p) */
static ALWAYS_INLINE int64_t bf_xblock(bool q6, int64_t u, int *half)
{
    if (!q6) {
        *half = 0;
        return u;
    }
    const int64_t grp = u / 4;
    *half = (int)(grp & 1);
    return 8 * (grp / 4) + 4 * ((grp / 2) & 1) + (u & 3);
}

/* Step u's products (A rows of 16 tokens at a, lda bytes apart: their x
 * block's, from the step's first element; its B at codes) into tile set
 * `set`. */
static ALWAYS_INLINE void bf_issue(const int set, const uint16_t *a, size_t lda, const uint8_t *codes)
{
    __asm__ volatile("" ::: "memory"); /* as amx_issue */
    _tile_loadd(0, a, lda);
    _tile_loadd(1, a + 32, lda);
    if (set == 0) {
        _tile_loadd(2, codes, 64);
        _tile_zero(4);
        _tile_dpbf16ps(4, 0, 2);
        _tile_dpbf16ps(4, 1, 2);
    } else {
        _tile_loadd(3, codes, 64);
        _tile_zero(5);
        _tile_dpbf16ps(5, 0, 3);
        _tile_dpbf16ps(5, 1, 3);
    }
    __asm__ volatile("" ::: "memory");
}

/* Step u's float epilogue into the 16 tokens' accumulators: amx_epilogue's
 * operations (Q6_K: r16_gemm_q6k_tile's) on S as the float the tile holds
 * (Q5_0, Q6_K: plus 16 or 32 T, read toff floats from pd[t]: token t's
 * sums of this chunk, bf_prepare_gemm's). */
static ALWAYS_INLINE void bf_epilogue(const enum amx_kind K, bool q6, const uint8_t *g, int64_t u, int64_t nxb,
                                      float (*c)[16], const float *const *pd, int64_t toff, __m512 *acc)
{
    if (q6) {
        int p;
        const int64_t xb = bf_xblock(true, u, &p), grp = u / 4;
        const uint8_t *b = g + (size_t)(grp / 4) * WK_R16_ROWS * sizeof(struct wk_block_q6_k);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
        const __m512i sc8 = _mm512_cvtepi8_epi32(
            _mm_loadu_si128((const __m128i *)(b + 32 + 832 * ((grp & 3)) + 768 + 16 * (u & 3))));
        const __m512 sc = _mm512_mul_ps(_mm512_cvtepi32_ps(sc8), d);
        UNROLL
        for (int t = 0; t < AMX_T; t++) {
            const float *s16 = pd[t] - nxb * 16 + WK_R16_PREP_CHUNK_FLOATS - WK_R16_PREP_CHUNK / 16;
            r16_dec_group_f(&acc[t], &acc[t], _mm512_add_ps(_mm512_load_ps(c[t]), _mm512_set1_ps(pd[t][toff + 2 * xb + p])), sc,
                            pd[t][xb], sc, s16[2 * xb + p]);
        }
        return;
    }
    __m512 scale, off;
    if (K == AMX_Q4_K) {
        const uint8_t *b = g + (size_t)(u / 8) * WK_R16_ROWS * sizeof(struct wk_block_q4_k);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + 32)));
        __m512i sc, mn;
        r16_q4k_scale_min(_mm512_loadu_si512(b + 64), _mm512_loadu_si512(b + 128), _mm512_loadu_si512(b + 192),
                          (int)(u % 8), &sc, &mn);
        scale = _mm512_mul_ps(_mm512_cvtepi32_ps(sc), d), off = _mm512_mul_ps(_mm512_cvtepi32_ps(mn), dmin);
    } else {
        const uint8_t *b = g + (size_t)u * WK_R16_ROWS * amx_block_bytes(K);
        scale = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b));
        off = r16_b32_offset(b, scale, K == AMX_Q4_1, -16.0f);
    }
    UNROLL
    for (int t = 0; t < AMX_T; t++) {
        const float *ds = pd[t], *sums = ds + nxb;
        __m512 S = _mm512_load_ps(c[t]);
        if (K == AMX_Q5_0) S = _mm512_add_ps(S, _mm512_set1_ps(pd[t][toff + u])); /* codes q - 16 in the tile */
        acc[t] = r16_acc_block_f(acc[t], S, scale, ds[u], off, sums[u], K == AMX_Q4_K);
    }
}

/* One group, one column chunk of nc elements at g (its B tiles at codes),
 * 16 tokens (their A rows of the chunk at a, lda bytes apart; ds of token
 * t at pd[t], its sums toff floats after): out[t][0..15] (+)= the
 * rows' dots. amx_tile's pipeline over the steps, two tile sets in turn. */
static ALWAYS_INLINE void bf_tile(const enum amx_kind K, bool q6, int64_t nc, const uint8_t *g, const uint8_t *codes,
                                  const uint16_t *a, size_t lda, int64_t toff, const float *const *pd,
                                  float *const *out, bool add)
{
    const int64_t nxb = nc / 32, nu = q6 ? nc / 16 : nxb;
    const size_t cb = q6 ? 512 : 1024; /* B bytes a step */
    _Alignas(64) float c[2][AMX_T][16]; /* [set][token][row] */
    __m512 acc[AMX_T];
    UNROLL
    for (int t = 0; t < AMX_T; t++) acc[t] = _mm512_setzero_ps();
    int p;
    int64_t xb = bf_xblock(q6, 0, &p);
    bf_issue(0, a + 64 * xb + 16 * p, lda, codes);
    for (int64_t u = 0; u < nu; u += 2) {
        if (u + 1 < nu) xb = bf_xblock(q6, u + 1, &p), bf_issue(1, a + 64 * xb + 16 * p, lda, codes + cb * (u + 1));
        _tile_stored(4, c[0], 64);
        if (u > 0) bf_epilogue(K, q6, g, u - 1, nxb, c[1], pd, toff, acc);
        if (u + 1 >= nu) break;
        if (u + 2 < nu) xb = bf_xblock(q6, u + 2, &p), bf_issue(0, a + 64 * xb + 16 * p, lda, codes + cb * (u + 2));
        _tile_stored(5, c[1], 64);
        bf_epilogue(K, q6, g, u, nxb, c[0], pd, toff, acc);
    }
    bf_epilogue(K, q6, g, nu - 1, nxb, c[(nu - 1) & 1], pd, toff, acc);
    UNROLL
    for (int t = 0; t < AMX_T; t++) {
        __m512 r = acc[t];
        if (add) r = _mm512_add_ps(r, _mm512_loadu_ps(out[t]));
        _mm512_storeu_ps(out[t], r);
    }
}

/* A thread's scratch for bf_gemm: BF_GROUPS groups' B tiles of a column
 * chunk (BF_B_BYTES); made at the thread's first call, freed when the
 * thread ends. */
#define BF_B_BYTES ((size_t)BF_GROUPS * (WK_R16_PREP_CHUNK / 32) * 1024)
static pthread_key_t g_bf_key;
static pthread_once_t g_bf_once = PTHREAD_ONCE_INIT;
static void bf_key_init(void) { (void)pthread_key_create(&g_bf_key, wk_aligned_free); }

/* This thread's scratch, or NULL without memory. */
static uint8_t *bf_scratch(void)
{
    pthread_once(&g_bf_once, bf_key_init);
    uint8_t *s = pthread_getspecific(g_bf_key);
    if (!s && (s = wk_aligned_alloc(BF_B_BYTES)) && pthread_setspecific(g_bf_key, s)) {
        wk_aligned_free(s);
        s = NULL;
    }
    return s;
}

/* gemm_r16 for K (Q4_1, Q5_0, Q4_K; Q6_K: q6) on BF16 tiles, x prepared by
 * bf_prepare_gemm: whole tiles of 16 tokens here; per column chunk and
 * tile of BF_GROUPS groups
 * their codes as B tiles (bf_codes), then each token tile over the groups
 * (A rows straight from the tokens' preparation). The rest of the tokens
 * (and all of them if the scratch cannot be had) through the int8 tiles
 * (amx_gemm; Q6_K: the VNNI GEMM). */
static ALWAYS_INLINE void bf_gemm(const enum amx_kind K, bool q6, enum wk_dtype dt, int64_t n, const void *w,
                                  size_t stride, const float *prep, size_t ldp, int64_t n_tokens, float *out,
                                  size_t ldo, int64_t n_rows)
{
    const int64_t n_tiles = n_tokens / AMX_T;
    uint8_t *scratch = n_tiles ? bf_scratch() : NULL;
    const int64_t n_full = scratch ? n_tiles * AMX_T : 0;
    const size_t base = wk_cpu_r16_prep_floats(n); /* where bf_prepare_gemm's floats start */
    if (n_full) {
        const size_t bb = q6 ? sizeof(struct wk_block_q6_k) : amx_block_bytes(K), ldb = ldp * sizeof(float);
        const int64_t bs = q6 || K == AMX_Q4_K ? WK_QK_K : 32, n_groups = n_rows / WK_R16_ROWS;
        const int tmode = q6 ? 1 : K == AMX_Q5_0 ? 2 : 0;
        _tile_loadconfig(&g_bf_config[q6]);
        for (int64_t c0 = 0; c0 < n; c0 += AMX_CHUNK) {
            const int64_t nc = WK_MIN(AMX_CHUNK, n - c0), nxb = nc / 32;
            /* from pd[t] (token t's chunk start + nxb 16) to its sums of this chunk: Q6_K's 32 T of
             * each 16 elements, Q5_0's 16 T of each block (bf_prepare_gemm) */
            const int64_t toff = (int64_t)base + n + (tmode == 1 ? c0 / 16 : n / 16 + c0 / 32) - nxb * 16 -
                                 (c0 / AMX_CHUNK) * WK_R16_PREP_CHUNK_FLOATS;
            for (int64_t g0 = 0; g0 < n_groups; g0 += BF_GROUPS) {
                const int64_t g1 = WK_MIN(n_groups, g0 + BF_GROUPS);
                for (int64_t gi = g0; gi < g1; gi++)
                    bf_codes(K, q6, (const uint8_t *)w + (size_t)gi * WK_R16_ROWS * stride + (size_t)(c0 / bs) * WK_R16_ROWS * bb,
                             nc, scratch + (size_t)(gi - g0) * nxb * 1024);
                for (int64_t i = 0; i < n_tiles; i++) {
                    const float *p0 = prep + (size_t)i * AMX_T * ldp + (c0 / AMX_CHUNK) * WK_R16_PREP_CHUNK_FLOATS;
                    const uint16_t *a = (const uint16_t *)(prep + (size_t)i * AMX_T * ldp + base) + 2 * c0;
                    const float *pd[AMX_T];
                    for (int tk = 0; tk < AMX_T; tk++) pd[tk] = p0 + (size_t)tk * ldp + nxb * 16;
                    for (int64_t gi = g0; gi < g1; gi++) {
                        const uint8_t *wg = (const uint8_t *)w + (size_t)gi * WK_R16_ROWS * stride +
                                            (size_t)(c0 / bs) * WK_R16_ROWS * bb;
                        float *o[AMX_T];
                        for (int tk = 0; tk < AMX_T; tk++) o[tk] = out + (size_t)(i * AMX_T + tk) * ldo + WK_R16_ROWS * gi;
                        bf_tile(K, q6, nc, wg, scratch + (size_t)(gi - g0) * nxb * 1024, a, ldb, toff, pd,
                                o, c0 > 0);
                    }
                }
            }
        }
        _tile_release();
    }
    if (n_full == n_tokens) return;
    if (q6)
        g_vnni[dt](n, w, stride, prep + (size_t)n_full * ldp, ldp, n_tokens - n_full, out + (size_t)n_full * ldo, ldo,
                   n_rows);
    else
        amx_gemm(K, dt, n, w, stride, prep + (size_t)n_full * ldp, ldp, n_tokens - n_full, out + (size_t)n_full * ldo,
                 ldo, n_rows);
}

#include "r16_amx_tokens.h"

#define AMX_TOKENS_ENTRY(name, K, q6, dt)                                                                         \
    static void amx_tokens_##name(int64_t n, const void *w, size_t stride, const float *prep, size_t ldp,         \
                                  int32_t n_tokens, float *out, size_t ldo, int64_t n_rows)                       \
    {                                                                                                             \
        amx_tokens(K, q6, dt, n, w, stride, prep, ldp, n_tokens, out, ldo, n_rows);                               \
    }
AMX_TOKENS_ENTRY(q4_1, AMX_Q4_1, false, WK_DTYPE_Q4_1_R16)
AMX_TOKENS_ENTRY(q5_0, AMX_Q5_0, false, WK_DTYPE_Q5_0_R16)
AMX_TOKENS_ENTRY(q8_0, AMX_Q8_0, false, WK_DTYPE_Q8_0_R16)
AMX_TOKENS_ENTRY(q4_k, AMX_Q4_K, false, WK_DTYPE_Q4_K_R16)
AMX_TOKENS_ENTRY(q6_k, AMX_Q4_K, true, WK_DTYPE_Q6_K_R16)

/* gemm_r16 entries: fn's arguments, then the kernel's call */
#define GEMM_ENTRY(fn, call)                                                                                      \
    static void fn(int64_t n, const void *w, size_t stride, const float *prep, size_t ldp, int64_t n_tokens,      \
                   float *out, size_t ldo, int64_t n_rows)                                                        \
    {                                                                                                             \
        call;                                                                                                     \
    }
#define AMX_ENTRY(name, K, dt) GEMM_ENTRY(amx_gemm_##name, amx_gemm(K, dt, n, w, stride, prep, ldp, n_tokens, out, ldo, n_rows))
#define BF_ENTRY(name, K, q6, dt)                                                                                 \
    GEMM_ENTRY(bf_gemm_##name, bf_gemm(K, q6, dt, n, w, stride, prep, ldp, n_tokens, out, ldo, n_rows))
AMX_ENTRY(q4_1, AMX_Q4_1, WK_DTYPE_Q4_1_R16)
AMX_ENTRY(q5_0, AMX_Q5_0, WK_DTYPE_Q5_0_R16)
AMX_ENTRY(q8_0, AMX_Q8_0, WK_DTYPE_Q8_0_R16)
AMX_ENTRY(q4_k, AMX_Q4_K, WK_DTYPE_Q4_K_R16)
BF_ENTRY(q4_1, AMX_Q4_1, false, WK_DTYPE_Q4_1_R16)
BF_ENTRY(q4_k, AMX_Q4_K, false, WK_DTYPE_Q4_K_R16)
BF_ENTRY(q5_0, AMX_Q5_0, false, WK_DTYPE_Q5_0_R16)
BF_ENTRY(q6_k, AMX_Q4_K, true, WK_DTYPE_Q6_K_R16)

void wk__cpu_fill_amx(struct wk_cpu_kernels *k)
{
    /* Q4_1, Q5_0, Q4_K and Q6_K on BF16 tiles where the CPU has them;
     * Q8_0 (and the others without) on int8 tiles */
    const bool bf = wk_cpu_features_get()->amx_bf16;
    const enum wk_dtype dts[5] = {WK_DTYPE_Q4_1_R16, WK_DTYPE_Q5_0_R16, WK_DTYPE_Q8_0_R16, WK_DTYPE_Q4_K_R16,
                                  WK_DTYPE_Q6_K_R16};
    const wk_gemm_r16_fn fns[5] = {bf ? bf_gemm_q4_1 : amx_gemm_q4_1, bf ? bf_gemm_q5_0 : amx_gemm_q5_0, amx_gemm_q8_0,
                                   bf ? bf_gemm_q4_k : amx_gemm_q4_k, bf ? bf_gemm_q6_k : NULL};
    for (int c = 0; c < 64; c++)
        g_bf_code[c] = bf16_of((float)(c & 15)), g_bf_q5[c] = bf16_of((float)((c & 31) - 16)),
        g_bf_q6[c] = bf16_of((float)(c - 32));
    if (bf && k->r16_prepare) g_vnni_prepare = k->r16_prepare, k->r16_prepare_gemm = bf_prepare_gemm;
    for (int i = 0; i < 5; i++) {
        /* each needs the VNNI kernel beneath */
        if (!fns[i] || !k->gemm_r16[dts[i]] || k->gemm_r16[dts[i]] == fns[i]) continue;
        g_vnni[dts[i]] = k->gemm_r16[dts[i]];
        k->gemm_r16[dts[i]] = fns[i];
    }
    amx_tok_config_fill();
    amx_tok2_config_fill();
    const enum wk_dtype tdts[5] = {WK_DTYPE_Q4_1_R16, WK_DTYPE_Q5_0_R16, WK_DTYPE_Q8_0_R16, WK_DTYPE_Q4_K_R16,
                                   WK_DTYPE_Q6_K_R16};
    const wk_vec_dot_rows_tokens_fn tfns[5] = {amx_tokens_q4_1, amx_tokens_q5_0, amx_tokens_q8_0, amx_tokens_q4_k,
                                               amx_tokens_q6_k};
    for (int i = 0; i < 5; i++) {
        if (!k->vec_dot_rows_r16_tokens[tdts[i]] || k->vec_dot_rows_r16_tokens[tdts[i]] == tfns[i]) continue;
        g_vnni_tokens[tdts[i]] = k->vec_dot_rows_r16_tokens[tdts[i]];
        k->vec_dot_rows_r16_tokens[tdts[i]] = tfns[i];
    }
}
