/*
 * normalize.c - Unicode normalization of the text between added tokens:
 * the NFC, NFD, NFKC and NFKD normalizers of tokenizer.json (Unicode
 * Standard Annex #15), done by utf8proc, as `tokenizers` does them with the
 * unicode-normalization crate (Qwen 2 and 3 tokenizers are NFC).
 *
 * Where it runs: the encoding driver (encode.c) first splits the added
 * tokens out of the raw text, then normalizes each run between them, then
 * hands it to the model; `tokenizers` does the same for added tokens with
 * "normalized": false (its AddedVocabulary::extract_and_normalize), so a
 * combining mark after "<|im_end|>" stays beside it instead of composing
 * with its ">". Added tokens with "normalized": true would be matched on the
 * normalized text instead; the loader refuses them alongside a Unicode
 * normalizer (hf.c).
 *
 * Bytes: the text may hold invalid UTF-8 (wick accepts any bytes; Python
 * strings, and so `tokenizers`, cannot). Each maximal run of valid UTF-8 is
 * normalized on its own and every byte that does not begin a valid
 * character is kept as it is, so nothing composes across it and the byte
 * still reaches the model (byte-level BPE encodes it as its byte).
 */
#include "tokenizer_internal.h"

#include <string.h>
#include <utf8proc.h>

struct out_buf {
    char *p;
    size_t n, cap;
};

static enum wk_status out_reserve(struct out_buf *o, size_t more)
{
    if (o->n + more <= o->cap) return WK_OK;
    if (more > SIZE_MAX / 2 - o->n) return WK_E_NOMEM;
    size_t cap = WK_MAX(o->cap * 2, o->n + more + 64);
    char *p = wk_realloc(o->p, cap);
    if (!p) return WK_E_NOMEM;
    o->p = p;
    o->cap = cap;
    return WK_OK;
}

/* Normalizes the valid UTF-8 s[0..n) onto o; cps is a code-point scratch
 * buffer of *cps_cap entries, grown as needed. */
static enum wk_status normalize_valid(const char *s, size_t n, utf8proc_option_t opts,
                                      utf8proc_int32_t **cps, size_t *cps_cap, struct out_buf *o)
{
    utf8proc_ssize_t n_cp;
    for (;;) {
        n_cp = utf8proc_decompose((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, *cps,
                                  (utf8proc_ssize_t)*cps_cap, opts);
        if (n_cp < 0) return WK_E_INTERNAL; /* the caller passed only valid UTF-8 */
        /* reencode writes up to 4 bytes per code point and a NUL in place */
        if ((size_t)n_cp + 1 <= *cps_cap) break;
        size_t cap = (size_t)n_cp + 1 + n / 4;
        if (cap > SIZE_MAX / sizeof **cps) return WK_E_NOMEM;
        utf8proc_int32_t *p = wk_realloc(*cps, cap * sizeof *p);
        if (!p) return WK_E_NOMEM;
        *cps = p;
        *cps_cap = cap;
    }
    utf8proc_ssize_t n_bytes = utf8proc_reencode(*cps, n_cp, opts);
    if (n_bytes < 0) return WK_E_INTERNAL;
    enum wk_status st = out_reserve(o, (size_t)n_bytes);
    if (st) return st;
    memcpy(o->p + o->n, *cps, (size_t)n_bytes);
    o->n += (size_t)n_bytes;
    return WK_OK;
}

enum wk_status wk__normalize(enum wk__unicode_form form, const char *text, size_t len, char **out,
                             size_t *out_len)
{
    *out = NULL;
    *out_len = len;
    if (form == WK__FORM_NONE) return WK_OK;
    size_t i = 0;
    while (i < len && (uint8_t)text[i] < 0x80)
        i++;
    if (i == len) return WK_OK; /* ASCII is its own normal form in all four */
    utf8proc_option_t opts = UTF8PROC_STABLE;
    opts |= form == WK__FORM_NFC || form == WK__FORM_NFKC ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE;
    if (form == WK__FORM_NFKC || form == WK__FORM_NFKD) opts |= UTF8PROC_COMPAT;

    struct out_buf o = {0};
    utf8proc_int32_t *cps = NULL;
    size_t cps_cap = 0;
    enum wk_status st = out_reserve(&o, len + 16);
    for (size_t start = 0; !st && start < len;) {
        size_t end = start;
        while (end < len) { /* the longest valid run from start */
            utf8proc_int32_t cp;
            utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)text + end,
                                                  (utf8proc_ssize_t)WK_MIN(len - end, 4), &cp);
            if (k <= 0) break;
            end += (size_t)k;
        }
        if (end > start) st = normalize_valid(text + start, end - start, opts, &cps, &cps_cap, &o);
        if (!st && end < len) { /* a byte that begins no valid character: kept */
            st = out_reserve(&o, 1);
            if (!st) o.p[o.n++] = text[end++];
        }
        start = end;
    }
    wk_free(cps);
    if (st) {
        wk_free(o.p);
        return st;
    }
    *out = o.p;
    *out_len = o.n;
    return WK_OK;
}
