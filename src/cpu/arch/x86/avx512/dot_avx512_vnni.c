/*
 * dot_avx512_vnni.c - the integer dot products of dot_template.h built
 * with AVX-512 VNNI (vpdpbusd, vpdpwssd). Compiled with -mavx512vnni (the
 * Makefile's rule for *_vnni.c), so nothing here may run unless
 * wk_cpu_features_get()->avx512_vnni is true; wk__cpu_fill_avx512 checks.
 */
#define WK_AVX512_VNNI     1
#define WK_AVX512_FILL_DOT wk__avx512_fill_dot_vnni
#include "dot_template.h"
