/*
 * gotmpl_exec.c - the executor of the Go text/template engine: walks the
 * tree of gotmpl_parse.c over a jansson dot, with Go's variable scoping,
 * range over arrays and objects (sorted keys), with, if, break, continue,
 * pipelines, and and / or short-circuiting; bounded in output size and
 * iterations.
 */
#include "gotmpl_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum { FLOW_BREAK = 1, FLOW_CONTINUE = 2 };

struct var {
    const char *name;
    json_t *val; /* owned reference or NULL */
};

struct ex {
    struct gt_buf out;
    struct var *vars;
    int n_vars, cap_vars;
    long long iters, max_iters;
    struct gt_prov *prov; /* NULL: no provenance */
    int cut_ord;          /* nodes past it are skipped (INT_MAX: none) */
    struct wk_error *err;
    enum wk_status st;
};

static int fail(struct ex *e, enum wk_status st, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct ex *e, enum wk_status st, int line, const char *fmt, ...)
{
    if (e->st == WK_OK) {
        char msg[WK_ERROR_MSG_MAX - 32];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        e->st = wk_error_set(e->err, st, "template line %d: %s", line, msg);
    }
    return -1;
}

static int out_fail(struct ex *e, int line)
{
    if (e->out.st == WK_E_RANGE)
        return fail(e, WK_E_RANGE, line, "output exceeds %zu bytes", e->out.max);
    return fail(e, WK_E_NOMEM, line, "out of memory");
}

/* ------------------------------------------------------------- variables */

static int var_push(struct ex *e, const char *name, json_t *val, int line)
{
    if (e->n_vars == e->cap_vars) {
        int cap = e->cap_vars ? e->cap_vars * 2 : 16;
        struct var *v = wk_realloc(e->vars, (size_t)cap * sizeof *v);
        if (!v) {
            json_decref(val);
            return fail(e, WK_E_NOMEM, line, "out of memory");
        }
        e->vars = v, e->cap_vars = cap;
    }
    e->vars[e->n_vars++] = (struct var){name, val};
    return 0;
}

static void var_pop(struct ex *e, int mark)
{
    while (e->n_vars > mark) json_decref(e->vars[--e->n_vars].val);
}

static struct var *var_find(struct ex *e, const char *name)
{
    for (int i = e->n_vars - 1; i >= 0; i--)
        if (!strcmp(e->vars[i].name, name)) return &e->vars[i];
    return NULL;
}

/* A new reference to v (NULL for no value or a JSON null). */
static json_t *ref(json_t *v)
{
    return v && !json_is_null(v) ? json_incref(v) : NULL;
}

/* ------------------------------------------------------------ evaluation */

static int eval_pipe(struct ex *e, const struct gt_pipe *pp, json_t *dot, json_t **out);
static int eval_cmd(struct ex *e, const struct gt_cmd *c, json_t *dot, json_t *final, bool piped,
                    int line, json_t **out);

/* Field name of the typed value v (a reference this takes over) of type
 * ty: Go's rules for a struct (a field it lacks is an error, a missing
 * member the field's zero value) or a map type (a missing key the zero
 * of its element). */
static int typed_field(struct ex *e, json_t *v, const struct gt_type *ty, bool nil, const char *name, int line,
                       json_t **out)
{
    *out = NULL;
    const struct gt_field *f = NULL;
    for (int k = 0; ty->kind == GT_STRUCT && k < ty->n_fields; k++)
        if (!strcmp(ty->fields[k].name, name)) f = &ty->fields[k];
    int r = 0;
    bool nomem = false;
    if (ty->kind == GT_STRUCT && !f) {
        r = fail(e, WK_E_INVALID, line, "can't evaluate field %s in type %s", name, ty->name);
    } else if (ty->kind == GT_STRUCT && nil) {
        r = fail(e, WK_E_INVALID, line, "nil pointer evaluating %s.%s", ty->name, name);
    } else if (ty->kind == GT_SLICE) {
        r = fail(e, WK_E_INVALID, line, "can't evaluate field %s in type %s", name, ty->name);
    } else {
        json_t *m = json_object_get(v, f ? f->key : name);
        if (m && !json_is_null(m)) *out = json_incref(m);
        else if (f) *out = gt_prov_zero(e->prov, f, &nomem);
        else if (ty->elem) *out = gt_prov_zero_struct(e->prov, ty->elem, &nomem);
        if (nomem) r = fail(e, WK_E_NOMEM, line, "out of memory");
    }
    json_decref(v);
    return r;
}

/* Follows the field chain from v (a reference this takes over). */
static int eval_fields(struct ex *e, json_t *v, const struct gt_arg *a, int line, json_t **out)
{
    for (int i = 0; i < a->n_fields; i++) {
        const char *name = a->fields[i];
        if (!v) continue; /* a field of no value is no value */
        bool nil;
        const struct gt_type *ty = gt_prov_type(e->prov, v, &nil);
        if (ty) {
            json_t *f = NULL;
            if (typed_field(e, v, ty, nil, name, line, &f) < 0) return -1;
            v = f;
            continue;
        }
        if (!json_is_object(v)) {
            int r = fail(e, WK_E_INVALID, line, "can't evaluate field %s in type %s", name,
                         gt_type_name(e->prov, v));
            json_decref(v);
            return r;
        }
        json_t *f = json_object_get(v, name);
        if (!f && name[0] >= 'A' && name[0] <= 'Z') {
            char lower[256];
            snprintf(lower, sizeof lower, "%c%s", name[0] - 'A' + 'a', name + 1);
            f = json_object_get(v, lower);
        }
        f = ref(f);
        json_decref(v);
        v = f;
    }
    *out = v;
    return 0;
}

static int eval_arg(struct ex *e, const struct gt_arg *a, json_t *dot, int line, json_t **out)
{
    *out = NULL;
    switch (a->kind) {
    case GA_DOT: *out = ref(dot); return 0;
    case GA_FIELD: return eval_fields(e, ref(dot), a, line, out);
    case GA_VAR: {
        struct var *v = var_find(e, a->str);
        if (!v) return fail(e, WK_E_INVALID, line, "undefined variable: %s", a->str);
        return eval_fields(e, ref(v->val), a, line, out);
    }
    case GA_PIPE: {
        json_t *v = NULL;
        if (eval_pipe(e, a->pipe, dot, &v) < 0) return -1;
        return eval_fields(e, v, a, line, out);
    }
    case GA_STRING: *out = json_stringn_nocheck(a->str, a->len); break;
    case GA_INT: *out = json_integer(a->i); break;
    case GA_FLOAT: *out = json_real(a->f); break;
    case GA_BOOL: *out = json_boolean(a->i); break;
    case GA_NIL: return 0;
    case GA_FUNC: { /* a function as an argument: called without arguments */
        const struct gt_cmd c = {.args = (struct gt_arg *)a, .n_args = 1};
        return eval_cmd(e, &c, dot, NULL, false, line, out);
    }
    }
    return *out ? 0 : fail(e, WK_E_NOMEM, line, "out of memory");
}

/* and / or: the first argument that decides, else the last. */
static int call_and_or(struct ex *e, const struct gt_cmd *c, json_t *dot, json_t *final, int line,
                       json_t **out)
{
    bool is_or = c->args[0].i == GF_OR;
    int n = c->n_args - 1 + (final != NULL);
    if (n < 1)
        return fail(e, WK_E_INVALID, line, "wrong number of args for %s: want at least 1 got 0",
                    is_or ? "or" : "and");
    json_t *v = NULL;
    for (int i = 1; i < c->n_args; i++) {
        json_decref(v);
        if (eval_arg(e, &c->args[i], dot, line, &v) < 0) return -1;
        if (gt_truth(e->prov, v) == is_or) {
            *out = v;
            return 0;
        }
    }
    if (final) {
        json_decref(v);
        v = json_incref(final);
    }
    *out = v;
    return 0;
}

/* A command: a function call (with final, the value piped in, last) or a
 * single operand. */
static int eval_cmd(struct ex *e, const struct gt_cmd *c, json_t *dot, json_t *final, bool piped,
                    int line, json_t **out)
{
    const struct gt_arg *a0 = &c->args[0];
    if (a0->kind != GA_FUNC) {
        if (c->n_args > 1 || piped)
            return fail(e, WK_E_INVALID, line, "can't give argument to non-function");
        if (a0->kind == GA_NIL) return fail(e, WK_E_INVALID, line, "nil is not a command");
        return eval_arg(e, a0, dot, line, out);
    }
    if (a0->i == GF_AND || a0->i == GF_OR) return call_and_or(e, c, dot, final, line, out);
    int n = c->n_args - 1 + piped;
    json_t *stack_args[8], **args = stack_args;
    if (n > 8 && !(args = wk_calloc((size_t)n, sizeof *args)))
        return fail(e, WK_E_NOMEM, line, "out of memory");
    int got = 0, r = 0;
    for (int i = 1; i < c->n_args && r == 0; i++, got++)
        r = eval_arg(e, &c->args[i], dot, line, &args[got]);
    if (r == 0 && piped) args[got++] = final ? json_incref(final) : NULL;
    if (r == 0) {
        char msg[WK_ERROR_MSG_MAX - 64];
        enum wk_status st = gt_func_call((int)a0->i, args, got, e->out.max, e->prov, out, msg,
                                         sizeof msg);
        if (st != WK_OK) r = fail(e, st, line, "error calling %s: %s", gt_func_name((int)a0->i), msg);
    }
    for (int i = 0; i < got; i++) json_decref(args[i]);
    if (args != stack_args) wk_free(args);
    return r;
}

/* Evaluates the commands of pp (not its declaration). */
static int eval_pipe(struct ex *e, const struct gt_pipe *pp, json_t *dot, json_t **out)
{
    json_t *v = NULL;
    for (int i = 0; i < pp->n_cmds; i++) {
        json_t *next = NULL;
        int r = eval_cmd(e, &pp->cmds[i], dot, v, i > 0, pp->line, &next);
        json_decref(v);
        if (r < 0) return -1;
        v = next;
    }
    *out = v;
    return 0;
}

/* Evaluates pp and performs its declaration or assignment (one variable). */
static int eval_pipe_decl(struct ex *e, const struct gt_pipe *pp, json_t *dot, json_t **out)
{
    if (eval_pipe(e, pp, dot, out) < 0) return -1;
    if (pp->n_vars == 0) return 0;
    if (pp->assign) {
        struct var *v = var_find(e, pp->vars[0]);
        if (!v) return fail(e, WK_E_INVALID, pp->line, "undefined variable: %s", pp->vars[0]);
        json_decref(v->val);
        v->val = *out ? json_incref(*out) : NULL;
        return 0;
    }
    return var_push(e, pp->vars[0], *out ? json_incref(*out) : NULL, pp->line);
}

/* ------------------------------------------------------------------ walk */

static int walk(struct ex *e, const struct gt_list *l, json_t *dot);

static int walk_action(struct ex *e, const struct gt_node *nd, json_t *dot)
{
    json_t *v = NULL;
    if (eval_pipe_decl(e, nd->pipe, dot, &v) < 0) return -1;
    bool ok = true;
    if (nd->pipe->n_vars == 0)
        ok = v ? gt_print_action(&e->out, v) : gt_buf_str(&e->out, "<no value>");
    json_decref(v);
    return ok ? 0 : out_fail(e, nd->line);
}

static int walk_if_with(struct ex *e, const struct gt_node *nd, json_t *dot)
{
    int mark = e->n_vars;
    json_t *v = NULL;
    int r = eval_pipe_decl(e, nd->pipe, dot, &v);
    if (r == 0) {
        if (gt_truth(e->prov, v)) r = walk(e, &nd->body, nd->kind == GN_WITH ? v : dot);
        else r = walk(e, &nd->else_body, dot);
    }
    json_decref(v);
    var_pop(e, mark);
    return r;
}

/* One iteration of range: sets the variables, walks the body. */
static int range_step(struct ex *e, const struct gt_node *nd, json_t *key, json_t *elem)
{
    if (++e->iters > e->max_iters) {
        json_decref(key);
        return fail(e, WK_E_RANGE, nd->line, "more than %lld range iterations", e->max_iters);
    }
    int mark = e->n_vars;
    const struct gt_pipe *pp = nd->pipe;
    int r = 0;
    if (pp->n_vars == 1) r = var_push(e, pp->vars[0], ref(elem), nd->line);
    if (pp->n_vars == 2 && (r = var_push(e, pp->vars[0], key, nd->line)) == 0)
        r = var_push(e, pp->vars[1], ref(elem), nd->line);
    else if (pp->n_vars != 2)
        json_decref(key);
    if (r == 0) r = walk(e, &nd->body, json_is_null(elem) ? NULL : elem);
    var_pop(e, mark);
    return r;
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int range_object(struct ex *e, const struct gt_node *nd, json_t *v)
{
    size_t n = json_object_size(v), k = 0;
    const char **keys = wk_malloc((n ? n : 1) * sizeof *keys);
    if (!keys) return fail(e, WK_E_NOMEM, nd->line, "out of memory");
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) keys[k++] = key;
    qsort(keys, n, sizeof *keys, cmp_keys);
    int r = 0;
    for (size_t i = 0; i < n && r >= 0; i++) {
        json_t *ks = json_string_nocheck(keys[i]);
        if (!ks) {
            r = fail(e, WK_E_NOMEM, nd->line, "out of memory");
            break;
        }
        r = range_step(e, nd, ks, json_object_get(v, keys[i]));
        if (r == FLOW_BREAK) break;
        if (r == FLOW_CONTINUE) r = 0;
    }
    wk_free(keys);
    return r < 0 ? -1 : 0;
}

static int walk_range(struct ex *e, const struct gt_node *nd, json_t *dot)
{
    int mark = e->n_vars;
    json_t *v = NULL;
    int r = eval_pipe(e, nd->pipe, dot, &v);
    if (r < 0) return -1;
    const struct gt_type *ty = gt_prov_type(e->prov, v, NULL);
    if (v && ((!json_is_array(v) && !json_is_object(v)) || (ty && ty->kind == GT_STRUCT))) {
        char shown[320];
        struct gt_buf b = {.max = 300, .prov = e->prov};
        gt_print_value(&b, v);
        snprintf(shown, sizeof shown, "%.*s%s", (int)b.n, b.p ? b.p : "", b.st ? "..." : "");
        gt_buf_free(&b);
        json_decref(v);
        return fail(e, WK_E_INVALID, nd->line, "range can't iterate over %s", shown);
    }
    size_t n = json_is_array(v) ? json_array_size(v) : json_is_object(v) ? json_object_size(v) : 0;
    if (n == 0) {
        r = walk(e, &nd->else_body, dot);
    } else if (json_is_object(v)) {
        r = range_object(e, nd, v);
    } else {
        for (size_t i = 0; i < n && r >= 0; i++) {
            json_t *idx = json_integer((json_int_t)i);
            if (!idx) {
                r = fail(e, WK_E_NOMEM, nd->line, "out of memory");
                break;
            }
            r = range_step(e, nd, idx, json_array_get(v, i));
            if (r == FLOW_BREAK) break;
            if (r == FLOW_CONTINUE) r = 0;
        }
        if (r > 0) r = 0;
    }
    json_decref(v);
    var_pop(e, mark);
    return r;
}

static int walk(struct ex *e, const struct gt_list *l, json_t *dot)
{
    for (int i = 0; i < l->n; i++) {
        const struct gt_node *nd = l->nodes[i];
        int r = 0;
        if (nd->ord > e->cut_ord) break; /* cut (a later node's ord is greater still) */
        switch (nd->kind) {
        case GN_TEXT:
            if (!gt_buf_add(&e->out, nd->text, nd->len)) r = out_fail(e, nd->line);
            break;
        case GN_ACTION: r = walk_action(e, nd, dot); break;
        case GN_IF:
        case GN_WITH: r = walk_if_with(e, nd, dot); break;
        case GN_RANGE: r = walk_range(e, nd, dot); break;
        case GN_BREAK: return FLOW_BREAK;
        case GN_CONTINUE: return FLOW_CONTINUE;
        }
        if (r != 0) return r;
    }
    return 0;
}

enum wk_status gt_render(const struct wk_gotmpl *t, const json_t *data, const struct gt_render_opts *opts,
                         char **out, size_t *out_len, struct wk_gotmpl_run **runs, size_t *n_runs,
                         struct wk_error *err)
{
    *out = NULL;
    if (out_len) *out_len = 0;
    if (runs) *runs = NULL, *n_runs = 0;
    wk_error_clear(err);
    const struct wk_gotmpl_limits *lim = opts ? opts->lim : NULL;
    struct ex e = {.err = err, .cut_ord = INT_MAX};
    if (opts && opts->cut_after_response && t->response_ord >= 0) e.cut_ord = t->response_ord;
    e.out.max = lim && lim->max_output ? lim->max_output : WK_GOTMPL_MAX_OUTPUT;
    e.max_iters = lim && lim->max_iterations ? lim->max_iterations : WK_GOTMPL_MAX_ITERATIONS;
    if (runs && !(e.prov = gt_prov_new(data))) fail(&e, WK_E_NOMEM, 0, "out of memory");
    for (size_t i = 0; e.prov && opts && i < opts->n_typed; i++)
        if (!gt_prov_set_type(e.prov, opts->typed[i].v, opts->typed[i].type, opts->typed[i].nil, false))
            fail(&e, WK_E_NOMEM, 0, "out of memory");
    e.out.prov = e.prov;
    json_t *root = e.st == WK_OK ? ref((json_t *)data) : NULL;
    if (e.st == WK_OK && var_push(&e, "$", root, 1) == 0) walk(&e, &t->root, root);
    var_pop(&e, 0);
    wk_free(e.vars);
    if (e.st == WK_OK && !gt_buf_char(&e.out, 0)) out_fail(&e, 0);
    if (e.st == WK_OK && runs && gt_buf_runs(&e.out, e.out.n - 1, runs, n_runs) != WK_OK)
        fail(&e, WK_E_NOMEM, 0, "out of memory");
    gt_prov_free(e.prov);
    wk_free(e.out.spans);
    if (e.st != WK_OK) {
        wk_free(e.out.p);
        return e.st;
    }
    *out = e.out.p;
    if (out_len) *out_len = e.out.n - 1;
    return WK_OK;
}

enum wk_status wk_gotmpl_render_ex(const struct wk_gotmpl *t, const json_t *data,
                                   const struct wk_gotmpl_limits *lim, char **out,
                                   size_t *out_len, struct wk_error *err)
{
    struct gt_render_opts o = {.lim = lim};
    return gt_render(t, data, &o, out, out_len, NULL, NULL, err);
}

enum wk_status wk_gotmpl_render_runs(const struct wk_gotmpl *t, const json_t *data, char **out,
                                     size_t *out_len, struct wk_gotmpl_run **runs, size_t *n_runs,
                                     struct wk_error *err)
{
    return gt_render(t, data, NULL, out, out_len, runs, n_runs, err);
}

enum wk_status wk_gotmpl_render(const struct wk_gotmpl *t, const json_t *data, char **out,
                                size_t *out_len, struct wk_error *err)
{
    return wk_gotmpl_render_ex(t, data, NULL, out, out_len, err);
}
