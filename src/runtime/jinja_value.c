/*
 * jinja_value.c - runtime values of the Jinja engine: references to
 * jansson values plus undefined, macros, functions and loops; Python's
 * truthiness, equality, ordering, str() and repr(), and json.dumps as
 * transformers' tojson filter calls it.
 */
#include "jinja_int.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for more bytes, checking the size against the buffer's limit
 * (WK_JINJA_MAX_OUTPUT when it has none) before anything is allocated;
 * what the buffer grows by is charged to the work budget (the bytes
 * written fit in what was charged, twice over). A failure is reported to
 * the active render. */
static bool grow(struct jbuf *b, size_t more)
{
    if (more < b->cap - b->n && !b->st) return true; /* fits: the cap is never past the limit */
    if (b->st) return false;
    size_t limit = b->limit ? b->limit : WK_JINJA_MAX_OUTPUT;
    struct jctx *c = jinja_active_ctx;
    if (more > limit - b->n) {
        b->st = WK_E_RANGE;
        jinja_too_large(c, c && b == c->out ? "output" : "string", (unsigned long long)b->n + more);
        return false;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more + 1) cap *= 2;
    if (cap > limit + 1) cap = limit + 1;
    if (!jinja_cost(0, cap - b->cap)) { b->st = WK_E_RANGE; return false; }
    char *p = wk_realloc(b->p, cap);
    if (!p) goto nomem;
    b->p = p, b->cap = cap;
    if (b->t) {
        uint8_t *t = wk_realloc(b->t, cap);
        if (!t) goto nomem;
        b->t = t;
    }
    return true;
nomem:
    b->st = WK_E_NOMEM;
    if (c) jinja_fail(c, WK_E_NOMEM, "out of memory");
    return false;
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

void jbuf_fill(struct jbuf *b, char ch, unsigned long long n)
{
    if (n > SIZE_MAX / 2) n = SIZE_MAX / 2; /* fails the limit all the same */
    if (!n || !grow(b, (size_t)n)) return;
    memset(b->p + b->n, ch, (size_t)n);
    if (b->t) memset(b->t + b->n, 0, (size_t)n);
    b->n += (size_t)n;
    b->p[b->n] = 0;
}

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
    case JV_UNDEF: jbuf_put(b, "\x01" "u", 2); break; /* jinja2's Undefined hashes (and compares) alike */
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
        case 'u': return JV_UNDEF_V;
        case 's': return jv_str(key + 2, strlen(key + 2));
        default: break;
        }
    }
    return jv_str(key, strlen(key));
}

json_t *jinja_undef_json(void)
{
    static json_t *undef; /* never freed: its one reference is this one */
    json_t *u = __atomic_load_n(&undef, __ATOMIC_ACQUIRE), *none = NULL;
    if (u) return u;
    if (!(u = json_object())) return NULL;
    if (!__atomic_compare_exchange_n(&undef, &none, u, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        json_decref(u); /* another thread's came first */
        return none;
    }
    return u;
}

struct jv jv_from_json(json_t *j)
{
    struct jv v = JV_NONE_V;
    if (!j) return JV_UNDEF_V;
    if (j == jinja_undef_json()) {
        json_decref(j);
        return JV_UNDEF_V;
    }
    switch (json_typeof(j)) {
    case JSON_OBJECT: v.k = JV_DICT, v.u.j = j; return v;
    case JSON_ARRAY: v.k = JV_LIST, v.u.j = j, v.tuple = jinja_is_tuple(j); return v;
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
    if (b->st) { /* reported when it happened; this covers a buffer failed by hand */
        if (jinja_active_ctx) jinja_fail(jinja_active_ctx, b->st, b->st == WK_E_NOMEM ? "out of memory" : "string larger than the limit");
        jbuf_free(b);
        return JV_UNDEF_V;
    }
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
    case JV_STR: jinja_cost(0, jv_len_s(v)); return (long long)utf8_count(jv_s(v), jv_len_s(v));
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
    case JV_STR: return jv_len_s(v) > 0;
    case JV_LIST: case JV_DICT: return jv_length(v) > 0;
    default: return true;
    }
}

static bool is_num(const struct jv *v) { return v->k == JV_INT || v->k == JV_FLOAT || v->k == JV_BOOL; }
static double num(const struct jv *v) { return v->k == JV_FLOAT ? v->u.f : v->k == JV_INT ? (double)v->u.i : v->u.b; }

/* Python's == of two JSON values (a new reference taken of neither). */
static bool json_eq(json_t *x, json_t *y)
{
    struct jv p = jv_from_json(json_incref(x)), q = jv_from_json(json_incref(y));
    bool eq = jv_equal(&p, &q);
    jv_free(&p), jv_free(&q);
    return eq;
}

bool jv_equal(const struct jv *a, const struct jv *b)
{
    if (!jinja_cost(1, 0)) return false;
    if (is_num(a) && is_num(b)) {
        if (a->k != JV_FLOAT && b->k != JV_FLOAT) return (a->k == JV_INT ? a->u.i : a->u.b) == (b->k == JV_INT ? b->u.i : b->u.b);
        return num(a) == num(b);
    }
    if (a->k != b->k) return false;
    switch (a->k) {
    case JV_UNDEF: case JV_NONE: return true;
    case JV_STR:
        if (jv_len_s(a) != jv_len_s(b)) return false;
        jinja_cost(0, jv_len_s(a));
        return memcmp(jv_s(a), jv_s(b), jv_len_s(a)) == 0;
    case JV_LIST: case JV_DICT: {
        json_t *x = a->u.j, *y = b->u.j;
        if (a->tuple != b->tuple) return false; /* a tuple never equals a list in Python, whatever they hold */
        if (x == y) return true;                /* as Python's identity test first */
        if (json_typeof(x) == JSON_ARRAY) {
            if (json_array_size(x) != json_array_size(y)) return false;
            for (size_t i = 0; i < json_array_size(x); i++)
                if (!json_eq(json_array_get(x, i), json_array_get(y, i))) return false;
            return true;
        }
        if (json_object_size(x) != json_object_size(y)) return false;
        const char *key;
        json_t *val, *other;
        json_object_foreach(x, key, val)
            if (!(other = json_object_get(y, key)) || !json_eq(val, other)) return false;
        return true;
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
    if (!jinja_cost(1, 0)) return 0;
    if (is_num(a) && is_num(b)) {
        if (a->k == JV_INT && b->k == JV_INT) return (a->u.i > b->u.i) - (a->u.i < b->u.i);
        double x = num(a), y = num(b);
        return (x > y) - (x < y);
    }
    if (a->k == JV_STR && b->k == JV_STR) {
        size_t n = jv_len_s(a) < jv_len_s(b) ? jv_len_s(a) : jv_len_s(b);
        jinja_cost(0, n);
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
    case JV_STR: case JV_LIST: case JV_DICT: return json_incref(v->u.j);
    case JV_NS: { /* a copy: a namespace's own object changes, and could come to hold itself */
        json_t *o = json_copy(v->u.j);
        jinja_cost((long long)json_object_size(v->u.j), 0);
        if (o && !jinja_nest_ok(jinja_active_ctx, o)) { json_decref(o); return NULL; }
        return o;
    }
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
    if (!jinja_cost(1, 0)) { b->st = WK_E_RANGE; return; } /* an item visited */
    if (j == jinja_undef_json()) { jbuf_puts(b, "Undefined"); return; } /* Python's repr */
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
        for (size_t i = 0; i < n && !b->st; i++) {
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
            if (b->st) return;
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

/* Appends the JSON escape \uXXXX of the UTF-16 code unit u. */
static void json_u(struct jbuf *b, unsigned u) { jbuf_printf(b, "\\u%04x", u); }

/* The code point of the UTF-8 sequence at s[0..n) and its length in *len
 * (a byte that starts no valid sequence: itself, length 1). */
static unsigned utf8_decode(const unsigned char *s, size_t n, size_t *len)
{
    unsigned cp = s[0];
    size_t k = cp >= 0xF0 ? 4 : cp >= 0xE0 ? 3 : cp >= 0xC0 ? 2 : 1;
    if (k > n) k = 1;
    if (k > 1) cp &= 0x3F >> (k - 1);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80) { *len = 1; return s[0]; }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    *len = k;
    return cp;
}

/* A JSON string of s[0..n) as json.dumps writes it (ascii: ensure_ascii,
 * every character past ASCII and DEL as \u escapes); bits (or NULL) the
 * provenance of s: what a content byte becomes (itself or its escape) is
 * content, the quotes not. */
static void json_str_escaped(struct jbuf *b, const char *s, size_t n, const uint8_t *bits, bool ascii)
{
    jbuf_put(b, "\"", 1);
    for (size_t i = 0, k = 1; i < n && !b->st; i += k) {
        unsigned char ch = (unsigned char)s[i];
        size_t at = b->n;
        k = 1;
        switch (ch) {
        case '"': jbuf_puts(b, "\\\""); break;
        case '\\': jbuf_puts(b, "\\\\"); break;
        case '\n': jbuf_puts(b, "\\n"); break;
        case '\r': jbuf_puts(b, "\\r"); break;
        case '\t': jbuf_puts(b, "\\t"); break;
        case '\b': jbuf_puts(b, "\\b"); break;
        case '\f': jbuf_puts(b, "\\f"); break;
        default:
            if (ch < 0x20 || (ascii && ch == 0x7f)) {
                json_u(b, ch);
            } else if (ascii && ch >= 0x80) {
                unsigned cp = utf8_decode((const unsigned char *)s + i, n - i, &k);
                if (cp >= 0x10000) json_u(b, 0xD800 + ((cp - 0x10000) >> 10)), json_u(b, 0xDC00 + ((cp - 0x10000) & 0x3FF));
                else json_u(b, cp);
            } else {
                jbuf_put(b, s + i, 1);
            }
        }
        if (bits && bits[i]) taint_since(b, at);
    }
    jbuf_put(b, "\"", 1);
}

/* A dict key as json.dumps writes it: str keys as strings, others by
 * their JSON text in quotes. */
static void dump_key(struct jbuf *b, const char *key, bool ascii)
{
    if (key[0] != 1 || !key[1]) { json_str_escaped(b, key, strlen(key), NULL, ascii); return; }
    struct jv k = jv_key_decode(key);
    struct jbuf t = {0};
    if (k.k == JV_STR) jbuf_put(&t, jv_s(&k), jv_len_s(&k));
    else if (k.k == JV_NONE) jbuf_puts(&t, "null");
    else if (k.k == JV_BOOL) jbuf_puts(&t, k.u.b ? "true" : "false");
    else if (k.k == JV_FLOAT && isnan(k.u.f)) jbuf_puts(&t, "NaN");
    else if (k.k == JV_FLOAT && isinf(k.u.f)) jbuf_puts(&t, k.u.f < 0 ? "-Infinity" : "Infinity");
    else jv_write_str(&t, &k);
    json_str_escaped(b, t.p ? t.p : "", t.n, NULL, ascii);
    if (t.st) b->st = t.st;
    jbuf_free(&t);
    jv_free(&k);
}

static _Thread_local bool g_key_incomparable;

/* Orders two stored dict keys as Python sorts the keys themselves. */
static int key_cmp(const void *pa, const void *pb)
{
    const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
    if (a[0] != 1 && b[0] != 1) return strcmp(a, b); /* UTF-8 orders as code points */
    struct jv x = jv_key_decode(a), y = jv_key_decode(b);
    bool ok;
    int r = jv_compare(jinja_active_ctx, &x, &y, &ok);
    if (!ok && !g_key_incomparable && jinja_active_ctx)
        jinja_fail(jinja_active_ctx, WK_E_INVALID, "'<' not supported between instances of '%s' and '%s'", jv_type_name(&y), jv_type_name(&x));
    if (!ok) g_key_incomparable = true, r = strcmp(a, b);
    jv_free(&x), jv_free(&y);
    return r;
}

/* A newline and level indents (none when f has no indent). */
static void newline_indent(struct jbuf *b, const struct jjson_fmt *f, int level)
{
    if (!f->newlines) return;
    jbuf_put(b, "\n", 1);
    if (!f->indent) { /* spaces: their number checked against the limit first */
        unsigned long long n;
        if (__builtin_mul_overflow(f->spaces, (unsigned long long)level, &n)) n = ULLONG_MAX;
        jbuf_fill(b, ' ', n);
        return;
    }
    size_t len = f->indent_len;
    if (len && (unsigned long long)level > WK_JINJA_MAX_OUTPUT / len) { jbuf_fill(b, ' ', ULLONG_MAX); return; }
    for (int i = 0; i < level && !b->st; i++) jbuf_put(b, f->indent, len);
}

void jinja_json_dump(struct jbuf *b, json_t *j, const struct jjson_fmt *f, int level)
{
    if (b->st) return;
    if (!jinja_cost(1, 0)) { b->st = WK_E_RANGE; return; } /* an item visited */
    if (level > WK_JINJA_MAX_NESTING * 8) { /* a value from the caller nested past what the engine makes */
        if (jinja_active_ctx) jinja_fail(jinja_active_ctx, WK_E_RANGE, "maximum recursion depth exceeded");
        b->st = WK_E_RANGE;
        return;
    }
    if (j == jinja_undef_json()) { /* json.dumps of a list or dict holding Undefined */
        if (jinja_active_ctx) jinja_fail(jinja_active_ctx, WK_E_INVALID, "Object of type Undefined is not JSON serializable");
        b->st = WK_E_INVALID;
        return;
    }
    switch (json_typeof(j)) {
    case JSON_NULL: jbuf_puts(b, "null"); return;
    case JSON_TRUE: jbuf_puts(b, "true"); return;
    case JSON_FALSE: jbuf_puts(b, "false"); return;
    case JSON_INTEGER: jbuf_printf(b, "%lld", (long long)json_integer_value(j)); return;
    case JSON_REAL: {
        double x = json_real_value(j);
        if (isnan(x)) jbuf_puts(b, "NaN");
        else if (isinf(x)) jbuf_puts(b, x < 0 ? "-Infinity" : "Infinity");
        else jinja_write_float(b, x);
        return;
    }
    case JSON_STRING: json_str_escaped(b, json_string_value(j), json_string_length(j), jinja_taint_get(j), f->ascii); return;
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        if (!n) { jbuf_puts(b, "[]"); return; }
        jbuf_put(b, "[", 1);
        for (size_t i = 0; i < n && !b->st; i++) {
            if (i) jbuf_put(b, f->item_sep, f->item_len);
            newline_indent(b, f, level + 1);
            jinja_json_dump(b, json_array_get(j, i), f, level + 1);
        }
        newline_indent(b, f, level);
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
        if (f->sort_keys) {
            g_key_incomparable = false;
            jinja_cost((long long)n * 8, 0);
            qsort(keys, n, sizeof *keys, key_cmp);
            if (g_key_incomparable) b->st = WK_E_INVALID;
        }
        jbuf_put(b, "{", 1);
        for (size_t i = 0; i < n && !b->st; i++) {
            if (i) jbuf_put(b, f->item_sep, f->item_len);
            newline_indent(b, f, level + 1);
            dump_key(b, keys[i], f->ascii);
            jbuf_put(b, f->key_sep, f->key_len);
            jinja_json_dump(b, json_object_get(j, keys[i]), f, level + 1);
        }
        wk_free(keys);
        newline_indent(b, f, level);
        jbuf_put(b, "}", 1);
        return;
    }
    }
}

json_t *jv_iter_list(struct jctx *c, const struct jv *v)
{
    if (v->k == JV_LIST || v->k == JV_GEN) /* what iterates the items pays for them here */
        if (!jinja_cost((long long)json_array_size(v->u.j), 0)) return NULL;
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
        jinja_cost((long long)json_object_size(v->u.j), 0);
        json_object_foreach(v->u.j, key, val) {
            struct jv k = jv_key_decode(key);
            json_array_append_new(a, jv_to_json(&k));
            jv_free(&k);
        }
        return a;
    }
    if (v->k == JV_STR) { /* its characters: the count checked before they are made */
        const char *s = jv_s(v);
        size_t n = jv_len_s(v), count = utf8_count(s, n);
        if (!jinja_cost((long long)count, n) || !jinja_items_ok(c, count)) { json_decref(a); return NULL; }
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
