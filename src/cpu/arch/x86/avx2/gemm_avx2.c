/*
 * gemm_avx2.c - the f32 GEMM of the table (gemm_f32) with AVX2 + FMA:
 * c[j * ldc + i] = sum_l a[i * lda + l] * b[j * ldb + l], both operands
 * row-major along k ("A · Bᵀ"). Prefill calls it with a tile of up to 64
 * dequantized weight rows as a and every prompt token as b; attention with
 * key rows (or transposed value rows) as a and up to 32 query rows as b.
 *
 * With k contiguous in both operands, a dot-product kernel keeps its lanes
 * along k and pays horizontal sums for every output. The main path instead
 * packs a, a block of MC rows × KC columns at a time, into panels of 16
 * rows stored column by column (panel[l * 16 + r] = a[r][l], 8×8 register
 * transposes); the micro-kernel then computes a 16 × 6 tile of c as outer
 * products: per l, two loads of a (rows 0-7, 8-15), six broadcasts b[j][l],
 * twelve FMAs into twelve accumulators. That is FMA-bound (2 pipes) with 8
 * loads per 12 FMAs, needs no horizontal sums, and each accumulator is 8
 * consecutive elements of one row of c, stored directly. ~100 GFLOP/s on
 * one Zen 4 core at 3.6 GHz (peak 115) for m = 64, n = 512, k = 576-2048.
 *
 * Blocking (Zen 4: 32 KB L1d, 1 MB L2): the a block is MC × KC floats =
 * 32 KB on the stack and stays in L2 while the loop walks b six rows at a
 * time. Those six rows' KC-long pieces are copied to a 3 KB buffer first
 * (pack_b): rows of b 4 KB apart (k = 1024, 2048) otherwise share L1 sets
 * with each other and with the panel and were evicted between panels, and
 * the copy prefetches the next six rows, whose short pieces the hardware
 * prefetcher would not ramp up for (k = 2048 went from 50 to 85+ GFLOP/s).
 * b is read once per a block; c is loaded and added to once per KC block.
 *
 * Weights packed once (gemm_f32_pack, BERT's layers) are read from memory
 * on every product: with up to 16 groups of six rows of b, panel by panel
 * with each group's pass prefetching its share of the next panel; with
 * more, up to 8 row blocks per copied piece of b (see
 * wk__avx2_gemm_f32_prepacked). Rows of b go in groups of like size, and
 * one or two rows over two panels at once, in both paths.
 *
 * Few rows of b (n < GEMM_DOT_MAX_N): packing a would cost as much as the
 * product, so gemm_dot computes 4 × 3 tiles of c as dot products along k
 * (7 loads per 12 FMAs) with one horizontal reduction per 4 outputs.
 *
 * Rounding: in the packed path element (i, j) is, for each KC block of k
 * in order, a chain of FMAs over l starting from 0, and c the running sum
 * of those block sums; in the dot form, eight lanes of FMA chains over k
 * and a fixed reduction tree. Which path runs depends on n only, and
 * neither sequence depends on where (i, j) falls in a tile or on m, so a
 * caller splitting the rows of a gets the same bits. Worst-case error:
 * about (KC + k / KC) * 2^-24 * sum |products| packed (8.6e-6 at
 * k = 2048), (k / 8 + 3) * 2^-24 in the dot form, against k * 2^-24 for
 * the reference's plain loop; typical errors are near the square root.
 */
#include "kernels_avx2.h"

#define MR 16  /* rows of a per packed panel (two ymm) */
#define NR 6   /* rows of b per micro-kernel call */
#define KC 128 /* columns of k per block (256 ran no faster; 128 halves the rounding bound) */
/* Up to this many groups of NR rows of b (n <= 96), block_product runs
 * panel by panel (see there); bpack holds that many groups' pieces. */
#define FEW_GROUPS 16
/* Row blocks a prepacked product takes at once with more rows of b. */
#define SPAN 8
#define MC 64  /* rows of a per packed block (a multiple of MR; WK_GEMM_PACK_ROWS) */
_Static_assert(MC == WK_GEMM_PACK_ROWS, "prepacked row blocks are MC rows");
/* Below this many rows of b the dot form (gemm_dot) is used. Measured
 * (Zen 4, 3.6 GHz, m = 64, k = 576-2048): the dot form runs at 85-105
 * GFLOP/s from n = 12 on, the packed one at 45-57 for n = 4-8, 75-98 for
 * n = 16-48, overtaking only at about n = 32-64 (earlier for large m * k,
 * as in attention). 16 keeps both paths under the unit test's shapes
 * (n up to 16). */
#define GEMM_DOT_MAX_N WK__AVX2_GEMM_DOT_MAX_N

/* ------------------------------------------------------------------ packing */

/* Transposes the 8×8 block in r0..r7 (rows) in place into columns; a
 * macro, as GCC keeps an array of vectors in memory. */
#define TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7)                                                 \
    do {                                                                                           \
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);                   \
        __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);                   \
        __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);                   \
        __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);                   \
        __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));                            \
        __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));                            \
        __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));                            \
        __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));                            \
        __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));                            \
        __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));                            \
        __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));                            \
        __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));                            \
        r0 = _mm256_permute2f128_ps(u0, u4, 0x20);                                                 \
        r1 = _mm256_permute2f128_ps(u1, u5, 0x20);                                                 \
        r2 = _mm256_permute2f128_ps(u2, u6, 0x20);                                                 \
        r3 = _mm256_permute2f128_ps(u3, u7, 0x20);                                                 \
        r4 = _mm256_permute2f128_ps(u0, u4, 0x31);                                                 \
        r5 = _mm256_permute2f128_ps(u1, u5, 0x31);                                                 \
        r6 = _mm256_permute2f128_ps(u2, u6, 0x31);                                                 \
        r7 = _mm256_permute2f128_ps(u3, u7, 0x31);                                                 \
    } while (0)

/*
 * Packs rows [0, rows) (rows <= w) and columns [0, kc) of a into dst, w
 * floats per column: dst[l * w + r] = a[r * lda + l]. w is 8 or 16. Rows
 * past `rows` repeat the last real row: their lanes are computed but never
 * stored, and real data keeps them finite. Full 8×8 blocks go through
 * registers; the last kc % 8 columns one float at a time.
 */
static void pack_panel(const float *a, int64_t lda, int64_t rows, int w, int64_t kc, float *dst)
{
    for (int g = 0; g < w; g += 8) {
        const float *p[8];
        for (int i = 0; i < 8; i++)
            p[i] = a + WK_MIN(g + i, rows - 1) * lda;
        const float *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
        const float *p4 = p[4], *p5 = p[5], *p6 = p[6], *p7 = p[7];
        float *d = dst + g;
        int64_t l = 0;
        for (; l + 8 <= kc; l += 8) {
            __m256 r0 = _mm256_loadu_ps(p0 + l), r1 = _mm256_loadu_ps(p1 + l);
            __m256 r2 = _mm256_loadu_ps(p2 + l), r3 = _mm256_loadu_ps(p3 + l);
            __m256 r4 = _mm256_loadu_ps(p4 + l), r5 = _mm256_loadu_ps(p5 + l);
            __m256 r6 = _mm256_loadu_ps(p6 + l), r7 = _mm256_loadu_ps(p7 + l);
            TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7);
            _mm256_storeu_ps(d + (l + 0) * w, r0);
            _mm256_storeu_ps(d + (l + 1) * w, r1);
            _mm256_storeu_ps(d + (l + 2) * w, r2);
            _mm256_storeu_ps(d + (l + 3) * w, r3);
            _mm256_storeu_ps(d + (l + 4) * w, r4);
            _mm256_storeu_ps(d + (l + 5) * w, r5);
            _mm256_storeu_ps(d + (l + 6) * w, r6);
            _mm256_storeu_ps(d + (l + 7) * w, r7);
        }
        for (; l < kc; l++)
            for (int i = 0; i < 8; i++)
                d[l * w + i] = p[i][l];
    }
}

/*
 * Copies the kc-long pieces of the nr rows of b at b into dst, KC floats
 * apart, so that the six rows a micro-kernel broadcasts from are contiguous
 * (rows of b 4 KB apart otherwise share L1 sets with each other and with
 * the panel, and get evicted between panels). Prefetches the same pieces
 * of the n_next rows at next (the next call's), which come from memory
 * when b is larger than L2: each piece is too short for the hardware
 * prefetcher to ramp up.
 */
static void pack_b(const float *b, int64_t ldb, int nr, int64_t kc, const float *next, int n_next,
                   float *dst)
{
    for (int j = 0; j < nr; j++) {
        const float *src = b + j * ldb;
        const float *pf = j < n_next ? next + j * ldb : NULL;
        float *d = dst + j * KC;
        int64_t l = 0;
        for (; l + 16 <= kc; l += 16) {
            if (pf)
                _mm_prefetch((const char *)(pf + l), _MM_HINT_T0);
            _mm256_storeu_ps(d + l, _mm256_loadu_ps(src + l));
            _mm256_storeu_ps(d + l + 8, _mm256_loadu_ps(src + l + 8));
        }
        if (pf && l < kc)
            _mm_prefetch((const char *)(pf + l), _MM_HINT_T0);
        for (; l < kc; l++)
            d[l] = src[l];
    }
}

/* ------------------------------------------------------------ micro-kernel */

/* Stores (first KC block) or adds v to the `cnt` (1-8) floats at p; a
 * partial vector goes through a buffer so nothing past cnt is touched. */
static inline void put8(float *p, __m256 v, int cnt, int first)
{
    if (cnt >= 8) {
        _mm256_storeu_ps(p, first ? v : _mm256_add_ps(_mm256_loadu_ps(p), v));
        return;
    }
    float t[8];
    _mm256_storeu_ps(t, v);
    for (int i = 0; i < cnt; i++)
        p[i] = first ? t[i] : p[i] + t[i];
}

/*
 * c[j][0..rows) (+)= sum_l panel[l][r] * b[j][l] for the nr (1..6) rows of
 * b packed at b (KC floats apart), over kc columns. nv is the panel's
 * width in vectors (2: 16 rows, 1: 8 rows); rows (<= 8 * nv) is how many
 * of them are real. With prefetch (a constant), each step l also
 * prefetches the address pf + l * pf_step (a line of weights on their way;
 * block_product picks where; an integer, as it may lie past the end of the
 * weights, where prefetching is harmless but a pointer may not point). Inlined with
 * constant nv and nr; the accumulators are named variables, not an array,
 * because GCC keeps an indexed array on the stack (the loop then runs at a
 * third of the speed), and the unused ones fold away.
 */
static inline __attribute__((always_inline)) void micro(int nv, int nr, int64_t kc,
                                                         const float *panel, const float *b,
                                                         float *c, int64_t ldc, int rows,
                                                         int first, int prefetch, uintptr_t pf,
                                                         int pf_step)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const float *b0 = b, *b1 = b + KC, *b2 = b + 2 * KC;
    const float *b3 = b + 3 * KC, *b4 = b + 4 * KC, *b5 = b + 5 * KC;
#define STEP(J)                                                                                    \
    if (nr > J) {                                                                                  \
        __m256 bb = _mm256_broadcast_ss(b##J + l);                                                 \
        c##J##0 = _mm256_fmadd_ps(a0, bb, c##J##0);                                                \
        if (nv > 1)                                                                                \
            c##J##1 = _mm256_fmadd_ps(a1, bb, c##J##1);                                            \
    }
#pragma GCC unroll 2
    for (int64_t l = 0; l < kc; l++) {
        if (prefetch)
            _mm_prefetch((const char *)(pf + (uintptr_t)(l * pf_step)), _MM_HINT_T0);
        __m256 a0 = _mm256_loadu_ps(panel + l * 8 * nv);
        __m256 a1 = nv > 1 ? _mm256_loadu_ps(panel + l * 8 * nv + 8) : a0;
        STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5)
    }
#undef STEP
#define PUT(J)                                                                                     \
    if (nr > J) {                                                                                  \
        put8(c + J * ldc, c##J##0, rows, first);                                                   \
        if (nv > 1)                                                                                \
            put8(c + J * ldc + 8, c##J##1, rows - 8, first);                                       \
    }
    PUT(0) PUT(1) PUT(2) PUT(3) PUT(4) PUT(5)
#undef PUT
}

/* One panel against nr rows of b: dispatch to a constant-shaped kernel;
 * micro_any_pf with the prefetch. (One function for both, choosing on pf
 * inside, made the packed path's loop 10% slower.) */
static void micro_any(int nv, int nr, int64_t kc, const float *panel, const float *b, float *c,
                      int64_t ldc, int rows, int first)
{
#define CASE(NV, N)                                                                                \
    case (NV) * 8 + (N): micro(NV, N, kc, panel, b, c, ldc, rows, first, 0, 0, 0); break
    switch (nv * 8 + nr) {
        CASE(2, 6); CASE(2, 5); CASE(2, 4); CASE(2, 3); CASE(2, 2); CASE(2, 1);
        CASE(1, 6); CASE(1, 5); CASE(1, 4); CASE(1, 3); CASE(1, 2); CASE(1, 1);
    default: break;
    }
#undef CASE
}

static void micro_any_pf(int nv, int nr, int64_t kc, const float *panel, const float *b, float *c,
                         int64_t ldc, int rows, int first, uintptr_t pf, int pf_step)
{
#define CASE(NV, N)                                                                                \
    case (NV) * 8 + (N): micro(NV, N, kc, panel, b, c, ldc, rows, first, 1, pf, pf_step); break
    switch (nv * 8 + nr) {
        CASE(2, 6); CASE(2, 5); CASE(2, 4); CASE(2, 3); CASE(2, 2); CASE(2, 1);
        CASE(1, 6); CASE(1, 5); CASE(1, 4); CASE(1, 3); CASE(1, 2); CASE(1, 1);
    default: break;
    }
#undef CASE
}

/*
 * Two full panels (32 rows) against nr (1 or 2) rows of b: with so few
 * rows of b one panel has only 2 * nr accumulators, too few chains to
 * cover the FMA latency on two pipes (n = 2 ran at 41 GFLOP/s against 70
 * for n = 10 on a Zen 3 core); two panels give 4 * nr. (Three rows would
 * need 12 accumulators and 4 panel vectors: more than the 16 registers.)
 * Each element's FMA chain over l is micro's, so the bits are too. Step l
 * prefetches line l of the two panels after them (from pf).
 */
static inline __attribute__((always_inline)) void micro_pair(int nr, int64_t kc, const float *p0,
                                                              const float *p1, const float *b, float *c,
                                                              int64_t ldc, int first, int prefetch,
                                                              uintptr_t pf)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00;
    __m256 c12 = c00, c13 = c00;
    const float *b0 = b, *b1 = b + KC;
#define STEP(J)                                                                                    \
    if (nr > J) {                                                                                  \
        __m256 bb = _mm256_broadcast_ss(b##J + l);                                                 \
        c##J##0 = _mm256_fmadd_ps(a0, bb, c##J##0);                                                \
        c##J##1 = _mm256_fmadd_ps(a1, bb, c##J##1);                                                \
        c##J##2 = _mm256_fmadd_ps(a2, bb, c##J##2);                                                \
        c##J##3 = _mm256_fmadd_ps(a3, bb, c##J##3);                                                \
    }
#pragma GCC unroll 2
    for (int64_t l = 0; l < kc; l++) {
        if (prefetch) {
            _mm_prefetch((const char *)(pf + (uintptr_t)(l * 64)), _MM_HINT_T0);
            _mm_prefetch((const char *)(pf + (uintptr_t)((l + kc) * 64)), _MM_HINT_T0);
        }
        __m256 a0 = _mm256_loadu_ps(p0 + l * 16), a1 = _mm256_loadu_ps(p0 + l * 16 + 8);
        __m256 a2 = _mm256_loadu_ps(p1 + l * 16), a3 = _mm256_loadu_ps(p1 + l * 16 + 8);
        STEP(0) STEP(1)
    }
#undef STEP
#define PUT(J)                                                                                     \
    if (nr > J) {                                                                                  \
        put8(c + J * ldc, c##J##0, 8, first);                                                      \
        put8(c + J * ldc + 8, c##J##1, 8, first);                                                  \
        put8(c + J * ldc + 16, c##J##2, 8, first);                                                 \
        put8(c + J * ldc + 24, c##J##3, 8, first);                                                 \
    }
    PUT(0) PUT(1)
#undef PUT
}

static void micro_pair_any(int nr, int64_t kc, const float *p0, const float *p1, const float *b, float *c,
                           int64_t ldc, int first, uintptr_t pf)
{
    switch (nr) {
    case 1: pf ? micro_pair(1, kc, p0, p1, b, c, ldc, first, 1, pf) : micro_pair(1, kc, p0, p1, b, c, ldc, first, 0, 0); break;
    case 2: pf ? micro_pair(2, kc, p0, p1, b, c, ldc, first, 1, pf) : micro_pair(2, kc, p0, p1, b, c, ldc, first, 0, 0); break;
    default: break;
    }
}

/* ------------------------------------------------------- few rows of b */


/* The 4 sums of v0..v3 (8 lanes each) as one vector, by three vhaddps and
 * one add of the halves; each sum's order is fixed whatever the others. */
static inline __m128 hsum4x(__m256 v0, __m256 v1, __m256 v2, __m256 v3)
{
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(v0, v1), _mm256_hadd_ps(v2, v3));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/*
 * The dot-product form for few rows of b, where packing a would cost more
 * than the product: c[j][i] for mr (1..4) rows of a and nr (1..3) rows of
 * b, lanes along k (7 loads per 12 FMAs), a k tail of k % 8 by masked
 * loads, horizontal sums at the end. Inlined with constant mr and nr;
 * named accumulators for the reason given at micro().
 */
/* n (< 8) F16 elements as floats, the lanes past them 0. */
static inline __m256 tail_f16(const wk_f16 *p, int64_t n)
{
    wk_f16 t[8] = {0};
    memcpy(t, p, (size_t)n * sizeof *t);
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)t));
}

/* The kinds of rows the dot tiles read: gemm_f32's F32 rows, and
 * gemm_rows' (struct wk_cpu_rows) F16 rows and Q8_0 codes with their
 * scales, each converted exactly as it is loaded. */
enum { ROW_F32, ROW_F16, ROW_Q8 };

/* 8 elements of a Q8_0 row from element l (codes at q, the row's scales
 * at s, shift esh: 0, a run; 5, one for each 32) as floats: code times
 * scale, exact; with n < 8, the lanes past n 0. */
static inline __attribute__((always_inline)) __m256 q8_row8(const int8_t *q, const wk_f16 *s, int esh, int64_t l,
                                                            int64_t n)
{
    __m128i c;
    __m256 sc;
    if (n >= 8) c = _mm_loadl_epi64((const __m128i *)q);
    else {
        int8_t t[8] = {0};
        memcpy(t, q, (size_t)n);
        c = _mm_loadl_epi64((const __m128i *)t);
    }
    if (esh) sc = _mm256_set1_ps(wk_f16_to_f32(s[l >> 5]));
    else sc = n >= 8 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + l))) : tail_f16(s + l, n);
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(c)), sc);
}

static inline __attribute__((always_inline)) void dot_tile_t(int h, bool blocked, int mr, int nr, int64_t k,
                                                              const void *a, int64_t lda, const wk_f16 *const *sr,
                                                              int esh, int bsh, int64_t bstride, const float *b,
                                                              int64_t ldb, float *c, int64_t ldc)
{
    /* element l of a row of a at (l >> bsh) * bstride + l % 2^bsh when
     * blocked (gemm_rows: a step's 8 elements lie in one block), else l */
    const int64_t bm = ((int64_t)1 << bsh) - 1;
    const __m256 z = _mm256_setzero_ps();
    __m256 c00 = z, c01 = z, c02 = z, c10 = z, c11 = z, c12 = z;
    __m256 c20 = z, c21 = z, c22 = z, c30 = z, c31 = z, c32 = z;
    /* rows of a: F32, F16 or Q8_0 codes (h; each element converted exactly
     * as loaded; Q8_0 row I's scales at sr[I]) */
    const size_t es = h == ROW_F16 ? sizeof(wk_f16) : h == ROW_Q8 ? 1 : sizeof(float);
    const char *a0 = a, *a1 = a0 + lda * es, *a2 = a0 + 2 * lda * es, *a3 = a0 + 3 * lda * es;
    const wk_f16 *s0 = sr ? sr[0] : NULL, *s1 = sr ? sr[1] : NULL, *s2 = sr ? sr[2] : NULL, *s3 = sr ? sr[3] : NULL;
    const float *b0 = b, *b1 = b + ldb, *b2 = b + 2 * ldb;
#define ROW(I, LOAD)                                                                               \
    if (mr > I) {                                                                                  \
        __m256 av = LOAD(a##I, s##I);                                                              \
        c##I##0 = _mm256_fmadd_ps(av, v0, c##I##0);                                                \
        if (nr > 1)                                                                                \
            c##I##1 = _mm256_fmadd_ps(av, v1, c##I##1);                                            \
        if (nr > 2)                                                                                \
            c##I##2 = _mm256_fmadd_ps(av, v2, c##I##2);                                            \
    }
    int64_t l = 0;
    for (; l + 8 <= k; l += 8) {
        const int64_t o = blocked ? (l >> bsh) * bstride + (l & bm) : l;
#define LD(p) _mm256_loadu_ps((p) + l)
#define LDA(p, sp)                                                                                   \
    (h == ROW_Q8    ? q8_row8((const int8_t *)(const void *)(p) + o, sp, esh, l, 8)                  \
     : h == ROW_F16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const wk_f16 *)(const void *)(p) + o))) \
                    : _mm256_loadu_ps((const float *)(const void *)(p) + o))
        __m256 v0 = LD(b0), v1 = nr > 1 ? LD(b1) : z, v2 = nr > 2 ? LD(b2) : z;
        ROW(0, LDA) ROW(1, LDA) ROW(2, LDA) ROW(3, LDA)
#undef LDA
#undef LD
    }
    if (l < k) {
        const int64_t o = blocked ? (l >> bsh) * bstride + (l & bm) : l;
        __m256i m = avx2_lanes(k - l);
        /* an F16 or Q8_0 tail through a zero-padded copy: its lanes past k
         * are 0, as the masked f32 load gives */
#define LD(p) _mm256_maskload_ps((p) + l, m)
#define LDA(p, sp)                                                                                 \
    (h == ROW_Q8    ? q8_row8((const int8_t *)(const void *)(p) + o, sp, esh, l, k - l)            \
     : h == ROW_F16 ? tail_f16((const wk_f16 *)(const void *)(p) + o, k - l)                       \
                    : _mm256_maskload_ps((const float *)(const void *)(p) + o, m))
        __m256 v0 = LD(b0), v1 = nr > 1 ? LD(b1) : z, v2 = nr > 2 ? LD(b2) : z;
        ROW(0, LDA) ROW(1, LDA) ROW(2, LDA) ROW(3, LDA)
#undef LDA
#undef LD
    }
#undef ROW
    __m128 s[3] = {hsum4x(c00, c10, c20, c30), hsum4x(c01, c11, c21, c31),
                   hsum4x(c02, c12, c22, c32)};
    for (int j = 0; j < nr; j++) {
        if (mr == 4) {
            _mm_storeu_ps(c + j * ldc, s[j]);
        } else {
            float t[4];
            _mm_storeu_ps(t, s[j]);
            for (int i = 0; i < mr; i++)
                c[j * ldc + i] = t[i];
        }
    }
}

static void dot_tile_any(int mr, int nr, int64_t k, const float *a, int64_t lda, const float *b,
                         int64_t ldb, float *c, int64_t ldc)
{
#define CASE(M, N)                                                                                 \
    case (M) * 4 + (N): dot_tile_t(ROW_F32, false, M, N, k, a, lda, NULL, 0, 0, 0, b, ldb, c, ldc); break
    switch (mr * 4 + nr) {
        CASE(4, 3); CASE(4, 2); CASE(4, 1); CASE(3, 3); CASE(3, 2); CASE(3, 1);
        CASE(2, 3); CASE(2, 2); CASE(2, 1); CASE(1, 3); CASE(1, 2); CASE(1, 1);
    default: break;
    }
#undef CASE
}

/* The whole product in the dot form: three rows of b at a time against
 * every row of a, so those rows stay in L1 while a streams from L2. */
static void gemm_dot(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                     int64_t ldb, float *c, int64_t ldc)
{
    for (int64_t j = 0; j < n; j += 3) {
        int nr = (int)WK_MIN(3, n - j);
        for (int64_t i = 0; i < m; i += 4)
            dot_tile_any((int)WK_MIN(4, m - i), nr, k, a + i * lda, lda, b + j * ldb, ldb,
                         c + j * ldc + i, ldc);
    }
}

/* dot_tile_any for gemm_rows' kinds: H a row kind, B blocked */
#define TILE_ANY(H, B)                                                                             \
    static void dot_tile_any_##H##_##B(int mr, int nr, int64_t k, const void *a, int64_t lda,      \
                                       const wk_f16 *const *sr, int esh, int bsh, int64_t bstride, \
                                       const float *b, int64_t ldb, float *c, int64_t ldc)        \
    {                                                                                              \
        switch (mr * 4 + nr) {                                                                     \
        CASE(H, B, 4, 3); CASE(H, B, 4, 2); CASE(H, B, 4, 1); CASE(H, B, 3, 3);                    \
        CASE(H, B, 3, 2); CASE(H, B, 3, 1); CASE(H, B, 2, 3); CASE(H, B, 2, 2);                    \
        CASE(H, B, 2, 1); CASE(H, B, 1, 3); CASE(H, B, 1, 2); CASE(H, B, 1, 1);                    \
        default: break;                                                                            \
        }                                                                                          \
    }
#define CASE(H, B, M, N)                                                                           \
    case (M) * 4 + (N): dot_tile_t(H, B, M, N, k, a, lda, sr, esh, bsh, bstride, b, ldb, c, ldc); break
TILE_ANY(0, 1)
TILE_ANY(1, 0)
TILE_ANY(1, 1)
TILE_ANY(2, 0)
TILE_ANY(2, 1)
#undef CASE
#undef TILE_ANY

/* gemm_dot over gemm_rows' rows (F16, Q8_0, or in blocks; n < GEMM_DOT_MAX_N), the same tiles in
 * the same order */
void wk__avx2_gemm_rows(int64_t m, int64_t n, int64_t k, const void *a, const struct wk_cpu_rows *r, const float *b,
                        int64_t ldb, float *c, int64_t ldc)
{
    if (r->type == WK_DTYPE_F32 && !r->blk) {
        wk__avx2_gemm_f32(m, n, k, a, r->lda, b, ldb, c, ldc);
        return;
    }
    typedef void (*tile_fn)(int, int, int64_t, const void *, int64_t, const wk_f16 *const *, int, int, int64_t,
                            const float *, int64_t, float *, int64_t);
    static const tile_fn tiles[3][2] = {{NULL, dot_tile_any_0_1},
                                        {dot_tile_any_1_0, dot_tile_any_1_1},
                                        {dot_tile_any_2_0, dot_tile_any_2_1}};
    const int h = r->type == WK_DTYPE_F16 ? ROW_F16 : r->type == WK_DTYPE_Q8_0 ? ROW_Q8 : ROW_F32;
    const tile_fn tile = tiles[h][r->blk != 0];
    const int bsh = r->blk ? __builtin_ctz((unsigned)r->blk) : 0;
    const size_t es = h == ROW_F16 ? sizeof(wk_f16) : h == ROW_Q8 ? 1 : sizeof(float);
    for (int64_t j = 0; j < n; j += 3) {
        int nr = (int)WK_MIN(3, n - j);
        for (int64_t i = 0; i < m; i += 4) {
            const wk_f16 *sr[4] = {NULL, NULL, NULL, NULL};
            if (h == ROW_Q8)
                for (int64_t t = 0; t < 4 && i + t < m; t++) sr[t] = r->s + ((i + t) >> r->s_rsh) * r->lds;
            tile((int)WK_MIN(4, m - i), nr, k, (const char *)a + (size_t)(i * r->lda) * es, r->lda, sr, r->s_esh, bsh,
                 r->bstride, b + j * ldb, ldb, c + j * ldc + i, ldc);
        }
    }
}

/* ------------------------------------------------------------------ driver */

void wk__avx2_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float *c, int64_t ldc)
{
    if (n < GEMM_DOT_MAX_N) {
        gemm_dot(m, n, k, a, lda, b, ldb, c, ldc);
        return;
    }
    wk__avx2_gemm_f32_packed(m, n, k, a, lda, b, ldb, c, ldc);
}

/* Whether panel p and the next go to micro_pair together for a group of
 * nr rows of b: one or two rows, and both panels full (16 rows). */
static inline bool pairs_with_next(int nr, int p, int n_panels, const int *prow)
{
    return nr <= 2 && p + 1 < n_panels && prow[p] == MR && prow[p + 1] == MR;
}

/* The product of one packed block (its n_panels panels at pp, their
 * widths and real rows) with all n rows of b over columns [pc, pc + kc),
 * into c's columns from the block's first row: the packed path's inner
 * loops, shared by the packing and the prepacked entries. stream: the
 * panels are prepacked weights read from memory (else packed just now,
 * in cache); bpack holds FEW_GROUPS * NR * KC floats if stream, else
 * NR * KC. */
static void block_product(int n_panels, float *const *pp, const int *width, const int *prow, int64_t n, int64_t kc,
                          int64_t pc, const float *b, int64_t ldb, float *c, int64_t ldc, float *bpack, bool stream)
{
    const int first = pc == 0;
    /* the rows of b in ceil(n / NR) groups of like size (8 as 4 + 4, not
     * 6 + 2: a group of one or two rows is latency-bound; 65 -> 73
     * GFLOP/s, n = 9 59 -> 78), and groups of one or two rows (n <= 2)
     * over two panels at a time */
    if (n <= 0) return;
    const int64_t n_groups = (n + NR - 1) / NR, base = n / n_groups, extra = n % n_groups;
#define GROUP_ROWS(g) ((int)(base + ((g) < extra))) /* rows of b in group g */
    if (stream && n_groups <= FEW_GROUPS) {
        /* Few rows of b (a sentence or a short prompt): the weights come
         * from memory and each panel serves only a few groups. Group by
         * group over the block, the first group's pass fetched every
         * panel while the later ones had nothing to fetch. Instead panel
         * by panel, every group in turn, each group's pass prefetching its
         * 1 / n_groups share of the next panel (after the block's last,
         * the next block's first: prepacked blocks are contiguous), so
         * the memory streams evenly under the FMAs. Weights in DRAM, one
         * Zen 3 core: n = 8 41 -> 59 GFLOP/s, n = 15 53 -> 75, n = 48 63
         * -> 79 (with the weights in cache 2-8% slower: the packed path,
         * whose panels were just packed, keeps the order below). Each
         * element's chain is unchanged, so are the bits. */
        int nrs[FEW_GROUPS];
        for (int64_t g = 0, jr = 0; g < n_groups; jr += nrs[g++]) {
            nrs[g] = GROUP_ROWS(g);
            pack_b(b + jr * ldb + pc, ldb, nrs[g], kc, NULL, 0, bpack + g * NR * KC);
        }
        for (int p = 0; p < n_panels; p++) {
            const bool pair = pairs_with_next(nrs[0], p, n_panels, prow); /* nrs[0] <= 2: one group */
            const int64_t bytes = (int64_t)width[p] * 32 * kc; /* one panel */
            const uintptr_t next = (uintptr_t)pp[p] + (uintptr_t)((pair ? 2 : 1) * bytes);
            const int step = (int)(width[p] * 32 / n_groups);
            for (int64_t g = 0, jr = 0; g < n_groups; jr += nrs[g++]) {
                float *cp = c + jr * ldc + (int64_t)p * MR;
                if (pair)
                    micro_pair_any(nrs[g], kc, pp[p], pp[p + 1], bpack + g * NR * KC, cp, ldc, first, next);
                else
                    micro_any_pf(width[p], nrs[g], kc, pp[p], bpack + g * NR * KC, cp, ldc, prow[p], first,
                                 next + (uintptr_t)(g * (bytes / n_groups)), step);
            }
            p += pair;
        }
        return;
    }
    for (int64_t g = 0, jr = 0; g < n_groups; g++) {
        int nr = GROUP_ROWS(g), nr_next = g + 1 < n_groups ? GROUP_ROWS(g + 1) : 0;
        const float *bj = b + jr * ldb + pc;
        pack_b(bj, ldb, nr, kc, bj + nr * ldb, nr_next, bpack);
        for (int p = 0; p < n_panels; p++) {
            float *cp = c + jr * ldc + (int64_t)p * MR;
            if (pairs_with_next(nr, p, n_panels, prow)) {
                micro_pair_any(nr, kc, pp[p], pp[p + 1], bpack, cp, ldc, first, 0);
                p++;
            } else {
                micro_any(width[p], nr, kc, pp[p], bpack, cp, ldc, prow[p], first);
            }
        }
        jr += nr;
    }
#undef GROUP_ROWS
}

/* The panels of a block of mc (<= MC) rows and kc columns laid out from
 * dst: 16 rows each, a last one of at most 8 rows 8 wide; their pointers,
 * widths (in vectors) and real rows into pp, width, prow. Returns the
 * panel count. */
static int block_panels(int64_t mc, int64_t kc, float *dst, float **pp, int *width, int *prow)
{
    int n_panels = 0;
    for (int64_t r = 0; r < mc; r += MR) {
        int rows = (int)WK_MIN(MR, mc - r), w = rows > 8 ? 16 : 8;
        width[n_panels] = w / 8, prow[n_panels] = rows, pp[n_panels++] = dst;
        dst += w * kc;
    }
    return n_panels;
}

/* Packs rows [0, mc) and columns [pc, pc + kc) of a into dst as
 * block_panels lays them out. Returns the panel count. */
static int pack_block(const float *a, int64_t lda, int64_t mc, int64_t pc, int64_t kc, float *dst, float **pp,
                      int *width, int *prow)
{
    const int n_panels = block_panels(mc, kc, dst, pp, width, prow);
    for (int p = 0; p < n_panels; p++) pack_panel(a + (int64_t)p * MR * lda + pc, lda, prow[p], 8 * width[p], kc, pp[p]);
    return n_panels;
}

void wk__avx2_gemm_f32_packed(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                              int64_t ldb, float *c, int64_t ldc)
{
    /* 32 KB + 3 KB, aligned for the panel loads (unaligned would do too) */
    _Alignas(64) float pack[MC * KC];
    _Alignas(64) float bpack[NR * KC];
    for (int64_t pc = 0; pc < k; pc += KC) {
        int64_t kc = WK_MIN(KC, k - pc);
        for (int64_t ic = 0; ic < m; ic += MC) {
            int64_t mc = WK_MIN(MC, m - ic);
            int width[MC / 8], prow[MC / 8];
            float *pp[MC / 8];
            int n_panels = pack_block(a + ic * lda, lda, mc, pc, kc, pack, pp, width, prow);
            block_product(n_panels, pp, width, prow, n, kc, pc, b, ldb, c + ic, ldc, bpack, false);
        }
    }
}

/*
 * Weights packed once (gemm_f32_pack): blocks of MC rows, each MC * k
 * floats (the last block's too), holding for each KC-column piece in
 * order (at MC * pc within the block) the panels pack_block makes of it.
 * So a row block's packing starts at (row / MC) * MC * k, and the
 * prepacked product reads exactly the panels the packed path would have
 * made: the same bits, without re-packing the weights on every call
 * (for a one-sentence embedding that re-packing was most of the time).
 */
size_t wk__avx2_gemm_f32_pack_floats(int64_t m, int64_t k)
{
    return (size_t)((m + MC - 1) / MC) * MC * (size_t)k;
}

void wk__avx2_gemm_f32_pack(int64_t m, int64_t k, const float *a, int64_t lda, float *dst)
{
    int width[MC / 8], prow[MC / 8];
    float *pp[MC / 8];
    for (int64_t ic = 0; ic < m; ic += MC)
        for (int64_t pc = 0; pc < k; pc += KC)
            pack_block(a + ic * lda, lda, WK_MIN(MC, m - ic), pc, WK_MIN(KC, k - pc), dst + ic * k + MC * pc, pp,
                       width, prow);
}

void wk__avx2_gemm_f32_prepacked(int64_t m, int64_t n, int64_t k, const float *pa, const float *b, int64_t ldb,
                                 float *c, int64_t ldc)
{
    _Alignas(64) float bpack[FEW_GROUPS * NR * KC];
    /* row blocks outer: a block's pieces are one contiguous run of the
     * packed weights, read in order (with few rows of b the product is
     * bound by reading them). With more rows of b, SPAN blocks at a time:
     * each piece of six rows of b copied (pack_b, from L3 when b is large)
     * serves 32 panels (256 KB, in L2) instead of 4: n = 2444, one Zen 3
     * core, k = 1536 68 -> 84 GFLOP/s, k = 384 74-78 -> 81-86. Each
     * element still gets its KC pieces in order, so the bits are the
     * packed path's. */
    const int64_t span = (n + NR - 1) / NR > FEW_GROUPS ? SPAN : 1;
    for (int64_t ic = 0; ic < m; ic += MC * span) {
        for (int64_t pc = 0; pc < k; pc += KC) {
            int64_t kc = WK_MIN(KC, k - pc);
            int width[SPAN * MC / 8], prow[SPAN * MC / 8], n_panels = 0;
            float *pp[SPAN * MC / 8];
            for (int64_t r = ic; r < WK_MIN(m, ic + MC * span); r += MC)
                n_panels += block_panels(WK_MIN(MC, m - r), kc, (float *)pa + r * k + MC * pc, pp + n_panels,
                                         width + n_panels, prow + n_panels);
            block_product(n_panels, pp, width, prow, n, kc, pc, b, ldb, c + ic, ldc, bpack, true);
        }
    }
}
