/*
 * quant_ref_k.c - reference (plain C) dequantization and dots with f32
 * activations for the low-bit GGUF block types Q2_K, Q3_K, IQ4_NL and
 * IQ4_XS. Their block layouts are described beside their structs in
 * wk_tensor.h; they were learnt by reading ggml's block definitions
 * (llama.cpp ggml/src/ggml-common.h) and dequantize_row_q2_K, _q3_K,
 * _iq4_nl, _iq4_xs (ggml/src/ggml-quants.c). The code is written from
 * those descriptions.
 *
 * Rounding. Each element is computed in float in the order ggml's
 * reference (and the gguf Python package's numpy dequantizer) uses: the
 * sub-block factor first (dl = d * sc, ml = dmin * m), then dl * q - ml,
 * each product rounded to float (the Makefile builds with
 * -ffp-contract=off, so no FMA); the output is bit-identical to
 * gguf.quants.dequantize (tests/unit/test-tensor.c, fixture
 * tests/unit/fixtures/kquant.bin).
 *
 * The dots (vec_dot, the exact path the forward pass uses) dequantize one
 * block with the functions here and add its products to one float
 * accumulator in element order, as quant_ref.c's VEC_DOT_F32 does for the
 * other types. There is no quantized-activation dot (vec_dot_q against
 * Q8_K/Q8_0, llama.cpp's path) for these types yet, and no quantizer.
 */
#include "wk_tensor.h"

#include <stddef.h>

#define F16(x) wk_f16_to_f32(x)

_Static_assert(sizeof(struct wk_block_q2_k) == 84, "Q2_K block is 84 bytes");
_Static_assert(sizeof(struct wk_block_q3_k) == 110, "Q3_K block is 110 bytes");
_Static_assert(sizeof(struct wk_block_iq4_nl) == 18, "IQ4_NL block is 18 bytes");
_Static_assert(sizeof(struct wk_block_iq4_xs) == 136, "IQ4_XS block is 136 bytes");

/* The IQ4_NL / IQ4_XS code book (ggml's kvalues_iq4nl). */
const int8_t wk_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                    1,    13,   25,  38,  53,  69,  89,  113};

/* 2-bit value of element e (0..255) from a Q2_K/Q3_K qs[64]: half h uses
 * qs[32h..32h+31], its element 32j + l is bits 2j..2j+1 of qs[32h + l]. */
static inline int k_low2(const uint8_t *qs, int e)
{
    int h = e / 128, r = e % 128;
    return (qs[h * 32 + r % 32] >> (2 * (r / 32))) & 3;
}

void wk_ref_q2_k_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q2_k *b = src;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const float d = F16(b[i].d), dmin = F16(b[i].dmin);
        float *y = dst + i * WK_QK_K;
        for (int s = 0; s < WK_QK_K / 16; s++) {
            const float dl = d * (float)(b[i].scales[s] & 0xF);
            const float ml = dmin * (float)(b[i].scales[s] >> 4);
            for (int l = 0; l < 16; l++) y[16 * s + l] = dl * (float)k_low2(b[i].qs, 16 * s + l) - ml;
        }
    }
}

/* Q3_K sub-block s's scale, 0..63 (stored + 32). */
static inline int q3k_scale(const uint8_t *sc, int s)
{
    int lo = (sc[s % 8] >> (4 * (s / 8))) & 0xF;
    int hi = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
    return lo | (hi << 4);
}

void wk_ref_q3_k_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_q3_k *b = src;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const float d = F16(b[i].d);
        float *y = dst + i * WK_QK_K;
        for (int s = 0; s < WK_QK_K / 16; s++) {
            const float dl = d * (float)(q3k_scale(b[i].scales, s) - 32);
            for (int l = 0; l < 16; l++) {
                const int e = 16 * s + l;
                const int hbit = (b[i].hmask[e % 32] >> (e / 32)) & 1;
                y[e] = dl * (float)(k_low2(b[i].qs, e) - (hbit ? 0 : 4));
            }
        }
    }
}

/* The 32 elements of one IQ4_NL-style group of 16 bytes, scaled by dl. */
static inline void iq4_group(const uint8_t *qs, float dl, float *y)
{
    for (int j = 0; j < 16; j++) {
        y[j] = dl * (float)wk_iq4nl_values[qs[j] & 0xF];
        y[j + 16] = dl * (float)wk_iq4nl_values[qs[j] >> 4];
    }
}

void wk_ref_iq4_nl_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_iq4_nl *b = src;
    for (int64_t i = 0; i < n / WK_QK4_NL; i++) iq4_group(b[i].qs, F16(b[i].d), dst + i * WK_QK4_NL);
}

void wk_ref_iq4_xs_to_f32(const void *src, float *dst, int64_t n)
{
    const struct wk_block_iq4_xs *b = src;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const float d = F16(b[i].d);
        for (int ib = 0; ib < WK_QK_K / 32; ib++) {
            const int lo = (b[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF;
            const int hi = (b[i].scales_h >> (2 * ib)) & 3;
            iq4_group(b[i].qs + 16 * ib, d * (float)((lo | (hi << 4)) - 32), dst + i * WK_QK_K + 32 * ib);
        }
    }
}

/* Dequantize one block with the type's reference and accumulate in
 * element order (block sizes are at most 256). */
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

VEC_DOT_F32(q2_k, struct wk_block_q2_k, WK_QK_K, wk_ref_q2_k_to_f32)
VEC_DOT_F32(q3_k, struct wk_block_q3_k, WK_QK_K, wk_ref_q3_k_to_f32)
VEC_DOT_F32(iq4_nl, struct wk_block_iq4_nl, WK_QK4_NL, wk_ref_iq4_nl_to_f32)
VEC_DOT_F32(iq4_xs, struct wk_block_iq4_xs, WK_QK_K, wk_ref_iq4_xs_to_f32)
