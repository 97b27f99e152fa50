/*
 * status.c - status names, error reports, assertions, logging, clock.
 */
#include "wk_base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *wk_status_str(enum wk_status st)
{
    switch (st) {
    case WK_OK: return "ok";
    case WK_E_NOMEM: return "out of memory";
    case WK_E_IO: return "I/O error";
    case WK_E_FORMAT: return "malformed input";
    case WK_E_UNSUPPORTED: return "unsupported";
    case WK_E_INVALID: return "invalid argument";
    case WK_E_NOT_FOUND: return "not found";
    case WK_E_RANGE: return "out of range";
    case WK_E_CANCELLED: return "cancelled";
    case WK_E_INTERNAL: return "internal error";
    case WK_E_PERMISSION: return "not permitted";
    }
    return "unknown status";
}

void wk_error_clear(struct wk_error *err)
{
    if (!err) return;
    err->status = WK_OK;
    err->msg[0] = '\0';
}

enum wk_status wk_error_set(struct wk_error *err, enum wk_status st, const char *fmt, ...)
{
    if (!err) return st;
    err->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return st;
}

enum wk_status wk_error_prefix(struct wk_error *err, enum wk_status st, const char *fmt, ...)
{
    if (!err) return st;
    char prefix[WK_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    size_t np = strlen(prefix), nm = strlen(err->msg);
    if (np >= sizeof err->msg) np = sizeof err->msg - 1;
    if (np + nm >= sizeof err->msg) nm = sizeof err->msg - 1 - np;
    memmove(err->msg + np, err->msg, nm);
    memcpy(err->msg, prefix, np);
    err->msg[np + nm] = '\0';
    return st;
}

_Noreturn void wk_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "wick: assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}

static enum wk_log_level g_log_level = WK_LOG_WARN; /* set before threads start */

void wk_log_set_level(enum wk_log_level level)
{
    g_log_level = level;
}

void wk_log(enum wk_log_level level, const char *fmt, ...)
{
    if (level < g_log_level) return;
    static const char *names[] = {"debug", "info", "warning", "error"};
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "wick: %s: %s\n", names[level], line);
}

int64_t wk_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

const char *wk_getenv_alias(const char *wick_name, const char *ollama_name)
{
    const char *v = getenv(wick_name);
    if (v && *v) return v;
    v = getenv(ollama_name);
    return v && *v ? v : NULL;
}

char *wk_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *s = wk_malloc((size_t)n + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

void wk_str_printable(const char *s, size_t n, char *out, size_t out_size)
{
    size_t j = 0;
    for (size_t i = 0; i < n && j + 4 < out_size; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[j++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    if (n > j && j + 3 < out_size) out[j++] = '.', out[j++] = '.', out[j++] = '.';
    out[j] = '\0';
}

size_t wk_utf8_seq_len(const unsigned char *s, size_t n)
{
    if (n == 0) return 0;
    unsigned char c = s[0];
    size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    if (len > 1 && (s[1] < lo || s[1] > hi)) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

char *wk_utf8_sanitize(const char *s, size_t n, size_t *out_len)
{
    const unsigned char *u = (const unsigned char *)s;
    char *out = wk_malloc(n * 3 + 1); /* each bad byte grows to 3 */
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = wk_utf8_seq_len(u + i, n - i);
        if (len == 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3, i += 1;
        } else {
            memcpy(out + o, s + i, len);
            o += len, i += len;
        }
    }
    out[o] = '\0';
    if (out_len) *out_len = o;
    return out;
}

bool wk_buf_add(struct wk_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = wk_realloc(b->p, cap);
        if (!p) return false;
        b->p = p, b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}
