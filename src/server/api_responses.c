/*
 * api_responses.c - OpenAI's Responses API (POST /v1/responses), the
 * stateless flavour Ollama serves (its openai/responses.go) to Codex and
 * the openai SDK's client.responses: a request's instructions and input
 * items (messages, function_call, function_call_output, reasoning) become
 * the runner's chat request; the runner's lines become the response
 * object (output items: reasoning, message, function_call) or the
 * server-sent events of a stream (response.created, .in_progress,
 * .output_item.added / .done, .content_part.added / .done,
 * .output_text.delta / .done, .reasoning_summary_*, .function_call_arguments
 * .delta / .done, and .completed or .incomplete), each with its
 * sequence_number. Errors have OpenAI's shape.
 *
 * Where wick differs from Ollama's layer: a field the API has that wick
 * cannot honour (previous_response_id, conversation, background, tools
 * other than functions, images and files) is a 400 naming it, as is a
 * field it does not have; a text answer beside tool calls is kept (Ollama
 * drops it); an answer cut by max_output_tokens is status "incomplete"
 * with incomplete_details (Ollama says completed); usage counts the
 * cached prefix; tool_choice, parallel_tool_calls, text.format,
 * truncation "auto" and the output_text logprobs are applied.
 */
#include "server_internal.h"

#include "../io/wk_options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) (snprintf(msg, cap, __VA_ARGS__), 400)

/* The output item open in a stream (srv_gen.blk_open). */
enum { ITEM_NONE, ITEM_REASONING, ITEM_MESSAGE };

/* ------------------------------------------------------------ request */

/* A message's content or a function_call_output's output: a string, or
 * text parts (input_text, output_text, joined with nothing between, as
 * Ollama joins them); NULL with the 400 in msg for another part. */
static json_t *text_of(json_t *c, const char *where, char *msg, size_t cap, int *err)
{
    static const char *const texts[] = {"input_text", "output_text", NULL};
    return srv_text_parts(c, texts, "", where, msg, cap, err);
}

/* The conversation so far (out) and what items still have to reach it. */
struct conv {
    json_t *out;      /* the runner's messages */
    json_t *names;    /* call_id: the function's name (for a tool message) */
    json_t *thinking; /* a reasoning item's text, for the next assistant turn (a new reference), or NULL */
};

/* The last message of out when it is the assistant's, else NULL. */
static json_t *last_assistant(struct conv *cv)
{
    json_t *m = json_array_get(cv->out, json_array_size(cv->out) - 1);
    return m && !strcmp(json_string_value(json_object_get(m, "role")) ?: "", "assistant") ? m : NULL;
}

static void take_thinking(struct conv *cv, json_t *m)
{
    if (cv->thinking && json_string_length(cv->thinking)) json_object_set(m, "thinking", cv->thinking);
    json_decref(cv->thinking);
    cv->thinking = NULL;
}

/* A message item (input[i]; next: the item after it, or NULL). An
 * assistant message replayed between a function_call and its output joins
 * the call's message, so the result follows the call it answers (Ollama). */
static int message_item(struct conv *cv, json_t *item, json_t *next, size_t i, char *msg, size_t cap)
{
    const char *role = json_string_value(json_object_get(item, "role"));
    if (!role || (strcmp(role, "user") && strcmp(role, "system") && strcmp(role, "developer") && strcmp(role, "assistant")))
        return FAIL("input[%zu].role must be \"user\", \"assistant\", \"system\" or \"developer\"", i);
    char where[48];
    snprintf(where, sizeof where, "input[%zu].content", i);
    int err = 0;
    json_t *text = text_of(json_object_get(item, "content"), where, msg, cap, &err);
    if (!text) return err;
    json_t *last = last_assistant(cv);
    const char *answers = json_string_value(json_object_get(next, "call_id"));
    /* (the call looked up by id among those so far: a scan of the last turn's calls per message
     * would be quadratic in a hostile input) */
    if (!strcmp(role, "assistant") && last && json_object_get(last, "tool_calls") && answers &&
        json_object_get(cv->names, answers) &&
        !strcmp(json_string_value(json_object_get(next, "type")) ?: "", "function_call_output")) {
        const char *had = json_string_value(json_object_get(last, "content")) ?: "";
        json_t *both = json_sprintf("%s%s%s", had, *had && json_string_length(text) ? "\n" : "", json_string_value(text));
        json_object_set_new(last, "content", both);
        json_decref(text);
        if (cv->thinking) take_thinking(cv, last);
        return 0;
    }
    json_t *m = json_pack("{s:s, s:o}", "role", !strcmp(role, "developer") ? "system" : role, "content", text);
    if (!strcmp(role, "assistant")) take_thinking(cv, m);
    json_array_append_new(cv->out, m);
    return 0;
}

/* A function_call item: a call of the assistant's turn (the last message's
 * when it is the assistant's, else a new one). */
static int call_item(struct conv *cv, json_t *item, size_t i, char *msg, size_t cap)
{
    json_t *id = json_object_get(item, "call_id"), *name = json_object_get(item, "name"), *a = json_object_get(item, "arguments");
    json_t *ns = json_object_get(item, "namespace");
    if (!json_is_string(id) || !json_is_string(name) || json_string_length(name) == 0)
        return FAIL("input[%zu] (function_call) needs a string call_id and name", i);
    if (ns && !json_is_null(ns) && !json_is_string(ns)) return FAIL("input[%zu].namespace must be a string", i);
    json_t *args = json_is_string(a) && json_string_length(a) ? json_loadb(json_string_value(a), json_string_length(a), 0, NULL)
                   : json_is_object(a)                  ? json_incref(a)
                   : !a || json_is_null(a) || json_is_string(a) ? json_object()
                                                                : NULL;
    if (!json_is_object(args)) {
        json_decref(args);
        return FAIL("input[%zu].arguments must be a string holding a JSON object", i);
    }
    json_t *m = last_assistant(cv);
    if (!m) {
        m = json_pack("{s:s, s:s}", "role", "assistant", "content", "");
        json_array_append_new(cv->out, m);
    }
    if (cv->thinking) take_thinking(cv, m);
    json_t *calls = json_object_get(m, "tool_calls");
    if (!calls) json_object_set_new(m, "tool_calls", calls = json_array());
    /* a namespace's function by the name the model saw (ns.name, parse_tools) */
    json_t *full = json_is_string(ns) ? json_sprintf("%s.%s", json_string_value(ns), json_string_value(name)) : json_incref(name);
    json_array_append_new(calls, json_pack("{s:O, s:{s:o, s:o}}", "id", id, "function", "name", full, "arguments", args));
    json_object_set(cv->names, json_string_value(id), full);
    return 0;
}

/* input: a string (the user's message) or a list of items, onto cv->out. */
static int parse_input(struct conv *cv, json_t *input, char *msg, size_t cap)
{
    if (json_is_string(input)) {
        json_array_append_new(cv->out, json_pack("{s:s, s:O}", "role", "user", "content", input));
        return 0;
    }
    if (!json_is_array(input)) return FAIL("input must be a string or a list of items");
    size_t i;
    json_t *item;
    json_array_foreach(input, i, item) {
        json_t *tv = json_object_get(item, "type");
        const char *type = json_string_value(tv);
        if (!json_is_object(item)) return FAIL("input[%zu] must be an object", i);
        if (tv && !type) return FAIL("input[%zu].type must be a string", i);
        if (!type && json_object_get(item, "role")) type = "message"; /* an easy input message */
        char shown[64] = "";
        if (type) wk_str_printable(type, strlen(type), shown, sizeof shown);
        int rc = 0;
        if (!type) rc = FAIL("input[%zu] has no type", i);
        else if (!strcmp(type, "message")) rc = message_item(cv, item, json_array_get(input, i + 1), i, msg, cap);
        else if (!strcmp(type, "function_call")) rc = call_item(cv, item, i, msg, cap);
        else if (!strcmp(type, "function_call_output")) {
            json_t *id = json_object_get(item, "call_id");
            char where[48];
            snprintf(where, sizeof where, "input[%zu].output", i);
            int err = 0;
            json_t *text = json_is_string(id) ? text_of(json_object_get(item, "output"), where, msg, cap, &err) : NULL;
            if (!json_is_string(id)) return FAIL("input[%zu].call_id must be a string", i);
            if (!text) return err;
            json_t *m = json_pack("{s:s, s:o, s:O}", "role", "tool", "content", text, "tool_call_id", id);
            json_t *name = json_object_get(cv->names, json_string_value(id));
            if (name) json_object_set(m, "tool_name", name);
            json_array_append_new(cv->out, m);
        } else if (!strcmp(type, "reasoning")) {
            /* its text (Ollama sends it back as encrypted_content; else the summary) for the next assistant turn */
            json_t *enc = json_object_get(item, "encrypted_content"), *sum = json_object_get(item, "summary");
            struct wk_buf b = {0};
            size_t k;
            json_t *s;
            if (json_is_string(enc)) wk_buf_add(&b, json_string_value(enc), json_string_length(enc));
            else json_array_foreach(sum, k, s) {
                    json_t *t = json_object_get(s, "text");
                    if (json_is_string(t)) wk_buf_add(&b, json_string_value(t), json_string_length(t));
                }
            json_decref(cv->thinking);
            cv->thinking = json_stringn(b.p ? b.p : "", b.len);
            wk_free(b.p);
        } else if (!strcmp(type, "item_reference")) {
            rc = FAIL("input[%zu] is an item_reference: wick keeps no responses, send the items themselves", i);
        } else {
            rc = FAIL("input[%zu] is a '%s' item, which wick does not support (message, function_call, "
                      "function_call_output and reasoning are)", i, shown);
        }
        if (rc) return rc;
    }
    return 0;
}

/* A function tool (where: "tools[i]" or "tools[i].tools[k]") onto fns;
 * ns: its namespace's name (the function is named "ns.name", Ollama's
 * flattening, and ns_map maps that name back to [ns, name] for the
 * calls), or NULL. */
static int add_function(json_t *fns, json_t *t, const char *ns, json_t *ns_map, const char *where, char *msg, size_t cap)
{
    const char *name = json_string_value(json_object_get(t, "name"));
    char *full = ns && name ? wk_asprintf("%s.%s", ns, name) : NULL;
    int rc = srv_flat_tool(fns, full ? full : name, t, "parameters", where, msg, cap);
    if (!rc && full) json_object_set_new(ns_map, full, json_pack("[s, s]", ns, name));
    wk_free(full);
    return rc;
}

/* tools (function tools: {type, name, description?, parameters?,
 * strict?}, and namespaces of them: {type: namespace, name, tools}),
 * tool_choice and parallel_tool_calls, checked under the Responses API's
 * names, then through the chat route's rules. */
static int parse_tools(struct srv_gen *g, json_t *body, json_t *req, char *msg, size_t cap)
{
    json_t *tools = json_object_get(body, "tools"), *tc = json_object_get(body, "tool_choice");
    if (tools && !json_is_null(tools) && !json_is_array(tools)) return FAIL("tools must be a list");
    json_t *chat = json_pack("{s:[]}", "tools"), *fns = json_object_get(chat, "tools");
    g->ns_map = json_object();
    size_t i, k;
    json_t *t, *m;
    int rc = 0;
    json_array_foreach(tools, i, t) {
        const char *type = json_string_value(json_object_get(t, "type"));
        const char *ns = json_string_value(json_object_get(t, "name"));
        char shown[64] = "", where[64];
        if (type) wk_str_printable(type, strlen(type), shown, sizeof shown);
        snprintf(where, sizeof where, "tools[%zu]", i);
        if (!json_is_object(t) || !type) rc = FAIL("tools[%zu] must be an object with a type", i);
        else if (!strcmp(type, "function")) rc = add_function(fns, t, NULL, NULL, where, msg, cap);
        else if (strcmp(type, "namespace"))
            rc = FAIL("tools[%zu] is a '%s' tool: wick runs function tools only (the client runs them)", i, shown);
        else if (!json_is_array(json_object_get(t, "tools")) || !ns)
            rc = FAIL("tools[%zu] (a namespace) needs a name and a list of tools", i);
        else json_array_foreach(json_object_get(t, "tools"), k, m) {
                snprintf(where, sizeof where, "tools[%zu].tools[%zu]", i, k);
                const char *mt = json_string_value(json_object_get(m, "type"));
                rc = mt && !strcmp(mt, "function") ? add_function(fns, m, ns, g->ns_map, where, msg, cap)
                                                   : FAIL("%s must be a function tool", where);
                if (rc) break;
            }
        if (rc) break;
    }
    if (!rc && tc && !json_is_null(tc)) {
        const char *s = json_string_value(tc), *type = json_string_value(json_object_get(tc, "type"));
        json_t *name = json_object_get(tc, "name");
        if (s && (!strcmp(s, "none") || !strcmp(s, "auto") || !strcmp(s, "required"))) json_object_set(chat, "tool_choice", tc);
        else if (type && !strcmp(type, "function") && json_is_string(name))
            json_object_set_new(chat, "tool_choice", json_pack("{s:s, s:{s:O}}", "type", "function", "function", "name", name));
        else rc = FAIL("tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": ...}");
    }
    if (!rc) {
        json_t *ptc = json_object_get(body, "parallel_tool_calls");
        if (ptc) json_object_set(chat, "parallel_tool_calls", ptc);
        if (!(rc = srv_parse_oai_tools(g, chat, req, msg, cap))) srv_tools_unstrict(req);
    }
    json_decref(chat);
    return rc;
}

/* text ({format: {type: text | json_object | json_schema, schema, name,
 * strict}, verbosity}) into req "format". */
static int parse_text(json_t *body, json_t *req, char *msg, size_t cap)
{
    json_t *text = json_object_get(body, "text");
    if (!text || json_is_null(text)) return 0;
    if (!json_is_object(text)) return FAIL("text must be an object");
    const char *k;
    json_t *kv;
    json_object_foreach(text, k, kv) {
        if (strcmp(k, "format") && strcmp(k, "verbosity")) return FAIL("text.%.64s is not a field of text", k);
    }
    json_t *v = json_object_get(text, "verbosity"), *f = json_object_get(text, "format");
    if (v && !json_is_null(v) && strcmp(json_string_value(v) ?: "", "medium"))
        return FAIL("text.verbosity must be \"medium\": wick's models take no verbosity");
    if (!f || json_is_null(f)) return 0;
    const char *type = json_string_value(json_object_get(f, "type"));
    if (!json_is_object(f) || !type) return FAIL("text.format must be an object with a type");
    if (!strcmp(type, "text")) return 0;
    if (!strcmp(type, "json_object")) return json_object_set_new(req, "format", json_string("json")), 0;
    json_t *schema = json_object_get(f, "schema");
    if (strcmp(type, "json_schema") || !json_is_object(schema))
        return FAIL("text.format.type must be \"text\", \"json_object\" or \"json_schema\" (with a schema object)");
    int rc = srv_check_schema(schema, true, "text.format.schema", msg, cap);
    if (!rc) json_object_set(req, "format", schema);
    return rc;
}

/* temperature, top_p (absent: OpenAI's 1.0), max_output_tokens, include,
 * top_logprobs into the runner's options and g. */
static int parse_sampling(struct srv_gen *g, json_t *body, json_t *ropts, char *msg, size_t cap)
{
    static const struct {
        const char *name;
        double hi;
    } nums[] = {{"temperature", 2}, {"top_p", 1}};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(body, nums[i].name);
        if (v && !json_is_null(v) && (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > nums[i].hi))
            return FAIL("%s must be a number between 0 and %g", nums[i].name, nums[i].hi);
        json_object_set_new(ropts, nums[i].name, json_real(v && !json_is_null(v) ? json_number_value(v) : 1.0));
    }
    json_t *mt = json_object_get(body, "max_output_tokens");
    if (mt && !json_is_null(mt)) {
        double most = wk_option_find("num_predict")->max;
        if (!json_is_integer(mt) || json_integer_value(mt) < 1) return FAIL("max_output_tokens must be a positive integer");
        json_object_set_new(ropts, "num_predict", json_integer(json_integer_value(mt) > most ? (json_int_t)most : json_integer_value(mt)));
    }
    json_t *inc = json_object_get(body, "include"), *top = json_object_get(body, "top_logprobs");
    if (inc && !json_is_null(inc) && !json_is_array(inc)) return FAIL("include must be a list of strings");
    size_t i;
    json_t *s;
    json_array_foreach(inc, i, s) {
        if (!json_is_string(s)) return FAIL("include[%zu] must be a string", i);
        if (!strcmp(json_string_value(s), "message.output_text.logprobs")) g->logprobs = true;
    }
    if (top && !json_is_null(top) && (!json_is_integer(top) || json_integer_value(top) < 0 || json_integer_value(top) > 20))
        return FAIL("top_logprobs must be an integer between 0 and 20");
    g->top_logprobs = json_is_integer(top) ? (int32_t)json_integer_value(top) : 0;
    if (g->top_logprobs > 0) g->logprobs = true;
    return 0;
}

/* The request's settings the response object repeats (OpenAI's). */
static json_t *echo_of(json_t *body)
{
    json_t *e = json_object();
    static const char *const same[] = {"instructions", "tools", "tool_choice", "temperature", "top_p", "text",
                                       "reasoning", "max_output_tokens", "metadata", "parallel_tool_calls",
                                       "truncation", "top_logprobs"};
    for (size_t i = 0; i < WK_ARRAY_LEN(same); i++) {
        json_t *v = json_object_get(body, same[i]);
        json_object_set(e, same[i], v ? v : json_null());
    }
    static const struct {
        const char *name, *dflt;
    } dflts[] = {{"tools", "[]"}, {"tool_choice", "\"auto\""}, {"temperature", "1.0"}, {"top_p", "1.0"},
                 {"text", "{\"format\": {\"type\": \"text\"}}"}, {"metadata", "{}"}, {"parallel_tool_calls", "true"},
                 {"truncation", "\"disabled\""}, {"top_logprobs", "0"}};
    for (size_t i = 0; i < WK_ARRAY_LEN(dflts); i++)
        if (json_is_null(json_object_get(e, dflts[i].name)))
            json_object_set_new(e, dflts[i].name, json_loads(dflts[i].dflt, JSON_DECODE_ANY, NULL));
    return e;
}

int srv_responses_parse(struct srv_gen *g, json_t *body, json_t *req, json_t *ropts, json_t *stop, char *msg, size_t cap)
{
    (void)stop; /* the Responses API has no stop sequences */
    /* ResponseCreateParams (openai 3.57) and Codex's client_metadata; those
     * steering only OpenAI's service (store, caching, billing, safety,
     * access programs, built-in tools' call limit, image options) change
     * nothing here, nor does context_management (compaction past a
     * threshold: wick's truncation "auto" drops the oldest turns instead;
     * README); prompt (a stored template) and moderation, which would, are
     * refused below */
    static const char *const known[] = {"model", "input", "instructions", "max_output_tokens", "temperature", "top_p",
                                        "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls",
                                        "text", "reasoning", "store", "metadata", "include", "truncation",
                                        "top_logprobs", "user", "safety_identifier", "prompt_cache_key",
                                        "prompt_cache_retention", "prompt_cache_options", "service_tier", "background",
                                        "background_options", "previous_response_id", "conversation", "client_metadata",
                                        "access_programs", "context_management", "image", "max_tool_calls", "prompt",
                                        "moderation"};
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v) {
        bool ok = false;
        for (size_t i = 0; i < WK_ARRAY_LEN(known) && !ok; i++) ok = !strcmp(k, known[i]);
        char shown[64];
        wk_str_printable(k, strlen(k), shown, sizeof shown);
        if (!ok) return FAIL("%s is not a field of the Responses API", shown);
    }
    if (!json_is_null(json_object_get(body, "previous_response_id") ?: json_null()) ||
        !json_is_null(json_object_get(body, "conversation") ?: json_null()))
        return FAIL("%s: wick keeps no responses (the stateless API, as Ollama's): send the whole conversation in input",
                    json_object_get(body, "conversation") ? "conversation" : "previous_response_id");
    if (json_is_true(json_object_get(body, "background"))) return FAIL("background responses are not supported");
    static const char *const refused[][2] = {{"prompt", "prompt: wick keeps no stored prompts, send the instructions"},
                                             {"moderation", "moderation is not supported: wick runs no moderation model"}};
    for (size_t i = 0; i < WK_ARRAY_LEN(refused); i++)
        if (!json_is_null(json_object_get(body, refused[i][0]) ?: json_null())) return FAIL("%s", refused[i][1]);
    json_t *md = json_object_get(body, "metadata");
    if (md && !json_is_null(md) && !json_is_object(md)) return FAIL("metadata must be an object");
    json_t *stream = json_object_get(body, "stream"), *tr = json_object_get(body, "truncation");
    if (stream && !json_is_null(stream) && !json_is_boolean(stream)) return FAIL("stream must be a boolean");
    g->stream = json_is_true(stream);
    if (tr && !json_is_null(tr) && strcmp(json_string_value(tr) ?: "", "auto") && strcmp(json_string_value(tr) ?: "", "disabled"))
        return FAIL("truncation must be \"auto\" or \"disabled\"");
    /* truncation auto: the oldest turns give way to fit the context; disabled (the default): a 400 */
    json_object_set_new(req, "truncate_history", json_boolean(tr && !strcmp(json_string_value(tr) ?: "", "auto")));
    int rc = parse_sampling(g, body, ropts, msg, cap);
    if (rc || (rc = parse_text(body, req, msg, cap))) return rc;
    json_t *reasoning = json_object_get(body, "reasoning");
    if (reasoning && !json_is_null(reasoning) && !json_is_object(reasoning)) return FAIL("reasoning must be an object");
    json_object_foreach(reasoning, k, v) {
        if (strcmp(k, "effort") && strcmp(k, "summary") && strcmp(k, "generate_summary"))
            return FAIL("reasoning.%.64s is not a field of reasoning", k);
    }
    g->think = -1;
    if ((rc = srv_openai_reasoning_effort(g, body, msg, cap))) return rc;
    json_t *ins = json_object_get(body, "instructions"), *input = json_object_get(body, "input");
    if (ins && !json_is_null(ins) && !json_is_string(ins)) return FAIL("instructions must be a string");
    struct conv cv = {json_array(), json_object(), NULL};
    json_object_set_new(req, "messages", cv.out);
    if (json_string_length(ins)) json_array_append_new(cv.out, json_pack("{s:s, s:O}", "role", "system", "content", ins));
    rc = input ? parse_input(&cv, input, msg, cap) : FAIL("input is required");
    json_decref(cv.names);
    json_decref(cv.thinking); /* a reasoning item with no turn after it: nothing to attach it to */
    if (rc || (rc = parse_tools(g, body, req, msg, cap))) return rc;
    if (json_array_size(cv.out) == 0) return FAIL("input holds no message");
    g->echo = echo_of(body);
    return 0;
}

/* ------------------------------------------------------------ response */

/* An event of the stream (data stolen): type and sequence_number first. */
static void event(struct srv_gen *g, const char *type, json_t *data)
{
    srv_sse_event(&g->out, type, json_pack("{s:s, s:I}", "type", type, "sequence_number", (json_int_t)g->seq++), data);
}

/* An output item's id: msg_, rs_ or fc_ and the response's, with its index past the first. */
static json_t *item_id(struct srv_gen *g, const char *kind, int32_t index)
{
    const char *hex = g->id + 5; /* after "resp_" */
    return index ? json_sprintf("%s_%s_%d", kind, hex, (int)index) : json_sprintf("%s_%s", kind, hex);
}

static json_t *text_part(const char *text, size_t len, json_t *lps)
{
    srv_logprobs_complete(lps);
    return json_pack("{s:s, s:s%, s:[], s:o}", "type", "output_text", "text", text ? text : "", len, "annotations",
                     "logprobs", lps ? json_incref(lps) : json_array());
}

static json_t *message_out(struct srv_gen *g, int32_t index, const char *status, json_t *part)
{
    return json_pack("{s:o, s:s, s:s, s:s, s:[o]}", "id", item_id(g, "msg", index), "type", "message", "status", status,
                     "role", "assistant", "content", part);
}

static json_t *reasoning_out(struct srv_gen *g, int32_t index, const char *text, size_t len)
{
    /* its text also as encrypted_content, which Ollama reads back as the turn's thinking */
    return json_pack("{s:o, s:s, s:[{s:s, s:s%}], s:s%}", "id", item_id(g, "rs", index), "type", "reasoning", "summary",
                     "type", "summary_text", "text", text ? text : "", len, "encrypted_content", text ? text : "", len);
}

static json_t *call_out(struct srv_gen *g, int32_t index, json_t *c, const char *status, bool with_args)
{
    json_t *fn = json_object_get(c, "function"), *name = json_object_get(fn, "name");
    json_t *ns = json_object_get(g->ns_map, json_string_value(name)); /* a namespace's function: [ns, name] */
    char *args = with_args ? json_dumps(json_object_get(fn, "arguments"), JSON_COMPACT) : NULL;
    json_t *o = json_pack("{s:o, s:s, s:s, s:O, s:O, s:s}", "id", item_id(g, "fc", index), "type", "function_call", "status",
                          status, "call_id", json_object_get(c, "id"), "name", ns ? json_array_get(ns, 1) : name,
                          "arguments", args ? args : "");
    if (ns) json_object_set(o, "namespace", json_array_get(ns, 0));
    free(args);
    return o;
}

/* The response object: status, output (stolen), usage (stolen, or NULL) and the request's settings. */
static json_t *response_object(struct srv_gen *g, const char *status, json_t *output, json_t *usage, const char *why)
{
    json_t *r = json_pack("{s:s, s:s, s:I, s:s, s:n, s:o, s:s, s:o, s:o, s:n, s:b, s:b, s:s}", "id", g->id, "object",
                          "response", "created_at", (json_int_t)g->created, "status", status, "error", "incomplete_details",
                          why ? json_pack("{s:s}", "reason", why) : json_null(), "model", g->model_name, "output", output,
                          "usage", usage ? usage : json_null(), "previous_response_id", "store", 0, "background", 0,
                          "service_tier", "default");
    json_object_update(r, g->echo);
    json_object_set_new(r, "completed_at", strcmp(status, "completed") ? json_null() : json_integer(srv_unix_ns() / 1000000000));
    return r;
}

static json_t *usage_of(json_t *fin)
{
    json_int_t p = json_integer_value(json_object_get(fin, "prompt_tokens"));
    json_int_t e = json_integer_value(json_object_get(fin, "eval_count"));
    json_int_t computed = json_integer_value(json_object_get(fin, "prompt_eval_count")); /* and kept in the cache */
    return json_pack("{s:I, s:{s:I, s:I}, s:I, s:{s:i}, s:I}", "input_tokens", p, "input_tokens_details", "cached_tokens",
                     p - computed, "cache_write_tokens", computed, "output_tokens", e, "output_tokens_details",
                     "reasoning_tokens", 0, "total_tokens", p + e);
}

void srv_responses_start(struct srv_gen *g)
{
    if (!g->stream) return;
    g->items = json_array();
    event(g, "response.created", json_pack("{s:o}", "response", response_object(g, "in_progress", json_array(), NULL, NULL)));
    event(g, "response.in_progress", json_pack("{s:o}", "response", response_object(g, "in_progress", json_array(), NULL, NULL)));
}

/* The open item's closing events, the item kept for the final response. */
static void item_close(struct srv_gen *g, const char *status)
{
    json_t *id, *item;
    const int32_t n = g->blk_index;
    if (g->blk_open == ITEM_REASONING) {
        item = reasoning_out(g, n, g->thinking.p, g->thinking.len);
        id = item_id(g, "rs", n);
        json_t *part = json_pack("{s:s, s:s%}", "type", "summary_text", "text", g->thinking.p ? g->thinking.p : "", g->thinking.len);
        event(g, "response.reasoning_summary_text.done", json_pack("{s:O, s:i, s:i, s:O}", "item_id", id, "output_index", n,
                                                                   "summary_index", 0, "text", json_object_get(part, "text")));
        event(g, "response.reasoning_summary_part.done",
              json_pack("{s:O, s:i, s:i, s:o}", "item_id", id, "output_index", n, "summary_index", 0, "part", part));
        g->thinking.len = 0;
    } else if (g->blk_open == ITEM_MESSAGE) {
        json_t *part = text_part(g->text.p, g->text.len, g->lps);
        id = item_id(g, "msg", n);
        event(g, "response.output_text.done", json_pack("{s:O, s:i, s:i, s:O, s:O}", "item_id", id, "output_index", n,
                                                        "content_index", 0, "text", json_object_get(part, "text"),
                                                        "logprobs", json_object_get(part, "logprobs")));
        event(g, "response.content_part.done",
              json_pack("{s:O, s:i, s:i, s:O}", "item_id", id, "output_index", n, "content_index", 0, "part", part));
        item = message_out(g, n, status, part);
        g->text.len = 0;
        json_decref(g->lps);
        g->lps = NULL;
    } else {
        return;
    }
    json_decref(id);
    event(g, "response.output_item.done", json_pack("{s:i, s:O}", "output_index", n, "item", item));
    json_array_append_new(g->items, item);
    g->blk_open = ITEM_NONE;
    g->blk_index++;
}

/* The item of kind open (reasoning or message), opened when another or none is. */
static json_t *item_open(struct srv_gen *g, int kind)
{
    const int32_t n = g->blk_index;
    const bool rs = kind == ITEM_REASONING;
    if (g->blk_open != kind) {
        item_close(g, "completed");
        json_t *item = rs ? json_pack("{s:o, s:s, s:[]}", "id", item_id(g, "rs", n), "type", "reasoning", "summary")
                          : json_pack("{s:o, s:s, s:s, s:s, s:[]}", "id", item_id(g, "msg", n), "type", "message", "status",
                                      "in_progress", "role", "assistant", "content");
        event(g, "response.output_item.added", json_pack("{s:i, s:o}", "output_index", n, "item", item));
        json_t *id = item_id(g, rs ? "rs" : "msg", n);
        if (rs)
            event(g, "response.reasoning_summary_part.added", json_pack("{s:o, s:i, s:i, s:{s:s, s:s}}", "item_id", id,
                                                                        "output_index", n, "summary_index", 0, "part",
                                                                        "type", "summary_text", "text", ""));
        else
            event(g, "response.content_part.added", json_pack("{s:o, s:i, s:i, s:o}", "item_id", id, "output_index", n,
                                                              "content_index", 0, "part", text_part("", 0, NULL)));
        g->blk_open = kind;
    }
    return item_id(g, rs ? "rs" : "msg", g->blk_index);
}

void srv_responses_chunk(struct srv_gen *g, json_t *line)
{
    json_t *th = json_object_get(line, "thinking"), *ct = json_object_get(line, "content"), *lps = json_object_get(line, "logprobs");
    if (json_string_length(th)) {
        json_t *id = item_open(g, ITEM_REASONING);
        wk_buf_add(&g->thinking, json_string_value(th), json_string_length(th));
        event(g, "response.reasoning_summary_text.delta", json_pack("{s:o, s:i, s:i, s:O}", "item_id", id, "output_index",
                                                                    g->blk_index, "summary_index", 0, "delta", th));
    }
    if (json_string_length(ct) || (lps && g->blk_open == ITEM_MESSAGE)) {
        json_t *id = item_open(g, ITEM_MESSAGE);
        srv_logprobs_complete(lps);
        wk_buf_add(&g->text, json_string_value(ct) ?: "", json_string_length(ct));
        if (lps) {
            if (!g->lps) g->lps = json_array();
            json_array_extend(g->lps, lps);
        }
        event(g, "response.output_text.delta",
              json_pack("{s:o, s:i, s:i, s:o, s:o}", "item_id", id, "output_index", g->blk_index, "content_index", 0, "delta",
                        ct ? json_incref(ct) : json_string(""), "logprobs", lps ? json_incref(lps) : json_array()));
    }
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(line, "tool_calls"), i, c) {
        if (g->one_call && json_array_size(g->tool_calls) > 0) break; /* parallel_tool_calls false */
        if (!g->tool_calls) g->tool_calls = json_array();
        json_array_append(g->tool_calls, c);
        item_close(g, "completed");
        const int32_t n = g->blk_index;
        json_t *done = call_out(g, n, c, "completed", true);
        event(g, "response.output_item.added", json_pack("{s:i, s:o}", "output_index", n, "item", call_out(g, n, c, "in_progress", false)));
        event(g, "response.function_call_arguments.delta", json_pack("{s:O, s:i, s:O}", "item_id", json_object_get(done, "id"),
                                                                     "output_index", n, "delta", json_object_get(done, "arguments")));
        event(g, "response.function_call_arguments.done", json_pack("{s:O, s:i, s:O}", "item_id", json_object_get(done, "id"),
                                                                    "output_index", n, "arguments", json_object_get(done, "arguments")));
        event(g, "response.output_item.done", json_pack("{s:i, s:O}", "output_index", n, "item", done));
        json_array_append_new(g->items, done);
        g->blk_index++;
    }
}

void srv_responses_done(struct srv_gen *g, json_t *fin)
{
    if (!g->stream) return;
    const bool cut = !strcmp(json_string_value(json_object_get(fin, "done_reason")) ?: "", "length");
    json_t *lps = json_object_get(fin, "logprobs"); /* of tokens that left no text */
    if (json_array_size(lps) && g->blk_open == ITEM_MESSAGE) json_array_extend(g->lps ? g->lps : (g->lps = json_array()), lps);
    item_close(g, cut ? "incomplete" : "completed");
    json_t *r = response_object(g, cut ? "incomplete" : "completed", json_incref(g->items), usage_of(fin),
                                cut ? "max_output_tokens" : NULL);
    event(g, cut ? "response.incomplete" : "response.completed", json_pack("{s:o}", "response", r));
}

void srv_responses_stream_error(struct srv_gen *g, const char *msg)
{
    event(g, "error", json_pack("{s:s, s:s, s:n}", "code", "server_error", "message", msg, "param"));
    /* and the response failed, as the API ends such a stream (Codex waits for it) */
    json_t *r = response_object(g, "failed", g->items ? json_incref(g->items) : json_array(), NULL, NULL);
    json_object_set_new(r, "error", json_pack("{s:s, s:s}", "code", "server_error", "message", msg));
    event(g, "response.failed", json_pack("{s:o}", "response", r));
}

json_t *srv_responses_response(struct srv_gen *g, json_t *fin)
{
    const bool cut = !strcmp(json_string_value(json_object_get(fin, "done_reason")) ?: "", "length");
    json_t *out = json_array();
    int32_t n = 0;
    if (g->thinking.len) json_array_append_new(out, reasoning_out(g, n++, g->thinking.p, g->thinking.len));
    /* in the order they came: the text before the calls unless the calls came first */
    const bool text = g->text.len || !json_array_size(g->tool_calls), text_first = !g->calls_seen || g->text_at_call > 0;
    for (int pass = 0; pass < 2; pass++) {
        if (text && text_first == !pass)
            json_array_append_new(out, message_out(g, n++, cut ? "incomplete" : "completed",
                                                    text_part(g->text.p, g->text.len, g->logprobs ? g->lps : NULL)));
        size_t i;
        json_t *c;
        if (!pass) json_array_foreach(g->tool_calls, i, c) json_array_append_new(out, call_out(g, n++, c, "completed", true));
    }
    return response_object(g, cut ? "incomplete" : "completed", out, usage_of(fin), cut ? "max_output_tokens" : NULL);
}
