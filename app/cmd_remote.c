/*
 * cmd_remote.c - wick list / show / cp / rm / create through a running
 * server, as ollama's commands are clients of the server at OLLAMA_HOST
 * (cmd/cmd.go: ListHandler -> /api/tags, ShowHandler -> /api/show,
 * CopyHandler -> /api/copy, DeleteHandler -> DELETE /api/delete,
 * CreateHandler -> blobs and /api/create; pull and push: cmd_pull.c): so a
 * server with a store of its own (a service, a container, a remote host)
 * is the one the commands show and change. Used when this environment
 * names no store (neither WICK_MODELS nor OLLAMA_MODELS: a store named
 * here is read directly, as the tests and a second store want) and a
 * server answers GET /api/version at WICK_HOST / OLLAMA_HOST /
 * 127.0.0.1:11434 (as wick run decides); with nothing listening there the
 * commands read the store themselves (cmd_create.c); a server that takes
 * the connection and does not answer is an error (cli_remote_store).
 */
#include "cli.h"
#include "http_client.h"

#include "../src/base/wk_base.h"
#include "../src/io/wk_json.h"
#include "../src/io/wk_modelfile.h"

#include <dirent.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REMOTE_PROBE_MS 300
#define REMOTE_STALL_MS 5000 /* a server that took the connection: this long before it counts as hung */
#define REMOTE_TIMEOUT_MS (10 * 60 * 1000L) /* a copy or a show of a big store: bounded, not short */

bool cli_store_named(void)
{
    const char *a = getenv("WICK_MODELS"), *b = getenv("OLLAMA_MODELS");
    return (a && *a) || (b && *b);
}

int cli_remote_store(char *url, size_t cap)
{
    if (cli_store_named()) return 0;
    cli_server_url(url, cap);
    enum cli_probe p = cli_probe_server(url, REMOTE_PROBE_MS);
    if (p == CLI_SERVER_STALLED) p = cli_probe_server(url, REMOTE_STALL_MS); /* busy: a longer wait */
    if (p == CLI_SERVER_UP) return 1;
    if (p == CLI_SERVER_NONE) return 0;
    /* a server is there and does not answer: its store is not this machine's to change behind it */
    fprintf(stderr, "wick: the server at %s does not answer (busy or hung?); set WICK_MODELS to use a store "
                    "directly\n", url);
    return -1;
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

/* ------------------------------------------------------------ create */

/* path's SHA-256 as "sha256:<hex>" into d [80]; false on a read error. */
static bool file_digest(const char *path, char d[80])
{
    FILE *f = fopen(path, "rb");
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok = f && md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;
    static char buf[1 << 20];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0) ok = EVP_DigestUpdate(md, buf, n) == 1;
    unsigned char h[EVP_MAX_MD_SIZE];
    unsigned hn = 0;
    ok = ok && !ferror(f) && EVP_DigestFinal_ex(md, h, &hn) == 1;
    if (ok) {
        strcpy(d, "sha256:");
        for (unsigned i = 0; i < hn; i++) sprintf(d + 7 + 2 * i, "%02x", h[i]);
    }
    EVP_MD_CTX_free(md);
    if (f) fclose(f);
    return ok;
}

/* The blob of file path in the server's store (HEAD, else POST it, as
 * ollama create uploads its files); its digest into d [80]. */
static bool upload(const char *url, const char *path, char d[80])
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || !file_digest(path, d)) {
        fprintf(stderr, "wick create: cannot read %s: %s\n", path,
                stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) ? "not a regular file" : strerror(errno));
        return false;
    }
    char route[128], err[256];
    snprintf(route, sizeof route, "/api/blobs/%s", d);
    struct cli_http_reply r;
    if (!cli_http_send("HEAD", url, route, NULL, 60000, &r, err, sizeof err)) {
        fprintf(stderr, "wick create: the server at %s: %s\n", url, err);
        return false;
    }
    free(r.body);
    if (r.status == 200) return true;
    FILE *f = fopen(path, "rb");
    if (!f) snprintf(err, sizeof err, "%s", strerror(errno));
    fprintf(stderr, "copying file %s\n", d);
    bool ok = f && cli_http_upload(url, route, f, (int64_t)sb.st_size, &r, err, sizeof err);
    if (f) fclose(f);
    if (ok && r.status != 200 && r.status != 201) {
        json_t *j = json_loads(r.body ? r.body : "", 0, NULL);
        snprintf(err, sizeof err, "%s", cli_error_message(j, "the upload was refused"));
        json_decref(j);
        ok = false;
    }
    if (!ok) fprintf(stderr, "wick create: uploading %s: %s\n", path, err);
    if (f) free(r.body); /* else r is the HEAD's, its body freed */
    return ok;
}

/* Whether a folder's file is one a model is made of (its weights, JSON,
 * template, vocabulary), the files wick's import reads: others (a README,
 * a binary that happens to be there) are not uploaded. */
static bool model_file(const char *name)
{
    static const char *const ends[] = {".safetensors", ".json", ".jinja", ".txt", ".model", ".gguf"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        size_t l = strlen(ends[i]);
        if (n > l && strcmp(name + n - l, ends[i]) == 0) return true;
    }
    return false;
}

/* The files of folder path into files, named prefix + their name; a
 * sub-folder's (depth 0 only) as "<sub>_<name>", the store's flat name
 * for sentence-transformers' 1_Pooling/config.json (store/create.c). */
static bool add_folder(const char *url, const char *path, const char *prefix, json_t *files, int depth)
{
    DIR *dd = opendir(path);
    bool ok = dd != NULL;
    if (!dd) fprintf(stderr, "wick create: cannot read %s: %s\n", path, strerror(errno));
    for (struct dirent *e; ok && (e = readdir(dd));) {
        char fp[4500], name[600], d[80];
        struct stat sb;
        snprintf(fp, sizeof fp, "%s/%s", path, e->d_name);
        snprintf(name, sizeof name, "%s%s", prefix, e->d_name);
        if (e->d_name[0] == '.' || stat(fp, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode) && depth == 0) {
            char sub[600];
            snprintf(sub, sizeof sub, "%s_", e->d_name);
            ok = add_folder(url, fp, sub, files, 1);
        } else if (S_ISREG(sb.st_mode) && model_file(e->d_name)) {
            ok = upload(url, fp, d) && !json_object_set_new(files, name, json_string(d));
        }
    }
    if (dd) closedir(dd);
    return ok;
}

/* FROM as /api/create takes it: a file's blob, a folder's files' blobs
 * ("files"), or a stored model's name ("from"). */
static bool add_from(const char *url, const char *from, const char *dir, json_t *body)
{
    char path[4200];
    snprintf(path, sizeof path, "%s%s%s", from[0] == '/' || from[0] == '~' ? "" : dir,
             from[0] == '/' || from[0] == '~' ? "" : "/", from);
    if (from[0] == '~' && getenv("HOME")) snprintf(path, sizeof path, "%s%s", getenv("HOME"), from + 1);
    struct stat sb;
    if (stat(path, &sb) != 0) return !json_object_set_new(body, "from", json_string(from));
    json_t *files = json_object();
    json_object_set_new(body, "files", files);
    char d[80];
    if (!S_ISDIR(sb.st_mode)) {
        const char *base = strrchr(path, '/');
        return upload(url, path, d) && !json_object_set_new(files, base ? base + 1 : path, json_string(d));
    }
    return add_folder(url, path, "", files, 0);
}

/* One line of /api/create's progress: its status on stderr. */
static bool on_create_line(void *user, const char *line, size_t len)
{
    json_t *j = json_loadb(line, len, 0, NULL);
    const char *st = json_string_value(json_object_get(j, "status")), *e = json_string_value(json_object_get(j, "error"));
    if (e) fprintf(stderr, "wick create: %s\n", e), *(bool *)user = false;
    else if (st) fprintf(stderr, "%s\n", st);
    json_decref(j);
    return true;
}

int remote_create(const char *url, const char *name, const struct wk_modelfile *mf, const char *dir)
{
    json_t *body = json_pack("{s:s, s:b}", "model", name, "stream", 1), *params = json_object();
    bool ok = body && params && add_from(url, mf->from, dir, body);
    if (mf->template_text) json_object_set_new(body, "template", json_string(mf->template_text));
    if (mf->system) json_object_set_new(body, "system", json_string(mf->system));
    if (mf->n_licenses) {
        json_t *l = json_array();
        for (int32_t i = 0; i < mf->n_licenses; i++) json_array_append_new(l, json_string(mf->licenses[i]));
        json_object_set_new(body, "license", l);
    }
    if (mf->n_messages) {
        json_t *m = json_array();
        for (int32_t i = 0; i < mf->n_messages; i++)
            json_array_append_new(m, json_pack("{s:s, s:s}", "role", mf->messages[i].role, "content",
                                               mf->messages[i].content));
        json_object_set_new(body, "messages", m);
    }
    for (int32_t i = 0; ok && i < mf->n_params; i++) { /* typed, as the options table reads them */
        const struct wk_mf_param *q = &mf->params[i];
        if (strcmp(q->name, "stop") == 0) {
            if (!json_object_get(params, "stop")) json_object_set_new(params, "stop", json_array());
            json_array_append_new(json_object_get(params, "stop"), json_string(q->s));
        } else {
            json_object_set_new(params, q->name, q->type == WK_MF_FLOAT ? json_real(q->f)
                                                 : q->type == WK_MF_INT ? json_integer(q->i)
                                                 : q->type == WK_MF_BOOL ? json_boolean(q->b)
                                                                         : json_string(q->s));
        }
    }
    if (json_object_size(params)) json_object_set(body, "parameters", params);
    json_decref(params);
    char *text = ok ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) return WK_EXIT_ERROR;
    long status = 0;
    char *error_body = NULL, err[256];
    bool good = true;
    int rc = cli_http_stream(url, "/api/create", text, on_create_line, &good, NULL, &status, &error_body, err,
                             sizeof err);
    free(text);
    if (rc < 0) fprintf(stderr, "wick create: the server at %s: %s\n", url, err), good = false;
    else if (status != 200) {
        json_t *j = json_loads(error_body ? error_body : "", 0, NULL);
        fprintf(stderr, "wick create: %s\n", cli_error_message(j, "the server refused the model"));
        json_decref(j);
        good = false;
    }
    wk_free(error_body);
    return good ? WK_EXIT_OK : WK_EXIT_ERROR;
}
