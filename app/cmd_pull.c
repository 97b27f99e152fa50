/*
 * cmd_pull.c - `wick pull NAME [--insecure]` and `wick push NAME
 * [--insecure]`: a model between the store (WICK_MODELS, as `wick
 * create`) and a registry (src/store/wk_registry.h), in this process, no
 * server needed; or, as ollama's commands, through a running server's
 * /api/pull and /api/push when cli_remote_store says so (cmd_remote.c). Progress goes to stderr as `ollama pull` draws it: a bar
 * per blob ("pulling 1234abcd5678... 45% ▕██████      ▏ 45 MB/101 MB
 * 12 MB/s 4s", then "... 100% ▕████████████▏ 101 MB"), status lines
 * ("pulling manifest", "verifying sha256 digest", "writing manifest",
 * "success") between; plain lines (one per blob, when it completes) when
 * stderr is not a terminal. Ctrl-C stops a pull with its partial download
 * kept: the next pull resumes it.
 */
#include "cli.h"
#include "http_client.h"

#include "../src/store/wk_registry.h"
#include "../src/store/wk_store.h"

#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* What the progress display draws: the current blob's bar. */
struct view {
    bool tty;
    bool open;            /* a bar is drawn with no newline after it */
    char digest[80];      /* the current bar's blob ("" none) */
    char label[64];       /* "pulling 1234abcd5678..." */
    uint64_t total, initial, completed;
    int64_t t0;
    bool done;            /* the current blob was reported complete */
};

static volatile sig_atomic_t interrupted;
static volatile bool interrupted_flag; /* the same, for cli_http_stream's cancel */

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
    interrupted_flag = true;
}

static bool is_cancelled(void *user)
{
    (void)user;
    return interrupted != 0;
}

/* Bytes as Ollama shows them: decimal units, one decimal under 10. */
static void human_bytes(uint64_t b, char *out, size_t cap)
{
    static const char *units[] = {"B", "KB", "MB", "GB", "TB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1000 && u < 4) v /= 1000, u++;
    if (u == 0 || v >= 10) snprintf(out, cap, "%d %s", (int)v, units[u]);
    else snprintf(out, cap, "%.1f %s", v, units[u]);
}

static int term_width(void)
{
    struct winsize ws;
    return ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40 ? ws.ws_col : 80;
}

/* Redraws the current bar in place. */
static void draw_bar(struct view *v)
{
    uint64_t total = v->total, cur = WK_MIN(v->completed, total);
    int pct = total ? (int)(cur * 100 / total) : 100;
    char pre[96], suf[96], a[16], b[16], rate[24] = "", eta[16] = "";
    snprintf(pre, sizeof pre, "%s %3d%%", v->label, pct);
    human_bytes(total, b, sizeof b);
    if (cur < total) {
        double s = (double)(wk_time_ns() - v->t0) / 1e9;
        double bps = s > 0.5 ? (double)(cur - v->initial) / s : 0;
        human_bytes(cur, a, sizeof a);
        if (bps > 0) {
            char r[16];
            human_bytes((uint64_t)bps, r, sizeof r);
            snprintf(rate, sizeof rate, "%s/s", r);
            double left = (double)(total - cur) / bps;
            if (left < 60) snprintf(eta, sizeof eta, "%ds", (int)left);
            else if (left < 3600) snprintf(eta, sizeof eta, "%dm%02ds", (int)left / 60, (int)left % 60);
            else if (left < 100 * 3600) snprintf(eta, sizeof eta, "%dh%02dm", (int)(left / 3600), (int)left / 60 % 60);
            else snprintf(eta, sizeof eta, "99h+");
        }
        snprintf(suf, sizeof suf, "%6s/%-6s  %8s  %6s", a, b, rate, eta);
    } else { /* as wide as the line in progress: the bar keeps its length */
        snprintf(suf, sizeof suf, "%6s%25s", b, "");
    }
    int width = term_width() - (int)strlen(pre) - (int)strlen(suf) - 5;
    if (width < 10) width = 10;
    int full = width * pct / 100;
    fprintf(stderr, "\r%s ▕", pre);
    for (int i = 0; i < width; i++) fputs(i < full ? "█" : " ", stderr);
    fprintf(stderr, "▏ %s\033[K", suf);
    v->open = true;
}

static void end_line(struct view *v)
{
    if (v->open) fputc('\n', stderr);
    v->open = false;
}

static void on_progress(void *user, const struct wk_registry_progress *p)
{
    struct view *v = user;
    if (!p->digest) {
        end_line(v);
        fprintf(stderr, "%s\n", p->status);
        return;
    }
    if (strcmp(v->digest, p->digest) != 0) { /* the next blob */
        end_line(v);
        snprintf(v->digest, sizeof v->digest, "%s", p->digest);
        snprintf(v->label, sizeof v->label, "%.40s...", p->status);
        v->total = p->total;
        v->initial = p->completed;
        v->t0 = wk_time_ns();
        v->done = false;
        if (!v->tty && p->completed > 0 && p->completed < p->total) {
            char a[16], b[16];
            human_bytes(p->completed, a, sizeof a);
            human_bytes(p->total, b, sizeof b);
            fprintf(stderr, "%s resuming at %s of %s\n", v->label, a, b);
        }
    }
    if (v->done) return;
    v->completed = p->completed;
    v->done = p->completed >= p->total;
    if (v->tty) {
        draw_bar(v);
        if (v->done) end_line(v);
    } else if (v->done) {
        char b[16];
        human_bytes(p->total, b, sizeof b);
        fprintf(stderr, "%s 100%% %s\n", v->label, b);
    }
}

static void usage(FILE *f, const char *cmd)
{
    bool pull = strcmp(cmd, "pull") == 0;
    fprintf(f,
            "Usage: wick %s NAME [--insecure]\n\n"
            "%s model NAME ([host[:port]/][namespace/]name[:tag]; the host defaults to\n"
            "registry.ollama.ai) %s the registry at its host, over the OCI distribution (registry v2)\n"
            "protocol, %s the store (WICK_MODELS or OLLAMA_MODELS, default ~/.wick/models).%s\n\n"
            "  --insecure   plain http (by default only https is used)\n",
            cmd, pull ? "Pulls" : "Pushes", pull ? "from" : "to", pull ? "into" : "from",
            pull ? " An interrupted pull\nresumes where it stopped." : "");
}

/* A pull or push through a running server (POST /api/pull, /api/push, as
 * ollama's commands do; cmd_remote.c decides): its progress lines drawn
 * as the local ones are. */
struct remote {
    struct view *v;
    char err[512];
};

static bool on_remote_line(void *user, const char *line, size_t len)
{
    struct remote *r = user;
    json_t *j = json_loadb(line, len, 0, NULL);
    const char *e = json_string_value(json_object_get(j, "error")), *st = json_string_value(json_object_get(j, "status"));
    if (e) snprintf(r->err, sizeof r->err, "%s", e);
    else if (st && strcmp(st, "success") != 0) {
        struct wk_registry_progress p = {st, json_string_value(json_object_get(j, "digest")),
                                         (uint64_t)json_integer_value(json_object_get(j, "total")),
                                         (uint64_t)json_integer_value(json_object_get(j, "completed"))};
        on_progress(r->v, &p);
    } else if (st) {
        end_line(r->v);
        fprintf(stderr, "success\n");
    }
    json_decref(j);
    return true;
}

static int remote_pull_push(const char *url, const char *cmd, const char *name, bool insecure, struct view *v)
{
    json_t *body = json_pack("{s:s, s:b, s:b}", "model", name, "insecure", insecure, "stream", 1);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL, path[32], err[256], *error_body = NULL;
    json_decref(body);
    snprintf(path, sizeof path, "/api/%s", cmd);
    struct remote r = {.v = v};
    long status = 0;
    int rc = text ? cli_http_stream(url, path, text, on_remote_line, &r, &interrupted_flag, &status, &error_body, err,
                                    sizeof err) : -1;
    const bool made = text != NULL;
    free(text);
    end_line(v);
    if (rc < 0) snprintf(r.err, sizeof r.err, "the server at %.200s: %.250s", url, made ? err : "out of memory");
    else if (rc > 0) snprintf(r.err, sizeof r.err, "cancelled");
    else if (status != 200) {
        json_t *j = json_loads(error_body ? error_body : "", 0, NULL);
        snprintf(r.err, sizeof r.err, "%s", cli_error_message(j, "the server refused it"));
        json_decref(j);
    }
    wk_free(error_body);
    if (!r.err[0]) return WK_EXIT_OK;
    fprintf(stderr, "wick %s: %s\n", cmd, r.err);
    return WK_EXIT_ERROR;
}

/* `wick pull` (push false) or `wick push`. */
static int pull_or_push(int argc, char **argv, bool push)
{
    const char *cmd = push ? "push" : "pull", *name = NULL;
    bool insecure = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout, cmd);
            return WK_EXIT_OK;
        }
        if (strcmp(argv[i], "--insecure") == 0) insecure = true;
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "wick %s: unknown option '%s'\n", cmd, argv[i]);
            usage(stderr, cmd);
            return WK_EXIT_USAGE;
        } else if (name) {
            fprintf(stderr, "wick %s: one model name only ('%s' and '%s')\n", cmd, name, argv[i]);
            return WK_EXIT_USAGE;
        } else {
            name = argv[i];
        }
    }
    if (!name) {
        usage(stderr, cmd);
        return WK_EXIT_USAGE;
    }
    struct wk_error err;
    wk_error_clear(&err);
    struct wk_model_name n;
    if (wk_model_name_parse(name, &n, &err)) {
        fprintf(stderr, "wick %s: %s\n", cmd, err.msg);
        return WK_EXIT_USAGE;
    }
    struct view v = {.tty = isatty(STDERR_FILENO) == 1};
    struct sigaction sa = {.sa_handler = on_sigint}, old_int;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    char url[CLI_URL_MAX];
    const int remote = cli_remote_store(url, sizeof url);
    if (remote) { /* into the running server's store */
        int rc = remote < 0 ? WK_EXIT_ERROR : remote_pull_push(url, cmd, name, insecure, &v);
        sigaction(SIGINT, &old_int, NULL);
        return rc;
    }
    char dir[4096];
    wk_store_default_dir(dir, sizeof dir);
    struct wk_store *s;
    enum wk_status st = wk_store_open(dir, &s, &err);
    struct wk_registry_opts o = {.insecure = insecure, .progress = on_progress, .progress_user = &v,
                                 .cancelled = is_cancelled};
    if (!st) st = push ? wk_registry_push(s, &n, &o, &err) : wk_registry_pull(s, &n, &o, &err);
    sigaction(SIGINT, &old_int, NULL);
    wk_store_close(s);
    end_line(&v);
    if (st == WK_E_CANCELLED && !push)
        snprintf(err.msg, sizeof err.msg, "cancelled (what was downloaded is kept: pull again to resume)");
    if (st) {
        fprintf(stderr, "wick %s: %s\n", cmd, err.msg[0] ? err.msg : wk_status_str(st));
        return WK_EXIT_ERROR;
    }
    return WK_EXIT_OK;
}

int cmd_pull(int argc, char **argv) { return pull_or_push(argc, argv, false); }

int cmd_push(int argc, char **argv) { return pull_or_push(argc, argv, true); }
