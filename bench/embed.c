/*
 * embed.c - embedding speed of a sentence-transformers folder
 * (src/model/wk_embed.h): sentences per second for a batch, and the latency
 * of one sentence, on the texts of a JSON file (the "cases" of
 * tests/golden/minilm/embeddings.json, their "text"), tokenization
 * included. Figures, not a test; bench/embed-compare runs it beside
 * sentence-transformers on torch CPU.
 *
 *   embed MODEL_DIR CASES.json [BATCH=256] [REPEATS=5] [THREADS=0 (all)]
 *
 * Prints one JSON line: {"batch", "threads", "tokens", "batch_s" (best of
 * REPEATS), "sentences_per_s", "one_ms" (median of 50 single sentences)}.
 */
#include "../src/model/wk_embed.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Tokenizes texts[0..n) and embeds them in one call; seconds. */
static double run(struct wk_embed_model *m, struct wk_threadpool *pool, json_t *cases, int n, int64_t *n_tokens)
{
    const int E = wk_embed_model_n_embd(m);
    struct wk_tokens *t = calloc((size_t)n, sizeof *t);
    const int32_t **seqs = malloc((size_t)n * sizeof *seqs);
    int32_t *nt = malloc((size_t)n * sizeof *nt);
    float *out = malloc((size_t)n * (size_t)E * sizeof *out);
    const int64_t t0 = wk_time_ns();
    *n_tokens = 0;
    struct wk_error err;
    for (int i = 0; i < n; i++) {
        json_t *text = json_object_get(json_array_get(cases, (size_t)i % json_array_size(cases)), "text");
        wk_embed_model_tokenize(m, json_string_value(text), json_string_length(text), true, &t[i], &err);
        seqs[i] = t[i].ids, nt[i] = (int32_t)t[i].n, *n_tokens += t[i].n;
    }
    if (wk_embed_model_encode(m, pool, n, seqs, nt, out, NULL, &err)) fprintf(stderr, "%s\n", err.msg);
    const double s = (double)(wk_time_ns() - t0) * 1e-9;
    for (int i = 0; i < n; i++) wk_tokens_deinit(&t[i]);
    free(t), free(seqs), free(nt), free(out);
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_DIR CASES.json [BATCH] [REPEATS] [THREADS]\n", argv[0]);
        return 2;
    }
    int batch = argc > 3 ? atoi(argv[3]) : 256, reps = argc > 4 ? atoi(argv[4]) : 5;
    int nth = argc > 5 && atoi(argv[5]) > 0 ? atoi(argv[5]) : wk_cpu_features_get()->n_cores;
    struct wk_error err;
    struct wk_embed_model *m;
    struct wk_threadpool *pool;
    json_t *root = json_load_file(argv[2], JSON_ALLOW_NUL, NULL);
    json_t *cases = json_object_get(root, "cases");
    if (!json_array_size(cases) || batch < 1 || reps < 1) return fprintf(stderr, "no cases in %s\n", argv[2]), 1;
    if (wk_embed_model_load(argv[1], &m, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    if (wk_threadpool_create(nth, &pool)) return 1;
    int64_t n_tok = 0;
    run(m, pool, cases, batch, &n_tok); /* warm-up */
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double s = run(m, pool, cases, batch, &n_tok);
        best = s < best ? s : best;
    }
    double one[50];
    for (int i = 0; i < 50; i++) {
        json_t *c1 = json_pack("[O]", json_array_get(cases, (size_t)i % json_array_size(cases)));
        int64_t nt1;
        one[i] = run(m, pool, c1, 1, &nt1) * 1e3;
        json_decref(c1);
    }
    qsort(one, 50, sizeof *one, cmp_double);
    printf("{\"batch\": %d, \"threads\": %d, \"tokens\": %lld, \"batch_s\": %.4f, \"sentences_per_s\": %.1f, "
           "\"one_ms\": %.3f}\n", batch, nth, (long long)n_tok, best, batch / best, one[25]);
    wk_threadpool_destroy(pool);
    wk_embed_model_destroy(m);
    json_decref(root);
    return 0;
}
