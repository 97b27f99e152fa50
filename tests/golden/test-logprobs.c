/*
 * test-logprobs.c - the log-probabilities wick reports (on_logprobs of
 * wk_session_generate, top 20) against transformers' log_softmax at the
 * first generated position, on the real models (fixture:
 * tests/golden/logprobs.json, made by scripts/reference/make-logprobs.py):
 *   - the chosen (greedy) token is the reference's most likely one and its
 *     logprob agrees within TOL;
 *   - every one of wick's 20 alternatives that the reference lists agrees
 *     within TOL, and the first 10 ids are the reference's (where the
 *     reference's neighbours are not within TOL of each other);
 *   - the row is normalised: the sum over the whole vocabulary of
 *     exp(logit - (logit_id - logprob_id)) is 1 within 1e-4;
 *   - the stream keeps logprobs aligned with the text, and streamed and
 *     collected (non-streamed) answers are the same bytes (see below).
 * Decode runs with 16-bit activations by default, which moves logits by up
 * to ~0.003 (README, "Exact numerics"); TOL is the 0.02.
 *
 * Usage: test-logprobs FIXTURE.json   (models in $WICK_CACHE/models or
 * ~/.cache/wick/models)
 */
#include "../unit/check.h"

#include "../../src/runtime/wk_runtime.h"

#include <jansson.h>

#define TOL 0.02

static json_t *g_fixture;
static char g_models_dir[4096];
/* the fixture's models (index as in its "models" array), loaded once by main */
#define N_MODELS 2
static struct wk_model *g_model[N_MODELS];
static struct wk_tokenizer *g_tok[N_MODELS];

struct got {
    struct wk_token_logprobs lp;
    int n;
};

static void on_lp(void *user, const struct wk_token_logprobs *lp)
{
    struct got *g = user;
    if (g->n++ == 0) g->lp = *lp;
}

static void run_model(size_t mi)
{
    json_t *jm = json_array_get(json_object_get(g_fixture, "models"), mi);
    struct wk_model *m = g_model[mi];
    struct wk_tokenizer *tok = g_tok[mi];
    struct wk_error err;
    struct wk_session *s = NULL;
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = 1024;
    CHECK_EQ_INT(wk_session_create(m, tok, &cp, &s, &err), WK_OK);
    size_t ci;
    json_t *c;
    json_array_foreach(json_object_get(jm, "cases"), ci, c) {
        json_t *jids = json_object_get(c, "prompt_ids"), *top = json_object_get(c, "top");
        struct wk_tokens prompt = {0};
        size_t k;
        json_t *v;
        json_array_foreach(jids, k, v) CHECK_EQ_INT(wk_tokens_push(&prompt, (int32_t)json_integer_value(v)), WK_OK);
        struct wk_generate_params gp = wk_generate_params_default();
        struct got g = {0};
        gp.sampler.temperature = 0;
        gp.num_predict = 1;
        gp.top_logprobs = 20;
        gp.on_logprobs = on_lp;
        gp.user = &g;
        struct wk_generate_stats st;
        CHECK_EQ_INT(wk_session_generate(s, &prompt, &gp, &st, &err), WK_OK);
        CHECK_EQ_INT(g.n, 1);
        CHECK_EQ_INT(g.lp.n_top, 20);
        /* the reference's (id, logprob) pairs */
        int32_t rid[20];
        double rlp[20];
        size_t nr = json_array_size(top);
        for (size_t j = 0; j < nr && j < 20; j++) {
            rid[j] = (int32_t)json_integer_value(json_array_get(json_array_get(top, j), 0));
            rlp[j] = json_real_value(json_array_get(json_array_get(top, j), 1));
        }
        CHECK_EQ_INT(g.lp.id, rid[0]);
        CHECK_NEAR(g.lp.logprob, rlp[0], TOL, 0);
        double max_diff = 0;
        int matched = 0;
        for (int32_t j = 0; j < g.lp.n_top; j++)
            for (size_t r = 0; r < nr; r++)
                if (rid[r] == g.lp.top_ids[j]) {
                    double d = fabs(g.lp.top_logprobs[j] - rlp[r]);
                    max_diff = d > max_diff ? d : max_diff;
                    matched++;
                }
        CHECK(max_diff <= TOL);
        CHECK(matched >= 15);
        for (int j = 0; j < 10; j++) {
            bool near_tie = (j > 0 && rlp[j - 1] - rlp[j] < TOL) || (j < 19 && rlp[j] - rlp[j + 1] < TOL);
            if (!near_tie) CHECK_EQ_INT(g.lp.top_ids[j], rid[j]);
        }
        /* normalisation over the whole row, from the logits wick computed */
        struct wk_context *ctx = wk_session_context(s);
        int32_t V = wk_model_hparams(m)->n_vocab;
        float *logits = malloc((size_t)V * sizeof *logits);
        wk_context_truncate(ctx, 0);
        CHECK_EQ_INT(wk_context_decode(ctx, prompt.ids, (int32_t)prompt.n, logits, NULL, &err), WK_OK);
        struct wk_token_logprobs lp;
        wk_logprobs_compute(logits, V, 0, 0, &lp);
        double lse = logits[0] - lp.logprob, sum = 0;
        for (int32_t i = 0; i < V; i++) sum += exp(logits[i] - lse);
        CHECK_NEAR(sum, 1.0, 1e-4, 0);
        printf("  %-24s %-8s chosen %6d logprob %9.5f (ref %9.5f), top-20 max |diff| %.5f, "
               "%d of 20 in the reference's top 20, sum exp %.7f\n",
               json_string_value(json_object_get(jm, "model")),
               json_string_value(json_object_get(c, "name")), g.lp.id, g.lp.logprob, rlp[0], max_diff,
               matched, sum);
        free(logits);
        wk_tokens_deinit(&prompt);
        /* the session's cache no longer matches its record after the direct
         * decode: start the next case from a fresh session */
        wk_session_destroy(s);
        CHECK_EQ_INT(wk_session_create(m, tok, &cp, &s, &err), WK_OK);
    }
    wk_session_destroy(s);
}

/* Records the stream: the text emitted and the tokens whose logprobs were
 * handed over, checking at each piece that the released tokens decode to
 * exactly the text emitted so far (logprobs stay aligned with their bytes). */
struct stream_rec {
    const struct wk_tokenizer *tok;
    char text[4096];
    size_t n;
    int32_t ids[256];
    int n_ids, misaligned;
};

static void decode_ids(const struct wk_tokenizer *tok, const int32_t *ids, int n, char *out, size_t cap)
{
    struct wk_detok d;
    wk_detok_init(&d);
    size_t len = 0, k;
    for (int i = 0; i < n; i++) {
        const char *t = wk_detok_push(&d, tok, ids[i], false, &k);
        if (t && len + k < cap) memcpy(out + len, t, k), len += k;
    }
    const char *t = wk_detok_flush(&d, &k);
    if (t && len + k < cap) memcpy(out + len, t, k), len += k;
    out[len] = '\0';
    wk_detok_deinit(&d);
}

static void rec_lp(void *user, const struct wk_token_logprobs *lp)
{
    struct stream_rec *r = user;
    if (r->n_ids < 256) r->ids[r->n_ids++] = lp->id;
}

static bool rec_piece(void *user, const char *text, size_t len)
{
    struct stream_rec *r = user;
    if (r->n + len < sizeof r->text) memcpy(r->text + r->n, text, len), r->n += len;
    r->text[r->n] = '\0';
    char dec[4096];
    decode_ids(r->tok, r->ids, r->n_ids, dec, sizeof dec);
    if (strcmp(dec, r->text) != 0) r->misaligned++;
    return true;
}

/* SmolLM2, greedy, 24 tokens: without stop strings the released tokens
 * always decode to the emitted text; with a stop string taken from the
 * middle of that answer, the output ends right before it and the released
 * tokens decode to a prefix of the output (a token straddling the cut is
 * dropped with the stop string). */
static void test_logprobs_aligned_with_text(void)
{
    json_t *jm = json_array_get(json_object_get(g_fixture, "models"), 1);
    struct wk_model *m = g_model[1];
    struct wk_tokenizer *tok = g_tok[1];
    struct wk_error err;
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = 512;
    json_t *jids = json_object_get(json_array_get(json_object_get(jm, "cases"), 0), "prompt_ids");
    struct wk_tokens prompt = {0};
    size_t k;
    json_t *v;
    json_array_foreach(jids, k, v) CHECK_EQ_INT(wk_tokens_push(&prompt, (int32_t)json_integer_value(v)), WK_OK);
    char full[4096] = "";
    for (int pass = 0; pass < 2; pass++) {
        struct wk_session *s = NULL;
        CHECK_EQ_INT(wk_session_create(m, tok, &cp, &s, &err), WK_OK);
        static struct stream_rec r;
        memset(&r, 0, sizeof r);
        r.tok = tok;
        struct wk_generate_params gp = wk_generate_params_default();
        gp.sampler.temperature = 0;
        gp.num_predict = 24;
        gp.top_logprobs = 2;
        gp.on_logprobs = rec_lp;
        gp.on_piece = rec_piece;
        gp.user = &r;
        char stop[16] = "";
        const char *stops[1] = {stop};
        if (pass == 1) {
            size_t L = strlen(full);
            CHECK(L > 30);
            memcpy(stop, full + L / 2, 6); /* six bytes from the middle of the answer */
            gp.stop = stops, gp.n_stop = 1;
        }
        struct wk_generate_stats st;
        CHECK_EQ_INT(wk_session_generate(s, &prompt, &gp, &st, &err), WK_OK);
        char dec[4096];
        decode_ids(tok, r.ids, r.n_ids, dec, sizeof dec);
        if (pass == 0) {
            CHECK_EQ_INT(r.misaligned, 0);
            CHECK_EQ_STR(dec, r.text);
            CHECK_EQ_INT(r.n_ids, 24);
            snprintf(full, sizeof full, "%s", r.text);
        } else {
            const char *at = strstr(full, stop);
            CHECK(at != NULL);
            CHECK(r.n == (size_t)(at - full) && strncmp(r.text, full, r.n) == 0);
            CHECK(strncmp(dec, r.text, strlen(dec)) == 0 && strlen(dec) <= r.n);
            CHECK_EQ_STR(st.done_reason, "stop");
            printf("  stop \"%s\": %zu bytes out, %d tokens' logprobs, decoding to %zu bytes\n", stop,
                   r.n, r.n_ids, strlen(dec));
        }
        wk_session_destroy(s);
    }
    wk_tokens_deinit(&prompt);
}

struct piece_buf {
    char text[8192];
    size_t n;
};

static bool keep_piece(void *user, const char *text, size_t len)
{
    struct piece_buf *b = user;
    if (b->n + len < sizeof b->text) memcpy(b->text + b->n, text, len), b->n += len;
    return true;
}

/* Streamed or not, the same bytes: the concatenated pieces equal the
 * collected (non-streamed) answer, on Gemma's Japanese prompt (multi-byte
 * characters split across tokens) and on SmolLM2's raw alphabet prompt
 * with stop "DEFGHIJ" (nothing at all comes out either way), and with two
 * stop strings (the one that completes first cuts); num_predict 5 gives
 * 5 tokens and done_reason "length". */
static void test_stream_equals_collected(void)
{
    struct {
        int model;
        const char *case_name, *raw;
        const char *stops[2];
        int n_stops;
        const char *want; /* expected answer, or NULL */
    } runs[] = {
        {0, "japanese", NULL, {NULL, NULL}, 0, NULL},
        {1, NULL, "Here is the English alphabet: ABC", {NULL, NULL}, 0, NULL},
        {1, NULL, "Here is the English alphabet: ABC", {"DEFGHIJ", NULL}, 1, ""},
        {1, NULL, "Here is the English alphabet: ABC", {"DEFGHIJKLMNOP", "GHI"}, 2, "DEF"},
    };
    for (size_t ri = 0; ri < WK_ARRAY_LEN(runs); ri++) {
        json_t *jm = json_array_get(json_object_get(g_fixture, "models"), (size_t)runs[ri].model);
        struct wk_model *m = g_model[runs[ri].model];
        struct wk_tokenizer *tok = g_tok[runs[ri].model];
        struct wk_error err;
        struct wk_tokens prompt = {0};
        if (runs[ri].raw) {
            CHECK_EQ_INT(wk_tokenizer_encode(tok, runs[ri].raw, strlen(runs[ri].raw), false, &prompt), WK_OK);
        } else {
            size_t k;
            json_t *c, *v;
            json_array_foreach(json_object_get(jm, "cases"), k, c)
                if (strcmp(json_string_value(json_object_get(c, "name")), runs[ri].case_name) == 0) {
                    size_t j;
                    json_array_foreach(json_object_get(c, "prompt_ids"), j, v)
                        CHECK_EQ_INT(wk_tokens_push(&prompt, (int32_t)json_integer_value(v)), WK_OK);
                }
        }
        struct wk_context_params cp = wk_context_params_default();
        cp.n_ctx = 512;
        struct wk_session *s = NULL;
        CHECK_EQ_INT(wk_session_create(m, tok, &cp, &s, &err), WK_OK);
        static struct piece_buf streamed;
        memset(&streamed, 0, sizeof streamed);
        char *collected = NULL;
        size_t collected_len = 0;
        for (int mode = 0; mode < 2; mode++) {
            struct wk_generate_params gp = wk_generate_params_default();
            gp.sampler.temperature = 0;
            gp.num_predict = 40;
            gp.stop = runs[ri].stops, gp.n_stop = runs[ri].n_stops;
            if (mode == 0) gp.on_piece = keep_piece, gp.user = &streamed;
            else gp.collect = &collected, gp.collect_len = &collected_len;
            struct wk_generate_stats st;
            CHECK_EQ_INT(wk_session_generate(s, &prompt, &gp, &st, &err), WK_OK);
        }
        if (ri == 1) { /* num_predict 5: exactly 5 tokens, done_reason "length" */
            struct wk_generate_params gp = wk_generate_params_default();
            gp.sampler.temperature = 0;
            gp.num_predict = 5;
            struct wk_generate_stats st;
            CHECK_EQ_INT(wk_session_generate(s, &prompt, &gp, &st, &err), WK_OK);
            CHECK_EQ_INT(st.eval_count, 5);
            CHECK_EQ_STR(st.done_reason, "length");
        }
        CHECK(collected != NULL && collected_len == streamed.n &&
              memcmp(collected, streamed.text, streamed.n) == 0);
        if (runs[ri].want) CHECK_EQ_STR(collected ? collected : "?", runs[ri].want);
        else CHECK(streamed.n > 10);
        wk_free(collected);
        wk_tokens_deinit(&prompt);
        wk_session_destroy(s);
    }
}

static void test_logprobs_match_reference(void)
{
    for (size_t i = 0; i < N_MODELS; i++) run_model(i);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FIXTURE.json\n", argv[0]);
        return 2;
    }
    json_error_t jerr;
    g_fixture = json_load_file(argv[1], 0, &jerr);
    if (!g_fixture) {
        fprintf(stderr, "cannot read fixture %s: %s\n", argv[1], jerr.text);
        return 1;
    }
    const char *cache = getenv("WICK_CACHE"), *home = getenv("HOME");
    if (cache) snprintf(g_models_dir, sizeof g_models_dir, "%s/models", cache);
    else snprintf(g_models_dir, sizeof g_models_dir, "%s/.cache/wick/models", home ? home : ".");
    if (json_array_size(json_object_get(g_fixture, "models")) != N_MODELS) {
        fprintf(stderr, "%s: expected %d models\n", argv[1], N_MODELS);
        return 1;
    }
    for (size_t i = 0; i < N_MODELS; i++) {
        char path[4608];
        json_t *jm = json_array_get(json_object_get(g_fixture, "models"), i);
        snprintf(path, sizeof path, "%s/%s", g_models_dir, json_string_value(json_object_get(jm, "model")));
        struct wk_error err;
        if (wk_model_load(path, &g_model[i], &err) ||
            wk_tokenizer_from_gguf(wk_model_gguf(g_model[i]), &g_tok[i], &err)) {
            fprintf(stderr, "%s\n(run scripts/fetch-models to download the model)\n", err.msg);
            return 1;
        }
    }
    static const struct check_test tests[] = {TEST(test_logprobs_match_reference),
                                              TEST(test_logprobs_aligned_with_text),
                                              TEST(test_stream_equals_collected)};
    int rc = check_main(1, argv, tests, 3);
    for (size_t i = 0; i < N_MODELS; i++) {
        wk_tokenizer_destroy(g_tok[i]);
        wk_model_destroy(g_model[i]);
    }
    json_decref(g_fixture);
    return rc;
}
