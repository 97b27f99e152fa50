/*
 * gotmpl_prov.c - provenance for wk_gotmpl_render_runs: which strings of
 * the data are message content (a table of the jansson strings, by
 * pointer), the content spans of strings the functions make from them
 * (print, printf, json, slice: the table holds a reference to each, so no
 * pointer is reused while rendering), and the content spans the output
 * buffer records as values are written.
 */
#include "gotmpl_int.h"

#include <stdint.h>
#include <string.h>

struct ent {
    const json_t *v;     /* NULL: a free slot */
    struct gt_span one;  /* the span of a whole data string */
    struct gt_span *spans; /* NULL: just one */
    size_t n;            /* 0: no spans (a typed value) */
    bool owned; /* holds a reference to v */
    const struct gt_type *type; /* its Go type (NULL: none) */
    bool nil;                   /* a nil value of it */
};

/* A zero value made for a field or a struct type, kept for reuse. */
struct zero {
    const void *key;
    json_t *v;
};

struct gt_prov {
    struct ent *tab;
    size_t cap, used;
    struct zero *zeros;
    size_t n_zeros, cap_zeros;
};

static size_t slot(const struct gt_prov *p, const json_t *v)
{
    uint64_t h = (uint64_t)(uintptr_t)v * 0x9E3779B97F4A7C15ULL;
    size_t i = (size_t)(h >> 17) & (p->cap - 1);
    while (p->tab[i].v && p->tab[i].v != v) i = (i + 1) & (p->cap - 1);
    return i;
}

static bool grow(struct gt_prov *p)
{
    if ((p->used + 1) * 2 <= p->cap) return true;
    size_t cap = p->cap ? p->cap * 2 : 64;
    struct ent *old = p->tab;
    size_t old_cap = p->cap;
    struct ent *tab = wk_calloc(cap, sizeof *tab);
    if (!tab) return false;
    p->tab = tab, p->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].v) p->tab[slot(p, old[i].v)] = old[i];
    wk_free(old);
    return true;
}

/* Marks the whole of the data string v as content. */
static bool put_whole(struct gt_prov *p, const json_t *v)
{
    size_t n = json_string_length(v);
    if (n == 0) return true;
    if (!grow(p)) return false;
    struct ent *e = &p->tab[slot(p, v)];
    if (e->v) return true;
    *e = (struct ent){.v = v, .one = {0, n}, .n = 1};
    p->used++;
    return true;
}

static bool is_content_key(const char *k)
{
    static const char *const keys[] = {"Content",  "content",  "Prompt",   "prompt",      "System",
                                       "system",   "Response", "response", "Thinking",    "thinking",
                                       "Description", "description", "Suffix", "suffix"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(k, keys[i])) return true;
    return false;
}

static bool walk_data(struct gt_prov *p, const json_t *v, bool all, int depth)
{
    if (!v || depth > 4 * WK_GOTMPL_MAX_DEPTH) return true;
    if (json_is_string(v)) return !all || put_whole(p, v);
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!walk_data(p, json_array_get(v, i), all, depth + 1)) return false;
        return true;
    }
    if (!json_is_object(v)) return true;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val) {
        bool args = !strcmp(key, "Arguments") || !strcmp(key, "arguments");
        if (json_is_string(val) && !all && !args && is_content_key(key)) {
            if (!put_whole(p, val)) return false;
        } else if (!walk_data(p, val, all || args, depth + 1)) {
            return false;
        }
    }
    return true;
}

struct gt_prov *gt_prov_new(const json_t *data)
{
    struct gt_prov *p = wk_calloc(1, sizeof *p);
    if (p && !walk_data(p, data, false, 0)) gt_prov_free(p), p = NULL;
    return p;
}

void gt_prov_free(struct gt_prov *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->cap; i++) {
        if (!p->tab[i].v) continue;
        wk_free(p->tab[i].spans);
        if (p->tab[i].owned) json_decref((json_t *)p->tab[i].v);
    }
    for (size_t i = 0; i < p->n_zeros; i++) json_decref(p->zeros[i].v);
    wk_free(p->zeros);
    wk_free(p->tab);
    wk_free(p);
}

const struct gt_span *gt_prov_get(const struct gt_prov *p, const json_t *v, size_t *n)
{
    *n = 0;
    if (!p || !v || !p->cap || !json_is_string(v)) return NULL;
    const struct ent *e = &p->tab[slot(p, v)];
    if (!e->v || !e->n) return NULL;
    *n = e->n;
    return e->spans ? e->spans : &e->one;
}

bool gt_prov_add(struct gt_prov *p, json_t *v, struct gt_span *spans, size_t n)
{
    if (!p || !v || n == 0) {
        wk_free(spans);
        return true;
    }
    if (!grow(p)) {
        wk_free(spans);
        return false;
    }
    struct ent *e = &p->tab[slot(p, v)];
    if (e->v) { /* cannot happen: v is new and the table holds the old ones */
        wk_free(spans);
        return true;
    }
    *e = (struct ent){.v = json_incref(v), .spans = spans, .n = n, .owned = true};
    p->used++;
    return true;
}

/* ----------------------------------------------------------- Go types */

bool gt_prov_set_type(struct gt_prov *p, const json_t *v, const struct gt_type *ty, bool nil, bool own)
{
    if (!p || !v) return true;
    if (!grow(p)) return false;
    struct ent *e = &p->tab[slot(p, v)];
    if (!e->v) {
        *e = (struct ent){.v = own ? json_incref((json_t *)v) : v, .owned = own};
        p->used++;
    }
    e->type = ty, e->nil = nil;
    return true;
}

const struct gt_type *gt_prov_type(const struct gt_prov *p, const json_t *v, bool *nil)
{
    if (nil) *nil = false;
    if (!p || !v || !p->cap || json_is_string(v)) return NULL;
    const struct ent *e = &p->tab[slot(p, v)];
    if (!e->v || !e->type) return NULL;
    if (nil) *nil = e->nil;
    return e->type;
}

/* The zero value kept for key, or a new one (an empty array or object,
 * recorded as type ty, nil). */
static json_t *zero_of(struct gt_prov *p, const void *key, bool array, const struct gt_type *ty, bool nil,
                       bool *nomem)
{
    for (size_t i = 0; i < p->n_zeros; i++)
        if (p->zeros[i].key == key) return json_incref(p->zeros[i].v);
    if (p->n_zeros == p->cap_zeros) {
        size_t cap = p->cap_zeros ? 2 * p->cap_zeros : 8;
        struct zero *z = wk_realloc(p->zeros, cap * sizeof *z);
        if (!z) return *nomem = true, NULL;
        p->zeros = z, p->cap_zeros = cap;
    }
    json_t *made = array ? json_array() : json_object();
    if (!made || (ty && !gt_prov_set_type(p, made, ty, nil, false))) {
        json_decref(made);
        return *nomem = true, NULL;
    }
    p->zeros[p->n_zeros++] = (struct zero){key, made};
    return json_incref(made);
}

json_t *gt_prov_zero_struct(struct gt_prov *p, const struct gt_type *ty, bool *nomem)
{
    if (!p) return NULL;
    return zero_of(p, ty, false, ty, false, nomem);
}

json_t *gt_prov_zero(struct gt_prov *p, const struct gt_field *f, bool *nomem)
{
    switch (f->zero) {
    case GZ_STRING:
    case GZ_INT: {
        json_t *v = f->zero == GZ_STRING ? json_string("") : json_integer(0);
        if (!v) *nomem = true;
        return v;
    }
    case GZ_ANY: return NULL;
    case GZ_STRUCT: return gt_prov_zero_struct(p, f->type, nomem);
    default: break;
    }
    if (!p) return NULL;
    /* a nil slice, map or pointer: an empty array or object recorded nil */
    static const struct gt_type any_slice = {.name = "[]interface {}", .kind = GT_SLICE};
    const struct gt_type *ty = f->type ? f->type : f->zero == GZ_SLICE ? &any_slice : NULL;
    return zero_of(p, f, f->zero == GZ_SLICE, ty, true, nomem);
}

/* ------------------------------------------------------------ the buffer */

bool gt_buf_mark(struct gt_buf *b, size_t from, size_t to)
{
    if (!b->prov || to <= from || b->st != WK_OK) return true;
    if (b->n_spans) {
        struct gt_span *last = &b->spans[b->n_spans - 1];
        if (last->off + last->len == from) {
            last->len = to - last->off;
            return true;
        }
    }
    if (b->n_spans == b->cap_spans) {
        size_t cap = b->cap_spans ? b->cap_spans * 2 : 16;
        struct gt_span *s = wk_realloc(b->spans, cap * sizeof *s);
        if (!s) {
            b->st = WK_E_NOMEM;
            return false;
        }
        b->spans = s, b->cap_spans = cap;
    }
    b->spans[b->n_spans++] = (struct gt_span){from, to - from};
    return true;
}

bool gt_buf_add_marked(struct gt_buf *b, const char *s, size_t n, const struct gt_span *sp,
                       size_t n_sp)
{
    size_t at = 0;
    for (size_t k = 0; k < n_sp && at < n; k++) {
        size_t off = sp[k].off < n ? sp[k].off : n;
        size_t end = sp[k].off + sp[k].len < n ? sp[k].off + sp[k].len : n;
        if (off < at) off = at;
        if (end <= off) continue;
        if (!gt_buf_add(b, s + at, off - at)) return false;
        size_t from = b->n;
        if (!gt_buf_add(b, s + off, end - off) || !gt_buf_mark(b, from, b->n)) return false;
        at = end;
    }
    return gt_buf_add(b, s + at, n - at);
}

bool gt_span_has(const struct gt_span *sp, size_t n_sp, size_t *k, size_t i)
{
    while (*k < n_sp && sp[*k].off + sp[*k].len <= i) (*k)++;
    return *k < n_sp && sp[*k].off <= i;
}

void gt_buf_free(struct gt_buf *b)
{
    wk_free(b->p);
    wk_free(b->spans);
    b->p = NULL, b->spans = NULL;
}

enum wk_status gt_buf_runs(const struct gt_buf *b, size_t len, struct wk_gotmpl_run **runs,
                           size_t *n_runs)
{
    *runs = NULL, *n_runs = 0;
    if (len == 0) return WK_OK;
    struct wk_gotmpl_run *r = wk_malloc((2 * b->n_spans + 1) * sizeof *r);
    if (!r) return WK_E_NOMEM;
    size_t n = 0, at = 0;
    for (size_t k = 0; k < b->n_spans; k++) {
        const struct gt_span *s = &b->spans[k];
        if (s->off >= len) break;
        size_t end = s->off + s->len < len ? s->off + s->len : len;
        if (s->off > at) r[n++] = (struct wk_gotmpl_run){at, s->off - at, false};
        r[n++] = (struct wk_gotmpl_run){s->off, end - s->off, true};
        at = end;
    }
    if (at < len) r[n++] = (struct wk_gotmpl_run){at, len - at, false};
    *runs = r, *n_runs = n;
    return WK_OK;
}
