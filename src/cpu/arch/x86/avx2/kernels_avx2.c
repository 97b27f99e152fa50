/*
 * kernels_avx2.c - AVX2 + FMA + F16C kernels. Compiled with -mavx2 -mfma
 * -mf16c only; reached through wk__cpu_fill_avx2 when the CPU has them.
 */
#include "../../../wk_cpu_arch.h"

#include <immintrin.h>

void wk__cpu_fill_avx2(struct wk_cpu_kernels *k)
{
    (void)k; /* kernels added here */
}
