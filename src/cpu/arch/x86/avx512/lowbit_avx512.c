/*
 * lowbit_avx512.c - the AVX-512 build of lowbit_template.h: vec_dot,
 * vec_dot_rows and to_f32 for Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4. A
 * 16-float vector is one __m512 here (AVX-512F only).
 */
#include "avx512.h"

typedef __m512 V16;

#define V16_INLINE static inline __attribute__((always_inline))
V16_INLINE V16 v16_zero(void) { return _mm512_setzero_ps(); }
V16_INLINE V16 v16_set1(float f) { return _mm512_set1_ps(f); }
V16_INLINE V16 v16_load(const float *p) { return _mm512_loadu_ps(p); }
V16_INLINE void v16_store(float *p, V16 v) { _mm512_storeu_ps(p, v); }
V16_INLINE V16 v16_from_i8(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)); }
V16_INLINE V16 v16_mul(V16 x, V16 y) { return _mm512_mul_ps(x, y); }
V16_INLINE V16 v16_add(V16 x, V16 y) { return _mm512_add_ps(x, y); }
V16_INLINE V16 v16_sub(V16 x, V16 y) { return _mm512_sub_ps(x, y); }
V16_INLINE V16 v16_fma(V16 x, V16 y, V16 z) { return _mm512_fmadd_ps(x, y, z); }
V16_INLINE float v16_hsum(V16 v) { return _mm512_reduce_add_ps(v); }

#define LOWBIT_FILL wk__avx512_fill_lowbit
#include "../lowbit_template.h"
