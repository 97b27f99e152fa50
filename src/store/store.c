/*
 * store.c - the model store (wk_store.h): blobs, manifests, list,
 * remove with garbage collection of unshared blobs, copy, and resolving a
 * name to what a runner loads (model_name.c: names).
 */
#include "wk_store.h"
#include "../io/wk_json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct wk_store {
    char dir[4096];
    /* blobs this handle wrote (not found already stored), for
     * wk_store_drop_created */
    char (*created)[80];
    int n_created, cap_created;
};

/* The store's lock (<dir>/.lock, flock): held around the steps that must
 * not interleave between processes: a manifest's blob check and rename,
 * and a garbage collection's scan and unlinks. Returns the fd to
 * store_unlock, or -1 (then nothing is locked: the steps still run). */
static int store_lock(const struct wk_store *s)
{
    char p[4200];
    snprintf(p, sizeof p, "%.4000s/.lock", s->dir);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0 && flock(fd, LOCK_EX) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void store_unlock(int fd)
{
    if (fd >= 0) close(fd); /* releases the flock */
}

/* ------------------------------------------------------------ files */

void wk_store_default_dir(char *out, size_t cap)
{
    const char *e = wk_getenv_alias("WICK_MODELS", "OLLAMA_MODELS");
    if (e) snprintf(out, cap, "%s", e);
    else snprintf(out, cap, "%s/.wick/models", getenv("HOME") ? getenv("HOME") : ".");
}

/* mkdir -p of path[..len). */
static bool mkdirs(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return true; /* the usual case: one call, not one per level */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) && errno != EEXIST) return false;
            *p = '/';
        }
    return mkdir(tmp, 0755) == 0 || errno == EEXIST;
}

enum wk_status wk_store_open(const char *dir, struct wk_store **out, struct wk_error *err)
{
    *out = NULL;
    struct wk_store *s = wk_calloc(1, sizeof *s);
    if (!s) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    char p[4200];
    snprintf(p, sizeof p, "%s/blobs", dir);
    bool ok = mkdirs(p);
    snprintf(p, sizeof p, "%s/manifests", dir);
    if (!ok || !mkdirs(p)) {
        wk_free(s);
        return wk_error_set(err, WK_E_IO, "cannot create the model store %s: %s", dir, strerror(errno));
    }
    *out = s;
    return WK_OK;
}

void wk_store_close(struct wk_store *s)
{
    if (s) wk_free(s->created);
    wk_free(s);
}
const char *wk_store_dir(const struct wk_store *s) { return s->dir; }

bool wk_digest_ok(const char *d)
{
    if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 71) return false;
    for (int i = 7; i < 71; i++)
        if (!((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f'))) return false;
    return true;
}

void wk_store_blob_path(const struct wk_store *s, const char *digest, char *out, size_t cap)
{
    const char *hex = strncmp(digest, "sha256:", 7) == 0 ? digest + 7 : digest;
    snprintf(out, cap, "%.4000s/blobs/sha256-%.64s", s->dir, hex);
}

static void fsync_dir(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* A temporary file next to final: its fd and name in tmp[cap]. */
static int open_temp(const char *final, char *tmp, size_t cap)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", final);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    snprintf(tmp, cap, "%.4000s/.tmp-%d-XXXXXX", dir, (int)getpid());
    return mkostemp(tmp, O_CLOEXEC);
}

/* fsync, close, rename tmp over final, fsync the folder. */
static bool commit_temp(int fd, const char *tmp, const char *final)
{
    bool ok = fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    ok = ok && rename(tmp, final) == 0;
    if (!ok) unlink(tmp);
    else fsync_dir(final);
    return ok;
}

static void hex_digest(EVP_MD_CTX *ctx, char digest[80])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx, md, &n);
    strcpy(digest, "sha256:");
    for (int i = 0; i < 32; i++) sprintf(digest + 7 + 2 * i, "%02x", md[i]);
}

/* Writes chunks from read_fn into a temporary blob, hashing; renames it
 * to its digest. */
static enum wk_status add_blob(struct wk_store *s, int in_fd, const void *mem, size_t mem_len,
                               uint64_t total, wk_store_progress_fn progress, void *user,
                               char digest[80], uint64_t *size, struct wk_error *err)
{
    char final[4200], tmp[4200];
    snprintf(final, sizeof final, "%s/blobs/x", s->dir);
    int fd = open_temp(final, tmp, sizeof tmp);
    if (fd < 0) return wk_error_set(err, WK_E_IO, "cannot write in %s/blobs: %s", s->dir, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    enum wk_status st = WK_OK;
    size_t cap = (size_t)4 << 20;
    char *buf = in_fd >= 0 ? wk_malloc(cap) : NULL;
    uint64_t done = 0;
    if (in_fd >= 0 && !buf) st = wk_error_set(err, WK_E_NOMEM, "out of memory");
    while (!st) {
        const char *p;
        ssize_t n;
        if (in_fd >= 0) {
            n = read(in_fd, buf, cap);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) st = wk_error_set(err, WK_E_IO, "read failed: %s", strerror(errno));
            p = buf;
        } else {
            n = (ssize_t)WK_MIN(cap, mem_len - done);
            p = (const char *)mem + done;
        }
        if (st || n == 0) break;
        EVP_DigestUpdate(ctx, p, (size_t)n);
        for (ssize_t w = 0; w < n && !st;) {
            ssize_t k = write(fd, p + w, (size_t)(n - w));
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) st = wk_error_set(err, WK_E_IO, "cannot write a blob in %s: %s", s->dir, strerror(errno));
            else w += k;
        }
        done += (uint64_t)n;
        if (progress) progress(user, done, total);
    }
    wk_free(buf);
    hex_digest(ctx, digest);
    EVP_MD_CTX_free(ctx);
    if (st) {
        close(fd);
        unlink(tmp);
        return st;
    }
    wk_store_blob_path(s, digest, final, sizeof final);
    struct stat sb;
    if (stat(final, &sb) == 0 && (uint64_t)sb.st_size == done) { /* already stored */
        close(fd);
        unlink(tmp);
    } else if (!commit_temp(fd, tmp, final)) {
        return wk_error_set(err, WK_E_IO, "cannot store blob %s: %s", final, strerror(errno));
    } else if (s->n_created < 1024) { /* ours: dropped again if the create fails */
        if (s->n_created == s->cap_created) {
            int cap = s->cap_created ? 2 * s->cap_created : 16;
            char(*c)[80] = wk_realloc(s->created, (size_t)cap * sizeof *c);
            if (c) s->created = c, s->cap_created = cap;
        }
        if (s->n_created < s->cap_created) snprintf(s->created[s->n_created++], 80, "%s", digest);
    }
    *size = done;
    return WK_OK;
}

struct wk_blob_writer {
    struct wk_store *s;
    int fd;
    char tmp[4200];
    EVP_MD_CTX *md;
    uint64_t size;
};

enum wk_status wk_store_blob_begin(struct wk_store *s, struct wk_blob_writer **out, struct wk_error *err)
{
    *out = NULL;
    struct wk_blob_writer *w = wk_calloc(1, sizeof *w);
    if (!w || !(w->md = EVP_MD_CTX_new())) {
        wk_free(w);
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    char final[4200];
    snprintf(final, sizeof final, "%s/blobs/x", s->dir);
    if ((w->fd = open_temp(final, w->tmp, sizeof w->tmp)) < 0) {
        EVP_MD_CTX_free(w->md);
        wk_free(w);
        return wk_error_set(err, WK_E_IO, "cannot write in %s/blobs: %s", s->dir, strerror(errno));
    }
    EVP_DigestInit_ex(w->md, EVP_sha256(), NULL);
    w->s = s;
    *out = w;
    return WK_OK;
}

enum wk_status wk_store_blob_write(struct wk_blob_writer *w, const void *data, size_t n, struct wk_error *err)
{
    EVP_DigestUpdate(w->md, data, n);
    for (size_t done = 0; done < n;) {
        ssize_t k = write(w->fd, (const char *)data + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return wk_error_set(err, WK_E_IO, "cannot write a blob in %s: %s", w->s->dir, strerror(errno));
        done += (size_t)k;
    }
    w->size += n;
    return WK_OK;
}

void wk_store_blob_abort(struct wk_blob_writer *w)
{
    if (!w) return;
    close(w->fd);
    unlink(w->tmp);
    EVP_MD_CTX_free(w->md);
    wk_free(w);
}

enum wk_status wk_store_blob_commit(struct wk_blob_writer *w, const char *expected, char digest[80],
                                    struct wk_error *err)
{
    hex_digest(w->md, digest);
    if (expected && strcmp(expected, digest) != 0) {
        wk_error_set(err, WK_E_INVALID, "digest mismatch: the data's digest is %s, not %.80s", digest, expected);
        wk_store_blob_abort(w);
        return WK_E_INVALID;
    }
    char final[4200];
    wk_store_blob_path(w->s, digest, final, sizeof final);
    enum wk_status st = WK_OK;
    struct stat sb;
    if (stat(final, &sb) == 0 && (uint64_t)sb.st_size == w->size) { /* already stored */
        close(w->fd);
        unlink(w->tmp);
    } else if (!commit_temp(w->fd, w->tmp, final)) {
        st = wk_error_set(err, WK_E_IO, "cannot store blob %s: %s", final, strerror(errno));
    }
    EVP_MD_CTX_free(w->md);
    wk_free(w);
    return st;
}

enum wk_status wk_store_add_file(struct wk_store *s, const char *path, wk_store_progress_fn progress,
                                 void *user, char digest[80], uint64_t *size, struct wk_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        if (fd >= 0) close(fd);
        return wk_error_set(err, errno == ENOENT ? WK_E_NOT_FOUND : WK_E_IO, "%s: %s", path,
                            fd < 0 ? strerror(errno) : "not a regular file");
    }
    enum wk_status st = add_blob(s, fd, NULL, 0, (uint64_t)sb.st_size, progress, user, digest, size, err);
    close(fd);
    return st ? wk_error_prefix(err, st, "%s: ", path) : WK_OK;
}

enum wk_status wk_store_add_bytes(struct wk_store *s, const void *data, size_t len, char digest[80],
                                  struct wk_error *err)
{
    uint64_t size;
    return add_blob(s, -1, data, len, len, NULL, NULL, digest, &size, err);
}

/* ------------------------------------------------------------ manifests */

/* Appends "/" part to path [cap], or "/" the entry of that folder equal to
 * part but for case when only such an entry exists. */
static void join_existing(char *path, size_t cap, const char *part)
{
    const size_t len = strlen(path);
    snprintf(path + len, cap - len, "/%s", part);
    struct stat sb;
    if (lstat(path, &sb) == 0) return;
    path[len] = '\0';
    DIR *d = opendir(path);
    char found[256] = "";
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.' && strcasecmp(e->d_name, part) == 0) {
            snprintf(found, sizeof found, "%s", e->d_name);
            break;
        }
    if (d) closedir(d);
    snprintf(path + len, cap - len, "/%s", found[0] ? found : part);
}

void wk_store_manifest_path(const struct wk_store *s, const struct wk_model_name *n, char *out, size_t cap)
{
    /* names match ignoring case, as Ollama's do (getExistingName, name.EqualFold): a
     * name's parts take the case of what the store already holds, so SMOL finds smol
     * and cp smol SMOL writes onto it, not beside it */
    snprintf(out, cap, "%.3000s/manifests", s->dir);
    join_existing(out, cap, n->host);
    join_existing(out, cap, n->ns);
    join_existing(out, cap, n->name);
    join_existing(out, cap, n->tag);
}

void wk_store_existing_name(const struct wk_store *s, struct wk_model_name *n)
{
    char path[4200];
    char *parts[4] = {n->host, n->ns, n->name, n->tag};
    snprintf(path, sizeof path, "%.3000s/manifests", s->dir);
    for (int i = 0; i < 4; i++) {
        join_existing(path, sizeof path, parts[i]);
        const char *last = strrchr(path, '/') + 1;
        if (strcasecmp(last, parts[i]) == 0 && strlen(last) < sizeof n->host) strcpy(parts[i], last);
    }
}

enum wk_status wk_store_read_manifest(const struct wk_store *s, const struct wk_model_name *n,
                                      json_t **out, struct wk_error *err)
{
    char path[4200], shown[600];
    wk_store_manifest_path(s, n, path, sizeof path);
    wk_model_name_format(n, shown, sizeof shown);
    json_error_t je;
    *out = wk_json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!*out) {
        if (access(path, F_OK) != 0) return wk_error_set(err, WK_E_NOT_FOUND, "model '%s' not found", shown);
        return wk_error_set(err, WK_E_FORMAT, "%s: not a manifest: %s", path, je.text);
    }
    if (!json_is_array(json_object_get(*out, "layers"))) {
        json_decref(*out);
        *out = NULL;
        return wk_error_set(err, WK_E_FORMAT, "%s: not a manifest (no layers)", path);
    }
    return WK_OK;
}

struct used_ctx {
    json_t *digests; /* object used as a set */
};

static void mark_used(void *user, const struct wk_model_name *n, const char *path)
{
    (void)n;
    struct used_ctx *c = user;
    json_t *m = wk_json_load_file(path, 0, NULL);
    size_t i;
    json_t *l;
    const char *d = json_string_value(json_object_get(json_object_get(m, "config"), "digest"));
    if (d) json_object_set_new(c->digests, d, json_true());
    json_array_foreach(json_object_get(m, "layers"), i, l)
        if ((d = json_string_value(json_object_get(l, "digest")))) json_object_set_new(c->digests, d, json_true());
    json_decref(m);
}

static void collect_unused(struct wk_store *s, json_t *digests);

static bool blob_ok(const struct wk_store *s, json_t *layer)
{
    const char *d = json_string_value(json_object_get(layer, "digest"));
    char path[4200];
    struct stat sb;
    if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 71) return false;
    wk_store_blob_path(s, d, path, sizeof path);
    return stat(path, &sb) == 0 &&
           (uint64_t)sb.st_size == (uint64_t)json_integer_value(json_object_get(layer, "size"));
}

enum wk_status wk_store_write_manifest(struct wk_store *s, const struct wk_model_name *n,
                                       json_t *manifest, struct wk_error *err)
{
    return wk_store_write_manifest_bytes(s, n, manifest, NULL, 0, err);
}

enum wk_status wk_store_write_manifest_bytes(struct wk_store *s, const struct wk_model_name *n, json_t *manifest,
                                             const char *bytes, size_t len, struct wk_error *err)
{
    size_t i;
    json_t *l;
    if (!blob_ok(s, json_object_get(manifest, "config")))
        return wk_error_set(err, WK_E_NOT_FOUND, "the manifest's config blob is missing");
    json_array_foreach(json_object_get(manifest, "layers"), i, l) if (!blob_ok(s, l))
        return wk_error_set(err, WK_E_NOT_FOUND, "layer %zu's blob is missing", i);
    char path[4200], tmp[4300];
    wk_store_manifest_path(s, n, path, sizeof path);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    if (!mkdirs(dir)) return wk_error_set(err, WK_E_IO, "cannot create %s: %s", dir, strerror(errno));
    int fd = open_temp(path, tmp, sizeof tmp);
    if (fd < 0 && errno == ENOENT && mkdirs(dir)) fd = open_temp(path, tmp, sizeof tmp); /* pruned by an rm meanwhile */
    char *text = bytes ? NULL : json_dumps(manifest, JSON_COMPACT);
    if (!bytes && text) bytes = text, len = strlen(text);
    bool ok = fd >= 0 && bytes && write(fd, bytes, len) == (ssize_t)len;
    free(text);
    if (fd >= 0 && !ok) {
        close(fd);
        unlink(tmp);
    }
    if (!ok) return wk_error_set(err, WK_E_IO, "cannot write %s: %s", path, strerror(errno));
    /* the blobs checked again, and the manifest put in place, with no
     * garbage collection in between (another process's rm or failed create) */
    int lk = store_lock(s);
    bool blobs = blob_ok(s, json_object_get(manifest, "config"));
    json_array_foreach(json_object_get(manifest, "layers"), i, l) blobs = blobs && blob_ok(s, l);
    if (!blobs) {
        close(fd);
        unlink(tmp);
        store_unlock(lk);
        return wk_error_set(err, WK_E_NOT_FOUND, "a blob of the manifest was removed meanwhile (another process's "
                            "wick rm?); nothing stored");
    }
    /* the blobs of the manifest this one replaces, collected once it is
     * in place (those the new or any other manifest names stay) */
    struct used_ctx old = {json_object()};
    mark_used(&old, n, path);
    ok = commit_temp(fd, tmp, path);
    if (ok) collect_unused(s, old.digests);
    json_decref(old.digests);
    store_unlock(lk);
    if (!ok) return wk_error_set(err, WK_E_IO, "cannot write %s: %s", path, strerror(errno));
    s->n_created = 0; /* referenced now */
    return WK_OK;
}

const char *wk_manifest_layer(json_t *m, const char *mt)
{
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(m, "layers"), i, l) {
        const char *t = json_string_value(json_object_get(l, "mediaType"));
        if (t && strcmp(t, mt) == 0) return json_string_value(json_object_get(l, "digest"));
    }
    return NULL;
}

char *wk_store_blob_text(const struct wk_store *s, const char *digest)
{
    char path[4200];
    wk_store_blob_path(s, digest, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = n >= 0 ? wk_malloc((size_t)n + 1) : NULL;
    if (t && fread(t, 1, (size_t)n, f) != (size_t)n) {
        wk_free(t);
        t = NULL;
    }
    if (t) t[n] = '\0';
    fclose(f);
    return t;
}

char *wk_store_layer_text(const struct wk_store *s, json_t *m, const char *mt)
{
    const char *d = wk_manifest_layer(m, mt);
    return d ? wk_store_blob_text(s, d) : NULL;
}

/* ------------------------------------------------------------ list, rm, cp */

typedef void (*manifest_fn)(void *user, const struct wk_model_name *n, const char *path);

/* Calls fn for every manifest: manifests/<host>/<ns>/<name>/<tag>. */
static void walk(const struct wk_store *s, manifest_fn fn, void *user)
{
    char p[4][4200];
    snprintf(p[0], sizeof p[0], "%s/manifests", s->dir);
    struct wk_model_name n;
    char *fields[4] = {n.host, n.ns, n.name, n.tag};
    DIR *d[4] = {opendir(p[0]), NULL, NULL, NULL};
    int depth = 0;
    while (depth >= 0) {
        struct dirent *e = d[depth] ? readdir(d[depth]) : NULL;
        if (!e) {
            if (d[depth]) closedir(d[depth]);
            d[depth--] = NULL;
            continue;
        }
        if (e->d_name[0] == '.' || strlen(e->d_name) > 127) continue;
        snprintf(fields[depth], 128, "%.127s", e->d_name);
        if (depth == 3) {
            char path[4400];
            snprintf(path, sizeof path, "%.4000s/%.127s", p[3], e->d_name);
            fn(user, &n, path);
            continue;
        }
        char next[4200];
        snprintf(next, sizeof next, "%.4000s/%.127s", p[depth], e->d_name);
        memcpy(p[depth + 1], next, sizeof next);
        if ((d[depth + 1] = opendir(p[depth + 1]))) depth++;
    }
}

struct list_ctx {
    const struct wk_store *s;
    json_t *arr;
};

static void list_one(void *user, const struct wk_model_name *n, const char *path)
{
    struct list_ctx *c = user;
    /* the file's bytes: its JSON, and its digest as Ollama lists it (a
     * pulled manifest's as the registry sent it: its digest there) */
    size_t len;
    char *text = wk_read_file(path, (size_t)4 << 20, &len);
    json_t *m = text ? json_loadb(text, len, 0, NULL) : NULL;
    unsigned char md[32];
    unsigned int mdn = 0;
    if (m) EVP_Digest(text, len, md, &mdn, EVP_sha256(), NULL);
    wk_free(text);
    if (!m || mdn != 32 || !json_is_array(json_object_get(m, "layers"))) {
        json_decref(m);
        return;
    }
    char name[600], when[64];
    wk_model_name_format(n, name, sizeof name);
    struct stat sb;
    stat(path, &sb);
    time_t t = sb.st_mtim.tv_sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_int_t size = json_integer_value(json_object_get(json_object_get(m, "config"), "size"));
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(m, "layers"), i, l) size += json_integer_value(json_object_get(l, "size"));
    char hex[65];
    for (int k = 0; k < 32; k++) sprintf(hex + 2 * k, "%02x", md[k]);
    json_array_append_new(c->arr, json_pack("{s:s, s:s, s:s, s:I, s:s}", "name", name, "model", name,
                                            "modified_at", when, "size", size, "digest", hex));
    json_decref(m);
}

/* Newest first, then by name (Ollama lists by modified time, newest first). */
static int cmp_listed(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = strcmp(json_string_value(json_object_get(y, "modified_at")),
                   json_string_value(json_object_get(x, "modified_at")));
    return c ? c : strcmp(json_string_value(json_object_get(x, "name")), json_string_value(json_object_get(y, "name")));
}

json_t *wk_store_list(const struct wk_store *s)
{
    struct list_ctx c = {s, json_array()};
    walk(s, list_one, &c);
    /* the times are one format (list_one's UTC seconds): they sort as text */
    const size_t n = json_array_size(c.arr);
    json_t **v = n ? wk_malloc(n * sizeof *v) : NULL;
    if (v) {
        for (size_t i = 0; i < n; i++) v[i] = json_incref(json_array_get(c.arr, i));
        qsort(v, n, sizeof *v, cmp_listed);
        json_array_clear(c.arr);
        for (size_t i = 0; i < n; i++) json_array_append_new(c.arr, v[i]);
        wk_free(v);
    }
    return json_pack("{s:o}", "models", c.arr);
}

/* Removes the blobs of digests (an object used as a set: a removed or
 * replaced manifest's) that no manifest names any more; blobs another
 * manifest uses stay, and so do blobs of no manifest at all (an upload
 * waiting for its create, a pull not finished), as in Ollama. The caller
 * holds the store's lock, with the manifest already gone or replaced. */
static void collect_unused(struct wk_store *s, json_t *digests)
{
    if (!json_object_size(digests)) return;
    struct used_ctx c = {json_object()};
    walk(s, mark_used, &c);
    const char *digest;
    json_t *v;
    json_object_foreach(digests, digest, v) {
        if (json_object_get(c.digests, digest) || !wk_digest_ok(digest)) continue;
        char p[4400];
        wk_store_blob_path(s, digest, p, sizeof p);
        unlink(p);
    }
    json_decref(c.digests);
}

enum wk_status wk_store_remove(struct wk_store *s, const struct wk_model_name *n, struct wk_error *err)
{
    char path[4200], shown[600];
    wk_store_manifest_path(s, n, path, sizeof path);
    wk_model_name_format(n, shown, sizeof shown);
    int lk = store_lock(s);
    /* its own blobs, read before the manifest goes */
    struct used_ctx own = {json_object()};
    mark_used(&own, n, path);
    if (unlink(path)) {
        int e = errno;
        store_unlock(lk);
        json_decref(own.digests);
        return wk_error_set(err, e == ENOENT ? WK_E_NOT_FOUND : WK_E_IO, "model '%s' %s", shown,
                            e == ENOENT ? "not found" : strerror(e));
    }
    /* the folders left empty (model, namespace, host), as Ollama's PruneDirectory: rmdir fails on one in use */
    for (int up = 0; up < 3; up++) {
        *strrchr(path, '/') = '\0';
        if (rmdir(path)) break;
    }
    collect_unused(s, own.digests);
    json_decref(own.digests);
    store_unlock(lk);
    return WK_OK;
}

void wk_store_drop_created(struct wk_store *s)
{
    if (!s->n_created) return;
    int lk = store_lock(s);
    struct used_ctx c = {json_object()};
    walk(s, mark_used, &c);
    for (int i = 0; i < s->n_created; i++) {
        if (json_object_get(c.digests, s->created[i])) continue; /* another model has it meanwhile */
        char p[4200];
        wk_store_blob_path(s, s->created[i], p, sizeof p);
        unlink(p);
    }
    json_decref(c.digests);
    s->n_created = 0;
    store_unlock(lk);
}

/* A temporary name of a wick process, ".tmp-<pid>-...": that pid, or 0. */
static pid_t temp_owner(const char *name)
{
    if (strncmp(name, ".tmp-", 5) != 0) return 0;
    char *end;
    long pid = strtol(name + 5, &end, 10);
    return end != name + 5 && *end == '-' && pid > 0 && pid < (1L << 30) ? (pid_t)pid : 0;
}

static void remove_tree_at(const char *path, int depth)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) return;
    if (S_ISDIR(sb.st_mode) && depth < 4) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char p[4400];
            snprintf(p, sizeof p, "%.4000s/%.255s", path, e->d_name);
            remove_tree_at(p, depth + 1);
        }
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* The newest modification time in path's tree (to 4 levels down). */
static time_t newest_mtime(const char *path, int depth)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) return 0;
    time_t t = sb.st_mtime;
    DIR *d = S_ISDIR(sb.st_mode) && depth < 4 ? opendir(path) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[4400];
        snprintf(p, sizeof p, "%.4000s/%.255s", path, e->d_name);
        time_t u = newest_mtime(p, depth + 1);
        if (u > t) t = u;
    }
    if (d) closedir(d);
    return t;
}

/* A temporary untouched this long is stale once its process is gone: a
 * process of another PID namespace (a container sharing the store) may
 * carry a number no process of ours has, and be writing still. */
#define STALE_AFTER_S (10 * 60)

/* The stale temporaries in folder dir (and, to depth more levels, its
 * sub-folders): removed. */
static int clean_dir(const char *dir, int more)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int removed = 0;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[4400];
        snprintf(p, sizeof p, "%.4000s/%.255s", dir, e->d_name);
        pid_t pid = temp_owner(e->d_name);
        if (pid) {
            if (kill(pid, 0) != 0 && errno == ESRCH && newest_mtime(p, 0) < time(NULL) - STALE_AFTER_S) {
                remove_tree_at(p, 0);
                removed++;
            }
            continue;
        }
        struct stat sb;
        if (more > 0 && e->d_name[0] != '.' && lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            removed += clean_dir(p, more - 1);
    }
    if (d) closedir(d);
    return removed;
}

int wk_store_clean_stale(struct wk_store *s)
{
    char p[4200];
    int removed = clean_dir(s->dir, 0);
    snprintf(p, sizeof p, "%.4000s/blobs", s->dir);
    removed += clean_dir(p, 0);
    snprintf(p, sizeof p, "%.4000s/hf", s->dir);
    removed += clean_dir(p, 0);
    snprintf(p, sizeof p, "%.4000s/manifests", s->dir);
    removed += clean_dir(p, 3); /* manifests/<host>/<ns>/<name>/ */
    return removed;
}

enum wk_status wk_store_copy(struct wk_store *s, const struct wk_model_name *src,
                             const struct wk_model_name *dst, struct wk_error *err)
{
    json_t *m;
    enum wk_status st = wk_store_read_manifest(s, src, &m, err);
    if (st) return st;
    st = wk_store_write_manifest(s, dst, m, err);
    json_decref(m);
    return st;
}

/* ------------------------------------------------------------ resolve */

/* A safetensors model's files as a folder the loader reads: <dir>/hf/<the
 * manifest's tensor digests, hashed>/<file name> -> its blob, made once
 * (in a temporary folder renamed into place), so the weights are used
 * straight from the blobs. */
/* Whether layer l belongs to the folder of the target (draft false) or of
 * the draft, and the file name it gets there. */
static const char *folder_file(json_t *l, bool draft)
{
    const char *mt = json_string_value(json_object_get(l, "mediaType"));
    const char *n = json_string_value(json_object_get(l, "name"));
    if (!mt || !n) return NULL;
    bool is_draft = strncmp(n, "draft/", 6) == 0;
    if (is_draft != draft) return NULL;
    if (draft ? strcmp(mt, WK_MT_DRAFT) && strcmp(mt, WK_MT_JSON) : strcmp(mt, WK_MT_TENSOR) && strcmp(mt, WK_MT_JSON))
        return NULL;
    n += draft ? 6 : 0;
    return *n && !strchr(n, '/') && n[0] != '.' ? n : NULL;
}

static enum wk_status hf_folder(const struct wk_store *s, json_t *m, bool draft, char *out, size_t cap,
                                struct wk_error *err)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(m, "layers"), i, l) {
        const char *d = json_string_value(json_object_get(l, "digest"));
        const char *n = folder_file(l, draft);
        if (!d || !n) continue;
        EVP_DigestUpdate(ctx, n, strlen(n) + 1);
        EVP_DigestUpdate(ctx, d, strlen(d) + 1);
    }
    char id[80];
    hex_digest(ctx, id);
    EVP_MD_CTX_free(ctx);
    snprintf(out, cap, "%.3000s/hf/%.16s", s->dir, id + 7);
    struct stat sb;
    if (stat(out, &sb) == 0) return WK_OK;
    char parent[4200], tmp[4300];
    snprintf(parent, sizeof parent, "%s/hf", s->dir);
    snprintf(tmp, sizeof tmp, "%s/.tmp-%d-%.16s", parent, (int)getpid(), id + 7);
    if (!mkdirs(tmp)) return wk_error_set(err, WK_E_IO, "cannot create %s: %s", tmp, strerror(errno));
    json_array_foreach(json_object_get(m, "layers"), i, l) {
        const char *n = folder_file(l, draft);
        if (!n) continue;
        char blob[4200], link[4500];
        wk_store_blob_path(s, json_string_value(json_object_get(l, "digest")), blob, sizeof blob);
        snprintf(link, sizeof link, "%s/%s", tmp, n);
        if (symlink(blob, link) && errno != EEXIST)
            return wk_error_set(err, WK_E_IO, "cannot link %s: %s", link, strerror(errno));
    }
    if (rename(tmp, out) && stat(out, &sb) != 0)
        return wk_error_set(err, WK_E_IO, "cannot create %s: %s", out, strerror(errno));
    return WK_OK;
}

bool wk_name_is_path(const char *name)
{
    struct stat sb;
    size_t len = strlen(name);
    return stat(name, &sb) == 0 || name[0] == '/' || name[0] == '.' || name[0] == '~' ||
           (len > 5 && strcmp(name + len - 5, ".gguf") == 0);
}

/* Every blob manifest m names (its config and layers) present with the
 * size the manifest gives: else WK_E_NOT_FOUND naming the model, the
 * layer's media type and the blob (missing, or its size). */
static enum wk_status blobs_present(const struct wk_store *s, json_t *m, const char *name, struct wk_error *err)
{
    json_t *layers = json_object_get(m, "layers");
    for (size_t i = 0; i <= json_array_size(layers); i++) {
        json_t *l = i == 0 ? json_object_get(m, "config") : json_array_get(layers, i - 1);
        const char *d = json_string_value(json_object_get(l, "digest"));
        const char *mt = json_string_value(json_object_get(l, "mediaType"));
        json_t *size = json_object_get(l, "size");
        char shown[160];
        wk_str_printable(name, strlen(name), shown, sizeof shown);
        if (!d || !wk_digest_ok(d) || !json_is_integer(size))
            return wk_error_set(err, WK_E_FORMAT, "model '%s': its manifest's %s has no valid digest and size", shown,
                                i == 0 ? "config" : "layer");
        char path[4200];
        struct stat sb;
        wk_store_blob_path(s, d, path, sizeof path);
        if (stat(path, &sb) != 0)
            return wk_error_set(err, WK_E_NOT_FOUND, "model '%s': its %s blob %s is missing: %s", shown,
                                mt ? mt : "config", path, strerror(errno));
        if ((uint64_t)sb.st_size != (uint64_t)json_integer_value(size))
            return wk_error_set(err, WK_E_FORMAT, "model '%s': its %s blob %s has %lld bytes, the manifest says %lld "
                                "(truncated or damaged)", shown, mt ? mt : "config", path, (long long)sb.st_size,
                                (long long)json_integer_value(size));
    }
    return WK_OK;
}

enum wk_status wk_store_resolve(const struct wk_store *s, const char *name, bool allow_paths,
                                struct wk_store_model *out, struct wk_error *err)
{
    memset(out, 0, sizeof *out);
    /* the CLI: anything that exists, or looks like a path, goes to the loader,
     * which says what is wrong with it (no such file, a FIFO, not GGUF) */
    if (allow_paths && wk_name_is_path(name)) {
        snprintf(out->weights, sizeof out->weights, "%s", name);
        out->params = json_object();
        out->messages = json_array();
        return WK_OK;
    }
    struct wk_model_name n;
    enum wk_status st = wk_model_name_parse(name, &n, err);
    if (st) {
        char shown[160];
        wk_str_printable(name, strlen(name), shown, sizeof shown);
        return !allow_paths || access(name, F_OK) == 0 || strchr(name, '/')
                   ? wk_error_set(err, WK_E_NOT_FOUND, "model '%s' not found", shown)
                   : st;
    }
    if ((st = wk_store_read_manifest(s, &n, &out->manifest, err))) return st;
    const char *w = wk_manifest_layer(out->manifest, WK_MT_MODEL);
    if ((st = blobs_present(s, out->manifest, name, err))) {
        wk_store_model_deinit(out);
        return st;
    }
    if (w) wk_store_blob_path(s, w, out->weights, sizeof out->weights);
    else if (wk_manifest_layer(out->manifest, WK_MT_TENSOR))
        st = hf_folder(s, out->manifest, false, out->weights, sizeof out->weights, err);
    else
        st = wk_error_set(err, WK_E_UNSUPPORTED, "model '%s' has no weights layer", name);
    if (st) {
        wk_store_model_deinit(out);
        return st;
    }
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(out->manifest, "layers"), i, l) {
        const char *mt = json_string_value(json_object_get(l, "mediaType"));
        if (strcmp(mt, WK_MT_DRAFT) != 0) continue;
        if (json_object_get(l, "name")) /* a safetensors draft: a folder */
            st = hf_folder(s, out->manifest, true, out->draft, sizeof out->draft, err);
        else
            wk_store_blob_path(s, json_string_value(json_object_get(l, "digest")), out->draft, sizeof out->draft);
        break;
    }
    if (st) {
        wk_store_model_deinit(out);
        return st;
    }
    char *params = wk_store_layer_text(s, out->manifest, WK_MT_PARAMS);
    char *msgs = wk_store_layer_text(s, out->manifest, WK_MT_MESSAGES);
    out->params = params ? json_loads(params, 0, NULL) : NULL;
    out->messages = msgs ? json_loads(msgs, 0, NULL) : NULL;
    wk_free(params);
    wk_free(msgs);
    if (!json_is_object(out->params)) json_decref(out->params), out->params = json_object();
    if (!json_is_array(out->messages)) json_decref(out->messages), out->messages = json_array();
    out->system = wk_store_layer_text(s, out->manifest, WK_MT_SYSTEM);
    out->template_text = wk_store_layer_text(s, out->manifest, WK_MT_TEMPLATE);
    return WK_OK;
}

void wk_store_model_deinit(struct wk_store_model *m)
{
    json_decref(m->params);
    json_decref(m->messages);
    json_decref(m->manifest);
    wk_free(m->system);
    wk_free(m->template_text);
    memset(m, 0, sizeof *m);
}
