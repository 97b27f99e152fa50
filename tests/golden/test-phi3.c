/*
 * test-phi3.c - Phi-3 (src/model/phi3.c) from Hugging Face folders and from
 * llama.cpp's GGUFs against transformers 5.24 float32, eager attention
 * (fixtures: tests/golden/phi3/, made by scripts/reference/make-phi3-fixtures.py):
 *   longrope  Phi-3.5-mini-like: LongRoPE with original context 16 (the
 *             test's 128-position context and the 32-position prompts both
 *             take the long divisors), attention factor 1.3229, sliding
 *             window 12 on every layer, separate lm_head;
 *   mini      Phi-4-mini-like: partial rotary 0.75 (12 of 16 dims),
 *             LongRoPE with original context 128 (short divisors here),
 *             attention factor 1.0691, tied embeddings.
 * Checked, for each fixture and both loaders:
 *   1. the hyperparameters and tensors: rotary dims, attention factor,
 *      original context, window, the views into the fused attn_qkv and
 *      ffn_up, the divisor tables (the folder's built from config.json
 *      equal to the GGUF's), tied or separate output;
 *   2. logits of every position of 3 prompts of 32 tokens within REL_TOL of
 *      transformers' (error of a row: max_i |wick_i - ref_i| / max_i
 *      |ref_i|, printed); each feature moves the reference by far more
 *      (reference.json checks, asserted > 10 · REL_TOL here);
 *   3. greedy 32-token continuations identical;
 *   4. longrope's chat template (Phi-3.5-mini-instruct's) renders as
 *      transformers renders it, to the same ids, and <|end|> ends a turn;
 *   5. config.json values out of range are WK_E_FORMAT errors naming the key.
 *
 * Usage: test-phi3 [FILTER]; run from the repository root, or with
 * WICK_PHI3_LONGROPE_FIXTURES and WICK_PHI3_MINI_FIXTURES naming the
 * fixture folders.
 */
#include "../unit/check.h"
#include "fixture.h"

#include "../../src/model/model_internal.h"
#include "../../src/runtime/wk_runtime.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REL_TOL 1e-3
#define N_PROMPTS 3
#define N_POS 32
#define N_GREEDY 32
#define VOCAB 512

static const char *const g_fixtures[2] = {"longrope", "mini"};
static struct fixture_ref g_r[2];
static const char *const g_names[2][2] = {{"longrope hf", "longrope gguf"}, {"mini hf", "mini gguf"}};

static struct wk_model *load_which(int fx, int which)
{
    char path[1200];
    if (which == 0) snprintf(path, sizeof path, "%s/hf", g_r[fx].dir);
    else snprintf(path, sizeof path, "%s/phi3-f32.gguf", g_r[fx].dir);
    return fixture_load(path);
}

static void check_tables_equal(const struct wk_tensor *a, const struct wk_tensor *b, const char *what)
{
    CHECK(a && b);
    if (!a || !b) return;
    CHECK_EQ_INT(a->ne[0], b->ne[0]);
    for (int64_t i = 0; i < a->ne[0] && a->ne[0] == b->ne[0]; i++)
        CHECK_NEAR(((const float *)a->data)[i], ((const float *)b->data)[i], 0, 0);
    (void)what;
}

static void test_hparams(void)
{
    /* per fixture: rotary dims, original context, window, tied */
    static const int n_rot[2] = {16, 12}, orig[2] = {16, 128}, window[2] = {12, 0};
    static const bool tied[2] = {false, true};
    for (int fx = 0; fx < 2; fx++) {
        double attn = json_number_value(json_object_get(g_r[fx].ref, "rope_attention_factor"));
        struct wk_model *m[2] = {load_which(fx, 0), load_which(fx, 1)};
        for (int which = 0; which < 2; which++) {
            const struct wk_model *p = m[which];
            if (!p) continue;
            CHECK_EQ_STR(wk_model_family(p), "phi3");
            CHECK_EQ_INT(p->hp.head_dim, 16);
            CHECK_EQ_INT(p->hp.n_rot, n_rot[fx]);
            CHECK_EQ_INT(p->hp.n_ctx_orig, orig[fx]);
            CHECK_EQ_INT(p->hp.sliding_window, window[fx]);
            CHECK_NEAR(p->hp.rope_attn_factor, attn, 1e-6, 0);
            CHECK_EQ_INT(p->rope_mode, WK_ROPE_NEOX);
            CHECK_EQ_INT(p->output == p->tok_embd, tied[fx]);
            CHECK(p->rope_freqs && p->rope_freqs_long && p->rope_freqs->ne[0] == n_rot[fx] / 2);
            for (int i = 0; i < p->hp.n_layer; i++) {
                const struct wk_layer *l = &p->layers[i];
                CHECK_EQ_INT(l->sliding, window[fx] > 0);
                CHECK_EQ_INT(l->n_rot, n_rot[fx]);
                /* Q, K, V and gate, up: consecutive rows of one fused tensor each */
                CHECK_EQ_INT(l->wq->ne[1], 64);
                CHECK_EQ_INT(l->wk->ne[1], 32);
                CHECK_EQ_INT(l->wv->ne[1], 32);
                CHECK((const char *)l->wk->data == (const char *)l->wq->data + 64 * l->wq->nb[1]);
                CHECK((const char *)l->wv->data == (const char *)l->wk->data + 32 * l->wk->nb[1]);
                CHECK_EQ_INT(l->ffn_gate->ne[1], p->hp.n_ff);
                CHECK((const char *)l->ffn_up->data == (const char *)l->ffn_gate->data + p->hp.n_ff * l->ffn_gate->nb[1]);
            }
        }
        if (m[0] && m[1]) {
            check_tables_equal(m[0]->rope_freqs, m[1]->rope_freqs, "short");
            check_tables_equal(m[0]->rope_freqs_long, m[1]->rope_freqs_long, "long");
        }
        wk_model_destroy(m[0]);
        wk_model_destroy(m[1]);
    }
}

static void test_logits(void)
{
    for (int fx = 0; fx < 2; fx++) {
        json_t *checks = json_object_get(g_r[fx].ref, "checks");
        const char *key;
        json_t *v;
        int n_features = 0;
        json_object_foreach(checks, key, v) {
            if (strncmp(key, "min_rel_logit_change_without_", 29) != 0) continue;
            n_features++;
            if (!(json_number_value(v) > 10 * REL_TOL)) {
                CHECK(json_number_value(v) > 10 * REL_TOL);
                fprintf(stderr, "    %s %s = %g\n", g_fixtures[fx], key, json_number_value(v));
            }
        }
        CHECK(n_features >= 4);
        for (int which = 0; which < 2; which++) {
            struct wk_model *m = load_which(fx, which);
            fixture_ref_check_logits(&g_r[fx], m, g_names[fx][which], REL_TOL);
            wk_model_destroy(m);
        }
    }
}

static void test_greedy(void)
{
    for (int fx = 0; fx < 2; fx++)
        for (int which = 0; which < 2; which++) {
            struct wk_model *m = load_which(fx, which);
            fixture_ref_check_greedy(&g_r[fx], m, g_names[fx][which], N_GREEDY);
            wk_model_destroy(m);
        }
}

/* longrope's tokenizer has Phi-3's turn markers and Phi-3.5-mini's chat
 * template: from the folder and the GGUF, wick renders the reference chats
 * (apply_chat_template) to the same text and ids, and <|end|> ends a turn
 * (generation stops at it). */
static void test_chat(void)
{
    json_t *eot = json_object_get(g_r[0].ref, "end_of_turn");
    int32_t end = (int32_t)json_integer_value(json_object_get(eot, "<|end|>"));
    CHECK_EQ_INT(end, 4);
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load_which(0, which);
        if (!m) continue;
        struct wk_tokenizer *tok = NULL;
        struct wk_error err;
        CHECK_EQ_INT(wk_tokenizer_for_model(m, &tok, &err), WK_OK);
        if (tok) {
            json_t *chats = json_object_get(g_r[0].ref, "chats"), *c;
            size_t k;
            CHECK(json_array_size(chats) >= 3);
            json_array_foreach(chats, k, c) fixture_check_chat(m, tok, c, false);
            CHECK(wk_tokenizer_is_eog(tok, end));
            CHECK(!wk_tokenizer_is_eog(tok, (int32_t)json_integer_value(json_object_get(eot, "<|user|>"))));
        }
        wk_tokenizer_destroy(tok);
        wk_model_destroy(m);
    }
}

/* A copy of fixture fx's folder in a temporary one (weights linked) whose
 * config.json has `edit` ("key": value pairs, JSON) merged into
 * rope_parameters when rope, else the top level; loads it and checks the
 * status and that the message names `want`. */
static void check_bad_config(int fx, bool rope, const char *edit, const char *want)
{
    char dir[] = "/tmp/wick-phi3-XXXXXX", path[1400], src[1400];
    if (!mkdtemp(dir)) {
        CHECK(false);
        return;
    }
    static const char *const files[] = {"model.safetensors", "tokenizer.json", "tokenizer_config.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *abs = realpath(g_r[fx].dir, NULL);
        snprintf(src, sizeof src, "%s/hf/%s", abs ? abs : g_r[fx].dir, files[i]);
        free(abs);
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        CHECK_EQ_INT(symlink(src, path), 0);
    }
    snprintf(src, sizeof src, "%s/hf/config.json", g_r[fx].dir);
    json_t *cfg = json_load_file(src, 0, NULL), *e = json_loads(edit, 0, NULL);
    CHECK(cfg && e);
    if (cfg && e) json_object_update(rope ? json_object_get(cfg, "rope_parameters") : cfg, e);
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK_EQ_INT(json_dump_file(cfg, path, 0), 0);
    json_decref(cfg);
    json_decref(e);
    struct wk_model *m = NULL;
    struct wk_error err = {0};
    enum wk_status st = wk_model_load(dir, &m, &err);
    CHECK_EQ_INT(st, WK_E_FORMAT);
    if (st != WK_E_FORMAT || !strstr(err.msg, want)) {
        CHECK(strstr(err.msg, want) != NULL);
        fprintf(stderr, "    edit %s: %s\n", edit, err.msg);
    }
    wk_model_destroy(m);
    static const char *const all[] = {"model.safetensors", "tokenizer.json", "tokenizer_config.json", "config.json"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, all[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void test_bad_config(void)
{
    check_bad_config(0, true, "{\"short_factor\": [1, 2, 3]}", "short_factor");
    check_bad_config(0, true, "{\"long_factor\": [1, 1, 1, 1, 1, 1, 1, -2]}", "long_factor");
    check_bad_config(0, true, "{\"attention_factor\": \"big\"}", "attention_factor");
    check_bad_config(1, false, "{\"partial_rotary_factor\": 1.5}", "partial_rotary_factor");
    check_bad_config(1, false, "{\"original_max_position_embeddings\": -4}", "original_max_position_embeddings");
}

int main(int argc, char **argv)
{
    if (fixture_ref_open(&g_r[0], "test-phi3", "WICK_PHI3_LONGROPE_FIXTURES", "tests/golden/phi3/longrope", N_PROMPTS,
                         N_POS, VOCAB) ||
        fixture_ref_open(&g_r[1], "test-phi3", "WICK_PHI3_MINI_FIXTURES", "tests/golden/phi3/mini", N_PROMPTS, N_POS,
                         VOCAB))
        return 1;
    static const struct check_test tests[] = {TEST(test_hparams), TEST(test_logits), TEST(test_greedy),
                                              TEST(test_chat), TEST(test_bad_config)};
    int rc = check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    fixture_ref_close(&g_r[0]);
    fixture_ref_close(&g_r[1]);
    return rc;
}
