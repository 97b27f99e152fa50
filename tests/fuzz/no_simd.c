/*
 * no_simd.c - the fuzz build compiles every source in one clang call, so
 * it cannot give the ISA folders their own -m flags; it runs the plain-C
 * reference kernels instead (the kernel code is covered by test-cpu).
 */
#include "../../src/cpu/wk_cpu_arch.h"

void wk__cpu_fill_avx2(struct wk_cpu_kernels *k)
{
    (void)k;
}

void wk__cpu_fill_avx512(struct wk_cpu_kernels *k)
{
    (void)k;
}

void wk__cpu_fill_amx(struct wk_cpu_kernels *k)
{
    (void)k;
}
