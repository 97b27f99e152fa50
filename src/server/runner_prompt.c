/*
 * runner_prompt.c - a generation request's prompt in the runner: its
 * conversation rendered through the model's template (Go or Jinja), the
 * oldest messages dropped to fit the context where the request asks for
 * it (Ollama's truncate), and a long prompt's token count bounded without
 * tokenizing it whole.
 */
#include "server_internal.h"

#include "../runtime/wk_gotmpl.h"
#include "../runtime/wk_runtime.h"

#include <string.h>

bool srv_prompt_surely_longer(const struct wk_tokenizer *tok, const struct wk_prompt *p, int64_t limit, int64_t *counted)
{
    struct wk_tokens t = {0};
    *counted = 0;
    for (int32_t i = 0; i < p->n && *counted <= limit; i++) {
        const char *s = p->segs[i].text;
        size_t n = p->segs[i].len;
        while (n > 0 && *counted <= limit) {
            size_t k = WK_MIN(n, (size_t)SRV_COUNT_PIECE);
            if (k < n) { /* before a space or a newline, else at a character's start */
                size_t c = k;
                while (c > k / 2 && s[c] != ' ' && s[c] != '\n') c--;
                if (c > k / 2) k = c;
                else while (k > 1 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
            }
            t.n = 0;
            if (wk_tokenizer_encode(tok, s, k, p->segs[i].scaffold, &t)) break; /* out of memory: count exactly later */
            *counted += t.n;
            s += k, n -= k;
        }
    }
    wk_tokens_deinit(&t);
    return *counted > limit;
}


enum wk_status srv_render_messages(const struct srv_chat_render *r, json_t *msgs, struct wk_prompt *out,
                                   struct wk_error *err)
{
    json_t *tpl = json_object_get(r->req, "template");
    enum wk_status st;
    if (json_is_string(tpl)) { /* a Modelfile's or the request's Go TEMPLATE */
        struct wk_gotmpl *t = NULL;
        st = wk_gotmpl_parse(json_string_value(tpl), json_string_length(tpl), &t, err);
        if (!st) st = wk_chat_render_go(r->tok, t, msgs, r->tools, out, err);
        wk_gotmpl_free(t);
        return st;
    }
    json_t *kw = srv_harmony_kwargs(r->effort, json_object_get(r->req, "template_kwargs"));
    struct wk_chat_request cr = {.messages = msgs, .tools = r->tools, .think = r->think, .add_generation_prompt = true,
                                 .kwargs = kw};
    st = wk_chat_render_request(r->model, r->tok, &cr, out, err);
    json_decref(kw);
    return st;
}

/* Whether prompt p is under n_ctx tokens (room for one generated token):
 * a bound from its bytes first, a long one counted in pieces, else
 * tokenized; its ids into *keep (when not NULL) when it fits. */
static bool fits(const struct wk_tokenizer *tok, const struct wk_prompt *p, int32_t n_ctx, struct wk_tokens *keep)
{
    size_t bytes = 0;
    for (int32_t i = 0; i < p->n; i++) bytes += p->segs[i].len;
    if (wk_tokenizer_min_tokens(tok, bytes) >= n_ctx) return false;
    int64_t counted;
    if (bytes > SRV_COUNT_PIECE && srv_prompt_surely_longer(tok, p, n_ctx + n_ctx / 8 + 64, &counted)) return false;
    struct wk_tokens ids = {0};
    bool ok = !wk_prompt_tokenize(tok, p, &ids) && ids.n < n_ctx;
    if (ok && keep) *keep = ids;
    else wk_tokens_deinit(&ids);
    return ok;
}

/* msgs [from, n) after the system messages before from (a new array). */
static json_t *suffix_with_system(json_t *msgs, size_t from)
{
    json_t *sub = json_array();
    for (size_t k = 0; k < json_array_size(msgs); k++) {
        json_t *m = json_array_get(msgs, k);
        if (k >= from || !strcmp(json_string_value(json_object_get(m, "role")) ?: "", "system"))
            json_array_append(sub, m);
    }
    return sub;
}

/* msgs from `from` on (with the system messages before it) rendered into
 * *out; WK_E_INVALID: the template refused that run (a role order it
 * raises on, as Mistral's and Llama 2's do when it starts at an answer). */
static enum wk_status render_from(const struct srv_chat_render *r, json_t *msgs, size_t from, struct wk_prompt *out,
                                  struct wk_error *err)
{
    json_t *sub = suffix_with_system(msgs, from);
    *out = (struct wk_prompt){0};
    enum wk_status st = sub ? srv_render_messages(r, sub, out, err) : wk_error_set(err, WK_E_NOMEM, "out of memory");
    json_decref(sub);
    if (st) wk_prompt_deinit(out), *out = (struct wk_prompt){0};
    return st;
}

enum wk_status srv_fit_history(const struct srv_chat_render *r, json_t *msgs, int32_t n_ctx, int32_t reserve,
                               struct wk_prompt *prompt, struct wk_tokens *ids, struct wk_error *err)
{
    const size_t n = json_array_size(msgs);
    const int32_t limit = n_ctx - WK_MAX(0, WK_MIN(reserve, n_ctx / 2)); /* room left for the answer */
    if (n < 2 || fits(r->tok, prompt, limit, ids)) return WK_OK; /* its ids kept: not tokenized twice */
    /* as Ollama's chatPrompt (server/prompt.go) the longest run of recent messages that fits, with
     * the system messages before it; found by bisection (a run fits less the longer it is), a start
     * the template refuses skipped for the next; none: the last message alone */
    size_t lo = 0, hi = n - 1, best = n;
    struct wk_error e2;
    while (lo <= hi) {
        size_t mid = lo + (hi - lo) / 2, j = mid;
        struct wk_prompt p;
        enum wk_status st = WK_E_INVALID;
        while (j <= hi && (st = render_from(r, msgs, j, &p, &e2)) == WK_E_INVALID) j++;
        if (st && st != WK_E_INVALID) return wk_error_set(err, st, "%s", e2.msg);
        if (j > hi) { /* nothing in [mid, hi] renders */
            if (mid == 0) break;
            hi = mid - 1;
            continue;
        }
        const bool ok = fits(r->tok, &p, limit, NULL);
        wk_prompt_deinit(&p);
        if (ok) {
            best = j;
            if (mid == 0) break;
            hi = mid - 1;
        } else {
            lo = j + 1;
        }
    }
    struct wk_prompt kept;
    enum wk_status st = render_from(r, msgs, best < n ? best : n - 1, &kept, err);
    if (st) return st;
    wk_prompt_deinit(prompt);
    *prompt = kept;
    return WK_OK;
}

/* Whether p starts with a segment that is the tokenizer's BOS, added as
 * the tokenizer adds it (not text of the conversation). */
static bool starts_with_bos(const struct wk_tokenizer *tok, const struct wk_prompt *p)
{
    size_t n;
    const int32_t bos = wk_tokenizer_bos(tok);
    const char *piece = bos >= 0 && wk_tokenizer_add_bos(tok) ? wk_tokenizer_piece(tok, bos, &n) : NULL;
    return piece && p->n > 0 && p->segs[0].scaffold && p->segs[0].len == n && !memcmp(p->segs[0].text, piece, n);
}

enum wk_status srv_context_prompt(const struct wk_tokenizer *tok, const json_t *context, struct wk_prompt *p,
                                  struct wk_error *err)
{
    if (json_array_size(context) == 0) return WK_OK;
    struct wk_buf b = {0};
    char buf[256];
    size_t i;
    json_t *id;
    json_array_foreach(context, i, id) {
        json_int_t v = json_integer_value(id);
        if (!json_is_integer(id) || v < 0 || v >= wk_tokenizer_n_vocab(tok)) {
            wk_free(b.p);
            return wk_error_set(err, WK_E_INVALID, "context: item %zu is not a token id of this model (0 to %d)", i,
                                wk_tokenizer_n_vocab(tok) - 1);
        }
        size_t n = wk_tokenizer_token_bytes(tok, (int32_t)v, true, buf, sizeof buf);
        if (!wk_buf_add(&b, buf, WK_MIN(n, sizeof buf))) {
            wk_free(b.p);
            return wk_error_set(err, WK_E_NOMEM, "out of memory");
        }
    }
    /* a segment of its own after the BOS (control tokens in it recognised, as Ollama tokenizes the
     * joined text with its special tokens) */
    const int32_t at = starts_with_bos(tok, p) ? 1 : 0;
    enum wk_status st = wk_prompt_append(p, b.p ? b.p : "", b.len, true);
    wk_free(b.p);
    if (st) return wk_error_set(err, st, "out of memory");
    struct wk_prompt_segment seg = p->segs[p->n - 1];
    memmove(p->segs + at + 1, p->segs + at, (size_t)(p->n - 1 - at) * sizeof *p->segs);
    p->segs[at] = seg;
    return WK_OK;
}

enum wk_status srv_prompt_text(const struct wk_tokenizer *tok, const struct wk_prompt *p, struct wk_buf *out,
                               struct wk_error *err)
{
    for (int32_t i = starts_with_bos(tok, p) ? 1 : 0; i < p->n; i++)
        if (!wk_buf_add(out, p->segs[i].text, p->segs[i].len)) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    return WK_OK;
}

json_t *srv_context_ids(const struct wk_tokenizer *tok, const struct wk_buf *text, json_t *fin)
{
    struct wk_tokens ids = {0};
    json_t *a = json_array();
    if (a && !wk_tokenizer_encode(tok, text->p ? text->p : "", text->len, true, &ids))
        for (int64_t i = 0; i < ids.n; i++) json_array_append_new(a, json_integer(ids.ids[i]));
    wk_tokens_deinit(&ids);
    if (a) json_object_set_new(fin, "context", a);
    return fin;
}
