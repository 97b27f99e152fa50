/*
 * smollm3.c - Hugging Face SmolLM3 models (HF SmolLM3ForCausalLM,
 * model_type "smollm3"; GGUF architecture "smollm3" as llama.cpp's
 * convert_hf_to_gguf.py writes it). Sources followed: transformers'
 * modeling_smollm3.py / configuration_smollm3.py (5.x) for the math,
 * llama.cpp's src/models/smollm3.cpp for the GGUF.
 *
 * A Llama (llama.c: pre-norm RMSNorm blocks, GQA, SwiGLU; NORM RoPE on the
 * converter's permuted Q and K, NEOX on a folder's; output tied to the
 * embeddings unless output.weight exists) whose NoPE layers apply no RoPE
 * to Q and K at all (the layer's n_rot is 0). Which layers: the bool list
 * smollm3.attention.rope_pattern (llama.cpp's key, true = RoPE; hf.c
 * builds it from config.json's no_rope_layers, one 0/1 per layer, 0 =
 * NoPE, or else every no_rope_layer_interval-th layer), else every 4th
 * layer (3, 7, ...): llama.cpp's converter writes no pattern for SmolLM3
 * and its loader hard-codes that (n_no_rope_layer_step 4), as does
 * transformers' default.
 *
 * Not handled: use_sliding_window true (refused by hf.c); YaRN RoPE
 * scaling (the 128k variant's rope_scaling: refused by hf.c).
 */
#include "model_internal.h"

#include <stdio.h>

static enum wk_status smollm3_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    if ((st = wk__llama_load(m, WK_ROPE_NORM, err))) return st;
    bool *rope = wk_calloc((size_t)hp->n_layer, sizeof *rope), found;
    if (!rope) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    if ((st = wk__layer_bools(m, "attention.rope_pattern", rope, &found, err))) {
        wk_free(rope);
        return st;
    }
    for (int i = 0; i < hp->n_layer; i++)
        if (found ? !rope[i] : (i + 1) % 4 == 0) m->layers[i].n_rot = 0;
    wk_free(rope);
    return WK_OK;
}

WK_FAMILY(smollm3) = {
    .name = "smollm3",
    .gguf_archs = {"smollm3"},
    .hf_model_types = {"smollm3"},
    .label = "SmolLM3",
    .load = smollm3_load,
    .chat = WK_CHAT_CHATML_IF_TEMPLATE, /* the model's own template, rendered by wick's Jinja */
};
