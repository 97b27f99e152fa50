/*
 * ops.c - small elementwise operators of the forward pass, in plain C.
 * They touch O(n_embd) floats per token, so they are not where decode time
 * goes; the compiler vectorises them for the baseline ISA.
 */
#include "wk_cpu.h"

#include <math.h>

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

static inline float gelu_tanh(float z)
{
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * z * (1.0f + tanhf(k * (z + 0.044715f * z * z * z)));
}

void wk_geglu(int64_t n, float *x, const float *up)
{
    for (int64_t i = 0; i < n; i++) x[i] = gelu_tanh(x[i]) * up[i];
}

void wk_swiglu(int64_t n, float *x, const float *up)
{
    for (int64_t i = 0; i < n; i++) x[i] = x[i] / (1.0f + expf(-x[i])) * up[i];
}

void wk_softmax(int64_t n, float *x)
{
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mx = fmaxf(mx, x[i]);
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
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
