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

struct wk_tokenizer {
    enum wk_tokenizer_model model;
    int32_t n_vocab;
    char *text;           /* all pieces, NUL-separated */
    char **pieces;        /* [n_vocab] into text */
    uint32_t *piece_len;  /* [n_vocab] bytes */
    float *scores;        /* [n_vocab] */
    uint8_t *types;       /* [n_vocab] enum wk_token_type */
    uint8_t *eog;         /* [n_vocab] 1 = ends generation */
    int32_t *hash;        /* [hash_cap] open addressing, -1 empty */
    uint64_t hash_cap;
    struct wk__trie_node *trie;
    int64_t n_trie, trie_cap;
    int32_t byte_ids[256];
    int32_t bos, eos, eot, unk;
    bool add_bos, add_space_prefix;
};

/* The longest special piece at the start of text[0..len): user-defined
 * pieces always, control/unknown pieces only when parse_special. Returns
 * its id and sets *match_len, or returns -1. */
int32_t wk__special_match(const struct wk_tokenizer *tok, const char *text, size_t len,
                          bool parse_special, size_t *match_len);

/* SentencePiece BPE over one run of text with no special pieces in it;
 * appends ids to out. Errors: WK_E_NOMEM. */
enum wk_status wk__spm_encode(const struct wk_tokenizer *tok, const char *text, size_t len,
                              struct wk_tokens *out);

#endif
