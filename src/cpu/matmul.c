/*
 * matmul.c - y = x · Wᵀ over the thread pool, for any weight dtype, with
 * f32 activations.
 *
 * Several matrices that read the same input (Q, K and V; gate and up) go
 * through one dispatch, their rows split across the threads together; a
 * gate/up pair can also apply its activation on the spot (GLU), so no
 * separate pass over the FFN activations is made.
 *
 * Threads split the output rows: for several tokens in equal contiguous
 * shares; for one token in shares that follow each thread's recent speed,
 * and on a big matrix a thread done with its share also takes half of what
 * another has left (matmul_task). For one token a thread runs the fused
 * dequantize-and-dot kernel over its rows: vec_dot_rows_x16 (x rounded to
 * 16-bit fixed point per block, integer dots) where the ISA has one for
 * the weight type, else vec_dot_rows (f32 x). For several
 * tokens a thread dequantizes WK_MATMUL_ROW_TILE rows into its scratch
 * and multiplies them with every token's row in the f32 GEMM kernel (an
 * R16 matrix with a gemm_r16 kernel: every token's x is prepared once,
 * 16-bit as for decode, and the integer GEMM runs over the rows),
 * unless WK_MATMUL_PER_TOKEN asks for every token to go through the
 * one-token kernels (a block of rows kept in cache while each token runs
 * over it: the bits of n one-token calls). Either way each output is
 * computed by one thread in a fixed order, so a given thread count always
 * gives the same bits (kernels that block rows may round differently when
 * the rows are split differently).
 */
#include "wk_cpu.h"
#include "wk_cpu_arch.h"

#include <stdatomic.h>

#define ROW_TILE WK_MATMUL_ROW_TILE
/* Decode balances rows between threads for pools of up to this many, on
 * matrices of at least this many bytes a thread. */
#define WK_MATMUL_BALANCE_THREADS 16
#define WK_MATMUL_BALANCE_BYTES ((size_t)1 << 20)

/* One weight matrix of a group and where its products go. */
struct part {
    const struct wk_tensor *w;
    float *y;
};

struct matmul_ctx {
    const struct wk_cpu_kernels *k;
    struct part parts[WK_MATMUL_MAX_PARTS];
    int n_parts;
    int64_t total_rows; /* sum of the parts' rows; for a GLU pair, one part's */
    int64_t align;      /* threads' shares in whole groups of this many rows:
                         * WK_R16_ROWS where a part is R16, else 4 */
    const float *x;
    int64_t n_tokens, n_in;
    float *scratch;
    enum wk_glu glu;
    unsigned flags;
    /* decode balancing (matmul_task): on; each thread's first share, rows
     * [bounds[i], bounds[i + 1]); stealing on, chunk and smallest steal in
     * rows, each thread's rows not yet taken (one cache line each) */
    struct wk_threadpool *pool;
    bool balance, steal;
    /* decode of R16 parts with x prepared once per thread (r16_prepare)
     * into its scratch tile (thread_prep), every part's rows then taken in
     * chunks */
    bool r16_prep;
    /* prefill through gemm_r16: every token's x prepared (x_prep, ldp
     * floats apart) before the rows are computed; NULL otherwise */
    float *x_prep;
    size_t ldp;
    int64_t bounds[WK_MATMUL_BALANCE_THREADS + 1];
    int64_t chunk, min_steal;
    struct {
        _Alignas(64) _Atomic uint64_t v;
    } ranges[WK_MATMUL_BALANCE_THREADS];
};

void wk_cpu_gemm(const struct wk_cpu_kernels *k, int64_t m, int64_t n, int64_t kk, const float *a,
                 int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc)
{
    if (k->gemm_f32 != wk__gemm_f32_ref) {
        k->gemm_f32(m, n, kk, a, lda, b, ldb, c, ldc);
        return;
    }
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) c[j * ldc + i] = k->dot_f32(kk, a + i * lda, b + j * ldb);
}

/* Thread ith's prepared x (r16_prep): the start of its scratch tile. */
static float *thread_prep(const struct matmul_ctx *c, int ith)
{
    return c->scratch + (size_t)ith * (ROW_TILE + 1) * (size_t)c->n_in;
}

/* Rows [r0, r0 + nr) of one part for token t alone, through the
 * one-token kernels, on thread ith: the decode product. */
static void token_rows(const struct matmul_ctx *c, const struct part *p, int64_t t, int64_t r0,
                       int64_t nr, int ith)
{
    enum wk_dtype dt = p->w->dtype;
    const size_t w_row = p->w->nb[1];
    const uint8_t *w = (const uint8_t *)p->w->data + r0 * w_row;
    const int64_t n_in = c->n_in;
    const float *x = c->x + t * n_in;
    float *y = p->y + t * p->w->ne[1] + r0;
    if (c->r16_prep) {
        c->k->vec_dot_rows_r16[dt](n_in, w, w_row, thread_prep(c, ith), y, nr);
        return;
    }
    if (c->k->vec_dot_rows_x16[dt] && n_in % 32 == 0) {
        c->k->vec_dot_rows_x16[dt](n_in, w, w_row, x, y, nr);
        return;
    }
    if (c->k->vec_dot_rows[dt] != wk__vec_dot_rows_ref(dt)) {
        c->k->vec_dot_rows[dt](n_in, w, w_row, x, y, nr);
        return;
    }
    /* no multi-row kernel for this ISA and type: its single-row one */
    for (int64_t r = 0; r < nr; r++) y[r] = c->k->vec_dot[dt](n_in, w + r * w_row, x);
}

/* Rows [lo, hi) of one part, for every token, on thread ith. */
static void part_rows(const struct matmul_ctx *c, const struct part *p, int64_t lo, int64_t hi,
                      int ith)
{
    if (hi <= lo) return;
    enum wk_dtype t = p->w->dtype;
    size_t w_row = p->w->nb[1];
    const uint8_t *w = (const uint8_t *)p->w->data + lo * w_row;
    const int64_t n_in = c->n_in, n_out = p->w->ne[1];
    if (c->n_tokens == 1) {
        token_rows(c, p, 0, lo, hi - lo, ith);
        return;
    }
    if (c->flags & WK_MATMUL_PER_TOKEN) {
        if (c->x_prep && c->k->vec_dot_rows_r16_tokens[t]) {
            /* an R16 part, every token's x prepared once (gemm_r16_setup):
             * each token gets the prepared-x decode kernel's bits, which are
             * a lone decode step's whichever way that step ran (r16_prep or
             * vec_dot_rows_x16) */
            c->k->vec_dot_rows_r16_tokens[t](n_in, w, w_row, c->x_prep, c->ldp, (int32_t)c->n_tokens, p->y + lo,
                                             (size_t)n_out, hi - lo);
            return;
        }
        /* the tokens' own decode dots at once where the table has them:
         * vec_dot_rows_x16_tokens gives vec_dot_rows_x16's bits and
         * vec_dot_rows_tokens vec_dot_rows', whichever a token alone runs */
        const bool x16 = c->k->vec_dot_rows_x16[t] && n_in % 32 == 0;
        wk_vec_dot_rows_tokens_fn tok = x16 ? c->k->vec_dot_rows_x16_tokens[t] : c->k->vec_dot_rows_tokens[t];
        if (tok) {
            tok(n_in, w, w_row, c->x, (size_t)n_in, (int32_t)c->n_tokens, p->y + lo, (size_t)n_out, hi - lo);
            return;
        }
        /* a block of rows, every token over it while it is in cache */
        const int64_t blk = wk_cpu_matmul_token_block_rows(w_row);
        for (int64_t r0 = lo; r0 < hi; r0 += blk)
            for (int64_t tok = 0; tok < c->n_tokens; tok++)
                token_rows(c, p, tok, r0, WK_MIN(blk, hi - r0), ith);
        return;
    }
    if (c->x_prep && c->k->gemm_r16[t]) {
        c->k->gemm_r16[t](n_in, w, w_row, c->x_prep, c->ldp, c->n_tokens, p->y + lo, (size_t)n_out, hi - lo);
        return;
    }
    float *tile = c->scratch + (size_t)ith * (ROW_TILE + 1) * (size_t)n_in;
    /* an R16 row is first copied back to row-major bytes past the tile */
    const enum wk_dtype base = wk_dtype_base(t);
    uint8_t *row_buf = (uint8_t *)(tile + ROW_TILE * n_in);
    const int64_t n_blk = n_in / wk_dtype_traits_get(t)->block_size;
    for (int64_t r0 = lo; r0 < hi; r0 += ROW_TILE) {
        int64_t nr = WK_MIN(ROW_TILE, hi - r0);
        /* F32 rows are their own tile (the GEMM reads a through lda and
         * packs it itself): the same operands, the same bits, without
         * copying them (6% of a BERT forward) */
        const float *a = tile;
        int64_t lda = n_in;
        if (t == WK_DTYPE_F32) {
            a = (const float *)(w + (r0 - lo) * w_row);
            lda = (int64_t)(w_row / sizeof(float));
        }
        for (int64_t r = 0; t != WK_DTYPE_F32 && r < nr; r++) {
            if (base != t) {
                wk_cpu_r16_unpack_row(t, p->w->data, n_in, r0 + r, 0, n_blk, row_buf);
                c->k->to_f32[base](row_buf, tile + r * n_in, n_in);
            } else {
                c->k->to_f32[t](w + (r0 - lo + r) * w_row, tile + r * n_in, n_in);
            }
        }
        if (c->k->gemm_f32_packed) /* the same order for any token count */
            c->k->gemm_f32_packed(nr, c->n_tokens, n_in, a, lda, c->x, n_in, p->y + r0, n_out);
        else
            wk_cpu_gemm(c->k, nr, c->n_tokens, n_in, a, lda, c->x, n_in, p->y + r0, n_out);
    }
}

/* Rows [lo, hi) of the group: its parts' rows concatenated, or for a GLU
 * pair the same rows of gate and up, then act(gate) * up on them.
 * Returns the weight bytes read. */
static double group_rows(const struct matmul_ctx *c, int64_t lo, int64_t hi, int ith)
{
    if (hi <= lo) return 0;
    if (c->glu != WK_GLU_NONE) {
        part_rows(c, &c->parts[0], lo, hi, ith);
        part_rows(c, &c->parts[1], lo, hi, ith);
        int64_t n_out = c->parts[0].w->ne[1];
        for (int64_t t = 0; t < c->n_tokens; t++) {
            float *g = c->parts[0].y + t * n_out + lo;
            const float *u = c->parts[1].y + t * n_out + lo;
            if (c->glu == WK_GLU_GELU_TANH) c->k->geglu(hi - lo, g, u);
            else c->k->swiglu(hi - lo, g, u);
        }
        return (double)(hi - lo) * 2.0 * (double)c->parts[0].w->nb[1];
    }
    double bytes = 0;
    int64_t base = 0;
    for (int i = 0; i < c->n_parts; i++) {
        const int64_t n_out = c->parts[i].w->ne[1], a = WK_MAX(lo, base), b = WK_MIN(hi, base + n_out);
        /* an R16 part is only ever given whole groups: every cut is a
         * multiple of align (range_take, the prefill split), and the loader
         * repacks a Q, K, V group only if each of its parts is whole groups */
        WK_ASSERT(wk_dtype_base(c->parts[i].w->dtype) == c->parts[i].w->dtype || b <= a ||
                  ((a - base) % WK_R16_ROWS == 0 && ((b - base) % WK_R16_ROWS == 0 || b == base + n_out)));
        part_rows(c, &c->parts[i], a - base, b - base, ith);
        if (b > a) bytes += (double)(b - a) * (double)c->parts[i].w->nb[1];
        base += n_out;
    }
    return bytes;
}

/* A thread's rows not yet taken, [lo, hi) packed as lo << 32 | hi. */
static inline uint64_t range_pack(int64_t lo, int64_t hi) { return (uint64_t)lo << 32 | (uint64_t)hi; }

/* Takes up to want rows from the front of range r (its owner), or the
 * back half of what is left (a thief, want < 0) if that is at least
 * min_steal rows. Every cut falls on a multiple of align counted from row
 * 0 (a range's start always does), so an R16 part is cut into whole
 * groups even where the rows end off a group (a last part of 37 rows).
 * Returns false when nothing was taken. Rows once taken never return to a
 * range, so a compare-exchange cannot mistake a new range for an old one. */
static bool range_take(_Atomic uint64_t *r, int64_t want, int64_t min_steal, int64_t align, int64_t *lo,
                       int64_t *hi)
{
    uint64_t v = atomic_load_explicit(r, memory_order_relaxed);
    for (;;) {
        const int64_t a = (int64_t)(v >> 32), b = (int64_t)(v & 0xFFFFFFFFu), left = b - a;
        if (left <= 0 || (want < 0 && left < min_steal)) return false;
        /* the owner keeps [a, cut), the thief takes [cut, b) */
        const int64_t cut = want >= 0 ? WK_MIN(a + want, b) : a + (left - left / 2 + align - 1) / align * align;
        if (want < 0 && cut >= b) return false;
        const uint64_t nv = want >= 0 ? range_pack(cut, b) : range_pack(a, cut);
        if (atomic_compare_exchange_weak_explicit(r, &v, nv, memory_order_relaxed, memory_order_relaxed)) {
            *lo = want >= 0 ? a : cut;
            *hi = want >= 0 ? cut : b;
            return true;
        }
    }
}

/* Decode with R16 parts and prepared x takes each thread's share (as the
 * threads' speeds weigh it) in this many chunks, so that the back half of
 * a slower thread's untaken rows can still be stolen. Fewer, longer
 * chunks stream faster: on the Xeon (Sapphire Rapids, 2 vCPUs),
 * Qwen2.5-Coder-1.5B's gate/up pair (2 x 7.7 MB) ran at 26.0-27.0 GB/s in
 * chunks of 256 KiB of weights (about 32 a thread), 28.2-28.6 in eight a
 * thread, 29.5 in four, 30.3-30.4 in two, 30.2-30.3 without stealing;
 * tg128 at 2 threads 25.9-26.9 -> 28.9-29.0 t/s (Gemma 3 +1%, SmolLM2
 * alike; the AVX2 kernels on that CPU 26.2-26.5 -> 28.9-29.0). Taking
 * the rest in halves (half, a quarter, ... of the share) gave 29.2-29.5:
 * each chunk costs about a microsecond more than its bytes, and neither
 * a software prefetch of the next chunk's start (no change) nor gate and
 * up read in turn 16 to 64 rows at a time (27-28 GB/s) recovered it. */
#define R16_CHUNKS_A_THREAD 2

static void matmul_task(void *arg, int ith, int nth)
{
    struct matmul_ctx *c = arg;
    int64_t lo, hi;
    if (!c->balance) { /* prefill: equal contiguous shares of whole groups */
        wk_split_range((c->total_rows + c->align - 1) / c->align, ith, nth, &lo, &hi);
        group_rows(c, lo * c->align, WK_MIN(hi * c->align, c->total_rows), ith);
        return;
    }
    /* Decode. This VM's vCPUs often run at unequal speeds for seconds at a
     * time (one shares its core); with equal shares the faster thread
     * waited for the slower at every matrix. So the shares follow each
     * thread's recent speed (wk_threadpool_weighted_bounds), and on a big
     * matrix a thread that runs out of its share also takes the back half
     * of what another has left. Each row's result does not depend on the
     * thread or the chunk that computes it. */
    const int64_t t0 = wk_time_ns();
    double done = 0;
    if (c->r16_prep) c->k->r16_prepare(c->n_in, c->x, thread_prep(c, ith));
    if (!c->steal) {
        done = group_rows(c, c->bounds[ith], c->bounds[ith + 1], ith);
    } else {
        _Atomic uint64_t *mine = &c->ranges[ith].v;
        /* r16_prep: this thread's share in R16_CHUNKS_A_THREAD chunks of whole groups */
        const int64_t al = c->align, share = c->bounds[ith + 1] - c->bounds[ith];
        const int64_t part = (share + R16_CHUNKS_A_THREAD - 1) / R16_CHUNKS_A_THREAD;
        const int64_t want = c->r16_prep ? WK_MAX(al, (part + al - 1) / al * al) : c->chunk;
        for (bool stole = true; stole;) {
            while (range_take(mine, want, 0, c->align, &lo, &hi)) done += group_rows(c, lo, hi, ith);
            stole = false;
            for (int j = 1; j < nth && !stole; j++)
                stole = range_take(&c->ranges[(ith + j) % nth].v, -1, c->min_steal, c->align, &lo, &hi);
            /* the stolen rows become this thread's share (others may steal back) */
            if (stole) atomic_store_explicit(mine, range_pack(lo, hi), memory_order_relaxed);
        }
    }
    wk_threadpool_note_speed(c->pool, ith, done, wk_time_ns() - t0);
}

/* Prefill through gemm_r16: thread ith prepares its share of the tokens' x. */
static void prep_task(void *arg, int ith, int nth)
{
    struct matmul_ctx *c = arg;
    int64_t lo, hi;
    wk_split_range(c->n_tokens, ith, nth, &lo, &hi);
    const bool gemm = !(c->flags & WK_MATMUL_PER_TOKEN); /* gemm_r16's preparation, else decode's */
    for (int64_t t = lo; t < hi; t++) {
        float *p = c->x_prep + (size_t)t * c->ldp;
        if (gemm) wk_cpu_r16_prepare_gemm(c->k, c->n_in, c->x + t * c->n_in, p);
        else c->k->r16_prepare(c->n_in, c->x + t * c->n_in, p);
    }
}

/* For several tokens, where a part has a gemm_r16 kernel (or with
 * WK_MATMUL_PER_TOKEN, a vec_dot_rows_r16 one): every token's x prepared
 * once, past the threads' tiles in scratch (wk_cpu_matmul_scratch_floats,
 * sized for n_ubatch tokens, which no batch's ubatch passes). */
static void gemm_r16_setup(struct matmul_ctx *c, struct wk_threadpool *pool)
{
    const bool per_token = c->flags & WK_MATMUL_PER_TOKEN;
    bool any = false;
    for (int i = 0; i < c->n_parts; i++) {
        const enum wk_dtype t = c->parts[i].w->dtype;
        any |= per_token ? c->k->vec_dot_rows_r16_tokens[t] != NULL : c->k->gemm_r16[t] != NULL;
    }
    if (c->n_tokens < 2 || !any || !c->k->r16_prepare || !c->scratch) return;
    c->ldp = per_token ? wk_cpu_r16_prep_floats(c->n_in) : wk_cpu_r16_gemm_prep_floats(c->k, c->n_in);
    c->x_prep = c->scratch + (size_t)wk_threadpool_n_threads(pool) * (ROW_TILE + 1) * (size_t)c->n_in;
    wk_threadpool_run(pool, prep_task, c);
}

/* Sets c's row alignment and arms its decode balancing (matmul_task) on
 * pool: shares of whole groups (c->align rows) weighted by the threads'
 * recent speeds. With R16 parts and prepared x (r16_prep), each share
 * taken in R16_CHUNKS_A_THREAD chunks (matmul_task), with steals;
 * otherwise chunked only on a matrix big enough (WK_MATMUL_BALANCE_BYTES
 * a thread) that each call's fixed cost (the x16 kernels quantize x
 * again, ~0.3 us for 576 values) stays small,
 * in chunks of about 256 KiB of weights or 256 bytes per element of x,
 * whichever is more, with steals of at least a quarter of that. (With
 * 256 KiB for every row length, quantizing x took 14% of Qwen2.5-1.5B's
 * decode on AVX2: a chunk of its 8960-long ffn_down rows is 50 rows, and
 * each call quantized all 8960 values again; tg +10%.) */
static void balance_setup(struct matmul_ctx *c, struct wk_threadpool *pool)
{
    const int nth = wk_threadpool_n_threads(pool);
    const size_t row = c->parts[0].w->nb[1] * (c->glu != WK_GLU_NONE ? 2 : 1);
    c->align = 4;
    for (int i = 0; i < c->n_parts; i++)
        if (wk_dtype_base(c->parts[i].w->dtype) != c->parts[i].w->dtype) c->align = WK_R16_ROWS;
    const int64_t al = c->align;
    c->pool = pool;
    c->balance = c->n_tokens == 1 && nth > 1 && nth <= WK_MATMUL_BALANCE_THREADS && c->total_rows < (1ll << 31);
    if (!c->balance) return;
    wk_threadpool_weighted_bounds(pool, (c->total_rows + al - 1) / al, c->bounds);
    for (int t = 0; t <= nth; t++) c->bounds[t] = WK_MIN(al * c->bounds[t], c->total_rows);
    c->r16_prep = c->k->r16_prepare && c->scratch;
    for (int i = 0; i < c->n_parts; i++) c->r16_prep &= c->k->vec_dot_rows_r16[c->parts[i].w->dtype] != NULL;
    c->steal = c->r16_prep || (size_t)c->total_rows * row >= (size_t)nth * WK_MATMUL_BALANCE_BYTES;
    if (!c->steal) return;
    if (c->r16_prep) { /* x is not quantized again per chunk: each share in R16_CHUNKS_A_THREAD (matmul_task) */
        c->min_steal = 2 * al;
    } else {
        const size_t cb = WK_MAX((size_t)256 << 10, (size_t)256 * (size_t)c->n_in);
        c->chunk = WK_MAX(al, (int64_t)(cb / row) / al * al);
        c->min_steal = WK_MAX(2 * al, (int64_t)(cb / 4 / row) / al * al);
    }
    for (int t = 0; t < nth; t++) atomic_init(&c->ranges[t].v, range_pack(c->bounds[t], c->bounds[t + 1]));
}

void wk_cpu_matmul_many(struct wk_threadpool *pool, const struct wk_cpu_kernels *k, int n,
                        const struct wk_tensor *const *ws, float *const *ys, const float *x,
                        int64_t n_tokens, float *scratch, unsigned flags)
{
    WK_ASSERT(n >= 1 && n <= WK_MATMUL_MAX_PARTS);
    struct matmul_ctx c = {.k = k, .n_parts = n, .x = x, .n_tokens = n_tokens,
                           .n_in = ws[0]->ne[0], .scratch = scratch, .glu = WK_GLU_NONE,
                           .flags = flags};
    for (int i = 0; i < n; i++) {
        WK_ASSERT((k->vec_dot[ws[i]->dtype] != NULL || k->vec_dot_rows_x16[ws[i]->dtype] != NULL) &&
                  ws[i]->ne[0] == c.n_in);
        c.parts[i] = (struct part){ws[i], ys[i]};
        c.total_rows += ws[i]->ne[1];
    }
    balance_setup(&c, pool);
    gemm_r16_setup(&c, pool);
    wk_threadpool_run(pool, matmul_task, &c);
}

void wk_cpu_matmul(struct wk_threadpool *pool, const struct wk_cpu_kernels *k,
                   const struct wk_tensor *w, const float *x, float *y, int64_t n_tokens,
                   float *scratch, unsigned flags)
{
    wk_cpu_matmul_many(pool, k, 1, &w, &y, x, n_tokens, scratch, flags);
}

void wk_cpu_matmul_glu(struct wk_threadpool *pool, const struct wk_cpu_kernels *k,
                       const struct wk_tensor *w_gate, const struct wk_tensor *w_up,
                       const float *x, float *y, float *y_up, int64_t n_tokens, float *scratch,
                       enum wk_glu glu, unsigned flags)
{
    WK_ASSERT(w_gate->ne[0] == w_up->ne[0] && w_gate->ne[1] == w_up->ne[1] && glu != WK_GLU_NONE);
    struct matmul_ctx c = {.k = k, .n_parts = 2, .x = x, .n_tokens = n_tokens,
                           .n_in = w_gate->ne[0], .scratch = scratch, .glu = glu,
                           .total_rows = w_gate->ne[1], .flags = flags};
    c.parts[0] = (struct part){w_gate, y};
    c.parts[1] = (struct part){w_up, y_up};
    balance_setup(&c, pool);
    gemm_r16_setup(&c, pool);
    wk_threadpool_run(pool, matmul_task, &c);
}

void wk_cpu_get_row(const struct wk_cpu_kernels *k, const struct wk_tensor *w, int64_t row,
                    float *dst)
{
    const enum wk_dtype base = wk_dtype_base(w->dtype);
    if (base == w->dtype) {
        k->to_f32[w->dtype](wk_tensor_row(w, row), dst, w->ne[0]);
        return;
    }
    /* an R16 row: back to row-major bytes a few blocks at a time (2 KiB or
     * less), then each piece converted as the base dtype */
    _Alignas(64) uint8_t buf[2048];
    const struct wk_dtype_traits *tr = wk_dtype_traits_get(base);
    const int64_t nb = w->ne[0] / tr->block_size, per = (int64_t)(sizeof buf / tr->block_bytes);
    for (int64_t b0 = 0; b0 < nb; b0 += per) {
        const int64_t n_blk = WK_MIN(per, nb - b0);
        wk_cpu_r16_unpack_row(w->dtype, w->data, w->ne[0], row, b0, n_blk, buf);
        k->to_f32[base](buf, dst + tr->block_size * b0, tr->block_size * n_blk);
    }
}
