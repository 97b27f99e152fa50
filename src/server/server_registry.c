/*
 * server_registry.c - POST /api/pull and /api/push (server_registry.h).
 *
 * A request is a job: a worker thread runs wk_registry_pull or _push,
 * each progress report appended as one NDJSON line to the job's buffer;
 * the connection's thread (libmicrohttpd gives each connection one) first
 * waits for the second report (the registry answered for the manifest, or
 * the stored manifest was read) or the end, so that what fails at once is
 * an HTTP error, then streams the buffer out through a content reader
 * that blocks until lines arrive (as Ollama's streamResponse drains its
 * channel). Lines the client is slow to take pile up only to 1 MiB: past
 * that a blob's intermediate reports are dropped, its completion and the
 * status lines kept.
 *
 * Cancellation: the worker's cancel callback reads the job's flag (and
 * the server's shutting-down state), which is set when the client's
 * socket reports a hang-up (polled for POLLRDHUP while waiting) or when
 * libmicrohttpd drops the answer (its free callback, which then joins the
 * worker: a pull stops within one received chunk or a second).
 */
#include "server_registry.h"

#include "server_internal.h"
#include "../store/wk_registry.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Unsent bytes past which a blob's intermediate progress lines are dropped. */
#define MAX_PENDING ((size_t)1 << 20)

struct job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct wk_buf out; /* NDJSON lines not yet handed to the HTTP library, from out_off */
    size_t out_off;
    int n_reports;
    bool done, error_sent;
    enum wk_status st;
    struct wk_error err;
    atomic_bool cancel;
    bool push, insecure, thread_started;
    int client_fd;
    struct MHD_Connection *conn; /* its connection (srv_conn_wait_begin), for a streamed job */
    const struct srv_sched *sched;
    char models_dir[4096];
    struct wk_model_name name;
    pthread_t th;
};

static bool job_cancelled(void *user)
{
    struct job *j = user;
    return atomic_load(&j->cancel) || srv_sched_shutting_down(j->sched);
}

static void job_progress(void *user, const struct wk_registry_progress *p)
{
    struct job *j = user;
    json_t *o = wk_registry_progress_json(p);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    pthread_mutex_lock(&j->mu);
    if (s && (!p->digest || p->completed >= p->total || j->out.len - j->out_off < MAX_PENDING)) {
        wk_buf_add(&j->out, s, strlen(s));
        wk_buf_add(&j->out, "\n", 1);
    }
    j->n_reports++;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    free(s);
}

static void *job_run(void *arg)
{
    struct job *j = arg;
    struct wk_error err;
    wk_error_clear(&err);
    struct wk_registry_opts o = {.insecure = j->insecure, .progress = job_progress, .progress_user = j,
                                 .cancelled = job_cancelled, .cancel_user = j};
    struct wk_store *s;
    enum wk_status st = wk_store_open(j->models_dir, &s, &err);
    if (!st) {
        st = j->push ? wk_registry_push(s, &j->name, &o, &err) : wk_registry_pull(s, &j->name, &o, &err);
        wk_store_close(s);
    }
    if (st == WK_E_CANCELLED && srv_sched_shutting_down(j->sched))
        wk_error_set(&err, st, "the server is shutting down");
    pthread_mutex_lock(&j->mu);
    j->st = st;
    j->err = err;
    j->done = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* Stops the worker (if it still runs) and frees j. */
static void job_free(struct job *j)
{
    if (!j) return;
    atomic_store(&j->cancel, true);
    if (j->thread_started) pthread_join(j->th, NULL);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    wk_free(j->out.p);
    wk_free(j);
}

static bool client_gone(int fd)
{
    if (fd < 0) return false;
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Waits on j's condition (mu held) at most 100 ms. */
static void job_wait_a_while(struct job *j)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&j->cv, &j->mu, &ts);
}

/* Waits until the worker is done or (unless until_done) has made its
 * second report. false when the client left meanwhile (j cancelled). */
static bool job_wait(struct job *j, bool until_done)
{
    pthread_mutex_lock(&j->mu);
    while (!j->done && (until_done || j->n_reports < 2)) {
        srv_conn_wait_begin(j->conn);
        job_wait_a_while(j);
        srv_conn_wait_end(j->conn);
        if (client_gone(j->client_fd)) {
            atomic_store(&j->cancel, true);
            pthread_mutex_unlock(&j->mu);
            return false;
        }
    }
    pthread_mutex_unlock(&j->mu);
    return true;
}

/* libmicrohttpd's content reader: the lines as they come, then the error
 * line if the job failed, then the end. */
static ssize_t job_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct job *j = cls;
    pthread_mutex_lock(&j->mu);
    while (j->out_off == j->out.len) {
        j->out.len = j->out_off = 0;
        if (j->done && j->st && !j->error_sent) {
            json_t *e = json_pack("{s:s}", "error", j->err.msg[0] ? j->err.msg : wk_status_str(j->st));
            srv_buf_json(&j->out, e, "\n");
            j->error_sent = true;
            continue;
        }
        if (j->done) {
            pthread_mutex_unlock(&j->mu);
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        srv_conn_wait_begin(j->conn);
        job_wait_a_while(j);
        srv_conn_wait_end(j->conn);
        if (client_gone(j->client_fd)) {
            atomic_store(&j->cancel, true);
            pthread_mutex_unlock(&j->mu);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    size_t n = WK_MIN(max, j->out.len - j->out_off);
    memcpy(buf, j->out.p + j->out_off, n);
    j->out_off += n;
    pthread_mutex_unlock(&j->mu);
    return (ssize_t)n;
}

static void job_reader_free(void *cls) { job_free(cls); }

/* The HTTP status of a job that failed before the stream: the route's
 * mapping, except that a registry's malformed answer is a 502, not the
 * client's 400. */
static unsigned job_http_status(enum wk_status st)
{
    return st == WK_E_FORMAT || st == WK_E_UNSUPPORTED ? 502 : (unsigned)srv_http_status(st);
}

/* The request's fields into j; an error message (for a 400) or NULL. */
static const char *job_parse(struct job *j, json_t *body, bool *stream, struct wk_error *err)
{
    json_t *model = json_object_get(body, "model"), *ins = json_object_get(body, "insecure");
    json_t *str = json_object_get(body, "stream");
    if (!json_is_string(model) || !*json_string_value(model)) model = json_object_get(body, "name");
    if (!json_is_string(model) || !*json_string_value(model)) return "model is required";
    if (ins && !json_is_boolean(ins) && !json_is_null(ins)) return "insecure must be true or false";
    if (str && !json_is_boolean(str) && !json_is_null(str)) return "stream must be true or false";
    j->insecure = json_is_true(ins);
    *stream = !json_is_false(str);
    if (wk_model_name_parse(json_string_value(model), &j->name, err)) return err->msg;
    return NULL;
}

static int connection_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

static enum MHD_Result serve(struct srv_server *srv, struct MHD_Connection *c, json_t *body, bool push)
{
    struct wk_error err;
    wk_error_clear(&err);
    struct job *j = wk_calloc(1, sizeof *j);
    if (!j) return srv_reply_error(c, 500, "out of memory");
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    atomic_init(&j->cancel, false);
    bool stream = true;
    const char *bad = job_parse(j, body, &stream, &err);
    if (bad) {
        enum MHD_Result r = srv_reply_error(c, 400, bad);
        job_free(j);
        return r;
    }
    j->push = push;
    j->client_fd = connection_fd(c);
    j->conn = c;
    j->sched = srv->sched;
    snprintf(j->models_dir, sizeof j->models_dir, "%s", srv->models_dir);
    if (pthread_create(&j->th, NULL, job_run, j) != 0) {
        job_free(j);
        return srv_reply_error(c, 500, "cannot start a thread");
    }
    j->thread_started = true;
    if (!job_wait(j, !stream)) { /* the client left */
        job_free(j);
        return MHD_NO;
    }
    pthread_mutex_lock(&j->mu);
    bool done = j->done;
    enum wk_status st = j->st;
    pthread_mutex_unlock(&j->mu);
    if (done && st) {
        enum MHD_Result r = srv_reply_error(c, job_http_status(st), j->err.msg[0] ? j->err.msg : wk_status_str(st));
        job_free(j);
        return r;
    }
    if (!stream) {
        job_free(j);
        return srv_reply_json(c, 200, json_pack("{s:s}", "status", "success"));
    }
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, job_reader, j, job_reader_free);
    if (!r) {
        job_free(j);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/x-ndjson");
    srv_access_headers(srv->access, c, r);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r); /* j is freed with it, once sent or dropped */
    return ret;
}

enum MHD_Result srv_serve_pull(struct srv_server *srv, struct MHD_Connection *c, json_t *body)
{
    return serve(srv, c, body, false);
}

enum MHD_Result srv_serve_push(struct srv_server *srv, struct MHD_Connection *c, json_t *body)
{
    return serve(srv, c, body, true);
}
