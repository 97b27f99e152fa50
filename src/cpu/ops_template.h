/*
 * ops_template.h - RMSNorm, GEGLU, SwiGLU, GELU (erf) and softmax, written once and
 * compiled per ISA: by ops.c for the baseline (names wk_*), and by
 * arch/x86/avx2/ops_avx2.c and arch/x86/avx512/ops_avx512.c with their
 * -m flags, where the compiler vectorises the same loops 8 or 16 wide.
 * The includer defines WK_OPS_NAME(x), the name of each function.
 *
 * Every ISA computes the same operations in the same order (elementwise
 * loops; sums kept in 16 float lanes, element i in lane i % 16, then
 * added in double in lane order; the build never contracts a * b + c into
 * an FMA, -std=c11), so all three give bit-identical results, which
 * test-cpu checks.
 */
#include "wk_cpu.h"

#include <math.h>
#include <stdbool.h>

/* What ops_sum16 adds up per element. */
enum ops_term { OPS_X, OPS_X2, OPS_EXP };

/* sum of x[i], x[i]^2 or exp(x[i] - mx): 16 float lanes (element i in lane
 * i % 16), then the lanes in double. term is a constant at every call, so
 * each use compiles to its own vectorised loop. */
static inline __attribute__((always_inline)) double WK_OPS_NAME(ops_sum16)(int64_t n, const float *x,
                                                                        const enum ops_term term,
                                                                        float mx)
{
#define OPS_TERM(v) (term == OPS_X ? (v) : term == OPS_X2 ? (v) * (v) : wk_expf((v) - mx))
    float acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) /* whole rows of 16: the vectorised part */
        for (int j = 0; j < 16; j++) acc[j] += OPS_TERM(x[i + j]);
    for (int j = 0; i + j < n; j++) acc[j] += OPS_TERM(x[i + j]);
#undef OPS_TERM
    double s = 0;
    for (int j = 0; j < 16; j++) s += acc[j];
    return s;
}

void WK_OPS_NAME(rms_norm)(int64_t n, const float *x, const float *g, float eps, float *y)
{
    const double ss = WK_OPS_NAME(ops_sum16)(n, x, OPS_X2, 0);
    const float scale = (float)(1.0 / sqrt(ss / (double)n + eps));
    if (g) {
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale * g[i];
    } else {
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale;
    }
}

void WK_OPS_NAME(geglu)(int64_t n, float *x, const float *up)
{
    /* gelu_tanh(z) = z/2 (1 + tanh y) = z · sigmoid(2y), y = sqrt(2/pi)(z + 0.044715 z^3) */
    const float k2 = 2 * 0.7978845608028654f;
    for (int64_t i = 0; i < n; i++) {
        float z = x[i];
        x[i] = z / (1.0f + wk_expf(-k2 * (z + 0.044715f * z * z * z))) * up[i];
    }
}

/* erf(x) by Abramowitz & Stegun 7.1.26: 1 - (a1 t + ... + a5 t^5) e^(-x^2),
 * t = 1 / (1 + p |x|), odd; |error| <= 1.5e-7 (well under f32's rounding of
 * GELU's other terms), and branch-free, so the GELU loop vectorises (libm's
 * erff was a sixth of a BERT forward's time). */
static inline __attribute__((always_inline)) float WK_OPS_NAME(erf_as)(float x)
{
    const float ax = fabsf(x), t = 1.0f / (1.0f + 0.3275911f * ax);
    const float poly = ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t +
                        0.254829592f) * t;
    return copysignf(1.0f - poly * wk_expf(-ax * ax), x);
}

void WK_OPS_NAME(gelu_erf)(int64_t n, float *x, const float *bias)
{
    if (bias)
        for (int64_t i = 0; i < n; i++) x[i] += bias[i];
    for (int64_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + WK_OPS_NAME(erf_as)(x[i] * (float)M_SQRT1_2));
}

void WK_OPS_NAME(swiglu)(int64_t n, float *x, const float *up)
{
    for (int64_t i = 0; i < n; i++) x[i] = x[i] / (1.0f + wk_expf(-x[i])) * up[i];
}

/* The largest x[i] (-inf for none; NaNs skipped), in 16 lanes (element i
 * in lane i % 16) and then across them: one running maximum was a chain
 * of dependent compares, 67% of the softmax of a prefill's attention
 * rows. The same value as one pass in order (a maximum does not depend on
 * the order), but for the sign of a zero where +0 and -0 tie. */
float WK_OPS_NAME(max_f32)(int64_t n, const float *x)
{
    float m[16];
    for (int j = 0; j < 16; j++) m[j] = -INFINITY;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) m[j] = x[i + j] > m[j] ? x[i + j] : m[j]; /* no libm call */
    for (int j = 0; i + j < n; j++) m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
    float mx = -INFINITY;
    for (int j = 0; j < 16; j++) mx = m[j] > mx ? m[j] : mx;
    return mx;
}

void WK_OPS_NAME(softmax)(int64_t n, float *x)
{
    const float mx = WK_OPS_NAME(max_f32)(n, x);
    for (int64_t i = 0; i < n; i++) x[i] = wk_expf(x[i] - mx);
    const float inv = (float)(1.0 / WK_OPS_NAME(ops_sum16)(n, x, OPS_X, 0));
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

double WK_OPS_NAME(sum_exp)(int64_t n, const float *x, float mx)
{
    return WK_OPS_NAME(ops_sum16)(n, x, OPS_EXP, mx);
}
