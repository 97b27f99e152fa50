/*
 * dtype.c - the dtype traits table (GGUF type numbering) and float
 * conversions. All per-type branching elsewhere goes through this table.
 */
#include "wk_tensor.h"

#include <math.h>
#include <string.h>

float wk_f16_to_f32(wk_f16 h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                mant <<= 1;
            } while ((mant & 0x400) == 0);
            mant &= 0x3ff;
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | (mant << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

wk_f16 wk_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) return (wk_f16)(sign | 0x7e00); /* NaN */
    if (absx >= 0x477ff000u) return (wk_f16)(sign | 0x7c00); /* rounds to inf */
    if (absx < 0x38800000u) {                                 /* subnormal or zero */
        if (absx < 0x33000000u) return (wk_f16)sign;          /* < half the smallest */
        /* value = m * 2^(e-150) and the half's unit is 2^-24, so its
         * mantissa is m >> (126 - e), rounded to nearest even */
        uint32_t e = absx >> 23;
        uint32_t m = (absx & 0x7fffff) | 0x800000;
        int shift = 126 - (int)e;
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (wk_f16)(sign | q);
    }
    uint32_t r = absx + 0xfff + ((absx >> 13) & 1); /* round to nearest even */
    r -= (uint32_t)(127 - 15) << 23;
    return (wk_f16)(sign | (r >> 13));
}

wk_bf16 wk_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (wk_bf16)((x >> 16) | 0x40); /* quiet NaN */
    return (wk_bf16)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

#define PLAIN(t, nm, sz, tof, fromf, dot)                                                          \
    [t] = {.name = nm, .block_size = 1, .block_bytes = sz, .is_quantized = false,                  \
           .supported = true, .vec_dot_type = WK_DTYPE_F32, .to_f32 = tof, .from_f32 = fromf,      \
           .vec_dot = dot, .vec_dot_q = NULL}
#define QUANT(t, nm, bs, st, vdt, tof, fromf, dot, dotq)                                           \
    [t] = {.name = nm, .block_size = bs, .block_bytes = sizeof(st), .is_quantized = true,          \
           .supported = true, .vec_dot_type = vdt, .to_f32 = tof, .from_f32 = fromf,               \
           .vec_dot = dot, .vec_dot_q = dotq}
#define KNOWN(t, nm, bs, bb) [t] = {.name = nm, .block_size = bs, .block_bytes = bb}
/* An R16 layout of a block type: the same bytes per 16 rows, interleaved,
 * so no per-row conversion or dot (wk_cpu.h's R16 functions read it). */
#define R16(t, nm, bs, st)                                                                         \
    [t] = {.name = nm, .block_size = bs, .block_bytes = sizeof(st), .is_quantized = true,         \
           .supported = true, .vec_dot_type = WK_DTYPE_F32}

static const struct wk_dtype_traits g_traits[WK_DTYPE_COUNT] = {
    PLAIN(WK_DTYPE_F32, "F32", 4, wk_ref_f32_to_f32, wk_ref_f32_from_f32, wk_ref_vec_dot_f32_f32),
    PLAIN(WK_DTYPE_F16, "F16", 2, wk_ref_f16_to_f32, wk_ref_f16_from_f32, wk_ref_vec_dot_f16_f32),
    PLAIN(WK_DTYPE_BF16, "BF16", 2, wk_ref_bf16_to_f32, wk_ref_bf16_from_f32, wk_ref_vec_dot_bf16_f32),
    QUANT(WK_DTYPE_Q4_0, "Q4_0", 32, struct wk_block_q4_0, WK_DTYPE_Q8_0, wk_ref_q4_0_to_f32,
          wk_ref_q4_0_from_f32, wk_ref_vec_dot_q4_0_f32, wk_ref_vec_dot_q4_0_q8_0),
    QUANT(WK_DTYPE_Q4_1, "Q4_1", 32, struct wk_block_q4_1, WK_DTYPE_Q8_1, wk_ref_q4_1_to_f32,
          wk_ref_q4_1_from_f32, wk_ref_vec_dot_q4_1_f32, wk_ref_vec_dot_q4_1_q8_1),
    QUANT(WK_DTYPE_Q5_0, "Q5_0", 32, struct wk_block_q5_0, WK_DTYPE_Q8_0, wk_ref_q5_0_to_f32,
          wk_ref_q5_0_from_f32, wk_ref_vec_dot_q5_0_f32, wk_ref_vec_dot_q5_0_q8_0),
    QUANT(WK_DTYPE_Q5_1, "Q5_1", 32, struct wk_block_q5_1, WK_DTYPE_Q8_1, wk_ref_q5_1_to_f32,
          wk_ref_q5_1_from_f32, wk_ref_vec_dot_q5_1_f32, wk_ref_vec_dot_q5_1_q8_1),
    QUANT(WK_DTYPE_Q8_0, "Q8_0", 32, struct wk_block_q8_0, WK_DTYPE_Q8_0, wk_ref_q8_0_to_f32,
          wk_ref_q8_0_from_f32, wk_ref_vec_dot_q8_0_f32, wk_ref_vec_dot_q8_0_q8_0),
    QUANT(WK_DTYPE_Q8_1, "Q8_1", 32, struct wk_block_q8_1, WK_DTYPE_Q8_1, wk_ref_q8_1_to_f32,
          wk_ref_q8_1_from_f32, NULL, NULL),
    QUANT(WK_DTYPE_Q4_K, "Q4_K", 256, struct wk_block_q4_k, WK_DTYPE_Q8_K, wk_ref_q4_k_to_f32,
          wk_ref_q4_k_from_f32, wk_ref_vec_dot_q4_k_f32, wk_ref_vec_dot_q4_k_q8_k),
    QUANT(WK_DTYPE_Q5_K, "Q5_K", 256, struct wk_block_q5_k, WK_DTYPE_Q8_K, wk_ref_q5_k_to_f32,
          NULL, wk_ref_vec_dot_q5_k_f32, wk_ref_vec_dot_q5_k_q8_k),
    QUANT(WK_DTYPE_Q6_K, "Q6_K", 256, struct wk_block_q6_k, WK_DTYPE_Q8_K, wk_ref_q6_k_to_f32,
          wk_ref_q6_k_from_f32, wk_ref_vec_dot_q6_k_f32, wk_ref_vec_dot_q6_k_q8_k),
    /* f32-activation dot only (quant_ref_k.c): no quantizer, no vec_dot_q */
    QUANT(WK_DTYPE_Q2_K, "Q2_K", 256, struct wk_block_q2_k, WK_DTYPE_F32, wk_ref_q2_k_to_f32, NULL,
          wk_ref_vec_dot_q2_k_f32, NULL),
    QUANT(WK_DTYPE_Q3_K, "Q3_K", 256, struct wk_block_q3_k, WK_DTYPE_F32, wk_ref_q3_k_to_f32, NULL,
          wk_ref_vec_dot_q3_k_f32, NULL),
    QUANT(WK_DTYPE_IQ4_NL, "IQ4_NL", 32, struct wk_block_iq4_nl, WK_DTYPE_F32, wk_ref_iq4_nl_to_f32,
          NULL, wk_ref_vec_dot_iq4_nl_f32, NULL),
    QUANT(WK_DTYPE_IQ4_XS, "IQ4_XS", 256, struct wk_block_iq4_xs, WK_DTYPE_F32, wk_ref_iq4_xs_to_f32,
          NULL, wk_ref_vec_dot_iq4_xs_f32, NULL),
    QUANT(WK_DTYPE_MXFP4, "MXFP4", 32, struct wk_block_mxfp4, WK_DTYPE_F32, wk_ref_mxfp4_to_f32,
          wk_ref_mxfp4_from_f32, wk_ref_vec_dot_mxfp4_f32, NULL),
    QUANT(WK_DTYPE_I8G64, "I8G64", 64, struct wk_block_i8g64, WK_DTYPE_F32, wk_ref_i8g64_to_f32,
          wk_ref_i8g64_from_f32, wk_ref_vec_dot_i8g64_f32, NULL),
    QUANT(WK_DTYPE_I4G64, "I4G64", 64, struct wk_block_i4g64, WK_DTYPE_F32, wk_ref_i4g64_to_f32,
          wk_ref_i4g64_from_f32, wk_ref_vec_dot_i4g64_f32, NULL),
    QUANT(WK_DTYPE_Q8_K, "Q8_K", 256, struct wk_block_q8_k, WK_DTYPE_Q8_K, wk_ref_q8_k_to_f32,
          wk_ref_q8_k_from_f32, NULL, NULL),
    /* In memory only (the loader's repacking; no reader accepts them) */
    R16(WK_DTYPE_Q4_1_R16, "Q4_1_R16", 32, struct wk_block_q4_1),
    R16(WK_DTYPE_Q8_0_R16, "Q8_0_R16", 32, struct wk_block_q8_0),
    R16(WK_DTYPE_Q5_0_R16, "Q5_0_R16", 32, struct wk_block_q5_0),
    R16(WK_DTYPE_Q6_K_R16, "Q6_K_R16", 256, struct wk_block_q6_k),
    R16(WK_DTYPE_Q4_K_R16, "Q4_K_R16", 256, struct wk_block_q4_k),
    /* Known to GGUF, not computed by wick yet: sizes let the reader check
     * tensor extents and name the type in its error. */
    KNOWN(16, "IQ2_XXS", 256, 66),
    KNOWN(17, "IQ2_XS", 256, 74),
    KNOWN(18, "IQ3_XXS", 256, 98),
    KNOWN(19, "IQ1_S", 256, 50),
    KNOWN(21, "IQ3_S", 256, 110),
    KNOWN(22, "IQ2_S", 256, 82),
    KNOWN(WK_DTYPE_I8, "I8", 1, 1),
    KNOWN(WK_DTYPE_I16, "I16", 1, 2),
    KNOWN(WK_DTYPE_I32, "I32", 1, 4),
    KNOWN(WK_DTYPE_I64, "I64", 1, 8),
    KNOWN(WK_DTYPE_F64, "F64", 1, 8),
    KNOWN(29, "IQ1_M", 256, 56),
    KNOWN(34, "TQ1_0", 256, 54),
    KNOWN(35, "TQ2_0", 256, 66),
};

const struct wk_dtype_traits *wk_dtype_traits_get(uint32_t t)
{
    if (t >= WK_DTYPE_COUNT || !g_traits[t].name) return NULL;
    return &g_traits[t];
}

const char *wk_dtype_name(uint32_t t)
{
    const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
    return tr ? tr->name : "unknown";
}

size_t wk_dtype_row_bytes(enum wk_dtype t, int64_t n)
{
    const struct wk_dtype_traits *tr = wk_dtype_traits_get((uint32_t)t);
    if (!tr || n < 0 || n % tr->block_size != 0) return 0;
    return (size_t)(n / tr->block_size) * tr->block_bytes;
}

int64_t wk_tensor_n_elements(const struct wk_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < WK_MAX_DIMS; i++) n *= t->ne[i];
    return n;
}
