/*
 * jinja_lex.c - the Jinja lexer: template text into data and tag tokens,
 * with jinja2's whitespace rules under trim_blocks and lstrip_blocks:
 * "{%-" / "{{-" / "{#-" strip all whitespace before the tag, "-%}" / "-}}"
 * / "-#}" all whitespace after it; a block or comment tag drops one
 * newline right after it (trim_blocks) and the spaces and tabs before it
 * when only they precede it on its line (lstrip_blocks); "+" turns either
 * off. The source's newlines are normalised to "\n" first and one
 * trailing newline dropped, as jinja2 does (keep_trailing_newline=False).
 */
#include "jinja_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <string.h>

static enum wk_status push(struct jtokens *t, struct jtoken tok)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        struct jtoken *v = wk_realloc(t->v, cap * sizeof *v);
        if (!v) return WK_E_NOMEM;
        t->v = v, t->cap = cap;
    }
    t->v[t->n++] = tok;
    return WK_OK;
}

void jinja_tokens_free(struct jtokens *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].type == JT_STRING) wk_free((void *)t->v[i].s);
    wk_free(t->v);
    memset(t, 0, sizeof *t);
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

/* Appends the code point cp as UTF-8. */
static size_t put_utf8(char *o, unsigned long cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 63));
        o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63)); o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Decodes the string literal body s[0..n) (Python escapes) into a new
 * buffer; *out_len its length. */
static char *decode_string(const char *s, size_t n, size_t *out_len)
{
    char *o = wk_malloc(n + 1);
    if (!o) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 == n) { o[k++] = s[i]; continue; }
        char e = s[++i];
        int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (digits) {
            unsigned long cp = 0;
            int d = 0;
            while (d < digits && i + 1 + d < n && hexval(s[i + 1 + d]) >= 0) cp = cp * 16 + (unsigned long)hexval(s[i + 1 + d++]);
            if (d == digits && cp <= 0x10FFFF) {
                k += put_utf8(o + k, cp);
                i += (size_t)d;
                continue;
            }
            o[k++] = '\\', o[k++] = e;
            continue;
        }
        switch (e) {
        case 'n': o[k++] = '\n'; break;
        case 't': o[k++] = '\t'; break;
        case 'r': o[k++] = '\r'; break;
        case '\\': o[k++] = '\\'; break;
        case '\'': o[k++] = '\''; break;
        case '"': o[k++] = '"'; break;
        case '\n': break;
        case 'a': o[k++] = '\a'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'v': o[k++] = '\v'; break;
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': { /* octal: up to 3 digits */
            unsigned long cp = (unsigned long)(e - '0');
            for (int d = 1; d < 3 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7'; d++) cp = cp * 8 + (unsigned long)(s[++i] - '0');
            k += put_utf8(o + k, cp); /* at most 0o777: two bytes, no more than the escape's */
            break;
        }
        default: o[k++] = '\\', o[k++] = e;
        }
    }
    o[k] = 0;
    *out_len = k;
    return o;
}

static const char *const OPS2[] = {"//", "**", "==", "!=", "<=", ">=", NULL};
static const char OPS1[] = "+-/*%~[](){}<>=.:|,;";

struct lexer {
    const char *s;
    size_t n, pos;
    int line;
    struct jtokens *out;
    struct wk_error *err;
};

static void advance(struct lexer *L, size_t to)
{
    for (size_t i = L->pos; i < to && i < L->n; i++)
        if (L->s[i] == '\n') L->line++;
    L->pos = to;
}

/* Tokenizes the inside of a tag up to its end ("}}" or "%}" outside any
 * brackets, as jinja2's lexer balances them: "{{ {'a': {}}}}" ends at the
 * last two), which it consumes with the whitespace rules after it. */
static enum wk_status lex_tag(struct lexer *L, bool block)
{
    const char *s = L->s;
    size_t open = 0; /* brackets open */
    for (;;) {
        while (L->pos < L->n && is_space(s[L->pos])) advance(L, L->pos + 1);
        if (L->pos >= L->n) return wk_error_set(L->err, WK_E_FORMAT, "line %d: unexpected end of template inside a tag", L->line);
        size_t p = L->pos;
        char c0 = s[p];
        char close = block ? '%' : '}';
        bool minus = c0 == '-' && p + 2 < L->n + 0 && s[p + 1] == close && s[p + 2] == '}';
        bool plus = block && c0 == '+' && p + 2 < L->n && s[p + 1] == '%' && s[p + 2] == '}';
        if (!open && (minus || plus || (c0 == close && p + 1 < L->n && s[p + 1] == '}'))) {
            struct jtoken t = {.type = block ? JT_BLOCK_END : JT_VAR_END, .line = L->line};
            if (push(L->out, t)) return WK_E_NOMEM;
            size_t q = p + ((minus || plus) ? 3 : 2);
            if (minus) {
                while (q < L->n && is_space(s[q])) q++;
            } else if (block && !plus && q < L->n && s[q] == '\n') {
                q++;
            }
            advance(L, q);
            return WK_OK;
        }
        struct jtoken t = {.line = L->line, .s = s + p};
        size_t q = p;
        if (isalpha((unsigned char)c0) || c0 == '_') {
            while (q < L->n && (isalnum((unsigned char)s[q]) || s[q] == '_')) q++;
            t.type = JT_NAME;
        } else if (isdigit((unsigned char)c0)) {
            bool after_dot = L->out->n && L->out->v[L->out->n - 1].type == JT_OP && L->out->v[L->out->n - 1].s[0] == '.';
            while (q < L->n && (isdigit((unsigned char)s[q]) || s[q] == '_')) q++;
            bool is_float = false;
            if (!after_dot && q + 1 < L->n && s[q] == '.' && isdigit((unsigned char)s[q + 1])) {
                is_float = true;
                q++;
                while (q < L->n && (isdigit((unsigned char)s[q]) || s[q] == '_')) q++;
            }
            if (!after_dot && q < L->n && (s[q] == 'e' || s[q] == 'E')) {
                size_t r = q + 1;
                if (r < L->n && (s[r] == '+' || s[r] == '-')) r++;
                if (r < L->n && isdigit((unsigned char)s[r])) {
                    is_float = true;
                    q = r;
                    while (q < L->n && isdigit((unsigned char)s[q])) q++;
                }
            }
            char buf[128];
            size_t k = 0;
            for (size_t i = p; i < q; i++)
                if (s[i] != '_') {
                    if (k == sizeof buf - 1)
                        return wk_error_set(L->err, WK_E_UNSUPPORTED, "line %d: a number literal longer than %zu digits",
                                            L->line, sizeof buf - 1);
                    buf[k++] = s[i];
                }
            buf[k] = 0;
            t.type = is_float ? JT_FLOAT : JT_INT;
            errno = 0;
            if (is_float) t.fval = strtod(buf, NULL);
            else t.ival = strtoll(buf, NULL, 10);
            /* Python's ints have no bound; wick's are 64-bit: a literal past
             * them is an error, not INT64_MAX; and a float literal past
             * double's range (Python's inf) is one too, literals being JSON
             * values, which hold no inf (it read as "out of memory") */
            if (!is_float && errno == ERANGE)
                return wk_error_set(L->err, WK_E_UNSUPPORTED, "line %d: integer literal %s is past 64 bits", L->line,
                                    buf);
            if (is_float && isinf(t.fval))
                return wk_error_set(L->err, WK_E_UNSUPPORTED, "line %d: float literal %s is past a double's range",
                                    L->line, buf);
        } else if (c0 == '\'' || c0 == '"') {
            q = p + 1;
            while (q < L->n && s[q] != c0) q += s[q] == '\\' ? 2 : 1;
            if (q >= L->n) return wk_error_set(L->err, WK_E_FORMAT, "line %d: unterminated string", L->line);
            t.type = JT_STRING;
            t.s = decode_string(s + p + 1, q - p - 1, &t.len);
            if (!t.s) return WK_E_NOMEM;
            q++;
            advance(L, q);
            if (push(L->out, t)) { wk_free((void *)t.s); return WK_E_NOMEM; }
            continue;
        } else {
            t.type = JT_OP;
            q = p + 1;
            for (int i = 0; OPS2[i]; i++)
                if (p + 1 < L->n && s[p] == OPS2[i][0] && s[p + 1] == OPS2[i][1]) q = p + 2;
            if (q == p + 1 && (!c0 || !strchr(OPS1, c0)))
                return wk_error_set(L->err, WK_E_FORMAT, "line %d: unexpected character '%c'", L->line, c0);
            if (q == p + 1 && strchr("([{", c0)) open++; /* c0 is not NUL here */
            if (q == p + 1 && strchr(")]}", c0) && open) open--;
        }
        t.len = q - p;
        if (push(L->out, t)) return WK_E_NOMEM;
        advance(L, q);
    }
}

/* Emits the text s[a..b) as DATA (nothing when empty). */
static enum wk_status emit_data(struct lexer *L, size_t a, size_t b, int line)
{
    if (b <= a) return WK_OK;
    struct jtoken t = {.type = JT_DATA, .line = line, .s = L->s + a, .len = b - a};
    return push(L->out, t);
}

/* The end of text before a tag at `at` after the - and lstrip rules:
 * kind is '{', '%' or '#'; sign the character after the tag opener. */
static size_t strip_before(struct lexer *L, size_t text_start, size_t at, char kind, char sign)
{
    const char *s = L->s;
    if (sign == '-') {
        while (at > text_start && is_space(s[at - 1])) at--;
        return at;
    }
    if (sign == '+' || kind == '{') return at;
    size_t l = at;
    while (l > text_start && s[l - 1] != '\n') l--;
    bool line_start = l > text_start || text_start == 0 || s[text_start - 1] == '\n';
    if (!line_start) return at;
    for (size_t i = l; i < at; i++)
        if (!is_space(s[i])) return at;
    return l;
}

/* Handles "{% raw %}...{% endraw %}" from the opener at `at`; returns
 * false (nothing consumed) when the tag is not raw. */
static enum wk_status lex_raw(struct lexer *L, size_t body, bool *was_raw)
{
    const char *s = L->s;
    size_t p = body;
    while (p < L->n && is_space(s[p])) p++;
    *was_raw = false;
    if (L->n - p < 3 || memcmp(s + p, "raw", 3) != 0 || (p + 3 < L->n && (isalnum((unsigned char)s[p + 3]) || s[p + 3] == '_'))) return WK_OK;
    p += 3;
    while (p < L->n && is_space(s[p])) p++;
    bool minus = p < L->n && s[p] == '-';
    if (minus) p++;
    if (p + 1 >= L->n || s[p] != '%' || s[p + 1] != '}') return WK_OK;
    p += 2;
    if (minus) while (p < L->n && is_space(s[p])) p++;
    *was_raw = true;
    for (size_t q = p; q + 1 < L->n; q++) {
        if (s[q] != '{' || s[q + 1] != '%') continue;
        size_t r = q + 2;
        char sign = r < L->n ? s[r] : 0;
        if (sign == '-' || sign == '+') r++;
        while (r < L->n && is_space(s[r])) r++;
        if (L->n - r < 6 || memcmp(s + r, "endraw", 6) != 0) continue;
        r += 6;
        while (r < L->n && is_space(s[r])) r++;
        char esign = r < L->n ? s[r] : 0;
        if (esign == '-' || esign == '+') r++;
        if (r + 1 >= L->n || s[r] != '%' || s[r + 1] != '}') continue;
        r += 2;
        size_t end = strip_before(L, p, q, '%', sign);
        if (emit_data(L, p, end, L->line)) return WK_E_NOMEM;
        if (esign == '-') while (r < L->n && is_space(s[r])) r++;
        else if (esign != '+' && r < L->n && s[r] == '\n') r++;
        advance(L, r);
        return WK_OK;
    }
    return wk_error_set(L->err, WK_E_FORMAT, "line %d: missing endraw", L->line);
}

static enum wk_status lex_all(struct lexer *L)
{
    const char *s = L->s;
    while (L->pos < L->n) {
        size_t at = L->pos;
        while (at + 1 < L->n && !(s[at] == '{' && (s[at + 1] == '{' || s[at + 1] == '%' || s[at + 1] == '#'))) at++;
        if (at + 1 >= L->n) {
            if (emit_data(L, L->pos, L->n, L->line)) return WK_E_NOMEM;
            advance(L, L->n);
            break;
        }
        char kind = s[at + 1];
        char sign = at + 2 < L->n ? s[at + 2] : 0;
        size_t end = strip_before(L, L->pos, at, kind, sign);
        if (emit_data(L, L->pos, end, L->line)) return WK_E_NOMEM;
        advance(L, at);
        size_t body = at + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
        if (kind == '#') {
            size_t q = body;
            while (q + 1 < L->n && !(s[q] == '#' && s[q + 1] == '}')) q++;
            if (q + 1 >= L->n) return wk_error_set(L->err, WK_E_FORMAT, "line %d: unterminated comment", L->line);
            bool minus = q > body && s[q - 1] == '-', plus = q > body && s[q - 1] == '+';
            q += 2;
            if (minus) while (q < L->n && is_space(s[q])) q++;
            else if (!plus && q < L->n && s[q] == '\n') q++;
            advance(L, q);
            continue;
        }
        if (kind == '%') {
            bool was_raw;
            enum wk_status st = lex_raw(L, body, &was_raw);
            if (st) return st;
            if (was_raw) continue;
        }
        struct jtoken t = {.type = kind == '%' ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, .line = L->line};
        if (push(L->out, t)) return WK_E_NOMEM;
        advance(L, body);
        enum wk_status st = lex_tag(L, kind == '%');
        if (st) return st;
    }
    struct jtoken t = {.type = JT_EOF, .line = L->line};
    return push(L->out, t);
}

enum wk_status jinja_lex(const char *src, size_t len, struct jtokens *out, struct wk_error *err)
{
    memset(out, 0, sizeof *out);
    struct lexer L = {.s = src, .n = len, .line = 1, .out = out, .err = err};
    enum wk_status st = lex_all(&L);
    if (st == WK_E_NOMEM) wk_error_set(err, st, "out of memory lexing a template");
    if (st) jinja_tokens_free(out);
    return st;
}
