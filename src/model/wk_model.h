/*
 * wk_model.h - model architectures and their forward pass.
 *
 * A struct wk_model is the read-only part: hyperparameters and views of the
 * weights inside the mapped GGUF file. A struct wk_context runs up to
 * n_seq_max sequences on it: the thread pool, the scratch arena sized at
 * creation, and the KV cache (f32, per layer and sequence [slots]
 * [n_head_kv * head_dim] for K and V: n_ctx slots on full-attention layers,
 * a ring of min(n_ctx, W + n_ubatch + WK_VERIFY_MAX) on sliding-window
 * layers of window W).
 * wk_context_decode appends tokens to sequence 0 (prefill in chunks of
 * n_ubatch, or one decode step) and returns the logits of the last one;
 * wk_context_verify appends a few drafted tokens as single steps would;
 * wk_context_decode_batch advances several sequences in one forward
 * (docs/architecture.md, "The batch").
 *
 * Families (docs/reference/architectures.md): Llama (§1), Qwen 3 dense (§2),
 * Gemma 3 (§3), Gemma 4 (§4), GLM-4-MoE-Lite (§6: multi-head latent
 * attention, whose layers cache one compressed row of kv_lora_rank + RoPE
 * dims per position instead of K and V).
 */
#ifndef WK_MODEL_H
#define WK_MODEL_H

#include "../base/wk_base.h"
#include "../cpu/wk_cpu.h"
#include "../io/wk_io.h"

/* The turn format a family's models use when the caller brings no
 * template (runtime/chat.c renders each): Gemma's <start_of_turn>, Qwen 3's
 * ChatML with thinking, GLM-4's, or ChatML when the model's own chat
 * template is ChatML (none otherwise). */
enum wk_chat_format {
    WK_CHAT_NONE = 0,
    WK_CHAT_GEMMA = 1,
    WK_CHAT_QWEN3 = 2,
    WK_CHAT_GLM4 = 3,
    WK_CHAT_CHATML_IF_TEMPLATE = 4,
};

struct wk_hparams {
    const char *arch_name; /* the file's general.architecture ("gemma3", "deepseek2"): its keys' prefix */
    int32_t n_vocab;
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim; /* per head, for Q, K and V (Gemma 4: sliding layers'; full layers' may differ) */
    int32_t n_ff;
    int32_t n_ctx_train;
    int32_t n_rot;          /* RoPE dims per head */
    float rms_eps;
    float rope_base;        /* global (full-attention) layers */
    float rope_base_swa;    /* sliding-window layers */
    float rope_freq_scale;  /* global layers: 1 / linear scaling factor */
    /* cos and sin of every RoPE angle are multiplied by it (1: none; the
     * LongRoPE attention factor sqrt(1 + ln(s) / ln(n_ctx_orig)), s =
     * n_ctx_train / n_ctx_orig; ggml's attn_factor, transformers'
     * attention_scaling) */
    float rope_attn_factor;
    /* LongRoPE: a context of more positions than this uses the long
     * per-pair divisors (llama.cpp's rule); 0 without */
    int32_t n_ctx_orig;
    int32_t sliding_window; /* keys per query on sliding layers, 0 = none */
    float attn_scale;       /* applied to q before q·k */
    float embed_scale;      /* token embeddings are multiplied by this */
    float final_softcap;    /* c·tanh(logits/c) when > 0 */
    float attn_softcap;     /* attention scores c·tanh(s/c) before the mask when > 0 (Gemma 2) */
    /* each block's attention and FFN output (after any post-norm) is
     * multiplied by it before the residual add (Granite's
     * residual_multiplier); 1 elsewhere, and then no pass is made */
    float residual_scale;
    /* the logits are multiplied by it, before any final softcap (Granite:
     * 1 / logits_scaling); 1 elsewhere */
    float logit_scale;
    /* no RMSNorm before attention and before the FFN (OLMo 2, whose norms
     * sit after each block instead): the blocks read x itself, and the
     * layers' attn_norm and ffn_norm are NULL */
    bool no_pre_norm;
    /* Gemma 4 (0 where a family has none): per-layer embedding width P;
     * experts per MoE layer, chosen per token, and each one's FFN width */
    int32_t n_embd_ple;
    int32_t n_expert, n_expert_used, n_ff_exp;
    /* GLM-4-MoE-Lite (0 elsewhere): the MLA ranks (n_lora_q 0: no query
     * compression), the per-head query/key and value sizes (head_dim =
     * n_embd_head_k_mla = nope + n_rot); shared experts, leading dense
     * layers, and the routed weights' normalisation and scale */
    int32_t n_lora_q, n_lora_kv, n_embd_head_k_mla, n_embd_head_v_mla;
    int32_t n_expert_shared, n_layer_dense_lead;
    bool expert_weights_norm;
    float expert_weights_scale;
};

struct wk_model;
struct wk_context;

/*
 * Loads the model in the GGUF file at path: reads and checks the
 * hyperparameters and every tensor (present, expected shape, a dtype wick
 * computes with). The file is read once into memory backed by transparent
 * huge pages (wk_gguf_open_ex, resident), where decode streams the weights
 * with far fewer TLB misses; WICK_MMAP=1 in the environment maps it
 * instead (zero copy, shared page cache, 4 KiB pages). Read in, a GGUF's
 * Q4_1, Q5_0, Q8_0, Q6_K and Q4_K projection matrices are then repacked in place into
 * the R16 layout (wk_cpu.h; their dtypes become the _R16 ones) where the
 * CPU's kernel table decodes it (AVX-512 VNNI, not WICK_EXACT=1).
 * Errors (message names the file and the field or tensor): those of
 * wk_gguf_open; WK_E_UNSUPPORTED for an unknown architecture or dtype;
 * WK_E_FORMAT for a missing or misshapen tensor or an absurd
 * hyperparameter; WK_E_NOMEM. *out is owned by the caller.
 * path may also be a Hugging Face folder (config.json, model*.safetensors,
 * tokenizer files; Llama and Gemma 3): the safetensors files are mapped and
 * used in place (hf.c has the name mapping and transforms).
 */
enum wk_status wk_model_load(const char *path, struct wk_model **out, struct wk_error *err);
/* As wk_model_load with the placement given: resident reads the weights
 * into huge pages (to run the model), false only maps them, which costs
 * next to nothing (to read its metadata: details, checks at create time);
 * WICK_MMAP is not consulted. */
enum wk_status wk_model_load_ex(const char *path, bool resident, struct wk_model **out,
                                struct wk_error *err);
/*
 * Values (f32) one position takes in layer il's KV cache: K and V of its
 * KV heads (2 · n_head_kv · head_dim); on a multi-head latent attention
 * layer (GLM-4-MoE-Lite) its compressed row, kv_lora_rank + RoPE dims
 * (V is the latent part of the same row); 0 on a layer that reads
 * another layer's cache (Gemma 4 KV sharing). 0 <= il < n_layer.
 */
int64_t wk_model_kv_values(const struct wk_model *m, int32_t il);

/* Frees the model and unmaps the file; m may be NULL. Contexts made from it
 * must be destroyed first. */
void wk_model_destroy(struct wk_model *m);

const struct wk_hparams *wk_model_hparams(const struct wk_model *m);
/* The model's family by its canonical name ("llama", "qwen2", "gemma3",
 * "gemma4", "qwen3", "glm4moelite", "phi3", ...; borrowed, static). */
const char *wk_model_family(const struct wk_model *m);
/* How messages name the family: its label ("GLM-4-MoE-Lite") or else its
 * canonical name (borrowed, static). */
const char *wk_model_family_label(const struct wk_model *m);
/*
 * What the model's blocks compute, in words, for `wick show` ("GQA (8
 * query heads, 2 KV heads, head size 64), RoPE NEOX base 1e+06, sliding
 * window 4096 on 5 of 6 layers, ..."), read off the loaded layers, into
 * out [cap] (NUL-terminated, cut at cap - 1 bytes). Returns the length
 * written. features.c.
 */
size_t wk_model_features(const struct wk_model *m, char *out, size_t cap);
/* The turn format of the model's family (enum wk_chat_format). */
enum wk_chat_format wk_model_chat_format(const struct wk_model *m);
/* The parsed GGUF file (borrowed, lives as long as the model), or NULL
 * for a model loaded from a Hugging Face folder. */
const struct wk_gguf *wk_model_gguf(const struct wk_model *m);
/* The GGUF file or the folder the model came from. */
const char *wk_model_path(const struct wk_model *m);
/* The Hugging Face folder (its tokenizer files are there), or NULL. */
const char *wk_model_hf_dir(const struct wk_model *m);
/* The chat template (the GGUF's tokenizer.chat_template, or
 * tokenizer_config.json's / chat_template.jinja), len bytes, not
 * NUL-terminated for GGUF; NULL when there is none. */
const char *wk_model_chat_template(const struct wk_model *m, size_t *len);
/* Bytes of weights the model maps (the tensor data section). */
uint64_t wk_model_weight_bytes(const struct wk_model *m);
/* Elements of the model's weights (every tensor of the GGUF; every tensor
 * wick uses of a folder), and in *main_dtype the dtype holding most of
 * them (the "quantization" Ollama shows). */
uint64_t wk_model_n_params(const struct wk_model *m, enum wk_dtype *main_dtype);

struct wk_context_params {
    int32_t n_ctx;     /* positions in the KV cache (0: min(4096, trained)) */
    int32_t n_threads; /* 0: number of cores (or the pool's count, below) */
    int32_t n_ubatch;  /* tokens per prefill chunk */
    /* Threads to run on, borrowed: NULL (the default) makes the context
     * start its own n_threads; else the context uses this pool (its
     * thread count; n_threads must then be 0 or equal to it) and never
     * stops it, so the pool must outlive the context. Contexts sharing a
     * pool must not run at the same time (wk_threadpool_run is not
     * reentrant): a speculative decoder's draft runs on its target's
     * pool (wk_context_pool), one after the other, with no second set of
     * spinning threads. */
    struct wk_threadpool *pool;
    /* Tests only (false by default): multi-head latent attention layers
     * also keep full per-head K and V, expanded from the compressed row
     * as it is written, and attend over those, naively in double
     * precision, instead of the absorbed attention over the compressed
     * cache: the reference the compressed cache is checked against. */
    bool mla_uncompressed;
    /* Sequences the context holds at once (0 or 1: one; at most
     * WK_SEQ_MAX), each with its own KV cache of n_ctx positions (a
     * stripe of every layer's cache, so memory grows with it), its own
     * length and rollback; wk_context_decode_batch advances several in
     * one forward. Not yet for MTP assistants or multi-head latent
     * attention (WK_E_UNSUPPORTED). */
    int32_t n_seq_max;
    /* The KV cache's elements: WK_DTYPE_F32 (the default, 0),
     * WK_DTYPE_F16 (half the memory and the bytes attention reads; each
     * K and V value rounded to nearest even, as llama.cpp's default f16
     * cache and Ollama's OLLAMA_KV_CACHE_TYPE=f16 keep them) or
     * WK_DTYPE_Q8_0 (1.0625 bytes an entry: each 32 entries of a slot's
     * key or value vector in a kv head quantized as q8_0, d = max|x|/127
     * kept as f16, codes round(x/d), as llama.cpp's q8_0 cache and
     * Ollama's OLLAMA_KV_CACHE_TYPE=q8_0; every layer's head_dim a
     * multiple of 32). Others: WK_E_INVALID; F16 or Q8_0 with multi-head
     * latent attention, Q8_0 with a head_dim not a multiple of 32:
     * WK_E_UNSUPPORTED. */
    enum wk_dtype kv_type;
};
struct wk_context_params wk_context_params_default(void);

/* The KV cache element type a name gives, as OLLAMA_KV_CACHE_TYPE names
 * them: "f32" (WK_DTYPE_F32), "f16" (WK_DTYPE_F16) or "q8_0"
 * (WK_DTYPE_Q8_0); NULL or "" gives f32, wick's default. False, *out
 * untouched, for any other name (Ollama's "q4_0" among them: not
 * implemented). */
bool wk_kv_type_parse(const char *name, enum wk_dtype *out);
/* The name wk_kv_type_parse takes for a KV cache type ("f32", "f16",
 * "q8_0"); "?" for another. Static storage. */
const char *wk_kv_type_name(enum wk_dtype t);
/* wk_kv_type_parse of WICK_KV_CACHE_TYPE, else OLLAMA_KV_CACHE_TYPE;
 * *value: the text read (NULL when neither is set), for a message. */
bool wk_kv_type_from_env(enum wk_dtype *out, const char **value);

/* Sequences one context may hold. */
#define WK_SEQ_MAX 64

/*
 * Creates a sequence context: thread pool (unless p->pool lends one),
 * scratch arena and KV cache. *out is owned by the caller
 * (wk_context_destroy) and borrows m, which must outlive it.
 * Errors: WK_E_INVALID (n_ctx or n_threads out of range, or n_threads
 * other than the lent pool's), WK_E_NOMEM, those of
 * wk_threadpool_create.
 */
enum wk_status wk_context_create(const struct wk_model *m, const struct wk_context_params *p,
                                 struct wk_context **out, struct wk_error *err);
/* wk_context_create, and where the model cannot hold p->kv_type's cache
 * (WK_E_UNSUPPORTED for a type other than f32: multi-head latent
 * attention, q8_0 with a head dim not a multiple of 32) wk_context_create
 * with an f32 one (wk_context_kv_type says which it got). */
enum wk_status wk_context_create_or_f32(const struct wk_model *m, const struct wk_context_params *p,
                                        struct wk_context **out, struct wk_error *err);
/* Frees the context and stops its threads unless its pool was lent;
 * ctx may be NULL. */
void wk_context_destroy(struct wk_context *ctx);

int32_t wk_context_n_ctx(const struct wk_context *ctx);
/* The KV cache's element type (wk_context_params.kv_type). */
enum wk_dtype wk_context_kv_type(const struct wk_context *ctx);
/* Bytes the KV cache holds: every sequence's K and V of every layer that
 * has its own (rings W + n_ubatch + WK_VERIFY_MAX slots, full layers n_ctx
 * rounded up to whole blocks of values), a Q8_0 cache's scales with them,
 * not the scratch. */
size_t wk_context_kv_bytes(const struct wk_context *ctx);
int32_t wk_context_n_threads(const struct wk_context *ctx);
/* Rows per ubatch (wk_context_params.n_ubatch, at most n_ctx): the prefill chunk. */
int32_t wk_context_n_ubatch(const struct wk_context *ctx);
/*
 * How many of the first common positions a cache shares with a prompt of
 * n tokens (0 <= common <= n - 1) to keep so that prefilling the rest from
 * there, in n_ubatch chunks, computes every row exactly as a prefill of
 * the whole prompt from position 0 does, bit for bit, provided the kept
 * rows were themselves prefilled (not decoded) by an earlier prompt. A
 * row's products depend on its chunk only through the kernels (a chunk of
 * one row runs the one-token kernels, a longer one the GEMM) and its
 * attention block (cut every ATTN_QBLOCK rows from the chunk's first):
 * the answer is common rounded down to a multiple of ATTN_QBLOCK (of
 * n_ubatch where that is not a multiple of ATTN_QBLOCK), so the blocks
 * after it fall where a prefill from 0 puts them,
 * lowered again where the rest would end with a one-row chunk and a
 * prefill from 0 would not, or the reverse. It keeps at most about 2 x ATTN_QBLOCK
 * positions fewer than common. With it, a request repeated on a cache that
 * holds its prompt gets the logits, so the tokens, greedy or seeded, that
 * it gets on an empty cache (wk_session and wk_slots cut a prefix so
 * where it was prefilled, and keep one that reaches into decoded tokens
 * whole, since no cut makes those rows what a prefill computes). On a
 * mixture of experts the expert products of a row also depend on how many
 * rows of its chunk chose the expert, so there this holds only where
 * those counts agree.
 */
int32_t wk_context_reusable(const struct wk_context *ctx, int64_t n, int32_t common);
/* The pool the context runs on (borrowed: lives as long as the context,
 * or as the pool lent to it), to lend to another context through
 * wk_context_params.pool. */
struct wk_threadpool *wk_context_pool(const struct wk_context *ctx);
/* Positions currently in the KV cache. */
int32_t wk_context_n_past(const struct wk_context *ctx);
/*
 * Forgets cached positions >= n_keep (0 <= n_keep <= n_past, else a
 * programmer error: WK_ASSERT), so the next decode continues from position
 * n_keep; returns the positions actually kept, n_keep or 0. 0 means the
 * ring of a sliding-window layer (window W, S = min(n_ctx, W + n_ubatch +
 * WK_VERIFY_MAX) slots) no longer holds all of positions n_keep - W + 1 .. n_keep - 1, which
 * the token at n_keep attends to: the cache is then empty and the whole
 * sequence must be decoded again (llama.cpp does the same for SWA caches).
 * Exactly: with n_hi the furthest position + 1 written since the cache
 * was last empty (n_past, or more after a truncate or a cancelled
 * decode), n_keep is kept when n_keep == 0, when
 * n_hi <= S (the rings have not wrapped), or when n_hi - n_keep <= S - W + 1
 * (= n_ubatch + WK_VERIFY_MAX + 1 when the ring is full size): a
 * speculative step's rollback always succeeds, and so does a rollback of
 * up to n_ubatch + 1 positions after one. Models without
 * sliding-window layers always keep n_keep.
 */
int32_t wk_context_truncate(struct wk_context *ctx, int32_t n_keep);

/*
 * Appends n_tokens tokens at positions n_past .. n_past+n_tokens-1 and, if
 * logits is not NULL, writes the last token's logits [n_vocab] f32.
 * Errors: WK_E_RANGE when the tokens do not fit in n_ctx (nothing is
 * appended), WK_E_INVALID for a token id outside the vocabulary or
 * n_tokens < 1, WK_E_CANCELLED when cancel (may be NULL) becomes true
 * (checked between layers; the chunks already done stay cached).
 */
enum wk_status wk_context_decode(struct wk_context *ctx, const int32_t *tokens, int32_t n_tokens,
                                 float *logits, const volatile bool *cancel, struct wk_error *err);
/* As wk_context_decode, with every token's logits: logits [n_tokens][n_vocab]
 * f32 (not NULL). For measurements over a text (bench/kl). */
enum wk_status wk_context_decode_all(struct wk_context *ctx, const int32_t *tokens, int32_t n_tokens,
                                     float *logits, const volatile bool *cancel, struct wk_error *err);

/*
 * One forward's input over several sequences (llama.cpp's llama_batch):
 * row i is token tokens[i] at position pos[i] of sequence seq_id[i].
 * A sequence's rows continue it: in the order they come, their positions
 * are its length, its length + 1, ... (rows of different sequences may
 * interleave). logits[i] asks for row i's logits (NULL: every row's).
 * bidirectional: each row attends to every position of its sequence up to
 * the sequence's last row in the batch, not only to those up to its own
 * (an encoder's mask, for embeddings); the batch must then fit in one
 * ubatch (n_tokens <= n_ubatch). per_token: every row computes as a
 * one-token wk_context_decode of its sequence does, bit for bit, even
 * where a sequence has several rows (what wk_context_verify does for one
 * sequence: speculative rounds of several sequences at once). All arrays
 * [n_tokens], borrowed.
 */
struct wk_batch {
    int32_t n_tokens;
    const int32_t *tokens, *pos, *seq_id;
    const bool *logits;
    bool bidirectional;
    bool per_token;
};

/*
 * Runs one batch (above), in ubatches of n_ubatch rows, and writes the
 * logits of the rows that ask for them to logits [n_wanted][n_vocab] f32,
 * in row order. Each sequence's rows get the logits they get when that
 * sequence is decoded alone with the same chunking (wk_context_decode_all
 * of its rows; bit for bit on the CPU: attention blocks never span two
 * sequences, and each row's matmul products do not depend on the other
 * rows); a batch with at most one row per sequence computes every row as a
 * one-token wk_context_decode does, bit for bit, so parallel decode steps
 * equal single ones.
 * Errors: WK_E_INVALID (a sequence id outside 0..n_seq-1, a token outside
 * the vocabulary, a position that does not continue its sequence, an
 * empty batch, a bidirectional batch over n_ubatch, logits wanted and
 * logits NULL), WK_E_RANGE (a sequence would outgrow n_ctx; nothing is
 * run), WK_E_CANCELLED (as wk_context_decode: finished ubatches stay).
 */
enum wk_status wk_context_decode_batch(struct wk_context *ctx, const struct wk_batch *b, float *logits,
                                       const volatile bool *cancel, struct wk_error *err);

/*
 * wk_context_decode_batch, but instead of logits writes the final-normed
 * hidden states (wk_context_decode_hidden's rows) of the rows b->logits
 * asks for (NULL: every row) to hidden [n_wanted][n_embd] f32, in row
 * order; the output projection is skipped. Each sequence's rows get what
 * wk_context_decode_hidden gives for them alone with the same chunking,
 * under wk_context_decode_batch's conditions (a sequence with several rows
 * computes them as a multi-row chunk does; a batch of one row per
 * sequence as one-token steps). For batched embeddings from a decoder
 * model (wk_embed_decoder_many). Errors as wk_context_decode_batch, and
 * WK_E_INVALID for a NULL hidden.
 */
enum wk_status wk_context_decode_batch_hidden(struct wk_context *ctx, const struct wk_batch *b, float *hidden,
                                              const volatile bool *cancel, struct wk_error *err);

/*
 * Appends n_tokens tokens to sequence 0 as wk_context_decode does (the
 * same n_ubatch chunks, so the same rows), but instead of logits writes
 * final-normed hidden states (what wk_context_hidden gives, the vector the
 * output projection would unembed; llama.cpp's t_embd, the rows its
 * embedding pooling reads): every row's to hidden [n_tokens][n_embd] f32
 * when all_rows, else the last row's to hidden [n_embd]. hidden is
 * borrowed for the call. The output projection is skipped. For
 * embeddings from a decoder model (wk_embed_decoder).
 * Errors as wk_context_decode: WK_E_RANGE (nothing appended),
 * WK_E_INVALID, WK_E_CANCELLED (finished chunks stay cached).
 * Not thread-safe on one context.
 */
enum wk_status wk_context_decode_hidden(struct wk_context *ctx, const int32_t *tokens, int32_t n_tokens, bool all_rows,
                                        float *hidden, const volatile bool *cancel, struct wk_error *err);

/* Sequences the context holds (wk_context_params.n_seq_max). */
int32_t wk_context_n_seq(const struct wk_context *ctx);
/* Positions sequence seq (0 <= seq < n_seq, else WK_ASSERT) has cached. */
int32_t wk_context_seq_n_past(const struct wk_context *ctx, int32_t seq);
/* wk_context_truncate for sequence seq; the other sequences are untouched. */
int32_t wk_context_seq_truncate(struct wk_context *ctx, int32_t seq, int32_t n_keep);
/*
 * Makes sequence dst hold sequence src's first n_keep positions (0 <=
 * n_keep <= src's length; a copy of the cached K and V, so a shared
 * prefix, a system prompt, is computed once), replacing what dst held;
 * returns the positions dst keeps, as wk_context_seq_truncate (0 when a
 * ring no longer holds what position n_keep needs).
 */
int32_t wk_context_seq_copy(struct wk_context *ctx, int32_t src, int32_t dst, int32_t n_keep);

/* Tokens one wk_context_verify call may take. */
#define WK_VERIFY_MAX 16

/*
 * Appends n_tokens (1..WK_VERIFY_MAX) tokens exactly as n_tokens successive
 * wk_context_decode calls of one token each would, bit for bit (each token
 * through the single-token kernels and its own attention window), but in
 * one forward, so each weight row is read from memory once for all of
 * them; writes every token's logits to logits [n_tokens][n_vocab] f32
 * (not NULL, borrowed for the call). For speculative decoding's
 * verification of drafted tokens: greedy output with a draft then equals
 * greedy output without one. Bit-identity holds for the same context
 * (thread count, kernels) and the same cache contents.
 * Errors as wk_context_decode (WK_E_INVALID also for n_tokens >
 * WK_VERIFY_MAX); on WK_E_CANCELLED the tokens of finished chunks (of
 * n_ubatch) stay cached. Not thread-safe on one context.
 */
enum wk_status wk_context_verify(struct wk_context *ctx, const int32_t *tokens, int32_t n_tokens,
                                 float *logits, const volatile bool *cancel, struct wk_error *err);

/*
 * The final-normed hidden state (the vector the output projection
 * unembeds) of row `row` of the last forward that wrote logits: [n_embd]
 * f32, borrowed until the next call on ctx. Rows as the logits: the last
 * token's only (row 0) after wk_context_decode, every token's after
 * wk_context_verify / decode_all (of its last ubatch), the wanted rows of
 * the last ubatch after wk_context_decode_batch. A row out of range is a programmer
 * error (WK_ASSERT). For an MTP draft's conditioning (§5.3).
 */
const float *wk_context_hidden(const struct wk_context *ctx, int32_t row);

/* True for a Gemma 4 MTP assistant (a "draft" that reads its target's
 * cache), whose steps go through wk_context_mtp_step, not decode. */
bool wk_model_is_mtp(const struct wk_model *m);
/*
 * Checks that assistant a fits target t (architectures.md §5.1-5.2): the
 * backbone hidden size equals t's n_embd, the vocabularies agree, t has a
 * cache of each layer kind a's layers read, with the same head dims and a
 * head count that divides a's, and the same sliding window.
 * Errors: WK_E_INVALID naming the mismatch.
 */
enum wk_status wk_model_check_mtp(const struct wk_model *a, const struct wk_model *t, struct wk_error *err);

/*
 * One draft step of a Gemma 4 MTP assistant (architectures.md §5.3-5.4;
 * HF Gemma4AssistantForCausalLM with transformers'
 * SinglePositionMultiTokenCandidateGenerator): x = pre_projection of
 * [target embedding of token · sqrt(E_t); cond], the assistant's layers
 * with queries at position target->n_past (the token's, not yet cached)
 * attending, with scale 1, to the target's cache of their kind (the last
 * layer of that kind keeping one) up to position n_past - 1, the last W + 1
 * positions on sliding layers (transformers' mask); out = RMSNorm(h); cond_out [E_t] =
 * post_projection(out); logits [n_vocab] = out · E_assistantᵀ, or with
 * ordered embeddings the tokens of the top centroids only, the others set
 * to one below the smallest of those. Nothing is written to any cache.
 * a is a context of the assistant (same pool as target's; n_ctx >= the
 * target's n_past); cond is the target's wk_context_hidden row that
 * predicted token (step 0) or the previous step's cond_out.
 * Errors: WK_E_INVALID (a is not target's assistant, token out of
 * range), WK_E_RANGE (target empty or longer than a's n_ctx).
 */
enum wk_status wk_context_mtp_step(struct wk_context *a, const struct wk_context *target, int32_t token,
                                   const float *cond, float *logits, float *cond_out, struct wk_error *err);

#endif /* WK_MODEL_H */
