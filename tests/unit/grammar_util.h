/*
 * grammar_util.h - helpers the grammar unit tests share (test-grammar.c,
 * test-grammar-bounds.c): a one-token vocabulary for byte-level matching,
 * and whether a whole text is a complete text of a matcher's grammar.
 */
#ifndef WK_TEST_GRAMMAR_UTIL_H
#define WK_TEST_GRAMMAR_UTIL_H

#include "../../src/runtime/wk_grammar.h"

#include <stdbool.h>
#include <string.h>

/* A one-token vocabulary: enough for byte-level matching. */
static inline struct wk_grammar_vocab *tiny_vocab(void)
{
    const char *t = "x";
    size_t n = 1;
    struct wk_grammar_vocab *v = NULL;
    wk_grammar_vocab_create_from_bytes(&t, &n, 1, NULL, 0, &v, NULL);
    return v;
}

/* Whether the whole of s is a complete text of the matcher's grammar (the
 * matcher reset before and after). */
static inline bool matches(struct wk_grammar_matcher *m, const char *s)
{
    wk_grammar_matcher_reset(m);
    bool ok = wk_grammar_matcher_accept_bytes(m, s, strlen(s)) && wk_grammar_matcher_is_complete(m);
    wk_grammar_matcher_reset(m);
    return ok;
}

#endif
