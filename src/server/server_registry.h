/*
 * server_registry.h - POST /api/pull and POST /api/push: Ollama's
 * PullHandler and PushHandler (server/routes.go) over wick's registry
 * client (src/store/wk_registry.h). server_registry.c.
 */
#ifndef WK_SERVER_REGISTRY_H
#define WK_SERVER_REGISTRY_H

#include <jansson.h>
#include <microhttpd.h>

struct srv_server;

/*
 * POST /api/pull: body {"model" (or "name"), "insecure" (bool, plain
 * http), "stream" (bool, default true)}. The pull runs on a thread of its
 * own into srv->models_dir while the answer streams: NDJSON progress
 * objects (application/x-ndjson; wk_registry_progress_json's shape),
 * ending in {"status":"success"} or, for an error after the stream
 * started, {"error": "..."}. The answer's status line waits for the
 * registry's manifest, so a pull that fails there (model not found: 404;
 * registry unreachable: 500; credentials wanted: 403) is an HTTP error
 * {"error": "..."}, as is a bad body (400: no model, a bad name, insecure
 * or stream not a bool). stream false: one {"status":"success"} or the
 * error, once the pull is over. A client that disconnects cancels the
 * pull (its partial download kept for the next one); so does the server
 * shutting down (the stream's last line then says so). body is borrowed.
 * Returns MHD's result for the queued answer.
 */
enum MHD_Result srv_serve_pull(struct srv_server *srv, struct MHD_Connection *c, json_t *body);

/* POST /api/push: the same body, shape and behaviour, pushing stored model
 * "model" to its host's registry ("retrieving manifest", "pushing <12
 * hex>", "pushing manifest", "success"); a model not in the store is a
 * 404 before the stream. */
enum MHD_Result srv_serve_push(struct srv_server *srv, struct MHD_Connection *c, json_t *body);

#endif
