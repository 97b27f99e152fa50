/*
 * cmd_run_client.c - `wick run` talking to a running server, as `ollama
 * run` does (cmd/cmd.go, cmd/interactive.go; read to learn the behaviour,
 * written anew): one-shot prompts through POST /api/generate, the chat
 * through POST /api/chat, both streamed (NDJSON: one JSON object per
 * line, "response" or "message.content" pieces, "thinking" apart, the
 * last with "done": true and the timings); /show through /api/show, /save
 * through /api/create, /load through /api/show and an empty
 * /api/generate (which loads the model).
 *
 * Errors: an answer that is not 200 ({"error": "..."}), or an error line
 * inside the stream, print "Error: <message>". Ctrl-C closes the
 * connection, which makes the server cancel the generation; the
 * conversation goes on with what was answered so far.
 */
#include "run.h"

#include "../src/base/wk_base.h"
#include "../src/store/wk_store.h"

#include <stdlib.h>
#include <string.h>

bool run_client_probe(const char *base, long timeout_ms)
{
    long status = 0;
    char err[256];
    json_t *j = cli_http_json(base, "/api/version", NULL, timeout_ms, &status, err, sizeof err);
    bool ok = status == 200 && json_is_string(json_object_get(j, "version"));
    json_decref(j);
    return ok;
}

/* POSTs body (stolen) to path; the JSON answer (owned) and its status,
 * or NULL with err[cap] saying why. */
static json_t *post(const struct run_session *s, const char *path, json_t *body, long *status, char *err,
                    size_t cap)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    json_t *j = cli_http_json(s->url, path, text, 0, status, err, cap);
    free(text);
    return j;
}

/* /api/show for model name: the answer (owned) or NULL with err set;
 * *status is the HTTP status (404: no such model). */
static json_t *show(const struct run_session *s, const char *name, long *status, char *err, size_t cap)
{
    json_t *j = post(s, "/api/show", json_pack("{s:s}", "model", name), status, err, cap);
    if (j && *status != 200) {
        snprintf(err, cap, "%s", cli_error_message(j, "the server refused /api/show"));
        json_decref(j);
        return NULL;
    }
    return j;
}

/* Loads name on the server (an empty /api/generate, with keep_alive and
 * think as the chat will send them). */
static bool load(const struct run_session *s, const char *name, long *status, char *err, size_t cap)
{
    json_t *body = json_pack("{s:s, s:b}", "model", name, "stream", 0);
    if (s->o->keepalive) json_object_set_new(body, "keep_alive", json_string(s->o->keepalive));
    json_t *j = post(s, "/api/generate", body, status, err, cap);
    if (j && *status != 200) snprintf(err, cap, "%s", cli_error_message(j, "the server refused to load the model"));
    bool ok = j && *status == 200;
    json_decref(j);
    return ok;
}

int run_client_open(struct run_session *s)
{
    long status = 0;
    char err[1024];
    json_t *info = show(s, s->model, &status, err, sizeof err);
    if (!info || !load(s, s->model, &status, err, sizeof err)) {
        fprintf(stderr, "Error: %s\n", err);
        json_decref(info);
        return WK_EXIT_ERROR;
    }
    json_t *msgs = json_object_get(info, "messages");
    json_decref(s->loaded_msgs);
    s->loaded_msgs = json_is_array(msgs) ? json_incref(msgs) : json_array();
    json_decref(info);
    return WK_EXIT_OK;
}

/* One streamed answer. */
struct turn {
    struct run_session *s;
    bool chat;          /* /api/chat's shape (message.content), else /api/generate's (response) */
    struct wk_buf text; /* the answer's text so far */
    json_t *final;      /* the object with "done": true (owned) */
    char *error;        /* an error line's message (owned) */
};

/* An entry's bytes ("bytes": [..], else its "token" text) into out[cap]. */
static size_t entry_bytes(json_t *e, char *out, size_t cap)
{
    json_t *bytes = json_object_get(e, "bytes");
    size_t n = 0, i;
    json_t *b;
    if (json_is_array(bytes)) {
        json_array_foreach(bytes, i, b) if (n < cap) out[n++] = (char)json_integer_value(b);
        return n;
    }
    n = json_string_length(json_object_get(e, "token"));
    if (n > cap) n = cap;
    memcpy(out, json_string_value(json_object_get(e, "token")) ? json_string_value(json_object_get(e, "token")) : "",
           n);
    return n;
}

/* --logprobs: the stream's "logprobs" entries, a line each on stderr. */
static void print_logprobs(json_t *entries)
{
    size_t i, j;
    json_t *e, *t;
    char buf[256];
    json_array_foreach(entries, i, e) {
        run_print_logprob(buf, entry_bytes(e, buf, sizeof buf), json_number_value(json_object_get(e, "logprob")));
        json_array_foreach(json_object_get(e, "top_logprobs"), j, t)
            run_print_top_logprob((int)j, buf, entry_bytes(t, buf, sizeof buf),
                                  json_number_value(json_object_get(t, "logprob")));
        fputc('\n', stderr);
    }
}

static bool on_line(void *user, const char *line, size_t len)
{
    struct turn *t = user;
    json_t *j = json_loadb(line, len, 0, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        t->error = strdup("the server's answer is not JSON");
        return false;
    }
    const char *e = json_string_value(json_object_get(j, "error"));
    if (e) {
        t->error = strdup(e);
        json_decref(j);
        return false;
    }
    json_t *m = t->chat ? json_object_get(j, "message") : j;
    json_t *content = json_object_get(m, t->chat ? "content" : "response"), *thinking = json_object_get(m, "thinking");
    bool ok = true;
    if (json_string_length(thinking) && !t->s->hide_thinking)
        ok = run_display_thinking(&t->s->disp, json_string_value(thinking), json_string_length(thinking));
    if (ok && json_is_array(json_object_get(j, "logprobs"))) print_logprobs(json_object_get(j, "logprobs"));
    if (ok && json_string_length(content)) {
        ok = wk_buf_add(&t->text, json_string_value(content), json_string_length(content)) &&
             run_display_text(&t->s->disp, json_string_value(content), json_string_length(content));
    }
    if (json_is_true(json_object_get(j, "done"))) {
        json_decref(t->final);
        t->final = json_incref(j);
    }
    json_decref(j);
    if (!ok && !t->error) t->error = strdup("cannot write the answer to stdout");
    return ok;
}

/* j's string field key, or "". */
static const char *str_of(json_t *j, const char *key)
{
    const char *s = json_string_value(json_object_get(j, key));
    return s ? s : "";
}

static int64_t ns_of(json_t *final, const char *key)
{
    return (int64_t)json_number_value(json_object_get(final, key));
}

/* POSTs body (stolen) to path and streams the answer; prints how it
 * ended. t->text holds the answer's text. */
static enum run_result stream(struct run_session *s, const char *path, json_t *body, struct turn *t)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text) {
        fprintf(stderr, "Error: out of memory\n");
        return RUN_ERROR;
    }
    long status = 0;
    char *error_body = NULL, err[256] = "";
    run_display_begin(&s->disp, s->wordwrap);
    run_begin_answer();
    int rc = cli_http_stream(s->url, path, text, on_line, t, &g_run_cancel, &status, &error_body, err, sizeof err);
    g_run_generating = false;
    free(text);
    enum run_result res = RUN_OK;
    if (rc == 1 && g_run_cancel && !t->error) {
        res = RUN_CANCELLED;
    } else if (rc < 0 || t->error || status != 200) {
        json_t *j = error_body ? json_loads(error_body, 0, NULL) : NULL;
        const char *msg = rc < 0 ? err : t->error ? t->error : cli_error_message(j, error_body ? error_body : "");
        if (t->text.len || s->disp.thinking) printf("\n");
        fflush(stdout);
        if (status != 200 && rc >= 0 && !*msg) fprintf(stderr, "Error: the server answered HTTP %ld\n", status);
        else fprintf(stderr, "Error: %s\n", msg);
        json_decref(j);
        res = RUN_ERROR;
    }
    wk_free(error_body);
    if (res == RUN_OK) run_display_end_thinking(&s->disp);
    s->disp.thinking = false;
    if (res != RUN_ERROR) printf("\n");
    fflush(stdout);
    if (res == RUN_OK && s->verbose && t->final)
        run_print_stats(ns_of(t->final, "total_duration"), ns_of(t->final, "load_duration"),
                        ns_of(t->final, "prompt_eval_count"), ns_of(t->final, "prompt_eval_duration"),
                        ns_of(t->final, "eval_count"), ns_of(t->final, "eval_duration"));
    return res;
}

static void turn_free(struct turn *t)
{
    wk_free(t->text.p);
    free(t->error);
    json_decref(t->final);
}

/* The logprobs fields of a request, from --logprobs. */
static void add_logprobs(const struct run_session *s, json_t *body)
{
    if (s->o->logprobs < 0) return;
    json_object_set_new(body, "logprobs", json_true());
    json_object_set_new(body, "top_logprobs", json_integer(s->o->logprobs));
}

enum run_result run_client_generate(struct run_session *s)
{
    json_t *body = run_request_body(s);
    if (!body) return RUN_ERROR;
    json_object_set_new(body, "prompt", json_string(s->o->prompt));
    if (s->o->raw) json_object_set_new(body, "raw", json_true());
    if (s->system) json_object_set_new(body, "system", json_string(s->system));
    add_logprobs(s, body);
    struct turn t = {.s = s};
    enum run_result res = stream(s, "/api/generate", body, &t);
    turn_free(&t);
    return res;
}

enum run_result run_client_answer(struct run_session *s)
{
    json_t *body = run_request_body(s);
    if (!body) return RUN_ERROR;
    struct turn t = {.s = s, .chat = !s->o->raw};
    add_logprobs(s, body);
    if (s->o->raw) { /* --raw: the last message alone, as the text to continue */
        json_t *last = json_array_get(s->msgs, json_array_size(s->msgs) - 1);
        json_object_set(body, "prompt", json_object_get(last, "content"));
        json_object_set_new(body, "raw", json_true());
    } else {
        json_t *msgs = json_array();
        if (s->system) json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "system", "content", s->system));
        json_array_extend(msgs, s->msgs);
        json_object_set_new(body, "messages", msgs);
    }
    enum run_result res = stream(s, s->o->raw ? "/api/generate" : "/api/chat", body, &t);
    if (res != RUN_ERROR && !run_msgs_add(s, "assistant", t.text.p ? t.text.p : "", t.text.len)) res = RUN_ERROR;
    turn_free(&t);
    return res;
}

/* /show info: the model's details as `ollama show` prints them. */
static void show_info(json_t *info)
{
    json_t *d = json_object_get(info, "details"), *mi = json_object_get(info, "model_info");
    const char *arch = json_string_value(json_object_get(d, "family"));
    char key[160];
    printf("  Model\n");
    printf("    %-20s %s\n", "architecture", arch ? arch : "");
    printf("    %-20s %s\n", "parameters", str_of(d, "parameter_size"));
    snprintf(key, sizeof key, "%s.context_length", arch ? arch : "");
    printf("    %-20s %lld\n", "context length", (long long)json_integer_value(json_object_get(mi, key)));
    snprintf(key, sizeof key, "%s.embedding_length", arch ? arch : "");
    printf("    %-20s %lld\n", "embedding length", (long long)json_integer_value(json_object_get(mi, key)));
    printf("    %-20s %s\n\n", "quantization", str_of(d, "quantization_level"));
    size_t i;
    json_t *c;
    printf("  Capabilities\n");
    json_array_foreach(json_object_get(info, "capabilities"), i, c) printf("    %s\n", json_string_value(c));
    printf("\n");
    const char *p = json_string_value(json_object_get(info, "parameters"));
    if (p && *p) {
        printf("  Parameters\n");
        for (const char *q = p; *q;) {
            size_t n = strcspn(q, "\n");
            printf("    %.*s\n", (int)n, q);
            q += n + (q[n] == '\n');
        }
        printf("\n");
    }
    const char *sys = json_string_value(json_object_get(info, "system"));
    if (sys && *sys) printf("  System\n    %s\n\n", sys);
    const char *lic = json_string_value(json_object_get(info, "license"));
    if (lic && *lic) printf("  License\n    %.*s\n\n", (int)strcspn(lic, "\n"), lic);
}

static void show_parameters(const struct run_session *s, json_t *info)
{
    const char *p = json_string_value(json_object_get(info, "parameters"));
    printf("Model defined parameters:\n");
    if (!p || !*p) printf("  No additional parameters were specified for this model.\n");
    for (const char *q = p ? p : ""; *q;) {
        size_t n = strcspn(q, "\n");
        printf("  %.*s\n", (int)n, q);
        q += n + (q[n] == '\n');
    }
    printf("\n");
    run_show_user_parameters(s);
}

bool run_client_show(struct run_session *s, const char *what)
{
    static const char *const known[] = {"info", "license", "modelfile", "parameters", "system", "template"};
    bool is_known = false;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) is_known |= strcmp(what, known[i]) == 0;
    if (!is_known) return false;
    long status = 0;
    char err[1024];
    json_t *info = show(s, s->model, &status, err, sizeof err);
    if (!info) {
        printf("error: couldn't get model: %s\n", err);
        return true;
    }
    const char *t;
    if (strcmp(what, "info") == 0) show_info(info);
    else if (strcmp(what, "license") == 0)
        printf("%s\n", (t = json_string_value(json_object_get(info, "license"))) && *t
                           ? t : "No license was specified for this model.");
    else if (strcmp(what, "modelfile") == 0) printf("%s\n", str_of(info, "modelfile"));
    else if (strcmp(what, "parameters") == 0) show_parameters(s, info);
    else if (strcmp(what, "system") == 0) {
        t = s->system ? s->system : json_string_value(json_object_get(info, "system"));
        if (t && *t) printf("%s\n\n", t);
        else printf("No system message was specified for this model.\n");
    } else {
        t = json_string_value(json_object_get(info, "template"));
        printf("%s\n", t && *t ? t : "No prompt template was specified for this model.");
    }
    json_decref(info);
    return true;
}

/* Whether the server says the model thinks ("thinking" among its
 * capabilities). */
bool run_client_can_think(struct run_session *s)
{
    long status = 0;
    char err[256];
    json_t *info = show(s, s->model, &status, err, sizeof err);
    size_t i;
    json_t *c;
    bool yes = !info; /* unknown: no warning */
    json_array_foreach(json_object_get(info, "capabilities"), i, c) yes |= strcmp(json_string_value(c), "thinking") == 0;
    json_decref(info);
    return yes;
}

void run_client_save(struct run_session *s, const char *name)
{
    struct wk_model_name n;
    struct wk_error werr;
    if (wk_model_name_parse(name, &n, &werr)) {
        printf("error: The model name '%s' is invalid\n", name);
        return;
    }
    json_t *req = run_create_request(s, name);
    long status = 0;
    char err[1024];
    json_t *j = req ? post(s, "/api/create", req, &status, err, sizeof err) : NULL;
    if (j && status == 200) printf("Created new model '%s'\n", name);
    else printf("error: %s\n", j ? cli_error_message(j, "the server refused /api/create") : req ? err : "out of memory");
    json_decref(j);
}

void run_client_load(struct run_session *s, const char *name)
{
    printf("Loading model '%s'\n", name);
    fflush(stdout);
    long status = 0;
    char err[1024];
    json_t *info = show(s, name, &status, err, sizeof err);
    if (info && !load(s, name, &status, err, sizeof err)) {
        json_decref(info);
        info = NULL;
    }
    if (!info) {
        if (status == 404) printf("Couldn't find model '%s'\n", name);
        else printf("error: %s\n", err);
        return;
    }
    char *dup = strdup(name);
    if (dup) {
        free(s->model);
        s->model = dup;
        free(s->system);
        s->system = NULL;
        json_array_clear(s->msgs);
        json_t *msgs = json_object_get(info, "messages");
        json_decref(s->loaded_msgs);
        s->loaded_msgs = json_is_array(msgs) ? json_incref(msgs) : json_array();
    }
    json_decref(info);
}
