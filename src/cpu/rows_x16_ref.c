/*
 * rows_x16_ref.c - the plain-C reference of the decode dots with 16-bit
 * activations (the table's vec_dot_rows_x16 entries, wk_cpu.h): the
 * activation quantizer and the multi-row dots for the 32-element block
 * types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (codes read as unsigned q + 128,
 * the -128 d_w offset applied as for Q4_0), the 32-element sub-blocks of
 * Q4_K and Q5_K (d_w = d sc_s, c_w = -dmin m_s), the code book types
 * MXFP4 and IQ4_NL (values read as unsigned value + 12 / + 128, offset
 * -12 d_w / -128 d_w), the 16-element sub-blocks of Q6_K (unsigned q,
 * d_w = d sc_s, c_w = -32 d_w) and the affine groups I4G64 (a
 * group of 64 is two blocks of x sharing the weights' scale and bias).
 *
 * Each 32-element block of x is rounded to x~ = (d / 256) * (256 hi + lo)
 * with d = max|x| / 127, hi = round(x / d) and lo = round(256 (x - hi d) / d)
 * clamped to [-127, 127]: a 16-bit fixed-point value held as two int8 parts
 * so that integer dot products (AVX-512 VNNI vpdpbusd, AVX2 maddubs) can
 * take it. Per element |x - x~| <= d / 256 (d / 512 but where the clamp
 * binds; wk_x16_scale has the NaN and tiny-block cases), about what an f16
 * activation would lose; llama.cpp's 8-bit
 * activations (Q8_0/Q8_1) lose 256 times more. The dot is then exact over
 * the integers: per block S = sum q_j (256 hi_j + lo_j), and
 *   sum_j w_j x~_j = d_w (d / 256) S + c_w (d / 256) sum_j (256 hi_j + lo_j)
 * where w_j = d_w q_j + c_w (c_w = m for Q4_1/Q5_1, -8 d_w for Q4_0,
 * -16 d_w for Q5_0, -128 d_w for Q8_0, Q4_K's as above, I4G64's scale and
 * bias for d_w and c_w). So each result is the exact dot of the weights
 * with x~, up to float rounding of the per-block terms.
 */
#include "wk_cpu.h"
#include "wk_cpu_arch.h"

#include <math.h>
#include <string.h>

void wk__x16_quantize_ref(int64_t n, const float *x, float *d, int8_t *hi, int8_t *lo)
{
    for (int64_t b = 0; b < n / 32; b++) {
        const float *xb = x + 32 * b;
        float amax = 0;
        bool nan = false;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(xb[j])), nan |= isnan(xb[j]);
        const float db = wk_x16_scale(amax, nan), id = db > 0 ? 1.0f / db : 0.0f;
        d[b] = db;
        for (int j = 0; j < 32; j++) {
            const float h = fminf(fmaxf(nearbyintf(xb[j] * id), -127.0f), 127.0f);
            const float p = h * db;        /* rounded to f32 */
            const float r = (xb[j] - p) * id; /* the residual in units of d */
            const float l = fminf(fmaxf(nearbyintf(r * 256.0f), -127.0f), 127.0f);
            hi[32 * b + j] = (int8_t)h;
            lo[32 * b + j] = (int8_t)l;
        }
    }
}

/* Integer weights q_j (0..31) of 32-element block b of a row, and the
 * block's d_w, c_w (I4G64: half of a group of 64, scale and bias). */
static void block_q(enum wk_dtype t, const uint8_t *row, int64_t b, int q[32], float *dw, float *cw)
{
    const uint8_t *qs, *qhp = NULL;
    if (t == WK_DTYPE_I4G64) {
        const struct wk_block_i4g64 *k = (const struct wk_block_i4g64 *)row + b / 2;
        *dw = wk_f16_to_f32(k->scale), *cw = wk_f16_to_f32(k->bias);
        for (int j = 0; j < 32; j++) { /* element 2i in the low nibble of byte i */
            const int e = 32 * (int)(b % 2) + j;
            q[j] = e & 1 ? k->q[e / 2] >> 4 : k->q[e / 2] & 0x0F;
        }
        return;
    }
    if (t == WK_DTYPE_Q4_K) { /* sub-block b % 8 of 256-element block b / 8 */
        const struct wk_block_q4_k *k = (const struct wk_block_q4_k *)row + b / 8;
        const int s = (int)(b % 8);
        uint8_t sc, m;
        wk_q4_k_scale_min(s, k->scales, &sc, &m);
        *dw = wk_f16_to_f32(k->d) * sc, *cw = -(wk_f16_to_f32(k->dmin) * m);
        for (int j = 0; j < 32; j++) q[j] = s % 2 ? k->qs[32 * (s / 2) + j] >> 4 : k->qs[32 * (s / 2) + j] & 0x0F;
        return;
    }
    if (t == WK_DTYPE_Q5_K) { /* Q4_K's, plus bit s of qh[j] as the fifth bit of element j */
        const struct wk_block_q5_k *k = (const struct wk_block_q5_k *)row + b / 8;
        const int s = (int)(b % 8);
        uint8_t sc, m;
        wk_q4_k_scale_min(s, k->scales, &sc, &m);
        *dw = wk_f16_to_f32(k->d) * sc, *cw = -(wk_f16_to_f32(k->dmin) * m);
        for (int j = 0; j < 32; j++)
            q[j] = (s % 2 ? k->qs[32 * (s / 2) + j] >> 4 : k->qs[32 * (s / 2) + j] & 0x0F) | ((k->qh[j] >> s) & 1) << 4;
        return;
    }
    if (t == WK_DTYPE_MXFP4 || t == WK_DTYPE_IQ4_NL) { /* code book values + 12 / + 128 */
        const uint8_t *blk = row + b * (t == WK_DTYPE_MXFP4 ? sizeof(struct wk_block_mxfp4) : sizeof(struct wk_block_iq4_nl));
        const int8_t *book = t == WK_DTYPE_MXFP4 ? wk_mxfp4_values : wk_iq4nl_values;
        const int off = t == WK_DTYPE_MXFP4 ? 12 : 128;
        wk_f16 h;
        memcpy(&h, blk, 2);
        *dw = t == WK_DTYPE_MXFP4 ? wk_e8m0_to_f32_half(blk[0]) : wk_f16_to_f32(h), *cw = -(float)off * *dw;
        qs = blk + (t == WK_DTYPE_MXFP4 ? 1 : 2);
        for (int j = 0; j < 16; j++) q[j] = book[qs[j] & 0x0F] + off, q[j + 16] = book[qs[j] >> 4] + off;
        return;
    }
    if (t == WK_DTYPE_Q8_0) { /* codes as unsigned q + 128, offset -128 d_w */
        const struct wk_block_q8_0 *k = (const struct wk_block_q8_0 *)row + b;
        *dw = wk_f16_to_f32(k->d), *cw = -128.0f * *dw;
        for (int j = 0; j < 32; j++) q[j] = k->qs[j] + 128;
        return;
    }
    if (t == WK_DTYPE_Q4_0) {
        const struct wk_block_q4_0 *k = (const struct wk_block_q4_0 *)row + b;
        *dw = wk_f16_to_f32(k->d), *cw = -8.0f * *dw, qs = k->qs;
    } else if (t == WK_DTYPE_Q4_1) {
        const struct wk_block_q4_1 *k = (const struct wk_block_q4_1 *)row + b;
        *dw = wk_f16_to_f32(k->d), *cw = wk_f16_to_f32(k->m), qs = k->qs;
    } else if (t == WK_DTYPE_Q5_0) {
        const struct wk_block_q5_0 *k = (const struct wk_block_q5_0 *)row + b;
        *dw = wk_f16_to_f32(k->d), *cw = -16.0f * *dw, qs = k->qs, qhp = k->qh;
    } else {
        const struct wk_block_q5_1 *k = (const struct wk_block_q5_1 *)row + b;
        *dw = wk_f16_to_f32(k->d), *cw = wk_f16_to_f32(k->m), qs = k->qs, qhp = k->qh;
    }
    uint32_t qh = 0;
    if (qhp) qh = (uint32_t)qhp[0] | (uint32_t)qhp[1] << 8 | (uint32_t)qhp[2] << 16 | (uint32_t)qhp[3] << 24;
    for (int j = 0; j < 16; j++) {
        q[j] = (qs[j] & 0x0F) | (int)((qh >> j) & 1) << 4;
        q[j + 16] = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
    }
}

/* Q6_K: codes q_j (0..63) of 32-element block b of a row (quarter b % 4
 * of half b % 8 / 4 of 256-element block b / 8) and its two 16-element
 * sub-blocks' d_w (d sc_s) and c_w (-32 d_w). */
static void block_q6_k(const uint8_t *row, int64_t b, int q[32], float dw[2], float cw[2])
{
    const struct wk_block_q6_k *k = (const struct wk_block_q6_k *)row + b / 8;
    const int h = (int)(b % 8) / 4, j = (int)(b % 4);
    const uint8_t *ql = k->ql + 64 * h + 32 * (j % 2), *qh = k->qh + 32 * h;
    for (int l = 0; l < 32; l++) q[l] = (j < 2 ? ql[l] & 0x0F : ql[l] >> 4) | ((qh[l] >> (2 * j)) & 3) << 4;
    for (int s = 0; s < 2; s++) {
        dw[s] = wk_f16_to_f32(k->d) * (float)k->scales[8 * h + 2 * j + s];
        cw[s] = -32.0f * dw[s];
    }
}

static void rows_x16_ref(enum wk_dtype t, int64_t n, const void *w, size_t w_stride, const float *x,
                         float *out, int64_t n_rows)
{
    for (int64_t r = 0; r < n_rows; r++) out[r] = 0;
    for (int64_t b = 0; b < n / 32; b++) {
        float d;
        int8_t hi[32], lo[32];
        wk__x16_quantize_ref(32, x + 32 * b, &d, hi, lo);
        const float dx = d / 256.0f;
        for (int64_t r = 0; r < n_rows; r++) {
            int q[32];
            float dw, cw;
            if (t == WK_DTYPE_Q6_K) { /* two sub-blocks, each with its d_w and c_w */
                float dw2[2], cw2[2];
                block_q6_k((const uint8_t *)w + r * w_stride, b, q, dw2, cw2);
                for (int s = 0; s < 2; s++) {
                    int32_t sq = 0, sx = 0;
                    for (int j = 16 * s; j < 16 * s + 16; j++) {
                        const int32_t v = 256 * hi[j] + lo[j];
                        sq += q[j] * v;
                        sx += v;
                    }
                    out[r] += dw2[s] * dx * (float)sq + cw2[s] * (dx * (float)sx);
                }
                continue;
            }
            block_q(t, (const uint8_t *)w + r * w_stride, b, q, &dw, &cw);
            int32_t s = 0, sx = 0;
            for (int j = 0; j < 32; j++) {
                const int32_t v = 256 * hi[j] + lo[j];
                s += q[j] * v;
                sx += v;
            }
            out[r] += dw * dx * (float)s + cw * (dx * (float)sx);
        }
    }
}

#define ROWS_X16_REF(name, T)                                                                      \
    static void rows_x16_ref_##name(int64_t n, const void *w, size_t w_stride, const float *x,     \
                                    float *out, int64_t n_rows)                                    \
    {                                                                                              \
        rows_x16_ref(T, n, w, w_stride, x, out, n_rows);                                           \
    }
ROWS_X16_REF(q4_0, WK_DTYPE_Q4_0)
ROWS_X16_REF(q4_1, WK_DTYPE_Q4_1)
ROWS_X16_REF(q5_0, WK_DTYPE_Q5_0)
ROWS_X16_REF(q5_1, WK_DTYPE_Q5_1)
ROWS_X16_REF(i4g64, WK_DTYPE_I4G64)
ROWS_X16_REF(q8_0, WK_DTYPE_Q8_0)
ROWS_X16_REF(q4_k, WK_DTYPE_Q4_K)
ROWS_X16_REF(q5_k, WK_DTYPE_Q5_K)
ROWS_X16_REF(q6_k, WK_DTYPE_Q6_K)
ROWS_X16_REF(mxfp4, WK_DTYPE_MXFP4)
ROWS_X16_REF(iq4_nl, WK_DTYPE_IQ4_NL)

wk_vec_dot_rows_fn wk__vec_dot_rows_x16_ref(enum wk_dtype t)
{
    switch (t) {
    case WK_DTYPE_Q4_0: return rows_x16_ref_q4_0;
    case WK_DTYPE_Q4_1: return rows_x16_ref_q4_1;
    case WK_DTYPE_Q5_0: return rows_x16_ref_q5_0;
    case WK_DTYPE_Q5_1: return rows_x16_ref_q5_1;
    case WK_DTYPE_I4G64: return rows_x16_ref_i4g64;
    case WK_DTYPE_Q8_0: return rows_x16_ref_q8_0;
    case WK_DTYPE_Q4_K: return rows_x16_ref_q4_k;
    case WK_DTYPE_Q5_K: return rows_x16_ref_q5_k;
    case WK_DTYPE_Q6_K: return rows_x16_ref_q6_k;
    case WK_DTYPE_MXFP4: return rows_x16_ref_mxfp4;
    case WK_DTYPE_IQ4_NL: return rows_x16_ref_iq4_nl;
    default: return NULL;
    }
}
