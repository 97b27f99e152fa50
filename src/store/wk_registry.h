/*
 * wk_registry.h - `wick pull` and `wick push`: models moved between the
 * store (wk_store.h) and a registry that speaks the OCI distribution
 * protocol (the Docker registry HTTP API v2, distribution's
 * docs/spec/api.md), as Ollama's server/images.go, download.go and
 * upload.go do (docs/reference/ollama-mlx-runner.md §6.5 for the store):
 *
 *   pull  GET  /v2/<ns>/<name>/manifests/<tag>   (Accept: the v2 manifest)
 *         GET  /v2/<ns>/<name>/blobs/<digest>     every layer and the config
 *                                                 (redirects followed)
 *   push  HEAD /v2/<ns>/<name>/blobs/<digest>     present: skipped
 *         POST /v2/<ns>/<name>/blobs/uploads/     -> Location
 *         PUT  <Location>&digest=<digest>         the blob, in one request
 *         PUT  /v2/<ns>/<name>/manifests/<tag>    the manifest
 *
 * A blob is downloaded into <store>/blobs/partial-sha256-<hex>, which
 * outlives a killed pull and is resumed with a Range request by the next
 * one (from the start when the server ignores Range); its SHA-256 is
 * checked before it is renamed to blobs/sha256-<hex>, and a wrong one
 * deletes it and fails naming the digest. The name does not start with
 * "sha256-" or ".tmp-", so nothing in the store takes it for a blob
 * (wk_store_remove's garbage collection) or a stale temporary
 * (wk_store_clean_stale). The manifest is written (atomically) only once
 * every blob is in place. Two pulls of one blob (two processes, or two
 * requests of one server) take turns on it through an flock of the
 * partial file.
 *
 * The registry is https://<host> (the name's host, port included), or
 * http:// with `insecure`. Authentication: a 401 with a Bearer challenge
 * (WWW-Authenticate: Bearer realm=...,service=...,scope=...) is answered
 * with an anonymous token from the realm, as docker clients do for public
 * repositories. Not supported: logins (Basic auth, credentials for the
 * token service) and Ollama's signed-key scheme (registry.ollama.ai signs
 * each token request with the user's ~/.ollama/id_ed25519 key); such a
 * registry's refusal is reported as such. Public models of
 * registry.ollama.ai need no token and pull.
 *
 * Thread-safety: each call is independent (its own libcurl handle); calls
 * may run at once on other threads, on one store or several.
 */
#ifndef WK_REGISTRY_H
#define WK_REGISTRY_H

#include "wk_store.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* One progress report, Ollama's api.ProgressResponse: status is "pulling
 * manifest", "pulling <first 12 hex of digest>", "verifying sha256
 * digest", "writing manifest", "success" for a pull; "retrieving
 * manifest", "pushing <12 hex>", "pushing manifest", "success" for a push.
 * digest ("sha256:<hex>") is NULL on the status-only reports; total and
 * completed are bytes of that blob. Borrowed for the callback's duration. */
struct wk_registry_progress {
    const char *status;
    const char *digest;
    uint64_t total, completed;
};

/* Called with each report, on the calling thread; a blob's reports come at
 * most every 60 ms and once more when it is complete (or found present). */
typedef void (*wk_registry_progress_fn)(void *user, const struct wk_registry_progress *p);
/* Polled between and inside transfers (at least once a second, and per
 * received or sent chunk); returning true stops the operation with
 * WK_E_CANCELLED, a download's partial file kept for the next pull. */
typedef bool (*wk_registry_cancel_fn)(void *user);

/* How wk_registry_pull and wk_registry_push run. Zero-initialised: https,
 * no reports, no cancellation. */
struct wk_registry_opts {
    bool insecure;                    /* plain http (and redirects to it) allowed */
    wk_registry_progress_fn progress; /* may be NULL */
    void *progress_user;
    wk_registry_cancel_fn cancelled;  /* may be NULL */
    void *cancel_user;
};

/*
 * Pulls model n (its host is the registry) into store s: the manifest,
 * then every layer and the config blob not already stored (resuming a
 * partial download), each checked against its SHA-256, then the manifest.
 * Errors (err's message names the registry, the request and the model):
 * WK_E_NOT_FOUND ("model 'x' not found" on a 404 manifest), WK_E_IO (the
 * registry unreachable: "cannot connect to the registry at host:port:
 * Connection refused"; TLS; an HTTP status with the registry's error
 * message; a short download; the store not writable), WK_E_FORMAT (a
 * manifest that is not one; a blob whose bytes hash to another digest,
 * naming both: it is deleted), WK_E_UNSUPPORTED (an image index, a
 * schema 1 manifest), WK_E_PERMISSION (the registry wants credentials or
 * Ollama's signed key), WK_E_CANCELLED, WK_E_NOMEM.
 */
enum wk_status wk_registry_pull(struct wk_store *s, const struct wk_model_name *n, const struct wk_registry_opts *o,
                                struct wk_error *err);

/*
 * Pushes stored model n to its host's registry: each blob the registry
 * lacks (HEAD), uploaded monolithically (POST then PUT ?digest=), then the
 * manifest (PUT, the stored JSON). Errors: WK_E_NOT_FOUND (no such stored
 * model, or a blob missing from the store), WK_E_IO (as for a pull, and a
 * refused upload with the registry's message), WK_E_PERMISSION,
 * WK_E_CANCELLED, WK_E_NOMEM.
 */
enum wk_status wk_registry_push(struct wk_store *s, const struct wk_model_name *n, const struct wk_registry_opts *o,
                                struct wk_error *err);

/* Report p as Ollama's JSON object ({"status"} plus "digest", "total",
 * "completed" when set and nonzero, as Go's omitempty drops them). A new
 * reference (the caller owns it); NULL when out of memory. */
json_t *wk_registry_progress_json(const struct wk_registry_progress *p);

#endif
