/*
 * runner_io.c - the runner's parts that need none of its state (runner.c):
 * the socket helpers of its JSON-lines protocol, the tokenize and
 * detokenize operations, and how many parallel slots fit in memory.
 */
#include "server_internal.h"

#include "../runtime/wk_runtime.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* ------------------------------------------------------------ sockets */

json_t *srv_error_line(int status, const char *msg)
{
    size_t n; /* a message cut to its buffer may end inside a character */
    char *clean = wk_utf8_sanitize(msg, strlen(msg), &n);
    json_t *r = json_pack("{s:i, s:s}", "status", status, "error", clean ? clean : "error");
    wk_free(clean);
    return r;
}

bool srv_peer_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Writes all of s[n]; false when the peer is gone. */
bool srv_send_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        struct pollfd p = {.fd = fd, .events = POLLOUT | POLLRDHUP};
        if (poll(&p, 1, 100) < 0 && errno != EINTR) return false;
        if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return false;
        if (!(p.revents & POLLOUT)) continue;
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (w <= 0) return false;
        s += w, n -= (size_t)w;
    }
    return true;
}

static int dump_to_buf(const char *s, size_t n, void *b)
{
    return wk_buf_add(b, s, n) ? 0 : -1;
}

char *srv_json_line(const json_t *obj, size_t *len)
{
    struct wk_buf b = {0};
    if (!obj || json_dump_callback(obj, dump_to_buf, &b, JSON_COMPACT) != 0 || !wk_buf_add(&b, "\n", 1)) {
        wk_free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}

bool srv_send_json(int fd, json_t *obj)
{
    size_t n = 0;
    char *s = srv_json_line(obj, &n);
    json_decref(obj);
    bool ok = s ? srv_send_all(fd, s, n) : srv_send_all(fd, "{\"status\":500,\"error\":\"out of memory\"}\n", 39);
    wk_free(s);
    return ok;
}

int srv_runner_accept(int lfd, long parent)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE) continue;
            return -1;
        }
        /* only the server that started this runner (or, run by hand, a
         * process of the same user) may queue work: an abstract socket is
         * open to every local process, which would bypass the server's
         * checks and limits */
        struct ucred cred;
        socklen_t cl = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 &&
            (parent > 0 ? cred.pid == (pid_t)parent : cred.uid == getuid()))
            return fd;
        close(fd);
    }
}

/* Leaves when the server that started the runner is gone (its parent
 * changes): a runner never outlives its server. */
static void *watch_parent(void *arg)
{
    pid_t parent = (pid_t)(intptr_t)arg;
    while (getppid() == parent) sleep(1);
    _exit(0);
    return NULL;
}

bool srv_runner_watch_parent(long parent)
{
    if (parent <= 0) return true;
    if (getppid() != (pid_t)parent) return false; /* the server died before we started */
    pthread_t watcher;
    pthread_create(&watcher, NULL, watch_parent, (void *)(intptr_t)parent);
    return true;
}

int srv_runner_listen(const char *name, struct wk_error *err)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    if (n + 1 >= sizeof a.sun_path) return wk_error_set(err, WK_E_INVALID, "socket name too long"), -1;
    memcpy(a.sun_path + 1, name, n); /* abstract: leading NUL */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, (socklen_t)(sizeof a.sun_family + 1 + n)) || listen(fd, 128)) {
        wk_error_set(err, WK_E_IO, "cannot listen on socket %s: %s", name, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

void srv_runner_serve(int lfd, long parent, void *(*conn_main)(void *), void *rn)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (;;) {
        const int fd = srv_runner_accept(lfd, parent);
        if (fd < 0) break;
        pthread_t t;
        struct srv_conn *c = wk_malloc(sizeof *c);
        if (c) *c = (struct srv_conn){.rn = rn, .fd = fd};
        if (!c || pthread_create(&t, &attr, conn_main, c)) {
            wk_free(c);
            close(fd);
        }
    }
    pthread_attr_destroy(&attr);
}

/* Reads one line (without its newline) of at most max bytes: wk_malloc'd,
 * NUL-terminated; NULL when the peer closes first or the line is too long. */
char *srv_read_line(int fd, size_t max, size_t *len)
{
    struct wk_buf b = {0};
    char chunk[4096];
    for (;;) {
        ssize_t r = recv(fd, chunk, sizeof chunk, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        char *nl = memchr(chunk, '\n', (size_t)r);
        size_t n = nl ? (size_t)(nl - chunk) : (size_t)r;
        if (b.len + n > max || !wk_buf_add(&b, chunk, n)) break;
        if (nl) {
            *len = b.len;
            return b.p ? b.p : wk_calloc(1, 1);
        }
    }
    wk_free(b.p);
    return NULL;
}

/* ------------------------------------------------ tokenize and detokenize */

/* The bytes token id stands for (control tokens as their text, as
 * llama.cpp's common_token_to_piece gives them): a JSON string when they
 * are valid UTF-8, else the list of their byte values (llama-server's
 * /tokenize with_pieces). NULL when out of memory. */
json_t *srv_piece_json(const struct wk_tokenizer *tok, int32_t id)
{
    char local[256], *buf = local;
    size_t n = wk_tokenizer_token_bytes(tok, id, true, local, sizeof local);
    if (n > sizeof local) { /* a longer piece: its whole length this time */
        if (!(buf = wk_malloc(n))) return NULL;
        n = wk_tokenizer_token_bytes(tok, id, true, buf, n);
    }
    bool valid = true;
    for (size_t i = 0, k; i < n && valid; i += k) valid = (k = wk_utf8_seq_len((const unsigned char *)buf + i, n - i)) > 0;
    json_t *out = valid ? json_stringn(buf, n) : json_array();
    for (size_t i = 0; !valid && out && i < n; i++) json_array_append_new(out, json_integer((unsigned char)buf[i]));
    if (buf != local) wk_free(buf);
    return out;
}

/*
 * A tokenize request, {"tokenize": text, "add_special", "parse_special",
 * "with_pieces"} (booleans; the server checked the types): {"status": 200,
 * "tokens": [id...]}, or with with_pieces [{"id", "piece"}...], as
 * llama-server's POST /tokenize answers: add_special puts BOS first when
 * the model adds one (as a raw prompt gets it, wk_prompt_raw; no model
 * wick loads adds EOS), parse_special turns control-token text into the
 * control token (else it stays literal, as user content). Runs on the
 * connection's thread: the tokenizer is read-only.
 */
json_t *srv_tokenize_json(const struct wk_tokenizer *tok, json_t *req)
{
    json_t *text = json_object_get(req, "tokenize");
    if (!json_is_string(text)) return srv_error_line(400, "content must be a string");
    const bool with_pieces = json_is_true(json_object_get(req, "with_pieces"));
    struct wk_tokens ids = {0};
    const int32_t bos = wk_tokenizer_bos(tok);
    enum wk_status st = WK_OK;
    if (json_is_true(json_object_get(req, "add_special")) && bos >= 0 && wk_tokenizer_add_bos(tok))
        st = wk_tokens_push(&ids, bos);
    if (!st)
        st = wk_tokenizer_encode(tok, json_string_value(text), json_string_length(text),
                                 !json_is_false(json_object_get(req, "parse_special")), &ids);
    json_t *list = st ? NULL : json_array();
    for (int64_t i = 0; list && i < ids.n; i++) {
        json_t *e = with_pieces ? json_object() : json_integer(ids.ids[i]);
        if (e && with_pieces && (json_object_set_new(e, "id", json_integer(ids.ids[i])) ||
                                 json_object_set_new(e, "piece", srv_piece_json(tok, ids.ids[i])))) {
            json_decref(e);
            e = NULL;
        }
        if (!e || json_array_append_new(list, e)) {
            json_decref(list);
            list = NULL;
        }
    }
    wk_tokens_deinit(&ids);
    json_t *res = list ? json_pack("{s:i, s:o}", "status", 200, "tokens", list) : NULL;
    return res ? res : srv_error_line(500, "out of memory while tokenizing");
}

/*
 * A detokenize request, {"detokenize": [id...]}: {"status": 200,
 * "content": text}, the bytes the ids stand for one after the other
 * (control tokens as their text, as llama-server's POST /detokenize gives
 * them), a byte that is not part of well-formed UTF-8 replaced by U+FFFD
 * (JSON strings are UTF-8). An id that is not an integer of the
 * vocabulary is a 400 naming its index.
 */
json_t *srv_detokenize_json(const struct wk_tokenizer *tok, json_t *req)
{
    json_t *list = json_object_get(req, "detokenize"), *v;
    const int32_t n_vocab = wk_tokenizer_n_vocab(tok);
    char msg[256];
    size_t i;
    if (!json_is_array(list)) return srv_error_line(400, "tokens must be a list of token ids");
    json_array_foreach(list, i, v) {
        if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < n_vocab) continue;
        if (json_is_integer(v))
            snprintf(msg, sizeof msg, "tokens[%zu]: %lld is not a token id of this model (its vocabulary has %d)", i,
                     (long long)json_integer_value(v), n_vocab);
        else snprintf(msg, sizeof msg, "tokens[%zu] must be an integer token id", i);
        return srv_error_line(400, msg);
    }
    struct wk_buf b = {0};
    bool ok = true;
    json_array_foreach(list, i, v) {
        char local[256], *buf = local;
        const int32_t id = (int32_t)json_integer_value(v);
        size_t n = wk_tokenizer_token_bytes(tok, id, true, local, sizeof local);
        if (n > sizeof local && (buf = wk_malloc(n))) n = wk_tokenizer_token_bytes(tok, id, true, buf, n);
        ok = ok && buf && wk_buf_add(&b, buf, n);
        if (buf != local) wk_free(buf);
    }
    size_t len = 0;
    char *clean = ok ? wk_utf8_sanitize(b.p ? b.p : "", b.len, &len) : NULL;
    wk_free(b.p);
    json_t *res = clean ? json_pack("{s:i, s:s%}", "status", 200, "content", clean, len) : NULL;
    wk_free(clean);
    return res ? res : srv_error_line(500, "out of memory while detokenizing");
}

/* Streams j's output to fd until the job finishes or the peer leaves. */
/* MemAvailable from /proc/meminfo in bytes, or UINT64_MAX when unknown
 * (as src/base/mapfile.c reads it for resident weights). */
uint64_t srv_mem_available(void)
{
    FILE *fp = fopen("/proc/meminfo", "re");
    if (!fp) return UINT64_MAX;
    char line[256];
    unsigned long long kb = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, fp)) found = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
    fclose(fp);
    return found ? (uint64_t)kb * 1024 : UINT64_MAX;
}

/*
 * Requests a runner computes at once: WICK_NUM_PARALLEL (also read as
 * OLLAMA_NUM_PARALLEL, which the server checked and the runner inherits),
 * capped at WK_SEQ_MAX, the sequences one context holds. Each slot holds a
 * KV cache of the full n_ctx (K and V of every layer in kv_type, f32, f16
 * or q8_0 as OLLAMA_KV_CACHE_TYPE says, an overestimate
 * on sliding-window layers, whose rings are shorter), so cache memory
 * grows N-fold. Unset, the choice is made from memory as Ollama makes it
 * (4 when it fits, else 1): RUNNER_DEFAULT_PARALLEL when that many caches
 * take at most half of MemAvailable, else the largest power of two below
 * it that does, at least 1.
 */
#define RUNNER_DEFAULT_PARALLEL 4
int32_t srv_runner_n_parallel(const struct wk_model *m, int32_t n_ctx, enum wk_dtype kv_type)
{
    const char *v = wk_getenv_alias("WICK_NUM_PARALLEL", "OLLAMA_NUM_PARALLEL");
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    if (v && !*end && n >= 1) return (int32_t)WK_MIN(n, (long)WK_SEQ_MAX);
    const struct wk_hparams *hp = wk_model_hparams(m);
    if (n_ctx <= 0) n_ctx = WK_MIN(4096, hp->n_ctx_train > 0 ? hp->n_ctx_train : 4096);
    uint64_t per_slot = 0;
    const struct wk_dtype_traits *tr = wk_dtype_traits_get(kv_type); /* F32, F16: one element a block; Q8_0: 32 */
    for (int32_t il = 0; il < hp->n_layer; il++)
        per_slot += (uint64_t)WK_MAX(wk_model_kv_values(m, il), 0) * tr->block_bytes * (uint64_t)n_ctx /
                    (uint64_t)tr->block_size;
    const uint64_t avail = srv_mem_available();
    int32_t k = RUNNER_DEFAULT_PARALLEL;
    while (k > 1 && avail != UINT64_MAX && per_slot * (uint64_t)k > avail / 2) k /= 2;
    return k;
}

