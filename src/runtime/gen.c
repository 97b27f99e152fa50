/*
 * gen.c - one generation's per-token steps (gen_int.h), shared by
 * wk_session_generate (session.c) and the slots (slots.c): choosing a
 * token (the sampler, with a grammar's mask) and emitting it.
 *
 * The output side of a generation: decoded text goes through the stop
 * matcher (when there are stop strings) to on_piece, and each token's
 * logprobs wait until the text that completes the token is emitted, then
 * go to on_logprobs just before that text (so they stay aligned with the
 * bytes they describe, across UTF-8 buffering and stop-string hold-back);
 * the logprobs of tokens whose text is cut by a stop string are dropped.
 * With hide_thinking, what the stop matcher lets through passes the think
 * filter before on_piece; the runs it drops advance the emitted count as
 * if emitted, and the logprobs of tokens that end inside them are dropped.
 */
#include "gen_int.h"

#include "wk_grammar.h"

#include <math.h>
#include <string.h>

/* Hands on_logprobs the queued entries whose text ends within upto bytes. */
static void release_logprobs(struct wk__output *o, uint64_t upto)
{
    int32_t k = 0;
    while (k < o->nq && o->q[k].end <= upto) {
        o->p->on_logprobs(o->p->user, &o->q[k].lp);
        k++;
    }
    if (k == 0) return; /* (o->q may be NULL: nothing queued yet) */
    memmove(o->q, o->q + k, (size_t)(o->nq - k) * sizeof *o->q);
    o->nq -= k;
}

/* Queues a token whose text is complete once end bytes are decoded.
 * Errors: WK_E_NOMEM. */
static enum wk_status queue_logprobs(struct wk__output *o, const struct wk_token_logprobs *lp, uint64_t end)
{
    if (o->nq == o->capq) {
        int32_t cap = o->capq ? 2 * o->capq : 8;
        struct wk__pending_lp *q = wk_realloc(o->q, (size_t)cap * sizeof *q);
        if (!q) return WK_E_NOMEM;
        o->q = q, o->capq = cap;
    }
    o->q[o->nq++] = (struct wk__pending_lp){*lp, end};
    return WK_OK;
}

/* n bytes of text out of on_piece (buf) and into the collected answer,
 * logprobs first. Returns false when on_piece asks to stop or collecting
 * runs out of memory (o->nomem). */
static bool put_text(struct wk__output *o, const char *buf, size_t n)
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

/* A run from the think filter: kept text goes out, a dropped run's bytes
 * count as emitted and the logprobs of tokens ending in it are dropped. */
static bool think_run(void *user, const char *buf, size_t n, bool keep)
{
    struct wk__output *o = user;
    if (keep) return put_text(o, buf, n);
    if (o->p->on_thinking && o->think.inside && !o->think.in_tag && !o->p->on_thinking(o->p->user, buf, n))
        return false;
    int32_t k = 0;
    while (k < o->nq && o->q[k].end <= o->emitted + n) k++;
    memmove(o->q, o->q + k, (size_t)(o->nq - k) * sizeof *o->q);
    o->nq -= k;
    o->emitted += n;
    return true;
}

/* Text the stop matcher let through, on its way out (put_text), through
 * the think filter when asked. */
static bool put(struct wk__output *o, const char *buf, size_t n)
{
    if (!o->p->hide_thinking) return put_text(o, buf, n);
    return wk_think_filter_push(&o->think, buf, n, think_run, o);
}

/* Passes decoded text on. Returns false when generation must end: a stop
 * string completed (*stopped), on_piece asked to stop, or no memory (*st). */
static bool emit(struct wk__output *o, const char *text, size_t n, bool *stopped, enum wk_status *st,
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
/*
 * The next token from logits [n_vocab], pushed to the sampler's history:
 * wk_sampler_sample's choice, and with a grammar (p->grammar) that same
 * draw when the grammar allows it (so a constrained generation follows the
 * unconstrained one wherever the grammar allows its choice), else a draw
 * from the distribution with every token the grammar forbids removed. An
 * end-of-generation token is allowed once the grammar is complete. The
 * token is accepted into the grammar. -1 (error in g->st) when the
 * grammar allows no token.
 */
/* g->mask and g->masked (logits [V] with the tokens the grammar forbids
 * at -inf) for the grammar's state; false (error in g->st) when it
 * allows no token or memory runs out. */
static bool mask_logits(struct wk__gen *g, const float *logits)
{
    if (wk_grammar_matcher_mask(g->p->grammar, g->mask)) {
        g->st = wk_error_set(g->err, WK_E_NOMEM, "out of memory");
        return false;
    }
    bool any = false;
    for (int32_t i = 0; i < g->n_vocab; i++) {
        bool ok = (g->mask[i >> 5] >> (i & 31)) & 1u;
        g->masked[i] = ok ? logits[i] : -INFINITY;
        any |= ok;
    }
    if (!any) g->st = wk_error_set(g->err, WK_E_INVALID, "the grammar allows no token here");
    return any;
}

/* A lazy grammar that took token id: off again once it is complete (the
 * call closed; the next trigger starts another). */
static int32_t lazy_took(struct wk__gen *g, int32_t id)
{
    if (g->p->grammar_lazy && wk_grammar_matcher_is_complete(g->p->grammar)) g->grammar_on = false;
    return id;
}

int32_t wk__gen_sample(struct wk__gen *g, const float *logits)
{
    struct wk_grammar_matcher *m = g->p->grammar;
    if (m && !g->grammar_on) { /* a lazy grammar waiting for its trigger */
        const int32_t id = wk_sampler_sample(g->sampler, logits);
        const bool first = g->stats->eval_count == 0;
        if (id != g->p->grammar_trigger && !first) return id;
        /* the trigger token, or the answer's first token when the grammar
         * can start with it (a call written as the answer itself) */
        wk_grammar_matcher_reset(m);
        const bool took = !wk_tokenizer_is_eog(g->tok, id) && wk_grammar_matcher_accept(m, id) == WK_OK;
        if (!took && id == g->p->grammar_trigger) {
            g->st = wk_error_set(g->err, WK_E_INTERNAL, "the tool-call grammar refuses its own first token %d", id);
            return -1;
        }
        g->grammar_on = took;
        return id;
    }
    if (!m) return wk_sampler_sample(g->sampler, logits);
    const struct wk_tokenizer *tok = g->tok;
    int32_t n = wk_sampler_dist(g->sampler, logits, g->dist);
    int32_t id = wk_sampler_draw(g->sampler, g->dist, n);
    bool eog = wk_tokenizer_is_eog(tok, id);
    if (eog ? wk_grammar_matcher_is_complete(m) : wk_grammar_matcher_accept(m, id) == WK_OK) {
        wk_sampler_push(g->sampler, id);
        return lazy_took(g, id);
    }
    if (!mask_logits(g, logits)) return -1;
    n = wk_sampler_dist(g->sampler, g->masked, g->dist);
    id = wk_sampler_draw(g->sampler, g->dist, n);
    if (!wk_tokenizer_is_eog(tok, id) && wk_grammar_matcher_accept(m, id) != WK_OK) {
        g->st = wk_error_set(g->err, WK_E_INTERNAL, "the grammar's mask allowed token %d, which it refuses", id);
        return -1;
    }
    wk_sampler_push(g->sampler, id);
    return lazy_took(g, id);
}

/*
 * With a grammar: the distribution sample_next draws from at logits [V],
 * for speculative decoding's acceptance rule: P(x) = pt(x) for allowed x
 * plus D * pm(x), where pt is the sampler's distribution of the logits, D
 * its mass on tokens the grammar forbids and pm the sampler's distribution
 * of the masked logits (greedy: one token, the masked argmax). Writes out
 * [V] (any order) and returns how many, or -1 (error in g->st). Uses
 * g->mask, g->masked, g->dist and s->dense (zeros again on return).
 */
int32_t wk__gen_grammar_dist(struct wk__gen *g, const float *logits, struct wk_token_prob *out)
{
    struct wk_grammar_matcher *m = g->p->grammar;
    const struct wk_tokenizer *tok = g->tok;
    float *dense = g->dense;
    if (!mask_logits(g, logits)) return -1;
#define ALLOWED(i) ((g->mask[(i) >> 5] >> ((i) & 31)) & 1u)
    int32_t nt = wk_sampler_dist(g->sampler, logits, g->dist), nm = 0, n = 0;
    double forbidden = 0;
    for (int32_t i = 0; i < nt; i++) {
        int32_t id = g->dist[i].id;
        bool ok = ALLOWED(id) && !(wk_tokenizer_is_eog(tok, id) && !wk_grammar_matcher_is_complete(m));
        if (ok) dense[id] += g->dist[i].p;
        else forbidden += g->dist[i].p;
    }
    if (forbidden > 0) {
        nm = wk_sampler_dist(g->sampler, g->masked, g->dist2);
        for (int32_t i = 0; i < nm; i++) dense[g->dist2[i].id] += (float)(forbidden * g->dist2[i].p);
    }
    for (int32_t i = 0; i < nt + nm; i++) { /* each token with mass once; dense back to zeros */
        int32_t id = i < nt ? g->dist[i].id : g->dist2[i - nt].id;
        if (dense[id] > 0) out[n++] = (struct wk_token_prob){id, dense[id]}, dense[id] = 0;
    }
#undef ALLOWED
    return n;
}

/* With a grammar, token id (chosen) advances it; end-of-generation tokens
 * do not (generation ends with them). false (error in g->st) when the
 * grammar refuses it. */
bool wk__gen_grammar_take(struct wk__gen *g, int32_t id)
{
    if (!g->p->grammar || wk_tokenizer_is_eog(g->tok, id)) return true;
    if (wk_grammar_matcher_accept(g->p->grammar, id) == WK_OK) return true;
    g->st = wk_error_set(g->err, WK_E_INTERNAL, "the grammar refused token %d, which its distribution allowed", id);
    return false;
}

/*
 * Emits token id, already chosen (and pushed to the sampler's history),
 * which sits at position pos (pos tokens before it) and whose logits row
 * is row (for logprobs). Returns false when generation ends with it: an
 * end-of-generation token (not counted, no text), a stop string, on_piece
 * asking to stop, num_predict reached or the context full ("length"), or
 * an error in g->st.
 */
bool wk__gen_emit_token(struct wk__gen *g, int32_t id, const float *row, int32_t pos)
{
    const struct wk_generate_params *p = g->p;
    if (wk_tokenizer_is_eog(g->tok, id)) return false;
    g->stats->eval_count++;
    if (p->on_token) p->on_token(p->user, id);
    size_t n;
    const char *text = wk_detok_push(&g->detok, g->tok, id, false, &n);
    if (!text) {
        g->st = wk_error_set(g->err, WK_E_NOMEM, "out of memory");
        return false;
    }
    if (p->on_logprobs) {
        struct wk_token_logprobs lp;
        wk_logprobs_compute(row, g->n_vocab, id, p->top_logprobs, &lp);
        /* complete once its n bytes are decoded; a token that is part of
         * a UTF-8 character (n == 0) completes with the next text */
        if (queue_logprobs(&g->o, &lp, g->o.decoded + (n ? n : 1))) {
            g->st = wk_error_set(g->err, WK_E_NOMEM, "out of memory");
            return false;
        }
    }
    if (n && !emit(&g->o, text, n, &g->stopped, &g->st, g->err)) return false;
    bool limit = p->num_predict > 0 && g->stats->eval_count >= p->num_predict;
    if (limit || pos >= g->n_ctx) {
        g->stats->done_reason = "length";
        return false;
    }
    if (p->cancel && *p->cancel) { /* between tokens, also inside a speculative round */
        g->st = wk_error_set(g->err, WK_E_CANCELLED, "cancelled");
        return false;
    }
    return true;
}

void wk__gen_init(struct wk__gen *g, const struct wk_tokenizer *tok, const struct wk_generate_params *p,
                  struct wk_sampler *sampler, struct wk_generate_stats *stats, struct wk_error *err, int32_t n_ctx,
                  int32_t n_vocab)
{
    *g = (struct wk__gen){.tok = tok, .p = p, .sampler = sampler, .stats = stats, .err = err, .o = {.p = p},
                          .n_ctx = n_ctx, .n_vocab = n_vocab};
    wk_detok_init(&g->detok);
    wk_stop_matcher_init(&g->o.stop, p->stop, p->stop ? p->n_stop : 0);
    wk_think_filter_init(&g->o.think);
    g->o.think.inside = p->think_open;
    g->grammar_on = p->grammar && !p->grammar_lazy;
    if (p->grammar) {
        g->dist = wk_malloc((size_t)n_vocab * sizeof *g->dist);
        g->dist2 = wk_malloc((size_t)n_vocab * sizeof *g->dist2);
        g->masked = wk_malloc((size_t)n_vocab * sizeof *g->masked);
        g->mask = wk_malloc(((size_t)n_vocab + 31) / 32 * sizeof *g->mask);
        if (!g->dist || !g->dist2 || !g->masked || !g->mask) g->st = wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
}

enum wk_status wk__gen_check(const struct wk_tokens *prompt, const struct wk_generate_params *p, int32_t n_ctx,
                             struct wk_error *err)
{
    if (prompt->n < 1) return wk_error_set(err, WK_E_INVALID, "the prompt is empty");
    if (prompt->n >= n_ctx)
        return wk_error_set(err, WK_E_RANGE,
                            "the prompt is %lld tokens, which does not fit in the context of %d "
                            "tokens (leave room for at least one generated token)",
                            (long long)prompt->n, n_ctx);
    if (p->draft_max < 0 || p->draft_min < 0)
        return wk_error_set(err, WK_E_INVALID, "draft_max %d and draft_min %d must be >= 0",
                            p->draft_max, p->draft_min);
    return WK_OK;
}

enum wk_status wk__gen_finish(struct wk__gen *g)
{
    const struct wk_generate_params *p = g->p;
    struct wk_error *err = g->err;
    enum wk_status st = g->st;
    struct wk__output *o = &g->o;
    size_t n;
    const char *rest = wk_detok_flush(&g->detok, &n);
    if (!g->stopped && st != WK_E_CANCELLED) {
        /* the detokenizer's tail, then what the stop matcher held back */
        bool more = !n || emit(o, rest, n, &g->stopped, &st, err);
        if (more && !g->stopped) {
            if (put(o, o->stop.buf, o->stop.len) && p->hide_thinking)
                wk_think_filter_flush(&o->think, think_run, o);
            if (p->on_logprobs) release_logprobs(o, UINT64_MAX); /* tokens with no text left */
        }
    }
    /* a stop string ended it: a tag's first bytes held before it are text */
    if (g->stopped && p->hide_thinking && !st) wk_think_filter_flush(&o->think, think_run, o);
    if (g->stopped) {
        g->stats->done_reason = "stop";
        if (o->stop.matched >= 0) g->stats->stop_sequence = o->stop.stops[o->stop.matched];
    }
    if (o->nomem && !st) st = wk_error_set(err, WK_E_NOMEM, "out of memory");
    if (p->collect) {
        if (st) {
            wk_free(o->text);
            o->text = NULL, o->text_len = 0;
        } else if (!o->text && !(o->text = wk_malloc(1))) {
            st = wk_error_set(err, WK_E_NOMEM, "out of memory");
        }
        if (o->text) o->text[o->text_len] = '\0';
        *p->collect = o->text;
        if (p->collect_len) *p->collect_len = o->text_len;
    } else {
        wk_free(o->text);
    }
    wk_stop_matcher_deinit(&o->stop);
    wk_free(o->q);
    wk_free(g->dist);
    wk_free(g->dist2);
    wk_free(g->masked);
    wk_free(g->mask);
    wk_detok_deinit(&g->detok);
    g->st = st;
    return st;
}
