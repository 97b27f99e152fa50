/*
 * float_avx512.c - AVX-512 kernels on float data: the F32, F16 and BF16
 * weight dots (activations stay f32), F16/BF16 to f32, and the attention
 * helpers dot_f32 and axpy_f32; f32 to F16 (an F16 KV cache's writes).
 *
 * n is any length: the main loops take 64 elements (four independent FMA
 * accumulators, enough to cover the FMA latency), then 16 at a time, then a
 * masked load for the last 1-15 lanes (masked lanes read nothing, so a row
 * may end at the edge of a page). Sums are reordered relative to the
 * reference's left-to-right loop; the result differs from it only by float
 * rounding. Half to float (vcvtph2ps) and bfloat16 to float (a 16-bit shift)
 * are exact, so to_f32 equals the reference bit for bit.
 */
#include "avx512.h"

/* 16 weights as floats, from f16 or bf16 (src already offset). */
static inline __m512 load_f16(const wk_f16 *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline __m512 load_f16_tail(const wk_f16 *p, __mmask16 m)
{
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
static inline __m512 bf16_to_ps(__m256i h)
{
    /* bf16 is the top half of an f32: widen and shift into place. */
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline __m512 load_bf16(const wk_bf16 *p)
{
    return bf16_to_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline __m512 load_bf16_tail(const wk_bf16 *p, __mmask16 m)
{
    return bf16_to_ps(_mm256_maskz_loadu_epi16(m, p));
}
static inline __m512 load_f32(const float *p)
{
    return _mm512_loadu_ps(p);
}
static inline __m512 load_f32_tail(const float *p, __mmask16 m)
{
    return _mm512_maskz_loadu_ps(m, p);
}

/* The three dot products share one loop shape; LOAD/LOAD_TAIL convert 16
 * weights of type T to floats. */
#define DEFINE_DOT(name, T, LOAD, LOAD_TAIL)                                                       \
    static float name(int64_t n, const T *w, const float *x)                                       \
    {                                                                                              \
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                                \
        int64_t i = 0;                                                                             \
        for (; i + 64 <= n; i += 64) {                                                             \
            a0 = _mm512_fmadd_ps(LOAD(w + i), _mm512_loadu_ps(x + i), a0);                         \
            a1 = _mm512_fmadd_ps(LOAD(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);               \
            a2 = _mm512_fmadd_ps(LOAD(w + i + 32), _mm512_loadu_ps(x + i + 32), a2);               \
            a3 = _mm512_fmadd_ps(LOAD(w + i + 48), _mm512_loadu_ps(x + i + 48), a3);               \
        }                                                                                          \
        for (; i + 16 <= n; i += 16)                                                               \
            a0 = _mm512_fmadd_ps(LOAD(w + i), _mm512_loadu_ps(x + i), a0);                         \
        if (i < n) {                                                                               \
            __mmask16 m = wk__avx512_mask16(n - i);                                                \
            a1 = _mm512_fmadd_ps(LOAD_TAIL(w + i, m), _mm512_maskz_loadu_ps(m, x + i), a1);        \
        }                                                                                          \
        return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));  \
    }

DEFINE_DOT(dot_f32_impl, float, load_f32, load_f32_tail)
DEFINE_DOT(dot_f16_impl, wk_f16, load_f16, load_f16_tail)
DEFINE_DOT(dot_bf16_impl, wk_bf16, load_bf16, load_bf16_tail)

static float dot_f32(int64_t n, const float *a, const float *b)
{
    return dot_f32_impl(n, a, b);
}
static float vec_dot_f32(int64_t n, const void *w, const void *x)
{
    return dot_f32_impl(n, w, x);
}
static float vec_dot_f16(int64_t n, const void *w, const void *x)
{
    return dot_f16_impl(n, w, x);
}
static float vec_dot_bf16(int64_t n, const void *w, const void *x)
{
    return dot_bf16_impl(n, w, x);
}

/* y += a * x. One fused multiply-add per element (the reference rounds the
 * product first; the two differ by at most one rounding). */
static void axpy_f32(int64_t n, float a, const float *x, float *y)
{
    const __m512 va = _mm512_set1_ps(a);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 y0 = _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i));
        __m512 y1 = _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16));
        _mm512_storeu_ps(y + i, y0);
        _mm512_storeu_ps(y + i + 16, y1);
    }
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i,
                         _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {
        __mmask16 m = wk__avx512_mask16(n - i);
        __m512 v =
            _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

static void f16_to_f32(const void *src, float *dst, int64_t n)
{
    const wk_f16 *s = src;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, load_f16(s + i));
    if (i < n) {
        __mmask16 m = wk__avx512_mask16(n - i);
        _mm512_mask_storeu_ps(dst + i, m, load_f16_tail(s + i, m));
    }
}

/* f32 to f16, rounded to nearest even (vcvtps2ph): the reference's
 * wk_f32_to_f16 bit for bit, NaNs aside (each stays a NaN). */
static void f32_to_f16(const float *src, void *dst, int64_t n)
{
    wk_f16 *d = dst;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(d + i), _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    if (i < n) {
        __mmask16 m = wk__avx512_mask16(n - i);
        _mm256_mask_storeu_epi16(d + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT));
    }
}

static void bf16_to_f32(const void *src, float *dst, int64_t n)
{
    const wk_bf16 *s = src;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, load_bf16(s + i));
    if (i < n) {
        __mmask16 m = wk__avx512_mask16(n - i);
        _mm512_mask_storeu_ps(dst + i, m, load_bf16_tail(s + i, m));
    }
}

void wk__avx512_fill_float(struct wk_cpu_kernels *k)
{
    k->vec_dot[WK_DTYPE_F32] = vec_dot_f32;
    k->vec_dot[WK_DTYPE_F16] = vec_dot_f16;
    k->vec_dot[WK_DTYPE_BF16] = vec_dot_bf16;
    k->to_f32[WK_DTYPE_F16] = f16_to_f32;
    k->quantize[WK_DTYPE_F16] = f32_to_f16;
    k->to_f32[WK_DTYPE_BF16] = bf16_to_f32;
    /* F32 to_f32 stays the reference memcpy, which is already optimal. */
    k->dot_f32 = dot_f32;
    k->axpy_f32 = axpy_f32;
}
