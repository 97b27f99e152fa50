/*
 * jinja_filters.c - the Jinja filters and tests chat templates use, with
 * jinja2's semantics, and the globals (raise_exception, namespace,
 * strftime_now, range, dict).
 */
#include "jinja_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <limits.h>
#include <time.h>

#define JINJA_MAX_RANGE 100000

static const char *const FILTERS[] = {
    "tojson", "trim", "length", "count", "first", "last", "join", "upper", "lower", "title",
    "capitalize", "replace", "default", "d", "list", "string", "int", "float", "abs", "items",
    "dictsort", "selectattr", "rejectattr", "map", "select", "reject", "unique", "reverse", "sort",
    "safe", "escape", "e", "indent", "wordcount", "batch", "min", "max", "sum", "round", "center", "truncate", NULL};
static const char *const TESTS[] = {
    "defined", "undefined", "none", "string", "mapping", "iterable", "number", "sequence", "true",
    "false", "boolean", "integer", "float", "divisibleby", "equalto", "eq", "ne", "odd", "even",
    "callable", "sameas", "in", "lower", "upper", "gt", "lt", "ge", "le", "==", "!=", NULL};

static bool in_list(const char *const *list, const char *name)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], name)) return true;
    return false;
}

bool jinja_filter_known(const char *name) { return in_list(FILTERS, name); }
bool jinja_test_known(const char *name) { return in_list(TESTS, name); }

static struct jv kwarg(const char **kwnames, struct jv *kwvals, size_t nkw, const char *name, struct jv *args, size_t nargs, size_t pos)
{
    for (size_t i = 0; i < nkw; i++)
        if (!strcmp(kwnames[i], name)) return jv_copy(&kwvals[i]);
    if (pos < nargs) return jv_copy(&args[pos]);
    return JV_UNDEF_V;
}

static struct jv to_string(const struct jv *v)
{
    if (v->k == JV_STR) return jv_copy(v);
    struct jbuf b = {0};
    jv_write_str(&b, v);
    return b.p ? jv_str_take(&b) : jv_str("", 0);
}

static bool is_ws(unsigned char ch) { return ch == ' ' || (ch >= '\t' && ch <= '\r') || ch == 0x1c || ch == 0x1d || ch == 0x1e || ch == 0x1f; }

/* Python str.strip/lstrip/rstrip with chars (NULL: whitespace). */
static struct jv strip(const struct jv *s, const struct jv *chars, bool left, bool right)
{
    const char *p = jv_s(s);
    size_t a = 0, b = jv_len_s(s);
    bool cs = chars && chars->k == JV_STR;
    jinja_cost(0, b);
    const char *set = cs ? jv_s(chars) : NULL;
    size_t sl = cs ? jv_len_s(chars) : 0;
#define STRIPPABLE(ch) (cs ? memchr(set, (ch), sl) != NULL : is_ws((unsigned char)(ch)))
    if (left) while (a < b && STRIPPABLE(p[a])) a++;
    if (right) while (b > a && STRIPPABLE(p[b - 1])) b--;
#undef STRIPPABLE
    return jv_substr(s, a, b - a);
}

/* 0 lower, 1 upper, 2 title (Python's str.title: a letter after a
 * non-letter starts a word), 3 capitalize, 4 the title filter (jinja2's
 * do_title: a word starts at the text's start or after '-', whitespace,
 * '(', '{', '[' or '<', so "it's" stays one word) */
static struct jv case_map(const struct jv *s, int mode)
{
    struct jbuf b = {0};
    jbuf_put_v(&b, s, 0, jv_len_s(s));
    bool prev_alpha = false, word_start = true;
    for (size_t i = 0; i < b.n; i++) {
        unsigned char ch = (unsigned char)b.p[i];
        if (mode == 0) b.p[i] = (char)tolower(ch);
        else if (mode == 1) b.p[i] = (char)toupper(ch);
        else if (mode == 2) b.p[i] = (char)(prev_alpha ? tolower(ch) : toupper(ch));
        else if (mode == 4) b.p[i] = (char)(word_start ? toupper(ch) : tolower(ch));
        else b.p[i] = (char)(i == 0 ? toupper(ch) : tolower(ch));
        prev_alpha = isalpha(ch) || ch >= 0x80;
        word_start = ch == '-' || isspace(ch) || ch == '(' || ch == '{' || ch == '[' || ch == '<';
    }
    return b.p ? jv_str_take(&b) : jv_str("", 0);
}

/* The first needle[0..k) in h[0..n) (k > 0), or NULL: memmem, or memchr
 * for one byte (which a sanitizer checks only up to the match). */
static const char *find_in(const char *h, size_t n, const char *needle, size_t k)
{
    return k == 1 ? memchr(h, needle[0], n) : memmem(h, n, needle, k);
}

/* Python's s.replace(old, new, count) (count < 0: all), its size checked
 * before anything is allocated. */
static struct jv replace(struct jctx *c, const struct jv *s, const struct jv *old, const struct jv *new, long long count)
{
    const char *p = jv_s(s), *o = jv_s(old), *nw = jv_s(new);
    size_t n = jv_len_s(s), ol = jv_len_s(old), nl = jv_len_s(new), i = 0;
    unsigned long long hits = 0;
    if (!jinja_cost(0, n)) return JV_UNDEF_V;
    if (ol == 0) hits = utf8_count(p, n) + 1; /* '' matches before each character and at the end */
    else
        for (const char *h = p; (count < 0 || hits < (unsigned long long)count) && (h = find_in(h, (size_t)(p + n - h), o, ol)); h += ol) hits++;
    if (count >= 0 && hits > (unsigned long long)count) hits = (unsigned long long)count;
    if (hits == 0) return jv_copy(s);
    unsigned long long total; /* n + hits * (nl - ol), where hits * ol <= n */
    if (__builtin_mul_overflow(hits, (unsigned long long)nl, &total) || __builtin_add_overflow(total, (unsigned long long)n, &total)) total = ULLONG_MAX;
    else total -= hits * ol;
    if (total > WK_JINJA_MAX_OUTPUT) { jinja_too_large(c, "string", total); return JV_UNDEF_V; }
    struct jbuf b = {0};
    jbuf_reserve(&b, (size_t)total);
    for (unsigned long long done = 0; done < hits && !b.st; done++) {
        if (ol == 0) {
            jbuf_put(&b, nw, nl);
            if (i >= n) break;
            size_t k = 1;
            while (i + k < n && ((unsigned char)p[i + k] & 0xC0) == 0x80) k++;
            jbuf_put_v(&b, s, i, k);
            i += k;
            continue;
        }
        const char *hit = find_in(p + i, n - i, o, ol);
        jbuf_put_v(&b, s, i, (size_t)(hit - (p + i)));
        jbuf_put(&b, nw, nl);
        i = (size_t)(hit - p) + ol;
    }
    jbuf_put_v(&b, s, i, n - i);
    return b.p ? jv_str_take(&b) : jv_str("", 0);
}

/* Appends s[off, off+n) to out, or fails c when out is full. */
static bool split_add(struct jctx *c, json_t *out, const struct jv *s, size_t off, size_t n)
{
    if (json_array_size(out) >= WK_JINJA_MAX_ITEMS) return jinja_items_ok(c, WK_JINJA_MAX_ITEMS + 1ull);
    json_array_append_new(out, jinja_substr(s->u.j, off, n));
    return true;
}

/* Python's s.split(sep, maxsplit) / s.rsplit(...) (sep None: runs of
 * whitespace); at most WK_JINJA_MAX_ITEMS items. */
static struct jv split(struct jctx *c, const struct jv *s, const struct jv *sep, long long maxsplit, bool from_right)
{
    json_t *out = json_array();
    const char *p = jv_s(s), *d = sep && sep->k == JV_STR ? jv_s(sep) : NULL;
    size_t n = jv_len_s(s), dl = d ? jv_len_s(sep) : 0, i = 0;
    long long k = 0;
    if (!jinja_cost(0, n) || !out) goto done;
    if (!d && sep && sep->k != JV_NONE && sep->k != JV_UNDEF) { jinja_fail(c, WK_E_INVALID, "must be str or None, not %s", jv_type_name(sep)); goto done; }
    if (!d) { /* from_right with maxsplit and no separator is not supported: split from the left */
        while (i < n) {
            while (i < n && is_ws((unsigned char)p[i])) i++;
            if (i >= n) break;
            size_t j = i;
            if (maxsplit >= 0 && k >= maxsplit) { split_add(c, out, s, i, n - i); break; } /* the rest, as it is */
            while (j < n && !is_ws((unsigned char)p[j])) j++;
            if (!split_add(c, out, s, i, j - i)) break;
            k++;
            i = j;
        }
        goto done;
    }
    if (dl == 0) { jinja_fail(c, WK_E_INVALID, "empty separator"); goto done; }
    if (from_right && maxsplit >= 0) { /* the pieces from the right, then the head, then reversed */
        size_t e = n;
        while (k < maxsplit) {
            const char *hit = NULL;
            for (size_t at = e; at >= dl && !hit; at--)
                if (!memcmp(p + at - dl, d, dl)) hit = p + at - dl;
            if (!hit) break;
            if (!split_add(c, out, s, (size_t)(hit - p) + dl, e - (size_t)(hit - p) - dl)) goto done;
            e = (size_t)(hit - p);
            k++;
        }
        if (!split_add(c, out, s, 0, e)) goto done;
        for (size_t a = 0, z = json_array_size(out); a + 1 < z; a++, z--) { /* reverse in place */
            json_t *x = json_incref(json_array_get(out, a));
            json_array_set(out, a, json_array_get(out, z - 1));
            json_array_set_new(out, z - 1, x);
        }
        goto done;
    }
    for (;;) {
        const char *hit = (maxsplit < 0 || k < maxsplit) ? find_in(p + i, n - i, d, dl) : NULL;
        if (!hit) { split_add(c, out, s, i, n - i); break; }
        if (!split_add(c, out, s, i, (size_t)(hit - p) - i)) break;
        i = (size_t)(hit - p) + dl;
        k++;
    }
done:
    if (c->st || !out) { json_decref(out); return JV_UNDEF_V; }
    return (struct jv){.k = JV_LIST, .u.j = out};
}

/* transformers' tojson: json.dumps(v, ensure_ascii=False, indent=None,
 * separators=None, sort_keys=False), the arguments in that order. */
static struct jv tojson(struct jctx *c, const struct jv *v, struct jv *args, size_t nargs, const char **kwnames,
                        struct jv *kwvals, size_t nkw)
{
    static const char *const names[] = {"ensure_ascii", "indent", "separators", "sort_keys"};
    struct jv a[4] = {JV_UNDEF_V, JV_UNDEF_V, JV_UNDEF_V, JV_UNDEF_V}, seps[2] = {JV_UNDEF_V, JV_UNDEF_V}, r = JV_UNDEF_V;
    for (size_t i = 0; i < 4 && (nargs || nkw); i++) a[i] = kwarg(kwnames, kwvals, nkw, names[i], args, nargs, i);
    struct jjson_fmt f = {.ascii = jv_truthy(&a[0]), .sort_keys = jv_truthy(&a[3])};
    const struct jv *ind = &a[1];
    f.newlines = ind->k != JV_UNDEF && ind->k != JV_NONE;
    if (ind->k == JV_INT || ind->k == JV_BOOL) f.spaces = ind->k == JV_BOOL ? ind->u.b : ind->u.i < 0 ? 0 : (unsigned long long)ind->u.i;
    else if (ind->k == JV_STR) f.indent = jv_s(ind), f.indent_len = jv_len_s(ind);
    else if (f.newlines) { jinja_fail(c, WK_E_INVALID, "indent must be an int or a str, not %s", jv_type_name(ind)); goto done; }
    if (f.spaces > WK_JINJA_MAX_OUTPUT) { jinja_too_large(c, "string", f.spaces); goto done; } /* Python makes ' ' * indent first */
    f.item_sep = f.newlines ? "," : ", ", f.item_len = f.newlines ? 1 : 2;
    f.key_sep = ": ", f.key_len = 2;
    if (a[2].k == JV_LIST && json_array_size(a[2].u.j) == 2) {
        for (size_t i = 0; i < 2; i++) seps[i] = jv_from_json(json_incref(json_array_get(a[2].u.j, i)));
        if (seps[0].k != JV_STR || seps[1].k != JV_STR) { jinja_fail(c, WK_E_INVALID, "separators must be two strings"); goto done; }
        f.item_sep = jv_s(&seps[0]), f.item_len = jv_len_s(&seps[0]);
        f.key_sep = jv_s(&seps[1]), f.key_len = jv_len_s(&seps[1]);
    } else if (a[2].k != JV_UNDEF && a[2].k != JV_NONE) {
        jinja_fail(c, WK_E_INVALID, "separators must be a pair of strings");
        goto done;
    }
    json_t *j = jv_to_json(v);
    if (!j) { jinja_fail(c, WK_E_INVALID, "Object of type %s is not JSON serializable", jv_type_name(v)); goto done; }
    struct jbuf b = {0};
    jinja_json_dump(&b, j, &f, 0);
    json_decref(j);
    r = b.p ? jv_str_take(&b) : jv_str("", 0);
done:
    for (size_t i = 0; i < 4; i++) jv_free(&a[i]);
    jv_free(&seps[0]), jv_free(&seps[1]);
    if (c->st) jv_free(&r);
    return r;
}

static struct jv join(struct jctx *c, const struct jv *v, const struct jv *sep, const struct jv *attr)
{
    json_t *items = jv_iter_list(c, v);
    if (!items) return JV_UNDEF_V;
    struct jbuf b = {0};
    for (size_t i = 0; i < json_array_size(items) && !b.st && !c->st; i++) {
        if (i && sep && sep->k == JV_STR) jbuf_put_v(&b, sep, 0, jv_len_s(sep));
        struct jv e = jv_from_json(json_incref(json_array_get(items, i)));
        if (attr && attr->k == JV_STR) { struct jv a = jinja_getattr(c, &e, jv_s(attr)); jv_free(&e); e = a; }
        jv_write_str(&b, &e);
        jv_free(&e);
    }
    json_decref(items);
    return b.p ? jv_str_take(&b) : jv_str("", 0);
}

static struct jv attr_path(struct jctx *c, struct jv v, const char *attr);

/* select/reject/selectattr/rejectattr/map over v. */
static struct jv select_map(struct jctx *c, const char *name, const struct jv *v, struct jv *args, size_t nargs,
                            const char **kwnames, struct jv *kwvals, size_t nkw)
{
    bool attr = !strncmp(name, "selectattr", 10) || !strncmp(name, "rejectattr", 10);
    bool reject = name[0] == 'r', map = !strcmp(name, "map");
    const char *gname = map ? "sync_do_map" : "select_or_reject";
    if (!jv_truthy(v)) return jv_gen(json_array(), gname); /* jinja2: "if value:" */
    json_t *items = jv_iter_list(c, v);
    if (!items) return JV_UNDEF_V;
    json_t *out = json_array();
    struct jv mattr = map ? kwarg(kwnames, kwvals, nkw, "attribute", NULL, 0, 0) : JV_UNDEF_V;
    for (size_t i = 0; i < json_array_size(items) && !c->st; i++) {
        struct jv e = jv_from_json(json_incref(json_array_get(items, i)));
        if (map) {
            struct jv r = mattr.k == JV_STR ? attr_path(c, jv_copy(&e), jv_s(&mattr)) /* jinja2's make_attrgetter */
                        : nargs > 0 && args[0].k == JV_STR ? jinja_filter(c, jv_s(&args[0]), &e, args + 1, nargs - 1, NULL, NULL, 0)
                        : JV_UNDEF_V;
            if (r.k == JV_UNDEF) { jv_free(&r); r = kwarg(kwnames, kwvals, nkw, "default", NULL, 0, 0); }
            json_t *j = r.k == JV_UNDEF ? json_incref(jinja_undef_json()) : jv_to_json(&r); /* undefined stays so */
            json_array_append_new(out, j ? j : json_null());
            jv_free(&r);
        } else {
            struct jv subject = attr && nargs > 0 && args[0].k == JV_STR ? attr_path(c, jv_copy(&e), jv_s(&args[0])) : jv_copy(&e);
            size_t t0 = attr ? 1 : 0;
            bool keep = nargs > t0 && args[t0].k == JV_STR ? jinja_test(c, jv_s(&args[t0]), &subject, args + t0 + 1, nargs - t0 - 1)
                                                          : jv_truthy(&subject);
            if (keep != reject) json_array_append(out, json_array_get(items, i));
            jv_free(&subject);
        }
        jv_free(&e);
    }
    jv_free(&mattr);
    json_decref(items);
    if (c->st) { json_decref(out); return JV_UNDEF_V; }
    return jv_gen(out, gname);
}

static _Thread_local struct jctx *g_sort_ctx;
static _Thread_local const char *g_sort_attr;
static _Thread_local bool g_sort_ci;

/* v's attribute path attr as jinja2's make_attrgetter reads it: parts
 * split at '.', a part of digits an index into a list or tuple. Takes v. */
static struct jv attr_path(struct jctx *c, struct jv v, const char *attr)
{
    for (const char *p = attr; !c->st;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        char part[128];
        snprintf(part, sizeof part, "%.*s", (int)(n < sizeof part ? n : sizeof part - 1), p);
        bool digits = n > 0 && strspn(part, "0123456789") == n;
        struct jv next = digits && v.k == JV_LIST && (size_t)atoll(part) < json_array_size(v.u.j)
                             ? jv_from_json(json_incref(json_array_get(v.u.j, (size_t)atoll(part))))
                             : jinja_getattr(c, &v, part);
        jv_free(&v);
        v = next;
        if (!dot) break;
        p = dot + 1;
    }
    return v;
}

static int sort_cmp(const void *pa, const void *pb)
{
    json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
    struct jv x = jv_from_json(json_incref(a)), y = jv_from_json(json_incref(b));
    if (g_sort_attr) x = attr_path(g_sort_ctx, x, g_sort_attr), y = attr_path(g_sort_ctx, y, g_sort_attr);
    if (g_sort_ci && x.k == JV_STR && y.k == JV_STR) {
        struct jv x2 = case_map(&x, 0), y2 = case_map(&y, 0);
        jv_free(&x), jv_free(&y);
        x = x2, y = y2;
    }
    bool ok;
    int r = jv_compare(g_sort_ctx, &x, &y, &ok);
    if (!ok) jinja_fail(g_sort_ctx, WK_E_INVALID, "'<' not supported between instances of '%s' and '%s'", jv_type_name(&x), jv_type_name(&y));
    jv_free(&x), jv_free(&y);
    return r;
}

/* Sorts a new array of items (stable, as Python's sort: a merge sort). */
static json_t *sorted(struct jctx *c, json_t *items, const char *attr, bool reverse, bool ci)
{
    size_t n = json_array_size(items);
    json_t **v = wk_malloc((n ? n : 1) * 2 * sizeof *v), **tmp = v + (n ? n : 1);
    if (!v) return NULL;
    for (size_t i = 0; i < n; i++) v[i] = json_array_get(items, i);
    g_sort_ctx = c, g_sort_attr = attr, g_sort_ci = ci;
    for (size_t w = 1; w < n && !c->st; w *= 2) {
        for (size_t lo = 0; lo < n && !c->st; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, a = lo, b = mid, k = lo;
            while (a < mid && b < hi && !c->st) { /* take from the right only when it must go first */
                int r = sort_cmp(&v[a], &v[b]);
                tmp[k++] = (reverse ? r < 0 : r > 0) ? v[b++] : v[a++];
            }
            while (a < mid) tmp[k++] = v[a++];
            while (b < hi) tmp[k++] = v[b++];
        }
        memcpy(v, tmp, n * sizeof *v);
    }
    json_t *out = c->st ? NULL : json_array();
    for (size_t i = 0; out && i < n; i++) json_array_append(out, v[i]);
    wk_free(v);
    return out;
}

static struct jv items_of(struct jctx *c, const struct jv *v)
{
    if (v->k == JV_UNDEF) return (struct jv){.k = JV_LIST, .u.j = json_array()};
    if (v->k != JV_DICT && v->k != JV_NS) { jinja_fail(c, WK_E_INVALID, "Can only get item pairs from a mapping."); return JV_UNDEF_V; }
    json_t *out = json_array();
    const char *key;
    json_t *val;
    jinja_cost((long long)json_object_size(v->u.j), 0);
    json_object_foreach(v->u.j, key, val) {
        struct jv k = jv_key_decode(key);
        json_t *pair = json_pack("[oO]", jv_to_json(&k), val);
        jv_free(&k);
        jinja_mark_tuple(pair);
        json_array_append_new(out, pair);
    }
    if (!jinja_nest_ok(c, out)) { json_decref(out); return JV_UNDEF_V; }
    return (struct jv){.k = JV_LIST, .u.j = out};
}

/* jinja2's indent: each line after the first (and the first too with
 * first), but empty ones unless blank, gets width spaces or, when ind is
 * a str, ind in front. The size is checked before anything is allocated. */
static struct jv indent(struct jctx *c, const struct jv *s, const struct jv *ind, long long width, bool first, bool blank)
{
    const char *p = jv_s(s);
    size_t n = jv_len_s(s);
    unsigned long long w = ind ? jv_len_s(ind) : width > 0 ? (unsigned long long)width : 0, lines = 0, total;
    if (!jinja_cost(0, n)) return JV_UNDEF_V;
    for (size_t i = 0, line = 0; i <= n; line++) { /* the lines indented */
        const char *nl = memchr(p + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - p) : n;
        lines += (line == 0 && first) || (line > 0 && (e > i || blank));
        if (!nl) break;
        i = e + 1;
    }
    if (__builtin_mul_overflow(lines, w, &total) || __builtin_add_overflow(total, (unsigned long long)n, &total)) total = ULLONG_MAX;
    if (total > WK_JINJA_MAX_OUTPUT) { jinja_too_large(c, "string", total); return JV_UNDEF_V; }
    struct jbuf b = {0};
    jbuf_reserve(&b, (size_t)total);
    for (size_t i = 0, line = 0; i <= n && !b.st; line++) {
        const char *nl = memchr(p + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - p) : n;
        if ((line == 0 && first) || (line > 0 && (e > i || blank))) {
            if (ind) jbuf_put_v(&b, ind, 0, (size_t)w);
            else jbuf_fill(&b, ' ', w);
        }
        jbuf_put_v(&b, s, i, e - i);
        if (!nl) break;
        jbuf_put(&b, "\n", 1);
        i = e + 1;
    }
    return b.p ? jv_str_take(&b) : jv_str("", 0);
}

static struct jv filter_misc(struct jctx *c, const char *name, struct jv *v, struct jv *args, size_t nargs, const char **kwnames, struct jv *kwvals, size_t nkw);

struct jv jinja_filter(struct jctx *c, const char *name, struct jv *v, struct jv *args, size_t nargs,
                       const char **kwnames, struct jv *kwvals, size_t nkw)
{
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        struct jv dflt = kwarg(kwnames, kwvals, nkw, "default_value", args, nargs, 0);
        struct jv boolean = kwarg(kwnames, kwvals, nkw, "boolean", args, nargs, 1);
        bool use = v->k == JV_UNDEF || (jv_truthy(&boolean) && !jv_truthy(v));
        jv_free(&boolean);
        if (use) return dflt.k == JV_UNDEF ? jv_str("", 0) : dflt;
        jv_free(&dflt);
        return jv_copy(v);
    }
    if (v->k == JV_UNDEF && !strcmp(name, "tojson")) { /* json.dumps(Undefined) */
        jinja_fail(c, WK_E_INVALID, "Object of type Undefined is not JSON serializable");
        return JV_UNDEF_V;
    }
    if (v->k == JV_UNDEF && strcmp(name, "length") && strcmp(name, "count") && strcmp(name, "string") &&
        strcmp(name, "trim") && strcmp(name, "list") && strcmp(name, "join") && strcmp(name, "safe") && strcmp(name, "items") && strcmp(name, "lower") && strcmp(name, "upper")) {
        jinja_undef_fail(c, v);
        return JV_UNDEF_V;
    }
    if (!strcmp(name, "tojson")) return tojson(c, v, args, nargs, kwnames, kwvals, nkw);
    if (!strcmp(name, "length") || !strcmp(name, "count")) {
        long long n = jv_length(v);
        if (n < 0) { jinja_fail(c, WK_E_INVALID, "object of type '%s' has no len()", jv_type_name(v)); return JV_UNDEF_V; }
        return jv_int(n);
    }
    if (!strcmp(name, "string") || !strcmp(name, "safe") || !strcmp(name, "escape") || !strcmp(name, "e")) {
        struct jv s = to_string(v);
        s.safe = v->safe || !strcmp(name, "safe");
        if (name[0] == 'e' && !s.safe) { struct jv t = jinja_escape(&s); jv_free(&s); s = t; }
        return s;
    }
    if (!strcmp(name, "trim")) { struct jv s = to_string(v); struct jv ch = kwarg(kwnames, kwvals, nkw, "chars", args, nargs, 0); struct jv r = strip(&s, ch.k == JV_STR ? &ch : NULL, true, true); jv_free(&s); jv_free(&ch); return r; }
    if (!strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "title") || !strcmp(name, "capitalize")) {
        struct jv s = to_string(v);
        struct jv r = case_map(&s, name[0] == 'l' ? 0 : name[0] == 'u' ? 1 : name[0] == 't' ? 4 : 3);
        jv_free(&s);
        return r;
    }
    if (!strcmp(name, "join")) { struct jv sep = kwarg(kwnames, kwvals, nkw, "d", args, nargs, 0); struct jv at = kwarg(kwnames, kwvals, nkw, "attribute", args, nargs, 1); struct jv r = join(c, v, sep.k == JV_UNDEF ? NULL : &sep, &at); jv_free(&sep); jv_free(&at); return r; }
    if (!strcmp(name, "replace")) {
        if (nargs < 2) { jinja_fail(c, WK_E_INVALID, "replace needs two arguments"); return JV_UNDEF_V; }
        struct jv s = to_string(v), o = to_string(&args[0]), n = to_string(&args[1]);
        struct jv r = replace(c, &s, &o, &n, nargs > 2 && args[2].k == JV_INT ? args[2].u.i : -1);
        jv_free(&s), jv_free(&o), jv_free(&n);
        return r;
    }
    if (!strcmp(name, "select") || !strcmp(name, "reject") || !strcmp(name, "selectattr") || !strcmp(name, "rejectattr") || !strcmp(name, "map"))
        return select_map(c, name, v, args, nargs, kwnames, kwvals, nkw);
    if (!strcmp(name, "items")) { struct jv r = items_of(c, v); return r.k == JV_LIST ? jv_gen(r.u.j, "do_items") : r; }
    if (!strcmp(name, "list")) {
        json_t *l = jv_iter_list(c, v);
        if (l && v->k == JV_LIST && v->tuple) { json_t *cp = json_copy(l); json_decref(l); l = cp; }
        return l ? (struct jv){.k = JV_LIST, .u.j = l} : JV_UNDEF_V;
    }
    if (!strcmp(name, "indent")) {
        struct jv w = kwarg(kwnames, kwvals, nkw, "width", args, nargs, 0), f = kwarg(kwnames, kwvals, nkw, "first", args, nargs, 1), bl = kwarg(kwnames, kwvals, nkw, "blank", args, nargs, 2);
        struct jv s = to_string(v);
        struct jv r = indent(c, &s, w.k == JV_STR ? &w : NULL, w.k == JV_INT ? w.u.i : w.k == JV_BOOL ? w.u.b : 4, jv_truthy(&f), jv_truthy(&bl));
        jv_free(&w), jv_free(&f), jv_free(&bl), jv_free(&s);
        return r;
    }
    return filter_misc(c, name, v, args, nargs, kwnames, kwvals, nkw);
}

static struct jv filter_misc(struct jctx *c, const char *name, struct jv *v, struct jv *args, size_t nargs,
                             const char **kwnames, struct jv *kwvals, size_t nkw)
{
    if (!strcmp(name, "sort") || !strcmp(name, "dictsort")) {
        bool dict = name[0] == 'd';
        struct jv rev = kwarg(kwnames, kwvals, nkw, "reverse", args, nargs, dict ? 2 : 0);
        struct jv cs = kwarg(kwnames, kwvals, nkw, "case_sensitive", args, nargs, dict ? 0 : 1);
        /* sort's attribute; dictsort's by ('key' or 'value': the item's 0 or 1, as jinja2 sorts by that alone) */
        struct jv at = kwarg(kwnames, kwvals, nkw, dict ? "by" : "attribute", args, nargs, dict ? 1 : 2);
        const char *by = dict ? (at.k == JV_UNDEF || (at.k == JV_STR && !strcmp(jv_s(&at), "key")) ? "0"
                                 : at.k == JV_STR && !strcmp(jv_s(&at), "value")                 ? "1"
                                                                                                  : NULL)
                              : at.k == JV_STR ? jv_s(&at) : NULL;
        if (dict && !by) {
            jv_free(&rev), jv_free(&cs), jv_free(&at);
            jinja_fail(c, WK_E_INVALID, "You can only sort by either \"key\" or \"value\"");
            return JV_UNDEF_V;
        }
        struct jv src = dict ? items_of(c, v) : (struct jv){.k = JV_LIST, .u.j = jv_iter_list(c, v)};
        json_t *out = c->st || !src.u.j ? NULL : sorted(c, src.u.j, by, jv_truthy(&rev), !jv_truthy(&cs));
        if (src.u.j) jv_free(&src);
        jv_free(&rev), jv_free(&cs), jv_free(&at);
        if (!out || c->st) { if (out) json_decref(out); return JV_UNDEF_V; }
        return (struct jv){.k = JV_LIST, .u.j = out};
    }
    return jinja_filter_more(c, name, v, args, nargs, kwnames, kwvals, nkw);
}

/* ---- methods ---- */

static const char *const STR_METHODS[] = {"startswith", "endswith", "split", "rsplit", "strip", "lstrip", "rstrip", "replace",
                                          "upper", "lower", "title", "capitalize", "find", "count", "format", "join", "isdigit", "isspace", "splitlines", NULL};
static const char *const DICT_METHODS[] = {"items", "keys", "values", "get", "pop", "update", "setdefault", "clear", "copy", NULL};
static const char *const LIST_METHODS[] = {"append", "pop", "extend", "insert", "remove", "index", "count", "sort", "reverse", "clear", "copy", NULL};

bool jinja_has_method(const struct jv *recv, const char *name)
{
    if (recv->k == JV_STR) return in_list(STR_METHODS, name);
    if (recv->k == JV_DICT) return in_list(DICT_METHODS, name);
    if (recv->k == JV_LIST) return in_list(LIST_METHODS, name);
    return false;
}

static struct jv str_method(struct jctx *c, const char *m, const struct jv *s, struct jv *args, size_t nargs,
                            const char **kwnames, struct jv *kwvals, size_t nkw)
{
    const struct jv *a = nargs ? &args[0] : NULL;
    if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
        if (!a || a->k != JV_STR) { jinja_fail(c, WK_E_INVALID, "%s needs a string", m); return JV_UNDEF_V; }
        size_t n = jv_len_s(s), k = jv_len_s(a);
        if (k > n) return jv_bool(false);
        jinja_cost(0, k);
        return jv_bool(!memcmp(jv_s(s) + (m[0] == 's' ? 0 : n - k), jv_s(a), k));
    }
    if (!jinja_cost(0, jv_len_s(s))) return JV_UNDEF_V; /* the other methods scan the str once or so */
    if (!strcmp(m, "split") || !strcmp(m, "rsplit"))
        return split(c, s, a, nargs > 1 && args[1].k == JV_INT ? args[1].u.i : -1, m[0] == 'r');
    if (!strcmp(m, "strip") || !strcmp(m, "lstrip") || !strcmp(m, "rstrip"))
        return strip(s, a && a->k == JV_STR ? a : NULL, m[0] != 'r', m[0] != 'l');
    if (!strcmp(m, "replace")) {
        if (nargs < 2 || args[0].k != JV_STR || args[1].k != JV_STR) { jinja_fail(c, WK_E_INVALID, "replace needs two strings"); return JV_UNDEF_V; }
        return replace(c, s, &args[0], &args[1], nargs > 2 && args[2].k == JV_INT ? args[2].u.i : -1);
    }
    if (!strcmp(m, "upper")) return case_map(s, 1);
    if (!strcmp(m, "lower")) return case_map(s, 0);
    if (!strcmp(m, "title")) return case_map(s, 2);
    if (!strcmp(m, "capitalize")) return case_map(s, 3);
    if (!strcmp(m, "find") || !strcmp(m, "count")) {
        if (!a || a->k != JV_STR) { jinja_fail(c, WK_E_INVALID, "%s needs a string", m); return JV_UNDEF_V; }
        const char *p = jv_s(s), *hit = memmem(p, jv_len_s(s), jv_s(a), jv_len_s(a));
        if (m[0] == 'f') return jv_int(hit ? (long long)utf8_count(p, (size_t)(hit - p)) : -1);
        long long n = 0;
        size_t i = 0;
        if (!jv_len_s(a)) return jv_int((long long)utf8_count(p, jv_len_s(s)) + 1);
        while ((hit = find_in(p + i, jv_len_s(s) - i, jv_s(a), jv_len_s(a)))) { n++; i = (size_t)(hit - p) + jv_len_s(a); }
        return jv_int(n);
    }
    if (!strcmp(m, "join") && a) {
        json_t *items = jv_iter_list(c, a);
        if (!items) return JV_UNDEF_V;
        struct jbuf b = {0};
        for (size_t i = 0; i < json_array_size(items) && !b.st && !c->st; i++) {
            if (i) jbuf_put_v(&b, s, 0, jv_len_s(s));
            struct jv e = jv_from_json(json_incref(json_array_get(items, i)));
            jv_write_str(&b, &e);
            jv_free(&e);
        }
        json_decref(items);
        return b.p ? jv_str_take(&b) : jv_str("", 0);
    }
    if (!strcmp(m, "format")) return jinja_str_format(c, s, args, nargs, kwnames, kwvals, nkw);
    if (!strcmp(m, "isdigit") || !strcmp(m, "isspace")) {
        if (!jv_len_s(s)) return jv_bool(false);
        for (const char *p = jv_s(s); *p; p++)
            if (m[2] == 'd' ? !isdigit((unsigned char)*p) : !is_ws((unsigned char)*p)) return jv_bool(false);
        return jv_bool(true);
    }
    jinja_fail(c, WK_E_INVALID, "str.%s is not supported", m);
    return JV_UNDEF_V;
}

struct jv jinja_call_method(struct jctx *c, const struct jv *m, struct jv *args, size_t nargs,
                            const char **kwnames, struct jv *kwvals, size_t nkw)
{
    if (!m->recv) { /* loop.cycle */
        if (!nargs) { jinja_fail(c, WK_E_INVALID, "no items for cycling given"); return JV_UNDEF_V; }
        return jv_copy(&args[m->u.loop->index % nargs]);
    }
    const struct jv *r = m->recv;
    if (r->k == JV_STR) return str_method(c, m->name, r, args, nargs, kwnames, kwvals, nkw);
    if (!jinja_cost(r->k == JV_DICT ? (long long)json_object_size(r->u.j) : r->k == JV_LIST ? (long long)json_array_size(r->u.j) : 0, 0))
        return JV_UNDEF_V; /* a method visits the items at most once */
    if (r->k == JV_DICT) {
        if (!strcmp(m->name, "items")) return items_of(c, r);
        if (!strcmp(m->name, "keys")) return (struct jv){.k = JV_LIST, .u.j = jv_iter_list(c, r)};
        if (!strcmp(m->name, "values")) {
            json_t *out = json_array();
            const char *key;
            json_t *val;
            json_object_foreach(r->u.j, key, val) json_array_append(out, val);
            return (struct jv){.k = JV_LIST, .u.j = out};
        }
        if (!strcmp(m->name, "get")) {
            if (!nargs) { jinja_fail(c, WK_E_INVALID, "get expected at least 1 argument, got 0"); return JV_UNDEF_V; }
            struct jbuf kb = {0};
            json_t *j = jv_key_encode(c, &args[0], &kb) ? json_object_get(r->u.j, kb.p) : NULL;
            jbuf_free(&kb);
            if (c->st) return JV_UNDEF_V;
            if (j) return jv_from_json(json_incref(j));
            struct jv d = kwarg(kwnames, kwvals, nkw, "default", args, nargs, 1);
            return d.k == JV_UNDEF ? JV_NONE_V : d;
        }
        if (!strcmp(m->name, "copy")) return (struct jv){.k = JV_DICT, .u.j = json_copy(r->u.j)};
    }
    if (r->k == JV_LIST) {
        if (!strcmp(m->name, "copy")) return (struct jv){.k = JV_LIST, .u.j = json_copy(r->u.j)};
        if (!strcmp(m->name, "index") || !strcmp(m->name, "count")) {
            long long n = 0;
            for (size_t i = 0; nargs && i < json_array_size(r->u.j); i++) {
                struct jv e = jv_from_json(json_incref(json_array_get(r->u.j, i)));
                bool eq = jv_equal(&e, &args[0]);
                jv_free(&e);
                if (eq && m->name[0] == 'i') return jv_int((long long)i);
                n += eq;
            }
            if (m->name[0] == 'c') return jv_int(n);
            jinja_fail(c, WK_E_INVALID, "value is not in list");
            return JV_UNDEF_V;
        }
    }
    jinja_fail(c, WK_E_INVALID, "access to attribute '%s' of '%s' object is unsafe.", m->name, jv_type_name(r));
    return JV_UNDEF_V;
}

struct jv jinja_call_func(struct jctx *c, const struct jv *f, struct jv *args, size_t nargs,
                          const char **kwnames, struct jv *kwvals, size_t nkw)
{
    switch (f->u.func) {
    case 0: { /* raise_exception */
        struct jv s = nargs ? to_string(&args[0]) : jv_str("", 0);
        jinja_fail(c, WK_E_INVALID, "%s", jv_s(&s));
        jv_free(&s);
        return JV_UNDEF_V;
    }
    case 1: case 4: { /* namespace, dict */
        json_t *o = json_object();
        if (nargs && args[0].k == JV_DICT && jinja_cost((long long)json_object_size(args[0].u.j), 0)) json_object_update(o, args[0].u.j);
        for (size_t i = 0; i < nkw; i++) { /* an undefined value is kept, as jinja2 keeps it */
            json_t *j = kwvals[i].k == JV_UNDEF ? json_incref(jinja_undef_json()) : jv_to_json(&kwvals[i]);
            if (j) json_object_set_new(o, kwnames[i], j);
        }
        /* a namespace's own object changes, and is never inside another value: only dicts are checked */
        if (f->u.func == 4 && !jinja_nest_ok(c, o)) { json_decref(o); return JV_UNDEF_V; }
        return (struct jv){.k = f->u.func == 1 ? JV_NS : JV_DICT, .u.j = o};
    }
    case 2: { /* strftime_now */
        time_t now = c->t->fixed_time >= 0 ? (time_t)c->t->fixed_time : time(NULL);
        struct tm tm;
        if (c->t->fixed_time >= 0) gmtime_r(&now, &tm);
        else localtime_r(&now, &tm);
        char buf[256];
        size_t n = nargs && args[0].k == JV_STR ? strftime(buf, sizeof buf, jv_s(&args[0]), &tm) : 0;
        return jv_str(buf, n);
    }
    case 3: { /* range */
        long long p[3] = {0, 0, 1};
        if (nargs == 0 || nargs > 3) { jinja_fail(c, WK_E_INVALID, "range expected 1 to 3 arguments, got %zu", nargs); return JV_UNDEF_V; }
        for (size_t i = 0; i < nargs; i++) {
            if (args[i].k != JV_INT && args[i].k != JV_BOOL) { jinja_fail(c, WK_E_INVALID, "'%s' object cannot be interpreted as an integer", jv_type_name(&args[i])); return JV_UNDEF_V; }
            p[nargs == 1 ? 1 : i] = args[i].k == JV_INT ? args[i].u.i : args[i].u.b;
        }
        long long a = p[0], b = p[1], s = p[2];
        if (s == 0) { jinja_fail(c, WK_E_INVALID, "range() arg 3 must not be zero"); return JV_UNDEF_V; }
        /* the length, computed before anything is allocated */
        __int128 span = s > 0 ? (__int128)b - a : (__int128)a - b, step = s > 0 ? (__int128)s : -(__int128)s;
        __int128 count = span <= 0 ? 0 : (span + step - 1) / step;
        if (count > JINJA_MAX_RANGE) { jinja_fail(c, WK_E_RANGE, "range too big (%lld items; the limit is %d)", (long long)(count > LLONG_MAX ? LLONG_MAX : count), JINJA_MAX_RANGE); return JV_UNDEF_V; }
        c->iterations += (long long)count; /* items made count as loop iterations */
        if (c->iterations > WK_JINJA_MAX_ITERATIONS) { jinja_fail(c, WK_E_RANGE, "too many loop iterations"); return JV_UNDEF_V; }
        json_t *out = json_array();
        for (long long i = 0; out && i < (long long)count; i++) json_array_append_new(out, json_integer(a + i * s));
        if (!out) { jinja_fail(c, WK_E_NOMEM, "out of memory"); return JV_UNDEF_V; }
        return (struct jv){.k = JV_LIST, .u.j = out};
    }
    }
    return JV_UNDEF_V;
}
