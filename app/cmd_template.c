/*
 * cmd_template.c - `wick template`: renders a conversation through a chat
 * template to the exact prompt text, to debug prompts.
 *
 *   wick template (MODEL | --jinja FILE | --go FILE) --messages FILE.json
 *                 [--tools FILE.json] [--no-generation-prompt] [--var NAME=JSON]...
 *
 * MODEL is a GGUF file, a Hugging Face folder or a stored model's name,
 * rendered exactly as wick run and the server render it: a stored
 * TEMPLATE (Go, after the stored SYSTEM and MESSAGEs), else the model's
 * own chat template (GGUF tokenizer.chat_template, tokenizer_config.json
 * or chat_template.jinja) through the Jinja engine (wk_jinja.h: Hugging
 * Face transformers' semantics) with bos_token and eos_token the
 * model's, else the format built into wick for its family (Gemma, Qwen
 * 3, GLM-4) or, for a base model, raw completion (no --var or --tools
 * then). --jinja FILE renders that template file (no model; bos_token
 * and eos_token empty unless --var sets them). --go FILE renders an
 * Ollama Modelfile TEMPLATE (Go text/template, wk_gotmpl.h) as Ollama
 * applies it (wk_gotmpl_render_chat: .Messages, .Tools and .System, or
 * once per exchange with .System, .Prompt and .Response for a template
 * without .Messages).
 * FILE.json holds the messages as a JSON array, or an object with
 * "messages" (and optionally "tools"). The Jinja variables are messages,
 * tools (when given), add_generation_prompt (true unless
 * --no-generation-prompt), bos_token, eos_token and each --var. The
 * rendered text goes to stdout as it is, with no newline added.
 */
#include "cli.h"

#include "../src/model/wk_model.h"
#include "../src/runtime/wk_gotmpl.h"
#include "../src/runtime/wk_jinja.h"
#include "../src/runtime/wk_runtime.h"
#include "../src/store/wk_store.h"
#include "../src/tokenizer/wk_tokenizer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define USAGE                                                                                              \
    "Usage: wick template (MODEL | --jinja FILE | --go FILE) --messages FILE.json\n"                       \
    "                     [--tools FILE.json] [--no-generation-prompt] [--var NAME=JSON]...\n"

/* A file's whole text (at most 16 MiB), NUL-terminated; NULL with a message. */
static char *read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "wick template: cannot open %s\n", path);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *nb = cap < ((size_t)16 << 20) ? realloc(buf, 2 * cap + 1) : NULL;
            if (!nb) {
                fprintf(stderr, "wick template: %s is too large (at most 16 MiB)\n", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* The text of token id (control tokens as their text), or "" for -1. */
static json_t *token_text(const struct wk_tokenizer *tok, int32_t id)
{
    char buf[256];
    size_t n = id >= 0 ? wk_tokenizer_token_bytes(tok, id, true, buf, sizeof buf) : 0;
    return json_stringn(buf, n < sizeof buf ? n : 0);
}

/* What MODEL renders with: a stored TEMPLATE (Go), its own chat template
 * (Jinja), or a built-in format / raw completion (wk_chat_render). */
enum kind { K_GO, K_JINJA, K_BUILTIN };

/* The stored model's SYSTEM (unless the conversation has one) and MESSAGEs
 * put before the conversation in vars, as wick run and the server do. */
static void stored_defaults(const struct wk_store_model *sm, json_t *vars)
{
    json_t *msgs = json_object_get(vars, "messages");
    json_t *first = json_array_get(msgs, 0);
    const char *r0 = json_string_value(json_object_get(first, "role"));
    bool has_system = r0 && strcmp(r0, "system") == 0;
    size_t at = has_system ? 1 : 0, i;
    json_t *m;
    json_array_foreach(sm->messages, i, m) json_array_insert(msgs, at++, m);
    if (!has_system && sm->system)
        json_array_insert_new(msgs, 0, json_pack("{s:s, s:s}", "role", "system", "content", sm->system));
}

/* Opens MODEL (a GGUF file or Hugging Face folder, else a stored model's
 * name) and finds what renders its chats: *kind, the template text (Go or
 * Jinja, malloc'd) and the BOS / EOS texts in vars; *model and *tok stay
 * open for K_BUILTIN. False with a message. */
static bool model_template(const char *name, enum kind *kind, char **text, size_t *len, json_t *vars,
                           struct wk_model **model, struct wk_tokenizer **tok)
{
    struct wk_error err;
    struct wk_store_model sm = {0};
    const char *path = name;
    struct stat stb;
    if (stat(name, &stb) != 0) { /* a stored model */
        char dir[4096];
        wk_store_default_dir(dir, sizeof dir);
        struct wk_store *s = NULL;
        enum wk_status st = wk_store_open(dir, &s, &err);
        if (!st) st = wk_store_resolve(s, name, false, &sm, &err);
        wk_store_close(s);
        if (st) {
            fprintf(stderr, "wick template: %s\n", err.msg);
            return false;
        }
        path = sm.weights;
        stored_defaults(&sm, vars);
        if (sm.template_text && *sm.template_text) {
            *kind = K_GO;
            *text = strdup(sm.template_text);
            *len = strlen(sm.template_text);
            wk_store_model_deinit(&sm);
            return *text != NULL;
        }
    }
    bool ok = !wk_model_load_ex(path, false, model, &err) && !wk_tokenizer_for_model(*model, tok, &err);
    wk_store_model_deinit(&sm);
    if (!ok) {
        fprintf(stderr, "wick template: %s\n", err.msg);
        return false;
    }
    size_t n = 0;
    const char *t = wk_model_chat_template(*model, &n);
    json_object_set_new(vars, "bos_token", token_text(*tok, wk_tokenizer_bos(*tok)));
    json_object_set_new(vars, "eos_token", token_text(*tok, wk_tokenizer_eos(*tok)));
    *kind = t && wk_model_chat_format(*model) == WK_CHAT_CHATML_IF_TEMPLATE ? K_JINJA : K_BUILTIN;
    if (*kind == K_BUILTIN) return true;
    if (!(*text = malloc(n + 1))) return false;
    memcpy(*text, t, n);
    (*text)[n] = '\0';
    *len = n;
    return true;
}

/* The conversation in a built-in format, or as raw completion, exactly as
 * wick run renders it (the segments' text). */
static int render_builtin(const struct wk_model *m, const struct wk_tokenizer *tok, json_t *vars, bool gen,
                          bool extra)
{
    if (extra || json_object_get(vars, "tools")) {
        fprintf(stderr, "wick template: this model has no chat template to pass --var or --tools to (it uses "
                        "a format built into wick, or raw completion)\n");
        return WK_EXIT_USAGE;
    }
    json_t *msgs = json_object_get(vars, "messages");
    size_t n = json_array_size(msgs);
    struct wk_chat_message *cm = calloc(n ? n : 1, sizeof *cm);
    for (size_t i = 0; cm && i < n; i++) {
        cm[i].role = json_string_value(json_object_get(json_array_get(msgs, i), "role"));
        cm[i].content = json_string_value(json_object_get(json_array_get(msgs, i), "content"));
    }
    struct wk_prompt p = {0};
    struct wk_error err;
    enum wk_status st = cm ? wk_chat_render(m, tok, cm, (int32_t)n, gen, &p, &err)
                           : wk_error_set(&err, WK_E_NOMEM, "out of memory");
    for (int32_t i = 0; !st && i < p.n; i++) fwrite(p.segs[i].text, 1, p.segs[i].len, stdout);
    if (st) fprintf(stderr, "wick template: %s\n", err.msg);
    wk_prompt_deinit(&p);
    free(cm);
    return st ? WK_EXIT_ERROR : WK_EXIT_OK;
}

static int render(const char *text, size_t len, bool go, json_t *vars)
{
    struct wk_error err;
    char *out = NULL;
    size_t out_len = 0;
    enum wk_status st;
    if (go) {
        struct wk_gotmpl *t = NULL;
        st = wk_gotmpl_parse(text, len, &t, &err);
        if (!st)
            st = wk_gotmpl_render_chat(t, json_object_get(vars, "messages"), json_object_get(vars, "tools"), &out,
                                       &out_len, NULL, NULL, &err);
        wk_gotmpl_free(t);
    } else {
        struct wk_jinja *t = NULL;
        st = wk_jinja_parse(text, len, &t, &err);
        if (!st) st = wk_jinja_render(t, vars, &out, &out_len, &err);
        wk_jinja_free(t);
    }
    if (st) {
        fprintf(stderr, "wick template: %s\n", err.msg);
        return WK_EXIT_ERROR;
    }
    fwrite(out, 1, out_len, stdout);
    wk_free(out);
    return WK_EXIT_OK;
}

/* Reads the messages file (and tools) into vars; false with a message. */
static bool load_messages(const char *msgs_path, const char *tools_path, json_t *vars)
{
    json_error_t je;
    json_t *j = json_load_file(msgs_path, 0, &je);
    json_t *msgs = json_is_array(j) ? j : json_object_get(j, "messages");
    if (!json_is_array(msgs)) {
        fprintf(stderr, "wick template: %s: %s\n", msgs_path,
                j ? "want a JSON array of messages, or an object with \"messages\"" : je.text);
        json_decref(j);
        return false;
    }
    json_object_set(vars, "messages", msgs);
    if (json_is_object(j) && json_object_get(j, "tools")) json_object_set(vars, "tools", json_object_get(j, "tools"));
    json_decref(j);
    if (!tools_path) return true;
    json_t *tools = json_load_file(tools_path, 0, &je);
    if (!json_is_array(tools)) {
        fprintf(stderr, "wick template: %s: %s\n", tools_path, tools ? "want a JSON array of tools" : je.text);
        json_decref(tools);
        return false;
    }
    json_object_set_new(vars, "tools", tools);
    return true;
}

int cmd_template(int argc, char **argv)
{
    const char *model = NULL, *jinja = NULL, *go = NULL, *msgs = NULL, *tools = NULL, *v = NULL;
    bool bad = false, gen = true;
    json_t *vars = json_object(), *extra = json_object();
    for (int i = 1; i < argc && !bad; i++) {
        if (cli_opt_value(argc, argv, &i, "--jinja", &jinja, &bad, "template") ||
            cli_opt_value(argc, argv, &i, "--go", &go, &bad, "template") ||
            cli_opt_value(argc, argv, &i, "--messages", &msgs, &bad, "template") ||
            cli_opt_value(argc, argv, &i, "--tools", &tools, &bad, "template"))
            continue;
        if (cli_opt_value(argc, argv, &i, "--var", &v, &bad, "template")) {
            if (bad) break; /* said */
            const char *eq = strchr(v, '=');
            json_error_t je;
            json_t *val = eq ? json_loads(eq + 1, JSON_DECODE_ANY, &je) : NULL;
            if (!val || eq == v || eq - v >= 128) {
                fprintf(stderr, "wick template: --var %s: want NAME=JSON (%s)\n", v,
                        !eq ? "no '='" : !val ? je.text : eq == v ? "an empty NAME" : "a NAME over 127 bytes");
                json_decref(val);
                bad = true;
            } else {
                char name[128];
                snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
                json_object_set_new(extra, name, val);
            }
        } else if (strcmp(argv[i], "--no-generation-prompt") == 0) {
            gen = false;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf(USAGE "\nRenders a conversation to the exact prompt text a chat template makes of it.\n");
            json_decref(vars), json_decref(extra);
            return WK_EXIT_OK;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "wick template: unknown option '%s'\n", argv[i]);
            bad = true;
        } else if (!model) {
            model = argv[i];
        } else {
            fprintf(stderr, "wick template: unexpected argument '%s'\n", argv[i]);
            bad = true;
        }
    }
    if (!bad && (!msgs || (!!model + !!jinja + !!go) != 1)) {
        fprintf(stderr, USAGE);
        bad = true;
    }
    int rc = WK_EXIT_USAGE;
    struct wk_model *mdl = NULL;
    struct wk_tokenizer *tok = NULL;
    char *text = NULL;
    size_t len = 0;
    if (!bad) {
        json_object_set_new(vars, "bos_token", json_string(""));
        json_object_set_new(vars, "eos_token", json_string(""));
        rc = WK_EXIT_ERROR;
        enum kind kind = go ? K_GO : K_JINJA;
        bool ok = load_messages(msgs, tools, vars);
        if (ok && model) ok = model_template(model, &kind, &text, &len, vars, &mdl, &tok);
        else if (ok) ok = (text = read_text(jinja ? jinja : go, &len)) != NULL;
        bool has_extra = json_object_size(extra) > 0;
        json_object_set_new(vars, "add_generation_prompt", json_boolean(gen));
        json_object_update(vars, extra);
        if (ok && kind == K_BUILTIN) rc = render_builtin(mdl, tok, vars, gen, has_extra);
        else if (ok) rc = render(text, len, kind == K_GO, vars);
    }
    wk_tokenizer_destroy(tok);
    wk_model_destroy(mdl);
    free(text);
    json_decref(vars);
    json_decref(extra);
    return rc;
}
