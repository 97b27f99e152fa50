/*
 * fixture.h - what the tiny-model golden tests (test-qwen3, test-glm4-moe-lite,
 * test-gemma4) share: loading a model with its error printed, the
 * relative error of a logits row, argmax, a token id out of a JSON array.
 * Test code, header-only.
 */
#ifndef WK_GOLDEN_FIXTURE_H
#define WK_GOLDEN_FIXTURE_H

#include "../unit/check.h"

#include "../../src/model/wk_model.h"

#include <jansson.h>
#include <math.h>

/* The model at path (a checked failure, its message printed, gives NULL). */
static inline struct wk_model *fixture_load(const char *path)
{
    struct wk_model *m = NULL;
    struct wk_error err;
    wk_error_clear(&err);
    enum wk_status st = wk_model_load(path, &m, &err);
    if (st) fprintf(stderr, "  %s: %s\n", path, err.msg);
    CHECK_EQ_INT(st, WK_OK);
    return m;
}

/* max_i |a_i - b_i| / max_i |b_i| over a row of n: the worst logit's error
 * relative to the row's scale; the ids in skip [n_skip] (suppressed: -inf
 * in wick, raw in a reference) are left out. */
static inline double fixture_row_error(const float *a, const float *b, int32_t n, const int32_t *skip,
                                       int32_t n_skip)
{
    double num = 0, den = 0;
    for (int32_t i = 0; i < n; i++) {
        bool skipped = false;
        for (int32_t j = 0; j < n_skip; j++) skipped |= skip[j] == i;
        if (skipped) continue;
        num = fmax(num, fabs((double)a[i] - b[i]));
        den = fmax(den, fabs((double)b[i]));
    }
    return den > 0 ? num / den : num;
}

/* The first index of the largest of x [n]. */
static inline int32_t fixture_argmax(const float *x, int32_t n)
{
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Element i of a JSON array of token ids. */
static inline int32_t fixture_id(json_t *arr, size_t i) { return (int32_t)json_integer_value(json_array_get(arr, i)); }

#endif
