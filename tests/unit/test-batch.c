/*
 * test-batch.c - batches of several sequences (wk_batch,
 * wk_context_decode_batch) and the KV cache's sequence slots, on a tiny
 * random Gemma 3:
 * - two sequences of different lengths, at different positions, in one
 *   forward get bit for bit the logits each gets decoded alone (the same
 *   context kind, threads and chunking), and a batch of one token per
 *   sequence gets the bits of one-token decode steps;
 * - truncating or copying one sequence leaves the others alone; a copied
 *   prefix continues exactly as the original does, ring caches included;
 *   all of it with an F16 and a Q8_0 KV cache too, whose logits stay near
 *   the F32 cache's;
 * - a bidirectional (encoder) mask against a direct computation of the
 *   whole forward pass in double precision, written here from the
 *   family's math (docs/reference/architectures.md §3), which is first
 *   checked against wick's causal forward;
 * - bad batches are refused by name and change nothing.
 */
#include "check.h"
#include "tiny_model.h"

#include "../../src/io/wk_io.h"
#include "../../src/model/wk_model.h"

#include <math.h>

static struct wk_model *load(const struct tiny_spec *sp) { return tiny_model_load(sp); }

static enum wk_dtype g_kv = WK_DTYPE_F32; /* the contexts' KV cache type */
static uint32_t g_head_dim;               /* the models' head dim, 0: tiny_spec_default's */

static struct wk_context *ctx_new(struct wk_model *m, int n_seq, int n_ubatch)
{
    struct wk_context_params p = wk_context_params_default();
    p.n_ctx = 64, p.n_threads = 2, p.n_ubatch = n_ubatch, p.n_seq_max = n_seq, p.kv_type = g_kv;
    struct wk_context *c = NULL;
    CHECK_EQ_INT(wk_context_create(m, &p, &c, NULL), WK_OK);
    CHECK_EQ_INT(c ? wk_context_kv_type(c) : WK_DTYPE_COUNT, g_kv);
    return c;
}

static const int32_t g_a[12] = {2, 270, 281, 299, 5, 17, 260, 261, 262, 290, 1, 263};
static int32_t g_long[64]; /* sequence 0's earlier tokens (filled by check_two_sequences_alone) */
static const int32_t g_b[9] = {2, 9, 288, 300 - 7, 40, 41, 42, 275, 3};

/* Builds a batch of sequence 0's tokens a[0..na) from position pa, then
 * sequence 1's b[0..nb) from pb (or 1 first with b_first), every row's
 * logits wanted. */
struct two {
    int32_t tok[64], pos[64], seq[64];
    struct wk_batch b;
};
static void two_seqs(struct two *t, const int32_t *a, int na, int pa, const int32_t *b, int nb, int pb,
                     bool b_first)
{
    int n = 0;
    for (int pass = 0; pass < 2; pass++) {
        bool is_b = (pass == 0) == b_first;
        for (int i = 0; i < (is_b ? nb : na); i++, n++) {
            t->tok[n] = is_b ? b[i] : a[i];
            t->pos[n] = (is_b ? pb : pa) + i;
            t->seq[n] = is_b;
        }
    }
    t->b = (struct wk_batch){.n_tokens = n, .tokens = t->tok, .pos = t->pos, .seq_id = t->seq};
}

/* pre: the positions sequence 0 has cached before the batch; n_ubatch
 * large enough that neither sequence is cut differently in the batch than
 * alone (a sequence's rows in one ubatch alone are in one in the batch) */
static void check_two_sequences_alone(const struct tiny_spec *sp, int n_ubatch, int pre)
{
    for (int i = 0; i < 64; i++) g_long[i] = i < 12 ? g_a[i] : (i * 37 + 11) % 290 + 5;
    struct wk_model *m = load(sp);
    const int V = wk_model_hparams(m)->n_vocab;
    float *batch = malloc((size_t)V * 64 * 4), *alone = malloc((size_t)V * 64 * 4), *tmp = malloc((size_t)V * 4);
    struct wk_context *c = ctx_new(m, 2, n_ubatch), *ca = ctx_new(m, 1, n_ubatch), *cb = ctx_new(m, 1, n_ubatch);
    /* sequence 0 has pre positions cached; the batch holds its next 5 and
     * sequence 1's first 9 (1 first: order in the batch does not matter) */
    CHECK_EQ_INT(wk_context_decode(c, g_long, pre, tmp, NULL, NULL), WK_OK);
    struct two t;
    two_seqs(&t, g_a + 7, 5, pre, g_b, 9, 0, true);
    CHECK_EQ_INT(wk_context_decode_batch(c, &t.b, batch, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_seq_n_past(c, 0), pre + 5);
    CHECK_EQ_INT(wk_context_seq_n_past(c, 1), 9);
    CHECK_EQ_INT(wk_context_decode(ca, g_long, pre, tmp, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_decode_all(cb, g_b, 9, alone, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_decode_all(ca, g_a + 7, 5, alone + (size_t)9 * V, NULL, NULL), WK_OK);
    CHECK(memcmp(batch, alone, (size_t)14 * V * 4) == 0);
    /* the hidden rows too (an MTP draft's conditioning) */
    CHECK(memcmp(wk_context_hidden(c, 13), wk_context_hidden(ca, 4), (size_t)wk_model_hparams(m)->n_embd * 4) == 0);

    /* a decode step of both: one token each, the bits of one-token steps */
    int32_t next_a = 33, next_b = 44;
    two_seqs(&t, &next_a, 1, pre + 5, &next_b, 1, 9, false);
    CHECK_EQ_INT(wk_context_decode_batch(c, &t.b, batch, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_decode(ca, &next_a, 1, alone, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_decode(cb, &next_b, 1, alone + V, NULL, NULL), WK_OK);
    CHECK(memcmp(batch, alone, (size_t)2 * V * 4) == 0);

    /* sequence 1 rolled back and given another tail: each goes on as
     * alone (where sequence 1 is rolled back the same way) */
    CHECK_EQ_INT(wk_context_seq_truncate(c, 1, 4), 4);
    CHECK_EQ_INT(wk_context_seq_n_past(c, 0), pre + 6);
    two_seqs(&t, g_a, 3, pre + 6, g_a + 3, 3, 4, false);
    CHECK_EQ_INT(wk_context_decode_batch(c, &t.b, batch, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_decode_all(ca, g_a, 3, alone, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_truncate(cb, 4), 4);
    CHECK_EQ_INT(wk_context_decode_all(cb, g_a + 3, 3, alone + (size_t)3 * V, NULL, NULL), WK_OK);
    CHECK(memcmp(batch, alone, (size_t)6 * V * 4) == 0);

    /* a prefix shared: sequence 1 becomes sequence 0's first pre + 3
     * positions, and goes on as sequence 0 would from there */
    const int keep = pre + 3;
    CHECK_EQ_INT(wk_context_seq_copy(c, 0, 1, keep), keep);
    CHECK_EQ_INT(wk_context_seq_n_past(c, 1), keep);
    CHECK_EQ_INT(wk_context_seq_n_past(c, 0), pre + 9);
    int32_t tail[2] = {50, 51};
    two_seqs(&t, g_a, 0, pre + 9, tail, 2, keep, true);
    CHECK_EQ_INT(wk_context_decode_batch(c, &t.b, batch, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_truncate(ca, keep), keep);
    CHECK_EQ_INT(wk_context_decode_all(ca, tail, 2, alone, NULL, NULL), WK_OK);
    CHECK(memcmp(batch, alone, (size_t)2 * V * 4) == 0);
    /* and the logits differ from another sequence's (the check can fail) */
    CHECK(memcmp(batch, alone + (size_t)V, (size_t)V * 4) != 0);

    wk_context_destroy(c), wk_context_destroy(ca), wk_context_destroy(cb);
    free(batch), free(alone), free(tmp);
    wk_model_destroy(m);
}

static void test_two_sequences_equal_alone(void)
{
    struct tiny_spec sp = tiny_spec_default();
    if (g_head_dim) sp.head_dim = g_head_dim;
    check_two_sequences_alone(&sp, 512, 7);
}

/* The same with a sliding window of 4 on every layer: sequence 0's rings
 * (4 + n_ubatch + WK_VERIFY_MAX = 36 slots < n_ctx 64) wrap, and a copied
 * prefix is read from the copied ring. */
static void test_two_sequences_rings(void)
{
    struct tiny_spec sp = tiny_spec_default();
    sp.sliding_window = 4;
    if (g_head_dim) sp.head_dim = g_head_dim;
    check_two_sequences_alone(&sp, 16, 40);
}

/* Both with a KV cache of type t (wk_context_params.kv_type) on models
 * of head dim D: the same guarantees; and the logits near the F32
 * cache's, within tol of their largest, but not equal to them (the check
 * can fail: the cache is read). */
static void check_cache_type(enum wk_dtype t, uint32_t D, double tol)
{
    g_kv = t, g_head_dim = D;
    test_two_sequences_equal_alone();
    test_two_sequences_rings();
    struct tiny_spec sp = tiny_spec_default();
    sp.head_dim = D;
    struct wk_model *m = load(&sp);
    const int V = wk_model_hparams(m)->n_vocab;
    float *lt = malloc((size_t)V * 4), *l32 = malloc((size_t)V * 4);
    struct wk_context *ct = ctx_new(m, 1, 512);
    g_kv = WK_DTYPE_F32;
    struct wk_context *c32 = ctx_new(m, 1, 512);
    CHECK_EQ_INT(wk_context_decode(ct, g_long, 40, lt, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_decode(c32, g_long, 40, l32, NULL, NULL), WK_OK);
    double worst = 0, scale = 0;
    for (int i = 0; i < V; i++) worst = fmax(worst, fabs(lt[i] - l32[i])), scale = fmax(scale, fabs(l32[i]));
    if (!(worst > 0 && worst < tol * scale))
        fprintf(stderr, "%s cache: logits %.3g from the F32 cache's (largest %.3g)\n", wk_dtype_name(t), worst, scale);
    CHECK(worst > 0 && worst < tol * scale);
    wk_context_destroy(ct), wk_context_destroy(c32);
    free(lt), free(l32);
    wk_model_destroy(m);
    g_head_dim = 0;
}

/* An F16 cache: each K and V value within 2^-11 relative of the F32 one. */
static void test_f16_cache(void) { check_cache_type(WK_DTYPE_F16, 8, 2e-3); }

/* A Q8_0 cache (each 32 entries of a key or value vector quantized as
 * q8_0: within max|x| / 254 of the F32 ones) on models of head dim 32;
 * a head dim that is not a multiple of 32 and other element types are
 * refused by name. */
static void test_q8_0_cache(void)
{
    check_cache_type(WK_DTYPE_Q8_0, 32, 2e-2);
    struct tiny_spec sp = tiny_spec_default(); /* head dim 8 */
    struct wk_model *m = load(&sp);
    struct wk_context_params p = wk_context_params_default();
    struct wk_context *c = NULL;
    struct wk_error err;
    p.kv_type = WK_DTYPE_Q8_0;
    CHECK_EQ_INT(wk_context_create(m, &p, &c, &err), WK_E_UNSUPPORTED);
    CHECK(c == NULL && strstr(err.msg, "q8_0") != NULL && strstr(err.msg, "multiples of 32") != NULL);
    CHECK_EQ_INT(wk_context_create_or_f32(m, &p, &c, &err), WK_OK); /* what sessions and slots take: f32 */
    CHECK_EQ_INT(c ? wk_context_kv_type(c) : WK_DTYPE_COUNT, WK_DTYPE_F32);
    wk_context_destroy(c), c = NULL;
    p.kv_type = WK_DTYPE_Q4_0;
    CHECK_EQ_INT(wk_context_create(m, &p, &c, &err), WK_E_INVALID);
    CHECK(c == NULL && strstr(err.msg, "Q4_0") != NULL);
    wk_model_destroy(m);
}

/* ------------------------------------------------ a direct computation */

static const float *weights(const struct wk_model *m, const char *fmt, int il)
{
    char name[96];
    snprintf(name, sizeof name, fmt, il);
    const struct wk_gguf_tensor *t = wk_gguf_find_tensor(wk_model_gguf(m), name);
    WK_ASSERT(t && t->t.dtype == WK_DTYPE_F32);
    return t->t.data;
}

/* y [rows] = W x for W [rows][cols] f32 (a GGUF matrix: ne = {cols, rows}) */
static void mv(const float *w, int rows, int cols, const double *x, double *y)
{
    for (int r = 0; r < rows; r++) {
        double s = 0;
        for (int i = 0; i < cols; i++) s += (double)w[(size_t)r * cols + i] * x[i];
        y[r] = s;
    }
}

static void rms(double *x, int n, const float *g, double eps)
{
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double r = 1 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) x[i] *= r * g[i];
}

/* NEOX RoPE (pairs i, i + D/2) at position pos, base `base`, over D dims */
static void rope(double *v, int D, int pos, double base)
{
    for (int i = 0; i < D / 2; i++) {
        double th = pos * pow(base, -2.0 * i / D), a = v[i], b = v[i + D / 2];
        v[i] = a * cos(th) - b * sin(th);
        v[i + D / 2] = a * sin(th) + b * cos(th);
    }
}

/* Gemma 3's forward (architectures.md §3) over n tokens at positions
 * 0..n-1, with a causal or a bidirectional mask, every row's logits into
 * out [n][V]: embeddings · sqrt(E); per layer RMSNorm, Q, K, V, per-head
 * RMSNorm of q and k, RoPE (base 1e6: the tiny file names none), q /
 * sqrt(D), softmax attention with GQA, output, post-attention RMSNorm,
 * residual; RMSNorm, GELU(tanh)(gate) · up, down, post-FFN RMSNorm,
 * residual; final RMSNorm and the tied embeddings. No sliding window. */
static void direct_forward(const struct wk_model *m, const int32_t *tok, int n, bool bidirectional, double *out)
{
    const struct wk_hparams *hp = wk_model_hparams(m);
    const int E = hp->n_embd, H = hp->n_head, Hk = hp->n_head_kv, D = hp->head_dim, F = hp->n_ff, V = hp->n_vocab;
    const double eps = hp->rms_eps;
    double *x = calloc((size_t)n * E, 8), *xn = calloc(E, 8), *q = calloc((size_t)n * H * D, 8);
    double *k = calloc((size_t)n * Hk * D, 8), *v = calloc((size_t)n * Hk * D, 8), *att = calloc((size_t)H * D, 8);
    double *o = calloc(E, 8), *g = calloc(F, 8), *u = calloc(F, 8), *p = calloc(n, 8);
    const float *emb = weights(m, "token_embd.weight", 0);
    for (int t = 0; t < n; t++)
        for (int i = 0; i < E; i++) x[t * E + i] = emb[(size_t)tok[t] * E + i] * sqrt((double)E);
    for (int il = 0; il < hp->n_layer; il++) {
        for (int t = 0; t < n; t++) {
            memcpy(xn, x + t * E, (size_t)E * 8);
            rms(xn, E, weights(m, "blk.%d.attn_norm.weight", il), eps);
            mv(weights(m, "blk.%d.attn_q.weight", il), H * D, E, xn, q + t * H * D);
            mv(weights(m, "blk.%d.attn_k.weight", il), Hk * D, E, xn, k + t * Hk * D);
            mv(weights(m, "blk.%d.attn_v.weight", il), Hk * D, E, xn, v + t * Hk * D);
            for (int h = 0; h < H; h++) {
                rms(q + (t * H + h) * D, D, weights(m, "blk.%d.attn_q_norm.weight", il), eps);
                rope(q + (t * H + h) * D, D, t, 1e6);
                for (int i = 0; i < D; i++) q[(t * H + h) * D + i] /= sqrt((double)D);
            }
            for (int h = 0; h < Hk; h++) {
                rms(k + (t * Hk + h) * D, D, weights(m, "blk.%d.attn_k_norm.weight", il), eps);
                rope(k + (t * Hk + h) * D, D, t, 1e6);
            }
        }
        for (int t = 0; t < n; t++) {
            const int last = bidirectional ? n - 1 : t;
            for (int h = 0; h < H; h++) {
                const int gk = h / (H / Hk);
                double mx = -INFINITY, sum = 0;
                for (int s = 0; s <= last; s++) {
                    double d = 0;
                    for (int i = 0; i < D; i++) d += q[(t * H + h) * D + i] * k[(s * Hk + gk) * D + i];
                    p[s] = d;
                    mx = fmax(mx, d);
                }
                for (int s = 0; s <= last; s++) sum += p[s] = exp(p[s] - mx);
                for (int i = 0; i < D; i++) {
                    double a = 0;
                    for (int s = 0; s <= last; s++) a += p[s] / sum * v[(s * Hk + gk) * D + i];
                    att[h * D + i] = a;
                }
            }
            mv(weights(m, "blk.%d.attn_output.weight", il), E, H * D, att, o);
            rms(o, E, weights(m, "blk.%d.post_attention_norm.weight", il), eps);
            for (int i = 0; i < E; i++) x[t * E + i] += o[i];
        }
        for (int t = 0; t < n; t++) {
            memcpy(xn, x + t * E, (size_t)E * 8);
            rms(xn, E, weights(m, "blk.%d.ffn_norm.weight", il), eps);
            mv(weights(m, "blk.%d.ffn_gate.weight", il), F, E, xn, g);
            mv(weights(m, "blk.%d.ffn_up.weight", il), F, E, xn, u);
            for (int i = 0; i < F; i++)
                g[i] = 0.5 * g[i] * (1 + tanh(sqrt(2 / M_PI) * (g[i] + 0.044715 * g[i] * g[i] * g[i]))) * u[i];
            mv(weights(m, "blk.%d.ffn_down.weight", il), E, F, g, o);
            rms(o, E, weights(m, "blk.%d.post_ffw_norm.weight", il), eps);
            for (int i = 0; i < E; i++) x[t * E + i] += o[i];
        }
    }
    for (int t = 0; t < n; t++) {
        memcpy(xn, x + t * E, (size_t)E * 8);
        rms(xn, E, weights(m, "output_norm.weight", 0), eps);
        mv(emb, V, E, xn, out + (size_t)t * V);
    }
    free(x), free(xn), free(q), free(k), free(v), free(att), free(o), free(g), free(u), free(p);
}

/* max |a - b| over n values, against the largest |b| */
static double rel_diff(const float *a, const double *b, size_t n)
{
    double d = 0, mx = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i])), mx = fmax(mx, fabs(b[i]));
    return d / mx;
}

static void test_bidirectional_against_direct(void)
{
    struct tiny_spec sp = tiny_spec_default();
    struct wk_model *m = load(&sp);
    const int V = wk_model_hparams(m)->n_vocab, n = 10;
    float *got = malloc((size_t)V * n * 4);
    double *want = malloc((size_t)V * n * 8), *causal = malloc((size_t)V * n * 8);
    /* the direct computation agrees with wick's causal forward ... */
    struct wk_context *c = ctx_new(m, 2, 512);
    direct_forward(m, g_a, n, false, causal);
    CHECK_EQ_INT(wk_context_decode_all(c, g_a, n, got, NULL, NULL), WK_OK);
    double d = rel_diff(got, causal, (size_t)V * n);
    CHECK(d < 2e-5);
    /* ... and the bidirectional batch (sequence 1, beside a causal
     * sequence 0 untouched by it) agrees with its bidirectional form */
    direct_forward(m, g_a, n, true, want);
    int32_t pos[10], seq[10];
    for (int i = 0; i < n; i++) pos[i] = i, seq[i] = 1;
    struct wk_batch b = {.n_tokens = n, .tokens = g_a, .pos = pos, .seq_id = seq, .bidirectional = true};
    CHECK_EQ_INT(wk_context_decode_batch(c, &b, got, NULL, NULL), WK_OK);
    double db = rel_diff(got, want, (size_t)V * n);
    CHECK(db < 2e-5);
    /* every row but the last sees later tokens: the masks really differ */
    CHECK(rel_diff(got, causal, (size_t)V) > 1e-2);
    if (d >= 2e-5 || db >= 2e-5) fprintf(stderr, "  causal %.3g, bidirectional %.3g\n", d, db);
    wk_context_destroy(c);
    free(got), free(want), free(causal);
    wk_model_destroy(m);
}

/* ------------------------------------------------------ bad batches */

static void test_bad_batches(void)
{
    struct tiny_spec sp = tiny_spec_default();
    struct wk_model *m = load(&sp);
    struct wk_context *c = ctx_new(m, 2, 8);
    struct wk_error err;
    float *l = malloc(300 * 4 * 16);
    int32_t tok[3] = {5, 6, 7}, pos[3] = {0, 1, 2}, seq[3] = {0, 0, 0};
    struct wk_batch b = {.n_tokens = 3, .tokens = tok, .pos = pos, .seq_id = seq};
    seq[2] = 2;
    CHECK_EQ_INT(wk_context_decode_batch(c, &b, l, NULL, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "sequence 2 is outside 0..1");
    seq[2] = 0, pos[2] = 3;
    CHECK_EQ_INT(wk_context_decode_batch(c, &b, l, NULL, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "position 3, but sequence 0 continues at 2");
    pos[2] = 2, tok[1] = 300;
    CHECK_EQ_INT(wk_context_decode_batch(c, &b, l, NULL, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "token id 300 is outside the vocabulary");
    tok[1] = 6;
    CHECK_EQ_INT(wk_context_decode_batch(c, &b, NULL, NULL, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "nowhere to put them");
    int32_t many[16] = {0}, mpos[16], mseq[16] = {0};
    for (int i = 0; i < 16; i++) mpos[i] = i;
    struct wk_batch big = {.n_tokens = 16, .tokens = many, .pos = mpos, .seq_id = mseq, .bidirectional = true};
    CHECK_EQ_INT(wk_context_decode_batch(c, &big, l, NULL, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "at most n_ubatch (8)");
    CHECK_EQ_INT(wk_context_seq_n_past(c, 0), 0);
    /* a sequence that would outgrow the context: nothing runs */
    CHECK_EQ_INT(wk_context_decode(c, many, 16, NULL, NULL, NULL), WK_OK);
    CHECK_EQ_INT(wk_context_seq_copy(c, 0, 1, 16), 16);
    int32_t fill[48] = {0};
    CHECK_EQ_INT(wk_context_decode(c, fill, 48, NULL, NULL, NULL), WK_OK);
    pos[0] = 64, pos[1] = 16, seq[1] = 1, seq[2] = 1, pos[2] = 17;
    CHECK_EQ_INT(wk_context_decode_batch(c, &b, l, NULL, &err), WK_E_RANGE);
    CHECK_CONTAINS(err.msg, "sequence 0 does not fit");
    CHECK_EQ_INT(wk_context_seq_n_past(c, 1), 16);
    struct wk_context_params p = wk_context_params_default();
    p.n_seq_max = WK_SEQ_MAX + 1;
    struct wk_context *c2;
    CHECK_EQ_INT(wk_context_create(m, &p, &c2, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "sequences asked for");
    wk_context_destroy(c);
    free(l);
    wk_model_destroy(m);
}

static void test_no_leaks(void)
{
    int64_t base = wk_alloc_live_bytes();
    check_two_sequences_alone(&(struct tiny_spec){.n_embd = 32, .n_layer = 2, .n_head = 4, .n_head_kv = 2,
                                                  .head_dim = 8, .n_ff = 64, .n_vocab = 300, .seed = 3},
                              512, 7);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
}

CHECK_MAIN(TEST(test_two_sequences_equal_alone), TEST(test_two_sequences_rings), TEST(test_f16_cache), TEST(test_q8_0_cache),
           TEST(test_bidirectional_against_direct), TEST(test_bad_batches), TEST(test_no_leaks))
