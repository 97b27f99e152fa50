/*
 * hf_internal.h - the Hugging Face folder reader's state, shared by hf.c
 * (files, tensors, names), hf_config.c (each family's config.json
 * fields under GGUF keys) and hf_gpt_oss.c (gpt-oss's fields and tensors).
 */
#ifndef WK_HF_INTERNAL_H
#define WK_HF_INTERNAL_H

#include "model_internal.h"

#include <jansson.h>

#define MAX_FILES 256

struct wk_hf {
    char dir[4096];
    json_t *kv;    /* GGUF key -> value */
    json_t *names; /* GGUF tensor name -> index into tensors */
    struct wk_safetensors *files[MAX_FILES];
    int n_files;
    struct wk_tensor *tensors;
    char (*tensor_names)[96];
    int n_tensors, cap;
    float **owned; /* converted norm gains */
    int n_owned;
    char *chat_template;
};

/* kv["<arch>.<suffix>"] = v (the reference is taken). */
void wk__hf_set_kv(struct wk_hf *h, const char *arch, const char *suffix, json_t *v);
/* config.json field name of cfg into *out: dflt when absent or null;
 * WK_E_FORMAT naming the folder and field when it is not a number. */
enum wk_status wk__hf_cfg_number(const struct wk_hf *h, json_t *cfg, const char *name, double dflt, double *out,
                                 struct wk_error *err);
/* Llama 3 RoPE scaling (rope_scaling rs of type llama3) as the
 * rope.scaling.llama3.* keys llama.c reads. Errors: WK_E_FORMAT naming
 * the field. */
enum wk_status wk__hf_llama3_rope_to_kv(struct wk_hf *h, json_t *cfg, json_t *rs, const char *arch,
                                        struct wk_error *err);
/* The family's own config.json fields for arch (Qwen 2, GLM-4-MoE-Lite,
 * Qwen 3 MoE, SmolLM3, Granite MoE, Phi-3 with its rope_scaling rs when
 * longrope, Gemma 4) into h->kv; WK_OK for a family with none. Errors:
 * WK_E_FORMAT / WK_E_UNSUPPORTED naming the folder and field. */
enum wk_status wk__hf_family_config(struct wk_hf *h, json_t *cfg, json_t *rs, bool longrope, const char *arch,
                                    struct wk_error *err);

/* The checks of config.json cfg that need the folder's tensors (run after
 * they are read), and its activation: hidden_act / hidden_activation the
 * one the family computes, tie_word_embeddings a bool (false needs
 * lm_head.weight), vocab_size the embedding's rows, bos_token_id and
 * eos_token_id (an integer or a list) within them; num_nextn_predict_layers
 * as <arch>.nextn_predict_layers. Errors: WK_E_FORMAT (a wrong type, a value
 * out of range), WK_E_UNSUPPORTED (another activation), naming the field. */
enum wk_status wk__hf_check_config(struct wk_hf *h, json_t *cfg, const char *arch, struct wk_error *err);

/* gpt-oss's config.json fields into kv (GGUF key -> value) under the
 * "gpt-oss." keys: the experts (num_local_experts, num_experts_per_tok,
 * intermediate_size as the experts' width), swiglu_alpha / swiglu_limit,
 * layer_types as attention.sliding_window_pattern, and rope_scaling (the
 * rope_scaling / rope_parameters object of type yarn, or NULL) as
 * rope.scaling.* (hf_gpt_oss.c). dir names the folder in messages.
 * Errors: WK_E_FORMAT naming the field, WK_E_UNSUPPORTED. */
enum wk_status wk__hf_gpt_oss_config(json_t *kv, json_t *cfg, json_t *rope_scaling, const char *dir,
                                     struct wk_error *err);

/* How hf.c takes a gpt-oss tensor (wk__hf_gpt_oss_name). */
enum wk_hf_gpt_oss_kind {
    WK_HF_OSS_OTHER = 0,     /* not gpt-oss's own: Llama's names apply */
    WK_HF_OSS_PLAIN,         /* as it is, under the GGUF name given */
    WK_HF_OSS_GATE_UP,       /* [NE][E][2F] -> gate (even columns), up (odd), each [NE][F][E] */
    WK_HF_OSS_GATE_UP_BIAS,  /* [NE][2F] -> the gate's and up's [NE][F] */
    WK_HF_OSS_DOWN,          /* [NE][F][E] -> [NE][E][F] */
    WK_HF_OSS_MXFP4,         /* MXFP4 blocks or scales: refused */
};
/* The kind of HF tensor name and its GGUF name into out [cap] (for
 * GATE_UP / GATE_UP_BIAS the gate's; "gate" becomes "up" for the
 * other); *f32: read as F32 (biases, sinks, norms). */
enum wk_hf_gpt_oss_kind wk__hf_gpt_oss_name(const char *name, char *out, size_t cap, bool *f32);

/* dst [n_mat][ceil((cols - col0) / step)][rows] = the transposes of the
 * columns col0, col0 + step, ... of src [n_mat][rows][cols], elements of
 * es bytes copied as they are. */
void wk__hf_pick_columns(const void *src, int64_t n_mat, int64_t rows, int64_t cols, size_t es, int64_t col0,
                         int64_t step, void *dst);

#endif
