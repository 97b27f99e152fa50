/*
 * dot_avx512.c - the integer dot products of dot_template.h built for
 * AVX-512 F/BW/VL/DQ without VNNI (maddubs + madd), the path for CPUs such
 * as Skylake-SP that have AVX-512 but not VNNI. Where VNNI is present,
 * dot_avx512_vnni.c overwrites these table entries.
 */
#define WK_AVX512_VNNI     0
#define WK_AVX512_FILL_DOT wk__avx512_fill_dot
#include "dot_template.h"
