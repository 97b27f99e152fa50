/*
 * ops.c - small elementwise operators of the forward pass, in plain C.
 * They touch O(n_embd) floats per token, so they are not where decode time
 * goes; they are written without calls or branches in their loops so the
 * compiler vectorises them for the baseline ISA. The activations use
 * wk_expf, an exp accurate to about 2 ulp (range reduction by ln 2 split
 * in two parts, a degree-6 polynomial; Cody & Waite 1980), instead of
 * libm's expf/tanhf, which do not vectorise and cost ~7% of a prefill.
 *
 * RMSNorm, the GLU activations and softmax are in ops_template.h, which
 * this file compiles for the baseline ISA (the wk_ functions, also the
 * reference table's entries) and the AVX2 and AVX-512 folders compile
 * again with their flags (the table's rms_norm, geglu, swiglu, softmax).
 */
#include "wk_cpu.h"

#include <math.h>
#include <string.h>

#define WK_OPS_NAME(x) wk_##x
#include "ops_template.h"

/* wk_expf's clamp (wk_cpu.h): into the range where 2^k stays a normal float */
const float wk__expf_lo = -87.3f, wk__expf_hi = 88.3f;

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
