/*
 * test-qwen3-moe.c - Qwen 3 MoE (qwen3_moe.c) from a Hugging Face folder
 * and from llama.cpp's GGUF against transformers 5.24 (fixtures:
 * tests/golden/qwen3-moe/, made by scripts/reference/make-qwen3-moe-fixtures.py:
 * a tiny random Qwen3MoeForCausalLM, 3 sparse layers of 8 experts, top 2,
 * norm_topk_prob true, QK-norm attention with 4 heads / 2 KV heads of 16):
 *   1. both load as family qwen3moe with the experts' hyperparameters;
 *   2. logits of every position of 3 prompts of 32 tokens within REL_TOL of
 *      transformers' float32 logits (error of a row: max_i |wick_i - ref_i|
 *      / max_i |ref_i|, printed), from the folder and from the GGUF;
 *      norm_topk_prob matters: without it the reference moves by far more
 *      (reference.json checks);
 *   3. greedy 32-token continuations identical.
 *
 * Usage: test-qwen3-moe [FILTER]; run from the repository root, or with
 * WICK_QWEN3_MOE_FIXTURES naming the fixture folder.
 */
#include "../unit/check.h"
#include "fixture.h"

#include "../../src/model/model_internal.h"

#include <jansson.h>

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
    snprintf(path, sizeof path, which == 0 ? "%s/hf" : "%s/qwen3-moe-f16.gguf", g_r.dir);
    return fixture_load(path);
}

static void test_hparams(void)
{
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load_which(which);
        if (m) {
            CHECK_EQ_STR(wk_model_family(m), "qwen3moe");
            CHECK_EQ_INT(m->hp.n_expert, 8);
            CHECK_EQ_INT(m->hp.n_expert_used, 2);
            CHECK_EQ_INT(m->hp.n_ff_exp, 32);
            CHECK_EQ_INT(m->hp.head_dim, 16);
            CHECK(m->hp.expert_weights_norm);
            for (int i = 0; i < m->hp.n_layer; i++)
                CHECK(m->layers[i].moe.router && m->layers[i].moe.softmax_router && !m->layers[i].ffn_gate);
        }
        wk_model_destroy(m);
    }
}

static void test_logits(void)
{
    json_t *checks = json_object_get(g_r.ref, "checks");
    CHECK(json_number_value(json_object_get(checks, "max_rel_logit_change_without_norm_topk_prob")) > 100 * REL_TOL);
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
    if (fixture_ref_open(&g_r, "test-qwen3-moe", "WICK_QWEN3_MOE_FIXTURES", "tests/golden/qwen3-moe", N_PROMPTS, N_POS,
                         VOCAB))
        return 1;
    static const struct check_test tests[] = {TEST(test_hparams), TEST(test_logits), TEST(test_greedy)};
    int rc = check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    fixture_ref_close(&g_r);
    return rc;
}
