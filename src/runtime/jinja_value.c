/*
 * jinja_value.c - runtime values of the Jinja engine: references to
 * jansson values plus undefined, macros, functions and loops; Python's
 * truthiness, equality, ordering, str() and repr(), and json.dumps as
 * transformers' tojson filter calls it.
 */
#include "jinja_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool grow(struct jbuf *b, size_t more)
{
    if (b->st) return false;
    if (b->limit && b->n + more > b->limit) { b->st = WK_E_RANGE; return false; }
    if (b->n + more + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more + 1) cap *= 2;
    char *p = wk_realloc(b->p, cap);
    if (!p) { b->st = WK_E_NOMEM; return false; }
    b->p = p, b->cap = cap;
    if (b->t) {
        uint8_t *t = wk_realloc(b->t, cap);
        if (!t) { b->st = WK_E_NOMEM; return false; }
        b->t = t;
    }
    return true;
}

bool jbuf_reserve(struct jbuf *b, size_t more) { return grow(b, more); }

void jbuf_put(struct jbuf *b, const char *s, size_t n)
{
    if (!grow(b, n)) return;
    memcpy(b->p + b->n, s, n);
    if (b->t) memset(b->t + b->n, 0, n);
    b->n += n;
    b->p[b->n] = 0;
}

void jbuf_put_bits(struct jbuf *b, const char *s, const uint8_t *bits, size_t n)
{
    size_t at = b->n;
    jbuf_put(b, s, n);
    if (!bits || b->st || !n) return;
    if (!b->t) {
        b->t = wk_calloc(b->cap, 1);
        if (!b->t) { b->st = WK_E_NOMEM; return; }
    }
    memcpy(b->t + at, bits, n);
}

void jbuf_put_j(struct jbuf *b, const json_t *s, size_t off, size_t n)
{
    const uint8_t *bits = jinja_taint_get(s);
    jbuf_put_bits(b, json_string_value(s) + off, bits ? bits + off : NULL, n);
}

void jbuf_put_v(struct jbuf *b, const struct jv *s, size_t off, size_t n)
{
    if (s->k == JV_STR) jbuf_put_j(b, s->u.j, off, n);
}

void jbuf_free(struct jbuf *b)
{
    wk_free(b->p);
    wk_free(b->t);
    b->p = NULL, b->t = NULL;
}

void jbuf_puts(struct jbuf *b, const char *s) { jbuf_put(b, s, strlen(s)); }

void jbuf_printf(struct jbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) jbuf_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void jv_free(struct jv *v)
{
    if (jv_refd(v->k)) json_decref(v->u.j);
    if (v->hold) json_decref(v->hold);
    if (v->recv) { jv_free(v->recv); wk_free(v->recv); }
    *v = JV_UNDEF_V;
}

struct jv jv_copy(const struct jv *v)
{
    struct jv c = *v;
    if (jv_refd(v->k)) json_incref(v->u.j);
    if (v->hold) json_incref(v->hold);
    if (v->recv) {
        c.recv = wk_malloc(sizeof *c.recv);
        if (c.recv) *c.recv = jv_copy(v->recv);
    }
    return c;
}

/* ---- the tuple set: an open-addressing set of marked arrays, each
 * holding a reference; when it fills up, arrays only it still references
 * are dropped ---- */
struct tupset {
    json_t **v;
    size_t n, cap;
    bool active;
};
static _Thread_local struct tupset g_tup;

static size_t ptr_slot(const json_t *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 17;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 24) & (cap - 1);
}

static bool is_tuple(const json_t *a)
{
    if (!g_tup.cap) return false;
    for (size_t i = ptr_slot(a, g_tup.cap); g_tup.v[i]; i = (i + 1) & (g_tup.cap - 1))
        if (g_tup.v[i] == a) return true;
    return false;
}

static void tup_put(json_t **v, size_t cap, json_t *a)
{
    size_t i = ptr_slot(a, cap);
    while (v[i]) i = (i + 1) & (cap - 1);
    v[i] = a;
}

void jinja_tuples_begin(void) { g_tup = (struct tupset){.active = true}; }

void jinja_tuples_end(void)
{
    for (size_t i = 0; i < g_tup.cap; i++)
        if (g_tup.v[i]) json_decref(g_tup.v[i]);
    wk_free(g_tup.v);
    g_tup = (struct tupset){0};
}

void jinja_mark_tuple(json_t *a)
{
    struct tupset *t = &g_tup;
    if (!a || !t->active || is_tuple(a)) return;
    if ((t->n + 1) * 2 > t->cap) {
        size_t live = 0;
        for (size_t i = 0; i < t->cap; i++) live += t->v[i] && t->v[i]->refcount > 1;
        size_t cap = 64;
        while (cap < (live + 1) * 4) cap *= 2;
        json_t **v = wk_calloc(cap, sizeof *v);
        if (!v) return;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->v[i]) continue;
            if (t->v[i]->refcount > 1) tup_put(v, cap, t->v[i]);
            else json_decref(t->v[i]);
        }
        wk_free(t->v);
        t->v = v, t->cap = cap, t->n = live;
    }
    tup_put(t->v, t->cap, json_incref(a));
    t->n++;
}

struct jv jv_gen(json_t *a, const char *name)
{
    if (!a) return JV_UNDEF_V;
    return (struct jv){.k = JV_GEN, .u.j = a, .name = name};
}

bool jv_key_encode(struct jctx *c, const struct jv *k, struct jbuf *b)
{
    b->n = 0;
    switch (k->k) {
    case JV_STR:
        if (jv_s(k)[0] == 1) jbuf_put(b, "\x01" "s", 2);
        jbuf_put(b, jv_s(k), jv_len_s(k));
        break;
    case JV_INT: jbuf_printf(b, "\x01" "i%lld", k->u.i); break;
    case JV_BOOL: jbuf_puts(b, k->u.b ? "\x01" "b1" : "\x01" "b0"); break;
    case JV_FLOAT: jbuf_put(b, "\x01" "f", 2); jinja_write_float(b, k->u.f); break;
    case JV_NONE: jbuf_put(b, "\x01" "n", 2); break;
    default: jinja_fail(c, WK_E_INVALID, "unhashable type: '%s'", jv_type_name(k)); return false;
    }
    jbuf_put(b, "", 0);
    if (b->st) { jinja_fail(c, b->st, "out of memory"); return false; }
    return true;
}

struct jv jv_key_decode(const char *key)
{
    if (key[0] == 1) {
        switch (key[1]) {
        case 'i': return jv_int(strtoll(key + 2, NULL, 10));
        case 'f': return jv_float(strtod(key + 2, NULL));
        case 'b': return jv_bool(key[2] == '1');
        case 'n': return JV_NONE_V;
        case 's': return jv_str(key + 2, strlen(key + 2));
        default: break;
        }
    }
    return jv_str(key, strlen(key));
}

struct jv jv_from_json(json_t *j)
{
    struct jv v = JV_NONE_V;
    if (!j) return JV_UNDEF_V;
    switch (json_typeof(j)) {
    case JSON_OBJECT: v.k = JV_DICT, v.u.j = j; return v;
    case JSON_ARRAY: v.k = JV_LIST, v.u.j = j, v.tuple = is_tuple(j); return v;
    case JSON_STRING: v.k = JV_STR, v.u.j = j; return v;
    case JSON_INTEGER: v = jv_int(json_integer_value(j)); break;
    case JSON_REAL: v = jv_float(json_real_value(j)); break;
    case JSON_TRUE: v = jv_bool(true); break;
    case JSON_FALSE: v = jv_bool(false); break;
    default: break;
    }
    json_decref(j);
    return v;
}

struct jv jv_str(const char *s, size_t n)
{
    json_t *j = json_stringn_nocheck(s ? s : "", n);
    if (!j) return JV_UNDEF_V;
    return (struct jv){.k = JV_STR, .u.j = j};
}

struct jv jv_str_take(struct jbuf *b)
{
    struct jv v = jv_str(b->p, b->n);
    if (b->t && v.k == JV_STR) jinja_taint_set(v.u.j, b->t);
    jbuf_free(b);
    return v;
}

bool jv_is_str(const struct jv *v) { return v->k == JV_STR; }

struct jv jinja_escape(const struct jv *s)
{
    struct jbuf b = {0};
    const char *p = jv_s(s);
    for (size_t i = 0, n = jv_len_s(s); i < n; i++) {
        switch (p[i]) {
        case '&': jbuf_puts(&b, "&amp;"); break;
        case '<': jbuf_puts(&b, "&lt;"); break;
        case '>': jbuf_puts(&b, "&gt;"); break;
        case '\'': jbuf_puts(&b, "&#39;"); break;
        case '"': jbuf_puts(&b, "&#34;"); break;
        default: jbuf_put(&b, p + i, 1);
        }
    }
    struct jv r = b.p ? jv_str_take(&b) : jv_str("", 0);
    r.safe = true;
    return r;
}
const char *jv_s(const struct jv *v) { return v->k == JV_STR ? json_string_value(v->u.j) : ""; }
size_t jv_len_s(const struct jv *v) { return v->k == JV_STR ? json_string_length(v->u.j) : 0; }

size_t utf8_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

long long jv_length(const struct jv *v)
{
    switch (v->k) {
    case JV_STR: return (long long)utf8_count(jv_s(v), jv_len_s(v));
    case JV_LIST: return (long long)json_array_size(v->u.j);
    case JV_DICT: return (long long)json_object_size(v->u.j);
    case JV_UNDEF: return 0;
    default: return -1;
    }
}

bool jv_truthy(const struct jv *v)
{
    switch (v->k) {
    case JV_UNDEF: case JV_NONE: return false;
    case JV_BOOL: return v->u.b;
    case JV_INT: return v->u.i != 0;
    case JV_FLOAT: return v->u.f != 0;
    case JV_STR: case JV_LIST: case JV_DICT: return jv_length(v) > 0;
    default: return true;
    }
}

static bool is_num(const struct jv *v) { return v->k == JV_INT || v->k == JV_FLOAT || v->k == JV_BOOL; }
static double num(const struct jv *v) { return v->k == JV_FLOAT ? v->u.f : v->k == JV_INT ? (double)v->u.i : v->u.b; }

bool jv_equal(const struct jv *a, const struct jv *b)
{
    if (is_num(a) && is_num(b)) {
        if (a->k != JV_FLOAT && b->k != JV_FLOAT) return (a->k == JV_INT ? a->u.i : a->u.b) == (b->k == JV_INT ? b->u.i : b->u.b);
        return num(a) == num(b);
    }
    if (a->k != b->k) return false;
    switch (a->k) {
    case JV_UNDEF: case JV_NONE: return true;
    case JV_STR: return jv_len_s(a) == jv_len_s(b) && memcmp(jv_s(a), jv_s(b), jv_len_s(a)) == 0;
    case JV_LIST: case JV_DICT: {
        json_t *x = a->u.j, *y = b->u.j;
        if (json_typeof(x) == JSON_ARRAY) {
            if (json_array_size(x) != json_array_size(y)) return false;
            for (size_t i = 0; i < json_array_size(x); i++) {
                struct jv p = jv_from_json(json_incref(json_array_get(x, i)));
                struct jv q = jv_from_json(json_incref(json_array_get(y, i)));
                bool eq = jv_equal(&p, &q);
                jv_free(&p), jv_free(&q);
                if (!eq) return false;
            }
            return true;
        }
        return json_equal(x, y);
    }
    case JV_NS: case JV_GEN: return a->u.j == b->u.j;
    case JV_MACRO: return a->u.macro == b->u.macro;
    default: return false;
    }
}

const char *jv_type_name(const struct jv *v)
{
    static const char *const names[] = {"Undefined", "NoneType", "bool", "int", "float", "str", "list",
                                        "dict", "Namespace", "Macro", "function", "method", "LoopContext",
                                        "generator"};
    if (v->k == JV_LIST && v->tuple) return "tuple";
    return names[v->k];
}

/* Three-way comparison; *ok false when Python would raise TypeError. */
int jv_compare(struct jctx *c, const struct jv *a, const struct jv *b, bool *ok)
{
    *ok = true;
    if (is_num(a) && is_num(b)) {
        if (a->k == JV_INT && b->k == JV_INT) return (a->u.i > b->u.i) - (a->u.i < b->u.i);
        double x = num(a), y = num(b);
        return (x > y) - (x < y);
    }
    if (a->k == JV_STR && b->k == JV_STR) {
        size_t n = jv_len_s(a) < jv_len_s(b) ? jv_len_s(a) : jv_len_s(b);
        int r = memcmp(jv_s(a), jv_s(b), n);
        if (r) return r < 0 ? -1 : 1;
        return (jv_len_s(a) > jv_len_s(b)) - (jv_len_s(a) < jv_len_s(b));
    }
    if (a->k == JV_LIST && b->k == JV_LIST) {
        size_t na = json_array_size(a->u.j), nb = json_array_size(b->u.j);
        for (size_t i = 0; i < na && i < nb; i++) {
            struct jv p = jv_from_json(json_incref(json_array_get(a->u.j, i)));
            struct jv q = jv_from_json(json_incref(json_array_get(b->u.j, i)));
            int r = jv_equal(&p, &q) ? 0 : jv_compare(c, &p, &q, ok);
            jv_free(&p), jv_free(&q);
            if (r || !*ok) return r;
        }
        return (na > nb) - (na < nb);
    }
    *ok = false;
    return 0;
}

static const char *owner_repr(const struct jv *v)
{
    static const char *const names[] = {"Undefined", "None", "bool object", "int object", "float object", "str object",
                                        "list object", "dict object", "jinja2.utils.Namespace object", "Macro object",
                                        "function object", "method object", "LoopContext object", "generator object"};
    if (v->k == JV_LIST && v->tuple) return "tuple object";
    return names[v->k];
}

struct jv jv_undef_in(const struct jv *owner, const char *name, json_t *hold)
{
    return (struct jv){.k = JV_UNDEF, .name = name, .owner = owner_repr(owner), .hold = hold ? json_incref(hold) : NULL};
}

void jinja_undef_fail(struct jctx *c, const struct jv *v)
{
    if (v->owner && v->has_index) jinja_fail(c, WK_E_INVALID, "%s has no element %lld", v->owner, v->u.i);
    else if (v->owner) jinja_fail(c, WK_E_INVALID, "'%s' has no attribute '%s'", v->owner, v->name ? v->name : "");
    else jinja_fail(c, WK_E_INVALID, "'%s' is undefined", v->name ? v->name : "value");
}

json_t *jv_to_json(const struct jv *v)
{
    if (v->k == JV_LIST && v->tuple) jinja_mark_tuple(v->u.j);
    switch (v->k) {
    case JV_NONE: return json_null();
    case JV_BOOL: return json_boolean(v->u.b);
    case JV_INT: return json_integer(v->u.i);
    case JV_FLOAT: return json_real(v->u.f);
    case JV_STR: case JV_LIST: case JV_DICT: case JV_NS: return json_incref(v->u.j);
    default: return NULL;
    }
}

void jinja_write_float(struct jbuf *b, double f)
{
    if (isnan(f)) { jbuf_puts(b, "nan"); return; }
    if (isinf(f)) { jbuf_puts(b, f < 0 ? "-inf" : "inf"); return; }
    char tmp[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f) break;
    }
    /* tmp is d.ddde[+-]XX: rebuild as Python's repr */
    char digits[32];
    int nd = 0, exp10;
    char *e = strchr(tmp, 'e');
    bool neg = tmp[0] == '-';
    for (char *p = tmp + neg; p < e; p++)
        if (*p != '.') digits[nd++] = *p;
    exp10 = atoi(e + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    if (neg) jbuf_put(b, "-", 1);
    if (exp10 < -4 || exp10 >= 16) {
        jbuf_put(b, digits, 1);
        if (nd > 1) { jbuf_put(b, ".", 1); jbuf_put(b, digits + 1, (size_t)nd - 1); }
        jbuf_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    } else if (exp10 < 0) {
        jbuf_puts(b, "0.");
        for (int i = 0; i < -exp10 - 1; i++) jbuf_put(b, "0", 1);
        jbuf_put(b, digits, (size_t)nd);
    } else {
        for (int i = 0; i <= exp10; i++) jbuf_put(b, i < nd ? &digits[i] : "0", 1);
        jbuf_put(b, ".", 1);
        if (nd > exp10 + 1) jbuf_put(b, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
        else jbuf_put(b, "0", 1);
    }
}

/* Python repr of the str s[0..n). */
static void write_str_repr(struct jbuf *b, const char *s, size_t n)
{
    bool has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    jbuf_put(b, &q, 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == (unsigned char)q || ch == '\\') { jbuf_put(b, "\\", 1); jbuf_put(b, s + i, 1); }
        else if (ch == '\n') jbuf_puts(b, "\\n");
        else if (ch == '\r') jbuf_puts(b, "\\r");
        else if (ch == '\t') jbuf_puts(b, "\\t");
        else if (ch < 0x20 || ch == 0x7f) jbuf_printf(b, "\\x%02x", ch);
        else jbuf_put(b, s + i, 1);
    }
    jbuf_put(b, &q, 1);
}

static void write_json_repr(struct jbuf *b, json_t *j)
{
    struct jv v = jv_from_json(json_incref(j));
    jv_write_repr(b, &v);
    jv_free(&v);
}

void jv_write_repr(struct jbuf *b, const struct jv *v)
{
    if (v->k == JV_STR) { write_str_repr(b, jv_s(v), jv_len_s(v)); return; }
    if (v->k == JV_LIST) {
        jbuf_put(b, v->tuple ? "(" : "[", 1);
        size_t n = json_array_size(v->u.j);
        for (size_t i = 0; i < n; i++) {
            if (i) jbuf_puts(b, ", ");
            write_json_repr(b, json_array_get(v->u.j, i));
        }
        if (v->tuple && n == 1) jbuf_put(b, ",", 1);
        jbuf_put(b, v->tuple ? ")" : "]", 1);
        return;
    }
    if (v->k == JV_DICT) {
        jbuf_put(b, "{", 1);
        const char *key;
        json_t *val;
        bool first = true;
        json_object_foreach(v->u.j, key, val) {
            if (!first) jbuf_puts(b, ", ");
            first = false;
            struct jv kv = jv_key_decode(key);
            jv_write_repr(b, &kv);
            jv_free(&kv);
            jbuf_puts(b, ": ");
            write_json_repr(b, val);
        }
        jbuf_put(b, "}", 1);
        return;
    }
    jv_write_str(b, v);
}

void jv_write_str(struct jbuf *b, const struct jv *v)
{
    switch (v->k) {
    case JV_UNDEF: return;
    case JV_NONE: jbuf_puts(b, "None"); return;
    case JV_BOOL: jbuf_puts(b, v->u.b ? "True" : "False"); return;
    case JV_INT: jbuf_printf(b, "%lld", v->u.i); return;
    case JV_FLOAT: jinja_write_float(b, v->u.f); return;
    case JV_STR: jbuf_put_v(b, v, 0, jv_len_s(v)); return;
    case JV_LIST: case JV_DICT: jv_write_repr(b, v); return;
    case JV_NS: jbuf_puts(b, "<Namespace>"); return;
    case JV_GEN: jbuf_printf(b, "<generator object %s at 0x0>", v->name ? v->name : "genexpr"); return;
    case JV_MACRO: jbuf_printf(b, "<Macro '%s'>", v->u.macro->str); return;
    default: jbuf_printf(b, "<%s>", v->name ? v->name : "function"); return;
    }
}

/* Marks b's bytes from at on as content. */
static void taint_since(struct jbuf *b, size_t at)
{
    if (b->st || at >= b->n) return;
    if (!b->t) {
        b->t = wk_calloc(b->cap, 1);
        if (!b->t) { b->st = WK_E_NOMEM; return; }
    }
    memset(b->t + at, 1, b->n - at);
}

/* A JSON string of s[0..n); bits (or NULL) the provenance of s: what a
 * content byte becomes (itself or its escape) is content, the quotes not. */
static void json_str_escaped(struct jbuf *b, const char *s, size_t n, const uint8_t *bits)
{
    jbuf_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        size_t at = b->n;
        switch (ch) {
        case '"': jbuf_puts(b, "\\\""); break;
        case '\\': jbuf_puts(b, "\\\\"); break;
        case '\n': jbuf_puts(b, "\\n"); break;
        case '\r': jbuf_puts(b, "\\r"); break;
        case '\t': jbuf_puts(b, "\\t"); break;
        case '\b': jbuf_puts(b, "\\b"); break;
        case '\f': jbuf_puts(b, "\\f"); break;
        default:
            if (ch < 0x20 || ch == 0x7f) jbuf_printf(b, "\\u%04x", ch);
            else jbuf_put(b, s + i, 1);
        }
        if (bits && bits[i]) taint_since(b, at);
    }
    jbuf_put(b, "\"", 1);
}

/* A dict key as json.dumps writes it: str keys as strings, others by
 * their JSON text in quotes. */
static void dump_key(struct jbuf *b, const char *key)
{
    if (key[0] != 1 || !key[1]) { json_str_escaped(b, key, strlen(key), NULL); return; }
    struct jv k = jv_key_decode(key);
    struct jbuf t = {0};
    if (k.k == JV_STR) jbuf_put(&t, jv_s(&k), jv_len_s(&k));
    else if (k.k == JV_NONE) jbuf_puts(&t, "null");
    else if (k.k == JV_BOOL) jbuf_puts(&t, k.u.b ? "true" : "false");
    else if (k.k == JV_FLOAT && isnan(k.u.f)) jbuf_puts(&t, "NaN");
    else if (k.k == JV_FLOAT && isinf(k.u.f)) jbuf_puts(&t, k.u.f < 0 ? "-Infinity" : "Infinity");
    else jv_write_str(&t, &k);
    json_str_escaped(b, t.p ? t.p : "", t.n, NULL);
    if (t.st) b->st = t.st;
    jbuf_free(&t);
    jv_free(&k);
}

static int key_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static void newline_indent(struct jbuf *b, int indent, int level)
{
    jbuf_put(b, "\n", 1);
    for (int i = 0; i < indent * level; i++) jbuf_put(b, " ", 1);
}

void jinja_json_dump(struct jbuf *b, json_t *j, int indent, const char *item_sep, const char *key_sep,
                     bool sort_keys, int level)
{
    switch (json_typeof(j)) {
    case JSON_NULL: jbuf_puts(b, "null"); return;
    case JSON_TRUE: jbuf_puts(b, "true"); return;
    case JSON_FALSE: jbuf_puts(b, "false"); return;
    case JSON_INTEGER: jbuf_printf(b, "%lld", (long long)json_integer_value(j)); return;
    case JSON_REAL: {
        double f = json_real_value(j);
        if (isnan(f)) jbuf_puts(b, "NaN");
        else if (isinf(f)) jbuf_puts(b, f < 0 ? "-Infinity" : "Infinity");
        else jinja_write_float(b, f);
        return;
    }
    case JSON_STRING: json_str_escaped(b, json_string_value(j), json_string_length(j), jinja_taint_get(j)); return;
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        if (!n) { jbuf_puts(b, "[]"); return; }
        jbuf_put(b, "[", 1);
        for (size_t i = 0; i < n; i++) {
            if (i) jbuf_puts(b, item_sep);
            if (indent >= 0) newline_indent(b, indent, level + 1);
            jinja_json_dump(b, json_array_get(j, i), indent, item_sep, key_sep, sort_keys, level + 1);
        }
        if (indent >= 0) newline_indent(b, indent, level);
        jbuf_put(b, "]", 1);
        return;
    }
    case JSON_OBJECT: {
        size_t n = json_object_size(j), k = 0;
        if (!n) { jbuf_puts(b, "{}"); return; }
        const char **keys = wk_malloc(n * sizeof *keys);
        if (!keys) { b->st = WK_E_NOMEM; return; }
        const char *key;
        json_t *val;
        json_object_foreach(j, key, val) keys[k++] = key;
        if (sort_keys) qsort(keys, n, sizeof *keys, key_cmp);
        jbuf_put(b, "{", 1);
        for (size_t i = 0; i < n; i++) {
            if (i) jbuf_puts(b, item_sep);
            if (indent >= 0) newline_indent(b, indent, level + 1);
            dump_key(b, keys[i]);
            jbuf_puts(b, key_sep);
            jinja_json_dump(b, json_object_get(j, keys[i]), indent, item_sep, key_sep, sort_keys, level + 1);
        }
        wk_free(keys);
        if (indent >= 0) newline_indent(b, indent, level);
        jbuf_put(b, "}", 1);
        return;
    }
    }
}

json_t *jv_iter_list(struct jctx *c, const struct jv *v)
{
    if (v->k == JV_LIST) return json_incref(v->u.j);
    if (v->k == JV_UNDEF) return json_array();
    json_t *a = json_array();
    if (!a) return NULL;
    if (v->k == JV_GEN) { /* a generator runs once */
        json_array_extend(a, v->u.j);
        json_array_clear(v->u.j);
        return a;
    }
    if (v->k == JV_DICT || v->k == JV_NS) {
        const char *key;
        json_t *val;
        json_object_foreach(v->u.j, key, val) {
            struct jv k = jv_key_decode(key);
            json_array_append_new(a, jv_to_json(&k));
            jv_free(&k);
        }
        return a;
    }
    if (v->k == JV_STR) {
        const char *s = jv_s(v);
        size_t n = jv_len_s(v);
        for (size_t i = 0; i < n;) {
            size_t k = 1;
            while (i + k < n && ((unsigned char)s[i + k] & 0xC0) == 0x80) k++;
            json_array_append_new(a, jinja_substr(v->u.j, i, k));
            i += k;
        }
        return a;
    }
    json_decref(a);
    jinja_fail(c, WK_E_INVALID, "'%s' object is not iterable", jv_type_name(v));
    return NULL;
}
