/*
 * slots.c - several generations on one context, stepped together
 * (wk_slots.h; llama-server's slots, vLLM's continuous batching).
 *
 * Data: one context with n sequences; slot i owns sequence i and
 * cached[i], the tokens its KV stripe holds (invariant: cached.ids[0 ..
 * cached.n) are positions 0 .. n_past(i) - 1 of sequence i, as in
 * session.c). A slot is FREE (its cache kept for the next request that
 * shares a prefix), PREFILL (prompt.ids[cached.n ..) still to run) or
 * DECODE (next: a token chosen and emitted, not yet run).
 *
 * A step:
 *   1. slots whose cancel flag is set end (WK_E_CANCELLED);
 *   2. one forward with a row (next, its position, its sequence) for every
 *      DECODE slot, logits for each; each slot samples and emits from its
 *      row (gen.c), as a plain step of wk_session_generate does;
 *   3. one forward with the next chunk of one PREFILL slot's prompt (the
 *      slot after the last one served, round robin): at most n_ubatch
 *      tokens, or 128 while other slots decode, cut so that every row
 *      computes as in a lone prefill cut every n_ubatch from the first
 *      token not cached (chunk_rows); after the prompt's last chunk the slot
 *      samples and emits its first token from that row and decodes from
 *      the next step on.
 *
 * Why two forwards and not one: the engine computes a batch with at most
 * one row per sequence through the one-token kernels (bit for bit a lone
 * decode step), but a batch that also holds a prefill chunk through the
 * GEMM for every row, which rounds a decode row differently (~1e-3
 * relative on quantized weights: docs/architecture.md, "Bits"); and the
 * chunk's ubatch cuts would move by the decode rows. Outputs identical to
 * running alone need both, so the decode rows and the chunk run apart.
 * The price is one more read of the weights in a step that prefills,
 * small beside the chunk's compute; merging them needs per-row kernel
 * choice in the matmul (the decode rows per token, the chunk's by GEMM)
 * and ubatch cuts that put the chunk's rows where a lone prefill does.
 */
#include "wk_slots.h"

#include "gen_int.h"

#include <string.h>

enum slot_state { SLOT_FREE, SLOT_PREFILL, SLOT_DECODE };

/* A prefill chunk's rows while other slots decode (a multiple of 32),
 * where n_ubatch is a multiple of this and at least twice it: each step's prefill then
 * delays the decoding slots' next tokens by this many rows' compute, not
 * n_ubatch's (128 rows: ~0.2 s on SmolLM2-135M, ~1 s on Qwen2.5-1.5B at 2
 * threads here). */
#define WK_SLOTS_CHUNK_BUSY 128

struct slot {
    enum slot_state state;
    struct wk_tokens cached;  /* what sequence i's KV stripe holds */
    int32_t n_exact;          /* cached's first n_exact positions hold what a prefill of them from 0 computes */
    bool exact;               /* PREFILL: its prompt resumes a cut that computes as from 0 */
    int32_t start;            /* PREFILL: where its prefill began (cached.n after take_prefix) */
    struct wk_tokens prompt;  /* the request's prompt (a copy) */
    struct wk_generate_params p; /* the request's parameters (pointers in it borrowed) */
    struct wk_generate_stats *stats;
    struct wk_error *err;     /* the request's, or own_err */
    struct wk_error own_err;
    struct wk_sampler *sampler;
    struct wk__gen g;         /* g.p points to p: slots never move */
    int32_t next;             /* DECODE: the token chosen, to run next */
    /* prompt lookup (greedy, no grammar, draft_max > 0): its controller,
     * and this step's drafts after next (n_draft of them, rows row0 ..
     * row0 + n_draft of the decode forward) */
    bool lookup;
    struct wk_spec_ctl ctl;
    int32_t draft[WK_VERIFY_MAX - 1], n_draft, row0;
    int64_t draft_ns; /* the lookup's time this step */
    int32_t starved;  /* steps beside others with drafts on offer but none taken */
    int64_t t_prefilled; /* ns: when its prompt was done (0: not yet) */
    uint64_t used;       /* when a request last took it (wk_slots.clock; 0: never) */
};

struct wk_slots {
    const struct wk_model *m;
    const struct wk_tokenizer *tok;
    struct wk_context *ctx;
    int32_t n, n_ubatch, n_ctx, n_vocab;
    int32_t chunk_busy;       /* a prefill chunk's rows while others decode (0: n_ubatch) */
    struct slot *slot;        /* [n] */
    int32_t rr;               /* the slot last given a prefill chunk */
    uint64_t clock;           /* requests taken so far (the slots' used stamps) */
    struct wk_rows_cost cost; /* decode forwards' ns by rows (the drafts' budget beside other slots) */
    int32_t *dec, *k_max, *k; /* [n] a decode step's slots, their drafts on offer and taken (share_drafts) */
    double *acc;              /* [n] their acceptance rates */
    float *logits;            /* [n + WK_VERIFY_MAX - 1][n_vocab]: the decode rows', then the prefill's last row */
    int32_t *b_tok, *b_pos, *b_seq, *b_slot; /* [max(n + WK_VERIFY_MAX - 1, n_ubatch)] a batch's rows */
    bool *b_want;
};

enum wk_status wk_slots_create(const struct wk_model *m, const struct wk_tokenizer *tok,
                               const struct wk_context_params *cp, struct wk_slots **out, struct wk_error *err)
{
    *out = NULL;
    const int32_t n_vocab = wk_model_hparams(m)->n_vocab;
    if (wk_tokenizer_n_vocab(tok) > n_vocab)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: the tokenizer has %d tokens but the model's embedding only %d rows",
                            wk_model_path(m), wk_tokenizer_n_vocab(tok), n_vocab);
    struct wk_slots *s = wk_calloc(1, sizeof *s);
    if (!s) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    s->m = m, s->tok = tok, s->n_vocab = n_vocab, s->rr = -1;
    enum wk_status st = wk_context_create_or_f32(m, cp, &s->ctx, err); /* f32 where the model cannot hold cp's */
    if (st) {
        wk_free(s);
        return st;
    }
    s->n = wk_context_n_seq(s->ctx);
    s->n_ubatch = wk_context_n_ubatch(s->ctx);
    s->n_ctx = wk_context_n_ctx(s->ctx);
    /* a divisor of n_ubatch and a multiple of 32 (chunk_rows) */
    s->chunk_busy = s->n_ubatch % WK_SLOTS_CHUNK_BUSY == 0 && s->n_ubatch >= 2 * WK_SLOTS_CHUNK_BUSY
                        ? WK_SLOTS_CHUNK_BUSY : 0;
    const size_t rows = (size_t)WK_MAX(s->n + WK_VERIFY_MAX - 1, s->n_ubatch);
    s->slot = wk_calloc((size_t)s->n, sizeof *s->slot);
    s->logits = wk_malloc((size_t)(s->n + WK_VERIFY_MAX - 1) * (size_t)n_vocab * sizeof(float));
    s->b_tok = wk_malloc(rows * sizeof(int32_t));
    s->b_pos = wk_malloc(rows * sizeof(int32_t));
    s->b_seq = wk_malloc(rows * sizeof(int32_t));
    s->b_slot = wk_malloc(rows * sizeof(int32_t));
    s->b_want = wk_malloc(rows * sizeof(bool));
    s->dec = wk_malloc((size_t)s->n * sizeof(int32_t));
    s->k_max = wk_malloc((size_t)s->n * sizeof(int32_t));
    s->k = wk_malloc((size_t)s->n * sizeof(int32_t));
    s->acc = wk_malloc((size_t)s->n * sizeof(double));
    if (!s->slot || !s->logits || !s->b_tok || !s->b_pos || !s->b_seq || !s->b_slot || !s->b_want || !s->dec ||
        !s->k_max || !s->k || !s->acc) {
        wk_slots_destroy(s);
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    *out = s;
    return WK_OK;
}

/* Frees a slot's request state (not its cache). */
static void drop_request(struct slot *sl)
{
    wk_sampler_destroy(sl->sampler);
    sl->sampler = NULL;
    wk_tokens_deinit(&sl->prompt);
    sl->state = SLOT_FREE;
}

void wk_slots_destroy(struct wk_slots *s)
{
    if (!s) return;
    for (int32_t i = 0; s->slot && i < s->n; i++) {
        struct slot *sl = &s->slot[i];
        if (sl->state != SLOT_FREE) {
            sl->p.collect = NULL; /* dropped: the caller hears nothing more */
            sl->g.st = WK_E_CANCELLED;
            wk__gen_finish(&sl->g);
            drop_request(sl);
        }
        wk_tokens_deinit(&sl->cached);
    }
    wk_free(s->slot);
    wk_context_destroy(s->ctx);
    wk_free(s->logits);
    wk_free(s->b_tok);
    wk_free(s->b_pos);
    wk_free(s->b_seq);
    wk_free(s->b_slot);
    wk_free(s->b_want);
    wk_free(s->dec);
    wk_free(s->k_max);
    wk_free(s->k);
    wk_free(s->acc);
    wk_free(s);
}

int32_t wk_slots_n(const struct wk_slots *s) { return s->n; }
struct wk_context *wk_slots_context(struct wk_slots *s) { return s->ctx; }

int32_t wk_slots_n_active(const struct wk_slots *s)
{
    int32_t n = 0;
    for (int32_t i = 0; i < s->n; i++) n += s->slot[i].state != SLOT_FREE;
    return n;
}

/* Tokens a and b [n_b] share from the start, at most max. */
static int32_t common_prefix(const struct wk_tokens *a, const int32_t *b, int64_t n_b, int64_t max)
{
    int64_t k = 0;
    while (k < a->n && k < n_b && k < max && a->ids[k] == b[k]) k++;
    return (int32_t)k;
}

/*
 * Slot dst's cache for prompt: its own first keep tokens, or where
 * another slot (busy or free) shares a longer prefix with the prompt (a
 * system prompt), a copy of that slot's KV for it (wk_context_seq_copy:
 * computed once, copied for each). As wk_session_generate keeps a prefix:
 * where it was prefilled, a cut of it that computes the rest as a prefill
 * from 0 does (wk_context_reusable); where it reaches into decoded tokens,
 * all of it. Errors: WK_E_NOMEM (dst's cache is then empty).
 */
static enum wk_status take_prefix(struct wk_slots *s, int32_t dst, int32_t keep, const struct wk_tokens *prompt)
{
    struct slot *d = &s->slot[dst];
    int32_t src = -1, best = keep;
    for (int32_t j = 0; j < s->n; j++) {
        if (j == dst) continue;
        int32_t m = common_prefix(&s->slot[j].cached, prompt->ids, prompt->n, prompt->n - 1);
        if (m > best) src = j, best = m;
    }
    const int32_t n_exact = src < 0 ? d->n_exact : s->slot[src].n_exact;
    d->exact = best <= n_exact;
    if (d->exact) best = wk_context_reusable(s->ctx, prompt->n, best);
    if (src < 0) {
        d->cached.n = wk_context_seq_truncate(s->ctx, dst, best);
        d->n_exact = WK_MIN(n_exact, (int32_t)d->cached.n);
        return WK_OK;
    }
    const int32_t kept = wk_context_seq_copy(s->ctx, src, dst, best);
    d->n_exact = WK_MIN(n_exact, kept);
    d->cached.n = 0;
    for (int32_t i = 0; i < kept; i++)
        if (wk_tokens_push(&d->cached, s->slot[src].cached.ids[i])) {
            d->cached.n = wk_context_seq_truncate(s->ctx, dst, 0);
            d->n_exact = 0;
            return WK_E_NOMEM;
        }
    return WK_OK;
}

enum wk_status wk_slots_add(struct wk_slots *s, const struct wk_slot_request *r, int32_t *slot,
                            struct wk_error *err)
{
    *slot = -1;
    const struct wk_tokens *prompt = r->prompt;
    const struct wk_generate_params *p = r->gen;
    enum wk_status st = wk__gen_check(prompt, p, s->n_ctx, err);
    if (st) return st;
    /* Ollama's choice (runner/ollamarunner/cache.go, findBestCacheSlot): the
     * free slot whose whole cache the prompt extends (a conversation's next
     * turn), the longest such; else the least recently used free slot (an
     * empty one first), where take_prefix copies the longest prefix any
     * slot shares (a system prompt, tools): another prompt's cache is not
     * cut short to serve this one, so requests that alternate between a few
     * long prompts each find theirs. */
    int32_t best = -1, best_keep = -1, lru = -1, lru_keep = 0;
    for (int32_t i = 0; i < s->n; i++) {
        const struct slot *sl = &s->slot[i];
        if (sl->state != SLOT_FREE) continue;
        int32_t keep = common_prefix(&sl->cached, prompt->ids, prompt->n, prompt->n - 1);
        if (keep > 0 && keep == sl->cached.n && keep > best_keep) best = i, best_keep = keep;
        if (lru < 0 || sl->used < s->slot[lru].used) lru = i, lru_keep = keep;
    }
    if (lru < 0) return WK_OK;
    if (best < 0) best = lru, best_keep = lru_keep;
    struct slot *sl = &s->slot[best];
    sl->used = ++s->clock;
    struct wk_sampler *sampler;
    if ((st = wk_sampler_create(&p->sampler, s->n_vocab, s->n_ctx, &sampler, err))) return st;
    /* penalties see the whole prompt, cached part included (Ollama §4.4) */
    wk_sampler_set_history(sampler, prompt->ids, prompt->n);
    sl->prompt = (struct wk_tokens){0};
    for (int64_t i = 0; i < prompt->n; i++)
        if (wk_tokens_push(&sl->prompt, prompt->ids[i])) {
            wk_tokens_deinit(&sl->prompt);
            wk_sampler_destroy(sampler);
            return wk_error_set(err, WK_E_NOMEM, "out of memory");
        }
    if ((st = take_prefix(s, best, best_keep, prompt)) == WK_OK) sl->start = (int32_t)sl->cached.n;
    if (st) {
        wk_tokens_deinit(&sl->prompt);
        wk_sampler_destroy(sampler);
        return wk_error_set(err, st, "out of memory");
    }
    sl->p = *p;
    /* prompt lookup, as wk_session_generate does it without a draft model */
    sl->lookup = p->draft_max > 0 && !p->grammar && wk_sampler_is_greedy(sampler);
    wk_spec_ctl_init(&sl->ctl);
    sl->n_draft = sl->starved = 0;
    sl->stats = r->stats;
    sl->err = r->err ? r->err : &sl->own_err;
    wk_error_clear(sl->err);
    sl->sampler = sampler;
    memset(sl->stats, 0, sizeof *sl->stats);
    sl->stats->done_reason = "stop";
    sl->stats->prompt_tokens = (int32_t)prompt->n;
    sl->stats->prompt_eval_count = (int32_t)(prompt->n - sl->cached.n);
    if (p->collect) *p->collect = NULL;
    if (p->collect_len) *p->collect_len = 0;
    wk__gen_init(&sl->g, s->tok, &sl->p, sampler, sl->stats, sl->err, s->n_ctx, s->n_vocab);
    sl->state = SLOT_PREFILL;
    *slot = best;
    return WK_OK;
}

/* Ends slot i's request with status st (WK_OK: as generation ended) and
 * records it in out (may be NULL). */
static void finish(struct wk_slots *s, int32_t i, enum wk_status st, struct wk_slots_step *out)
{
    struct slot *sl = &s->slot[i];
    if (st && !sl->g.st) sl->g.st = st;
    st = wk__gen_finish(&sl->g);
    if (sl->t_prefilled) sl->stats->eval_ns = wk_time_ns() - sl->t_prefilled;
    sl->t_prefilled = 0;
    drop_request(sl);
    if (out) out->done[out->n_done++] = (struct wk_slot_done){i, st};
}

void wk_slots_cancel(struct wk_slots *s, int32_t id)
{
    if (id < 0 || id >= s->n || s->slot[id].state == SLOT_FREE) return;
    finish(s, id, wk_error_set(s->slot[id].err, WK_E_CANCELLED, "cancelled"), NULL);
}

/* Slot i chose token id from row (logits [n_vocab]) with its sequence at
 * n_past positions: emit it, and decode it next unless that ended the
 * generation. */
static void take_token(struct wk_slots *s, int32_t i, int32_t id, const float *row, struct wk_slots_step *out)
{
    struct slot *sl = &s->slot[i];
    const int32_t pos = wk_context_seq_n_past(s->ctx, i);
    if (id >= 0 && wk__gen_emit_token(&sl->g, id, row, pos)) {
        sl->next = id;
        sl->state = SLOT_DECODE;
        return;
    }
    finish(s, i, WK_OK, out);
}

/* Runs rows [n] of the batch arrays (per_token: each row as a one-token
 * step); on an error every slot in it ends. */
static bool run_rows(struct wk_slots *s, int32_t n, bool per_token, struct wk_slots_step *out)
{
    struct wk_batch b = {.n_tokens = n, .tokens = s->b_tok, .pos = s->b_pos, .seq_id = s->b_seq,
                         .logits = s->b_want, .per_token = per_token};
    struct wk_error e;
    enum wk_status st = wk_context_decode_batch(s->ctx, &b, s->logits, NULL, &e);
    if (!st) return true;
    for (int32_t r = 0; r < n; r++) {
        int32_t i = s->b_slot[r];
        if (s->slot[i].state == SLOT_FREE) continue; /* a chunk's rows are one slot's */
        *s->slot[i].err = e;
        finish(s, i, st, out);
    }
    return false;
}

/* Slot i's prompt-lookup drafts for this step (wk_lookup_draft) into its
 * draft[]: as many as its controller wants (alone: wk_spec_ctl_k) or may
 * verify (beside others: draft_max), none past num_predict or the
 * context; 0 when it does not look up. */
static int32_t lookup_drafts(struct wk_slots *s, int32_t i, bool alone)
{
    struct slot *sl = &s->slot[i];
    if (!sl->lookup) return 0;
    const int32_t k_max = WK_MIN(sl->p.draft_max, WK_VERIFY_MAX - 1);
    int32_t k = alone ? wk_spec_ctl_k(&sl->ctl, k_max) : k_max;
    if (alone && sl->p.draft_min > 0) k = WK_MAX(k, WK_MIN(sl->p.draft_min, sl->p.draft_max));
    k = WK_MIN(k, s->n_ubatch - 1); /* a rotating cache rolls back this far (wk_context_seq_truncate) */
    k = WK_MIN(k, s->n_ctx - wk_context_seq_n_past(s->ctx, i) - 1);
    if (sl->p.num_predict > 0) k = WK_MIN(k, sl->p.num_predict - sl->stats->eval_count);
    return k > 0 ? wk_lookup_draft(sl->cached.ids, (int32_t)sl->cached.n, sl->next, k, sl->draft) : 0;
}

/* After the decode forward: slot i ran next and its drafts (rows row0 ..
 * row0 + n_draft). Each row's token is chosen as a plain step chooses it;
 * drafts are kept while they are that choice (the rows behind a kept
 * draft computed exactly the plain steps' rows), the first other choice
 * or the row after the last draft gives the next token, and the cache
 * drops the rejected drafts. */
static void take_rows(struct wk_slots *s, int32_t i, int64_t fwd_ns, bool alone, struct wk_slots_step *out)
{
    struct slot *sl = &s->slot[i];
    const int32_t k = sl->n_draft, before = (int32_t)sl->cached.n;
    sl->n_draft = 0;
    bool ends = false;
    enum wk_status st = WK_OK;
    int32_t j = 0;
    for (;; j++) {
        const int32_t fed = j == 0 ? sl->next : sl->draft[j - 1];
        if (wk_tokens_push(&sl->cached, fed)) {
            ends = true, st = wk_error_set(sl->err, WK_E_NOMEM, "out of memory");
            break;
        }
        const float *row = s->logits + (size_t)(sl->row0 + j) * (size_t)s->n_vocab;
        const int32_t y = wk__gen_sample(&sl->g, row);
        if (y < 0 || !wk__gen_emit_token(&sl->g, y, row, before + j + 1)) {
            ends = true;
            break;
        }
        if (j == k || y != sl->draft[j]) {
            sl->next = y;
            break;
        }
    }
    /* the cache holds before + k + 1 positions: keep what was taken */
    const int32_t keep = (int32_t)sl->cached.n;
    if (keep < before + k + 1 && wk_context_seq_truncate(s->ctx, i, keep) != keep) {
        /* not reached: drafts stay under n_ubatch, which a rotating cache rolls back */
        sl->cached.n = wk_context_seq_truncate(s->ctx, i, 0);
        sl->n_exact = 0;
        if (!st) ends = true, st = wk_error_set(sl->err, WK_E_INTERNAL, "the KV cache could not roll back");
    }
    if (k > 0) {
        const int32_t accepted = WK_MIN(j, k);
        sl->stats->spec_rounds++, sl->stats->draft_count += k, sl->stats->draft_accepted += accepted;
        if (alone) wk_spec_ctl_update(&sl->ctl, k, accepted, sl->draft_ns, fwd_ns);
        else wk_spec_ctl_count(&sl->ctl, k, accepted); /* the step's time is all the slots' */
    } else if (sl->lookup && alone) {
        wk_spec_ctl_plain(&sl->ctl, fwd_ns);
    }
    if (ends) finish(s, i, st, out);
}

/* Steps beside other slots after which a slot whose drafts were on offer
 * but never taken (its acceptance rate too low to pay) verifies one
 * anyway: its rate is learnt only from drafts verified. */
#define SLOTS_DRAFT_PROBE 32

/* The drafts of the decoding slots (their ids in dec [n_dec]) beside each
 * other: each slot's on offer (lookup_drafts), shared by wk_spec_share
 * from their acceptance rates and the decode forwards' measured cost by
 * rows (s->cost), at most WK_VERIFY_MAX - 1 in all (s->logits' rows). A
 * slot starved SLOTS_DRAFT_PROBE steps gets one. Sets each n_draft. */
static void share_drafts(struct wk_slots *s, const int32_t *dec, int32_t n_dec)
{
    double *acc = s->acc;
    int32_t *k_max = s->k_max, *k = s->k;
    for (int32_t r = 0; r < n_dec; r++) {
        struct slot *sl = &s->slot[dec[r]];
        const int64_t tl = wk_time_ns();
        k_max[r] = lookup_drafts(s, dec[r], false);
        sl->draft_ns = WK_MAX(wk_time_ns() - tl, 1);
        acc[r] = wk_spec_ctl_acceptance(&sl->ctl);
    }
    int32_t left = WK_VERIFY_MAX - 1 - wk_spec_share(&s->cost, n_dec, acc, k_max, WK_VERIFY_MAX - 1, k);
    for (int32_t r = 0; r < n_dec; r++) {
        struct slot *sl = &s->slot[dec[r]];
        if (k[r] > 0 || k_max[r] == 0) sl->starved = 0;
        else if (++sl->starved >= SLOTS_DRAFT_PROBE && left > 0) k[r] = 1, left--, sl->starved = 0;
        sl->n_draft = k[r];
    }
}

/* Step 2: a token for every decoding slot, and prompt lookup's drafts:
 * a slot decoding alone as wk_session_generate drafts (its controller
 * weighs them, wk_spec_ctl), several as share_drafts shares them. */
static void decode_step(struct wk_slots *s, struct wk_slots_step *out)
{
    int32_t n = 0, n_dec = 0, *dec = s->dec;
    for (int32_t i = 0; i < s->n; i++)
        if (s->slot[i].state == SLOT_DECODE) dec[n_dec++] = i;
    if (!n_dec) return;
    const bool alone = n_dec == 1;
    if (alone) {
        struct slot *sl = &s->slot[dec[0]];
        const int64_t tl = wk_time_ns();
        sl->n_draft = lookup_drafts(s, dec[0], true);
        sl->draft_ns = WK_MAX(wk_time_ns() - tl, 1);
    } else {
        share_drafts(s, dec, n_dec);
    }
    for (int32_t r = 0; r < n_dec; r++) {
        const int32_t i = dec[r], pos = wk_context_seq_n_past(s->ctx, i);
        struct slot *sl = &s->slot[i];
        sl->row0 = n;
        for (int32_t j = 0; j <= sl->n_draft; j++) {
            s->b_tok[n] = j == 0 ? sl->next : sl->draft[j - 1];
            s->b_pos[n] = pos + j;
            s->b_seq[n] = i, s->b_slot[n] = i, s->b_want[n] = true;
            n++;
        }
        out->n_decode++;
    }
    const int64_t t0 = wk_time_ns();
    if (!run_rows(s, n, n > n_dec, out)) return;
    const int64_t fwd_ns = wk_time_ns() - t0;
    wk_rows_cost_add(&s->cost, n, fwd_ns);
    for (int32_t r = 0; r < n_dec; r++)
        if (s->slot[dec[r]].state == SLOT_DECODE) take_rows(s, dec[r], fwd_ns, alone, out);
}

/*
 * Rows of slot sl's next prefill chunk: what is left of its prompt, at
 * most n_ubatch, or chunk_busy while busy (others decode). Each row must
 * compute as in a prefill cut every n_ubatch from sl->start (what
 * wk_session_generate runs): chunk_busy divides n_ubatch and every chunk
 * but the last is a multiple of 32, so the attention blocks (ATTN_QBLOCK)
 * fall alike; and the last chunk must be one row (the one-token kernels)
 * exactly when that prefill's is, so a chunk that would leave one row
 * alone where it does not grows by it (or, at n_ubatch, shrinks by 32).
 */
static int32_t chunk_rows(const struct wk_slots *s, const struct slot *sl, bool busy)
{
    const int32_t left = (int32_t)sl->prompt.n - (int32_t)sl->cached.n;
    if (!s->chunk_busy) return WK_MIN(s->n_ubatch, left);
    int32_t c = busy ? s->chunk_busy : s->n_ubatch;
    if (left <= c) return left;
    if (left - c == 1 && ((int32_t)sl->prompt.n - sl->start) % s->n_ubatch != 1) c = c < s->n_ubatch ? c + 1 : c - 32;
    return c;
}

/* Step 3: the next chunk of one prefilling slot's prompt. */
static void prefill_step(struct wk_slots *s, struct wk_slots_step *out)
{
    out->prefill_slot = -1;
    int32_t i = -1;
    for (int32_t k = 1; k <= s->n && i < 0; k++) {
        int32_t j = (s->rr + k) % s->n;
        if (s->slot[j].state == SLOT_PREFILL) i = j;
    }
    if (i < 0) return;
    s->rr = i;
    struct slot *sl = &s->slot[i];
    const int32_t done = (int32_t)sl->cached.n, left = (int32_t)sl->prompt.n - done;
    const int32_t n = chunk_rows(s, sl, out->n_decode > 0);
    const bool last = n == left;
    for (int32_t t = 0; t < n; t++) {
        s->b_tok[t] = sl->prompt.ids[done + t];
        s->b_pos[t] = done + t;
        s->b_seq[t] = i, s->b_slot[t] = i;
        s->b_want[t] = last && t == n - 1;
    }
    out->prefill_slot = i, out->n_prefill = n;
    const int64_t t0 = wk_time_ns();
    if (!run_rows(s, n, false, out)) return;
    for (int32_t t = 0; t < n; t++)
        if (wk_tokens_push(&sl->cached, s->b_tok[t])) {
            sl->cached.n = wk_context_seq_truncate(s->ctx, i, done + t);
            sl->n_exact = WK_MIN(sl->n_exact, (int32_t)sl->cached.n);
            finish(s, i, wk_error_set(sl->err, WK_E_NOMEM, "out of memory"), out);
            return;
        }
    if (sl->exact) sl->n_exact = (int32_t)sl->cached.n; /* the chunks done, as from 0 */
    sl->stats->prompt_eval_ns += wk_time_ns() - t0;
    if (!last) return;
    sl->t_prefilled = wk_time_ns();
    if (sl->g.st) { /* wk__gen_init ran out of memory */
        finish(s, i, sl->g.st, out);
        return;
    }
    take_token(s, i, wk__gen_sample(&sl->g, s->logits), s->logits, out);
}

enum wk_status wk_slots_step(struct wk_slots *s, struct wk_slots_step *out, struct wk_error *err)
{
    (void)err;
    out->n_decode = out->n_prefill = out->n_done = 0;
    out->prefill_slot = -1;
    for (int32_t i = 0; i < s->n; i++) {
        struct slot *sl = &s->slot[i];
        if (sl->state != SLOT_FREE && sl->p.cancel && *sl->p.cancel)
            finish(s, i, wk_error_set(sl->err, WK_E_CANCELLED, "cancelled"), out);
    }
    decode_step(s, out);
    prefill_step(s, out);
    return WK_OK;
}
