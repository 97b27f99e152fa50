/*
 * wk_tensor.h - element types, their block layouts, tensor views and the
 * plain-C reference kernels that define each type's arithmetic.
 *
 * Numbering and block layouts follow the GGUF specification
 * (ggml-org/ggml docs/gguf.md, "GGML types") so a tensor's bytes in a GGUF
 * file are used as they are. A quantized row of n elements is n/block_size
 * blocks laid end to end; every block format is described beside its struct.
 *
 Two dot products exist per weight type. vec_dot takes the activation row
 * in f32 and dequantizes the weights on the fly: the exact path, the one
 * the forward pass uses (as MLX and transformers compute). vec_dot_q takes
 * the activation row quantized to the type's vec_dot_type (Q8_0, Q8_1 or
 * Q8_K, as llama.cpp does) so 8-bit integer products can be used; it is
 * faster but moves logits by ~0.3 on Gemma 3 270M, enough to change greedy
 * choices, so it is kept for opt-in use only. The _ref kernels here are
 * the specification; SIMD versions in src/cpu must agree with them
 * (tests/unit/test-cpu.c).
 */
#ifndef WK_TENSOR_H
#define WK_TENSOR_H

#include "../base/wk_base.h"

/* GGUF type ids; gaps are ids GGUF has retired. */
enum wk_dtype {
    WK_DTYPE_F32 = 0,
    WK_DTYPE_F16 = 1,
    WK_DTYPE_Q4_0 = 2,
    WK_DTYPE_Q4_1 = 3,
    WK_DTYPE_Q5_0 = 6,
    WK_DTYPE_Q5_1 = 7,
    WK_DTYPE_Q8_0 = 8,
    WK_DTYPE_Q8_1 = 9,
    WK_DTYPE_Q2_K = 10,
    WK_DTYPE_Q3_K = 11,
    WK_DTYPE_Q4_K = 12,
    WK_DTYPE_Q5_K = 13,
    WK_DTYPE_Q6_K = 14,
    WK_DTYPE_Q8_K = 15,
    WK_DTYPE_IQ4_NL = 20,
    WK_DTYPE_IQ4_XS = 23,
    WK_DTYPE_I8 = 24,
    WK_DTYPE_I16 = 25,
    WK_DTYPE_I32 = 26,
    WK_DTYPE_I64 = 27,
    WK_DTYPE_F64 = 28,
    WK_DTYPE_BF16 = 30,
    WK_DTYPE_MXFP4 = 39,
    WK_DTYPE_GGUF_COUNT = 40, /* one past the highest id GGUF defines today */
    /* wick's own, never in a GGUF file: MLX-style affine groups of 64
     * (x = scale * q + bias, q unsigned), what `--quantize int8/int4` makes */
    WK_DTYPE_I8G64 = 40,
    WK_DTYPE_I4G64 = 41,
    /* in memory only, never in a file: Q4_1, Q5_0, Q8_0, Q6_K and Q4_K matrices whose rows
     * the loader interleaved in groups of 16 for the AVX-512 VNNI decode
     * kernels (wk_cpu.h, "R16 layout"); the last ids, Q4_1_R16 first */
    WK_DTYPE_Q4_1_R16 = 42,
    WK_DTYPE_Q8_0_R16 = 43,
    WK_DTYPE_Q5_0_R16 = 44,
    WK_DTYPE_Q6_K_R16 = 45,
    WK_DTYPE_Q4_K_R16 = 46,
    WK_DTYPE_COUNT = 47,
};

/* ------------------------------------------------------------- blocks */

typedef uint16_t wk_f16;  /* IEEE 754 binary16 bits */
typedef uint16_t wk_bf16; /* bfloat16 bits */

#define WK_QK4_0 32
#define WK_QK8_0 32
#define WK_QK_K 256
#define WK_K_SCALE_SIZE 12

/* Q4_0: x = (q - 8) * d; qs[j] low nibble is element j, high nibble j+16. */
struct wk_block_q4_0 {
    wk_f16 d;
    uint8_t qs[WK_QK4_0 / 2];
};
/* Q4_1: x = q * d + m; nibbles as Q4_0. */
struct wk_block_q4_1 {
    wk_f16 d, m;
    uint8_t qs[WK_QK4_0 / 2];
};
/* Q5_0: x = (q - 16) * d; q = nibble | (bit j of qh) << 4, bits 0-15 for
 * elements 0-15 (low nibbles), bits 16-31 for elements 16-31 (high). */
struct wk_block_q5_0 {
    wk_f16 d;
    uint8_t qh[4];
    uint8_t qs[WK_QK4_0 / 2];
};
/* Q5_1: x = q * d + m; bits as Q5_0. */
struct wk_block_q5_1 {
    wk_f16 d, m;
    uint8_t qh[4];
    uint8_t qs[WK_QK4_0 / 2];
};
/* Q8_0: x = q * d. */
struct wk_block_q8_0 {
    wk_f16 d;
    int8_t qs[WK_QK8_0];
};
/* Q8_1: x = q * d; s = d * sum(q), kept for the min term of Q4_1/Q5_1. */
struct wk_block_q8_1 {
    wk_f16 d, s;
    int8_t qs[WK_QK8_0];
};
/* Q4_K: 256 elements in 8 sub-blocks of 32; each sub-block j has a 6-bit
 * scale sc_j and min m_j packed in scales[12]; x = d*sc_j*q - dmin*m_j.
 * qs holds 4 groups of 64 elements: low nibbles first 32, high next 32. */
struct wk_block_q4_k {
    wk_f16 d, dmin;
    uint8_t scales[WK_K_SCALE_SIZE];
    uint8_t qs[WK_QK_K / 2];
};
/* Q5_K: as Q4_K with a fifth bit per element in qh (bit 2g/2g+1 of qh[l]
 * for group g's low/high nibble element l). */
struct wk_block_q5_k {
    wk_f16 d, dmin;
    uint8_t scales[WK_K_SCALE_SIZE];
    uint8_t qh[WK_QK_K / 8];
    uint8_t qs[WK_QK_K / 2];
};
/* Q6_K: 16 sub-blocks of 16 with int8 scales; x = d * sc * (q - 32), q from
 * 4 bits of ql and 2 bits of qh. */
struct wk_block_q6_k {
    uint8_t ql[WK_QK_K / 2];
    uint8_t qh[WK_QK_K / 4];
    int8_t scales[WK_QK_K / 16];
    wk_f16 d;
};
/* Q8_K: activation type for K-quant dots. x = q * d; bsums[i] = sum of
 * q[16i .. 16i+15]. */
struct wk_block_q8_k {
    float d;
    int8_t qs[WK_QK_K];
    int16_t bsums[WK_QK_K / 16];
};

/*
 * The low-bit GGUF block types below are laid out as ggml defines them
 * (llama.cpp ggml/src/ggml-common.h block_q2_K, block_q3_K, block_iq4_nl,
 * block_iq4_xs; dequantize_row_* in ggml-quants.c), which was read to learn
 * the formats; quant_ref_k.c has their reference kernels.
 *
 * Q2_K, 84 bytes per 256 elements: 16 sub-blocks of 16. scales[s] holds
 * sub-block s's 4-bit scale (low nibble) and 4-bit min (high nibble). Each
 * 128-element half h uses qs[32h .. 32h+31]; its element 32j + l is bits
 * 2j..2j+1 of qs[32h + l]. x = (d * sc) * q - (dmin * m), q in 0..3.
 */
struct wk_block_q2_k {
    uint8_t scales[WK_QK_K / 16];
    uint8_t qs[WK_QK_K / 4];
    wk_f16 d, dmin;
};
/* Q3_K, 110 bytes per 256 elements: 16 sub-blocks of 16 with 6-bit signed
 * scales (stored + 32). Low 2 bits of element e as Q2_K's qs; the third
 * bit is bit e/32 of hmask[e % 32], and a clear bit subtracts 4:
 * q = lo - (hbit ? 0 : 4), in -4..3. Scale s: low 4 bits are nibble s/8 of
 * scales[s % 8] (low nibble first), high 2 bits are bits 2(s/4)..2(s/4)+1
 * of scales[8 + s % 4]. x = (d * (sc - 32)) * q. */
struct wk_block_q3_k {
    uint8_t hmask[WK_QK_K / 8];
    uint8_t qs[WK_QK_K / 4];
    uint8_t scales[WK_K_SCALE_SIZE];
    wk_f16 d;
};
/* IQ4_NL, 18 bytes per 32 elements: 4-bit indices into the non-linear
 * table wk_iq4nl_values (int8, -127..113); element j < 16 is the low
 * nibble of qs[j], element j + 16 its high nibble. x = d * value. */
#define WK_QK4_NL 32
struct wk_block_iq4_nl {
    wk_f16 d;
    uint8_t qs[WK_QK4_NL / 2];
};
/* IQ4_XS, 136 bytes per 256 elements: 8 sub-blocks of 32, each with a
 * 6-bit scale stored + 32 (low 4 bits: nibble ib % 2 of scales_l[ib / 2];
 * high 2 bits: bits 2ib..2ib+1 of scales_h). Sub-block ib's indices are
 * qs[16ib .. 16ib+15] nibbled as IQ4_NL. x = (d * (sc - 32)) * value. */
struct wk_block_iq4_xs {
    wk_f16 d;
    uint16_t scales_h;
    uint8_t scales_l[WK_QK_K / 64];
    uint8_t qs[WK_QK_K / 2];
};
extern const int8_t wk_iq4nl_values[16];

/* MXFP4 (OCP Microscaling FP4; ggml's block_mxfp4), 17 bytes per 32
 * elements: e, an E8M0 exponent byte, and 16 bytes of 4-bit E2M1 codes,
 * element j < 16 in the low nibble of qs[j], element j + 16 in its high
 * nibble. wk_mxfp4_values holds each code's E2M1 value doubled (0, 1, 2,
 * 3, 4, 6, 8, 12, then the same negated: bit 3 is the sign), so
 * x = wk_e8m0_to_f32_half(e) * value. quant_mxfp4.c has the kernels. */
#define WK_QK_MXFP4 32
struct wk_block_mxfp4 {
    uint8_t e;
    uint8_t qs[WK_QK_MXFP4 / 2];
};
extern const int8_t wk_mxfp4_values[16];
/* Half the E8M0 scale 2^(e - 127), i.e. 2^(e - 128), exactly as a float:
 * e = 0 and 1 are the subnormals 2^-128 and 2^-127, e = 255 is 2^127 (no
 * NaN, as ggml_e8m0_to_fp32_half reads it). */
static inline float wk_e8m0_to_f32_half(uint8_t e)
{
    union {
        uint32_t u;
        float f;
    } v = {.u = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23};
    return v.f;
}

/* Affine groups (MLX's quantization: groups of 64, a scale and a bias
 * each; docs/reference/ollama-mlx-runner.md §6.4), as blocks: the
 * group's f16 scale and bias, then its 64 codes; x = scale * q + bias.
 * I4G64 packs two codes a byte, element 2i in the low nibble of q[i] (the
 * order of MLX's little-endian uint32 packing). */
#define WK_QG64 64
struct wk_block_i8g64 {
    wk_f16 scale, bias;
    uint8_t q[WK_QG64];
};
struct wk_block_i4g64 {
    wk_f16 scale, bias;
    uint8_t q[WK_QG64 / 2];
};

/* -------------------------------------------------------- conversions */

/* IEEE binary16 <-> binary32, round to nearest even; exact for all inputs. */
float wk_f16_to_f32(wk_f16 h);
wk_f16 wk_f32_to_f16(float f);
/* bfloat16 <-> binary32; to-bf16 rounds to nearest even, NaN stays NaN. */
static inline float wk_bf16_to_f32(wk_bf16 h)
{
    union {
        uint32_t u;
        float f;
    } v = {.u = (uint32_t)h << 16};
    return v.f;
}
wk_bf16 wk_f32_to_bf16(float f);

/* ------------------------------------------------------------- traits */

/* Dequantizes n elements (a multiple of block_size) from src to dst. */
typedef void (*wk_to_f32_fn)(const void *src, float *dst, int64_t n);
/* Quantizes n floats (a multiple of block_size) into dst. */
typedef void (*wk_from_f32_fn)(const float *src, void *dst, int64_t n);
/* Dot product of n elements: w in the weight's type, x in f32 (vec_dot) or
 * in the weight type's vec_dot_type (vec_dot_q). */
typedef float (*wk_vec_dot_fn)(int64_t n, const void *w, const void *x);

struct wk_dtype_traits {
    const char *name;          /* GGUF/ggml name, e.g. "Q4_K"; NULL: id unknown */
    int64_t block_size;        /* elements per block (1 for plain types) */
    size_t block_bytes;        /* bytes per block */
    bool is_quantized;
    bool supported;            /* wick can compute with it */
    enum wk_dtype vec_dot_type; /* activation type of vec_dot_q */
    wk_to_f32_fn to_f32;       /* reference dequantization (NULL: none) */
    wk_from_f32_fn from_f32;   /* reference quantization (NULL: none yet) */
    wk_vec_dot_fn vec_dot;     /* reference dot with f32 x (NULL: not a weight type) */
    wk_vec_dot_fn vec_dot_q;   /* reference dot with quantized x (NULL: none) */
};

/* Traits of dtype t, or NULL when t is not a GGUF type id wick knows. */
const struct wk_dtype_traits *wk_dtype_traits_get(uint32_t t);
/* GGUF name of t ("Q4_K"), or "unknown" for an id wick does not know;
 * never NULL. Error messages print the numeric id beside it. */
const char *wk_dtype_name(uint32_t t);
/* The dtype whose blocks an R16 dtype holds (Q4_1 for Q4_1_R16, ...); t
 * itself for every other dtype. */
static inline enum wk_dtype wk_dtype_base(enum wk_dtype t)
{
    return t == WK_DTYPE_Q4_1_R16   ? WK_DTYPE_Q4_1
           : t == WK_DTYPE_Q8_0_R16 ? WK_DTYPE_Q8_0
           : t == WK_DTYPE_Q5_0_R16 ? WK_DTYPE_Q5_0
           : t == WK_DTYPE_Q6_K_R16 ? WK_DTYPE_Q6_K
           : t == WK_DTYPE_Q4_K_R16 ? WK_DTYPE_Q4_K
                                    : t;
}
/* Bytes of a row of n elements; 0 when n is not a multiple of the block
 * size or t is unknown. */
size_t wk_dtype_row_bytes(enum wk_dtype t, int64_t n);

/* ------------------------------------------------------------- tensors */

#define WK_MAX_DIMS 4

/*
 * A view of tensor data. Shapes use GGUF order: ne[0] is the innermost,
 * contiguous dimension (a row), ne[1] the number of rows, and so on; a
 * weight [n_out, n_in] in HF terms has ne = {n_in, n_out}. Unused
 * dimensions are 1. nb[i] is the stride of dimension i in bytes
 * (nb[0] = block bytes for quantized types). data is borrowed: for model
 * weights it points into the mapped file and lives as long as the model.
 */
struct wk_tensor {
    const char *name;
    enum wk_dtype dtype;
    int n_dims;
    int64_t ne[WK_MAX_DIMS];
    size_t nb[WK_MAX_DIMS];
    const void *data;
};

/* Number of elements (product of ne). */
int64_t wk_tensor_n_elements(const struct wk_tensor *t);
/* Row i of a 2-D (or higher, flattened) tensor. */
static inline const void *wk_tensor_row(const struct wk_tensor *t, int64_t i)
{
    return (const uint8_t *)t->data + (size_t)i * t->nb[1];
}

/* ------------------------------------------------------ reference kernels */

/* Per type: dequantize, quantize (where present) and dot, plain C. These are
 * what the traits table points at; tests call them directly. */
void wk_ref_f32_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_f16_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_bf16_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_q4_0_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_q4_1_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_q5_0_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_q5_1_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_q8_0_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_q8_1_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_q4_k_to_f32(const void *src, float *dst, int64_t n);
/* Q4_K and Q6_K from f32 (n a multiple of 256): round to nearest with
 * min-max / max-abs sub-block scales (quant_ref.c), not llama.cpp's
 * error search. */
void wk_ref_q4_k_from_f32(const float *src, void *dst, int64_t n);
/* Affine groups: to f32, from f32 (scale = (max - min) / levels, bias =
 * min, codes rounded to nearest), dot with f32 x. */
void wk_ref_i8g64_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_i4g64_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_i8g64_from_f32(const float *src, void *dst, int64_t n);
void wk_ref_i4g64_from_f32(const float *src, void *dst, int64_t n);
float wk_ref_vec_dot_i8g64_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_i4g64_f32(int64_t n, const void *w, const void *x);
void wk_ref_q6_k_from_f32(const float *src, void *dst, int64_t n);
void wk_ref_q5_k_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_q6_k_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_q8_k_to_f32(const void *src, float *dst, int64_t n);

void wk_ref_f32_from_f32(const float *src, void *dst, int64_t n);
void wk_ref_f16_from_f32(const float *src, void *dst, int64_t n);
void wk_ref_bf16_from_f32(const float *src, void *dst, int64_t n);
void wk_ref_q4_0_from_f32(const float *src, void *dst, int64_t n);
void wk_ref_q4_1_from_f32(const float *src, void *dst, int64_t n);
void wk_ref_q5_0_from_f32(const float *src, void *dst, int64_t n);
void wk_ref_q5_1_from_f32(const float *src, void *dst, int64_t n);
void wk_ref_q8_0_from_f32(const float *src, void *dst, int64_t n);
void wk_ref_q8_1_from_f32(const float *src, void *dst, int64_t n);
void wk_ref_q8_k_from_f32(const float *src, void *dst, int64_t n);

/* w · x with x in f32 (the exact path): <weight type>_f32. */
float wk_ref_vec_dot_f32_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_f16_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_bf16_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q4_0_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q4_1_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q5_0_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q5_1_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q8_0_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q4_k_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q5_k_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q6_k_f32(int64_t n, const void *w, const void *x);

/* Q2_K, Q3_K, IQ4_NL, IQ4_XS (quant_ref_k.c): to f32 and the dot with f32
 * x only; no quantizer and no quantized-activation dot (vec_dot_q) yet. */
void wk_ref_q2_k_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_q3_k_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_iq4_nl_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_iq4_xs_to_f32(const void *src, float *dst, int64_t n);
float wk_ref_vec_dot_q2_k_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q3_k_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_iq4_nl_f32(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_iq4_xs_f32(int64_t n, const void *w, const void *x);

/* MXFP4 (quant_mxfp4.c): to f32 (bit-identical to the gguf package), from
 * f32 (byte-identical to gguf.quants.quantize / ggml's
 * quantize_row_mxfp4_ref: shared exponent floor(log2(amax)) - 2, codes
 * rounded to the nearest E2M1 value, first index on ties), and the dot with
 * f32 x. n a multiple of 32; no quantized-activation dot (vec_dot_q). */
void wk_ref_mxfp4_to_f32(const void *src, float *dst, int64_t n);
void wk_ref_mxfp4_from_f32(const float *src, void *dst, int64_t n);
float wk_ref_vec_dot_mxfp4_f32(int64_t n, const void *w, const void *x);

/* w · x with x quantized to the weight type's vec_dot_type:
 * <weight type>_<activation type>. */
float wk_ref_vec_dot_q4_0_q8_0(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q4_1_q8_1(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q5_0_q8_0(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q5_1_q8_1(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q8_0_q8_0(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q4_k_q8_k(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q5_k_q8_k(int64_t n, const void *w, const void *x);
float wk_ref_vec_dot_q6_k_q8_k(int64_t n, const void *w, const void *x);

/* Unpacks Q4_K/Q5_K sub-block j's 6-bit scale and min from scales[12]. */
static inline void wk_q4_k_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

#endif /* WK_TENSOR_H */
