/*
 * ops_avx2.c - RMSNorm, GEGLU, SwiGLU, GELU and softmax (../../../ops_template.h)
 * compiled with this folder's AVX2 flags, so the compiler vectorises
 * their loops 8 wide; bit-identical to the baseline build (wk_rms_norm, ...).
 */
#include "kernels_avx2.h"

#define WK_OPS_NAME(x) ops_avx2_##x
#include "../../../ops_template.h"

void wk__avx2_fill_ops(struct wk_cpu_kernels *k)
{
    k->rms_norm = ops_avx2_rms_norm;
    k->geglu = ops_avx2_geglu;
    k->swiglu = ops_avx2_swiglu;
    k->gelu_erf = ops_avx2_gelu_erf;
    k->softmax = ops_avx2_softmax;
    k->attn_f32 = ops_avx2_attn_f32;
    k->sum_exp = ops_avx2_sum_exp;
    k->max_f32 = ops_avx2_max_f32;
}
