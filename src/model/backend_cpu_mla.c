/*
 * backend_cpu_mla.c - the CPU backend's multi-head latent attention
 * (backend.h: mla_prepare, mla_attention; GLM-4-MoE-Lite, DeepSeek V2/V3,
 * architectures.md §6.4): absorbed queries against the compressed cache
 * rows, the output expanded per head from the latent.
 */
#include "backend.h"
#include "model_internal.h"

#include <math.h>
#include <string.h>

static struct wk_backend_cpu *cpu(struct wk_backend *b) { return (struct wk_backend_cpu *)b; }

void wk__cpu_mla_prepare(struct wk_backend *b, const struct wk_mla_args *a)
{
    const struct wk_mla_block *m = a->blk;
    const int64_t H = a->n_head, L = m->kv_lora, R = a->n_rot, NOPE = m->nope, DQ = NOPE + R, KR = L + R;
    for (int32_t t = 0; t < a->n; t++) {
        float *ckv = a->ckv + t * KR, *qt = a->q + t * H * DQ;
        const float *cst = a->cs + t * R;
        cpu(b)->k->rms_norm(L, ckv, m->kv_a_norm->data, a->eps, ckv);
        wk_rope_apply(ckv + L, 1, (int)R, (int)R, cst, WK_ROPE_NORM);
        for (int64_t h = 0; h < H; h++) wk_rope_apply(qt + h * DQ + NOPE, 1, (int)R, (int)R, cst, WK_ROPE_NORM);
        memcpy(a->kc + (int64_t)(a->pos[t] % a->n_slots) * KR, ckv, (size_t)KR * sizeof(float));
    }
}

struct mla_task {
    struct wk_backend_cpu *b;
    const struct wk_mla_args *a;
};

/*
 * Absorbed attention over the compressed cache (architectures.md §6.4
 * step 5): one work item = (head h, block of up to ATTN_QBLOCK tokens), as
 * the attention op's. All heads share one key row per position, [c ;
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
    const struct mla_task *task = p;
    const struct wk_mla_args *a = task->a;
    const struct wk_cpu_kernels *k = task->b->k;
    const int64_t H = a->n_head, L = a->blk->kv_lora, KR = L + a->n_rot;
    const float *kc = a->kc;
    float *scores = task->b->scores + (size_t)ith * ATTN_QBLOCK * (size_t)task->b->n_ctx;
    const int32_t qblock = a->per_token ? 1 : ATTN_QBLOCK;
    const int32_t n_blocks = (a->n + qblock - 1) / qblock;
    const int64_t n_items = (int64_t)n_blocks * H;
    int64_t lo_item = ith, hi_item = n_items, step = nth;
    if (n_blocks == 1 || a->per_token) wk_split_range(n_items, ith, nth, &lo_item, &hi_item), step = 1;
    for (int64_t item = lo_item; item < hi_item; item += step) {
        int32_t h = (int32_t)(item % H), blk = (int32_t)(item / H);
        int32_t t0 = blk * qblock, nq = WK_MIN(qblock, a->n - t0);
        int64_t nk = a->pos[t0 + nq - 1] + 1; /* full attention: keys 0 .. p_last */
        const float *qb = a->qabs + ((size_t)t0 * H + h) * KR;
        wk_cpu_gemm(k, nk, nq, KR, kc, KR, qb, H * KR, scores, nk);
        for (int32_t r = 0; r < nq; r++) {
            float *row = scores + r * nk;
            for (int64_t j = a->pos[t0 + r] + 1; j < nk; j++) row[j] = -INFINITY;
            k->softmax(nk, row);
        }
        float *out = a->lat + ((size_t)h * a->n + t0) * L;
        memset(out, 0, (size_t)(nq * L) * sizeof(float));
        for (int64_t j = 0; j < nk; j++) /* keys outer: each latent row once for the block */
            for (int32_t r = 0; r < nq; r++)
                if (j <= a->pos[t0 + r]) k->axpy_f32(L, scores[r * nk + j], kc + j * KR, out + r * L);
    }
}

/* y_h = x_h · W[h]ᵀ for each head h of a 3-D per-head tensor W ([n_head]
 * [rows][n_in]), x_h the n_in floats at x + t·x_stride + h·x_head of each
 * token t, y_h written at y + t·y_stride + h·y_head (gathered into and
 * scattered from contiguous rows, the matmul's layout). */
static void per_head_matmul(struct wk_backend *b, const struct wk_mla_args *a, const struct wk_tensor *w,
                            const float *x, int64_t x_stride, int64_t x_head, float *y, int64_t y_stride,
                            int64_t y_head)
{
    const int64_t n_in = w->ne[0], rows = w->ne[1];
    for (int64_t h = 0; h < w->ne[2]; h++) {
        struct wk_tensor wh = *w;
        wh.n_dims = 2;
        wh.ne[2] = 1;
        wh.data = (const uint8_t *)w->data + (size_t)h * w->nb[2];
        for (int32_t t = 0; t < a->n; t++)
            memcpy(a->tin + t * n_in, x + t * x_stride + h * x_head, (size_t)n_in * sizeof(float));
        b->ops->matmul(b, &wh, a->tin, a->tout, a->n, a->flags);
        for (int32_t t = 0; t < a->n; t++)
            memcpy(y + t * y_stride + h * y_head, a->tout + t * rows, (size_t)rows * sizeof(float));
    }
}

void wk__cpu_mla_attention(struct wk_backend *b, const struct wk_mla_args *a)
{
    const struct wk_mla_block *m = a->blk;
    const int64_t H = a->n_head, L = m->kv_lora, R = a->n_rot, NOPE = m->nope, V = m->v;
    const int64_t DQ = NOPE + R, KR = L + R;
    /* q_abs[t][h] = [k_b[h] · q_nope ; q_pe] · scale */
    per_head_matmul(b, a, m->k_b, a->q, H * DQ, DQ, a->qabs, H * KR, KR);
    for (int32_t t = 0; t < a->n; t++)
        for (int64_t h = 0; h < H; h++) {
            float *dst = a->qabs + (t * H + h) * KR;
            memcpy(dst + L, a->q + (t * H + h) * DQ + NOPE, (size_t)R * sizeof(float));
            for (int64_t i = 0; i < KR; i++) dst[i] *= a->attn_scale;
        }
    struct mla_task task = {.b = cpu(b), .a = a};
    wk_threadpool_run(cpu(b)->pool, mla_attention_task, &task);
    /* att[t][h] = v_b[h] · o_lat[h][t] (the latent rows are head-major) */
    per_head_matmul(b, a, m->v_b, a->lat, L, a->n * L, a->out, H * V, V);
}
