/*
 * q14.c - the Q14 format (wk_cpu.h): weights packed once, and the plain-C
 * reference kernels whose bits the ISA kernels (q14_avx512_vnni.c,
 * q14_avx2.c) give.
 */
#include "wk_cpu.h"

#include <assert.h>
#include <float.h>
#include <math.h>

/* round-to-nearest-even of v, |v| <= WK_Q14_MAX + 0.5 (cvtps2dq's rounding
 * in the default mode): v + 1.5 * 2^23 lies in [2^23, 2^24), where floats
 * are the integers, so the addition rounds v to one (ties to even), and
 * the subtraction is exact. Inline: lrintf was a libm call a weight, most
 * of the packing's time. */
static int16_t round_q14(float v)
{
    const float shifter = 12582912.0f;
    return (int16_t)((v + shifter) - shifter);
}

/* The scale of n floats (a weight row or a block of x): max |x| /
 * WK_Q14_MAX, 0 for zeros and for a largest |x| so small (below
 * WK_Q14_MAX / FLT_MAX, ~2.4e-35) that WK_Q14_MAX / max overflows, NaN
 * where one is NaN or infinite; *inv the factor to their integers (0 for
 * the last three: the integers are then 0). */
static float run_scale(int64_t n, const float *x, float *inv)
{
    float mx = 0;
    bool bad = false;
    for (int64_t l = 0; l < n; l++) {
        const float v = fabsf(x[l]);
        if (!(v <= FLT_MAX)) bad = true;
        else if (v > mx) mx = v;
    }
    *inv = bad ? 0 : (float)WK_Q14_MAX / mx; /* (mx 0: inf) */
    if (bad || !(*inv <= FLT_MAX)) {
        *inv = 0;
        return bad ? NAN : 0.0f;
    }
    return mx / (float)WK_Q14_MAX;
}

/* x's integer for factor inv (0 for a zero factor: a NaN x then gives 0) */
static int16_t q14_of(float x, float inv)
{
    return inv == 0 ? 0 : round_q14(x * inv);
}

void wk_q14_pack(int64_t m, int64_t k, const float *a, int64_t lda, void *dst, int16_t **pw, float **sw)
{
    assert(k % WK_Q14_BLOCK == 0);
    const int64_t rows = (m + WK_Q14_PANEL - 1) / WK_Q14_PANEL * WK_Q14_PANEL;
    int16_t *p = dst;
    float *s = (float *)((char *)dst + (((size_t)rows * (size_t)k * 2 + 63) & ~(size_t)63));
    for (int64_t i = 0; i < rows; i++) {
        /* row i's column l at panel i / 32, pair l / 2, half (i % 32) / 16 */
        int16_t *q = p + (i / 32) * 32 * k + 32 * ((i % 32) / 16) + 2 * (i % 16);
        if (i >= m) {
            for (int64_t l = 0; l < k; l++) q[64 * (l / 2) + l % 2] = 0;
            s[i] = 0;
            continue;
        }
        float inv;
        s[i] = run_scale(k, a + i * lda, &inv);
        for (int64_t l = 0; l < k; l++) q[64 * (l / 2) + l % 2] = q14_of(a[i * lda + l], inv);
    }
    *pw = p, *sw = s;
}

void wk__q14_quantize_ref(int64_t n_rows, int64_t k, const float *x, int64_t ldx, int16_t *xq, int64_t ldq, float *sx,
                          int64_t lds)
{
    for (int64_t j = 0; j < n_rows; j++)
        for (int64_t b = 0; b < k / WK_Q14_BLOCK; b++) {
            const float *v = x + j * ldx + b * WK_Q14_BLOCK;
            float inv;
            sx[j * lds + b] = run_scale(WK_Q14_BLOCK, v, &inv);
            for (int l = 0; l < WK_Q14_BLOCK; l++) xq[j * ldq + b * WK_Q14_BLOCK + l] = q14_of(v[l], inv);
        }
}

void wk__gemm_q14_ref(int64_t m, int64_t n, int64_t k, const int16_t *pw, const float *sw, const int16_t *xq,
                      int64_t ldq, const float *sx, int64_t lds, float *c, int64_t ldc)
{
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            const int16_t *q = pw + (i / 32) * 32 * k + 32 * ((i % 32) / 16) + 2 * (i % 16);
            float acc = 0;
            for (int64_t b = 0; b < k / WK_Q14_BLOCK; b++) {
                int32_t S = 0;
                for (int64_t l = b * WK_Q14_BLOCK; l < (b + 1) * WK_Q14_BLOCK; l++)
                    S += (int32_t)q[64 * (l / 2) + l % 2] * xq[j * ldq + l];
                acc = fmaf((float)S, sx[j * lds + b], acc);
            }
            c[j * ldc + i] = acc * sw[i];
        }
}
