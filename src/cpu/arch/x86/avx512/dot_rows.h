/*
 * dot_rows.h - internal to dot_rows_avx512.c and dot_rows_k_avx512.c: what
 * the multi-row decode dots (the table's vec_dot_rows entries) share.
 *
 * A vec_dot_rows kernel is written once as an always-inline function of R,
 * the number of rows it runs together (1..4), and instantiated for each R
 * by DOT_ROWS_FN, whose entry point runs groups of four rows and then one
 * group of the 1-3 left. Each row's arithmetic is the same whatever R is
 * and whichever group a row falls in (rows share loads of x and x's sums,
 * never partial results), so a row's result does not depend on how the
 * caller splits rows between threads.
 *
 * Kernels that need sums of x over 32-element sub-blocks (the min term of
 * Q4_1, Q5_1, Q4_K, Q5_K; the offset of Q4_0, Q5_0), or x rearranged, get
 * them computed once per call (per column chunk of long rows) into a
 * scratch buffer on the stack.
 */
#ifndef WK_AVX512_DOT_ROWS_H
#define WK_AVX512_DOT_ROWS_H

#include "avx512.h"

#include <stdbool.h>
#include <string.h>

#define ALWAYS_INLINE inline __attribute__((always_inline))
/* Loops over arrays of registers must unroll completely, or the arrays live
 * in memory; -O2 alone does not unroll them. */
#define UNROLL _Pragma("GCC unroll 16")

/*
 * Software prefetch. The rows of a group are read side by side, a few
 * hundred bytes to a few KB each: too short for the hardware prefetchers
 * to lock on to each as a stream (four rows of 680 bytes read this way
 * stream from DRAM at 3.5 GB/s, against 18 GB/s for one sequential
 * stream). So the kernels prefetch into L2 the same bytes PF_DIST (rounded
 * up to whole groups) further on, i.e. the rows of a later group at the
 * offset they will be read from, each line once: that restores 17-21 GB/s.
 * Into L1 (T0) it reaches only 10-12 GB/s, and nearer distances less.
 * Prefetches never fault, so running past the last row is harmless.
 */
#ifndef PF_DIST
#define PF_DIST 16384
#endif

/* The prefetch distance for groups of R rows stride bytes apart. */
static inline size_t rows_pf_dist(int R, size_t stride)
{
    const size_t grp = (size_t)R * stride;
    return (PF_DIST + grp - 1) / grp * grp;
}

/* Prefetches for each of R rows the lines at row offsets [*next, end) plus
 * pf, and moves *next past end: called as a group's reading moves on. */
static ALWAYS_INLINE void rows_prefetch(const int R, const uint8_t *w, size_t stride, size_t pf,
                                        size_t *next, size_t end)
{
    while (*next < end) {
        UNROLL
        for (int r = 0; r < R; r++)
            _mm_prefetch((const char *)(w + r * stride + pf + *next), _MM_HINT_T1);
        *next += 64;
    }
}

/* The first PF_DIST bytes of a call's rows (one contiguous range when the
 * rows are packed): the kernels' own prefetches run PF_DIST ahead of the
 * reads, so without this the start of every call waits on DRAM. */
static inline void rows_prefetch_start(const uint8_t *w, size_t bytes)
{
    const size_t end = bytes < PF_DIST ? bytes : PF_DIST;
    for (size_t o = 0; o < end; o += 64) _mm_prefetch((const char *)(w + o), _MM_HINT_T1);
}

/* Sub-block sums per column chunk: 512 sums cover 16384 elements, enough
 * for every row of today's models in one chunk. */
#define XS_MAX 512
#define XS_CHUNK (32 * XS_MAX)

/* Writes lanes 0..R-1 of v (plus the old out[r] when add) to out[0..R-1]:
 * the results of one group of rows. */
static ALWAYS_INLINE void rows_store(const int R, float *out, __m128 v, bool add)
{
    const __mmask8 m = (__mmask8)((1u << R) - 1);
    if (add) v = _mm_add_ps(v, _mm_maskz_loadu_ps(m, out));
    _mm_mask_storeu_ps(out, m, v);
}

/* The horizontal sums of acc[0..R-1] plus extra's lanes, stored as above. */
static ALWAYS_INLINE void rows_finish(const int R, const __m512 acc[4], __m128 extra, float *out,
                                      bool add)
{
    const __m512 z = _mm512_setzero_ps();
    __m128 s = wk__avx512_hsum4(acc[0], R > 1 ? acc[1] : z, R > 2 ? acc[2] : z, R > 3 ? acc[3] : z);
    rows_store(R, out, _mm_add_ps(s, extra), add);
}

/* xs[g] = sum of x[32g .. 32g+31] for g < n / 32. */
static inline void rows_x_sums(int64_t n, const float *x, float *xs)
{
    for (int64_t g = 0; g < n / 32; g++)
        xs[g] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_loadu_ps(x + 32 * g),
                                                   _mm512_loadu_ps(x + 32 * g + 16)));
}

/* The f16 at p (any alignment), zero-extended. */
static inline uint64_t rows_h16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/*
 * The f16 at byte offset off of R rows stride bytes apart, as the lanes of
 * one float vector. The halves are gathered in a general register and
 * converted with one 128-bit vcvtph2ps: cheaper than a broadcast and a
 * 512-bit conversion per row, and the FP pipes are what the kernels run
 * short of.
 */
static ALWAYS_INLINE __m128 rows_f16x4(const int R, const uint8_t *p, size_t stride, size_t off)
{
    uint64_t h = 0;
    UNROLL
    for (int r = 0; r < R; r++) h |= rows_h16(p + r * stride + off) << (16 * r);
    return _mm_cvtph_ps(_mm_cvtsi64_si128((long long)h));
}

/* Stores v into s and makes the compiler forget it: it then reads each
 * lane back with a broadcast load (a load-port op) instead of a lane
 * permute, which would compete with the kernels' shuffles. */
static ALWAYS_INLINE void rows_spill(float *s, __m128 v)
{
    _mm_store_ps(s, v);
    __asm__("" : "+m"(*(float(*)[4])s));
}

/* A PREP for kernels that need nothing prepared. */
static inline void rows_no_prep(int64_t n, const float *x, float *scratch)
{
    (void)n, (void)x, (void)scratch;
}

/*
 * Defines name(n, w, stride, x, out, n_rows), the vec_dot_rows entry, from
 * KERNEL(R, n, w, stride, x, scratch, out, add) (an always-inline function
 * with R a constant). BS and BB are the dtype's block size and bytes. The
 * row is done in column chunks of CHUNK elements (a multiple of BS, or n
 * for one chunk); for each, PREP(nc, x + c0, scratch) first fills the
 * SCRATCH floats (x's sub-block sums, a permuted copy of x) that KERNEL
 * reads, and the chunks' results add up in out.
 */
#define DOT_ROWS_FN(name, KERNEL, BS, BB, CHUNK, PREP, SCRATCH)                                    \
    static void name(int64_t n, const void *w, size_t stride, const float *x, float *out,          \
                     int64_t n_rows)                                                               \
    {                                                                                              \
        _Alignas(64) float scratch[SCRATCH];                                                       \
        const int64_t chunk = (CHUNK) > 0 ? (CHUNK) : n;                                           \
        rows_prefetch_start((const uint8_t *)w, stride * (size_t)n_rows);                         \
        for (int64_t c0 = 0; c0 < n; c0 += chunk) {                                                \
            const int64_t nc = WK_MIN(chunk, n - c0);                                              \
            const uint8_t *wc = (const uint8_t *)w + c0 / (BS) * (BB);                             \
            const bool add = c0 > 0;                                                               \
            PREP(nc, x + c0, scratch);                                                             \
            int64_t r = 0;                                                                         \
            for (; r + 4 <= n_rows; r += 4)                                                        \
                KERNEL(4, nc, wc + r * stride, stride, x + c0, scratch, out + r, add);             \
            switch (n_rows - r) {                                                                  \
            case 3: KERNEL(3, nc, wc + r * stride, stride, x + c0, scratch, out + r, add); break;  \
            case 2: KERNEL(2, nc, wc + r * stride, stride, x + c0, scratch, out + r, add); break;  \
            case 1: KERNEL(1, nc, wc + r * stride, stride, x + c0, scratch, out + r, add); break;  \
            default: break;                                                                        \
            }                                                                                      \
        }                                                                                          \
    }

/*
 * Defines name(n, w, stride, x, ldx, n_tokens, out, ldo, n_rows), a
 * vec_dot_rows_tokens entry, from the same KERNEL, PREP and chunking as
 * DOT_ROWS_FN: per group of up to 4 tokens and column chunk, each token's
 * x is prepared into its own scratch, then every group of rows is run for
 * each token in turn (the rows' bytes still in L1 for the later ones). A
 * row is split into the same chunks and groups as in DOT_ROWS_FN, so each
 * token's results are that function's bits.
 */
#define DOT_ROWS_TOKENS_FN(name, KERNEL, BS, BB, CHUNK, PREP, SCRATCH)                             \
    static void name(int64_t n, const void *w, size_t stride, const float *x, size_t ldx,          \
                     int32_t n_tokens, float *out, size_t ldo, int64_t n_rows)                     \
    {                                                                                              \
        _Alignas(64) float scratch[4][SCRATCH];                                                    \
        const int64_t chunk = (CHUNK) > 0 ? (CHUNK) : n;                                           \
        rows_prefetch_start((const uint8_t *)w, stride * (size_t)n_rows);                         \
        for (int32_t t0 = 0; t0 < n_tokens; t0 += 4) {                                             \
            const int T = (int)WK_MIN(4, n_tokens - t0);                                           \
            for (int64_t c0 = 0; c0 < n; c0 += chunk) {                                            \
                const int64_t nc = WK_MIN(chunk, n - c0);                                          \
                const uint8_t *wc = (const uint8_t *)w + c0 / (BS) * (BB);                         \
                const bool add = c0 > 0;                                                           \
                for (int t = 0; t < T; t++) PREP(nc, x + (size_t)(t0 + t) * ldx + c0, scratch[t]); \
                for (int64_t r = 0; r < n_rows; r += 4) {                                          \
                    const int64_t left = n_rows - r;                                               \
                    for (int t = 0; t < T; t++) {                                                  \
                        const float *xt = x + (size_t)(t0 + t) * ldx + c0;                         \
                        float *ot = out + (size_t)(t0 + t) * ldo + r;                              \
                        switch (left >= 4 ? 4 : left) {                                            \
                        case 4: KERNEL(4, nc, wc + r * stride, stride, xt, scratch[t], ot, add); break; \
                        case 3: KERNEL(3, nc, wc + r * stride, stride, xt, scratch[t], ot, add); break; \
                        case 2: KERNEL(2, nc, wc + r * stride, stride, xt, scratch[t], ot, add); break; \
                        default: KERNEL(1, nc, wc + r * stride, stride, xt, scratch[t], ot, add); break; \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

#endif /* WK_AVX512_DOT_ROWS_H */
