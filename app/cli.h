/*
 * cli.h - what the subcommands share: option parsing helpers, exit codes,
 * and the entry point of each subcommand.
 */
#ifndef WK_CLI_H
#define WK_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define WK_EXIT_OK 0
#define WK_EXIT_ERROR 1 /* the command failed (bad model file, runtime error) */
#define WK_EXIT_USAGE 2 /* bad command line */

#define WK_VERSION "0.1.0"

/*
 * Option scanner: walks argv[start..argc); for "--name value" and
 * "--name=value" sets *value and returns true when argv[*i] is --name
 * (advancing *i past the value). Prints a usage error, sets *bad and
 * *value to "" when the value is missing (--name the last argument): the
 * caller checks *bad before using *value.
 */
bool cli_opt_value(int argc, char **argv, int *i, const char *name, const char **value,
                   bool *bad, const char *cmd);
/* Parses a number for option name; prints an error naming the option and
 * returns false when text is not a number in [lo, hi]. */
bool cli_parse_f32(const char *cmd, const char *name, const char *text, float lo, float hi,
                   float *out);
bool cli_parse_i64(const char *cmd, const char *name, const char *text, int64_t lo, int64_t hi,
                   int64_t *out);

/* Writes s[0..n) to f as a JSON string literal: quote, backslash and
 * control characters escaped, and any byte that does not start a complete,
 * well-formed UTF-8 sequence (a token that is part of a character) written
 * as \ufffd, so the output is always valid UTF-8. */
void cli_print_json_string(FILE *f, const char *s, size_t n);

/* b bytes as Ollama's format.HumanBytes writes them (decimal units, one
 * decimal: "1.1 GB", "91.5 MB", "512 B") into out [cap]. */
void cli_human_bytes(int64_t b, char *out, size_t cap);
/* The time in rfc3339 (as the server writes it, UTC or with an offset)
 * relative to now as Ollama's format.HumanTime writes it ("2 minutes
 * ago", "4 minutes from now", "Forever" past 20 years ahead), or zero when
 * it is NULL or does not parse; into out [cap]. */
void cli_human_time(const char *rfc3339, const char *zero, char *out, size_t cap);
/* Prints rows [n_rows][n_cols] of cells (header first) as Ollama's CLI
 * tables: left-aligned columns as wide as their widest cell, 4 spaces
 * between them. */
void cli_print_table(const char *const *cells, int n_rows, int n_cols);

/* cmd_remote.c: wick list / show / cp / rm through a running server. */
/* Whether WICK_MODELS or OLLAMA_MODELS names a store in this environment. */
bool cli_store_named(void);
/* Whether the store commands go to a server: 1 when this environment
 * names no store (cli_store_named) and one answers /api/version at
 * WICK_HOST / OLLAMA_HOST / the default (its base URL into url [cap]); 0
 * when a store is named or nothing listens there (the commands use the
 * store themselves); -1, said on stderr, when a server took the
 * connection and did not answer within 5 s: never the local store then
 * (a stalled server's rm must not delete a local model). */
int cli_remote_store(char *url, size_t cap);
/* GET /api/tags: {"models": [...]} as wk_store_list gives them (owned),
 * or NULL after printing why not. */
struct json_t;
struct json_t *remote_list(const char *url);
/* DELETE /api/delete of each of names [n]; POST /api/copy; POST /api/show
 * printed as `ollama show` prints it (part: "modelfile", "parameters",
 * "template", "system" or "license" alone, or NULL). Each prints what it
 * did or the server's error, and returns an exit code. */
int remote_rm(const char *url, int n, char **names);
int remote_cp(const char *url, const char *src, const char *dst);
int remote_show(const char *url, const char *name, const char *part);
/* wick create through the server, as ollama create does it: FROM's file or
 * folder files uploaded as blobs (HEAD /api/blobs/:digest first), or a
 * stored name as "from", then POST /api/create with the template, system,
 * parameters, messages and license (dir: the Modelfile's folder, where a
 * relative FROM starts); its progress on stderr. An exit code. */
struct wk_modelfile;
int remote_create(const char *url, const char *name, const struct wk_modelfile *mf, const char *dir);

int cmd_run(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_runner(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_cp(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_template(int argc, char **argv);

#endif
