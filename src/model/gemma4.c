/*
 * gemma4.c - Gemma 4 text models (architectures.md §4; HF Gemma4ForCausalLM
 * / Gemma4TextModel in transformers 5.24, read to learn the computation;
 * llama.cpp's GGUF keys and tensor names, which hf.c gives Hugging Face
 * folders too).
 *
 * What differs from Gemma 3, all carried by struct wk_layer for
 * context.c's forward pass:
 * - two head dims: sliding layers head_dim (key_length_swa), full layers
 *   global_head_dim (key_length), and per-layer KV head counts
 *   (head_count_kv may be an array);
 * - full layers' "proportional" partial RoPE: NEOX pairs (j, j + D/2)
 *   over the whole head, pairs j >= partial_rotary_factor·D/2 not rotated
 *   (GGUF: rope_freqs.weight of 1 then 1e30; HF: built here from
 *   rope.partial_rotary_factor, with infinity, so those pairs get exactly
 *   cos 1, sin 0 as transformers' zero inverse frequencies do);
 * - attention scale 1 (the QK-norms set the scale), V RMS-normalised per
 *   head without a gain; on full layers without attn_v, V is K's
 *   projection (attention_k_eq_v);
 * - the last shared_kv_layers layers read the cache of the last earlier
 *   layer of their kind and compute only Q;
 * - no +1 in the norm gains; feed_forward_length per layer (double-wide
 *   MLP on the shared layers); a per-layer output scalar;
 * - per-layer embeddings (PLE) and, on MoE models, an expert path beside
 *   the dense FFN;
 * - final softcap, and suppress_tokens (generation_config.json) at -inf.
 */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A hyperparameter that is one number or one per layer: out[n_layer]. */
static enum wk_status per_layer_u32(const struct wk_model *m, const char *suffix, bool required,
                                    int32_t *out, int32_t max, struct wk_error *err)
{
    const int32_t L = m->hp.n_layer;
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->hp.arch_name, suffix);
    int64_t vals[4096];
    int n = -1;
    if (m->hf) {
        n = wk__hf_ints(m->hf, key, vals, 4096);
        if (n == -2)
            return wk_error_set(err, WK_E_FORMAT, "%s: config.json: %s holds a value that is not a whole number",
                                wk__model_path(m), key);
    } else {
        const struct wk_gguf_value *v = wk_gguf_find(m->gguf, key);
        if (v && v->type == WK_GGUF_ARRAY) {
            enum wk_status st = wk_gguf_get_arr(m->gguf, key, WK_GGUF_TYPE_COUNT, &v, err);
            if (st) return st;
            if (v->arr.elem_type > WK_GGUF_I32 && v->arr.elem_type != WK_GGUF_U64 &&
                v->arr.elem_type != WK_GGUF_I64)
                return wk_error_set(err, WK_E_FORMAT, "%s: %s is an array of %s, not of integers",
                                    wk__model_path(m), key, wk_gguf_type_name(v->arr.elem_type));
            n = v->arr.n > 4096 ? 4097 : (int)v->arr.n;
            for (int i = 0; i < n && i < 4096; i++) vals[i] = wk_gguf_arr_i64(v, (uint64_t)i);
        }
    }
    if (n < 0) { /* one number for every layer */
        int32_t one = out[0];
        enum wk_status st = wk__hp_u32(m, suffix, required, &one, max, err);
        if (st) return st;
        for (int32_t i = 0; i < L; i++) out[i] = one;
        return WK_OK;
    }
    if (n != L)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s has %d entries for %d layers", wk__model_path(m), key, n, L);
    for (int32_t i = 0; i < L; i++) {
        if (vals[i] < 1 || vals[i] > max)
            return wk_error_set(err, WK_E_FORMAT, "%s: %s[%d] = %lld is out of range (1..%d)", wk__model_path(m),
                                key, i, (long long)vals[i], max);
        out[i] = (int32_t)vals[i];
    }
    return WK_OK;
}

/* The sliding pattern: a bool per layer if given, else 5 sliding then 1 full. */
static enum wk_status sliding_pattern(struct wk_model *m, struct wk_error *err)
{
    const struct wk_hparams *hp = &m->hp;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", hp->arch_name);
    bool *pat = wk_calloc((size_t)hp->n_layer, sizeof *pat);
    if (!pat) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    int n = -1;
    if (m->hf) {
        n = wk__hf_bools(m->hf, key, pat, hp->n_layer);
    } else if (wk_gguf_find(m->gguf, key)) {
        const struct wk_gguf_value *v;
        enum wk_status st = wk_gguf_get_arr(m->gguf, key, WK_GGUF_BOOL, &v, err);
        if (st) {
            wk_free(pat);
            return st;
        }
        n = v->arr.n > (uint64_t)hp->n_layer ? hp->n_layer + 1 : (int)v->arr.n;
        for (int i = 0; i < n && i < hp->n_layer; i++) pat[i] = wk_gguf_arr_bool(v, (uint64_t)i);
    }
    if (n >= 0 && n != hp->n_layer) {
        wk_free(pat);
        return wk_error_set(err, WK_E_FORMAT, "%s: %s has %d entries for %d layers", wk__model_path(m), key, n,
                            hp->n_layer);
    }
    for (int32_t i = 0; i < hp->n_layer; i++)
        m->layers[i].sliding = hp->sliding_window > 0 && (n >= 0 ? pat[i] : (i + 1) % 6 != 0);
    wk_free(pat);
    return WK_OK;
}

/* The full layers' per-pair RoPE divisors: rope_freqs.weight, or built
 * from the partial rotary factor (1 for the rotated pairs, +inf after). */
static enum wk_status full_rope_freqs(struct wk_model *m, int32_t d_full, const struct wk_tensor **out,
                                      struct wk_error *err)
{
    enum wk_status st = wk__tensor(m, out, true, true, d_full / 2, 1, err, "rope_freqs.weight");
    if (st || *out) return st;
    float factor = 1.0f;
    if ((st = wk__hp_f32(m, "rope.partial_rotary_factor", false, &factor, err))) return st;
    if (!(factor > 0 && factor <= 1))
        return wk_error_set(err, WK_E_FORMAT, "%s: partial_rotary_factor %g is outside (0, 1]", wk__model_path(m),
                            factor);
    if (factor == 1.0f) return WK_OK;
    int32_t half = d_full / 2, rotated = (int32_t)((double)factor * d_full / 2); /* HF: int(f · D // 2) */
    m->owned_f32 = wk_malloc((size_t)half * sizeof(float));
    if (!m->owned_f32) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    for (int32_t j = 0; j < half; j++) m->owned_f32[j] = j < rotated ? 1.0f : INFINITY;
    struct wk_tensor *t = &m->owned_rope_freqs;
    *t = (struct wk_tensor){.name = "rope_freqs.weight", .dtype = WK_DTYPE_F32, .n_dims = 1, .data = m->owned_f32};
    t->ne[0] = half;
    t->ne[1] = t->ne[2] = t->ne[3] = 1;
    t->nb[0] = sizeof(float);
    t->nb[1] = t->nb[2] = t->nb[3] = (size_t)half * sizeof(float);
    *out = t;
    return WK_OK;
}

/* generation_config.json's suppress_tokens (HF folders). */
static enum wk_status suppress_tokens(struct wk_model *m, struct wk_error *err)
{
    if (!m->hf) return WK_OK;
    char key[128];
    snprintf(key, sizeof key, "%s.suppress_tokens", m->hp.arch_name);
    int64_t ids[1024];
    int n = wk__hf_ints(m->hf, key, ids, 1024);
    if (n < 0 && n != -1) return wk_error_set(err, WK_E_FORMAT, "%s: suppress_tokens holds a non-integer", wk__model_path(m));
    if (n <= 0) return WK_OK;
    if (n > 1024) return wk_error_set(err, WK_E_FORMAT, "%s: %d suppress_tokens (at most 1024)", wk__model_path(m), n);
    m->suppress = wk_malloc((size_t)n * sizeof *m->suppress);
    if (!m->suppress) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= m->hp.n_vocab)
            return wk_error_set(err, WK_E_FORMAT, "%s: suppress_tokens id %lld is outside the vocabulary (%d)",
                                wk__model_path(m), (long long)ids[i], m->hp.n_vocab);
        m->suppress[i] = (int32_t)ids[i];
    }
    m->n_suppress = n;
    return WK_OK;
}

/* One layer's expert tensors (n_expert > 0). */
static enum wk_status moe_tensors(struct wk_model *m, struct wk_layer *l, int i, struct wk_error *err)
{
    const struct wk_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, NE = hp->n_expert, FE = hp->n_ff_exp;
    enum wk_status st;
    if ((st = wk__tensor(m, &l->moe.router, false, false, E, NE, err, "blk.%d.ffn_gate_inp.weight", i)) ||
        (st = wk__tensor(m, &l->moe.router_scale, false, true, E, 1, err, "blk.%d.ffn_gate_inp.scale", i)) ||
        (st = wk__tensor(m, &l->moe.expert_scale, true, true, NE, 1, err, "blk.%d.ffn_down_exps.scale", i)) ||
        (!l->moe.expert_scale && (st = wk__tensor(m, &l->moe.expert_scale, false, true, NE, 1, err,
                                                  "blk.%d.ffn_gate_inp.per_expert_scale", i))) ||
        (st = wk__tensor3(m, &l->moe.gate_up, true, E, 2 * FE, NE, err, "blk.%d.ffn_gate_up_exps.weight", i)) ||
        (!l->moe.gate_up &&
         ((st = wk__tensor3(m, &l->moe.gate, false, E, FE, NE, err, "blk.%d.ffn_gate_exps.weight", i)) ||
          (st = wk__tensor3(m, &l->moe.up, false, E, FE, NE, err, "blk.%d.ffn_up_exps.weight", i)))) ||
        (st = wk__tensor3(m, &l->moe.down, false, FE, E, NE, err, "blk.%d.ffn_down_exps.weight", i)) ||
        (st = wk__tensor(m, &l->moe.pre_norm, false, true, E, 1, err, "blk.%d.pre_ffw_norm_2.weight", i)) ||
        (st = wk__tensor(m, &l->moe.post_norm_1, false, true, E, 1, err, "blk.%d.post_ffw_norm_1.weight", i)) ||
        (st = wk__tensor(m, &l->moe.post_norm_2, false, true, E, 1, err, "blk.%d.post_ffw_norm_2.weight", i)))
        return st;
    return WK_OK;
}

/* One layer's tensors and geometry; shared layers (kv_layer != i) have no K/V. */
static enum wk_status layer_tensors(struct wk_model *m, int i, struct wk_error *err)
{
    const struct wk_hparams *hp = &m->hp;
    struct wk_layer *l = &m->layers[i];
    const int64_t E = hp->n_embd, D = l->head_dim, HQ = (int64_t)hp->n_head * D, HK = (int64_t)l->n_head_kv * D;
    const int64_t F = l->n_ff, P = hp->n_embd_ple;
    const bool own = l->kv_layer == i;
    enum wk_status st;
    if ((st = wk__tensor(m, &l->attn_norm, false, true, E, 1, err, "blk.%d.attn_norm.weight", i)) ||
        (st = wk__tensor(m, &l->wq, false, false, E, HQ, err, "blk.%d.attn_q.weight", i)) ||
        (st = wk__tensor(m, &l->q_norm, false, true, D, 1, err, "blk.%d.attn_q_norm.weight", i)) ||
        (st = wk__tensor(m, &l->wo, false, false, HQ, E, err, "blk.%d.attn_output.weight", i)) ||
        (st = wk__tensor(m, &l->post_attn_norm, false, true, E, 1, err, "blk.%d.post_attention_norm.weight", i)) ||
        (st = wk__tensor(m, &l->ffn_norm, false, true, E, 1, err, "blk.%d.ffn_norm.weight", i)) ||
        (st = wk__tensor(m, &l->ffn_gate, false, false, E, F, err, "blk.%d.ffn_gate.weight", i)) ||
        (st = wk__tensor(m, &l->ffn_up, false, false, E, F, err, "blk.%d.ffn_up.weight", i)) ||
        (st = wk__tensor(m, &l->ffn_down, false, false, F, E, err, "blk.%d.ffn_down.weight", i)) ||
        (st = wk__tensor(m, &l->post_ffn_norm, false, true, E, 1, err, "blk.%d.post_ffw_norm.weight", i)))
        return st;
    if (own) {
        /* K = V on full layers: no attn_v (attention_k_eq_v) */
        if ((st = wk__tensor(m, &l->wk, false, false, E, HK, err, "blk.%d.attn_k.weight", i)) ||
            (st = wk__tensor(m, &l->k_norm, false, true, D, 1, err, "blk.%d.attn_k_norm.weight", i)) ||
            (st = wk__tensor(m, &l->wv, !l->sliding, false, E, HK, err, "blk.%d.attn_v.weight", i)))
            return st;
        l->k_eq_v = !l->wv;
        l->v_norm = true;
    }
    const struct wk_tensor *scale;
    if ((st = wk__tensor(m, &scale, true, true, 1, 1, err, "blk.%d.layer_output_scale.weight", i)) ||
        (!scale && (st = wk__tensor(m, &scale, true, true, 1, 1, err, "blk.%d.layer_scalar", i))))
        return st;
    l->out_scale = scale ? ((const float *)scale->data)[0] : 1.0f;
    if (P > 0 &&
        ((st = wk__tensor(m, &l->ple.gate, false, false, E, P, err, "blk.%d.inp_gate.weight", i)) ||
         (st = wk__tensor(m, &l->ple.proj, false, false, P, E, err, "blk.%d.proj.weight", i)) ||
         (st = wk__tensor(m, &l->ple.post_norm, false, true, E, 1, err, "blk.%d.post_norm.weight", i))))
        return st;
    return hp->n_expert > 0 ? moe_tensors(m, l, i, err) : WK_OK;
}

/* The embedding, the output, the per-layer embeddings and an MTP
 * assistant's own tensors. */
static enum wk_status top_tensors(struct wk_model *m, struct wk_error *err)
{
    const struct wk_hparams *hp = &m->hp;
    const char *path = wk__model_path(m);
    enum wk_status st;
    const int64_t E = hp->n_embd, P = hp->n_embd_ple, LP = (int64_t)hp->n_layer * P;
    if ((st = wk__load_embeddings(m, err))) return st;
    if (P > 0) {
        const struct wk_tensor *tp = wk__find_tensor(m, "per_layer_token_embd.weight");
        int64_t rows = tp ? tp->ne[1] : 0; /* vocab_size_per_layer_input: every token needs a row */
        if (tp && rows < hp->n_vocab)
            return wk_error_set(err, WK_E_FORMAT, "%s: per_layer_token_embd.weight has %lld rows for a vocabulary of %d",
                                path, (long long)rows, hp->n_vocab);
        if ((st = wk__tensor(m, &m->ple_embd, false, false, LP, rows, err, "per_layer_token_embd.weight")) ||
            (st = wk__tensor(m, &m->ple_model_proj, false, false, E, LP, err, "per_layer_model_proj.weight")) ||
            (st = wk__tensor(m, &m->ple_proj_norm, false, true, P, 1, err, "per_layer_proj_norm.weight")))
            return st;
    }
    if (m->is_mtp) {
        const int64_t Et = m->mtp_n_embd_target, C = m->mtp_n_centroids;
        if ((st = wk__tensor(m, &m->mtp_pre_proj, false, false, 2 * Et, E, err, "mtp.pre_proj.weight")) ||
            (st = wk__tensor(m, &m->mtp_post_proj, false, false, E, Et, err, "mtp.post_proj.weight")))
            return st;
        if (C > 0) {
            if (hp->n_vocab % C != 0 || m->mtp_centroid_top_k > C)
                return wk_error_set(err, WK_E_FORMAT, "%s: %d centroids do not divide the vocabulary of %d (or top_k %d "
                                    "exceeds them)", path, (int)C, hp->n_vocab, m->mtp_centroid_top_k);
            if ((st = wk__tensor(m, &m->mtp_centroids, false, false, E, C, err, "mtp.centroids.weight")) ||
                (st = wk__tensor(m, &m->mtp_token_ordering, false, true, hp->n_vocab, 1, err, "mtp.token_ordering")))
                return st;
            const float *ord = m->mtp_token_ordering->data;
            for (int32_t i = 0; i < hp->n_vocab; i++)
                if (!(ord[i] >= 0 && ord[i] < hp->n_vocab) || ord[i] != (float)(int32_t)ord[i])
                    return wk_error_set(err, WK_E_FORMAT, "%s: token_ordering[%d] = %g is not a token id", path, i,
                                        ord[i]);
        }
    }
    return WK_OK;
}

static enum wk_status gemma4_load(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    const char *path = wk__model_path(m);
    int32_t d_swa = 256, d_full = 512, v_swa = 0, v_full = 0, shared = 0, rot_swa = 0, rot_full = 0;
    hp->rms_eps = 1e-6f;
    hp->rope_base = 1e6f;
    hp->rope_base_swa = 1e4f;
    hp->rope_freq_scale = 1.0f;
    hp->n_ctx_train = 131072;
    if ((st = wk__load_core_hparams(m, err)) ||
        (st = wk__hp_f32(m, "rope.local.freq_base", false, &hp->rope_base_swa, err)) ||
        (st = wk__hp_f32(m, "rope.freq_base_swa", false, &hp->rope_base_swa, err)) ||
        (st = wk__hp_f32(m, "final_logit_softcapping", false, &hp->final_softcap, err)) ||
        (st = wk__hp_u32(m, "attention.sliding_window", false, &hp->sliding_window, 1 << 24, err)) ||
        (st = wk__hp_u32(m, "attention.key_length", false, &d_full, 4096, err)) ||
        (st = wk__hp_u32(m, "attention.key_length_swa", false, &d_swa, 4096, err)) ||
        (st = wk__hp_u32(m, "attention.value_length", false, &v_full, 4096, err)) ||
        (st = wk__hp_u32(m, "attention.value_length_swa", false, &v_swa, 4096, err)) ||
        (st = wk__hp_u32(m, "rope.dimension_count", false, &rot_full, 4096, err)) ||
        (st = wk__hp_u32(m, "rope.dimension_count_swa", false, &rot_swa, 4096, err)))
        return st;
    if ((st = wk__refuse_rope_scaling(m, "Gemma 4", err))) return st; /* it reads none */
    double zero_ok; /* keys llama.cpp writes as 0 when unused: wk__hp_u32 takes 1.. */
    char key[128];
#define HP_COUNT(suffix, out)                                                                      \
    do {                                                                                           \
        snprintf(key, sizeof key, "%s.%s", hp->arch_name, suffix);                                 \
        bool zero = m->hf ? wk__hf_number(m->hf, key, &zero_ok) && zero_ok == 0                    \
                          : wk_gguf_find(m->gguf, key) && wk_gguf_find(m->gguf, key)->u == 0;      \
        if (!zero && (st = wk__hp_u32(m, suffix, false, out, 1 << 20, err))) return st;            \
    } while (0)
    HP_COUNT("attention.shared_kv_layers", &shared);
    HP_COUNT("embedding_length_per_layer_input", &hp->n_embd_ple);
    HP_COUNT("expert_count", &hp->n_expert);
    HP_COUNT("expert_used_count", &hp->n_expert_used);
    HP_COUNT("expert_feed_forward_length", &hp->n_ff_exp);
    if ((v_full && v_full != d_full) || (v_swa && v_swa != d_swa))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: value_length differs from key_length", path);
    if (rot_full == 0) rot_full = d_full;
    if (rot_swa == 0) rot_swa = d_swa;
    if (d_full % 2 || d_swa % 2 || rot_full > d_full || rot_swa > d_swa || rot_full % 2 || rot_swa % 2)
        return wk_error_set(err, WK_E_FORMAT, "%s: head dims %d/%d or RoPE dims %d/%d are not usable", path, d_swa,
                            d_full, rot_swa, rot_full);
    int32_t ordered = 0; /* an MTP assistant: its own fields (hf.c puts them under gemma4.mtp.) */
    HP_COUNT("mtp.backbone_hidden_size", &m->mtp_n_embd_target);
    HP_COUNT("mtp.use_ordered_embeddings", &ordered);
    m->is_mtp = m->mtp_n_embd_target > 0;
    if (ordered) {
        m->mtp_n_centroids = 2048;
        m->mtp_centroid_top_k = 32;
        HP_COUNT("mtp.num_centroids", &m->mtp_n_centroids);
        HP_COUNT("mtp.centroid_intermediate_top_k", &m->mtp_centroid_top_k);
    }
#undef HP_COUNT
    if (m->is_mtp && (hp->n_expert > 0 || hp->n_embd_ple > 0))
        return wk_error_set(err, WK_E_FORMAT, "%s: an MTP assistant has no experts and no per-layer embeddings", path);
    if (shared >= hp->n_layer && !m->is_mtp)
        return wk_error_set(err, WK_E_FORMAT, "%s: %d KV-shared layers of %d leave no layer to share from", path,
                            shared, hp->n_layer);
    if (hp->n_expert > 0 && !(hp->n_expert_used >= 1 && hp->n_expert_used <= hp->n_expert && hp->n_ff_exp >= 1))
        return wk_error_set(err, WK_E_FORMAT, "%s: expert_used_count %d must be 1..expert_count %d (and "
                            "expert_feed_forward_length set)", path, hp->n_expert_used, hp->n_expert);
    if (!(hp->rope_base > 1) || !(hp->rope_base_swa > 1) || !(hp->rms_eps > 0))
        return wk_error_set(err, WK_E_FORMAT, "%s: RoPE base or RMS epsilon out of range", path);
    if (hp->final_softcap < 0) hp->final_softcap = 0;
    hp->head_dim = d_swa;
    hp->n_rot = rot_swa;
    hp->attn_scale = 1.0f; /* Gemma 4: the QK-norms do the scaling */
    hp->embed_scale = sqrtf((float)hp->n_embd);
    m->rope_mode = WK_ROPE_NEOX;
    m->act = WK_ACT_GELU_TANH;

    m->layers = wk_calloc((size_t)hp->n_layer, sizeof *m->layers);
    int32_t *nkv = wk_calloc((size_t)hp->n_layer, sizeof *nkv), *nff = wk_calloc((size_t)hp->n_layer, sizeof *nff);
    if (!m->layers || !nkv || !nff) {
        wk_free(nkv);
        wk_free(nff);
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    nkv[0] = hp->n_head;
    st = per_layer_u32(m, "attention.head_count_kv", false, nkv, 4096, err);
    if (!st) st = per_layer_u32(m, "feed_forward_length", true, nff, 1 << 20, err);
    if (!st) st = sliding_pattern(m, err);
    const int32_t first_shared = hp->n_layer - shared;
    for (int32_t i = 0; !st && i < hp->n_layer; i++) {
        struct wk_layer *l = &m->layers[i];
        l->head_dim = l->sliding ? d_swa : d_full;
        l->n_rot = l->sliding ? rot_swa : rot_full;
        l->n_head_kv = nkv[i];
        l->n_ff = nff[i];
        l->rope_base = l->sliding ? hp->rope_base_swa : hp->rope_base;
        l->rope_scale = l->sliding ? 1.0f : hp->rope_freq_scale;
        l->out_scale = 1.0f;
        l->kv_layer = i;
        if (m->is_mtp) { /* every layer reads the target's cache of its kind */
            l->kv_layer = -1;
        } else if (i >= first_shared) { /* the last earlier layer of its kind keeps the cache it reads */
            l->kv_layer = -1;
            for (int32_t j = first_shared - 1; j >= 0 && l->kv_layer < 0; j--)
                if (m->layers[j].sliding == l->sliding) l->kv_layer = j;
            if (l->kv_layer < 0)
                st = wk_error_set(err, WK_E_FORMAT, "%s: KV-shared layer %d has no earlier %s layer to share from",
                                  path, i, l->sliding ? "sliding" : "full");
            else
                l->n_head_kv = m->layers[l->kv_layer].n_head_kv;
        }
        if (!st && hp->n_head % l->n_head_kv != 0)
            st = wk_error_set(err, WK_E_FORMAT, "%s: layer %d: head_count %d is not a multiple of head_count_kv %d",
                              path, i, hp->n_head, l->n_head_kv);
        hp->n_ff = WK_MAX(hp->n_ff, l->n_ff);
    }
    hp->n_head_kv = nkv[0];
    wk_free(nkv);
    wk_free(nff);
    if (st) return st;

    if ((st = top_tensors(m, err))) return st;
    const struct wk_tensor *freqs; /* the full layers' only; m->rope_freqs stays NULL */
    if ((st = full_rope_freqs(m, d_full, &freqs, err))) return st;
    for (int32_t i = 0; i < hp->n_layer; i++) {
        if ((st = layer_tensors(m, i, err))) return st;
        if (!m->layers[i].sliding) m->layers[i].rope_freqs = freqs;
    }
    return suppress_tokens(m, err);
}

bool wk_model_is_mtp(const struct wk_model *m) { return m->is_mtp; }

enum wk_status wk_model_check_mtp(const struct wk_model *a, const struct wk_model *t, struct wk_error *err)
{
    const char *ap = wk__model_path(a), *tp = wk__model_path(t);
    if (!a->is_mtp) return wk_error_set(err, WK_E_INVALID, "%s is not an MTP assistant", ap);
    if (a->mtp_n_embd_target != t->hp.n_embd)
        return wk_error_set(err, WK_E_INVALID,
                            "the assistant %s expects a target of hidden size %d (backbone_hidden_size) but %s has %d",
                            ap, a->mtp_n_embd_target, tp, t->hp.n_embd);
    if (a->hp.n_vocab != t->hp.n_vocab)
        return wk_error_set(err, WK_E_INVALID, "the assistant %s has %d tokens but the target %s has %d", ap,
                            a->hp.n_vocab, tp, t->hp.n_vocab);
    for (int32_t i = 0; i < a->hp.n_layer; i++) {
        const struct wk_layer *l = &a->layers[i];
        const char *kind = l->sliding ? "sliding" : "full";
        int32_t d = -1;
        for (int32_t j = t->hp.n_layer - 1; j >= 0 && d < 0; j--)
            if (t->layers[j].kv_layer == j && t->layers[j].sliding == l->sliding) d = j;
        if (d < 0)
            return wk_error_set(err, WK_E_INVALID, "the assistant %s has a %s layer but the target %s keeps no %s cache",
                                ap, kind, tp, kind);
        const struct wk_layer *tl = &t->layers[d];
        if (tl->head_dim != l->head_dim || a->hp.n_head % tl->n_head_kv != 0)
            return wk_error_set(err, WK_E_INVALID,
                                "the assistant %s's %s layers (head dim %d, %d heads) do not fit the target %s's "
                                "(head dim %d, %d KV heads)",
                                ap, kind, l->head_dim, a->hp.n_head, tp, tl->head_dim, tl->n_head_kv);
        if (l->sliding && a->hp.sliding_window != t->hp.sliding_window)
            return wk_error_set(err, WK_E_INVALID, "the assistant %s's sliding window %d differs from the target's %d",
                                ap, a->hp.sliding_window, t->hp.sliding_window);
    }
    return WK_OK;
}

WK_FAMILY(gemma4) = {
    .name = "gemma4",
    .gguf_archs = {"gemma4"},
    .hf_model_types = {"gemma4", "gemma4_text"},
    .label = NULL,
    .load = gemma4_load,
    .chat = WK_CHAT_GEMMA,
};
