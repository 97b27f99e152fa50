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
 * i % 16), then the lanes in double; where out is not NULL each term is
 * also stored in out[i] (out may be x). term is a constant at every call,
 * and out NULL or not, so each use compiles to its own vectorised loop. */
static inline __attribute__((always_inline)) double WK_OPS_NAME(ops_sum16)(int64_t n, const float *x,
                                                                        const enum ops_term term,
                                                                        float mx, float *out)
{
#define OPS_TERM(v) (term == OPS_X ? (v) : term == OPS_X2 ? (v) * (v) : wk_expf((v) - mx))
    float acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) /* whole rows of 16: the vectorised part */
        for (int j = 0; j < 16; j++) {
            const float t = OPS_TERM(x[i + j]);
            if (out) out[i + j] = t;
            acc[j] += t;
        }
    for (int j = 0; i + j < n; j++) {
        const float t = OPS_TERM(x[i + j]);
        if (out) out[i + j] = t;
        acc[j] += t;
    }
#undef OPS_TERM
    double s = 0;
    for (int j = 0; j < 16; j++) s += acc[j];
    return s;
}

void WK_OPS_NAME(rms_norm)(int64_t n, const float *x, const float *g, float eps, float *y)
{
    const double ss = WK_OPS_NAME(ops_sum16)(n, x, OPS_X2, 0, NULL);
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

/* The softmax's entries e / sum become exact zeros where e < FLT_MIN·sum
 * (wk_softmax_floor): their quotient would be subnormal, below anything an
 * f32 sum of a row's products can keep beside the row's largest entry
 * (at least 1/n), and on Intel cores every multiply or FMA with a subnormal
 * operand or result takes a microcode assist: a causal prefill's masked
 * scores (e^-87.3 from wk_expf's clamp) made the P·V products of SmolLM2's
 * attention take a quarter of its prompt time. */
void WK_OPS_NAME(softmax)(int64_t n, float *x)
{
    const float mx = WK_OPS_NAME(max_f32)(n, x);
    const double s = WK_OPS_NAME(ops_sum16)(n, x, OPS_EXP, mx, x); /* the exponentials, stored and summed */
    const float inv = (float)(1.0 / s), floor = wk_softmax_floor(s);
    for (int64_t i = 0; i < n; i++) x[i] = x[i] < floor ? 0.0f : x[i] * inv;
}

double WK_OPS_NAME(sum_exp)(int64_t n, const float *x, float mx)
{
    return WK_OPS_NAME(ops_sum16)(n, x, OPS_EXP, mx, NULL);
}

/* softmax of x [n] (n16 = n rounded up to 16 floats of room) in whole
 * vectors of 16: the max in 16 lanes, the exponentials' sum in 16 float
 * lanes then in double, as WK_OPS_NAME(softmax) computes them (element j in
 * lane j % 16: the same value, the same floor), entries n .. n16 - 1 left 0. (Rows of a
 * short sequence are shorter than a vector: the generic loops would run
 * their scalar remainders.) */
static inline __attribute__((always_inline)) void WK_OPS_NAME(softmax16)(int64_t n, int64_t n16, float *x)
{
    float m[16], s[16];
    for (int l = 0; l < 16; l++) m[l] = -INFINITY, s[l] = 0.0f;
    for (int64_t jb = 0; jb < n16; jb += 16)
        for (int l = 0; l < 16; l++) {
            const float v = jb + l < n ? x[jb + l] : -INFINITY;
            m[l] = v > m[l] ? v : m[l];
        }
    float mx = -INFINITY;
    for (int l = 0; l < 16; l++) mx = m[l] > mx ? m[l] : mx;
    for (int64_t jb = 0; jb < n16; jb += 16)
        for (int l = 0; l < 16; l++) {
            const float e = jb + l < n ? wk_expf(x[jb + l] - mx) : 0.0f;
            x[jb + l] = e;
            s[l] += e;
        }
    double t = 0;
    for (int l = 0; l < 16; l++) t += s[l];
    const float inv = (float)(1.0 / t), floor = wk_softmax_floor(t);
    for (int64_t j = 0; j < n16; j++) x[j] = x[j] < floor ? 0.0f : x[j] * inv;
}

/* One head's bidirectional attention (wk_attn_f32 in wk_cpu.h): k
 * transposed into scratch with zeros past n, so that each score is summed
 * over e in order for 16 positions j at once; each output element over j
 * in order. Four rows of q at a time (a last block repeats row n - 1 and
 * drops it), four independent chains of additions. No reordering
 * anywhere: the same bits on every ISA. */
void WK_OPS_NAME(attn_f32)(int64_t n, int64_t D, const float *q, const float *k, const float *v, int64_t ld,
                           float scale, float *out, int64_t ldo, float *scratch)
{
    const int64_t n16 = (n + 15) & ~(int64_t)15;
    float *kt = scratch, *p = scratch + D * n16; /* p: [4][n16] */
    for (int64_t e = 0; e < D; e++) {
        float *row = kt + e * n16;
        for (int64_t j = 0; j < n; j++) row[j] = k[j * ld + e];
        for (int64_t j = n; j < n16; j++) row[j] = 0.0f;
    }
    for (int64_t i = 0; i < n; i += 4) {
        const float *qr[4];
        for (int r = 0; r < 4; r++) qr[r] = q + (i + r < n ? i + r : n - 1) * ld;
        for (int64_t jb = 0; jb < n16; jb += 16) {
            float acc[4][16];
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
                for (int l = 0; l < 16; l++) acc[r][l] = 0.0f;
            for (int64_t e = 0; e < D; e++) {
                const float *kr = kt + e * n16 + jb;
                _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
                    const float qe = qr[r][e];
                    for (int l = 0; l < 16; l++) acc[r][l] += qe * kr[l];
                }
            }
            for (int r = 0; r < 4; r++)
                for (int l = 0; l < 16; l++) p[r * n16 + jb + l] = acc[r][l] * scale;
        }
        for (int r = 0; r < 4; r++) WK_OPS_NAME(softmax16)(n, n16, p + r * n16);
        for (int64_t eb = 0; eb < D; eb += 16) {
            float acc[4][16];
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
                for (int l = 0; l < 16; l++) acc[r][l] = 0.0f;
            for (int64_t j = 0; j < n; j++) {
                const float *vr = v + j * ld + eb;
                _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
                    const float pj = p[r * n16 + j];
                    for (int l = 0; l < 16; l++) acc[r][l] += pj * vr[l];
                }
            }
            for (int r = 0; r < 4 && i + r < n; r++)
                for (int l = 0; l < 16; l++) out[(i + r) * ldo + eb + l] = acc[r][l];
        }
    }
}
