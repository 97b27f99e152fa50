/*
 * jinja_methods.c - the rest of the Jinja filters, the tests, the Python
 * str/dict methods templates call (the sandbox refuses the mutating
 * list and dict methods) and the global functions.
 */
#include "jinja_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* from jinja_filters.c via these small re-implementations */
static struct jv list_of(struct jctx *c, const struct jv *v)
{
    json_t *l = jv_iter_list(c, v);
    return l ? (struct jv){.k = JV_LIST, .u.j = l} : JV_UNDEF_V;
}

static struct jv elem(json_t *a, size_t i) { return jv_from_json(json_incref(json_array_get(a, i))); }

static struct jv str_of(const struct jv *v)
{
    if (v->k == JV_STR) return jv_copy(v);
    struct jbuf b = {0};
    jv_write_str(&b, v);
    return b.p ? jv_str_take(&b) : jv_str("", 0);
}

/* The byte offset of code point k of s[0..n) (n when s has fewer). */
static size_t cp_offset(const char *s, size_t n, size_t k)
{
    size_t i = 0;
    jinja_cost(0, n);
    for (; i < n && k; k--)
        for (i++; i < n && ((unsigned char)s[i] & 0xC0) == 0x80;) i++;
    return i;
}

/* min / max: the first smallest / largest item, by attribute, ignoring case. */
static struct jv min_max(struct jctx *c, bool max, const struct jv *v, const struct jv *cs, const struct jv *attr)
{
    struct jv l = list_of(c, v);
    if (c->st) return JV_UNDEF_V;
    struct jv best = JV_UNDEF_V, bestkey = JV_UNDEF_V;
    for (size_t i = 0; i < json_array_size(l.u.j) && !c->st; i++) {
        struct jv e = elem(l.u.j, i);
        struct jv key = attr->k == JV_STR ? jinja_getattr(c, &e, jv_s(attr)) : jv_copy(&e);
        if (!jv_truthy(cs) && key.k == JV_STR) {
            struct jbuf b = {0};
            jbuf_put(&b, jv_s(&key), jv_len_s(&key));
            for (size_t k = 0; k < b.n; k++) b.p[k] = (char)tolower((unsigned char)b.p[k]);
            jv_free(&key);
            key = b.p ? jv_str_take(&b) : jv_str("", 0);
        }
        bool ok = true;
        int r = i ? jv_compare(c, &key, &bestkey, &ok) : 0;
        if (!ok) jinja_fail(c, WK_E_INVALID, "'%s' not supported between instances of '%s' and '%s'", max ? ">" : "<", jv_type_name(&key), jv_type_name(&bestkey));
        if (i == 0 || (max ? r > 0 : r < 0)) { jv_free(&best), jv_free(&bestkey); best = e, bestkey = key; }
        else jv_free(&e), jv_free(&key);
    }
    jv_free(&l), jv_free(&bestkey);
    if (c->st) { jv_free(&best); return JV_UNDEF_V; }
    if (best.k == JV_UNDEF) best.name = "No aggregated item, sequence was empty.";
    return best;
}

static struct jv do_round(struct jctx *c, const struct jv *v, const struct jv *prec, const struct jv *method)
{
    const char *m = method->k == JV_STR ? jv_s(method) : "common";
    if (strcmp(m, "common") && strcmp(m, "ceil") && strcmp(m, "floor")) { jinja_fail(c, WK_E_INVALID, "method must be common, ceil or floor"); return JV_UNDEF_V; }
    long long p = prec->k == JV_INT ? prec->u.i : 0;
    if (v->k != JV_INT && v->k != JV_FLOAT && v->k != JV_BOOL) { jinja_fail(c, WK_E_INVALID, "type %s doesn't define __round__ method", jv_type_name(v)); return JV_UNDEF_V; }
    if (p < -308 || p > 308) p = p < 0 ? -308 : 308;
    double x = v->k == JV_FLOAT ? v->u.f : v->k == JV_INT ? (double)v->u.i : v->u.b, scale = pow(10, (double)p);
    if (strcmp(m, "common")) return jv_float((m[0] == 'c' ? ceil(x * scale) : floor(x * scale)) / scale);
    if (v->k != JV_FLOAT) return jv_int(v->k == JV_INT ? v->u.i : v->u.b); /* round(int, n >= 0) */
    if (!isfinite(x)) return jv_float(x);
    if (p >= 0) { /* correctly rounded, ties to even, as Python */
        char tmp[400];
        snprintf(tmp, sizeof tmp, "%.*f", (int)p, x);
        return jv_float(strtod(tmp, NULL));
    }
    return jv_float(nearbyint(x / pow(10, (double)-p)) * pow(10, (double)-p));
}

static struct jv batch(struct jctx *c, const struct jv *v, const struct jv *count, const struct jv *fill)
{
    if (count->k != JV_INT) { jinja_fail(c, WK_E_INVALID, "batch needs an integer line count"); return JV_UNDEF_V; }
    struct jv l = list_of(c, v);
    if (c->st) return JV_UNDEF_V;
    long long n = count->u.i;
    json_t *out = json_array(), *tmp = json_array();
    for (size_t i = 0; i < json_array_size(l.u.j); i++) {
        if ((long long)json_array_size(tmp) == n) { json_array_append_new(out, tmp); tmp = json_array(); }
        json_array_append(tmp, json_array_get(l.u.j, i));
    }
    jv_free(&l);
    if (json_array_size(tmp)) {
        json_t *f = fill->k != JV_UNDEF && fill->k != JV_NONE ? jv_to_json(fill) : NULL;
        if (f && n - (long long)json_array_size(tmp) > 100000) { json_decref(f), json_decref(tmp), json_decref(out); jinja_fail(c, WK_E_RANGE, "batch too large"); return JV_UNDEF_V; }
        while (f && (long long)json_array_size(tmp) < n) json_array_append(tmp, f);
        if (f) json_decref(f);
        json_array_append_new(out, tmp);
    } else {
        json_decref(tmp);
    }
    if (!jinja_nest_ok(c, out)) { json_decref(out); return JV_UNDEF_V; }
    return jv_gen(out, "do_batch");
}

static struct jv center_truncate(struct jctx *c, const char *name, const struct jv *v, struct jv *args, size_t nargs,
                                 const char **kwnames, struct jv *kwvals, size_t nkw)
{
    struct jv s = str_of(v), r = JV_UNDEF_V;
    long long len = jv_length(&s);
    if (!strcmp(name, "center")) {
        struct jv w = nargs ? jv_copy(&args[0]) : JV_UNDEF_V;
        for (size_t i = 0; i < nkw; i++) if (!strcmp(kwnames[i], "width")) { jv_free(&w); w = jv_copy(&kwvals[i]); }
        long long width = w.k == JV_INT ? w.u.i : 80;
        jv_free(&w);
        if (width > (long long)WK_JINJA_MAX_OUTPUT) { jinja_too_large(c, "string", (unsigned long long)width); width = 0; }
        long long marg = width - len, left = marg / 2 + (marg & width & 1);
        struct jbuf b = {0};
        if (marg > 0) jbuf_fill(&b, ' ', (unsigned long long)left);
        jbuf_put_v(&b, &s, 0, jv_len_s(&s));
        if (marg > left) jbuf_fill(&b, ' ', (unsigned long long)(marg - left));
        r = c->st ? JV_UNDEF_V : b.p ? jv_str_take(&b) : jv_str("", 0);
        if (c->st) jbuf_free(&b);
    } else { /* truncate(length=255, killwords=False, end='...', leeway=5) */
        static const char *const names[] = {"length", "killwords", "end", "leeway"};
        struct jv a[4] = {JV_UNDEF_V, JV_UNDEF_V, JV_UNDEF_V, JV_UNDEF_V};
        for (size_t i = 0; i < 4; i++) {
            if (i < nargs) a[i] = jv_copy(&args[i]);
            for (size_t k = 0; k < nkw; k++) if (!strcmp(kwnames[k], names[i])) { jv_free(&a[i]); a[i] = jv_copy(&kwvals[k]); }
        }
        long long length = a[0].k == JV_INT ? a[0].u.i : 255, leeway = a[3].k == JV_INT ? a[3].u.i : 5;
        struct jv end = a[2].k == JV_STR ? jv_copy(&a[2]) : jv_str("...", 3);
        long long elen = (long long)utf8_count(jv_s(&end), jv_len_s(&end));
        if (length < elen) jinja_fail(c, WK_E_INVALID, "expected length >= %lld, got %lld", elen, length);
        else if (leeway < 0) jinja_fail(c, WK_E_INVALID, "expected leeway >= 0, got %lld", leeway);
        else if (len - leeway <= length) r = jv_copy(&s);
        else {
            struct jv head = jv_substr(&s, 0, cp_offset(jv_s(&s), jv_len_s(&s), (size_t)(length - elen)));
            if (!jv_truthy(&a[1])) { /* rsplit(" ", 1)[0] */
                const char *p = jv_s(&head);
                size_t k = jv_len_s(&head);
                while (k > 0 && p[k - 1] != ' ') k--;
                if (k > 0) { struct jv h2 = jv_substr(&head, 0, k - 1); jv_free(&head); head = h2; }
            }
            struct jv e2 = jv_copy(&end);
            r = jinja_arith(c, '+', &head, &e2);
            jv_free(&head), jv_free(&e2);
        }
        jv_free(&end);
        for (int i = 0; i < 4; i++) jv_free(&a[i]);
    }
    jv_free(&s);
    return r;
}

static struct jv filter_agg(struct jctx *c, const char *name, struct jv *v, struct jv *args, size_t nargs,
                            const char **kwnames, struct jv *kwvals, size_t nkw)
{
    struct jv a[3] = {JV_UNDEF_V, JV_UNDEF_V, JV_UNDEF_V}, r = JV_UNDEF_V;
    const char *const *names = NULL;
    static const char *const mm[] = {"case_sensitive", "attribute", NULL}, *const su[] = {"attribute", "start", NULL},
                             *const ro[] = {"precision", "method", NULL}, *const ba[] = {"linecount", "fill_with", NULL};
    if (!strcmp(name, "min") || !strcmp(name, "max")) names = mm;
    else if (!strcmp(name, "sum")) names = su;
    else if (!strcmp(name, "round")) names = ro;
    else if (!strcmp(name, "batch")) names = ba;
    else if (!strcmp(name, "center") || !strcmp(name, "truncate")) return center_truncate(c, name, v, args, nargs, kwnames, kwvals, nkw);
    else { jinja_fail(c, WK_E_INVALID, "filter '%s' is not supported", name); return JV_UNDEF_V; }
    for (size_t i = 0; names[i]; i++) {
        if (i < nargs) a[i] = jv_copy(&args[i]);
        for (size_t k = 0; k < nkw; k++) if (!strcmp(kwnames[k], names[i])) { jv_free(&a[i]); a[i] = jv_copy(&kwvals[k]); }
    }
    if (names == mm) r = min_max(c, name[1] == 'a', v, &a[0], &a[1]);
    else if (names == ro) r = do_round(c, v, &a[0], &a[1]);
    else if (names == ba) r = batch(c, v, &a[0], &a[1]);
    else {
        struct jv l = list_of(c, v);
        r = a[1].k == JV_UNDEF ? jv_int(0) : jv_copy(&a[1]);
        for (size_t i = 0; !c->st && i < json_array_size(l.u.j); i++) {
            struct jv e = elem(l.u.j, i);
            if (a[0].k == JV_STR) { struct jv e2 = jinja_getattr(c, &e, jv_s(&a[0])); jv_free(&e); e = e2; }
            struct jv t = jinja_arith(c, '+', &r, &e);
            jv_free(&r), jv_free(&e);
            r = t;
        }
        jv_free(&l);
    }
    for (int i = 0; i < 3; i++) jv_free(&a[i]);
    if (c->st) { jv_free(&r); return JV_UNDEF_V; }
    return r;
}

/* The item's key for unique: its attribute (attr a str) or itself,
 * lower-cased where it is a str and cs is false (jinja2's
 * ignore_case: str.lower(), ASCII here as the lower filter). */
static struct jv unique_key(struct jctx *c, const struct jv *e, const struct jv *attr, bool cs)
{
    struct jv k = attr->k == JV_STR ? jinja_getattr(c, e, jv_s(attr)) : jv_copy(e);
    if (cs || k.k != JV_STR || c->st) return k;
    struct jbuf b = {.limit = WK_JINJA_MAX_OUTPUT};
    const char *p = jv_s(&k);
    for (size_t i = 0; i < jv_len_s(&k) && !b.st; i++) {
        char ch = (char)tolower((unsigned char)p[i]);
        jbuf_put(&b, &ch, 1);
    }
    jv_free(&k);
    return b.p ? jv_str_take(&b) : jv_str("", 0);
}

/* unique(case_sensitive=False, attribute=None), as jinja2's: the first
 * item of each key, in order. */
static struct jv unique(struct jctx *c, struct jv *v, struct jv *args, size_t nargs, const char **kwnames,
                        struct jv *kwvals, size_t nkw)
{
    struct jv cs = nargs > 0 ? args[0] : jv_bool(false), attr = nargs > 1 ? args[1] : JV_UNDEF_V;
    for (size_t k = 0; k < nkw; k++) {
        if (!strcmp(kwnames[k], "case_sensitive")) cs = kwvals[k];
        else if (!strcmp(kwnames[k], "attribute")) attr = kwvals[k];
        else { jinja_fail(c, WK_E_INVALID, "unique() got an unexpected keyword argument '%s'", kwnames[k]); return JV_UNDEF_V; }
    }
    struct jv l = list_of(c, v);
    if (c->st) return JV_UNDEF_V;
    json_t *out = json_array(), *keys = json_array();
    for (size_t i = 0; i < json_array_size(l.u.j) && !c->st; i++) {
        struct jv e = elem(l.u.j, i), key = unique_key(c, &e, &attr, jv_truthy(&cs));
        bool seen = false;
        for (size_t k = 0; k < json_array_size(keys) && !seen && !c->st; k++) {
            struct jv o = elem(keys, k);
            seen = jv_equal(&key, &o);
            jv_free(&o);
        }
        if (!seen && !c->st) json_array_append(out, json_array_get(l.u.j, i)), json_array_append_new(keys, key.k == JV_UNDEF ? json_incref(jinja_undef_json()) : jv_to_json(&key));
        jv_free(&e), jv_free(&key);
    }
    jv_free(&l);
    json_decref(keys);
    if (c->st) { json_decref(out); return JV_UNDEF_V; }
    return jv_gen(out, "sync_do_unique");
}

struct jv jinja_filter_more(struct jctx *c, const char *name, struct jv *v, struct jv *args, size_t nargs,
                            const char **kwnames, struct jv *kwvals, size_t nkw)
{
    if (!strcmp(name, "last") && v->k == JV_GEN) { jinja_fail(c, WK_E_INVALID, "'generator' object is not reversible"); return JV_UNDEF_V; }
    if ((!strcmp(name, "first") || !strcmp(name, "last")) && v->k == JV_STR) { /* a character, found without splitting */
        const char *p = jv_s(v);
        size_t n = jv_len_s(v), a = name[0] == 'f' ? 0 : n, e;
        if (!n) return (struct jv){.k = JV_UNDEF, .name = name};
        if (a) while (--a > 0 && ((unsigned char)p[a] & 0xC0) == 0x80) {}
        for (e = a + 1; e < n && ((unsigned char)p[e] & 0xC0) == 0x80;) e++;
        return jv_substr(v, a, e - a);
    }
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        struct jv l = list_of(c, v);
        if (c->st) return JV_UNDEF_V;
        size_t n = json_array_size(l.u.j);
        struct jv r = n ? elem(l.u.j, name[0] == 'f' ? 0 : n - 1) : (struct jv){.k = JV_UNDEF, .name = name};
        jv_free(&l);
        return r;
    }
    if (!strcmp(name, "reverse")) {
        if (v->k == JV_STR) { /* the characters from the last */
            const char *p = jv_s(v);
            struct jbuf b = {0};
            jbuf_reserve(&b, jv_len_s(v));
            for (size_t e = jv_len_s(v), a; e > 0 && !b.st; e = a) {
                for (a = e - 1; a > 0 && ((unsigned char)p[a] & 0xC0) == 0x80;) a--;
                jbuf_put_v(&b, v, a, e - a);
            }
            return b.p ? jv_str_take(&b) : jv_str("", 0);
        }
        struct jv l = list_of(c, v);
        if (c->st) return JV_UNDEF_V;
        json_t *out = json_array();
        for (size_t i = json_array_size(l.u.j); i-- > 0;) json_array_append(out, json_array_get(l.u.j, i));
        jv_free(&l);
        return (struct jv){.k = JV_LIST, .u.j = out};
    }
    if (!strcmp(name, "int") || !strcmp(name, "float") || !strcmp(name, "abs")) {
        double f = 0;
        long long i = 0;
        bool isf = false;
        if (v->k == JV_INT) i = v->u.i, f = (double)i;
        else if (v->k == JV_BOOL) i = v->u.b, f = (double)i;
        else if (v->k == JV_FLOAT) f = v->u.f, i = (long long)f, isf = true;
        else if (v->k == JV_STR) {
            char *end;
            f = strtod(jv_s(v), &end);
            i = (long long)f;
            if (end == jv_s(v)) { f = 0, i = 0; if (nargs) return jv_copy(&args[0]); }
        } else if (name[0] == 'a') {
            jinja_fail(c, WK_E_INVALID, "bad operand type for abs(): '%s'", jv_type_name(v));
            return JV_UNDEF_V;
        }
        if (name[0] == 'i') return jv_int(i);
        if (name[0] == 'f') return jv_float(f);
        return isf ? jv_float(fabs(f)) : jv_int(i < 0 ? -i : i);
    }
    if (!strcmp(name, "unique")) return unique(c, v, args, nargs, kwnames, kwvals, nkw);
    if (!strcmp(name, "wordcount")) {
        const char *s = jv_s(v);
        jinja_cost(0, jv_len_s(v));
        long long n = 0;
        bool in = false;
        for (size_t i = 0; i < jv_len_s(v); i++) {
            bool w = isalnum((unsigned char)s[i]) || s[i] == '_' || (unsigned char)s[i] >= 0x80;
            if (w && !in) n++;
            in = w;
        }
        return jv_int(n);
    }
    return filter_agg(c, name, v, args, nargs, kwnames, kwvals, nkw);
}

/* ---- tests ---- */

bool jinja_test(struct jctx *c, const char *name, const struct jv *v, struct jv *args, size_t nargs)
{
    const struct jv *a = nargs ? &args[0] : NULL;
    bool scans = !strcmp(name, "lower") || !strcmp(name, "upper") || !strcmp(name, "in");
    if (!jinja_cost(1, scans ? jv_len_s(v) + (a ? jv_len_s(a) : 0) : 0)) return false;
    if (!strcmp(name, "defined")) return v->k != JV_UNDEF;
    if (!strcmp(name, "undefined")) return v->k == JV_UNDEF;
    if (!strcmp(name, "none")) return v->k == JV_NONE;
    if (!strcmp(name, "string")) return v->k == JV_STR;
    if (!strcmp(name, "mapping")) return v->k == JV_DICT;
    if (!strcmp(name, "iterable")) return v->k == JV_STR || v->k == JV_LIST || v->k == JV_DICT || v->k == JV_UNDEF || v->k == JV_GEN;
    if (!strcmp(name, "sequence")) return v->k == JV_STR || v->k == JV_LIST || v->k == JV_DICT;
    if (!strcmp(name, "number")) return v->k == JV_INT || v->k == JV_FLOAT || v->k == JV_BOOL;
    if (!strcmp(name, "integer")) return v->k == JV_INT;
    if (!strcmp(name, "float")) return v->k == JV_FLOAT;
    if (!strcmp(name, "boolean")) return v->k == JV_BOOL;
    if (!strcmp(name, "true")) return v->k == JV_BOOL && v->u.b;
    if (!strcmp(name, "false")) return v->k == JV_BOOL && !v->u.b;
    if (!strcmp(name, "callable")) return v->k == JV_MACRO || v->k == JV_FUNC || v->k == JV_METHOD;
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        bool any = false;
        for (const char *s = jv_s(v); *s; s++) {
            if (isupper((unsigned char)*s) && name[0] == 'l') return false;
            if (islower((unsigned char)*s) && name[0] == 'u') return false;
            any = any || isalpha((unsigned char)*s);
        }
        return any;
    }
    if (!strcmp(name, "odd") || !strcmp(name, "even")) { /* value % 2 == 1 / == 0, with Python's % */
        struct jv x = jv_copy(v), two = jv_int(2), want = jv_int(name[0] == 'o');
        struct jv r = jinja_arith(c, '%', &x, &two);
        bool t = !c->st && jv_equal(&r, &want);
        jv_free(&x), jv_free(&r);
        return t;
    }
    static const char *const with_arg[] = {"equalto", "eq", "==", "sameas", "ne", "!=", "divisibleby", "lt", "<",
                                           "lessthan", "le", "<=", "gt", ">", "greaterthan", "ge", ">=", "in"};
    bool known = false;
    for (size_t k = 0; k < sizeof with_arg / sizeof *with_arg; k++) known = known || !strcmp(name, with_arg[k]);
    if (!known) { jinja_fail(c, WK_E_INVALID, "no test named '%s'", name); return false; }
    if (!a) { jinja_fail(c, WK_E_INVALID, "test '%s' needs an argument", name); return false; }
    if (!strcmp(name, "equalto") || !strcmp(name, "eq") || !strcmp(name, "==") || !strcmp(name, "sameas")) return jv_equal(v, a);
    if (!strcmp(name, "ne") || !strcmp(name, "!=")) return !jv_equal(v, a);
    if (!strcmp(name, "divisibleby")) return v->k == JV_INT && a->k == JV_INT && a->u.i && v->u.i % a->u.i == 0;
    if (!strcmp(name, "in")) {
        if (a->k == JV_STR) return v->k == JV_STR && memmem(jv_s(a), jv_len_s(a), jv_s(v), jv_len_s(v));
        if (a->k == JV_DICT) {
            struct jbuf kb = {0};
            bool in = jv_key_encode(c, v, &kb) && json_object_get(a->u.j, kb.p);
            jbuf_free(&kb);
            return in;
        }
        for (size_t i = 0; a->k == JV_LIST && i < json_array_size(a->u.j); i++) { struct jv e = elem(a->u.j, i); bool eq = jv_equal(&e, v); jv_free(&e); if (eq) return true; }
        return false;
    }
    bool ok;
    int r = jv_compare(c, v, a, &ok);
    if (!ok) { jinja_fail(c, WK_E_INVALID, "cannot compare '%s' and '%s'", jv_type_name(v), jv_type_name(a)); return false; }
    /* jinja2's names and aliases of the comparisons */
    if (!strcmp(name, "gt") || !strcmp(name, ">") || !strcmp(name, "greaterthan")) return r > 0;
    if (!strcmp(name, "lt") || !strcmp(name, "<") || !strcmp(name, "lessthan")) return r < 0;
    if (!strcmp(name, "ge") || !strcmp(name, ">=")) return r >= 0;
    if (!strcmp(name, "le") || !strcmp(name, "<=")) return r <= 0;
    jinja_fail(c, WK_E_INVALID, "no test named '%s'", name);
    return false;
}

/* ---- str.format ---- */

/* Applies a format spec [[fill]align][sign][width][.precision][type] with
 * type one of s, d, f, e, g, % or none to v, appending to out. */
static bool format_spec(struct jctx *c, struct jbuf *out, const struct jv *v, const char *sp, size_t n)
{
    char fill = ' ', align = 0, sign = 0, type = 0;
    long long width = 0, prec = -1;
    size_t i = 0;
    if (n >= 2 && strchr("<>^=", sp[1])) fill = sp[0], align = sp[1], i = 2;
    else if (n >= 1 && strchr("<>^=", sp[0])) align = sp[0], i = 1;
    if (i < n && strchr("+- ", sp[i])) sign = sp[i++];
    if (i < n && sp[i] == '0' && !align) fill = '0', align = '=', i++;
    for (; i < n && isdigit((unsigned char)sp[i]); i++) width = width > (1LL << 40) ? width : width * 10 + (sp[i] - '0');
    if (i < n && sp[i] == '.') { prec = 0; for (i++; i < n && isdigit((unsigned char)sp[i]); i++) prec = prec > 1000 ? prec : prec * 10 + (sp[i] - '0'); }
    if (width > (long long)WK_JINJA_MAX_OUTPUT) { jinja_too_large(c, "string", (unsigned long long)width); return false; }
    if (prec > 1000) prec = 1000;
    if (i < n) type = sp[i++];
    if (i < n || (type && !strchr("sdfeg%", type))) { jinja_fail(c, WK_E_INVALID, "format spec '%.*s' is not supported", (int)n, sp); return false; }
    bool num = v->k == JV_INT || v->k == JV_FLOAT || v->k == JV_BOOL;
    if ((type == 's' && num) || (type && type != 's' && !num) || (type == 'd' && v->k == JV_FLOAT)) {
        jinja_fail(c, WK_E_INVALID, "Unknown format code '%c' for object of type '%s'", type, jv_type_name(v));
        return false;
    }
    struct jbuf t = {0};
    double f = v->k == JV_FLOAT ? v->u.f : v->k == JV_INT ? (double)v->u.i : v->k == JV_BOOL ? v->u.b : 0;
    if (type && strchr("feg%", type)) {
        char fmt[32];
        if (type == '%') f *= 100;
        snprintf(fmt, sizeof fmt, "%%%s.%lld%c", sign == '+' ? "+" : sign == ' ' ? " " : "", prec < 0 ? 6 : prec, type == '%' ? 'f' : type);
        jbuf_printf(&t, fmt, f);
        if (type == '%') jbuf_put(&t, "%", 1);
    } else if (v->k == JV_FLOAT && prec >= 0) {
        jbuf_printf(&t, sign == '+' ? "%+.*g" : "%.*g", (int)(prec ? prec : 1), f);
    } else {
        if (num && sign == '+' && f >= 0) jbuf_put(&t, "+", 1);
        jv_write_str(&t, v);
        if (!num && prec >= 0) { /* truncate to prec code points */
            size_t k = 0, cp = 0;
            while (k < t.n && cp < (size_t)prec) { k++; while (k < t.n && ((unsigned char)t.p[k] & 0xC0) == 0x80) k++; cp++; }
            t.n = k;
        }
    }
    if (!align) align = num ? '>' : '<';
    long long len = (long long)utf8_count(t.p ? t.p : "", t.n), pad = width > len ? width - len : 0;
    long long left = align == '>' ? pad : align == '^' ? pad / 2 : 0;
    size_t signlen = align == '=' && t.n && (t.p[0] == '-' || t.p[0] == '+') ? 1 : 0;
    if (align == '=') { jbuf_put_bits(out, t.p, t.t, signlen); left = pad; }
    jbuf_fill(out, fill, (unsigned long long)left);
    if (t.p) jbuf_put_bits(out, t.p + signlen, t.t ? t.t + signlen : NULL, t.n - signlen);
    if (align != '=' && pad > left) jbuf_fill(out, fill, (unsigned long long)(pad - left));
    jbuf_free(&t);
    return true;
}

struct jv jinja_str_format(struct jctx *c, const struct jv *s, struct jv *args, size_t nargs,
                           const char **kwnames, struct jv *kwvals, size_t nkw)
{
    const char *p = jv_s(s);
    size_t n = jv_len_s(s), i = 0;
    int autonum = 0; /* 0 unknown, 1 automatic, 2 manual */
    long long next = 0;
    struct jbuf out = {.limit = WK_JINJA_MAX_OUTPUT};
    while (i < n && !c->st) {
        if (p[i] == '}') {
            if (i + 1 < n && p[i + 1] == '}') { jbuf_put_v(&out, s, i, 1); i += 2; continue; }
            jinja_fail(c, WK_E_INVALID, "Single '}' encountered in format string");
            break;
        }
        if (p[i] != '{') { jbuf_put_v(&out, s, i, 1); i++; continue; }
        if (i + 1 < n && p[i + 1] == '{') { jbuf_put_v(&out, s, i, 1); i += 2; continue; }
        size_t e = i + 1, depth = 1;
        while (e < n && depth) { depth += p[e] == '{'; depth -= p[e] == '}'; if (depth) e++; }
        if (e >= n) { jinja_fail(c, WK_E_INVALID, "Single '{' encountered in format string"); break; }
        const char *f = p + i + 1;
        size_t fl = e - i - 1, nl = 0;
        while (nl < fl && f[nl] != '.' && f[nl] != '[' && f[nl] != '!' && f[nl] != ':') nl++;
        struct jv v = JV_UNDEF_V;
        if (nl == 0 || isdigit((unsigned char)f[0])) {
            long long idx = 0;
            if (nl == 0) {
                if (autonum == 2) { jinja_fail(c, WK_E_INVALID, "cannot switch from manual field specification to automatic field numbering"); break; }
                autonum = 1, idx = next++;
            } else {
                if (autonum == 1) { jinja_fail(c, WK_E_INVALID, "cannot switch from manual field specification to automatic field numbering"); break; }
                autonum = 2;
                for (size_t k = 0; k < nl && idx < 1000000; k++) idx = idx * 10 + (isdigit((unsigned char)f[k]) ? f[k] - '0' : 0);
            }
            if (idx >= (long long)nargs) { jinja_fail(c, WK_E_INVALID, "Replacement index %lld out of range for positional args tuple", idx); break; }
            v = jv_copy(&args[idx]);
        } else {
            for (size_t k = 0; k < nkw; k++)
                if (strlen(kwnames[k]) == nl && !memcmp(kwnames[k], f, nl)) v = jv_copy(&kwvals[k]);
            if (v.k == JV_UNDEF) { jinja_fail(c, WK_E_INVALID, "'%.*s'", (int)nl, f); break; }
        }
        size_t k = nl;
        while (k < fl && (f[k] == '.' || f[k] == '[') && !c->st) { /* .attr and [key] */
            bool item = f[k] == '[';
            size_t a = ++k;
            while (k < fl && (item ? f[k] != ']' : f[k] != '.' && f[k] != '[' && f[k] != '!' && f[k] != ':')) k++;
            struct jv key = jv_str(f + a, k - a), r;
            if (item && k - a && isdigit((unsigned char)f[a])) { jv_free(&key); key = jv_int(strtoll(f + a, NULL, 10)); }
            r = item ? jinja_getitem(c, &v, &key) : jinja_getattr(c, &v, jv_s(&key));
            if (r.k == JV_UNDEF && !c->st) jinja_undef_fail(c, &r);
            jv_free(&key), jv_free(&v);
            v = r;
            if (item && k < fl) k++;
        }
        char conv = 0;
        if (k + 1 < fl && f[k] == '!') conv = f[k + 1], k += 2;
        if (conv && conv != 's' && conv != 'r') jinja_fail(c, WK_E_INVALID, "Unknown conversion specifier %c", conv);
        if (conv) { struct jbuf t = {0}; if (conv == 'r') jv_write_repr(&t, &v); else jv_write_str(&t, &v); jv_free(&v); v = t.p ? jv_str_take(&t) : jv_str("", 0); }
        if (!c->st && k < fl && f[k] == ':') format_spec(c, &out, &v, f + k + 1, fl - k - 1);
        else if (!c->st) jv_write_str(&out, &v);
        jv_free(&v);
        i = e + 1;
    }
    if (out.st && !c->st) jinja_fail(c, out.st, "output too large");
    if (c->st) { jbuf_free(&out); return JV_UNDEF_V; }
    return out.p ? jv_str_take(&out) : jv_str("", 0);
}
