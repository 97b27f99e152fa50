/*
 * grammar_gbnf.c - the GBNF parser (llama.cpp's grammar syntax,
 * grammars/README.md there) into a syntax tree (struct gast_tree), plus
 * the small text and UTF-8 helpers the schema compiler shares.
 *
 * Syntax: `name ::= alternatives`, one rule per line; a rule's body may go
 * on over lines inside ( ), after ::= and |, and on a next line that
 * starts with |. Elements: "literal", [class], [^class], ., rule names,
 * ( group ), each followed by any of * + ? {m} {m,} {m,n}. # starts a
 * comment. Names are [A-Za-z0-9_-]+. Text is UTF-8; a literal or class
 * holds code points, matched as their UTF-8 bytes. Errors name line:column.
 */
#include "grammar_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* -------------------------------------------------------------- utf-8 */

int wk__utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
    if (n == 0) return 0;
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    if (len == 0 || c > 0xf4 || (size_t)len > n) return 0;
    uint32_t v = c & (0x7f >> len);
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min_cp[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return len;
}

int wk__utf8_encode(uint32_t cp, uint8_t *out)
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xc0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xe0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (uint8_t)(0xf0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

/* -------------------------------------------------------- text buffer */

void wk__gbuf_init(struct gbuf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max;
    b->ok = true;
}

void wk__gbuf_free(struct gbuf *b)
{
    wk_free(b->s);
    memset(b, 0, sizeof *b);
}

void wk__gbuf_put(struct gbuf *b, const char *s, size_t n)
{
    if (!b->ok || (n == 0 && b->s)) return;
    if (b->n + n + 1 > b->max) {
        b->ok = false;
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = wk_realloc(b->s, cap);
        if (!p) {
            b->ok = false;
            b->nomem = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

void wk__gbuf_puts(struct gbuf *b, const char *s)
{
    wk__gbuf_put(b, s, strlen(s));
}

void wk__gbuf_printf(struct gbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->ok = false;
    } else if ((size_t)n < sizeof tmp) {
        wk__gbuf_put(b, tmp, (size_t)n);
    } else if (b->ok) { /* long: format into the heap */
        char *big = wk_malloc((size_t)n + 1);
        if (!big) {
            b->ok = false;
            b->nomem = true;
        } else {
            vsnprintf(big, (size_t)n + 1, fmt, ap2);
            wk__gbuf_put(b, big, (size_t)n);
            wk_free(big);
        }
    }
    va_end(ap2);
}

void wk__gbuf_put_cp(struct gbuf *b, uint32_t cp)
{
    char tmp[16];
    if (cp == '"' || cp == '\\' || cp == ']' || cp == '[' || cp == '-' || cp == '^') {
        tmp[0] = '\\';
        tmp[1] = (char)cp;
        wk__gbuf_put(b, tmp, 2);
    } else if (cp < 0x20 || cp == 0x7f) {
        snprintf(tmp, sizeof tmp, "\\x%02X", cp);
        wk__gbuf_puts(b, tmp);
    } else {
        uint8_t u[4];
        int n = wk__utf8_encode(cp, u);
        wk__gbuf_put(b, (const char *)u, (size_t)n);
    }
}

void wk__gbuf_put_literal(struct gbuf *b, const char *s, size_t n)
{
    wk__gbuf_put(b, "\"", 1);
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        int k = wk__utf8_decode((const uint8_t *)s + i, n - i, &cp);
        if (k == 0) { /* not UTF-8: cannot be written as a literal */
            b->ok = false;
            return;
        }
        if (cp == '[' || cp == ']' || cp == '-' || cp == '^')
            wk__gbuf_put(b, s + i, 1);
        else
            wk__gbuf_put_cp(b, cp);
        i += (size_t)k;
    }
    wk__gbuf_put(b, "\"", 1);
}

/* ------------------------------------------------------- syntax tree */

void wk__gast_deinit(struct gast_tree *t)
{
    wk_free(t->nodes);
    wk_free(t->bytes);
    wk_free(t->ranges);
    wk_free(t->rules);
    wk_free(t->names);
    memset(t, 0, sizeof *t);
}

/* Grows *p (elements of size sz) to hold need; false when out of memory. */
static bool grow(void **p, int32_t *cap, int32_t need, size_t sz)
{
    if (need <= *cap) return true;
    int64_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    if (c > INT32_MAX) return false;
    void *q = wk_realloc(*p, (size_t)c * sz);
    if (!q) return false;
    *p = q;
    *cap = (int32_t)c;
    return true;
}

int32_t wk__gast_find_rule(const struct gast_tree *t, const char *name, size_t len)
{
    for (int32_t i = 0; i < t->n_rules; i++) {
        const char *s = t->names + t->rules[i].name;
        if (strlen(s) == len && memcmp(s, name, len) == 0) return i;
    }
    return -1;
}

/* --------------------------------------------------------------- parser */

struct gparser {
    const char *s;
    size_t n, pos;
    struct gast_tree *t;
    struct wk_error *err;
    enum wk_status st;
    int depth;
    /* name lookup: open hashing over rule ids */
    int32_t *hash;
    uint32_t hash_mask;
    /* where(): the line and column at lc_pos, so that positions asked in
     * increasing order cost the text once, not once each */
    size_t lc_pos;
    int32_t lc_line, lc_col;
};

static void where(struct gparser *p, size_t pos, int32_t *line, int32_t *col)
{
    if (pos < p->lc_pos || p->lc_line == 0) p->lc_pos = 0, p->lc_line = 1, p->lc_col = 1;
    int32_t l = p->lc_line, c = p->lc_col;
    size_t i = p->lc_pos;
    for (; i < pos && i < p->n; i++) {
        if (p->s[i] == '\n') {
            l++;
            c = 1;
        } else if (((uint8_t)p->s[i] & 0xc0) != 0x80) {
            c++;
        }
    }
    p->lc_pos = i;
    p->lc_line = l;
    p->lc_col = c;
    *line = l;
    *col = c;
}

__attribute__((format(printf, 3, 4))) static bool fail(struct gparser *p, size_t pos,
                                                       const char *fmt, ...)
{
    if (p->st != WK_OK) return false;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int32_t line, col;
    where(p, pos, &line, &col);
    p->st = wk_error_set(p->err, WK_E_INVALID, "grammar line %d column %d: %s", line, col, msg);
    return false;
}

static bool nomem(struct gparser *p)
{
    if (p->st == WK_OK) p->st = wk_error_set(p->err, WK_E_NOMEM, "grammar: out of memory");
    return false;
}

static int32_t new_node(struct gparser *p, int kind, int32_t a, int32_t b)
{
    struct gast_tree *t = p->t;
    if (t->n_nodes >= GR_MAX_AST_NODES) {
        if (p->st == WK_OK)
            p->st = wk_error_set(p->err, WK_E_RANGE, "grammar: more than %d syntax nodes",
                                 GR_MAX_AST_NODES);
        return -1;
    }
    if (!grow((void **)&t->nodes, &t->cap_nodes, t->n_nodes + 1, sizeof *t->nodes)) {
        nomem(p);
        return -1;
    }
    struct gast *x = &t->nodes[t->n_nodes];
    x->kind = (uint8_t)kind;
    x->a = a;
    x->b = b;
    x->child = x->next = -1;
    return t->n_nodes++;
}

static uint32_t name_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static bool rehash(struct gparser *p)
{
    uint32_t size = 64;
    while (size < (uint32_t)p->t->n_rules * 2 + 2) size *= 2;
    int32_t *h = wk_malloc(size * sizeof *h);
    if (!h) return nomem(p);
    for (uint32_t i = 0; i < size; i++) h[i] = -1;
    for (int32_t r = 0; r < p->t->n_rules; r++) {
        const char *nm = p->t->names + p->t->rules[r].name;
        uint32_t k = name_hash(nm, strlen(nm)) & (size - 1);
        while (h[k] >= 0) k = (k + 1) & (size - 1);
        h[k] = r;
    }
    wk_free(p->hash);
    p->hash = h;
    p->hash_mask = size - 1;
    return true;
}

/* The rule named s[0..n), created (undefined, first used at pos) if new. */
static int32_t rule_id(struct gparser *p, const char *s, size_t n, size_t pos)
{
    struct gast_tree *t = p->t;
    if (p->hash) {
        uint32_t k = name_hash(s, n) & p->hash_mask;
        for (; p->hash[k] >= 0; k = (k + 1) & p->hash_mask) {
            const char *nm = t->names + t->rules[p->hash[k]].name;
            if (strlen(nm) == n && memcmp(nm, s, n) == 0) return p->hash[k];
        }
    }
    if (t->n_rules >= GR_MAX_RULES) {
        if (p->st == WK_OK)
            p->st = wk_error_set(p->err, WK_E_RANGE, "grammar: more than %d rules", GR_MAX_RULES);
        return -1;
    }
    if (!grow((void **)&t->rules, &t->cap_rules, t->n_rules + 1, sizeof *t->rules) ||
        !grow((void **)&t->names, &t->cap_names, t->n_names + (int32_t)n + 1, 1)) {
        nomem(p);
        return -1;
    }
    struct gast_rule *r = &t->rules[t->n_rules];
    r->name = t->n_names;
    memcpy(t->names + t->n_names, s, n);
    t->names[t->n_names + n] = '\0';
    t->n_names += (int32_t)n + 1;
    r->body = -1;
    where(p, pos, &r->line, &r->col);
    int32_t id = t->n_rules++;
    if (!p->hash || (uint32_t)t->n_rules * 2 > p->hash_mask) {
        if (!rehash(p)) return -1;
    } else {
        uint32_t k = name_hash(s, n) & p->hash_mask;
        while (p->hash[k] >= 0) k = (k + 1) & p->hash_mask;
        p->hash[k] = id;
    }
    return id;
}

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

/* Skips spaces, tabs, comments and (when newlines) line breaks. */
static void skip_space(struct gparser *p, bool newlines)
{
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c == ' ' || c == '\t' || c == '\r') {
            p->pos++;
        } else if (c == '#') {
            while (p->pos < p->n && p->s[p->pos] != '\n') p->pos++;
        } else if (c == '\n' && newlines) {
            p->pos++;
        } else {
            break;
        }
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads one character (escapes decoded) of a literal or class. */
static bool parse_char(struct gparser *p, uint32_t *cp)
{
    size_t at = p->pos;
    if (p->pos >= p->n) return fail(p, at, "unexpected end of input");
    if (p->s[p->pos] != '\\') {
        int k = wk__utf8_decode((const uint8_t *)p->s + p->pos, p->n - p->pos, cp);
        if (k == 0) return fail(p, at, "invalid UTF-8");
        p->pos += (size_t)k;
        return true;
    }
    if (p->pos + 1 >= p->n) return fail(p, at, "unexpected end of input after \\");
    char e = p->s[p->pos + 1];
    p->pos += 2;
    int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; i++) {
            int h = p->pos < p->n ? hexval(p->s[p->pos]) : -1;
            if (h < 0) return fail(p, at, "\\%c needs %d hex digits", e, digits);
            v = v * 16 + (uint32_t)h;
            p->pos++;
        }
        if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
            return fail(p, at, "\\%c%0*X is not a Unicode scalar value", e, digits, v);
        *cp = v;
        return true;
    }
    switch (e) {
    case 't': *cp = '\t'; return true;
    case 'r': *cp = '\r'; return true;
    case 'n': *cp = '\n'; return true;
    case 'f': *cp = '\f'; return true;
    case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'':
        *cp = (uint32_t)e;
        return true;
    default:
        return fail(p, at, "unknown escape \\%c", e);
    }
}

static int32_t parse_literal(struct gparser *p)
{
    size_t at = p->pos++;
    struct gast_tree *t = p->t;
    int32_t off = t->n_bytes;
    while (p->pos < p->n && p->s[p->pos] != '"') {
        uint32_t cp;
        if (!parse_char(p, &cp)) return -1;
        uint8_t u[4];
        int k = wk__utf8_encode(cp, u);
        if (!grow((void **)&t->bytes, &t->cap_bytes, t->n_bytes + k, 1)) return nomem(p), -1;
        memcpy(t->bytes + t->n_bytes, u, (size_t)k);
        t->n_bytes += k;
    }
    if (p->pos >= p->n) return fail(p, at, "unterminated string literal"), -1;
    p->pos++;
    if (t->n_bytes == off) return new_node(p, GA_EMPTY, 0, 0);
    return new_node(p, GA_BYTES, off, t->n_bytes - off);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Adds the code point ranges ranges[0..n) (pairs), sorted, merged and
 * complemented when negate, without surrogates, as a class node.
 */
int32_t wk__gast_add_class(struct gast_tree *t, const uint32_t *ranges, int32_t n, bool negate);
int32_t wk__gast_add_class(struct gast_tree *t, const uint32_t *ranges, int32_t n, bool negate)
{
    uint64_t *rs = wk_malloc(((size_t)n + 3) * sizeof *rs);
    if (!rs) return -2;
    for (int32_t i = 0; i < n; i++) rs[i] = ((uint64_t)ranges[2 * i] << 32) | ranges[2 * i + 1];
    qsort(rs, (size_t)n, sizeof *rs, cmp_u64);
    /* merge into [lo, hi] pairs */
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        uint32_t lo = (uint32_t)(rs[i] >> 32), hi = (uint32_t)rs[i];
        if (m > 0 && lo <= (uint32_t)rs[m - 1] + 1) {
            if (hi > (uint32_t)rs[m - 1]) rs[m - 1] = (rs[m - 1] & 0xffffffff00000000ull) | hi;
        } else {
            rs[m++] = ((uint64_t)lo << 32) | hi;
        }
    }
    uint32_t *out = wk_malloc(((size_t)m + 3) * 2 * 2 * sizeof *out);
    if (!out) {
        wk_free(rs);
        return -2;
    }
    int32_t k = 0;
    /* emit [lo, hi] minus surrogates */
#define EMIT(L, H)                                                                                 \
    do {                                                                                           \
        uint32_t l_ = (L), h_ = (H);                                                               \
        if (l_ <= 0xd7ff && l_ <= h_) {                                                            \
            out[2 * k] = l_, out[2 * k + 1] = h_ < 0xd7ff ? h_ : 0xd7ff, k++;                      \
        }                                                                                          \
        if (h_ >= 0xe000 && l_ <= h_) {                                                            \
            out[2 * k] = l_ > 0xe000 ? l_ : 0xe000, out[2 * k + 1] = h_, k++;                      \
        }                                                                                          \
    } while (0)
    if (!negate) {
        for (int32_t i = 0; i < m; i++) EMIT((uint32_t)(rs[i] >> 32), (uint32_t)rs[i]);
    } else {
        uint32_t next = 0;
        for (int32_t i = 0; i < m; i++) {
            uint32_t lo = (uint32_t)(rs[i] >> 32), hi = (uint32_t)rs[i];
            if (lo > next) EMIT(next, lo - 1);
            next = hi + 1;
        }
        if (next <= 0x10ffff) EMIT(next, 0x10ffff);
    }
#undef EMIT
    wk_free(rs);
    int32_t id = -2;
    if (grow((void **)&t->ranges, &t->cap_ranges, t->n_ranges + 2 * k, sizeof *t->ranges) &&
        grow((void **)&t->nodes, &t->cap_nodes, t->n_nodes + 1, sizeof *t->nodes)) {
        if (k) memcpy(t->ranges + t->n_ranges, out, (size_t)k * 2 * sizeof *out);
        struct gast *x = &t->nodes[t->n_nodes];
        x->kind = GA_CLASS;
        x->a = t->n_ranges / 2;
        x->b = k;
        x->child = x->next = -1;
        t->n_ranges += 2 * k;
        id = t->n_nodes++;
    }
    wk_free(out);
    return id;
}

static int32_t parse_class(struct gparser *p)
{
    size_t at = p->pos++;
    bool negate = false;
    if (p->pos < p->n && p->s[p->pos] == '^') {
        negate = true;
        p->pos++;
    }
    uint32_t *rs = NULL;
    int32_t n = 0, cap = 0;
    while (p->pos < p->n && p->s[p->pos] != ']') {
        uint32_t lo, hi;
        if (!parse_char(p, &lo)) goto fail;
        hi = lo;
        if (p->pos + 1 < p->n && p->s[p->pos] == '-' && p->s[p->pos + 1] != ']') {
            size_t at2 = p->pos++;
            if (!parse_char(p, &hi)) goto fail;
            if (hi < lo) {
                fail(p, at2, "class range out of order (U+%04X-U+%04X)", lo, hi);
                goto fail;
            }
        }
        if (!grow((void **)&rs, &cap, 2 * n + 2, sizeof *rs)) {
            nomem(p);
            goto fail;
        }
        rs[2 * n] = lo;
        rs[2 * n + 1] = hi;
        n++;
    }
    if (p->pos >= p->n) {
        fail(p, at, "unterminated character class");
        goto fail;
    }
    p->pos++;
    if (p->t->n_nodes >= GR_MAX_AST_NODES) {
        new_node(p, GA_EMPTY, 0, 0); /* reports the limit */
        goto fail;
    }
    int32_t id = wk__gast_add_class(p->t, rs, n, negate);
    wk_free(rs);
    if (id == -2) return nomem(p), -1;
    return id;
fail:
    wk_free(rs);
    return -1;
}

static bool parse_int(struct gparser *p, int32_t *v)
{
    size_t at = p->pos;
    int64_t x = 0;
    if (p->pos >= p->n || p->s[p->pos] < '0' || p->s[p->pos] > '9')
        return fail(p, at, "expected a number");
    while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        x = x * 10 + (p->s[p->pos++] - '0');
        if (x > GR_MAX_REPEAT) return fail(p, at, "repetition count over %d", GR_MAX_REPEAT);
    }
    *v = (int32_t)x;
    return true;
}

static int32_t parse_alternates(struct gparser *p, bool nested);

static int32_t wrap_rep(struct gparser *p, int32_t child, int32_t min, int32_t max)
{
    int32_t r = new_node(p, GA_REP, min, max);
    if (r >= 0) p->t->nodes[r].child = child;
    return r;
}

/* One element and its postfix operators; -1 on error, -2 at no element. */
static int32_t parse_element(struct gparser *p, bool nested)
{
    size_t at = p->pos;
    char c = p->s[p->pos];
    int32_t x;
    if (c == '"') {
        x = parse_literal(p);
    } else if (c == '[') {
        x = parse_class(p);
    } else if (c == '.') {
        p->pos++;
        uint32_t all[2] = {0, 0x10ffff};
        if (p->t->n_nodes >= GR_MAX_AST_NODES) return new_node(p, GA_EMPTY, 0, 0), -1;
        x = wk__gast_add_class(p->t, all, 1, false);
        if (x == -2) return nomem(p), -1;
    } else if (c == '(') {
        if (++p->depth > 200) return fail(p, at, "groups nested deeper than 200"), -1;
        p->pos++;
        skip_space(p, true);
        x = parse_alternates(p, true);
        if (x < 0) return -1;
        skip_space(p, true);
        if (p->pos >= p->n || p->s[p->pos] != ')') return fail(p, at, "unclosed '('"), -1;
        p->pos++;
        p->depth--;
    } else if (is_name_char(c)) {
        size_t st = p->pos;
        while (p->pos < p->n && is_name_char(p->s[p->pos])) p->pos++;
        x = rule_id(p, p->s + st, p->pos - st, st);
        if (x < 0) return -1;
        x = new_node(p, GA_REF, x, 0);
    } else {
        return -2;
    }
    if (x < 0) return -1;
    for (;;) {
        if (p->pos >= p->n) break;
        char o = p->s[p->pos];
        size_t oat = p->pos;
        if (o == '*') {
            p->pos++;
            x = wrap_rep(p, x, 0, -1);
        } else if (o == '+') {
            p->pos++;
            x = wrap_rep(p, x, 1, -1);
        } else if (o == '?') {
            p->pos++;
            x = wrap_rep(p, x, 0, 1);
        } else if (o == '{') {
            p->pos++;
            skip_space(p, false);
            int32_t mn, mx;
            if (!parse_int(p, &mn)) return -1;
            skip_space(p, false);
            mx = mn;
            if (p->pos < p->n && p->s[p->pos] == ',') {
                p->pos++;
                skip_space(p, false);
                mx = -1;
                if (p->pos < p->n && p->s[p->pos] != '}' && !parse_int(p, &mx)) return -1;
                skip_space(p, false);
            }
            if (p->pos >= p->n || p->s[p->pos] != '}') return fail(p, oat, "expected '}'"), -1;
            p->pos++;
            if (mx >= 0 && mx < mn) return fail(p, oat, "repetition {%d,%d}: max below min", mn, mx), -1;
            x = wrap_rep(p, x, mn, mx);
        } else {
            break;
        }
        if (x < 0) return -1;
    }
    (void)nested;
    return x;
}

static int32_t parse_sequence(struct gparser *p, bool nested)
{
    int32_t seq = new_node(p, GA_SEQ, 0, 0), last = -1;
    if (seq < 0) return -1;
    for (;;) {
        skip_space(p, nested);
        if (p->pos >= p->n) break;
        char c = p->s[p->pos];
        if (c == '|' || c == ')' || c == '\n') break;
        size_t at = p->pos;
        /* a rule definition starting on this line ends the sequence */
        int32_t x = parse_element(p, nested);
        if (x == -2) return fail(p, at, "unexpected '%c'", c), -1;
        if (x < 0) return -1;
        if (p->t->nodes[x].kind == GA_REF) {
            size_t q = p->pos;
            while (q < p->n && (p->s[q] == ' ' || p->s[q] == '\t')) q++;
            if (q + 2 < p->n && memcmp(p->s + q, "::=", 3) == 0)
                return fail(p, at, "rule definition inside another rule's body (missing newline?)"), -1;
        }
        if (last < 0) p->t->nodes[seq].child = x;
        else p->t->nodes[last].next = x;
        last = x;
    }
    return seq;
}

static int32_t parse_alternates(struct gparser *p, bool nested)
{
    int32_t alt = new_node(p, GA_ALT, 0, 0);
    if (alt < 0) return -1;
    int32_t last = -1;
    for (;;) {
        int32_t s = parse_sequence(p, nested);
        if (s < 0) return -1;
        if (last < 0) p->t->nodes[alt].child = s;
        else p->t->nodes[last].next = s;
        last = s;
        if (p->pos < p->n && p->s[p->pos] == '|') {
            p->pos++;
            skip_space(p, true);
            continue;
        }
        if (!nested) { /* a next line starting with | goes on with this rule */
            size_t save = p->pos;
            skip_space(p, true);
            if (p->pos < p->n && p->s[p->pos] == '|') {
                p->pos++;
                skip_space(p, true);
                continue;
            }
            p->pos = save;
        }
        break;
    }
    return alt;
}

static bool parse_rule(struct gparser *p)
{
    size_t at = p->pos;
    while (p->pos < p->n && is_name_char(p->s[p->pos])) p->pos++;
    if (p->pos == at) return fail(p, at, "expected a rule name");
    size_t name_end = p->pos;
    skip_space(p, false);
    if (p->pos + 3 > p->n || memcmp(p->s + p->pos, "::=", 3) != 0)
        return fail(p, p->pos, "expected ::= after rule name '%.*s'", (int)(name_end - at), p->s + at);
    p->pos += 3;
    int32_t line, col;
    where(p, at, &line, &col);
    int32_t id = rule_id(p, p->s + at, name_end - at, at);
    if (id < 0) return false;
    if (p->t->rules[id].body >= 0)
        return fail(p, at, "rule '%.*s' defined twice", (int)(name_end - at), p->s + at);
    skip_space(p, true);
    int32_t body = parse_alternates(p, false);
    if (body < 0) return false;
    p->t->rules[id].body = body;
    p->t->rules[id].line = line;
    p->t->rules[id].col = col;
    skip_space(p, false);
    if (p->pos < p->n && p->s[p->pos] != '\n') return fail(p, p->pos, "unexpected '%c'", p->s[p->pos]);
    return true;
}

enum wk_status wk__gbnf_parse(const char *src, size_t len, struct gast_tree *t, struct wk_error *err)
{
    if (len > WK_GRAMMAR_MAX_SRC)
        return wk_error_set(err, WK_E_RANGE, "grammar: %zu bytes of text (at most %d)", len,
                            WK_GRAMMAR_MAX_SRC);
    struct gparser p = {.s = src, .n = len, .t = t, .err = err};
    for (;;) {
        skip_space(&p, true);
        if (p.pos >= p.n) break;
        if (!parse_rule(&p)) break;
    }
    wk_free(p.hash);
    if (p.st != WK_OK) return p.st;
    for (int32_t r = 0; r < t->n_rules; r++) {
        if (t->rules[r].body < 0)
            return wk_error_set(err, WK_E_INVALID, "grammar line %d column %d: undefined rule '%s'",
                                t->rules[r].line, t->rules[r].col, t->names + t->rules[r].name);
    }
    return WK_OK;
}
