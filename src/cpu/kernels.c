/*
 * kernels.c - builds the kernel tables (ref, avx2, avx512) once and picks
 * the best one the CPU and OS support.
 */
#include "wk_cpu.h"
#include "wk_cpu_arch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

float wk__dot_f32_ref(int64_t n, const float *a, const float *b)
{
    float s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

void wk__axpy_f32_ref(int64_t n, float a, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

void wk__gemm_f32_ref(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float *c, int64_t ldc)
{
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) c[j * ldc + i] = wk__dot_f32_ref(k, a + i * lda, b + j * ldb);
}

/* Element l of row i of gemm_rows' a (struct wk_cpu_rows) as a float. */
static float rows_elem(const void *a, const struct wk_cpu_rows *r, int64_t i, int64_t l)
{
    const int64_t o = i * r->lda + (r->blk ? l / r->blk * r->bstride + l % r->blk : l);
    if (r->type == WK_DTYPE_F16) return wk_f16_to_f32(((const wk_f16 *)a)[o]);
    if (r->type == WK_DTYPE_Q8_0)
        return (float)((const int8_t *)a)[o] * wk_f16_to_f32(r->s[(i >> r->s_rsh) * r->lds + (l >> r->s_esh)]);
    return ((const float *)a)[o];
}

/* wk__gemm_f32_ref over gemm_rows' rows (F16, Q8_0, or in blocks): the
 * same products and sums in the same order. */
static void gemm_rows_ref(int64_t m, int64_t n, int64_t k, const void *a, const struct wk_cpu_rows *r, const float *b,
                          int64_t ldb, float *c, int64_t ldc)
{
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            float s = 0;
            for (int64_t l = 0; l < k; l++) s += rows_elem(a, r, i, l) * b[j * ldb + l];
            c[j * ldc + i] = s;
        }
}

/* One reference vec_dot per row; a function per dtype since the table's
 * entries take no dtype argument. */
#define ROWS_REF(name, T)                                                                          \
    static void rows_ref_##name(int64_t n, const void *w, size_t w_stride, const float *x,         \
                                float *out, int64_t n_rows)                                        \
    {                                                                                              \
        wk_vec_dot_fn dot = wk_dtype_traits_get(T)->vec_dot;                                       \
        for (int64_t r = 0; r < n_rows; r++) out[r] = dot(n, (const uint8_t *)w + r * w_stride, x); \
    }
ROWS_REF(f32, WK_DTYPE_F32)
ROWS_REF(f16, WK_DTYPE_F16)
ROWS_REF(bf16, WK_DTYPE_BF16)
ROWS_REF(q4_0, WK_DTYPE_Q4_0)
ROWS_REF(q4_1, WK_DTYPE_Q4_1)
ROWS_REF(q5_0, WK_DTYPE_Q5_0)
ROWS_REF(q5_1, WK_DTYPE_Q5_1)
ROWS_REF(q8_0, WK_DTYPE_Q8_0)
ROWS_REF(q4_k, WK_DTYPE_Q4_K)
ROWS_REF(q5_k, WK_DTYPE_Q5_K)
ROWS_REF(q6_k, WK_DTYPE_Q6_K)
ROWS_REF(q2_k, WK_DTYPE_Q2_K)
ROWS_REF(q3_k, WK_DTYPE_Q3_K)
ROWS_REF(iq4_nl, WK_DTYPE_IQ4_NL)
ROWS_REF(iq4_xs, WK_DTYPE_IQ4_XS)
ROWS_REF(mxfp4, WK_DTYPE_MXFP4)
ROWS_REF(i8g64, WK_DTYPE_I8G64)
ROWS_REF(i4g64, WK_DTYPE_I4G64)

wk_vec_dot_rows_fn wk__vec_dot_rows_ref(enum wk_dtype t)
{
    switch (t) {
    case WK_DTYPE_F32: return rows_ref_f32;
    case WK_DTYPE_F16: return rows_ref_f16;
    case WK_DTYPE_BF16: return rows_ref_bf16;
    case WK_DTYPE_Q4_0: return rows_ref_q4_0;
    case WK_DTYPE_Q4_1: return rows_ref_q4_1;
    case WK_DTYPE_Q5_0: return rows_ref_q5_0;
    case WK_DTYPE_Q5_1: return rows_ref_q5_1;
    case WK_DTYPE_Q8_0: return rows_ref_q8_0;
    case WK_DTYPE_Q4_K: return rows_ref_q4_k;
    case WK_DTYPE_Q5_K: return rows_ref_q5_k;
    case WK_DTYPE_Q6_K: return rows_ref_q6_k;
    case WK_DTYPE_Q2_K: return rows_ref_q2_k;
    case WK_DTYPE_Q3_K: return rows_ref_q3_k;
    case WK_DTYPE_IQ4_NL: return rows_ref_iq4_nl;
    case WK_DTYPE_IQ4_XS: return rows_ref_iq4_xs;
    case WK_DTYPE_MXFP4: return rows_ref_mxfp4;
    case WK_DTYPE_I8G64: return rows_ref_i8g64;
    case WK_DTYPE_I4G64: return rows_ref_i4g64;
    default: return NULL;
    }
}

static struct wk_cpu_kernels g_ref, g_avx2, g_avx512, g_amx; /* written once under g_once */
static struct wk_cpu_kernels g_exact; /* the best table without its x16 entries */
static bool g_have_avx2, g_have_avx512, g_have_amx, g_want_exact;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void fill_ref(struct wk_cpu_kernels *k)
{
    memset(k, 0, sizeof *k);
    k->isa = "ref";
    for (uint32_t t = 0; t < WK_DTYPE_COUNT; t++) {
        const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
        if (!tr || !tr->supported) continue;
        k->vec_dot[t] = tr->vec_dot;
        k->vec_dot_q[t] = tr->vec_dot_q;
        k->vec_dot_rows[t] = wk__vec_dot_rows_ref((enum wk_dtype)t);
        k->quantize[t] = tr->from_f32;
        k->to_f32[t] = tr->to_f32;
    }
    k->dot_f32 = wk__dot_f32_ref;
    k->axpy_f32 = wk__axpy_f32_ref;
    k->gemm_f32 = wk__gemm_f32_ref;
    k->gemm_rows = gemm_rows_ref;
    k->q14_quantize = wk__q14_quantize_ref;
    k->rms_norm = wk_rms_norm;
    k->geglu = wk_geglu;
    k->swiglu = wk_swiglu;
    k->gelu_erf = wk_gelu_erf;
    k->softmax = wk_softmax;
    k->attn_f32 = wk_attn_f32;
    k->sum_exp = wk_sum_exp;
    k->max_f32 = wk_max_f32;
}

static void init_once(void)
{
    const struct wk_cpu_features *f = wk_cpu_features_get();
    fill_ref(&g_ref);
#if defined(__x86_64__)
    if (f->avx2) {
        g_avx2 = g_ref;
        g_avx2.isa = "avx2";
        wk__cpu_fill_avx2(&g_avx2);
        g_have_avx2 = true;
    }
    if (f->avx512) {
        g_avx512 = g_have_avx2 ? g_avx2 : g_ref;
        g_avx512.isa = "avx512";
        wk__cpu_fill_avx512(&g_avx512);
        g_have_avx512 = true;
    }
    if (f->amx_int8 && g_have_avx512) {
        g_amx = g_avx512;
        g_amx.isa = "amx";
        wk__cpu_fill_amx(&g_amx);
        g_have_amx = true;
    }
#else
    (void)f;
#endif
    /* WICK_EXACT=1: decode and prefill with f32 activations everywhere */
    const char *e = getenv("WICK_EXACT");
    g_want_exact = e && *e && strcmp(e, "0") != 0;
    /* (the AMX table differs from the AVX-512 one only in gemm_r16 and
     * vec_dot_rows_r16_tokens, both cleared here) */
    g_exact = g_have_avx512 ? g_avx512 : g_have_avx2 ? g_avx2 : g_ref;
    memset(g_exact.vec_dot_rows_x16, 0, sizeof g_exact.vec_dot_rows_x16);
    memset(g_exact.vec_dot_rows_x16_tokens, 0, sizeof g_exact.vec_dot_rows_x16_tokens);
    memset(g_exact.vec_dot_rows_r16, 0, sizeof g_exact.vec_dot_rows_r16);
    memset(g_exact.vec_dot_rows_r16_tokens, 0, sizeof g_exact.vec_dot_rows_r16_tokens);
    memset(g_exact.gemm_r16, 0, sizeof g_exact.gemm_r16);
    g_exact.r16_prepare = g_exact.r16_prepare_gemm = NULL;
    g_exact.gemm_q14 = NULL;
}

const struct wk_cpu_kernels *wk_cpu_kernels_get(void)
{
    pthread_once(&g_once, init_once);
    if (g_want_exact) return &g_exact;
    if (g_have_amx) return &g_amx;
    if (g_have_avx512) return &g_avx512;
    if (g_have_avx2) return &g_avx2;
    return &g_ref;
}

const struct wk_cpu_kernels *wk_cpu_kernels_for(const char *isa)
{
    pthread_once(&g_once, init_once);
    if (strcmp(isa, "ref") == 0) return &g_ref;
    if (strcmp(isa, "avx2") == 0) return g_have_avx2 ? &g_avx2 : NULL;
    if (strcmp(isa, "avx512") == 0) return g_have_avx512 ? &g_avx512 : NULL;
    if (strcmp(isa, "amx") == 0) return g_have_amx ? &g_amx : NULL;
    return NULL;
}
