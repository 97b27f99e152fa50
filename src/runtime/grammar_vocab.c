/*
 * grammar_vocab.c - a tokenizer's tokens as byte strings in a trie
 * (struct gtrie, preorder arrays: see grammar_int.h), built once per
 * tokenizer for the grammar matcher.
 *
 * The trie is built from the strings sorted bytewise (shorter first on a
 * common prefix): in that order each new string adds the nodes past its
 * longest common prefix with the previous one, which is preorder.
 */
#include "grammar_int.h"

#include <stdlib.h>

struct sitem {
    const uint8_t *s;
    uint32_t len;
    int32_t id;
};

static int cmp_item(const void *a, const void *b)
{
    const struct sitem *x = a, *y = b;
    uint32_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

void wk__gtrie_deinit(struct gtrie *t)
{
    wk_free(t->byte);
    wk_free(t->size);
    wk_free(t->tok_off);
    wk_free(t->tok);
    memset(t, 0, sizeof *t);
}

enum wk_status wk__gtrie_build(struct gtrie *t, const uint8_t *const *strs, const uint32_t *lens,
                               const int32_t *ids, int32_t n)
{
    memset(t, 0, sizeof *t);
    struct sitem *it = wk_malloc(((size_t)n + 1) * sizeof *it);
    int32_t m = 0;
    int64_t total = 1;
    if (!it) return WK_E_NOMEM;
    for (int32_t i = 0; i < n; i++) {
        if (lens[i] == 0) continue;
        it[m++] = (struct sitem){strs[i], lens[i], ids[i]};
        total += lens[i];
    }
    qsort(it, (size_t)m, sizeof *it, cmp_item);
    /* upper bound on nodes: total bytes + 1 */
    if (total > INT32_MAX / 2) {
        wk_free(it);
        return WK_E_RANGE;
    }
    t->byte = wk_malloc((size_t)total);
    t->size = wk_malloc((size_t)total * sizeof(int32_t));
    t->tok_off = wk_malloc(((size_t)total + 1) * sizeof(int32_t));
    t->tok = wk_malloc(((size_t)m + 1) * sizeof(int32_t));
    uint32_t maxlen = 0;
    for (int32_t i = 0; i < m; i++)
        if (it[i].len > maxlen) maxlen = it[i].len;
    int32_t *path = wk_malloc(((size_t)maxlen + 2) * sizeof(int32_t)); /* node at each depth */
    if (!t->byte || !t->size || !t->tok_off || !t->tok || !path) {
        wk_free(it);
        wk_free(path);
        wk__gtrie_deinit(t);
        return WK_E_NOMEM;
    }
    int32_t nn = 1, depth = 0;
    t->byte[0] = 0;
    t->tok_off[0] = 0;
    path[0] = 0;
    const uint8_t *prev = NULL;
    uint32_t prev_len = 0;
    for (int32_t i = 0; i < m; i++) {
        uint32_t lcp = 0;
        while (prev && lcp < prev_len && lcp < it[i].len && prev[lcp] == it[i].s[lcp]) lcp++;
        while ((uint32_t)depth > lcp) { /* close nodes deeper than the common prefix */
            int32_t x = path[depth--];
            t->size[x] = nn - x;
        }
        for (uint32_t k = lcp; k < it[i].len; k++) {
            t->byte[nn] = it[i].s[k];
            t->tok_off[nn] = i; /* tokens before this node */
            path[++depth] = nn++;
        }
        t->tok[i] = it[i].id;
        prev = it[i].s;
        prev_len = it[i].len;
    }
    while (depth > 0) {
        int32_t x = path[depth--];
        t->size[x] = nn - x;
    }
    t->size[0] = nn;
    t->tok_off[nn] = m;
    t->n_nodes = nn;
    t->max_depth = (int32_t)maxlen;
    /* tok_off[x] was the count of tokens before x was created; tokens of x
     * were added right after (same i), so tok_off is already preorder */
    wk_free(path);
    wk_free(it);
    return WK_OK;
}

void wk_grammar_vocab_free(struct wk_grammar_vocab *v)
{
    if (!v) return;
    if (v->bytes)
        for (int32_t i = 0; i < v->n_tokens; i++) wk_free(v->bytes[i]);
    wk_free(v->bytes);
    wk_free(v->lens);
    wk_free(v->eog);
    wk_free(v->is_eog);
    wk__gtrie_deinit(&v->trie);
    wk_free(v);
}

int32_t wk_grammar_vocab_n_tokens(const struct wk_grammar_vocab *v)
{
    return v ? v->n_tokens : 0;
}

static enum wk_status vocab_alloc(int32_t n, struct wk_grammar_vocab **out)
{
    struct wk_grammar_vocab *v = wk_calloc(1, sizeof *v);
    if (!v) return WK_E_NOMEM;
    v->n_tokens = n;
    v->n_words = (n + 31) / 32;
    v->bytes = wk_calloc((size_t)n, sizeof *v->bytes);
    v->lens = wk_calloc((size_t)n, sizeof *v->lens);
    v->is_eog = wk_calloc((size_t)n, 1);
    if (!v->bytes || !v->lens || !v->is_eog) {
        wk_grammar_vocab_free(v);
        return WK_E_NOMEM;
    }
    *out = v;
    return WK_OK;
}

static enum wk_status vocab_finish(struct wk_grammar_vocab *v)
{
    int32_t n = v->n_tokens, n_eog = 0;
    for (int32_t i = 0; i < n; i++) n_eog += v->is_eog[i];
    v->eog = wk_malloc(((size_t)n_eog + 1) * sizeof *v->eog);
    int32_t *ids = wk_malloc((size_t)n * sizeof *ids);
    if (!v->eog || !ids) {
        wk_free(ids);
        return WK_E_NOMEM;
    }
    for (int32_t i = 0; i < n; i++) {
        ids[i] = i;
        if (v->is_eog[i]) v->eog[v->n_eog++] = i;
    }
    enum wk_status st =
        wk__gtrie_build(&v->trie, (const uint8_t *const *)v->bytes, v->lens, ids, n);
    wk_free(ids);
    return st;
}

enum wk_status wk_grammar_vocab_create_from_bytes(const char *const *tokens, const size_t *lens,
                                                  int32_t n, const int32_t *eog_ids,
                                                  int32_t n_eog, struct wk_grammar_vocab **out,
                                                  struct wk_error *err)
{
    *out = NULL;
    if (n < 1) return wk_error_set(err, WK_E_INVALID, "grammar vocab: %d tokens", n);
    struct wk_grammar_vocab *v;
    if (vocab_alloc(n, &v) != WK_OK) return wk_error_set(err, WK_E_NOMEM, "grammar vocab: out of memory");
    for (int32_t i = 0; i < n_eog; i++) {
        if (eog_ids[i] < 0 || eog_ids[i] >= n) {
            wk_grammar_vocab_free(v);
            return wk_error_set(err, WK_E_INVALID, "grammar vocab: end-of-generation id %d of %d tokens",
                                eog_ids[i], n);
        }
        v->is_eog[eog_ids[i]] = 1;
    }
    for (int32_t i = 0; i < n; i++) {
        if (v->is_eog[i] || lens[i] == 0) continue;
        if (lens[i] > 65536) {
            wk_grammar_vocab_free(v);
            return wk_error_set(err, WK_E_INVALID, "grammar vocab: token %d has %zu bytes", i, lens[i]);
        }
        v->bytes[i] = wk_malloc(lens[i]);
        if (!v->bytes[i]) {
            wk_grammar_vocab_free(v);
            return wk_error_set(err, WK_E_NOMEM, "grammar vocab: out of memory");
        }
        memcpy(v->bytes[i], tokens[i], lens[i]);
        v->lens[i] = (uint32_t)lens[i];
    }
    if (vocab_finish(v) != WK_OK) {
        wk_grammar_vocab_free(v);
        return wk_error_set(err, WK_E_NOMEM, "grammar vocab: out of memory");
    }
    *out = v;
    return WK_OK;
}

enum wk_status wk_grammar_vocab_create(const struct wk_tokenizer *tok,
                                       struct wk_grammar_vocab **out, struct wk_error *err)
{
    *out = NULL;
    int32_t n = wk_tokenizer_n_vocab(tok);
    if (n < 1) return wk_error_set(err, WK_E_INVALID, "grammar vocab: empty vocabulary");
    struct wk_grammar_vocab *v;
    if (vocab_alloc(n, &v) != WK_OK) return wk_error_set(err, WK_E_NOMEM, "grammar vocab: out of memory");
    char small[256];
    for (int32_t i = 0; i < n; i++) {
        if (wk_tokenizer_is_eog(tok, i)) {
            v->is_eog[i] = 1;
            continue;
        }
        enum wk_token_type ty = wk_tokenizer_token_type(tok, i);
        if (ty == WK_TOKEN_CONTROL || ty == WK_TOKEN_UNKNOWN || ty == WK_TOKEN_UNUSED) continue;
        size_t len = wk_tokenizer_token_bytes(tok, i, false, small, sizeof small);
        if (len == 0 || len > 65536) continue;
        v->bytes[i] = wk_malloc(len);
        if (!v->bytes[i]) {
            wk_grammar_vocab_free(v);
            return wk_error_set(err, WK_E_NOMEM, "grammar vocab: out of memory");
        }
        if (len <= sizeof small) memcpy(v->bytes[i], small, len);
        else wk_tokenizer_token_bytes(tok, i, false, (char *)v->bytes[i], len);
        v->lens[i] = (uint32_t)len;
    }
    if (vocab_finish(v) != WK_OK) {
        wk_grammar_vocab_free(v);
        return wk_error_set(err, WK_E_NOMEM, "grammar vocab: out of memory");
    }
    *out = v;
    return WK_OK;
}
