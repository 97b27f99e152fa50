/*
 * bench-tokenizer.c - encoding speed of wick's tokenizers on the parity
 * corpus (one thread): MB of text per second, each document encoded whole,
 * best of R passes. bench/compare-tokenizers runs it beside Hugging Face
 * `tokenizers` on the same text.
 *
 * Usage: bench-tokenizer CORPUS.jsonl MODEL.gguf [passes]
 */
#include "../src/tokenizer/wk_tokenizer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s CORPUS.jsonl MODEL.gguf [passes]\n", argv[0]);
        return 2;
    }
    int passes = argc > 3 ? atoi(argv[3]) : 3;
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    char **docs = NULL, *line = NULL;
    size_t *lens = NULL, cap = 0, n_docs = 0, total = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *d = json_loads(line, JSON_ALLOW_NUL, NULL);
        json_t *t = json_object_get(d, "text");
        docs = realloc(docs, (n_docs + 1) * sizeof *docs);
        lens = realloc(lens, (n_docs + 1) * sizeof *lens);
        lens[n_docs] = json_string_length(t);
        docs[n_docs] = malloc(lens[n_docs] + 1);
        memcpy(docs[n_docs], json_string_value(t), lens[n_docs] + 1);
        total += lens[n_docs++];
        json_decref(d);
    }
    fclose(f);
    struct wk_gguf *g;
    struct wk_tokenizer *tok;
    struct wk_error err;
    if (wk_gguf_open(argv[2], &g, &err) || wk_tokenizer_from_gguf(g, &tok, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double best = 1e30;
    int64_t n_tokens = 0;
    struct wk_tokens ids = {0};
    for (int p = 0; p < passes; p++) {
        int64_t t0 = wk_time_ns();
        n_tokens = 0;
        for (size_t i = 0; i < n_docs; i++) {
            ids.n = 0;
            wk_tokenizer_encode(tok, docs[i], lens[i], false, &ids);
            n_tokens += ids.n;
        }
        double s = (double)(wk_time_ns() - t0) / 1e9;
        if (s < best) best = s;
    }
    printf("{\"model\": \"%s\", \"bytes\": %zu, \"tokens\": %lld, \"seconds\": %.4f, \"mb_per_s\": %.3f}\n",
           argv[2], total, (long long)n_tokens, best, (double)total / 1e6 / best);
    wk_tokens_deinit(&ids);
    wk_tokenizer_destroy(tok);
    wk_gguf_close(g);
    for (size_t i = 0; i < n_docs; i++) free(docs[i]);
    free(docs), free(lens), free(line);
    return 0;
}
