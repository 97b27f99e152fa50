/*
 * session.c - one conversation's generation state: a context (KV cache)
 * plus the list of tokens the cache holds, so the next prompt reuses the
 * longest common prefix instead of prefilling it again; with a draft
 * model, speculative decoding (Leviathan et al. 2023, "Fast Inference from
 * Transformers via Speculative Decoding"; Chen et al. 2023, "Accelerating
 * Large Language Model Decoding with Speculative Sampling").
 *
 * Invariant: cached.ids[0 .. cached.n) are exactly the tokens at positions
 * 0 .. n_past-1 of the context's KV cache; the same for the draft's
 * d_cached and its context.
 *
 * A speculative round, with token x0 chosen (emitted) but not yet fed:
 *   the draft catches up on what the target holds, then proposes d1..dk,
 *   each drawn from its distribution q_i after the request's sampler
 *   transforms (penalties see x0, d1.. as they would be generated);
 *   the target runs x0, d1..dk in one verification forward
 *   (wk_context_verify: bit for bit what k+1 single steps give) whose rows
 *   are p_1..p_{k+1};
 *   d_i is accepted with probability min(1, p_i(d_i)/q_i(d_i)) (greedy:
 *   when it is p_i's argmax); the first rejection draws from
 *   normalise(max(p_i - q_i, 0)); when all k pass, a bonus token is drawn
 *   from p_{k+1}. Each accepted token is emitted exactly as a plain step
 *   emits it (end of generation, stop strings, num_predict, the context,
 *   logprobs from the target's row). Both caches roll back what was not
 *   accepted.
 */
#include "wk_grammar.h"
#include "wk_runtime.h"

#include <stdlib.h>
#include <math.h>
#include <string.h>

struct wk_session {
    const struct wk_model *m;
    const struct wk_tokenizer *tok;
    struct wk_context *ctx;
    struct wk_tokens cached;
    float *logits; /* [n_vocab] */
    /* speculative decoding (wk_session_set_draft) */
    const struct wk_model *draft;
    struct wk_context *d_ctx;
    struct wk_tokens d_cached;
    float *d_logits;          /* [n_vocab] */
    float *v_logits;          /* [WK_VERIFY_MAX][n_vocab] verification rows */
    struct wk_token_prob *q;  /* [WK_VERIFY_MAX - 1][n_vocab] draft distributions */
    int32_t n_q[WK_VERIFY_MAX - 1];
    struct wk_token_prob *pd; /* [n_vocab] a target distribution */
    float *dense;             /* [n_vocab] zeros between uses */
    struct wk_spec_ctl ctl;
    /* an MTP assistant as the draft (wk_model_is_mtp): no cache of its
     * own; each step takes a conditioning vector [n_embd of the target]:
     * cond, the target's hidden row that predicted the newest token
     * (kept after every target forward), then its own outputs (cond_a/b) */
    bool mtp;
    float *cond, *cond_a, *cond_b;
};

struct wk_generate_params wk_generate_params_default(void)
{
    return (struct wk_generate_params){
        .sampler = wk_sampler_params_default(), .num_predict = -1, .on_piece = NULL,
        .user = NULL, .cancel = NULL, .draft_max = 8};
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

static void drop_draft(struct wk_session *s)
{
    wk_context_destroy(s->d_ctx);
    wk_tokens_deinit(&s->d_cached);
    wk_free(s->d_logits);
    wk_free(s->v_logits);
    wk_free(s->q);
    wk_free(s->pd);
    wk_free(s->dense);
    wk_free(s->cond);
    wk_free(s->cond_a);
    wk_free(s->cond_b);
    s->cond = s->cond_a = s->cond_b = NULL;
    s->mtp = false;
    s->draft = NULL, s->d_ctx = NULL, s->d_logits = s->v_logits = s->dense = NULL;
    s->q = s->pd = NULL;
    s->d_cached = (struct wk_tokens){0};
}

void wk_session_destroy(struct wk_session *s)
{
    if (!s) return;
    drop_draft(s);
    wk_context_destroy(s->ctx);
    wk_tokens_deinit(&s->cached);
    wk_free(s->logits);
    wk_free(s);
}

enum wk_status wk_session_set_draft(struct wk_session *s, const struct wk_model *draft,
                                    struct wk_error *err)
{
    drop_draft(s);
    if (!draft) return WK_OK;
    const int32_t n_vocab = wk_model_hparams(s->m)->n_vocab;
    if (wk_model_hparams(draft)->n_vocab != n_vocab)
        return wk_error_set(err, WK_E_INVALID,
                            "the draft model %s has %d tokens but the target %s has %d: a draft "
                            "must share the target's vocabulary",
                            wk_model_path(draft), wk_model_hparams(draft)->n_vocab,
                            wk_model_path(s->m), n_vocab);
    enum wk_status st;
    if (wk_model_is_mtp(draft) && (st = wk_model_check_mtp(draft, s->m, err))) return st;
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = wk_context_n_ctx(s->ctx);
    cp.n_threads = wk_context_n_threads(s->ctx);
    cp.pool = wk_context_pool(s->ctx); /* they run in turn: no second set of threads */
    if ((st = wk_context_create(draft, &cp, &s->d_ctx, err))) return st;
    const size_t V = (size_t)n_vocab;
    if (wk_model_is_mtp(draft)) {
        const size_t E = (size_t)wk_model_hparams(s->m)->n_embd;
        s->mtp = true;
        s->cond = wk_calloc(E, sizeof(float));
        s->cond_a = wk_malloc(E * sizeof(float));
        s->cond_b = wk_malloc(E * sizeof(float));
        if (!s->cond || !s->cond_a || !s->cond_b) {
            drop_draft(s);
            return wk_error_set(err, WK_E_NOMEM, "out of memory for speculative decoding");
        }
    }
    s->d_logits = wk_malloc(V * sizeof(float));
    s->v_logits = wk_malloc(V * WK_VERIFY_MAX * sizeof(float));
    s->q = wk_malloc(V * (WK_VERIFY_MAX - 1) * sizeof *s->q);
    s->pd = wk_malloc(V * sizeof *s->pd);
    s->dense = wk_calloc(V, sizeof(float));
    if (!s->d_logits || !s->v_logits || !s->q || !s->pd || !s->dense) {
        drop_draft(s);
        return wk_error_set(err, WK_E_NOMEM, "out of memory for speculative decoding");
    }
    s->draft = draft;
    wk_spec_ctl_init(&s->ctl);
    return WK_OK;
}

struct wk_context *wk_session_context(struct wk_session *s)
{
    return s->ctx;
}

/* Feeds tokens into a cache (the target's or the draft's) and records
 * them; verify runs them through wk_context_verify (logits of every one). */
static enum wk_status feed_ex(struct wk_context *ctx, struct wk_tokens *cached, const int32_t *ids,
                              int32_t n, float *logits, bool verify, const volatile bool *cancel,
                              struct wk_error *err)
{
    int32_t before = wk_context_n_past(ctx);
    enum wk_status st = verify ? wk_context_verify(ctx, ids, n, logits, cancel, err)
                               : wk_context_decode(ctx, ids, n, logits, cancel, err);
    /* chunks completed before a cancellation are cached: keep the record true */
    int32_t added = wk_context_n_past(ctx) - before;
    for (int32_t i = 0; i < added; i++)
        if (wk_tokens_push(cached, ids[i])) {
            cached->n = wk_context_truncate(ctx, before + i);
            return wk_error_set(err, WK_E_NOMEM, "out of memory");
        }
    return st;
}

static enum wk_status feed(struct wk_session *s, const int32_t *ids, int32_t n,
                           const volatile bool *cancel, struct wk_error *err)
{
    enum wk_status st = feed_ex(s->ctx, &s->cached, ids, n, s->logits, false, cancel, err);
    /* an MTP draft conditions on the hidden row behind these logits */
    if (!st && s->mtp)
        memcpy(s->cond, wk_context_hidden(s->ctx, 0), (size_t)wk_model_hparams(s->m)->n_embd * sizeof(float));
    return st;
}

/* Rolls a cache back to n_keep positions (or further, to 0, where a
 * rotating cache no longer holds what position n_keep needs). */
static void roll_back(struct wk_context *ctx, struct wk_tokens *cached, int32_t n_keep)
{
    cached->n = wk_context_truncate(ctx, n_keep);
}

/* Rolls the target's cache back to exactly n_keep positions after a
 * verification: where a rotating cache cannot go back that far (drafts
 * longer than n_ubatch + 1), it is rebuilt from the recorded tokens. */
static enum wk_status roll_back_exact(struct wk_session *s, int32_t n_keep, const volatile bool *cancel,
                                      struct wk_error *err)
{
    roll_back(s->ctx, &s->cached, n_keep);
    int32_t kept = (int32_t)s->cached.n;
    /* the ids past n stay in the buffer, and pushing them back cannot grow it */
    return kept < n_keep ? feed_ex(s->ctx, &s->cached, s->cached.ids + kept, n_keep - kept, NULL, false,
                                   cancel, err)
                         : WK_OK;
}

/*
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
    struct wk_think_filter think; /* with p->hide_thinking */
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
static bool put_text(struct output *o, const char *buf, size_t n)
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
    struct output *o = user;
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
static bool put(struct output *o, const char *buf, size_t n)
{
    if (!o->p->hide_thinking) return put_text(o, buf, n);
    return wk_think_filter_push(&o->think, buf, n, think_run, o);
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

/* One generation's state, shared by the plain step and the speculative
 * round. */
struct gen {
    struct wk_session *s;
    const struct wk_generate_params *p;
    struct wk_sampler *sampler;
    struct wk_generate_stats *stats;
    struct wk_error *err;
    struct output o;
    struct wk_detok detok;
    int32_t n_ctx, n_vocab;
    bool stopped;      /* a stop string completed */
    enum wk_status st; /* an error that ended generation */
    /* with p->grammar: two distributions, masked logits [n_vocab], the mask */
    struct wk_token_prob *dist, *dist2;
    float *masked;
    uint32_t *mask;
};

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
static bool mask_logits(struct gen *g, const float *logits)
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

static int32_t sample_next(struct gen *g, const float *logits)
{
    struct wk_grammar_matcher *m = g->p->grammar;
    if (!m) return wk_sampler_sample(g->sampler, logits);
    const struct wk_tokenizer *tok = g->s->tok;
    int32_t n = wk_sampler_dist(g->sampler, logits, g->dist);
    int32_t id = wk_sampler_draw(g->sampler, g->dist, n);
    bool eog = wk_tokenizer_is_eog(tok, id);
    if (eog ? wk_grammar_matcher_is_complete(m) : wk_grammar_matcher_accept(m, id) == WK_OK) {
        wk_sampler_push(g->sampler, id);
        return id;
    }
    if (!mask_logits(g, logits)) return -1;
    n = wk_sampler_dist(g->sampler, g->masked, g->dist);
    id = wk_sampler_draw(g->sampler, g->dist, n);
    if (!wk_tokenizer_is_eog(tok, id) && wk_grammar_matcher_accept(m, id) != WK_OK) {
        g->st = wk_error_set(g->err, WK_E_INTERNAL, "the grammar's mask allowed token %d, which it refuses", id);
        return -1;
    }
    wk_sampler_push(g->sampler, id);
    return id;
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
static int32_t grammar_dist(struct gen *g, const float *logits, struct wk_token_prob *out)
{
    struct wk_grammar_matcher *m = g->p->grammar;
    const struct wk_tokenizer *tok = g->s->tok;
    float *dense = g->s->dense;
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
static bool grammar_take(struct gen *g, int32_t id)
{
    if (!g->p->grammar || wk_tokenizer_is_eog(g->s->tok, id)) return true;
    if (wk_grammar_matcher_accept(g->p->grammar, id) == WK_OK) return true;
    g->st = wk_error_set(g->err, WK_E_INTERNAL, "the grammar refused token %d, which its distribution allowed", id);
    return false;
}

/* A draft token from logits (the draft's) with its distribution into q
 * [V] and *n_q, advancing the grammar over it (*taken counts those steps,
 * for the rollback after drafting); -1 on an error in g->st. */
static int32_t draft_pick(struct gen *g, const float *logits, struct wk_token_prob *q, int32_t *n_q, int32_t *taken)
{
    *n_q = g->p->grammar ? grammar_dist(g, logits, q) : wk_sampler_dist(g->sampler, logits, q);
    if (*n_q < 0) return -1;
    int32_t d = wk_sampler_draw(g->sampler, q, *n_q);
    if (g->p->grammar && !wk_tokenizer_is_eog(g->s->tok, d)) {
        if (!grammar_take(g, d)) return -1;
        (*taken)++;
    }
    return d;
}

/* The target's distribution at row: the sampler's, or with a grammar
 * grammar_dist's (what sample_next draws from); -1 on an error in g->st. */
static int32_t target_dist(struct gen *g, const float *row, struct wk_token_prob *out)
{
    return g->p->grammar ? grammar_dist(g, row, out) : wk_sampler_dist(g->sampler, row, out);
}

/* The end of drafting: the sampler's history and the grammar as they were. */
static void draft_undo(struct gen *g, int32_t pushed, int32_t taken)
{
    wk_sampler_pop(g->sampler, pushed);
    if (g->p->grammar) wk_grammar_matcher_rollback(g->p->grammar, taken);
}

/*
 * Emits token id, already chosen (and pushed to the sampler's history),
 * which sits at position pos (pos tokens before it) and whose logits row
 * is row (for logprobs). Returns false when generation ends with it: an
 * end-of-generation token (not counted, no text), a stop string, on_piece
 * asking to stop, num_predict reached or the context full ("length"), or
 * an error in g->st.
 */
static bool emit_token(struct gen *g, int32_t id, const float *row, int32_t pos)
{
    const struct wk_generate_params *p = g->p;
    if (wk_tokenizer_is_eog(g->s->tok, id)) return false;
    g->stats->eval_count++;
    if (p->on_token) p->on_token(p->user, id);
    size_t n;
    const char *text = wk_detok_push(&g->detok, g->s->tok, id, false, &n);
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

/* q(id) in d [n], 0 when absent. */
static float prob_of(const struct wk_token_prob *d, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (d[i].id == id) return d[i].p;
    return 0;
}

/*
 * draft_tokens with an MTP assistant: each step reads the target's cache
 * as it is (x0 not yet in it) and the conditioning vector, s->cond (the
 * target's hidden row that chose x0) first, then the step's own output
 * (wk_context_mtp_step). Nothing to catch up, nothing to roll back.
 */
static int32_t draft_tokens_mtp(struct gen *g, int32_t x0, int32_t k, int32_t *drafted, int64_t *t_start)
{
    struct wk_session *s = g->s;
    *t_start = wk_time_ns();
    const float *cond = s->cond;
    float *next = s->cond_a;
    int32_t tok = x0, n = 0, taken = 0;
    while (n < k) {
        if ((g->st = wk_context_mtp_step(s->d_ctx, s->ctx, tok, cond, s->d_logits, next, g->err))) {
            draft_undo(g, n, taken);
            return -1;
        }
        struct wk_token_prob *q = s->q + (size_t)n * (size_t)g->n_vocab;
        int32_t d = draft_pick(g, s->d_logits, q, &s->n_q[n], &taken);
        if (d < 0) {
            draft_undo(g, n, taken);
            return -1;
        }
        drafted[n++] = d;
        wk_sampler_push(g->sampler, d);
        if (wk_tokenizer_is_eog(s->tok, d)) break;
        tok = d;
        cond = next;
        next = next == s->cond_a ? s->cond_b : s->cond_a;
    }
    draft_undo(g, n, taken);
    return n;
}

/*
 * The draft model proposes up to k tokens after the target's cache and
 * x0 into drafted [k]; their distributions go to s->q. Returns how many
 * (fewer when one ends generation: nothing is drafted past it), or -1 on
 * an error in g->st. The sampler's history is as it was on return.
 */
static int32_t draft_tokens(struct gen *g, int32_t x0, int32_t k, int32_t *drafted, int64_t *t_start)
{
    struct wk_session *s = g->s;
    const volatile bool *cancel = g->p->cancel;
    if (s->mtp) return draft_tokens_mtp(g, x0, k, drafted, t_start);
    /* catch up: the draft must hold the target's tokens and x0 */
    const int32_t n0 = (int32_t)s->cached.n;
    int32_t keep = 0;
    while (keep < s->d_cached.n && keep < n0 && s->d_cached.ids[keep] == s->cached.ids[keep]) keep++;
    roll_back(s->d_ctx, &s->d_cached, keep);
    keep = (int32_t)s->d_cached.n;
    /* the cost of proposing: from here when the draft is a token behind
     * (the last round's final draft, which it never ran: part of every
     * round's cost), after catching up when it is further behind (the
     * prompt, a pause: the request's cost, not the round's). One-token
     * steps are the draft's fastest path: its x16 kernels are compute
     * bound, so two tokens in one forward cost what two steps cost. */
    *t_start = wk_time_ns();
    if (keep < n0 &&
        (g->st = feed_ex(s->d_ctx, &s->d_cached, s->cached.ids + keep, n0 - keep, NULL, false, cancel,
                         g->err)))
        return -1;
    if (n0 - keep > 1) *t_start = wk_time_ns();
    if ((g->st = feed_ex(s->d_ctx, &s->d_cached, &x0, 1, s->d_logits, false, cancel, g->err))) return -1;
    int32_t n = 0, taken = 0;
    while (n < k) {
        struct wk_token_prob *q = s->q + (size_t)n * (size_t)g->n_vocab;
        int32_t d = draft_pick(g, s->d_logits, q, &s->n_q[n], &taken);
        if (d < 0) {
            draft_undo(g, n, taken);
            return -1;
        }
        drafted[n++] = d;
        wk_sampler_push(g->sampler, d);
        if (n == k || wk_tokenizer_is_eog(s->tok, d)) break;
        if ((g->st = feed_ex(s->d_ctx, &s->d_cached, &d, 1, s->d_logits, false, cancel, g->err))) {
            draft_undo(g, n, taken);
            return -1;
        }
    }
    draft_undo(g, n, taken);
    return n;
}

/*
 * One speculative round from x0 (emitted, not fed) with up to k drafted
 * tokens. On return *next is the next token, chosen and emitted, unless
 * generation ended (false).
 */
static bool spec_round(struct gen *g, int32_t x0, int32_t k, int32_t *next)
{
    struct wk_session *s = g->s;
    const size_t V = (size_t)g->n_vocab;
    int32_t toks[WK_VERIFY_MAX];
    toks[0] = x0;
    int64_t t0;
    k = draft_tokens(g, x0, k, toks + 1, &t0);
    if (k < 0) return false;
    int64_t t1 = wk_time_ns();
    const int32_t n0 = (int32_t)s->cached.n;
    if ((g->st = feed_ex(s->ctx, &s->cached, toks, k + 1, s->v_logits, true, g->p->cancel, g->err)))
        return false;
    int64_t t2 = wk_time_ns();
    const bool greedy = wk_sampler_is_greedy(g->sampler);
    int32_t j = 0, y = -1;
    const float *row = NULL;
    for (; j < k; j++) {
        row = s->v_logits + (size_t)j * V;
        int32_t np = target_dist(g, row, s->pd);
        if (np < 0) break;
        const int32_t d = toks[1 + j];
        const struct wk_token_prob *q = s->q + (size_t)j * V;
        bool accept;
        if (greedy) {
            accept = s->pd[0].id == d;
        } else {
            float pd = prob_of(s->pd, np, d), qd = prob_of(q, s->n_q[j], d);
            accept = qd > 0 && wk_sampler_uniform(g->sampler) * (double)qd < (double)pd;
        }
        if (!accept) {
            if (greedy) {
                y = s->pd[0].id;
            } else {
                /* the residual normalise(max(p - q, 0)), over p's support */
                for (int32_t i = 0; i < s->n_q[j]; i++) s->dense[q[i].id] = q[i].p;
                double total = 0;
                for (int32_t i = 0; i < np; i++) {
                    float r = s->pd[i].p - s->dense[s->pd[i].id];
                    s->pd[i].p = r > 0 ? r : 0;
                    total += s->pd[i].p;
                }
                for (int32_t i = 0; i < s->n_q[j]; i++) s->dense[q[i].id] = 0;
                if (!(total > 0)) np = target_dist(g, row, s->pd); /* p == q */
                y = wk_sampler_draw(g->sampler, s->pd, np);
            }
            break;
        }
        wk_sampler_push(g->sampler, d);
        if (!grammar_take(g, d) || !emit_token(g, d, row, n0 + 1 + j)) {
            /* as a plain step would: the last emitted token is not fed */
            enum wk_status st = roll_back_exact(s, n0 + 1 + j, NULL, g->err);
            if (st && !g->st) g->st = st;
            g->stats->draft_count += k, g->stats->draft_accepted += j + 1, g->stats->spec_rounds++;
            return false;
        }
    }
    if (j == k) { /* all accepted: the bonus token */
        row = s->v_logits + (size_t)k * V;
        int32_t np = target_dist(g, row, s->pd);
        if (np < 0) return false;
        y = wk_sampler_draw(g->sampler, s->pd, np);
    }
    if (y < 0 || !grammar_take(g, y)) return false; /* an error in g->st */
    wk_sampler_push(g->sampler, y);
    /* row j chose y: an MTP draft conditions on it next round */
    if (s->mtp) memcpy(s->cond, wk_context_hidden(s->ctx, j), (size_t)wk_model_hparams(s->m)->n_embd * sizeof(float));
    if ((g->st = roll_back_exact(s, n0 + 1 + j, g->p->cancel, g->err))) return false;
    g->stats->draft_count += k, g->stats->draft_accepted += j, g->stats->spec_rounds++;
    wk_spec_ctl_update(&s->ctl, k, j, t1 - t0, t2 - t1);
    *next = y;
    return emit_token(g, y, row, n0 + 1 + j);
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
    if (p->draft_max < 0 || p->draft_min < 0)
        return wk_error_set(err, WK_E_INVALID, "draft_max %d and draft_min %d must be >= 0",
                            p->draft_max, p->draft_min);
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
    roll_back(s->ctx, &s->cached, keep);
    keep = (int32_t)s->cached.n;
    stats->prompt_tokens = (int32_t)prompt->n;
    stats->prompt_eval_count = (int32_t)prompt->n - keep;

    int64_t t0 = wk_time_ns();
    st = feed(s, prompt->ids + keep, (int32_t)prompt->n - keep, p->cancel, err);
    int64_t t1 = wk_time_ns();
    stats->prompt_eval_ns = t1 - t0;
    if (st) goto done;

    struct gen g = {.s = s, .p = p, .sampler = sampler, .stats = stats, .err = err,
                    .o = {.p = p}, .n_ctx = n_ctx, .n_vocab = wk_model_hparams(s->m)->n_vocab};
    wk_detok_init(&g.detok);
    wk_stop_matcher_init(&g.o.stop, p->stop, p->stop ? p->n_stop : 0);
    wk_think_filter_init(&g.o.think);
    g.o.think.inside = p->think_open;
    const int32_t k_max = WK_MIN(p->draft_max, WK_VERIFY_MAX - 1);
    if (p->grammar) {
        g.dist = wk_malloc((size_t)g.n_vocab * sizeof *g.dist);
        g.dist2 = wk_malloc((size_t)g.n_vocab * sizeof *g.dist2);
        g.masked = wk_malloc((size_t)g.n_vocab * sizeof *g.masked);
        g.mask = wk_malloc(((size_t)g.n_vocab + 31) / 32 * sizeof *g.mask);
        if (!g.dist || !g.dist2 || !g.masked || !g.mask) g.st = wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    if (s->draft) wk_spec_ctl_begin(&s->ctl);
    int32_t id = g.st ? -1 : sample_next(&g, s->logits);
    bool go = id >= 0 && emit_token(&g, id, s->logits, wk_context_n_past(s->ctx));
    while (go) {
        if (p->cancel && *p->cancel) {
            g.st = wk_error_set(err, WK_E_CANCELLED, "cancelled");
            break;
        }
        /* never draft past num_predict or the context: x0 and k drafts
         * take positions n_past .. n_past + k */
        int32_t k = s->draft && k_max > 0 ? wk_spec_ctl_k(&s->ctl, k_max) : 0;
        if (s->draft && k_max > 0 && p->draft_min > 0) k = WK_MAX(k, WK_MIN(p->draft_min, k_max));
        k = WK_MIN(k, n_ctx - wk_context_n_past(s->ctx) - 1);
        if (p->num_predict > 0) k = WK_MIN(k, p->num_predict - stats->eval_count);
        if (k > 0) {
            go = spec_round(&g, id, k, &id);
            continue;
        }
        int64_t ts = wk_time_ns();
        if ((g.st = feed(s, &id, 1, p->cancel, err))) break;
        if (s->draft) wk_spec_ctl_plain(&s->ctl, wk_time_ns() - ts);
        id = sample_next(&g, s->logits);
        go = id >= 0 && emit_token(&g, id, s->logits, wk_context_n_past(s->ctx));
    }
    st = g.st;
    struct output *o = &g.o;
    size_t n;
    const char *rest = wk_detok_flush(&g.detok, &n);
    if (!g.stopped && st != WK_E_CANCELLED) {
        /* the detokenizer's tail, then what the stop matcher held back */
        bool more = !n || emit(o, rest, n, &g.stopped, &st, err);
        if (more && !g.stopped) {
            if (put(o, o->stop.buf, o->stop.len) && p->hide_thinking)
                wk_think_filter_flush(&o->think, think_run, o);
            if (p->on_logprobs) release_logprobs(o, UINT64_MAX); /* tokens with no text left */
        }
    }
    /* a stop string ended it: a tag's first bytes held before it are text */
    if (g.stopped && p->hide_thinking && !st) wk_think_filter_flush(&o->think, think_run, o);
    if (g.stopped) stats->done_reason = "stop";
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
    }
    wk_stop_matcher_deinit(&o->stop);
    wk_free(o->q);
    wk_free(g.dist);
    wk_free(g.dist2);
    wk_free(g.masked);
    wk_free(g.mask);
    wk_detok_deinit(&g.detok);
    stats->eval_ns = wk_time_ns() - t1;
done:
    wk_sampler_destroy(sampler);
    return st;
}
