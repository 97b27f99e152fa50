/*
 * context.c - a running sequence: KV cache, scratch, and the forward pass
 * of the decoder-only transformer families (Llama, Qwen 3, Gemma 3 and 4,
 * GLM-4-MoE-Lite; the
 * per-family differences are flags and optional tensors on struct
 * wk_model).
 *
 * Data flow of one chunk of n tokens at positions pos0 .. pos0+n-1, per
 * layer (shapes outermost first, all f32):
 *   x [n, E] -> RMSNorm -> xn -> Wq, Wk, Wv -> q [n, Hq·D], k, v [n, Hk·D]
 *   q, k: per-head RMSNorm (QK-norm; over the whole row with qk_norm_full),
 *   RoPE (none on a layer with n_rot 0; per-pair divisors: the layer's,
 *   else the model's, LongRoPE's long ones when n_ctx > hp.n_ctx_orig; cos
 *   and sin times hp.rope_attn_factor); k, v written to the cache at
 *   positions pos0..; attention of each (token, head) over cache positions
 *   lo..pos (causal; lo = pos-W+1 on sliding layers) -> att [n, Hq·D]
 *   att -> Wo -> o [n, E] -> (post-norm) -> (· residual_scale) -> x += o
 *   x -> RMSNorm -> Wgate, Wup -> act(gate)·up [n, F] -> Wdown -> (post-norm)
 *   -> (· residual_scale) -> x += ...
 * (without pre-norms, hp.no_pre_norm, xn is x itself) then the last row:
 * RMSNorm -> output projection -> logits [V] (· logit_scale, softcap).
 * Gemma 4 MoE layers add routed experts to the dense FFN's output;
 * GLM-4-MoE-Lite MoE layers use the dense slot for the shared expert and
 * add routed SwiGLU experts chosen by a sigmoid router (moe_ffn_sigmoid).
 *
 * Multi-head latent attention (GLM-4-MoE-Lite, layers with l->mla.on;
 * architectures.md §6.4): the cache of a layer holds one row a position,
 * [RMSNorm(latent c) ; RoPE(k_pe)], kv_lora + n_rot floats, shared by all
 * heads, and nothing else. Queries are absorbed: per head q_abs =
 * [W_UK_hᵀ q_nope ; q_pe], so scores are q_abs · row; the attention output
 * stays in the latent (Σ p_s c_s) until each head's W_UV_h expands it to
 * v dims, before Wo. No per-head K or V is ever formed (except with
 * wk_context_params.mla_uncompressed, the tests' reference path).
 *
 * Verification (wk_context_verify) runs the same chunk with every token
 * computed as a one-token decode step would compute it: the one-token
 * matmul kernels (WK_MATMUL_PER_TOKEN, each weight block still read once
 * for all tokens) and attention items of one (token, head) each over that
 * token's own key range; everything else is per row anyway. So its logits
 * are bit-identical to n decode steps, which speculative decoding needs.
 *
 * Sequences (wk_context_decode_batch): every row of a chunk has its
 * position and its sequence (c->pos, c->seq); each sequence has its own
 * stripe of every layer's cache (wk__kv_seq_offset), its own n_past and
 * ring_lo, and the attention blocks are runs of one sequence's rows
 * (build_blocks), so what follows holds per sequence.
 *
 * KV cache. A full-attention layer keeps every position: n_slots = n_ctx
 * (rounded up to whole blocks of WK_KV_VBLK value slots), position p in
 * slot p. A sliding-window layer (window W) keeps a ring of
 * n_slots = S = min(n_ctx, W + n_ubatch + WK_VERIFY_MAX) slots, position p
 * in slot p % S (llama.cpp's SWA cache keeps W + n_ubatch; the
 * WK_VERIFY_MAX more let a speculative step write drafted positions that
 * are then rolled back without costing the next prompt its prefix reuse):
 * a chunk of n <= n_ubatch tokens
 * at n_past.. needs positions n_past - W + 1 .. n_past + n - 1, W + n - 1
 * <= S of them, and writing position p overwrites p - S <= n_past - W,
 * which no query of the chunk reads. A key range lo..p_last then lies in
 * at most two runs of slots (lo % S .. S-1, then 0 ..), so each product of
 * the attention is one GEMM per run; the second run's P·V is computed
 * apart and added. Decode and verify split a range the same way, so they
 * still agree bit for bit. ring_lo is the first position every ring still
 * holds; wk_context_truncate keeps the cache only while the next position
 * needs nothing before it.
 *
 * Scratch comes from one arena sized at creation for n_ubatch tokens;
 * nothing is allocated per token.
 */
#include "model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "context_internal.h"

struct wk_context_params wk_context_params_default(void)
{
    return (struct wk_context_params){.n_ctx = 0, .n_threads = 0, .n_ubatch = 512, .pool = NULL, .n_seq_max = 1};
}

bool wk_kv_type_parse(const char *name, enum wk_dtype *out)
{
    if (!name || !*name || strcmp(name, "f32") == 0) *out = WK_DTYPE_F32;
    else if (strcmp(name, "f16") == 0) *out = WK_DTYPE_F16;
    else if (strcmp(name, "q8_0") == 0) *out = WK_DTYPE_Q8_0;
    else return false;
    return true;
}

const char *wk_kv_type_name(enum wk_dtype t)
{
    return t == WK_DTYPE_F32 ? "f32" : t == WK_DTYPE_F16 ? "f16" : t == WK_DTYPE_Q8_0 ? "q8_0" : "?";
}

bool wk_kv_type_from_env(enum wk_dtype *out, const char **value)
{
    *value = wk_getenv_alias("WICK_KV_CACHE_TYPE", "OLLAMA_KV_CACHE_TYPE");
    return wk_kv_type_parse(*value, out);
}

/* Scratch for a prefill's keys packed once per kv head (backend_cpu.c,
 * attention): floats for n_kv heads of head_dim D, *rows keys each (up
 * to WK_ATTN_KPACK_ROWS), in *k_floats; then, where the table can take a
 * prefix of a packing's columns (gemm_f32_prepacked_cols), the values
 * (each kv head's [D, *rows] transposed rows) after them. 0 (and *rows 0)
 * where k cannot pack them with the bits of its own GEMM for a block of
 * ATTN_QBLOCK queries. */
static size_t kpack_floats(const struct wk_cpu_kernels *k, int32_t n_ctx, size_t n_kv, size_t D, int32_t *rows,
                           size_t *k_floats)
{
    const bool can = k->gemm_f32_pack && k->gemm_f32_packed_min_n > 0 && k->gemm_f32_packed_min_n <= ATTN_QBLOCK;
    *rows = can ? WK_MIN(n_ctx, WK_ATTN_KPACK_ROWS) : 0;
    *k_floats = can ? n_kv * k->gemm_f32_pack_floats(*rows, (int64_t)D) : 0;
    const size_t v_floats = can && k->gemm_f32_prepacked_cols ? n_kv * k->gemm_f32_pack_floats((int64_t)D, *rows) : 0;
    return *k_floats + v_floats;
}

/* Points each layer's cache at its part of the context's K, V (and MLA
 * reference) allocations, n_seq stripes of n_slots rows each; a layer that
 * reads another's cache gets its donor's. */
static void place_kv(struct wk_context *c)
{
    const struct wk_model *m = c->m;
    const struct wk_hparams *hp = &m->hp;
    size_t k_off = 0, v_off = 0, f_off = 0;
    const size_t es = (size_t)wk_kv_elem_bytes(c->kv_type);
    for (int32_t il = 0; il < hp->n_layer; il++) {
        const struct wk_layer *l = &m->layers[il];
        if (l->kv_layer != il) continue;
        const size_t row = (size_t)wk_model_kv_values(m, il), slots = (size_t)c->n_seq * (size_t)c->kv[il].n_slots;
        c->kv[il].k = (uint8_t *)c->k_cache + k_off * es;
        c->kv[il].v = l->mla.on ? NULL : (uint8_t *)c->v_cache + v_off * es;
        c->kv[il].type = c->kv_type;
        if (c->k_scales) { /* one scale a group of 32 entries (backend.h, wk_kv_ks_index, wk_kv_vs_index) */
            c->kv[il].ks = c->k_scales + k_off / WK_KV_Q8_GROUP;
            c->kv[il].vs = c->v_scales + v_off / WK_KV_Q8_GROUP;
        }
        k_off += slots * (l->mla.on ? row : row / 2);
        v_off += slots * (l->mla.on ? 0 : row / 2);
        if (l->mla.on && c->mla_uncompressed) {
            c->kv[il].k_full = c->mla_full_cache + f_off;
            f_off += slots * (size_t)hp->n_head * (size_t)l->head_dim;
            c->kv[il].v_full = c->mla_full_cache + f_off;
            f_off += slots * (size_t)hp->n_head * (size_t)l->mla.v;
        }
    }
    for (int32_t il = 0; il < hp->n_layer; il++) /* shared layers see their donor's cache */
        if (m->layers[il].kv_layer >= 0 && m->layers[il].kv_layer != il) c->kv[il] = c->kv[m->layers[il].kv_layer];
}

/* Each layer's slots and value blocks, and the context's K, V (and MLA
 * reference) allocations (c->n_ctx, n_seq, kv_type set; c->kv zeroed):
 * sliding-window layers keep a ring of W + n_ubatch + WK_VERIFY_MAX slots
 * (top of file); a layer every query of which sees its keys from slot 0
 * (no window) keeps its values in blocks of WK_KV_VBLK slots (backend.h,
 * struct wk_attn_args), its slots rounded up to whole blocks.
 * *any_blocked: some layer's values are in blocks. An allocation that
 * fails is left NULL for the caller to see. */
static void kv_layout(struct wk_context *c, bool mla_uncompressed, int32_t n_ub, bool *any_blocked)
{
    const struct wk_model *m = c->m;
    const struct wk_hparams *hp = &m->hp;
    const int32_t W = hp->sliding_window, n_ctx = c->n_ctx;
    size_t k_floats = 0, v_floats = 0, full_floats = 0;
    *any_blocked = false;
    c->first_shared = hp->n_layer;
    for (int32_t il = 0; il < hp->n_layer; il++) {
        const struct wk_layer *l = &m->layers[il];
        if (l->kv_layer != il) { /* reads an earlier layer's cache */
            c->first_shared = WK_MIN(c->first_shared, il);
            continue;
        }
        bool ring = l->sliding && W > 0;
        c->kv[il].v_blk = !ring && !l->mla.on ? WK_KV_VBLK : 0;
        c->kv[il].n_slots = ring ? (int32_t)WK_MIN((int64_t)W + n_ub + WK_VERIFY_MAX, (int64_t)n_ctx)
                            : l->mla.on ? n_ctx
                                        : (n_ctx + WK_KV_VBLK - 1) / WK_KV_VBLK * WK_KV_VBLK;
        *any_blocked |= c->kv[il].v_blk > 0;
        if (ring) c->n_ring = c->kv[il].n_slots;
        const size_t row = (size_t)wk_model_kv_values(m, il); /* K and V, or an MLA layer's compressed row */
        k_floats += (size_t)c->n_seq * (size_t)c->kv[il].n_slots * (l->mla.on ? row : row / 2);
        v_floats += (size_t)c->n_seq * (size_t)c->kv[il].n_slots * (l->mla.on ? 0 : row / 2);
        if (l->mla.on && mla_uncompressed)
            full_floats += (size_t)c->kv[il].n_slots * (size_t)hp->n_head * (size_t)(l->head_dim + l->mla.v);
    }
    const size_t es = (size_t)wk_kv_elem_bytes(c->kv_type);
    c->kv_bytes = (k_floats + v_floats) * es;
    c->k_cache = wk_aligned_alloc(WK_MAX(k_floats, 1) * es);
    c->v_cache = wk_aligned_alloc(WK_MAX(v_floats, 1) * es);
    if (c->kv_type == WK_DTYPE_Q8_0) { /* every head_dim a multiple of 32 (wk_context_create) */
        const size_t ks = k_floats / WK_KV_Q8_GROUP, vs = v_floats / WK_KV_Q8_GROUP;
        c->kv_bytes += (ks + vs) * sizeof(wk_f16);
        c->k_scales = wk_aligned_alloc(WK_MAX(ks, 1) * sizeof(wk_f16));
        c->v_scales = wk_aligned_alloc(WK_MAX(vs, 1) * sizeof(wk_f16));
    }
    c->mla_uncompressed = mla_uncompressed && full_floats > 0;
    if (c->mla_uncompressed) c->mla_full_cache = wk_aligned_alloc(full_floats * sizeof(float));
}

enum wk_status wk_context_create(const struct wk_model *m, const struct wk_context_params *p,
                                 struct wk_context **out, struct wk_error *err)
{
    *out = NULL;
    const struct wk_hparams *hp = &m->hp;
    /* the model's trained context bounds any request (Ollama: min(num_ctx, trained)) */
    int32_t n_ctx = p->n_ctx > 0 ? p->n_ctx : 4096;
    if (hp->n_ctx_train > 0) n_ctx = WK_MIN(n_ctx, hp->n_ctx_train);
    int32_t n_threads = p->pool         ? wk_threadpool_n_threads(p->pool)
                        : p->n_threads > 0 ? p->n_threads
                                           : wk_cpu_features_get()->n_cores;
    if (p->pool && p->n_threads > 0 && p->n_threads != n_threads)
        return wk_error_set(err, WK_E_INVALID, "%d threads asked for on a lent pool of %d",
                            p->n_threads, n_threads);
    int32_t n_ub = WK_MIN(p->n_ubatch > 0 ? p->n_ubatch : 512, n_ctx);
    if (n_ctx < 1 || n_ctx > (1 << 22))
        return wk_error_set(err, WK_E_INVALID, "context size %d is out of range (1..%d)", n_ctx,
                            1 << 22);
    if (n_threads < 1 || n_threads > 256)
        return wk_error_set(err, WK_E_INVALID, "thread count %d is out of range (1..256)",
                            n_threads);
    const int32_t n_seq = p->n_seq_max > 0 ? p->n_seq_max : 1;
    if (n_seq > WK_SEQ_MAX)
        return wk_error_set(err, WK_E_INVALID, "%d sequences asked for: at most %d", n_seq, WK_SEQ_MAX);
    if (n_seq > 1 && (m->is_mtp || m->layers[0].mla.on || p->mla_uncompressed))
        return wk_error_set(err, WK_E_UNSUPPORTED,
                            "several sequences in one context are not supported for %s yet",
                            m->is_mtp ? "an MTP assistant" : "multi-head latent attention");
    const enum wk_dtype kv_type = p->kv_type;
    if (kv_type != WK_DTYPE_F32 && kv_type != WK_DTYPE_F16 && kv_type != WK_DTYPE_Q8_0)
        return wk_error_set(err, WK_E_INVALID, "a KV cache of %s is not supported (f32, f16 or q8_0)",
                            wk_dtype_name(kv_type));
    if (kv_type != WK_DTYPE_F32 && (m->layers[0].mla.on || p->mla_uncompressed))
        return wk_error_set(err, WK_E_UNSUPPORTED,
                            "a %s KV cache is not supported for multi-head latent attention yet (f32 only)",
                            wk_kv_type_name(kv_type));
    for (int32_t il = 0; kv_type == WK_DTYPE_Q8_0 && il < hp->n_layer; il++)
        if (m->layers[il].head_dim % WK_KV_Q8_GROUP)
            return wk_error_set(err, WK_E_UNSUPPORTED,
                                "a q8_0 KV cache needs head dims that are multiples of 32 (layer %d's is %d)", il,
                                m->layers[il].head_dim);
    struct wk_context *c = wk_calloc(1, sizeof *c);
    if (!c) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    c->m = m;
    c->k = wk_cpu_kernels_get();
    c->n_ctx = n_ctx;
    c->n_ubatch = n_ub;
    c->n_threads = n_threads;
    c->n_seq = n_seq;
    c->pool = p->pool;
    c->owns_pool = !p->pool;
    enum wk_status st = c->owns_pool ? wk_threadpool_create(n_threads, &c->pool) : WK_OK;
    if (st) {
        wk_context_destroy(c);
        return wk_error_set(err, st, "cannot start %d threads", n_threads);
    }
    const size_t E = (size_t)hp->n_embd, U = (size_t)n_ub;
    /* the largest of each layer's sizes (Gemma 4's sliding and full layers differ) */
    size_t D = 0, HQ = 0, HK = 0, F = 0, NKV = 0;
    /* multi-head latent attention: q_lora, kv_lora, the cache row, the matmul rows */
    size_t QL = 0, ML = 0, KR = 0, TIN = 0, TOUT = 0;
    for (int32_t il = 0; il < hp->n_layer; il++) {
        const struct wk_layer *l = &m->layers[il];
        D = WK_MAX(D, (size_t)l->head_dim);
        HQ = WK_MAX(HQ, (size_t)hp->n_head * (size_t)l->head_dim);
        HK = WK_MAX(HK, (size_t)l->n_head_kv * (size_t)l->head_dim);
        NKV = WK_MAX(NKV, (size_t)l->n_head_kv);
        F = WK_MAX(F, (size_t)l->n_ff);
        if (!l->mla.on) continue;
        HQ = WK_MAX(HQ, (size_t)hp->n_head * (size_t)l->mla.v);
        QL = WK_MAX(QL, (size_t)hp->n_lora_q);
        ML = WK_MAX(ML, (size_t)l->mla.kv_lora);
        KR = WK_MAX(KR, (size_t)(l->mla.kv_lora + l->n_rot));
        TIN = WK_MAX(TIN, (size_t)WK_MAX(l->mla.nope, l->mla.kv_lora));
        TOUT = WK_MAX(TOUT, (size_t)WK_MAX(l->mla.v, l->mla.kv_lora));
    }
    const size_t P = (size_t)hp->n_embd_ple, LP = (size_t)hp->n_layer * P;
    c->head_dim_max = (int32_t)D;
    const size_t NE = (size_t)hp->n_expert, NK = (size_t)hp->n_expert_used, FE = (size_t)hp->n_ff_exp;
    c->kv_type = kv_type;
    c->kv = wk_calloc((size_t)hp->n_layer, sizeof *c->kv);
    if (!c->kv) {
        wk_context_destroy(c);
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    bool any_blocked;
    kv_layout(c, p->mla_uncompressed, n_ub, &any_blocked);
    const char *naive = getenv("WICK_MOE_NAIVE");
    c->moe_naive = naive && *naive && strcmp(naive, "0") != 0;
    size_t n_in_max = WK_MAX(WK_MAX(WK_MAX(E, HQ), WK_MAX(F, FE)), WK_MAX(QL, ML));
    int32_t kpack_rows;
    size_t kpack_k;
    const size_t KPACK = kpack_floats(c->k, n_ctx, NKV, D, &kpack_rows, &kpack_k);
    /* an F16 or Q8_0 cache's rows as floats, per thread (backend_cpu.c, attention) */
    const size_t CVT = kv_type != WK_DTYPE_F32 || any_blocked || m->is_mtp /* (an assistant reads its target's) */
                           ? wk_attn_cvt_floats(n_ctx, (int32_t)D, KPACK ? kpack_rows : 0, KPACK > kpack_k)
                           : 0;
    size_t sizes[] = {U * E, U * E, U * HQ, U * HK, U * HK, U * HQ, U * E, U * F, U * F,
                      (size_t)n_threads * ATTN_QBLOCK * (size_t)n_ctx,
                      (size_t)n_threads * ATTN_QBLOCK * D, 2 * U * D,
                      wk_cpu_matmul_scratch_floats((int64_t)n_in_max, n_threads, (int64_t)U),
                      U * LP, WK_MAX(U * P, LP),
                      U * NE, U * NK, U * E, U * E, U * FE, U * FE, U * E, U * E,
                      2 * (size_t)m->mtp_n_embd_target, (size_t)m->mtp_n_centroids, (size_t)hp->n_vocab,
                      U * QL, U * KR, U * (size_t)hp->n_head * KR, (size_t)hp->n_head * U * ML, U * TIN, U * TOUT,
                      KPACK, (size_t)n_threads * CVT};
    size_t arena_bytes = 0;
    for (size_t i = 0; i < WK_ARRAY_LEN(sizes); i++) arena_bytes += sizes[i] * sizeof(float) + 64;
    arena_bytes += (2 * U * NK + 4 * U + 3 * (size_t)n_seq + (size_t)hp->n_vocab) * sizeof(int32_t) + U + 9 * 64;
    if (!c->k_cache || !c->v_cache || (kv_type == WK_DTYPE_Q8_0 && (!c->k_scales || !c->v_scales)) ||
        (c->mla_uncompressed && !c->mla_full_cache) ||
        wk_arena_init(&c->arena, arena_bytes)) {
        wk_context_destroy(c);
        return wk_error_set(err, WK_E_NOMEM,
                            "out of memory for a %d-token KV cache (%.1f MiB) and scratch", n_ctx,
                            (double)c->kv_bytes / (1 << 20));
    }
    place_kv(c);
    float **views[] = {&c->x, &c->xn, &c->q, &c->kx, &c->vx, &c->att, &c->o, &c->gate, &c->up,
                       &c->scores, &c->pv, &c->rope_cs, &c->mm_scratch, &c->ple, &c->ple_g,
                       &c->moe_logits, &c->moe_w, &c->moe_u, &c->moe_in, &c->moe_gate,
                       &c->moe_up, &c->moe_y, &c->moe_sum, &c->mtp_in, &c->mtp_centroid_logits,
                       &c->mtp_cand_logits, &c->mla_qa, &c->mla_ckv, &c->mla_qabs, &c->mla_lat,
                       &c->mla_tin, &c->mla_tout, &c->kpack, &c->cvt};
    for (size_t i = 0; i < WK_ARRAY_LEN(views); i++)
        *views[i] = wk_arena_alloc(&c->arena, sizes[i] * sizeof(float));
    c->moe_idx = wk_arena_alloc(&c->arena, U * NK * sizeof(int32_t));
    c->moe_rows = wk_arena_alloc(&c->arena, U * NK * sizeof(int32_t));
    c->pos = wk_arena_alloc(&c->arena, U * sizeof(int32_t));
    c->seq = wk_arena_alloc(&c->arena, U * sizeof(int32_t));
    c->blk_t0 = wk_arena_alloc(&c->arena, U * sizeof(int32_t));
    c->blk_nq = wk_arena_alloc(&c->arena, U * sizeof(int32_t));
    c->n_past = wk_arena_alloc(&c->arena, (size_t)n_seq * sizeof(int32_t));
    c->ring_lo = wk_arena_alloc(&c->arena, (size_t)n_seq * sizeof(int32_t));
    c->seq_hi = wk_arena_alloc(&c->arena, (size_t)n_seq * sizeof(int32_t));
    c->want = wk_arena_alloc(&c->arena, U * sizeof(bool));
    c->mtp_cand = wk_arena_alloc(&c->arena, (size_t)hp->n_vocab * sizeof(int32_t));
    WK_ASSERT(c->pos != NULL && c->want != NULL && c->mtp_cand != NULL);
    wk__backend_cpu_init(&c->be_cpu, c->pool, c->k, c->mm_scratch, c->scores, c->pv, n_ctx, (int32_t)D);
    c->be_cpu.kpack = KPACK ? c->kpack : NULL;
    c->be_cpu.kpack_rows = KPACK ? kpack_rows : 0;
    c->be_cpu.vpack = KPACK > kpack_k ? c->kpack + kpack_k : NULL;
    c->be_cpu.cvt = CVT ? c->cvt : NULL;
    c->be_cpu.cvt_floats = CVT;
    c->be = &c->be_cpu.base;
    memset(c->n_past, 0, (size_t)n_seq * sizeof(int32_t));
    memset(c->ring_lo, 0, (size_t)n_seq * sizeof(int32_t));
    *out = c;
    return WK_OK;
}

enum wk_status wk_context_create_or_f32(const struct wk_model *m, const struct wk_context_params *p,
                                        struct wk_context **out, struct wk_error *err)
{
    enum wk_status st = wk_context_create(m, p, out, err);
    if (st != WK_E_UNSUPPORTED || p->kv_type == WK_DTYPE_F32) return st;
    struct wk_context_params f32 = *p;
    f32.kv_type = WK_DTYPE_F32;
    if (err) wk_error_clear(err);
    return wk_context_create(m, &f32, out, err);
}

void wk_context_destroy(struct wk_context *c)
{
    if (!c) return;
    if (c->owns_pool) wk_threadpool_destroy(c->pool);
    wk_aligned_free(c->k_cache);
    wk_aligned_free(c->v_cache);
    wk_aligned_free(c->k_scales);
    wk_aligned_free(c->v_scales);
    wk_aligned_free(c->mla_full_cache);
    wk_free(c->kv);
    wk_arena_deinit(&c->arena);
    wk_free(c);
}

int32_t wk_context_n_ctx(const struct wk_context *c) { return c->n_ctx; }
enum wk_dtype wk_context_kv_type(const struct wk_context *c) { return c->kv_type; }
size_t wk_context_kv_bytes(const struct wk_context *c) { return c->kv_bytes; }
int32_t wk_context_n_threads(const struct wk_context *c) { return c->n_threads; }
struct wk_threadpool *wk_context_pool(const struct wk_context *c) { return c->pool; }
int32_t wk_context_n_past(const struct wk_context *c) { return c->n_past[0]; }
int32_t wk_context_n_seq(const struct wk_context *c) { return c->n_seq; }
int32_t wk_context_n_ubatch(const struct wk_context *c) { return c->n_ubatch; }

int32_t wk_context_reusable(const struct wk_context *c, int64_t n, int32_t common)
{
    const int32_t ub = c->n_ubatch, align = ub % ATTN_QBLOCK == 0 ? ATTN_QBLOCK : ub;
    const bool fresh_one = ub > 1 && n % ub == 1; /* a prefill from 0 ends with a one-row chunk */
    for (int32_t keep = common / align * align; keep > 0; keep -= align)
        if ((ub > 1 && (n - keep) % ub == 1) == fresh_one) return keep;
    return 0;
}

int32_t wk_context_seq_n_past(const struct wk_context *c, int32_t seq)
{
    WK_ASSERT(seq >= 0 && seq < c->n_seq);
    return c->n_past[seq];
}

int32_t wk_context_seq_truncate(struct wk_context *c, int32_t seq, int32_t n_keep)
{
    WK_ASSERT(seq >= 0 && seq < c->n_seq);
    WK_ASSERT(n_keep >= 0 && n_keep <= c->n_past[seq]);
    /* the next token, at n_keep, reads positions n_keep - W + 1 .. on the
     * ring layers: they must not have been overwritten */
    int32_t need = WK_MAX(0, n_keep - c->m->hp.sliding_window + 1);
    if (c->n_ring > 0 && n_keep > 0 && need < c->ring_lo[seq]) n_keep = 0;
    if (n_keep == 0) c->ring_lo[seq] = 0;
    c->n_past[seq] = n_keep;
    return n_keep;
}

int32_t wk_context_truncate(struct wk_context *c, int32_t n_keep) { return wk_context_seq_truncate(c, 0, n_keep); }

int32_t wk_context_seq_copy(struct wk_context *c, int32_t src, int32_t dst, int32_t n_keep)
{
    WK_ASSERT(src >= 0 && src < c->n_seq && dst >= 0 && dst < c->n_seq);
    WK_ASSERT(n_keep >= 0 && n_keep <= c->n_past[src]);
    if (src == dst) return wk_context_seq_truncate(c, dst, n_keep);
    /* the first n_keep slots of every full layer; a ring layer's whole
     * ring, whose slots hold positions modulo its size */
    for (int32_t il = 0; il < c->m->hp.n_layer; il++) {
        const struct wk_layer *l = &c->m->layers[il];
        if (l->kv_layer != il) continue;
        const struct kv_layer *kv = &c->kv[il];
        const int64_t hk = (int64_t)l->n_head_kv * l->head_dim, S = kv->n_slots;
        const struct wk_kv_cache kc = kv_cache(kv);
        c->be->ops->kv_copy(c->be, &kc, hk, l->head_dim, src, dst, S < c->n_ctx ? S : n_keep);
    }
    c->n_past[dst] = c->n_past[src];
    c->ring_lo[dst] = c->ring_lo[src];
    return wk_context_seq_truncate(c, dst, n_keep);
}

/* ------------------------------------------------------------ one chunk */

void wk__norm_rows(struct wk_context *c, int32_t n, int64_t width, const float *x, const struct wk_tensor *g, float eps,
                   float *y)
{
    c->be->ops->rms_norm(c->be, n, width, x, g, eps, y);
}

/* Gemma 4's per-layer inputs for the chunk's n tokens (architectures.md
 * §4.6 step 2, HF Gemma4TextModel.project_per_layer_inputs), from the
 * scaled token embeddings in x: ple[t] (n_layer rows of P) =
 * (RMSNorm_P(W_plm · x_t / sqrt(E); proj_norm) + E_ple[token] · sqrt(P)) / sqrt(2). */
static void ple_inputs(struct wk_context *c, const int32_t *tokens, int32_t n, unsigned mm)
{
    const struct wk_model *m = c->m;
    const struct wk_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, P = hp->n_embd_ple, LP = (int64_t)hp->n_layer * P;
    c->be->ops->matmul(c->be, m->ple_model_proj, c->x, c->ple, n, mm);
    const float proj_scale = 1.0f / sqrtf((float)E), tok_scale = sqrtf((float)P);
    const float mix = 1.0f / sqrtf(2.0f);
    float *tok = c->ple_g; /* LP floats */
    for (int32_t t = 0; t < n; t++) {
        float *row = c->ple + t * LP;
        for (int64_t i = 0; i < LP; i++) row[i] *= proj_scale;
        wk__norm_rows(c, hp->n_layer, P, row, m->ple_proj_norm, hp->rms_eps, row);
        wk_cpu_get_row(c->k, m->ple_embd, tokens[t], tok);
        for (int64_t i = 0; i < LP; i++) row[i] = (row[i] + tok[i] * tok_scale) * mix;
    }
}


/* The layer (of the target's model) whose cache a query-only layer of
 * kind `sliding` reads: the last one of that kind keeping its own cache
 * (architectures.md §5.3: the KV donors), or -1. */
static int32_t last_cache_layer(const struct wk_model *m, bool sliding)
{
    for (int32_t il = m->hp.n_layer - 1; il >= 0; il--)
        if (m->layers[il].kv_layer == il && m->layers[il].sliding == sliding) return il;
    return -1;
}

/* The attention blocks of the chunk's n rows (c->blk_*): runs of rows of
 * one sequence at consecutive positions, cut every ATTN_QBLOCK rows, or
 * every row with per_token (each row then gets exactly a one-token step's
 * products). A sequence's rows thus get the blocks they get alone, and a
 * prefill resumed at a multiple of ATTN_QBLOCK the blocks of one from 0
 * (wk_context_reusable). */
static void build_blocks(struct wk_context *c, int32_t n, bool per_token)
{
    c->n_blk = 0;
    for (int32_t t = 0; t < n; t++) {
        const int32_t b = c->n_blk - 1;
        if (b >= 0 && !per_token && c->blk_nq[b] < ATTN_QBLOCK && c->seq[t] == c->seq[t - 1] &&
            c->pos[t] == c->pos[t - 1] + 1) {
            c->blk_nq[b]++;
            continue;
        }
        c->blk_t0[c->n_blk] = t;
        c->blk_nq[c->n_blk++] = 1;
    }
}

/* Keeps only the rows whose logits are wanted (x, the per-layer inputs,
 * positions, sequences), in order; returns how many. */
static int32_t keep_wanted_rows(struct wk_context *c, int32_t n)
{
    const int64_t E = c->m->hp.n_embd, LP = (int64_t)c->m->hp.n_layer * c->m->hp.n_embd_ple;
    int32_t kept = 0;
    for (int32_t t = 0; t < n; t++) {
        if (!c->want[t]) continue;
        if (kept != t) {
            c->be->ops->copy(c->be, E, c->x + kept * E, c->x + t * E);
            if (LP) c->be->ops->copy(c->be, LP, c->ple + kept * LP, c->ple + t * LP);
            c->pos[kept] = c->pos[t];
            c->seq[kept] = c->seq[t];
            c->want[kept] = true;
        }
        kept++;
    }
    return kept;
}

/*
 * The decoder layers over the n rows in x at positions pos[0..n) of
 * sequences seq[0..n), RoPE at pos + rope_shift. Layers that own a cache
 * write their K and V to each row's sequence's stripe; KV-shared layers
 * read their donor's, and with ext (an MTP assistant) every layer reads
 * ext's cache of its kind. The rows past the first KV-shared layer shrink
 * to those whose logits are wanted (c->want; *n_io is updated). Returns
 * false when cancel became true.
 */
/* Layer l's attention over the n rows of xn (RMSNormed x): Q, K and V,
 * their biases and norms, RoPE by the angles cs, the KV write into the
 * layer's cache (unless the layer reads another's, or ext's), and the
 * attention into c->att. */
static void attention_block(struct wk_context *c, const struct wk_layer *l, int32_t il, int32_t n, const float *cs,
                            bool per_token, const struct kv_layer *kv)
{
    const bool own_kv = l->kv_layer == il;
    const struct wk_model *m = c->m;
    const struct wk_hparams *hp = &m->hp;
    struct wk_backend *be = c->be;
    const struct wk_backend_ops *op = be->ops;
    const unsigned mm = per_token ? WK_MATMUL_PER_TOKEN : 0;
    const int64_t D = l->head_dim, HQ = (int64_t)hp->n_head * D, HK = (int64_t)l->n_head_kv * D;
    const struct wk_tensor *qkv_w[3] = {l->wq, l->wk, l->wv};
    float *qkv_y[3] = {c->q, c->kx, c->vx};
    const struct wk_kv_cache kc = kv_cache(kv);
    if (own_kv && n == 1 && kv == &c->kv[il]) op->kv_prefetch(be, &kc, HK, l->head_dim, c->seq[0], c->pos[0]);
    op->matmul_many(be, !own_kv ? 1 : l->wv ? 3 : 2, qkv_w, qkv_y, c->xn, n, mm);
    if (l->bq) op->add_bias(be, n, HQ, c->q, l->bq);
    if (own_kv && l->bk) op->add_bias(be, n, HK, c->kx, l->bk);
    if (own_kv && l->bv) op->add_bias(be, n, HK, c->vx, l->bv);
    if (own_kv && l->k_eq_v) op->copy(be, n * HK, c->vx, c->kx);
    /* QK-norm per head, or over the whole row (qk_norm_full) */
    const int32_t qk_rows = l->qk_norm_full ? 1 : hp->n_head, kk_rows = l->qk_norm_full ? 1 : l->n_head_kv;
    if (l->q_norm) op->rms_norm(be, n * qk_rows, HQ / qk_rows, c->q, l->q_norm, hp->rms_eps, c->q);
    if (l->n_rot > 0) op->rope(be, n, c->q, hp->n_head, (int)D, l->n_rot, cs, m->rope_mode);
    if (hp->attn_scale != 1.0f) op->scale(be, n * HQ, c->q, hp->attn_scale);
    if (own_kv) {
        if (l->k_norm) op->rms_norm(be, n * kk_rows, HK / kk_rows, c->kx, l->k_norm, hp->rms_eps, c->kx);
        if (l->n_rot > 0) op->rope(be, n, c->kx, l->n_head_kv, (int)D, l->n_rot, cs, m->rope_mode);
        if (l->v_norm) op->rms_norm(be, n * l->n_head_kv, D, c->vx, NULL, hp->rms_eps, c->vx);
        op->kv_write(be, &kc, HK, l->head_dim, n, c->pos, c->seq, c->kx, c->vx);
    }
    const int32_t W = hp->sliding_window + c->window_extra;
    struct wk_attn_args at = {.q = c->q, .out = c->att, .k = kv->k, .v = kv->v, .ks = kv->ks, .vs = kv->vs,
                              .kv_type = kv->type,
                              .n_slots = kv->n_slots, .v_blk = kv->v_blk,
                              .n_head = hp->n_head, .n_head_kv = l->n_head_kv, .head_dim = l->head_dim,
                              .n_rows = n, .pos = c->pos, .seq = c->seq, .blk_t0 = c->blk_t0,
                              .blk_nq = c->blk_nq, .n_blk = c->n_blk, .window = l->sliding && W > 0 ? W : 0,
                              .bidirectional = c->bidirectional, .seq_hi = c->seq_hi, .per_token = per_token,
                              .softcap = hp->attn_softcap, .sinks = l->attn_sinks ? l->attn_sinks->data : NULL};
    op->attention(be, &at);
}

/* Layer l's feed-forward part over the n rows of x, added to x: the dense
 * GLU (or a shared expert), routed experts, Gemma 4's per-layer input. */
static void ffn_block(struct wk_context *c, const struct wk_layer *l, int32_t il, int32_t n, unsigned mm)
{
    const struct wk_model *m = c->m;
    const struct wk_hparams *hp = &m->hp;
    struct wk_backend *be = c->be;
    const struct wk_backend_ops *op = be->ops;
    const int64_t E = hp->n_embd, LP = (int64_t)hp->n_layer * hp->n_embd_ple;
    if (l->ffn_norm) op->rms_norm(be, n, E, c->x, l->ffn_norm, hp->rms_eps, c->xn);
    else op->copy(be, n * E, c->xn, c->x); /* no pre-norm (OLMo 2) */
    enum wk_glu glu = m->act == WK_ACT_GELU_TANH ? WK_GLU_GELU_TANH : WK_GLU_SILU;
    if (l->ffn_gate) {
        op->matmul_glu(be, l->ffn_gate, l->ffn_up, c->xn, c->gate, c->up, n, glu, mm);
        op->matmul(be, l->ffn_down, c->gate, c->o, n, mm);
    } else { /* an MoE layer without a shared expert */
        op->zero(be, n * E, c->o);
    }
    if (l->moe.sigmoid) {
        wk__moe_ffn_sigmoid(c, l, n, mm);
    } else if (l->moe.router) {
        op->rms_norm(be, n, E, c->o, l->moe.post_norm_1, hp->rms_eps, c->o);
        wk__moe_ffn(c, l, n, mm);
    }
    if (l->post_ffn_norm) op->rms_norm(be, n, E, c->o, l->post_ffn_norm, hp->rms_eps, c->o);
    if (hp->residual_scale != 1.0f) op->scale(be, n * E, c->o, hp->residual_scale);
    op->add(be, n * E, c->x, c->o);
    if (l->ple.gate) { /* the layer's per-layer input, gated by x */
        const int64_t P = hp->n_embd_ple;
        op->matmul(be, l->ple.gate, c->x, c->ple_g, n, mm);
        op->glu_rows(be, n, P, c->ple_g, P, c->ple + il * P, LP, WK_GLU_GELU_TANH);
        op->matmul(be, l->ple.proj, c->ple_g, c->o, n, mm);
        op->rms_norm(be, n, E, c->o, l->ple.post_norm, hp->rms_eps, c->o);
        op->add(be, n * E, c->x, c->o);
    }
    if (l->out_scale != 1.0f) op->scale(be, n * E, c->x, l->out_scale);
}

static bool run_layers(struct wk_context *c, int32_t *n_io, bool per_token, const volatile bool *cancel,
                       const struct wk_context *ext)
{
    const struct wk_model *m = c->m;
    const struct wk_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd;
    struct wk_backend *be = c->be;
    const struct wk_backend_ops *op = be->ops;
    const unsigned mm = per_token ? WK_MATMUL_PER_TOKEN : 0;
    int32_t n = *n_io;
    const int32_t ext_layer[2] = {ext ? last_cache_layer(ext->m, true) : -1,
                                  ext ? last_cache_layer(ext->m, false) : -1};
    /* RoPE tables for the chunk: [0] sliding layers, [1] global layers */
    float *cs[2] = {c->rope_cs, c->rope_cs + (size_t)c->n_ubatch * (size_t)c->head_dim_max};
    bool have_cs[2] = {false, false};
    build_blocks(c, n, per_token);

    for (int32_t il = 0; il < hp->n_layer; il++) {
        if (cancel && *cancel) return false;
        if (il == c->first_shared) {
            /* the layers from here on write no cache: only the rows whose
             * logits are wanted need them (none for a chunk without) */
            int32_t kept = keep_wanted_rows(c, n);
            if (kept == 0) {
                n = 0;
                break;
            }
            if (kept != n) {
                n = kept;
                have_cs[0] = have_cs[1] = false;
                build_blocks(c, n, per_token);
            }
        }
        const struct wk_layer *l = &m->layers[il];
        int kind = l->sliding ? 0 : 1;
        if (l->n_rot > 0 && !have_cs[kind]) { /* (a NoPE layer needs none) */
            /* LongRoPE: the long divisors for a context longer than the original one (llama.cpp's choice) */
            const struct wk_tensor *freqs = l->rope_freqs                                         ? l->rope_freqs
                                            : m->rope_freqs_long && c->n_ctx > hp->n_ctx_orig ? m->rope_freqs_long
                                                                                              : m->rope_freqs;
            op->rope_table(be, n, c->pos, c->rope_shift, l->n_rot, l->rope_base, l->rope_scale, freqs,
                           hp->rope_attn_factor, cs[kind]);
            have_cs[kind] = true;
        }
        if (l->attn_norm) op->rms_norm(be, n, E, c->x, l->attn_norm, hp->rms_eps, c->xn);
        else op->copy(be, n * E, c->xn, c->x); /* no pre-norm (OLMo 2) */
        if (l->mla.on)
            wk__mla_attention(c, l, &c->kv[il], n, cs[kind], mm, per_token);
        else
            attention_block(c, l, il, n, cs[kind], per_token, ext ? &ext->kv[ext_layer[kind]] : &c->kv[il]);
        op->matmul(be, l->wo, c->att, c->o, n, mm);
        if (l->bo) op->add_bias(be, n, E, c->o, l->bo);
        if (l->post_attn_norm) op->rms_norm(be, n, E, c->o, l->post_attn_norm, hp->rms_eps, c->o);
        if (hp->residual_scale != 1.0f) op->scale(be, n * E, c->o, hp->residual_scale);
        op->add(be, n * E, c->x, c->o);
        ffn_block(c, l, il, n, mm);
    }
    *n_io = n;
    return true;
}

/* Runs one chunk of n rows whose positions, sequences and wanted logits
 * are in c->pos, c->seq, c->want; returns false, leaving every sequence's
 * length as it was, when cancel becomes true between layers (so a long
 * prefill stops within a layer). per_token: each row as a one-token step
 * computes it (verify). logits (NULL when no row is wanted): a row
 * [n_vocab] for each wanted row, in order. */
static bool forward_chunk(struct wk_context *c, const int32_t *tokens, int32_t n, float *logits, float *hidden,
                          bool per_token, const volatile bool *cancel)
{
    const struct wk_model *m = c->m;
    const struct wk_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd;
    const unsigned mm = per_token ? WK_MATMUL_PER_TOKEN : 0;
    const int32_t n_chunk = n;

    c->be->ops->get_rows(c->be, m->tok_embd, tokens, n, hp->embed_scale, c->x);
    for (int32_t t = 0; t < n; t++) c->seq_hi[c->seq[t]] = c->pos[t]; /* positions rise within a sequence */
    if (m->ple_embd) ple_inputs(c, tokens, n, mm);
    if (cancel && *cancel) return false;
    /* positions the chunk overwrites in the rings are gone from now on,
     * even if cancel stops it half way */
    for (int32_t t = 0; c->n_ring > 0 && t < n; t++)
        c->ring_lo[c->seq[t]] = WK_MAX(c->ring_lo[c->seq[t]], c->pos[t] + 1 - c->n_ring);
    if (!run_layers(c, &n, per_token, cancel, NULL)) return false;
    for (int32_t t = 0; t < n_chunk; t++) c->n_past[c->seq[t]]++;
    if (!logits && !hidden) return true;
    /* the wanted rows, which are all the rows left after a KV-shared layer */
    int32_t rows = 0;
    for (int32_t t = 0; t < n; t++)
        if (c->want[t]) wk__norm_rows(c, 1, E, c->x + t * E, m->output_norm, hp->rms_eps, c->xn + (rows++) * E);
    c->n_hidden = rows;
    if (hidden) { /* the hidden rows alone (embeddings): no output projection */
        c->be->ops->synchronize(c->be);
        memcpy(hidden, c->xn, (size_t)rows * (size_t)E * sizeof *hidden);
        return true;
    }
    c->be->ops->matmul(c->be, m->output, c->xn, logits, rows, mm);
    if (hp->logit_scale != 1.0f) c->be->ops->scale(c->be, (int64_t)rows * hp->n_vocab, logits, hp->logit_scale);
    if (hp->final_softcap > 0) c->be->ops->softcap(c->be, (int64_t)rows * hp->n_vocab, logits, hp->final_softcap);
    c->be->ops->synchronize(c->be); /* the logits and hidden rows are read on the host from here */
    for (int32_t r = 0; r < rows; r++)
        for (int32_t i = 0; i < m->n_suppress; i++) logits[(int64_t)r * hp->n_vocab + m->suppress[i]] = -INFINITY;
    return true;
}

enum wk_status wk_context_mtp_step(struct wk_context *a, const struct wk_context *target, int32_t token,
                                   const float *cond, float *logits, float *cond_out, struct wk_error *err)
{
    const struct wk_model *am = a->m, *tm = target->m;
    const struct wk_hparams *hp = &am->hp;
    const struct wk_cpu_kernels *k = a->k;
    const int64_t E = hp->n_embd, Et = tm->hp.n_embd, V = hp->n_vocab;
    if (!am->is_mtp || am->mtp_n_embd_target != Et || tm->hp.n_vocab != V)
        return wk_error_set(err, WK_E_INVALID, "%s is not an MTP assistant of %s", wk_model_path(am),
                            wk_model_path(tm));
    if (target->n_past[0] < 1 || target->n_past[0] > a->n_ctx)
        return wk_error_set(err, WK_E_RANGE, "the target holds %d positions (the assistant takes 1..%d)",
                            target->n_past[0], a->n_ctx);
    if (token < 0 || token >= V) return wk_error_set(err, WK_E_INVALID, "token id %d is outside the vocabulary", token);
    if (target->n_ring > 0 && target->ring_lo[0] > WK_MAX(0, target->n_past[0] - 1 - hp->sliding_window))
        return wk_error_set(err, WK_E_RANGE, "the target's rotating cache no longer holds the %d positions before %d",
                            hp->sliding_window + 1, target->n_past[0]);
    /* x = pre_projection([E_target[token] · sqrt(E_t); cond]) */
    wk_cpu_get_row(k, tm->tok_embd, token, a->mtp_in);
    if (tm->hp.embed_scale != 1.0f)
        for (int64_t i = 0; i < Et; i++) a->mtp_in[i] *= tm->hp.embed_scale;
    memcpy(a->mtp_in + Et, cond, (size_t)Et * sizeof(float));
    a->be->ops->matmul(a->be, am->mtp_pre_proj, a->mtp_in, a->x, 1, 0);
    /* the query sits at the token's position, n_past, and sees the cached
     * keys up to n_past - 1, the last W + 1 of them on sliding layers
     * (transformers' bidirectional sliding-window mask, flipped, admits
     * |distance| <= W) */
    a->pos[0] = target->n_past[0] - 1;
    a->seq[0] = 0;
    a->want[0] = true;
    a->rope_shift = 1;
    a->window_extra = 1;
    int32_t n = 1;
    run_layers(a, &n, false, NULL, target);
    a->rope_shift = a->window_extra = 0;
    wk__norm_rows(a, 1, E, a->x, am->output_norm, hp->rms_eps, a->xn);
    a->be->ops->matmul(a->be, am->mtp_post_proj, a->xn, cond_out, 1, 0);
    if (!am->mtp_centroids) {
        a->be->ops->matmul(a->be, am->output, a->xn, logits, 1, 0);
        return WK_OK;
    }
    /* ordered embeddings: the tokens of the top centroids only; the rest
     * one below the smallest of those (HF Gemma4AssistantMaskedEmbedder) */
    const int32_t C = am->mtp_n_centroids, K = am->mtp_centroid_top_k, per = (int32_t)(V / C);
    a->be->ops->matmul(a->be, am->mtp_centroids, a->xn, a->mtp_centroid_logits, 1, 0);
    int32_t top[4096];
    wk__top_k(a->mtp_centroid_logits, C, WK_MIN(K, 4096), top);
    const float *ord = am->mtp_token_ordering->data;
    const enum wk_dtype dt = am->output->dtype;
    float lo = INFINITY;
    int32_t n_cand = 0;
    for (int32_t j = 0; j < K; j++)
        for (int32_t i = 0; i < per; i++) {
            int32_t id = (int32_t)ord[(int64_t)top[j] * per + i];
            float v = k->vec_dot[dt](E, wk_tensor_row(am->output, id), a->xn);
            a->mtp_cand[n_cand] = id;
            a->mtp_cand_logits[n_cand++] = v;
            lo = WK_MIN(lo, v);
        }
    for (int64_t i = 0; i < V; i++) logits[i] = lo - 1.0f;
    for (int32_t i = 0; i < n_cand; i++) logits[a->mtp_cand[i]] = a->mtp_cand_logits[i];
    return WK_OK;
}

const float *wk_context_hidden(const struct wk_context *c, int32_t row)
{
    WK_ASSERT(row >= 0 && row < c->n_hidden);
    return c->xn + (int64_t)row * c->m->hp.n_embd;
}

static enum wk_status decode(struct wk_context *c, const int32_t *tokens, int32_t n_tokens, float *logits,
                             bool all_rows, bool per_token, const volatile bool *cancel,
                             struct wk_error *err)
{
    if (n_tokens < 1) return wk_error_set(err, WK_E_INVALID, "no tokens to decode");
    if (n_tokens > c->n_ctx - c->n_past[0])
        return wk_error_set(err, WK_E_RANGE,
                            "%d tokens do not fit: %d of the context's %d positions are used",
                            n_tokens, c->n_past[0], c->n_ctx);
    for (int32_t i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= c->m->hp.n_vocab)
            return wk_error_set(err, WK_E_INVALID, "token id %d is outside the vocabulary (%d)",
                                tokens[i], c->m->hp.n_vocab);
    c->bidirectional = false;
    for (int32_t done = 0; done < n_tokens;) {
        if (cancel && *cancel) return wk_error_set(err, WK_E_CANCELLED, "cancelled");
        int32_t n = WK_MIN(c->n_ubatch, n_tokens - done);
        bool last = done + n == n_tokens;
        float *out = all_rows ? logits + (size_t)done * (size_t)c->m->hp.n_vocab : last ? logits : NULL;
        for (int32_t t = 0; t < n; t++) {
            c->pos[t] = c->n_past[0] + t;
            c->seq[t] = 0;
            c->want[t] = out && (all_rows || t == n - 1);
        }
        if (!forward_chunk(c, tokens + done, n, out, NULL, per_token, cancel))
            return wk_error_set(err, WK_E_CANCELLED, "cancelled");
        done += n;
    }
    return WK_OK;
}

/* wk_context_decode_batch, or with hidden (logits NULL) its hidden-state
 * form wk_context_decode_batch_hidden: the wanted rows' final-normed
 * hidden states [n_wanted][n_embd] instead of their logits. */
static enum wk_status decode_batch(struct wk_context *c, const struct wk_batch *b, float *logits, float *hidden,
                                   const volatile bool *cancel, struct wk_error *err)
{
    const int32_t V = c->m->hp.n_vocab;
    if (b->n_tokens < 1) return wk_error_set(err, WK_E_INVALID, "no tokens to decode");
    if (!b->tokens || !b->seq_id || !b->pos)
        return wk_error_set(err, WK_E_INVALID, "a batch needs its tokens, positions and sequence ids");
    /* each sequence's next position, as its rows come (n_past[] untouched until the chunks run) */
    int32_t next[WK_SEQ_MAX], count[WK_SEQ_MAX] = {0}, n_out = 0;
    for (int32_t s = 0; s < c->n_seq; s++) next[s] = c->n_past[s];
    for (int32_t i = 0; i < b->n_tokens; i++) {
        const int32_t s = b->seq_id[i], t = b->tokens[i];
        if (s < 0 || s >= c->n_seq)
            return wk_error_set(err, WK_E_INVALID, "row %d: sequence %d is outside 0..%d", i, s, c->n_seq - 1);
        if (t < 0 || t >= V)
            return wk_error_set(err, WK_E_INVALID, "row %d: token id %d is outside the vocabulary (%d)", i, t, V);
        if (b->pos[i] != next[s])
            return wk_error_set(err, WK_E_INVALID, "row %d: position %d, but sequence %d continues at %d", i,
                                b->pos[i], s, next[s]);
        if (next[s] >= c->n_ctx)
            return wk_error_set(err, WK_E_RANGE, "sequence %d does not fit: the context holds %d positions", s,
                                c->n_ctx);
        next[s]++;
        count[s]++;
        n_out += !b->logits || b->logits[i];
    }
    if (b->bidirectional && b->n_tokens > c->n_ubatch)
        return wk_error_set(err, WK_E_INVALID, "a bidirectional batch of %d tokens: at most n_ubatch (%d)",
                            b->n_tokens, c->n_ubatch);
    if (n_out && !logits && !hidden)
        return wk_error_set(err, WK_E_INVALID, "logits are asked for but there is nowhere to put them");
    /* one row each for every sequence: every row as a one-token step computes it */
    bool one_each = true;
    for (int32_t s = 0; s < c->n_seq; s++) one_each &= count[s] <= 1;
    one_each |= b->per_token && !b->bidirectional; /* a verification batch */
    c->bidirectional = b->bidirectional;
    for (int32_t done = 0; done < b->n_tokens;) {
        if (cancel && *cancel) return wk_error_set(err, WK_E_CANCELLED, "cancelled");
        const int32_t n = WK_MIN(c->n_ubatch, b->n_tokens - done);
        int32_t rows = 0;
        for (int32_t t = 0; t < n; t++) {
            c->pos[t] = b->pos[done + t];
            c->seq[t] = b->seq_id[done + t];
            c->want[t] = !b->logits || b->logits[done + t];
            rows += c->want[t];
        }
        bool ok = forward_chunk(c, b->tokens + done, n, rows && !hidden ? logits : NULL, rows ? hidden : NULL,
                                one_each, cancel);
        c->bidirectional = false;
        if (!ok) return wk_error_set(err, WK_E_CANCELLED, "cancelled");
        if (rows && hidden) hidden += (size_t)rows * (size_t)c->m->hp.n_embd;
        else if (rows) logits += (size_t)rows * (size_t)V;
        done += n;
        c->bidirectional = b->bidirectional;
    }
    c->bidirectional = false;
    return WK_OK;
}

enum wk_status wk_context_decode_batch(struct wk_context *c, const struct wk_batch *b, float *logits,
                                       const volatile bool *cancel, struct wk_error *err)
{
    return decode_batch(c, b, logits, NULL, cancel, err);
}

enum wk_status wk_context_decode_batch_hidden(struct wk_context *c, const struct wk_batch *b, float *hidden,
                                              const volatile bool *cancel, struct wk_error *err)
{
    if (!hidden) return wk_error_set(err, WK_E_INVALID, "no buffer for the hidden states");
    return decode_batch(c, b, NULL, hidden, cancel, err);
}

enum wk_status wk_context_decode(struct wk_context *c, const int32_t *tokens, int32_t n_tokens,
                                 float *logits, const volatile bool *cancel, struct wk_error *err)
{
    return decode(c, tokens, n_tokens, logits, false, false, cancel, err);
}

enum wk_status wk_context_decode_all(struct wk_context *c, const int32_t *tokens, int32_t n_tokens,
                                     float *logits, const volatile bool *cancel, struct wk_error *err)
{
    return decode(c, tokens, n_tokens, logits, true, false, cancel, err);
}

enum wk_status wk_context_decode_hidden(struct wk_context *c, const int32_t *tokens, int32_t n_tokens, bool all_rows,
                                        float *hidden, const volatile bool *cancel, struct wk_error *err)
{
    if (n_tokens < 1) return wk_error_set(err, WK_E_INVALID, "no tokens to decode");
    if (n_tokens > c->n_ctx - c->n_past[0])
        return wk_error_set(err, WK_E_RANGE, "%d tokens do not fit: %d of the context's %d positions are used",
                            n_tokens, c->n_past[0], c->n_ctx);
    for (int32_t i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= c->m->hp.n_vocab)
            return wk_error_set(err, WK_E_INVALID, "token id %d is outside the vocabulary (%d)", tokens[i],
                                c->m->hp.n_vocab);
    const int64_t E = c->m->hp.n_embd;
    c->bidirectional = false;
    /* the same chunks as decode, so the last row is what wk_context_decode's hidden row is */
    for (int32_t done = 0; done < n_tokens;) {
        if (cancel && *cancel) return wk_error_set(err, WK_E_CANCELLED, "cancelled");
        const int32_t n = WK_MIN(c->n_ubatch, n_tokens - done);
        const bool last = done + n == n_tokens;
        for (int32_t t = 0; t < n; t++) {
            c->pos[t] = c->n_past[0] + t;
            c->seq[t] = 0;
            c->want[t] = all_rows || (last && t == n - 1);
        }
        float *out = all_rows ? hidden + (size_t)done * (size_t)E : last ? hidden : NULL;
        if (!forward_chunk(c, tokens + done, n, NULL, out, false, cancel))
            return wk_error_set(err, WK_E_CANCELLED, "cancelled");
        done += n;
    }
    return WK_OK;
}

enum wk_status wk_context_verify(struct wk_context *c, const int32_t *tokens, int32_t n_tokens,
                                 float *logits, const volatile bool *cancel, struct wk_error *err)
{
    if (n_tokens > WK_VERIFY_MAX)
        return wk_error_set(err, WK_E_INVALID, "%d tokens to verify: at most %d", n_tokens,
                            WK_VERIFY_MAX);
    return decode(c, tokens, n_tokens, logits, true, true, cancel, err);
}
