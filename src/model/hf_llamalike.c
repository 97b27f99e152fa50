/*
 * hf_llamalike.c - the Hugging Face names and config.json keys of the
 * Llama-shaped families that differ from Llama's own, under the GGUF
 * names and keys llama.cpp's convert_hf_to_gguf.py writes for them (its
 * gguf-py tensor_mapping.py read to learn them); hf.c calls these.
 *
 *   EXAONE 3.5 (arch "exaone"): transformer.wte, transformer.ln_f,
 *     transformer.h.N.{ln_1, attn.attention.{q,k,v}_proj,
 *     attn.attention.out_proj, ln_2, mlp.c_fc_0, mlp.c_fc_1, mlp.c_proj};
 *     num_layers, layer_norm_epsilon (an RMSNorm's), activation_function.
 *   Mixtral (arch "llama"): model.layers.N.block_sparse_moe.gate (the
 *     router) and .experts.K.{w1 (gate), w3 (up), w2 (down)}, one tensor
 *     per expert; num_local_experts, num_experts_per_tok.
 */
#include "model_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* EXAONE's per-layer names after "transformer.h.N." */
static const struct {
    const char *hf, *gguf;
} exaone_blk[] = {{"ln_1.weight", "attn_norm.weight"},
                  {"attn.attention.q_proj.weight", "attn_q.weight"},
                  {"attn.attention.k_proj.weight", "attn_k.weight"},
                  {"attn.attention.v_proj.weight", "attn_v.weight"},
                  {"attn.attention.out_proj.weight", "attn_output.weight"},
                  {"ln_2.weight", "ffn_norm.weight"},
                  {"mlp.c_fc_0.weight", "ffn_gate.weight"},
                  {"mlp.c_fc_1.weight", "ffn_up.weight"},
                  {"mlp.c_proj.weight", "ffn_down.weight"}};

static bool exaone_name(const char *name, char *out, size_t cap, bool *norm)
{
    if (strcmp(name, "transformer.wte.weight") == 0) return snprintf(out, cap, "token_embd.weight") > 0;
    if (strcmp(name, "transformer.ln_f.weight") == 0) {
        *norm = true;
        return snprintf(out, cap, "output_norm.weight") > 0;
    }
    int layer, used = 0;
    if (sscanf(name, "transformer.h.%d.%n", &layer, &used) != 1 || used == 0 || layer < 0) return false;
    for (size_t i = 0; i < WK_ARRAY_LEN(exaone_blk); i++) {
        if (strcmp(name + used, exaone_blk[i].hf) != 0) continue;
        *norm = strncmp(exaone_blk[i].hf, "ln_", 3) == 0;
        return snprintf(out, cap, "blk.%d.%s", layer, exaone_blk[i].gguf) > 0;
    }
    return false;
}

/* Mixtral's router and per-expert tensors. */
static bool mixtral_name(const char *name, char *out, size_t cap)
{
    int layer, used = 0, expert, used2 = 0;
    if (sscanf(name, "model.layers.%d.block_sparse_moe.%n", &layer, &used) != 1 || used == 0 || layer < 0)
        return false;
    if (strcmp(name + used, "gate.weight") == 0) return snprintf(out, cap, "blk.%d.ffn_gate_inp.weight", layer) > 0;
    char w[3] = {0};
    if (sscanf(name + used, "experts.%d.w%1[123].weight%n", &expert, w, &used2) != 2 || used2 == 0 ||
        name[used + used2] != 0 || expert < 0)
        return false;
    static const char *const proj[3] = {"gate", "down", "up"}; /* w1, w2, w3 */
    return snprintf(out, cap, "blk.%d.ffn_%s_exps.%d.weight", layer, proj[w[0] - '1'], expert) > 0;
}

bool wk__hf_llamalike_name(const char *arch, const char *name, char *out, size_t cap, bool *norm)
{
    if (strcmp(arch, "exaone") == 0) return exaone_name(name, out, cap, norm);
    if (strcmp(arch, "llama") == 0) return mixtral_name(name, out, cap);
    return false;
}

/* cfg's number hf (absent or null: nothing) as kv's <arch>.<gguf>. */
static enum wk_status number(json_t *kv, json_t *cfg, const char *hf, const char *arch, const char *gguf,
                             const char *dir, struct wk_error *err)
{
    json_t *v = json_object_get(cfg, hf);
    if (!v || json_is_null(v)) return WK_OK;
    if (!json_is_number(v)) return wk_error_set(err, WK_E_FORMAT, "%s/config.json: %s must be a number", dir, hf);
    char key[160];
    snprintf(key, sizeof key, "%s.%s", arch, gguf);
    json_object_set(kv, key, v);
    return WK_OK;
}

enum wk_status wk__hf_llamalike_config(json_t *kv, json_t *cfg, const char *arch, const char *dir,
                                       struct wk_error *err)
{
    enum wk_status st;
    if (strcmp(arch, "exaone") == 0) {
        json_t *act = json_object_get(cfg, "activation_function");
        if (act && !json_is_null(act) && !(json_is_string(act) && strcmp(json_string_value(act), "silu") == 0))
            return wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: activation_function must be \"silu\" "
                                "(EXAONE's SwiGLU)", dir);
        if ((st = number(kv, cfg, "num_layers", arch, "block_count", dir, err)) ||
            (st = number(kv, cfg, "layer_norm_epsilon", arch, "attention.layer_norm_rms_epsilon", dir, err)))
            return st;
    } else if (strcmp(arch, "llama") == 0) {
        if ((st = number(kv, cfg, "num_local_experts", arch, "expert_count", dir, err)) ||
            (st = number(kv, cfg, "num_experts_per_tok", arch, "expert_used_count", dir, err)))
            return st;
    }
    return WK_OK;
}
