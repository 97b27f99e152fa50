/*
 * context_mla.c - multi-head latent attention (GLM-4-MoE-Lite, DeepSeek
 * V2/V3; architectures.md §6.4) in the forward pass: the query and
 * compressed-row projections, then the backend's mla_prepare and
 * mla_attention (backend.h; the CPU's absorbed attention in
 * backend_cpu_mla.c); and the uncompressed reference path the tests use,
 * on the host.
 */
#include "context_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------- multi-head latent attention */

/* transformers' Glm4MoeLiteRMSNorm default, which its q_a and kv_a norms
 * keep (the config's rms_norm_eps is for the layer norms) */
#define MLA_LATENT_EPS 1e-6f

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
    const int64_t H = hp->n_head, R = l->n_rot, QL = hp->n_lora_q;
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
    const struct wk_mla_args a = {.blk = &l->mla, .n = n, .n_head = (int32_t)H, .n_rot = (int32_t)R, .q = c->q,
                                  .ckv = c->mla_ckv, .cs = cs, .pos = c->pos, .kc = kv->k, .n_slots = kv->n_slots,
                                  .attn_scale = hp->attn_scale, .eps = MLA_LATENT_EPS, .qabs = c->mla_qabs,
                                  .lat = c->mla_lat, .tin = c->mla_tin, .tout = c->mla_tout, .out = c->att,
                                  .per_token = per_token, .flags = mm};
    c->be->ops->mla_prepare(c->be, &a);
    if (c->mla_uncompressed) {
        mla_attention_uncompressed(c, l, kv, n);
        return;
    }
    c->be->ops->mla_attention(c->be, &a);
}

