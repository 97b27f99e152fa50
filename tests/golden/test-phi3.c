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
 *   3. greedy 32-token continuations identical; a 16-position context
 *      (longrope's original one) takes the short divisors, matching
 *      transformers on 16 tokens;
 *   4. longrope's chat template (Phi-3.5-mini-instruct's) renders as
 *      transformers renders it, to the same ids, and <|end|> ends a turn;
 *   5. the same configs written as transformers 4 wrote them (rope_scaling
 *      type longrope, top-level rope_theta and partial_rotary_factor) give
 *      the same logits;
 *   6. config.json and GGUF values out of range (and half a LongRoPE pair
 *      of tables) are WK_E_FORMAT errors naming the key or tensor.
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
            char f[1024], want[96]; /* what wick show prints */
            wk_model_features(p, f, sizeof f);
            snprintf(want, sizeof want, "LongRoPE (long factors past %d positions, attention factor", orig[fx]);
            CHECK(strstr(f, want) != NULL);
            CHECK_EQ_INT(strstr(f, "base 10000 (partial)") != NULL, n_rot[fx] < 16);
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

/* A context of no more positions than longrope's original context (16)
 * takes the short divisors (llama.cpp's choice), as transformers does for
 * a sequence that short: the first prompt's first 16 tokens against
 * transformers' logits of them alone ("logits_short"). */
static void test_short_context(void)
{
    const struct wk_st_tensor *t = wk_safetensors_find(g_r[0].arrays, "logits_short");
    CHECK(t && t->dtype == WK_ST_F32 && t->n_elements == 16 * VOCAB);
    if (!t) return;
    int32_t ids[N_POS];
    fixture_ref_prompt(&g_r[0], 0, ids);
    float *out = malloc(16 * VOCAB * sizeof *out);
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load_which(0, which);
        if (!m) continue;
        struct wk_context_params cp = wk_context_params_default();
        cp.n_ctx = 16;
        cp.n_threads = 2;
        struct wk_context *ctx = NULL;
        struct wk_error err;
        CHECK_EQ_INT(wk_context_create(m, &cp, &ctx, &err), WK_OK);
        double worst = 0;
        if (ctx && out) {
            CHECK_EQ_INT(wk_context_decode_all(ctx, ids, 16, out, NULL, &err), WK_OK);
            for (int i = 0; i < 16; i++)
                worst = fmax(worst, fixture_row_error(out + i * VOCAB, (const float *)t->data + i * VOCAB, VOCAB, NULL, 0));
        }
        printf("  %-13s n_ctx 16 (short factors): max relative logits error %.3g (tolerance %g)\n", g_names[0][which],
               worst, REL_TOL);
        CHECK(worst < REL_TOL);
        wk_context_destroy(ctx);
        wk_model_destroy(m);
    }
    free(out);
}

static const char *const g_variant_files[] = {"model.safetensors", "tokenizer.json", "tokenizer_config.json",
                                              "config.json"};

/* A copy of fixture fx's folder in the temporary folder dir (mkdtemp
 * template, filled in): its weights and tokenizer linked, config.json
 * written from cfg. */
static bool write_variant(int fx, json_t *cfg, char *dir)
{
    char path[1400], src[1400];
    if (!mkdtemp(dir)) return false;
    char *abs = realpath(g_r[fx].dir, NULL);
    for (size_t i = 0; i < 3; i++) {
        snprintf(src, sizeof src, "%s/hf/%s", abs ? abs : g_r[fx].dir, g_variant_files[i]);
        snprintf(path, sizeof path, "%s/%s", dir, g_variant_files[i]);
        CHECK_EQ_INT(symlink(src, path), 0);
    }
    free(abs);
    snprintf(path, sizeof path, "%s/config.json", dir);
    return json_dump_file(cfg, path, 0) == 0;
}

static void remove_variant(const char *dir)
{
    char path[1400];
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, g_variant_files[i]);
        unlink(path);
    }
    rmdir(dir);
}

static json_t *fixture_config(int fx)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/hf/config.json", g_r[fx].dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    CHECK(cfg != NULL);
    return cfg;
}

/* Fixture fx's folder with `edit` ("key": value pairs, JSON) merged into
 * its config.json's rope_parameters when rope, else the top level, is a
 * WK_E_FORMAT error whose message names `want`. */
static void check_bad_config(int fx, bool rope, const char *edit, const char *want)
{
    char dir[] = "/tmp/wick-phi3-XXXXXX";
    json_t *cfg = fixture_config(fx), *e = json_loads(edit, 0, NULL);
    CHECK(e != NULL);
    if (cfg && e) json_object_update(rope ? json_object_get(cfg, "rope_parameters") : cfg, e);
    bool ok = cfg && write_variant(fx, cfg, dir);
    CHECK(ok);
    json_decref(cfg);
    json_decref(e);
    if (!ok) return;
    struct wk_model *m = NULL;
    struct wk_error err = {0};
    enum wk_status st = wk_model_load(dir, &m, &err);
    CHECK_EQ_INT(st, WK_E_FORMAT);
    if (st != WK_E_FORMAT || !strstr(err.msg, want)) {
        CHECK(strstr(err.msg, want) != NULL);
        fprintf(stderr, "    edit %s: %s\n", edit, err.msg);
    }
    wk_model_destroy(m);
    remove_variant(dir);
}

/* The fixtures' configs as transformers 4 and the Phi-3.5 / Phi-4-mini
 * checkpoints write them (rope_scaling {"type": "longrope", short_factor,
 * long_factor}, rope_theta and partial_rotary_factor at the top level)
 * give the same logits. */
static void test_tf4_config(void)
{
    for (int fx = 0; fx < 2; fx++) {
        char dir[] = "/tmp/wick-phi3-XXXXXX";
        json_t *cfg = fixture_config(fx);
        if (!cfg) continue;
        json_t *rp = json_incref(json_object_get(cfg, "rope_parameters"));
        json_object_del(cfg, "rope_parameters");
        json_object_set(cfg, "rope_theta", json_object_get(rp, "rope_theta"));
        json_object_set(cfg, "partial_rotary_factor", json_object_get(rp, "partial_rotary_factor"));
        json_t *rs = json_pack("{s:s, s:O, s:O}", "type", "longrope", "short_factor", json_object_get(rp, "short_factor"),
                               "long_factor", json_object_get(rp, "long_factor"));
        json_object_set_new(cfg, "rope_scaling", rs);
        bool ok = write_variant(fx, cfg, dir);
        CHECK(ok);
        json_decref(rp);
        json_decref(cfg);
        if (!ok) continue;
        struct wk_model *m = fixture_load(dir);
        char name[64];
        snprintf(name, sizeof name, "%s tf4", g_fixtures[fx]);
        fixture_ref_check_logits(&g_r[fx], m, name, REL_TOL);
        wk_model_destroy(m);
        remove_variant(dir);
    }
}

/* A copy of longrope's GGUF with the bytes after the first occurrence of
 * `at` replaced: the 4-byte value of key `at` (skipping its type) by value,
 * or, value NULL, `at` itself by `rename` (same length); loading it is a
 * WK_E_FORMAT error naming `want`. */
static void check_bad_gguf(const char *at, const void *value, const char *rename, const char *want)
{
    char src[1100], path[] = "/tmp/wick-phi3-XXXXXX";
    snprintf(src, sizeof src, "%s/phi3-f32.gguf", g_r[0].dir);
    FILE *f = fopen(src, "rb");
    CHECK(f != NULL);
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    CHECK(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    char *hit = buf ? memmem(buf, (size_t)n, at, strlen(at)) : NULL;
    CHECK(hit != NULL);
    int fd = mkstemp(path);
    if (hit && fd >= 0) {
        if (value) memcpy(hit + strlen(at) + 4, value, 4);
        else memcpy(hit, rename, strlen(at));
        CHECK(write(fd, buf, (size_t)n) == n);
        struct wk_model *m = NULL;
        struct wk_error err = {0};
        enum wk_status st = wk_model_load(path, &m, &err);
        CHECK_EQ_INT(st, WK_E_FORMAT);
        if (st != WK_E_FORMAT || !strstr(err.msg, want)) {
            CHECK(strstr(err.msg, want) != NULL);
            fprintf(stderr, "    %s: %s\n", at, err.msg);
        }
        wk_model_destroy(m);
    }
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    free(buf);
}

static void test_bad_gguf(void)
{
    const float attn = -1.0f;
    const uint32_t odd = 17, zero = 0;
    check_bad_gguf("phi3.rope.scaling.attn_factor", &attn, NULL, "rope.scaling.attn_factor");
    check_bad_gguf("phi3.rope.dimension_count", &odd, NULL, "rope.dimension_count");
    check_bad_gguf("phi3.rope.scaling.original_context_length", &zero, NULL, "original_context_length");
    check_bad_gguf("rope_factors_long.weight", NULL, "rope_factors_lonx.weight", "rope_factors_long.weight");
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
                                              TEST(test_short_context), TEST(test_chat),
                                              TEST(test_tf4_config),
                                              TEST(test_bad_config), TEST(test_bad_gguf)};
    int rc = check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    fixture_ref_close(&g_r[0]);
    fixture_ref_close(&g_r[1]);
    return rc;
}
