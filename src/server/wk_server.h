/*
 * wk_server.h - `wick serve` and its runner processes.
 *
 * Processes: `wick serve` (the HTTP server: routes, validation, the
 * scheduler) starts one `wick runner` subprocess per loaded model. A runner
 * owns the model, its tokenizer and one generation session (KV cache with
 * prefix reuse), and listens on an abstract Unix socket.
 *
 * The runner wire protocol (one connection per request, JSON lines):
 *   server -> runner: one line, a request object:
 *     {"status": true}                       a status query, or a completion:
 *     {"messages": [{"role", "content"}...]} rendered in the model's turn format,
 *      or {"raw": "text"}                    taken literally (BOS added where the model adds one),
 *     "options": {temperature, top_k, top_p, min_p, seed, repeat_last_n, repeat_penalty,
 *                 presence_penalty, frequency_penalty, num_predict} (Ollama's names),
 *                 and draft_max, draft_min (wick's: speculative decoding's cap, 0..15,
 *                 0 = off, and floor, drafting every step),
 *     "stop": [str...], "logit_bias": [[id, bias]...], "logprobs": bool, "top_logprobs": int,
 *     "one_call": bool (the answer ends at its first tool call), "think_relaxed": bool
 *     (think asked of a model that cannot think is none, not a 400), "render_only": bool
 *     (answers {"status": 200, "prompt": text, "prompt_tokens": n}, the tokens counted when
 *     "count" is true, else 0; nothing generated)
 *   runner -> server:
 *     {"status": 200, "prompt_tokens": n} once the prompt is rendered, tokenized and fits
 *       (done on the connection's own thread, before queueing), or {"status": 400, "error": msg}
 *       and the connection closes;
 *     {"content": str, "logprobs": [entry...]?} for each piece of text;
 *     {"done": true, "done_reason": "stop"|"length", "prompt_tokens", "prompt_eval_count",
 *      "prompt_eval_duration", "eval_count", "eval_duration", "draft"?: {"rounds",
 *      "drafted", "accepted"} (when the draft model ran), "stop_sequence"?: the stop string
 *      that ended it} at the end,
 *     or {"error": msg, "status": 500} as the last line.
 *   Logprob entries have Ollama's shape: {"token", "logprob", "bytes", "top_logprobs":
 *   [{"token", "logprob", "bytes"}...]}.
 *   Closing the connection cancels the request: a queued request never runs,
 *   a running one stops within one forward step (prefill checks between layers).
 * A status query answers {"status": 200, "busy", "queued", "tokens_generated",
 * "requests" (finished or dropped), "runs" (started), "n_ctx", "n_parallel" (requests
 * computed at once), "active" (slots holding one now), "model"}.
 * Two more requests use the tokenizer alone, on the connection's thread
 * (nothing queued; runner.c): {"tokenize": text, "add_special",
 * "parse_special", "with_pieces"} answers {"status": 200, "tokens": [id...]
 * or [{"id", "piece"}...]}; {"detokenize": [id...]} answers {"status": 200,
 * "content": text}; a bad id or type is {"status": 400, "error": msg}.
 */
#ifndef WK_SERVER_H
#define WK_SERVER_H

#include "../base/wk_base.h"

#define WK_SERVER_VERSION "0.1.0"
/* What /api/version answers: the Ollama release whose API wick follows
 * (v0.33.0's server/routes.go, api/types.go), as clients gate features on
 * it (Continue wants 0.6.5 or later, Raycast's extension 0.6.4); wick's
 * own version is `wick --version`'s. */
#define WK_OLLAMA_API_VERSION "0.33.0"

/* What `wick runner` is started with. */
struct wk_runner_opts {
    const char *model;  /* GGUF path or Hugging Face folder */
    const char *draft;  /* the draft model (loaded beside the target for speculative decoding), or NULL */
    const char *socket; /* abstract Unix socket name (without the leading NUL) */
    int32_t n_ctx;      /* 0: min(4096, trained) */
    int32_t n_threads;  /* 0: the CPUs this process may use */
    int32_t parent;     /* the server's pid: the runner leaves when it is gone; 0: none */
};

/*
 * Runs a runner: loads the model, listens on the socket, then writes one
 * line to stdout, {"ready": true, "n_ctx": n, "n_parallel": N} (or {"error": msg} when the
 * model cannot be loaded, then returns nonzero), and serves requests until
 * SIGTERM/SIGINT or until its parent process exits. Returns the exit code.
 */
int wk_runner_main(const struct wk_runner_opts *o);

/* What `wick serve` is started with. */
struct wk_serve_opts {
    const char *host;   /* "127.0.0.1:11434" form; WICK_HOST or the default */
    const char *models; /* folder of GGUF files served by name */
    int32_t n_threads;  /* runner threads; 0: all CPUs */
    /* /api/create may name files and folders of this machine (FROM a
     * path, quantize); off by default, when FROM must be a stored model */
    bool allow_paths;
};

/* Runs the HTTP server until SIGINT/SIGTERM. Returns the exit code. */
int wk_serve_main(const struct wk_serve_opts *o);

#endif /* WK_SERVER_H */
