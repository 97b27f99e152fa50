/*
 * hf_gpt_oss.c - a Hugging Face GptOssForCausalLM folder (model_type
 * gpt_oss) seen as llama.cpp's "gpt-oss" GGUF, for hf.c: config.json's
 * fields under the GGUF keys, the tensor names, and the layout change of
 * the experts (conversion/gpt_oss.py of llama.cpp read to learn it).
 *
 * transformers stores the experts transposed and gate/up interleaved:
 * gate_up_proj [n_expert][E][2·F] (gate in the even columns, up in the
 * odd), gate_up_proj_bias [n_expert][2·F], down_proj [n_expert][F][E];
 * the GGUF has ffn_gate_exps / ffn_up_exps [n_expert][F][E], their
 * biases [n_expert][F] and ffn_down_exps [n_expert][E][F].
 * wk__hf_pick_columns makes the GGUF layout from the HF one (hf.c owns
 * the copies). MXFP4 experts (*_blocks, *_scales, as OpenAI ships them)
 * are refused: a bf16/f32 folder loads.
 */
#include "hf_internal.h"

#include <stdio.h>
#include <string.h>

static void set(json_t *kv, const char *suffix, json_t *v)
{
    char key[160];
    snprintf(key, sizeof key, "gpt-oss.%s", suffix);
    json_object_set_new(kv, key, v);
}

/* YaRN's rope_scaling / rope_parameters fields under GGUF's
 * rope.scaling.* keys, plus wick's own yarn (1), yarn_truncate and
 * yarn_attn_factor (gpt_oss.c reads them). */
static enum wk_status yarn_to_kv(json_t *kv, json_t *rs, const char *dir, struct wk_error *err)
{
    static const struct {
        const char *hf, *gguf;
        bool required;
    } f[] = {{"factor", "rope.scaling.factor", true},
             {"original_max_position_embeddings", "rope.scaling.original_context_length", true},
             {"beta_fast", "rope.scaling.yarn_beta_fast", false},
             {"beta_slow", "rope.scaling.yarn_beta_slow", false},
             {"attention_factor", "rope.scaling.yarn_attn_factor", false}};
    for (size_t i = 0; i < WK_ARRAY_LEN(f); i++) {
        json_t *v = json_object_get(rs, f[i].hf);
        if ((!v || json_is_null(v)) && !f[i].required) continue;
        if (!json_is_number(v))
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: rope_scaling yarn %s must be a number", dir,
                                f[i].hf);
        set(kv, f[i].gguf, json_real(json_number_value(v)));
    }
    json_t *tr = json_object_get(rs, "truncate");
    if (tr && !json_is_null(tr) && !json_is_boolean(tr))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: rope_scaling truncate must be a boolean", dir);
    if (json_object_get(rs, "mscale") || json_object_get(rs, "mscale_all_dim"))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: rope_scaling mscale / mscale_all_dim are not "
                            "supported for gpt_oss", dir);
    set(kv, "rope.scaling.yarn_truncate", json_real(tr && json_is_false(tr) ? 0 : 1));
    set(kv, "rope.scaling.yarn", json_real(1));
    return WK_OK;
}

enum wk_status wk__hf_gpt_oss_config(json_t *kv, json_t *cfg, json_t *rope_scaling, const char *dir,
                                     struct wk_error *err)
{
    static const struct {
        const char *hf, *gguf;
    } map[] = {{"num_local_experts", "expert_count"},
               {"num_experts_per_tok", "expert_used_count"},
               {"intermediate_size", "expert_feed_forward_length"},
               {"swiglu_alpha", "swiglu_alpha"},
               {"swiglu_limit", "swiglu_limit"}};
    for (size_t i = 0; i < WK_ARRAY_LEN(map); i++) {
        json_t *v = json_object_get(cfg, map[i].hf);
        if (!v || json_is_null(v)) continue;
        if (!json_is_number(v))
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: %s must be a number", dir, map[i].hf);
        set(kv, map[i].gguf, json_real(json_number_value(v)));
    }
    if (!json_is_true(json_object_get(cfg, "attention_bias")) && json_object_get(cfg, "attention_bias"))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: attention_bias false (gpt_oss has biases)", dir);
    json_t *types = json_object_get(cfg, "layer_types"), *layers = json_object_get(cfg, "num_hidden_layers");
    if (types && !json_is_null(types)) {
        if (!json_is_array(types) || !json_is_integer(layers) ||
            (json_int_t)json_array_size(types) != json_integer_value(layers))
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: layer_types must be a list of num_hidden_layers "
                                "entries", dir);
        json_t *arr = json_array();
        for (size_t i = 0; i < json_array_size(types); i++) {
            const char *t = json_string_value(json_array_get(types, i));
            if (!t || (strcmp(t, "sliding_attention") && strcmp(t, "full_attention"))) {
                json_decref(arr);
                return wk_error_set(err, WK_E_FORMAT, "%s/config.json: layer_types[%zu] is not \"full_attention\" "
                                    "or \"sliding_attention\"", dir, i);
            }
            json_array_append_new(arr, json_boolean(strcmp(t, "sliding_attention") == 0));
        }
        set(kv, "attention.sliding_window_pattern", arr);
    }
    return rope_scaling ? yarn_to_kv(kv, rope_scaling, dir, err) : WK_OK;
}

enum wk_hf_gpt_oss_kind wk__hf_gpt_oss_name(const char *name, char *out, size_t cap, bool *f32)
{
    static const struct {
        const char *hf, *gguf;
        enum wk_hf_gpt_oss_kind kind;
    } blk[] = {{"self_attn.sinks", "attn_sinks.weight", WK_HF_OSS_PLAIN},
               {"post_attention_layernorm.weight", "post_attention_norm.weight", WK_HF_OSS_PLAIN},
               {"mlp.router.weight", "ffn_gate_inp.weight", WK_HF_OSS_PLAIN},
               {"mlp.router.bias", "ffn_gate_inp.bias", WK_HF_OSS_PLAIN},
               {"mlp.experts.down_proj_bias", "ffn_down_exps.bias", WK_HF_OSS_PLAIN},
               {"mlp.experts.gate_up_proj", "ffn_gate_exps.weight", WK_HF_OSS_GATE_UP},
               {"mlp.experts.gate_up_proj_bias", "ffn_gate_exps.bias", WK_HF_OSS_GATE_UP_BIAS},
               {"mlp.experts.down_proj", "ffn_down_exps.weight", WK_HF_OSS_DOWN}};
    int layer, used = 0;
    if (sscanf(name, "model.layers.%d.%n", &layer, &used) != 1 || used == 0 || layer < 0) return WK_HF_OSS_OTHER;
    const char *rest = name + used;
    if (strstr(rest, "_blocks") || strstr(rest, "_scales")) return WK_HF_OSS_MXFP4;
    for (size_t i = 0; i < WK_ARRAY_LEN(blk); i++)
        if (strcmp(rest, blk[i].hf) == 0) {
            *f32 = blk[i].kind == WK_HF_OSS_PLAIN || blk[i].kind == WK_HF_OSS_GATE_UP_BIAS;
            *f32 = *f32 && strcmp(blk[i].hf, "mlp.router.weight") != 0;
            snprintf(out, cap, "blk.%d.%s", layer, blk[i].gguf);
            return blk[i].kind;
        }
    return WK_HF_OSS_OTHER;
}

void wk__hf_pick_columns(const void *src, int64_t n_mat, int64_t rows, int64_t cols, size_t es, int64_t col0,
                         int64_t step, void *dst)
{
    const int64_t nc = (cols - col0 + step - 1) / step;
    const uint8_t *s = src;
    uint8_t *d = dst;
    for (int64_t e = 0; e < n_mat; e++)
        for (int64_t c = 0; c < nc; c++)
            for (int64_t r = 0; r < rows; r++)
                memcpy(d + ((e * nc + c) * rows + r) * es, s + ((e * rows + r) * cols + col0 + c * step) * es, es);
}
