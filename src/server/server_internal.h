/*
 * server_internal.h - what the parts of `wick serve` share: the model
 * lookup, the scheduler of runner processes, the runner client, and the
 * request plumbing the Ollama and OpenAI routes both use.
 */
#ifndef WK_SERVER_INTERNAL_H
#define WK_SERVER_INTERNAL_H

#include "wk_server.h"
#include "../model/wk_embed.h"
#include "../store/wk_store.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

#define SRV_MAX_BODY ((size_t)4 << 20)
#define SRV_DEFAULT_KEEP_ALIVE_NS (5 * 60 * INT64_C(1000000000))
#define SRV_KEEP_FOREVER INT64_MAX

/* One server's state, made by wk_serve_main and handed to every request
 * (the daemon's callback argument): no request handler reads a global. */
struct srv_server {
    const char *models_dir; /* the store */
    bool allow_paths;       /* wk_serve_opts.allow_paths */
    struct srv_sched *sched;
    struct srv_access *access; /* Host and Origin rules */
    struct srv_metrics *metrics; /* what /metrics reports (metrics.c) */
    int32_t default_ctx;         /* OLLAMA_CONTEXT_LENGTH; 0: the engine's default (4096) */
    int max_loaded;              /* OLLAMA_MAX_LOADED_MODELS: runners at once (3) */
};

/* Replies on connection c (http.c): text [len] of Content-Type type with status; obj (stolen) as
 * compact JSON; {"error": msg} (Ollama's shape). Each adds the CORS headers
 * of an allowed Origin. MHD_NO when out of memory. */
enum MHD_Result srv_reply_raw(struct MHD_Connection *c, unsigned status, const char *type, const char *text,
                              size_t len);
enum MHD_Result srv_reply_json(struct MHD_Connection *c, unsigned status, json_t *obj);
enum MHD_Result srv_reply_error(struct MHD_Connection *c, unsigned status, const char *msg);

/* Connection c's idle timeout (WICK_IDLE_TIMEOUT, 60 s) off while the
 * server computes or waits for a runner (srv_conn_wait_begin), and back on
 * with its timer restarted once the server has bytes for the client again
 * (srv_conn_wait_end): the timeout is for a client that sends or reads
 * nothing, not for a request queued behind others, a long prefill or a
 * long create. A client that leaves meanwhile is noticed by its socket
 * (srv_call_open's client_fd). Call both from c's own thread (the access
 * handler or a response's reader); NULL c does nothing. */
void srv_conn_wait_begin(struct MHD_Connection *c);
void srv_conn_wait_end(struct MHD_Connection *c);

/* ------------------------------------------------------------ store routes (api_store.c) */

/* POST /api/show {model, verbose}: Ollama's ShowResponse (license,
 * modelfile, parameters, template, system, details, model_info, tensors
 * when verbose, capabilities, modified_at, messages). 404 for an unknown
 * model. */
enum MHD_Result srv_serve_show(struct srv_server *srv, struct MHD_Connection *c, json_t *body);
/* POST /api/create: from a stored model ("from"; a path only with
 * --allow-paths), or from "files" ({name: digest} of uploaded blobs: one
 * GGUF file, or a Hugging Face folder's files); "adapters" refused (400). */
enum MHD_Result srv_serve_create(struct srv_server *srv, struct MHD_Connection *c, json_t *body);
/* POST /api/copy {source, destination} and DELETE /api/delete {model}:
 * 200 with an empty body; 404 for an unknown model, 400 for a bad name. */
enum MHD_Result srv_serve_copy(struct srv_server *srv, struct MHD_Connection *c, json_t *body);
enum MHD_Result srv_serve_delete(struct srv_server *srv, struct MHD_Connection *c, json_t *body);
/* HEAD /api/blobs/:digest: 200 when the store holds the blob, else 404
 * (400 for a malformed digest). A digest is "sha256:" or "sha256-" and 64
 * hex digits of either case, as Ollama's manifest.BlobsPath takes it, here
 * and in POST. */
enum MHD_Result srv_serve_blob_head(struct srv_server *srv, struct MHD_Connection *c, const char *digest);

/* POST /api/blobs/:digest: the body written into the store as it arrives
 * and checked against digest at the end (201; 400 "digest mismatch"; 200
 * at once when the blob is stored already, the body dropped). */
struct srv_upload;
/* Starts one (errors such as a malformed digest are kept for the reply);
 * NULL when out of memory. */
struct srv_upload *srv_upload_begin(struct srv_server *srv, const char *digest);
/* Whether u's answer is known before its body (a malformed digest, a blob
 * stored already): the body is then not worth receiving. */
bool srv_upload_known(const struct srv_upload *u);
/* Appends a piece of the body. */
void srv_upload_data(struct srv_upload *u, const char *data, size_t n);
/* Replies (201, 200 or the error) and frees u. */
enum MHD_Result srv_upload_finish(struct MHD_Connection *c, struct srv_upload *u);
/* Frees u (a connection that ended early), dropping a partial blob. */
void srv_upload_free(struct srv_upload *u);
/* GET /api/ps: srv_sched_list with each model's digest (as /api/tags
 * gives it). A new object. */
json_t *srv_ps_list(struct srv_server *srv);

/* ------------------------------------------------------------ models */

/* A model the server can run: its canonical name ("name:tag") and the
 * GGUF blob behind it. */
struct srv_model {
    char name[600];
    char path[4096];
    char draft[4096]; /* "" when none */
};

/* Finds model `name` in the store at models_dir (no paths): fills out
 * and, when sm is not NULL, what the manifest adds (parameters, system,
 * messages; sm owned by the caller). Errors: WK_E_NOT_FOUND ("model 'x'
 * not found"). */
enum wk_status srv_model_find(const char *models_dir, const char *name, struct srv_model *out,
                              struct wk_store_model *sm, struct wk_error *err);

/* {"models": [...]} for /api/tags: every stored model, with details. */
json_t *srv_models_list(const char *models_dir);
/* {"name:tag": "<manifest digest>"} of every stored model (a new object). */
json_t *srv_models_digests(const char *models_dir);

/* ------------------------------------------------------------ scheduler */

struct srv_runner;
/* The scheduler of one server: its runners, their keep-alive reaper, its
 * shutdown flag. */
struct srv_sched;

/* Starts a scheduler (its keep-alive reaper thread) into *out (owned by
 * the caller: srv_sched_destroy). exe: the wick binary to start runners
 * from; n_threads for each runner; at most max_loaded runners at once.
 * Errors: WK_E_NOMEM, WK_E_IO (no thread). */
enum wk_status srv_sched_create(const char *exe, int32_t n_threads, int max_loaded, struct srv_sched **out);
/* Stops the reaper and every runner (SIGTERM, then SIGKILL after 5 s) and
 * frees s (NULL: nothing). No request may hold a runner of s any more. */
void srv_sched_destroy(struct srv_sched *s);

/*
 * The runner of model m with context n_ctx (0: the default), started when
 * none runs (waiting for it to load; least recently used idle runners are
 * stopped first when WICK_MAX_LOADED_MODELS are loaded), one use counted.
 * A runner of m with another n_ctx is restarted once idle. *load_ns: the
 * time spent waiting and loading. Errors: WK_E_IO (the runner could not
 * start; the message has its error).
 */
enum wk_status srv_sched_acquire(struct srv_sched *s, const struct srv_model *m, int32_t n_ctx,
                                 struct srv_runner **out, int64_t *load_ns, struct wk_error *err);
/* Ends one use; the runner stays loaded keep_alive_ns more (0: stop it now
 * if unused, SRV_KEEP_FOREVER: never). */
void srv_sched_release(struct srv_runner *r, int64_t keep_alive_ns);
/* Marks r as dead (it failed mid-request): the next acquire starts anew. */
void srv_sched_mark_dead(struct srv_runner *r);
/* Stops model name's runner now when unused, else when its uses end.
 * Returns false when it is not loaded. */
bool srv_sched_unload(struct srv_sched *s, const char *name);
/* {"models": [...]} for /api/ps. */
json_t *srv_sched_list(struct srv_sched *s);
/* Its n_ctx. */
int32_t srv_runner_n_ctx(const struct srv_runner *r);
/* Bytes of prompt text per token at most, from its vocabulary's longest
 * piece (wk_tokenizer_min_tokens): a prompt of more than n_ctx times this
 * many bytes cannot fit; 0 when the runner did not say. */
int64_t srv_runner_bytes_per_token(const struct srv_runner *r);
/* Ends one use of r, as srv_sched_release, with the keep_alive the last
 * srv_sched_release of r gave (a request that only looks at the model,
 * such as /tokenize, neither shortens nor extends how long it stays:
 * its timer restarts with the same duration); keep_alive_ns when no
 * request has released r yet. r NULL: nothing. */
void srv_sched_release_keep(struct srv_runner *r, int64_t keep_alive_ns);
/* The runners that are up (started, not dead or being stopped) of stored
 * model name ("name:tag", srv_model.name), or of every model when name is
 * NULL. Returns how many; the first one's model goes into *m and the
 * num_ctx it was asked for (0: the default) into *n_ctx (either may be
 * NULL), so that srv_sched_acquire(m, n_ctx) takes it as it is instead of
 * restarting it for another num_ctx. Thread-safe. */
int srv_sched_find_loaded(struct srv_sched *s, const char *name, struct srv_model *m, int32_t *n_ctx);
/* The most bytes a token of model m covers (srv_runner_bytes_per_token)
 * from a runner of m that is up, whatever its num_ctx; 0 when none is.
 * Lets a prompt that cannot fit be refused before a runner restarts for
 * another num_ctx. Thread-safe. */
int64_t srv_sched_bytes_per_token(struct srv_sched *s, const struct srv_model *m);
/* What the runners are doing, for /metrics (srv_sched_counts). */
struct srv_sched_counts {
    int32_t loaded;  /* runners started and not dead */
    int32_t slots;   /* their parallel slots (each runner computes n_parallel requests at once) */
    int32_t busy;    /* slots held by a request (a runner's users up to its n_parallel) */
    int32_t in_use;  /* requests holding a runner (past its n_parallel they wait in its queue) */
    int32_t waiting; /* requests waiting in srv_sched_acquire: for a runner to load, for room under
                      * WICK_MAX_LOADED_MODELS, or for a restart with another num_ctx */
};
/* A snapshot of s's counts into *out. Thread-safe. */
void srv_sched_counts(struct srv_sched *s, struct srv_sched_counts *out);

/* ------------------------------------------------------------ runner client */

/* One request's connection to a runner. */
struct srv_call {
    const struct srv_sched *sched; /* whose shutdown ends the wait */
    int fd;
    char *buf;
    size_t len, off, cap;
    int64_t deadline_ns; /* wk_time_ns after which srv_call_next gives up; 0: none */
};

/* Connects to r, sends req, reads the first line into *first (owned by
 * the caller), waiting at most timeout_ms for it while watching client_fd
 * (-1: none). Errors: WK_E_IO (the runner is gone or did not answer in
 * time), WK_E_CANCELLED (the client left: the runner connection is
 * closed, which drops the request there). */
enum wk_status srv_call_open(struct srv_runner *r, json_t *req, int timeout_ms, int client_fd, struct srv_call *c,
                             json_t **first, struct wk_error *err);

enum srv_next { SRV_LINE, SRV_CLIENT_GONE, SRV_RUNNER_GONE, SRV_SHUTDOWN };
/* Waits for the next line from the runner, watching client_fd (-1: none)
 * for the client hanging up and the server for shutting down; past
 * c->deadline_ns (when set) the runner counts as gone. */
enum srv_next srv_call_next(struct srv_call *c, int client_fd, json_t **line);
void srv_call_close(struct srv_call *c);

/* Sends {"status": true} to r and returns its answer, or NULL. */
json_t *srv_runner_status(struct srv_runner *r);

/* True once the server is shutting down; srv_sched_begin_shutdown makes
 * it so (open streams then end with an error message). */
bool srv_sched_shutting_down(const struct srv_sched *s);
void srv_sched_begin_shutdown(struct srv_sched *s);

/* ------------------------------------------------------------ generation */

enum srv_api { API_GENERATE, API_CHAT, API_OAI_CHAT, API_OAI_COMPLETION, API_ANTHROPIC, API_OAI_RESPONSES };

/* Appends obj's compact JSON (stealing the reference) and then tail. */
bool srv_buf_json(struct wk_buf *b, json_t *obj, const char *tail);
/* Appends a named server-sent event (Anthropic's and the Responses API's
 * streams): "event: type", then "data: " and head's fields followed by
 * data's (both stolen; head holds the type first). */
void srv_sse_event(struct wk_buf *b, const char *type, json_t *head, json_t *data);

/* One generation request, from the parsed body to the last byte sent. */
struct srv_gen {
    enum srv_api api;
    char model_name[WK_MODEL_NAME_MAX]; /* as the client wrote it, echoed back */
    bool stream, include_usage, logprobs;
    bool one_call; /* OpenAI's parallel_tool_calls false: the first tool call only */
    bool render_only; /* /api/apply-template, /v1/messages/count_tokens: the prompt rendered, nothing generated */
    bool custom_stops; /* Anthropic's: the request gave stop_sequences */
    bool ant_omit_thinking; /* Anthropic's thinking.display "omitted" */
    int blk_open; /* Anthropic's and Responses' streams: the content block or output item open */
    int32_t blk_index; /* and its index */
    int64_t seq; /* Responses' stream: the next event's sequence_number */
    json_t *echo; /* Responses: the request's settings the response object repeats */
    json_t *items; /* Responses' stream: the output items done so far */
    json_t *ns_map; /* Responses: a namespace's flattened function name -> [namespace, name] */
    bool calls_seen;      /* not streamed: a tool call has come */
    size_t text_at_call;  /* and the text's length then (0: the calls came first) */
    int think; /* the request's think: -1 unset, 0 off, 1 on */
    const char *think_level; /* "low", "medium" or "high" when the request named one (static), else NULL */
    int32_t top_logprobs, legacy_logprobs; /* legacy: /v1/completions' integer logprobs */
    int64_t keep_alive_ns;
    int32_t n_ctx;
    json_t *runner_req; /* what the runner gets (wk_server.h) */
    /* state */
    struct srv_model model;
    struct srv_runner *runner;
    struct srv_call call;
    int client_fd;
    struct MHD_Connection *conn; /* its connection (srv_conn_wait_begin) */
    int64_t t_start, load_ns, created;
    char id[48];
    struct wk_buf out; /* streamed bytes not yet handed to the HTTP library */
    size_t out_off;
    bool ended, started;
    /* non-streamed: what the chunks add up to */
    struct wk_buf text, thinking;
    json_t *lps;
    json_t *tool_calls; /* the calls so far (Ollama's shape), or NULL */
    struct srv_metrics *metrics; /* the server's (borrowed): the final line's counts go there */
};

/* The keep-alive of a request that sets none, in ns: WICK_KEEP_ALIVE or
 * OLLAMA_KEEP_ALIVE (read as the keep_alive field is: "5m", seconds, a
 * negative value for ever), else 5 minutes (api.c). */
int64_t srv_default_keep_alive(void);

/* Parses a request body for api into g (runner_req, options, flags).
 * Returns 0, or an HTTP status (400) with the message in msg. */
int srv_gen_parse(struct srv_gen *g, json_t *body, char *msg, size_t cap);
/* The options of the table (wk_options.h) at the top level of a request
 * body where the API does not read them (oai: OpenAI's routes, which take
 * temperature, top_p, top_k, min_p, seed, stop, presence_penalty,
 * frequency_penalty and repeat_penalty; Ollama's take every option in
 * "options" only), OpenAI's "options", "n_predict", "functions" and
 * "function_call", and Ollama's "max_tokens": 400 with msg [cap] naming
 * the field, or 0 (api_fields.c). */
int srv_refuse_misplaced_options(bool oai, json_t *body, char *msg, size_t cap);
/* A field of the sibling route where api would drop it (/api/chat:
 * system, template, raw, prompt, suffix, images; /api/generate:
 * messages; chat completions: prompt, echo, best_of, suffix; completions:
 * messages), and on chat completions audio, web_search_options and
 * modalities other than text: 400 with msg [cap] naming it (and the
 * route that takes it), or 0 (api_fields.c). */
int srv_refuse_sibling_fields(enum srv_api api, json_t *body, char *msg, size_t cap);
/* Anthropic's Messages API (api_anthropic.c), srv_gen_parse's and the
 * response functions' for API_ANTHROPIC. srv_anthropic_parse: the body's
 * fields (any other is a 400) into req (the runner's request), ropts (its
 * options) and stop; 0 or 400 with msg [cap]. srv_anthropic_start: a
 * stream's message_start and ping (prompt_tokens: the prompt's length).
 * srv_anthropic_chunk / _done / _stream_error: a stream's events for a
 * runner line, the final line, an error. srv_anthropic_response: the
 * message of a request not streamed. srv_anthropic_error: the error body
 * {"type": "error", "error": {"type", "message"}} for an HTTP status. */
int srv_anthropic_parse(struct srv_gen *g, json_t *body, json_t *req, json_t *ropts, json_t *stop, char *msg, size_t cap);
void srv_anthropic_start(struct srv_gen *g, json_int_t prompt_tokens);
void srv_anthropic_chunk(struct srv_gen *g, json_t *line);
void srv_anthropic_done(struct srv_gen *g, json_t *fin);
void srv_anthropic_stream_error(struct srv_gen *g, const char *msg);
json_t *srv_anthropic_response(struct srv_gen *g, json_t *fin);
json_t *srv_anthropic_error(int status, const char *msg);
/* A content field's text: a string, or a list of parts whose types are
 * among texts (NULL-terminated) joined with sep (a new reference); NULL
 * when it is neither, with the 400 in msg [cap] naming the part (where[i],
 * where names the field), an image part's as "this model does not support
 * images" (api_fields.c). */
json_t *srv_text_parts(json_t *c, const char *const *texts, const char *sep, const char *where, char *msg, size_t cap,
                       int *err);
/* Logprob entries as OpenAI's APIs give them: each with top_logprobs,
 * [] where the runner sent none (api.c). */
void srv_logprobs_complete(json_t *entries);
/* OpenAI's Responses API (api_responses.c), for API_OAI_RESPONSES, as
 * the Anthropic functions above: srv_responses_parse (0 or 400),
 * srv_responses_start (a stream's response.created and .in_progress),
 * srv_responses_chunk / _done / _stream_error (a stream's events),
 * srv_responses_response (the response object of a request not streamed). */
int srv_responses_parse(struct srv_gen *g, json_t *body, json_t *req, json_t *ropts, json_t *stop, char *msg, size_t cap);
void srv_responses_start(struct srv_gen *g);
void srv_responses_chunk(struct srv_gen *g, json_t *line);
void srv_responses_done(struct srv_gen *g, json_t *fin);
void srv_responses_stream_error(struct srv_gen *g, const char *msg);
json_t *srv_responses_response(struct srv_gen *g, json_t *fin);
/* OpenAI's reasoning effort (reasoning_effort, or reasoning.effort) into
 * g->think and g->think_level: "none" off, minimal as low, low / medium /
 * high, max, xhigh and ultra as high; 0 or 400 (api.c). */
int srv_openai_reasoning_effort(struct srv_gen *g, json_t *body, char *msg, size_t cap);
/* Appends the streamed form of runner line `line` (a content line or the
 * final line) to g->out, and to the aggregate when not streaming. */
void srv_gen_chunk(struct srv_gen *g, json_t *line);
void srv_gen_done(struct srv_gen *g, json_t *final_line);
/* Appends an in-stream error message. */
void srv_gen_stream_error(struct srv_gen *g, const char *msg);
/* The whole non-streamed response, from the aggregate and the final line. */
json_t *srv_gen_response(struct srv_gen *g, json_t *final_line);
/* The HTTP status of a request that failed with st, one mapping for every
 * route: what the client sent is wrong (FORMAT, UNSUPPORTED, INVALID,
 * RANGE) 400, NOT_FOUND 404, PERMISSION 403, CANCELLED (the server is
 * shutting down) 503, the server's own trouble (NOMEM, IO, INTERNAL) 500. */
int srv_http_status(enum wk_status st);
/* The error body for api: {"error": msg} (Ollama) or {"error": {"message",
 * "type", "param", "code"}} (OpenAI). */
json_t *srv_error_body(enum srv_api api, int status, const char *msg);

/* ------------------------------------------------------------ access (access.c) */

struct sockaddr;
struct MHD_Connection;
struct MHD_Response;
/* A server's Host and Origin rules. */
struct srv_access;
/* Reads OLLAMA_ORIGINS and WICK_ORIGINS and this machine's hostname; the
 * Host check applies when listen is a loopback address. NULL when out of
 * memory; owned by the caller (srv_access_destroy). */
struct srv_access *srv_access_create(const struct sockaddr *listen);
void srv_access_destroy(struct srv_access *a);
/* Whether a Host header value is allowed for a server on a loopback
 * address, and an Origin header value at all (srv_access_check's rules). */
bool srv_access_host_ok(const struct srv_access *a, const char *host);
bool srv_access_origin_ok(const struct srv_access *a, const char *origin);
/* NULL when c's Host and Origin headers are allowed, else a message
 * naming the refused one (written into msg [cap]) for a 403. */
const char *srv_access_check(const struct srv_access *a, struct MHD_Connection *c, char *msg, size_t cap);
/* The CORS headers for c's (allowed) Origin, if it sent one, added to r. */
void srv_access_headers(const struct srv_access *a, struct MHD_Connection *c, struct MHD_Response *r);
/* Answers a CORS preflight (OPTIONS) with 204 and the allowed methods and
 * headers. Returns MHD's result (an enum MHD_Result). */
int srv_access_preflight(const struct srv_access *a, struct MHD_Connection *c);

/* ----------------------------------------------------- tool calls (runner) */

/* Where an answer's content and tool calls go, in order. content's text is
 * borrowed; calls is a new JSON array [{"function": {"index", "name",
 * "arguments"}}] (Ollama's shape) the callee takes over. Returning false
 * stops the answer. */
struct srv_tools_sink {
    bool (*content)(void *user, const char *text, size_t len);
    bool (*calls)(void *user, json_t *calls);
    void *user;
};
struct srv_tools;
/* The tool calls of an answer to a request that offered tools (a JSON
 * array) through the template template_text[len] (its tool-call syntax,
 * wk_toolcall_detect), and, as Ollama takes them, an answer that is only a
 * bare or ```json-fenced JSON object {"name", "arguments"} naming an
 * offered tool (runner_tools.c). Errors: WK_E_NOMEM. */
enum wk_status srv_tools_create(const char *template_text, size_t len, const json_t *tools,
                                const struct srv_tools_sink *out, struct srv_tools **res, struct wk_error *err);
/* The next piece of the answer; false when a sink stopped it or memory ran out. */
bool srv_tools_push(struct srv_tools *t, const char *text, size_t len);
/* runner_harmony.c: whether m's chat template is harmony (gpt-oss); the
 * template kwargs of a request (kwargs, borrowed; may be NULL) with
 * reasoning_effort set to effort unless they set it (a new reference;
 * kwargs itself, referenced, when effort is NULL). */
struct wk_model;
bool srv_harmony_model(const struct wk_model *m);
json_t *srv_harmony_kwargs(const char *effort, json_t *kwargs);
/* A tool call found by another parser (gpt-oss's harmony, wk_harmony.h):
 * out as a call when the request offered that tool, else its text as
 * content; false when a sink stopped it or memory ran out. */
struct wk_toolcall;
bool srv_tools_call(struct srv_tools *t, const struct wk_toolcall *call);
/* The answer's end: what is held goes out (as calls or content). */
bool srv_tools_finish(struct srv_tools *t);
int srv_tools_n_calls(const struct srv_tools *t);
struct wk_grammar;
/* tool_choice "required" (only NULL) or a named function (only): a grammar
 * for calls of the offered tools in the template's tool-call syntax (one
 * or more where the syntax has several, <tool_call> blocks; one of only,
 * when named), each one's arguments as its tool's parameters schema; lazy
 * (strict tools under tool_choice auto, wk_generate_params.grammar_lazy):
 * one call in any form the tool-call parser reads, the template's syntax
 * or the object alone, bare or ```-fenced.
 * Errors: WK_E_UNSUPPORTED (a syntax with control tokens: Mistral, Llama
 * 3's python tag; or a schema keyword), WK_E_INVALID (only names no
 * tool), WK_E_NOMEM. */
/* The grammar a request's tools ask for (req: the runner's request; the
 * chat template its tools render with; tok the model's tokenizer):
 * tool_choice "required" or a named function, srv_tools_grammar's; strict
 * tools under auto ("tool_strict"), the lazy one, *lazy_trigger set to the
 * token that opens a call mid-answer (INT32_MAX: none; else -1).
 * WK_E_NOT_FOUND when the tools ask for none (*out NULL); else
 * srv_tools_grammar's status. */
/* A request's "tools" (NULL or null: none) checked into req "tools"
 * (api_tools.c). 0, or a 400 with msg [cap]. */
int srv_parse_tools(json_t *tools, json_t *req, char *msg, size_t cap);
/* OpenAI's tools, tool_choice ("none", "auto", "required", a named
 * function: req "tool_choice") and parallel_tool_calls (g->one_call), and
 * strict function tools under auto (req "tool_strict"). 0, or a 400. */
/* Whether a tool's name is 1 to 64 letters, digits, '_', '.' or '-'
 * (SRV_TOOL_NAME_RULE, for messages). */
#define SRV_TOOL_NAME_RULE "1 to 64 letters, digits, '_', '.' or '-'"
bool srv_tool_name_ok(const char *name);
/* A tool in the Responses and Anthropic APIs' flat shape (t: {name,
 * description?, <schema_key>?: its parameters' schema, strict?}; name: the
 * name to give it) checked, its errors naming where ("tools[2]"), and
 * appended to fns in the chat route's {type: function, function: {...}}:
 * 0, or 400 with msg [cap]. */
int srv_flat_tool(json_t *fns, const char *name, json_t *t, const char *schema_key, const char *where, char *msg, size_t cap);
/* Drops "strict" from the functions of req's tools once
 * srv_parse_oai_tools has read it: a control of the Responses and
 * Anthropic APIs, not part of what the template renders (as Ollama's
 * api.Tool has no such field). */
void srv_tools_unstrict(json_t *req);
/* A JSON schema (NULL or not an object: nothing to check) compiled as a
 * grammar: 0, or 400 with msg [cap] "where: why" when it is not a valid
 * schema, or (enforced: an output format, which must hold) when it uses a
 * keyword the grammar cannot enforce (a tool's parameters may). */
int srv_check_schema(json_t *schema, bool enforced, const char *where, char *msg, size_t cap);
int srv_parse_oai_tools(struct srv_gen *g, json_t *body, json_t *req, char *msg, size_t cap);
struct wk_tokenizer;
enum wk_status srv_tools_request_grammar(const json_t *req, const char *template_text, size_t len,
                                         const struct wk_tokenizer *tok, struct wk_grammar **out, int32_t *lazy_trigger,
                                         struct wk_error *err);
enum wk_status srv_tools_grammar(const char *template_text, size_t len, const json_t *tools, const char *only, bool lazy,
                                 struct wk_grammar **out, struct wk_error *err);
void srv_tools_free(struct srv_tools *t);

/* ------------------------------------------------ structured output (runner) */

struct wk_grammar;
struct wk_grammar_matcher;
struct wk_tokenizer;
/* A runner's structured-output state: the grammar vocabulary of its
 * tokenizer, built on first use (runner_format.c). NULL when out of memory. */
struct srv_format *srv_format_new(void);
void srv_format_free(struct srv_format *f);
/* Pieces a long prompt is counted in by srv_prompt_surely_longer: about this many bytes. */
#define SRV_COUNT_PIECE 65536

/*
 * True when prompt p surely holds more than limit tokens, tokenizing it in
 * pieces of about SRV_COUNT_PIECE bytes (cut before a space or a newline
 * where there is one) and stopping as soon as the count passes limit: so
 * a prompt too long for the context costs about limit tokens of work, not
 * its whole length (a 16 MB prompt tokenized whole took seconds and
 * hundreds of MB). Cutting changes a few tokens at each cut, so callers
 * give limit a margin over the context and tokenize exactly below it.
 * *counted: the tokens counted. runner_prompt.c.
 */
struct wk_prompt;
bool srv_prompt_surely_longer(const struct wk_tokenizer *tok, const struct wk_prompt *p, int64_t limit,
                              int64_t *counted);

/* What a runner renders a conversation with: its model and tokenizer, the
 * request (its "template", a Go TEMPLATE, and "template_kwargs"), its
 * tools (or NULL), think (-1 unset, 0, 1) and a harmony model's reasoning
 * effort (or NULL). */
struct srv_chat_render {
    const struct wk_model *model;
    const struct wk_tokenizer *tok;
    json_t *req, *tools;
    int think;
    const char *effort;
};
/* Renders messages msgs (Ollama's shape) through the request's Go
 * TEMPLATE, else the model's own chat template (wk_chat_render_request),
 * the assistant's turn opened, into *out. Errors: those of the renderers. */
enum wk_status srv_render_messages(const struct srv_chat_render *r, json_t *msgs, struct wk_prompt *out,
                                   struct wk_error *err);
/* Ollama's truncate (server/prompt.go chatPrompt): when *prompt (msgs
 * rendered) does not leave reserve tokens of n_ctx for the answer (at most
 * half the context; Ollama's runner shifts the context instead, which
 * wick does not), it becomes the render of the longest run of recent
 * messages that does, with every system message before it (a run the
 * template refuses to render, as one starting at an answer for a template
 * that checks the roles' order, is passed over), else the last message
 * alone (if even that does not fit, the caller's length check refuses
 * it). When *prompt is kept as it is, its tokens may come back in *ids
 * (empty on entry; left empty when they were not computed), so the caller
 * need not tokenize it again. Errors: those of the renderers but a refused
 * run's, WK_E_NOMEM. */
struct wk_tokens;
enum wk_status srv_fit_history(const struct srv_chat_render *r, json_t *msgs, int32_t n_ctx, int32_t reserve,
                               struct wk_prompt *prompt, struct wk_tokens *ids, struct wk_error *err);

/* Ollama's deprecated /api/generate context (routes.go GenerateHandler):
 * srv_context_prompt puts the text of the token ids in context (an array;
 * empty or NULL: nothing) before prompt p, after its BOS, as a segment
 * whose control-token text counts (Ollama detokenizes them and prepends
 * the text); errors: WK_E_INVALID (an item that is not a token id of the
 * vocabulary, naming it), WK_E_NOMEM. srv_prompt_text appends p's text,
 * past a BOS the tokenizer added, to out (WK_E_NOMEM). srv_context_ids
 * sets fin's "context" to the ids of text (the prompt's and the answer's,
 * tokenized with control tokens recognised and no BOS, as Ollama's
 * Tokenize(prompt + response)) and returns fin. runner_prompt.c. */
enum wk_status srv_context_prompt(const struct wk_tokenizer *tok, const json_t *context, struct wk_prompt *p,
                                  struct wk_error *err);
enum wk_status srv_prompt_text(const struct wk_tokenizer *tok, const struct wk_prompt *p, struct wk_buf *out,
                               struct wk_error *err);
json_t *srv_context_ids(const struct wk_tokenizer *tok, const struct wk_buf *text, json_t *fin);

/* The prompt of a runner request with "fim": {"prefix", "suffix"} (strings;
 * a suffix given): through its "template" (a Go TEMPLATE) where that names
 * .Suffix, else the vocabulary's fill-in-the-middle tokens (wk_prompt_fim).
 * Errors: WK_E_INVALID (no prefix or suffix string; a template that fails),
 * WK_E_UNSUPPORTED (the model cannot fill in: no FIM tokens), WK_E_FORMAT
 * (a template that does not parse), WK_E_NOMEM. runner_fim.c. */
struct wk_prompt;
enum wk_status srv_fim_prompt(const struct wk_tokenizer *tok, const json_t *req, struct wk_prompt *out,
                              struct wk_error *err);
/* The grammar a runner request asks for: "grammar" (GBNF text), "format"
 * ("json": any JSON object; an object: a JSON schema), or none (*out
 * NULL). Errors: those of wk_grammar_from_gbnf / _from_json_schema
 * (WK_E_INVALID, WK_E_UNSUPPORTED naming the keyword, WK_E_RANGE), a
 * format of another kind (WK_E_INVALID), WK_E_NOMEM. */
enum wk_status srv_format_compile(const json_t *req, struct wk_grammar **out, struct wk_error *err);
/* A matcher for g (which must outlive it) over tok's vocabulary (built
 * once per runner). Errors: WK_E_NOMEM, WK_E_RANGE. */
enum wk_status srv_format_matcher(struct srv_format *f, const struct wk_tokenizer *tok, const struct wk_grammar *g,
                                  struct wk_grammar_matcher **out, struct wk_error *err);

/* -------------------------------- llama-server's small routes (metrics.c) */

/* The counters behind GET /metrics: requests by route and status, tokens
 * and seconds by model. Thread-safe (one mutex); owned by the server. */
struct srv_metrics;
/* A new set of counters, all zero; NULL when out of memory. Free with
 * srv_metrics_destroy (NULL: nothing). */
struct srv_metrics *srv_metrics_create(void);
void srv_metrics_destroy(struct srv_metrics *m);
/* Counts one answered request: route is the route's path as the route
 * table names it ("/api/chat"; "unknown" for a path no route has; copied),
 * code its HTTP status. m NULL: nothing. */
void srv_metrics_request(struct srv_metrics *m, const char *route, unsigned code);
/* Adds a generation's counts from the runner's final line (wk_server.h:
 * prompt_tokens, prompt_eval_count (prefilled), prompt_eval_duration and
 * eval_duration in ns, eval_count) to model's totals (the canonical
 * "name:tag"; copied) and sets its last-request rates. m NULL: nothing. */
void srv_metrics_generation(struct srv_metrics *m, const char *model, const json_t *final_line);
/* GET /metrics: the counters in Prometheus' text exposition format 0.0.4,
 * wick's names and llama-server's (llamacpp:*) where they mean the same. */
enum MHD_Result srv_serve_metrics(struct srv_server *srv, struct MHD_Connection *c);
/* POST /tokenize ({"model", "content", "add_special", "parse_special",
 * "with_pieces"} -> {"tokens"}) and, with detokenize, POST /detokenize
 * ({"model", "tokens"} -> {"content"}), llama-server's shapes, on the
 * model's runner (started if need be). body is borrowed. Errors: 400
 * naming the field, 404 for an unknown model, 500 when the runner fails. */
enum MHD_Result srv_serve_tokenize(struct srv_server *srv, struct MHD_Connection *c, json_t *body, bool detokenize);

/* ------------------------------------------------------------ embeddings */

/* `wick runner` for an embedding model (runner_embed.c; runner.c hands a
 * folder or GGUF wk_embed_is_model recognises to it): as wk_runner_main, serving
 * the embed requests wk_server.h describes. */
int srv_runner_embed_main(const struct wk_runner_opts *o);
/* An embed request's inputs as token ids, for either runner. */
struct srv_embed_batch {
    int32_t n;                 /* inputs */
    struct wk_tokens *toks;    /* [n] each input's ids */
    const int32_t **seqs;      /* [n] toks[i].ids (borrowed from toks) */
    int32_t *n_tokens;         /* [n] toks[i].n */
    int64_t total;             /* the sum of n_tokens */
};
/*
 * Reads the runner request req's "embed" list (strings, or arrays of token
 * ids used as they are) and "truncate" (default true) into b: each string
 * tokenized by wk_embed_tokenize(tok, max_tokens) (BOS when the tokenizer
 * adds one, the ids, then the EOS / [SEP] it adds), an id array cut to
 * max_tokens when truncating. Returns 0, or 400 (a malformed list, an
 * input over max_tokens with truncate false) / 500 (memory) with msg set
 * [cap]. b is always initialized: the caller calls srv_embed_batch_deinit.
 * tok borrowed. Ids are checked against the vocabulary by the model.
 */
int srv_embed_batch_parse(struct srv_embed_batch *b, json_t *req, const struct wk_tokenizer *tok, int32_t max_tokens,
                          char *msg, size_t cap);
void srv_embed_batch_deinit(struct srv_embed_batch *b);
/* The runner's answer line to an embed request: {"status": 200,
 * "embeddings": [base64 of n_embd little-endian f32, one per input of b,
 * out [b->n][n_embd]], "tokens": [n per input], "prompt_eval_count",
 * "prompt_eval_duration": duration_ns}; a 500 line when out of memory. */
json_t *srv_embed_answer(const struct srv_embed_batch *b, const float *out, int32_t n_embd, int64_t duration_ns);
/* Embeddings of a generating model for its runner (runner.c): the pooling
 * its GGUF asks for (wk_embed_decoder_pooling), or why it cannot embed,
 * and the context they are computed on, made at the first request. */
struct srv_decoder_embedder {
    const struct wk_model *model;  /* borrowed: the runner's */
    enum wk_pooling pooling;
    char error[WK_ERROR_MSG_MAX];  /* "" when the model embeds */
    struct wk_context *ctx;        /* NULL until the first request; owned, lives as long as the runner */
    int32_t n_ctx;                 /* ctx's positions: grown to whole ubatches as longer inputs come */
    struct wk_context *many;       /* NULL until two short inputs come; owned: several sequences for them */
};
/* Sets e up for model m (borrowed, must outlive e). Never fails: a pooling
 * wick does not compute is kept in e->error and refuses embed requests. */
void srv_decoder_embedder_init(struct srv_decoder_embedder *e, const struct wk_model *m);
/*
 * Embeds the inputs of b (srv_embed_batch_parse), short ones in shared
 * forwards (wk_embed_decoder_many: a vector is still what its input gives
 * alone, bit for bit), not
 * normalized (api_embed.c normalizes per route), on e's context, which
 * borrows main_ctx's threads and n_ubatch and holds at most main_ctx's
 * n_ctx positions: call it only where main_ctx is not running (the
 * runner's compute thread). Returns the answer line (srv_embed_answer),
 * an error line (400: the model cannot embed, a bad id; 500), or NULL when
 * cancel (may be NULL) became true.
 */
json_t *srv_decoder_embed(struct srv_decoder_embedder *e, struct wk_context *main_ctx, const struct srv_embed_batch *b,
                          const volatile bool *cancel);
/* How far srv_decoder_embed_step has come with one request. Zeroed to
 * start; srv_embed_progress_deinit frees it. */
struct srv_embed_progress {
    int32_t next;   /* inputs done */
    float *out;     /* [n][n_embd] their vectors; NULL before the first step */
    int64_t t0;     /* ns, the first step's start */
};
void srv_embed_progress_deinit(struct srv_embed_progress *p);
/*
 * srv_decoder_embed one piece at a time, so that a runner with parallel
 * slots can take decode steps between the pieces: each call embeds the
 * next input longer than 64 tokens, or up to 8 short ones at once
 * (runner_embed.c's DECODER_BATCH_TOKENS, _SEQ; the vectors are the same
 * however the inputs are grouped). The first call checks every input (an
 * empty one, an id outside the vocabulary: a 400 line naming it) and sets
 * up the contexts. Returns the answer line after the last piece, an error
 * line, or NULL: with *done false while inputs remain, with *done true
 * when cancel became true.
 */
json_t *srv_decoder_embed_step(struct srv_decoder_embedder *e, struct wk_context *main_ctx,
                               const struct srv_embed_batch *b, struct srv_embed_progress *p,
                               const volatile bool *cancel, bool *done);
/* Whether m is an embedding model rather than a generator, as Ollama's
 * capabilities say: a BERT folder or GGUF, or a GGUF that names a
 * pooling_type (a decoder made for embeddings: embedding, not
 * completion); generating with it is refused. */
bool srv_model_embeds(const struct srv_model *m);
/* POST /api/embed, /api/embeddings and /v1/embeddings (url says which;
 * api_embed.c has the shapes): 400 for a bad body or a model that does not
 * embed, 404 for an unknown model, 500 when the runner fails. body borrowed. */
enum MHD_Result srv_serve_embed(struct srv_server *srv, struct MHD_Connection *c, const char *url, json_t *body);
/* Whether path is an embedding model's folder (wk_embed_is_folder). */
bool srv_embed_folder(const char *path);
/* wk_model_details for an embedding folder: details (family "bert",
 * parameter size, F32), model_info (bert.context_length = max_seq_length,
 * embedding_length, block_count, vocab_size, pooling_type) when asked, and
 * an empty template; NULL when it does not load. */
json_t *srv_embed_details(const char *path, json_t **model_info, char **template_out);
/* base64 (RFC 4648, padded) of src[n] as a new JSON string; NULL when out of memory. */
json_t *srv_base64_json(const void *src, size_t n);

/* ------------------------------------------------------------ utilities */

/* keep_alive as Ollama reads it: a duration string as Go's
 * time.ParseDuration takes it ("5m", "1h30m", "300ms", "-1m", "0"; no
 * spaces, exponents or hex), a bare number string or a JSON number of
 * seconds; negative = for ever. false on a bad value (NaN, anything else
 * in a string, a duration past Go's ~292 years). */
bool srv_parse_keep_alive(json_t *v, int64_t *ns);
/* RFC 3339 UTC with nanoseconds, for created_at. */
void srv_time_rfc3339(int64_t unix_ns, char *out, size_t cap);
int64_t srv_unix_ns(void);


/* runner_io.c: the runner's stateless parts. */
/* The protocol's error line {"error": msg, "status": status} (a new reference). */
json_t *srv_error_line(int status, const char *msg);
/* true when the peer of socket fd hung up (no wait). */
bool srv_peer_gone(int fd);
/* Writes all of s[n] to fd; false when the peer is gone. */
bool srv_send_all(int fd, const char *s, size_t n);
/* Writes obj (stolen) as one JSON line, in one send (each send wakes the
 * reader); false when the peer is gone. */
bool srv_send_json(int fd, json_t *obj);
/* obj (borrowed) as compact JSON and a newline, NUL-terminated, its length
 * (newline included) in *len: wk_malloc'd (wk_free), NULL when out of memory. */
char *srv_json_line(const json_t *obj, size_t *len);
/* One line (without its newline) of at most max bytes, wk_malloc'd and
 * NUL-terminated, its length in *len; NULL when the peer closes first or
 * the line is too long. */
char *srv_read_line(int fd, size_t max, size_t *len);
/* A runner's next connection on its listening socket lfd that may queue
 * work: from the server process parent (its pid) or, parent <= 0 (a runner
 * started by hand), from a process of this user; others are closed.
 * Returns its fd (close-on-exec, the caller's), or -1 when accept fails
 * other than by EINTR, ECONNABORTED or EMFILE. */
int srv_runner_accept(int lfd, long parent);
/* With parent > 0 (the server's pid): false when that is no longer this
 * process's parent; else a thread that ends the process once it is, and
 * true. parent <= 0 (a runner started by hand): true, nothing started. */
bool srv_runner_watch_parent(long parent);
/* A listening socket (close-on-exec, backlog 128) on the abstract Unix
 * name name; -1 with err set (WK_E_INVALID: name too long; WK_E_IO). */
int srv_runner_listen(const char *name, struct wk_error *err);
/* A runner's accepted connection: its runner (the runner's own type) and
 * socket, wk_malloc'd for conn_main, which frees it and closes fd. */
struct srv_conn {
    void *rn;
    int fd;
};
/* Serves lfd until accept fails for good: each connection srv_runner_accept
 * lets in gets a detached thread running conn_main(struct srv_conn *) with
 * rn (borrowed); a connection whose thread cannot start is closed. */
void srv_runner_serve(int lfd, long parent, void *(*conn_main)(void *), void *rn);
/* The runner's "tokenize" / "detokenize" operations on tok (wk_server.h
 * says their JSON); a new reference, an error object on bad input. */
json_t *srv_piece_json(const struct wk_tokenizer *tok, int32_t id);
json_t *srv_tokenize_json(const struct wk_tokenizer *tok, json_t *req);
json_t *srv_detokenize_json(const struct wk_tokenizer *tok, json_t *req);
/* MemAvailable of /proc/meminfo in bytes (0 when unknown). */
uint64_t srv_mem_available(void);
/* The runner's parallel slots: WICK_NUM_PARALLEL / OLLAMA_NUM_PARALLEL
 * (at most 64), else what fits in memory (runner_io.c says how). */
int32_t srv_runner_n_parallel(const struct wk_model *m, int32_t n_ctx, enum wk_dtype kv_type);


#endif
