/*
 * quantize_avx512.c - AVX-512 quantizers for the activation types Q8_0,
 * Q8_1 (32-element blocks) and Q8_K (256-element blocks).
 *
 * These must write the same bytes as the reference quantizers in
 * src/tensor/quant_ref.c, so every step repeats the reference's float
 * arithmetic in the same order:
 *   Q8_0/Q8_1: amax = max |x| (NaNs ignored, as fmaxf does), d = amax / 127,
 *              id = d != 0 ? 1/d : 0 (and 0 where 1/d overflows),
 *              q = round-half-even(x * id); d stored
 *              as f16 rounded to nearest even; Q8_1 adds s = f16(d * sum q)
 *              with d the f32 value.
 *   Q8_K:      max = the first element of largest |x|, with its sign;
 *              iscale = -127 / max, q = min(127, round-half-even(iscale*x)),
 *              d = 1 / iscale, bsums[i] = sum of q[16i .. 16i+15].
 * Rounding uses the instructions' explicit round-to-nearest-even mode, which
 * is what lrintf does under the default floating-point environment. Every
 * product here is a single IEEE multiply, so there is nothing to fuse.
 */
#include "avx512.h"

#include <math.h>
#include <string.h>

/* Max |x| over 32 floats. max_ps returns its second operand when either is
 * NaN, so keeping the running maximum second skips NaNs like fmaxf. */
static inline float amax_32(__m512 x0, __m512 x1)
{
    __m512 m = _mm512_max_ps(_mm512_abs_ps(x0), _mm512_setzero_ps());
    m = _mm512_max_ps(_mm512_abs_ps(x1), m);
    return _mm512_reduce_max_ps(m);
}

static inline __m512i round_even(__m512 v)
{
    return _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

static inline wk_f16 f32_to_f16(float f)
{
    return (wk_f16)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

/* One 32-element block: returns d, writes q, sets *sum to sum q. */
static inline float quantize_32(const float *x, int8_t *q, __m512i *sum)
{
    __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
    float d = amax_32(x0, x1) / 127.0f;
    float idf = d != 0 ? 1.0f / d : 0.0f;
    if (!isfinite(idf)) idf = 0.0f; /* amax below ~4e-37: 1/d overflows, as the reference */
    __m512 id = _mm512_set1_ps(idf);
    __m512i q0 = round_even(_mm512_mul_ps(x0, id));
    __m512i q1 = round_even(_mm512_mul_ps(x1, id));
    /* |x * id| <= 127 (up to rounding of the product, which rounds back to
     * 127), so the saturating narrowing never saturates. */
    _mm_storeu_si128((__m128i *)q, _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128((__m128i *)(q + 16), _mm512_cvtsepi32_epi8(q1));
    *sum = _mm512_add_epi32(q0, q1);
    return d;
}

static void quantize_q8_0(const float *src, void *dst, int64_t n)
{
    struct wk_block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / 32; i++) {
        __m512i sum;
        b[i].d = f32_to_f16(quantize_32(src + i * 32, b[i].qs, &sum));
    }
}

static void quantize_q8_1(const float *src, void *dst, int64_t n)
{
    struct wk_block_q8_1 *b = dst;
    for (int64_t i = 0; i < n / 32; i++) {
        __m512i sum;
        float d = quantize_32(src + i * 32, b[i].qs, &sum);
        b[i].d = f32_to_f16(d);
        b[i].s = f32_to_f16(d * (float)_mm512_reduce_add_epi32(sum));
    }
}

/*
 * Q8_K bsums from the 256 quantized bytes held as four 64-byte vectors
 * (16-element group g is bytes 16(g%4) .. of z[g/4]). maddubs with ones and
 * madd with ones give sums of 4 bytes per int32 lane; two rounds of
 * "add the even lanes to the odd lanes of a pair of vectors" (permutex2var
 * keeps the order) leave one sum of 16 per lane, group 0 first.
 */
static inline void q8_k_bsums(const __m512i z[4], int16_t *bsums)
{
    const __m512i ones8 = _mm512_set1_epi8(1), ones16 = _mm512_set1_epi16(1);
    const __m512i even =
        _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    __m512i s[4];
    for (int k = 0; k < 4; k++)
        s[k] = _mm512_madd_epi16(_mm512_maddubs_epi16(ones8, z[k]), ones16);
    __m512i ab = _mm512_add_epi32(_mm512_permutex2var_epi32(s[0], even, s[1]),
                                  _mm512_permutex2var_epi32(s[0], odd, s[1]));
    __m512i cd = _mm512_add_epi32(_mm512_permutex2var_epi32(s[2], even, s[3]),
                                  _mm512_permutex2var_epi32(s[2], odd, s[3]));
    __m512i all = _mm512_add_epi32(_mm512_permutex2var_epi32(ab, even, cd),
                                   _mm512_permutex2var_epi32(ab, odd, cd));
    _mm256_storeu_si256((__m256i *)bsums, _mm512_cvtepi32_epi16(all));
}

static void quantize_q8_k(const float *src, void *dst, int64_t n)
{
    struct wk_block_q8_k *b = dst;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const float *x = src + i * WK_QK_K;
        __m512 m = _mm512_setzero_ps();
        for (int g = 0; g < 16; g++)
            m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + 16 * g)), m);
        float amax = _mm512_reduce_max_ps(m);
        if (amax == 0) {
            memset(&b[i], 0, sizeof b[i]);
            continue;
        }
        /* The reference keeps the first element whose |x| beats all before
         * it: the first one equal to amax. Its sign picks the sign of d. */
        float max = 0;
        const __m512 vamax = _mm512_set1_ps(amax);
        for (int g = 0; g < 16; g++) {
            __mmask16 eq =
                _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + 16 * g)), vamax, _CMP_EQ_OQ);
            if (eq) {
                max = x[16 * g + __builtin_ctz(eq)];
                break;
            }
        }
        float iscale = -127.0f / max;
        const __m512 vis = _mm512_set1_ps(iscale);
        __m512i z[4];
        for (int k = 0; k < 4; k++) {
            /* q = iscale * x lies in [-127, 127] up to rounding of the
             * product; the saturating narrowing does the min(127, .). */
            __m128i q[4];
            for (int j = 0; j < 4; j++)
                q[j] = _mm512_cvtsepi32_epi8(
                    round_even(_mm512_mul_ps(vis, _mm512_loadu_ps(x + 64 * k + 16 * j))));
            __m512i v = _mm512_castsi128_si512(q[0]);
            v = _mm512_inserti32x4(v, q[1], 1);
            v = _mm512_inserti32x4(v, q[2], 2);
            z[k] = _mm512_inserti32x4(v, q[3], 3);
            _mm512_storeu_si512(b[i].qs + 64 * k, z[k]);
        }
        q8_k_bsums(z, b[i].bsums);
        b[i].d = 1.0f / iscale;
    }
}

void wk__avx512_fill_quantize(struct wk_cpu_kernels *k)
{
    k->quantize[WK_DTYPE_Q8_0] = quantize_q8_0;
    k->quantize[WK_DTYPE_Q8_1] = quantize_q8_1;
    k->quantize[WK_DTYPE_Q8_K] = quantize_q8_k;
}
