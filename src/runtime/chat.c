/*
 * chat.c - conversation to prompt: each family's turn format, rendered as
 * segments marked scaffolding (control tokens allowed) or content (always
 * literal text, so a user typing "<eos>" gets the characters, not the
 * token).
 *
 * Gemma 3 follows the chat template shipped in its tokenizer_config.json:
 *   <bos><start_of_turn>user\n{system}\n\n{user}<end_of_turn>\n
 *   <start_of_turn>model\n{assistant}<end_of_turn>\n ... <start_of_turn>model\n
 * with every message's content trimmed of surrounding whitespace.
 *
 * ChatML (SmolLM2, Qwen 2 / 2.5 and others whose template uses
 * <|im_start|>):
 *   <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n
 * Some templates add a default system message when the conversation has
 * none (SmolLM2's "You are a helpful AI assistant named SmolLM, ...",
 * Qwen 2.5's "You are Qwen, created by Alibaba Cloud. You are a helpful
 * assistant."); it is read from the model's chat template text, where it
 * stands as one string literal holding a whole system turn. Where the
 * template knows <tool_response> (Qwen 2.5), consecutive tool messages
 * become one user turn of <tool_response> blocks, as it renders them.
 *
 * Qwen 3 follows its own template (tokenizer_config.json of Qwen/Qwen3-*),
 * with enable_thinking=false: ChatML turns; an assistant message's
 * "<think>...</think>" part is cut from history (kept, re-wrapped, only
 * for an assistant turn after the last user query that is the last
 * message or has reasoning); consecutive tool messages become one user
 * turn of <tool_response> blocks; the generation prompt is
 * "<|im_start|>assistant\n<think>\n\n</think>\n\n" (the empty block only
 * where the template reads enable_thinking: Qwen3-*-2507 Instruct has no
 * thinking and no block). The prompt asks for hide_thinking.
 *
 * GLM-4 (GLM-4-MoE-Lite): "[gMASK]<sop>", then <|{role}|>\n{content} for
 * each message (a tool result's role is observation), then
 * "<|assistant|>" to generate: the turns of GLM-4's chat templates,
 * without the tool declarations and reasoning handling of the released
 * GLM-4.7 template (tests/golden/glm4-moe-lite's template is this).
 */
#include "wk_gotmpl.h"
#include "wk_jinja.h"
#include "wk_runtime.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

void wk_prompt_deinit(struct wk_prompt *p)
{
    if (!p) return;
    for (int32_t i = 0; i < p->n; i++) wk_free(p->segs[i].text);
    wk_free(p->segs);
    memset(p, 0, sizeof *p);
}

enum wk_status wk_prompt_append(struct wk_prompt *p, const char *text, size_t len, bool scaffold)
{
    if (p->n == p->cap) {
        int32_t cap = p->cap ? p->cap * 2 : 16;
        struct wk_prompt_segment *s = wk_realloc(p->segs, (size_t)cap * sizeof *s);
        if (!s) return WK_E_NOMEM;
        p->segs = s;
        p->cap = cap;
    }
    char *copy = wk_memdup0(text, len); /* NUL bytes and all: len is what the tokenizer reads */
    if (!copy) return WK_E_NOMEM;
    p->segs[p->n++] = (struct wk_prompt_segment){.text = copy, .len = len, .scaffold = scaffold};
    return WK_OK;
}

static void trim(const char *s, const char **start, size_t *len)
{
    size_t n = strlen(s), a = 0;
    while (a < n && isspace((unsigned char)s[a])) a++;
    while (n > a && isspace((unsigned char)s[n - 1])) n--;
    *start = s + a;
    *len = n - a;
}

static enum wk_status render_gemma(const struct wk_chat_message *msgs, int32_t n,
                                   bool add_generation_prompt, struct wk_prompt *out,
                                   struct wk_error *err)
{
#define S(text) wk_prompt_append(out, text, strlen(text), true)
    enum wk_status st = S("<bos>");
    const char *system = NULL;
    int32_t first = 0;
    if (n > 0 && strcmp(msgs[0].role, "system") == 0) {
        system = msgs[0].content;
        first = 1;
    }
    for (int32_t i = first; i < n && !st; i++) {
        const char *role = msgs[i].role;
        bool user_turn = (i - first) % 2 == 0;
        if (strcmp(role, user_turn ? "user" : "assistant") != 0)
            return wk_error_set(err, WK_E_INVALID,
                                "message %d has role \"%s\": Gemma conversations must alternate "
                                "user and assistant after an optional system message",
                                i, role);
        st = S(user_turn ? "<start_of_turn>user\n" : "<start_of_turn>model\n");
        if (!st && system && i == first) {
            const char *t;
            size_t len;
            trim(system, &t, &len);
            st = wk_prompt_append(out, t, len, false);
            if (!st) st = wk_prompt_append(out, "\n\n", 2, false);
        }
        const char *t;
        size_t len;
        trim(msgs[i].content, &t, &len);
        if (!st) st = wk_prompt_append(out, t, len, false);
        if (!st) st = S("<end_of_turn>\n");
    }
    if (!st && add_generation_prompt) st = S("<start_of_turn>model\n");
#undef S
    return st ? wk_error_set(err, st, "out of memory") : WK_OK;
}

/* The Jinja string literal starting at t [n] (at its quote) decoded into
 * out [cap] (its escapes \n, \t, \r, \\, \' and \" as Python reads them,
 * others kept as written), its length in *out_len; returns the bytes
 * consumed, or -1 when unterminated. */
static ptrdiff_t jinja_literal(const char *t, size_t n, char *out, size_t cap, size_t *out_len)
{
    const char q = t[0];
    size_t i = 1, o = 0;
    while (i < n && t[i] != q) {
        char c = t[i++];
        if (c == '\\' && i < n) {
            char e = t[i++];
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
            if (e != 'n' && e != 't' && e != 'r' && e != '\\' && e != '\'' && e != '"' && o + 1 < cap) out[o++] = '\\';
        }
        if (o + 1 < cap) out[o++] = c;
    }
    if (i >= n) return -1;
    out[o] = 0;
    *out_len = o;
    return (ptrdiff_t)(i + 1);
}

/* A whole system turn "<|im_start|>system\n...<|im_end|>" at the start of
 * text [n]: its content (malloc'd), or NULL. */
static char *system_turn(const char *text, size_t n)
{
    static const char head[] = "<|im_start|>system\n", tail[] = "<|im_end|>";
    const size_t h = sizeof head - 1, tl = sizeof tail - 1;
    if (n < h + tl || memcmp(text, head, h) != 0) return NULL;
    for (size_t i = h; i + tl <= n; i++)
        if (memcmp(text + i, tail, tl) == 0) return wk_strndup(text + h, i - h);
    return NULL;
}

/*
 * The default system message of a ChatML template, or NULL (malloc'd):
 * the first whole system turn "<|im_start|>system\n...<|im_end|>" that
 * the template writes as one piece after it has looked at messages[0],
 * either one string literal inside {{ }} or {% %} (SmolLM2's "You are a
 * helpful AI assistant named SmolLM, ...", Qwen 2.5's "You are Qwen,
 * created by Alibaba Cloud. ..." with its \n escaped) or plain template
 * text between tags. A system turn built around messages[0]'s content is
 * several pieces joined by +, never one. Comments {# #} are skipped, and
 * quotes count only inside tags, so an apostrophe in text or a comment
 * does not start a literal.
 */
static char *chatml_default_system(const struct wk_model *m)
{
    size_t len;
    const char *t = wk_model_chat_template(m, &len);
    if (!t) return NULL;
    char *buf = wk_malloc(len + 1);
    if (!buf) return NULL;
    char *res = NULL;
    bool seen_first = false;
    size_t i = 0;
    while (i < len && !res) {
        if (len - i >= 2 && t[i] == '{' && t[i + 1] == '#') { /* a comment */
            const char *end = NULL;
            for (size_t j = i + 2; j + 1 < len && !end; j++)
                if (t[j] == '#' && t[j + 1] == '}') end = t + j + 2;
            if (!end) break;
            i = (size_t)(end - t);
            continue;
        }
        if (len - i >= 2 && t[i] == '{' && (t[i + 1] == '{' || t[i + 1] == '%')) { /* a tag: its literals */
            const char close = t[i + 1] == '{' ? '}' : '%';
            i += 2;
            while (i < len && !res && !(len - i >= 2 && t[i] == close && t[i + 1] == '}')) {
                if (!seen_first && len - i >= 11 && memcmp(t + i, "messages[0]", 11) == 0) seen_first = true;
                if (t[i] != '\'' && t[i] != '"') {
                    i++;
                    continue;
                }
                size_t n;
                ptrdiff_t used = jinja_literal(t + i, len - i, buf, len + 1, &n);
                if (used < 0) {
                    i = len;
                    break;
                }
                i += (size_t)used;
                if (seen_first) res = system_turn(buf, n);
            }
            i += 2;
            continue;
        }
        /* plain text up to the next tag or comment */
        size_t j = i;
        while (j < len && !(len - j >= 2 && t[j] == '{' && (t[j + 1] == '{' || t[j + 1] == '%' || t[j + 1] == '#'))) j++;
        for (size_t k = i; seen_first && k < j && !res; k++)
            if (t[k] == '<') res = system_turn(t + k, j - k);
        i = j;
    }
    wk_free(buf);
    return res;
}

static bool is_chatml(const struct wk_model *m)
{
    size_t len;
    const char *t = wk_model_chat_template(m, &len);
    const char *needle = "<|im_start|>";
    size_t n = strlen(needle);
    for (size_t i = 0; t && i + n <= len; i++)
        if (memcmp(t + i, needle, n) == 0) return true;
    return false;
}

/* s [*n] without leading (lead) and trailing (trail) newlines. */
static void strip_nl(const char **s, size_t *n, bool lead, bool trail)
{
    while (lead && *n && **s == '\n') (*s)++, (*n)--;
    while (trail && *n && (*s)[*n - 1] == '\n') (*n)--;
}

/* The last occurrence of needle in s [n], or NULL. */
static const char *find_last(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = n >= k ? n - k + 1 : 0; i-- > 0;)
        if (memcmp(s + i, needle, k) == 0) return s + i;
    return NULL;
}

static bool has_prefix_suffix(const char *s, const char *pre, const char *suf)
{
    size_t n = strlen(s), a = strlen(pre), b = strlen(suf);
    return n >= a && n >= b && memcmp(s, pre, a) == 0 && memcmp(s + n - b, suf, b) == 0;
}

static enum wk_status render_chatml(const struct wk_model *g, const struct wk_chat_message *msgs,
                                    int32_t n, bool add_generation_prompt, struct wk_prompt *out,
                                    struct wk_error *err)
{
    enum wk_status st = WK_OK;
    if (n == 0 || strcmp(msgs[0].role, "system") != 0) {
        char *sys = chatml_default_system(g);
        if (sys) {
            st = wk_prompt_append(out, "<|im_start|>system\n", 19, true);
            if (!st) st = wk_prompt_append(out, sys, strlen(sys), false);
            if (!st) st = wk_prompt_append(out, "<|im_end|>\n", 11, true);
            wk_free(sys);
        }
    }
    size_t tlen;
    const char *tpl = wk_model_chat_template(g, &tlen);
    /* Qwen's tool turns; a template with turns of role tool (Hermes) has its own */
    const bool tool_response = tpl && find_last(tpl, tlen, "<tool_response>") && !find_last(tpl, tlen, "<|im_start|>tool");
    for (int32_t i = 0; i < n && !st; i++) {
        const char *role = msgs[i].role;
        if (strchr(role, '<') || strchr(role, '\n'))
            return wk_error_set(err, WK_E_INVALID, "message %d has an invalid role \"%s\"", i, role);
        if (tool_response && strcmp(role, "tool") == 0) {
            /* Qwen's: a run of tool results is one user turn of <tool_response> blocks */
            if (i == 0 || strcmp(msgs[i - 1].role, "tool") != 0) st = wk_prompt_append(out, "<|im_start|>user", 16, true);
            if (!st) st = wk_prompt_append(out, "\n<tool_response>\n", 17, true);
            if (!st) st = wk_prompt_append(out, msgs[i].content, strlen(msgs[i].content), false);
            if (!st) st = wk_prompt_append(out, "\n</tool_response>", 17, true);
            if (!st && (i == n - 1 || strcmp(msgs[i + 1].role, "tool") != 0))
                st = wk_prompt_append(out, "<|im_end|>\n", 11, true);
            continue;
        }
        st = wk_prompt_append(out, "<|im_start|>", 12, true);
        if (!st) st = wk_prompt_append(out, role, strlen(role), true);
        if (!st) st = wk_prompt_append(out, "\n", 1, true);
        if (!st) st = wk_prompt_append(out, msgs[i].content, strlen(msgs[i].content), false);
        if (!st) st = wk_prompt_append(out, "<|im_end|>\n", 11, true);
    }
    if (!st && add_generation_prompt) st = wk_prompt_append(out, "<|im_start|>assistant\n", 22, true);
    return st ? wk_error_set(err, st, "out of memory") : WK_OK;
}

/* The text of token id, control tokens as their text, into a JSON string ("" for none). */
static json_t *token_text(const struct wk_tokenizer *tok, int32_t id)
{
    char buf[256];
    size_t n = id >= 0 ? wk_tokenizer_token_bytes(tok, id, true, buf, sizeof buf) : 0;
    return json_stringn(buf, n < sizeof buf ? n : 0);
}

/* A run of rendered text: wk_jinja_run and wk_gotmpl_run have this layout. */
struct run {
    size_t off, len;
    bool content;
};
_Static_assert(sizeof(struct run) == sizeof(struct wk_jinja_run) &&
               offsetof(struct run, content) == offsetof(struct wk_jinja_run, content) &&
               sizeof(struct run) == sizeof(struct wk_gotmpl_run) &&
               offsetof(struct run, content) == offsetof(struct wk_gotmpl_run, content),
               "run layouts");

/* A rendered template's text [len] and runs as prompt segments (content
 * runs literal), after a BOS where the tokenizer adds one and the text
 * does not already start with it as scaffolding (as llama.cpp and Ollama
 * tokenize a rendered prompt with add_special). Errors: WK_E_NOMEM. */
static enum wk_status append_rendered(const struct wk_tokenizer *tok, const char *text, size_t len,
                                      const struct run *runs, size_t n_runs, struct wk_prompt *out)
{
    enum wk_status st = WK_OK;
    char bos_text[256];
    const int32_t bos_id = wk_tokenizer_bos(tok);
    size_t bos_n = bos_id >= 0 ? wk_tokenizer_token_bytes(tok, bos_id, true, bos_text, sizeof bos_text) : 0;
    if (bos_id >= 0 && wk_tokenizer_add_bos(tok) && bos_n < sizeof bos_text &&
        !(n_runs && !runs[0].content && len >= bos_n && memcmp(text, bos_text, bos_n) == 0))
        st = wk_prompt_append(out, bos_text, bos_n, true);
    for (size_t i = 0; i < n_runs && !st; i++)
        st = wk_prompt_append(out, text + runs[i].off, runs[i].len, !runs[i].content);
    return st;
}

/*
 * The conversation through the model's own chat template with the Jinja
 * engine (wk_jinja.h: transformers' semantics), variables messages (role
 * and content), add_generation_prompt, bos_token and eos_token. The
 * output's runs that came from message content are literal segments, the
 * rest scaffolding (control tokens recognised), so a user typing
 * "<|im_end|>" still gets characters. Where the tokenizer adds a BOS and
 * the template did not write one, a BOS segment comes first (as llama.cpp
 * adds it). A ChatML template that does not parse falls back to the
 * built-in ChatML (render_chatml), as llama.cpp falls back to chatml.
 * Errors: WK_E_INVALID naming the template's message when it raises or
 * fails (raise_exception, an undefined value), WK_E_UNSUPPORTED when
 * another template does not parse, WK_E_RANGE past its limits, WK_E_NOMEM.
 */
/* Renders the parsed template t over vars (given add_generation_prompt,
 * and the model's bos_token / eos_token unless vars sets them) into out. */
static enum wk_status render_parsed(const struct wk_jinja *t, const struct wk_tokenizer *tok, json_t *vars,
                                    bool add_generation_prompt, struct wk_prompt *out, struct wk_error *err)
{
    struct wk_error e;
    json_object_set_new(vars, "add_generation_prompt", json_boolean(add_generation_prompt));
    if (!json_object_get(vars, "bos_token")) json_object_set_new(vars, "bos_token", token_text(tok, wk_tokenizer_bos(tok)));
    if (!json_object_get(vars, "eos_token")) json_object_set_new(vars, "eos_token", token_text(tok, wk_tokenizer_eos(tok)));
    char *text = NULL;
    size_t len = 0, n_runs = 0;
    struct wk_jinja_run *runs = NULL;
    enum wk_status st = wk_jinja_render_runs(t, vars, &text, &len, &runs, &n_runs, &e);
    if (st) return wk_error_set(err, st, "the model's chat template: %s", e.msg);
    st = append_rendered(tok, text, len, (const struct run *)runs, n_runs, out);
    wk_free(text);
    wk_free(runs);
    return st ? wk_error_set(err, st, "out of memory") : WK_OK;
}

enum wk_status wk_chat_render_jinja(const struct wk_model *m, const struct wk_tokenizer *tok, json_t *vars,
                                    bool add_generation_prompt, struct wk_prompt *out, struct wk_error *err)
{
    size_t tlen;
    const char *tpl = wk_model_chat_template(m, &tlen);
    if (!tpl) return wk_error_set(err, WK_E_UNSUPPORTED, "the model has no chat template");
    struct wk_jinja *t = NULL;
    struct wk_error e;
    enum wk_status st = wk_jinja_parse(tpl, tlen, &t, &e);
    if (st) return wk_error_set(err, st == WK_E_FORMAT ? WK_E_UNSUPPORTED : st, "the model's chat template: %s", e.msg);
    st = render_parsed(t, tok, vars, add_generation_prompt, out, err);
    wk_jinja_free(t);
    return st;
}

static enum wk_status render_template(const struct wk_model *m, const struct wk_tokenizer *tok,
                                      const struct wk_chat_message *msgs, int32_t n, bool add_generation_prompt,
                                      struct wk_prompt *out, struct wk_error *err)
{
    size_t tlen;
    const char *tpl = wk_model_chat_template(m, &tlen);
    struct wk_jinja *t = NULL;
    struct wk_error e;
    enum wk_status st = wk_jinja_parse(tpl, tlen, &t, &e);
    if (st == WK_E_FORMAT && is_chatml(m)) /* a broken ChatML template: the built-in ChatML, as llama.cpp falls back */
        return render_chatml(m, msgs, n, add_generation_prompt, out, err);
    if (st)
        return wk_error_set(err, st == WK_E_FORMAT ? WK_E_UNSUPPORTED : st, "the model's chat template: %s", e.msg);
    json_t *vars = json_object();
    json_object_set_new(vars, "messages", wk_chat_messages_json(msgs, n));
    st = render_parsed(t, tok, vars, add_generation_prompt, out, err);
    json_decref(vars);
    wk_jinja_free(t);
    return st;
}

enum wk_status wk_chat_render_go(const struct wk_tokenizer *tok, const struct wk_gotmpl *t, const json_t *messages,
                                 const json_t *tools, struct wk_prompt *out, struct wk_error *err)
{
    char *text = NULL;
    size_t len = 0, n_runs = 0;
    struct wk_gotmpl_run *runs = NULL;
    enum wk_status st = wk_gotmpl_render_chat(t, messages, tools, &text, &len, &runs, &n_runs, err);
    if (st) return st;
    st = append_rendered(tok, text, len, (const struct run *)runs, n_runs, out);
    wk_free(text);
    wk_free(runs);
    return st ? wk_error_set(err, st, "out of memory") : WK_OK;
}

/* Token id's piece appended as scaffolding (nothing for id -1). */
static enum wk_status append_token(struct wk_prompt *out, const struct wk_tokenizer *tok, int32_t id)
{
    size_t n;
    const char *p = id >= 0 ? wk_tokenizer_piece(tok, id, &n) : NULL;
    return p ? wk_prompt_append(out, p, n, true) : WK_OK;
}

/* The BOS the tokenizer adds to a prompt, or -1. */
static int32_t added_bos(const struct wk_tokenizer *tok) { return wk_tokenizer_add_bos(tok) ? wk_tokenizer_bos(tok) : -1; }

enum wk_status wk_prompt_fim(const struct wk_tokenizer *tok, const struct wk_gotmpl *t, const char *prefix,
                             size_t plen, const char *suffix, size_t slen, struct wk_prompt *out,
                             struct wk_error *err)
{
    if (t) {
        json_t *data = json_pack("{s:s%, s:s%, s:s, s:b, s:s, s:b}", "Prompt", prefix, plen, "Suffix", suffix, slen,
                                 "Response", "", "Think", 0, "ThinkLevel", "", "IsThinkSet", 0);
        if (!data) return wk_error_set(err, WK_E_INVALID, "the prefix and suffix must be valid UTF-8");
        char *text = NULL;
        size_t len = 0, n_runs = 0;
        struct wk_gotmpl_run *runs = NULL;
        enum wk_status st = wk_gotmpl_render_runs(t, data, &text, &len, &runs, &n_runs, err);
        json_decref(data);
        if (!st && (st = append_rendered(tok, text, len, (const struct run *)runs, n_runs, out)))
            wk_error_set(err, st, "out of memory");
        wk_free(text);
        wk_free(runs);
        return st;
    }
    int32_t pre = wk_tokenizer_fim(tok, WK_FIM_PRE), suf = wk_tokenizer_fim(tok, WK_FIM_SUF);
    int32_t mid = wk_tokenizer_fim(tok, WK_FIM_MID);
    if (pre < 0 || suf < 0 || mid < 0)
        return wk_error_set(err, WK_E_UNSUPPORTED, "this model does not support insert (a suffix): its vocabulary has "
                            "no fill-in-the-middle tokens, and its TEMPLATE does not use .Suffix");
    enum wk_status st = append_token(out, tok, added_bos(tok));
    if (!st) st = append_token(out, tok, pre);
    if (!st) st = wk_prompt_append(out, prefix, plen, false);
    if (!st) st = append_token(out, tok, suf);
    if (!st) st = wk_prompt_append(out, suffix, slen, false);
    if (!st) st = append_token(out, tok, mid);
    return st ? wk_error_set(err, st, "out of memory") : WK_OK;
}

static enum wk_status render_qwen3(const struct wk_model *m, const struct wk_chat_message *msgs,
                                   int32_t n, bool add_generation_prompt, struct wk_prompt *out,
                                   struct wk_error *err)
{
#define S(text) wk_prompt_append(out, text, strlen(text), true)
#define C(text, len) wk_prompt_append(out, text, len, false)
    enum wk_status st = WK_OK;
    int32_t last_query = n - 1; /* the last user message that is not a tool response */
    for (int32_t i = n - 1; i >= 0; i--) {
        if (strcmp(msgs[i].role, "user") == 0 &&
            !has_prefix_suffix(msgs[i].content, "<tool_response>", "</tool_response>")) {
            last_query = i;
            break;
        }
    }
    for (int32_t i = 0; i < n && !st; i++) {
        const char *role = msgs[i].role, *c = msgs[i].content;
        size_t len = strlen(c);
        if (strcmp(role, "user") == 0 || strcmp(role, "system") == 0) {
            st = S("<|im_start|>");
            if (!st) st = S(role);
            if (!st) st = S("\n");
            if (!st) st = C(c, len);
            if (!st) st = S("<|im_end|>\n");
        } else if (strcmp(role, "assistant") == 0) {
            const char *r = "", *close = strstr(c, "</think>");
            size_t rlen = 0;
            if (close) { /* reasoning: before the first </think>, after the last <think> */
                r = c, rlen = (size_t)(close - c);
                strip_nl(&r, &rlen, false, true);
                const char *open = find_last(r, rlen, "<think>");
                if (open) rlen -= (size_t)(open + 7 - r), r = open + 7;
                strip_nl(&r, &rlen, true, false);
                const char *last = find_last(c, len, "</think>") + 8;
                len -= (size_t)(last - c), c = last;
                strip_nl(&c, &len, true, false);
            }
            if (i > last_query && (i == n - 1 || rlen > 0)) {
                strip_nl(&r, &rlen, true, true);
                strip_nl(&c, &len, true, false);
                st = S("<|im_start|>assistant\n<think>\n");
                if (!st) st = C(r, rlen);
                if (!st) st = S("\n</think>\n\n");
            } else {
                st = S("<|im_start|>assistant\n");
            }
            if (!st) st = C(c, len);
            if (!st) st = S("<|im_end|>\n");
        } else if (strcmp(role, "tool") == 0) {
            if (i == 0 || strcmp(msgs[i - 1].role, "tool") != 0) st = S("<|im_start|>user");
            if (!st) st = S("\n<tool_response>\n");
            if (!st) st = C(c, len);
            if (!st) st = S("\n</tool_response>");
            if (!st && (i == n - 1 || strcmp(msgs[i + 1].role, "tool") != 0)) st = S("<|im_end|>\n");
        } else {
            char r[64];
            wk_str_printable(role, strlen(role), r, sizeof r);
            return wk_error_set(err, WK_E_INVALID,
                                "message %d has role \"%s\": Qwen 3 takes system, user, assistant "
                                "and tool",
                                i, r);
        }
    }
    size_t tlen;
    const char *tpl = wk_model_chat_template(m, &tlen);
    bool think_block = !tpl || find_last(tpl, tlen, "enable_thinking") != NULL;
    if (!st && add_generation_prompt) st = S("<|im_start|>assistant\n");
    if (!st && add_generation_prompt && think_block) st = S("<think>\n\n</think>\n\n");
    out->hide_thinking = true;
#undef S
#undef C
    return st ? wk_error_set(err, st, "out of memory") : WK_OK;
}

static enum wk_status render_glm4(const struct wk_chat_message *msgs, int32_t n, bool add_generation_prompt,
                                  struct wk_prompt *out, struct wk_error *err)
{
    enum wk_status st = wk_prompt_append(out, "[gMASK]<sop>", 12, true);
    for (int32_t i = 0; i < n && !st; i++) {
        const char *role = msgs[i].role;
        if (strcmp(role, "tool") == 0) role = "observation";
        if (strcmp(role, "system") != 0 && strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0 &&
            strcmp(role, "observation") != 0)
            return wk_error_set(err, WK_E_INVALID, "message %d has role \"%s\" (GLM-4 knows system, user, "
                                "assistant, tool)", i, msgs[i].role);
        char head[32];
        int len = snprintf(head, sizeof head, "<|%s|>\n", role);
        st = wk_prompt_append(out, head, (size_t)len, true);
        if (!st) st = wk_prompt_append(out, msgs[i].content, strlen(msgs[i].content), false);
    }
    if (!st && add_generation_prompt) st = wk_prompt_append(out, "<|assistant|>", 13, true);
    return st ? wk_error_set(err, st, "out of memory") : WK_OK;
}

/* A model without a chat template (a base model): raw completion, as
 * Ollama renders it with its default TEMPLATE "{{ .Prompt }}" (each user
 * message followed by the answer that came after it, system messages
 * left out). */
static enum wk_status render_raw_completion(const struct wk_tokenizer *tok, const struct wk_chat_message *msgs,
                                            int32_t n, struct wk_prompt *out, struct wk_error *err)
{
    static const char dflt[] = "{{ .Prompt }}";
    struct wk_gotmpl *t = NULL;
    json_t *arr = wk_chat_messages_json(msgs, n);
    enum wk_status st = arr ? wk_gotmpl_parse(dflt, sizeof dflt - 1, &t, err) : WK_E_NOMEM;
    if (!st) st = wk_chat_render_go(tok, t, arr, NULL, out, err);
    wk_gotmpl_free(t);
    json_decref(arr);
    return st == WK_E_NOMEM ? wk_error_set(err, st, "out of memory") : st;
}

enum wk_status wk_chat_render(const struct wk_model *m, const struct wk_tokenizer *tok,
                              const struct wk_chat_message *msgs, int32_t n_msgs,
                              bool add_generation_prompt, struct wk_prompt *out,
                              struct wk_error *err)
{
    for (int32_t i = 0; i < n_msgs; i++)
        if (!msgs[i].role || !msgs[i].content)
            return wk_error_set(err, WK_E_INVALID, "message %d has no role or content", i);
    switch (wk_model_chat_format(m)) {
    case WK_CHAT_GEMMA: /* Gemma 3 and 4: the Gemma 3 turn format (<start_of_turn>), as the tiny test models use */
        return render_gemma(msgs, n_msgs, add_generation_prompt, out, err);
    case WK_CHAT_QWEN3: return render_qwen3(m, msgs, n_msgs, add_generation_prompt, out, err);
    case WK_CHAT_GLM4: return render_glm4(msgs, n_msgs, add_generation_prompt, out, err);
    case WK_CHAT_CHATML_IF_TEMPLATE: {
        size_t tlen;
        if (!wk_model_chat_template(m, &tlen)) break;
        /* a role is template text, not content: no markup may ride in on it */
        for (int32_t i = 0; i < n_msgs; i++)
            if (strchr(msgs[i].role, '<') || strchr(msgs[i].role, '\n'))
                return wk_error_set(err, WK_E_INVALID, "message %d has an invalid role \"%s\"", i, msgs[i].role);
        return render_template(m, tok, msgs, n_msgs, add_generation_prompt, out, err);
    }
    case WK_CHAT_NONE: break;
    }
    return render_raw_completion(tok, msgs, n_msgs, out, err);
}

enum wk_status wk_prompt_tokenize(const struct wk_tokenizer *tok, const struct wk_prompt *p,
                                  struct wk_tokens *out)
{
    struct wk_text_span *spans = wk_malloc((size_t)(p->n ? p->n : 1) * sizeof *spans);
    if (!spans) return WK_E_NOMEM;
    for (int32_t i = 0; i < p->n; i++)
        spans[i] = (struct wk_text_span){p->segs[i].text, p->segs[i].len, p->segs[i].scaffold};
    enum wk_status st = wk_tokenizer_encode_spans(tok, spans, p->n, out);
    wk_free(spans);
    return st;
}

enum wk_status wk_prompt_raw(const struct wk_tokenizer *tok, const char *text, size_t len, bool special,
                             struct wk_prompt *out)
{
    enum wk_status st = append_token(out, tok, added_bos(tok));
    return st ? st : wk_prompt_append(out, text, len, special);
}

enum wk_status wk_tokenizer_for_model(const struct wk_model *m, struct wk_tokenizer **out,
                                      struct wk_error *err)
{
    const char *dir = wk_model_hf_dir(m);
    return dir ? wk_tokenizer_from_hf(dir, out, err) : wk_tokenizer_from_gguf(wk_model_gguf(m), out, err);
}
