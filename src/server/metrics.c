/*
 * metrics.c - llama-server's small routes that users script against, on
 * `wick serve`: GET /metrics and the counters behind it, POST /tokenize
 * and POST /detokenize. (GET /health, {"status": "ok"}, is one line of
 * http.c's dispatch.)
 *
 * The counters (struct srv_metrics, one per server, hung off struct
 * srv_server): one mutex guards a table of answered requests by (route,
 * status code) and a table of per-model token and time totals, filled
 * from each generation's final runner line. Both tables only grow, and
 * are capped (MAX_ROUTE_CODES, MAX_MODELS): past the cap a request or a
 * model is counted under route or model "other", so a client cannot make
 * them grow without bound (route labels are the route table's paths, never
 * the URL a client sent). The gauges of requests in flight and of runners
 * are read from the scheduler when /metrics is rendered
 * (srv_sched_counts): a runner has n_parallel slots (WICK_NUM_PARALLEL),
 * each busy while a request holds it; requests past them wait in its queue.
 *
 * Shapes followed: Prometheus' text exposition format 0.0.4 (# HELP and
 * # TYPE lines, one sample a line, label values escaped); llama.cpp's
 * tools/server for the llamacpp:* names and meanings (prompt_tokens_total
 * without cached tokens, prompt_tokens_cached_total, prompt_seconds_total,
 * tokens_predicted_total, tokens_predicted_seconds_total, the throughput
 * gauges over what ran since the last /metrics read, requests_processing,
 * requests_deferred) and for /tokenize and /detokenize's bodies.
 * llama-server has one model; wick serves many, so these two routes take a
 * "model" and run on that model's runner (the runner protocol's tokenize
 * and detokenize operations, runner.c).
 */
#include "server_internal.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_ROUTE_CODES 512
#define MAX_MODELS 256
#define ROUTE_MAX 64

/* Requests answered on one route with one status code. */
struct route_count {
    char route[ROUTE_MAX];
    unsigned code;
    int64_t n;
};

/* One model's generation totals, and the rates of its last request. */
struct model_stats {
    char *name; /* "name:tag" (owned), or "other" past MAX_MODELS */
    int64_t requests, prompt_tokens, prompt_cached, generated;
    int64_t prompt_ns, gen_ns;
    double last_prompt_tps, last_gen_tps;
};

struct srv_metrics {
    pthread_mutex_t mu;
    struct route_count routes[MAX_ROUTE_CODES];
    int n_routes;
    int64_t n_other; /* requests past MAX_ROUTE_CODES (route and code "other") */
    struct model_stats models[MAX_MODELS + 1]; /* the last one: "other" */
    int n_models;
    /* llama-server's throughput buckets: what ran since the last /metrics read */
    int64_t bucket_prompt_tokens, bucket_prompt_ns, bucket_gen_tokens, bucket_gen_ns;
};

struct srv_metrics *srv_metrics_create(void)
{
    struct srv_metrics *m = wk_calloc(1, sizeof *m);
    if (!m) return NULL;
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

void srv_metrics_destroy(struct srv_metrics *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_models; i++) wk_free(m->models[i].name);
    pthread_mutex_destroy(&m->mu);
    wk_free(m);
}

void srv_metrics_request(struct srv_metrics *m, const char *route, unsigned code)
{
    if (!m) return;
    char r[ROUTE_MAX];
    snprintf(r, sizeof r, "%s", route ? route : "unknown");
    pthread_mutex_lock(&m->mu);
    int i = 0;
    while (i < m->n_routes && (m->routes[i].code != code || strcmp(m->routes[i].route, r) != 0)) i++;
    if (i == MAX_ROUTE_CODES) {
        m->n_other++;
    } else {
        if (i == m->n_routes) {
            memcpy(m->routes[i].route, r, sizeof r);
            m->routes[i].code = code;
            m->n_routes++;
        }
        m->routes[i].n++;
    }
    pthread_mutex_unlock(&m->mu);
}

/* The stats of model (m->mu held): found, added, or "other" past MAX_MODELS
 * (NULL only when out of memory). */
static struct model_stats *model_stats(struct srv_metrics *m, const char *model)
{
    for (int i = 0; i < m->n_models; i++)
        if (strcmp(m->models[i].name, model) == 0) return &m->models[i];
    if (m->n_models > MAX_MODELS) return &m->models[MAX_MODELS]; /* "other", made already */
    char *name = wk_asprintf("%s", m->n_models == MAX_MODELS ? "other" : model);
    if (!name) return NULL;
    struct model_stats *s = &m->models[m->n_models++];
    s->name = name;
    return s;
}

static int64_t int_field(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (int64_t)json_integer_value(v) : 0;
}

void srv_metrics_generation(struct srv_metrics *m, const char *model, const json_t *fin)
{
    if (!m) return;
    const int64_t prompt = int_field(fin, "prompt_tokens"), prefilled = int_field(fin, "prompt_eval_count");
    const int64_t prompt_ns = int_field(fin, "prompt_eval_duration"), gen = int_field(fin, "eval_count");
    const int64_t gen_ns = int_field(fin, "eval_duration");
    pthread_mutex_lock(&m->mu);
    struct model_stats *s = model_stats(m, model);
    if (s) {
        s->requests++;
        s->prompt_tokens += prompt;
        s->prompt_cached += prompt > prefilled ? prompt - prefilled : 0;
        s->generated += gen;
        s->prompt_ns += prompt_ns;
        s->gen_ns += gen_ns;
        s->last_prompt_tps = prompt_ns > 0 ? (double)prefilled * 1e9 / (double)prompt_ns : 0;
        s->last_gen_tps = gen_ns > 0 ? (double)gen * 1e9 / (double)gen_ns : 0;
    }
    m->bucket_prompt_tokens += prefilled;
    m->bucket_prompt_ns += prompt_ns;
    m->bucket_gen_tokens += gen;
    m->bucket_gen_ns += gen_ns;
    pthread_mutex_unlock(&m->mu);
}

/* ------------------------------------------------------------ rendering */

/* printf onto b; false when out of memory. */
__attribute__((format(printf, 2, 3))) static bool bprintf(struct wk_buf *b, const char *fmt, ...)
{
    char local[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(local, sizeof local, fmt, ap);
    va_end(ap);
    if (n < 0) return false;
    if ((size_t)n < sizeof local) return wk_buf_add(b, local, (size_t)n);
    char *big = wk_malloc((size_t)n + 1);
    if (!big) return false;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    bool ok = wk_buf_add(b, big, (size_t)n);
    wk_free(big);
    return ok;
}

/* A label value as the text format writes it: \\, \" and \n escaped. */
static bool add_label(struct wk_buf *b, const char *s)
{
    bool ok = true;
    for (; *s && ok; s++) {
        if (*s == '\\') ok = wk_buf_add(b, "\\\\", 2);
        else if (*s == '"') ok = wk_buf_add(b, "\\\"", 2);
        else if (*s == '\n') ok = wk_buf_add(b, "\\n", 2);
        else ok = wk_buf_add(b, s, 1);
    }
    return ok;
}

static bool family(struct wk_buf *b, const char *name, const char *type, const char *help)
{
    return bprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One unlabelled sample of a family of its own. */
static bool single(struct wk_buf *b, const char *name, const char *type, const char *help, double v)
{
    return family(b, name, type, help) && bprintf(b, "%s %.9g\n", name, v);
}

/* What a per-model family reads from a model's stats. */
enum model_field { F_PROMPT, F_CACHED, F_GEN, F_PROMPT_S, F_GEN_S, F_PROMPT_TPS, F_GEN_TPS, F_REQUESTS };

static double model_value(const struct model_stats *s, enum model_field f)
{
    switch (f) {
    case F_PROMPT: return (double)s->prompt_tokens;
    case F_CACHED: return (double)s->prompt_cached;
    case F_GEN: return (double)s->generated;
    case F_PROMPT_S: return (double)s->prompt_ns / 1e9;
    case F_GEN_S: return (double)s->gen_ns / 1e9;
    case F_PROMPT_TPS: return s->last_prompt_tps;
    case F_GEN_TPS: return s->last_gen_tps;
    case F_REQUESTS: return (double)s->requests;
    }
    return 0;
}

/* The wick_* families, then llama-server's (m->mu held; sc read before). */
static bool render(struct srv_metrics *m, const struct srv_sched_counts *sc, struct wk_buf *b)
{
    bool ok = family(b, "wick_requests_total", "counter",
                     "HTTP requests answered, by route (the route's path; unknown: no route has the path) and status "
                     "code.");
    for (int i = 0; ok && i < m->n_routes; i++)
        ok = wk_buf_add(b, "wick_requests_total{route=\"", 27) && add_label(b, m->routes[i].route) &&
             bprintf(b, "\",code=\"%u\"} %lld\n", m->routes[i].code, (long long)m->routes[i].n);
    if (ok && m->n_other) ok = bprintf(b, "wick_requests_total{route=\"other\",code=\"other\"} %lld\n", (long long)m->n_other);
    static const struct {
        const char *name, *type, *help;
        enum model_field f;
    } per_model[] = {
        {"wick_generation_requests_total", "counter", "Generation requests finished, by model.", F_REQUESTS},
        {"wick_prompt_tokens_total", "counter",
         "Prompt tokens of finished generation requests (prompt_eval_count as the Ollama API reports it), by model.",
         F_PROMPT},
        {"wick_prompt_tokens_cached_total", "counter",
         "Of those, the tokens reused from the KV cache instead of prefilled, by model.", F_CACHED},
        {"wick_generated_tokens_total", "counter", "Tokens generated (eval_count), by model.", F_GEN},
        {"wick_prompt_seconds_total", "counter", "Seconds spent prefilling prompts (prompt_eval_duration), by model.",
         F_PROMPT_S},
        {"wick_generation_seconds_total", "counter", "Seconds spent generating tokens (eval_duration), by model.",
         F_GEN_S},
        {"wick_prompt_tokens_per_second", "gauge",
         "Prefill rate of the model's last generation request: prefilled tokens per second.", F_PROMPT_TPS},
        {"wick_generated_tokens_per_second", "gauge",
         "Generation rate of the model's last generation request: tokens per second.", F_GEN_TPS},
    };
    for (size_t k = 0; ok && k < WK_ARRAY_LEN(per_model); k++) {
        ok = family(b, per_model[k].name, per_model[k].type, per_model[k].help);
        for (int i = 0; ok && i < m->n_models; i++)
            ok = bprintf(b, "%s{model=\"", per_model[k].name) && add_label(b, m->models[i].name) &&
                 bprintf(b, "\"} %.9g\n", model_value(&m->models[i], per_model[k].f));
    }
    const int32_t processing = sc->busy, queued = sc->waiting + (sc->in_use - sc->busy);
    ok = ok &&
         single(b, "wick_requests_processing", "gauge",
                "Requests a runner is computing now (up to its WICK_NUM_PARALLEL slots).", processing) &&
         single(b, "wick_requests_queued", "gauge",
                "Requests waiting for a runner: to load, to make room, or to finish the request before them.", queued) &&
         single(b, "wick_models_loaded", "gauge", "Models loaded: runner processes up.", sc->loaded) &&
         single(b, "wick_slots_total", "gauge", "Slots: the requests the loaded runners can compute at once.",
                sc->slots) &&
         single(b, "wick_slots_busy", "gauge", "Slots held by a request.", sc->busy);
    int64_t prompt = 0, cached = 0, gen = 0, prompt_ns = 0, gen_ns = 0;
    for (int i = 0; i < m->n_models; i++) {
        prompt += m->models[i].prompt_tokens, cached += m->models[i].prompt_cached, gen += m->models[i].generated;
        prompt_ns += m->models[i].prompt_ns, gen_ns += m->models[i].gen_ns;
    }
    const double bucket_prompt = m->bucket_prompt_ns > 0 ? (double)m->bucket_prompt_tokens * 1e9 / (double)m->bucket_prompt_ns : 0;
    const double bucket_gen = m->bucket_gen_ns > 0 ? (double)m->bucket_gen_tokens * 1e9 / (double)m->bucket_gen_ns : 0;
    return ok &&
           single(b, "llamacpp:prompt_tokens_total", "counter",
                  "Number of prompt tokens processed, excluding cached tokens (all models).", (double)(prompt - cached)) &&
           single(b, "llamacpp:prompt_tokens_cached_total", "counter",
                  "Number of prompt tokens reused from the cache (all models).", (double)cached) &&
           single(b, "llamacpp:prompt_seconds_total", "counter", "Total time spent processing prompts.",
                  (double)prompt_ns / 1e9) &&
           single(b, "llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.", (double)gen) &&
           single(b, "llamacpp:tokens_predicted_seconds_total", "counter", "Total time spent generating tokens.",
                  (double)gen_ns / 1e9) &&
           single(b, "llamacpp:prompt_tokens_seconds", "gauge",
                  "Average prompt throughput in tokens/s since the last /metrics read.", bucket_prompt) &&
           single(b, "llamacpp:predicted_tokens_seconds", "gauge",
                  "Average generation throughput in tokens/s since the last /metrics read.", bucket_gen) &&
           single(b, "llamacpp:requests_processing", "gauge", "Number of requests processing.", processing) &&
           single(b, "llamacpp:requests_deferred", "gauge", "Number of requests deferred.", queued);
}

enum MHD_Result srv_serve_metrics(struct srv_server *srv, struct MHD_Connection *c)
{
    struct srv_sched_counts sc;
    srv_sched_counts(srv->sched, &sc); /* before m->mu: never both locks at once */
    struct srv_metrics *m = srv->metrics;
    if (!m) return srv_reply_error(c, 500, "the metrics could not be set up (out of memory)");
    struct wk_buf b = {0};
    pthread_mutex_lock(&m->mu);
    bool ok = render(m, &sc, &b);
    if (ok) m->bucket_prompt_tokens = m->bucket_prompt_ns = m->bucket_gen_tokens = m->bucket_gen_ns = 0;
    pthread_mutex_unlock(&m->mu);
    enum MHD_Result ret = ok ? srv_reply_raw(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len)
                             : srv_reply_error(c, 500, "out of memory");
    wk_free(b.p);
    return ret;
}

/* --------------------------------------------------- tokenize, detokenize */

/* The runner request for a /tokenize or /detokenize body, or NULL with
 * msg set (a 400). */
static json_t *tokens_request(json_t *body, bool detokenize, char *msg, size_t cap)
{
    if (detokenize) {
        json_t *t = json_object_get(body, "tokens"), *v;
        size_t i;
        if (!json_is_array(t)) {
            snprintf(msg, cap, t ? "tokens must be a list of token ids" : "tokens is required: a list of token ids");
            return NULL;
        }
        json_array_foreach(t, i, v) if (!json_is_integer(v)) {
            snprintf(msg, cap, "tokens[%zu] must be an integer token id", i);
            return NULL;
        }
        return json_pack("{s:O}", "detokenize", t);
    }
    json_t *content = json_object_get(body, "content");
    if (!json_is_string(content)) {
        snprintf(msg, cap, content ? "content must be a string" : "content is required: the text to tokenize");
        return NULL;
    }
    static const char *const flags[] = {"add_special", "parse_special", "with_pieces"};
    for (size_t i = 0; i < WK_ARRAY_LEN(flags); i++) {
        json_t *f = json_object_get(body, flags[i]);
        if (f && !json_is_boolean(f)) {
            snprintf(msg, cap, "%s must be true or false", flags[i]);
            return NULL;
        }
    }
    /* llama-server's defaults: no BOS, control-token text parsed, ids only */
    return json_pack("{s:O, s:b, s:b, s:b}", "tokenize", content, "add_special",
                     json_is_true(json_object_get(body, "add_special")), "parse_special",
                     !json_is_false(json_object_get(body, "parse_special")), "with_pieces",
                     json_is_true(json_object_get(body, "with_pieces")));
}

/* The model a /tokenize body names, or the only one loaded: into *m and
 * *n_ctx (a loaded runner's, so that it is not restarted). 0, or the HTTP
 * status with msg set. */
static int tokens_model(struct srv_server *srv, json_t *body, struct srv_model *m, int32_t *n_ctx, char *msg,
                        size_t cap)
{
    json_t *name = json_object_get(body, "model");
    *n_ctx = 0;
    if (name && !json_is_string(name)) {
        snprintf(msg, cap, "model must be a string: the name of a stored model");
        return 400;
    }
    if (!name) {
        int n = srv_sched_find_loaded(srv->sched, NULL, m, n_ctx);
        if (n == 1) return 0;
        snprintf(msg, cap, "model is required: %s", n ? "more than one model is loaded" : "no model is loaded");
        return 400;
    }
    struct wk_error err;
    wk_error_clear(&err);
    if (srv_model_find(srv->models_dir, json_string_value(name), m, NULL, &err)) {
        snprintf(msg, cap, "%s", err.msg);
        return srv_http_status(err.status);
    }
    srv_sched_find_loaded(srv->sched, m->name, NULL, n_ctx);
    return 0;
}

enum MHD_Result srv_serve_tokenize(struct srv_server *srv, struct MHD_Connection *c, json_t *body, bool detokenize)
{
    char msg[WK_ERROR_MSG_MAX];
    struct srv_model m;
    int32_t n_ctx = 0;
    json_t *req = tokens_request(body, detokenize, msg, sizeof msg);
    int status = req ? tokens_model(srv, body, &m, &n_ctx, msg, sizeof msg) : 400;
    struct srv_runner *r = NULL;
    struct wk_error err;
    wk_error_clear(&err);
    int64_t load_ns;
    if (!status && srv_sched_acquire(srv->sched, &m, n_ctx, &r, &load_ns, &err)) {
        status = err.status == WK_E_CANCELLED ? 503 : 500;
        snprintf(msg, sizeof msg, "%s", err.msg);
    }
    json_t *first = NULL;
    struct srv_call call = {.fd = -1};
    if (!status) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (srv_call_open(r, req, 120 * 1000, ci ? ci->connect_fd : -1, &call, &first, &err)) {
            status = err.status == WK_E_CANCELLED ? -1 : 500; /* -1: the client left, nobody to answer */
            snprintf(msg, sizeof msg, "%s", err.msg);
        }
        srv_call_close(&call);
        srv_sched_release_keep(r, srv_default_keep_alive());
    }
    json_decref(req);
    if (status < 0) return MHD_NO;
    if (status) return srv_reply_error(c, (unsigned)status, msg);
    const int rs = (int)json_integer_value(json_object_get(first, "status"));
    const char *key = detokenize ? "content" : "tokens";
    json_t *v = json_object_get(first, key);
    enum MHD_Result ret;
    if (rs != 200) {
        const char *e = json_string_value(json_object_get(first, "error"));
        ret = srv_reply_error(c, rs >= 400 && rs < 600 ? (unsigned)rs : 500, e ? e : "the model runner refused the request");
    } else if (!v) {
        ret = srv_reply_error(c, 500, "the model runner sent no answer");
    } else {
        ret = srv_reply_json(c, 200, json_pack("{s:O}", key, v));
    }
    json_decref(first);
    return ret;
}
