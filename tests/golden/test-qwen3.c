/*
 * test-qwen3.c - a tiny Qwen 3 (Qwen3ForCausalLM) against transformers,
 * loaded from its Hugging Face folder and from the GGUF of the same
 * weights (fixtures: tests/golden/qwen3/, made by
 * scripts/reference/make-qwen3-fixtures.py; README.md there):
 *   1. hyperparameters read as config.json / the GGUF keys give them;
 *   2. logits of every position of 3 prompts of 32 tokens (prefill, f32)
 *      and of each prompt's last token decoded alone (the one-token path,
 *      16-bit activations unless WICK_EXACT=1) within REL_TOL of
 *      transformers' float32 logits, where the error of a row is
 *      max_i |wick_i - ref_i| / max_i |ref_i| (the worst logit's error
 *      relative to the row's scale; printed);
 *   3. greedy 32-token continuations identical to transformers';
 *   4. the chat prompt (Qwen 3's template, enable_thinking=False) equals
 *      apply_chat_template's string and tokenizes to its ids, for 5
 *      conversations (system, tool results, reasoning in history);
 *   5. a generation that writes <think>...</think> (a prompt found for
 *      it) keeps the block out of the answer and its tokens' logprobs
 *      out of the stream, when the chat format asks (hide_thinking).
 *
 * Usage: test-qwen3 [FILTER]; run from the repository root, or with
 * WICK_QWEN3_FIXTURES naming the fixture folder.
 */
#include "../unit/check.h"
#include "fixture.h"

#include "../../src/io/wk_safetensors.h"
#include "../../src/runtime/wk_runtime.h"

#include <jansson.h>

#define REL_TOL 1e-3
#define N_PROMPTS 3
#define N_POS 32

static char g_dir[1024];
static json_t *g_ref;
static const float *g_logits; /* [N_PROMPTS][N_POS][n_vocab] */
static int32_t g_vocab;

static const char *model_path(int which, char *buf, size_t cap)
{
    snprintf(buf, cap, which == 0 ? "%s/hf" : "%s/qwen3-tiny-f32.gguf", g_dir);
    return buf;
}

static struct wk_model *load(int which)
{
    char path[1200];
    return fixture_load(model_path(which, path, sizeof path));
}


static void test_hparams(void)
{
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load(which);
        if (!m) continue;
        const struct wk_hparams *hp = wk_model_hparams(m);
        CHECK_EQ_STR(wk_model_family(m), "qwen3");
        CHECK_EQ_STR(hp->arch_name, "qwen3");
        CHECK_EQ_INT(hp->n_vocab, 512);
        CHECK_EQ_INT(hp->n_embd, 64);
        CHECK_EQ_INT(hp->n_layer, 3);
        CHECK_EQ_INT(hp->n_head, 4);
        CHECK_EQ_INT(hp->n_head_kv, 2);
        CHECK_EQ_INT(hp->head_dim, 32); /* not n_embd / n_head = 16 */
        CHECK_EQ_INT(hp->n_rot, 32);
        CHECK_EQ_INT(hp->n_ff, 96);
        CHECK_EQ_INT(hp->n_ctx_train, 512);
        CHECK_NEAR(hp->rope_base, 10000.0, 0, 1e-6);
        CHECK_NEAR(hp->rms_eps, 1e-6, 0, 1e-6);
        CHECK_NEAR(hp->attn_scale, 1.0 / sqrt(32.0), 0, 1e-6);
        wk_model_destroy(m);
    }
}

static void prompt_ids(size_t p, int32_t *ids)
{
    json_t *arr = json_array_get(json_object_get(g_ref, "prompts"), p);
    CHECK_EQ_INT(json_array_size(arr), N_POS);
    for (size_t i = 0; i < N_POS; i++) ids[i] = fixture_id(arr, i);
}

static void test_logits(void)
{
    static const char *const names[2] = {"hf", "gguf"};
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load(which);
        if (!m) continue;
        double worst_prefill = 0, worst_decode = 0;
        for (size_t p = 0; p < N_PROMPTS; p++) {
            int32_t ids[N_POS];
            char what[64];
            prompt_ids(p, ids);
            snprintf(what, sizeof what, "%s prompt %zu", names[which], p);
            fixture_check_logits(m, ids, N_POS, g_logits + p * N_POS * (size_t)g_vocab, g_vocab, REL_TOL, what,
                                 &worst_prefill, &worst_decode);
        }
        printf("  %-4s max relative logits error: prefill %.3g, one-token decode %.3g (tolerance %g)\n",
               names[which], worst_prefill, worst_decode, REL_TOL);
        wk_model_destroy(m);
    }
}

static void test_greedy(void)
{
    static const char *const names[2] = {"hf", "gguf"};
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load(which);
        if (!m) continue;
        for (size_t p = 0; p < N_PROMPTS; p++) {
            int32_t ids[N_POS];
            char what[64];
            prompt_ids(p, ids);
            snprintf(what, sizeof what, "%s prompt %zu", names[which], p);
            fixture_check_greedy(m, ids, N_POS, json_array_get(json_object_get(g_ref, "greedy"), p), g_vocab, what);
        }
        wk_model_destroy(m);
    }
}

static void test_chat_template(void)
{
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load(which);
        if (!m) continue;
        struct wk_tokenizer *tok = NULL;
        struct wk_error err;
        CHECK_EQ_INT(wk_tokenizer_for_model(m, &tok, &err), WK_OK);
        json_t *chats = json_object_get(g_ref, "chats"), *c;
        size_t k;
        CHECK(json_array_size(chats) >= 5);
        json_array_foreach(chats, k, c) fixture_check_chat(m, tok, c, true);
        /* a role the template drops is an error, not silently lost */
        struct wk_chat_message bad[1] = {{"narrator", "x"}};
        struct wk_prompt prompt = {0};
        CHECK_EQ_INT(wk_chat_render(m, tok, bad, 1, true, &prompt, &err), WK_E_INVALID);
        CHECK_CONTAINS(err.msg, "narrator");
        wk_prompt_deinit(&prompt);
        wk_tokenizer_destroy(tok);
        wk_model_destroy(m);
    }
}

struct lp_list {
    int32_t ids[64];
    int n;
};

static void on_lp(void *user, const struct wk_token_logprobs *lp)
{
    struct lp_list *l = user;
    if (l->n < 64) l->ids[l->n++] = lp->id;
}

/* Greedy 32 tokens from the think prompt: the answer and the ids of the
 * logprobs that reached the stream. */
static char *generate(struct wk_model *m, struct wk_tokenizer *tok, bool hide, struct lp_list *lps)
{
    struct wk_session *s = NULL;
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = 128;
    cp.n_threads = 2;
    struct wk_error err;
    CHECK_EQ_INT(wk_session_create(m, tok, &cp, &s, &err), WK_OK);
    json_t *pj = json_object_get(g_ref, "think_prompt");
    struct wk_tokens prompt = {0};
    for (size_t i = 0; i < json_array_size(pj); i++) wk_tokens_push(&prompt, fixture_id(pj, i));
    struct wk_generate_params gp = wk_generate_params_default();
    gp.sampler.temperature = 0;
    gp.num_predict = 32;
    gp.hide_thinking = hide;
    gp.on_logprobs = on_lp;
    gp.user = lps;
    char *text = NULL;
    size_t len = 0;
    gp.collect = &text;
    gp.collect_len = &len;
    struct wk_generate_stats st;
    CHECK_EQ_INT(wk_session_generate(s, &prompt, &gp, &st, &err), WK_OK);
    CHECK_EQ_INT(st.eval_count, 32);
    wk_tokens_deinit(&prompt);
    wk_session_destroy(s);
    return text;
}

static void test_think_hidden(void)
{
    struct wk_model *m = load(1);
    if (!m) return;
    struct wk_tokenizer *tok = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_tokenizer_for_model(m, &tok, &err), WK_OK);
    struct lp_list all = {0}, shown = {0};
    char *plain = generate(m, tok, false, &all), *hidden = generate(m, tok, true, &shown);
    /* the reference continuation, token for token, with its block */
    json_t *want = json_object_get(g_ref, "think_greedy");
    CHECK_EQ_INT(all.n, json_array_size(want));
    for (int i = 0; i < all.n; i++) CHECK_EQ_INT(all.ids[i], fixture_id(want, (size_t)i));
    const char *open = plain ? strstr(plain, "<think>") : NULL;
    const char *close = open ? strstr(open, "</think>") : NULL;
    CHECK(open && close);
    if (open && close && hidden) {
        /* the answer is the plain text less the block and the whitespace after it */
        const char *after = close + 8;
        while (*after == '\n' || *after == ' ' || *after == '\r' || *after == '\t') after++;
        char expect[4096];
        snprintf(expect, sizeof expect, "%.*s%s", (int)(open - plain), plain, after);
        CHECK_EQ_STR(hidden, expect);
        CHECK(!strstr(hidden, "think>"));
    }
    /* the block's tokens (steps 4 .. 20 of the reference) lose their logprobs */
    int k = 0;
    for (int i = 0; i < all.n; i++) {
        if (i >= 4 && i <= 20) continue;
        CHECK(k < shown.n && shown.ids[k] == all.ids[i]);
        k++;
    }
    CHECK_EQ_INT(shown.n, k);
    wk_free(plain);
    wk_free(hidden);
    wk_tokenizer_destroy(tok);
    wk_model_destroy(m);
}

static void test_errors(void)
{
    /* config.json fields that do not fit the tensors: the tensor is named */
    char dir[] = "/tmp/wick-qwen3-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char src[1200], dst[1200], cfg[1300], cmd[4000];
    model_path(0, src, sizeof src);
    snprintf(dst, sizeof dst, "%s/hf", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s'/* '%s'/", dst, src, dst);
    CHECK_EQ_INT(system(cmd), 0);
    /* head_dim 16 (the n_embd / n_head default) does not fit q_norm [32] */
    snprintf(cfg, sizeof cfg, "%s/config.json", dst);
    json_t *c = json_load_file(cfg, 0, NULL);
    CHECK(c != NULL);
    json_object_set_new(c, "head_dim", json_integer(16));
    json_dump_file(c, cfg, JSON_INDENT(1));
    struct wk_model *m = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_model_load(dst, &m, &err), WK_E_FORMAT);
    CHECK_CONTAINS(err.msg, "blk.0.attn_q.weight");
    /* restored, it loads */
    json_object_set_new(c, "head_dim", json_integer(32));
    json_dump_file(c, cfg, JSON_INDENT(1));
    json_decref(c);
    CHECK_EQ_INT(wk_model_load(dst, &m, &err), WK_OK);
    wk_model_destroy(m);
    m = NULL;
    /* an unsupported RoPE scaling is refused by name */
    c = json_load_file(cfg, 0, NULL);
    json_object_set_new(c, "rope_scaling", json_pack("{s:s, s:f, s:i}", "rope_type", "yarn", "factor", 4.0,
                                                     "original_max_position_embeddings", 32768));
    json_dump_file(c, cfg, JSON_INDENT(1));
    json_decref(c);
    CHECK_EQ_INT(wk_model_load(dst, &m, &err), WK_E_UNSUPPORTED);
    CHECK_CONTAINS(err.msg, "yarn");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

int main(int argc, char **argv)
{
    const char *d = getenv("WICK_QWEN3_FIXTURES");
    snprintf(g_dir, sizeof g_dir, "%s", d && *d ? d : "tests/golden/qwen3");
    char path[1200];
    snprintf(path, sizeof path, "%s/reference.json", g_dir);
    json_error_t je;
    g_ref = json_load_file(path, 0, &je);
    if (!g_ref) {
        fprintf(stderr, "test-qwen3: %s: %s\n", path, je.text);
        return 1;
    }
    snprintf(path, sizeof path, "%s/logits.safetensors", g_dir);
    struct wk_safetensors *st = NULL;
    struct wk_error err;
    if (wk_safetensors_open(path, &st, &err)) {
        fprintf(stderr, "test-qwen3: %s\n", err.msg);
        return 1;
    }
    const struct wk_st_tensor *t = wk_safetensors_find(st, "logits");
    g_vocab = (int32_t)json_integer_value(json_object_get(g_ref, "n_vocab"));
    if (!t || t->dtype != WK_ST_F32 || t->n_dims != 3 || t->shape[0] != N_PROMPTS || t->shape[1] != N_POS ||
        t->shape[2] != g_vocab) {
        fprintf(stderr, "test-qwen3: %s: logits is not F32 [%d, %d, %d]\n", path, N_PROMPTS, N_POS, g_vocab);
        return 1;
    }
    g_logits = t->data;
    static const struct check_test tests[] = {TEST(test_hparams),       TEST(test_logits),
                                              TEST(test_greedy),        TEST(test_chat_template),
                                              TEST(test_think_hidden),  TEST(test_errors)};
    int rc = check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    wk_safetensors_close(st);
    json_decref(g_ref);
    return rc;
}
