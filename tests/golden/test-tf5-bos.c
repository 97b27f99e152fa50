/*
 * test-tf5-bos.c - the special tokens a Hugging Face folder's
 * tokenizer.json post-processor adds, against `tokenizers` and
 * transformers 5 (fixtures: tests/golden/tf5-bos/, made by
 * scripts/reference/make-tf5-bos-fixtures.py). transformers 5 writes BOS
 * only there (TemplateProcessing "<bos> $A", no add_bos_token in
 * tokenizer_config.json) and reads add_bos_token / add_eos_token no more
 * once a tokenizer.json exists, so:
 *   1. for each folder and text, [BOS if wk_tokenizer_add_bos] + the
 *      text's ids + [wk_tokenizer_eos_to_add if any] equal
 *      Tokenizer.from_file(tokenizer.json).encode(text).ids (which the
 *      script checked equal AutoTokenizer's): Gemma 3's "<bos> $A", the same
 *      with add_bos_token false in tokenizer_config.json, Sequence[ByteLevel,
 *      TemplateProcessing "<|begin|> $A <|end|>"], BertProcessing,
 *      RobertaProcessing, and a ByteLevel post-processor that adds nothing
 *      despite add_bos_token true;
 *   2. a raw prompt (wk_prompt_raw, what `wick run` does for a model
 *      without a chat template) of the Gemma 3 folder starts with BOS;
 *   3. post-processors wick cannot follow are refused with a message.
 *
 * Usage: test-tf5-bos [FILTER]; run from the repository root, or with
 * WICK_TF5_BOS_FIXTURES naming the fixture folder.
 */
#include "../unit/check.h"

#include "../../src/runtime/wk_runtime.h"
#include "../../src/tokenizer/wk_tokenizer.h"

#include <jansson.h>

static const char *fixture_dir(void)
{
    const char *d = getenv("WICK_TF5_BOS_FIXTURES");
    return d ? d : "tests/golden/tf5-bos";
}

static json_t *load_expected(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/expected.json", fixture_dir());
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    if (!j) fprintf(stderr, "  %s: %s\n", path, jerr.text);
    CHECK(j != NULL);
    return j;
}

static struct wk_tokenizer *load_folder(const char *name)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", fixture_dir(), name);
    struct wk_tokenizer *tok = NULL;
    struct wk_error err;
    wk_error_clear(&err);
    enum wk_status st = wk_tokenizer_from_hf(dir, &tok, &err);
    if (st) fprintf(stderr, "  %s: %s\n", dir, err.msg);
    CHECK_EQ_INT(st, WK_OK);
    return tok;
}

static void print_ids(const char *label, const int32_t *ids, int64_t n)
{
    fprintf(stderr, "    %s:", label);
    for (int64_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
    fputc('\n', stderr);
}

/* Checks ids [n] against the JSON array want; prints both when they differ. */
static void check_ids(const char *folder, const char *text, const int32_t *ids, int64_t n, json_t *want)
{
    bool same = (int64_t)json_array_size(want) == n;
    for (int64_t i = 0; same && i < n; i++)
        same = json_integer_value(json_array_get(want, (size_t)i)) == ids[i];
    CHECK(same);
    if (same) return;
    fprintf(stderr, "  %s, text \"%s\":\n", folder, text);
    print_ids("wick", ids, n);
    fprintf(stderr, "    tokenizers:");
    for (size_t i = 0; i < json_array_size(want); i++)
        fprintf(stderr, " %lld", (long long)json_integer_value(json_array_get(want, i)));
    fputc('\n', stderr);
}

static void test_post_processor_ids(void)
{
    json_t *exp = load_expected(), *cases;
    if (!exp) return;
    const char *folder;
    int n_folders = 0;
    json_object_foreach(json_object_get(exp, "folders"), folder, cases)
    {
        struct wk_tokenizer *tok = load_folder(folder);
        if (!tok) continue;
        n_folders++;
        size_t i;
        json_t *c;
        json_array_foreach(cases, i, c)
        {
            const char *text = json_string_value(json_object_get(c, "text"));
            struct wk_tokens ids = {0};
            if (wk_tokenizer_add_bos(tok)) CHECK_EQ_INT(wk_tokens_push(&ids, wk_tokenizer_bos(tok)), WK_OK);
            /* tokenizers' encode splits special-token text out of the text */
            CHECK_EQ_INT(wk_tokenizer_encode(tok, text, strlen(text), true, &ids), WK_OK);
            if (wk_tokenizer_eos_to_add(tok) >= 0)
                CHECK_EQ_INT(wk_tokens_push(&ids, wk_tokenizer_eos_to_add(tok)), WK_OK);
            check_ids(folder, text, ids.ids, ids.n, json_object_get(c, "ids"));
            wk_tokens_deinit(&ids);
        }
        wk_tokenizer_destroy(tok);
    }
    CHECK_EQ_INT(n_folders, 6);
    json_decref(exp);
}

static void test_raw_prompt_bos(void)
{
    json_t *exp = load_expected();
    struct wk_tokenizer *tok = load_folder("gemma3");
    if (!exp || !tok) goto out;
    json_t *c = json_array_get(json_object_get(json_object_get(exp, "folders"), "gemma3"), 0);
    const char *text = json_string_value(json_object_get(c, "text"));
    struct wk_prompt prompt = {0};
    struct wk_tokens ids = {0};
    CHECK_EQ_INT(wk_prompt_raw(tok, text, strlen(text), false, &prompt), WK_OK);
    CHECK_EQ_INT(wk_prompt_tokenize(tok, &prompt, &ids), WK_OK);
    check_ids("gemma3 (wk_prompt_raw)", text, ids.ids, ids.n, json_object_get(c, "ids"));
    CHECK(ids.n > 0 && ids.ids[0] == 2); /* <bos> */
    wk_tokens_deinit(&ids);
    wk_prompt_deinit(&prompt);
out:
    wk_tokenizer_destroy(tok);
    json_decref(exp);
}

/* A minimal byte-free BPE tokenizer.json with the given post_processor. */
static enum wk_status load_with_post(const char *post, char *msg, size_t cap)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"<s>\": 0, \"</s>\": 1, \"a\": 2}, "
             "\"merges\": []}, \"post_processor\": %s}", post);
    struct wk_tokenizer *tok = NULL;
    struct wk_error err;
    wk_error_clear(&err);
    enum wk_status st = wk_tokenizer_from_hf_json(json, strlen(json), "pp.json", &tok, &err);
    snprintf(msg, cap, "%s", st ? err.msg : "");
    if (!st) {
        /* what loads must say what it adds */
        CHECK(wk_tokenizer_add_bos(tok) == (strstr(post, "\"<s>\"") != NULL));
        CHECK(wk_tokenizer_eos_to_add(tok) == (strstr(post, "\"</s>\"") ? 1 : -1));
    }
    wk_tokenizer_destroy(tok);
    return st;
}

static void test_refused(void)
{
    char msg[512];
    const char *sp = "{\"<s>\": {\"id\": \"<s>\", \"ids\": [0], \"tokens\": [\"<s>\"]}, "
                     "\"</s>\": {\"id\": \"</s>\", \"ids\": [1], \"tokens\": [\"</s>\"]}}";
    char pp[1024];
    snprintf(pp, sizeof pp,
             "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}}, "
             "{\"Sequence\": {\"id\": \"A\"}}, {\"SpecialToken\": {\"id\": \"</s>\"}}], \"special_tokens\": %s}",
             sp);
    CHECK_EQ_INT(load_with_post(pp, msg, sizeof msg), WK_OK);
    CHECK_EQ_INT(load_with_post("null", msg, sizeof msg), WK_OK);
    CHECK_EQ_INT(load_with_post("{\"type\": \"BertProcessing\", \"sep\": [\"</s>\", 1], \"cls\": [\"<s>\", 0]}",
                                msg, sizeof msg), WK_OK);
    /* two special tokens before $A: wick adds one BOS only */
    snprintf(pp, sizeof pp,
             "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}}, "
             "{\"SpecialToken\": {\"id\": \"</s>\"}}, {\"Sequence\": {\"id\": \"A\"}}], \"special_tokens\": %s}",
             sp);
    CHECK_EQ_INT(load_with_post(pp, msg, sizeof msg), WK_E_UNSUPPORTED);
    CHECK_CONTAINS(msg, "post_processor");
    /* a special token the special_tokens map does not give */
    CHECK_EQ_INT(load_with_post("{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
                                "{\"id\": \"<x>\"}}, {\"Sequence\": {\"id\": \"A\"}}], \"special_tokens\": {}}",
                                msg, sizeof msg), WK_E_FORMAT);
    CHECK_CONTAINS(msg, "<x>");
    /* an id out of the vocabulary */
    CHECK_EQ_INT(load_with_post("{\"type\": \"BertProcessing\", \"sep\": [\"</s>\", 7], \"cls\": [\"<s>\", 0]}",
                                msg, sizeof msg), WK_E_FORMAT);
    CHECK_EQ_INT(load_with_post("{\"type\": \"Nope\"}", msg, sizeof msg), WK_E_UNSUPPORTED);
    CHECK_CONTAINS(msg, "Nope");
}

CHECK_MAIN(TEST(test_post_processor_ids), TEST(test_raw_prompt_bos), TEST(test_refused))
