/*
 * jinja_track.c - the per-thread bookkeeping of a render of the Jinja
 * engine: the render in progress (so that code without the render state
 * at hand, such as a growing buffer or an equality test, can charge its
 * work and report a limit passed), its work budget, and the marks kept on
 * jansson arrays and objects: which arrays are tuples, and how deeply a
 * list or dict nests (depth 1: no list or dict inside), so that no value
 * nests deeper than WK_JINJA_MAX_NESTING (jansson frees and the walkers
 * print and compare values recursively).
 *
 * The marks are an open-addressing table keyed by address; each entry
 * holds a reference, so an address is never reused while it is marked;
 * when the table fills up, entries only it still references are dropped.
 */
#include "jinja_int.h"

#include <string.h>

_Thread_local struct jctx *jinja_active_ctx;

struct mark {
    json_t *j;
    uint32_t depth; /* 0: not known */
    bool tuple;
};

struct marks {
    struct mark *v;
    size_t n, cap;
    bool active;
};
static _Thread_local struct marks g_marks;

bool jinja_over_budget(struct jctx *c)
{
    if (!c->st) jinja_fail(c, WK_E_RANGE, "template too expensive: more than %lld steps", WK_JINJA_MAX_STEPS);
    return false;
}

void jinja_too_large(struct jctx *c, const char *what, unsigned long long n)
{
    if (c && !c->st)
        jinja_fail(c, WK_E_RANGE, "%s larger than the limit (%llu bytes; the limit is %zu)", what, n, WK_JINJA_MAX_OUTPUT);
}

bool jinja_items_ok(struct jctx *c, unsigned long long n)
{
    if (n <= WK_JINJA_MAX_ITEMS) return true;
    if (c && !c->st) jinja_fail(c, WK_E_RANGE, "list too long (%llu items; the limit is %d)", n, WK_JINJA_MAX_ITEMS);
    return false;
}

static size_t slot(const json_t *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 17;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 24) & (cap - 1);
}

static struct mark *find(const json_t *a)
{
    if (!g_marks.n) return NULL;
    for (size_t i = slot(a, g_marks.cap); g_marks.v[i].j; i = (i + 1) & (g_marks.cap - 1))
        if (g_marks.v[i].j == a) return &g_marks.v[i];
    return NULL;
}

static void put(struct mark *v, size_t cap, struct mark m)
{
    size_t i = slot(m.j, cap);
    while (v[i].j) i = (i + 1) & (cap - 1);
    v[i] = m;
}

/* The entry of a, added (holding a reference) if a has none; NULL when
 * marks are off or memory runs out. */
static struct mark *mark_of(json_t *a)
{
    struct marks *t = &g_marks;
    struct mark *m = find(a);
    if (m || !a || !t->active) return m;
    if ((t->n + 1) * 2 > t->cap) {
        size_t live = 0;
        for (size_t i = 0; i < t->cap; i++) live += t->v[i].j && t->v[i].j->refcount > 1;
        size_t cap = 64;
        while (cap < (live + 1) * 4) cap *= 2;
        struct mark *v = wk_calloc(cap, sizeof *v);
        if (!v) return NULL;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->v[i].j) continue;
            if (t->v[i].j->refcount > 1) put(v, cap, t->v[i]);
            else json_decref(t->v[i].j);
        }
        wk_free(t->v);
        t->v = v, t->cap = cap, t->n = live;
    }
    put(t->v, t->cap, (struct mark){.j = json_incref(a)});
    t->n++;
    return find(a);
}

void jinja_track_begin(struct jctx *c)
{
    c->saved_active = jinja_active_ctx;
    jinja_active_ctx = c;
    g_marks = (struct marks){.active = true};
}

void jinja_track_end(struct jctx *c)
{
    for (size_t i = 0; i < g_marks.cap; i++)
        if (g_marks.v[i].j) json_decref(g_marks.v[i].j);
    wk_free(g_marks.v);
    g_marks = (struct marks){0};
    jinja_active_ctx = c->saved_active;
}

bool jinja_is_tuple(const json_t *a)
{
    const struct mark *m = find(a);
    return m && m->tuple;
}

void jinja_mark_tuple(json_t *a)
{
    struct mark *m = a ? mark_of(a) : NULL;
    if (m) m->tuple = true;
}

/* How deeply j nests (0: not a list or dict), at most WK_JINJA_MAX_NESTING
 * + 1 (too deep); level: how deep the walk is. Exact depths of 2 and more
 * are remembered. */
static uint32_t depth_of(json_t *j, uint32_t level)
{
    if (!json_is_array(j) && !json_is_object(j)) return 0;
    struct mark *m = find(j);
    if (m && m->depth) return m->depth;
    if (level > WK_JINJA_MAX_NESTING) return WK_JINJA_MAX_NESTING + 1;
    uint32_t d = 0, k;
    if (json_is_array(j)) {
        size_t n = json_array_size(j);
        jinja_cost((long long)n, 0);
        for (size_t i = 0; i < n && d <= WK_JINJA_MAX_NESTING; i++)
            if ((k = depth_of(json_array_get(j, i), level + 1)) > d) d = k;
    } else {
        const char *key;
        json_t *val;
        jinja_cost((long long)json_object_size(j), 0);
        json_object_foreach(j, key, val) {
            if ((k = depth_of(val, level + 1)) > d) d = k;
            if (d > WK_JINJA_MAX_NESTING) break;
        }
    }
    if (d > WK_JINJA_MAX_NESTING) return WK_JINJA_MAX_NESTING + 1; /* too deep: not remembered (the walk stopped short) */
    if (++d >= 2 && (m = mark_of(j))) m->depth = d;
    return d;
}

bool jinja_nest_ok(struct jctx *c, json_t *j)
{
    if (!j || depth_of(j, 1) <= WK_JINJA_MAX_NESTING) return true;
    if (c && !c->st) jinja_fail(c, WK_E_RANGE, "a list or dict nested too deeply (more than %d levels)", WK_JINJA_MAX_NESTING);
    return false;
}
