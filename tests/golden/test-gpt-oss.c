/*
 * test-gpt-oss.c - gpt-oss (src/model/gpt_oss.c) from a Hugging Face folder
 * and from llama.cpp's GGUF against transformers 5.24 float32, eager
 * attention (fixtures: tests/golden/gpt-oss/, made by
 * scripts/reference/make-gpt-oss-fixtures.py: a tiny random
 * GptOssForCausalLM, 2 layers (sliding window 8, then full), 4 heads of 64
 * over hidden 64, attention sinks, biases on Q/K/V/O, 4 experts (top 2,
 * router bias, biased clamped SwiGLU), YaRN RoPE factor 8 over an original
 * context of 64):
 *   1. the hyperparameters both loaders read: family, attention scale with
 *      YaRN's factor folded in, the per-pair RoPE divisors, the sliding
 *      pattern, sinks, biases, the clamp;
 *   2. logits of every position of 3 prompts of 32 tokens within REL_TOL of
 *      transformers' (error of a row: max_i |wick_i - ref_i| / max_i |ref_i|,
 *      printed); the sinks, the sliding window, YaRN, the clamp and the
 *      router bias each move the reference well beyond that (reference.json
 *      checks);
 *   3. greedy 32-token continuations identical.
 *
 * Usage: test-gpt-oss [FILTER]; run from the repository root, or with
 * WICK_GPT_OSS_FIXTURES naming the fixture folder.
 */
#include "../unit/check.h"
#include "fixture.h"

#include "../../src/model/model_internal.h"

#include <jansson.h>
#include <math.h>

#define REL_TOL 1e-3
#define N_PROMPTS 3
#define N_POS 32
#define N_GREEDY 32
#define VOCAB 519

static struct fixture_ref g_r;
static const char *const g_names[2] = {"hf", "gguf"};

static struct wk_model *load_which(int which)
{
    char path[1200];
    if (which == 0) snprintf(path, sizeof path, "%s/hf", g_r.dir);
    else snprintf(path, sizeof path, "%s/gpt-oss-f32.gguf", g_r.dir);
    return fixture_load(path);
}

static void test_hparams(void)
{
    /* YaRN with head_dim 64, base 1e4, original context 64: correction
     * dims floor(-3.97) -> 0 and ceil(8.06) = 9, so pair i < 9 ramps
     * r = i / 9 and the rest are divided by the factor 8 */
    const float mscale = 1.0f + 0.1f * logf(8.0f);
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load_which(which);
        if (!m) continue;
        CHECK_EQ_STR(wk_model_family(m), "gpt-oss");
        CHECK_NEAR(m->hp.attn_scale, mscale * mscale / 8.0f, 1e-6, 0);
        CHECK_EQ_INT(m->hp.sliding_window, 8);
        CHECK_EQ_INT(m->hp.n_layer, 2);
        CHECK_EQ_INT(m->hp.head_dim, 64);
        CHECK_EQ_INT(m->hp.n_expert, 4);
        CHECK_EQ_INT(m->hp.n_expert_used, 2);
        CHECK_EQ_INT(m->hp.n_ff_exp, 32);
        CHECK(m->rope_freqs != NULL);
        if (m->rope_freqs) {
            const float *d = m->rope_freqs->data;
            CHECK_EQ_INT(m->rope_freqs->ne[0], 32);
            CHECK_NEAR(d[0], 1, 1e-6, 0);
            CHECK_NEAR(d[3], 1.0 / (3.0 / 9 / 8 + 6.0 / 9), 1e-5, 0);
            CHECK_NEAR(d[9], 8, 1e-6, 0);
            CHECK_NEAR(d[31], 8, 1e-6, 0);
        }
        for (int i = 0; i < m->hp.n_layer; i++) {
            const struct wk_layer *l = &m->layers[i];
            CHECK_EQ_INT(l->sliding, i % 2 == 0);
            CHECK(l->attn_sinks && l->bq && l->bk && l->bv && l->bo);
            CHECK(l->moe.router_bias && l->moe.gate_b && l->moe.up_b && l->moe.down_b && l->moe.topk_softmax);
            CHECK_NEAR(l->moe.swiglu_limit, 7, 0, 0);
            CHECK_NEAR(l->moe.swiglu_alpha, 1.702, 1e-6, 0);
        }
        wk_model_destroy(m);
    }
}

static void test_logits(void)
{
    json_t *checks = json_object_get(g_r.ref, "checks");
    static const char *const features[] = {"sinks", "sliding_window", "yarn", "swiglu_clamp", "router_bias"};
    for (size_t i = 0; i < sizeof features / sizeof features[0]; i++) {
        char key[128];
        snprintf(key, sizeof key, "max_rel_logit_change_without_%s", features[i]);
        CHECK(json_number_value(json_object_get(checks, key)) > 100 * REL_TOL);
        snprintf(key, sizeof key, "min_rel_logit_change_without_%s_last_position", features[i]);
        CHECK(json_number_value(json_object_get(checks, key)) > 5 * REL_TOL);
    }
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
    if (fixture_ref_open(&g_r, "test-gpt-oss", "WICK_GPT_OSS_FIXTURES", "tests/golden/gpt-oss", N_PROMPTS, N_POS,
                         VOCAB))
        return 1;
    static const struct check_test tests[] = {TEST(test_hparams), TEST(test_logits), TEST(test_greedy)};
    int rc = check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    fixture_ref_close(&g_r);
    return rc;
}
