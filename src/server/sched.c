/*
 * sched.c - the runner processes of `wick serve`: starting one per model
 * (posix_spawn of `wick runner`, waiting for its ready line), counting
 * uses, keep_alive expiry, the WICK_MAX_LOADED_MODELS limit (least
 * recently used idle runner stopped first), restarting runners that died,
 * and the client side of the runner protocol (wk_server.h).
 *
 * Behaviour follows Ollama's scheduler (docs/reference/
 * ollama-mlx-runner.md §1.2, §1.5, §8.1): keep_alive default 5 minutes,
 * 0 unloads when the request ends, negative never unloads; a runner is
 * reloaded when a request asks for another num_ctx.
 */
#include "server_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define LOAD_TIMEOUT_MS (5 * 60 * 1000)

struct srv_runner {
    struct srv_model model;
    int32_t n_ctx_req; /* as asked (0: default) */
    int32_t n_ctx;     /* as the runner reports */
    int64_t bytes_per_token; /* as the runner reports: a prompt of more than n_ctx times this many bytes cannot fit */
    int32_t n_parallel; /* requests it computes at once, as it reports (its slots) */
    pid_t pid;
    char sock[64];
    int users;
    bool loading, dead, stopping;
    int64_t expires_ns; /* wk_time_ns deadline once unused; SRV_KEEP_FOREVER: never */
    int64_t expires_unix_ns;
    int64_t last_used;
    int64_t keep_ns; /* the keep_alive the last srv_sched_release gave (its duration); -1: none yet */
    struct srv_runner *next;
    struct srv_sched *sched; /* the scheduler it belongs to */
};

struct srv_sched {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct srv_runner *list;
    char exe[4096];
    int32_t n_threads;
    int max_loaded;
    int seq;
    int waiting; /* requests inside srv_sched_acquire (for /metrics) */
    bool shutdown;
    pthread_t reaper;
};

bool srv_sched_shutting_down(const struct srv_sched *s)
{
    return __atomic_load_n(&s->shutdown, __ATOMIC_ACQUIRE);
}

void srv_sched_begin_shutdown(struct srv_sched *s)
{
    __atomic_store_n(&s->shutdown, true, __ATOMIC_RELEASE);
}

int64_t srv_unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void srv_time_rfc3339(int64_t unix_ns, char *out, size_t cap)
{
    time_t s = (time_t)(unix_ns / 1000000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char date[40];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%s.%09lldZ", date, (long long)(unix_ns % 1000000000));
}

/* ------------------------------------------------------------ runners */

static void runner_stop(struct srv_runner *r)
{
    if (r->pid > 0) {
        kill(r->pid, SIGTERM);
        for (int i = 0; i < 500; i++) {
            if (waitpid(r->pid, NULL, WNOHANG) != 0) {
                r->pid = 0;
                break;
            }
            usleep(10000);
        }
        if (r->pid > 0) {
            kill(r->pid, SIGKILL);
            waitpid(r->pid, NULL, 0);
        }
        r->pid = 0;
    }
}

/* Unlinks r from the list (s->mu held). */
static void unlink_runner(struct srv_sched *s, struct srv_runner *r)
{
    for (struct srv_runner **p = &s->list; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            return;
        }
}

/* Starts r's process and waits for its ready line (its scheduler's mu not held). */
static enum wk_status runner_start(struct srv_runner *r, struct wk_error *err)
{
    struct srv_sched *s = r->sched;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC)) return wk_error_set(err, WK_E_IO, "pipe: %s", strerror(errno));
    char ctx[32], thr[32], parent[32];
    snprintf(ctx, sizeof ctx, "%d", r->n_ctx_req);
    snprintf(thr, sizeof thr, "%d", s->n_threads);
    snprintf(parent, sizeof parent, "%d", (int)getpid());
    char *argv[] = {s->exe, "runner", "--model", r->model.path, "--socket", r->sock, "--num-ctx", ctx,
                    "--threads", thr, "--parent", parent, NULL, NULL, NULL};
    if (r->model.draft[0]) argv[12] = "--draft", argv[13] = r->model.draft;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
    /* the server blocks SIGINT/SIGTERM (it takes them with sigwait) and
     * ignores SIGPIPE; the runner starts with neither */
    posix_spawnattr_t sa;
    posix_spawnattr_init(&sa);
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    sigaddset(&dflt, SIGTERM);
    sigaddset(&dflt, SIGINT);
    posix_spawnattr_setsigmask(&sa, &none);
    posix_spawnattr_setsigdefault(&sa, &dflt);
    posix_spawnattr_setflags(&sa, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawn(&pid, s->exe, &fa, &sa, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&sa);
    close(pfd[1]);
    if (rc) {
        close(pfd[0]);
        return wk_error_set(err, WK_E_IO, "cannot start the runner %s: %s", s->exe, strerror(rc));
    }
    r->pid = pid;
    char line[8192];
    size_t n = 0;
    int64_t deadline = wk_time_ns() + (int64_t)LOAD_TIMEOUT_MS * 1000000;
    while (n < sizeof line - 1 && !memchr(line, '\n', n)) {
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        int left = (int)((deadline - wk_time_ns()) / 1000000);
        if (left <= 0) break;
        if (poll(&p, 1, left) <= 0) continue;
        ssize_t got = read(pfd[0], line + n, sizeof line - 1 - n);
        if (got <= 0) break;
        n += (size_t)got;
    }
    close(pfd[0]);
    line[n] = '\0';
    json_t *j = json_loads(line, JSON_DISABLE_EOF_CHECK, NULL);
    enum wk_status st = WK_OK;
    if (j && json_is_true(json_object_get(j, "ready"))) {
        r->n_ctx = (int32_t)json_integer_value(json_object_get(j, "n_ctx"));
        r->bytes_per_token = json_integer_value(json_object_get(j, "bytes_per_token"));
        r->n_parallel = (int32_t)json_integer_value(json_object_get(j, "n_parallel"));
        if (r->n_parallel < 1) r->n_parallel = 1;
    } else {
        const char *e = j ? json_string_value(json_object_get(j, "error")) : NULL;
        st = wk_error_set(err, WK_E_IO, "the model runner failed to start: %s",
                          e ? e : n ? "it printed no ready line" : "it exited or timed out");
        runner_stop(r);
    }
    json_decref(j);
    return st;
}

/* Reaps runners that exited and stops idle ones past their keep_alive. */
static void *reaper_main(void *arg)
{
    struct srv_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->shutdown) {
        int64_t now = wk_time_ns();
        for (struct srv_runner *r = s->list, *next; r; r = next) {
            next = r->next;
            if (r->loading) continue;
            if (!r->dead && r->pid > 0 && waitpid(r->pid, NULL, WNOHANG) != 0) {
                r->pid = 0;
                r->dead = true;
            }
            bool expired = r->expires_ns != SRV_KEEP_FOREVER && now >= r->expires_ns;
            if (r->users == 0 && (r->dead || r->stopping || expired)) {
                /* stopped outside the lock: a wedged runner must not hold up the others */
                unlink_runner(s, r);
                pthread_mutex_unlock(&s->mu);
                runner_stop(r);
                wk_free(r);
                pthread_mutex_lock(&s->mu);
                pthread_cond_broadcast(&s->cv);
                next = s->list; /* the list may have changed meanwhile */
            }
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

enum wk_status srv_sched_create(const char *exe, int32_t n_threads, int max_loaded, struct srv_sched **out)
{
    struct srv_sched *s = wk_calloc(1, sizeof *s);
    *out = NULL;
    if (!s) return WK_E_NOMEM;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    snprintf(s->exe, sizeof s->exe, "%s", exe);
    s->n_threads = n_threads;
    s->max_loaded = max_loaded > 0 ? max_loaded : 1;
    if (pthread_create(&s->reaper, NULL, reaper_main, s)) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        wk_free(s);
        return WK_E_IO;
    }
    *out = s;
    return WK_OK;
}

void srv_sched_destroy(struct srv_sched *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    __atomic_store_n(&s->shutdown, true, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->reaper, NULL);
    pthread_mutex_lock(&s->mu);
    for (struct srv_runner *r = s->list, *next; r; r = next) {
        next = r->next;
        runner_stop(r);
        wk_free(r);
    }
    s->list = NULL;
    pthread_mutex_unlock(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    wk_free(s);
}

static int n_loaded(const struct srv_sched *s)
{
    int n = 0;
    for (struct srv_runner *r = s->list; r; r = r->next) n += !r->dead;
    return n;
}

/* srv_sched_acquire without the count of waiting requests. */
static enum wk_status acquire(struct srv_sched *s, const struct srv_model *m, int32_t n_ctx,
                              struct srv_runner **out, int64_t *load_ns, struct wk_error *err)
{
    int64_t t0 = wk_time_ns();
    *out = NULL;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (s->shutdown) {
            pthread_mutex_unlock(&s->mu);
            return wk_error_set(err, WK_E_CANCELLED, "the server is shutting down");
        }
        struct srv_runner *r = s->list;
        while (r && (r->dead || r->stopping || strcmp(r->model.name, m->name) != 0 || strcmp(r->model.path, m->path) != 0)) r = r->next;
        if (r && r->loading) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        if (r && r->pid > 0 && waitpid(r->pid, NULL, WNOHANG) != 0) {
            /* exited since the reaper last looked (it looks every 100 ms):
             * never handed out, a new one starts (its slot freed once unused) */
            r->pid = 0, r->dead = true;
            pthread_cond_broadcast(&s->cv);
            continue;
        }
        if (r && r->n_ctx_req == n_ctx) {
            r->users++;
            r->last_used = wk_time_ns();
            pthread_mutex_unlock(&s->mu);
            *out = r;
            *load_ns = wk_time_ns() - t0;
            return WK_OK;
        }
        if (r) { /* another num_ctx: restart once idle */
            if (r->users == 0) r->stopping = true;
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        if (n_loaded(s) >= s->max_loaded) {
            struct srv_runner *lru = NULL;
            for (struct srv_runner *q = s->list; q; q = q->next)
                if (!q->dead && !q->loading && q->users == 0 && (!lru || q->last_used < lru->last_used))
                    lru = q;
            if (lru) lru->stopping = true, lru->expires_ns = 0;
            pthread_cond_broadcast(&s->cv);
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        r = wk_calloc(1, sizeof *r);
        if (r) r->sched = s;
        if (!r) {
            pthread_mutex_unlock(&s->mu);
            return wk_error_set(err, WK_E_NOMEM, "out of memory");
        }
        r->model = *m;
        r->n_ctx_req = n_ctx;
        r->keep_ns = -1;
        r->loading = true;
        r->users = 1;
        r->expires_ns = SRV_KEEP_FOREVER;
        snprintf(r->sock, sizeof r->sock, "wick-runner-%d-%d", (int)getpid(), ++s->seq);
        r->next = s->list;
        s->list = r;
        pthread_mutex_unlock(&s->mu);
        enum wk_status st = runner_start(r, err);
        pthread_mutex_lock(&s->mu);
        r->loading = false;
        r->last_used = wk_time_ns();
        if (st) {
            unlink_runner(s, r);
            wk_free(r);
            r = NULL;
        }
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        *out = r;
        *load_ns = wk_time_ns() - t0;
        return st;
    }
}

enum wk_status srv_sched_acquire(struct srv_sched *s, const struct srv_model *m, int32_t n_ctx,
                                 struct srv_runner **out, int64_t *load_ns, struct wk_error *err)
{
    pthread_mutex_lock(&s->mu);
    s->waiting++;
    pthread_mutex_unlock(&s->mu);
    enum wk_status st = acquire(s, m, n_ctx, out, load_ns, err);
    pthread_mutex_lock(&s->mu);
    s->waiting--;
    pthread_mutex_unlock(&s->mu);
    return st;
}

/* Ends one use of r with keep_alive_ns (s->mu held). */
static void release_locked(struct srv_sched *s, struct srv_runner *r, int64_t keep_alive_ns)
{
    r->users--;
    r->keep_ns = keep_alive_ns;
    r->last_used = wk_time_ns();
    if (keep_alive_ns >= INT64_MAX / 4) {
        r->expires_ns = SRV_KEEP_FOREVER;
        r->expires_unix_ns = 0;
    } else {
        r->expires_ns = r->last_used + keep_alive_ns;
        r->expires_unix_ns = srv_unix_ns() + keep_alive_ns;
    }
    pthread_cond_broadcast(&s->cv);
}

void srv_sched_release(struct srv_runner *r, int64_t keep_alive_ns)
{
    if (!r) return;
    struct srv_sched *s = r->sched;
    pthread_mutex_lock(&s->mu);
    release_locked(s, r, keep_alive_ns);
    pthread_mutex_unlock(&s->mu);
}

void srv_sched_release_keep(struct srv_runner *r, int64_t keep_alive_ns)
{
    if (!r) return;
    struct srv_sched *s = r->sched;
    pthread_mutex_lock(&s->mu);
    release_locked(s, r, r->keep_ns >= 0 ? r->keep_ns : keep_alive_ns);
    pthread_mutex_unlock(&s->mu);
}

/* Whether r is up: started, not dead, not being stopped (s->mu held). */
static bool runner_up(const struct srv_runner *r) { return !r->dead && !r->loading && !r->stopping && r->pid > 0; }

int srv_sched_find_loaded(struct srv_sched *s, const char *name, struct srv_model *m, int32_t *n_ctx)
{
    int n = 0;
    pthread_mutex_lock(&s->mu);
    for (struct srv_runner *r = s->list; r; r = r->next) {
        if (!runner_up(r) || (name && strcmp(r->model.name, name) != 0)) continue;
        if (n++ == 0) {
            if (m) *m = r->model;
            if (n_ctx) *n_ctx = r->n_ctx_req;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

void srv_sched_counts(struct srv_sched *s, struct srv_sched_counts *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->mu);
    for (struct srv_runner *r = s->list; r; r = r->next) {
        if (r->dead || r->loading || r->pid <= 0) continue;
        out->loaded++;
        out->slots += r->n_parallel;
        out->busy += WK_MIN(r->users, r->n_parallel);
        out->in_use += r->users;
    }
    out->waiting = s->waiting;
    pthread_mutex_unlock(&s->mu);
}

void srv_sched_mark_dead(struct srv_runner *r)
{
    struct srv_sched *s = r->sched;
    pthread_mutex_lock(&s->mu);
    r->dead = true;
    if (r->pid > 0) kill(r->pid, SIGKILL);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

bool srv_sched_unload(struct srv_sched *s, const char *name)
{
    bool found = false;
    pthread_mutex_lock(&s->mu);
    for (struct srv_runner *r = s->list; r; r = r->next)
        if (!r->dead && strcmp(r->model.name, name) == 0) {
            r->stopping = true;
            r->expires_ns = 0;
            found = true;
        }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return found;
}

int64_t srv_sched_bytes_per_token(struct srv_sched *s, const struct srv_model *m)
{
    int64_t bpt = 0;
    pthread_mutex_lock(&s->mu);
    for (struct srv_runner *r = s->list; r && !bpt; r = r->next)
        if (runner_up(r) && !strcmp(r->model.name, m->name) && !strcmp(r->model.path, m->path))
            bpt = r->bytes_per_token;
    pthread_mutex_unlock(&s->mu);
    return bpt;
}

int32_t srv_runner_n_ctx(const struct srv_runner *r) { return r->n_ctx; }
int64_t srv_runner_bytes_per_token(const struct srv_runner *r) { return r->bytes_per_token; }

static int64_t rss_bytes(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    int64_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %lld kB", (long long *)&kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

json_t *srv_sched_list(struct srv_sched *s)
{
    json_t *arr = json_array();
    struct snap {
        struct srv_model m;
        char sock[64];
        pid_t pid;
        int32_t n_ctx;
        int64_t expires_unix_ns;
        int users;
    } *snap = wk_calloc(64, sizeof *snap); /* 570 KB: not on a connection thread's stack */
    if (!snap) return json_pack("{s:o}", "models", arr);
    int n = 0;
    pthread_mutex_lock(&s->mu);
    for (struct srv_runner *r = s->list; r && n < 64; r = r->next) {
        if (r->dead || r->loading || r->pid <= 0) continue;
        snap[n].m = r->model;
        memcpy(snap[n].sock, r->sock, sizeof r->sock);
        snap[n].pid = r->pid;
        snap[n].n_ctx = r->n_ctx;
        snap[n].users = r->users;
        snap[n].expires_unix_ns = r->users > 0 || r->expires_ns == SRV_KEEP_FOREVER
                                      ? (r->expires_ns == SRV_KEEP_FOREVER ? 0 : srv_unix_ns())
                                      : r->expires_unix_ns;
        n++;
    }
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < n; i++) {
        char when[64];
        /* "never": Ollama shows a far-future time */
        srv_time_rfc3339(snap[i].expires_unix_ns ? snap[i].expires_unix_ns
                                                 : INT64_C(4102444800) * 1000000000,
                         when, sizeof when);
        int64_t size = rss_bytes(snap[i].pid);
        json_t *details = wk_model_details(snap[i].m.path, NULL, NULL);
        struct srv_runner tmp = {.pid = snap[i].pid, .sched = s};
        memcpy(tmp.sock, snap[i].sock, sizeof tmp.sock);
        json_t *st = srv_runner_status(&tmp);
        json_t *e = json_pack("{s:s, s:s, s:I, s:I, s:s, s:o, s:s, s:i}", "name", snap[i].m.name,
                              "model", snap[i].m.name, "size", (json_int_t)size, "size_vram",
                              (json_int_t)0, "digest", "", "details",
                              details ? details : json_object(), "expires_at", when,
                              "context_length", snap[i].n_ctx);
        /* wick's own: what the runner is doing */
        json_t *w = json_pack("{s:i, s:i}", "pid", (int)snap[i].pid, "users", snap[i].users);
        if (st) {
            json_object_set(w, "busy", json_object_get(st, "busy"));
            json_object_set(w, "queued", json_object_get(st, "queued"));
            json_object_set(w, "tokens_generated", json_object_get(st, "tokens_generated"));
            json_object_set(w, "requests", json_object_get(st, "requests"));
            json_object_set(w, "runs", json_object_get(st, "runs"));
            json_object_set(w, "draft_loaded", json_object_get(st, "draft_loaded"));
            json_object_set(w, "n_parallel", json_object_get(st, "n_parallel"));
            json_object_set(w, "active", json_object_get(st, "active"));
            json_decref(st);
        }
        json_object_set_new(e, "wick", w);
        json_array_append_new(arr, e);
    }
    wk_free(snap);
    return json_pack("{s:o}", "models", arr);
}

/* ------------------------------------------------------------ runner client */

static int runner_connect(const struct srv_runner *r)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(r->sock);
    memcpy(a.sun_path + 1, r->sock, n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    /* the socket's listener must be the runner started (another process
     * could have taken the abstract name after the runner died, and would
     * read the prompts) */
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (connect(fd, (struct sockaddr *)&a, (socklen_t)(sizeof a.sun_family + 1 + n)) ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cred.pid != r->pid) {
        close(fd);
        return -1;
    }
    return fd;
}

static bool write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        s += w, n -= (size_t)w;
    }
    return true;
}

enum wk_status srv_call_open(struct srv_runner *r, json_t *req, int timeout_ms, int client_fd, struct srv_call *c,
                             json_t **first, struct wk_error *err)
{
    memset(c, 0, sizeof *c);
    c->sched = r->sched;
    *first = NULL;
    c->fd = runner_connect(r);
    if (c->fd < 0) return wk_error_set(err, WK_E_IO, "the model runner is not reachable");
    size_t n = 0;
    char *s = srv_json_line(req, &n); /* with its newline: one send */
    bool ok = s && write_all(c->fd, s, n);
    wk_free(s);
    c->deadline_ns = wk_time_ns() + (int64_t)timeout_ms * 1000000;
    enum srv_next nx = ok ? srv_call_next(c, client_fd, first) : SRV_RUNNER_GONE;
    if (nx == SRV_LINE) {
        c->deadline_ns = 0;
        return WK_OK;
    }
    srv_call_close(c); /* the runner sees the request's connection close: it drops the request */
    if (nx == SRV_CLIENT_GONE) return wk_error_set(err, WK_E_CANCELLED, "the client left");
    return wk_error_set(err, WK_E_IO, "the model runner stopped or did not answer");
}

enum srv_next srv_call_next(struct srv_call *c, int client_fd, json_t **line)
{
    *line = NULL;
    for (;;) {
        char *nl = c->off < c->len ? memchr(c->buf + c->off, '\n', c->len - c->off) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - (c->buf + c->off));
            *line = json_loadb(c->buf + c->off, n, 0, NULL);
            c->off += n + 1;
            if (*line) return SRV_LINE;
            continue; /* unparsable: skipped, as Ollama's client does */
        }
        if (c->off > 0) {
            memmove(c->buf, c->buf + c->off, c->len - c->off);
            c->len -= c->off, c->off = 0;
        }
        if (c->len + 65536 > c->cap) {
            size_t cap = c->cap ? c->cap * 2 : 131072;
            char *b = wk_realloc(c->buf, cap);
            if (!b) return SRV_RUNNER_GONE;
            c->buf = b, c->cap = cap;
        }
        struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN},
                              {.fd = client_fd, .events = POLLRDHUP}};
        int np = client_fd >= 0 ? 2 : 1;
        int rc = poll(p, (nfds_t)np, 100);
        if (rc < 0 && errno != EINTR) return SRV_RUNNER_GONE;
        if (np == 2 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) return SRV_CLIENT_GONE;
        if (srv_sched_shutting_down(c->sched)) return SRV_SHUTDOWN;
        if (c->deadline_ns && wk_time_ns() > c->deadline_ns) return SRV_RUNNER_GONE;
        if (rc <= 0 || !(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t got = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return SRV_RUNNER_GONE;
        c->len += (size_t)got;
    }
}

void srv_call_close(struct srv_call *c)
{
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    wk_free(c->buf);
    c->buf = NULL;
}

json_t *srv_runner_status(struct srv_runner *r)
{
    struct srv_call c;
    json_t *req = json_pack("{s:b}", "status", 1), *st = NULL;
    struct wk_error err;
    if (srv_call_open(r, req, 1000, -1, &c, &st, &err) == WK_OK) srv_call_close(&c);
    json_decref(req);
    return st;
}

/* ------------------------------------------------------------ keep_alive */

/* A duration string as Go's time.ParseDuration reads it (what Ollama's
 * keep_alive field goes through): an optional sign, then "0" or one or more
 * decimal numbers (digits, an optional fraction, no exponent), each with a
 * unit (ns, us, \u00b5s, \u03bcs, ms, s, m, h). Also a bare decimal number, read as
 * seconds (as OLLAMA_KEEP_ALIVE is). Into *sec (signed); false on
 * anything else or past Go's range (about 292 years). */
static bool parse_go_duration(const char *p, double *sec)
{
    static const struct { const char *name; double sec; } units[] = {
        {"ns", 1e-9}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"\xce\xbcs", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}};
    double sign = 1, total = 0;
    if (*p == '-' || *p == '+') sign = *p++ == '-' ? -1 : 1;
    if (strcmp(p, "0") == 0) {
        *sec = 0;
        return true;
    }
    if (!*p) return false;
    bool first = true;
    while (*p) {
        double x = 0, scale = 1;
        int digits = 0;
        for (; *p >= '0' && *p <= '9'; p++, digits++) x = 10 * x + (*p - '0');
        if (*p == '.')
            for (p++; *p >= '0' && *p <= '9'; p++, digits++) x += (*p - '0') * (scale /= 10);
        if (!digits) return false;
        size_t i = 0, best = 0, best_len = 0;
        for (; i < sizeof units / sizeof *units; i++) { /* the longest unit that matches ("ms" before "m") */
            size_t n = strlen(units[i].name);
            if (n > best_len && strncmp(p, units[i].name, n) == 0) best = i, best_len = n;
        }
        if (!best_len) {
            if (*p || !first) return false; /* a number without a unit only alone: seconds */
            total = x;
            break;
        }
        total += x * units[best].sec;
        p += best_len;
        first = false;
    }
    if (total > 9223372036.854775807) return false; /* Go: "invalid duration" */
    *sec = sign * total;
    return true;
}

bool srv_parse_keep_alive(json_t *v, int64_t *ns)
{
    if (!v || json_is_null(v)) return true;
    double s;
    if (json_is_number(v)) {
        s = json_number_value(v);
        if (s != s) return false;
    } else if (!json_is_string(v) || !parse_go_duration(json_string_value(v), &s)) {
        return false;
    }
    /* negative: for ever, as Ollama; past ~73 years: for ever too (no overflow) */
    *ns = s < 0 || s * 1e9 >= (double)(INT64_MAX / 4) ? SRV_KEEP_FOREVER : (int64_t)(s * 1e9);
    return true;
}
