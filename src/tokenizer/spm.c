/*
 * spm.c - SentencePiece BPE encoding (Kudo & Richardson 2018, the "bpe"
 * model of sentencepiece) over pieces and scores from GGUF, the algorithm
 * llama.cpp runs for tokenizer model "llama".
 *
 * Spaces become '▁' (and one is prepended when add_space_prefix), the text
 * is split into UTF-8 characters, and adjacent symbols are merged
 * repeatedly: always the pair whose concatenation is a piece with the
 * highest score, the leftmost pair on ties. A final symbol that is not a
 * piece (a character outside the vocabulary) falls back to its bytes'
 * <0xNN> pieces. Control, unknown and byte pieces never take part in
 * merges, as in sentencepiece, so typed text such as "<eos>" stays text.
 */
#include "tokenizer_internal.h"

#include <string.h>

struct sym {
    int32_t prev, next;
    uint32_t off, n; /* bytes of the escaped text */
};

struct bigram {
    int32_t left, right;
    float score;
    uint32_t n; /* length when queued; stale if the symbols changed */
};

/* Max-heap on (score, then smaller left). */
static bool bigram_before(const struct bigram *a, const struct bigram *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

struct heap {
    struct bigram *v;
    int64_t n, cap;
};

static enum wk_status heap_push(struct heap *h, struct bigram b)
{
    if (h->n == h->cap) {
        int64_t cap = h->cap ? h->cap * 2 : 64;
        struct bigram *v = wk_realloc(h->v, (size_t)cap * sizeof *v);
        if (!v) return WK_E_NOMEM;
        h->v = v;
        h->cap = cap;
    }
    int64_t i = h->n++;
    h->v[i] = b;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!bigram_before(&h->v[i], &h->v[p])) break;
        struct bigram t = h->v[i];
        h->v[i] = h->v[p];
        h->v[p] = t;
        i = p;
    }
    return WK_OK;
}

static struct bigram heap_pop(struct heap *h)
{
    struct bigram top = h->v[0];
    h->v[0] = h->v[--h->n];
    int64_t i = 0;
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && bigram_before(&h->v[l], &h->v[m])) m = l;
        if (r < h->n && bigram_before(&h->v[r], &h->v[m])) m = r;
        if (m == i) break;
        struct bigram t = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = t;
        i = m;
    }
    return top;
}

static bool mergeable(const struct wk_tokenizer *tok, int32_t id)
{
    uint8_t t = tok->types[id];
    return t == WK_TOKEN_NORMAL || t == WK_TOKEN_USER_DEFINED || t == WK_TOKEN_UNUSED;
}

static int32_t lookup(const struct wk_tokenizer *tok, const char *s, size_t n)
{
    int32_t id = wk_tokenizer_find(tok, s, n);
    return id >= 0 && mergeable(tok, id) ? id : -1;
}

static enum wk_status try_bigram(const struct wk_tokenizer *tok, const char *text,
                                 const struct sym *syms, int32_t left, int32_t right,
                                 struct heap *h)
{
    if (left < 0 || right < 0) return WK_OK;
    uint32_t n = syms[left].n + syms[right].n;
    int32_t id = lookup(tok, text + syms[left].off, n);
    if (id < 0) return WK_OK;
    struct bigram b = {.left = left, .right = right, .score = tok->scores[id], .n = n};
    return heap_push(h, b);
}

/* Length of the UTF-8 character starting with byte c (1 for invalid). */
static uint32_t utf8_len(uint8_t c)
{
    if (c < 0x80) return 1;
    if ((c & 0xe0) == 0xc0) return 2;
    if ((c & 0xf0) == 0xe0) return 3;
    if ((c & 0xf8) == 0xf0) return 4;
    return 1;
}

enum wk_status wk__spm_encode(const struct wk_tokenizer *tok, const char *raw, size_t raw_len,
                              struct wk_tokens *out)
{
    if (raw_len == 0) return WK_OK;
    /* escape: ' ' -> U+2581; at most 3 bytes per input byte plus a prefix */
    size_t cap = raw_len * 3 + 3;
    char *text = wk_malloc(cap);
    struct sym *syms = wk_malloc((raw_len + 1) * sizeof *syms);
    struct heap h = {0};
    enum wk_status st = WK_OK;
    if (!text || !syms) {
        st = WK_E_NOMEM;
        goto done;
    }
    size_t n = 0;
    if (tok->add_space_prefix) memcpy(text, "\xe2\x96\x81", 3), n = 3;
    for (size_t i = 0; i < raw_len; i++) {
        if (raw[i] == ' ') {
            memcpy(text + n, "\xe2\x96\x81", 3);
            n += 3;
        } else {
            text[n++] = raw[i];
        }
    }
    int32_t n_sym = 0;
    for (size_t off = 0; off < n;) {
        uint32_t len = WK_MIN(utf8_len((uint8_t)text[off]), (uint32_t)(n - off));
        syms[n_sym] = (struct sym){.prev = n_sym - 1, .next = -1, .off = (uint32_t)off, .n = len};
        if (n_sym > 0) syms[n_sym - 1].next = n_sym;
        n_sym++;
        off += len;
    }
    for (int32_t i = 1; i < n_sym; i++)
        if ((st = try_bigram(tok, text, syms, i - 1, i, &h))) goto done;
    while (h.n > 0) {
        struct bigram b = heap_pop(&h);
        struct sym *l = &syms[b.left], *r = &syms[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.n || l->next != b.right) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) syms[r->next].prev = b.left;
        if ((st = try_bigram(tok, text, syms, l->prev, b.left, &h))) goto done;
        if ((st = try_bigram(tok, text, syms, b.left, l->next, &h))) goto done;
    }
    for (int32_t i = 0; i >= 0 && n_sym > 0; i = syms[i].next) {
        int32_t id = lookup(tok, text + syms[i].off, syms[i].n);
        if (id >= 0) {
            if ((st = wk_tokens_push(out, id))) goto done;
            continue;
        }
        for (uint32_t j = 0; j < syms[i].n; j++) {
            int32_t bid = tok->byte_ids[(uint8_t)text[syms[i].off + j]];
            if (bid < 0) bid = tok->unk;
            if (bid >= 0 && (st = wk_tokens_push(out, bid))) goto done;
        }
    }
done:
    wk_free(text);
    wk_free(syms);
    wk_free(h.v);
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
            if ((st = wk__spm_encode(tok, p.buf, p.n, out))) break;
            p.n = 0;
            st = wk_tokens_push(out, id);
            i += mlen;
            start = i;
        }
        if (!st) st = pending_add(&p, text + start, len - start);
    }
    if (!st) st = wk__spm_encode(tok, p.buf, p.n, out);
    wk_free(p.buf);
    return st;
}

enum wk_status wk_tokenizer_encode(const struct wk_tokenizer *tok, const char *text, size_t len,
                                   bool parse_special, struct wk_tokens *out)
{
    struct wk_text_span span = {.text = text, .len = len, .parse_special = parse_special};
    return wk_tokenizer_encode_spans(tok, &span, 1, out);
}
