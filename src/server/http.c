/*
 * http.c - `wick serve`: the HTTP server (libmicrohttpd, one thread per
 * connection), its routes, and the life of a generation request: parse and
 * validate on the connection's thread, get the model's runner (the
 * scheduler starts it), send the runner request (the runner renders,
 * tokenizes and checks the context before anything is queued, so a bad
 * prompt is a 4xx before the stream starts), then stream the runner's
 * lines out as NDJSON or SSE, or collect them into one response.
 *
 * A client that hangs up is noticed while waiting for the runner (its
 * socket is polled for POLLRDHUP), and the runner connection is closed,
 * which cancels the request in the runner. An error after the stream has
 * started becomes the stream's last message. SIGINT/SIGTERM end open
 * streams with an error message, then stop the runners.
 */
#include "server_internal.h"
#include "server_registry.h"
#include "../model/wk_model.h" /* WK_SEQ_MAX: the parallel slots one runner holds */

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* JSON values a request body may hold: each costs the parser tens of
 * bytes, so 16 MiB of "[{},{},...]" would have become hundreds of MB of
 * tree; no real request comes near (a chat of thousands of messages, an
 * OpenAI prompt of token ids). */
#define MAX_JSON_VALUES 500000

/* Whether text [n] holds more than max JSON values (counted as the
 * elements and members the parser would make: '[' and '{' open one each,
 * ',' and ':' mark another, strings skipped), without parsing it. */
static bool json_values_over(const char *text, size_t n, int64_t max)
{
    int64_t count = 1;
    bool in_string = false;
    for (size_t i = 0; text && i < n; i++) {
        const char ch = text[i];
        if (in_string) {
            if (ch == '\\') i++;
            else if (ch == '"') in_string = false;
        } else if (ch == '"') {
            in_string = true;
        } else if (ch == '[' || ch == '{' || ch == ',' || ch == ':') {
            if (++count > max) return true;
        }
    }
    return false;
}

/* Per-connection state: the body as it arrives; why the request is
 * refused (srv_access_check), if it is, its body then not kept. */
struct conn {
    struct wk_buf body;
    struct srv_upload *upload; /* POST /api/blobs/:digest: the body goes to the store, not to body */
    bool too_big;
    const char *refused;
    const char *route; /* the route's path for /metrics (static), once route() has looked it up */
    char refused_msg[256];
};

/* Connections at most (fewer where the descriptor limit is lower), the
 * seconds an idle connection stays open, and each connection thread's
 * stack (what is touched of it is resident; the rest only reserved). */
#define MAX_CONNECTIONS 8192
#define IDLE_TIMEOUT 60
#define THREAD_STACK ((size_t)2 << 20)

/* The idle timeout in seconds: IDLE_TIMEOUT, or WICK_IDLE_TIMEOUT
 * (read_env_numbers). */
static unsigned g_idle_timeout = IDLE_TIMEOUT;

void srv_conn_wait_begin(struct MHD_Connection *c)
{
    if (c) MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
}

void srv_conn_wait_end(struct MHD_Connection *c)
{
    /* from no timeout to one, libmicrohttpd restarts the connection's idle
     * timer (MHD_set_connection_option's documentation) */
    if (c) MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, g_idle_timeout);
}

/* The server a connection belongs to: every connection's socket context
 * (set by on_connection). */
static struct srv_server *conn_server(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    (void)c;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) *socket_context = cls;
}

static enum MHD_Result reply_raw(struct MHD_Connection *c, unsigned status, const char *type,
                                 const char *text, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    struct srv_server *srv = conn_server(c);
    if (srv) srv_access_headers(srv->access, c, r);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Sends obj (stolen) as compact JSON with status. */
static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, json_t *obj)
{
    char *s = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    enum MHD_Result ret = s ? reply_raw(c, status, "application/json; charset=utf-8", s, strlen(s))
                            : reply_raw(c, 500, "application/json", "{\"error\":\"out of memory\"}", 25);
    free(s);
    return ret;
}

static enum MHD_Result reply_error(struct MHD_Connection *c, enum srv_api api, unsigned status,
                                   const char *msg)
{
    return reply_json(c, status, srv_error_body(api, (int)status, msg));
}

enum MHD_Result srv_reply_raw(struct MHD_Connection *c, unsigned status, const char *type, const char *text,
                              size_t len)
{
    return reply_raw(c, status, type, text, len);
}

enum MHD_Result srv_reply_json(struct MHD_Connection *c, unsigned status, json_t *obj)
{
    return reply_json(c, status, obj);
}

enum MHD_Result srv_reply_error(struct MHD_Connection *c, unsigned status, const char *msg)
{
    return reply_error(c, API_GENERATE, status, msg);
}

/* ------------------------------------------------------------ generation */

static void gen_free(struct srv_gen *g)
{
    if (!g) return;
    srv_call_close(&g->call);
    if (g->runner) srv_sched_release(g->runner, g->keep_alive_ns);
    json_decref(g->runner_req);
    json_decref(g->lps);
    wk_free(g->out.p);
    wk_free(g->text.p);
    wk_free(g->thinking.p);
    json_decref(g->tool_calls);
    json_decref(g->echo);
    json_decref(g->items);
    json_decref(g->ns_map);
    wk_free(g);
}

/* Reads the next runner line into the response; false once the stream is
 * over (ended) or the client left (*gone). */
static void gen_step(struct srv_gen *g, bool *gone, json_t **fin)
{
    json_t *line;
    enum srv_next n = srv_call_next(&g->call, g->client_fd, &line);
    if (n == SRV_CLIENT_GONE) {
        *gone = true;
        return;
    }
    const char *err = NULL;
    if (n == SRV_RUNNER_GONE) {
        srv_sched_mark_dead(g->runner);
        err = "the model runner stopped unexpectedly";
    } else if (n == SRV_SHUTDOWN) {
        err = "the server is shutting down";
    } else if (json_object_get(line, "error")) {
        err = json_string_value(json_object_get(line, "error"));
    }
    if (err) {
        if (g->stream) srv_gen_stream_error(g, err ? err : "error");
        g->ended = true;
        *fin = json_pack("{s:s}", "error", err ? err : "error");
    } else if (json_is_true(json_object_get(line, "done"))) {
        srv_metrics_generation(g->metrics, g->model.name, line); /* before the client sees the end */
        srv_gen_done(g, line);
        g->ended = true;
        *fin = json_incref(line);
    } else {
        srv_gen_chunk(g, line);
    }
    json_decref(line);
}

static ssize_t gen_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct srv_gen *g = cls;
    if (g->out_off == g->out.len && !g->ended) {
        /* the wait for the runner's next lines (a slot, a long prefill)
         * is not the client's idleness */
        srv_conn_wait_begin(g->conn);
        bool gone = false;
        while (g->out_off == g->out.len && !g->ended && !gone) {
            g->out.len = g->out_off = 0;
            json_t *fin = NULL;
            gen_step(g, &gone, &fin);
            json_decref(fin);
        }
        srv_conn_wait_end(g->conn);
        if (gone) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    if (g->out_off == g->out.len) return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = WK_MIN(max, g->out.len - g->out_off);
    memcpy(buf, g->out.p + g->out_off, n);
    g->out_off += n;
    return (ssize_t)n;
}

static void gen_reader_free(void *cls) { gen_free(cls); }

/* The stored model's PARAMETERs under the request's options (the request
 * wins), its SYSTEM when the conversation has no system message, its
 * MESSAGEs before the conversation and its TEMPLATE (unless the request
 * has one), as Ollama applies them (§8.2, §8.3). */
static void apply_model_defaults(struct srv_gen *g, const struct wk_store_model *sm)
{
    json_t *opts = json_object_get(g->runner_req, "options"), *stop = json_object_get(g->runner_req, "stop");
    const char *k;
    json_t *v;
    json_object_foreach(sm->params, k, v) {
        if (strcmp(k, "stop") == 0) {
            if (json_array_size(stop) == 0 && json_is_array(v)) json_array_extend(stop, v);
        } else if (strcmp(k, "num_ctx") == 0) {
            if (g->n_ctx == 0 && json_is_integer(v)) g->n_ctx = (int32_t)json_integer_value(v);
        } else if (!json_object_get(opts, k)) {
            json_object_set(opts, k, v);
        }
    }
    json_t *msgs = json_object_get(g->runner_req, "messages");
    const bool fim = json_object_get(g->runner_req, "fim") != NULL; /* a suffix */
    if (!fim && json_array_size(msgs) == 0) return; /* raw, or a load/unload request */
    /* the Modelfile's TEMPLATE, unless the request brings its own */
    if (sm->template_text && *sm->template_text && !json_object_get(g->runner_req, "template"))
        json_object_set_new(g->runner_req, "template", json_string(sm->template_text));
    if (fim) return; /* Ollama: the template over .Prompt and .Suffix alone (no SYSTEM, no MESSAGEs) */
    json_t *first = json_array_get(msgs, 0);
    bool has_system = strcmp(json_string_value(json_object_get(first, "role")), "system") == 0;
    size_t at = has_system ? 1 : 0, i;
    json_t *m;
    if (!json_object_get(g->runner_req, "context")) /* Ollama: a request's context replaces the MESSAGEs */
        json_array_foreach(sm->messages, i, m) json_array_insert(msgs, at++, m);
    if (!has_system && sm->system)
        json_array_insert_new(msgs, 0, json_pack("{s:s, s:s}", "role", "system", "content", sm->system));
}

static int client_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* Whether a prompt of bytes cannot fit n_ctx tokens, no token covering more
 * than bpt bytes (0: unknown, no verdict); the 400's message into msg. */
static bool prompt_past(size_t bytes, int64_t bpt, int64_t n_ctx, char *msg, size_t cap)
{
    if (bpt <= 0 || n_ctx <= 0 || (int64_t)bytes / bpt < n_ctx) return false;
    snprintf(msg, cap,
             "the prompt is %zu bytes, at least %lld tokens, which does not fit in the context of %lld tokens "
             "(num_ctx %lld)", bytes, (long long)((int64_t)bytes / bpt), (long long)n_ctx, (long long)n_ctx);
    return true;
}

/* A generation route; with render_only (/api/apply-template, as
 * llama-server's /apply-template) the runner renders the conversation
 * with the model's template and the answer is {"prompt": text}. */
static enum MHD_Result serve_generation(struct srv_server *srv, struct MHD_Connection *c, enum srv_api api,
                                        json_t *body, bool render_only)
{
    struct srv_gen *g = wk_calloc(1, sizeof *g);
    if (!g) return reply_error(c, api, 500, "out of memory");
    g->api = api;
    g->metrics = srv->metrics;
    g->call.fd = -1;
    g->t_start = wk_time_ns();
    g->created = srv_unix_ns() / 1000000000;
    g->client_fd = client_fd(c);
    g->conn = c;
    snprintf(g->id, sizeof g->id, "%s-%lld", api == API_OAI_CHAT ? "chatcmpl" : "cmpl",
             (long long)(srv_unix_ns() % 1000000000000LL));
    if (api == API_ANTHROPIC || api == API_OAI_RESPONSES) /* msg_ (Anthropic's) or resp_ and 24 hex digits */
        snprintf(g->id, sizeof g->id, "%s_%08x%08x%08x", api == API_ANTHROPIC ? "msg" : "resp", arc4random(), arc4random(),
                 arc4random());
    g->render_only = render_only;
    char msg[WK_ERROR_MSG_MAX];
    int status = srv_gen_parse(g, body, msg, sizeof msg);
    struct wk_error err;
    wk_error_clear(&err);
    struct wk_store_model sm = {0};
    if (!status && srv_model_find(srv->models_dir, g->model_name, &g->model, &sm, &err)) {
        status = 404;
        snprintf(msg, sizeof msg, "%s", err.msg);
    }
    if (!status && srv_model_embeds(&g->model)) { /* api_embed.c */
        status = 400;
        snprintf(msg, sizeof msg, "model '%.200s' is an embedding model: it does not generate text (use /api/embed "
                 "or /v1/embeddings)", g->model_name);
    }
    if (!status) apply_model_defaults(g, &sm);
    if (!status && g->n_ctx == 0) g->n_ctx = srv->default_ctx; /* OLLAMA_CONTEXT_LENGTH */
    if (!status && render_only) json_object_set_new(g->runner_req, "render_only", json_true());
    if (!status && render_only && api == API_ANTHROPIC) json_object_set_new(g->runner_req, "count", json_true());
    wk_store_model_deinit(&sm);
    if (status) {
        gen_free(g);
        return reply_error(c, api, (unsigned)status, msg);
    }
    /* Ollama: an empty prompt loads the model, or unloads it with keep_alive 0 */
    json_t *msgs = json_object_get(g->runner_req, "messages");
    if ((api == API_GENERATE || api == API_CHAT) && msgs && json_array_size(msgs) == 0 && !render_only) {
        const char *reason = "load";
        if (g->keep_alive_ns == 0) {
            srv_sched_unload(srv->sched, g->model.name);
            reason = "unload";
        } else if (srv_sched_acquire(srv->sched, &g->model, g->n_ctx, &g->runner, &g->load_ns, &err)) {
            gen_free(g);
            return reply_error(c, api, 500, err.msg);
        }
        char when[64];
        srv_time_rfc3339(srv_unix_ns(), when, sizeof when);
        json_t *obj = json_pack("{s:s, s:s, s:b, s:s}", "model", g->model_name, "created_at", when,
                                "done", 1, "done_reason", reason);
        if (api == API_GENERATE) json_object_set_new(obj, "response", json_string(""));
        else json_object_set_new(obj, "message", json_pack("{s:s, s:s}", "role", "assistant", "content", ""));
        gen_free(g);
        return reply_json(c, 200, obj);
    }
    /* a prompt far longer than the context is refused here, unsent: the
     * runner would have to read and render it first; and before a runner
     * of the model loaded with another num_ctx restarts for this one
     * (after the requests on it end) only to refuse it (the context it
     * gets is at most g->n_ctx: the trained length may cut it) */
    size_t bytes = json_string_length(json_object_get(g->runner_req, "raw"));
    size_t i;
    json_t *m;
    const bool fit = json_is_true(json_object_get(g->runner_req, "truncate_history")); /* old messages may go */
    json_array_foreach(msgs, i, m)
        if (!fit || i + 1 == json_array_size(msgs) || !strcmp(json_string_value(json_object_get(m, "role")) ?: "", "system"))
            bytes += json_string_length(json_object_get(m, "content"));
    json_t *fim = json_object_get(g->runner_req, "fim");
    bytes += json_string_length(json_object_get(fim, "prefix")) + json_string_length(json_object_get(fim, "suffix"));
    if (!render_only && g->n_ctx > 0 && prompt_past(bytes, srv_sched_bytes_per_token(srv->sched, &g->model), g->n_ctx, msg, sizeof msg)) {
        gen_free(g);
        return reply_error(c, api, 400, msg);
    }
    if (srv_sched_acquire(srv->sched, &g->model, g->n_ctx, &g->runner, &g->load_ns, &err)) {
        gen_free(g);
        return reply_error(c, api, err.status == WK_E_CANCELLED ? 503 : 500, err.msg);
    }
    if (!render_only && prompt_past(bytes, srv_runner_bytes_per_token(g->runner), srv_runner_n_ctx(g->runner), msg, sizeof msg)) {
        gen_free(g);
        return reply_error(c, api, 400, msg);
    }
    json_t *first = NULL;
    /* the runner answers once the prompt is tokenized: seconds at most; a
     * client that leaves meanwhile cancels it */
    if (srv_call_open(g->runner, g->runner_req, 120 * 1000, g->client_fd, &g->call, &first, &err)) {
        /* not marked dead: the runner may have refused only this request
         * (the reaper notices a runner that exited) */
        gen_free(g);
        if (err.status == WK_E_CANCELLED) return MHD_NO; /* nobody to answer */
        return reply_error(c, api, 500, err.msg);
    }
    int rs = (int)json_integer_value(json_object_get(first, "status"));
    if (rs != 200) {
        const char *e = json_string_value(json_object_get(first, "error"));
        enum MHD_Result ret = reply_error(c, api, rs >= 400 && rs < 600 ? (unsigned)rs : 500,
                                          e ? e : "the model runner refused the request");
        json_decref(first);
        gen_free(g);
        return ret;
    }
    if (render_only) { /* Anthropic's count_tokens: the rendered prompt's tokens */
        json_t *prompt = json_object_get(first, "prompt"), *n = json_object_get(first, "prompt_tokens");
        enum MHD_Result ret = !json_is_string(prompt) || !json_is_integer(n)
                                  ? reply_error(c, api, 500, "the model runner sent no prompt")
                              : api == API_ANTHROPIC ? reply_json(c, 200, json_pack("{s:O}", "input_tokens", n))
                                                     : reply_json(c, 200, json_pack("{s:O}", "prompt", prompt));
        json_decref(first);
        gen_free(g);
        return ret;
    }
    if (api == API_ANTHROPIC) srv_anthropic_start(g, json_integer_value(json_object_get(first, "prompt_tokens")));
    if (api == API_OAI_RESPONSES) srv_responses_start(g);
    json_decref(first);
    if (g->stream) {
        struct MHD_Response *r =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, gen_reader, g, gen_reader_free);
        if (!r) {
            gen_free(g);
            return MHD_NO;
        }
        bool sse = api == API_OAI_CHAT || api == API_OAI_COMPLETION || api == API_ANTHROPIC || api == API_OAI_RESPONSES;
        MHD_add_response_header(r, "Content-Type", sse ? "text/event-stream" : "application/x-ndjson");
        if (sse) MHD_add_response_header(r, "Cache-Control", "no-cache");
        srv_access_headers(srv->access, c, r);
        enum MHD_Result ret = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        return ret;
    }
    json_t *fin = NULL;
    bool gone = false;
    while (!g->ended && !gone) gen_step(g, &gone, &fin);
    enum MHD_Result ret;
    if (gone) ret = MHD_NO;
    else if (json_object_get(fin, "error"))
        ret = reply_error(c, api, srv_sched_shutting_down(srv->sched) ? 503 : 500,
                          json_string_value(json_object_get(fin, "error")));
    else ret = reply_json(c, 200, srv_gen_response(g, fin));
    json_decref(fin);
    gen_free(g);
    return ret;
}

/* ------------------------------------------------------------ other routes */

/* GET /v1/models and /v1/models/{id}: OpenAI's list (as Ollama's), or
 * Anthropic's ({data: [{type: "model", id, display_name, created_at}],
 * has_more, first_id, last_id}) for a client that sends anthropic-version,
 * as the anthropic SDKs do. */
static enum MHD_Result serve_oai_models(struct srv_server *srv, struct MHD_Connection *c, const char *one)
{
    const bool ant = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "anthropic-version") != NULL;
    json_t *tags = srv_models_list(srv->models_dir), *data = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(tags, "models"), i, m) {
        const char *name = json_string_value(json_object_get(m, "name"));
        /* as Ollama's ListCompletion: created is the model's modified time,
         * owned_by its name's namespace ("library" for a plain name) */
        struct tm tm = {0};
        const char *when = json_string_value(json_object_get(m, "modified_at"));
        const json_int_t created = when && strptime(when, "%Y-%m-%dT%H:%M:%S", &tm) ? (json_int_t)timegm(&tm) : 0;
        struct wk_model_name mn;
        const char *owner = wk_model_name_parse(name, &mn, NULL) == WK_OK ? mn.ns : "library";
        json_t *o = ant ? json_pack("{s:s, s:s, s:s, s:O}", "type", "model", "id", name, "display_name", name, "created_at",
                                    json_object_get(m, "modified_at"))
                        : json_pack("{s:s, s:s, s:I, s:s}", "id", name, "object", "model", "created", created, "owned_by",
                                    owner);
        if (one && (strcmp(one, name) == 0 ||
                    (strncmp(one, name, strlen(one)) == 0 && strcmp(name + strlen(one), ":latest") == 0))) {
            json_decref(tags);
            json_decref(data);
            return reply_json(c, 200, o);
        }
        json_array_append_new(data, o);
    }
    json_decref(tags);
    if (one) {
        json_decref(data);
        char msg[300];
        snprintf(msg, sizeof msg, "model '%.200s' not found", one);
        return reply_error(c, ant ? API_ANTHROPIC : API_OAI_CHAT, 404, msg);
    }
    if (!ant) return reply_json(c, 200, json_pack("{s:s, s:o}", "object", "list", "data", data));
    json_t *first = json_object_get(json_array_get(data, 0), "id");
    json_t *last = json_object_get(json_array_get(data, json_array_size(data) - 1), "id");
    return reply_json(c, 200, json_pack("{s:o, s:b, s:O, s:O}", "data", data, "has_more", 0, "first_id",
                                        first ? first : json_null(), "last_id", last ? last : json_null()));
}

/* ------------------------------------------------------------ dispatch */

static enum MHD_Result route(struct srv_server *srv, struct MHD_Connection *c, const char *url,
                             const char *method, struct conn *k)
{
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    bool post = strcmp(method, "POST") == 0, del = strcmp(method, "DELETE") == 0;
    static const struct {
        const char *path;
        bool post; /* POST (DELETE for /api/delete), else GET and HEAD */
        int api;   /* -1: not a generation route */
    } routes[] = {{"/", false, -1},
                  {"/api/version", false, -1},
                  {"/api/tags", false, -1},
                  {"/api/ps", false, -1},
                  {"/v1/models", false, -1},
                  {"/health", false, -1},
                  {"/v1/health", false, -1},
                  {"/metrics", false, -1},
                  {"/tokenize", true, -1},
                  {"/detokenize", true, -1},
                  {"/api/show", true, -1},
                  {"/api/create", true, -1},
                  {"/api/copy", true, -1},
                  {"/api/pull", true, -1},
                  {"/api/push", true, -1},
                  {"/api/delete", true, -1},
                  {"/api/embed", true, -1},
                  {"/api/embeddings", true, -1},
                  {"/v1/embeddings", true, -1},
                  {"/api/generate", true, API_GENERATE},
                  {"/api/chat", true, API_CHAT},
                  {"/api/apply-template", true, API_CHAT},
                  {"/apply-template", true, API_CHAT},
                  {"/v1/chat/completions", true, API_OAI_CHAT},
                  {"/v1/completions", true, API_OAI_COMPLETION},
                  {"/v1/messages", true, API_ANTHROPIC},
                  {"/v1/responses", true, API_OAI_RESPONSES},
                  {"/v1/messages/count_tokens", true, API_ANTHROPIC}};
    int found = -1;
    for (size_t i = 0; i < WK_ARRAY_LEN(routes); i++)
        if (strcmp(url, routes[i].path) == 0) found = (int)i;
    /* the route's name for /metrics: the table's path, never the client's URL */
    k->route = found >= 0 ? routes[found].path : strncmp(url, "/v1/models/", 11) == 0 ? "/v1/models/{id}" : "unknown";
    /* the error shape of the route's API: Anthropic's under /v1/messages, OpenAI's under /v1/, else Ollama's */
    const enum srv_api shape = strncmp(url, "/v1/messages", 12) == 0 ? API_ANTHROPIC
                               : strncmp(url, "/v1/", 4) == 0        ? API_OAI_CHAT
                                                                     : API_GENERATE;
    if (k->refused) return reply_error(c, shape, 403, k->refused);
    if (strcmp(method, "OPTIONS") == 0) return (enum MHD_Result)srv_access_preflight(srv->access, c);
    bool oai = strncmp(url, "/v1/", 4) == 0;
    if (found < 0 && strncmp(url, "/v1/models/", 11) == 0 && get) return serve_oai_models(srv, c, url + 11);
    if (found < 0 && strncmp(url, "/api/blobs/", 11) == 0) {
        k->route = "/api/blobs/{digest}";
        if (k->upload) {
            struct srv_upload *u = k->upload;
            k->upload = NULL;
            return srv_upload_finish(c, u);
        }
        if (strcmp(method, "HEAD") == 0) return srv_serve_blob_head(srv, c, url + 11);
        return reply_error(c, API_GENERATE, post ? 500 : 405, post ? "out of memory" : "method not allowed");
    }
    if (found < 0) return reply_error(c, shape, 404, "not found");
    if (routes[found].post ? !(strcmp(url, "/api/delete") == 0 ? del : post) : !get)
        return reply_error(c, shape, 405, "method not allowed");
    if (!routes[found].post) {
        if (strcmp(url, "/") == 0) return reply_raw(c, 200, "text/plain; charset=utf-8", "wick is running", 15);
        if (strcmp(url, "/api/version") == 0)
            return reply_json(c, 200, json_pack("{s:s}", "version", WK_OLLAMA_API_VERSION));
        if (strcmp(url, "/api/tags") == 0) return reply_json(c, 200, srv_models_list(srv->models_dir));
        if (strcmp(url, "/api/ps") == 0) return reply_json(c, 200, srv_ps_list(srv));
        if (strcmp(url, "/health") == 0 || strcmp(url, "/v1/health") == 0) /* as llama-server's */
            return reply_json(c, 200, json_pack("{s:s}", "status", "ok"));
        if (strcmp(url, "/metrics") == 0) return srv_serve_metrics(srv, c);
        return serve_oai_models(srv, c, NULL);
    }
    enum srv_api api = routes[found].api >= 0 ? (enum srv_api)routes[found].api
                       : oai                  ? API_OAI_CHAT
                                              : API_GENERATE;
    if (k->too_big) return reply_error(c, api, 413, "the request body is larger than 4 MiB");
    if (json_values_over(k->body.p, k->body.len, MAX_JSON_VALUES)) {
        char tm[160];
        snprintf(tm, sizeof tm, "the request body holds more than %d JSON values", MAX_JSON_VALUES);
        return reply_error(c, api, 413, tm);
    }
    json_error_t je;
    json_t *body = json_loadb(k->body.p ? k->body.p : "", k->body.len, 0, &je);
    if (!body || !json_is_object(body)) {
        char msg[300];
        if (!body) snprintf(msg, sizeof msg, "invalid JSON: %s (at line %d, column %d)", je.text, je.line, je.column);
        else snprintf(msg, sizeof msg, "the request body must be a JSON object");
        json_decref(body);
        return reply_error(c, api, 400, msg);
    }
    bool render_only = strstr(url, "apply-template") != NULL || strstr(url, "count_tokens") != NULL;
    enum MHD_Result ret = routes[found].api >= 0             ? serve_generation(srv, c, api, body, render_only)
                          : strcmp(url, "/api/create") == 0 ? srv_serve_create(srv, c, body)
                          : strcmp(url, "/api/copy") == 0   ? srv_serve_copy(srv, c, body)
                          : strcmp(url, "/api/pull") == 0   ? srv_serve_pull(srv, c, body)
                          : strcmp(url, "/api/push") == 0   ? srv_serve_push(srv, c, body)
                          : strcmp(url, "/api/delete") == 0 ? srv_serve_delete(srv, c, body)
                          : strstr(url, "embed") != NULL    ? srv_serve_embed(srv, c, url, body)
                          : strcmp(url, "/tokenize") == 0   ? srv_serve_tokenize(srv, c, body, false)
                          : strcmp(url, "/detokenize") == 0 ? srv_serve_tokenize(srv, c, body, true)
                                                            : srv_serve_show(srv, c, body);
    json_decref(body);
    return ret;
}

/* route(), then its answer counted for /metrics by route and status as
 * queued, before a byte of it is sent (so a client that reads /metrics
 * after an answer finds it counted); a request left unanswered (its
 * client gone) is not counted. */
static enum MHD_Result route_counted(struct srv_server *srv, struct MHD_Connection *c, const char *url,
                                     const char *method, struct conn *k)
{
    /* a route that computes (a generation, embeddings, a create, a pull)
     * may take longer than the idle timeout before its answer: not the
     * client's idleness */
    srv_conn_wait_begin(c);
    enum MHD_Result ret = route(srv, c, url, method, k);
    srv_conn_wait_end(c);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
    if (ret == MHD_YES && ci && ci->http_status) srv_metrics_request(srv->metrics, k->route, ci->http_status);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    struct srv_server *srv = cls;
    struct conn *k = *con_cls;
    if (!k) {
        if (!(k = wk_calloc(1, sizeof *k))) return MHD_NO;
        *con_cls = k;
        /* Host and Origin first: a refused request's body is not kept */
        k->refused = srv_access_check(srv->access, c, k->refused_msg, sizeof k->refused_msg);
        /* the body's room at once when its length is given (no copies as
         * it grows), and a length past the limit refused before it arrives */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        char *end;
        unsigned long long n = cl ? strtoull(cl, &end, 10) : 0;
        if (!k->refused && strcmp(method, "POST") == 0 && strncmp(url, "/api/blobs/", 11) == 0) {
            /* a blob of any size, written to the store as it comes */
            if (!(k->upload = srv_upload_begin(srv, url + 11))) return MHD_NO;
            /* known already (a bad digest, a stored blob): a client that
             * waits for "100 Continue" gets the answer and sends nothing */
            const char *ex = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
            if (srv_upload_known(k->upload) && ex && strcasecmp(ex, "100-continue") == 0)
                return route_counted(srv, c, url, method, k);
            return MHD_YES;
        }
        if (cl && *end == '\0' && n > SRV_MAX_BODY) k->too_big = true;
        else if (cl && *end == '\0' && n > 0 && !k->refused && (k->body.p = wk_malloc((size_t)n + 1)))
            k->body.cap = (size_t)n + 1;
        /* a client that waits for "100 Continue" before it sends the body
         * (curl does for large ones) is refused at once, and sends none of
         * it. Any other client's body is read and dropped before the answer:
         * answered early, it would meet a closed connection mid-send and see
         * a broken pipe instead of the 403 or 413. */
        const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
        if ((k->refused || k->too_big) && expect && strcasecmp(expect, "100-continue") == 0)
            return route_counted(srv, c, url, method, k);
        return MHD_YES;
    }
    if (*upload_size) {
        if (k->upload) {
            srv_upload_data(k->upload, upload, *upload_size);
        } else if (k->refused || k->too_big) {
        } else if (k->body.len + *upload_size > SRV_MAX_BODY || !wk_buf_add(&k->body, upload, *upload_size))
            k->too_big = true;
        *upload_size = 0;
        return MHD_YES;
    }
    return route_counted(srv, c, url, method, k);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    struct conn *k = *con_cls;
    if (!k) return;
    srv_upload_free(k->upload);
    wk_free(k->body.p);
    wk_free(k);
    *con_cls = NULL;
}

/*
 * The address to listen on, read as Ollama reads OLLAMA_HOST
 * (envconfig.Host): "[scheme://]host[:port][/path]"; without a scheme
 * the port defaults to 11434, with http:// to 80 and https:// to 443
 * (wick serves plain HTTP either way); an empty host is 127.0.0.1, an IPv6
 * address goes in brackets ("[::1]:11434"), a name is resolved. False when
 * the host does not resolve or the port is not a number up to 65535.
 */
static bool parse_host(const char *s, struct sockaddr_storage *a, socklen_t *alen)
{
    const char *port = "11434";
    while (*s == ' ' || *s == '\t') s++;
    const char *sep = strstr(s, "://");
    if (sep) {
        if (sep - s == 4 && strncmp(s, "http", 4) == 0) port = "80";
        else if (sep - s == 5 && strncmp(s, "https", 5) == 0) port = "443";
        else return false; /* ftp://, ...: not an address wick can serve on */
        s = sep + 3;
    }
    char hp[512], host[512] = "";
    snprintf(hp, sizeof hp, "%s", s);
    hp[strcspn(hp, "/")] = '\0'; /* a path after the address is Ollama's too, and ignored */
    for (size_t n = strlen(hp); n && strchr(" \t\r\n", hp[n - 1]); n--) hp[n - 1] = '\0';
    char *colon = NULL;
    if (hp[0] == '[') { /* [v6]:port or [v6] */
        char *close = strchr(hp, ']');
        if (!close) return false;
        *close = '\0';
        snprintf(host, sizeof host, "%s", hp + 1);
        if (close[1] == ':') colon = close + 1;
        else if (close[1]) return false;
    } else {
        colon = strrchr(hp, ':');
        if (colon && strchr(hp, ':') != colon) colon = NULL; /* a bare IPv6 address */
        if (colon) *colon = '\0';
        snprintf(host, sizeof host, "%s", hp);
    }
    char portbuf[16];
    if (colon) { /* digits only, up to 65535: "abc", "-1", "0x50", "99999" are errors, not the default */
        if (!colon[1] || strlen(colon + 1) > 5 || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
            atol(colon + 1) > 65535)
            return false;
        snprintf(portbuf, sizeof portbuf, "%ld", atol(colon + 1));
        port = portbuf;
    }
    if (strpbrk(host, "@ \t")) return false; /* user@host, "host :port" */
    if (!*host || strcmp(host, "localhost") == 0) snprintf(host, sizeof host, "127.0.0.1");
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res) return false;
    memcpy(a, res->ai_addr, res->ai_addrlen);
    *alen = res->ai_addrlen;
    freeaddrinfo(res);
    return true;
}

/* An integer environment setting: WICK_name (read first) or, where ollama
 * is not NULL, OLLAMA_name, in lo .. hi into *out; *out untouched when
 * unset. False (after a message naming it, saying it must be `what` from
 * lo to hi) when it is not a whole number in range (strtol: "3x" is not 3). */
static bool env_long(const char *wick, const char *ollama, const char *what, long lo, long hi, long *out)
{
    const char *v = ollama ? wk_getenv_alias(wick, ollama) : getenv(wick);
    if (!v) return true;
    char *end;
    const long n = strtol(v, &end, 10);
    if (end == v || *end || n < lo || n > hi) {
        if (ollama) fprintf(stderr, "wick serve: %s (%s) must be %s from %ld to %ld, not '%s'\n", ollama, wick, what, lo, hi, v);
        else fprintf(stderr, "wick serve: %s must be %s from %ld to %ld, not '%s'\n", wick, what, lo, hi, v);
        return false;
    }
    *out = n;
    return true;
}

/* OLLAMA_CONTEXT_LENGTH (WICK_CONTEXT_LENGTH): the num_ctx of requests and
 * models that set none; OLLAMA_NUM_PARALLEL (WICK_NUM_PARALLEL): the
 * requests a runner computes at once (its parallel slots; unset, chosen
 * from memory by the runner, runner.c), checked here and said;
 * OLLAMA_MAX_LOADED_MODELS (WICK_MAX_LOADED_MODELS): runners at once (3; 0 is
 * unset for these three, as Ollama reads them);
 * WICK_IDLE_TIMEOUT: the seconds a connection may sit idle (the client
 * sending or reading nothing while the server waits for it) before it is
 * closed, IDLE_TIMEOUT when unset; OLLAMA_KEEP_ALIVE (WICK_KEEP_ALIVE):
 * checked only (an empty value is unset, as Ollama reads it);
 * OLLAMA_KV_CACHE_TYPE (WICK_KV_CACHE_TYPE): f32 (or unset), f16 or q8_0, else refused.
 * False (after a message) when a value is not a number in range. */
static bool read_env_numbers(struct srv_server *srv)
{
    /* 0 is unset, as Ollama's envconfig reads these (its default for all three) */
    long ctx = 0, idle = IDLE_TIMEOUT, par = 0, loaded = 0;
    if (!env_long("WICK_CONTEXT_LENGTH", "OLLAMA_CONTEXT_LENGTH", "0 (unset) or an integer", 0, 1L << 20, &ctx) ||
        !env_long("WICK_IDLE_TIMEOUT", NULL, "a number of seconds", 1, 86400, &idle) ||
        !env_long("WICK_NUM_PARALLEL", "OLLAMA_NUM_PARALLEL", "0 (unset) or an integer", 0, 1024, &par) ||
        !env_long("WICK_MAX_LOADED_MODELS", "OLLAMA_MAX_LOADED_MODELS", "0 (unset) or an integer", 0, 1024, &loaded))
        return false;
    if (ctx > 0 && ctx < 16) { /* num_ctx's range (options.c) */
        fprintf(stderr, "wick serve: OLLAMA_CONTEXT_LENGTH (WICK_CONTEXT_LENGTH) must be 0 (unset) or from 16 to %ld, "
                        "not %ld\n", 1L << 20, ctx);
        return false;
    }
    srv->default_ctx = (int32_t)ctx;
    g_idle_timeout = (unsigned)idle;
    srv->max_loaded = loaded ? (int)loaded : 3;
    const char *v;
    /* read again for each request (srv_default_keep_alive), checked here:
     * a value Go's time.ParseDuration or a number of seconds does not read
     * was the default, silently */
    v = wk_getenv_alias("WICK_KEEP_ALIVE", "OLLAMA_KEEP_ALIVE");
    if (v && *v) {
        json_t *j = json_string(v);
        int64_t ns;
        const bool ok = j && srv_parse_keep_alive(j, &ns);
        json_decref(j);
        if (!ok) {
            fprintf(stderr, "wick serve: OLLAMA_KEEP_ALIVE (WICK_KEEP_ALIVE) must be a duration (\"5m\", \"1h30m\", "
                            "\"-1\" forever, \"0\") or a number of seconds, not '%s'\n", v);
            return false;
        }
    }
    /* Ollama's KV cache type (f16 by default there; q8_0 and q4_0 to halve
     * or quarter its memory): wick's cache holds f32 entries unless told
     * f16 or q8_0 (the runners inherit the variable and read it,
     * runner.c); a type it does not have is refused rather than dropped */
    enum wk_dtype kv;
    if (!wk_kv_type_from_env(&kv, &v)) {
        fprintf(stderr, "wick serve: OLLAMA_KV_CACHE_TYPE (WICK_KV_CACHE_TYPE) is '%s', but wick's KV cache is f32 "
                        "(the default: 4 bytes an entry), f16 (2 bytes) or q8_0 (1.0625 bytes); a q4_0 cache is not "
                        "implemented\n",
                v);
        return false;
    }
    if (kv != WK_DTYPE_F32)
        fprintf(stderr, "wick serve: %s=%s: the KV caches hold %s entries (%s the memory of f32; a "
                        "model with multi-head latent attention keeps f32)\n",
                getenv("WICK_KV_CACHE_TYPE") ? "WICK_KV_CACHE_TYPE" : "OLLAMA_KV_CACHE_TYPE", wk_kv_type_name(kv),
                wk_kv_type_name(kv), kv == WK_DTYPE_F16 ? "half" : "about a quarter of");
    if (par) /* the runners inherit the variable and read it (runner.c) */
        fprintf(stderr, "wick serve: %s=%ld: each model computes up to %ld request(s) at once, "
                        "each with a KV cache of the full context; more queue%s\n",
                getenv("WICK_NUM_PARALLEL") ? "WICK_NUM_PARALLEL" : "OLLAMA_NUM_PARALLEL", par, par > WK_SEQ_MAX ? (long)WK_SEQ_MAX : par,
                par > WK_SEQ_MAX ? " (capped at 64, the sequences one context holds)" : "");
    return true;
}

int wk_serve_main(const struct wk_serve_opts *o)
{
    struct sockaddr_storage addr;
    socklen_t addr_len;
    if (!parse_host(o->host, &addr, &addr_len)) {
        (void)addr_len;
        fprintf(stderr, "wick serve: bad address '%s' (want [scheme://]host[:port], e.g. 127.0.0.1:11434 or [::1]:11434)\n",
                o->host);
        return 2;
    }
    struct srv_server server = {.models_dir = o->models, .allow_paths = o->allow_paths}, *srv = &server;
    struct wk_store *store;
    struct wk_error serr;
    if (wk_store_open(srv->models_dir, &store, &serr) == WK_OK) { /* what killed creates left */
        int n_stale = wk_store_clean_stale(store);
        if (n_stale) fprintf(stderr, "wick serve: removed %d stale temporary file(s) from %s\n", n_stale, srv->models_dir);
        wk_store_close(store);
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "wick serve: cannot find its own executable\n");
        return 1;
    }
    exe[n] = '\0';
    if (!read_env_numbers(srv)) return 2;
    /* signals are taken by sigwait below, not by the connection threads */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (!(srv->access = srv_access_create((const struct sockaddr *)&addr)) || !(srv->metrics = srv_metrics_create()) ||
        srv_sched_create(exe, o->n_threads, srv->max_loaded, &srv->sched)) {
        fprintf(stderr, "wick serve: cannot start the scheduler (out of memory?)\n");
        srv_metrics_destroy(srv->metrics);
        srv_access_destroy(srv->access);
        return 1;
    }
    /* Connections: a thread each, with a 2 MiB stack (only what is touched
     * is resident: tens of KB for an idle one), so that many idle ones cost
     * little; as many as the
     * descriptors allow, up to MAX_CONNECTIONS (the soft limit raised to
     * the hard one first), so that a thousand idle sockets of one client
     * do not lock the others out; a connection idle (or a request half
     * sent) for IDLE_TIMEOUT seconds is closed. */
    struct rlimit rl;
    unsigned max_conn = 1000;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur > 1256) max_conn = (unsigned)WK_MIN(rl.rlim_cur - 256, (rlim_t)MAX_CONNECTIONS);
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
            MHD_USE_ERROR_LOG | (addr.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
        0, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_TIMEOUT, g_idle_timeout, MHD_OPTION_CONNECTION_LIMIT, max_conn,
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)THREAD_STACK, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
        MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "wick serve: cannot listen on %s (in use?)\n", o->host);
        srv_sched_destroy(srv->sched);
        srv_metrics_destroy(srv->metrics);
        srv_access_destroy(srv->access);
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char ip[64];
    const bool v6 = addr.ss_family == AF_INET6;
    const struct sockaddr_in *a4 = (const struct sockaddr_in *)&addr;
    const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&addr;
    inet_ntop(addr.ss_family, v6 ? (const void *)&a6->sin6_addr : (const void *)&a4->sin_addr, ip, sizeof ip);
    fprintf(stderr, "wick serve: listening on %s%s%s:%u, models from %s\n", v6 ? "[" : "", ip, v6 ? "]" : "",
            di ? di->port : ntohs(v6 ? a6->sin6_port : a4->sin_port), o->models);
    int sig;
    sigwait(&set, &sig);
    fprintf(stderr, "wick serve: shutting down\n");
    srv_sched_begin_shutdown(srv->sched);
    usleep(300 * 1000); /* open streams write their error line */
    MHD_stop_daemon(d);
    srv_sched_destroy(srv->sched);
    srv_metrics_destroy(srv->metrics);
    srv_access_destroy(srv->access);
    return 0;
}
