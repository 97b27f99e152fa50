/*
 * test-decoder-embed.c - embeddings from a decoder model (wk_embed_decoder)
 * on SmolLM2-135M-Instruct Q4_1 (scripts/fetch-models smollm2) against
 * llama.cpp's llama-embedding on the same file
 * (scripts/reference/make-decoder-embed-fixture.py):
 *   - the model's pooling: no smollm2.pooling_type, so the last token's;
 *   - 20 inputs (languages, code, emoji, control-token text, one spanning
 *     two ubatches): wk_embed_tokenize's ids identical to llama.cpp's, the
 *     normalized last-token vector with cosine >= 0.9999 to llama.cpp's on
 *     the same weight values (the file dequantized to F32: llama.cpp's
 *     forward without rounding activations, as wick computes on a CPU
 *     without AVX-512 VNNI), and for the first 8 mean and CLS pooling too;
 *     against llama.cpp on the Q4_1 file as it runs it (activations
 *     rounded to Q8_1 in every matmul, which moves its own vectors about
 *     3e-4 of cosine from the unrounded ones) cosine >= 0.999 (the lowest
 *     cosines are printed);
 *   - every vector again in the reverse order, after the longest input,
 *     on a context of another size: identical bit for bit (a vector
 *     depends on its input alone);
 *   - wk_embed_decoder_many (short inputs batched on a context of several
 *     sequences, one-token ones as one-token steps): every vector bit for
 *     bit the input's alone, in the three poolings;
 *   - truncation (cut to the limit, or WK_E_RANGE with truncate false)
 *     and bad input (no tokens, an id outside the vocabulary, more than
 *     the context: clear errors).
 *
 * Usage: test-decoder-embed MODEL.gguf EMBEDDINGS.json
 */
#include "../unit/check.h"

#include "../../src/model/wk_embed.h"
#include "../../src/model/wk_model.h"
#include "../../src/runtime/wk_runtime.h"
#include "../../src/tokenizer/wk_tokenizer.h"

#include <jansson.h>
#include <math.h>

static struct wk_model *g_m;
static struct wk_tokenizer *g_tok;
static struct wk_context *g_ctx;
static json_t *g_ref, *g_cases;
static int32_t g_E;
static float *g_first; /* [n_cases][3][E]: the first pass's raw vectors (last, mean, CLS) */
/* the three poolings, in g_first's order, and their names in the fixture */
static const enum wk_pooling g_modes[3] = {WK_POOLING_LAST, WK_POOLING_MEAN, WK_POOLING_CLS};
static const char *const g_names[3] = {"last", "mean", "cls"};

static double cosine(const float *a, const float *b, int64_t n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return ab / (sqrt(aa * bb) + 1e-30);
}

static struct wk_context *make_context(int32_t n_ctx)
{
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = n_ctx;
    cp.n_threads = 2;
    struct wk_context *ctx = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_context_create(g_m, &cp, &ctx, &err), WK_OK);
    return ctx;
}

/* Case i's ids by wick's tokenizer (checked against llama.cpp's) into t. */
static void case_ids(size_t i, struct wk_tokens *t)
{
    json_t *c = json_array_get(g_cases, i), *text = json_object_get(c, "text"), *ids = json_object_get(c, "ids");
    struct wk_error err;
    CHECK_EQ_INT(wk_embed_tokenize(g_tok, json_string_value(text), json_string_length(text), 4096, true, t, &err), WK_OK);
    bool same = (size_t)t->n == json_array_size(ids);
    for (int64_t k = 0; same && k < t->n; k++) same = t->ids[k] == json_integer_value(json_array_get(ids, (size_t)k));
    if (!same) fprintf(stderr, "  case %zu: %lld ids, llama.cpp has %zu\n", i, (long long)t->n, json_array_size(ids));
    CHECK(same);
}

static void test_pooling_of_model(void)
{
    enum wk_pooling p = WK_POOLING_MEAN;
    struct wk_error err;
    CHECK_EQ_INT(wk_embed_decoder_pooling(g_m, &p, &err), WK_OK);
    CHECK_EQ_INT(p, WK_POOLING_LAST);
    enum wk_pooling q = WK_POOLING_LAST;
    CHECK_EQ_INT(wk_embed_pooling_from_type(1, &q), WK_OK);
    CHECK_EQ_INT(q, WK_POOLING_MEAN);
    CHECK_EQ_INT(wk_embed_pooling_from_type(4, &q), WK_E_UNSUPPORTED);
    CHECK_EQ_INT(wk_embed_pooling_from_type(0, &q), WK_E_UNSUPPORTED);
}

static void test_against_llama_cpp(void)
{
    /* the fourth: llama.cpp on the Q4_1 file, its activations rounded to Q8_1 */
    static const char *const names[4] = {"last", "mean", "cls", "last_q8"};
    static const enum wk_pooling modes[4] = {WK_POOLING_LAST, WK_POOLING_MEAN, WK_POOLING_CLS, WK_POOLING_LAST};
    static const double tol[4] = {0.9999, 0.9999, 0.9999, 0.999};
    double worst[4] = {2, 2, 2, 2};
    int n_seen[4] = {0};
    float *y = malloc((size_t)g_E * sizeof *y);
    for (size_t i = 0; i < json_array_size(g_cases); i++) {
        struct wk_tokens t = {0};
        case_ids(i, &t);
        json_t *c = json_array_get(g_cases, i);
        for (int k = 0; k < 4; k++) {
            json_t *ref = json_object_get(c, names[k]);
            if (!ref) continue;
            CHECK_EQ_INT((int)json_array_size(ref), g_E);
            float *raw = g_first + ((size_t)i * 3 + (size_t)(k % 3)) * (size_t)g_E;
            struct wk_error err;
            if (k < 3) CHECK_EQ_INT(wk_embed_decoder(g_ctx, modes[k], t.ids, (int32_t)t.n, raw, NULL, &err), WK_OK);
            wk_embed_pool(WK_POOLING_LAST, raw, 1, g_E, true, y); /* normalized, as llama-embedding --embd-normalize 2 */
            float *r = malloc((size_t)g_E * sizeof *r);
            for (int32_t e = 0; e < g_E; e++) r[e] = (float)json_number_value(json_array_get(ref, (size_t)e));
            const double cs = cosine(y, r, g_E);
            if (cs < tol[k]) fprintf(stderr, "  case %zu (%lld tokens) %s: cosine %.9f\n", i, (long long)t.n, names[k], cs);
            CHECK(cs >= tol[k]);
            worst[k] = fmin(worst[k], cs);
            n_seen[k]++;
            free(r);
        }
        wk_tokens_deinit(&t);
    }
    for (int k = 0; k < 4; k++)
        printf("  %s: %d inputs, lowest cosine to llama.cpp %.9f (at least %g)\n", names[k], n_seen[k], worst[k], tol[k]);
    CHECK(n_seen[0] == 20 && n_seen[1] == 8 && n_seen[2] == 8 && n_seen[3] == 20);
    free(y);
}

/* The same vectors in another order, after the longest input, on a context of another size: bit for bit. */
static void test_independent_of_company(void)
{
    struct wk_context *ctx = make_context(2048);
    float *raw = malloc((size_t)g_E * sizeof *raw);
    const size_t n = json_array_size(g_cases);
    int differ = 0;
    for (size_t r = 0; ctx && r < n; r++) {
        const size_t i = n - 1 - r; /* the longest (the last case) first */
        struct wk_tokens t = {0};
        case_ids(i, &t);
        for (int k = 0; k < 3; k++) {
            if (!json_object_get(json_array_get(g_cases, i), g_names[k])) continue;
            struct wk_error err;
            CHECK_EQ_INT(wk_embed_decoder(ctx, g_modes[k], t.ids, (int32_t)t.n, raw, NULL, &err), WK_OK);
            if (memcmp(raw, g_first + (i * 3 + (size_t)k) * (size_t)g_E, (size_t)g_E * sizeof *raw)) {
                fprintf(stderr, "  case %zu %s: another vector in another order\n", i, g_names[k]);
                differ++;
            }
        }
        wk_tokens_deinit(&t);
    }
    CHECK_EQ_INT(differ, 0);
    free(raw);
    wk_context_destroy(ctx);
}

/* wk_embed_decoder_many: the 20 inputs and two one-token ones in one call,
 * short ones batched on a context of 8 sequences of 64 positions: every
 * vector what the input gives alone, bit for bit, in every pooling. The
 * one input longer than 64 tokens (909, computed alone on the big context)
 * is in the last-token pooling's call only; the vectors alone are the
 * first pass's where test_against_llama_cpp computed them. */
static void test_many(void)
{
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    cp.n_seq_max = 8;
    struct wk_context *many = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_context_create(g_m, &cp, &many, &err), WK_OK);
    const int32_t n_cases = (int32_t)json_array_size(g_cases), n = n_cases + 2;
    struct wk_tokens *t = calloc((size_t)n, sizeof *t);
    const int32_t **seqs = calloc((size_t)n, sizeof *seqs);
    int32_t *nt = calloc((size_t)n, sizeof *nt), n_short = 0;
    float *alone = malloc((size_t)n * (size_t)g_E * sizeof *alone), *out = malloc((size_t)n * (size_t)g_E * sizeof *out);
    for (int32_t i = 0; i < n; i++) {
        if (i < n_cases) case_ids((size_t)i, &t[i]);
        else wk_tokens_push(&t[i], 100 + 7 * i); /* one token */
        seqs[i] = t[i].ids, nt[i] = (int32_t)t[i].n;
        n_short += nt[i] <= 64;
    }
    printf("  %d inputs, %d of at most 64 tokens (batched)\n", n, n_short);
    CHECK(n_short >= 10 && n_short < n);
    const int32_t **ks = calloc((size_t)n, sizeof *ks);
    int32_t *kn = calloc((size_t)n, sizeof *kn);
    for (int k = 0; many && k < 3; k++) {
        int32_t m = 0; /* this pooling's inputs: all for the last token's, the short ones for the others */
        for (int32_t i = 0; i < n; i++) {
            if (k > 0 && nt[i] > 64) continue;
            float *a = alone + (size_t)m * (size_t)g_E;
            if (i < n_cases && json_object_get(json_array_get(g_cases, (size_t)i), g_names[k]))
                memcpy(a, g_first + ((size_t)i * 3 + (size_t)k) * (size_t)g_E, (size_t)g_E * sizeof *a);
            else
                CHECK_EQ_INT(wk_embed_decoder(g_ctx, g_modes[k], seqs[i], nt[i], a, NULL, &err), WK_OK);
            ks[m] = seqs[i], kn[m++] = nt[i];
        }
        CHECK(k > 0 ? m == n_short : m == n);
        memset(out, 0xff, (size_t)n * (size_t)g_E * sizeof *out);
        CHECK_EQ_INT(wk_embed_decoder_many(g_ctx, many, g_modes[k], m, ks, kn, out, NULL, &err), WK_OK);
        int differ = 0;
        for (int32_t i = 0; i < m; i++)
            differ += memcmp(out + (size_t)i * (size_t)g_E, alone + (size_t)i * (size_t)g_E, (size_t)g_E * sizeof *out) != 0;
        if (differ) fprintf(stderr, "  pooling %d: %d of %d vectors differ from the input alone\n", k, differ, m);
        CHECK_EQ_INT(differ, 0);
    }
    free(ks), free(kn);
    /* bad input: named by its index, nothing computed */
    const int32_t bad[3] = {1, 2, 1 << 30};
    const int32_t *bs[2] = {seqs[0], bad};
    const int32_t bn[2] = {nt[0], 3};
    CHECK_EQ_INT(wk_embed_decoder_many(g_ctx, many, WK_POOLING_LAST, 2, bs, bn, out, NULL, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "input 1: token id 1073741824 is outside the vocabulary");
    for (int32_t i = 0; i < n; i++) wk_tokens_deinit(&t[i]);
    free(t), free(seqs), free(nt), free(alone), free(out);
    wk_context_destroy(many);
}

static void test_truncate_and_bad_input(void)
{
    json_t *c = json_array_get(g_cases, json_array_size(g_cases) - 1), *text = json_object_get(c, "text");
    struct wk_tokens t = {0};
    struct wk_error err;
    CHECK_EQ_INT(wk_embed_tokenize(g_tok, json_string_value(text), json_string_length(text), 16, true, &t, &err), WK_OK);
    CHECK_EQ_INT((int)t.n, 16);
    CHECK(t.ids[0] == json_integer_value(json_array_get(json_object_get(c, "ids"), 0)));
    CHECK_EQ_INT(wk_embed_tokenize(g_tok, json_string_value(text), json_string_length(text), 16, false, &t, &err),
                 WK_E_RANGE);
    CHECK_CONTAINS(err.msg, "over the model's limit of 16");
    CHECK_EQ_INT(wk_embed_tokenize(g_tok, "", 0, 16, true, &t, &err), WK_OK);
    CHECK_EQ_INT((int)t.n, 0); /* SmolLM2 adds no BOS: nothing to embed */
    float *out = malloc((size_t)g_E * sizeof *out);
    CHECK_EQ_INT(wk_embed_decoder(g_ctx, WK_POOLING_LAST, t.ids, 0, out, NULL, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "no tokens");
    const int32_t bad[2] = {1, 1 << 30};
    CHECK_EQ_INT(wk_embed_decoder(g_ctx, WK_POOLING_MEAN, bad, 2, out, NULL, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "outside the vocabulary");
    struct wk_context *small = make_context(64);
    int32_t ids[65];
    for (int i = 0; i < 65; i++) ids[i] = 100 + i;
    CHECK_EQ_INT(wk_embed_decoder(small, WK_POOLING_LAST, ids, 65, out, NULL, &err), WK_E_RANGE);
    CHECK_CONTAINS(err.msg, "context of 64");
    CHECK_EQ_INT(wk_embed_decoder(small, WK_POOLING_LAST, ids, 64, out, NULL, &err), WK_OK); /* the context is usable after */
    wk_context_destroy(small);
    free(out);
    wk_tokens_deinit(&t);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL.gguf EMBEDDINGS.json\n", argv[0]);
        return 2;
    }
    struct wk_error err;
    json_error_t je;
    if (wk_model_load(argv[1], &g_m, &err) || wk_tokenizer_for_model(g_m, &g_tok, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    if (!(g_ref = json_load_file(argv[2], 0, &je))) {
        fprintf(stderr, "%s: %s\n", argv[2], je.text);
        return 1;
    }
    g_cases = json_object_get(g_ref, "cases");
    g_E = wk_model_hparams(g_m)->n_embd;
    g_first = calloc(json_array_size(g_cases) * 3 * (size_t)g_E, sizeof *g_first);
    if (json_integer_value(json_object_get(g_ref, "n_embd")) != g_E || json_array_size(g_cases) != 20 || !g_first) {
        fprintf(stderr, "%s: expected 20 cases of %d dimensions\n", argv[2], g_E);
        return 1;
    }
    printf("%s against %s\n", argv[1], json_string_value(json_object_get(g_ref, "source")));
    g_ctx = make_context(4096);
    static const struct check_test tests[] = {TEST(test_pooling_of_model), TEST(test_against_llama_cpp),
                                              TEST(test_independent_of_company), TEST(test_many),
                                              TEST(test_truncate_and_bad_input)};
    int rc = check_main(1, argv, tests, (int)WK_ARRAY_LEN(tests));
    wk_context_destroy(g_ctx);
    wk_tokenizer_destroy(g_tok);
    wk_model_destroy(g_m);
    json_decref(g_ref);
    free(g_first);
    return rc;
}
