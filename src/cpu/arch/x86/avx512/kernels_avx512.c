/*
 * kernels_avx512.c - fills the kernel table with the AVX-512 (F, BW, VL, DQ)
 * kernels of this folder, and the VNNI dot products where the CPU has them.
 *
 * The table arrives holding the AVX2 kernels (or the plain-C reference);
 * each file's fill function overwrites only the entries it implements:
 *   float_avx512.c     F32/F16/BF16 dots and dequantization, dot_f32, axpy_f32
 *   quantize_avx512.c  activation quantizers Q8_0, Q8_1, Q8_K
 *   dequant_avx512.c   to_f32 of the quantized weight types
 *   dot_f32_avx512.c   vec_dot: quantized weights with f32 activations
 *   dot_avx512.c       vec_dot_q: integer dots with maddubs/madd (AVX-512BW)
 *   dot_avx512_vnni.c  vec_dot_q with vpdpbusd/vpdpwssd (AVX-512 VNNI)
 *   gemm_avx512.c      gemm_f32, the prefill matrix product
 *   dot_rows_avx512.c  vec_dot_rows (decode): 32-element blocks and floats
 *   dot_rows_k_avx512.c  vec_dot_rows for Q4_K, Q5_K, Q6_K
 *   rows_x16_avx512.c, rows_x16_avx512_vnni.c  vec_dot_rows_x16 (decode
 *                      with 16-bit activations) for Q4_0, Q4_1, Q5_0, Q5_1,
 *                      Q4_K, Q5_K, I4G64, MXFP4; Q8_0, IQ4_NL and the R16
 *                      layouts with VNNI (rows_x16_template.h)
 *   ops_avx512.c       RMSNorm, GEGLU, SwiGLU, softmax (ops_template.h)
 *   q14_avx512_vnni.c  q14_quantize, gemm_q14 (an embedding model's layers)
 *   lowbit_avx512.c    Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4: vec_dot,
 *                      vec_dot_rows, to_f32 (../lowbit_template.h)
 * The last two compile one template, dot_template.h.
 */
#include "avx512.h"

void wk__cpu_fill_avx512(struct wk_cpu_kernels *k)
{
    /* The AVX2 table this one starts from has R16 kernels for every R16
     * dtype (r16_avx2.c); here only the VNNI ones below (measured on
     * AVX-512 CPUs) decide whether matrices are repacked. */
    k->r16_prepare = NULL;
    for (int t = WK_DTYPE_Q4_1_R16; t < WK_DTYPE_COUNT; t++) {
        k->vec_dot_rows_x16[t] = NULL, k->vec_dot_rows_x16_tokens[t] = NULL;
        k->vec_dot_rows_r16[t] = NULL, k->vec_dot_rows_r16_tokens[t] = NULL, k->gemm_r16[t] = NULL;
    }
    /* Q14 products only with VNNI's vpdpwssd below: without it, the AVX2
     * table's vpmaddwd + vpaddd do not beat two 512-bit FMA units */
    k->gemm_q14 = NULL;
    wk__avx512_fill_float(k);
    wk__avx512_fill_quantize(k);
    wk__avx512_fill_dequant(k);
    wk__avx512_fill_dot_f32(k);
    wk__avx512_fill_dot(k);
    wk__avx512_fill_gemm(k);
    wk__avx512_fill_dot_rows(k);
    wk__avx512_fill_dot_rows_k(k);
    wk__avx512_fill_rows_x16(k);
    wk__avx512_fill_ops(k);
    wk__avx512_fill_lowbit(k);
    /* The VNNI code is always in the binary but may only run where the CPU
     * has the instructions (Skylake-SP/X has AVX-512 without them). */
    if (wk_cpu_features_get()->avx512_vnni) {
        wk__avx512_fill_dot_vnni(k);
        wk__avx512_fill_rows_x16_vnni(k);
        wk__avx512_fill_q14_vnni(k);
    }
}
