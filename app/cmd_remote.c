/*
 * cmd_remote.c - wick list / show / cp / rm through a running server, as
 * ollama's commands are clients of the server at OLLAMA_HOST (cmd/cmd.go:
 * ListHandler -> /api/tags, ShowHandler -> /api/show, CopyHandler ->
 * /api/copy, DeleteHandler -> DELETE /api/delete): so a server with a
 * store of its own (a service, a container, a remote host) is the one the
 * commands show and change. Used when this environment names no store
 * (neither WICK_MODELS nor OLLAMA_MODELS: a store named here is read
 * directly, as the tests and a second store want) and a server answers
 * GET /api/version at WICK_HOST / OLLAMA_HOST / 127.0.0.1:11434 within
 * 300 ms (as wick run decides); else the commands read the store
 * themselves (cmd_create.c).
 */
#include "cli.h"
#include "http_client.h"

#include "../src/io/wk_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REMOTE_PROBE_MS 300
#define REMOTE_TIMEOUT_MS (10 * 60 * 1000L) /* a copy or a show of a big store: bounded, not short */

bool cli_remote_store(char *url, size_t cap)
{
    const char *a = getenv("WICK_MODELS"), *b = getenv("OLLAMA_MODELS");
    if ((a && *a) || (b && *b)) return false;
    cli_server_url(url, cap);
    long status = 0;
    char err[256];
    json_t *j = cli_http_json(url, "/api/version", NULL, REMOTE_PROBE_MS, &status, err, sizeof err);
    bool ok = status == 200 && json_is_string(json_object_get(j, "version"));
    json_decref(j);
    return ok;
}

/* body (stolen) sent with method to path; the JSON answer (owned; an
 * empty 200 body gives {}) and its status, or NULL after printing why. */
static json_t *call(const char *cmd, const char *url, const char *method, const char *path, json_t *body,
                    long *status)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    struct cli_http_reply r;
    char err[256];
    bool ok = cli_http_send(method, url, path, text, REMOTE_TIMEOUT_MS, &r, err, sizeof err);
    free(text);
    if (!ok) {
        fprintf(stderr, "wick %s: the server at %s: %s\n", cmd, url, err);
        return NULL;
    }
    *status = r.status;
    json_t *j = r.len ? json_loads(r.body, 0, NULL) : json_object();
    free(r.body);
    if (!j) fprintf(stderr, "wick %s: the server's answer (HTTP %ld) is not JSON\n", cmd, r.status);
    return j;
}

/* An answer that is not 200: its error printed; true when it was one. */
static bool refused(const char *cmd, json_t *j, long status)
{
    if (status == 200) return false;
    char fallback[64];
    snprintf(fallback, sizeof fallback, "HTTP %ld", status);
    fprintf(stderr, "wick %s: %s\n", cmd, cli_error_message(j, fallback));
    return true;
}

json_t *remote_list(const char *url)
{
    long status = 0;
    json_t *j = call("list", url, NULL, "/api/tags", NULL, &status);
    if (!j || refused("list", j, status)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

int remote_rm(const char *url, int n, char **names)
{
    int rc = WK_EXIT_OK;
    for (int i = 0; i < n; i++) {
        long status = 0;
        json_t *j = call("rm", url, "DELETE", "/api/delete", json_pack("{s:s}", "model", names[i]), &status);
        if (!j || refused("rm", j, status)) rc = WK_EXIT_ERROR;
        else printf("deleted '%s'\n", names[i]);
        json_decref(j);
    }
    return rc;
}

int remote_cp(const char *url, const char *src, const char *dst)
{
    long status = 0;
    json_t *j = call("cp", url, NULL, "/api/copy", json_pack("{s:s, s:s}", "source", src, "destination", dst), &status);
    int rc = !j || refused("cp", j, status) ? WK_EXIT_ERROR : WK_EXIT_OK;
    if (rc == WK_EXIT_OK) printf("copied '%s' to '%s'\n", src, dst);
    json_decref(j);
    return rc;
}

/* A text section of `ollama show`: its lines indented under the title. */
static void section(const char *title, const char *text)
{
    if (!text || !*text) return;
    printf("  %s\n", title);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        printf("    %.*s\n", (int)len, p);
        p += len + (nl ? 1 : 0);
    }
    printf("\n");
}

int remote_show(const char *url, const char *name, const char *part)
{
    long status = 0;
    json_t *j = call("show", url, NULL, "/api/show", json_pack("{s:s}", "model", name), &status);
    if (!j || refused("show", j, status)) {
        json_decref(j);
        return WK_EXIT_ERROR;
    }
    if (part) { /* the field as the server gives it */
        const char *t = json_string_value(json_object_get(j, part));
        if (t && *t) printf("%s%s", t, t[strlen(t) - 1] == '\n' ? "" : "\n");
        json_decref(j);
        return WK_EXIT_OK;
    }
    json_t *d = json_object_get(j, "details"), *mi = json_object_get(j, "model_info");
    const char *arch = json_string_value(json_object_get(mi, "general.architecture"));
    printf("  Model\n");
    printf("    %-20s %s\n", "architecture", arch ? arch : json_string_value(json_object_get(d, "family")) ?: "");
    printf("    %-20s %s\n", "parameters", json_string_value(json_object_get(d, "parameter_size")) ?: "");
    static const char *const keys[][2] = {{"context_length", "context length"}, {"embedding_length", "embedding length"}};
    for (size_t i = 0; arch && i < 2; i++) {
        char k[160];
        snprintf(k, sizeof k, "%s.%s", arch, keys[i][0]);
        json_t *v = json_object_get(mi, k);
        if (json_is_integer(v)) printf("    %-20s %lld\n", keys[i][1], (long long)json_integer_value(v));
    }
    printf("    %-20s %s\n\n", "quantization", json_string_value(json_object_get(d, "quantization_level")) ?: "");
    json_t *caps = json_object_get(j, "capabilities");
    if (json_array_size(caps)) {
        printf("  Capabilities\n");
        size_t i;
        json_t *c;
        json_array_foreach(caps, i, c) printf("    %s\n", json_string_value(c) ?: "");
        printf("\n");
    }
    section("Parameters", json_string_value(json_object_get(j, "parameters")));
    section("System", json_string_value(json_object_get(j, "system")));
    section("License", json_string_value(json_object_get(j, "license")));
    json_decref(j);
    return WK_EXIT_OK;
}
