/*
 * toolcall_block.c - one complete tool-call block to calls
 * (wk_toolcall_parse_block): the JSON call objects (HERMES, LLAMA3, JSON,
 * MISTRAL's list), MISTRAL's name[ARGS]{...}, GLM45's <arg_key> pairs,
 * QWEN3_CODER's <function=...> and GEMMA's call:NAME{...}.
 *
 * The three <tool_call>-framed formats look at the body's shape, not only
 * at the format asked for: a body that starts with '{' or '[' is JSON, one
 * that starts with <function= is Qwen3-Coder's XML, and (GLM45 only) any
 * other is GLM's name plus <arg_key> pairs; a template detected a little
 * wrongly still parses what the model wrote.
 *
 * Every error is WK_E_FORMAT (not a call) except WK_E_NOMEM from wick's own
 * allocations and jansson constructors; jansson's decoder failing for want
 * of memory reads as a format error.
 */
#include "wk_toolcall.h"

#include <string.h>

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void trim(const char **s, size_t *n)
{
    while (*n && is_ws(**s))
        (*s)++, (*n)--;
    while (*n && is_ws((*s)[*n - 1]))
        (*n)--;
}

static bool has_prefix(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n >= l && memcmp(s, lit, l) == 0;
}

/* Strips lit from the front of s[0..n) when it is there. */
static bool eat(const char **s, size_t *n, const char *lit)
{
    if (!has_prefix(*s, *n, lit)) return false;
    size_t l = strlen(lit);
    *s += l, *n -= l;
    return true;
}

/* Strips the closing marker lit from the end of s[0..n) (after whitespace),
 * or its first bytes there: a block cut short inside its closing marker. */
static void eat_tail(const char *s, size_t *n, const char *lit)
{
    size_t m = *n;
    while (m && is_ws(s[m - 1])) m--;
    for (size_t l = strlen(lit); l; l--) {
        if (m >= l && memcmp(s + m - l, lit, l) == 0) {
            *n = m - l;
            return;
        }
    }
}

static const char *find(const char *s, size_t n, const char *lit)
{
    return memmem(s, n, lit, strlen(lit));
}

/* Whether s[0..n) is well-formed UTF-8 without NUL bytes (jansson refuses
 * ill-formed strings; checking first tells that from running out of memory). */
static bool utf8_ok(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        if (c < 0x80) {
            if (!c) return false;
            i++;
            continue;
        }
        size_t k = (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 0;
        if (!k || n - i <= k) return false;
        unsigned cp = c & (0x3fu >> k);
        for (size_t j = 1; j <= k; j++) {
            if ((u[i + j] & 0xc0) != 0x80) return false;
            cp = cp << 6 | (u[i + j] & 0x3f);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (k == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return false;
        i += k + 1;
    }
    return true;
}

/* A new JSON string of s[0..n): WK_E_FORMAT when not UTF-8. */
static enum wk_status new_string(const char *s, size_t n, json_t **out)
{
    if (!utf8_ok(s, n)) return WK_E_FORMAT;
    *out = json_stringn(s, n);
    return *out ? WK_OK : WK_E_NOMEM;
}

/* Sets obj[key] = v (stolen, also on failure). */
static enum wk_status set_key(json_t *obj, const char *key, size_t key_len, json_t *v)
{
    if (!utf8_ok(key, key_len)) {
        json_decref(v);
        return WK_E_FORMAT;
    }
    return json_object_setn_new(obj, key, key_len, v) ? WK_E_NOMEM : WK_OK;
}

/* Appends {"name", "arguments"[, "id"]} to calls; args is stolen. */
static enum wk_status add_call(json_t *calls, const char *name, size_t name_len, json_t *args,
                               const char *id, size_t id_len)
{
    json_t *call = json_object(), *v = NULL;
    enum wk_status st = call ? WK_OK : WK_E_NOMEM;
    if (st == WK_OK && (name_len == 0 || memchr(name, '\0', name_len))) st = WK_E_FORMAT;
    if (st == WK_OK) st = new_string(name, name_len, &v);
    if (st == WK_OK) st = set_key(call, "name", 4, v);
    if (st == WK_OK) st = set_key(call, "arguments", 9, json_incref(args));
    if (st == WK_OK && id && id_len) {
        st = new_string(id, id_len, &v);
        if (st == WK_OK) st = set_key(call, "id", 2, v);
    }
    if (st == WK_OK && json_array_append_new(calls, call))
        st = WK_E_NOMEM;
    else if (st != WK_OK)
        json_decref(call);
    json_decref(args);
    return st;
}

/* ------------------------------------------------------- JSON calls */

/* The arguments value of a call object as an object: an object, a string
 * holding one (double-encoded), or (when absent or null and !strict) {}. */
static enum wk_status args_object(json_t *a, bool strict, json_t **out)
{
    *out = NULL;
    if (json_is_object(a)) {
        *out = json_incref(a);
    } else if (json_is_string(a)) {
        json_t *v = json_loadb(json_string_value(a), json_string_length(a), 0, NULL);
        if (!json_is_object(v)) {
            json_decref(v);
            return WK_E_FORMAT;
        }
        *out = v;
    } else if ((!a && !strict) || json_is_null(a)) {
        *out = json_object();
        return *out ? WK_OK : WK_E_NOMEM;
    } else {
        return WK_E_FORMAT;
    }
    return WK_OK;
}

/* Whether every key of obj is one of the NULL-ended list. */
static bool only_keys(json_t *obj, const char *const *keys)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        bool ok = false;
        for (int i = 0; keys[i] && !ok; i++)
            ok = strcmp(k, keys[i]) == 0;
        if (!ok) return false;
    }
    return true;
}

/*
 * Appends the call that obj describes: {"name", "arguments" | "parameters"}
 * or the OpenAI shape {"type", "function": {...}, "id"}. strict (a bare
 * JSON answer, no marker): arguments must be there and no other keys may.
 */
static enum wk_status add_json_call(json_t *calls, json_t *obj, bool strict)
{
    static const char *const outer_keys[] = {"type", "function", "id", NULL};
    static const char *const call_keys[] = {"type", "name", "arguments", "parameters", "id", NULL};
    if (!json_is_object(obj)) return WK_E_FORMAT;
    json_t *id = json_object_get(obj, "id"), *fn = json_object_get(obj, "function");
    if (json_is_object(fn)) {
        if (strict && !only_keys(obj, outer_keys)) return WK_E_FORMAT;
        obj = fn;
        if (!id) id = json_object_get(fn, "id");
    }
    if (strict && !only_keys(obj, call_keys)) return WK_E_FORMAT;
    json_t *name = json_object_get(obj, "name"), *a = json_object_get(obj, "arguments");
    if (!a) a = json_object_get(obj, "parameters");
    if (!name && !strict) name = json_object_get(obj, "tool_name"); /* Command R's {"tool_name", "parameters"} */
    if (!json_is_string(name) || (strict && !a)) return WK_E_FORMAT;
    json_t *args;
    enum wk_status st = args_object(a, strict, &args);
    if (st != WK_OK) return st;
    const char *ids = json_is_string(id) ? json_string_value(id) : NULL;
    return add_call(calls, json_string_value(name), json_string_length(name), args, ids,
                    ids ? json_string_length(id) : 0);
}

/* A call object or a list of them (all must be calls); wrappers
 * {"tool_calls": [...]} and {"tool_call": {...}} too when wrappers. */
static enum wk_status add_json_value(json_t *calls, json_t *v, bool strict, bool wrappers)
{
    if (wrappers && json_is_object(v) && json_object_size(v) == 1) {
        json_t *w = json_object_get(v, "tool_calls");
        if (!w) w = json_object_get(v, "tool_call");
        if (w) return add_json_value(calls, w, strict, false);
    }
    if (!json_is_array(v)) return add_json_call(calls, v, strict);
    if (json_array_size(v) == 0) return WK_E_FORMAT;
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        enum wk_status st = add_json_call(calls, e, strict);
        if (st != WK_OK) return st;
    }
    return WK_OK;
}

/* One or more JSON values, separated by whitespace or ';'. */
static enum wk_status add_json_seq(json_t *calls, const char *s, size_t n, bool strict,
                                   bool wrappers)
{
    size_t at = 0;
    int count = 0;
    for (;;) {
        while (at < n && (is_ws(s[at]) || s[at] == ';'))
            at++;
        if (at == n) break;
        if (s[at] != '{' && s[at] != '[') return WK_E_FORMAT;
        json_error_t e;
        json_t *v = json_loadb(s + at, n - at, JSON_DISABLE_EOF_CHECK, &e);
        size_t used = v ? (size_t)e.position : 0;
        if (!v && n - at > 1 && s[at] == '{' && s[at + 1] == '{') {
            /* Qwen2.5's own template shows the call as {{"name": ..., "arguments": ...}} (inside a
             * Jinja string, so the braces stay doubled in what the model reads), and the model may
             * answer so: one level of braces taken off (text that no JSON parse would take) */
            v = json_loadb(s + at + 1, n - at - 1, JSON_DISABLE_EOF_CHECK, &e);
            size_t end = at + 1 + (v ? (size_t)e.position : 0);
            while (end < n && is_ws(s[end])) end++;
            if (v && end < n && s[end] == '}') used = end + 1 - at;
            else json_decref(v), v = NULL;
        }
        if (!v) return WK_E_FORMAT;
        at += used;
        enum wk_status st = add_json_value(calls, v, strict, wrappers);
        json_decref(v);
        if (st != WK_OK) return st;
        count++;
    }
    return count ? WK_OK : WK_E_FORMAT;
}

/* ------------------------------------------------- GLM45 / QWEN3_CODER */

/* Whether the request's tools declare tool name's parameter key "string". */
static bool param_is_string(const json_t *tools, const char *name, const char *key, size_t key_len)
{
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        json_t *fn = json_object_get(t, "function");
        if (!fn) fn = t;
        if (!json_is_string(json_object_get(fn, "name")) ||
            strcmp(json_string_value(json_object_get(fn, "name")), name) != 0)
            continue;
        json_t *props = json_object_get(json_object_get(fn, "parameters"), "properties");
        const char *k;
        json_t *p;
        json_object_foreach(props, k, p)
        {
            if (strlen(k) == key_len && memcmp(k, key, key_len) == 0) {
                const char *type = json_string_value(json_object_get(p, "type"));
                return type && strcmp(type, "string") == 0;
            }
        }
        return false;
    }
    return false;
}

/* Sets args[key] to the value text s[0..n): JSON when it parses as JSON
 * (and the tools do not call the parameter a string), else the text. */
static enum wk_status set_text_value(json_t *args, const json_t *tools, const char *name,
                                     const char *key, size_t key_len, const char *s, size_t n)
{
    json_t *v = NULL;
    if (!param_is_string(tools, name, key, key_len)) v = json_loadb(s, n, JSON_DECODE_ANY, NULL);
    if (!v) {
        enum wk_status st = new_string(s, n, &v);
        if (st != WK_OK) return st;
    }
    return set_key(args, key, key_len, v);
}

/* A function name written as text: not empty, UTF-8, no spaces or tags. */
static bool name_ok(const char *s, size_t n)
{
    if (!n || !utf8_ok(s, n)) return false;
    for (size_t i = 0; i < n; i++)
        if (is_ws(s[i]) || s[i] == '<' || s[i] == '>' || s[i] == '{' || s[i] == '"') return false;
    return true;
}

/* Text up to tag in *s (consumed with the tag): false when tag is absent. */
static bool until(const char **s, size_t *n, const char *tag, const char **v, size_t *vn)
{
    const char *e = find(*s, *n, tag);
    if (!e) return false;
    *v = *s, *vn = (size_t)(e - *s);
    size_t used = *vn + strlen(tag);
    *s += used, *n -= used;
    return true;
}

/* GLM-4.5: NAME then <arg_key>k</arg_key> <arg_value>v</arg_value> pairs. */
static enum wk_status glm_call(json_t *calls, const char *s, size_t n, const json_t *tools)
{
    const char *k = find(s, n, "<arg_key>");
    size_t name_len = k ? (size_t)(k - s) : n;
    const char *name = s;
    trim(&name, &name_len);
    if (!name_ok(name, name_len)) return WK_E_FORMAT;
    char *zname = wk_memdup0(name, name_len);
    json_t *args = json_object();
    enum wk_status st = zname && args ? WK_OK : WK_E_NOMEM;
    size_t skip = (size_t)(name + name_len - s);
    s += skip, n -= skip;
    for (;;) {
        if (st != WK_OK) break;
        trim(&s, &n);
        if (!n) break;
        const char *key, *val;
        size_t key_len, val_len;
        if (!eat(&s, &n, "<arg_key>") || !until(&s, &n, "</arg_key>", &key, &key_len))
            st = WK_E_FORMAT;
        else if (trim(&s, &n),
                 !eat(&s, &n, "<arg_value>") || !until(&s, &n, "</arg_value>", &val, &val_len))
            st = WK_E_FORMAT;
        else
            st = set_text_value(args, tools, zname, key, key_len, val, val_len);
    }
    if (st == WK_OK) st = add_call(calls, name, name_len, json_incref(args), NULL, 0);
    json_decref(args);
    wk_free(zname);
    return st;
}

/* Qwen3-Coder: <function=NAME> <parameter=K>\nV\n</parameter>... </function>. */
static enum wk_status xml_call(json_t *calls, const char *s, size_t n, const json_t *tools)
{
    const char *name, *key, *val;
    size_t name_len, key_len, val_len;
    if (!eat(&s, &n, "<function=") || !until(&s, &n, ">", &name, &name_len)) return WK_E_FORMAT;
    trim(&name, &name_len);
    if (!name_ok(name, name_len)) return WK_E_FORMAT;
    char *zname = wk_memdup0(name, name_len);
    json_t *args = json_object();
    enum wk_status st = zname && args ? WK_OK : WK_E_NOMEM;
    while (st == WK_OK) {
        trim(&s, &n);
        if (!n || eat(&s, &n, "</function>"))
            break; /* a missing </function> at the end is forgiven */
        if (!eat(&s, &n, "<parameter=") || !until(&s, &n, ">", &key, &key_len) ||
            !until(&s, &n, "</parameter>", &val, &val_len)) {
            st = WK_E_FORMAT;
            break;
        }
        trim(&key, &key_len);
        if (val_len && val[0] == '\n') val++, val_len--;
        if (val_len && val[val_len - 1] == '\n') val_len--;
        st = key_len ? set_text_value(args, tools, zname, key, key_len, val, val_len) : WK_E_FORMAT;
    }
    trim(&s, &n);
    if (st == WK_OK && n) st = WK_E_FORMAT;
    if (st == WK_OK) st = add_call(calls, name, name_len, json_incref(args), NULL, 0);
    json_decref(args);
    wk_free(zname);
    return st;
}

/* The body of a <tool_call> block, by its shape (see the top). */
static enum wk_status tagged_body(json_t *calls, enum wk_toolcall_format fmt, const char *s,
                                  size_t n, const json_t *tools)
{
    trim(&s, &n);
    if (n && (s[0] == '{' || s[0] == '[')) return add_json_seq(calls, s, n, false, false);
    if (has_prefix(s, n, "<function=")) return xml_call(calls, s, n, tools);
    if (fmt == WK_TOOLCALL_GLM45) return glm_call(calls, s, n, tools);
    return WK_E_FORMAT;
}

/* ------------------------------------------------------------ MISTRAL */

/* After [TOOL_CALLS]: a JSON list (or object), or NAME[CALL_ID]id[ARGS]{...}. */
static enum wk_status mistral_body(json_t *calls, const char *s, size_t n)
{
    trim(&s, &n);
    if (n && (s[0] == '[' || s[0] == '{')) return add_json_seq(calls, s, n, false, false);
    const char *name, *id = NULL;
    size_t name_len, id_len = 0;
    if (!until(&s, &n, "[ARGS]", &name, &name_len)) return WK_E_FORMAT;
    const char *c = find(name, name_len, "[CALL_ID]");
    if (c) {
        id = c + 9, id_len = name_len - (size_t)(id - name);
        name_len = (size_t)(c - name);
        trim(&id, &id_len);
    }
    trim(&name, &name_len);
    trim(&s, &n);
    if (!name_ok(name, name_len) || !n) return WK_E_FORMAT;
    json_t *v = json_loadb(s, n, JSON_DECODE_ANY, NULL), *args;
    enum wk_status st = v ? args_object(v, true, &args) : WK_E_FORMAT;
    json_decref(v);
    if (st != WK_OK) return st;
    return add_call(calls, name, name_len, args, id, id_len);
}

/* --------------------------------------------------------------- GEMMA */

struct gemma {
    const char *s;
    size_t n, at;
    const char *quote; /* the string delimiter: <|"|> or <escape> */
};

static void g_ws(struct gemma *g)
{
    while (g->at < g->n && is_ws(g->s[g->at]))
        g->at++;
}

static bool g_eat(struct gemma *g, const char *lit)
{
    if (!has_prefix(g->s + g->at, g->n - g->at, lit)) return false;
    g->at += strlen(lit);
    return true;
}

/* A string between delimiters, or a JSON "..." string: its bytes. */
static enum wk_status g_string(struct gemma *g, json_t **out)
{
    if (g_eat(g, g->quote)) {
        const char *b = g->s + g->at, *e = find(b, g->n - g->at, g->quote);
        if (!e) return WK_E_FORMAT;
        g->at += (size_t)(e - b) + strlen(g->quote);
        return new_string(b, (size_t)(e - b), out);
    }
    size_t i = g->at + 1; /* s[at] is '"' */
    while (i < g->n && g->s[i] != '"')
        i += g->s[i] == '\\' ? 2 : 1;
    if (i >= g->n) return WK_E_FORMAT;
    *out = json_loadb(g->s + g->at, i + 1 - g->at, JSON_DECODE_ANY, NULL);
    g->at = i + 1;
    return *out ? WK_OK : WK_E_FORMAT;
}

static bool g_at_string(struct gemma *g)
{
    return g->at < g->n && (g->s[g->at] == '"' || has_prefix(g->s + g->at, g->n - g->at, g->quote));
}

static enum wk_status g_value(struct gemma *g, int depth, json_t **out);

/* {key:value,...} or [value,...]; s[at] is the opening bracket. */
static enum wk_status g_container(struct gemma *g, int depth, json_t **out)
{
    bool obj = g->s[g->at++] == '{';
    char close = obj ? '}' : ']';
    json_t *c = obj ? json_object() : json_array();
    if (!c) return WK_E_NOMEM;
    enum wk_status st = WK_OK;
    g_ws(g);
    if (g->at < g->n && g->s[g->at] == close)
        g->at++;
    else
        for (;;) {
            json_t *key = NULL, *v = NULL;
            const char *k = NULL;
            size_t kn = 0;
            g_ws(g);
            if (obj && g_at_string(g)) {
                st = g_string(g, &key);
                if (st == WK_OK && !json_is_string(key)) st = WK_E_FORMAT;
                if (st == WK_OK) k = json_string_value(key), kn = json_string_length(key);
            } else if (obj) {
                k = g->s + g->at;
                while (g->at < g->n && !strchr(":,{}[]\"<", g->s[g->at]))
                    g->at++;
                kn = (size_t)(g->s + g->at - k);
                trim(&k, &kn);
                if (!kn) st = WK_E_FORMAT;
            }
            g_ws(g);
            if (st == WK_OK && obj && !g_eat(g, ":")) st = WK_E_FORMAT;
            if (st == WK_OK) st = g_value(g, depth + 1, &v);
            if (st == WK_OK)
                st = obj ? set_key(c, k, kn, v) : json_array_append_new(c, v) ? WK_E_NOMEM : WK_OK;
            json_decref(key);
            g_ws(g);
            if (st != WK_OK || g->at >= g->n) {
                if (st == WK_OK) st = WK_E_FORMAT;
                break;
            }
            char d = g->s[g->at++];
            if (d == close) break;
            if (d != ',') {
                st = WK_E_FORMAT;
                break;
            }
        }
    if (st != WK_OK)
        json_decref(c);
    else
        *out = c;
    return st;
}

/* A value: string, {...}, [...], or a bare word (JSON number / true /
 * false / null when it parses so, else the word as a string). */
static enum wk_status g_value(struct gemma *g, int depth, json_t **out)
{
    *out = NULL;
    if (depth > WK_TOOLCALL_MAX_DEPTH) return WK_E_FORMAT;
    g_ws(g);
    if (g->at >= g->n) return WK_E_FORMAT;
    if (g_at_string(g)) return g_string(g, out);
    char c = g->s[g->at];
    if (c == '{' || c == '[') return g_container(g, depth, out);
    const char *w = g->s + g->at;
    while (g->at < g->n && !strchr(",}]", g->s[g->at]))
        g->at++;
    size_t wn = (size_t)(g->s + g->at - w);
    trim(&w, &wn);
    if (!wn) return WK_E_FORMAT;
    *out = json_loadb(w, wn, JSON_DECODE_ANY, NULL);
    return *out ? WK_OK : new_string(w, wn, out);
}

/* call:NAME{args} */
static enum wk_status gemma_body(json_t *calls, const char *s, size_t n, const char *quote)
{
    trim(&s, &n);
    const char *name;
    size_t name_len;
    if (!eat(&s, &n, "call:")) return WK_E_FORMAT;
    const char *b = memchr(s, '{', n);
    if (!b) return WK_E_FORMAT;
    name = s, name_len = (size_t)(b - s);
    trim(&name, &name_len);
    if (!name_ok(name, name_len)) return WK_E_FORMAT;
    struct gemma g = {.s = b, .n = n - (size_t)(b - s), .quote = quote};
    json_t *args;
    enum wk_status st = g_container(&g, 0, &args);
    if (st != WK_OK) return st;
    g_ws(&g);
    if (g.at != g.n) {
        json_decref(args);
        return WK_E_FORMAT;
    }
    return add_call(calls, name, name_len, args, NULL, 0);
}

/* ----------------------------------------------------------------- API */

static enum wk_status parse_block(enum wk_toolcall_format fmt, const char *s, size_t n,
                                  const json_t *tools, json_t *calls)
{
    switch (fmt) {
    case WK_TOOLCALL_HERMES:
        if (eat(&s, &n, "<tool_calls>")) { /* MiniMax-M1, Apriel */
            eat_tail(s, &n, "</tool_calls>");
            trim(&s, &n);
            return add_json_seq(calls, s, n, false, false);
        }
        /* fall through */
    case WK_TOOLCALL_GLM45:
    case WK_TOOLCALL_QWEN3_CODER:
        if (!eat(&s, &n, "<tool_call>")) return WK_E_FORMAT;
        eat_tail(s, &n, "</tool_call>");
        return tagged_body(calls, fmt, s, n, tools);
    case WK_TOOLCALL_MISTRAL:
        if (!eat(&s, &n, "[TOOL_CALLS]")) return WK_E_FORMAT;
        return mistral_body(calls, s, n);
    case WK_TOOLCALL_GEMMA:
        if (eat(&s, &n, "<|tool_call>")) {
            eat_tail(s, &n, "<tool_call|>");
            return gemma_body(calls, s, n, "<|\"|>");
        }
        if (!eat(&s, &n, "<start_function_call>")) return WK_E_FORMAT;
        eat_tail(s, &n, "<end_function_call>");
        return gemma_body(calls, s, n, "<escape>");
    case WK_TOOLCALL_LLAMA3:
        if (eat(&s, &n, "<|python_tag|>")) return add_json_seq(calls, s, n, false, false);
        return add_json_seq(calls, s, n, true, false);
    case WK_TOOLCALL_JSON:
        return add_json_seq(calls, s, n, true, true);
    case WK_TOOLCALL_TAG: /* the text between the markers: after a tag, any JSON call shape */
        trim(&s, &n);
        return add_json_seq(calls, s, n, false, true);
    default:
        return WK_E_FORMAT;
    }
}

enum wk_status wk_toolcall_parse_block(enum wk_toolcall_format fmt, const char *block, size_t len,
                                       const json_t *tools, json_t **calls)
{
    *calls = json_array();
    if (!*calls) return WK_E_NOMEM;
    enum wk_status st = parse_block(fmt, block ? block : "", block ? len : 0, tools, *calls);
    if (st != WK_OK) {
        json_decref(*calls);
        *calls = NULL;
    }
    return st;
}
