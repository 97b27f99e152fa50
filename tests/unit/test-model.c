/*
 * test-model.c - the forward pass and KV cache on a tiny random Gemma 3,
 * by properties that must hold whatever the weights: a prompt decoded in
 * one batch, in chunks, or token by token gives the same logits; a
 * verification forward gives the bits of one-token steps; thread
 * count does not change them; truncating the cache and decoding again
 * reproduces them; the sliding window limits exactly which earlier tokens
 * can matter; the rotating cache of sliding-window layers changes none of
 * this and rolls back as far as it documents; bad calls are refused
 * without changing the cache.
 * (Agreement with an independent implementation is the golden test's job.)
 */
#include "check.h"
#include "tiny_model.h"

#include "../../src/cpu/wk_cpu.h"
#include "../../src/io/wk_io.h"
#include "../../src/model/wk_model.h"

static struct wk_model *load(const struct tiny_spec *sp) { return tiny_model_load(sp); }

static struct wk_context *ctx_new(struct wk_model *m, int n_threads, int n_ubatch)
{
    return tiny_context(m, n_threads, n_ubatch, 1);
}

static const int32_t g_prompt[12] = {2, 270, 281, 299, 5, 17, 260, 261, 262, 290, 1, 263};

static double max_abs_diff(const float *a, const float *b, int n)
{
    double d = 0;
    for (int i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static void test_hparams(void)
{
    struct tiny_spec sp = tiny_spec_default();
    struct wk_model *m = load(&sp);
    const struct wk_hparams *hp = wk_model_hparams(m);
    CHECK_EQ_INT(hp->n_embd, 32);
    CHECK_EQ_INT(hp->n_layer, 2);
    CHECK_EQ_INT(hp->head_dim, 8);
    CHECK_EQ_INT(hp->n_vocab, 300);
    CHECK_NEAR(hp->embed_scale, sqrt(32.0), 1e-6, 0);
    CHECK_NEAR(hp->attn_scale, 1 / sqrt(8.0), 1e-7, 0);
    CHECK_NEAR(hp->rope_base_swa, 10000, 0, 0);
    wk_model_destroy(m);
}

static void test_batch_chunks_and_steps_agree(void)
{
    struct tiny_spec sp = tiny_spec_default();
    struct wk_model *m = load(&sp);
    int V = wk_model_hparams(m)->n_vocab;
    float *a = malloc((size_t)V * 4), *b = malloc((size_t)V * 4), *c3 = malloc((size_t)V * 4);
    struct wk_context *whole = ctx_new(m, 2, 512), *chunks = ctx_new(m, 2, 5), *steps = ctx_new(m, 2, 512);
    CHECK_EQ_INT(wk_context_decode(whole, g_prompt, 12, a, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_decode(chunks, g_prompt, 12, b, NULL, NULL), WK_OK);
    for (int i = 0; i < 12; i++) CHECK_EQ_INT(wk_context_decode(steps, &g_prompt[i], 1, c3, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_n_past(whole), 12);
    /* batched (dequantized-tile) and single-token (fused) products differ
     * only in float summation order */
    CHECK(max_abs_diff(a, b, V) < 1e-4);
    CHECK(max_abs_diff(a, c3, V) < 1e-4);
    /* another thread count changes at most the rounding; the same thread
     * count gives the same bits */
    struct wk_context *one = ctx_new(m, 1, 512), *three = ctx_new(m, 3, 512), *two = ctx_new(m, 2, 512);
    CHECK_EQ_INT(wk_context_decode(one, g_prompt, 12, b, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_decode(three, g_prompt, 12, c3, NULL, NULL), WK_OK);
    CHECK(max_abs_diff(a, b, V) < 1e-4);
    CHECK(max_abs_diff(a, c3, V) < 1e-4);
    CHECK_EQ_INT(wk_context_decode(two, g_prompt, 12, b, NULL, NULL), WK_OK);
    CHECK(memcmp(a, b, (size_t)V * 4) == 0);
    wk_context_destroy(two);
    wk_context_destroy(whole), wk_context_destroy(chunks), wk_context_destroy(steps);
    wk_context_destroy(one), wk_context_destroy(three);
    free(a), free(b), free(c3);
    wk_model_destroy(m);
}

static void test_truncate_and_redo(void)
{
    struct tiny_spec sp = tiny_spec_default();
    struct wk_model *m = load(&sp);
    int V = wk_model_hparams(m)->n_vocab;
    float *a = malloc((size_t)V * 4), *b = malloc((size_t)V * 4);
    struct wk_context *c = ctx_new(m, 2, 512);
    CHECK_EQ_INT(wk_context_decode(c, g_prompt, 12, a, NULL, NULL), WK_OK);
    /* different tail, then back to the original tail */
    wk_context_truncate(c, 6);
    int32_t other[3] = {7, 8, 9};
    CHECK_EQ_INT(wk_context_decode(c, other, 3, b, NULL, NULL), WK_OK);
    CHECK(max_abs_diff(a, b, V) > 1e-3);
    wk_context_truncate(c, 6);
    CHECK_EQ_INT(wk_context_decode(c, g_prompt + 6, 6, b, NULL, NULL), WK_OK);
    CHECK(memcmp(a, b, (size_t)V * 4) == 0);
    wk_context_destroy(c);
    free(a), free(b);
    wk_model_destroy(m);
}

/* With window W on both layers, the logits at position p depend only on
 * tokens p - 2(W-1) .. p: layer 1 sees p-W+1..p, layer 2 sees layer 1's
 * outputs there. So with W = 4, changing token 0 must leave position 7
 * unchanged (bit for bit) and must change position 6. Without a window,
 * position 7 changes too. */
static void test_sliding_window_reach(void)
{
    for (int windowed = 0; windowed < 2; windowed++) {
        struct tiny_spec sp = tiny_spec_default();
        sp.sliding_window = windowed ? 4 : 0;
        struct wk_model *m = load(&sp);
        int V = wk_model_hparams(m)->n_vocab;
        float *l6a = malloc((size_t)V * 4), *l7a = malloc((size_t)V * 4);
        float *l6b = malloc((size_t)V * 4), *l7b = malloc((size_t)V * 4);
        int32_t seq[8] = {2, 270, 281, 299, 5, 17, 260, 261};
        struct wk_context *c = ctx_new(m, 2, 512);
        CHECK_EQ_INT(wk_context_decode(c, seq, 7, l6a, NULL, NULL), WK_OK);
        CHECK_EQ_INT(wk_context_decode(c, seq + 7, 1, l7a, NULL, NULL), WK_OK);
        wk_context_truncate(c, 0);
        seq[0] = 100;
        CHECK_EQ_INT(wk_context_decode(c, seq, 7, l6b, NULL, NULL), WK_OK);
        CHECK_EQ_INT(wk_context_decode(c, seq + 7, 1, l7b, NULL, NULL), WK_OK);
        CHECK(max_abs_diff(l6a, l6b, V) > 1e-4);
        if (windowed)
            CHECK(memcmp(l7a, l7b, (size_t)V * 4) == 0);
        else
            CHECK(max_abs_diff(l7a, l7b, V) > 1e-4);
        wk_context_destroy(c);
        free(l6a), free(l7a), free(l6b), free(l7b);
        wk_model_destroy(m);
    }
}

/* wk_context_verify of 5 tokens after a prompt gives, bit for bit, the
 * logits of 5 one-token decode steps: with and without a sliding window,
 * on 1, 2 and 3 threads, and when the 5 are split into prefill chunks
 * (n_ubatch 2). */
static void test_verify_equals_steps(void)
{
    const int32_t draft[5] = {17, 280, 3, 299, 42};
    for (int windowed = 0; windowed < 2; windowed++) {
        struct tiny_spec sp = tiny_spec_default();
        sp.sliding_window = windowed ? 4 : 0;
        struct wk_model *m = load(&sp);
        int V = wk_model_hparams(m)->n_vocab;
        float *steps = malloc((size_t)V * 5 * 4), *ver = malloc((size_t)V * 5 * 4);
        for (int th = 1; th <= 3; th++) {
            for (int ub = 512; ub >= 2; ub = ub == 512 ? 2 : 0) {
                struct wk_context *a = ctx_new(m, th, ub), *b = ctx_new(m, th, ub);
                CHECK_EQ_INT(wk_context_decode(a, g_prompt, 12, NULL, NULL, NULL), WK_OK);
                CHECK_EQ_INT(wk_context_decode(b, g_prompt, 12, NULL, NULL, NULL), WK_OK);
                for (int i = 0; i < 5; i++)
                    CHECK_EQ_INT(wk_context_decode(a, &draft[i], 1, steps + (size_t)i * V, NULL, NULL), WK_OK);
                CHECK_EQ_INT(wk_context_verify(b, draft, 5, ver, NULL, NULL), WK_OK);
                CHECK_EQ_INT(wk_context_n_past(b), 17);
                for (int i = 0; i < 5; i++)
                    if (memcmp(steps + (size_t)i * V, ver + (size_t)i * V, (size_t)V * 4) != 0) {
                        fprintf(stderr, "  W=%d threads=%d n_ubatch=%d token %d: max diff %g\n",
                                sp.sliding_window, th, ub, i,
                                max_abs_diff(steps + (size_t)i * V, ver + (size_t)i * V, V));
                        CHECK(0);
                    }
                /* and the cache it leaves is the steps' cache */
                CHECK_EQ_INT(wk_context_decode(a, g_prompt, 3, steps, NULL, NULL), WK_OK);
                CHECK_EQ_INT(wk_context_decode(b, g_prompt, 3, ver, NULL, NULL), WK_OK);
                CHECK(memcmp(steps, ver, (size_t)V * 4) == 0);
                wk_context_destroy(a), wk_context_destroy(b);
            }
        }
        struct wk_context *c = ctx_new(m, 1, 512);
        struct wk_error err;
        int32_t many[WK_VERIFY_MAX + 1] = {0};
        CHECK_EQ_INT(wk_context_verify(c, many, WK_VERIFY_MAX + 1, ver, NULL, &err), WK_E_INVALID);
        CHECK_CONTAINS(err.msg, "at most 16");
        CHECK_EQ_INT(wk_context_verify(c, many, 0, ver, NULL, &err), WK_E_INVALID);
        CHECK_EQ_INT(wk_context_n_past(c), 0);
        wk_context_destroy(c);
        free(steps), free(ver);
        wk_model_destroy(m);
    }
}

/* The products verify rests on: WK_MATMUL_PER_TOKEN over n tokens gives
 * the bits of n one-token products, on 1-3 threads, for weight types with
 * 16-bit-activation kernels (Q4_0), f32-activation row kernels (Q4_K,
 * BF16, Q8_0) and plain F32, rows enough for several blocks per thread. */
static void test_matmul_per_token_bits(void)
{
    const struct wk_cpu_kernels *k = wk_cpu_kernels_get();
    static const enum wk_dtype types[] = {WK_DTYPE_Q4_0, WK_DTYPE_Q4_K, WK_DTYPE_BF16,
                                          WK_DTYPE_Q8_0, WK_DTYPE_F32, WK_DTYPE_Q6_K};
    const int64_t n_in = 512, n_out = 389, nt = 7;
    uint64_t seed = 5;
    float *wf = malloc((size_t)(n_in * n_out) * 4), *x = malloc((size_t)(nt * n_in) * 4);
    for (int64_t i = 0; i < n_in * n_out; i++) wf[i] = check_rand_f32(&seed);
    for (int64_t i = 0; i < nt * n_in; i++) x[i] = check_rand_f32(&seed);
    float *one = malloc((size_t)(nt * n_out) * 4), *many = malloc((size_t)(nt * n_out) * 4);
    float *up = malloc((size_t)(nt * n_out) * 4);
    for (size_t ti = 0; ti < WK_ARRAY_LEN(types); ti++) {
        const struct wk_dtype_traits *tr = wk_dtype_traits_get(types[ti]);
        size_t row = wk_dtype_row_bytes(types[ti], n_in);
        void *wd = wk_aligned_alloc(row * (size_t)n_out);
        for (int64_t r = 0; r < n_out; r++) tr->from_f32(wf + r * n_in, (uint8_t *)wd + r * row, n_in);
        struct wk_tensor w = {.name = "w", .dtype = types[ti], .n_dims = 2, .ne = {n_in, n_out, 1, 1},
                              .nb = {tr->block_bytes, row, row * n_out, row * n_out}, .data = wd};
        for (int th = 1; th <= 3; th++) {
            struct wk_threadpool *pool;
            CHECK_EQ_INT(wk_threadpool_create(th, &pool), WK_OK);
            float *scratch = wk_aligned_alloc(wk_cpu_matmul_scratch_floats(n_in, th, nt) * 4);
            for (int64_t t = 0; t < nt; t++)
                wk_cpu_matmul(pool, k, &w, x + t * n_in, one + t * n_out, 1, scratch, 0);
            wk_cpu_matmul(pool, k, &w, x, many, nt, scratch, WK_MATMUL_PER_TOKEN);
            if (memcmp(one, many, (size_t)(nt * n_out) * 4) != 0) {
                fprintf(stderr, "  matmul per token %s threads=%d: max diff %g\n", tr->name, th,
                        max_abs_diff(one, many, (int)(nt * n_out)));
                CHECK(0);
            }
            /* the GLU pair: activation over each token's rows as for one token */
            for (int64_t t = 0; t < nt; t++)
                wk_cpu_matmul_glu(pool, k, &w, &w, x + t * n_in, one + t * n_out, up + t * n_out, 1,
                                  scratch, WK_GLU_GELU_TANH, 0);
            wk_cpu_matmul_glu(pool, k, &w, &w, x, many, up, nt, scratch, WK_GLU_GELU_TANH,
                              WK_MATMUL_PER_TOKEN);
            CHECK(memcmp(one, many, (size_t)(nt * n_out) * 4) == 0);
            wk_aligned_free(scratch);
            wk_threadpool_destroy(pool);
        }
        wk_aligned_free(wd);
    }
    free(wf), free(x), free(one), free(many), free(up);
}

/* A GGUF with weights of type dt read and multiplied: a 2-D matrix and a
 * 3-D expert tensor [3][n_out][n_in] made by the type's reference
 * quantizer, opened from memory, then wk_cpu_matmul on the matrix and on
 * each expert's rows (a view at e * nb[2], as the MoE backend takes it),
 * one token (the decode kernels) and five (the prefill tile), against the
 * double-precision product of the dequantized rows. */
static void check_gguf_matmul(enum wk_dtype dt)
{
    const struct wk_dtype_traits *tr = wk_dtype_traits_get(dt);
    const int64_t n_in = 96, n_out = 37, n_exp = 3, nt = 5;
    const size_t row = wk_dtype_row_bytes(dt, n_in);
    const uint64_t ne2[2] = {(uint64_t)n_in, (uint64_t)n_out}, ne3[3] = {(uint64_t)n_in, (uint64_t)n_out, (uint64_t)n_exp};
    const size_t bytes2 = row * (size_t)n_out, off3 = (bytes2 + 31) / 32 * 32;
    struct gb b = {0};
    gb_header(&b, 3, 2, 0);
    gb_tensor_info(&b, "w", 2, ne2, dt, 0);
    gb_tensor_info(&b, "exps", 3, ne3, dt, off3);
    gb_pad(&b, 32);
    uint64_t seed = 39;
    float *wf = malloc((size_t)(n_in * n_out * (n_exp + 1)) * 4), *x = malloc((size_t)(n_in * nt) * 4);
    for (int64_t i = 0; i < n_in * n_out * (n_exp + 1); i++) wf[i] = 2 * check_rand_f32(&seed);
    for (int64_t i = 0; i < n_in * nt; i++) x[i] = check_rand_f32(&seed);
    uint8_t *q = malloc(row * (size_t)(n_out * (n_exp + 1)));
    tr->from_f32(wf, q, n_in * n_out * (n_exp + 1));
    gb_bytes(&b, q, bytes2);
    while (b.n % 32) gb_u8(&b, 0);
    gb_bytes(&b, q + bytes2, bytes2 * (size_t)n_exp);
    struct wk_gguf *g = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_gguf_open_memory(b.p, b.n, tr->name, &g, &err), WK_OK);
    if (!g) return;
    const struct wk_gguf_tensor *tw = wk_gguf_find_tensor(g, "w"), *te = wk_gguf_find_tensor(g, "exps");
    CHECK(tw && te && tw->t.dtype == dt && te->t.n_dims == 3 && te->t.ne[2] == n_exp);
    CHECK(tw && te && te->t.nb[1] == row && te->t.nb[2] == bytes2);
    const struct wk_cpu_kernels *k = wk_cpu_kernels_get();
    struct wk_threadpool *pool;
    CHECK_EQ_INT(wk_threadpool_create(2, &pool), WK_OK);
    float *scratch = wk_aligned_alloc(wk_cpu_matmul_scratch_floats(n_in, 2, nt) * 4);
    float *y = malloc((size_t)(nt * n_out) * 4), *deq = malloc((size_t)n_in * 4);
    for (int64_t e = -1; tw && te && e < n_exp; e++) {
        struct wk_tensor v = e < 0 ? tw->t : te->t;
        if (e >= 0) { /* expert e's matrix */
            v.data = (const uint8_t *)te->t.data + (size_t)e * te->t.nb[2];
            v.n_dims = 2, v.ne[2] = 1;
        }
        for (int64_t ntok = 1; ntok <= nt; ntok += nt - 1) {
            wk_cpu_matmul(pool, k, &v, x, y, ntok, scratch, 0);
            for (int64_t r = 0; r < n_out; r++) {
                tr->to_f32(wk_tensor_row(&v, r), deq, n_in);
                for (int64_t t = 0; t < ntok; t++) {
                    double want = 0, mag = 0;
                    for (int64_t i = 0; i < n_in; i++)
                        want += (double)deq[i] * x[t * n_in + i], mag += fabs((double)deq[i] * x[t * n_in + i]);
                    if (!(fabs(y[t * n_out + r] - want) <= 1e-5 * mag + 1e-6)) {
                        fprintf(stderr, "  %s matmul expert %lld tokens %lld row %lld: %g vs %g\n", tr->name, (long long)e,
                                (long long)ntok, (long long)r, y[t * n_out + r], want);
                        CHECK(0);
                    }
                }
            }
        }
    }
    wk_threadpool_destroy(pool);
    wk_aligned_free(scratch);
    wk_gguf_close(g);
    free(b.p), free(wf), free(x), free(q), free(y), free(deq);
}

/* MXFP4 (gpt-oss's expert weight type, GGUF id 39) and BF16 as GGUF weight
 * types, experts included. */
static void test_gguf_matmul_mxfp4_bf16(void)
{
    check_gguf_matmul(WK_DTYPE_MXFP4);
    check_gguf_matmul(WK_DTYPE_BF16);
}

static struct wk_context *ctx_new_n(struct wk_model *m, int n_threads, int n_ubatch, int n_ctx)
{
    struct wk_context_params p = wk_context_params_default();
    p.n_ctx = n_ctx;
    p.n_threads = n_threads;
    p.n_ubatch = n_ubatch;
    struct wk_context *c = NULL;
    CHECK_EQ_INT(wk_context_create(m, &p, &c, NULL), WK_OK);
    return c;
}

/* Rows of a and b [n][V] that differ in any bit, reported. */
static int rows_differ(const float *a, const float *b, int n, int V, const char *what, int at)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (memcmp(a + (size_t)i * V, b + (size_t)i * V, (size_t)V * 4) != 0) {
            if (bad++ == 0)
                fprintf(stderr, "  %s: position %d differs (max %g)\n", what, at + i,
                        max_abs_diff(a + (size_t)i * V, b + (size_t)i * V, V));
        }
    return bad;
}

/*
 * Issue 8, point 4: the rotating KV cache of sliding-window layers. With
 * W = 4 or 8, n_ctx 160 and n_ubatch 4 the rings have W + 4 + WK_VERIFY_MAX
 * slots and wrap 5-6 times over a 160-token sequence (the 6-layer model mixes ring layers
 * with a full one, layer 5). Fed one token at a time, and fed in chunks
 * of 4 through wk_context_verify rolled back 0-3 positions after each
 * chunk and fed again, every position's logits are the same bits; a
 * batch prefill with no wrap (n_ubatch 64), and wk_context_decode_all
 * over the wrapped rings, agree within 1e-4; a truncate further back than
 * the rings reach returns 0, and decoding from 0 again reproduces the
 * logits.
 */
static void test_ring_cache(void)
{
    enum { N = 160 };
    static const struct { uint32_t window, n_layer; } cases[] = {{4, 2}, {8, 6}};
    for (size_t ci = 0; ci < WK_ARRAY_LEN(cases); ci++) {
        struct tiny_spec sp = tiny_spec_default();
        sp.sliding_window = cases[ci].window;
        sp.n_layer = cases[ci].n_layer;
        struct wk_model *m = load(&sp);
        const int V = wk_model_hparams(m)->n_vocab, W = (int)sp.sliding_window;
        uint64_t seed = 99 + ci;
        int32_t seq[N];
        for (int i = 0; i < N; i++) seq[i] = (int32_t)(check_rand_u64(&seed) % (uint64_t)V);
        float *ref = malloc((size_t)V * N * 4), *got = malloc((size_t)V * N * 4);
        char what[96];
        for (int th = 1; th <= 3; th += 2) {
            /* one token at a time */
            struct wk_context *steps = ctx_new_n(m, th, 4, N);
            for (int i = 0; i < N; i++)
                CHECK_EQ_INT(wk_context_decode(steps, &seq[i], 1, ref + (size_t)i * V, NULL, NULL),
                             WK_OK);
            /* chunks of 4 through verify, each rolled back 0-3 and fed again */
            struct wk_context *c = ctx_new_n(m, th, 4, N);
            int bad = 0, rollbacks = 0;
            while (wk_context_n_past(c) < N) {
                int32_t at = wk_context_n_past(c), n = WK_MIN(4, N - at);
                CHECK_EQ_INT(wk_context_verify(c, seq + at, n, got, NULL, NULL), WK_OK);
                snprintf(what, sizeof what, "W=%d layers=%u threads=%d verify", W, sp.n_layer, th);
                bad += rows_differ(ref + (size_t)at * V, got, n, V, what, at);
                int32_t back = (int32_t)(check_rand_u64(&seed) % (uint64_t)n);
                if (at + n == N) back = 0;
                rollbacks += back > 0;
                CHECK_EQ_INT(wk_context_truncate(c, at + n - back), at + n - back);
            }
            CHECK_EQ_INT(bad, 0);
            CHECK(rollbacks > 5);
            /* prefill without a wrap, and decode_all over the wrapped rings */
            struct wk_context *whole = ctx_new_n(m, th, N, N);
            CHECK_EQ_INT(wk_context_decode_all(whole, seq, N, got, NULL, NULL), WK_OK);
            CHECK(max_abs_diff(ref, got, V * N) < 1e-4);
            CHECK_EQ_INT(wk_context_truncate(c, 0), 0);
            CHECK_EQ_INT(wk_context_decode_all(c, seq, N, got, NULL, NULL), WK_OK);
            CHECK(max_abs_diff(ref, got, V * N) < 1e-4);
            /* rollback bound: n_ubatch + WK_VERIFY_MAX + 1 = B positions back
             * is kept, B + 1 is not */
            const int B = 4 + WK_VERIFY_MAX + 1;
            CHECK_EQ_INT(wk_context_truncate(steps, N - B), N - B);
            CHECK_EQ_INT(wk_context_n_past(steps), N - B);
            CHECK_EQ_INT(wk_context_decode(steps, &seq[N - B], 1, got, NULL, NULL), WK_OK);
            CHECK(memcmp(got, ref + (size_t)(N - B) * V, (size_t)V * 4) == 0);
            CHECK_EQ_INT(wk_context_truncate(steps, N - B - 1), 0);
            CHECK_EQ_INT(wk_context_n_past(steps), 0);
            for (int i = 0; i < N; i++)
                CHECK_EQ_INT(wk_context_decode(steps, &seq[i], 1, got + (size_t)i * V, NULL, NULL),
                             WK_OK);
            snprintf(what, sizeof what, "W=%d layers=%u threads=%d again from 0", W, sp.n_layer,
                     th);
            CHECK_EQ_INT(rows_differ(ref, got, N, V, what, 0), 0);
            wk_context_destroy(steps), wk_context_destroy(c), wk_context_destroy(whole);
        }
        /* the rings hold less: W + n_ubatch + WK_VERIFY_MAX slots instead of n_ctx */
        struct wk_context *ring = ctx_new_n(m, 1, 4, 4096);
        int64_t ring_bytes = (int64_t)wk_context_kv_bytes(ring);
        wk_context_destroy(ring);
        struct tiny_spec full_sp = sp;
        full_sp.sliding_window = 0;
        struct wk_model *full = load(&full_sp);
        struct wk_context *plain = ctx_new_n(full, 1, 4, 4096);
        int64_t plain_bytes = (int64_t)wk_context_kv_bytes(plain);
        wk_context_destroy(plain);
        CHECK_EQ_INT(plain_bytes, 4096 * 128 * (int64_t)sp.n_layer); /* every layer's 4096 slots (whole blocks) */
        wk_model_destroy(full);
        /* K and V: 2 x 4 bytes x n_head_kv 2 x head_dim 8 = 128 bytes per slot and layer */
        int64_t ring_layers = sp.n_layer - sp.n_layer / 6;
        CHECK_EQ_INT(plain_bytes - ring_bytes, (4096 - (W + 4 + WK_VERIFY_MAX)) * 128 * ring_layers);
        free(ref), free(got);
        wk_model_destroy(m);
    }
}

/* A draft and a target on one thread pool (the draft borrowing the
 * target's, and both borrowing a pool of the caller's), used in turn,
 * give the bits each gives on its own pool; a lent pool outlives its
 * contexts, and a thread count other than the pool's is refused. */
static void test_shared_pool(void)
{
    struct tiny_spec sp = tiny_spec_default();
    sp.sliding_window = 4;
    struct wk_model *target = load(&sp);
    sp.seed = 7, sp.n_layer = 1;
    struct wk_model *draft = load(&sp);
    const int V = wk_model_hparams(target)->n_vocab;
    float *want = malloc((size_t)V * 24 * 4), *got = malloc((size_t)V * 24 * 4);
    struct wk_threadpool *own;
    CHECK_EQ_INT(wk_threadpool_create(3, &own), WK_OK);
    for (int mode = 0; mode < 3; mode++) {
        /* 0: each its own pool; 1: the draft on the target's; 2: both on own */
        struct wk_context_params p = wk_context_params_default();
        p.n_ctx = 64, p.n_threads = 3, p.n_ubatch = 4, p.pool = mode == 2 ? own : NULL;
        struct wk_context *t = NULL, *d = NULL;
        CHECK_EQ_INT(wk_context_create(target, &p, &t, NULL), WK_OK);
        if (mode == 1) p.pool = wk_context_pool(t), p.n_threads = 0;
        CHECK_EQ_INT(wk_context_create(draft, &p, &d, NULL), WK_OK);
        CHECK_EQ_INT(wk_context_n_threads(d), 3);
        CHECK(mode == 0 ? wk_context_pool(d) != wk_context_pool(t)
                        : wk_context_pool(d) == wk_context_pool(t));
        float *out = mode == 0 ? want : got;
        for (int i = 0; i < 12; i++) { /* in turn, as a speculative decoder runs them */
            float *row = out + (size_t)(2 * i) * V;
            CHECK_EQ_INT(wk_context_decode(d, &g_prompt[i], 1, row, NULL, NULL), WK_OK);
            CHECK_EQ_INT(wk_context_verify(t, &g_prompt[i], 1, row + V, NULL, NULL), WK_OK);
        }
        if (mode > 0) CHECK_EQ_INT(rows_differ(want, got, 24, V, "shared pool", 0), 0);
        wk_context_destroy(mode == 1 ? d : t);
        wk_context_destroy(mode == 1 ? t : d);
    }
    struct wk_context_params p = wk_context_params_default();
    p.pool = own, p.n_threads = 2;
    struct wk_context *c = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_context_create(target, &p, &c, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "2 threads asked for on a lent pool of 3");
    wk_threadpool_destroy(own);
    free(want), free(got);
    wk_model_destroy(target), wk_model_destroy(draft);
}

static void test_bad_calls(void)
{
    struct tiny_spec sp = tiny_spec_default();
    struct wk_model *m = load(&sp);
    struct wk_context *c = ctx_new(m, 1, 512);
    struct wk_error err;
    int32_t bad[2] = {5, 300};
    CHECK_EQ_INT(wk_context_decode(c, bad, 2, NULL, NULL, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "token id 300 is outside the vocabulary");
    CHECK_EQ_INT(wk_context_n_past(c), 0);
    int32_t many[65] = {0};
    CHECK_EQ_INT(wk_context_decode(c, many, 65, NULL, NULL, &err), WK_E_RANGE);
    CHECK_CONTAINS(err.msg, "65 tokens do not fit");
    CHECK_EQ_INT(wk_context_decode(c, many, 0, NULL, NULL, &err), WK_E_INVALID);
    CHECK_EQ_INT(wk_context_n_past(c), 0);
    volatile bool cancel = true;
    CHECK_EQ_INT(wk_context_decode(c, many, 3, NULL, &cancel, &err), WK_E_CANCELLED);
    CHECK_EQ_INT(wk_context_n_past(c), 0);
    struct wk_context_params p = wk_context_params_default();
    p.n_threads = 100000;
    struct wk_context *c2;
    CHECK_EQ_INT(wk_context_create(m, &p, &c2, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "thread count");
    wk_context_destroy(c);
    wk_model_destroy(m);
}

static void test_no_leaks(void)
{
    int64_t base = wk_alloc_live_bytes();
    struct tiny_spec sp = tiny_spec_default();
    struct wk_model *m = load(&sp);
    struct wk_context *c = ctx_new(m, 2, 4);
    float *l = malloc(300 * 4);
    CHECK_EQ_INT(wk_context_decode(c, g_prompt, 12, l, NULL, NULL), WK_OK);
    wk_context_destroy(c);
    wk_model_destroy(m);
    free(l);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
}

CHECK_MAIN(TEST(test_hparams), TEST(test_batch_chunks_and_steps_agree), TEST(test_truncate_and_redo),
           TEST(test_sliding_window_reach), TEST(test_verify_equals_steps),
           TEST(test_matmul_per_token_bits), TEST(test_gguf_matmul_mxfp4_bf16), TEST(test_ring_cache), TEST(test_shared_pool),
           TEST(test_bad_calls), TEST(test_no_leaks))
