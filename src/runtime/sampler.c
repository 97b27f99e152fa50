/*
 * sampler.c - next-token selection with Ollama's options and transform
 * order (../shared/reference/ollama-mlx-runner.md §4.2): greedy when the
 * temperature is 0; otherwise top_k, temperature and softmax, top_p, min_p,
 * renormalise, draw. (Penalties and logit_bias are a later addition.)
 *
 * Randomness: seeded samplers derive each draw's key from (seed, counter)
 * with SplitMix64 (Steele et al. 2014), so a seed fixes the sequence;
 * unseeded ones take the seed from the clock.
 */
#include "wk_runtime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cand {
    int32_t id;
    float v; /* logit, then probability */
};

struct wk_sampler {
    struct wk_sampler_params p;
    int32_t n_vocab;
    uint64_t seed, counter;
    struct cand *cands; /* [n_vocab] scratch */
};

struct wk_sampler_params wk_sampler_params_default(void)
{
    return (struct wk_sampler_params){
        .temperature = 0.8f, .top_k = 40, .top_p = 0.9f, .min_p = 0.0f, .seed = -1};
}

enum wk_status wk_sampler_create(const struct wk_sampler_params *p, int32_t n_vocab,
                                 struct wk_sampler **out, struct wk_error *err)
{
    *out = NULL;
    if (!(p->temperature >= 0) || p->temperature > 1e6f)
        return wk_error_set(err, WK_E_INVALID, "temperature %g must be >= 0", p->temperature);
    if (!(p->top_p >= 0 && p->top_p <= 1))
        return wk_error_set(err, WK_E_INVALID, "top_p %g must be between 0 and 1", p->top_p);
    if (!(p->min_p >= 0 && p->min_p <= 1))
        return wk_error_set(err, WK_E_INVALID, "min_p %g must be between 0 and 1", p->min_p);
    if (p->top_k < 0)
        return wk_error_set(err, WK_E_INVALID, "top_k %d must be >= 0", p->top_k);
    struct wk_sampler *s = wk_calloc(1, sizeof *s);
    if (!s || !(s->cands = wk_malloc((size_t)n_vocab * sizeof *s->cands))) {
        wk_free(s);
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    s->p = *p;
    s->n_vocab = n_vocab;
    s->seed = p->seed >= 0 ? (uint64_t)p->seed : (uint64_t)wk_time_ns() ^ ((uint64_t)getpid() << 32);
    *out = s;
    return WK_OK;
}

void wk_sampler_destroy(struct wk_sampler *s)
{
    if (!s) return;
    wk_free(s->cands);
    wk_free(s);
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
    const struct cand *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Min-heap on v (ties: larger id is "smaller", so lower ids survive). */
static bool heap_less(const struct cand *a, const struct cand *b)
{
    return a->v < b->v || (a->v == b->v && a->id > b->id);
}

static void sift_down(struct cand *h, int32_t n, int32_t i)
{
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && heap_less(&h[l], &h[m])) m = l;
        if (r < n && heap_less(&h[r], &h[m])) m = r;
        if (m == i) return;
        struct cand t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Keeps the k highest logits in cands[0..k), sorted descending. */
static int32_t select_top_k(struct wk_sampler *s, const float *logits, int32_t k)
{
    struct cand *h = s->cands;
    for (int32_t i = 0; i < k; i++) h[i] = (struct cand){i, logits[i]};
    for (int32_t i = k / 2 - 1; i >= 0; i--) sift_down(h, k, i);
    for (int32_t i = k; i < s->n_vocab; i++) {
        struct cand c = {i, logits[i]};
        if (heap_less(&h[0], &c)) {
            h[0] = c;
            sift_down(h, k, 0);
        }
    }
    qsort(h, (size_t)k, sizeof *h, cmp_desc);
    return k;
}

int32_t wk_sampler_sample(struct wk_sampler *s, const float *logits)
{
    const struct wk_sampler_params *p = &s->p;
    if (p->temperature == 0 || p->top_k == 1) {
        int32_t best = 0;
        for (int32_t i = 1; i < s->n_vocab; i++)
            if (logits[i] > logits[best]) best = i;
        return best;
    }
    int32_t n;
    if (p->top_k > 0 && p->top_k < s->n_vocab) {
        n = select_top_k(s, logits, p->top_k);
    } else {
        n = s->n_vocab;
        for (int32_t i = 0; i < n; i++) s->cands[i] = (struct cand){i, logits[i]};
        qsort(s->cands, (size_t)n, sizeof *s->cands, cmp_desc);
    }
    struct cand *c = s->cands;
    /* softmax with temperature, in descending order so c[0] is the max */
    double sum = 0;
    for (int32_t i = 0; i < n; i++) {
        c[i].v = expf((c[i].v - c[0].v) / p->temperature);
        sum += c[i].v;
    }
    for (int32_t i = 0; i < n; i++) c[i].v = (float)(c[i].v / sum);
    if (p->top_p > 0 && p->top_p < 1) {
        double cum = 0;
        int32_t keep = 0;
        while (keep < n && (keep == 0 || cum < p->top_p)) cum += c[keep++].v;
        n = keep;
    }
    if (p->min_p > 0 && p->min_p <= 1) {
        float thr = c[0].v * p->min_p;
        int32_t keep = 1;
        while (keep < n && c[keep].v >= thr) keep++;
        n = keep;
    }
    double total = 0;
    for (int32_t i = 0; i < n; i++) total += c[i].v;
    double u = next_uniform(s) * total, acc = 0;
    for (int32_t i = 0; i < n; i++) {
        acc += c[i].v;
        if (u < acc) return c[i].id;
    }
    return c[n - 1].id;
}
