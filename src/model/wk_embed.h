/*
 * wk_embed.h - embedding models: a BERT encoder (BertModel) and the
 * sentence-transformers pipeline around it (tokenize with [CLS] ... [SEP],
 * truncate, encode, pool, normalize), from a Hugging Face folder such as
 * all-MiniLM-L6-v2's (config.json, model.safetensors, tokenizer.json,
 * modules.json, 1_Pooling/config.json, sentence_bert_config.json), or from
 * llama.cpp's "bert" GGUF.
 *
 * The encoder is its own forward pass (bert.c), not the decoder context's:
 * post-norm LayerNorm blocks with biases, absolute position embeddings and
 * a bidirectional mask over sequences packed without padding, so no mask
 * is ever needed; several sequences go through one forward (their rows
 * concatenated, attention per sequence).
 *
 * Decoder (causal) models embed too, as llama.cpp and Ollama offer it
 * (embed_decoder.c): the final-normed hidden states of one sequence
 * decoded alone on a wk_context, pooled as the GGUF's {arch}.pooling_type
 * says (1 mean, 2 CLS = the first token, 3 last), and where it says
 * nothing (or 0, none) the last token's (Ollama's fallback to
 * llama_get_embeddings_ith of the last row when the sequence has no
 * pooled embedding). The tokenization, pooling and normalization are the
 * ones the BERT pipeline uses (wk_embed_tokenize, wk_embed_pool).
 */
#ifndef WK_EMBED_H
#define WK_EMBED_H

#include "../base/wk_base.h"
#include "../tokenizer/wk_tokenizer.h"
#include "wk_model.h"

/* sentence-transformers' Pooling modes wick computes. */
enum wk_pooling { WK_POOLING_MEAN = 0, WK_POOLING_CLS = 1, WK_POOLING_LAST = 2 };

struct wk_embed_model;

/*
 * True when dir looks like an encoder folder wick embeds with: its
 * config.json names model_type "bert" (or a BertModel architecture).
 * Reads config.json only; false on any error.
 */
bool wk_embed_is_folder(const char *dir);

/*
 * True when path is a model wk_embed_model_load takes: a folder as
 * wk_embed_is_folder says, or a regular GGUF file whose
 * general.architecture is "bert" (read from the file's first 64 KiB only;
 * a FIFO or device is never opened). False on any error.
 */
bool wk_embed_is_model(const char *path);

/*
 * Loads the BERT folder dir (or llama.cpp's "bert" GGUF file: the keys
 * bert.embedding_length, block_count, attention.head_count,
 * feed_forward_length, context_length (the most tokens), attention.
 * layer_norm_epsilon, pooling_type (1 mean, 2 CLS, 3 last), tensors by
 * llama.cpp's names in any dtype the matmul takes (norms and biases F32),
 * the WordPiece vocabulary of tokenizer.ggml.model "bert"; normalized, as
 * Ollama and llama-server answer): config.json (hidden_size, layers, heads,
 * intermediate_size, max_position_embeddings, type_vocab_size,
 * layer_norm_eps, hidden_act gelu, position_embedding_type absolute),
 * model.safetensors (F32, with or without a "bert." prefix; mapped and
 * used in place), tokenizer.json (WordPiece; wk_tokenizer_from_hf), and
 * the sentence-transformers files: modules.json (Transformer, Pooling,
 * Normalize; a Dense module is refused), the Pooling config (mean, CLS
 * or last token; max and mean_sqrt_len refused), sentence_bert_config.json
 * (max_seq_length, else the tokenizer's and the positions' limit).
 * Without modules.json: mean pooling, not normalized (what
 * sentence-transformers builds from a plain folder).
 * Errors (naming the file and the field or tensor): WK_E_NOT_FOUND,
 * WK_E_FORMAT (a missing or misshapen tensor, an absurd value),
 * WK_E_UNSUPPORTED (another architecture, activation, pooling or dtype),
 * WK_E_NOMEM. *out is owned by the caller (wk_embed_model_destroy).
 */
enum wk_status wk_embed_model_load(const char *dir, struct wk_embed_model **out, struct wk_error *err);
/* Frees the model and unmaps its weights; m may be NULL. */
void wk_embed_model_destroy(struct wk_embed_model *m);

/* Output width (hidden_size), the length of each embedding. */
int32_t wk_embed_model_n_embd(const struct wk_embed_model *m);
/* Most tokens one input may have, [CLS] and [SEP] included. */
int32_t wk_embed_model_max_tokens(const struct wk_embed_model *m);
enum wk_pooling wk_embed_model_pooling(const struct wk_embed_model *m);
bool wk_embed_model_normalizes(const struct wk_embed_model *m);
/* The folder's tokenizer (borrowed, lives as long as m). */
const struct wk_tokenizer *wk_embed_model_tokenizer(const struct wk_embed_model *m);
/* Elements of the weights wick uses (for show / details). */
uint64_t wk_embed_model_n_params(const struct wk_embed_model *m);

/*
 * Tokenizes one input as sentence-transformers does: the post-processor's
 * [CLS] and [SEP] around the text's WordPiece ids (special-token text in
 * the input is matched, as the Hugging Face tokenizer matches it), the
 * text's ids cut so that the whole fits max_tokens when truncate; with
 * truncate false a longer input is WK_E_RANGE (the message gives both
 * lengths). out is cleared first and owned by the caller.
 * Errors: WK_E_RANGE, WK_E_NOMEM.
 */
enum wk_status wk_embed_model_tokenize(const struct wk_embed_model *m, const char *text, size_t len,
                                       bool truncate, struct wk_tokens *out, struct wk_error *err);

/*
 * Tokenizes one input for embedding with tok: its BOS first when the
 * tokenizer adds one (wk_tokenizer_add_bos), the text's ids (control-token
 * text matched as control tokens, as llama.cpp's and the Hugging Face
 * tokenizers' embedding paths match it), and the id
 * wk_tokenizer_eos_to_add gives last (BERT's [SEP]), the text's ids cut so
 * that the whole fits max_tokens when truncate; with truncate false a
 * longer input is WK_E_RANGE (the message gives both lengths), as is a
 * max_tokens with no room for a token. out is cleared first and owned by
 * the caller. Errors: WK_E_RANGE, WK_E_NOMEM.
 */
enum wk_status wk_embed_tokenize(const struct wk_tokenizer *tok, const char *text, size_t len, int64_t max_tokens,
                                 bool truncate, struct wk_tokens *out, struct wk_error *err);

/*
 * Pools one sequence's rows h [n][E] f32 (n >= 1) into y [E] f32: their
 * mean (summed in double), the first row (CLS) or the last; then, when
 * normalize, y / max(|y|, 1e-12) (torch.nn.functional.normalize, as
 * sentence-transformers' Normalize). h and y borrowed, not overlapping.
 */
void wk_embed_pool(enum wk_pooling pooling, const float *h, int64_t n, int64_t E, bool normalize, float *y);

/* llama.cpp's pooling type number (GGUF {arch}.pooling_type: 1 mean,
 * 2 CLS, 3 last) as a wk_pooling in *out; WK_E_UNSUPPORTED (no message)
 * for the others (0 none, 4 rank, anything else), *out untouched. */
enum wk_status wk_embed_pooling_from_type(int64_t type, enum wk_pooling *out);

/*
 * The pooling a decoder model's embeddings use, into *out: its GGUF's
 * {arch}.pooling_type (general.architecture's prefix) when present and
 * not 0; WK_POOLING_LAST when absent or 0 (none: Ollama then takes the
 * last token's hidden state) and for a Hugging Face folder (no such key).
 * Errors (naming the file, the key and the value): WK_E_FORMAT (not an
 * integer), WK_E_UNSUPPORTED (4, rank: a reranker's score, not an
 * embedding; or an unknown type).
 */
enum wk_status wk_embed_decoder_pooling(const struct wk_model *m, enum wk_pooling *out, struct wk_error *err);

/*
 * True when path is a regular GGUF file whose metadata has
 * {general.architecture}.pooling_type, any value: a model made for
 * embeddings (a bert GGUF, or a decoder converted as an embedding model),
 * to which Ollama gives the "embedding" capability instead of
 * "completion" (server/images.go). Parses the file's metadata (mapped);
 * false on any error, for a folder, a FIFO or a device.
 */
bool wk_embed_gguf_has_pooling(const char *path);

/*
 * Embeds one token sequence ids [n_tokens] with a decoder model's context
 * ctx: empties its sequence 0, decodes the ids there
 * (wk_context_decode_hidden: the chunks of wk_context_decode, so the
 * result depends only on the ids and the context's n_ubatch and threads,
 * never on what else was embedded before or in the same request), pools
 * the final-normed hidden states (every row's for mean and CLS, the last
 * row's alone for last) into out [n_embd] f32, not normalized (the server
 * normalizes per route), and empties sequence 0 again. ids borrowed.
 * Errors: WK_E_INVALID (n_tokens < 1, an id outside the vocabulary),
 * WK_E_RANGE (more than the context's n_ctx), WK_E_CANCELLED (cancel,
 * may be NULL, became true), WK_E_NOMEM (mean or CLS: n_tokens x n_embd
 * floats). Not thread-safe on one context.
 */
enum wk_status wk_embed_decoder(struct wk_context *ctx, enum wk_pooling pooling, const int32_t *ids, int32_t n_tokens,
                                float *out, const volatile bool *cancel, struct wk_error *err);

/*
 * Embeds n_seq inputs seqs[i] [n_tokens[i]] (ids borrowed) with a decoder
 * model into out [n_seq][n_embd] f32, pooled, not normalized: each vector
 * bit for bit what wk_embed_decoder(one, ...) gives for that input alone,
 * but computed in fewer forwards. Inputs of 2..L tokens, L the least of
 * many's n_ctx and n_ubatch and one's n_ubatch (each is one chunk alone
 * and in a batch), are decoded together on many's sequences, longest
 * first, up to n_seq(many) inputs and n_ubatch rows a forward, so the
 * weights are read once per batch rather than once per input; one-token
 * inputs together, each as a one-token step; the others alone on one's
 * sequence 0. many (a context of the same model with several sequences,
 * whose sequences are emptied here; NULL: every input alone) is not
 * batched for the last or CLS pooling of a model with KV-shared layers
 * (Gemma 4 keeps only the wanted rows there, so a lone row would take
 * other kernels). Errors: WK_E_INVALID (wk_embed_decoder_check, before
 * anything is computed), WK_E_RANGE (an input longer than one's
 * n_ctx), WK_E_CANCELLED, WK_E_NOMEM. Not thread-safe on one or many.
 */
/*
 * The input checks of wk_embed_decoder_many alone, computing nothing:
 * WK_E_INVALID for an input of no tokens ("input i: nothing to embed") or
 * an id outside m's vocabulary ("input i: token id ..."), else WK_OK.
 */
enum wk_status wk_embed_decoder_check(const struct wk_model *m, int32_t n_seq, const int32_t *const *seqs,
                                      const int32_t *n_tokens, struct wk_error *err);

enum wk_status wk_embed_decoder_many(struct wk_context *one, struct wk_context *many, enum wk_pooling pooling,
                                     int32_t n_seq, const int32_t *const *seqs, const int32_t *n_tokens, float *out,
                                     const volatile bool *cancel, struct wk_error *err);

/*
 * Embeds n_seq token sequences: seqs[i] [n_tokens[i]] ids (1 <= n_tokens[i]
 * <= max_tokens, ids < n_vocab), out [n_seq][n_embd] f32, pooled and, when
 * the model normalizes, L2-normalized. The sequences are taken longest
 * first and packed into forwards of up to max(max_tokens, 4096) rows, each
 * one pass over the weights. pool: the threads (borrowed; NULL: the
 * calling thread). Results do not depend on how sequences are grouped:
 * each row's products and each sequence's attention are computed alone.
 * Errors: WK_E_INVALID (an empty or over-long sequence, an id out of
 * range), WK_E_CANCELLED (cancel, may be NULL, became true; checked
 * between layers), WK_E_NOMEM. Not thread-safe on one model.
 */
/*
 * The input checks of wk_embed_model_encode alone, computing nothing: so
 * that a caller merging several requests into one encode can refuse one
 * without failing the others. Errors as wk_embed_model_encode's
 * WK_E_INVALID ("input i has ...", "input i: token ...").
 */
enum wk_status wk_embed_model_check(const struct wk_embed_model *m, int32_t n_seq, const int32_t *const *seqs,
                                    const int32_t *n_tokens, struct wk_error *err);

enum wk_status wk_embed_model_encode(struct wk_embed_model *m, struct wk_threadpool *pool, int32_t n_seq,
                                     const int32_t *const *seqs, const int32_t *n_tokens, float *out,
                                     const volatile bool *cancel, struct wk_error *err);

#endif /* WK_EMBED_H */
