/*
 * modelfile.c - Ollama's Modelfile (parser/parser.go): a line-oriented
 * parser into struct wk_modelfile and the canonical printer back to text.
 *
 * The parser first checks the whole input for control characters and
 * invalid UTF-8 (so no value can hold either), then reads one command per
 * line with a cursor that knows its line number. Values come out of one
 * function, read_value, for every command: bare (to the end of the line,
 * trimmed), `"""...""""` (verbatim) or `"..."` (`\"` and `\\` escaped).
 * Invariant of the cursor between commands: pos is at the start of a line
 * and line is that line's number (1-based).
 *
 * The printer picks, per value, a form that read_value reads back to the
 * same bytes (see put_value), so format -> parse is the identity.
 */
#include "wk_modelfile.h"
#include "wk_options.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum cmd {
    CMD_FROM,
    CMD_ADAPTER,
    CMD_DRAFT,
    CMD_TEMPLATE,
    CMD_SYSTEM,
    CMD_LICENSE,
    CMD_PARAMETER,
    CMD_MESSAGE,
    CMD_RENDERER,
    CMD_PARSER,
    CMD_REQUIRES,
    CMD_COUNT
};
static const char *const g_cmd_names[CMD_COUNT] = {
    "FROM",      "ADAPTER", "DRAFT",    "TEMPLATE", "SYSTEM",   "LICENSE",
    "PARAMETER", "MESSAGE", "RENDERER", "PARSER",   "REQUIRES",
};

static const char *const g_type_names[] = {"float", "int", "bool", "string"};
/* Go's strconv.ParseBool spellings, {true, false} pairs. */
static const char *const g_bools[][2] = {
    {"1", "0"}, {"t", "f"}, {"T", "F"}, {"TRUE", "FALSE"}, {"true", "false"}, {"True", "False"},
};
static const char *const g_roles[] = {"system", "user", "assistant"};

#define WORD_MAX 64 /* longer command, parameter and role words are unknown anyway */

/* Index of the option name in the options table (wk_options.h), or -1. */
static int param_index(const char *name)
{
    const struct wk_option *o = wk_option_find(name);
    if (o && !o->modelfile) o = NULL; /* the API's options only */
    int n;
    return o ? (int)(o - wk_options(&n)) : -1;
}

bool wk_modelfile_param_type(const char *name, enum wk_mf_type *type)
{
    int k = param_index(name);
    int n;
    if (k >= 0 && type) *type = wk_options(&n)[k].type;
    return k >= 0;
}

/* The struct's field for a command that keeps only its last value, or NULL. */
static char **single_field(struct wk_modelfile *mf, enum cmd c)
{
    switch (c) {
    case CMD_FROM:
        return &mf->from;
    case CMD_DRAFT:
        return &mf->draft;
    case CMD_TEMPLATE:
        return &mf->template_text;
    case CMD_SYSTEM:
        return &mf->system;
    case CMD_RENDERER:
        return &mf->renderer;
    case CMD_PARSER:
        return &mf->parser;
    case CMD_REQUIRES:
        return &mf->requires
        ;
    default:
        return NULL;
    }
}

void wk_modelfile_deinit(struct wk_modelfile *mf)
{
    if (!mf) return;
    for (int c = 0; c < CMD_COUNT; c++) {
        char **f = single_field(mf, (enum cmd)c);
        if (f) wk_free(*f);
    }
    for (int32_t k = 0; k < mf->n_licenses; k++)
        wk_free(mf->licenses[k]);
    for (int32_t k = 0; k < mf->n_messages; k++) {
        wk_free(mf->messages[k].role);
        wk_free(mf->messages[k].content);
    }
    for (int32_t k = 0; k < mf->n_params; k++) {
        wk_free(mf->params[k].name);
        wk_free(mf->params[k].s);
    }
    wk_free(mf->licenses);
    wk_free(mf->messages);
    wk_free(mf->params);
    memset(mf, 0, sizeof *mf);
}

/* arr (n elements of elem bytes) reallocated to hold one more, or NULL
 * (arr untouched) when out of memory or at the int32_t count limit. */
static void *grow(void *arr, int32_t n, size_t elem)
{
    return n < INT32_MAX ? wk_realloc(arr, ((size_t)n + 1) * elem) : NULL;
}

/* Offset of the first byte of s[0..n) that no Modelfile may hold: a
 * control character (C0 but tab, newline and the CR of CRLF; DEL; C1) or
 * one outside well-formed UTF-8. n when there is none. */
static size_t find_bad_byte(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = wk_utf8_seq_len(u + i, n - i);
        bool ctl = u[i] < 0x20 || u[i] == 0x7f || (u[i] == 0xc2 && k == 2 && u[i + 1] < 0xa0);
        bool allowed =
            u[i] == '\t' || u[i] == '\n' || (u[i] == '\r' && i + 1 < n && u[i + 1] == '\n');
        if (k == 0 || (ctl && !allowed)) return i;
        i += k;
    }
    return n;
}

static bool parse_typed(struct wk_mf_param *p, const char *s)
{
    char *end;
    errno = 0;
    if (p->type != WK_MF_STRING && (*s == '\0' || isspace((unsigned char)*s))) return false;
    switch (p->type) {
    case WK_MF_FLOAT:
        p->f = strtod(s, &end);
        return *end == '\0' && isfinite(p->f);
    case WK_MF_INT:
        p->i = strtoll(s, &end, 10);
        return *end == '\0' && errno == 0;
    case WK_MF_BOOL:
        for (size_t k = 0; k < WK_ARRAY_LEN(g_bools); k++) {
            for (int v = 0; v < 2; v++) {
                if (strcmp(s, g_bools[k][v]) != 0) continue;
                p->b = v == 0;
                return true;
            }
        }
        return false;
    case WK_MF_STRING:
        return true;
    }
    return false;
}

/* Adds name = value to mf as wk_modelfile_add_param does, taking over the
 * wk_malloc'd value (freed on error); a bad name or value fails with
 * status bad. where, when not NULL, holds each option's index in
 * mf->params (-1: none yet) and is kept up to date, so that a file of many
 * stop lines and many repeated options is not quadratic; NULL searches
 * mf->params. */
static enum wk_status add_param_owned(struct wk_modelfile *mf, const char *name, char *value,
                                      int32_t *where, enum wk_status bad, struct wk_error *err)
{
    char shown_name[WORD_MAX], shown_value[WORD_MAX];
    wk_str_printable(name, strlen(name), shown_name, sizeof shown_name);
    wk_str_printable(value, strlen(value), shown_value, sizeof shown_value);
    int ix = param_index(name), n_opts;
    const struct wk_option *opt = ix >= 0 ? &wk_options(&n_opts)[ix] : NULL;
    struct wk_mf_param p = {.type = opt ? opt->type : WK_MF_STRING, .s = value};
    enum wk_status st = WK_OK;
    if (!opt)
        st = wk_error_set(err, bad, "unknown parameter '%s'", shown_name);
    else if (!parse_typed(&p, value))
        st = wk_error_set(err, bad, "invalid %s value '%s' for parameter %s", g_type_names[p.type],
                          shown_value, name);
    else if ((p.type == WK_MF_FLOAT || p.type == WK_MF_INT) &&
             wk_option_check_number(opt, p.type == WK_MF_FLOAT ? p.f : (double)p.i, err))
        st = err ? (err->status = bad) : bad; /* out of range: the table's message */
    else if (strcmp(name, "stop") == 0) { /* the shared limits of a stop list */
        int32_t n_stops = 0;
        for (int32_t q = 0; q < mf->n_params; q++) n_stops += strcmp(mf->params[q].name, "stop") == 0;
        if (n_stops >= WK_MAX_STOPS)
            st = wk_error_set(err, bad, "more than %d stop parameters", WK_MAX_STOPS);
        else if (strlen(value) > WK_MAX_STOP_BYTES)
            st = wk_error_set(err, bad, "a stop parameter longer than %d bytes", WK_MAX_STOP_BYTES);
    }
    if (st) {
        wk_free(value);
        return st;
    }
    int32_t k = -1;
    if (strcmp(name, "stop") != 0) { /* stop is the one list option: every line adds a string */
        k = where ? where[ix] : mf->n_params - 1;
        while (!where && k >= 0 && strcmp(mf->params[k].name, name) != 0)
            k--;
    }
    if (k >= 0) {
        wk_free(mf->params[k].s);
        p.name = mf->params[k].name;
        mf->params[k] = p;
        return WK_OK;
    }
    p.name = wk_strdup(name);
    struct wk_mf_param *arr = p.name ? grow(mf->params, mf->n_params, sizeof *arr) : NULL;
    if (!arr) {
        wk_free(p.name);
        wk_free(value);
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    if (where) where[ix] = mf->n_params;
    arr[mf->n_params++] = p;
    mf->params = arr;
    return WK_OK;
}

enum wk_status wk_modelfile_add_param(struct wk_modelfile *mf, const char *name, const char *value,
                                      struct wk_error *err)
{
    size_t n = strlen(value);
    if (find_bad_byte(value, n) < n)
        return wk_error_set(err, WK_E_INVALID,
                            "parameter %s: value holds a control character or invalid UTF-8", name);
    char *copy = wk_strndup(value, n);
    if (!copy) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    return add_param_owned(mf, name, copy, NULL, WK_E_INVALID, err);
}

/* ------------------------------------------------------------------ parser */

struct cursor {
    const char *p;
    size_t n, pos;
    size_t line;
    const char *name;
    struct wk_error *err;
    int32_t param_at[WK_OPTIONS_MAX]; /* add_param_owned's where */
};

/* Sets err to WK_E_FORMAT and "name:line: " + the message; returns WK_E_FORMAT. */
static enum wk_status fail(const struct cursor *c, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum wk_status fail(const struct cursor *c, size_t line, const char *fmt, ...)
{
    if (!c->err) return WK_E_FORMAT;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err->msg, sizeof c->err->msg, fmt, ap);
    va_end(ap);
    c->err->status = WK_E_FORMAT;
    return wk_error_prefix(c->err, WK_E_FORMAT, "%s:%zu: ", c->name, line);
}

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

static void skip_blanks(struct cursor *c)
{
    while (c->pos < c->n && is_blank(c->p[c->pos]))
        c->pos++;
}

/* At the end of the input, a '\n', or the '\r' of a CRLF (the only CR
 * find_bad_byte lets through). */
static bool at_eol(const struct cursor *c)
{
    return c->pos == c->n || c->p[c->pos] == '\n' || c->p[c->pos] == '\r';
}

/* Moves to the start of the next line. */
static void skip_line(struct cursor *c)
{
    const char *nl = memchr(c->p + c->pos, '\n', c->n - c->pos);
    c->pos = nl ? (size_t)(nl - c->p) + 1 : c->n;
    c->line += nl != NULL;
}

/* Reads the word after pos's blanks into out (WORD_MAX bytes) through
 * wk_str_printable: exact for a short ASCII word, and never equal to a
 * command, parameter or role name when it was cut or had bytes replaced. */
static void read_word(struct cursor *c, char *out)
{
    skip_blanks(c);
    size_t start = c->pos;
    while (!at_eol(c) && !is_blank(c->p[c->pos]))
        c->pos++;
    wk_str_printable(c->p + start, c->pos - start, out, WORD_MAX);
}

/* Removes the escapes of a "..." value in place: \" and \\ stand for " and
 * \; any other backslash stays (the quote scan in read_value skips the byte
 * after every backslash, the same pairs). */
static void unescape(char *s)
{
    char *d = s;
    for (; *s; s++) {
        if (s[0] == '\\' && (s[1] == '"' || s[1] == '\\')) s++;
        *d++ = *s;
    }
    *d = '\0';
}

/* Reads the value after pos's blanks into a wk_malloc'd *out and moves the
 * cursor to the start of the next line. what names the command or key the
 * value belongs to, for "missing value after ...". */
static enum wk_status read_value(struct cursor *c, const char *what, char **out)
{
    skip_blanks(c);
    if (at_eol(c)) return fail(c, c->line, "missing value after %s", what);
    const char *s = c->p + c->pos, *end;
    size_t left = c->n - c->pos, start_line = c->line;
    bool quoted = s[0] == '"', escaped = false;
    if (left >= 3 && memcmp(s, "\"\"\"", 3) == 0) {
        end = memmem(s + 3, left - 3, "\"\"\"", 3);
        if (!end) return fail(c, start_line, "unterminated \"\"\" quote");
        s += 3;
        c->pos = (size_t)(end - c->p) + 3;
    } else if (quoted) {
        size_t i = 1;
        while (i < left && s[i] != '"')
            i += s[i] == '\\' && i + 1 < left ? 2 : 1;
        if (i >= left) return fail(c, start_line, "unterminated quote");
        end = s + i;
        s += 1;
        escaped = true;
        c->pos += i + 1;
    } else {
        while (!at_eol(c))
            c->pos++;
        end = c->p + c->pos;
        while (is_blank(end[-1]))
            end--;
    }
    for (const char *q = s; q < end; q++)
        c->line += *q == '\n';
    if (quoted) {
        skip_blanks(c);
        if (!at_eol(c)) return fail(c, c->line, "unexpected text after the closing quote");
    }
    skip_line(c);
    *out = wk_strndup(s, (size_t)(end - s));
    if (!*out) return wk_error_set(c->err, WK_E_NOMEM, "out of memory");
    if (escaped) unescape(*out);
    return WK_OK;
}

/* Whether s is a version: an optional v, MAJOR.MINOR.PATCH in digits, and
 * optionally semver's -prerelease or +build suffix. */
static bool is_version(const char *s)
{
    s += *s == 'v';
    for (int part = 0; part < 3; part++) {
        if (part > 0 && *s++ != '.') return false;
        if (!isdigit((unsigned char)*s)) return false;
        while (isdigit((unsigned char)*s))
            s++;
    }
    if (*s != '-' && *s != '+') return *s == '\0';
    return s[1] != '\0' && strspn(s + 1, "0123456789abcdefghijklmnopqrstuvwxyz"
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ.-+") == strlen(s + 1);
}

/* Parses the command line at the cursor (a line that is neither blank nor
 * a comment) into mf. */
static enum wk_status parse_command(struct cursor *c, struct wk_modelfile *mf)
{
    size_t line = c->line;
    char word[WORD_MAX], key[WORD_MAX] = "";
    read_word(c, word);
    int cmd = 0;
    while (cmd < CMD_COUNT && strcasecmp(word, g_cmd_names[cmd]) != 0)
        cmd++;
    if (cmd == CMD_COUNT)
        return fail(c, line,
                    "command must be one of FROM, DRAFT, PARAMETER, TEMPLATE, SYSTEM, MESSAGE, "
                    "LICENSE, ADAPTER (got '%s')",
                    word);
    if (cmd == CMD_ADAPTER) return fail(c, line, "ADAPTER is not supported yet");
    if (cmd == CMD_PARAMETER || cmd == CMD_MESSAGE) {
        read_word(c, key);
        if (!key[0]) return fail(c, line, "missing value after %s", g_cmd_names[cmd]);
    }
    if (cmd == CMD_MESSAGE) {
        size_t r = 0;
        while (r < WK_ARRAY_LEN(g_roles) && strcmp(key, g_roles[r]) != 0)
            r++;
        if (r == WK_ARRAY_LEN(g_roles))
            return fail(c, line, "message role must be one of system, user, assistant");
    }
    char *value;
    enum wk_status st = read_value(c, key[0] ? key : g_cmd_names[cmd], &value);
    if (st) return st;
    char **field = single_field(mf, (enum cmd)cmd);
    if (cmd == CMD_REQUIRES && !is_version(value)) {
        char shown[WORD_MAX];
        wk_str_printable(value, strlen(value), shown, sizeof shown);
        wk_free(value);
        return fail(c, line, "REQUIRES must be a version like 0.14.0 (got '%s')", shown);
    }
    if (field) {
        wk_free(*field);
        *field = value;
    } else if (cmd == CMD_LICENSE) {
        char **arr = grow(mf->licenses, mf->n_licenses, sizeof *arr);
        if (!arr) goto nomem;
        arr[mf->n_licenses++] = value;
        mf->licenses = arr;
    } else if (cmd == CMD_MESSAGE) {
        char *role = wk_strdup(key);
        struct wk_mf_message *arr = role ? grow(mf->messages, mf->n_messages, sizeof *arr) : NULL;
        if (!arr) {
            wk_free(role);
            goto nomem;
        }
        arr[mf->n_messages++] = (struct wk_mf_message){role, value};
        mf->messages = arr;
    } else {
        st = add_param_owned(mf, key, value, c->param_at, WK_E_FORMAT, c->err);
        if (st) return wk_error_prefix(c->err, st, "%s:%zu: ", c->name, line);
    }
    return WK_OK;
nomem:
    wk_free(value);
    return wk_error_set(c->err, WK_E_NOMEM, "out of memory");
}

enum wk_status wk_modelfile_parse(const char *text, size_t len, const char *name,
                                  struct wk_modelfile *out, struct wk_error *err)
{
    memset(out, 0, sizeof *out);
    struct cursor c = {
        .p = text, .n = len, .line = 1, .name = name ? name : "Modelfile", .err = err};
    for (size_t k = 0; k < WK_ARRAY_LEN(c.param_at); k++)
        c.param_at[k] = -1;
    size_t bad = find_bad_byte(text, len);
    if (bad < len) {
        for (size_t i = 0; i < bad; i++)
            c.line += text[i] == '\n';
        return fail(&c, c.line, "control character or invalid UTF-8 (byte 0x%02x)",
                    (unsigned char)text[bad]);
    }
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) c.pos = 3;
    enum wk_status st = WK_OK;
    while (st == WK_OK && c.pos < c.n) {
        skip_blanks(&c);
        if (at_eol(&c) || c.p[c.pos] == '#')
            skip_line(&c);
        else
            st = parse_command(&c, out);
    }
    if (st == WK_OK && !out->from) st = wk_error_set(err, WK_E_FORMAT, "%s: no FROM line", c.name);
    if (st) wk_modelfile_deinit(out);
    return st;
}

/* ----------------------------------------------------------------- printer */

/* Appends v in a form read_value reads back to the same bytes: bare when
 * that is unambiguous; else in """ (verbatim), unless v holds """ or ends
 * with a quote (which would close it early) or is empty: then in "..." with
 * " and \ escaped. */
static bool put_value(struct wk_buf *b, const char *v)
{
    size_t n = strlen(v);
    if (n > 0 && !is_blank(v[0]) && !is_blank(v[n - 1]) && !strpbrk(v, "\"\r\n"))
        return wk_buf_add(b, v, n);
    if (n > 0 && v[n - 1] != '"' && !strstr(v, "\"\"\""))
        return wk_buf_add(b, "\"\"\"", 3) && wk_buf_add(b, v, n) && wk_buf_add(b, "\"\"\"", 3);
    bool ok = wk_buf_add(b, "\"", 1);
    for (const char *q = v; ok && *q; q++) {
        if (*q == '"' || *q == '\\') ok = wk_buf_add(b, "\\", 1);
        ok = ok && wk_buf_add(b, q, 1);
    }
    return ok && wk_buf_add(b, "\"", 1);
}

/* Appends "CMD [key ]value\n"; nothing (and true) when value is NULL. */
static bool put_line(struct wk_buf *b, const char *cmd, const char *key, const char *value)
{
    if (!value) return true;
    return wk_buf_add(b, cmd, strlen(cmd)) && wk_buf_add(b, " ", 1) &&
           (!key || (wk_buf_add(b, key, strlen(key)) && wk_buf_add(b, " ", 1))) &&
           put_value(b, value) && wk_buf_add(b, "\n", 1);
}

char *wk_modelfile_format(const struct wk_modelfile *mf)
{
    struct wk_buf b = {0};
    bool ok = wk_buf_add(&b, "", 0) && put_line(&b, "FROM", NULL, mf->from) &&
              put_line(&b, "DRAFT", NULL, mf->draft);
    for (int32_t k = 0; ok && k < mf->n_params; k++)
        ok = put_line(&b, "PARAMETER", mf->params[k].name, mf->params[k].s);
    ok = ok && put_line(&b, "TEMPLATE", NULL, mf->template_text) &&
         put_line(&b, "SYSTEM", NULL, mf->system);
    for (int32_t k = 0; ok && k < mf->n_messages; k++)
        ok = put_line(&b, "MESSAGE", mf->messages[k].role, mf->messages[k].content);
    for (int32_t k = 0; ok && k < mf->n_licenses; k++)
        ok = put_line(&b, "LICENSE", NULL, mf->licenses[k]);
    ok = ok && put_line(&b, "RENDERER", NULL, mf->renderer) &&
         put_line(&b, "PARSER", NULL, mf->parser) && put_line(&b, "REQUIRES", NULL, mf->requires);
    if (!ok) {
        wk_free(b.p);
        return NULL;
    }
    return b.p;
}
