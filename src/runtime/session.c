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
#include "wk_runtime.h"

#include "gen_int.h"
#include "wk_grammar.h"

#include <stdlib.h>
#include <math.h>
#include <string.h>

struct wk_session {
    const struct wk_model *m;
    const struct wk_tokenizer *tok;
    struct wk_context *ctx;
    struct wk_tokens cached;
    int32_t n_exact; /* cached's first n_exact positions hold what a prefill of them from 0 computes */
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
    enum wk_status st = wk_context_create_or_f32(m, cp, &s->ctx, err);
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

/* The buffers every verification needs, a draft model's and prompt
 * lookup's alike (v_logits, pd), made once; false when out of memory. */
static bool verify_buffers(struct wk_session *s)
{
    const size_t V = (size_t)wk_model_hparams(s->m)->n_vocab;
    if (!s->v_logits) s->v_logits = wk_malloc(WK_VERIFY_MAX * V * sizeof(float));
    if (!s->pd) s->pd = wk_malloc(V * sizeof *s->pd);
    return s->v_logits && s->pd;
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
    /* the target's cache type (an MTP assistant reads the target's cache);
     * f32 where the draft cannot hold it */
    cp.kv_type = wk_context_kv_type(s->ctx);
    st = wk_context_create_or_f32(draft, &cp, &s->d_ctx, err);
    if (st) return st;
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
    s->q = wk_malloc(V * (WK_VERIFY_MAX - 1) * sizeof *s->q);
    s->dense = wk_calloc(V, sizeof(float));
    if (!verify_buffers(s) || !s->d_logits || !s->q || !s->dense) {
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
    s->n_exact = WK_MIN(s->n_exact, kept);
    /* the ids past n stay in the buffer, and pushing them back cannot grow it */
    return kept < n_keep ? feed_ex(s->ctx, &s->cached, s->cached.ids + kept, n_keep - kept, NULL, false,
                                   cancel, err)
                         : WK_OK;
}

/* A draft token from logits (the draft's) with its distribution into q
 * [V] and *n_q, advancing the grammar over it (*taken counts those steps,
 * for the rollback after drafting); -1 on an error in g->st. */
static int32_t draft_pick(struct wk__gen *g, const float *logits, struct wk_token_prob *q, int32_t *n_q, int32_t *taken)
{
    *n_q = g->p->grammar ? wk__gen_grammar_dist(g, logits, q) : wk_sampler_dist(g->sampler, logits, q);
    if (*n_q < 0) return -1;
    int32_t d = wk_sampler_draw(g->sampler, q, *n_q);
    if (g->p->grammar && !wk_tokenizer_is_eog(g->tok, d)) {
        if (!wk__gen_grammar_take(g, d)) return -1;
        (*taken)++;
    }
    return d;
}

/* The target's distribution at row: the sampler's, or with a grammar
 * grammar_dist's (what sample_next draws from); -1 on an error in g->st. */
static int32_t target_dist(struct wk__gen *g, const float *row, struct wk_token_prob *out)
{
    return g->p->grammar ? wk__gen_grammar_dist(g, row, out) : wk_sampler_dist(g->sampler, row, out);
}

/* The end of drafting: the sampler's history and the grammar as they were. */
static void draft_undo(struct wk__gen *g, int32_t pushed, int32_t taken)
{
    wk_sampler_pop(g->sampler, pushed);
    if (g->p->grammar) wk_grammar_matcher_rollback(g->p->grammar, taken);
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
static int32_t draft_tokens_mtp(struct wk_session *s, struct wk__gen *g, int32_t x0, int32_t k, int32_t *drafted, int64_t *t_start)
{
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
static int32_t draft_tokens(struct wk_session *s, struct wk__gen *g, int32_t x0, int32_t k, int32_t *drafted, int64_t *t_start)
{
    const volatile bool *cancel = g->p->cancel;
    if (s->mtp) return draft_tokens_mtp(s, g, x0, k, drafted, t_start);
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
 * One speculative round from x0 (emitted, not fed) with up to k tokens
 * drafted by the draft model, or with looked_up [k] (prompt lookup's
 * drafts, greedy only: no draft distributions; t0 when drafting began).
 * On return *next is the next token, chosen and emitted, unless
 * generation ended (false).
 */
static bool spec_round(struct wk_session *s, struct wk__gen *g, int32_t x0, int32_t k, const int32_t *looked_up,
                       int64_t t0, int32_t *next)
{
    const size_t V = (size_t)g->n_vocab;
    int32_t toks[WK_VERIFY_MAX];
    toks[0] = x0;
    if (looked_up) memcpy(toks + 1, looked_up, (size_t)k * sizeof *toks);
    else k = draft_tokens(s, g, x0, k, toks + 1, &t0);
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
        const struct wk_token_prob *q = looked_up ? NULL : s->q + (size_t)j * V; /* greedy with lookup */
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
        if (!wk__gen_grammar_take(g, d) || !wk__gen_emit_token(g, d, row, n0 + 1 + j)) {
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
    if (y < 0 || !wk__gen_grammar_take(g, y)) return false; /* an error in g->st */
    wk_sampler_push(g->sampler, y);
    /* row j chose y: an MTP draft conditions on it next round */
    if (s->mtp) memcpy(s->cond, wk_context_hidden(s->ctx, j), (size_t)wk_model_hparams(s->m)->n_embd * sizeof(float));
    if ((g->st = roll_back_exact(s, n0 + 1 + j, g->p->cancel, g->err))) return false;
    g->stats->draft_count += k, g->stats->draft_accepted += j, g->stats->spec_rounds++;
    wk_spec_ctl_update(&s->ctl, k, j, t1 - t0, t2 - t1);
    *next = y;
    return wk__gen_emit_token(g, y, row, n0 + 1 + j);
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
    enum wk_status st = wk__gen_check(prompt, p, n_ctx, err);
    if (st) return st;
    struct wk_sampler *sampler;
    st = wk_sampler_create(&p->sampler, wk_model_hparams(s->m)->n_vocab, n_ctx, &sampler, err);
    if (st) return st;
    /* penalties see the whole prompt, cached part included (Ollama §4.4) */
    wk_sampler_set_history(sampler, prompt->ids, prompt->n);

    /* longest common prefix with what the cache holds; always recompute the
     * last prompt token so its logits are fresh. Where that prefix was
     * itself prefilled (a prompt repeated, a system prompt shared), keep a
     * cut of it that computes the rest as a prefill of the whole prompt
     * from 0 does (wk_context_reusable), so the answer is the one an empty
     * cache gives; where it reaches into decoded tokens (a conversation's
     * next turn) no cut gives that, and all of it is kept. */
    int32_t keep = 0;
    while (keep < s->cached.n && keep < prompt->n - 1 && s->cached.ids[keep] == prompt->ids[keep]) keep++;
    const bool exact = keep <= s->n_exact;
    roll_back(s->ctx, &s->cached, exact ? wk_context_reusable(s->ctx, prompt->n, keep) : keep);
    keep = (int32_t)s->cached.n;
    s->n_exact = WK_MIN(s->n_exact, keep);
    stats->prompt_tokens = (int32_t)prompt->n;
    stats->prompt_eval_count = (int32_t)prompt->n - keep;

    int64_t t0 = wk_time_ns();
    st = feed(s, prompt->ids + keep, (int32_t)prompt->n - keep, p->cancel, err);
    if (exact) s->n_exact = (int32_t)s->cached.n; /* the chunks done, as from 0 */
    int64_t t1 = wk_time_ns();
    stats->prompt_eval_ns = t1 - t0;
    if (st) goto done;

    struct wk__gen g;
    wk__gen_init(&g, s->tok, p, sampler, stats, err, n_ctx, wk_model_hparams(s->m)->n_vocab);
    g.dense = s->dense;
    const int32_t k_max = WK_MIN(p->draft_max, WK_VERIFY_MAX - 1);
    /* prompt lookup where no draft model is given: greedy only (its drafts
     * have no distribution to accept against; with sampling, a seed keeps
     * giving the text it gave without lookup), and not under a grammar */
    const bool lookup = !s->draft && k_max > 0 && wk_sampler_is_greedy(sampler) && !p->grammar &&
                        verify_buffers(s);
    const bool spec = (s->draft && !p->grammar_lazy) || lookup; /* a draft model's rounds take an eager grammar only */
    if (spec) wk_spec_ctl_begin(&s->ctl);
    int32_t id = g.st ? -1 : wk__gen_sample(&g, s->logits);
    bool go = id >= 0 && wk__gen_emit_token(&g, id, s->logits, wk_context_n_past(s->ctx));
    while (go) {
        if (p->cancel && *p->cancel) {
            g.st = wk_error_set(err, WK_E_CANCELLED, "cancelled");
            break;
        }
        /* never draft past num_predict or the context: x0 and k drafts
         * take positions n_past .. n_past + k */
        int32_t k = spec && k_max > 0 ? wk_spec_ctl_k(&s->ctl, k_max) : 0;
        if (spec && k_max > 0 && p->draft_min > 0) k = WK_MAX(k, WK_MIN(p->draft_min, k_max));
        k = WK_MIN(k, n_ctx - wk_context_n_past(s->ctx) - 1);
        if (p->num_predict > 0) k = WK_MIN(k, p->num_predict - stats->eval_count);
        int32_t looked_up[WK_VERIFY_MAX - 1];
        int64_t ts = wk_time_ns();
        if (k > 0 && lookup) k = wk_lookup_draft(s->cached.ids, (int32_t)s->cached.n, id, k, looked_up);
        if (k > 0) {
            go = spec_round(s, &g, id, k, lookup ? looked_up : NULL, ts, &id);
            continue;
        }
        ts = wk_time_ns();
        if ((g.st = feed(s, &id, 1, p->cancel, err))) break;
        if (spec) wk_spec_ctl_plain(&s->ctl, wk_time_ns() - ts);
        id = wk__gen_sample(&g, s->logits);
        go = id >= 0 && wk__gen_emit_token(&g, id, s->logits, wk_context_n_past(s->ctx));
    }
    st = wk__gen_finish(&g);
    stats->eval_ns = wk_time_ns() - t1;
done:
    wk_sampler_destroy(sampler);
    return st;
}
