/*
 * wk_slots.h - several generations on one context, stepped together
 * (continuous batching, issue 26): each slot is one request's generation
 * (what wk_session_generate keeps for one: sampler, stop strings,
 * detokenizer, think filter, logprobs, grammar, counters, callbacks) on
 * one sequence of a shared context (wk_context_params.n_seq_max), with the
 * tokens that sequence's KV stripe holds, for prefix reuse per slot.
 *
 * Each wk_slots_step advances every decoding slot by one token (one
 * forward with a row per slot) and one prefilling slot by one chunk of
 * its prompt (n_ubatch tokens, or 128 while other slots decode, so that a
 * long prompt delays their next tokens by that much compute; the slots
 * waiting to prefill take turns, round robin), then samples and emits for
 * each slot exactly as
 * wk_session_generate does for one request. A slot's tokens and text are
 * those it gets alone through wk_session_generate on a context with the
 * same n_ubatch and threads, with the same prompt, cached prefix and
 * parameters (greedy and seeded sampling alike): decode rows of different
 * sequences go through the one-token kernels together, and the prefill
 * chunk runs as its own forward, cut so its rows compute as a lone
 * prefill's (slots.c says why it is not merged into the decode forward).
 *
 * A new request takes the free slot whose cache shares the longest
 * prefix with its prompt; where another slot, busy or free, shares a
 * longer one (a system prompt), that prefix's KV is copied from it
 * (wk_context_seq_copy) instead of being computed again.
 *
 * Prompt lookup (wk_lookup_draft) as wk_session_generate does it without
 * a draft model: a greedy slot without a grammar and with draft_max > 0
 * adds its drafts as rows of the decode forward (wk_batch.per_token: each
 * row computed as a one-token step, so the tokens are the ones plain
 * decoding chooses), at most WK_VERIFY_MAX - 1 drafted rows a step in
 * all: a slot decoding alone drafts as its own wk_spec_ctl says; several
 * share them by wk_spec_share (their acceptance rates against the
 * measured cost of decode forwards by rows, wk_rows_cost). No draft
 * models here (a runner with one runs its requests one at a time through
 * wk_session). Not thread-safe: one thread steps the slots and adds or
 * cancels between steps.
 */
#ifndef WK_SLOTS_H
#define WK_SLOTS_H

#include "wk_runtime.h"

struct wk_slots;

/* One request for a slot. Everything borrowed: prompt for the call of
 * wk_slots_add (copied); gen (its callbacks, stop strings, grammar,
 * cancel flag, collect pointers), stats and err until the slot finishes
 * (reported by wk_slots_step or ended by wk_slots_cancel). */
struct wk_slot_request {
    const struct wk_tokens *prompt;
    const struct wk_generate_params *gen;
    struct wk_generate_stats *stats; /* written as wk_session_generate writes it */
    struct wk_error *err;            /* the slot's error when it ends with one (may be NULL) */
};

/* A slot that ended in a step: its id and its status (WK_OK, or the error
 * written to its request's err: WK_E_CANCELLED, WK_E_NOMEM, ...). */
struct wk_slot_done {
    int32_t slot;
    enum wk_status status;
};

/* What one step did (the step trace), and the slots that ended in it. */
struct wk_slots_step {
    int32_t n_decode;      /* decode rows: slots that got a token from this step's decode forward */
    int32_t prefill_slot;  /* the slot whose prompt was prefilled, or -1 */
    int32_t n_prefill;     /* its prompt tokens run this step (<= n_ubatch) */
    int32_t n_done;        /* entries of done */
    struct wk_slot_done done[WK_SEQ_MAX];
};

/*
 * Creates the slots: a context on m with cp (its n_seq_max sequences are
 * the slots, at least 1; an f32 KV cache where the model cannot hold
 * cp->kv_type's, wk_context_create_or_f32) and per-slot state. m and tok are borrowed and
 * must outlive the slots; *out is owned by the caller (wk_slots_destroy).
 * Errors: WK_E_FORMAT (the tokenizer has more tokens than the model's
 * embedding), those of wk_context_create, WK_E_NOMEM.
 */
enum wk_status wk_slots_create(const struct wk_model *m, const struct wk_tokenizer *tok,
                               const struct wk_context_params *cp, struct wk_slots **out, struct wk_error *err);
/* Frees the slots and their context; unfinished slots are dropped without
 * callbacks (their collect is not set). s may be NULL. */
void wk_slots_destroy(struct wk_slots *s);

/* Slots in all (the context's n_seq_max). */
int32_t wk_slots_n(const struct wk_slots *s);
/* Slots holding a request (prefilling or decoding). */
int32_t wk_slots_n_active(const struct wk_slots *s);
/* The shared context (borrowed, lives as long as s). */
struct wk_context *wk_slots_context(struct wk_slots *s);

/*
 * Starts request r in a free slot, chosen as Ollama's runner does: the one
 * whose whole cache the prompt extends (the longest such), else the least
 * recently used one (an empty one first), which takes the longest prefix
 * any slot shares with the prompt by a copy (the last prompt token is
 * always run again, as wk_session_generate does). Where that prefix was
 * prefilled, a cut of it is kept that computes the rest as a prefill from
 * 0 does. Nothing runs until wk_slots_step. *slot is
 * its id (0 .. n - 1), or -1 with WK_OK when every slot is busy (queue
 * it). Errors (no slot taken): WK_E_INVALID (empty prompt, bad sampler
 * option), WK_E_RANGE (the prompt does not fit in the context with a
 * token to spare), WK_E_NOMEM; written to err (not r->err).
 */
enum wk_status wk_slots_add(struct wk_slots *s, const struct wk_slot_request *r, int32_t *slot,
                            struct wk_error *err);

/*
 * Runs one step (above) and reports what it did in *out, with the slots
 * that ended (end of generation, stop string, num_predict, a full context,
 * on_piece asking to stop, their cancel flag, an error), which are free
 * again on return, their stats written, *collect set. With no active
 * slot it does nothing. A forward's error ends the slots it carried,
 * with that error, and the step returns WK_OK; errors of its own:
 * none yet (WK_OK always), the status is there for backends that can fail
 * as a whole.
 */
enum wk_status wk_slots_step(struct wk_slots *s, struct wk_slots_step *out, struct wk_error *err);

/*
 * Ends slot id's request now (a client that left): no further callbacks,
 * its stats written, its collect NULL, status WK_E_CANCELLED in its err;
 * the slot is free on return and keeps what its cache holds for prefix
 * reuse. A free slot or an id out of range is ignored.
 */
void wk_slots_cancel(struct wk_slots *s, int32_t id);

#endif /* WK_SLOTS_H */
