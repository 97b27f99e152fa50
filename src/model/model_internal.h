/*
 * model_internal.h - the model's state, shared by the files of src/model.
 */
#ifndef WK_MODEL_INTERNAL_H
#define WK_MODEL_INTERNAL_H

#include "wk_model.h"

/* One transformer block's weights (views into the mapping; NULL when the
 * family has no such tensor). */
/* Per-layer embeddings (Gemma 4, architectures.md §4.6 step 2): gate
 * [P, E] (GGUF ne {E, P}), proj [E, P], post_norm [E]; NULL without. */
struct wk_ple_block {
    const struct wk_tensor *gate, *proj, *post_norm;
};

/* A mixture of experts beside the dense FFN. Gemma 4: router [n_expert,
 * E], router_scale [E], expert_scale [n_expert]; expert weights 3-D:
 * gate_up [n_expert][2·F_exp][E] (gate rows first) or gate and up
 * [n_expert][F_exp][E] apart; down [n_expert][E][F_exp]; the extra norms
 * of the two paths. Experts as one 2-D tensor each ([n_expert] tables, a
 * Hugging Face folder's per-expert tensors) in gate_e / up_e / down_e,
 * used where gate/up/down are NULL. GLM-4-MoE-Lite (architectures.md §6.4
 * step 8): sigmoid, a DeepSeek-V3-style router: sigmoid scores, top k by
 * score + selection bias sel_bias [n_expert] (NULL: none), the chosen
 * scores normalised and scaled (hparams); SwiGLU experts; the shared
 * expert is the layer's dense FFN. router NULL: no experts. */
struct wk_moe_block {
    const struct wk_tensor *router, *router_scale, *expert_scale;
    const struct wk_tensor *gate_up, *gate, *up, *down;
    const struct wk_tensor *pre_norm, *post_norm_1, *post_norm_2;
    const struct wk_tensor *const *gate_e, *const *up_e, *const *down_e;
    bool sigmoid;
    const struct wk_tensor *sel_bias;
    /* with sigmoid (the experts on the FFN input, beside the dense FFN
     * slot): a softmax router instead (Qwen 3 MoE): softmax over all
     * experts, top k as torch.topk picks them, renormalised when
     * hp.expert_weights_norm; no scale */
    bool softmax_router;
    /* with sigmoid (gpt-oss): topk_softmax routes by the top k of the
     * router's logits (plus router_bias, F32 [n_expert], or NULL), then a
     * softmax over those k; the experts' biases gate_b, up_b [n_expert]
     * [F_exp] and down_b [n_expert][E] (F32, NULL without); swiglu_limit
     * > 0: the clamped SwiGLU min(g, limit)·sigmoid(alpha·min(g, limit))·
     * (clamp(u, ±limit) + 1) instead of the family's GLU */
    const struct wk_tensor *router_bias, *gate_b, *up_b, *down_b;
    bool topk_softmax;
    float swiglu_alpha, swiglu_limit;
};

/* Multi-head latent attention (GLM-4-MoE-Lite, DeepSeek V2/V3;
 * architectures.md §6.4), on for such a layer. Query: q_a [q_lora, E],
 * its norm [q_lora], q_b [n_head·(nope + n_rot), q_lora], or the layer's
 * wq when q_lora is 0; kv_a [kv_lora + n_rot, E] and its norm [kv_lora];
 * per head h the key absorption k_b[h] [kv_lora][nope] (W_UK_hᵀ) and the
 * value expansion v_b[h] [v][kv_lora] (3-D, ne {nope, kv_lora, n_head} and
 * {kv_lora, v, n_head}); the layer's wo [E, n_head·v]. head_dim = nope +
 * n_rot. The cache row of a position is [RMSNorm(latent) ; RoPE(k_pe)],
 * kv_lora + n_rot floats. */
struct wk_mla_block {
    bool on;
    int32_t kv_lora, nope, v;
    const struct wk_tensor *q_a, *q_a_norm, *q_b, *kv_a, *kv_a_norm, *k_b, *v_b;
};

struct wk_layer {
    const struct wk_tensor *attn_norm, *wq, *wk, *wv, *wo, *q_norm, *k_norm, *post_attn_norm;
    const struct wk_tensor *ffn_norm, *ffn_gate, *ffn_up, *ffn_down, *post_ffn_norm;
    /* biases of the Q, K and V projections, F32 [n_head·head_dim] and
     * [n_head_kv·head_dim] (Qwen 2), added before the QK norms and RoPE,
     * and of the attention output [n_embd] (Llama with attention_bias);
     * NULL without */
    const struct wk_tensor *bq, *bk, *bv, *bo;
    /* gpt-oss: a learned logit per query head, F32 [n_head], joining each
     * attention softmax's denominator (never a key's weight); NULL without */
    const struct wk_tensor *attn_sinks;
    bool sliding;     /* sliding-window attention layer */
    float rope_base;  /* this layer's RoPE base */
    float rope_scale; /* this layer's RoPE frequency scale */
    const struct wk_tensor *rope_freqs; /* [n_rot/2] per-pair divisors, or NULL */
    /* attention geometry, per layer since Gemma 4's sliding and full
     * layers differ (wk__load_common_tensors sets the model's) */
    int32_t head_dim, n_head_kv, n_rot, n_ff; /* n_rot 0: no RoPE on this layer (SmolLM3's NoPE layers) */
    /* q_norm and k_norm span the whole projection (gains [n_head·head_dim]
     * and [n_head_kv·head_dim], one RMS over all heads of a row: OLMo 2),
     * not one head (gains [head_dim]: Qwen 3, Gemma 3) */
    bool qk_norm_full;
    /* the layer whose KV cache this one reads: itself, or (Gemma 4 KV
     * sharing) an earlier layer of the same kind; such a layer has no
     * wk/wv and writes nothing */
    int32_t kv_layer;
    bool k_eq_v;     /* no wv: V is K's projection, before K's norm and RoPE */
    bool v_norm;     /* V RMS-normalised per head, without a gain (Gemma 4) */
    float out_scale; /* the layer's output is multiplied by it (Gemma 4's layer_scalar; else 1) */
    struct wk_ple_block ple; /* Gemma 4's per-layer input; gate NULL without */
    struct wk_moe_block moe; /* routed experts; router NULL without */
    struct wk_mla_block mla; /* multi-head latent attention; on false without */
};

enum wk_ffn_act { WK_ACT_GELU_TANH = 1, WK_ACT_SILU = 2 };

struct wk_hf; /* a Hugging Face folder (hf.c) */

struct wk_model {
    const struct wk_family *family;
    struct wk_gguf *gguf; /* the GGUF file, or NULL for a Hugging Face folder */
    struct wk_hf *hf;     /* the folder, or NULL for GGUF */
    struct wk_hparams hp;
    enum wk_rope_mode rope_mode;
    enum wk_ffn_act act;
    const struct wk_tensor *tok_embd, *output_norm, *output;
    const struct wk_tensor *rope_freqs; /* [n_rot/2] per-pair divisors (LongRoPE: the short ones), or NULL */
    /* LongRoPE's long-context divisors [n_rot/2] (rope_freqs holds the
     * short ones), used by a context of more than hp.n_ctx_orig positions;
     * NULL without */
    const struct wk_tensor *rope_freqs_long;
    struct wk_layer *layers; /* [n_layer] */
    /* Gemma 4 per-layer embeddings: token table [n_vocab][n_layer·P],
     * model projection [n_layer·P, E], its norm [P]; NULL without */
    const struct wk_tensor *ple_embd, *ple_model_proj, *ple_proj_norm;
    int32_t *suppress; /* token ids whose logits are -inf (owned), n_suppress of them */
    int32_t n_suppress;
    float *owned_f32;                 /* a family's own F32 data (Gemma 4's RoPE freqs from config.json) */
    /* A Gemma 4 MTP assistant (architectures.md §5): every layer reads the
     * target's cache (kv_layer -1); pre_proj [2·E_target → E] (ne {2·E_t,
     * E}), post_proj [E → E_target]; with ordered embeddings the centroids
     * [n_centroids, E] and token_ordering [n_vocab] (ids as F32) */
    bool is_mtp;
    int32_t mtp_n_embd_target, mtp_n_centroids, mtp_centroid_top_k;
    const struct wk_tensor *mtp_pre_proj, *mtp_post_proj, *mtp_centroids, *mtp_token_ordering;
    struct wk_tensor owned_rope_freqs; /* the view of it rope_freqs may point at */
    /* glm4_moe_lite.c's own, freed with the model: tensors it builds
     * (from a Hugging Face kv_b_proj: k_b transposed into F32, v_b viewed
     * in place), that F32 data, per-expert tensor tables */
    struct wk_tensor *mla_tensors;
    float *mla_data;
    const struct wk_tensor **expert_tables;
    /* views a loader makes into fused tensors (phi3.c: Q, K, V rows of
     * attn_qkv, gate and up rows of ffn_up), owned, freed with the model */
    struct wk_tensor *view_tensors;
    int32_t n_view_tensors;
};

/* The rows [row0, row0 + n_rows) of the 2-D tensor t as a tensor of its
 * own in *out (data borrowed from t, named name, static storage); rows are
 * whole so any dtype's blocks stay intact. row0 + n_rows <= t->ne[1]. */
void wk__tensor_rows(const struct wk_tensor *t, int64_t row0, int64_t n_rows, const char *name,
                     struct wk_tensor *out);

/*
 * hf.c: a Hugging Face folder seen with GGUF names. wk__hf_open reads
 * config.json (keys under their GGUF names), maps model*.safetensors (read
 * into huge pages when resident, as wk_model_load_ex says) and
 * names the tensors wick uses as GGUF does (norm gains F32, Gemma's +1
 * added). Errors name the folder and the field or tensor: WK_E_FORMAT,
 * WK_E_UNSUPPORTED (model_type, rope_scaling type, dtype), WK_E_NOT_FOUND.
 */
enum wk_status wk__hf_open(struct wk_model *m, const char *dir, bool resident, struct wk_error *err);
void wk__hf_close(struct wk_hf *h);
const char *wk__hf_dir(const struct wk_hf *h);
const char *wk__hf_arch(const struct wk_hf *h);
const char *wk__hf_chat_template(const struct wk_hf *h);
/* The number under GGUF key `key`; false when absent. */
bool wk__hf_number(const struct wk_hf *h, const char *key, double *out);
/* The bool list under key into out[max]; its length, or -1 when absent. */
int wk__hf_bools(const struct wk_hf *h, const char *key, bool *out, int max);
/* The integer list under key into out[max]; its length, -1 when absent,
 * -2 when an element is not an integer. */
int wk__hf_ints(const struct wk_hf *h, const char *key, int64_t *out, int max);
/* The number list under key into out[max] as floats; its length, or -1
 * when absent (hf.c checked the elements when it stored them). */
int wk__hf_floats(const struct wk_hf *h, const char *key, float *out, int max);
/* The tensor of GGUF name `name`, or NULL. */
const struct wk_tensor *wk__hf_tensor(const struct wk_hf *h, const char *name);
/* How many tensors the folder gives wick, and the GGUF name of the i-th
 * (0 <= i < that count). */
int wk__hf_n_tensors(const struct wk_hf *h);
const char *wk__hf_tensor_name(const struct wk_hf *h, int i);
uint64_t wk__hf_weight_bytes(const struct wk_hf *h);
/* Adds the elements of every tensor of the folder wick uses to per_dtype[its dtype]. */
void wk__hf_count_params(const struct wk_hf *h, uint64_t per_dtype[WK_DTYPE_COUNT]);

/* The model's file or folder, for messages. */
const char *wk__model_path(const struct wk_model *m);

/* Per-family loader: fills hp (beyond what model.c reads) and the tensors. */
typedef enum wk_status (*wk_arch_load_fn)(struct wk_model *m, struct wk_error *err);

/*
 * A model family as the rest of wick sees it, described in the family's
 * own file, which ends with
 *     WK_FAMILY(qwen2) = {.name = "qwen2", .gguf_archs = {"qwen2"}, ...};
 * The build collects every WK_FAMILY line of the .c files of src/model into the
 * registry (the Makefile writes families.gen.h; model.c includes it), so
 * adding a family adds one file: nothing else names it. What a family's
 * layers compute is in its loader's choices of struct wk_layer fields
 * (the forward pass in context.c reads those, not the family).
 */
struct wk_family {
    const char *name; /* canonical name (wk_model_family), e.g. "qwen2" */
    /* general.architecture values it loads (the prefix of its GGUF keys);
     * NULL-ended unless all 4 are used (readers bound by the array's length) */
    const char *gguf_archs[4];
    /* config.json model_type values (text_config's where there is one) it
     * loads, read as gguf_archs[0]; a trailing '*' matches a prefix; NULL-ended
     * unless all 4 are used (llama's are: readers bound by the array's length) */
    const char *hf_model_types[4];
    const char *label; /* how messages name it beside its GGUF name ("GLM-4-MoE-Lite"), or NULL */
    wk_arch_load_fn load;
    enum wk_chat_format chat;
};
#define WK_FAMILY(id) const struct wk_family wk_family_##id
/* The registry: every family, ordered by id; *n is set to their count. */
const struct wk_family *const *wk__families(size_t *n);

/*
 * moe.c: the DeepSeek-V3-style router's choice for one token
 * (architectures.md §6.4 step 8; HF Glm4MoeLiteTopkRouter with n_group 1):
 * s = sigmoid(logits [n_expert]); the k experts with the largest
 * s + bias (bias [n_expert] or NULL) into idx [k], in the order and with
 * the ties torch.topk(sorted=False) gives (wk__topk_torch); their weights
 * w [k] = s[idx], divided by their sum (+1e-20) when norm, times scale.
 * n_expert <= WK_MOE_MAX_EXPERTS, 1 <= k <= n_expert.
 */
#define WK_MOE_MAX_EXPERTS 1024

/* The k largest of v [n] into idx [k], largest first, ties to the lower index (moe.c). */
void wk__top_k(const float *v, int32_t n, int32_t k, int32_t *idx);
void wk__moe_select_sigmoid(const float *logits, const float *bias, int32_t n_expert, int32_t k, bool norm,
                            float scale, int32_t *idx, float *w);
/* The indices of the k largest of v [n] (NaN largest) into idx [k], as
 * torch.topk(v, k, sorted=False) on the CPU returns them: libstdc++'s
 * nth_element over (value, index) pairs, or partial_sort when k·64 <= n,
 * so ties fall as that selection leaves them, not to the lower index.
 * n <= WK_MOE_MAX_EXPERTS. */
void wk__topk_torch(const float *v, int32_t n, int32_t k, int32_t *idx);

/* Sparse layer i's softmax router (blk.i.ffn_gate_inp.weight [n_expert, E])
 * and SwiGLU experts into l->moe (softmax_router, sigmoid: on the FFN
 * input): stacked 3-D (ffn_gate_up_exps [NE][2·F_exp][E], or
 * ffn_{gate,up}_exps [NE][F_exp][E] apart; ffn_down_exps [NE][E][F_exp]),
 * or, from a Hugging Face folder, one 2-D tensor each
 * (blk.i.ffn_<gate|up|down>_exps.K.weight) viewed through tables [3·NE]
 * (owned by the model, or NULL for a GGUF). Shapes from hp.n_embd,
 * n_expert, n_ff_exp. Errors: WK_E_FORMAT naming a missing or misshapen
 * tensor. (moe.c) */
enum wk_status wk__moe_softmax_experts(struct wk_model *m, struct wk_layer *l, int i, const struct wk_tensor **tables,
                                       struct wk_error *err);

/*
 * The parts every decoder family shares, for the per-family loaders:
 * load_common_hparams reads embedding_length, block_count,
 * feed_forward_length, head counts, key/value length (head_dim 0 before
 * the call means n_embd / n_head), context_length, the RMS epsilon, the
 * RoPE base and linear scaling, over the defaults already in m->hp, and
 * checks them (a GGUF rope.scaling.type other than none and linear is
 * WK_E_UNSUPPORTED: wk__check_rope_scaling_type); load_common_tensors finds token_embd (setting n_vocab),
 * output_norm, output (tied when absent) and each layer's attention and
 * FFN projections (none on a layer with a router, blk.N.ffn_gate_inp,
 * when hp.n_expert > 0: the family loads its experts) and pre-norms (none
 * with hp.no_pre_norm), the Q, K, V and output biases where the
 * file has them (llama.cpp's optional attn_{q,k,v,output}.bias; FFN
 * biases, which no family here applies, are refused), and gives each
 * layer the global RoPE; with hp.n_expert > 0 set before the call every
 * layer is sparse (n_ff 0, no dense FFN: the family loads the experts).
 */
enum wk_status wk__load_common_hparams(struct wk_model *m, struct wk_error *err);
/* The keys every family has, read into hp over its defaults:
 * embedding_length, block_count and attention.head_count (required),
 * context_length, attention.layer_norm_rms_epsilon, rope.freq_base.
 * Errors as wk__hp_u32 / wk__hp_f32. */
enum wk_status wk__load_core_hparams(struct wk_model *m, struct wk_error *err);
/* token_embd (its rows set n_vocab), output_norm and output (tied to
 * token_embd when absent): the part of load_common_tensors every family
 * shares, for loaders that find their layers' tensors themselves. */
enum wk_status wk__load_embeddings(struct wk_model *m, struct wk_error *err);
/* The tensor named name in the GGUF or the folder, unchecked, or NULL. */
const struct wk_tensor *wk__find_tensor(const struct wk_model *m, const char *name);
enum wk_status wk__load_common_tensors(struct wk_model *m, struct wk_error *err);
/* The Llama description (llama.c): hyperparameters with Llama's
 * defaults, Mistral's sliding window, Mixtral's experts, the common
 * tensors, Llama 3 RoPE divisors; RoPE NEOX on a Hugging Face folder's
 * rows and gguf_rope on a GGUF's (NORM where the converter permuted Q and
 * K, as for "llama"; NEOX where it did not, as for "exaone"). Granite and
 * SmolLM3 are this plus a few knobs. Errors:
 * WK_E_FORMAT naming the key or tensor, WK_E_NOMEM. */
enum wk_status wk__llama_load(struct wk_model *m, enum wk_rope_mode gguf_rope, struct wk_error *err);
/* hf_llamalike.c, for hf.c: the GGUF name out [cap] of Hugging Face
 * tensor name for arch where it is EXAONE's or Mixtral's own (false:
 * not one of them; *norm set for a norm gain), and config.json cfg's
 * EXAONE and Mixtral keys into kv (GGUF key -> value; dir names the
 * folder in errors: WK_E_FORMAT for a key that is not a number,
 * WK_E_UNSUPPORTED for an activation other than silu). */
struct json_t;
bool wk__hf_llamalike_name(const char *arch, const char *name, char *out, size_t cap, bool *norm);
enum wk_status wk__hf_llamalike_config(struct json_t *kv, struct json_t *cfg, const char *arch, const char *dir,
                                       struct wk_error *err);

/* GGUF "<arch>.rope.scaling.type": none (the factor is then ignored) and
 * linear pass; any other type (yarn, longrope, ...) is WK_E_UNSUPPORTED
 * naming the key. A Hugging Face folder's rope_scaling is checked by hf.c. */
enum wk_status wk__check_rope_scaling_type(struct wk_model *m, struct wk_error *err);

/* For a family that reads no RoPE scaling (family: its name, for the
 * message): a GGUF rope.scaling.type other than none, or a
 * rope.scaling.factor other than 1 (or 0, unset) in a GGUF or a folder, is
 * WK_E_UNSUPPORTED naming the key, rather than ignored. */
enum wk_status wk__refuse_rope_scaling(struct wk_model *m, const char *family, struct wk_error *err);
/* The per-layer bool list "<arch>.<suffix>" (GGUF bool array, or the
 * list hf.c built from config.json) into out [n_layer]; *found false
 * (out untouched) when absent; WK_E_FORMAT when its length is not
 * n_layer. */
enum wk_status wk__layer_bools(const struct wk_model *m, const char *suffix, bool *out, bool *found,
                               struct wk_error *err);

/* Helpers for loaders. Key names are "<arch>.<suffix>". Missing optional
 * keys leave *out as is. */
enum wk_status wk__hp_u32(const struct wk_model *m, const char *suffix, bool required,
                          int32_t *out, int32_t max, struct wk_error *err);
enum wk_status wk__hp_f32(const struct wk_model *m, const char *suffix, bool required, float *out,
                          struct wk_error *err);
/*
 * Finds tensor name (printf-style) with ne = {ne0, ne1} (ne1 = 1 for 1-D)
 * and a computable dtype; F32 required when f32_only. Missing tensors are
 * an error unless optional (then *out = NULL).
 */
enum wk_status wk__tensor(const struct wk_model *m, const struct wk_tensor **out, bool optional,
                          bool f32_only, int64_t ne0, int64_t ne1, struct wk_error *err,
                          const char *fmt, ...) __attribute__((format(printf, 8, 9)));
/* The same for a 3-D tensor ne = {ne0, ne1, ne2} (expert weights), any
 * computable dtype. */
enum wk_status wk__tensor3(const struct wk_model *m, const struct wk_tensor **out, bool optional,
                           int64_t ne0, int64_t ne1, int64_t ne2, struct wk_error *err, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

#endif
