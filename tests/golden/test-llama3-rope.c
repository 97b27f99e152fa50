/*
 * test-llama3-rope.c - Llama 3 RoPE scaling from a Hugging Face folder and
 * from llama.cpp's GGUF against transformers 5.24 (fixtures:
 * tests/golden/llama3-rope/, made by
 * scripts/reference/make-llama3-rope-fixtures.py: a tiny random
 * LlamaForCausalLM, rope_parameters rope_type "llama3", factor 8,
 * low/high_freq_factor 1/4, original_max_position_embeddings 64, head_dim 16,
 * so one RoPE pair keeps its frequency, two are interpolated and five are
 * divided by 8):
 *   1. the per-pair divisors wick builds from config.json equal those
 *      transformers' inverse frequencies imply, and the GGUF's
 *      rope_freqs.weight (written by llama.cpp's converter);
 *   2. logits of every position of 2 prompts of 32 tokens within REL_TOL of
 *      transformers' float32 logits (error of a row: max_i |wick_i - ref_i|
 *      / max_i |ref_i|, printed), from the folder as transformers 5 saved it
 *      (rope_parameters), from the same folder in transformers 4's form
 *      (rope_scaling with "type", rope_theta beside it), and from the GGUF;
 *      the scaling matters: the reference moves by more than 1 (relative)
 *      without it (reference.json checks);
 *   3. greedy 16-token continuations identical;
 *   4. bad llama3 fields are errors naming them.
 *
 * Usage: test-llama3-rope [FILTER]; run from the repository root, or with
 * WICK_LLAMA3_ROPE_FIXTURES naming the fixture folder.
 */
#include "../unit/check.h"
#include "fixture.h"

#include "../../src/model/model_internal.h"

#include <jansson.h>
#include <unistd.h>

#define REL_TOL 1e-3
#define N_PROMPTS 2
#define N_POS 32
#define VOCAB 512

static struct fixture_ref g_r;

/* A copy of the fixture's hf/ in dir [64] (a mkdtemp name the caller
 * removes) whose config.json edit() changes. */
static void copy_folder(char *dir, void (*edit)(json_t *))
{
    snprintf(dir, 64, "/tmp/wick-llama3-rope-XXXXXX");
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

/* transformers 4's form: rope_scaling {"type": "llama3", ...}, rope_theta
 * at the top level, no rope_parameters. */
static void edit_v4(json_t *c)
{
    json_t *rp = json_deep_copy(json_object_get(c, "rope_parameters"));
    json_object_set(c, "rope_theta", json_object_get(rp, "rope_theta"));
    json_object_del(rp, "rope_theta");
    json_object_del(rp, "rope_type");
    json_object_set_new(rp, "type", json_string("llama3"));
    json_object_set_new(c, "rope_scaling", rp);
    json_object_del(c, "rope_parameters");
}

static struct wk_model *load_which(int which, char *tmp)
{
    char path[1200];
    tmp[0] = 0;
    if (which == 0) {
        snprintf(path, sizeof path, "%s/hf", g_r.dir);
    } else if (which == 1) {
        copy_folder(tmp, edit_v4);
        snprintf(path, sizeof path, "%s", tmp);
    } else {
        snprintf(path, sizeof path, "%s/llama3-rope-f32.gguf", g_r.dir);
    }
    return fixture_load(path);
}

static const char *const g_names[3] = {"hf", "hf (v4 config)", "gguf"};

static void test_divisors(void)
{
    json_t *want = json_object_get(g_r.ref, "rope_divisors");
    CHECK_EQ_INT(json_array_size(want), 8);
    for (int which = 0; which < 3; which++) {
        char tmp[64];
        struct wk_model *m = load_which(which, tmp);
        if (m) {
            CHECK_EQ_STR(wk_model_family(m), "llama");
            CHECK_EQ_INT(m->hp.n_rot, 16);
            CHECK(m->rope_freqs && m->rope_freqs->ne[0] == 8);
            for (int i = 0; m->rope_freqs && i < 8; i++) {
                double w = json_number_value(json_array_get(want, (size_t)i));
                double got = ((const float *)m->rope_freqs->data)[i];
                if (!(fabs(got - w) <= 1e-5 * w)) fprintf(stderr, "  %s pair %d: %g, want %g\n", g_names[which], i, got, w);
                CHECK(fabs(got - w) <= 1e-5 * w);
            }
            CHECK_NEAR(m->hp.rope_freq_scale, 1.0, 0, 0); /* no linear scaling on top */
        }
        wk_model_destroy(m);
        if (tmp[0]) remove_folder(tmp);
    }
}

static void test_logits(void)
{
    json_t *checks = json_object_get(g_r.ref, "checks");
    CHECK(json_number_value(json_object_get(checks, "min_rel_logit_change_without_scaling_last_position")) >
          100 * REL_TOL);
    for (int which = 0; which < 3; which++) {
        char tmp[64];
        struct wk_model *m = load_which(which, tmp);
        fixture_ref_check_logits(&g_r, m, g_names[which], REL_TOL);
        wk_model_destroy(m);
        if (tmp[0]) remove_folder(tmp);
    }
}

static void test_greedy(void)
{
    for (int which = 0; which < 3; which++) {
        char tmp[64];
        struct wk_model *m = load_which(which, tmp);
        fixture_ref_check_greedy(&g_r, m, g_names[which], 16);
        wk_model_destroy(m);
        if (tmp[0]) remove_folder(tmp);
    }
}

static void edit_no_factor(json_t *c) { json_object_del(json_object_get(c, "rope_parameters"), "factor"); }
static void edit_bad_high(json_t *c)
{
    json_object_set_new(json_object_get(c, "rope_parameters"), "high_freq_factor", json_real(0.5));
}
static void edit_string_factor(json_t *c)
{
    json_object_set_new(json_object_get(c, "rope_parameters"), "factor", json_string("8"));
}
static void edit_qwen2(json_t *c) { json_object_set_new(c, "model_type", json_string("qwen2")); }

static void test_errors(void)
{
    static const struct {
        void (*edit)(json_t *);
        const char *msg;
    } cases[] = {{edit_no_factor, "rope_scaling type llama3 needs factor"},
                 {edit_bad_high, "high_freq_factor 0.5"},
                 {edit_string_factor, "rope_scaling factor must be a number"},
                 {edit_qwen2, "rope_scaling type 'llama3' is not supported"}};
    for (size_t i = 0; i < WK_ARRAY_LEN(cases); i++) {
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

int main(int argc, char **argv)
{
    if (fixture_ref_open(&g_r, "test-llama3-rope", "WICK_LLAMA3_ROPE_FIXTURES", "tests/golden/llama3-rope", N_PROMPTS,
                         N_POS, VOCAB))
        return 1;
    static const struct check_test tests[] = {TEST(test_divisors), TEST(test_logits), TEST(test_greedy),
                                              TEST(test_errors)};
    int rc = check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    fixture_ref_close(&g_r);
    return rc;
}
