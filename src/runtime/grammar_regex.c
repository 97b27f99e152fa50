/*
 * grammar_regex.c - a JSON Schema "pattern" (an ECMA-262 regular
 * expression, which Python's jsonschema runs as re.search) written as a
 * GBNF expression over the JSON text of a string's contents.
 *
 * Supported: literals, escapes (\t \n \r \f \v \0 \xHH \uHHHH, escaped
 * punctuation), classes with ranges and negation, \d \w \s and their
 * negations, ., groups ( ), (?: ), (?<name> ), alternation, quantifiers
 * * + ? {n} {n,} {n,m} (lazy forms too: same language), and ^ / $ at the
 * start / end of a top-level alternative. A pattern is a search: an
 * unanchored side gets any characters. Not supported (WK_E_UNSUPPORTED):
 * lookaround, backreferences, \b \B, \p{...}, anchors elsewhere.
 *
 * Soundness where the dialects differ: every character written must match
 * in both ECMA and Python. \d \w \s are their ASCII sets (Python's Unicode
 * sets are larger); \D \W \S and negated classes that hold one of them are
 * taken within ASCII, since Python's complements are smaller; . excludes
 * all line terminators. Characters are written as JSON wants them:
 * " and \ escaped, control characters as \n-style or \u00XX escapes.
 */
#include "grammar_int.h"

#include <stdlib.h>

#define RX_MAX_REPEAT 1000

const char wk__sc_char[] =
    "( [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" ( [0-9a-cA-C] [0-9a-fA-F]{3} | "
    "[dD] [0-7] [0-9a-fA-F]{2} | [eEfF] [0-9a-fA-F]{3} ) ) )";

struct rx {
    struct sc *c;
    const char *s;
    size_t n, pos;
    int depth;
};

/* A set of code points: sorted, merged ranges. */
struct cpset {
    uint32_t r[2 * 64];
    int n;
    bool too_many;
};

static void set_add(struct cpset *s, uint32_t lo, uint32_t hi)
{
    if (s->n >= 64) {
        s->too_many = true;
        return;
    }
    s->r[2 * s->n] = lo;
    s->r[2 * s->n + 1] = hi;
    s->n++;
}

static int cmp_range(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void set_norm(struct cpset *s)
{
    qsort(s->r, (size_t)s->n, 2 * sizeof(uint32_t), cmp_range);
    int m = 0;
    for (int i = 0; i < s->n; i++) {
        if (m > 0 && s->r[2 * i] <= s->r[2 * m - 1] + 1) {
            if (s->r[2 * i + 1] > s->r[2 * m - 1]) s->r[2 * m - 1] = s->r[2 * i + 1];
        } else {
            s->r[2 * m] = s->r[2 * i];
            s->r[2 * m + 1] = s->r[2 * i + 1];
            m++;
        }
    }
    s->n = m;
}

/* The complement of s within [0, top]. */
static void set_negate(struct cpset *s, uint32_t top)
{
    set_norm(s);
    struct cpset o = {.n = 0};
    uint32_t next = 0;
    for (int i = 0; i < s->n && next <= top; i++) {
        if (s->r[2 * i] > next) set_add(&o, next, s->r[2 * i] - 1 < top ? s->r[2 * i] - 1 : top);
        next = s->r[2 * i + 1] + 1;
    }
    if (next <= top) set_add(&o, next, top);
    o.too_many |= s->too_many;
    *s = o;
}

static bool set_has(const struct cpset *s, uint32_t cp)
{
    for (int i = 0; i < s->n; i++)
        if (cp >= s->r[2 * i] && cp <= s->r[2 * i + 1]) return true;
    return false;
}

/* Appends the alternatives writing one character of s in JSON; false if
 * s is empty. */
static bool emit_set(struct gbuf *out, struct cpset *s)
{
    set_norm(s);
    int n_alt = 0;
    struct gbuf b;
    wk__gbuf_init(&b, 1 << 20);
    /* plain characters: >= 0x20, not " or \ */
    bool any_plain = false;
    for (int i = 0; i < s->n; i++) {
        uint32_t lo = s->r[2 * i] < 0x20 ? 0x20 : s->r[2 * i], hi = s->r[2 * i + 1];
        for (uint32_t a = lo; a <= hi;) {
            uint32_t stop = hi;
            if (a <= 0x22 && stop >= 0x22) stop = a == 0x22 ? 0x22 : 0x21;
            else if (a <= 0x5c && stop >= 0x5c) stop = a == 0x5c ? 0x5c : 0x5b;
            if (a != 0x22 && a != 0x5c) {
                if (!any_plain) wk__gbuf_puts(&b, "[");
                any_plain = true;
                wk__gbuf_put_cp(&b, a);
                if (stop > a) {
                    wk__gbuf_puts(&b, "-");
                    wk__gbuf_put_cp(&b, stop);
                }
            }
            if (stop == 0x10ffff) break;
            a = stop + 1;
        }
    }
    if (any_plain) wk__gbuf_puts(&b, "]"), n_alt++;
    if (set_has(s, '"')) wk__gbuf_puts(&b, n_alt++ ? " | \"\\\\\\\"\"" : "\"\\\\\\\"\"");
    if (set_has(s, '\\')) wk__gbuf_puts(&b, n_alt++ ? " | \"\\\\\\\\\"" : "\"\\\\\\\\\"");
    static const char short_esc[32] = {['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r'};
    bool all_controls = s->n > 0 && s->r[0] == 0 && s->r[1] >= 0x1f;
    if (all_controls) { /* the usual case (., negated classes): two short paths */
        wk__gbuf_puts(&b, n_alt ? " | \"\\\\\" [bfnrt] | \"\\\\u00\" [01] [0-9a-f]" : "\"\\\\\" [bfnrt] | \"\\\\u00\" [01] [0-9a-f]");
        n_alt += 2;
    }
    for (uint32_t cp = 0; cp < 0x20 && !all_controls; cp++) {
        if (!set_has(s, cp)) continue;
        if (n_alt++) wk__gbuf_puts(&b, " | ");
        if (short_esc[cp]) wk__gbuf_printf(&b, "\"\\\\%c\"", short_esc[cp]);
        else wk__gbuf_printf(&b, "\"\\\\u00%02x\"", cp);
    }
    if (n_alt > 1) {
        wk__gbuf_puts(out, "( ");
        wk__gbuf_put(out, b.s, b.n);
        wk__gbuf_puts(out, " )");
    } else if (n_alt == 1) {
        wk__gbuf_put(out, b.s, b.n);
    }
    wk__gbuf_taint(out, &b);
    wk__gbuf_free(&b);
    return n_alt > 0;
}

static int unsup(struct rx *r, const char *what)
{
    return wk__sc_fail(r->c, WK_E_UNSUPPORTED, "pattern at %s: %s (at offset %zu of \"%.*s\")",
                       r->c->path, what, r->pos, (int)(r->n > 80 ? 80 : r->n), r->s);
}

static int hex(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* A shorthand class \d \w \s (upper case: its ASCII complement); false if
 * ch is none. */
static bool shorthand(char ch, struct cpset *s)
{
    char l = (char)(ch | 0x20);
    if (l != 'd' && l != 'w' && l != 's') return false;
    struct cpset t = {.n = 0};
    if (l == 'd') set_add(&t, '0', '9');
    if (l == 'w') set_add(&t, '0', '9'), set_add(&t, 'A', 'Z'), set_add(&t, 'a', 'z'), set_add(&t, '_', '_');
    if (l == 's') set_add(&t, ' ', ' '), set_add(&t, 0x09, 0x0d);
    if (ch != l) {
        set_negate(&t, 0x7f);
        if (l == 's') { /* Python's \s also has 0x1c-0x1f */
            struct cpset u = {.n = 0};
            set_add(&u, 0x21, 0x7e);
            t = u;
        }
    }
    for (int i = 0; i < t.n; i++) set_add(s, t.r[2 * i], t.r[2 * i + 1]);
    return true;
}

/* An escape after '\' (pos at the char after it) as one code point;
 * -1 unsupported, -2 a shorthand class (added to s). */
static int64_t escape(struct rx *r, struct cpset *s, bool in_class)
{
    char e = r->s[r->pos++];
    if (s && shorthand(e, s)) return -2;
    switch (e) {
    case 't': return '\t';
    case 'n': return '\n';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return '\v';
    case '0':
        if (r->pos < r->n && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') return -1;
        return 0;
    case 'x': case 'u': {
        int nd = e == 'x' ? 2 : 4;
        uint32_t v = 0;
        for (int i = 0; i < nd; i++) {
            int h = r->pos < r->n ? hex(r->s[r->pos]) : -1;
            if (h < 0) return -1;
            v = v * 16 + (uint32_t)h;
            r->pos++;
        }
        if (v >= 0xd800 && v <= 0xdfff) return -1;
        return v;
    }
    case 'b':
        return in_class ? 8 : -1;
    default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9') ||
            (unsigned char)e >= 0x80)
            return -1;
        return (unsigned char)e;
    }
}

/* One literal character at pos (UTF-8). */
static int64_t literal_cp(struct rx *r)
{
    uint32_t cp;
    int k = wk__utf8_decode((const uint8_t *)r->s + r->pos, r->n - r->pos, &cp);
    if (k == 0) return -1;
    r->pos += (size_t)k;
    return cp;
}

static int parse_class(struct rx *r, struct gbuf *out)
{
    r->pos++; /* [ */
    bool neg = false, has_short = false;
    struct cpset s = {.n = 0};
    if (r->pos < r->n && r->s[r->pos] == '^') neg = true, r->pos++;
    if (r->pos < r->n && r->s[r->pos] == ']') return unsup(r, "a class starting with ']'");
    while (r->pos < r->n && r->s[r->pos] != ']') {
        int64_t lo, hi;
        if (r->s[r->pos] == '\\') {
            r->pos++;
            if (r->pos >= r->n) return unsup(r, "a trailing backslash");
            lo = escape(r, &s, true);
            if (lo == -2) {
                has_short = true;
                continue;
            }
        } else {
            lo = literal_cp(r);
        }
        if (lo < 0) return unsup(r, "this escape or character in a class");
        hi = lo;
        if (r->pos + 1 < r->n && r->s[r->pos] == '-' && r->s[r->pos + 1] != ']') {
            r->pos++;
            if (r->s[r->pos] == '\\') {
                r->pos++;
                if (r->pos >= r->n) return unsup(r, "a trailing backslash");
                hi = escape(r, NULL, true);
            } else {
                hi = literal_cp(r);
            }
            if (hi < lo) return unsup(r, "a class range out of order or with a class escape");
        }
        set_add(&s, (uint32_t)lo, (uint32_t)hi);
    }
    if (r->pos >= r->n) return unsup(r, "an unterminated class");
    r->pos++;
    if (neg) set_negate(&s, has_short ? 0x7f : 0x10ffff);
    if (s.too_many) return unsup(r, "a class with too many ranges");
    return emit_set(out, &s) ? SC_OK : SC_NEVER;
}

static int parse_alt(struct rx *r, struct gbuf *out, bool top);

static int parse_atom(struct rx *r, struct gbuf *out, bool top)
{
    char ch = r->s[r->pos];
    struct cpset s = {.n = 0};
    if (ch == '(') {
        r->pos++;
        if (r->pos < r->n && r->s[r->pos] == '?') {
            if (r->pos + 1 < r->n && r->s[r->pos + 1] == ':') {
                r->pos += 2;
            } else if (r->pos + 2 < r->n && (r->s[r->pos + 1] == '<' || r->s[r->pos + 1] == 'P') &&
                       r->s[r->pos + 2] != '=' && r->s[r->pos + 2] != '!') {
                while (r->pos < r->n && r->s[r->pos] != '>') r->pos++;
                if (r->pos >= r->n) return unsup(r, "an unterminated group name");
                r->pos++;
            } else {
                return unsup(r, "lookaround or inline flags");
            }
        }
        if (++r->depth > 100) return unsup(r, "groups nested deeper than 100");
        wk__gbuf_puts(out, "( ");
        int st = parse_alt(r, out, false);
        if (st == SC_ERR) return st;
        if (r->pos >= r->n || r->s[r->pos] != ')') return unsup(r, "an unclosed group");
        r->pos++;
        r->depth--;
        wk__gbuf_puts(out, " )");
        return st;
    }
    if (ch == '[') return parse_class(r, out);
    if (ch == '.') {
        r->pos++;
        set_add(&s, 0, 0x10ffff);
        set_negate(&s, 0x10ffff); /* empty */
        set_add(&s, '\n', '\n'), set_add(&s, '\r', '\r'), set_add(&s, 0x2028, 0x2029);
        set_negate(&s, 0x10ffff);
        return emit_set(out, &s) ? SC_OK : SC_NEVER;
    }
    if (ch == '^' || ch == '$') return unsup(r, "an anchor inside the pattern");
    if (ch == '*' || ch == '+' || ch == '?' || ch == '{') return unsup(r, "a quantifier with nothing to repeat");
    if (ch == '\\') {
        r->pos++;
        if (r->pos >= r->n) return unsup(r, "a trailing backslash");
        if (r->s[r->pos] >= '1' && r->s[r->pos] <= '9') return unsup(r, "a backreference");
        if (r->s[r->pos] == 'b' || r->s[r->pos] == 'B') return unsup(r, "a word boundary");
        int64_t cp = escape(r, &s, false);
        if (cp == -1) return unsup(r, "this escape");
        if (cp >= 0) set_add(&s, (uint32_t)cp, (uint32_t)cp);
        return emit_set(out, &s) ? SC_OK : SC_NEVER;
    }
    (void)top;
    int64_t cp = literal_cp(r);
    if (cp < 0) return unsup(r, "invalid UTF-8");
    set_add(&s, (uint32_t)cp, (uint32_t)cp);
    return emit_set(out, &s) ? SC_OK : SC_NEVER;
}

static bool parse_count(struct rx *r, int32_t *v)
{
    int64_t x = 0;
    if (r->pos >= r->n || r->s[r->pos] < '0' || r->s[r->pos] > '9') return false;
    while (r->pos < r->n && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') {
        x = x * 10 + (r->s[r->pos++] - '0');
        if (x > 1000000) return false;
    }
    *v = (int32_t)x;
    return true;
}

/* A quantifier at pos, if any: *min, *max (-1 unbounded); 0 none, 1 one, -1 error. */
static int quantifier(struct rx *r, int32_t *mn, int32_t *mx)
{
    if (r->pos >= r->n) return 0;
    char ch = r->s[r->pos];
    if (ch == '*') *mn = 0, *mx = -1, r->pos++;
    else if (ch == '+') *mn = 1, *mx = -1, r->pos++;
    else if (ch == '?') *mn = 0, *mx = 1, r->pos++;
    else if (ch == '{') {
        r->pos++;
        if (!parse_count(r, mn)) return unsup(r, "a '{' that is not a quantifier"), -1;
        *mx = *mn;
        if (r->pos < r->n && r->s[r->pos] == ',') {
            r->pos++;
            *mx = -1;
            if (r->pos < r->n && r->s[r->pos] != '}' && !parse_count(r, mx))
                return unsup(r, "a bad quantifier"), -1;
        }
        if (r->pos >= r->n || r->s[r->pos] != '}') return unsup(r, "a bad quantifier"), -1;
        r->pos++;
        if (*mx >= 0 && *mx < *mn) return unsup(r, "a quantifier {n,m} with m < n"), -1;
        if (*mn > RX_MAX_REPEAT || *mx > RX_MAX_REPEAT)
            return unsup(r, "a repetition count over 1000"), -1;
    } else {
        return 0;
    }
    if (r->pos < r->n && r->s[r->pos] == '?') r->pos++; /* lazy: same language */
    if (r->pos < r->n && (r->s[r->pos] == '*' || r->s[r->pos] == '+' || r->s[r->pos] == '?' ||
                          r->s[r->pos] == '{'))
        return unsup(r, "a quantifier after a quantifier"), -1;
    return 1;
}

/* A sequence up to | or ) or the end; SC_NEVER if some atom matches nothing. */
static int parse_seq(struct rx *r, struct gbuf *out, bool top)
{
    bool never = false, any = false;
    while (r->pos < r->n && r->s[r->pos] != '|' && r->s[r->pos] != ')') {
        if (top && r->s[r->pos] == '$' && (r->pos + 1 == r->n || r->s[r->pos + 1] == '|')) break;
        struct gbuf a;
        wk__gbuf_init(&a, 1 << 22);
        int st = parse_atom(r, &a, top);
        int32_t mn = 1, mx = 1;
        int q = st == SC_ERR ? 0 : quantifier(r, &mn, &mx);
        if (st == SC_ERR || q < 0) {
            wk__gbuf_free(&a);
            return SC_ERR;
        }
        wk__gbuf_taint(out, &a);
        if (st == SC_NEVER) {
            if (mn > 0) never = true;
        } else if (mx != 0) {
            if (any) wk__gbuf_puts(out, " ");
            any = true;
            wk__gbuf_puts(out, "( ");
            wk__gbuf_put(out, a.s, a.n);
            wk__gbuf_puts(out, " )");
            if (mn == 0 && mx == -1) wk__gbuf_puts(out, "*");
            else if (mn == 1 && mx == -1) wk__gbuf_puts(out, "+");
            else if (mn == 0 && mx == 1) wk__gbuf_puts(out, "?");
            else if (mx == -1) wk__gbuf_printf(out, "{%d,}", mn);
            else if (mn != 1 || mx != 1) wk__gbuf_printf(out, "{%d,%d}", mn, mx);
        }
        wk__gbuf_free(&a);
    }
    if (!any) wk__gbuf_puts(out, "\"\"");
    return never ? SC_NEVER : SC_OK;
}

static int parse_alt(struct rx *r, struct gbuf *out, bool top)
{
    int n_ok = 0;
    (void)top;
    for (;;) {
        struct gbuf a;
        wk__gbuf_init(&a, 1 << 22);
        int st = parse_seq(r, &a, false);
        if (st == SC_ERR) {
            wk__gbuf_free(&a);
            return SC_ERR;
        }
        if (st == SC_OK) {
            if (n_ok++) wk__gbuf_puts(out, " | ");
            wk__gbuf_put(out, a.s, a.n);
        }
        wk__gbuf_taint(out, &a);
        wk__gbuf_free(&a);
        if (r->pos < r->n && r->s[r->pos] == '|') {
            r->pos++;
            continue;
        }
        break;
    }
    if (n_ok == 0) wk__gbuf_puts(out, "[^\\x00-\\U0010FFFF]"); /* keeps the group well formed; never */
    return n_ok ? SC_OK : SC_NEVER;
}

int wk__sc_regex(struct sc *c, const char *pat, size_t len, struct gbuf *out)
{
    struct rx r = {.c = c, .s = pat, .n = len};
    int n_ok = 0;
    for (;;) {
        bool start = false, end = false;
        if (r.pos < r.n && r.s[r.pos] == '^') start = true, r.pos++;
        struct gbuf a;
        wk__gbuf_init(&a, 1 << 22);
        int st = parse_seq(&r, &a, true);
        if (st != SC_ERR && r.pos < r.n && r.s[r.pos] == '$') end = true, r.pos++;
        if (st != SC_ERR && r.pos < r.n && r.s[r.pos] == ')') st = unsup(&r, "an unmatched ')'");
        if (st == SC_ERR) {
            wk__gbuf_free(&a);
            return SC_ERR;
        }
        if (st == SC_OK) {
            wk__gbuf_puts(out, n_ok++ ? " | ( " : "( ");
            if (!start) wk__gbuf_printf(out, "%s* ", wk__sc_char);
            wk__gbuf_put(out, a.s, a.n);
            if (!end) wk__gbuf_printf(out, " %s*", wk__sc_char);
            wk__gbuf_puts(out, " )");
        }
        wk__gbuf_taint(out, &a);
        wk__gbuf_free(&a);
        if (r.pos < r.n && r.s[r.pos] == '|') {
            r.pos++;
            continue;
        }
        break;
    }
    if (!out->ok) return wk__sc_fail(c, SC_BUF_STATUS(out), "pattern at %s: too large", c->path);
    return n_ok ? SC_OK : SC_NEVER;
}
