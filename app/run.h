/*
 * run.h - what the files of `wick run` share:
 *
 *   cmd_run.c         the command line, the choice between a running
 *                     server and this process, one-shot prompts
 *   cmd_run_local.c   the model loaded in this process
 *   cmd_run_client.c  a running server (`ollama run`'s way: /api/chat,
 *                     /api/generate, /api/show, /api/create)
 *   cmd_run_repl.c    the interactive chat: `"""` multi-line input and
 *                     Ollama's /commands (/set, /show, /save, /load, ...)
 *   run_display.c     printing answers: word wrap, thinking, statistics
 *
 * One struct run_session holds a chat's state whichever side answers: the
 * model's name, the options the user set (Ollama's option names, as JSON:
 * the command line's flags and /set parameter), the system message, the
 * conversation (user and assistant messages; the system message is kept
 * apart and always goes first), and the display settings.
 */
#ifndef WK_RUN_H
#define WK_RUN_H

#include "cli.h"
#include "http_client.h"

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* What the command line asked for. */
struct run_opts {
    const char *model;
    char *prompt;       /* one-shot prompt (owned), or NULL: interactive */
    json_t *options;    /* Ollama's options from the flags: {"temperature": 0, "stop": [...]} (owned) */
    int32_t n_threads;  /* --threads, 0 = the CPUs (in-process only) */
    const char *draft;  /* --draft: a draft model's GGUF file or folder (in-process only) */
    bool verbose, raw, hide_thinking, nowordwrap, local;
    int logprobs;          /* -1 = off, else alternatives to print per token */
    int think;             /* --think: -1 unset, 0 off, 1 on */
    const char *format;    /* --format: "json" or a JSON schema file */
    const char *keepalive; /* --keepalive DURATION (sent to a server) */
};

/* Printing an answer as it streams. */
struct run_display {
    bool wrap;          /* wrap at the terminal's width on word boundaries */
    int width;          /* the terminal's columns when the answer began */
    int line_len;       /* columns on the current line */
    char word[256];     /* the word being printed (bytes), to move it down whole */
    size_t word_len;
    int word_width;
    char partial[4];    /* the start of a UTF-8 character split between pieces */
    size_t n_partial;
    bool thinking;      /* inside a printed "Thinking..." block */
    bool think_nl;      /* the thinking printed so far ends with a newline */
    bool write_failed;  /* stdout could not be written */
};

struct run_local;

/* One chat, in this process or with a server. */
struct run_session {
    const struct run_opts *o;
    char *model;     /* the model's name (owned; /load changes it) */
    json_t *options; /* the user's options (owned): the flags', then /set parameter's */
    char *system;    /* /set system (owned), or NULL: the model's own */
    json_t *msgs;    /* the conversation: [{"role", "content"}] (owned) */
    char *format;    /* "json" or a JSON schema file (owned), or NULL */
    int think;       /* -1 unset (the model's default), 0 off, 1 on */
    bool hide_thinking, verbose, wordwrap, history;
    struct run_display disp;
    bool client;                 /* a server answers */
    char url[CLI_URL_MAX];       /* its base URL */
    json_t *loaded_msgs;         /* the model's own MESSAGEs (for /save), owned */
    struct run_local *local;     /* the model in this process (!client) */
};

/* How an answer ended. */
enum run_result { RUN_OK = 0, RUN_CANCELLED = 1, RUN_ERROR = 2 };

/* Set by SIGINT: the answer being computed stops (at the next step in
 * this process, by closing the connection to a server). */
extern volatile bool g_run_cancel;
extern volatile bool g_run_generating;
extern volatile sig_atomic_t g_run_sigints;

/* Starts an answer: clears the cancel flag, counts Ctrl-Cs afresh. */
void run_begin_answer(void);

/* --- run_display.c --- */

/* Prepares d for an answer: word wrap when on and stdout is a terminal
 * at least 10 columns wide (its width read now). */
void run_display_begin(struct run_display *d, bool wrap);
/* Prints answer text[0..len) (ending a thinking block first); false when
 * stdout cannot be written. */
bool run_display_text(struct run_display *d, const char *text, size_t len);
/* Prints thinking text, opening the block with "Thinking..." first. */
bool run_display_thinking(struct run_display *d, const char *text, size_t len);
/* Ends a printed thinking block ("...done thinking."), if one is open. */
bool run_display_end_thinking(struct run_display *d);
/* Prints the timings and rates as `ollama run --verbose` does, on
 * stderr; durations in ns. */
void run_print_stats(int64_t total_ns, int64_t load_ns, int64_t prompt_eval_count, int64_t prompt_eval_ns,
                     int64_t eval_count, int64_t eval_ns);
/* Prints one token's log-probability line on stderr: the token's bytes
 * as a JSON string, its logprob, and n_top alternatives. */
void run_print_logprob(const char *bytes, size_t len, double logprob);
void run_print_top_logprob(int index, const char *bytes, size_t len, double logprob);

/* --- cmd_run.c --- */

/* Checks DURATION as Go's time.ParseDuration reads it ("5m", "1h30m",
 * "-1s", "0"), as Ollama's --keepalive and a server's keep_alive. */
bool run_duration_ok(const char *s);

/* --- cmd_run_local.c --- */

/* Loads s->model in this process (a store name, a GGUF file or a
 * folder) with the options of s. Returns 0, or an exit code with the
 * error printed. */
int run_local_open(struct run_session *s, int64_t t_start_ns);
void run_local_close(struct run_session *s);
/* Answers the conversation s->msgs (its last message the user's),
 * printing the answer; on RUN_OK and RUN_CANCELLED the answer is appended
 * to s->msgs as the assistant's. */
enum run_result run_local_answer(struct run_session *s);
/* Drops the oldest exchanges until the conversation leaves room to
 * answer in the context; returns the number of messages dropped. */
int32_t run_local_fit(struct run_session *s);
/* /show WHAT ("info", "license", "modelfile", "parameters", "system",
 * "template"); false when WHAT is none of them. */
bool run_local_show(struct run_session *s, const char *what);
/* /save NAME: the session as a new model in the store. */
void run_local_save(struct run_session *s, const char *name);
/* /load NAME: another model; on failure the current one stays. */
void run_local_load(struct run_session *s, const char *name);
/* Whether the loaded model can think (a think request means something). */
bool run_local_can_think(const struct run_session *s);

/* --- cmd_run_client.c --- */

/* Whether a server answers GET base/api/version within timeout_ms. */
bool run_client_probe(const char *base, long timeout_ms);
/* Loads the model on the server as `ollama run` does before its first
 * prompt (an empty /api/generate), and reads the model's own MESSAGEs.
 * Returns 0, or 1 with "Error: ..." printed. */
int run_client_open(struct run_session *s);
/* One-shot: POST /api/generate with s->o->prompt, streaming the answer. */
enum run_result run_client_generate(struct run_session *s);
/* The conversation through POST /api/chat; as run_local_answer. */
enum run_result run_client_answer(struct run_session *s);
bool run_client_show(struct run_session *s, const char *what);
/* Whether the server lists "thinking" among the model's capabilities
 * (true when it cannot say). */
bool run_client_can_think(struct run_session *s);
void run_client_save(struct run_session *s, const char *name);
void run_client_load(struct run_session *s, const char *name);

/* --- shared by the local and client sides (cmd_run_repl.c) --- */

/* A request's body for a chat or generate route: model, options, format
 * (json, or the schema file's object), think, keep_alive, stream.
 * NULL with the error printed when the format file cannot be read. */
json_t *run_request_body(const struct run_session *s);
/* The session's /save as a create request: {model, from, system,
 * parameters (the Modelfile ones of the user's options), messages (the
 * model's own, then the conversation)}. */
json_t *run_create_request(const struct run_session *s, const char *name);
/* /show parameters' "User defined parameters:" part. */
void run_show_user_parameters(const struct run_session *s);
/* Prints the model's own messages, as `ollama run` does when a chat
 * starts (">>> " before the user's). */
void run_print_messages(struct run_session *s, json_t *msgs);
/* Appends {"role": role, "content": text} to s->msgs; false when out of memory. */
bool run_msgs_add(struct run_session *s, const char *role, const char *text, size_t len);

/* The interactive chat; returns the exit code. */
int run_repl(struct run_session *s);

#endif
