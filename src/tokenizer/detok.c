/*
 * detok.c - streaming detokenization with UTF-8 hold-back.
 *
 * Invariant: pending holds at most 3 bytes, and only when they are a valid
 * prefix of a multi-byte UTF-8 character (a lead byte C2..F4 followed by
 * fewer continuation bytes than it announces). Everything else is released
 * as soon as it arrives, so the concatenated output equals the one-shot
 * decoding of the same tokens.
 */
#include "tokenizer_internal.h"

#include <string.h>

void wk_detok_init(struct wk_detok *d)
{
    memset(d, 0, sizeof *d);
}

void wk_detok_deinit(struct wk_detok *d)
{
    if (!d) return;
    wk_free(d->buf);
    memset(d, 0, sizeof *d);
}

static bool reserve(struct wk_detok *d, size_t n)
{
    if (n <= d->cap) return true;
    size_t cap = n < 256 ? 256 : n * 2;
    char *b = wk_realloc(d->buf, cap);
    if (!b) return false;
    d->buf = b;
    d->cap = cap;
    return true;
}

/* Number of trailing bytes of s[0..n) that form an incomplete but so far
 * valid UTF-8 character (0 when the tail is complete or invalid). */
static size_t incomplete_tail(const char *s, size_t n)
{
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        uint8_t c = (uint8_t)s[n - back];
        if ((c & 0xc0) == 0x80) continue; /* continuation: look further back */
        size_t need = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                    : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        return need > back ? back : 0;
    }
    return 0;
}

const char *wk_detok_push(struct wk_detok *d, const struct wk_tokenizer *tok, int32_t id,
                          bool render_special, size_t *n)
{
    size_t piece = wk_tokenizer_token_bytes(tok, id, render_special, NULL, 0);
    if (!reserve(d, (size_t)d->n_pending + piece + 1)) return NULL;
    memcpy(d->buf, d->pending, (size_t)d->n_pending);
    size_t len = (size_t)d->n_pending;
    len += wk_tokenizer_token_bytes(tok, id, render_special, d->buf + len, piece);
    size_t hold = incomplete_tail(d->buf, len);
    memcpy(d->pending, d->buf + len - hold, hold);
    d->n_pending = (int)hold;
    *n = len - hold;
    return d->buf;
}

const char *wk_detok_flush(struct wk_detok *d, size_t *n)
{
    if (!reserve(d, 4)) {
        *n = 0;
        return "";
    }
    memcpy(d->buf, d->pending, (size_t)d->n_pending);
    *n = (size_t)d->n_pending;
    d->n_pending = 0;
    return d->buf;
}
