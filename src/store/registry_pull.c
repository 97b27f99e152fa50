/*
 * registry_pull.c - `wick pull` (wk_registry_pull): the manifest, then
 * each blob into its partial file, resumed, hashed, renamed; then the
 * manifest into the store. The order of reports follows Ollama's
 * PullModel (server/images.go): "pulling manifest", per blob "pulling
 * <12 hex>" with total and completed (a blob already stored is reported
 * complete at once, as Ollama's downloadBlob does), "verifying sha256
 * digest", "writing manifest", "success".
 *
 * A blob's partial file, blobs/partial-sha256-<hex>, holds its first
 * `have` bytes, all of them as the registry sent them: every write lands
 * before `have` moves, so a kill at any moment leaves a prefix that the
 * next pull hashes again (the SHA-256 runs over the whole blob, prefix
 * included, as it arrives) and continues with `Range: bytes=<have>-`. A
 * 200 to that request (the server ignored Range) starts the file afresh;
 * a 206 must start at `have` (Content-Range). The digest is checked when
 * the last byte is written, before the rename; a mismatch deletes the
 * partial. Unlike Ollama, which verifies every blob after all downloads,
 * each blob is verified as it completes, so "verifying sha256 digest"
 * follows the checks it names.
 */
#include "registry_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Transfers of one blob that failed midway but moved bytes are retried
 * (from where they stopped) this many times in all. */
#define MAX_TRIES 5

/* One blob's download. */
struct dl {
    struct wk__reg *r;
    struct wk__reg_req *q;
    const char *digest; /* "sha256:<hex>" */
    char status[40];    /* "pulling <12 hex>" */
    const char *part;   /* the partial file's path */
    int fd;
    uint64_t size, have, got; /* the manifest's size, bytes in the file, bytes this try */
    EVP_MD_CTX *md;     /* over bytes [0, have) */
    bool started;       /* the current answer's first byte was seen */
    enum wk_status wst; /* why the sink stopped the transfer */
    struct wk_error werr;
};

static bool blob_present(const char *path, uint64_t size)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size == size;
}

/* The file and its hash start again from byte 0. */
static bool dl_restart(struct dl *d)
{
    d->have = 0;
    return ftruncate(d->fd, 0) == 0 && EVP_DigestInit_ex(d->md, EVP_sha256(), NULL) == 1;
}

/* The first byte of an answer: a 206 must continue at have; a 200 is the
 * whole blob (the server ignored Range, or none was asked). */
static bool dl_first(struct dl *d)
{
    long code = 0;
    curl_easy_getinfo(d->r->curl, CURLINFO_RESPONSE_CODE, &code);
    if (code == 206) {
        unsigned long long from = 0;
        if (sscanf(d->q->content_range, "bytes %llu-", &from) != 1 || from != d->have) {
            char cr[200];
            wk_str_printable(d->q->content_range, strlen(d->q->content_range), cr, sizeof cr);
            d->wst = wk_error_set(&d->werr, WK_E_FORMAT, "blob %s: asked for bytes from %llu, the registry sent '%s'",
                                  d->digest, (unsigned long long)d->have, cr);
            return false;
        }
    } else if (code != 200) { /* another 2xx: not the blob's bytes as asked */
        d->wst = wk_error_set(&d->werr, WK_E_FORMAT, "blob %s: the registry answered HTTP %ld, not 200 or 206",
                              d->digest, code);
        return false;
    } else if (d->have > 0 && !dl_restart(d)) {
        d->wst = wk_error_set(&d->werr, WK_E_IO, "cannot truncate %s: %s", d->part, strerror(errno));
        return false;
    }
    return true;
}

/* A 2xx answer's bytes: appended to the partial file and the hash. */
static size_t dl_sink(void *user, const char *p, size_t n)
{
    struct dl *d = user;
    if (!d->started) {
        d->started = true;
        if (!dl_first(d)) return 0;
    }
    if (n > d->size - d->have) {
        d->wst = wk_error_set(&d->werr, WK_E_FORMAT, "blob %s: the registry sent more than the manifest's %llu bytes",
                              d->digest, (unsigned long long)d->size);
        return 0;
    }
    for (size_t w = 0; w < n;) {
        ssize_t k = pwrite(d->fd, p + w, n - w, (off_t)(d->have + w));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            d->wst = wk_error_set(&d->werr, WK_E_IO, "cannot write %s: %s", d->part, strerror(k < 0 ? errno : ENOSPC));
            return 0;
        }
        w += (size_t)k;
    }
    EVP_DigestUpdate(d->md, p, n);
    d->have += n;
    d->got += n;
    wk__reg_emit(d->r, d->status, d->digest, d->size, d->have, false);
    return n;
}

/* Waits for the partial file's lock (another pull of this blob holds it
 * meanwhile: its progress is reported from the file's size). */
static enum wk_status dl_lock(struct dl *d, struct wk_error *err)
{
    while (flock(d->fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR)
            return wk_error_set(err, WK_E_IO, "cannot lock %s: %s", d->part, strerror(errno));
        if (wk__reg_cancelled(d->r)) return wk_error_set(err, WK_E_CANCELLED, "cancelled");
        struct stat sb;
        if (fstat(d->fd, &sb) == 0)
            wk__reg_emit(d->r, d->status, d->digest, d->size, WK_MIN((uint64_t)sb.st_size, d->size), false);
        usleep(100 * 1000);
    }
    return WK_OK;
}

/* The hash of the bytes a previous pull left: the file's first have bytes
 * (have past the blob's size, or unreadable: the file starts again). */
static enum wk_status dl_hash_prefix(struct dl *d, struct wk_error *err)
{
    struct stat sb;
    if (fstat(d->fd, &sb) != 0) return wk_error_set(err, WK_E_IO, "cannot stat %s: %s", d->part, strerror(errno));
    d->have = (uint64_t)sb.st_size;
    if (d->have > d->size && !dl_restart(d))
        return wk_error_set(err, WK_E_IO, "cannot truncate %s: %s", d->part, strerror(errno));
    size_t cap = (size_t)4 << 20;
    char *buf = d->have ? wk_malloc(cap) : NULL;
    if (d->have && !buf) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    enum wk_status st = WK_OK;
    for (uint64_t off = 0; off < d->have && !st;) {
        ssize_t k = pread(d->fd, buf, (size_t)WK_MIN((uint64_t)cap, d->have - off), (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            d->have = off; /* what could be read: the rest comes again */
            if (ftruncate(d->fd, (off_t)off) != 0)
                st = wk_error_set(err, WK_E_IO, "cannot truncate %s: %s", d->part, strerror(errno));
            break;
        }
        EVP_DigestUpdate(d->md, buf, (size_t)k);
        off += (uint64_t)k;
        if (wk__reg_cancelled(d->r)) st = wk_error_set(err, WK_E_CANCELLED, "cancelled");
    }
    wk_free(buf);
    return st;
}

/* GETs the blob's missing bytes [have, size), retrying a transfer that
 * broke after moving bytes. */
static enum wk_status dl_fetch(struct dl *d, struct wk_error *err)
{
    struct wk__reg *r = d->r;
    char url[700], what[500];
    snprintf(url, sizeof url, "%s/v2/%s/blobs/%s", r->base, r->repo, d->digest);
    snprintf(what, sizeof what, "GET /v2/%s/blobs/%s", r->repo, d->digest);
    int tries = 0;
    bool refetched = false;
    while (d->have < d->size) {
        struct wk__reg_req q = {.method = "GET", .url = url, .range_from = d->have, .sink = dl_sink, .sink_user = d};
        d->q = &q;
        d->started = false;
        d->got = 0;
        d->wst = WK_OK;
        enum wk_status st = wk__reg_perform(r, &q, err);
        bool transport = st == WK_E_IO;
        if (d->wst) {
            *err = d->werr;
            st = d->wst;
        } else if (!st && q.status == 416 && !refetched) { /* a partial the blob does not extend */
            refetched = true;
            if (!dl_restart(d)) st = wk_error_set(err, WK_E_IO, "cannot truncate %s: %s", d->part, strerror(errno));
        } else if (!st && q.status != 200 && q.status != 206) {
            st = wk__reg_http_error(r, &q, what, err);
        } else if (!st && d->have < d->size) {
            st = wk_error_set(err, WK_E_FORMAT, "blob %s: the registry's answer ended after %llu of the manifest's %llu bytes",
                              d->digest, (unsigned long long)d->have, (unsigned long long)d->size);
        }
        wk__reg_req_deinit(&q);
        if (st && transport && d->got > 0 && ++tries < MAX_TRIES) continue; /* it moved: go on from there */
        if (st) return st;
    }
    return WK_OK;
}

/* The digest check and the rename into place. */
static enum wk_status dl_finish(struct dl *d, const char *final, struct wk_error *err)
{
    unsigned char md[32];
    unsigned int n = 0;
    char got[80];
    EVP_DigestFinal_ex(d->md, md, &n);
    strcpy(got, "sha256:");
    for (int i = 0; i < 32; i++) sprintf(got + 7 + 2 * i, "%02x", md[i]);
    if (strcmp(got, d->digest) != 0) {
        unlink(d->part);
        return wk_error_set(err, WK_E_FORMAT,
                            "blob %s: the downloaded bytes have digest %s (corrupt in the registry or on the way); "
                            "the download was deleted",
                            d->digest, got);
    }
    if (fsync(d->fd) != 0 || rename(d->part, final) != 0)
        return wk_error_set(err, WK_E_IO, "cannot store blob %s: %s", final, strerror(errno));
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", final);
    *strrchr(dir, '/') = '\0';
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) fsync(dfd), close(dfd);
    return WK_OK;
}

/* Opens and locks the partial file (the one at its path once locked: a
 * pull that finished meanwhile renamed the one first opened). *present:
 * the blob is stored by now (the partial file, if any, removed). */
static enum wk_status dl_open(struct dl *d, const char *final, bool *present, struct wk_error *err)
{
    for (;;) {
        if ((d->fd = open(d->part, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
            return wk_error_set(err, WK_E_IO, "cannot write %s: %s", d->part, strerror(errno));
        enum wk_status st = dl_lock(d, err);
        struct stat a, b;
        bool current = !st && fstat(d->fd, &a) == 0 && stat(d->part, &b) == 0 && a.st_ino == b.st_ino &&
                       a.st_dev == b.st_dev;
        if (!st && (*present = blob_present(final, d->size))) {
            if (current) unlink(d->part); /* ours, locked: an empty or stale partial of a stored blob */
            close(d->fd);
            d->fd = -1;
            return WK_OK;
        }
        if (st || current) return st;
        close(d->fd); /* renamed or removed while we waited: open the file there now */
    }
}

/* Brings blob digest (size bytes) into the store. */
static enum wk_status pull_blob(struct wk__reg *r, struct wk_store *s, const char *digest, uint64_t size,
                                struct wk_error *err)
{
    char final[4200], part[4200];
    struct dl d = {.r = r, .digest = digest, .size = size, .part = part, .fd = -1};
    wk_store_blob_path(s, digest, final, sizeof final);
    snprintf(part, sizeof part, "%.4000s/blobs/partial-sha256-%.64s", wk_store_dir(s), digest + 7);
    snprintf(d.status, sizeof d.status, "pulling %.12s", digest + 7);
    bool present = blob_present(final, size);
    enum wk_status st = present ? WK_OK : dl_open(&d, final, &present, err);
    if (present || st) {
        if (present) wk__reg_emit(r, d.status, digest, size, size, true);
        if (d.fd >= 0) close(d.fd);
        return st;
    }
    if (!(d.md = EVP_MD_CTX_new())) st = wk_error_set(err, WK_E_NOMEM, "out of memory");
    if (!st && EVP_DigestInit_ex(d.md, EVP_sha256(), NULL) != 1) st = wk_error_set(err, WK_E_INTERNAL, "no SHA-256");
    if (!st) st = dl_hash_prefix(&d, err);
    if (!st) wk__reg_emit(r, d.status, digest, size, d.have, true);
    if (!st) st = dl_fetch(&d, err);
    if (!st) st = dl_finish(&d, final, err);
    else if (st == WK_E_FORMAT) unlink(part); /* bytes that are not this blob's: not worth resuming */
    EVP_MD_CTX_free(d.md);
    close(d.fd); /* the lock goes with it */
    if (!st) wk__reg_emit(r, d.status, digest, size, size, true);
    return st;
}

/* A layer or config descriptor: its digest and size, checked. */
static enum wk_status descriptor(json_t *l, const char *where, const char **digest, uint64_t *size,
                                 struct wk_error *err)
{
    *digest = json_string_value(json_object_get(l, "digest"));
    json_t *sz = json_object_get(l, "size");
    if (!json_is_object(l) || !wk_digest_ok(*digest))
        return wk_error_set(err, WK_E_FORMAT, "the manifest's %s has no sha256:<64 hex> digest", where);
    if (!json_is_integer(sz) || json_integer_value(sz) < 0 || json_integer_value(sz) > (json_int_t)1 << 50)
        return wk_error_set(err, WK_E_FORMAT, "the manifest's %s (%s) has no valid size", where, *digest);
    *size = (uint64_t)json_integer_value(sz);
    return WK_OK;
}

/* What the manifest must be before any of it is used: a v2 image
 * manifest whose every digest may name a file. */
static enum wk_status check_manifest(json_t *m, struct wk_error *err)
{
    if (!json_is_object(m)) return wk_error_set(err, WK_E_FORMAT, "the registry's manifest is not a JSON object");
    const char *mt = json_string_value(json_object_get(m, "mediaType"));
    if (mt && (strstr(mt, "manifest.list") || strstr(mt, "image.index")))
        return wk_error_set(err, WK_E_UNSUPPORTED, "the registry has an image index (%.100s) here, not a model", mt);
    if (json_integer_value(json_object_get(m, "schemaVersion")) != 2)
        return wk_error_set(err, WK_E_UNSUPPORTED, "the registry's manifest is not schema version 2");
    json_t *layers = json_object_get(m, "layers"), *l;
    if (!json_is_array(layers) || json_array_size(layers) > WK__REG_MAX_BLOBS)
        return wk_error_set(err, WK_E_FORMAT, "the manifest's layers are not a list of at most %d", WK__REG_MAX_BLOBS);
    const char *d;
    uint64_t sz;
    enum wk_status st = descriptor(json_object_get(m, "config"), "config", &d, &sz, err);
    size_t i;
    json_array_foreach(layers, i, l) {
        if (st) break;
        char where[40];
        snprintf(where, sizeof where, "layer %zu", i);
        st = descriptor(l, where, &d, &sz, err);
    }
    return st;
}

static enum wk_status get_manifest(struct wk__reg *r, json_t **out, struct wk_buf *bytes, struct wk_error *err)
{
    char url[700], what[500];
    snprintf(url, sizeof url, "%s/v2/%s/manifests/%s", r->base, r->repo, r->tag);
    snprintf(what, sizeof what, "GET /v2/%s/manifests/%s", r->repo, r->tag);
    struct wk__reg_req q = {.method = "GET", .url = url,
                            .accept = WK_MT_MANIFEST ", application/vnd.oci.image.manifest.v1+json"};
    enum wk_status st = wk__reg_perform(r, &q, err);
    *out = NULL;
    if (!st && q.status == 404)
        st = wk_error_prefix(err, wk__reg_http_error(r, &q, what, err), "model '%s' not found: ", r->shown);
    else if (!st && q.status != 200)
        st = wk__reg_http_error(r, &q, what, err);
    json_error_t je;
    if (!st && !(*out = json_loadb(q.resp.p ? q.resp.p : "", q.resp.len, JSON_REJECT_DUPLICATES, &je)))
        st = wk_error_set(err, WK_E_FORMAT, "registry %s: %s: not JSON: %s", r->host, what, je.text);
    if (!st) st = check_manifest(*out, err);
    if (!st) *bytes = q.resp, q.resp = (struct wk_buf){0}; /* kept as sent: the digest stays the registry's */
    wk__reg_req_deinit(&q);
    if (st) {
        json_decref(*out);
        *out = NULL;
    }
    return st;
}

enum wk_status wk_registry_pull(struct wk_store *s, const struct wk_model_name *n, const struct wk_registry_opts *o,
                                struct wk_error *err)
{
    struct wk__reg r;
    enum wk_status st = wk__reg_open(&r, n, o, err);
    if (st) return st;
    wk__reg_emit(&r, "pulling manifest", NULL, 0, 0, true);
    json_t *m = NULL;
    struct wk_buf bytes = {0};
    st = get_manifest(&r, &m, &bytes, err);
    /* the layers in order, then the config, as Ollama pulls them */
    size_t n_layers = m ? json_array_size(json_object_get(m, "layers")) : 0;
    for (size_t i = 0; !st && i <= n_layers; i++) {
        json_t *l = i < n_layers ? json_array_get(json_object_get(m, "layers"), i) : json_object_get(m, "config");
        const char *digest = json_string_value(json_object_get(l, "digest"));
        st = pull_blob(&r, s, digest, (uint64_t)json_integer_value(json_object_get(l, "size")), err);
    }
    if (!st) wk__reg_emit(&r, "verifying sha256 digest", NULL, 0, 0, true);
    if (!st) wk__reg_emit(&r, "writing manifest", NULL, 0, 0, true);
    if (!st) st = wk_store_write_manifest_bytes(s, n, m, bytes.p, bytes.len, err);
    if (!st) wk__reg_emit(&r, "success", NULL, 0, 0, true);
    json_decref(m);
    wk_free(bytes.p);
    wk__reg_close(&r);
    return st;
}
