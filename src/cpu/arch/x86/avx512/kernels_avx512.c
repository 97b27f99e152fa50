/*
 * kernels_avx512.c - AVX-512 (F, BW, VL, DQ; VNNI where present) kernels.
 * Compiled with the AVX-512 -m flags only; reached through
 * wk__cpu_fill_avx512 when the CPU and OS support it.
 */
#include "../../../wk_cpu_arch.h"

#include <immintrin.h>

void wk__cpu_fill_avx512(struct wk_cpu_kernels *k)
{
    (void)k; /* kernels added here */
}
