/*
 * tokenizer_internal.h - the tokenizer's state, shared by the files of
 * src/tokenizer only.
 */
#ifndef WK_TOKENIZER_INTERNAL_H
#define WK_TOKENIZER_INTERNAL_H

#include "wk_tokenizer.h"

/* A byte trie of the special pieces; children form a sibling list. */
struct wk__trie_node {
    int32_t first_child, next_sibling;
    int32_t token; /* id whose piece ends here, or -1 */
    uint8_t byte;
};

/* Byte-level BPE state (GPT-2 style): merges by rank and the
 * pre-tokenizer's regexes, applied in order. */
struct wk__merge_entry {
    uint64_t key;   /* (left id << 32) | right id; 0 with merged < 0: empty */
    int32_t merged; /* id of the merged piece */
    int32_t rank;
};
struct wk__bpe {
    struct wk__merge_entry *merges; /* open addressing */
    uint64_t merges_cap;
    int32_t n_merges;
    int32_t byte_char_ids[256]; /* id of the piece for byte b's mapped character */
    int16_t cp_to_byte[324];    /* GPT-2 character (code point) back to its byte, or -1 */
    int32_t n_regex;
    void *regex[8];             /* pcre2_code_8 * */
};

/* A Unicode normalization form (tokenizer.json's NFC, NFD, NFKC, NFKD
 * normalizers), applied to the text between added tokens. */
enum wk__unicode_form { WK__FORM_NONE, WK__FORM_NFC, WK__FORM_NFD, WK__FORM_NFKC, WK__FORM_NFKD };

/* WordPiece settings (wordpiece.c): tokenizer.json's BertNormalizer
 * flags, the model's continuing-subword prefix ("##") and the longest
 * word in characters that is not the unknown token outright. */
struct wk__wpm {
    bool clean_text, handle_chinese, strip_accents, lowercase;
    int32_t max_chars;
    uint32_t prefix_len;
    char prefix[16];
};

struct wk_tokenizer {
    enum wk_tokenizer_model model;
    struct wk__wpm wpm;
    enum wk__unicode_form unicode_form; /* before the model, after added tokens are split */
    struct wk__bpe bpe;
    int32_t n_vocab;
    char *text;           /* all pieces, NUL-separated */
    size_t text_len, text_cap;
    size_t *text_off;     /* [n_vocab] while building, then NULL */
    char **pieces;        /* [n_vocab] into text */
    uint32_t *piece_len;  /* [n_vocab] bytes */
    uint32_t max_piece_len; /* the longest piece, in bytes (wk__vocab_finish) */
    float *scores;        /* [n_vocab] */
    uint8_t *types;       /* [n_vocab] enum wk_token_type */
    uint8_t *eog;         /* [n_vocab] 1 = ends generation */
    int32_t *hash;        /* [hash_cap] open addressing, -1 empty */
    uint64_t hash_cap;
    struct wk__trie_node *trie;
    int64_t n_trie, trie_cap;
    int32_t byte_ids[256];
    int32_t bos, eos, eot, unk;
    int32_t fim[WK_FIM_N]; /* enum wk_fim_token: from the GGUF's keys (-1: none; mark_eog finds them by text) */
    bool add_bos, add_space_prefix;
    /* a tokenization with special tokens ends with eos_to_add (hf.c: the
     * post-processor's or add_eos_token's; never set from a GGUF yet) */
    bool add_eos;
    int32_t eos_to_add;
    /* hf.c: tokenizer.json has a post-processor, which alone decides
     * add_bos / add_eos (as transformers 5), with post_bos / post_eos the
     * ids it puts before / after the text, or -1 */
    bool has_post_processor;
    int32_t post_bos, post_eos;
    /* BPE only: byte-level (GPT-2) or character-level with spaces escaped
     * as '▁' and byte fallback (SentencePiece-style tokenizer.json) */
    bool byte_level, escape_spaces, byte_fallback, ignore_merges;
    bool wpm_normalizer; /* hf.c: a BertNormalizer was read */
};

/* The enum wk_fim_token whose spellings (vocab.c) include text [len], or -1. */
int wk__fim_kind_of_text(const char *text, size_t len);

/* Vocabulary builder, used by the loaders: begin with the size; set each
 * piece (any order; text copied); finish builds the indexes (ids never set
 * become empty unused pieces); after bos/eos/eot are known, mark_eog.
 * Errors: WK_E_NOMEM. */
enum wk_status wk__vocab_begin(struct wk_tokenizer *tok, int32_t n_vocab);
enum wk_status wk__vocab_set(struct wk_tokenizer *tok, int32_t id, const char *text, size_t len,
                             enum wk_token_type type, float score);
enum wk_status wk__vocab_finish(struct wk_tokenizer *tok);
enum wk_status wk__vocab_mark_eog(struct wk_tokenizer *tok);

/* The longest special piece at the start of text[0..len): user-defined
 * pieces always, control/unknown pieces only when parse_special. Returns
 * its id and sets *match_len, or returns -1. */
int32_t wk__special_match(const struct wk_tokenizer *tok, const char *text, size_t len,
                          bool parse_special, size_t *match_len);

/* A symbol of the merge loop: a run of the text buffer and, once known,
 * its token id; prev/next link the live symbols, n == 0 marks a dead one. */
struct wk__sym {
    int32_t prev, next;
    uint32_t off, n;
    int32_t id;
};

/* Scores the pair (l, r): false when it does not merge; else the score
 * (higher merges first) and the merged id. */
typedef bool (*wk__pair_fn)(const void *ctx, const char *text, const struct wk__sym *l,
                            const struct wk__sym *r, float *score, int32_t *id);

/* Merges syms[0..n_sym) (linked in order) until no pair merges.
 * Errors: WK_E_NOMEM. */
enum wk_status wk__merge_symbols(const char *text, struct wk__sym *syms, int32_t n_sym,
                                 wk__pair_fn pair, const void *ctx);

/* Length of the UTF-8 sequence led by byte c (1 for an invalid lead). */
uint32_t wk__utf8_len(uint8_t c);
/* Length of the character at s[0..n): its lead's length when that many
 * bytes remain and all but the first are continuation bytes, else 1 (a
 * stray byte is a character of its own, so no symbol swallows the next
 * character's bytes). n >= 1. */
uint32_t wk__utf8_char_len(const char *s, size_t n);

/* BPE set-up, used by the loaders after the vocabulary is finished:
 * prepare sizes the merge table for n_merges and maps the GPT-2 byte
 * characters; add_merge records (a, b) -> a+b at rank (WK_E_NOT_FOUND when
 * a piece is missing, WK_E_FORMAT when one is empty or too long);
 * add_regex appends a pre-tokenizer split (WK_E_FORMAT when it does not
 * compile, WK_E_UNSUPPORTED past 8); use_named_pre appends the splits
 * tokenizer.ggml.pre names (WK_E_NOT_FOUND for an unknown name). */
enum wk_status wk__bpe_prepare(struct wk_tokenizer *tok, uint64_t n_merges);
enum wk_status wk__bpe_add_merge(struct wk_tokenizer *tok, const char *a, size_t la, const char *b,
                                 size_t lb, int32_t rank);
enum wk_status wk__bpe_add_regex(struct wk_tokenizer *tok, const char *pattern);
enum wk_status wk__bpe_use_named_pre(struct wk_tokenizer *tok, const char *name);
/* The GPT-2 split regex (tokenizers' ByteLevel pre-tokenizer). */
const char *wk__bpe_gpt2_regex(void);
void wk__bpe_deinit(struct wk__bpe *bpe);
/* Byte-level BPE over one run of text; appends ids. Errors: WK_E_NOMEM. */
enum wk_status wk__bpe_encode(const struct wk_tokenizer *tok, const char *text, size_t len,
                              struct wk_tokens *out);
/* Bytes of a byte-level piece (GPT-2 characters mapped back to bytes);
 * same contract as wk_tokenizer_token_bytes. */
size_t wk__bpe_piece_bytes(const struct wk__bpe *bpe, const char *piece, size_t len, char *buf,
                           size_t cap);

/* text[0..len) in Unicode normalization form `form` (normalize.c: each
 * run of valid UTF-8 normalized, other bytes kept). *out is a new buffer
 * of *out_len bytes the caller frees with wk_free, or NULL when the text is
 * already normal as it is (no normalization, or ASCII only); then *out_len
 * is len. Errors: WK_E_NOMEM. */
enum wk_status wk__normalize(enum wk__unicode_form form, const char *text, size_t len, char **out,
                             size_t *out_len);

/* SentencePiece BPE over one run of text with no special pieces in it;
 * appends ids to out. Errors: WK_E_NOMEM. */
enum wk_status wk__spm_encode(const struct wk_tokenizer *tok, const char *text, size_t len,
                              struct wk_tokens *out);

/* WordPiece (wordpiece.c) over one run of text with no added tokens in
 * it: BertNormalizer, BertPreTokenizer, greedy longest-match pieces;
 * appends ids (tok->unk for an unknown word). Errors: WK_E_NOMEM. */
enum wk_status wk__wpm_encode(const struct wk_tokenizer *tok, const char *text, size_t len,
                              struct wk_tokens *out);
/* Bytes of WordPiece token id (0 <= id < n_vocab): a continuation piece
 * without its prefix, any other piece after a space; same contract as
 * wk_tokenizer_token_bytes. */
size_t wk__wpm_piece_bytes(const struct wk_tokenizer *tok, int32_t id, char *buf, size_t cap);
/* A piece of llama.cpp's BERT vocabulary (s [n]; normal: a normal token)
 * in WordPiece's spelling into out [n + 2]: a leading '▁' (word-initial)
 * dropped, a normal piece without it given "##"; returns its length. */
size_t wk__wpm_piece_from_gguf(const char *s, size_t n, bool normal, char *out);
/* A WordPiece tokenizer from a GGUF (tokenizer.ggml.model "bert"), its
 * pieces loaded: BERT's normalizer (lowercase and accent stripping as
 * tokenizer.ggml.normalizer.lowercase says, default on), "##", [CLS] /
 * [SEP] added as add_bos_token / add_eos_token say. Errors: those of
 * reading the keys (WK_E_FORMAT), WK_E_FORMAT when there is no unknown token. */
enum wk_status wk__wpm_setup_gguf(struct wk_tokenizer *tok, const struct wk_gguf *g, struct wk_error *err);

#endif
