/*
 * fixture.h - what the tiny-model golden tests (test-qwen3, test-glm4-moe-lite,
 * test-gemma4) share: loading a model with its error printed, the
 * relative error of a logits row, argmax, a token id out of a JSON array,
 * a rendered chat against its reference, logits of a prompt's every
 * position and a greedy continuation against transformers'.
 * Test code, header-only.
 */
#ifndef WK_GOLDEN_FIXTURE_H
#define WK_GOLDEN_FIXTURE_H

#include "../unit/check.h"

#include "../../src/io/wk_safetensors.h"
#include "../../src/model/wk_model.h"
#include "../../src/runtime/wk_runtime.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* One reference chat c ({"name", "messages": [{role, content}], "prompt",
 * "prompt_ids"}, as apply_chat_template gave them): wick renders the same
 * text and tokenizes it to the same ids. With hide, the format must also
 * ask for thinking to be hidden. */
static inline void fixture_check_chat(const struct wk_model *m, const struct wk_tokenizer *tok, json_t *c,
                                      bool hide)
{
    json_t *msgs = json_object_get(c, "messages");
    size_t n = json_array_size(msgs);
    struct wk_chat_message mm[8];
    CHECK(n <= 8);
    for (size_t i = 0; i < n && i < 8; i++) {
        mm[i].role = json_string_value(json_object_get(json_array_get(msgs, i), "role"));
        mm[i].content = json_string_value(json_object_get(json_array_get(msgs, i), "content"));
    }
    struct wk_prompt prompt = {0};
    struct wk_error err;
    CHECK_EQ_INT(wk_chat_render(m, tok, mm, (int32_t)(n <= 8 ? n : 8), true, &prompt, &err), WK_OK);
    if (hide) CHECK(prompt.hide_thinking);
    size_t len = 0;
    for (int32_t i = 0; i < prompt.n; i++) len += prompt.segs[i].len;
    char *s = calloc(1, len + 1);
    for (int32_t i = 0, o = 0; i < prompt.n; o += (int32_t)prompt.segs[i].len, i++)
        memcpy(s + o, prompt.segs[i].text, prompt.segs[i].len);
    const char *want = json_string_value(json_object_get(c, "prompt"));
    if (!want || strcmp(s, want) != 0)
        fprintf(stderr, "  chat %s:\n    wick: %s\n    reference: %s\n", json_string_value(json_object_get(c, "name")), s,
                want ? want : "(none)");
    CHECK_EQ_STR(s, want ? want : "");
    struct wk_tokens t = {0};
    CHECK_EQ_INT(wk_prompt_tokenize(tok, &prompt, &t), WK_OK);
    json_t *ids = json_object_get(c, "prompt_ids");
    bool same = (size_t)t.n == json_array_size(ids);
    for (int64_t i = 0; same && i < t.n; i++) same = t.ids[i] == fixture_id(ids, (size_t)i);
    CHECK(same);
    wk_tokens_deinit(&t);
    free(s);
    wk_prompt_deinit(&prompt);
}

/* A context of n_ctx 128 on 2 threads for m (a checked failure gives NULL). */
static inline struct wk_context *fixture_context(struct wk_model *m)
{
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = 128;
    cp.n_threads = 2;
    struct wk_context *ctx = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_context_create(m, &cp, &ctx, &err), WK_OK);
    return ctx;
}

/* The logits of every position of ids [n] in one prefill, and of the last
 * token decoded alone after the others (the one-token path), against ref
 * [n][n_vocab]: each row within tol (fixture_row_error); the worst errors
 * are raised into *worst_prefill and *worst_decode. what names the model
 * in messages. */
static inline void fixture_check_logits(struct wk_model *m, const int32_t *ids, int32_t n, const float *ref,
                                        int32_t n_vocab, double tol, const char *what, double *worst_prefill,
                                        double *worst_decode)
{
    float *out = malloc((size_t)n * (size_t)n_vocab * sizeof *out);
    struct wk_error err;
    struct wk_context *ctx = fixture_context(m);
    CHECK_EQ_INT(wk_context_decode_all(ctx, ids, n, out, NULL, &err), WK_OK);
    for (int32_t t = 0; t < n; t++) {
        double e = fixture_row_error(out + (size_t)t * n_vocab, ref + (size_t)t * n_vocab, n_vocab, NULL, 0);
        if (!(e <= tol)) fprintf(stderr, "  %s position %d: relative error %.3g\n", what, t, e);
        CHECK(e <= tol);
        *worst_prefill = fmax(*worst_prefill, e);
    }
    wk_context_destroy(ctx);
    ctx = fixture_context(m);
    CHECK_EQ_INT(wk_context_decode(ctx, ids, n - 1, NULL, NULL, &err), WK_OK);
    CHECK_EQ_INT(wk_context_decode(ctx, ids + n - 1, 1, out, NULL, &err), WK_OK);
    double e = fixture_row_error(out, ref + (size_t)(n - 1) * n_vocab, n_vocab, NULL, 0);
    CHECK(e <= tol);
    *worst_decode = fmax(*worst_decode, e);
    wk_context_destroy(ctx);
    free(out);
}

/* Greedy decoding after ids [n] gives the ids of want (a JSON array),
 * every one of them; what names the model in messages. */
static inline void fixture_check_greedy(struct wk_model *m, const int32_t *ids, int32_t n, json_t *want,
                                        int32_t n_vocab, const char *what)
{
    float *out = malloc((size_t)n_vocab * sizeof *out);
    struct wk_context *ctx = fixture_context(m);
    struct wk_error err;
    CHECK_EQ_INT(wk_context_decode(ctx, ids, n, out, NULL, &err), WK_OK);
    size_t same = 0;
    for (size_t s = 0; s < json_array_size(want); s++) {
        int32_t id = fixture_argmax(out, n_vocab);
        if (id != fixture_id(want, s)) {
            fprintf(stderr, "  %s step %zu: wick %d, transformers %d\n", what, s, id, fixture_id(want, s));
            break;
        }
        same++;
        CHECK_EQ_INT(wk_context_decode(ctx, &id, 1, out, NULL, &err), WK_OK);
    }
    CHECK_EQ_INT(same, json_array_size(want));
    wk_context_destroy(ctx);
    free(out);
}

/* A family fixture's reference (test-gemma2, test-qwen3-moe,
 * test-llama3-rope): DIR/reference.json ("prompts": n_prompts lists of
 * n_pos ids, "greedy": a continuation per prompt, "checks") and
 * DIR/logits.safetensors ("logits": F32 [n_prompts, n_pos, vocab]). */
struct fixture_ref {
    char dir[1024];
    json_t *ref;
    struct wk_safetensors *arrays;
    const float *logits;
    int n_prompts, n_pos, vocab;
};

/* Opens the reference of folder env (when set) or dir into r; 0, or 1
 * after a message naming test and the file. */
static inline int fixture_ref_open(struct fixture_ref *r, const char *test, const char *env, const char *dir,
                                   int n_prompts, int n_pos, int vocab)
{
    const char *d = getenv(env);
    snprintf(r->dir, sizeof r->dir, "%s", d && *d ? d : dir);
    r->n_prompts = n_prompts, r->n_pos = n_pos, r->vocab = vocab;
    char path[1200];
    snprintf(path, sizeof path, "%s/reference.json", r->dir);
    json_error_t je;
    if (!(r->ref = json_load_file(path, 0, &je))) {
        fprintf(stderr, "%s: %s: %s\n", test, path, je.text);
        return 1;
    }
    snprintf(path, sizeof path, "%s/logits.safetensors", r->dir);
    struct wk_error err;
    if (wk_safetensors_open(path, &r->arrays, &err)) {
        fprintf(stderr, "%s: %s\n", test, err.msg);
        return 1;
    }
    const struct wk_st_tensor *t = wk_safetensors_find(r->arrays, "logits");
    if (!t || t->dtype != WK_ST_F32 || t->n_elements != (uint64_t)n_prompts * n_pos * vocab) {
        fprintf(stderr, "%s: %s: no F32 logits [%d, %d, %d]\n", test, path, n_prompts, n_pos, vocab);
        return 1;
    }
    r->logits = t->data;
    return 0;
}

static inline void fixture_ref_close(struct fixture_ref *r)
{
    wk_safetensors_close(r->arrays);
    json_decref(r->ref);
}

/* Prompt p's ids into ids [n_pos]. */
static inline void fixture_ref_prompt(const struct fixture_ref *r, size_t p, int32_t *ids)
{
    json_t *arr = json_array_get(json_object_get(r->ref, "prompts"), p);
    CHECK_EQ_INT(json_array_size(arr), r->n_pos);
    for (size_t i = 0; i < (size_t)r->n_pos; i++) ids[i] = fixture_id(arr, i);
}

/* Every prompt's logits from m (NULL: skipped, its load already failed)
 * within tol of the reference (fixture_check_logits); the worst errors
 * printed under name. */
static inline void fixture_ref_check_logits(const struct fixture_ref *r, struct wk_model *m, const char *name, double tol)
{
    double worst[2] = {0, 0};
    int32_t *ids = malloc((size_t)r->n_pos * sizeof *ids);
    for (size_t p = 0; m && ids && p < (size_t)r->n_prompts; p++) {
        fixture_ref_prompt(r, p, ids);
        char what[96];
        snprintf(what, sizeof what, "%s prompt %zu", name, p);
        fixture_check_logits(m, ids, r->n_pos, r->logits + p * (size_t)r->n_pos * (size_t)r->vocab, r->vocab, tol,
                             what, &worst[0], &worst[1]);
    }
    if (m)
        printf("  %-5s max relative logits error: prefill %.3g, last token alone %.3g (tolerance %g)\n", name,
               worst[0], worst[1], tol);
    free(ids);
}

/* Every prompt's greedy continuation from m (NULL: skipped) equals the
 * reference's "greedy" list, each n_greedy long. */
static inline void fixture_ref_check_greedy(const struct fixture_ref *r, struct wk_model *m, const char *name,
                                            size_t n_greedy)
{
    json_t *greedy = json_object_get(r->ref, "greedy");
    CHECK_EQ_INT(json_array_size(greedy), r->n_prompts);
    int32_t *ids = malloc((size_t)r->n_pos * sizeof *ids);
    for (size_t p = 0; m && ids && p < (size_t)r->n_prompts; p++) {
        fixture_ref_prompt(r, p, ids);
        json_t *want = json_array_get(greedy, p);
        CHECK_EQ_INT(json_array_size(want), n_greedy);
        char what[96];
        snprintf(what, sizeof what, "%s prompt %zu", name, p);
        fixture_check_greedy(m, ids, r->n_pos, want, r->vocab, what);
    }
    free(ids);
}

#endif
