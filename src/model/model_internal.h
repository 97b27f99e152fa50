/*
 * model_internal.h - the model's state, shared by the files of src/model.
 */
#ifndef WK_MODEL_INTERNAL_H
#define WK_MODEL_INTERNAL_H

#include "wk_model.h"

/* One transformer block's weights (views into the mapping; NULL when the
 * family has no such tensor). */
struct wk_layer {
    const struct wk_tensor *attn_norm, *wq, *wk, *wv, *wo, *q_norm, *k_norm, *post_attn_norm;
    const struct wk_tensor *ffn_norm, *ffn_gate, *ffn_up, *ffn_down, *post_ffn_norm;
    bool sliding;     /* sliding-window attention layer */
    float rope_base;  /* this layer's RoPE base */
    float rope_scale; /* this layer's RoPE frequency scale */
};

enum wk_ffn_act { WK_ACT_GELU_TANH = 1, WK_ACT_SILU = 2 };

struct wk_hf; /* a Hugging Face folder (hf.c) */

struct wk_model {
    struct wk_gguf *gguf; /* the GGUF file, or NULL for a Hugging Face folder */
    struct wk_hf *hf;     /* the folder, or NULL for GGUF */
    struct wk_hparams hp;
    enum wk_rope_mode rope_mode;
    enum wk_ffn_act act;
    const struct wk_tensor *tok_embd, *output_norm, *output;
    const struct wk_tensor *rope_freqs; /* [n_rot/2] per-pair divisors, or NULL */
    struct wk_layer *layers; /* [n_layer] */
};

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
/* The tensor of GGUF name `name`, or NULL. */
const struct wk_tensor *wk__hf_tensor(const struct wk_hf *h, const char *name);
uint64_t wk__hf_weight_bytes(const struct wk_hf *h);

/* The model's file or folder, for messages. */
const char *wk__model_path(const struct wk_model *m);

/* Per-family loader: fills hp (beyond what model.c reads) and the tensors. */
typedef enum wk_status (*wk_arch_load_fn)(struct wk_model *m, struct wk_error *err);
enum wk_status wk__gemma3_load(struct wk_model *m, struct wk_error *err);
enum wk_status wk__llama_load(struct wk_model *m, struct wk_error *err);
enum wk_status wk__qwen3_load(struct wk_model *m, struct wk_error *err);

/*
 * The parts every decoder family shares, for the per-family loaders:
 * load_common_hparams reads embedding_length, block_count,
 * feed_forward_length, head counts, key/value length (head_dim 0 before
 * the call means n_embd / n_head), context_length, the RMS epsilon, the
 * RoPE base and linear scaling, over the defaults already in m->hp, and
 * checks them; load_common_tensors finds token_embd (setting n_vocab),
 * output_norm, output (tied when absent) and each layer's attention and
 * FFN projections and pre-norms, and gives each layer the global RoPE.
 */
enum wk_status wk__load_common_hparams(struct wk_model *m, struct wk_error *err);
enum wk_status wk__load_common_tensors(struct wk_model *m, struct wk_error *err);

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

#endif
