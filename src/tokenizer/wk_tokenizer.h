/*
 * wk_tokenizer.h - vocabularies and tokenizers, loaded from GGUF metadata.
 *
 * A vocabulary is the list of token pieces (tokenizer.ggml.tokens) with
 * their scores and types (normal, unknown, control, user-defined, unused,
 * byte). Encoding runs in two steps:
 *   1. special-token partition: user-defined pieces (such as Gemma's runs
 *      of spaces and newlines) are always split out of the text, longest
 *      match first; control pieces (<bos>, <start_of_turn>) only in
 *      template scaffolding (parse_special), never in user content;
 *   2. each remaining run of text is normalized when tokenizer.json asks
 *      (NFC, NFD, NFKC, NFKD; Qwen 2 and 3 are NFC), then goes to the
 *      model's algorithm: SentencePiece BPE (Kudo & Richardson 2018; merges
 *      chosen by piece score, with byte fallback to <0xNN> pieces), as
 *      llama.cpp's "llama" tokenizer model, byte-level BPE, or BERT's
 *      WordPiece (its normalizer and pre-tokenizer included; wordpiece.c).
 * Decoding maps pieces back to bytes ('▁' to space, <0xNN> to the byte);
 * the streaming detokenizer holds back an incomplete UTF-8 character.
 */
#ifndef WK_TOKENIZER_H
#define WK_TOKENIZER_H

#include "../base/wk_base.h"
#include "../io/wk_io.h"

/* GGUF token types (tokenizer.ggml.token_type). */
enum wk_token_type {
    WK_TOKEN_NORMAL = 1,
    WK_TOKEN_UNKNOWN = 2,
    WK_TOKEN_CONTROL = 3,
    WK_TOKEN_USER_DEFINED = 4,
    WK_TOKEN_UNUSED = 5,
    WK_TOKEN_BYTE = 6,
};

/* SentencePiece BPE, byte-level BPE, WordPiece (BERT; wordpiece.c). */
enum wk_tokenizer_model { WK_TOKENIZER_SPM = 1, WK_TOKENIZER_BPE = 2, WK_TOKENIZER_WPM = 3 };

struct wk_tokenizer;

/* A growable list of token ids; owned by the caller (wk_tokens_deinit). */
struct wk_tokens {
    int32_t *ids;
    int64_t n, cap;
};
void wk_tokens_deinit(struct wk_tokens *t);
/* Appends one id. Errors: WK_E_NOMEM. */
enum wk_status wk_tokens_push(struct wk_tokens *t, int32_t id);

/*
 * Builds a tokenizer from a GGUF file's tokenizer.ggml.* metadata (tokens,
 * scores, token_type, bos/eos/eot/unknown ids, add_bos_token,
 * add_space_prefix). Pieces are copied, so the tokenizer outlives g.
 * Errors: WK_E_NOT_FOUND (no vocabulary), WK_E_FORMAT (arrays of different
 * lengths, ids out of range, a byte piece missing), WK_E_UNSUPPORTED (a
 * tokenizer model other than "llama"/SentencePiece), WK_E_NOMEM.
 */
enum wk_status wk_tokenizer_from_gguf(const struct wk_gguf *g, struct wk_tokenizer **out,
                                      struct wk_error *err);
void wk_tokenizer_destroy(struct wk_tokenizer *tok);

/*
 * Builds a tokenizer from a Hugging Face folder: dir/tokenizer.json (BPE
 * models: byte-level as GPT-2/Llama 3/Qwen/SmolLM, or SentencePiece-style
 * with byte fallback as Gemma/Llama 2), with BOS, EOS and add_bos from
 * tokenizer_config.json, special_tokens_map.json and generation_config.json
 * when present (every id of generation_config's eos_token_id ends
 * generation). What tokenizer.json's post-processor adds around a text
 * (TemplateProcessing "<bos> $A <eos>", BertProcessing, RobertaProcessing)
 * sets add_bos, the BOS and wk_tokenizer_eos_to_add, over
 * tokenizer_config.json's add_bos_token / add_eos_token, as transformers 5
 * decides. Errors, naming the file and the field: WK_E_NOT_FOUND (no
 * tokenizer.json), WK_E_FORMAT (invalid JSON, malformed vocab or merges),
 * WK_E_UNSUPPORTED (a model, normalizer or pre-tokenizer type wick does
 * not implement), WK_E_NOMEM.
 */
enum wk_status wk_tokenizer_from_hf(const char *dir, struct wk_tokenizer **out,
                                    struct wk_error *err);
/* As wk_tokenizer_from_hf from tokenizer.json's text alone (len bytes; no
 * companion files); name is used in messages. For tests and fuzzing. */
enum wk_status wk_tokenizer_from_hf_json(const char *json_text, size_t len, const char *name,
                                         struct wk_tokenizer **out, struct wk_error *err);

int32_t wk_tokenizer_n_vocab(const struct wk_tokenizer *tok);
/* The tokenizer's algorithm (enum wk_tokenizer_model). */
enum wk_tokenizer_model wk_tokenizer_model_kind(const struct wk_tokenizer *tok);

/* A lower bound on the tokens that n_bytes of text (control tokens and
 * all) can encode to, from the longest piece of the vocabulary: so a
 * prompt far longer than a context is refused without tokenizing it. */
int64_t wk_tokenizer_min_tokens(const struct wk_tokenizer *tok, size_t n_bytes);
int32_t wk_tokenizer_bos(const struct wk_tokenizer *tok); /* -1 when none */
int32_t wk_tokenizer_eos(const struct wk_tokenizer *tok); /* -1 when none */
bool wk_tokenizer_add_bos(const struct wk_tokenizer *tok);
/* The id a tokenization with special tokens ends with (the EOS of a
 * Hugging Face post-processor "<bos> $A <eos>", BERT's [SEP], RoBERTa's
 * </s>, or add_eos_token's EOS without a post-processor), or -1 when none
 * is added (always, from a GGUF, for now). Callers append it; encode never
 * does. */
int32_t wk_tokenizer_eos_to_add(const struct wk_tokenizer *tok);
/* True for tokens that end generation: EOS, EOT, the family's
 * end-of-turn controls (<end_of_turn>, <|im_end|>, <|eot_id|>, ...) and
 * the fill-in-the-middle pad, repository and file-separator tokens (as
 * llama.cpp's llama-vocab.cpp marks them). */
bool wk_tokenizer_is_eog(const struct wk_tokenizer *tok, int32_t id);
enum wk_token_type wk_tokenizer_token_type(const struct wk_tokenizer *tok, int32_t id);
/* Fill-in-the-middle's control tokens: a code model's prompt
 * "<PRE> prefix <SUF> suffix <MID>" (PSM) asks for the middle. */
enum wk_fim_token { WK_FIM_PRE, WK_FIM_SUF, WK_FIM_MID, WK_FIM_PAD, WK_FIM_REP, WK_FIM_SEP, WK_FIM_N };
/* The id of fill-in-the-middle token which (enum wk_fim_token), or -1 when
 * the vocabulary has none: from the GGUF's tokenizer.ggml.fim_*_token_id
 * (or the older prefix / suffix / middle_token_id), else found by its text
 * among the spellings llama.cpp knows (Qwen's <|fim_prefix|>, StarCoder's
 * <fim_prefix>, DeepSeek's <｜fim▁begin｜>, CodeLlama's ▁<PRE>, GLM's
 * <|code_prefix|>, ...; llama-vocab.cpp), control or user-defined pieces
 * only. */
int32_t wk_tokenizer_fim(const struct wk_tokenizer *tok, enum wk_fim_token which);
/* Whether the vocabulary of the model at path (a GGUF file, or a Hugging
 * Face folder's tokenizer.json) has the three fill-in-the-middle tokens
 * (FIM_PRE, FIM_SUF, FIM_MID) wk_tokenizer_fim would find: Ollama's
 * "insert" capability. A GGUF's tokens are scanned without building the
 * tokenizer. False when the file cannot be read. */
bool wk_tokenizer_path_has_fim(const char *path);
/* The piece text of id as stored in the vocabulary (borrowed, *len bytes,
 * NUL-terminated); NULL for an id out of range. */
const char *wk_tokenizer_piece(const struct wk_tokenizer *tok, int32_t id, size_t *len);
/* The id whose piece is exactly text[0..len), or -1. */
int32_t wk_tokenizer_find(const struct wk_tokenizer *tok, const char *text, size_t len);

/*
 * Appends the ids of text[0..len) to out. parse_special: control-token text
 * becomes the control token (template scaffolding); otherwise it stays
 * literal text (user content). BOS is never added here: the caller (the
 * chat template) decides. Any bytes are accepted, invalid UTF-8 included
 * (it falls back to byte pieces). Errors: WK_E_NOMEM only.
 */
enum wk_status wk_tokenizer_encode(const struct wk_tokenizer *tok, const char *text, size_t len,
                                   bool parse_special, struct wk_tokens *out);

/* One piece of text to tokenize and whether control-token text inside it
 * becomes control tokens. */
struct wk_text_span {
    const char *text;
    size_t len;
    bool parse_special;
};

/*
 * Tokenizes spans as one text: special pieces are split out of each span
 * by its own parse_special, and the text between them is tokenized as one
 * run even across span boundaries, so the ids are those of the joined
 * string whenever no control-token text sits in a literal span.
 * Errors: WK_E_NOMEM only.
 */
enum wk_status wk_tokenizer_encode_spans(const struct wk_tokenizer *tok,
                                         const struct wk_text_span *spans, int32_t n_spans,
                                         struct wk_tokens *out);

/*
 * Writes the bytes token id stands for into buf (at most cap bytes) and
 * returns how many it stands for (which may exceed cap; then the output is
 * cut). Control and unknown tokens give "" unless render_special; a byte
 * piece <0xNN> gives that byte; '▁' gives a space. An id out of range
 * gives 0.
 */
size_t wk_tokenizer_token_bytes(const struct wk_tokenizer *tok, int32_t id, bool render_special,
                                char *buf, size_t cap);

/*
 * Streaming detokenizer: feeds token bytes in and gives out only complete
 * UTF-8 characters, holding back a character split across tokens. Bytes
 * that cannot start or continue a valid character are passed through as
 * they are, so the concatenated output always equals one-shot decoding.
 */
struct wk_detok {
    char *buf; /* output of the last push (owned) */
    size_t cap;
    char pending[4];
    int n_pending;
};
void wk_detok_init(struct wk_detok *d);
void wk_detok_deinit(struct wk_detok *d);
/*
 * Appends the bytes of token id (rendered as wk_tokenizer_token_bytes with
 * render_special) and returns the bytes now ready, *n of them; the pointer
 * is borrowed until the next call. Returns NULL on WK_E_NOMEM.
 */
const char *wk_detok_push(struct wk_detok *d, const struct wk_tokenizer *tok, int32_t id,
                          bool render_special, size_t *n);
/* Returns the held-back bytes at end of stream (*n may be 0); borrowed
 * until the next call. */
const char *wk_detok_flush(struct wk_detok *d, size_t *n);

#endif /* WK_TOKENIZER_H */
