/*
 * rows_x16_avx512.c - the 16-bit-activation decode dots of
 * rows_x16_template.h with AVX-512BW integer products (vpmaddubsw,
 * vpmaddwd), for AVX-512 CPUs without VNNI.
 */
#define WK_AVX512_VNNI 0
#define WK_X16_FILL    wk__avx512_fill_rows_x16
#include "rows_x16_template.h"
