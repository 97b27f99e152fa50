/*
 * bert_internal.h - the BERT encoder's state, shared by bert.c (weights,
 * forward) and embed.c (the folder, tokenization, pooling).
 */
#ifndef WK_BERT_INTERNAL_H
#define WK_BERT_INTERNAL_H

#include "wk_embed.h"

#include "../cpu/wk_cpu.h"
#include "../io/wk_safetensors.h"

/* One encoder block's weights (f32 views into the safetensors mapping;
 * matrices ne = {n_in, n_out}). */
struct wk_bert_layer {
    struct wk_tensor wq, bq, wk, bk, wv, bv, wo, bo, ln1_g, ln1_b;
    struct wk_tensor w1, b1, w2, b2, ln2_g, ln2_b;
    /* wq, wk, wv, wo, w1, w2 packed for the GEMM once, before the first
     * forward (gemm_f32_pack), or all NULL (no such kernel, weights not
     * F32, not yet): in the model's packed_region */
    float *packed[6];
    /* or, where the table has gemm_q14 (AVX-512 VNNI, AVX2; not
     * WICK_EXACT) and every input width is a multiple of WK_Q14_BLOCK,
     * the same six in the Q14 packing (wk_q14_pack: panels, row scales),
     * all or none; packed[] then stays NULL */
    int16_t *q14w[6];
    float *q14s[6];
};

struct wk_bert {
    char path[4096];    /* model.safetensors, or the GGUF file */
    const char *prefix; /* "" or "bert." */
    struct wk_safetensors *st; /* the folder's weights, or NULL */
    struct wk_gguf *gguf;      /* or llama.cpp's "bert" GGUF (set before wk__bert_load_weights) */
    float *pos_f32, *type_f32; /* the position and type tables dequantized, when not F32 (else NULL) */
    int32_t n_vocab, n_embd, n_layer, n_head, head_dim, n_ff, n_pos, n_type;
    int32_t max_tokens; /* most rows of one sequence */
    float ln_eps;
    struct wk_tensor tok_embd, pos_embd, type_embd, emb_ln_g, emb_ln_b;
    struct wk_bert_layer *layers; /* [n_layer] */
    const struct wk_cpu_kernels *kernels;
    bool pack_tried; /* pack_layers ran (the layers' packed[] are set, or stay NULL) */
    void *packed_region;  /* every layer's packed[] or q14w[] (wk_huge_alloc: 2 MiB pages), or NULL: owned */
    size_t packed_bytes;
    float *buf; /* forward buffers (64-byte aligned), for buf_rows rows on buf_threads threads */
    int64_t buf_rows;
    int buf_threads;
};

/* Maps b->path (unless b->gguf is open) and finds every tensor for the
 * hyperparameters already set (a GGUF's by llama.cpp's names).
 * Errors: those of wk_safetensors_open, WK_E_FORMAT (a tensor missing,
 * misshapen or misaligned), WK_E_UNSUPPORTED (a folder's tensor not F32,
 * a GGUF's norm or bias not F32), WK_E_NOMEM. */
enum wk_status wk__bert_load_weights(struct wk_bert *b, struct wk_error *err);
void wk__bert_deinit(struct wk_bert *b);

/*
 * One forward over n_seq sequences whose rows are concatenated: sequence
 * s is ids[s] [seq_start[s + 1] - seq_start[s]] (checked by the caller:
 * 1..max_tokens ids < n_vocab). *hidden is set to the last layer's
 * [seq_start[n_seq], n_embd] f32 rows (borrowed until the next forward).
 * Errors: WK_E_NOMEM, WK_E_CANCELLED.
 */
enum wk_status wk__bert_forward(struct wk_bert *b, struct wk_threadpool *pool, int32_t n_seq,
                                const int32_t *const *ids, const int32_t *seq_start, float **hidden,
                                const volatile bool *cancel);

#endif
