/*
 * test-toolcall.c - tool-call parsing (wk_toolcall.h): format detection on
 * hand-written templates and on llama.cpp's 70 real chat templates (read
 * at run time from the llama-cpp-python source package cached by
 * tests/template/run, skipped with a note when absent); each format's
 * calls, single and several, with text around them, nested JSON with
 * brackets inside strings, unicode, double-encoded arguments, malformed
 * and unterminated blocks handed back as content; every case fed whole, in
 * every split in two and one byte at a time, with identical results;
 * content streaming without delay; the size limit; allocation failures.
 *
 * Expected values are worked out by hand from the formats' definitions
 * (the templates' renderings of a tool call, see wk_toolcall.h): the
 * content is the input minus the blocks and the whitespace-only gaps next
 * to them.
 */
#include "check.h"

#include "../../src/runtime/wk_toolcall.h"

#include <jansson.h>

/* ------------------------------------------------------------- harness */

struct result {
    char *content;
    size_t n, cap;
    json_t *calls; /* [{"name", "arguments"[, "id"]}], index checked on the way */
    unsigned flags;
    enum wk_status st;
};

static bool on_content(void *user, const char *text, size_t len)
{
    struct result *r = user;
    if (r->n + len + 1 > r->cap) {
        r->cap = (r->n + len + 1) * 2;
        r->content = realloc(r->content, r->cap);
    }
    memcpy(r->content + r->n, text, len);
    r->n += len;
    r->content[r->n] = '\0';
    CHECK(len > 0);
    return true;
}

static bool on_call(void *user, const struct wk_toolcall *c)
{
    struct result *r = user;
    CHECK_EQ_INT(c->index, (long long)json_array_size(r->calls));
    CHECK(json_is_object(c->arguments));
    CHECK(c->raw && c->raw_len > 0);
    json_t *o = json_pack("{s:s, s:O}", "name", c->name, "arguments", c->arguments);
    if (c->id) json_object_set_new(o, "id", json_string(c->id));
    json_array_append_new(r->calls, o);
    return true;
}

/* A TAG parser's markers (test_tag sets them). */
static const char *g_tag_open = "<function_calls>", *g_tag_close = "</function_calls>";

/* Runs fmt over in[0..n) cut at cuts[0..ncuts) (increasing). */
static void run_cuts(enum wk_toolcall_format fmt, const char *in, size_t n, const size_t *cuts,
                     int ncuts, json_t *tools, struct result *r)
{
    memset(r, 0, sizeof *r);
    r->calls = json_array();
    r->content = calloc(1, 1);
    r->cap = 1;
    struct wk_toolcall_parser *p;
    CHECK_EQ_INT(wk_toolcall_parser_create(fmt, &p, NULL), WK_OK);
    if (fmt == WK_TOOLCALL_TAG) CHECK_EQ_INT(wk_toolcall_parser_set_markers(p, g_tag_open, g_tag_close, NULL), WK_OK);
    wk_toolcall_parser_set_tools(p, tools);
    struct wk_toolcall_sink sink = {on_content, on_call, r};
    size_t at = 0;
    for (int i = 0; i <= ncuts && r->st == WK_OK; i++) {
        size_t to = i < ncuts ? cuts[i] : n;
        r->st = wk_toolcall_parser_push(p, in + at, to - at, &sink);
        at = to;
    }
    if (r->st == WK_OK) r->st = wk_toolcall_parser_finish(p, &sink);
    r->flags = wk_toolcall_parser_flags(p);
    CHECK_EQ_INT(wk_toolcall_parser_n_calls(p), (long long)json_array_size(r->calls));
    wk_toolcall_parser_free(p);
}

static void result_free(struct result *r)
{
    free(r->content);
    json_decref(r->calls);
}

static bool same(const struct result *a, const struct result *b)
{
    return a->st == b->st && a->n == b->n && memcmp(a->content, b->content, a->n) == 0 &&
           json_equal(a->calls, b->calls) && a->flags == b->flags;
}

/* in through fmt gives content want, calls want_calls (JSON) and flags,
 * whole, split in two anywhere, and byte by byte. */
static void expect_tools(enum wk_toolcall_format fmt, const char *in, json_t *tools,
                         const char *want, const char *want_calls, unsigned flags)
{
    size_t n = strlen(in);
    struct result whole, part;
    run_cuts(fmt, in, n, NULL, 0, tools, &whole);
    CHECK_EQ_INT(whole.st, WK_OK);
    CHECK_EQ_STR(whole.content, want);
    json_t *wc = json_loads(want_calls, 0, NULL);
    CHECK(wc != NULL);
    if (!json_equal(whole.calls, wc)) {
        char *got = json_dumps(whole.calls, JSON_COMPACT | JSON_SORT_KEYS);
        fprintf(stderr, "  calls of %s:\n    got  %s\n    want %s\n", in, got, want_calls);
        free(got);
        CHECK(!"calls differ");
    }
    CHECK_EQ_INT(whole.flags, flags);
    json_decref(wc);
    int bad = 0;
    for (size_t k = 0; k <= n; k++) {
        run_cuts(fmt, in, n, &k, 1, tools, &part);
        if (!same(&whole, &part) && bad++ == 0)
            fprintf(stderr, "  split at %zu of %s differs\n", k, in);
        result_free(&part);
    }
    size_t *cuts = malloc((n + 1) * sizeof *cuts);
    for (size_t k = 0; k < n; k++)
        cuts[k] = k + 1;
    run_cuts(fmt, in, n, cuts, n ? (int)n - 1 : 0, tools, &part);
    if (!same(&whole, &part) && bad++ == 0) fprintf(stderr, "  byte by byte of %s differs\n", in);
    result_free(&part);
    free(cuts);
    CHECK_EQ_INT(bad, 0);
    result_free(&whole);
}

static void expect(enum wk_toolcall_format fmt, const char *in, const char *want,
                   const char *want_calls, unsigned flags)
{
    expect_tools(fmt, in, NULL, want, want_calls, flags);
}

#define MAL WK_TOOLCALL_F_MALFORMED
#define UNT WK_TOOLCALL_F_UNTERMINATED

/* ------------------------------------------------------------ detection */

static enum wk_toolcall_format det(const char *t)
{
    return wk_toolcall_detect(t, strlen(t));
}

static void test_detect_written(void)
{
    CHECK_EQ_INT(wk_toolcall_detect(NULL, 0), WK_TOOLCALL_NONE);
    CHECK_EQ_INT(det(""), WK_TOOLCALL_NONE);
    CHECK_EQ_INT(det("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% "
                     "endfor %}"),
                 WK_TOOLCALL_NONE);
    /* Qwen 2.5-like, Jinja and Go */
    CHECK_EQ_INT(det("{{- '<tool_call>\\n{\"name\": \"' }}{{ tool_call.name }}"),
                 WK_TOOLCALL_HERMES);
    CHECK_EQ_INT(det("{{ range .ToolCalls }}<tool_call>\n{\"name\": \"{{ .Function.Name }}\", "
                     "\"arguments\": "
                     "{{ .Function.Arguments }}}\n</tool_call>{{ end }}"),
                 WK_TOOLCALL_HERMES);
    CHECK_EQ_INT(det("<tool_call>{{ tc.name }}\n{% for k, v in args %}<arg_key>{{ k }}</arg_key>"),
                 WK_TOOLCALL_GLM45);
    CHECK_EQ_INT(det("<tool_call>\n<function={{ name }}>\n<parameter={{ k }}>"),
                 WK_TOOLCALL_QWEN3_CODER);
    CHECK_EQ_INT(det("{{- '<|tool_call>call:' + function['name'] + '{' -}}"), WK_TOOLCALL_GEMMA);
    CHECK_EQ_INT(det("<start_function_call>call:{{ name }}{"), WK_TOOLCALL_GEMMA);
    CHECK_EQ_INT(det("{{ if .ToolCalls }}[TOOL_CALLS][{{ range .ToolCalls }}{\"name\": \"{{ "
                     ".Function.Name }}\""),
                 WK_TOOLCALL_MISTRAL);
    CHECK_EQ_INT(det("<|start_header_id|>ipython<|end_header_id|>"), WK_TOOLCALL_LLAMA3);
    CHECK_EQ_INT(det("{{ '<|python_tag|>' + tool_call.name }}"), WK_TOOLCALL_LLAMA3);
    CHECK_EQ_INT(
        det("{{ if .Tools }}<|start_header_id|>system<|end_header_id|>{{ range .ToolCalls "
            "}}{\"name\": "
            "\"{{ .Function.Name }}\", \"parameters\": {{ .Function.Arguments }}}{{ end }}"),
        WK_TOOLCALL_LLAMA3);
    CHECK_EQ_INT(det("<|start_header_id|>{{ role }}<|end_header_id|>\n{{ content }}<|eot_id|>"),
                 WK_TOOLCALL_NONE);
    /* Ollama: .ToolCalls rendered as bare JSON (tag "{"), or after a tag wick does not know */
    CHECK_EQ_INT(det("{{ if .ToolCalls }}{{ range .ToolCalls }}{\"name\": \"{{ .Function.Name "
                     "}}\"}{{ end }}{{ end }}"),
                 WK_TOOLCALL_JSON);
    CHECK_EQ_INT(det("{{- else if .ToolCalls }}\nAction: ```json\n[{{ range .ToolCalls "
                     "}}{\"tool_name\": 1}"),
                 WK_TOOLCALL_TAG);
    CHECK_EQ_INT(det("<|start_header_id|>{% if tools %}<function={{ name }}>"), WK_TOOLCALL_NONE);
}

static void test_format_names(void)
{
    for (int i = 0; i < WK_TOOLCALL_N_FORMATS; i++) {
        enum wk_toolcall_format f = WK_TOOLCALL_NONE;
        CHECK_EQ_INT(wk_toolcall_format_from_name(
                         wk_toolcall_format_name((enum wk_toolcall_format)i), &f, NULL),
                     WK_OK);
        CHECK_EQ_INT(f, i);
    }
    CHECK_EQ_STR(wk_toolcall_format_name(WK_TOOLCALL_GLM45), "glm45");
    CHECK_EQ_STR(wk_toolcall_format_name((enum wk_toolcall_format)99), "?");
    enum wk_toolcall_format f;
    CHECK_EQ_INT(wk_toolcall_format_from_name("HERMES", &f, NULL), WK_OK);
    CHECK_EQ_INT(f, WK_TOOLCALL_HERMES);
    struct wk_error err;
    CHECK_EQ_INT(wk_toolcall_format_from_name("xml", &f, &err), WK_E_NOT_FOUND);
    CHECK_CONTAINS(err.msg, "xml");
    struct wk_toolcall_parser *p = NULL;
    CHECK_EQ_INT(wk_toolcall_parser_create((enum wk_toolcall_format)42, &p, &err), WK_E_INVALID);
    CHECK(p == NULL);
}

/* llama.cpp's 70 templates, by file name, and the format each teaches
 * (NONE: no tools, or a tool syntax wick does not parse: DeepSeek, Kimi,
 * gpt-oss, Command R, functionary, firefunction, LFM2, Granite 3.3,
 * MiniMax-M2/M3, Seed-OSS, Nemotron Nano v2, ...). */
static const struct {
    const char *file;
    enum wk_toolcall_format fmt;
} g_real[] = {
    {"Apriel-1.6-15b-Thinker-fixed.jinja", WK_TOOLCALL_HERMES},
    {"Bielik-11B-v3.0-Instruct.jinja", WK_TOOLCALL_HERMES},
    {"MiMo-VL.jinja", WK_TOOLCALL_HERMES},
    {"MiniMax-M1.jinja", WK_TOOLCALL_HERMES},
    {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", WK_TOOLCALL_HERMES},
    {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", WK_TOOLCALL_HERMES},
    {"Qwen-QwQ-32B.jinja", WK_TOOLCALL_HERMES},
    {"Qwen-Qwen2.5-7B-Instruct.jinja", WK_TOOLCALL_HERMES},
    {"Qwen-Qwen3-0.6B.jinja", WK_TOOLCALL_HERMES},
    {"Reka-Edge.jinja", WK_TOOLCALL_HERMES},
    {"ibm-granite-granite-4.0.jinja", WK_TOOLCALL_HERMES},
    {"ibm-granite-granite-4.1.jinja", WK_TOOLCALL_HERMES},
    {"unsloth-Apriel-1.5.jinja", WK_TOOLCALL_HERMES},
    {"meta-llama-Llama-3.1-8B-Instruct.jinja", WK_TOOLCALL_LLAMA3},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", WK_TOOLCALL_LLAMA3},
    {"meta-llama-Llama-3.3-70B-Instruct.jinja", WK_TOOLCALL_LLAMA3},
    {"Mistral-Small-3.2-24B-Instruct-2506.jinja", WK_TOOLCALL_MISTRAL},
    {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", WK_TOOLCALL_MISTRAL},
    {"mistralai-Mistral-Nemo-Instruct-2407.jinja", WK_TOOLCALL_MISTRAL},
    {"unsloth-mistral-Devstral-Small-2507.jinja", WK_TOOLCALL_MISTRAL},
    {"GLM-4.6.jinja", WK_TOOLCALL_GLM45},
    {"GLM-4.7-Flash.jinja", WK_TOOLCALL_GLM45},
    {"Spark2.5.jinja", WK_TOOLCALL_GLM45},
    {"inclusionai-ling-3.0-flash.jinja", WK_TOOLCALL_GLM45},
    {"poolside-Laguna-S-2.1.jinja", WK_TOOLCALL_GLM45},
    {"poolside-Laguna-XS-2.1.jinja", WK_TOOLCALL_GLM45},
    {"poolside-Laguna-XS.2.jinja", WK_TOOLCALL_GLM45},
    {"google-gemma-4-31B-it-interleaved.jinja", WK_TOOLCALL_GEMMA},
    {"google-gemma-4-31B-it.jinja", WK_TOOLCALL_GEMMA},
    {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", WK_TOOLCALL_QWEN3_CODER},
    {"Qwen3-Coder.jinja", WK_TOOLCALL_QWEN3_CODER},
    {"Qwen3.5-4B.jinja", WK_TOOLCALL_QWEN3_CODER},
    {"StepFun3.5-Flash.jinja", WK_TOOLCALL_QWEN3_CODER},
    {"Apertus-8B-Instruct.jinja", WK_TOOLCALL_NONE},
    {"ByteDance-Seed-OSS.jinja", WK_TOOLCALL_NONE},
    {"Cohere2MoE.jinja", WK_TOOLCALL_TAG},
    {"CohereForAI-c4ai-command-r-plus-tool_use.jinja", WK_TOOLCALL_NONE},
    {"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", WK_TOOLCALL_TAG},
    {"GigaChat3-10B-A1.8B.jinja", WK_TOOLCALL_NONE},
    {"GigaChat3.1-10B-A1.8B.jinja", WK_TOOLCALL_NONE},
    {"HuggingFaceTB-SmolLM3-3B.jinja", WK_TOOLCALL_NONE},
    {"Kimi-K2-Instruct.jinja", WK_TOOLCALL_NONE},
    {"Kimi-K2-Thinking.jinja", WK_TOOLCALL_NONE},
    {"Kimi-K3.jinja", WK_TOOLCALL_NONE},
    {"LFM2-8B-A1B.jinja", WK_TOOLCALL_NONE},
    {"LFM2.5-8B-A1B.jinja", WK_TOOLCALL_NONE},
    {"LFM2.5-Instruct.jinja", WK_TOOLCALL_NONE},
    {"MiniMax-M2.jinja", WK_TOOLCALL_NONE},
    {"MiniMax-M3.jinja", WK_TOOLCALL_NONE},
    {"NVIDIA-Nemotron-Nano-v2.jinja", WK_TOOLCALL_NONE},
    {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", WK_TOOLCALL_NONE},
    {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", WK_TOOLCALL_NONE},
    {"deepseek-ai-DeepSeek-V3.1.jinja", WK_TOOLCALL_NONE},
    {"deepseek-ai-DeepSeek-V3.2.jinja", WK_TOOLCALL_NONE},
    {"deepseek-ai-DeepSeek-V4-Flash-0731.jinja", WK_TOOLCALL_NONE},
    {"deepseek-ai-DeepSeek-V4.jinja", WK_TOOLCALL_NONE},
    {"fireworks-ai-llama-3-firefunction-v2.jinja", WK_TOOLCALL_NONE},
    {"google-gemma-2-2b-it.jinja", WK_TOOLCALL_NONE},
    {"ibm-granite-granite-3.3-2B-Instruct.jinja", WK_TOOLCALL_TAG},
    {"llama-cpp-deepseek-r1.jinja", WK_TOOLCALL_NONE},
    {"llama-cpp-rwkv-world.jinja", WK_TOOLCALL_NONE},
    {"meetkai-functionary-medium-v3.1.jinja", WK_TOOLCALL_NONE},
    {"meetkai-functionary-medium-v3.2.jinja", WK_TOOLCALL_NONE},
    {"microsoft-Phi-3.5-mini-instruct.jinja", WK_TOOLCALL_NONE},
    {"moonshotai-Kimi-K2.jinja", WK_TOOLCALL_NONE},
    {"muse-glimmer.jinja", WK_TOOLCALL_NONE},
    {"openai-gpt-oss-120b.jinja", WK_TOOLCALL_NONE},
    {"openbmb-MiniCPM5-1B.jinja", WK_TOOLCALL_NONE},
    {"tencent-Hy3.jinja", WK_TOOLCALL_NONE},
    {"upstage-Solar-Open-100B.jinja", WK_TOOLCALL_NONE},
};

static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    char *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

static void test_detect_real_templates(void)
{
    const char *cache = getenv("WICK_CACHE"), *home = getenv("HOME");
    char dir[1024];
    if (cache)
        snprintf(dir, sizeof dir, "%s", cache);
    else
        snprintf(dir, sizeof dir, "%s/.cache/wick", home ? home : ".");
    strncat(dir, "/llama-cpp-python/llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/",
            sizeof dir - strlen(dir) - 1);
    int found = 0;
    for (size_t i = 0; i < sizeof g_real / sizeof g_real[0]; i++) {
        char path[1400];
        snprintf(path, sizeof path, "%s%s", dir, g_real[i].file);
        size_t n;
        char *t = read_file(path, &n);
        if (!t) continue;
        found++;
        enum wk_toolcall_format f = wk_toolcall_detect(t, n);
        if (f != g_real[i].fmt)
            fprintf(stderr, "  %s: %s, want %s\n", g_real[i].file, wk_toolcall_format_name(f),
                    wk_toolcall_format_name(g_real[i].fmt));
        CHECK_EQ_INT(f, g_real[i].fmt);
        free(t);
    }
    if (!found)
        printf("  (note: llama.cpp's templates not cached in %s; run tests/template/run --min 0)\n",
               dir);
}

/* -------------------------------------------------------------- HERMES */

static void test_hermes(void)
{
    enum wk_toolcall_format H = WK_TOOLCALL_HERMES;
    expect(H,
           "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
           "\"Paris\"}}\n</tool_call>",
           "", "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", 0);
    expect(H,
           "Let me check.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\nDone.",
           "Let me check.\n\nDone.", "[{\"name\": \"f\", \"arguments\": {}}]", 0);
    expect(
        H,
        "\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n"
        "{\"name\": \"b\", \"arguments\": {\"y\": [true, null]}}\n</tool_call>\n",
        "",
        "[{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\", \"arguments\": {\"y\": "
        "[true, null]}}]",
        0);
    /* brackets, quotes and a closing tag's first bytes inside strings */
    expect(H,
           "<tool_call>{\"name\": \"run\", \"arguments\": {\"code\": \"if (x) { y(\\\"}\\\"); } "
           "</tool\", "
           "\"opts\": {\"deep\": [1, {\"k\": \"]\"}]}}}</tool_call>",
           "",
           "[{\"name\": \"run\", \"arguments\": {\"code\": \"if (x) { y(\\\"}\\\"); } </tool\", "
           "\"opts\": {\"deep\": [1, {\"k\": \"]\"}]}}}]",
           0);
    expect(H,
           "Voil\xc3\xa0 \xf0\x9f\x8c\x8d <tool_call>{\"name\": \"\xe5\xa4\xa9\xe6\xb0\x97\", "
           "\"arguments\": "
           "{\"city\": \"Z\\u00fcrich \xf0\x9f\x8c\x8d\"}}</tool_call>",
           "Voil\xc3\xa0 \xf0\x9f\x8c\x8d ",
           "[{\"name\": \"\xe5\xa4\xa9\xe6\xb0\x97\", \"arguments\": {\"city\": \"Z\xc3\xbcrich "
           "\xf0\x9f\x8c\x8d\"}}]",
           0);
    /* double-encoded arguments; a list; two objects in one block; Apriel's <tool_calls> */
    expect(H, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>", "",
           "[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]", 0);
    expect(H,
           "<tool_call>[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": "
           "{\"x\": 1}}]</tool_call>",
           "",
           "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"x\": 1}}]",
           0);
    expect(H, "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n{\"name\": \"b\"}\n</tool_call>",
           "", "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}]", 0);
    expect(H,
           "<tool_calls>[{\"name\": \"a\", \"arguments\": {\"q\": \"x\"}, \"id\": "
           "\"c1\"}]</tool_calls>",
           "", "[{\"name\": \"a\", \"arguments\": {\"q\": \"x\"}, \"id\": \"c1\"}]", 0);
    /* Qwen2.5's template shows the call in doubled braces, and the model may answer so */
    expect(H, "<tool_call>\n{{\"name\": \"f\", \"arguments\": {\"a\": \"}\"}}}\n</tool_call>", "",
           "[{\"name\": \"f\", \"arguments\": {\"a\": \"}\"}}]", 0);
    expect(H, "<tool_call>{{\"name\": \"f\", \"arguments\": {}}</tool_call>",
           "<tool_call>{{\"name\": \"f\", \"arguments\": {}}</tool_call>", "[]", MAL);
    /* a Qwen3-Coder body inside a Hermes block still parses */
    expect(H,
           "<tool_call>\n<function=f>\n<parameter=a>\n2\n</parameter>\n</function>\n</tool_call>",
           "", "[{\"name\": \"f\", \"arguments\": {\"a\": 2}}]", 0);
}

static void test_hermes_malformed(void)
{
    enum wk_toolcall_format H = WK_TOOLCALL_HERMES;
    /* bad JSON, no name, arguments not an object, a bare name: back as content */
    expect(H, "Hi <tool_call>{\"name\": \"f\", \"arguments\": {</tool_call> bye",
           "Hi <tool_call>{\"name\": \"f\", \"arguments\": {</tool_call> bye", "[]", MAL);
    expect(H, "\n<tool_call>{\"arguments\": {}}</tool_call>",
           "\n<tool_call>{\"arguments\": {}}</tool_call>", "[]", MAL);
    expect(H, "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",
           "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>", "[]", MAL);
    expect(H, "<tool_call>get_time</tool_call>", "<tool_call>get_time</tool_call>", "[]", MAL);
    /* a good call after a bad one keeps its index 0; the bad one stays content */
    expect(H,
           "<tool_call>{oops}</tool_call>\n<tool_call>{\"name\": \"g\", \"arguments\": "
           "{}}</tool_call>",
           "<tool_call>{oops}</tool_call>\n", "[{\"name\": \"g\", \"arguments\": {}}]", MAL);
    /* unterminated: taken when its text parses, else content */
    expect(H, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n", "",
           "[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]", UNT);
    expect(H, "<tool_call>{\"name\": \"f\", \"arguments\": {}}\n</tool_", "",
           "[{\"name\": \"f\", \"arguments\": {}}]", UNT);
    expect(H, "ok <tool_call>{\"name\": \"f\", \"argu", "ok <tool_call>{\"name\": \"f\", \"argu",
           "[]", UNT | MAL);
    /* things that look like the marker, and a marker's first bytes at the end */
    expect(H, "x <tool_callx> <tool> <<tool_call", "x <tool_callx> <tool> <<tool_call", "[]", 0);
    expect(H, "a < b <tool_callsx", "a < b <tool_callsx", "[]", 0);
    expect(H, "a <tool_calls>", "a <tool_calls>", "[]", UNT | MAL);
    /* no calls: all content, leading whitespace kept */
    expect(H, "\n\nJust text.\n", "\n\nJust text.\n", "[]", 0);
    expect(H, "", "", "[]", 0);
    expect(H, " \n", " \n", "[]", 0);
}

/* -------------------------------------------------------------- LLAMA3 */

static void test_llama3(void)
{
    enum wk_toolcall_format L = WK_TOOLCALL_LLAMA3;
    expect(L, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "",
           "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", 0);
    expect(L,
           "\n\n{\"type\": \"function\", \"name\": \"f\", \"parameters\": {\"s\": \"}{][\\\"\"}}",
           "", "[{\"name\": \"f\", \"arguments\": {\"s\": \"}{][\\\"\"}}]", 0);
    expect(L, "<|python_tag|>{\"name\": \"f\", \"arguments\": {\"a\": 1}}", "",
           "[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]", 0);
    expect(
        L, "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": 2}}",
        "", "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"x\": 2}}]",
        0);
    expect(L, "{\"name\": \"a\", \"parameters\": {}}\n{\"name\": \"b\", \"parameters\": {}}\n", "",
           "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}]", 0);
    expect(L, "Sure. <|python_tag|>{\"name\": \"f\", \"parameters\": {}}", "Sure. ",
           "[{\"name\": \"f\", \"arguments\": {}}]", 0);
    expect(L, "{\"name\": \"f\", \"parameters\": {}} Done", " Done",
           "[{\"name\": \"f\", \"arguments\": {}}]", 0);
    /* not an answer that starts with '{': content at once, no flag */
    expect(L, "The call is {\"name\": \"f\", \"parameters\": {}}",
           "The call is {\"name\": \"f\", \"parameters\": {}}", "[]", 0);
    /* JSON that is not a call: held until it closes, then content */
    expect(L, "{\"city\": \"Paris\"}", "{\"city\": \"Paris\"}", "[]", MAL);
    expect(L, "{\"name\": \"Bob\", \"age\": 3}\nok", "{\"name\": \"Bob\", \"age\": 3}\nok", "[]",
           MAL);
    expect(L, "{\"name\": \"Bob\"}", "{\"name\": \"Bob\"}", "[]", MAL);
    /* <|python_tag|> with code: content */
    expect(L, "<|python_tag|>print(1)", "<|python_tag|>print(1)", "[]", MAL);
    expect(L, "{\"name\": \"f\", \"parameters\": {", "{\"name\": \"f\", \"parameters\": {", "[]",
           UNT | MAL);
}

/* ------------------------------------------------------------- MISTRAL */

static void test_mistral(void)
{
    enum wk_toolcall_format M = WK_TOOLCALL_MISTRAL;
    expect(M,
           "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
           "\"abc123def\"}]",
           "",
           "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
           "\"abc123def\"}]",
           0);
    expect(
        M,
        "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"s\": \"]]\"}}, {\"name\": \"b\", "
        "\"arguments\": {}}]",
        "",
        "[{\"name\": \"a\", \"arguments\": {\"s\": \"]]\"}}, {\"name\": \"b\", \"arguments\": {}}]",
        0);
    expect(M, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}", "",
           "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", 0);
    expect(M, "[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]b[ARGS]{\"x\": [1, 2], \"s\": \"[TOOL_CALLS]\"}",
           "",
           "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"x\": [1, "
           "2], \"s\": "
           "\"[TOOL_CALLS]\"}}]",
           0);
    expect(M, "[TOOL_CALLS]f[CALL_ID]call_1[ARGS]{\"q\": \"a]b}\"}", "",
           "[{\"name\": \"f\", \"arguments\": {\"q\": \"a]b}\"}, \"id\": \"call_1\"}]", 0);
    expect(M, "Sure! [TOOL_CALLS]f[ARGS]{}", "Sure! ", "[{\"name\": \"f\", \"arguments\": {}}]", 0);
    expect(M, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}] trailing", " trailing",
           "[{\"name\": \"f\", \"arguments\": {}}]", 0);
    expect(M, "[TOOL_CALLS]f[ARGS]oops", "[TOOL_CALLS]f[ARGS]oops", "[]", MAL);
    expect(M, "[TOOL_CALLS]f[ARGS]{\"a\": ", "[TOOL_CALLS]f[ARGS]{\"a\": ", "[]", UNT | MAL);
    expect(M, "[TOOL_CALLS][{\"nom\": 1}]x", "[TOOL_CALLS][{\"nom\": 1}]x", "[]", MAL);
    expect(M, "[TOOL_CALL] [TOOL [", "[TOOL_CALL] [TOOL [", "[]", 0);
}

/* --------------------------------------------------------------- GLM45 */

static void test_glm45(void)
{
    enum wk_toolcall_format G = WK_TOOLCALL_GLM45;
    expect(G,
           "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
           "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
           "", "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}]",
           0);
    expect(
        G,
        "I'll look.\n<tool_call>f\n<arg_key>o</arg_key>\n<arg_value>{\"a\": [1, "
        "\"}\"]}</arg_value>\n"
        "<arg_key>b</arg_key><arg_value>true</arg_value><arg_key>t</arg_key><arg_value>caf\xc3\xa9 "
        "{not json</arg_value></tool_call><tool_call>get_time</tool_call>",
        "I'll look.\n",
        "[{\"name\": \"f\", \"arguments\": {\"o\": {\"a\": [1, \"}\"]}, \"b\": true, \"t\": "
        "\"caf\xc3\xa9 {not json\"}},"
        " {\"name\": \"get_time\", \"arguments\": {}}]",
        0);
    /* a JSON body in a GLM block is read as Hermes */
    expect(G, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>", "",
           "[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]", 0);
    expect(G, "<tool_call>f\n<arg_key>a</arg_key>oops</tool_call>",
           "<tool_call>f\n<arg_key>a</arg_key>oops</tool_call>", "[]", MAL);
    expect(G, "<tool_call>two words\n</tool_call>", "<tool_call>two words\n</tool_call>", "[]",
           MAL);
    /* the tools' schema keeps a "string" parameter text */
    json_t *tools = json_loads(
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
        "\"object\", \"properties\": {\"zip\": {\"type\": \"string\"}, \"n\": {\"type\": "
        "\"integer\"}}}}}]",
        0, NULL);
    expect_tools(
        G,
        "<tool_call>f\n<arg_key>zip</arg_key>\n<arg_value>01234</arg_value>\n<arg_key>n</arg_key>\n"
        "<arg_value>7</arg_value>\n<arg_key>m</arg_key>\n<arg_value>[1]</arg_value>\n</tool_call>",
        tools, "", "[{\"name\": \"f\", \"arguments\": {\"zip\": \"01234\", \"n\": 7, \"m\": [1]}}]",
        0);
    expect_tools(G, "<tool_call>f\n<arg_key>zip</arg_key>\n<arg_value>12</arg_value>\n</tool_call>",
                 tools, "", "[{\"name\": \"f\", \"arguments\": {\"zip\": \"12\"}}]", 0);
    json_decref(tools);
}

/* ---------------------------------------------------------- QWEN3_CODER */

static void test_qwen3_coder(void)
{
    enum wk_toolcall_format Q = WK_TOOLCALL_QWEN3_CODER;
    expect(Q,
           "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</"
           "parameter>\n<parameter=days>\n3\n"
           "</parameter>\n</function>\n</tool_call>",
           "", "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}]",
           0);
    expect(Q,
           "Writing it.\n\n<tool_call>\n<function=write>\n<parameter=code>\nint main() {\n  return "
           "0;\n}\n"
           "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=run>\n</function>\n</"
           "tool_call>",
           "Writing it.\n\n",
           "[{\"name\": \"write\", \"arguments\": {\"code\": \"int main() {\\n  return 0;\\n}\"}},"
           " {\"name\": \"run\", \"arguments\": {}}]",
           0);
    expect(Q, "<tool_call>\n<function=f>\n<parameter=a>\n1\n</function>\n</tool_call>",
           "<tool_call>\n<function=f>\n<parameter=a>\n1\n</function>\n</tool_call>", "[]", MAL);
}

/* --------------------------------------------------------------- GEMMA */

static void test_gemma(void)
{
    enum wk_toolcall_format G = WK_TOOLCALL_GEMMA;
    expect(G, "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:3}<tool_call|>", "",
           "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}]", 0);
    expect(G,
           "<|tool_call>call:f{opts:{deep:[1,<|\"|>a,b}<|\"|>,true]},n:null,x:-1.5,mode:fast}<tool_"
           "call|>",
           "",
           "[{\"name\": \"f\", \"arguments\": {\"opts\": {\"deep\": [1, \"a,b}\", true]}, \"n\": "
           "null, \"x\": -1.5, "
           "\"mode\": \"fast\"}}]",
           0);
    expect(
        G,
        "<start_function_call>call:set_alarm{time:<escape>7:30<escape>,label:<escape>Wake "
        "up<escape>}"
        "<end_function_call>",
        "",
        "[{\"name\": \"set_alarm\", \"arguments\": {\"time\": \"7:30\", \"label\": \"Wake up\"}}]",
        0);
    expect(G,
           "Checking.<|tool_call>call:a{}<tool_call|><|tool_call>call:b{<|\"|>k<|\"|>:\"v\\u00e9\"}"
           "<tool_call|>",
           "Checking.",
           "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"k\": "
           "\"v\xc3\xa9\"}}]",
           0);
    expect(G, "<|tool_call>call:f{a:<|\"|>x}<tool_call|>",
           "<|tool_call>call:f{a:<|\"|>x}<tool_call|>", "[]", MAL);
    expect(G, "<|tool_call>f{a:1}<tool_call|>", "<|tool_call>f{a:1}<tool_call|>", "[]", MAL);
    /* nesting past the limit */
    char deep[300] = "<|tool_call>call:f{a:", want[300];
    for (int i = 0; i < 70; i++)
        strcat(deep, "[");
    strcat(deep, "1");
    for (int i = 0; i < 70; i++)
        strcat(deep, "]");
    strcat(deep, "}<tool_call|>");
    strcpy(want, deep);
    expect(G, deep, want, "[]", MAL);
}

/* a closing marker inside a JSON string of the call (code in an argument) does not end the block */
static void test_marker_in_string(void)
{
    expect(WK_TOOLCALL_HERMES,
           "<tool_call>\n{\"name\": \"write\", \"arguments\": {\"text\": \"a</tool_call>b \\\" </tool_call>\"}}\n"
           "</tool_call> done",
           " done", "[{\"name\": \"write\", \"arguments\": {\"text\": \"a</tool_call>b \\\" </tool_call>\"}}]", 0);
}

/* ----------------------------------------------------------------- TAG */

/* template's markers, as wk_toolcall_detect_markers finds them */
static void expect_markers(const char *t, enum wk_toolcall_format fmt, const char *open, const char *close)
{
    char o[WK_TOOLCALL_MAX_TAG + 3], c[WK_TOOLCALL_MAX_TAG + 3];
    CHECK_EQ_INT(wk_toolcall_detect_markers(t, strlen(t), o, c), fmt);
    CHECK_EQ_STR(o, open);
    CHECK_EQ_STR(c, close);
}

static void test_tag(void)
{
    /* the tags Ollama's tools.parseTag reads from a TEMPLATE (tools/template.go): the first text
     * that is not only whitespace inside {{ if .ToolCalls }}, cut at '{', trimmed */
    expect_markers("{{- if .ToolCalls }}<|tool_call|>[{{ range $i, $t := .ToolCalls }}{{ if $i }}, {{ end }}"
                   "{\"name\": \"{{ .Function.Name }}\", \"arguments\": {{ .Function.Arguments }}}{{ end }}]"
                   "{{- end }}",
                   WK_TOOLCALL_TAG, "<|tool_call|>", "");
    expect_markers("{{ if .ToolCalls }}<function_calls>{{ range .ToolCalls }}{\"name\": \"{{ .Function.Name }}\"}"
                   "{{ end }}</function_calls>{{ end }}",
                   WK_TOOLCALL_TAG, "<function_calls>", "</function_calls>");
    /* whitespace-only text is skipped, as Ollama's findTextNode skips it */
    expect_markers("{{ if .ToolCalls }}\n{{ range .ToolCalls }}[TOOL_CALL] {\"name\": 1}{{ end }}{{ end }}",
                   WK_TOOLCALL_TAG, "[TOOL_CALL]", "");
    expect_markers("{{ if .ToolCalls }}Action: ```json\n[{{ range .ToolCalls }}{\"tool_name\": 1}{{ end }}]\n```",
                   WK_TOOLCALL_TAG, "Action: ```json", "```");
    expect_markers("{{ if .ToolCalls }}[{{ range .ToolCalls }}{\"name\": 1}{{ end }}]{{ end }}", WK_TOOLCALL_JSON, "",
                   "");
    /* no text inside the block: no tag (findTextNode stops at the construct), not the text after it */
    expect_markers("{{ if .ToolCalls }}{{ range .ToolCalls }}{{ .Function.Name }}{{ end }}{{ end }}The end",
                   WK_TOOLCALL_JSON, "", "");
    expect_markers("{{- if .ToolCalls }}{{- else }}<|im_end|>{{ end }}", WK_TOOLCALL_JSON, "", "");
    expect_markers("{{ if .ToolCalls }}a tag much too long to be a marker of calls{\"name\": 1}{{ end }}",
                   WK_TOOLCALL_NONE, "", "");
    /* Jinja templates of the same kind: Granite 3.x, Command R7B (markers as llama.cpp's chat.cpp reads them) */
    expect_markers("respond only with <|tool_call|> followed by a JSON list", WK_TOOLCALL_TAG, "<|tool_call|>", "");
    expect_markers("{{ '<|START_ACTION|>[' }}{{ tool_call | tojson }}]<|END_ACTION|>", WK_TOOLCALL_TAG,
                   "<|START_ACTION|>", "<|END_ACTION|>");
    g_tag_open = "<|START_ACTION|>", g_tag_close = "<|END_ACTION|>";
    expect(WK_TOOLCALL_TAG, "<|START_THINKING|>I will look it up.<|END_THINKING|><|START_ACTION|>[\n"
           "    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n"
           "]<|END_ACTION|>",
           "<|START_THINKING|>I will look it up.<|END_THINKING|>",
           "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", 0);
    /* calls after the tag, the block closed by </x> */
    g_tag_open = "<function_calls>", g_tag_close = "</function_calls>";
    expect(WK_TOOLCALL_TAG, "Let me check. <function_calls>{\"name\": \"f\", \"arguments\": {\"a\": 1}}"
           "</function_calls> Done.",
           "Let me check.  Done.", "[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]", 0);
    expect(WK_TOOLCALL_TAG, "<function_calls>not json</function_calls>", "<function_calls>not json</function_calls>",
           "[]", MAL);
    expect(WK_TOOLCALL_TAG, "a <function b", "a <function b", "[]", 0);
    /* no closing tag: the block is the JSON value (a list of calls) */
    g_tag_open = "<|tool_call|>", g_tag_close = "";
    expect(WK_TOOLCALL_TAG, "<|tool_call|>[{\"name\": \"a\", \"arguments\": {\"x\": \"]\"}}, "
           "{\"name\": \"b\", \"arguments\": {}}]",
           "", "[{\"name\": \"a\", \"arguments\": {\"x\": \"]\"}}, {\"name\": \"b\", \"arguments\": {}}]", 0);
    expect(WK_TOOLCALL_TAG, "<|tool_call|> sure", "<|tool_call|> sure", "[]", MAL);
    /* a template that writes the tag once and then each call: the calls one after another */
    expect(WK_TOOLCALL_TAG, "<|tool_call|>{\"name\": \"a\", \"arguments\": {}}\n{\"name\": \"b\", \"arguments\": {}} ok",
           " ok", "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}]", 0);
    /* Command R's fenced list of {"tool_name", "parameters"} */
    g_tag_open = "Action: ```json", g_tag_close = "```";
    expect(WK_TOOLCALL_TAG, "Action: ```json\n[{\"tool_name\": \"f\", \"parameters\": {\"q\": \"x\"}}]\n```", "",
           "[{\"name\": \"f\", \"arguments\": {\"q\": \"x\"}}]", 0);
    /* markers refused */
    struct wk_toolcall_parser *p;
    CHECK_EQ_INT(wk_toolcall_parser_create(WK_TOOLCALL_TAG, &p, NULL), WK_OK);
    CHECK_EQ_INT(wk_toolcall_parser_set_markers(p, "", NULL, NULL), WK_E_INVALID);
    CHECK_EQ_INT(wk_toolcall_parser_set_markers(p, "<a tag of more than twenty-four bytes>", NULL, NULL), WK_E_INVALID);
    wk_toolcall_parser_free(p);
    CHECK_EQ_INT(wk_toolcall_parser_create(WK_TOOLCALL_HERMES, &p, NULL), WK_OK);
    CHECK_EQ_INT(wk_toolcall_parser_set_markers(p, "<x>", NULL, NULL), WK_E_INVALID);
    wk_toolcall_parser_free(p);
}

/* ---------------------------------------------------------------- JSON */

static void test_json(void)
{
    enum wk_toolcall_format J = WK_TOOLCALL_JSON;
    expect(J, "{\"name\": \"f\", \"arguments\": {\"a\": 1}}", "",
           "[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]", 0);
    expect(
        J,
        " [{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"parameters\": {\"x\": "
        "\"[\"}}]",
        "",
        "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"x\": \"[\"}}]",
        0);
    expect(J, "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {}}]}", "",
           "[{\"name\": \"a\", \"arguments\": {}}]", 0);
    expect(J, "{\"tool_call\": {\"name\": \"a\", \"arguments\": {}}}", "",
           "[{\"name\": \"a\", \"arguments\": {}}]", 0);
    expect(J,
           "{\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": "
           "\"{\\\"a\\\":1}\"}, \"id\": "
           "\"call_9\"}",
           "", "[{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"id\": \"call_9\"}]", 0);
    expect(J, "Hello {\"name\": \"f\", \"arguments\": {}}",
           "Hello {\"name\": \"f\", \"arguments\": {}}", "[]", 0);
    expect(J, "[1, 2]", "[1, 2]", "[]", MAL);
    expect(J, "{{\"name\": \"f\", \"arguments\": {\"city\": \"Paris\"}}}", "",
           "[{\"name\": \"f\", \"arguments\": {\"city\": \"Paris\"}}]", 0);
    expect(J, "{{oops}}", "{{oops}}", "[]", MAL);
}

static void test_none(void)
{
    expect(WK_TOOLCALL_NONE, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>",
           "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", "[]", 0);
    expect(WK_TOOLCALL_NONE, "\n{\"name\": \"f\"}", "\n{\"name\": \"f\"}", "[]", 0);
}

/* -------------------------------------------------------------- streaming */

struct stream {
    char text[256];
    size_t n;
    int calls;
};

static bool s_content(void *user, const char *t, size_t len)
{
    struct stream *s = user;
    memcpy(s->text + s->n, t, len);
    s->n += len;
    s->text[s->n] = '\0';
    return true;
}

static bool s_call(void *user, const struct wk_toolcall *c)
{
    ((struct stream *)user)->calls++;
    return true;
}

/* Content comes out as soon as it cannot start a marker. */
static void test_streaming_prompt(void)
{
    struct stream s = {{0}, 0, 0};
    struct wk_toolcall_sink sink = {s_content, s_call, &s};
    struct wk_toolcall_parser *p;
    CHECK_EQ_INT(wk_toolcall_parser_create(WK_TOOLCALL_HERMES, &p, NULL), WK_OK);
    CHECK_EQ_INT(wk_toolcall_parser_push(p, "\n\n", 2, &sink), WK_OK);
    CHECK_EQ_STR(s.text, ""); /* a gap a call may follow */
    CHECK_EQ_INT(wk_toolcall_parser_push(p, "Hello, 1 ", 9, &sink), WK_OK);
    CHECK_EQ_STR(s.text, "\n\nHello, 1 ");
    CHECK_EQ_INT(wk_toolcall_parser_push(p, "< 2 <tool", 9, &sink), WK_OK);
    CHECK_EQ_STR(s.text, "\n\nHello, 1 < 2 ");
    CHECK_EQ_INT(wk_toolcall_parser_push(p, "box\n", 4, &sink), WK_OK);
    CHECK_EQ_STR(s.text, "\n\nHello, 1 < 2 <toolbox\n");
    CHECK_EQ_INT(wk_toolcall_parser_push(p, "<tool_call>{\"name\": \"f\"}</tool_", 31, &sink),
                 WK_OK);
    CHECK_EQ_INT(s.calls, 0);
    CHECK_EQ_INT(wk_toolcall_parser_push(p, "call>", 5, &sink), WK_OK);
    CHECK_EQ_INT(s.calls, 1);
    CHECK_EQ_INT(wk_toolcall_parser_push(p, " \n", 2, &sink), WK_OK);
    CHECK_EQ_INT(wk_toolcall_parser_finish(p, &sink), WK_OK);
    CHECK_EQ_STR(s.text,
                 "\n\nHello, 1 < 2 <toolbox\n"); /* the gap after the last call is dropped */
    wk_toolcall_parser_free(p);

    /* LLAMA3: text that does not start with '{' streams at once */
    memset(&s, 0, sizeof s);
    CHECK_EQ_INT(wk_toolcall_parser_create(WK_TOOLCALL_LLAMA3, &p, NULL), WK_OK);
    CHECK_EQ_INT(wk_toolcall_parser_push(p, " The {x}", 8, &sink), WK_OK);
    CHECK_EQ_STR(s.text, " The {x}");
    wk_toolcall_parser_free(p);
}

static bool stop_at_call(void *user, const struct wk_toolcall *c)
{
    return false;
}

static void test_cancel(void)
{
    struct wk_toolcall_sink sink = {NULL, stop_at_call, NULL};
    struct wk_toolcall_parser *p;
    CHECK_EQ_INT(wk_toolcall_parser_create(WK_TOOLCALL_MISTRAL, &p, NULL), WK_OK);
    const char *in = "x[TOOL_CALLS]f[ARGS]{}y";
    CHECK_EQ_INT(wk_toolcall_parser_push(p, in, strlen(in), &sink), WK_E_CANCELLED);
    CHECK_EQ_INT(wk_toolcall_parser_push(p, "z", 1, &sink), WK_E_CANCELLED);
    wk_toolcall_parser_free(p);
}

/* A block past the limit is content, byte for byte, and the work stays
 * linear when fed one byte at a time. */
static void test_limits(void)
{
    size_t body = WK_TOOLCALL_MAX_BLOCK + 100;
    size_t n = 11 + body + 12 + 4;
    char *in = malloc(n + 1);
    memcpy(in, "<tool_call>", 11);
    memset(in + 11, 'a', body);
    memcpy(in + 11 + body, "</tool_call>end", 16);
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        struct result r;
        size_t *cuts = NULL;
        int ncuts = 0;
        if (bytewise) {
            cuts = malloc(n * sizeof *cuts);
            for (size_t k = 1; k < n - 1; k++)
                cuts[ncuts++] = k;
        }
        run_cuts(WK_TOOLCALL_HERMES, in, n - 1, cuts, ncuts, NULL, &r);
        CHECK_EQ_INT(r.st, WK_OK);
        CHECK(r.n == n - 1 && memcmp(r.content, in, n - 1) == 0);
        CHECK_EQ_INT(r.flags, WK_TOOLCALL_F_TOO_LARGE | MAL);
        CHECK_EQ_INT(json_array_size(r.calls), 0);
        result_free(&r);
        free(cuts);
    }
    free(in);
    /* a long answer of plain text with many '<', one byte at a time */
    n = 1 << 20;
    in = malloc(n);
    for (size_t i = 0; i < n; i++)
        in[i] = "ab<tool_c x\n"[i % 12];
    struct wk_toolcall_parser *p;
    struct result r = {0};
    r.calls = json_array();
    struct wk_toolcall_sink sink = {on_content, on_call, &r};
    CHECK_EQ_INT(wk_toolcall_parser_create(WK_TOOLCALL_HERMES, &p, NULL), WK_OK);
    for (size_t i = 0; i < n; i++)
        wk_toolcall_parser_push(p, in + i, 1, &sink);
    CHECK_EQ_INT(wk_toolcall_parser_finish(p, &sink), WK_OK);
    CHECK(r.n == n && memcmp(r.content, in, n) == 0);
    wk_toolcall_parser_free(p);
    result_free(&r);
    free(in);
}

/* ------------------------------------------------------------ whole text */

static void test_parse_text(void)
{
    char *content;
    size_t len;
    json_t *calls;
    unsigned flags;
    const char *in =
        "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n";
    CHECK_EQ_INT(wk_toolcall_parse_text(WK_TOOLCALL_HERMES, in, strlen(in), NULL, &content, &len,
                                        &calls, &flags, NULL),
                 WK_OK);
    CHECK_EQ_STR(content, "Sure.\n");
    CHECK_EQ_INT(len, 6);
    CHECK_EQ_INT(flags, 0);
    json_t *want = json_loads("[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]", 0, NULL);
    CHECK(json_equal(calls, want));
    json_decref(want);
    json_decref(calls);
    wk_free(content);

    json_t *block;
    CHECK_EQ_INT(wk_toolcall_parse_block(WK_TOOLCALL_MISTRAL, "[TOOL_CALLS]f[ARGS]{\"a\": 1}", 27,
                                         NULL, &block),
                 WK_OK);
    CHECK_EQ_INT(json_array_size(block), 1);
    json_decref(block);
    CHECK_EQ_INT(wk_toolcall_parse_block(WK_TOOLCALL_MISTRAL, "[TOOL_CALLS]f", 13, NULL, &block),
                 WK_E_FORMAT);
    CHECK(block == NULL);
    CHECK_EQ_INT(wk_toolcall_parse_block(WK_TOOLCALL_NONE, "{}", 2, NULL, &block), WK_E_FORMAT);
}

/* Every allocation failing in turn: NOMEM or the right answer, no leaks. */
static void test_alloc_failures(void)
{
    static const struct {
        enum wk_toolcall_format fmt;
        const char *in;
    } cases[] = {
        {WK_TOOLCALL_HERMES, "a <tool_c\n<tool_call>{\"name\": \"f\", \"arguments\": "
                             "{}}</tool_call>\n\nb<tool_call>{x"},
        {WK_TOOLCALL_GLM45,
         "<tool_call>f\n<arg_key>k</arg_key><arg_value>v</arg_value></tool_call> z"},
        {WK_TOOLCALL_QWEN3_CODER,
         "<tool_call><function=f><parameter=p>1</parameter></function></tool_call>"},
        {WK_TOOLCALL_GEMMA, "<|tool_call>call:f{a:1}<tool_call|>"},
        {WK_TOOLCALL_LLAMA3,
         " {\"name\": \"f\", \"parameters\": {}};{\"name\": \"g\", \"parameters\": {}} x"},
    };
    int64_t live = wk_alloc_live_bytes();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        bool done = false;
        for (int64_t k = 1; k < 200 && !done; k++) {
            char *content = NULL;
            json_t *calls = NULL;
            wk_alloc_fail_after(k);
            enum wk_status st =
                wk_toolcall_parse_text(cases[c].fmt, cases[c].in, strlen(cases[c].in), NULL,
                                       &content, NULL, &calls, NULL, NULL);
            wk_alloc_fail_after(0);
            CHECK(st == WK_OK || st == WK_E_NOMEM);
            if (st == WK_OK) {
                done = true;
                CHECK(json_array_size(calls) >= 1);
            } else {
                CHECK(content == NULL && calls == NULL);
            }
            wk_free(content);
            json_decref(calls);
            CHECK_EQ_INT(wk_alloc_live_bytes(), live);
        }
        CHECK(done);
        /* the streaming API byte by byte, failing anywhere */
        for (int64_t k = 1; k < 60; k++) {
            struct wk_toolcall_parser *p = NULL;
            wk_alloc_fail_after(k);
            enum wk_status st = wk_toolcall_parser_create(cases[c].fmt, &p, NULL);
            for (size_t i = 0; st == WK_OK && cases[c].in[i]; i++)
                st = wk_toolcall_parser_push(p, cases[c].in + i, 1, NULL);
            if (st == WK_OK) st = wk_toolcall_parser_finish(p, NULL);
            wk_alloc_fail_after(0);
            CHECK(st == WK_OK || st == WK_E_NOMEM);
            wk_toolcall_parser_free(p);
            CHECK_EQ_INT(wk_alloc_live_bytes(), live);
        }
    }
}

CHECK_MAIN(TEST(test_detect_written), TEST(test_tag), TEST(test_marker_in_string), TEST(test_format_names), TEST(test_detect_real_templates),
           TEST(test_hermes), TEST(test_hermes_malformed), TEST(test_llama3), TEST(test_mistral),
           TEST(test_glm45), TEST(test_qwen3_coder), TEST(test_gemma), TEST(test_json),
           TEST(test_none), TEST(test_streaming_prompt), TEST(test_cancel), TEST(test_limits),
           TEST(test_parse_text), TEST(test_alloc_failures))
