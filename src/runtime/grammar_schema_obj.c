/*
 * grammar_schema_obj.c - JSON Schema objects and arrays as GBNF, the
 * merging of allOf, and the disjointness test that lets oneOf be written
 * as a plain alternation (grammar_schema.c).
 *
 * Objects: the properties in the schema's order, then required names not
 * among them; required ones always, optional ones optionally; commas
 * between the members present. Additional members (additionalProperties
 * true or a schema, or neither properties nor additionalProperties given)
 * come last, with keys written without escapes and never equal to a
 * declared name (so no key is both, and none repeats a declared one).
 * Arrays: prefixItems then items, counted by minItems / maxItems.
 */
#include "grammar_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define SC_SEP "\",\" \" \"? "
#define SC_COLON "\":\" \" \"? "
#define SC_MAX_ITEMS 1000
#define SC_MAX_KEY_DEPTH 256

/* --------------------------------------------------------- object keys */

struct keyname {
    uint32_t *cp;
    int32_t n;
};

static int cmp_key(const void *a, const void *b)
{
    const struct keyname *x = a, *y = b;
    for (int32_t i = 0; i < x->n && i < y->n; i++)
        if (x->cp[i] != y->cp[i]) return x->cp[i] < y->cp[i] ? -1 : 1;
    return x->n < y->n ? -1 : x->n > y->n;
}

/* The rest of a plain key after the common prefix of names[0..n) (sorted,
 * each at least depth long) of length depth, never equal to one of them. */
static void key_excluding(struct gbuf *b, const struct keyname *k, int32_t n, int32_t depth)
{
    static const char PLAIN[] = "[^\"\\\\\\x00-\\x1F]";
    int32_t i = 0, n_alt = 0;
    wk__gbuf_puts(b, "( ");
    if (k[0].n == depth) {
        while (i < n && k[i].n == depth) i++; /* a name ends here: the key may not */
    } else {
        wk__gbuf_puts(b, "\"\"");
        n_alt++;
    }
    struct gbuf cls;
    wk__gbuf_init(&cls, 1 << 20);
    wk__gbuf_puts(&cls, "[^\"\\\\\\x00-\\x1F");
    while (i < n) {
        uint32_t cp = k[i].cp[depth];
        int32_t j = i;
        while (j < n && k[j].cp[depth] == cp) j++;
        wk__gbuf_put_cp(&cls, cp);
        if (n_alt++) wk__gbuf_puts(b, " | ");
        wk__gbuf_puts(b, "\"");
        wk__gbuf_put_cp(b, cp);
        wk__gbuf_puts(b, "\" ");
        if (depth + 1 < SC_MAX_KEY_DEPTH) key_excluding(b, k + i, j - i, depth + 1);
        else wk__gbuf_puts(b, "[^\\x00-\\U0010FFFF]"); /* too long to follow: stop (stricter) */
        i = j;
    }
    wk__gbuf_puts(&cls, "]");
    wk__gbuf_printf(b, "%s%s %s*", n_alt ? " | " : "", cls.s, PLAIN);
    wk__gbuf_taint(b, &cls);
    wk__gbuf_free(&cls);
    wk__gbuf_puts(b, " )");
}

/* Appends the expression of one additional member: key ":" value. */
static int additional_member(struct sc *c, const char *const *names, int32_t n_names,
                             const char *value, struct gbuf *out)
{
    struct keyname *k = wk_calloc((size_t)n_names + 1, sizeof *k);
    int32_t m = 0;
    if (!k) return wk__sc_fail(c, WK_E_NOMEM, "out of memory");
    for (int32_t i = 0; i < n_names; i++) {
        size_t len = strlen(names[i]);
        uint32_t *cp = wk_malloc((len + 1) * sizeof *cp);
        int32_t nc = 0;
        bool plain = cp != NULL;
        for (size_t at = 0; plain && at < len;) {
            int w = wk__utf8_decode((const uint8_t *)names[i] + at, len - at, &cp[nc]);
            if (w == 0 || cp[nc] < 0x20 || cp[nc] == '"' || cp[nc] == '\\') plain = false;
            at += (size_t)(w ? w : 1);
            nc++;
        }
        if (!plain) { /* cannot be written without escapes: no clash */
            wk_free(cp);
            continue;
        }
        k[m++] = (struct keyname){cp, nc};
    }
    struct gbuf b;
    wk__gbuf_init(&b, 1 << 24);
    if (m == 0) {
        c->used |= SC_STRING;
        wk__gbuf_puts(&b, "string");
    } else {
        qsort(k, (size_t)m, sizeof *k, cmp_key);
        wk__gbuf_puts(&b, "\"\\\"\" ");
        key_excluding(&b, k, m, 0);
        wk__gbuf_puts(&b, " \"\\\"\"");
    }
    wk__gbuf_printf(&b, " %s%s", SC_COLON, value);
    for (int32_t i = 0; i < m; i++) wk_free(k[i].cp);
    wk_free(k);
    int st = b.ok ? wk__sc_rule(c, b.s, out) : wk__sc_fail(c, SC_BUF_STATUS(&b), "object at %s: too large", c->path);
    wk__gbuf_free(&b);
    return st;
}

/* ------------------------------------------------------------- objects */

struct member {
    const char *name;
    char *expr; /* key ":" value, owned */
    bool required;
};

struct objgen {
    struct sc *c;
    struct member *m;
    int32_t n;
    const char *add; /* additional member expression, or NULL */
    int32_t add_max; /* at most this many additional members; -1 any */
    int32_t *rest_rule; /* per k: rule id of members(k, false), -1 none */
    bool use_rules;
};

/* The additional members after the declared ones: at the object's start
 * (first: none of them written) or after a member. */
static void members_add(const struct objgen *o, bool first, struct gbuf *b)
{
    if (!o->add || o->add_max == 0) return;
    char rep[32] = "*";
    if (o->add_max > 0) snprintf(rep, sizeof rep, "{0,%d}", first ? o->add_max - 1 : o->add_max);
    if (first) wk__gbuf_printf(b, "( %s ( %s%s )%s )? ", o->add, SC_SEP, o->add, rep);
    else wk__gbuf_printf(b, "( %s%s )%s ", SC_SEP, o->add, rep);
}

/* Members i.. after a member written: required ones with their comma,
 * optional ones optionally, then the additional ones. A loop, not a
 * recursion per member: an object of thousands of properties must not
 * run a connection thread's stack out. */
static void members_rest(const struct objgen *o, int32_t i, struct gbuf *b)
{
    for (; i < o->n && b->ok; i++) {
        const struct member *m = &o->m[i];
        if (m->required) wk__gbuf_printf(b, "%s%s ", SC_SEP, m->expr);
        else wk__gbuf_printf(b, "( %s%s )? ", SC_SEP, m->expr);
    }
    members_add(o, false, b);
}

/* members_rest(i), as a rule when the object is large (one rule per i,
 * made once). */
static void members_tail(struct objgen *o, int32_t i, struct gbuf *b)
{
    if (!o->use_rules || i >= o->n) {
        members_rest(o, i, b);
        return;
    }
    if (o->rest_rule[i] < 0) {
        struct gbuf t;
        wk__gbuf_init(&t, 1 << 24);
        members_rest(o, i, &t);
        struct gbuf ref;
        wk__gbuf_init(&ref, 64);
        if (t.ok && wk__sc_rule(o->c, t.n ? t.s : "\"\"", &ref) == SC_OK) o->rest_rule[i] = atoi(ref.s + 1);
        wk__gbuf_free(&ref);
        wk__gbuf_taint(b, &t);
        wk__gbuf_free(&t);
        if (o->rest_rule[i] < 0) {
            b->ok = false;
            return;
        }
    }
    wk__gbuf_printf(b, "x%d ", o->rest_rule[i]);
}

/* The members from the object's start: while they are optional, each
 * either present and followed by the rest (members_tail) or absent; from
 * the first required one on, members_rest. */
static void members(struct objgen *o, struct gbuf *b)
{
    int32_t i = 0, open = 0;
    for (; i < o->n && b->ok; i++) {
        const struct member *m = &o->m[i];
        if (m->required) {
            wk__gbuf_printf(b, "%s ", m->expr);
            members_rest(o, i + 1, b);
            break;
        }
        wk__gbuf_printf(b, "( %s ", m->expr);
        members_tail(o, i + 1, b);
        wk__gbuf_puts(b, "| ");
        open++;
    }
    if (i == o->n) members_add(o, true, b);
    while (open-- > 0) wk__gbuf_puts(b, ") ");
}

/* The value expression of schema s at path segment seg; long ones become
 * rules (they may be written several times). */
static int member_value(struct sc *c, const char *kw, const char *name, const json_t *s, struct gbuf *out)
{
    size_t saved, saved2;
    wk__sc_path_push(c, kw, &saved);
    if (name) wk__sc_path_push(c, name, &saved2);
    struct gbuf t;
    wk__gbuf_init(&t, 1 << 24);
    int st = wk__sc_gen(c, s, &t);
    if (st == SC_OK && !t.ok) st = wk__sc_fail(c, SC_BUF_STATUS(&t), "schema at %s: too large", c->path);
    if (st == SC_OK) {
        if (t.n > 120) st = wk__sc_rule(c, t.s, out);
        else wk__gbuf_put(out, t.s, t.n);
    }
    wk__gbuf_free(&t);
    wk__sc_path_pop(c, saved);
    return st;
}

/*
 * Counts minProperties / maxProperties against what the grammar can
 * write: minProperties only when the required members reach it (repeated
 * additional keys would count once); maxProperties bounds the additional
 * members as if every declared one were present (*add_max, -1: none).
 */
static int check_counts(struct sc *c, const json_t *s, int32_t n_req, int32_t n_all, bool add,
                        int32_t *add_max)
{
    const json_t *mn = json_object_get(s, "minProperties"), *mx = json_object_get(s, "maxProperties");
    *add_max = -1;
    if (mn && (!json_is_number(mn) || json_number_value(mn) > n_req))
        return wk__sc_fail(c, WK_E_UNSUPPORTED, "keyword \"minProperties\" at %s is not supported", c->path);
    if (!mx) return SC_OK;
    double v = json_number_value(mx);
    if (!json_is_number(mx) || v < 0) return wk__sc_fail(c, WK_E_INVALID, "maxProperties at %s is not a count", c->path);
    if (v < n_req) return SC_NEVER;
    if (v < n_all)
        return wk__sc_fail(c, WK_E_UNSUPPORTED, "keyword \"maxProperties\" at %s is not supported", c->path);
    if (add) *add_max = v - n_all > 1000 ? 1000 : (int32_t)(v - n_all);
    return SC_OK;
}

int wk__sc_object(struct sc *c, const json_t *s, struct gbuf *out)
{
    const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    const json_t *ap = json_object_get(s, "additionalProperties");
    if (props && !json_is_object(props)) return wk__sc_fail(c, WK_E_INVALID, "properties at %s is not an object", c->path);
    if (req && !json_is_array(req)) return wk__sc_fail(c, WK_E_INVALID, "required at %s is not an array", c->path);
    if (ap && !json_is_boolean(ap) && !json_is_object(ap))
        return wk__sc_fail(c, WK_E_INVALID, "additionalProperties at %s is not a schema", c->path);
    bool add = ap ? !json_is_false(ap) : !props;
    size_t n_max = (props ? json_object_size(props) : 0) + (req ? json_array_size(req) : 0);
    struct objgen o = {.c = c};
    o.m = wk_calloc(n_max + 1, sizeof *o.m);
    o.rest_rule = wk_malloc((n_max + 2) * sizeof *o.rest_rule);
    const char **names = wk_calloc(n_max + 1, sizeof *names);
    /* the required names and the names taken, as sets (hash tables: an
     * object of many thousands of names must not cost their square) */
    json_t *req_set = json_object(), *seen = json_object();
    int st = SC_OK;
    int32_t n_names = 0, n_req = 0;
    if (!o.m || !o.rest_rule || !names || !req_set || !seen) st = wk__sc_fail(c, WK_E_NOMEM, "out of memory");
    for (size_t i = 0; st == SC_OK && req && i < json_array_size(req); i++) {
        const char *name = json_string_value(json_array_get(req, i));
        if (!name) st = wk__sc_fail(c, WK_E_INVALID, "required at %s holds a non-string", c->path);
        else if (json_object_set(req_set, name, json_true())) st = wk__sc_fail(c, WK_E_NOMEM, "out of memory");
    }
    for (size_t pass = 0; pass < 2 && st == SC_OK; pass++) {
        size_t n = pass == 0 ? (props ? json_object_size(props) : 0) : (req ? json_array_size(req) : 0);
        void *it = pass == 0 && props ? json_object_iter((json_t *)props) : NULL;
        for (size_t i = 0; i < n && st == SC_OK; i++) {
            const char *name;
            const json_t *sub;
            if (pass == 0) {
                name = json_object_iter_key(it);
                sub = json_object_iter_value(it);
                it = json_object_iter_next((json_t *)props, it);
            } else {
                name = json_string_value(json_array_get(req, i)); /* a string: req_set's loop */
                if (json_object_get(seen, name)) continue;
                sub = ap ? ap : json_true();
            }
            if (json_object_set(seen, name, json_true())) {
                st = wk__sc_fail(c, WK_E_NOMEM, "out of memory");
                break;
            }
            names[n_names++] = name;
            bool required = json_object_get(req_set, name) != NULL;
            struct gbuf e;
            wk__gbuf_init(&e, 1 << 24);
            json_t *js = json_string(name);
            char *key = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
            json_decref(js);
            if (!key) {
                st = wk__sc_fail(c, WK_E_NOMEM, "out of memory");
                wk__gbuf_free(&e);
                break;
            }
            wk__gbuf_put_literal(&e, key, strlen(key));
            free(key);
            wk__gbuf_puts(&e, " " SC_COLON);
            int r = member_value(c, pass == 0 ? "properties" : "required", name, sub, &e);
            if (r == SC_ERR) st = SC_ERR;
            else if (r == SC_NEVER && required) st = SC_NEVER;
            else if (r == SC_OK) {
                o.m[o.n].name = name;
                o.m[o.n].required = required;
                o.m[o.n].expr = wk_strdup(e.s);
                n_req += required;
                if (!o.m[o.n++].expr) st = wk__sc_fail(c, WK_E_NOMEM, "out of memory");
            }
            wk__gbuf_free(&e);
        }
    }
    struct gbuf addm;
    wk__gbuf_init(&addm, 1 << 24);
    if (st == SC_OK && add) {
        struct gbuf v;
        wk__gbuf_init(&v, 1 << 24);
        int r = ap && json_is_object(ap) ? member_value(c, "additionalProperties", NULL, ap, &v) : SC_OK;
        if (!ap || json_is_true(ap)) c->used |= SC_VALUE, wk__gbuf_puts(&v, "value");
        if (r == SC_ERR) st = SC_ERR;
        else if (r == SC_NEVER) add = false;
        else st = additional_member(c, names, n_names, v.s, &addm);
        wk__gbuf_free(&v);
    }
    if (st == SC_OK) st = check_counts(c, s, n_req, o.n, add, &o.add_max);
    if (st == SC_OK) {
        o.add = add ? addm.s : NULL;
        int32_t lead = 0;
        while (lead < o.n && !o.m[lead].required) lead++;
        o.use_rules = lead > 4;
        for (size_t i = 0; i <= n_max; i++) o.rest_rule[i] = -1;
        wk__gbuf_puts(out, "( \"{\" ");
        members(&o, out);
        wk__gbuf_puts(out, "\"}\" )");
        if (!out->ok) st = wk__sc_fail(c, SC_BUF_STATUS(out), "object at %s: too large", c->path);
    }
    wk__gbuf_free(&addm);
    for (int32_t i = 0; i < o.n; i++) wk_free(o.m[i].expr);
    wk_free(o.m), wk_free(o.rest_rule), wk_free(names);
    json_decref(req_set), json_decref(seen);
    return st;
}

/* -------------------------------------------------------------- arrays */

static int64_t count_kw(struct sc *c, const json_t *s, const char *key, int64_t dflt)
{
    const json_t *x = json_object_get(s, key);
    if (!x) return dflt;
    double v = json_number_value(x);
    if (!json_is_number(x) || v < 0 || v != floor(v)) {
        wk__sc_fail(c, WK_E_INVALID, "%s at %s is not a non-negative integer", key, c->path);
        return -2;
    }
    return v > 1e9 ? 1000000000 : (int64_t)v;
}

int wk__sc_array(struct sc *c, const json_t *s, struct gbuf *out)
{
    const json_t *pre = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
    if (pre && !json_is_array(pre)) return wk__sc_fail(c, WK_E_INVALID, "prefixItems at %s is not an array", c->path);
    int64_t mn = count_kw(c, s, "minItems", 0), mx = count_kw(c, s, "maxItems", -1);
    if (mn == -2 || mx == -2) return SC_ERR;
    if (mn > SC_MAX_ITEMS) return wk__sc_fail(c, WK_E_UNSUPPORTED, "minItems over %d at %s", SC_MAX_ITEMS, c->path);
    bool unbounded = mx < 0;
    if (mx > SC_MAX_ITEMS) mx = SC_MAX_ITEMS; /* stricter: at most 1000 items */
    if (unbounded) mx = INT32_MAX;
    int64_t k = pre ? (int64_t)json_array_size(pre) : 0;
    if (k > SC_MAX_ITEMS) k = SC_MAX_ITEMS;
    struct gbuf *e = wk_calloc((size_t)k + 1, sizeof *e);
    if (!e) return wk__sc_fail(c, WK_E_NOMEM, "out of memory");
    int st = SC_OK;
    for (int64_t j = 0; j <= k && st == SC_OK; j++) {
        wk__gbuf_init(&e[j], 1 << 24);
        if (j >= mx) break;
        char seg[40];
        int r;
        if (j < k) {
            snprintf(seg, sizeof seg, "%lld", (long long)j);
            r = member_value(c, "prefixItems", seg, json_array_get(pre, (size_t)j), &e[j]);
        } else if (items) {
            r = member_value(c, "items", NULL, items, &e[j]);
        } else {
            c->used |= SC_VALUE;
            wk__gbuf_puts(&e[j], "value");
            r = SC_OK;
        }
        if (r == SC_ERR) st = SC_ERR;
        if (r == SC_NEVER && mx > j) mx = j;
    }
    if (st == SC_OK && mn > mx) st = SC_NEVER;
    if (st == SC_OK) {
        wk__gbuf_puts(out, "( \"[\" ");
        int64_t j = 0, open = 0;
        for (; j < k && j < mx; j++) { /* the prefix, nested where optional */
            if (j >= mn) wk__gbuf_puts(out, "( "), open++;
            wk__gbuf_printf(out, "%s%s ", j ? SC_SEP : "", e[j].s);
        }
        if (j == k && j < mx) { /* items after the prefix */
            int64_t a = mn > j ? mn - j : 0, b = mx - j;
            const char *x = e[k].s;
            char rep1[48], rep0[48]; /* {a-1,b-1} and {a,b}, b unbounded when mx is */
            if (mx == INT32_MAX) {
                snprintf(rep1, sizeof rep1, "{%lld,}", (long long)(a > 0 ? a - 1 : 0));
                snprintf(rep0, sizeof rep0, "{%lld,}", (long long)a);
            } else {
                snprintf(rep1, sizeof rep1, "{%lld,%lld}", (long long)(a > 0 ? a - 1 : 0), (long long)b - 1);
                snprintf(rep0, sizeof rep0, "{%lld,%lld}", (long long)a, (long long)b);
            }
            if (j == 0 && a >= 1) wk__gbuf_printf(out, "%s ( %s%s )%s ", x, SC_SEP, x, rep1);
            else if (j == 0) wk__gbuf_printf(out, "( %s ( %s%s )%s )? ", x, SC_SEP, x, rep1);
            else wk__gbuf_printf(out, "( %s%s )%s ", SC_SEP, x, rep0);
        }
        for (; open > 0; open--) wk__gbuf_puts(out, ")? ");
        wk__gbuf_puts(out, "\"]\" )");
        if (!out->ok) st = wk__sc_fail(c, SC_BUF_STATUS(out), "array at %s: too large", c->path);
    }
    for (int64_t j = 0; j <= k; j++) wk__gbuf_free(&e[j]);
    wk_free(e);
    return st;
}
