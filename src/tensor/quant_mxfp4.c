/*
 * quant_mxfp4.c - reference (plain C) MXFP4: dequantization, quantization
 * and the dot with f32 activations. MXFP4 is the OCP Microscaling format
 * (OCP MX specification v1.0, "MXFP4"): blocks of 32 FP4 E2M1 values
 * sharing one E8M0 power-of-two scale; gpt-oss ships its expert weights in
 * it. The GGUF block (type id 39, 17 bytes) is described beside struct
 * wk_block_mxfp4 in wk_tensor.h; it was learnt from ggml's block_mxfp4
 * (llama.cpp ggml/src/ggml-common.h), quantize_row_mxfp4_ref
 * (ggml-quants.c), ggml_e8m0_to_fp32_half (ggml-impl.h) and the gguf
 * Python package's quants.MXFP4, and written from those descriptions.
 *
 * Scale. The 16 codes stand for twice the E2M1 values (wk_mxfp4_values:
 * 0, 1, 2, 3, 4, 6, 8, 12 and their negatives), so the block factor is
 * half the E8M0 scale: d = 2^(e - 128), e the stored byte; e = 0 and 1
 * give the subnormal floats 2^-128 and 2^-127, and e = 255 is 2^127 (no
 * NaN encoding, as ggml and the gguf package read it). x = d * value, one
 * float product, bit-identical to gguf.quants.dequantize
 * (tests/unit/test-tensor.c, fixture tests/unit/fixtures/kquant.bin).
 *
 * Quantization follows ggml and the gguf package: e = floor(log2(amax))
 * - 2 + 127 (amax = max |x| over the block, 0 when amax is 0), so amax /
 * d lies in [4, 8) and the largest code 12 covers it with headroom; then
 * each element takes the first code of smallest |d * value - x| (codes in
 * index order, so +0 beats -0 and the smaller magnitude wins a tie of
 * positive candidates), the errors computed in float. Byte-identical to
 * gguf.quants.quantize on finite input (fixture tests/unit/fixtures/
 * mxfp4_quant.bin); a block whose exponent would leave 0..255 (amax below
 * 2^-125) wraps modulo 256 as the package's uint8 cast does on x86, and
 * one with an infinity gets e = 0 and codes 0 (every error is infinite)
 * as there. NaN input is not specified.
 */
#include "wk_tensor.h"

#include <math.h>
#include <string.h>

_Static_assert(sizeof(struct wk_block_mxfp4) == 17, "MXFP4 block is 17 bytes");

const int8_t wk_mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

void wk_ref_mxfp4_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_mxfp4 *b = src;
    for (int64_t i = 0; i < n / WK_QK_MXFP4; i++) {
        const float d = wk_e8m0_to_f32_half(b[i].e);
        float *y = dst + i * WK_QK_MXFP4;
        for (int j = 0; j < WK_QK_MXFP4 / 2; j++) {
            y[j] = d * (float)wk_mxfp4_values[b[i].qs[j] & 0xF];
            y[j + WK_QK_MXFP4 / 2] = d * (float)wk_mxfp4_values[b[i].qs[j] >> 4];
        }
    }
}

/* The first index of the smallest |d * value - x| (ggml's best_index_mxfp4). */
static int mxfp4_best(float x, float d)
{
    int best = 0;
    float best_err = fabsf(d * (float)wk_mxfp4_values[0] - x);
    for (int k = 1; k < 16; k++) {
        const float err = fabsf(d * (float)wk_mxfp4_values[k] - x);
        if (err < best_err) best = k, best_err = err;
    }
    return best;
}

void wk_ref_mxfp4_from_f32(const float *src, void *dst, int64_t n)
{
    struct wk_block_mxfp4 *b = dst;
    for (int64_t i = 0; i < n / WK_QK_MXFP4; i++) {
        const float *x = src + i * WK_QK_MXFP4;
        float amax = 0;
        for (int j = 0; j < WK_QK_MXFP4; j++)
            if (amax < fabsf(x[j])) amax = fabsf(x[j]);
        /* floor(log2) of a finite positive float is in -149..127, so the
         * int conversion is defined; the uint8 cast then wraps. An
         * infinite amax gives 0, what the package's cast of inf gives on
         * x86 (cvttss2si's 0x80000000, low byte 0). */
        const uint8_t e = amax > 0 && isfinite(amax) ? (uint8_t)(int32_t)(floorf(log2f(amax)) - 2 + 127) : 0;
        const float d = wk_e8m0_to_f32_half(e);
        b[i].e = e;
        for (int j = 0; j < WK_QK_MXFP4 / 2; j++)
            b[i].qs[j] = (uint8_t)(mxfp4_best(x[j], d) | mxfp4_best(x[j + WK_QK_MXFP4 / 2], d) << 4);
    }
}

float wk_ref_vec_dot_mxfp4_f32(int64_t n, const void *w, const void *x)
{
    const struct wk_block_mxfp4 *b = w;
    const float *xf = x;
    float tmp[WK_QK_MXFP4], s = 0;
    for (int64_t i = 0; i < n / WK_QK_MXFP4; i++) {
        wk_ref_mxfp4_to_f32(&b[i], tmp, WK_QK_MXFP4);
        for (int j = 0; j < WK_QK_MXFP4; j++) s += tmp[j] * xf[i * WK_QK_MXFP4 + j];
    }
    return s;
}
