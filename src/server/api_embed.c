/*
 * api_embed.c - the embedding routes: Ollama's POST /api/embed and its
 * legacy POST /api/embeddings, and OpenAI's POST /v1/embeddings, served
 * by an embedding model's runner (runner_embed.c: a BERT encoder, its
 * sentence-transformers pooling) or a generating model's (runner.c, the
 * same embed request: each input decoded alone, the final-normed hidden
 * states pooled as the GGUF's {arch}.pooling_type says, else the last
 * token's, as Ollama's llama.cpp runner answers; wk_embed_decoder).
 * Either way the runner sends the vectors as the model gives them and
 * this file normalizes them per route, as Ollama does.
 *
 * Shapes (Ollama's api/types.go EmbedRequest/EmbedResponse and
 * EmbeddingRequest/EmbeddingResponse; OpenAI's embeddings reference):
 *   /api/embed       {model, input: string | [string], truncate (true),
 *                     dimensions, keep_alive, options (num_ctx: a
 *                     generating model's context, the most tokens an
 *                     input may have)} ->
 *                    {model, embeddings: [[float]], total_duration,
 *                     load_duration, prompt_eval_count}; each vector
 *                    L2-normalized (as Ollama normalizes), cut to
 *                    dimensions first when asked. Without input (absent,
 *                    null, or the string "") the model is loaded and the
 *                    answer is {model, embeddings: []}, as Ollama's
 *                    EmbedHandler answers (an empty list too); dimensions
 *                    0 or below keeps the width, as there.
 *   /api/embeddings  {model, prompt, keep_alive, options} -> {embedding}
 *                    (not normalized beyond what the model does; an empty
 *                    or absent prompt loads the model and gives []).
 *   /v1/embeddings   {model, input: string | [string] | [id] | [[id]],
 *                     encoding_format float|base64, dimensions, user} ->
 *                    {object: list, data: [{object: embedding, index,
 *                     embedding}], model, usage: {prompt_tokens,
 *                     total_tokens}}; base64 is the little-endian f32
 *                    bytes, as OpenAI sends them.
 * Limits: at most SRV_EMBED_MAX_INPUTS inputs (OpenAI's 2048) and
 * SRV_EMBED_MAX_INPUT_BYTES bytes per input (a model reads 256 to 512
 * tokens; a longer text is a mistake to cut client-side, not 1 MB to
 * tokenize); each is a 400 naming the input. An input longer than the
 * model takes (a BERT's max_seq_length; a generating model's context,
 * num_ctx) is cut to fit, or with truncate false a 400.
 */
#include "server_internal.h"

#include "../io/wk_options.h"
#include "../model/wk_embed.h"

#include <limits.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#define SRV_EMBED_MAX_INPUTS 2048
#define SRV_EMBED_MAX_INPUT_BYTES ((size_t)128 << 10)

enum embed_route { EMBED_OLLAMA, EMBED_LEGACY, EMBED_OPENAI };

/* One request, parsed. */
struct embed_req {
    enum embed_route route;
    const char *model;
    json_t *inputs; /* [string or [id]] (a new reference) */
    bool truncate, base64;
    int32_t dimensions; /* 0: all */
    int32_t n_ctx;      /* options.num_ctx, 0: the loaded runner's or the default */
    int64_t keep_alive_ns;
};

bool srv_model_embeds(const struct srv_model *m)
{
    return wk_embed_is_model(m->path) || wk_embed_gguf_has_pooling(m->path);
}
bool srv_embed_folder(const char *path) { return wk_embed_is_folder(path); }

json_t *srv_embed_details(const char *path, json_t **model_info, char **template_out)
{
    struct wk_embed_model *m;
    if (wk_embed_model_load(path, &m, NULL)) return NULL;
    char psize[32];
    double n = (double)wk_embed_model_n_params(m);
    snprintf(psize, sizeof psize, n >= 1e9 ? "%.1fB" : "%.2fM", n >= 1e9 ? n / 1e9 : n / 1e6);
    json_t *details = json_pack("{s:s, s:s, s:s, s:[s], s:s, s:s}", "parent_model", "", "format", "safetensors",
                                "family", "bert", "families", "bert", "parameter_size", psize, "quantization_level", "F32");
    if (model_info)
        *model_info = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i}", "general.architecture", "bert", "bert.context_length",
                                wk_embed_model_max_tokens(m), "bert.embedding_length", wk_embed_model_n_embd(m),
                                "bert.vocab_size", wk_tokenizer_n_vocab(wk_embed_model_tokenizer(m)),
                                "bert.pooling_type", (int)wk_embed_model_pooling(m) + 1, "bert.normalize",
                                (int)wk_embed_model_normalizes(m));
    if (template_out) *template_out = wk_asprintf("%s", "");
    wk_embed_model_destroy(m);
    return details;
}

/* An /api/embed or /v1/embeddings input: a string, or (OpenAI) token ids. */
static int check_input(json_t *v, size_t i, bool ids_ok, char *msg, size_t cap)
{
    if (json_is_string(v)) {
        if (json_string_length(v) > SRV_EMBED_MAX_INPUT_BYTES) {
            snprintf(msg, cap, "input %zu is %zu bytes long; at most %zu bytes per input (split the text)", i,
                     json_string_length(v), SRV_EMBED_MAX_INPUT_BYTES);
            return 400;
        }
        return 0;
    }
    if (ids_ok && json_is_array(v) && json_array_size(v) > 0) {
        size_t k;
        json_t *id;
        json_array_foreach(v, k, id) if (!json_is_integer(id) || json_integer_value(id) < 0 ||
                                         json_integer_value(id) > INT32_MAX)
        {
            snprintf(msg, cap, "input %zu: item %zu is not a token id (a non-negative integer)", i, k);
            return 400;
        }
        return 0;
    }
    snprintf(msg, cap, ids_ok ? "input %zu must be a string or a non-empty array of token ids"
                              : "input %zu must be a string", i);
    return 400;
}

/* The inputs of a body: "input" (or legacy "prompt") as a list. */
static int parse_inputs(struct embed_req *r, json_t *body, char *msg, size_t cap)
{
    if (r->route == EMBED_LEGACY) {
        json_t *p = json_object_get(body, "prompt");
        if (!p || json_is_null(p)) { /* Ollama: an empty request loads the model ({"embedding": []}) */
            r->inputs = json_pack("[s]", "");
            return r->inputs ? 0 : (snprintf(msg, cap, "out of memory"), 500);
        }
        if (!json_is_string(p)) {
            snprintf(msg, cap, "prompt must be a string");
            return 400;
        }
        r->inputs = json_pack("[O]", p);
        return check_input(p, 0, false, msg, cap);
    }
    json_t *in = json_object_get(body, "input");
    const bool oai = r->route == EMBED_OPENAI;
    /* Ollama: no input, one empty string or an empty list loads the model and embeds nothing */
    if ((!in || json_is_null(in) || (json_is_string(in) && json_string_length(in) == 0) ||
         (json_is_array(in) && json_array_size(in) == 0)) && r->route == EMBED_OLLAMA) {
        r->inputs = json_array();
        return r->inputs ? 0 : (snprintf(msg, cap, "out of memory"), 500);
    }
    if (!in) {
        snprintf(msg, cap, "input is required: a string or a list of strings to embed");
        return 400;
    }
    /* OpenAI: a flat list of integers is one input of token ids */
    bool flat_ids = oai && json_is_array(in) && json_array_size(in) > 0 && json_is_integer(json_array_get(in, 0));
    r->inputs = json_is_array(in) && !flat_ids ? json_incref(in) : json_pack("[O]", in);
    if (!r->inputs) {
        snprintf(msg, cap, "out of memory");
        return 500;
    }
    if (json_array_size(r->inputs) == 0) {
        snprintf(msg, cap, "input is an empty list: give at least one text to embed");
        return 400;
    }
    if (json_array_size(r->inputs) > SRV_EMBED_MAX_INPUTS) {
        snprintf(msg, cap, "input has %zu items; at most %d per request", json_array_size(r->inputs),
                 SRV_EMBED_MAX_INPUTS);
        return 400;
    }
    size_t i;
    json_t *v;
    json_array_foreach(r->inputs, i, v)
    {
        int st = check_input(v, i, oai, msg, cap);
        if (st) return st;
    }
    return 0;
}

/* An embedding request's "options" (an object or null) against the
 * options table as /api/generate checks them (wk_options.h): a name it
 * does not have, a value of the wrong type or out of range is an error
 * (-1, msg set). Of them only num_ctx changes an embedding; the sampling
 * ones are accepted, as Ollama accepts them here, and have nothing to act
 * on. */
static int check_options(json_t *opts, char *msg, size_t cap)
{
    const char *k;
    json_t *v;
    json_object_foreach(opts, k, v) {
        const struct wk_option *o = wk_option_find(k);
        struct wk_error e;
        char shown[64];
        wk_str_printable(k, strlen(k), shown, sizeof shown);
        if (json_is_null(v)) continue;
        if (!o) return snprintf(msg, cap, "unknown option '%s'", shown), -1;
        if (o->type == WK_MF_BOOL && !json_is_boolean(v))
            return snprintf(msg, cap, "option '%s' must be a boolean", k), -1;
        if (o->type == WK_MF_STRING && !json_is_string(v) && !json_is_array(v))
            return snprintf(msg, cap, "option '%s' must be a list of strings", k), -1;
        if (o->type == WK_MF_INT || o->type == WK_MF_FLOAT) {
            if (!json_is_number(v)) return snprintf(msg, cap, "option '%s' must be a number", k), -1;
            if (wk_option_check_number(o, json_number_value(v), &e)) return snprintf(msg, cap, "%s", e.msg), -1;
        }
    }
    return 0;
}

static int parse(struct embed_req *r, json_t *body, char *msg, size_t cap)
{
    json_t *model = json_object_get(body, "model"), *trunc = json_object_get(body, "truncate");
    json_t *dims = json_object_get(body, "dimensions"), *fmt = json_object_get(body, "encoding_format");
    json_t *opts = json_object_get(body, "options"), *ka = json_object_get(body, "keep_alive");
    if (!json_is_string(model) || json_string_length(model) == 0) {
        snprintf(msg, cap, model ? "model must be a string: the name of a stored model" : "model is required");
        return 400;
    }
    r->model = json_string_value(model);
    /* an option at the top level (Ollama's routes take them in options) or, on OpenAI's, an
     * options object or an Ollama option: refused as on the generation routes */
    int rc = srv_refuse_misplaced_options(r->route == EMBED_OPENAI, body, msg, cap);
    if (rc) return rc;
    r->truncate = true;
    if (trunc && !json_is_null(trunc)) {
        if (!json_is_boolean(trunc)) return snprintf(msg, cap, "truncate must be true or false"), 400;
        r->truncate = json_is_true(trunc);
    }
    if (dims && !json_is_null(dims)) {
        /* Ollama's EmbedHandler cuts only for 0 < dimensions < the width: 0 and below keep it all */
        const bool ollama = r->route == EMBED_OLLAMA;
        if (!json_is_integer(dims) || json_integer_value(dims) < (ollama ? INT32_MIN : 1) ||
            json_integer_value(dims) > 1 << 20)
            return snprintf(msg, cap, "dimensions must be a positive integer"), 400;
        r->dimensions = json_integer_value(dims) > 0 ? (int32_t)json_integer_value(dims) : 0;
    }
    if (fmt && !json_is_null(fmt)) {
        const char *f = json_string_value(fmt);
        if (!f || (strcmp(f, "float") && strcmp(f, "base64")))
            return snprintf(msg, cap, "encoding_format must be \"float\" or \"base64\""), 400;
        r->base64 = strcmp(f, "base64") == 0;
    }
    if (opts && !json_is_null(opts) && !json_is_object(opts))
        return snprintf(msg, cap, "options must be an object"), 400;
    if (check_options(opts, msg, cap)) return 400;
    json_t *nc = json_object_get(opts, "num_ctx");
    if (nc && !json_is_null(nc)) r->n_ctx = (int32_t)json_number_value(nc); /* an integer in range (checked) */
    r->keep_alive_ns = srv_default_keep_alive();
    if (ka && !json_is_null(ka) && !srv_parse_keep_alive(ka, &r->keep_alive_ns))
        return snprintf(msg, cap, "keep_alive must be a duration (\"5m\") or a number of seconds"), 400;
    return parse_inputs(r, body, msg, cap);
}

/* base64 (RFC 4648, padded, as srv_base64_json writes it) decoding of s[n]
 * into out [cap] bytes by OpenSSL; the byte count, or -1. */
static int64_t base64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
    if (n % 4 || n / 4 * 3 > cap || n > (size_t)INT_MAX) return -1;
    const int k = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
    if (k < 0) return -1;
    /* EVP_DecodeBlock counts the padding's zero bytes too */
    const int pad = n >= 1 && s[n - 1] == '=' ? (n >= 2 && s[n - 2] == '=' ? 2 : 1) : 0;
    return (int64_t)k - pad;
}

/* Appends the string literal s to buffer b. */
#define ADD_LIT(b, s) wk_buf_add(b, s, sizeof s - 1)

/* Appends the vector of one runner embedding (base64 of f32), cut to dims
 * and normalized when asked, to out as JSON text: an array of numbers, each
 * as jansson writes a real at 9 significant digits (wk_f32_json, ~6x
 * faster than its snprintf: for 256 vectors of 384 that was ~40 ms), or
 * (as_base64) a base64 string of the f32 bytes. Returns 0, or 500 with
 * msg set: a malformed vector, no memory, or a vector holding NaN or an
 * infinity (which JSON cannot carry; jansson's json_real refused them too,
 * and the vector came out short). */
static int vector_text(json_t *b64, int32_t dims, bool normalize, bool as_base64, struct wk_buf *out, char *msg,
                       size_t cap)
{
    const char *s = json_string_value(b64);
    size_t n = json_string_length(b64);
    float *v = s ? wk_malloc(n / 4 * 3 + 4) : NULL;
    int64_t nb = v ? base64_decode(s, n, (uint8_t *)v, n / 4 * 3 + 4) : -1;
    if (nb < 0 || nb % 4) {
        wk_free(v);
        return snprintf(msg, cap, "the model runner's answer is malformed"), 500;
    }
    int64_t E = nb / 4;
    if (dims > 0 && dims < E) E = dims;
    double s2 = 0;
    for (int64_t i = 0; i < E; i++) s2 += (double)v[i] * v[i];
    if (normalize && s2 > 0) {
        const double norm = sqrt(s2); /* once, not per element (errno kept it in the loop) */
        for (int64_t i = 0; i < E; i++) v[i] = (float)(v[i] / norm);
    }
    int status = 0;
    if (as_base64) {
        json_t *t = srv_base64_json(v, (size_t)E * sizeof *v); /* base64 needs no escaping */
        if (!t || !ADD_LIT(out, "\"") || !wk_buf_add(out, json_string_value(t), json_string_length(t)) ||
            !ADD_LIT(out, "\""))
            status = 500;
        json_decref(t);
    } else {
        char *p = wk_malloc((size_t)E * WK_F32_JSON_MAX + 3), *o = p;
        if (p) *o++ = '[';
        for (int64_t i = 0; p && i < E; i++) {
            if (i) *o++ = ',';
            size_t len = wk_f32_json(v[i], o);
            if (!len) {
                snprintf(msg, cap, "the model's embedding holds %s at element %lld", isnan(v[i]) ? "NaN" : "an infinity",
                         (long long)i);
                wk_free(v), wk_free(p);
                return 500;
            }
            o += len;
        }
        if (p) *o++ = ']';
        if (!p || !wk_buf_add(out, p, (size_t)(o - p))) status = 500;
        wk_free(p);
    }
    wk_free(v);
    if (status) snprintf(msg, cap, "out of memory");
    return status;
}

/* Appends the JSON text of s (a string, escaped as jansson escapes it). */
static bool string_text(const char *s, struct wk_buf *out)
{
    json_t *j = json_string(s);
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    bool ok = t && wk_buf_add(out, t, strlen(t));
    free(t);
    json_decref(j);
    return ok;
}

/* The answer's body for route r from the runner's line, into out: the
 * text jansson would write for each route's object (keys in this order,
 * compact), written directly (the vectors are most of it). 0, or an HTTP
 * status with msg. */
static int answer(const struct embed_req *r, json_t *line, int64_t t_start, int64_t load_ns, struct wk_buf *out,
                  char *msg, size_t cap)
{
    json_t *embs = json_object_get(line, "embeddings");
    json_int_t n_tok = json_integer_value(json_object_get(line, "prompt_eval_count"));
    bool ok = true;
    if (r->route == EMBED_LEGACY) {
        ok = ADD_LIT(out, "{\"embedding\":");
        json_t *e = json_array_get(embs, 0);
        /* an empty prompt: Ollama answers an empty vector */
        if (ok && (!e || json_string_length(json_array_get(r->inputs, 0)) == 0)) ok = ADD_LIT(out, "[]");
        else if (ok) {
            int st = vector_text(e, r->dimensions, false, r->base64, out, msg, cap);
            if (st) return st;
        }
        ok = ok && ADD_LIT(out, "}");
        return ok ? 0 : (snprintf(msg, cap, "out of memory"), 500);
    }
    const bool oai = r->route == EMBED_OPENAI;
    if (oai) ok = ADD_LIT(out, "{\"object\":\"list\",\"data\":[");
    else ok = ADD_LIT(out, "{\"model\":") && string_text(r->model, out) && ADD_LIT(out, ",\"embeddings\":[");
    size_t i;
    json_t *e;
    json_array_foreach(embs, i, e)
    {
        char head[64];
        int hn = oai ? snprintf(head, sizeof head, "%s{\"object\":\"embedding\",\"index\":%zu,\"embedding\":",
                                i ? "," : "", i)
                     : snprintf(head, sizeof head, "%s", i ? "," : "");
        if (!ok || !wk_buf_add(out, head, (size_t)hn)) break;
        int st = vector_text(e, r->dimensions, true, r->base64, out, msg, cap);
        if (st) return st;
        if (oai && !ADD_LIT(out, "}")) ok = false;
    }
    char tail[160];
    int tn = oai ? snprintf(tail, sizeof tail, "],\"model\":") :
                   snprintf(tail, sizeof tail, "],\"total_duration\":%lld,\"load_duration\":%lld,\"prompt_eval_count\":%lld}",
                            (long long)(wk_time_ns() - t_start), (long long)load_ns, (long long)n_tok);
    ok = ok && wk_buf_add(out, tail, (size_t)tn);
    if (oai) {
        tn = snprintf(tail, sizeof tail, ",\"usage\":{\"prompt_tokens\":%lld,\"total_tokens\":%lld}}", (long long)n_tok,
                      (long long)n_tok);
        ok = ok && string_text(r->model, out) && wk_buf_add(out, tail, (size_t)tn);
    }
    return ok ? 0 : (snprintf(msg, cap, "out of memory"), 500);
}

static enum MHD_Result reply(struct MHD_Connection *c, bool oai, int status, const char *msg)
{
    return oai ? srv_reply_json(c, (unsigned)status, srv_error_body(API_OAI_CHAT, status, msg))
               : srv_reply_error(c, (unsigned)status, msg);
}

/* Runs r on its model's runner: the runner's answer line into *line. 0 or an HTTP status. */
static int run(struct srv_server *srv, struct MHD_Connection *c, const struct embed_req *r, json_t **line,
               int64_t *load_ns, char *msg, size_t cap)
{
    struct srv_model m;
    struct wk_store_model sm;
    struct wk_error err;
    wk_error_clear(&err);
    if (srv_model_find(srv->models_dir, r->model, &m, &sm, &err))
        return snprintf(msg, cap, "%s", err.msg), srv_http_status(err.status);
    /* the num_ctx asked for, else the model's stored one, else OLLAMA_CONTEXT_LENGTH, as a
     * generation takes it (not whatever num_ctx the loaded runner has: an earlier request's
     * would cut this input); an encoder has its own limit, so a num_ctx never restarts its runner */
    json_t *stored = json_object_get(sm.params, "num_ctx");
    int32_t n_ctx = r->n_ctx ? r->n_ctx : json_is_integer(stored) ? (int32_t)json_integer_value(stored) : srv->default_ctx;
    wk_store_model_deinit(&sm);
    if (wk_embed_is_model(m.path)) n_ctx = 0;
    struct srv_runner *rn;
    if (srv_sched_acquire(srv->sched, &m, n_ctx, &rn, load_ns, &err))
        return snprintf(msg, cap, "%s", err.msg), err.status == WK_E_CANCELLED ? 503 : 500;
    if (json_array_size(r->inputs) == 0) { /* loaded: nothing to embed (no input) */
        srv_sched_release(rn, r->keep_alive_ns);
        return 0;
    }
    json_t *req = json_pack("{s:O, s:b}", "embed", r->inputs, "truncate", r->truncate);
    struct srv_call call = {.fd = -1};
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    int status = 0;
    if (!req || srv_call_open(rn, req, 600 * 1000, ci ? ci->connect_fd : -1, &call, line, &err)) {
        status = !req ? 500 : err.status == WK_E_CANCELLED ? -1 : 500;
        snprintf(msg, cap, "%s", req ? err.msg : "out of memory");
        if (status == 500 && req) srv_sched_mark_dead(rn);
    }
    srv_call_close(&call);
    json_decref(req);
    srv_sched_release(rn, r->keep_alive_ns);
    return status;
}

enum MHD_Result srv_serve_embed(struct srv_server *srv, struct MHD_Connection *c, const char *url, json_t *body)
{
    const int64_t t0 = wk_time_ns();
    struct embed_req r = {.route = strcmp(url, "/v1/embeddings") == 0   ? EMBED_OPENAI
                                   : strcmp(url, "/api/embeddings") == 0 ? EMBED_LEGACY
                                                                         : EMBED_OLLAMA};
    const bool oai = r.route == EMBED_OPENAI;
    char msg[WK_ERROR_MSG_MAX];
    json_t *line = NULL;
    int64_t load_ns = 0;
    int status = parse(&r, body, msg, sizeof msg);
    if (!status) status = run(srv, c, &r, &line, &load_ns, msg, sizeof msg);
    enum MHD_Result ret;
    if (status < 0) {
        ret = MHD_NO; /* the client left */
    } else if (status) {
        ret = reply(c, oai, status, msg);
    } else if (!line) { /* no input: the model loaded */
        json_t *a = json_pack("{s:s, s:[]}", "model", r.model, "embeddings");
        ret = a ? srv_reply_json(c, 200, a) : reply(c, oai, 500, "out of memory");
    } else if (json_integer_value(json_object_get(line, "status")) != 200) {
        const char *e = json_string_value(json_object_get(line, "error"));
        json_int_t rs = json_integer_value(json_object_get(line, "status"));
        ret = reply(c, oai, rs >= 400 && rs < 600 ? (int)rs : 500, e ? e : "the model runner refused the request");
    } else {
        struct wk_buf body = {0};
        int st = answer(&r, line, t0, load_ns, &body, msg, sizeof msg);
        ret = st ? reply(c, oai, st, msg) : srv_reply_raw(c, 200, "application/json; charset=utf-8", body.p, body.len);
        wk_free(body.p);
    }
    json_decref(line);
    json_decref(r.inputs);
    return ret;
}
