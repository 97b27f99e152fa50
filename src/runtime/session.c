/*
 * session.c - one conversation's generation state: a context (KV cache)
 * plus the list of tokens the cache holds, so the next prompt reuses the
 * longest common prefix instead of prefilling it again.
 *
 * Invariant: cached.ids[0 .. cached.n) are exactly the tokens at positions
 * 0 .. n_past-1 of the context's KV cache.
 */
#include "wk_runtime.h"

#include <stdlib.h>
#include <string.h>

struct wk_session {
    const struct wk_model *m;
    const struct wk_tokenizer *tok;
    struct wk_context *ctx;
    struct wk_tokens cached;
    float *logits; /* [n_vocab] */
};

struct wk_generate_params wk_generate_params_default(void)
{
    return (struct wk_generate_params){
        .sampler = wk_sampler_params_default(), .num_predict = -1, .on_piece = NULL,
        .user = NULL, .cancel = NULL};
}

enum wk_status wk_session_create(const struct wk_model *m, const struct wk_tokenizer *tok,
                                 const struct wk_context_params *cp, struct wk_session **out,
                                 struct wk_error *err)
{
    *out = NULL;
    int32_t n_vocab = wk_model_hparams(m)->n_vocab;
    if (wk_tokenizer_n_vocab(tok) > n_vocab)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: the tokenizer has %d tokens but the model's embedding only %d rows",
                            wk_model_path(m), wk_tokenizer_n_vocab(tok), n_vocab);
    struct wk_session *s = wk_calloc(1, sizeof *s);
    if (!s) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    s->m = m;
    s->tok = tok;
    enum wk_status st = wk_context_create(m, cp, &s->ctx, err);
    if (st) {
        wk_free(s);
        return st;
    }
    s->logits = wk_malloc((size_t)wk_model_hparams(m)->n_vocab * sizeof(float));
    if (!s->logits) {
        wk_session_destroy(s);
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    *out = s;
    return WK_OK;
}

void wk_session_destroy(struct wk_session *s)
{
    if (!s) return;
    wk_context_destroy(s->ctx);
    wk_tokens_deinit(&s->cached);
    wk_free(s->logits);
    wk_free(s);
}

struct wk_context *wk_session_context(struct wk_session *s)
{
    return s->ctx;
}

/* Feeds tokens into the cache and records them. */
static enum wk_status feed(struct wk_session *s, const int32_t *ids, int32_t n,
                           const volatile bool *cancel, struct wk_error *err)
{
    int32_t before = wk_context_n_past(s->ctx);
    enum wk_status st = wk_context_decode(s->ctx, ids, n, s->logits, cancel, err);
    /* chunks completed before a cancellation are cached: keep the record true */
    int32_t added = wk_context_n_past(s->ctx) - before;
    for (int32_t i = 0; i < added; i++)
        if (wk_tokens_push(&s->cached, ids[i])) {
            wk_context_truncate(s->ctx, before + i);
            return wk_error_set(err, WK_E_NOMEM, "out of memory");
        }
    return st;
}

/*
 * The output side of a generation: decoded text goes through the stop
 * matcher (when there are stop strings) to on_piece, and each token's
 * logprobs wait until the text that completes the token is emitted, then
 * go to on_logprobs just before that text (so they stay aligned with the
 * bytes they describe, across UTF-8 buffering and stop-string hold-back);
 * the logprobs of tokens whose text is cut by a stop string are dropped.
 */
struct pending_lp {
    struct wk_token_logprobs lp;
    uint64_t end; /* decoded bytes once the token's text is complete */
};
struct output {
    const struct wk_generate_params *p;
    struct wk_stop_matcher stop;
    struct pending_lp *q; /* queued logprobs, oldest first */
    int32_t nq, capq;
    uint64_t decoded, emitted; /* bytes decoded so far, bytes passed to on_piece */
    char *text;                /* with p->collect: everything emitted */
    size_t text_len, text_cap;
    bool nomem;                /* collecting failed */
};

/* Hands on_logprobs the queued entries whose text ends within upto bytes. */
static void release_logprobs(struct output *o, uint64_t upto)
{
    int32_t k = 0;
    while (k < o->nq && o->q[k].end <= upto) {
        o->p->on_logprobs(o->p->user, &o->q[k].lp);
        k++;
    }
    memmove(o->q, o->q + k, (size_t)(o->nq - k) * sizeof *o->q);
    o->nq -= k;
}

/* Queues a token whose text is complete once end bytes are decoded.
 * Errors: WK_E_NOMEM. */
static enum wk_status queue_logprobs(struct output *o, const struct wk_token_logprobs *lp, uint64_t end)
{
    if (o->nq == o->capq) {
        int32_t cap = o->capq ? 2 * o->capq : 8;
        struct pending_lp *q = wk_realloc(o->q, (size_t)cap * sizeof *q);
        if (!q) return WK_E_NOMEM;
        o->q = q, o->capq = cap;
    }
    o->q[o->nq++] = (struct pending_lp){*lp, end};
    return WK_OK;
}

/* n bytes of text out of on_piece (buf) and into the collected answer,
 * logprobs first. Returns false when on_piece asks to stop or collecting
 * runs out of memory (o->nomem). */
static bool put(struct output *o, const char *buf, size_t n)
{
    if (o->p->on_logprobs) release_logprobs(o, o->emitted + n);
    o->emitted += n;
    if (n && o->p->collect) {
        if (o->text_len + n + 1 > o->text_cap) {
            size_t cap = (o->text_len + n + 1) * 2;
            char *t = wk_realloc(o->text, cap);
            if (!t) {
                o->nomem = true;
                return false;
            }
            o->text = t, o->text_cap = cap;
        }
        memcpy(o->text + o->text_len, buf, n);
        o->text_len += n;
    }
    return !n || !o->p->on_piece || o->p->on_piece(o->p->user, buf, n);
}

/* Passes decoded text on. Returns false when generation must end: a stop
 * string completed (*stopped), on_piece asked to stop, or no memory (*st). */
static bool emit(struct output *o, const char *text, size_t n, bool *stopped, enum wk_status *st,
                 struct wk_error *err)
{
    o->decoded += n;
    if (o->stop.n_stops == 0) return put(o, text, n);
    size_t out;
    if (wk_stop_matcher_push(&o->stop, text, n, &out, stopped)) {
        *st = wk_error_set(err, WK_E_NOMEM, "out of memory");
        return false;
    }
    bool go = put(o, o->stop.buf, out);
    wk_stop_matcher_consume(&o->stop, out);
    return go && !*stopped;
}

enum wk_status wk_session_generate(struct wk_session *s, const struct wk_tokens *prompt,
                                   const struct wk_generate_params *p,
                                   struct wk_generate_stats *stats, struct wk_error *err)
{
    memset(stats, 0, sizeof *stats);
    stats->done_reason = "stop";
    if (p->collect) *p->collect = NULL;
    if (p->collect_len) *p->collect_len = 0;
    int32_t n_ctx = wk_context_n_ctx(s->ctx);
    if (prompt->n < 1) return wk_error_set(err, WK_E_INVALID, "the prompt is empty");
    if (prompt->n >= n_ctx)
        return wk_error_set(err, WK_E_RANGE,
                            "the prompt is %lld tokens, which does not fit in the context of %d "
                            "tokens (leave room for at least one generated token)",
                            (long long)prompt->n, n_ctx);
    struct wk_sampler *sampler;
    enum wk_status st =
        wk_sampler_create(&p->sampler, wk_model_hparams(s->m)->n_vocab, n_ctx, &sampler, err);
    if (st) return st;
    /* penalties see the whole prompt, cached part included (Ollama §4.4) */
    wk_sampler_set_history(sampler, prompt->ids, prompt->n);

    /* longest common prefix with what the cache holds; always recompute the
     * last prompt token so its logits are fresh */
    int32_t keep = 0;
    while (keep < s->cached.n && keep < prompt->n - 1 && s->cached.ids[keep] == prompt->ids[keep]) keep++;
    wk_context_truncate(s->ctx, keep);
    s->cached.n = keep;
    stats->prompt_tokens = (int32_t)prompt->n;
    stats->prompt_eval_count = (int32_t)prompt->n - keep;

    int64_t t0 = wk_time_ns();
    st = feed(s, prompt->ids + keep, (int32_t)prompt->n - keep, p->cancel, err);
    int64_t t1 = wk_time_ns();
    stats->prompt_eval_ns = t1 - t0;
    if (st) goto done;

    struct wk_detok detok;
    wk_detok_init(&detok);
    struct output o = {.p = p};
    wk_stop_matcher_init(&o.stop, p->stop, p->stop ? p->n_stop : 0);
    bool stopped = false;
    for (;;) {
        if (p->cancel && *p->cancel) {
            st = wk_error_set(err, WK_E_CANCELLED, "cancelled");
            break;
        }
        int32_t id = wk_sampler_sample(sampler, s->logits);
        if (wk_tokenizer_is_eog(s->tok, id)) break;
        stats->eval_count++;
        if (p->on_token) p->on_token(p->user, id);
        size_t n;
        const char *text = wk_detok_push(&detok, s->tok, id, false, &n);
        if (!text) {
            st = wk_error_set(err, WK_E_NOMEM, "out of memory");
            break;
        }
        if (p->on_logprobs) {
            struct wk_token_logprobs lp;
            wk_logprobs_compute(s->logits, wk_model_hparams(s->m)->n_vocab, id, p->top_logprobs, &lp);
            /* complete once its n bytes are decoded; a token that is part of
             * a UTF-8 character (n == 0) completes with the next text */
            if (queue_logprobs(&o, &lp, o.decoded + (n ? n : 1))) {
                st = wk_error_set(err, WK_E_NOMEM, "out of memory");
                break;
            }
        }
        if (n && !emit(&o, text, n, &stopped, &st, err)) break;
        bool limit = p->num_predict > 0 && stats->eval_count >= p->num_predict;
        if (limit || wk_context_n_past(s->ctx) >= n_ctx) {
            stats->done_reason = "length";
            break;
        }
        if ((st = feed(s, &id, 1, p->cancel, err))) break;
    }
    size_t n;
    const char *rest = wk_detok_flush(&detok, &n);
    if (!stopped && st != WK_E_CANCELLED) {
        /* the detokenizer's tail, then what the stop matcher held back */
        bool go = !n || emit(&o, rest, n, &stopped, &st, err);
        if (go && !stopped) {
            put(&o, o.stop.buf, o.stop.len);
            if (p->on_logprobs) release_logprobs(&o, UINT64_MAX); /* tokens with no text left */
        }
    }
    if (stopped) stats->done_reason = "stop";
    if (o.nomem && !st) st = wk_error_set(err, WK_E_NOMEM, "out of memory");
    if (p->collect) {
        if (st) {
            wk_free(o.text);
            o.text = NULL, o.text_len = 0;
        } else if (!o.text && !(o.text = wk_malloc(1))) {
            st = wk_error_set(err, WK_E_NOMEM, "out of memory");
        }
        if (o.text) o.text[o.text_len] = '\0';
        *p->collect = o.text;
        if (p->collect_len) *p->collect_len = o.text_len;
    }
    wk_stop_matcher_deinit(&o.stop);
    wk_free(o.q);
    wk_detok_deinit(&detok);
    stats->eval_ns = wk_time_ns() - t1;
done:
    wk_sampler_destroy(sampler);
    return st;
}
