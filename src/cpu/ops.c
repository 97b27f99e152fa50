/*
 * ops.c - small elementwise operators of the forward pass, in plain C.
 * They touch O(n_embd) floats per token, so they are not where decode time
 * goes; they are written without calls or branches in their loops so the
 * compiler vectorises them for the baseline ISA. The activations use
 * wk_expf, an exp accurate to about 2 ulp (range reduction by ln 2 split
 * in two parts, a degree-6 polynomial; Cody & Waite 1980), instead of
 * libm's expf/tanhf, which do not vectorise and cost ~7% of a prefill.
 */
#include "wk_cpu.h"

#include <math.h>
#include <string.h>

void wk_rms_norm(int64_t n, const float *x, const float *g, float eps, float *y)
{
    double ss = 0; /* double: the mean of squares of a few thousand floats */
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float scale = (float)(1.0 / sqrt(ss / (double)n + eps));
    if (g) {
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale * g[i];
    } else {
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale;
    }
}

void wk_geglu(int64_t n, float *x, const float *up)
{
    /* gelu_tanh(z) = z/2 (1 + tanh y) = z · sigmoid(2y), y = sqrt(2/pi)(z + 0.044715 z^3) */
    const float k2 = 2 * 0.7978845608028654f;
    for (int64_t i = 0; i < n; i++) {
        float z = x[i];
        x[i] = z / (1.0f + wk_expf(-k2 * (z + 0.044715f * z * z * z))) * up[i];
    }
}

void wk_swiglu(int64_t n, float *x, const float *up)
{
    for (int64_t i = 0; i < n; i++) x[i] = x[i] / (1.0f + wk_expf(-x[i])) * up[i];
}

void wk_softmax(int64_t n, float *x)
{
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx; /* no libm call */
    double sum = 0;
    for (int64_t i = 0; i < n; i++) x[i] = wk_expf(x[i] - mx);
    for (int64_t i = 0; i < n; i++) sum += x[i];
    float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

void wk_rope_cos_sin(int64_t pos, int n_rot, float base, float freq_scale,
                     const float *freq_factors, float *cos_sin)
{
    int half = n_rot / 2;
    for (int i = 0; i < half; i++) {
        double theta = (double)pos * freq_scale * pow((double)base, -2.0 * i / n_rot);
        if (freq_factors) theta /= freq_factors[i];
        cos_sin[i] = (float)cos(theta);
        cos_sin[half + i] = (float)sin(theta);
    }
}

void wk_rope_apply(float *x, int n_heads, int head_dim, int n_rot, const float *cos_sin,
                   enum wk_rope_mode mode)
{
    int half = n_rot / 2;
    const float *c = cos_sin, *s = cos_sin + half;
    for (int h = 0; h < n_heads; h++) {
        float *v = x + (int64_t)h * head_dim;
        if (mode == WK_ROPE_NEOX) {
            for (int i = 0; i < half; i++) {
                float a = v[i], b = v[i + half];
                v[i] = a * c[i] - b * s[i];
                v[i + half] = a * s[i] + b * c[i];
            }
        } else {
            for (int i = 0; i < half; i++) {
                float a = v[2 * i], b = v[2 * i + 1];
                v[2 * i] = a * c[i] - b * s[i];
                v[2 * i + 1] = a * s[i] + b * c[i];
            }
        }
    }
}
