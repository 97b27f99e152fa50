/*
 * grammar_schema_types.c - JSON Schema strings and numbers as GBNF
 * (grammar_schema.c calls these for the "string", "number" and "integer"
 * branches of a schema), and the shared rules (any value, object, array,
 * string, number).
 *
 * Integers with bounds are exact: the range [lo, hi] is written as digit
 * ranges (per number of digits, then per first differing digit, as regex
 * range generators do). Integers have at most 18 digits (they fit an
 * int64 parser). Numbers with bounds have no exponent; their fractions
 * are bounded to the digit (see "numbers" below): [1.5, 1.6] allows 1.5,
 * 1.55 and 1.6 but not 1.61.
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

/*
 * A number text with a fraction ("1.25") is valid when the double
 * Python's float() reads from it (the nearest one) lies within the
 * bounds; reading is monotonic, so a text at or below the shortest
 * decimal of a double x reads as at most x. Each bound is therefore
 * first made an inclusive double bound (exclusive x: the next double
 * past x; an integer bound past 2^53: the nearest double inside it), then
 * written as its shortest decimal and rounded inward to the FRAC_DIGITS
 * grid the grammar writes; texts between two such grid bounds are all
 * valid, and every valid text of up to 15 significant digits is among
 * them (two such texts never read as the same double). A range with no
 * grid point inside gets the one text its lower bound reads back from.
 * Texts without a fraction are integers, which Python compares exactly:
 * those get the exact integer range.
 */
#define FRAC_DIGITS 16

struct dec { /* a decimal on the grid: -1^neg * ip.fr */
    bool neg;
    int64_t ip;
    char fr[FRAC_DIGITS + 1];
};

/* The shortest decimal (as %e) that reads back as x. */
static void shortest(double x, char *e, size_t n)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(e, n, "%.*e", prec - 1, x);
        if (strtod(e, NULL) == x) break;
    }
}

/* x as a grid decimal, rounded up (toward +inf) or down. false when its
 * integer part would pass INT_LIMIT. */
static bool dec_of(double x, bool up, struct dec *d)
{
    char e[40];
    shortest(x, e, sizeof e);
    const char *p = e;
    d->neg = *p == '-';
    if (d->neg) p++;
    char dig[24];
    int nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && nd < 20) dig[nd++] = *p;
    int ex = *p == 'e' ? atoi(p + 1) : 0; /* value = dig[0].dig[1..] * 10^ex */
    if (ex >= INT_DIGITS) return false;
    d->ip = 0;
    memset(d->fr, '0', FRAC_DIGITS);
    d->fr[FRAC_DIGITS] = '\0';
    bool rest = false; /* nonzero digits past the grid */
    for (int i = 0; i < nd; i++) {
        int pos = ex - i; /* 10^pos */
        if (pos >= 0) d->ip = d->ip * 10 + (dig[i] - '0');
        else if (-pos <= FRAC_DIGITS) d->fr[-pos - 1] = dig[i];
        else if (dig[i] != '0') rest = true;
    }
    for (int pos = ex - nd; pos >= 0; pos--) d->ip *= 10; /* digits ended before the point */
    if (rest && up != d->neg) { /* away from zero: one grid step more */
        int k = FRAC_DIGITS - 1;
        while (k >= 0 && d->fr[k] == '9') d->fr[k--] = '0';
        if (k >= 0) d->fr[k]++;
        else d->ip++;
    }
    if (d->ip == 0 && strspn(d->fr, "0") == FRAC_DIGITS) d->neg = false;
    return d->ip <= INT_LIMIT;
}

/* -1, 0 or 1 as a is below, at or above b. */
static int dec_cmp(const struct dec *a, const struct dec *b)
{
    int sa = a->neg ? -1 : 1, sb = b->neg ? -1 : 1;
    if (sa != sb) return sa < sb ? -1 : 1;
    int m = a->ip != b->ip ? (a->ip < b->ip ? -1 : 1) : strcmp(a->fr, b->fr);
    return m < 0 ? -sa : m > 0 ? sa : 0;
}

/*
 * The digit strings s of 0 (1 when need) to n digits whose value as a
 * fraction (s padded with zeros to n digits) lies in [lo, hi]; lo or hi
 * NULL: no bound on that side. Leaves 10 branches at most per digit.
 */
static void frac_range(struct gbuf *b, const char *lo, const char *hi, int n, bool need)
{
    if (lo && strspn(lo, "0") >= (size_t)n) lo = NULL;
    if (hi && strspn(hi, "9") >= (size_t)n) hi = NULL;
    if (n == 0) {
        wk__gbuf_puts(b, "\"\"");
        return;
    }
    if (!lo && (!hi || strspn(hi, "0") >= (size_t)n)) { /* any digits, or zeros only */
        wk__gbuf_printf(b, "%s{%d,%d}", hi ? "\"0\"" : "[0-9]", need ? 1 : 0, n);
        return;
    }
    char x = lo ? lo[0] : '0', y = hi ? hi[0] : '9';
    int alt = 0;
    wk__gbuf_puts(b, "( ");
    if (!need && !lo) wk__gbuf_printf(b, "%s\"\"", alt++ ? " | " : ""); /* zeros: above any lo */
    if (x == y) {
        wk__gbuf_printf(b, "%s\"%c\" ", alt++ ? " | " : "", x);
        frac_range(b, lo ? lo + 1 : NULL, hi ? hi + 1 : NULL, n - 1, false);
    } else {
        char m0 = lo ? x + 1 : x, m1 = hi ? y - 1 : y; /* first digits with any rest */
        if (lo) {
            wk__gbuf_printf(b, "%s\"%c\" ", alt++ ? " | " : "", x);
            frac_range(b, lo + 1, NULL, n - 1, false);
        }
        if (m0 <= m1) wk__gbuf_printf(b, "%s[%c-%c]", alt++ ? " | " : "", m0, m1);
        if (m0 <= m1 && n > 1) wk__gbuf_printf(b, " [0-9]{0,%d}", n - 1);
        if (hi) {
            wk__gbuf_printf(b, "%s\"%c\" ", alt++ ? " | " : "", y);
            frac_range(b, NULL, hi + 1, n - 1, false);
        }
    }
    wk__gbuf_puts(b, " )");
}

/* Texts I.F (F of 1..FRAC_DIGITS digits) of magnitude in [A, B] (B NULL:
 * no upper bound), A <= B, both non-negative, as alternatives. */
static void dec_magnitude(struct gbuf *b, const struct dec *A, const struct dec *B, int *n_alt)
{
    wk__gbuf_printf(b, "%s\"%lld.\" ", (*n_alt)++ ? " | " : "", (long long)A->ip);
    if (B && B->ip == A->ip) {
        frac_range(b, A->fr, B->fr, FRAC_DIGITS, true);
        return;
    }
    frac_range(b, A->fr, NULL, FRAC_DIGITS, true);
    struct gbuf t;
    wk__gbuf_init(&t, 1 << 20);
    int k = 0;
    if (!B || A->ip + 1 <= B->ip - 1) nonneg_range(&t, A->ip + 1, B ? B->ip - 1 : -1, &k);
    if (k) wk__gbuf_printf(b, " | ( %s ) \".\" [0-9]{1,%d}", t.s, FRAC_DIGITS);
    wk__gbuf_taint(b, &t);
    wk__gbuf_free(&t);
    if (B) {
        wk__gbuf_printf(b, " | \"%lld.\" ", (long long)B->ip);
        frac_range(b, NULL, B->fr, FRAC_DIGITS, true);
    }
    (*n_alt)++;
}

/* Texts with a fraction whose value lies in [L, H] (grid decimals; NULL:
 * unbounded), as alternatives; -0.x is never written. */
static void dec_range(struct gbuf *b, const struct dec *L, const struct dec *H, int *n_alt)
{
    struct dec zero = {false, 0, ""}, tiny = {false, 0, ""};
    memset(zero.fr, '0', FRAC_DIGITS);
    memcpy(tiny.fr, zero.fr, sizeof tiny.fr);
    tiny.fr[FRAC_DIGITS - 1] = '1';
    if (L && H && dec_cmp(L, H) > 0) return;
    if (!H || !H->neg) /* x >= 0 */
        dec_magnitude(b, L && !L->neg ? L : &zero, H, n_alt);
    if (!L || L->neg) { /* x < 0: -x in [max(-H, tiny), -L] */
        struct dec lo = tiny, hi;
        if (H && H->neg) lo = *H, lo.neg = false;
        if (L) hi = *L, hi.neg = false;
        struct gbuf u;
        wk__gbuf_init(&u, 1 << 20);
        int k = 0;
        dec_magnitude(&u, &lo, L ? &hi : NULL, &k);
        wk__gbuf_printf(b, "%s\"-\" ( %s )", (*n_alt)++ ? " | " : "", u.s);
        wk__gbuf_taint(b, &u);
        wk__gbuf_free(&u);
    }
}

/* A bound keyword, kept exact: integers as int64 (Python compares them
 * exactly), others as the double jansson read. */
struct nbound {
    bool has, is_int, excl;
    int64_t i;
    double d;
};

/* Reads a bound keyword: has false if absent; WK_E_INVALID if not a number. */
static int bound(struct sc *c, const json_t *s, const char *key, bool excl, struct nbound *b)
{
    const json_t *x = json_object_get(s, key);
    memset(b, 0, sizeof *b);
    b->excl = excl;
    if (!x) return SC_OK;
    if (!json_is_number(x))
        return wk__sc_fail(c, WK_E_INVALID, "%s at %s is not a number", key, c->path);
    b->has = true;
    b->is_int = json_is_integer(x);
    b->i = b->is_int ? json_integer_value(x) : 0;
    b->d = json_number_value(x);
    if (!isfinite(b->d)) return wk__sc_fail(c, WK_E_INVALID, "%s at %s is not finite", key, c->path);
    return SC_OK;
}

/* The least (upper: the greatest) integer the bound allows, clamped to
 * +-(INT_LIMIT + 1). */
static int64_t int_bound(const struct nbound *b, bool upper)
{
    const int64_t big = INT_LIMIT + 1;
    int64_t v;
    if (b->is_int) {
        v = b->i < -big ? -big : b->i > big ? big : b->i;
    } else {
        double d = b->d < -2e18 ? -2e18 : b->d > 2e18 ? 2e18 : b->d;
        v = (int64_t)(upper ? floor(d) : ceil(d));
        if (b->excl && (double)v == d) v += upper ? -1 : 1;
        return v < -big ? -big : v > big ? big : v;
    }
    return b->excl ? v + (upper ? -1 : 1) : v;
}

/* The least (upper: greatest) double x such that a value reading as x
 * satisfies the bound. */
static double dbl_bound(const struct nbound *b, bool upper)
{
    double dir = upper ? -INFINITY : INFINITY;
    if (!b->is_int) return b->excl ? nextafter(b->d, dir) : b->d;
    const int64_t e18 = INT_LIMIT + 1; /* past every text's magnitude */
    int64_t i = b->i < -e18 ? -e18 : b->i > e18 ? e18 : b->i;
    double x = (double)i; /* exact below 2^53, else the nearest: step inside when past i */
    int64_t xi = (int64_t)x;
    if ((upper ? xi > i : xi < i) || (b->excl && xi == i)) x = nextafter(x, dir);
    return x;
}

int wk__sc_number(struct sc *c, const json_t *s, bool integer, struct gbuf *out)
{
    struct nbound bd[4]; /* minimum, exclusiveMinimum, maximum, exclusiveMaximum */
    if (bound(c, s, "minimum", false, &bd[0]) == SC_ERR || bound(c, s, "exclusiveMinimum", true, &bd[1]) == SC_ERR ||
        bound(c, s, "maximum", false, &bd[2]) == SC_ERR || bound(c, s, "exclusiveMaximum", true, &bd[3]) == SC_ERR)
        return SC_ERR;
    if (!bd[0].has && !bd[1].has && !bd[2].has && !bd[3].has) {
        if (integer) {
            wk__gbuf_puts(out, "( \"-\"? ( \"0\" | [1-9] [0-9]{0,17} ) )");
        } else {
            c->used |= SC_NUMBER;
            wk__gbuf_puts(out, "number");
        }
        return SC_OK;
    }
    const double lim = 9e17;
    for (int k = 0; k < 4; k++)
        if (bd[k].has && (k < 2 ? bd[k].d > lim : bd[k].d < -lim))
            return wk__sc_fail(c, WK_E_UNSUPPORTED, "bounds at %s: beyond +-9e17", c->path);
    /* the tightest of each kind */
    int64_t ilo = -(INT_LIMIT + 1), ihi = INT_LIMIT + 1;
    double dlo = -INFINITY, dhi = INFINITY;
    for (int k = 0; k < 4; k++) {
        if (!bd[k].has) continue;
        bool up = k >= 2;
        int64_t iv = int_bound(&bd[k], up);
        double dv = dbl_bound(&bd[k], up);
        if (up) ihi = iv < ihi ? iv : ihi, dhi = dv < dhi ? dv : dhi;
        else ilo = iv > ilo ? iv : ilo, dlo = dv > dlo ? dv : dlo;
    }
    struct gbuf t;
    wk__gbuf_init(&t, 1 << 22);
    int n_alt = 0;
    struct gbuf ints;
    wk__gbuf_init(&ints, 1 << 20);
    if (int_range(c, ilo > -(INT_LIMIT + 1), ilo, ihi < INT_LIMIT + 1, ihi, &ints) == SC_OK) {
        wk__gbuf_put(&t, ints.s, ints.n);
        n_alt++;
    }
    wk__gbuf_taint(&t, &ints);
    wk__gbuf_free(&ints);
    if (!integer) {
        struct dec L, H; /* grid bounds: up from dlo, down from dhi */
        bool has_l = dlo > -INFINITY && dec_of(dlo, true, &L);
        bool has_h = dhi < INFINITY && dec_of(dhi, false, &H);
        dec_range(&t, has_l ? &L : NULL, has_h ? &H : NULL, &n_alt);
        if (n_alt == 0 && dlo <= dhi) { /* narrower than the grid: the one text dlo reads back from */
            char e[40];
            shortest(dlo, e, sizeof e);
            wk__gbuf_printf(&t, "\"%s\"", e);
            n_alt++;
        }
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
