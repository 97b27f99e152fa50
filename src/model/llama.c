/*
 * llama.c - Llama-architecture models from GGUF (architectures.md §1; HF
 * LlamaForCausalLM; SmolLM2 is one): pre-norm blocks of RMSNorm, GQA
 * attention with RoPE, SwiGLU MLP; final RMSNorm; output tied to the
 * embeddings unless output.weight exists. No embedding scale, no softcap.
 *
 * GGUF conversion permutes the rows of attn_q and attn_k so that RoPE can
 * pair dimensions 2i and 2i+1 (NORM mode) instead of i and i + d/2 (the HF
 * layout's rotate-half); wick therefore uses NORM RoPE on GGUF weights.
 * Llama 3 RoPE scaling arrives as rope_freqs.weight (per-pair divisors).
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>

static enum wk_status llama_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    const char *path = wk__model_path(m);
    hp->head_dim = 0; /* n_embd / n_head unless key_length says otherwise */
    hp->rms_eps = 1e-5f;
    hp->rope_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 4096;
    if ((st = wk__load_common_hparams(m, err)) ||
        (st = wk__hp_u32(m, "rope.dimension_count", false, &hp->n_rot, 4096, err)))
        return st;
    if (hp->n_rot > hp->head_dim || hp->n_rot % 2 != 0)
        return wk_error_set(err, WK_E_FORMAT, "%s: rope.dimension_count %d does not fit head dim %d",
                            path, hp->n_rot, hp->head_dim);
    hp->rope_base_swa = hp->rope_base;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embed_scale = 1.0f;
    hp->sliding_window = 0;
    /* GGUF permutes Q and K rows for NORM RoPE; HF weights pair i with i + d/2 */
    m->rope_mode = m->hf ? WK_ROPE_NEOX : WK_ROPE_NORM;
    m->act = WK_ACT_SILU;
    if ((st = wk__load_common_tensors(m, err)) ||
        (st = wk__tensor(m, &m->rope_freqs, true, true, hp->n_rot / 2, 1, err, "rope_freqs.weight")))
        return st;
    return WK_OK;
}

WK_FAMILY(llama) = {
    .name = "llama",
    .gguf_archs = {"llama"},
    .hf_model_types = {"llama"},
    .label = NULL,
    .load = llama_load,
    .chat = WK_CHAT_CHATML_IF_TEMPLATE,
};
