/*
 * jinja_parse.c - the Jinja parser: tokens into a syntax tree, with
 * jinja2's expression grammar (lowest to highest: inline if, or, and,
 * not, comparisons, + -, ~, * / // %, **, unary - +, primaries with
 * attribute, item, slice and call postfixes, then filters and tests) and
 * the statements chat templates use: if, for, set (and block set), macro,
 * call, filter, break, continue, generation, raw.
 */
#include "jinja_int.h"

#include <string.h>

#define MAX_NEST 256

struct parser {
    const struct jtokens *t;
    size_t i;
    int depth;
    struct wk_error *err;
    enum wk_status st;
};

static const struct jtoken *peek(struct parser *P) { return &P->t->v[P->i]; }
static const struct jtoken *next(struct parser *P)
{
    const struct jtoken *t = &P->t->v[P->i];
    if (t->type != JT_EOF) P->i++;
    return t;
}

static bool is_op(const struct jtoken *t, const char *op)
{
    return t->type == JT_OP && t->len == strlen(op) && memcmp(t->s, op, t->len) == 0;
}
static bool is_name(const struct jtoken *t, const char *name)
{
    return t->type == JT_NAME && t->len == strlen(name) && memcmp(t->s, name, t->len) == 0;
}

static void *fail(struct parser *P, const char *what)
{
    if (!P->st) {
        const struct jtoken *t = peek(P);
        P->st = wk_error_set(P->err, WK_E_FORMAT, "line %d: %s (at '%.*s')", t->line, what,
                             t->type == JT_EOF ? 3 : (int)(t->len > 40 ? 40 : t->len),
                             t->type == JT_EOF ? "end" : t->type == JT_BLOCK_END ? "%}" : t->type == JT_VAR_END ? "}}" : t->s ? t->s : "");
    }
    return NULL;
}

static struct jnode_s *mk(struct parser *P, enum jnode kind, int line)
{
    struct jnode_s *n = wk_calloc(1, sizeof *n);
    if (!n && !P->st) P->st = wk_error_set(P->err, WK_E_NOMEM, "out of memory parsing a template");
    if (n) n->kind = kind, n->line = line;
    return n;
}

static bool vec_push(struct parser *P, struct jnode_vec *v, struct jnode_s *n)
{
    if (!n) return false;
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        struct jnode_s **p = wk_realloc(v->v, cap * sizeof *p);
        if (!p) {
            jinja_node_free(n);
            if (!P->st) P->st = wk_error_set(P->err, WK_E_NOMEM, "out of memory parsing a template");
            return false;
        }
        v->v = p, v->cap = cap;
    }
    v->v[v->n++] = n;
    return true;
}

static char *dup_n(struct parser *P, const char *s, size_t n)
{
    char *d = wk_malloc(n + 1);
    if (!d) { if (!P->st) P->st = wk_error_set(P->err, WK_E_NOMEM, "out of memory"); return NULL; }
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static void vec_free(struct jnode_vec *v)
{
    for (size_t i = 0; i < v->n; i++) jinja_node_free(v->v[i]);
    wk_free(v->v);
}

void jinja_node_free(struct jnode_s *n)
{
    if (!n) return;
    wk_free(n->str);
    if (n->lit) json_decref(n->lit);
    jinja_node_free(n->a), jinja_node_free(n->b), jinja_node_free(n->c), jinja_node_free(n->d);
    vec_free(&n->args), vec_free(&n->kwargs), vec_free(&n->body), vec_free(&n->orelse);
    wk_free(n);
}

static struct jnode_s *expr(struct parser *P);
static struct jnode_s *unary(struct parser *P, bool with_filter);
static struct jnode_s *or_expr(struct parser *P);

static bool expect_op(struct parser *P, const char *op)
{
    if (!is_op(peek(P), op)) { fail(P, op[0] == ')' ? "expected ')'" : op[0] == ']' ? "expected ']'" : op[0] == '}' ? "expected '}'" : op[0] == ':' ? "expected ':'" : op[0] == '=' ? "expected '='" : "expected an operator"); return false; }
    next(P);
    return true;
}

/* Call arguments after "(": positional into n->args, name=value into n->kwargs. */
static bool call_args(struct parser *P, struct jnode_s *n)
{
    while (!is_op(peek(P), ")")) {
        if (n->args.n + n->kwargs.n && !expect_op(P, ",")) return false;
        if (is_op(peek(P), ")")) break;
        const struct jtoken *t = peek(P);
        if (t->type == JT_NAME && is_op(&P->t->v[P->i + 1], "=")) {
            next(P), next(P);
            struct jnode_s *kw = mk(P, JE_KWARG, t->line);
            if (!kw) return false;
            kw->str = dup_n(P, t->s, t->len);
            kw->a = expr(P);
            if (!vec_push(P, &n->kwargs, kw) || !kw->a || !kw->str) return false;
        } else if (!vec_push(P, &n->args, expr(P))) {
            return false;
        }
    }
    next(P);
    return true;
}

static struct jnode_s *literal(struct parser *P, json_t *j, int line)
{
    struct jnode_s *n = mk(P, JE_LIT, line);
    if (!n || !j) { if (j) json_decref(j); jinja_node_free(n); return n && !j ? fail(P, "out of memory") : NULL; }
    n->lit = j;
    return n;
}

/* "[...]", "{...}" or "(...)" after its opener. */
static struct jnode_s *collection(struct parser *P, char open, int line)
{
    struct jnode_s *n = mk(P, open == '[' ? JE_LIST : open == '{' ? JE_DICT : JE_TUPLE, line);
    if (!n) return NULL;
    const char *close = open == '[' ? "]" : open == '{' ? "}" : ")";
    bool comma = false;
    while (!is_op(peek(P), close)) {
        if (n->args.n && !expect_op(P, ",")) goto bad;
        if (is_op(peek(P), close)) { comma = true; break; }
        if (!vec_push(P, &n->args, expr(P))) goto bad;
        if (open == '{') {
            if (!expect_op(P, ":") || !vec_push(P, &n->kwargs, expr(P))) goto bad;
        } else if (open == '(' && n->args.n == 1 && !is_op(peek(P), ",")) {
            break;
        }
    }
    if (!expect_op(P, close)) goto bad;
    (void)comma;
    return n;
bad:
    jinja_node_free(n);
    return NULL;
}

static struct jnode_s *primary(struct parser *P)
{
    const struct jtoken *t = next(P);
    switch (t->type) {
    case JT_NAME:
        if (is_name(t, "true") || is_name(t, "True")) return literal(P, json_true(), t->line);
        if (is_name(t, "false") || is_name(t, "False")) return literal(P, json_false(), t->line);
        if (is_name(t, "none") || is_name(t, "None")) return literal(P, json_null(), t->line);
        {
            struct jnode_s *n = mk(P, JE_NAME, t->line);
            if (n && !(n->str = dup_n(P, t->s, t->len))) { jinja_node_free(n); return NULL; }
            return n;
        }
    case JT_STRING: {
        size_t total = t->len, i = P->i;
        while (P->t->v[i].type == JT_STRING) total += P->t->v[i++].len;
        char *buf = wk_malloc(total + 1);
        if (!buf) return fail(P, "out of memory");
        memcpy(buf, t->s, t->len);
        size_t k = t->len;
        while (peek(P)->type == JT_STRING) { memcpy(buf + k, peek(P)->s, peek(P)->len); k += peek(P)->len; next(P); }
        json_t *j = json_stringn_nocheck(buf, k);
        wk_free(buf);
        return literal(P, j, t->line);
    }
    case JT_INT: return literal(P, json_integer(t->ival), t->line);
    case JT_FLOAT: return literal(P, json_real(t->fval), t->line);
    case JT_OP:
        if (is_op(t, "(")) {
            struct jnode_s *n = collection(P, '(', t->line);
            if (n && n->args.n == 1 && !is_op(&P->t->v[P->i - 2], ",")) {
                struct jnode_s *inner = n->args.v[0];
                n->args.n = 0;
                jinja_node_free(n);
                return inner;
            }
            return n;
        }
        if (is_op(t, "[")) return collection(P, '[', t->line);
        if (is_op(t, "{")) return collection(P, '{', t->line);
        /* fallthrough */
    default:
        P->i--;
        return fail(P, "unexpected token");
    }
}

static struct jnode_s *subscript(struct parser *P, struct jnode_s *obj, int line)
{
    struct jnode_s *parts[3] = {NULL, NULL, NULL};
    int k = 0;
    bool slice = false;
    for (;;) {
        if (is_op(peek(P), ":")) { slice = true; next(P); if (++k > 2) break; continue; }
        if (is_op(peek(P), "]")) break;
        if (parts[k]) { fail(P, "expected ']'"); break; }
        if (!(parts[k] = expr(P))) break;
    }
    struct jnode_s *n = NULL;
    if (!P->st && expect_op(P, "]")) n = mk(P, slice ? JE_SLICE : JE_ITEM, line);
    if (!n) {
        for (int i = 0; i < 3; i++) jinja_node_free(parts[i]);
        jinja_node_free(obj);
        return NULL;
    }
    n->a = obj;
    if (slice) n->b = parts[0], n->c = parts[1], n->d = parts[2];
    else n->b = parts[0];
    if (!slice && !n->b) { jinja_node_free(n); return fail(P, "empty subscript"); }
    return n;
}

static struct jnode_s *postfix(struct parser *P, struct jnode_s *n)
{
    while (n) {
        const struct jtoken *t = peek(P);
        if (is_op(t, ".")) {
            next(P);
            const struct jtoken *a = next(P);
            if (a->type != JT_NAME && a->type != JT_INT) { jinja_node_free(n); return fail(P, "expected an attribute name"); }
            struct jnode_s *m = mk(P, a->type == JT_NAME ? JE_ATTR : JE_ITEM, a->line);
            if (!m) { jinja_node_free(n); return NULL; }
            m->a = n;
            if (a->type == JT_NAME) m->str = dup_n(P, a->s, a->len);
            else m->b = literal(P, json_integer(a->ival), a->line);
            n = m;
            if (P->st) { jinja_node_free(n); return NULL; }
        } else if (is_op(t, "[")) {
            next(P);
            n = subscript(P, n, t->line);
        } else if (is_op(t, "(")) {
            next(P);
            struct jnode_s *m = mk(P, JE_CALL, t->line);
            if (!m) { jinja_node_free(n); return NULL; }
            m->a = n;
            n = m;
            if (!call_args(P, n)) { jinja_node_free(n); return NULL; }
        } else {
            break;
        }
    }
    return n;
}

/* "|name(args)" and "is [not] name args" chains after n. */
static struct jnode_s *filters(struct parser *P, struct jnode_s *n)
{
    while (n) {
        const struct jtoken *t = peek(P);
        bool is_filter = is_op(t, "|"), is_test = is_name(t, "is");
        if (!is_filter && !is_test) break;
        next(P);
        struct jnode_s *m = mk(P, is_filter ? JE_FILTER : JE_TEST, t->line);
        if (!m) { jinja_node_free(n); return NULL; }
        m->a = n;
        n = m;
        if (is_test && is_name(peek(P), "not")) { next(P); m->negate = true; }
        const struct jtoken *name = next(P);
        if (name->type != JT_NAME) { jinja_node_free(n); return fail(P, "expected a filter or test name"); }
        size_t nl = name->len;
        m->str = dup_n(P, name->s, nl);
        if (!m->str) { jinja_node_free(n); return NULL; }
        if (is_op(peek(P), "(")) {
            next(P);
            if (!call_args(P, m)) { jinja_node_free(n); return NULL; }
        } else if (is_test) {
            const struct jtoken *a = peek(P);
            bool arg = a->type == JT_STRING || a->type == JT_INT || a->type == JT_FLOAT ||
                       is_op(a, "[") || is_op(a, "{") || is_op(a, "-") ||
                       (a->type == JT_NAME && !is_name(a, "else") && !is_name(a, "or") && !is_name(a, "and") &&
                        !is_name(a, "if") && !is_name(a, "in") && !is_name(a, "not") && !is_name(a, "is"));
            if (arg && !vec_push(P, &m->args, primary(P))) { jinja_node_free(n); return NULL; }
            if (arg) m->args.v[m->args.n - 1] = postfix(P, m->args.v[m->args.n - 1]);
            if (arg && !m->args.v[m->args.n - 1]) { m->args.n--; jinja_node_free(n); return NULL; }
        }
    }
    return n;
}

static struct jnode_s *unary(struct parser *P, bool with_filter)
{
    const struct jtoken *t = peek(P);
    struct jnode_s *n;
    if (++P->depth > MAX_NEST) { P->depth--; if (!P->st) P->st = wk_error_set(P->err, WK_E_RANGE, "line %d: expression nested too deeply", t->line); return NULL; }
    if (is_op(t, "-") || is_op(t, "+")) {
        next(P);
        n = mk(P, is_op(t, "-") ? JE_NEG : JE_POS, t->line);
        if (n && !(n->a = unary(P, false))) { jinja_node_free(n); n = NULL; }
    } else {
        n = primary(P);
    }
    n = postfix(P, n);
    if (with_filter) n = filters(P, n);
    P->depth--;
    return n;
}

static struct jnode_s *binary(struct parser *P, enum jnode kind, int op, struct jnode_s *a, struct jnode_s *b, int line)
{
    if (!a || !b) { jinja_node_free(a); jinja_node_free(b); return NULL; }
    struct jnode_s *n = mk(P, kind, line);
    if (!n) { jinja_node_free(a); jinja_node_free(b); return NULL; }
    n->op = op, n->a = a, n->b = b;
    return n;
}

static struct jnode_s *pow_expr(struct parser *P)
{
    struct jnode_s *n = unary(P, true);
    while (n && is_op(peek(P), "**")) { int l = next(P)->line; n = binary(P, JE_BIN, 'P', n, unary(P, true), l); }
    return n;
}

static struct jnode_s *mul_expr(struct parser *P)
{
    struct jnode_s *n = pow_expr(P);
    for (;;) {
        const struct jtoken *t = peek(P);
        int op = is_op(t, "*") ? '*' : is_op(t, "/") ? '/' : is_op(t, "//") ? 'F' : is_op(t, "%") ? '%' : 0;
        if (!n || !op) return n;
        next(P);
        n = binary(P, JE_BIN, op, n, pow_expr(P), t->line);
    }
}

static struct jnode_s *concat_expr(struct parser *P)
{
    struct jnode_s *n = mul_expr(P);
    while (n && is_op(peek(P), "~")) { int l = next(P)->line; n = binary(P, JE_BIN, '~', n, mul_expr(P), l); }
    return n;
}

static struct jnode_s *add_expr(struct parser *P)
{
    struct jnode_s *n = concat_expr(P);
    for (;;) {
        const struct jtoken *t = peek(P);
        int op = is_op(t, "+") ? '+' : is_op(t, "-") ? '-' : 0;
        if (!n || !op) return n;
        next(P);
        n = binary(P, JE_BIN, op, n, concat_expr(P), t->line);
    }
}

static int cmp_op(struct parser *P)
{
    const struct jtoken *t = peek(P);
    if (is_op(t, "==")) return JC_EQ;
    if (is_op(t, "!=")) return JC_NE;
    if (is_op(t, "<")) return JC_LT;
    if (is_op(t, "<=")) return JC_LE;
    if (is_op(t, ">")) return JC_GT;
    if (is_op(t, ">=")) return JC_GE;
    if (is_name(t, "in")) return JC_IN;
    if (is_name(t, "not") && is_name(&P->t->v[P->i + 1], "in")) return JC_NOTIN;
    return -1;
}

static struct jnode_s *compare(struct parser *P)
{
    struct jnode_s *n = add_expr(P);
    int op;
    while (n && (op = cmp_op(P)) >= 0) {
        int line = next(P)->line;
        if (op == JC_NOTIN) next(P);
        n = binary(P, JE_CMP, op, n, add_expr(P), line);
    }
    return n;
}

static struct jnode_s *not_expr(struct parser *P)
{
    const struct jtoken *t = peek(P);
    if (is_name(t, "not")) {
        next(P);
        if (++P->depth > MAX_NEST) { P->depth--; if (!P->st) P->st = wk_error_set(P->err, WK_E_RANGE, "line %d: expression nested too deeply", t->line); return NULL; }
        struct jnode_s *n = mk(P, JE_NOT, t->line);
        if (n && !(n->a = not_expr(P))) { jinja_node_free(n); n = NULL; }
        P->depth--;
        return n;
    }
    return compare(P);
}

static struct jnode_s *and_expr(struct parser *P)
{
    struct jnode_s *n = not_expr(P);
    while (n && is_name(peek(P), "and")) { int l = next(P)->line; n = binary(P, JE_AND, 0, n, not_expr(P), l); }
    return n;
}

static struct jnode_s *or_expr(struct parser *P)
{
    struct jnode_s *n = and_expr(P);
    while (n && is_name(peek(P), "or")) { int l = next(P)->line; n = binary(P, JE_OR, 0, n, and_expr(P), l); }
    return n;
}

static struct jnode_s *expr(struct parser *P)
{
    struct jnode_s *n = or_expr(P);
    while (n && is_name(peek(P), "if")) {
        int line = next(P)->line;
        struct jnode_s *c = mk(P, JE_COND, line);
        if (!c) { jinja_node_free(n); return NULL; }
        c->b = n;
        n = c;
        if (!(c->a = or_expr(P))) { jinja_node_free(n); return NULL; }
        if (is_name(peek(P), "else")) {
            next(P);
            if (!(c->c = expr(P))) { jinja_node_free(n); return NULL; }
        }
    }
    return n;
}

/* An expression or a bare tuple "a, b" (for targets and set values). */
static struct jnode_s *tuple_expr(struct parser *P, bool names_only)
{
    int line = peek(P)->line;
    struct jnode_s *first = names_only ? primary(P) : expr(P);
    if (!first || !is_op(peek(P), ",")) return first;
    struct jnode_s *t = mk(P, JE_TUPLE, line);
    if (!vec_push(P, &t->args, first)) { jinja_node_free(t); return NULL; }
    while (is_op(peek(P), ",")) {
        next(P);
        if (!vec_push(P, &t->args, names_only ? primary(P) : expr(P))) { jinja_node_free(t); return NULL; }
    }
    return t;
}

/* ---- statements ---- */

static struct jnode_s *filter_chain(struct parser *P);

static bool end_block(struct parser *P)
{
    if (peek(P)->type != JT_BLOCK_END) { fail(P, "expected '%}'"); return false; }
    next(P);
    return true;
}

/* Parses statements into body until a block tag whose name is one of
 * ends (NULL-terminated); leaves the parser on that name token. */
static bool body_until(struct parser *P, struct jnode_vec *body, const char *const *ends);

static bool at_end_name(struct parser *P, const char *const *ends)
{
    if (peek(P)->type != JT_BLOCK_BEGIN) return false;
    const struct jtoken *t = &P->t->v[P->i + 1];
    for (int i = 0; ends && ends[i]; i++)
        if (is_name(t, ends[i])) return true;
    return false;
}

static struct jnode_s *stmt_if(struct parser *P, int line)
{
    struct jnode_s *n = mk(P, JN_IF, line);
    if (!n || !(n->a = expr(P)) || !end_block(P)) goto bad;
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    if (!body_until(P, &n->body, ends)) goto bad;
    next(P);
    const struct jtoken *t = next(P);
    if (is_name(t, "elif")) {
        if (!vec_push(P, &n->orelse, stmt_if(P, t->line))) goto bad;
        return n;
    }
    if (is_name(t, "else")) {
        static const char *const ends2[] = {"endif", NULL};
        if (!end_block(P) || !body_until(P, &n->orelse, ends2)) goto bad;
        next(P), next(P);
    }
    if (!end_block(P)) goto bad;
    return n;
bad:
    jinja_node_free(n);
    return NULL;
}

static struct jnode_s *stmt_for(struct parser *P, int line)
{
    struct jnode_s *n = mk(P, JN_FOR, line);
    if (!n || !(n->a = tuple_expr(P, true))) goto bad;
    if (!is_name(peek(P), "in")) { fail(P, "expected 'in'"); goto bad; }
    next(P);
    /* the iterable: no inline if (it would be the loop filter) */
    if (!(n->b = or_expr(P))) goto bad;
    if (is_name(peek(P), "if")) { next(P); if (!(n->c = expr(P))) goto bad; }
    if (is_name(peek(P), "recursive")) { fail(P, "recursive loops are not supported"); goto bad; }
    if (!end_block(P)) goto bad;
    static const char *const ends[] = {"else", "endfor", NULL};
    if (!body_until(P, &n->body, ends)) goto bad;
    next(P);
    if (is_name(next(P), "else")) {
        static const char *const ends2[] = {"endfor", NULL};
        if (!end_block(P) || !body_until(P, &n->orelse, ends2)) goto bad;
        next(P), next(P);
    }
    if (!end_block(P)) goto bad;
    return n;
bad:
    jinja_node_free(n);
    return NULL;
}

static struct jnode_s *stmt_set(struct parser *P, int line)
{
    struct jnode_s *n = mk(P, JN_SET, line);
    if (!n) return NULL;
    const struct jtoken *t = peek(P);
    if (t->type != JT_NAME) { fail(P, "expected a name after set"); goto bad; }
    if (is_op(&P->t->v[P->i + 1], ".")) {
        next(P), next(P);
        const struct jtoken *a = next(P);
        if (a->type != JT_NAME) { fail(P, "expected an attribute name"); goto bad; }
        n->a = mk(P, JE_ATTR, line);
        if (!n->a) goto bad;
        n->a->str = dup_n(P, a->s, a->len);
        n->a->a = mk(P, JE_NAME, line);
        if (!n->a->a || !(n->a->a->str = dup_n(P, t->s, t->len))) goto bad;
    } else if (!(n->a = tuple_expr(P, true))) {
        goto bad;
    }
    if (is_op(peek(P), "=")) {
        next(P);
        if (!(n->b = tuple_expr(P, false)) || !end_block(P)) goto bad;
        return n;
    }
    n->kind = JN_SETBLOCK;
    if (is_op(peek(P), "|")) {
        next(P);
        if (!(n->d = filter_chain(P))) goto bad;
    }
    if (!end_block(P)) goto bad;
    static const char *const ends[] = {"endset", NULL};
    if (!body_until(P, &n->body, ends)) goto bad;
    next(P), next(P);
    if (!end_block(P)) goto bad;
    return n;
bad:
    jinja_node_free(n);
    return NULL;
}

/* Macro parameters "(a, b=default)" into n->args (JE_NAME with a = default). */
static bool params(struct parser *P, struct jnode_s *n)
{
    if (!expect_op(P, "(")) return false;
    while (!is_op(peek(P), ")")) {
        if (n->args.n && !expect_op(P, ",")) return false;
        const struct jtoken *t = next(P);
        if (t->type != JT_NAME) { P->i--; fail(P, "expected a parameter name"); return false; }
        struct jnode_s *p = mk(P, JE_NAME, t->line);
        if (!vec_push(P, &n->args, p) || !(p->str = dup_n(P, t->s, t->len))) return false;
        if (is_op(peek(P), "=")) { next(P); if (!(p->a = expr(P))) return false; }
    }
    next(P);
    return true;
}

static struct jnode_s *stmt_macro(struct parser *P, int line)
{
    struct jnode_s *n = mk(P, JN_MACRO, line);
    const struct jtoken *t = next(P);
    if (!n) return NULL;
    if (t->type != JT_NAME) { P->i--; fail(P, "expected a macro name"); goto bad; }
    if (!(n->str = dup_n(P, t->s, t->len)) || !params(P, n) || !end_block(P)) goto bad;
    static const char *const ends[] = {"endmacro", NULL};
    if (!body_until(P, &n->body, ends)) goto bad;
    next(P), next(P);
    if (peek(P)->type == JT_NAME) next(P);
    if (!end_block(P)) goto bad;
    return n;
bad:
    jinja_node_free(n);
    return NULL;
}

static struct jnode_s *stmt_call(struct parser *P, int line)
{
    struct jnode_s *n = mk(P, JN_CALLBLOCK, line);
    if (!n) return NULL;
    if (is_op(peek(P), "(") && !params(P, n)) goto bad;
    if (!(n->a = expr(P)) || n->a->kind != JE_CALL) { fail(P, "expected a call"); goto bad; }
    if (!end_block(P)) goto bad;
    static const char *const ends[] = {"endcall", NULL};
    if (!body_until(P, &n->body, ends)) goto bad;
    next(P), next(P);
    if (!end_block(P)) goto bad;
    return n;
bad:
    jinja_node_free(n);
    return NULL;
}

/* "name(args) | name ..." with no operand (the innermost filter's a is
 * NULL: the evaluator feeds it the rendered body). */
static struct jnode_s *filter_chain(struct parser *P)
{
    struct jnode_s *chain = NULL;
    bool first = true;
    while (first || is_op(peek(P), "|")) {
        if (!first) next(P);
        first = false;
        const struct jtoken *t = next(P);
        if (t->type != JT_NAME) { P->i--; fail(P, "expected a filter name"); break; }
        struct jnode_s *f = mk(P, JE_FILTER, t->line);
        if (!f) break;
        f->a = chain;
        chain = f;
        if (!(f->str = dup_n(P, t->s, t->len))) break;
        if (is_op(peek(P), "(")) { next(P); if (!call_args(P, f)) break; }
    }
    if (P->st) { jinja_node_free(chain); return NULL; }
    return chain;
}

/* "{% filter name(args) | ... %}" and generation-style plain bodies. */
static struct jnode_s *stmt_wrapped(struct parser *P, int line, enum jnode kind, const char *end)
{
    struct jnode_s *n = mk(P, kind, line);
    if (!n) return NULL;
    if (kind == JN_FILTERBLOCK && !(n->a = filter_chain(P))) goto bad;
    if (!end_block(P)) goto bad;
    const char *const ends[] = {end, NULL};
    if (!body_until(P, &n->body, ends)) goto bad;
    next(P), next(P);
    if (!end_block(P)) goto bad;
    return n;
bad:
    jinja_node_free(n);
    return NULL;
}

static struct jnode_s *statement(struct parser *P)
{
    const struct jtoken *t = next(P);
    int line = t->line;
    if (t->type != JT_NAME) { P->i--; return fail(P, "expected a statement name"); }
    if (++P->depth > MAX_NEST) { P->depth--; if (!P->st) P->st = wk_error_set(P->err, WK_E_RANGE, "line %d: blocks nested too deeply", line); return NULL; }
    struct jnode_s *n = NULL;
    if (is_name(t, "if")) n = stmt_if(P, line);
    else if (is_name(t, "for")) n = stmt_for(P, line);
    else if (is_name(t, "set")) n = stmt_set(P, line);
    else if (is_name(t, "macro")) n = stmt_macro(P, line);
    else if (is_name(t, "call")) n = stmt_call(P, line);
    else if (is_name(t, "filter")) n = stmt_wrapped(P, line, JN_FILTERBLOCK, "endfilter");
    else if (is_name(t, "generation")) n = stmt_wrapped(P, line, JN_BODY, "endgeneration");
    else if (is_name(t, "break") || is_name(t, "continue")) {
        n = mk(P, is_name(t, "break") ? JN_BREAK : JN_CONTINUE, line);
        if (n && !end_block(P)) { jinja_node_free(n); n = NULL; }
    } else {
        P->i--;
        fail(P, "unknown statement");
    }
    P->depth--;
    return n;
}

static bool body_until(struct parser *P, struct jnode_vec *body, const char *const *ends)
{
    for (;;) {
        if (P->st) return false;
        const struct jtoken *t = peek(P);
        if (t->type == JT_EOF) {
            if (!ends) return true;
            fail(P, "unexpected end of template: a block is not closed");
            return false;
        }
        if (at_end_name(P, ends)) return true;
        next(P);
        if (t->type == JT_DATA) {
            struct jnode_s *n = mk(P, JN_TEXT, t->line);
            if (!vec_push(P, body, n) || !(n->str = dup_n(P, t->s, t->len))) return false;
            n->len = t->len;
        } else if (t->type == JT_VAR_BEGIN) {
            struct jnode_s *n = mk(P, JN_OUT, t->line);
            if (!vec_push(P, body, n) || !(n->a = expr(P))) return false;
            if (peek(P)->type != JT_VAR_END) { fail(P, "expected '}}'"); return false; }
            next(P);
        } else if (t->type == JT_BLOCK_BEGIN) {
            if (!vec_push(P, body, statement(P))) { if (!P->st) fail(P, "bad statement"); return false; }
        } else {
            P->i--;
            fail(P, "unexpected token");
            return false;
        }
    }
}

enum wk_status jinja_parse_tokens(const struct jtokens *toks, struct jnode_s **root, struct wk_error *err)
{
    struct parser P = {.t = toks, .err = err};
    *root = mk(&P, JN_BODY, 1);
    if (!*root) return WK_E_NOMEM;
    if (!body_until(&P, &(*root)->body, NULL)) {
        jinja_node_free(*root);
        *root = NULL;
        return P.st ? P.st : wk_error_set(err, WK_E_FORMAT, "syntax error");
    }
    return WK_OK;
}
