/*
 * fuzz-schema.c - libFuzzer target for the grammar engine
 * (src/runtime/wk_grammar.h). The input is read as JSON; when it parses it
 * is compiled as a JSON Schema and, when that works, a matcher on a small
 * synthetic vocabulary takes a bounded walk of allowed tokens chosen by
 * the input's own bytes, checking on the way that each token in the mask
 * is accepted and that the end token is in the mask exactly when the text
 * is complete. Then the same bytes are compiled as GBNF text and walked
 * the same way. Any crash, sanitizer report, leak, timeout or huge
 * allocation is a finding; errors returned by compile are not.
 *
 * Build and run (clang): make build/fuzz/fuzz-schema && build/fuzz/fuzz-schema \
 *     -max_total_time=300 -rss_limit_mb=2048 -timeout=10 build/fuzz/corpus-fuzz-schema
 */
#include "../../src/runtime/wk_grammar.h"

#include <jansson.h>
#include <stdint.h>
#include <string.h>

static const char *const TOKENS[] = {
    "{", "}", "[", "]", "\"", ":", ",", " ", "a", "b", "0", "1", "-", ".", "e", "\\", "n", "u",
    "true", "false", "null", "{\"", "\":", "\",", "\"}", "ab", "12", "-0", "\\n", "\\u00", "é", "日",
    "\xff", "\x80", "x", "T", "Z", "@", "(", ")", "*", "+", "?", "|", "#", "=", "\n", "",
};
#define N_TOK ((int32_t)(sizeof TOKENS / sizeof TOKENS[0]))

static void walk(const struct wk_grammar *g, const struct wk_grammar_vocab *v, const uint8_t *data,
                 size_t size)
{
    struct wk_grammar_matcher *m = NULL;
    if (wk_grammar_matcher_create(g, v, &m, NULL) != WK_OK) return;
    uint32_t bits[(N_TOK + 31) / 32];
    int32_t ids[N_TOK];
    for (size_t step = 0; step < 64; step++) {
        if (wk_grammar_matcher_mask(m, bits) != WK_OK) break;
        int32_t n = 0;
        for (int32_t i = 0; i < N_TOK - 1; i++)
            if (bits[i >> 5] >> (i & 31) & 1) ids[n++] = i;
        bool eog = bits[(N_TOK - 1) >> 5] >> ((N_TOK - 1) & 31) & 1;
        if (eog != wk_grammar_matcher_is_complete(m)) __builtin_trap();
        if (n == 0) break;
        uint8_t r = size ? data[step % size] : 0;
        int32_t id = ids[(r + step * 7) % (size_t)n];
        if (!wk_grammar_matcher_accepts_bytes(m, TOKENS[id], strlen(TOKENS[id]))) __builtin_trap();
        if (wk_grammar_matcher_accept(m, id) != WK_OK) break; /* WK_E_RANGE: fail closed */
        if (r % 11 == 0) wk_grammar_matcher_rollback(m, 1 + r % 3);
    }
    wk_grammar_matcher_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct wk_grammar_vocab *v;
    if (!v) {
        size_t lens[N_TOK];
        for (int32_t i = 0; i < N_TOK; i++) lens[i] = strlen(TOKENS[i]);
        int32_t eog = N_TOK - 1;
        if (wk_grammar_vocab_create_from_bytes(TOKENS, lens, N_TOK, &eog, 1, &v, NULL) != WK_OK) return 0;
    }
    if (size > 1 << 14) return 0;
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (j) {
        struct wk_grammar *g = NULL;
        if (wk_grammar_from_json_schema(j, &g, NULL) == WK_OK) walk(g, v, data, size);
        wk_grammar_free(g);
        json_decref(j);
    }
    struct wk_grammar *g = NULL;
    if (wk_grammar_from_gbnf((const char *)data, size, NULL, &g, NULL) == WK_OK) walk(g, v, data, size);
    wk_grammar_free(g);
    return 0;
}
