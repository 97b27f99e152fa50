/*
 * exaone.c - EXAONE 3.5 (HF ExaoneForCausalLM, remote code: LG AI
 * Research's modeling_exaone.py; GGUF architecture "exaone" as llama.cpp's
 * convert_hf_to_gguf.py writes it, computed by llama.cpp's
 * src/models/exaone.cpp).
 *
 * The math is Llama's (llama.c): RMSNorm (config.json's
 * layer_norm_epsilon), GQA attention with RoPE over the whole head, SwiGLU
 * MLP (activation_function must be "silu"), final RMSNorm, output tied to
 * the embeddings unless lm_head.weight exists; Llama 3 RoPE scaling as
 * Llama's. Only the names differ: hf.c reads transformer.wte,
 * transformer.h.N.{ln_1, attn.attention.{q,k,v,out}_proj, ln_2,
 * mlp.c_fc_0 (gate), mlp.c_fc_1 (up), mlp.c_proj (down)}, transformer.ln_f
 * and num_layers. The converter does not permute Q and K for "exaone"
 * (llama.cpp runs it with NEOX RoPE), so NEOX RoPE serves both layouts.
 */
#include "model_internal.h"

static enum wk_status exaone_load(struct wk_model *m, struct wk_error *err)
{
    return wk__llama_load(m, WK_ROPE_NEOX, err);
}

WK_FAMILY(exaone) = {
    .name = "exaone",
    .gguf_archs = {"exaone"},
    .hf_model_types = {"exaone"},
    .label = "EXAONE 3.5",
    .load = exaone_load,
    .chat = WK_CHAT_CHATML_IF_TEMPLATE,
};
