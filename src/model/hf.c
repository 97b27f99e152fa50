/*
 * hf.c - models from a Hugging Face folder (config.json, model*.safetensors
 * with or without model.safetensors.index.json, tokenizer files), run
 * straight from the mapped safetensors files.
 *
 * The family loaders are written against GGUF names, so this file gives
 * them the same view: config.json's fields under the GGUF keys
 * (<arch>.embedding_length, ...; the conversions of llama.cpp's
 * convert_hf_to_gguf.py, read to learn the mapping) and the tensors under
 * the GGUF tensor names (blk.N.attn_q.weight, ...), as views into the
 * safetensors mappings. The transforms the GGUF conversion applies to the
 * data are applied here instead where needed: norm gains become F32 (the
 * kernels take F32 norms) and Gemma's get the +1 its RMSNorm adds
 * (x * (1 + w)); Llama's Q and K rows are not permuted, the family uses
 * NEOX RoPE on HF weights instead (llama.c). Qwen 2 and Qwen 3 take
 * Llama's names (q_norm, k_norm and the Q, K, V biases included, biases
 * read as F32) and plain norm gains. GLM-4-MoE-Lite
 * (model_type glm4_moe_lite) becomes llama.cpp's "deepseek2" (keys and
 * names), except that kv_b_proj stays whole and per-expert tensors stay
 * apart (glm4_moe_lite.c takes both as they are). Qwen 3 MoE (qwen3_moe)
 * becomes "qwen3moe": Llama's names, the router and experts named as
 * GLM-4-MoE-Lite's. EXAONE's and Mixtral's own names and keys:
 * hf_llamalike.c. OLMo 2 takes Gemma's names (its post-norms) with plain
 * gains; Granite's multipliers and SmolLM3's NoPE layers become keys (the
 * functions below say which). Phi-3 (phi3) keeps its fused qkv_proj and
 * gate_up_proj whole as attn_qkv and ffn_up (phi3.c views their rows).
 * gpt-oss (gpt_oss): hf_gpt_oss.c's keys and names, its experts copied
 * into the GGUF's layout (owned, like the norms).
 */
#include "hf_internal.h"
#include "../io/wk_json.h"

#include "../io/wk_safetensors.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static json_t *load_json(const char *dir, const char *file, bool required, struct wk_error *err,
                         enum wk_status *st)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    json_error_t je;
    /* tokenizer_config.json's model_max_length can exceed 64 bits */
    size_t flags = JSON_REJECT_DUPLICATES | (strcmp(file, "config.json") ? JSON_DECODE_INT_AS_REAL : 0);
    json_t *j = wk_json_load_file(path, flags, &je);
    if (!j && (required || access(path, F_OK) == 0))
        *st = wk_error_set(err, WK_E_FORMAT, "%s: %s", path, je.text);
    else if (j && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
        *st = wk_error_set(err, WK_E_FORMAT, "%s: not a JSON object", path);
    }
    return j;
}

void wk__hf_set_kv(struct wk_hf *h, const char *arch, const char *suffix, json_t *v)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    json_object_set_new(h->kv, key, v);
}

/* A config.json field that must be a number when present. */
enum wk_status wk__hf_cfg_number(const struct wk_hf *h, json_t *cfg, const char *name, double dflt,
                                 double *out, struct wk_error *err)
{
    json_t *v = json_object_get(cfg, name);
    *out = dflt;
    if (!v || json_is_null(v)) return WK_OK;
    if (!json_is_number(v))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: %s must be a number", h->dir, name);
    *out = json_number_value(v);
    return WK_OK;
}

static enum wk_status config_to_kv(struct wk_hf *h, json_t *cfg, const char *arch, struct wk_error *err)
{
    bool longrope = false;
    static const struct {
        const char *hf, *gguf;
    } map[] = {{"hidden_size", "embedding_length"},
               {"num_hidden_layers", "block_count"},
               {"intermediate_size", "feed_forward_length"},
               {"num_attention_heads", "attention.head_count"},
               {"num_key_value_heads", "attention.head_count_kv"},
               {"max_position_embeddings", "context_length"},
               {"rms_norm_eps", "attention.layer_norm_rms_epsilon"},
               {"rope_theta", "rope.freq_base"},
               {"head_dim", "attention.key_length"},
               {"head_dim", "attention.value_length"},
               {"sliding_window", "attention.sliding_window"},
               {"rope_local_base_freq", "rope.freq_base_swa"},
               {"final_logit_softcapping", "final_logit_softcapping"},
               {"attn_logit_softcapping", "attn_logit_softcapping"},
               /* not a GGUF key (llama.cpp derives the scale): wick's own, read by gemma2.c */
               {"query_pre_attn_scalar", "attention.query_pre_attn_scalar"},
               /* Granite's multipliers, under the keys llama.cpp's converter gives them */
               {"embedding_multiplier", "embedding_scale"},
               {"residual_multiplier", "residual_scale"},
               {"attention_multiplier", "attention.scale"},
               {"logits_scaling", "logit_scale"}};
    char key[160];
    for (size_t i = 0; i < WK_ARRAY_LEN(map); i++) {
        json_t *v = json_object_get(cfg, map[i].hf);
        if (!v || json_is_null(v)) continue;
        if (!json_is_number(v))
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: %s must be a number", h->dir, map[i].hf);
        snprintf(key, sizeof key, "%s.%s", arch, map[i].gguf);
        json_object_set(h->kv, key, v);
    }
    /* transformers 5 writes rope_parameters (per attention kind for Gemma 3)
     * where 4 wrote rope_theta, rope_local_base_freq and rope_scaling */
    json_t *rp = json_object_get(cfg, "rope_parameters");
    if (rp && !json_is_null(rp) && !json_is_object(rp)) /* else its YaRN or LongRoPE would be dropped */
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: rope_parameters must be an object", h->dir);
    json_t *full = json_object_get(rp, "full_attention"), *swa = json_object_get(rp, "sliding_attention");
    if (!json_is_object(full)) full = rp;
    json_t *theta = json_object_get(full, "rope_theta"), *local = json_object_get(swa, "rope_theta");
    if ((theta && !json_is_null(theta) && !json_is_number(theta)) ||
        (local && !json_is_null(local) && !json_is_number(local)))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: rope_parameters rope_theta must be a number", h->dir);
    if (json_is_number(theta)) {
        snprintf(key, sizeof key, "%s.rope.freq_base", arch);
        json_object_set(h->kv, key, theta);
    }
    if (json_is_number(local)) {
        snprintf(key, sizeof key, "%s.rope.freq_base_swa", arch);
        json_object_set(h->kv, key, local);
    }
    json_t *rs = json_object_get(cfg, "rope_scaling"), *yarn = NULL;
    if ((!rs || json_is_null(rs)) && json_is_object(full)) rs = full;
    if (rs && !json_is_null(rs)) {
        const char *type = json_string_value(json_object_get(rs, "rope_type"));
        if (!type) type = json_string_value(json_object_get(rs, "type"));
        json_t *factor = json_object_get(rs, "factor");
        if (!json_is_object(rs) || !type)
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: rope_scaling needs a rope_type", h->dir);
        if ((strcmp(type, "linear") == 0 || strcmp(type, "proportional") == 0) && json_is_number(factor)) {
            snprintf(key, sizeof key, "%s.rope.scaling.factor", arch);
            json_object_set(h->kv, key, factor);
        } else if (strcmp(type, "yarn") == 0 && strcmp(arch, "gpt-oss") == 0) {
            yarn = rs; /* hf_gpt_oss.c */
        } else if (strcmp(type, "llama3") == 0 && (strcmp(arch, "llama") == 0 || strcmp(arch, "exaone") == 0)) {
            enum wk_status st = wk__hf_llama3_rope_to_kv(h, cfg, rs, arch, err);
            if (st) return st;
        } else if ((strcmp(type, "longrope") == 0 || strcmp(type, "su") == 0) && strcmp(arch, "phi3") == 0) {
            longrope = true;
        } else if (strcmp(type, "default") != 0 && strcmp(type, "proportional") != 0) {
            char t[64];
            wk_str_printable(type, strlen(type), t, sizeof t);
            return wk_error_set(err, WK_E_UNSUPPORTED,
                                "%s/config.json: rope_scaling type '%s' is not supported (wick knows "
                                "default and linear, llama3 for Llama, longrope for Phi-3, yarn for gpt-oss)",
                                h->dir, t);
        }
    }
    /* Gemma 2 and 3: sliding layers from layer_types, else every sliding_window_pattern-th is global */
    json_t *types = json_object_get(cfg, "layer_types"), *pat = json_object_get(cfg, "sliding_window_pattern");
    json_t *layers = json_object_get(cfg, "num_hidden_layers");
    bool gemma4 = strcmp(arch, "gemma4") == 0;
    if (json_is_null(types)) types = NULL; /* null: the family's default pattern */
    if (types && !json_is_array(types))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: layer_types must be a list", h->dir);
    /* (a block count out of 1..4096 is left to the loader, which names it) */
    if ((strcmp(arch, "gemma3") == 0 || strcmp(arch, "gemma2") == 0 || gemma4) && (json_is_array(types) || json_is_integer(pat)) &&
        json_integer_value(layers) >= 1 && json_integer_value(layers) <= 4096) {
        if (json_is_array(types) && (json_int_t)json_array_size(types) != json_integer_value(layers))
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: layer_types has %zu entries for %lld layers",
                                h->dir, json_array_size(types), (long long)json_integer_value(layers));
        json_t *arr = json_array();
        for (json_int_t i = 0; i < json_integer_value(layers); i++) {
            const char *t = json_string_value(json_array_get(types, (size_t)i));
            if (types && (!t || (strcmp(t, "sliding_attention") && strcmp(t, "full_attention")))) {
                json_decref(arr);
                return wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: layer_types[%lld] is not "
                                    "\"full_attention\" or \"sliding_attention\"", h->dir, (long long)i);
            }
            bool sliding = types ? strcmp(t, "sliding_attention") == 0 : (i + 1) % json_integer_value(pat) != 0;
            json_array_append_new(arr, json_boolean(sliding));
        }
        snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", arch);
        json_object_set_new(h->kv, key, arr);
    }
    /* biases wick does not apply would be dropped silently: refused */
    if (json_is_true(json_object_get(cfg, "mlp_bias")))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: mlp_bias (biases on the MLP projections) is not "
                            "supported", h->dir);
    enum wk_status st = wk__hf_llamalike_config(h->kv, cfg, arch, h->dir, err);
    if (st) return st;
    if (strcmp(arch, "gpt-oss") == 0) return wk__hf_gpt_oss_config(h->kv, cfg, yarn, h->dir, err);
    return wk__hf_family_config(h, cfg, rs, longrope, arch, err);
}

/* GLM-4-MoE-Lite's HF names under llama.cpp's deepseek2 ones
 * (architectures.md §6.3); kv_b_proj keeps its old GGUF name attn_kv_b
 * (glm4_moe_lite.c splits it), per-expert tensors become
 * blk.N.ffn_<gate|up|down>_exps.K.weight. *norm also for the selection
 * bias, read as F32. */
static bool glm4_moe_lite_name(const char *name, char *out, size_t cap, bool *norm)
{
    static const struct {
        const char *hf, *gguf;
    } blk[] = {{"input_layernorm.weight", "attn_norm.weight"},
               {"post_attention_layernorm.weight", "ffn_norm.weight"},
               {"self_attn.q_proj.weight", "attn_q.weight"},
               {"self_attn.q_a_proj.weight", "attn_q_a.weight"},
               {"self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight"},
               {"self_attn.q_b_proj.weight", "attn_q_b.weight"},
               {"self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight"},
               {"self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight"},
               {"self_attn.kv_b_proj.weight", "attn_kv_b.weight"},
               {"self_attn.o_proj.weight", "attn_output.weight"},
               {"mlp.gate_proj.weight", "ffn_gate.weight"},
               {"mlp.up_proj.weight", "ffn_up.weight"},
               {"mlp.down_proj.weight", "ffn_down.weight"},
               {"mlp.gate.weight", "ffn_gate_inp.weight"},
               {"mlp.gate.e_score_correction_bias", "exp_probs_b.bias"},
               {"mlp.experts.gate_up_proj", "ffn_gate_up_exps.weight"},
               {"mlp.experts.down_proj", "ffn_down_exps.weight"},
               {"mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"},
               {"mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight"},
               {"mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight"},
               /* Granite MoE's, as released and as transformers 5 names them */
               {"block_sparse_moe.input_linear.weight", "ffn_gate_up_exps.weight"},
               {"block_sparse_moe.experts.gate_up_proj", "ffn_gate_up_exps.weight"},
               {"block_sparse_moe.output_linear.weight", "ffn_down_exps.weight"},
               {"block_sparse_moe.experts.down_proj", "ffn_down_exps.weight"},
               {"block_sparse_moe.router.layer.weight", "ffn_gate_inp.weight"},
               {"block_sparse_moe.router.weight", "ffn_gate_inp.weight"}};
    int layer, used = 0;
    if (sscanf(name, "model.layers.%d.%n", &layer, &used) != 1 || used == 0 || layer < 0) return false;
    for (size_t i = 0; i < WK_ARRAY_LEN(blk); i++) {
        if (strcmp(name + used, blk[i].hf) != 0) continue;
        *norm = *norm || strcmp(blk[i].hf, "mlp.gate.e_score_correction_bias") == 0;
        return snprintf(out, cap, "blk.%d.%s", layer, blk[i].gguf) > 0;
    }
    int expert, used2 = 0;
    char proj[8];
    if (sscanf(name + used, "mlp.experts.%d.%7[a-z]_proj.weight%n", &expert, proj, &used2) == 2 && used2 > 0 &&
        name[used + used2] == 0 && expert >= 0 &&
        (strcmp(proj, "gate") == 0 || strcmp(proj, "up") == 0 || strcmp(proj, "down") == 0))
        return snprintf(out, cap, "blk.%d.ffn_%s_exps.%d.weight", layer, proj, expert) > 0;
    return false;
}

/* Gemma 4's HF names under llama.cpp's GGUF ones (architectures.md §4.4);
 * *norm also for the other 1-D tensors (layer scalar, router scales),
 * which the forward pass reads as F32 too. */
static bool gemma4_name(const char *name, char *out, size_t cap, bool *norm)
{
    static const struct {
        const char *hf, *gguf;
    } top[] = {{"model.embed_tokens_per_layer.weight", "per_layer_token_embd.weight"},
               /* the MTP assistant's own (architectures.md §5.2) */
               {"pre_projection.weight", "mtp.pre_proj.weight"},
               {"post_projection.weight", "mtp.post_proj.weight"},
               {"masked_embedding.centroids.weight", "mtp.centroids.weight"},
               {"masked_embedding.token_ordering", "mtp.token_ordering"},
               {"model.per_layer_model_projection.weight", "per_layer_model_proj.weight"},
               {"model.per_layer_projection_norm.weight", "per_layer_proj_norm.weight"}},
      blk[] = {{"input_layernorm.weight", "attn_norm.weight"},
               {"self_attn.q_proj.weight", "attn_q.weight"},
               {"self_attn.k_proj.weight", "attn_k.weight"},
               {"self_attn.v_proj.weight", "attn_v.weight"},
               {"self_attn.o_proj.weight", "attn_output.weight"},
               {"self_attn.q_norm.weight", "attn_q_norm.weight"},
               {"self_attn.k_norm.weight", "attn_k_norm.weight"},
               {"post_attention_layernorm.weight", "post_attention_norm.weight"},
               {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
               {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
               {"mlp.gate_proj.weight", "ffn_gate.weight"},
               {"mlp.up_proj.weight", "ffn_up.weight"},
               {"mlp.down_proj.weight", "ffn_down.weight"},
               {"layer_scalar", "layer_output_scale.weight"},
               {"per_layer_input_gate.weight", "inp_gate.weight"},
               {"per_layer_projection.weight", "proj.weight"},
               {"post_per_layer_input_norm.weight", "post_norm.weight"},
               {"router.proj.weight", "ffn_gate_inp.weight"},
               {"router.scale", "ffn_gate_inp.scale"},
               {"router.per_expert_scale", "ffn_down_exps.scale"},
               {"experts.gate_up_proj", "ffn_gate_up_exps.weight"},
               {"experts.down_proj", "ffn_down_exps.weight"},
               {"pre_feedforward_layernorm_2.weight", "pre_ffw_norm_2.weight"},
               {"post_feedforward_layernorm_1.weight", "post_ffw_norm_1.weight"},
               {"post_feedforward_layernorm_2.weight", "post_ffw_norm_2.weight"}};
    for (size_t i = 0; i < WK_ARRAY_LEN(top); i++)
        if (strcmp(name, top[i].hf) == 0) {
            *norm = *norm || strcmp(name, "masked_embedding.token_ordering") == 0; /* ids as F32 */
            return snprintf(out, cap, "%s", top[i].gguf) > 0;
        }
    int layer, used = 0;
    if (sscanf(name, "model.layers.%d.%n", &layer, &used) != 1 || used == 0 || layer < 0) return false;
    for (size_t i = 0; i < WK_ARRAY_LEN(blk); i++) {
        if (strcmp(name + used, blk[i].hf) != 0) continue;
        *norm = *norm || strcmp(blk[i].hf, "layer_scalar") == 0 ||
                (strncmp(blk[i].hf, "router.", 7) == 0 && strcmp(blk[i].hf, "router.proj.weight") != 0);
        return snprintf(out, cap, "blk.%d.%s", layer, blk[i].gguf) > 0;
    }
    return false;
}

/* The GGUF name of HF tensor name for arch, or false when wick has no use
 * for it. *norm: a norm gain. */
static bool gguf_name(const char *arch, const char *name, char *out, size_t cap, bool *norm)
{
    static const struct {
        const char *hf, *gguf;
    } top[] = {{"model.embed_tokens.weight", "token_embd.weight"},
               {"model.norm.weight", "output_norm.weight"},
               {"lm_head.weight", "output.weight"}};
    static const struct {
        const char *hf, *llama, *gemma3;
    } blk[] = {{"input_layernorm.weight", "attn_norm.weight", "attn_norm.weight"},
               {"self_attn.q_proj.weight", "attn_q.weight", "attn_q.weight"},
               {"self_attn.k_proj.weight", "attn_k.weight", "attn_k.weight"},
               {"self_attn.v_proj.weight", "attn_v.weight", "attn_v.weight"},
               {"self_attn.o_proj.weight", "attn_output.weight", "attn_output.weight"},
               {"self_attn.q_proj.bias", "attn_q.bias", NULL},
               {"self_attn.k_proj.bias", "attn_k.bias", NULL},
               {"self_attn.v_proj.bias", "attn_v.bias", NULL},
               {"self_attn.o_proj.bias", "attn_output.bias", NULL},
               {"self_attn.q_norm.weight", "attn_q_norm.weight", "attn_q_norm.weight"},
               {"self_attn.k_norm.weight", "attn_k_norm.weight", "attn_k_norm.weight"},
               {"post_attention_layernorm.weight", "ffn_norm.weight", "post_attention_norm.weight"},
               {"pre_feedforward_layernorm.weight", NULL, "ffn_norm.weight"},
               {"post_feedforward_layernorm.weight", NULL, "post_ffw_norm.weight"},
               {"mlp.gate_proj.weight", "ffn_gate.weight", "ffn_gate.weight"},
               {"mlp.up_proj.weight", "ffn_up.weight", "ffn_up.weight"},
               {"mlp.down_proj.weight", "ffn_down.weight", "ffn_down.weight"}};
    size_t n = strlen(name);
    /* norm gains, and biases, read as F32 */
    *norm = (n >= 11 && strcmp(name + n - 11, "norm.weight") == 0) || (n >= 5 && strcmp(name + n - 5, ".bias") == 0);
    char text[300]; /* Gemma 4 ConditionalGeneration: the text model under model.language_model. */
    if (strncmp(name, "model.language_model.", 21) == 0) {
        snprintf(text, sizeof text, "model.%s", name + 21);
        name = text;
    }
    for (size_t i = 0; i < WK_ARRAY_LEN(top); i++)
        if (strcmp(name, top[i].hf) == 0) return snprintf(out, cap, "%s", top[i].gguf) > 0;
    if (strcmp(arch, "gemma4") == 0) return gemma4_name(name, out, cap, norm);
    if (strcmp(arch, "deepseek2") == 0) return glm4_moe_lite_name(name, out, cap, norm);
    /* Qwen 3 MoE, Granite MoE: the router and experts as GLM-4-MoE-Lite's, the rest as Llama's */
    if ((strcmp(arch, "qwen3moe") == 0 || strcmp(arch, "granitemoe") == 0) && glm4_moe_lite_name(name, out, cap, norm))
        return true;
    if (wk__hf_llamalike_name(arch, name, out, cap, norm)) return true; /* EXAONE, Mixtral */
    int layer, used = 0;
    if (sscanf(name, "model.layers.%d.%n", &layer, &used) != 1 || used == 0 || layer < 0) return false;
    /* Gemma 2/3 and OLMo 2: post_attention_layernorm is a post-norm, not the FFN's pre-norm */
    bool sandwich = strcmp(arch, "gemma3") == 0 || strcmp(arch, "gemma2") == 0 || strcmp(arch, "olmo2") == 0;
    if (strcmp(arch, "phi3") == 0) { /* the fused projections, named as llama.cpp's converter names them */
        if (strcmp(name + used, "self_attn.qkv_proj.weight") == 0) return snprintf(out, cap, "blk.%d.attn_qkv.weight", layer) > 0;
        if (strcmp(name + used, "mlp.gate_up_proj.weight") == 0) return snprintf(out, cap, "blk.%d.ffn_up.weight", layer) > 0;
    }
    for (size_t i = 0; i < WK_ARRAY_LEN(blk); i++) {
        const char *g = sandwich ? blk[i].gemma3 : blk[i].llama;
        if (g && strcmp(name + used, blk[i].hf) == 0) return snprintf(out, cap, "blk.%d.%s", layer, g) > 0;
    }
    return false;
}

static float to_f32(enum wk_st_dtype t, const void *p, int64_t i)
{
    const uint8_t *b = (const uint8_t *)p;
    if (t == WK_ST_F32) {
        float f;
        memcpy(&f, b + 4 * i, 4);
        return f;
    }
    if (t == WK_ST_I32 || t == WK_ST_I64) { /* token ids: exact in F32 below 2^24 */
        int64_t v = 0;
        if (t == WK_ST_I32) {
            int32_t v32;
            memcpy(&v32, b + 4 * i, 4);
            v = v32;
        } else {
            memcpy(&v, b + 8 * i, 8);
        }
        return (float)v;
    }
    uint16_t h;
    memcpy(&h, b + 2 * i, 2);
    if (t == WK_ST_BF16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    return wk_f16_to_f32(h);
}

/* The GGUF block type a quantized tensor's metadata names (quantize.c),
 * or WK_DTYPE_COUNT. */
static enum wk_dtype block_type(const struct wk_safetensors *f, const char *name)
{
    char key[300];
    snprintf(key, sizeof key, "wick.dtype.%s", name);
    const char *v = wk_safetensors_metadata(f, key);
    for (int i = 0; v && i < WK_DTYPE_COUNT; i++) {
        const struct wk_dtype_traits *tr = wk_dtype_traits_get((enum wk_dtype)i);
        if (tr && tr->name && strcmp(tr->name, v) == 0 && tr->supported && tr->vec_dot) return (enum wk_dtype)i;
    }
    return WK_DTYPE_COUNT;
}

/* A new tensor entry named name (zeroed; h->n_tensors is not advanced),
 * or NULL with err set (WK_E_NOMEM). */
static struct wk_tensor *new_tensor(struct wk_hf *h, const char *name, struct wk_error *err)
{
    if (h->n_tensors == h->cap) {
        int cap = h->cap ? h->cap * 2 : 256;
        struct wk_tensor *nt = wk_realloc(h->tensors, (size_t)cap * sizeof *nt);
        if (!nt) return wk_error_set(err, WK_E_NOMEM, "out of memory"), NULL;
        h->tensors = nt;
        char(*nn)[96] = wk_realloc(h->tensor_names, (size_t)cap * sizeof *nn);
        if (!nn) return wk_error_set(err, WK_E_NOMEM, "out of memory"), NULL;
        h->tensor_names = nn;
        h->cap = cap;
    }
    struct wk_tensor *w = &h->tensors[h->n_tensors];
    memset(w, 0, sizeof *w);
    snprintf(h->tensor_names[h->n_tensors], 96, "%s", name);
    return w;
}

/* bytes of memory h owns (freed with it), or NULL. */
static void *own(struct wk_hf *h, size_t bytes)
{
    void *p = wk_malloc(bytes ? bytes : 1);
    float **o = wk_realloc(h->owned, (size_t)(h->n_owned + 1) * sizeof *o);
    if (o) h->owned = o;
    if (!p || !o) {
        wk_free(p);
        return NULL;
    }
    h->owned[h->n_owned++] = p;
    return p;
}

/* gpt-oss's fused, transposed experts (or their biases) as the GGUF's
 * gate / up / down tensors (hf_gpt_oss.c), copies owned by h; biases F32. */
static enum wk_status add_gpt_oss_experts(struct wk_hf *h, const struct wk_st_tensor *t, enum wk_hf_gpt_oss_kind kind,
                                          const char *name, struct wk_error *err)
{
    const bool bias = kind == WK_HF_OSS_GATE_UP_BIAS;
    const int parts = kind == WK_HF_OSS_DOWN ? 1 : 2;
    if (kind == WK_HF_OSS_MXFP4 || t->n_dims != (bias ? 2 : 3) ||
        (t->dtype != WK_ST_F32 && t->dtype != WK_ST_F16 && t->dtype != WK_ST_BF16) || t->shape[t->n_dims - 1] % parts)
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: tensor %s: %d dims of %s (wick takes gpt-oss experts as "
                            "F32, F16 or BF16 [n_expert]%s[cols], not MXFP4 blocks)", h->dir, t->name, t->n_dims,
                            wk_st_dtype_name(t->dtype), bias ? "" : "[rows]");
    const int64_t NE = t->shape[0], R = bias ? 1 : t->shape[1], C = t->shape[t->n_dims - 1], nc = C / parts;
    const size_t es = t->dtype == WK_ST_F32 ? 4 : 2;
    for (int p = 0; p < parts; p++) {
        char nm[96];
        snprintf(nm, sizeof nm, "%s", name);
        char *g = strstr(nm, "ffn_gate_exps");
        if (p == 1 && g) memmove(g + 6, g + 8, strlen(g + 8) + 1), memcpy(g, "ffn_up", 6);
        if (json_object_get(h->names, nm))
            return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s appears twice", h->dir, t->name);
        void *buf = own(h, (size_t)(NE * R * nc) * es);
        float *f = bias && buf ? own(h, (size_t)(NE * nc) * sizeof(float)) : NULL;
        struct wk_tensor *w = buf && (f || !bias) ? new_tensor(h, nm, err) : NULL;
        if (!w) return buf && (f || !bias) ? WK_E_NOMEM : wk_error_set(err, WK_E_NOMEM, "out of memory");
        wk__hf_pick_columns(t->data, NE, R, C, es, p, parts, buf);
        for (int64_t i = 0; f && i < NE * nc; i++) f[i] = to_f32(t->dtype, buf, i);
        w->n_dims = bias ? 2 : 3;
        w->ne[0] = bias ? nc : R;
        w->ne[1] = bias ? NE : nc;
        w->ne[2] = bias ? 1 : NE;
        w->ne[3] = 1;
        w->dtype = f || t->dtype == WK_ST_F32 ? WK_DTYPE_F32 : t->dtype == WK_ST_F16 ? WK_DTYPE_F16 : WK_DTYPE_BF16;
        w->data = f ? (void *)f : buf;
        w->nb[0] = wk_dtype_traits_get(w->dtype)->block_bytes;
        w->nb[1] = w->nb[0] * (size_t)w->ne[0];
        w->nb[2] = w->nb[1] * (size_t)w->ne[1];
        w->nb[3] = w->nb[2] * (size_t)w->ne[2];
        json_object_set_new(h->names, nm, json_integer(h->n_tensors++));
    }
    return WK_OK;
}

static enum wk_status add_tensor(struct wk_hf *h, const char *arch, const struct wk_safetensors *f,
                                 const struct wk_st_tensor *t, struct wk_error *err)
{
    char name[96];
    bool norm;
    enum wk_hf_gpt_oss_kind k = WK_HF_OSS_OTHER;
    if (strcmp(arch, "gpt-oss") == 0) k = wk__hf_gpt_oss_name(t->name, name, sizeof name, &norm);
    if (k > WK_HF_OSS_PLAIN) return add_gpt_oss_experts(h, t, k, name, err);
    if (k == WK_HF_OSS_OTHER && !gguf_name(arch, t->name, name, sizeof name, &norm)) return WK_OK; /* unused */
    if (json_object_get(h->names, name))
        return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s appears twice", h->dir, t->name);
    enum wk_dtype q = t->dtype == WK_ST_U8 && (t->n_dims == 2 || t->n_dims == 3) ? block_type(f, t->name) : WK_DTYPE_COUNT;
    if (q == WK_DTYPE_COUNT &&
        (t->n_dims > 3 || (t->n_dims < 1 && !norm) ||
         (t->dtype != WK_ST_F32 && t->dtype != WK_ST_F16 && t->dtype != WK_ST_BF16 &&
         !(norm && (t->dtype == WK_ST_I32 || t->dtype == WK_ST_I64)))))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: tensor %s: %d dims of %s (wick takes 1 to 3 dims of F32, F16, BF16)",
                            h->dir, t->name, t->n_dims, wk_st_dtype_name(t->dtype));
    struct wk_tensor *w = new_tensor(h, name, err);
    if (!w) return WK_E_NOMEM;
    w->n_dims = WK_MAX(t->n_dims, 1);
    w->ne[0] = t->n_dims >= 1 ? t->shape[t->n_dims - 1] : 1; /* a 0-dim scalar: one value */
    w->ne[1] = t->n_dims >= 2 ? t->shape[t->n_dims - 2] : 1;
    w->ne[2] = t->n_dims == 3 ? t->shape[0] : 1;
    w->ne[3] = 1;
    w->dtype = t->dtype == WK_ST_F32 ? WK_DTYPE_F32 : t->dtype == WK_ST_F16 ? WK_DTYPE_F16 : WK_DTYPE_BF16;
    w->data = t->data;
    if (q != WK_DTYPE_COUNT) { /* rows of GGUF blocks ([n_expert][rows][bytes] for experts) */
        const struct wk_dtype_traits *tr = wk_dtype_traits_get(q);
        const int64_t bytes = t->shape[t->n_dims - 1];
        if (bytes % (int64_t)tr->block_bytes != 0)
            return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s: %lld bytes a row is not whole %s blocks", h->dir,
                                t->name, (long long)bytes, tr->name);
        w->dtype = q;
        w->ne[0] = bytes / (int64_t)tr->block_bytes * tr->block_size;
        w->nb[0] = tr->block_bytes;
        w->nb[1] = (size_t)bytes;
        w->nb[2] = w->nb[1] * (size_t)w->ne[1];
        w->nb[3] = w->nb[2] * (size_t)w->ne[2];
        json_object_set_new(h->names, name, json_integer(h->n_tensors++));
        return WK_OK;
    }
    if (norm) { /* F32 for the kernels, plus Gemma's 1 */
        float *f = own(h, (size_t)t->n_elements * sizeof *f);
        if (!f) return wk_error_set(err, WK_E_NOMEM, "out of memory");
        float add = strcmp(arch, "gemma3") == 0 || strcmp(arch, "gemma2") == 0 ? 1.0f : 0.0f;
        for (int64_t i = 0; i < (int64_t)t->n_elements; i++) f[i] = to_f32(t->dtype, t->data, i) + add;
        w->dtype = WK_DTYPE_F32;
        w->data = f;
    }
    size_t es = wk_dtype_traits_get(w->dtype)->block_bytes; /* plain types: blocks of one */
    w->nb[0] = es;
    w->nb[1] = es * (size_t)w->ne[0];
    w->nb[2] = w->nb[1] * (size_t)w->ne[1];
    w->nb[3] = w->nb[2] * (size_t)w->ne[2];
    json_object_set_new(h->names, name, json_integer(h->n_tensors++));
    return WK_OK;
}

/* The safetensors files of the folder: model*.safetensors. */
static enum wk_status open_files(struct wk_hf *h, const char *arch, bool resident, struct wk_error *err)
{
    DIR *d = opendir(h->dir);
    struct dirent *e;
    enum wk_status st = WK_OK;
    while (!st && d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 12 || strcmp(e->d_name + n - 12, ".safetensors") != 0 || strncmp(e->d_name, "model", 5) != 0)
            continue;
        if (h->n_files == MAX_FILES) {
            st = wk_error_set(err, WK_E_UNSUPPORTED, "%s: more than %d safetensors files", h->dir, MAX_FILES);
            break;
        }
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", h->dir, e->d_name);
        if ((st = wk_safetensors_open_ex(path, resident, &h->files[h->n_files], err))) break;
        struct wk_safetensors *f = h->files[h->n_files++];
        for (int64_t i = 0; !st && i < wk_safetensors_n_tensors(f); i++)
            st = add_tensor(h, arch, f, wk_safetensors_tensor(f, i), err);
    }
    if (d) closedir(d);
    if (!st && h->n_files == 0)
        st = wk_error_set(err, WK_E_NOT_FOUND, "%s: no model*.safetensors file", h->dir);
    return st;
}

/* The GGUF architecture a config.json model_type is read as (the first of
 * the family's gguf_archs whose hf_model_types has it), or NULL. */
static const char *arch_of_model_type(const char *type)
{
    size_t n;
    const struct wk_family *const *fs = wk__families(&n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < WK_ARRAY_LEN(fs[i]->hf_model_types) && fs[i]->hf_model_types[j]; j++) {
            const char *t = fs[i]->hf_model_types[j];
            size_t len = strlen(t);
            if (len && t[len - 1] == '*' ? strncmp(type, t, len - 1) == 0 : strcmp(type, t) == 0)
                return fs[i]->gguf_archs[0];
        }
    return NULL;
}

/* "a, b*, c" of every family's model_type values, for messages. */
static void list_model_types(char *out, size_t cap)
{
    size_t n, len = 0;
    const struct wk_family *const *fs = wk__families(&n);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < WK_ARRAY_LEN(fs[i]->hf_model_types) && fs[i]->hf_model_types[j] && len < cap;
             j++) {
            int w = snprintf(out + len, cap - len, "%s%s", len ? ", " : "", fs[i]->hf_model_types[j]);
            if (w > 0) len += (size_t)w;
        }
}

enum wk_status wk__hf_open(struct wk_model *m, const char *dir, bool resident, struct wk_error *err)
{
    struct wk_hf *h = wk_calloc(1, sizeof *h);
    if (!h) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    m->hf = h;
    snprintf(h->dir, sizeof h->dir, "%s", dir);
    h->kv = json_object();
    h->names = json_object();
    enum wk_status st = WK_OK;
    json_t *cfg = load_json(dir, "config.json", true, err, &st);
    if (st) return st;
    json_t *text = json_object_get(cfg, "text_config");
    json_t *c = json_is_object(text) ? text : cfg;
    const char *type = json_string_value(json_object_get(c, "model_type"));
    const char *arch = type ? arch_of_model_type(type) : NULL;
    if (!arch) {
        char t[64], known[256];
        wk_str_printable(type ? type : "(none)", strlen(type ? type : "(none)"), t, sizeof t);
        list_model_types(known, sizeof known);
        st = wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: model_type '%s' (wick supports %s)", dir, t, known);
    }
    if (!st) {
        json_object_set_new(h->kv, "general.architecture", json_string(arch));
        st = config_to_kv(h, c, arch, err);
    }
    /* a Gemma 4 MTP assistant: its own fields sit beside text_config (§5.1) */
    static const char *const mtp_keys[] = {"backbone_hidden_size", "use_ordered_embeddings", "num_centroids",
                                           "centroid_intermediate_top_k"};
    for (size_t i = 0; !st && arch && strcmp(arch, "gemma4") == 0 && i < WK_ARRAY_LEN(mtp_keys); i++) {
        json_t *v = json_object_get(cfg, mtp_keys[i]);
        if (!v || json_is_null(v)) continue;
        if (json_is_boolean(v)) v = json_integer(json_is_true(v));
        else if (json_is_number(v)) json_incref(v);
        else {
            st = wk_error_set(err, WK_E_FORMAT, "%s/config.json: %s must be a number", dir, mtp_keys[i]);
            break;
        }
        char key[160];
        snprintf(key, sizeof key, "gemma4.mtp.%s", mtp_keys[i]);
        json_object_set_new(h->kv, key, v);
    }
    if (!st) { /* generation_config.json's suppress_tokens: ids the model never emits */
        json_t *gc = load_json(dir, "generation_config.json", false, err, &st);
        json_t *sup = json_object_get(gc, "suppress_tokens");
        if (json_is_array(sup)) {
            char key[160];
            snprintf(key, sizeof key, "%s.suppress_tokens", arch);
            json_object_set(h->kv, key, sup);
        }
        json_decref(gc);
    }
    if (!st) st = open_files(h, arch, resident, err);
    if (!st) st = wk__hf_check_config(h, c, arch, err);
    /* the chat template: tokenizer_config.json's, or chat_template.jinja */
    json_t *tc = st ? NULL : load_json(dir, "tokenizer_config.json", false, err, &st);
    const char *tpl = json_string_value(json_object_get(tc, "chat_template"));
    if (tpl) h->chat_template = wk_asprintf("%s", tpl);
    json_decref(tc);
    if (!st && !h->chat_template) {
        char path[4300];
        snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
        FILE *f = fopen(path, "rb");
        if (f) {
            char *buf = wk_calloc(1, 1 << 20);
            if (buf) fread(buf, 1, (1 << 20) - 1, f);
            h->chat_template = buf;
            fclose(f);
        }
    }
    json_decref(cfg);
    return st;
}

void wk__hf_close(struct wk_hf *h)
{
    if (!h) return;
    for (int i = 0; i < h->n_files; i++) wk_safetensors_close(h->files[i]);
    for (int i = 0; i < h->n_owned; i++) wk_free(h->owned[i]);
    wk_free(h->owned);
    wk_free(h->tensors);
    wk_free(h->tensor_names);
    wk_free(h->chat_template);
    json_decref(h->kv);
    json_decref(h->names);
    wk_free(h);
}

const char *wk__hf_dir(const struct wk_hf *h) { return h->dir; }
const char *wk__hf_chat_template(const struct wk_hf *h) { return h->chat_template; }

const char *wk__hf_arch(const struct wk_hf *h)
{
    return json_string_value(json_object_get(h->kv, "general.architecture"));
}

bool wk__hf_number(const struct wk_hf *h, const char *key, double *out)
{
    json_t *v = json_object_get(h->kv, key);
    if (!json_is_number(v)) return false;
    *out = json_number_value(v);
    return true;
}

int wk__hf_bools(const struct wk_hf *h, const char *key, bool *out, int max)
{
    json_t *a = json_object_get(h->kv, key);
    if (!json_is_array(a)) return -1;
    int n = (int)json_array_size(a);
    for (int i = 0; i < n && i < max; i++) out[i] = json_is_true(json_array_get(a, (size_t)i));
    return n;
}

int wk__hf_ints(const struct wk_hf *h, const char *key, int64_t *out, int max)
{
    json_t *a = json_object_get(h->kv, key);
    if (!json_is_array(a)) return -1;
    int n = (int)json_array_size(a);
    for (int i = 0; i < n; i++) {
        json_t *v = json_array_get(a, (size_t)i);
        double d = json_number_value(v); /* files other than config.json are read with reals */
        if (!json_is_number(v) || !(fabs(d) < 9e18) || d != (double)(int64_t)d) return -2; /* range before the cast */
        if (i < max) out[i] = (int64_t)d;
    }
    return n;
}

int wk__hf_floats(const struct wk_hf *h, const char *key, float *out, int max)
{
    json_t *a = json_object_get(h->kv, key);
    if (!json_is_array(a)) return -1;
    for (size_t i = 0; i < json_array_size(a) && (int)i < max; i++) out[i] = (float)json_number_value(json_array_get(a, i));
    return (int)json_array_size(a);
}

int wk__hf_n_tensors(const struct wk_hf *h) { return h->n_tensors; }
const char *wk__hf_tensor_name(const struct wk_hf *h, int i) { return h->tensor_names[i]; }

const struct wk_tensor *wk__hf_tensor(const struct wk_hf *h, const char *name)
{
    json_t *i = json_object_get(h->names, name);
    return i ? &h->tensors[json_integer_value(i)] : NULL;
}

void wk__hf_count_params(const struct wk_hf *h, uint64_t per_dtype[WK_DTYPE_COUNT])
{
    for (int i = 0; i < h->n_tensors; i++) per_dtype[h->tensors[i].dtype] += (uint64_t)wk_tensor_n_elements(&h->tensors[i]);
}

uint64_t wk__hf_weight_bytes(const struct wk_hf *h)
{
    uint64_t n = 0;
    for (int i = 0; i < h->n_tensors; i++)
        n += h->tensors[i].nb[1] * (uint64_t)h->tensors[i].ne[1];
    return n;
}
