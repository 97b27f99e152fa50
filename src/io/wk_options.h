/*
 * wk_options.h - the one table of Ollama's runtime options as wick takes
 * them: each option's type and allowed range, and whether wick applies it
 * or accepts and ignores it (llama.cpp-runner settings with no meaning
 * here). The Modelfile parser (PARAMETER), `wick create`, the server's
 * Ollama options, the runner and `wick run`'s flags all check against it,
 * so a value one of them takes, the others take too, and a stored model's
 * parameters can always run.
 */
#ifndef WK_OPTIONS_H
#define WK_OPTIONS_H

#include "wk_modelfile.h"

/* One option. min and max bound numbers (FLOAT and INT; inclusive). */
struct wk_option {
    const char *name;
    enum wk_mf_type type;
    double min, max;
    bool applied;   /* false: accepted, type-checked and range-checked, then ignored */
    bool modelfile; /* a Modelfile PARAMETER may set it (Ollama's parser list); else the API's options only */
};

/* Stop strings a request or a model may carry, and the bytes of each. */
#define WK_MAX_STOPS 16
#define WK_MAX_STOP_BYTES 1024
/* Options in the table, at most. */
#define WK_OPTIONS_MAX 64
/* Threads a runner, `wick run` or `wick serve` may use. */
#define WK_MAX_THREADS 256

/* The option called name, or NULL when there is none. */
const struct wk_option *wk_option_find(const char *name);

/* All options, in a fixed order: *n of them. */
const struct wk_option *wk_options(int *n);

/*
 * Checks number v for option o: an integer where o is INT, within [min,
 * max]. WK_OK, or WK_E_INVALID with err naming the option and its range
 * ("option 'temperature' must be between 0 and 100, not -3"); also for
 * a sampler wick does not have set to anything but off (typical_p other
 * than 1, mirostat other than 0, tfs_z other than 1), which would change
 * the output if it were applied. Not for BOOL or STRING options.
 */
enum wk_status wk_option_check_number(const struct wk_option *o, double v, struct wk_error *err);

#endif
