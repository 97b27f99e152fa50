/*
 * glm4_moe_lite.c - GLM-4-MoE-Lite (GLM-4.7-Flash; architectures.md §6;
 * HF Glm4MoeLiteForCausalLM in transformers 5.24, read to learn the
 * computation), DeepSeek-V2/V3-style multi-head latent attention and
 * mixture of experts.
 *
 * Three sources, one model:
 * - GGUF arch "deepseek2" (llama.cpp's converter): attention.key_length
 *   = kv_lora_rank + rope dims and value_length = kv_lora_rank (the
 *   absorbed, single-"head" sizes), the per-head sizes under
 *   key_length_mla (nope + rope) and value_length_mla (v_head_dim);
 *   head_count_kv 1;
 * - GGUF arch "glm4moelite" (older Ollama files): the same keys with the
 *   meanings swapped (key_length per head, the absorbed ones under
 *   *_mla), head_count_kv = num_key_value_heads, no expert-group keys and
 *   no gating function (sigmoid);
 * - a Hugging Face folder, model_type glm4_moe_lite, which hf.c gives the
 *   deepseek2 keys; its kv_b_proj stays whole (attn_kv_b.weight), and
 *   this file builds the two halves the GGUFs carry: the K half
 *   transposed per head into F32 (k_b [n_head][kv_lora][nope]: the
 *   absorption q_lat = W_UKᵀ q_nope is then an ordinary matmul), the V
 *   half a strided view in place (v_b [n_head][v][kv_lora]); experts
 *   stacked (3-D) or one tensor each.
 * The convention is the architecture name's; the tensors' shapes then
 * decide nope, v and kv_lora, and every key that states one is checked
 * against them, so a file whose keys follow the other convention is an
 * error naming the key, never a silently wrong model.
 *
 * Per layer (context.c): RMSNorm; MLA with the query and output
 * absorbed (§6.4), caching [RMSNorm(latent) ; RoPE(k_pe)] per position;
 * RMSNorm; the first leading_dense_block_count layers a dense SwiGLU FFN,
 * the others routed experts (sigmoid router + selection bias, top k,
 * normalised, scaled; SwiGLU) plus the shared expert (the layer's dense
 * FFN slot, width n_shared · expert FFN). RoPE interleaved (NORM pairs)
 * on the rope dims, scale 1/sqrt(nope + rope). The q_a and kv_a norms
 * use transformers' epsilon 1e-6 (its Glm4MoeLiteRMSNorm default; the
 * config's rms_norm_eps is for the layer norms), which context.c applies.
 *
 * Not handled (refused by name): YaRN RoPE scaling (rope.scaling.type,
 * config.json rope_scaling), softmax gating (expert_gating_func 1:
 * DeepSeek V2), expert groups (n_group > 1), attention biases, and the
 * MTP layer past num_hidden_layers (ignored, as transformers does).
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A boolean hyperparameter (GGUF bool, or a number in config.json). */
static enum wk_status hp_bool(const struct wk_model *m, const char *suffix, bool *out, struct wk_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->hp.arch_name, suffix);
    if (m->hf) {
        double d;
        if (wk__hf_number(m->hf, key, &d)) *out = d != 0;
        return WK_OK;
    }
    const struct wk_gguf_value *v = wk_gguf_find(m->gguf, key);
    if (!v) return WK_OK;
    if (v->type == WK_GGUF_BOOL) return wk_gguf_get_bool(m->gguf, key, out, err);
    uint32_t u;
    enum wk_status st = wk_gguf_get_u32(m->gguf, key, &u, err);
    if (!st) *out = u != 0;
    return st;
}

/* The key is present (any value). */
static bool hp_has(const struct wk_model *m, const char *suffix)
{
    char key[128];
    double d;
    snprintf(key, sizeof key, "%s.%s", m->hp.arch_name, suffix);
    return m->hf ? wk__hf_number(m->hf, key, &d) : wk_gguf_find(m->gguf, key) != NULL;
}

/* A key that states a size the tensors decide: it must agree. */
static enum wk_status check_size(const struct wk_model *m, const char *suffix, int32_t want, const char *what,
                                 struct wk_error *err)
{
    if (!hp_has(m, suffix)) return WK_OK;
    int32_t v = 0;
    enum wk_status st = wk__hp_u32(m, suffix, true, &v, 1 << 20, err);
    if (st) return st;
    if (v != want)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.%s = %d, but the tensors give %s = %d (%s convention)",
                            wk__model_path(m), m->hp.arch_name, suffix, v, what, want, m->hp.arch_name);
    return WK_OK;
}

/* From an HF kv_b_proj [n_head·(nope + v), kv_lora] (ne {kv_lora,
 * n_head·(nope + v)}, any dtype): k_b [n_head][kv_lora][nope] F32 (the K
 * rows transposed per head) into kb and data, v_b a view of the V rows
 * (ne {kv_lora, v, n_head}) into vb. */
static void split_kv_b(const struct wk_tensor *kv_b, int64_t H, int64_t L, int64_t nope, int64_t v,
                       struct wk_tensor *kb, struct wk_tensor *vb, float *data, float *row)
{
    const struct wk_cpu_kernels *k = wk_cpu_kernels_get();
    for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < nope; i++) {
            wk_cpu_get_row(k, kv_b, h * (nope + v) + i, row);
            for (int64_t j = 0; j < L; j++) data[(h * L + j) * nope + i] = row[j];
        }
    *kb = (struct wk_tensor){.name = "attn_k_b (from attn_kv_b)", .dtype = WK_DTYPE_F32, .n_dims = 3, .data = data};
    kb->ne[0] = nope, kb->ne[1] = L, kb->ne[2] = H, kb->ne[3] = 1;
    kb->nb[0] = sizeof(float);
    kb->nb[1] = (size_t)nope * sizeof(float);
    kb->nb[2] = kb->nb[1] * (size_t)L;
    kb->nb[3] = kb->nb[2] * (size_t)H;
    *vb = *kv_b;
    vb->name = "attn_v_b (in attn_kv_b)";
    vb->n_dims = 3;
    vb->ne[1] = v, vb->ne[2] = H, vb->ne[3] = 1;
    vb->nb[2] = kv_b->nb[1] * (size_t)(nope + v);
    vb->nb[3] = vb->nb[2] * (size_t)H;
    vb->data = (const uint8_t *)kv_b->data + (size_t)nope * kv_b->nb[1];
}

/* One MoE layer's routed experts: stacked 3-D tensors (GGUF; HF's fused
 * gate_up), or one 2-D tensor per expert (HF folders), into tables. */
static enum wk_status expert_tensors(struct wk_model *m, struct wk_layer *l, int i, const struct wk_tensor **tables,
                                     struct wk_error *err)
{
    const struct wk_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, NE = hp->n_expert, FE = hp->n_ff_exp;
    enum wk_status st;
    if ((st = wk__tensor3(m, &l->moe.gate_up, true, E, 2 * FE, NE, err, "blk.%d.ffn_gate_up_exps.weight", i)) ||
        (!l->moe.gate_up &&
         (st = wk__tensor3(m, &l->moe.gate, true, E, FE, NE, err, "blk.%d.ffn_gate_exps.weight", i))) ||
        (st = wk__tensor3(m, &l->moe.down, true, FE, E, NE, err, "blk.%d.ffn_down_exps.weight", i)))
        return st;
    if (l->moe.gate || l->moe.gate_up) { /* stacked: all three must be */
        if ((!l->moe.gate_up && (st = wk__tensor3(m, &l->moe.up, false, E, FE, NE, err,
                                                   "blk.%d.ffn_up_exps.weight", i))) ||
            (st = wk__tensor3(m, &l->moe.down, false, FE, E, NE, err, "blk.%d.ffn_down_exps.weight", i)))
            return st;
        return WK_OK;
    }
    if (!m->hf) /* a GGUF carries them stacked: name the first one missing */
        return wk__tensor3(m, &l->moe.gate, false, E, FE, NE, err, "blk.%d.ffn_gate_exps.weight", i);
    static const char *const proj[3] = {"gate", "up", "down"};
    for (int p = 0; p < 3; p++)
        for (int64_t e = 0; e < NE; e++) {
            const struct wk_tensor **t = &tables[p * NE + e];
            if ((st = wk__tensor(m, t, true, false, p < 2 ? E : FE, p < 2 ? FE : E, err, "blk.%d.ffn_%s_exps.%lld.weight",
                                 i, proj[p], (long long)e)))
                return st;
            if (!*t)
                return wk_error_set(err, WK_E_FORMAT, "%s: missing tensor model.layers.%d.mlp.experts.%lld.%s_proj.weight "
                                    "(expert %lld of n_routed_experts %lld)", wk__model_path(m), i, (long long)e,
                                    proj[p], (long long)e, (long long)NE);
        }
    l->moe.down = NULL;
    l->moe.gate_e = tables;
    l->moe.up_e = tables + NE;
    l->moe.down_e = tables + 2 * NE;
    return WK_OK;
}

/* The MLA sizes and the router kind glm4_hparams reads for glm4_layer. */
struct mla_dims {
    int32_t rot, kv_lora, q_lora, gating, dq, dv, nope;
    bool any_moe;
};

/* The hyperparameters: hp, and the MLA sizes and router kind into *d. */
static enum wk_status glm4_hparams(struct wk_model *m, struct mla_dims *d, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    const char *path = wk__model_path(m);
    const bool old = strcmp(hp->arch_name, "glm4moelite") == 0; /* Ollama's per-head key meanings */
    int32_t rot = 0, kv_lora = 0, q_lora = 0, gating = 0;
    hp->rms_eps = 1e-6f;
    hp->rope_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 4096;
    hp->expert_weights_scale = 1.0f;
    if ((st = wk__load_core_hparams(m, err)) ||
        (st = wk__hp_u32(m, "rope.dimension_count", true, &rot, 4096, err)) ||
        (st = wk__hp_u32(m, "attention.kv_lora_rank", true, &kv_lora, 1 << 16, err)) ||
        (st = wk__hp_f32(m, "expert_weights_scale", false, &hp->expert_weights_scale, err)) ||
        (st = hp_bool(m, "expert_weights_norm", &hp->expert_weights_norm, err)))
        return st;
    /* counts that may be 0 (absent) */
    static const char *const counts[] = {"attention.q_lora_rank", "feed_forward_length", "expert_count",
                                         "expert_used_count", "expert_shared_count", "expert_feed_forward_length",
                                         "leading_dense_block_count", "expert_gating_func", "expert_group_count",
                                         "expert_group_used_count"};
    int32_t vals[WK_ARRAY_LEN(counts)] = {0};
    for (size_t i = 0; i < WK_ARRAY_LEN(counts); i++) {
        char key[128];
        snprintf(key, sizeof key, "%s.%s", hp->arch_name, counts[i]);
        double d = -1;
        bool zero = m->hf ? wk__hf_number(m->hf, key, &d) && d == 0
                          : wk_gguf_find(m->gguf, key) && wk_gguf_find(m->gguf, key)->u == 0;
        if (!zero && (st = wk__hp_u32(m, counts[i], false, &vals[i], 1 << 20, err))) return st;
    }
    q_lora = vals[0];
    hp->n_ff = vals[1];
    hp->n_expert = vals[2];
    hp->n_expert_used = vals[3];
    hp->n_expert_shared = vals[4];
    hp->n_ff_exp = vals[5];
    hp->n_layer_dense_lead = vals[6];
    gating = vals[7];
    if (vals[8] > 1 || vals[9] > 1)
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: expert groups (%s.expert_group_count %d) are not supported",
                            path, hp->arch_name, vals[8]);
    if ((st = wk__refuse_rope_scaling(m, "GLM-4-MoE-Lite", err))) return st;
    if (hp->n_layer_dense_lead > hp->n_layer)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.leading_dense_block_count %d exceeds block_count %d", path,
                            hp->arch_name, hp->n_layer_dense_lead, hp->n_layer);
    const bool any_moe = hp->n_layer_dense_lead < hp->n_layer;
    if (any_moe) {
        if (hp->n_expert < 1 || hp->n_expert > WK_MOE_MAX_EXPERTS || hp->n_ff_exp < 1)
            return wk_error_set(err, WK_E_FORMAT, "%s: %s.expert_count %d must be 1..%d and expert_feed_forward_length "
                                "set for MoE layers", path, hp->arch_name, hp->n_expert, WK_MOE_MAX_EXPERTS);
        if (hp->n_expert_used < 1 || hp->n_expert_used > hp->n_expert)
            return wk_error_set(err, WK_E_FORMAT, "%s: %s.expert_used_count %d must be 1..expert_count %d", path,
                                hp->arch_name, hp->n_expert_used, hp->n_expert);
        if (gating == 1)
            return wk_error_set(err, WK_E_UNSUPPORTED, "%s: %s.expert_gating_func 1 (softmax, DeepSeek V2) is not "
                                "supported; wick runs sigmoid routers (2)", path, hp->arch_name);
        if (gating > 2)
            return wk_error_set(err, WK_E_UNSUPPORTED, "%s: %s.expert_gating_func %d is not supported", path,
                                hp->arch_name, gating);
    }
    if (hp->n_layer_dense_lead > 0 && hp->n_ff < 1)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.feed_forward_length is needed by the dense layers", path,
                            hp->arch_name);
    if (rot % 2 != 0)
        return wk_error_set(err, WK_E_FORMAT, "%s: rope.dimension_count %d is odd", path, rot);
    if (!(hp->rms_eps > 0) || !(hp->rope_base > 1))
        return wk_error_set(err, WK_E_FORMAT, "%s: rms epsilon or RoPE base out of range", path);

    /* the per-head sizes: deepseek2 keeps them under *_mla, glm4moelite
     * under the plain keys; the tensors below must agree */
    int32_t dq = 0, dv = 0;
    const char *k_key = old ? "attention.key_length" : "attention.key_length_mla";
    const char *v_key = old ? "attention.value_length" : "attention.value_length_mla";
    if ((st = wk__hp_u32(m, k_key, true, &dq, 4096, err)) || (st = wk__hp_u32(m, v_key, true, &dv, 4096, err)))
        return st;
    if (dq <= rot)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s.%s = %d leaves no dims beside the %d RoPE dims (is this a "
                            "%s file?)", path, hp->arch_name, k_key, dq, rot, old ? "deepseek2" : "glm4moelite");
    const int32_t nope = dq - rot;
    if ((st = check_size(m, old ? "attention.key_length_mla" : "attention.key_length", kv_lora + rot,
                         "kv_lora_rank + rope dims", err)) ||
        (st = check_size(m, old ? "attention.value_length_mla" : "attention.value_length", kv_lora, "kv_lora_rank",
                         err)))
        return st;
    if (!old && (st = check_size(m, "attention.head_count_kv", 1, "one latent KV head", err))) return st;
    hp->n_lora_q = q_lora;
    hp->n_lora_kv = kv_lora;
    hp->n_embd_head_k_mla = dq;
    hp->n_embd_head_v_mla = dv;
    hp->head_dim = dq;
    hp->n_head_kv = 1;
    hp->n_rot = rot;
    hp->rope_base_swa = hp->rope_base;
    hp->attn_scale = 1.0f / sqrtf((float)dq);
    hp->embed_scale = 1.0f;
    hp->final_softcap = 0;
    hp->sliding_window = 0;
    m->rope_mode = WK_ROPE_NORM; /* HF rope_interleave; hf.c refuses the other */
    m->act = WK_ACT_SILU;

    *d = (struct mla_dims){.rot = rot, .kv_lora = kv_lora, .q_lora = q_lora, .gating = gating, .dq = dq, .dv = dv,
                           .nope = nope, .any_moe = any_moe};
    return WK_OK;
}

/* Layer i's tensors and geometry. */
static enum wk_status glm4_layer(struct wk_model *m, int i, const struct mla_dims *d, struct wk_error *err)
{
    const struct wk_hparams *hp = &m->hp;
    const char *path = wk__model_path(m);
    enum wk_status st;
    const int32_t rot = d->rot, kv_lora = d->kv_lora, q_lora = d->q_lora, gating = d->gating, dq = d->dq, dv = d->dv,
                  nope = d->nope;
    const int64_t E = hp->n_embd, H = hp->n_head, L = kv_lora, NE = hp->n_expert;
    const int64_t FS = (int64_t)hp->n_ff_exp * hp->n_expert_shared;
        struct wk_layer *l = &m->layers[i];
    const bool moe = i >= hp->n_layer_dense_lead;
    l->mla.on = true;
    l->mla.kv_lora = kv_lora;
    l->mla.nope = nope;
    l->mla.v = dv;
    l->head_dim = dq;
    l->n_head_kv = 1;
    l->n_rot = rot;
    l->n_ff = moe ? (int32_t)FS : hp->n_ff;
    l->rope_base = hp->rope_base;
    l->rope_scale = 1.0f;
    l->kv_layer = i;
    l->out_scale = 1.0f;
    if ((st = wk__tensor(m, &l->attn_norm, false, true, E, 1, err, "blk.%d.attn_norm.weight", i)) ||
        (st = wk__tensor(m, &l->mla.kv_a, false, false, E, L + rot, err, "blk.%d.attn_kv_a_mqa.weight", i)) ||
        (st = wk__tensor(m, &l->mla.kv_a_norm, false, true, L, 1, err, "blk.%d.attn_kv_a_norm.weight", i)) ||
        (st = wk__tensor(m, &l->wo, false, false, H * dv, E, err, "blk.%d.attn_output.weight", i)) ||
        (st = wk__tensor(m, &l->ffn_norm, false, true, E, 1, err, "blk.%d.ffn_norm.weight", i)))
        return st;
    if (q_lora > 0) {
        if ((st = wk__tensor(m, &l->mla.q_a, false, false, E, q_lora, err, "blk.%d.attn_q_a.weight", i)) ||
            (st = wk__tensor(m, &l->mla.q_a_norm, false, true, q_lora, 1, err, "blk.%d.attn_q_a_norm.weight", i)) ||
            (st = wk__tensor(m, &l->mla.q_b, false, false, q_lora, H * dq, err, "blk.%d.attn_q_b.weight", i)))
            return st;
    } else if ((st = wk__tensor(m, &l->wq, false, false, E, H * dq, err, "blk.%d.attn_q.weight", i))) {
        return st;
    }
    /* the absorption halves: attn_k_b/attn_v_b, or built from attn_kv_b */
    const struct wk_tensor *kv_b = NULL;
    if ((st = wk__tensor3(m, &l->mla.k_b, true, nope, L, H, err, "blk.%d.attn_k_b.weight", i))) return st;
    if (!l->mla.k_b && (st = wk__tensor(m, &kv_b, true, false, L, H * (nope + dv), err, "blk.%d.attn_kv_b.weight", i)))
        return st;
    if (kv_b) {
        if (!m->mla_data) {
            m->mla_data = wk_malloc(((size_t)hp->n_layer * (size_t)(H * L * nope) + (size_t)L) * sizeof(float));
            if (!m->mla_data) return wk_error_set(err, WK_E_NOMEM, "out of memory");
        }
        float *row = m->mla_data + (size_t)hp->n_layer * (size_t)(H * L * nope);
        split_kv_b(kv_b, H, L, nope, dv, &m->mla_tensors[2 * i], &m->mla_tensors[2 * i + 1],
                   m->mla_data + (size_t)i * (size_t)(H * L * nope), row);
        l->mla.k_b = &m->mla_tensors[2 * i];
        l->mla.v_b = &m->mla_tensors[2 * i + 1];
    } else if ((st = wk__tensor3(m, &l->mla.k_b, false, nope, L, H, err, "blk.%d.attn_k_b.weight", i)) ||
               (st = wk__tensor3(m, &l->mla.v_b, false, L, dv, H, err, "blk.%d.attn_v_b.weight", i))) {
        return st;
    }
    if (!moe) {
        if ((st = wk__tensor(m, &l->ffn_gate, false, false, E, hp->n_ff, err, "blk.%d.ffn_gate.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_up, false, false, E, hp->n_ff, err, "blk.%d.ffn_up.weight", i)) ||
            (st = wk__tensor(m, &l->ffn_down, false, false, hp->n_ff, E, err, "blk.%d.ffn_down.weight", i)))
            return st;
        return WK_OK;
    }
    l->moe.sigmoid = true;
    if ((st = wk__tensor(m, &l->moe.router, false, false, E, NE, err, "blk.%d.ffn_gate_inp.weight", i)) ||
        (st = wk__tensor(m, &l->moe.sel_bias, true, true, NE, 1, err, "blk.%d.exp_probs_b.bias", i)) ||
        (st = expert_tensors(m, l, i, m->expert_tables ? m->expert_tables + (size_t)i * 3 * (size_t)NE : NULL,
                             err)))
        return st;
    if (gating == 0 && !l->moe.sel_bias) /* llama.cpp's default for such files: softmax (DeepSeek V2) */
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: no %s.expert_gating_func and no selection bias "
                            "(blk.%d.exp_probs_b.bias): a softmax router (DeepSeek V2), which wick does not run",
                            path, hp->arch_name, i);
    if (FS > 0 &&
        ((st = wk__tensor(m, &l->ffn_gate, false, false, E, FS, err, "blk.%d.ffn_gate_shexp.weight", i)) ||
         (st = wk__tensor(m, &l->ffn_up, false, false, E, FS, err, "blk.%d.ffn_up_shexp.weight", i)) ||
         (st = wk__tensor(m, &l->ffn_down, false, false, FS, E, err, "blk.%d.ffn_down_shexp.weight", i))))
        return st;
    return WK_OK;
}

static enum wk_status glm4_moe_lite_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    struct mla_dims d;
    enum wk_status st = glm4_hparams(m, &d, err);
    if (st) return st;
    /* embedding, output */
    const int64_t NE = hp->n_expert;
    if ((st = wk__load_embeddings(m, err))) return st;
    m->layers = wk_calloc((size_t)hp->n_layer, sizeof *m->layers);
    m->mla_tensors = wk_calloc((size_t)hp->n_layer * 2, sizeof *m->mla_tensors);
    if (!m->layers || !m->mla_tensors) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    if (m->hf && d.any_moe) {
        m->expert_tables = wk_calloc((size_t)hp->n_layer * 3 * (size_t)NE, sizeof *m->expert_tables);
        if (!m->expert_tables) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < hp->n_layer && !st; i++) st = glm4_layer(m, i, &d, err);
    return st;
}

WK_FAMILY(glm4_moe_lite) = {
    .name = "glm4moelite",
    .gguf_archs = {"deepseek2", "glm4moelite"},
    .hf_model_types = {"glm4_moe_lite"},
    .label = "GLM-4-MoE-Lite",
    .load = glm4_moe_lite_load,
    .chat = WK_CHAT_GLM4,
};
