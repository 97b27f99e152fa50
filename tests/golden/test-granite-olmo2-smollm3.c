/*
 * test-granite-olmo2-smollm3.c - Granite 3 (src/model/granite.c), OLMo 2
 * (olmo2.c) and SmolLM3 (smollm3.c) from Hugging Face folders and from
 * llama.cpp's GGUFs against transformers 5.24 float32, eager attention
 * (fixtures: tests/golden/{granite,olmo2,smollm3}/, made by
 * scripts/reference/make-granite-olmo2-smollm3-fixtures.py: tiny random
 * models, hidden 64, 4 heads of 16, 2 KV heads, vocab 512):
 *   granite  embedding_multiplier 6, residual_multiplier 0.5,
 *            attention_multiplier 0.4, logits_scaling 3 (2 layers);
 *   granitemoe the same, each layer's FFN 2 of 4 experts (softmax over
 *            the top 2 router logits);
 *   olmo2    no pre-norms, post-attention and post-FFN RMSNorms, Q and K
 *            RMSNorms over all heads of a row (2 layers);
 *   smollm3  layer 3 of 4 without RoPE, tied embeddings.
 * For each: 1. the knobs both loaders set; 2. logits of every position of
 * 3 prompts of 32 tokens within REL_TOL of transformers' (error of a row:
 * max_i |wick_i - ref_i| / max_i |ref_i|, printed), each feature moving
 * the reference far beyond that (reference.json checks); 3. greedy 32-token
 * continuations identical; 4. bad config values refused naming the key;
 * 5. Granite 3.3's and SmolLM3's real chat templates (copies of llama.cpp's
 * models/templates in the fixture folders) rendered through wick's Jinja
 * with wick's thinking switch.
 *
 * Usage: test-granite-olmo2-smollm3 [FILTER] (test_granite, test_olmo2,
 * test_smollm3, _logits, ...); run from the repository root, or with
 * WICK_GOS_FIXTURES naming the folder that holds the three fixtures.
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

enum { GRANITE, GRANITEMOE, OLMO2, SMOLLM3, N_FAM };
static const char *const g_fam[N_FAM] = {"granite", "granitemoe", "olmo2", "smollm3"};
static struct fixture_ref g_granite, g_granitemoe, g_olmo2, g_smollm3;
static struct fixture_ref *const g_r[N_FAM] = {&g_granite, &g_granitemoe, &g_olmo2, &g_smollm3};
static bool g_open[N_FAM];
static const char *const g_names[2] = {"hf", "gguf"};

static struct wk_model *load_which(int fam, int which)
{
    char path[1200];
    if (which == 0) snprintf(path, sizeof path, "%s/hf", g_r[fam]->dir);
    else snprintf(path, sizeof path, "%s/%s-f32.gguf", g_r[fam]->dir, g_fam[fam]);
    return fixture_load(path);
}

/* Each of the reference's feature checks moves the logits far beyond REL_TOL. */
static void check_features(int fam, int n_checks)
{
    json_t *checks = json_object_get(g_r[fam]->ref, "checks");
    const char *key;
    json_t *v;
    int n = 0;
    json_object_foreach(checks, key, v) {
        if (strncmp(key, "min_rel_logit_change_without_", 29) != 0) continue;
        n++;
        if (!(json_number_value(v) > 10 * REL_TOL)) fprintf(stderr, "  %s: %s = %g\n", g_fam[fam], key, json_number_value(v));
        CHECK(json_number_value(v) > 10 * REL_TOL);
    }
    CHECK_EQ_INT(n, n_checks);
}

static void check_logits_greedy(int fam, int n_checks)
{
    if (!g_open[fam]) return;
    check_features(fam, n_checks);
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load_which(fam, which);
        char name[32];
        snprintf(name, sizeof name, "%s %s", g_fam[fam], g_names[which]);
        fixture_ref_check_logits(g_r[fam], m, name, REL_TOL);
        fixture_ref_check_greedy(g_r[fam], m, name, N_GREEDY);
        wk_model_destroy(m);
    }
}

/* A copy of family fam's hf/ in dir [64] (removed by the caller) with
 * config.json's key set to v (owned), and the error loading it gives: its
 * status, and whether its message names want. */
static void check_bad_config(int fam, const char *key, json_t *v, const char *want)
{
    char dir[64], cmd[4000], cfg[1200];
    snprintf(dir, sizeof dir, "/tmp/wick-gos-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd, "cp '%s'/hf/* '%s/'", g_r[fam]->dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    json_t *c = json_load_file(cfg, 0, NULL);
    CHECK(c != NULL);
    json_object_set_new(c, key, v);
    CHECK_EQ_INT(json_dump_file(c, cfg, JSON_INDENT(1)), 0);
    json_decref(c);
    struct wk_model *m = NULL;
    struct wk_error err;
    wk_error_clear(&err);
    CHECK_EQ_INT(wk_model_load(dir, &m, &err), WK_E_FORMAT);
    if (!strstr(err.msg, want)) fprintf(stderr, "  %s: \"%s\" does not name %s\n", key, err.msg, want);
    CHECK(strstr(err.msg, want) != NULL);
    wk_model_destroy(m);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

static void check_granite_hparams(int fam)
{
    for (int which = 0; g_open[fam] && which < 2; which++) {
        struct wk_model *m = load_which(fam, which);
        if (!m) continue;
        CHECK_EQ_STR(wk_model_family(m), g_fam[fam]);
        CHECK_NEAR(m->hp.embed_scale, 6, 0, 1e-7);
        CHECK_NEAR(m->hp.residual_scale, 0.5, 0, 1e-7);
        CHECK_NEAR(m->hp.attn_scale, 0.4, 0, 1e-7);
        CHECK_NEAR(m->hp.logit_scale, 1.0 / 3, 0, 1e-7);
        CHECK_EQ_INT(m->rope_mode, which == 0 ? WK_ROPE_NEOX : WK_ROPE_NORM);
        CHECK(!m->hp.no_pre_norm && m->layers[0].attn_norm != NULL);
        for (int i = 0; fam == GRANITEMOE && i < m->hp.n_layer; i++) {
            const struct wk_layer *l = &m->layers[i];
            CHECK(l->ffn_gate == NULL && l->moe.router != NULL && l->moe.softmax_router);
            CHECK(l->moe.gate_up != NULL || (l->moe.gate != NULL && l->moe.up != NULL));
        }
        char f[1024]; /* what wick show prints */
        wk_model_features(m, f, sizeof f);
        CHECK(strstr(f, "embeddings scaled x6, residual scaled x0.5, logits scaled x0.333333") != NULL);
        CHECK(strstr(f, "attention scale 0.4") != NULL);
        if (fam == GRANITEMOE) {
            CHECK(strstr(f, "mixture of experts on 2 of 2 layers (4 experts, 2 per token, softmax router)") != NULL);
            CHECK_EQ_INT(m->hp.n_expert, 4);
            CHECK_EQ_INT(m->hp.n_expert_used, 2);
            CHECK_EQ_INT(m->hp.n_ff_exp, 32);
            CHECK(m->hp.expert_weights_norm);
        }
        wk_model_destroy(m);
    }
}

static void test_granite_hparams(void) { check_granite_hparams(GRANITE); }
static void test_granitemoe_hparams(void) { check_granite_hparams(GRANITEMOE); }
static void test_granitemoe_logits(void) { check_logits_greedy(GRANITEMOE, 4); }

static void test_granite_logits(void) { check_logits_greedy(GRANITE, 4); }

static void test_granite_bad_config(void)
{
    if (!g_open[GRANITE]) return;
    check_bad_config(GRANITE, "logits_scaling", json_real(0), "granite.logit_scale");
    check_bad_config(GRANITE, "residual_multiplier", json_real(-1), "granite.residual_scale");
    check_bad_config(GRANITE, "embedding_multiplier", json_string("6"), "embedding_multiplier");
}

static void test_olmo2_hparams(void)
{
    for (int which = 0; g_open[OLMO2] && which < 2; which++) {
        struct wk_model *m = load_which(OLMO2, which);
        if (!m) continue;
        CHECK_EQ_STR(wk_model_family(m), "olmo2");
        CHECK(m->hp.no_pre_norm);
        CHECK_NEAR(m->hp.residual_scale, 1, 0, 0);
        CHECK_NEAR(m->hp.logit_scale, 1, 0, 0);
        CHECK_EQ_INT(m->rope_mode, WK_ROPE_NEOX);
        for (int i = 0; i < m->hp.n_layer; i++) {
            const struct wk_layer *l = &m->layers[i];
            CHECK(l->attn_norm == NULL && l->ffn_norm == NULL);
            CHECK(l->post_attn_norm != NULL && l->post_ffn_norm != NULL);
            CHECK(l->qk_norm_full && l->q_norm && l->k_norm);
            if (l->q_norm && l->k_norm) {
                CHECK_EQ_INT(l->q_norm->ne[0], 64);
                CHECK_EQ_INT(l->k_norm->ne[0], 32);
            }
        }
        char f[1024];
        wk_model_features(m, f, sizeof f);
        CHECK(strstr(f, "QK norm over the whole projection, post-norms only") != NULL);
        wk_model_destroy(m);
    }
}

static void test_olmo2_logits(void) { check_logits_greedy(OLMO2, 2); }

static void test_smollm3_hparams(void)
{
    for (int which = 0; g_open[SMOLLM3] && which < 2; which++) {
        struct wk_model *m = load_which(SMOLLM3, which);
        if (!m) continue;
        CHECK_EQ_STR(wk_model_family(m), "smollm3");
        CHECK_EQ_INT(m->hp.n_layer, 4);
        for (int i = 0; i < m->hp.n_layer; i++) CHECK_EQ_INT(m->layers[i].n_rot, i == 3 ? 0 : 16);
        CHECK(m->output == m->tok_embd);
        CHECK_EQ_INT(m->rope_mode, which == 0 ? WK_ROPE_NEOX : WK_ROPE_NORM);
        char f[1024];
        wk_model_features(m, f, sizeof f);
        CHECK(strstr(f, "no RoPE on 1 of 4 layers") != NULL && strstr(f, "output tied to the embeddings") != NULL);
        wk_model_destroy(m);
    }
}

static void test_smollm3_logits(void) { check_logits_greedy(SMOLLM3, 1); }

static void test_smollm3_bad_config(void)
{
    if (!g_open[SMOLLM3]) return;
    json_t *bad = json_array();
    for (int i = 0; i < 4; i++) json_array_append_new(bad, json_integer(i == 2 ? 2 : 1));
    check_bad_config(SMOLLM3, "no_rope_layers", bad, "no_rope_layers[2]");
    check_bad_config(SMOLLM3, "no_rope_layers", json_pack("[i,i]", 1, 0), "no_rope_layers");
}

/* The request [system sys (or none), user "Hi"] with thinking think (-1:
 * unset) rendered by family fam's real chat template (file tpl of the
 * fixture folder, put into a copy of its hf/) through wk_chat_render_request;
 * the text (malloc'd), or NULL after a failed check. */
static char *render_real_template(int fam, const char *tpl, const char *sys, int think)
{
    char dir[64], cmd[4000];
    snprintf(dir, sizeof dir, "/tmp/wick-gos-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd, "cp '%s'/hf/* '%s/' && cp '%s/%s' '%s/chat_template.jinja'", g_r[fam]->dir, dir,
             g_r[fam]->dir, tpl, dir);
    CHECK_EQ_INT(system(cmd), 0);
    struct wk_model *m = fixture_load(dir);
    struct wk_tokenizer *tok = NULL;
    struct wk_error err;
    char *text = NULL;
    if (m && wk_tokenizer_for_model(m, &tok, &err) == WK_OK) {
        json_t *msgs = json_array();
        if (sys) json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "system", "content", sys));
        json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user", "content", "Hi"));
        struct wk_chat_request r = {.messages = msgs, .think = think, .add_generation_prompt = true};
        struct wk_prompt p = {0};
        enum wk_status st = wk_chat_render_request(m, tok, &r, &p, &err);
        if (st) fprintf(stderr, "  %s: %s\n", tpl, err.msg);
        CHECK_EQ_INT(st, WK_OK);
        size_t len = 0;
        for (int32_t i = 0; i < p.n; i++) len += p.segs[i].len;
        text = calloc(1, len + 1);
        for (int32_t i = 0, o = 0; text && i < p.n; o += (int32_t)p.segs[i].len, i++)
            memcpy(text + o, p.segs[i].text, p.segs[i].len);
        wk_prompt_deinit(&p);
        json_decref(msgs);
    }
    wk_tokenizer_destroy(tok);
    wk_model_destroy(m);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
    return text;
}

/* Whether render_real_template's text contains want (false without a text). */
static bool renders_with(int fam, const char *tpl, const char *sys, int think, const char *want)
{
    char *t = render_real_template(fam, tpl, sys, think);
    bool has = t && strstr(t, want);
    free(t);
    return has;
}

/* Granite 3.3's template (llama.cpp's models/templates copy) through wick's
 * Jinja: wick's thinking switch reaches it as `thinking`, its own name. */
static void test_granite_chat(void)
{
    if (!g_open[GRANITE]) return;
    const char *tpl = "granite-3.3-chat_template.jinja", *thoughts = "You can write down your thoughts";
    CHECK(renders_with(GRANITE, tpl, NULL, 1, thoughts));
    CHECK(!renders_with(GRANITE, tpl, NULL, 0, thoughts));
    CHECK(!renders_with(GRANITE, tpl, NULL, -1, thoughts));
    CHECK(renders_with(GRANITE, tpl, NULL, -1, "<|start_of_role|>user<|end_of_role|>Hi<|end_of_text|>\n"
                                                "<|start_of_role|>assistant<|end_of_role|>"));
}

/* SmolLM3's template: thinking sets enable_thinking (on when unset), and a
 * system message's /think or /no_think overrides it, as in transformers;
 * with thinking off the prompt ends in an empty think block. */
static void test_smollm3_chat(void)
{
    if (!g_open[SMOLLM3]) return;
    const char *tpl = "smollm3-chat_template.jinja";
    CHECK(renders_with(SMOLLM3, tpl, NULL, -1, "Reasoning Mode: /think\n"));
    CHECK(renders_with(SMOLLM3, tpl, NULL, 1, "Reasoning Mode: /think\n"));
    CHECK(renders_with(SMOLLM3, tpl, NULL, 0, "Reasoning Mode: /no_think\n"));
    CHECK(renders_with(SMOLLM3, tpl, NULL, 0, "<|im_start|>assistant\n<think>\n\n</think>\n"));
    CHECK(renders_with(SMOLLM3, tpl, "Be brief. /no_think", 1, "Reasoning Mode: /no_think\n"));
    CHECK(renders_with(SMOLLM3, tpl, "Be brief. /think", 0, "Reasoning Mode: /think\n"));
}

int main(int argc, char **argv)
{
    const char *base = getenv("WICK_GOS_FIXTURES");
    int rc = 0;
    for (int f = 0; f < N_FAM; f++) {
        char dir[600];
        snprintf(dir, sizeof dir, "%.500s/%s", base && *base ? base : "tests/golden", g_fam[f]);
        /* (the folder is dir, from WICK_GOS_FIXTURES; no per-fixture variable) */
        g_open[f] = fixture_ref_open(g_r[f], "test-granite-olmo2-smollm3", "WICK_GOS_FIXTURES_UNUSED", dir,
                                     N_PROMPTS, N_POS, VOCAB) == 0;
        rc |= !g_open[f];
    }
    static const struct check_test tests[] = {
        TEST(test_granite_hparams), TEST(test_granite_logits),  TEST(test_granite_bad_config),
        TEST(test_granite_chat),    TEST(test_granitemoe_hparams), TEST(test_granitemoe_logits),
        TEST(test_olmo2_hparams),   TEST(test_olmo2_logits),
        TEST(test_smollm3_hparams), TEST(test_smollm3_logits),  TEST(test_smollm3_bad_config),
        TEST(test_smollm3_chat)};
    rc |= check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    for (int f = 0; f < N_FAM; f++)
        if (g_open[f]) fixture_ref_close(g_r[f]);
    return rc;
}
