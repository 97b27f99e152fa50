/*
 * test-llamalike.c - the Llama-shaped families people run, each from a
 * Hugging Face folder and from llama.cpp's own GGUF (convert_hf_to_gguf.py,
 * --outtype f32), against transformers 5.24 float32 (fixtures:
 * tests/golden/llamalike/<case>/, made by
 * scripts/reference/make-llamalike-fixtures.py, which says how each tiny
 * random model was drawn):
 *   mistral    sliding_window 8 from the folder (the window moves the
 *              logits by far more than the tolerance: reference.json
 *              checks). llama.cpp's converter drops sliding_window and its
 *              llama graph has none, so the GGUF is checked against
 *              mistral/no-window/, the same weights with the window null;
 *              the folder with its window removed matches that too.
 *   nemo       Mistral-Nemo's head_dim 32 != hidden 64 / 4 heads.
 *   mixtral    4 experts, top 2, softmax renormalised over the chosen.
 *   falcon3    Falcon 3's shape (LlamaForCausalLM, head_dim 32, 2 heads).
 *   exaone     EXAONE 3.5 names and keys (GGUF arch "exaone"), a Llama's
 *              logits as the reference; tied embeddings, Llama 3 RoPE
 *              scaling as EXAONE 3.5 ships it (rope_freqs.weight in the
 *              GGUF).
 *   internlm3  InternLM 3 (model_type internlm3; GGUF arch "llama").
 *   r1-qwen, r1-llama  DeepSeek-R1 distills (Qwen 2 and Llama) with their
 *              chat templates: wick renders each reference conversation as
 *              jinja2 did, to the same ids, and sees a model that thinks:
 *              with think on the prompt opens "<think>" and the runtime's
 *              think filter keeps only what follows "</think>".
 *   tekken     no model: Mistral-Nemo's tokenizer kind (GGUF pre "tekken")
 *              on the tricky strings, from the converter's GGUF and from
 *              tokenizer.json, against tokenizers' ids.
 * For each model: logits of every position of 3 prompts of 32 tokens within
 * REL_TOL (error of a row: max_i |wick_i - ref_i| / max_i |ref_i|, printed)
 * and the greedy 32-token continuations identical; bad config values are
 * errors naming the key.
 *
 * Usage: test-llamalike [FILTER]; run from the repository root, or with
 * WICK_LLAMALIKE_FIXTURES naming the fixture folder.
 */
#include "../unit/check.h"
#include "fixture.h"

#include "../../src/io/wk_io.h"
#include "../../src/model/model_internal.h"
#include "../../src/tokenizer/wk_tokenizer.h"

#include <jansson.h>
#include <unistd.h>

#define REL_TOL 1e-3
#define N_PROMPTS 3
#define N_POS 32
#define N_GREEDY 32

static const char *g_root = "tests/golden/llamalike";

static const struct llcase {
    const char *name, *gguf, *family, *gguf_ref; /* gguf_ref: the GGUF's reference folder, if not the case's */
    int32_t head_dim, n_expert;
} g_cases[] = {
    {"mistral", "no-window/mistral-f32.gguf", "llama", "no-window", 16, 0},
    {"nemo", "nemo-f32.gguf", "llama", NULL, 32, 0},
    {"mixtral", "mixtral-f32.gguf", "llama", NULL, 16, 4},
    {"falcon3", "falcon3-f32.gguf", "llama", NULL, 32, 0},
    {"exaone", "exaone-f32.gguf", "exaone", NULL, 16, 0},
    {"internlm3", "internlm3-f32.gguf", "llama", NULL, 32, 0},
    {"r1-qwen", "r1-qwen-f32.gguf", "qwen2", NULL, 16, 0},
    {"r1-llama", "r1-llama-f32.gguf", "llama", NULL, 16, 0},
};

/* The reference of folder sub of case c (sub NULL: the case's own). */
static int open_ref(struct fixture_ref *r, const struct llcase *c, const char *sub)
{
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/%s%s%s", g_root, c->name, sub ? "/" : "", sub ? sub : "");
    snprintf(path, sizeof path, "%s/reference.json", dir);
    json_t *j = json_load_file(path, 0, NULL);
    int vocab = (int)json_integer_value(json_object_get(j, "vocab"));
    json_decref(j);
    CHECK(vocab > 0);
    return fixture_ref_open(r, "test-llamalike", "WICK_LLAMALIKE_FIXTURES_UNUSED", dir, N_PROMPTS, N_POS, vocab);
}

static struct wk_model *load_case(const struct llcase *c, bool gguf)
{
    char path[800];
    if (gguf) snprintf(path, sizeof path, "%s/%s/%s", g_root, c->name, c->gguf);
    else snprintf(path, sizeof path, "%s/%s/hf", g_root, c->name);
    struct wk_model *m = fixture_load(path);
    if (m) {
        CHECK_EQ_STR(wk_model_family(m), c->family);
        CHECK_EQ_INT(m->hp.head_dim, c->head_dim);
        CHECK_EQ_INT(m->hp.n_expert, c->n_expert);
    }
    return m;
}

/* A copy of case c's hf/ in dir [64] (a mkdtemp name the caller removes)
 * whose config.json edit() changes. */
static void copy_folder(const struct llcase *c, char *dir, void (*edit)(json_t *))
{
    snprintf(dir, 64, "/tmp/wick-llamalike-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    char cmd[1000], cfg[200];
    snprintf(cmd, sizeof cmd, "cp '%s/%s'/hf/* '%s/'", g_root, c->name, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    json_t *j = json_load_file(cfg, 0, NULL);
    CHECK(j != NULL);
    edit(j);
    CHECK_EQ_INT(json_dump_file(j, cfg, JSON_INDENT(1)), 0);
    json_decref(j);
}

static void remove_folder(const char *dir)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

static void run_case(const struct llcase *c, bool logits)
{
    struct fixture_ref r, rg;
    if (open_ref(&r, c, NULL)) {
        CHECK(0);
        return;
    }
    bool other = c->gguf_ref != NULL;
    if (other && open_ref(&rg, c, c->gguf_ref)) {
        CHECK(0);
        fixture_ref_close(&r);
        return;
    }
    printf("  %s\n", c->name);
    for (int gguf = 0; gguf < 2; gguf++) {
        struct wk_model *m = load_case(c, gguf);
        const struct fixture_ref *want = gguf && other ? &rg : &r;
        if (logits) fixture_ref_check_logits(want, m, gguf ? "gguf" : "hf", REL_TOL);
        else fixture_ref_check_greedy(want, m, gguf ? "gguf" : "hf", N_GREEDY);
        if (m && !gguf && strcmp(c->name, "mistral") == 0) CHECK_EQ_INT(m->hp.sliding_window, 8);
        if (m && gguf && strcmp(c->name, "mistral") == 0) CHECK_EQ_INT(m->hp.sliding_window, 0);
        wk_model_destroy(m);
    }
    if (other) fixture_ref_close(&rg);
    fixture_ref_close(&r);
}

static void test_logits(void)
{
    for (size_t i = 0; i < WK_ARRAY_LEN(g_cases); i++) run_case(&g_cases[i], true);
}

static void test_greedy(void)
{
    for (size_t i = 0; i < WK_ARRAY_LEN(g_cases); i++) run_case(&g_cases[i], false);
}

/* The distinctive features move the reference far beyond the tolerance. */
static void test_features_matter(void)
{
    static const struct {
        const char *c, *key;
    } checks[] = {{"mistral", "max_rel_logit_change_without_window"},
                  {"mixtral", "max_rel_logit_change_top1_instead_of_top2"},
                  {"exaone", "max_rel_logit_change_without_llama3_rope_scaling"}};
    for (size_t i = 0; i < WK_ARRAY_LEN(checks); i++) {
        char path[300];
        snprintf(path, sizeof path, "%s/%s/reference.json", g_root, checks[i].c);
        json_t *j = json_load_file(path, 0, NULL);
        double v = json_number_value(json_object_get(json_object_get(j, "checks"), checks[i].key));
        printf("  %s %s: %.3g\n", checks[i].c, checks[i].key, v);
        CHECK(v > 100 * REL_TOL);
        json_decref(j);
    }
}

static void edit_no_window(json_t *c) { json_object_set_new(c, "sliding_window", json_null()); }

/* Mistral's folder without its window gives the no-window reference. */
static void test_mistral_no_window(void)
{
    struct fixture_ref r;
    if (open_ref(&r, &g_cases[0], "no-window")) {
        CHECK(0);
        return;
    }
    char tmp[64];
    copy_folder(&g_cases[0], tmp, edit_no_window);
    struct wk_model *m = fixture_load(tmp);
    if (m) CHECK_EQ_INT(m->hp.sliding_window, 0);
    fixture_ref_check_logits(&r, m, "hf, window null", REL_TOL);
    wk_model_destroy(m);
    remove_folder(tmp);
    fixture_ref_close(&r);
}

struct kept {
    char text[256];
    size_t n;
};

static bool keep_run(void *user, const char *text, size_t len, bool keep)
{
    struct kept *k = user;
    if (keep && k->n + len < sizeof k->text) memcpy(k->text + k->n, text, len), k->n += len;
    return true;
}

/* With think on, the R1 prompt ends inside "<think>" (the runtime starts
 * the generation as thinking), and what the model writes up to
 * "</think>" is thinking, the rest the answer. */
static void check_think(struct wk_model *m, const struct wk_tokenizer *tok)
{
    json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", "Hello there");
    struct wk_chat_request cr = {.messages = msgs, .think = 1, .add_generation_prompt = true};
    struct wk_prompt prompt = {0};
    struct wk_error err;
    CHECK_EQ_INT(wk_chat_render_request(m, tok, &cr, &prompt, &err), WK_OK);
    CHECK(wk_prompt_opens_think(&prompt));
    struct wk_think_filter f;
    wk_think_filter_init(&f);
    f.inside = wk_prompt_opens_think(&prompt); /* as the session starts it (think_open) */
    struct kept k = {.n = 0};
    static const char *const pieces[] = {"the user greets", " me.\n</th", "ink>\n\n", "Hi!"};
    for (size_t i = 0; i < 4; i++) CHECK(wk_think_filter_push(&f, pieces[i], strlen(pieces[i]), keep_run, &k));
    CHECK(wk_think_filter_flush(&f, keep_run, &k));
    k.text[k.n] = 0;
    CHECK_EQ_STR(k.text, "Hi!");
    wk_prompt_deinit(&prompt);
    json_decref(msgs);
}

/* R1 distills: the reference conversations rendered and tokenized as
 * transformers did (jinja2), and the model counted as a thinking one. */
static void test_r1_chat(void)
{
    for (size_t i = 6; i < 8; i++) {
        const struct llcase *c = &g_cases[i];
        char path[300];
        snprintf(path, sizeof path, "%s/%s/reference.json", g_root, c->name);
        json_t *ref = json_load_file(path, 0, NULL);
        json_t *chats = json_object_get(ref, "chats"), *chat;
        CHECK(json_array_size(chats) == 3);
        for (int gguf = 0; gguf < 2; gguf++) {
            struct wk_model *m = load_case(c, gguf);
            if (!m) continue;
            CHECK(wk_model_can_think(m));
            struct wk_tokenizer *tok = NULL;
            struct wk_error err;
            enum wk_status st = wk_tokenizer_for_model(m, &tok, &err);
            if (st) fprintf(stderr, "  %s %s: %s\n", c->name, gguf ? "gguf" : "hf", err.msg);
            CHECK_EQ_INT(st, WK_OK);
            size_t k;
            if (tok) json_array_foreach(chats, k, chat) fixture_check_chat(m, tok, chat, false);
            if (tok) check_think(m, tok);
            wk_tokenizer_destroy(tok);
            wk_model_destroy(m);
        }
        json_decref(ref);
    }
}

/* Mistral-Nemo's tokenizer kind (GGUF pre "tekken", made by the
 * converter from a tiny byte-level BPE behind Nemo's split regex): the
 * tricky strings as user text give tokenizers' ids, from the GGUF and
 * from tokenizer.json. */
static void test_tekken(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/tekken/reference.json", g_root);
    json_t *ref = json_load_file(path, JSON_ALLOW_NUL, NULL); /* strings with U+0000 */
    json_t *strings = json_object_get(ref, "strings"), *e;
    CHECK(json_array_size(strings) > 20);
    struct wk_tokenizer *toks[2] = {NULL, NULL};
    struct wk_gguf *g = NULL;
    struct wk_error err;
    snprintf(path, sizeof path, "%s/tekken/tekken-vocab.gguf", g_root);
    enum wk_status st = wk_gguf_open(path, &g, &err);
    if (!st) st = wk_tokenizer_from_gguf(g, &toks[0], &err);
    if (st) fprintf(stderr, "  %s: %s\n", path, err.msg);
    CHECK_EQ_INT(st, WK_OK);
    snprintf(path, sizeof path, "%s/tekken/hf", g_root);
    st = wk_tokenizer_from_hf(path, &toks[1], &err);
    if (st) fprintf(stderr, "  %s: %s\n", path, err.msg);
    CHECK_EQ_INT(st, WK_OK);
    for (int w = 0; w < 2; w++) {
        size_t i, bad = 0;
        json_array_foreach(strings, i, e) {
            if (!toks[w]) break;
            json_t *jt = json_object_get(e, "text");
            const char *text = json_string_value(jt);
            json_t *ids = json_object_get(e, "ids");
            struct wk_tokens t = {0};
            CHECK_EQ_INT(wk_tokenizer_encode(toks[w], text, json_string_length(jt), false, &t), WK_OK);
            bool same = (size_t)t.n == json_array_size(ids);
            for (int64_t k = 0; same && k < t.n; k++) same = t.ids[k] == fixture_id(ids, (size_t)k);
            if (!same && bad++ < 3) fprintf(stderr, "  %s: \"%.60s\" differs\n", w ? "hf" : "gguf", text);
            CHECK(same);
            wk_tokens_deinit(&t);
        }
        printf("  tekken %s: %zu strings, %zu differ\n", w ? "tokenizer.json" : "gguf", json_array_size(strings), bad);
    }
    wk_tokenizer_destroy(toks[0]);
    wk_tokenizer_destroy(toks[1]);
    wk_gguf_close(g);
    json_decref(ref);
}

static void edit_exaone_gelu(json_t *c) { json_object_set_new(c, "activation_function", json_string("gelu_new")); }
static void edit_exaone_layers(json_t *c) { json_object_set_new(c, "num_layers", json_string("2")); }
static void edit_mixtral_k(json_t *c) { json_object_set_new(c, "num_experts_per_tok", json_integer(5)); }
static void edit_mixtral_n(json_t *c) { json_object_set_new(c, "num_local_experts", json_string("4")); }

static void test_errors(void)
{
    static const struct {
        int c;
        void (*edit)(json_t *);
        const char *msg;
    } cases[] = {{4, edit_exaone_gelu, "activation_function must be \"silu\""},
                 {4, edit_exaone_layers, "num_layers must be a number"},
                 {2, edit_mixtral_k, "expert_used_count 5 must be 1..expert_count 4"},
                 {2, edit_mixtral_n, "num_local_experts must be a number"}};
    for (size_t i = 0; i < WK_ARRAY_LEN(cases); i++) {
        char tmp[64];
        copy_folder(&g_cases[cases[i].c], tmp, cases[i].edit);
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
    const char *d = getenv("WICK_LLAMALIKE_FIXTURES");
    if (d && *d) g_root = d;
    if (access(g_root, F_OK) != 0) {
        fprintf(stderr, "test-llamalike: %s: no fixtures (run from the repository root)\n", g_root);
        return 1;
    }
    static const struct check_test tests[] = {TEST(test_logits),          TEST(test_greedy),  TEST(test_features_matter),
                                              TEST(test_mistral_no_window), TEST(test_r1_chat), TEST(test_tekken),
                                              TEST(test_errors)};
    return check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
}
