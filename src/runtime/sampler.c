/*
 * sampler.c - next-token selection with Ollama's options and transform
 * order (docs/reference/ollama-mlx-runner.md §4.2): OpenAI's
 * logit_bias, the repeat/presence/frequency penalties over a ring of the
 * last repeat_last_n tokens (prompt included), then greedy when the
 * temperature is 0; otherwise top_k, temperature and softmax, top_p,
 * min_p, renormalise, draw.
 *
 * Randomness: seeded samplers derive each draw's key from (seed, counter)
 * with SplitMix64 (Steele et al. 2014), so a seed fixes the sequence;
 * unseeded ones take the seed from the clock.
 */
#include "wk_runtime.h"

#include "../cpu/wk_cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Candidates are struct wk_token_prob: an id and its logit, then its
 * probability, in .p. */

struct wk_sampler {
    struct wk_sampler_params p; /* p.logit_bias points at bias below */
    int32_t n_vocab;
    uint64_t seed, counter;
    struct wk_token_prob *cands;         /* [n_vocab] scratch */
    float *work;                /* [n_vocab] the transformed logits, when any transform is on */
    struct wk_logit_bias *bias; /* [p.n_logit_bias] */
    int32_t window;             /* penalty window; 0 when no penalty is active */
    int32_t ring_len;           /* window + WK_SAMPLER_POP_MAX */
    int32_t *ring;              /* [ring_len] the last tokens, oldest overwritten */
    int32_t *sorted;            /* [window] scratch */
    int64_t n_hist;             /* tokens ever appended since set_history */
};

struct wk_sampler_params wk_sampler_params_default(void)
{
    return (struct wk_sampler_params){.temperature = 0.8f, .top_k = 40, .top_p = 0.9f,
                                      .min_p = 0.0f, .seed = -1, .repeat_last_n = 64,
                                      .repeat_penalty = 1.0f};
}

enum wk_status wk_sampler_create(const struct wk_sampler_params *p, int32_t n_vocab, int32_t n_ctx,
                                 struct wk_sampler **out, struct wk_error *err)
{
    *out = NULL;
    if (p->repeat_last_n < -1)
        return wk_error_set(err, WK_E_INVALID, "repeat_last_n %d must be >= -1", p->repeat_last_n);
    if (!isfinite(p->repeat_penalty) || !isfinite(p->presence_penalty) ||
        !isfinite(p->frequency_penalty))
        return wk_error_set(err, WK_E_INVALID, "penalties must be finite numbers");
    if (p->n_logit_bias < 0 || (p->n_logit_bias > 0 && !p->logit_bias))
        return wk_error_set(err, WK_E_INVALID, "logit_bias: bad entry count");
    for (int32_t i = 0; i < p->n_logit_bias; i++) {
        if (p->logit_bias[i].id < 0 || p->logit_bias[i].id >= n_vocab)
            return wk_error_set(err, WK_E_INVALID, "logit_bias: token %d is not in the vocabulary (0..%d)",
                                p->logit_bias[i].id, n_vocab - 1);
        if (!isfinite(p->logit_bias[i].bias))
            return wk_error_set(err, WK_E_INVALID, "logit_bias: the bias of token %d is not a finite number",
                                p->logit_bias[i].id);
    }
    if (!(p->temperature >= 0) || p->temperature > 1e6f)
        return wk_error_set(err, WK_E_INVALID, "temperature %g must be >= 0", p->temperature);
    if (!(p->top_p >= 0 && p->top_p <= 1))
        return wk_error_set(err, WK_E_INVALID, "top_p %g must be between 0 and 1", p->top_p);
    if (!(p->min_p >= 0 && p->min_p <= 1))
        return wk_error_set(err, WK_E_INVALID, "min_p %g must be between 0 and 1", p->min_p);
    if (p->top_k < 0)
        return wk_error_set(err, WK_E_INVALID, "top_k %d must be >= 0", p->top_k);
    /* Ollama's normalisation (§4.1): no active penalty, no window */
    const float rp = p->repeat_penalty <= 0 ? 1.0f : p->repeat_penalty;
    int32_t window = p->repeat_last_n < 0 ? n_ctx : p->repeat_last_n;
    if (rp == 1.0f && p->presence_penalty == 0 && p->frequency_penalty == 0) window = 0;
    if (window < 0) window = 0;
    struct wk_sampler *s = wk_calloc(1, sizeof *s);
    bool ok = s && (s->cands = wk_malloc((size_t)n_vocab * sizeof *s->cands));
    if (ok && (window > 0 || p->n_logit_bias > 0))
        ok = (s->work = wk_malloc((size_t)n_vocab * sizeof *s->work)) != NULL;
    if (ok && window > 0)
        ok = (s->ring = wk_malloc((size_t)(window + WK_SAMPLER_POP_MAX) * sizeof *s->ring)) &&
             (s->sorted = wk_malloc((size_t)window * sizeof *s->sorted));
    if (ok && p->n_logit_bias > 0) {
        ok = (s->bias = wk_malloc((size_t)p->n_logit_bias * sizeof *s->bias)) != NULL;
        if (ok) memcpy(s->bias, p->logit_bias, (size_t)p->n_logit_bias * sizeof *s->bias);
    }
    if (!ok) {
        wk_sampler_destroy(s);
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    s->p = *p;
    s->p.repeat_penalty = rp;
    s->p.logit_bias = s->bias;
    s->window = window;
    s->ring_len = window + WK_SAMPLER_POP_MAX;
    s->n_vocab = n_vocab;
    s->seed = p->seed >= 0 ? (uint64_t)p->seed : (uint64_t)wk_time_ns() ^ ((uint64_t)getpid() << 32);
    *out = s;
    return WK_OK;
}

void wk_sampler_destroy(struct wk_sampler *s)
{
    if (!s) return;
    wk_free(s->cands);
    wk_free(s->work);
    wk_free(s->ring);
    wk_free(s->sorted);
    wk_free(s->bias);
    wk_free(s);
}

void wk_sampler_push(struct wk_sampler *s, int32_t id)
{
    if (s->window == 0) return;
    s->ring[s->n_hist % s->ring_len] = id;
    s->n_hist++;
}

void wk_sampler_pop(struct wk_sampler *s, int32_t n)
{
    if (s->window == 0) return;
    /* the ring keeps POP_MAX entries beyond the window, so the window is
     * whole again after popping up to that many */
    WK_ASSERT(n >= 0 && n <= WK_SAMPLER_POP_MAX && n <= s->n_hist);
    s->n_hist -= n;
}

void wk_sampler_set_history(struct wk_sampler *s, const int32_t *tokens, int64_t n)
{
    s->n_hist = 0;
    int64_t keep = (int64_t)s->window + WK_SAMPLER_POP_MAX;
    for (int64_t i = n > keep ? n - keep : 0; i < n; i++) wk_sampler_push(s, tokens[i]);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void wk_sampler_transform(const struct wk_sampler *s, const float *logits, float *out)
{
    if (out != logits) memcpy(out, logits, (size_t)s->n_vocab * sizeof *out);
    for (int32_t i = 0; i < s->p.n_logit_bias; i++) out[s->bias[i].id] += s->bias[i].bias;
    const int32_t n = (int32_t)WK_MIN(s->n_hist, (int64_t)s->window);
    if (n == 0) return;
    /* runs of equal ids in the sorted window: each distinct token once */
    for (int32_t i = 0; i < n; i++) s->sorted[i] = s->ring[(s->n_hist - n + i) % s->ring_len];
    qsort(s->sorted, (size_t)n, sizeof *s->sorted, cmp_i32);
    const struct wk_sampler_params *p = &s->p;
    for (int32_t i = 0; i < n;) {
        int32_t j = i;
        while (j < n && s->sorted[j] == s->sorted[i]) j++;
        float v = out[s->sorted[i]];
        v = v < 0 ? v * p->repeat_penalty : v / p->repeat_penalty;
        v -= p->presence_penalty;
        v -= (float)(j - i) * p->frequency_penalty;
        out[s->sorted[i]] = v;
        i = j;
    }
}

/* A uniform double in [0, 1) from the draw key (seed, counter). */
static double next_uniform(struct wk_sampler *s)
{
    uint64_t z = s->seed + (++s->counter) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static int cmp_desc(const void *a, const void *b)
{
    const struct wk_token_prob *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Min-heap on v (ties: larger id is "smaller", so lower ids survive). */
static bool heap_less(const struct wk_token_prob *a, const struct wk_token_prob *b)
{
    return a->p < b->p || (a->p == b->p && a->id > b->id);
}

static void sift_down(struct wk_token_prob *h, int32_t n, int32_t i)
{
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && heap_less(&h[l], &h[m])) m = l;
        if (r < n && heap_less(&h[r], &h[m])) m = r;
        if (m == i) return;
        struct wk_token_prob t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Keeps the k highest logits in cands[0..k), sorted descending. */
static int32_t select_top_k(struct wk_sampler *s, const float *logits, int32_t k, struct wk_token_prob *h)
{
    for (int32_t i = 0; i < k; i++) h[i] = (struct wk_token_prob){i, logits[i]};
    for (int32_t i = k / 2 - 1; i >= 0; i--) sift_down(h, k, i);
    for (int32_t i = k; i < s->n_vocab; i++) {
        struct wk_token_prob c = {i, logits[i]};
        if (heap_less(&h[0], &c)) {
            h[0] = c;
            sift_down(h, k, 0);
        }
    }
    qsort(h, (size_t)k, sizeof *h, cmp_desc);
    return k;
}

/* The first index of the largest of x [n] (NaNs never win; 0 when all are
 * NaN). The max first (the kernel table's max_f32, in independent running
 * maxima), then its first occurrence: one compare-and-select chain through
 * the best index waits on each load, ~1.8 ns an element, and greedy
 * speculative decoding takes k + 1 argmaxes of a 262,144-token vocabulary
 * a round. (Where +0 and -0 are the largest, either compares equal to
 * both, so the first of them wins as before.) */
static int32_t argmax(const float *x, int32_t n)
{
    const float m = wk_cpu_kernels_get()->max_f32(n, x);
    for (int32_t i = 0; i < n; i++)
        if (x[i] == m) return i;
    return 0;
}

/* The distribution of the transformed logits into c [n_vocab]; returns
 * its length (wk_sampler_dist has the rules). */
static int32_t dist_transformed(struct wk_sampler *s, const float *logits, struct wk_token_prob *c)
{
    const struct wk_sampler_params *p = &s->p;
    if (p->temperature == 0 || p->top_k == 1) {
        c[0] = (struct wk_token_prob){argmax(logits, s->n_vocab), 1.0f};
        return 1;
    }
    int32_t n;
    if (p->top_k > 0 && p->top_k < s->n_vocab) {
        n = select_top_k(s, logits, p->top_k, c);
    } else {
        n = s->n_vocab;
        for (int32_t i = 0; i < n; i++) c[i] = (struct wk_token_prob){i, logits[i]};
        qsort(c, (size_t)n, sizeof *c, cmp_desc);
    }
    /* softmax with temperature, in descending order so c[0] is the max */
    double sum = 0;
    const float mx = c[0].p; /* kept: c[0].p is overwritten first */
    for (int32_t i = 0; i < n; i++) {
        c[i].p = expf((c[i].p - mx) / p->temperature);
        sum += c[i].p;
    }
    for (int32_t i = 0; i < n; i++) c[i].p = (float)(c[i].p / sum);
    if (p->top_p > 0 && p->top_p < 1) {
        double cum = 0;
        int32_t keep = 0;
        while (keep < n && (keep == 0 || cum < p->top_p)) cum += c[keep++].p;
        n = keep;
    }
    if (p->min_p > 0 && p->min_p <= 1) {
        float thr = c[0].p * p->min_p;
        int32_t keep = 1;
        while (keep < n && c[keep].p >= thr) keep++;
        n = keep;
    }
    double total = 0;
    for (int32_t i = 0; i < n; i++) total += c[i].p;
    for (int32_t i = 0; i < n; i++) c[i].p = (float)(c[i].p / total);
    return n;
}

int32_t wk_sampler_dist(struct wk_sampler *s, const float *logits, struct wk_token_prob *out)
{
    if (s->work) {
        wk_sampler_transform(s, logits, s->work);
        logits = s->work;
    }
    return dist_transformed(s, logits, out);
}

bool wk_sampler_is_greedy(const struct wk_sampler *s)
{
    return s->p.temperature == 0 || s->p.top_k == 1;
}

double wk_sampler_uniform(struct wk_sampler *s)
{
    return next_uniform(s);
}

int32_t wk_sampler_draw(struct wk_sampler *s, const struct wk_token_prob *d, int32_t n)
{
    WK_ASSERT(n >= 1);
    if (n == 1) return d[0].id; /* no draw: greedy stays free of randomness */
    double total = 0;
    for (int32_t i = 0; i < n; i++) total += d[i].p;
    double u = next_uniform(s) * total, acc = 0;
    for (int32_t i = 0; i < n; i++) {
        acc += d[i].p;
        if (u < acc) return d[i].id;
    }
    return d[n - 1].id;
}

int32_t wk_sampler_sample(struct wk_sampler *s, const float *logits)
{
    int32_t n = wk_sampler_dist(s, logits, s->cands);
    int32_t id = wk_sampler_draw(s, s->cands, n);
    wk_sampler_push(s, id);
    return id;
}

/* ---------------------------------------------------------------- slots */

struct slot {
    int32_t id;
    struct wk_sampler *s;
};

struct wk_sampler_slots {
    int32_t n_vocab, n_ctx;
    struct slot *v;
    int32_t n, cap;
};

enum wk_status wk_sampler_slots_create(int32_t n_vocab, int32_t n_ctx, struct wk_sampler_slots **out,
                                       struct wk_error *err)
{
    *out = wk_calloc(1, sizeof **out);
    if (!*out) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    (*out)->n_vocab = n_vocab;
    (*out)->n_ctx = n_ctx;
    return WK_OK;
}

void wk_sampler_slots_destroy(struct wk_sampler_slots *s)
{
    if (!s) return;
    for (int32_t i = 0; i < s->n; i++) wk_sampler_destroy(s->v[i].s);
    wk_free(s->v);
    wk_free(s);
}

static struct slot *find_slot(struct wk_sampler_slots *s, int32_t id)
{
    for (int32_t i = 0; i < s->n; i++)
        if (s->v[i].id == id) return &s->v[i];
    return NULL;
}

enum wk_status wk_sampler_slots_add(struct wk_sampler_slots *s, int32_t id,
                                    const struct wk_sampler_params *p, const int32_t *prompt,
                                    int64_t n_prompt, struct wk_error *err)
{
    if (find_slot(s, id)) return wk_error_set(err, WK_E_INVALID, "slot %d is already registered", id);
    if (s->n == s->cap) {
        int32_t cap = s->cap ? 2 * s->cap : 4;
        struct slot *v = wk_realloc(s->v, (size_t)cap * sizeof *v);
        if (!v) return wk_error_set(err, WK_E_NOMEM, "out of memory");
        s->v = v, s->cap = cap;
    }
    struct wk_sampler *smp;
    enum wk_status st = wk_sampler_create(p, s->n_vocab, s->n_ctx, &smp, err);
    if (st) return st;
    wk_sampler_set_history(smp, prompt, n_prompt);
    s->v[s->n++] = (struct slot){id, smp};
    return WK_OK;
}

enum wk_status wk_sampler_slots_remove(struct wk_sampler_slots *s, int32_t id, struct wk_error *err)
{
    struct slot *sl = find_slot(s, id);
    if (!sl) return wk_error_set(err, WK_E_NOT_FOUND, "slot %d is not registered", id);
    wk_sampler_destroy(sl->s);
    *sl = s->v[--s->n];
    return WK_OK;
}

enum wk_status wk_sampler_slots_sample(struct wk_sampler_slots *s, const int32_t *ids, int32_t n,
                                       const float *logits, int32_t *out, struct wk_error *err)
{
    for (int32_t i = 0; i < n; i++) {
        if (!find_slot(s, ids[i])) return wk_error_set(err, WK_E_NOT_FOUND, "slot %d is not registered", ids[i]);
        for (int32_t j = 0; j < i; j++)
            if (ids[j] == ids[i]) return wk_error_set(err, WK_E_INVALID, "slot %d is named twice", ids[i]);
    }
    for (int32_t i = 0; i < n; i++)
        out[i] = wk_sampler_sample(find_slot(s, ids[i])->s, logits + (size_t)i * (size_t)s->n_vocab);
    return WK_OK;
}
