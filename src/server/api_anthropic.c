/*
 * api_anthropic.c - Anthropic's Messages API (POST /v1/messages, and
 * /v1/messages/count_tokens), as Ollama serves it to Claude Code and the
 * anthropic SDKs (ollama's anthropic/anthropic.go and
 * middleware/anthropic.go; the shapes are docs.anthropic.com's Messages
 * API): a request's system, messages of content blocks, tools,
 * tool_choice and thinking become the runner's chat request; the runner's
 * lines become a message (content blocks: thinking, text, tool_use) or
 * the server-sent events of a stream (message_start, ping,
 * content_block_start / _delta / _stop, message_delta, message_stop);
 * errors are {"type": "error", "error": {"type", "message"}}.
 *
 * Where wick differs from Ollama's layer (each because Ollama drops or
 * misreports something): a field the API does not have is a 400 (as
 * Anthropic's own "Extra inputs are not permitted"), a block wick cannot
 * use (images, documents, server tools) is a 400 naming it, tool_choice
 * is applied, a stop sequence that ended the answer is reported as
 * stop_reason "stop_sequence" with the string, usage splits the prompt's
 * prefilled tokens (input_tokens) from those reused from the cache
 * (cache_read_input_tokens), and count_tokens counts with the model's
 * tokenizer what the template renders.
 */
#include "server_internal.h"

#include "../io/wk_options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) (snprintf(msg, cap, __VA_ARGS__), 400)

/* The block open in a stream (srv_gen.blk_open). */
enum { ANT_NONE, ANT_THINKING, ANT_TEXT };

json_t *srv_anthropic_error(int status, const char *msg)
{
    const char *type = status == 400 ? "invalid_request_error"
                       : status == 413 ? "request_too_large"
                       : status == 401                ? "authentication_error"
                       : status == 403                ? "permission_error"
                       : status == 404                ? "not_found_error"
                       : status == 429                ? "rate_limit_error"
                       : status == 503                ? "overloaded_error"
                                                      : "api_error";
    return json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type", type, "message", msg);
}

/* ------------------------------------------------------------ request */

/* A system's or a tool_result's text: a string or text blocks, joined
 * with nothing between (as Ollama joins them); NULL with the 400 in msg. */
static json_t *text_of(json_t *c, const char *where, char *msg, size_t cap, int *err)
{
    static const char *const texts[] = {"text", NULL};
    return srv_text_parts(c, texts, "", where, msg, cap, err);
}

/* One tool_result block (messages[i].content[k]) as a tool message onto results. */
static int tool_result(json_t *blk, json_t *names, json_t *results, size_t i, size_t k, char *msg,
                       size_t cap)
{
    json_t *id = json_object_get(blk, "tool_use_id"), *ie = json_object_get(blk, "is_error");
    if (!json_is_string(id))
        return FAIL("messages[%zu].content[%zu].tool_use_id must be a string", i, k);
    if (ie && !json_is_null(ie) && !json_is_boolean(ie))
        return FAIL("messages[%zu].content[%zu].is_error must be a boolean", i, k);
    char where[80];
    snprintf(where, sizeof where, "messages[%zu].content[%zu].content", i, k);
    int err = 0;
    json_t *text = text_of(json_object_get(blk, "content"), where, msg, cap, &err);
    if (!text) return err;
    json_t *m = json_pack("{s:s, s:o, s:O}", "role", "tool", "content", text, "tool_call_id", id);
    json_t *name =
        json_object_get(names, json_string_value(id)); /* its tool, for templates that name it */
    if (name) json_object_set(m, "tool_name", name);
    json_array_append_new(results, m);
    return 0;
}

/* messages[i] (role user or assistant, content a string or blocks) onto
 * out, as Ollama's convertMessage: a user turn's tool results first (one
 * tool message each, named after the tool_use its id answers: names maps
 * the ids so far to the tools), then its text; an assistant turn's text,
 * thinking and tool_use blocks as one message. */
static int one_message(json_t *m, json_t *out, json_t *names, size_t i, char *msg, size_t cap)
{
    const char *role = json_string_value(json_object_get(m, "role"));
    if (!json_is_object(m) || !role || (strcmp(role, "user") && strcmp(role, "assistant")))
        return FAIL("messages[%zu].role must be \"user\" or \"assistant\"", i);
    json_t *c = json_object_get(m, "content");
    if (json_is_string(c)) {
        json_array_append_new(out, json_pack("{s:s, s:O}", "role", role, "content", c));
        return 0;
    }
    if (!json_is_array(c))
        return FAIL("messages[%zu].content must be a string or a list of content blocks", i);
    struct wk_buf text = {0};
    json_t *thinking = NULL, *calls = json_array(), *results = json_array();
    int rc = 0;
    size_t k;
    json_t *blk;
    json_array_foreach(c, k, blk) {
        const char *type = json_string_value(json_object_get(blk, "type"));
        char shown[64] = "";
        if (type) wk_str_printable(type, strlen(type), shown, sizeof shown);
        if (!json_is_object(blk) || !type)
            rc = FAIL("messages[%zu].content[%zu] must be an object with a type", i, k);
        else if (!strcmp(type, "text")) {
            json_t *t = json_object_get(blk, "text");
            if (!json_is_string(t))
                rc = FAIL("messages[%zu].content[%zu].text must be a string", i, k);
            else
                wk_buf_add(&text, json_string_value(t), json_string_length(t));
        } else if (!strcmp(type, "tool_use")) {
            json_t *id = json_object_get(blk, "id"), *name = json_object_get(blk, "name"),
                   *in = json_object_get(blk, "input");
            if (!json_is_string(id) || !json_is_string(name) || json_string_length(name) == 0)
                rc = FAIL("messages[%zu].content[%zu] (tool_use) needs a string id and name", i, k);
            else if (in && !json_is_null(in) && !json_is_object(in))
                rc = FAIL("messages[%zu].content[%zu].input must be an object", i, k);
            else if (!json_object_set(names, json_string_value(id), name))
                json_array_append_new(
                    calls,
                    json_pack("{s:O, s:{s:O, s:o}}", "id", id, "function", "name", name,
                              "arguments", json_is_object(in) ? json_incref(in) : json_object()));
        } else if (!strcmp(type, "tool_result")) {
            rc = tool_result(blk, names, results, i, k, msg, cap);
        } else if (!strcmp(type, "thinking")) {
            json_t *t = json_object_get(blk, "thinking");
            if (!json_is_string(t))
                rc = FAIL("messages[%zu].content[%zu].thinking must be a string", i, k);
            else
                json_decref(thinking), thinking = json_incref(t);
        } else if (!strcmp(type, "redacted_thinking")) {
            /* Anthropic's encrypted reasoning: no model here can read it */
        } else if (!strcmp(type, "image")) {
            rc = FAIL("this model does not support images");
        } else {
            rc = FAIL("messages[%zu].content[%zu] is a '%s' block, which wick does not support "
                      "(text, tool_use, "
                      "tool_result and thinking are)",
                      i, k, shown);
        }
        if (rc) break;
    }
    if (!rc) {
        const bool user = !strcmp(role, "user");
        if (user) json_array_extend(out, results);
        if (text.len || json_array_size(calls) || json_string_length(thinking)) {
            json_t *o =
                json_pack("{s:s, s:s%}", "role", role, "content", text.p ? text.p : "", text.len);
            if (json_string_length(thinking)) json_object_set(o, "thinking", thinking);
            if (json_array_size(calls)) json_object_set(o, "tool_calls", calls);
            json_array_append_new(out, o);
        }
        if (!user) json_array_extend(out, results);
    }
    wk_free(text.p);
    json_decref(thinking);
    json_decref(calls);
    json_decref(results);
    return rc;
}

/* tools ([{name, description?, input_schema?, type?: "custom"}]) and
 * tool_choice ({type: auto | any | tool | none, name?,
 * disable_parallel_tool_use?}) into the runner's request, through the
 * OpenAI route's rules (srv_parse_oai_tools) once the shapes are checked
 * here under Anthropic's names. */
static int parse_tools(struct srv_gen *g, json_t *body, json_t *req, char *msg, size_t cap)
{
    json_t *tools = json_object_get(body, "tools"), *tc = json_object_get(body, "tool_choice");
    if (tools && !json_is_null(tools) && !json_is_array(tools)) return FAIL("tools must be a list");
    json_t *fns = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *type = json_string_value(json_object_get(t, "type"));
        char shown[64] = "", where[32];
        if (type) wk_str_printable(type, strlen(type), shown, sizeof shown);
        snprintf(where, sizeof where, "tools[%zu]", i);
        int rc = !json_is_object(t) ? FAIL("tools[%zu] must be an object", i)
                 : type && strcmp(type, "custom")
                     ? FAIL("tools[%zu] is Anthropic's server tool '%s': wick runs client tools only (type \"custom\")", i, shown)
                     : srv_flat_tool(fns, json_string_value(json_object_get(t, "name")), t, "input_schema", where, msg, cap);
        if (rc) {
            json_decref(fns);
            return rc;
        }
    }
    json_t *oai = json_pack("{s:o}", "tools", fns);
    if (tc && !json_is_null(tc)) {
        const char *type = json_string_value(json_object_get(tc, "type"));
        json_t *name = json_object_get(tc, "name"),
               *dp = json_object_get(tc, "disable_parallel_tool_use");
        int rc = !json_is_object(tc) || !type ? FAIL("tool_choice must be an object with a type")
                 : dp && !json_is_null(dp) && !json_is_boolean(dp)
                     ? FAIL("tool_choice.disable_parallel_tool_use must be a boolean")
                 : !strcmp(type, "tool") && !json_is_string(name)
                     ? FAIL("tool_choice of type \"tool\" needs a name")
                 : strcmp(type, "auto") && strcmp(type, "any") && strcmp(type, "tool") &&
                         strcmp(type, "none")
                     ? FAIL("tool_choice.type must be \"auto\", \"any\", \"tool\" or \"none\"")
                 : (!strcmp(type, "any") || !strcmp(type, "tool")) && json_array_size(fns) == 0
                     ? FAIL("tool_choice of type \"%s\" needs tools", type)
                     : 0;
        if (rc) {
            json_decref(oai);
            return rc;
        }
        json_object_set_new(
            oai, "tool_choice",
            !strcmp(type, "tool")
                ? json_pack("{s:s, s:{s:O}}", "type", "function", "function", "name", name)
                : json_string(!strcmp(type, "any") ? "required" : type));
        if (json_is_true(dp)) json_object_set_new(oai, "parallel_tool_calls", json_false());
    }
    int rc = srv_parse_oai_tools(g, oai, req, msg, cap);
    if (!rc) srv_tools_unstrict(req);
    json_decref(oai);
    return rc;
}

/* thinking ({type: enabled | adaptive | disabled, budget_tokens?}) and
 * output_config ({effort?, format?}) / output_format into g->think,
 * g->think_level and req "format". budget_tokens is checked, not applied:
 * max_tokens bounds thinking and answer together (README). */
static int parse_thinking(struct srv_gen *g, json_t *body, json_t *req, char *msg, size_t cap)
{
    json_t *th = json_object_get(body, "thinking"), *oc = json_object_get(body, "output_config");
    json_t *of = json_object_get(body, "output_format");
    g->think = -1;
    g->think_level = NULL;
    if (th && !json_is_null(th)) {
        const char *type = json_string_value(json_object_get(th, "type"));
        json_t *budget = json_object_get(th, "budget_tokens");
        const char *shown = json_string_value(json_object_get(th, "display"));
        if (!json_is_object(th) || !type ||
            (strcmp(type, "enabled") && strcmp(type, "disabled") && strcmp(type, "adaptive") &&
             strcmp(type, "between_tools")))
            return FAIL("thinking.type must be \"enabled\", \"adaptive\", \"between_tools\" or "
                        "\"disabled\"");
        if (budget && !json_is_null(budget) &&
            (!json_is_integer(budget) || json_integer_value(budget) < 1))
            return FAIL("thinking.budget_tokens must be a positive integer");
        if (json_object_get(th, "display") && !json_is_null(json_object_get(th, "display")) &&
            (!shown || (strcmp(shown, "summarized") && strcmp(shown, "omitted"))))
            return FAIL("thinking.display must be \"summarized\" or \"omitted\"");
        g->think = strcmp(type, "disabled") != 0;
        g->ant_omit_thinking = shown && !strcmp(shown, "omitted"); /* thought, not shown */
    }
    if (oc && !json_is_null(oc)) {
        if (!json_is_object(oc)) return FAIL("output_config must be an object");
        const char *k;
        json_t *v;
        json_object_foreach(oc, k, v) {
            if (strcmp(k, "effort") && strcmp(k, "format"))
                return FAIL("output_config.%.64s: Extra inputs are not permitted", k);
        }
        json_t *ef = json_object_get(oc, "effort");
        if (ef && !json_is_null(ef)) {
            const char *e = json_string_value(ef);
            static const char *const levels[][2] = {{"low", "low"},
                                                    {"medium", "medium"},
                                                    {"high", "high"},
                                                    {"xhigh", "high"},
                                                    {"max", "high"}};
            for (size_t i = 0; e && i < WK_ARRAY_LEN(levels) && !g->think_level; i++)
                if (!strcmp(e, levels[i][0])) g->think_level = levels[i][1];
            if (!g->think_level)
                return FAIL("output_config.effort must be \"low\", \"medium\", \"high\", \"xhigh\" "
                            "or \"max\"");
            if (g->think == 0)
                g->think_level = NULL; /* thinking disabled wins */
            else
                g->think = 1;
        }
        if (json_object_get(oc, "format") && !json_is_null(json_object_get(oc, "format"))) {
            if (of && !json_is_null(of))
                return FAIL("output_config.format and output_format cannot be used together");
            of = json_object_get(oc, "format");
        }
    }
    if (!of || json_is_null(of)) return 0;
    const char *type = json_string_value(json_object_get(of, "type"));
    json_t *schema = json_object_get(of, "schema");
    if (!json_is_object(of) || !type || strcmp(type, "json_schema") || !json_is_object(schema))
        return FAIL("output format must be {\"type\": \"json_schema\", \"schema\": {...}}");
    int rc = srv_check_schema(schema, true, "output format", msg, cap);
    if (!rc) json_object_set(req, "format", schema);
    return rc;
}

/* temperature, top_p, top_k (which anthropic's SDKs no longer send: the
 * model's defaults apply, its Modelfile's PARAMETERs as with Ollama),
 * max_tokens, stop_sequences into the runner's options and stop list. */
static int parse_sampling(struct srv_gen *g, json_t *body, json_t *ropts, json_t *stop, char *msg,
                          size_t cap)
{
    static const struct {
        const char *name;
        double hi;
    } nums[] = {{"temperature", 1}, {"top_p", 1}, {"top_k", 1 << 24}};
    for (size_t i = 0; i < WK_ARRAY_LEN(nums); i++) {
        json_t *v = json_object_get(body, nums[i].name);
        if (!v || json_is_null(v)) continue;
        double d = json_number_value(v);
        if (!json_is_number(v) || d < 0 || d > nums[i].hi || (i == 2 && d != floor(d)))
            return FAIL("%s must be a%s between 0 and %.0f", nums[i].name,
                        i == 2 ? "n integer" : " number", nums[i].hi);
        json_object_set_new(ropts, nums[i].name,
                            i == 2 ? json_integer((json_int_t)d) : json_real(d));
    }
    json_t *mt = json_object_get(body, "max_tokens");
    if (mt || !g->render_only) {
        double most = wk_option_find("num_predict")->max;
        if (!json_is_integer(mt) || json_integer_value(mt) < 1)
            return FAIL("max_tokens: %s", mt ? "must be a positive integer" : "Field required");
        json_object_set_new(ropts, "num_predict",
                            json_integer(json_integer_value(mt) > most ? (json_int_t)most
                                                                       : json_integer_value(mt)));
    }
    json_t *ss = json_object_get(body, "stop_sequences");
    if (ss && !json_is_null(ss) && !json_is_array(ss))
        return FAIL("stop_sequences must be a list of strings");
    size_t i;
    json_t *s;
    json_array_foreach(ss, i, s) {
        if (!json_is_string(s)) return FAIL("stop_sequences[%zu] must be a string", i);
        if (i >= WK_MAX_STOPS)
            return FAIL("stop_sequences holds more than %d strings", WK_MAX_STOPS);
        if (json_string_length(s) > WK_MAX_STOP_BYTES)
            return FAIL("stop_sequences[%zu] is longer than %d bytes", i, WK_MAX_STOP_BYTES);
        if (json_string_length(s) > 0) json_array_append(stop, s), g->custom_stops = true;
    }
    return 0;
}

int srv_anthropic_parse(struct srv_gen *g, json_t *body, json_t *req, json_t *ropts, json_t *stop,
                        char *msg, size_t cap)
{
    /* the API's fields (anthropic 2.17's MessageCreateParams and its beta
     * one, which Claude Code sends to /v1/messages?beta=true, and the
     * sampling ones older versions send); those that steer only
     * Anthropic's service (caching, routing, billing, speed, diagnostics,
     * fallbacks after a refusal) change nothing here, nor does
     * context_management, whose edits clear old tool results past a
     * trigger far beyond a local context (wick's truncate drops the oldest
     * turns instead; README); container, mcp_servers and compaction, which
     * would, are refused as unknown */
    static const char *const known[] = {"model", "max_tokens", "messages", "system", "stream", "temperature", "top_p",
                                        "top_k", "stop_sequences", "tools", "tool_choice", "thinking", "metadata",
                                        "output_config", "output_format", "service_tier", "cache_control",
                                        "inference_geo", "speed", "diagnostics", "user_profile_id", "workspace_id",
                                        "billing_policy", "fallbacks", "fallback_credit_token", "context_management"};
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v) {
        bool ok = false;
        for (size_t i = 0; i < WK_ARRAY_LEN(known) && !ok; i++)
            ok = !strcmp(k, known[i]);
        char shown[64];
        wk_str_printable(k, strlen(k), shown, sizeof shown);
        if (!ok) return FAIL("%s: Extra inputs are not permitted", shown);
    }
    json_t *stream = json_object_get(body, "stream");
    if (stream && !json_is_null(stream) && !json_is_boolean(stream))
        return FAIL("stream must be a boolean");
    g->stream = json_is_true(stream) && !g->render_only;
    int rc = parse_sampling(g, body, ropts, stop, msg, cap);
    if (rc || (rc = parse_thinking(g, body, req, msg, cap))) return rc;
    json_t *msgs = json_object_get(body, "messages"), *out = json_array();
    json_object_set_new(req, "messages", out);
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return FAIL("messages: %s", json_is_array(msgs) ? "at least one message is required"
                                                        : "must be a list of messages");
    json_t *sys = json_object_get(body, "system");
    if (sys && !json_is_null(sys)) {
        int err = 0;
        json_t *text = text_of(sys, "system", msg, cap, &err);
        if (!text) return err;
        if (json_string_length(text))
            json_array_append_new(out, json_pack("{s:s, s:o}", "role", "system", "content", text));
        else
            json_decref(text);
    }
    size_t i;
    json_t *m;
    json_t *names = json_object(); /* tool_use ids: their tools' names */
    json_array_foreach(msgs, i, m) if ((rc = one_message(m, out, names, i, msg, cap))) break;
    json_decref(names);
    if (rc) return rc;
    if ((rc = parse_tools(g, body, req, msg, cap))) return rc;
    /* Ollama's chat: the oldest messages give way to fit the context; and
     * thinking asked of a model that cannot think is none (its relax_thinking) */
    json_object_set_new(req, "truncate_history", json_boolean(!g->render_only));
    json_object_set_new(req, "think_relaxed", json_true());
    return 0;
}

/* ------------------------------------------------------------ response */

/* An event of the stream: "event: type" and its data (stolen), type first. */
static void event(struct srv_gen *g, const char *type, json_t *data)
{
    srv_sse_event(&g->out, type, json_pack("{s:s}", "type", type), data);
}

void srv_anthropic_start(struct srv_gen *g, json_int_t prompt_tokens)
{
    if (!g->stream) return;
    event(g, "message_start",
          json_pack("{s:{s:s, s:s, s:s, s:s, s:[], s:n, s:n, s:{s:I, s:i}}}", "message", "id",
                    g->id, "type", "message", "role", "assistant", "model", g->model_name,
                    "content", "stop_reason", "stop_sequence", "usage", "input_tokens",
                    prompt_tokens, "output_tokens", 0));
    event(g, "ping", json_object());
}

static void block_stop(struct srv_gen *g)
{
    if (g->blk_open == ANT_NONE) return;
    event(g, "content_block_stop", json_pack("{s:i}", "index", g->blk_index++));
    g->blk_open = ANT_NONE;
}

/* A thinking or text delta, the block opened first when another is open or none. */
static void delta(struct srv_gen *g, int kind, json_t *text)
{
    if (json_string_length(text) == 0) return;
    const bool th = kind == ANT_THINKING;
    if (g->blk_open != kind) {
        block_stop(g);
        event(g, "content_block_start",
              json_pack(th ? "{s:i, s:{s:s, s:s, s:s}}" : "{s:i, s:{s:s, s:s}}", "index",
                        g->blk_index, "content_block", "type", th ? "thinking" : "text",
                        th ? "thinking" : "text", "", "signature", ""));
        g->blk_open = kind;
    }
    event(g, "content_block_delta",
          json_pack("{s:i, s:{s:s, s:O}}", "index", g->blk_index, "delta", "type",
                    th ? "thinking_delta" : "text_delta", th ? "thinking" : "text", text));
}

void srv_anthropic_chunk(struct srv_gen *g, json_t *line)
{
    if (!g->ant_omit_thinking) delta(g, ANT_THINKING, json_object_get(line, "thinking"));
    delta(g, ANT_TEXT, json_object_get(line, "content"));
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(line, "tool_calls"), i, c) {
        if (g->one_call && json_array_size(g->tool_calls) > 0)
            break; /* disable_parallel_tool_use */
        if (!g->tool_calls) g->tool_calls = json_array();
        json_array_append(g->tool_calls, c);
        json_t *fn = json_object_get(c, "function");
        char *args = json_dumps(json_object_get(fn, "arguments"), JSON_COMPACT);
        block_stop(g);
        event(g, "content_block_start",
              json_pack("{s:i, s:{s:s, s:O, s:O, s:{}}}", "index", g->blk_index, "content_block",
                        "type", "tool_use", "id", json_object_get(c, "id"), "name",
                        json_object_get(fn, "name"), "input"));
        event(g, "content_block_delta",
              json_pack("{s:i, s:{s:s, s:s}}", "index", g->blk_index, "delta", "type",
                        "input_json_delta", "partial_json", args ? args : "{}"));
        free(args);
        g->blk_open = ANT_TEXT; /* closed by block_stop, as any */
        block_stop(g);
    }
}

/* stop_reason and stop_sequence of the final line fin. */
static const char *stop_reason(struct srv_gen *g, json_t *fin, json_t **seq)
{
    const char *reason = json_string_value(json_object_get(fin, "done_reason"));
    json_t *s = json_object_get(fin, "stop_sequence");
    *seq = json_null();
    if (reason && !strcmp(reason, "length")) return "max_tokens"; /* cut, even after a call (Anthropic's) */
    if (json_array_size(g->tool_calls) > 0) return "tool_use";
    if (g->custom_stops &&
        json_is_string(s)) { /* the request's (its stop list replaced the model's) */
        *seq = json_incref(s);
        return "stop_sequence";
    }
    return "end_turn";
}

/* usage: the prompt's prefilled tokens, those its cached prefix gave, the answer's */
static json_t *usage(json_t *fin)
{
    json_int_t p = json_integer_value(json_object_get(fin, "prompt_tokens"));
    json_int_t e = json_integer_value(json_object_get(fin, "prompt_eval_count"));
    return json_pack("{s:I, s:I, s:I}", "input_tokens", e, "cache_read_input_tokens", p - e,
                     "output_tokens", json_integer_value(json_object_get(fin, "eval_count")));
}

void srv_anthropic_done(struct srv_gen *g, json_t *fin)
{
    if (!g->stream) return;
    block_stop(g);
    json_t *seq;
    const char *reason = stop_reason(g, fin, &seq);
    event(g, "message_delta",
          json_pack("{s:{s:s, s:o}, s:o}", "delta", "stop_reason", reason, "stop_sequence", seq,
                    "usage", usage(fin)));
    event(g, "message_stop", json_object());
}

void srv_anthropic_stream_error(struct srv_gen *g, const char *msg)
{
    json_t *e = srv_anthropic_error(500, msg);
    json_object_del(e, "type");
    event(g, "error", e);
}

json_t *srv_anthropic_response(struct srv_gen *g, json_t *fin)
{
    json_t *content = json_array();
    if (g->thinking.len && !g->ant_omit_thinking)
        json_array_append_new(content, json_pack("{s:s, s:s%, s:s}", "type", "thinking", "thinking",
                                                 g->thinking.p, g->thinking.len, "signature", ""));
    /* the text before the tool_use blocks unless the calls came first (as a stream sends them) */
    json_t *text = g->text.len ? json_pack("{s:s, s:s%}", "type", "text", "text", g->text.p, g->text.len) : NULL;
    const bool text_first = !g->calls_seen || g->text_at_call > 0;
    if (text && text_first) json_array_append(content, text);
    size_t i;
    json_t *c;
    json_array_foreach(g->tool_calls, i, c) {
        json_t *fn = json_object_get(c, "function");
        json_array_append_new(content, json_pack("{s:s, s:O, s:O, s:O}", "type", "tool_use", "id",
                                                 json_object_get(c, "id"), "name",
                                                 json_object_get(fn, "name"), "input",
                                                 json_object_get(fn, "arguments")));
    }
    if (text && !text_first) json_array_append(content, text);
    json_decref(text);
    json_t *seq;
    const char *reason = stop_reason(g, fin, &seq);
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:o, s:o}", "id", g->id, "type", "message",
                     "role", "assistant", "model", g->model_name, "content", content, "stop_reason",
                     reason, "stop_sequence", seq, "usage", usage(fin));
}
