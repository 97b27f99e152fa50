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
 * to Q and K at all (the layer's n_rot is 0). Which layers: config.json's
 * no_rope_layers (one 0/1 per layer, 0 = NoPE; hf.c passes it as wick's
 * own key smollm3.rope.nope_layers, true = NoPE), else every
 * no_rope_layer_interval-th layer (transformers' default 4: layers 3, 7,
 * ...). A GGUF carries no such key: llama.cpp hard-codes every 4th layer
 * (n_no_rope_layer_step 4), and so does wick unless the key is present.
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
    if ((st = wk__llama_load(m, err)) || (st = wk__check_rope_scaling_type(m, err))) return st;
    bool *nope = wk_calloc((size_t)hp->n_layer, sizeof *nope), found;
    if (!nope) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    if ((st = wk__layer_bools(m, "rope.nope_layers", nope, &found, err))) {
        wk_free(nope);
        return st;
    }
    for (int i = 0; i < hp->n_layer; i++)
        if (found ? nope[i] : (i + 1) % 4 == 0) m->layers[i].n_rot = 0;
    wk_free(nope);
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
