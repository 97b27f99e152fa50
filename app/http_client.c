/*
 * http_client.c - where the server is (Ollama's address parsing) and
 * requests to it through libcurl: whole answers (easy interface), and
 * streamed ones (multi interface, polled every 100 ms so that a cancel
 * closes the connection promptly even while the server is silent).
 */
#include "http_client.h"

#include "../src/base/wk_base.h"

#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_PORT "11434"

/* Go's net.SplitHostPort: "host:port" or "[v6]:port"; false when the port
 * is missing or the host has a colon outside brackets. */
static bool split_host_port(const char *hp, char *host, size_t hcap, char *port, size_t pcap)
{
    const char *colon;
    if (hp[0] == '[') {
        const char *end = strchr(hp, ']');
        if (!end || end[1] != ':') return false;
        snprintf(host, hcap, "%.*s", (int)(end - hp - 1), hp + 1);
        colon = end + 1;
    } else {
        colon = strrchr(hp, ':');
        if (!colon || memchr(hp, ':', (size_t)(colon - hp))) return false;
        snprintf(host, hcap, "%.*s", (int)(colon - hp), hp);
    }
    snprintf(port, pcap, "%s", colon + 1);
    return true;
}

/* A port Go's strconv.ParseInt takes, in 0..65535. */
static bool port_ok(const char *p)
{
    char *end;
    if (!*p) return false;
    long long n = strtoll(p, &end, 10);
    return *end == '\0' && n >= 0 && n <= 65535;
}

void cli_host_parse(const char *s, char *out, size_t cap)
{
    char buf[CLI_URL_MAX], scheme[32] = "http", host[CLI_URL_MAX], port[32];
    const char *def_port = DEFAULT_PORT;
    while (s && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) s++;
    snprintf(buf, sizeof buf, "%s", s ? s : "");
    for (size_t n = strlen(buf); n > 0 && strchr(" \t\r\n", buf[n - 1]); n--) buf[n - 1] = '\0';
    char *hp = buf, *sep = strstr(buf, "://");
    if (!sep && strcmp(buf, "ollama.com") == 0) {
        snprintf(scheme, sizeof scheme, "https");
        def_port = "443";
    } else if (sep) {
        size_t n = (size_t)(sep - buf) < sizeof scheme ? (size_t)(sep - buf) : sizeof scheme - 1;
        memcpy(scheme, buf, n);
        scheme[n] = '\0';
        hp = sep + 3;
        if (strcmp(scheme, "http") == 0) def_port = "80";
        else if (strcmp(scheme, "https") == 0) def_port = "443";
    }
    char *path = strchr(hp, '/');
    if (path) *path++ = '\0';
    if (!split_host_port(hp, host, sizeof host, port, sizeof port)) {
        size_t n = strlen(hp);
        if (n >= 2 && hp[0] == '[' && hp[n - 1] == ']') snprintf(host, sizeof host, "%.*s", (int)n - 2, hp + 1);
        else snprintf(host, sizeof host, "%s", *hp ? hp : "127.0.0.1");
        snprintf(port, sizeof port, "%s", def_port);
    }
    if (!port_ok(port)) snprintf(port, sizeof port, "%s", def_port);
    /* a bind-anything address is this machine, for a client */
    if (!*host || strcmp(host, "0.0.0.0") == 0) snprintf(host, sizeof host, "127.0.0.1");
    else if (strcmp(host, "::") == 0 || strcmp(host, "0:0:0:0:0:0:0:0") == 0) snprintf(host, sizeof host, "::1");
    const bool v6 = strchr(host, ':') != NULL;
    snprintf(out, cap, "%s://%s%s%s:%s%s%s", scheme, v6 ? "[" : "", host, v6 ? "]" : "", port, path ? "/" : "",
             path ? path : "");
    for (size_t n = strlen(out); n > 0 && out[n - 1] == '/'; n--) out[n - 1] = '\0';
}

void cli_server_url(char *out, size_t cap)
{
    cli_host_parse(wk_getenv_alias("WICK_HOST", "OLLAMA_HOST"), out, cap); /* as wick serve reads them */
}

static size_t collect(char *p, size_t size, size_t n, void *user)
{
    struct cli_http_reply *r = user;
    char *q = realloc(r->body, r->len + size * n + 1);
    if (!q) return 0;
    memcpy(q + r->len, p, size * n);
    r->body = q;
    r->len += size * n;
    r->body[r->len] = '\0';
    return size * n;
}

/* An easy handle for base+path: POST body (JSON) when not NULL. *hdr is
 * the header list to free after the request. */
static CURL *make_handle(const char *method, const char *base, const char *path, const char *body,
                         struct curl_slist **hdr)
{
    char url[CLI_URL_MAX + 256];
    snprintf(url, sizeof url, "%s%s", base, path);
    CURL *c = curl_easy_init();
    if (!c) return NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    *hdr = NULL;
    if (body) {
        *hdr = curl_slist_append(NULL, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdr);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    }
    if (method && strcmp(method, "HEAD") == 0) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (method) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    return c;
}

bool cli_http_request(const char *base, const char *path, const char *body, long timeout_ms,
                      struct cli_http_reply *out, char *err, size_t cap)
{
    return cli_http_send(NULL, base, path, body, timeout_ms, out, err, cap);
}

/* Runs request c (its headers hdr freed after) collecting the answer into
 * *out; *code gets curl's result. True when the server answered; else err
 * [cap] says why and *out is empty. */
static bool perform(CURL *c, struct curl_slist *hdr, struct cli_http_reply *out, CURLcode *code, char *err, size_t cap)
{
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hdr);
    if (code) *code = rc;
    if (rc == CURLE_OK) return true;
    snprintf(err, cap, "%s", curl_easy_strerror(rc));
    free(out->body);
    long status = out->status;
    memset(out, 0, sizeof *out);
    out->status = status;
    return false;
}

bool cli_http_send(const char *method, const char *base, const char *path, const char *body, long timeout_ms,
                   struct cli_http_reply *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    struct curl_slist *hdr;
    CURL *c = make_handle(method, base, path, body, &hdr);
    if (!c) {
        snprintf(err, cap, "cannot start an HTTP request");
        return false;
    }
    if (timeout_ms > 0) {
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    }
    bool ok = perform(c, hdr, out, NULL, err, cap);
    if (!ok) out->status = 0;
    return ok;
}

static size_t read_file_cb(char *buf, size_t size, size_t n, void *user)
{
    return fread(buf, size, n, (FILE *)user) * size;
}

bool cli_http_upload(const char *base, const char *path, FILE *f, int64_t size, struct cli_http_reply *out,
                     char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    struct curl_slist *hdr = NULL;
    CURL *c = make_handle(NULL, base, path, NULL, &hdr);
    if (!c) {
        snprintf(err, cap, "cannot start an HTTP request");
        return false;
    }
    hdr = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_file_cb);
    curl_easy_setopt(c, CURLOPT_READDATA, f);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)size);
    bool ok = perform(c, hdr, out, NULL, err, cap);
    if (!ok) out->status = 0;
    return ok;
}

enum cli_probe cli_probe_server(const char *base, long timeout_ms)
{
    struct curl_slist *hdr;
    CURL *c = make_handle(NULL, base, "/api/version", NULL, &hdr);
    if (!c) return CLI_SERVER_NONE;
    struct cli_http_reply r = {0};
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    CURLcode rc;
    char err[256];
    perform(c, hdr, &r, &rc, err, sizeof err);
    json_t *j = rc == CURLE_OK ? json_loads(r.body ? r.body : "", 0, NULL) : NULL;
    const bool up = r.status == 200 && json_is_string(json_object_get(j, "version"));
    json_decref(j);
    free(r.body);
    if (up) return CLI_SERVER_UP;
    /* nothing listens there (or no such host): no server; something that took the connection and
     * did not answer in time: a server that is there but stalled */
    return rc == CURLE_OPERATION_TIMEDOUT && r.status == 0 ? CLI_SERVER_STALLED : CLI_SERVER_NONE;
}

json_t *cli_http_json(const char *base, const char *path, const char *body, long timeout_ms, long *status,
                      char *err, size_t cap)
{
    struct cli_http_reply r;
    if (!cli_http_request(base, path, body, timeout_ms, &r, err, cap)) return NULL;
    *status = r.status;
    json_t *j = json_loads(r.body ? r.body : "", 0, NULL);
    if (!j) snprintf(err, cap, "the server's answer (HTTP %ld) is not JSON", r.status);
    free(r.body);
    return j;
}

const char *cli_error_message(json_t *j, const char *fallback)
{
    const char *m = json_string_value(json_object_get(j, "error"));
    if (!m) m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    return m && *m ? m : fallback;
}

struct stream {
    CURL *c;
    cli_line_fn on_line;
    void *user;
    struct wk_buf buf; /* the current line, or the whole body of a non-200 answer */
    bool stopped; /* on_line said stop */
    bool error;   /* a status other than 200: keep the body */
};

static size_t on_data(char *p, size_t size, size_t n, void *user)
{
    struct stream *s = user;
    size_t total = size * n;
    long status = 0;
    curl_easy_getinfo(s->c, CURLINFO_RESPONSE_CODE, &status);
    s->error = status != 200;
    if (s->error) return wk_buf_add(&s->buf, p, total) ? total : 0;
    for (size_t i = 0; i < total;) {
        char *nl = memchr(p + i, '\n', total - i);
        size_t take = nl ? (size_t)(nl - (p + i)) : total - i;
        if (!wk_buf_add(&s->buf, p + i, take)) return 0;
        i += take;
        if (!nl) break;
        i++;
        size_t len = s->buf.len;
        s->buf.len = 0;
        if (len > 0 && !s->on_line(s->user, s->buf.p, len)) {
            s->stopped = true;
            return 0;
        }
    }
    return total;
}

/* Runs the transfer, polling every 100 ms for *cancel. Returns the
 * transfer's result, or -1 when cancelled. */
static int run_multi(CURL *c, const volatile bool *cancel, CURLcode *result)
{
    CURLM *m = curl_multi_init();
    if (!m) return *result = CURLE_OUT_OF_MEMORY, 0;
    curl_multi_add_handle(m, c);
    int running = 1, rc = 0;
    *result = CURLE_OK;
    while (running) {
        if (cancel && *cancel) {
            rc = -1;
            break;
        }
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            *result = CURLE_FAILED_INIT;
            break;
        }
        if (running) curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    int left;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(m, &left)))
        if (msg->msg == CURLMSG_DONE) *result = msg->data.result;
    curl_multi_remove_handle(m, c);
    curl_multi_cleanup(m);
    return rc;
}

int cli_http_stream(const char *base, const char *path, const char *body, cli_line_fn on_line, void *user,
                    const volatile bool *cancel, long *status, char **error_body, char *err, size_t cap)
{
    *status = 0;
    *error_body = NULL;
    struct curl_slist *hdr;
    struct stream s = {.on_line = on_line, .user = user};
    s.c = make_handle(NULL, base, path, body, &hdr);
    if (!s.c) {
        snprintf(err, cap, "cannot start an HTTP request");
        return -1;
    }
    curl_easy_setopt(s.c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(s.c, CURLOPT_WRITEDATA, &s);
    CURLcode result;
    int rc = run_multi(s.c, cancel, &result);
    curl_easy_getinfo(s.c, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(s.c); /* closes the connection: the server cancels the generation */
    curl_slist_free_all(hdr);
    if (rc < 0 || s.stopped) {
        wk_free(s.buf.p);
        return 1;
    }
    if (result != CURLE_OK) {
        snprintf(err, cap, "%s", curl_easy_strerror(result));
        wk_free(s.buf.p);
        return -1;
    }
    if (*status != 200) {
        *error_body = s.buf.p;
        return 0;
    }
    /* a last line without its newline */
    if (s.buf.len > 0 && !on_line(user, s.buf.p, s.buf.len)) rc = 1;
    wk_free(s.buf.p);
    return rc;
}
