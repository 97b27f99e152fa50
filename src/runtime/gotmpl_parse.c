/*
 * gotmpl_parse.c - the lexer and parser of the Go text/template engine:
 * template text into the tree of gotmpl_int.h, with Go's trimming
 * ({{- and -}} each followed / preceded by a space), comments, the
 * scoping of variables and the check that functions exist.
 */
#include "gotmpl_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum tok_type {
    T_EOF, T_RDELIM, T_IDENT, T_FIELD, T_VAR, T_DOT, T_STRING, T_RAW, T_CHAR, T_NUMBER,
    T_LPAREN, T_RPAREN, T_PIPE, T_DECLARE, T_ASSIGN, T_COMMA
};

struct tok {
    enum tok_type type;
    const char *p;
    size_t len;
    int line;
    bool space; /* whitespace came before it */
    bool trim;  /* T_RDELIM: -}} */
};

struct ps {
    const char *s;
    size_t n, pos;
    int line;
    struct tok peeked;
    bool have_peek;
    struct wk_error *err;
    enum wk_status st;
    char **vars; /* the variables in scope (borrowed names) */
    int n_vars, cap_vars;
    int depth, range_depth;
    bool trim_next;
};

enum end_kw { END_EOF, END_END, END_ELSE };

static bool fail(struct ps *p, enum wk_status st, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool fail(struct ps *p, enum wk_status st, int line, const char *fmt, ...)
{
    if (p->st != WK_OK) return false;
    char msg[WK_ERROR_MSG_MAX - 32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->st = wk_error_set(p->err, st, "template line %d: %s", line, msg);
    return false;
}

static bool nomem(struct ps *p)
{
    return fail(p, WK_E_NOMEM, p->line, "out of memory");
}

/* ------------------------------------------------------------------ free */

static void free_pipe(struct gt_pipe *pp);

static void free_arg(struct gt_arg *a)
{
    wk_free(a->str);
    for (int i = 0; i < a->n_fields; i++) wk_free(a->fields[i]);
    wk_free(a->fields);
    free_pipe(a->pipe);
}

static void free_pipe(struct gt_pipe *pp)
{
    if (!pp) return;
    for (int c = 0; c < pp->n_cmds; c++) {
        for (int i = 0; i < pp->cmds[c].n_args; i++) free_arg(&pp->cmds[c].args[i]);
        wk_free(pp->cmds[c].args);
    }
    wk_free(pp->cmds);
    for (int i = 0; i < pp->n_vars; i++) wk_free(pp->vars[i]);
    wk_free(pp);
}

void gt_list_free(struct gt_list *l)
{
    for (int i = 0; i < l->n; i++) {
        struct gt_node *nd = l->nodes[i];
        wk_free(nd->text);
        free_pipe(nd->pipe);
        gt_list_free(&nd->body);
        gt_list_free(&nd->else_body);
        wk_free(nd);
    }
    wk_free(l->nodes);
    l->nodes = NULL;
    l->n = l->cap = 0;
}

/* Appends a new node of kind to l; NULL when out of memory. */
static struct gt_node *add_node(struct ps *p, struct gt_list *l, enum gt_node_kind kind, int line)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        struct gt_node **nodes = wk_realloc(l->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) return nomem(p), NULL;
        l->nodes = nodes, l->cap = cap;
    }
    struct gt_node *nd = wk_calloc(1, sizeof *nd);
    if (!nd) return nomem(p), NULL;
    nd->kind = kind, nd->line = line;
    l->nodes[l->n++] = nd;
    return nd;
}

/* ----------------------------------------------------------------- lexer */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_alnum(char c)
{
    return isalnum((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80;
}

static bool at(const struct ps *p, size_t pos, const char *lit)
{
    size_t k = strlen(lit);
    return pos + k <= p->n && memcmp(p->s + pos, lit, k) == 0;
}

/* Scans a quoted string or character up to its closing quote q. */
static bool scan_quoted(struct ps *p, struct tok *t, char q)
{
    size_t i = p->pos + 1;
    while (i < p->n && p->s[i] != q) {
        if (p->s[i] == '\n' && q != '`') break;
        if (p->s[i] == '\\' && q != '`') i++;
        else if (p->s[i] == '\n') p->line++;
        i++;
    }
    if (i >= p->n || p->s[i] != q)
        return fail(p, WK_E_FORMAT, t->line, "unterminated %s", q == '\'' ? "character constant"
                                                                  : "quoted string");
    p->pos = i + 1;
    return true;
}

static bool scan_number(struct ps *p, struct tok *t)
{
    size_t i = p->pos;
    if (p->s[i] == '+' || p->s[i] == '-') i++;
    if (at(p, i, "0x") || at(p, i, "0X")) {
        i += 2;
        while (i < p->n && isxdigit((unsigned char)p->s[i])) i++;
    } else {
        while (i < p->n && (isdigit((unsigned char)p->s[i]) || p->s[i] == '.')) i++;
        if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
            i++;
            if (i < p->n && (p->s[i] == '+' || p->s[i] == '-')) i++;
            while (i < p->n && isdigit((unsigned char)p->s[i])) i++;
        }
    }
    if (i < p->n && is_alnum(p->s[i]))
        return fail(p, WK_E_FORMAT, t->line, "bad number syntax: %.*s", (int)(i + 1 - p->pos),
                    p->s + p->pos);
    p->pos = i;
    return true;
}

static bool lex_inner(struct ps *p, struct tok *t)
{
    char c = p->s[p->pos], d = p->pos + 1 < p->n ? p->s[p->pos + 1] : 0;
    size_t start = p->pos;
    if (c == '.' && (isalpha((unsigned char)d) || d == '_' || (unsigned char)d >= 0x80)) {
        t->type = T_FIELD;
        do {
            p->pos++;
            while (p->pos < p->n && is_alnum(p->s[p->pos])) p->pos++;
        } while (p->pos + 1 < p->n && p->s[p->pos] == '.' && is_alnum(p->s[p->pos + 1]) &&
                 !isdigit((unsigned char)p->s[p->pos + 1]));
    } else if (c == '.' && !isdigit((unsigned char)d)) {
        t->type = T_DOT, p->pos++;
    } else if (c == '$') {
        t->type = T_VAR;
        p->pos++;
        while (p->pos < p->n && is_alnum(p->s[p->pos])) p->pos++;
    } else if (c == '"' || c == '`' || c == '\'') {
        t->type = c == '"' ? T_STRING : c == '`' ? T_RAW : T_CHAR;
        if (!scan_quoted(p, t, c)) return false;
    } else if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)d)) ||
               ((c == '-' || c == '+') && (isdigit((unsigned char)d) || d == '.'))) {
        t->type = T_NUMBER;
        if (!scan_number(p, t)) return false;
    } else if (isalpha((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80) {
        t->type = T_IDENT;
        while (p->pos < p->n && is_alnum(p->s[p->pos])) p->pos++;
    } else if (c == ':' && d == '=') {
        t->type = T_DECLARE, p->pos += 2;
    } else if (c == '(' || c == ')' || c == '|' || c == ',' || c == '=') {
        t->type = c == '(' ? T_LPAREN : c == ')' ? T_RPAREN : c == '|' ? T_PIPE
                  : c == ',' ? T_COMMA : T_ASSIGN;
        p->pos++;
    } else {
        return fail(p, WK_E_FORMAT, t->line, "unexpected \"%c\" in command", c);
    }
    t->p = p->s + start, t->len = p->pos - start;
    return true;
}

/* Reads the next token inside an action. */
static bool lex(struct ps *p, struct tok *t)
{
    if (p->have_peek) {
        *t = p->peeked;
        p->have_peek = false;
        return true;
    }
    memset(t, 0, sizeof *t);
    while (p->pos < p->n && is_space(p->s[p->pos])) {
        if (p->s[p->pos] == '\n') p->line++;
        p->pos++, t->space = true;
    }
    t->line = p->line;
    t->p = p->s + p->pos;
    if (p->pos >= p->n) {
        t->type = T_EOF;
        return true;
    }
    if (t->space && at(p, p->pos, "-}}")) {
        t->type = T_RDELIM, t->trim = true, t->len = 3, p->pos += 3;
        return true;
    }
    if (at(p, p->pos, "}}")) {
        t->type = T_RDELIM, t->len = 2, p->pos += 2;
        return true;
    }
    return lex_inner(p, t);
}

static bool peek(struct ps *p, struct tok *t)
{
    if (!p->have_peek) {
        if (!lex(p, &p->peeked)) return false;
        p->have_peek = true;
    }
    *t = p->peeked;
    return true;
}

static bool tok_is(const struct tok *t, enum tok_type type, const char *text)
{
    return t->type == type && (!text || (t->len == strlen(text) && !memcmp(t->p, text, t->len)));
}

static const char *tok_desc(const struct tok *t)
{
    switch (t->type) {
    case T_EOF: return "unclosed action";
    case T_RDELIM: return "}}";
    case T_RPAREN: return ")";
    case T_PIPE: return "|";
    default: return "token";
    }
}

/* Consumes the closing }} of an action. */
static bool expect_rdelim(struct ps *p, const char *what)
{
    struct tok t;
    if (!lex(p, &t)) return false;
    if (t.type == T_EOF) return fail(p, WK_E_FORMAT, t.line, "unclosed action");
    if (t.type != T_RDELIM)
        return fail(p, WK_E_FORMAT, t.line, "unexpected \"%.*s\" in %s", (int)t.len, t.p, what);
    p->trim_next = t.trim;
    return true;
}

/* ------------------------------------------------------------- variables */

static bool var_push(struct ps *p, char *name)
{
    if (p->n_vars == p->cap_vars) {
        int cap = p->cap_vars ? p->cap_vars * 2 : 16;
        char **v = wk_realloc(p->vars, (size_t)cap * sizeof *v);
        if (!v) return nomem(p);
        p->vars = v, p->cap_vars = cap;
    }
    p->vars[p->n_vars++] = name;
    return true;
}

static bool var_known(const struct ps *p, const char *name, size_t len)
{
    if (len == 1) return true; /* $ */
    for (int i = p->n_vars - 1; i >= 0; i--)
        if (strlen(p->vars[i]) == len && !memcmp(p->vars[i], name, len)) return true;
    return false;
}

/* -------------------------------------------------------------- literals */

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        return o[2] = (char)(0x80 | (cp & 0x3F)), 3;
    }
    o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes one escape at s[*i] (after the backslash) into o; returns bytes or -1. */
static int unescape_one(const char *s, size_t n, size_t *i, char *o)
{
    char c = s[*i];
    const char *simple = "a\ab\bf\fn\nr\rt\tv\v\\\\\"\"''";
    for (const char *q = simple; *q; q += 2)
        if (c == q[0]) return (*i)++, o[0] = q[1], 1;
    int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    uint32_t v = 0;
    if (digits) {
        if (*i + (size_t)digits >= n) return -1;
        for (int k = 1; k <= digits; k++) {
            int h = hexval(s[*i + (size_t)k]);
            if (h < 0) return -1;
            v = v * 16 + (uint32_t)h;
        }
        *i += (size_t)digits + 1;
        if (c == 'x') return o[0] = (char)v, 1;
        if (v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) return -1;
        return (int)put_utf8(o, v);
    }
    if (c >= '0' && c <= '7' && *i + 2 < n) {
        for (int k = 0; k < 3; k++) {
            if (s[*i + (size_t)k] < '0' || s[*i + (size_t)k] > '7') return -1;
            v = v * 8 + (uint32_t)(s[*i + (size_t)k] - '0');
        }
        if (v > 255) return -1;
        *i += 3;
        return o[0] = (char)v, 1;
    }
    return -1;
}

/* Unquotes a "..." or `...` token into a new string. */
static bool unquote(struct ps *p, const struct tok *t, char **out, size_t *out_len)
{
    const char *s = t->p + 1;
    size_t n = t->len - 2, k = 0;
    char *o = wk_malloc(n + 1);
    if (!o) return nomem(p);
    for (size_t i = 0; i < n;) {
        if (t->type == T_RAW || s[i] != '\\') {
            o[k++] = s[i++];
            continue;
        }
        i++;
        int w = unescape_one(s, n, &i, o + k);
        if (w < 0) {
            wk_free(o);
            return fail(p, WK_E_FORMAT, t->line, "invalid syntax in %.*s", (int)t->len, t->p);
        }
        k += (size_t)w;
    }
    o[k] = 0;
    *out = o, *out_len = k;
    return true;
}

static bool parse_char(struct ps *p, const struct tok *t, int64_t *out)
{
    char buf[8];
    size_t len = 0;
    char *s = NULL;
    struct tok q = *t;
    q.type = T_STRING;
    if (!unquote(p, &q, &s, &len)) return false;
    memcpy(buf, s, len < sizeof buf ? len : sizeof buf);
    wk_free(s);
    const unsigned char *u = (const unsigned char *)buf;
    uint32_t cp = 0;
    size_t need = len == 0 ? 9 : u[0] < 0x80 ? 1 : u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : 2;
    if (len != need) return fail(p, WK_E_FORMAT, t->line, "malformed character constant: %.*s",
                                 (int)t->len, t->p);
    cp = need == 1 ? u[0] : (uint32_t)(u[0] & (0xFF >> (need + 1)));
    for (size_t k = 1; k < need; k++) cp = cp << 6 | (u[k] & 0x3F);
    *out = cp;
    return true;
}

static bool parse_number(struct ps *p, const struct tok *t, struct gt_arg *a)
{
    char buf[128];
    if (t->len >= sizeof buf) return fail(p, WK_E_FORMAT, t->line, "number too long");
    memcpy(buf, t->p, t->len);
    buf[t->len] = 0;
    bool hex = strstr(buf, "0x") || strstr(buf, "0X");
    char *end = NULL;
    errno = 0;
    if (!hex && strpbrk(buf, ".eE")) {
        a->kind = GA_FLOAT, a->f = strtod(buf, &end);
    } else {
        a->kind = GA_INT, a->i = strtoll(buf, &end, 0);
    }
    if (errno || !end || *end)
        return fail(p, WK_E_FORMAT, t->line, "bad number syntax: %s", buf);
    return true;
}

/* ------------------------------------------------------------ pipelines */

static bool parse_pipeline(struct ps *p, struct gt_pipe **out, enum tok_type end, int max_vars);

/* Splits the chain ".A.B" (text[0..len)) into a->fields. */
static bool add_fields(struct ps *p, struct gt_arg *a, const char *text, size_t len)
{
    for (size_t i = 0; i < len;) {
        size_t j = i + 1;
        while (j < len && text[j] != '.') j++;
        char **f = wk_realloc(a->fields, (size_t)(a->n_fields + 1) * sizeof *f);
        if (!f) return nomem(p);
        a->fields = f;
        if (!(f[a->n_fields] = wk_strndup(text + i + 1, j - i - 1))) return nomem(p);
        a->n_fields++;
        i = j;
    }
    return true;
}

static bool parse_term(struct ps *p, const struct tok *t, struct gt_arg *a)
{
    switch (t->type) {
    case T_DOT: a->kind = GA_DOT; return true;
    case T_FIELD: a->kind = GA_FIELD; return add_fields(p, a, t->p, t->len);
    case T_VAR:
        if (!var_known(p, t->p, t->len))
            return fail(p, WK_E_FORMAT, t->line, "undefined variable \"%.*s\"", (int)t->len, t->p);
        a->kind = GA_VAR, a->len = t->len;
        return (a->str = wk_memdup0(t->p, t->len)) ? true : nomem(p);
    case T_STRING:
    case T_RAW: a->kind = GA_STRING; return unquote(p, t, &a->str, &a->len);
    case T_CHAR: a->kind = GA_INT; return parse_char(p, t, &a->i);
    case T_NUMBER: return parse_number(p, t, a);
    case T_LPAREN:
        if (++p->depth > WK_GOTMPL_MAX_DEPTH)
            return fail(p, WK_E_RANGE, t->line, "nested deeper than %d", WK_GOTMPL_MAX_DEPTH);
        a->kind = GA_PIPE;
        if (!parse_pipeline(p, &a->pipe, T_RPAREN, 0)) return false;
        p->depth--;
        return true;
    case T_IDENT:
        if (tok_is(t, T_IDENT, "true") || tok_is(t, T_IDENT, "false")) {
            a->kind = GA_BOOL, a->i = t->p[0] == 't';
            return true;
        }
        if (tok_is(t, T_IDENT, "nil")) return a->kind = GA_NIL, true;
        a->kind = GA_FUNC;
        if ((a->i = gt_func_lookup(t->p, t->len)) >= 0) return true;
        return fail(p, WK_E_FORMAT, t->line, "function \"%.*s\" not defined", (int)t->len, t->p);
    case T_EOF: return fail(p, WK_E_FORMAT, t->line, "unclosed action");
    default:
        return fail(p, WK_E_FORMAT, t->line, "unexpected \"%.*s\" in operand", (int)t->len, t->p);
    }
}

static bool parse_command(struct ps *p, struct gt_cmd *c, enum tok_type end)
{
    for (;;) {
        struct tok t;
        if (!peek(p, &t)) return false;
        if (t.type == T_PIPE || t.type == end) break;
        if (t.type == T_RDELIM || t.type == T_RPAREN || t.type == T_EOF)
            return fail(p, WK_E_FORMAT, t.line, t.type == T_EOF ? "unclosed action"
                                                               : "unexpected %s in operand",
                        tok_desc(&t));
        struct gt_arg *args = wk_realloc(c->args, (size_t)(c->n_args + 1) * sizeof *args);
        if (!args) return nomem(p);
        c->args = args;
        struct gt_arg *a = &args[c->n_args++];
        memset(a, 0, sizeof *a);
        if (!lex(p, &t) || !parse_term(p, &t, a)) return false;
        struct tok f;
        if (!peek(p, &f)) return false;
        if (f.type == T_FIELD && !f.space) {
            if (a->kind != GA_VAR && a->kind != GA_PIPE && a->kind != GA_FIELD && a->kind != GA_DOT)
                return fail(p, WK_E_FORMAT, f.line, "unexpected %.*s in operand", (int)f.len, f.p);
            if (a->kind == GA_DOT) a->kind = GA_FIELD;
            if (!lex(p, &f) || !add_fields(p, a, f.p, f.len)) return false;
        }
    }
    if (c->n_args == 0) return fail(p, WK_E_FORMAT, p->line, "missing value for command");
    return true;
}

/* Reads "$x :=", "$x =" or (max_vars 2) "$i, $e :=" if they come next. */
static bool parse_decl(struct ps *p, struct gt_pipe *pp, int max_vars)
{
    struct tok t;
    if (!peek(p, &t) || t.type != T_VAR) return true;
    size_t save_pos = p->pos;
    int save_line = p->line;
    struct tok saved = p->peeked;
    struct tok names[2];
    int n = 0;
    struct tok op;
    for (;;) {
        if (!lex(p, &names[n++]) || !lex(p, &op)) return false;
        if (op.type == T_COMMA && n < max_vars) {
            if (!peek(p, &t)) return false;
            if (t.type == T_VAR) continue;
        }
        break;
    }
    if (op.type != T_DECLARE && op.type != T_ASSIGN) {
        p->pos = save_pos, p->line = save_line, p->peeked = saved, p->have_peek = true;
        return true;
    }
    pp->decl = op.type == T_DECLARE, pp->assign = !pp->decl;
    for (int i = 0; i < n; i++) {
        if (!(pp->vars[i] = wk_strndup(names[i].p, names[i].len))) return nomem(p);
        pp->n_vars++;
        if (pp->assign && !var_known(p, names[i].p, names[i].len))
            return fail(p, WK_E_FORMAT, names[i].line, "undefined variable \"%.*s\"",
                        (int)names[i].len, names[i].p);
        if (pp->decl && !var_push(p, pp->vars[i])) return false;
    }
    return true;
}

/* Parses a pipeline up to and including its end token (}} or ")"). */
static bool parse_pipeline(struct ps *p, struct gt_pipe **out, enum tok_type end, int max_vars)
{
    struct gt_pipe *pp = *out = wk_calloc(1, sizeof *pp);
    if (!pp) return nomem(p);
    pp->line = p->line;
    if (max_vars && !parse_decl(p, pp, max_vars)) return false;
    for (;;) {
        struct gt_cmd *cmds = wk_realloc(pp->cmds, (size_t)(pp->n_cmds + 1) * sizeof *cmds);
        if (!cmds) return nomem(p);
        pp->cmds = cmds;
        memset(&cmds[pp->n_cmds], 0, sizeof *cmds);
        pp->n_cmds++;
        if (!parse_command(p, &cmds[pp->n_cmds - 1], end)) return false;
        struct tok t;
        if (!lex(p, &t)) return false;
        if (t.type == end) {
            if (end == T_RDELIM) p->trim_next = t.trim;
            return true;
        }
    }
}

/* -------------------------------------------------------------- actions */

static bool parse_list(struct ps *p, struct gt_list *l, enum end_kw *kw);

static bool parse_else_chain(struct ps *p, struct gt_node *nd, enum gt_node_kind kind);

/* {{if}}, {{with}} or {{range}}: the keyword has been read. */
static bool parse_control(struct ps *p, struct gt_list *l, enum gt_node_kind kind, int line)
{
    if (++p->depth > WK_GOTMPL_MAX_DEPTH)
        return fail(p, WK_E_RANGE, line, "nested deeper than %d", WK_GOTMPL_MAX_DEPTH);
    struct gt_node *nd = add_node(p, l, kind, line);
    if (!nd) return false;
    int mark = p->n_vars;
    const char *name = kind == GN_IF ? "if" : kind == GN_WITH ? "with" : "range";
    if (!parse_pipeline(p, &nd->pipe, T_RDELIM, kind == GN_RANGE ? 2 : 1)) return false;
    if (kind == GN_RANGE) p->range_depth++;
    enum end_kw kw;
    if (!parse_list(p, &nd->body, &kw)) return false;
    if (kind == GN_RANGE) p->range_depth--;
    if (kw == END_EOF) return fail(p, WK_E_FORMAT, line, "unexpected EOF: {{%s}} not closed", name);
    if (kw == END_ELSE && !parse_else_chain(p, nd, kind)) return false;
    p->n_vars = mark;
    p->depth--;
    return true;
}

/* After {{else: either "if"/"with" (a chained control sharing the {{end}})
 * or }} and the else list up to {{end}}. */
static bool parse_else_chain(struct ps *p, struct gt_node *nd, enum gt_node_kind kind)
{
    struct tok t;
    if (!peek(p, &t)) return false;
    if ((kind == GN_IF && tok_is(&t, T_IDENT, "if")) ||
        (kind == GN_WITH && tok_is(&t, T_IDENT, "with"))) {
        lex(p, &t);
        return parse_control(p, &nd->else_body, kind, t.line);
    }
    if (!expect_rdelim(p, "else")) return false;
    enum end_kw kw;
    if (!parse_list(p, &nd->else_body, &kw)) return false;
    if (kw != END_END)
        return fail(p, WK_E_FORMAT, nd->line, kw == END_ELSE ? "expected end; found {{else}}"
                                                             : "unexpected EOF: no {{end}}");
    return true;
}

/* Parses the action after {{ (and its comment or trim marker). */
static bool parse_action(struct ps *p, struct gt_list *l, enum end_kw *kw, bool *done)
{
    struct tok t;
    if (!peek(p, &t)) return false;
    if (t.type == T_IDENT) {
        static const char *const kws[] = {"end", "else", "if", "with", "range", "break",
                                          "continue", "define", "template", "block"};
        int k = -1;
        for (int i = 0; i < 10; i++)
            if (tok_is(&t, T_IDENT, kws[i])) k = i;
        if (k >= 0) lex(p, &t);
        switch (k) {
        case 0: *kw = END_END, *done = true; return expect_rdelim(p, "end");
        case 1: *kw = END_ELSE, *done = true; return true;
        case 2: return parse_control(p, l, GN_IF, t.line);
        case 3: return parse_control(p, l, GN_WITH, t.line);
        case 4: return parse_control(p, l, GN_RANGE, t.line);
        case 5:
        case 6:
            if (!p->range_depth)
                return fail(p, WK_E_FORMAT, t.line, "{{%s}} outside {{range}}", kws[k]);
            if (!add_node(p, l, k == 5 ? GN_BREAK : GN_CONTINUE, t.line)) return false;
            return expect_rdelim(p, kws[k]);
        case 7:
        case 8:
        case 9: return fail(p, WK_E_FORMAT, t.line, "{{%s}} is not supported", kws[k]);
        default: break;
        }
    }
    struct gt_node *nd = add_node(p, l, GN_ACTION, t.line);
    return nd && parse_pipeline(p, &nd->pipe, T_RDELIM, 1);
}

/* Skips a comment at p->pos (after {{ and any trim marker) through }}. */
static bool skip_comment(struct ps *p)
{
    int line = p->line;
    const char *e = NULL;
    for (size_t i = p->pos + 2; i + 1 < p->n; i++)
        if (p->s[i] == '*' && p->s[i + 1] == '/') {
            e = p->s + i;
            break;
        }
    if (!e) return fail(p, WK_E_FORMAT, line, "unclosed comment");
    for (const char *q = p->s + p->pos; q < e; q++) p->line += *q == '\n';
    p->pos = (size_t)(e - p->s) + 2;
    if (at(p, p->pos, "}}")) return p->pos += 2, p->trim_next = false, true;
    if (p->pos < p->n && is_space(p->s[p->pos]) && at(p, p->pos + 1, "-}}")) {
        p->line += p->s[p->pos] == '\n';
        return p->pos += 4, p->trim_next = true, true;
    }
    return fail(p, WK_E_FORMAT, line, "comment ends before closing delimiter");
}

/* Adds the text s[start..end) as a node, trimmed as the delimiters ask. */
static bool add_text(struct ps *p, struct gt_list *l, size_t start, size_t end, bool trim_right)
{
    const char *s = p->s;
    int line = p->line;
    for (size_t i = start; i < end; i++) p->line += s[i] == '\n';
    if (p->trim_next)
        while (start < end && is_space(s[start])) start++;
    if (trim_right)
        while (end > start && is_space(s[end - 1])) end--;
    p->trim_next = false;
    if (end == start) return true;
    struct gt_node *nd = add_node(p, l, GN_TEXT, line);
    if (!nd) return false;
    nd->len = end - start;
    return (nd->text = wk_memdup0(s + start, end - start)) ? true : nomem(p);
}

static bool parse_list(struct ps *p, struct gt_list *l, enum end_kw *kw)
{
    *kw = END_EOF;
    while (p->pos < p->n) {
        const char *open = NULL;
        for (size_t i = p->pos; i + 1 < p->n; i++)
            if (p->s[i] == '{' && p->s[i + 1] == '{') {
                open = p->s + i;
                break;
            }
        size_t end = open ? (size_t)(open - p->s) : p->n;
        bool trim = open && end + 3 < p->n && open[2] == '-' && is_space(open[3]);
        if (!add_text(p, l, p->pos, end, trim)) return false;
        p->pos = end;
        if (!open) break;
        p->pos += trim ? 4 : 2;
        if (trim && open[3] == '\n') p->line++;
        if (at(p, p->pos, "/*")) {
            if (!skip_comment(p)) return false;
            continue;
        }
        bool done = false;
        if (!parse_action(p, l, kw, &done)) return false;
        if (done) return true;
    }
    return true;
}

enum wk_status wk_gotmpl_parse(const char *src, size_t len, struct wk_gotmpl **out,
                               struct wk_error *err)
{
    *out = NULL;
    wk_error_clear(err);
    struct wk_gotmpl *t = wk_calloc(1, sizeof *t);
    if (!t) return wk_error_set(err, WK_E_NOMEM, "template: out of memory");
    struct ps p = {.s = src ? src : "", .n = src ? len : 0, .line = 1, .err = err};
    enum end_kw kw;
    if (parse_list(&p, &t->root, &kw) && kw != END_EOF)
        fail(&p, WK_E_FORMAT, p.line, "unexpected {{%s}}", kw == END_END ? "end" : "else");
    wk_free(p.vars);
    if (p.st != WK_OK) {
        wk_gotmpl_free(t);
        return p.st;
    }
    gt_tree_index(t);
    *out = t;
    return WK_OK;
}

void wk_gotmpl_free(struct wk_gotmpl *t)
{
    if (!t) return;
    gt_list_free(&t->root);
    wk_free(t);
}
