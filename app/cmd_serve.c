/*
 * cmd_serve.c - `wick serve` (the HTTP server), `wick runner` (internal:
 * the per-model process the server starts), and the clients of a running
 * server: `wick ps` and `wick stop MODEL` (libcurl).
 */
#include "cli.h"

#include "../src/io/wk_options.h"

#include "../src/server/wk_server.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *host_env(void)
{
    const char *h = getenv("WICK_HOST");
    return h && *h ? h : "127.0.0.1:11434";
}

int cmd_serve(int argc, char **argv)
{
    const char *ap = getenv("WICK_ALLOW_PATHS");
    struct wk_serve_opts o = {.host = host_env(), .allow_paths = ap && *ap && strcmp(ap, "0") != 0};
    char dir[4096];
    const char *models = getenv("WICK_MODELS");
    if (!models || !*models) {
        const char *home = getenv("HOME");
        snprintf(dir, sizeof dir, "%s/.wick/models", home ? home : ".");
        models = dir;
    }
    o.models = models;
    for (int i = 1; i < argc; i++) {
        const char *v;
        bool bad = false;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("Usage: wick serve [--threads N] [--allow-paths]\n\n"
                   "Serves the Ollama API and the OpenAI-compatible API on WICK_HOST\n"
                   "(default 127.0.0.1:11434). Models are the store's in WICK_MODELS\n"
                   "(default ~/.wick/models; wick create, wick list). One runner process per\n"
                   "loaded model; WICK_MAX_LOADED_MODELS (default 3) at once.\n\n"
                   "On a loopback address only requests whose Host names this machine are\n"
                   "served; a browser's Origin must be localhost, 127.0.0.1, 0.0.0.0, app://,\n"
                   "file://, tauri:// or one of OLLAMA_ORIGINS / WICK_ORIGINS (comma-separated,\n"
                   "\"*\" a wildcard).\n\n"
                   "--allow-paths (or WICK_ALLOW_PATHS=1): /api/create may name files and\n"
                   "folders of this machine (\"from\": a path, \"quantize\"); off by default,\n"
                   "when \"from\" must name a stored model.\n");
            return WK_EXIT_OK;
        }
        if (strcmp(argv[i], "--allow-paths") == 0) {
            o.allow_paths = true;
            continue;
        }
        if (cli_opt_value(argc, argv, &i, "--threads", &v, &bad, "serve")) {
            int64_t t;
            if (!cli_parse_i64("serve", "--threads", v, 1, WK_MAX_THREADS, &t)) return WK_EXIT_USAGE;
            o.n_threads = (int32_t)t;
            continue;
        }
        if (bad) return WK_EXIT_USAGE;
        fprintf(stderr, "wick serve: unknown option '%s'\n", argv[i]);
        return WK_EXIT_USAGE;
    }
    return wk_serve_main(&o);
}

int cmd_runner(int argc, char **argv)
{
    struct wk_runner_opts o = {0};
    for (int i = 1; i < argc; i++) {
        const char *v;
        bool bad = false;
        int64_t n;
        if (cli_opt_value(argc, argv, &i, "--model", &v, &bad, "runner")) o.model = v;
        else if (cli_opt_value(argc, argv, &i, "--socket", &v, &bad, "runner")) o.socket = v;
        else if (cli_opt_value(argc, argv, &i, "--draft", &v, &bad, "runner")) o.draft = v;
        else if (cli_opt_value(argc, argv, &i, "--num-ctx", &v, &bad, "runner")) {
            if (!cli_parse_i64("runner", "--num-ctx", v, 0, 1 << 24, &n)) return WK_EXIT_USAGE;
            o.n_ctx = (int32_t)n;
        } else if (cli_opt_value(argc, argv, &i, "--threads", &v, &bad, "runner")) {
            if (!cli_parse_i64("runner", "--threads", v, 0, WK_MAX_THREADS, &n)) return WK_EXIT_USAGE;
            o.n_threads = (int32_t)n;
        } else if (cli_opt_value(argc, argv, &i, "--parent", &v, &bad, "runner")) {
            if (!cli_parse_i64("runner", "--parent", v, 0, INT32_MAX, &n)) return WK_EXIT_USAGE;
            o.parent = (int32_t)n;
        } else {
            if (!bad) fprintf(stderr, "wick runner: unknown option '%s'\n", argv[i]);
            return WK_EXIT_USAGE;
        }
    }
    if (!o.model || !o.socket) {
        fprintf(stderr, "wick runner: internal command; needs --model and --socket\n");
        return WK_EXIT_USAGE;
    }
    return wk_runner_main(&o);
}

static size_t collect(char *p, size_t size, size_t n, void *user)
{
    struct {
        char *p;
        size_t len;
    } *b = user;
    char *q = realloc(b->p, b->len + size * n + 1);
    if (!q) return 0;
    memcpy(q + b->len, p, size * n);
    b->p = q;
    b->len += size * n;
    b->p[b->len] = '\0';
    return size * n;
}

/* A request to the running server; its JSON answer or NULL (message printed). */
static json_t *call_server(const char *cmd, const char *path, const char *body, long *status)
{
    char url[512];
    const char *h = host_env();
    if (strncmp(h, "http://", 7) == 0) h += 7;
    snprintf(url, sizeof url, "http://%s%s", h, path);
    struct {
        char *p;
        size_t len;
    } b = {0};
    CURL *c = curl_easy_init();
    if (!c) return NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    struct curl_slist *hdr = NULL;
    if (body) {
        hdr = curl_slist_append(NULL, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    }
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hdr);
    json_t *j = NULL;
    if (rc != CURLE_OK)
        fprintf(stderr, "wick %s: cannot reach the server at %s (is `wick serve` running?): %s\n",
                cmd, host_env(), curl_easy_strerror(rc));
    else if (!(j = json_loads(b.p ? b.p : "", 0, NULL)))
        fprintf(stderr, "wick %s: the server's answer is not JSON\n", cmd);
    free(b.p);
    return j;
}

int cmd_ps(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "Usage: wick ps\n");
        return WK_EXIT_USAGE;
    }
    long status = 0;
    json_t *j = call_server("ps", "/api/ps", NULL, &status);
    if (!j) return WK_EXIT_ERROR;
    printf("%-32s %-10s %-8s %-10s %s\n", "NAME", "SIZE", "CONTEXT", "STATE", "UNTIL");
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(j, "models"), i, m) {
        json_t *w = json_object_get(m, "wick");
        char size[32];
        snprintf(size, sizeof size, "%.0f MB", (double)json_integer_value(json_object_get(m, "size")) / 1e6);
        printf("%-32s %-10s %-8lld %-10s %s\n", json_string_value(json_object_get(m, "name")), size,
               (long long)json_integer_value(json_object_get(m, "context_length")),
               json_is_true(json_object_get(w, "busy")) ? "busy" : "idle",
               json_string_value(json_object_get(m, "expires_at")));
    }
    json_decref(j);
    return WK_EXIT_OK;
}

int cmd_stop(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "Usage: wick stop MODEL\n");
        return WK_EXIT_USAGE;
    }
    json_t *req = json_pack("{s:s, s:s, s:i}", "model", argv[1], "prompt", "", "keep_alive", 0);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    long status = 0;
    json_t *j = call_server("stop", "/api/generate", body, &status);
    free(body);
    if (!j) return WK_EXIT_ERROR;
    int rc = WK_EXIT_OK;
    if (status != 200) {
        fprintf(stderr, "wick stop: %s\n", json_string_value(json_object_get(j, "error")));
        rc = WK_EXIT_ERROR;
    }
    json_decref(j);
    return rc;
}
