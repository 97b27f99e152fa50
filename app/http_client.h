/*
 * http_client.h - the commands that talk to a running server (`wick run`
 * when one answers, `wick ps`, `wick stop`): where the server is, and
 * HTTP requests to it through libcurl, whole or streamed line by line
 * (Ollama's NDJSON).
 *
 * The address as Ollama's (envconfig.Host) with wick's first: WICK_HOST, else OLLAMA_HOST,
 * else 127.0.0.1:11434; "[scheme://]host[:port][/path]", every part
 * optional, an IPv6 host in brackets ("[::1]:11434"); a missing port is
 * 11434 (80 for http://, 443 for https://), a bad one too; an
 * unspecified address (0.0.0.0, ::) means this machine's loopback.
 */
#ifndef WK_HTTP_CLIENT_H
#define WK_HTTP_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bytes of a server's base URL, with its NUL. */
#define CLI_URL_MAX 512

/*
 * Parses the server address s (borrowed; NULL or "" for the default) as
 * Ollama does into the base URL out[cap] ("http://127.0.0.1:11434", no
 * trailing slash; a path after the host is kept: "http://h:1/prefix").
 */
void cli_host_parse(const char *s, char *out, size_t cap);

/* The base URL of the server the client commands talk to: WICK_HOST,
 * else OLLAMA_HOST (wick serve's order), else the default, through
 * cli_host_parse. */
void cli_server_url(char *out, size_t cap);

/* A whole answer: its HTTP status and body (malloc'd, NUL-terminated,
 * owned by the caller: free()). */
struct cli_http_reply {
    long status;
    char *body;
    size_t len;
};

/*
 * GET base+path (body NULL) or POST body (JSON, borrowed) to it, waiting
 * at most timeout_ms (0: no limit). Returns true with *out filled when
 * the server answered (any status), false with err[cap] saying why not
 * (connection refused, timeout) and *out empty.
 */
bool cli_http_request(const char *base, const char *path, const char *body, long timeout_ms,
                      struct cli_http_reply *out, char *err, size_t cap);

/* As cli_http_request with method (NULL: GET, or POST with a body), as
 * Ollama's DELETE /api/delete takes a JSON body. */
bool cli_http_send(const char *method, const char *base, const char *path, const char *body, long timeout_ms,
                   struct cli_http_reply *out, char *err, size_t cap);

/* POSTs size bytes read from f to base+path (application/octet-stream:
 * Ollama's POST /api/blobs/:digest), streamed, no time limit. Returns as
 * cli_http_request. */
bool cli_http_upload(const char *base, const char *path, FILE *f, int64_t size, struct cli_http_reply *out,
                     char *err, size_t cap);

/* What answers GET base/api/version within timeout_ms: a wick or Ollama
 * server (UP), nothing (NONE: the connection refused, no such host, or an
 * answer that is not a server's version), or a peer that took the
 * connection and did not answer in time (STALLED: a busy or hung server,
 * which a caller must not take for no server). */
enum cli_probe { CLI_SERVER_NONE, CLI_SERVER_UP, CLI_SERVER_STALLED };
enum cli_probe cli_probe_server(const char *base, long timeout_ms);

/*
 * The same, the answer read as JSON: the parsed body (owned by the
 * caller) and its status in *status, or NULL with err[cap] saying why
 * (no answer, or a body that is not JSON).
 */
json_t *cli_http_json(const char *base, const char *path, const char *body, long timeout_ms, long *status,
                      char *err, size_t cap);

/* Called with each line of a streamed 200 answer (line[0..len), without
 * its newline, not NUL-terminated); false stops the request. */
typedef bool (*cli_line_fn)(void *user, const char *line, size_t len);

/*
 * POSTs body (JSON, borrowed) to base+path and hands each line of a 200
 * answer to on_line as it arrives. An answer with another status is kept
 * whole in *error_body instead (NUL-terminated, owned by the caller: free
 * it with wk_free; NULL when there was none). *cancel (may be NULL),
 * checked at least every 100 ms, aborts the request by closing the
 * connection (a server cancels the generation when its client leaves).
 * Returns 0 when the request ran to its end, 1 when *cancel or on_line
 * stopped it, -1 when the server could not be reached or the connection
 * failed (err[cap] says why).
 */
int cli_http_stream(const char *base, const char *path, const char *body, cli_line_fn on_line, void *user,
                    const volatile bool *cancel, long *status, char **error_body, char *err, size_t cap);

/* The message of an Ollama error answer ({"error": "..."}, borrowed from
 * j), else fallback. */
const char *cli_error_message(json_t *j, const char *fallback);

#endif
