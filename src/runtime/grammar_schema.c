/*
 * grammar_schema.c - JSON Schema (draft 2020-12) to GBNF, then compiled
 * with wk_grammar_from_gbnf (wk_grammar.h).
 *
 * Every schema becomes a GBNF expression (struct sc, grammar_int.h):
 * "true" or "{}" any value; otherwise the alternatives of the JSON types
 * it allows ("type", or all of them), each written from the keywords of
 * its type (grammar_schema_obj.c for objects and arrays,
 * grammar_schema_types.c for strings and numbers). enum / const are the
 * literal values (those that also pass the schema's other keywords, found
 * by matching them against a grammar of the rest). anyOf / oneOf are
 * alternatives (oneOf only where no two alternatives can match the same
 * text); allOf and $ref with siblings are merged into one schema first;
 * a lone $ref is a rule (so recursion works). Soundness first: what
 * cannot be written exactly is refused with WK_E_UNSUPPORTED naming the
 * keyword and its JSON path, or written stricter.
 */
#include "grammar_int.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define SC_MAX_DEPTH 64
#define SC_MAX_GBNF (24 << 20)
#define SC_MAX_ENUM 10000 /* values of one enum: compile time grows with their square */

int wk__sc_fail(struct sc *c, enum wk_status st, const char *fmt, ...)
{
    if (c->st == WK_OK) {
        char msg[WK_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        c->st = wk_error_set(c->err, st, "json schema: %s", msg);
    }
    return SC_ERR;
}

void wk__sc_path_push(struct sc *c, const char *seg, size_t *saved)
{
    *saved = c->path_len;
    size_t room = sizeof c->path - c->path_len;
    if (room < 8) return;
    char tmp[96];
    size_t k = 0;
    for (const char *p = seg; *p && k + 3 < sizeof tmp; p++) { /* JSON pointer escapes */
        if (*p == '~') tmp[k++] = '~', tmp[k++] = '0';
        else if (*p == '/') tmp[k++] = '~', tmp[k++] = '1';
        else tmp[k++] = *p;
    }
    tmp[k] = '\0';
    int n = snprintf(c->path + c->path_len, room, "/%s", tmp);
    if (n > 0) c->path_len += (size_t)n < room ? (size_t)n : room - 1;
}

void wk__sc_path_pop(struct sc *c, size_t saved)
{
    c->path_len = saved;
    c->path[saved] = '\0';
}

int wk__sc_rule(struct sc *c, const char *expr, struct gbuf *out)
{
    int32_t id = c->next_id++;
    wk__gbuf_printf(&c->rules, "x%d ::= ", id);
    wk__gbuf_puts(&c->rules, expr);
    wk__gbuf_puts(&c->rules, "\n");
    wk__gbuf_printf(out, "x%d", id);
    if (!c->rules.ok || !out->ok) return wk__sc_fail(c, c->rules.nomem || out->nomem ? WK_E_NOMEM : WK_E_RANGE, "grammar for the schema over %d bytes", SC_MAX_GBNF);
    return SC_OK;
}

/* ------------------------------------------------------------ keywords */

static const char *const ANNOTATIONS[] = {
    "title", "description", "default", "examples", "$schema", "$id", "$comment", "readOnly",
    "writeOnly", "deprecated", "$anchor", "$dynamicAnchor", "$vocabulary", "$defs", "definitions",
    "contentEncoding", "contentMediaType", "contentSchema", NULL};
static const char *const SUPPORTED[] = {
    "type", "properties", "required", "additionalProperties", "enum", "const", "items",
    "prefixItems", "minItems", "maxItems", "minLength", "maxLength", "pattern", "anyOf", "oneOf",
    "allOf", "$ref", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "format",
    "minProperties", "maxProperties", "uniqueItems", "minContains", "maxContains", "if", "then",
    "else", "unevaluatedProperties", "unevaluatedItems", NULL};
static const char *const REFUSED[] = {
    "not", "dependentRequired", "dependentSchemas", "patternProperties", "propertyNames",
    "multipleOf", "contains", "$dynamicRef", "$recursiveRef", "$recursiveAnchor",
    "additionalItems", "dependencies", "divisibleBy", "disallow", "extends", NULL};

static bool in_list(const char *k, const char *const *l)
{
    for (; *l; l++)
        if (!strcmp(k, *l)) return true;
    return false;
}

static bool trivially_true(const json_t *v)
{
    return json_is_true(v) || (json_is_object(v) && json_object_size(v) == 0);
}

/* Refuses the constraining keywords not supported (naming them); the
 * ones here with no effect in this schema pass. */
static int check_keywords(struct sc *c, const json_t *s)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        /* a refused keyword with a trivially true value (propertyNames: true)
         * constrains nothing, except not and contains */
        bool bad = in_list(k, REFUSED) &&
                   !(trivially_true(v) && strcmp(k, "not") != 0 && strcmp(k, "contains") != 0);
        if (!strcmp(k, "uniqueItems")) bad = !json_is_false(v);
        if (!strcmp(k, "if")) bad = json_object_get(s, "then") || json_object_get(s, "else");
        if (!strcmp(k, "unevaluatedProperties") || !strcmp(k, "unevaluatedItems")) bad = !trivially_true(v);
        if (bad)
            return wk__sc_fail(c, WK_E_UNSUPPORTED, "keyword \"%s\" at %s is not supported", k,
                               c->path);
    }
    return SC_OK;
}

/* Whether s has a keyword other than annotations and skip (a NULL-ended list). */
static bool has_constraints(const json_t *s, const char *const *skip)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        if (in_list(k, ANNOTATIONS) || in_list(k, skip)) continue;
        if (in_list(k, SUPPORTED) || in_list(k, REFUSED)) return true;
    }
    return false;
}

/* ------------------------------------------------------------------ $ref */

/* Finds the subschemas with "$anchor": name; false if a nested $id makes
 * anchors ambiguous (or the walk is too deep). */
static bool find_anchor(const json_t *x, const char *name, const json_t **found, int *n, int depth)
{
    if (depth > 200) return false;
    if (json_is_object(x)) {
        const json_t *a = json_object_get(x, "$anchor"), *id = json_object_get(x, "$id");
        if (depth > 0 && id) return false;
        if (json_is_string(a) && !strcmp(json_string_value(a), name)) *found = x, (*n)++;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)x, k, v) {
            if (!strcmp(k, "enum") || !strcmp(k, "const") || !strcmp(k, "default") || !strcmp(k, "examples")) continue;
            if (!find_anchor(v, name, found, n, depth + 1)) return false;
        }
    } else if (json_is_array(x)) {
        size_t i;
        const json_t *v;
        json_array_foreach(x, i, v) if (!find_anchor(v, name, found, n, depth + 1)) return false;
    }
    return true;
}

static const json_t *resolve_ref(struct sc *c, const char *ref)
{
    if (ref[0] != '#')
        return wk__sc_fail(c, WK_E_UNSUPPORTED, "$ref \"%.100s\" at %s: only references inside the schema (#...)",
                           ref, c->path), NULL;
    const json_t *x = c->doc;
    const char *p = ref + 1;
    if (*p && *p != '/') { /* an $anchor: only where no subschema has an $id of its own */
        const json_t *found = NULL;
        int n = 0;
        if (find_anchor(c->doc, p, &found, &n, 0) && n == 1) return found;
        return wk__sc_fail(c, WK_E_UNSUPPORTED, "$ref \"%.100s\" at %s: anchor not found or not unique "
                           "(or the schema has embedded $id resources)", ref, c->path), NULL;
    }
    while (*p == '/') {
        p++;
        char seg[256];
        size_t k = 0;
        for (; *p && *p != '/' && k + 1 < sizeof seg; p++) {
            if (*p == '~' && p[1] == '0') seg[k++] = '~', p++;
            else if (*p == '~' && p[1] == '1') seg[k++] = '/', p++;
            else if (*p == '%' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
                char h[3] = {p[1], p[2], 0};
                seg[k++] = (char)strtol(h, NULL, 16);
                p += 2;
            } else seg[k++] = *p;
        }
        seg[k] = '\0';
        if (json_is_object(x)) {
            x = json_object_get(x, seg);
        } else if (json_is_array(x)) {
            char *end;
            long i = strtol(seg, &end, 10);
            x = *end || k == 0 ? NULL : json_array_get(x, (size_t)i);
        } else {
            x = NULL;
        }
        if (!x) break;
    }
    if (!x) return wk__sc_fail(c, WK_E_INVALID, "$ref \"%.100s\" at %s: no such schema", ref, c->path), NULL;
    return x;
}

static int gen_ref(struct sc *c, const json_t *target, struct gbuf *out)
{
    for (int32_t i = 0; i < c->n_refs; i++)
        if (c->refs[i].node == target) {
            wk__gbuf_printf(out, "x%d", c->refs[i].id);
            return SC_OK;
        }
    if (c->n_refs >= c->cap_refs) {
        int32_t cap = c->cap_refs ? c->cap_refs * 2 : 16;
        struct sc_ref *r = wk_realloc(c->refs, (size_t)cap * sizeof *r);
        if (!r) return wk__sc_fail(c, WK_E_NOMEM, "out of memory");
        c->refs = r;
        c->cap_refs = cap;
    }
    int32_t id = c->next_id++;
    c->refs[c->n_refs++] = (struct sc_ref){target, id};
    struct gbuf b;
    wk__gbuf_init(&b, SC_MAX_GBNF);
    int st = wk__sc_gen(c, target, &b);
    if (st == SC_OK) {
        wk__gbuf_printf(&c->rules, "x%d ::= %s\n", id, b.s);
        wk__gbuf_printf(out, "x%d", id);
    } else if (st == SC_NEVER) { /* a rule that matches nothing would not compile */
        st = wk__sc_fail(c, WK_E_INVALID, "the schema referenced at %s matches nothing", c->path);
    }
    wk__gbuf_free(&b);
    return st;
}

/* ------------------------------------------------------------------ allOf */

/* The schema with $ref and allOf folded into one object (kept in c->keep),
 * or s itself when it has neither. NULL on error. */
static const json_t *fold(struct sc *c, const json_t *s)
{
    const json_t *ref = json_object_get(s, "$ref"), *all = json_object_get(s, "allOf");
    if (!all && !(ref && has_constraints(s, (const char *const[]){"$ref", NULL}))) return s;
    json_t *rest = json_deep_copy(s);
    if (!rest) return wk__sc_fail(c, WK_E_NOMEM, "out of memory"), NULL;
    json_object_del(rest, "allOf");
    json_object_del(rest, "$ref");
    json_t *acc = rest;
    if (ref) {
        if (!json_is_string(ref)) {
            json_decref(acc);
            return wk__sc_fail(c, WK_E_INVALID, "$ref at %s is not a string", c->path), NULL;
        }
        const json_t *t = resolve_ref(c, json_string_value(ref));
        json_t *m = t ? wk__sc_merge(c, acc, t) : NULL;
        json_decref(acc);
        if (!m) return NULL;
        acc = m;
    }
    if (all) {
        if (!json_is_array(all) || json_array_size(all) == 0) {
            json_decref(acc);
            return wk__sc_fail(c, WK_E_INVALID, "allOf at %s is not a non-empty array", c->path), NULL;
        }
        size_t i;
        const json_t *x;
        json_array_foreach(all, i, x) {
            const json_t *y = x;
            if (json_is_object(x) && json_object_get(x, "$ref") && json_object_size(x) == 1) {
                y = resolve_ref(c, json_string_value(json_object_get(x, "$ref")) ?: "");
                if (!y) {
                    json_decref(acc);
                    return NULL;
                }
            }
            json_t *m = wk__sc_merge(c, acc, y);
            json_decref(acc);
            if (!m) return NULL;
            acc = m;
        }
    }
    if (json_array_append_new(c->keep, acc) != 0) return wk__sc_fail(c, WK_E_NOMEM, "out of memory"), NULL;
    return acc;
}

/* -------------------------------------------------------------- enum */

static int gen_types(struct sc *c, const json_t *s, struct gbuf *out);

/* Whether the compact JSON text v matches the grammar of schema s (in
 * document c->doc): used to keep only the enum values s allows. */
static int value_ok(struct sc *c, const json_t *s, const char *text, struct wk_grammar **g,
                    struct wk_grammar_matcher **m, struct wk_grammar_vocab *v)
{
    if (!*g) {
        struct sc sub = {.doc = c->doc, .err = c->err, .depth = c->depth, .next_id = 0, .merged = c->merged};
        wk__gbuf_init(&sub.rules, SC_MAX_GBNF);
        sub.keep = json_array();
        memcpy(sub.path, c->path, sizeof c->path);
        sub.path_len = c->path_len;
        struct gbuf root;
        wk__gbuf_init(&root, SC_MAX_GBNF);
        wk__gbuf_puts(&root, "root ::= ");
        int st = sub.keep ? gen_types(&sub, s, &root) : SC_ERR;
        if (st == SC_OK) {
            wk__gbuf_puts(&root, "\n");
            wk__sc_shared_rules(&sub);
            wk__gbuf_put(&root, sub.rules.s ? sub.rules.s : "", sub.rules.n);
            if (!root.ok) st = wk__sc_fail(&sub, SC_BUF_STATUS(&root), "enum check grammar too large");
            else if (wk_grammar_from_gbnf(root.s, root.n, NULL, g, c->err) != WK_OK ||
                     wk_grammar_matcher_create(*g, v, m, c->err) != WK_OK)
                st = SC_ERR, sub.st = c->err ? c->err->status : WK_E_INTERNAL;
        }
        if (st == SC_ERR) c->st = sub.st != WK_OK ? sub.st : WK_E_INTERNAL;
        c->merged = sub.merged; /* one budget for the whole schema */
        wk__gbuf_free(&root);
        wk__gbuf_free(&sub.rules);
        wk_free(sub.refs);
        json_decref(sub.keep);
        if (st != SC_OK) return st;
    }
    bool ok = wk_grammar_matcher_accept_bytes(*m, text, strlen(text));
    ok = ok && wk_grammar_matcher_is_complete(*m);
    wk_grammar_matcher_reset(*m);
    return ok ? SC_OK : SC_NEVER;
}

static int gen_enum(struct sc *c, const json_t *s, struct gbuf *out)
{
    const json_t *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
    if (en && !json_is_array(en)) return wk__sc_fail(c, WK_E_INVALID, "enum at %s is not an array", c->path);
    if (en && json_array_size(en) > SC_MAX_ENUM)
        return wk__sc_fail(c, WK_E_RANGE, "enum at %s has %zu values (at most %d)", c->path,
                           json_array_size(en), SC_MAX_ENUM);
    bool check = has_constraints(s, (const char *const[]){"enum", "const", NULL});
    struct wk_grammar *g = NULL;
    struct wk_grammar_matcher *m = NULL;
    struct wk_grammar_vocab *v = NULL;
    if (check) {
        const char *one = "x";
        size_t len = 1;
        if (wk_grammar_vocab_create_from_bytes(&one, &len, 1, NULL, 0, &v, c->err) != WK_OK)
            return wk__sc_fail(c, WK_E_NOMEM, "out of memory");
    }
    size_t n = cn ? 1 : json_array_size(en);
    int n_alt = 0, st = SC_OK;
    for (size_t i = 0; i < n && st != SC_ERR; i++) {
        const json_t *x = cn ? cn : json_array_get(en, i);
        if (cn && en) { /* both: const must be among the enum values */
            bool found = false;
            for (size_t k = 0; k < json_array_size(en); k++) found |= json_equal((json_t *)x, json_array_get(en, k));
            if (!found) continue;
        }
        bool dup = false; /* a repeated value adds nothing */
        for (size_t k = 0; k < i && !cn; k++) dup |= json_equal((json_t *)x, json_array_get(en, k));
        if (dup) continue;
        char *text = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
        if (!text) {
            st = wk__sc_fail(c, WK_E_NOMEM, "out of memory");
            break;
        }
        int ok = check ? value_ok(c, s, text, &g, &m, v) : SC_OK;
        if (ok == SC_ERR) st = SC_ERR;
        if (ok == SC_OK) {
            wk__gbuf_puts(out, n_alt++ ? " | " : "( ");
            wk__gbuf_put_literal(out, text, strlen(text));
        }
        free(text);
    }
    wk_grammar_matcher_free(m);
    wk_grammar_free(g);
    wk_grammar_vocab_free(v);
    if (st == SC_ERR) return st;
    if (n_alt) wk__gbuf_puts(out, " )");
    return n_alt ? SC_OK : SC_NEVER;
}

/* ------------------------------------------------------------ dispatch */

static int type_mask(struct sc *c, const json_t *s, unsigned *mask)
{
    static const char *const names[] = {"null", "boolean", "object", "array", "string", "number", "integer"};
    const json_t *t = json_object_get(s, "type");
    *mask = 0x3f; /* all but integer (number covers it) */
    if (!t) return SC_OK;
    *mask = 0;
    size_t n = json_is_array(t) ? json_array_size(t) : 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_is_array(t) ? json_array_get(t, i) : t;
        const char *nm = json_string_value(x);
        int k = 0;
        while (nm && k < 7 && strcmp(nm, names[k])) k++;
        if (!nm || k == 7) return wk__sc_fail(c, WK_E_INVALID, "type at %s: not a JSON Schema type", c->path);
        *mask |= 1u << k;
    }
    if ((*mask & 0x20) && (*mask & 0x40)) *mask &= ~0x40u;
    return SC_OK;
}

/* The alternatives of the types s allows, each from its keywords. */
static int gen_types(struct sc *c, const json_t *s, struct gbuf *out)
{
    unsigned mask;
    if (type_mask(c, s, &mask) == SC_ERR) return SC_ERR;
    int n_alt = 0;
    struct gbuf b;
    wk__gbuf_init(&b, SC_MAX_GBNF);
    for (int k = 0; k < 7; k++) {
        if (!(mask & (1u << k))) continue;
        struct gbuf t;
        wk__gbuf_init(&t, SC_MAX_GBNF);
        int st = SC_OK;
        switch (k) {
        case 0: wk__gbuf_puts(&t, "\"null\""); break;
        case 1: wk__gbuf_puts(&t, "( \"true\" | \"false\" )"); break;
        case 2: st = wk__sc_object(c, s, &t); break;
        case 3: st = wk__sc_array(c, s, &t); break;
        case 4: st = wk__sc_string(c, s, &t); break;
        case 5: st = wk__sc_number(c, s, false, &t); break;
        case 6: st = wk__sc_number(c, s, true, &t); break;
        }
        if (st == SC_OK) {
            if (n_alt++) wk__gbuf_puts(&b, " | ");
            wk__gbuf_put(&b, t.s, t.n);
        }
        wk__gbuf_taint(&b, &t);
        wk__gbuf_free(&t);
        if (st == SC_ERR) {
            wk__gbuf_free(&b);
            return SC_ERR;
        }
    }
    if (n_alt > 1) wk__gbuf_printf(out, "( %s )", b.s);
    else if (n_alt == 1) wk__gbuf_put(out, b.s, b.n);
    wk__gbuf_taint(out, &b);
    wk__gbuf_free(&b);
    return n_alt ? SC_OK : SC_NEVER;
}

/* anyOf / oneOf: each alternative merged with the rest of s. */
static int gen_any_of(struct sc *c, const json_t *s, struct gbuf *out)
{
    const json_t *any = json_object_get(s, "anyOf"), *one = json_object_get(s, "oneOf");
    if (any && one) return wk__sc_fail(c, WK_E_UNSUPPORTED, "anyOf with oneOf at %s", c->path);
    const json_t *list = any ? any : one;
    const char *kw = any ? "anyOf" : "oneOf";
    if (!json_is_array(list) || json_array_size(list) == 0)
        return wk__sc_fail(c, WK_E_INVALID, "%s at %s is not a non-empty array", kw, c->path);
    json_t *rest = json_deep_copy(s);
    if (!rest || json_array_append_new(c->keep, rest) != 0) return wk__sc_fail(c, WK_E_NOMEM, "out of memory");
    json_object_del(rest, kw);
    bool plain = !has_constraints(rest, (const char *const[]){NULL});
    size_t n = json_array_size(list);
    const json_t **alt = wk_malloc(n * sizeof *alt);
    if (!alt) return wk__sc_fail(c, WK_E_NOMEM, "out of memory");
    int n_alt = 0, st = SC_OK;
    wk__gbuf_puts(out, "( ");
    for (size_t i = 0; i < n && st != SC_ERR; i++) {
        size_t saved, saved2;
        char seg[32];
        snprintf(seg, sizeof seg, "%zu", i);
        wk__sc_path_push(c, kw, &saved);
        wk__sc_path_push(c, seg, &saved2);
        const json_t *x = json_array_get(list, i);
        if (!plain) {
            json_t *m = wk__sc_merge(c, rest, x);
            if (!m || json_array_append_new(c->keep, m) != 0) st = SC_ERR;
            x = m;
        }
        alt[i] = x;
        if (st != SC_ERR && one)
            for (size_t k = 0; k < i && st != SC_ERR; k++)
                if (alt[k] && !wk__sc_disjoint(c, alt[k], x))
                    st = c->st != WK_OK ? SC_ERR
                                        : wk__sc_fail(c, WK_E_UNSUPPORTED,
                                                      "oneOf at %s: alternatives %zu and %zu may both match", c->path, k, i);
        if (st != SC_ERR) {
            struct gbuf t;
            wk__gbuf_init(&t, SC_MAX_GBNF);
            int r = wk__sc_gen(c, x, &t);
            if (r == SC_ERR) st = SC_ERR;
            if (r == SC_OK) {
                if (n_alt++) wk__gbuf_puts(out, " | ");
                wk__gbuf_put(out, t.s, t.n);
            }
            wk__gbuf_taint(out, &t);
            wk__gbuf_free(&t);
        }
        wk__sc_path_pop(c, saved);
    }
    wk_free(alt);
    wk__gbuf_puts(out, " )");
    if (st == SC_ERR) return st;
    return n_alt ? SC_OK : SC_NEVER;
}

int wk__sc_gen(struct sc *c, const json_t *s, struct gbuf *out)
{
    if (json_is_true(s)) {
        c->used |= SC_VALUE;
        wk__gbuf_puts(out, "value");
        return SC_OK;
    }
    if (json_is_false(s)) return SC_NEVER;
    if (!json_is_object(s))
        return wk__sc_fail(c, WK_E_INVALID, "the schema at %s is not an object or a boolean", c->path);
    if (c->depth >= SC_MAX_DEPTH)
        return wk__sc_fail(c, WK_E_RANGE, "schema nested deeper than %d levels at %s", SC_MAX_DEPTH, c->path);
    if (check_keywords(c, s) == SC_ERR) return SC_ERR;
    c->depth++;
    int st;
    const json_t *f = fold(c, s);
    const json_t *ref = f ? json_object_get(f, "$ref") : NULL;
    if (!f) {
        st = SC_ERR;
    } else if (f != s) {
        st = wk__sc_gen(c, f, out);
    } else if (ref) {
        const json_t *t = json_is_string(ref) ? resolve_ref(c, json_string_value(ref)) : NULL;
        if (!json_is_string(ref)) wk__sc_fail(c, WK_E_INVALID, "$ref at %s is not a string", c->path);
        st = t ? gen_ref(c, t, out) : SC_ERR;
    } else if (json_object_get(s, "anyOf") || json_object_get(s, "oneOf")) {
        st = gen_any_of(c, s, out);
    } else if (json_object_get(s, "enum") || json_object_get(s, "const")) {
        st = gen_enum(c, s, out);
    } else if (!has_constraints(s, (const char *const[]){NULL})) {
        c->used |= SC_VALUE;
        wk__gbuf_puts(out, "value");
        st = SC_OK;
    } else {
        st = gen_types(c, s, out);
    }
    c->depth--;
    if (!out->ok && st != SC_ERR) st = wk__sc_fail(c, SC_BUF_STATUS(out), "grammar for the schema over %d bytes", SC_MAX_GBNF);
    return st;
}

/* ------------------------------------------------------------ entry */

static enum wk_status to_gbnf(const json_t *schema, bool object_only, char **out, struct wk_error *err)
{
    *out = NULL;
    struct sc c = {.doc = schema, .err = err, .path = "#", .path_len = 1};
    wk__gbuf_init(&c.rules, SC_MAX_GBNF);
    c.keep = json_array();
    struct gbuf root;
    wk__gbuf_init(&root, SC_MAX_GBNF);
    wk__gbuf_puts(&root, "root ::= ");
    int st;
    if (!c.keep) {
        st = wk__sc_fail(&c, WK_E_NOMEM, "out of memory");
    } else if (object_only) {
        c.used |= SC_OBJECT;
        wk__gbuf_puts(&root, "object");
        st = SC_OK;
    } else {
        st = wk__sc_gen(&c, schema, &root);
        if (st == SC_NEVER) st = wk__sc_fail(&c, WK_E_INVALID, "the schema matches nothing");
    }
    if (st == SC_OK) {
        wk__gbuf_puts(&root, "\n");
        wk__sc_shared_rules(&c);
        wk__gbuf_put(&root, c.rules.s ? c.rules.s : "", c.rules.n);
        if (!root.ok || !c.rules.ok) st = wk__sc_fail(&c, root.nomem || c.rules.nomem ? WK_E_NOMEM : WK_E_RANGE, "grammar for the schema over %d bytes", SC_MAX_GBNF);
    }
    wk__gbuf_free(&c.rules);
    wk_free(c.refs);
    json_decref(c.keep);
    if (st != SC_OK) {
        wk__gbuf_free(&root);
        return c.st != WK_OK ? c.st : WK_E_INTERNAL;
    }
    *out = root.s;
    return WK_OK;
}

enum wk_status wk_grammar_json_schema_to_gbnf(const json_t *schema, char **out, struct wk_error *err)
{
    return to_gbnf(schema, false, out, err);
}

static enum wk_status compile(const json_t *schema, bool object_only, struct wk_grammar **out,
                              struct wk_error *err)
{
    *out = NULL;
    char *text;
    enum wk_status st = to_gbnf(schema, object_only, &text, err);
    if (st != WK_OK) return st;
    st = wk_grammar_from_gbnf(text, strlen(text), "root", out, err);
    if (st != WK_OK) wk_error_prefix(err, st, "json schema: ");
    wk_free(text);
    return st;
}

enum wk_status wk_grammar_from_json_schema(const json_t *schema, struct wk_grammar **out,
                                           struct wk_error *err)
{
    if (!schema) {
        *out = NULL;
        return wk_error_set(err, WK_E_INVALID, "json schema: none given");
    }
    return compile(schema, false, out, err);
}

enum wk_status wk_grammar_json_object(struct wk_grammar **out, struct wk_error *err)
{
    return compile(NULL, true, out, err);
}
