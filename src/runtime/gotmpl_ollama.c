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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

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

/* A copy of v as Go holds JSON decoded into an any: objects are
 * map[string]any, their keys sorted (as json.Marshal and fmt write a
 * map), at any depth; numbers are float64. depth: v's in the template's
 * data; past WK_GOTMPL_MAX_DEPTH *deep is set. NULL when out of memory. */
static json_t *sorted_copy(const json_t *v, int depth, bool *deep)
{
    if (depth > WK_GOTMPL_MAX_DEPTH) return *deep = true, json_null();
    if (json_is_integer(v)) return json_real((double)json_integer_value(v));
    if (json_is_array(v)) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < json_array_size(v); i++)
            if (json_array_append_new(a, sorted_copy(json_array_get(v, i), depth + 1, deep)))
                json_decref(a), a = NULL;
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
            if (json_object_set_new(o, keys[i], sorted_copy(json_object_get(v, keys[i]), depth + 1, deep)))
                json_decref(o), o = NULL;
    } else {
        json_decref(o), o = NULL;
    }
    wk_free(keys);
    return o;
}

/* ------------------------------------------------------------- the types */

/* Ollama's template data types (template/template.go: templateMessage,
 * templateToolCall, templateTool, ...; api/types.go: ToolProperty,
 * PropertyType, ToolPropertiesMap), with Go's names, fields and zero
 * values. Messages and tool calls keep Go's field names as keys; tools
 * keep their JSON keys (json.Marshal writes them). */
static const struct gt_type T_ARGS = {.name = "template.templateArgs", .kind = GT_MAP, .show = GS_JSON,
                                      .nil_text = "{}"};
static const struct gt_field CALL_FN_FIELDS[] = {{"Index", "Index", GZ_INT, NULL, false},
                                                 {"Name", "Name", GZ_STRING, NULL, false},
                                                 {"Arguments", "Arguments", GZ_MAP, &T_ARGS, false}};
static const struct gt_type T_CALL_FN = {.name = "template.templateToolCallFunction", .kind = GT_STRUCT,
                                         .fields = CALL_FN_FIELDS, .n_fields = 3};
static const struct gt_field CALL_FIELDS[] = {{"ID", "ID", GZ_STRING, NULL, false},
                                              {"Function", "Function", GZ_STRUCT, &T_CALL_FN, false}};
static const struct gt_type T_CALL = {.name = "template.templateToolCall", .kind = GT_STRUCT,
                                      .fields = CALL_FIELDS, .n_fields = 2};
static const struct gt_type T_IMAGES = {.name = "[]api.ImageData", .kind = GT_SLICE};
static const struct gt_type T_CALLS = {.name = "[]template.templateToolCall", .kind = GT_SLICE};
static const struct gt_field MESSAGE_FIELDS[] = {
    {"Role", "Role", GZ_STRING, NULL, false},           {"Content", "Content", GZ_STRING, NULL, false},
    {"Thinking", "Thinking", GZ_STRING, NULL, false},   {"Images", "Images", GZ_SLICE, &T_IMAGES, false},
    {"ToolCalls", "ToolCalls", GZ_SLICE, &T_CALLS, false}, {"ToolName", "ToolName", GZ_STRING, NULL, false},
    {"ToolCallID", "ToolCallID", GZ_STRING, NULL, false}};
static const struct gt_type T_MESSAGE = {.name = "*template.templateMessage", .kind = GT_STRUCT, .pointer = true,
                                         .fields = MESSAGE_FIELDS, .n_fields = 7};

static const struct gt_type T_STRINGS = {.name = "[]string", .kind = GT_SLICE};
static const struct gt_type T_ANYS = {.name = "[]interface {}", .kind = GT_SLICE};
static const struct gt_type T_PROPTYPE = {.name = "api.PropertyType", .kind = GT_SLICE, .show = GS_PROPTYPE,
                                          .nil_text = ""};
static const struct gt_type T_PROPERTY_LIST = {.name = "[]api.ToolProperty", .kind = GT_SLICE};
/* a pointer to a struct of unexported fields: Go prints its address;
 * wick prints its JSON */
static const struct gt_type T_PROPMAP = {.name = "*api.ToolPropertiesMap", .kind = GT_STRUCT, .pointer = true,
                                         .show = GS_JSON};
static const struct gt_field PROPERTY_FIELDS[] = { /* every one omitempty */
    {"AnyOf", "anyOf", GZ_SLICE, &T_PROPERTY_LIST, true}, {"Type", "type", GZ_SLICE, &T_PROPTYPE, true},
    {"Items", "items", GZ_ANY, NULL, true},               {"Description", "description", GZ_STRING, NULL, true},
    {"Enum", "enum", GZ_SLICE, &T_ANYS, true},            {"Properties", "properties", GZ_PTR, &T_PROPMAP, true},
    {"Required", "required", GZ_SLICE, &T_STRINGS, true}};
const struct gt_type gt_type_tool_property = {.name = "api.ToolProperty", .kind = GT_STRUCT,
                                              .fields = PROPERTY_FIELDS, .n_fields = 7};
static const struct gt_type T_PROPS = {.name = "template.templateProperties", .kind = GT_MAP, .show = GS_JSON,
                                       .nil_text = "{}", .elem = &gt_type_tool_property};
static const struct gt_field PARAMS_FIELDS[] = {
    {"Type", "type", GZ_STRING, NULL, false},           {"Defs", "$defs", GZ_ANY, NULL, true},
    {"Items", "items", GZ_ANY, NULL, true},              {"Required", "required", GZ_SLICE, &T_STRINGS, true},
    {"Properties", "properties", GZ_MAP, &T_PROPS, false}};
/* templateToolFunction and its parameters print as JSON, as Ollama's
 * api.ToolFunction did up to v0.13.5 (and ollama/ollama#18391 restores) */
static const struct gt_type T_PARAMS = {.name = "template.templateToolFunctionParameters", .kind = GT_STRUCT,
                                        .show = GS_JSON, .fields = PARAMS_FIELDS, .n_fields = 5};
static const struct gt_field FN_FIELDS[] = {{"Name", "name", GZ_STRING, NULL, false},
                                            {"Description", "description", GZ_STRING, NULL, false},
                                            {"Parameters", "parameters", GZ_STRUCT, &T_PARAMS, false}};
static const struct gt_type T_FN = {.name = "template.templateToolFunction", .kind = GT_STRUCT, .show = GS_JSON,
                                    .fields = FN_FIELDS, .n_fields = 3};
static const struct gt_field TOOL_FIELDS[] = {{"Type", "type", GZ_STRING, NULL, false},
                                              {"Items", "items", GZ_ANY, NULL, true},
                                              {"Function", "function", GZ_STRUCT, &T_FN, false}};
static const struct gt_type T_TOOL = {.name = "template.templateTool", .kind = GT_STRUCT, .show = GS_JSON,
                                      .fields = TOOL_FIELDS, .n_fields = 3};
static const struct gt_type T_TOOLS = {.name = "template.templateTools", .kind = GT_SLICE, .show = GS_JSON,
                                       .nil_text = "null"};

/* ------------------------------------------------------------- the data */

/* The data being built: its typed values. */
struct build {
    struct gt_typed *typed;
    size_t n, cap;
    bool nomem;
    bool deep; /* tools or arguments nested past WK_GOTMPL_MAX_DEPTH */
};

/* The depths in the data of a tool's properties map (.Tools, a tool,
 * function, parameters, properties) and of a call's arguments (.Messages,
 * a message, ToolCalls, a call, Function, Arguments). */
enum { PROPS_DEPTH = 5, ARGS_DEPTH = 6 };

/* v (a new reference, NULL: out of memory) recorded as a value of type ty
 * (nil: a nil one). */
static json_t *typed(struct build *b, json_t *v, const struct gt_type *ty, bool nil)
{
    if (!v) return b->nomem = true, NULL;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        struct gt_typed *p = wk_realloc(b->typed, cap * sizeof *p);
        if (!p) return b->nomem = true, v;
        b->typed = p, b->cap = cap;
    }
    b->typed[b->n++] = (struct gt_typed){v, ty, nil};
    return v;
}

/* Sets key of o to v (a new reference), noting a failure. */
static void put(struct build *b, json_t *o, const char *key, json_t *v)
{
    if (!v || json_object_set_new(o, key, v)) b->nomem = true;
}

/* Copies the member key of from into o (at depth in the data) as Go's
 * any or, list, as a []string (kept even when empty: json.Marshal's
 * omitempty drops it, a template sees an empty list). */
static void put_present(struct build *b, json_t *o, const json_t *from, const char *key, bool list, int depth)
{
    json_t *v = json_object_get(from, key);
    if (v && !json_is_null(v) && (!list || json_is_array(v))) {
        json_t *c = sorted_copy(v, depth, &b->deep);
        put(b, o, key, list ? typed(b, c, &T_STRINGS, false) : c);
    }
}

static json_t *property_value(struct build *b, const json_t *p, int depth);

/* The member of a ToolProperty, i its field: anyOf (properties), type (a
 * PropertyType: a list of names), properties (in their order), the
 * others as Go decodes them; NULL when absent (or not of the field's
 * JSON type: Ollama would refuse the request). */
static json_t *property_member(struct build *b, int i, const json_t *v, int depth)
{
    const json_t *e;
    const char *k;
    size_t n;
    json_t *r = NULL;
    if (!v || json_is_null(v)) return NULL;
    if (i == 0 || i == 1 || i == 4 || i == 6) { /* anyOf, type, enum, required: slices */
        if (i == 1 && json_is_string(v)) {
            r = json_pack("[O]", v);
        } else if (!json_is_array(v)) {
            return NULL;
        } else if (i == 0) {
            r = json_array();
            json_array_foreach(v, n, e) if (!r || json_array_append_new(r, property_value(b, e, depth + 2))) b->nomem = true;
        } else {
            r = sorted_copy(v, depth + 1, &b->deep);
        }
        static const struct gt_type *const types[] = {&T_PROPERTY_LIST, &T_PROPTYPE, NULL, NULL, &T_ANYS, NULL,
                                                      &T_STRINGS};
        return typed(b, r, types[i], false);
    }
    if (i == 3) return json_is_string(v) ? json_incref((json_t *)v) : NULL;
    if (i == 5) { /* a *ToolPropertiesMap, in the properties' order */
        if (!json_is_object(v)) return NULL;
        r = json_object();
        json_object_foreach((json_t *)v, k, e) if (!r || json_object_set_new(r, k, property_value(b, e, depth + 2))) b->nomem = true;
        return typed(b, r, &T_PROPMAP, false);
    }
    return sorted_copy(v, depth + 1, &b->deep); /* items: any */
}

/* A tool parameter as Ollama's api.ToolProperty: its fields in order
 * (anyOf, type, items, description, enum, properties, required; the
 * empty ones json.Marshal's omitempty leaves out), unknown ones dropped. */
static json_t *property_value(struct build *b, const json_t *p, int depth)
{
    if (depth > WK_GOTMPL_MAX_DEPTH) return b->deep = true, json_object();
    json_t *o = json_object();
    if (!o) return b->nomem = true, NULL;
    for (int i = 0; i < 7; i++) {
        json_t *m = property_member(b, i, json_object_get(p, PROPERTY_FIELDS[i].key), depth);
        if (m) put(b, o, PROPERTY_FIELDS[i].key, m);
    }
    return typed(b, o, &gt_type_tool_property, false);
}

/* One tool as Ollama's templateTool: its fields in the struct's order,
 * the properties a Go map (sorted; nil without them). */
static json_t *tool_value(struct build *b, const json_t *tool)
{
    const json_t *fn = json_object_get(tool, "function"), *params = json_object_get(fn, "parameters");
    json_t *t = json_object(), *f = json_object(), *p = json_object();
    if (!t || !f || !p) {
        json_decref(t), json_decref(f), json_decref(p);
        return b->nomem = true, NULL;
    }
    put(b, t, "type", str_or_empty(tool, "type"));
    put_present(b, t, tool, "items", false, PROPS_DEPTH - 2);
    put(b, f, "name", str_or_empty(fn, "name"));
    put(b, f, "description", str_or_empty(fn, "description"));
    put(b, p, "type", str_or_empty(params, "type"));
    put_present(b, p, params, "$defs", false, PROPS_DEPTH);
    put_present(b, p, params, "items", false, PROPS_DEPTH);
    put_present(b, p, params, "required", true, PROPS_DEPTH);
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
            if (json_object_set_new(pm, keys[i], property_value(b, json_object_get(props, keys[i]), PROPS_DEPTH + 1)))
                b->nomem = true;
    } else {
        b->nomem = true;
    }
    wk_free(keys);
    put(b, p, "properties", typed(b, pm, &T_PROPS, !json_is_object(props)));
    put(b, f, "parameters", typed(b, p, &T_PARAMS, false));
    put(b, t, "function", typed(b, f, &T_FN, false));
    return typed(b, t, &T_TOOL, false);
}

/* A message as Ollama's templateMessage (Role, Content, Thinking, Images,
 * ToolCalls with ID and Function {Index, Name, Arguments}, ToolName,
 * ToolCallID); the arguments a Go map (keys sorted, numbers float64). */
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
            json_t *a = json_is_object(args) ? sorted_copy(args, ARGS_DEPTH, &b->deep) : json_object();
            json_t *f = json_pack("{s:I, s:o, s:o}", "Index", json_is_integer(idx) ? json_integer_value(idx) : 0,
                                  "Name", str_or_empty(fn, "name"), "Arguments",
                                  typed(b, a, &T_ARGS, !json_is_object(args)));
            json_t *call = f ? json_pack("{s:o, s:o}", "ID", str_or_empty(c, "id"), "Function",
                                         typed(b, f, &T_CALL_FN, false))
                             : NULL;
            if (!call || json_array_append_new(list, typed(b, call, &T_CALL, false))) b->nomem = true;
        }
        put(b, o, "ToolCalls", typed(b, list, &T_CALLS, false));
    }
    put(b, o, "ToolName", str_or_empty(m, "tool_name"));
    put(b, o, "ToolCallID", str_or_empty(m, "tool_call_id"));
    return typed(b, o, &T_MESSAGE, false);
}

/* ------------------------------------------------------------ functions */

/* api.ToolProperty's ToTypeScriptType of the property object p into b:
 * its anyOf's types or its type names, joined with " | "; "any" without. */
static bool ts_type(struct gt_buf *b, const json_t *p, int depth)
{
    const json_t *any = json_object_get(p, "anyOf"), *ty = json_object_get(p, "type");
    size_t i;
    const json_t *e;
    if (depth > WK_GOTMPL_MAX_DEPTH) return b->st = WK_E_RANGE, false;
    if (json_array_size(any) > 0) {
        json_array_foreach(any, i, e) if ((i && !gt_buf_str(b, " | ")) || !ts_type(b, e, depth + 1)) return false;
        return true;
    }
    if (json_array_size(ty) == 0) return gt_buf_str(b, "any");
    static const char *const map[][2] = {{"string", "string"},   {"number", "number"},
                                         {"integer", "number"},  {"boolean", "boolean"},
                                         {"array", "any[]"},     {"object", "Record<string, any>"},
                                         {"null", "null"}};
    json_array_foreach(ty, i, e) {
        const char *ts = "any";
        for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
            if (json_is_string(e) && !strcmp(json_string_value(e), map[k][0])) ts = map[k][1];
        if ((i && !gt_buf_str(b, " | ")) || !gt_buf_str(b, ts)) return false;
    }
    return true;
}

enum wk_status gt_ollama_call(int id, json_t *const *args, int n, struct gt_prov *prov, json_t **out,
                              char *msg, size_t msg_size)
{
    *out = NULL;
    if (id == GF_TO_TS_TYPE) {
        if (n != 1) {
            snprintf(msg, msg_size, "wrong number of args for toTypeScriptType: want 1 got %d", n);
            return WK_E_INVALID;
        }
        bool nil;
        struct gt_buf b = {.max = 1 << 20};
        bool ok = gt_prov_type(prov, args[0], &nil) == &gt_type_tool_property && !nil
                      ? ts_type(&b, args[0], 0) : gt_buf_str(&b, "any");
        *out = ok ? json_stringn_nocheck(b.p, b.n) : NULL;
        gt_buf_free(&b);
        if (*out) return WK_OK;
        snprintf(msg, msg_size, b.st == WK_E_RANGE ? "nested too deeply" : "out of memory");
        return b.st == WK_E_RANGE ? WK_E_RANGE : WK_E_NOMEM;
    }
    for (int i = 0; i < n; i++) /* currentDate / yesterdayDate (args ...string): ignored */
        if (!json_is_string(args[i])) {
            struct gt_buf b = {.max = 64};
            gt_print_value(&b, args[i]);
            snprintf(msg, msg_size, "expected string; found %.*s", (int)b.n, b.p ? b.p : "");
            gt_buf_free(&b);
            return WK_E_INVALID;
        }
    /* Go's time.Now().Format("2006-01-02"), yesterdayDate after
     * AddDate(0, 0, -1): the local calendar date, or the one before */
    time_t now = time(NULL);
    struct tm tm;
    char date[32];
    if (!localtime_r(&now, &tm)) return snprintf(msg, msg_size, "no local time"), WK_E_INVALID;
    if (id == GF_YESTERDAY_DATE) {
        tm.tm_mday -= 1, tm.tm_hour = 12, tm.tm_isdst = -1;
        if (mktime(&tm) == (time_t)-1) return snprintf(msg, msg_size, "no local time"), WK_E_INVALID;
    }
    snprintf(date, sizeof date, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
    *out = json_string(date);
    if (*out) return WK_OK;
    snprintf(msg, msg_size, "out of memory");
    return WK_E_NOMEM;
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
    struct gt_render_opts o = {.cut_after_response = cut, .typed = b->typed, .n_typed = b->n};
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
    } else if (b.deep && t->uses_messages) {
        st = wk_error_set(err, WK_E_RANGE, "template: tool call arguments nested deeper than %d levels",
                          WK_GOTMPL_MAX_DEPTH - ARGS_DEPTH);
    } else if (t->uses_messages) {
        /* .Tools: a templateTools, nil without tools */
        json_t *tl = typed(&b, json_array(), &T_TOOLS, !json_is_array(tools));
        json_array_foreach(tools, i, m) if (!tl || json_array_append_new(tl, tool_value(&b, m))) b.nomem = true;
        json_t *data = json_pack("{s:s, s:O, s:o, s:s, s:b, s:s, s:b}", "System", system, "Messages", collated,
                                 "Tools", tl, "Response", "", "Think", 0, "ThinkLevel", "", "IsThinkSet", 0);
        st = !data || b.nomem ? wk_error_set(err, WK_E_NOMEM, "template: out of memory")
             : b.deep         ? wk_error_set(err, WK_E_RANGE, "template: tools nested deeper than %d levels",
                                             WK_GOTMPL_MAX_DEPTH - PROPS_DEPTH)
                              : exec_into(t, data, &b, false, &a, err);
        json_decref(data);
    } else {
        st = render_legacy(t, collated, &b, &a, err);
    }
    json_decref(collated);
    wk_free(system);
    wk_free(b.typed);
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
