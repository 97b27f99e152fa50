/*
 * registry_push.c - `wick push` (wk_registry_push): each blob of a stored
 * model that the registry lacks, uploaded in one request, then the
 * manifest. Reports as Ollama's PushModel (server/images.go, upload.go):
 * "retrieving manifest", per blob "pushing <12 hex>" with total and
 * completed (a blob the registry has is reported complete at once),
 * "pushing manifest", "success".
 *
 * The upload is the spec's monolithic one (distribution's
 * docs/spec/api.md, "Monolithic Upload"): POST /v2/<repo>/blobs/uploads/
 * answers 202 with a Location (absolute or a path on the registry), and
 * PUT <Location>&digest=<digest> carries the whole blob; the registry
 * checks the digest itself. Ollama splits large blobs into PATCH chunks
 * in parallel; one stream is enough for a registry on a LAN, and a failed
 * push starts its blob again (the next push skips blobs already there).
 */
#include "registry_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One blob's upload, for the progress reports. */
struct ul {
    struct wk__reg *r;
    const char *digest;
    char status[40]; /* "pushing <12 hex>" */
    uint64_t size;
};

static void ul_sent(void *user, uint64_t n_sent)
{
    struct ul *u = user;
    wk__reg_emit(u->r, u->status, u->digest, u->size, WK_MIN(n_sent, u->size), false);
}

/* The upload's PUT URL: Location (absolute, or a path on the registry)
 * with digest=<digest> added to its query. NULL when out of memory. */
static char *upload_url(const struct wk__reg *r, const char *location, const char *digest)
{
    bool absolute = strncmp(location, "http://", 7) == 0 || strncmp(location, "https://", 8) == 0;
    return wk_asprintf("%s%s%s%sdigest=sha256%%3A%s", absolute ? "" : r->base,
                       absolute || location[0] == '/' ? "" : "/", location, strchr(location, '?') ? "&" : "?",
                       digest + 7);
}

/* Whether the registry has blob digest already: HEAD. */
static enum wk_status blob_exists(struct wk__reg *r, const char *digest, bool *exists, struct wk_error *err)
{
    char url[700], what[500];
    snprintf(url, sizeof url, "%s/v2/%s/blobs/%s", r->base, r->repo, digest);
    snprintf(what, sizeof what, "HEAD /v2/%s/blobs/%s", r->repo, digest);
    struct wk__reg_req q = {.method = "HEAD", .url = url};
    enum wk_status st = wk__reg_perform(r, &q, err);
    *exists = !st && q.status == 200;
    if (!st && q.status != 200 && q.status != 404) st = wk__reg_http_error(r, &q, what, err);
    wk__reg_req_deinit(&q);
    return st;
}

/* Uploads blob digest (size bytes, the store's file path) unless the
 * registry has it. */
static enum wk_status push_blob(struct wk__reg *r, const char *path, const char *digest, uint64_t size,
                                struct wk_error *err)
{
    struct ul u = {.r = r, .digest = digest, .size = size};
    snprintf(u.status, sizeof u.status, "pushing %.12s", digest + 7);
    bool exists;
    enum wk_status st = blob_exists(r, digest, &exists, err);
    if (st || exists) {
        if (exists) wk__reg_emit(r, u.status, digest, size, size, true);
        return st;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || (uint64_t)sb.st_size != size) {
        if (fd >= 0) close(fd);
        return wk_error_set(err, WK_E_NOT_FOUND, "blob %s of the manifest is missing from the store (or has "
                            "another size than its %llu bytes): %s", digest, (unsigned long long)size, path);
    }
    wk__reg_emit(r, u.status, digest, size, 0, true);
    char url[700], what[500];
    snprintf(url, sizeof url, "%s/v2/%s/blobs/uploads/", r->base, r->repo);
    snprintf(what, sizeof what, "POST /v2/%s/blobs/uploads/", r->repo);
    struct wk__reg_req q = {.method = "POST", .url = url};
    st = wk__reg_perform(r, &q, err);
    char *put = NULL;
    if (!st && q.status != 202) st = wk__reg_http_error(r, &q, what, err);
    else if (!st && !q.location[0])
        st = wk_error_set(err, WK_E_FORMAT, "registry %s: %s: HTTP 202 with no Location to upload to", r->host, what);
    else if (!st && !(put = upload_url(r, q.location, digest))) st = wk_error_set(err, WK_E_NOMEM, "out of memory");
    wk__reg_req_deinit(&q);
    if (!st) {
        snprintf(what, sizeof what, "PUT the upload of blob %s", digest);
        struct wk__reg_req p = {.method = "PUT", .url = put, .content_type = "application/octet-stream",
                                .body_file = true, .body_fd = fd, .body_size = size, .sent = ul_sent,
                                .sink_user = &u};
        st = wk__reg_perform(r, &p, err);
        if (!st && (p.status < 200 || p.status > 299)) st = wk__reg_http_error(r, &p, what, err);
        wk__reg_req_deinit(&p);
    }
    wk_free(put);
    close(fd);
    if (!st) wk__reg_emit(r, u.status, digest, size, size, true);
    return st;
}

/* PUTs the manifest (its stored JSON) under the tag. */
static enum wk_status push_manifest(struct wk__reg *r, json_t *m, struct wk_error *err)
{
    char url[700], what[500];
    snprintf(url, sizeof url, "%s/v2/%s/manifests/%s", r->base, r->repo, r->tag);
    snprintf(what, sizeof what, "PUT /v2/%s/manifests/%s", r->repo, r->tag);
    char *text = json_dumps(m, JSON_COMPACT);
    if (!text) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    const char *mt = json_string_value(json_object_get(m, "mediaType"));
    struct wk__reg_req q = {.method = "PUT", .url = url, .content_type = mt ? mt : WK_MT_MANIFEST, .body = text,
                            .body_len = strlen(text)};
    enum wk_status st = wk__reg_perform(r, &q, err);
    if (!st && (q.status < 200 || q.status > 299)) st = wk__reg_http_error(r, &q, what, err);
    wk__reg_req_deinit(&q);
    free(text);
    return st;
}

enum wk_status wk_registry_push(struct wk_store *s, const struct wk_model_name *n, const struct wk_registry_opts *o,
                                struct wk_error *err)
{
    struct wk__reg r;
    enum wk_status st = wk__reg_open(&r, n, o, err);
    if (st) return st;
    wk__reg_emit(&r, "retrieving manifest", NULL, 0, 0, true);
    json_t *m = NULL;
    st = wk_store_read_manifest(s, n, &m, err);
    json_t *layers = m ? json_object_get(m, "layers") : NULL;
    size_t n_layers = json_array_size(layers);
    if (!st && n_layers > WK__REG_MAX_BLOBS)
        st = wk_error_set(err, WK_E_UNSUPPORTED, "the manifest has %zu layers, more than %d", n_layers, WK__REG_MAX_BLOBS);
    /* the layers, then the config, as Ollama pushes them */
    for (size_t i = 0; !st && i <= n_layers; i++) {
        json_t *l = i < n_layers ? json_array_get(layers, i) : json_object_get(m, "config");
        const char *digest = json_string_value(json_object_get(l, "digest"));
        json_int_t size = json_integer_value(json_object_get(l, "size"));
        if (!wk_digest_ok(digest) || size < 0) {
            st = wk_error_set(err, WK_E_FORMAT, "the stored manifest of '%s': %s %zu has no valid digest and size",
                              r.shown, i < n_layers ? "layer" : "config", i);
            break;
        }
        char path[4200];
        wk_store_blob_path(s, digest, path, sizeof path);
        st = push_blob(&r, path, digest, (uint64_t)size, err);
    }
    if (!st) wk__reg_emit(&r, "pushing manifest", NULL, 0, 0, true);
    if (!st) st = push_manifest(&r, m, err);
    if (!st) wk__reg_emit(&r, "success", NULL, 0, 0, true);
    json_decref(m);
    wk__reg_close(&r);
    return st;
}
