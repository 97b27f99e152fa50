/*
 * backend_cpu.c - the CPU backend (backend.h): each operation runs on the
 * context's thread pool with the kernels of src/cpu (the ISA's table
 * chosen at start-up) and returns done.
 *
 * Attention. One work item = (head h, block of up to ATTN_QBLOCK rows of
 * one sequence). Its keys are the positions lo .. p_last (lo from the
 * block's first row's window), so scores S [rows][keys] = Q_block ·
 * K_rowsᵀ is one GEMM; entries a row may not see (later positions, or
 * outside its sliding window) are set to -inf before each row's softmax
 * (whose denominator also takes the head's sink logit, for gpt-oss);
 * then out = P · V, a GEMM with the transposed V rows. A key range lies
 * in at most two runs of slots (a ring wraps at most once), so each
 * product is one GEMM per run; the second run's P·V is computed apart and
 * added. With per_token every block is one row, so each (row, head) gets
 * exactly the products a one-token decode step computes for it.
 */
#include "backend.h"
#include "model_internal.h"

#include <math.h>
#include <string.h>

static struct wk_backend_cpu *cpu(struct wk_backend *b) { return (struct wk_backend_cpu *)b; }

static void get_rows(struct wk_backend *b, const struct wk_tensor *w, const int32_t *ids, int32_t n, float scale,
                     float *y)
{
    const int64_t E = w->ne[0];
    for (int32_t t = 0; t < n; t++) {
        wk_cpu_get_row(cpu(b)->k, w, ids[t], y + t * E);
        if (scale != 1.0f)
            for (int64_t i = 0; i < E; i++) y[t * E + i] *= scale;
    }
}

static void matmul(struct wk_backend *b, const struct wk_tensor *w, const float *x, float *y, int32_t n,
                   unsigned flags)
{
    wk_cpu_matmul(cpu(b)->pool, cpu(b)->k, w, x, y, n, cpu(b)->mm_scratch, flags);
}

static void matmul_many(struct wk_backend *b, int n_w, const struct wk_tensor *const *ws, float *const *ys,
                        const float *x, int32_t n, unsigned flags)
{
    wk_cpu_matmul_many(cpu(b)->pool, cpu(b)->k, n_w, ws, ys, x, n, cpu(b)->mm_scratch, flags);
}

static void matmul_glu(struct wk_backend *b, const struct wk_tensor *gate, const struct wk_tensor *up,
                       const float *x, float *y, float *y_up, int32_t n, enum wk_glu glu, unsigned flags)
{
    wk_cpu_matmul_glu(cpu(b)->pool, cpu(b)->k, gate, up, x, y, y_up, n, cpu(b)->mm_scratch, glu, flags);
}

/*
 * Row-wise operations over the pool for a prefill's many rows: each thread
 * takes a range of rows (of 16-float pieces for add and scale; for
 * kv_write the K rows by token and the transposed V by its rows, each
 * thread storing runs of its own rows, not every token's entry of one
 * line), and each row's arithmetic is the one-thread loop's, so the bits
 * do not change. Operations of fewer than
 * ROW_PAR_MIN elements (a decode step's) stay on the caller: a pool run
 * costs more than they do. (Serial, these were ~7% of a SmolLM2 prefill
 * at 2 threads, the other thread waiting.)
 */
#define ROW_PAR_MIN 16384

enum row_op { ROW_RMS_NORM, ROW_ADD_BIAS, ROW_ADD, ROW_SCALE, ROW_GLU, ROW_ROPE_TABLE, ROW_ROPE, ROW_KV_WRITE };

struct row_task {
    enum row_op op;
    const struct wk_cpu_kernels *k;
    int64_t n, width;  /* rows (ROW_ADD, ROW_SCALE: elements), row width */
    float *y;          /* output */
    void *kc, *vc;     /* ROW_KV_WRITE: the K and V caches, of F16 elements when f16, else F32 or Q8_0 */
    wk_f16 *ks, *vs;   /* ROW_KV_WRITE: a Q8_0 cache's scales, else NULL */
    bool f16;
    int32_t v_blk;     /* ROW_KV_WRITE: the values' blocks (wk_kv_cache) */
    const float *x, *u, *g; /* inputs (ROW_GLU: u the up rows; ROW_RMS_NORM: g the gain) */
    int64_t ldg, ldu, n_slots;
    float f, f2, f3;   /* eps; scale; base, freq_scale, attn_factor */
    enum wk_glu glu;
    int n_heads, head_dim, n_rot;
    enum wk_rope_mode mode;
    const int32_t *pos, *seq;
    int32_t shift;
};

/* ROW_KV_WRITE into a Q8_0 cache: rows lo .. hi - 1's keys, and this
 * thread's part of every row's value groups (32 entries each; backend.h,
 * struct wk_attn_args), each group quantized as ggml's q8_0
 * (wk_ref_q8_0_from_f32: d = max|x| / 127, codes x / d rounded to
 * nearest even, d kept as f16). */
static void kv_write_q8(const struct row_task *t, int64_t lo, int64_t hi, int ith, int nth)
{
    const int64_t S = t->n_slots, hk = t->width, D = t->head_dim, G = WK_KV_Q8_GROUP;
    int8_t *K = t->kc, *V = t->vc;
    struct wk_block_q8_0 b;
    for (int64_t r = lo; r < hi; r++) {
        const int64_t e = (int64_t)t->seq[r] * S * hk + t->pos[r] % S * D;
        for (int64_t g = 0; g < hk / D; g++)
            for (int64_t c = 0; c < D; c += G) {
                const int64_t ke = e + g * S * D + c;
                wk_ref_q8_0_from_f32(t->x + r * hk + g * D + c, &b, G);
                memcpy(K + ke, b.qs, G);
                t->ks[wk_kv_ks_index(ke)] = b.d;
            }
    }
    int64_t c0 = 0, c1 = hk / G; /* this thread's value groups, for every token */
    if (nth > 1) wk_split_range(hk / G, ith, nth, &c0, &c1);
    const int64_t vs = t->v_blk ? t->v_blk : S;
    for (int64_t r = 0; r < t->n; r++) {
        const int64_t slot = t->pos[r] % S, e = wk_kv_v_index(S, t->v_blk, hk, t->seq[r], 0, slot);
        for (int64_t c = c0; c < c1; c++) {
            wk_ref_q8_0_from_f32(t->u + r * hk + c * G, &b, G);
            for (int64_t j = 0; j < G; j++) V[e + (c * G + j) * vs] = b.qs[j];
            t->vs[wk_kv_vs_index(S, hk, t->seq[r], c * G, slot)] = b.d;
        }
    }
}

static void row_range(const struct row_task *t, int64_t lo, int64_t hi, int ith, int nth)
{
    const struct wk_cpu_kernels *k = t->k;
    const int64_t W = t->width;
    switch (t->op) {
    case ROW_RMS_NORM:
        for (int64_t r = lo; r < hi; r++) k->rms_norm(W, t->x + r * W, t->g, t->f, t->y + r * W);
        break;
    case ROW_ADD_BIAS:
        for (int64_t r = lo; r < hi; r++) {
            float *y = t->y + r * W; /* locals: stores through t->y could not change t, the compiler cannot know */
            const float *bias = t->g;
            for (int64_t i = 0; i < W; i++) y[i] += bias[i];
        }
        break;
    case ROW_ADD: { /* pieces of 16 floats */
        float *y = t->y;
        const float *x = t->x;
        const int64_t e = WK_MIN(hi * 16, t->n);
        for (int64_t i = lo * 16; i < e; i++) y[i] += x[i];
        break;
    }
    case ROW_SCALE: {
        float *y = t->y;
        const float f = t->f;
        const int64_t e = WK_MIN(hi * 16, t->n);
        for (int64_t i = lo * 16; i < e; i++) y[i] *= f;
        break;
    }
    case ROW_GLU:
        for (int64_t r = lo; r < hi; r++) {
            if (t->glu == WK_GLU_GELU_TANH) k->geglu(W, t->y + r * t->ldg, t->u + r * t->ldu);
            else k->swiglu(W, t->y + r * t->ldg, t->u + r * t->ldu);
        }
        break;
    case ROW_ROPE_TABLE:
        for (int64_t r = lo; r < hi; r++) {
            float *row = t->y + r * t->n_rot;
            wk_rope_cos_sin(t->pos[r] + t->shift, t->n_rot, t->f, t->f2, t->g, row);
            if (t->f3 != 1.0f)
                for (int i = 0; i < t->n_rot; i++) row[i] *= t->f3;
        }
        break;
    case ROW_ROPE:
        for (int64_t r = lo; r < hi; r++)
            wk_rope_apply(t->y + r * t->n_heads * t->head_dim, t->n_heads, t->head_dim, t->n_rot, t->x + r * t->n_rot,
                          t->mode);
        break;
    case ROW_KV_WRITE: { /* position p of sequence s: kv head g's key at s·S·hk + g·S·D + (p % S)·D; V entry i at
                          * wk_kv_v_index(.., p % S), i·vs past entry 0's (elements) */
        if (t->ks) {
            kv_write_q8(t, lo, hi, ith, nth);
            break;
        }
        const int64_t S = t->n_slots, hk = W, D = t->head_dim;
        for (int64_t r = lo; r < hi; r++) {
            const int64_t e = (int64_t)t->seq[r] * S * hk + t->pos[r] % S * D;
            for (int64_t g = 0; g < hk / D; g++) {
                const float *src = t->x + r * hk + g * D;
                if (t->f16) k->quantize[WK_DTYPE_F16](src, (wk_f16 *)t->kc + e + g * S * D, D);
                else memcpy((float *)t->kc + e + g * S * D, src, (size_t)D * sizeof(float));
            }
        }
        int64_t i0 = 0, i1 = hk; /* the V rows: this thread's of all hk, for every token */
        if (nth > 1) wk_split_range(hk, ith, nth, &i0, &i1);
        const int64_t vs = t->v_blk ? t->v_blk : S; /* from a slot's entry i to its entry i + 1 */
        for (int64_t r = 0; r < t->n; r++) {
            const int64_t e = wk_kv_v_index(S, t->v_blk, hk, t->seq[r], 0, t->pos[r] % S);
            if (t->f16) { /* a piece of the token's values converted at once, then scattered */
                wk_f16 h[64];
                for (int64_t i = i0; i < i1; i += 64) {
                    const int64_t ni = WK_MIN(64, i1 - i);
                    k->quantize[WK_DTYPE_F16](t->u + r * hk + i, h, ni);
                    for (int64_t j = 0; j < ni; j++) ((wk_f16 *)t->vc)[e + (i + j) * vs] = h[j];
                }
            } else {
                for (int64_t i = i0; i < i1; i++) ((float *)t->vc)[e + i * vs] = t->u[r * hk + i];
            }
        }
        break;
    }
    }
}

static void row_task_fn(void *p, int ith, int nth)
{
    const struct row_task *t = p;
    const int64_t units = t->op == ROW_ADD || t->op == ROW_SCALE ? (t->n + 15) / 16 : t->n;
    int64_t lo, hi;
    wk_split_range(units, ith, nth, &lo, &hi);
    row_range(t, lo, hi, ith, nth);
}

/* Runs t on the pool when it has elements enough, else on the caller. */
static void run_rows(struct wk_backend *b, struct row_task *t, int64_t elements)
{
    t->k = cpu(b)->k;
    const int64_t units = t->op == ROW_ADD || t->op == ROW_SCALE ? (t->n + 15) / 16 : t->n;
    if (elements >= ROW_PAR_MIN && units > 1 && wk_threadpool_n_threads(cpu(b)->pool) > 1)
        wk_threadpool_run(cpu(b)->pool, row_task_fn, t);
    else row_range(t, 0, units, 0, 1);
}

static void rms_norm(struct wk_backend *b, int32_t n, int64_t width, const float *x, const struct wk_tensor *g,
                     float eps, float *y)
{
    struct row_task t = {.op = ROW_RMS_NORM, .n = n, .width = width, .x = x, .g = g ? g->data : NULL, .f = eps, .y = y};
    run_rows(b, &t, n * width);
}

static void add_bias(struct wk_backend *b, int32_t n, int64_t d, float *y, const struct wk_tensor *bias)
{
    struct row_task t = {.op = ROW_ADD_BIAS, .n = n, .width = d, .y = y, .g = bias->data};
    run_rows(b, &t, n * d);
}

static void add(struct wk_backend *b, int64_t n, float *y, const float *x)
{
    struct row_task t = {.op = ROW_ADD, .n = n, .y = y, .x = x};
    run_rows(b, &t, n);
}

static void scale(struct wk_backend *b, int64_t n, float *y, float s)
{
    struct row_task t = {.op = ROW_SCALE, .n = n, .y = y, .f = s};
    run_rows(b, &t, n);
}

static void copy(struct wk_backend *b, int64_t n, float *y, const float *x)
{
    memmove(y, x, (size_t)n * sizeof(float));
}

static void zero(struct wk_backend *b, int64_t n, float *y) { memset(y, 0, (size_t)n * sizeof(float)); }

static void softcap(struct wk_backend *b, int64_t n, float *y, float cap)
{
    for (int64_t i = 0; i < n; i++) y[i] = cap * tanhf(y[i] / cap);
}

static void glu_rows(struct wk_backend *b, int32_t n, int64_t width, float *g, int64_t ldg, const float *u, int64_t ldu,
                     enum wk_glu glu)
{
    struct row_task t = {.op = ROW_GLU, .n = n, .width = width, .y = g, .ldg = ldg, .u = u, .ldu = ldu, .glu = glu};
    run_rows(b, &t, n * width);
}

static void rope_table(struct wk_backend *b, int32_t n, const int32_t *pos, int32_t shift, int n_rot, float base,
                       float freq_scale, const struct wk_tensor *freqs, float attn_factor, float *cs)
{
    struct row_task t = {.op = ROW_ROPE_TABLE, .n = n, .pos = pos, .shift = shift, .n_rot = n_rot, .f = base,
                         .f2 = freq_scale, .g = freqs ? freqs->data : NULL, .f3 = attn_factor, .y = cs};
    run_rows(b, &t, (int64_t)n * n_rot * 8); /* a cos and sin each: worth eight adds */
}

static void rope(struct wk_backend *b, int32_t n, float *x, int n_heads, int head_dim, int n_rot, const float *cs,
                 enum wk_rope_mode mode)
{
    struct row_task t = {.op = ROW_ROPE, .n = n, .y = x, .n_heads = n_heads, .head_dim = head_dim, .n_rot = n_rot,
                         .x = cs, .mode = mode};
    run_rows(b, &t, (int64_t)n * n_heads * n_rot);
}

static void kv_write(struct wk_backend *b, const struct wk_kv_cache *c, int64_t hk, int32_t head_dim, int32_t n,
                     const int32_t *pos, const int32_t *seq, const float *k, const float *v)
{
    struct row_task t = {.op = ROW_KV_WRITE, .kc = c->k, .vc = c->v, .f16 = c->type == WK_DTYPE_F16,
                         .ks = c->type == WK_DTYPE_Q8_0 ? c->ks : NULL, .vs = c->vs,
                         .v_blk = c->v_blk, .n_slots = c->n_slots, .width = hk, .head_dim = head_dim, .n = n,
                         .pos = pos, .seq = seq, .x = k, .u = v};
    run_rows(b, &t, n * hk);
}

static void kv_copy(struct wk_backend *b, const struct wk_kv_cache *c, int64_t hk, int32_t head_dim, int32_t src,
                    int32_t dst, int64_t rows)
{
    const size_t es = (size_t)wk_kv_elem_bytes(c->type);
    const int64_t S = c->n_slots, ds = (int64_t)dst * S * hk, ss = (int64_t)src * S * hk, D = head_dim;
    uint8_t *K = c->k, *V = c->v;
    for (int64_t g = 0; g < hk / D; g++) /* each kv head's first rows keys */
        memcpy(K + (ds + g * S * D) * es, K + (ss + g * S * D) * es, (size_t)(rows * D) * es);
    if (c->v_blk) /* the blocks holding slots 0 .. rows-1: one run */
        memcpy(V + ds * es, V + ss * es, (size_t)((rows + c->v_blk - 1) / c->v_blk * c->v_blk * hk) * es);
    else
        for (int64_t i = 0; i < hk; i++) memcpy(V + (ds + i * S) * es, V + (ss + i * S) * es, (size_t)rows * es);
    if (c->type != WK_DTYPE_Q8_0) return;
    for (int64_t g = 0; g < hk / D; g++) /* the scales of those keys */
        memcpy(c->ks + wk_kv_ks_index(ds + g * S * D), c->ks + wk_kv_ks_index(ss + g * S * D),
               (size_t)(rows * D / WK_KV_Q8_GROUP) * sizeof(wk_f16));
    for (int64_t i = 0; i < hk; i += WK_KV_Q8_GROUP) /* and of those values: a run a group */
        memcpy(c->vs + wk_kv_vs_index(S, hk, dst, i, 0), c->vs + wk_kv_vs_index(S, hk, src, i, 0),
               (size_t)rows * sizeof(wk_f16));
}

/* Asks for the lines a decode step's KV write will store to, for writing
 * (x86 PREFETCHW; a no-op elsewhere and on CPUs without it): the K row and
 * the Hk·D scattered entries of the transposed V. The attention of the
 * step before read those V lines, often on the other thread, so each
 * store needed the line back; issued as stores, these requests went one
 * at a time (~3 us a layer on SmolLM2, 192 lines), issued here they
 * overlap each other and the QKV product. */
static void kv_prefetch(struct wk_backend *b, const struct wk_kv_cache *c, int64_t hk, int32_t head_dim, int32_t seq,
                        int32_t pos)
{
    const int64_t S = c->n_slots, slot = pos % S, so = (int64_t)seq * S * hk, D = head_dim;
    const int64_t es = wk_kv_elem_bytes(c->type);
    const int64_t v0 = wk_kv_v_index(S, c->v_blk, hk, seq, 0, slot), vs = c->v_blk ? c->v_blk : S;
    const uint8_t *K = c->k, *V = c->v;
#if defined(__x86_64__)
    for (int64_t g = 0; g < hk / D; g++)
        for (int64_t i = 0; i < D * es; i += 64) __asm__ volatile("prefetchw %0" ::"m"(K[(so + g * S * D + slot * D) * es + i]));
    for (int64_t i = 0; i < hk; i++) __asm__ volatile("prefetchw %0" ::"m"(V[(v0 + i * vs) * es]));
#else
    (void)K, (void)V, (void)slot, (void)so, (void)hk, (void)D, (void)es, (void)v0, (void)vs;
#endif
}

/* row [n] = exp(row - m) / (Σ exp(row - m) + exp(sink - m)), m the
 * largest of row and sink: a softmax whose denominator has one more
 * logit (gpt-oss's attention sink, as transformers' eager attention and
 * ggml's soft_max with sinks compute it). -inf entries become 0, as do
 * those whose quotient would be subnormal (wk_softmax_floor). */
static void softmax_sink(const struct wk_cpu_kernels *k, int64_t n, float *row, float sink)
{
    const float rm = k->max_f32(n, row), mx = rm > sink ? rm : sink;
    double sum = exp((double)sink - mx);
    for (int64_t j = 0; j < n; j++) {
        row[j] = expf(row[j] - mx);
        sum += row[j];
    }
    const float inv = (float)(1.0 / sum), floor = wk_softmax_floor(sum);
    for (int64_t j = 0; j < n; j++) row[j] = row[j] < floor ? 0.0f : row[j] * inv;
}

struct attn_task {
    struct wk_backend_cpu *b;
    const struct wk_attn_args *a;
    /* a prefill's keys 0 .. kpack_m - 1 of its one sequence packed per kv
     * head (kpack_head floats each, gemm_f32_pack), or kpack_m = 0 */
    int32_t kpack_m;
    size_t kpack_head;
    /* and its values 0 .. kpack_m - 1, each kv head's [head_dim, kpack_m]
     * (the cache's transposed rows) packed (vpack_head floats each), where
     * the backend has vpack; else vpack_head = 0 */
    size_t vpack_head;
};

/* The keys block blk of a sees: positions *lo .. *p_last of its sequence
 * (causal: up to its last row, from its first row's window on a sliding
 * layer; bidirectional: every row up to the sequence's last position in
 * the ubatch). */
static void block_keys(const struct wk_attn_args *a, int32_t blk, int32_t *lo, int32_t *p_last)
{
    const int32_t t0 = a->blk_t0[blk];
    const int32_t p_first = a->bidirectional ? 0 : a->pos[t0];
    *p_last = a->bidirectional ? a->seq_hi[a->seq[t0]] : a->pos[t0 + a->blk_nq[blk] - 1];
    *lo = a->window > 0 && p_first - a->window + 1 > 0 ? p_first - a->window + 1 : 0;
}

/* The keys a prefill's attention can pack once per kv head (attention):
 * every block of one sequence, starting at key 0 (no window cutting
 * them), none in a wrapped ring, all within kpack_rows, and a block of
 * enough rows to use them; 0 otherwise (decode, verification, several
 * sequences). */
static int32_t kpack_keys(const struct wk_backend_cpu *b, const struct wk_attn_args *a)
{
    if (!b->kpack || a->per_token || a->n_blk < 2) return 0;
    const int32_t seq0 = a->seq[a->blk_t0[0]];
    int32_t m = 0;
    bool used = false;
    for (int32_t i = 0; i < a->n_blk; i++) {
        used |= a->blk_nq[i] >= b->k->gemm_f32_packed_min_n;
        int32_t lo, p_last;
        block_keys(a, i, &lo, &p_last);
        if (a->seq[a->blk_t0[i]] != seq0 || lo > 0) return 0;
        m = WK_MAX(m, p_last + 1);
    }
    return used && m <= b->kpack_rows && m <= a->n_slots ? m : 0;
}

/* n entries of a Q8_0 cache's key codes q (from a group's first; n a
 * whole number of groups) as floats in out: q[j] times the scale
 * d[j / 32]. Exact: an int8 code times an f16. */
static void q8_key_floats(const int8_t *q, const wk_f16 *d, int64_t n, float *out)
{
    for (int64_t c = 0; c < n; c += WK_KV_Q8_GROUP) {
        const float s = wk_f16_to_f32(d[c / WK_KV_Q8_GROUP]);
        for (int64_t j = c; j < c + WK_KV_Q8_GROUP; j++) out[j] = (float)q[j] * s;
    }
}

/* value_rows of a Q8_0 cache: each value code times its slot's scale for
 * the row's group, the scales of a group over a run of slots converted
 * once for the group's rows (a run at most 64 slots, within a block). */
static void q8_value_rows(const struct wk_cpu_kernels *k, const struct wk_attn_args *a, int32_t seq, int64_t r0,
                          int64_t nr, int64_t j0, int64_t n, float *buf)
{
    const int64_t HK = (int64_t)a->n_head_kv * a->head_dim;
    float sc[64];
    for (int64_t j = j0; j < j0 + n;) {
        int64_t run = a->v_blk ? WK_MIN(a->v_blk - j % a->v_blk, j0 + n - j) : j0 + n - j;
        run = WK_MIN(run, 64);
        for (int64_t r = 0; r < nr; r++) {
            const int64_t i = r0 + r;
            if (r == 0 || i % WK_KV_Q8_GROUP == 0)
                k->to_f32[WK_DTYPE_F16](a->vs + wk_kv_vs_index(a->n_slots, HK, seq, i, j), sc, run);
            const int8_t *q = (const int8_t *)a->v + wk_kv_v_index(a->n_slots, a->v_blk, HK, seq, i, j);
            float *o = buf + r * n + (j - j0);
            for (int64_t x = 0; x < run; x++) o[x] = (float)q[x] * sc[x];
        }
        j += run;
    }
}

/* n consecutive key entries of a layer's cache from element e (a whole
 * number of groups where Q8_0) as floats in out. */
static void key_floats(const struct wk_cpu_kernels *k, const struct wk_attn_args *a, int64_t e, int64_t n, float *out)
{
    if (a->kv_type == WK_DTYPE_Q8_0) q8_key_floats((const int8_t *)a->k + e, a->ks + wk_kv_ks_index(e), n, out);
    else k->to_f32[WK_DTYPE_F16]((const wk_f16 *)a->k + e, out, n);
}

/* Value rows r0 .. r0 + nr - 1 (of all n_head_kv·head_dim) of sequence
 * seq over slots j0 .. j0 + n - 1 (none past the layer's last) as floats
 * in buf [nr][n]: an F16 or Q8_0 cache's converted, blocked values
 * gathered. */
static void value_rows(const struct wk_cpu_kernels *k, const struct wk_attn_args *a, int32_t seq, int64_t r0,
                       int64_t nr, int64_t j0, int64_t n, float *buf)
{
    if (a->kv_type == WK_DTYPE_Q8_0) {
        q8_value_rows(k, a, seq, r0, nr, j0, n, buf);
        return;
    }
    const int64_t HK = (int64_t)a->n_head_kv * a->head_dim;
    for (int64_t r = 0; r < nr; r++)
        for (int64_t j = j0; j < j0 + n;) { /* runs within a block */
            const int64_t run = a->v_blk ? WK_MIN(a->v_blk - j % a->v_blk, j0 + n - j) : j0 + n - j;
            const int64_t e = wk_kv_v_index(a->n_slots, a->v_blk, HK, seq, r0 + r, j);
            float *o = buf + r * n + (j - j0);
            if (a->kv_type == WK_DTYPE_F16) k->to_f32[WK_DTYPE_F16]((const wk_f16 *)a->v + e, o, run);
            else memcpy(o, (const float *)a->v + e, (size_t)run * sizeof(float));
            j += run;
        }
}

/* wk_cpu_gemm over m rows of a layer's cache (r: their type, stride,
 * blocks and Q8_0 scales, rows_keys / rows_values) from element off: an
 * F32 cache's contiguous rows as they are, F16 or Q8_0 ones or blocked
 * values through gemm_rows (the same bits; for the columns of gemm_f32's
 * small path only) */
static void cache_gemm(const struct wk_cpu_kernels *k, const struct wk_cpu_rows *r, int64_t m, int64_t n, int64_t kk,
                       const void *a, int64_t off, const float *b, int64_t ldb, float *c, int64_t ldc)
{
    if (r->type != WK_DTYPE_F32 || r->blk)
        k->gemm_rows(m, n, kk, (const char *)a + off * wk_kv_elem_bytes(r->type), r, b, ldb, c, ldc);
    else
        wk_cpu_gemm(k, m, n, kk, (const float *)a + off, r->lda, b, ldb, c, ldc);
}

/* The rows of keys from a layer's key element e (a slot's first in a kv
 * head), head_dim apart, as cache_gemm reads them. */
static struct wk_cpu_rows rows_keys(const struct wk_attn_args *a, int64_t e)
{
    struct wk_cpu_rows r = {.type = a->kv_type, .lda = a->head_dim};
    if (a->kv_type == WK_DTYPE_Q8_0)
        r.s = a->ks + wk_kv_ks_index(e), r.lds = a->head_dim / WK_KV_Q8_GROUP, r.s_rsh = 0, r.s_esh = 5;
    return r;
}

/* The value rows from entry i (a multiple of WK_KV_Q8_GROUP where Q8_0)
 * of sequence seq's slot j on, as cache_gemm reads them from the cache
 * (stored: row stride vs, blocks of v_blk slots vbs apart). */
static struct wk_cpu_rows rows_values(const struct wk_attn_args *a, int32_t seq, int64_t i, int64_t j, int64_t vs,
                                      int64_t vbs)
{
    struct wk_cpu_rows r = {.type = a->kv_type, .lda = vs, .blk = a->v_blk, .bstride = vbs};
    if (a->kv_type == WK_DTYPE_Q8_0)
        r.s = a->vs + wk_kv_vs_index(a->n_slots, (int64_t)a->n_head_kv * a->head_dim, seq, i, j), r.lds = a->n_slots,
        r.s_rsh = 5, r.s_esh = 0;
    return r;
}

static void kpack_task(void *p, int ith, int nth)
{
    const struct attn_task *task = p;
    const struct wk_attn_args *a = task->a;
    const int64_t D = a->head_dim, HK = (int64_t)a->n_head_kv * D, S = a->n_slots;
    const bool cvt = a->kv_type != WK_DTYPE_F32; /* F16 or Q8_0 entries */
    float *buf = task->b->cvt ? task->b->cvt + (size_t)ith * task->b->cvt_floats : NULL;
    const int32_t seq = a->seq[a->blk_t0[0]];
    const int64_t so = (int64_t)seq * S * HK;
    /* items of one kv head's WK_GEMM_PACK_ROWS keys, each packed where the
     * whole packing puts them (gemm_f32_pack's contract) */
    const int64_t n_rb = (task->kpack_m + WK_GEMM_PACK_ROWS - 1) / WK_GEMM_PACK_ROWS;
    const int64_t n_db = (D + WK_GEMM_PACK_ROWS - 1) / WK_GEMM_PACK_ROWS; /* a kv head's blocks of value rows */
    const int64_t n_k = a->n_head_kv * n_rb, n_v = task->vpack_head ? a->n_head_kv * n_db : 0;
    for (int64_t it = ith; it < n_k + n_v; it += nth) {
        if (it < n_k) {
            const int64_t g = it / n_rb, r0 = it % n_rb * WK_GEMM_PACK_ROWS, nr = WK_MIN(WK_GEMM_PACK_ROWS, task->kpack_m - r0);
            const int64_t e = so + g * S * D + r0 * D; /* nr keys, one run */
            const float *k0 = (const float *)a->k + e;
            if (cvt) key_floats(task->b->k, a, e, nr * D, buf), k0 = buf; /* converted first */
            task->b->k->gemm_f32_pack(nr, D, k0, D, task->b->kpack + (size_t)g * task->kpack_head + r0 * D);
        } else { /* rows r0.. of kv head g's values, transposed as the cache keeps them: [D, S] */
            const int64_t g = (it - n_k) / n_db, r0 = (it - n_k) % n_db * WK_GEMM_PACK_ROWS, nr = WK_MIN(WK_GEMM_PACK_ROWS, D - r0);
            const float *v0 = (const float *)a->v + so + (g * D + r0) * S;
            int64_t ld = S;
            if (cvt || a->v_blk) /* converted or gathered first */
                value_rows(task->b->k, a, seq, g * D + r0, nr, 0, task->kpack_m, buf), v0 = buf, ld = task->kpack_m;
            task->b->k->gemm_f32_pack(nr, task->kpack_m, v0, ld,
                                      task->b->vpack + (size_t)g * task->vpack_head + r0 * task->kpack_m);
        }
    }
}

/* Decode's fetch of a kv head's cached rows before its products: keys
 * at kb (slots s0 .. s0 + nk1 - 1, then 0 .. nk2 - 1 on a wrapped ring),
 * value rows from vb (slot 0's entry of the head's first). The value rows
 * are runs of D x v_blk entries a block apart (pieces n_slots apart on a
 * ring) that the hardware prefetchers follow late or not at all, and the
 * keys a run they would start on late; asked for all at once, the two
 * products find them in cache (once for the heads that share them). */
static void prefetch_kv_head(const struct wk_attn_args *a, const uint8_t *kb, const uint8_t *vb, int64_t s0, int64_t nk1,
                             int64_t nk2)
{
    const int64_t D = a->head_dim, S = a->n_slots, nk = nk1 + nk2, vblk = a->v_blk;
    const int64_t es = wk_kv_elem_bytes(a->kv_type);
    for (int64_t j = 0; j < nk; j++) {
        const uint8_t *kr = kb + (j < nk1 ? s0 + j : j - nk1) * D * es;
        for (int64_t i = 0; i < D * es; i += 64) __builtin_prefetch(kr + i);
    }
    if (vblk) /* each block's D x vblk entries of this kv head: one run */
        for (int64_t j = 0; j < nk; j += vblk)
            for (int64_t i = 0; i < D * vblk * es; i += 64)
                __builtin_prefetch(vb + (j / vblk * a->n_head_kv * D * vblk) * es + i);
    else
        for (int64_t i = 0; i < D; i++) {
            for (int64_t j = 0; j < nk1; j += 64 / es) __builtin_prefetch(vb + (i * S + s0 + j) * es);
            for (int64_t j = 0; j < nk2; j += 64 / es) __builtin_prefetch(vb + (i * S + j) * es);
        }
}

/* The scores of ncol query columns (qb, qs apart; cw a call) against an
 * F16 or Q8_0 cache's keys from element ko (slots s0 .. s0 + nk1 - 1, then 0 ..
 * nk2 - 1), into scores [ncol][nk1 + nk2]: the keys a tile at a time as
 * floats (cvt), each tile's scores in calls like the F32 cache's over
 * those rows (gemm_f32's entries do not depend on which rows share a
 * call). */
static void scores_converted(const struct wk_cpu_kernels *k, const struct wk_attn_args *a, int64_t ko, int64_t s0,
                             int64_t nk1, int64_t nk2, const float *qb, int64_t qs, int32_t ncol, int32_t cw, float *cvt,
                             float *scores)
{
    const int64_t D = a->head_dim, nk = nk1 + nk2, kt = WK_MAX(4, WK_ATTN_CVT_TILE / D);
    for (int part = 0; part < 2; part++) {
        const int64_t first = part ? 0 : s0, cnt = part ? nk2 : nk1, off = part ? nk1 : 0;
        for (int64_t k0 = 0; k0 < cnt; k0 += kt) {
            const int64_t nkt = WK_MIN(kt, cnt - k0);
            key_floats(k, a, ko + (first + k0) * D, nkt * D, cvt);
            for (int32_t j = 0; j < ncol; j += cw)
                wk_cpu_gemm(k, nkt, WK_MIN(cw, ncol - j), D, cvt, D, qb + j * qs, qs, scores + j * nk + off + k0, nk);
        }
    }
}

static void attention_task(void *p, int ith, int nth)
{
    const struct attn_task *task = p;
    const struct wk_attn_args *a = task->a;
    const struct wk_cpu_kernels *k = task->b->k;
    const int64_t D = a->head_dim, HQ = (int64_t)a->n_head * D, HK = (int64_t)a->n_head_kv * D;
    const int32_t group = a->n_head / a->n_head_kv, W = a->window;
    const bool sliding = W > 0;
    const int64_t S = a->n_slots;
    const bool f16 = a->kv_type == WK_DTYPE_F16, q8 = a->kv_type == WK_DTYPE_Q8_0;
    const int64_t es = wk_kv_elem_bytes(a->kv_type);
    float *cvt = task->b->cvt ? task->b->cvt + (size_t)ith * task->b->cvt_floats : NULL;
    /* from a slot's value entry i to its entry i + 1; blocked values' blocks apart */
    const int32_t vblk = a->v_blk;
    const int64_t vs = vblk ? vblk : S, vbs = HK * vblk;
    float *scores = task->b->scores + (size_t)ith * ATTN_QBLOCK * (size_t)task->b->n_ctx;
    float *pv = task->b->pv + (size_t)ith * ATTN_QBLOCK * (size_t)task->b->head_dim_max;
    const int32_t n_blocks = a->n_blk;
    /* Decode (one block) and verify (blocks of one token, a few keys
     * apart): each thread takes a run of items, so heads that share a kv
     * head share its cached rows. Prefill: items dealt out in turn, since
     * a later block has more keys (causal mask) and contiguous runs would
     * give the last thread most of the work; in the order (kv head, block,
     * head of its group), so the threads work through one kv head's packed
     * keys and values at a time (SmolLM2 pp4096 +7% against (block, head),
     * where every block read all three kv heads' 6 MB from L3). */
    const int64_t n_items = (int64_t)n_blocks * a->n_head;
    int64_t lo_item = ith, hi_item = n_items, step = nth;
    if (n_blocks == 1 || a->per_token) wk_split_range(n_items, ith, nth, &lo_item, &hi_item), step = 1;
    /* columns a product of grouped heads takes at once: fewer than
     * gemm_f32_packed_min_n, so gemm_f32 keeps its small path, whose every
     * entry is the one-column product's (any count where the table's gemm
     * has one path) */
    const int32_t hcols = k->gemm_f32_packed_min_n > 1 ? k->gemm_f32_packed_min_n - 1 : ATTN_QBLOCK;
    for (int64_t item = lo_item; item < hi_item;) {
        int32_t h, blk;
        if (step != 1) { /* prefill: (kv head, block, head of its group), as above */
            const int64_t per_g = (int64_t)n_blocks * group, r = item % per_g;
            blk = (int32_t)(r / group), h = (int32_t)(item / per_g * group + r % group);
        } else { /* (block, head): a block's heads in a run */
            h = (int32_t)(item % a->n_head), blk = (int32_t)(item / a->n_head);
        }
        int32_t t0 = a->blk_t0[blk], nq = a->blk_nq[blk];
        int32_t lo, p_last;
        block_keys(a, blk, &lo, &p_last);
        int64_t nk = p_last - lo + 1, g = h / group;
        /* A one-row block (decode, verification): the run of this thread's
         * heads from h that share h's kv head and block, up to
         * ATTN_QBLOCK, go together (nh of them), so their keys and value
         * rows are read once for up to hcols heads instead of once a head
         * (GQA: SmolLM2's 3 query heads a kv head, Qwen2.5's 6). Every
         * head keeps its bits: the products take hcols columns at a time,
         * where gemm_f32's small path computes each entry as it does for
         * one column. */
        int32_t nh = 1;
        if (nq == 1 && step == 1)
            while (nh < ATTN_QBLOCK && item + nh < hi_item && h + nh < a->n_head && (h + nh) / group == g) nh++;
        /* the keys' slots: s0 .. s0+nk1-1, then 0 .. nk2-1 where a ring wraps */
        int64_t s0 = lo % S, nk1 = WK_MIN(nk, S - s0), nk2 = nk - nk1;
        /* this kv head's keys (D elements apart) from element ko; its
         * value rows (vs apart) from vo, that of slot 0 (blocked values:
         * no window, so s0 = 0 and nk2 = 0) */
        const int64_t so = (int64_t)a->seq[t0] * S * HK, ko = so + g * S * D;
        const int64_t vo = wk_kv_v_index(S, vblk, HK, a->seq[t0], g * D, 0);
        WK_ASSERT(!vblk || (s0 == 0 && nk2 == 0));
        const uint8_t *kb = (const uint8_t *)a->k + ko * es, *vb = (const uint8_t *)a->v + vo * es;
        if (nq == 1 && (item == lo_item || h % group == 0) && nk * D <= 65536)
            prefetch_kv_head(a, kb, vb, s0, nk1, nk2);
        const float *qb = a->q + (size_t)t0 * HQ + h * D;
        /* the products' columns: the block's nq rows of head h (queries and
         * outputs HQ apart, in one call: gemm_f32's path for nq rows), or
         * one row of each of the nh heads (D apart, hcols a call) */
        const int32_t ncol = nq * nh, cw = nh > 1 ? hcols : ncol;
        const int64_t qs = nh > 1 ? D : HQ;
        /* an F16 or Q8_0 cache or blocked values read by the products
         * themselves (gemm_rows) where their columns take gemm_f32's small
         * path (decode); else converted or gathered a tile at a time into
         * cvt first */
        const bool direct = k->gemm_rows && (k->gemm_f32_packed_min_n == 0 || cw < k->gemm_f32_packed_min_n);
        /* the scores' rows ld floats apart: nk, or with the keys packed
         * once (kpack_keys: then s0 = 0 and nk2 = 0) as many keys as that
         * product computes, nk rounded up to a whole panel of 32 or all of
         * them (those past nk never read) */
        int64_t ld = nk;
        if (task->kpack_m && nq >= k->gemm_f32_packed_min_n) {
            /* the packed path's bits, as gemm_f32 gives them for nq rows */
            ld = WK_MIN((nk + 31) / 32 * 32, (int64_t)task->kpack_m);
            k->gemm_f32_prepacked(ld, nq, D, task->b->kpack + (size_t)g * task->kpack_head, qb, HQ, scores, ld);
        } else if (!(f16 || q8) || direct) {
            const struct wk_cpu_rows r1 = rows_keys(a, ko + s0 * D), r2 = rows_keys(a, ko);
            for (int32_t j = 0; j < ncol; j += cw) {
                const int32_t nj = WK_MIN(cw, ncol - j);
                cache_gemm(k, &r1, nk1, nj, D, a->k, ko + s0 * D, qb + j * qs, qs, scores + j * nk, nk);
                if (nk2) cache_gemm(k, &r2, nk2, nj, D, a->k, ko, qb + j * qs, qs, scores + j * nk + nk1, nk);
            }
        } else {
            scores_converted(k, a, ko, s0, nk1, nk2, qb, qs, ncol, cw, cvt, scores);
        }
        /* rows of scores: nq rows of one head, or one row of each of nh heads */
        for (int32_t r = 0; r < nq * nh; r++) {
            float *row = scores + r * ld;
            int32_t pos = a->bidirectional ? p_last : a->pos[t0 + (nh > 1 ? 0 : r)];
            int64_t first = sliding && pos - W + 1 > lo ? pos - W + 1 - lo : 0, last = pos - lo;
            if (a->softcap > 0) /* Gemma 2: scores capped before the mask */
                for (int64_t j = first; j <= last; j++) row[j] = a->softcap * tanhf(row[j] / a->softcap);
            for (int64_t j = 0; j < first; j++) row[j] = -INFINITY;
            for (int64_t j = last + 1; j < nk; j++) row[j] = -INFINITY;
            if (a->sinks) softmax_sink(k, nk, row, a->sinks[h + (nh > 1 ? r : 0)]);
            else k->softmax(nk, row);
        }
        float *out = a->out + (size_t)t0 * HQ + h * D;
        if (task->vpack_head && nq >= k->gemm_f32_packed_min_n) /* the packed path's bits, as for the keys */
            k->gemm_f32_prepacked_cols(D, nq, nk, task->kpack_m, task->b->vpack + (size_t)g * task->vpack_head, scores,
                                       ld, out, HQ);
        else {
            /* value rows i0 .. i0 + nr - 1: all D at once where the products
             * read the cache (an F32 cache's contiguous rows, or through
             * gemm_rows); else an F16 cache's or blocked values a few rows
             * at a time, converted or gathered over the keys' slots into
             * cvt, in calls like the contiguous F32 cache's over those rows */
            const bool conv = (f16 || q8 || vblk) && !direct;
            const int64_t rc = !conv ? D : WK_MIN(D, WK_MAX(4, WK_ATTN_CVT_TILE / WK_MAX(nk1, nk2) / 4 * 4));
            const int32_t seq = a->seq[t0];
            for (int64_t i0 = 0; i0 < D; i0 += rc) {
                const int64_t nr = WK_MIN(rc, D - i0);
                /* the cache's rows (direct: i0 = 0, so a Q8_0 group's rows start at a multiple of 32) */
                int64_t o1 = vo + i0 * vs + s0, o2 = vo + i0 * vs;
                struct wk_cpu_rows r1 = rows_values(a, seq, g * D + i0, s0, vs, vbs), r2 = rows_values(a, seq, g * D + i0, 0, vs, vbs);
                const void *v1 = a->v, *v2 = a->v;
                if (conv)
                    value_rows(k, a, seq, g * D + i0, nr, s0, nk1, cvt), v1 = cvt, o1 = 0,
                        r1 = (struct wk_cpu_rows){.type = WK_DTYPE_F32, .lda = nk1};
                for (int32_t j = 0; j < ncol; j += cw)
                    cache_gemm(k, &r1, nr, WK_MIN(cw, ncol - j), nk1, v1, o1, scores + j * ld, ld, out + j * qs + i0, qs);
                if (!nk2) continue;
                if (conv)
                    value_rows(k, a, seq, g * D + i0, nr, 0, nk2, cvt), v2 = cvt, o2 = 0,
                        r2 = (struct wk_cpu_rows){.type = WK_DTYPE_F32, .lda = nk2};
                for (int32_t j = 0; j < ncol; j += cw) {
                    const int32_t nj = WK_MIN(cw, ncol - j);
                    cache_gemm(k, &r2, nr, nj, nk2, v2, o2, scores + j * ld + nk1, ld, pv, D);
                    for (int32_t r = 0; r < nj; r++)
                        for (int64_t i = 0; i < nr; i++) out[(j + r) * qs + i0 + i] += pv[r * D + i];
                }
            }
        }
        item += step == 1 ? nh : step;
    }
}

/* Attention over the thread pool (attention_task). A prefill's keys are
 * packed for the f32 GEMM once per kv head first (kpack_keys): each block
 * of 8 queries packed its keys again for every head (7% of SmolLM2's
 * prefill in pack_a, K and V together); so are its values where the table
 * can read a prefix of a packing's columns (gemm_f32_prepacked_cols: each
 * block's product is over its own keys), the 4% of Gemma 3's prefill
 * that packing them per block still took. Same bits: the prepacked
 * products are the packed ones, taken only where gemm_f32 would take the
 * packed path for the block's rows. */
static void attention(struct wk_backend *b, const struct wk_attn_args *a)
{
    struct wk_backend_cpu *cb = cpu(b);
    struct attn_task task = {.b = cb, .a = a, .kpack_m = kpack_keys(cb, a)};
    if (task.kpack_m) {
        task.kpack_head = cb->k->gemm_f32_pack_floats(task.kpack_m, a->head_dim);
        task.vpack_head = cb->vpack ? cb->k->gemm_f32_pack_floats(a->head_dim, task.kpack_m) : 0;
        wk_threadpool_run(cb->pool, kpack_task, &task);
    }
    wk_threadpool_run(cb->pool, attention_task, &task);
}

static void synchronize(struct wk_backend *b) { (void)b; }

static const struct wk_backend_ops g_cpu_ops = {
    .name = "cpu",
    .get_rows = get_rows,
    .matmul = matmul,
    .matmul_many = matmul_many,
    .matmul_glu = matmul_glu,
    .rms_norm = rms_norm,
    .add_bias = add_bias,
    .add = add,
    .scale = scale,
    .copy = copy,
    .zero = zero,
    .softcap = softcap,
    .glu_rows = glu_rows,
    .rope_table = rope_table,
    .rope = rope,
    .kv_write = kv_write,
    .kv_copy = kv_copy,
    .kv_prefetch = kv_prefetch,
    .attention = attention,
    .mla_prepare = wk__cpu_mla_prepare,
    .mla_attention = wk__cpu_mla_attention,
    .moe_route = wk__cpu_moe_route,
    .moe_experts = wk__cpu_moe_experts,
    .synchronize = synchronize,
};

void wk__backend_cpu_init(struct wk_backend_cpu *b, struct wk_threadpool *pool, const struct wk_cpu_kernels *k,
                          float *mm_scratch, float *scores, float *pv, int32_t n_ctx, int32_t head_dim_max)
{
    *b = (struct wk_backend_cpu){.base = {.ops = &g_cpu_ops}, .pool = pool, .k = k, .mm_scratch = mm_scratch,
                                 .scores = scores, .pv = pv, .n_ctx = n_ctx, .head_dim_max = head_dim_max};
}

/* ------------------------------------------------------------ weights */

/* A matrix the R16 layout can take: 2-D, whole groups of rows, a dtype
 * with an R16 form that k has decode kernels for. */
static bool r16_fits(const struct wk_cpu_kernels *k, const struct wk_tensor *t)
{
    if (!t || t->n_dims != 2 || t->ne[1] % WK_R16_ROWS != 0) return false;
    const enum wk_dtype r16 = wk_cpu_r16_dtype(t->dtype);
    return r16 != WK_DTYPE_COUNT && k->vec_dot_rows_x16[r16] && k->vec_dot_rows_x16_tokens[r16];
}

/* Adds t to list (n entries, room for cap) unless it is there already. */
static void r16_add(const struct wk_tensor **list, int *n, int cap, const struct wk_tensor *t)
{
    for (int i = 0; i < *n; i++)
        if (list[i] == t) return;
    if (*n < cap) list[(*n)++] = t;
}

/* Gives t, a GGUF tensor or a loader's view of rows of one
 * (m->view_tensors), dtype d. */
static void retype(struct wk_model *m, const struct wk_tensor *t, enum wk_dtype d)
{
    for (int32_t i = 0; i < m->n_view_tensors; i++)
        if (&m->view_tensors[i] == t) {
            m->view_tensors[i].dtype = d;
            return;
        }
    wk_gguf_retype_tensor(m->gguf, t, d);
}

/*
 * Repacks in place, into the R16 layout (wk_cpu.h), the Q4_1, Q5_0, Q8_0, Q6_K and Q4_K
 * matrices that only the matmul and wk_cpu_get_row read: each layer's
 * attention and FFN projections and the output projection (the token
 * embeddings too when tied to it), for a GGUF read into anonymous memory,
 * each where the kernel table has R16 decode kernels for its dtype
 * (AVX-512 VNNI and AVX2: all five; none with WICK_EXACT). A matmul group (Q, K, V) is repacked only if every matrix
 * of it ends on a whole group of rows, so the threads' shares, whole
 * groups, stay whole in each. An MTP assistant's output projection is left
 * alone (its sparse head reads single rows). Nothing to do is no error;
 * WK_E_NOMEM for the scratch.
 */
static enum wk_status upload(struct wk_model *m, bool resident, struct wk_error *err)
{
    const struct wk_cpu_kernels *k = wk_cpu_kernels_get();
    if (!resident || !m->gguf) return WK_OK;
    const int cap = 7 * m->hp.n_layer + 2;
    const struct wk_tensor **list = wk_calloc((size_t)cap, sizeof *list);
    if (!list) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    int n = 0;
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        const struct wk_layer *l = &m->layers[il];
        const struct wk_tensor *qkv[3] = {l->wq, l->wk, l->wv};
        bool whole = true;
        for (int i = 0; i < 3; i++) whole &= !qkv[i] || qkv[i]->ne[1] % WK_R16_ROWS == 0;
        const struct wk_tensor *mats[7] = {whole ? l->wq : NULL, whole ? l->wk : NULL, whole ? l->wv : NULL,
                                           l->wo, l->ffn_gate, l->ffn_up, l->ffn_down};
        for (int i = 0; i < 7; i++)
            if (r16_fits(k, mats[i])) r16_add(list, &n, cap, mats[i]);
    }
    if (!m->mtp_token_ordering && r16_fits(k, m->output)) r16_add(list, &n, cap, m->output);
    size_t tmp_bytes = 0;
    for (int i = 0; i < n; i++) tmp_bytes = WK_MAX(tmp_bytes, WK_R16_ROWS * list[i]->nb[1]);
    void *tmp = n ? wk_malloc(tmp_bytes) : NULL;
    enum wk_status st = WK_OK;
    if (n && !tmp) {
        st = wk_error_set(err, WK_E_NOMEM, "out of memory");
    } else if (n && wk_gguf_set_writable(m->gguf, true)) {
        for (int i = 0; i < n; i++) {
            const struct wk_tensor *t = list[i];
            wk_cpu_r16_pack(t->dtype, (void *)(uintptr_t)t->data, t->ne[0], t->ne[1], tmp);
            retype(m, t, wk_cpu_r16_dtype(t->dtype));
        }
        (void)wk_gguf_set_writable(m->gguf, false);
    }
    wk_free(tmp);
    wk_free(list);
    return st;
}

const struct wk_backend_type wk__backend_cpu_type = {.name = "cpu", .upload = upload};
