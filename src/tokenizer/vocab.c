/*
 * vocab.c - the vocabulary, whatever file it came from: pieces, scores and
 * types set through a small builder (wk__vocab_begin / _set / _finish), a
 * hash index from piece text to id, a trie of the special pieces for the
 * partition step, the end-of-generation set, and piece-to-bytes decoding.
 * The GGUF and tokenizer.json loaders (gguf_vocab.c, hf.c) fill it.
 *
 * Invariants after finish: every id in [0, n_vocab) has a NUL-terminated
 * piece (ids a file leaves out are empty and unused); the hash index holds
 * every piece (the first id wins on duplicates); byte_ids[b] is the id of
 * piece <0xBB> or -1.
 */
#include "tokenizer_internal.h"

#include <stdio.h>
#include <string.h>

void wk_tokens_deinit(struct wk_tokens *t)
{
    if (!t) return;
    wk_free(t->ids);
    memset(t, 0, sizeof *t);
}

enum wk_status wk_tokens_push(struct wk_tokens *t, int32_t id)
{
    if (t->n == t->cap) {
        int64_t cap = t->cap ? t->cap * 2 : 64;
        int32_t *ids = wk_realloc(t->ids, (size_t)cap * sizeof *ids);
        if (!ids) return WK_E_NOMEM;
        t->ids = ids;
        t->cap = cap;
    }
    t->ids[t->n++] = id;
    return WK_OK;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

int32_t wk_tokenizer_find(const struct wk_tokenizer *tok, const char *text, size_t len)
{
    uint64_t mask = tok->hash_cap - 1;
    for (uint64_t i = hash_bytes(text, len) & mask;; i = (i + 1) & mask) {
        int32_t id = tok->hash[i];
        if (id < 0) return -1;
        if (tok->piece_len[id] == len && memcmp(tok->pieces[id], text, len) == 0) return id;
    }
}

static enum wk_status build_hash(struct wk_tokenizer *tok)
{
    uint64_t cap = 1;
    while (cap < (uint64_t)tok->n_vocab * 2) cap <<= 1;
    tok->hash_cap = cap;
    tok->hash = wk_malloc(cap * sizeof *tok->hash);
    if (!tok->hash) return WK_E_NOMEM;
    memset(tok->hash, 0xff, cap * sizeof *tok->hash);
    for (int32_t id = 0; id < tok->n_vocab; id++) {
        if (wk_tokenizer_find(tok, tok->pieces[id], tok->piece_len[id]) >= 0) continue;
        uint64_t i = hash_bytes(tok->pieces[id], tok->piece_len[id]) & (cap - 1);
        while (tok->hash[i] >= 0) i = (i + 1) & (cap - 1);
        tok->hash[i] = id;
    }
    return WK_OK;
}

/* ------------------------------------------------------------- the trie */

static int32_t trie_new_node(struct wk_tokenizer *tok)
{
    if (tok->n_trie == tok->trie_cap) {
        int64_t cap = tok->trie_cap ? tok->trie_cap * 2 : 1024;
        struct wk__trie_node *n = wk_realloc(tok->trie, (size_t)cap * sizeof *n);
        if (!n) return -1;
        tok->trie = n;
        tok->trie_cap = cap;
    }
    struct wk__trie_node *n = &tok->trie[tok->n_trie];
    n->first_child = n->next_sibling = -1;
    n->token = -1;
    n->byte = 0;
    return (int32_t)tok->n_trie++;
}

static int32_t trie_child(const struct wk_tokenizer *tok, int32_t node, uint8_t b)
{
    for (int32_t c = tok->trie[node].first_child; c >= 0; c = tok->trie[c].next_sibling)
        if (tok->trie[c].byte == b) return c;
    return -1;
}

static enum wk_status trie_insert(struct wk_tokenizer *tok, int32_t id)
{
    int32_t node = 0;
    for (size_t i = 0; i < tok->piece_len[id]; i++) {
        uint8_t b = (uint8_t)tok->pieces[id][i];
        int32_t c = trie_child(tok, node, b);
        if (c < 0) {
            c = trie_new_node(tok);
            if (c < 0) return WK_E_NOMEM;
            tok->trie[c].byte = b;
            tok->trie[c].next_sibling = tok->trie[node].first_child;
            tok->trie[node].first_child = c;
        }
        node = c;
    }
    if (tok->trie[node].token < 0) tok->trie[node].token = id;
    return WK_OK;
}

int32_t wk__special_match(const struct wk_tokenizer *tok, const char *text, size_t len,
                          bool parse_special, size_t *match_len)
{
    int32_t node = 0, best = -1;
    for (size_t i = 0; i < len; i++) {
        node = trie_child(tok, node, (uint8_t)text[i]);
        if (node < 0) break;
        int32_t id = tok->trie[node].token;
        if (id >= 0 && (parse_special || tok->types[id] == WK_TOKEN_USER_DEFINED)) {
            best = id;
            *match_len = i + 1;
        }
    }
    return best;
}

/* ------------------------------------------------------------ builder */

enum wk_status wk__vocab_begin(struct wk_tokenizer *tok, int32_t n_vocab)
{
    size_t n = (size_t)n_vocab;
    tok->n_vocab = n_vocab;
    tok->pieces = wk_calloc(n, sizeof *tok->pieces);
    tok->piece_len = wk_calloc(n, sizeof *tok->piece_len);
    tok->scores = wk_calloc(n, sizeof *tok->scores);
    tok->types = wk_malloc(n);
    tok->text_off = wk_malloc(n * sizeof *tok->text_off);
    if (!tok->pieces || !tok->piece_len || !tok->scores || !tok->types || !tok->text_off)
        return WK_E_NOMEM;
    memset(tok->types, WK_TOKEN_UNUSED, n);
    for (size_t i = 0; i < n; i++) tok->text_off[i] = SIZE_MAX;
    tok->bos = tok->eos = tok->eot = tok->unk = -1;
    for (int i = 0; i < WK_FIM_N; i++) tok->fim[i] = -1;
    return WK_OK;
}

enum wk_status wk__vocab_set(struct wk_tokenizer *tok, int32_t id, const char *text, size_t len,
                             enum wk_token_type type, float score)
{
    if (tok->text_len + len + 1 > tok->text_cap) {
        size_t cap = WK_MAX(tok->text_cap * 2, tok->text_len + len + 1 + 4096);
        char *t = wk_realloc(tok->text, cap);
        if (!t) return WK_E_NOMEM;
        tok->text = t;
        tok->text_cap = cap;
    }
    memcpy(tok->text + tok->text_len, text, len);
    tok->text[tok->text_len + len] = '\0';
    tok->text_off[id] = tok->text_len;
    tok->text_len += len + 1;
    tok->piece_len[id] = (uint32_t)len;
    tok->types[id] = (uint8_t)type;
    tok->scores[id] = score;
    return WK_OK;
}

enum wk_status wk__vocab_finish(struct wk_tokenizer *tok)
{
    /* ids never set become empty unused pieces: one shared "" at the end */
    if (tok->text_len + 1 > tok->text_cap) {
        char *t = wk_realloc(tok->text, tok->text_len + 1);
        if (!t) return WK_E_NOMEM;
        tok->text = t;
        tok->text_cap = tok->text_len + 1;
    }
    size_t empty = tok->text_len;
    tok->text[tok->text_len++] = '\0';
    for (int32_t i = 0; i < tok->n_vocab; i++) {
        if (tok->text_off[i] == SIZE_MAX) {
            tok->text_off[i] = empty;
            tok->piece_len[i] = 0;
            tok->types[i] = WK_TOKEN_UNUSED;
        }
        tok->pieces[i] = tok->text + tok->text_off[i];
        tok->max_piece_len = WK_MAX(tok->max_piece_len, tok->piece_len[i]);
    }
    wk_free(tok->text_off);
    tok->text_off = NULL;
    if (build_hash(tok)) return WK_E_NOMEM;
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        int32_t id = wk_tokenizer_find(tok, name, 6);
        tok->byte_ids[b] = id >= 0 && tok->types[id] == WK_TOKEN_BYTE ? id : -1;
    }
    if (trie_new_node(tok) < 0) return WK_E_NOMEM;
    for (int32_t id = 0; id < tok->n_vocab; id++) {
        uint8_t ty = tok->types[id];
        if ((ty == WK_TOKEN_CONTROL || ty == WK_TOKEN_USER_DEFINED || ty == WK_TOKEN_UNKNOWN) &&
            tok->piece_len[id] > 0 && trie_insert(tok, id))
            return WK_E_NOMEM;
    }
    return WK_OK;
}

static const char *g_eog_texts[] = {
    "<end_of_turn>", "<|eot_id|>", "<|im_end|>", "<|end|>", "<EOT>", "<|endoftext|>",
    "<|end_of_text|>", "<|eom_id|>", "<end_of_utterance>", "<|return|>", "<|call|>",
};

/* Fill-in-the-middle tokens by their text, as llama-vocab.cpp finds them
 * when the file does not name them ([enum wk_fim_token], NULL-ended). */
static const char *const g_fim_texts[WK_FIM_N][9] = {
    [WK_FIM_PRE] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>",
                    "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>", NULL},
    [WK_FIM_SUF] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",
                    "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>", NULL},
    [WK_FIM_MID] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",
                    "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>", NULL},
    [WK_FIM_PAD] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL},
    [WK_FIM_REP] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL},
    [WK_FIM_SEP] = {"<|file_sep|>", NULL},
};

int wk__fim_kind_of_text(const char *text, size_t len)
{
    for (int k = 0; k < WK_FIM_N; k++)
        for (int i = 0; g_fim_texts[k][i]; i++)
            if (strlen(g_fim_texts[k][i]) == len && memcmp(g_fim_texts[k][i], text, len) == 0) return k;
    return -1;
}

/* The fill-in-the-middle tokens the file did not name, by their text
 * (a control or user-defined piece). */
static void find_fim(struct wk_tokenizer *tok)
{
    for (int k = 0; k < WK_FIM_N; k++)
        for (int i = 0; tok->fim[k] < 0 && g_fim_texts[k][i]; i++) {
            int32_t id = wk_tokenizer_find(tok, g_fim_texts[k][i], strlen(g_fim_texts[k][i]));
            if (id >= 0 && (tok->types[id] == WK_TOKEN_CONTROL || tok->types[id] == WK_TOKEN_USER_DEFINED))
                tok->fim[k] = id;
        }
}

int32_t wk_tokenizer_fim(const struct wk_tokenizer *tok, enum wk_fim_token which)
{
    return which >= 0 && which < WK_FIM_N ? tok->fim[which] : -1;
}

enum wk_status wk__vocab_mark_eog(struct wk_tokenizer *tok)
{
    tok->eog = wk_calloc((size_t)tok->n_vocab, 1);
    if (!tok->eog) return WK_E_NOMEM;
    if (tok->eos >= 0) tok->eog[tok->eos] = 1;
    if (tok->eot >= 0) tok->eog[tok->eot] = 1;
    find_fim(tok);
    for (int k = WK_FIM_PAD; k <= WK_FIM_SEP; k++) /* llama.cpp: a code model's FIM answer may end with them */
        if (tok->fim[k] >= 0) tok->eog[tok->fim[k]] = 1;
    /* harmony (gpt-oss, o200k_harmony: <|return|> and <|call|> both
     * control tokens): <|end|> closes each message (the analysis before the
     * answer) and <|return|> / <|call|> end the turn, so <|end|> does not
     * stop generation, and the message framing is rendered in the
     * generated text (user-defined) for the harmony parser - llama.cpp's
     * rules (llama-vocab.cpp) */
    int32_t ret = wk_tokenizer_find(tok, "<|return|>", 10), call = wk_tokenizer_find(tok, "<|call|>", 8);
    const bool harmony = ret >= 0 && call >= 0 && tok->types[ret] == WK_TOKEN_CONTROL &&
                         tok->types[call] == WK_TOKEN_CONTROL;
    static const char *const framing[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", "<|end|>"};
    for (size_t i = 0; harmony && i < WK_ARRAY_LEN(framing); i++) {
        int32_t id = wk_tokenizer_find(tok, framing[i], strlen(framing[i]));
        if (id >= 0 && id != tok->eos && tok->types[id] == WK_TOKEN_CONTROL) tok->types[id] = WK_TOKEN_USER_DEFINED;
    }
    for (size_t i = 0; i < WK_ARRAY_LEN(g_eog_texts); i++) {
        int32_t id = wk_tokenizer_find(tok, g_eog_texts[i], strlen(g_eog_texts[i]));
        if (id >= 0 && tok->types[id] == WK_TOKEN_CONTROL) tok->eog[id] = 1;
    }
    int32_t end = harmony ? wk_tokenizer_find(tok, "<|end|>", 7) : -1;
    if (end >= 0 && end != tok->eos) tok->eog[end] = 0; /* even as the file's end-of-turn token */
    return WK_OK;
}

void wk_tokenizer_destroy(struct wk_tokenizer *tok)
{
    if (!tok) return;
    wk__bpe_deinit(&tok->bpe);
    wk_free(tok->text);
    wk_free(tok->pieces);
    wk_free(tok->piece_len);
    wk_free(tok->scores);
    wk_free(tok->types);
    wk_free(tok->hash);
    wk_free(tok->trie);
    wk_free(tok->eog);
    wk_free(tok->text_off);
    wk_free(tok);
}

int32_t wk_tokenizer_n_vocab(const struct wk_tokenizer *tok) { return tok->n_vocab; }
enum wk_tokenizer_model wk_tokenizer_model_kind(const struct wk_tokenizer *tok) { return tok->model; }

int64_t wk_tokenizer_min_tokens(const struct wk_tokenizer *tok, size_t n_bytes)
{
    /* a token covers at most its piece's bytes of the normalized text
     * (pieces are stored escaped: GPT-2's byte mapping and SentencePiece's
     * '▁' only lengthen them); Unicode normalization shortens text at most
     * 4 times: NFKC maps a 4-byte character to one ASCII byte at most
     * (mathematical "𝐀" U+1D400 to "A"; no code point does more, checked
     * over all of them with Python's unicodedata), and composition at most
     * 3 times (three Hangul jamo, 9 bytes, into one 3-byte syllable), so
     * the floor below is still a lower bound */
    const uint64_t per = 4 * (uint64_t)WK_MAX(tok->max_piece_len, 1u);
    return (int64_t)(n_bytes / per);
}
int32_t wk_tokenizer_bos(const struct wk_tokenizer *tok) { return tok->bos; }
int32_t wk_tokenizer_eos(const struct wk_tokenizer *tok) { return tok->eos; }
bool wk_tokenizer_add_bos(const struct wk_tokenizer *tok) { return tok->add_bos; }

bool wk_tokenizer_is_eog(const struct wk_tokenizer *tok, int32_t id)
{
    return id >= 0 && id < tok->n_vocab && tok->eog[id];
}

enum wk_token_type wk_tokenizer_token_type(const struct wk_tokenizer *tok, int32_t id)
{
    return id >= 0 && id < tok->n_vocab ? (enum wk_token_type)tok->types[id] : WK_TOKEN_UNKNOWN;
}

const char *wk_tokenizer_piece(const struct wk_tokenizer *tok, int32_t id, size_t *len)
{
    if (id < 0 || id >= tok->n_vocab) return NULL;
    if (len) *len = tok->piece_len[id];
    return tok->pieces[id];
}

/* ------------------------------------------------------------- decoding */

static size_t put(char *buf, size_t cap, size_t at, const char *s, size_t n)
{
    if (at < cap) memcpy(buf + at, s, WK_MIN(n, cap - at));
    return at + n;
}

size_t wk_tokenizer_token_bytes(const struct wk_tokenizer *tok, int32_t id, bool render_special,
                                char *buf, size_t cap)
{
    if (id < 0 || id >= tok->n_vocab) return 0;
    const char *s = tok->pieces[id];
    size_t n = tok->piece_len[id];
    switch (tok->types[id]) {
    case WK_TOKEN_CONTROL:
    case WK_TOKEN_UNKNOWN:
        return render_special ? put(buf, cap, 0, s, n) : 0;
    case WK_TOKEN_BYTE: {
        unsigned v;
        if (n == 6 && sscanf(s, "<0x%2X>", &v) == 1) {
            char b = (char)v;
            return put(buf, cap, 0, &b, 1);
        }
        return put(buf, cap, 0, s, n);
    }
    case WK_TOKEN_USER_DEFINED:
        return put(buf, cap, 0, s, n);
    default: break;
    }
    if (tok->model == WK_TOKENIZER_BPE && tok->byte_level)
        return wk__bpe_piece_bytes(&tok->bpe, s, n, buf, cap);
    if (tok->model == WK_TOKENIZER_WPM) return wk__wpm_piece_bytes(tok, id, buf, cap);
    /* '▁' (U+2581, e2 96 81) stands for a space */
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        if (i + 2 < n && (uint8_t)s[i] == 0xe2 && (uint8_t)s[i + 1] == 0x96 &&
            (uint8_t)s[i + 2] == 0x81) {
            out = put(buf, cap, out, " ", 1);
            i += 3;
        } else {
            size_t j = i;
            while (j < n && (uint8_t)s[j] != 0xe2) j++;
            if (j == i) j++;
            out = put(buf, cap, out, s + i, j - i);
            i = j;
        }
    }
    return out;
}
