/*
 * jinja_taint.c - provenance for wk_jinja_render_runs: which bytes of a
 * string came from the content strings of the variables. A per-thread
 * table, active only while a render that asked for runs is in progress,
 * maps a jansson string to one byte per byte of it (1: content); a string
 * not in the table has no content bytes. The table holds a reference to
 * each string it maps, so an address is never reused while it is mapped.
 */
#include "jinja_int.h"

#include <string.h>

struct tent {
    json_t *j;
    uint8_t *bits;
};

struct taint {
    struct tent *v;
    size_t n, cap;
    bool active;
};
static _Thread_local struct taint g_taint;

static size_t slot(const json_t *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 17;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 24) & (cap - 1);
}

static void put(struct tent *v, size_t cap, struct tent e)
{
    size_t i = slot(e.j, cap);
    while (v[i].j) i = (i + 1) & (cap - 1);
    v[i] = e;
}

void jinja_taint_begin(void) { g_taint = (struct taint){.active = true}; }

void jinja_taint_end(void)
{
    for (size_t i = 0; i < g_taint.cap; i++) {
        if (!g_taint.v[i].j) continue;
        json_decref(g_taint.v[i].j);
        wk_free(g_taint.v[i].bits);
    }
    wk_free(g_taint.v);
    g_taint = (struct taint){0};
}

bool jinja_taint_on(void) { return g_taint.active; }

const uint8_t *jinja_taint_get(const json_t *s)
{
    if (!g_taint.n || !s) return NULL;
    for (size_t i = slot(s, g_taint.cap); g_taint.v[i].j; i = (i + 1) & (g_taint.cap - 1))
        if (g_taint.v[i].j == s) return g_taint.v[i].bits;
    return NULL;
}

void jinja_taint_set(json_t *s, const uint8_t *bits)
{
    struct taint *t = &g_taint;
    size_t n = s ? json_string_length(s) : 0;
    if (!t->active || !s || !json_is_string(s) || jinja_taint_get(s)) return;
    bool any = !bits && n > 0;
    for (size_t i = 0; bits && i < n && !any; i++) any = bits[i] != 0;
    if (!any) return;
    if ((t->n + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct tent *v = wk_calloc(cap, sizeof *v);
        if (!v) return;
        for (size_t i = 0; i < t->cap; i++)
            if (t->v[i].j) put(v, cap, t->v[i]);
        wk_free(t->v);
        t->v = v, t->cap = cap;
    }
    uint8_t *b = wk_malloc(n);
    if (!b) return;
    if (bits) memcpy(b, bits, n);
    else memset(b, 1, n);
    put(t->v, t->cap, (struct tent){json_incref(s), b});
    t->n++;
}

/* Marks the strings of j that count as content (see wk_jinja.h). */
static void mark(json_t *j)
{
    if (json_is_string(j)) { jinja_taint_set(j, NULL); return; }
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) mark(json_array_get(j, i));
        return;
    }
    if (!json_is_object(j)) return;
    static const char *const skip[] = {"role", "name", "type", "tool_call_id", "id"};
    const char *key;
    json_t *val;
    json_object_foreach(j, key, val) {
        bool keep = true;
        for (size_t i = 0; i < sizeof skip / sizeof *skip && keep; i++) keep = strcmp(key, skip[i]) != 0;
        if (keep || !json_is_string(val)) mark(val);
    }
}

void jinja_taint_vars(const json_t *vars)
{
    if (vars) mark(json_object_get(vars, "messages"));
    if (vars) mark(json_object_get(vars, "tools"));
}

json_t *jinja_substr(const json_t *s, size_t off, size_t n)
{
    jinja_cost(0, n);
    json_t *r = json_stringn_nocheck(json_string_value(s) + off, n);
    const uint8_t *bits = jinja_taint_get(s);
    if (r && bits) jinja_taint_set(r, bits + off);
    return r;
}

struct jv jv_substr(const struct jv *s, size_t off, size_t n)
{
    if (s->k != JV_STR) return jv_str("", 0);
    if (off == 0 && n == jv_len_s(s)) { struct jv r = jv_copy(s); r.safe = false; return r; }
    json_t *j = jinja_substr(s->u.j, off, n);
    return j ? (struct jv){.k = JV_STR, .u.j = j} : JV_UNDEF_V;
}
