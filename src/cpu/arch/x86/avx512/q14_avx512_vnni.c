/*
 * q14_avx512_vnni.c - the Q14 kernels (wk_cpu.h) with AVX-512 VNNI:
 * q14_quantize (x to 14-bit integers per block of 32) and gemm_q14 (the
 * product over weights packed by wk_q14_pack), with the bits of the
 * plain-C references in q14.c.
 *
 * gemm_q14's micro-kernel holds a tile of 32 weight rows (one panel, two
 * vectors of 16 rows, lanes along the rows as in gemm_avx512.c, so c's
 * rows are stored without a reduction) by up to NRQ rows of x. Per pair
 * of columns it loads the panel's two vectors and runs one vpdpwssd per
 * (vector, row of x) with the row's two int16 as a broadcast memory
 * operand ({1to16}): 32 multiply-adds an instruction, twice an f32 FMA's.
 * Each block of 32 columns sums exactly in int32 accumulators (|sum| <=
 * 32 * 8191^2 < 2^31), which are then converted and added into f32 ones
 * with the block's x scale (one FMA, the block order fixed): 18
 * instructions per 32 columns, vector and row of x, against 32 FMAs in
 * f32. The weight row scales multiply at the end.
 *
 * Few rows of x (a sentence): the weights come from memory or L3, and each
 * group of rows' pass over a panel prefetches its share of the next
 * panel into L2, as the f32 path does (gemm_avx512.c, micro_pf).
 */
#include "avx512.h"

#include "../prefetch_part.h"

#include <float.h>
#include <stdbool.h>

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")

/* rows of x in a micro-tile: 2 x NRQ int32 and 2 x NRQ f32 accumulators
 * with the two weight vectors fit the 32 registers */
#define NRQ 6
/* groups of rows of x up to which each pass prefetches the next panel */
#define FEW_GROUPS_Q 4

/* ------------------------------------------------------------ quantize */

static void q14_quantize(int64_t n_rows, int64_t k, const float *x, int64_t ldx, int16_t *xq, int64_t ldq, float *sx,
                         int64_t lds)
{
    const __m512 big = _mm512_set1_ps(FLT_MAX);
    for (int64_t j = 0; j < n_rows; j++)
        for (int64_t b = 0; b < k / WK_Q14_BLOCK; b++) {
            const float *v = x + j * ldx + b * WK_Q14_BLOCK;
            int16_t *q = xq + j * ldq + b * WK_Q14_BLOCK;
            const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
            const __m512 a0 = _mm512_abs_ps(v0), a1 = _mm512_abs_ps(v1);
            /* NaN or infinite (unordered, or above FLT_MAX) */
            const __mmask16 bad = _mm512_cmp_ps_mask(a0, big, _CMP_NLE_UQ) | _mm512_cmp_ps_mask(a1, big, _CMP_NLE_UQ);
            const float mx = bad ? 0 : _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
            const float f = (float)WK_Q14_MAX / mx; /* (inf for 0, or below ~2.4e-35: zeros, as the reference) */
            if (bad || !(f <= FLT_MAX)) {
                _mm512_storeu_si512(q, _mm512_setzero_si512());
                sx[j * lds + b] = bad ? __builtin_nanf("") : 0.0f;
                continue;
            }
            const __m512 inv = _mm512_set1_ps(f);
            /* cvtps2dq rounds to nearest even, as lrintf; |x * inv| <=
             * 8191 (times 1 + 2^-23), so vpmovdw's truncation keeps every value */
            const __m256i q0 = _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(v0, inv)));
            const __m256i q1 = _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(v1, inv)));
            _mm256_storeu_si256((__m256i *)q, q0);
            _mm256_storeu_si256((__m256i *)(q + 16), q1);
            sx[j * lds + b] = mx / (float)WK_Q14_MAX;
        }
}

/* ---------------------------------------------------------- micro-kernel */

/* acc + in each 32-bit lane the dot of w's two int16 with the two int16 at
 * x2, broadcast: vpdpwssd with x2 as its {1to16} memory operand (GCC 12
 * emits a vpbroadcastd and the register form from the intrinsics). */
static ALWAYS_INLINE __m512i dpw(__m512i acc, __m512i w, const int16_t *x2)
{
#if defined(__GNUC__) && !defined(WK_NO_INLINE_ASM)
    __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)x2));
    return acc;
#else
    int32_t v;
    memcpy(&v, x2, 4);
    return _mm512_dpwssd_epi32(acc, w, _mm512_set1_epi32(v));
#endif
}

/*
 * c[j][0..32) = the Q14 product of the panel pan (nb blocks of 32 columns)
 * with rows j < nr of x (xq, ldq; sx, lds), times sw[0..32); m0, m1 mask
 * the rows of each vector that exist. pf_on: prefetch pf_lines lines from
 * pf into L2, spread over the blocks (this pass's share of the next panel).
 */
static ALWAYS_INLINE void q14_micro(const int nr, int64_t nb, const int16_t *pan, const int16_t *xq, int64_t ldq,
                                    const float *sx, int64_t lds, const float *sw, float *c, int64_t ldc, __mmask16 m0,
                                    __mmask16 m1, const bool pf_on, uintptr_t pf, int pf_lines)
{
    __m512 f0[NRQ], f1[NRQ];
    UNROLL
    for (int j = 0; j < nr; j++) f0[j] = f1[j] = _mm512_setzero_ps();
    /* rows of x from two base pointers advanced a block at a time, each
     * addressing three rows as base + {0, 1, 2} * ldq + a constant (fewer
     * registers than a pointer a row) */
    const int16_t *xa = xq, *xb = nr > 3 ? xq + 3 * ldq : xq;
    for (int64_t b = 0; b < nb; b++, xa += WK_Q14_BLOCK, xb += WK_Q14_BLOCK) {
        const int16_t *wb = pan + b * 32 * WK_Q14_BLOCK;
        if (pf_on) wk_prefetch_part(pf, (size_t)pf_lines, b, nb, true);
        __m512i s0[NRQ], s1[NRQ];
        UNROLL
        for (int j = 0; j < nr; j++) s0[j] = s1[j] = _mm512_setzero_si512();
        UNROLL
        for (int h = 0; h < WK_Q14_BLOCK / 2; h++) {
            const __m512i w0 = _mm512_load_si512(wb + 64 * h), w1 = _mm512_load_si512(wb + 64 * h + 32);
            UNROLL
            for (int j = 0; j < nr; j++) {
                const int16_t *x2 = (j < 3 ? xa : xb) + (j % 3) * ldq + 2 * h;
                s0[j] = dpw(s0[j], w0, x2);
                s1[j] = dpw(s1[j], w1, x2);
            }
        }
        UNROLL
        for (int j = 0; j < nr; j++) {
            const __m512 sc = _mm512_set1_ps(sx[j * lds + b]);
            f0[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0[j]), sc, f0[j]);
            f1[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1[j]), sc, f1[j]);
        }
    }
    const __m512 w0 = _mm512_loadu_ps(sw), w1 = _mm512_loadu_ps(sw + 16);
    UNROLL
    for (int j = 0; j < nr; j++) {
        _mm512_mask_storeu_ps(c + j * ldc, m0, _mm512_mul_ps(f0[j], w0));
        _mm512_mask_storeu_ps(c + j * ldc + 16, m1, _mm512_mul_ps(f1[j], w1));
    }
}

typedef void (*q14_micro_fn)(int64_t nb, const int16_t *pan, const int16_t *xq, int64_t ldq, const float *sx,
                             int64_t lds, const float *sw, float *c, int64_t ldc, __mmask16 m0, __mmask16 m1,
                             uintptr_t pf, int pf_lines);
#define Q14_FN(nr)                                                                                                     \
    static void q14_micro_##nr(int64_t nb, const int16_t *pan, const int16_t *xq, int64_t ldq, const float *sx,       \
                               int64_t lds, const float *sw, float *c, int64_t ldc, __mmask16 m0, __mmask16 m1,        \
                               uintptr_t pf, int pf_lines)                                                             \
    {                                                                                                                  \
        (void)pf, (void)pf_lines;                                                                                      \
        q14_micro(nr, nb, pan, xq, ldq, sx, lds, sw, c, ldc, m0, m1, false, 0, 0);                                     \
    }                                                                                                                  \
    static void q14_micro_pf_##nr(int64_t nb, const int16_t *pan, const int16_t *xq, int64_t ldq, const float *sx,    \
                                  int64_t lds, const float *sw, float *c, int64_t ldc, __mmask16 m0, __mmask16 m1,     \
                                  uintptr_t pf, int pf_lines)                                                          \
    {                                                                                                                  \
        q14_micro(nr, nb, pan, xq, ldq, sx, lds, sw, c, ldc, m0, m1, true, pf, pf_lines);                              \
    }
Q14_FN(1) Q14_FN(2) Q14_FN(3) Q14_FN(4) Q14_FN(5) Q14_FN(6)
static const q14_micro_fn g_q14[2][NRQ] = {
    {q14_micro_1, q14_micro_2, q14_micro_3, q14_micro_4, q14_micro_5, q14_micro_6},
    {q14_micro_pf_1, q14_micro_pf_2, q14_micro_pf_3, q14_micro_pf_4, q14_micro_pf_5, q14_micro_pf_6},
};

/*
 * Panel by panel (32 weight rows), each with every group of rows of x
 * (groups of like size, at most NRQ rows: 13 as 5 + 4 + 4), so the panel
 * is read from memory once and from L1 or L2 for the other groups. An
 * element's arithmetic depends on k only, never on n, m or the grouping.
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
        const int64_t rows = WK_MIN(WK_Q14_PANEL, m - p0);
        const __mmask16 m0 = wk__avx512_mask16(WK_MIN(16, rows)), m1 = wk__avx512_mask16(WK_MAX(0, rows - 16));
        /* (an integer: past the call's last panel it may point beyond pw) */
        const uintptr_t next = (uintptr_t)(pw + (p0 + WK_Q14_PANEL) * k);
        for (int64_t g = 0, j0 = 0; g < n_groups; g++) {
            const int64_t nr = base + (g < extra);
            /* group g's share of the next panel's k lines (32 rows x k int16) */
            const int64_t l0 = k * g / n_groups, l1 = k * (g + 1) / n_groups;
            g_q14[few][nr - 1](nb, pan, xq + j0 * ldq, ldq, sx + j0 * lds, lds, sw + p0, c + j0 * ldc + p0, ldc, m0,
                               m1, next + (uintptr_t)(64 * l0), (int)(l1 - l0));
            j0 += nr;
        }
    }
}

void wk__avx512_fill_q14_vnni(struct wk_cpu_kernels *k)
{
    k->q14_quantize = q14_quantize;
    k->gemm_q14 = gemm_q14;
}
