/*
 * gotmpl_builtins.c - the functions of the Go text/template engine:
 * Go's built-ins not, len, index, slice, eq, ne, lt, le, gt, ge, print,
 * printf, println (and and / or, which the executor short-circuits), and
 * Ollama's json (currentDate, yesterdayDate and toTypeScriptType are in
 * gotmpl_ollama.c). Errors are worded as Go's.
 */
#include "gotmpl_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const names[GF_COUNT_] = {
    [GF_AND] = "and",     [GF_OR] = "or",       [GF_NOT] = "not",   [GF_LEN] = "len",
    [GF_INDEX] = "index", [GF_SLICE] = "slice", [GF_EQ] = "eq",     [GF_NE] = "ne",
    [GF_LT] = "lt",       [GF_LE] = "le",       [GF_GT] = "gt",     [GF_GE] = "ge",
    [GF_PRINT] = "print", [GF_PRINTF] = "printf", [GF_PRINTLN] = "println", [GF_JSON] = "json",
    [GF_CURRENT_DATE] = "currentDate", [GF_YESTERDAY_DATE] = "yesterdayDate",
    [GF_TO_TS_TYPE] = "toTypeScriptType",
};

int gt_func_lookup(const char *name, size_t n)
{
    for (int i = 0; i < GF_COUNT_; i++)
        if (strlen(names[i]) == n && !memcmp(names[i], name, n)) return i;
    return -1;
}

const char *gt_func_name(int id)
{
    return id >= 0 && id < GF_COUNT_ ? names[id] : "?";
}

struct call {
    char *msg;
    size_t msg_size;
    struct gt_prov *prov;
};

static enum wk_status err(struct call *c, enum wk_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum wk_status err(struct call *c, enum wk_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, c->msg_size, fmt, ap);
    va_end(ap);
    return st;
}

/* ------------------------------------------------------------ comparison */

enum kind { K_NIL, K_BOOL, K_INT, K_FLOAT, K_STRING, K_OTHER };

static enum kind kind_of(const json_t *v)
{
    if (!v || json_is_null(v)) return K_NIL;
    if (json_is_boolean(v)) return K_BOOL;
    if (json_is_integer(v)) return K_INT;
    if (json_is_real(v)) return K_FLOAT;
    if (json_is_string(v)) return K_STRING;
    return K_OTHER;
}

/* -1, 0, 1 for a < b, a == b, a > b (same basic kind, not nil / other). */
static int compare(const json_t *a, const json_t *b)
{
    switch (kind_of(a)) {
    case K_BOOL: return json_is_true(a) - json_is_true(b);
    case K_INT: {
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return (x > y) - (x < y);
    }
    case K_FLOAT: {
        double x = json_real_value(a), y = json_real_value(b);
        return (x > y) - (x < y) + 2 * (x != x || y != y); /* NaN: unequal */
    }
    case K_STRING: {
        size_t la = json_string_length(a), lb = json_string_length(b);
        int c = memcmp(json_string_value(a), json_string_value(b), la < lb ? la : lb);
        return c ? (c > 0) - (c < 0) : (la > lb) - (la < lb);
    }
    default: return 0;
    }
}

static enum wk_status fn_eq(struct call *c, json_t *const *a, int n, bool *out)
{
    if (n < 2) return err(c, WK_E_INVALID, "missing argument for comparison");
    enum kind k1 = kind_of(a[0]);
    *out = false;
    for (int i = 1; i < n; i++) {
        enum kind k2 = kind_of(a[i]);
        if (k1 != k2) {
            if (k1 != K_NIL && k2 != K_NIL)
                return err(c, WK_E_INVALID, "incompatible types for comparison");
            continue;
        }
        if (k1 == K_OTHER) return err(c, WK_E_INVALID, "non-comparable type %s", gt_type_name(c->prov, a[0]));
        if (k1 == K_NIL || compare(a[0], a[i]) == 0) {
            *out = true;
            return WK_OK;
        }
    }
    return WK_OK;
}

/* lt (GF_LT) and its kin. */
static enum wk_status fn_order(struct call *c, int id, json_t *const *a, int n, bool *out)
{
    if (n != 2) return err(c, WK_E_INVALID, "wrong number of args: want 2 got %d", n);
    if (id == GF_NE) {
        enum wk_status st = fn_eq(c, a, 2, out);
        *out = !*out;
        return st;
    }
    enum kind k1 = kind_of(a[0]), k2 = kind_of(a[1]);
    if (k1 == K_NIL || k1 == K_BOOL || k1 == K_OTHER || k2 == K_NIL || k2 == K_BOOL ||
        k2 == K_OTHER)
        return err(c, WK_E_INVALID, "invalid type for comparison");
    if (k1 != k2) return err(c, WK_E_INVALID, "incompatible types for comparison");
    int r = compare(a[0], a[1]);
    /* r == 2: a NaN, neither less, equal nor greater */
    switch (id) {
    case GF_LT: *out = r == -1; break;
    case GF_LE: *out = r == -1 || r == 0; break;
    case GF_GT: *out = r == 1; break;
    default: *out = r == 1 || r == 0; break;
    }
    return WK_OK;
}

/* --------------------------------------------------------------- access */

static enum wk_status fn_len(struct call *c, json_t *const *a, int n, json_t **out)
{
    if (n != 1) return err(c, WK_E_INVALID, "wrong number of args for len: want 1 got %d", n);
    const json_t *v = a[0];
    size_t len;
    const struct gt_type *ty = gt_prov_type(c->prov, v, NULL);
    if (!v || json_is_null(v)) return err(c, WK_E_INVALID, "len of nil pointer");
    if (ty && ty->kind == GT_STRUCT) /* len looks through a pointer */
        return err(c, WK_E_INVALID, "len of type %s", ty->name + (ty->pointer && ty->name[0] == '*'));
    if (json_is_string(v)) len = json_string_length(v);
    else if (json_is_array(v)) len = json_array_size(v);
    else if (json_is_object(v)) len = json_object_size(v);
    else return err(c, WK_E_INVALID, "len of type %s", gt_type_name(c->prov, v));
    *out = json_integer((json_int_t)len);
    return *out ? WK_OK : WK_E_NOMEM;
}

static enum wk_status index_int(struct call *c, const json_t *x, const char *what, json_int_t *out)
{
    if (!json_is_integer(x))
        return err(c, WK_E_INVALID, "cannot index slice/array with type %s", gt_type_name(c->prov, x));
    *out = json_integer_value(x);
    (void)what;
    return WK_OK;
}

static enum wk_status fn_index(struct call *c, json_t *const *a, int n, json_t **out)
{
    if (n < 1) return err(c, WK_E_INVALID, "wrong number of args for index: want at least 1 got 0");
    json_t *v = a[0];
    if (!v || json_is_null(v)) return err(c, WK_E_INVALID, "index of untyped nil");
    json_t *owned = NULL;
    for (int i = 1; i < n; i++) {
        json_t *next = NULL;
        json_int_t k = 0;
        enum wk_status st = WK_OK;
        const struct gt_type *ty = gt_prov_type(c->prov, v, NULL);
        bool nomem = false;
        if (!v) {
            st = err(c, WK_E_INVALID, "index of nil pointer");
        } else if (ty && ty->kind == GT_STRUCT) {
            st = err(c, WK_E_INVALID, "can't index item of type %s", ty->name);
        } else if (json_is_object(v)) {
            if (!json_is_string(a[i]))
                st = err(c, WK_E_INVALID, "value has type %s; should be string", gt_type_name(c->prov, a[i]));
            else next = json_object_get(v, json_string_value(a[i]));
            if (next) json_incref(next);
            else if (st == WK_OK && ty && ty->elem) next = gt_prov_zero_struct(c->prov, ty->elem, &nomem);
            if (nomem) st = err(c, WK_E_NOMEM, "out of memory");
        } else if (json_is_array(v) || json_is_string(v)) {
            size_t len = json_is_array(v) ? json_array_size(v) : json_string_length(v);
            st = index_int(c, a[i], "index", &k);
            if (st == WK_OK && (k < 0 || (size_t)k >= len))
                st = err(c, WK_E_INVALID, "index out of range: %lld", (long long)k);
            if (st == WK_OK)
                next = json_is_array(v) ? json_incref(json_array_get(v, (size_t)k))
                                        : json_integer((unsigned char)json_string_value(v)[k]);
        } else {
            st = err(c, WK_E_INVALID, "can't index item of type %s", gt_type_name(c->prov, v));
        }
        json_decref(owned);
        if (st != WK_OK) return st;
        if (next && json_is_null(next)) json_decref(next), next = NULL;
        v = owned = next;
    }
    *out = owned ? owned : v ? json_incref(v) : NULL;
    return WK_OK;
}

/* The content spans of v[from, to) carried over to r, the slice. */
static enum wk_status slice_marks(struct call *c, const json_t *v, size_t from, size_t to, json_t *r)
{
    size_t n_src, n = 0;
    const struct gt_span *src = gt_prov_get(c->prov, v, &n_src);
    if (!n_src) return WK_OK;
    struct gt_span *sp = wk_malloc(n_src * sizeof *sp);
    if (!sp) return WK_E_NOMEM;
    for (size_t k = 0; k < n_src; k++) {
        size_t off = src[k].off > from ? src[k].off : from;
        size_t end = src[k].off + src[k].len < to ? src[k].off + src[k].len : to;
        if (end > off) sp[n++] = (struct gt_span){off - from, end - off};
    }
    return gt_prov_add(c->prov, r, sp, n) ? WK_OK : WK_E_NOMEM;
}

static enum wk_status fn_slice(struct call *c, json_t *const *a, int n, json_t **out)
{
    if (n < 1) return err(c, WK_E_INVALID, "wrong number of args for slice: want at least 1 got 0");
    json_t *v = a[0];
    if (!v || json_is_null(v)) return err(c, WK_E_INVALID, "slice of untyped nil");
    if (n - 1 > 3) return err(c, WK_E_INVALID, "too many slice indexes: %d", n - 1);
    bool str = json_is_string(v);
    if (!str && !json_is_array(v))
        return err(c, WK_E_INVALID, "can't slice item of type %s", gt_type_name(c->prov, v));
    if (str && n - 1 == 3) return err(c, WK_E_INVALID, "cannot 3-index slice a string");
    json_int_t len = (json_int_t)(str ? json_string_length(v) : json_array_size(v));
    json_int_t idx[3] = {0, len, len};
    for (int i = 1; i < n; i++) {
        enum wk_status st = index_int(c, a[i], "slice", &idx[i - 1]);
        if (st != WK_OK) return st;
        if (idx[i - 1] < 0 || idx[i - 1] > len)
            return err(c, WK_E_INVALID, "index out of range: %lld", (long long)idx[i - 1]);
    }
    if (idx[0] > idx[1])
        return err(c, WK_E_INVALID, "invalid slice index: %lld > %lld", (long long)idx[0],
                   (long long)idx[1]);
    if (n - 1 == 3 && idx[1] > idx[2])
        return err(c, WK_E_INVALID, "invalid slice index: %lld > %lld", (long long)idx[1],
                   (long long)idx[2]);
    if (str) {
        *out = json_stringn_nocheck(json_string_value(v) + idx[0], (size_t)(idx[1] - idx[0]));
        enum wk_status st = *out ? slice_marks(c, v, (size_t)idx[0], (size_t)idx[1], *out) : WK_E_NOMEM;
        if (st != WK_OK) json_decref(*out), *out = NULL;
        return st;
    }
    json_t *r = json_array();
    for (json_int_t i = idx[0]; r && i < idx[1]; i++)
        if (json_array_append(r, json_array_get(v, (size_t)i)) != 0) json_decref(r), r = NULL;
    const struct gt_type *ty = gt_prov_type(c->prov, v, NULL); /* a slice keeps its type */
    if (r && ty && !gt_prov_set_type(c->prov, r, ty, false, true)) json_decref(r), r = NULL;
    *out = r;
    return r ? WK_OK : WK_E_NOMEM;
}

/* ------------------------------------------------------------- printing */

static enum wk_status fn_print(struct call *c, int id, json_t *const *a, int n, size_t max,
                               json_t **out)
{
    struct gt_buf b = {.max = max, .prov = c->prov};
    bool ok;
    if (id == GF_PRINTF) {
        if (n < 1)
            return err(c, WK_E_INVALID, "wrong number of args for printf: want at least 1 got 0");
        if (!json_is_string(a[0]))
            return err(c, WK_E_INVALID, "wrong type for value; expected string; got %s",
                       gt_type_name(c->prov, a[0]));
        ok = gt_sprintf(&b, json_string_value(a[0]), json_string_length(a[0]), a + 1, n - 1);
    } else if (id == GF_JSON) {
        if (n != 1) return err(c, WK_E_INVALID, "wrong number of args for json: want 1 got %d", n);
        ok = gt_json_encode(&b, a[0], 0);
    } else {
        ok = gt_sprint(&b, a, n, id == GF_PRINTLN);
    }
    if (!ok) {
        gt_buf_free(&b);
        if (b.st == WK_E_RANGE) return err(c, WK_E_RANGE, "result exceeds %zu bytes", max);
        return err(c, WK_E_NOMEM, "out of memory");
    }
    *out = json_stringn_nocheck(b.p ? b.p : "", b.n);
    wk_free(b.p);
    if (!*out) {
        wk_free(b.spans);
        return err(c, WK_E_NOMEM, "out of memory");
    }
    if (!gt_prov_add(c->prov, *out, b.spans, b.n_spans)) {
        json_decref(*out), *out = NULL;
        return err(c, WK_E_NOMEM, "out of memory");
    }
    return WK_OK;
}

enum wk_status gt_func_call(int id, json_t *const *args, int n, size_t max_output,
                            struct gt_prov *prov, json_t **out, char *msg, size_t msg_size)
{
    struct call c = {msg, msg_size, prov};
    *out = NULL;
    msg[0] = 0;
    bool truth = false;
    enum wk_status st;
    switch (id) {
    case GF_NOT:
        if (n != 1) return err(&c, WK_E_INVALID, "wrong number of args for not: want 1 got %d", n);
        truth = !gt_truth(c.prov, args[0]);
        break;
    case GF_LEN: return fn_len(&c, args, n, out);
    case GF_INDEX: return fn_index(&c, args, n, out);
    case GF_SLICE: return fn_slice(&c, args, n, out);
    case GF_EQ:
        if ((st = fn_eq(&c, args, n, &truth)) != WK_OK) return st;
        break;
    case GF_NE:
    case GF_LT:
    case GF_LE:
    case GF_GT:
    case GF_GE:
        if ((st = fn_order(&c, id, args, n, &truth)) != WK_OK) return st;
        break;
    case GF_PRINT:
    case GF_PRINTF:
    case GF_PRINTLN:
    case GF_JSON: return fn_print(&c, id, args, n, max_output, out);
    case GF_CURRENT_DATE:
    case GF_YESTERDAY_DATE:
    case GF_TO_TS_TYPE: return gt_ollama_call(id, args, n, prov, out, msg, msg_size);
    default: return err(&c, WK_E_INVALID, "not callable");
    }
    *out = json_boolean(truth);
    return *out ? WK_OK : err(&c, WK_E_NOMEM, "out of memory");
}
