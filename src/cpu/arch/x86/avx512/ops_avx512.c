/*
 * ops_avx512.c - RMSNorm, GEGLU, SwiGLU, GELU and softmax (../../../ops_template.h)
 * compiled with this folder's AVX512 flags, so the compiler vectorises
 * their loops 16 wide; bit-identical to the baseline build (wk_rms_norm, ...).
 */
#include "avx512.h"

#define WK_OPS_NAME(x) ops_avx512_##x
#include "../../../ops_template.h"

void wk__avx512_fill_ops(struct wk_cpu_kernels *k)
{
    k->rms_norm = ops_avx512_rms_norm;
    k->geglu = ops_avx512_geglu;
    k->swiglu = ops_avx512_swiglu;
    k->gelu_erf = ops_avx512_gelu_erf;
    k->softmax = ops_avx512_softmax;
    k->attn_f32 = ops_avx512_attn_f32;
    k->sum_exp = ops_avx512_sum_exp;
    k->max_f32 = ops_avx512_max_f32;
}
