/*
 * avx512_absent.c - the AVX-512 and AMX entry points for a build that
 * leaves their kernels out: the sanitizer build (VARIANT=asan) on a CPU
 * without AVX-512, where those kernels could not run under the tests
 * anyway (the Makefile picks this file instead of src/cpu/arch/x86/avx512/).
 * The release build always compiles them. wk_cpu_features_get() reports
 * no AVX-512 on such a CPU, so kernels.c never calls these; a call is a
 * bug, and aborts with its name.
 */
#include "../../wk_cpu_arch.h"

#include <stdio.h>
#include <stdlib.h>

static void absent(const char *fn)
{
    fprintf(stderr, "wick: %s called in a build without the AVX-512 kernels\n", fn);
    abort();
}

void wk__cpu_fill_avx512(struct wk_cpu_kernels *k)
{
    (void)k;
    absent(__func__);
}

void wk__cpu_fill_amx(struct wk_cpu_kernels *k)
{
    (void)k;
    absent(__func__);
}

/* test-cpu's AVX-512BW variant (declared there; avx512.h otherwise) */
void wk__avx512_fill_rows_x16(struct wk_cpu_kernels *k);
void wk__avx512_fill_rows_x16(struct wk_cpu_kernels *k)
{
    (void)k;
    absent(__func__);
}
