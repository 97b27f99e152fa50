/*
 * runner_tools.c - the tool calls in a generated answer, for a request
 * that offered tools: the model's own tool-call syntax (wk_toolcall.h,
 * detected from the chat template that rendered the prompt), and, as
 * Ollama does for models that answer a tool request with a bare or fenced
 * JSON object instead of their template's tags (Qwen2.5-Coder writes
 * ```json {"name": ..., "arguments": ...} ```), an answer that is nothing
 * but such an object naming one of the offered tools.
 *
 * The content that is not a call streams on at once, except an answer's
 * start that may still be such an object: whitespace, "{", or a code fence
 * "```" / "```json" whose first line is followed by "{" or "[" is held
 * until the answer ends (then it is a call, or given back as content); any
 * other start streams at once.
 */
#include "server_internal.h"

#include "../runtime/wk_grammar.h"
#include "../runtime/wk_toolcall.h"

#include <stdlib.h>
#include <string.h>

enum hold { DECIDING, HOLDING, STREAMING };

struct srv_tools {
    struct wk_toolcall_parser *p;
    json_t *tools;
    struct srv_tools_sink out;
    struct wk_buf held; /* the answer's start (DECIDING, HOLDING) */
    enum hold hold;
    int n_calls;
};

/* Whether name is one of the offered tools. */
static bool offered(const json_t *tools, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *n = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        if (n && name && strcmp(n, name) == 0) return true;
    }
    return false;
}

/* A call out, with its id: the model's own (Mistral's), else Ollama's
 * toolCallId (routes.go): "call_" and 8 random characters of [a-z0-9]. */
static bool emit_call(struct srv_tools *t, const char *name, json_t *args, const char *model_id)
{
    char id[16] = "call_";
    for (int i = 0; i < 8; i++) id[5 + i] = "abcdefghijklmnopqrstuvwxyz0123456789"[arc4random_uniform(36)];
    json_t *calls = json_pack("[{s:s, s:{s:i, s:s, s:O}}]", "id", model_id && *model_id ? model_id : id, "function",
                              "index", t->n_calls, "name", name, "arguments", args);
    t->n_calls++;
    return calls && t->out.calls(t->out.user, calls);
}

/* The answer's start so far: still possibly a JSON call (DECIDING), one
 * (HOLDING: from here to the end), or not (STREAMING). */
static enum hold decide(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) i++;
    if (i == n) return DECIDING;
    if (s[i] == '{') return HOLDING;
    static const char fence[] = "```";
    for (size_t k = 0; k < 3; k++)
        if (i + k == n) return DECIDING;
        else if (s[i + k] != fence[k]) return STREAMING;
    i += 3;
    size_t info = i;
    while (i < n && s[i] != '\n') i++;
    if (i == n) return (n - info <= 4 && memcmp(s + info, "json", n - info) == 0) ? DECIDING : STREAMING;
    if (!(i == info || (i - info == 4 && memcmp(s + info, "json", 4) == 0))) return STREAMING;
    while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) i++;
    if (i == n) return DECIDING;
    return s[i] == '{' || s[i] == '[' ? HOLDING : STREAMING;
}

/* Content from the syntax parser: through the held start. */
static bool on_content(void *user, const char *text, size_t len)
{
    struct srv_tools *t = user;
    if (t->hold == STREAMING || t->n_calls > 0) return t->out.content(t->out.user, text, len);
    if (!wk_buf_add(&t->held, text, len)) return false;
    if (t->hold == DECIDING) t->hold = decide(t->held.p, t->held.len);
    if (t->hold != STREAMING) return true;
    bool ok = t->out.content(t->out.user, t->held.p, t->held.len);
    t->held.len = 0;
    return ok;
}

static bool on_call(void *user, const struct wk_toolcall *c)
{
    struct srv_tools *t = user;
    if (t->held.len) { /* content before the call: out first */
        if (!t->out.content(t->out.user, t->held.p, t->held.len)) return false;
        t->held.len = 0;
    }
    t->hold = STREAMING;
    /* a call of a tool the request did not offer is not a call: its text goes back as content */
    if (!offered(t->tools, c->name)) return t->out.content(t->out.user, c->raw, c->raw_len);
    return emit_call(t, c->name, c->arguments, c->id);
}

enum wk_status srv_tools_create(const char *template_text, size_t len, const json_t *tools,
                                const struct srv_tools_sink *out, struct srv_tools **res, struct wk_error *err)
{
    *res = NULL;
    struct srv_tools *t = wk_calloc(1, sizeof *t);
    if (!t) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    char open[WK_TOOLCALL_MAX_TAG + 3], close[WK_TOOLCALL_MAX_TAG + 3];
    enum wk_toolcall_format fmt = wk_toolcall_detect_markers(template_text, len, open, close);
    enum wk_status st = wk_toolcall_parser_create(fmt, &t->p, err);
    if (!st && fmt == WK_TOOLCALL_TAG) st = wk_toolcall_parser_set_markers(t->p, open, close, err);
    if (st) {
        wk_toolcall_parser_free(t->p);
        wk_free(t);
        return st;
    }
    t->tools = json_incref((json_t *)tools);
    wk_toolcall_parser_set_tools(t->p, t->tools);
    t->out = *out;
    *res = t;
    return WK_OK;
}

bool srv_tools_call(struct srv_tools *t, const struct wk_toolcall *call) { return on_call(t, call); }

bool srv_tools_push(struct srv_tools *t, const char *text, size_t len)
{
    const struct wk_toolcall_sink sink = {on_content, on_call, t};
    return wk_toolcall_parser_push(t->p, text, len, &sink) == WK_OK;
}

/* A held answer that is a JSON tool call (bare or in a ```json fence)
 * naming an offered tool: emitted as calls; true when it was one. */
static bool held_as_calls(struct srv_tools *t)
{
    const char *s = t->held.p;
    size_t a = 0, b = t->held.len;
    while (a < b && strchr(" \n\r\t", s[a])) a++;
    while (b > a && strchr(" \n\r\t", s[b - 1])) b--;
    if (b - a >= 6 && memcmp(s + a, "```", 3) == 0) {
        if (memcmp(s + b - 3, "```", 3) != 0) return false;
        while (a < b && s[a] != '\n') a++;
        b -= 3;
    }
    json_t *calls = NULL;
    if (wk_toolcall_parse_block(WK_TOOLCALL_JSON, s + a, b - a, t->tools, &calls) != WK_OK) return false;
    size_t i;
    json_t *c;
    bool all = json_array_size(calls) > 0;
    json_array_foreach(calls, i, c) all = all && offered(t->tools, json_string_value(json_object_get(c, "name")));
    bool ok = all;
    json_array_foreach(calls, i, c) if (ok) ok = emit_call(t, json_string_value(json_object_get(c, "name")),
                                                        json_object_get(c, "arguments"), NULL);
    json_decref(calls);
    return all;
}

bool srv_tools_finish(struct srv_tools *t)
{
    const struct wk_toolcall_sink sink = {on_content, on_call, t};
    if (wk_toolcall_parser_finish(t->p, &sink) != WK_OK) return false;
    if (t->held.len && !(t->hold == HOLDING && t->n_calls == 0 && held_as_calls(t)))
        if (!t->out.content(t->out.user, t->held.p, t->held.len)) return false;
    t->held.len = 0;
    return true;
}

int srv_tools_n_calls(const struct srv_tools *t) { return t->n_calls; }

void srv_tools_free(struct srv_tools *t)
{
    if (!t) return;
    wk_toolcall_parser_free(t->p);
    json_decref(t->tools);
    wk_free(t->held.p);
    wk_free(t);
}

enum wk_status srv_tools_grammar(const char *template_text, size_t len, const json_t *tools, const char *only, bool lazy,
                                 struct wk_grammar **out, struct wk_error *err)
{
    *out = NULL;
    enum wk_toolcall_format fmt = wk_toolcall_detect(template_text, len);
    if (fmt != WK_TOOLCALL_HERMES && fmt != WK_TOOLCALL_JSON && fmt != WK_TOOLCALL_NONE)
        return wk_error_set(err, WK_E_UNSUPPORTED, "tool_choice \"required\" or a named function is not supported "
                            "yet for this model's tool-call format (%s)", wk_toolcall_format_name(fmt));
    /* a call: {"name": <a tool>, "arguments": <its parameters>} */
    json_t *any = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (!name || (only && strcmp(name, only) != 0)) continue;
        json_t *params = json_object_get(fn, "parameters");
        json_t *alt = json_pack("{s:s, s:{s:{s:s}, s:O}, s:[s, s]}", "type", "object", "properties", "name", "const",
                                name, "arguments", json_is_object(params) ? params : json_pack("{s:s}", "type", "object"),
                                "required", "name", "arguments");
        if (!json_is_object(params)) json_decref(json_object_get(json_object_get(alt, "properties"), "arguments"));
        json_array_append_new(any, alt);
    }
    if (json_array_size(any) == 0) {
        json_decref(any);
        return wk_error_set(err, WK_E_INVALID, "tool_choice names %s, which is not among the tools", only ? only : "none");
    }
    json_t *schema = json_array_size(any) == 1 ? json_incref(json_array_get(any, 0)) : json_pack("{s:O}", "anyOf", any);
    json_decref(any);
    char *gbnf = NULL;
    enum wk_status st = wk_grammar_json_schema_to_gbnf(schema, &gbnf, err);
    json_decref(schema);
    if (st) return st;
    /* a call in the template's syntax: required (no name) one or more, as
     * OpenAI's "one or more tools", a named function that one call; lazy
     * (strict tools under auto), one call in any form the parser reads */
#define HERMES_CALL "\"<tool_call>\\n\" root \"\\n</tool_call>\""
#define FENCED_CALL "\"```\" \"json\"? \"\\n\" root \"\\n```\""
    const char *wrap;
    if (fmt != WK_TOOLCALL_HERMES) wrap = lazy ? "\ntool-call-root ::= root | " FENCED_CALL "\n" : "\ntool-call-root ::= root\n";
    else if (lazy) wrap = "\ntool-call-root ::= " HERMES_CALL " | root | " FENCED_CALL "\n";
    else if (!only) wrap = "\ntool-call-root ::= tool-call ( \"\\n\"? tool-call )*\ntool-call ::= " HERMES_CALL "\n";
    else wrap = "\ntool-call-root ::= " HERMES_CALL "\n";
#undef HERMES_CALL
#undef FENCED_CALL
    size_t n = strlen(gbnf), w = strlen(wrap);
    char *text = wk_malloc(n + w + 1);
    if (!text) {
        wk_free(gbnf);
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    memcpy(text, gbnf, n);
    memcpy(text + n, wrap, w + 1);
    wk_free(gbnf);
    st = wk_grammar_from_gbnf(text, n + w, "tool-call-root", out, err);
    wk_free(text);
    return st;
}

enum wk_status srv_tools_request_grammar(const json_t *req, const char *template_text, size_t len,
                                         const struct wk_tokenizer *tok, struct wk_grammar **out, int32_t *lazy_trigger,
                                         struct wk_error *err)
{
    *out = NULL;
    *lazy_trigger = -1;
    const char *choice = json_string_value(json_object_get(req, "tool_choice"));
    if (choice)
        return srv_tools_grammar(template_text, len, json_object_get(req, "tools"),
                                 strcmp(choice, "required") ? choice : NULL, false, out, err);
    if (!json_is_true(json_object_get(req, "tool_strict"))) return WK_E_NOT_FOUND;
    /* OpenAI's strict tools under tool_choice auto: a call the model opens
     * is held to the tools' schemas from there to its end (a <tool_call>
     * token anywhere, or an answer that starts as the bare or fenced object
     * the tool-call parser also reads); the text around calls stays free */
    const int32_t trig = wk_toolcall_detect(template_text, len) == WK_TOOLCALL_HERMES
                             ? wk_tokenizer_find(tok, "<tool_call>", 11) : -1;
    *lazy_trigger = trig < 0 ? INT32_MAX : trig; /* INT32_MAX: no token opens a call mid-answer */
    return srv_tools_grammar(template_text, len, json_object_get(req, "tools"), NULL, true, out, err);
}
