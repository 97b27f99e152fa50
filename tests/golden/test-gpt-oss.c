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
 *   3. greedy 32-token continuations identical;
 *   4. a copy of the folder with YaRN's truncate false (the real gpt-oss
 *      config's value: correction dims not rounded) against transformers'
 *      last-position logits so configured;
 *   5. config.json errors name the field;
 *   6. llama.cpp's GGUF with its expert tensors (ffn_gate_exps, ffn_up_exps,
 *      ffn_down_exps) quantized to MXFP4 by the gguf package, as real
 *      gpt-oss GGUFs carry them (gpt-oss-mxfp4.gguf, made by
 *      scripts/reference/make-gpt-oss-mxfp4-fixture.py), against transformers
 *      with its expert weights replaced by the MXFP4-dequantized values
 *      (mxfp4/: logits within REL_TOL at every position, prefill and the
 *      last token alone; greedy continuations identical); the rounding moves
 *      the F32 model's logits far beyond REL_TOL (mxfp4/reference.json).
 *
 * Usage: test-gpt-oss [FILTER]; run from the repository root, or with
 * WICK_GPT_OSS_FIXTURES naming the fixture folder.
 */
#include "../unit/check.h"
#include "fixture.h"

#include "../../src/model/model_internal.h"

#include <jansson.h>
#include <math.h>
#include <unistd.h>

#define REL_TOL 1e-3
#define N_PROMPTS 3
#define N_POS 32
#define N_GREEDY 32
#define VOCAB 519

static struct fixture_ref g_r;
static struct fixture_ref g_mx; /* the MXFP4 model's reference (mxfp4/) */
static bool g_mx_ok;
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

/* A copy of the fixture's hf/ in dir [64] (a mkdtemp name the caller
 * removes) whose config.json edit() changes. */
static void copy_folder(char *dir, void (*edit)(json_t *))
{
    snprintf(dir, 64, "/tmp/wick-gpt-oss-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    char cmd[4000], cfg[1200];
    snprintf(cmd, sizeof cmd, "cp '%s'/hf/* '%s/'", g_r.dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    json_t *c = json_load_file(cfg, 0, NULL);
    CHECK(c != NULL);
    edit(c);
    CHECK_EQ_INT(json_dump_file(c, cfg, JSON_INDENT(1)), 0);
    json_decref(c);
}

static void remove_folder(const char *dir)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

static json_t *rope(json_t *c) { return json_object_get(c, "rope_parameters"); }
static void edit_no_truncate(json_t *c) { json_object_set_new(rope(c), "truncate", json_false()); }

static void test_truncate_false(void)
{
    char tmp[64];
    copy_folder(tmp, edit_no_truncate);
    struct wk_model *m = fixture_load(tmp);
    json_t *want = json_object_get(g_r.ref, "logits_truncate_false_last_position");
    CHECK_EQ_INT(json_array_size(want), N_PROMPTS);
    if (m && m->rope_freqs) { /* high = 8.06 unrounded: pair 8 still ramps, pair 9 is divided by 8 */
        const float *d = m->rope_freqs->data;
        CHECK(d[8] > 1.0f && d[8] < 8.0f);
        CHECK_NEAR(d[9], 8, 1e-6, 0);
    }
    struct wk_context *ctx = NULL;
    struct wk_error err;
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = 64;
    if (m) CHECK_EQ_INT(wk_context_create(m, &cp, &ctx, &err), WK_OK);
    for (size_t p = 0; ctx && p < N_PROMPTS; p++) {
        json_t *prompt = json_array_get(json_object_get(g_r.ref, "prompts"), p);
        int32_t ids[N_POS];
        for (int i = 0; i < N_POS; i++) ids[i] = fixture_id(prompt, (size_t)i);
        float logits[VOCAB], ref[VOCAB];
        wk_context_truncate(ctx, 0);
        CHECK_EQ_INT(wk_context_decode(ctx, ids, N_POS, logits, NULL, &err), WK_OK);
        for (int i = 0; i < VOCAB; i++) ref[i] = (float)json_number_value(json_array_get(json_array_get(want, p), (size_t)i));
        double e = fixture_row_error(logits, ref, VOCAB, NULL, 0);
        printf("  truncate false, prompt %zu: last position relative error %.3g\n", p, e);
        CHECK(e < REL_TOL);
    }
    wk_context_destroy(ctx);
    wk_model_destroy(m);
    remove_folder(tmp);
}

static void edit_no_factor(json_t *c) { json_object_del(rope(c), "factor"); }
static void edit_truncate_string(json_t *c) { json_object_set_new(rope(c), "truncate", json_string("no")); }
static void edit_mscale(json_t *c) { json_object_set_new(rope(c), "mscale", json_real(1)); }
static void edit_small_factor(json_t *c) { json_object_set_new(rope(c), "factor", json_real(0.5)); }
static void edit_layer_types(json_t *c) { json_array_append_new(json_object_get(c, "layer_types"), json_string("full_attention")); }
static void edit_limit(json_t *c) { json_object_set_new(c, "swiglu_limit", json_real(-1)); }
static void edit_experts(json_t *c) { json_object_set_new(c, "num_experts_per_tok", json_integer(9)); }

static void test_errors(void)
{
    static const struct {
        void (*edit)(json_t *);
        const char *msg;
    } cases[] = {{edit_no_factor, "rope_scaling yarn factor must be a number"},
                 {edit_truncate_string, "rope_scaling truncate must be a boolean"},
                 {edit_mscale, "mscale / mscale_all_dim are not supported"},
                 {edit_small_factor, "factor 0.5 (>= 1)"},
                 {edit_layer_types, "layer_types must be a list of num_hidden_layers entries"},
                 {edit_limit, "swiglu_limit (> 0)"},
                 {edit_experts, "expert_used_count 9 must be 1..expert_count 4"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char tmp[64];
        copy_folder(tmp, cases[i].edit);
        struct wk_model *m = NULL;
        struct wk_error err;
        wk_error_clear(&err);
        CHECK(wk_model_load(tmp, &m, &err) != WK_OK);
        if (!strstr(err.msg, cases[i].msg)) fprintf(stderr, "  case %zu: %s\n", i, err.msg);
        CHECK(strstr(err.msg, cases[i].msg) != NULL);
        wk_model_destroy(m);
        remove_folder(tmp);
    }
}

static void test_mxfp4(void)
{
    CHECK(g_mx_ok);
    if (!g_mx_ok) return;
    json_t *checks = json_object_get(g_mx.ref, "checks");
    /* the rounding must be far out of reach of the tolerance, at every
     * position, or matching the reference would prove nothing */
    CHECK(json_number_value(json_object_get(checks, "max_rel_logit_change_mxfp4_vs_f32")) > 100 * REL_TOL);
    CHECK(json_number_value(json_object_get(checks, "min_rel_logit_change_mxfp4_vs_f32")) > 10 * REL_TOL);
    char path[1200];
    snprintf(path, sizeof path, "%s/gpt-oss-mxfp4.gguf", g_r.dir);
    struct wk_model *m = fixture_load(path);
    for (int i = 0; m && i < m->hp.n_layer; i++) {
        const struct wk_moe_block *b = &m->layers[i].moe;
        const struct wk_tensor *const ts[3] = {b->gate, b->up, b->down};
        for (int k = 0; k < 3; k++) {
            CHECK(ts[k] != NULL);
            if (ts[k]) CHECK_EQ_INT(ts[k]->dtype, WK_DTYPE_MXFP4);
        }
        CHECK(b->gate_b && b->up_b && b->down_b && b->topk_softmax);
    }
    fixture_ref_check_logits(&g_mx, m, "mxfp4", REL_TOL);
    fixture_ref_check_greedy(&g_mx, m, "mxfp4", N_GREEDY);
    wk_model_destroy(m);
}

int main(int argc, char **argv)
{
    if (fixture_ref_open(&g_r, "test-gpt-oss", "WICK_GPT_OSS_FIXTURES", "tests/golden/gpt-oss", N_PROMPTS, N_POS,
                         VOCAB))
        return 1;
    char mx[1100];
    snprintf(mx, sizeof mx, "%s/mxfp4", g_r.dir);
    g_mx_ok = fixture_ref_open(&g_mx, "test-gpt-oss", "WICK_GPT_OSS_MXFP4_FIXTURES", mx, N_PROMPTS, N_POS, VOCAB) == 0;
    static const struct check_test tests[] = {TEST(test_hparams), TEST(test_logits),       TEST(test_greedy),
                                              TEST(test_truncate_false), TEST(test_errors), TEST(test_mxfp4)};
    int rc = check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    if (g_mx_ok) fixture_ref_close(&g_mx);
    fixture_ref_close(&g_r);
    return rc;
}
