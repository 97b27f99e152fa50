/*
 * bert.c - the BERT encoder (Devlin et al. 2019; transformers' BertModel)
 * and its forward pass over several sequences at once, for embeddings
 * (wk_embed.h; the folder and the sentence-transformers pipeline are read
 * in embed.c).
 *
 * Per sequence of n tokens (ids t, positions 0..n-1, token type 0):
 *   x = LayerNorm(E_word[t] + E_pos[p] + E_type[0])          [n, E]
 *   per layer (post-norm):
 *     q, k, v = x·Wqᵀ + bq, x·Wkᵀ + bk, x·Wvᵀ + bv            [n, E] (H heads of D)
 *     a = softmax(q_h·k_hᵀ / √D) · v_h, every query over every key of its
 *         sequence (bidirectional; no padding, so no mask)
 *     x = LayerNorm(x + a·Woᵀ + bo)
 *     x = LayerNorm(x + GELU(x·W1ᵀ + b1)·W2ᵀ + b2)             GELU: erf form
 * The last layer's x is the token embeddings the pooling reads.
 *
 * A forward takes several sequences with their rows concatenated
 * ([T, E], T = Σ n_i): the products run once over all T rows (each weight
 * read once per forward), attention per (sequence, head) as two GEMMs.
 * Weights are views into the mapped file: the folder's model.safetensors
 * (F32), or llama.cpp's "bert" GGUF (matrices in any dtype the matmul
 * takes; its small position and type tables dequantized once when not
 * F32). Where the kernel table takes weights packed ahead, F32 layer
 * matrices are also copied once (pack_layers, before the first forward):
 * where the table has gemm_q14 (AVX-512 VNNI, AVX2; not WICK_EXACT=1)
 * into the Q14 packing, the products then in 14-bit integers (wk_cpu.h:
 * each row of weights and each block of 32 of x rounded to 14 bits,
 * summed exactly; on a Zen 4 the batch's forward 1.6x faster with
 * AVX-512, 1.27x with AVX2, sentence-transformers' embeddings within
 * cosine 0.9999993 on the golden set); else into the f32 GEMM's panels,
 * the same bits as packing them on every product. GELU's erf is Abramowitz &
 * Stegun 7.1.26.
 */
#include "bert_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ loading */

/* From a GGUF: tensor gname (llama.cpp's name for name) of shape [d0, d1]
 * (outermost first; d1 0: a vector [d0]); vectors must be F32 (the row
 * passes read them as floats), matrices any dtype the matmul takes. */
static enum wk_status find_gguf(struct wk_bert *b, const char *gname, int64_t d0, int64_t d1,
                                struct wk_tensor *out, struct wk_error *err)
{
    const struct wk_gguf_tensor *gt = wk_gguf_find_tensor(b->gguf, gname);
    if (!gt) return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s is missing", b->path, gname);
    const struct wk_tensor *t = &gt->t;
    bool ok = d1 == 0 ? t->ne[0] == d0 && wk_tensor_n_elements(t) == d0
                      : t->ne[0] == d1 && t->ne[1] == d0 && wk_tensor_n_elements(t) == d0 * d1;
    if (!ok)
        return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s has ne [%lld, %lld], expected [%lld, %lld]", b->path,
                            gname, (long long)t->ne[0], (long long)t->ne[1], (long long)(d1 ? d1 : d0),
                            (long long)(d1 ? d0 : 1));
    if (d1 == 0 && t->dtype != WK_DTYPE_F32)
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: tensor %s is %s; wick reads BERT norms and biases in F32",
                            b->path, gname, wk_dtype_traits_get(t->dtype)->name);
    if (d1 && d1 % wk_dtype_traits_get(t->dtype)->block_size)
        return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s: rows of %lld are not whole %s blocks", b->path, gname,
                            (long long)d1, wk_dtype_traits_get(t->dtype)->name);
    *out = *t;
    return WK_OK;
}

/* llama.cpp's GGUF names for the Hugging Face ones (its BERT tensor map). */
static const char *gguf_name(const char *hf, char *buf, size_t cap)
{
    static const char *const map[][2] = {
        {"embeddings.word_embeddings.weight", "token_embd.weight"},
        {"embeddings.position_embeddings.weight", "position_embd.weight"},
        {"embeddings.token_type_embeddings.weight", "token_types.weight"},
        {"embeddings.LayerNorm.weight", "token_embd_norm.weight"},
        {"embeddings.LayerNorm.bias", "token_embd_norm.bias"},
        {"attention.self.query.", "attn_q."}, {"attention.self.key.", "attn_k."},
        {"attention.self.value.", "attn_v."}, {"attention.output.dense.", "attn_output."},
        {"attention.output.LayerNorm.", "attn_output_norm."}, {"intermediate.dense.", "ffn_up."},
        {"output.dense.", "ffn_down."}, {"output.LayerNorm.", "layer_output_norm."}};
    int il = -1, used = 0;
    if (sscanf(hf, "encoder.layer.%d.%n", &il, &used) == 1 && used > 0) {
        const char *rest = hf + used;
        for (size_t i = 5; i < WK_ARRAY_LEN(map); i++) {
            size_t n = strlen(map[i][0]);
            if (strncmp(rest, map[i][0], n) == 0) {
                snprintf(buf, cap, "blk.%d.%s%s", il, map[i][1], rest + n);
                return buf;
            }
        }
    }
    for (size_t i = 0; i < 5; i++)
        if (strcmp(hf, map[i][0]) == 0) return map[i][1];
    return hf;
}

static enum wk_status find(struct wk_bert *b, const char *name, int64_t d0, int64_t d1,
                           struct wk_tensor *out, struct wk_error *err)
{
    if (b->gguf) {
        char buf[160];
        return find_gguf(b, gguf_name(name, buf, sizeof buf), d0, d1, out, err);
    }
    char full[160];
    snprintf(full, sizeof full, "%s%s", b->prefix, name);
    const struct wk_st_tensor *t = wk_safetensors_find(b->st, full);
    if (!t) return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s is missing", b->path, full);
    if (t->dtype != WK_ST_F32)
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: tensor %s is %s; wick reads BERT weights in F32",
                            b->path, full, wk_st_dtype_name(t->dtype));
    bool ok = d1 == 0 ? t->n_dims == 1 && t->shape[0] == d0
                      : t->n_dims == 2 && t->shape[0] == d0 && t->shape[1] == d1;
    if (!ok)
        return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s has shape [%lld%s%lld], expected [%lld, %lld]",
                            b->path, full, (long long)t->shape[0], t->n_dims > 1 ? ", " : "",
                            (long long)(t->n_dims > 1 ? t->shape[1] : 0), (long long)d0, (long long)d1);
    if ((uintptr_t)t->data % sizeof(float))
        return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s is not 4-byte aligned in the file", b->path, full);
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype = WK_DTYPE_F32;
    out->data = t->data;
    out->n_dims = d1 == 0 ? 1 : 2;
    out->ne[0] = d1 == 0 ? d0 : d1; /* GGUF order: ne[0] is the row length */
    out->ne[1] = d1 == 0 ? 1 : d0;
    out->ne[2] = out->ne[3] = 1;
    out->nb[0] = sizeof(float);
    out->nb[1] = out->nb[0] * (size_t)out->ne[0];
    out->nb[2] = out->nb[3] = out->nb[1] * (size_t)out->ne[1];
    return WK_OK;
}

static enum wk_status load_layer(struct wk_bert *b, int il, struct wk_error *err)
{
    struct wk_bert_layer *l = &b->layers[il];
    const int64_t E = b->n_embd, F = b->n_ff;
    static const char *const names[] = {
        "attention.self.query.weight",  "attention.self.query.bias",      "attention.self.key.weight",
        "attention.self.key.bias",      "attention.self.value.weight",    "attention.self.value.bias",
        "attention.output.dense.weight", "attention.output.dense.bias",   "attention.output.LayerNorm.weight",
        "attention.output.LayerNorm.bias", "intermediate.dense.weight",  "intermediate.dense.bias",
        "output.dense.weight",          "output.dense.bias",              "output.LayerNorm.weight",
        "output.LayerNorm.bias"};
    struct wk_tensor *dst[] = {&l->wq, &l->bq, &l->wk, &l->bk, &l->wv, &l->bv, &l->wo, &l->bo,
                               &l->ln1_g, &l->ln1_b, &l->w1, &l->b1, &l->w2, &l->b2, &l->ln2_g, &l->ln2_b};
    const int64_t shape[][2] = {{E, E}, {E, 0}, {E, E}, {E, 0}, {E, E}, {E, 0}, {E, E}, {E, 0},
                                {E, 0}, {E, 0}, {F, E}, {F, 0}, {E, F}, {E, 0}, {E, 0}, {E, 0}};
    for (size_t i = 0; i < WK_ARRAY_LEN(names); i++) {
        char name[128];
        snprintf(name, sizeof name, "encoder.layer.%d.%s", il, names[i]);
        enum wk_status st = find(b, name, shape[i][0], shape[i][1], dst[i], err);
        if (st) return st;
    }
    return WK_OK;
}

enum wk_status wk__bert_load_weights(struct wk_bert *b, struct wk_error *err)
{
    enum wk_status st = b->gguf ? WK_OK : wk_safetensors_open(b->path, &b->st, err);
    if (st) return st;
    b->prefix = b->st && wk_safetensors_find(b->st, "bert.embeddings.word_embeddings.weight") ? "bert." : "";
    if ((st = find(b, "embeddings.word_embeddings.weight", b->n_vocab, b->n_embd, &b->tok_embd, err)) ||
        (st = find(b, "embeddings.position_embeddings.weight", b->n_pos, b->n_embd, &b->pos_embd, err)) ||
        (st = find(b, "embeddings.token_type_embeddings.weight", b->n_type, b->n_embd, &b->type_embd, err)) ||
        (st = find(b, "embeddings.LayerNorm.weight", b->n_embd, 0, &b->emb_ln_g, err)) ||
        (st = find(b, "embeddings.LayerNorm.bias", b->n_embd, 0, &b->emb_ln_b, err)))
        return st;
    /* a quantized embedding table's rows are dequantized as they are read;
     * the small position and type tables once, here */
    const struct wk_tensor *small[2] = {&b->pos_embd, &b->type_embd};
    float **dst[2] = {&b->pos_f32, &b->type_f32};
    for (int i = 0; i < 2; i++) {
        if (small[i]->dtype == WK_DTYPE_F32) continue;
        *dst[i] = wk_malloc((size_t)small[i]->ne[1] * (size_t)b->n_embd * sizeof(float));
        if (!*dst[i]) return wk_error_set(err, WK_E_NOMEM, "out of memory");
        for (int64_t r = 0; r < small[i]->ne[1]; r++) wk_cpu_get_row(b->kernels, small[i], r, *dst[i] + r * b->n_embd);
    }
    b->layers = wk_calloc((size_t)b->n_layer, sizeof *b->layers);
    if (!b->layers) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    for (int il = 0; il < b->n_layer; il++)
        if ((st = load_layer(b, il, err))) return st;
    return WK_OK;
}

void wk__bert_deinit(struct wk_bert *b)
{
    wk_huge_free(b->packed_region, b->packed_bytes);
    wk_free(b->layers);
    wk_free(b->pos_f32);
    wk_free(b->type_f32);
    wk_safetensors_close(b->st);
    wk_gguf_close(b->gguf);
    wk_aligned_free(b->buf);
    memset(b, 0, sizeof *b);
}

/* --------------------------------------------------------- row passes */

/* One forward's buffers and what the row passes read. */
struct fwd {
    const struct wk_bert *b;
    int64_t T;                  /* rows */
    int32_t n_seq;
    const int32_t *seq_start;   /* [n_seq + 1] first row of each sequence */
    const int32_t *const *ids;  /* [n_seq] the sequences' ids */
    float *x, *q, *k, *v, *a, *h; /* [T, E] ×5, h [T, F] */
    float *scores;              /* [nth][max_tokens * (max_tokens + head_dim)] attention scratch */
    int16_t *xq;                /* [T, Q14_LDQ] a product's input in Q14 (Q14 layers only) */
    float *sx;                  /* [T, Q14_LDS] its block scales */
    const struct wk_tensor *ln_g, *ln_b, *bias;
    float *rows;                /* the rows a pass writes */
    const float *residual;      /* added before the norm, or NULL */
    int64_t width;
    bool gelu;
};

/* y = LayerNorm(x) with gain g and bias b over n elements (mean and
 * variance in double, as the sums of 384 to 1024 f32 values want; eight
 * partial sums each, so that the compiler can vectorize them). */
/* layer_norm's eight partial sums added in a fixed pairing. */
static double sum8(const double *s)
{
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

static void layer_norm(int64_t n, float *x, const float *g, const float *b, float eps)
{
    double s[8] = {0}, s2[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int u = 0; u < 8; u++) s[u] += x[i + u];
    for (; i < n; i++) s[0] += x[i];
    const double mean = sum8(s) / (double)n;
    for (i = 0; i + 8 <= n; i += 8)
        for (int u = 0; u < 8; u++) {
            const double d = x[i + u] - mean;
            s2[u] += d * d;
        }
    for (; i < n; i++) {
        const double d = x[i] - mean;
        s2[0] += d * d;
    }
    const double var = sum8(s2) / (double)n;
    const float rstd = (float)(1.0 / sqrt(var + eps)), m = (float)mean;
    for (i = 0; i < n; i++) x[i] = (x[i] - m) * rstd * g[i] + b[i];
}

/* rows[r] (+= bias) (+= residual[r]) (GELU) (LayerNorm), per thread's rows. */
static void row_pass(void *ctx, int ith, int nth)
{
    const struct fwd *f = ctx;
    int64_t lo, hi;
    wk_split_range(f->T, ith, nth, &lo, &hi);
    const int64_t W = f->width;
    const float *bias = f->bias ? f->bias->data : NULL;
    for (int64_t r = lo; r < hi; r++) {
        float *y = f->rows + r * W;
        const float *gelu_bias = f->gelu && !f->residual ? bias : NULL; /* added by the GELU op */
        if (bias && !gelu_bias)
            for (int64_t i = 0; i < W; i++) y[i] += bias[i];
        if (f->residual) { /* a local: with -fno-strict-aliasing the stores to y reloaded f->residual */
            const float *res = f->residual + r * W;
            for (int64_t i = 0; i < W; i++) y[i] += res[i];
        }
        if (f->gelu) f->b->kernels->gelu_erf(W, y, gelu_bias);
        if (f->ln_g) layer_norm(W, y, f->ln_g->data, f->ln_b->data, f->b->ln_eps);
    }
}

static void run_rows(struct wk_threadpool *pool, struct fwd *f, float *rows, int64_t width,
                     const struct wk_tensor *bias, const float *residual, bool gelu,
                     const struct wk_tensor *ln_g, const struct wk_tensor *ln_b)
{
    f->rows = rows, f->width = width, f->bias = bias, f->residual = residual, f->gelu = gelu;
    f->ln_g = ln_g, f->ln_b = ln_b;
    wk_threadpool_run(pool, row_pass, f);
}

/* The embeddings: x[r] = E_word[id] + E_pos[p] + E_type[0], normed. */
static void embed_pass(void *ctx, int ith, int nth)
{
    const struct fwd *f = ctx;
    const struct wk_bert *b = f->b;
    const int64_t E = b->n_embd;
    const float *type0 = b->type_f32 ? b->type_f32 : b->type_embd.data;
    const bool f32 = b->tok_embd.dtype == WK_DTYPE_F32;
    for (int32_t s = 0; s < f->n_seq; s++) {
        int64_t lo, hi, n = f->seq_start[s + 1] - f->seq_start[s];
        wk_split_range(n, ith, nth, &lo, &hi);
        for (int64_t p = lo; p < hi; p++) {
            float *y = f->x + (f->seq_start[s] + p) * E;
            if (f32) memcpy(y, wk_tensor_row(&b->tok_embd, f->ids[s][p]), (size_t)E * sizeof *y);
            else wk_cpu_get_row(b->kernels, &b->tok_embd, f->ids[s][p], y);
            const float *pe = b->pos_f32 ? b->pos_f32 + p * E : (const float *)wk_tensor_row(&b->pos_embd, p);
            for (int64_t i = 0; i < E; i++) y[i] += pe[i] + type0[i];
            layer_norm(E, y, b->emb_ln_g.data, b->emb_ln_b.data, b->ln_eps);
        }
    }
}

#ifndef ATTN_DIRECT_MAX
#define ATTN_DIRECT_MAX 64 /* longest sequence for wk_attn_f32, past it the GEMM's blocking pays */
#endif

/* Attention of one (sequence, head) of n rows: up to ATTN_DIRECT_MAX rows
 * (a sentence) by the table's attn_f32; longer, as two products on the
 * ISA's f32 GEMM: scores [n, n] = q_h · k_hᵀ (scaled, then the table's
 * softmax per row), then out_h = scores · v_h, with v_h transposed first
 * ([D, n]) into the A · Bᵀ form the GEMM takes. sc: [n * n + D * n]
 * scratch. Either way depends on this sequence alone, so its bits do not
 * depend on its batch. */
static void attend(const struct fwd *f, int32_t s, int h, float *sc)
{
    const struct wk_bert *b = f->b;
    const int64_t E = b->n_embd, D = b->head_dim, r0 = f->seq_start[s], n = f->seq_start[s + 1] - r0;
    const float scale = 1.0f / sqrtf((float)D);
    const int64_t L = b->max_tokens;
    if (n <= ATTN_DIRECT_MAX && D % 16 == 0 && wk_attn_f32_scratch_floats(n, D) <= L * (L + D)) {
        /* a short sequence: the table's direct loops (two GEMM calls, their
         * packing and a softmax call a row cost several times more) */
        b->kernels->attn_f32(n, D, f->q + r0 * E + h * D, f->k + r0 * E + h * D, f->v + r0 * E + h * D, E, scale,
                             f->a + r0 * E + h * D, E, sc);
        return;
    }
    float *vt = sc + n * n;
    wk_cpu_gemm(b->kernels, n, n, D, f->k + r0 * E + h * D, E, f->q + r0 * E + h * D, E, sc, n);
    for (int64_t i = 0; i < n; i++) {
        float *row = sc + i * n;
        for (int64_t j = 0; j < n; j++) row[j] *= scale;
        b->kernels->softmax(n, row);
    }
    for (int64_t j = 0; j < n; j++) {
        const float *v = f->v + (r0 + j) * E + h * D;
        for (int64_t e = 0; e < D; e++) vt[e * n + j] = v[e];
    }
    wk_cpu_gemm(b->kernels, D, n, n, vt, n, sc, n, f->a + r0 * E + h * D, E);
}

/* The attention jobs dealt round robin (the sequences come longest first,
 * so each thread gets a like share of long and short ones): whole
 * sequences, all heads in turn, while there are at least two a thread (a
 * sequence's rows of q, k and v then stay in this core's caches from one
 * head to the next); else (sequence, head) pairs, so that one long input
 * still spreads over the threads. */
static void attn_pass(void *ctx, int ith, int nth)
{
    const struct fwd *f = ctx;
    const int H = f->b->n_head;
    const size_t L = (size_t)f->b->max_tokens;
    float *sc = f->scores + (size_t)ith * (L * L + (size_t)f->b->head_dim * L);
    if (f->n_seq >= 2 * nth) {
        for (int32_t s = ith; s < f->n_seq; s += nth)
            for (int h = 0; h < H; h++) attend(f, s, h, sc);
        return;
    }
    const int64_t n_jobs = (int64_t)f->n_seq * H;
    for (int64_t j = ith; j < n_jobs; j += nth) attend(f, (int32_t)(j / H), (int)(j % H), sc);
}

/* The layers' matrices in the ISA's GEMM panels, once, before the first
 * forward (not at load: /api/show loads a model for its details): for few
 * rows (one sentence) re-packing them on every product cost more than the
 * product. Only where the ISA packs ahead and every matrix is F32. */
static const struct wk_tensor *layer_matrix(const struct wk_bert_layer *l, int i)
{
    const struct wk_tensor *ws[6] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w1, &l->w2};
    return ws[i];
}

static void pack_pass(void *ctx, int ith, int nth)
{
    const struct wk_bert *b = ctx;
    for (int j = ith; j < 6 * b->n_layer; j += nth) {
        struct wk_bert_layer *l = &b->layers[j / 6];
        const struct wk_tensor *w = layer_matrix(l, j % 6);
        if (l->q14w[j % 6]) /* the region's place for it, set by pack_layers */
            wk_q14_pack(w->ne[1], w->ne[0], w->data, (int64_t)(w->nb[1] / sizeof(float)), l->q14w[j % 6],
                        &l->q14w[j % 6], &l->q14s[j % 6]);
        else
            b->kernels->gemm_f32_pack(w->ne[1], w->ne[0], w->data, (int64_t)(w->nb[1] / sizeof(float)),
                                      l->packed[j % 6]);
    }
}

/* Bytes of matrix w's packing, 64-byte aligned. */
static size_t packing_bytes(const struct wk_bert *b, const struct wk_tensor *w, bool q14)
{
    return q14 ? wk_q14_pack_bytes(w->ne[1], w->ne[0])
               : (b->kernels->gemm_f32_pack_floats(w->ne[1], w->ne[0]) * sizeof(float) + 63) & ~(size_t)63;
}

static enum wk_status pack_layers(struct wk_bert *b, struct wk_threadpool *pool)
{
    b->pack_tried = true;
    /* Q14 where the table has its GEMM (twice the f32 GEMM's multiply-adds
     * a cycle: a batch's forward is compute-bound) and every input width
     * is a multiple of its blocks; else the f32 panels */
    bool q14 = b->kernels->gemm_q14 != NULL, f32 = b->kernels->gemm_f32_pack != NULL;
    for (int j = 0; j < 6 * b->n_layer; j++) {
        const struct wk_tensor *w = layer_matrix(&b->layers[j / 6], j % 6);
        if (w->dtype != WK_DTYPE_F32) return WK_OK;
        if (w->ne[0] % WK_Q14_BLOCK) q14 = false;
    }
    if (!q14 && !f32) return WK_OK;
    /* one region for them all, on 2 MiB pages: a sentence's forward streams
     * every matrix, and with 4 KiB pages each 4 KiB is a TLB miss */
    size_t bytes = 0;
    for (int j = 0; j < 6 * b->n_layer; j++) bytes += packing_bytes(b, layer_matrix(&b->layers[j / 6], j % 6), q14);
    uint8_t *region = wk_huge_alloc(bytes);
    if (!region) {
        b->pack_tried = false;
        return WK_E_NOMEM;
    }
    b->packed_region = region, b->packed_bytes = bytes;
    for (int j = 0; j < 6 * b->n_layer; j++) {
        const struct wk_tensor *w = layer_matrix(&b->layers[j / 6], j % 6);
        if (q14) b->layers[j / 6].q14w[j % 6] = (int16_t *)region;
        else b->layers[j / 6].packed[j % 6] = (float *)region;
        region += packing_bytes(b, w, q14);
    }
    wk_threadpool_run(pool, pack_pass, b);
    return WK_OK;
}

/* y_i = x · W_iᵀ for n matrices of one layer, from their prepacked
 * panels: (matrix, block of WK_GEMM_PACK_ROWS rows) jobs split evenly
 * across the threads, each job all T rows of x; a thread's consecutive
 * blocks of a matrix go to the GEMM in one call. */
struct packed_job {
    const struct wk_cpu_kernels *k;
    int n;
    const struct wk_tensor *const *ws;
    float *const *packed;
    int16_t *const *q14w; /* or the Q14 packings (packed unused) */
    float *const *q14s;
    int16_t *xq;          /* x's rows in Q14 (ldq int16 a row), and their block scales (lds floats a row) */
    float *sx;
    int64_t ldq, lds;
    float *const *ys;
    const float *x;
    int64_t T;
    const struct wk_tensor *const *bias; /* [n] added to each product's rows, or NULL */
    bool gelu;                           /* then GELU (n == 1) */
};

/* The rows of x in Q14 (struct fwd's xq, sx): a row's integers Q14_LDQ
 * int16 apart and its block scales Q14_LDS floats apart, whichever
 * matrix's input it holds (E or F wide), so that the parts of a batch
 * (part_pass), each at its own rows, never write over each other. 32 more
 * than the widest input: rows of 3 KB (F = 1536) would map to the same L1
 * sets. */
#define Q14_LDQ(b) ((int64_t)WK_MAX((b)->n_embd, (b)->n_ff) + 32)
#define Q14_LDS(b) ((int64_t)WK_MAX((b)->n_embd, (b)->n_ff) / WK_Q14_BLOCK)
/* a thread's row blocks (WK_GEMM_PACK_ROWS) start at a Q14 panel */
_Static_assert(WK_GEMM_PACK_ROWS % WK_Q14_PANEL == 0, "Q14 row blocks are whole panels");

#ifndef ROWS_SPLIT_MIN
#define ROWS_SPLIT_MIN 256
#endif
#ifndef ROWS_CHUNK
#define ROWS_CHUNK 96
#endif

static void packed_pass(void *ctx, int ith, int nth)
{
    const struct packed_job *j = ctx;
    int64_t n_jobs = 0, lo, hi;
    if (j->T >= (int64_t)ROWS_SPLIT_MIN * nth) {
        /* many rows of x (a batch): each thread its share of them through
         * every matrix whole, so that each copies and reads only its rows
         * of x (split by weights, every thread read all of x, more bytes
         * than the weights here); an element's chain is the same either way */
        wk_split_range(j->T, ith, nth, &lo, &hi);
        /* in chunks of ROWS_CHUNK rows, each chunk's bias and GELU applied
         * while its products are in this core's L2 (the whole share's
         * products of an FFN were megabytes: the GELU pass read them back
         * from memory); the weights, read again for every chunk, come
         * from L2 or L3 */
        for (int64_t c0 = lo; c0 < hi; c0 += ROWS_CHUNK) {
            const int64_t c1 = WK_MIN(hi, c0 + ROWS_CHUNK), kx = j->ws[0]->ne[0];
            /* Q14: this chunk's rows of x quantized here, once for the n products */
            if (j->q14w) j->k->q14_quantize(c1 - c0, kx, j->x + c0 * kx, kx, j->xq + c0 * j->ldq, j->ldq,
                                            j->sx + c0 * j->lds, j->lds);
            for (int i = 0; i < j->n; i++) {
                const int64_t m = j->ws[i]->ne[1], kd = j->ws[i]->ne[0];
                if (j->q14w)
                    j->k->gemm_q14(m, c1 - c0, kd, j->q14w[i], j->q14s[i], j->xq + c0 * j->ldq, j->ldq,
                                   j->sx + c0 * j->lds, j->lds, j->ys[i] + c0 * m, m);
                else
                    j->k->gemm_f32_prepacked(m, c1 - c0, kd, j->packed[i], j->x + c0 * kd, kd, j->ys[i] + c0 * m,
                                             m);
                const float *bv = j->bias ? (const float *)j->bias[i]->data : NULL;
                for (int64_t t = c0; bv && t < c1; t++) {
                    float *y = j->ys[i] + t * m;
                    if (j->gelu) j->k->gelu_erf(m, y, bv);
                    else
                        for (int64_t e = 0; e < m; e++) y[e] += bv[e];
                }
            }
        }
        return;
    }
    for (int i = 0; i < j->n; i++) n_jobs += (j->ws[i]->ne[1] + WK_GEMM_PACK_ROWS - 1) / WK_GEMM_PACK_ROWS;
    wk_split_range(n_jobs, ith, nth, &lo, &hi);
    for (int i = 0, base = 0; i < j->n; i++) {
        const int64_t m = j->ws[i]->ne[1], kd = j->ws[i]->ne[0], nb = (m + WK_GEMM_PACK_ROWS - 1) / WK_GEMM_PACK_ROWS;
        /* this thread's blocks of matrix i in one call: the GEMM takes
         * several blocks at a time when T is large */
        const int64_t b0 = WK_MAX(lo - base, 0), b1 = WK_MIN(hi - base, nb);
        if (b0 < b1) {
            const int64_t r0 = b0 * WK_GEMM_PACK_ROWS, r1 = WK_MIN(b1 * WK_GEMM_PACK_ROWS, m);
            if (j->q14w) /* (x quantized by q14_pass first) */
                j->k->gemm_q14(r1 - r0, j->T, kd, j->q14w[i] + r0 * kd, j->q14s[i] + r0, j->xq, j->ldq, j->sx, j->lds,
                               j->ys[i] + r0, m);
            else j->k->gemm_f32_prepacked(r1 - r0, j->T, kd, j->packed[i] + r0 * kd, j->x, kd, j->ys[i] + r0, m);
            /* this thread's columns of every row while in cache: the same
             * element-wise arithmetic as the row pass (run_rows) */
            const float *bv = j->bias ? (const float *)j->bias[i]->data + r0 : NULL;
            for (int64_t t = 0; bv && t < j->T; t++) {
                float *y = j->ys[i] + t * m + r0;
                if (j->gelu) j->k->gelu_erf(r1 - r0, y, bv);
                else
                    for (int64_t e = 0; e < r1 - r0; e++) y[e] += bv[e];
            }
        }
        base += (int)nb;
    }
}

/* Every row of x quantized for the Q14 products, each thread its share of
 * the rows (the products split by weights then, each thread reading every
 * row). */
static void q14_pass(void *ctx, int ith, int nth)
{
    const struct packed_job *j = ctx;
    const int64_t kx = j->ws[0]->ne[0];
    int64_t lo, hi;
    wk_split_range(j->T, ith, nth, &lo, &hi);
    if (lo < hi) j->k->q14_quantize(hi - lo, kx, j->x + lo * kx, kx, j->xq + lo * j->ldq, j->ldq, j->sx + lo * j->lds, j->lds);
}

/* The products of n (<= 3) matrices of layer l (index first in packed[])
 * with x: prepacked (f32 panels or Q14, x quantized into xq and sx) where
 * the layer is, else wk_cpu_matmul_many. Prepacked,
 * each product's bias (bias[i], when bias) and then GELU (gelu) are applied
 * too, and true is returned; else the caller's row passes apply them. Either way
 * a row's bits do not depend on the batch (both are the table's packed
 * path's bits, and Q14 quantizes each row alone). A model takes one way for all its products. */
static bool products(struct wk_threadpool *pool, const struct wk_bert *b, const struct wk_bert_layer *l, int first,
                     int n, const struct wk_tensor *const *ws, float *const *ys, const float *x, int64_t T,
                     float *scratch, const struct wk_tensor *const *bias, bool gelu, int16_t *xq, float *sx)
{
    if (!l->packed[5] && !l->q14w[5]) { /* all six, or none (pack_layers) */
        wk_cpu_matmul_many(pool, b->kernels, n, (const struct wk_tensor **)ws, (float **)ys, x, T, scratch, 0);
        return false;
    }
    struct packed_job j = {.k = b->kernels, .n = n, .ws = ws, .packed = l->packed + first, .ys = ys, .x = x, .T = T,
                           .bias = bias, .gelu = gelu};
    if (l->q14w[5]) {
        j.q14w = l->q14w + first, j.q14s = l->q14s + first;
        j.xq = xq, j.sx = sx, j.ldq = Q14_LDQ(b), j.lds = Q14_LDS(b);
        /* (packed_pass's test for splitting by rows of x, which quantize their own) */
        if (T < (int64_t)ROWS_SPLIT_MIN * wk_threadpool_n_threads(pool)) wk_threadpool_run(pool, q14_pass, &j);
    }
    wk_threadpool_run(pool, packed_pass, &j);
    return true;
}

/* ------------------------------------------------------------ forward */

/* Bytes of buffers for forwards of up to T rows on nth threads. */
static size_t buf_floats(const struct wk_bert *b, int64_t T, int nth, size_t *scratch_off,
                         size_t *scores_off, size_t *q14_off)
{
    size_t n = (size_t)T * (size_t)(6 * b->n_embd + b->n_ff);
    n = (n + 15) & ~(size_t)15;
    /* x in Q14 (layers packed so; pack_layers runs first): T rows of
     * Q14_LDQ int16, then T of Q14_LDS scales */
    *q14_off = n;
    if (b->layers[0].q14w[5]) n += ((size_t)T * (size_t)Q14_LDQ(b) + 1) / 2 + (size_t)T * (size_t)Q14_LDS(b);
    n = (n + 15) & ~(size_t)15;
    *scores_off = n;
    n += (size_t)nth * ((size_t)b->max_tokens * (size_t)(b->max_tokens + b->head_dim));
    n = (n + 15) & ~(size_t)15;
    *scratch_off = n;
    return n + wk_cpu_matmul_scratch_floats(b->n_ff, nth, T);
}

/* Ensures b->buf holds forwards of T rows on nth threads. */
static enum wk_status reserve(struct wk_bert *b, int64_t T, int nth)
{
    if (T <= b->buf_rows && nth <= b->buf_threads) return WK_OK;
    size_t so, sc, sq, n = buf_floats(b, T, nth, &so, &sc, &sq);
    float *p = wk_aligned_alloc(n * sizeof *p);
    if (!p) return WK_E_NOMEM;
    wk_aligned_free(b->buf);
    b->buf = p;
    b->buf_rows = T;
    b->buf_threads = nth;
    return WK_OK;
}

/* The embeddings and the layers of the sequences of f (f->seq_start
 * absolute rows of the buffers, f->T their rows, from f->seq_start[0]) on
 * pool (NULL: this thread alone); t: the [*, E] buffer beside f->x. f->x
 * ends as the last layer's rows (the same buffer for any f: an even
 * number of swaps). */
static enum wk_status forward_rows(const struct wk_bert *b, struct wk_threadpool *pool, struct fwd *f, float *t,
                                   float *scratch, const volatile bool *cancel)
{
    const int64_t T = f->T, E = b->n_embd, F = b->n_ff, r0 = f->seq_start[0];
    int16_t *xq = f->xq + r0 * Q14_LDQ(b);
    float *sx = f->sx + r0 * Q14_LDS(b);
    wk_threadpool_run(pool, embed_pass, f);
    for (int il = 0; il < b->n_layer; il++) {
        if (cancel && *cancel) return WK_E_CANCELLED;
        const struct wk_bert_layer *l = &b->layers[il];
        const struct wk_tensor *ws[3] = {&l->wq, &l->wk, &l->wv};
        float *ys[3] = {f->q + r0 * E, f->k + r0 * E, f->v + r0 * E};
        const struct wk_tensor *bqkv[3] = {&l->bq, &l->bk, &l->bv};
        if (!products(pool, b, l, 0, 3, ws, ys, f->x + r0 * E, T, scratch, bqkv, false, xq, sx)) {
            run_rows(pool, f, ys[0], E, &l->bq, NULL, false, NULL, NULL);
            run_rows(pool, f, ys[1], E, &l->bk, NULL, false, NULL, NULL);
            run_rows(pool, f, ys[2], E, &l->bv, NULL, false, NULL, NULL);
        }
        wk_threadpool_run(pool, attn_pass, f);
        const struct wk_tensor *wo = &l->wo, *w1 = &l->w1, *w2 = &l->w2;
        float *tr = t + r0 * E, *hr = f->h + r0 * F;
        products(pool, b, l, 3, 1, &wo, &tr, f->a + r0 * E, T, scratch, NULL, false, xq, sx);
        run_rows(pool, f, tr, E, &l->bo, f->x + r0 * E, false, &l->ln1_g, &l->ln1_b);
        float *old = f->x; /* t is the new x: swap the two buffers rather than copy */
        f->x = t, t = old;
        tr = t + r0 * E;
        const struct wk_tensor *b1 = &l->b1;
        if (!products(pool, b, l, 4, 1, &w1, &hr, f->x + r0 * E, T, scratch, &b1, true, xq, sx))
            run_rows(pool, f, hr, F, &l->b1, NULL, true, NULL, NULL);
        products(pool, b, l, 5, 1, &w2, &tr, hr, T, scratch, NULL, false, xq, sx);
        run_rows(pool, f, tr, E, &l->b2, f->x + r0 * E, false, &l->ln2_g, &l->ln2_b);
        old = f->x, f->x = t, t = old;
    }
    return WK_OK;
}

/* A batch's sequences in one contiguous part a thread (bounds[ith] ..
 * bounds[ith + 1]), each part's whole forward on its thread alone. */
struct parts {
    const struct wk_bert *b;
    struct fwd f;
    float *t;
    size_t scores_floats;      /* a thread's attention scratch */
    const int32_t *bounds;     /* [nth + 1] */
    const volatile bool *cancel;
    _Atomic bool cancelled;
};

static void part_pass(void *ctx, int ith, int nth)
{
    struct parts *P = ctx;
    const int32_t s0 = P->bounds[ith], s1 = P->bounds[ith + 1];
    if (s0 >= s1) return;
    struct fwd g = P->f;
    g.n_seq = s1 - s0, g.seq_start = P->f.seq_start + s0, g.ids = P->f.ids + s0;
    g.T = g.seq_start[g.n_seq] - g.seq_start[0];
    g.scores = P->f.scores + (size_t)ith * P->scores_floats;
    if (forward_rows(P->b, NULL, &g, P->t, NULL, P->cancel)) atomic_store(&P->cancelled, true);
}

/* Splits the n_seq sequences (longest first) into nth contiguous parts of
 * like cost (a sequence of n rows: n (4 E^2 + 2 E F) multiply-adds in its
 * products, 2 n^2 E in its attention, per layer) into bounds[0..nth];
 * true when the costliest part is within a tenth of an even share (a
 * batch whose longest sequences outweigh the rest is left to the layers
 * split across the threads). */
/* Sequence s's multiply-adds a layer (split_parts below). */
static double seq_cost(const struct wk_bert *b, const int32_t *seq_start, int32_t s)
{
    const double E = b->n_embd, F = b->n_ff, n = seq_start[s + 1] - seq_start[s];
    return n * (4 * E * E + 2 * E * F) + 2 * n * n * E;
}

static bool split_parts(const struct wk_bert *b, int32_t n_seq, const int32_t *seq_start, int nth, int32_t *bounds)
{
    double total = 0;
    for (int32_t s = 0; s < n_seq; s++) total += seq_cost(b, seq_start, s);
    double acc = 0, worst = 0, part = 0;
    bounds[0] = 0;
    for (int32_t s = 0, k = 1; s < n_seq; s++) {
        const double c = seq_cost(b, seq_start, s);
        /* close part k - 1 before s when s would take it past its share by
         * more than half of s's cost */
        if (k < nth && acc + c / 2 > total * k / nth && part > 0) {
            bounds[k++] = s;
            worst = WK_MAX(worst, part);
            part = 0;
        }
        acc += c, part += c;
        if (s == n_seq - 1) {
            while (k <= nth) bounds[k++] = n_seq;
            worst = WK_MAX(worst, part);
        }
    }
    return worst <= 1.1 * total / nth;
}

#define PARTS_MAX_THREADS 64

enum wk_status wk__bert_forward(struct wk_bert *b, struct wk_threadpool *pool, int32_t n_seq,
                                const int32_t *const *ids, const int32_t *seq_start, float **hidden,
                                const volatile bool *cancel)
{
    const int64_t T = seq_start[n_seq], E = b->n_embd;
    const int nth = pool ? wk_threadpool_n_threads(pool) : 1;
    /* (packing first: the buffers hold x in Q14 only for layers packed so) */
    if ((!b->pack_tried && pack_layers(b, pool)) || reserve(b, T, nth)) return WK_E_NOMEM;
    size_t so, sc, sq;
    buf_floats(b, b->buf_rows, b->buf_threads, &so, &sc, &sq);
    struct fwd f = {.b = b, .T = T, .n_seq = n_seq, .seq_start = seq_start, .ids = ids};
    float *p = b->buf;
    f.x = p, f.q = p + T * E, f.k = p + 2 * T * E, f.v = p + 3 * T * E, f.a = p + 4 * T * E;
    float *t = p + 5 * T * E; /* [T, E]: a product before its residual */
    f.h = p + 6 * T * E;
    f.scores = p + sc;
    f.xq = (int16_t *)(p + sq);
    f.sx = p + sq + ((size_t)b->buf_rows * (size_t)Q14_LDQ(b) + 1) / 2;
    float *scratch = p + so;
    /* A batch of many rows and enough sequences: each thread its part of
     * the sequences through the whole forward, one pool run in all (split
     * layer by layer, a forward waited ~43 times for its slowest thread).
     * The packed products only (no matmul scratch a thread). Each row's
     * arithmetic is the same either way. */
    int32_t bounds[PARTS_MAX_THREADS + 1];
    if (nth > 1 && nth <= PARTS_MAX_THREADS && (b->layers[0].packed[5] || b->layers[0].q14w[5]) && n_seq >= nth &&
        T >= (int64_t)ROWS_SPLIT_MIN * nth && split_parts(b, n_seq, seq_start, nth, bounds)) {
        struct parts P = {.b = b, .f = f, .t = t, .bounds = bounds, .cancel = cancel,
                          .scores_floats = (size_t)b->max_tokens * (size_t)(b->max_tokens + b->head_dim)};
        atomic_init(&P.cancelled, false);
        wk_threadpool_run(pool, part_pass, &P);
        if (atomic_load(&P.cancelled)) return WK_E_CANCELLED;
        *hidden = f.x; /* each layer swaps the two buffers twice */
        return WK_OK;
    }
    enum wk_status st = forward_rows(b, pool, &f, t, scratch, cancel);
    *hidden = f.x;
    return st;
}
