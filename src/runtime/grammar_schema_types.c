/*
 * grammar_schema_types.c - JSON Schema strings and numbers as GBNF
 * (grammar_schema.c calls these for the "string", "number" and "integer"
 * branches of a schema), and the shared rules (any value, object, array,
 * string, number).
 *
 * Integers with bounds are exact: the range [lo, hi] is written as digit
 * ranges (per number of digits, then per first differing digit, as regex
 * range generators do). Integers have at most 18 digits (they fit an
 * int64 parser). Numbers with bounds have no exponent, and their bounds
 * are moved inward to whole numbers (x >= 1.5 becomes x >= 2): what is
 * written stays valid, and the fraction is handled exactly against whole
 * bounds (x > 3 allows 3.5 and 4; x <= 3 allows 3 and 3.0 but not 3.1).
 */
#include "grammar_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define INT_DIGITS 18
#define INT_LIMIT 999999999999999999LL /* 18 nines */

/* ---------------------------------------------------------- digit ranges */

/*
 * Appends the n-digit strings (leading zeros allowed) from lo[0..n) to
 * hi[0..n), lo <= hi, as a GBNF expression.
 */
static void digits_range(struct gbuf *b, const char *lo, const char *hi, int n)
{
    int i = 0;
    while (i < n && lo[i] == hi[i]) i++;
    if (i > 0) wk__gbuf_printf(b, "\"%.*s\" ", i, lo);
    if (i == n) return;
    int r = n - i - 1;
    bool lo_zeros = true, hi_nines = true;
    for (int k = i + 1; k < n; k++) {
        if (lo[k] != '0') lo_zeros = false;
        if (hi[k] != '9') hi_nines = false;
    }
    if (lo_zeros && hi_nines) {
        wk__gbuf_printf(b, "[%c-%c]", lo[i], hi[i]);
        if (r) wk__gbuf_printf(b, " [0-9]{%d}", r);
        return;
    }
    char nines[INT_DIGITS + 2], zeros[INT_DIGITS + 2];
    memset(nines, '9', sizeof nines);
    memset(zeros, '0', sizeof zeros);
    wk__gbuf_puts(b, "( ");
    char x = lo[i], y = hi[i];
    if (lo_zeros) { /* x..y-1 full, then y with the bounded rest */
        wk__gbuf_printf(b, "[%c-%c]", x, (char)(y - 1));
        if (r) wk__gbuf_printf(b, " [0-9]{%d}", r);
        wk__gbuf_printf(b, " | \"%c\" ", y);
        digits_range(b, zeros, hi + i + 1, r);
    } else {
        wk__gbuf_printf(b, "\"%c\" ", x);
        digits_range(b, lo + i + 1, nines, r);
        if (y - x >= 2) {
            wk__gbuf_printf(b, " | [%c-%c]", (char)(x + 1), (char)(y - 1));
            if (r) wk__gbuf_printf(b, " [0-9]{%d}", r);
        }
        if (hi_nines) {
            wk__gbuf_printf(b, " | \"%c\"", y);
            if (r) wk__gbuf_printf(b, " [0-9]{%d}", r);
        } else {
            wk__gbuf_printf(b, " | \"%c\" ", y);
            digits_range(b, zeros, hi + i + 1, r);
        }
    }
    wk__gbuf_puts(b, " )");
}

static int n_digits(int64_t v)
{
    int d = 1;
    while (v >= 10) v /= 10, d++;
    return d;
}

/* Non-negative integers in [a, b] (b < 0: no upper bound), no leading
 * zeros, as alternatives appended after " | " when *n_alt > 0. */
static void nonneg_range(struct gbuf *b, int64_t a, int64_t hi, int *n_alt)
{
    int64_t top = hi < 0 ? INT_LIMIT : hi;
    if (a > top) return;
    for (int d = n_digits(a); d <= n_digits(top); d++) {
        int64_t p = 1;
        for (int k = 1; k < d; k++) p *= 10;
        int64_t lo_d = d == 1 ? 0 : p, hi_d = p * 10 - 1;
        if (lo_d < a) lo_d = a;
        if (hi_d > top) hi_d = top;
        if (lo_d > hi_d) continue;
        if (*n_alt > 0) wk__gbuf_puts(b, " | ");
        (*n_alt)++;
        char l[32], h[32];
        snprintf(l, sizeof l, "%0*lld", d & 31, (long long)lo_d);
        snprintf(h, sizeof h, "%0*lld", d & 31, (long long)hi_d);
        if (hi < 0 && lo_d == p && d > 1) { /* d digits and more: any */
            wk__gbuf_printf(b, "[1-9] [0-9]{%d,%d}", d - 1, INT_DIGITS - 1);
            return;
        }
        digits_range(b, l, h, d);
    }
}

/* Integers in [lo, hi] (has_lo/has_hi false: unbounded on that side). */
static int int_range(struct sc *c, bool has_lo, int64_t lo, bool has_hi, int64_t hi,
                     struct gbuf *out)
{
    if (!has_lo) lo = -INT_LIMIT;
    if (!has_hi) hi = INT_LIMIT;
    if (lo < -INT_LIMIT) lo = -INT_LIMIT;
    if (hi > INT_LIMIT) hi = INT_LIMIT;
    if (lo > hi) return SC_NEVER;
    int n_alt = 0;
    wk__gbuf_puts(out, "( ");
    if (lo < 0) { /* negative part: magnitudes max(1, -hi) .. -lo */
        int64_t a = hi < 0 ? -hi : 1, b2 = -lo;
        struct gbuf t;
        wk__gbuf_init(&t, 1 << 20);
        int k = 0;
        nonneg_range(&t, a, has_lo ? b2 : -1, &k);
        if (k) {
            wk__gbuf_printf(out, "\"-\" ( %s )", t.s);
            n_alt++;
        }
        wk__gbuf_taint(out, &t);
        wk__gbuf_free(&t);
    }
    if (hi >= 0) nonneg_range(out, lo > 0 ? lo : 0, has_hi ? hi : -1, &n_alt);
    wk__gbuf_puts(out, " )");
    (void)c;
    return n_alt ? SC_OK : SC_NEVER;
}

/* ------------------------------------------------------------- numbers */

static const char FRAC_ANY[] = "( \".\" [0-9]{1,16} )?";
static const char FRAC_ZERO[] = "( \".\" \"0\"{1,16} )?";
static const char FRAC_NONZERO[] = "\".\" \"0\"{0,15} [1-9] [0-9]{0,15}";

/*
 * Magnitudes I.F with A < M or A <= M (a_excl) and M <= B or M < B
 * (b_excl; b_inf: none), integers; n_alt counts alternatives written.
 */
static void magnitude(struct gbuf *b, int64_t A, bool a_excl, int64_t B, bool b_excl, bool b_inf,
                      int *n_alt)
{
    int64_t any_lo = a_excl ? A + 1 : A, any_hi = b_inf ? -1 : B - 1;
    struct gbuf t;
    wk__gbuf_init(&t, 1 << 20);
    int k = 0;
    if (b_inf || any_lo <= any_hi) nonneg_range(&t, any_lo, any_hi, &k);
    if (k) {
        wk__gbuf_printf(b, "%s( %s ) %s", (*n_alt)++ ? " | " : "", t.s, FRAC_ANY);
    }
    if (a_excl && (b_inf || A < B)) /* I == A with a nonzero fraction */
        wk__gbuf_printf(b, "%s\"%lld\" %s", (*n_alt)++ ? " | " : "", (long long)A, FRAC_NONZERO);
    if (!b_inf && !b_excl && B >= A && !(a_excl && A == B)) /* I == B, zero fraction */
        wk__gbuf_printf(b, "%s\"%lld\" %s", (*n_alt)++ ? " | " : "", (long long)B, FRAC_ZERO);
    wk__gbuf_taint(b, &t);
    wk__gbuf_free(&t);
}

/* Reads a bound keyword: false if absent; WK_E_INVALID if not a number. */
static int bound(struct sc *c, const json_t *s, const char *key, bool *has, double *v)
{
    const json_t *x = json_object_get(s, key);
    *has = false;
    if (!x) return SC_OK;
    if (!json_is_number(x))
        return wk__sc_fail(c, WK_E_INVALID, "%s at %s is not a number", key, c->path);
    *has = true;
    *v = json_number_value(x);
    if (!isfinite(*v)) return wk__sc_fail(c, WK_E_INVALID, "%s at %s is not finite", key, c->path);
    return SC_OK;
}

int wk__sc_number(struct sc *c, const json_t *s, bool integer, struct gbuf *out)
{
    bool h_min, h_max, h_xmin, h_xmax;
    double vmin = 0, vmax = 0, vxmin = 0, vxmax = 0;
    if (bound(c, s, "minimum", &h_min, &vmin) == SC_ERR || bound(c, s, "maximum", &h_max, &vmax) == SC_ERR ||
        bound(c, s, "exclusiveMinimum", &h_xmin, &vxmin) == SC_ERR ||
        bound(c, s, "exclusiveMaximum", &h_xmax, &vxmax) == SC_ERR)
        return SC_ERR;
    if (!h_min && !h_max && !h_xmin && !h_xmax) {
        if (integer) {
            wk__gbuf_puts(out, "( \"-\"? ( \"0\" | [1-9] [0-9]{0,17} ) )");
        } else {
            c->used |= SC_NUMBER;
            wk__gbuf_puts(out, "number");
        }
        return SC_OK;
    }
    const double lim = 9e17;
    /* the tightest lower bound as (value, exclusive), likewise upper */
    double lo = -INFINITY, hi = INFINITY;
    bool lo_x = false, hi_x = false;
    if (h_min) lo = vmin;
    if (h_xmin && (vxmin > lo || (vxmin == lo && !lo_x))) lo = vxmin, lo_x = true;
    if (h_max) hi = vmax;
    if (h_xmax && (vxmax < hi || (vxmax == hi && !hi_x))) hi = vxmax, hi_x = true;
    if (lo > lim || hi < -lim) return wk__sc_fail(c, WK_E_UNSUPPORTED, "bounds at %s: beyond +-9e17", c->path);
    if (integer) {
        int64_t ilo = 0, ihi = 0;
        if (lo > -lim) ilo = lo_x ? (int64_t)floor(lo) + 1 : (int64_t)ceil(lo);
        if (hi < lim) ihi = hi_x ? (int64_t)ceil(hi) - 1 : (int64_t)floor(hi);
        return int_range(c, lo > -lim, ilo, hi < lim, ihi, out);
    }
    /* whole bounds: a non-whole bound moves inward and becomes inclusive */
    bool has_lo = lo > -lim, has_hi = hi < lim;
    if (has_lo && lo != floor(lo)) lo = ceil(lo), lo_x = false;
    if (has_hi && hi != floor(hi)) hi = floor(hi), hi_x = false;
    int64_t L = has_lo ? (int64_t)lo : 0, H = has_hi ? (int64_t)hi : 0;
    if (has_lo && has_hi && (L > H || (L == H && (lo_x || hi_x)))) return SC_NEVER;
    int n_alt = 0;
    struct gbuf t;
    wk__gbuf_init(&t, 1 << 22);
    /* x >= 0: M = x */
    bool pos_ok = !has_hi || H > 0 || (H == 0 && !hi_x);
    if (pos_ok) {
        int64_t A = 0;
        bool ax = false;
        if (has_lo && (L > 0 || (L == 0 && lo_x))) A = L, ax = lo_x;
        magnitude(&t, A, ax, has_hi ? H : 0, hi_x, !has_hi, &n_alt);
    }
    /* x < 0: M = -x > 0 with -lo bounding it above and -hi below */
    if (!has_lo || L < 0) {
        struct gbuf u;
        wk__gbuf_init(&u, 1 << 22);
        int k = 0;
        int64_t A = 0;
        bool ax = true;
        if (has_hi && H < 0) A = -H, ax = hi_x;
        magnitude(&u, A, ax, has_lo ? -L : 0, lo_x, !has_lo, &k);
        if (k) wk__gbuf_printf(&t, "%s\"-\" ( %s )", n_alt++ ? " | " : "", u.s);
        wk__gbuf_taint(&t, &u);
        wk__gbuf_free(&u);
    }
    if (n_alt) wk__gbuf_printf(out, "( %s )", t.s);
    wk__gbuf_taint(out, &t);
    wk__gbuf_free(&t);
    return n_alt ? SC_OK : SC_NEVER;
}

/* ------------------------------------------------------------- strings */

static const char OCTET[] = "( \"25\" [0-5] | \"2\" [0-4] [0-9] | \"1\" [0-9] [0-9] | [1-9] [0-9] | [0-9] )";
static const char DATE[] =
    "[12] [0-9]{3} \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] ) | "
    "( \"0\" [469] | \"11\" ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"30\" ) | "
    "\"02\" \"-\" ( \"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8] ) )";
static const char TIME[] =
    "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,6} )? "
    "( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )";

/* The GBNF of a supported format's text (no quotes), or NULL. */
static void format_expr(const char *f, struct gbuf *b)
{
    if (!strcmp(f, "date")) {
        wk__gbuf_puts(b, DATE);
    } else if (!strcmp(f, "time")) {
        wk__gbuf_puts(b, TIME);
    } else if (!strcmp(f, "date-time")) {
        wk__gbuf_printf(b, "%s \"T\" %s", DATE, TIME);
    } else if (!strcmp(f, "uuid")) {
        wk__gbuf_puts(b, "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}");
    } else if (!strcmp(f, "json-pointer")) {
        wk__gbuf_puts(b, "( \"/\" ( [^/~\"\\\\\\x00-\\x1F] | \"~\" [01] )* )*");
    } else if (!strcmp(f, "email") || !strcmp(f, "idn-email")) {
        wk__gbuf_puts(b, "[a-zA-Z0-9_+-]+ ( \".\" [a-zA-Z0-9_+-]+ )* \"@\" [a-zA-Z0-9] [a-zA-Z0-9-]* "
                         "( \".\" [a-zA-Z0-9] [a-zA-Z0-9-]* )* \".\" [a-zA-Z]{2,12}");
    } else if (!strcmp(f, "uri")) {
        wk__gbuf_puts(b, "[a-zA-Z] [a-zA-Z0-9+.-]* \"://\" [a-zA-Z0-9] [a-zA-Z0-9.-]* ( \":\" [0-9]{1,5} )? "
                         "( \"/\" [a-zA-Z0-9._~!$&'()*+,;=:@-]* )* ( \"?\" [a-zA-Z0-9._~!$&'()*+,;=:@/?-]* )?");
    } else if (!strcmp(f, "ipv4")) {
        wk__gbuf_printf(b, "%s \".\" %s \".\" %s \".\" %s", OCTET, OCTET, OCTET, OCTET);
    } else {
        b->ok = false;
    }
}

/* A non-negative integer keyword (minLength, ...): -1 absent, -2 error. */
static int64_t count_kw(struct sc *c, const json_t *s, const char *key)
{
    const json_t *x = json_object_get(s, key);
    if (!x) return -1;
    double v = json_number_value(x);
    if (!json_is_number(x) || v < 0 || v != floor(v)) {
        wk__sc_fail(c, WK_E_INVALID, "%s at %s is not a non-negative integer", key, c->path);
        return -2;
    }
    return v > 1e9 ? 1000000000 : (int64_t)v;
}

int wk__sc_string(struct sc *c, const json_t *s, struct gbuf *out)
{
    int64_t mn = count_kw(c, s, "minLength"), mx = count_kw(c, s, "maxLength");
    if (mn == -2 || mx == -2) return SC_ERR;
    if (mn < 0) mn = 0;
    if (mx >= 0 && mx < mn) return SC_NEVER;
    const json_t *fmt = json_object_get(s, "format"), *pat = json_object_get(s, "pattern");
    if (pat && !json_is_string(pat)) return wk__sc_fail(c, WK_E_INVALID, "pattern at %s is not a string", c->path);
    if (fmt && json_is_string(fmt)) {
        struct gbuf b;
        wk__gbuf_init(&b, 1 << 16);
        format_expr(json_string_value(fmt), &b);
        bool ok = b.ok;
        if (ok && (pat || mn > 0 || mx >= 0)) {
            wk__gbuf_free(&b);
            return wk__sc_fail(c, WK_E_UNSUPPORTED, "format with pattern or minLength/maxLength at %s",
                               c->path);
        }
        if (ok) {
            wk__gbuf_puts(out, "( \"\\\"\" ");
            wk__gbuf_put(out, b.s, b.n);
            wk__gbuf_puts(out, " \"\\\"\" )");
        }
        wk__gbuf_free(&b);
        if (!ok)
            return wk__sc_fail(c, WK_E_UNSUPPORTED, "format \"%.60s\" at %s is not supported",
                               json_string_value(fmt), c->path);
        return SC_OK;
    }
    if (pat) {
        if (mn > 0 || mx >= 0)
            return wk__sc_fail(c, WK_E_UNSUPPORTED, "pattern with minLength/maxLength at %s", c->path);
        struct gbuf b;
        wk__gbuf_init(&b, 1 << 24);
        wk__gbuf_puts(&b, "\"\\\"\" ( ");
        int st = wk__sc_regex(c, json_string_value(pat), json_string_length(pat), &b);
        wk__gbuf_puts(&b, " ) \"\\\"\"");
        if (st == SC_OK) st = wk__sc_rule(c, b.s, out);
        wk__gbuf_free(&b);
        return st;
    }
    if (mn == 0 && mx < 0) {
        c->used |= SC_STRING;
        wk__gbuf_puts(out, "string");
        return SC_OK;
    }
    if (mn > 10000 || mx > 10000)
        return wk__sc_fail(c, WK_E_UNSUPPORTED, "minLength/maxLength over 10000 at %s", c->path);
    struct gbuf b;
    wk__gbuf_init(&b, 1 << 16);
    c->used |= SC_CHAR;
    if (mx < 0) wk__gbuf_printf(&b, "\"\\\"\" char{%lld,} \"\\\"\"", (long long)mn);
    else wk__gbuf_printf(&b, "\"\\\"\" char{%lld,%lld} \"\\\"\"", (long long)mn, (long long)mx);
    int st = wk__sc_rule(c, b.s, out);
    wk__gbuf_free(&b);
    return st;
}

void wk__sc_shared_rules(struct sc *c)
{
    uint32_t u = c->used;
    if (u & SC_VALUE) u |= SC_OBJECT | SC_ARRAY | SC_STRING | SC_NUMBER;
    if (u & SC_OBJECT) u |= SC_STRING | SC_VALUE;
    if (u & SC_ARRAY) u |= SC_VALUE;
    if (u & SC_VALUE) u |= SC_OBJECT | SC_ARRAY | SC_STRING | SC_NUMBER;
    struct gbuf *b = &c->rules;
    if (u & SC_VALUE)
        wk__gbuf_puts(b, "value ::= object | array | string | number | \"true\" | \"false\" | \"null\"\n");
    if (u & SC_OBJECT)
        wk__gbuf_puts(b, "object ::= \"{\" ( string \":\" \" \"? value ( \",\" \" \"? string \":\" \" \"? value )* )? \"}\"\n");
    if (u & SC_ARRAY) wk__gbuf_puts(b, "array ::= \"[\" ( value ( \",\" \" \"? value )* )? \"]\"\n");
    if (u & SC_STRING) wk__gbuf_printf(b, "string ::= \"\\\"\" %s* \"\\\"\"\n", wk__sc_char);
    if (u & SC_CHAR) wk__gbuf_printf(b, "char ::= %s\n", wk__sc_char);
    if (u & SC_NUMBER)
        wk__gbuf_puts(b, "number ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,17} ) ( \".\" [0-9]{1,16} )? "
                         "( [eE] [-+]? [0-9]{1,2} )?\n");
}
