/*
 * options.c - the runtime options table (wk_options.h). Names and types
 * are Ollama's (api/types.go's Options and Runner); the ranges are wick's,
 * chosen so that every value in range runs: num_ctx from 16 tokens to 1M
 * (about what the server's 4 MiB request body holds; the context never
 * exceeds the model's trained length anyway), seed -1
 * (a clock seed) or a non-negative integer, num_predict -1 (no limit), -2
 * (to the context's end, as -1 here) or a count.
 */
#include "wk_options.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct wk_option g_options[] = {
    {"temperature", WK_MF_FLOAT, 0, 100, true, true},
    {"top_k", WK_MF_INT, 0, 1 << 24, true, true},
    {"top_p", WK_MF_FLOAT, 0, 1, true, true},
    {"min_p", WK_MF_FLOAT, 0, 1, true, true},
    {"typical_p", WK_MF_FLOAT, 0, 1, false, true},
    {"repeat_penalty", WK_MF_FLOAT, 0, 100, true, true},
    {"repeat_last_n", WK_MF_INT, -1, 1 << 20, true, true},
    {"presence_penalty", WK_MF_FLOAT, -100, 100, true, true},
    {"frequency_penalty", WK_MF_FLOAT, -100, 100, true, true},
    {"seed", WK_MF_INT, -1, 9223372036854774784.0, true, true}, /* the largest double below 2^63 */
    {"num_predict", WK_MF_INT, -2, 1 << 24, true, true},
    {"num_ctx", WK_MF_INT, 16, 1 << 20, true, true}, /* 1M tokens: about the 4 MiB a request body may hold */
    {"stop", WK_MF_STRING, 0, 0, true, true},
    {"draft_max", WK_MF_INT, 0, 15, true, false}, /* wick's own; WK_VERIFY_MAX - 1 */
    {"draft_min", WK_MF_INT, 0, 15, true, false},
    {"num_keep", WK_MF_INT, -1, 1 << 24, false, true},
    {"num_batch", WK_MF_INT, 1, 1 << 20, false, true},
    {"num_gpu", WK_MF_INT, -1, 1 << 20, false, true},
    {"main_gpu", WK_MF_INT, 0, 1 << 20, false, true},
    {"num_thread", WK_MF_INT, 0, WK_MAX_THREADS, false, true},
    {"use_mmap", WK_MF_BOOL, 0, 0, false, true},
    {"use_mlock", WK_MF_BOOL, 0, 0, false, false},
    {"numa", WK_MF_BOOL, 0, 0, false, true},
    {"low_vram", WK_MF_BOOL, 0, 0, false, false},
    {"vocab_only", WK_MF_BOOL, 0, 0, false, false},
    {"f16_kv", WK_MF_BOOL, 0, 0, false, false},
    {"logits_all", WK_MF_BOOL, 0, 0, false, false},
    {"penalize_newline", WK_MF_BOOL, 0, 0, false, false},
    {"mirostat", WK_MF_INT, 0, 2, false, false},
    {"mirostat_tau", WK_MF_FLOAT, 0, 100, false, false},
    {"mirostat_eta", WK_MF_FLOAT, 0, 100, false, false},
    {"tfs_z", WK_MF_FLOAT, 0, 100, false, false},
};

_Static_assert(WK_ARRAY_LEN(g_options) <= WK_OPTIONS_MAX, "WK_OPTIONS_MAX");

const struct wk_option *wk_option_find(const char *name)
{
    for (size_t i = 0; name && i < WK_ARRAY_LEN(g_options); i++)
        if (strcmp(g_options[i].name, name) == 0) return &g_options[i];
    return NULL;
}

const struct wk_option *wk_options(int *n)
{
    *n = (int)WK_ARRAY_LEN(g_options);
    return g_options;
}

enum wk_status wk_option_check_number(const struct wk_option *o, double v, struct wk_error *err)
{
    const bool is_int = o->type == WK_MF_INT;
    if (!isfinite(v) || (is_int && v != floor(v)) || v < o->min || v > o->max) {
        char lo[32], hi[32], got[40];
        snprintf(lo, sizeof lo, "%.17g", o->min);
        snprintf(hi, sizeof hi, "%.17g", o->max);
        snprintf(got, sizeof got, "%.17g", v);
        return wk_error_set(err, WK_E_INVALID, "option '%s' must be %s between %s and %s, not %s", o->name,
                            is_int ? "an integer" : "a number", lo, hi, got);
    }
    /* samplers wick does not have (Ollama's new engine dropped them too):
     * only the value that turns them off, which changes nothing */
    static const struct {
        const char *name, *what;
        double off;
    } k_absent[] = {{"typical_p", "locally typical sampling", 1}, {"mirostat", "Mirostat sampling", 0},
                    {"tfs_z", "tail-free sampling", 1}};
    for (size_t i = 0; i < WK_ARRAY_LEN(k_absent); i++)
        if (strcmp(o->name, k_absent[i].name) == 0 && v != k_absent[i].off)
            return wk_error_set(err, WK_E_INVALID, "option '%s' is %.17g, but wick does not implement %s: only %g "
                                "(off) is accepted", o->name, v, k_absent[i].what, k_absent[i].off);
    return WK_OK;
}
