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

struct jv jinja_filter_more(struct jctx *c, const char *name, struct jv *v, struct jv *args, size_t nargs,
                            const char **kwnames, struct jv *kwvals, size_t nkw);

struct jv jinja_filter_more(struct jctx *c, const char *name, struct jv *v, struct jv *args, size_t nargs,
                            const char **kwnames, struct jv *kwvals, size_t nkw)
{
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        struct jv l = list_of(c, v);
        if (c->st) return JV_UNDEF_V;
        size_t n = json_array_size(l.u.j);
        struct jv r = n ? elem(l.u.j, name[0] == 'f' ? 0 : n - 1) : (struct jv){.k = JV_UNDEF, .name = name};
        jv_free(&l);
        return r;
    }
    if (!strcmp(name, "reverse")) {
        if (v->k == JV_STR) {
            struct jv l = list_of(c, v);
            struct jbuf b = {0};
            for (size_t i = json_array_size(l.u.j); i-- > 0;) jbuf_puts(&b, json_string_value(json_array_get(l.u.j, i)));
            jv_free(&l);
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
    if (!strcmp(name, "unique")) {
        struct jv l = list_of(c, v);
        if (c->st) return JV_UNDEF_V;
        json_t *out = json_array();
        for (size_t i = 0; i < json_array_size(l.u.j); i++) {
            struct jv e = elem(l.u.j, i);
            bool seen = false;
            for (size_t k = 0; k < json_array_size(out) && !seen; k++) { struct jv o = elem(out, k); seen = jv_equal(&e, &o); jv_free(&o); }
            if (!seen) json_array_append(out, json_array_get(l.u.j, i));
            jv_free(&e);
        }
        jv_free(&l);
        return (struct jv){.k = JV_LIST, .u.j = out};
    }
    if (!strcmp(name, "wordcount")) {
        const char *s = jv_s(v);
        long long n = 0;
        bool in = false;
        for (size_t i = 0; i < jv_len_s(v); i++) {
            bool w = isalnum((unsigned char)s[i]) || s[i] == '_' || (unsigned char)s[i] >= 0x80;
            if (w && !in) n++;
            in = w;
        }
        return jv_int(n);
    }
    (void)kwnames, (void)kwvals, (void)nkw;
    jinja_fail(c, WK_E_INVALID, "filter '%s' is not supported", name);
    return JV_UNDEF_V;
}

/* ---- tests ---- */

bool jinja_test(struct jctx *c, const char *name, const struct jv *v, struct jv *args, size_t nargs)
{
    const struct jv *a = nargs ? &args[0] : NULL;
    if (!strcmp(name, "defined")) return v->k != JV_UNDEF;
    if (!strcmp(name, "undefined")) return v->k == JV_UNDEF;
    if (!strcmp(name, "none")) return v->k == JV_NONE;
    if (!strcmp(name, "string")) return v->k == JV_STR;
    if (!strcmp(name, "mapping")) return v->k == JV_DICT;
    if (!strcmp(name, "iterable")) return v->k == JV_STR || v->k == JV_LIST || v->k == JV_DICT || v->k == JV_UNDEF;
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
    if (!a) { jinja_fail(c, WK_E_INVALID, "test '%s' needs an argument", name); return false; }
    if (!strcmp(name, "equalto") || !strcmp(name, "eq") || !strcmp(name, "==") || !strcmp(name, "sameas")) return jv_equal(v, a);
    if (!strcmp(name, "ne") || !strcmp(name, "!=")) return !jv_equal(v, a);
    if (!strcmp(name, "divisibleby")) return v->k == JV_INT && a->k == JV_INT && a->u.i && v->u.i % a->u.i == 0;
    if (!strcmp(name, "in")) {
        if (a->k == JV_STR) return v->k == JV_STR && memmem(jv_s(a), jv_len_s(a), jv_s(v), jv_len_s(v));
        if (a->k == JV_DICT) return v->k == JV_STR && json_object_get(a->u.j, jv_s(v));
        for (size_t i = 0; a->k == JV_LIST && i < json_array_size(a->u.j); i++) { struct jv e = elem(a->u.j, i); bool eq = jv_equal(&e, v); jv_free(&e); if (eq) return true; }
        return false;
    }
    bool ok;
    int r = jv_compare(c, v, a, &ok);
    if (!ok) { jinja_fail(c, WK_E_INVALID, "cannot compare '%s' and '%s'", jv_type_name(v), jv_type_name(a)); return false; }
    if (!strcmp(name, "gt")) return r > 0;
    if (!strcmp(name, "lt")) return r < 0;
    if (!strcmp(name, "ge")) return r >= 0;
    if (!strcmp(name, "le")) return r <= 0;
    jinja_fail(c, WK_E_INVALID, "no test named '%s'", name);
    return false;
}
