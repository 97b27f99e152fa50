/*
 * api_fields.c - request fields where an API does not read them: an
 * option of the options table (wk_options.h) at the top level of a
 * request, refused with a 400 naming it rather than dropped (Ollama's Go
 * decoder drops unknown fields without a word; wick's rule is that a field
 * that would change the answer is applied or refused); a sibling
 * route's fields likewise.
 */
#include "server_internal.h"

#include "../io/wk_options.h"

#include <stdio.h>
#include <string.h>

#define FAIL(...) (snprintf(msg, cap, __VA_ARGS__), 400)

/* An option of the table (wk_options.h) at a request's top level, where
 * this API does not read it: on Ollama's routes every option goes in
 * "options" (Ollama drops a top-level one without a word); on OpenAI's,
 * those parse_openai does not take (num_predict, num_ctx, ...: an Ollama
 * option has no OpenAI field), and "options" itself. A 400 naming it. */
int srv_refuse_misplaced_options(bool oai, json_t *body, char *msg, size_t cap)
{
    static const char *const oai_taken[] = {"temperature",      "top_p",          "top_k", "min_p", "seed", "stop",
                                            "presence_penalty", "frequency_penalty", "repeat_penalty"};
    int n;
    const struct wk_option *opts = wk_options(&n);
    for (int i = 0; i < n; i++) {
        json_t *v = json_object_get(body, opts[i].name);
        if (!v || json_is_null(v)) continue;
        bool taken = false;
        for (size_t j = 0; oai && j < WK_ARRAY_LEN(oai_taken); j++) taken |= !strcmp(oai_taken[j], opts[i].name);
        if (taken) continue;
        if (!oai)
            return FAIL("%s is an option: on the Ollama API it goes in \"options\", not at the top level", opts[i].name);
        return FAIL("%s is not a field of the OpenAI API (an Ollama option: use /api/chat or /api/generate, or the "
                    "model's Modelfile)", opts[i].name);
    }
    static const char *const oai_not[] = {"options", "n_predict", "functions", "function_call"};
    for (size_t j = 0; oai && j < WK_ARRAY_LEN(oai_not); j++) {
        json_t *v = json_object_get(body, oai_not[j]);
        if (v && !json_is_null(v))
            return FAIL("%s is not a field of this endpoint (OpenAI API)%s", oai_not[j],
                        j >= 2 ? ": send tools and tool_choice" : j == 0 ? ": its options are top-level fields" : "");
    }
    json_t *mt = json_object_get(body, "max_tokens");
    if (!oai && mt && !json_is_null(mt))
        return FAIL("max_tokens is not a field of the Ollama API: set options.num_predict");
    return 0;
}

/* OpenAI chat fields asking for what wick does not make (audio out, web
 * search): a 400 naming them. */
static int refuse_oai_outputs(json_t *body, char *msg, size_t cap)
{
    json_t *mod = json_object_get(body, "modalities"), *m;
    size_t i;
    if (mod && !json_is_null(mod) && !json_is_array(mod)) return FAIL("modalities must be a list");
    json_array_foreach(mod, i, m) {
        if (!json_is_string(m) || strcmp(json_string_value(m), "text"))
            return FAIL("modalities: only \"text\" is supported (wick makes no audio)");
    }
    static const char *const absent[] = {"audio", "web_search_options"};
    for (size_t k = 0; k < WK_ARRAY_LEN(absent); k++) {
        json_t *v = json_object_get(body, absent[k]);
        if (v && !json_is_null(v)) return FAIL("%s is not supported: wick makes text from the model alone", absent[k]);
    }
    return 0;
}

/* Fields other servers add to the OpenAI routes (llama-server, vLLM) or
 * OpenAI's own that wick does not apply, each of which changes the
 * answer: a 400 naming the field (and what to use instead) unless its
 * value asks for nothing (false, 0, the default). Accepted and dropped,
 * a client would believe it was applied. */
static int refuse_extensions(json_t *body, char *msg, size_t cap)
{
    static const struct {
        const char *name, *use;
    } ext[] = {
        {"json_schema", "response_format {\"type\": \"json_schema\", ...}"},
        {"guided_json", "response_format {\"type\": \"json_schema\", ...}"},
        {"guided_choice", "response_format with a json_schema enum"},
        {"guided_regex", "response_format with a json_schema pattern"},
        {"guided_grammar", "grammar (GBNF)"},
        {"ignore_eos", "logit_bias against the end-of-generation tokens"},
        {"min_tokens", "logit_bias against the end-of-generation tokens"},
        {"n_probs", "logprobs and top_logprobs"},
        {"dry_multiplier", "repeat_penalty, presence_penalty or frequency_penalty"},
        {"xtc_probability", "top_p, min_p or top_k"},
        {"add_generation_prompt", "/api/generate with raw: true"},
        {"verbosity", "max_tokens or the prompt"},
    };
    for (size_t k = 0; k < WK_ARRAY_LEN(ext); k++) {
        json_t *v = json_object_get(body, ext[k].name);
        const bool agp = !strcmp(ext[k].name, "add_generation_prompt"); /* its default is true */
        const bool noop = !v || json_is_null(v) || (agp ? json_is_true(v) : json_is_false(v)) ||
                          (!agp && json_is_number(v) && json_number_value(v) == 0);
        if (!noop) return FAIL("%s is not supported by wick (use %s)", ext[k].name, ext[k].use);
    }
    /* vLLM's continue_final_message: wick continues a final assistant
     * message always (wk_chat_render_request), so true is what it does and
     * false, with one, asks for what it does not */
    json_t *cfm = json_object_get(body, "continue_final_message"), *msgs = json_object_get(body, "messages");
    const char *last = json_string_value(json_object_get(json_array_get(msgs, json_array_size(msgs) - 1), "role"));
    if (json_is_false(cfm) && last && !strcmp(last, "assistant"))
        return FAIL("continue_final_message false is not supported: a conversation that ends with an assistant "
                    "message is continued from it");
    if (cfm && !json_is_null(cfm) && !json_is_boolean(cfm)) return FAIL("continue_final_message must be a boolean");
    return 0;
}

int srv_refuse_sibling_fields(enum srv_api api, json_t *body, char *msg, size_t cap)
{
    int rc = api == API_OAI_CHAT ? refuse_oai_outputs(body, msg, cap) : 0;
    if (!rc && (api == API_OAI_CHAT || api == API_OAI_COMPLETION)) rc = refuse_extensions(body, msg, cap);
    if (rc) return rc;
    static const char *const sibling[][6] = {[API_GENERATE] = {"messages"},
                                             [API_CHAT] = {"system", "template", "raw", "prompt", "suffix", "images"},
                                             [API_OAI_CHAT] = {"prompt", "echo", "best_of", "suffix"},
                                             [API_OAI_COMPLETION] = {"messages"}};
    static const char *const where[] = {[API_GENERATE] = "/api/chat takes messages",
                                        [API_CHAT] = "/api/generate takes these; send a system message, images in a "
                                                     "message",
                                        [API_OAI_CHAT] = "/v1/completions takes these",
                                        [API_OAI_COMPLETION] = "/v1/chat/completions takes messages"};
    for (size_t i = 0; i < 6 && sibling[api][i]; i++) {
        json_t *v = json_object_get(body, sibling[api][i]);
        const bool unset = !v || json_is_null(v) || json_is_false(v) || (json_is_string(v) && !json_string_length(v)) ||
                           (json_is_array(v) && !json_array_size(v)) || (json_is_integer(v) && json_integer_value(v) == 1 &&
                                                                          !strcmp(sibling[api][i], "best_of"));
        if (!unset) return FAIL("%s is not a field of this endpoint (%s)", sibling[api][i], where[api]);
    }
    return 0;
}

/* "low", "medium", "high" as static strings; NULL for anything else. */
static const char *level(const char *lv)
{
    static const char *const levels[] = {"low", "medium", "high"};
    for (size_t i = 0; lv && i < 3; i++)
        if (strcmp(lv, levels[i]) == 0) return levels[i];
    return NULL;
}

/* OpenAI's reasoning_effort (or reasoning.effort) as Ollama's OpenAI
 * layer reads it (docs/reference/ollama-mlx-runner.md, chat completions):
 * "none" turns thinking off, "minimal" is low, low/medium/high as they
 * are, and max, xhigh, ultra (Ollama's max) the highest wick's templates
 * take, high; anything else is a 400. Sets g->think and g->think_level. */
int srv_openai_reasoning_effort(struct srv_gen *g, json_t *body, char *msg, size_t cap)
{
    json_t *v = json_object_get(body, "reasoning_effort"), *r = json_object_get(body, "reasoning");
    const char *name = "reasoning_effort";
    if ((!v || json_is_null(v)) && r && !json_is_null(r)) {
        if (!json_is_object(r)) return FAIL("reasoning must be an object");
        v = json_object_get(r, "effort");
        name = "reasoning.effort";
    }
    if (!v || json_is_null(v)) return 0;
    const char *e = json_string_value(v);
    if (!e) return FAIL("%s must be a string", name);
    if (strcmp(e, "none") == 0) {
        g->think = 0;
        return 0;
    }
    g->think_level = strcmp(e, "minimal") == 0 ? "low"
                     : (strcmp(e, "max") == 0 || strcmp(e, "xhigh") == 0 || strcmp(e, "ultra") == 0) ? "high"
                                                                                                       : level(e);
    if (!g->think_level)
        return FAIL("%s must be \"none\", \"minimal\", \"low\", \"medium\", \"high\" or \"max\"", name);
    g->think = 1;
    return 0;
}

json_t *srv_text_parts(json_t *c, const char *const *texts, const char *sep, const char *where, char *msg, size_t cap,
                       int *err)
{
    if (!c || json_is_null(c)) return json_string("");
    if (json_is_string(c)) return json_incref(c);
    if (!json_is_array(c)) {
        *err = FAIL("%s must be a string or a list of parts", where);
        return NULL;
    }
    struct wk_buf b = {0};
    size_t i;
    json_t *part;
    json_array_foreach(c, i, part) {
        const char *type = json_string_value(json_object_get(part, "type"));
        json_t *text = json_object_get(part, "text");
        bool is_text = false;
        for (size_t k = 0; type && texts[k] && !is_text; k++) is_text = !strcmp(type, texts[k]);
        if (!is_text || !json_is_string(text)) {
            wk_free(b.p);
            char shown[64] = "";
            if (type) wk_str_printable(type, strlen(type), shown, sizeof shown);
            const bool image = type && (!strcmp(type, "image") || !strcmp(type, "image_url") || !strcmp(type, "input_image"));
            *err = !type    ? FAIL("%s[%zu] has no type", where, i)
                   : image  ? FAIL("this model does not support images")
                   : is_text ? FAIL("%s[%zu] (%s) has no text string", where, i, shown)
                            : FAIL("%s[%zu] is a '%s' part: only text parts are supported", where, i, shown);
            return NULL;
        }
        if (b.len) wk_buf_add(&b, sep, strlen(sep));
        wk_buf_add(&b, json_string_value(text), json_string_length(text));
    }
    json_t *s = json_stringn(b.p ? b.p : "", b.len);
    wk_free(b.p);
    return s;
}
