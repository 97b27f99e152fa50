/*
 * backend.h - the operations the forward pass runs, behind a table
 * (struct wk_backend_ops), so that the model graph (context.c,
 * context_moe.c, context_mla.c) says what to compute and a backend says
 * how and where. The CPU backend (backend_cpu.c) runs them on the
 * context's thread pool with the kernels of src/cpu.
 *
 * Buffers. Every float pointer an operation takes is the backend's
 * memory: for the CPU, host memory from the context's arena and KV
 * allocations. A device backend (say CUDA, as src/cuda/ (.cu files) beside this
 * one) would allocate the context's activations and KV cache in device
 * memory through the same context code (wk_context_create would ask the
 * backend for them: not in the table yet, the CPU's come from the arena),
 * upload the weights once (struct wk_backend_type's upload, which on the
 * CPU repacks matrices into its R16 layout), and
 * keep these calls asynchronous on its stream until synchronize, which
 * the context calls before it hands logits or hidden rows to the host. A decode step is then a fixed
 * sequence of these calls with fixed shapes (n = number of sequences), so
 * a device backend can capture it once as a graph and replay it per token,
 * with only the positions, sequence ids and token ids uploaded per step.
 * Shapes are in rows (tokens) times features, row-major, f32.
 *
 * What the table does not cover yet: Gemma 4's per-layer input mix
 * (ple_inputs in context.c, host loops over the chunk's rows), an MTP
 * assistant's step (wk_context_mtp_step: its centroid lookup and candidate
 * dots on the host), the uncompressed MLA reference path (tests only), and
 * the allocation of the context's activations and KV cache (the CPU's
 * come from the context's arena). A device backend needs those before it
 * runs Gemma 4 or an MTP draft; every other family (Llama, Qwen 2 and 3,
 * Gemma 3, GLM-4-MoE-Lite with its MoE and MLA) runs through the table.
 */
#ifndef WK_BACKEND_H
#define WK_BACKEND_H

#include "../base/wk_base.h"
#include "../cpu/wk_cpu.h"

/* One layer's attention over a ubatch (attention op): rows t < n_rows of
 * sequences seq[t] at positions pos[t], their queries in q, the layer's
 * cache k / v holding every sequence's stripe (K: [n_seq][n_slots][HK]; V
 * transposed: [n_seq][HK][n_slots]; position p in slot p % n_slots), out
 * written. Query blocks: blk_t0 / blk_nq, runs of one sequence's rows at
 * consecutive positions (never two sequences in one). */
struct wk_attn_args {
    const float *q; /* [n_rows][n_head·head_dim], RoPE applied, scaled */
    float *out;     /* [n_rows][n_head·head_dim] */
    /* a layer's cache, n_slots slots a sequence: sequence s's block of
     * n_slots·n_head_kv·head_dim floats at s·n_slots·n_head_kv·head_dim in
     * each; in k, kv head g's keys contiguous ([n_head_kv][n_slots][head_dim]
     * within the block: slot j's key at g·n_slots·head_dim + j·head_dim),
     * so that an attention head reads its keys as one run, not as 1 in
     * n_head_kv pieces of a row (3x slower from memory: SmolLM2's 3 kv
     * heads); in v, the values transposed ([n_head_kv·head_dim][n_slots]:
     * slot j's entry i at i·n_slots + j), or with v_blk > 0 in blocks of
     * v_blk slots ([n_slots / v_blk][n_head_kv·head_dim][v_blk]: slot j's
     * entry i at (j / v_blk)·hk·v_blk + i·v_blk + j % v_blk, so that a kv
     * head's value rows for the slots in use are runs of head_dim·v_blk
     * elements however many slots the sequence holds: wk_kv_v_index).
     * Offsets count elements of kv_type: WK_DTYPE_F32, WK_DTYPE_F16, or
     * WK_DTYPE_Q8_0 (wk_context_params.kv_type): int8 codes, each of q8_0's
     * groups (32 consecutive entries of one slot's key or value vector in
     * one kv head) with its f16 scale d in ks / vs (the code times d, as
     * ggml dequantizes q8_0; wk_kv_ks_index, wk_kv_vs_index). The products
     * read an F16 or Q8_0 cache's entries as the floats they convert to
     * exactly, so it gives the bits an F32 cache holding those values would */
    const void *k, *v;
    const wk_f16 *ks, *vs; /* Q8_0: the scales; else NULL */
    enum wk_dtype kv_type;
    int64_t n_slots;
    int32_t v_blk; /* 0 or WK_KV_VBLK; WK_KV_VBLK only where every block's keys start at slot 0 (no window) */
    int32_t n_head, n_head_kv, head_dim;
    int32_t n_rows;
    const int32_t *pos, *seq;
    const int32_t *blk_t0, *blk_nq;
    int32_t n_blk;
    int32_t window;           /* keys a query sees on a sliding layer (W, plus one for an MTP step); 0: all */
    bool bidirectional;       /* each row sees its sequence up to seq_hi[its sequence] */
    const int32_t *seq_hi;    /* [n_seq]: a sequence's last position in the ubatch */
    bool per_token;           /* blocks of one row each (verify): a decode step's products */
    float softcap;            /* > 0: scores c·tanh(s/c) before the mask (Gemma 2) */
    /* [n_head] or NULL: head h's softmax is exp(s_j) / (Σ_j exp(s_j) +
     * exp(sinks[h])), the sink a logit with no value (gpt-oss) */
    const float *sinks;
};

/* Slots in a block of a layer's values where they are stored in blocks
 * (wk_attn_args.v_blk): a kv head's block of 64 value rows is 16 KiB of
 * f32, 8 KiB of f16, read as one run. A multiple of 16 (an AVX-512 step of
 * gemm_rows stays in one block) and a power of two. */
#define WK_KV_VBLK 64

/* Bytes of one element of a KV cache of type t (F32: 4, F16: 2, Q8_0: 1,
 * its code; the scales, one f16 a group of WK_KV_Q8_GROUP, apart). */
static inline int64_t wk_kv_elem_bytes(enum wk_dtype t)
{
    return t == WK_DTYPE_F16 ? 2 : t == WK_DTYPE_Q8_0 ? 1 : 4;
}

/* Entries a Q8_0 cache's scale covers (q8_0's block: 32 consecutive
 * entries of one slot's key or value vector in one kv head). */
#define WK_KV_Q8_GROUP 32

/* The scale of a Q8_0 cache's key element e (the K layout's offset). */
static inline int64_t wk_kv_ks_index(int64_t e) { return e / WK_KV_Q8_GROUP; }

/* The scale of a Q8_0 cache's value entry i of sequence seq's slot
 * (hk = n_head_kv·head_dim entries a slot, n_slots slots a sequence):
 * [n_seq][hk / 32][n_slots], a group's scales over the slots one run. */
static inline int64_t wk_kv_vs_index(int64_t n_slots, int64_t hk, int32_t seq, int64_t i, int64_t slot)
{
    return ((int64_t)seq * (hk / WK_KV_Q8_GROUP) + i / WK_KV_Q8_GROUP) * n_slots + slot;
}

/* A layer's KV cache as the kv operations see it (struct wk_attn_args
 * has the layout): K and V of type (F32, F16, or Q8_0 with the scales ks,
 * vs), n_slots slots a sequence, the values in blocks of v_blk slots (0:
 * not; then n_slots is a multiple of v_blk). */
struct wk_kv_cache {
    void *k, *v;
    wk_f16 *ks, *vs;
    enum wk_dtype type;
    int64_t n_slots;
    int32_t v_blk;
};

/* The element of a layer's V cache (n_slots slots a sequence, value
 * blocks of v_blk slots or 0, hk = n_head_kv·head_dim) holding entry i of
 * sequence seq's slot. */
static inline int64_t wk_kv_v_index(int64_t n_slots, int32_t v_blk, int64_t hk, int32_t seq, int64_t i, int64_t slot)
{
    const int64_t so = (int64_t)seq * n_slots * hk;
    if (!v_blk) return so + i * n_slots + slot;
    return so + slot / v_blk * hk * v_blk + i * v_blk + slot % v_blk;
}

struct wk_moe_block;

/* A mixture of experts' routing (moe_route op): for each row t < n, the
 * router's logits [n][n_expert] into its k choices idx [n][k] and their
 * weights w [n][k]. softmax (Gemma 4): softmax over the experts, the top
 * k (ties to the lower index), renormalised to sum 1, times
 * expert_scale[e] (F32 [n_expert]). Otherwise (GLM-4-MoE-Lite, a
 * DeepSeek-V3-style router, moe.c): sigmoid scores, top k by score +
 * sel_bias (F32 [n_expert] or NULL), the chosen scores normalised when
 * norm_weights and times weights_scale. logits may be overwritten. */
struct wk_moe_route_args {
    float *logits;
    int32_t n, n_expert, k;
    bool softmax;
    const struct wk_tensor *expert_scale, *sel_bias;
    bool norm_weights;
    float weights_scale;
    /* topk_softmax (gpt-oss, with softmax false): the k largest logits
     * (ties to the lower index), softmax over those k; nothing else */
    bool topk_softmax;
    int32_t *idx;
    float *w;
};

/* The routed experts (moe_experts op): sum [n][E] = Σ_j w[t][j] ·
 * down_e(act(gate_e · u_t) ⊙ up_e · u_t) over each row's choices e =
 * idx[t][j], in expert order, for the experts of blk (model_internal.h:
 * 3-D tensors or per-expert tables; with blk's swiglu_limit > 0 the
 * biases gate_b, up_b added before and down_b after the clamped SwiGLU
 * instead of glu); rows grouped by expert so each
 * chosen expert's weights are read once (per_token_order: each row's
 * experts apart instead, for bench/moe-prefill). Scratch (the backend's
 * memory): in, y [n·k][E], gate, up [n·k][F_exp], rows [n·k]. */
struct wk_moe_experts_args {
    const struct wk_moe_block *blk;
    const float *u;
    const int32_t *idx;
    const float *w;
    int32_t n, n_expert, k;
    int64_t n_embd, n_ff_exp;
    enum wk_glu glu;
    unsigned flags; /* 0 or WK_MATMUL_PER_TOKEN */
    bool per_token_order;
    float *sum;
    float *in, *y, *gate, *up;
    int32_t *rows;
};

struct wk_mla_block;

/* A multi-head latent attention layer's attention over a ubatch of one
 * sequence (mla_prepare, mla_attention ops; architectures.md §6.4 steps
 * 3-6): q [n][n_head][nope + n_rot] and the kv_a rows ckv [n][kv_lora +
 * n_rot] as projected; mla_prepare RMSNorms each row's latent (eps, the
 * block's kv_a_norm), applies RoPE (NORM pairs, angles cs [n][n_rot]) to
 * its k_pe and to each head's q_pe, and writes the row at slot pos % n_slots
 * of the layer's cache kc [n_slots][kv_lora + n_rot]; mla_attention forms
 * the absorbed queries [W_UK_hᵀ q_nope ; q_pe] · attn_scale, attends
 * causally over the cached rows 0 .. pos in the latent, and expands each
 * head's latent output by W_UV_h into out [n][n_head·v]. Scratch (the
 * backend's memory): qabs [n][n_head][kv_lora + n_rot], lat
 * [n_head][n][kv_lora], tin and tout rows of the per-head products. */
struct wk_mla_args {
    const struct wk_mla_block *blk;
    int32_t n, n_head, n_rot;
    float *q, *ckv;
    const float *cs;
    const int32_t *pos;
    float *kc;
    int64_t n_slots;
    float attn_scale, eps;
    float *qabs, *lat, *tin, *tout, *out;
    bool per_token; /* blocks of one row each (verify) */
    unsigned flags; /* 0 or WK_MATMUL_PER_TOKEN */
};

/* A backend's state for one context (the CPU's below); a device backend
 * embeds this as its first member. */
struct wk_backend {
    const struct wk_backend_ops *ops;
};

struct wk_backend_ops {
    const char *name;
    /* y [n][w->ne[0]] = rows ids[0..n) of w (any dtype), times scale */
    void (*get_rows)(struct wk_backend *b, const struct wk_tensor *w, const int32_t *ids, int32_t n, float scale,
                     float *y);
    /* y [n][w->ne[1]] = x [n][w->ne[0]] · wᵀ; flags: 0 or WK_MATMUL_PER_TOKEN (wk_cpu.h) */
    void (*matmul)(struct wk_backend *b, const struct wk_tensor *w, const float *x, float *y, int32_t n,
                   unsigned flags);
    /* ys[i] = x · ws[i]ᵀ for n_w (<= WK_MATMUL_MAX_PARTS) weights sharing the input, in one dispatch */
    void (*matmul_many)(struct wk_backend *b, int n_w, const struct wk_tensor *const *ws, float *const *ys,
                        const float *x, int32_t n, unsigned flags);
    /* y = act(x · gateᵀ) ⊙ (x · upᵀ), y_up scratch of y's shape */
    void (*matmul_glu)(struct wk_backend *b, const struct wk_tensor *gate, const struct wk_tensor *up, const float *x,
                       float *y, float *y_up, int32_t n, enum wk_glu glu, unsigned flags);
    /* y [n][width] = RMSNorm(x [n][width]) · g (g NULL: gain 1); y may be x */
    void (*rms_norm)(struct wk_backend *b, int32_t n, int64_t width, const float *x, const struct wk_tensor *g,
                     float eps, float *y);
    /* y [n][d] += bias [d] on every row (bias an F32 tensor of d values) */
    void (*add_bias)(struct wk_backend *b, int32_t n, int64_t d, float *y, const struct wk_tensor *bias);
    /* y [n] += x [n] (the residual) */
    void (*add)(struct wk_backend *b, int64_t n, float *y, const float *x);
    /* y [n] *= s */
    void (*scale)(struct wk_backend *b, int64_t n, float *y, float s);
    /* y [n] = x [n] (may overlap: a move) */
    void (*copy)(struct wk_backend *b, int64_t n, float *y, const float *x);
    /* y [n] = 0 */
    void (*zero)(struct wk_backend *b, int64_t n, float *y);
    /* y [n] = cap · tanh(y / cap) (a final logit softcap) */
    void (*softcap)(struct wk_backend *b, int64_t n, float *y, float cap);
    /* g [t·ldg + i] = act(g [t·ldg + i]) · u [t·ldu + i] for rows t < n, i < width */
    void (*glu_rows)(struct wk_backend *b, int32_t n, int64_t width, float *g, int64_t ldg, const float *u,
                     int64_t ldu, enum wk_glu glu);
    /* The RoPE angles of positions pos[t] + shift: cs [n][n_rot] (cos of
     * the n_rot/2 pairs, then sin; wk_rope_cos_sin), for base, frequency
     * scale and per-pair divisors freqs (F32 [n_rot/2] or NULL), each cos
     * and sin multiplied by attn_factor (hp.rope_attn_factor; 1: none) */
    void (*rope_table)(struct wk_backend *b, int32_t n, const int32_t *pos, int32_t shift, int n_rot, float base,
                       float freq_scale, const struct wk_tensor *freqs, float attn_factor, float *cs);
    /* RoPE of each row t's n_heads heads of x [n][n_heads·head_dim] by the
     * angles cs [n][n_rot] (rope_table) */
    void (*rope)(struct wk_backend *b, int32_t n, float *x, int n_heads, int head_dim, int n_rot, const float *cs,
                 enum wk_rope_mode mode);
    /* Writes rows k, v [n][hk] (hk = n_head_kv·head_dim) of sequences seq at
     * positions pos into a layer's cache (struct wk_attn_args's layout). No two of the n tokens
     * may map to one slot of one sequence (a ring holds at least a window
     * plus a ubatch): the CPU backend writes them from several threads.
     * The caches' elements are of type (WK_DTYPE_F32, or WK_DTYPE_F16:
     * each value rounded to nearest even, as vcvtps2ph and ggml do). */
    void (*kv_write)(struct wk_backend *b, const struct wk_kv_cache *c, int64_t hk, int32_t head_dim, int32_t n,
                     const int32_t *pos, const int32_t *seq, const float *k, const float *v);
    /* Sequence dst's stripe of a layer's cache becomes src's for slots
     * 0 .. rows-1: each kv head's keys and the values' entries (blocked
     * values: whole blocks, so slots past rows up to the block's end may
     * change too; they hold no position of dst's) */
    void (*kv_copy)(struct wk_backend *b, const struct wk_kv_cache *c, int64_t hk, int32_t head_dim, int32_t src,
                    int32_t dst, int64_t rows);
    /* Asks for the lines a one-row KV write will store to (a hint; may do nothing) */
    void (*kv_prefetch)(struct wk_backend *b, const struct wk_kv_cache *c, int64_t hk, int32_t head_dim, int32_t seq,
                        int32_t pos);
    void (*attention)(struct wk_backend *b, const struct wk_attn_args *a);
    void (*mla_prepare)(struct wk_backend *b, const struct wk_mla_args *a);
    void (*mla_attention)(struct wk_backend *b, const struct wk_mla_args *a);
    void (*moe_route)(struct wk_backend *b, const struct wk_moe_route_args *a);
    void (*moe_experts)(struct wk_backend *b, const struct wk_moe_experts_args *a);
    /* Waits for the calls before it (a no-op on the CPU, where each call returns done) */
    void (*synchronize)(struct wk_backend *b);
};

struct wk_model;

/* A backend as a model meets it, before any context: how its weights are
 * made ready. wk_model_load calls upload once, after the family's loader
 * has found every tensor. */
struct wk_backend_type {
    const char *name;
    /* Prepares m's weights for this backend (resident: they are in
     * anonymous memory it may rewrite in place). The CPU repacks the
     * projection matrices into its R16 layout where its kernels have one
     * (src/cpu, wk_cpu.h); a device backend would copy them to the device.
     * Errors: WK_E_NOMEM. */
    enum wk_status (*upload)(struct wk_model *m, bool resident, struct wk_error *err);
};
/* The CPU backend (backend_cpu.c). */
extern const struct wk_backend_type wk__backend_cpu_type;

/* The CPU backend's state: the context's pool, kernels and scratch. */
struct wk_backend_cpu {
    struct wk_backend base;
    struct wk_threadpool *pool;
    const struct wk_cpu_kernels *k;
    float *mm_scratch;   /* wk_cpu_matmul_scratch_floats(...) floats */
    float *scores, *pv;  /* per thread: [ATTN_QBLOCK][n_ctx] and [ATTN_QBLOCK][head_dim_max] */
    int32_t n_ctx, head_dim_max;
    /* a prefill's keys packed once per kv head (attention), for up to
     * kpack_rows keys: n_head_kv x gemm_f32_pack_floats(kpack_rows,
     * head_dim) floats; NULL (0 rows) where the table cannot */
    float *kpack;
    int32_t kpack_rows;
    /* and its values, where the table has gemm_f32_prepacked_cols: n_head_kv
     * x gemm_f32_pack_floats(head_dim, kpack_rows) floats; else NULL */
    float *vpack;
    /* per thread cvt_floats floats where attention converts (an F16
     * cache) or gathers (blocked values) the rows it is about to multiply
     * with the f32 GEMM (keys a tile at a time, value rows a few at a
     * time, a packing's rows); NULL where no layer needs it */
    float *cvt;
    size_t cvt_floats;
};

/* Queries per attention work item: a block of consecutive tokens of one
 * head, whose scores against their keys form one GEMM (micro-tiles of 12,
 * 12 and 8 queries in gemm_f32). Its scores (ATTN_QBLOCK x keys floats)
 * are written by the QK product, softmaxed and read by the PV product. 8
 * was chosen when a causal row's masked entries left subnormal
 * probabilities (wk_softmax_floor), which cost a microcode assist per FMA
 * on Intel cores and grew with the block; without them, on the Xeon with
 * AMX-BF16 (2 threads, t/s), 32 against 8: pp4096 SmolLM2 814-851 ->
 * 898-907, Gemma 3 1137-1194 -> 1370-1372, pp512 alike (16 and 24
 * between or level, 36 and 48 no better). Each block reads its kv head's
 * keys and values once for 32 queries instead of 8, and past a few
 * thousand keys they come from L3. A divisor of 32: prompt chunks and
 * reused prefixes are cut at multiples of it (wk_context_reusable,
 * slots.c's chunk_rows) so that blocks fall as in a prefill from 0. The
 * scores take 32 x n_ctx floats a thread (16 MiB at 131072). */
#define ATTN_QBLOCK 32
_Static_assert(32 % ATTN_QBLOCK == 0, "prompt chunks and reused prefixes are cut at multiples of 32");

/* Most keys a prefill's attention packs once per kv head (up to n_ctx):
 * past it (a chunk of a long prompt far into the context) every block
 * packs its keys itself, as before. 4096 keys of Qwen2.5-1.5B's two kv
 * heads of 128 dims: 4 MiB. */
#define WK_ATTN_KPACK_ROWS 4096

/* Floats of an F16 cache's rows attention converts at once for a product
 * (a tile of keys, a few value rows over the keys: 16 KiB, in L1 for the
 * product that follows), so the cache is read at 2 bytes an element. */
#define WK_ATTN_CVT_TILE 4096

/* Floats of wk_backend_cpu.cvt each thread needs for an F16 cache or
 * blocked values of n_ctx slots, head_dim_max dims, prefill packings of
 * up to kpack_rows keys (vpack: their values too). */
static inline size_t wk_attn_cvt_floats(int32_t n_ctx, int32_t head_dim_max, int32_t kpack_rows, bool vpack)
{
    size_t f = WK_ATTN_CVT_TILE;
    f = WK_MAX(f, (size_t)4 * (size_t)WK_MAX(n_ctx, head_dim_max)); /* 4 value rows, or 4 keys */
    f = WK_MAX(f, (size_t)WK_GEMM_PACK_ROWS * (size_t)head_dim_max); /* a packing's keys */
    if (vpack) f = WK_MAX(f, (size_t)WK_GEMM_PACK_ROWS * (size_t)kpack_rows); /* its value rows */
    return f;
}

/* The CPU's MLA ops (backend_cpu_mla.c). */
void wk__cpu_mla_prepare(struct wk_backend *b, const struct wk_mla_args *a);
void wk__cpu_mla_attention(struct wk_backend *b, const struct wk_mla_args *a);
/* The CPU's MoE ops (backend_cpu_moe.c). */
void wk__cpu_moe_route(struct wk_backend *b, const struct wk_moe_route_args *a);
void wk__cpu_moe_experts(struct wk_backend *b, const struct wk_moe_experts_args *a);

/* Fills b as the CPU backend over pool and k with the scratch given
 * (borrowed: the context's arena). */
void wk__backend_cpu_init(struct wk_backend_cpu *b, struct wk_threadpool *pool, const struct wk_cpu_kernels *k,
                          float *mm_scratch, float *scores, float *pv, int32_t n_ctx, int32_t head_dim_max);

#endif
