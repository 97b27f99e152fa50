/*
 * merge.c - the merge loop both BPE flavours share: a doubly linked list of
 * symbols over a text buffer and a priority queue of adjacent pairs. The
 * pair with the best score is merged first (the leftmost on ties), then the
 * new symbol's pairs with its neighbours are queued. Stale queue entries
 * (a side already merged away) are recognised by their recorded length.
 * O(n log n) in the number of symbols, so long runs stay cheap.
 *
 * Byte-level BPE scores a pair by its merge rank (lower first, passed as
 * -rank). SentencePiece vocabularies have no merge list; Hugging Face
 * `tokenizers` derives one ordered by the merged piece's position in the
 * vocabulary, then by the longer left part, and wick ranks pairs the same
 * way (score -id, then the longer left symbol), then the leftmost pair.
 */
#include "tokenizer_internal.h"

struct bigram {
    int32_t left, right;
    float score;
    uint32_t n;      /* bytes of the pair when queued */
    uint32_t n_left; /* bytes of the left symbol when queued */
    int32_t id;      /* the merged symbol's token id */
};

struct heap {
    struct bigram *v;
    int64_t n, cap;
};

/* Max-heap on (score, lower merged id, longer left symbol, smaller left). */
static bool before(const struct bigram *a, const struct bigram *b)
{
    if (a->score != b->score) return a->score > b->score;
    if (a->id != b->id) return a->id < b->id;
    if (a->n_left != b->n_left) return a->n_left > b->n_left;
    return a->left < b->left;
}

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
        if (!before(&h->v[i], &h->v[p])) break;
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
    for (int64_t i = 0;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && before(&h->v[l], &h->v[m])) m = l;
        if (r < h->n && before(&h->v[r], &h->v[m])) m = r;
        if (m == i) break;
        struct bigram t = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = t;
        i = m;
    }
    return top;
}

static enum wk_status try_pair(const char *text, const struct wk__sym *syms, int32_t left,
                               int32_t right, wk__pair_fn pair, const void *ctx, struct heap *h)
{
    if (left < 0 || right < 0) return WK_OK;
    float score;
    int32_t id;
    if (!pair(ctx, text, &syms[left], &syms[right], &score, &id)) return WK_OK;
    struct bigram b = {.left = left, .right = right, .score = score,
                       .n = syms[left].n + syms[right].n, .n_left = syms[left].n, .id = id};
    return heap_push(h, b);
}

enum wk_status wk__merge_symbols(const char *text, struct wk__sym *syms, int32_t n_sym,
                                 wk__pair_fn pair, const void *ctx)
{
    struct heap h = {0};
    enum wk_status st = WK_OK;
    for (int32_t i = 1; i < n_sym && !st; i++) st = try_pair(text, syms, i - 1, i, pair, ctx, &h);
    while (!st && h.n > 0) {
        struct bigram b = heap_pop(&h);
        struct wk__sym *l = &syms[b.left], *r = &syms[b.right];
        if (l->n == 0 || r->n == 0 || l->n != b.n_left || l->n + r->n != b.n || l->next != b.right)
            continue;
        l->n += r->n;
        l->id = b.id;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) syms[r->next].prev = b.left;
        st = try_pair(text, syms, l->prev, b.left, pair, ctx, &h);
        if (!st) st = try_pair(text, syms, b.left, l->next, pair, ctx, &h);
    }
    wk_free(h.v);
    return st;
}

uint32_t wk__utf8_len(uint8_t c)
{
    if (c < 0x80) return 1;
    if ((c & 0xe0) == 0xc0) return 2;
    if ((c & 0xf0) == 0xe0) return 3;
    if ((c & 0xf8) == 0xf0) return 4;
    return 1;
}

uint32_t wk__utf8_char_len(const char *s, size_t n)
{
    uint32_t k = wk__utf8_len((uint8_t)s[0]);
    if (k > n) return 1;
    for (uint32_t i = 1; i < k; i++)
        if (((uint8_t)s[i] & 0xc0) != 0x80) return 1;
    return k;
}
