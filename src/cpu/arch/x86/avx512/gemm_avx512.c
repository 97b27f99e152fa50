/*
 * gemm_avx512.c - the f32 matrix product c[j][i] = sum_l a[i][l] * b[j][l]
 * ("A · Bᵀ", both operands row-major; wk_gemm_f32_fn in wk_cpu.h). It is
 * the prefill kernel: a is a tile of up to 64 dequantized weight rows, b
 * holds every prompt token's activations, c[token][row] the outputs.
 *
 * Main path (n >= 4): an outer-product micro-kernel on a packed
 * copy of a, in the manner of Goto & van de Geijn, "Anatomy of
 * High-Performance Matrix Multiplication" (TOMS 2008).
 *   - a is packed per k-block of KC columns and MC rows into panels of 32
 *     rows (16 for a last panel of at most 16): panel[l][0..31] holds
 *     a[i0..i0+31][l0+l], i.e. the panel transposed so one l gives one or
 *     two full vectors of a's column. Rows past m are packed as zeros.
 *   - The micro-kernel holds a 32 x NR tile of c (NR <= 12 rows of b) in
 *     24 zmm accumulators. Per l it loads the panel's two vectors and
 *     broadcasts b[j][l] from memory (an embedded-broadcast operand), for
 *     24 FMAs per 2 vector loads and 12 scalar loads: the FMA unit, not
 *     the loads, sets the pace.
 *   - The lanes run along i, which is contiguous in c's rows, so the tile
 *     is stored with no horizontal reduction (masked at m's edge, so c's
 *     padding past m is never written).
 *   - b needs no transposing, but each k-block of a panel's NR rows is
 *     copied into a buffer with an odd row stride: b's own rows are often
 *     a multiple of 4 KB apart (k = 1024, 2048), and twelve rows read side
 *     by side then fall in one L1 set, which holds 8 lines (k = 2048 ran
 *     at 78 GFLOP/s instead of 95 before the copy).
 *   - Blocking: that copy (NR * KC * 4 = 13 KB) stays in L1 while it meets
 *     each panel of the packed a (MC * KC * 4 = 64 KB, in L2); each
 *     k-block after the first adds into c. Both buffers are on the stack
 *     (77 KB in all).
 * Each lane sums its KC products in order and the k-blocks are then added
 * in order, so the result does not depend on n or on how c is tiled.
 *
 * Small path (n < 4; a decode step's attention, a short prompt): packing
 * would cost more than it saves. Dot products run 4 rows of a by the n
 * rows of b at once along k (16 lanes, masked tail), each reduced at the
 * end by one fixed tree.
 *
 * Either way an element's summation order depends only on k and on which
 * path n selects, never on m, the row's position or the tiling, so the
 * threaded matmul, which splits m, is deterministic.
 *
 * Weights packed once (gemm_pack, gemm_prepacked; an embedding model's
 * layers): the packed path's panels written ahead, read by the same
 * micro-kernel, so the bits are gemm_packed's for every n; the copy of b
 * for up to FEW_GROUPS tiles is on the stack (104 KB).
 */
#include "avx512.h"

#include <stdbool.h>

#define KC 256 /* columns of a k-block */
/* The few-rows product's prefetch of the next panel (micro_pf): into L2,
 * not L1. A panel is 32 KB (32 rows x KC floats), as large as a Zen 4's
 * L1D, so fetching the next one into L1 (T0) evicted the one in use; and
 * a panel of two vectors is two lines a column, both asked for. Zen 4,
 * one 9-token sentence of all-MiniLM-L6-v2 in-process (bench/embed, best
 * of 500-1000, alternating builds): 1 thread 3.7-4.2 -> 2.0-2.1 ms, 2
 * threads 1.9-2.4 -> 1.1-1.6 ms; the bits are the same. */
#ifndef GEMM_PF_HINT
#define GEMM_PF_HINT _MM_HINT_T1
#endif
#define MC 64  /* rows of a packed at once (a multiple of 32; WK_GEMM_PACK_ROWS) */
_Static_assert(MC == WK_GEMM_PACK_ROWS, "prepacked row blocks are MC rows");
#define NR 12  /* rows of b in a micro-tile */
/* Floats between the rows of the micro-tile's copy of b: not a multiple
 * of 1 KB, so its rows do not share L1 sets. */
#define BP_STRIDE (KC + 16)

#define ALWAYS_INLINE inline __attribute__((always_inline))
/* Loops over register arrays must unroll completely, or the arrays live in
 * memory; -O2 alone does not unroll them. */
#define UNROLL _Pragma("GCC unroll 16")

/* ------------------------------------------------------------- packing */

/*
 * Transposes the 16 x 16 block r[0..15] (row t = r[t]) in place:
 * afterwards r[c] holds column c. Unpacks interleave pairs of rows, then
 * pairs of pairs, which leaves column 4q + c of rows 4s..4s+3 in 128-bit
 * lane q of r[4s + c]; two rounds of 128-bit lane shuffles gather the
 * four lanes of each column.
 */
static ALWAYS_INLINE void transpose16(__m512 r[16])
{
    __m512 t[16];
    UNROLL
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    UNROLL
    for (int i = 0; i < 4; i++) {
        __m512d t0 = _mm512_castps_pd(t[4 * i]), t1 = _mm512_castps_pd(t[4 * i + 1]);
        __m512d t2 = _mm512_castps_pd(t[4 * i + 2]), t3 = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
    }
    /* now lane q of r[4s + c] = column 4q + c, rows 4s..4s+3 */
    UNROLL
    for (int c = 0; c < 4; c++) {
        __m512 u0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88); /* lanes 0, 2 */
        __m512 u1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD); /* lanes 1, 3 */
        __m512 v0 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        __m512 v1 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
        t[c] = _mm512_shuffle_f32x4(u0, v0, 0x88);      /* column c */
        t[4 + c] = _mm512_shuffle_f32x4(u1, v1, 0x88);  /* column 4 + c */
        t[8 + c] = _mm512_shuffle_f32x4(u0, v0, 0xDD);  /* column 8 + c */
        t[12 + c] = _mm512_shuffle_f32x4(u1, v1, 0xDD); /* column 12 + c */
    }
    UNROLL
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

/*
 * Packs rows [0, mc) x columns [0, kc) of a into ap: panels of w = 32 rows
 * (w = 16 for a last panel of <= 16 rows), panel p at ap + 32 * p * ks
 * (ks >= kc, the panel's columns: gemm_packed gives kc rounded up to 16,
 * gemm_pack kc), element (i, l) of the panel at l * w + i. Rows mc..w-1
 * of the last panel are zeros; nothing past column kc is written. Reads
 * only inside the mc x kc block of a.
 */
static void pack_a(const float *a, int64_t lda, int64_t mc, int64_t kc, int64_t ks, float *ap)
{
    for (int64_t i0 = 0; i0 < mc; i0 += 16) {
        const int64_t p0 = i0 & ~(int64_t)31;
        const int64_t w = mc - p0 > 16 ? 32 : 16;
        float *dst = ap + p0 * ks + (i0 - p0);
        const int64_t rows = WK_MIN(16, mc - i0);
        for (int64_t l = 0; l < kc; l += 16) {
            const int64_t cols = WK_MIN(16, kc - l);
            const __mmask16 mk = wk__avx512_mask16(cols);
            __m512 r[16];
            UNROLL
            for (int t = 0; t < 16; t++)
                r[t] = t < rows ? _mm512_maskz_loadu_ps(mk, a + (i0 + t) * lda + l) : _mm512_setzero_ps();
            transpose16(r);
            UNROLL
            for (int t = 0; t < 16; t++)
                if (t < cols) _mm512_store_ps(dst + (l + t) * w, r[t]);
        }
    }
}

/* ---------------------------------------------------------- micro-kernel */

/*
 * c[j][0..16*MV) (+)= sum_l ap[l][..] * b[j][l] for j < nr, over kc
 * columns. MV (1 or 2 vectors of rows) and nr are compile-time constants
 * after inlining, so acc lives in registers. mlast masks the rows of the
 * last vector that exist; add selects c += (later k-blocks) over c =.
 */
static ALWAYS_INLINE void micro_pf(const int MV, const int nr, int64_t kc, const float *ap,
                                   const float *b, int64_t ldb, float *c, int64_t ldc,
                                   __mmask16 mlast, bool add, const bool pf_on, uintptr_t pf, int pf_step)
{
    __m512 acc[2][NR];
    UNROLL
    for (int j = 0; j < nr; j++) acc[0][j] = acc[1][j] = _mm512_setzero_ps();
    /* rows of b from four base pointers: the compiler then addresses the
     * twelve rows as base + {0, 1, 2} * ldb without running out of
     * general registers */
    const float *b0 = b, *b1 = nr > 3 ? b + 3 * ldb : b, *b2 = nr > 6 ? b + 6 * ldb : b,
                *b3 = nr > 9 ? b + 9 * ldb : b;
    for (int64_t l = 0; l < kc; l++) {
        if (pf_on) {
            _mm_prefetch((const char *)(pf + (uintptr_t)(l * pf_step)), GEMM_PF_HINT);
            if (pf_step > 64) _mm_prefetch((const char *)(pf + (uintptr_t)(l * pf_step) + 64), GEMM_PF_HINT);
        }
        const __m512 a0 = _mm512_load_ps(ap + l * 16 * MV);
        const __m512 a1 = MV == 2 ? _mm512_load_ps(ap + l * 32 + 16) : a0;
        UNROLL
        for (int j = 0; j < nr; j++) {
            const float *bj = j < 3 ? b0 : j < 6 ? b1 : j < 9 ? b2 : b3;
            const __m512 bv = _mm512_set1_ps(bj[(j % 3) * ldb + l]);
            acc[0][j] = _mm512_fmadd_ps(a0, bv, acc[0][j]);
            if (MV == 2) acc[1][j] = _mm512_fmadd_ps(a1, bv, acc[1][j]);
        }
    }
    UNROLL
    for (int j = 0; j < nr; j++) {
        float *cj = c + j * ldc;
        UNROLL
        for (int v = 0; v < MV; v++) {
            const __mmask16 mk = v == MV - 1 ? mlast : (__mmask16)0xFFFF;
            __m512 s = acc[v][j];
            if (add) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(mk, cj + 16 * v));
            _mm512_mask_storeu_ps(cj + 16 * v, mk, s);
        }
    }
}

/* micro_pf without the prefetch. */
static ALWAYS_INLINE void micro(const int MV, const int nr, int64_t kc, const float *ap,
                                const float *b, int64_t ldb, float *c, int64_t ldc,
                                __mmask16 mlast, bool add)
{
    micro_pf(MV, nr, kc, ap, b, ldb, c, ldc, mlast, add, false, 0, 0);
}

/* Instantiates micro() for MV in {1, 2} and every nr in 1..NR, so each
 * copy has its loops fully unrolled. */
typedef void (*micro_fn)(int64_t kc, const float *ap, const float *b, int64_t ldb, float *c,
                         int64_t ldc, __mmask16 mlast, bool add);
#define MICRO_FN(MV, nr)                                                                           \
    static void micro_##MV##_##nr(int64_t kc, const float *ap, const float *b, int64_t ldb,        \
                                  float *c, int64_t ldc, __mmask16 mlast, bool add)                \
    {                                                                                              \
        micro(MV, nr, kc, ap, b, ldb, c, ldc, mlast, add);                                         \
    }
#define MICRO_FNS(MV)                                                                              \
    MICRO_FN(MV, 1) MICRO_FN(MV, 2) MICRO_FN(MV, 3) MICRO_FN(MV, 4) MICRO_FN(MV, 5)                \
    MICRO_FN(MV, 6) MICRO_FN(MV, 7) MICRO_FN(MV, 8) MICRO_FN(MV, 9) MICRO_FN(MV, 10)              \
    MICRO_FN(MV, 11) MICRO_FN(MV, 12)
MICRO_FNS(1)
MICRO_FNS(2)
static const micro_fn g_micro[2][NR] = {
    {micro_1_1, micro_1_2, micro_1_3, micro_1_4, micro_1_5, micro_1_6, micro_1_7, micro_1_8,
     micro_1_9, micro_1_10, micro_1_11, micro_1_12},
    {micro_2_1, micro_2_2, micro_2_3, micro_2_4, micro_2_5, micro_2_6, micro_2_7, micro_2_8,
     micro_2_9, micro_2_10, micro_2_11, micro_2_12},
};

/* micro_pf with the prefetch, instantiated as micro() is. */
typedef void (*micro_pf_fn)(int64_t kc, const float *ap, const float *b, int64_t ldb, float *c,
                            int64_t ldc, __mmask16 mlast, bool add, uintptr_t pf, int pf_step);
#define MICRO_PF_FN(MV, nr)                                                                        \
    static void micro_pf_##MV##_##nr(int64_t kc, const float *ap, const float *b, int64_t ldb,     \
                                     float *c, int64_t ldc, __mmask16 mlast, bool add,             \
                                     uintptr_t pf, int pf_step)                                    \
    {                                                                                              \
        micro_pf(MV, nr, kc, ap, b, ldb, c, ldc, mlast, add, true, pf, pf_step);                   \
    }
#define MICRO_PF_FNS(MV)                                                                           \
    MICRO_PF_FN(MV, 1) MICRO_PF_FN(MV, 2) MICRO_PF_FN(MV, 3) MICRO_PF_FN(MV, 4)                    \
    MICRO_PF_FN(MV, 5) MICRO_PF_FN(MV, 6) MICRO_PF_FN(MV, 7) MICRO_PF_FN(MV, 8)                    \
    MICRO_PF_FN(MV, 9) MICRO_PF_FN(MV, 10) MICRO_PF_FN(MV, 11) MICRO_PF_FN(MV, 12)
MICRO_PF_FNS(1)
MICRO_PF_FNS(2)
static const micro_pf_fn g_micro_pf[2][NR] = {
    {micro_pf_1_1, micro_pf_1_2, micro_pf_1_3, micro_pf_1_4, micro_pf_1_5, micro_pf_1_6,
     micro_pf_1_7, micro_pf_1_8, micro_pf_1_9, micro_pf_1_10, micro_pf_1_11, micro_pf_1_12},
    {micro_pf_2_1, micro_pf_2_2, micro_pf_2_3, micro_pf_2_4, micro_pf_2_5, micro_pf_2_6,
     micro_pf_2_7, micro_pf_2_8, micro_pf_2_9, micro_pf_2_10, micro_pf_2_11, micro_pf_2_12},
};

/* Copies rows [0, nr) x columns [0, kc) of b into bp, rows BP_STRIDE
 * floats apart. */
static void copy_b(const float *b, int64_t ldb, int64_t nr, int64_t kc, float *bp)
{
    for (int64_t j = 0; j < nr; j++) {
        const float *src = b + j * ldb;
        float *dst = bp + j * BP_STRIDE;
        int64_t l = 0;
        for (; l + 16 <= kc; l += 16) _mm512_store_ps(dst + l, _mm512_loadu_ps(src + l));
        if (l < kc) {
            const __mmask16 mk = wk__avx512_mask16(kc - l);
            _mm512_mask_storeu_ps(dst + l, mk, _mm512_maskz_loadu_ps(mk, src + l));
        }
    }
}

/* Prefetches columns [0, kc) of rows [j0, j1) of b: the next group's rows
 * are short runs far apart (ldb), which the hardware prefetchers pick up
 * late, so they are asked for while this group computes; into L2, as the
 * group's pass streams up to SPAN blocks of weights through L1 meanwhile
 * (Zen 4, a batch of 256 sentences: copy_b 5.1% -> 2.9% of the time). */
static void prefetch_b(const float *b, int64_t ldb, int64_t j0, int64_t j1, int64_t kc)
{
    for (int64_t j = j0; j < j1; j++)
        for (int64_t l = 0; l < kc; l += 16) _mm_prefetch((const char *)(b + j * ldb + l), _MM_HINT_T1);
}

static void gemm_packed(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                        const float *b, int64_t ldb, float *c, int64_t ldc)
{
    _Alignas(64) float ap[MC * KC];
    _Alignas(64) float bp[NR * BP_STRIDE];
    for (int64_t l0 = 0; l0 < k; l0 += KC) {
        const int64_t kc = WK_MIN(KC, k - l0), kcp = (kc + 15) & ~(int64_t)15;
        const bool add = l0 > 0;
        for (int64_t i0 = 0; i0 < m; i0 += MC) {
            const int64_t mc = WK_MIN(MC, m - i0);
            pack_a(a + i0 * lda + l0, lda, mc, kc, kcp, ap);
            for (int64_t j0 = 0; j0 < n; j0 += NR) {
                const int64_t nr = WK_MIN(NR, n - j0);
                copy_b(b + j0 * ldb + l0, ldb, nr, kc, bp);
                prefetch_b(b + l0, ldb, j0 + NR, WK_MIN(j0 + 2 * NR, n), kc);
                for (int64_t p0 = 0; p0 < mc; p0 += 32) {
                    const int64_t rows = WK_MIN(32, mc - p0);
                    const int mv = rows > 16 ? 2 : 1;
                    g_micro[mv - 1][nr - 1](kc, ap + p0 * kcp, bp, BP_STRIDE, c + j0 * ldc + i0 + p0,
                                            ldc, wk__avx512_mask16(rows - 16 * (mv - 1)), add);
                }
            }
        }
    }
}

/* ------------------------------------------------------------ small path */

/* The kinds of rows the small path reads: gemm_f32's F32 rows, and
 * gemm_rows' (struct wk_cpu_rows) F16 rows and Q8_0 codes with their
 * scales, each converted exactly as it is loaded. */
enum row_kind { ROW_F32, ROW_F16, ROW_Q8 };

/* Where a row's elements and (Q8_0) scales are: the row's first element,
 * its scales' run, and the scales' shift (struct wk_cpu_rows.s_esh). */
struct row_src {
    const void *a;
    const wk_f16 *s;
    int esh;
};

/* 16 elements of a row from element l (at offset o, blocked or not) as
 * floats; with mk, lanes past mk read nothing and are 0. Q8_0: each code
 * times its scale, the 16 scales a run (esh 0) or one (esh 5: l a
 * multiple of 16, so its 16 elements share a group of 32). */
static ALWAYS_INLINE __m512 load_a(const enum row_kind h, const struct row_src *r, int64_t l, int64_t o,
                                   const bool masked, __mmask16 mk)
{
    if (h == ROW_F16)
        return _mm512_cvtph_ps(masked ? _mm256_maskz_loadu_epi16(mk, (const wk_f16 *)r->a + o)
                                      : _mm256_loadu_si256((const __m256i *)((const wk_f16 *)r->a + o)));
    if (h == ROW_F32) return masked ? _mm512_maskz_loadu_ps(mk, (const float *)r->a + o) : _mm512_loadu_ps((const float *)r->a + o);
    const int8_t *q = (const int8_t *)r->a + o;
    const __m512 v = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(masked ? _mm_maskz_loadu_epi8(mk, q) : _mm_loadu_si128((const __m128i *)q)));
    const __m512 sc = r->esh ? _mm512_cvtph_ps(_mm256_set1_epi16((short)r->s[l >> 5]))
                             : _mm512_cvtph_ps(masked ? _mm256_maskz_loadu_epi16(mk, r->s + l)
                                                      : _mm256_loadu_si256((const __m256i *)(r->s + l)));
    return _mm512_mul_ps(v, sc);
}

/* c[j][0..MR) = dot(row i of a, row j of b) for MR (1 or 4) rows of a
 * (ra[i]) and nr (1..3) rows of b, the rows' elements of kind h (the same
 * arithmetic on their exact f32 values); with blocked, element l of a row
 * at (l >> bsh) * bstride + (l & (2^bsh - 1)) from its start (gemm_rows:
 * the 16 elements of a step lie in one block), else at l. */
static ALWAYS_INLINE void dots_t(const enum row_kind h, const bool blocked, const int MR, const int nr, int64_t k,
                                 const struct row_src *ra, int bsh, int64_t bstride, const float *b, int64_t ldb,
                                 float *c, int64_t ldc)
{
    const int64_t bm = ((int64_t)1 << bsh) - 1;
    __m512 acc[4][4];
    UNROLL
    for (int i = 0; i < 4; i++)
        UNROLL
        for (int j = 0; j < 4; j++) acc[i][j] = _mm512_setzero_ps();
    int64_t l = 0;
    for (; l + 16 <= k; l += 16) {
        const int64_t o = blocked ? (l >> bsh) * bstride + (l & bm) : l;
        __m512 av[4];
        UNROLL
        for (int i = 0; i < MR; i++) av[i] = load_a(h, &ra[i], l, o, false, 0);
        UNROLL
        for (int j = 0; j < nr; j++) {
            __m512 bv = _mm512_loadu_ps(b + j * ldb + l);
            UNROLL
            for (int i = 0; i < MR; i++) acc[i][j] = _mm512_fmadd_ps(av[i], bv, acc[i][j]);
        }
    }
    if (l < k) {
        const int64_t o = blocked ? (l >> bsh) * bstride + (l & bm) : l;
        const __mmask16 mk = wk__avx512_mask16(k - l);
        __m512 av[4];
        UNROLL
        for (int i = 0; i < MR; i++) av[i] = load_a(h, &ra[i], l, o, true, mk);
        UNROLL
        for (int j = 0; j < nr; j++) {
            __m512 bv = _mm512_maskz_loadu_ps(mk, b + j * ldb + l);
            UNROLL
            for (int i = 0; i < MR; i++) acc[i][j] = _mm512_fmadd_ps(av[i], bv, acc[i][j]);
        }
    }
    if (MR == 4) {
        UNROLL
        for (int j = 0; j < nr; j++)
            _mm_storeu_ps(c + j * ldc, wk__avx512_hsum4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]));
    } else {
        /* the same reduction tree as for four rows, so a row's result does
         * not depend on whether m put it in a group of four */
        _Alignas(16) float s[4];
        _mm_store_ps(s, wk__avx512_hsum4(acc[0][0], acc[0][1], acc[0][2], acc[0][3]));
        UNROLL
        for (int j = 0; j < nr; j++) c[j * ldc] = s[j];
    }
}

/* dots_MR_nr: f32 rows; rows_H_B_MR_nr: gemm_rows' kinds (H: a row_kind, B: blocked) */
typedef void (*rows_fn)(int64_t k, const struct row_src *ra, int bsh, int64_t bstride, const float *b, int64_t ldb,
                        float *c, int64_t ldc);
#define DOTS_FN(MR, nr)                                                                            \
    static void dots_##MR##_##nr(int64_t k, const float *a, int64_t lda, const float *b,          \
                                 int64_t ldb, float *c, int64_t ldc)                               \
    {                                                                                              \
        struct row_src ra[4];                                                                      \
        for (int i = 0; i < MR; i++) ra[i] = (struct row_src){.a = a + i * lda};                   \
        dots_t(ROW_F32, false, MR, nr, k, ra, 0, 0, b, ldb, c, ldc);                               \
    }
#define ROWS_FN(H, B, MR, nr)                                                                      \
    static void rows_##H##_##B##_##MR##_##nr(int64_t k, const struct row_src *ra, int bsh,        \
                                             int64_t bstride, const float *b, int64_t ldb,         \
                                             float *c, int64_t ldc)                                \
    {                                                                                              \
        dots_t(H, B, MR, nr, k, ra, bsh, bstride, b, ldb, c, ldc);                                 \
    }
#define ROWS_FNS(H, B)                                                                             \
    ROWS_FN(H, B, 1, 1) ROWS_FN(H, B, 1, 2) ROWS_FN(H, B, 1, 3)                                    \
    ROWS_FN(H, B, 4, 1) ROWS_FN(H, B, 4, 2) ROWS_FN(H, B, 4, 3)
DOTS_FN(1, 1) DOTS_FN(1, 2) DOTS_FN(1, 3)
DOTS_FN(4, 1) DOTS_FN(4, 2) DOTS_FN(4, 3)
ROWS_FNS(0, 1) ROWS_FNS(1, 0) ROWS_FNS(1, 1) ROWS_FNS(2, 0) ROWS_FNS(2, 1)
typedef void (*dots_fn)(int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                        float *c, int64_t ldc);
static const dots_fn g_dots[2][3] = {
    {dots_1_1, dots_1_2, dots_1_3},
    {dots_4_1, dots_4_2, dots_4_3},
};
#define ROWS_TABLE(H, B) {{rows_##H##_##B##_1_1, rows_##H##_##B##_1_2, rows_##H##_##B##_1_3},              \
                          {rows_##H##_##B##_4_1, rows_##H##_##B##_4_2, rows_##H##_##B##_4_3}}
/* [kind][blocked]: F32 rows come here only blocked */
static const rows_fn g_rows[3][2][2][3] = {
    {{{NULL}}, ROWS_TABLE(0, 1)}, {ROWS_TABLE(1, 0), ROWS_TABLE(1, 1)}, {ROWS_TABLE(2, 0), ROWS_TABLE(2, 1)}};

static void gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                     int64_t ldb, float *c, int64_t ldc);

/* gemm_small over gemm_rows' rows (F16, Q8_0, or in blocks): n < 4 */
static void gemm_rows(int64_t m, int64_t n, int64_t k, const void *a, const struct wk_cpu_rows *r, const float *b,
                      int64_t ldb, float *c, int64_t ldc)
{
    if (r->type == WK_DTYPE_F32 && !r->blk) {
        gemm_f32(m, n, k, a, r->lda, b, ldb, c, ldc);
        return;
    }
    const enum row_kind h = r->type == WK_DTYPE_F16 ? ROW_F16 : r->type == WK_DTYPE_Q8_0 ? ROW_Q8 : ROW_F32;
    const rows_fn *f = g_rows[h][r->blk != 0][0], *f4 = g_rows[h][r->blk != 0][1];
    const int bsh = r->blk ? __builtin_ctz((unsigned)r->blk) : 0;
    const size_t es = h == ROW_F16 ? sizeof(wk_f16) : h == ROW_Q8 ? 1 : sizeof(float);
    struct row_src ra[4];
    for (int64_t i = 0; i < m;) {
        const int mr = m - i >= 4 ? 4 : 1;
        for (int t = 0; t < mr; t++)
            ra[t] = (struct row_src){.a = (const char *)a + (size_t)((i + t) * r->lda) * es,
                                     .s = h == ROW_Q8 ? r->s + ((i + t) >> r->s_rsh) * r->lds : NULL,
                                     .esh = r->s_esh};
        (mr == 4 ? f4 : f)[n - 1](k, ra, bsh, r->bstride, b, ldb, c + i, ldc);
        i += mr;
    }
}

/* n < 4: every row of a against the n rows of b. */
static void gemm_small(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                       const float *b, int64_t ldb, float *c, int64_t ldc)
{
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) g_dots[1][n - 1](k, a + i * lda, lda, b, ldb, c + i, ldc);
    for (; i < m; i++) g_dots[0][n - 1](k, a + i * lda, lda, b, ldb, c + i, ldc);
}

static void gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                     int64_t ldb, float *c, int64_t ldc)
{
    /* The choice depends on n only: callers split m between threads (and
     * tiles), and each c element must come out the same whichever part of
     * m it lands in. */
    if (n < 4) gemm_small(m, n, k, a, lda, b, ldb, c, ldc);
    else gemm_packed(m, n, k, a, lda, b, ldb, c, ldc);
}

/* ------------------------------------------------- weights packed once */

/* Row blocks (of MC rows) a prepacked product takes at once with more
 * than FEW_GROUPS groups of rows of b, so that each copied piece of NR
 * rows of b (copy_b, from L3 when b is large) serves SPAN * MC rows of
 * weights instead of MC; with fewer, all the call's blocks per piece. */
#define SPAN 8
#define FEW_GROUPS 8

/*
 * Weights packed once (gemm_f32_pack, an embedding model's layers): blocks
 * of MC rows, each MC * k floats (the last block's too), holding for each
 * KC-column piece in order (at MC * l0 within the block) pack_a's panels of
 * it, but kc floats a panel apart rather than kc rounded up to 16 (which
 * would not fit the block): panel p at 32 * p * kc. The prepacked product then reads the panels
 * gemm_packed would have made, and runs micro on them as it does: the
 * same bits, without packing the weights again on every call.
 */
static size_t gemm_pack_floats(int64_t m, int64_t k)
{
    return (size_t)((m + MC - 1) / MC) * MC * (size_t)k;
}

static void gemm_pack(int64_t m, int64_t k, const float *a, int64_t lda, float *dst)
{
    for (int64_t i0 = 0; i0 < m; i0 += MC)
        for (int64_t l0 = 0; l0 < k; l0 += KC) {
            const int64_t kc = WK_MIN(KC, k - l0);
            pack_a(a + i0 * lda + l0, lda, WK_MIN(MC, m - i0), kc, kc, dst + i0 * k + MC * l0);
        }
}

/*
 * gemm_packed(m, n, k, a, lda, b, ldb, c, ldc) bit for bit from a packed
 * by gemm_pack (pa = its output + r0 * k for rows from r0, a multiple of
 * MC): each element's chain is micro's over each KC piece in order, added
 * to c piece by piece, whichever way the rows of b are grouped or the
 * panels visited. Rows of b in groups of like size (13 as 7 + 6, not
 * 12 + 1). Few groups: see below; more: SPAN blocks of rows per copied
 * piece of b. gemm_prepacked_cols: the same over the first k of the pk
 * columns a was packed with (k <= pk): the blocks lie MC * pk apart and a
 * piece's panels kps apart (the piece's width in the packing), and an
 * element's chain over its first k columns is the one gemm_packed gives
 * for k columns (a panel of w rows holds column l at l * w, so the first
 * kc columns of a piece are a prefix of it).
 */
static void gemm_prepacked_cols(int64_t m, int64_t n, int64_t k, int64_t pk, const float *pa, const float *b,
                                int64_t ldb, float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0) return;
    _Alignas(64) float bp[FEW_GROUPS * NR * BP_STRIDE];
    const int64_t n_groups = (n + NR - 1) / NR, base = n / n_groups, extra = n % n_groups;
#define GROUP_ROWS(g) ((int64_t)(base + ((g) < extra)))
    const bool few = n_groups <= FEW_GROUPS;
    if (few) {
        /* Few rows of b (a sentence): the weights stream from memory and
         * each panel serves only a few groups. Piece by piece over all the
         * call's blocks, the piece of b copied once (not once per block of
         * 64 rows: 5% of a sentence's time), every panel with every group
         * in turn, each group's pass prefetching its share of the panel
         * after it (the next in the block, else the next block's same
         * piece, else the first block's next piece). */
        for (int64_t l0 = 0; l0 < k; l0 += KC) {
            const int64_t kc = WK_MIN(KC, k - l0), kps = WK_MIN(KC, pk - l0);
            const bool add = l0 > 0;
            for (int64_t g = 0, j0 = 0; g < n_groups; j0 += GROUP_ROWS(g), g++)
                copy_b(b + j0 * ldb + l0, ldb, GROUP_ROWS(g), kc, bp + g * NR * BP_STRIDE);
            for (int64_t r = 0; r < m; r += MC) {
                const int64_t mc = WK_MIN(MC, m - r);
                const float *blk = pa + r * pk + MC * l0;
                for (int64_t p0 = 0; p0 < mc; p0 += 32) {
                    const int64_t rows = WK_MIN(32, mc - p0);
                    const int mv = rows > 16 ? 2 : 1;
                    const float *panel = blk + p0 * kps;
                    /* (an integer: past the last piece it points beyond pa) */
                    const int64_t nx = p0 + 32 < mc ? r * pk + MC * l0 + (p0 + 32) * kps
                                       : r + MC < m ? (r + MC) * pk + MC * l0
                                                    : MC * (l0 + KC);
                    const uintptr_t next = (uintptr_t)pa + sizeof(float) * (uintptr_t)nx;
                    const int64_t bytes = 64 * mv * kc; /* this panel's; the next is about as long */
                    for (int64_t g = 0, j0 = 0; g < n_groups; j0 += GROUP_ROWS(g), g++)
                        g_micro_pf[mv - 1][GROUP_ROWS(g) - 1](kc, panel, bp + g * NR * BP_STRIDE, BP_STRIDE,
                                                             c + j0 * ldc + r + p0, ldc,
                                                             wk__avx512_mask16(rows - 16 * (mv - 1)), add,
                                                             next + (uintptr_t)(g * (bytes / n_groups)),
                                                             (int)(64 * mv / n_groups));
                }
            }
        }
        return;
    }
    for (int64_t ic = 0; ic < m; ic += MC * SPAN) {
        const int64_t ie = WK_MIN(m, ic + MC * SPAN);
        for (int64_t l0 = 0; l0 < k; l0 += KC) {
            const int64_t kc = WK_MIN(KC, k - l0), kps = WK_MIN(KC, pk - l0);
            const bool add = l0 > 0;
            for (int64_t g = 0, j0 = 0; g < n_groups; j0 += GROUP_ROWS(g), g++) {
                const int64_t nr = GROUP_ROWS(g);
                copy_b(b + j0 * ldb + l0, ldb, nr, kc, bp);
                prefetch_b(b + l0, ldb, j0 + nr, WK_MIN(j0 + 2 * nr, n), kc);
                for (int64_t r = ic; r < ie; r += MC) {
                    const int64_t mc = WK_MIN(MC, m - r);
                    const float *blk = pa + r * pk + MC * l0;
                    for (int64_t p0 = 0; p0 < mc; p0 += 32) {
                        const int64_t rows = WK_MIN(32, mc - p0);
                        const int mv = rows > 16 ? 2 : 1;
                        g_micro[mv - 1][nr - 1](kc, blk + p0 * kps, bp, BP_STRIDE, c + j0 * ldc + r + p0, ldc,
                                                wk__avx512_mask16(rows - 16 * (mv - 1)), add);
                    }
                }
            }
        }
    }
#undef GROUP_ROWS
}

static void gemm_prepacked(int64_t m, int64_t n, int64_t k, const float *pa, const float *b, int64_t ldb,
                           float *c, int64_t ldc)
{
    gemm_prepacked_cols(m, n, k, k, pa, b, ldb, c, ldc);
}

void wk__avx512_fill_gemm(struct wk_cpu_kernels *k)
{
    k->gemm_f32 = gemm_f32;
    k->gemm_f32_packed = gemm_packed;
    k->gemm_f32_packed_min_n = 4; /* gemm_f32: gemm_small below */
    k->gemm_rows = gemm_rows;
    k->gemm_f32_pack_floats = gemm_pack_floats;
    k->gemm_f32_pack = gemm_pack;
    k->gemm_f32_prepacked_cols = gemm_prepacked_cols;
    k->gemm_f32_prepacked = gemm_prepacked;
}
