/*
 * wk_runtime.h - what turns a model into answers: the sampler, the chat
 * turn format, and the generation session (prompt tokens, KV-cache prefix
 * reuse, prefill, the decode loop, streamed text).
 *
 * The session owns one wk_context and remembers which tokens its KV cache
 * holds, so a follow-up prompt that starts with the same tokens (the next
 * turn of a chat) only prefills what is new.
 */
#ifndef WK_RUNTIME_H
#define WK_RUNTIME_H

#include <jansson.h>

#include "../base/wk_base.h"
#include "../model/wk_model.h"
#include "../tokenizer/wk_tokenizer.h"

/* ------------------------------------------------------------- sampler */

/* One OpenAI logit_bias entry: bias is added to the token's logit. */
struct wk_logit_bias {
    int32_t id;
    float bias;
};

/* Ollama's option names and defaults (docs/reference/
 * ollama-mlx-runner.md §4), plus OpenAI's logit_bias. */
struct wk_sampler_params {
    float temperature;       /* 0 = greedy; default 0.8 */
    int32_t top_k;           /* 0 = off; default 40 */
    float top_p;             /* 1 = off; default 0.9 */
    float min_p;             /* 0 = off; default 0 */
    int64_t seed;            /* -1 = from the clock */
    int32_t repeat_last_n;   /* penalty window in tokens: 0 = penalties off, -1 = the
                              * context length; default 64 */
    float repeat_penalty;    /* logit / p if positive, * p if negative; <= 0 reads as 1
                              * (off); default 1 */
    float presence_penalty;  /* subtracted once per distinct token in the window; default 0 */
    float frequency_penalty; /* subtracted once per occurrence in the window; default 0 */
    const struct wk_logit_bias *logit_bias; /* n_logit_bias entries (copied), or NULL */
    int32_t n_logit_bias;
};
struct wk_sampler_params wk_sampler_params_default(void);

struct wk_sampler;

/* Creates a sampler for a vocabulary of n_vocab tokens and a context of
 * n_ctx tokens (what repeat_last_n -1 means). Errors: WK_E_INVALID for an
 * option out of range or a logit_bias entry naming a token outside the
 * vocabulary or a non-finite bias (the message names it), WK_E_NOMEM. */
enum wk_status wk_sampler_create(const struct wk_sampler_params *p, int32_t n_vocab, int32_t n_ctx,
                                 struct wk_sampler **out, struct wk_error *err);
void wk_sampler_destroy(struct wk_sampler *s);

/*
 * Sets the penalty history to the last repeat_last_n of tokens [n] (the
 * prompt, all of it, whether or not it came from a cache); later samples
 * append their tokens. A sampler starts with an empty history.
 */
void wk_sampler_set_history(struct wk_sampler *s, const int32_t *tokens, int64_t n);

/*
 * The logits sample() works from: logits [n_vocab] f32 plus logit_bias,
 * then the penalties over the history window (repeat and presence once per
 * distinct token, frequency once per occurrence), written to out
 * [n_vocab]. Order as llama.cpp's chain (bias, then penalties), the
 * penalties as Ollama's §4.2 step 1.
 */
void wk_sampler_transform(const struct wk_sampler *s, const float *logits, float *out);

/*
 * Picks the next token from logits [n_vocab] f32 (not modified) and
 * appends it to the history: logit_bias and penalties (above), then greedy
 * when temperature is 0 or top_k is 1 (ties: lowest id); otherwise top_k,
 * softmax with temperature, top_p, min_p, renormalise, draw. Every
 * truncation keeps at least one token.
 */
int32_t wk_sampler_sample(struct wk_sampler *s, const float *logits);

/* A token and its probability in a next-token distribution. */
struct wk_token_prob {
    int32_t id;
    float p;
};

/*
 * The distribution wk_sampler_sample draws from, for speculative
 * decoding's acceptance rule: logits [n_vocab] f32 through logit_bias,
 * the penalties over the current history, then (unless greedy) top_k,
 * softmax with temperature, top_p, min_p, renormalised to sum 1. Writes
 * out [n_vocab] (candidates, most likely first; ties: lower id first) and
 * returns how many (>= 1). Greedy: one candidate, the argmax (lowest id
 * among ties), with probability 1. Consumes no randomness, leaves the
 * history as it is.
 */
int32_t wk_sampler_dist(struct wk_sampler *s, const float *logits, struct wk_token_prob *out);
/* Draws a token from d [n] (probabilities, need not sum to 1) with the
 * sampler's seeded randomness; n == 1 draws nothing. The history is not
 * changed. wk_sampler_sample = dist, draw, push. */
int32_t wk_sampler_draw(struct wk_sampler *s, const struct wk_token_prob *d, int32_t n);
/* The next uniform double in [0, 1) of the sampler's seeded sequence. */
double wk_sampler_uniform(struct wk_sampler *s);
/* True when the sampler always picks the argmax (temperature 0 or top_k 1). */
bool wk_sampler_is_greedy(const struct wk_sampler *s);

/* Tokens the history can be popped by at once (drafted tokens). */
#define WK_SAMPLER_POP_MAX 32
/* Appends token id to the penalty history. */
void wk_sampler_push(struct wk_sampler *s, int32_t id);
/* Removes the last n (<= WK_SAMPLER_POP_MAX, <= pushed) tokens of the
 * history, so the window is again what it was before they were pushed
 * (speculative decoding's rejected drafts). n beyond that is a
 * programmer error. */
void wk_sampler_pop(struct wk_sampler *s, int32_t n);

/*
 * Slots: several sequences sampled side by side (the server's batched
 * requests), each registered under an id with its own options, seed and
 * penalty history (seeded from its prompt). One call samples any subset
 * of the slots, in any order, one logits row each; each slot's result and
 * its state afterwards are exactly those of sampling it alone.
 */
struct wk_sampler_slots;
/* Errors: WK_E_NOMEM. */
enum wk_status wk_sampler_slots_create(int32_t n_vocab, int32_t n_ctx, struct wk_sampler_slots **out,
                                       struct wk_error *err);
void wk_sampler_slots_destroy(struct wk_sampler_slots *s);
/* Registers slot id with options p (logit_bias copied) and its prompt
 * tokens [n_prompt] for the penalty history. Errors: WK_E_INVALID (id in
 * use, or a bad option: the message names it), WK_E_NOMEM. */
enum wk_status wk_sampler_slots_add(struct wk_sampler_slots *s, int32_t id,
                                    const struct wk_sampler_params *p, const int32_t *prompt,
                                    int64_t n_prompt, struct wk_error *err);
/* Forgets slot id. Errors: WK_E_NOT_FOUND. */
enum wk_status wk_sampler_slots_remove(struct wk_sampler_slots *s, int32_t id, struct wk_error *err);
/* For i < n: out[i] = the token slot ids[i] samples from logits row i
 * (logits [n][n_vocab] f32). Errors (nothing sampled): WK_E_NOT_FOUND (an
 * unknown id), WK_E_INVALID (an id twice). */
enum wk_status wk_sampler_slots_sample(struct wk_sampler_slots *s, const int32_t *ids, int32_t n,
                                       const float *logits, int32_t *out, struct wk_error *err);

/* ---------------------------------------------------------------- chat */

/* The model's tokenizer: from its GGUF metadata, or from the tokenizer
 * files of its Hugging Face folder. Errors: those of
 * wk_tokenizer_from_gguf / wk_tokenizer_from_hf. */
enum wk_status wk_tokenizer_for_model(const struct wk_model *m, struct wk_tokenizer **out,
                                      struct wk_error *err);

struct wk_chat_message {
    const char *role; /* "system", "user", "assistant" */
    const char *content;
};

/*
 * A rendered prompt: pieces of text, each either template scaffolding
 * (control tokens recognised) or content (taken literally). Owned by the
 * caller; free with wk_prompt_deinit.
 */
struct wk_prompt_segment {
    char *text;
    size_t len;
    bool scaffold;
};
struct wk_prompt {
    struct wk_prompt_segment *segs;
    int32_t n, cap;
    /* set by wk_chat_render when the model may answer with a <think>
     * block the user did not ask for (Qwen 3 with thinking off): pass it
     * on as wk_generate_params.hide_thinking */
    bool hide_thinking;
};
void wk_prompt_deinit(struct wk_prompt *p);
/* Appends a segment (text copied). Errors: WK_E_NOMEM. */
enum wk_status wk_prompt_append(struct wk_prompt *p, const char *text, size_t len, bool scaffold);

/*
 * Renders a conversation in the model family's turn format and, when
 * add_generation_prompt, opens the assistant's turn. Gemma 3: BOS,
 * "<start_of_turn>user\n" ... "<end_of_turn>\n", the system message folded
 * into the first user turn, "model" for the assistant, content trimmed
 * (the template Gemma 3 ships with). Llama-family models whose GGUF chat
 * template is ChatML: "<|im_start|>{role}\n{content}<|im_end|>\n", with
 * the template's default system message when the conversation has none.
 * Llama-family and Qwen 2 models render through their own chat template
 * (Jinja). A model with no chat template and no built-in format (a base
 * model) renders as raw completion, as Ollama's default TEMPLATE
 * "{{ .Prompt }}" does. Errors: WK_E_INVALID (roles that do not
 * alternate user/assistant for Gemma, a role with markup in it, a
 * template that raises), WK_E_UNSUPPORTED (a chat template the engine
 * cannot parse), WK_E_NOMEM.
 */
enum wk_status wk_chat_render(const struct wk_model *m, const struct wk_tokenizer *tok,
                              const struct wk_chat_message *msgs, int32_t n_msgs,
                              bool add_generation_prompt, struct wk_prompt *out,
                              struct wk_error *err);

/*
 * Renders the model's own chat template (Jinja, transformers' semantics)
 * over vars (a JSON object: messages, tools, enable_thinking, any other
 * variable; add_generation_prompt is set here, and bos_token / eos_token
 * to the model's unless vars has them; vars is modified). Content runs
 * (message strings, tool descriptions: wk_jinja_render_runs) become
 * literal segments; a BOS segment comes first where the tokenizer adds one
 * and the template did not write it. Errors: WK_E_UNSUPPORTED (no chat
 * template, or one that does not parse), WK_E_INVALID (the template
 * raised: the message is the template's), WK_E_RANGE, WK_E_NOMEM.
 */
enum wk_status wk_chat_render_jinja(const struct wk_model *m, const struct wk_tokenizer *tok, json_t *vars,
                                    bool add_generation_prompt, struct wk_prompt *out, struct wk_error *err);

/*
 * A chat request as a client sends it. messages: a JSON array of objects
 * {role, content, thinking?, tool_calls?: [{id?, function: {name,
 * arguments (object)}}], tool_call_id?, tool_name?}; tools: NULL or a JSON
 * array of tool definitions ({type: "function", function: {name,
 * description, parameters}}); kwargs: NULL or extra template variables;
 * think: -1 unset, 0 off, 1 on (the template's enable_thinking).
 */
struct wk_chat_request {
    const json_t *messages;
    const json_t *tools;
    const json_t *kwargs;
    int think;
    bool add_generation_prompt;
};

/*
 * Renders a request: with nothing but roles and contents, exactly as
 * wk_chat_render; otherwise through the model's own chat template
 * (wk_chat_render_jinja) with transformers' variables: messages with
 * tool_calls ({type: "function", id, function: {name, arguments}}),
 * reasoning_content (from thinking), tool_call_id and name (from
 * tool_name); tools; enable_thinking and thinking (the same switch under
 * the two names templates read); kwargs. A conversation that ends with an
 * assistant message with content (and no tool calls) is continued from
 * it, with add_generation_prompt: rendered without the generation prompt
 * and cut after the final message's content (transformers'
 * continue_final_message; Ollama's templates leave that turn open).
 * Errors: WK_E_INVALID (a
 * message without a role, content not a string; a template that raises),
 * WK_E_UNSUPPORTED (tools, thinking or tool calls for a model with no chat
 * template: the message says what renders its chats instead), those of
 * wk_chat_render and wk_chat_render_jinja.
 */
enum wk_status wk_chat_render_request(const struct wk_model *m, const struct wk_tokenizer *tok,
                                      const struct wk_chat_request *r, struct wk_prompt *out, struct wk_error *err);

/* msgs [n] as a JSON array of {"role", "content"} objects (a new
 * reference), the shape the template engines and wk_chat_request take;
 * NULL when out of memory. */
json_t *wk_chat_messages_json(const struct wk_chat_message *msgs, int32_t n);

/* Whether the model can think: Qwen 3's built-in format, or a chat template
 * that knows enable_thinking, reasoning_content or <think>. */
bool wk_model_can_think(const struct wk_model *m);

/* Whether a rendered prompt ends inside an opened "<think>" (some
 * templates' generation prompts open the block): pass it on as
 * wk_generate_params.think_open. */
bool wk_prompt_opens_think(const struct wk_prompt *p);

/*
 * Renders a conversation through an Ollama Modelfile TEMPLATE t (Go
 * text/template) as Ollama applies it (wk_gotmpl_render_chat): messages
 * and tools in Ollama's API shape (JSON arrays; tools may be NULL). The
 * output's runs that came from message content become literal segments,
 * the rest scaffolding; a BOS segment comes first where the tokenizer
 * adds one and the template did not write it. Errors: those of
 * wk_gotmpl_render_chat (WK_E_INVALID naming the template line,
 * WK_E_RANGE, WK_E_NOMEM).
 */
struct wk_gotmpl;
enum wk_status wk_chat_render_go(const struct wk_tokenizer *tok, const struct wk_gotmpl *t, const json_t *messages,
                                 const json_t *tools, struct wk_prompt *out, struct wk_error *err);

/* A raw prompt (no turn format): BOS as scaffolding where the tokenizer
 * adds one, then text [len] as literal content, or with special as
 * scaffolding too, so that control-token text in it is the control token
 * (Ollama's raw mode: a prompt formatted by hand, tokenized as llama.cpp
 * tokenizes with parse_special). Errors: WK_E_NOMEM. */
enum wk_status wk_prompt_raw(const struct wk_tokenizer *tok, const char *text, size_t len, bool special,
                             struct wk_prompt *out);

/*
 * A fill-in-the-middle prompt: a code model asked for the text between
 * prefix [plen] and suffix [slen] (Ollama's /api/generate "suffix",
 * llama-server's /infill). With t (a Go TEMPLATE that names .Suffix, as
 * Ollama's code models' "<|fim_prefix|>{{ .Prompt }}<|fim_suffix|>{{ .Suffix
 * }}<|fim_middle|>") the template runs once over .Prompt, .Suffix,
 * .Response "" and the Think fields false, as Ollama's template.Execute
 * does with a suffix; with t NULL the vocabulary's own tokens in PSM order
 * as llama-server's format_prompt_infill: BOS where the tokenizer adds one,
 * FIM_PRE, prefix, FIM_SUF, suffix, FIM_MID. Prefix and suffix stay literal
 * text either way (control-token text in them is not a control token).
 * Errors: WK_E_UNSUPPORTED (t NULL and the vocabulary has no FIM_PRE,
 * FIM_SUF and FIM_MID), those of wk_gotmpl_render_runs, WK_E_NOMEM.
 */
enum wk_status wk_prompt_fim(const struct wk_tokenizer *tok, const struct wk_gotmpl *t, const char *prefix,
                             size_t plen, const char *suffix, size_t slen, struct wk_prompt *out,
                             struct wk_error *err);

/* Tokenizes a rendered prompt: control tokens are recognised only inside
 * scaffold segments; text runs across segment boundaries are tokenized as
 * one run, so the ids equal those of the whole string when the content has
 * no control-token text. Errors: WK_E_NOMEM. */
enum wk_status wk_prompt_tokenize(const struct wk_tokenizer *tok, const struct wk_prompt *p,
                                  struct wk_tokens *out);

/* -------------------------------------------------------------- logprobs */

#define WK_MAX_TOP_LOGPROBS 20

/* One generated token's log-probabilities under the model's raw next-token
 * distribution (log-softmax of the logits, before penalties, temperature
 * and truncation; OpenAI's and Ollama's notion), natural log. The text and
 * bytes of each id come from the tokenizer (wk_tokenizer_piece, and the
 * byte-level decode of wick's tokenizer API). */
struct wk_token_logprobs {
    int32_t id;
    float logprob;
    int32_t n_top;                             /* alternatives below, most likely first */
    int32_t top_ids[WK_MAX_TOP_LOGPROBS];
    float top_logprobs[WK_MAX_TOP_LOGPROBS];
};

/*
 * Fills out for token id from logits [n_vocab] f32: the log-softmax
 * (max-subtracted, so huge logits stay finite; the exponentials by the
 * kernel table's sum_exp: 2 ulp each, summed in 16 float lanes then double) at id and the k highest entries (k <= WK_MAX_TOP_LOGPROBS; ties:
 * lower id first), sorted descending.
 */
void wk_logprobs_compute(const float *logits, int32_t n_vocab, int32_t id, int32_t k,
                         struct wk_token_logprobs *out);

/* ---------------------------------------------------------- stop strings */

/*
 * Stop strings matched on decoded text across token boundaries, with
 * hold-back (stop.c has the rule). Usage: push each decoded piece; emit
 * the first *emit bytes of m->buf, then wk_stop_matcher_consume(m, *emit);
 * when *stopped, generation ends (the stop string and what follows are
 * dropped). At the end, what remains in m->buf (m->len bytes) is emitted.
 * stops (n_stops NUL-terminated UTF-8 strings; empty ones are ignored) are
 * borrowed. Text with a NUL byte is matched only up to it.
 */
struct wk_stop_matcher {
    const char *const *stops;
    int32_t n_stops;
    char *buf; /* pending text, NUL-terminated */
    size_t len, cap;
    int32_t matched; /* the stop string that was found (an index into stops), -1 while none is */
};
void wk_stop_matcher_init(struct wk_stop_matcher *m, const char *const *stops, int32_t n_stops);
void wk_stop_matcher_deinit(struct wk_stop_matcher *m);
/* Errors: WK_E_NOMEM (nothing appended). */
enum wk_status wk_stop_matcher_push(struct wk_stop_matcher *m, const char *text, size_t len,
                                    size_t *emit, bool *stopped);
void wk_stop_matcher_consume(struct wk_stop_matcher *m, size_t n);

/* ----------------------------------------------------------- thinking */

/*
 * Keeps <think>...</think> blocks (tags included, and the whitespace after
 * "</think>") out of generated text, across piece boundaries (think.c has
 * the rule). Push each piece; fn gets the text back as runs, in order and
 * covering every byte, keep false for the dropped ones (text borrowed for
 * the call); a tag's first bytes wait for the next piece to decide. At the
 * end, flush hands on what is held. fn returning false stops the push
 * (the rest of the piece is not handed on) and push/flush return false.
 * Caller's storage; nothing to free.
 */
typedef bool (*wk_think_run_fn)(void *user, const char *text, size_t len, bool keep);
struct wk_think_filter {
    bool inside;     /* between "<think>" and "</think>" */
    bool skip_space; /* just after "</think>": whitespace is dropped */
    bool in_tag;     /* true while fn is handed a whole tag: a dropped run
                      * with inside set and in_tag clear is thinking text */
    size_t n_held;   /* bytes of the next tag matched and held back */
};
void wk_think_filter_init(struct wk_think_filter *f);
bool wk_think_filter_push(struct wk_think_filter *f, const char *text, size_t len, wk_think_run_fn fn,
                          void *user);
bool wk_think_filter_flush(struct wk_think_filter *f, wk_think_run_fn fn, void *user);

/* ------------------------------------------------------------ sessions */

struct wk_grammar_matcher;

/* Called with each piece of generated text as soon as it is complete
 * UTF-8; returning false stops generation (done_reason "stop"). */
typedef bool (*wk_piece_fn)(void *user, const char *text, size_t len);

struct wk_generate_params {
    struct wk_sampler_params sampler;
    int32_t num_predict; /* max tokens to generate; -1 = until the context is full */
    const char *const *stop; /* n_stop stop strings (borrowed), or NULL */
    int32_t n_stop;
    /* logprobs: with on_logprobs set, called for each generated token (not
     * for EOS/end of turn) with top_logprobs (0..20) alternatives, before
     * that token's text reaches on_piece; nothing is computed otherwise */
    void (*on_logprobs)(void *user, const struct wk_token_logprobs *lp);
    int32_t top_logprobs;
    /* non-streamed: with collect set, the whole answer is also returned in
     * *collect (malloc'd by wk_malloc, NUL-terminated, owned by the caller;
     * NULL on error) and *collect_len: the same bytes the stream emits */
    char **collect;
    size_t *collect_len;
    wk_piece_fn on_piece;
    /* called with each generated token's id (not EOS/end of turn) as soon
     * as it is sampled, before its text; may be NULL */
    void (*on_token)(void *user, int32_t id);
    void *user;
    const volatile bool *cancel; /* may be NULL; checked between steps */
    /* speculative decoding, when the session has a draft model, or else
     * prompt lookup (wk_lookup_draft: drafts copied from the prompt and
     * the output so far) when sampling is greedy and no grammar is set: at
     * most draft_max (0 = off, else capped at WK_VERIFY_MAX - 1) tokens
     * drafted per round, the number chosen by the session's wk_spec_ctl
     * (prompt lookup drafts fewer where the match continues for fewer);
     * default 8; the output is the same token for token either way;
     * draft_min > 0 drafts at least that many every round, never pausing
     * (for measurements and tests); default 0 */
    int32_t draft_max, draft_min;
    /* drop <think>...</think> blocks from the answer (on_piece, collect;
     * the logprobs of their tokens too), as wk_think_filter does, after
     * stop strings are matched; wk_prompt.hide_thinking says when */
    bool hide_thinking;
    /* with hide_thinking: the text inside the blocks (not the tags) goes
     * to on_thinking (may be NULL: dropped); think_open starts inside a
     * block (the prompt opened it: a generation prompt ending "<think>") */
    wk_piece_fn on_thinking;
    bool think_open;
    /* constrained sampling (structured output): a grammar matcher at the
     * answer's start (wk_grammar.h; borrowed, advanced as tokens are
     * chosen), or NULL. Each token is the unconstrained choice when the
     * grammar allows it, else drawn with the forbidden tokens removed; no
     * drafting while it is set */
    struct wk_grammar_matcher *grammar;
    /* with grammar: lazy, a tool call's constraint under tool_choice auto
     * (strict tools): tokens are unconstrained (the end of generation
     * allowed) until token grammar_trigger is chosen, or the answer's
     * first token is one the grammar can start with; the grammar takes
     * that token as its first and constrains from there until it is
     * complete, then waits for the trigger again (another call) */
    bool grammar_lazy;
    int32_t grammar_trigger;
};
struct wk_generate_params wk_generate_params_default(void);

/* Timings and counts of one generation, as Ollama reports them. */
struct wk_generate_stats {
    int32_t prompt_tokens;      /* tokens in the prompt */
    int32_t prompt_eval_count;  /* of which prefilled (not reused from the cache) */
    int64_t prompt_eval_ns;
    int32_t eval_count;         /* tokens generated */
    int64_t eval_ns;
    const char *done_reason;    /* "stop" or "length" (static) */
    const char *stop_sequence;  /* the stop string that ended it (borrowed from the params' stop list), or NULL */
    /* speculative decoding: rounds, tokens drafted, drafted tokens accepted
     * (acceptance rate accepted / drafted; mean accepted length per round
     * accepted / rounds) */
    int32_t spec_rounds, draft_count, draft_accepted;
};

/*
 * The draft length controller: picks k, the tokens to draft next round,
 * from the running acceptance rate a (accepted over accept/reject trials,
 * decayed by 0.9 per round) and the measured costs (ns per drafted token
 * t_d, per plain decode step t_1, per verification of n tokens t_v(n),
 * speculative.c has how unmeasured n are estimated): the k in 1..k_max
 * that maximises the expected tokens per round, (1 - a^(k+1)) / (1 - a)
 * (Leviathan et al. 2023, eq. 1), over its cost k·t_d + t_v(k + 1). When
 * no k beats plain decoding (1 / t_1), speculation pauses for
 * WK_SPEC_PAUSE plain steps, then probes again (k = 3) with half its
 * history forgotten (the session's first round's times are dropped:
 * first touches of memory); a pause right after a probe lasts twice the one
 * before (up to 64 x WK_SPEC_PAUSE) until a round is accepted whole; a
 * request's first pause, when it comes within its first two rounds, is
 * WK_SPEC_PAUSE / 4 (the draft's hardest tokens are often the first); and
 * after WK_SPEC_PROBES probes in a row that do not pay, or at once when
 * even rounds accepted whole would be under WK_SPEC_WORTH times plain
 * decoding's rate (a draft that costs about what the target does),
 * speculation stays off until the next request (wk_spec_ctl_begin): the
 * draft's catch-up after a pause costs about a prefill of the tokens it
 * missed. Until t_1 is measured, k is 0 (one plain step first);
 * the first round probes with k = 3.
 */
#define WK_SPEC_PAUSE 32
#define WK_SPEC_PROBES 3
#define WK_SPEC_WORTH 1.25
struct wk_spec_ctl {
    double acc, trials;              /* decayed counts */
    double t_draft, t_step, t_extra; /* ns, running means; 0 = not yet measured */
    double t_verify[WK_VERIFY_MAX + 1]; /* ns to verify n tokens, running means */
    int32_t pause;                   /* plain steps left before speculating again */
    int32_t pause_len;               /* the last pause's length (0: none since a full round) */
    int32_t failed_probes;           /* probes followed by a pause, this request */
    int32_t req_rounds;              /* rounds this request */
    int64_t n_rounds;                /* rounds seen (the first one's times are not kept) */
    bool probed;                     /* the last k returned was a probe */
    bool off;                        /* no speculation until wk_spec_ctl_begin */
    bool probe;                      /* next round drafts without weighing the cost */
};
void wk_spec_ctl_init(struct wk_spec_ctl *c);
/* A request starts: speculation switched off by failed probes may resume. */
void wk_spec_ctl_begin(struct wk_spec_ctl *c);
/* The number of tokens to draft next (0 = a plain step), at most k_max. */
int32_t wk_spec_ctl_k(struct wk_spec_ctl *c, int32_t k_max);
/* A round drafted k tokens in draft_ns, of which accepted passed, and
 * verified k + 1 tokens in verify_ns. */
void wk_spec_ctl_update(struct wk_spec_ctl *c, int32_t k, int32_t accepted, int64_t draft_ns,
                        int64_t verify_ns);
/* A plain decode step took step_ns. */
void wk_spec_ctl_plain(struct wk_spec_ctl *c, int64_t step_ns);
/* The running acceptance rate a (0..1) the controller weighs drafts with. */
double wk_spec_ctl_acceptance(const struct wk_spec_ctl *c);
/* A round of k drafts of which accepted passed, its times not kept (a
 * round verified beside other sequences' rows, whose time is not this
 * controller's: the acceptance counts only, as wk_spec_ctl_update keeps them). */
void wk_spec_ctl_count(struct wk_spec_ctl *c, int32_t k, int32_t accepted);

/*
 * The cost of a decode forward by its rows, for a step of several
 * sequences (continuous batching) that may also verify drafts: running
 * means of measured steps (ns) per row count, the first step of each
 * count dropped (first touches of scratch memory). An unmeasured count
 * between measured ones is interpolated linearly; above them, as
 * wk_spec_ctl's verification lengths are: the largest measured count plus
 * the mean extra cost a row has added between measured counts (0 until two
 * are measured), an estimate that errs low, so larger counts get tried: the
 * exploration. Rows differ in
 * cost by the kernels (a CPU's tiles read each weight once for up to 4, 8
 * or 16 tokens), so no fixed row budget suits every machine.
 */
#define WK_ROWS_COST_MAX (64 + WK_VERIFY_MAX) /* rows: 64 slots (wk_server's cap) and one's drafts */
struct wk_rows_cost {
    double t[WK_ROWS_COST_MAX + 1]; /* ns, running means; 0 = not measured */
    int32_t seen[WK_ROWS_COST_MAX + 1];
    double extra; /* ns a row adds, running mean; 0 until measured */
};
/* A decode forward of rows rows (1 .. WK_ROWS_COST_MAX; others are not
 * kept) took ns. */
void wk_rows_cost_add(struct wk_rows_cost *c, int32_t rows, int64_t ns);
/* The estimated ns of a decode forward of rows rows; 0 while no count is measured. */
double wk_rows_cost_est(const struct wk_rows_cost *c, int32_t rows);

/*
 * How many drafts each of n decoding sequences verifies in one step of
 * the batch (n rows of their next tokens, plus the drafts'): sequence i
 * has k_max[i] drafts on offer and acceptance rate acc[i] (its
 * wk_spec_ctl_acceptance); draft j of it (1-based) is taken with
 * probability acc[i]^j (every draft before it accepted: Leviathan et al.
 * 2023's model). Drafts are added best chance first, and the step takes
 * the number D (at most budget) that maximises the expected tokens, n +
 * the sum of the added chances, over the step's cost wk_rows_cost_est(c,
 * n + D); ties go to fewer rows. Writes k[i] (0 .. k_max[i]) and returns
 * D. With no cost measured yet, no drafts. O(n D).
 */
int32_t wk_spec_share(const struct wk_rows_cost *c, int32_t n, const double *acc, const int32_t *k_max,
                      int32_t budget, int32_t *k);

/* The n-gram lengths prompt lookup matches, longest first. */
#define WK_LOOKUP_NGRAM_MAX 4
#define WK_LOOKUP_NGRAM_MIN 2

/*
 * Prompt-lookup drafting (Saxena 2023, "Prompt Lookup Decoding"): drafts
 * the tokens that followed an earlier occurrence of the sequence's last n
 * tokens, where the sequence is hist [n_hist] token ids followed by last
 * (the chosen token not yet fed). n runs from WK_LOOKUP_NGRAM_MAX down to
 * WK_LOOKUP_NGRAM_MIN; for the first n with a match, the most recent
 * earlier occurrence is taken (text being copied is most often the text
 * copied last). Writes k ids to out [k] and returns k, or 0 when nothing
 * matches: where the continuation reaches the sequence's end it goes on
 * repeating the pattern (period: the distance between the occurrences).
 * Costs O(n_hist * n) compares, no allocation.
 */
int32_t wk_lookup_draft(const int32_t *hist, int32_t n_hist, int32_t last, int32_t k, int32_t *out);

struct wk_session;

/* Creates a session on model m with its own context (KV cache, threads).
 * A model that cannot hold cp->kv_type's cache (multi-head latent
 * attention: f32 only; q8_0 with a head dim not a multiple of 32) gets an
 * f32 one (wk_context_kv_type says which).
 * m and tok are borrowed and must outlive the session. Errors: WK_E_FORMAT
 * when the tokenizer has more tokens than the model has embeddings (the
 * message names the model file), those of wk_context_create. */
enum wk_status wk_session_create(const struct wk_model *m, const struct wk_tokenizer *tok,
                                 const struct wk_context_params *cp, struct wk_session **out,
                                 struct wk_error *err);
void wk_session_destroy(struct wk_session *s);
struct wk_context *wk_session_context(struct wk_session *s);

/*
 * Gives the session a draft model for speculative decoding (NULL takes it
 * away): a context for it with the target's size, threads and thread pool
 * (they run in turn). draft is borrowed and must outlive the session; its
 * vocabulary must be the target's (same ids; the store checks the tokens
 * at create time). Output is unchanged in distribution (greedy: token for
 * token), only faster when the draft guesses well.
 * Errors: WK_E_INVALID (vocabulary sizes differ), those of
 * wk_context_create, WK_E_NOMEM.
 */
enum wk_status wk_session_set_draft(struct wk_session *s, const struct wk_model *draft,
                                    struct wk_error *err);

/*
 * Generates a continuation of prompt: reuses the longest cached prefix,
 * prefills the rest, then samples until an end-of-generation token
 * (done_reason "stop"), num_predict tokens or a full context ("length"),
 * on_piece returning false ("stop") or cancellation (WK_E_CANCELLED).
 * The generated tokens stay in the cache for the next call.
 * Errors: WK_E_RANGE when the prompt does not fit in the context (nothing
 * is run), WK_E_INVALID (bad sampler option), WK_E_CANCELLED, WK_E_NOMEM.
 */
enum wk_status wk_session_generate(struct wk_session *s, const struct wk_tokens *prompt,
                                   const struct wk_generate_params *p,
                                   struct wk_generate_stats *stats, struct wk_error *err);

#endif /* WK_RUNTIME_H */
