/*
 * affine_avx2.c - AVX2 kernels for the affine groups of 64 (I8G64, I4G64;
 * wk_tensor.h): the dot with f32 x and the conversion to f32. Per group,
 * dot = scale * sum(q x) + bias * sum(x); the codes widen to f32 eight at a
 * time and the two sums stay in vector registers across groups, scaled
 * with FMAs, with one horizontal sum at the end. Spec: the reference
 * functions in quant_ref.c (same products, summed in another order).
 * to_f32 rounds as the reference does (bit-identical); the dot sums in
 * another order (within the kernel tests' tolerance). The AVX-512 table
 * inherits these.
 */
#include "kernels_avx2.h"

/* The eight codes at element 8j of a group, as floats. */
static inline __m256 codes8_i8(const uint8_t *q, int j)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8 * j))));
}

static inline __m256 codes8_i4(const uint8_t *q, int j)
{
    int32_t four;
    memcpy(&four, q + 4 * j, 4);
    const __m128i b = _mm_cvtsi32_si128(four), m = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(b, m), hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi))); /* element 2i low, 2i+1 high */
}

#define AFFINE_DOT(name, block, codes)                                                             \
    static float name(int64_t n, const void *w, const void *xv)                                    \
    {                                                                                              \
        const struct block *b = w;                                                                 \
        const float *x = xv;                                                                       \
        __m256 tot = _mm256_setzero_ps();                                                          \
        for (int64_t i = 0; i < n / WK_QG64; i++, x += WK_QG64) {                                  \
            __m256 qx = _mm256_setzero_ps(), sx = _mm256_setzero_ps();                             \
            for (int j = 0; j < 8; j++) {                                                          \
                const __m256 xv8 = _mm256_loadu_ps(x + 8 * j);                                     \
                qx = _mm256_fmadd_ps(codes(b[i].q, j), xv8, qx);                                   \
                sx = _mm256_add_ps(sx, xv8);                                                       \
            }                                                                                      \
            tot = _mm256_fmadd_ps(_mm256_set1_ps(wk_f16_to_f32(b[i].scale)), qx, tot);             \
            tot = _mm256_fmadd_ps(_mm256_set1_ps(wk_f16_to_f32(b[i].bias)), sx, tot);              \
        }                                                                                          \
        return avx2_hsum_ps(tot);                                                                  \
    }                                                                                              \
    static void name##_to_f32(const void *src, float *dst, int64_t n)                              \
    {                                                                                              \
        const struct block *b = src;                                                               \
        for (int64_t i = 0; i < n / WK_QG64; i++, dst += WK_QG64) {                                \
            const __m256 s = _mm256_set1_ps(wk_f16_to_f32(b[i].scale));                            \
            const __m256 z = _mm256_set1_ps(wk_f16_to_f32(b[i].bias));                             \
            for (int j = 0; j < 8; j++) /* rounded as the reference: product, then sum */          \
                _mm256_storeu_ps(dst + 8 * j, _mm256_add_ps(_mm256_mul_ps(s, codes(b[i].q, j)), z)); \
        }                                                                                          \
    }

AFFINE_DOT(dot_i8g64, wk_block_i8g64, codes8_i8)
AFFINE_DOT(dot_i4g64, wk_block_i4g64, codes8_i4)

void wk__avx2_fill_affine(struct wk_cpu_kernels *k)
{
    k->vec_dot[WK_DTYPE_I8G64] = dot_i8g64;
    k->vec_dot[WK_DTYPE_I4G64] = dot_i4g64;
    k->to_f32[WK_DTYPE_I8G64] = dot_i8g64_to_f32;
    k->to_f32[WK_DTYPE_I4G64] = dot_i4g64_to_f32;
}
