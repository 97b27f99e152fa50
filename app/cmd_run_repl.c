/*
 * cmd_run_repl.c - `wick run`'s interactive chat, as `ollama run`'s
 * (cmd/interactive.go; read to learn the behaviour and its messages,
 * written anew), with libedit for line editing.
 *
 * Input: a line is a message, unless it starts with `"""` (a multi-line
 * message: the lines up to one ending with `"""`, joined with newlines,
 * the quotes dropped; `"""text"""` on one line is a message too) or with
 * "/" (a command). Commands: /set (parameter NAME VALUE..., system TEXT,
 * history, nohistory, wordwrap, nowordwrap, format json, noformat,
 * verbose, quiet, think, nothink), /show (info, license, modelfile,
 * parameters, system, template), /load MODEL, /save MODEL, /clear, /bye
 * (or /exit), /? and /help (with set, show or shortcuts). A command that
 * fails says so and the chat goes on.
 *
 * Where wick differs: the system message set by /set system is the
 * conversation's first message whenever it is set (Ollama appends it
 * where the conversation stands); /load forgets it with the conversation;
 * an answer stopped by Ctrl-C stays in the conversation as far as it
 * went.
 */
#include "run.h"

#include "../src/base/wk_base.h"
#include "../src/io/wk_options.h"

#include <editline/readline.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void usage(void)
{
    fprintf(stderr, "Available Commands:\n"
                    "  /set            Set session variables\n"
                    "  /show           Show model information\n"
                    "  /load <model>   Load a session or model\n"
                    "  /save <model>   Save your current session\n"
                    "  /clear          Clear session context\n"
                    "  /bye            Exit\n"
                    "  /?, /help       Help for a command\n"
                    "  /? shortcuts    Help for keyboard shortcuts\n\n"
                    "Use \"\"\" to begin a multi-line message.\n\n");
}

static void usage_set(void)
{
    fprintf(stderr, "Available Commands:\n"
                    "  /set parameter ...     Set a parameter\n"
                    "  /set system <string>   Set system message\n"
                    "  /set history           Enable history\n"
                    "  /set nohistory         Disable history\n"
                    "  /set wordwrap          Enable wordwrap\n"
                    "  /set nowordwrap        Disable wordwrap\n"
                    "  /set format json       Enable JSON mode\n"
                    "  /set noformat          Disable formatting\n"
                    "  /set verbose           Show LLM stats\n"
                    "  /set quiet             Disable LLM stats\n"
                    "  /set think             Enable thinking\n"
                    "  /set nothink           Disable thinking\n\n");
}

static void usage_shortcuts(void)
{
    fprintf(stderr, "Available keyboard shortcuts:\n"
                    "  Ctrl + a            Move to the beginning of the line (Home)\n"
                    "  Ctrl + e            Move to the end of the line (End)\n"
                    "   Alt + b            Move back (left) one word\n"
                    "   Alt + f            Move forward (right) one word\n"
                    "  Ctrl + k            Delete the sentence after the cursor\n"
                    "  Ctrl + l            Clear the screen\n"
                    "  Ctrl + c            Stop the model from responding\n"
                    "  Ctrl + d            Exit wick (/bye)\n\n");
}

static void usage_show(void)
{
    fprintf(stderr, "Available Commands:\n"
                    "  /show info         Show details for this model\n"
                    "  /show license      Show model license\n"
                    "  /show modelfile    Show Modelfile for this model\n"
                    "  /show parameters   Show parameters for this model\n"
                    "  /show system       Show system message\n"
                    "  /show template     Show prompt template\n\n");
}

static void usage_parameters(void)
{
    fprintf(stderr, "Available Parameters:\n"
                    "  /set parameter seed <int>             Random number seed\n"
                    "  /set parameter num_predict <int>      Max number of tokens to predict\n"
                    "  /set parameter top_k <int>            Pick from top k num of tokens\n"
                    "  /set parameter top_p <float>          Pick token based on sum of probabilities\n"
                    "  /set parameter min_p <float>          Pick token based on top token probability * min_p\n"
                    "  /set parameter num_ctx <int>          Set the context size\n"
                    "  /set parameter temperature <float>    Set creativity level\n"
                    "  /set parameter repeat_penalty <float> How strongly to penalize repetitions\n"
                    "  /set parameter repeat_last_n <int>    Set how far back to look for repetitions\n"
                    "  /set parameter stop <string> <string> ...   Set the stop parameters\n\n");
}

#define MAX_FIELDS 64

/* Splits line (modified) at blanks into at most MAX_FIELDS fields. */
static int fields(char *line, char **f)
{
    int n = 0;
    for (char *p = strtok(line, " \t"); p && n < MAX_FIELDS; p = strtok(NULL, " \t")) f[n++] = p;
    return n;
}

/* Go's strconv.ParseBool. */
static int parse_bool(const char *v)
{
    static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < 6; i++) {
        if (strcmp(v, t[i]) == 0) return 1;
        if (strcmp(v, f[i]) == 0) return 0;
    }
    return -1;
}

/* /set parameter NAME VALUE...: checked against the options table as a
 * request's options are; the error, or the JSON value (owned). */
static json_t *param_value(const char *name, char **vals, int n, char *msg, size_t cap)
{
    const struct wk_option *o = wk_option_find(name);
    if (!o) return snprintf(msg, cap, "unknown parameter '%s'", name), NULL;
    if (o->type == WK_MF_STRING) {
        json_t *a = json_array();
        for (int i = 0; i < n; i++) {
            if (i == WK_MAX_STOPS || strlen(vals[i]) > WK_MAX_STOP_BYTES) {
                json_decref(a);
                return snprintf(msg, cap, "stop takes at most %d strings of at most %d bytes", WK_MAX_STOPS,
                                WK_MAX_STOP_BYTES), NULL;
            }
            json_array_append_new(a, json_string(vals[i]));
        }
        return a;
    }
    if (o->type == WK_MF_BOOL) {
        int b = parse_bool(vals[0]);
        if (b < 0) return snprintf(msg, cap, "invalid bool value [%s]", vals[0]), NULL;
        return json_boolean(b);
    }
    char *end;
    errno = 0;
    double x = o->type == WK_MF_FLOAT ? strtod(vals[0], &end) : (double)strtoll(vals[0], &end, 10);
    if (end == vals[0] || *end || errno == ERANGE)
        return snprintf(msg, cap, "invalid %s value [%s]", o->type == WK_MF_FLOAT ? "float" : "int", vals[0]), NULL;
    struct wk_error err;
    if (wk_option_check_number(o, x, &err)) return snprintf(msg, cap, "%s", err.msg), NULL;
    return o->type == WK_MF_FLOAT ? json_real(x) : json_integer(strtoll(vals[0], NULL, 10));
}

static void set_parameter(struct run_session *s, char **f, int n)
{
    if (n < 4) {
        usage_parameters();
        return;
    }
    char msg[512];
    json_t *v = param_value(f[2], f + 3, n - 3, msg, sizeof msg);
    if (!v) {
        printf("Couldn't set parameter: \"%s\"\n", msg);
        return;
    }
    json_object_set_new(s->options, f[2], v);
    printf("Set parameter '%s' to '", f[2]);
    for (int i = 3; i < n; i++) printf("%s%s", i > 3 ? ", " : "", f[i]);
    printf("'\n");
}

static void set_system(struct run_session *s, const char *text)
{
    char *dup = strdup(text);
    if (!dup) return;
    free(s->system);
    s->system = dup;
    printf("Set system message.\n");
}

static void think_warning(struct run_session *s)
{
    bool can = s->client ? run_client_can_think(s) : run_local_can_think(s);
    if (!can) fprintf(stderr, "warning: model \"%s\" does not support thinking output\n", s->model);
}

/* /set ...; returns true when a multi-line system message begins (its
 * first line in *t). */
static bool cmd_set(struct run_session *s, char **f, int n, struct wk_buf *t)
{
    if (n < 2) {
        usage_set();
        return false;
    }
    const char *what = f[1];
    if (strcmp(what, "history") == 0) s->history = true;
    else if (strcmp(what, "nohistory") == 0) s->history = false;
    else if (strcmp(what, "wordwrap") == 0) s->wordwrap = true, printf("Set 'wordwrap' mode.\n");
    else if (strcmp(what, "nowordwrap") == 0) s->wordwrap = false, printf("Set 'nowordwrap' mode.\n");
    else if (strcmp(what, "verbose") == 0) s->verbose = true, printf("Set 'verbose' mode.\n");
    else if (strcmp(what, "quiet") == 0) s->verbose = false, printf("Set 'quiet' mode.\n");
    else if (strcmp(what, "think") == 0) {
        s->think = 1;
        think_warning(s);
        if (n > 2) printf("Set 'think' mode to '%s'.\n", f[2]);
        else printf("Set 'think' mode.\n");
    } else if (strcmp(what, "nothink") == 0) {
        s->think = 0;
        think_warning(s);
        printf("Set 'nothink' mode.\n");
    } else if (strcmp(what, "format") == 0) {
        if (n < 3 || strcmp(f[2], "json") != 0) {
            printf("Invalid or missing format. For 'json' mode use '/set format json'\n");
        } else {
            free(s->format);
            s->format = strdup("json");
            printf("Set format to 'json' mode.\n");
        }
    } else if (strcmp(what, "noformat") == 0) {
        free(s->format);
        s->format = NULL;
        printf("Disabled format.\n");
    } else if (strcmp(what, "parameter") == 0) {
        set_parameter(s, f, n);
    } else if (strcmp(what, "system") == 0) {
        if (n < 3) {
            usage_set();
            return false;
        }
        struct wk_buf sys = {0};
        for (int i = 2; i < n; i++) wk_buf_add(&sys, " ", i > 2), wk_buf_add(&sys, f[i], strlen(f[i]));
        const char *p = sys.p;
        size_t len = sys.len;
        bool open = strncmp(p, "\"\"\"", 3) == 0;
        if (open) p += 3, len -= 3;
        if (open && len >= 3 && strcmp(p + len - 3, "\"\"\"") == 0) open = false, len -= 3;
        if (open) {
            wk_buf_add(t, p, len);
            wk_buf_add(t, "\n", 1);
        } else {
            char *one = strndup(p, len);
            if (one) set_system(s, one);
            free(one);
        }
        wk_free(sys.p);
        return open;
    } else {
        printf("Unknown command '/set %s'. Type /? for help\n", what);
    }
    return false;
}

static void cmd_help(char **f, int n)
{
    if (n < 2) return usage();
    if (strcmp(f[1], "set") == 0 || strcmp(f[1], "/set") == 0) usage_set();
    else if (strcmp(f[1], "show") == 0 || strcmp(f[1], "/show") == 0) usage_show();
    else if (strcmp(f[1], "shortcut") == 0 || strcmp(f[1], "shortcuts") == 0) usage_shortcuts();
}

enum ml { ML_NONE, ML_PROMPT, ML_SYSTEM };

/* A command line (modified). Returns false for /bye. */
static bool command(struct run_session *s, char *line, struct wk_buf *t, enum ml *ml)
{
    char *f[MAX_FIELDS];
    int n = fields(line, f);
    const char *c = f[0];
    if (strcmp(c, "/bye") == 0 || strcmp(c, "/exit") == 0) return false;
    if (strcmp(c, "/clear") == 0) {
        json_array_clear(s->msgs);
        printf("Cleared session context\n");
    } else if (strcmp(c, "/?") == 0 || strcmp(c, "/help") == 0) {
        cmd_help(f, n);
    } else if (strcmp(c, "/set") == 0) {
        if (cmd_set(s, f, n, t)) *ml = ML_SYSTEM;
    } else if (strcmp(c, "/show") == 0) {
        if (n < 2) usage_show();
        else if (!(s->client ? run_client_show(s, f[1]) : run_local_show(s, f[1])))
            printf("Unknown command '/show %s'. Type /? for help\n", f[1]);
    } else if (strcmp(c, "/load") == 0 || strcmp(c, "/save") == 0) {
        const bool load = c[1] == 'l';
        if (n != 2) printf("Usage:\n  %s <modelname>\n", c);
        else if (load) s->client ? run_client_load(s, f[1]) : run_local_load(s, f[1]);
        else s->client ? run_client_save(s, f[1]) : run_local_save(s, f[1]);
    } else {
        printf("Unknown command '%s'. Type /? for help\n", c);
    }
    fflush(stdout);
    return true;
}

/* Sends the user's message text[0..n) and prints the answer. */
static void send_message(struct run_session *s, const char *text, size_t n)
{
    if (!run_msgs_add(s, "user", text, n)) {
        fprintf(stderr, "Error: out of memory\n");
        return;
    }
    if (!s->client) {
        int32_t dropped = run_local_fit(s);
        if (dropped) fprintf(stderr, "(the %d oldest messages were dropped to fit the context)\n", dropped);
    }
    enum run_result r = s->client ? run_client_answer(s) : run_local_answer(s);
    printf("\n");
    fflush(stdout);
    if (r == RUN_ERROR) json_array_remove(s->msgs, json_array_size(s->msgs) - 1); /* drop the failed turn */
}

/* `"""` ends a multi-line text: text before it (true), or the whole line
 * and a newline (false). */
static bool ml_line(struct wk_buf *t, const char *line)
{
    size_t n = strlen(line);
    bool end = n >= 3 && strcmp(line + n - 3, "\"\"\"") == 0;
    wk_buf_add(t, line, end ? n - 3 : n);
    if (!end) wk_buf_add(t, "\n", 1);
    return end;
}

int run_repl(struct run_session *s)
{
    struct wk_buf t = {0}; /* the message being typed */
    enum ml ml = ML_NONE;
    for (;;) {
        g_run_cancel = false;
        errno = 0;
        char *line = readline(ml != ML_NONE ? "... " : ">>> ");
        if (!line && (g_run_cancel || errno == EINTR)) { /* Ctrl-C: the line (and a multi-line text) dropped */
            printf("\nUse Ctrl + d or /bye to exit.\n");
            t.len = 0;
            ml = ML_NONE;
            continue;
        }
        if (!line) {
            printf("\n");
            break;
        }
        if (s->history && *line) add_history(line);
        bool go_on = true;
        if (ml != ML_NONE) {
            if (ml_line(&t, line)) {
                if (ml == ML_SYSTEM) {
                    set_system(s, t.p ? t.p : "");
                    t.len = 0;
                }
                ml = ML_NONE;
            }
        } else if (strncmp(line, "\"\"\"", 3) == 0) {
            const char *rest = line + 3;
            size_t n = strlen(rest);
            if (n >= 3 && strcmp(rest + n - 3, "\"\"\"") == 0) wk_buf_add(&t, rest, n - 3);
            else wk_buf_add(&t, rest, n), wk_buf_add(&t, "\n", 1), ml = ML_PROMPT;
        } else if (line[0] == '/') {
            go_on = command(s, line, &t, &ml);
        } else if (line[strspn(line, " \t")] != '\0') {
            wk_buf_add(&t, line, strlen(line));
        }
        free(line);
        if (!go_on) break;
        if (t.len > 0 && ml == ML_NONE) {
            send_message(s, t.p, t.len);
            t.len = 0;
        }
    }
    wk_free(t.p);
    return WK_EXIT_OK;
}
