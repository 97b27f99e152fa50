/*
 * cmd_run.c - `wick run MODEL [PROMPT]`: answer, or chat, as `ollama run`.
 *
 * Three modes, as `ollama run`: a PROMPT on the command line gives one
 * streamed answer; no PROMPT with stdin piped reads the prompt from stdin;
 * no PROMPT on a terminal starts an interactive chat (cmd_run_repl.c).
 *
 * Who answers: a running server, as `ollama run` does, when one answers
 * GET /api/version at WICK_HOST, else OLLAMA_HOST, else 127.0.0.1:11434
 * (http_client.h) within 300 ms, and MODEL is not a path (a path exists,
 * holds '/' or ends in .gguf): cmd_run_client.c. Else, or with --local,
 * WICK_RUN_LOCAL=1 or --draft (a file of this machine), this process loads
 * the model (cmd_run_local.c). The flags that set Ollama's options are
 * kept as Ollama's JSON options, sent to the server or applied here over
 * the stored model's PARAMETERs. The files' roles: run.h.
 */
#include "cli.h"
#include "run.h"

#include "../src/io/wk_json.h"
#include "../src/io/wk_options.h"
#include "../src/runtime/wk_runtime.h"
#include "../src/store/wk_store.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_STDIN_BYTES (64u << 20)
#define PROBE_MS 300 /* how long a server has to answer /api/version */

volatile bool g_run_cancel;
volatile bool g_run_generating;
volatile sig_atomic_t g_run_sigints;

static void on_sigint(int sig)
{
    (void)sig;
    g_run_cancel = true;
    /* the first Ctrl-C stops the answer at the next step; a second one, if
     * that takes too long, leaves at once */
    if (g_run_generating && ++g_run_sigints >= 2) _exit(130);
}

void run_begin_answer(void)
{
    g_run_cancel = false;
    g_run_sigints = 0;
    g_run_generating = true;
}

static void run_usage(FILE *f)
{
    fprintf(f,
            "Usage: wick run MODEL [PROMPT] [options] [-- PROMPT]\n\n"
            "Answers PROMPT; without it reads the prompt from stdin when piped, or starts an\n"
            "interactive chat on a terminal (/? for its commands, /bye or Ctrl-D to leave).\n"
            "MODEL is a stored model's name, a GGUF file or a model folder.\n\n"
            "A running server answers when one is up at WICK_HOST, else OLLAMA_HOST, else\n"
            "127.0.0.1:11434 (as `ollama run`), unless MODEL is a path; else this process\n"
            "loads the model.\n\n"
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
            "  --threads N       compute threads (default: the CPUs this process may use;\n"
            "                    in this process only)\n"
            "  --draft MODEL     speculative decoding with this draft model (a GGUF file or\n"
            "                    folder sharing the model's vocabulary; runs in this process);\n"
            "                    a stored model's DRAFT is used without it\n"
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
            "  --keepalive D     how long the server keeps the model loaded after the run (a\n"
            "                    Go duration: 5m, 1h, 0 = unload, -1s = forever); in this\n"
            "                    process accepted and meaningless (the model goes with it)\n"
            "  --nowordwrap      do not wrap the answer at the terminal's width\n"
            "  --local           load the model in this process even when a server is up\n"
            "                    (also WICK_RUN_LOCAL=1)\n"
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

/* Whether text is a Go time.Duration (time.ParseDuration): an optional
 * sign, then "0", or numbers (with a fraction) each with a unit of ns,
 * us, µs, ms, s, m or h. */
bool run_duration_ok(const char *s)
{
    static const char *const units[] = {"ns", "us", "\xc2\xb5s", "\xce\xbcs", "ms", "s", "m", "h"};
    if (*s == '-' || *s == '+') s++;
    if (strcmp(s, "0") == 0) return true;
    if (!*s) return false;
    while (*s) {
        size_t digits = strspn(s, "0123456789");
        s += digits;
        size_t frac = 0;
        if (*s == '.') frac = strspn(++s, "0123456789"), s += frac;
        if (digits == 0 && frac == 0) return false;
        size_t best = 0;
        for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
            size_t n = strlen(units[i]);
            if (strncmp(s, units[i], n) == 0 && n > best) best = n;
        }
        if (best == 0) return false;
        s += best;
    }
    return true;
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

/* The flags that set one of Ollama's options. */
static const struct {
    const char *flag, *option;
} k_option_flags[] = {
    {"--temperature", "temperature"},
    {"--top-k", "top_k"},
    {"--top-p", "top_p"},
    {"--min-p", "min_p"},
    {"--repeat-penalty", "repeat_penalty"},
    {"--repeat-last-n", "repeat_last_n"},
    {"--presence-penalty", "presence_penalty"},
    {"--frequency-penalty", "frequency_penalty"},
    {"--seed", "seed"},
    {"--num-predict", "num_predict"},
    {"--num-ctx", "num_ctx"},
    {"--ctx-size", "num_ctx"},
    {"--draft-max", "draft_max"},
    {"--draft-min", "draft_min"},
};

/* argv[*i] when it is an option flag: its value checked against the
 * options table's range and kept in o->options. 1 taken, 0 not this
 * kind of flag, -1 a usage error (printed). */
static int option_flag(int argc, char **argv, int *i, struct run_opts *o)
{
    for (size_t k = 0; k < sizeof k_option_flags / sizeof *k_option_flags; k++) {
        const char *v, *flag = k_option_flags[k].flag;
        bool bad = false;
        if (!cli_opt_value(argc, argv, i, flag, &v, &bad, "run")) continue;
        if (bad) return -1;
        const struct wk_option *op = wk_option_find(k_option_flags[k].option);
        json_t *j;
        if (op->type == WK_MF_FLOAT) {
            float f;
            if (!cli_parse_f32("run", flag, v, (float)op->min, (float)op->max, &f)) return -1;
            j = json_real(strtod(v, NULL));
        } else {
            int64_t x;
            if (!cli_parse_i64("run", flag, v, (int64_t)op->min, (int64_t)op->max, &x)) return -1;
            j = json_integer(x);
        }
        json_object_set_new(o->options, op->name, j);
        return 1;
    }
    return 0;
}

/* --stop TEXT, appended to the options' stop list. */
static bool stop_flag(struct run_opts *o, const char *v)
{
    json_t *stop = json_object_get(o->options, "stop");
    if (json_array_size(stop) == WK_MAX_STOPS || !*v || strlen(v) > WK_MAX_STOP_BYTES) {
        fprintf(stderr, "wick run: --stop takes a non-empty string of at most %d bytes, at most %d times\n",
                WK_MAX_STOP_BYTES, WK_MAX_STOPS);
        return false;
    }
    if (!stop) json_object_set_new(o->options, "stop", stop = json_array());
    json_array_append_new(stop, json_string(v));
    return true;
}

/* One flag at argv[*i]: 1 taken, 0 not a flag of run, else the exit
 * code + 2 (help printed: WK_EXIT_OK, a usage error: WK_EXIT_USAGE). */
static int flag(int argc, char **argv, int *i, struct run_opts *o)
{
    const char *a = argv[*i], *v = NULL;
    bool bad = false;
    int64_t x;
    int r = option_flag(argc, argv, i, o);
    if (r) return r > 0 ? 1 : 2 + WK_EXIT_USAGE;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        run_usage(stdout);
        return 2 + WK_EXIT_OK;
    } else if (strcmp(a, "--verbose") == 0) {
        o->verbose = true;
    } else if (strcmp(a, "--raw") == 0) {
        o->raw = true;
    } else if (strcmp(a, "--nowordwrap") == 0) {
        o->nowordwrap = true;
    } else if (strcmp(a, "--local") == 0) {
        o->local = true;
    } else if (think_flag(a, o)) {
    } else if (cli_opt_value(argc, argv, i, "--format", &v, &bad, "run")) {
        o->format = v;
    } else if (cli_opt_value(argc, argv, i, "--keepalive", &v, &bad, "run")) {
        if (!bad && !run_duration_ok(v)) {
            fprintf(stderr, "wick run: --keepalive: invalid duration \"%s\" (a Go duration: 5m, 1h30m, -1s, 0)\n", v);
            return 2 + WK_EXIT_USAGE;
        }
        o->keepalive = v;
    } else if (cli_opt_value(argc, argv, i, "--logprobs", &v, &bad, "run")) {
        if (bad || !cli_parse_i64("run", "--logprobs", v, 0, WK_MAX_TOP_LOGPROBS, &x)) return 2 + WK_EXIT_USAGE;
        o->logprobs = (int)x;
    } else if (cli_opt_value(argc, argv, i, "--stop", &v, &bad, "run")) {
        if (bad || !stop_flag(o, v)) return 2 + WK_EXIT_USAGE;
    } else if (cli_opt_value(argc, argv, i, "--draft", &v, &bad, "run")) {
        o->draft = v;
    } else if (cli_opt_value(argc, argv, i, "--threads", &v, &bad, "run")) {
        if (bad || !cli_parse_i64("run", "--threads", v, 1, WK_MAX_THREADS, &x)) return 2 + WK_EXIT_USAGE;
        o->n_threads = (int32_t)x;
    } else {
        return 0;
    }
    return bad ? 2 + WK_EXIT_USAGE : 1;
}

/* The prompt: PROMPT, stdin when piped, or both (PROMPT first). Returns
 * -1 to go on (o->prompt NULL: interactive), else an exit code. */
static int read_prompt(struct run_opts *o, const char *arg)
{
    char *extra_prompt = NULL;
    if (arg && arg[strspn(arg, " \t\r\n")] == '\0') {
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
    if (arg && extra_prompt) {
        size_t n = strlen(arg) + strlen(extra_prompt) + 3;
        o->prompt = malloc(n);
        if (o->prompt) snprintf(o->prompt, n, "%s\n\n%s", arg, extra_prompt);
        free(extra_prompt);
    } else if (arg) {
        o->prompt = strdup(arg);
    } else if (extra_prompt) {
        o->prompt = extra_prompt;
    } else if (!isatty(STDIN_FILENO)) {
        fprintf(stderr, "wick run: no prompt: stdin was empty and no PROMPT was given\n");
        return WK_EXIT_USAGE;
    } else {
        return -1; /* interactive */
    }
    return o->prompt ? -1 : WK_EXIT_ERROR;
}

/* Parses argv (argv[0] == "run"). Returns -1 to continue, else an exit code. */
static int parse_args(int argc, char **argv, struct run_opts *o)
{
    o->logprobs = -1;
    o->think = -1;
    o->options = json_object();
    const char *positional[2] = {NULL, NULL};
    int n_pos = 0;
    bool options_done = false; /* after "--" every argument is positional */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!options_done && strcmp(a, "--") == 0) {
            options_done = true;
            continue;
        }
        int r = options_done ? 0 : flag(argc, argv, &i, o);
        if (r >= 2) return r - 2;
        if (r == 1) continue;
        if (!options_done && a[0] == '-' && a[1] != '\0') {
            fprintf(stderr,
                    "wick run: unknown option '%s' (see wick run --help; a prompt that starts "
                    "with '-' goes after --)\n",
                    a);
            return WK_EXIT_USAGE;
        }
        if (n_pos == 2) {
            fprintf(stderr, "wick run: unexpected argument '%s' (quote the prompt)\n", a);
            return WK_EXIT_USAGE;
        }
        positional[n_pos++] = a;
    }
    if (n_pos == 0) {
        fprintf(stderr, "wick run: missing MODEL\n");
        run_usage(stderr);
        return WK_EXIT_USAGE;
    }
    o->model = positional[0];
    /* the cache type the local engine would take: a bad value is a usage error, as for wick serve */
    enum wk_dtype kv;
    const char *kv_name;
    if (!wk_kv_type_from_env(&kv, &kv_name)) {
        fprintf(stderr, "wick run: %s is '%s': the KV cache is f32, f16 or q8_0\n",
                getenv("WICK_KV_CACHE_TYPE") ? "WICK_KV_CACHE_TYPE" : "OLLAMA_KV_CACHE_TYPE", kv_name);
        return WK_EXIT_USAGE;
    }
    return read_prompt(o, positional[1]);
}

bool run_msgs_add(struct run_session *s, const char *role, const char *text, size_t len)
{
    json_t *m = json_pack("{s:s, s:o}", "role", role, "content", json_stringn_nocheck(text, len));
    return m && json_array_append_new(s->msgs, m) == 0;
}

json_t *run_request_body(const struct run_session *s)
{
    json_t *body = json_pack("{s:s, s:b}", "model", s->model, "stream", 1);
    if (json_object_size(s->options)) json_object_set(body, "options", s->options);
    if (s->format && strcmp(s->format, "json") == 0) {
        json_object_set_new(body, "format", json_string("json"));
    } else if (s->format) {
        json_error_t je;
        json_t *schema = json_load_file(s->format, 0, &je);
        if (!json_is_object(schema)) {
            fprintf(stderr, "Error: --format %s: want json or a JSON schema file (%s)\n", s->format,
                    je.text[0] ? je.text : "not a JSON object");
            json_decref(schema);
            json_decref(body);
            return NULL;
        }
        json_object_set_new(body, "format", schema);
    }
    if (s->think >= 0) json_object_set_new(body, "think", json_boolean(s->think));
    if (s->o->keepalive) json_object_set_new(body, "keep_alive", json_string(s->o->keepalive));
    return body;
}

json_t *run_create_request(const struct run_session *s, const char *name)
{
    json_t *req = json_pack("{s:s, s:s, s:b}", "model", name, "from", s->model, "stream", 0);
    if (s->system) json_object_set_new(req, "system", json_string(s->system));
    json_t *params = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(s->options, k, v) if (wk_modelfile_param_type(k, NULL)) json_object_set(params, k, v);
    if (json_object_size(params)) json_object_set(req, "parameters", params);
    json_decref(params);
    json_t *msgs = json_array();
    json_array_extend(msgs, s->loaded_msgs);
    json_array_extend(msgs, s->msgs);
    if (json_array_size(msgs)) json_object_set(req, "messages", msgs);
    json_decref(msgs);
    return req;
}

void run_show_user_parameters(const struct run_session *s)
{
    if (json_object_size(s->options) == 0) return;
    printf("User defined parameters:\n");
    const char *k;
    json_t *v;
    json_object_foreach(s->options, k, v) {
        char *t = wk_json_text(v); /* 0.7, not 0.69999999999999996 */
        printf("  %-30s %s\n", k, t ? t : "");
        free(t);
    }
    printf("\n");
}

void run_print_messages(struct run_session *s, json_t *msgs)
{
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        json_t *c = json_object_get(m, "content");
        if (role && strcmp(role, "user") == 0) {
            printf(">>> %s\n", json_string_value(c));
        } else if (role && strcmp(role, "assistant") == 0) {
            run_display_begin(&s->disp, s->wordwrap);
            run_display_text(&s->disp, json_string_value(c), json_string_length(c));
            printf("\n\n");
        }
    }
    fflush(stdout);
}

/* Whether name is for the loader rather than the store (as
 * wk_store_resolve tells them apart): it exists, holds '/' or ends in
 * .gguf. */
static bool is_path(const char *name)
{
    struct stat sb;
    size_t len = strlen(name);
    return stat(name, &sb) == 0 || strchr(name, '/') || (len > 5 && strcmp(name + len - 5, ".gguf") == 0);
}

static bool env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "false") != 0;
}

/* Answers (one-shot) or chats (interactive) with s. */
static int run(struct run_session *s, int64_t t0)
{
    const struct run_opts *o = s->o;
    int rc = WK_EXIT_OK;
    if (s->client && o->prompt) {
        enum run_result r = run_client_generate(s);
        return r == RUN_OK ? WK_EXIT_OK : r == RUN_CANCELLED ? 130 : WK_EXIT_ERROR;
    }
    if (s->client) rc = run_client_open(s);
    else rc = run_local_open(s, t0);
    if (rc) return rc;
    if (o->prompt) {
        if (!run_msgs_add(s, "user", o->prompt, strlen(o->prompt))) return WK_EXIT_ERROR;
        enum run_result r = run_local_answer(s);
        return r == RUN_OK ? WK_EXIT_OK : r == RUN_CANCELLED ? 130 : WK_EXIT_ERROR;
    }
    run_print_messages(s, s->loaded_msgs);
    return run_repl(s);
}

int cmd_run(int argc, char **argv)
{
    struct run_opts o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) {
        json_decref(o.options);
        free(o.prompt);
        return rc;
    }
    int64_t t0 = wk_time_ns();
    struct run_session s = {.o = &o, .think = o.think, .hide_thinking = o.hide_thinking, .verbose = o.verbose};
    s.model = strdup(o.model);
    s.options = json_incref(o.options);
    s.msgs = json_array();
    s.loaded_msgs = json_array();
    s.format = o.format ? strdup(o.format) : NULL;
    s.wordwrap = !o.nowordwrap && isatty(STDIN_FILENO);
    const char *nh = getenv("OLLAMA_NOHISTORY");
    s.history = !(nh && *nh && strcmp(nh, "0") != 0 && strcmp(nh, "false") != 0);
    if (!o.local && !env_on("WICK_RUN_LOCAL") && !o.draft && !is_path(o.model)) {
        cli_server_url(s.url, sizeof s.url);
        s.client = run_client_probe(s.url, PROBE_MS);
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    rc = s.model && s.msgs ? run(&s, t0) : WK_EXIT_ERROR;
    run_local_close(&s);
    free(s.model);
    free(s.system);
    free(s.format);
    json_decref(s.options);
    json_decref(s.msgs);
    json_decref(s.loaded_msgs);
    json_decref(o.options);
    free(o.prompt);
    return rc;
}
