/*
 * test-harmony.c - the harmony parser (src/runtime/wk_harmony.h) on
 * gpt-oss outputs written as token sequences (each string below one
 * token's text, as the tokenizer renders them: the framing tokens
 * <|channel|>, <|message|>, <|start|>, <|end|>, <|constrain|> as text,
 * <|return|> and <|call|> as text too where a test says so, though they
 * end generation and usually are not seen); each fed token by token, whole,
 * in every split in two and byte by byte, with identical results: thinking,
 * content and calls as worked out by hand from the format (wk_harmony.h).
 * Also the tokenizer's harmony rules on the gpt-oss fixture's vocabulary
 * (<|end|> not end-of-generation, the framing rendered) and the think
 * levels.
 */
#include "check.h"

#include "../../src/runtime/wk_harmony.h"
#include "../../src/tokenizer/wk_tokenizer.h"

#include <jansson.h>

struct out {
    char thinking[4096], content[4096];
    size_t n_thinking, n_content;
    json_t *calls;
};

static bool add(char *buf, size_t *n, const char *text, size_t len)
{
    CHECK(len > 0);
    if (*n + len >= 4096) return false;
    memcpy(buf + *n, text, len);
    buf[*n += len] = '\0';
    return true;
}

static bool on_thinking(void *user, const char *text, size_t len)
{
    struct out *o = user;
    return add(o->thinking, &o->n_thinking, text, len);
}

static bool on_content(void *user, const char *text, size_t len)
{
    struct out *o = user;
    return add(o->content, &o->n_content, text, len);
}

static bool on_call(void *user, const struct wk_toolcall *c)
{
    struct out *o = user;
    CHECK_EQ_INT(c->index, (long long)json_array_size(o->calls));
    json_array_append_new(o->calls, json_pack("{s:s, s:O}", "name", c->name, "arguments", c->arguments));
    return true;
}

/* Runs the parser over text[0..n) cut at cuts[0..n_cuts) into o. */
static void run(const char *text, size_t n, const size_t *cuts, size_t n_cuts, struct out *o)
{
    memset(o, 0, sizeof *o);
    o->calls = json_array();
    struct wk_harmony_parser *p;
    struct wk_error err;
    CHECK_EQ_INT(wk_harmony_parser_create(&p, &err), WK_OK);
    const struct wk_harmony_sink sink = {on_thinking, on_content, on_call, o};
    size_t at = 0;
    for (size_t k = 0; k <= n_cuts; k++) {
        size_t end = k < n_cuts ? cuts[k] : n;
        CHECK_EQ_INT(wk_harmony_parser_push(p, text + at, end - at, &sink), WK_OK);
        at = end;
    }
    CHECK_EQ_INT(wk_harmony_parser_finish(p, &sink), WK_OK);
    wk_harmony_parser_free(p);
}

static void same(const struct out *a, const struct out *b, const char *how)
{
    if (strcmp(a->thinking, b->thinking) || strcmp(a->content, b->content) || !json_equal(a->calls, b->calls)) {
        fprintf(stderr, "  %s differs: thinking '%s' / '%s', content '%s' / '%s'\n", how, a->thinking, b->thinking,
                a->content, b->content);
        CHECK(0);
    }
}

/* tokens (NULL-ended) as one text, parsed token by token and every other
 * way; the result must be thinking, content and calls (JSON text). */
static void expect(const char *const *tokens, const char *thinking, const char *content, const char *calls)
{
    char text[4096];
    size_t n = 0, cuts[256], n_cuts = 0;
    for (int i = 0; tokens[i]; i++) {
        if (i) cuts[n_cuts++] = n;
        n += (size_t)snprintf(text + n, sizeof text - n, "%s", tokens[i]);
    }
    struct out ref, o;
    run(text, n, cuts, n_cuts, &ref);
    CHECK_EQ_STR(ref.thinking, thinking);
    CHECK_EQ_STR(ref.content, content);
    json_t *want = json_loads(calls, 0, NULL);
    if (!json_equal(ref.calls, want)) {
        char *got = json_dumps(ref.calls, JSON_COMPACT);
        fprintf(stderr, "  calls %s, want %s\n", got, calls);
        free(got);
        CHECK(0);
    }
    json_decref(want);
    run(text, n, NULL, 0, &o);
    same(&ref, &o, "whole");
    json_decref(o.calls);
    for (size_t c = 1; c < n; c++) {
        run(text, n, &c, 1, &o);
        same(&ref, &o, "split in two");
        json_decref(o.calls);
    }
    size_t bytes[4096];
    for (size_t c = 1; c < n; c++) bytes[c - 1] = c;
    run(text, n, bytes, n - 1, &o);
    same(&ref, &o, "byte by byte");
    json_decref(o.calls);
    json_decref(ref.calls);
}

static void test_thinking_then_final(void)
{
    const char *const t1[] = {"<|channel|>", "analysis", "<|message|>", "User", " says", " hi", ".", "<|end|>",
                              "<|start|>", "assistant", "<|channel|>", "final", "<|message|>", "Hello", "!", NULL};
    expect(t1, "User says hi.", "Hello!", "[]");
    /* <|return|> rendered: the same */
    const char *const t2[] = {"<|channel|>", "analysis", "<|message|>", "a < b", "<|end|>", "<|start|>", "assistant",
                              "<|channel|>", "final", "<|message|>", "x <| y", "<|return|>", NULL};
    expect(t2, "a < b", "x <| y", "[]");
    /* a final answer alone; marker-like text that is no marker */
    const char *const t3[] = {"<|channel|>", "final", "<|message|>", "<|en", "d> <<|", "endx", NULL};
    expect(t3, "", "<|end> <<|endx", "[]");
    /* stopped inside the analysis (max tokens) */
    const char *const t4[] = {"<|channel|>", "analysis", "<|message|>", "Thinking", " <|", NULL};
    expect(t4, "Thinking <|", "", "[]");
}

static void test_tool_calls(void)
{
    const char *const t1[] = {"<|channel|>", "analysis", "<|message|>", "Need weather.", "<|end|>", "<|start|>",
                              "assistant", "<|channel|>", "commentary", " to=", "functions", ".get", "_weather", " ",
                              "<|constrain|>", "json", "<|message|>", "{\"", "city", "\":\"", "Paris", "\"}",
                              "<|call|>", NULL};
    expect(t1, "Need weather.", "", "[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}]");
    /* the recipient before the channel, as the template renders past calls; <|call|> not rendered */
    const char *const t2[] = {"<|start|>", "assistant", " to=", "functions.lookup", "<|channel|>", "commentary",
                              " json", "<|message|>", "{\"q\": [1, {\"a\": \"<|end\"}]}", NULL};
    expect(t2, "", "", "[{\"name\":\"lookup\",\"arguments\":{\"q\":[1,{\"a\":\"<|end\"}]}}]");
    /* a preamble on commentary, then a call; a built-in tool's recipient kept whole */
    const char *const t3[] = {"<|channel|>", "commentary", "<|message|>", "Let me check.", "<|end|>", "<|start|>",
                              "assistant", "<|channel|>", "analysis", " to=", "browser.search", " code",
                              "<|message|>", "{\"query\":\"x\"}", "<|call|>", NULL};
    expect(t3, "", "Let me check.", "[{\"name\":\"browser.search\",\"arguments\":{\"query\":\"x\"}}]");
    /* arguments that are not a JSON object: the body is content */
    const char *const t4[] = {"<|channel|>", "commentary", " to=functions.f", "<|message|>", "not json", "<|call|>",
                              NULL};
    expect(t4, "", "not json", "[]");
}

static void test_plain_and_framing(void)
{
    /* a model that writes no harmony framing: its text is content */
    char long_text[WK_HARMONY_MAX_HEADER + 40];
    memset(long_text, 'a', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    const char *const t1[] = {long_text, NULL};
    expect(t1, "", long_text, "[]");
    const char *const t2[] = {"Just text", NULL};
    expect(t2, "", "Just text", "[]");
    /* the turn ended after <|end|> with nothing more */
    const char *const t3[] = {"<|channel|>", "final", "<|message|>", "Done", "<|end|>", "<|start|>", "assistant",
                              NULL};
    expect(t3, "", "Done", "[]");
}

static void test_reasoning_effort(void)
{
    struct wk_error err;
    const char *e = "x";
    CHECK_EQ_INT(wk_harmony_reasoning_effort(json_true(), &e, &err), WK_OK);
    CHECK_EQ_STR(e, "medium");
    CHECK_EQ_INT(wk_harmony_reasoning_effort(json_false(), &e, &err), WK_OK);
    CHECK(e == NULL);
    CHECK_EQ_INT(wk_harmony_reasoning_effort(NULL, &e, &err), WK_OK);
    CHECK(e == NULL);
    static const char *const levels[] = {"low", "medium", "high"};
    for (int i = 0; i < 3; i++) {
        json_t *v = json_string(levels[i]);
        CHECK_EQ_INT(wk_harmony_reasoning_effort(v, &e, &err), WK_OK);
        CHECK_EQ_STR(e, levels[i]);
        json_decref(v);
    }
    json_t *bad = json_string("max");
    CHECK_EQ_INT(wk_harmony_reasoning_effort(bad, &e, &err), WK_E_INVALID);
    CHECK(strstr(err.msg, "max") != NULL);
    json_decref(bad);
    json_t *num = json_integer(2);
    CHECK_EQ_INT(wk_harmony_reasoning_effort(num, &e, &err), WK_E_INVALID);
    json_decref(num);
}

/* The gpt-oss fixture's vocabulary (tests/golden/gpt-oss/hf: the harmony
 * tokens as specials): <|end|> does not end generation, <|return|> and
 * <|call|> do, and the framing renders as text while <|return|> does not. */
static void test_tokenizer_rules(void)
{
    struct wk_tokenizer *tok = NULL;
    struct wk_error err;
    if (wk_tokenizer_from_hf("tests/golden/gpt-oss/hf", &tok, &err) != WK_OK) {
        fprintf(stderr, "  (skipped: %s; run from the repository root)\n", err.msg);
        return;
    }
    static const char *const names[] = {"<|end|>", "<|return|>", "<|call|>", "<|channel|>", "<|message|>"};
    static const bool eog[] = {false, true, true, false, false}, shown[] = {true, false, false, true, true};
    for (int i = 0; i < 5; i++) {
        int32_t id = wk_tokenizer_find(tok, names[i], strlen(names[i]));
        CHECK(id >= 512);
        if (id < 0) continue;
        CHECK_EQ_INT(wk_tokenizer_is_eog(tok, id), eog[i]);
        char buf[32];
        CHECK_EQ_INT(wk_tokenizer_token_bytes(tok, id, false, buf, sizeof buf) > 0, shown[i]);
    }
    wk_tokenizer_destroy(tok);
}

CHECK_MAIN(TEST(test_thinking_then_final), TEST(test_tool_calls), TEST(test_plain_and_framing),
           TEST(test_reasoning_effort), TEST(test_tokenizer_rules))
