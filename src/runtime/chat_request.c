/*
 * chat_request.c - a chat request as clients send it (messages with tool
 * calls, tool results and thinking; tool definitions; the thinking switch;
 * extra template variables) rendered to a prompt.
 *
 * A request that carries nothing but roles and contents renders exactly as
 * wk_chat_render does. Otherwise the model's own chat template renders it
 * through the Jinja engine with the variables Hugging Face transformers
 * passes (apply_chat_template): messages with tool_calls [{type:
 * "function", id, function: {name, arguments}}] (arguments as an object),
 * reasoning_content (and thinking, for a template that reads
 * message.thinking: gpt-oss's), tool_call_id and name; tools; enable_thinking and
 * thinking (both names templates use) when the request sets thinking; and
 * the request's extra variables, which override those. The built-in
 * formats (Gemma, Qwen 3, GLM-4) render no tools, so a model with one takes
 * tools only through its own template when it has one.
 */
#include "wk_jinja.h"
#include "wk_runtime.h"

#include <stdlib.h>
#include <string.h>

/* Whether the request needs more than roles and contents. */
static bool is_rich(const struct wk_chat_request *r)
{
    if (json_array_size(r->tools) > 0 || json_object_size(r->kwargs) > 0 || r->think >= 0) return true;
    size_t i;
    json_t *m;
    json_array_foreach(r->messages, i, m) {
        const char *k;
        json_t *v;
        json_object_foreach(m, k, v) if (strcmp(k, "role") && strcmp(k, "content") && !json_is_null(v)) return true;
    }
    return false;
}

/* One message in transformers' shape (a new reference; NULL: no memory). */
static json_t *hf_message(const json_t *m, bool thinking_too)
{
    json_t *o = json_pack("{s:O, s:O}", "role", json_object_get(m, "role"), "content",
                          json_object_get(m, "content") ? json_object_get(m, "content") : json_string(""));
    if (!o) return NULL;
    json_t *th = json_object_get(m, "thinking");
    if (json_string_length(th) > 0) json_object_set(o, "reasoning_content", th);
    if (json_string_length(th) > 0 && thinking_too) json_object_set(o, "thinking", th);
    json_t *id = json_object_get(m, "tool_call_id"), *name = json_object_get(m, "tool_name");
    if (json_is_string(id)) json_object_set(o, "tool_call_id", id);
    if (json_is_string(name)) json_object_set(o, "name", name);
    json_t *calls = json_object_get(m, "tool_calls");
    if (json_array_size(calls) > 0) {
        json_t *list = json_array();
        size_t i;
        json_t *c;
        json_array_foreach(calls, i, c) {
            json_t *fn = json_object_get(c, "function");
            json_t *call = json_pack("{s:s, s:{s:O, s:O}}", "type", "function", "function", "name",
                                     json_object_get(fn, "name"), "arguments", json_object_get(fn, "arguments"));
            if (call && json_is_string(json_object_get(c, "id"))) json_object_set(call, "id", json_object_get(c, "id"));
            if (!call || json_array_append_new(list, call)) {
                json_decref(list), json_decref(o);
                return NULL;
            }
        }
        json_object_set_new(o, "tool_calls", list);
    }
    return o;
}

static enum wk_status render_request(const struct wk_model *m, const struct wk_tokenizer *tok,
                                     const struct wk_chat_request *r, bool add_generation_prompt, struct wk_prompt *out,
                                     struct wk_error *err);

/* Whether the request ends with an assistant message to continue: content
 * and no tool calls. */
static bool ends_with_answer(const struct wk_chat_request *r)
{
    const json_t *last = json_array_get(r->messages, json_array_size(r->messages) - 1);
    const char *role = json_string_value(json_object_get(last, "role"));
    return role && !strcmp(role, "assistant") && json_string_length(json_object_get(last, "content")) > 0 &&
           json_array_size(json_object_get(last, "tool_calls")) == 0;
}

enum wk_status wk_chat_render_request(const struct wk_model *m, const struct wk_tokenizer *tok,
                                      const struct wk_chat_request *r, struct wk_prompt *out, struct wk_error *err)
{
    /* a conversation that ends with the assistant's own words is continued
     * from them, not answered anew (Ollama's templates leave the last
     * assistant turn open; transformers' continue_final_message): rendered
     * without the generation prompt, then cut after the last text that came
     * from a message, the final one's content (its end-of-turn dropped) */
    const bool cont = r->add_generation_prompt && ends_with_answer(r);
    enum wk_status st = render_request(m, tok, r, cont ? false : r->add_generation_prompt, out, err);
    if (st || !cont) return st;
    int32_t k = out->n - 1;
    while (k >= 0 && out->segs[k].scaffold) k--;
    for (int32_t j = k + 1; k >= 0 && j < out->n; j++) wk_free(out->segs[j].text);
    if (k >= 0) out->n = k + 1;
    return WK_OK;
}

static enum wk_status render_request(const struct wk_model *m, const struct wk_tokenizer *tok,
                                     const struct wk_chat_request *r, bool add_generation_prompt, struct wk_prompt *out,
                                     struct wk_error *err)
{
    size_t n = json_array_size(r->messages), i;
    json_t *msg;
    json_array_foreach(r->messages, i, msg) {
        if (!json_is_string(json_object_get(msg, "role")))
            return wk_error_set(err, WK_E_INVALID, "message %zu has no role", i);
        json_t *c = json_object_get(msg, "content");
        if (c && !json_is_string(c) && !json_is_null(c))
            return wk_error_set(err, WK_E_INVALID, "message %zu: content must be a string", i);
    }
    if (!is_rich(r)) { /* roles and contents: the family's format, as always */
        struct wk_chat_message *cm = wk_calloc(n ? n : 1, sizeof *cm);
        if (!cm) return wk_error_set(err, WK_E_NOMEM, "out of memory");
        json_array_foreach(r->messages, i, msg) {
            cm[i].role = json_string_value(json_object_get(msg, "role"));
            const char *c = json_string_value(json_object_get(msg, "content"));
            cm[i].content = c ? c : "";
        }
        enum wk_status st = wk_chat_render(m, tok, cm, (int32_t)n, add_generation_prompt, out, err);
        wk_free(cm);
        return st;
    }
    size_t tlen;
    if (!wk_model_chat_template(m, &tlen)) {
        const char *what = json_array_size(r->tools) ? "tools" : r->think >= 0 ? "thinking" : "tool calls";
        return wk_error_set(err, WK_E_UNSUPPORTED,
                            "this model has no chat template to render %s with (its chats use %s)", what,
                            wk_model_chat_format(m) == WK_CHAT_NONE || wk_model_chat_format(m) == WK_CHAT_CHATML_IF_TEMPLATE
                                ? "raw completion"
                                : "a format built into wick");
    }
    json_t *vars = json_object(), *list = json_array();
    enum wk_status st = vars && list ? WK_OK : WK_E_NOMEM;
    /* gpt-oss's template reads the thinking as message.thinking */
    const char *tpl = wk_model_chat_template(m, &tlen);
    const bool thinking_too = memmem(tpl, tlen, "message.thinking", 16) != NULL;
    json_array_foreach(r->messages, i, msg) {
        if (!st && json_array_append_new(list, hf_message(msg, thinking_too))) st = WK_E_NOMEM;
    }
    if (!st && json_object_set_new(vars, "messages", list)) st = WK_E_NOMEM;
    else if (st) json_decref(list);
    if (!st && json_array_size(r->tools) > 0) json_object_set(vars, "tools", (json_t *)r->tools);
    /* enable_thinking (Qwen 3, SmolLM3, ...), and thinking, the same switch
     * under the name Granite 3.2/3.3's and DeepSeek V3.1's templates read */
    if (!st && r->think >= 0) json_object_set_new(vars, "enable_thinking", json_boolean(r->think > 0));
    if (!st && r->think >= 0) json_object_set_new(vars, "thinking", json_boolean(r->think > 0));
    if (!st && r->kwargs) json_object_update(vars, (json_t *)r->kwargs);
    if (!st) st = wk_chat_render_jinja(m, tok, vars, add_generation_prompt, out, err);
    else wk_error_set(err, st, "out of memory");
    json_decref(vars);
    return st;
}

bool wk_model_can_think(const struct wk_model *m)
{
    if (wk_model_chat_format(m) == WK_CHAT_QWEN3) return true;
    size_t n;
    const char *t = wk_model_chat_template(m, &n);
    static const char *const marks[] = {"enable_thinking", "reasoning_content", "<think>", "<|channel|>analysis"};
    for (size_t k = 0; t && k < WK_ARRAY_LEN(marks); k++)
        if (memmem(t, n, marks[k], strlen(marks[k]))) return true;
    return false;
}

bool wk_prompt_opens_think(const struct wk_prompt *p)
{
    if (p->n == 0) return false;
    const struct wk_prompt_segment *s = &p->segs[p->n - 1];
    size_t n = s->len;
    while (n && (s->text[n - 1] == '\n' || s->text[n - 1] == ' ')) n--;
    return s->scaffold && n >= 7 && memcmp(s->text + n - 7, "<think>", 7) == 0;
}

json_t *wk_chat_messages_json(const struct wk_chat_message *msgs, int32_t n)
{
    json_t *arr = json_array();
    for (int32_t i = 0; arr && i < n; i++)
        if (json_array_append_new(arr, json_pack("{s:s, s:s}", "role", msgs[i].role, "content", msgs[i].content)))
            json_decref(arr), arr = NULL;
    return arr;
}
