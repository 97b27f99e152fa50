/*
 * moe.c - the DeepSeek-V3-style expert router of GLM-4-MoE-Lite
 * (architectures.md §6.4 step 8; HF Glm4MoeLiteTopkRouter) and the top-k
 * selection it rests on.
 *
 * Which experts a token gets must be transformers', ties included: with
 * sigmoid scores plus a per-expert bias, equal keys happen (equal router
 * rows, a zero hidden state), and torch.topk does not break them by index.
 * On the CPU, torch (aten/src/ATen/native/TopKImpl.h, topk_impl_loop)
 * fills a vector of (value, index) pairs and runs std::partial_sort over
 * it when k·64 <= n, else std::nth_element at k - 1 (sorted=False: no
 * sort after), with the comparator "x is NaN and y is not, or x > y";
 * the first k pairs are the answer. The selection below is libstdc++'s
 * (bits/stl_algo.h, bits/stl_heap.h: introselect with median-of-three
 * pivots and an insertion sort under 4 elements, heap select when the
 * depth limit 2·floor(log2 n) runs out; partial_sort = heap select + sort
 * heap) step for step, so its ties fall where torch's do (checked against
 * torch.topk on 20,000 random tie-heavy vectors, n 2..300, when this was
 * written; tests/golden/glm4-moe-lite's router cases check it now).
 */
#include "model_internal.h"

#include <math.h>

struct pair {
    float v;
    int32_t i;
};

/* the comparator: a before b */
static inline bool before(struct pair a, struct pair b) { return (isnan(a.v) && !isnan(b.v)) || a.v > b.v; }

static inline void swap(struct pair *a, struct pair *b)
{
    struct pair t = *a;
    *a = *b;
    *b = t;
}

/* std::__adjust_heap then std::__push_heap, over a[0 .. len) */
static void adjust_heap(struct pair *a, int32_t hole, int32_t len, struct pair v)
{
    const int32_t top = hole;
    int32_t child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (before(a[child], a[child - 1])) child--;
        a[hole] = a[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        a[hole] = a[child - 1];
        hole = child - 1;
    }
    int32_t parent = (hole - 1) / 2;
    while (hole > top && before(a[parent], v)) {
        a[hole] = a[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    a[hole] = v;
}

static void make_heap(struct pair *a, int32_t len)
{
    if (len < 2) return;
    for (int32_t parent = (len - 2) / 2;; parent--) {
        adjust_heap(a, parent, len, a[parent]);
        if (parent == 0) return;
    }
}

/* std::__pop_heap: the top to *result, *result's value sifted in */
static void pop_heap(struct pair *a, int32_t len, struct pair *result)
{
    struct pair v = *result;
    *result = a[0];
    adjust_heap(a, 0, len, v);
}

static void heap_select(struct pair *a, int32_t middle, int32_t last)
{
    make_heap(a, middle);
    for (int32_t i = middle; i < last; i++)
        if (before(a[i], a[0])) pop_heap(a, middle, &a[i]);
}

static void insertion_sort(struct pair *a, int32_t first, int32_t last)
{
    if (first == last) return;
    for (int32_t i = first + 1; i < last; i++) {
        struct pair v = a[i];
        if (before(v, a[first])) {
            for (int32_t j = i; j > first; j--) a[j] = a[j - 1];
            a[first] = v;
        } else {
            int32_t j = i;
            while (before(v, a[j - 1])) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = v;
        }
    }
}

static void move_median_to_first(struct pair *a, int32_t result, int32_t x, int32_t y, int32_t z)
{
    if (before(a[x], a[y])) {
        if (before(a[y], a[z])) swap(&a[result], &a[y]);
        else if (before(a[x], a[z])) swap(&a[result], &a[z]);
        else swap(&a[result], &a[x]);
    } else if (before(a[x], a[z])) {
        swap(&a[result], &a[x]);
    } else if (before(a[y], a[z])) {
        swap(&a[result], &a[z]);
    } else {
        swap(&a[result], &a[y]);
    }
}

static int32_t unguarded_partition(struct pair *a, int32_t first, int32_t last, int32_t pivot)
{
    for (;;) {
        while (before(a[first], a[pivot])) first++;
        last--;
        while (before(a[pivot], a[last])) last--;
        if (!(first < last)) return first;
        swap(&a[first], &a[last]);
        first++;
    }
}

static void nth_element(struct pair *a, int32_t nth, int32_t n)
{
    int32_t first = 0, last = n, depth = 0;
    if (n == 0 || nth == n) return;
    for (int32_t m = n; m > 1; m >>= 1) depth++; /* std::__lg(n) */
    depth *= 2;
    while (last - first > 3) {
        if (depth == 0) {
            heap_select(a + first, nth + 1 - first, last - first);
            swap(&a[first], &a[nth]);
            return;
        }
        depth--;
        int32_t mid = first + (last - first) / 2;
        move_median_to_first(a, first, first + 1, mid, last - 1);
        int32_t cut = unguarded_partition(a, first + 1, last, first);
        if (cut <= nth) first = cut;
        else last = cut;
    }
    insertion_sort(a, first, last);
}

void wk__topk_torch(const float *v, int32_t n, int32_t k, int32_t *idx)
{
    WK_ASSERT(n >= 1 && n <= WK_MOE_MAX_EXPERTS && k >= 1 && k <= n);
    struct pair a[WK_MOE_MAX_EXPERTS];
    for (int32_t i = 0; i < n; i++) a[i] = (struct pair){v[i], i};
    if ((int64_t)k * 64 <= n) { /* std::partial_sort: heap select, then sort heap */
        heap_select(a, k, n);
        for (int32_t len = k; len > 1; len--) pop_heap(a, len - 1, &a[len - 1]);
    } else {
        nth_element(a, k - 1, n);
    }
    for (int32_t j = 0; j < k; j++) idx[j] = a[j].i;
}

void wk__moe_select_sigmoid(const float *logits, const float *bias, int32_t n_expert, int32_t k, bool norm,
                            float scale, int32_t *idx, float *w)
{
    float s[WK_MOE_MAX_EXPERTS], key[WK_MOE_MAX_EXPERTS];
    for (int32_t e = 0; e < n_expert; e++) {
        s[e] = 1.0f / (1.0f + expf(-logits[e]));
        key[e] = bias ? s[e] + bias[e] : s[e];
    }
    wk__topk_torch(key, n_expert, k, idx);
    float sum = 0;
    for (int32_t j = 0; j < k; j++) {
        w[j] = s[idx[j]];
        sum += w[j];
    }
    /* transformers: weights / (sum + 1e-20), then times the scale */
    for (int32_t j = 0; j < k; j++) w[j] = (norm ? w[j] / (sum + 1e-20f) : w[j]) * scale;
}

/* The k largest of v [n] into idx [k], largest first, ties to the lower
 * index: one pass keeping the best k in order (n + k per insertion at
 * worst, about n when k is small against n). */
void wk__top_k(const float *v, int32_t n, int32_t k, int32_t *idx)
{
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        if (m == k && !(v[i] > v[idx[k - 1]])) continue;
        int32_t j = m < k ? m++ : k - 1; /* the slot it takes, moved up past smaller values */
        while (j > 0 && v[i] > v[idx[j - 1]]) idx[j] = idx[j - 1], j--;
        idx[j] = i;
    }
}

/* (declared in model_internal.h) */
enum wk_status wk__moe_softmax_experts(struct wk_model *m, struct wk_layer *l, int i, const struct wk_tensor **tables,
                                       struct wk_error *err)
{
    const int64_t E = m->hp.n_embd, NE = m->hp.n_expert, FE = m->hp.n_ff_exp;
    enum wk_status st;
    l->moe.sigmoid = true; /* the experts on the FFN input (context.c) ... */
    l->moe.softmax_router = true; /* ... routed by softmax */
    if ((st = wk__tensor(m, &l->moe.router, false, false, E, NE, err, "blk.%d.ffn_gate_inp.weight", i)) ||
        (st = wk__tensor3(m, &l->moe.gate_up, true, E, 2 * FE, NE, err, "blk.%d.ffn_gate_up_exps.weight", i)) ||
        (!l->moe.gate_up &&
         (st = wk__tensor3(m, &l->moe.gate, true, E, FE, NE, err, "blk.%d.ffn_gate_exps.weight", i))))
        return st;
    if (l->moe.gate_up || l->moe.gate || !m->hf) {
        if ((!l->moe.gate_up &&
             ((st = wk__tensor3(m, &l->moe.gate, false, E, FE, NE, err, "blk.%d.ffn_gate_exps.weight", i)) ||
              (st = wk__tensor3(m, &l->moe.up, false, E, FE, NE, err, "blk.%d.ffn_up_exps.weight", i)))) ||
            (st = wk__tensor3(m, &l->moe.down, false, FE, E, NE, err, "blk.%d.ffn_down_exps.weight", i)))
            return st;
        return WK_OK;
    }
    static const char *const proj[3] = {"gate", "up", "down"};
    for (int p = 0; p < 3; p++)
        for (int64_t e = 0; e < NE; e++)
            if ((st = wk__tensor(m, &tables[p * NE + e], false, false, p < 2 ? E : FE, p < 2 ? FE : E, err,
                                 "blk.%d.ffn_%s_exps.%lld.weight", i, proj[p], (long long)e)))
                return st;
    l->moe.gate_e = tables;
    l->moe.up_e = tables + NE;
    l->moe.down_e = tables + 2 * NE;
    return WK_OK;
}
