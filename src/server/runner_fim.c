/*
 * runner_fim.c - a request with a suffix (Ollama's /api/generate "suffix",
 * OpenAI's legacy /v1/completions "suffix"): the fill-in-the-middle prompt
 * of the runner's model, through the request's or Modelfile's Go TEMPLATE
 * where it names .Suffix (Ollama's way), else the vocabulary's FIM tokens
 * (llama-server's /infill).
 */
#include "server_internal.h"

#include "../runtime/wk_gotmpl.h"
#include "../runtime/wk_runtime.h"

#include <strings.h>

/* Whether a Go template's text names .Suffix (any case, as Ollama's
 * Template.Vars lower-cases the identifiers it finds). */
static bool names_suffix(const char *s, size_t n)
{
    for (size_t i = 0; i + 7 <= n; i++)
        if (s[i] == '.' && strncasecmp(s + i + 1, "suffix", 6) == 0) return true;
    return false;
}

enum wk_status srv_fim_prompt(const struct wk_tokenizer *tok, const json_t *req, struct wk_prompt *out,
                              struct wk_error *err)
{
    const json_t *fim = json_object_get(req, "fim"), *tpl = json_object_get(req, "template");
    const json_t *pre = json_object_get(fim, "prefix"), *suf = json_object_get(fim, "suffix");
    if (!json_is_string(pre) || !json_is_string(suf))
        return wk_error_set(err, WK_E_INVALID, "fim needs a prefix and a suffix (strings)");
    struct wk_gotmpl *t = NULL;
    enum wk_status st = WK_OK;
    if (json_is_string(tpl) && names_suffix(json_string_value(tpl), json_string_length(tpl)))
        st = wk_gotmpl_parse(json_string_value(tpl), json_string_length(tpl), &t, err);
    if (!st)
        st = wk_prompt_fim(tok, t, json_string_value(pre), json_string_length(pre), json_string_value(suf),
                           json_string_length(suf), out, err);
    wk_gotmpl_free(t);
    return st;
}
