/*
 * gemm_avx2.c - the f32 GEMM of the table (gemm_f32) with AVX2 + FMA:
 * c[j * ldc + i] = sum_l a[i * lda + l] * b[j * ldb + l], both operands
 * row-major along k ("A · Bᵀ"). Prefill calls it with a tile of up to 64
 * dequantized weight rows as a and every prompt token as b.
 *
 * With k contiguous in both operands, a dot-product kernel would keep its
 * lanes along k and pay horizontal sums for every output. Instead a is
 * packed, a block of MC rows × KC columns at a time, into panels of 16
 * rows stored column by column (panel[l * 16 + r] = a[r][l]); the
 * micro-kernel then computes a 16 × 6 tile of c as outer products: per l,
 * two loads of a (rows 0-7, 8-15), six broadcasts b[j][l] straight from the
 * unpacked rows of b, twelve FMAs into twelve accumulators. That is FMA-bound
 * (2 pipes) with 8 loads per 12 FMAs, needs no horizontal sums, and each
 * accumulator is 8 consecutive elements of one row of c, stored directly.
 *
 * Blocking (Zen 4: 32 KB L1d, 1 MB L2): a block is MC × KC floats = 64 KB
 * on the stack and stays in L2 while the loop walks b six rows at a time;
 * those six rows' KC-long pieces (6 KB) stay in L1 while the 16-row panels
 * of the block pass. b is read once per a block; c is loaded and added to
 * once per KC block of k.
 *
 * Rounding: element (i, j) is, for each KC block of k in order, a chain of
 * FMAs over l starting from 0, and c is the running sum of those block
 * sums. That sequence depends only on k, never on where (i, j) falls in a
 * tile, on m or on n, so the result does not depend on how a caller splits
 * the rows (the threaded matmul relies on it). Error: about (KC + k / KC)
 * roundings of the running sum, well inside the 1e-5 bound for k <= 16384.
 */
#include "kernels_avx2.h"

#define MR 16  /* rows of a per packed panel (two ymm) */
#define NR 6   /* rows of b per micro-kernel call */
#define KC 256 /* columns of k per block */
#define MC 64  /* rows of a per packed block (a multiple of MR) */

/* ------------------------------------------------------------------ packing */

/* Transposes the 8×8 block r[0..7] (rows) in place into columns. */
static inline void transpose8(__m256 r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/*
 * Packs rows [0, rows) (rows <= w) and columns [0, kc) of a into dst, w
 * floats per column: dst[l * w + r] = a[r * lda + l], rows past `rows` zero.
 * w is 8 or 16. Full 8×8 blocks go through registers; the last kc % 8
 * columns one float at a time.
 */
static void pack_panel(const float *a, int64_t lda, int64_t rows, int w, int64_t kc, float *dst)
{
    for (int g = 0; g < w; g += 8) {
        int64_t l = 0;
        for (; l + 8 <= kc; l += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++)
                r[i] = g + i < rows ? _mm256_loadu_ps(a + (g + i) * lda + l) : _mm256_setzero_ps();
            transpose8(r);
            for (int i = 0; i < 8; i++)
                _mm256_storeu_ps(dst + (l + i) * w + g, r[i]);
        }
        for (; l < kc; l++)
            for (int i = 0; i < 8; i++)
                dst[l * w + g + i] = g + i < rows ? a[(g + i) * lda + l] : 0.0f;
    }
}

/*
 * Copies the kc-long pieces of the nr rows of b at b into dst, KC floats
 * apart, so that the six rows a micro-kernel broadcasts from are contiguous
 * (rows of b 4 KB apart otherwise share L1 sets with each other and with
 * the panel, and get evicted between panels). Prefetches the same pieces
 * of the next nr rows (next, or NULL), which come from memory when b is
 * larger than L2: each piece is short, too short for the hardware
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
 * b packed at b (KC floats apart), over kc columns. nv is the panel's width in vectors (2: 16 rows,
 * 1: 8 rows); rows (<= 8 * nv) is how many of them are real. Inlined with
 * constant nv and nr; the accumulators are named variables, not an array,
 * because GCC keeps an indexed array on the stack (the loop then runs at a
 * third of the speed), and the unused ones fold away.
 */
static inline __attribute__((always_inline)) void micro(int nv, int nr, int64_t kc,
                                                         const float *panel, const float *b,
                                                         float *c, int64_t ldc, int rows,
                                                         int first)
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

/* One panel against nr rows of b: dispatch to a constant-shaped kernel. */
static void micro_any(int nv, int nr, int64_t kc, const float *panel, const float *b, float *c,
                      int64_t ldc, int rows, int first)
{
#define CASE(NV, N)                                                                                \
    case (NV) * 8 + (N): micro(NV, N, kc, panel, b, c, ldc, rows, first); break
    switch (nv * 8 + nr) {
        CASE(2, 6); CASE(2, 5); CASE(2, 4); CASE(2, 3); CASE(2, 2); CASE(2, 1);
        CASE(1, 6); CASE(1, 5); CASE(1, 4); CASE(1, 3); CASE(1, 2); CASE(1, 1);
    default: break;
    }
#undef CASE
}

/* ------------------------------------------------------------------ driver */

void wk__avx2_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float *c, int64_t ldc)
{
    /* 64 KB + 6 KB, aligned for the panel loads (unaligned would do too) */
    _Alignas(64) float pack[MC * KC];
    _Alignas(64) float bpack[NR * KC];
    for (int64_t pc = 0; pc < k; pc += KC) {
        int64_t kc = WK_MIN(KC, k - pc);
        int first = pc == 0;
        for (int64_t ic = 0; ic < m; ic += MC) {
            int64_t mc = WK_MIN(MC, m - ic);
            /* panels of 16 rows; a last one of at most 8 rows is 8 wide */
            int n_panels = 0, width[MC / 8], prow[MC / 8];
            float *pp[MC / 8];
            float *dst = pack;
            for (int64_t r = 0; r < mc; r += MR) {
                int rows = (int)WK_MIN(MR, mc - r), w = rows > 8 ? 16 : 8;
                pack_panel(a + (ic + r) * lda + pc, lda, rows, w, kc, dst);
                width[n_panels] = w / 8, prow[n_panels] = rows, pp[n_panels] = dst;
                n_panels++;
                dst += w * kc;
            }
            for (int64_t jr = 0; jr < n; jr += NR) {
                int nr = (int)WK_MIN(NR, n - jr);
                const float *bj = b + jr * ldb + pc;
                int n_next = (int)WK_MAX(0, WK_MIN(NR, n - jr - NR));
                pack_b(bj, ldb, nr, kc, bj + NR * ldb, n_next, bpack);
                for (int p = 0; p < n_panels; p++) {
                    float *cp = c + jr * ldc + ic + (int64_t)p * MR;
                    micro_any(width[p], nr, kc, pp[p], bpack, cp, ldc, prow[p], first);
                }
            }
        }
    }
}
