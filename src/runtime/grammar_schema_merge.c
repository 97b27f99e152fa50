/*
 * grammar_schema_merge.c - allOf as one merged schema, and the test that
 * two oneOf alternatives cannot both match (grammar_schema.c).
 *
 * Merging intersects keyword by keyword: type lists intersect, properties
 * merge per name, required unites, lower bounds take the larger and upper
 * bounds the smaller, enum values intersect; a keyword present in one
 * schema only is kept; equal values are kept; anything else is refused.
 * additionalProperties only merges when the other schema declares no
 * property this one does not (otherwise its meaning would change).
 *
 * Disjointness (sound, not complete): the JSON types one alternative can
 * produce and the other accepts do not meet (integer and number meet),
 * or both list their values (enum / const) with none in common, or both
 * require a property whose values they list, with none in common (a
 * discriminator, as in tagged unions).
 */
#include "grammar_int.h"

#include <math.h>
#include <stdlib.h>

static bool in(const char *k, const char *const *l)
{
    for (; *l; l++)
        if (!strcmp(k, *l)) return true;
    return false;
}

/* JSON equality as Python's: 1 == 1.0. */
static bool value_eq(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b)) return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!value_eq(json_array_get(a, i), json_array_get(b, i))) return false;
        return true;
    }
    if (json_is_object(a) && json_is_object(b)) {
        if (json_object_size(a) != json_object_size(b)) return false;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)a, k, v) {
            const json_t *w = json_object_get(b, k);
            if (!w || !value_eq(v, w)) return false;
        }
        return true;
    }
    if (json_is_boolean(a) || json_is_boolean(b)) return json_typeof(a) == json_typeof(b);
    return json_equal((json_t *)a, (json_t *)b);
}

/* The type list of a "type" value as a bit mask (as grammar_schema.c). */
static unsigned types_of(const json_t *t)
{
    static const char *const names[] = {"null", "boolean", "object", "array", "string", "number", "integer"};
    if (!t) return 0x7f;
    unsigned m = 0;
    size_t n = json_is_array(t) ? json_array_size(t) : 1;
    for (size_t i = 0; i < n; i++) {
        const char *nm = json_string_value(json_is_array(t) ? json_array_get(t, i) : t);
        for (int k = 0; nm && k < 7; k++)
            if (!strcmp(nm, names[k])) m |= 1u << k;
    }
    return m;
}

static json_t *types_json(unsigned m)
{
    static const char *const names[] = {"null", "boolean", "object", "array", "string", "number", "integer"};
    json_t *a = json_array();
    for (int k = 0; a && k < 7; k++)
        if (m & (1u << k)) json_array_append_new(a, json_string(names[k]));
    return a;
}

static unsigned type_meet(unsigned a, unsigned b)
{
    unsigned m = a & b;
    if ((a & 0x20) && (b & 0x40)) m |= 0x40; /* number and integer: integer */
    if ((a & 0x40) && (b & 0x20)) m |= 0x40;
    if (m & 0x40) m &= ~0x20u;
    return m;
}

static const char *const MIN_KW[] = {"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", NULL};
static const char *const MAX_KW[] = {"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", NULL};

/* Merges b's keyword k (value vb) into r, which may hold va. */
static bool merge_kw(struct sc *c, json_t *r, const char *k, const json_t *va, const json_t *vb)
{
    json_t *nv = NULL;
    if (!strcmp(k, "type")) {
        nv = types_json(type_meet(types_of(va), types_of(vb)));
    } else if (!strcmp(k, "properties") && json_is_object(va) && json_is_object(vb)) {
        nv = json_deep_copy(va);
        const char *pk;
        const json_t *pv;
        json_object_foreach((json_t *)vb, pk, pv) {
            const json_t *old = json_object_get(nv, pk);
            json_t *m = old ? wk__sc_merge(c, old, pv) : json_deep_copy(pv);
            if (!m) {
                json_decref(nv);
                return false;
            }
            json_object_set_new(nv, pk, m);
        }
    } else if (!strcmp(k, "required") && json_is_array(va) && json_is_array(vb)) {
        nv = json_deep_copy(va);
        size_t i;
        const json_t *x;
        json_array_foreach(vb, i, x) {
            bool have = false;
            for (size_t j = 0; j < json_array_size(nv); j++) have |= json_equal(json_array_get(nv, j), (json_t *)x);
            if (!have) json_array_append_new(nv, json_deep_copy(x));
        }
    } else if ((in(k, MIN_KW) || in(k, MAX_KW)) && json_is_number(va) && json_is_number(vb)) {
        bool take_b = in(k, MIN_KW) ? json_number_value(vb) > json_number_value(va)
                                    : json_number_value(vb) < json_number_value(va);
        nv = json_deep_copy(take_b ? vb : va);
    } else if ((!strcmp(k, "enum") || !strcmp(k, "const")) ) {
        json_t *la = !strcmp(k, "const") ? json_pack("[O]", va) : json_deep_copy(va);
        nv = json_array();
        for (size_t i = 0; la && nv && i < json_array_size(la); i++)
            for (size_t j = 0; json_is_array(vb) && j < json_array_size(vb); j++)
                if (value_eq(json_array_get(la, i), json_array_get(vb, j)))
                    json_array_append(nv, json_array_get(la, i));
        if (!strcmp(k, "const") && la && nv) { /* const vs const: equal was handled */
            json_decref(nv);
            nv = json_array();
        }
        json_decref(la);
        if (nv && !strcmp(k, "const")) {
            json_object_del(r, "const");
            return json_object_set_new(r, "enum", nv) == 0 || (c->st = WK_E_NOMEM, false);
        }
    } else if ((!strcmp(k, "items") || !strcmp(k, "additionalProperties")) &&
               (json_is_object(va) || json_is_boolean(va)) && (json_is_object(vb) || json_is_boolean(vb))) {
        nv = wk__sc_merge(c, va, vb);
        if (!nv) return false;
    } else if (!strcmp(k, "allOf") && json_is_array(va) && json_is_array(vb)) {
        nv = json_deep_copy(va);
        json_array_extend(nv, (json_t *)vb);
    } else {
        wk__sc_fail(c, WK_E_UNSUPPORTED, "allOf at %s: cannot merge two different \"%s\"", c->path, k);
        return false;
    }
    if (!nv || json_object_set_new(r, k, nv) != 0) {
        wk__sc_fail(c, WK_E_NOMEM, "out of memory");
        return false;
    }
    return true;
}

/* Whether x's additionalProperties (if it constrains) still means the same
 * with the other schema's properties added. */
static bool additional_ok(const json_t *x, const json_t *other)
{
    const json_t *ap = json_object_get(x, "additionalProperties");
    if (!ap || json_is_true(ap)) return true;
    const json_t *px = json_object_get(x, "properties"), *po = json_object_get(other, "properties");
    const json_t *ro = json_object_get(other, "required");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)po, k, v) if (!px || !json_object_get(px, k)) return false;
    size_t i;
    json_array_foreach(ro, i, v) if (!px || !json_is_string(v) || !json_object_get(px, json_string_value(v))) return false;
    return true;
}

/* The values in v (itself included), counting stops past cap. */
static int64_t count_values(const json_t *v, int64_t cap)
{
    int64_t n = 1;
    size_t i;
    const char *k;
    const json_t *x;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x) if ((n += count_values(x, cap - n)) > cap) return n;
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x) if ((n += count_values(x, cap - n)) > cap) return n;
    }
    return n;
}

json_t *wk__sc_merge(struct sc *c, const json_t *a, const json_t *b)
{
    c->merged += count_values(a, SC_MAX_MERGED) + count_values(b, SC_MAX_MERGED);
    if (c->merged > SC_MAX_MERGED)
        return wk__sc_fail(c, WK_E_RANGE, "allOf at %s: merging its schemas copies more than %d values", c->path,
                           SC_MAX_MERGED),
               NULL;
    if (json_is_false(a) || json_is_false(b)) return json_false();
    if (json_is_true(a)) return json_deep_copy(b);
    if (json_is_true(b)) return json_deep_copy(a);
    if (!json_is_object(a) || !json_is_object(b))
        return wk__sc_fail(c, WK_E_INVALID, "allOf at %s: a schema is not an object or a boolean", c->path), NULL;
    if (!additional_ok(a, b) || !additional_ok(b, a))
        return wk__sc_fail(c, WK_E_UNSUPPORTED, "allOf at %s: additionalProperties with other properties", c->path),
               NULL;
    json_t *r = json_deep_copy(a);
    if (!r) return wk__sc_fail(c, WK_E_NOMEM, "out of memory"), NULL;
    const char *k;
    const json_t *vb;
    json_object_foreach((json_t *)b, k, vb) {
        const json_t *va = json_object_get(r, k);
        if (!va) {
            if (json_object_set_new(r, k, json_deep_copy(vb)) != 0) {
                json_decref(r);
                return wk__sc_fail(c, WK_E_NOMEM, "out of memory"), NULL;
            }
            continue;
        }
        if (value_eq(va, vb) || !strcmp(k, "title") || !strcmp(k, "description") || !strcmp(k, "$comment") ||
            !strcmp(k, "default") || !strcmp(k, "examples") || !strcmp(k, "$schema") || !strcmp(k, "$id") ||
            !strcmp(k, "$defs") || !strcmp(k, "definitions"))
            continue;
        if (!merge_kw(c, r, k, va, vb)) {
            json_decref(r);
            if (c->st == WK_OK) wk__sc_fail(c, WK_E_NOMEM, "out of memory");
            return NULL;
        }
    }
    return r;
}

/* ------------------------------------------------------------ oneOf */

/* The types a schema can produce or accept, and its listed values. */
static unsigned facts(struct sc *c, const json_t *s, const json_t **values, bool *has_values)
{
    *has_values = false;
    *values = NULL;
    if (json_is_false(s)) return 0;
    if (!json_is_object(s)) return 0x7f;
    const json_t *ref = json_object_get(s, "$ref");
    if (ref && json_object_size(s) == 1 && json_is_string(ref)) {
        /* follow one local reference for its facts */
        const char *p = json_string_value(ref);
        const json_t *x = c->doc;
        if (strncmp(p, "#/", 2) == 0) {
            char seg[256];
            p += 2;
            while (x && *p) {
                size_t n = strcspn(p, "/");
                if (n >= sizeof seg || strchr(p, '~') || strchr(p, '%')) return 0x7f;
                memcpy(seg, p, n), seg[n] = 0;
                x = json_object_get(x, seg);
                p += n + (p[n] == '/');
            }
            if (x && x != s) return facts(c, x, values, has_values);
        }
        return 0x7f;
    }
    unsigned t = types_of(json_object_get(s, "type"));
    if (t & 0x20) t |= 0x40;
    if (t & 0x40) t |= 0x20;
    const json_t *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
    if (cn) {
        *has_values = true;
        *values = cn;
    } else if (json_is_array(en)) {
        *has_values = true;
        *values = en;
    }
    if (*has_values) { /* only the listed values' types */
        unsigned vt = 0;
        size_t n = json_is_array(*values) && !cn ? json_array_size(*values) : 1;
        for (size_t i = 0; i < n; i++) {
            const json_t *v = cn ? cn : json_array_get(*values, i);
            vt |= json_is_null(v) ? 0x01 : json_is_boolean(v) ? 0x02 : json_is_object(v) ? 0x04
                : json_is_array(v) ? 0x08 : json_is_string(v) ? 0x10 : 0x60;
        }
        t &= vt;
    }
    return t;
}

static bool listed(const json_t *values, const json_t *v)
{
    if (!json_is_array(values)) return value_eq(values, v);
    for (size_t i = 0; i < json_array_size(values); i++)
        if (value_eq(json_array_get(values, i), v)) return true;
    return false;
}

static bool values_disjoint(const json_t *va, const json_t *vb)
{
    size_t n = json_is_array(va) ? json_array_size(va) : 1;
    for (size_t i = 0; i < n; i++)
        if (listed(vb, json_is_array(va) ? json_array_get(va, i) : va)) return false;
    return true;
}

bool wk__sc_disjoint(struct sc *c, const json_t *a, const json_t *b)
{
    const json_t *va, *vb;
    bool ha, hb;
    unsigned ta = facts(c, a, &va, &ha), tb = facts(c, b, &vb, &hb);
    if (!(ta & tb)) return true;
    if (ha && hb && values_disjoint(va, vb)) return true;
    /* a discriminator: a property both require, with listed values apart */
    if (!json_is_object(a) || !json_is_object(b)) return false;
    if (!(ta == 0x04 && tb == 0x04)) return false; /* both objects only */
    const json_t *pa = json_object_get(a, "properties"), *pb = json_object_get(b, "properties");
    const json_t *ra = json_object_get(a, "required"), *rb = json_object_get(b, "required");
    size_t i;
    const json_t *x;
    json_array_foreach(ra, i, x) {
        const char *k = json_string_value(x);
        if (!k || !listed(rb, x)) continue;
        const json_t *sa = json_object_get(pa, k), *sb = json_object_get(pb, k), *xa, *xb;
        bool la, lb;
        if (!sa || !sb) continue;
        facts(c, sa, &xa, &la);
        facts(c, sb, &xb, &lb);
        if (la && lb && values_disjoint(xa, xb)) return true;
    }
    return false;
}
