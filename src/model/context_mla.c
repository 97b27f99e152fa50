/*
 * context_mla.c - multi-head latent attention (GLM-4-MoE-Lite, DeepSeek
 * V2/V3; architectures.md §6.4) in the forward pass: absorbed queries
 * against the compressed cache rows, the output expanded per head from
 * the latent; and the uncompressed reference path the tests use.
 */
#include "context_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------- multi-head latent attention */

/* transformers' Glm4MoeLiteRMSNorm default, which its q_a and kv_a norms
 * keep (the config's rms_norm_eps is for the layer norms) */
#define MLA_LATENT_EPS 1e-6f

struct mla_task {
    struct wk_context *c;
    const struct wk_layer *l;
    const struct kv_layer *kv;
    int32_t n_tokens;
    bool per_token;
};

/*
 * Absorbed attention over the compressed cache (architectures.md §6.4
 * step 5): one work item = (head h, block of up to ATTN_QBLOCK tokens),
 * as attention_task. All heads share one key row per position, [c ;
 * k_pe] (kv_lora + n_rot), so scores S [tokens][keys] = Q_abs · K_rowsᵀ
 * is one GEMM with the absorbed queries [W_UK_hᵀ q_nope ; q_pe]·scale;
 * masked and softmaxed per row; then the latent output o_lat = Σ_s p_s
 * c_s, kept in the latent (the value expansion follows per head): the
 * latent is the first kv_lora floats of each cached row, not a
 * transposed copy (the cache holds kv_lora + n_rot floats a position and
 * nothing else), so P·C is a sum of axpys over the keys. Each row's sum
 * runs over the keys in order whatever the block, so with per_token (one
 * token a block) a token gets exactly what its one-token step computes.
 */
static void mla_attention_task(void *p, int ith, int nth)
{
    struct mla_task *a = p;
    struct wk_context *c = a->c;
    const struct wk_hparams *hp = &c->m->hp;
    const struct wk_layer *l = a->l;
    const int64_t H = hp->n_head, L = l->mla.kv_lora, KR = L + l->n_rot;
    const float *kc = a->kv->k;
    float *scores = c->scores + (size_t)ith * ATTN_QBLOCK * (size_t)c->n_ctx;
    const int32_t qblock = a->per_token ? 1 : ATTN_QBLOCK;
    const int32_t n_blocks = (a->n_tokens + qblock - 1) / qblock;
    const int64_t n_items = (int64_t)n_blocks * H;
    int64_t lo_item = ith, hi_item = n_items, step = nth;
    if (n_blocks == 1 || a->per_token) wk_split_range(n_items, ith, nth, &lo_item, &hi_item), step = 1;
    for (int64_t item = lo_item; item < hi_item; item += step) {
        int32_t h = (int32_t)(item % H), blk = (int32_t)(item / H);
        int32_t t0 = blk * qblock, nq = WK_MIN(qblock, a->n_tokens - t0);
        int64_t nk = c->pos[t0 + nq - 1] + 1; /* full attention: keys 0 .. p_last */
        const float *qb = c->mla_qabs + ((size_t)t0 * H + h) * KR;
        wk_cpu_gemm(c->k, nk, nq, KR, kc, KR, qb, H * KR, scores, nk);
        for (int32_t r = 0; r < nq; r++) {
            float *row = scores + r * nk;
            for (int64_t j = c->pos[t0 + r] + 1; j < nk; j++) row[j] = -INFINITY;
            c->k->softmax(nk, row);
        }
        float *out = c->mla_lat + ((size_t)h * a->n_tokens + t0) * L;
        memset(out, 0, (size_t)(nq * L) * sizeof(float));
        for (int64_t j = 0; j < nk; j++) /* keys outer: each latent row once for the block */
            for (int32_t r = 0; r < nq; r++)
                if (j <= c->pos[t0 + r]) c->k->axpy_f32(L, scores[r * nk + j], kc + j * KR, out + r * L);
    }
}

/* y_h = x_h · W[h]ᵀ for each head h of a 3-D per-head tensor W ([n_head]
 * [rows][n_in]), x_h the n_in floats at x + t·x_stride + h·x_head of each
 * token t, y_h written at y + t·y_stride + h·y_head (gathered into and
 * scattered from contiguous rows, the matmul's layout). */
static void per_head_matmul(struct wk_context *c, const struct wk_tensor *w, const float *x, int64_t x_stride,
                            int64_t x_head, float *y, int64_t y_stride, int64_t y_head, int32_t n, unsigned mm)
{
    const int64_t n_in = w->ne[0], rows = w->ne[1];
    for (int64_t h = 0; h < w->ne[2]; h++) {
        struct wk_tensor wh = *w;
        wh.n_dims = 2;
        wh.ne[2] = 1;
        wh.data = (const uint8_t *)w->data + (size_t)h * w->nb[2];
        for (int32_t t = 0; t < n; t++)
            memcpy(c->mla_tin + t * n_in, x + t * x_stride + h * x_head, (size_t)n_in * sizeof(float));
        c->be->ops->matmul(c->be, &wh, c->mla_tin, c->mla_tout, n, mm);
        for (int32_t t = 0; t < n; t++)
            memcpy(y + t * y_stride + h * y_head, c->mla_tout + t * rows, (size_t)rows * sizeof(float));
    }
}

/*
 * The reference path (wk_context_params.mla_uncompressed): the cache rows
 * of the chunk expanded to per-head K = [W_UK_h c ; k_pe] and V = W_UV_h c
 * as they are written, then plain multi-head attention over those, in
 * double precision, on the calling thread; att [n][n_head·v]. Slow, for
 * tests: what the absorbed path must equal.
 */
static void mla_attention_uncompressed(struct wk_context *c, const struct wk_layer *l, const struct kv_layer *kv,
                                       int32_t n)
{
    const struct wk_hparams *hp = &c->m->hp;
    const int64_t H = hp->n_head, L = l->mla.kv_lora, R = l->n_rot, NOPE = l->mla.nope, V = l->mla.v;
    const int64_t DQ = NOPE + R, KR = L + R;
    float *row = c->mla_tout; /* one dequantized row of k_b or v_b: L floats */
    for (int32_t t = 0; t < n; t++) {
        const int64_t slot = c->pos[t];
        const float *ckv = c->mla_ckv + t * KR;
        float *kf = kv->k_full + slot * H * DQ, *vf = kv->v_full + slot * H * V;
        for (int64_t h = 0; h < H; h++) {
            struct wk_tensor kb = *l->mla.k_b, vb = *l->mla.v_b;
            kb.ne[2] = vb.ne[2] = 1;
            kb.data = (const uint8_t *)l->mla.k_b->data + (size_t)h * l->mla.k_b->nb[2];
            vb.data = (const uint8_t *)l->mla.v_b->data + (size_t)h * l->mla.v_b->nb[2];
            double kn[4096] = {0};
            for (int64_t j = 0; j < L; j++) { /* k_b[h] row j is column j of W_UK_h */
                wk_cpu_get_row(c->k, &kb, j, row);
                for (int64_t i = 0; i < NOPE && i < 4096; i++) kn[i] += (double)row[i] * ckv[j];
            }
            for (int64_t i = 0; i < NOPE; i++) kf[h * DQ + i] = (float)kn[i];
            memcpy(kf + h * DQ + NOPE, ckv + L, (size_t)R * sizeof(float));
            for (int64_t i = 0; i < V; i++) {
                wk_cpu_get_row(c->k, &vb, i, row);
                double d = 0;
                for (int64_t j = 0; j < L; j++) d += (double)row[j] * ckv[j];
                vf[h * V + i] = (float)d;
            }
        }
    }
    const double scale = hp->attn_scale;
    double *p = malloc((size_t)(c->pos[n - 1] + 1) * sizeof *p); /* a test path: no arena */
    WK_ASSERT(p != NULL);
    for (int32_t t = 0; t < n; t++)
        for (int64_t h = 0; h < H; h++) {
            const float *q = c->q + (t * H + h) * DQ;
            const int64_t nk = c->pos[t] + 1;
            double mx = -INFINITY, sum = 0;
            for (int64_t s = 0; s < nk; s++) {
                const float *k = kv->k_full + (s * H + h) * DQ;
                double d = 0;
                for (int64_t i = 0; i < DQ; i++) d += (double)q[i] * k[i];
                p[s] = d * scale;
                mx = fmax(mx, p[s]);
            }
            for (int64_t s = 0; s < nk; s++) sum += p[s] = exp(p[s] - mx);
            for (int64_t i = 0; i < V; i++) {
                double o = 0;
                for (int64_t s = 0; s < nk; s++) o += p[s] * kv->v_full[(s * H + h) * V + i];
                c->att[(t * H + h) * V + i] = (float)(o / sum);
            }
        }
    free(p);
}

/*
 * A multi-head latent attention layer's attention for the chunk's n rows
 * of xn (architectures.md §6.4 steps 2-6): q = q_b(RMSNorm(q_a(xn))) (or
 * wq·xn), [n][n_head][nope + n_rot]; the cache row [RMSNorm(c) ; k_pe]
 * from kv_a, RoPE (NORM pairs) on k_pe and each head's q_pe; written at
 * the positions; the absorbed queries q_abs = [W_UK_hᵀ q_nope ; q_pe] ·
 * scale; attention over the compressed rows into the latent; each head's
 * value expansion W_UV_h · o_lat into att [n][n_head·v]. cs: the chunk's
 * RoPE table (n_rot floats a token).
 */
void wk__mla_attention(struct wk_context *c, const struct wk_layer *l, const struct kv_layer *kv, int32_t n,
                          const float *cs, unsigned mm, bool per_token)
{
    const struct wk_model *m = c->m;
    const struct wk_hparams *hp = &m->hp;
    const struct wk_cpu_kernels *k = c->k;
    const int64_t H = hp->n_head, L = l->mla.kv_lora, R = l->n_rot, NOPE = l->mla.nope, V = l->mla.v;
    const int64_t DQ = NOPE + R, KR = L + R, QL = hp->n_lora_q;
    if (l->mla.q_a) {
        const struct wk_tensor *w[2] = {l->mla.q_a, l->mla.kv_a};
        float *y[2] = {c->mla_qa, c->mla_ckv};
        c->be->ops->matmul_many(c->be, 2, w, y, c->xn, n, mm);
        wk__norm_rows(c, n, QL, c->mla_qa, l->mla.q_a_norm, MLA_LATENT_EPS, c->mla_qa);
        c->be->ops->matmul(c->be, l->mla.q_b, c->mla_qa, c->q, n, mm);
    } else {
        const struct wk_tensor *w[2] = {l->wq, l->mla.kv_a};
        float *y[2] = {c->q, c->mla_ckv};
        c->be->ops->matmul_many(c->be, 2, w, y, c->xn, n, mm);
    }
    for (int32_t t = 0; t < n; t++) {
        float *ckv = c->mla_ckv + t * KR, *qt = c->q + t * H * DQ;
        const float *cst = cs + t * R;
        k->rms_norm(L, ckv, l->mla.kv_a_norm->data, MLA_LATENT_EPS, ckv);
        wk_rope_apply(ckv + L, 1, (int)R, (int)R, cst, WK_ROPE_NORM);
        for (int64_t h = 0; h < H; h++) wk_rope_apply(qt + h * DQ + NOPE, 1, (int)R, (int)R, cst, WK_ROPE_NORM);
        memcpy(kv->k + (int64_t)(c->pos[t] % kv->n_slots) * KR, ckv, (size_t)KR * sizeof(float));
    }
    if (c->mla_uncompressed) {
        mla_attention_uncompressed(c, l, kv, n);
        return;
    }
    /* q_abs[t][h] = [k_b[h] · q_nope ; q_pe] · scale */
    per_head_matmul(c, l->mla.k_b, c->q, H * DQ, DQ, c->mla_qabs, H * KR, KR, n, mm);
    for (int32_t t = 0; t < n; t++)
        for (int64_t h = 0; h < H; h++) {
            float *dst = c->mla_qabs + (t * H + h) * KR;
            memcpy(dst + L, c->q + (t * H + h) * DQ + NOPE, (size_t)R * sizeof(float));
            for (int64_t i = 0; i < KR; i++) dst[i] *= hp->attn_scale;
        }
    struct mla_task at = {.c = c, .l = l, .kv = kv, .n_tokens = n, .per_token = per_token};
    wk_threadpool_run(c->pool, mla_attention_task, &at);
    /* att[t][h] = v_b[h] · o_lat[h][t] (the latent rows are head-major) */
    per_head_matmul(c, l->mla.v_b, c->mla_lat, L, n * L, c->att, H * V, V, n, mm);
}

