/*
 * test-qwen2.c - a tiny Qwen 2 (Qwen2ForCausalLM) against transformers,
 * loaded from its Hugging Face folder and from the GGUF llama.cpp's own
 * converter made of it (fixtures: tests/golden/qwen2/, made by
 * scripts/reference/make-qwen2-fixtures.py; README.md there):
 *   1. hyperparameters read as config.json / the GGUF keys give them;
 *   2. logits of every position of 3 prompts of 32 tokens (prefill, f32)
 *      and of each prompt's last token decoded alone (the one-token path,
 *      16-bit activations unless WICK_EXACT=1) within REL_TOL of
 *      transformers' float32 logits (row error: max_i |wick_i - ref_i| /
 *      max_i |ref_i|), for the folder, the GGUF, and the folder with
 *      use_sliding_window (sliding_window 8, the last two layers sliding,
 *      from layer_types and from max_window_layers alone);
 *   3. greedy 32-token continuations identical to transformers', with and
 *      without the window;
 *   4. the chat prompt (Qwen 2.5's template: its default system message,
 *      tool results, a late system turn) equals apply_chat_template's
 *      string, and tokenizes to its ids with message text kept literal;
 *   5. the default system message read out of ChatML templates written
 *      the ways real ones are (literals with real or escaped newlines,
 *      plain text, comments and apostrophes around), and none where the
 *      turn is joined around messages[0]'s content;
 *   6. a tiny Llama with attention_bias (Q, K, V and output biases, the
 *      loader's optional biases; llama-bias/) against transformers'
 *      logits, and mlp_bias refused;
 *   7. config.json errors: use_sliding_window of the wrong type, YaRN
 *      RoPE scaling, an unknown layer type, a billion layers.
 *
 * Usage: test-qwen2 [FILTER]; run from the repository root, or with
 * WICK_QWEN2_FIXTURES naming the fixture folder.
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
static const float *g_logits, *g_logits_swa, *g_logits_llama; /* [N_PROMPTS][N_POS][n_vocab] */
static int32_t g_vocab;

enum { HF, GGUF, HF_SWA, HF_SWA_MWL, N_KINDS };
static const char *const g_names[N_KINDS] = {"hf", "gguf", "hf, sliding window (layer_types)",
                                             "hf, sliding window (max_window_layers)"};
static char g_swa_dir[2][64]; /* the folders of HF_SWA and HF_SWA_MWL, made by main */

static struct wk_model *load(int which)
{
    char path[1200];
    if (which == HF) snprintf(path, sizeof path, "%s/hf", g_dir);
    else if (which == GGUF) snprintf(path, sizeof path, "%s/qwen2-tiny-f32.gguf", g_dir);
    else snprintf(path, sizeof path, "%s/hf", g_swa_dir[which - HF_SWA]);
    return fixture_load(path);
}

/* A copy, as dir/hf, of the fixture folder sub (hf, llama-bias) whose
 * config.json edit() changes, in dir [64] (a mkdtemp name the caller
 * removes). */
static void copy_folder_of(const char *sub, char *dir, void (*edit)(json_t *))
{
    snprintf(dir, 64, "/tmp/wick-qwen2-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    char cmd[4000], cfg[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/hf' && cp '%s'/%s/* '%s/hf/'", dir, g_dir, sub, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(cfg, sizeof cfg, "%s/hf/config.json", dir);
    json_t *c = json_load_file(cfg, 0, NULL);
    CHECK(c != NULL);
    edit(c);
    CHECK_EQ_INT(json_dump_file(c, cfg, JSON_INDENT(1)), 0);
    json_decref(c);
}

static void copy_folder(char *dir, void (*edit)(json_t *)) { copy_folder_of("hf", dir, edit); }

static void remove_folder(const char *dir)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

/* The window as make-qwen2-fixtures.py set it for logits_swa: saved by
 * transformers with layer_types, or given by max_window_layers alone. */
static void edit_swa(json_t *c)
{
    json_object_set_new(c, "use_sliding_window", json_true());
    json_object_set_new(c, "sliding_window", json_integer(8));
    json_object_set_new(c, "layer_types", json_pack("[sss]", "full_attention", "sliding_attention",
                                                     "sliding_attention"));
}

static void edit_swa_mwl(json_t *c)
{
    json_object_set_new(c, "use_sliding_window", json_true());
    json_object_set_new(c, "sliding_window", json_integer(8));
    json_object_set_new(c, "max_window_layers", json_integer(1));
    json_object_del(c, "layer_types");
}

static void test_hparams(void)
{
    for (int which = 0; which < N_KINDS; which++) {
        struct wk_model *m = load(which);
        if (!m) continue;
        const struct wk_hparams *hp = wk_model_hparams(m);
        CHECK_EQ_STR(wk_model_family(m), "qwen2");
        CHECK_EQ_STR(hp->arch_name, "qwen2");
        CHECK_EQ_INT(hp->n_vocab, 512);
        CHECK_EQ_INT(hp->n_embd, 64);
        CHECK_EQ_INT(hp->n_layer, 3);
        CHECK_EQ_INT(hp->n_head, 4);
        CHECK_EQ_INT(hp->n_head_kv, 2);
        CHECK_EQ_INT(hp->head_dim, 16);
        CHECK_EQ_INT(hp->n_rot, 16);
        CHECK_EQ_INT(hp->n_ff, 96);
        CHECK_EQ_INT(hp->n_ctx_train, 512);
        /* config.json says sliding_window null with use_sliding_window false */
        CHECK_EQ_INT(hp->sliding_window, which >= HF_SWA ? 8 : 0);
        CHECK_NEAR(hp->rope_base, 10000.0, 0, 1e-6);
        CHECK_NEAR(hp->rms_eps, 1e-6, 0, 1e-6);
        CHECK_NEAR(hp->attn_scale, 1.0 / sqrt(16.0), 0, 1e-6);
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
    for (int which = 0; which < N_KINDS; which++) {
        struct wk_model *m = load(which);
        if (!m) continue;
        const float *ref_all = which >= HF_SWA ? g_logits_swa : g_logits;
        double worst_prefill = 0, worst_decode = 0;
        for (size_t p = 0; p < N_PROMPTS; p++) {
            int32_t ids[N_POS];
            char what[120];
            prompt_ids(p, ids);
            snprintf(what, sizeof what, "%s prompt %zu", g_names[which], p);
            fixture_check_logits(m, ids, N_POS, ref_all + p * N_POS * (size_t)g_vocab, g_vocab, REL_TOL, what,
                                 &worst_prefill, &worst_decode);
        }
        printf("  %s: max relative logits error: prefill %.3g, one-token decode %.3g (tolerance %g)\n",
               g_names[which], worst_prefill, worst_decode, REL_TOL);
        wk_model_destroy(m);
    }
    /* the window changes the logits past position 8: the two references
     * differ, so matching one is not matching both */
    double d = fixture_row_error(g_logits + (N_POS - 1) * (size_t)g_vocab,
                                 g_logits_swa + (N_POS - 1) * (size_t)g_vocab, g_vocab, NULL, 0);
    CHECK(d > 100 * REL_TOL);
}

static void test_greedy(void)
{
    for (int which = 0; which < N_KINDS; which++) {
        struct wk_model *m = load(which);
        if (!m) continue;
        for (size_t p = 0; p < N_PROMPTS; p++) {
            int32_t ids[N_POS];
            char what[120];
            prompt_ids(p, ids);
            snprintf(what, sizeof what, "%s prompt %zu", g_names[which], p);
            fixture_check_greedy(m, ids, N_POS,
                                 json_array_get(json_object_get(g_ref, which >= HF_SWA ? "greedy_swa" : "greedy"), p),
                                 g_vocab, what);
        }
        wk_model_destroy(m);
    }
}

static void test_chat_template(void)
{
    for (int which = HF; which <= GGUF; which++) {
        struct wk_model *m = load(which);
        if (!m) continue;
        struct wk_tokenizer *tok = NULL;
        struct wk_error err;
        CHECK_EQ_INT(wk_tokenizer_for_model(m, &tok, &err), WK_OK);
        json_t *chats = json_object_get(g_ref, "chats"), *c;
        size_t k;
        CHECK(json_array_size(chats) >= 5);
        json_array_foreach(chats, k, c) fixture_check_chat(m, tok, c, false);
        wk_tokenizer_destroy(tok);
        wk_model_destroy(m);
    }
}

static void edit_nothing(json_t *c) { (void)c; }

/* A ChatML template's default system message, for templates written in
 * ways real ones are: the model's template renders the prompt (chat.c,
 * the Jinja engine), so the first turn for one user message "hi" is the
 * default system turn the template writes ("" when it writes none), the
 * user's text the one literal segment. A template that does not parse
 * falls back to the built-in ChatML. Each template ends with the same
 * ChatML loop. */
static void test_default_system(void)
{
    static const char loop[] = "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + "
                               "'<|im_end|>\n' }}{% endfor %}{{ '<|im_start|>assistant\n' }}";
    static const struct {
        const char *head, *want;
    } cases[] = {
        /* an apostrophe in a comment, a literal with a real newline (SmolLM2's form) */
        {"{# Don't change this #}{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nDEF<|im_end|>\n' }}"
         "{% endif %}",
         "DEF"},
        /* the turn as plain template text, an apostrophe in text before it */
        {"Don't {% if messages[0]['role'] != 'system' %}<|im_start|>system\nRAW TEXT<|im_end|>\n{% endif %}",
         "RAW TEXT"},
        /* escaped newline and quote in a double-quoted literal (Qwen 2.5's form) */
        {"{%- if messages[0].role != 'system' %}{{- \"<|im_start|>system\\nSay \\\"hi\\\".<|im_end|>\\n\" }}{%- endif %}",
         "Say \"hi\"."},
        /* a system turn joined around messages[0]'s content is no default */
        {"{% if messages[0]['role'] == 'system' %}{{ '<|im_start|>system\\n' + messages[0]['content'] + "
         "'<|im_end|>\\n' }}{% endif %}",
         ""},
        /* a system turn the template prints whatever the messages: printed
         * (the engine renders what jinja2 renders; the old heuristic skipped it) */
        {"{{ '<|im_start|>system\\nEARLY<|im_end|>\\n' }}{% if messages[0]['role'] %}{% endif %}", "EARLY"},
        /* an unterminated literal: no default, no crash */
        {"{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nnever closed", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[64], path[200];
        copy_folder(dir, edit_nothing);
        snprintf(path, sizeof path, "%s/hf/chat_template.jinja", dir);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) {
            fputs(cases[i].head, f);
            if (cases[i].want) fputs(loop, f);
            fclose(f);
        }
        snprintf(path, sizeof path, "%s/hf", dir);
        struct wk_model *m = fixture_load(path);
        struct wk_tokenizer *tok = NULL;
        struct wk_error err;
        if (m) CHECK_EQ_INT(wk_tokenizer_for_model(m, &tok, &err), WK_OK);
        struct wk_chat_message msg[1] = {{"user", "hi"}};
        struct wk_prompt prompt = {0};
        if (m && tok && cases[i].want) {
            /* the model's template renders the prompt (the Jinja engine): its
             * default system turn, when it has one, comes first, and the
             * user's text is the one literal segment */
            CHECK_EQ_INT(wk_chat_render(m, tok, msg, 1, true, &prompt, &err), WK_OK);
            char all[512] = "";
            int n_literal = 0;
            for (int32_t k = 0; k < prompt.n; k++) {
                strncat(all, prompt.segs[k].text, sizeof all - strlen(all) - 1);
                if (!prompt.segs[k].scaffold) {
                    n_literal++;
                    CHECK_EQ_STR(prompt.segs[k].text, "hi");
                }
            }
            CHECK_EQ_INT(n_literal, 1);
            char want[256];
            snprintf(want, sizeof want, "%s%s%s<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
                     cases[i].want[0] ? "<|im_start|>system\n" : "", cases[i].want,
                     cases[i].want[0] ? "<|im_end|>\n" : "");
            const char *got = strstr(all, "<|im_start|>");
            if (!got || strcmp(got, want) != 0) fprintf(stderr, "  template %zu: \"%s\"\n", i, all);
            CHECK(got && strcmp(got, want) == 0);
        } else if (m && tok) { /* a template that does not parse: the built-in ChatML, no default */
            CHECK_EQ_INT(wk_chat_render(m, tok, msg, 1, true, &prompt, &err), WK_OK);
            CHECK(prompt.n > 0 && strcmp(prompt.segs[0].text, "<|im_start|>") == 0);
        }
        wk_prompt_deinit(&prompt);
        if (m && tok && i == 0) {
            /* a user typing the control token's text gets characters: the
             * prompt holds exactly the template's two <|im_end|> tokens
             * (system and user turns) */
            struct wk_chat_message typed[1] = {{"user", "x<|im_end|>y"}};
            struct wk_tokens ids = {0};
            CHECK_EQ_INT(wk_chat_render(m, tok, typed, 1, true, &prompt, &err), WK_OK);
            CHECK_EQ_INT(wk_prompt_tokenize(tok, &prompt, &ids), WK_OK);
            const int32_t im_end = wk_tokenizer_find(tok, "<|im_end|>", 10);
            int n_im_end = 0;
            for (int64_t k = 0; k < ids.n; k++) n_im_end += ids.ids[k] == im_end;
            CHECK(im_end >= 0);
            CHECK_EQ_INT(n_im_end, 2);
            wk_tokens_deinit(&ids);
            wk_prompt_deinit(&prompt);
        }
        wk_tokenizer_destroy(tok);
        wk_model_destroy(m);
        remove_folder(dir);
    }
}

static void edit_mlp_bias(json_t *c) { json_object_set_new(c, "mlp_bias", json_true()); }

/* A Llama with attention_bias (Q, K, V and output biases; llama-bias/):
 * its logits of every prompt position within REL_TOL of transformers'. */
static void test_llama_attention_bias(void)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/llama-bias", g_dir);
    struct wk_model *m = fixture_load(path);
    if (!m) return;
    CHECK_EQ_STR(wk_model_family(m), "llama");
    double worst = 0, worst_decode = 0;
    for (size_t p = 0; p < N_PROMPTS; p++) {
        int32_t ids[N_POS];
        prompt_ids(p, ids);
        fixture_check_logits(m, ids, N_POS, g_logits_llama + p * N_POS * (size_t)g_vocab, g_vocab, REL_TOL,
                             "llama with attention_bias", &worst, &worst_decode);
    }
    printf("  llama with attention_bias: max relative logits error: prefill %.3g, one-token decode %.3g "
           "(tolerance %g)\n", worst, worst_decode, REL_TOL);
    wk_model_destroy(m);
    /* MLP biases, which wick does not apply, are refused by name */
    char dir[64];
    copy_folder_of("llama-bias", dir, edit_mlp_bias);
    snprintf(path, sizeof path, "%s/hf", dir);
    struct wk_error err;
    m = NULL;
    CHECK_EQ_INT(wk_model_load(path, &m, &err), WK_E_UNSUPPORTED);
    CHECK_CONTAINS(err.msg, "mlp_bias");
    remove_folder(dir);
}

static void edit_bad_use(json_t *c) { json_object_set_new(c, "use_sliding_window", json_string("yes")); }

static void edit_yarn(json_t *c)
{
    json_object_set_new(c, "rope_scaling", json_pack("{s:s, s:f, s:i}", "rope_type", "yarn", "factor", 4.0,
                                                     "original_max_position_embeddings", 32768));
}

static void edit_bad_types(json_t *c)
{
    edit_swa(c);
    json_object_set_new(c, "layer_types", json_pack("[sss]", "full_attention", "chunked_attention",
                                                     "sliding_attention"));
}

/* a block count far past any model's, with the window on: refused by
 * name at once (not a billion-entry layer list first) */
static void edit_huge_layers(json_t *c)
{
    edit_swa_mwl(c);
    json_object_set_new(c, "num_hidden_layers", json_integer(1000000000));
}

static void test_errors(void)
{
    static const struct {
        void (*edit)(json_t *);
        enum wk_status st;
        const char *says;
    } cases[] = {{edit_bad_use, WK_E_FORMAT, "use_sliding_window"},
                 {edit_yarn, WK_E_UNSUPPORTED, "yarn"},
                 {edit_bad_types, WK_E_UNSUPPORTED, "layer_types[1]"},
                 {edit_huge_layers, WK_E_FORMAT, "block_count"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[64], path[200];
        copy_folder(dir, cases[i].edit);
        snprintf(path, sizeof path, "%s/hf", dir);
        struct wk_model *m = NULL;
        struct wk_error err;
        CHECK_EQ_INT(wk_model_load(path, &m, &err), cases[i].st);
        CHECK_CONTAINS(err.msg, cases[i].says);
        remove_folder(dir);
    }
}

int main(int argc, char **argv)
{
    const char *d = getenv("WICK_QWEN2_FIXTURES");
    snprintf(g_dir, sizeof g_dir, "%s", d && *d ? d : "tests/golden/qwen2");
    char path[1200];
    snprintf(path, sizeof path, "%s/reference.json", g_dir);
    json_error_t je;
    g_ref = json_load_file(path, 0, &je);
    if (!g_ref) {
        fprintf(stderr, "test-qwen2: %s: %s\n", path, je.text);
        return 1;
    }
    snprintf(path, sizeof path, "%s/logits.safetensors", g_dir);
    struct wk_safetensors *st = NULL;
    struct wk_error err;
    if (wk_safetensors_open(path, &st, &err)) {
        fprintf(stderr, "test-qwen2: %s\n", err.msg);
        return 1;
    }
    g_vocab = (int32_t)json_integer_value(json_object_get(g_ref, "n_vocab"));
    const struct wk_st_tensor *t[3] = {wk_safetensors_find(st, "logits"), wk_safetensors_find(st, "logits_swa"),
                                       wk_safetensors_find(st, "logits_llama_bias")};
    for (int i = 0; i < 3; i++)
        if (!t[i] || t[i]->dtype != WK_ST_F32 || t[i]->n_dims != 3 || t[i]->shape[0] != N_PROMPTS ||
            t[i]->shape[1] != N_POS || t[i]->shape[2] != g_vocab) {
            fprintf(stderr, "test-qwen2: %s: logits, logits_swa and logits_llama_bias must be F32 [%d, %d, %d]\n", path, N_PROMPTS,
                    N_POS, g_vocab);
            return 1;
        }
    g_logits = t[0]->data;
    g_logits_swa = t[1]->data;
    g_logits_llama = t[2]->data;
    copy_folder(g_swa_dir[0], edit_swa);
    copy_folder(g_swa_dir[1], edit_swa_mwl);
    static const struct check_test tests[] = {TEST(test_hparams), TEST(test_logits), TEST(test_greedy),
                                              TEST(test_chat_template), TEST(test_default_system),
                                              TEST(test_llama_attention_bias), TEST(test_errors)};
    int rc = check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    remove_folder(g_swa_dir[0]);
    remove_folder(g_swa_dir[1]);
    wk_safetensors_close(st);
    json_decref(g_ref);
    return rc;
}
