/*
 * test-cpu.c - every optimized kernel against its plain-C reference, over
 * random data and lengths that are not multiples of the vector width (for
 * block types: odd numbers of blocks, so 2- and 4-block unrolled loops hit
 * their tails); plus the threaded matmul against a double-precision product
 * of dequantized rows, and the elementwise ops against first principles.
 */
#include "check.h"

#include <float.h>

#include "../../src/cpu/wk_cpu.h"
#include "../../src/cpu/wk_cpu_arch.h"

static const char *g_isas[] = {"ref", "avx2", "avx512"};

#include "cpu_blocks.h"

static const enum wk_dtype g_weight_types[] = {
    WK_DTYPE_F32, WK_DTYPE_F16, WK_DTYPE_BF16, WK_DTYPE_Q4_0, WK_DTYPE_Q4_1, WK_DTYPE_Q5_0,
    WK_DTYPE_Q5_1, WK_DTYPE_Q8_0, WK_DTYPE_Q4_K, WK_DTYPE_Q5_K, WK_DTYPE_Q6_K,
    WK_DTYPE_I8G64, WK_DTYPE_I4G64,
    WK_DTYPE_Q2_K, WK_DTYPE_Q3_K, WK_DTYPE_IQ4_NL, WK_DTYPE_IQ4_XS, WK_DTYPE_MXFP4,
};
static const int g_block_counts[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 31, 33};

/* Runs one dot path (f32 activations, or quantized activations) of every
 * ISA against the reference over odd block counts. The tolerance is
 * relative to the sum of |products|, which bounds the reordering error.
 * Float types also take element counts that are not a multiple of 8/16. */
static void check_dot_path(bool quantized)
{
    const struct wk_cpu_kernels *ref = wk_cpu_kernels_for("ref");
    uint64_t seed = quantized ? 42 : 43;
    for (size_t ii = 1; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *k = wk_cpu_kernels_for(g_isas[ii]);
        if (!k) {
            printf("  (%s not available on this CPU)\n", g_isas[ii]);
            continue;
        }
        for (size_t ti = 0; ti < WK_ARRAY_LEN(g_weight_types); ti++) {
            enum wk_dtype t = g_weight_types[ti];
            const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
            if (quantized && !tr->vec_dot_q) continue;
            enum wk_dtype act = quantized ? tr->vec_dot_type : WK_DTYPE_F32;
            const struct wk_dtype_traits *at = wk_dtype_traits_get(act);
            for (size_t bi = 0; bi < WK_ARRAY_LEN(g_block_counts); bi++) {
                int64_t n = g_block_counts[bi] * (tr->is_quantized ? tr->block_size : 37);
                void *w = wk_aligned_alloc(wk_dtype_row_bytes(t, n));
                float *x = wk_aligned_alloc((size_t)n * 4);
                void *xq = wk_aligned_alloc(wk_dtype_row_bytes(act, n) + 64);
                fill_random_blocks(t, w, n / tr->block_size, &seed);
                for (int64_t i = 0; i < n; i++) x[i] = check_rand_f32(&seed);
                if (quantized) ref->quantize[act](x, xq, n);
                else memcpy(xq, x, (size_t)n * 4);
                float *wf = wk_aligned_alloc((size_t)n * 4), *xf = wk_aligned_alloc((size_t)n * 4);
                tr->to_f32(w, wf, n);
                at->to_f32(xq, xf, n);
                double mag = 0;
                for (int64_t i = 0; i < n; i++) mag += fabs((double)wf[i] * xf[i]);
                wk_vec_dot_fn fr = quantized ? ref->vec_dot_q[t] : ref->vec_dot[t];
                wk_vec_dot_fn fk = quantized ? k->vec_dot_q[t] : k->vec_dot[t];
                float want = fr(n, w, xq), got = fk(n, w, xq);
                bool ok = fabs((double)got - want) <= 1e-5 * mag + 1e-6;
                if (!ok)
                    fprintf(stderr, "  %s %s%s n=%lld: got %.9g want %.9g (mag %.3g)\n", k->isa,
                            tr->name, quantized ? " (quantized x)" : "", (long long)n, got, want, mag);
                CHECK(ok);
                wk_aligned_free(w), wk_aligned_free(x), wk_aligned_free(xq);
                wk_aligned_free(wf), wk_aligned_free(xf);
            }
        }
    }
}

static void test_vec_dot_matches_ref(void)
{
    check_dot_path(false);
}

static void test_vec_dot_q_matches_ref(void)
{
    check_dot_path(true);
}

/* Both reference dots equal the double-precision dot of the dequantized
 * rows: the integer formula, the f32 path and the dequantization describe
 * one format. */
static void test_ref_dot_equals_dequantized_dot(void)
{
    const struct wk_cpu_kernels *ref = wk_cpu_kernels_for("ref");
    uint64_t seed = 7;
    for (size_t ti = 0; ti < WK_ARRAY_LEN(g_weight_types); ti++) {
        enum wk_dtype t = g_weight_types[ti];
        const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
        int64_t n = 3 * (tr->is_quantized ? tr->block_size : 64);
        uint8_t w[3 * 256 * 4], xq[3 * 292 + 64];
        float x[3 * 256], wf[3 * 256], xf[3 * 256];
        fill_random_blocks(t, w, n / tr->block_size, &seed);
        for (int64_t i = 0; i < n; i++) x[i] = check_rand_f32(&seed);
        tr->to_f32(w, wf, n);
        double want = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) want += (double)wf[i] * x[i], mag += fabs((double)wf[i] * x[i]);
        double got = ref->vec_dot[t](n, w, x);
        CHECK(fabs(got - want) <= 1e-6 * mag + 1e-7);
        if (!tr->vec_dot_q) continue;
        const struct wk_dtype_traits *at = wk_dtype_traits_get(tr->vec_dot_type);
        ref->quantize[tr->vec_dot_type](x, xq, n);
        at->to_f32(xq, xf, n);
        want = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) want += (double)wf[i] * xf[i], mag += fabs((double)wf[i] * xf[i]);
        /* Q4_1/Q5_1 fold the min through s = d*sum(q) kept as f16, so their
         * min term is exact only to f16 precision. */
        got = ref->vec_dot_q[t](n, w, xq);
        double tol = (t == WK_DTYPE_Q4_1 || t == WK_DTYPE_Q5_1) ? 2e-3 * mag : 1e-5 * mag;
        if (!(fabs(got - want) <= tol + 1e-6))
            fprintf(stderr, "  %s: %.9g vs %.9g (mag %.3g)\n", tr->name, got, want, mag);
        CHECK(fabs(got - want) <= tol + 1e-6);
    }
}

/* Activation quantizers of each ISA produce the same blocks as the
 * reference (same rounding: nearest, ties to even). */
static void test_quantize_matches_ref(void)
{
    static const enum wk_dtype acts[] = {WK_DTYPE_Q8_0, WK_DTYPE_Q8_1, WK_DTYPE_Q8_K};
    const struct wk_cpu_kernels *ref = wk_cpu_kernels_for("ref");
    uint64_t seed = 99;
    for (size_t ii = 1; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *k = wk_cpu_kernels_for(g_isas[ii]);
        if (!k) continue;
        for (size_t ai = 0; ai < WK_ARRAY_LEN(acts); ai++) {
            const struct wk_dtype_traits *tr = wk_dtype_traits_get(acts[ai]);
            for (size_t bi = 0; bi < WK_ARRAY_LEN(g_block_counts); bi++) {
                int64_t n = g_block_counts[bi] * tr->block_size;
                float *x = wk_aligned_alloc((size_t)n * 4);
                for (int64_t i = 0; i < n; i++) x[i] = 3.0f * check_rand_f32(&seed);
                if (bi == 0) x[5] = 0; /* and one all-zero block below */
                if (bi == 1) memset(x, 0, (size_t)tr->block_size * 4);
                size_t bytes = wk_dtype_row_bytes(acts[ai], n);
                uint8_t *a = wk_aligned_alloc(bytes), *b = wk_aligned_alloc(bytes);
                memset(a, 0, bytes), memset(b, 0, bytes);
                ref->quantize[acts[ai]](x, a, n);
                k->quantize[acts[ai]](x, b, n);
                /* The reference is the specification: same scale formula
                 * (d = amax/127, id = 1/d), same rounding (nearest, ties to
                 * even), same sign choice for Q8_K, so the same bytes. */
                int same = memcmp(a, b, bytes) == 0;
                if (!same) fprintf(stderr, "  %s quantize %s n=%lld: blocks differ\n", k->isa, tr->name, (long long)n);
                CHECK(same);
                wk_aligned_free(x), wk_aligned_free(a), wk_aligned_free(b);
            }
        }
    }
}

/* Dequantization of each ISA equals the reference exactly. */
static void test_to_f32_matches_ref(void)
{
    const struct wk_cpu_kernels *ref = wk_cpu_kernels_for("ref");
    uint64_t seed = 5;
    for (size_t ii = 1; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *k = wk_cpu_kernels_for(g_isas[ii]);
        if (!k) continue;
        for (size_t ti = 0; ti < WK_ARRAY_LEN(g_weight_types); ti++) {
            enum wk_dtype t = g_weight_types[ti];
            const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
            int64_t n = 5 * (tr->is_quantized ? tr->block_size : 37);
            void *w = wk_aligned_alloc(wk_dtype_row_bytes(t, n));
            fill_random_blocks(t, w, n / tr->block_size, &seed);
            float *a = wk_aligned_alloc((size_t)n * 4), *b = wk_aligned_alloc((size_t)n * 4);
            ref->to_f32[t](w, a, n);
            k->to_f32[t](w, b, n);
            int bad = 0;
            for (int64_t i = 0; i < n; i++) bad += memcmp(&a[i], &b[i], 4) != 0;
            if (bad) fprintf(stderr, "  %s to_f32 %s: %d differ\n", k->isa, tr->name, bad);
            CHECK_EQ_INT(bad, 0);
            wk_aligned_free(w), wk_aligned_free(a), wk_aligned_free(b);
        }
    }
}

/* The low-bit types' to_f32 of every ISA gives the gguf package's floats
 * bit for bit on the blocks of tests/unit/fixtures/kquant.bin (Q2_K, Q3_K,
 * IQ4_NL, IQ4_XS, and MXFP4 with every code under extreme exponents,
 * subnormal and infinite products included). */
static void test_lowbit_to_f32_fixture(void)
{
    FILE *f = fopen("tests/unit/fixtures/kquant.bin", "rb");
    CHECK(f != NULL);
    if (!f) return;
    uint32_t hdr[3];
    int n_types = 0;
    while (fread(hdr, 4, 3, f) == 3) {
        const struct wk_dtype_traits *tr = wk_dtype_traits_get(hdr[0]);
        CHECK(tr && tr->block_bytes == hdr[2]);
        if (!tr || tr->block_bytes != hdr[2]) break;
        const int64_t n = (int64_t)hdr[1] * tr->block_size;
        uint8_t *blocks = malloc((size_t)hdr[1] * hdr[2]);
        float *want = malloc((size_t)n * 4), *got = malloc((size_t)n * 4);
        CHECK(fread(blocks, hdr[2], hdr[1], f) == hdr[1]);
        CHECK(fread(want, 4, (size_t)n, f) == (size_t)n);
        for (size_t ii = 1; ii < WK_ARRAY_LEN(g_isas); ii++) {
            const struct wk_cpu_kernels *k = wk_cpu_kernels_for(g_isas[ii]);
            if (!k) continue;
            memset(got, 0, (size_t)n * 4);
            k->to_f32[hdr[0]](blocks, got, n);
            int64_t bad = 0;
            for (int64_t i = 0; i < n; i++) bad += memcmp(&got[i], &want[i], 4) != 0;
            if (bad) fprintf(stderr, "  %s to_f32 %s: %lld floats differ\n", k->isa, tr->name, (long long)bad);
            CHECK_EQ_INT(bad, 0);
        }
        n_types++;
        free(blocks), free(want), free(got);
    }
    fclose(f);
    CHECK_EQ_INT(n_types, 5);
}

static void test_f32_helpers_match_ref(void)
{
    uint64_t seed = 3;
    for (size_t ii = 1; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *k = wk_cpu_kernels_for(g_isas[ii]);
        if (!k) continue;
        for (int64_t n = 1; n < 300; n += (n < 40 ? 1 : 37)) {
            float *a = wk_aligned_alloc((size_t)n * 4), *b = wk_aligned_alloc((size_t)n * 4);
            float *y1 = wk_aligned_alloc((size_t)n * 4), *y2 = wk_aligned_alloc((size_t)n * 4);
            double mag = 0;
            for (int64_t i = 0; i < n; i++) {
                a[i] = check_rand_f32(&seed), b[i] = check_rand_f32(&seed);
                y1[i] = y2[i] = check_rand_f32(&seed);
                mag += fabs((double)a[i] * b[i]);
            }
            CHECK(fabs((double)k->dot_f32(n, a, b) - wk__dot_f32_ref(n, a, b)) <= 1e-6 * mag + 1e-7);
            wk__axpy_f32_ref(n, 0.37f, a, y1);
            k->axpy_f32(n, 0.37f, a, y2);
            for (int64_t i = 0; i < n; i++) CHECK_NEAR(y2[i], y1[i], 1e-6, 1e-6);
            wk_aligned_free(a), wk_aligned_free(b), wk_aligned_free(y1), wk_aligned_free(y2);
        }
    }
}

/* Multi-row dots of each ISA equal the reference vec_dot row by row, for
 * row counts 1..9 (kernels group rows in 2s, 4s or 8s: every remainder),
 * odd block counts, and rows longer than one column chunk. */
static void test_vec_dot_rows_matches_ref(void)
{
    const struct wk_cpu_kernels *ref = wk_cpu_kernels_for("ref");
    uint64_t seed = 21;
    for (size_t ii = 1; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *k = wk_cpu_kernels_for(g_isas[ii]);
        if (!k) continue;
        for (size_t ti = 0; ti < WK_ARRAY_LEN(g_weight_types); ti++) {
            enum wk_dtype t = g_weight_types[ti];
            const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
            /* nb = 13: rows of 16640 elements, past the kernels' 16384-element
             * column chunk (x's sub-block sums are made per chunk) */
            for (int nb = 1; nb <= 13; nb += 4) {
                const bool big = nb == 13;
                int64_t n = big ? 16640 : nb * (tr->is_quantized ? tr->block_size : 37);
                size_t row = wk_dtype_row_bytes(t, n), stride = row + 64; /* padded rows */
                for (int64_t n_rows = 1; n_rows <= 9; n_rows += big ? 4 : 1) {
                    uint8_t *w = wk_aligned_alloc(stride * (size_t)n_rows);
                    for (int64_t r = 0; r < n_rows; r++)
                        fill_random_blocks(t, w + r * stride, n / tr->block_size, &seed);
                    float *x = wk_aligned_alloc((size_t)n * 4), got[9], *wf = wk_aligned_alloc((size_t)n * 4);
                    for (int64_t i = 0; i < n; i++) x[i] = check_rand_f32(&seed);
                    k->vec_dot_rows[t](n, w, stride, x, got, n_rows);
                    for (int64_t r = 0; r < n_rows; r++) {
                        float want = ref->vec_dot[t](n, w + r * stride, x);
                        tr->to_f32(w + r * stride, wf, n);
                        double mag = 0;
                        for (int64_t i = 0; i < n; i++) mag += fabs((double)wf[i] * x[i]);
                        bool ok = fabs((double)got[r] - want) <= 1e-5 * mag + 1e-6;
                        if (!ok)
                            fprintf(stderr, "  %s rows %s n=%lld rows=%lld r=%lld: %.9g vs %.9g\n", k->isa,
                                    tr->name, (long long)n, (long long)n_rows, (long long)r, got[r], want);
                        CHECK(ok);
                    }
                    wk_aligned_free(w), wk_aligned_free(x), wk_aligned_free(wf);
                }
            }
        }
    }
}

/* vec_dot_rows_tokens, where an ISA has it: for 1..9 tokens over 1..5 rows
 * (lengths with and without a tail), every output bit for bit the same
 * table's vec_dot_rows for that token alone (speculative verification
 * relies on it), hence within vec_dot_rows' tolerance of the reference. */
static void test_vec_dot_rows_tokens(void)
{
    uint64_t seed = 23;
    int tested = 0;
    for (size_t ii = 1; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *k = wk_cpu_kernels_for(g_isas[ii]);
        if (!k) continue;
        for (int ti = 0; ti < WK_DTYPE_COUNT; ti++) {
            if (!k->vec_dot_rows_tokens[ti]) continue;
            const enum wk_dtype t = (enum wk_dtype)ti;
            const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
            for (int64_t n = 16; n <= 700; n = n * 3 + 5) {
                size_t stride = wk_dtype_row_bytes(t, n) + 64;
                const int max_rows = 5, max_tok = 9;
                uint8_t *w = wk_aligned_alloc(stride * max_rows);
                for (int r = 0; r < max_rows; r++) {
                    float *row = wk_aligned_alloc((size_t)n * 4);
                    for (int64_t i = 0; i < n; i++) row[i] = check_rand_f32(&seed);
                    tr->from_f32(row, w + r * stride, n);
                    wk_aligned_free(row);
                }
                float *x = wk_aligned_alloc((size_t)n * max_tok * 4);
                for (int64_t i = 0; i < n * max_tok; i++) x[i] = check_rand_f32(&seed);
                for (int n_rows = 1; n_rows <= max_rows; n_rows++)
                    for (int n_tok = 1; n_tok <= max_tok; n_tok++) {
                        float got[9 * 8], want[9 * 8];
                        k->vec_dot_rows_tokens[t](n, w, stride, x, (size_t)n, n_tok, got, 8, n_rows);
                        for (int j = 0; j < n_tok; j++)
                            k->vec_dot_rows[t](n, w, stride, x + j * n, want + j * 8, n_rows);
                        bool same = true;
                        for (int j = 0; j < n_tok; j++)
                            same = same && memcmp(got + j * 8, want + j * 8, (size_t)n_rows * 4) == 0;
                        if (!same)
                            fprintf(stderr, "  %s %s n=%lld rows=%d tokens=%d differ\n", k->isa, tr->name,
                                    (long long)n, n_rows, n_tok);
                        CHECK(same);
                        tested++;
                    }
                wk_aligned_free(w), wk_aligned_free(x);
            }
        }
    }
    printf("  %d shapes\n", tested);
}

/* vec_dot_rows_x16_tokens likewise against vec_dot_rows_x16 per token, for
 * the AVX2 kernels and every AVX-512 variant (VNNI where present, and the
 * AVX-512BW one) the CPU runs, over lengths (rounded up to whole blocks)
 * with one and with several column chunks. */
void wk__avx512_fill_rows_x16(struct wk_cpu_kernels *k);
static void test_vec_dot_rows_x16_tokens(void)
{
    uint64_t seed = 29;
    int tested = 0;
    const struct wk_cpu_kernels *k512 = wk_cpu_kernels_for("avx512");
    struct wk_cpu_kernels bw;
    if (k512) bw = *k512, wk__avx512_fill_rows_x16(&bw);
    const struct wk_cpu_kernels *variants[3] = {wk_cpu_kernels_for("avx2"), k512, k512 ? &bw : NULL};
    for (int v = 0; v < 3; v++) {
        const struct wk_cpu_kernels *k = variants[v];
        if (!k) continue;
        for (int ti = 0; ti < WK_DTYPE_COUNT; ti++) {
            if (!k->vec_dot_rows_x16_tokens[ti]) continue;
            const enum wk_dtype t = (enum wk_dtype)ti;
            if (wk_dtype_base(t) != t) continue; /* R16: whole groups of 16 rows, test-cpu-r16 */
            const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
            static const int64_t lens[] = {64, 640, 4160, 9280}; /* AVX2 chunks: 9216 */
            for (size_t li = 0; li < WK_ARRAY_LEN(lens); li++) {
                const int64_t bs = tr->block_size, n = (lens[li] + bs - 1) / bs * bs;
                const size_t stride = wk_dtype_row_bytes(t, n) + 16;
                const int max_rows = 6, max_tok = 9;
                uint8_t *w = wk_aligned_alloc(stride * max_rows);
                for (int r = 0; r < max_rows; r++) fill_random_blocks(t, w + r * stride, n / tr->block_size, &seed);
                float *x = wk_aligned_alloc((size_t)n * max_tok * 4);
                for (int64_t i = 0; i < n * max_tok; i++) x[i] = check_rand_f32(&seed);
                for (int n_rows = 1; n_rows <= max_rows; n_rows++)
                    for (int n_tok = 1; n_tok <= max_tok; n_tok++) {
                        float got[9 * 8], want[9 * 8];
                        k->vec_dot_rows_x16_tokens[t](n, w, stride, x, (size_t)n, n_tok, got, 8, n_rows);
                        bool same = true;
                        for (int j = 0; j < n_tok; j++) {
                            k->vec_dot_rows_x16[t](n, w, stride, x + j * n, want + j * 8, n_rows);
                            same = same && memcmp(got + j * 8, want + j * 8, (size_t)n_rows * 4) == 0;
                        }
                        if (!same)
                            fprintf(stderr, "  x16 tokens %s n=%lld rows=%d tokens=%d differ\n", tr->name,
                                    (long long)n, n_rows, n_tok);
                        CHECK(same);
                        tested++;
                    }
                wk_aligned_free(w), wk_aligned_free(x);
            }
        }
    }
    printf("  %d shapes\n", tested);
    /* (none with WICK_CPU=ref or on a CPU without AVX2: no table has them) */
    CHECK(tested > 0 || !variants[0]);
}

/* The 16-bit activation quantizer against first principles: hi and lo in
 * [-127, 127], d = max|x| / 127 per block, |x - d (hi + lo / 256)| <=
 * max|x| / 32512 per element, and exactness where x is already of that
 * form; blocks of zeros, tiny and huge values, one outlier. */
static void test_x16_quantize(void)
{
    uint64_t seed = 77;
    enum { N = 32 * 6 };
    float x[N], d[N / 32];
    int8_t hi[N], lo[N];
    for (int i = 0; i < N; i++) x[i] = check_rand_f32(&seed);
    for (int i = 32; i < 64; i++) x[i] = 0;                            /* a zero block */
    for (int i = 64; i < 96; i++) x[i] *= 1e-30f;                      /* small */
    for (int i = 96; i < 128; i++) x[i] *= 3e30f;                      /* huge */
    x[140] = 1000.0f;                                                  /* one outlier */
    for (int i = 160; i < 192; i++) x[i] = 4.0f * ((float)(i % 50 - 25) + (float)(i % 19 - 9) / 256.0f);
    x[161] = 127 * 4.0f;                                               /* d = 4 exactly */
    wk__x16_quantize_ref(N, x, d, hi, lo);
    for (int b = 0; b < N / 32; b++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * b + j]));
        CHECK(d[b] == amax / 127.0f);
        for (int j = 0; j < 32; j++) {
            int i = 32 * b + j;
            CHECK(hi[i] >= -127 && hi[i] <= 127 && lo[i] >= -127 && lo[i] <= 127);
            double xt = (double)d[b] * (hi[i] + lo[i] / 256.0);
            CHECK(fabs(xt - x[i]) <= amax / 32512.0 * 1.0001);
        }
    }
    /* x = 4 (hi + lo / 256) with small integers: represented exactly */
    for (int i = 160; i < 192; i++) CHECK((double)d[5] * (hi[i] + lo[i] / 256.0) == x[i]);
}

/* vec_dot_rows_x16 of each ISA that has it, and the reference, equal the
 * double-precision dot of the dequantized rows with x~ (the reference
 * quantizer's rounding of x) within 1e-5 of the sum of |products|, and
 * the f32 dot within the rounding bound: sum |w| * max|x| / 32512 per
 * block. Row counts 1..9, odd block counts, and n = 2080 and 9248 (more
 * than one column chunk of the AVX-512 and of the AVX2 kernels). */
void wk__avx512_fill_rows_x16(struct wk_cpu_kernels *k); /* the AVX-512BW (no VNNI) variant */

/* The vec_dot_rows_x16 variants under test, by index: 0 the reference,
 * 1 AVX2, 2 AVX-512 (with VNNI where the CPU has it), 3 AVX-512BW without
 * VNNI. NULL where this CPU cannot run it or the variant has none for t;
 * *name gets the variant's name. */
#define N_X16_VARIANTS 4
static const enum wk_dtype g_x16_types[] = {WK_DTYPE_Q4_0, WK_DTYPE_Q4_1, WK_DTYPE_Q5_0, WK_DTYPE_Q5_1,
                                            WK_DTYPE_I4G64, WK_DTYPE_Q8_0, WK_DTYPE_Q4_K, WK_DTYPE_Q5_K,
                                            WK_DTYPE_MXFP4, WK_DTYPE_IQ4_NL, WK_DTYPE_Q6_K};
static wk_vec_dot_rows_fn x16_variant(int v, enum wk_dtype t, const char **name)
{
    static const char *names[N_X16_VARIANTS] = {"ref", "avx2", "avx512", "avx512bw"};
    *name = names[v];
    if (v == 0) return wk__vec_dot_rows_x16_ref(t);
    const struct wk_cpu_kernels *k = wk_cpu_kernels_for(v == 1 ? "avx2" : "avx512");
    if (!k) return NULL;
    if (v < 3) return k->vec_dot_rows_x16[t];
    struct wk_cpu_kernels bw = *k;
    wk__avx512_fill_rows_x16(&bw);
    return bw.vec_dot_rows_x16[t];
}

/* Edge blocks of x for every vec_dot_rows_x16 (reference, each ISA, the
 * AVX-512BW variant): a NaN anywhere in a block makes the dot NaN (as with
 * f32 activations), wherever it sits relative to the block's maximum; a
 * block with max|x| below WK_X16_MIN_AMAX (1e-37: 1/d would overflow)
 * counts as zeros, so the dot equals that of the other blocks. */
static void test_vec_dot_rows_x16_nan_and_tiny(void)
{
    uint64_t seed = 5;
    for (size_t ti = 0; ti < WK_ARRAY_LEN(g_x16_types); ti++) {
        enum wk_dtype t = g_x16_types[ti];
        /* three blocks of x (rounded up to whole weight blocks: I4G64 two, Q4_K one);
         * the second one, x[32..63], is the odd one */
        const int64_t bs = wk_dtype_traits_get(t)->block_size, n = (96 + bs - 1) / bs * bs;
        size_t row = wk_dtype_row_bytes(t, n);
        uint8_t *w = wk_aligned_alloc(row * 3);
        for (int r = 0; r < 3; r++) fill_random_blocks(t, w + r * row, n / bs, &seed);
        for (int v = 0; v < N_X16_VARIANTS; v++) {
            const char *name;
            wk_vec_dot_rows_fn f = x16_variant(v, t, &name);
            if (!f) continue;
            float x[256], out[3], base[3];
            for (int i = 0; i < n; i++) x[i] = check_rand_f32(&seed);
            for (int i = 32; i < 64; i++) x[i] = 0;
            f(n, w, row, x, base, 3);
            for (int i = 32; i < 64; i++) x[i] = (float)(i - 47) * 1e-37f;
            f(n, w, row, x, out, 3);
            for (int r = 0; r < 3; r++) CHECK(out[r] == base[r]);
            for (int big = 32; big < 64; big += 7)
                for (int nanpos = 32; nanpos < 64; nanpos += 5) {
                    for (int i = 32; i < 64; i++) x[i] = check_rand_f32(&seed);
                    x[big] = 100.0f;
                    x[nanpos] = NAN;
                    f(n, w, row, x, out, 3);
                    for (int r = 0; r < 3; r++) CHECK(isnan(out[r]));
                }
        }
        wk_aligned_free(w);
    }
}

static void test_vec_dot_rows_x16(void)
{
    /* 289 blocks: more than one column chunk of the AVX2 kernels (9216) */
    static const int blocks[] = {1, 3, 5, 9, 65, 289};
    uint64_t seed = 23;
    int n_checked = 0;
    for (int v = 0; v < N_X16_VARIANTS; v++) {
        for (size_t ti = 0; ti < WK_ARRAY_LEN(g_x16_types); ti++) {
            enum wk_dtype t = g_x16_types[ti];
            const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
            const char *name;
            wk_vec_dot_rows_fn f = x16_variant(v, t, &name);
            if (!f) continue;
            for (size_t bi = 0; bi < WK_ARRAY_LEN(blocks); bi++) {
                int64_t n = tr->block_size * blocks[bi];
                size_t row = wk_dtype_row_bytes(t, n), stride = row + 16;
                for (int64_t n_rows = 1; n_rows <= 9; n_rows += bi >= 4 ? 4 : 1) {
                    uint8_t *w = wk_aligned_alloc(stride * (size_t)n_rows);
                    for (int64_t r = 0; r < n_rows; r++)
                        fill_random_blocks(t, w + r * stride, n / tr->block_size, &seed);
                    float *x = wk_aligned_alloc((size_t)n * 4), *wf = wk_aligned_alloc((size_t)n * 4);
                    float *d = wk_aligned_alloc((size_t)n / 32 * 4), got[9];
                    int8_t *hi = wk_aligned_alloc((size_t)n), *lo = wk_aligned_alloc((size_t)n);
                    for (int64_t i = 0; i < n; i++) x[i] = check_rand_f32(&seed) * (i % 32 == 5 ? 4 : 1);
                    wk__x16_quantize_ref(n, x, d, hi, lo);
                    f(n, w, stride, x, got, n_rows);
                    for (int64_t r = 0; r < n_rows; r++) {
                        tr->to_f32(w + r * stride, wf, n);
                        double want = 0, exact = 0, mag = 0, bound = 0;
                        for (int64_t i = 0; i < n; i++) {
                            double xt = (double)d[i / 32] * (hi[i] + lo[i] / 256.0);
                            want += (double)wf[i] * xt;
                            exact += (double)wf[i] * x[i];
                            mag += fabs((double)wf[i] * xt);
                            bound += fabs((double)wf[i]) * d[i / 32] * 127.0 / 32512.0;
                        }
                        bool ok = fabs(got[r] - want) <= 1e-5 * mag + 1e-6 &&
                                  fabs(got[r] - exact) <= bound + 1e-5 * mag + 1e-6;
                        if (!ok)
                            fprintf(stderr, "  %s rows_x16 %s n=%lld rows=%lld r=%lld: %.9g vs %.9g (f32 %.9g)\n",
                                    name, tr->name, (long long)n, (long long)n_rows, (long long)r, got[r],
                                    want, exact);
                        CHECK(ok);
                        n_checked++;
                    }
                    wk_aligned_free(w), wk_aligned_free(x), wk_aligned_free(wf);
                    wk_aligned_free(d), wk_aligned_free(hi), wk_aligned_free(lo);
                }
            }
        }
    }
    CHECK(n_checked > 0);
}

/* The table's RMSNorm, GEGLU, SwiGLU, GELU (erf) and softmax of every ISA equal the
 * baseline build (wk_rms_norm, ...) bit for bit: one source, the same
 * operations in the same order, only the vector width differs. Lengths
 * around the vector widths; inputs spanning the exp clamp (|x| > 88). */
static void test_ops_tables_match_baseline(void)
{
    static const int64_t lens[] = {1, 7, 15, 16, 17, 33, 64, 100, 640, 2051};
    uint64_t seed = 91;
    for (size_t ii = 1; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *k = wk_cpu_kernels_for(g_isas[ii]);
        if (!k) continue;
        for (size_t li = 0; li < WK_ARRAY_LEN(lens); li++) {
            int64_t n = lens[li];
            float *x = wk_aligned_alloc((size_t)n * 4), *g = wk_aligned_alloc((size_t)n * 4);
            float *a = wk_aligned_alloc((size_t)n * 4), *b = wk_aligned_alloc((size_t)n * 4);
            for (int64_t i = 0; i < n; i++) {
                x[i] = check_rand_f32(&seed) * (i % 13 == 3 ? 120.0f : 6.0f);
                g[i] = 1.0f + check_rand_f32(&seed);
            }
            wk_rms_norm(n, x, g, 1e-6f, a);
            k->rms_norm(n, x, g, 1e-6f, b);
            CHECK(memcmp(a, b, (size_t)n * 4) == 0);
            wk_rms_norm(n, x, NULL, 1e-6f, a);
            k->rms_norm(n, x, NULL, 1e-6f, b);
            CHECK(memcmp(a, b, (size_t)n * 4) == 0);
            /* an in-place op on a copy of x each way: the same bytes */
#define SAME_IN_PLACE(REF, ISA)                                                                    \
    do {                                                                                           \
        memcpy(a, x, (size_t)n * 4), memcpy(b, x, (size_t)n * 4);                                  \
        REF, ISA;                                                                                  \
        CHECK(memcmp(a, b, (size_t)n * 4) == 0);                                                   \
    } while (0)
            SAME_IN_PLACE(wk_geglu(n, a, g), k->geglu(n, b, g));
            SAME_IN_PLACE(wk_swiglu(n, a, g), k->swiglu(n, b, g));
            SAME_IN_PLACE(wk_gelu_erf(n, a, g), k->gelu_erf(n, b, g));
            SAME_IN_PLACE(wk_gelu_erf(n, a, NULL), k->gelu_erf(n, b, NULL));
            SAME_IN_PLACE(wk_softmax(n, a), k->softmax(n, b));
#undef SAME_IN_PLACE
            CHECK(wk_sum_exp(n, x, 3.0f) == k->sum_exp(n, x, 3.0f));
            float mx = -INFINITY; /* one pass in order */
            for (int64_t i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
            CHECK(wk_max_f32(n, x) == mx && k->max_f32(n, x) == mx);
            double sum = 0;
            for (int64_t i = 0; i < n; i++) sum += b[i];
            CHECK(fabs(sum - 1.0) < 1e-5);
            wk_aligned_free(x), wk_aligned_free(g), wk_aligned_free(a), wk_aligned_free(b);
        }
    }
}

/* Every table's softmax gives exact zeros where e^(x - max) / sum would be
 * subnormal, among them a causal row's masked -inf entries (wk_expf's clamp
 * makes them e^-87.3, whose quotient by a sum of 14 is subnormal), and no
 * subnormal anywhere; every other entry is e^(x - max) / sum computed in
 * double from the definition, to a few ulp. Fails where the floor is gone
 * (the -inf and -90 entries then hold ~1e-39) or cuts a normal quotient. */
static void test_softmax_floor(void)
{
    enum { N = 40 };
    float x[N];
    x[0] = 0, x[1] = -INFINITY, x[2] = -90, x[3] = -80, x[4] = -83.0f;
    for (int i = 5; i < N; i++) x[i] = -1;
    double sum = 0;
    for (int i = 0; i < N; i++) sum += exp((double)x[i]);
    for (size_t ii = 0; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *k = wk_cpu_kernels_for(g_isas[ii]);
        if (!k) continue;
        float p[N];
        memcpy(p, x, sizeof p);
        k->softmax(N, p);
        CHECK(p[1] == 0.0f && p[2] == 0.0f); /* e^-87.3 / 14.2 and e^-90 / 14.2: subnormal */
        for (int i = 0; i < N; i++) {
            CHECK(fpclassify(p[i]) != FP_SUBNORMAL);
            if (i == 1 || i == 2) continue;
            CHECK(p[i] >= FLT_MIN); /* e^-83 / 14.2 = 6.4e-38 is normal and kept */
            CHECK_NEAR(p[i], exp((double)x[i]) / sum, 0, 4e-7);
        }
    }
}

/* wk_attn_f32 (one head's bidirectional attention) against attention in
 * double from its definition (softmax of scaled dot products, then the
 * weighted sum of v), and every table's attn_f32 against the baseline bit
 * for bit; lengths around 16, rows of q, k, v interleaved at a stride (as
 * BERT's heads lie in its [T, E] rows), out at another. */
static void test_attn_f32(void)
{
    static const int64_t lens[] = {1, 2, 5, 15, 16, 17, 40, 64};
    static const int64_t dims[] = {16, 32, 64};
    uint64_t seed = 123;
    for (size_t di = 0; di < WK_ARRAY_LEN(dims); di++)
        for (size_t li = 0; li < WK_ARRAY_LEN(lens); li++) {
            const int64_t n = lens[li], D = dims[di], ld = 3 * D + 5, ldo = D + 3;
            float *qkv = wk_aligned_alloc((size_t)(n * ld) * 4), *a = wk_aligned_alloc((size_t)(n * ldo) * 4);
            float *b = wk_aligned_alloc((size_t)(n * ldo) * 4);
            float *sc = wk_aligned_alloc((size_t)wk_attn_f32_scratch_floats(n, D) * 4);
            for (int64_t i = 0; i < n * ld; i++) qkv[i] = check_rand_f32(&seed) * 2.0f;
            const float *q = qkv, *k = qkv + D, *v = qkv + 2 * D, scale = 1.0f / sqrtf((float)D);
            wk_attn_f32(n, D, q, k, v, ld, scale, a, ldo, sc);
            double worst = 0;
            for (int64_t i = 0; i < n; i++) {
                double s[64], mx = -1e300, sum = 0;
                for (int64_t j = 0; j < n; j++) {
                    s[j] = 0;
                    for (int64_t e = 0; e < D; e++) s[j] += (double)q[i * ld + e] * k[j * ld + e];
                    s[j] *= scale;
                    mx = s[j] > mx ? s[j] : mx;
                }
                for (int64_t j = 0; j < n; j++) sum += s[j] = exp(s[j] - mx);
                for (int64_t e = 0; e < D; e++) {
                    double o = 0;
                    for (int64_t j = 0; j < n; j++) o += s[j] / sum * v[j * ld + e];
                    worst = fmax(worst, fabs(o - a[i * ldo + e]));
                }
            }
            CHECK(worst < 2e-6);
            for (size_t ii = 1; ii < WK_ARRAY_LEN(g_isas); ii++) {
                const struct wk_cpu_kernels *kt = wk_cpu_kernels_for(g_isas[ii]);
                if (!kt) continue;
                memset(b, 0, (size_t)(n * ldo) * 4);
                kt->attn_f32(n, D, q, k, v, ld, scale, b, ldo, sc);
                for (int64_t i = 0; i < n; i++) CHECK(memcmp(a + i * ldo, b + i * ldo, (size_t)D * 4) == 0);
            }
            wk_aligned_free(qkv), wk_aligned_free(a), wk_aligned_free(b), wk_aligned_free(sc);
        }
}

/* max_f32 of every table: NaNs skipped wherever they fall (in the 16
 * lanes or the tail), -inf for none or all NaN, the largest found in any
 * lane and in the tail, -inf entries (a causal mask) below everything. */
static void test_max_f32(void)
{
    for (size_t ii = 0; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *k = wk_cpu_kernels_for(g_isas[ii]);
        if (!k) continue;
        float x[40];
        CHECK(k->max_f32(0, x) == -INFINITY);
        for (int i = 0; i < 40; i++) x[i] = NAN;
        CHECK(k->max_f32(40, x) == -INFINITY);
        for (int at = 0; at < 40; at++) { /* the largest at each place, NaNs and -inf around it */
            for (int i = 0; i < 40; i++) x[i] = i % 5 == 0 ? NAN : i % 7 == 0 ? -INFINITY : -100.0f + (float)i;
            x[at] = 7.5f;
            CHECK(k->max_f32(40, x) == 7.5f);
            CHECK(k->max_f32(at + 1, x) == 7.5f);
        }
        for (int i = 0; i < 40; i++) x[i] = -INFINITY;
        x[39] = -3.0f;
        CHECK(k->max_f32(39, x) == -INFINITY && k->max_f32(40, x) == -3.0f);
    }
}

/* The f32 GEMM of each ISA (and the reference) equals the double dot
 * product of each row pair, for shapes around the register-block sizes
 * and unaligned, padded strides. */
static void test_gemm_f32(void)
{
    uint64_t seed = 31;
    static const int64_t ms[] = {1, 3, 8, 15, 16, 17, 33, 64};
    static const int64_t ns[] = {1, 2, 4, 5, 7, 9, 16};
    static const int64_t ks[] = {1, 7, 16, 33, 64, 100};
    for (size_t ii = 0; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *kt = wk_cpu_kernels_for(g_isas[ii]);
        if (!kt) continue;
        int bad = 0;
        for (size_t a_i = 0; a_i < WK_ARRAY_LEN(ms); a_i++)
            for (size_t b_i = 0; b_i < WK_ARRAY_LEN(ns); b_i++)
                for (size_t c_i = 0; c_i < WK_ARRAY_LEN(ks); c_i++) {
                    int64_t m = ms[a_i], n = ns[b_i], k = ks[c_i];
                    int64_t lda = k + 3, ldb = k + 5, ldc = m + 2;
                    float *a = wk_aligned_alloc((size_t)(m * lda + 1) * 4);
                    float *b = wk_aligned_alloc((size_t)(n * ldb + 1) * 4);
                    float *c = wk_aligned_alloc((size_t)(n * ldc) * 4);
                    for (int64_t i = 0; i < m * lda + 1; i++) a[i] = check_rand_f32(&seed);
                    for (int64_t i = 0; i < n * ldb + 1; i++) b[i] = check_rand_f32(&seed);
                    for (int64_t i = 0; i < n * ldc; i++) c[i] = 12345.0f;
                    /* offset by one float: rows not 64-byte aligned */
                    kt->gemm_f32(m, n, k, a + 1, lda, b + 1, ldb, c, ldc);
                    for (int64_t j = 0; j < n; j++) {
                        for (int64_t i = 0; i < m; i++) {
                            double want = 0, mag = 0;
                            for (int64_t l = 0; l < k; l++) {
                                double p = (double)a[1 + i * lda + l] * b[1 + j * ldb + l];
                                want += p, mag += fabs(p);
                            }
                            if (!(fabs(c[j * ldc + i] - want) <= 1e-5 * mag + 1e-6)) bad++;
                        }
                        for (int64_t i = m; i < ldc; i++) bad += c[j * ldc + i] != 12345.0f; /* untouched */
                    }
                    wk_aligned_free(a), wk_aligned_free(b), wk_aligned_free(c);
                }
        if (bad) fprintf(stderr, "  gemm %s: %d elements off\n", kt->isa, bad);
        CHECK_EQ_INT(bad, 0);
    }
}

/* Weights packed once (gemm_f32_pack, where the table has it): the
 * prepacked product equals the same table's gemm_f32_packed bit for bit
 * (AVX2: 128-column pieces, 16-row panels, tiles of 6 rows of b; AVX-512:
 * 256-column pieces, 32-row panels, tiles of 12), from row 0 and from a
 * later row block, over a first multiple of 32 rows only, and from a
 * packing made one row block at a time, over the first columns only
 * (gemm_f32_prepacked_cols), for shapes around the block sizes (k past one piece,
 * m past one 64-row block, partial panels), rows of b from 1 to past
 * the few-groups order. */
static void test_gemm_prepacked(void)
{
    uint64_t seed = 37;
    /* 600: more row blocks than the GEMM takes at once (8) */
    /* 100: a last block of 36 rows, a 16-row panel after a 32-row one */
    static const int64_t ms[] = {1, 8, 9, 64, 70, 100, 150, 600};
    /* 1, 2: two panels at a time (AVX2); 7, 13: groups of like size; 90:
     * AVX-512's most groups panel by panel (8); 100: more groups than
     * either takes panel by panel (then several row blocks at once) */
    static const int64_t ns[] = {1, 2, 5, 7, 13, 90, 100};
    static const int64_t ks[] = {3, 128, 256, 300, 530};
    int n_isas = 0, n_cols = 0;
    for (size_t ii = 0; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *kt = wk_cpu_kernels_for(g_isas[ii]);
        if (!kt || !kt->gemm_f32_prepacked) continue;
        const wk_gemm_f32_fn packed = kt->gemm_f32_packed;
        CHECK(packed != NULL);
        if (!packed) continue;
        n_isas++;
        int bad = 0;
        for (size_t a_i = 0; a_i < WK_ARRAY_LEN(ms); a_i++)
            for (size_t b_i = 0; b_i < WK_ARRAY_LEN(ns); b_i++)
                for (size_t c_i = 0; c_i < WK_ARRAY_LEN(ks); c_i++) {
                    const int64_t m = ms[a_i], n = ns[b_i], k = ks[c_i], lda = k + 3, ldb = k + 5, ldc = m + 1;
                    float *a = wk_aligned_alloc((size_t)(m * lda) * 4), *b = wk_aligned_alloc((size_t)(n * ldb) * 4);
                    float *pa = wk_aligned_alloc(kt->gemm_f32_pack_floats(m, k) * 4);
                    float *c1 = wk_aligned_alloc((size_t)(n * ldc) * 4), *c2 = wk_aligned_alloc((size_t)(n * ldc) * 4);
                    for (int64_t i = 0; i < m * lda; i++) a[i] = check_rand_f32(&seed);
                    for (int64_t i = 0; i < n * ldb; i++) b[i] = check_rand_f32(&seed);
                    kt->gemm_f32_pack(m, k, a, lda, pa);
                    for (int64_t r0 = 0; r0 < m; r0 += WK_GEMM_PACK_ROWS) {
                        for (int64_t i = 0; i < n * ldc; i++) c1[i] = c2[i] = 7.0f;
                        packed(m - r0, n, k, a + r0 * lda, lda, b, ldb, c1, ldc);
                        kt->gemm_f32_prepacked(m - r0, n, k, pa + r0 * k, b, ldb, c2, ldc);
                        bad += memcmp(c1, c2, (size_t)(n * ldc) * 4) != 0;
                    }
                    /* the first e rows only (e a multiple of 32), as a
                     * prefill's attention reads its keys */
                    for (int64_t e = 32; e < m; e += 32) {
                        for (int64_t i = 0; i < n * ldc; i++) c1[i] = c2[i] = 7.0f;
                        packed(e, n, k, a, lda, b, ldb, c1, ldc);
                        kt->gemm_f32_prepacked(e, n, k, pa, b, ldb, c2, ldc);
                        bad += memcmp(c1, c2, (size_t)(n * ldc) * 4) != 0;
                    }
                    /* the first kp of the k columns (gemm_f32_prepacked_cols,
                     * where the table has it), as a prefill's attention reads
                     * its values: within the first piece, at its end, into a
                     * partial last piece, all; from row 0 and a later block */
                    const int64_t kps[] = {1, 17, 255, 256, 257, k / 2 + 1, k - 1, k};
                    for (size_t p_i = 0; kt->gemm_f32_prepacked_cols && p_i < WK_ARRAY_LEN(kps); p_i++) {
                        const int64_t kp = kps[p_i];
                        if (kp < 1 || kp > k) continue;
                        for (int64_t r0 = 0; r0 < m; r0 += m > WK_GEMM_PACK_ROWS ? WK_GEMM_PACK_ROWS : m) {
                            for (int64_t i = 0; i < n * ldc; i++) c1[i] = c2[i] = 7.0f;
                            packed(m - r0, n, kp, a + r0 * lda, lda, b, ldb, c1, ldc);
                            kt->gemm_f32_prepacked_cols(m - r0, n, kp, k, pa + r0 * k, b, ldb, c2, ldc);
                            bad += memcmp(c1, c2, (size_t)(n * ldc) * 4) != 0;
                            n_cols++;
                        }
                    }
                    /* packed a row block at a time, each at dst + r0 k:
                     * the bytes of the whole packing */
                    float *pb = wk_aligned_alloc(kt->gemm_f32_pack_floats(m, k) * 4);
                    memset(pb, 0, kt->gemm_f32_pack_floats(m, k) * 4);
                    for (int64_t r0 = 0; r0 < m; r0 += WK_GEMM_PACK_ROWS)
                        kt->gemm_f32_pack(WK_MIN(WK_GEMM_PACK_ROWS, m - r0), k, a + r0 * lda, lda, pb + r0 * k);
                    for (int64_t i = 0; i < n * ldc; i++) c1[i] = c2[i] = 7.0f;
                    kt->gemm_f32_prepacked(m, n, k, pa, b, ldb, c1, ldc);
                    kt->gemm_f32_prepacked(m, n, k, pb, b, ldb, c2, ldc);
                    bad += memcmp(c1, c2, (size_t)(n * ldc) * 4) != 0;
                    wk_aligned_free(pb);
                    /* each row of b alone gives its row of the product bit
                     * for bit: no element's sum depends on n or on the group
                     * its row of b falls in */
                    kt->gemm_f32_prepacked(m, n, k, pa, b, ldb, c2, ldc);
                    for (int64_t j = 0; j < n; j++) {
                        kt->gemm_f32_prepacked(m, 1, k, pa, b + j * ldb, ldb, c1, ldc);
                        bad += memcmp(c1, c2 + j * ldc, (size_t)m * 4) != 0;
                    }
                    wk_aligned_free(a), wk_aligned_free(b), wk_aligned_free(pa);
                    wk_aligned_free(c1), wk_aligned_free(c2);
                }
        if (bad) fprintf(stderr, "  prepacked gemm %s: %d products differ from the packed path\n", kt->isa, bad);
        CHECK_EQ_INT(bad, 0);
    }
    printf("  prepacked gemm checked on %d ISA(s), %d products over a prefix of the columns\n", n_isas, n_cols);
}

/* Q14 (wk_cpu.h): every table's q14_quantize and, where a table has it,
 * gemm_q14 give the references' bits (wk__q14_quantize_ref,
 * wk__gemm_q14_ref), over shapes around the kernel's tiles (partial
 * panels, 1..6-row groups of x, more groups than it prefetches for), from
 * a later panel block, a row of x alone as in any group; past m nothing
 * is written. The reference against first principles: each element
 * within the bound its roundings allow (half a step of x's block and of
 * the weight row, |x| <= block max) of the double product; no int32
 * overflow at the extremes (every |x| and |w| at its row's or block's
 * max, so every block sums to +-32 * 8191^2); zeros give 0, and so does a
 * block of values below 8191 / FLT_MAX, whose factor overflows (AVX2 packed
 * its NaN integers as -32768 before); a NaN or infinity in a block of x or
 * a weight row gives NaN for its row or column only. */
static void test_q14(void)
{
    uint64_t seed = 71;
    static const int64_t ms[] = {1, 17, 32, 40, 64, 100};
    static const int64_t ns[] = {1, 5, 6, 7, 13, 25, 30};
    static const int64_t ks[] = {32, 64, 384, 544};
    int bad_q = 0, bad_g = 0, bad_bound = 0, n_gemm = 0;
    double worst = 0;
    for (size_t a_i = 0; a_i < WK_ARRAY_LEN(ms); a_i++)
        for (size_t b_i = 0; b_i < WK_ARRAY_LEN(ns); b_i++)
            for (size_t c_i = 0; c_i < WK_ARRAY_LEN(ks); c_i++) {
                const int64_t m = ms[a_i], n = ns[b_i], k = ks[c_i], lda = k + 3, ldx = k + 5, ldc = m + 3;
                const int64_t ldq = k + 32, lds = k / 32 + 1;
                float *a = wk_aligned_alloc((size_t)(m * lda) * 4), *x = wk_aligned_alloc((size_t)(n * ldx) * 4);
                for (int64_t i = 0; i < m * lda; i++) a[i] = check_rand_f32(&seed) * (i % 7 == 0 ? 4.0f : 0.1f);
                for (int64_t i = 0; i < n * ldx; i++) x[i] = check_rand_f32(&seed) * (i % 5 == 0 ? 30.0f : 1.0f);
                void *pk = wk_aligned_alloc(wk_q14_pack_bytes(m, k));
                int16_t *pw;
                float *sw;
                wk_q14_pack(m, k, a, lda, pk, &pw, &sw);
                int16_t *xq = wk_aligned_alloc((size_t)(n * ldq) * 2), *xq2 = wk_aligned_alloc((size_t)(n * ldq) * 2);
                float *sx = wk_aligned_alloc((size_t)(n * lds) * 4), *sx2 = wk_aligned_alloc((size_t)(n * lds) * 4);
                wk__q14_quantize_ref(n, k, x, ldx, xq, ldq, sx, lds);
                float *c1 = wk_aligned_alloc((size_t)(n * ldc) * 4), *c2 = wk_aligned_alloc((size_t)(n * ldc) * 4);
                for (int64_t i = 0; i < n * ldc; i++) c1[i] = 7.0f;
                wk__gemm_q14_ref(m, n, k, pw, sw, xq, ldq, sx, lds, c1, ldc);
                /* the reference against the double product */
                for (int64_t j = 0; j < n; j++)
                    for (int64_t i = 0; i < m; i++) {
                        double exact = 0, bound = 0, mag = 0;
                        for (int64_t l = 0; l < k; l++) {
                            const double w = a[i * lda + l], v = x[j * ldx + l], s_x = sx[j * lds + l / 32];
                            exact += w * v, mag += fabs(w * v);
                            bound += 0.5001 * (fabs(w) * s_x + fabs(v) * sw[i]) + 0.2501 * s_x * sw[i];
                        }
                        const double err = fabs(c1[j * ldc + i] - exact);
                        bad_bound += !(err <= bound + 2e-6 * mag);
                        worst = WK_MAX(worst, err / (bound + 1e-30));
                    }
                for (size_t ii = 0; ii < WK_ARRAY_LEN(g_isas); ii++) {
                    const struct wk_cpu_kernels *kt = wk_cpu_kernels_for(g_isas[ii]);
                    if (!kt) continue;
                    CHECK(kt->q14_quantize != NULL);
                    memset(xq2, 0x55, (size_t)(n * ldq) * 2);
                    kt->q14_quantize(n, k, x, ldx, xq2, ldq, sx2, lds);
                    for (int64_t j = 0; j < n; j++)
                        bad_q += memcmp(xq + j * ldq, xq2 + j * ldq, (size_t)k * 2) != 0 ||
                                 memcmp(sx + j * lds, sx2 + j * lds, (size_t)(k / 32) * 4) != 0;
                    if (!kt->gemm_q14) continue;
                    n_gemm++;
                    for (int64_t i = 0; i < n * ldc; i++) c2[i] = 7.0f;
                    kt->gemm_q14(m, n, k, pw, sw, xq, ldq, sx, lds, c2, ldc);
                    bad_g += memcmp(c1, c2, (size_t)(n * ldc) * 4) != 0; /* 7.0 past m both */
                    /* from the second panel block, and each row of x alone */
                    if (m > 64) {
                        kt->gemm_q14(m - 64, n, k, pw + 64 * k, sw + 64, xq, ldq, sx, lds, c2 + 64, ldc);
                        bad_g += memcmp(c1, c2, (size_t)(n * ldc) * 4) != 0;
                    }
                    for (int64_t j = 0; j < n; j++) {
                        kt->gemm_q14(m, 1, k, pw, sw, xq + j * ldq, ldq, sx + j * lds, lds, c2, ldc);
                        bad_g += memcmp(c1 + j * ldc, c2, (size_t)m * 4) != 0;
                    }
                }
                wk_aligned_free(a), wk_aligned_free(x), wk_aligned_free(pk), wk_aligned_free(xq);
                wk_aligned_free(xq2), wk_aligned_free(sx), wk_aligned_free(sx2), wk_aligned_free(c1);
                wk_aligned_free(c2);
            }
    printf("  q14: gemm_q14 checked on %d shapes of ISA tables, reference's worst error %.2f of its bound\n", n_gemm,
           worst);
    CHECK_EQ_INT(bad_q, 0);
    CHECK_EQ_INT(bad_g, 0);
    CHECK_EQ_INT(bad_bound, 0);
    CHECK(worst > 0.01); /* the bound is not vacuous */

    /* extremes and special values: m = 3 rows of 64, n = 4 rows of x */
    const int64_t m = 3, n = 4, k = 64;
    float a[3 * 64], x[4 * 64];
    for (int l = 0; l < k; l++) {
        a[l] = 1.0f;                           /* row 0: all at the max */
        a[64 + l] = l == 5 ? INFINITY : 0.5f;  /* row 1: an infinity */
        a[128 + l] = 0;                        /* row 2: zeros */
        x[l] = 3.0f, x[64 + l] = -3.0f;        /* rows 0, 1: every block at +-max */
        x[128 + l] = l == 40 ? NAN : 1.0f;     /* row 2: a NaN in block 1 */
        x[192 + l] = l < 32 ? 1e-36f : 0;      /* row 3: block 0 below 8191 / FLT_MAX (~2.4e-35), then zeros */
    }
    void *pk = wk_aligned_alloc(wk_q14_pack_bytes(m, k));
    int16_t *pw, xq[4 * 96];
    float *sw, sx[4 * 2], c[4 * 3];
    wk_q14_pack(m, k, a, k, pk, &pw, &sw);
    for (size_t ii = 0; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *kt = wk_cpu_kernels_for(g_isas[ii]);
        if (!kt) continue;
        kt->q14_quantize(n, k, x, k, xq, 96, sx, 2);
        CHECK_EQ_INT(xq[0], WK_Q14_MAX);
        CHECK_EQ_INT(xq[96], -WK_Q14_MAX);
        CHECK(isnan(sx[5]) && sx[4] > 0 && xq[2 * 96 + 40] == 0);
        /* ties round to even: a block of max 16382 has factor 0.5 exactly */
        float tie[32] = {16382.0f, 1, 3, 5, -1, -3, -5, 7};
        int16_t tq[32];
        float ts;
        kt->q14_quantize(1, 32, tie, 32, tq, 32, &ts, 1);
        CHECK(ts == 2.0f && tq[0] == 8191 && tq[1] == 0 && tq[2] == 2 && tq[3] == 2 && tq[4] == 0 && tq[5] == -2 &&
              tq[6] == -2 && tq[7] == 4 && tq[8] == 0);
        /* (8191 / max overflows: zeros, scale 0, as for a block of zeros) */
        CHECK(sx[6] == 0 && xq[3 * 96 + 7] == 0 && sx[7] == 0 && xq[3 * 96 + 40] == 0);
        for (int i = 0; i < 12; i++) c[i] = 7.0f;
        (kt->gemm_q14 ? kt->gemm_q14 : wk__gemm_q14_ref)(m, n, k, pw, sw, xq, 96, sx, 2, c, 3);
        CHECK_NEAR(c[0], 3.0 * k, 3e-5, 0);  /* 2 blocks of 32 * 8191^2 each, no overflow */
        CHECK_NEAR(c[3], -3.0 * k, 3e-5, 0);
        CHECK(isnan(c[1]) && isnan(c[4]) && isnan(c[7]) && isnan(c[10])); /* the weight row with an infinity */
        CHECK(isnan(c[6]) && isnan(c[8]));                                 /* x's row with a NaN */
        CHECK(c[2] == 0 && c[5] == 0 && c[9] == 0 && c[11] == 0);
    }
    wk_aligned_free(pk);
}

/* The threaded matmul equals, element by element, the double-precision
 * product of dequantized weight rows and the f32 activations, for 1, 2 and
 * 3 threads and token counts 1, 3 and 17; a second run with the same
 * thread count is bit-identical (determinism; kernels that block rows may
 * round differently when threads split the rows differently). */
static void test_matmul(void)
{
    const struct wk_cpu_kernels *k = wk_cpu_kernels_get();
    uint64_t seed = 11;
    for (size_t ti = 0; ti < WK_ARRAY_LEN(g_weight_types); ti++) {
        enum wk_dtype t = g_weight_types[ti];
        const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
        int64_t n_in = 2 * 256, n_out = 37;
        size_t row = wk_dtype_row_bytes(t, n_in);
        void *wdata = wk_aligned_alloc(row * (size_t)n_out);
        fill_random_blocks(t, wdata, n_in / tr->block_size * n_out, &seed);
        struct wk_tensor w = {.name = "w", .dtype = t, .n_dims = 2, .ne = {n_in, n_out, 1, 1},
                              .nb = {tr->block_bytes, row, row * n_out, row * n_out}, .data = wdata};
        static const int64_t toks[] = {1, 3, 17};
        for (size_t ki = 0; ki < 3; ki++) {
            int64_t nt = toks[ki];
            float *x = wk_aligned_alloc((size_t)(nt * n_in) * 4);
            for (int64_t i = 0; i < nt * n_in; i++) x[i] = check_rand_f32(&seed);
            float *y[3], *again = wk_aligned_alloc((size_t)(nt * n_out) * 4);
            for (int th = 1; th <= 3; th++) {
                struct wk_threadpool *pool;
                CHECK_EQ_INT(wk_threadpool_create(th, &pool), WK_OK);
                y[th - 1] = wk_aligned_alloc((size_t)(nt * n_out) * 4);
                float *scratch = wk_aligned_alloc(wk_cpu_matmul_scratch_floats(n_in, th, nt) * 4);
                wk_cpu_matmul(pool, k, &w, x, y[th - 1], nt, scratch, 0);
                wk_cpu_matmul(pool, k, &w, x, again, nt, scratch, 0);
                CHECK(memcmp(y[th - 1], again, (size_t)(nt * n_out) * 4) == 0);
                wk_aligned_free(scratch);
                wk_threadpool_destroy(pool);
            }
            wk_aligned_free(again);
            float wf[512];
            int bad = 0;
            for (int64_t tok = 0; tok < nt; tok++) {
                const float *xf = x + tok * n_in;
                for (int64_t r = 0; r < n_out; r++) {
                    tr->to_f32((uint8_t *)wdata + r * row, wf, n_in);
                    double want = 0, mag = 0;
                    for (int i = 0; i < n_in; i++) want += (double)wf[i] * xf[i], mag += fabs((double)wf[i] * xf[i]);
                    for (int th = 0; th < 3; th++)
                        if (!(fabs(y[th][tok * n_out + r] - want) <= 1e-5 * mag + 1e-6)) bad++;
                }
            }
            if (bad) fprintf(stderr, "  matmul %s nt=%lld: %d outputs off\n", tr->name, (long long)nt, bad);
            CHECK_EQ_INT(bad, 0);
            for (int i = 0; i < 3; i++) wk_aligned_free(y[i]);
            wk_aligned_free(x);
        }
        wk_aligned_free(wdata);
    }
}

/* wk_expf against double-precision exp over its whole range, and the
 * activations against their definitions through libm. */
static void test_expf_and_activations(void)
{
    double worst = 0;
    for (float x = -87.0f; x < 88.0f; x += 0.00731f) {
        double e = exp((double)x), rel = fabs(wk_expf(x) - e) / e;
        if (rel > worst) worst = rel;
    }
    CHECK(worst < 3e-7); /* about 2 ulp of float */
    CHECK(wk_expf(-1000.0f) >= 0 && wk_expf(-1000.0f) < 1e-37f);
    CHECK(isfinite(wk_expf(1000.0f)));
    /* NaN (weights a broken file made NaN) stays NaN, with no signed shift
     * of a negative exponent on the way (UBSan in the asan build) */
    volatile float nan_in = NAN;
    CHECK(isnan(wk_expf(nan_in)) && isnan(wk_expf(-nan_in)));
    uint64_t seed = 4;
    for (int i = 0; i < 2000; i++) {
        float z = 8 * check_rand_f32(&seed), g = z, u = 1.0f, s = z;
        wk_geglu(1, &g, &u);
        double y = 0.7978845608028654 * (z + 0.044715 * (double)z * z * z);
        double want = 0.5 * z * (1 + tanh(y));
        CHECK(fabs(g - want) <= 1e-6 * fabs(want) + 1e-7);
        wk_swiglu(1, &s, &u);
        double want_s = z / (1 + exp(-(double)z));
        CHECK(fabs(s - want_s) <= 1e-6 * fabs(want_s) + 1e-7);
        /* exact GELU (libm's erf in double), with a bias of 0.25 added first */
        float e = z - 0.25f, bias = 0.25f;
        wk_gelu_erf(1, &e, &bias);
        double want_e = 0.5 * (double)z * (1 + erf((double)z / sqrt(2.0)));
        CHECK(fabs(e - want_e) <= 1e-6 * fabs(z) + 1e-7);
    }
}

static void test_elementwise_ops(void)
{
    /* RMSNorm: output has mean square 1 (gain 1) up to eps. */
    float x[64], y[64];
    uint64_t seed = 1;
    for (int i = 0; i < 64; i++) x[i] = 5 * check_rand_f32(&seed);
    wk_rms_norm(64, x, NULL, 0, y);
    double ms = 0;
    for (int i = 0; i < 64; i++) ms += (double)y[i] * y[i];
    CHECK_NEAR(ms / 64, 1.0, 1e-6, 0);
    /* softmax sums to 1 and keeps order */
    float s[5] = {1, 2, 3, 4, 1000};
    wk_softmax(5, s);
    CHECK_NEAR(s[0] + s[1] + s[2] + s[3] + s[4], 1.0, 1e-6, 0);
    CHECK_NEAR(s[4], 1.0, 1e-6, 0);
    /* gelu_tanh(1) = 0.8411920... (tanh approximation), times up=2 */
    float g[1] = {1.0f}, up[1] = {2.0f};
    wk_geglu(1, g, up);
    CHECK_NEAR(g[0], 2 * 0.841191990607477, 1e-6, 0);
    float si[1] = {1.0f}, up1[1] = {1.0f};
    wk_swiglu(1, si, up1);
    CHECK_NEAR(si[0], 0.7310585786300049, 1e-6, 0);
    /* RoPE: rotation preserves each pair's norm; pos 0 is the identity;
     * NEOX at pos 1 rotates pair (0, half) by exactly 1 radian. */
    float cs[8], v[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    wk_rope_cos_sin(0, 8, 10000, 1, NULL, cs);
    wk_rope_apply(v, 1, 8, 8, cs, WK_ROPE_NEOX);
    CHECK_NEAR(v[0], 1, 0, 0);
    wk_rope_cos_sin(1, 8, 10000, 1, NULL, cs);
    wk_rope_apply(v, 1, 8, 8, cs, WK_ROPE_NEOX);
    CHECK_NEAR(v[0], cos(1.0), 1e-7, 0);
    CHECK_NEAR(v[4], sin(1.0), 1e-7, 0);
    float u[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    wk_rope_apply(u, 1, 8, 8, cs, WK_ROPE_NORM);
    CHECK_NEAR(u[0], cos(1.0), 1e-7, 0);
    CHECK_NEAR(u[1], sin(1.0), 1e-7, 0);
    /* second pair of NORM at pos 1 rotates by base^(-2/8) = 0.1 rad */
    float w2[8] = {0, 0, 1, 0, 0, 0, 0, 0};
    wk_rope_apply(w2, 1, 8, 8, cs, WK_ROPE_NORM);
    CHECK_NEAR(w2[2], cos(0.1), 1e-7, 0);
    CHECK_NEAR(w2[3], sin(0.1), 1e-7, 0);
    /* frequency factors divide each pair's angle: 0.1 / 4 for pair 1 */
    const float ff[4] = {1, 4, 1, 1};
    wk_rope_cos_sin(1, 8, 10000, 1, ff, cs);
    float w3[8] = {0, 0, 1, 0, 0, 0, 0, 0};
    wk_rope_apply(w3, 1, 8, 8, cs, WK_ROPE_NORM);
    CHECK_NEAR(w3[2], cos(0.025), 1e-7, 0);
    CHECK_NEAR(w3[3], sin(0.025), 1e-7, 0);
}

CHECK_MAIN(TEST(test_vec_dot_matches_ref), TEST(test_vec_dot_q_matches_ref),
           TEST(test_vec_dot_rows_matches_ref), TEST(test_vec_dot_rows_tokens), TEST(test_vec_dot_rows_x16_tokens), TEST(test_x16_quantize), TEST(test_ops_tables_match_baseline), TEST(test_softmax_floor), TEST(test_attn_f32), TEST(test_max_f32), TEST(test_vec_dot_rows_x16), TEST(test_vec_dot_rows_x16_nan_and_tiny), TEST(test_gemm_f32), TEST(test_gemm_prepacked), TEST(test_q14), TEST(test_ref_dot_equals_dequantized_dot),
           TEST(test_quantize_matches_ref), TEST(test_to_f32_matches_ref), TEST(test_lowbit_to_f32_fixture),
           TEST(test_f32_helpers_match_ref), TEST(test_matmul), TEST(test_expf_and_activations),
           TEST(test_elementwise_ops))
