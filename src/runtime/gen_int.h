/*
 * gen_int.h - one generation's per-token state and steps, shared by
 * wk_session_generate (session.c: one request, with speculation) and the
 * slots (slots.c: several requests on one context, stepped together):
 * the sampler's choice with a grammar's mask, and the output side of each
 * chosen token (end of generation, the detokenizer, stop strings, the
 * think filter, logprobs, num_predict, collecting the answer). Internal to
 * src/runtime.
 *
 * Lifecycle: wk__gen_init (after wk__gen_check and a sampler), then per
 * token wk__gen_sample and wk__gen_emit_token until the latter returns
 * false, then wk__gen_finish, which flushes what is held back and frees
 * the state (not the sampler, which the caller owns).
 */
#ifndef WK_GEN_INT_H
#define WK_GEN_INT_H

#include "wk_runtime.h"

/* A token's logprobs waiting for the text that completes it. */
struct wk__pending_lp {
    struct wk_token_logprobs lp;
    uint64_t end; /* decoded bytes once the token's text is complete */
};

/* The output side of a generation (gen.c has the rules). */
struct wk__output {
    const struct wk_generate_params *p;
    struct wk_stop_matcher stop;
    struct wk__pending_lp *q; /* queued logprobs, oldest first */
    int32_t nq, capq;
    uint64_t decoded, emitted; /* bytes decoded so far, bytes passed to on_piece */
    char *text;                /* with p->collect: everything emitted */
    size_t text_len, text_cap;
    bool nomem;                /* collecting failed */
    struct wk_think_filter think; /* with p->hide_thinking */
};

/* One generation's state, shared by the plain step and the speculative
 * round. All pointers borrowed for the generation. */
struct wk__gen {
    const struct wk_tokenizer *tok;
    float *dense; /* [n_vocab] zeros between uses, for wk__gen_grammar_dist (NULL where unused) */
    const struct wk_generate_params *p;
    struct wk_sampler *sampler;
    struct wk_generate_stats *stats;
    struct wk_error *err;
    struct wk__output o;
    struct wk_detok detok;
    int32_t n_ctx, n_vocab;
    bool stopped;      /* a stop string completed */
    enum wk_status st; /* an error that ended generation */
    /* with p->grammar: two distributions, masked logits [n_vocab], the mask */
    struct wk_token_prob *dist, *dist2;
    float *masked;
    uint32_t *mask;
    bool grammar_on; /* p->grammar constrains now (a lazy one: between its trigger and its end) */
};

/* Checks a request before anything runs: prompt (1 .. n_ctx - 1 tokens)
 * and the draft options. Errors: WK_E_INVALID (empty prompt, negative
 * draft_max / draft_min), WK_E_RANGE (the prompt leaves no room). */
enum wk_status wk__gen_check(const struct wk_tokens *prompt, const struct wk_generate_params *p, int32_t n_ctx,
                             struct wk_error *err);

/* Starts g for request p with sampler (borrowed; its history already set
 * to the prompt) in a context of n_ctx positions; stats and err borrowed.
 * Out of memory leaves g->st set (WK_E_NOMEM): wk__gen_finish still
 * frees what was allocated. */
void wk__gen_init(struct wk__gen *g, const struct wk_tokenizer *tok, const struct wk_generate_params *p,
                  struct wk_sampler *sampler, struct wk_generate_stats *stats, struct wk_error *err, int32_t n_ctx,
                  int32_t n_vocab);

/* The next token from logits [n_vocab], pushed to the sampler's history
 * and accepted into the grammar (gen.c has the rule); -1 with g->st set
 * when the grammar allows no token. */
int32_t wk__gen_sample(struct wk__gen *g, const float *logits);

/* Emits token id (chosen and pushed) at position pos whose logits row is
 * row. Returns false when generation ends with it (gen.c). */
bool wk__gen_emit_token(struct wk__gen *g, int32_t id, const float *row, int32_t pos);

/* With a grammar: the distribution wk__gen_sample draws from at logits
 * [n_vocab] into out [n_vocab]; its count, or -1 (g->st). Uses g->dense. */
int32_t wk__gen_grammar_dist(struct wk__gen *g, const float *logits, struct wk_token_prob *out);

/* With a grammar, token id (chosen) advances it; false (g->st) when the
 * grammar refuses it. */
bool wk__gen_grammar_take(struct wk__gen *g, int32_t id);

/* Ends the generation: unless a stop string or cancellation ended it, the
 * detokenizer's tail and the held-back text go out; done_reason "stop"
 * after a stop string; *p->collect set (NULL on error); g's buffers freed.
 * Returns the generation's status (g->st, or WK_E_NOMEM). */
enum wk_status wk__gen_finish(struct wk__gen *g);

#endif /* WK_GEN_INT_H */
