/*
 * hf_internal.h - what hf.c shares with the per-family parts of a Hugging
 * Face folder's reading (hf_gpt_oss.c).
 */
#ifndef WK_HF_INTERNAL_H
#define WK_HF_INTERNAL_H

#include "model_internal.h"

#include <jansson.h>

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
