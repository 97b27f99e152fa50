/*
 * hf_config.c - the config.json fields of the families whose keys are
 * more than hf.c's common table: each family's own under the GGUF keys
 * llama.cpp's convert_hf_to_gguf.py writes for it (or wick's own where the
 * converter derives a value), so the family loaders read a folder as they
 * read a GGUF. hf.c calls wk__hf_family_config last in its config pass.
 */
#include "hf_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Gemma 4's fields (architectures.md §4.2-4.3) under the keys llama.cpp's
 * GGUF conversion writes: the two head dims (key_length = the full layers'
 * global_head_dim, key_length_swa = head_dim), per-layer arrays for
 * head_count_kv (num_global_key_value_heads on full layers when K = V)
 * and feed_forward_length (doubled on the KV-shared layers with
 * use_double_wide_mlp), shared_kv_layers, the per-layer-input width, the
 * experts, the full layers' partial rotary factor (GGUF carries it as
 * rope_freqs.weight; gemma4.c builds that from this key).
 */
static enum wk_status gemma4_config_to_kv(struct wk_hf *h, json_t *cfg, const char *arch, struct wk_error *err)
{
    enum wk_status st;
    double n_layer, head_dim, global_dim, nkv, nkv_global, shared, ff, ple, n_exp, n_used, ff_exp;
    if ((st = wk__hf_cfg_number(h, cfg, "num_hidden_layers", 0, &n_layer, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "head_dim", 256, &head_dim, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "global_head_dim", 512, &global_dim, err)) /* transformers' default */ ||
        (st = wk__hf_cfg_number(h, cfg, "num_key_value_heads", 1, &nkv, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "num_global_key_value_heads", nkv, &nkv_global, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "num_kv_shared_layers", 0, &shared, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "intermediate_size", 0, &ff, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "hidden_size_per_layer_input", 0, &ple, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "num_experts", 0, &n_exp, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "top_k_experts", 0, &n_used, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "moe_intermediate_size", 0, &ff_exp, err)))
        return st;
    if (!(n_layer >= 1 && n_layer <= 4096 && shared >= 0 && shared <= n_layer))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: num_hidden_layers or num_kv_shared_layers out of range",
                            h->dir);
    bool k_eq_v = json_is_true(json_object_get(cfg, "attention_k_eq_v"));
    bool wide = json_is_true(json_object_get(cfg, "use_double_wide_mlp"));
    bool moe = json_is_true(json_object_get(cfg, "enable_moe_block"));
    char key[160];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", arch);
    json_t *pattern = json_object_get(h->kv, key);
    /* transformers may also write per_layer_config {layer: {head_dim, num_key_value_heads}} */
    json_t *plc = json_object_get(cfg, "per_layer_config");
    json_t *kv_arr = json_array(), *ff_arr = json_array();
    for (int i = 0; i < (int)n_layer; i++) {
        json_t *pl = json_is_object(plc) ? json_object_get(plc, (snprintf(key, sizeof key, "%d", i), key)) : NULL;
        bool sliding = pattern ? json_is_true(json_array_get(pattern, (size_t)i)) : true;
        json_t *pkv = json_object_get(pl, "num_key_value_heads");
        double kvh = json_is_number(pkv) ? json_number_value(pkv) : !sliding && k_eq_v ? nkv_global : nkv;
        json_array_append_new(kv_arr, json_integer((json_int_t)kvh));
        bool is_shared = i >= n_layer - shared;
        json_array_append_new(ff_arr, json_integer((json_int_t)(wide && is_shared ? 2 * ff : ff)));
        json_t *phd = json_object_get(pl, "head_dim");
        if (!sliding && json_is_number(phd)) global_dim = json_number_value(phd);
    }
    wk__hf_set_kv(h, arch, "attention.head_count_kv", kv_arr);
    wk__hf_set_kv(h, arch, "feed_forward_length", ff_arr);
    wk__hf_set_kv(h, arch, "attention.key_length", json_real(global_dim));
    wk__hf_set_kv(h, arch, "attention.value_length", json_real(global_dim));
    wk__hf_set_kv(h, arch, "attention.key_length_swa", json_real(head_dim));
    wk__hf_set_kv(h, arch, "attention.value_length_swa", json_real(head_dim));
    wk__hf_set_kv(h, arch, "attention.shared_kv_layers", json_real(shared));
    wk__hf_set_kv(h, arch, "embedding_length_per_layer_input", json_real(ple));
    if (moe) {
        wk__hf_set_kv(h, arch, "expert_count", json_real(n_exp));
        wk__hf_set_kv(h, arch, "expert_used_count", json_real(n_used));
        wk__hf_set_kv(h, arch, "expert_feed_forward_length", json_real(ff_exp));
    }
    json_t *full = json_object_get(json_object_get(cfg, "rope_parameters"), "full_attention");
    json_t *partial = json_object_get(full, "partial_rotary_factor");
    if (json_is_number(partial)) wk__hf_set_kv(h, arch, "rope.partial_rotary_factor", json_real(json_number_value(partial)));
    return WK_OK;
}

/*
 * GLM-4-MoE-Lite's fields (architectures.md §6.1-6.2) under the keys
 * llama.cpp's converter writes (arch deepseek2): key_length and
 * value_length the absorbed sizes (kv_lora_rank + rope, kv_lora_rank),
 * the per-head ones under *_mla, head_count_kv 1; the experts; the
 * leading dense layers from mlp_layer_types (transformers 5) or
 * first_k_dense_replace (the released config.json), 1 when neither is
 * given (transformers' default). A router always sigmoid
 * (expert_gating_func 2).
 */
static enum wk_status glm4_moe_lite_config_to_kv(struct wk_hf *h, json_t *cfg, const char *arch, struct wk_error *err)
{
    enum wk_status st;
    double n_layer, q_lora, kv_lora, nope, rope, v, n_exp, n_used, n_shared, ff_exp, scale, dense, groups;
    if ((st = wk__hf_cfg_number(h, cfg, "num_hidden_layers", 0, &n_layer, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "q_lora_rank", 0, &q_lora, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "kv_lora_rank", 0, &kv_lora, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "qk_nope_head_dim", 0, &nope, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "qk_rope_head_dim", 0, &rope, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "v_head_dim", 0, &v, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "n_routed_experts", 0, &n_exp, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "num_experts_per_tok", 0, &n_used, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "n_shared_experts", 0, &n_shared, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "moe_intermediate_size", 0, &ff_exp, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "routed_scaling_factor", 1, &scale, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "first_k_dense_replace", 1, &dense, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "n_group", 1, &groups, err)))
        return st;
    static const char *const needed[] = {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"};
    for (size_t i = 0; i < WK_ARRAY_LEN(needed); i++)
        if (!json_is_number(json_object_get(cfg, needed[i])))
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: %s is missing", h->dir, needed[i]);
    if (n_used > n_exp)
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: num_experts_per_tok %g exceeds n_routed_experts %g",
                            h->dir, n_used, n_exp);
    if (groups > 1)
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: n_group %g (expert groups) is not supported",
                            h->dir, groups);
    json_t *inter = json_object_get(cfg, "rope_interleave");
    if (json_is_false(inter))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: rope_interleave false is not supported", h->dir);
    if (json_is_true(json_object_get(cfg, "attention_bias")))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: attention_bias true is not supported", h->dir);
    json_t *types = json_object_get(cfg, "mlp_layer_types");
    if (json_is_array(types)) { /* dense layers first, then sparse */
        if (json_array_size(types) != (size_t)n_layer)
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: mlp_layer_types has %zu entries for %g layers",
                                h->dir, json_array_size(types), n_layer);
        size_t i = 0;
        while (i < json_array_size(types) &&
               strcmp(json_string_value(json_array_get(types, i)) ? json_string_value(json_array_get(types, i)) : "",
                      "dense") == 0)
            i++;
        dense = (double)i;
        for (; i < json_array_size(types); i++) {
            const char *t = json_string_value(json_array_get(types, i));
            if (!t || strcmp(t, "sparse") != 0)
                return wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: mlp_layer_types[%zu] is not \"sparse\" "
                                    "after the leading dense layers (wick takes dense layers first, then sparse)", h->dir, i);
        }
    }
    if (q_lora > 0) wk__hf_set_kv(h, arch, "attention.q_lora_rank", json_real(q_lora));
    wk__hf_set_kv(h, arch, "attention.kv_lora_rank", json_real(kv_lora));
    wk__hf_set_kv(h, arch, "attention.head_count_kv", json_real(1));
    wk__hf_set_kv(h, arch, "attention.key_length", json_real(kv_lora + rope));
    wk__hf_set_kv(h, arch, "attention.value_length", json_real(kv_lora));
    wk__hf_set_kv(h, arch, "attention.key_length_mla", json_real(nope + rope));
    wk__hf_set_kv(h, arch, "attention.value_length_mla", json_real(v));
    wk__hf_set_kv(h, arch, "rope.dimension_count", json_real(rope));
    wk__hf_set_kv(h, arch, "leading_dense_block_count", json_real(dense));
    wk__hf_set_kv(h, arch, "expert_count", json_real(n_exp));
    wk__hf_set_kv(h, arch, "expert_used_count", json_real(n_used));
    wk__hf_set_kv(h, arch, "expert_shared_count", json_real(n_shared));
    wk__hf_set_kv(h, arch, "expert_feed_forward_length", json_real(ff_exp));
    wk__hf_set_kv(h, arch, "expert_weights_scale", json_real(scale));
    wk__hf_set_kv(h, arch, "expert_weights_norm", json_real(json_is_true(json_object_get(cfg, "norm_topk_prob")) ? 1 : 0));
    wk__hf_set_kv(h, arch, "expert_gating_func", json_real(2));
    return WK_OK;
}

/* Qwen 3 MoE's experts under llama.cpp's qwen3moe keys (num_experts, or
 * num_local_experts as transformers 5 writes it; num_experts_per_tok;
 * moe_intermediate_size), and norm_topk_prob (transformers' default
 * false) as expert_weights_norm. Which layers are dense (mlp_only_layers,
 * decoder_sparse_step) the tensors say: qwen3_moe.c looks for the router. */
static enum wk_status qwen3_moe_config_to_kv(struct wk_hf *h, json_t *cfg, const char *arch, struct wk_error *err)
{
    enum wk_status st;
    double n_exp, n_used, ff_exp;
    if ((st = wk__hf_cfg_number(h, cfg, json_object_get(cfg, "num_experts") ? "num_experts" : "num_local_experts", 0, &n_exp,
                         err)) ||
        (st = wk__hf_cfg_number(h, cfg, "num_experts_per_tok", 0, &n_used, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "moe_intermediate_size", 0, &ff_exp, err)))
        return st;
    wk__hf_set_kv(h, arch, "expert_count", json_real(n_exp));
    wk__hf_set_kv(h, arch, "expert_used_count", json_real(n_used));
    wk__hf_set_kv(h, arch, "expert_feed_forward_length", json_real(ff_exp));
    wk__hf_set_kv(h, arch, "expert_weights_norm", json_real(json_is_true(json_object_get(cfg, "norm_topk_prob")) ? 1 : 0));
    return WK_OK;
}

/* Granite MoE's experts (num_local_experts, num_experts_per_tok; each of
 * intermediate_size, which is feed_forward_length already). */
static enum wk_status granite_moe_config_to_kv(struct wk_hf *h, json_t *cfg, const char *arch, struct wk_error *err)
{
    enum wk_status st;
    double n_exp, n_used;
    if ((st = wk__hf_cfg_number(h, cfg, "num_local_experts", 0, &n_exp, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "num_experts_per_tok", 0, &n_used, err)))
        return st;
    wk__hf_set_kv(h, arch, "expert_count", json_real(n_exp));
    wk__hf_set_kv(h, arch, "expert_used_count", json_real(n_used));
    return WK_OK;
}

/* Qwen 2's sliding window as transformers' Qwen2Config reads it: none
 * unless use_sliding_window (sliding_window is then dropped); sliding
 * layers from layer_types, else those at or past max_window_layers
 * (default 28). */
static enum wk_status qwen2_config_to_kv(struct wk_hf *h, json_t *cfg, const char *arch, struct wk_error *err)
{
    char key[160];
    json_t *use = json_object_get(cfg, "use_sliding_window"), *win = json_object_get(cfg, "sliding_window");
    if (use && !json_is_null(use) && !json_is_boolean(use))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: use_sliding_window must be a boolean", h->dir);
    snprintf(key, sizeof key, "%s.attention.sliding_window", arch);
    if (!json_is_true(use) || !json_is_number(win)) {
        json_object_del(h->kv, key);
        return WK_OK;
    }
    json_t *types = json_object_get(cfg, "layer_types"), *mwl = json_object_get(cfg, "max_window_layers");
    json_int_t n_layer = json_integer_value(json_object_get(cfg, "num_hidden_layers"));
    if (n_layer < 1 || n_layer > 4096) return WK_OK; /* the loader names a bad block_count */
    if (types && !json_is_null(types) && (!json_is_array(types) || (json_int_t)json_array_size(types) != n_layer))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: layer_types must be a list of %lld entries", h->dir,
                            (long long)n_layer);
    if (mwl && !json_is_null(mwl) && !json_is_integer(mwl))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: max_window_layers must be an integer", h->dir);
    json_int_t first = json_is_integer(mwl) ? json_integer_value(mwl) : 28;
    json_t *arr = json_array();
    for (json_int_t i = 0; i < n_layer; i++) {
        const char *t = json_string_value(json_array_get(types, (size_t)i));
        if (json_is_array(types) && (!t || (strcmp(t, "sliding_attention") && strcmp(t, "full_attention")))) {
            json_decref(arr);
            return wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: layer_types[%lld] is not "
                                "\"full_attention\" or \"sliding_attention\"", h->dir, (long long)i);
        }
        json_array_append_new(arr, json_boolean(json_is_array(types) ? strcmp(t, "sliding_attention") == 0 : i >= first));
    }
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", arch);
    json_object_set_new(h->kv, key, arr);
    return WK_OK;
}

/*
 * SmolLM3's NoPE layers (transformers' SmolLM3Config) under llama.cpp's key
 * <arch>.attention.rope_pattern, a bool a layer, true = RoPE: from
 * no_rope_layers (0/1 integers, 1 = RoPE), else all but every
 * no_rope_layer_interval-th layer (default 4). The sliding window is off
 * unless use_sliding_window, which wick refuses.
 */
static enum wk_status smollm3_config_to_kv(struct wk_hf *h, json_t *cfg, const char *arch, struct wk_error *err)
{
    char key[160];
    if (json_is_true(json_object_get(cfg, "use_sliding_window")))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: use_sliding_window true is not supported",
                            h->dir);
    snprintf(key, sizeof key, "%s.attention.sliding_window", arch);
    json_object_del(h->kv, key);
    json_int_t n_layer = json_integer_value(json_object_get(cfg, "num_hidden_layers"));
    if (n_layer < 1 || n_layer > 4096) return WK_OK; /* the loader names a bad block_count */
    json_t *list = json_object_get(cfg, "no_rope_layers");
    double interval;
    enum wk_status st = wk__hf_cfg_number(h, cfg, "no_rope_layer_interval", 4, &interval, err);
    if (st) return st;
    if (list && !json_is_null(list) && (!json_is_array(list) || (json_int_t)json_array_size(list) != n_layer))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: no_rope_layers must be a list of %lld entries", h->dir,
                            (long long)n_layer);
    if (!json_is_array(list) && !(interval >= 1 && interval <= 4096 && interval == (double)(int)interval))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: no_rope_layer_interval %g is not a whole number >= 1",
                            h->dir, interval);
    json_t *arr = json_array();
    for (json_int_t i = 0; i < n_layer; i++) {
        json_t *v = json_array_get(list, (size_t)i);
        if (json_is_array(list) && !(json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1))) {
            json_decref(arr);
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: no_rope_layers[%lld] is not 0 or 1", h->dir,
                                (long long)i);
        }
        json_array_append_new(arr, json_boolean(json_is_array(list) ? json_integer_value(v) == 1
                                                                    : (i + 1) % (json_int_t)interval != 0));
    }
    snprintf(key, sizeof key, "%s.attention.rope_pattern", arch);
    json_object_set_new(h->kv, key, arr);
    return WK_OK;
}

/* config.json's fields under the GGUF keys of arch. */
/*
 * Llama 3 RoPE scaling (rope_scaling / rope_parameters rope_type "llama3":
 * factor, low_freq_factor, high_freq_factor, original_max_position_embeddings,
 * as transformers' _compute_llama3_parameters reads them) under wick's own
 * keys <arch>.rope.scaling.llama3.{factor, low_freq_factor,
 * high_freq_factor, original_context_length}; llama.c turns them into the
 * per-pair divisors a GGUF carries as rope_freqs.weight. Only the llama
 * family reads them, so other families still refuse the type. Missing
 * fields take llama.cpp's converter defaults (1, 4; the original context
 * falls back to max_position_embeddings, then 8192, as transformers'
 * standardisation does); factor is required.
 */
enum wk_status wk__hf_llama3_rope_to_kv(struct wk_hf *h, json_t *cfg, json_t *rs, const char *arch,
                                        struct wk_error *err)
{
    static const struct {
        const char *hf, *suffix;
        double dflt; /* < 0: required */
    } f[] = {{"factor", "rope.scaling.llama3.factor", -1},
             {"low_freq_factor", "rope.scaling.llama3.low_freq_factor", 1},
             {"high_freq_factor", "rope.scaling.llama3.high_freq_factor", 4},
             {"original_max_position_embeddings", "rope.scaling.llama3.original_context_length", 0}};
    double v[4];
    for (size_t i = 0; i < WK_ARRAY_LEN(f); i++) {
        json_t *j = json_object_get(rs, f[i].hf);
        if (i == 3 && (!j || json_is_null(j))) j = json_object_get(cfg, "max_position_embeddings");
        if (!j || json_is_null(j)) {
            if (f[i].dflt < 0)
                return wk_error_set(err, WK_E_FORMAT, "%s/config.json: rope_scaling type llama3 needs %s", h->dir,
                                    f[i].hf);
            v[i] = i == 3 ? 8192 : f[i].dflt;
        } else if (!json_is_number(j)) {
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: rope_scaling %s must be a number", h->dir, f[i].hf);
        } else {
            v[i] = json_number_value(j);
        }
    }
    if (!(v[0] >= 1 && v[0] <= 1e6) || !(v[1] > 0) || !(v[2] > v[1]) || !(v[3] >= 1 && v[3] <= 1e9))
        return wk_error_set(err, WK_E_FORMAT,
                            "%s/config.json: rope_scaling llama3 factor %g, low_freq_factor %g, high_freq_factor %g, "
                            "original_max_position_embeddings %g are out of range (factor >= 1, 0 < low < high)",
                            h->dir, v[0], v[1], v[2], v[3]);
    for (size_t i = 0; i < WK_ARRAY_LEN(f); i++) wk__hf_set_kv(h, arch, f[i].suffix, json_real(v[i]));
    return WK_OK;
}

/* A config.json list of positive finite numbers under key `suffix`, or WK_E_FORMAT naming it. */
static enum wk_status positive_list(struct wk_hf *h, json_t *rs, const char *name, int64_t n, const char *arch,
                                    const char *suffix, struct wk_error *err)
{
    json_t *a = json_object_get(rs, name);
    bool ok = json_is_array(a) && (int64_t)json_array_size(a) == n;
    for (size_t i = 0; ok && i < json_array_size(a); i++) {
        double d = json_number_value(json_array_get(a, i));
        ok = json_is_number(json_array_get(a, i)) && d > 0 && d < 1e30;
    }
    if (!ok)
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: rope_scaling %s must be a list of %lld positive numbers "
                            "(half the rotary dims)", h->dir, name, (long long)n);
    wk__hf_set_kv(h, arch, suffix, json_incref(a));
    return WK_OK;
}

/*
 * Phi-3's fields under the keys llama.cpp's converter writes:
 * rope.dimension_count from partial_rotary_factor (top level, or in
 * rope_parameters) as transformers sizes the rotary part, int(head_dim ·
 * factor); rope.scaling.original_context_length from
 * original_max_position_embeddings (top level first, as transformers
 * reads it). LongRoPE (rope_scaling type longrope, or su, its old name;
 * longrope true) under wick's own keys rope.scaling.longrope.{short_factor,
 * long_factor} (lists of n_rot/2 divisors), .factor and .attention_factor
 * where config.json gives them; phi3.c makes of them what a GGUF carries.
 */
static enum wk_status phi3_config_to_kv(struct wk_hf *h, json_t *cfg, json_t *rs, bool longrope, const char *arch,
                                        struct wk_error *err)
{
    enum wk_status st;
    double hidden, heads, head_dim, partial, orig, v;
    json_t *rp = json_is_object(rs) ? rs : json_object_get(cfg, "rope_parameters");
    json_t *jp = json_object_get(cfg, "partial_rotary_factor"), *jo = json_object_get(cfg, "original_max_position_embeddings");
    if ((st = wk__hf_cfg_number(h, cfg, "hidden_size", 0, &hidden, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "num_attention_heads", 1, &heads, err)) ||
        (st = wk__hf_cfg_number(h, cfg, "head_dim", heads >= 1 && heads <= 4096 && hidden >= 0 && hidden <= 1 << 24
                                                        ? (double)((int64_t)hidden / (int64_t)heads) : 0, &head_dim, err)) ||
        (st = wk__hf_cfg_number(h, (jp && !json_is_null(jp)) || !rp ? cfg : rp, "partial_rotary_factor", 1, &partial, err)) ||
        (st = wk__hf_cfg_number(h, (jo && !json_is_null(jo)) || !rp ? cfg : rp, "original_max_position_embeddings", 0, &orig, err)))
        return st;
    if (!(head_dim >= 0 && head_dim <= 1 << 20)) /* before the cast to an integer below */
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: head_dim %g (hidden_size / num_attention_heads when "
                            "absent) out of range", h->dir, head_dim);
    if (!(partial > 0 && partial <= 1) || !(orig >= 0 && orig <= 1 << 24))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: partial_rotary_factor %g (0 < f <= 1) or "
                            "original_max_position_embeddings %g out of range", h->dir, partial, orig);
    int64_t n_rot = (int64_t)(head_dim * partial);
    wk__hf_set_kv(h, arch, "rope.dimension_count", json_integer(n_rot));
    if (orig >= 1) wk__hf_set_kv(h, arch, "rope.scaling.original_context_length", json_real(orig));
    if (!longrope) return WK_OK;
    static const char *const opt[2][2] = {{"factor", "rope.scaling.longrope.factor"},
                                          {"attention_factor", "rope.scaling.longrope.attention_factor"}};
    for (int i = 0; i < 2; i++) {
        if ((st = wk__hf_cfg_number(h, rs, opt[i][0], -1, &v, err))) return st;
        if (v != -1 && !(v > 0 && v < 1e6))
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: rope_scaling %s %g out of range", h->dir,
                                opt[i][0], v);
        if (v != -1) wk__hf_set_kv(h, arch, opt[i][1], json_real(v));
    }
    if ((st = positive_list(h, rs, "short_factor", n_rot / 2, arch, "rope.scaling.longrope.short_factor", err)))
        return st;
    return positive_list(h, rs, "long_factor", n_rot / 2, arch, "rope.scaling.longrope.long_factor", err);
}


enum wk_status wk__hf_family_config(struct wk_hf *h, json_t *cfg, json_t *rs, bool longrope, const char *arch,
                                    struct wk_error *err)
{
    if (strcmp(arch, "qwen2") == 0) return qwen2_config_to_kv(h, cfg, arch, err);
    if (strcmp(arch, "deepseek2") == 0) return glm4_moe_lite_config_to_kv(h, cfg, arch, err);
    if (strcmp(arch, "qwen3moe") == 0) return qwen3_moe_config_to_kv(h, cfg, arch, err);
    if (strcmp(arch, "smollm3") == 0) return smollm3_config_to_kv(h, cfg, arch, err);
    if (strcmp(arch, "granitemoe") == 0) return granite_moe_config_to_kv(h, cfg, arch, err);
    if (strcmp(arch, "phi3") == 0) return phi3_config_to_kv(h, cfg, rs, longrope, arch, err);
    return strcmp(arch, "gemma4") == 0 ? gemma4_config_to_kv(h, cfg, arch, err) : WK_OK;
}

/* config.json's activation for arch: Gemma 2, 3 and 4 read
 * hidden_activation (tanh GELU: gelu_pytorch_tanh, or gelu_new, the same
 * function), the SwiGLU families hidden_act (silu, or swish, its other
 * name in transformers' ACT2FN). gpt-oss's clamped SwiGLU does not read
 * hidden_act; EXAONE's activation_function is hf_llamalike.c's. */
static enum wk_status check_activation(const struct wk_hf *h, json_t *cfg, const char *arch, struct wk_error *err)
{
    if (strcmp(arch, "gpt-oss") == 0 || strcmp(arch, "exaone") == 0) return WK_OK;
    const bool gemma = strncmp(arch, "gemma", 5) == 0;
    const char *field = gemma ? "hidden_activation" : "hidden_act";
    const char *ok[2] = {gemma ? "gelu_pytorch_tanh" : "silu", gemma ? "gelu_new" : "swish"};
    json_t *v = json_object_get(cfg, field);
    if (!v || json_is_null(v)) return WK_OK; /* transformers' default: the one wick computes */
    if (!json_is_string(v))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: %s must be a string", h->dir, field);
    const char *s = json_string_value(v);
    if (strcmp(s, ok[0]) == 0 || strcmp(s, ok[1]) == 0) return WK_OK;
    char t[64];
    wk_str_printable(s, strlen(s), t, sizeof t);
    return wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: %s \"%s\" is not supported (wick computes this "
                        "family with %s)", h->dir, field, t, gemma ? "tanh GELU: gelu_pytorch_tanh" : "SiLU: silu");
}

/* config.json's token id `name` (absent or null: fine; eos may be a list)
 * within the embedding's n_vocab rows. */
static enum wk_status check_token_id(const struct wk_hf *h, json_t *cfg, const char *name, bool list, int64_t n_vocab,
                                     struct wk_error *err)
{
    json_t *v = json_object_get(cfg, name);
    if (!v || json_is_null(v)) return WK_OK;
    json_t *one = v;
    size_t n = 1;
    if (list && json_is_array(v)) n = json_array_size(v);
    for (size_t i = 0; i < n; i++) {
        if (json_is_array(v)) one = json_array_get(v, i);
        if (!json_is_integer(one))
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: %s must be an integer%s", h->dir, name,
                                list ? " or a list of integers" : "");
        json_int_t id = json_integer_value(one);
        if (id < 0 || id >= n_vocab)
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: %s %lld is out of the vocabulary (0..%lld)", h->dir,
                                name, (long long)id, (long long)n_vocab - 1);
    }
    return WK_OK;
}

enum wk_status wk__hf_check_config(struct wk_hf *h, json_t *cfg, const char *arch, struct wk_error *err)
{
    enum wk_status st;
    if ((st = check_activation(h, cfg, arch, err))) return st;
    json_t *tie = json_object_get(cfg, "tie_word_embeddings");
    if (tie && !json_is_null(tie) && !json_is_boolean(tie))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: tie_word_embeddings must be true or false", h->dir);
    if (json_is_false(tie) && !wk__hf_tensor(h, "output.weight"))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: tie_word_embeddings is false, but the folder has no "
                            "lm_head.weight (the output matrix)", h->dir);
    /* MTP layers past num_hidden_layers (GLM-4-MoE-Lite's model.layers.N
     * after the last): the loader allows that many more (model.c) */
    json_t *nextn = json_object_get(cfg, "num_nextn_predict_layers");
    if (nextn && !json_is_null(nextn)) {
        if (!json_is_integer(nextn) || json_integer_value(nextn) < 0 || json_integer_value(nextn) > 64)
            return wk_error_set(err, WK_E_FORMAT, "%s/config.json: num_nextn_predict_layers must be an integer 0..64",
                                h->dir);
        wk__hf_set_kv(h, arch, "nextn_predict_layers", json_real((double)json_integer_value(nextn)));
    }
    const struct wk_tensor *embd = wk__hf_tensor(h, "token_embd.weight");
    if (!embd) return WK_OK; /* the loader names the missing tensor */
    const int64_t rows = embd->ne[1];
    json_t *vocab = json_object_get(cfg, "vocab_size");
    if (vocab && !json_is_null(vocab) && (!json_is_integer(vocab) || json_integer_value(vocab) != rows))
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: vocab_size is not the embedding's %lld rows", h->dir,
                            (long long)rows);
    if ((st = check_token_id(h, cfg, "bos_token_id", false, rows, err))) return st;
    return check_token_id(h, cfg, "eos_token_id", true, rows, err);
}
