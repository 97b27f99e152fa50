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

#include "../../src/io/wk_safetensors.h"
#include "../../src/model/model_internal.h"

#include <jansson.h>
#include <unistd.h>

#define REL_TOL 1e-3
#define N_PROMPTS 2
#define N_POS 32
#define VOCAB 512

static char g_dir[1024];
static json_t *g_ref;
static const float *g_logits; /* [N_PROMPTS, N_POS, VOCAB] */

static void prompt_ids(size_t p, int32_t *ids)
{
    json_t *arr = json_array_get(json_object_get(g_ref, "prompts"), p);
    CHECK_EQ_INT(json_array_size(arr), N_POS);
    for (size_t i = 0; i < N_POS; i++) ids[i] = fixture_id(arr, i);
}

/* A copy of the fixture's hf/ in dir [64] (a mkdtemp name the caller
 * removes) whose config.json edit() changes. */
static void copy_folder(char *dir, void (*edit)(json_t *))
{
    snprintf(dir, 64, "/tmp/wick-llama3-rope-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    char cmd[4000], cfg[1200];
    snprintf(cmd, sizeof cmd, "cp '%s'/hf/* '%s/'", g_dir, dir);
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
        snprintf(path, sizeof path, "%s/hf", g_dir);
    } else if (which == 1) {
        copy_folder(tmp, edit_v4);
        snprintf(path, sizeof path, "%s", tmp);
    } else {
        snprintf(path, sizeof path, "%s/llama3-rope-f32.gguf", g_dir);
    }
    return fixture_load(path);
}

static const char *const g_names[3] = {"hf", "hf (v4 config)", "gguf"};

static void test_divisors(void)
{
    json_t *want = json_object_get(g_ref, "rope_divisors");
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
    json_t *checks = json_object_get(g_ref, "checks");
    CHECK(json_number_value(json_object_get(checks, "min_rel_logit_change_without_scaling_last_position")) >
          100 * REL_TOL);
    for (int which = 0; which < 3; which++) {
        char tmp[64];
        struct wk_model *m = load_which(which, tmp);
        double worst[2] = {0, 0};
        for (size_t p = 0; m && p < N_PROMPTS; p++) {
            int32_t ids[N_POS];
            prompt_ids(p, ids);
            char what[64];
            snprintf(what, sizeof what, "%s prompt %zu", g_names[which], p);
            fixture_check_logits(m, ids, N_POS, g_logits + p * N_POS * VOCAB, VOCAB, REL_TOL, what, &worst[0],
                                 &worst[1]);
        }
        if (m)
            printf("  %-15s max relative logits error: prefill %.3g, last token alone %.3g (tolerance %g)\n",
                   g_names[which], worst[0], worst[1], REL_TOL);
        wk_model_destroy(m);
        if (tmp[0]) remove_folder(tmp);
    }
}

static void test_greedy(void)
{
    json_t *greedy = json_object_get(g_ref, "greedy");
    CHECK_EQ_INT(json_array_size(greedy), N_PROMPTS);
    for (int which = 0; which < 3; which++) {
        char tmp[64];
        struct wk_model *m = load_which(which, tmp);
        for (size_t p = 0; m && p < N_PROMPTS; p++) {
            int32_t ids[N_POS];
            prompt_ids(p, ids);
            json_t *want = json_array_get(greedy, p);
            CHECK_EQ_INT(json_array_size(want), 16);
            char what[64];
            snprintf(what, sizeof what, "%s prompt %zu", g_names[which], p);
            fixture_check_greedy(m, ids, N_POS, want, VOCAB, what);
        }
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
    const char *d = getenv("WICK_LLAMA3_ROPE_FIXTURES");
    snprintf(g_dir, sizeof g_dir, "%s", d && *d ? d : "tests/golden/llama3-rope");
    char path[1200];
    snprintf(path, sizeof path, "%s/reference.json", g_dir);
    json_error_t je;
    g_ref = json_load_file(path, 0, &je);
    if (!g_ref) {
        fprintf(stderr, "test-llama3-rope: %s: %s\n", path, je.text);
        return 1;
    }
    snprintf(path, sizeof path, "%s/logits.safetensors", g_dir);
    struct wk_safetensors *arrays = NULL;
    struct wk_error err;
    if (wk_safetensors_open(path, &arrays, &err)) {
        fprintf(stderr, "test-llama3-rope: %s\n", err.msg);
        return 1;
    }
    const struct wk_st_tensor *t = wk_safetensors_find(arrays, "logits");
    if (!t || t->dtype != WK_ST_F32 || t->n_elements != (uint64_t)N_PROMPTS * N_POS * VOCAB) {
        fprintf(stderr, "test-llama3-rope: %s: no F32 logits [%d, %d, %d]\n", path, N_PROMPTS, N_POS, VOCAB);
        return 1;
    }
    g_logits = t->data;
    static const struct check_test tests[] = {TEST(test_divisors), TEST(test_logits), TEST(test_greedy),
                                              TEST(test_errors)};
    int rc = check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    wk_safetensors_close(arrays);
    json_decref(g_ref);
    return rc;
}
