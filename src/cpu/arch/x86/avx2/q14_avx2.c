/*
 * q14_avx2.c - the Q14 kernels (wk_cpu.h) with AVX2: q14_quantize and
 * gemm_q14, with the bits of the plain-C references in q14.c.
 *
 * AVX2 has no vpdpwssd: each pair of columns takes a vpmaddwd (two 16-bit
 * products summed into each 32-bit lane, 16 multiply-adds a ymm) and a
 * vpaddd into the block's int32 accumulator. On a Zen 3 core, whose four
 * vector pipes take two vpmaddwd and two vpaddd a cycle, that is 32
 * multiply-adds a cycle against the two ymm FMAs' 16; on an Intel core
 * (three vector ports) about 24. With 16 registers the micro-kernel's tile
 * is half a panel (16 weight rows, two ymm a pair of columns) by up to
 * NRQ rows of x: 2 NRQ int32 accumulators in registers, the f32 ones (one
 * FMA a block of 32 columns, in block order, as the reference) in a
 * small array in L1. Measured only on a Zen 4 with WICK_CPU=avx2 (1.3-1.6x
 * the AVX2 f32 GEMM there).
 */
#include "kernels_avx2.h"

#include "../prefetch_part.h"

#include <float.h>
#include <stdbool.h>

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")

/* rows of x in a micro-tile: 2 NRQ accumulators, two weight vectors, a
 * broadcast and the products within the 16 ymm registers (Zen 4 in ymm,
 * one core, operands in L2: 4 rows 76-85 G multiply-adds/s, 5 rows
 * 53-84, 6 rows 66-77; the f32 GEMM 51) */
#define NRQ 4
/* groups of rows of x up to which each pass prefetches the next panel */
#define FEW_GROUPS_Q 4

/* ------------------------------------------------------------ quantize */

static void q14_quantize(int64_t n_rows, int64_t k, const float *x, int64_t ldx, int16_t *xq, int64_t ldq, float *sx,
                         int64_t lds)
{
    const __m256 big = _mm256_set1_ps(FLT_MAX), sign = _mm256_set1_ps(-0.0f);
    for (int64_t j = 0; j < n_rows; j++)
        for (int64_t b = 0; b < k / WK_Q14_BLOCK; b++) {
            const float *v = x + j * ldx + b * WK_Q14_BLOCK;
            int16_t *q = xq + j * ldq + b * WK_Q14_BLOCK;
            __m256 r[4], a[4];
            int bad = 0;
            UNROLL
            for (int u = 0; u < 4; u++) {
                r[u] = _mm256_loadu_ps(v + 8 * u);
                a[u] = _mm256_andnot_ps(sign, r[u]);
                /* NaN or infinite (unordered, or above FLT_MAX) */
                bad |= _mm256_movemask_ps(_mm256_cmp_ps(a[u], big, _CMP_NLE_UQ));
            }
            const float mx = bad ? 0 : avx2_hmax_ps(_mm256_max_ps(_mm256_max_ps(a[0], a[1]), _mm256_max_ps(a[2], a[3])));
            const float f = (float)WK_Q14_MAX / mx; /* (inf for 0, or below ~2.4e-35: zeros, as the reference) */
            if (bad || !(f <= FLT_MAX)) {
                _mm256_storeu_si256((__m256i *)q, _mm256_setzero_si256());
                _mm256_storeu_si256((__m256i *)(q + 16), _mm256_setzero_si256());
                sx[j * lds + b] = bad ? __builtin_nanf("") : 0.0f;
                continue;
            }
            const __m256 inv = _mm256_set1_ps(f);
            /* cvtps2dq rounds to nearest even, as lrintf; vpackssdw packs
             * within 128-bit lanes, which vpermq puts back in order */
            __m256i i[4];
            UNROLL
            for (int u = 0; u < 4; u++) i[u] = _mm256_cvtps_epi32(_mm256_mul_ps(r[u], inv));
            _mm256_storeu_si256((__m256i *)q, _mm256_permute4x64_epi64(_mm256_packs_epi32(i[0], i[1]), 0xD8));
            _mm256_storeu_si256((__m256i *)(q + 16), _mm256_permute4x64_epi64(_mm256_packs_epi32(i[2], i[3]), 0xD8));
            sx[j * lds + b] = mx / (float)WK_Q14_MAX;
        }
}

/* ---------------------------------------------------------- micro-kernel */

/*
 * c[j][0..16) = the Q14 product of half a panel (hp: the panel plus 32
 * int16 for its second half; nb blocks of 32 columns) with rows j < nr of
 * x, times sw[0..16); rows masks the rows that exist (r0, r1 the two
 * vectors' lanes). pf_on: prefetch pf_lines lines from pf into L2, spread
 * over the blocks.
 */
static ALWAYS_INLINE void q14_micro(const int nr, int64_t nb, const int16_t *hp, const int16_t *xq, int64_t ldq,
                                    const float *sx, int64_t lds, const float *sw, float *c, int64_t ldc, __m256i r0,
                                    __m256i r1, const bool pf_on, uintptr_t pf, int pf_lines)
{
    _Alignas(32) float f[NRQ][16];
    UNROLL
    for (int j = 0; j < nr; j++) {
        _mm256_store_ps(f[j], _mm256_setzero_ps());
        _mm256_store_ps(f[j] + 8, _mm256_setzero_ps());
    }
    /* a pointer a row of x, advanced a block at a time, so that every
     * broadcast is [register + constant] (from xq + j ldq GCC computed
     * every row's and pair's address ahead and kept them on the stack) */
    const int16_t *xr[NRQ];
    UNROLL
    for (int j = 0; j < nr; j++) xr[j] = xq + j * ldq;
    for (int64_t b = 0; b < nb; b++) {
        const int16_t *wb = hp + b * 32 * WK_Q14_BLOCK;
        if (pf_on) wk_prefetch_part(pf, (size_t)pf_lines, b, nb, true);
        __m256i s0[NRQ], s1[NRQ];
        UNROLL
        for (int j = 0; j < nr; j++) s0[j] = s1[j] = _mm256_setzero_si256();
        UNROLL
        for (int h = 0; h < WK_Q14_BLOCK / 2; h++) {
            const __m256i w0 = _mm256_load_si256((const __m256i *)(wb + 64 * h));
            const __m256i w1 = _mm256_load_si256((const __m256i *)(wb + 64 * h + 16));
            UNROLL
            for (int j = 0; j < nr; j++) {
                int32_t v;
                memcpy(&v, xr[j] + 2 * h, 4);
                const __m256i xv = _mm256_set1_epi32(v);
                s0[j] = _mm256_add_epi32(s0[j], _mm256_madd_epi16(w0, xv));
                s1[j] = _mm256_add_epi32(s1[j], _mm256_madd_epi16(w1, xv));
                /* keep each accumulator a chain in its register: GCC
                 * otherwise reassociates the unrolled integer sums into a
                 * tree of all 16 pairs' products, spilled to the stack */
                __asm__("" : "+x"(s0[j]), "+x"(s1[j]));
            }
        }
        UNROLL
        for (int j = 0; j < nr; j++) {
            xr[j] += WK_Q14_BLOCK;
            const __m256 sc = _mm256_set1_ps(sx[j * lds + b]);
            _mm256_store_ps(f[j], _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0[j]), sc, _mm256_load_ps(f[j])));
            _mm256_store_ps(f[j] + 8, _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1[j]), sc, _mm256_load_ps(f[j] + 8)));
        }
    }
    const __m256 w0 = _mm256_loadu_ps(sw), w1 = _mm256_loadu_ps(sw + 8);
    UNROLL
    for (int j = 0; j < nr; j++) {
        _mm256_maskstore_ps(c + j * ldc, r0, _mm256_mul_ps(_mm256_load_ps(f[j]), w0));
        _mm256_maskstore_ps(c + j * ldc + 8, r1, _mm256_mul_ps(_mm256_load_ps(f[j] + 8), w1));
    }
}

typedef void (*q14_micro_fn)(int64_t nb, const int16_t *hp, const int16_t *xq, int64_t ldq, const float *sx,
                             int64_t lds, const float *sw, float *c, int64_t ldc, __m256i r0, __m256i r1, uintptr_t pf,
                             int pf_lines);
#define Q14_FN(nr)                                                                                                     \
    static void q14_micro_##nr(int64_t nb, const int16_t *hp, const int16_t *xq, int64_t ldq, const float *sx,        \
                               int64_t lds, const float *sw, float *c, int64_t ldc, __m256i r0, __m256i r1,            \
                               uintptr_t pf, int pf_lines)                                                             \
    {                                                                                                                  \
        (void)pf, (void)pf_lines;                                                                                      \
        q14_micro(nr, nb, hp, xq, ldq, sx, lds, sw, c, ldc, r0, r1, false, 0, 0);                                      \
    }                                                                                                                  \
    static void q14_micro_pf_##nr(int64_t nb, const int16_t *hp, const int16_t *xq, int64_t ldq, const float *sx,     \
                                  int64_t lds, const float *sw, float *c, int64_t ldc, __m256i r0, __m256i r1,         \
                                  uintptr_t pf, int pf_lines)                                                          \
    {                                                                                                                  \
        q14_micro(nr, nb, hp, xq, ldq, sx, lds, sw, c, ldc, r0, r1, true, pf, pf_lines);                               \
    }
Q14_FN(1) Q14_FN(2) Q14_FN(3) Q14_FN(4)
static const q14_micro_fn g_q14[2][NRQ] = {
    {q14_micro_1, q14_micro_2, q14_micro_3, q14_micro_4},
    {q14_micro_pf_1, q14_micro_pf_2, q14_micro_pf_3, q14_micro_pf_4},
};

/*
 * Half panel by half panel (16 weight rows), each with every group of rows
 * of x (like sizes, at most NRQ rows), as the AVX-512 kernel does with
 * whole panels; a panel's second half prefetches the next panel (the two
 * halves share its lines: a pair of columns is one line of each half). An
 * element's arithmetic depends on k only.
 */
static void gemm_q14(int64_t m, int64_t n, int64_t k, const int16_t *pw, const float *sw, const int16_t *xq,
                     int64_t ldq, const float *sx, int64_t lds, float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0) return;
    const int64_t nb = k / WK_Q14_BLOCK;
    const int64_t n_groups = (n + NRQ - 1) / NRQ, base = n / n_groups, extra = n % n_groups;
    const bool few = n_groups <= FEW_GROUPS_Q;
    for (int64_t p0 = 0; p0 < m; p0 += WK_Q14_PANEL) {
        const int16_t *pan = pw + p0 * k;
        const uintptr_t next = (uintptr_t)(pw + (p0 + WK_Q14_PANEL) * k);
        for (int half = 0; half < 2 && p0 + 16 * half < m; half++) {
            const int64_t rows = WK_MIN(16, m - p0 - 16 * half);
            const __m256i r0 = avx2_lanes(WK_MIN(8, rows)), r1 = avx2_lanes(WK_MAX(0, rows - 8));
            const bool pf = few && half == 1;
            for (int64_t g = 0, j0 = 0; g < n_groups; g++) {
                const int64_t nr = base + (g < extra);
                /* group g's share of the next panel's k lines (32 rows x k int16) */
                const int64_t l0 = k * g / n_groups, l1 = k * (g + 1) / n_groups;
                g_q14[pf][nr - 1](nb, pan + 32 * half, xq + j0 * ldq, ldq, sx + j0 * lds, lds, sw + p0 + 16 * half,
                                  c + j0 * ldc + p0 + 16 * half, ldc, r0, r1, next + (uintptr_t)(64 * l0),
                                  (int)(l1 - l0));
                j0 += nr;
            }
        }
    }
}

void wk__avx2_fill_q14(struct wk_cpu_kernels *k)
{
    k->q14_quantize = q14_quantize;
    k->gemm_q14 = gemm_q14;
}
