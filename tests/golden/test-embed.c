/*
 * test-embed.c - all-MiniLM-L6-v2 (scripts/fetch-models minilm) against
 * sentence-transformers on the same folder
 * (scripts/reference/make-embed-fixtures.py, make-wordpiece-reference.py):
 *   - WordPiece ids with [CLS] / [SEP] and truncation at max_seq_length,
 *     identical to the Hugging Face tokenizer's on 307 tricky inputs;
 *   - 200 inputs (languages, code, empty, over-long truncated at 256):
 *     identical ids, normalized embeddings with cosine >= 0.9999 each,
 *     all 200 in one call (batched forwards, longest first);
 *   - each of the first 24 inputs alone gives its batched vector, bit for
 *     bit (rows are computed independently of their batch);
 *   - truncate false on an over-long input is WK_E_RANGE;
 *   - a small retrieval set ranks its documents as sentence-transformers.
 *
 * Usage: test-embed MODEL EMBEDDINGS.json WORDPIECE_CASES.json RETRIEVAL.json
 * MODEL: the folder, or llama.cpp's F32 "bert" GGUF of it
 * (scripts/reference/make-minilm-gguf.sh), whose limit is the model's 512
 * positions, not sentence-transformers' 256: inputs the reference cut at
 * 256 are then left out (g_skip_cut), the rest must agree as they do.
 */
#include "../unit/check.h"

#include "../../src/model/wk_embed.h"
#include "../../src/cpu/wk_cpu.h"

#include <jansson.h>

static struct wk_embed_model *g_m;
static struct wk_threadpool *g_pool;
static json_t *g_emb, *g_cases, *g_retr;
static bool g_skip_cut; /* the model's limit is not the reference's */

/* Whether a reference case was cut at the reference's limit (and the model cuts elsewhere). */
static bool skipped(json_t *c)
{
    return g_skip_cut && json_array_size(json_object_get(c, "ids")) ==
                             (size_t)json_integer_value(json_object_get(g_emb, "max_seq_length"));
}

static double cosine(const float *a, const float *b, int64_t n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return ab / (sqrt(aa * bb) + 1e-30);
}

static bool ids_equal(const struct wk_tokens *t, json_t *ids)
{
    if ((size_t)t->n != json_array_size(ids)) return false;
    for (int64_t i = 0; i < t->n; i++)
        if (t->ids[i] != json_integer_value(json_array_get(ids, (size_t)i))) return false;
    return true;
}

static void test_wordpiece_cases(void)
{
    json_t *cases = json_object_get(g_cases, "cases"), *c;
    size_t i, bad = 0;
    json_array_foreach(cases, i, c)
    {
        if (skipped(c)) continue;
        json_t *text = json_object_get(c, "text");
        struct wk_tokens t = {0};
        struct wk_error err;
        CHECK_EQ_INT(wk_embed_model_tokenize(g_m, json_string_value(text), json_string_length(text), true, &t, &err),
                     WK_OK);
        if (!ids_equal(&t, json_object_get(c, "ids")) && bad++ < 5)
            fprintf(stderr, "  ids differ on case %zu \"%.40s\" (%lld vs %zu ids)\n", i, json_string_value(text),
                    (long long)t.n, json_array_size(json_object_get(c, "ids")));
        wk_tokens_deinit(&t);
    }
    printf("  wordpiece cases: %zu, %zu differ\n", json_array_size(cases), bad);
    CHECK(json_array_size(cases) >= 300);
    CHECK_EQ_INT(bad, 0);
}

/* Tokenizes and embeds every case of g_emb in one call: out [n][E]. */
static int embed_all(float **out, struct wk_tokens **toks)
{
    json_t *cases = json_object_get(g_emb, "cases");
    int n = (int)json_array_size(cases), E = wk_embed_model_n_embd(g_m);
    *toks = calloc((size_t)n, sizeof **toks);
    *out = malloc((size_t)n * (size_t)E * sizeof **out);
    const int32_t **seqs = malloc((size_t)n * sizeof *seqs);
    int32_t *nt = malloc((size_t)n * sizeof *nt);
    struct wk_error err;
    for (int i = 0; i < n; i++) {
        json_t *text = json_object_get(json_array_get(cases, (size_t)i), "text");
        CHECK_EQ_INT(wk_embed_model_tokenize(g_m, json_string_value(text), json_string_length(text), true,
                                             &(*toks)[i], &err), WK_OK);
        seqs[i] = (*toks)[i].ids;
        nt[i] = (int32_t)(*toks)[i].n;
    }
    enum wk_status st = wk_embed_model_encode(g_m, g_pool, n, seqs, nt, *out, NULL, &err);
    if (st) fprintf(stderr, "%s\n", err.msg);
    CHECK_EQ_INT(st, WK_OK);
    free(seqs);
    free(nt);
    return n;
}

static void test_embeddings(void)
{
    json_t *cases = json_object_get(g_emb, "cases");
    const int E = wk_embed_model_n_embd(g_m);
    CHECK_EQ_INT(E, json_integer_value(json_object_get(g_emb, "n_embd")));
    if (!g_skip_cut)
        CHECK_EQ_INT(wk_embed_model_max_tokens(g_m), json_integer_value(json_object_get(g_emb, "max_seq_length")));
    float *out;
    struct wk_tokens *toks;
    int n = embed_all(&out, &toks);
    double min_cos = 1;
    int bad_ids = 0, bad_cos = 0, n_trunc = 0, n_skipped = 0;
    float *ref = malloc((size_t)E * sizeof *ref);
    for (int i = 0; i < n; i++) {
        json_t *c = json_array_get(cases, (size_t)i), *e = json_object_get(c, "embedding");
        if (skipped(c)) {
            n_skipped++;
            continue;
        }
        if (!ids_equal(&toks[i], json_object_get(c, "ids"))) bad_ids++;
        n_trunc += toks[i].n == wk_embed_model_max_tokens(g_m);
        CHECK_EQ_INT(json_array_size(e), E);
        for (int k = 0; k < E; k++) ref[k] = (float)json_number_value(json_array_get(e, (size_t)k));
        double cs = cosine(out + (size_t)i * E, ref, E);
        if (cs < 0.9999 && bad_cos++ < 5)
            fprintf(stderr, "  case %d \"%.40s\": cosine %.6f\n", i, json_string_value(json_object_get(c, "text")), cs);
        min_cos = WK_MIN(min_cos, cs);
    }
    printf("  embeddings: %d inputs (%d truncated at %d tokens, %d cut by the reference left out): %d with other "
           "ids, lowest cosine %.9f\n", n, n_trunc, wk_embed_model_max_tokens(g_m), n_skipped, bad_ids, min_cos);
    CHECK(n == 200);
    CHECK(g_skip_cut ? n - n_skipped >= 195 : n_trunc >= 2);
    CHECK_EQ_INT(bad_ids, 0);
    CHECK_EQ_INT(bad_cos, 0);
    /* tighter than the 0.9999, by how the products round: f32
     * (measured 1 - 1e-9), or Q14 where the table has its GEMM (about
     * 2^-14 of a row's or block's largest value an operand, wk_cpu.h;
     * measured 0.9999993; 12-bit operands would give ~0.999994) */
    const bool q14 = wk_cpu_kernels_get()->gemm_q14 != NULL;
    printf("  products in %s\n", q14 ? "Q14 (14-bit integers)" : "f32");
    CHECK(min_cos >= (q14 ? 0.999998 : 0.9999999));
    /* alone equals batched, bit for bit */
    int n_alone = 24, differ = 0;
    float *one = malloc((size_t)E * sizeof *one);
    for (int i = 0; i < n_alone; i++) {
        const int32_t *seq = toks[i].ids;
        int32_t nt = (int32_t)toks[i].n;
        struct wk_error err;
        CHECK_EQ_INT(wk_embed_model_encode(g_m, g_pool, 1, &seq, &nt, one, NULL, &err), WK_OK);
        differ += memcmp(one, out + (size_t)i * E, (size_t)E * sizeof *one) != 0;
    }
    printf("  %d inputs embedded alone: %d differ from their batched vector\n", n_alone, differ);
    CHECK_EQ_INT(differ, 0);
    /* the inputs 3 times over: several forwards (of at most 4096 rows), the same vectors */
    const int n3 = 3 * n;
    const int32_t **seqs = malloc((size_t)n3 * sizeof *seqs);
    int32_t *nts = malloc((size_t)n3 * sizeof *nts);
    float *out3 = malloc((size_t)n3 * (size_t)E * sizeof *out3);
    int64_t rows = 0;
    for (int i = 0; i < n3; i++) seqs[i] = toks[i % n].ids, nts[i] = (int32_t)toks[i % n].n, rows += nts[i];
    struct wk_error err3;
    CHECK_EQ_INT(wk_embed_model_encode(g_m, g_pool, n3, seqs, nts, out3, NULL, &err3), WK_OK);
    differ = 0;
    for (int i = 0; i < n3; i++) differ += memcmp(out3 + (size_t)i * E, out + (size_t)(i % n) * E, (size_t)E * sizeof *out3) != 0;
    printf("  the %d inputs 3 times over (%lld rows, several forwards): %d differ\n", n, (long long)rows, differ);
    CHECK(rows > 4096); /* two forwards at least */
    CHECK_EQ_INT(differ, 0);
    free(seqs), free(nts), free(out3);
    for (int i = 0; i < n; i++) wk_tokens_deinit(&toks[i]);
    free(toks), free(out), free(ref), free(one);
}

static void test_truncate_false(void)
{
    if (g_skip_cut) return;
    json_t *cases = json_object_get(g_emb, "cases");
    size_t i;
    json_t *c;
    int n_refused = 0;
    json_array_foreach(cases, i, c)
    {
        if ((int)json_array_size(json_object_get(c, "ids")) < wk_embed_model_max_tokens(g_m)) continue;
        json_t *text = json_object_get(c, "text");
        struct wk_tokens t = {0};
        struct wk_error err;
        CHECK_EQ_INT(wk_embed_model_tokenize(g_m, json_string_value(text), json_string_length(text), false, &t, &err),
                     WK_E_RANGE);
        CHECK_CONTAINS(err.msg, "over the model's limit of 256");
        n_refused++;
        wk_tokens_deinit(&t);
    }
    CHECK(n_refused >= 2);
}

static void test_retrieval(void)
{
    json_t *docs = json_object_get(g_retr, "documents"), *queries = json_object_get(g_retr, "queries");
    json_t *ranking = json_object_get(g_retr, "ranking");
    const int E = wk_embed_model_n_embd(g_m), nd = (int)json_array_size(docs), nq = (int)json_array_size(queries);
    float *v = malloc((size_t)(nd + nq) * (size_t)E * sizeof *v);
    struct wk_tokens t[32] = {{0}};
    const int32_t *seqs[32];
    int32_t nt[32];
    CHECK(nd + nq <= 32);
    for (int i = 0; i < nd + nq && i < 32; i++) {
        json_t *s = i < nd ? json_array_get(docs, (size_t)i) : json_array_get(queries, (size_t)(i - nd));
        struct wk_error err;
        CHECK_EQ_INT(wk_embed_model_tokenize(g_m, json_string_value(s), json_string_length(s), true, &t[i], &err), WK_OK);
        seqs[i] = t[i].ids, nt[i] = (int32_t)t[i].n;
    }
    struct wk_error err;
    CHECK_EQ_INT(wk_embed_model_encode(g_m, g_pool, nd + nq, seqs, nt, v, NULL, &err), WK_OK);
    int same = 0;
    for (int q = 0; q < nq; q++) {
        int order[32];
        double score[32];
        for (int d = 0; d < nd; d++) order[d] = d, score[d] = cosine(v + (size_t)(nd + q) * E, v + (size_t)d * E, E);
        for (int a = 1; a < nd; a++) /* insertion sort, best first */
            for (int b = a; b > 0 && score[order[b]] > score[order[b - 1]]; b--) {
                int x = order[b];
                order[b] = order[b - 1], order[b - 1] = x;
            }
        bool eq = true;
        for (int d = 0; d < nd; d++) eq &= order[d] == json_integer_value(json_array_get(json_array_get(ranking, (size_t)q), (size_t)d));
        same += eq;
    }
    printf("  retrieval: %d of %d queries rank the %d documents as sentence-transformers\n", same, nq, nd);
    CHECK_EQ_INT(same, nq);
    for (int i = 0; i < nd + nq && i < 32; i++) wk_tokens_deinit(&t[i]);
    free(v);
}

static void test_bad_inputs(void)
{
    struct wk_error err;
    const int32_t bad_id[] = {101, 40000, 102}, *seq = bad_id;
    int32_t n = 3;
    float out[1024];
    CHECK_EQ_INT(wk_embed_model_encode(g_m, g_pool, 1, &seq, &n, out, NULL, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "outside the vocabulary");
    n = 0;
    CHECK_EQ_INT(wk_embed_model_encode(g_m, g_pool, 1, &seq, &n, out, NULL, &err), WK_E_INVALID);
    n = wk_embed_model_max_tokens(g_m) + 1;
    CHECK_EQ_INT(wk_embed_model_encode(g_m, g_pool, 1, &seq, &n, out, NULL, &err), WK_E_INVALID);
    CHECK_EQ_INT(wk_embed_model_encode(g_m, g_pool, 0, NULL, NULL, out, NULL, &err), WK_OK);
    struct wk_embed_model *m;
    CHECK_EQ_INT(wk_embed_model_load("/nonexistent", &m, &err), WK_E_NOT_FOUND);
    CHECK_CONTAINS(err.msg, "/nonexistent/config.json");
}

static json_t *load(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, JSON_ALLOW_NUL, &je);
    if (!j) fprintf(stderr, "%s: %s\n", path, je.text);
    return j;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s MODEL_DIR EMBEDDINGS.json WORDPIECE_CASES.json RETRIEVAL.json\n", argv[0]);
        return 2;
    }
    struct wk_error err;
    if (wk_embed_model_load(argv[1], &g_m, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    g_emb = load(argv[2]), g_cases = load(argv[3]), g_retr = load(argv[4]);
    g_skip_cut = g_emb && wk_embed_model_max_tokens(g_m) != json_integer_value(json_object_get(g_emb, "max_seq_length"));
    printf("%s: %s, at most %d tokens, %s pooling%s\n", argv[1], wk_embed_is_folder(argv[1]) ? "a folder" : "a GGUF",
           wk_embed_model_max_tokens(g_m), (const char *[]){"mean", "CLS", "last"}[wk_embed_model_pooling(g_m)],
           wk_embed_model_normalizes(g_m) ? ", normalized" : "");
    if (!g_emb || !g_cases || !g_retr || wk_threadpool_create(WK_MIN(wk_cpu_features_get()->n_cores, 4), &g_pool))
        return 1;
    static const struct check_test tests[] = {TEST(test_wordpiece_cases), TEST(test_embeddings),
                                              TEST(test_truncate_false), TEST(test_retrieval), TEST(test_bad_inputs)};
    int rc = check_main(1, argv, tests, (int)WK_ARRAY_LEN(tests));
    wk_threadpool_destroy(g_pool);
    wk_embed_model_destroy(g_m);
    json_decref(g_emb), json_decref(g_cases), json_decref(g_retr);
    return rc;
}
