/*
 * lowbit_avx2.c - the AVX2 build of lowbit_template.h: vec_dot,
 * vec_dot_rows and to_f32 for Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4. A
 * 16-float vector is two __m256 here.
 */
#include "kernels_avx2.h"

typedef struct {
    __m256 a, b; /* floats 0-7, 8-15 */
} V16;

#define V16_INLINE static inline __attribute__((always_inline))
V16_INLINE V16 v16_zero(void) { return (V16){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
V16_INLINE V16 v16_set1(float f) { return (V16){_mm256_set1_ps(f), _mm256_set1_ps(f)}; }
V16_INLINE V16 v16_load(const float *p) { return (V16){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
V16_INLINE void v16_store(float *p, V16 v) { _mm256_storeu_ps(p, v.a), _mm256_storeu_ps(p + 8, v.b); }
V16_INLINE V16 v16_from_i8(__m128i q)
{
    return (V16){_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)),
                 _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)))};
}
V16_INLINE V16 v16_mul(V16 x, V16 y) { return (V16){_mm256_mul_ps(x.a, y.a), _mm256_mul_ps(x.b, y.b)}; }
V16_INLINE V16 v16_add(V16 x, V16 y) { return (V16){_mm256_add_ps(x.a, y.a), _mm256_add_ps(x.b, y.b)}; }
V16_INLINE V16 v16_sub(V16 x, V16 y) { return (V16){_mm256_sub_ps(x.a, y.a), _mm256_sub_ps(x.b, y.b)}; }
V16_INLINE V16 v16_fma(V16 x, V16 y, V16 z)
{
    return (V16){_mm256_fmadd_ps(x.a, y.a, z.a), _mm256_fmadd_ps(x.b, y.b, z.b)};
}
V16_INLINE float v16_hsum(V16 v) { return avx2_hsum_ps(_mm256_add_ps(v.a, v.b)); }

#define LOWBIT_FILL wk__avx2_fill_lowbit
#include "../lowbit_template.h"
