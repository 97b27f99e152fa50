/*
 * context_internal.h - the context's state, shared by context.c (the
 * forward pass), context_moe.c (the expert paths) and context_mla.c
 * (multi-head latent attention). See context.c for the data flow and the
 * KV cache's layout.
 */
#ifndef WK_CONTEXT_INTERNAL_H
#define WK_CONTEXT_INTERNAL_H

#include "backend.h"
#include "model_internal.h"

/* One layer's KV cache (views into the context's two allocations). */
struct kv_layer {
    /* K: [n_head_kv][n_slots][D], each kv head's keys a run. V
     * transposed: [n_head_kv][D][n_slots], a row per dimension, or on a
     * layer without a window in blocks of v_blk slots ([n_slots / v_blk]
     * [n_head_kv·D][v_blk]), so both attention products are GEMMs over
     * rows: scores = K_rows · q, out = Vᵀ_rows · p (struct wk_attn_args).
     * A multi-head latent attention layer keeps only K: [n_slots]
     * [kv_lora + n_rot], the compressed row (latent, then RoPE key),
     * whose latent part is also V; v is NULL. Elements of type: F32, F16
     * or Q8_0 (wk_context_params.kv_type; never on an MLA layer), a Q8_0
     * cache's scales in ks, vs (backend.h, struct wk_attn_args). */
    void *k, *v;
    wk_f16 *ks, *vs;
    enum wk_dtype type;
    int32_t v_blk; /* values in blocks of this many slots (wk_attn_args.v_blk), or 0 */
    /* with wk_context_params.mla_uncompressed, an MLA layer's expanded
     * K [n_slots][n_head][nope + n_rot] and V [n_slots][n_head][v] */
    float *k_full, *v_full;
    int32_t n_slots; /* n_ctx (rounded up to whole value blocks), or the ring's S on a sliding-window layer */
};

struct wk_context {
    const struct wk_model *m;
    /* the operations of the forward pass (backend.h): be points at be_cpu */
    struct wk_backend *be;
    struct wk_backend_cpu be_cpu;
    const struct wk_cpu_kernels *k;
    struct wk_threadpool *pool;
    bool owns_pool; /* false when wk_context_params.pool lent it */
    int32_t n_ctx, n_ubatch, n_threads;
    /* Sequences: each has its own stripe of every layer's cache (n_slots
     * rows of K, and V's [HK][n_slots] block, at seq · n_slots · HK
     * floats), its own length and its own rings. */
    int32_t n_seq;
    int32_t *n_past;  /* [n_seq] positions cached */
    int32_t n_ring;   /* slots of the ring layers (S), 0 when there are none */
    int32_t *ring_lo; /* [n_seq] first position every ring still holds */
    int32_t *seq_hi;  /* [n_seq] the current chunk's last position of each sequence in it */
    void *k_cache, *v_cache;  /* every layer's K, and V, in one allocation each */
    wk_f16 *k_scales, *v_scales; /* a Q8_0 cache's scales (one a group of 32), else NULL */
    enum wk_dtype kv_type;    /* their elements: WK_DTYPE_F32, WK_DTYPE_F16 or WK_DTYPE_Q8_0 */
    size_t kv_bytes;          /* their sizes together */
    float *mla_full_cache;    /* the MLA layers' expanded K and V (mla_uncompressed), or NULL */
    struct kv_layer *kv;      /* [n_layer] */
    int32_t first_shared;     /* first layer reading another's cache (Gemma 4), else n_layer */
    int32_t n_hidden;         /* rows in xn after the last forward with logits */
    int32_t head_dim_max;     /* the largest layer head dim */
    struct wk_arena arena;
    /* scratch views, [n_ubatch, ...] each */
    float *x, *xn, *q, *kx, *vx, *att, *o, *gate, *up, *scores, *pv, *rope_cs, *mm_scratch;
    /* per-layer embeddings [n_ubatch][n_layer·P] and their gate [n_ubatch][P] (Gemma 4) */
    float *ple, *ple_g;
    /* mixture of experts: router logits [n_ubatch][n_expert], the chosen
     * experts' weights [n_ubatch][k], the experts' input, gathered input,
     * gate, up, output and their sum */
    float *moe_logits, *moe_w, *moe_u, *moe_in, *moe_gate, *moe_up, *moe_y, *moe_sum;
    int32_t *moe_idx, *moe_rows; /* [n_ubatch][k] chosen experts; a gathered expert's token rows */
    bool moe_naive; /* WICK_MOE_NAIVE=1 at creation: each token's experts apart (bench/moe-prefill) */
    /* multi-head latent attention: the compressed query [n_ubatch][q_lora],
     * the cache rows being written [n_ubatch][kv_lora + n_rot], the
     * absorbed queries [n_ubatch][n_head][kv_lora + n_rot], the attention
     * outputs in the latent [n_head][n_ubatch][kv_lora], and one head's
     * input and output rows of the absorption matmuls [n_ubatch][...] */
    float *mla_qa, *mla_ckv, *mla_qabs, *mla_lat, *mla_tin, *mla_tout;
    float *kpack; /* a prefill's keys packed (wk_backend_cpu.kpack) */
    float *cvt;   /* an F16 cache's rows as floats (wk_backend_cpu.cvt), or unused */
    bool mla_uncompressed;
    /* an MTP assistant's input [2·E_target], centroid logits [n_centroids],
     * candidate tokens and their logits [n_vocab] */
    float *mtp_in, *mtp_centroid_logits, *mtp_cand_logits;
    int32_t *mtp_cand;
    int32_t rope_shift;   /* RoPE at pos + rope_shift (1 for an MTP draft step, else 0) */
    int32_t window_extra; /* keys a sliding layer sees beyond W (1 for an MTP draft step) */
    /* the chunk's rows: position, sequence, logits wanted [n_ubatch];
     * its attention blocks (runs of up to ATTN_QBLOCK rows of one
     * sequence at consecutive positions): first row and row count
     * [n_ubatch] each; bidirectional: each row sees its sequence's keys up
     * to the last position of its run (encoders), not only its own */
    int32_t *pos, *seq;
    bool *want;
    int32_t *blk_t0, *blk_nq, n_blk;
    bool bidirectional;
};

/* A layer's cache as the backend's kv operations take it. */
static inline struct wk_kv_cache kv_cache(const struct kv_layer *kv)
{
    return (struct wk_kv_cache){.k = kv->k, .v = kv->v, .ks = kv->ks, .vs = kv->vs, .type = kv->type,
                                .n_slots = kv->n_slots, .v_blk = kv->v_blk};
}

/* Floats from a layer's cache to sequence s's stripe in it (K and V alike). */
static inline int64_t wk__kv_seq_offset(const struct kv_layer *kv, int64_t row_floats, int32_t s)
{
    return (int64_t)s * kv->n_slots * row_floats;
}

/* y [n][width] = RMSNorm(x [n][width]) · g (g NULL: gain 1), a row at a
 * time, through the context's backend (backend.h rms_norm). */
void wk__norm_rows(struct wk_context *c, int32_t n, int64_t width, const float *x, const struct wk_tensor *g, float eps,
                   float *y);
/* Gemma 4's expert path for the chunk's n rows, added to c->o (context_moe.c). */
void wk__moe_ffn(struct wk_context *c, const struct wk_layer *l, int32_t n, unsigned mm);
/* GLM-4-MoE-Lite's sigmoid-routed experts for the chunk's n rows, added to c->o (context_moe.c). */
void wk__moe_ffn_sigmoid(struct wk_context *c, const struct wk_layer *l, int32_t n, unsigned mm);
/* A multi-head latent attention layer over the chunk's n rows: c->att from c->xn, the cache
 * row of each position written to kv (context_mla.c). */
void wk__mla_attention(struct wk_context *c, const struct wk_layer *l, const struct kv_layer *kv, int32_t n,
                       const float *cs, unsigned mm, bool per_token);

#endif
