/*
 * wk_store.h - the local model store, the same shape as Ollama's
 * (docs/reference/ollama-mlx-runner.md §6.5):
 *
 *   <dir>/blobs/sha256-<hex>                          content-addressed files
 *   <dir>/manifests/<host>/<namespace>/<name>/<tag>   JSON manifests
 *
 * dir is WICK_MODELS, else ~/.wick/models. A manifest has schemaVersion 2,
 * a config layer (a JSON blob: model_format, model_family, file_type,
 * capabilities, draft) and layers {mediaType, digest, size} for the
 * weights (a GGUF file), params (JSON of typed PARAMETERs), template,
 * system, license, messages (JSON list) and the draft model's weights.
 *
 * Crash safety: every file is written to a temporary name in its folder,
 * fsync'd and renamed; a manifest is written only after all its blobs
 * are in place. So a create killed at any moment leaves at most a stray
 * temporary file, never a manifest pointing at a missing or partial blob,
 * and `wick list` (which reads manifests) never shows a half model.
 */
#ifndef WK_STORE_H
#define WK_STORE_H

#include "../base/wk_base.h"
#include "../io/wk_modelfile.h"

#include <jansson.h>

#define WK_MT_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define WK_MT_CONFIG "application/vnd.docker.container.image.v1+json"
#define WK_MT_MODEL "application/vnd.ollama.image.model"       /* GGUF weights */
#define WK_MT_DRAFT "application/vnd.ollama.image.draft"       /* GGUF weights of the draft */
#define WK_MT_TENSOR "application/vnd.ollama.image.tensor"     /* safetensors */
#define WK_MT_JSON "application/vnd.ollama.image.json"
#define WK_MT_PARAMS "application/vnd.ollama.image.params"
#define WK_MT_TEMPLATE "application/vnd.ollama.image.template"
#define WK_MT_SYSTEM "application/vnd.ollama.image.system"
#define WK_MT_LICENSE "application/vnd.ollama.image.license"
#define WK_MT_MESSAGES "application/vnd.ollama.image.messages"

#define WK_DEFAULT_HOST "registry.ollama.ai"
#define WK_DEFAULT_NAMESPACE "library"

/* A model name: [host/][namespace/]name[:tag]. */
struct wk_model_name {
    char host[128], ns[128], name[128], tag[128];
};
/* Bytes of the longest name wk_model_name_parse takes ("host/ns/name:tag"
 * of four 127-byte parts), with its NUL. */
#define WK_MODEL_NAME_MAX 512

/*
 * Parses s. Parts are letters, digits, '_', '-' and '.', not starting
 * with '.' or '-' (so no "..", no absolute paths), at most 127 bytes;
 * the tag defaults to "latest", namespace and host to Ollama's defaults.
 * Errors: WK_E_INVALID naming s and what is wrong.
 */
enum wk_status wk_model_name_parse(const char *s, struct wk_model_name *out, struct wk_error *err);
/* "name:tag" (with namespace/ and host/ in front when not the defaults). */
void wk_model_name_format(const struct wk_model_name *n, char *out, size_t cap);

struct wk_store;

/* WICK_MODELS, else OLLAMA_MODELS, else ~/.wick/models, into out[cap]. */
void wk_store_default_dir(char *out, size_t cap);
/* Opens (creating its folders) the store at dir. Errors: WK_E_IO, WK_E_NOMEM. */
enum wk_status wk_store_open(const char *dir, struct wk_store **out, struct wk_error *err);
void wk_store_close(struct wk_store *s);

/* Removes the blobs this handle wrote since its last manifest (not those
 * it found stored already) that no manifest names: what a failed create
 * leaves behind. Under the store's lock, so a manifest another process
 * writes meanwhile keeps its blobs. */
void wk_store_drop_created(struct wk_store *s);

/* Removes the temporary files and folders of wick processes that no
 * longer run (".tmp-<pid>-..." in the store, blobs/, hf/ and the manifest
 * folders: a create or a download killed midway); those of live processes
 * stay. Returns how many were removed. */
int wk_store_clean_stale(struct wk_store *s);
const char *wk_store_dir(const struct wk_store *s);

/* Called while a blob is copied: bytes done of total. */
typedef void (*wk_store_progress_fn)(void *user, uint64_t done, uint64_t total);

/* Copies the file at path into the store as a blob (SHA-256 by OpenSSL's
 * libcrypto while copying), or finds it there already. digest:
 * "sha256:<64 hex>". Errors: WK_E_IO naming the file, WK_E_NOMEM. */
enum wk_status wk_store_add_file(struct wk_store *s, const char *path, wk_store_progress_fn progress,
                                 void *user, char digest[80], uint64_t *size, struct wk_error *err);
/* The same for bytes in memory. */
enum wk_status wk_store_add_bytes(struct wk_store *s, const void *data, size_t len, char digest[80],
                                  struct wk_error *err);
/* A blob written as its bytes arrive (POST /api/blobs/:digest): a
 * temporary file in blobs/, hashed while written. */
struct wk_blob_writer;
/* Starts one into *out (owned: commit or abort ends it). Errors: WK_E_IO,
 * WK_E_NOMEM. */
enum wk_status wk_store_blob_begin(struct wk_store *s, struct wk_blob_writer **out, struct wk_error *err);
/* Appends data [n bytes]. Errors: WK_E_IO (disk full, ...); the writer
 * stays for abort. */
enum wk_status wk_store_blob_write(struct wk_blob_writer *w, const void *data, size_t n, struct wk_error *err);
/* Ends w: the SHA-256 of what was written into digest ("sha256:<hex>");
 * when expected is not NULL and differs, WK_E_INVALID ("digest
 * mismatch ...") and nothing is stored; else the file is fsync'd and
 * renamed to its digest (or dropped when that blob is stored already).
 * Errors: WK_E_INVALID, WK_E_IO. w is freed either way. */
enum wk_status wk_store_blob_commit(struct wk_blob_writer *w, const char *expected, char digest[80],
                                    struct wk_error *err);
/* Drops w and its temporary file (NULL: nothing). */
void wk_store_blob_abort(struct wk_blob_writer *w);
/* Whether d is "sha256:" and 64 lower-case hex digits: a digest that may
 * name a blob file (a registry's or a client's digest is checked with it
 * before any path is made of it). */
bool wk_digest_ok(const char *d);
/* The path of blob digest ("sha256:<hex>") into out[cap]. */
void wk_store_blob_path(const struct wk_store *s, const char *digest, char *out, size_t cap);
/* The path of model n's manifest file (which may not exist) into out[cap];
 * each part of the name that the store holds in another case (and not in
 * n's) takes the stored case: names match ignoring case, as Ollama's do. */
void wk_store_manifest_path(const struct wk_store *s, const struct wk_model_name *n, char *out, size_t cap);
/* Rewrites n's parts in the spelling the store holds them in, where they
 * match one ignoring case (Ollama's getExistingName): SMOL:latest becomes
 * smol:latest when smol is stored; parts with no match stay as they are. */
void wk_store_existing_name(const struct wk_store *s, struct wk_model_name *n);

/* Reads model n's manifest (owned by the caller). Errors: WK_E_NOT_FOUND
 * ("model 'x' not found"), WK_E_FORMAT (not a manifest). */
enum wk_status wk_store_read_manifest(const struct wk_store *s, const struct wk_model_name *n,
                                      json_t **out, struct wk_error *err);
/* Writes model n's manifest atomically, after checking every blob it
 * names exists with its size. When it replaces n's manifest, the old
 * one's blobs that no manifest names any more are removed (as `rm` does).
 * Errors: WK_E_NOT_FOUND (a missing blob), WK_E_IO. */
enum wk_status wk_store_write_manifest(struct wk_store *s, const struct wk_model_name *n,
                                       json_t *manifest, struct wk_error *err);
/* wk_store_write_manifest with the manifest's file holding bytes [len]
 * (manifest their parse, for the blob checks): a pulled manifest as the
 * registry sent it, so its digest stays the registry's. */
enum wk_status wk_store_write_manifest_bytes(struct wk_store *s, const struct wk_model_name *n, json_t *manifest,
                                             const char *bytes, size_t len, struct wk_error *err);
/* The digest of the first layer of media type mt in manifest m, or NULL. */
const char *wk_manifest_layer(json_t *m, const char *mt);
/* The text of the first layer of media type mt (wk_malloc'd), or NULL. */
char *wk_store_layer_text(const struct wk_store *s, json_t *m, const char *mt);
/* The whole of blob digest ("sha256:<hex>") as a NUL-terminated string
 * (wk_malloc'd; it may hold other NULs), or NULL when it cannot be read. */
char *wk_store_blob_text(const struct wk_store *s, const char *digest);

/* The stored model of manifest m as a Modelfile, as `ollama show
 * --modelfile` prints one: a comment naming `name`, FROM and DRAFT the
 * blob paths (so `wick create` from it reuses them), TEMPLATE, SYSTEM,
 * PARAMETERs, MESSAGEs, LICENSEs. wk_malloc'd; NULL (err set) when a
 * stored layer is not what it should be, or out of memory. */
char *wk_store_modelfile(const struct wk_store *s, json_t *m, const char *name, struct wk_error *err);

/* Ollama's "parameters" text of /api/show: one line per value (each of a
 * list), "%-30s %s" of the name and the value as JSON, names sorted.
 * wk_malloc'd ("" when params is empty or not an object). */
char *wk_store_params_text(json_t *params);

/* Ollama's capabilities of the model at weights (a GGUF file or a folder;
 * may be NULL): "embedding" for an encoder family (bert, nomic-bert) or a
 * GGUF that names a pooling_type (wk_embed_gguf_has_pooling, as Ollama's
 * server/images.go decides), else "completion", plus "tools" and
 * "thinking" when the template that renders its chats (tmpl: a Go
 * TEMPLATE when go, else a Jinja chat template; may be NULL) renders tools
 * and thinking, and "insert" (a suffix: fill in the middle) when a Go
 * TEMPLATE names .Suffix (Ollama's rule) or the vocabulary has FIM tokens
 * (wk_tokenizer_path_has_fim). A new JSON array. */
json_t *wk_capabilities(const char *tmpl, bool go, const char *family, const char *weights);

/* {"models": [{name, model, modified_at, size, digest, ...}]}: every
 * manifest, for `wick list` and /api/tags. */
json_t *wk_store_list(const struct wk_store *s);
/* Removes model n, then those of its blobs no remaining manifest names
 * (blobs of no manifest at all, such as an upload waiting for its create
 * or a pull under way, are not touched).
 * Errors: WK_E_NOT_FOUND, WK_E_IO. */
enum wk_status wk_store_remove(struct wk_store *s, const struct wk_model_name *n, struct wk_error *err);
/* Copies model src's manifest to dst. Errors: WK_E_NOT_FOUND, WK_E_IO. */
enum wk_status wk_store_copy(struct wk_store *s, const struct wk_model_name *src,
                             const struct wk_model_name *dst, struct wk_error *err);

/* MESSAGE lines a stored model may hold (wk_store_create refuses more). */
#define WK_STORE_MAX_MESSAGES 10000

/*
 * Adds parameter k with JSON value v (Ollama's params: a number, a bool,
 * a string, or a list of them for `stop`) to mf through
 * wk_modelfile_add_param, each value as the text a Modelfile would hold.
 * Errors: WK_E_INVALID (a value of another type, or those of
 * wk_modelfile_add_param).
 */
enum wk_status wk_modelfile_add_json_param(struct wk_modelfile *mf, const char *k, json_t *v,
                                           struct wk_error *err);

/* How wk_store_create reports and where relative paths start. */
struct wk_create_opts {
    const char *base_dir;            /* FROM/DRAFT paths are relative to it (the Modelfile's folder) */
    const char *quantize, *quantize_draft; /* NULL: keep the types (quantization: not yet) */
    wk_store_progress_fn progress;   /* while copying weights; may be NULL */
    void (*status)(void *user, const char *line); /* "copying model data from ...", ...; may be NULL */
    void *user;
    /* FROM names a stored model only; no DRAFT, no quantize: no file or
     * folder of this machine is opened, or even looked at, for the
     * Modelfile (the server's /api/create unless the operator allows
     * paths). Refusals are WK_E_PERMISSION naming the setting. */
    bool no_paths;
};

/*
 * Creates model n from mf: FROM a GGUF file or a stored model (whose
 * layers mf's commands override), DRAFT a GGUF file sharing the target's
 * vocabulary; PARAMETERs over the base's (stop lists replace), TEMPLATE,
 * SYSTEM, MESSAGEs, LICENSEs. Errors: WK_E_INVALID (DRAFT the same as FROM,
 * --quantize-draft without DRAFT, another vocabulary), WK_E_NOT_FOUND (FROM
 * neither a file nor a stored model), WK_E_UNSUPPORTED (safetensors,
 * quantization; RENDERER or PARSER, Ollama's built-in Go renderers and
 * parsers), WK_E_RANGE (more than WK_STORE_MAX_MESSAGES messages),
 * WK_E_FORMAT (not GGUF), WK_E_IO.
 */
enum wk_status wk_store_create(struct wk_store *s, const struct wk_model_name *n,
                               const struct wk_modelfile *mf, const struct wk_create_opts *o,
                               struct wk_error *err);

/*
 * Quantizes the Hugging Face folder src into the existing folder dst:
 * every weight of its model*.safetensors to the GGUF block type of `type`
 * (q8_0, q4_0, q6_K, q4_K_M) or the affine groups of 64 (int8, int4;
 * case-insensitive) under the policy quantize.c states, stored as U8 rows
 * of blocks with "wick.dtype.<name>" in the file's metadata; JSON and
 * template files copied. uniform (for a speculative draft): every weight in
 * that type, the embedding and the 8-bit promotions included. Errors:
 * WK_E_INVALID (an unknown type), those of the safetensors reader and
 * writer.
 */
enum wk_status wk_quantize_folder(const char *src, const char *dst, const char *type, bool uniform,
                                  struct wk_error *err);

/* What running a stored model needs. */
struct wk_store_model {
    char weights[4096]; /* the GGUF blob's path */
    char draft[4096];   /* the draft's GGUF blob, or "" */
    json_t *params;     /* typed PARAMETERs ({} when none) */
    char *system;       /* SYSTEM, or NULL */
    char *template_text;
    json_t *messages;   /* MESSAGE list ([] when none) */
    json_t *manifest;
};
/*
 * Resolves name: a store model, or, when allow_paths and name is the path
 * of an existing file, that GGUF file itself with no
 * parameters (the CLI; the server never takes paths). Errors:
 * WK_E_NOT_FOUND ("model 'x' not found", or a blob of its manifest
 * missing), WK_E_INVALID (a bad name), WK_E_FORMAT (a blob whose size is
 * not the manifest's: truncated).
 */
/* Whether the CLI takes name as a file or folder rather than a model
 * name: it exists, starts with '/', '.' or '~', or ends in ".gguf"
 * ("ns/name" and "host:port/ns/name:tag" that name no file are models). */
bool wk_name_is_path(const char *name);
enum wk_status wk_store_resolve(const struct wk_store *s, const char *name, bool allow_paths,
                                struct wk_store_model *out, struct wk_error *err);
void wk_store_model_deinit(struct wk_store_model *m);

/* The GGUF file's (or Hugging Face folder's) details object as Ollama shows it (format, family,
 * families, parameter_size, quantization_level) and, when model_info is
 * not NULL, Ollama's model_info keys (general.*, <arch>.context_length,
 * ...) and, when template_out is not NULL, its chat template
 * (wk_malloc'd). NULL when the file cannot be read as GGUF. */
json_t *wk_model_details(const char *path, json_t **model_info, char **template_out);

#endif
