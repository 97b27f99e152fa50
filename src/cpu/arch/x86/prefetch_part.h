/*
 * prefetch_part.h - a prefetch spread over a loop's iterations, shared by
 * the AVX2 and AVX-512 R16 kernels (any file with <immintrin.h>).
 */
#ifndef WK_X86_PREFETCH_PART_H
#define WK_X86_PREFETCH_PART_H

#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Part it of nit (0 <= it < nit) of a prefetch of `lines` 64-byte lines
 * from address a: lines [it lines / nit, (it + 1) lines / nit), into L2
 * (l2: T1) or L1 (T0), so that a block's prefetches are spread over its
 * computation, not issued at once. The address is an integer: past the
 * end of the weights prefetching is harmless, pointing there is not. */
static inline __attribute__((always_inline)) void wk_prefetch_part(uintptr_t a, size_t lines, int64_t it, int64_t nit,
                                                                   bool l2)
{
    const size_t l0 = lines * (size_t)it / (size_t)nit, l1 = lines * (size_t)(it + 1) / (size_t)nit;
    for (size_t l = l0; l < l1; l++) {
        if (l2) _mm_prefetch((const char *)(a + 64 * l), _MM_HINT_T1);
        else _mm_prefetch((const char *)(a + 64 * l), _MM_HINT_T0);
    }
}

#endif
