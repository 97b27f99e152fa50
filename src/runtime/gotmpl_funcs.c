/*
 * gotmpl_funcs.c - the values of the Go text/template engine: the output
 * buffer, Go's truth, type names, floats as fmt and encoding/json write
 * them, and json (Go's json.Marshal, with the typed values' rules). fmt's
 * printing is gotmpl_fmt.c, the functions gotmpl_builtins.c.
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

bool gt_truth(const struct gt_prov *p, const json_t *v)
{
    if (!v) return false;
    bool nil;
    const struct gt_type *ty = gt_prov_type(p, v, &nil);
    if (ty && ty->kind == GT_STRUCT) return !nil; /* a struct is true, a nil pointer false */
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

const char *gt_type_name(const struct gt_prov *p, const json_t *v)
{
    if (!v || json_is_null(v)) return "<nil>";
    const struct gt_type *ty = gt_prov_type(p, v, NULL);
    if (ty) return ty->name;
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

/* Whether member v of field f is empty for json's omitempty. */
static bool omit_empty(const struct gt_field *f, const json_t *v)
{
    if (!f || !f->omitempty) return false;
    switch (json_typeof(v)) {
    case JSON_NULL: return true;
    case JSON_STRING: return json_string_length(v) == 0;
    case JSON_INTEGER: return f->zero != GZ_ANY && json_integer_value(v) == 0;
    case JSON_ARRAY: return f->zero == GZ_SLICE && json_array_size(v) == 0;
    case JSON_OBJECT: return f->zero == GZ_MAP && json_object_size(v) == 0;
    default: return false;
    }
}

/* The field of struct type ty held in member key (NULL: none). */
static const struct gt_field *field_of(const struct gt_type *ty, const char *key)
{
    for (int i = 0; ty && i < ty->n_fields; i++)
        if (!strcmp(ty->fields[i].key, key)) return &ty->fields[i];
    return NULL;
}

/* Go's json.Marshal of v (objects in their own key order). */
bool gt_json_encode(struct gt_buf *b, const json_t *v, int depth)
{
    if (depth > WK_GOTMPL_MAX_DEPTH) return b->st = WK_E_RANGE, false;
    if (!v) return gt_buf_str(b, "null");
    bool nil;
    const struct gt_type *ty = gt_prov_type(b->prov, v, &nil);
    if (nil) return gt_buf_str(b, "null"); /* a nil slice, map or pointer */
    if (ty && ty->show == GS_PROPTYPE && json_array_size(v) == 1) v = json_array_get(v, 0); /* one type */
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
            if (ty && ty->kind == GT_STRUCT && omit_empty(field_of(ty, key), val)) continue;
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
