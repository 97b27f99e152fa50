/*
 * cmd_run_local.c - `wick run` with the model in this process: loading it
 * (a store name, a GGUF file or a folder), rendering the conversation in
 * the model's turn format, generating and streaming the answer, and the
 * interactive commands that need the model or the store (/show, /save,
 * /load).
 *
 * The session's KV cache stays between turns (wk_session reuses the
 * longest common token prefix), so each turn prefills only its new
 * tokens. The options in effect for an answer are the defaults, then the
 * stored model's PARAMETERs, then the user's (the flags and /set
 * parameter), recomputed each turn; a new num_ctx makes a new session.
 * --keepalive means nothing here: the model lives as long as the command.
 */
#include "run.h"

#include "../src/io/wk_json.h"
#include "../src/io/wk_options.h"
#include "../src/model/wk_embed.h"
#include "../src/runtime/wk_gotmpl.h"
#include "../src/runtime/wk_grammar.h"
#include "../src/runtime/wk_runtime.h"
#include "../src/store/wk_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct run_local {
    struct wk_model *model, *draft;
    struct wk_tokenizer *tok;
    struct wk_session *session;
    struct wk_store_model stored; /* the store's SYSTEM, MESSAGEs, PARAMETERs */
    int32_t n_ctx;                /* num_ctx the session was made with */
    struct wk_grammar *grammar;   /* the compiled format, or NULL */
    char *grammar_for;            /* the format it was compiled for (owned) */
    struct wk_grammar_vocab *vocab; /* the vocabulary's tables for grammars, built on first use */
    int64_t load_ns;              /* reported by the first answer's --verbose */
};

static const struct wk_tokenizer *g_lp_tok; /* for print_logprobs */

static enum wk_status compile_format(struct run_local *l, const char *format, struct wk_error *err);

/* The options in effect: p's over g (and *n_ctx); a stop list replaces
 * the one before it (stops holds its strings, borrowed from p). */
static void apply_params(json_t *p, struct wk_generate_params *g, const char **stops, int32_t *n_ctx)
{
    const char *k;
    json_t *v;
    json_object_foreach(p, k, v) {
        const double x = json_number_value(v);
        struct wk_sampler_params *sp = &g->sampler;
        if (strcmp(k, "temperature") == 0) sp->temperature = (float)x;
        else if (strcmp(k, "top_k") == 0) sp->top_k = (int32_t)x;
        else if (strcmp(k, "top_p") == 0) sp->top_p = (float)x;
        else if (strcmp(k, "min_p") == 0) sp->min_p = (float)x;
        else if (strcmp(k, "seed") == 0) sp->seed = (int64_t)x;
        else if (strcmp(k, "repeat_last_n") == 0) sp->repeat_last_n = (int32_t)x;
        else if (strcmp(k, "repeat_penalty") == 0) sp->repeat_penalty = (float)x;
        else if (strcmp(k, "presence_penalty") == 0) sp->presence_penalty = (float)x;
        else if (strcmp(k, "frequency_penalty") == 0) sp->frequency_penalty = (float)x;
        else if (strcmp(k, "num_predict") == 0) g->num_predict = (int32_t)x;
        else if (strcmp(k, "draft_max") == 0) g->draft_max = (int32_t)x;
        else if (strcmp(k, "draft_min") == 0) g->draft_min = (int32_t)x;
        else if (strcmp(k, "num_ctx") == 0) *n_ctx = (int32_t)x;
        else if (strcmp(k, "stop") == 0) {
            size_t i;
            json_t *e;
            g->n_stop = 0;
            json_array_foreach(v, i, e) if (g->n_stop < WK_MAX_STOPS) stops[g->n_stop++] = json_string_value(e);
            g->stop = stops;
        }
    }
}

static void effective_params(const struct run_session *s, struct wk_generate_params *g, const char **stops,
                             int32_t *n_ctx)
{
    *g = wk_generate_params_default();
    *n_ctx = wk_context_params_default().n_ctx;
    apply_params(s->local->stored.params, g, stops, n_ctx);
    apply_params(s->options, g, stops, n_ctx);
}

/* A new session on l's model for n_ctx positions (the draft's too). */
static enum wk_status make_session(struct run_local *l, int32_t n_ctx, int32_t n_threads, struct wk_error *err)
{
    wk_session_destroy(l->session);
    l->session = NULL;
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = n_ctx;
    cp.n_threads = n_threads;
    const char *kv_name; /* the cache type wick serve would give this model */
    enum wk_status st = wk_kv_type_from_env(&cp.kv_type, &kv_name)
                            ? WK_OK
                            : wk_error_set(err, WK_E_INVALID,
                                           "OLLAMA_KV_CACHE_TYPE (WICK_KV_CACHE_TYPE) is '%s': f32, f16 or q8_0", kv_name);
    if (!st) st = wk_session_create(l->model, l->tok, &cp, &l->session, err);
    if (!st && l->draft) st = wk_session_set_draft(l->session, l->draft, err);
    if (st) {
        wk_session_destroy(l->session);
        l->session = NULL;
    }
    l->n_ctx = n_ctx;
    return st;
}

static void local_free(struct run_local *l)
{
    if (!l) return;
    wk_session_destroy(l->session);
    wk_tokenizer_destroy(l->tok);
    wk_model_destroy(l->draft);
    wk_model_destroy(l->model);
    wk_store_model_deinit(&l->stored);
    wk_grammar_free(l->grammar);
    wk_grammar_vocab_free(l->vocab);
    free(l->grammar_for);
    free(l);
}

/* Loads model name (with s's options and flags) into *out. */
static enum wk_status local_load(const struct run_session *s, const char *name, struct run_local **out,
                                 struct wk_error *err)
{
    struct run_local *l = calloc(1, sizeof *l);
    if (!l) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    char dir[4096];
    wk_store_default_dir(dir, sizeof dir);
    struct wk_store *store;
    enum wk_status st = wk_store_open(dir, &store, err);
    if (!st) {
        st = wk_store_resolve(store, name, true, &l->stored, err);
        wk_store_close(store);
    }
    if (!st && wk_embed_is_model(l->stored.weights))
        st = wk_error_set(err, WK_E_UNSUPPORTED, "%s is an embedding model: it makes embeddings (wick serve's "
                          "/api/embed and /v1/embeddings), it does not generate text", name);
    if (!st) st = wk_model_load(l->stored.weights, &l->model, err);
    if (!st) st = wk_tokenizer_for_model(l->model, &l->tok, err);
    const char *draft = s->o->draft ? s->o->draft : l->stored.draft[0] ? l->stored.draft : NULL;
    if (!st && draft) st = wk_model_load(draft, &l->draft, err);
    if (!st) {
        struct wk_generate_params g;
        const char *stops[WK_MAX_STOPS];
        int32_t n_ctx;
        struct run_session tmp = *s;
        tmp.local = l;
        effective_params(&tmp, &g, stops, &n_ctx);
        st = make_session(l, n_ctx, s->o->n_threads, err);
    }
    if (st) {
        local_free(l);
        return st;
    }
    *out = l;
    return WK_OK;
}

int run_local_open(struct run_session *s, int64_t t_start_ns)
{
    struct wk_error err;
    wk_error_clear(&err);
    enum wk_status st = local_load(s, s->model, &s->local, &err);
    if (!st && s->think == 1 && !s->o->raw && !wk_model_can_think(s->local->model))
        st = wk_error_set(&err, WK_E_UNSUPPORTED, "%s does not support thinking (--think)", s->model);
    if (!st && s->format) st = compile_format(s->local, s->format, &err);
    if (st) {
        fprintf(stderr, "wick run: %s\n", err.msg[0] ? err.msg : wk_status_str(st));
        return WK_EXIT_ERROR;
    }
    s->local->load_ns = wk_time_ns() - t_start_ns;
    json_decref(s->loaded_msgs);
    s->loaded_msgs = json_incref(s->local->stored.messages);
    int n_cpus = wk_cpu_features_get()->n_cores;
    if (s->o->n_threads > n_cpus)
        fprintf(stderr,
                "wick run: warning: --threads %d is more than the %d CPUs this process may use; "
                "extra threads wait for each other and slow generation down\n",
                s->o->n_threads, n_cpus);
    return WK_EXIT_OK;
}

void run_local_close(struct run_session *s)
{
    local_free(s->local);
    s->local = NULL;
}

bool run_local_can_think(const struct run_session *s)
{
    return s->local && wk_model_can_think(s->local->model);
}

/* Prints one token's bytes to stderr as a JSON string (part of a UTF-8
 * character shows as \ufffd). */
static void token_bytes(int32_t id, char *buf, size_t cap, size_t *n)
{
    *n = wk_tokenizer_token_bytes(g_lp_tok, id, false, buf, cap);
    if (*n > cap) *n = cap;
}

/* --logprobs: one line per generated token on stderr. */
static void print_logprobs(void *user, const struct wk_token_logprobs *lp)
{
    (void)user;
    char buf[256];
    size_t n;
    token_bytes(lp->id, buf, sizeof buf, &n);
    run_print_logprob(buf, n, lp->logprob);
    for (int32_t j = 0; j < lp->n_top; j++) {
        token_bytes(lp->top_ids[j], buf, sizeof buf, &n);
        run_print_top_logprob(j, buf, n, lp->top_logprobs[j]);
    }
    fputc('\n', stderr);
}

/* msgs through a Go TEMPLATE (a stored model's), as Ollama applies it. */
static enum wk_status render_go(const struct run_local *l, const struct wk_chat_message *msgs, int32_t n_msgs,
                                struct wk_prompt *prompt, struct wk_error *err)
{
    const char *text = l->stored.template_text;
    struct wk_gotmpl *t = NULL;
    json_t *arr = wk_chat_messages_json(msgs, n_msgs);
    enum wk_status st = arr ? wk_gotmpl_parse(text, strlen(text), &t, err) : WK_E_NOMEM;
    if (!st) st = wk_chat_render_go(l->tok, t, arr, NULL, prompt, err);
    if (st == WK_E_NOMEM) wk_error_set(err, st, "out of memory");
    else if (st) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        wk_error_set(err, st, "the model's TEMPLATE: %s", why);
    }
    wk_gotmpl_free(t);
    json_decref(arr);
    return st;
}

/* msgs with think set (0 or 1): through the model's own template with
 * enable_thinking (wk_chat_render_request), the stored SYSTEM first. */
static enum wk_status render_think(const struct run_local *l, int think, const struct wk_chat_message *msgs,
                                   int32_t n_msgs, struct wk_prompt *prompt, struct wk_error *err)
{
    if (l->stored.template_text && *l->stored.template_text)
        return wk_error_set(err, WK_E_UNSUPPORTED, "--think with a stored TEMPLATE is not supported yet");
    const bool sys = l->stored.system && strcmp(msgs[0].role, "system") != 0;
    struct wk_chat_message *all = calloc((size_t)n_msgs + 1, sizeof *all);
    if (!all) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    if (sys) all[0] = (struct wk_chat_message){"system", l->stored.system};
    memcpy(all + sys, msgs, (size_t)n_msgs * sizeof *all);
    json_t *arr = wk_chat_messages_json(all, n_msgs + sys);
    struct wk_chat_request r = {.messages = arr, .think = think, .add_generation_prompt = true};
    enum wk_status st = arr ? wk_chat_render_request(l->model, l->tok, &r, prompt, err)
                            : wk_error_set(err, WK_E_NOMEM, "out of memory");
    json_decref(arr);
    free(all);
    return st;
}

/* The prompt's segments: msgs in the model's turn format (its stored
 * TEMPLATE when it has one, else its own chat template), the stored
 * SYSTEM (unless msgs bring one) and MESSAGEs first; or with --raw the
 * last message's text alone after BOS where the model adds one, its
 * control-token text the control tokens (as a server's raw mode takes it). */
static enum wk_status render(const struct run_local *l, bool raw, int think, const struct wk_chat_message *msgs,
                             int32_t n_msgs, struct wk_prompt *prompt, struct wk_error *err)
{
    if (raw) {
        const char *text = msgs[n_msgs - 1].content;
        enum wk_status st = wk_prompt_raw(l->tok, text, strlen(text), true, prompt);
        return st ? wk_error_set(err, st, "out of memory") : WK_OK;
    }
    if (think >= 0) return render_think(l, think, msgs, n_msgs, prompt, err);
    const bool go = l->stored.template_text && *l->stored.template_text;
    json_t *pre = l->stored.messages;
    size_t n_pre = json_array_size(pre);
    bool sys = l->stored.system && strcmp(msgs[0].role, "system") != 0;
    if (!sys && n_pre == 0)
        return go ? render_go(l, msgs, n_msgs, prompt, err)
                  : wk_chat_render(l->model, l->tok, msgs, n_msgs, true, prompt, err);
    struct wk_chat_message *all = calloc(n_pre + 1 + (size_t)n_msgs, sizeof *all);
    if (!all) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    size_t k = 0;
    if (sys) all[k++] = (struct wk_chat_message){"system", l->stored.system};
    else if (strcmp(msgs[0].role, "system") == 0) all[k++] = msgs[0], msgs++, n_msgs--;
    for (size_t i = 0; i < n_pre; i++) {
        json_t *m = json_array_get(pre, i);
        all[k++] = (struct wk_chat_message){json_string_value(json_object_get(m, "role")),
                                            json_string_value(json_object_get(m, "content"))};
    }
    memcpy(all + k, msgs, (size_t)n_msgs * sizeof *all);
    enum wk_status st = go ? render_go(l, all, (int32_t)k + n_msgs, prompt, err)
                           : wk_chat_render(l->model, l->tok, all, (int32_t)k + n_msgs, true, prompt, err);
    free(all);
    return st;
}

/* The session's messages as the engine takes them: the system message
 * (when set) and the conversation, strings borrowed from s. calloc'd. */
static struct wk_chat_message *chat_messages(const struct run_session *s, int32_t *n)
{
    size_t nm = json_array_size(s->msgs), k = 0, i;
    struct wk_chat_message *m = calloc(nm + 1, sizeof *m);
    if (!m) return NULL;
    if (s->system) m[k++] = (struct wk_chat_message){"system", s->system};
    json_t *e;
    json_array_foreach(s->msgs, i, e) m[k++] = (struct wk_chat_message){
        json_string_value(json_object_get(e, "role")), json_string_value(json_object_get(e, "content"))};
    *n = (int32_t)k;
    return m;
}

/* Compiles format ("json" or a JSON schema file) into l's grammar,
 * unless it is the one compiled already. */
static enum wk_status compile_format(struct run_local *l, const char *format, struct wk_error *err)
{
    if (l->grammar_for && strcmp(l->grammar_for, format) == 0) return WK_OK;
    wk_grammar_free(l->grammar);
    l->grammar = NULL;
    free(l->grammar_for);
    l->grammar_for = NULL;
    if (strcmp(format, "json") == 0) return wk_grammar_json_object(&l->grammar, err);
    json_error_t je;
    json_t *schema = json_load_file(format, 0, &je);
    if (!json_is_object(schema)) {
        json_decref(schema);
        return wk_error_set(err, WK_E_INVALID, "--format %s: want json or a JSON schema file (%s)", format,
                            je.text[0] ? je.text : "not a JSON object");
    }
    enum wk_status st = wk_grammar_from_json_schema(schema, &l->grammar, err);
    json_decref(schema);
    if (st) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return wk_error_set(err, st, "--format %s: %s", format, why);
    }
    l->grammar_for = strdup(format);
    return l->grammar_for ? WK_OK : wk_error_set(err, WK_E_NOMEM, "out of memory");
}

/* A matcher for the format's grammar over the model's vocabulary (its
 * tables built on first use, kept with the model). */
static enum wk_status format_matcher(struct run_session *s, struct wk_grammar_matcher **out, struct wk_error *err)
{
    struct run_local *l = s->local;
    enum wk_status st = compile_format(l, s->format, err);
    if (!st && !l->vocab) st = wk_grammar_vocab_create(l->tok, &l->vocab, err);
    return st ? st : wk_grammar_matcher_create(l->grammar, l->vocab, out, err);
}

/* The answer, as it streams: printed, and kept for the conversation. */
struct reply {
    struct run_session *s;
    struct wk_buf text;
};

static bool on_piece(void *user, const char *text, size_t len)
{
    struct reply *r = user;
    return wk_buf_add(&r->text, text, len) && run_display_text(&r->s->disp, text, len);
}

static bool on_thinking(void *user, const char *text, size_t len)
{
    struct reply *r = user;
    return run_display_thinking(&r->s->disp, text, len);
}

static void print_spec_stats(const struct wk_generate_stats *st)
{
    if (st->spec_rounds <= 0) return;
    fprintf(stderr, "%-22s%d token(s) in %d round(s)\n", "draft count:", st->draft_count, st->spec_rounds);
    fprintf(stderr, "%-22s%d token(s)\n", "draft accepted:", st->draft_accepted);
    fprintf(stderr, "%-22s%.2f%%\n", "acceptance rate:",
            st->draft_count > 0 ? 100.0 * st->draft_accepted / st->draft_count : 0.0);
    fprintf(stderr, "%-22s%.2f token(s) per round\n", "mean accepted length:",
            (double)st->draft_accepted / st->spec_rounds);
}

/* Renders, tokenizes and generates into r; the options of s. */
static enum wk_status generate(struct run_session *s, struct reply *r, struct wk_generate_stats *stats,
                               struct wk_error *err)
{
    struct run_local *l = s->local;
    struct wk_generate_params gen;
    const char *stops[WK_MAX_STOPS];
    int32_t n_ctx;
    effective_params(s, &gen, stops, &n_ctx);
    enum wk_status st = n_ctx != l->n_ctx || !l->session ? make_session(l, n_ctx, s->o->n_threads, err) : WK_OK;
    const bool can_think = wk_model_can_think(l->model);
    /* think false on a model that does not think is a no-op, as in Ollama */
    const int think = s->o->raw || (s->think == 0 && !can_think) ? -1 : s->think;
    if (!st && think == 1 && !can_think)
        st = wk_error_set(err, WK_E_UNSUPPORTED, "%s does not support thinking", s->model);
    struct wk_prompt prompt = {0};
    struct wk_tokens ids = {0};
    int32_t n_msgs = 0;
    struct wk_chat_message *msgs = st ? NULL : chat_messages(s, &n_msgs);
    if (!st && !msgs) st = wk_error_set(err, WK_E_NOMEM, "out of memory");
    if (!st) st = render(l, s->o->raw, think, msgs, n_msgs, &prompt, err);
    if (!st && (st = wk_prompt_tokenize(l->tok, &prompt, &ids))) wk_error_set(err, st, "out of memory while tokenizing");
    if (!st && s->format) st = format_matcher(s, &gen.grammar, err);
    if (!st) {
        gen.cancel = &g_run_cancel;
        gen.on_piece = on_piece;
        gen.user = r;
        gen.hide_thinking = prompt.hide_thinking || think >= 0;
        gen.on_thinking = think == 1 && !s->hide_thinking ? on_thinking : NULL;
        gen.think_open = think == 1 && wk_prompt_opens_think(&prompt);
        if (s->o->logprobs >= 0) {
            g_lp_tok = l->tok;
            gen.on_logprobs = print_logprobs;
            gen.top_logprobs = s->o->logprobs;
        }
        run_begin_answer();
        st = wk_session_generate(l->session, &ids, &gen, stats, err);
        g_run_generating = false;
    }
    wk_grammar_matcher_free(gen.grammar);
    free(msgs);
    wk_prompt_deinit(&prompt);
    wk_tokens_deinit(&ids);
    return st;
}

enum run_result run_local_answer(struct run_session *s)
{
    struct wk_error err;
    wk_error_clear(&err);
    int64_t t0 = wk_time_ns();
    struct reply r = {.s = s};
    struct wk_generate_stats stats;
    run_display_begin(&s->disp, s->wordwrap);
    enum wk_status st = generate(s, &r, &stats, &err);
    if (!st) run_display_end_thinking(&s->disp);
    s->disp.thinking = false;
    if (!st && (s->disp.write_failed || printf("\n") < 0 || fflush(stdout) != 0))
        st = wk_error_set(&err, WK_E_IO, "cannot write the answer to stdout: %s", strerror(errno));
    enum run_result res = RUN_OK;
    if (st == WK_E_CANCELLED) {
        printf("\n");
        res = RUN_CANCELLED;
    } else if (st) {
        fflush(stdout);
        fprintf(stderr, "wick run: %s\n", err.msg[0] ? err.msg : wk_status_str(st));
        res = RUN_ERROR;
    } else if (s->verbose) {
        run_print_stats(wk_time_ns() - t0 + s->local->load_ns, s->local->load_ns, stats.prompt_eval_count,
                        stats.prompt_eval_ns, stats.eval_count, stats.eval_ns);
        print_spec_stats(&stats);
    }
    if (res != RUN_ERROR) s->local->load_ns = 0;
    if (res != RUN_ERROR && !run_msgs_add(s, "assistant", r.text.p ? r.text.p : "", r.text.len)) res = RUN_ERROR;
    wk_free(r.text.p);
    return res;
}

/* Tokens the session's prompt takes, or -1 when it cannot be rendered
 * (the error is reported when answering). */
static int64_t prompt_tokens(const struct run_session *s)
{
    struct wk_prompt prompt = {0};
    struct wk_tokens ids = {0};
    int64_t count = -1;
    struct wk_error err;
    int32_t n = 0;
    struct wk_chat_message *msgs = chat_messages(s, &n);
    if (msgs && n > 0 && !render(s->local, s->o->raw, -1, msgs, n, &prompt, &err) &&
        !wk_prompt_tokenize(s->local->tok, &prompt, &ids))
        count = ids.n;
    free(msgs);
    wk_prompt_deinit(&prompt);
    wk_tokens_deinit(&ids);
    return count;
}

int32_t run_local_fit(struct run_session *s)
{
    if (!s->local->session) return 0; /* the answer will say why */
    int32_t n_ctx = wk_context_n_ctx(wk_session_context(s->local->session)), dropped = 0;
    while (json_array_size(s->msgs) >= 3 && prompt_tokens(s) >= n_ctx - n_ctx / 8) {
        json_array_remove(s->msgs, 0);
        json_array_remove(s->msgs, 0);
        dropped += 2;
    }
    return dropped;
}

/* ------------------------------------------------------------ /show, /save, /load */

/* The stored model's LICENSE texts: *n of them, the array and each text
 * wk_malloc'd (as struct wk_modelfile holds them). */
static char **stored_licenses(const struct run_local *l, int32_t *n)
{
    *n = 0;
    json_t *layers = json_object_get(l->stored.manifest, "layers");
    char **out = json_array_size(layers) ? wk_calloc(json_array_size(layers), sizeof *out) : NULL;
    char dir[4096];
    wk_store_default_dir(dir, sizeof dir);
    struct wk_store *store;
    struct wk_error err;
    if (!out || wk_store_open(dir, &store, &err)) return out;
    size_t i;
    json_t *e;
    json_array_foreach(layers, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "mediaType")), WK_MT_LICENSE) != 0) continue;
        json_t *one = json_pack("{s:[O]}", "layers", e);
        char *t = one ? wk_store_layer_text(store, one, WK_MT_LICENSE) : NULL;
        json_decref(one);
        if (t) out[(*n)++] = t;
    }
    wk_store_close(store);
    return out;
}

/* The session as a Modelfile: FROM the model's name, the stored
 * PARAMETERs with the user's over them, the TEMPLATE, the session's
 * SYSTEM (else the model's), the model's MESSAGEs and LICENSEs. */
static void show_modelfile(const struct run_session *s)
{
    const struct run_local *l = s->local;
    struct wk_modelfile mf = {0};
    struct wk_error err;
    enum wk_status st = WK_OK;
    mf.from = wk_asprintf("%s", s->model);
    const char *k;
    json_t *v;
    const bool user_stop = json_object_get(s->options, "stop") != NULL;
    json_object_foreach(l->stored.params, k, v) {
        if ((json_object_get(s->options, k) && strcmp(k, "stop") != 0) || (user_stop && strcmp(k, "stop") == 0)) continue;
        if (!st) st = wk_modelfile_add_json_param(&mf, k, v, &err);
    }
    json_object_foreach(s->options, k, v) if (!st && wk_modelfile_param_type(k, NULL))
        st = wk_modelfile_add_json_param(&mf, k, v, &err);
    if (l->stored.template_text) mf.template_text = wk_asprintf("%s", l->stored.template_text);
    const char *sys = s->system ? s->system : l->stored.system;
    if (sys) mf.system = wk_asprintf("%s", sys);
    size_t n = json_array_size(l->stored.messages), i;
    json_t *e;
    mf.messages = n ? wk_calloc(n, sizeof *mf.messages) : NULL;
    json_array_foreach(l->stored.messages, i, e) if (mf.messages) {
        mf.messages[i].role = wk_asprintf("%s", json_string_value(json_object_get(e, "role")));
        mf.messages[i].content = wk_asprintf("%s", json_string_value(json_object_get(e, "content")));
        mf.n_messages++;
    }
    mf.licenses = stored_licenses(l, &mf.n_licenses);
    char *text = st ? NULL : wk_modelfile_format(&mf);
    if (text) printf("%s\n", text);
    else printf("error: %s\n", st ? err.msg : "out of memory");
    wk_free(text);
    wk_modelfile_deinit(&mf);
}

static void show_parameters(const struct run_session *s)
{
    printf("Model defined parameters:\n");
    if (json_object_size(s->local->stored.params) == 0)
        printf("  No additional parameters were specified for this model.\n");
    const char *k;
    json_t *v;
    json_object_foreach(s->local->stored.params, k, v) {
        json_t *vals = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
        size_t i;
        json_t *e;
        json_array_foreach(vals, i, e) {
            char *t = wk_json_text(e);
            printf("  %-30s %s\n", k, t ? t : "");
            free(t);
        }
        json_decref(vals);
    }
    printf("\n");
    run_show_user_parameters(s);
}

bool run_local_show(struct run_session *s, const char *what)
{
    const struct run_local *l = s->local;
    if (strcmp(what, "info") == 0) {
        char *argv[] = {"show", s->model, NULL};
        cmd_show(2, argv);
    } else if (strcmp(what, "license") == 0) {
        int32_t n;
        char **lic = stored_licenses(l, &n);
        if (n == 0) printf("No license was specified for this model.\n");
        for (int32_t i = 0; i < n; i++) printf("%s\n", lic[i]), wk_free(lic[i]);
        wk_free(lic);
    } else if (strcmp(what, "modelfile") == 0) {
        show_modelfile(s);
    } else if (strcmp(what, "parameters") == 0) {
        show_parameters(s);
    } else if (strcmp(what, "system") == 0) {
        const char *sys = s->system ? s->system : l->stored.system;
        if (sys) printf("%s\n\n", sys);
        else printf("No system message was specified for this model.\n");
    } else if (strcmp(what, "template") == 0) {
        size_t n = 0;
        const char *t = l->stored.template_text ? l->stored.template_text : wk_model_chat_template(l->model, &n);
        if (t && l->stored.template_text) printf("%s\n", t);
        else if (t) printf("%.*s\n", (int)n, t);
        else printf("No prompt template was specified for this model.\n");
    } else {
        return false;
    }
    return true;
}

/* An Ollama create request (run_create_request) as a Modelfile. */
static enum wk_status modelfile_of(json_t *req, struct wk_modelfile *mf, struct wk_error *err)
{
    memset(mf, 0, sizeof *mf);
    mf->from = wk_asprintf("%s", json_string_value(json_object_get(req, "from")));
    if (json_is_string(json_object_get(req, "system")))
        mf->system = wk_asprintf("%s", json_string_value(json_object_get(req, "system")));
    const char *k;
    json_t *v;
    enum wk_status st = WK_OK;
    json_object_foreach(json_object_get(req, "parameters"), k, v) if (!st)
        st = wk_modelfile_add_json_param(mf, k, v, err);
    json_t *msgs = json_object_get(req, "messages");
    size_t n = json_array_size(msgs), i;
    json_t *e;
    mf->messages = n ? wk_calloc(n, sizeof *mf->messages) : NULL;
    if (n && !mf->messages) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    json_array_foreach(msgs, i, e) {
        mf->messages[i].role = wk_asprintf("%s", json_string_value(json_object_get(e, "role")));
        mf->messages[i].content = wk_asprintf("%s", json_string_value(json_object_get(e, "content")));
        mf->n_messages++;
    }
    return st;
}

void run_local_save(struct run_session *s, const char *name)
{
    struct wk_error err;
    wk_error_clear(&err);
    struct wk_model_name n;
    if (wk_model_name_parse(name, &n, &err)) {
        printf("error: The model name '%s' is invalid\n", name);
        return;
    }
    json_t *req = run_create_request(s, name);
    struct wk_modelfile mf;
    enum wk_status st = req ? modelfile_of(req, &mf, &err) : wk_error_set(&err, WK_E_NOMEM, "out of memory");
    char dir[4096];
    wk_store_default_dir(dir, sizeof dir);
    struct wk_store *store = NULL;
    if (!st) st = wk_store_open(dir, &store, &err);
    if (!st) {
        struct wk_create_opts co = {.base_dir = "."};
        st = wk_store_create(store, &n, &mf, &co, &err);
        if (st) wk_store_drop_created(store);
    }
    wk_store_close(store);
    if (req) wk_modelfile_deinit(&mf);
    json_decref(req);
    if (st) printf("error: %s\n", err.msg[0] ? err.msg : wk_status_str(st));
    else printf("Created new model '%s'\n", name);
}

void run_local_load(struct run_session *s, const char *name)
{
    printf("Loading model '%s'\n", name);
    fflush(stdout);
    struct wk_error err;
    wk_error_clear(&err);
    struct run_local *l = NULL;
    char *dup = strdup(name);
    int64_t t0 = wk_time_ns();
    enum wk_status st = dup ? local_load(s, name, &l, &err) : WK_E_NOMEM;
    if (st == WK_E_NOT_FOUND) printf("Couldn't find model '%s'\n", name);
    else if (st) printf("error: %s\n", err.msg[0] ? err.msg : wk_status_str(st));
    if (st) {
        free(dup);
        return;
    }
    run_local_close(s);
    s->local = l;
    l->load_ns = wk_time_ns() - t0;
    free(s->model);
    s->model = dup;
    free(s->system);
    s->system = NULL;
    json_array_clear(s->msgs);
    json_decref(s->loaded_msgs);
    s->loaded_msgs = json_incref(l->stored.messages);
    if (s->think == 1 && !wk_model_can_think(l->model))
        fprintf(stderr, "warning: model \"%s\" does not support thinking output\n", name);
}
