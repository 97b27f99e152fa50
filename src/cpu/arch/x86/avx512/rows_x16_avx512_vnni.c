/*
 * rows_x16_avx512_vnni.c - the 16-bit-activation decode dots of
 * rows_x16_template.h with AVX-512 VNNI (vpdpbusd). Compiled with
 * -mavx512vnni; wk__cpu_fill_avx512 installs them only where the CPU has
 * VNNI.
 */
#define WK_AVX512_VNNI 1
#define WK_X16_FILL    wk__avx512_fill_rows_x16_vnni
#include "rows_x16_template.h"
