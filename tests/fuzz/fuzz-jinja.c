/*
 * fuzz-jinja.c - libFuzzer target for the Jinja engine (wk_jinja.h): the
 * input is parsed as a template and, when it parses, rendered with a fixed
 * small set of variables (a system, user, assistant with a tool call and
 * tool turn; tools; add_generation_prompt; bos/eos tokens). Any crash,
 * sanitizer report, leak, timeout or huge allocation is a finding; errors
 * returned by parse or render are not.
 *
 * Build and run (clang): make fuzz && build/fuzz/fuzz-jinja \
 *     -max_total_time=600 -rss_limit_mb=2048 build/fuzz/corpus-fuzz-jinja tests/fuzz/corpus-jinja
 */
#include "../../src/runtime/wk_jinja.h"

#include <jansson.h>
#include <stdint.h>
#include <string.h>

static const char VARS[] =
    "{\"messages\": ["
    "{\"role\": \"system\", \"content\": \"You are helpful.\"},"
    "{\"role\": \"user\", \"content\": \"Hi <|im_end|> {{ x }}\"},"
    "{\"role\": \"assistant\", \"content\": null, \"reasoning_content\": \"hmm\", \"tool_calls\": [{\"id\": \"c1\", "
    "\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"a\": 1, \"b\": [true, 2.5]}}}]},"
    "{\"role\": \"tool\", \"content\": \"{\\\"r\\\": 1}\", \"tool_call_id\": \"c1\"},"
    "{\"role\": \"user\", \"content\": \"\\u00e9\\u4f60 ok\"}],"
    "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \"d\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}, \"required\": [\"a\"]}}}],"
    "\"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"n\": 3}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *vars;
    if (!vars) vars = json_loads(VARS, 0, NULL);
    if (size > 1 << 16) return 0;
    struct wk_jinja *t = NULL;
    struct wk_error err;
    if (wk_jinja_parse((const char *)data, size, &t, &err) != WK_OK) return 0;
    wk_jinja_set_time(t, 1796083200LL);
    char *out = NULL;
    size_t n = 0;
    if (wk_jinja_render(t, vars, &out, &n, &err) == WK_OK && (!out || out[n] != '\0')) __builtin_trap();
    wk_free(out);
    wk_jinja_free(t);
    return 0;
}
