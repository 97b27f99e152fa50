/*
 * spm.c - SentencePiece BPE encoding (Kudo & Richardson 2018, the "bpe"
 * model of sentencepiece) over pieces and scores from GGUF, the algorithm
 * llama.cpp runs for tokenizer model "llama".
 *
 * Spaces become '▁' (and one is prepended when add_space_prefix), the text
 * is split into UTF-8 characters, and adjacent symbols are merged
 * repeatedly: always the pair whose concatenation is the earliest piece
 * of the vocabulary (see spm_pair), the leftmost pair on ties. A final symbol that is not a
 * piece (a character outside the vocabulary) falls back to its bytes'
 * <0xNN> pieces. Control, unknown and byte pieces never take part in
 * merges, as in sentencepiece, so typed text such as "<eos>" stays text.
 */
#include "tokenizer_internal.h"

#include <string.h>

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

/* A pair merges when the joined text is a mergeable piece. Pieces merge
 * in vocabulary order (SentencePiece sorts its pieces by score, so this is
 * score order, and it is the order of the merge list Hugging Face derives;
 * Gemma's GGUF scores hold placeholders for some pieces, its ids do not). */
static bool spm_pair(const void *ctx, const char *text, const struct wk__sym *l,
                     const struct wk__sym *r, float *score, int32_t *id)
{
    const struct wk_tokenizer *tok = ctx;
    *id = lookup(tok, text + l->off, l->n + r->n);
    if (*id < 0) return false;
    *score = -(float)*id; /* exact: ids are below 2^24 */
    return true;
}

enum wk_status wk__spm_encode(const struct wk_tokenizer *tok, const char *raw, size_t raw_len,
                              struct wk_tokens *out)
{
    if (raw_len == 0) return WK_OK;
    /* escape: ' ' -> U+2581; at most 3 bytes per input byte plus a prefix */
    size_t cap = raw_len * 3 + 3;
    char *text = wk_malloc(cap);
    /* at most one symbol per byte of the escaped text */
    struct wk__sym *syms = wk_malloc((cap + 1) * sizeof *syms);
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
        uint32_t len = wk__utf8_char_len(text + off, n - off);
        syms[n_sym] = (struct wk__sym){.prev = n_sym - 1, .next = -1, .off = (uint32_t)off,
                                       .n = len, .id = -1};
        if (n_sym > 0) syms[n_sym - 1].next = n_sym;
        n_sym++;
        off += len;
    }
    if ((st = wk__merge_symbols(text, syms, n_sym, spm_pair, tok))) goto done;
    for (int32_t i = 0; i >= 0 && n_sym > 0; i = syms[i].next) {
        int32_t id = syms[i].id >= 0 ? syms[i].id : lookup(tok, text + syms[i].off, syms[i].n);
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
    return st;
}

