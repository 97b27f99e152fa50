/*
 * encode.c - the encoding driver every tokenizer model shares: special
 * pieces are split out of each span first (user-defined ones always,
 * control ones only in scaffolding), and each run of text between them,
 * joined across span boundaries, is normalized (NFC and the like, when the
 * tokenizer has such a normalizer) and goes to the model's algorithm
 * (SentencePiece BPE or byte-level BPE).
 */
#include "tokenizer_internal.h"

#include <string.h>

/* One run between added tokens: normalized (as `tokenizers` normalizes
 * each piece left between added tokens that are not "normalized"), then
 * the model's algorithm. */
static enum wk_status encode_run(const struct wk_tokenizer *tok, const char *text, size_t len,
                                 struct wk_tokens *out)
{
    if (len == 0) return WK_OK;
    char *norm = NULL;
    enum wk_status st = wk__normalize(tok->unicode_form, text, len, &norm, &len);
    if (st) return st;
    if (norm) text = norm;
    st = tok->model == WK_TOKENIZER_BPE   ? wk__bpe_encode(tok, text, len, out)
         : tok->model == WK_TOKENIZER_WPM ? wk__wpm_encode(tok, text, len, out)
                                          : wk__spm_encode(tok, text, len, out);
    wk_free(norm);
    return st;
}

/* Raw text waiting to be tokenized: the run since the last special piece. */
struct pending {
    char *buf;
    size_t n, cap;
};

static enum wk_status pending_add(struct pending *p, const char *s, size_t n)
{
    if (n == 0) return WK_OK;
    if (p->n + n > p->cap) {
        size_t cap = WK_MAX(p->cap * 2, p->n + n + 256);
        char *b = wk_realloc(p->buf, cap);
        if (!b) return WK_E_NOMEM;
        p->buf = b;
        p->cap = cap;
    }
    memcpy(p->buf + p->n, s, n);
    p->n += n;
    return WK_OK;
}

enum wk_status wk_tokenizer_encode_spans(const struct wk_tokenizer *tok,
                                         const struct wk_text_span *spans, int32_t n_spans,
                                         struct wk_tokens *out)
{
    struct pending p = {0};
    enum wk_status st = WK_OK;
    for (int32_t k = 0; k < n_spans && !st; k++) {
        const char *text = spans[k].text;
        size_t len = spans[k].len, start = 0;
        for (size_t i = 0; i < len && !st;) {
            size_t mlen = 0;
            int32_t id = wk__special_match(tok, text + i, len - i, spans[k].parse_special, &mlen);
            if (id < 0) {
                i++;
                continue;
            }
            if ((st = pending_add(&p, text + start, i - start))) break;
            if ((st = encode_run(tok, p.buf, p.n, out))) break;
            p.n = 0;
            st = wk_tokens_push(out, id);
            i += mlen;
            start = i;
        }
        if (!st) st = pending_add(&p, text + start, len - start);
    }
    if (!st) st = encode_run(tok, p.buf, p.n, out);
    wk_free(p.buf);
    return st;
}

enum wk_status wk_tokenizer_encode(const struct wk_tokenizer *tok, const char *text, size_t len,
                                   bool parse_special, struct wk_tokens *out)
{
    struct wk_text_span span = {.text = text, .len = len, .parse_special = parse_special};
    return wk_tokenizer_encode_spans(tok, &span, 1, out);
}
