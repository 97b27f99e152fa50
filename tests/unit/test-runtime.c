/*
 * test-runtime.c - the sampler: the pinned examples of Ollama's sampler
 * (../shared/reference/ollama-mlx-runner.md §4.2), greedy ties, the
 * empirical distribution at temperature 1 against the softmax, seeds, and
 * option validation; the generation session on a tiny random model (stop
 * reasons, prefix reuse, context limit, cancellation).
 */
#include "check.h"
#include "tiny_model.h"

#include "../../src/runtime/wk_runtime.h"

static struct wk_sampler *make(float t, int32_t k, float p, float min_p, int64_t seed, int32_t n)
{
    struct wk_sampler_params sp = {.temperature = t, .top_k = k, .top_p = p, .min_p = min_p, .seed = seed};
    struct wk_sampler *s = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_sampler_create(&sp, n, &s, &err), WK_OK);
    return s;
}

/* Draws many times and returns how often each of n tokens came out. */
static void histogram(struct wk_sampler *s, const float *logits, int n, int draws, int *counts)
{
    memset(counts, 0, (size_t)n * sizeof *counts);
    for (int i = 0; i < draws; i++) counts[wk_sampler_sample(s, logits)]++;
}

static void test_pinned_examples(void)
{
    int c[3];
    /* top-p 0.4 on (0.5, 0.3, 0.2) keeps only token 0 */
    float l1[3] = {logf(0.5f), logf(0.3f), logf(0.2f)};
    struct wk_sampler *s = make(1, 0, 0.4f, 0, 1, 3);
    histogram(s, l1, 3, 500, c);
    CHECK_EQ_INT(c[0], 500);
    wk_sampler_destroy(s);
    /* min-p 0.7 keeps only token 0 */
    s = make(1, 0, 1, 0.7f, 1, 3);
    histogram(s, l1, 3, 500, c);
    CHECK_EQ_INT(c[0], 500);
    wk_sampler_destroy(s);
    /* top-k 2 then top-p 0.7 on (0.6, 0.2, 0.2): renormalised (0.75, 0.25),
     * and top-p keeps only the top token */
    float l2[3] = {logf(0.6f), logf(0.2f), logf(0.2f)};
    s = make(1, 2, 0.7f, 0, 1, 3);
    histogram(s, l2, 3, 500, c);
    CHECK_EQ_INT(c[0], 500);
    wk_sampler_destroy(s);
    /* top-k 1 at T = 1 is deterministic: the argmax */
    float l3[4] = {0.1f, 2.0f, 1.9f, -1};
    s = make(1, 1, 1, 0, -1, 4);
    for (int i = 0; i < 100; i++) CHECK_EQ_INT(wk_sampler_sample(s, l3), 1);
    wk_sampler_destroy(s);
}

static void test_greedy(void)
{
    float l[5] = {1, 3, 3, 2, -5};
    struct wk_sampler *s = make(0, 40, 0.9f, 0, -1, 5);
    CHECK_EQ_INT(wk_sampler_sample(s, l), 1); /* first of the tied maxima */
    wk_sampler_destroy(s);
}

/* At temperature T with no truncation, token frequencies follow
 * softmax(logits / T): each within 4 standard deviations. */
static void test_distribution(void)
{
    float l[4] = {1.0f, 0.5f, 0.0f, -1.0f};
    for (int ti = 0; ti < 2; ti++) {
        float T = ti ? 0.5f : 1.0f;
        struct wk_sampler *s = make(T, 0, 1, 0, 1234, 4);
        int c[4], draws = 40000;
        histogram(s, l, 4, draws, c);
        double z = 0, p[4];
        for (int i = 0; i < 4; i++) z += exp(l[i] / T);
        for (int i = 0; i < 4; i++) {
            p[i] = exp(l[i] / T) / z;
            double sd = sqrt(draws * p[i] * (1 - p[i]));
            CHECK_NEAR(c[i], draws * p[i], 4 * sd, 0);
        }
        wk_sampler_destroy(s);
    }
}

static void test_seeds(void)
{
    float l[8];
    for (int i = 0; i < 8; i++) l[i] = 0.1f * (float)i;
    int a[64], b[64], c[64];
    struct wk_sampler *s1 = make(1, 0, 1, 0, 42, 8), *s2 = make(1, 0, 1, 0, 42, 8),
                      *s3 = make(1, 0, 1, 0, 43, 8);
    for (int i = 0; i < 64; i++) {
        a[i] = wk_sampler_sample(s1, l);
        b[i] = wk_sampler_sample(s2, l);
        c[i] = wk_sampler_sample(s3, l);
    }
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, c, sizeof a) != 0);
    wk_sampler_destroy(s1);
    wk_sampler_destroy(s2);
    wk_sampler_destroy(s3);
}

static void test_invalid_options(void)
{
    struct wk_error err;
    struct wk_sampler *s;
    struct wk_sampler_params p = wk_sampler_params_default();
    p.temperature = -1;
    CHECK_EQ_INT(wk_sampler_create(&p, 10, &s, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "temperature");
    p = wk_sampler_params_default();
    p.top_p = 1.5f;
    CHECK_EQ_INT(wk_sampler_create(&p, 10, &s, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "top_p");
    p = wk_sampler_params_default();
    p.top_k = -3;
    CHECK_EQ_INT(wk_sampler_create(&p, 10, &s, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "top_k");
    struct wk_sampler_params d = wk_sampler_params_default();
    CHECK_NEAR(d.temperature, 0.8, 1e-7, 0);
    CHECK_EQ_INT(d.top_k, 40);
    CHECK_NEAR(d.top_p, 0.9, 1e-7, 0);
}

struct collected {
    char text[4096];
    size_t n;
    int calls, stop_after;
};

static bool collect(void *user, const char *text, size_t len)
{
    struct collected *c = user;
    if (c->n + len < sizeof c->text) memcpy(c->text + c->n, text, len), c->n += len;
    c->calls++;
    return c->stop_after == 0 || c->calls < c->stop_after;
}

static void test_session(void)
{
    char path[64];
    struct tiny_spec sp = tiny_spec_default();
    tiny_model_write(&sp, path, sizeof path);
    struct wk_model *m;
    struct wk_tokenizer *tok;
    struct wk_session *s;
    struct wk_error err;
    CHECK_EQ_INT(wk_model_load(path, &m, &err), WK_OK);
    unlink(path);
    CHECK_EQ_INT(wk_tokenizer_from_gguf(wk_model_gguf(m), &tok, &err), WK_OK);
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = 32;
    CHECK_EQ_INT(wk_session_create(m, tok, &cp, &s, &err), WK_OK);
    struct wk_tokens prompt = {0};
    for (int i = 0; i < 10; i++) wk_tokens_push(&prompt, 260 + 3 * i);

    struct wk_generate_params gp = wk_generate_params_default();
    gp.sampler.temperature = 0;
    gp.num_predict = 5;
    gp.on_piece = collect;
    struct collected a = {0}, b = {0};
    gp.user = &a;
    struct wk_generate_stats st;
    CHECK_EQ_INT(wk_session_generate(s, &prompt, &gp, &st, &err), WK_OK);
    CHECK_EQ_INT(st.prompt_eval_count, 10);
    CHECK_EQ_STR(st.done_reason, "length");
    CHECK_EQ_INT(st.eval_count, 5);
    /* the same prompt again: everything but its last token comes from the
     * cache, and greedy gives the same text */
    gp.user = &b;
    CHECK_EQ_INT(wk_session_generate(s, &prompt, &gp, &st, &err), WK_OK);
    CHECK_EQ_INT(st.prompt_eval_count, 1);
    CHECK(a.n == b.n && memcmp(a.text, b.text, a.n) == 0);
    /* no num_predict: stops when the 32-token context is full */
    gp.num_predict = -1;
    struct collected c = {0};
    gp.user = &c;
    CHECK_EQ_INT(wk_session_generate(s, &prompt, &gp, &st, &err), WK_OK);
    CHECK_EQ_STR(st.done_reason, "length");
    CHECK_EQ_INT(wk_context_n_past(wk_session_context(s)), 32);
    /* the callback can stop it */
    struct collected d = {.stop_after = 2};
    gp.user = &d;
    CHECK_EQ_INT(wk_session_generate(s, &prompt, &gp, &st, &err), WK_OK);
    CHECK_EQ_INT(d.calls, 2);
    /* a prompt that does not fit */
    struct wk_tokens big = {0};
    for (int i = 0; i < 32; i++) wk_tokens_push(&big, 270);
    CHECK_EQ_INT(wk_session_generate(s, &big, &gp, &st, &err), WK_E_RANGE);
    CHECK_CONTAINS(err.msg, "the prompt is 32 tokens, which does not fit in the context of 32");
    /* cancellation */
    volatile bool cancel = true;
    gp.cancel = &cancel;
    CHECK_EQ_INT(wk_session_generate(s, &prompt, &gp, &st, &err), WK_E_CANCELLED);
    wk_tokens_deinit(&prompt);
    wk_tokens_deinit(&big);
    wk_session_destroy(s);
    wk_tokenizer_destroy(tok);
    wk_model_destroy(m);
}

CHECK_MAIN(TEST(test_pinned_examples), TEST(test_greedy), TEST(test_distribution), TEST(test_seeds),
           TEST(test_invalid_options), TEST(test_session))
