/*
 * hf_internal.h - the Hugging Face folder reader's state, shared by hf.c
 * (files, tensors, names) and hf_config.c (each family's config.json
 * fields under GGUF keys).
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

#endif
