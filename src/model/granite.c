/*
 * granite.c - IBM Granite 3 dense models (HF GraniteForCausalLM, model_type
 * "granite"; GGUF architecture "granite" as llama.cpp's
 * convert_hf_to_gguf.py writes it). Sources followed: transformers'
 * modeling_granite.py / configuration_granite.py (5.x) for the math,
 * llama.cpp's src/models/granite.cpp and src/llama-arch.cpp for the GGUF
 * keys.
 *
 * A Llama (llama.c: pre-norm RMSNorm blocks, GQA, SwiGLU, RoPE; NORM RoPE
 * on the converter's permuted Q and K, NEOX on a folder's) with four
 * multipliers, each a knob of the shared forward pass:
 *   embedding_multiplier  (GGUF granite.embedding_scale): token embeddings
 *                         times it (hp.embed_scale);
 *   residual_multiplier   (granite.residual_scale): each block's attention
 *                         and MLP output times it before the residual add
 *                         (hp.residual_scale);
 *   attention_multiplier  (granite.attention.scale): the attention scale
 *                         in place of head_dim^-1/2 (hp.attn_scale);
 *   logits_scaling        (granite.logit_scale): the logits divided by it
 *                         (hp.logit_scale = 1 / logits_scaling).
 * A key that is absent means no scaling (transformers' defaults are 1; the
 * converter writes only non-zero ones), except the attention scale, which
 * then stays head_dim^-1/2; so does a 0 in the first three, which
 * llama.cpp reads as unset. Otherwise each must be a finite number > 0
 * (WK_E_FORMAT naming the key).
 *
 * Granite 3 MoE (GraniteMoeForCausalLM, model_type and GGUF architecture
 * "granitemoe") is the same with routed experts in place of the MLP
 * (granite_moe_load).
 *
 * A GGUF's <arch>.rope.scaling.finetuned false turns RoPE off on every
 * layer (n_rot 0), as llama.cpp reads it.
 *
 * Not handled: Granite MoE Shared (granitemoeshared), Granite 4
 * (granitehybrid, Mamba layers), GraniteSWA.
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>

/* The multiplier under "<arch>.<suffix>" into *out, left as is when
 * absent or, where zero_unset, 0 (llama.cpp's "not set", which its
 * converter never writes); WK_E_FORMAT naming the key unless finite and
 * > 0. */
static enum wk_status multiplier(struct wk_model *m, const char *suffix, bool zero_unset, float *out,
                                 struct wk_error *err)
{
    float v = *out;
    enum wk_status st = wk__hp_f32(m, suffix, false, &v, err);
    if (st) return st;
    if (zero_unset && v == 0) return WK_OK;
    if (!(v > 0) || !isfinite(v))
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.%s = %g: a multiplier must be a finite number > 0",
                            wk__model_path(m), m->hp.arch_name, suffix, (double)v);
    *out = v;
    return WK_OK;
}

/* Granite's multipliers and RoPE switch over what wk__llama_load set. */
static enum wk_status granite_knobs(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    float logits_scaling = 1.0f;
    /* logits are divided by logit_scale, in llama.cpp too: 0 is no "unset" there */
    if ((st = multiplier(m, "embedding_scale", true, &hp->embed_scale, err)) ||
        (st = multiplier(m, "residual_scale", true, &hp->residual_scale, err)) ||
        (st = multiplier(m, "attention.scale", true, &hp->attn_scale, err)) ||
        (st = multiplier(m, "logit_scale", false, &logits_scaling, err)))
        return st;
    hp->logit_scale = 1.0f / logits_scaling;
    /* llama.cpp's switch for RoPE on every layer (on when absent) */
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.finetuned", hp->arch_name);
    const struct wk_gguf_value *v = m->gguf ? wk_gguf_find(m->gguf, key) : NULL;
    if (v && v->type != WK_GGUF_BOOL)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s must be a bool", wk__model_path(m), key);
    for (int i = 0; v && !v->b && i < hp->n_layer; i++) m->layers[i].n_rot = 0;
    return WK_OK;
}

static enum wk_status granite_load(struct wk_model *m, struct wk_error *err)
{
    enum wk_status st = wk__llama_load(m, WK_ROPE_NORM, err);
    return st ? st : granite_knobs(m, err);
}

/* Granite 3 MoE: every layer's FFN is expert_used_count of expert_count
 * SwiGLU experts of feed_forward_length (transformers' intermediate_size),
 * chosen by softmax over the top k router logits (the same as a softmax
 * over all, renormalised over the chosen: wk__moe_softmax_experts), no
 * shared expert (Granite MoE Shared: its own model_type, unknown to wick;
 * in a GGUF, granitemoe with expert_shared_feed_forward_length, refused). */
static enum wk_status granite_moe_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    if ((st = wk__hp_u32(m, "expert_count", true, &hp->n_expert, WK_MOE_MAX_EXPERTS, err)) ||
        (st = wk__hp_u32(m, "expert_used_count", true, &hp->n_expert_used, WK_MOE_MAX_EXPERTS, err)))
        return st;
    if (hp->n_expert < 1 || hp->n_expert_used < 1 || hp->n_expert_used > hp->n_expert)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.expert_used_count %d must be 1..expert_count %d",
                            wk__model_path(m), hp->arch_name, hp->n_expert_used, hp->n_expert);
    /* wk__llama_load reads the same keys and loads the experts (Mixtral's path) */
    if ((st = wk__llama_load(m, WK_ROPE_NORM, err))) return st;
    char key[128];
    snprintf(key, sizeof key, "%s.expert_shared_feed_forward_length", hp->arch_name);
    if (m->gguf && wk_gguf_find(m->gguf, key))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: %s: Granite MoE's shared expert is not supported",
                            wk__model_path(m), key);
    return granite_knobs(m, err);
}

WK_FAMILY(granite) = {
    .name = "granite",
    .gguf_archs = {"granite"},
    .hf_model_types = {"granite"},
    .label = NULL,
    .load = granite_load,
    .chat = WK_CHAT_CHATML_IF_TEMPLATE, /* the model's own template, rendered by wick's Jinja */
};

WK_FAMILY(granite_moe) = {
    .name = "granitemoe",
    .gguf_archs = {"granitemoe"},
    .hf_model_types = {"granitemoe"},
    .label = "Granite MoE",
    .load = granite_moe_load,
    .chat = WK_CHAT_CHATML_IF_TEMPLATE,
};
