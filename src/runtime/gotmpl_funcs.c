/*
 * gotmpl_funcs.c - the values and built-in functions of the Go
 * text/template engine: the output buffer, Go's truth, fmt's printing of
 * values (%v and the verbs of printf), json (Go's json.Marshal) and the
 * functions not, len, index, slice, eq, ne, lt, le, gt, ge, print, printf,
 * println.
 */
#include "gotmpl_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- buffer */

bool gt_buf_add(struct gt_buf *b, const char *s, size_t n)
{
    if (b->st != WK_OK) return false;
    if (n > b->max - b->n || b->n > b->max) {
        b->st = WK_E_RANGE;
        return false;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = wk_realloc(b->p, cap);
        if (!p) {
            b->st = WK_E_NOMEM;
            return false;
        }
        b->p = p, b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    return true;
}

bool gt_buf_str(struct gt_buf *b, const char *s)
{
    return gt_buf_add(b, s, strlen(s));
}

bool gt_buf_char(struct gt_buf *b, char c)
{
    return gt_buf_add(b, &c, 1);
}

bool gt_buf_fmt(struct gt_buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) k = 0;
    return gt_buf_add(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* ----------------------------------------------------------------- values */

bool gt_truth(const json_t *v)
{
    if (!v) return false;
    switch (json_typeof(v)) {
    case JSON_TRUE: return true;
    case JSON_INTEGER: return json_integer_value(v) != 0;
    case JSON_REAL: return json_real_value(v) != 0;
    case JSON_STRING: return json_string_length(v) > 0;
    case JSON_ARRAY: return json_array_size(v) > 0;
    case JSON_OBJECT: return json_object_size(v) > 0;
    default: return false;
    }
}

const char *gt_type_name(const json_t *v)
{
    if (!v || json_is_null(v)) return "<nil>";
    switch (json_typeof(v)) {
    case JSON_TRUE:
    case JSON_FALSE: return "bool";
    case JSON_INTEGER: return "int";
    case JSON_REAL: return "float64";
    case JSON_STRING: return "string";
    case JSON_ARRAY: return "[]interface {}";
    default: return "map[string]interface {}";
    }
}

/* The shortest decimal digits of f (finite, > 0) that read back as f:
 * digits[0..*nd) and the exponent of the first digit. */
static void shortest(double f, char *digits, int *nd, int *exp10)
{
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f || prec == 17) break;
    }
    char *e = strchr(tmp, 'e');
    *exp10 = atoi(e + 1);
    int k = 0;
    for (char *q = tmp; q < e; q++)
        if (*q >= '0' && *q <= '9') digits[k++] = *q;
    while (k > 1 && digits[k - 1] == '0') k--;
    *nd = k;
}

/*
 * Formats f shortest: as fmt's %v (strconv 'g', precision -1: exponent
 * form when the exponent is < -4 or >= 6, at least two exponent digits),
 * or (json) as encoding/json does (exponent form when |f| < 1e-6 or
 * >= 1e21, exponent without leading zeros).
 */
bool gt_format_float(struct gt_buf *b, double f, bool json)
{
    if (isnan(f)) return gt_buf_str(b, "NaN");
    if (isinf(f)) return gt_buf_str(b, f > 0 ? "+Inf" : "-Inf");
    if (f == 0) return gt_buf_str(b, signbit(f) && !json ? "-0" : "0");
    char d[24];
    int nd, x;
    if (f < 0 && !gt_buf_char(b, '-')) return false;
    shortest(fabs(f), d, &nd, &x);
    double a = fabs(f);
    bool sci = json ? (a < 1e-6 || a >= 1e21) : (x < -4 || x >= 6);
    if (sci) {
        if (!gt_buf_char(b, d[0])) return false;
        if (nd > 1 && (!gt_buf_char(b, '.') || !gt_buf_add(b, d + 1, (size_t)nd - 1))) return false;
        if (json) return gt_buf_fmt(b, "e%c%d", x < 0 ? '-' : '+', abs(x));
        return gt_buf_fmt(b, "e%c%02d", x < 0 ? '-' : '+', abs(x));
    }
    if (x < 0) {
        if (!gt_buf_str(b, "0.")) return false;
        for (int i = 0; i < -x - 1; i++)
            if (!gt_buf_char(b, '0')) return false;
        return gt_buf_add(b, d, (size_t)nd);
    }
    for (int i = 0; i <= x; i++)
        if (!gt_buf_char(b, i < nd ? d[i] : '0')) return false;
    if (nd > x + 1) return gt_buf_char(b, '.') && gt_buf_add(b, d + x + 1, (size_t)(nd - x - 1));
    return true;
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of object v, sorted; NULL when out of memory (or empty). */
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

/* ------------------------------------------------------------- fmt verbs */

struct spec {
    char verb;
    bool minus, plus, zero, sharp, space;
    int width, prec; /* -1: none */
};

static bool format_value(struct gt_buf *b, const json_t *v, const struct spec *sp, int depth);

/* Writes s[0..n) padded to the width of sp, the bytes in the spans
 * src[0..n_src) of s marked content. */
static bool pad_src(struct gt_buf *b, const char *s, size_t n, const struct spec *sp,
                    const struct gt_span *src, size_t n_src)
{
    size_t runes = 0;
    for (size_t i = 0; i < n; i++) runes += ((unsigned char)s[i] & 0xC0) != 0x80;
    size_t w = sp->width > 0 ? (size_t)sp->width : 0, fill = w > runes ? w - runes : 0;
    if (!sp->minus)
        for (size_t i = 0; i < fill; i++)
            if (!gt_buf_char(b, ' ')) return false;
    if (!gt_buf_add_marked(b, s, n, src, n_src)) return false;
    if (sp->minus)
        for (size_t i = 0; i < fill; i++)
            if (!gt_buf_char(b, ' ')) return false;
    return true;
}

/* Writes s[0..n) padded to the width of sp. */
static bool pad(struct gt_buf *b, const char *s, size_t n, const struct spec *sp, bool num)
{
    size_t runes = 0;
    for (size_t i = 0; i < n; i++) runes += ((unsigned char)s[i] & 0xC0) != 0x80;
    size_t w = sp->width > 0 ? (size_t)sp->width : 0, fill = w > runes ? w - runes : 0;
    if (sp->minus) {
        if (!gt_buf_add(b, s, n)) return false;
        for (size_t i = 0; i < fill; i++)
            if (!gt_buf_char(b, ' ')) return false;
        return true;
    }
    bool zero = sp->zero && num;
    if (zero && n && (s[0] == '-' || s[0] == '+')) {
        if (!gt_buf_char(b, s[0])) return false;
        s++, n--;
    }
    for (size_t i = 0; i < fill; i++)
        if (!gt_buf_char(b, zero ? '0' : ' ')) return false;
    return gt_buf_add(b, s, n);
}

/* strconv.Quote: printable runes kept, the rest escaped. */
static bool quote(struct gt_buf *b, const char *s, size_t n, const struct gt_span *src,
                  size_t n_src)
{
    if (!gt_buf_char(b, '"')) return false;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        size_t from = b->n;
        const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
                          : c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\a' ? "\\a"
                          : c == '\b' ? "\\b" : c == '\f' ? "\\f" : c == '\v' ? "\\v" : NULL;
        bool ok = esc ? gt_buf_str(b, esc)
                  : (c < 0x20 || c == 0x7f) ? gt_buf_fmt(b, "\\x%02x", c) : gt_buf_char(b, (char)c);
        if (!ok || (gt_span_has(src, n_src, &k, i) && !gt_buf_mark(b, from, b->n))) return false;
    }
    return gt_buf_char(b, '"');
}

static bool bad_verb(struct gt_buf *b, const json_t *v, char verb)
{
    if (!v) return gt_buf_fmt(b, "%%!%c(<nil>)", verb);
    if (!gt_buf_fmt(b, "%%!%c(%s=", verb, gt_type_name(v))) return false;
    struct spec sv = {.verb = 'v', .width = -1, .prec = -1};
    return format_value(b, v, &sv, 0) && gt_buf_char(b, ')');
}

static bool format_int(struct gt_buf *b, long long i, const struct spec *sp)
{
    char tmp[80];
    char v = sp->verb;
    unsigned long long u = i < 0 ? 0ULL - (unsigned long long)i : (unsigned long long)i;
    const char *sign = i < 0 ? "-" : sp->plus ? "+" : sp->space ? " " : "";
    if (v == 'c') {
        size_t k = 0;
        uint32_t cp = (uint32_t)i;
        if (cp < 0x80) tmp[k++] = (char)cp;
        else if (cp < 0x800) tmp[k++] = (char)(0xC0 | cp >> 6), tmp[k++] = (char)(0x80 | (cp & 63));
        else if (cp < 0x10000)
            tmp[k++] = (char)(0xE0 | cp >> 12), tmp[k++] = (char)(0x80 | ((cp >> 6) & 63)),
            tmp[k++] = (char)(0x80 | (cp & 63));
        else
            tmp[k++] = (char)(0xF0 | cp >> 18), tmp[k++] = (char)(0x80 | ((cp >> 12) & 63)),
            tmp[k++] = (char)(0x80 | ((cp >> 6) & 63)), tmp[k++] = (char)(0x80 | (cp & 63));
        return pad(b, tmp, k, sp, false);
    }
    if (v == 'q') {
        snprintf(tmp, sizeof tmp, "'%c'", (char)i);
        return pad(b, tmp, strlen(tmp), sp, false);
    }
    if (v == 'x') snprintf(tmp, sizeof tmp, "%s%s%llx", sign, sp->sharp ? "0x" : "", u);
    else if (v == 'X') snprintf(tmp, sizeof tmp, "%s%s%llX", sign, sp->sharp ? "0X" : "", u);
    else if (v == 'o') snprintf(tmp, sizeof tmp, "%s%llo", sign, u);
    else if (v == 'b') {
        char bits[65];
        int k = 64;
        bits[k] = 0;
        do bits[--k] = (char)('0' + (u & 1)); while ((u >>= 1) != 0);
        snprintf(tmp, sizeof tmp, "%s%s", sign, bits + k);
    } else
        snprintf(tmp, sizeof tmp, "%s%llu", sign, u);
    return pad(b, tmp, strlen(tmp), sp, true);
}

static bool format_real(struct gt_buf *b, double f, const struct spec *sp)
{
    char tmp[512];
    char v = sp->verb == 'F' ? 'f' : sp->verb;
    if (v == 'v' || ((v == 'g' || v == 'G') && sp->prec < 0)) {
        struct gt_buf t = {.max = 64};
        if (f >= 0 && (sp->plus || sp->space)) gt_buf_char(&t, sp->plus ? '+' : ' ');
        bool ok = gt_format_float(&t, f, false) && pad(b, t.p, t.n, sp, true);
        wk_free(t.p);
        return ok;
    }
    char fm[16];
    snprintf(fm, sizeof fm, "%%%s%s.%d%c", sp->plus ? "+" : "", sp->space ? " " : "",
             sp->prec < 0 ? 6 : sp->prec, v);
    const int len = snprintf(tmp, sizeof tmp, fm, f);
    if (len < 0) return false;
    if ((size_t)len < sizeof tmp) return pad(b, tmp, (size_t)len, sp, true);
    /* a long precision ("%.9000f": Go writes every digit; the precision is
     * at most ~1e6, parse_spec): the whole text, on the heap */
    char *big = wk_malloc((size_t)len + 1);
    if (!big) {
        b->st = WK_E_NOMEM;
        return false;
    }
    snprintf(big, (size_t)len + 1, fm, f);
    const bool ok = pad(b, big, (size_t)len, sp, true);
    wk_free(big);
    return ok;
}

static bool format_string(struct gt_buf *b, const json_t *v, const struct spec *sp)
{
    const char *s = json_string_value(v);
    size_t n = json_string_length(v), n_src;
    const struct gt_span *src = gt_prov_get(b->prov, v, &n_src);
    if (sp->verb == 'q' || sp->verb == 'x' || sp->verb == 'X') {
        struct gt_buf t = {.max = (size_t)-1 / 4, .prov = b->prov};
        bool ok = true;
        if (sp->verb == 'q') ok = quote(&t, s, n, src, n_src);
        else
            for (size_t i = 0; i < n && ok; i++)
                ok = gt_buf_fmt(&t, sp->verb == 'x' ? "%02x" : "%02X", (unsigned char)s[i]);
        ok = ok && pad_src(b, t.p ? t.p : "", t.n, sp, t.spans, t.n_spans);
        if (t.st != WK_OK) b->st = t.st;
        gt_buf_free(&t);
        return ok;
    }
    if (sp->prec >= 0) { /* at most prec runes */
        size_t i = 0;
        for (int r = 0; i < n && r < sp->prec; r++)
            for (i++; i < n && ((unsigned char)s[i] & 0xC0) == 0x80; i++) {}
        n = i;
    }
    return pad_src(b, s, n, sp, src, n_src);
}

static bool format_compound(struct gt_buf *b, const json_t *v, const struct spec *sp, int depth)
{
    if (depth > WK_GOTMPL_MAX_DEPTH) return gt_buf_str(b, "...");
    if ((sp->verb == 'v' || sp->verb == 's') && gt_prov_is_json_value(b->prov, v))
        return gt_json_encode(b, v, 0); /* a String method that returns its JSON */
    if (json_is_array(v)) {
        if (!gt_buf_char(b, '[')) return false;
        for (size_t i = 0; i < json_array_size(v); i++)
            if ((i && !gt_buf_char(b, ' ')) || !format_value(b, json_array_get(v, i), sp, depth + 1))
                return false;
        return gt_buf_char(b, ']');
    }
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

/* Formats v with the verb of sp, as fmt does (depth > 0: inside a list). */
static bool format_value(struct gt_buf *b, const json_t *v, const struct spec *sp, int depth)
{
    char verb = sp->verb;
    if (!v || json_is_null(v)) {
        if (verb == 'v' || depth > 0) return pad(b, "<nil>", 5, sp, false);
        return bad_verb(b, NULL, verb);
    }
    switch (json_typeof(v)) {
    case JSON_TRUE:
    case JSON_FALSE:
        if (verb != 'v' && verb != 't') return bad_verb(b, v, verb);
        return pad(b, json_is_true(v) ? "true" : "false", json_is_true(v) ? 4 : 5, sp, false);
    case JSON_INTEGER:
        if (!strchr("vdxXobcq", verb)) return bad_verb(b, v, verb);
        return format_int(b, (long long)json_integer_value(v), sp);
    case JSON_REAL:
        if (!strchr("vfFeEgG", verb)) return bad_verb(b, v, verb);
        return format_real(b, json_real_value(v), sp);
    case JSON_STRING:
        if (!strchr("vsqxX", verb)) return bad_verb(b, v, verb);
        return format_string(b, v, sp);
    default: return format_compound(b, v, sp, depth);
    }
}

bool gt_print_value(struct gt_buf *b, const json_t *v)
{
    struct spec sp = {.verb = 'v', .width = -1, .prec = -1};
    return format_value(b, v, &sp, 0);
}

/* Parses the flags, width and precision of a verb at f[*i] (after %). */
static struct spec parse_spec(const char *f, size_t n, size_t *i)
{
    struct spec sp = {.width = -1, .prec = -1};
    for (; *i < n; (*i)++) {
        char c = f[*i];
        if (c == '-') sp.minus = true;
        else if (c == '+') sp.plus = true;
        else if (c == '0') sp.zero = true;
        else if (c == '#') sp.sharp = true;
        else if (c == ' ') sp.space = true;
        else break;
    }
    for (; *i < n && f[*i] >= '0' && f[*i] <= '9'; (*i)++)
        sp.width = sp.width < 1000000 ? (sp.width < 0 ? 0 : sp.width) * 10 + (f[*i] - '0') : sp.width;
    if (*i < n && f[*i] == '.') {
        sp.prec = 0;
        for ((*i)++; *i < n && f[*i] >= '0' && f[*i] <= '9'; (*i)++)
            sp.prec = sp.prec < 1000000 ? sp.prec * 10 + (f[*i] - '0') : sp.prec;
    }
    return sp;
}

/* fmt.Sprintf(format, args...) into b. */
bool gt_sprintf(struct gt_buf *b, const char *f, size_t n, json_t *const *args, int n_args)
{
    int a = 0;
    for (size_t i = 0; i < n;) {
        if (f[i] != '%') {
            size_t j = i;
            while (j < n && f[j] != '%') j++;
            if (!gt_buf_add(b, f + i, j - i)) return false;
            i = j;
            continue;
        }
        i++;
        struct spec sp = parse_spec(f, n, &i);
        if (i >= n) return gt_buf_str(b, "%!(NOVERB)");
        sp.verb = f[i++];
        bool ok;
        if (sp.verb == '%') ok = gt_buf_char(b, '%');
        else if (a >= n_args) ok = gt_buf_fmt(b, "%%!%c(MISSING)", sp.verb);
        else ok = format_value(b, args[a++], &sp, 0);
        if (!ok) return false;
    }
    if (a < n_args) {
        if (!gt_buf_str(b, "%!(EXTRA ")) return false;
        for (int k = a; k < n_args; k++) {
            if (k > a && !gt_buf_str(b, ", ")) return false;
            if (!gt_buf_fmt(b, "%s=", gt_type_name(args[k])) || !gt_print_value(b, args[k]))
                return false;
        }
        return gt_buf_char(b, ')');
    }
    return true;
}

/* fmt.Sprint (ln false: spaces between operands neither of which is a
 * string) or fmt.Sprintln (spaces always, a newline at the end). */
bool gt_sprint(struct gt_buf *b, json_t *const *args, int n, bool ln)
{
    for (int i = 0; i < n; i++) {
        bool sep = ln ? i > 0 : i > 0 && !json_is_string(args[i]) && !json_is_string(args[i - 1]);
        if ((sep && !gt_buf_char(b, ' ')) || !gt_print_value(b, args[i])) return false;
    }
    return !ln || gt_buf_char(b, '\n');
}

/* ------------------------------------------------------------------ json */

static bool json_string_go(struct gt_buf *b, const char *s, size_t n, const struct gt_span *src,
                           size_t n_src)
{
    if (!gt_buf_char(b, '"')) return false;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        size_t from = b->n;
        bool ok, mark = gt_span_has(src, n_src, &k, i);
        if (c == '"' || c == '\\') ok = gt_buf_char(b, '\\') && gt_buf_char(b, (char)c);
        else if (c == '\n') ok = gt_buf_str(b, "\\n");
        else if (c == '\r') ok = gt_buf_str(b, "\\r");
        else if (c == '\t') ok = gt_buf_str(b, "\\t");
        else if (c < 0x20 || c == '<' || c == '>' || c == '&') ok = gt_buf_fmt(b, "\\u%04x", c);
        else if (c == 0xE2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
                 ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9)) {
            ok = gt_buf_fmt(b, "\\u20%s", (unsigned char)s[i + 2] == 0xA8 ? "28" : "29");
            i += 2;
        } else
            ok = gt_buf_char(b, (char)c);
        if (!ok || (mark && !gt_buf_mark(b, from, b->n))) return false;
    }
    return gt_buf_char(b, '"');
}

/* Go's json.Marshal of v (objects in their own key order). */
bool gt_json_encode(struct gt_buf *b, const json_t *v, int depth)
{
    if (depth > WK_GOTMPL_MAX_DEPTH) return b->st = WK_E_RANGE, false;
    if (!v) return gt_buf_str(b, "null");
    switch (json_typeof(v)) {
    case JSON_NULL: return gt_buf_str(b, "null");
    case JSON_TRUE: return gt_buf_str(b, "true");
    case JSON_FALSE: return gt_buf_str(b, "false");
    case JSON_INTEGER: return gt_buf_fmt(b, "%lld", (long long)json_integer_value(v));
    case JSON_REAL: return gt_format_float(b, json_real_value(v), true);
    case JSON_STRING: {
        size_t n_src;
        const struct gt_span *src = gt_prov_get(b->prov, v, &n_src);
        return json_string_go(b, json_string_value(v), json_string_length(v), src, n_src);
    }
    case JSON_ARRAY:
        if (!gt_buf_char(b, '[')) return false;
        for (size_t i = 0; i < json_array_size(v); i++)
            if ((i && !gt_buf_char(b, ',')) || !gt_json_encode(b, json_array_get(v, i), depth + 1))
                return false;
        return gt_buf_char(b, ']');
    case JSON_OBJECT: {
        if (!gt_buf_char(b, '{')) return false;
        const char *key;
        json_t *val;
        bool first = true;
        json_object_foreach((json_t *)v, key, val) {
            if ((!first && !gt_buf_char(b, ',')) || !json_string_go(b, key, strlen(key), NULL, 0) ||
                !gt_buf_char(b, ':') || !gt_json_encode(b, val, depth + 1))
                return false;
            first = false;
        }
        return gt_buf_char(b, '}');
    }
    }
    return false;
}
