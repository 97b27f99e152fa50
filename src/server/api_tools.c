/*
 * api_tools.c - the tools of a chat request (Ollama's and OpenAI's: each
 * {type: "function", function: {name, description?, parameters?,
 * strict?}}), and OpenAI's tool_choice and parallel_tool_calls, checked
 * into the runner's request (api.c's srv_gen_parse calls these).
 */
#include "server_internal.h"

#include "../runtime/wk_grammar.h"

#include <stdio.h>
#include <string.h>

#define FAIL(...) (snprintf(msg, cap, __VA_ARGS__), 400)

/* The request's tools, checked (each {type: "function", function: {name,
 * description?, parameters?}}; a name of letters, digits, _ . - up to 64),
 * into req "tools". */
int srv_parse_tools(json_t *tools, json_t *req, char *msg, size_t cap)
{
    if (!tools || json_is_null(tools)) return 0;
    if (!json_is_array(tools)) return FAIL("tools must be a list");
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *type = json_object_get(t, "type"), *fn = json_object_get(t, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (!json_is_object(t) || (type && strcmp(json_string_value(type) ? json_string_value(type) : "", "function")))
            return FAIL("tools[%zu] must be an object of type \"function\"", i);
        if (!srv_tool_name_ok(name)) return FAIL("tools[%zu].function.name must be %s", i, SRV_TOOL_NAME_RULE);
        json_t *d = json_object_get(fn, "description"), *p = json_object_get(fn, "parameters");
        if (d && !json_is_null(d) && !json_is_string(d)) return FAIL("tools[%zu].function.description must be a string", i);
        if (p && !json_is_null(p) && !json_is_object(p)) return FAIL("tools[%zu].function.parameters must be an object", i);
        /* not a valid JSON schema: refused whatever tool_choice says (a
         * schema wick cannot constrain output to is taken; tool_choice
         * "required" refuses it then) */
        struct wk_grammar *gr = NULL;
        struct wk_error e;
        enum wk_status st = json_is_object(p) ? wk_grammar_from_json_schema(p, &gr, &e) : WK_OK;
        wk_grammar_free(gr);
        if (st == WK_E_NOMEM) return FAIL("out of memory");
        if (st == WK_E_INVALID) return FAIL("tools[%zu].function.parameters: %s", i, e.msg);
    }
    if (json_array_size(tools) > 0) json_object_set(req, "tools", tools);
    return 0;
}

int srv_flat_tool(json_t *fns, const char *name, json_t *t, const char *schema_key, const char *where, char *msg, size_t cap)
{
    json_t *d = json_object_get(t, "description"), *p = json_object_get(t, schema_key), *strict = json_object_get(t, "strict");
    char pw[112];
    snprintf(pw, sizeof pw, "%s.%s", where, schema_key);
    int rc = !srv_tool_name_ok(name)                                      ? FAIL("%s.name must be %s", where, SRV_TOOL_NAME_RULE)
             : d && !json_is_null(d) && !json_is_string(d)             ? FAIL("%s.description must be a string", where)
             : p && !json_is_null(p) && !json_is_object(p)             ? FAIL("%s must be an object", pw)
             : strict && !json_is_null(strict) && !json_is_boolean(strict) ? FAIL("%s.strict must be a boolean", where)
                                                                            : srv_check_schema(p, false, pw, msg, cap);
    if (rc) return rc;
    json_t *fn = json_pack("{s:s}", "name", name);
    if (json_is_string(d)) json_object_set(fn, "description", d);
    if (json_is_object(p)) json_object_set(fn, "parameters", p);
    if (json_is_boolean(strict)) json_object_set(fn, "strict", strict);
    json_array_append_new(fns, json_pack("{s:s, s:o}", "type", "function", "function", fn));
    return 0;
}

bool srv_tool_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    bool ok = n > 0 && n <= 64;
    for (size_t k = 0; ok && k < n; k++)
        ok = (name[k] >= 'a' && name[k] <= 'z') || (name[k] >= 'A' && name[k] <= 'Z') || (name[k] >= '0' && name[k] <= '9') ||
             strchr("_.-", name[k]);
    return ok;
}

void srv_tools_unstrict(json_t *req)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(req, "tools"), i, t) json_object_del(json_object_get(t, "function"), "strict");
}

int srv_check_schema(json_t *schema, bool enforced, const char *where, char *msg, size_t cap)
{
    if (!json_is_object(schema)) return 0;
    struct wk_grammar *gr = NULL;
    struct wk_error e;
    enum wk_status st = wk_grammar_from_json_schema(schema, &gr, &e);
    wk_grammar_free(gr);
    if (st == WK_E_NOMEM) return FAIL("out of memory");
    if (st == WK_E_INVALID || (st && enforced)) return FAIL("%s: %s", where, e.msg);
    return 0;
}

int srv_parse_oai_tools(struct srv_gen *g, json_t *body, json_t *req, char *msg, size_t cap)
{
    int rc2 = 0;
    json_t *ptc = json_object_get(body, "parallel_tool_calls");
    if (ptc && !json_is_null(ptc) && !json_is_boolean(ptc)) return FAIL("parallel_tool_calls must be a boolean");
    g->one_call = json_is_false(ptc);
    json_t *choice = json_object_get(body, "tool_choice");
    const char *cs = json_string_value(choice);
    const char *named = json_string_value(json_object_get(json_object_get(choice, "function"), "name"));
    if (choice && !json_is_null(choice) &&
        !(cs && (!strcmp(cs, "auto") || !strcmp(cs, "none") || !strcmp(cs, "required"))) && !named)
        return FAIL("tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                    "\"function\": {\"name\": ...}}");
    if (!(cs && !strcmp(cs, "none"))) rc2 = srv_parse_tools(json_object_get(body, "tools"), req, msg, cap);
    if (!rc2 && (named || (cs && !strcmp(cs, "required")))) {
        if (!json_object_get(req, "tools")) return FAIL("tool_choice %s needs tools", named ? "naming a function" : cs);
        if (json_object_get(req, "format") || json_object_get(req, "grammar"))
            return FAIL("tool_choice %s cannot be used with response_format or grammar", named ? "naming a function" : cs);
        json_object_set_new(req, "tool_choice", json_string(named ? named : "required"));
    } else if (!rc2 && json_object_get(req, "tools")) {
        /* strict function tools (openai's pydantic_function_tool, the
         * Agents SDK): under tool_choice auto each call is held to its
         * schema (the runner's lazy grammar), not taken and ignored */
        size_t i;
        json_t *t;
        bool strict = false;
        json_array_foreach(json_object_get(body, "tools"), i, t) {
            json_t *sv = json_object_get(json_object_get(t, "function"), "strict");
            if (sv && !json_is_null(sv) && !json_is_boolean(sv)) return FAIL("tools[%zu].function.strict must be a boolean", i);
            strict |= json_is_true(sv);
        }
        if (strict && (json_object_get(req, "format") || json_object_get(req, "grammar")))
            return FAIL("strict tools under tool_choice \"auto\" cannot be used with response_format or grammar");
        if (strict) json_object_set_new(req, "tool_strict", json_true());
    }
    return rc2;
}
