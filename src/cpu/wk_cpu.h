/*
 * wk_cpu.h - optimized CPU kernels behind one table, chosen once at start-up
 * from the CPU's features (CPUID + XGETBV, see wk_cpu_features_get), plus
 * the threaded operators built on them (matmul, attention, norms, RoPE).
 *
 The table holds, per weight dtype, the dot product with f32 activations
 * (vec_dot, the exact path the forward pass uses) and with activations
 * quantized to the dtype's vec_dot_type (vec_dot_q, llama.cpp's faster but
 * lossier path); per activation dtype the quantizer; per dtype the
 * dequantizer. Entries an ISA does not implement keep the plain-C _ref
 * version from src/tensor. Call sites never #ifdef on an ISA.
 */
#ifndef WK_CPU_H
#define WK_CPU_H

#include "../base/wk_base.h"
#include "../tensor/wk_tensor.h"

#include <float.h>
#include <stdbool.h>
#include <string.h>

/* Single-precision helpers used by attention: the dot product of two float
 * rows, and y += a * x over n floats. */
typedef float (*wk_dot_f32_fn)(int64_t n, const float *a, const float *b);
typedef void (*wk_axpy_f32_fn)(int64_t n, float a, const float *x, float *y);

/*
 * Several rows of one weight matrix against one f32 activation row (the
 * decode matvec): out[r] = vec_dot(n, w + r * w_stride, x) for r < n_rows.
 * w: n_rows rows of n elements in the weight dtype, w_stride bytes apart;
 * x: [n] f32; out: [n_rows] f32. Kernels share each load of x between
 * several rows. Each out[r] must agree with the reference vec_dot within
 * the vec_dot tolerance (the summation order may differ).
 */
typedef void (*wk_vec_dot_rows_fn)(int64_t n, const void *w, size_t w_stride, const float *x,
                                   float *out, int64_t n_rows);

/*
 * The decode dots of several tokens at once, for speculative decoding's
 * verification: for t < n_tokens and r < n_rows, out[t * out_stride + r] =
 * dot(row r, x + t * x_stride), each bit for bit what the same table's
 * vec_dot_rows gives for that token alone (the same per-row arithmetic),
 * with each weight row loaded once for up to four tokens. w, w_stride, n
 * as wk_vec_dot_rows_fn; strides of x and out in floats.
 */
typedef void (*wk_vec_dot_rows_tokens_fn)(int64_t n, const void *w, size_t w_stride, const float *x,
                                          size_t x_stride, int32_t n_tokens, float *out,
                                          size_t out_stride, int64_t n_rows);

/*
 * vec_dot_rows_x16 entries have vec_dot_rows' signature and contract except
 * for the activations: each 32-element block of x is first rounded to a
 * 16-bit fixed-point value x~ = d * (hi + lo / 256) (d = max|x| / 127, hi
 * and lo int8; wk__x16_quantize_ref in rows_x16_ref.c is the spec), so
 * |x - x~| <= max|x| / 32512 per element (blocks with max|x| below
 * WK_X16_MIN_AMAX count as zeros; a block with a NaN makes out NaN, see
 * wk_x16_scale), and out[r] = dot(row r, x~)
 * within 1e-5 of the sum of |products|. This lets decode use integer dot
 * products (vpdpbusd, maddubs) at close to f32 accuracy; n must be a
 * multiple of 32. The matmul uses them for single tokens unless the
 * environment sets WICK_EXACT=1 (see wk_cpu_kernels_get).
 */

/*
 * The scale d of one 32-element block of x for the vec_dot_rows_x16
 * kernels, from amax = max|x| over the block and whether the block holds a
 * NaN: NaN then (so every product with the block is NaN, as with f32
 * activations); 0 for amax < WK_X16_MIN_AMAX (~3.8e-34), where 1/d or
 * d/256 would leave the normal range, so such a block counts as zeros;
 * else amax / 127. One function for the reference and every ISA.
 */
#define WK_X16_MIN_AMAX (127.0f * 256.0f * 1.17549435e-38f)
static inline float wk_x16_scale(float amax, bool has_nan)
{
    if (has_nan) return __builtin_nanf("");
    return amax >= WK_X16_MIN_AMAX ? amax / 127.0f : 0.0f;
}

/*
 * f32 matrix product with both operands row-major ("A · Bᵀ"):
 * c[j * ldc + i] = sum_{l < k} a[i * lda + l] * b[j * ldb + l]
 * for i < m, j < n. a: m rows (weights, or keys), b: n rows (tokens, or
 * queries), c: n rows of at least m. Strides in floats; rows need no
 * alignment; any m, n, k >= 1. Each element must agree with the
 * double-precision dot product within 1e-5 of the sum of |products|.
 */
/* Row blocks of a prepacked GEMM operand (gemm_f32_prepacked below). */
#define WK_GEMM_PACK_ROWS 64

typedef void (*wk_gemm_f32_fn)(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                               const float *b, int64_t ldb, float *c, int64_t ldc);

/* gemm_q14 and q14_quantize of struct wk_cpu_kernels (below; the Q14
 * format is described with wk_q14_pack). */
typedef void (*wk_gemm_q14_fn)(int64_t m, int64_t n, int64_t k, const int16_t *pw, const float *sw,
                               const int16_t *xq, int64_t ldq, const float *sx, int64_t lds, float *c, int64_t ldc);
typedef void (*wk_q14_quantize_fn)(int64_t n_rows, int64_t k, const float *x, int64_t ldx, int16_t *xq, int64_t ldq,
                                   float *sx, int64_t lds);

/* gemm_r16 of struct wk_cpu_kernels (below). */
typedef void (*wk_gemm_r16_fn)(int64_t n, const void *w, size_t stride, const float *prep, size_t ldp,
                               int64_t n_tokens, float *out, size_t ldo, int64_t n_rows);

/* The rows gemm_rows (below) reads, m rows from a: element l of row i
 * at a + (i·lda + o(l)) elements of type, o(l) = l, or with blk > 0 (a
 * power of two, at least 16) (l / blk)·bstride + l % blk (values stored a
 * block of slots at a time). type: WK_DTYPE_F32, WK_DTYPE_F16, or
 * WK_DTYPE_Q8_0 (int8 codes, element l of row i the code times the f16
 * s[(i >> s_rsh)·lds + (l >> s_esh)], s_esh 0 or 5: a Q8_0 KV cache's
 * values, whose 32 rows of a group share a run of per-slot scales, and its
 * keys, one scale for each 32 entries of a row). */
struct wk_cpu_rows {
    enum wk_dtype type;
    int64_t lda;
    int32_t blk;
    int64_t bstride;
    const wk_f16 *s;
    int64_t lds;
    int s_rsh, s_esh;
};

struct wk_cpu_kernels {
    const char *isa; /* "ref", "avx2", "avx512", "amx" (avx512's with the AMX gemm_r16) */
    wk_vec_dot_fn vec_dot[WK_DTYPE_COUNT];   /* by weight dtype; x in f32 */
    wk_vec_dot_fn vec_dot_q[WK_DTYPE_COUNT]; /* by weight dtype; x in its vec_dot_type */
    wk_from_f32_fn quantize[WK_DTYPE_COUNT]; /* by activation dtype (Q8_0, Q8_1, Q8_K) */
    wk_to_f32_fn to_f32[WK_DTYPE_COUNT];     /* by dtype */
    wk_dot_f32_fn dot_f32;
    wk_axpy_f32_fn axpy_f32;
    wk_vec_dot_rows_fn vec_dot_rows[WK_DTYPE_COUNT]; /* by weight dtype; x in f32 */
    /* by weight dtype, NULL where an ISA has none: the decode dots with x
     * rounded to 16 bits per element first (see below) */
    wk_vec_dot_rows_fn vec_dot_rows_x16[WK_DTYPE_COUNT];
    /* by weight dtype, NULL where an ISA has none: vec_dot_rows for several
     * tokens at once (the float types on AVX-512) */
    wk_vec_dot_rows_tokens_fn vec_dot_rows_tokens[WK_DTYPE_COUNT];
    /* the same for vec_dot_rows_x16 (bit for bit it per token; where
     * vec_dot_rows_x16 has an entry on AVX-512): x prepared once per token
     * and column chunk, every token over a group of rows while it is in L1 */
    wk_vec_dot_rows_tokens_fn vec_dot_rows_x16_tokens[WK_DTYPE_COUNT];
    /* R16 decode with x prepared once (AVX-512 VNNI; AVX2 for every R16 dtype; NULL elsewhere, and
     * with WICK_EXACT=1): r16_prepare(n, x, prep) fills
     * wk_cpu_r16_prep_floats(n) floats (64-byte aligned) from x [n]; then
     * vec_dot_rows_r16[dt](n, w, stride, prep, out, n_rows), prep in x's
     * place, gives vec_dot_rows_x16[dt]'s bits, for an R16 dtype. The
     * matmul prepares x once per thread and job, so that a job's rows can
     * be taken in small chunks without quantizing x again for each. */
    void (*r16_prepare)(int64_t n, const float *x, float *prep);
    /* The prefill GEMM's preparation of one token where it reads more than
     * r16_prepare's (NULL elsewhere): r16_prepare's floats, then
     * WK_R16_BF16_FLOATS(n) more (the AMX-BF16 tiles' x~ as BF16 rows and
     * sums, r16_amx.c). wk_cpu_r16_prepare_gemm calls whichever applies. */
    void (*r16_prepare_gemm)(int64_t n, const float *x, float *prep);
    wk_vec_dot_rows_fn vec_dot_rows_r16[WK_DTYPE_COUNT];
    /* the same for several tokens (x: the first token's prep, x_stride the
     * floats between tokens' preps, wk_cpu_r16_prep_floats(n) or more):
     * per group of 16 rows and column chunk, the tokens while the chunk is
     * in L1 (AVX-512: the GEMM's VNNI tiles, the weights unpacked once for
     * up to 6 tokens, and in the "amx" table AMX tiles for each whole 16;
     * AVX2: tiles of 2), the groups in address order; each token's results
     * are vec_dot_rows_r16's bits (every token's float chain is decode's).
     * Batched decode and verification. */
    wk_vec_dot_rows_tokens_fn vec_dot_rows_r16_tokens[WK_DTYPE_COUNT];
    /* R16 prefill (AVX-512 VNNI, with AMX tiles for Q4_1, Q5_0, Q8_0 and Q4_K in the "amx" table at
     * the VNNI bits, and Q6_K too where AMX-BF16 is (r16_amx.c); AVX2 for every R16 dtype; NULL elsewhere, with WICK_EXACT=1, and
     * for the R16 dtypes without one): for an R16 dtype,
     * gemm_r16[dt](n, w, stride, prep, ldp, n_tokens, out, ldo, n_rows)
     * sets out[t * ldo + r] to row r's dot with token t for rows r <
     * n_rows (whole groups, w at a group's start, stride the row bytes)
     * and t < n_tokens, token t's x prepared by wk_cpu_r16_prepare_gemm at
     * prep + t * ldp (ldp >= wk_cpu_r16_gemm_prep_floats(k, n)). The integer dots of each
     * 32-element block are decode's (x rounded to 16 bits, see below); the
     * scales are applied in another order, so the bits are not
     * vec_dot_rows_x16's (on AVX2 they are: r16_avx2.c's tiles give each
     * row decode's arithmetic). Each result depends on n only, not on n_tokens,
     * n_rows or which rows share a call. */
    wk_gemm_r16_fn gemm_r16[WK_DTYPE_COUNT];
    wk_gemm_f32_fn gemm_f32;
    /* gemm_f32's small path, for n < gemm_f32_packed_min_n (any n where
     * that is 0), over rows of a (struct wk_cpu_rows: F32, F16, or Q8_0
     * codes with their f16 scales, each element converted exactly as it
     * is loaded; optionally in blocks). Bit for bit gemm_f32 over the same
     * rows made contiguous f32 (a Q8_0 code times its scale is exact in
     * f32), without writing them anywhere: a KV cache's decode products
     * (attention's few query columns against its keys, and value rows
     * stored a block of slots at a time). */
    void (*gemm_rows)(int64_t m, int64_t n, int64_t k, const void *a, const struct wk_cpu_rows *r, const float *b,
                      int64_t ldb, float *c, int64_t ldc);
    /* gemm_f32 with one summation order for every n (the packed path,
     * which gemm_f32 takes for n past a few rows, taken for any n), or
     * NULL where gemm_f32 has only one order (the reference): the
     * matmul's prefill tiles use it, so a token's products do not depend
     * on how many tokens share the call (a batch of sequences gets each
     * sequence's bits alone). */
    wk_gemm_f32_fn gemm_f32_packed;
    /* The fewest rows of b (n) for which gemm_f32 takes gemm_f32_packed's
     * path (so gives its bits); 0 where it never does (the reference). */
    int32_t gemm_f32_packed_min_n;
    /* Weights packed once (the AVX2 and AVX-512 kernels, each in its own
     * panels; NULL in the reference table): gemm_f32_pack(m, k, a, lda,
     * dst) writes a [m, k] (row-major, lda floats a row) to dst
     * [gemm_f32_pack_floats(m, k)] f32 in the panels the same table's
     * gemm_f32_packed would make of it, and then gemm_f32_prepacked(m, n,
     * k, pa, b, ldb, c, ldc) computes that gemm_f32_packed(m, n, k, a,
     * lda, b, ldb, c, ldc) bit for bit without packing a again, for m rows
     * of a from a row r0 that is a multiple of WK_GEMM_PACK_ROWS, with
     * pa = dst + r0 * k (dst 64-byte aligned), where r0 + m is a multiple
     * of 32 or all the packed rows. Packing the rows from such an r0 alone
     * into dst + r0 * k writes what packing them all puts there. The AVX2 and AVX-512
     * packings differ (16 or 32 rows a panel, 128 or 256 columns a
     * piece): a packing is read only by the table that wrote it. For
     * weights used many times (an embedding model's layers). */
    size_t (*gemm_f32_pack_floats)(int64_t m, int64_t k);
    void (*gemm_f32_pack)(int64_t m, int64_t k, const float *a, int64_t lda, float *dst);
    void (*gemm_f32_prepacked)(int64_t m, int64_t n, int64_t k, const float *pa, const float *b, int64_t ldb,
                               float *c, int64_t ldc);
    /* gemm_f32_prepacked over the first k of the pk columns a was packed
     * with (gemm_f32_pack(m, pk, ...), k <= pk; pa = dst + r0 * pk under
     * the same rules for r0 and m): gemm_f32_packed(m, n, k, a, lda, ...)
     * bit for bit, so one packing serves products over any prefix of its
     * columns (a prefill's values, packed once per kv head, for each
     * block's keys). NULL where the table has none (AVX2, the reference). */
    void (*gemm_f32_prepacked_cols)(int64_t m, int64_t n, int64_t k, int64_t pk, const float *pa, const float *b,
                                    int64_t ldb, float *c, int64_t ldc);
    /* Q14 products (an embedding model's layers; see wk_q14_pack): x
     * rounded to 14-bit integers per 32-element block (q14_quantize) times
     * weights rounded to 14-bit integers per row, summed exactly in int32
     * per block (vpdpwssd: two 16-bit products a 32-bit lane, twice the
     * f32 FMA's multiply-adds a cycle). q14_quantize is in every table
     * (the reference's is wk__q14_quantize_ref, the same bits); gemm_q14
     * where it is faster than gemm_f32: AVX-512 VNNI (vpdpwssd, ~1.8x the
     * f32 GEMM on a Zen 4 core) and AVX2 (vpmaddwd + vpaddd, ~1.3-1.6x
     * there in ymm), NULL in the reference, on AVX-512 without VNNI and
     * with WICK_EXACT=1. Both give wk__q14_quantize_ref's and
     * wk__gemm_q14_ref's bits. */
    wk_q14_quantize_fn q14_quantize;
    wk_gemm_q14_fn gemm_q14;
    /* wk_rms_norm, wk_geglu, wk_swiglu, wk_gelu_erf, wk_softmax, wk_attn_f32,
     * wk_sum_exp, wk_max_f32 (below) built for the ISA: same semantics,
     * bit-identical results */
    void (*rms_norm)(int64_t n, const float *x, const float *g, float eps, float *y);
    void (*geglu)(int64_t n, float *x, const float *up);
    void (*swiglu)(int64_t n, float *x, const float *up);
    void (*gelu_erf)(int64_t n, float *x, const float *bias);
    void (*softmax)(int64_t n, float *x);
    void (*attn_f32)(int64_t n, int64_t D, const float *q, const float *k, const float *v, int64_t ld, float scale,
                     float *out, int64_t ldo, float *scratch);
    double (*sum_exp)(int64_t n, const float *x, float mx);
    float (*max_f32)(int64_t n, const float *x);
};

/* The table for the best ISA this CPU and OS support (first call decides;
 * thread-safe). Never NULL. With WICK_EXACT=1 in the environment its
 * vec_dot_rows_x16 entries are NULL, so decode keeps f32 activations. */
const struct wk_cpu_kernels *wk_cpu_kernels_get(void);

/* The table for a named ISA ("ref", "avx2", "avx512", "amx"), or NULL when the ISA
 * is unknown or this CPU cannot run it. For tests and benchmarks. */
const struct wk_cpu_kernels *wk_cpu_kernels_for(const char *isa);

/* ------------------------------------------------------------ R16 layout */

/*
 * R16: a Q4_1, Q5_0, Q8_0, Q6_K or Q4_K matrix with its rows interleaved
 * in groups of 16 (dtypes Q4_1_R16, Q5_0_R16, Q8_0_R16, Q6_K_R16,
 * Q4_K_R16; the layout is in repack.c). Each
 * group of 16 rows keeps its 16 x row_bytes bytes, so row 16g still starts
 * at data + 16 g row_bytes, but no single row is contiguous: only the
 * table's vec_dot_rows_x16, vec_dot_rows_x16_tokens, vec_dot_rows_r16 and
 * gemm_r16 entries for the R16 dtype (rows in whole groups, w at a group's
 * start) and wk_cpu_r16_unpack_row (through which wk_cpu_get_row and the
 * matmul's prefill tiles, where the dtype has no gemm_r16, read rows) read
 * it. The model loader repacks a matrix only
 * when wk_cpu_kernels_get() has those entries (AVX-512 VNNI and AVX2, all five dtypes; not
 * WICK_EXACT), so every other table keeps the row-major dtypes. The
 * matmul splits R16 rows between threads in whole groups.
 */
#define WK_R16_ROWS 16

/* The prepared x of r16_prepare: WK_R16_PREP_CHUNK_FLOATS floats for each
 * column chunk of WK_R16_PREP_CHUNK elements. */
#define WK_R16_PREP_CHUNK 2048
#define WK_R16_PREP_CHUNK_FLOATS (WK_R16_PREP_CHUNK / 32 * 18 + WK_R16_PREP_CHUNK / 16)
static inline size_t wk_cpu_r16_prep_floats(int64_t n)
{
    return (size_t)((n + WK_R16_PREP_CHUNK - 1) / WK_R16_PREP_CHUNK) * WK_R16_PREP_CHUNK_FLOATS;
}

/* The floats r16_prepare_gemm adds for n elements (n a multiple of 32):
 * each 32-element block's x~ as 64 BF16 (n floats), then 32 times each
 * 16 elements' sum (n / 16) and 16 times each block's (n / 32); rounded
 * up to 64 bytes, so that every token's preparation starts 64-byte aligned. */
#define WK_R16_BF16_FLOATS(n) (((size_t)(n) + (size_t)(n) / 16 + (size_t)(n) / 32 + 15) / 16 * 16)

/* The floats a token's x takes prepared for table k's gemm_r16. */
static inline size_t wk_cpu_r16_gemm_prep_floats(const struct wk_cpu_kernels *k, int64_t n)
{
    return wk_cpu_r16_prep_floats(n) + (k->r16_prepare_gemm ? WK_R16_BF16_FLOATS(n) : 0);
}

/* One token's x [n] prepared for table k's gemm_r16 into prep
 * [wk_cpu_r16_gemm_prep_floats(k, n)]. */
static inline void wk_cpu_r16_prepare_gemm(const struct wk_cpu_kernels *k, int64_t n, const float *x, float *prep)
{
    if (k->r16_prepare_gemm) k->r16_prepare_gemm(n, x, prep);
    else k->r16_prepare(n, x, prep);
}

/* The R16 dtype of base (Q4_1 -> Q4_1_R16, Q5_0 -> Q5_0_R16, Q8_0 ->
 * Q8_0_R16, Q6_K -> Q6_K_R16, Q4_K -> Q4_K_R16), or WK_DTYPE_COUNT for a
 * dtype that has none. */
enum wk_dtype wk_cpu_r16_dtype(enum wk_dtype base);

/* Repacks in place the n_rows rows of n_in elements (row-major dtype base,
 * with an R16 dtype) at data into the R16 layout. n_in a multiple of the
 * dtype's block size and n_rows of WK_R16_ROWS (asserted); tmp: 16 x
 * row_bytes bytes of scratch. */
void wk_cpu_r16_pack(enum wk_dtype base, void *data, int64_t n_in, int64_t n_rows, void *tmp);

/* Blocks [blk0, blk0 + n_blk) of row `row` of an R16 matrix (dtype t,
 * rows of n_in elements, starting at data) written to dst in the
 * row-major layout of wk_dtype_base(t): n_blk blocks of that dtype, the
 * row's original bits. Asserts t is an R16 dtype and the range lies in
 * the row. */
void wk_cpu_r16_unpack_row(enum wk_dtype t, const void *data, int64_t n_in, int64_t row, int64_t blk0,
                           int64_t n_blk, void *dst);

/* ------------------------------------------------------------ Q14 layout */

/*
 * Q14: f32 products in 14-bit integers, for weights used many times (an
 * embedding model's layers, where the f32 GEMM runs at the FMA peak and a
 * batch is compute-bound). A weight matrix W [m, k] (row-major, k a
 * multiple of WK_Q14_BLOCK) becomes per row i a scale sw[i] = max_l
 * |W[i][l]| / WK_Q14_MAX and integers qw[i][l] = round(W[i][l] *
 * (WK_Q14_MAX / max_l |W[i][l]|)), |qw| <= WK_Q14_MAX; activations x [n,
 * k] per row j and block b of 32 elements a scale sx[j][b] = max |x| /
 * WK_Q14_MAX over the block and integers qx the same way (a row or block
 * whose largest |value| is below WK_Q14_MAX / FLT_MAX, ~2.4e-35, is taken
 * as zeros). Then
 *   c[j][i] = sw[i] * (... fma((float)S_1, sx[j][1], fma((float)S_0, sx[j][0], 0)))
 * where S_b = sum over block b of qw[i][l] qx[j][l], exact in int32
 * (|S_b| <= 32 * 8191^2 < 2^31), the fmas in block order. Relative error
 * per element about 2^-14 of the row's (weights) or block's (x) largest
 * value, against 2^-24 in f32: on all-MiniLM-L6-v2 the lowest cosine of
 * 200 embeddings to the f32 model's measured 0.9999994 (simulated in
 * torch; test-embed checks the real one against sentence-transformers).
 *
 * Packed weights (wk_q14_pack): panels of WK_Q14_PANEL rows, panel p at
 * pw + p * 32 * k int16; in a panel, the pair of columns (2h, 2h + 1) of
 * row r (r < 32) at 64 h + 32 (r / 16) + 2 (r % 16) + {0, 1}: one 64-byte
 * vector holds a pair of columns for 16 rows, vpdpwssd's operand. Rows
 * past m are zeros (scale 0). sw: [m rounded up to 32] f32 beside them.
 */
#define WK_Q14_MAX 8191
#define WK_Q14_BLOCK 32
#define WK_Q14_PANEL 32

/* Bytes of the packing of an [m, k] matrix: int16 panels, then the row
 * scales (f32), 64-byte aligned pieces. */
static inline size_t wk_q14_pack_bytes(int64_t m, int64_t k)
{
    const size_t rows = (size_t)((m + WK_Q14_PANEL - 1) / WK_Q14_PANEL) * WK_Q14_PANEL;
    return ((rows * (size_t)k * 2 + 63) & ~(size_t)63) + ((rows * 4 + 63) & ~(size_t)63);
}

/* Packs W [m, k] f32 (row-major, lda floats a row; k a multiple of
 * WK_Q14_BLOCK, asserted) into dst [wk_q14_pack_bytes(m, k)] (64-byte
 * aligned): *pw the panels at dst, *sw the row scales after them. A row
 * with a NaN or infinite weight gets scale NaN (its products NaN, as in
 * f32). Plain C, the same bits on every ISA; for load time. */
void wk_q14_pack(int64_t m, int64_t k, const float *a, int64_t lda, void *dst, int16_t **pw, float **sw);

/* The reference Q14 kernels (plain C; the table's entries give their
 * bits). wk__q14_quantize_ref: rows j < n_rows of x (ldx floats apart, k a
 * multiple of 32) to xq [j * ldq + l] and sx [j * lds + b] as above: qx =
 * round-to-nearest-even(x * (WK_Q14_MAX / max)), sx = max / WK_Q14_MAX (f32
 * divisions, both); a block of zeros (or of values all below ~2.4e-35,
 * where that factor overflows) gets zeros and scale 0, a block with a NaN
 * or infinity zeros and scale NaN. wk__gemm_q14_ref: c[j * ldc + i]
 * for i < m, j < n as above, from panels pw and scales sw (of row 0 of
 * the call: rows from a multiple of WK_Q14_PANEL, pw = the packing's
 * panels + r0 * k, sw + r0) and x quantized at xq, sx. */
void wk__q14_quantize_ref(int64_t n_rows, int64_t k, const float *x, int64_t ldx, int16_t *xq, int64_t ldq, float *sx,
                          int64_t lds);
void wk__gemm_q14_ref(int64_t m, int64_t n, int64_t k, const int16_t *pw, const float *sw, const int16_t *xq,
                      int64_t ldq, const float *sx, int64_t lds, float *c, int64_t ldc);

/* ---------------------------------------------------------------- matmul */

/* Rows of W a thread dequantizes at once when several tokens share them. */
#define WK_MATMUL_ROW_TILE 64

/* Floats of scratch wk_cpu_matmul needs for rows of n_in_max elements on
 * n_threads threads and up to n_tokens_max tokens a call: a tile of
 * WK_MATMUL_ROW_TILE rows a thread, plus one row for an R16 row's
 * row-major bytes on their way to the tile; then, for several tokens,
 * every token's x prepared for gemm_r16 (wk_cpu_r16_gemm_prep_floats each,
 * for whichever table: the "amx" one, the only one with r16_prepare_gemm,
 * where the CPU has it). */
static inline size_t wk_cpu_matmul_scratch_floats(int64_t n_in_max, int n_threads, int64_t n_tokens_max)
{
    const struct wk_cpu_kernels *amx = wk_cpu_kernels_for("amx");
    const size_t prep = amx ? wk_cpu_r16_gemm_prep_floats(amx, n_in_max) : wk_cpu_r16_prep_floats(n_in_max);
    return (size_t)n_in_max * (WK_MATMUL_ROW_TILE + 1) * (size_t)n_threads +
           (n_tokens_max > 1 ? (size_t)n_tokens_max * prep : 0);
}

/*
 * Flags of wk_cpu_matmul, wk_cpu_matmul_many and wk_cpu_matmul_glu.
 *
 * WK_MATMUL_PER_TOKEN: with n_tokens > 1, compute every token's product
 * exactly as a call with that token alone (n_tokens == 1) would, bit for
 * bit: the same split of rows across threads, and each token through the
 * single-token kernels (vec_dot_rows_x16 / vec_dot_rows / vec_dot), never
 * the dequantized tile and the f32 GEMM. A thread walks its rows in
 * blocks of wk_cpu_matmul_token_block_rows rows and runs every token over
 * a block before the next, so the block is read from memory once and
 * from cache for the other tokens. For speculative decoding's
 * verification, whose logits must equal those of one-token decode steps.
 * The row kernels give each row the same arithmetic whatever group of
 * rows it is computed in (wk_vec_dot_rows_fn), so the blocks do not
 * change the bits. With n_tokens == 1 the flag changes nothing.
 */
#define WK_MATMUL_PER_TOKEN 1u

/* Rows per block of WK_MATMUL_PER_TOKEN for rows of row_bytes bytes: as
 * many as fit in WK_MATMUL_TOKEN_BLOCK_BYTES (a share of a core's L2),
 * 16 to 64 and a multiple of 16 (the kernels group rows by four). */
#define WK_MATMUL_TOKEN_BLOCK_BYTES (96 * 1024)
static inline int64_t wk_cpu_matmul_token_block_rows(size_t row_bytes)
{
    size_t r = WK_MATMUL_TOKEN_BLOCK_BYTES / (row_bytes ? row_bytes : 1) / 16 * 16;
    return r < 16 ? 16 : r > 64 ? 64 : (int64_t)r;
}

/*
 * y = x · Wᵀ on the pool's threads, with f32 activations.
 *   w:  weight, ne = {n_in, n_out} (n_out rows of n_in), any supported dtype;
 *       n_in must be a multiple of the dtype's block size (checked at load).
 *   x:  [n_tokens, n_in] f32, row-major.
 *   y:  [n_tokens, n_out] f32, written; must not alias x.
 *   scratch: wk_cpu_matmul_scratch_floats(n_in, threads, n_tokens) floats,
 *       64-aligned (used when n_tokens > 1: tiles, and every token's
 *       prepared x for R16 parts, with WK_MATMUL_PER_TOKEN too).
 *   flags: 0 or WK_MATMUL_PER_TOKEN (above).
 * One token (decode) runs the fused dequantize-and-dot kernels over each
 * thread's rows (vec_dot_rows), reading each weight byte once. Several
 * tokens (prefill) dequantize a tile of rows once into scratch and multiply
 * it with every token's row in the f32 GEMM kernel, so dequantization is
 * paid once per row, not once per row and token; or, for an R16 dtype
 * with a gemm_r16 kernel, prepare every token's x once (16-bit x, as
 * decode) and run the integer GEMM over the rows. These round
 * differently from decode (~1e-3 relative on quantized weights), which
 * WK_MATMUL_PER_TOKEN avoids.
 * Deterministic for a given thread count. Not thread-safe on one pool.
 */
void wk_cpu_matmul(struct wk_threadpool *pool, const struct wk_cpu_kernels *k,
                   const struct wk_tensor *w, const float *x, float *y, int64_t n_tokens,
                   float *scratch, unsigned flags);

/* Matrices one wk_cpu_matmul_many call may take. */
#define WK_MATMUL_MAX_PARTS 4

/* y_i = x · W_iᵀ for n (<= WK_MATMUL_MAX_PARTS) weights that share the
 * input (all ne[0] equal), in one dispatch: their rows are split across
 * the threads together. ws, ys: n weights and outputs ([n_tokens,
 * ws[i]->ne[1]] each); other arguments as wk_cpu_matmul. */
void wk_cpu_matmul_many(struct wk_threadpool *pool, const struct wk_cpu_kernels *k, int n,
                        const struct wk_tensor *const *ws, float *const *ys, const float *x,
                        int64_t n_tokens, float *scratch, unsigned flags);

/* Gated linear unit activations (Shazeer 2020). */
enum wk_glu { WK_GLU_NONE = 0, WK_GLU_GELU_TANH = 1, WK_GLU_SILU = 2 };

/* y = act(x · W_gateᵀ) ⊙ (x · W_upᵀ) in one dispatch, each thread applying
 * the activation to its own rows as soon as they are computed. y, y_up:
 * [n_tokens, n_ff] f32 (y_up is scratch); W_gate and W_up of equal shape;
 * flags as wk_cpu_matmul (with WK_MATMUL_PER_TOKEN the activation too is
 * applied per token over the same rows as for one token). */
void wk_cpu_matmul_glu(struct wk_threadpool *pool, const struct wk_cpu_kernels *k,
                       const struct wk_tensor *w_gate, const struct wk_tensor *w_up,
                       const float *x, float *y, float *y_up, int64_t n_tokens, float *scratch,
                       enum wk_glu glu, unsigned flags);

/* k->gemm_f32 on the calling thread, or, where the ISA has no GEMM kernel,
 * the same product through its f32 dot product. Arguments as
 * wk_gemm_f32_fn. */
void wk_cpu_gemm(const struct wk_cpu_kernels *k, int64_t m, int64_t n, int64_t kk, const float *a,
                 int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc);

/* Dequantizes row `row` of w (ne = {n, rows}) into dst [n] f32. */
void wk_cpu_get_row(const struct wk_cpu_kernels *k, const struct wk_tensor *w, int64_t row,
                    float *dst);

/* ------------------------------------------------------------- elementwise */

/* y = x / sqrt(mean(x²) + eps) * g over n floats (g may be NULL for gain 1).
 * y may equal x. Zhang & Sennrich 2019. */
void wk_rms_norm(int64_t n, const float *x, const float *g, float eps, float *y);

/* wk_expf's clamp bounds, -87.3f and 88.3f, defined in ops.c: values the
 * compiler cannot see, so that a caller's x / (1 + wk_expf(-x)) is not
 * split into a second division for the clamped lanes (GCC 12 computed
 * x / (1 + exp(88.3)) for every vector beside the general quotient and
 * blended: two vdivps a vector, most of SwiGLU's and GEGLU's time). */
extern const float wk__expf_lo, wk__expf_hi;

/* e^x for x in [-87.3, 88.3] (clamped outside; NaN gives NaN), within about 2 ulp of
 * the exact value; inline and branch-free so loops using it vectorise.
 * Range reduction by ln 2 split in two parts, degree-6 polynomial (Cody &
 * Waite 1980). */
static inline float wk_expf(float x)
{
    /* clamp into the range where 2^k stays a normal float */
    x = x < wk__expf_lo ? wk__expf_lo : x; /* two selects: if-converted, so loops vectorise */
    x = x > wk__expf_hi ? wk__expf_hi : x;
    const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float kf = x * 1.44269504088896341f + shifter;
    int32_t ki;
    memcpy(&ki, &kf, sizeof ki);
    ki -= 0x4b400000; /* the bits of the shifter */
    kf -= shifter;
    float r = x - kf * 0.693145751953125f - kf * 1.42860682030941723e-6f; /* |r| <= ln2/2 */
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
                                                                              r * (1.0f / 720))))));
    uint32_t bits = (uint32_t)(ki + 127) << 23; /* unsigned: a NaN x (NaN out) leaves ki + 127 negative */
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}


/* In place: x = gelu_tanh(x) * up, n floats (Hendrycks & Gimpel 2016, tanh
 * approximation). */
void wk_geglu(int64_t n, float *x, const float *up);
/* In place: x = silu(x) * up, n floats. */
void wk_swiglu(int64_t n, float *x, const float *up);
/* In place: x = gelu(x + bias) = z/2 (1 + erf(z / sqrt 2)), z = x + bias
 * (bias [n], or NULL for none), n floats: the exact GELU of BERT
 * (Hendrycks & Gimpel 2016), erf by Abramowitz & Stegun 7.1.26 (|error|
 * <= 1.5e-7). */
void wk_gelu_erf(int64_t n, float *x, const float *bias);

/* The smallest e^(x_i - max) a softmax over entries summing to s keeps:
 * FLT_MIN · s, below which e / s would be subnormal. Such entries become
 * exact zeros (their share is under 2^-126, nothing beside the row's
 * largest, at least 1 / n, in f32), so no product downstream meets a
 * subnormal operand (a microcode assist per instruction on Intel cores).
 * The masked entries of a causal row (-inf, e^-87.3 at wk_expf's clamp)
 * are among them where s > 1.04. */
static inline float wk_softmax_floor(double s) { return (float)((double)FLT_MIN * s); }

/* Softmax in place over n floats, max-subtracted; entries whose quotient
 * would be subnormal are 0 (wk_softmax_floor). */
void wk_softmax(int64_t n, float *x);
/*
 * One head's bidirectional attention over n positions (an encoder's, as
 * BERT's self-attention, Vaswani et al. 2017): out_i = sum_j softmax_j(scale
 * q_i . k_j) v_j for i < n, where q_i, k_j, v_j are D f32 elements each at
 * q + i ld, k + j ld, v + j ld, and out_i at out + i ldo. D a multiple of
 * 16; scratch: wk_attn_f32_scratch_floats(n, D) floats, not kept. Scores
 * are summed over e in order, outputs over j in order (multiplications
 * and additions, no FMA), softmax as wk_softmax: the same bits on every
 * ISA. Meant for short sequences (its cost grows as n^2 D without a
 * GEMM's blocking).
 */
void wk_attn_f32(int64_t n, int64_t D, const float *q, const float *k, const float *v, int64_t ld, float scale,
                 float *out, int64_t ldo, float *scratch);
static inline int64_t wk_attn_f32_scratch_floats(int64_t n, int64_t D)
{
    return (D + 4) * ((n + 15) & ~(int64_t)15);
}
/* sum of exp(x[i] - mx) over n floats (wk_expf; 16 float lanes, then
 * double): the normaliser of a log-softmax. */
double wk_sum_exp(int64_t n, const float *x, float mx);
/* The largest of x [n] floats: NaNs are skipped, -inf when n is 0 or
 * every element is NaN; where +0 and -0 are the largest, either may be
 * returned. 16 running maxima (element i in lane i % 16), then the
 * largest of them: one running maximum is a chain of dependent compares
 * (~4 cycles an element). Used by softmax, log-softmax and argmax. */
float wk_max_f32(int64_t n, const float *x);

/* RoPE pairing: NEOX pairs i with i + d/2 (rotate-half, HF); NORM pairs 2i
 * with 2i+1 (interleaved, GGUF Llama after the converter's permutation). */
enum wk_rope_mode { WK_ROPE_NEOX = 0, WK_ROPE_NORM = 1 };

/*
 * Fills cos_sin [n_rot] f32 for position pos: cos θ_i in [0, n_rot/2) and
 * sin θ_i in [n_rot/2, n_rot), θ_i = pos · freq_scale · base^(-2i/n_rot)
 * / freq_factors[i] (freq_factors [n_rot/2] f32, or NULL for 1), computed
 * in double (Su et al. 2021, RoFormer; factors as Llama 3 scaling and
 * ggml's rope_freqs use them). Shared by all heads.
 */
void wk_rope_cos_sin(int64_t pos, int n_rot, float base, float freq_scale,
                     const float *freq_factors, float *cos_sin);

/*
 * Rotates the first n_rot dims of each head in place; dims past n_rot pass
 * through. x: [n_heads, head_dim] f32; cos_sin from wk_rope_cos_sin.
 */
void wk_rope_apply(float *x, int n_heads, int head_dim, int n_rot, const float *cos_sin,
                   enum wk_rope_mode mode);

#endif /* WK_CPU_H */
