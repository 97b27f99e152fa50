/*
 * cmd_serve.c - `wick serve` (the HTTP server), `wick runner` (internal:
 * the per-model process the server starts), and the clients of a running
 * server: `wick ps` and `wick stop MODEL` (http_client.h).
 */
#include "cli.h"
#include "http_client.h"

#include "../src/io/wk_options.h"

#include "../src/server/wk_server.h"
#include "../src/store/wk_store.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *host_env(void)
{
    const char *h = wk_getenv_alias("WICK_HOST", "OLLAMA_HOST");
    return h ? h : "127.0.0.1:11434";
}

int cmd_serve(int argc, char **argv)
{
    const char *ap = getenv("WICK_ALLOW_PATHS");
    struct wk_serve_opts o = {.host = host_env(), .allow_paths = ap && *ap && strcmp(ap, "0") != 0};
    char dir[4096];
    wk_store_default_dir(dir, sizeof dir);
    o.models = dir;
    for (int i = 1; i < argc; i++) {
        const char *v;
        bool bad = false;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("Usage: wick serve [--threads N] [--allow-paths]\n\n"
                   "Serves the Ollama API and the OpenAI-compatible API on OLLAMA_HOST or\n"
                   "WICK_HOST (default 127.0.0.1:11434; [scheme://]host[:port], IPv6 as\n"
                   "[::1]:11434). Models are the store's in OLLAMA_MODELS or WICK_MODELS\n"
                   "(default ~/.wick/models; wick create, wick list). One runner process per\n"
                   "loaded model; OLLAMA_MAX_LOADED_MODELS (default 3) at once;\n"
                   "OLLAMA_KEEP_ALIVE (default 5m), OLLAMA_CONTEXT_LENGTH (default 4096),\n"
                   "OLLAMA_NUM_PARALLEL (the requests one model computes at once; unset,\n"
                   "4, 2 or 1 as memory allows), OLLAMA_KV_CACHE_TYPE (f32, the default;\n"
                   "f16: half the KV cache memory; q8_0: about a quarter; q4_0 is refused).\n"
                   "0 is unset for the three counts, as Ollama reads them. Each WICK_\n"
                   "name wins over its OLLAMA_ one.\n\n"
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
            if (bad || !cli_parse_i64("serve", "--threads", v, 1, WK_MAX_THREADS, &t)) return WK_EXIT_USAGE;
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
            if (bad || !cli_parse_i64("runner", "--num-ctx", v, 0, 1 << 24, &n)) return WK_EXIT_USAGE;
            o.n_ctx = (int32_t)n;
        } else if (cli_opt_value(argc, argv, &i, "--threads", &v, &bad, "runner")) {
            if (bad || !cli_parse_i64("runner", "--threads", v, 0, WK_MAX_THREADS, &n)) return WK_EXIT_USAGE;
            o.n_threads = (int32_t)n;
        } else if (cli_opt_value(argc, argv, &i, "--parent", &v, &bad, "runner")) {
            if (bad || !cli_parse_i64("runner", "--parent", v, 0, INT32_MAX, &n)) return WK_EXIT_USAGE;
            o.parent = (int32_t)n;
        } else {
            if (!bad) fprintf(stderr, "wick runner: unknown option '%s'\n", argv[i]);
            return WK_EXIT_USAGE;
        }
        if (bad) return WK_EXIT_USAGE; /* an option without its value (said) */
    }
    if (!o.model || !o.socket) {
        fprintf(stderr, "wick runner: internal command; needs --model and --socket\n");
        return WK_EXIT_USAGE;
    }
    return wk_runner_main(&o);
}

/* A request to the running server (http_client.h: OLLAMA_HOST, else
 * WICK_HOST); its JSON answer or NULL (message printed). */
static json_t *call_server(const char *cmd, const char *path, const char *body, long *status)
{
    char url[CLI_URL_MAX], err[256];
    cli_server_url(url, sizeof url);
    json_t *j = cli_http_json(url, path, body, 0, status, err, sizeof err);
    if (!j) fprintf(stderr, "wick %s: cannot reach the server at %s (is `wick serve` running?): %s\n", cmd, url, err);
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
    /* as `ollama ps`: NAME ID SIZE PROCESSOR CONTEXT UNTIL (all on the CPU here) */
    json_t *models = json_object_get(j, "models");
    const size_t n = json_array_size(models);
    const char **cells = calloc(6 * (n + 1), sizeof *cells);
    char(*text)[4][64] = calloc(n + 1, sizeof *text);
    if (!cells || !text) {
        free(cells), free(text), json_decref(j);
        fprintf(stderr, "wick ps: out of memory\n");
        return WK_EXIT_ERROR;
    }
    const char *head[6] = {"NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "UNTIL"};
    memcpy(cells, head, sizeof head);
    size_t i;
    json_t *m;
    json_array_foreach(models, i, m) {
        char(*t)[64] = text[i];
        snprintf(t[0], sizeof t[0], "%.12s", json_string_value(json_object_get(m, "digest")) ?: "");
        cli_human_bytes(json_integer_value(json_object_get(m, "size")), t[1], sizeof t[1]);
        snprintf(t[2], sizeof t[2], "%lld", (long long)json_integer_value(json_object_get(m, "context_length")));
        const char *until = json_string_value(json_object_get(m, "expires_at"));
        cli_human_time(until, "Never", t[3], sizeof t[3]);
        if (strstr(t[3], " ago")) snprintf(t[3], sizeof t[3], "Stopping...");
        const char **row = cells + 6 * (i + 1);
        row[0] = json_string_value(json_object_get(m, "name")) ?: "";
        row[1] = t[0], row[2] = t[1], row[3] = "100% CPU", row[4] = t[2], row[5] = t[3];
    }
    cli_print_table(cells, (int)n + 1, 6);
    free(cells), free(text);
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
