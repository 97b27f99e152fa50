/*
 * runner_embed.c - `wick runner` for an embedding model (a BERT
 * sentence-transformers folder, wk_embed.h): the same process shape and
 * socket as runner.c's (abstract Unix socket, one connection per request,
 * JSON lines, only the server's process may connect), serving embeddings
 * instead of completions.
 *
 * Protocol (server -> runner, one line; runner -> server, one line):
 *   {"status": true} -> {"status": 200, "busy", "queued", "requests", "runs", "n_ctx", "model",
 *                        "embedding": true}
 *   {"embed": [input...], "truncate": bool} where an input is a string or
 *     an array of token ids (used as they are) ->
 *     {"status": 200, "embeddings": [base64 of n_embd little-endian f32...],
 *      "tokens": [n per input], "prompt_eval_count": total, "prompt_eval_duration": ns}
 *     or {"status": 400, "error": msg} (an input over the model's length with
 *     truncate false, an id out of range, a malformed request), 500 (memory).
 *   {"tokenize": text, "add_special"} -> {"status": 200, "tokens": [id...]}
 *   anything else (a completion) -> {"status": 400, "error": "... embedding model ..."}
 * Requests are tokenized on their connection's thread and computed on the
 * runner's thread pool, one encode at a time: those that arrive while one
 * runs go into the next together (run_merged); a connection whose server
 * side hangs up cancels its request between layers when it is alone and
 * has more than WATCH_MIN_TOKENS tokens (a shorter one is computed).
 *
 * runner.c answers the same embed request for a generating model, with
 * this file's parts: srv_embed_batch_parse (the inputs' ids, BOS and EOS
 * as the model's tokenizer adds them, cut at its context), then on its
 * compute thread srv_decoder_embed (short inputs together, the others
 * alone: wk_embed_decoder_many),
 * and srv_embed_answer (the same answer line).
 */
#include "server_internal.h"

#include "../model/wk_embed.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_REQUEST_BYTES ((size_t)64 << 20)
#define WATCH_MIN_TOKENS 64 /* a request of more tokens in all watches for its client leaving */

/* One embed request waiting for, or in, a merged encode (embed). */
struct pending {
    const struct srv_embed_batch *b;
    float *out;                  /* [b->n][n_embd] */
    const volatile bool *cancel; /* its client left */
    enum wk_status st;
    struct wk_error err;
    int64_t dt;                  /* ns, the encode it was part of */
    bool done;
    struct pending *next;
};

struct erunner {
    struct wk_embed_model *m;
    struct wk_threadpool *pool;
    const char *model_path;
    pthread_mutex_t mu; /* guards what follows */
    pthread_cond_t cv;  /* an encode ended */
    struct pending *head, *tail; /* requests waiting for the next encode, in arrival order */
    int64_t requests, runs, waiting;
    bool busy;          /* an encode is running (its thread computes without mu) */
};

json_t *srv_base64_json(const void *src, size_t n)
{
    if (n > (size_t)INT_MAX / 4 * 3) return NULL;
    unsigned char *o = wk_malloc((n + 2) / 3 * 4 + 1);
    if (!o) return NULL;
    const int k = EVP_EncodeBlock(o, src, (int)n); /* OpenSSL's RFC 4648 encoder, NUL-terminated */
    json_t *j = json_stringn((const char *)o, (size_t)k);
    wk_free(o);
    return j;
}

void srv_embed_batch_deinit(struct srv_embed_batch *b)
{
    for (int32_t i = 0; b->toks && i < b->n; i++) wk_tokens_deinit(&b->toks[i]);
    wk_free(b->toks), wk_free(b->seqs), wk_free(b->n_tokens);
    *b = (struct srv_embed_batch){0};
}

/* Input i's ids into b->toks[i]: a string tokenized (wk_embed_tokenize),
 * or an array of ids taken as they are. 0 or a status with msg set. */
static int input_to_tokens(struct srv_embed_batch *b, size_t i, json_t *v, const struct wk_tokenizer *tok,
                           int32_t max, bool truncate, char *msg, size_t cap)
{
    if (json_is_string(v)) {
        struct wk_error err;
        wk_error_clear(&err);
        enum wk_status st = wk_embed_tokenize(tok, json_string_value(v), json_string_length(v), max, truncate,
                                              &b->toks[i], &err);
        if (st) snprintf(msg, cap, "input %zu: %.400s", i, err.msg);
        return st == WK_E_NOMEM ? 500 : st ? 400 : 0;
    }
    if (!json_is_array(v) || json_array_size(v) == 0) {
        snprintf(msg, cap, "input %zu must be a string or a non-empty array of token ids", i);
        return 400;
    }
    size_t k;
    json_t *id;
    json_array_foreach(v, k, id)
    {
        if (!json_is_integer(id)) {
            snprintf(msg, cap, "input %zu: item %zu is not a token id", i, k);
            return 400;
        }
        if ((int64_t)k >= max) {
            if (truncate) break;
            snprintf(msg, cap, "input %zu is %zu tokens long, over the model's limit of %d (truncate it, or "
                     "set truncate to true)", i, json_array_size(v), max);
            return 400;
        }
        if (wk_tokens_push(&b->toks[i], (int32_t)WK_MAX(WK_MIN(json_integer_value(id), INT32_MAX), -1))) {
            snprintf(msg, cap, "out of memory");
            return 500;
        }
    }
    return 0;
}

int srv_embed_batch_parse(struct srv_embed_batch *b, json_t *req, const struct wk_tokenizer *tok, int32_t max_tokens,
                          char *msg, size_t cap)
{
    *b = (struct srv_embed_batch){0};
    json_t *in = json_object_get(req, "embed");
    if (!json_is_array(in) || json_array_size(in) == 0 || json_array_size(in) > INT32_MAX / 2) {
        snprintf(msg, cap, "embed must be a non-empty list");
        return 400;
    }
    const size_t n = json_array_size(in);
    const bool truncate = !json_is_false(json_object_get(req, "truncate"));
    b->n = (int32_t)n;
    b->toks = wk_calloc(n, sizeof *b->toks);
    b->seqs = wk_malloc(n * sizeof *b->seqs);
    b->n_tokens = wk_malloc(n * sizeof *b->n_tokens);
    if (!b->toks || !b->seqs || !b->n_tokens) {
        snprintf(msg, cap, "out of memory");
        return 500;
    }
    for (size_t i = 0; i < n; i++) {
        int code = input_to_tokens(b, i, json_array_get(in, i), tok, max_tokens, truncate, msg, cap);
        if (code) return code;
        b->seqs[i] = b->toks[i].ids;
        b->n_tokens[i] = (int32_t)b->toks[i].n;
        b->total += b->toks[i].n;
    }
    return 0;
}

json_t *srv_embed_answer(const struct srv_embed_batch *b, const float *out, int32_t n_embd, int64_t duration_ns)
{
    json_t *embs = json_array(), *counts = json_array();
    for (int32_t i = 0; i < b->n && embs && counts; i++) {
        json_t *e = srv_base64_json(out + (size_t)i * (size_t)n_embd, (size_t)n_embd * sizeof *out);
        if (!e || json_array_append_new(embs, e) || json_array_append_new(counts, json_integer(b->n_tokens[i]))) {
            json_decref(embs), json_decref(counts);
            embs = counts = NULL;
        }
    }
    json_t *ans = embs && counts ? json_pack("{s:i, s:o, s:o, s:I, s:I}", "status", 200, "embeddings", embs, "tokens",
                                             counts, "prompt_eval_count", (json_int_t)b->total,
                                             "prompt_eval_duration", (json_int_t)duration_ns)
                                 : NULL;
    if (!embs || !counts) json_decref(embs), json_decref(counts);
    return ans ? ans : srv_error_line(500, "out of memory");
}

void srv_decoder_embedder_init(struct srv_decoder_embedder *e, const struct wk_model *m)
{
    *e = (struct srv_decoder_embedder){.model = m};
    struct wk_error err;
    wk_error_clear(&err);
    if (wk_embed_decoder_pooling(m, &e->pooling, &err))
        snprintf(e->error, sizeof e->error, "this model cannot embed: %.400s", err.msg);
}

/* Decoder embeddings: inputs of up to this many tokens are computed
 * together, this many at a time (wk_embed_decoder_many). */
#define DECODER_BATCH_TOKENS 64
#define DECODER_BATCH_SEQ    8

/* e's context with room for n tokens (made, or grown, here), or NULL with err set. */
static struct wk_context *decoder_context(struct srv_decoder_embedder *e, struct wk_context *main_ctx, int32_t n,
                                          struct wk_error *err)
{
    if (e->ctx && e->n_ctx >= n) return e->ctx;
    /* whole ubatches, at most the main context's n_ctx: its n_ubatch (the
     * main context's) and so its chunks, so the vectors, never change */
    const int64_t ub = wk_context_n_ubatch(main_ctx);
    const int64_t want = WK_MIN(WK_MAX((n + ub - 1) / ub * ub, e->n_ctx), wk_context_n_ctx(main_ctx));
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = (int32_t)want;
    cp.n_ubatch = (int32_t)ub;
    cp.pool = wk_context_pool(main_ctx); /* its threads: used on the compute thread, never beside it */
    wk_context_destroy(e->ctx);
    e->ctx = NULL, e->n_ctx = 0;
    if (wk_context_create(e->model, &cp, &e->ctx, err)) return NULL;
    e->n_ctx = (int32_t)want;
    return e->ctx;
}

void srv_embed_progress_deinit(struct srv_embed_progress *p)
{
    wk_free(p->out);
    *p = (struct srv_embed_progress){0};
}

/* The first step's work: e's contexts for b, every input checked (so that
 * no later step fails on an input), p->out. 0, or an HTTP status with
 * err set. */
static int embed_setup(struct srv_decoder_embedder *e, struct wk_context *main_ctx, const struct srv_embed_batch *b,
                       struct srv_embed_progress *p, struct wk_error *err)
{
    p->t0 = wk_time_ns();
    const struct wk_hparams *hp = wk_model_hparams(e->model);
    int32_t longest = 1, n_short = 0;
    if (wk_embed_decoder_check(e->model, b->n, (const int32_t *const *)b->seqs, b->n_tokens, err)) return 400;
    for (int32_t i = 0; i < b->n; i++) {
        longest = WK_MAX(longest, b->n_tokens[i]);
        n_short += b->n_tokens[i] <= DECODER_BATCH_TOKENS;
    }
    if (longest > wk_context_n_ctx(main_ctx)) { /* srv_embed_batch_parse cut them at the runner's n_ctx */
        wk_error_set(err, WK_E_RANGE, "an input of %d tokens does not fit the context of %d", longest,
                     wk_context_n_ctx(main_ctx));
        return 400;
    }
    if (!(p->out = wk_malloc((size_t)WK_MAX(b->n, 1) * (size_t)hp->n_embd * sizeof *p->out))) {
        wk_error_set(err, WK_E_NOMEM, "out of memory");
        return 500;
    }
    if (!decoder_context(e, main_ctx, longest, err)) return srv_http_status(err->status);
    if (n_short >= 2 && !e->many) {
        /* short inputs share forwards: DECODER_BATCH_SEQ sequences of
         * DECODER_BATCH_TOKENS positions (one ubatch's worth of KV cache) */
        struct wk_context_params cp = wk_context_params_default();
        cp.n_ubatch = wk_context_n_ubatch(main_ctx);
        cp.n_ctx = (int32_t)WK_MIN(DECODER_BATCH_TOKENS, cp.n_ubatch);
        cp.n_seq_max = DECODER_BATCH_SEQ;
        cp.pool = wk_context_pool(main_ctx);
        struct wk_error e2;
        if (wk_context_create(e->model, &cp, &e->many, &e2)) e->many = NULL; /* then each input alone */
    }
    return 0;
}

json_t *srv_decoder_embed_step(struct srv_decoder_embedder *e, struct wk_context *main_ctx,
                               const struct srv_embed_batch *b, struct srv_embed_progress *p,
                               const volatile bool *cancel, bool *done)
{
    *done = true;
    if (e->error[0]) return srv_error_line(400, e->error);
    struct wk_error err;
    wk_error_clear(&err);
    if (!p->out) {
        const int code = embed_setup(e, main_ctx, b, p, &err);
        if (code) return srv_error_line(code, err.msg);
    }
    const int32_t E = wk_model_hparams(e->model)->n_embd;
    if (p->next < b->n) {
        /* the next piece: one long input, or up to DECODER_BATCH_SEQ short ones */
        int32_t cnt = 1;
        if (b->n_tokens[p->next] <= DECODER_BATCH_TOKENS)
            while (p->next + cnt < b->n && cnt < DECODER_BATCH_SEQ && b->n_tokens[p->next + cnt] <= DECODER_BATCH_TOKENS)
                cnt++;
        enum wk_status st = wk_embed_decoder_many(e->ctx, e->many, e->pooling, cnt,
                                                  (const int32_t *const *)b->seqs + p->next, b->n_tokens + p->next,
                                                  p->out + (size_t)p->next * (size_t)E, cancel, &err);
        if (st == WK_E_CANCELLED) return NULL;
        if (st) return srv_error_line(srv_http_status(st), err.msg); /* memory: every input was checked */
        p->next += cnt;
    }
    if (p->next < b->n) {
        *done = false;
        return NULL;
    }
    return srv_embed_answer(b, p->out, E, wk_time_ns() - p->t0);
}

json_t *srv_decoder_embed(struct srv_decoder_embedder *e, struct wk_context *main_ctx, const struct srv_embed_batch *b,
                          const volatile bool *cancel)
{
    struct srv_embed_progress p = {0};
    bool done = false;
    json_t *ans = NULL;
    while (!done) ans = srv_decoder_embed_step(e, main_ctx, b, &p, cancel, &done);
    srv_embed_progress_deinit(&p);
    return ans;
}

/* Sets cancel when the server side of fd hangs up, until a byte arrives
 * on wake[0] (the request is done). */
struct watch {
    int fd, wake[2];
    volatile bool cancel;
};

static void *watch_main(void *arg)
{
    struct watch *w = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = w->fd, .events = POLLRDHUP}, {.fd = w->wake[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (p[1].revents) break;
        if (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
            w->cancel = true;
            break;
        }
    }
    return NULL;
}

/*
 * The requests queued at rn->head (mu held, busy just set by the caller)
 * in one wk_embed_model_encode, then each marked done; returns with mu
 * held. Requests that arrive while an encode runs wait and go into the
 * next one together, so concurrent clients share forwards (each weight
 * read once per forward for all their inputs) and every vector is still
 * what its input gives alone (the encode's results do not depend on
 * grouping). A lone request can be cancelled between layers by its
 * client leaving; merged ones run to the end (the others need the pass).
 */
static void run_merged(struct erunner *rn)
{
    struct pending *list = NULL, **end = &list;
    for (struct pending *p = rn->head, *nx; p; p = nx) {
        nx = p->next;
        p->next = NULL;
        if (*p->cancel) { /* its client left while it waited: nothing to compute */
            p->st = wk_error_set(&p->err, WK_E_CANCELLED, "cancelled"), p->done = true;
            continue;
        }
        *end = p, end = &p->next;
    }
    rn->head = rn->tail = NULL;
    if (!list) return;
    rn->runs++;
    pthread_mutex_unlock(&rn->mu);
    const int E = wk_embed_model_n_embd(rn->m);
    int64_t n = 0, k = 0, n_req = 0;
    for (struct pending *p = list; p; p = p->next) n += p->b->n, n_req++;
    const int32_t **seqs = wk_malloc((size_t)n * sizeof *seqs);
    int32_t *nt = wk_malloc((size_t)n * sizeof *nt);
    float *out = n_req > 1 ? wk_malloc((size_t)n * (size_t)E * sizeof *out) : list->out;
    struct wk_error err;
    wk_error_clear(&err);
    enum wk_status st = WK_OK;
    if (!seqs || !nt || !out || n > INT32_MAX) st = wk_error_set(&err, WK_E_NOMEM, "out of memory");
    for (struct pending *p = list; !st && p; p = p->next)
        for (int32_t i = 0; i < p->b->n; i++, k++) seqs[k] = p->b->seqs[i], nt[k] = p->b->n_tokens[i];
    const int64_t t0 = wk_time_ns();
    if (!st)
        st = wk_embed_model_encode(rn->m, rn->pool, (int32_t)n, seqs, nt, out, n_req > 1 ? NULL : list->cancel, &err);
    const int64_t dt = wk_time_ns() - t0;
    k = 0;
    for (struct pending *p = list; !st && n_req > 1 && p; p = p->next) {
        memcpy(p->out, out + k * E, (size_t)p->b->n * (size_t)E * sizeof *out);
        k += p->b->n;
    }
    wk_free(seqs), wk_free(nt);
    if (n_req > 1) wk_free(out);
    pthread_mutex_lock(&rn->mu);
    for (struct pending *p = list; p; p = p->next) p->st = st, p->err = err, p->dt = dt, p->done = true;
    rn->requests += n_req;
    pthread_cond_broadcast(&rn->cv);
}

/* Runs an embed request: the answer line (a new object). */
static json_t *embed(struct erunner *rn, json_t *req, int fd)
{
    char msg[WK_ERROR_MSG_MAX];
    struct srv_embed_batch b;
    const int E = wk_embed_model_n_embd(rn->m);
    int code = srv_embed_batch_parse(&b, req, wk_embed_model_tokenizer(rn->m), wk_embed_model_max_tokens(rn->m), msg,
                                     sizeof msg);
    float *out = !code && (size_t)b.n <= SIZE_MAX / sizeof(float) / (size_t)E
                     ? wk_malloc((size_t)b.n * (size_t)E * sizeof *out) : NULL;
    if (!code && !out) code = 500, snprintf(msg, sizeof msg, "out of memory");
    json_t *ans = NULL;
    if (!code) {
        struct watch w = {.fd = fd, .wake = {-1, -1}};
        pthread_t wt;
        /* a short request (a query of a sentence or two) goes without the
         * watcher: starting and joining a thread took ~0.1 ms of a 2 ms
         * request, and its encode ends within milliseconds anyway */
        bool watching = b.total > WATCH_MIN_TOKENS && pipe2(w.wake, O_CLOEXEC) == 0 &&
                        pthread_create(&wt, NULL, watch_main, &w) == 0;
        struct pending me = {.b = &b, .out = out, .cancel = &w.cancel};
        wk_error_clear(&me.err);
        enum wk_status st = wk_embed_model_check(rn->m, b.n, b.seqs, b.n_tokens, &me.err);
        pthread_mutex_lock(&rn->mu);
        if (st) me.st = st, me.done = true;
        else if (rn->tail) rn->tail->next = &me, rn->tail = &me;
        else rn->head = rn->tail = &me;
        while (!me.done) {
            if (rn->busy) { /* an encode runs: the next one takes this request with the others waiting */
                pthread_cond_wait(&rn->cv, &rn->mu);
                continue;
            }
            rn->busy = true;
            run_merged(rn);
            rn->busy = false;
            pthread_cond_broadcast(&rn->cv); /* the next waiting request leads the next encode */
        }
        pthread_mutex_unlock(&rn->mu);
        st = me.st;
        struct wk_error err = me.err;
        const int64_t dt = me.dt;
        if (watching) {
            while (write(w.wake[1], "x", 1) < 0 && errno == EINTR) {}
            pthread_join(wt, NULL);
        }
        if (w.wake[0] >= 0) close(w.wake[0]), close(w.wake[1]);
        ans = st ? srv_error_line(srv_http_status(st), err.msg) : srv_embed_answer(&b, out, E, dt);
    } else {
        ans = srv_error_line(code, msg);
    }
    srv_embed_batch_deinit(&b);
    wk_free(out);
    return ans;
}

static json_t *status_json(struct erunner *rn)
{
    pthread_mutex_lock(&rn->mu);
    json_t *s = json_pack("{s:i, s:b, s:i, s:I, s:I, s:I, s:i, s:s, s:b}", "status", 200, "busy", rn->busy, "queued", 0,
                          "tokens_generated", (json_int_t)0, "requests", (json_int_t)rn->requests, "runs",
                          (json_int_t)rn->runs, "n_ctx", wk_embed_model_max_tokens(rn->m), "model", rn->model_path,
                          "embedding", 1);
    pthread_mutex_unlock(&rn->mu);
    return s;
}

static json_t *tokenize_json(struct erunner *rn, json_t *req)
{
    json_t *text = json_object_get(req, "tokenize");
    if (!json_is_string(text)) return srv_error_line(400, "tokenize must be a string");
    struct wk_tokens t = {0};
    struct wk_error err;
    enum wk_status st = json_is_true(json_object_get(req, "add_special"))
                            ? wk_embed_model_tokenize(rn->m, json_string_value(text), json_string_length(text), true, &t, &err)
                            : wk_tokenizer_encode(wk_embed_model_tokenizer(rn->m), json_string_value(text),
                                                  json_string_length(text), true, &t);
    json_t *ids = json_array();
    for (int64_t i = 0; !st && ids && i < t.n; i++) json_array_append_new(ids, json_integer(t.ids[i]));
    wk_tokens_deinit(&t);
    if (st) {
        json_decref(ids);
        return srv_error_line(500, "out of memory");
    }
    return json_pack("{s:i, s:o}", "status", 200, "tokens", ids);
}

static void *conn_main(void *arg)
{
    const struct srv_conn ca = *(struct srv_conn *)arg;
    wk_free(arg);
    struct erunner *rn = ca.rn;
    const int fd = ca.fd;
    size_t len = 0;
    char *line = srv_read_line(fd, MAX_REQUEST_BYTES, &len);
    json_t *req = line ? json_loadb(line, len, JSON_ALLOW_NUL, NULL) : NULL;
    wk_free(line);
    if (!req || !json_is_object(req)) srv_send_json(fd, srv_error_line(400, "the runner request is not a JSON object"));
    else if (json_is_true(json_object_get(req, "status"))) srv_send_json(fd, status_json(rn));
    else if (json_object_get(req, "embed")) srv_send_json(fd, embed(rn, req, fd));
    else if (json_object_get(req, "tokenize")) srv_send_json(fd, tokenize_json(rn, req));
    else
        srv_send_json(fd, srv_error_line(400, "this is an embedding model: it makes embeddings (/api/embed, "
                                        "/v1/embeddings) and does not generate text"));
    json_decref(req);
    close(fd);
    return NULL;
}

int srv_runner_embed_main(const struct wk_runner_opts *o)
{
    if (!srv_runner_watch_parent((long)o->parent)) return 1;
    signal(SIGPIPE, SIG_IGN);
    struct erunner *rn = wk_calloc(1, sizeof *rn); /* lives until the process ends */
    if (!rn) return 1;
    pthread_mutex_init(&rn->mu, NULL);
    pthread_cond_init(&rn->cv, NULL);
    rn->model_path = o->model;
    struct wk_error err;
    wk_error_clear(&err);
    int nth = o->n_threads > 0 ? o->n_threads : wk_cpu_features_get()->n_cores;
    enum wk_status st = wk_embed_model_load(o->model, &rn->m, &err);
    if (!st && (st = wk_threadpool_create(WK_MAX(1, WK_MIN(nth, 1024)), &rn->pool)))
        wk_error_set(&err, st, "cannot start %d threads", nth);
    int lfd = st ? -1 : srv_runner_listen(o->socket, &err);
    if (st || lfd < 0) {
        json_t *e = json_pack("{s:s}", "error", err.msg[0] ? err.msg : wk_status_str(st));
        char *s = json_dumps(e, JSON_COMPACT);
        printf("%s\n", s ? s : "{\"error\":\"out of memory\"}");
        fflush(stdout);
        free(s);
        json_decref(e);
        return 1;
    }
    /* n_parallel 1: one request computes at a time (the scheduler of parallel slots reads it) */
    printf("{\"ready\":true,\"n_ctx\":%d,\"n_parallel\":1,\"draft\":false,\"embedding\":true,\"bytes_per_token\":%lld}\n",
           wk_embed_model_max_tokens(rn->m),
           (long long)(1 + (1 << 20) / WK_MAX(1, wk_tokenizer_min_tokens(wk_embed_model_tokenizer(rn->m), 1 << 20))));
    fflush(stdout);
    srv_runner_serve(lfd, (long)o->parent, conn_main, rn);
    return 1;
}
