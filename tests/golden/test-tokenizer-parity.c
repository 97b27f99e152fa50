/*
 * test-tokenizer-parity.c - wick's tokenizers against Hugging Face
 * `tokenizers` on the 2.4 MB parity corpus (prose in 20 languages, code,
 * JSON, markdown, whitespace stress, emoji, random Unicode; see
 * scripts/reference/make-tokenizer-corpus.py), every document whole and
 * every line on its own: ids must be identical, 100%.
 *
 * Each model's tokenizer is checked twice: loaded from the GGUF and loaded
 * from the tokenizer.json that scripts/reference/gguf_to_tokenizer_json.py
 * exports from it. The reference ids were made with `tokenizers` on that
 * export, itself checked against transformers' GGUF import
 * (scripts/reference/make-tokenizer-reference.py).
 *
 * Usage: test-tokenizer-parity CORPUS.jsonl IDS.jsonl MODEL.gguf HF_DIR
 * (uncompressed; `make golden` prepares them under build/golden).
 * MODEL.gguf "-": a model with no GGUF (all-MiniLM-L6-v2's WordPiece, its
 * folder's own tokenizer.json; scripts/reference/make-wordpiece-reference.py).
 */
#include "../unit/check.h"

#include "../../src/tokenizer/wk_tokenizer.h"

#include <jansson.h>

static char *read_line(FILE *f, char **buf, size_t *cap)
{
    ssize_t n = getline(buf, cap, f);
    return n < 0 ? NULL : *buf;
}

static bool same(const struct wk_tokens *t, json_t *ids)
{
    if ((size_t)t->n != json_array_size(ids)) return false;
    for (int64_t i = 0; i < t->n; i++)
        if (t->ids[i] != json_integer_value(json_array_get(ids, (size_t)i))) return false;
    return true;
}

static void report(const char *what, const char *kind, const char *text, size_t len,
                   const struct wk_tokens *t, json_t *ids)
{
    char shown[121];
    wk_str_printable(text, WK_MIN(len, 120), shown, sizeof shown);
    fprintf(stderr, "  %s (%s): \"%s\"\n    wick:", what, kind, shown);
    for (int64_t i = 0; i < t->n && i < 24; i++) fprintf(stderr, " %d", t->ids[i]);
    fprintf(stderr, "\n    ref: ");
    for (size_t i = 0; i < json_array_size(ids) && i < 24; i++)
        fprintf(stderr, " %lld", (long long)json_integer_value(json_array_get(ids, i)));
    fprintf(stderr, "\n");
}

/* Compares one tokenizer with the reference over the whole corpus. */
static void check_tokenizer(const char *label, const struct wk_tokenizer *tok, const char *corpus,
                            const char *ids_path)
{
    FILE *fc = fopen(corpus, "r"), *fi = fopen(ids_path, "r");
    CHECK(fc && fi);
    if (!fc || !fi) return;
    char *lc = NULL, *li = NULL;
    size_t cc = 0, ci = 0;
    int64_t n_docs = 0, n_lines = 0, bad_docs = 0, bad_lines = 0, n_bytes = 0, n_tokens = 0;
    int shown = 0;
    while (read_line(fc, &lc, &cc) && read_line(fi, &li, &ci)) {
        json_t *d = json_loads(lc, JSON_ALLOW_NUL, NULL), *r = json_loads(li, 0, NULL);
        CHECK(d && r);
        if (!d || !r) break;
        json_t *text = json_object_get(d, "text");
        const char *kind = json_string_value(json_object_get(d, "kind"));
        const char *s = json_string_value(text);
        size_t len = json_string_length(text);
        struct wk_tokens t = {0};
        CHECK_EQ_INT(wk_tokenizer_encode(tok, s, len, false, &t), WK_OK);
        n_docs++, n_bytes += (int64_t)len, n_tokens += t.n;
        if (!same(&t, json_object_get(r, "doc"))) {
            bad_docs++;
            if (shown++ < 3) report("document", kind, s, len, &t, json_object_get(r, "doc"));
        }
        json_t *lines = json_object_get(r, "lines");
        size_t k = 0;
        for (size_t start = 0; start <= len; k++) {
            const char *nl = memchr(s + start, '\n', len - start);
            size_t end = nl ? (size_t)(nl - s) : len;
            t.n = 0;
            CHECK_EQ_INT(wk_tokenizer_encode(tok, s + start, end - start, false, &t), WK_OK);
            n_lines++;
            if (!same(&t, json_array_get(lines, k))) {
                bad_lines++;
                if (shown++ < 6) report("line", kind, s + start, end - start, &t, json_array_get(lines, k));
            }
            start = end + 1;
        }
        CHECK_EQ_INT(k, json_array_size(lines));
        wk_tokens_deinit(&t);
        json_decref(d);
        json_decref(r);
    }
    printf("  %-28s %lld documents (%lld bytes, %lld tokens), %lld lines: %lld documents and "
           "%lld lines differ\n",
           label, (long long)n_docs, (long long)n_bytes, (long long)n_tokens, (long long)n_lines,
           (long long)bad_docs, (long long)bad_lines);
    CHECK(n_bytes >= 2000000);
    CHECK_EQ_INT(bad_docs, 0);
    CHECK_EQ_INT(bad_lines, 0);
    free(lc), free(li);
    fclose(fc), fclose(fi);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s CORPUS.jsonl IDS.jsonl MODEL.gguf HF_DIR\n", argv[0]);
        return 2;
    }
    struct wk_error err;
    struct wk_gguf *g;
    struct wk_tokenizer *from_gguf = NULL, *from_json;
    bool no_gguf = strcmp(argv[3], "-") == 0;
    if (!no_gguf && (wk_gguf_open(argv[3], &g, &err) || wk_tokenizer_from_gguf(g, &from_gguf, &err))) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    if (!no_gguf) wk_gguf_close(g);
    if (wk_tokenizer_from_hf(argv[4], &from_json, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("%s\n", argv[2]);
    if (from_gguf) check_tokenizer("from the GGUF:", from_gguf, argv[1], argv[2]);
    check_tokenizer("from tokenizer.json:", from_json, argv[1], argv[2]);
    if (from_gguf) CHECK_EQ_INT(wk_tokenizer_n_vocab(from_gguf), wk_tokenizer_n_vocab(from_json));
    wk_tokenizer_destroy(from_gguf);
    wk_tokenizer_destroy(from_json);
    printf("%d checks, %d failed\n", g_check_count, g_check_failures);
    return g_check_failures ? 1 : 0;
}
