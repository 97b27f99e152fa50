/*
 * runner_harmony.c - a chat request to a gpt-oss model (a chat template in
 * OpenAI's harmony format: <|channel|> and <|message|>) as the runner
 * prepares it: Ollama's think levels become the template's
 * reasoning_effort (wk_harmony.h), and the answer goes through the harmony
 * parser (runner.c's on_piece) instead of the <think> filter.
 */
#include "server_internal.h"

#include "../runtime/wk_harmony.h"
#include "../runtime/wk_runtime.h"

#include <string.h>

bool srv_harmony_model(const struct wk_model *m)
{
    size_t n = 0;
    const char *t = wk_model_chat_template(m, &n);
    return t && memmem(t, n, "<|channel|>", 11) && memmem(t, n, "<|message|>", 11);
}

json_t *srv_harmony_kwargs(const char *effort, json_t *kwargs)
{
    if (!effort) return json_incref(kwargs);
    json_t *own = json_is_object(kwargs) ? json_copy(kwargs) : json_object();
    if (own && !json_object_get(own, "reasoning_effort")) /* the request's own kwarg wins */
        json_object_set_new(own, "reasoning_effort", json_string(effort));
    return own;
}
