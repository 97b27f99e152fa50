/*
 * gotmpl_ollama.c - a Modelfile TEMPLATE applied to a conversation the way
 * Ollama applies it (template/template.go in Ollama: Parse, Vars,
 * Execute, collate, deleteNode; the data of templateMessage and
 * templateTool). Read to learn the behaviour; the code is wick's own.
 *
 * The tree index: every node numbered in the order of deleteNode's walk
 * (a node, then its list, then its else list; the pipelines of if, with
 * and range are not walked), the first action printing a .Response field
 * remembered, and the identifiers Vars collects (fields and variables of
 * every pipeline, lowercased) checked for "messages" and "response".
 */
#include "gotmpl_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct idx {
    struct wk_gotmpl *t;
    int next;
};

static bool pipe_has_field(const struct gt_pipe *pp, const char *name, bool response_rule);

/* Whether the argument names identifier name: response_rule, as
 * deleteNode's test (a field chain holding "Response", exact case, or a
 * parenthesised pipeline holding one); else as Vars (any field or
 * variable identifier, any case). */
static bool arg_has_field(const struct gt_arg *a, const char *name, bool response_rule)
{
    if (a->kind == GA_PIPE) return a->n_fields == 0 && pipe_has_field(a->pipe, name, response_rule);
    if (a->kind != GA_FIELD && a->kind != GA_VAR) return false;
    if (response_rule && a->kind != GA_FIELD) return false;
    if (!response_rule && a->kind == GA_VAR && strcasecmp(a->str, name) == 0) return true;
    for (int k = 0; k < a->n_fields; k++)
        if (response_rule ? strcmp(a->fields[k], name) == 0 : strcasecmp(a->fields[k], name) == 0) return true;
    return false;
}

static bool pipe_has_field(const struct gt_pipe *pp, const char *name, bool response_rule)
{
    for (int c = 0; pp && c < pp->n_cmds; c++)
        for (int i = 0; i < pp->cmds[c].n_args; i++)
            if (arg_has_field(&pp->cmds[c].args[i], name, response_rule)) return true;
    return false;
}

static void index_list(struct idx *x, struct gt_list *l)
{
    for (int i = 0; i < l->n; i++) {
        struct gt_node *nd = l->nodes[i];
        nd->ord = x->next++;
        if (nd->pipe) {
            x->t->uses_messages |= pipe_has_field(nd->pipe, "messages", false);
            x->t->uses_response |= pipe_has_field(nd->pipe, "response", false);
        }
        if (nd->kind == GN_ACTION && x->t->response_ord < 0 && pipe_has_field(nd->pipe, "Response", true))
            x->t->response_ord = nd->ord;
        index_list(x, &nd->body);
        index_list(x, &nd->else_body);
    }
}

void gt_tree_index(struct wk_gotmpl *t)
{
    t->response_ord = -1;
    t->uses_messages = t->uses_response = false;
    struct idx x = {t, 0};
    index_list(&x, &t->root);
}

/* ----------------------------------------------------------- the data */

/* A string member of o, or "" (a new reference). */
static json_t *str_or_empty(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_incref(v) : json_string("");
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* A copy of v whose objects have their keys in sorted order, at any depth
 * (json.Marshal of a Go map sorts its keys); NULL when out of memory. */
static json_t *sorted_copy(const json_t *v, int depth)
{
    if (depth > WK_GOTMPL_MAX_DEPTH) return json_null();
    if (json_is_array(v)) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < json_array_size(v); i++)
            if (json_array_append_new(a, sorted_copy(json_array_get(v, i), depth + 1))) json_decref(a), a = NULL;
        return a;
    }
    if (!json_is_object(v)) return json_deep_copy(v);
    size_t n = json_object_size(v), k = 0;
    const char **keys = wk_malloc((n ? n : 1) * sizeof *keys);
    json_t *o = json_object();
    const char *key;
    json_t *val;
    if (keys && o) {
        json_object_foreach((json_t *)v, key, val) keys[k++] = key;
        qsort(keys, n, sizeof *keys, cmp_str);
        for (size_t i = 0; o && i < n; i++)
            if (json_object_set_new(o, keys[i], sorted_copy(json_object_get(v, keys[i]), depth + 1)))
                json_decref(o), o = NULL;
    } else {
        json_decref(o), o = NULL;
    }
    wk_free(keys);
    return o;
}

/* The data being built: its values that print as JSON. */
struct build {
    const json_t **json_values;
    size_t n, cap;
    bool nomem;
};

/* v (a new reference, NULL: out of memory) recorded as printing as its JSON. */
static json_t *as_json_value(struct build *b, json_t *v)
{
    if (!v) return b->nomem = true, NULL;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        const json_t **p = wk_realloc(b->json_values, cap * sizeof *p);
        if (!p) return b->nomem = true, v;
        b->json_values = p, b->cap = cap;
    }
    b->json_values[b->n++] = v;
    return v;
}

/* Sets key of o to v (a new reference), noting a failure. */
static void put(struct build *b, json_t *o, const char *key, json_t *v)
{
    if (!v || json_object_set_new(o, key, v)) b->nomem = true;
}

/* Copies the member key of from into o when present (omitempty). */
static void put_present(struct build *b, json_t *o, const json_t *from, const char *key)
{
    json_t *v = json_object_get(from, key);
    if (v && !json_is_null(v) && !(json_is_array(v) && json_array_size(v) == 0))
        put(b, o, key, sorted_copy(v, 0));
}

/* A tool parameter as Ollama's ToolProperty: anyOf, type, items,
 * description, enum, properties (in their order), required; the ones
 * present (omitempty), others dropped as Go's struct drops them. */
static json_t *property_value(struct build *b, const json_t *p, int depth)
{
    static const char *const keys[] = {"anyOf", "type", "items", "description", "enum", "properties", "required"};
    json_t *o = json_object();
    if (!o || depth > WK_GOTMPL_MAX_DEPTH) {
        json_decref(o);
        return b->nomem = true, NULL;
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(p, keys[i]);
        if (!v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0) ||
            (json_is_array(v) && json_array_size(v) == 0))
            continue;
        if (i == 0 && json_is_array(v)) { /* anyOf: properties */
            json_t *a = json_array();
            size_t k;
            json_t *e;
            json_array_foreach(v, k, e) if (!a || json_array_append_new(a, property_value(b, e, depth + 1))) b->nomem = true;
            put(b, o, keys[i], a);
        } else if (i == 5 && json_is_object(v)) { /* nested properties, in their order */
            json_t *n = json_object();
            const char *k;
            json_t *e;
            json_object_foreach(v, k, e) if (!n || json_object_set_new(n, k, property_value(b, e, depth + 1))) b->nomem = true;
            put(b, o, keys[i], n);
        } else {
            put(b, o, keys[i], json_deep_copy(v));
        }
    }
    return o;
}

/* One tool as Ollama's templateTool: its fields in the struct's order,
 * properties sorted; the tool, and its properties, print as JSON. */
static json_t *tool_value(struct build *b, const json_t *tool)
{
    const json_t *fn = json_object_get(tool, "function"), *params = json_object_get(fn, "parameters");
    json_t *t = json_object(), *f = json_object(), *p = json_object();
    if (!t || !f || !p) {
        json_decref(t), json_decref(f), json_decref(p);
        return b->nomem = true, NULL;
    }
    put(b, t, "type", str_or_empty(tool, "type"));
    put_present(b, t, tool, "items");
    put(b, f, "name", str_or_empty(fn, "name"));
    put(b, f, "description", str_or_empty(fn, "description"));
    put(b, p, "type", str_or_empty(params, "type"));
    put_present(b, p, params, "$defs");
    put_present(b, p, params, "items");
    put_present(b, p, params, "required");
    /* a Go map: its keys sorted when it prints */
    const json_t *props = json_object_get(params, "properties");
    json_t *pm = json_object();
    size_t n = json_object_size(props), k = 0;
    const char **keys = wk_malloc((n ? n : 1) * sizeof *keys);
    const char *key;
    json_t *val;
    if (keys && pm) {
        json_object_foreach((json_t *)props, key, val) keys[k++] = key;
        qsort(keys, n, sizeof *keys, cmp_str);
        for (size_t i = 0; i < n; i++)
            if (json_object_set_new(pm, keys[i], property_value(b, json_object_get(props, keys[i]), 0))) b->nomem = true;
    } else {
        b->nomem = true;
    }
    wk_free(keys);
    put(b, p, "properties", as_json_value(b, pm));
    put(b, f, "parameters", p);
    put(b, t, "function", f);
    return as_json_value(b, t);
}

/* A message as Ollama's templateMessage (Role, Content, Thinking, Images,
 * ToolCalls with ID and Function {Index, Name, Arguments}, ToolName,
 * ToolCallID); the arguments print as JSON. */
static json_t *message_value(struct build *b, const json_t *m, const char *content)
{
    json_t *o = json_object();
    if (!o) return b->nomem = true, NULL;
    put(b, o, "Role", str_or_empty(m, "role"));
    put(b, o, "Content", json_string(content));
    put(b, o, "Thinking", str_or_empty(m, "thinking"));
    put(b, o, "Images", json_null());
    json_t *calls = json_object_get(m, "tool_calls");
    if (json_array_size(calls) == 0) {
        put(b, o, "ToolCalls", json_null());
    } else {
        json_t *list = json_array();
        size_t i;
        json_t *c;
        json_array_foreach(calls, i, c) {
            const json_t *fn = json_object_get(c, "function");
            const json_t *args = json_object_get(fn, "arguments");
            json_t *idx = json_object_get(fn, "index");
            json_t *f = json_pack("{s:I, s:o, s:o}", "Index", json_is_integer(idx) ? json_integer_value(idx) : 0,
                                  "Name", str_or_empty(fn, "name"), "Arguments",
                                  as_json_value(b, json_is_object(args) ? sorted_copy(args, 0) : json_object()));
            json_t *call = f ? json_pack("{s:o, s:o}", "ID", str_or_empty(c, "id"), "Function", f) : NULL;
            if (!call || json_array_append_new(list, call)) b->nomem = true;
        }
        put(b, o, "ToolCalls", list);
    }
    put(b, o, "ToolName", str_or_empty(m, "tool_name"));
    put(b, o, "ToolCallID", str_or_empty(m, "tool_call_id"));
    return o;
}

/* ------------------------------------------------------------ rendering */

/* The output of several executions, one after another, with its runs. */
struct acc {
    char *text;
    size_t len, cap;
    struct wk_gotmpl_run *runs;
    size_t n_runs, cap_runs;
};

static bool acc_add(struct acc *a, const char *s, size_t n, bool content)
{
    if (n == 0) return true;
    if (a->len + n + 1 > a->cap) {
        size_t cap = WK_MAX(2 * a->cap, a->len + n + 1);
        char *p = wk_realloc(a->text, cap);
        if (!p) return false;
        a->text = p, a->cap = cap;
    }
    memcpy(a->text + a->len, s, n);
    a->text[a->len + n] = '\0';
    if (a->n_runs && a->runs[a->n_runs - 1].content == content) {
        a->runs[a->n_runs - 1].len += n;
    } else {
        if (a->n_runs == a->cap_runs) {
            size_t cap = a->cap_runs ? 2 * a->cap_runs : 16;
            struct wk_gotmpl_run *r = wk_realloc(a->runs, cap * sizeof *r);
            if (!r) return false;
            a->runs = r, a->cap_runs = cap;
        }
        a->runs[a->n_runs++] = (struct wk_gotmpl_run){a->len, n, content};
    }
    a->len += n;
    return true;
}

/* Executes t on data and appends the output to a. */
static enum wk_status exec_into(const struct wk_gotmpl *t, json_t *data, const struct build *b, bool cut,
                                struct acc *a, struct wk_error *err)
{
    struct gt_render_opts o = {.cut_after_response = cut, .json_values = b->json_values, .n_json_values = b->n};
    char *text = NULL;
    size_t len = 0, n_runs = 0;
    struct wk_gotmpl_run *runs = NULL;
    enum wk_status st = gt_render(t, data, &o, &text, &len, &runs, &n_runs, err);
    for (size_t i = 0; !st && i < n_runs; i++)
        if (!acc_add(a, text + runs[i].off, runs[i].len, runs[i].content))
            st = wk_error_set(err, WK_E_NOMEM, "template: out of memory");
    wk_free(text);
    wk_free(runs);
    return st;
}

/* The legacy data: System, Prompt, Response and the Think fields. */
static json_t *legacy_data(const char *system, const char *prompt, const char *response)
{
    return json_pack("{s:s, s:s, s:s, s:b, s:s, s:b}", "System", system, "Prompt", prompt, "Response", response,
                     "Think", 0, "ThinkLevel", "", "IsThinkSet", 0);
}

/* One execution of the legacy rendering; where the template names neither
 * messages nor response, Ollama's Parse appended {{ .Response }}. */
static enum wk_status legacy_exec(const struct wk_gotmpl *t, const struct build *b, const char **sys,
                                  const char **prompt, const char **resp, bool cut, struct acc *a,
                                  struct wk_error *err)
{
    json_t *data = legacy_data(*sys, *prompt, *resp);
    if (!data) return wk_error_set(err, WK_E_NOMEM, "template: out of memory");
    enum wk_status st = exec_into(t, data, b, cut, a, err);
    json_decref(data);
    if (!st && !t->uses_messages && !t->uses_response && !acc_add(a, *resp, strlen(*resp), true))
        st = wk_error_set(err, WK_E_NOMEM, "template: out of memory");
    *sys = *prompt = *resp = "";
    return st;
}

/* Ollama's legacy path: the template once per exchange over System,
 * Prompt and Response, the last time cut after {{ .Response }}. */
static enum wk_status render_legacy(const struct wk_gotmpl *t, const json_t *collated, const struct build *b,
                                    struct acc *a, struct wk_error *err)
{
    const char *sys = "", *prompt = "", *resp = "";
    enum wk_status st = WK_OK;
    size_t i;
    json_t *m;
    json_array_foreach(collated, i, m) {
        const char *role = json_string_value(json_object_get(m, "Role"));
        const char *content = json_string_value(json_object_get(m, "Content"));
        if (strcmp(role, "system") == 0) {
            if ((*prompt || *resp) && (st = legacy_exec(t, b, &sys, &prompt, &resp, false, a, err))) return st;
            sys = content;
        } else if (strcmp(role, "user") == 0) {
            if (*resp && (st = legacy_exec(t, b, &sys, &prompt, &resp, false, a, err))) return st;
            prompt = content;
        } else if (strcmp(role, "assistant") == 0) {
            resp = content;
        }
    }
    return legacy_exec(t, b, &sys, &prompt, &resp, true, a, err);
}

/* Checks messages (an array of objects with a string role and, when
 * present, string content / thinking, an array tool_calls). */
static enum wk_status check_messages(const json_t *messages, struct wk_error *err)
{
    if (!json_is_array(messages)) return wk_error_set(err, WK_E_INVALID, "messages must be a list");
    size_t i;
    json_t *m;
    json_array_foreach(messages, i, m) {
        json_t *c = json_object_get(m, "content"), *th = json_object_get(m, "thinking");
        json_t *tc = json_object_get(m, "tool_calls");
        if (!json_is_object(m) || !json_is_string(json_object_get(m, "role")))
            return wk_error_set(err, WK_E_INVALID, "message %zu has no role", i);
        if ((c && !json_is_null(c) && !json_is_string(c)) || (th && !json_is_null(th) && !json_is_string(th)) ||
            (tc && !json_is_null(tc) && !json_is_array(tc)))
            return wk_error_set(err, WK_E_INVALID, "message %zu: content and thinking must be strings, tool_calls "
                                "a list", i);
    }
    return WK_OK;
}

enum wk_status wk_gotmpl_render_chat(const struct wk_gotmpl *t, const json_t *messages, const json_t *tools,
                                     char **out, size_t *out_len, struct wk_gotmpl_run **runs, size_t *n_runs,
                                     struct wk_error *err)
{
    *out = NULL;
    if (out_len) *out_len = 0;
    if (runs) *runs = NULL, *n_runs = 0;
    wk_error_clear(err);
    enum wk_status st = check_messages(messages, err);
    if (st) return st;
    struct build b = {0};
    struct acc a = {0};
    /* collate: consecutive messages of one role (but tool) merged with a
     * blank line; the system messages joined the same way */
    json_t *collated = json_array();
    char *system = wk_strdup("");
    size_t i;
    json_t *m;
    json_array_foreach(messages, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        json_t *cv = json_object_get(m, "content");
        const char *content = json_is_string(cv) ? json_string_value(cv) : "";
        if (!system || !collated) break;
        if (strcmp(role, "system") == 0) {
            char *s = wk_malloc(strlen(system) + strlen(content) + 3);
            if (s) sprintf(s, "%s%s%s", system, *system ? "\n\n" : "", content);
            wk_free(system);
            system = s;
        }
        size_t n = json_array_size(collated);
        json_t *last = n ? json_array_get(collated, n - 1) : NULL;
        if (last && strcmp(json_string_value(json_object_get(last, "Role")), role) == 0 && strcmp(role, "tool") != 0) {
            const char *prev = json_string_value(json_object_get(last, "Content"));
            char *s = wk_malloc(strlen(prev) + strlen(content) + 3);
            if (s) sprintf(s, "%s\n\n%s", prev, content);
            if (!s || json_object_set_new(last, "Content", json_string(s))) b.nomem = true;
            wk_free(s);
        } else if (json_array_append_new(collated, message_value(&b, m, content))) {
            b.nomem = true;
        }
    }
    if (!system || !collated || b.nomem) {
        st = wk_error_set(err, WK_E_NOMEM, "template: out of memory");
    } else if (t->uses_messages) {
        json_t *tl = NULL;
        if (json_is_array(tools)) {
            tl = as_json_value(&b, json_array());
            json_array_foreach(tools, i, m) if (json_array_append_new(tl, tool_value(&b, m))) b.nomem = true;
        }
        json_t *data = json_pack("{s:s, s:O, s:o, s:s, s:b, s:s, s:b}", "System", system, "Messages", collated,
                                 "Tools", tl ? tl : json_null(), "Response", "", "Think", 0, "ThinkLevel", "",
                                 "IsThinkSet", 0);
        st = !data || b.nomem ? wk_error_set(err, WK_E_NOMEM, "template: out of memory")
                              : exec_into(t, data, &b, false, &a, err);
        json_decref(data);
    } else {
        st = render_legacy(t, collated, &b, &a, err);
    }
    json_decref(collated);
    wk_free(system);
    wk_free(b.json_values);
    if (!st && !a.text && !(a.text = wk_strdup(""))) st = wk_error_set(err, WK_E_NOMEM, "template: out of memory");
    if (st) {
        wk_free(a.text);
        wk_free(a.runs);
        return st;
    }
    *out = a.text;
    if (out_len) *out_len = a.len;
    if (runs) *runs = a.runs, *n_runs = a.n_runs;
    else wk_free(a.runs);
    return WK_OK;
}
