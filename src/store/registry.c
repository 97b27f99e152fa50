/*
 * registry.c - the HTTP side of `wick pull` and `wick push`
 * (registry_internal.h): one libcurl easy handle per operation, its
 * connections reused from request to request; the Bearer-token dance of
 * distribution's docs/spec/auth/token.md (a 401 with `WWW-Authenticate:
 * Bearer realm="...",service="...",scope="..."` answered by GET
 * realm?service=...&scope=... with no credentials, whose JSON {"token"}
 * or {"access_token"} goes out as `Authorization: Bearer` on the request
 * repeated once); errors worded for a person, naming the registry, the
 * request and the registry's own error message (the spec's {"errors":
 * [{"code", "message", "detail"}]}).
 *
 * Only the registry's host gets the token: curl keeps a custom
 * Authorization header off redirects to other hosts (a blob store's
 * signed URL), and an upload Location on another host is sent none.
 * https only, unless the caller allows plain http (`insecure`), for the
 * requests and for every redirect.
 */
#include "registry_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* libcurl's process-wide initialisation, done once (curl_global_init is
 * not safe to race with itself): the one mutable static here. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* Whether s is a repository path component a registry takes (the OCI
 * distribution spec: [a-z0-9]+ ((\.|_|__|-+) [a-z0-9]+)*). */
static bool oci_component_ok(const char *s)
{
    for (;;) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9'))) return false;
        while ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')) s++;
        if (!*s) return true;
        if (*s == '.') s++;
        else if (*s == '_') s += s[1] == '_' ? 2 : 1;
        else if (*s == '-')
            while (*s == '-') s++;
        else return false;
    }
}

enum wk_status wk__reg_open(struct wk__reg *r, const struct wk_model_name *n, const struct wk_registry_opts *o,
                            struct wk_error *err)
{
    /* a name the store takes but no registry does (upper case, a doubled
     * '.'): said before anything is sent, not as the registry's 404 */
    if (!oci_component_ok(n->ns) || !oci_component_ok(n->name))
        return wk_error_set(err, WK_E_INVALID, "'%s/%s' cannot name a registry repository: its parts must be lower-case "
                            "letters and digits joined by '.', '_', '__' or '-' (wick cp the model to such a name first)",
                            n->ns, n->name);
    static const struct wk_registry_opts none;
    memset(r, 0, sizeof *r);
    r->o = o ? o : &none;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return wk_error_set(err, WK_E_INTERNAL, "libcurl cannot start: %s", curl_easy_strerror(curl_init_rc));
    if (!(r->curl = curl_easy_init())) return wk_error_set(err, WK_E_NOMEM, "out of memory (libcurl)");
    snprintf(r->host, sizeof r->host, "%s", n->host);
    snprintf(r->base, sizeof r->base, "%s://%s", r->o->insecure ? "http" : "https", n->host);
    snprintf(r->repo, sizeof r->repo, "%s/%s", n->ns, n->name);
    snprintf(r->tag, sizeof r->tag, "%s", n->tag);
    wk_model_name_format(n, r->shown, sizeof r->shown);
    return WK_OK;
}

void wk__reg_close(struct wk__reg *r)
{
    if (r->curl) curl_easy_cleanup(r->curl);
    wk_free(r->token);
    r->curl = NULL;
    r->token = NULL;
}

void wk__reg_req_deinit(struct wk__reg_req *q)
{
    wk_free(q->resp.p);
    memset(&q->resp, 0, sizeof q->resp);
}

bool wk__reg_cancelled(const struct wk__reg *r)
{
    return r->o->cancelled && r->o->cancelled(r->o->cancel_user);
}

void wk__reg_emit(struct wk__reg *r, const char *status, const char *digest, uint64_t total, uint64_t completed,
                  bool force)
{
    if (!r->o->progress) return;
    int64_t now = wk_time_ns();
    if (digest && !force && completed < total && now - r->last_emit_ns < 60 * INT64_C(1000000)) return;
    if (digest) r->last_emit_ns = now;
    struct wk_registry_progress p = {status, digest, total, completed};
    r->o->progress(r->o->progress_user, &p);
}

json_t *wk_registry_progress_json(const struct wk_registry_progress *p)
{
    json_t *o = json_pack("{s:s}", "status", p->status ? p->status : "");
    if (!o) return NULL;
    if (p->digest) json_object_set_new(o, "digest", json_string(p->digest));
    if (p->total) json_object_set_new(o, "total", json_integer((json_int_t)p->total));
    if (p->completed) json_object_set_new(o, "completed", json_integer((json_int_t)p->completed));
    return o;
}

/* ------------------------------------------------------------ callbacks */

/* Copies header line p[n] into out[cap] when it is header `name`
 * (case-insensitive): the value, trimmed. A value too long for out is
 * dropped (out empty): a cut Location would be a wrong URL. */
static void header_value(const char *p, size_t n, const char *name, char *out, size_t cap)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(p, name, k) != 0 || p[k] != ':') return;
    p += k + 1, n -= k + 1;
    while (n && (*p == ' ' || *p == '\t')) p++, n--;
    while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    if (n >= cap) n = 0;
    memcpy(out, p, n);
    out[n] = '\0';
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *user)
{
    struct wk__reg_req *q = user;
    size_t n = size * nmemb;
    if (n >= 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new response (after a redirect or a 100) */
        q->location[0] = q->content_range[0] = q->www_auth[0] = '\0';
        return n;
    }
    header_value(p, n, "location", q->location, sizeof q->location);
    header_value(p, n, "content-range", q->content_range, sizeof q->content_range);
    header_value(p, n, "www-authenticate", q->www_auth, sizeof q->www_auth);
    return n;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *user)
{
    struct wk__reg_req *q = user;
    size_t n = size * nmemb;
    if (wk__reg_cancelled(q->reg)) {
        q->cancelled = true;
        return 0;
    }
    long code = 0;
    curl_easy_getinfo(q->reg->curl, CURLINFO_RESPONSE_CODE, &code);
    if (q->sink && code >= 200 && code < 300) return q->sink(q->sink_user, p, n);
    if (q->resp.len + n > WK__REG_MAX_BODY || !wk_buf_add(&q->resp, p, n)) {
        q->too_big = true;
        return 0;
    }
    return n;
}

static size_t on_read(char *buf, size_t size, size_t nitems, void *user)
{
    struct wk__reg_req *q = user;
    if (wk__reg_cancelled(q->reg)) {
        q->cancelled = true;
        return CURL_READFUNC_ABORT;
    }
    uint64_t total = q->body_file ? q->body_size : q->body_len;
    size_t n = (size_t)WK_MIN((uint64_t)(size * nitems), total - q->body_off);
    if (n && q->body_file) {
        ssize_t got;
        do got = pread(q->body_fd, buf, n, (off_t)q->body_off);
        while (got < 0 && errno == EINTR);
        if (got <= 0) {
            q->read_errno = got < 0 ? errno : EIO;
            return CURL_READFUNC_ABORT;
        }
        n = (size_t)got;
    } else if (n) {
        memcpy(buf, (const char *)q->body + q->body_off, n);
    }
    q->body_off += n;
    if (q->sent) q->sent(q->sink_user, q->body_off);
    return n;
}

/* curl rewinds a body it must send again (a redirect, an auth retry). */
static int on_seek(void *user, curl_off_t off, int origin)
{
    struct wk__reg_req *q = user;
    uint64_t total = q->body_file ? q->body_size : q->body_len;
    if (origin != SEEK_SET || off < 0 || (uint64_t)off > total) return CURL_SEEKFUNC_CANTSEEK;
    q->body_off = (uint64_t)off;
    return CURL_SEEKFUNC_OK;
}

/* Called at least once a second, even while nothing moves. */
static int on_xfer(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    struct wk__reg_req *q = user;
    if (!wk__reg_cancelled(q->reg)) return 0;
    q->cancelled = true;
    return 1;
}

/* ------------------------------------------------------------ requests */

/* One attempt at q, with the Bearer token when token is not NULL. */
/* WK__REG_SMALL_TIMEOUT_S, or WICK_REGISTRY_TIMEOUT (whole seconds, 1 to
 * 86400) when set. */
static long small_timeout_s(void)
{
    const char *e = getenv("WICK_REGISTRY_TIMEOUT");
    long v = e ? atol(e) : 0;
    return v >= 1 && v <= 86400 ? v : WK__REG_SMALL_TIMEOUT_S;
}

static CURLcode perform_once(struct wk__reg *r, struct wk__reg_req *q, const char *token,
                             char errbuf[CURL_ERROR_SIZE])
{
    CURL *c = r->curl;
    curl_easy_reset(c); /* the options, not the connections */
    q->reg = r;
    q->status = 0;
    q->location[0] = q->content_range[0] = q->www_auth[0] = '\0';
    q->resp.len = 0;
    q->body_off = 0;
    q->read_errno = 0;
    q->too_big = q->cancelled = false;
    errbuf[0] = '\0';
    const char *protocols = r->o->insecure ? "http,https" : "https";
    curl_easy_setopt(c, CURLOPT_URL, q->url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, protocols);
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, protocols);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "wick (ollama-compatible)");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    /* a transfer stalled for two minutes is given up (and resumed by the next pull) */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 120L);
    if (!q->sink && !q->body_file) curl_easy_setopt(c, CURLOPT_TIMEOUT, small_timeout_s());
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, q);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, q);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_xfer);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, q);
    struct curl_slist *h = NULL;
    char line[4200];
    if (q->accept) snprintf(line, sizeof line, "Accept: %s", q->accept), h = curl_slist_append(h, line);
    if (q->content_type)
        snprintf(line, sizeof line, "Content-Type: %s", q->content_type), h = curl_slist_append(h, line);
    if (token) snprintf(line, sizeof line, "Authorization: Bearer %.4000s", token), h = curl_slist_append(h, line);
    if (h) curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    bool get = strcmp(q->method, "GET") == 0, head = strcmp(q->method, "HEAD") == 0;
    if (get || head) {
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    }
    if (head) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    char range[48];
    if (get && q->range_from) {
        snprintf(range, sizeof range, "%llu-", (unsigned long long)q->range_from);
        curl_easy_setopt(c, CURLOPT_RANGE, range);
    }
    if (strcmp(q->method, "POST") == 0 || strcmp(q->method, "PUT") == 0) {
        if (strcmp(q->method, "POST") == 0) curl_easy_setopt(c, CURLOPT_POST, 1L);
        else curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        uint64_t total = q->body_file ? q->body_size : q->body_len;
        curl_easy_setopt(c, strcmp(q->method, "POST") == 0 ? CURLOPT_POSTFIELDSIZE_LARGE : CURLOPT_INFILESIZE_LARGE,
                         (curl_off_t)total);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, q);
        curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(c, CURLOPT_SEEKDATA, q);
    }
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &q->status);
    curl_slist_free_all(h);
    return rc;
}

/* The path of url (no scheme, host or query: an upload's query holds its
 * state), printable, into out[cap]. */
static void url_path(const char *url, char *out, size_t cap)
{
    const char *p = strstr(url, "://");
    p = p ? strchr(p + 3, '/') : url;
    if (!p) p = "/";
    wk_str_printable(p, strcspn(p, "?#"), out, cap);
}

/* The host[:port] of url, printable, into out[cap]. */
static void url_host(const char *url, char *out, size_t cap)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    wk_str_printable(p, strcspn(p, "/?#"), out, cap);
}

static enum wk_status transport_error(struct wk__reg *r, const struct wk__reg_req *q, CURLcode rc,
                                      const char *errbuf, struct wk_error *err)
{
    long os = 0;
    curl_easy_getinfo(r->curl, CURLINFO_OS_ERRNO, &os);
    char host[160], path[300], detail[CURL_ERROR_SIZE + 8];
    url_host(q->url, host, sizeof host);
    url_path(q->url, path, sizeof path);
    wk_str_printable(errbuf[0] ? errbuf : curl_easy_strerror(rc), strlen(errbuf[0] ? errbuf : curl_easy_strerror(rc)),
                     detail, sizeof detail);
    if (q->read_errno)
        return wk_error_set(err, WK_E_IO, "cannot read the blob being uploaded: %s", strerror(q->read_errno));
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
        return wk_error_set(err, WK_E_IO, "cannot connect to the registry at %s: %s", host,
                            os ? strerror((int)os) : detail);
    case CURLE_COULDNT_RESOLVE_HOST:
        return wk_error_set(err, WK_E_IO, "cannot resolve the registry's host %s: %s", host, detail);
    case CURLE_OPERATION_TIMEDOUT:
        return wk_error_set(err, WK_E_IO, "registry %s: %s %s: timed out (%s)", host, q->method, path, detail);
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
        return wk_error_set(err, WK_E_IO, "registry %s: TLS failed: %s%s", host, detail,
                            r->o->insecure ? "" : " (a registry that serves plain http needs --insecure)");
    case CURLE_UNSUPPORTED_PROTOCOL:
        return wk_error_set(err, WK_E_IO, "registry %s: %s %s: %s%s", host, q->method, path, detail,
                            r->o->insecure ? "" : " (plain http is allowed with --insecure only)");
    default:
        return wk_error_set(err, WK_E_IO, "registry %s: %s %s: %s", host, q->method, path, detail);
    }
}

/* Value of parameter key in a challenge's `k="v", k2=v2` list, into
 * out[cap] (cut to fit); false when absent. */
static bool challenge_param(const char *s, const char *key, char *out, size_t cap)
{
    size_t k = strlen(key);
    const char *p = s;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        const char *name = p;
        while (*p && *p != '=' && *p != ',') p++;
        if (*p != '=') continue;
        size_t name_len = (size_t)(p - name), o = 0;
        bool want = name_len == k && strncasecmp(name, key, k) == 0;
        p++;
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1]) p++;
                if (want && o + 1 < cap) out[o++] = *p;
            }
            if (*p == '"') p++;
        } else {
            for (; *p && *p != ','; p++)
                if (want && o + 1 < cap) out[o++] = *p;
        }
        if (want) {
            out[o] = '\0';
            return true;
        }
    }
    return false;
}

/* Appends "&name=<value escaped>" (or "?..." first) to b. */
static bool add_query(struct wk__reg *r, struct wk_buf *b, const char *name, const char *value)
{
    char *e = curl_easy_escape(r->curl, value, 0);
    if (!e) return false;
    char *part = wk_asprintf("%s%s=%s", strchr(b->p ? b->p : "", '?') ? "&" : "?", name, e);
    curl_free(e);
    bool ok = part && wk_buf_add(b, part, strlen(part));
    wk_free(part);
    return ok;
}

/* Why a token service said no, for a person. */
static const char *token_hint(const char *realm_host)
{
    if (strstr(realm_host, "ollama.ai") || strstr(realm_host, "ollama.com"))
        return " (Ollama's registry wants requests signed with an Ollama key, which wick does not do)";
    return " (wick asks for anonymous tokens only: no logins)";
}

/* Answers the Bearer challenge: an anonymous token from its realm into
 * r->token. */
static enum wk_status fetch_token(struct wk__reg *r, const char *challenge, struct wk_error *err)
{
    char shown[200];
    wk_str_printable(challenge, strlen(challenge), shown, sizeof shown);
    if (strncasecmp(challenge, "Bearer ", 7) != 0)
        return wk_error_set(err, WK_E_PERMISSION,
                            "registry %s asks for credentials (%s); wick pulls and pushes anonymously only", r->host,
                            shown);
    char realm[1024] = "", service[256] = "", scope[1024] = "";
    challenge_param(challenge + 7, "realm", realm, sizeof realm);
    challenge_param(challenge + 7, "service", service, sizeof service);
    challenge_param(challenge + 7, "scope", scope, sizeof scope);
    if (!realm[0])
        return wk_error_set(err, WK_E_PERMISSION, "registry %s: a Bearer challenge with no realm (%s)", r->host, shown);
    struct wk_buf url = {0};
    bool ok = wk_buf_add(&url, realm, strlen(realm));
    if (ok && service[0]) ok = add_query(r, &url, "service", service);
    for (char *save = NULL, *sc = strtok_r(scope, " ", &save); ok && sc; sc = strtok_r(NULL, " ", &save))
        ok = add_query(r, &url, "scope", sc);
    if (!ok) {
        wk_free(url.p);
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    struct wk__reg_req t = {.method = "GET", .url = url.p, .accept = "application/json"};
    char errbuf[CURL_ERROR_SIZE], realm_host[160];
    url_host(url.p, realm_host, sizeof realm_host);
    CURLcode rc = perform_once(r, &t, NULL, errbuf);
    enum wk_status st = WK_OK;
    if (t.cancelled) st = wk_error_set(err, WK_E_CANCELLED, "cancelled");
    else if (rc != CURLE_OK) st = wk_error_prefix(err, transport_error(r, &t, rc, errbuf, err), "token service: ");
    else if (t.status != 200) {
        char body[200];
        wk_str_printable(t.resp.p ? t.resp.p : "", t.resp.len, body, sizeof body);
        st = wk_error_set(err, WK_E_PERMISSION, "registry %s: the token service at %s refused a token (HTTP %ld%s%s)%s",
                          r->host, realm_host, t.status, body[0] ? ": " : "", body, token_hint(realm_host));
    } else {
        json_t *j = json_loadb(t.resp.p ? t.resp.p : "", t.resp.len, 0, NULL);
        const char *tok = json_string_value(json_object_get(j, "token"));
        if (!tok) tok = json_string_value(json_object_get(j, "access_token"));
        if (!tok || !*tok || strlen(tok) > 16384 || strpbrk(tok, "\r\n"))
            st = wk_error_set(err, WK_E_PERMISSION, "registry %s: the token service at %s answered no usable token",
                              r->host, realm_host);
        else {
            wk_free(r->token);
            if (!(r->token = wk_strdup(tok))) st = wk_error_set(err, WK_E_NOMEM, "out of memory");
        }
        json_decref(j);
    }
    wk__reg_req_deinit(&t);
    wk_free(url.p);
    return st;
}

enum wk_status wk__reg_perform(struct wk__reg *r, struct wk__reg_req *q, struct wk_error *err)
{
    size_t nb = strlen(r->base);
    bool ours = strncmp(q->url, r->base, nb) == 0 && q->url[nb] == '/';
    for (int round = 0;; round++) {
        char errbuf[CURL_ERROR_SIZE];
        CURLcode rc = perform_once(r, q, ours ? r->token : NULL, errbuf);
        if (q->cancelled || (rc != CURLE_OK && wk__reg_cancelled(r)))
            return wk_error_set(err, WK_E_CANCELLED, "cancelled");
        if (q->too_big) {
            char path[300];
            url_path(q->url, path, sizeof path);
            return wk_error_set(err, WK_E_FORMAT, "registry %s: %s %s: an answer larger than %zu MiB", r->host,
                                q->method, path, WK__REG_MAX_BODY >> 20);
        }
        if (rc != CURLE_OK) return transport_error(r, q, rc, errbuf, err);
        if (q->status != 401 || round > 0 || !ours || !q->www_auth[0]) return WK_OK;
        char challenge[sizeof q->www_auth];
        memcpy(challenge, q->www_auth, sizeof challenge);
        enum wk_status st = fetch_token(r, challenge, err);
        if (st) return st;
    }
}

enum wk_status wk__reg_http_error(struct wk__reg *r, const struct wk__reg_req *q, const char *what,
                                  struct wk_error *err)
{
    struct wk_buf m = {0};
    json_t *j = q->resp.len ? json_loadb(q->resp.p, q->resp.len, 0, NULL) : NULL;
    json_t *errs = json_object_get(j, "errors"), *e;
    size_t i;
    json_array_foreach(errs, i, e) {
        if (i == 3) break;
        const char *msg = json_string_value(json_object_get(e, "message"));
        const char *code = json_string_value(json_object_get(e, "code"));
        char *part = wk_asprintf("%s%s%s%s%s", i ? "; " : "", msg ? msg : "", msg && code ? " (" : "",
                                 code ? code : "", msg && code ? ")" : "");
        if (part) wk_buf_add(&m, part, strlen(part));
        wk_free(part);
    }
    const char *single = json_string_value(json_object_get(j, "error"));
    if (!m.len && single) wk_buf_add(&m, single, strlen(single));
    /* a plain-text body says something; an HTML page (a web server that is not a registry) does not */
    if (!m.len && !j && q->resp.len && q->resp.p[0] != '<')
        wk_buf_add(&m, q->resp.p, WK_MIN(q->resp.len, (size_t)200));
    json_decref(j);
    /* one line: a plain-text body's newlines become spaces, trailing ones go */
    for (size_t k = 0; k < m.len; k++)
        if (m.p[k] == '\n' || m.p[k] == '\r' || m.p[k] == '\t') m.p[k] = ' ';
    while (m.len && m.p[m.len - 1] == ' ') m.len--;
    char shown[300];
    wk_str_printable(m.p ? m.p : "", m.len, shown, sizeof shown);
    wk_free(m.p);
    enum wk_status st = q->status == 404                       ? WK_E_NOT_FOUND
                        : q->status == 401 || q->status == 403 ? WK_E_PERMISSION
                                                               : WK_E_IO;
    const char *hint = st == WK_E_PERMISSION ? token_hint(r->host) : "";
    return wk_error_set(err, st, "registry %s: %s: HTTP %ld%s%s%s", r->host, what, q->status, shown[0] ? ": " : "",
                        shown, hint);
}
