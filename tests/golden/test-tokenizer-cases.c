/*
 * test-tokenizer-cases.c - named tokenizer cases (tests/golden/
 * tokenizer-cases.json, reference ids from Hugging Face tokenizers, made by
 * scripts/reference/make-tokenizer-cases.py), each a check:
 *   digits grouped by three from the left under a Llama-3-style split
 *   ("3333+777", runs of 1 to 17 zeros); six tabs then "test" (Gemma);
 *   "This is 🦙.cpp" (byte fallback in SentencePiece, bytes in byte-level
 *   BPE); "<|im_start|>user" and "<start_of_turn>user" as user content stay
 *   text;
 * and, from first principles, for both real vocabularies: French and
 * German sentences with é, ü, ß survive encode then decode; the ids of
 * "I am testing" decoded one at a time through the streaming detokenizer
 * keep the spaces; Cyrillic and Chinese sentences streamed token by token
 * never show U+FFFD and only ever release whole characters;
 * Unicode normalization: the tiny Qwen 3 tokenizer with normalizer NFC
 * (tests/golden/qwen3-nfc) and its variants (the same tokenizer.json with
 * the normalizer of "normalizer_variants": NFD, NFKC, NFKD, a Sequence) on
 * named cases NFC changes (decomposed accents, Hangul jamo, combining
 * marks beside added tokens, with "special": true parsed as scaffolding)
 * and on the "bulk" strings (the tricky strings, also in NFD and NFKD),
 * counted per tokenizer.
 *
 * Usage: test-tokenizer-cases CASES.json MODELS_DIR
 */
#include "../unit/check.h"

#include "../../src/tokenizer/wk_tokenizer.h"

#include <jansson.h>

static struct wk_tokenizer *g_gemma, *g_smol, *g_llama3;

/* The NFC tokenizer and its variants, by name. */
static struct {
    char name[32];
    struct wk_tokenizer *tok;
} g_norm[8];
static int g_n_norm;

static struct wk_tokenizer *by_name(const char *name)
{
    if (strcmp(name, "gemma3") == 0) return g_gemma;
    if (strcmp(name, "smollm2") == 0) return g_smol;
    if (strcmp(name, "llama3-digits") == 0) return g_llama3;
    for (int i = 0; i < g_n_norm; i++)
        if (strcmp(name, g_norm[i].name) == 0) return g_norm[i].tok;
    return NULL;
}

/* Loads dir/tokenizer.json as "qwen3-nfc" and, for each entry of variants,
 * the same JSON with that normalizer in place of NFC. */
static void load_normalizer_tokenizers(const char *dir, json_t *variants)
{
    char path[4096 + 16];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    json_error_t jerr;
    json_t *tj = json_load_file(path, JSON_ALLOW_NUL, &jerr);
    if (!tj) {
        fprintf(stderr, "%s: %s\n", path, jerr.text);
        exit(1);
    }
    struct wk_error err;
    snprintf(g_norm[0].name, sizeof g_norm[0].name, "qwen3-nfc");
    if (wk_tokenizer_from_hf(dir, &g_norm[0].tok, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    g_n_norm = 1;
    const char *name;
    json_t *norm;
    json_object_foreach(variants, name, norm)
    {
        if (g_n_norm == (int)WK_ARRAY_LEN(g_norm)) break;
        json_object_set(tj, "normalizer", norm);
        char *text = json_dumps(tj, 0);
        snprintf(g_norm[g_n_norm].name, sizeof g_norm[0].name, "%s", name);
        enum wk_status st =
            wk_tokenizer_from_hf_json(text, strlen(text), name, &g_norm[g_n_norm].tok, &err);
        free(text);
        if (st) {
            fprintf(stderr, "%s\n", err.msg);
            exit(1);
        }
        g_n_norm++;
    }
    json_decref(tj);
}

static bool same_ids(const struct wk_tokens *t, json_t *ids)
{
    bool same = (size_t)t->n == json_array_size(ids);
    for (int64_t k = 0; same && k < t->n; k++)
        same = t->ids[k] == json_integer_value(json_array_get(ids, (size_t)k));
    return same;
}

static struct wk_tokenizer *from_gguf(const char *dir, const char *file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    struct wk_gguf *g;
    struct wk_tokenizer *tok;
    struct wk_error err;
    if (wk_gguf_open(path, &g, &err) || wk_tokenizer_from_gguf(g, &tok, &err)) {
        fprintf(stderr, "%s (run scripts/fetch-models)\n", err.msg);
        exit(1);
    }
    wk_gguf_close(g);
    return tok;
}

/* Decodes ids one at a time through the streaming detokenizer into out;
 * checks every release is whole UTF-8 without U+FFFD. */
static size_t stream(const struct wk_tokenizer *tok, const struct wk_tokens *ids, char *out,
                     size_t cap, int *bad_chunks)
{
    struct wk_detok d;
    wk_detok_init(&d);
    size_t n = 0, k;
    for (int64_t i = 0; i <= ids->n; i++) {
        const char *s = i < ids->n ? wk_detok_push(&d, tok, ids->ids[i], false, &k)
                                   : wk_detok_flush(&d, &k);
        for (size_t j = 0; j < k;) { /* whole characters only */
            uint8_t c = (uint8_t)s[j];
            size_t len = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
            if (len == 0 || j + len > k) {
                (*bad_chunks)++;
                break;
            }
            if (len == 3 && memcmp(s + j, "\xef\xbf\xbd", 3) == 0) (*bad_chunks)++;
            j += len;
        }
        if (n + k <= cap) memcpy(out + n, s, k);
        n += k;
    }
    wk_detok_deinit(&d);
    return n;
}

static void test_reference_cases(json_t *cases)
{
    size_t i;
    json_t *c;
    int bad = 0;
    json_array_foreach(cases, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        struct wk_tokenizer *tok = by_name(json_string_value(json_object_get(c, "tokenizer")));
        json_t *text = json_object_get(c, "text"), *ids = json_object_get(c, "ids");
        struct wk_tokens t = {0};
        CHECK(tok != NULL);
        if (!tok) continue;
        bool special = json_is_true(json_object_get(c, "special"));
        CHECK_EQ_INT(wk_tokenizer_encode(tok, json_string_value(text), json_string_length(text),
                                         special, &t),
                     WK_OK);
        bool same = same_ids(&t, ids);
        if (!same) {
            bad++;
            fprintf(stderr, "  %s: got", name);
            for (int64_t k = 0; k < t.n; k++) fprintf(stderr, " %d", t.ids[k]);
            fprintf(stderr, "\n");
        }
        printf("  %-45s %s\n", name, same ? "ok" : "DIFFERS");
        CHECK(same);
        wk_tokens_deinit(&t);
    }
    CHECK_EQ_INT(bad, 0);
}

/* The bulk strings: every one must match; a count per tokenizer. */
static void test_bulk(json_t *bulk)
{
    int n[8] = {0}, bad[8] = {0}, shown = 0;
    size_t i;
    json_t *c;
    json_array_foreach(bulk, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "tokenizer"));
        int k = 0;
        while (k < g_n_norm && strcmp(g_norm[k].name, name ? name : "") != 0) k++;
        CHECK(k < g_n_norm);
        if (k == g_n_norm) continue;
        json_t *text = json_object_get(c, "text");
        struct wk_tokens t = {0};
        CHECK_EQ_INT(wk_tokenizer_encode(g_norm[k].tok, json_string_value(text),
                                         json_string_length(text), false, &t),
                     WK_OK);
        n[k]++;
        if (!same_ids(&t, json_object_get(c, "ids"))) {
            bad[k]++;
            if (shown++ < 6) {
                char s[121];
                wk_str_printable(json_string_value(text), WK_MIN(json_string_length(text), 120), s,
                                 sizeof s);
                fprintf(stderr, "  %s: \"%s\" differs\n", name, s);
            }
        }
        wk_tokens_deinit(&t);
    }
    for (int k = 0; k < g_n_norm; k++) {
        printf("  bulk %-40s %d strings, %d differ\n", g_norm[k].name, n[k], bad[k]);
        CHECK(n[k] > 0);
        CHECK_EQ_INT(bad[k], 0);
    }
}

static void test_round_trips_and_streaming(json_t *cases)
{
    struct wk_tokenizer *toks[2] = {g_gemma, g_smol};
    static const char *sentences[] = {"french", "german", "cyrillic", "chinese", "testing"};
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        bool is_sentence = false;
        for (size_t k = 0; k < WK_ARRAY_LEN(sentences); k++)
            if (strncmp(name, sentences[k], strlen(sentences[k])) == 0) is_sentence = true;
        if (!is_sentence) continue;
        const char *text = json_string_value(json_object_get(c, "text"));
        for (int m = 0; m < 2; m++) {
            struct wk_tokens t = {0};
            wk_tokenizer_encode(toks[m], text, strlen(text), false, &t);
            char out[1024];
            int bad_chunks = 0;
            size_t n = stream(toks[m], &t, out, sizeof out, &bad_chunks);
            bool same = n == strlen(text) && memcmp(out, text, n) == 0;
            if (!same || bad_chunks)
                fprintf(stderr, "  %s (%s): round trip %s, %d bad releases\n", name,
                        m ? "smollm2" : "gemma3", same ? "ok" : "differs", bad_chunks);
            CHECK(same);
            CHECK_EQ_INT(bad_chunks, 0);
            wk_tokens_deinit(&t);
        }
    }
}

/* Control-token text typed by a user never yields the control token. */
static void test_control_text_stays_text(void)
{
    struct wk_tokens t = {0};
    wk_tokenizer_encode(g_smol, "<|im_start|>user", 16, false, &t);
    for (int64_t i = 0; i < t.n; i++) CHECK(wk_tokenizer_token_type(g_smol, t.ids[i]) != WK_TOKEN_CONTROL);
    t.n = 0;
    wk_tokenizer_encode(g_smol, "<|im_start|>user", 16, true, &t);
    CHECK(t.n >= 1 && wk_tokenizer_token_type(g_smol, t.ids[0]) == WK_TOKEN_CONTROL);
    wk_tokens_deinit(&t);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s CASES.json MODELS_DIR\n", argv[0]);
        return 2;
    }
    json_error_t jerr;
    json_t *root = json_load_file(argv[1], JSON_ALLOW_NUL, &jerr);
    if (!root) {
        fprintf(stderr, "%s: %s\n", argv[1], jerr.text);
        return 1;
    }
    g_gemma = from_gguf(argv[2], "gemma-3-270m-q4_k_m.gguf");
    g_smol = from_gguf(argv[2], "SmolLM2-135M-Instruct.Q4_1.gguf");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", argv[1]);
    char *slash = strrchr(dir, '/');
    snprintf(slash ? slash + 1 : dir, sizeof dir - (size_t)(slash ? slash + 1 - dir : 0), "llama3-digits");
    struct wk_error err;
    if (wk_tokenizer_from_hf(dir, &g_llama3, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    snprintf(slash ? slash + 1 : dir, sizeof dir - (size_t)(slash ? slash + 1 - dir : 0),
             "qwen3-nfc");
    load_normalizer_tokenizers(dir, json_object_get(root, "normalizer_variants"));
    json_t *cases = json_object_get(root, "cases");
    test_reference_cases(cases);
    test_bulk(json_object_get(root, "bulk"));
    test_round_trips_and_streaming(cases);
    test_control_text_stays_text();
    printf("%d checks, %d failed\n", g_check_count, g_check_failures);
    wk_tokenizer_destroy(g_gemma);
    wk_tokenizer_destroy(g_smol);
    wk_tokenizer_destroy(g_llama3);
    for (int k = 0; k < g_n_norm; k++) wk_tokenizer_destroy(g_norm[k].tok);
    json_decref(root);
    return g_check_failures ? 1 : 0;
}
