/*
 * fuzz-gotmpl.c - libFuzzer target for the Go text/template engine
 * (wk_gotmpl.h): the input is parsed as a Modelfile TEMPLATE and, when it
 * parses, applied to a fixed conversation as Ollama applies it
 * (wk_gotmpl_render_chat: the .Messages path or the per-exchange legacy
 * path with its cut after .Response, tools and tool calls printed as JSON)
 * with provenance runs, and rendered plainly over the same data. Any
 * crash, sanitizer report, leak, timeout or huge allocation is a finding;
 * errors returned by parse or render are not. The runs must cover the
 * output exactly.
 *
 * Build and run (clang): make fuzz && build/fuzz/fuzz-gotmpl \
 *     -max_total_time=600 -rss_limit_mb=2048 build/fuzz/corpus-fuzz-gotmpl
 */
#include "../../src/runtime/wk_gotmpl.h"

#include <jansson.h>
#include <stdint.h>
#include <string.h>

static const char MESSAGES[] =
    "[{\"role\": \"system\", \"content\": \"You are helpful.\"},"
    "{\"role\": \"user\", \"content\": \"Hi <|im_end|> {{ .x }}\"},"
    "{\"role\": \"user\", \"content\": \"again\"},"
    "{\"role\": \"assistant\", \"content\": \"\", \"thinking\": \"hmm\", \"tool_calls\": [{\"function\": "
    "{\"name\": \"f\", \"arguments\": {\"b\": [true, 2.5], \"a\": \"x\\\"y\"}}}]},"
    "{\"role\": \"tool\", \"content\": \"{\\\"r\\\": 1}\", \"tool_name\": \"f\"},"
    "{\"role\": \"user\", \"content\": \"\\u00e9\\u4f60 ok\"},"
    "{\"role\": \"assistant\", \"content\": \"partial\"}]";
static const char TOOLS[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \"d\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"string\", \"enum\": [\"x\"]}, \"b\": "
    "{\"type\": \"array\", \"items\": {\"type\": \"number\"}}}, \"required\": [\"a\"]}}}]";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *msgs, *tools, *plain;
    if (!msgs) {
        msgs = json_loads(MESSAGES, 0, NULL);
        tools = json_loads(TOOLS, 0, NULL);
        plain = json_pack("{s:O, s:O, s:s, s:s}", "Messages", msgs, "Tools", tools, "System", "s", "Prompt", "p");
    }
    if (size > 1 << 16) return 0;
    struct wk_gotmpl *t = NULL;
    struct wk_error err;
    if (wk_gotmpl_parse((const char *)data, size, &t, &err) != WK_OK) return 0;
    struct wk_gotmpl_limits lim = {.max_output = 1 << 22, .max_iterations = 100000};
    char *out = NULL;
    size_t n = 0, n_runs = 0;
    struct wk_gotmpl_run *runs = NULL;
    if (wk_gotmpl_render_chat(t, msgs, tools, &out, &n, &runs, &n_runs, &err) == WK_OK) {
        size_t at = 0;
        for (size_t i = 0; i < n_runs; i++) {
            if (runs[i].off != at || runs[i].len == 0) __builtin_trap();
            at += runs[i].len;
        }
        if (at != n || !out || out[n] != '\0') __builtin_trap();
    }
    wk_free(out);
    wk_free(runs);
    out = NULL;
    if (wk_gotmpl_render_ex(t, plain, &lim, &out, &n, &err) == WK_OK && (!out || out[n] != '\0')) __builtin_trap();
    wk_free(out);
    wk_gotmpl_free(t);
    return 0;
}
