/*
 * gotmpl_fmt.c - Go's fmt for the text/template engine: printing a value
 * as %v does (maps with sorted keys, lists, Go structs, String methods),
 * the verbs of printf with their flags, widths, precisions, * and [n]
 * argument indexes (fmt.Sprintf's doPrintf, Go 1.19), print and println.
 * The algorithm follows Go's src/fmt (print.go, format.go); the code is
 * wick's own.
 */
#include "gotmpl_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Go's fmt refuses widths and precisions past this (fmt's tooLarge). */
#define FMT_MAX_NUM 1000000

struct spec {
    int verb; /* a rune */
    bool minus, plus, zero, sharp, space;
    bool plus_v, sharp_v; /* %+v, %#v */
    bool erroring;        /* inside %!verb(...): no String methods */
    bool deref;           /* an action's print: a pointer's struct without & */
    int width, prec;      /* -1: none */
};

static bool format_value(struct gt_buf *b, const json_t *v, const struct spec *sp, int depth);

/* ---------------------------------------------------------------- padding */

static size_t rune_count(const char *s, size_t n)
{
    size_t runes = 0;
    for (size_t i = 0; i < n; i++)
        runes += ((unsigned char)s[i] & 0xC0) != 0x80;
    return runes;
}

/* n padding bytes: '0' with the zero flag, else ' '. */
static bool padding(struct gt_buf *b, long n, bool zero)
{
    for (long i = 0; i < n; i++)
        if (!gt_buf_char(b, zero ? '0' : ' ')) return false;
    return true;
}

/* fmt's pad: s[0..n) padded to the width (by runes), the bytes in the
 * spans src[0..n_src) of s marked content. */
static bool pad_src(struct gt_buf *b, const char *s, size_t n, const struct spec *sp, bool zero,
                    const struct gt_span *src, size_t n_src)
{
    long fill = sp->width > 0 ? (long)sp->width - (long)rune_count(s, n) : 0;
    if (!sp->minus && !padding(b, fill, zero)) return false;
    if (!gt_buf_add_marked(b, s, n, src, n_src)) return false;
    return !sp->minus || padding(b, fill, zero);
}

static bool pad(struct gt_buf *b, const char *s, size_t n, const struct spec *sp)
{
    return pad_src(b, s, n, sp, sp->zero, NULL, 0);
}

static bool pad_str(struct gt_buf *b, const char *s, const struct spec *sp)
{
    return pad(b, s, strlen(s), sp);
}

/* ------------------------------------------------------------------ runes */

/* Encodes cp (past U+10FFFF or a surrogate: U+FFFD) as UTF-8 into out. */
static size_t utf8_put(char *out, uint64_t cp)
{
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    if (cp < 0x80) return out[0] = (char)cp, 1;
    if (cp < 0x800) return out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 63)), 2;
    if (cp < 0x10000)
        return out[0] = (char)(0xE0 | cp >> 12), out[1] = (char)(0x80 | ((cp >> 6) & 63)),
               out[2] = (char)(0x80 | (cp & 63)), 3;
    out[0] = (char)(0xF0 | cp >> 18), out[1] = (char)(0x80 | ((cp >> 12) & 63));
    out[2] = (char)(0x80 | ((cp >> 6) & 63)), out[3] = (char)(0x80 | (cp & 63));
    return 4;
}

/* Decodes the rune at s[0..n) into *cp: its length, 0 for a byte that
 * does not start valid UTF-8 (*cp the byte). */
static size_t utf8_get(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t len = u[0] < 0x80                   ? 1
                 : u[0] >= 0xC2 && u[0] < 0xE0 ? 2
                 : u[0] >= 0xE0 && u[0] < 0xF0 ? 3
                 : u[0] >= 0xF0 && u[0] < 0xF5 ? 4
                                               : 0;
    *cp = u[0];
    if (len == 0 || len > n) return 0;
    uint32_t c = len == 1 ? u[0] : len == 2 ? u[0] & 0x1F : len == 3 ? u[0] & 0x0F : u[0] & 0x07;
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) return 0;
        c = c << 6 | (u[i] & 63);
    }
    static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return len;
}

/* strconv.IsPrint, approximately (without Unicode's tables): controls,
 * U+00AD, the line and paragraph separators, U+FEFF, private use areas,
 * noncharacters and surrogates are not printable; other runes are (Go
 * also escapes unassigned ones). */
static bool is_print(uint32_t cp)
{
    return cp >= 0x20 && cp != 0x7F && !(cp >= 0x80 && cp < 0xA0) && cp != 0xAD && cp != 0x2028 &&
           cp != 0x2029 && cp != 0xFEFF && cp < 0xF0000 && !(cp >= 0xD800 && cp <= 0xF8FF) &&
           !(cp >= 0xFDD0 && cp <= 0xFDEF) && (cp & 0xFFFE) != 0xFFFE;
}

/* Appends rune cp as strconv's quoting writes it inside quote q (' or "):
 * printable ones as they are (ascii: only ASCII ones), the rest escaped. */
static bool quote_rune(struct gt_buf *b, uint32_t cp, char q, bool ascii)
{
    static const char esc[] = "\a\ab\bf\fn\nr\rt\tv\v";
    if (cp == (uint32_t)q || cp == '\\') return gt_buf_char(b, '\\') && gt_buf_char(b, (char)cp);
    if (is_print(cp) && (!ascii || cp < 0x80)) {
        char u[4];
        return gt_buf_add(b, u, utf8_put(u, cp));
    }
    for (const char *e = esc; *e; e += 2)
        if ((uint32_t)e[1] == cp) return gt_buf_char(b, '\\') && gt_buf_char(b, e[0]);
    if (cp < 0x20 || cp == 0x7F) return gt_buf_fmt(b, "\\x%02x", (unsigned)cp);
    if (cp < 0x10000) return gt_buf_fmt(b, "\\u%04x", (unsigned)cp);
    return gt_buf_fmt(b, "\\U%08x", (unsigned)cp);
}

/* strconv.Quote (ascii: QuoteToASCII) of s[0..n); the escapes of bytes in
 * the spans src[0..n_src) are marked content. */
static bool quote(struct gt_buf *b, const char *s, size_t n, bool ascii, const struct gt_span *src,
                  size_t n_src)
{
    if (!gt_buf_char(b, '"')) return false;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = utf8_get(s + i, n - i, &cp), from = b->n;
        bool ok = len ? quote_rune(b, cp, '"', ascii) : gt_buf_fmt(b, "\\x%02x", cp);
        if (!ok || (gt_span_has(src, n_src, &k, i) && !gt_buf_mark(b, from, b->n))) return false;
        i += len ? len : 1;
    }
    return gt_buf_char(b, '"');
}

/* strconv.CanBackquote: one line of valid UTF-8 without ` or controls
 * (but tab) or U+FEFF. */
static bool can_backquote(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = utf8_get(s + i, n - i, &cp);
        if (!len || cp == '`' || cp == 0xFEFF || (cp < 0x20 && cp != '\t') || cp == 0x7F)
            return false;
        i += len;
    }
    return true;
}

/* --------------------------------------------------------------- the verbs */

/* Whether the verb (a rune) is one of set. */
static bool verb_in(int verb, const char *set)
{
    return verb > 0 && verb < 0x80 && strchr(set, verb);
}

static bool put_verb(struct gt_buf *b, int verb)
{
    char u[4];
    return gt_buf_add(b, u, utf8_put(u, (uint64_t)verb));
}

/* %!verb(type=value) */
static bool bad_verb(struct gt_buf *b, const json_t *v, const struct spec *sp)
{
    if (!gt_buf_str(b, "%!") || !put_verb(b, sp->verb) || !gt_buf_char(b, '(')) return false;
    if (!v) return gt_buf_str(b, "<nil>)");
    struct spec sv = *sp;
    sv.verb = 'v', sv.erroring = true;
    return gt_buf_str(b, gt_type_name(b->prov, v)) && gt_buf_char(b, '=') &&
           format_value(b, v, &sv, 0) && gt_buf_char(b, ')');
}

/* fmt's fmtInteger: u in base with Go's precision, zero and sharp rules. */
static bool fmt_integer(struct gt_buf *b, uint64_t u, bool is_signed, int base, const char *digits,
                        const struct spec *sp)
{
    bool negative = is_signed && (int64_t)u < 0;
    if (negative) u = 0 - u;
    if (sp->prec == 0 && u == 0)
        return padding(b, sp->width, false); /* %.0d of 0: only the padding */
    long prec = 0;
    if (sp->prec >= 0)
        prec = sp->prec;
    else if (sp->zero && sp->width >= 0)
        prec = sp->width - (negative || sp->plus || sp->space);
    size_t cap =
        80 + (size_t)(sp->width > 0 ? sp->width : 0) + (size_t)(sp->prec > 0 ? sp->prec : 0);
    char stack[96], *buf = cap <= sizeof stack ? stack : wk_malloc(cap);
    if (!buf) return b->st = WK_E_NOMEM, false;
    struct spec nz = *sp;
    nz.zero = false;
    size_t i = cap;
    do
        buf[--i] = digits[u % (uint64_t)base];
    while ((u /= (uint64_t)base) != 0);
    while (i > 0 && prec > (long)(cap - i))
        buf[--i] = '0';
    if (sp->sharp && base == 2) buf[--i] = 'b', buf[--i] = '0';
    if (sp->sharp && base == 8 && buf[i] != '0') buf[--i] = '0';
    if (sp->sharp && base == 16) buf[--i] = digits[16], buf[--i] = '0';
    if (sp->verb == 'O') buf[--i] = 'o', buf[--i] = '0';
    if (negative)
        buf[--i] = '-';
    else if (sp->plus)
        buf[--i] = '+';
    else if (sp->space)
        buf[--i] = ' ';
    bool ok = pad(b, buf + i, cap - i, &nz);
    if (buf != stack) wk_free(buf);
    return ok;
}

/* fmt's fmtUnicode: U+0041, with # U+0041 'A'. */
static bool fmt_unicode(struct gt_buf *b, uint64_t u, const struct spec *sp)
{
    long prec = sp->prec > 4 ? sp->prec : 4;
    size_t cap = (size_t)prec + 32, i = cap;
    char stack[64], *buf = cap <= sizeof stack ? stack : wk_malloc(cap);
    if (!buf) return b->st = WK_E_NOMEM, false;
    if (sp->sharp && u <= 0x10FFFF && is_print((uint32_t)u)) {
        char r[4];
        size_t n = utf8_put(r, u);
        buf[--i] = '\'';
        i -= n;
        memcpy(buf + i, r, n);
        buf[--i] = '\'', buf[--i] = ' ';
    }
    do
        buf[--i] = "0123456789ABCDEF"[u & 15], prec--;
    while ((u >>= 4) != 0);
    while (prec-- > 0)
        buf[--i] = '0';
    buf[--i] = '+', buf[--i] = 'U';
    struct spec nz = *sp;
    nz.zero = false;
    bool ok = pad(b, buf + i, cap - i, &nz);
    if (buf != stack) wk_free(buf);
    return ok;
}

static bool format_int(struct gt_buf *b, int64_t i, const struct spec *sp)
{
    uint64_t u = (uint64_t)i;
    char tmp[16];
    switch (sp->verb) {
    case 'v':
    case 'd':
        return fmt_integer(b, u, true, 10, "0123456789abcdefx", sp);
    case 'b':
        return fmt_integer(b, u, true, 2, "0123456789abcdefx", sp);
    case 'o':
    case 'O':
        return fmt_integer(b, u, true, 8, "0123456789abcdefx", sp);
    case 'x':
        return fmt_integer(b, u, true, 16, "0123456789abcdefx", sp);
    case 'X':
        return fmt_integer(b, u, true, 16, "0123456789ABCDEFX", sp);
    case 'c':
        return pad(b, tmp, utf8_put(tmp, u), sp);
    case 'q': {
        struct gt_buf t = {.max = 64};
        uint32_t cp = u > 0x10FFFF || (u >= 0xD800 && u <= 0xDFFF) ? 0xFFFD : (uint32_t)u;
        bool ok = gt_buf_char(&t, '\'') && quote_rune(&t, cp, '\'', sp->plus) &&
                  gt_buf_char(&t, '\'') && pad(b, t.p, t.n, sp);
        gt_buf_free(&t);
        return ok;
    }
    case 'U':
        return fmt_unicode(b, u, sp);
    default:
        return bad_verb(b, NULL, sp);
    }
}

/* strconv's %b and %x / %X of a (finite, >= 0): the binary exponent forms
 * (strconv's fmtB, fmtX; prec -1: the shortest). */
static bool float_bits(struct gt_buf *t, double a, int verb, int prec)
{
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    int exp = (int)(bits >> 52) & 0x7FF;
    uint64_t mant = bits & ((1ULL << 52) - 1);
    if (exp == 0)
        exp++; /* denormal */
    else
        mant |= 1ULL << 52;
    exp -= 1023;
    if (verb == 'b')
        return gt_buf_fmt(t, "%llup%c%d", (unsigned long long)mant, exp - 52 >= 0 ? '+' : '-',
                          abs(exp - 52));
    const char *hex = verb == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    if (mant == 0) exp = 0;
    mant <<= 60 - 52; /* the leading 1 (if any) at bit 60 */
    while (mant != 0 && (mant & (1ULL << 60)) == 0)
        mant <<= 1, exp--;
    if (prec >= 0 && prec < 15) { /* round to prec hex digits */
        unsigned shift = (unsigned)prec * 4;
        uint64_t extra = (mant << shift) & ((1ULL << 60) - 1);
        mant >>= 60 - shift;
        if ((extra | (mant & 1)) > 1ULL << 59) mant++;
        mant <<= 60 - shift;
        if (mant & (1ULL << 61)) mant >>= 1, exp++;
    }
    bool ok = gt_buf_char(t, '0') && gt_buf_char(t, (char)verb) &&
              gt_buf_char(t, (char)('0' + ((mant >> 60) & 1)));
    mant <<= 4;
    if ((prec < 0 && mant != 0) || prec > 0) {
        ok = ok && gt_buf_char(t, '.');
        for (int i = 0; ok && (prec < 0 ? mant != 0 : i < prec); i++, mant <<= 4)
            ok = gt_buf_char(t, hex[(mant >> 60) & 15]);
    }
    return ok && gt_buf_fmt(t, "%c%c%02d", verb == 'X' ? 'P' : 'p', exp < 0 ? '-' : '+', abs(exp));
}

/* The digits of a (finite, >= 0) as strconv.AppendFloat(a, verb, prec)
 * writes them. */
static bool float_digits(struct gt_buf *t, double a, int verb, int prec)
{
    if (verb == 'b' || verb == 'x' || verb == 'X') return float_bits(t, a, verb, prec);
    if (prec < 0) { /* %v, %g, %G: the shortest */
        size_t from = t->n;
        bool ok = gt_format_float(t, a, false);
        for (size_t i = from; ok && verb == 'G' && i < t->n; i++)
            t->p[i] = t->p[i] == 'e' ? 'E' : t->p[i];
        return ok;
    }
    char fm[8];
    snprintf(fm, sizeof fm, "%%.*%c", verb == 'F' ? 'f' : verb);
    int len = snprintf(NULL, 0, fm, prec, a);
    char *s = len >= 0 ? wk_malloc((size_t)len + 1) : NULL;
    if (s) snprintf(s, (size_t)len + 1, fm, prec, a);
    bool ok = s && gt_buf_add(t, s, (size_t)len);
    if (!s) t->st = WK_E_NOMEM;
    wk_free(s);
    return ok;
}

/* fmt's # for floats: a decimal point always, the trailing zeros of %g
 * (up to the precision, 6 by default) kept; num[0] is the sign. */
static bool float_sharp(struct gt_buf *t, int verb, int prec)
{
    int digits = verb == 'g' || verb == 'G' || verb == 'x' ? (prec < 0 ? 6 : prec) : 0;
    char tail[16] = "";
    bool point = false, nonzero = false;
    for (size_t i = 1; i < t->n; i++) {
        char c = t->p[i];
        if (c == '.') {
            point = true;
        } else if (c == 'p' || c == 'P' || ((c == 'e' || c == 'E') && verb != 'x' && verb != 'X')) {
            snprintf(tail, sizeof tail, "%.*s", (int)(t->n - i), t->p + i);
            t->n = i;
            break;
        } else {
            nonzero |= c != '0';
            if (nonzero) digits--;
        }
    }
    if (!point) {
        if (t->n == 2 && t->p[1] == '0') digits--;
        if (!gt_buf_char(t, '.')) return false;
    }
    for (; digits > 0; digits--)
        if (!gt_buf_char(t, '0')) return false;
    return gt_buf_str(t, tail);
}

/* fmt's fmtFloat: verb 'g' with prec -1 is the shortest form (%v). */
static bool fmt_float(struct gt_buf *b, double f, int verb, int prec, const struct spec *sp)
{
    if (sp->prec >= 0) prec = sp->prec;
    struct gt_buf t = {.max = b->max};
    bool ok = gt_buf_char(&t, signbit(f) && !isnan(f) ? '-' : '+');
    if (ok && (isinf(f) || isnan(f)))
        ok = gt_buf_str(&t, isinf(f) ? "Inf" : "NaN");
    else if (ok)
        ok = float_digits(&t, fabs(f), verb, prec);
    if (ok && sp->sharp && verb != 'b' && t.p[1] != 'I' && t.p[1] != 'N')
        ok = float_sharp(&t, verb, prec);
    if (!ok) {
        b->st = t.st ? t.st : WK_E_NOMEM;
        gt_buf_free(&t);
        return false;
    }
    char *num = t.p;
    size_t n = t.n;
    if (sp->space && num[0] == '+' && !sp->plus) num[0] = ' ';
    struct spec s2 = *sp;
    if (num[1] == 'I' || num[1] == 'N') { /* +Inf, NaN: no zero padding */
        s2.zero = false;
        if (num[1] == 'N' && !sp->space && !sp->plus) num++, n--;
        ok = pad(b, num, n, &s2);
    } else if (sp->plus || num[0] != '+') {
        if (sp->zero && sp->width >= 0 && (size_t)sp->width > n)
            ok = gt_buf_char(b, num[0]) && padding(b, (long)(sp->width - (long)n), true) &&
                 gt_buf_add(b, num + 1, n - 1);
        else
            ok = pad(b, num, n, sp);
    } else {
        ok = pad(b, num + 1, n - 1, sp);
    }
    gt_buf_free(&t);
    return ok;
}

static bool format_real(struct gt_buf *b, double f, const struct spec *sp)
{
    switch (sp->verb) {
    case 'v':
        return fmt_float(b, f, 'g', -1, sp);
    case 'b':
    case 'x':
    case 'X':
    case 'g':
    case 'G':
        return fmt_float(b, f, sp->verb, -1, sp);
    case 'f':
    case 'F':
    case 'e':
    case 'E':
        return fmt_float(b, f, sp->verb, 6, sp);
    default:
        return bad_verb(b, NULL, sp);
    }
}

/* fmt's fmtSbx: %x / %X of the bytes of s. */
static bool format_hex(struct gt_buf *b, const char *s, size_t n, const struct spec *sp)
{
    const char *digits = sp->verb == 'X' ? "0123456789ABCDEFX" : "0123456789abcdefx";
    size_t length = sp->prec >= 0 && (size_t)sp->prec < n ? (size_t)sp->prec : n;
    size_t width = 2 * length;
    if (width == 0) return padding(b, sp->width, sp->zero);
    if (sp->space)
        width = (sp->sharp ? 2 * width : width) + length - 1;
    else if (sp->sharp)
        width += 2;
    long fill = sp->width > 0 ? (long)sp->width - (long)width : 0;
    if (!sp->minus && !padding(b, fill, sp->zero)) return false;
    if (sp->sharp && (!gt_buf_char(b, '0') || !gt_buf_char(b, digits[16]))) return false;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)s[i];
        if (sp->space && i > 0 &&
            (!gt_buf_char(b, ' ') ||
             (sp->sharp && (!gt_buf_char(b, '0') || !gt_buf_char(b, digits[16])))))
            return false;
        if (!gt_buf_char(b, digits[c >> 4]) || !gt_buf_char(b, digits[c & 15])) return false;
    }
    return !sp->minus || padding(b, fill, sp->zero);
}

/* fmt's fmtString of s[0..n) (content spans src[0..n_src)). */
static bool format_bytes(struct gt_buf *b, const json_t *v, const char *s, size_t n,
                         const struct gt_span *src, size_t n_src, const struct spec *sp)
{
    int verb = sp->verb;
    if (verb == 'x' || verb == 'X') return format_hex(b, s, n, sp);
    if (verb != 'v' && verb != 's' && verb != 'q') return bad_verb(b, v, sp);
    if (sp->prec >= 0) { /* at most prec runes */
        size_t i = 0;
        for (int r = 0; i < n && r < sp->prec; r++)
            for (i++; i < n && ((unsigned char)s[i] & 0xC0) == 0x80; i++) {
            }
        n = i;
    }
    if (verb == 'q' || (verb == 'v' && sp->sharp_v)) {
        struct gt_buf t = {.max = (size_t)-1 / 4, .prov = b->prov};
        bool ok = sp->sharp && can_backquote(s, n) /* %#q: `s` */
                      ? gt_buf_char(&t, '`') && gt_buf_add_marked(&t, s, n, src, n_src) &&
                            gt_buf_char(&t, '`')
                      : quote(&t, s, n, sp->plus, src, n_src);
        ok = ok && pad_src(b, t.p ? t.p : "", t.n, sp, sp->zero, t.spans, t.n_spans);
        if (t.st != WK_OK) b->st = t.st;
        gt_buf_free(&t);
        return ok;
    }
    return pad_src(b, s, n, sp, sp->zero, src, n_src);
}

static bool format_string(struct gt_buf *b, const json_t *v, const struct spec *sp)
{
    size_t n_src;
    const struct gt_span *src = gt_prov_get(b->prov, v, &n_src);
    return format_bytes(b, v, json_string_value(v), json_string_length(v), src, n_src, sp);
}

/* --------------------------------------------------------------- compound */

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of object v, sorted; NULL when out of memory. */
static const char **sorted_keys(const json_t *v, size_t *n)
{
    *n = json_object_size(v);
    const char **keys = wk_malloc((*n ? *n : 1) * sizeof *keys);
    if (!keys) return NULL;
    size_t k = 0;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val) keys[k++] = key;
    qsort(keys, *n, sizeof *keys, cmp_keys);
    return keys;
}

static bool format_map(struct gt_buf *b, const json_t *v, const struct spec *sp, int depth)
{
    size_t n;
    const char **keys = sorted_keys(v, &n);
    if (!keys) return b->st = WK_E_NOMEM, false;
    bool ok = gt_buf_str(b, "map[");
    for (size_t i = 0; i < n && ok; i++) {
        json_t *k = json_string_nocheck(keys[i]);
        ok = k && (!i || gt_buf_char(b, ' ')) && format_value(b, k, sp, depth + 1) &&
             gt_buf_char(b, ':') && format_value(b, json_object_get(v, keys[i]), sp, depth + 1);
        if (!k) b->st = WK_E_NOMEM;
        json_decref(k);
    }
    wk_free(keys);
    return ok && gt_buf_char(b, ']');
}

/* A String method's text for v of type ty (nil: a nil value), as the
 * verb prints a string. */
static bool format_stringer(struct gt_buf *b, const json_t *v, const struct gt_type *ty, bool nil,
                            const struct spec *sp)
{
    struct gt_buf t = {.max = b->max, .prov = b->prov};
    bool ok;
    if (nil)
        ok = gt_buf_str(&t, ty->nil_text ? ty->nil_text : "null");
    else if (ty->show == GS_JSON)
        ok = gt_json_encode(&t, v, 0);
    else if (json_array_size(v) == 1)
        ok = gt_print_value(&t, json_array_get(v, 0)); /* PropertyType */
    else if (json_array_size(v) == 0)
        ok = true;
    else {
        ok = gt_buf_char(&t, '[');
        for (size_t i = 0; ok && i < json_array_size(v); i++)
            ok = (!i || gt_buf_char(&t, ' ')) && gt_print_value(&t, json_array_get(v, i));
        ok = ok && gt_buf_char(&t, ']');
    }
    ok = ok && format_bytes(b, NULL, t.p ? t.p : "", t.n, t.spans, t.n_spans, sp);
    if (t.st != WK_OK) b->st = t.st;
    gt_buf_free(&t);
    return ok;
}

static bool format_struct(struct gt_buf *b, const json_t *v, const struct gt_type *ty,
                          const struct spec *sp, int depth);

/* A nil pointer of type ty, as fmt's fmtPointer prints it: <nil> for %v,
 * 0 for the integer verbs, else %!verb(type=<nil>). */
static bool format_nil_pointer(struct gt_buf *b, const struct gt_type *ty, const struct spec *sp)
{
    if (sp->verb == 'v') return pad_str(b, "<nil>", sp);
    if (verb_in(sp->verb, "bodxX"))
        return fmt_integer(b, 0, false,
                           sp->verb == 'b'   ? 2
                           : sp->verb == 'o' ? 8
                           : sp->verb == 'd' ? 10
                                             : 16,
                           sp->verb == 'X' ? "0123456789ABCDEFX" : "0123456789abcdefx", sp);
    struct spec sv = *sp;
    sv.verb = 'v';
    return gt_buf_str(b, "%!") && put_verb(b, sp->verb) && gt_buf_fmt(b, "(%s=", ty->name) &&
           pad_str(b, "<nil>", &sv) && gt_buf_char(b, ')');
}

/* A field's zero value, printed. */
static bool format_zero(struct gt_buf *b, const struct gt_field *f, const struct spec *sp,
                        int depth)
{
    const struct gt_type *ty = f->type;
    bool stringer = ty && ty->show != GS_PLAIN && !sp->erroring && verb_in(sp->verb, "vsxXq");
    switch (f->zero) {
    case GZ_ANY:
        return format_value(b, NULL, sp, depth);
    case GZ_PTR:
        return format_nil_pointer(b, ty, sp);
    case GZ_SLICE:
    case GZ_MAP:
        if (stringer) return format_stringer(b, NULL, ty, true, sp);
        return gt_buf_str(b, f->zero == GZ_SLICE ? "[]" : "map[]");
    default:
        break;
    }
    json_t *z = f->zero == GZ_STRING ? json_string("")
                : f->zero == GZ_INT  ? json_integer(0)
                                     : json_object();
    if (!z) return b->st = WK_E_NOMEM, false;
    bool ok =
        f->zero == GZ_STRUCT ? format_struct(b, z, ty, sp, depth) : format_value(b, z, sp, depth);
    json_decref(z);
    return ok;
}

/* A Go struct: {field field ...}, with %+v {Name:field ...}. */
static bool format_struct(struct gt_buf *b, const json_t *v, const struct gt_type *ty,
                          const struct spec *sp, int depth)
{
    if ((ty->pointer && !(sp->deref && depth == 0) && !gt_buf_char(b, '&')) || !gt_buf_char(b, '{'))
        return false;
    for (int i = 0; i < ty->n_fields; i++) {
        const struct gt_field *f = &ty->fields[i];
        const json_t *m = json_object_get(v, f->key);
        if ((i && !gt_buf_char(b, ' ')) || (sp->plus_v && !gt_buf_fmt(b, "%s:", f->name)))
            return false;
        if (!(m && !json_is_null(m) ? format_value(b, m, sp, depth + 1)
                                    : format_zero(b, f, sp, depth + 1)))
            return false;
    }
    return gt_buf_char(b, '}');
}

static bool format_compound(struct gt_buf *b, const json_t *v, const struct spec *sp, int depth)
{
    if (depth > WK_GOTMPL_MAX_DEPTH) return gt_buf_str(b, "...");
    bool nil;
    const struct gt_type *ty = gt_prov_type(b->prov, v, &nil);
    if (ty && ty->kind == GT_STRUCT && nil) return format_nil_pointer(b, ty, sp);
    if (ty && ty->show != GS_PLAIN && !sp->erroring && verb_in(sp->verb, "vsxXq"))
        return format_stringer(b, v, ty, nil, sp); /* a String method */
    if (ty && ty->kind == GT_STRUCT) return format_struct(b, v, ty, sp, depth);
    if (json_is_object(v)) return format_map(b, v, sp, depth);
    if (!gt_buf_char(b, '[')) return false;
    for (size_t i = 0; i < json_array_size(v); i++)
        if ((i && !gt_buf_char(b, ' ')) || !format_value(b, json_array_get(v, i), sp, depth + 1))
            return false;
    return gt_buf_char(b, ']');
}

/* Formats v with the verb of sp, as fmt does (depth > 0: inside a list,
 * map or struct). */
static bool format_value(struct gt_buf *b, const json_t *v, const struct spec *sp, int depth)
{
    int verb = sp->verb;
    if (!v || json_is_null(v)) { /* inside a list or map: a nil interface */
        if (depth > 0) return gt_buf_str(b, "<nil>");
        if (verb == 'v' || verb == 'T') return pad_str(b, "<nil>", sp);
        return bad_verb(b, NULL, sp);
    }
    if (verb == 'T') { /* fmt's fmtS: at most prec runes, padded */
        const char *name = gt_type_name(b->prov, v);
        size_t n = strlen(name);
        for (size_t i = 0, r = 0; sp->prec >= 0 && i < n; i++)
            if (((unsigned char)name[i] & 0xC0) != 0x80 && r++ == (size_t)sp->prec) n = i;
        return pad(b, name, n, sp);
    }
    switch (json_typeof(v)) {
    case JSON_TRUE:
    case JSON_FALSE:
        if (verb != 'v' && verb != 't') return bad_verb(b, v, sp);
        return pad_str(b, json_is_true(v) ? "true" : "false", sp);
    case JSON_INTEGER:
        if (!verb_in(verb, "vdboOxXcqU")) return bad_verb(b, v, sp);
        return format_int(b, (int64_t)json_integer_value(v), sp);
    case JSON_REAL:
        if (!verb_in(verb, "vbxXfFeEgG")) return bad_verb(b, v, sp);
        return format_real(b, json_real_value(v), sp);
    case JSON_STRING:
        return format_string(b, v, sp);
    default:
        return format_compound(b, v, sp, depth);
    }
}

bool gt_print_value(struct gt_buf *b, const json_t *v)
{
    struct spec sp = {.verb = 'v', .width = -1, .prec = -1};
    return format_value(b, v, &sp, 0);
}

bool gt_print_action(struct gt_buf *b, const json_t *v)
{
    struct spec sp = {.verb = 'v', .width = -1, .prec = -1, .deref = true};
    return format_value(b, v, &sp, 0);
}

/* ------------------------------------------------------------------ printf */

/* fmt's parsenum: digits at f[*i]; past FMT_MAX_NUM: *i = n, not a number. */
static bool parse_num(const char *f, size_t n, size_t *i, int *num)
{
    bool is_num = false;
    *num = 0;
    for (; *i < n && f[*i] >= '0' && f[*i] <= '9'; (*i)++) {
        if (*num > FMT_MAX_NUM) {
            *i = n, *num = 0;
            return false;
        }
        *num = *num * 10 + (f[*i] - '0');
        is_num = true;
    }
    return is_num;
}

struct pf {
    const char *f;
    size_t n, i;
    json_t *const *args;
    int n_args, arg;
    bool reordered, good;
};

/* fmt's argNumber: an explicit [n] at f[i]; whether one was there. */
static bool arg_number(struct pf *p)
{
    if (p->i >= p->n || p->f[p->i] != '[') return false;
    p->reordered = true;
    if (p->n - p->i < 3) {
        p->i++, p->good = false;
        return false;
    }
    for (size_t j = p->i + 1; j < p->n; j++) {
        if (p->f[j] != ']') continue;
        size_t k = p->i + 1;
        int num;
        bool ok = parse_num(p->f, j, &k, &num) && k == j;
        p->i = j + 1;
        if (ok && num >= 1 && num - 1 < p->n_args) {
            p->arg = num - 1;
            return true;
        }
        p->good = false;
        return ok;
    }
    p->i++, p->good = false; /* no closing bracket: skip the [ */
    return false;
}

/* fmt's intFromArg: *num from the next argument (an int within range). */
static bool int_from_arg(struct pf *p, int *num)
{
    *num = 0;
    if (p->arg >= p->n_args) return false;
    const json_t *a = p->args[p->arg++];
    if (!json_is_integer(a)) return false;
    json_int_t v = json_integer_value(a);
    if (v > FMT_MAX_NUM || v < -FMT_MAX_NUM) return false;
    *num = (int)v;
    return true;
}

/* The flags, argument index, width and precision of one verb (after %). */
static bool parse_spec(struct pf *p, struct gt_buf *b, struct spec *sp)
{
    for (; p->i < p->n; p->i++) {
        char c = p->f[p->i];
        if (c == '#')
            sp->sharp = true;
        else if (c == '0')
            sp->zero = !sp->minus;
        else if (c == '+')
            sp->plus = true;
        else if (c == '-')
            sp->minus = true, sp->zero = false;
        else if (c == ' ')
            sp->space = true;
        else
            break;
    }
    bool after = arg_number(p);
    int num;
    if (p->i < p->n && p->f[p->i] == '*') {
        p->i++;
        if (!int_from_arg(p, &num)) {
            if (!gt_buf_str(b, "%!(BADWIDTH)")) return false;
        } else if (num < 0) {
            sp->width = -num, sp->minus = true, sp->zero = false;
        } else {
            sp->width = num;
        }
        after = false;
    } else {
        if (parse_num(p->f, p->n, &p->i, &num)) sp->width = num;
        if (after && sp->width >= 0) p->good = false;
    }
    if (p->i + 1 < p->n && p->f[p->i] == '.') {
        p->i++;
        if (after) p->good = false;
        after = arg_number(p);
        if (p->i < p->n && p->f[p->i] == '*') {
            p->i++;
            bool ok = int_from_arg(p, &num);
            sp->prec = ok && num >= 0 ? num : -1;
            if (sp->prec < 0 && !gt_buf_str(b, "%!(BADPREC)")) return false;
            after = false;
        } else {
            sp->prec = parse_num(p->f, p->n, &p->i, &num) ? num : 0;
        }
    }
    if (!after) arg_number(p);
    return true;
}

bool gt_sprintf(struct gt_buf *b, const char *f, size_t n, json_t *const *args, int n_args)
{
    struct pf p = {.f = f, .n = n, .args = args, .n_args = n_args};
    while (p.i < n) {
        size_t last = p.i;
        while (p.i < n && f[p.i] != '%')
            p.i++;
        if (p.i > last && !gt_buf_add(b, f + last, p.i - last)) return false;
        if (p.i >= n) break;
        p.i++;
        p.good = true;
        struct spec sp = {.width = -1, .prec = -1};
        if (!parse_spec(&p, b, &sp)) return false;
        if (p.i >= n) {
            if (!gt_buf_str(b, "%!(NOVERB)")) return false;
            break;
        }
        uint32_t cp;
        size_t len = utf8_get(f + p.i, n - p.i, &cp);
        p.i += len ? len : 1;
        sp.verb = len ? (int)cp : 0xFFFD;
        bool ok;
        if (sp.verb == '%') {
            ok = gt_buf_char(b, '%');
        } else if (!p.good) {
            ok = gt_buf_str(b, "%!") && put_verb(b, sp.verb) && gt_buf_str(b, "(BADINDEX)");
        } else if (p.arg >= n_args) {
            ok = gt_buf_str(b, "%!") && put_verb(b, sp.verb) && gt_buf_str(b, "(MISSING)");
        } else {
            if (sp.verb == 'v')
                sp.sharp_v = sp.sharp, sp.sharp = false, sp.plus_v = sp.plus, sp.plus = false;
            ok = format_value(b, args[p.arg++], &sp, 0);
        }
        if (!ok) return false;
    }
    if (!p.reordered && p.arg < n_args) {
        if (!gt_buf_str(b, "%!(EXTRA ")) return false;
        for (int k = p.arg; k < n_args; k++) {
            if (k > p.arg && !gt_buf_str(b, ", ")) return false;
            if (!args[k] ? !gt_buf_str(b, "<nil>")
                         : !gt_buf_fmt(b, "%s=", gt_type_name(b->prov, args[k])) ||
                               !gt_print_value(b, args[k]))
                return false;
        }
        return gt_buf_char(b, ')');
    }
    return true;
}

bool gt_sprint(struct gt_buf *b, json_t *const *args, int n, bool ln)
{
    for (int i = 0; i < n; i++) {
        bool sep = ln ? i > 0 : i > 0 && !json_is_string(args[i]) && !json_is_string(args[i - 1]);
        if ((sep && !gt_buf_char(b, ' ')) || !gt_print_value(b, args[i])) return false;
    }
    return !ln || gt_buf_char(b, '\n');
}
