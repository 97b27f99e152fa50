/*
 * test-runtime.c - the sampler: the pinned examples of Ollama's sampler
 * (docs/reference/ollama-mlx-runner.md §4.2), greedy ties, the
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
    CHECK_EQ_INT(wk_sampler_create(&sp, n, 4096, &s, &err), WK_OK);
    return s;
}

/* A sampler with penalties: temperature t (0 = greedy), window w. */
static struct wk_sampler *make_pen(float t, int32_t w, float repeat, float presence, float frequency,
                                   int32_t n_vocab, int32_t n_ctx)
{
    struct wk_sampler_params sp = wk_sampler_params_default();
    sp.temperature = t, sp.top_k = 0, sp.top_p = 1, sp.seed = 7;
    sp.repeat_last_n = w, sp.repeat_penalty = repeat;
    sp.presence_penalty = presence, sp.frequency_penalty = frequency;
    struct wk_sampler *s = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_sampler_create(&sp, n_vocab, n_ctx, &s, &err), WK_OK);
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
    float l[4] = {1.7f, 0.5f, 0.0f, -1.0f}; /* max not 1: a softmax that subtracts a stale max shows */
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
    CHECK_EQ_INT(wk_sampler_create(&p, 10, 100, &s, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "temperature");
    p = wk_sampler_params_default();
    p.top_p = 1.5f;
    CHECK_EQ_INT(wk_sampler_create(&p, 10, 100, &s, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "top_p");
    p = wk_sampler_params_default();
    p.top_k = -3;
    CHECK_EQ_INT(wk_sampler_create(&p, 10, 100, &s, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "top_k");
    struct wk_sampler_params d = wk_sampler_params_default();
    CHECK_NEAR(d.temperature, 0.8, 1e-7, 0);
    CHECK_EQ_INT(d.top_k, 40);
    CHECK_NEAR(d.top_p, 0.9, 1e-7, 0);
}

/* Ollama's pinned penalty examples (§4.2) plus hand-computed values of
 * the transformed logits: repeat divides positive and multiplies negative
 * logits, repeat and presence once per distinct token, frequency once per
 * occurrence; logit_bias added first. */
static void test_penalties(void)
{
    const float l[3] = {0, 5, 4}, neg[3] = {-5, -1, -3};
    const int32_t h1[1] = {1}, h11[2] = {1, 1};
    struct wk_sampler *s = make_pen(0, 64, 1, 6, 0, 3, 100); /* presence 6, history {1} */
    wk_sampler_set_history(s, h1, 1);
    CHECK_EQ_INT(wk_sampler_sample(s, l), 2);
    wk_sampler_destroy(s);
    s = make_pen(0, 64, 2, 0, 0, 3, 100); /* repeat 2 on a positive logit: 5 / 2 < 4 */
    wk_sampler_set_history(s, h1, 1);
    CHECK_EQ_INT(wk_sampler_sample(s, l), 2);
    wk_sampler_destroy(s);
    s = make_pen(0, 64, 4, 0, 0, 3, 100); /* repeat 4 on a negative one: -1 * 4 < -3 */
    wk_sampler_set_history(s, h1, 1);
    CHECK_EQ_INT(wk_sampler_sample(s, neg), 2);
    wk_sampler_destroy(s);
    s = make_pen(0, 64, 1, 0, 2, 3, 100); /* frequency 2, history {1, 1}: 5 - 4 = 1 */
    wk_sampler_set_history(s, h11, 2);
    CHECK_EQ_INT(wk_sampler_sample(s, l), 2);
    wk_sampler_destroy(s);
    s = make_pen(0, 0, 1, 10, 0, 3, 100); /* repeat_last_n 0 turns presence 10 off */
    wk_sampler_set_history(s, h1, 1);
    CHECK_EQ_INT(wk_sampler_sample(s, l), 1);
    wk_sampler_destroy(s);

    /* exact values: history {1, 1, 2, 0}, repeat 2, presence 0.5, frequency 0.25 */
    const float v[4] = {-2, 3, 1, 7};
    const int32_t h[4] = {1, 1, 2, 0};
    float out[4];
    s = make_pen(1, 64, 2, 0.5f, 0.25f, 4, 100);
    wk_sampler_set_history(s, h, 4);
    wk_sampler_transform(s, v, out);
    CHECK(out[0] == -2 * 2 - 0.5f - 0.25f);     /* negative: multiplied, once */
    CHECK(out[1] == 3 / 2.0f - 0.5f - 2 * 0.25f); /* twice in history: divided once, frequency twice */
    CHECK(out[2] == 1 / 2.0f - 0.5f - 0.25f);
    CHECK(out[3] == 7);                           /* not in history */
    wk_sampler_destroy(s);

    /* repeat_last_n -1 is the context: token 1 early in a long history */
    int32_t longh[150];
    longh[0] = 1;
    for (int i = 1; i < 150; i++) longh[i] = 0;
    s = make_pen(0, -1, 1, 10, 0, 3, 200);
    wk_sampler_set_history(s, longh, 150);
    CHECK_EQ_INT(wk_sampler_sample(s, l), 2); /* 1 penalised: inside the 200-token window */
    wk_sampler_destroy(s);
    s = make_pen(0, 64, 1, 10, 0, 3, 200);
    wk_sampler_set_history(s, longh, 150);
    CHECK_EQ_INT(wk_sampler_sample(s, l), 1); /* outside the last 64 */
    wk_sampler_destroy(s);

    /* the ring: window 2, priors {1, 2, 3} keep {2, 3}; sampling appends and
     * pushes the oldest out */
    const float flat[4] = {1, 1, 1, 1};
    const int32_t pri[3] = {1, 2, 3};
    s = make_pen(0, 2, 1, 5, 0, 4, 100);
    wk_sampler_set_history(s, pri, 3);
    wk_sampler_transform(s, flat, out);
    CHECK(out[0] == 1 && out[1] == 1 && out[2] == -4 && out[3] == -4);
    CHECK_EQ_INT(wk_sampler_sample(s, flat), 0); /* greedy: first of 0 and 1; history {3, 0} */
    wk_sampler_transform(s, flat, out);
    CHECK(out[0] == -4 && out[1] == 1 && out[2] == 1 && out[3] == -4);
    wk_sampler_destroy(s);

    /* logit_bias, then the penalty on the biased value */
    struct wk_logit_bias b[2] = {{0, 10.0f}, {3, -100.0f}};
    struct wk_sampler_params sp = wk_sampler_params_default();
    sp.temperature = 0, sp.repeat_penalty = 2, sp.logit_bias = b, sp.n_logit_bias = 2;
    struct wk_error err;
    CHECK_EQ_INT(wk_sampler_create(&sp, 4, 100, &s, &err), WK_OK);
    const int32_t h0[1] = {0};
    wk_sampler_set_history(s, h0, 1);
    wk_sampler_transform(s, v, out);
    CHECK(out[0] == (-2 + 10) / 2.0f && out[3] == 7 - 100.0f && out[1] == 3);
    CHECK_EQ_INT(wk_sampler_sample(s, v), 0); /* 4 > 3 */
    wk_sampler_destroy(s);
    /* bad entries */
    struct wk_logit_bias bad[1] = {{9, 1.0f}};
    sp.logit_bias = bad, sp.n_logit_bias = 1;
    CHECK_EQ_INT(wk_sampler_create(&sp, 4, 100, &s, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "token 9");
    sp = wk_sampler_params_default();
    sp.repeat_last_n = -2;
    CHECK_EQ_INT(wk_sampler_create(&sp, 4, 100, &s, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "repeat_last_n");
    sp = wk_sampler_params_default();
    sp.frequency_penalty = NAN;
    CHECK_EQ_INT(wk_sampler_create(&sp, 4, 100, &s, &err), WK_E_INVALID);
    /* top_k 1 with top_p 0.8 at temperature 0.01 is greedy on the penalised logits */
    sp = wk_sampler_params_default();
    sp.temperature = 0.01f, sp.top_k = 1, sp.top_p = 0.8f, sp.presence_penalty = 6;
    CHECK_EQ_INT(wk_sampler_create(&sp, 3, 100, &s, &err), WK_OK);
    wk_sampler_set_history(s, h1, 1);
    for (int i = 0; i < 20; i++) {
        CHECK_EQ_INT(wk_sampler_sample(s, l), 2);
        wk_sampler_set_history(s, h1, 1);
    }
    wk_sampler_destroy(s);
}

/* 200,000 seeded draws from a 5-token logit vector per option set against
 * the distribution computed here from the definitions (penalties, top_k,
 * softmax at T, top_p, min_p, renormalise): chi-square with the cells of
 * nonzero probability, p > 0.001 (critical values of the chi-square
 * distribution for 1-4 degrees of freedom). Zero-probability tokens must
 * never come out. */
static void test_chi_square(void)
{
    static const double crit[5] = {0, 10.828, 13.816, 16.266, 18.467};
    const float l[5] = {1.2f, 0.9f, 0.3f, -0.4f, 0.8f};
    struct opt {
        float t, top_p, min_p, presence;
        int32_t top_k;
    } opts[] = {{1, 1, 0, 0, 0}, {0.7f, 1, 0, 0, 3}, {1.3f, 0.8f, 0, 0, 0}, {1, 1, 0.5f, 0, 0},
                {1, 0.9f, 0.05f, 0.7f, 4}};
    for (size_t oi = 0; oi < WK_ARRAY_LEN(opts); oi++) {
        const struct opt *o = &opts[oi];
        /* expected: penalty on token 0 (history {0}), then the truncations */
        double z[5];
        for (int i = 0; i < 5; i++) z[i] = l[i] - (i == 0 ? o->presence : 0);
        int order[5] = {0, 1, 2, 3, 4};
        for (int i = 0; i < 5; i++)
            for (int j = i + 1; j < 5; j++)
                if (z[order[j]] > z[order[i]]) { int t = order[i]; order[i] = order[j]; order[j] = t; }
        int n = o->top_k > 0 ? o->top_k : 5;
        double p[5] = {0}, sum = 0;
        for (int r = 0; r < n; r++) sum += exp(z[order[r]] / o->t);
        for (int r = 0; r < n; r++) p[order[r]] = exp(z[order[r]] / o->t) / sum;
        if (o->top_p < 1) {
            double cum = 0;
            int keep = 0;
            while (keep < n && (keep == 0 || cum < o->top_p)) cum += p[order[keep++]];
            for (int r = keep; r < n; r++) p[order[r]] = 0;
            n = keep;
        }
        if (o->min_p > 0)
            for (int r = 1; r < n; r++)
                if (p[order[r]] < o->min_p * p[order[0]]) p[order[r]] = 0;
        double tot = 0;
        for (int i = 0; i < 5; i++) tot += p[i];
        for (int i = 0; i < 5; i++) p[i] /= tot;

        struct wk_sampler_params sp = wk_sampler_params_default();
        sp.temperature = o->t, sp.top_k = o->top_k, sp.top_p = o->top_p, sp.min_p = o->min_p;
        sp.presence_penalty = o->presence, sp.seed = 1000 + (int64_t)oi;
        struct wk_sampler *s;
        struct wk_error err;
        CHECK_EQ_INT(wk_sampler_create(&sp, 5, 100, &s, &err), WK_OK);
        const int draws = 200000;
        int c[5] = {0};
        const int32_t h0[1] = {0};
        for (int d = 0; d < draws; d++) {
            wk_sampler_set_history(s, h0, 1); /* the same history for every draw */
            c[wk_sampler_sample(s, l)]++;
        }
        double chi = 0;
        int cells = 0;
        for (int i = 0; i < 5; i++) {
            if (p[i] == 0) {
                CHECK_EQ_INT(c[i], 0);
                continue;
            }
            double e = draws * p[i];
            chi += (c[i] - e) * (c[i] - e) / e;
            cells++;
        }
        if (cells > 1) {
            if (!(chi < crit[cells - 1]))
                fprintf(stderr, "  option set %zu: chi-square %.2f with %d dof\n", oi, chi, cells - 1);
            CHECK(chi < crit[cells - 1]);
        }
        wk_sampler_destroy(s);
    }
}

/* Feeds pieces[] through a stop matcher as the session does; returns the
 * emitted text in out and whether a stop string ended it. */
static bool run_stops(const char *const *stops, int n_stops, const char *const *pieces, int n,
                      char *out, size_t cap)
{
    struct wk_stop_matcher m;
    wk_stop_matcher_init(&m, stops, n_stops);
    size_t len = 0;
    bool stopped = false;
    for (int i = 0; i < n && !stopped; i++) {
        size_t e;
        CHECK_EQ_INT(wk_stop_matcher_push(&m, pieces[i], strlen(pieces[i]), &e, &stopped), WK_OK);
        CHECK(len + e < cap);
        memcpy(out + len, m.buf, e), len += e;
        wk_stop_matcher_consume(&m, e);
    }
    if (!stopped) memcpy(out + len, m.buf, m.len), len += m.len;
    out[len] = '\0';
    wk_stop_matcher_deinit(&m);
    return stopped;
}

/* The think filter: for every split of each text into three pieces, the
 * kept runs give the answer and all runs, in order, give the text back. */
struct think_out {
    char kept[128], all[128], thought[128];
    size_t n_kept, n_all, n_thought;
    const struct wk_think_filter *f; /* a dropped run inside a block and not a tag is thinking */
};
static bool think_collect(void *user, const char *text, size_t len, bool keep)
{
    struct think_out *o = user;
    CHECK(len > 0);
    memcpy(o->all + o->n_all, text, len), o->n_all += len;
    if (keep) memcpy(o->kept + o->n_kept, text, len), o->n_kept += len;
    if (!keep && o->f->inside && !o->f->in_tag) memcpy(o->thought + o->n_thought, text, len), o->n_thought += len;
    return true;
}
static void test_think_filter(void)
{
    /* the text, what is kept (the answer), what is thinking (the blocks' insides, tags not) */
    static const char *const cases[][3] = {
        {"<think>\nhidden\n</think>\n\nvisible", "visible", "\nhidden\n"},
        {"a<think>b</think> c", "ac", "b"},
        {"a <thin not a tag", "a <thin not a tag", ""},
        {"x<<think>y</think>z", "x<z", "y"},
        {"ok</think>fine", "ok</think>fine", ""},   /* a close without an open is text */
        {"pre<think>never closed", "pre", "never closed"}, /* an open block drops the rest */
        {"a<think>x</thinky</think>\tb", "ab", "x</thinky"},
        {"end<thi", "end<thi", ""},                 /* held, then flushed as text */
        {"<think></think>\n", "", ""},
        {"one<think>1</think>two <think>2</think>three", "onetwo three", "12"},
        {"", "", ""},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *in = cases[c][0];
        size_t n = strlen(in);
        for (size_t i = 0; i <= n; i++) {
            for (size_t j = i; j <= n; j++) {
                struct wk_think_filter f;
                struct think_out o = {.f = &f};
                wk_think_filter_init(&f);
                CHECK(wk_think_filter_push(&f, in, i, think_collect, &o));
                CHECK(wk_think_filter_push(&f, in + i, j - i, think_collect, &o));
                CHECK(wk_think_filter_push(&f, in + j, n - j, think_collect, &o));
                CHECK(wk_think_filter_flush(&f, think_collect, &o));
                o.kept[o.n_kept] = o.all[o.n_all] = o.thought[o.n_thought] = '\0';
                if (strcmp(o.kept, cases[c][1]) != 0 || strcmp(o.thought, cases[c][2]) != 0)
                    fprintf(stderr, "  split %zu/%zu of \"%s\"\n", i, j, in);
                CHECK_EQ_STR(o.kept, cases[c][1]);
                CHECK_EQ_STR(o.thought, cases[c][2]);
                CHECK_EQ_STR(o.all, in);
            }
        }
    }
}

/* Stop strings across token boundaries: nothing of the stop string or after
 * it is emitted; the earliest completed match cuts; text that could start
 * a stop string is held back only until it cannot; multi-byte characters;
 * any split of the same text gives the same output. */
static void test_stop_strings(void)
{
    char out[256];
    const char *alpha[] = {"DEFGHIJ"};
    const char *p1[] = {"D", "E", "F", "G", "H", "I", "J", "K", "L"};
    CHECK(run_stops(alpha, 1, p1, 9, out, sizeof out));
    CHECK_EQ_STR(out, "");
    const char *p1b[] = {" and then", " DEF", "GH", "IJK"};
    CHECK(run_stops(alpha, 1, p1b, 4, out, sizeof out));
    CHECK_EQ_STR(out, " and then ");
    /* the shorter stop completes first: cut there, though the longer began earlier */
    const char *two[] = {"ABCDEF", "CD"};
    const char *p2[] = {"xA", "B", "C", "D", "E", "F"};
    CHECK(run_stops(two, 2, p2, 6, out, sizeof out));
    CHECK_EQ_STR(out, "xAB");
    /* held back, then released when it cannot become the stop string */
    const char *hello[] = {"Hello!"};
    struct wk_stop_matcher m;
    wk_stop_matcher_init(&m, hello, 1);
    size_t e;
    bool st;
    CHECK_EQ_INT(wk_stop_matcher_push(&m, "Oh He", 5, &e, &st), WK_OK);
    CHECK_EQ_INT((int)e, 3); /* "Oh " out, "He" held */
    CHECK(!st);
    wk_stop_matcher_consume(&m, e);
    CHECK_EQ_INT(wk_stop_matcher_push(&m, "llo", 3, &e, &st), WK_OK);
    CHECK_EQ_INT((int)e, 0); /* "Hello" could still be "Hello!" */
    wk_stop_matcher_consume(&m, e);
    CHECK_EQ_INT(wk_stop_matcher_push(&m, " you", 4, &e, &st), WK_OK);
    CHECK_EQ_INT((int)e, 9);
    CHECK(!st && memcmp(m.buf, "Hello you", 9) == 0);
    CHECK_EQ_INT(m.matched, -1);
    wk_stop_matcher_deinit(&m);
    /* the stop string reported is the one found earliest in the text, whatever its place in the list */
    const char *early[] = {"later", "soon"};
    wk_stop_matcher_init(&m, early, 2);
    CHECK_EQ_INT(wk_stop_matcher_push(&m, "too soon, later", 15, &e, &st), WK_OK);
    CHECK(st && e == 4 && m.matched == 1);
    wk_stop_matcher_deinit(&m);
    /* a stop in the middle of a piece; multi-byte characters */
    const char *stop[] = {"STOP"}, *p3[] = {"xxSTO", "Pyy"};
    CHECK(run_stops(stop, 1, p3, 2, out, sizeof out));
    CHECK_EQ_STR(out, "xx");
    const char *accent[] = {"\xc3\xa9!"}, *p4[] = {"caf", "\xc3\xa9", "!", " more"};
    CHECK(run_stops(accent, 1, p4, 4, out, sizeof out));
    CHECK_EQ_STR(out, "caf");
    const char *p5[] = {"caf", "\xc3\xa9", " au lait"};
    CHECK(!run_stops(accent, 1, p5, 3, out, sizeof out));
    CHECK_EQ_STR(out, "caf\xc3\xa9 au lait");
    /* every split of one text into pieces gives the same output */
    const char *text = "one two, three; four. stop-ish st stop five";
    const char *stops3[] = {"stop five", "two;", ". st"};
    char whole[256], split[256];
    const char *one[] = {text};
    bool s_whole = run_stops(stops3, 3, one, 1, whole, sizeof whole);
    size_t tl = strlen(text);
    for (size_t cut1 = 1; cut1 < tl; cut1 += 3)
        for (size_t cut2 = cut1 + 1; cut2 < tl; cut2 += 5) {
            char a[64], b[64], c[64];
            memcpy(a, text, cut1), a[cut1] = 0;
            memcpy(b, text + cut1, cut2 - cut1), b[cut2 - cut1] = 0;
            strcpy(c, text + cut2);
            const char *pieces[] = {a, b, c};
            CHECK(run_stops(stops3, 3, pieces, 3, split, sizeof split) == s_whole);
            CHECK_EQ_STR(split, whole);
        }
    CHECK(s_whole);
    CHECK_EQ_STR(whole, "one two, three; four");
}

/* Log-probabilities from first principles: huge logits stay finite, values
 * equal logit - log(sum exp), the top-k sorted with ties by lower id, k
 * clamped to the vocabulary and to 20. */
static void test_logprobs(void)
{
    const float big[3] = {1000, 999, 998};
    struct wk_token_logprobs lp;
    wk_logprobs_compute(big, 3, 1, 5, &lp);
    const double lse = 1000 + log(1 + exp(-1.0) + exp(-2.0));
    CHECK_NEAR(lp.logprob, 999 - lse, 1e-4, 0);
    CHECK_EQ_INT(lp.n_top, 3);
    CHECK_EQ_INT(lp.top_ids[0], 0);
    CHECK_EQ_INT(lp.top_ids[2], 2);
    double sum = 0;
    for (int i = 0; i < 3; i++) sum += exp(lp.top_logprobs[i]);
    CHECK_NEAR(sum, 1, 1e-5, 0);
    float l[30];
    for (int i = 0; i < 30; i++) l[i] = (float)((i * 7) % 10); /* ties: 0, 10, 20 share 0; ... */
    wk_logprobs_compute(l, 30, 3, 25, &lp);
    CHECK_EQ_INT(lp.n_top, 20);
    CHECK_EQ_INT(lp.top_ids[0], 7);  /* value 9: ids 7, 17, 27 */
    CHECK_EQ_INT(lp.top_ids[1], 17);
    CHECK_EQ_INT(lp.top_ids[2], 27);
    for (int j = 1; j < lp.n_top; j++) CHECK(lp.top_logprobs[j] <= lp.top_logprobs[j - 1]);
    wk_logprobs_compute(l, 30, 3, 0, &lp);
    CHECK_EQ_INT(lp.n_top, 0);
}

/* Slots: three sequences with different options, seeds and prompts,
 * sampled in changing subsets and orders, give the same tokens as three
 * samplers used alone; a removed and re-registered slot starts fresh;
 * unknown and repeated ids are errors that sample nothing. */
static void test_slots(void)
{
    enum { V = 12 };
    struct wk_sampler_params p[3];
    for (int i = 0; i < 3; i++) p[i] = wk_sampler_params_default();
    p[0].temperature = 1.0f, p[0].top_k = 0, p[0].top_p = 1, p[0].seed = 11;
    p[1].temperature = 0.7f, p[1].top_k = 5, p[1].presence_penalty = 1.5f, p[1].seed = 12;
    p[2].temperature = 1.3f, p[2].min_p = 0.05f, p[2].frequency_penalty = 0.5f, p[2].repeat_last_n = 4,
    p[2].seed = 13;
    const int32_t prompts[3][4] = {{1, 2, 3, 4}, {5, 5, 6, 7}, {8, 9, 9, 9}};
    struct wk_error err;
    struct wk_sampler_slots *slots;
    CHECK_EQ_INT(wk_sampler_slots_create(V, 100, &slots, &err), WK_OK);
    struct wk_sampler *alone[3];
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(wk_sampler_slots_add(slots, 10 + i, &p[i], prompts[i], 4, &err), WK_OK);
        CHECK_EQ_INT(wk_sampler_create(&p[i], V, 100, &alone[i], &err), WK_OK);
        wk_sampler_set_history(alone[i], prompts[i], 4);
    }
    uint64_t seed = 99;
    static const int32_t subsets[][3] = {{12, 10, -1}, {11, -1, -1}, {10, 11, 12}, {12, 11, 10}, {10, -1, -1}};
    for (int round = 0; round < 200; round++) {
        const int32_t *sub = subsets[round % 5];
        int32_t n = 0, ids[3], out[3];
        float logits[3 * V];
        while (n < 3 && sub[n] >= 0) ids[n] = sub[n], n++;
        for (int i = 0; i < n * V; i++) logits[i] = 3 * check_rand_f32(&seed);
        CHECK_EQ_INT(wk_sampler_slots_sample(slots, ids, n, logits, out, &err), WK_OK);
        for (int i = 0; i < n; i++) CHECK_EQ_INT(out[i], wk_sampler_sample(alone[ids[i] - 10], logits + i * V));
    }
    /* remove and re-add 11: fresh history and seed stream */
    CHECK_EQ_INT(wk_sampler_slots_remove(slots, 11, &err), WK_OK);
    CHECK_EQ_INT(wk_sampler_slots_remove(slots, 11, &err), WK_E_NOT_FOUND);
    CHECK_EQ_INT(wk_sampler_slots_add(slots, 11, &p[1], prompts[1], 4, &err), WK_OK);
    wk_sampler_destroy(alone[1]);
    CHECK_EQ_INT(wk_sampler_create(&p[1], V, 100, &alone[1], &err), WK_OK);
    wk_sampler_set_history(alone[1], prompts[1], 4);
    for (int round = 0; round < 50; round++) {
        int32_t ids[1] = {11}, out[1];
        float logits[V];
        for (int i = 0; i < V; i++) logits[i] = 3 * check_rand_f32(&seed);
        CHECK_EQ_INT(wk_sampler_slots_sample(slots, ids, 1, logits, out, &err), WK_OK);
        CHECK_EQ_INT(out[0], wk_sampler_sample(alone[1], logits));
    }
    /* errors */
    float logits[2 * V] = {0};
    int32_t out[2] = {-7, -7}, bad_ids[2] = {10, 99}, twice[2] = {10, 10};
    CHECK_EQ_INT(wk_sampler_slots_sample(slots, bad_ids, 2, logits, out, &err), WK_E_NOT_FOUND);
    CHECK_CONTAINS(err.msg, "slot 99");
    CHECK_EQ_INT(wk_sampler_slots_sample(slots, twice, 2, logits, out, &err), WK_E_INVALID);
    CHECK(out[0] == -7 && out[1] == -7);
    CHECK_EQ_INT(wk_sampler_slots_add(slots, 10, &p[0], NULL, 0, &err), WK_E_INVALID);
    struct wk_sampler_params badp = wk_sampler_params_default();
    badp.top_p = 2;
    CHECK_EQ_INT(wk_sampler_slots_add(slots, 20, &badp, NULL, 0, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "top_p");
    for (int i = 0; i < 3; i++) wk_sampler_destroy(alone[i]);
    wk_sampler_slots_destroy(slots);
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
    cp.n_ubatch = 4;
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
    /* the same prompt again: all but its last n_ubatch chunk (cut as a
     * prefill from 0 cuts it: positions 8 and 9) comes from the cache, and
     * greedy gives the same text */
    gp.user = &b;
    CHECK_EQ_INT(wk_session_generate(s, &prompt, &gp, &st, &err), WK_OK);
    CHECK_EQ_INT(st.prompt_eval_count, 2);
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
           TEST(test_invalid_options), TEST(test_penalties), TEST(test_chi_square), TEST(test_stop_strings), TEST(test_think_filter), TEST(test_logprobs), TEST(test_slots), TEST(test_session))
