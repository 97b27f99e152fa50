/*
 * cmd_run.c - `wick run MODEL [PROMPT]`: load a model and answer.
 *
 * Three modes, as `ollama run`: a PROMPT on the command line gives one
 * streamed answer; no PROMPT with stdin piped reads the prompt from stdin;
 * no PROMPT on a terminal starts an interactive chat (line editing from
 * libedit) whose KV cache is kept between turns, so each turn prefills
 * only its new tokens. --verbose prints load time and prompt and
 * generation rates to stderr after each answer.
 */
#include "cli.h"

#include "../src/io/wk_options.h"
#include "../src/runtime/wk_gotmpl.h"
#include "../src/runtime/wk_grammar.h"
#include "../src/runtime/wk_runtime.h"
#include "../src/store/wk_store.h"

#include <editline/readline.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_STDIN_BYTES (64u << 20)

#define MAX_STOPS WK_MAX_STOPS

struct run_opts {
    const char *model;
    char *prompt; /* owned */
    const char *stops[MAX_STOPS]; /* argv strings; gen.stop points here */
    struct wk_generate_params gen;
    struct wk_context_params ctx;
    bool verbose;
    const char *draft; /* --draft: a draft model's GGUF file or folder */
    bool raw;     /* no chat template */
    int logprobs; /* -1 = off, else alternatives to print per token */
    int think;    /* --think: -1 unset, 0 off, 1 on */
    bool hide_thinking; /* --hidethinking: think, but do not print it */
    const char *format; /* --format: "json" or a JSON schema file */
    struct wk_grammar *grammar; /* compiled --format (owned) */
};

static volatile bool g_cancel;      /* set by SIGINT during generation */
static volatile bool g_generating;     /* an answer is being computed */
static volatile sig_atomic_t g_sigints; /* Ctrl-Cs during this answer */
static bool g_write_failed;          /* stdout could not be written */

static void on_sigint(int sig)
{
    (void)sig;
    g_cancel = true;
    /* the first Ctrl-C stops the answer at the next step; a second one, if
     * that takes too long, leaves at once */
    if (g_generating && ++g_sigints >= 2) _exit(130);
}

static void run_usage(FILE *f)
{
    fprintf(f,
            "Usage: wick run MODEL.gguf [PROMPT] [options] [-- PROMPT]\n\n"
            "Answers PROMPT; without it reads the prompt from stdin when piped, or starts an\n"
            "interactive chat on a terminal (/bye or Ctrl-D to leave, /clear to forget).\n\n"
            "Options:\n"
            "  --temperature T   sampling temperature, 0 = greedy (default 0.8)\n"
            "  --top-k K         keep the K most likely tokens, 0 = off (default 40)\n"
            "  --top-p P         nucleus sampling threshold, 0 or 1 = off (default 0.9)\n"
            "  --min-p P         drop tokens below P x the top probability (default 0)\n"
            "  --repeat-penalty R   divide positive / multiply negative logits of tokens in\n"
            "                    the last --repeat-last-n tokens by R, 1 = off (default 1)\n"
            "  --repeat-last-n N penalty window, prompt included; 0 = no penalties,\n"
            "                    -1 = the whole context (default 64)\n"
            "  --presence-penalty P   subtract P once from each token in the window (default 0)\n"
            "  --frequency-penalty F  subtract F per occurrence in the window (default 0)\n"
            "  --stop TEXT       end the answer before TEXT (repeatable; TEXT is not printed)\n"
            "  --logprobs N      print each token's log-probability and its N most likely\n"
            "                    alternatives (0..20) to stderr\n"
            "  --seed S          random seed, -1 = from the clock (default -1)\n"
            "  --num-predict N   stop after N tokens; 0 or -1 = until the context is full\n"
            "                    (default -1)\n"
            "  --num-ctx N       context length in tokens, at most the model's trained\n"
            "                    context (default 4096); --ctx-size is the same\n"
            "  --threads N       compute threads (default: the CPUs this process may use)\n"
            "  --draft MODEL     speculative decoding with this draft model (a GGUF file or\n"
            "                    folder sharing the model's vocabulary); a stored model's\n"
            "                    DRAFT is used without it\n"
            "  --draft-max N     tokens drafted per step at most, 0 = no speculation, chosen\n"
            "                    adaptively up to N (0..15, default 8)\n"
            "  --draft-min N     draft at least N tokens every step, never pausing (for\n"
            "                    measurements; default 0)\n"
            "  --think[=false]   a model that can think thinks first, and its thinking is\n"
            "                    printed before the answer; =false turns thinking off\n"
            "  --hidethinking    think, but print only the answer\n"
            "  --format F        constrain the answer: json (any JSON object) or a JSON\n"
            "                    schema file\n"
            "  --raw             no chat template: the model continues the prompt text as\n"
            "                    it is (BOS first where the model wants one)\n"
            "  --verbose         print timings and token rates after the answer\n");
}

/* Reads all of stdin; NULL (message printed) on a read error, a NUL byte
 * or more than MAX_STDIN_BYTES. */
static char *read_all_stdin(void)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= MAX_STDIN_BYTES) {
                fprintf(stderr, "wick run: the prompt on stdin is larger than %u MiB\n",
                        MAX_STDIN_BYTES >> 20);
                free(buf);
                return NULL;
            }
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                return NULL;
            }
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, stdin);
        n += got;
        if (got == 0) break;
    }
    if (ferror(stdin)) {
        fprintf(stderr, "wick run: cannot read the prompt from stdin: %s\n", strerror(errno));
        free(buf);
        return NULL;
    }
    if (memchr(buf, '\0', n)) {
        fprintf(stderr, "wick run: the prompt on stdin contains a NUL byte\n");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* Parses argv (argv[0] == "run"). Returns -1 to continue, else an exit code. */
/* A flag's value within the options table's range for option opt
 * (wk_options.h), as the server, the runner and Modelfiles take it. */
static bool opt_f32(const char *flag, const char *opt, const char *v, float *f)
{
    const struct wk_option *o = wk_option_find(opt);
    return cli_parse_f32("run", flag, v, (float)o->min, (float)o->max, f);
}

static bool opt_i64(const char *flag, const char *opt, const char *v, int64_t *x)
{
    const struct wk_option *o = wk_option_find(opt);
    return cli_parse_i64("run", flag, v, (int64_t)o->min, (int64_t)o->max, x);
}

/* --think[=true|false|low|medium|high] and --hidethinking; false when a is neither. */
static bool think_flag(const char *a, struct run_opts *o)
{
    static const char *const on[] = {"--think", "--think=true", "--think=high", "--think=medium", "--think=low"};
    for (size_t i = 0; i < sizeof on / sizeof *on; i++)
        if (strcmp(a, on[i]) == 0) return o->think = 1, true;
    if (strcmp(a, "--think=false") == 0) return o->think = 0, true;
    if (strcmp(a, "--hidethinking") == 0) return o->think = 1, o->hide_thinking = true, true;
    return false;
}

static int parse_args(int argc, char **argv, struct run_opts *o)
{
    o->gen = wk_generate_params_default();
    o->ctx = wk_context_params_default();
    o->logprobs = -1;
    o->think = -1;
    const char *positional[2] = {NULL, NULL};
    int n_pos = 0;
    char *extra_prompt = NULL;
    bool options_done = false; /* after "--" every argument is positional */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!options_done && strcmp(a, "--") == 0) {
            options_done = true;
            continue;
        }
        if (options_done) {
            if (n_pos == 2) {
                fprintf(stderr, "wick run: unexpected argument '%s' (quote the prompt)\n", a);
                return WK_EXIT_USAGE;
            }
            positional[n_pos++] = a;
            continue;
        }
        bool bad = false;
        float f;
        int64_t x;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            run_usage(stdout);
            return WK_EXIT_OK;
        } else if (strcmp(a, "--verbose") == 0) {
            o->verbose = true;
        } else if (strcmp(a, "--raw") == 0) {
            o->raw = true;
        } else if (think_flag(a, o)) {
        } else if (cli_opt_value(argc, argv, &i, "--format", &v, &bad, "run")) {
            if (bad) return WK_EXIT_USAGE;
            o->format = v;
        } else if (cli_opt_value(argc, argv, &i, "--temperature", &v, &bad, "run")) {
            if (bad || !opt_f32("--temperature", "temperature", v, &f)) return WK_EXIT_USAGE;
            o->gen.sampler.temperature = f;
        } else if (cli_opt_value(argc, argv, &i, "--top-k", &v, &bad, "run")) {
            if (bad || !opt_i64("--top-k", "top_k", v, &x)) return WK_EXIT_USAGE;
            o->gen.sampler.top_k = (int32_t)x;
        } else if (cli_opt_value(argc, argv, &i, "--top-p", &v, &bad, "run")) {
            if (bad || !opt_f32("--top-p", "top_p", v, &f)) return WK_EXIT_USAGE;
            o->gen.sampler.top_p = f;
        } else if (cli_opt_value(argc, argv, &i, "--min-p", &v, &bad, "run")) {
            if (bad || !opt_f32("--min-p", "min_p", v, &f)) return WK_EXIT_USAGE;
            o->gen.sampler.min_p = f;
        } else if (cli_opt_value(argc, argv, &i, "--repeat-penalty", &v, &bad, "run")) {
            if (bad || !opt_f32("--repeat-penalty", "repeat_penalty", v, &f)) return WK_EXIT_USAGE;
            o->gen.sampler.repeat_penalty = f;
        } else if (cli_opt_value(argc, argv, &i, "--repeat-last-n", &v, &bad, "run")) {
            if (bad || !opt_i64("--repeat-last-n", "repeat_last_n", v, &x)) return WK_EXIT_USAGE;
            o->gen.sampler.repeat_last_n = (int32_t)x;
        } else if (cli_opt_value(argc, argv, &i, "--presence-penalty", &v, &bad, "run")) {
            if (bad || !opt_f32("--presence-penalty", "presence_penalty", v, &f)) return WK_EXIT_USAGE;
            o->gen.sampler.presence_penalty = f;
        } else if (cli_opt_value(argc, argv, &i, "--frequency-penalty", &v, &bad, "run")) {
            if (bad || !opt_f32("--frequency-penalty", "frequency_penalty", v, &f)) return WK_EXIT_USAGE;
            o->gen.sampler.frequency_penalty = f;
        } else if (cli_opt_value(argc, argv, &i, "--logprobs", &v, &bad, "run")) {
            if (bad || !cli_parse_i64("run", "--logprobs", v, 0, WK_MAX_TOP_LOGPROBS, &x))
                return WK_EXIT_USAGE;
            o->logprobs = (int)x;
        } else if (cli_opt_value(argc, argv, &i, "--stop", &v, &bad, "run")) {
            if (bad) return WK_EXIT_USAGE;
            if (o->gen.n_stop == MAX_STOPS || !*v || strlen(v) > WK_MAX_STOP_BYTES) {
                fprintf(stderr, "wick run: --stop takes a non-empty string of at most %d bytes, at most %d times\n",
                        WK_MAX_STOP_BYTES, MAX_STOPS);
                return WK_EXIT_USAGE;
            }
            o->stops[o->gen.n_stop++] = v;
            o->gen.stop = o->stops;
        } else if (cli_opt_value(argc, argv, &i, "--seed", &v, &bad, "run")) {
            if (bad || !opt_i64("--seed", "seed", v, &x)) return WK_EXIT_USAGE;
            o->gen.sampler.seed = x;
        } else if (cli_opt_value(argc, argv, &i, "--num-predict", &v, &bad, "run")) {
            if (bad || !opt_i64("--num-predict", "num_predict", v, &x)) return WK_EXIT_USAGE;
            o->gen.num_predict = (int32_t)x;
        } else if (cli_opt_value(argc, argv, &i, "--ctx-size", &v, &bad, "run") ||
                   cli_opt_value(argc, argv, &i, "--num-ctx", &v, &bad, "run")) {
            if (bad || !opt_i64("--num-ctx", "num_ctx", v, &x)) return WK_EXIT_USAGE;
            o->ctx.n_ctx = (int32_t)x;
        } else if (cli_opt_value(argc, argv, &i, "--draft", &v, &bad, "run")) {
            if (bad) return WK_EXIT_USAGE;
            o->draft = v;
        } else if (cli_opt_value(argc, argv, &i, "--draft-max", &v, &bad, "run")) {
            if (bad || !opt_i64("--draft-max", "draft_max", v, &x)) return WK_EXIT_USAGE;
            o->gen.draft_max = (int32_t)x;
        } else if (cli_opt_value(argc, argv, &i, "--draft-min", &v, &bad, "run")) {
            if (bad || !opt_i64("--draft-min", "draft_min", v, &x)) return WK_EXIT_USAGE;
            o->gen.draft_min = (int32_t)x;
        } else if (cli_opt_value(argc, argv, &i, "--threads", &v, &bad, "run")) {
            if (bad || !cli_parse_i64("run", "--threads", v, 1, WK_MAX_THREADS, &x)) return WK_EXIT_USAGE;
            o->ctx.n_threads = (int32_t)x;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr,
                    "wick run: unknown option '%s' (see wick run --help; a prompt that starts "
                    "with '-' goes after --)\n",
                    a);
            return WK_EXIT_USAGE;
        } else if (n_pos < 2) {
            positional[n_pos++] = a;
        } else {
            fprintf(stderr, "wick run: unexpected argument '%s' (quote the prompt)\n", a);
            return WK_EXIT_USAGE;
        }
    }
    if (n_pos == 0) {
        fprintf(stderr, "wick run: missing MODEL\n");
        run_usage(stderr);
        return WK_EXIT_USAGE;
    }
    o->model = positional[0];
    if (positional[1] && positional[1][strspn(positional[1], " \t\r\n")] == '\0') {
        fprintf(stderr, "wick run: the prompt is empty\n");
        return WK_EXIT_USAGE;
    }
    if (!isatty(STDIN_FILENO)) { /* piped stdin: the prompt, or appended to PROMPT */
        extra_prompt = read_all_stdin();
        if (!extra_prompt) return WK_EXIT_ERROR;
        if (extra_prompt[strspn(extra_prompt, " \t\r\n")] == '\0') {
            free(extra_prompt);
            extra_prompt = NULL;
        }
    }
    if (positional[1] && extra_prompt) {
        size_t n = strlen(positional[1]) + strlen(extra_prompt) + 3;
        o->prompt = malloc(n);
        if (o->prompt) snprintf(o->prompt, n, "%s\n\n%s", positional[1], extra_prompt);
        free(extra_prompt);
    } else if (positional[1]) {
        o->prompt = strdup(positional[1]);
    } else if (extra_prompt) {
        o->prompt = extra_prompt;
    } else if (!isatty(STDIN_FILENO)) {
        fprintf(stderr, "wick run: no prompt: stdin was empty and no PROMPT was given\n");
        return WK_EXIT_USAGE;
    } else {
        return -1; /* interactive */
    }
    if (!o->prompt) return WK_EXIT_ERROR;
    return -1;
}

/* Prints a piece of the answer; false (stop generating) when stdout
 * cannot be written (a full disk, a closed pipe's reader gone). */
static bool g_thinking; /* --think: the thinking block is being printed */

/* --think: the thinking, before the answer, as ollama run prints it. */
static bool print_thinking(void *user, const char *text, size_t len)
{
    (void)user;
    if (!g_thinking && printf("Thinking...\n") < 0) return g_write_failed = true, false;
    g_thinking = true;
    if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) return g_write_failed = true, false;
    return true;
}

/* Ends a printed thinking block (before the answer, or at its end). */
static bool end_thinking(void)
{
    if (!g_thinking) return true;
    g_thinking = false;
    if (printf("\n...done thinking.\n\n") < 0) return g_write_failed = true, false;
    return true;
}

static bool print_piece(void *user, const char *text, size_t len)
{
    (void)user;
    if (!end_thinking()) return false;
    if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
        g_write_failed = true;
        return false;
    }
    return true;
}

/* Appends the piece to the assistant's reply as well as printing it. */
struct reply {
    char *buf;
    size_t n, cap;
};

static bool print_and_keep(void *user, const char *text, size_t len)
{
    struct reply *r = user;
    if (r->n + len + 1 > r->cap) {
        size_t cap = (r->n + len + 1) * 2;
        char *b = realloc(r->buf, cap);
        if (!b) return false;
        r->buf = b;
        r->cap = cap;
    }
    memcpy(r->buf + r->n, text, len);
    r->n += len;
    r->buf[r->n] = '\0';
    return print_piece(NULL, text, len);
}

static void print_duration(const char *label, int64_t ns)
{
    double s = (double)ns / 1e9;
    if (s >= 1)
        fprintf(stderr, "%-22s%.6gs\n", label, s);
    else if (s >= 1e-3)
        fprintf(stderr, "%-22s%.6gms\n", label, s * 1e3);
    else
        fprintf(stderr, "%-22s%.6gµs\n", label, s * 1e6);
}

static void print_stats(const struct wk_generate_stats *st, int64_t load_ns, int64_t total_ns)
{
    print_duration("total duration:", total_ns);
    print_duration("load duration:", load_ns);
    fprintf(stderr, "%-22s%d token(s)\n", "prompt eval count:", st->prompt_eval_count);
    print_duration("prompt eval duration:", st->prompt_eval_ns);
    fprintf(stderr, "%-22s%.2f tokens/s\n", "prompt eval rate:",
            st->prompt_eval_ns > 0 ? st->prompt_eval_count / (st->prompt_eval_ns / 1e9) : 0.0);
    fprintf(stderr, "%-22s%d token(s)\n", "eval count:", st->eval_count);
    print_duration("eval duration:", st->eval_ns);
    fprintf(stderr, "%-22s%.2f tokens/s\n", "eval rate:",
            st->eval_ns > 0 ? st->eval_count / (st->eval_ns / 1e9) : 0.0);
    if (st->spec_rounds > 0) {
        fprintf(stderr, "%-22s%d token(s) in %d round(s)\n", "draft count:", st->draft_count,
                st->spec_rounds);
        fprintf(stderr, "%-22s%d token(s)\n", "draft accepted:", st->draft_accepted);
        fprintf(stderr, "%-22s%.2f%%\n", "acceptance rate:",
                st->draft_count > 0 ? 100.0 * st->draft_accepted / st->draft_count : 0.0);
        fprintf(stderr, "%-22s%.2f token(s) per round\n", "mean accepted length:",
                (double)st->draft_accepted / st->spec_rounds);
    }
}

struct loaded {
    struct wk_model *model, *draft;
    struct wk_tokenizer *tok;
    struct wk_session *session;
    struct wk_store_model stored; /* the store's SYSTEM, MESSAGEs, PARAMETERs */
};

static const struct wk_tokenizer *g_lp_tok; /* for print_logprobs */

/* Prints one token's bytes to stderr as a JSON string (part of a UTF-8
 * character shows as \ufffd). */
static void print_token(int32_t id)
{
    char buf[256];
    size_t n = wk_tokenizer_token_bytes(g_lp_tok, id, false, buf, sizeof buf);
    cli_print_json_string(stderr, buf, WK_MIN(n, sizeof buf));
}

/* --logprobs: one line per generated token on stderr. */
static void print_logprobs(void *user, const struct wk_token_logprobs *lp)
{
    (void)user;
    fprintf(stderr, "logprobs: ");
    print_token(lp->id);
    fprintf(stderr, " %.4f", lp->logprob);
    for (int32_t j = 0; j < lp->n_top; j++) {
        fprintf(stderr, j ? ", " : " | ");
        print_token(lp->top_ids[j]);
        fprintf(stderr, " %.4f", lp->top_logprobs[j]);
    }
    fputc('\n', stderr);
}

/* msgs through a Go TEMPLATE (a stored model's), as Ollama applies it. */
static enum wk_status render_go(const struct loaded *l, const struct wk_chat_message *msgs, int32_t n_msgs,
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

/* The prompt's segments: msgs in the model's turn format (its stored
 * TEMPLATE when it has one, else its own chat template), or with --raw
 * the last message's text alone, literal, after BOS where the model adds
 * one. */
/* msgs with think set (--think, --think=false): through the model's own
 * template with enable_thinking (wk_chat_render_request). */
static enum wk_status render_think(const struct loaded *l, const struct run_opts *o,
                                   const struct wk_chat_message *msgs, int32_t n_msgs, struct wk_prompt *prompt,
                                   struct wk_error *err)
{
    json_t *arr = wk_chat_messages_json(msgs, n_msgs);
    struct wk_chat_request r = {.messages = arr, .think = o->think, .add_generation_prompt = true};
    enum wk_status st = arr ? wk_chat_render_request(l->model, l->tok, &r, prompt, err)
                            : wk_error_set(err, WK_E_NOMEM, "out of memory");
    json_decref(arr);
    return st;
}

static enum wk_status render(const struct loaded *l, const struct run_opts *o,
                             const struct wk_chat_message *msgs, int32_t n_msgs,
                             struct wk_prompt *prompt, struct wk_error *err)
{
    if (!o->raw && o->think >= 0) {
        if (l->stored.template_text && *l->stored.template_text)
            return wk_error_set(err, WK_E_UNSUPPORTED, "--think with a stored TEMPLATE is not supported yet");
        if (l->stored.system && strcmp(msgs[0].role, "system") != 0) {
            struct wk_chat_message *all = calloc((size_t)n_msgs + 1, sizeof *all);
            if (!all) return wk_error_set(err, WK_E_NOMEM, "out of memory");
            all[0] = (struct wk_chat_message){"system", l->stored.system};
            memcpy(all + 1, msgs, (size_t)n_msgs * sizeof *all);
            enum wk_status st = render_think(l, o, all, n_msgs + 1, prompt, err);
            free(all);
            return st;
        }
        return render_think(l, o, msgs, n_msgs, prompt, err);
    }
    if (!o->raw) {
        const bool go = l->stored.template_text && *l->stored.template_text;
        /* a stored model's SYSTEM (unless the conversation has one) and MESSAGEs first */
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
    const char *text = msgs[n_msgs - 1].content;
    enum wk_status st = wk_prompt_raw(l->tok, text, strlen(text), prompt);
    if (st) wk_error_set(err, st, "out of memory");
    return st;
}

/* A matcher for --format's grammar over the model's vocabulary (built on
 * first use, kept for the process). */
static enum wk_status format_matcher(const struct loaded *l, const struct run_opts *o,
                                     struct wk_grammar_matcher **out, struct wk_error *err)
{
    static struct wk_grammar_vocab *vocab;
    enum wk_status st = vocab ? WK_OK : wk_grammar_vocab_create(l->tok, &vocab, err);
    return st ? st : wk_grammar_matcher_create(o->grammar, vocab, out, err);
}

/* Renders msgs, generates, streams. Returns WK_OK or the error (printed). */
static enum wk_status answer(struct loaded *l, const struct run_opts *o,
                             const struct wk_chat_message *msgs, int32_t n_msgs,
                             struct wk_generate_params *gen, int64_t load_ns)
{
    struct wk_error err;
    wk_error_clear(&err);
    int64_t t0 = wk_time_ns();
    struct wk_prompt prompt = {0};
    struct wk_tokens ids = {0};
    struct wk_generate_stats stats;
    enum wk_status st = render(l, o, msgs, n_msgs, &prompt, &err);
    if (!st && (st = wk_prompt_tokenize(l->tok, &prompt, &ids)))
        wk_error_set(&err, st, "out of memory while tokenizing");
    if (!st) {
        g_cancel = false;
        g_sigints = 0;
        g_generating = true;
        gen->cancel = &g_cancel;
        gen->hide_thinking = prompt.hide_thinking || o->think >= 0;
        gen->on_thinking = o->think == 1 && !o->hide_thinking ? print_thinking : NULL;
        gen->think_open = o->think == 1 && wk_prompt_opens_think(&prompt);
        if (o->grammar) st = format_matcher(l, o, &gen->grammar, &err);
        if (o->logprobs >= 0) {
            g_lp_tok = l->tok;
            gen->on_logprobs = print_logprobs;
            gen->top_logprobs = o->logprobs;
        }
        if (!st) st = wk_session_generate(l->session, &ids, gen, &stats, &err);
        if (!st) end_thinking();
        wk_grammar_matcher_free(gen->grammar);
        gen->grammar = NULL;
        g_generating = false;
    }
    if (!st && (g_write_failed || printf("\n") < 0 || fflush(stdout) != 0)) {
        g_write_failed = true;
        st = wk_error_set(&err, WK_E_IO, "cannot write the answer to stdout: %s", strerror(errno));
    }
    if (st == WK_E_CANCELLED) {
        printf("\n");
    } else if (st) {
        fflush(stdout);
        fprintf(stderr, "wick run: %s\n", err.msg[0] ? err.msg : wk_status_str(st));
    } else if (o->verbose) {
        print_stats(&stats, load_ns, wk_time_ns() - t0 + load_ns);
    }
    wk_prompt_deinit(&prompt);
    wk_tokens_deinit(&ids);
    return st;
}

/* Tokens the conversation's prompt takes, or -1 when it cannot be
 * rendered (the error is reported when answering). */
static int64_t prompt_tokens(struct loaded *l, const struct wk_chat_message *msgs, int32_t n)
{
    struct wk_prompt prompt = {0};
    struct wk_tokens ids = {0};
    int64_t count = -1;
    struct run_opts plain = {0};
    struct wk_error err;
    if (!render(l, &plain, msgs, n, &prompt, &err) &&
        !wk_prompt_tokenize(l->tok, &prompt, &ids))
        count = ids.n;
    wk_prompt_deinit(&prompt);
    wk_tokens_deinit(&ids);
    return count;
}

/* Drops the oldest user/assistant exchanges until the conversation leaves
 * room to answer in the context, as a chat that outgrows it should go on
 * rather than fail every turn. Returns the number of messages dropped. */
static int32_t fit_context(struct loaded *l, struct wk_chat_message *msgs, int32_t *n)
{
    int32_t n_ctx = wk_context_n_ctx(wk_session_context(l->session)), dropped = 0;
    while (*n >= 3 && prompt_tokens(l, msgs, *n) >= n_ctx - n_ctx / 8) {
        free((char *)msgs[0].content);
        free((char *)msgs[1].content);
        memmove(msgs, msgs + 2, (size_t)(*n - 2) * sizeof *msgs);
        *n -= 2;
        dropped += 2;
    }
    return dropped;
}

static int interactive(struct loaded *l, const struct run_opts *o, int64_t load_ns)
{
    struct wk_chat_message *msgs = NULL;
    int32_t n = 0;
    int rc = WK_EXIT_OK;
    for (;;) {
        g_cancel = false;
        errno = 0;
        char *line = readline(">>> ");
        if (!line && (g_cancel || errno == EINTR)) { /* Ctrl-C at the prompt, as ollama answers it */
            printf("\nUse Ctrl + d or /bye to exit.\n");
            continue;
        }
        if (!line) {
            printf("\n");
            break;
        }
        if (strcmp(line, "/bye") == 0) {
            free(line);
            break;
        }
        if (line[strspn(line, " \t")] == '\0') {
            free(line);
            continue;
        }
        add_history(line);
        if (strcmp(line, "/clear") == 0) {
            for (int32_t i = 0; i < n; i++) free((char *)msgs[i].content);
            n = 0;
            printf("Cleared session context\n");
            free(line);
            continue;
        }
        if (strcmp(line, "/?") == 0 || strcmp(line, "/help") == 0) {
            printf("  /clear  forget the conversation\n  /bye    exit\n");
            free(line);
            continue;
        }
        struct wk_chat_message *m = realloc(msgs, (size_t)(n + 2) * sizeof *m);
        if (!m) {
            free(line);
            rc = WK_EXIT_ERROR;
            break;
        }
        msgs = m;
        msgs[n++] = (struct wk_chat_message){"user", line};
        int32_t dropped = fit_context(l, msgs, &n);
        if (dropped)
            fprintf(stderr, "(the %d oldest messages were dropped to fit the context)\n", dropped);
        struct reply r = {0};
        struct wk_generate_params gen = o->gen;
        gen.on_piece = print_and_keep;
        gen.user = &r;
        enum wk_status st = answer(l, o, msgs, n, &gen, load_ns);
        printf("\n");
        if (st == WK_OK || st == WK_E_CANCELLED) {
            msgs[n++] = (struct wk_chat_message){"assistant", r.buf ? r.buf : strdup("")};
        } else {
            free(r.buf);
            free((char *)msgs[--n].content); /* drop the failed turn */
        }
        load_ns = 0;
    }
    for (int32_t i = 0; i < n; i++) free((char *)msgs[i].content);
    free(msgs);
    return rc;
}

/* A store name or a GGUF path; the stored PARAMETERs become the defaults
 * of options the command line left at theirs. */
static enum wk_status resolve_model(struct run_opts *o, struct wk_store_model *sm, struct wk_error *err)
{
    char dir[4096];
    wk_store_default_dir(dir, sizeof dir);
    struct wk_store *s;
    enum wk_status st = wk_store_open(dir, &s, err);
    if (st) return st;
    st = wk_store_resolve(s, o->model, true, sm, err);
    wk_store_close(s);
    if (st) return st;
    const struct wk_generate_params d = wk_generate_params_default();
    struct wk_sampler_params *p = &o->gen.sampler;
    const char *k;
    json_t *v;
    json_object_foreach(sm->params, k, v) {
        double x = json_number_value(v);
#define DEFAULT(field, name) if (strcmp(k, name) == 0 && p->field == d.sampler.field) p->field = (__typeof__(p->field))x
        DEFAULT(temperature, "temperature");
        DEFAULT(top_k, "top_k");
        DEFAULT(top_p, "top_p");
        DEFAULT(min_p, "min_p");
        DEFAULT(seed, "seed");
        DEFAULT(repeat_last_n, "repeat_last_n");
        DEFAULT(repeat_penalty, "repeat_penalty");
        DEFAULT(presence_penalty, "presence_penalty");
        DEFAULT(frequency_penalty, "frequency_penalty");
#undef DEFAULT
        if (strcmp(k, "num_predict") == 0 && o->gen.num_predict == d.num_predict) o->gen.num_predict = (int32_t)x;
        if (strcmp(k, "num_ctx") == 0 && o->ctx.n_ctx == wk_context_params_default().n_ctx) o->ctx.n_ctx = (int32_t)x;
        if (strcmp(k, "stop") == 0 && o->gen.n_stop == 0) {
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e) if (o->gen.n_stop < MAX_STOPS) o->stops[o->gen.n_stop++] = json_string_value(e);
            o->gen.stop = o->stops;
        }
    }
    return WK_OK;
}

/* --format F: "json" (any JSON object) or a JSON schema file. */
static enum wk_status compile_format(const char *f, struct wk_grammar **out, struct wk_error *err)
{
    if (strcmp(f, "json") == 0) return wk_grammar_json_object(out, err);
    json_error_t je;
    json_t *schema = json_load_file(f, 0, &je);
    if (!json_is_object(schema)) {
        json_decref(schema);
        return wk_error_set(err, WK_E_INVALID, "--format %s: want json or a JSON schema file (%s)", f,
                            je.text[0] ? je.text : "not a JSON object");
    }
    enum wk_status st = wk_grammar_from_json_schema(schema, out, err);
    json_decref(schema);
    if (st) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        wk_error_set(err, st, "--format %s: %s", f, why);
    }
    return st;
}

int cmd_run(int argc, char **argv)
{
    struct run_opts o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;

    struct wk_error err;
    wk_error_clear(&err);
    struct loaded l = {0};
    int64_t t0 = wk_time_ns();
    enum wk_status st = resolve_model(&o, &l.stored, &err);
    if (!st) st = wk_model_load(l.stored.weights, &l.model, &err);
    if (!st) st = wk_tokenizer_for_model(l.model, &l.tok, &err);
    if (!st) st = wk_session_create(l.model, l.tok, &o.ctx, &l.session, &err);
    const char *draft = o.draft ? o.draft : l.stored.draft[0] ? l.stored.draft : NULL;
    if (!st && draft) st = wk_model_load(draft, &l.draft, &err);
    if (!st && draft) st = wk_session_set_draft(l.session, l.draft, &err);
    if (!st && o.think >= 0 && !o.raw && !wk_model_can_think(l.model))
        st = wk_error_set(&err, WK_E_UNSUPPORTED, "%s does not support thinking (--think)", o.model);
    if (!st && o.format) st = compile_format(o.format, &o.grammar, &err);
    if (st) {
        fprintf(stderr, "wick run: %s\n", err.msg[0] ? err.msg : wk_status_str(st));
        rc = WK_EXIT_ERROR;
        goto out;
    }
    int64_t load_ns = wk_time_ns() - t0;
    int n_cpus = wk_cpu_features_get()->n_cores;
    if (o.ctx.n_threads > n_cpus)
        fprintf(stderr,
                "wick run: warning: --threads %d is more than the %d CPUs this process may use; "
                "extra threads wait for each other and slow generation down\n",
                o.ctx.n_threads, n_cpus);
    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);

    if (o.prompt) {
        struct wk_chat_message msg = {"user", o.prompt};
        struct wk_generate_params gen = o.gen;
        gen.on_piece = print_piece;
        st = answer(&l, &o, &msg, 1, &gen, load_ns);
        rc = st == WK_OK ? WK_EXIT_OK : st == WK_E_CANCELLED ? 130 : WK_EXIT_ERROR;
    } else {
        rc = interactive(&l, &o, load_ns);
    }
out:
    wk_session_destroy(l.session);
    wk_tokenizer_destroy(l.tok);
    wk_model_destroy(l.draft);
    wk_model_destroy(l.model);
    wk_store_model_deinit(&l.stored);
    wk_grammar_free(o.grammar);
    free(o.prompt);
    return rc;
}
