/*
 * api.c - the Ollama and OpenAI request and response shapes of the
 * generation routes: validating a body into a runner request, and turning
 * the runner's lines into NDJSON objects (Ollama) or SSE chunks (OpenAI),
 * streamed or aggregated. Shapes follow docs/reference/
 * ollama-mlx-runner.md §8.2, §8.3 and §8.7.
 */
#include "server_internal.h"

#include "../io/wk_options.h"
#include "../runtime/wk_gotmpl.h"
#include "../runtime/wk_grammar.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ buffers */

bool srv_buf_json(struct wk_buf *b, json_t *obj, const char *tail)
{
    char *s = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    bool ok = s && wk_buf_add(b, s, strlen(s)) && wk_buf_add(b, tail, strlen(tail));
    free(s);
    return ok;
}

void srv_sse_event(struct wk_buf *b, const char *type, json_t *head, json_t *data)
{
    wk_buf_add(b, "event: ", 7);
    wk_buf_add(b, type, strlen(type));
    wk_buf_add(b, "\ndata: ", 7);
    json_object_update(head, data);
    json_decref(data);
    srv_buf_json(b, head, "\n\n");
}

int srv_http_status(enum wk_status st)
{
    switch (st) {
    case WK_OK: return 200;
    case WK_E_NOT_FOUND: return 404;
    case WK_E_PERMISSION: return 403;
    case WK_E_CANCELLED: return 503;
    case WK_E_NOMEM:
    case WK_E_IO:
    case WK_E_INTERNAL: return 500;
    case WK_E_FORMAT:
    case WK_E_UNSUPPORTED:
    case WK_E_INVALID:
    case WK_E_RANGE: return 400;
    }
    return 500;
}

static bool is_openai(enum srv_api api)
{
    return api == API_OAI_CHAT || api == API_OAI_COMPLETION || api == API_OAI_RESPONSES;
}

json_t *srv_error_body(enum srv_api api, int status, const char *msg)
{
    /* a message cut to its buffer may end inside a character (a long
     * name or key of the client's): never a reason for the error itself
     * to fail */
    size_t n;
    char *clean = wk_utf8_sanitize(msg, strlen(msg), &n);
    const char *m = clean ? clean : "error";
    json_t *r;
    if (api == API_ANTHROPIC) {
        r = srv_anthropic_error(status, m);
    } else if (!is_openai(api)) {
        r = json_pack("{s:s}", "error", m);
    } else {
        const char *type = status == 404 ? "not_found_error" : status < 500 ? "invalid_request_error"
                                                                            : "api_error";
        r = json_pack("{s:{s:s, s:s, s:n, s:n}}", "error", "message", m, "type", type, "param", "code");
    }
    wk_free(clean);
    return r;
}

/* ------------------------------------------------------------ parsing */

#define FAIL(...) (snprintf(msg, cap, __VA_ARGS__), 400)

static bool is_int(json_t *v)
{
    return json_is_integer(v) || (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
}

/* An integral number's value: an integer's all 64 bits (a seed past 2^53
 * stays whole), a real's converted (the caller has range-checked it). */
static json_int_t int_value(json_t *v)
{
    return json_is_integer(v) ? json_integer_value(v) : (json_int_t)json_real_value(v);
}

/* Ollama "options" into the runner's options, stop list and g->n_ctx. */
static int parse_ollama_options(struct srv_gen *g, json_t *opts, json_t *ropts, json_t *stop,
                                char *msg, size_t cap)
{
    if (!opts || json_is_null(opts)) return 0;
    if (!json_is_object(opts)) return FAIL("options must be an object, not %s",
                                           json_is_string(opts)   ? "a string"
                                           : json_is_array(opts)  ? "a list"
                                           : json_is_number(opts) ? "a number"
                                                                  : "a boolean");
    const char *k;
    json_t *v;
    json_object_foreach(opts, k, v) {
        if (json_is_null(v)) continue;
        /* the options table (wk_options.h): the CLI, Modelfiles and the runner take the same */
        const struct wk_option *o = wk_option_find(k);
        if (!o) {
            char shown[64];
            wk_str_printable(k, strlen(k), shown, sizeof shown);
            return FAIL("unknown option '%s'", shown);
        }
        if (o->type == WK_MF_STRING) { /* stop */
            if (json_is_string(v)) v = json_pack("[O]", v);
            else if (json_is_array(v)) json_incref(v);
            else return FAIL("option 'stop' must be a list of strings");
            size_t i;
            json_t *s;
            json_array_foreach(v, i, s) {
                const char *bad = !json_is_string(s)                              ? "must be a list of strings"
                                  : json_array_size(stop) >= WK_MAX_STOPS         ? "holds more than 16 strings"
                                  : json_string_length(s) > WK_MAX_STOP_BYTES     ? "holds a string longer than 1024 bytes"
                                                                                  : NULL;
                if (bad) {
                    json_decref(v);
                    return FAIL("option 'stop' %s", bad);
                }
                json_array_append(stop, s);
            }
            json_decref(v);
            continue;
        }
        if (o->type == WK_MF_BOOL) {
            if (!json_is_boolean(v)) return FAIL("option '%s' must be a boolean", k);
            continue; /* none of the bool options is applied */
        }
        if (!json_is_number(v)) return FAIL("option '%s' must be a number", k);
        struct wk_error e;
        if (wk_option_check_number(o, json_number_value(v), &e)) return FAIL("%s", e.msg);
        if (!o->applied) continue;
        if (strcmp(k, "num_ctx") == 0) g->n_ctx = (int32_t)json_number_value(v);
        else if (o->type == WK_MF_INT) json_object_set_new(ropts, k, json_integer(int_value(v)));
        else json_object_set(ropts, k, v);
    }
    return 0;
}

static int parse_logprobs(struct srv_gen *g, json_t *body, char *msg, size_t cap)
{
    json_t *lp = json_object_get(body, "logprobs"), *top = json_object_get(body, "top_logprobs");
    if (lp && !json_is_null(lp) && !json_is_boolean(lp)) return FAIL("logprobs must be a boolean");
    if (top && !json_is_null(top) && !is_int(top)) return FAIL("top_logprobs must be an integer");
    g->logprobs = json_is_true(lp);
    g->top_logprobs = top && !json_is_null(top) ? (int32_t)json_number_value(top) : 0;
    if (g->top_logprobs < 0 || g->top_logprobs > 20) return FAIL("top_logprobs must be between 0 and 20");
    return 0;
}

/* A tool call's arguments: an object, or (OpenAI's) a string holding one;
 * a new reference, NULL when neither. */
static json_t *call_arguments(json_t *a)
{
    if (json_is_object(a)) return json_incref(a);
    if (!json_is_string(a)) return a && !json_is_null(a) ? NULL : json_object();
    json_t *o = json_loadb(json_string_value(a), json_string_length(a), 0, NULL);
    if (json_is_object(o)) return o;
    json_decref(o);
    return NULL;
}

/* The parts of message m beyond role and content, into o: thinking
 * (Ollama) or reasoning_content (OpenAI), tool_calls (Ollama's arguments
 * object or OpenAI's JSON string), tool_call_id, tool_name (Ollama) or name. */
static int message_extras(json_t *m, json_t *o, size_t i, char *msg, size_t cap)
{
    json_t *th = json_object_get(m, "thinking");
    if (!th || json_is_null(th)) th = json_object_get(m, "reasoning_content");
    if (th && !json_is_null(th) && !json_is_string(th)) return FAIL("messages[%zu].thinking must be a string", i);
    if (json_string_length(th) > 0) json_object_set(o, "thinking", th);
    static const char *const ids[][2] = {{"tool_call_id", "tool_call_id"}, {"tool_name", "tool_name"}, {"name", "tool_name"}};
    for (size_t k = 0; k < 3; k++) {
        json_t *v = json_object_get(m, ids[k][0]);
        if (v && !json_is_null(v) && !json_is_string(v)) return FAIL("messages[%zu].%s must be a string", i, ids[k][0]);
        if (json_is_string(v) && !json_object_get(o, ids[k][1])) json_object_set(o, ids[k][1], v);
    }
    json_t *calls = json_object_get(m, "tool_calls");
    if (!calls || json_is_null(calls)) return 0;
    if (!json_is_array(calls)) return FAIL("messages[%zu].tool_calls must be a list", i);
    json_t *list = json_array();
    json_object_set_new(o, "tool_calls", list);
    size_t k;
    json_t *c;
    json_array_foreach(calls, k, c) {
        json_t *fn = json_object_get(c, "function"), *name = json_object_get(fn, "name");
        if (!json_is_string(name)) return FAIL("messages[%zu].tool_calls[%zu].function.name must be a string", i, k);
        json_t *args = call_arguments(json_object_get(fn, "arguments"));
        if (!args)
            return FAIL("messages[%zu].tool_calls[%zu].function.arguments must be a JSON object (or a string "
                        "holding one)", i, k);
        json_t *call = json_pack("{s:{s:O, s:o}}", "function", "name", name, "arguments", args);
        json_t *id = json_object_get(c, "id");
        if (json_is_string(id)) json_object_set(call, "id", id);
        json_array_append_new(list, call);
    }
    return 0;
}

/* A request's messages into out (roles lower-cased, "developer" as
 * "system"); oai: OpenAI's roles only (system, developer, user,
 * assistant, tool), as OpenAI refuses others; Ollama passes any role to
 * the template. */
static int parse_messages(json_t *in, json_t *out, bool oai, char *msg, size_t cap)
{
    if (!json_is_array(in)) return FAIL("messages must be a list");
    size_t i;
    json_t *m;
    json_array_foreach(in, i, m) {
        json_t *role = json_object_get(m, "role");
        if (!json_is_object(m) || !json_is_string(role))
            return FAIL("messages[%zu] must be an object with a string role", i);
        json_t *images = json_object_get(m, "images");
        if (images && !json_is_null(images) && !json_is_array(images))
            return FAIL("messages[%zu].images must be a list", i);
        if (json_array_size(images) > 0) return FAIL("this model does not support images");
        char r[72];
        if (json_string_length(role) >= sizeof r) /* never cut (inside a character, or into another role) */
            return FAIL("messages[%zu].role is longer than %zu bytes", i, sizeof r - 1);
        int err = 0;
        /* OpenAI's text parts joined by a newline where the text so far is not
         * empty, as llama-server's common_chat_msgs_to_json_oaicompat joins them */
        static const char *const texts[] = {"text", NULL};
        char where[48];
        snprintf(where, sizeof where, "messages[%zu].content", i);
        json_t *content = srv_text_parts(json_object_get(m, "content"), texts, "\n", where, msg, cap, &err);
        if (!content) return err;
        snprintf(r, sizeof r, "%s", json_string_value(role));
        for (char *p = r; *p; p++)
            if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
        if (oai && strcmp(r, "function") == 0) strcpy(r, "tool"); /* OpenAI's deprecated function result */
        if (oai && strcmp(r, "system") && strcmp(r, "developer") && strcmp(r, "user") && strcmp(r, "assistant") &&
            strcmp(r, "tool"))
            return FAIL("messages[%zu].role must be \"system\", \"developer\", \"user\", \"assistant\", \"tool\" or "
                        "\"function\"", i);
        if (strcmp(r, "developer") == 0) strcpy(r, "system");
        json_t *o = json_pack("{s:s, s:o}", "role", r, "content", content);
        json_array_append_new(out, o);
        if ((err = message_extras(m, o, i, msg, cap))) return err;
    }
    return 0;
}

/* A format (Ollama's "json" or a JSON schema object; "" is none), checked
 * by compiling it (an unsupported keyword is a 400 naming it), into req
 * "format". */
static int parse_format(json_t *format, json_t *req, char *msg, size_t cap)
{
    if (!format || json_is_null(format) || (json_is_string(format) && json_string_length(format) == 0)) return 0;
    if (json_is_string(format) && strcmp(json_string_value(format), "json") == 0) {
        json_object_set(req, "format", format);
        return 0;
    }
    if (!json_is_object(format)) return FAIL("format must be \"json\" or a JSON schema object");
    struct wk_grammar *gr = NULL;
    struct wk_error e;
    enum wk_status st = wk_grammar_from_json_schema(format, &gr, &e);
    wk_grammar_free(gr);
    if (st == WK_E_NOMEM) return FAIL("out of memory");
    if (st) return FAIL("format: %s", e.msg);
    json_object_set(req, "format", format);
    return 0;
}

/* OpenAI's response_format ({type: text | json_object | json_schema,
 * json_schema: {schema}}) and llama-server's grammar (GBNF text), into req
 * "format" / "grammar". */
static int parse_oai_format(json_t *body, json_t *req, char *msg, size_t cap)
{
    json_t *rf = json_object_get(body, "response_format"), *gbnf = json_object_get(body, "grammar");
    if (gbnf && !json_is_null(gbnf)) {
        if (!json_is_string(gbnf)) return FAIL("grammar must be a string (GBNF)");
        if (rf && !json_is_null(rf)) return FAIL("grammar and response_format cannot be used together");
        struct wk_grammar *gr = NULL;
        struct wk_error e;
        enum wk_status st = wk_grammar_from_gbnf(json_string_value(gbnf), json_string_length(gbnf), NULL, &gr, &e);
        wk_grammar_free(gr);
        if (st) return FAIL("%s%s", strncmp(e.msg, "grammar", 7) ? "grammar: " : "", e.msg);
        json_object_set(req, "grammar", gbnf);
        return 0;
    }
    if (!rf || json_is_null(rf)) return 0;
    const char *type = json_string_value(json_object_get(rf, "type"));
    if (!json_is_object(rf) || !type) return FAIL("response_format must be an object with a type");
    if (strcmp(type, "text") == 0) return 0;
    if (strcmp(type, "json_object") == 0) {
        json_object_set_new(req, "format", json_string("json"));
        return 0;
    }
    if (strcmp(type, "json_schema") != 0)
        return FAIL("response_format.type must be \"text\", \"json_object\" or \"json_schema\"");
    json_t *schema = json_object_get(json_object_get(rf, "json_schema"), "schema");
    if (!json_is_object(schema)) return FAIL("response_format.json_schema.schema must be a JSON schema object");
    return parse_format(schema, req, msg, cap);
}

/* A suffix (Ollama's /api/generate, OpenAI's legacy completions): with a
 * prefix (the prompt; on /api/generate a non-empty one, as an empty prompt
 * only loads the model) the request asks for the text between them, sent
 * to the runner as "fim" (runner_fim.c). Returns 1 when it does, 0 when
 * there is no suffix, else the 400. */
static int parse_suffix(json_t *body, json_t *req, json_t *prompt, bool empty_prefix, char *msg, size_t cap)
{
    json_t *s = json_object_get(body, "suffix");
    if (!s || json_is_null(s)) return 0;
    if (!json_is_string(s)) return FAIL("suffix must be a string");
    if (json_string_length(s) == 0 || (!empty_prefix && json_string_length(prompt) == 0)) return 0;
    if (json_is_true(json_object_get(body, "raw"))) return FAIL("raw mode does not support suffix");
    json_t *think = json_object_get(body, "think");
    if (think && !json_is_null(think) && !json_is_false(think)) return FAIL("think is not supported with a suffix");
    json_object_set_new(req, "fim", json_pack("{s:O, s:O}", "prefix", prompt, "suffix", s));
    return 1;
}

static int parse_ollama(struct srv_gen *g, json_t *body, json_t *req, json_t *ropts, json_t *stop,
                        char *msg, size_t cap)
{
    json_t *stream = json_object_get(body, "stream");
    if (stream && !json_is_null(stream) && !json_is_boolean(stream)) return FAIL("stream must be a boolean");
    g->stream = !stream || json_is_null(stream) || json_is_true(stream);
    if (!srv_parse_keep_alive(json_object_get(body, "keep_alive"), &g->keep_alive_ns))
        return FAIL("keep_alive must be a duration (\"5m\") or a number of seconds");
    int frc = parse_format(json_object_get(body, "format"), req, msg, cap);
    if (frc) return frc;
    int rc = parse_ollama_options(g, json_object_get(body, "options"), ropts, stop, msg, cap);
    if (rc || (rc = parse_logprobs(g, body, msg, cap))) return rc;
    /* truncate (Ollama's, default true): a conversation past the context drops its oldest messages */
    json_t *trunc = json_object_get(body, "truncate");
    if (trunc && !json_is_null(trunc) && !json_is_boolean(trunc)) return FAIL("truncate must be true or false");
    json_object_set_new(req, "truncate_history", json_boolean(!json_is_false(trunc)));
    if (g->api == API_CHAT) {
        json_t *msgs = json_object_get(body, "messages");
        json_t *out = json_array();
        json_object_set_new(req, "messages", out);
        if (msgs && !json_is_null(msgs) && (rc = parse_messages(msgs, out, false, msg, cap))) return rc;
        return srv_parse_tools(json_object_get(body, "tools"), req, msg, cap);
    }
    json_t *prompt = json_object_get(body, "prompt"), *system = json_object_get(body, "system");
    json_t *raw = json_object_get(body, "raw");
    if (prompt && !json_is_null(prompt) && !json_is_string(prompt)) return FAIL("prompt must be a string");
    if (system && !json_is_null(system) && !json_is_string(system)) return FAIL("system must be a string");
    if (raw && !json_is_null(raw) && !json_is_boolean(raw)) return FAIL("raw must be a boolean");
    json_t *images = json_object_get(body, "images");
    if (images && !json_is_null(images) && !json_is_array(images)) return FAIL("images must be a list");
    if (json_array_size(images) > 0) return FAIL("this model does not support images");
    const char *text = json_is_string(prompt) ? json_string_value(prompt) : "";
    /* Ollama's deprecated context: an earlier answer's token ids (checked against the vocabulary by the runner) */
    json_t *ctx = json_object_get(body, "context");
    if (ctx && !json_is_null(ctx) && !json_is_array(ctx)) return FAIL("context must be a list of token ids");
    if (json_array_size(ctx) > (1u << 20)) return FAIL("context has %zu token ids; at most %u", json_array_size(ctx), 1u << 20);
    int src = parse_suffix(body, req, prompt, false, msg, cap);
    if (src > 1) return src;
    if (json_is_true(raw)) {
        /* as Ollama checks them (req.Template != "" || req.System != "" ||
         * len(req.Context) > 0): its Go client sends "system": "" and
         * "template": "" with every request (no omitempty) */
        json_t *tpl = json_object_get(body, "template");
        if (json_string_length(system) > 0 || (tpl && !json_is_null(tpl) && !(json_is_string(tpl) && !json_string_length(tpl))) ||
            (ctx && !json_is_null(ctx) && !(json_is_array(ctx) && json_array_size(ctx) == 0)))
            return FAIL("raw mode does not support template, system, or context");
        if (json_is_string(prompt)) json_object_set(req, "raw", prompt); /* shared, not copied */
        else json_object_set_new(req, "raw", json_string(""));
        json_object_set_new(req, "raw_special", json_true()); /* a prompt formatted by hand: its control tokens count */
    } else {
        /* a per-request Go TEMPLATE (Ollama's): checked here, applied by the runner */
        json_t *tpl = json_object_get(body, "template");
        if (tpl && !json_is_null(tpl) && !json_is_string(tpl)) return FAIL("template must be a string");
        if (json_string_length(tpl) > 0) {
            struct wk_gotmpl *t = NULL;
            struct wk_error e;
            enum wk_status st = wk_gotmpl_parse(json_string_value(tpl), json_string_length(tpl), &t, &e);
            wk_gotmpl_free(t);
            if (st) return FAIL("%s", e.msg);
            json_object_set(req, "template", tpl);
        }
        /* the answer's context ids (Ollama: non-raw generate), an earlier one's before this prompt */
        json_object_set_new(req, "want_context", json_true());
        if (json_array_size(ctx) > 0) json_object_set(req, "context", ctx);
        if (src) return 0; /* the prompt and the suffix alone, as Ollama's template.Execute takes them */
        json_t *m = json_array(); /* an empty prompt only loads the model, whatever the system (Ollama) */
        if (*text && json_is_string(system) && json_string_length(system) > 0)
            json_array_append_new(m, json_pack("{s:s, s:O}", "role", "system", "content", system));
        if (*text) json_array_append_new(m, json_pack("{s:s, s:O}", "role", "user", "content", prompt));
        json_object_set_new(req, "messages", m);
    }
    return 0;
}

static int parse_openai(struct srv_gen *g, json_t *body, json_t *req, json_t *ropts, json_t *stop,
                        char *msg, size_t cap)
{
    json_t *v;
    if ((v = json_object_get(body, "stream")) && !json_is_null(v) && !json_is_boolean(v))
        return FAIL("stream must be a boolean");
    g->stream = json_is_true(v);
    json_t *so = json_object_get(body, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) return FAIL("stream_options must be an object");
        if (!g->stream) return FAIL("stream_options is only allowed when stream is true");
        json_t *iu = json_object_get(so, "include_usage");
        if (iu && !json_is_boolean(iu)) return FAIL("stream_options.include_usage must be a boolean");
        g->include_usage = json_is_true(iu);
    }
    /* absent temperature and top_p mean 1.0 in OpenAI's API */
    static const struct {
        const char *name, *opt;
        double lo, hi, dflt;
    } nums[] = {{"temperature", "temperature", 0, 2, 1.0},
                {"top_p", "top_p", 0, 1, 1.0},
                {"presence_penalty", "presence_penalty", -2, 2, NAN},
                {"frequency_penalty", "frequency_penalty", -2, 2, NAN},
                /* llama-server's and vLLM's extensions, as the options table has them */
                {"top_k", "top_k", 0, 1 << 24, NAN},
                {"min_p", "min_p", 0, 1, NAN},
                {"repeat_penalty", "repeat_penalty", 0, 100, NAN},
                {"repetition_penalty", "repeat_penalty", 0, 100, NAN}};
    for (size_t i = 0; i < WK_ARRAY_LEN(nums); i++) {
        v = json_object_get(body, nums[i].name);
        if (!v || json_is_null(v)) {
            if (!isnan(nums[i].dflt)) json_object_set_new(ropts, nums[i].opt, json_real(nums[i].dflt));
            continue;
        }
        if (!json_is_number(v)) return FAIL("%s must be a number", nums[i].name);
        double d = json_number_value(v);
        if (d < nums[i].lo || d > nums[i].hi)
            return FAIL("%s must be between %g and %g", nums[i].name, nums[i].lo, nums[i].hi);
        if (!strcmp(nums[i].opt, "top_k") && d != floor(d)) return FAIL("top_k must be an integer");
        json_t *was = json_object_get(ropts, nums[i].opt);
        if (!strcmp(nums[i].name, "repetition_penalty") && was && json_number_value(was) != d)
            return FAIL("repeat_penalty and repetition_penalty differ: give one");
        json_object_set_new(ropts, nums[i].opt, !strcmp(nums[i].opt, "top_k") ? json_integer((json_int_t)d) : json_real(d));
    }
    static const char *const max_names[] = {"max_tokens", "max_completion_tokens"};
    for (size_t i = 0; i < 2; i++) {
        v = json_object_get(body, max_names[i]);
        if (!v || json_is_null(v)) continue;
        if (!is_int(v) || json_number_value(v) < 1 || json_number_value(v) > 2147483647.0)
            return FAIL("%s must be an integer between 1 and 2147483647", max_names[i]);
        /* OpenAI's clients send a model's whole window or more; past the
         * options table's num_predict limit it is no smaller limit */
        double most = wk_option_find("num_predict")->max;
        json_object_set_new(ropts, "num_predict", json_integer(json_number_value(v) > most ? (json_int_t)most
                                                                                         : int_value(v)));
    }
    if ((v = json_object_get(body, "seed")) && !json_is_null(v)) {
        struct wk_error e;
        if (!is_int(v) || wk_option_check_number(wk_option_find("seed"), json_number_value(v), &e))
            return FAIL("seed must be -1 or an integer between 0 and 9223372036854774784");
        json_object_set_new(ropts, "seed", json_integer(int_value(v)));
    }
    if ((v = json_object_get(body, "n")) && !json_is_null(v) && !(is_int(v) && json_number_value(v) == 1))
        return FAIL("n must be 1: one choice per request");
    if ((v = json_object_get(body, "stop")) && !json_is_null(v)) {
        if (json_is_string(v)) json_array_append(stop, v);
        else if (json_is_array(v)) {
            size_t i;
            json_t *s;
            json_array_foreach(v, i, s) {
                if (!json_is_string(s)) return FAIL("stop must be a string or a list of strings");
                json_array_append(stop, s);
            }
        } else return FAIL("stop must be a string or a list of strings");
    }
    if ((v = json_object_get(body, "logit_bias")) && !json_is_null(v)) {
        if (!json_is_object(v)) return FAIL("logit_bias must be an object of token id: bias");
        json_t *lb = json_array();
        json_object_set_new(req, "logit_bias", lb);
        const char *k;
        json_t *b;
        json_object_foreach(v, k, b) {
            char *end;
            long id = strtol(k, &end, 10);
            if (*k == '\0' || *end || id < 0 || id > INT32_MAX || !json_is_number(b) ||
                json_number_value(b) < -100 || json_number_value(b) > 100)
                return FAIL("logit_bias: '%s' must be a token id with a bias between -100 and 100", k);
            json_array_append_new(lb, json_pack("[i, f]", (int)id, json_number_value(b)));
        }
    }
    int frc = parse_oai_format(body, req, msg, cap);
    if (frc) return frc;
    json_t *kw = json_object_get(body, "chat_template_kwargs"); /* llama-server's, as vLLM's */
    if (kw && !json_is_null(kw)) {
        if (!json_is_object(kw)) return FAIL("chat_template_kwargs must be an object");
        if (g->api != API_OAI_CHAT) return FAIL("chat_template_kwargs is for chat completions");
        static const char *const own[] = {"messages", "tools", "add_generation_prompt"};
        for (size_t i = 0; i < WK_ARRAY_LEN(own); i++)
            if (json_object_get(kw, own[i]))
                return FAIL("chat_template_kwargs.%s: the template's %s comes from the request itself", own[i], own[i]);
        if (json_object_size(kw) > 0) json_object_set(req, "template_kwargs", kw);
    }
    if (g->api == API_OAI_CHAT) {
        int rc = parse_logprobs(g, body, msg, cap);
        if (rc) return rc;
        if (g->top_logprobs > 0 && !g->logprobs) return FAIL("top_logprobs requires logprobs: true");
        json_t *msgs = json_object_get(body, "messages");
        if (!json_is_array(msgs)) return FAIL("messages must be a list");
        if (json_array_size(msgs) == 0) return FAIL("[] is too short - 'messages'");
        json_t *out = json_array();
        json_object_set_new(req, "messages", out);
        int rc2 = parse_messages(msgs, out, true, msg, cap);
        if (!rc2) rc2 = srv_parse_oai_tools(g, body, req, msg, cap);
        return rc2;
    }
    json_t *prompt = json_object_get(body, "prompt");
    if (!json_is_string(prompt)) return FAIL("prompt must be a string");
    if ((v = json_object_get(body, "logprobs")) && !json_is_null(v)) {
        if (!is_int(v) || json_number_value(v) < 0 || json_number_value(v) > 5)
            return FAIL("logprobs must be an integer between 0 and 5");
        g->logprobs = true;
        g->legacy_logprobs = (int32_t)json_number_value(v);
        g->top_logprobs = g->legacy_logprobs;
    }
    int src = parse_suffix(body, req, prompt, true, msg, cap);
    if (src > 1) return src;
    if (!src) json_object_set(req, "raw", prompt);
    return 0;
}

int64_t srv_default_keep_alive(void)
{
    int64_t ns = SRV_DEFAULT_KEEP_ALIVE_NS;
    const char *e = wk_getenv_alias("WICK_KEEP_ALIVE", "OLLAMA_KEEP_ALIVE");
    if (e && *e) {
        json_t *v = json_string(e);
        if (!srv_parse_keep_alive(v, &ns)) ns = SRV_DEFAULT_KEEP_ALIVE_NS;
        json_decref(v);
    }
    return ns;
}

/* "low", "medium", "high" as static strings; NULL for anything else. */
static const char *think_level(const char *lv)
{
    static const char *const levels[] = {"low", "medium", "high"};
    for (size_t i = 0; lv && i < 3; i++)
        if (strcmp(lv, levels[i]) == 0) return levels[i];
    return NULL;
}

/* Fields that would change the answer and are not implemented yet:
 * refused with a 400 naming them, never accepted and dropped. */
static int refuse_unimplemented(struct srv_gen *g, json_t *body, char *msg, size_t cap)
{
    json_t *cx = json_object_get(body, "context");
    if (g->api == API_CHAT && json_array_size(cx) > 0) return FAIL("context is taken by /api/generate, not by chat");
    json_t *sfx = json_object_get(body, "suffix");
    if ((g->api == API_CHAT || g->api == API_OAI_CHAT) && sfx && !json_is_null(sfx) &&
        !(json_is_string(sfx) && json_string_length(sfx) == 0))
        return FAIL("suffix is taken by %s, not by chat", is_openai(g->api) ? "/v1/completions" : "/api/generate");
    /* the other API's fields: refused where they would be dropped */
    static const char *const oai_only[] = {"tool_choice", "grammar", "chat_template_kwargs", "response_format"};
    static const char *const ollama_only[] = {"template", "format", "think", "context"};
    for (size_t i = 0; i < 4; i++) {
        const char *f = is_openai(g->api) ? ollama_only[i] : oai_only[i];
        json_t *v = json_object_get(body, f);
        if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0))
            return FAIL("%s is not a field of this endpoint (%s API)", f, is_openai(g->api) ? "OpenAI" : "Ollama");
    }
    if (g->api == API_OAI_COMPLETION && json_array_size(json_object_get(body, "tools")) > 0)
        return FAIL("tools are taken by /v1/chat/completions, not /v1/completions");
    json_t *tv = json_object_get(body, "tools");
    if (g->api == API_GENERATE && tv && !json_is_null(tv) && !(json_is_array(tv) && json_array_size(tv) == 0))
        return FAIL("tools are taken by /api/chat, not /api/generate");
    int orc = srv_refuse_misplaced_options(is_openai(g->api), body, msg, cap);
    if (orc) return orc;
    if ((orc = srv_refuse_sibling_fields(g->api, body, msg, cap))) return orc;
    if (g->api == API_OAI_COMPLETION) { /* the legacy completion's echo and best_of: not implemented */
        json_t *echo = json_object_get(body, "echo"), *best = json_object_get(body, "best_of");
        if (echo && !json_is_null(echo) && !json_is_boolean(echo)) return FAIL("echo must be true or false");
        if (json_is_true(echo))
            return FAIL("echo is not supported yet: wick does not return the prompt with the completion, so it refuses it");
        if (best && !json_is_null(best) && !(is_int(best) && json_number_value(best) == 1))
            return FAIL("best_of must be 1: one completion is computed per request");
    }
    json_t *think = json_object_get(body, "think");
    g->think = -1;
    g->think_level = NULL;
    if (is_openai(g->api)) return srv_openai_reasoning_effort(g, body, msg, cap);
    if (think && !json_is_null(think)) {
        const char *lv = json_string_value(think);
        if (!json_is_boolean(think) && !(lv && (g->think_level = think_level(lv))))
            return FAIL("think must be true, false, \"low\", \"medium\" or \"high\"");
        if (json_is_true(json_object_get(body, "raw"))) return FAIL("raw mode does not support think");
        g->think = json_is_false(think) ? 0 : 1;
    }
    return 0;
}

int srv_gen_parse(struct srv_gen *g, json_t *body, char *msg, size_t cap)
{
    json_t *model = json_object_get(body, "model");
    if (!model && !is_openai(g->api)) model = json_object_get(body, "name");
    if (model && !json_is_null(model) && !json_is_string(model))
        return FAIL("model must be a string: the name of a stored model");
    if (!json_is_string(model) || json_string_length(model) == 0) return FAIL("model is required");
    if (json_string_length(model) >= sizeof g->model_name) /* never cut into another model's name */
        return FAIL("model name is longer than %zu bytes", sizeof g->model_name - 1);
    snprintf(g->model_name, sizeof g->model_name, "%s", json_string_value(model));
    g->keep_alive_ns = srv_default_keep_alive();
    json_t *req = json_object(), *ropts = json_object(), *stop = json_array();
    g->runner_req = req;
    json_object_set_new(req, "options", ropts);
    json_object_set_new(req, "stop", stop);
    const bool own = g->api == API_ANTHROPIC || g->api == API_OAI_RESPONSES; /* their own files' parsers */
    int rc = g->api == API_ANTHROPIC       ? srv_anthropic_parse(g, body, req, ropts, stop, msg, cap)
             : g->api == API_OAI_RESPONSES ? srv_responses_parse(g, body, req, ropts, stop, msg, cap)
                                           : refuse_unimplemented(g, body, msg, cap);
    if (!rc && !own)
        rc = is_openai(g->api) ? parse_openai(g, body, req, ropts, stop, msg, cap)
                               : parse_ollama(g, body, req, ropts, stop, msg, cap);
    if (rc) return rc;
    /* a level ("low", "medium", "high") goes on as it is: a harmony model's reasoning effort */
    if (g->think >= 0)
        json_object_set_new(req, "think", g->think_level ? json_string(g->think_level) : json_boolean(g->think));
    if (g->one_call) json_object_set_new(req, "one_call", json_true()); /* the runner ends the answer at the first call */
    if (g->logprobs) {
        json_object_set_new(req, "logprobs", json_true());
        json_object_set_new(req, "top_logprobs", json_integer(g->top_logprobs));
    }
    return 0;
}

/* ------------------------------------------------------------ responses */

static void created_at(char *out, size_t cap) { srv_time_rfc3339(srv_unix_ns(), out, cap); }

static json_t *ollama_base(struct srv_gen *g, bool done)
{
    char when[64];
    created_at(when, sizeof when);
    return json_pack("{s:s, s:s, s:b}", "model", g->model_name, "created_at", when, "done", done);
}

/* OpenAI's chat logprobs entries always carry top_logprobs. */
void srv_logprobs_complete(json_t *entries)
{
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) if (!json_object_get(e, "top_logprobs"))
        json_object_set_new(e, "top_logprobs", json_array());
}

static json_t *oai_logprobs(json_t *entries)
{
    srv_logprobs_complete(entries);
    return json_pack("{s:O}", "content", entries);
}

/* The legacy completions logprobs object over entries, text starting at
 * offset. */
static json_t *legacy_logprobs(json_t *entries, size_t offset)
{
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    size_t i, j;
    json_t *e, *t;
    json_array_foreach(entries, i, e) {
        json_t *tok = json_object_get(e, "token");
        json_array_append(tokens, tok);
        json_array_append(lps, json_object_get(e, "logprob"));
        json_t *top = json_object();
        json_array_foreach(json_object_get(e, "top_logprobs"), j, t)
            json_object_set(top, json_string_value(json_object_get(t, "token")),
                            json_object_get(t, "logprob"));
        json_array_append_new(tops, top);
        json_array_append_new(offs, json_integer((json_int_t)offset));
        offset += json_array_size(json_object_get(e, "bytes"));
    }
    return json_pack("{s:o, s:o, s:o, s:o}", "tokens", tokens, "token_logprobs", lps,
                     "top_logprobs", tops, "text_offset", offs);
}

static json_t *oai_chunk(struct srv_gen *g, json_t *choice)
{
    bool chat = g->api == API_OAI_CHAT;
    json_t *c = json_pack("{s:s, s:s, s:I, s:s, s:s, s:[o]}", "id", g->id, "object",
                          chat ? "chat.completion.chunk" : "text_completion", "created",
                          (json_int_t)g->created, "model", g->model_name, "system_fingerprint",
                          "fp_wick", "choices", choice);
    if (g->include_usage) json_object_set_new(c, "usage", json_null());
    return c;
}

/* OpenAI's tool_calls from Ollama's ([{function: {name, arguments}}]):
 * ids, type, arguments as a JSON string; with index in a stream's delta. */
static json_t *oai_tool_calls(struct srv_gen *g, const json_t *calls, size_t first, bool delta)
{
    json_t *out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) {
        json_t *fn = json_object_get(c, "function");
        char *args = json_dumps(json_object_get(fn, "arguments"), JSON_COMPACT);
        char id[96]; /* the runner's (the model's own, or Ollama's call_ and 8 random characters) */
        snprintf(id, sizeof id, "call_%s_%zu", g->id, first + i);
        const char *rid = json_string_value(json_object_get(c, "id"));
        json_t *o = json_pack("{s:s, s:s, s:{s:O, s:s}}", "id", rid ? rid : id, "type", "function", "function", "name",
                              json_object_get(fn, "name"), "arguments", args ? args : "{}");
        free(args);
        if (o && delta) json_object_set_new(o, "index", json_integer((json_int_t)(first + i)));
        json_array_append_new(out, o);
    }
    return out;
}

/* A runner line with thinking or tool calls (no content). */
static void gen_extra_chunk(struct srv_gen *g, json_t *thinking, json_t *calls)
{
    size_t before = json_array_size(g->tool_calls);
    json_t *first = NULL; /* parallel_tool_calls false: the answer's first call, no other */
    if (calls && g->one_call && (before > 0 || json_array_size(calls) > 1))
        calls = before > 0 ? NULL : (first = json_pack("[O]", json_array_get(calls, 0)));
    if (!calls && !thinking) return;
    if (calls) {
        if (!g->tool_calls) g->tool_calls = json_array();
        json_array_extend(g->tool_calls, calls);
        if (!g->calls_seen) g->calls_seen = true, g->text_at_call = g->text.len; /* the output items' order */
    }
    if (!g->stream) {
        if (thinking) wk_buf_add(&g->thinking, json_string_value(thinking), json_string_length(thinking));
        json_decref(first);
        return;
    }
    json_t *obj;
    if (g->api == API_GENERATE || g->api == API_CHAT) {
        obj = ollama_base(g, false);
        json_t *m = g->api == API_CHAT ? json_pack("{s:s, s:s}", "role", "assistant", "content", "") : obj;
        if (g->api == API_GENERATE) json_object_set_new(obj, "response", json_string(""));
        if (thinking) json_object_set(m, "thinking", thinking);
        if (calls) json_object_set(m, "tool_calls", calls);
        if (m != obj) json_object_set_new(obj, "message", m);
        srv_buf_json(&g->out, obj, "\n");
    } else if (g->api == API_OAI_CHAT) {
        json_t *delta = json_object();
        if (!g->started) json_object_set_new(delta, "role", json_string("assistant"));
        if (thinking) json_object_set(delta, "reasoning_content", thinking);
        if (calls) json_object_set_new(delta, "tool_calls", oai_tool_calls(g, calls, before, true));
        json_t *choice = json_pack("{s:i, s:o, s:n, s:n}", "index", 0, "delta", delta, "finish_reason", "logprobs");
        wk_buf_add(&g->out, "data: ", 6);
        srv_buf_json(&g->out, oai_chunk(g, choice), "\n\n");
    }
    g->started = true;
    json_decref(first);
}

void srv_gen_chunk(struct srv_gen *g, json_t *line)
{
    if (g->api == API_ANTHROPIC && g->stream) { srv_anthropic_chunk(g, line); return; }
    if (g->api == API_OAI_RESPONSES && g->stream) { srv_responses_chunk(g, line); return; }
    json_t *content = json_object_get(line, "content"), *lps = json_object_get(line, "logprobs");
    json_t *thinking = json_object_get(line, "thinking"), *calls = json_object_get(line, "tool_calls");
    if (!content && (thinking || calls)) {
        gen_extra_chunk(g, thinking, calls);
        return;
    }
    const char *text = json_string_value(content);
    size_t len = json_string_length(content);
    if (!g->stream) {
        wk_buf_add(&g->text, text ? text : "", len);
        if (lps) {
            if (!g->lps) g->lps = json_array();
            json_array_extend(g->lps, lps);
        }
        return;
    }
    json_t *obj;
    switch (g->api) {
    case API_ANTHROPIC:
    case API_OAI_RESPONSES: return; /* above */
    case API_GENERATE:
    case API_CHAT:
        obj = ollama_base(g, false);
        if (g->api == API_GENERATE) json_object_set(obj, "response", content);
        else json_object_set_new(obj, "message", json_pack("{s:s, s:O}", "role", "assistant", "content", content));
        if (lps) json_object_set(obj, "logprobs", lps);
        srv_buf_json(&g->out, obj, "\n");
        break;
    case API_OAI_CHAT: {
        json_t *delta = json_pack("{s:O}", "content", content);
        if (!g->started) json_object_set_new(delta, "role", json_string("assistant"));
        json_t *choice = json_pack("{s:i, s:o, s:n}", "index", 0, "delta", delta, "finish_reason");
        json_object_set_new(choice, "logprobs", lps ? oai_logprobs(lps) : json_null());
        wk_buf_add(&g->out, "data: ", 6);
        srv_buf_json(&g->out, oai_chunk(g, choice), "\n\n");
        break;
    }
    case API_OAI_COMPLETION: {
        json_t *choice = json_pack("{s:O, s:i, s:n}", "text", content, "index", 0, "finish_reason");
        json_object_set_new(choice, "logprobs",
                            lps && g->legacy_logprobs >= 0 ? legacy_logprobs(lps, g->text.len) : json_null());
        wk_buf_add(&g->text, text ? text : "", len); /* offsets only */
        wk_buf_add(&g->out, "data: ", 6);
        srv_buf_json(&g->out, oai_chunk(g, choice), "\n\n");
        break;
    }
    }
    g->started = true;
}

/* Ollama's final metrics onto obj. */
static void ollama_metrics(struct srv_gen *g, json_t *obj, json_t *fin)
{
    int64_t total = wk_time_ns() - g->t_start;
    json_object_set(obj, "done_reason", json_object_get(fin, "done_reason"));
    json_object_set_new(obj, "total_duration", json_integer(total));
    json_object_set_new(obj, "load_duration", json_integer(g->load_ns));
    json_object_set(obj, "prompt_eval_count", json_object_get(fin, "prompt_tokens"));
    json_object_set(obj, "prompt_eval_duration", json_object_get(fin, "prompt_eval_duration"));
    json_object_set(obj, "eval_count", json_object_get(fin, "eval_count"));
    json_object_set(obj, "eval_duration", json_object_get(fin, "eval_duration"));
    if (g->api == API_GENERATE && json_object_get(fin, "context")) json_object_set(obj, "context", json_object_get(fin, "context"));
    json_t *d = json_object_get(fin, "draft");
    if (d) { /* wick's: speculative decoding's counts (not in Ollama's API) */
        json_object_set(obj, "draft_count", json_object_get(d, "drafted"));
        json_object_set(obj, "draft_accepted_count", json_object_get(d, "accepted"));
        json_object_set(obj, "draft_rounds", json_object_get(d, "rounds"));
    }
}

static json_t *oai_usage(json_t *fin)
{
    json_int_t p = json_integer_value(json_object_get(fin, "prompt_tokens"));
    json_int_t c = json_integer_value(json_object_get(fin, "eval_count"));
    json_int_t cached = p - json_integer_value(json_object_get(fin, "prompt_eval_count"));
    json_t *u = json_pack("{s:I, s:I, s:I, s:{s:I}}", "prompt_tokens", p, "completion_tokens", c,
                          "total_tokens", p + c, "prompt_tokens_details", "cached_tokens", cached);
    json_t *d = json_object_get(fin, "draft");
    if (u && d) { /* OpenAI's fields for predicted tokens, here the draft model's */
        json_int_t drafted = json_integer_value(json_object_get(d, "drafted"));
        json_int_t accepted = json_integer_value(json_object_get(d, "accepted"));
        json_object_set_new(u, "completion_tokens_details",
                            json_pack("{s:I, s:I}", "accepted_prediction_tokens", accepted,
                                      "rejected_prediction_tokens", drafted - accepted));
    }
    return u;
}

void srv_gen_done(struct srv_gen *g, json_t *fin)
{
    if (g->api == API_ANTHROPIC) { srv_anthropic_done(g, fin); return; }
    if (g->api == API_OAI_RESPONSES && g->stream) { srv_responses_done(g, fin); return; }
    json_t *lps = json_object_get(fin, "logprobs");
    if (!g->stream) {
        if (lps) {
            if (!g->lps) g->lps = json_array();
            json_array_extend(g->lps, lps);
        }
        return;
    }
    /* logprobs of tokens that left no text (a held-back stop string) */
    if (lps && json_array_size(lps) > 0) {
        json_t *line = json_pack("{s:s, s:O}", "content", "", "logprobs", lps);
        srv_gen_chunk(g, line);
        json_decref(line);
    }
    const char *reason = json_string_value(json_object_get(fin, "done_reason"));
    if (json_array_size(g->tool_calls) > 0 && reason && !strcmp(reason, "stop")) reason = "tool_calls";
    if (!is_openai(g->api)) {
        json_t *obj = ollama_base(g, true);
        if (g->api == API_GENERATE) json_object_set_new(obj, "response", json_string(""));
        else json_object_set_new(obj, "message", json_pack("{s:s, s:s}", "role", "assistant", "content", ""));
        ollama_metrics(g, obj, fin);
        srv_buf_json(&g->out, obj, "\n");
        return;
    }
    json_t *choice = g->api == API_OAI_CHAT
                         ? json_pack("{s:i, s:{}, s:s, s:n}", "index", 0, "delta", "finish_reason",
                                     reason, "logprobs")
                         : json_pack("{s:s, s:i, s:s, s:n}", "text", "", "index", 0,
                                     "finish_reason", reason, "logprobs");
    wk_buf_add(&g->out, "data: ", 6);
    srv_buf_json(&g->out, oai_chunk(g, choice), "\n\n");
    if (g->include_usage) {
        json_t *u = oai_chunk(g, json_null());
        json_object_set_new(u, "choices", json_array());
        json_object_set_new(u, "usage", oai_usage(fin));
        wk_buf_add(&g->out, "data: ", 6);
        srv_buf_json(&g->out, u, "\n\n");
    }
    wk_buf_add(&g->out, "data: [DONE]\n\n", 14);
}

void srv_gen_stream_error(struct srv_gen *g, const char *msg)
{
    if (g->api == API_ANTHROPIC) {
        srv_anthropic_stream_error(g, msg);
    } else if (g->api == API_OAI_RESPONSES) {
        srv_responses_stream_error(g, msg);
    } else if (is_openai(g->api)) {
        wk_buf_add(&g->out, "data: ", 6);
        srv_buf_json(&g->out, srv_error_body(g->api, 500, msg), "\n\n");
    } else {
        srv_buf_json(&g->out, json_pack("{s:s}", "error", msg), "\n");
    }
}

json_t *srv_gen_response(struct srv_gen *g, json_t *fin)
{
    if (g->api == API_ANTHROPIC) return srv_anthropic_response(g, fin);
    if (g->api == API_OAI_RESPONSES) return srv_responses_response(g, fin);
    json_t *text = json_stringn(g->text.p ? g->text.p : "", g->text.len);
    json_t *thinking = g->thinking.len ? json_stringn(g->thinking.p, g->thinking.len) : NULL;
    const char *reason = json_string_value(json_object_get(fin, "done_reason"));
    const bool calls = json_array_size(g->tool_calls) > 0;
    json_t *obj;
    switch (g->api) {
    case API_GENERATE:
    case API_CHAT:
        obj = ollama_base(g, true);
        if (g->api == API_GENERATE) {
            json_object_set_new(obj, "response", text);
            if (thinking) json_object_set_new(obj, "thinking", thinking);
        } else {
            json_t *m = json_pack("{s:s, s:o}", "role", "assistant", "content", text);
            if (thinking) json_object_set_new(m, "thinking", thinking);
            if (calls) json_object_set(m, "tool_calls", g->tool_calls);
            json_object_set_new(obj, "message", m);
        }
        ollama_metrics(g, obj, fin);
        if (g->lps) json_object_set(obj, "logprobs", g->lps);
        return obj;
    case API_OAI_CHAT: {
        if (calls && reason && !strcmp(reason, "stop")) reason = "tool_calls";
        json_t *choice = json_pack("{s:i, s:{s:s, s:o}, s:s}", "index", 0, "message", "role",
                                   "assistant", "content", calls && g->text.len == 0 ? json_null() : text,
                                   "finish_reason", reason);
        if (calls && g->text.len == 0) json_decref(text);
        json_t *msg = json_object_get(choice, "message");
        if (thinking) json_object_set_new(msg, "reasoning_content", thinking);
        if (calls) json_object_set_new(msg, "tool_calls", oai_tool_calls(g, g->tool_calls, 0, false));
        json_object_set_new(choice, "logprobs", g->logprobs && g->lps ? oai_logprobs(g->lps) : json_null());
        obj = json_pack("{s:s, s:s, s:I, s:s, s:s, s:[o]}", "id", g->id, "object", "chat.completion",
                        "created", (json_int_t)g->created, "model", g->model_name,
                        "system_fingerprint", "fp_wick", "choices", choice);
        break;
    }
    default: {
        json_decref(thinking); /* completions: no chat, no thinking */
        json_t *choice = json_pack("{s:o, s:i, s:s}", "text", text, "index", 0, "finish_reason", reason);
        json_object_set_new(choice, "logprobs", g->logprobs && g->lps ? legacy_logprobs(g->lps, 0) : json_null());
        obj = json_pack("{s:s, s:s, s:I, s:s, s:s, s:[o]}", "id", g->id, "object", "text_completion",
                        "created", (json_int_t)g->created, "model", g->model_name,
                        "system_fingerprint", "fp_wick", "choices", choice);
        break;
    }
    }
    json_object_set_new(obj, "usage", oai_usage(fin));
    return obj;
}
