/*
 * kernels.c - builds the kernel tables (ref, avx2, avx512) once and picks
 * the best one the CPU and OS support.
 */
#include "wk_cpu.h"
#include "wk_cpu_arch.h"

#include <pthread.h>
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

static struct wk_cpu_kernels g_ref, g_avx2, g_avx512; /* written once under g_once */
static bool g_have_avx2, g_have_avx512;
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
        k->quantize[t] = tr->from_f32;
        k->to_f32[t] = tr->to_f32;
    }
    k->dot_f32 = wk__dot_f32_ref;
    k->axpy_f32 = wk__axpy_f32_ref;
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
#else
    (void)f;
#endif
}

const struct wk_cpu_kernels *wk_cpu_kernels_get(void)
{
    pthread_once(&g_once, init_once);
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
    return NULL;
}
