/*
 * runner_format.c - structured output in the runner: a request's format
 * (Ollama's "json" or a JSON schema; OpenAI's response_format, mapped to
 * the same by api.c) or GBNF grammar compiled to a wk_grammar, and the
 * grammar vocabulary of the runner's tokenizer, built once on first use.
 */
#include "server_internal.h"

#include "../runtime/wk_grammar.h"

#include <pthread.h>
#include <string.h>

struct srv_format {
    pthread_mutex_t mu;
    struct wk_grammar_vocab *vocab; /* built on first use */
};

struct srv_format *srv_format_new(void)
{
    struct srv_format *f = wk_calloc(1, sizeof *f);
    if (f) pthread_mutex_init(&f->mu, NULL);
    return f;
}

void srv_format_free(struct srv_format *f)
{
    if (!f) return;
    wk_grammar_vocab_free(f->vocab);
    pthread_mutex_destroy(&f->mu);
    wk_free(f);
}

enum wk_status srv_format_compile(const json_t *req, struct wk_grammar **out, struct wk_error *err)
{
    *out = NULL;
    json_t *format = json_object_get(req, "format"), *gbnf = json_object_get(req, "grammar");
    if (json_is_string(gbnf))
        return wk_grammar_from_gbnf(json_string_value(gbnf), json_string_length(gbnf), NULL, out, err);
    if (json_is_object(format)) return wk_grammar_from_json_schema(format, out, err);
    if (json_is_string(format) && strcmp(json_string_value(format), "json") == 0)
        return wk_grammar_json_object(out, err);
    if (format && !json_is_null(format))
        return wk_error_set(err, WK_E_INVALID, "format must be \"json\" or a JSON schema object");
    return WK_OK;
}

enum wk_status srv_format_matcher(struct srv_format *f, const struct wk_tokenizer *tok, const struct wk_grammar *g,
                                  struct wk_grammar_matcher **out, struct wk_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&f->mu);
    enum wk_status st = f->vocab ? WK_OK : wk_grammar_vocab_create(tok, &f->vocab, err);
    pthread_mutex_unlock(&f->mu);
    return st ? st : wk_grammar_matcher_create(g, f->vocab, out, err);
}
