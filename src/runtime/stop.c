/*
 * stop.c - stop strings matched on decoded text across token boundaries,
 * with hold-back (docs/reference/ollama-mlx-runner.md §2.7): text is
 * emitted only once no stop string can still begin in it, and a stop
 * string itself is never emitted.
 *
 * Pending text is what has been decoded but not emitted. After each piece:
 * if a stop string occurs in it, the earliest occurrence (lowest start,
 * among all the strings) ends the generation and only the text before it
 * is emitted; otherwise the longest suffix that is a proper prefix of some
 * stop string is held back and the rest emitted. Pieces are whole UTF-8
 * characters and stop strings valid UTF-8, so the held-back suffix starts
 * on a character boundary.
 */
#include "wk_runtime.h"

#include <string.h>

void wk_stop_matcher_init(struct wk_stop_matcher *m, const char *const *stops, int32_t n_stops)
{
    memset(m, 0, sizeof *m);
    m->stops = stops;
    m->n_stops = n_stops;
    m->matched = -1;
}

void wk_stop_matcher_deinit(struct wk_stop_matcher *m)
{
    wk_free(m->buf);
    memset(m, 0, sizeof *m);
}

/* Length of the longest suffix of buf[0..len) that is a proper prefix of s. */
static size_t prefix_overlap(const char *buf, size_t len, const char *s)
{
    size_t ls = strlen(s);
    for (size_t k = ls - 1 < len ? ls - 1 : len; k > 0; k--)
        if (memcmp(buf + len - k, s, k) == 0) return k;
    return 0;
}

enum wk_status wk_stop_matcher_push(struct wk_stop_matcher *m, const char *text, size_t len,
                                    size_t *emit, bool *stopped)
{
    *emit = 0;
    *stopped = false;
    if (m->len + len + 1 > m->cap) {
        size_t cap = (m->len + len + 1) * 2;
        char *b = wk_realloc(m->buf, cap);
        if (!b) return WK_E_NOMEM;
        m->buf = b, m->cap = cap;
    }
    memcpy(m->buf + m->len, text, len);
    m->len += len;
    m->buf[m->len] = '\0';
    /* a complete stop string: cut at the earliest start */
    size_t cut = SIZE_MAX;
    for (int32_t i = 0; i < m->n_stops; i++) {
        if (!m->stops[i][0]) continue;
        const char *at = strstr(m->buf, m->stops[i]);
        if (at && (size_t)(at - m->buf) < cut) cut = (size_t)(at - m->buf), m->matched = i;
    }
    if (cut != SIZE_MAX) {
        *emit = cut;
        *stopped = true;
        return WK_OK;
    }
    size_t hold = 0;
    for (int32_t i = 0; i < m->n_stops; i++) {
        if (!m->stops[i][0]) continue;
        size_t k = prefix_overlap(m->buf, m->len, m->stops[i]);
        if (k > hold) hold = k;
    }
    *emit = m->len - hold;
    return WK_OK;
}

void wk_stop_matcher_consume(struct wk_stop_matcher *m, size_t n)
{
    memmove(m->buf, m->buf + n, m->len - n + 1);
    m->len -= n;
}
