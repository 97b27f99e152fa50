/*
 * registry_internal.h - what registry.c (the HTTP session: requests,
 * Bearer tokens, error messages), registry_pull.c and registry_push.c
 * share. Not part of the store's interface (wk_registry.h is).
 */
#ifndef WK_REGISTRY_INTERNAL_H
#define WK_REGISTRY_INTERNAL_H

#include "wk_registry.h"

#include <curl/curl.h>

/* The largest manifest, token or error body read into memory. */
#define WK__REG_MAX_BODY ((size_t)4 << 20)
/* Seconds a request whose answer is read into memory (a manifest, a
 * token, a HEAD, an upload's start, a manifest's PUT) may take in all: a registry
 * that trickles such an answer (a byte or two a second, which the stall
 * rule lets through) would otherwise hold a pull for days. Blob transfers
 * have no such limit, only the stall rule. WICK_REGISTRY_TIMEOUT (seconds)
 * overrides it. */
#define WK__REG_SMALL_TIMEOUT_S 60L
/* Blobs of one manifest at most (a safetensors model has one per file). */
#define WK__REG_MAX_BLOBS 4096

/* One pull's or push's session with a registry: one libcurl handle (its
 * connections kept between requests), the Bearer token once one is got. */
struct wk__reg {
    CURL *curl;
    const struct wk_registry_opts *o;
    char host[128];  /* "host[:port]" */
    char base[160];  /* "https://host[:port]" (http:// when insecure) */
    char repo[260];  /* "ns/name" */
    char tag[128];
    char shown[600]; /* the model's name as written (wk_model_name_format) */
    char *token;     /* the Bearer token (wk_malloc'd), or NULL */
    int64_t last_emit_ns;
};

/* One HTTP request and what came back. The caller fills the inputs,
 * zero-initialising the rest; wk__reg_req_deinit frees resp. */
struct wk__reg_req {
    const char *method;             /* "GET", "HEAD", "POST", "PUT" */
    const char *url;                /* absolute */
    const char *accept, *content_type; /* headers, or NULL */
    uint64_t range_from;            /* GET: "Range: bytes=<range_from>-" when nonzero */
    const void *body;               /* PUT/POST body in memory (body_len bytes), or */
    size_t body_len;
    bool body_file;                 /* ... or from file body_fd, body_size bytes */
    int body_fd;
    uint64_t body_size;
    /* a 2xx response's body goes here (return n to go on, anything else
     * stops the transfer); NULL: into resp, up to WK__REG_MAX_BODY */
    size_t (*sink)(void *user, const char *p, size_t n);
    void *sink_user;
    void (*sent)(void *user, uint64_t n_sent); /* upload progress, or NULL */
    /* out */
    long status;
    char location[2048], content_range[160], www_auth[1024];
    struct wk_buf resp;             /* the body when no sink took it (an error's, say) */
    uint64_t body_off;              /* bytes of the body sent */
    int read_errno;                 /* why reading body_fd failed, or 0 */
    bool cancelled, too_big;
    struct wk__reg *reg;            /* set by wk__reg_perform, for the callbacks */
};

/* Opens a session for model n (its base URL from n->host and o->insecure).
 * Errors: WK_E_NOMEM, WK_E_INTERNAL (libcurl could not start). */
enum wk_status wk__reg_open(struct wk__reg *r, const struct wk_model_name *n, const struct wk_registry_opts *o,
                            struct wk_error *err);
void wk__reg_close(struct wk__reg *r);

/* Performs q, answering one 401 Bearer challenge with an anonymous token
 * and repeating q once. Returns WK_OK when an HTTP answer came (of any
 * status: the caller judges q->status), else WK_E_IO (the transport's
 * failure, worded for a person: connection refused naming the host, TLS,
 * a timeout), WK_E_PERMISSION (a challenge wick cannot answer),
 * WK_E_CANCELLED. */
enum wk_status wk__reg_perform(struct wk__reg *r, struct wk__reg_req *q, struct wk_error *err);
void wk__reg_req_deinit(struct wk__reg_req *q);

/* The error for q's HTTP status: "registry <host>: <what>: HTTP <status>:
 * <the registry's error codes and messages>". 404 is WK_E_NOT_FOUND, 401
 * and 403 WK_E_PERMISSION, other statuses WK_E_IO. Returns the status. */
enum wk_status wk__reg_http_error(struct wk__reg *r, const struct wk__reg_req *q, const char *what,
                                  struct wk_error *err);

/* A report to the caller's progress function (if any). A blob's report
 * (digest set) with completed < total is dropped when the last one was
 * under 60 ms ago, unless force. */
void wk__reg_emit(struct wk__reg *r, const char *status, const char *digest, uint64_t total, uint64_t completed,
                  bool force);
/* Whether the caller cancelled. */
bool wk__reg_cancelled(const struct wk__reg *r);


#endif
