/*
 * jinja_eval.c - the Jinja evaluator: scopes (a loop body and a macro
 * call get their own; if does not), expressions with Python semantics,
 * statements, macros and the public entry points of wk_jinja.h.
 */
#include "jinja_int.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct jframe {
    struct jframe *parent;
    const json_t *vars; /* the render variables (globals frame only) */
    char **names;
    struct jv *vals;
    size_t n, cap;
};


enum { FLOW_NORMAL, FLOW_BREAK, FLOW_CONTINUE, FLOW_ERROR };

enum wk_status jinja_fail(struct jctx *c, enum wk_status st, const char *fmt, ...)
{
    if (c->st) return c->st;
    c->st = st;
    if (c->err) {
        char msg[WK_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        wk_error_set(c->err, st, "%s", msg);
    }
    return st;
}

static void frame_free(struct jframe *f)
{
    for (size_t i = 0; i < f->n; i++) { wk_free(f->names[i]); jv_free(&f->vals[i]); }
    wk_free(f->names);
    wk_free(f->vals);
}

/* Binds name to v (taken) in f. */
static void frame_set(struct jctx *c, struct jframe *f, const char *name, struct jv v)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->names[i], name) == 0) { jv_free(&f->vals[i]); f->vals[i] = v; return; }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        char **names = wk_realloc(f->names, cap * sizeof *names);
        if (names) f->names = names;
        struct jv *vals = names ? wk_realloc(f->vals, cap * sizeof *vals) : NULL;
        if (!vals) { jv_free(&v); jinja_fail(c, WK_E_NOMEM, "out of memory"); return; }
        f->vals = vals, f->cap = cap;
    }
    size_t n = strlen(name);
    char *d = wk_malloc(n + 1);
    if (!d) { jv_free(&v); jinja_fail(c, WK_E_NOMEM, "out of memory"); return; }
    memcpy(d, name, n + 1);
    f->names[f->n] = d;
    f->vals[f->n++] = v;
}

static const char *const FUNCS[] = {"raise_exception", "namespace", "strftime_now", "range", "dict", NULL};

static struct jv lookup(struct jctx *c, struct jframe *f, const char *name)
{
    for (; f; f = f->parent) {
        for (size_t i = f->n; i-- > 0;)
            if (strcmp(f->names[i], name) == 0) return jv_copy(&f->vals[i]);
        if (f->vars) {
            json_t *j = json_object_get(f->vars, name);
            if (j) return jv_from_json(json_incref(j));
        }
    }
    for (int i = 0; FUNCS[i]; i++)
        if (strcmp(FUNCS[i], name) == 0) return (struct jv){.k = JV_FUNC, .u.func = i, .name = FUNCS[i]};
    return (struct jv){.k = JV_UNDEF, .name = name};
}

static struct jv method_value(const struct jv *recv, const char *name)
{
    struct jv m = {.k = JV_METHOD, .name = name};
    m.recv = wk_malloc(sizeof *m.recv);
    if (m.recv) *m.recv = jv_copy(recv);
    return m;
}

struct jv jinja_getattr(struct jctx *c, const struct jv *obj, const char *name)
{
    switch (obj->k) {
    case JV_UNDEF:
        jinja_undef_fail(c, obj);
        return JV_UNDEF_V;
    case JV_DICT:
    case JV_NS: {
        if (obj->k == JV_DICT && jinja_has_method(obj, name)) return method_value(obj, name);
        json_t *j = json_object_get(obj->u.j, name);
        if (j) return jv_from_json(json_incref(j));
        break;
    }
    case JV_LOOP: {
        struct jloop *l = obj->u.loop;
        long long i = (long long)l->index, n = (long long)l->length;
        if (!strcmp(name, "index")) return jv_int(i + 1);
        if (!strcmp(name, "index0")) return jv_int(i);
        if (!strcmp(name, "revindex")) return jv_int(n - i);
        if (!strcmp(name, "revindex0")) return jv_int(n - i - 1);
        if (!strcmp(name, "first")) return jv_bool(i == 0);
        if (!strcmp(name, "last")) return jv_bool(i == n - 1);
        if (!strcmp(name, "length")) return jv_int(n);
        if (!strcmp(name, "depth")) return jv_int(1);
        if (!strcmp(name, "depth0")) return jv_int(0);
        if (!strcmp(name, "previtem"))
            return i > 0 ? jv_from_json(json_incref(json_array_get(l->items, (size_t)i - 1))) : (struct jv){.k = JV_UNDEF, .name = "previtem"};
        if (!strcmp(name, "nextitem"))
            return i + 1 < n ? jv_from_json(json_incref(json_array_get(l->items, (size_t)i + 1))) : (struct jv){.k = JV_UNDEF, .name = "nextitem"};
        if (!strcmp(name, "cycle")) return (struct jv){.k = JV_METHOD, .name = "cycle", .recv = NULL, .u.loop = l};
        break;
    }
    default:
        if (jinja_has_method(obj, name)) return method_value(obj, name);
        break;
    }
    return jv_undef_in(obj, name, NULL);
}

static long long norm_index(long long i, long long n) { return i < 0 ? i + n : i; }

/* The byte offset of the code point after the one at byte i of s[0..n). */
static size_t cp_next(const char *s, size_t n, size_t i)
{
    for (i++; i < n && ((unsigned char)s[i] & 0xC0) == 0x80;) i++;
    return i;
}

/* The byte offset of the code point before the one at byte i > 0. */
static size_t cp_prev(const char *s, size_t i)
{
    do i--;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80);
    return i;
}

/* The byte offset of code point k of s[0..n) (n when s has fewer). */
static size_t cp_at(const char *s, size_t n, size_t k)
{
    size_t i = 0;
    jinja_cost(0, n);
    for (; i < n && k; k--) i = cp_next(s, n, i);
    return i;
}

struct jv jinja_getitem(struct jctx *c, const struct jv *obj, const struct jv *key)
{
    if (obj->k == JV_UNDEF) {
        jinja_undef_fail(c, obj);
        return JV_UNDEF_V;
    }
    if ((obj->k == JV_DICT || obj->k == JV_NS) && (key->k != JV_STR || jv_s(key)[0] == 1)) {
        struct jbuf kb = {0};
        json_t *j = jv_key_encode(c, key, &kb) ? json_object_get(obj->u.j, kb.p) : NULL;
        jbuf_free(&kb);
        if (j) return jv_from_json(json_incref(j));
    }
    if ((obj->k == JV_DICT || obj->k == JV_NS) && key->k == JV_STR && jv_s(key)[0] != 1) {
        if (!jinja_cost(0, jv_len_s(key))) return JV_UNDEF_V; /* the key is hashed */
        json_t *j = json_object_get(obj->u.j, jv_s(key));
        if (j) return jv_from_json(json_incref(j));
    }
    if ((obj->k == JV_LIST || obj->k == JV_STR) && (key->k == JV_INT || key->k == JV_BOOL)) {
        long long n = jv_length(obj), i = norm_index(key->k == JV_INT ? key->u.i : key->u.b, n);
        if (i < 0 || i >= n) {
            struct jv u = jv_undef_in(obj, NULL, NULL);
            u.has_index = true, u.u.i = key->k == JV_INT ? key->u.i : key->u.b;
            return u;
        }
        if (obj->k == JV_LIST) return jv_from_json(json_incref(json_array_get(obj->u.j, (size_t)i)));
        const char *p = jv_s(obj);
        size_t at = cp_at(p, jv_len_s(obj), (size_t)i);
        return jv_substr(obj, at, cp_next(p, jv_len_s(obj), at) - at);
    }
    if (key->k == JV_STR) {
        if (c->st) return JV_UNDEF_V;
        struct jv r = jinja_getattr(c, obj, jv_s(key));
        if (r.k == JV_UNDEF && r.name == jv_s(key)) r.hold = json_incref(key->u.j);
        return r;
    }
    struct jv u = jv_undef_in(obj, NULL, NULL);
    if (key->k == JV_INT) u.has_index = true, u.u.i = key->u.i;
    else u.owner = NULL, u.name = "item";
    return u;
}

/* The code points [start, stop) by step (Python's normalized slice
 * bounds) of the str s, without splitting it. */
static struct jv str_slice(const struct jv *s, long long start, long long stop, long long step)
{
    const char *p = jv_s(s);
    size_t n = jv_len_s(s);
    if (step > 0 ? start >= stop : start <= stop) return jv_str("", 0);
    size_t pos = cp_at(p, n, (size_t)start);
    if (step == 1) return jv_substr(s, pos, cp_at(p, n, (size_t)stop) - pos);
    struct jbuf sb = {0};
    for (long long i = start; (step > 0 ? i < stop : i > stop) && !sb.st;) {
        size_t e = cp_next(p, n, pos);
        jbuf_put_v(&sb, s, pos, e - pos);
        if (step > 0)
            for (long long k = 0; k < step && i < stop; k++, i++) pos = cp_next(p, n, pos);
        else
            for (long long k = 0; k != step && i > stop; k--, i--) pos = pos ? cp_prev(p, pos) : 0;
    }
    return sb.p ? jv_str_take(&sb) : jv_str("", 0);
}

static struct jv eval_slice(struct jctx *c, const struct jnode_s *n, struct jv *obj)
{
    struct jv parts[3] = {JV_NONE_V, JV_NONE_V, JV_NONE_V};
    const struct jnode_s *pn[3] = {n->b, n->c, n->d};
    for (int i = 0; i < 3; i++) {
        if (pn[i]) parts[i] = jinja_eval(c, pn[i]);
        if (parts[i].k != JV_NONE && parts[i].k != JV_INT) { jinja_fail(c, WK_E_INVALID, "slice indices must be integers or None"); return JV_UNDEF_V; }
    }
    if (obj->k != JV_LIST && obj->k != JV_STR) { jinja_fail(c, WK_E_INVALID, "'%s' object is not subscriptable", jv_type_name(obj)); return JV_UNDEF_V; }
    long long len = jv_length(obj);
    long long step = parts[2].k == JV_INT ? parts[2].u.i : 1;
    if (step == 0) { jinja_fail(c, WK_E_INVALID, "slice step cannot be zero"); return JV_UNDEF_V; }
    long long lo = step > 0 ? 0 : -1, hi = step > 0 ? len : len - 1;
    long long start = step > 0 ? 0 : len - 1, stop = step > 0 ? len : -1;
    if (parts[0].k == JV_INT) {
        start = parts[0].u.i < 0 ? parts[0].u.i + len : parts[0].u.i;
        if (start < lo) start = lo;
        if (start > hi) start = hi;
    }
    if (parts[1].k == JV_INT) {
        stop = parts[1].u.i < 0 ? parts[1].u.i + len : parts[1].u.i;
        if (stop < lo) stop = lo;
        if (stop > hi) stop = hi;
    }
    if (obj->k == JV_STR) return str_slice(obj, start, stop, step);
    json_t *out = json_array();
    for (long long i = start; out && (step > 0 ? i < stop : i > stop); i += step) {
        json_array_append(out, json_array_get(obj->u.j, (size_t)i));
        if (step > 0 ? step >= stop - i : step <= stop - i) break; /* i + step would pass stop (or overflow) */
    }
    jinja_cost(out ? (long long)json_array_size(out) : 0, 0);
    return (struct jv){.k = JV_LIST, .u.j = out, .tuple = obj->tuple};
}

/* s * k, its size checked before anything is allocated. */
static struct jv repeat(struct jctx *c, const struct jv *s, long long k)
{
    size_t n = jv_len_s(s);
    if (k <= 0 || n == 0) return jv_str("", 0);
    if ((unsigned long long)k > WK_JINJA_MAX_OUTPUT / n) {
        unsigned long long total;
        jinja_too_large(c, "string", __builtin_mul_overflow((unsigned long long)k, n, &total) ? ULLONG_MAX : total);
        return JV_UNDEF_V;
    }
    struct jbuf sb = {0};
    size_t total = n * (size_t)k;
    jbuf_reserve(&sb, total); /* all the room: the copies below read the buffer itself */
    jbuf_put_v(&sb, s, 0, n);
    while (!sb.st && sb.n < total) { /* doubling what is there */
        size_t more = sb.n < total - sb.n ? sb.n : total - sb.n;
        jbuf_put_bits(&sb, sb.p, sb.t, more);
    }
    return jv_str_take(&sb);
}

static struct jv arith(struct jctx *c, int op, struct jv *a, struct jv *b)
{
    bool an = a->k == JV_INT || a->k == JV_FLOAT || a->k == JV_BOOL;
    bool bn = b->k == JV_INT || b->k == JV_FLOAT || b->k == JV_BOOL;
    if (op == '+' && a->k == JV_STR && b->k == JV_STR) {
        bool safe = a->safe || b->safe; /* Markup + str escapes the str */
        struct jv ea = safe && !a->safe ? jinja_escape(a) : jv_copy(a), eb = safe && !b->safe ? jinja_escape(b) : jv_copy(b);
        struct jbuf sb = {0};
        jbuf_reserve(&sb, jv_len_s(&ea) + jv_len_s(&eb)); /* the size checked before anything is allocated */
        jbuf_put_v(&sb, &ea, 0, jv_len_s(&ea));
        jbuf_put_v(&sb, &eb, 0, jv_len_s(&eb));
        jv_free(&ea), jv_free(&eb);
        if (c->st) { jbuf_free(&sb); return JV_UNDEF_V; }
        struct jv r = sb.p ? jv_str_take(&sb) : jv_str("", 0);
        r.safe = safe;
        return r;
    }
    if (op == '+' && a->k == JV_LIST && b->k == JV_LIST) {
        size_t n = json_array_size(a->u.j) + json_array_size(b->u.j);
        if (!jinja_items_ok(c, n) || !jinja_cost((long long)n, 0)) return JV_UNDEF_V;
        json_t *r = json_array();
        json_array_extend(r, a->u.j);
        json_array_extend(r, b->u.j);
        return (struct jv){.k = JV_LIST, .u.j = r, .tuple = a->tuple && b->tuple};
    }
    if (op == '*' && ((a->k == JV_STR && b->k == JV_INT) || (a->k == JV_INT && b->k == JV_STR)))
        return repeat(c, a->k == JV_STR ? a : b, a->k == JV_INT ? a->u.i : b->u.i);
    if (!an || !bn) {
        if (a->k == JV_UNDEF || b->k == JV_UNDEF)
            jinja_undef_fail(c, a->k == JV_UNDEF ? a : b);
        else if (op == '+' && (a->k == JV_STR || a->k == JV_LIST))
            jinja_fail(c, WK_E_INVALID, "can only concatenate %s (not \"%s\") to %s", jv_type_name(a), jv_type_name(b), jv_type_name(a));
        else
            jinja_fail(c, WK_E_INVALID, "unsupported operand type(s) for %c: '%s' and '%s'", op == 'F' ? '/' : op == 'P' ? '*' : op, jv_type_name(a), jv_type_name(b));
        return JV_UNDEF_V;
    }
    bool ints = a->k != JV_FLOAT && b->k != JV_FLOAT;
    long long x = a->k == JV_INT ? a->u.i : a->k == JV_BOOL ? a->u.b : 0;
    long long y = b->k == JV_INT ? b->u.i : b->k == JV_BOOL ? b->u.b : 0;
    double fx = a->k == JV_FLOAT ? a->u.f : (double)x, fy = b->k == JV_FLOAT ? b->u.f : (double)y;
    long long z;
    switch (op) {
    case '+': if (ints && __builtin_add_overflow(x, y, &z)) goto overflow; return ints ? jv_int(x + y) : jv_float(fx + fy);
    case '-': if (ints && __builtin_sub_overflow(x, y, &z)) goto overflow; return ints ? jv_int(x - y) : jv_float(fx - fy);
    case '*': if (ints && __builtin_mul_overflow(x, y, &z)) goto overflow; return ints ? jv_int(x * y) : jv_float(fx * fy);
    case '/':
        if (fy == 0) break;
        return jv_float(fx / fy);
    case 'F':
        if (fy == 0) break;
        if (ints && y == -1) { if (__builtin_sub_overflow(0, x, &z)) goto overflow; return jv_int(z); }
        if (ints) { long long q = x / y; if ((x % y != 0) && ((x < 0) != (y < 0))) q--; return jv_int(q); }
        return jv_float(floor(fx / fy));
    case '%':
        if (fy == 0) break;
        if (ints && y == -1) return jv_int(0);
        if (ints) { long long r = x % y; if (r && ((r < 0) != (y < 0))) r += y; return jv_int(r); }
        { double r = fmod(fx, fy); if (r && ((r < 0) != (fy < 0))) r += fy; return jv_float(r); }
    case 'P':
        if (ints && y >= 0) {
            long long r = 1;
            for (long long i = 0; i < y && r != 0 && (r != 1 || x != 1); i++)
                if (__builtin_mul_overflow(r, x, &r)) goto overflow;
            if (x == -1) r = y % 2 ? -1 : 1;
            return jv_int(r);
        }
        if (fx == 0 && fy < 0) {
            jinja_fail(c, WK_E_INVALID, "ZeroDivisionError: 0.0 cannot be raised to a negative power");
            return JV_UNDEF_V;
        }
        if (isfinite(fx) && isfinite(fy) && isinf(pow(fx, fy))) { /* Python's float ** overflows loudly */
            jinja_fail(c, WK_E_RANGE, "OverflowError: (34, 'Numerical result out of range')");
            return JV_UNDEF_V;
        }
        return jv_float(pow(fx, fy));
    }
    jinja_fail(c, WK_E_INVALID, "division by zero");
    return JV_UNDEF_V;
overflow:
    jinja_fail(c, WK_E_RANGE, "integer result too large");
    return JV_UNDEF_V;
}

struct jv jinja_arith(struct jctx *c, int op, struct jv *a, struct jv *b) { return arith(c, op, a, b); }

static bool contains(struct jctx *c, const struct jv *needle, const struct jv *hay)
{
    if (hay->k == JV_STR) {
        if (needle->k != JV_STR) { jinja_fail(c, WK_E_INVALID, "'in <string>' requires string as left operand"); return false; }
        if (jv_len_s(needle) == 0) return true;
        jinja_cost(0, jv_len_s(hay));
        return memmem(jv_s(hay), jv_len_s(hay), jv_s(needle), jv_len_s(needle)) != NULL;
    }
    if (hay->k == JV_DICT || hay->k == JV_NS) {
        struct jbuf kb = {0};
        bool in = jv_key_encode(c, needle, &kb) && json_object_get(hay->u.j, kb.p);
        jbuf_free(&kb);
        return in;
    }
    if (hay->k == JV_GEN) {
        struct jv l = {.k = JV_LIST, .u.j = jv_iter_list(c, hay)};
        bool in = l.u.j && contains(c, needle, &l);
        jv_free(&l);
        return in;
    }
    if (hay->k == JV_LIST) {
        for (size_t i = 0; i < json_array_size(hay->u.j) && !c->st; i++) {
            struct jv e = jv_from_json(json_incref(json_array_get(hay->u.j, i)));
            bool eq = jv_equal(&e, needle);
            jv_free(&e);
            if (eq) return true;
        }
        return false;
    }
    if (hay->k == JV_UNDEF) return false;
    jinja_fail(c, WK_E_INVALID, "argument of type '%s' is not iterable", jv_type_name(hay));
    return false;
}

static struct jv compare_op(struct jctx *c, int op, struct jv *a, struct jv *b)
{
    if (op == JC_EQ) return jv_bool(jv_equal(a, b));
    if (op == JC_NE) return jv_bool(!jv_equal(a, b));
    if (op == JC_IN) return jv_bool(contains(c, a, b));
    if (op == JC_NOTIN) return jv_bool(!contains(c, a, b));
    bool ok;
    int r = jv_compare(c, a, b, &ok);
    if (!ok) {
        static const char *const names[] = {"==", "!=", "<", "<=", ">", ">="};
        jinja_fail(c, WK_E_INVALID, "'%s' not supported between instances of '%s' and '%s'", names[op], jv_type_name(a), jv_type_name(b));
        return JV_UNDEF_V;
    }
    return jv_bool(op == JC_LT ? r < 0 : op == JC_LE ? r <= 0 : op == JC_GT ? r > 0 : r >= 0);
}


/* Evaluates call arguments: positional into args, keywords into kwvals. */
static size_t eval_args(struct jctx *c, const struct jnode_s *n, struct jv *args, const char **kwnames, struct jv *kwvals, size_t *nkw)
{
    size_t na = n->args.n < 16 ? n->args.n : 16;
    for (size_t i = 0; i < na; i++) args[i] = jinja_eval(c, n->args.v[i]);
    *nkw = n->kwargs.n < 16 ? n->kwargs.n : 16;
    for (size_t i = 0; i < *nkw; i++) {
        kwnames[i] = n->kwargs.v[i]->str;
        kwvals[i] = jinja_eval(c, n->kwargs.v[i]->a);
    }
    return na;
}

static void free_args(struct jv *args, size_t na, struct jv *kwvals, size_t nkw)
{
    for (size_t i = 0; i < na; i++) jv_free(&args[i]);
    for (size_t i = 0; i < nkw; i++) jv_free(&kwvals[i]);
}

static int exec_body(struct jctx *c, const struct jnode_vec *body);

struct jv jinja_call_macro(struct jctx *c, const struct jv *m, struct jv *args, size_t nargs,
                           const char **kwnames, struct jv *kwvals, size_t nkw, const struct jnode_s *caller)
{
    const struct jnode_s *def = m->u.macro;
    if (c->depth >= WK_JINJA_MAX_DEPTH) { jinja_fail(c, WK_E_RANGE, "recursion too deep (macro %s)", def->str); return JV_UNDEF_V; }
    if (!jinja_cost(1, 0)) return JV_UNDEF_V;
    struct jframe f = {.parent = m->closure ? m->closure : c->globals};
    for (size_t i = 0; i < def->args.n; i++) {
        const struct jnode_s *p = def->args.v[i];
        struct jv v = JV_UNDEF_V;
        bool set = false;
        if (i < nargs) v = jv_copy(&args[i]), set = true;
        for (size_t k = 0; k < nkw; k++)
            if (!strcmp(kwnames[k], p->str)) { jv_free(&v); v = jv_copy(&kwvals[k]); set = true; }
        if (!set && p->a) {
            struct jframe *saved = c->frame;
            c->frame = &f;
            v = jinja_eval(c, p->a);
            c->frame = saved;
        }
        if (!set && !p->a) v.name = p->str;
        frame_set(c, &f, p->str, v);
    }
    if (nargs > def->args.n) {
        frame_free(&f);
        jinja_fail(c, WK_E_INVALID, "macro '%s' takes not more than %zu argument(s)", def->str, def->args.n);
        return JV_UNDEF_V;
    }
    if (caller) frame_set(c, &f, "caller", (struct jv){.k = JV_MACRO, .u.macro = caller, .closure = c->frame});
    struct jbuf *saved_out = c->out;
    struct jbuf buf = {.limit = WK_JINJA_MAX_OUTPUT};
    struct jframe *saved = c->frame;
    c->out = &buf;
    c->frame = &f;
    c->depth++;
    exec_body(c, &def->body);
    c->depth--;
    c->frame = saved;
    c->out = saved_out;
    frame_free(&f);
    if (buf.st && !c->st) jinja_fail(c, buf.st, "output too large");
    if (c->st) { jbuf_free(&buf); return JV_UNDEF_V; }
    return buf.p ? jv_str_take(&buf) : jv_str("", 0);
}

static struct jv eval_call(struct jctx *c, const struct jnode_s *n, const struct jnode_s *caller)
{
    struct jv f = jinja_eval(c, n->a);
    if (c->st) { jv_free(&f); return JV_UNDEF_V; }
    struct jv args[16], kwvals[16];
    const char *kwnames[16];
    size_t nkw, na = eval_args(c, n, args, kwnames, kwvals, &nkw);
    struct jv r = JV_UNDEF_V;
    if (c->st) {
    } else if (f.k == JV_MACRO) {
        r = jinja_call_macro(c, &f, args, na, kwnames, kwvals, nkw, caller);
    } else if (f.k == JV_METHOD) {
        r = jinja_call_method(c, &f, args, na, kwnames, kwvals, nkw);
    } else if (f.k == JV_FUNC) {
        r = jinja_call_func(c, &f, args, na, kwnames, kwvals, nkw);
    } else if (f.k == JV_UNDEF) {
        jinja_undef_fail(c, &f);
    } else {
        jinja_fail(c, WK_E_INVALID, "'%s' object is not callable", jv_type_name(&f));
    }
    free_args(args, na, kwvals, nkw);
    jv_free(&f);
    return r;
}

static struct jv eval_filter(struct jctx *c, const struct jnode_s *n, struct jv *operand)
{
    struct jv v = operand ? *operand : jinja_eval(c, n->a);
    if (c->st) { jv_free(&v); return JV_UNDEF_V; }
    struct jv args[16], kwvals[16];
    const char *kwnames[16];
    size_t nkw, na = eval_args(c, n, args, kwnames, kwvals, &nkw);
    struct jv r = c->st ? JV_UNDEF_V : jinja_filter(c, n->str, &v, args, na, kwnames, kwvals, nkw);
    free_args(args, na, kwvals, nkw);
    jv_free(&v);
    return r;
}

/* A filter chain whose innermost filter has no operand, applied to v (taken). */
static struct jv apply_chain(struct jctx *c, const struct jnode_s *chain, struct jv v)
{
    if (chain->a) v = apply_chain(c, chain->a, v);
    return eval_filter(c, chain, &v);
}

static struct jv eval_seq(struct jctx *c, const struct jnode_s *n)
{
    json_t *j = n->kind == JE_DICT ? json_object() : json_array();
    for (size_t i = 0; i < n->args.n && !c->st; i++) {
        struct jv v = jinja_eval(c, n->kind == JE_DICT ? n->kwargs.v[i] : n->args.v[i]);
        json_t *jj = v.k == JV_UNDEF ? json_incref(jinja_undef_json()) : jv_to_json(&v);
        if (!jj && !c->st) jinja_fail(c, WK_E_INVALID, "a %s cannot be stored in a list or dict", jv_type_name(&v));
        jv_free(&v);
        if (!jj) break;
        if (n->kind == JE_DICT) {
            struct jv k = jinja_eval(c, n->args.v[i]);
            struct jbuf kb = {0};
            if (!c->st && jv_key_encode(c, &k, &kb)) json_object_set_new(j, kb.p, jj);
            else json_decref(jj);
            jbuf_free(&kb);
            jv_free(&k);
        } else {
            json_array_append_new(j, jj);
        }
    }
    struct jv r = {.k = n->kind == JE_DICT ? JV_DICT : JV_LIST, .u.j = j, .tuple = n->kind == JE_TUPLE};
    if (c->st || !jinja_nest_ok(c, j)) { jv_free(&r); return JV_UNDEF_V; }
    return r;
}

static struct jv eval_inner(struct jctx *c, const struct jnode_s *n)
{
    struct jv a, b, r;
    switch (n->kind) {
    case JE_LIT: return jv_from_json(json_incref(n->lit));
    case JE_NAME: return lookup(c, c->frame, n->str);
    case JE_ATTR:
        a = jinja_eval(c, n->a);
        r = c->st ? JV_UNDEF_V : jinja_getattr(c, &a, n->str);
        jv_free(&a);
        return r;
    case JE_ITEM:
        a = jinja_eval(c, n->a);
        b = jinja_eval(c, n->b);
        r = c->st ? JV_UNDEF_V : jinja_getitem(c, &a, &b);
        jv_free(&a), jv_free(&b);
        return r;
    case JE_SLICE:
        a = jinja_eval(c, n->a);
        r = c->st ? JV_UNDEF_V : eval_slice(c, n, &a);
        jv_free(&a);
        return r;
    case JE_CALL: return eval_call(c, n, NULL);
    case JE_FILTER: return eval_filter(c, n, NULL);
    case JE_TEST: {
        a = jinja_eval(c, n->a);
        struct jv args[16];
        size_t na = n->args.n < 16 ? n->args.n : 16;
        for (size_t i = 0; i < na; i++) args[i] = jinja_eval(c, n->args.v[i]);
        bool t = c->st ? false : jinja_test(c, n->str, &a, args, na);
        for (size_t i = 0; i < na; i++) jv_free(&args[i]);
        jv_free(&a);
        return jv_bool(t != n->negate);
    }
    case JE_NEG: case JE_POS:
        a = jinja_eval(c, n->a);
        if (!c->st && a.k == JV_FLOAT) /* as Python: -(0.0) is -0.0, +(-0.0) stays -0.0 (0 - x would not) */
            return jv_float(n->kind == JE_NEG ? -a.u.f : a.u.f);
        b = jv_int(0);
        r = c->st ? JV_UNDEF_V : n->kind == JE_POS ? arith(c, '+', &b, &a) : arith(c, '-', &b, &a);
        jv_free(&a);
        return r;
    case JE_NOT:
        a = jinja_eval(c, n->a);
        r = jv_bool(!jv_truthy(&a));
        jv_free(&a);
        return r;
    case JE_BIN:
        a = jinja_eval(c, n->a);
        b = jinja_eval(c, n->b);
        if (n->op == '~' && !c->st) {
            struct jbuf sb = {0};
            jbuf_reserve(&sb, jv_len_s(&a) + jv_len_s(&b)); /* strings: the size checked before anything is allocated */
            jv_write_str(&sb, &a);
            jv_write_str(&sb, &b);
            r = sb.p ? jv_str_take(&sb) : jv_str("", 0);
        } else {
            r = c->st ? JV_UNDEF_V : arith(c, n->op, &a, &b);
        }
        jv_free(&a), jv_free(&b);
        return r;
    case JE_AND: case JE_OR:
        a = jinja_eval(c, n->a);
        if (jv_truthy(&a) == (n->kind == JE_OR)) return a;
        jv_free(&a);
        return jinja_eval(c, n->b);
    case JE_CMP:
        a = jinja_eval(c, n->a);
        b = jinja_eval(c, n->b);
        r = c->st ? JV_UNDEF_V : compare_op(c, n->op, &a, &b);
        jv_free(&a), jv_free(&b);
        return r;
    case JE_COND:
        a = jinja_eval(c, n->a);
        bool t = jv_truthy(&a);
        jv_free(&a);
        if (t) return jinja_eval(c, n->b);
        return n->c ? jinja_eval(c, n->c) : JV_UNDEF_V;
    case JE_LIST: case JE_TUPLE: case JE_DICT: return eval_seq(c, n);
    default:
        jinja_fail(c, WK_E_INTERNAL, "line %d: not an expression", n->line);
        return JV_UNDEF_V;
    }
}

struct jv jinja_eval(struct jctx *c, const struct jnode_s *n)
{
    if (c->st) return JV_UNDEF_V;
    if (++c->steps > WK_JINJA_MAX_STEPS && !jinja_cost(0, 0)) return JV_UNDEF_V;
    if (++c->depth > WK_JINJA_MAX_DEPTH * 4) { c->depth--; jinja_fail(c, WK_E_RANGE, "expression nested too deeply"); return JV_UNDEF_V; }
    struct jv r = eval_inner(c, n);
    c->depth--;
    if (c->st) { jv_free(&r); return JV_UNDEF_V; }
    return r;
}

/* ---- statements ---- */

static void output(struct jctx *c, const struct jv *v)
{
    jv_write_str(c->out, v);
    if (c->out->st) jinja_fail(c, c->out->st, c->out->st == WK_E_RANGE ? "output larger than the limit" : "out of memory");
}

/* Binds target (a name or a tuple of names) to v (taken) in f. */
static void assign(struct jctx *c, struct jframe *f, const struct jnode_s *target, struct jv v)
{
    if (target->kind == JE_NAME) { frame_set(c, f, target->str, v); return; }
    if (target->kind == JE_TUPLE) {
        json_t *items = jv_iter_list(c, &v);
        if (items && json_array_size(items) != target->args.n)
            jinja_fail(c, WK_E_INVALID, "cannot unpack %zu values into %zu names", json_array_size(items), target->args.n);
        for (size_t i = 0; items && !c->st && i < target->args.n; i++)
            assign(c, f, target->args.v[i], jv_from_json(json_incref(json_array_get(items, i))));
        if (items) json_decref(items);
        jv_free(&v);
        return;
    }
    if (target->kind == JE_ATTR) {
        struct jv ns = jinja_eval(c, target->a);
        if (ns.k != JV_NS) jinja_fail(c, WK_E_INVALID, "can only set attributes of a namespace");
        json_t *j = c->st ? NULL : v.k == JV_UNDEF ? json_incref(jinja_undef_json()) : jv_to_json(&v);
        if (!c->st && !j) jinja_fail(c, WK_E_INVALID, "a %s cannot be stored in a namespace", jv_type_name(&v));
        if (j) json_object_set_new(ns.u.j, target->str, j);
        jv_free(&ns);
        jv_free(&v);
        return;
    }
    jv_free(&v);
    jinja_fail(c, WK_E_INVALID, "cannot assign to this target");
}

static int exec_for(struct jctx *c, const struct jnode_s *n)
{
    struct jv seq = jinja_eval(c, n->b);
    if (c->st) return FLOW_ERROR;
    json_t *all = jv_iter_list(c, &seq);
    jv_free(&seq);
    if (!all) return FLOW_ERROR;
    json_t *items = all;
    if (n->c) { /* the loop filter: loop.* counts only the items kept */
        items = json_array();
        for (size_t i = 0; i < json_array_size(all) && !c->st; i++) {
            struct jframe f = {.parent = c->frame};
            struct jframe *saved = c->frame;
            c->frame = &f;
            assign(c, &f, n->a, jv_from_json(json_incref(json_array_get(all, i))));
            struct jv keep = jinja_eval(c, n->c);
            if (jv_truthy(&keep)) json_array_append(items, json_array_get(all, i));
            jv_free(&keep);
            c->frame = saved;
            frame_free(&f);
        }
        json_decref(all);
    }
    struct jloop loop = {.items = items, .length = json_array_size(items)};
    int flow = FLOW_NORMAL;
    for (size_t i = 0; i < loop.length && !c->st; i++) {
        if (++c->iterations > WK_JINJA_MAX_ITERATIONS) { jinja_fail(c, WK_E_RANGE, "too many loop iterations"); break; }
        if (!jinja_cost(1, 0)) break;
        loop.index = i;
        struct jframe f = {.parent = c->frame};
        struct jframe *saved = c->frame;
        c->frame = &f;
        frame_set(c, &f, "loop", (struct jv){.k = JV_LOOP, .u.loop = &loop});
        assign(c, &f, n->a, jv_from_json(json_incref(json_array_get(items, i))));
        flow = c->st ? FLOW_ERROR : exec_body(c, &n->body);
        c->frame = saved;
        frame_free(&f);
        if (flow == FLOW_BREAK) break;
    }
    json_decref(items);
    if (c->st) return FLOW_ERROR;
    if (loop.length == 0 && n->orelse.n) return exec_body(c, &n->orelse) == FLOW_ERROR ? FLOW_ERROR : FLOW_NORMAL;
    return FLOW_NORMAL;
}

/* Renders body into a new string value. */
static struct jv capture(struct jctx *c, const struct jnode_vec *body)
{
    struct jbuf *saved = c->out;
    struct jbuf buf = {.limit = WK_JINJA_MAX_OUTPUT};
    c->out = &buf;
    exec_body(c, body);
    c->out = saved;
    if (buf.st && !c->st) jinja_fail(c, buf.st, "output too large");
    if (c->st) { jbuf_free(&buf); return JV_UNDEF_V; }
    return buf.p ? jv_str_take(&buf) : jv_str("", 0);
}

static int exec_stmt(struct jctx *c, const struct jnode_s *n)
{
    struct jv v;
    switch (n->kind) {
    case JN_TEXT: jbuf_put(c->out, n->str, n->len); if (c->out->st) jinja_fail(c, c->out->st, "output larger than the limit"); break;
    case JN_OUT:
        v = jinja_eval(c, n->a);
        if (!c->st) output(c, &v);
        jv_free(&v);
        break;
    case JN_IF:
        v = jinja_eval(c, n->a);
        if (c->st) return FLOW_ERROR;
        bool t = jv_truthy(&v);
        jv_free(&v);
        return exec_body(c, t ? &n->body : &n->orelse);
    case JN_FOR: return exec_for(c, n);
    case JN_SET:
        v = jinja_eval(c, n->b);
        if (!c->st) assign(c, c->frame, n->a, v);
        break;
    case JN_SETBLOCK:
        v = capture(c, &n->body);
        if (!c->st && n->d) v = apply_chain(c, n->d, v);
        if (!c->st) assign(c, c->frame, n->a, v);
        else jv_free(&v);
        break;
    case JN_MACRO:
        frame_set(c, c->frame, n->str, (struct jv){.k = JV_MACRO, .u.macro = n, .closure = c->frame == c->globals ? NULL : c->frame});
        break;
    case JN_CALLBLOCK: {
        struct jnode_s *caller = (struct jnode_s *)n; /* its args are the caller's params, body its body */
        v = eval_call(c, n->a, caller);
        if (!c->st) output(c, &v);
        jv_free(&v);
        break;
    }
    case JN_FILTERBLOCK:
        v = capture(c, &n->body);
        if (!c->st) v = apply_chain(c, n->a, v);
        if (!c->st) output(c, &v);
        jv_free(&v);
        break;
    case JN_BREAK: return FLOW_BREAK;
    case JN_CONTINUE: return FLOW_CONTINUE;
    case JN_BODY: return exec_body(c, &n->body);
    default: jinja_fail(c, WK_E_INTERNAL, "line %d: not a statement", n->line);
    }
    return c->st ? FLOW_ERROR : FLOW_NORMAL;
}

static int exec_body(struct jctx *c, const struct jnode_vec *body)
{
    for (size_t i = 0; i < body->n; i++) {
        if (++c->steps > WK_JINJA_MAX_STEPS && !jinja_cost(0, 0)) return FLOW_ERROR;
        int flow = exec_stmt(c, body->v[i]);
        if (flow != FLOW_NORMAL) return flow;
    }
    return c->st ? FLOW_ERROR : FLOW_NORMAL;
}

/* ---- public API ---- */

enum wk_status wk_jinja_parse(const char *src, size_t len, struct wk_jinja **out, struct wk_error *err)
{
    *out = NULL;
    char *norm = wk_malloc(len + 1);
    if (!norm) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') { norm[n++] = '\n'; if (i + 1 < len && src[i + 1] == '\n') i++; }
        else norm[n++] = src[i];
    }
    if (n && norm[n - 1] == '\n') n--;
    norm[n] = 0;
    struct jtokens toks;
    enum wk_status st = jinja_lex(norm, n, &toks, err);
    struct jnode_s *root = NULL;
    if (!st) {
        st = jinja_parse_tokens(&toks, &root, err);
        jinja_tokens_free(&toks);
    }
    wk_free(norm);
    if (st) return st;
    struct wk_jinja *t = wk_calloc(1, sizeof *t);
    if (!t) { jinja_node_free(root); return wk_error_set(err, WK_E_NOMEM, "out of memory"); }
    t->root = root;
    t->fixed_time = -1;
    *out = t;
    return WK_OK;
}

void wk_jinja_set_time(struct wk_jinja *t, long long unix_seconds) { t->fixed_time = unix_seconds; }

void wk_jinja_free(struct wk_jinja *t)
{
    if (!t) return;
    jinja_node_free(t->root);
    wk_free(t);
}

/* The runs of buf (its provenance bytes t, or none: all template text). */
static enum wk_status make_runs(const struct jbuf *buf, struct wk_jinja_run **runs, size_t *n_runs)
{
    size_t n = 0;
    for (size_t i = 0; i < buf->n; i++) n += i == 0 || (buf->t && buf->t[i] != buf->t[i - 1]);
    *runs = NULL, *n_runs = 0;
    if (!n) return WK_OK;
    struct wk_jinja_run *r = wk_malloc(n * sizeof *r);
    if (!r) return WK_E_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < buf->n; i++) {
        bool content = buf->t && buf->t[i];
        if (k && r[k - 1].content == content) { r[k - 1].len++; continue; }
        r[k++] = (struct wk_jinja_run){.off = i, .len = 1, .content = content};
    }
    *runs = r, *n_runs = k;
    return WK_OK;
}

static enum wk_status render(const struct wk_jinja *t, const json_t *vars, char **out, size_t *out_len,
                             struct wk_jinja_run **runs, size_t *n_runs, struct wk_error *err)
{
    *out = NULL;
    if (out_len) *out_len = 0;
    if (runs) *runs = NULL, *n_runs = 0;
    if (vars && !json_is_object(vars)) return wk_error_set(err, WK_E_INVALID, "template variables must be a JSON object");
    struct jbuf buf = {.limit = WK_JINJA_MAX_OUTPUT};
    struct jframe globals = {.vars = vars};
    struct jframe top = {.parent = &globals};
    struct jctx c = {.t = t, .out = &buf, .err = err, .globals = &top, .frame = &top};
    jinja_track_begin(&c);
    if (runs) {
        jinja_taint_begin();
        jinja_taint_vars(vars);
    }
    exec_body(&c, &t->root->body);
    frame_free(&top);
    if (runs) jinja_taint_end();
    jinja_track_end(&c);
    if (!c.st && buf.st) jinja_fail(&c, buf.st, "output too large");
    if (!c.st && runs && make_runs(&buf, runs, n_runs)) jinja_fail(&c, WK_E_NOMEM, "out of memory");
    wk_free(buf.t);
    buf.t = NULL;
    if (c.st) { jbuf_free(&buf); return c.st; }
    if (!buf.p) {
        buf.p = wk_malloc(1);
        if (!buf.p) { if (runs) wk_free(*runs), *runs = NULL, *n_runs = 0; return wk_error_set(err, WK_E_NOMEM, "out of memory"); }
        buf.p[0] = 0;
    }
    *out = buf.p;
    if (out_len) *out_len = buf.n;
    return WK_OK;
}

enum wk_status wk_jinja_render(const struct wk_jinja *t, const json_t *vars, char **out, size_t *out_len, struct wk_error *err)
{
    return render(t, vars, out, out_len, NULL, NULL, err);
}

enum wk_status wk_jinja_render_runs(const struct wk_jinja *t, const json_t *vars, char **out, size_t *out_len,
                                    struct wk_jinja_run **runs, size_t *n_runs, struct wk_error *err)
{
    return render(t, vars, out, out_len, runs, n_runs, err);
}
