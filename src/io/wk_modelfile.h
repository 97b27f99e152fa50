/*
 * wk_modelfile.h - Ollama's Modelfile: parsing into a struct and printing it
 * back as canonical text (what `wick create` reads and `wick show
 * --modelfile` writes).
 *
 * The grammar follows Ollama's parser/parser.go. The input is UTF-8 (a BOM
 * at the start is skipped), one `COMMAND value` per line; command names are
 * case-insensitive; `#` as the first non-blank character of a line comments
 * it out; blank lines and leading spaces/tabs are skipped. A value runs to
 * the end of its line and is trimmed of spaces and tabs, unless it starts
 * with `"""` (it ends at the next `"""`) or `"` (it ends at the next
 * unescaped `"`; inside, `\"` and `\\` stand for `"` and `\`, any other
 * backslash is kept). Quoted values may span lines and keep every byte, and
 * only spaces and tabs may follow their closing quotes. Lines may end in
 * CRLF. Control characters other than tab and newline (and CR before a
 * newline), and bytes that are not well-formed UTF-8, are refused anywhere
 * in the input: no value can hold one.
 *
 *   FROM x          the base model (required; the last one wins)
 *   ADAPTER x       refused: not supported yet
 *   DRAFT x         a draft model for speculative decoding (the last wins)
 *   TEMPLATE x      the chat template (the last wins)
 *   SYSTEM x        the default system message (the last wins)
 *   LICENSE x       a license text (each one is kept, in order)
 *   PARAMETER n v   a typed runtime option (wk_modelfile_param_type); `stop`
 *                   accumulates, any other name replaces its earlier value
 *   MESSAGE r x     a message of the conversation history; r is system,
 *                   user or assistant
 *   RENDERER x, PARSER x   Ollama's renderer and tool-call parser (the last
 *                   wins)
 *   REQUIRES v      the least Ollama version, semver like 0.14.0 or v0.14.0
 *                   (the last wins)
 */
#ifndef WK_MODELFILE_H
#define WK_MODELFILE_H

#include "../base/wk_base.h"

enum wk_mf_type { WK_MF_FLOAT, WK_MF_INT, WK_MF_BOOL, WK_MF_STRING };

/* One PARAMETER line. The typed field matching type is set (f for FLOAT,
 * i for INT, b for BOOL); s is the value as written (unquoted) for every
 * type, and what wk_modelfile_format prints. name and s are owned by the
 * struct wk_modelfile. */
struct wk_mf_param {
    char *name;
    enum wk_mf_type type;
    double f;
    int64_t i;
    bool b;
    char *s;
};

/* One MESSAGE line: role is "system", "user" or "assistant". Owned by the
 * struct wk_modelfile. */
struct wk_mf_message {
    char *role;
    char *content;
};

/*
 * A parsed Modelfile. Every string and array is wk_malloc'd and owned by
 * the struct (wk_modelfile_deinit frees them); the single-valued fields are
 * NULL when their command is absent. Zero-initialised, it is an empty
 * Modelfile that the add functions can fill.
 */
struct wk_modelfile {
    char *from, *draft, *template_text, *system, *renderer, *parser, *requires;
    char **licenses;
    int32_t n_licenses;
    struct wk_mf_message *messages;
    int32_t n_messages;
    struct wk_mf_param *params; /* in file order; `stop` may repeat */
    int32_t n_params;
};

/*
 * Parses the Modelfile text[0..len) (need not be NUL-terminated; borrowed
 * for the call) into *out, which the caller then owns (wk_modelfile_deinit).
 * name (borrowed; NULL means "Modelfile"), usually the file's path, starts
 * every error message, followed by the line: "name:3: unknown parameter
 * 'x'".
 * Errors: WK_E_FORMAT for an unknown command ("command must be one of ..."),
 * ADAPTER, a missing value, an unterminated quote (naming the line where it
 * opened), text after closing quotes, a control character or invalid UTF-8,
 * an unknown parameter or one whose value does not parse as its type, a bad
 * message role, a REQUIRES that is not a version, and no FROM line at all
 * ("name: no FROM line"); WK_E_NOMEM. On any error *out is zeroed and owns
 * nothing. Thread-safe (no shared state).
 */
enum wk_status wk_modelfile_parse(const char *text, size_t len, const char *name,
                                  struct wk_modelfile *out, struct wk_error *err);

/* Frees everything mf owns and zeroes it; mf may be NULL or already
 * deinitialised. */
void wk_modelfile_deinit(struct wk_modelfile *mf);

/*
 * Prints mf as canonical Modelfile text: FROM, DRAFT, the PARAMETER lines,
 * TEMPLATE, SYSTEM, the MESSAGE lines, the LICENSE lines, RENDERER, PARSER,
 * REQUIRES, one per line, absent ones left out. Parsing the result gives a
 * struct equal to mf, every value byte for byte (for the struct of a parse,
 * or one whose strings hold no control characters but tab and newline).
 * A value is written bare unless it is empty, contains a newline or a
 * quote, or starts or ends with a space or tab; then it is written in
 * `"""`, or, when it contains `"""` or ends with a quote, in `"..."` with
 * `"` and `\` escaped.
 * Returns a wk_malloc'd NUL-terminated string the caller frees, or NULL when
 * out of memory. mf is borrowed for the call.
 */
char *wk_modelfile_format(const struct wk_modelfile *mf);

/*
 * Looks up the type of the PARAMETER option name (borrowed): FLOAT for
 * temperature, top_p, min_p, typical_p, repeat_penalty, presence_penalty,
 * frequency_penalty; INT for top_k, seed, num_predict, num_ctx,
 * repeat_last_n, num_keep, num_batch, num_gpu, main_gpu, num_thread; BOOL
 * for use_mmap, numa; STRING for stop. Returns false (type untouched) for
 * any other name. type may be NULL to test a name only.
 */
bool wk_modelfile_param_type(const char *name, enum wk_mf_type *type);

/*
 * Adds the parameter name = value (both borrowed; value unquoted, as it
 * would be stored in s) to mf: a `stop` string is appended after the
 * others, any other name replaces its earlier value in place or is
 * appended. The value is parsed as the option's type: a FLOAT must be a
 * finite number, an INT a decimal integer in int64 range, a BOOL one of
 * 1 t T TRUE true True 0 f F FALSE false False (Go's strconv.ParseBool).
 * Errors (mf unchanged): WK_E_INVALID for an unknown name ("unknown
 * parameter 'x'"), a bad value ("invalid float value 'abc' for parameter
 * temperature"), or a value holding a control character other than tab
 * and newline, or invalid UTF-8; WK_E_NOMEM.
 */
enum wk_status wk_modelfile_add_param(struct wk_modelfile *mf, const char *name, const char *value,
                                      struct wk_error *err);

#endif /* WK_MODELFILE_H */
