/*
 * quant_ref.c - reference (plain C) dequantization, quantization and dot
 * products for every block type wick computes with.
 *
 * These define the arithmetic; SIMD kernels must match them (integer parts
 * exactly, float sums within rounding). The block formats are those of the
 * GGUF specification and of ggml's reference implementation
 * (ggml/src/ggml-quants.c), which was read to learn the formats; the code
 * here is written from those descriptions.
 *
 Dot-product conventions. With f32 activations (_f32): each block is
 * dequantized exactly as to_f32 does and its products are added to one
 * float accumulator in element order. With quantized activations: per
 * block, the integer products are summed exactly in int32, then scaled by
 * the block's float factors and added to a float accumulator in block
 * order.
 */
#include "wk_tensor.h"

#include <math.h>
#include <string.h>

#define F16(x) wk_f16_to_f32(x)

/* ------------------------------------------------------------ plain types */

void wk_ref_f32_to_f32(const void *src, float *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void wk_ref_f16_to_f32(const void *src, float *dst, int64_t n)
{
    const wk_f16 *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = wk_f16_to_f32(s[i]);
}

void wk_ref_bf16_to_f32(const void *src, float *dst, int64_t n)
{
    const wk_bf16 *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = wk_bf16_to_f32(s[i]);
}

void wk_ref_f32_from_f32(const float *src, void *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void wk_ref_f16_from_f32(const float *src, void *dst, int64_t n)
{
    wk_f16 *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = wk_f32_to_f16(src[i]);
}

void wk_ref_bf16_from_f32(const float *src, void *dst, int64_t n)
{
    wk_bf16 *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = wk_f32_to_bf16(src[i]);
}

float wk_ref_vec_dot_f32_f32(int64_t n, const void *w, const void *x)
{
    const float *a = w, *b = x;
    float s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

float wk_ref_vec_dot_f16_f32(int64_t n, const void *w, const void *x)
{
    const wk_f16 *a = w;
    const float *b = x;
    float s = 0;
    for (int64_t i = 0; i < n; i++) s += wk_f16_to_f32(a[i]) * b[i];
    return s;
}

float wk_ref_vec_dot_bf16_f32(int64_t n, const void *w, const void *x)
{
    const wk_bf16 *a = w;
    const float *b = x;
    float s = 0;
    for (int64_t i = 0; i < n; i++) s += wk_bf16_to_f32(a[i]) * b[i];
    return s;
}

/* ------------------------------------------------------ 32-element blocks */

/* 5-bit value of element j (0..31) of a Q5_0/Q5_1 block. */
static inline int q5_value(const uint8_t *qs, uint32_t qh, int j)
{
    int lo = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
    return lo | (int)(((qh >> j) & 1) << 4);
}

void wk_ref_q4_0_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q4_0 *b = src;
    for (int64_t i = 0; i < n / 32; i++) {
        float d = F16(b[i].d);
        for (int j = 0; j < 16; j++) {
            dst[i * 32 + j] = ((b[i].qs[j] & 0xF) - 8) * d;
            dst[i * 32 + j + 16] = ((b[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void wk_ref_q4_1_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q4_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++) {
        float d = F16(b[i].d), m = F16(b[i].m);
        for (int j = 0; j < 16; j++) {
            dst[i * 32 + j] = (b[i].qs[j] & 0xF) * d + m;
            dst[i * 32 + j + 16] = (b[i].qs[j] >> 4) * d + m;
        }
    }
}

void wk_ref_q5_0_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q5_0 *b = src;
    for (int64_t i = 0; i < n / 32; i++) {
        float d = F16(b[i].d);
        uint32_t qh;
        memcpy(&qh, b[i].qh, 4);
        for (int j = 0; j < 32; j++) dst[i * 32 + j] = (q5_value(b[i].qs, qh, j) - 16) * d;
    }
}

void wk_ref_q5_1_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q5_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++) {
        float d = F16(b[i].d), m = F16(b[i].m);
        uint32_t qh;
        memcpy(&qh, b[i].qh, 4);
        for (int j = 0; j < 32; j++) dst[i * 32 + j] = q5_value(b[i].qs, qh, j) * d + m;
    }
}

void wk_ref_q8_0_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / 32; i++) {
        float d = F16(b[i].d);
        for (int j = 0; j < 32; j++) dst[i * 32 + j] = b[i].qs[j] * d;
    }
}

void wk_ref_q8_1_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q8_1 *b = src;
    for (int64_t i = 0; i < n / 32; i++) {
        float d = F16(b[i].d);
        for (int j = 0; j < 32; j++) dst[i * 32 + j] = b[i].qs[j] * d;
    }
}

/* Symmetric 8-bit quantization of 32 values: d = max|x| / 127. Returns d
 * and fills q; *sum gets the sum of q. */
static float quantize_32_sym8(const float *x, int8_t *q, int *sum)
{
    float amax = 0;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127.0f;
    float id = d != 0 ? 1.0f / d : 0.0f;
    if (!isfinite(id)) id = 0.0f; /* amax below ~4e-37: 1/d overflows; quantize to 0 */
    int s = 0;
    for (int j = 0; j < 32; j++) {
        q[j] = (int8_t)lrintf(x[j] * id); /* round half to even, as SIMD rounds */
        s += q[j];
    }
    *sum = s;
    return d;
}

void wk_ref_q8_0_from_f32(const float *src, void *dst, int64_t n)
{
    struct wk_block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / 32; i++) {
        int sum;
        b[i].d = wk_f32_to_f16(quantize_32_sym8(src + i * 32, b[i].qs, &sum));
    }
}

void wk_ref_q8_1_from_f32(const float *src, void *dst, int64_t n)
{
    struct wk_block_q8_1 *b = dst;
    for (int64_t i = 0; i < n / 32; i++) {
        int sum;
        float d = quantize_32_sym8(src + i * 32, b[i].qs, &sum);
        b[i].d = wk_f32_to_f16(d);
        b[i].s = wk_f32_to_f16(d * (float)sum);
    }
}

void wk_ref_q4_0_from_f32(const float *src, void *dst, int64_t n)
{
    struct wk_block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / 32; i++) {
        const float *x = src + i * 32;
        float amax = 0, max = 0; /* the value of largest magnitude, with sign */
        for (int j = 0; j < 32; j++)
            if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
        float d = max / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = wk_f32_to_f16(d);
        for (int j = 0; j < 16; j++) {
            int q0 = (int)fminf(15.0f, floorf(x[j] * id + 8.5f));
            int q1 = (int)fminf(15.0f, floorf(x[j + 16] * id + 8.5f));
            b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void wk_ref_q4_1_from_f32(const float *src, void *dst, int64_t n)
{
    struct wk_block_q4_1 *b = dst;
    for (int64_t i = 0; i < n / 32; i++) {
        const float *x = src + i * 32;
        float mn = x[0], mx = x[0];
        for (int j = 1; j < 32; j++) mn = fminf(mn, x[j]), mx = fmaxf(mx, x[j]);
        float d = (mx - mn) / 15.0f, id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = wk_f32_to_f16(d);
        b[i].m = wk_f32_to_f16(mn);
        for (int j = 0; j < 16; j++) {
            int q0 = (int)fminf(15.0f, floorf((x[j] - mn) * id + 0.5f));
            int q1 = (int)fminf(15.0f, floorf((x[j + 16] - mn) * id + 0.5f));
            b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void wk_ref_q5_0_from_f32(const float *src, void *dst, int64_t n)
{
    struct wk_block_q5_0 *b = dst;
    for (int64_t i = 0; i < n / 32; i++) {
        const float *x = src + i * 32;
        float amax = 0, max = 0;
        for (int j = 0; j < 32; j++)
            if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
        float d = max / -16.0f, id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = wk_f32_to_f16(d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            int q0 = (int)fminf(31.0f, floorf(x[j] * id + 16.5f));
            int q1 = (int)fminf(31.0f, floorf(x[j + 16] * id + 16.5f));
            b[i].qs[j] = (uint8_t)((q0 & 0xF) | ((q1 & 0xF) << 4));
            qh |= (uint32_t)((q0 >> 4) & 1) << j;
            qh |= (uint32_t)((q1 >> 4) & 1) << (j + 16);
        }
        memcpy(b[i].qh, &qh, 4);
    }
}

void wk_ref_q5_1_from_f32(const float *src, void *dst, int64_t n)
{
    struct wk_block_q5_1 *b = dst;
    for (int64_t i = 0; i < n / 32; i++) {
        const float *x = src + i * 32;
        float mn = x[0], mx = x[0];
        for (int j = 1; j < 32; j++) mn = fminf(mn, x[j]), mx = fmaxf(mx, x[j]);
        float d = (mx - mn) / 31.0f, id = d != 0 ? 1.0f / d : 0.0f;
        b[i].d = wk_f32_to_f16(d);
        b[i].m = wk_f32_to_f16(mn);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            int q0 = (int)fminf(31.0f, floorf((x[j] - mn) * id + 0.5f));
            int q1 = (int)fminf(31.0f, floorf((x[j + 16] - mn) * id + 0.5f));
            b[i].qs[j] = (uint8_t)((q0 & 0xF) | ((q1 & 0xF) << 4));
            qh |= (uint32_t)((q0 >> 4) & 1) << j;
            qh |= (uint32_t)((q1 >> 4) & 1) << (j + 16);
        }
        memcpy(b[i].qh, &qh, 4);
    }
}

float wk_ref_vec_dot_q4_0_q8_0(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q4_0 *a = w;
    const struct wk_block_q8_0 *b = x;
    float s = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        int sum = 0;
        for (int j = 0; j < 16; j++) {
            sum += ((a[i].qs[j] & 0xF) - 8) * b[i].qs[j];
            sum += ((a[i].qs[j] >> 4) - 8) * b[i].qs[j + 16];
        }
        s += (float)sum * (F16(a[i].d) * F16(b[i].d));
    }
    return s;
}

float wk_ref_vec_dot_q4_1_q8_1(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q4_1 *a = w;
    const struct wk_block_q8_1 *b = x;
    float s = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        int sum = 0;
        for (int j = 0; j < 16; j++) {
            sum += (a[i].qs[j] & 0xF) * b[i].qs[j];
            sum += (a[i].qs[j] >> 4) * b[i].qs[j + 16];
        }
        s += (float)sum * (F16(a[i].d) * F16(b[i].d)) + F16(a[i].m) * F16(b[i].s);
    }
    return s;
}

float wk_ref_vec_dot_q5_0_q8_0(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q5_0 *a = w;
    const struct wk_block_q8_0 *b = x;
    float s = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        uint32_t qh;
        memcpy(&qh, a[i].qh, 4);
        int sum = 0;
        for (int j = 0; j < 32; j++) sum += (q5_value(a[i].qs, qh, j) - 16) * b[i].qs[j];
        s += (float)sum * (F16(a[i].d) * F16(b[i].d));
    }
    return s;
}

float wk_ref_vec_dot_q5_1_q8_1(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q5_1 *a = w;
    const struct wk_block_q8_1 *b = x;
    float s = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        uint32_t qh;
        memcpy(&qh, a[i].qh, 4);
        int sum = 0;
        for (int j = 0; j < 32; j++) sum += q5_value(a[i].qs, qh, j) * b[i].qs[j];
        s += (float)sum * (F16(a[i].d) * F16(b[i].d)) + F16(a[i].m) * F16(b[i].s);
    }
    return s;
}

float wk_ref_vec_dot_q8_0_q8_0(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q8_0 *a = w;
    const struct wk_block_q8_0 *b = x;
    float s = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        int sum = 0;
        for (int j = 0; j < 32; j++) sum += a[i].qs[j] * b[i].qs[j];
        s += (float)sum * (F16(a[i].d) * F16(b[i].d));
    }
    return s;
}

/* ------------------------------------------------------------- K-quants */

void wk_ref_q8_k_from_f32(const float *src, void *dst, int64_t n)
{
    struct wk_block_q8_k *b = dst;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const float *x = src + i * WK_QK_K;
        float amax = 0, max = 0;
        for (int j = 0; j < WK_QK_K; j++)
            if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
        if (amax == 0) {
            memset(&b[i], 0, sizeof b[i]);
            continue;
        }
        float iscale = -127.0f / max;
        if (!isfinite(iscale)) { /* |max| below ~7e-37: quantize to 0 */
            memset(&b[i], 0, sizeof b[i]);
            continue;
        }
        for (int j = 0; j < WK_QK_K; j++) {
            int v = (int)lrintf(iscale * x[j]);
            b[i].qs[j] = (int8_t)(v > 127 ? 127 : v);
        }
        for (int g = 0; g < WK_QK_K / 16; g++) {
            int s = 0;
            for (int j = 0; j < 16; j++) s += b[i].qs[g * 16 + j];
            b[i].bsums[g] = (int16_t)s;
        }
        b[i].d = 1.0f / iscale;
    }
}

void wk_ref_q8_k_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q8_k *b = src;
    for (int64_t i = 0; i < n / WK_QK_K; i++)
        for (int j = 0; j < WK_QK_K; j++) dst[i * WK_QK_K + j] = b[i].d * b[i].qs[j];
}

/* 4-bit value of element l (0..255) of a Q4_K/Q5_K qs array. */
static inline int q4k_nibble(const uint8_t *qs, int l)
{
    int g = l / 64, r = l % 64;
    uint8_t byte = qs[g * 32 + (r % 32)];
    return r < 32 ? (byte & 0xF) : (byte >> 4);
}

/* Fifth bit of element l of a Q5_K block. */
static inline int q5k_high(const uint8_t *qh, int l)
{
    int g = l / 64, r = l % 64;
    int bit = 2 * g + (r < 32 ? 0 : 1);
    return (qh[r % 32] >> bit) & 1;
}

void wk_ref_q4_k_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q4_k *b = src;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float d = F16(b[i].d), dmin = F16(b[i].dmin);
        for (int l = 0; l < WK_QK_K; l++) {
            uint8_t sc, m;
            wk_q4_k_scale_min(l / 32, b[i].scales, &sc, &m);
            dst[i * WK_QK_K + l] = d * sc * q4k_nibble(b[i].qs, l) - dmin * m;
        }
    }
}

void wk_ref_q5_k_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q5_k *b = src;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float d = F16(b[i].d), dmin = F16(b[i].dmin);
        for (int l = 0; l < WK_QK_K; l++) {
            uint8_t sc, m;
            wk_q4_k_scale_min(l / 32, b[i].scales, &sc, &m);
            int q = q4k_nibble(b[i].qs, l) | (q5k_high(b[i].qh, l) << 4);
            dst[i * WK_QK_K + l] = d * sc * q - dmin * m;
        }
    }
}

/* 6-bit value (0..63) of element l of a Q6_K block: 128-element halves h,
 * in each four 32-element quarters r drawing nibbles from ql and 2 bits
 * from qh. */
static inline int q6k_value(const struct wk_block_q6_k *b, int l)
{
    int h = l / 128, r = l % 128, quarter = r / 32, k = r % 32;
    const uint8_t *ql = b->ql + h * 64, *qh = b->qh + h * 32;
    int lo = quarter & 1 ? 32 : 0;
    int nib = quarter < 2 ? (ql[k + lo] & 0xF) : (ql[k + lo] >> 4);
    int hi = (qh[k] >> (2 * quarter)) & 3;
    return nib | (hi << 4);
}

void wk_ref_q6_k_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q6_k *b = src;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float d = F16(b[i].d);
        for (int l = 0; l < WK_QK_K; l++)
            dst[i * WK_QK_K + l] = d * b[i].scales[l / 16] * (q6k_value(&b[i], l) - 32);
    }
}

float wk_ref_vec_dot_q4_k_q8_k(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q4_k *a = w;
    const struct wk_block_q8_k *b = x;
    float s = 0;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        int32_t sumi = 0, summ = 0;
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            wk_q4_k_scale_min(j, a[i].scales, &sc, &m);
            int32_t dot = 0;
            for (int l = j * 32; l < j * 32 + 32; l++) dot += q4k_nibble(a[i].qs, l) * b[i].qs[l];
            sumi += sc * dot;
            summ += m * (b[i].bsums[2 * j] + b[i].bsums[2 * j + 1]);
        }
        s += b[i].d * F16(a[i].d) * (float)sumi - b[i].d * F16(a[i].dmin) * (float)summ;
    }
    return s;
}

float wk_ref_vec_dot_q5_k_q8_k(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q5_k *a = w;
    const struct wk_block_q8_k *b = x;
    float s = 0;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        int32_t sumi = 0, summ = 0;
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            wk_q4_k_scale_min(j, a[i].scales, &sc, &m);
            int32_t dot = 0;
            for (int l = j * 32; l < j * 32 + 32; l++)
                dot += (q4k_nibble(a[i].qs, l) | (q5k_high(a[i].qh, l) << 4)) * b[i].qs[l];
            sumi += sc * dot;
            summ += m * (b[i].bsums[2 * j] + b[i].bsums[2 * j + 1]);
        }
        s += b[i].d * F16(a[i].d) * (float)sumi - b[i].d * F16(a[i].dmin) * (float)summ;
    }
    return s;
}

float wk_ref_vec_dot_q6_k_q8_k(int64_t n, const void *w, const void *x)
{
    const struct wk_block_q6_k *a = w;
    const struct wk_block_q8_k *b = x;
    float s = 0;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        int32_t sumi = 0;
        for (int j = 0; j < 16; j++) {
            int32_t dot = 0;
            for (int l = j * 16; l < j * 16 + 16; l++) dot += (q6k_value(&a[i], l) - 32) * b[i].qs[l];
            sumi += a[i].scales[j] * dot;
        }
        s += b[i].d * F16(a[i].d) * (float)sumi;
    }
    return s;
}

/* ------------------------------------------- dots with f32 activations */

/* Dequantize one block with the type's reference and accumulate; block
 * sizes are at most 256. */
#define VEC_DOT_F32(name, block_t, qk, deq)                                                        \
    float wk_ref_vec_dot_##name##_f32(int64_t n, const void *w, const void *x)                     \
    {                                                                                              \
        const block_t *b = w;                                                                      \
        const float *xf = x;                                                                       \
        float tmp[256], s = 0;                                                                     \
        for (int64_t i = 0; i < n / (qk); i++) {                                                   \
            deq(&b[i], tmp, (qk));                                                                 \
            for (int j = 0; j < (qk); j++) s += tmp[j] * xf[i * (qk) + j];                         \
        }                                                                                          \
        return s;                                                                                  \
    }

VEC_DOT_F32(q4_0, struct wk_block_q4_0, 32, wk_ref_q4_0_to_f32)
VEC_DOT_F32(q4_1, struct wk_block_q4_1, 32, wk_ref_q4_1_to_f32)
VEC_DOT_F32(q5_0, struct wk_block_q5_0, 32, wk_ref_q5_0_to_f32)
VEC_DOT_F32(q5_1, struct wk_block_q5_1, 32, wk_ref_q5_1_to_f32)
VEC_DOT_F32(q8_0, struct wk_block_q8_0, 32, wk_ref_q8_0_to_f32)
VEC_DOT_F32(q4_k, struct wk_block_q4_k, 256, wk_ref_q4_k_to_f32)
VEC_DOT_F32(q5_k, struct wk_block_q5_k, 256, wk_ref_q5_k_to_f32)
VEC_DOT_F32(q6_k, struct wk_block_q6_k, 256, wk_ref_q6_k_to_f32)

/* ---------------------------------------------------------------- K-quant quantizers
 * Round-to-nearest with min-max (Q4_K) and max-abs (Q6_K) scales per
 * sub-block, the super-block scales chosen so the largest sub-block scale
 * fits; not llama.cpp's iterative error search (make_qkx2_quants), so
 * slightly less accurate, but the same block formats, read back by the
 * to_f32 functions above. */

static uint8_t clamp_u8(float v, int hi)
{
    int q = (int)lrintf(v);
    return (uint8_t)(q < 0 ? 0 : q > hi ? hi : q);
}

void wk_ref_q4_k_from_f32(const float *src, void *dst, int64_t n)
{
    struct wk_block_q4_k *b = dst;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const float *x = src + i * WK_QK_K;
        float scale[8], mins[8], max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; j++) {
            float lo = 0, hi = 0; /* the range always holds 0, so mins >= 0 */
            for (int l = 0; l < 32; l++) {
                lo = fminf(lo, x[32 * j + l]);
                hi = fmaxf(hi, x[32 * j + l]);
            }
            scale[j] = (hi - lo) / 15.0f;
            mins[j] = -lo;
            max_scale = fmaxf(max_scale, scale[j]);
            max_min = fmaxf(max_min, mins[j]);
        }
        b[i].d = wk_f32_to_f16(max_scale / 63.0f);
        b[i].dmin = wk_f32_to_f16(max_min / 63.0f);
        const float d = F16(b[i].d), dmin = F16(b[i].dmin);
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++) {
            sc[j] = d > 0 ? clamp_u8(scale[j] / d, 63) : 0;
            m[j] = dmin > 0 ? clamp_u8(mins[j] / dmin, 63) : 0;
        }
        for (int j = 0; j < 4; j++) {
            b[i].scales[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
            b[i].scales[j + 4] = (uint8_t)((m[j] & 63) | ((m[j + 4] >> 4) << 6));
            b[i].scales[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
        }
        memset(b[i].qs, 0, sizeof b[i].qs);
        for (int l = 0; l < WK_QK_K; l++) {
            int j = l / 32;
            float step = d * sc[j];
            uint8_t q = step > 0 ? clamp_u8((x[l] + dmin * m[j]) / step, 15) : 0;
            int g = l / 64, r = l % 64;
            b[i].qs[g * 32 + r % 32] |= (uint8_t)(r < 32 ? q : q << 4);
        }
    }
}

void wk_ref_q6_k_from_f32(const float *src, void *dst, int64_t n)
{
    struct wk_block_q6_k *b = dst;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const float *x = src + i * WK_QK_K;
        float scale[16], max_scale = 0;
        for (int j = 0; j < 16; j++) {
            float amax = 0;
            for (int l = 0; l < 16; l++) amax = fmaxf(amax, fabsf(x[16 * j + l]));
            scale[j] = amax / 31.0f;
            max_scale = fmaxf(max_scale, scale[j]);
        }
        b[i].d = wk_f32_to_f16(max_scale / 127.0f);
        const float d = F16(b[i].d);
        memset(b[i].ql, 0, sizeof b[i].ql);
        memset(b[i].qh, 0, sizeof b[i].qh);
        for (int j = 0; j < 16; j++) b[i].scales[j] = (int8_t)(d > 0 ? clamp_u8(scale[j] / d, 127) : 0);
        for (int l = 0; l < WK_QK_K; l++) {
            float step = d * b[i].scales[l / 16];
            int q = step > 0 ? (int)lrintf(x[l] / step) : 0;
            q = (q < -32 ? -32 : q > 31 ? 31 : q) + 32;
            int h = l / 128, r = l % 128, quarter = r / 32, k = r % 32;
            uint8_t *ql = b[i].ql + h * 64 + k + (quarter & 1 ? 32 : 0);
            *ql |= (uint8_t)(quarter < 2 ? (q & 0xF) : (q & 0xF) << 4);
            b[i].qh[h * 32 + k] |= (uint8_t)((q >> 4) << (2 * quarter));
        }
    }
}

/* ---------------------------------------------------------------- affine groups */

static inline int i8g64_code(const uint8_t *q, int l) { return q[l]; }
static inline int i4g64_code(const uint8_t *q, int l) { return l & 1 ? q[l / 2] >> 4 : q[l / 2] & 0xF; }

/* to_f32 and the dot with f32 x of an affine-group type:
 * dot = sum over groups of scale * sum(q x) + bias * sum(x) */
#define AFFINE_REF(name, block, code)                                                              \
    void wk_ref_##name##_to_f32(const void *src, float *dst, int64_t n)                            \
    {                                                                                              \
        const struct block *b = src;                                                               \
        for (int64_t i = 0; i < n / WK_QG64; i++) {                                                \
            float s = F16(b[i].scale), z = F16(b[i].bias);                                         \
            for (int l = 0; l < WK_QG64; l++) dst[i * WK_QG64 + l] = s * code(b[i].q, l) + z;      \
        }                                                                                          \
    }                                                                                              \
    float wk_ref_vec_dot_##name##_f32(int64_t n, const void *w, const void *xv)                    \
    {                                                                                              \
        const struct block *b = w;                                                                 \
        const float *x = xv;                                                                       \
        float s = 0;                                                                               \
        for (int64_t i = 0; i < n / WK_QG64; i++) {                                                \
            float qx = 0, sx = 0;                                                                  \
            for (int l = 0; l < WK_QG64; l++)                                                      \
                qx += code(b[i].q, l) * x[i * WK_QG64 + l], sx += x[i * WK_QG64 + l];              \
            s += F16(b[i].scale) * qx + F16(b[i].bias) * sx;                                       \
        }                                                                                          \
        return s;                                                                                  \
    }
AFFINE_REF(i8g64, wk_block_i8g64, i8g64_code)
AFFINE_REF(i4g64, wk_block_i4g64, i4g64_code)

/* The group's scale and bias for `levels` + 1 codes, as f16 (the values
 * the codes are then rounded against). */
static void affine_params(const float *x, int levels, wk_f16 *scale, wk_f16 *bias)
{
    float lo = x[0], hi = x[0];
    for (int l = 1; l < WK_QG64; l++) lo = fminf(lo, x[l]), hi = fmaxf(hi, x[l]);
    *scale = wk_f32_to_f16((hi - lo) / (float)levels);
    *bias = wk_f32_to_f16(lo);
}

static uint8_t affine_code(float x, float s, float z, int levels)
{
    return s > 0 ? clamp_u8((x - z) / s, levels) : 0;
}

static inline void i8g64_put(uint8_t *q, int l, uint8_t c) { q[l] = c; }
static inline void i4g64_put(uint8_t *q, int l, uint8_t c) { q[l / 2] |= (uint8_t)(c << (l & 1 ? 4 : 0)); }

#define AFFINE_FROM(name, block, levels, put)                                                      \
    void wk_ref_##name##_from_f32(const float *src, void *dst, int64_t n)                          \
    {                                                                                              \
        struct block *b = dst;                                                                     \
        for (int64_t i = 0; i < n / WK_QG64; i++) {                                                \
            const float *x = src + i * WK_QG64;                                                    \
            affine_params(x, levels, &b[i].scale, &b[i].bias);                                     \
            float s = F16(b[i].scale), z = F16(b[i].bias);                                         \
            memset(b[i].q, 0, sizeof b[i].q);                                                      \
            for (int l = 0; l < WK_QG64; l++) put(b[i].q, l, affine_code(x[l], s, z, levels));     \
        }                                                                                          \
    }
AFFINE_FROM(i8g64, wk_block_i8g64, 255, i8g64_put)
AFFINE_FROM(i4g64, wk_block_i4g64, 15, i4g64_put)
