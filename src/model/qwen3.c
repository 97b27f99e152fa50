/*
 * qwen3.c - Qwen 3 dense models (architectures.md §2; HF Qwen3ForCausalLM,
 * GGUF architecture "qwen3" as llama.cpp's converter writes it).
 *
 * Per layer: RMSNorm, GQA attention with per-head QK-RMSNorm (q_norm,
 * k_norm: one gain of head_dim per projection, shared by the heads,
 * applied before RoPE), NEOX RoPE over the whole head with base
 * rope.freq_base, scale 1/sqrt(head_dim); RMSNorm, SwiGLU MLP. Final
 * RMSNorm; output tied to the embeddings unless output.weight exists.
 * No biases, no embedding scale, no softcap, plain norm gains (no +1).
 * head_dim is its own hyperparameter (attention.key_length; config.json
 * head_dim), usually not n_embd / n_head. Both layouts pair RoPE
 * dimensions i and i + d/2: the GGUF conversion does not permute Q and K
 * for Qwen (unlike Llama), so one RoPE mode serves both.
 *
 * Not handled: YaRN RoPE scaling (the long-context variants): refused with
 * an error naming rope_scaling (config.json, hf.c) or
 * qwen3.rope.scaling.type (GGUF); Qwen3-MoE (architecture "qwen3moe").
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>

static enum wk_status qwen3_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    hp->head_dim = 0; /* n_embd / n_head unless key_length (config.json's head_dim) is given */
    hp->rms_eps = 1e-6f;
    hp->rope_base = 1e6f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 40960;
    if ((st = wk__load_common_hparams(m, err))) return st;
    hp->rope_base_swa = hp->rope_base;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embed_scale = 1.0f;
    hp->final_softcap = 0;
    hp->sliding_window = 0; /* use_sliding_window is false in every released Qwen 3 */
    m->rope_mode = WK_ROPE_NEOX;
    m->act = WK_ACT_SILU;
    if ((st = wk__load_common_tensors(m, err))) return st;
    const int64_t D = hp->head_dim;
    for (int i = 0; i < hp->n_layer; i++) {
        struct wk_layer *l = &m->layers[i];
        if ((st = wk__tensor(m, &l->q_norm, false, true, D, 1, err, "blk.%d.attn_q_norm.weight", i)) ||
            (st = wk__tensor(m, &l->k_norm, false, true, D, 1, err, "blk.%d.attn_k_norm.weight", i)))
            return st;
    }
    return WK_OK;
}

WK_FAMILY(qwen3) = {
    .name = "qwen3",
    .gguf_archs = {"qwen3"},
    .hf_model_types = {"qwen3"} /* dense; qwen3_moe is not */,
    .label = NULL,
    .load = qwen3_load,
    .chat = WK_CHAT_QWEN3,
};
