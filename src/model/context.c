/*
 * context.c - a running sequence: KV cache, scratch, and the forward pass
 * of the decoder-only transformer families (Llama, Gemma 3; the
 * per-family differences are flags and optional tensors on struct
 * wk_model).
 *
 * Data flow of one chunk of n tokens at positions pos0 .. pos0+n-1, per
 * layer (shapes outermost first, all f32):
 *   x [n, E] -> RMSNorm -> xn -> Wq, Wk, Wv -> q [n, Hq·D], k, v [n, Hk·D]
 *   q, k: per-head RMSNorm (QK-norm), RoPE; k, v written to the cache at
 *   positions pos0..; attention of each (token, head) over cache positions
 *   lo..pos (causal; lo = pos-W+1 on sliding layers) -> att [n, Hq·D]
 *   att -> Wo -> o [n, E] -> (post-norm) -> x += o
 *   x -> RMSNorm -> Wgate, Wup -> act(gate)·up [n, F] -> Wdown -> (post-norm)
 *   -> x += ...
 * then the last row: RMSNorm -> output projection -> logits [V] (softcap).
 *
 * Verification (wk_context_verify) runs the same chunk with every token
 * computed as a one-token decode step would compute it: the one-token
 * matmul kernels (WK_MATMUL_PER_TOKEN, each weight block still read once
 * for all tokens) and attention items of one (token, head) each over that
 * token's own key range; everything else is per row anyway. So its logits
 * are bit-identical to n decode steps, which speculative decoding needs.
 *
 * KV cache. A full-attention layer keeps every position: n_slots = n_ctx,
 * position p in slot p. A sliding-window layer (window W) keeps a ring of
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
#include <string.h>

/* Queries per attention work item: a block of consecutive tokens of one
 * head, whose scores against their keys form one GEMM. */
#define ATTN_QBLOCK 32

/* One layer's KV cache (views into the context's two allocations). */
struct kv_layer {
    /* K: [n_slots][Hk·D], a row per slot. V transposed: [n_head_kv][D]
     * [n_slots], a row per dimension, so both attention products are
     * GEMMs over contiguous rows: scores = K_rows · q, out = Vᵀ_rows · p. */
    float *k, *v;
    int32_t n_slots; /* n_ctx, or the ring's S on a sliding-window layer */
};

struct wk_context {
    const struct wk_model *m;
    const struct wk_cpu_kernels *k;
    struct wk_threadpool *pool;
    bool owns_pool; /* false when wk_context_params.pool lent it */
    int32_t n_ctx, n_ubatch, n_threads;
    int32_t n_past;
    int32_t n_ring;  /* slots of the ring layers (S), 0 when there are none */
    int32_t ring_lo; /* first position every ring still holds */
    float *k_cache, *v_cache; /* every layer's K, and V, in one allocation each */
    struct kv_layer *kv;      /* [n_layer] */
    struct wk_arena arena;
    /* scratch views, [n_ubatch, ...] each */
    float *x, *xn, *q, *kx, *vx, *att, *o, *gate, *up, *scores, *pv, *rope_cs, *mm_scratch;
    int32_t *pos;
};

struct wk_context_params wk_context_params_default(void)
{
    return (struct wk_context_params){.n_ctx = 0, .n_threads = 0, .n_ubatch = 512, .pool = NULL};
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
    struct wk_context *c = wk_calloc(1, sizeof *c);
    if (!c) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    c->m = m;
    c->k = wk_cpu_kernels_get();
    c->n_ctx = n_ctx;
    c->n_ubatch = n_ub;
    c->n_threads = n_threads;
    c->pool = p->pool;
    c->owns_pool = !p->pool;
    enum wk_status st = c->owns_pool ? wk_threadpool_create(n_threads, &c->pool) : WK_OK;
    if (st) {
        wk_context_destroy(c);
        return wk_error_set(err, st, "cannot start %d threads", n_threads);
    }
    const size_t E = (size_t)hp->n_embd, D = (size_t)hp->head_dim, F = (size_t)hp->n_ff;
    const size_t HQ = (size_t)hp->n_head * D, HK = (size_t)hp->n_head_kv * D, U = (size_t)n_ub;
    /* sliding-window layers keep a ring of W + n_ubatch + WK_VERIFY_MAX slots (top of file) */
    const int32_t W = hp->sliding_window;
    size_t kv_floats = 0;
    c->kv = wk_calloc((size_t)hp->n_layer, sizeof *c->kv);
    if (!c->kv) {
        wk_context_destroy(c);
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    for (int32_t il = 0; il < hp->n_layer; il++) {
        bool ring = m->layers[il].sliding && W > 0;
        c->kv[il].n_slots = ring ? (int32_t)WK_MIN((int64_t)W + n_ub + WK_VERIFY_MAX, (int64_t)n_ctx) : n_ctx;
        if (ring) c->n_ring = c->kv[il].n_slots;
        kv_floats += (size_t)c->kv[il].n_slots * HK;
    }
    c->k_cache = wk_aligned_alloc(kv_floats * sizeof(float));
    c->v_cache = wk_aligned_alloc(kv_floats * sizeof(float));
    size_t n_in_max = WK_MAX(WK_MAX(E, HQ), F);
    size_t sizes[] = {U * E, U * E, U * HQ, U * HK, U * HK, U * HQ, U * E, U * F, U * F,
                      (size_t)n_threads * ATTN_QBLOCK * (size_t)n_ctx,
                      (size_t)n_threads * ATTN_QBLOCK * D, 2 * U * D,
                      wk_cpu_matmul_scratch_floats((int64_t)n_in_max, n_threads)};
    size_t arena_bytes = 0;
    for (size_t i = 0; i < WK_ARRAY_LEN(sizes); i++) arena_bytes += sizes[i] * sizeof(float) + 64;
    arena_bytes += U * sizeof(int32_t) + 64;
    if (!c->k_cache || !c->v_cache || wk_arena_init(&c->arena, arena_bytes)) {
        wk_context_destroy(c);
        return wk_error_set(err, WK_E_NOMEM,
                            "out of memory for a %d-token KV cache (%.1f MiB) and scratch", n_ctx,
                            2.0 * (double)kv_floats * 4 / (1 << 20));
    }
    for (size_t il = 0, off = 0; il < (size_t)hp->n_layer; il++) {
        c->kv[il].k = c->k_cache + off;
        c->kv[il].v = c->v_cache + off;
        off += (size_t)c->kv[il].n_slots * HK;
    }
    float **views[] = {&c->x, &c->xn, &c->q, &c->kx, &c->vx, &c->att, &c->o, &c->gate, &c->up,
                       &c->scores, &c->pv, &c->rope_cs, &c->mm_scratch};
    for (size_t i = 0; i < WK_ARRAY_LEN(views); i++)
        *views[i] = wk_arena_alloc(&c->arena, sizes[i] * sizeof(float));
    c->pos = wk_arena_alloc(&c->arena, U * sizeof(int32_t));
    WK_ASSERT(c->pos != NULL);
    *out = c;
    return WK_OK;
}

void wk_context_destroy(struct wk_context *c)
{
    if (!c) return;
    if (c->owns_pool) wk_threadpool_destroy(c->pool);
    wk_aligned_free(c->k_cache);
    wk_aligned_free(c->v_cache);
    wk_free(c->kv);
    wk_arena_deinit(&c->arena);
    wk_free(c);
}

int32_t wk_context_n_ctx(const struct wk_context *c) { return c->n_ctx; }
int32_t wk_context_n_threads(const struct wk_context *c) { return c->n_threads; }
struct wk_threadpool *wk_context_pool(const struct wk_context *c) { return c->pool; }
int32_t wk_context_n_past(const struct wk_context *c) { return c->n_past; }

int32_t wk_context_truncate(struct wk_context *c, int32_t n_keep)
{
    WK_ASSERT(n_keep >= 0 && n_keep <= c->n_past);
    /* the next token, at n_keep, reads positions n_keep - W + 1 .. on the
     * ring layers: they must not have been overwritten */
    int32_t need = WK_MAX(0, n_keep - c->m->hp.sliding_window + 1);
    if (c->n_ring > 0 && n_keep > 0 && need < c->ring_lo) n_keep = 0;
    if (n_keep == 0) c->ring_lo = 0;
    c->n_past = n_keep;
    return n_keep;
}

/* ------------------------------------------------------------ attention */

struct attn_task {
    struct wk_context *c;
    const struct wk_layer *l;
    int32_t il, n_tokens;
    bool per_token; /* items of one token each (verify), as decode computes them */
};

/*
 * One work item = (head h, block of up to ATTN_QBLOCK tokens). Its keys are
 * the positions lo .. p_last (lo from the block's first token's window), so
 * scores S [tokens][keys] = Q_block · K_rowsᵀ is one GEMM; entries a
 * token may not see (later positions, or outside its sliding window) are
 * set to -inf before each row's softmax; then out = P · V, computed as a
 * GEMM with the transposed V rows. Items are split across threads.
 * With per_token every block is one token, so each (token, head) gets
 * exactly the products a one-token decode step computes for it.
 */
static void attention_task(void *p, int ith, int nth)
{
    struct attn_task *a = p;
    struct wk_context *c = a->c;
    const struct wk_hparams *hp = &c->m->hp;
    const int64_t D = hp->head_dim, HQ = (int64_t)hp->n_head * D, HK = (int64_t)hp->n_head_kv * D;
    const int32_t group = hp->n_head / hp->n_head_kv, W = hp->sliding_window;
    const bool sliding = a->l->sliding && W > 0;
    const struct kv_layer *kv = &c->kv[a->il];
    const int64_t S = kv->n_slots;
    const float *kc = kv->k, *vt = kv->v;
    float *scores = c->scores + (size_t)ith * ATTN_QBLOCK * (size_t)c->n_ctx;
    float *pv = c->pv + (size_t)ith * ATTN_QBLOCK * (size_t)D;
    const int32_t qblock = a->per_token ? 1 : ATTN_QBLOCK;
    const int32_t n_blocks = (a->n_tokens + qblock - 1) / qblock;
    /* Decode (one block) and verify (blocks of one token, a few keys
     * apart): each thread takes a run of items, so heads that share a kv
     * head share its cached rows. Prefill: items dealt out in turn, since
     * a later block has more keys (causal mask) and contiguous runs would
     * give the last thread most of the work. */
    const int64_t n_items = (int64_t)n_blocks * hp->n_head;
    int64_t lo_item = ith, hi_item = n_items, step = nth;
    if (n_blocks == 1 || a->per_token)
        wk_split_range(n_items, ith, nth, &lo_item, &hi_item), step = 1;
    for (int64_t item = lo_item; item < hi_item; item += step) {
        int32_t h = (int32_t)(item % hp->n_head), blk = (int32_t)(item / hp->n_head);
        int32_t t0 = blk * qblock, nq = WK_MIN(qblock, a->n_tokens - t0);
        int32_t p_first = c->pos[t0], p_last = c->pos[t0 + nq - 1];
        int32_t lo = sliding && p_first - W + 1 > 0 ? p_first - W + 1 : 0;
        int64_t nk = p_last - lo + 1, g = h / group;
        /* the keys' slots: s0 .. s0+nk1-1, then 0 .. nk2-1 where a ring wraps */
        int64_t s0 = lo % S, nk1 = WK_MIN(nk, S - s0), nk2 = nk - nk1;
        const float *kh = kc + g * D, *vh = vt + g * D * S;
        if (nq == 1 && (item == lo_item || h % group == 0) && nk * D <= 65536) {
            /* decode: this kv head's keys and value rows are strided
             * segments the hardware prefetchers do not follow; fetch them
             * all now so the two products below find them in cache */
            for (int64_t j = 0; j < nk; j++) {
                const float *kr = kh + (j < nk1 ? s0 + j : j - nk1) * HK;
                for (int64_t i = 0; i < D; i += 16) __builtin_prefetch(kr + i);
            }
            for (int64_t i = 0; i < D; i++) {
                for (int64_t j = 0; j < nk1; j += 16) __builtin_prefetch(vh + i * S + s0 + j);
                for (int64_t j = 0; j < nk2; j += 16) __builtin_prefetch(vh + i * S + j);
            }
        }
        const float *qb = c->q + (size_t)t0 * HQ + h * D;
        wk_cpu_gemm(c->k, nk1, nq, D, kh + s0 * HK, HK, qb, HQ, scores, nk);
        if (nk2) wk_cpu_gemm(c->k, nk2, nq, D, kh, HK, qb, HQ, scores + nk1, nk);
        for (int32_t r = 0; r < nq; r++) {
            float *row = scores + r * nk;
            int32_t pos = c->pos[t0 + r];
            int64_t first = sliding && pos - W + 1 > lo ? pos - W + 1 - lo : 0, last = pos - lo;
            for (int64_t j = 0; j < first; j++) row[j] = -INFINITY;
            for (int64_t j = last + 1; j < nk; j++) row[j] = -INFINITY;
            c->k->softmax(nk, row);
        }
        float *out = c->att + (size_t)t0 * HQ + h * D;
        wk_cpu_gemm(c->k, D, nq, nk1, vh + s0, S, scores, nk, out, HQ);
        if (nk2) {
            wk_cpu_gemm(c->k, D, nq, nk2, vh, S, scores + nk1, nk, pv, D);
            for (int32_t r = 0; r < nq; r++)
                for (int64_t i = 0; i < D; i++) out[r * HQ + i] += pv[r * D + i];
        }
    }
}

/* ------------------------------------------------------------ one chunk */

static void norm_rows(const struct wk_cpu_kernels *k, int32_t n, int64_t width, const float *x,
                      const struct wk_tensor *g, float eps, float *y)
{
    for (int32_t t = 0; t < n; t++)
        k->rms_norm(width, x + t * width, g ? g->data : NULL, eps, y + t * width);
}

/* Runs one chunk; returns false, leaving the cache as it was, when cancel
 * becomes true between layers (so a long prefill stops within a layer).
 * per_token: each token as a one-token step computes it (verify). */
static bool forward_chunk(struct wk_context *c, const int32_t *tokens, int32_t n, float *logits,
                          bool all_rows, bool per_token, const volatile bool *cancel)
{
    const struct wk_model *m = c->m;
    const struct wk_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, D = hp->head_dim;
    const int64_t HQ = (int64_t)hp->n_head * D, HK = (int64_t)hp->n_head_kv * D;
    struct wk_threadpool *pool = c->pool;
    const struct wk_cpu_kernels *k = c->k;
    const unsigned mm = per_token ? WK_MATMUL_PER_TOKEN : 0;

    for (int32_t t = 0; t < n; t++) {
        c->pos[t] = c->n_past + t;
        wk_cpu_get_row(k, m->tok_embd, tokens[t], c->x + t * E);
        if (hp->embed_scale != 1.0f)
            for (int64_t i = 0; i < E; i++) c->x[t * E + i] *= hp->embed_scale;
    }
    /* RoPE tables for the chunk: [0] sliding layers, [1] global layers */
    float *cs[2] = {c->rope_cs, c->rope_cs + (size_t)c->n_ubatch * (size_t)D};
    bool have_cs[2] = {false, false};

    for (int32_t il = 0; il < hp->n_layer; il++) {
        if (cancel && *cancel) return false;
        /* positions the chunk overwrites in the rings are gone from now
         * on, even if cancel stops it half way */
        if (il == 0 && c->n_ring > 0) c->ring_lo = WK_MAX(c->ring_lo, c->n_past + n - c->n_ring);
        const struct wk_layer *l = &m->layers[il];
        int kind = l->sliding ? 0 : 1;
        if (!have_cs[kind]) {
            for (int32_t t = 0; t < n; t++)
                wk_rope_cos_sin(c->pos[t], hp->n_rot, l->rope_base, l->rope_scale,
                                m->rope_freqs ? m->rope_freqs->data : NULL, cs[kind] + t * hp->n_rot);
            have_cs[kind] = true;
        }
        norm_rows(k, n, E, c->x, l->attn_norm, hp->rms_eps, c->xn);
        const struct wk_tensor *qkv_w[3] = {l->wq, l->wk, l->wv};
        float *qkv_y[3] = {c->q, c->kx, c->vx};
        wk_cpu_matmul_many(pool, k, 3, qkv_w, qkv_y, c->xn, n, c->mm_scratch, mm);
        const struct kv_layer *kv = &c->kv[il];
        for (int32_t t = 0; t < n; t++) {
            float *qt = c->q + t * HQ, *kt = c->kx + t * HK;
            if (l->q_norm) norm_rows(k, hp->n_head, D, qt, l->q_norm, hp->rms_eps, qt);
            if (l->k_norm) norm_rows(k, hp->n_head_kv, D, kt, l->k_norm, hp->rms_eps, kt);
            wk_rope_apply(qt, hp->n_head, (int)D, hp->n_rot, cs[kind] + t * hp->n_rot, m->rope_mode);
            wk_rope_apply(kt, hp->n_head_kv, (int)D, hp->n_rot, cs[kind] + t * hp->n_rot, m->rope_mode);
            for (int64_t i = 0; i < HQ; i++) qt[i] *= hp->attn_scale;
        }
        /* position p in slot p % n_slots; V transposed: (slot, i) at i * n_slots + slot */
        for (int32_t t = 0; t < n; t++) {
            int64_t slot = (c->n_past + t) % kv->n_slots;
            memcpy(kv->k + slot * HK, c->kx + t * HK, (size_t)HK * sizeof(float));
            for (int64_t i = 0; i < HK; i++) kv->v[i * kv->n_slots + slot] = c->vx[t * HK + i];
        }
        struct attn_task at = {.c = c, .l = l, .il = il, .n_tokens = n, .per_token = per_token};
        wk_threadpool_run(pool, attention_task, &at);
        wk_cpu_matmul(pool, k, l->wo, c->att, c->o, n, c->mm_scratch, mm);
        if (l->post_attn_norm) norm_rows(k, n, E, c->o, l->post_attn_norm, hp->rms_eps, c->o);
        for (int64_t i = 0; i < n * E; i++) c->x[i] += c->o[i];

        norm_rows(k, n, E, c->x, l->ffn_norm, hp->rms_eps, c->xn);
        enum wk_glu glu = m->act == WK_ACT_GELU_TANH ? WK_GLU_GELU_TANH : WK_GLU_SILU;
        wk_cpu_matmul_glu(pool, k, l->ffn_gate, l->ffn_up, c->xn, c->gate, c->up, n,
                          c->mm_scratch, glu, mm);
        wk_cpu_matmul(pool, k, l->ffn_down, c->gate, c->o, n, c->mm_scratch, mm);
        if (l->post_ffn_norm) norm_rows(k, n, E, c->o, l->post_ffn_norm, hp->rms_eps, c->o);
        for (int64_t i = 0; i < n * E; i++) c->x[i] += c->o[i];
    }
    c->n_past += n;
    if (!logits) return true;
    /* the last row only, or every row */
    const int32_t rows = all_rows ? n : 1;
    norm_rows(k, rows, E, c->x + (int64_t)(n - rows) * E, m->output_norm, hp->rms_eps, c->xn);
    wk_cpu_matmul(pool, k, m->output, c->xn, logits, rows, c->mm_scratch, mm);
    if (hp->final_softcap > 0) {
        float cap = hp->final_softcap;
        for (int64_t i = 0; i < (int64_t)rows * hp->n_vocab; i++) logits[i] = cap * tanhf(logits[i] / cap);
    }
    return true;
}

static enum wk_status decode(struct wk_context *c, const int32_t *tokens, int32_t n_tokens, float *logits,
                             bool all_rows, bool per_token, const volatile bool *cancel,
                             struct wk_error *err)
{
    if (n_tokens < 1) return wk_error_set(err, WK_E_INVALID, "no tokens to decode");
    if (n_tokens > c->n_ctx - c->n_past)
        return wk_error_set(err, WK_E_RANGE,
                            "%d tokens do not fit: %d of the context's %d positions are used",
                            n_tokens, c->n_past, c->n_ctx);
    for (int32_t i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= c->m->hp.n_vocab)
            return wk_error_set(err, WK_E_INVALID, "token id %d is outside the vocabulary (%d)",
                                tokens[i], c->m->hp.n_vocab);
    for (int32_t done = 0; done < n_tokens;) {
        if (cancel && *cancel) return wk_error_set(err, WK_E_CANCELLED, "cancelled");
        int32_t n = WK_MIN(c->n_ubatch, n_tokens - done);
        bool last = done + n == n_tokens;
        float *out = all_rows ? logits + (size_t)done * (size_t)c->m->hp.n_vocab : last ? logits : NULL;
        if (!forward_chunk(c, tokens + done, n, out, all_rows, per_token, cancel))
            return wk_error_set(err, WK_E_CANCELLED, "cancelled");
        done += n;
    }
    return WK_OK;
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

enum wk_status wk_context_verify(struct wk_context *c, const int32_t *tokens, int32_t n_tokens,
                                 float *logits, const volatile bool *cancel, struct wk_error *err)
{
    if (n_tokens > WK_VERIFY_MAX)
        return wk_error_set(err, WK_E_INVALID, "%d tokens to verify: at most %d", n_tokens,
                            WK_VERIFY_MAX);
    return decode(c, tokens, n_tokens, logits, true, true, cancel, err);
}
