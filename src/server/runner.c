/*
 * runner.c - `wick runner`: the process that owns one model and generates
 * for `wick serve` over the JSON-lines protocol wk_server.h describes.
 *
 * Threads: the main thread accepts connections; each connection gets its
 * own thread, which reads the request, renders the chat template,
 * tokenizes, checks that the prompt fits the context and validates the
 * sampler options (so a bad request is answered at once, and the next
 * prompt is tokenized while the model computes), then queues a job and
 * streams the job's output back. One compute thread runs the jobs: with
 * WICK_NUM_PARALLEL (OLLAMA_NUM_PARALLEL) N > 1 (unset: 4 where memory allows), on N slots
 * of one context stepped together (wk_slots.h, continuous batching:
 * compute_slots_main), each slot's KV cache reused by prefix; with N = 1,
 * a draft model (speculative decoding is not on the slots path yet) or an
 * architecture whose context holds one sequence, in order on the single
 * session (compute_main, as Ollama's runner serialises requests,
 * docs/reference/ollama-mlx-runner.md §1.5).
 *
 * The compute thread never blocks on a socket: it appends output lines to
 * the job's buffer, and the connection thread writes them out. A client
 * that reads nothing therefore stalls only its own connection thread. The
 * connection thread watches its socket for the peer hanging up and then
 * sets the job's cancel flag, which the session checks between forward
 * steps (and between layers during prefill) and the slots loop before each
 * step (wk_slots_cancel frees the slot at once); a job cancelled while
 * queued is dropped without running.
 */
#include "server_internal.h"

#include "../io/wk_options.h"
#include "../model/wk_embed.h"
#include "../runtime/wk_gotmpl.h"
#include "../runtime/wk_grammar.h"
#include "../runtime/wk_harmony.h"
#include "../runtime/wk_runtime.h"
#include "../runtime/wk_slots.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_REQUEST_BYTES ((size_t)256 << 20) /* the server's 4 MiB body (SRV_MAX_BODY), rewritten with rendered prompts and images */
#define MAX_STOPS WK_MAX_STOPS
#define MAX_LOGIT_BIAS 4096

/* One completion request, shared by its connection thread and the compute
 * thread (refs counts them); mu guards out and finished. */
struct job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    volatile bool cancel;
    struct wk_tokens ids;
    struct wk_sampler_params sp;
    struct wk_logit_bias *bias;
    int32_t num_predict;
    int32_t draft_max, draft_min; /* speculative decoding's draft lengths (draft_max 0 = off) */
    char *stops[MAX_STOPS];
    int32_t n_stops;
    bool logprobs;
    int32_t top_logprobs;
    bool hide_thinking; /* the chat format asked for it (wk_prompt.hide_thinking) */
    bool route_thinking; /* think: the blocks' text goes out as "thinking" lines */
    bool think_open;     /* the prompt opened a <think> block */
    json_t *rendered;   /* a render_only request's prompt text (a JSON string), else NULL */
    struct srv_tools *tools; /* a request with tools: its answer's tool calls (runner_tools.c) */
    struct wk_harmony_parser *harmony; /* gpt-oss: the answer read as harmony messages, or NULL */
    struct wk_grammar *grammar; /* structured output: the grammar and its matcher, or NULL */
    struct wk_grammar_matcher *matcher;
    int32_t lazy_trigger;       /* >= 0: the grammar is a strict tool call's, lazy (srv_tools_request_grammar) */
    json_t *pending_lp; /* compute thread only: entries not yet sent */
    struct srv_embed_batch *embed; /* an embed request's inputs (run_embed), else NULL */
    struct srv_embed_progress ep;  /* compute thread only: how far its pieces have come (with slots) */
    struct wk_buf out;
    /* Ollama's deprecated generate context: the prompt's text (past an added BOS) and the answer's, tokenized
     * at the end into the final line's "context" (want_context: a non-raw /api/generate) */
    bool want_context;
    bool one_call, halt; /* parallel_tool_calls false: the first call alone, the answer ending with it (halt) */
    struct wk_buf ctx_text;
    bool finished, nomem;
    /* compute thread only: what the generation runs with and writes (a
     * slot borrows them until it ends) */
    struct wk_generate_params gp;
    struct wk_generate_stats st;
    struct wk_error err;
    struct job *next;
    struct runner *rn; /* the runner it belongs to */
};

/* The runner process's state: made by wk_runner_main, handed to its
 * threads (no global holds it). */
struct runner {
    struct wk_model *model, *draft;
    struct wk_tokenizer *tok;
    struct wk_session *session; /* one request at a time (n_parallel 1, or a draft model), else NULL */
    struct wk_slots *slots;     /* several at once (n_parallel > 1), else NULL */
    int32_t n_parallel;         /* requests computed at once */
    struct srv_format *fmt; /* structured output's vocabulary */
    const char *model_path;
    int32_t n_ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *head, *tail;
    int queued;
    _Atomic bool busy;
    _Atomic int active; /* slots holding a request (written by the compute thread) */
    _Atomic int64_t tokens, requests, runs; /* runs: jobs started (not dropped) */
    struct srv_decoder_embedder embedder; /* embed requests (run_embed; the compute thread's) */
};

static struct job *job_new(struct runner *rn)
{
    struct job *j = wk_calloc(1, sizeof *j);
    if (!j) return NULL;
    j->rn = rn;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 1;
    j->sp = wk_sampler_params_default();
    j->num_predict = -1;
    j->draft_max = wk_generate_params_default().draft_max;
    return j;
}

static void job_unref(struct job *j)
{
    pthread_mutex_lock(&j->mu);
    bool last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last) return;
    wk_tokens_deinit(&j->ids);
    wk_free(j->bias);
    for (int32_t i = 0; i < j->n_stops; i++) wk_free(j->stops[i]);
    json_decref(j->pending_lp);
    json_decref(j->rendered);
    srv_tools_free(j->tools);
    wk_harmony_parser_free(j->harmony);
    wk_grammar_matcher_free(j->matcher);
    wk_grammar_free(j->grammar);
    if (j->embed) srv_embed_batch_deinit(j->embed);
    srv_embed_progress_deinit(&j->ep);
    wk_free(j->embed);
    wk_free(j->out.p);
    wk_free(j->ctx_text.p);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    wk_free(j);
}

/* Appends obj as one line to the job's output (stealing the reference). */
static void job_push(struct job *j, json_t *obj)
{
    char *s = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    pthread_mutex_lock(&j->mu);
    if (!s || !wk_buf_add(&j->out, s, strlen(s)) || !wk_buf_add(&j->out, "\n", 1)) j->nomem = true;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    free(s);
}

static void job_finish(struct job *j)
{
    pthread_mutex_lock(&j->mu);
    j->finished = true;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* ------------------------------------------------------------ requests */

/* Reads the sampler options and limits of request req into j; false with
 * msg set on a bad one. */
static bool parse_options(struct job *j, json_t *req, char *msg, size_t cap)
{
    json_t *opts = json_object_get(req, "options");
    if (opts && !json_is_object(opts) && !json_is_null(opts)) {
        snprintf(msg, cap, "options must be an object");
        return false;
    }
    struct {
        const char *name;
        float *f;
        int32_t *i;
        int64_t *l;
    } fields[] = {
        {"temperature", &j->sp.temperature, NULL, NULL},
        {"top_k", NULL, &j->sp.top_k, NULL},
        {"top_p", &j->sp.top_p, NULL, NULL},
        {"min_p", &j->sp.min_p, NULL, NULL},
        {"seed", NULL, NULL, &j->sp.seed},
        {"repeat_last_n", NULL, &j->sp.repeat_last_n, NULL},
        {"repeat_penalty", &j->sp.repeat_penalty, NULL, NULL},
        {"presence_penalty", &j->sp.presence_penalty, NULL, NULL},
        {"frequency_penalty", &j->sp.frequency_penalty, NULL, NULL},
        {"num_predict", NULL, &j->num_predict, NULL},
        {"draft_max", NULL, &j->draft_max, NULL}, /* wick's own: 0 switches speculation off */
        {"draft_min", NULL, &j->draft_min, NULL}, /* wick's own: draft every step */
    };
    for (size_t i = 0; opts && i < WK_ARRAY_LEN(fields); i++) {
        json_t *v = json_object_get(opts, fields[i].name);
        if (!v || json_is_null(v)) continue;
        if (!json_is_number(v)) {
            snprintf(msg, cap, "option %s must be a number", fields[i].name);
            return false;
        }
        double d = json_number_value(v);
        struct wk_error e; /* the options table's range, as the server, the CLI and Modelfiles check it */
        const struct wk_option *o = wk_option_find(fields[i].name);
        if (o && wk_option_check_number(o, d, &e)) {
            snprintf(msg, cap, "%s", e.msg);
            return false;
        }
        if (fields[i].f) *fields[i].f = (float)d;
        else if (fields[i].l && json_is_integer(v)) *fields[i].l = json_integer_value(v); /* all 64 bits */
        else if (d != (double)(int64_t)d || d < -2147483648.0 || d > 2147483647.0) {
            if (fields[i].l && d == (double)(int64_t)d) *fields[i].l = (int64_t)d;
            else {
                snprintf(msg, cap, "option %s must be an integer", fields[i].name);
                return false;
            }
        } else if (fields[i].i) *fields[i].i = (int32_t)d;
        else *fields[i].l = (int64_t)d;
    }
    if (j->draft_max < 0 || j->draft_max >= WK_VERIFY_MAX || j->draft_min < 0 ||
        j->draft_min >= WK_VERIFY_MAX) {
        snprintf(msg, cap, "options draft_max and draft_min must be between 0 and %d", WK_VERIFY_MAX - 1);
        return false;
    }
    json_t *stop = json_object_get(req, "stop");
    if (stop && json_is_array(stop)) {
        size_t i;
        json_t *s;
        json_array_foreach(stop, i, s) {
            if (!json_is_string(s) || j->n_stops == MAX_STOPS) {
                snprintf(msg, cap, "stop must be a list of at most %d strings", MAX_STOPS);
                return false;
            }
            if (!(j->stops[j->n_stops++] = wk_asprintf("%s", json_string_value(s)))) return false;
        }
    }
    json_t *bias = json_object_get(req, "logit_bias");
    if (bias && json_is_array(bias) && json_array_size(bias) > 0) {
        size_t n = json_array_size(bias);
        if (n > MAX_LOGIT_BIAS || !(j->bias = wk_calloc(n, sizeof *j->bias))) {
            snprintf(msg, cap, "logit_bias has too many entries");
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(bias, i);
            json_t *id = json_array_get(e, 0), *b = json_array_get(e, 1);
            if (!json_is_integer(id) || !json_is_number(b)) {
                snprintf(msg, cap, "logit_bias entries must be [token id, bias]");
                return false;
            }
            j->bias[i] = (struct wk_logit_bias){(int32_t)json_integer_value(id),
                                                (float)json_number_value(b)};
        }
        j->sp.logit_bias = j->bias;
        j->sp.n_logit_bias = (int32_t)n;
    }
    j->logprobs = json_is_true(json_object_get(req, "logprobs"));
    j->one_call = json_is_true(json_object_get(req, "one_call"));
    json_t *top = json_object_get(req, "top_logprobs");
    if (top && json_is_integer(top)) j->top_logprobs = (int32_t)json_integer_value(top);
    if (j->top_logprobs < 0 || j->top_logprobs > WK_MAX_TOP_LOGPROBS) {
        snprintf(msg, cap, "top_logprobs must be between 0 and %d", WK_MAX_TOP_LOGPROBS);
        return false;
    }
    return true;
}

static bool push_content(void *user, const char *text, size_t len);
static bool push_calls(void *user, json_t *calls);

/* Renders and tokenizes the prompt of req into j->ids and checks it fits;
 * returns 200, or 400/500 with msg set. */
static int prepare(struct job *j, json_t *req, char *msg, size_t cap)
{
    struct runner *rn = j->rn;
    if (!parse_options(j, req, msg, cap)) return 400;
    struct wk_sampler *s;
    struct wk_error err;
    wk_error_clear(&err);
    if (wk_sampler_create(&j->sp, wk_model_hparams(rn->model)->n_vocab, rn->n_ctx, &s, &err)) {
        snprintf(msg, cap, "%s", err.msg);
        return 400;
    }
    wk_sampler_destroy(s);

    struct wk_prompt prompt = {0};
    enum wk_status st = WK_OK;
    json_t *raw = json_object_get(req, "raw"), *msgs = json_object_get(req, "messages");
    const char *tools_tt = NULL;
    size_t tools_tl = 0;
    json_t *jt = json_object_get(req, "think");
    int think = json_is_boolean(jt) ? json_is_true(jt) : json_is_string(jt) ? 1 : -1; /* a level: on */
    /* gpt-oss (a harmony template): think may be a level, the template's reasoning_effort */
    const char *effort = NULL;
    const bool harmony = json_is_array(msgs) && !json_is_string(json_object_get(req, "template")) &&
                         srv_harmony_model(rn->model);
    if (harmony && wk_harmony_reasoning_effort(jt, &effort, &err)) return snprintf(msg, cap, "%s", err.msg), 400;
    /* think false on a model that does not think (or renders with a Go TEMPLATE): nothing to turn off */
    if (think == 0 && (json_is_string(json_object_get(req, "template")) || !wk_model_can_think(rn->model))) think = -1;
    /* Anthropic's route (as Ollama's relax_thinking): thinking asked of a model that cannot is none */
    if (think == 1 && json_is_true(json_object_get(req, "think_relaxed")) &&
        (json_is_string(json_object_get(req, "template")) || !wk_model_can_think(rn->model)))
        think = -1;
    if (json_is_string(raw)) {
        st = wk_prompt_raw(rn->tok, json_string_value(raw), json_string_length(raw), json_is_true(json_object_get(req, "raw_special")), &prompt);
    } else if (json_object_get(req, "fim")) { /* a suffix: fill in the middle */
        st = srv_fim_prompt(rn->tok, req, &prompt, &err);
    } else if (json_is_array(msgs)) {
        json_t *tpl = json_object_get(req, "template"), *tools = json_object_get(req, "tools");
        if (json_array_size(tools) > 0) {
            size_t tl = json_string_length(tpl);
            const char *tt = json_is_string(tpl) ? json_string_value(tpl) : wk_model_chat_template(rn->model, &tl);
            if (!tt || !memmem(tt, tl, json_is_string(tpl) ? ".Tools" : "tools", json_is_string(tpl) ? 6 : 5)) {
                snprintf(msg, cap, "this model does not support tools: its chat template does not render them");
                return 400;
            }
            const struct srv_tools_sink sink = {push_content, push_calls, j};
            if (srv_tools_create(tt, tl, tools, &sink, &j->tools, &err)) {
                snprintf(msg, cap, "%s", err.msg);
                return 500;
            }
            tools_tt = tt, tools_tl = tl; /* for tool_choice's grammar, compiled once the prompt fits */
        }
        if (json_is_string(tpl) && json_object_get(req, "template_kwargs")) {
            snprintf(msg, cap, "chat_template_kwargs apply to a Jinja chat template, and this model has a Go TEMPLATE");
            return 400;
        }
        if (think == 1 && (json_is_string(tpl) || !wk_model_can_think(rn->model))) {
            snprintf(msg, cap, json_is_string(tpl) ? "think with a Modelfile TEMPLATE is not supported yet"
                                                    : "this model does not support thinking");
            return 400;
        }
        const struct srv_chat_render cr = {rn->model, rn->tok, req, tools, think, effort};
        st = srv_render_messages(&cr, msgs, &prompt, &err);
        /* Ollama's truncate (default true on its routes): the oldest messages dropped to fit */
        if (!st && json_is_true(json_object_get(req, "truncate_history")))
            st = srv_fit_history(&cr, msgs, rn->n_ctx, j->num_predict > 0 ? j->num_predict : rn->n_ctx / 4, &prompt,
                                 &j->ids, &err);
    } else {
        snprintf(msg, cap, "the request has neither messages nor a raw prompt");
        return 400;
    }
    /* Ollama's context (a non-raw generate, messages or suffix): the earlier exchange's text before this
     * prompt; the prompt's text kept for the answer's */
    if (!st && json_array_size(json_object_get(req, "context")) > 0) { /* the prompt changes: its ids are to come */
        j->ids.n = 0;
        st = srv_context_prompt(rn->tok, json_object_get(req, "context"), &prompt, &err);
    }
    if (!st && (j->want_context = json_is_true(json_object_get(req, "want_context"))))
        st = srv_prompt_text(rn->tok, &prompt, &j->ctx_text, &err);
    if (!st && json_is_true(json_object_get(req, "render_only"))) { /* /api/apply-template: the text alone */
        struct wk_buf b = {0};
        for (int32_t i = 0; i < prompt.n; i++) wk_buf_add(&b, prompt.segs[i].text, prompt.segs[i].len);
        j->rendered = json_stringn(b.p ? b.p : "", b.len);
        wk_free(b.p);
        /* and its tokens counted, when asked (Anthropic's count_tokens) */
        if (j->rendered && !j->ids.n && json_is_true(json_object_get(req, "count")) && wk_prompt_tokenize(rn->tok, &prompt, &j->ids))
            json_decref(j->rendered), j->rendered = NULL;
        wk_prompt_deinit(&prompt);
        if (j->rendered) return 200;
        snprintf(msg, cap, "the rendered prompt is not valid UTF-8, or out of memory");
        return 500;
    }
    j->hide_thinking = prompt.hide_thinking || think >= 0;
    j->route_thinking = think == 1;
    j->think_open = think == 1 && wk_prompt_opens_think(&prompt);
    if (harmony) { /* the parser splits analysis from the answer, whatever think says */
        j->hide_thinking = j->think_open = false;
        j->route_thinking = think != 0;
        if (!st) st = wk_harmony_parser_create(&j->harmony, &err);
    }
    size_t bytes = 0;
    for (int32_t i = 0; i < prompt.n; i++) bytes += prompt.segs[i].len;
    int64_t at_least = wk_tokenizer_min_tokens(rn->tok, bytes);
    if (!st && at_least >= rn->n_ctx) { /* not worth tokenizing: it cannot fit */
        wk_prompt_deinit(&prompt);
        snprintf(msg, cap,
                 "the prompt is %zu bytes, at least %lld tokens, which does not fit in the context of %d tokens "
                 "(num_ctx %d)", bytes, (long long)at_least, rn->n_ctx, rn->n_ctx);
        return 400;
    }
    int64_t counted = 0;
    /* a long prompt is counted in pieces first, stopping past the
     * context; a short one (or one that may fit) is tokenized exactly,
     * and its exact length named when it does not fit */
    if (!st && bytes > SRV_COUNT_PIECE && srv_prompt_surely_longer(rn->tok, &prompt, rn->n_ctx + rn->n_ctx / 8 + 64, &counted)) {
        wk_prompt_deinit(&prompt);
        snprintf(msg, cap,
                 "the prompt is more than %lld tokens, which does not fit in the context of %d tokens "
                 "(num_ctx %d)", (long long)counted, rn->n_ctx, rn->n_ctx);
        return 400;
    }
    if (!st && !j->ids.n && (st = wk_prompt_tokenize(rn->tok, &prompt, &j->ids))) /* unless truncate's fit has them */
        wk_error_set(&err, st, "out of memory while tokenizing");
    wk_prompt_deinit(&prompt);
    if (st) {
        snprintf(msg, cap, "%s", err.msg[0] ? err.msg : wk_status_str(st));
        return srv_http_status(st);
    }
    if (j->ids.n < 1) return snprintf(msg, cap, "the prompt is empty"), 400;
    if (j->ids.n >= rn->n_ctx) {
        snprintf(msg, cap,
                 "the prompt is %lld tokens, which does not fit in the context of %d tokens "
                 "(num_ctx %d; leave room for at least one generated token)",
                 (long long)j->ids.n, rn->n_ctx, rn->n_ctx);
        return 400;
    }
    /* structured output, once the prompt is known to fit: a compile can take a while */
    st = tools_tt ? srv_tools_request_grammar(req, tools_tt, tools_tl, rn->tok, &j->grammar, &j->lazy_trigger, &err)
                  : (j->lazy_trigger = -1, WK_E_NOT_FOUND);
    if (st == WK_E_NOT_FOUND) st = srv_format_compile(req, &j->grammar, &err);
    if (!st && j->grammar && think == 1) {
        snprintf(msg, cap, "think together with a format or grammar is not supported yet");
        return 400;
    }
    if (!st && j->grammar) st = srv_format_matcher(rn->fmt, rn->tok, j->grammar, &j->matcher, &err);
    if (st) {
        snprintf(msg, cap, "%s", err.msg[0] ? err.msg : wk_status_str(st));
        return srv_http_status(st);
    }
    return 200;
}

/* ------------------------------------------------------------ compute */

static json_t *token_json(const struct runner *rn, int32_t id, float logprob)
{
    char buf[256];
    size_t n = wk_tokenizer_token_bytes(rn->tok, id, true, buf, sizeof buf);
    if (n > sizeof buf) n = sizeof buf;
    size_t slen;
    char *s = wk_utf8_sanitize(buf, n, &slen);
    json_t *bytes = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(bytes, json_integer((unsigned char)buf[i]));
    json_t *e = json_pack("{s:s%, s:f, s:o}", "token", s ? s : "", s ? slen : 0, "logprob",
                          (double)logprob, "bytes", bytes);
    wk_free(s);
    return e;
}

static void on_logprobs(void *user, const struct wk_token_logprobs *lp)
{
    struct job *j = user;
    json_t *e = token_json(j->rn, lp->id, lp->logprob);
    if (e && j->top_logprobs > 0) {
        json_t *top = json_array();
        for (int32_t i = 0; i < lp->n_top; i++)
            json_array_append_new(top, token_json(j->rn, lp->top_ids[i], lp->top_logprobs[i]));
        json_object_set_new(e, "top_logprobs", top);
    }
    if (!j->pending_lp) j->pending_lp = json_array();
    json_array_append_new(j->pending_lp, e);
}

static void on_token(void *user, int32_t id)
{
    (void)id;
    atomic_fetch_add(&((struct job *)user)->rn->tokens, 1);
}

/* The answer's content: a line of its own (with the logprobs so far). */
static bool push_content(void *user, const char *text, size_t len)
{
    struct job *j = user;
    size_t n;
    char *s = wk_utf8_sanitize(text, len, &n);
    json_t *line = json_object();
    json_object_set_new(line, "content", s ? json_stringn(s, n) : json_string(""));
    wk_free(s);
    if (j->pending_lp) {
        json_object_set_new(line, "logprobs", j->pending_lp);
        j->pending_lp = NULL;
    }
    job_push(j, line);
    return !j->cancel;
}

/* Thinking text (think: true): a line of its own. */
static bool on_thinking(void *user, const char *text, size_t len)
{
    struct job *j = user;
    size_t n;
    char *s = wk_utf8_sanitize(text, len, &n);
    job_push(j, json_pack("{s:s%}", "thinking", s ? s : "", s ? n : 0));
    wk_free(s);
    return !j->cancel;
}

/* Tool calls found in the answer: a line of their own. */
static bool push_calls(void *user, json_t *calls)
{
    struct job *j = user;
    /* the first call alone; what follows it is not generated (on_content), where the call comes as it
     * completes (a tagged block; a bare JSON answer is parsed at its end) */
    if (j->one_call) {
        if (j->halt) return json_decref(calls), true;
        while (json_array_size(calls) > 1) json_array_remove(calls, 1);
        j->halt = true;
    }
    job_push(j, json_pack("{s:o}", "tool_calls", calls));
    return !j->cancel;
}

/* The answer's content (past the tool-call parser when there are tools). */
static bool on_content(void *user, const char *text, size_t len)
{
    struct job *j = user;
    if (j->tools) return srv_tools_push(j->tools, text, len) && !j->cancel && !j->halt;
    return push_content(user, text, len);
}

/* gpt-oss (harmony): the analysis channel, a line of its own unless think
 * is false; a call to a tool the request offered, else its text as content */
static bool harmony_thinking(void *user, const char *text, size_t len)
{
    return ((struct job *)user)->route_thinking ? on_thinking(user, text, len) : !((struct job *)user)->cancel;
}
static bool harmony_call(void *user, const struct wk_toolcall *c)
{
    struct job *j = user;
    return j->tools ? srv_tools_call(j->tools, c) && !j->cancel && !j->halt : push_content(user, c->raw, c->raw_len);
}

static const struct wk_harmony_sink *harmony_sink(struct job *j, struct wk_harmony_sink *s)
{
    *s = (struct wk_harmony_sink){harmony_thinking, on_content, harmony_call, j};
    return s;
}

static bool on_piece(void *user, const char *text, size_t len)
{
    struct job *j = user;
    if (j->want_context && !wk_buf_add(&j->ctx_text, text, len)) j->want_context = false; /* out of memory: none */
    struct wk_harmony_sink s;
    if (j->harmony) return wk_harmony_parser_push(j->harmony, text, len, harmony_sink(j, &s)) == WK_OK && !j->cancel;
    return on_content(user, text, len);
}

/* j's generation parameters, its callbacks writing to its own buffer. */
static void job_params(struct job *j)
{
    struct wk_generate_params gp = wk_generate_params_default();
    gp.sampler = j->sp;
    gp.num_predict = j->num_predict;
    gp.draft_max = j->draft_max;
    gp.draft_min = j->draft_min;
    gp.stop = (const char *const *)j->stops;
    gp.n_stop = j->n_stops;
    gp.on_piece = on_piece;
    gp.on_token = on_token;
    gp.user = j;
    gp.cancel = &j->cancel;
    gp.hide_thinking = j->hide_thinking;
    if (j->route_thinking) gp.on_thinking = on_thinking;
    gp.think_open = j->think_open;
    gp.grammar = j->matcher;
    gp.grammar_lazy = j->matcher && j->lazy_trigger >= 0, gp.grammar_trigger = j->lazy_trigger;
    if (j->logprobs) {
        gp.on_logprobs = on_logprobs;
        gp.top_logprobs = j->top_logprobs;
    }
    j->gp = gp;
    wk_error_clear(&j->err);
}

/* The end of j's generation, which ended with status s (j->st and j->err
 * written): the parsers' last output and the stats line, or the error
 * line; nothing when it was cancelled (its client left). */
static void job_report(struct job *j, enum wk_status s)
{
    struct wk_error *e = &j->err;
    const struct wk_generate_stats st = j->st;
    if (s == WK_E_CANCELLED) return;
    struct wk_harmony_sink hs;
    if (!s && j->harmony && (s = wk_harmony_parser_finish(j->harmony, harmony_sink(j, &hs))) == WK_E_CANCELLED) return;
    if (!s && j->tools && !srv_tools_finish(j->tools)) s = wk_error_set(e, WK_E_NOMEM, "out of memory");
    if (s) {
        int code = s == WK_E_RANGE || s == WK_E_INVALID ? 400 : 500;
        job_push(j, srv_error_line(code, e->msg[0] ? e->msg : wk_status_str(s)));
        return;
    }
    json_t *fin = json_pack("{s:b, s:s, s:i, s:i, s:I, s:i, s:I}", "done", 1, "done_reason",
                            st.done_reason, "prompt_tokens", st.prompt_tokens, "prompt_eval_count",
                            st.prompt_eval_count, "prompt_eval_duration",
                            (json_int_t)st.prompt_eval_ns, "eval_count", st.eval_count,
                            "eval_duration", (json_int_t)st.eval_ns);
    if (fin && st.stop_sequence) json_object_set_new(fin, "stop_sequence", json_string(st.stop_sequence));
    if (fin && st.spec_rounds > 0) /* speculative decoding's counts */
        json_object_set_new(fin, "draft", json_pack("{s:i, s:i, s:i}", "rounds", st.spec_rounds, "drafted",
                                                     st.draft_count, "accepted", st.draft_accepted));
    if (fin && j->want_context) fin = srv_context_ids(j->rn->tok, &j->ctx_text, fin);
    if (fin && j->pending_lp) {
        json_object_set_new(fin, "logprobs", j->pending_lp);
        j->pending_lp = NULL;
    }
    job_push(j, fin);
}

static void run_job(struct job *j)
{
    job_params(j);
    job_report(j, wk_session_generate(j->rn->session, &j->ids, &j->gp, &j->st, &j->err));
}

/* The compute thread's end of job j (ran, failed or dropped). */
static void job_done(struct job *j)
{
    atomic_fetch_add(&j->rn->requests, 1);
    job_finish(j);
    job_unref(j);
}

/* Runs embed job j on the compute thread (srv_decoder_embed): its answer
 * line, or nothing when the client left. */
static void run_embed(struct job *j)
{
    struct runner *rn = j->rn;
    struct wk_context *main_ctx = rn->slots ? wk_slots_context(rn->slots) : wk_session_context(rn->session);
    json_t *ans = srv_decoder_embed(&rn->embedder, main_ctx, j->embed, &j->cancel);
    if (ans) job_push(j, ans);
}

/* One piece of embed job j between slot steps (srv_decoder_embed_step):
 * true when the job is over (answered, refused, or its client left). */
static bool embed_step(struct job *j)
{
    struct runner *rn = j->rn;
    bool done;
    json_t *ans = srv_decoder_embed_step(&rn->embedder, wk_slots_context(rn->slots), j->embed, &j->ep, &j->cancel,
                                         &done);
    if (ans) job_push(j, ans);
    return done;
}

/* The next queued job, or NULL when none is queued and wait is false
 * (with wait, sleeps until one is). */
static struct job *queue_pop(struct runner *rn, bool wait)
{
    pthread_mutex_lock(&rn->mu);
    while (wait && !rn->head) pthread_cond_wait(&rn->cv, &rn->mu);
    struct job *j = rn->head;
    if (j) {
        rn->head = j->next;
        if (!rn->head) rn->tail = NULL;
        j->next = NULL;
        rn->queued--;
    }
    pthread_mutex_unlock(&rn->mu);
    return j;
}

/* Puts j back at the head of the queue. */
static void queue_unpop(struct runner *rn, struct job *j)
{
    pthread_mutex_lock(&rn->mu);
    j->next = rn->head;
    rn->head = j;
    if (!rn->tail) rn->tail = j;
    rn->queued++;
    pthread_mutex_unlock(&rn->mu);
}

/*
 * The compute thread with parallel slots (issue 26): each turn it cancels
 * the slots whose client left (at once, wk_slots_cancel), starts queued
 * jobs in order while a slot is free, runs one wk_slots_step (a decode
 * token for every decoding slot, a prefill chunk for one), and finishes
 * the jobs whose slots ended in it. An embed request needs no slot: one
 * at a time (in queue order) is computed a piece per turn (a forward over
 * a few short inputs, or one long one: embed_step) beside the slots'
 * steps, so neither it nor the decoding streams wait for the other to
 * end. It sleeps only when no slot and no embed request are active and
 * nothing is queued. Each job's callbacks write to its own buffer, so the
 * slots' outputs never mix.
 */
static void *compute_slots_main(void *arg)
{
    struct runner *rn = arg;
    struct wk_slots *sl = rn->slots;
    const int32_t n = wk_slots_n(sl);
    struct job *active[WK_SEQ_MAX] = {0}; /* the job in each slot */
    struct job *emb = NULL;                /* the embed request being computed */
    for (;;) {
        for (int32_t i = 0; i < n; i++) { /* clients that left free their slots now */
            if (active[i] && active[i]->cancel) {
                wk_slots_cancel(sl, i);
                job_done(active[i]);
                active[i] = NULL;
            }
        }
        while (wk_slots_n_active(sl) < n || !emb) {
            const bool idle = wk_slots_n_active(sl) == 0 && !emb;
            if (idle) atomic_store(&rn->busy, false), atomic_store(&rn->active, 0);
            struct job *j = queue_pop(rn, idle);
            if (!j) break;
            if (j->cancel) { /* a job whose client left while queued never runs */
                job_done(j);
                continue;
            }
            if (j->embed) { /* computed a piece per turn below; one at a time, in order */
                if (emb) {
                    queue_unpop(rn, j);
                    break;
                }
                atomic_store(&rn->busy, true);
                atomic_fetch_add(&rn->runs, 1);
                emb = j;
                continue;
            }
            if (wk_slots_n_active(sl) == n) { /* a generation waits for a slot, and what queues behind it */
                queue_unpop(rn, j);
                break;
            }
            job_params(j);
            struct wk_slot_request r = {.prompt = &j->ids, .gen = &j->gp, .stats = &j->st, .err = &j->err};
            struct wk_error e;
            wk_error_clear(&e);
            int32_t id = -1;
            enum wk_status st = wk_slots_add(sl, &r, &id, &e);
            if (st) {
                j->err = e;
                job_report(j, st);
                job_done(j);
                continue;
            }
            if (id < 0 || id >= n || active[id]) { /* no free slot after all (it said one was): later */
                queue_unpop(rn, j);
                break;
            }
            atomic_store(&rn->busy, true);
            atomic_fetch_add(&rn->runs, 1);
            active[id] = j;
        }
        atomic_store(&rn->active, wk_slots_n_active(sl) + (emb != NULL));
        if (emb && embed_step(emb)) {
            job_done(emb);
            emb = NULL;
        }
        if (wk_slots_n_active(sl) == 0) continue;
        struct wk_slots_step out;
        struct wk_error e;
        wk_error_clear(&e);
        enum wk_status st = wk_slots_step(sl, &out, &e);
        for (int32_t k = 0; !st && k < out.n_done; k++) {
            const int32_t id = out.done[k].slot;
            if (id < 0 || id >= n || !active[id]) continue;
            job_report(active[id], out.done[k].status);
            job_done(active[id]);
            active[id] = NULL;
        }
        if (st) { /* the step failed as a whole: every slot's request ends with its error */
            for (int32_t i = 0; i < n; i++) {
                if (!active[i]) continue;
                wk_slots_cancel(sl, i);
                active[i]->err = e;
                job_report(active[i], st);
                job_done(active[i]);
                active[i] = NULL;
            }
        }
    }
    return NULL;
}

static void *compute_main(void *arg)
{
    struct runner *rn = arg;
    for (;;) {
        pthread_mutex_lock(&rn->mu);
        while (!rn->head) pthread_cond_wait(&rn->cv, &rn->mu);
        struct job *j = rn->head;
        rn->head = j->next;
        if (!rn->head) rn->tail = NULL;
        rn->queued--;
        atomic_store(&rn->busy, !j->cancel);
        pthread_mutex_unlock(&rn->mu);
        if (!j->cancel) { /* a job whose client left while queued never runs */
            atomic_fetch_add(&rn->runs, 1);
            if (j->embed) run_embed(j);
            else run_job(j);
        }
        atomic_store(&rn->busy, false);
        atomic_fetch_add(&rn->requests, 1);
        job_finish(j);
        job_unref(j);
    }
    return NULL;
}

/* ------------------------------------------------------------ connections */

static json_t *status_json(struct runner *rn)
{
    pthread_mutex_lock(&rn->mu);
    int queued = rn->queued;
    pthread_mutex_unlock(&rn->mu);
    return json_pack("{s:i, s:b, s:b, s:i, s:I, s:I, s:I, s:i, s:i, s:i, s:s}", "status", 200, "draft_loaded",
                     rn->draft != NULL, "busy",
                     (int)atomic_load(&rn->busy), "queued", queued, "tokens_generated",
                     (json_int_t)atomic_load(&rn->tokens), "requests",
                     (json_int_t)atomic_load(&rn->requests), "runs", (json_int_t)atomic_load(&rn->runs),
                     "n_ctx", rn->n_ctx, "n_parallel", rn->n_parallel, "active",
                     rn->slots ? atomic_load(&rn->active) : (int)atomic_load(&rn->busy), "model", rn->model_path);
}

static void stream(int fd, struct job *j)
{
    struct wk_buf local = {0};
    for (;;) {
        pthread_mutex_lock(&j->mu);
        if (!j->out.len && !j->finished) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 50 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&j->cv, &j->mu, &ts);
        }
        struct wk_buf b = j->out;
        j->out = local;
        j->out.len = 0;
        bool fin = j->finished, nomem = j->nomem;
        pthread_mutex_unlock(&j->mu);
        local = b;
        if (local.len && !srv_send_all(fd, local.p, local.len)) break;
        local.len = 0;
        if (nomem) {
            srv_send_json(fd, srv_error_line(500, "out of memory"));
            break;
        }
        if (fin) {
            /* output pushed after the last look */
            pthread_mutex_lock(&j->mu);
            bool more = j->out.len > 0;
            pthread_mutex_unlock(&j->mu);
            if (!more) break;
            continue;
        }
        if (srv_peer_gone(fd)) break;
    }
    j->cancel = true; /* no-op when finished; else the client left */
    wk_free(local.p);
}

/* Queues job j for the compute thread and streams its output to fd until it ends. */
static void queue_and_stream(struct runner *rn, struct job *j, int fd)
{
    j->refs++; /* the compute thread's */
    pthread_mutex_lock(&rn->mu);
    if (rn->tail) rn->tail->next = j;
    else rn->head = j;
    rn->tail = j;
    rn->queued++;
    pthread_cond_signal(&rn->cv);
    pthread_mutex_unlock(&rn->mu);
    stream(fd, j);
}

static void *conn_main(void *arg)
{
    struct srv_conn ca = *(struct srv_conn *)arg;
    wk_free(arg);
    struct runner *rn = ca.rn;
    const int fd = ca.fd;
    size_t len = 0;
    char *line = srv_read_line(fd, MAX_REQUEST_BYTES, &len);
    json_error_t je;
    json_t *req = line ? json_loadb(line, len, 0, &je) : NULL;
    wk_free(line);
    if (!req || !json_is_object(req)) {
        if (line) srv_send_json(fd, srv_error_line(400, "the runner request is not a JSON object"));
    } else if (json_is_true(json_object_get(req, "status"))) {
        srv_send_json(fd, status_json(rn));
    } else if (json_object_get(req, "tokenize")) { /* the model's tokenizer alone: nothing queued */
        srv_send_json(fd, srv_tokenize_json(rn->tok, req));
    } else if (json_object_get(req, "detokenize")) {
        srv_send_json(fd, srv_detokenize_json(rn->tok, req));
    } else if (json_object_get(req, "embed")) { /* one answer line, computed on the compute thread */
        struct job *j = job_new(rn);
        char msg[WK_ERROR_MSG_MAX] = "out of memory";
        int code = j && (j->embed = wk_calloc(1, sizeof *j->embed)) ? 0 : 500;
        if (!code) code = srv_embed_batch_parse(j->embed, req, rn->tok, rn->n_ctx, msg, sizeof msg);
        if (code) srv_send_json(fd, srv_error_line(code, msg));
        else queue_and_stream(rn, j, fd);
        if (j) job_unref(j);
    } else {
        struct job *j = job_new(rn);
        char msg[WK_ERROR_MSG_MAX] = "out of memory";
        int code = j ? prepare(j, req, msg, sizeof msg) : 500;
        if (code != 200) {
            srv_send_json(fd, srv_error_line(code, msg));
        } else if (j->rendered) {
            srv_send_json(fd, json_pack("{s:i, s:O, s:I}", "status", 200, "prompt", j->rendered, "prompt_tokens",
                                        (json_int_t)j->ids.n));
        } else if (srv_send_json(fd, json_pack("{s:i, s:I}", "status", 200, "prompt_tokens",
                                           (json_int_t)j->ids.n))) {
            queue_and_stream(rn, j, fd);
        }
        if (j) job_unref(j);
    }
    json_decref(req);
    close(fd);
    return NULL;
}

int wk_runner_main(const struct wk_runner_opts *o)
{
    if (wk_embed_is_model(o->model)) return srv_runner_embed_main(o); /* runner_embed.c */
    if (!srv_runner_watch_parent((long)o->parent)) return 1; /* the server died before we started */
    signal(SIGPIPE, SIG_IGN);
    /* the process's runner, shared with its threads; lives until the process ends */
    struct runner *rn = wk_calloc(1, sizeof *rn);
    if (!rn) return 1;
    pthread_mutex_init(&rn->mu, NULL);
    pthread_cond_init(&rn->cv, NULL);
    rn->model_path = o->model;
    struct wk_error err;
    wk_error_clear(&err);
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = o->n_ctx;
    cp.n_threads = o->n_threads;
    const char *kv_name;
    enum wk_status st = wk_kv_type_from_env(&cp.kv_type, &kv_name)
                            ? WK_OK
                            : wk_error_set(&err, WK_E_INVALID, "OLLAMA_KV_CACHE_TYPE '%s' is not f32, f16 or q8_0", kv_name);
    if (!st) st = wk_model_load(o->model, &rn->model, &err);
    if (!st) st = wk_tokenizer_for_model(rn->model, &rn->tok, &err);
    if (!st && o->draft && *o->draft) st = wk_model_load(o->draft, &rn->draft, &err);
    if (!st) rn->n_parallel = srv_runner_n_parallel(rn->model, o->n_ctx, cp.kv_type);
    if (!st && rn->draft) rn->n_parallel = 1; /* speculative decoding runs on the session alone (wk_slots has none yet) */
    if (!st && rn->n_parallel > 1) {
        cp.n_seq_max = rn->n_parallel; /* each slot a KV stripe of n_ctx positions */
        st = wk_slots_create(rn->model, rn->tok, &cp, &rn->slots, &err);
        if (st == WK_E_UNSUPPORTED) { /* an architecture without several sequences yet: one at a time */
            fprintf(stderr, "wick runner: %s; serving one request at a time\n", err.msg);
            wk_error_clear(&err);
            rn->n_parallel = 1, cp.n_seq_max = 0, st = WK_OK;
        }
    }
    if (!st && !rn->slots) st = wk_session_create(rn->model, rn->tok, &cp, &rn->session, &err);
    if (!st && rn->draft) st = wk_session_set_draft(rn->session, rn->draft, &err);
    if (!st && !(rn->fmt = srv_format_new())) st = wk_error_set(&err, WK_E_NOMEM, "out of memory");
    if (!st) srv_decoder_embedder_init(&rn->embedder, rn->model);
    int lfd = -1;
    if (!st) {
        const struct wk_context *ctx = rn->slots ? wk_slots_context(rn->slots) : wk_session_context(rn->session);
        rn->n_ctx = wk_context_n_ctx(ctx);
        if (cp.kv_type != WK_DTYPE_F32) /* OLLAMA_KV_CACHE_TYPE=f16 or q8_0 (not the default): taken, or not */
            fprintf(stderr, "wick runner: the KV cache holds %s entries%s (%d slot(s) of %d positions, %.1f MiB)\n",
                    wk_kv_type_name(wk_context_kv_type(ctx)), wk_context_kv_type(ctx) != cp.kv_type ? " (this model "
                    "cannot hold the type asked for)" : "", rn->n_parallel, rn->n_ctx, (double)wk_context_kv_bytes(ctx) / (1 << 20));
        if ((lfd = srv_runner_listen(o->socket, &err)) < 0) st = err.status;
    }
    pthread_t compute;
    if (!st && pthread_create(&compute, NULL, rn->slots ? compute_slots_main : compute_main, rn))
        st = wk_error_set(&err, WK_E_IO, "cannot start the compute thread");
    if (st) {
        json_t *e = json_pack("{s:s}", "error", err.msg[0] ? err.msg : wk_status_str(st));
        char *s = json_dumps(e, JSON_COMPACT);
        printf("%s\n", s ? s : "{\"error\":\"out of memory\"}");
        fflush(stdout);
        free(s);
        json_decref(e);
        return 1;
    }
    /* bytes_per_token: wk_tokenizer_min_tokens's divisor, so the server can
     * refuse a prompt far longer than the context before sending it here */
    printf("{\"ready\":true,\"n_ctx\":%d,\"n_parallel\":%d,\"draft\":%s,\"bytes_per_token\":%lld}\n", rn->n_ctx,
           rn->n_parallel,
           rn->draft ? "true" : "false", (long long)(1 + (1 << 20) / WK_MAX(1, wk_tokenizer_min_tokens(rn->tok, 1 << 20))));
    fflush(stdout);
    srv_runner_serve(lfd, (long)o->parent, conn_main, rn);
    return 1;
}
