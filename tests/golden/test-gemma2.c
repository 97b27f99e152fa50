/*
 * test-gemma2.c - Gemma 2 (src/model/gemma2.c) from a Hugging Face folder and
 * from llama.cpp's GGUF against transformers 5.24 float32, eager attention
 * (fixtures: tests/golden/gemma2/, made by
 * scripts/reference/make-gemma2-fixtures.py: a tiny random Gemma2ForCausalLM,
 * 4 layers alternating sliding (window 8) and global, attention logit
 * softcap 50, final logit softcap 30, query_pre_attn_scalar = head_dim 16):
 *   1. the hyperparameters both loaders read: family, softcaps, attention
 *      scale, the sliding pattern (even layers);
 *   2. logits of every position of 3 prompts of 32 tokens within REL_TOL of
 *      transformers' (error of a row: max_i |wick_i - ref_i| / max_i |ref_i|,
 *      printed); the attention softcap and the sliding window each move the
 *      reference well beyond that (reference.json checks);
 *   3. greedy 32-token continuations identical.
 *
 * Usage: test-gemma2 [FILTER]; run from the repository root, or with
 * WICK_GEMMA2_FIXTURES naming the fixture folder.
 */
#include "../unit/check.h"
#include "fixture.h"

#include "../../src/model/model_internal.h"

#include <jansson.h>
#include <string.h>

#define REL_TOL 1e-3
#define N_PROMPTS 3
#define N_POS 32
#define N_GREEDY 32
#define VOCAB 512

static struct fixture_ref g_r;
static const char *const g_names[2] = {"hf", "gguf"};

static struct wk_model *load_which(int which)
{
    char path[1200];
    if (which == 0) snprintf(path, sizeof path, "%s/hf", g_r.dir);
    else snprintf(path, sizeof path, "%s/gemma2-f32.gguf", g_r.dir);
    return fixture_load(path);
}

static void test_hparams(void)
{
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load_which(which);
        if (!m) continue;
        CHECK_EQ_STR(wk_model_family(m), "gemma2");
        CHECK_NEAR(m->hp.attn_softcap, 50, 0, 0);
        CHECK_NEAR(m->hp.final_softcap, 30, 0, 0);
        CHECK_NEAR(m->hp.attn_scale, 0.25, 1e-7, 0);
        CHECK_NEAR(m->hp.embed_scale, 8, 1e-6, 0);
        CHECK_EQ_INT(m->hp.sliding_window, 8);
        CHECK_EQ_INT(m->hp.n_layer, 4);
        for (int i = 0; i < m->hp.n_layer; i++) {
            CHECK_EQ_INT(m->layers[i].sliding, i % 2 == 0);
            CHECK(m->layers[i].q_norm == NULL && m->layers[i].k_norm == NULL);
            CHECK(m->layers[i].post_attn_norm != NULL && m->layers[i].post_ffn_norm != NULL);
        }
        /* what wick show prints of it */
        char f[1024];
        wk_model_features(m, f, sizeof f);
        CHECK_EQ_STR(wk_model_family_label(m), "gemma2");
        CHECK(strstr(f, "GQA (4 query heads, 2 KV heads, head size 16)") != NULL);
        CHECK(strstr(f, "sliding window 8 on 2 of 4 layers") != NULL);
        CHECK(strstr(f, "attention softcap 50") != NULL && strstr(f, "final logit softcap 30") != NULL);
        CHECK(strstr(f, "output tied to the embeddings") != NULL);
        wk_model_destroy(m);
    }
}

static void test_logits(void)
{
    json_t *checks = json_object_get(g_r.ref, "checks");
    CHECK(json_number_value(json_object_get(checks, "min_rel_logit_change_without_attn_softcap_last_position")) >
          10 * REL_TOL);
    CHECK(json_number_value(json_object_get(checks, "min_rel_logit_change_without_sliding_window_last_position")) >
          10 * REL_TOL);
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load_which(which);
        fixture_ref_check_logits(&g_r, m, g_names[which], REL_TOL);
        wk_model_destroy(m);
    }
}

static void test_greedy(void)
{
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load_which(which);
        fixture_ref_check_greedy(&g_r, m, g_names[which], N_GREEDY);
        wk_model_destroy(m);
    }
}

int main(int argc, char **argv)
{
    if (fixture_ref_open(&g_r, "test-gemma2", "WICK_GEMMA2_FIXTURES", "tests/golden/gemma2", N_PROMPTS, N_POS, VOCAB))
        return 1;
    static const struct check_test tests[] = {TEST(test_hparams), TEST(test_logits), TEST(test_greedy)};
    int rc = check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    fixture_ref_close(&g_r);
    return rc;
}
