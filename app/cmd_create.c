/*
 * cmd_create.c - the model store from the command line: `wick create NAME
 * -f Modelfile`, `wick list`, `wick show NAME`, `wick rm NAME...`, `wick
 * cp SRC DST` (as `ollama create/list/show/rm/cp`). The store and its
 * crash safety are src/store/wk_store.h; the Modelfile grammar is
 * src/io/wk_modelfile.h.
 */
#include "cli.h"
#include "http_client.h"

#include "../src/io/wk_io.h"
#include "../src/io/wk_json.h"
#include "../src/io/wk_modelfile.h"
#include "../src/model/wk_embed.h"
#include "../src/model/wk_model.h"
#include "../src/store/wk_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *cmd, const struct wk_error *err, enum wk_status st)
{
    fprintf(stderr, "wick %s: %s\n", cmd, err->msg[0] ? err->msg : wk_status_str(st));
    return WK_EXIT_ERROR;
}

static enum wk_status open_store(struct wk_store **s, struct wk_error *err)
{
    char dir[4096];
    wk_store_default_dir(dir, sizeof dir);
    return wk_store_open(dir, s, err);
}

/* ------------------------------------------------------------ create */

struct progress {
    const char *what;
    bool tty;
    int last;
};

static void on_progress(void *user, uint64_t done, uint64_t total)
{
    struct progress *p = user;
    int pct = total ? (int)(done * 100 / total) : 100;
    if (!p->tty || pct == p->last) return;
    p->last = pct;
    int bar = pct / 4;
    fprintf(stderr, "\r%s %3d%% [%.*s%*s] %.0f/%.0f MB", p->what, pct, bar,
            "#########################", 25 - bar, "", (double)done / 1e6, (double)total / 1e6);
    if (done == total) fputc('\n', stderr);
}

static void on_status(void *user, const char *line)
{
    struct progress *p = user;
    p->last = -1;
    fprintf(stderr, "%s\n", line);
}

/* A Modelfile (and a stored license) is a short text: at most this many bytes. */
#define MAX_TEXT_FILE ((size_t)16 << 20)

/* Reads the file at path (wk_malloc'd, NUL-terminated), at most
 * MAX_TEXT_FILE bytes: NULL with *too_big set past that (a device or a
 * model file named by mistake never fills memory), NULL with errno set
 * when it cannot be read. */
static char *read_file(const char *path, size_t *len, bool *too_big)
{
    *too_big = false;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 131072;
            char *b = wk_realloc(buf, cap);
            if (!b) break;
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
        if (n > MAX_TEXT_FILE) {
            *too_big = true;
            break;
        }
    }
    fclose(f);
    if (*too_big) {
        wk_free(buf);
        return NULL;
    }
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}

static void create_usage(FILE *f)
{
    fprintf(f, "Usage: wick create NAME [-f Modelfile] [--quantize TYPE] [--quantize-draft TYPE]\n\n"
               "Creates model NAME in the store (WICK_MODELS, default ~/.wick/models) from a\n"
               "Modelfile (default ./Modelfile): FROM a GGUF file or a stored model, DRAFT a\n"
               "GGUF file, PARAMETER, TEMPLATE, SYSTEM, MESSAGE, LICENSE.\n");
}

int cmd_create(int argc, char **argv)
{
    const char *name = NULL, *mf_path = "Modelfile", *quant = NULL, *quant_draft = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        bool bad = false;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            create_usage(stdout);
            return WK_EXIT_OK;
        }
        if (cli_opt_value(argc, argv, &i, "-f", &v, &bad, "create") ||
            cli_opt_value(argc, argv, &i, "--file", &v, &bad, "create"))
            mf_path = v;
        else if (cli_opt_value(argc, argv, &i, "--quantize", &v, &bad, "create") ||
                 cli_opt_value(argc, argv, &i, "-q", &v, &bad, "create"))
            quant = v;
        else if (cli_opt_value(argc, argv, &i, "--quantize-draft", &v, &bad, "create"))
            quant_draft = v;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "wick create: unknown option '%s'\n", argv[i]);
            return WK_EXIT_USAGE;
        } else if (!name) name = argv[i];
        else {
            fprintf(stderr, "wick create: one model name, got '%s' too\n", argv[i]);
            return WK_EXIT_USAGE;
        }
        if (bad) return WK_EXIT_USAGE; /* an option without its value (said) */
    }
    if (!name) {
        create_usage(stderr);
        return WK_EXIT_USAGE;
    }
    struct wk_error err;
    wk_error_clear(&err);
    struct wk_model_name n;
    enum wk_status st = wk_model_name_parse(name, &n, &err);
    if (st) return fail("create", &err, st);
    size_t len;
    bool too_big;
    struct stat sb;
    if (stat(mf_path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "wick create: %s is a folder, not a Modelfile (-f takes the Modelfile's path; a model folder "
                        "goes in its FROM line)\n", mf_path);
        return WK_EXIT_ERROR;
    }
    char *text = read_file(mf_path, &len, &too_big);
    if (!text) {
        if (too_big)
            fprintf(stderr, "wick create: %s is larger than %zu MiB: not a Modelfile (a model file goes in its FROM line)\n",
                    mf_path, MAX_TEXT_FILE >> 20);
        else fprintf(stderr, "wick create: cannot read %s: %s\n", mf_path, strerror(errno));
        return WK_EXIT_ERROR;
    }
    if (memchr(text, '\0', len)) {
        fprintf(stderr, "wick create: %s holds binary data: not a Modelfile (a model file goes in its FROM line)\n",
                mf_path);
        wk_free(text);
        return WK_EXIT_ERROR;
    }
    struct wk_modelfile mf = {0};
    st = wk_modelfile_parse(text, len, mf_path, &mf, &err);
    wk_free(text);
    if (st) return fail("create", &err, st);
    struct wk_store *s = NULL;
    char dir[4096] = ".";
    const char *slash = strrchr(mf_path, '/');
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - mf_path), mf_path);
    char url[CLI_URL_MAX];
    const int remote = cli_remote_store(url, sizeof url); /* cmd_remote.c */
    if (remote < 0 || (remote && !mf.draft && !quant && !quant_draft)) {
        int rc = remote < 0 ? WK_EXIT_ERROR : remote_create(url, name, &mf, dir);
        wk_modelfile_deinit(&mf);
        return rc;
    }
    if (remote) { /* a DRAFT or --quantize is made here: said, as the server may keep another store */
        char here[4096];
        wk_store_default_dir(here, sizeof here);
        fprintf(stderr, "note: a DRAFT or --quantize is made in this machine's store (%s), not through the server at "
                        "%s, which serves it only if that is its store\n", here, url);
    }
    struct progress pr = {.what = "copying", .tty = isatty(2), .last = -1};
    struct wk_create_opts co = {.base_dir = dir, .quantize = quant, .quantize_draft = quant_draft,
                                .progress = on_progress, .status = on_status, .user = &pr};
    if (!(st = open_store(&s, &err))) {
        wk_store_clean_stale(s); /* what killed creates left */
        st = wk_store_create(s, &n, &mf, &co, &err);
    }
    wk_store_close(s);
    wk_modelfile_deinit(&mf);
    if (st) return fail("create", &err, st);
    fprintf(stderr, "success\n");
    return WK_EXIT_OK;
}

/* ------------------------------------------------------------ list, rm, cp */

int cmd_list(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "Usage: wick list [PREFIX]\n");
        return WK_EXIT_USAGE;
    }
    struct wk_error err;
    struct wk_store *s = NULL;
    char url[CLI_URL_MAX];
    json_t *l;
    const int remote = cli_remote_store(url, sizeof url);
    if (remote < 0) return WK_EXIT_ERROR;
    if (remote) { /* a running server's store (cmd_remote.c) */
        if (!(l = remote_list(url))) return WK_EXIT_ERROR;
    } else {
        enum wk_status st = open_store(&s, &err);
        if (st) return fail("list", &err, st);
        l = wk_store_list(s);
    }
    /* as `ollama list [pattern]`: newest first (the store lists them so),
     * names starting with the prefix (any case), sizes and times for people */
    json_t *models = json_object_get(l, "models");
    const size_t n = json_array_size(models);
    char(*text)[3][64] = calloc(n + 1, sizeof *text); /* per model: ID, SIZE, MODIFIED */
    const char **cells = calloc(4 * (n + 1), sizeof *cells);
    if (!text || !cells) {
        free(text), free(cells), json_decref(l), wk_store_close(s);
        fprintf(stderr, "wick list: out of memory\n");
        return WK_EXIT_ERROR;
    }
    cells[0] = "NAME", cells[1] = "ID", cells[2] = "SIZE", cells[3] = "MODIFIED";
    int rows = 1;
    size_t i;
    json_t *m;
    json_array_foreach(models, i, m) {
        const char *name = json_string_value(json_object_get(m, "name"));
        if (argc == 2 && strncasecmp(name, argv[1], strlen(argv[1])) != 0) continue;
        char(*t)[64] = text[i];
        snprintf(t[0], sizeof t[0], "%.12s", json_string_value(json_object_get(m, "digest")) ?: "");
        cli_human_bytes(json_integer_value(json_object_get(m, "size")), t[1], sizeof t[1]);
        cli_human_time(json_string_value(json_object_get(m, "modified_at")), "Never", t[2], sizeof t[2]);
        const char **row = cells + 4 * rows++;
        row[0] = name, row[1] = t[0], row[2] = t[1], row[3] = t[2];
    }
    cli_print_table(cells, rows, 4);
    free(text), free(cells);
    json_decref(l);
    wk_store_close(s);
    return WK_EXIT_OK;
}

int cmd_rm(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "Usage: wick rm MODEL...\n");
        return WK_EXIT_USAGE;
    }
    char url[CLI_URL_MAX];
    const int remote = cli_remote_store(url, sizeof url);
    if (remote) return remote < 0 ? WK_EXIT_ERROR : remote_rm(url, argc - 1, argv + 1);
    struct wk_error err;
    struct wk_store *s;
    enum wk_status st = open_store(&s, &err);
    if (st) return fail("rm", &err, st);
    int rc = WK_EXIT_OK;
    for (int i = 1; i < argc; i++) {
        struct wk_model_name n;
        char shown[600];
        if ((st = wk_model_name_parse(argv[i], &n, &err)) || (st = wk_store_remove(s, &n, &err))) {
            rc = fail("rm", &err, st);
            continue;
        }
        wk_model_name_format(&n, shown, sizeof shown);
        printf("deleted '%s'\n", shown);
    }
    wk_store_close(s);
    return rc;
}

int cmd_cp(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "Usage: wick cp SOURCE DESTINATION\n");
        return WK_EXIT_USAGE;
    }
    char url[CLI_URL_MAX];
    const int remote = cli_remote_store(url, sizeof url);
    if (remote) return remote < 0 ? WK_EXIT_ERROR : remote_cp(url, argv[1], argv[2]);
    struct wk_error err;
    struct wk_store *s = NULL;
    struct wk_model_name a, b;
    enum wk_status st;
    if ((st = wk_model_name_parse(argv[1], &a, &err)) || (st = wk_model_name_parse(argv[2], &b, &err)) ||
        (st = open_store(&s, &err)) || (st = wk_store_copy(s, &a, &b, &err))) {
        wk_store_close(s);
        return fail("cp", &err, st);
    }
    wk_store_close(s);
    printf("copied '%s' to '%s'\n", argv[1], argv[2]);
    return WK_EXIT_OK;
}

/* ------------------------------------------------------------ show */

/* The family and its features (wk_model_features), then the KV cache's
 * f32 values per token (wk_model_kv_values), per layer
 * when the layers that keep one agree: K and V, or a multi-head latent
 * attention layer's compressed row (kv_lora_rank + RoPE dims). Nothing
 * when the model does not load (the weights only mapped: cheap). */
static void print_kv_cache(const char *path)
{
    struct wk_model *m = NULL;
    if (wk_model_load_ex(path, false, &m, NULL)) return;
    const struct wk_hparams *hp = wk_model_hparams(m);
    char features[1024];
    wk_model_features(m, features, sizeof features);
    printf("    %-20s %s\n", "family", wk_model_family_label(m));
    printf("    %-20s %s\n", "features", features);
    int64_t total = 0, per = -1;
    int32_t n_cached = 0;
    bool same = true;
    for (int32_t il = 0; il < hp->n_layer; il++) {
        int64_t v = wk_model_kv_values(m, il);
        if (v == 0) continue;
        same = same && (per < 0 || per == v);
        per = v;
        total += v;
        n_cached++;
    }
    char what[96] = "K and V";
    if (hp->n_lora_kv > 0)
        snprintf(what, sizeof what, "MLA: kv_lora_rank %d + RoPE %d", hp->n_lora_kv, hp->n_rot);
    if (same && n_cached > 0)
        printf("    %-20s %lld values per token per layer (%s), %d layers: %lld bytes per token\n", "KV cache",
               (long long)per, what, n_cached, (long long)total * 4);
    else
        printf("    %-20s %lld values per token over %d layers: %lld bytes per token\n", "KV cache", (long long)total,
               n_cached, (long long)total * 4);
    wk_model_destroy(m);
}

/* quant: the config blob's file_type when it has one (a quantized
 * safetensors import), else what the weights say. */
static void show_details(const char *title, const char *path, const char *quant)
{
    json_t *info = NULL;
    json_t *d = wk_model_details(path, &info, NULL);
    if (!d) return;
    const char *arch = json_string_value(json_object_get(d, "family"));
    char key[160];
    printf("  %s\n", title);
    printf("    %-20s %s\n", "architecture", arch);
    printf("    %-20s %s\n", "parameters", json_string_value(json_object_get(d, "parameter_size")));
    snprintf(key, sizeof key, "%s.context_length", arch);
    printf("    %-20s %lld\n", "context length", (long long)json_integer_value(json_object_get(info, key)));
    snprintf(key, sizeof key, "%s.embedding_length", arch);
    printf("    %-20s %lld\n", "embedding length", (long long)json_integer_value(json_object_get(info, key)));
    printf("    %-20s %s\n", "quantization",
           quant && *quant ? quant : json_string_value(json_object_get(d, "quantization_level")));
    print_kv_cache(path);
    printf("\n");
    json_decref(d);
    json_decref(info);
}

/* How wick renders chats for a model without a stored TEMPLATE: its own
 * chat template, a built-in family format (Gemma, Qwen 3, GLM-4 use
 * theirs whatever the file holds), or raw completion. */
static const char *chat_rendering(const struct wk_model *m)
{
    size_t n;
    switch (wk_model_chat_format(m)) {
    case WK_CHAT_GEMMA: return "wick's built-in Gemma turn format (<start_of_turn>user ... <start_of_turn>model)";
    case WK_CHAT_QWEN3: return "wick's built-in Qwen 3 turn format (ChatML, thinking off)";
    case WK_CHAT_GLM4: return "wick's built-in GLM-4 turn format ([gMASK]<sop><|user|> ... <|assistant|>)";
    case WK_CHAT_CHATML_IF_TEMPLATE:
        if (wk_model_chat_template(m, &n)) return "the model's own chat template (Jinja)";
        break;
    case WK_CHAT_NONE: break;
    }
    return "none: the model has no chat template (a base model), so it runs as raw completion";
}

/* wick show --template without a stored TEMPLATE: the effective template,
 * the model's own chat template (GGUF or folder), or a line saying what
 * renders chats instead (a built-in format, or raw completion). */
static int show_model_template(const char *name, const char *weights)
{
    struct wk_model *mdl = NULL;
    struct wk_error err;
    if (wk_model_load_ex(weights, false, &mdl, &err)) {
        fprintf(stderr, "wick show: %s\n", err.msg);
        return WK_EXIT_ERROR;
    }
    size_t n = 0;
    const char *t = wk_model_chat_template(mdl, &n);
    if (t && wk_model_chat_format(mdl) == WK_CHAT_CHATML_IF_TEMPLATE) printf("%.*s\n", (int)n, t);
    else if (t) fprintf(stderr, "wick show: %s: chats use %s; its chat template is not used:\n%.*s\n", name,
                        chat_rendering(mdl), (int)n, t);
    else fprintf(stderr, "wick show: %s has no chat template; chats use %s\n", name, chat_rendering(mdl));
    wk_model_destroy(mdl);
    return WK_EXIT_OK;
}

/* The Capabilities section of wick show: /api/show's list
 * (wk_capabilities), from the template that renders chats. */
static void print_capabilities(const struct wk_store_model *m)
{
    const bool go = m->template_text && *m->template_text;
    char *tmpl = NULL;
    json_t *d = wk_model_details(m->weights, NULL, go ? NULL : &tmpl);
    json_t *caps = wk_capabilities(go ? m->template_text : tmpl, go, json_string_value(json_object_get(d, "family")),
                                   m->weights);
    printf("  Capabilities\n");
    size_t i;
    json_t *c;
    json_array_foreach(caps, i, c) printf("    %s\n", json_string_value(c));
    printf("\n");
    json_decref(caps);
    json_decref(d);
    wk_free(tmpl);
}

/* The Template section of wick show: what renders chats. WK_EXIT_ERROR
 * (the load error on stderr) when the weights do not load. */
static int show_template_line(const struct wk_store_model *m)
{
    struct wk_model *mdl = NULL;
    struct wk_error err;
    int rc = WK_EXIT_OK;
    printf("  Template\n");
    if (m->template_text && *m->template_text) printf("    the Modelfile's TEMPLATE (Go text/template, as Ollama)\n\n");
    else if (wk_embed_is_model(m->weights)) printf("    none: an embedding model (/api/embed, /v1/embeddings)\n\n");
    else if (wk_model_load_ex(m->weights, false, &mdl, &err)) {
        printf("    unknown: %s\n\n", err.msg);
        fprintf(stderr, "wick show: %s\n", err.msg);
        rc = WK_EXIT_ERROR;
    } else printf("    %s\n\n", chat_rendering(mdl));
    wk_model_destroy(mdl);
    return rc;
}

int cmd_show(int argc, char **argv)
{
    const char *name = NULL, *part = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--modelfile") == 0 || strcmp(argv[i], "--parameters") == 0 ||
            strcmp(argv[i], "--template") == 0 || strcmp(argv[i], "--system") == 0 ||
            strcmp(argv[i], "--license") == 0) {
            if (part) { /* as ollama show refuses two */
                fprintf(stderr, "wick show: only one of --license, --modelfile, --parameters, --system or --template "
                                "can be given\n");
                return WK_EXIT_USAGE;
            }
            part = argv[i] + 2;
        } else if (argv[i][0] == '-' || name) {
            fprintf(stderr, "Usage: wick show MODEL [--modelfile|--parameters|--template|--system|--license]\n");
            return WK_EXIT_USAGE;
        } else name = argv[i];
    }
    if (!name) {
        fprintf(stderr, "Usage: wick show MODEL [--modelfile|--parameters|--template|--system|--license]\n");
        return WK_EXIT_USAGE;
    }
    char url[CLI_URL_MAX];
    struct stat sb;
    size_t nl = strlen(name);
    const bool file = stat(name, &sb) == 0 || (nl > 5 && strcmp(name + nl - 5, ".gguf") == 0); /* wick show x.gguf */
    const int remote = file ? 0 : cli_remote_store(url, sizeof url);
    if (remote) return remote < 0 ? WK_EXIT_ERROR : remote_show(url, name, part);
    struct wk_error err;
    wk_error_clear(&err);
    struct wk_store *s;
    struct wk_store_model m;
    enum wk_status st = open_store(&s, &err);
    if (!st) st = wk_store_resolve(s, name, true, &m, &err);
    if (st) {
        wk_store_close(s);
        return fail("show", &err, st);
    }
    int rc = WK_EXIT_OK;
    if (part && strcmp(part, "modelfile") == 0) {
        struct wk_model_name mn;
        char canonical[WK_MODEL_NAME_MAX] = "";
        if (!wk_model_name_parse(name, &mn, NULL)) wk_model_name_format(&mn, canonical, sizeof canonical);
        char *t = m.manifest ? wk_store_modelfile(s, m.manifest, canonical, &err) : NULL;
        if (t) fputs(t, stdout);
        else rc = fail("show", &err, WK_E_INVALID);
        wk_free(t);
    } else if (part && strcmp(part, "parameters") == 0) {
        const char *k;
        json_t *v;
        json_object_foreach(m.params, k, v) {
            json_t *vals = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
            size_t i;
            json_t *e;
            json_array_foreach(vals, i, e) {
                char *t = wk_json_text(e);
                printf("%-30s %s\n", k, t ? t : "");
                free(t);
            }
            json_decref(vals);
        }
    } else if (part) {
        const char *mt = strcmp(part, "template") == 0 ? WK_MT_TEMPLATE
                         : strcmp(part, "system") == 0 ? WK_MT_SYSTEM
                                                       : WK_MT_LICENSE;
        char *t = m.manifest ? wk_store_layer_text(s, m.manifest, mt) : NULL;
        if (t) printf("%s\n", t);
        else if (strcmp(part, "template") == 0) rc = show_model_template(name, m.weights);
        wk_free(t);
    } else {
        /* the config blob's file types (set for quantized safetensors imports) */
        json_t *cfg = NULL;
        const char *cd = m.manifest ? json_string_value(json_object_get(json_object_get(m.manifest, "config"), "digest")) : NULL;
        char cpath[4200];
        if (cd) {
            wk_store_blob_path(s, cd, cpath, sizeof cpath);
            cfg = json_load_file(cpath, 0, NULL);
        }
        show_details("Model", m.weights, json_string_value(json_object_get(cfg, "file_type")));
        print_capabilities(&m);
        if (m.draft[0])
            show_details("Draft", m.draft, json_string_value(json_object_get(json_object_get(cfg, "draft"), "file_type")));
        json_decref(cfg);
        if (json_object_size(m.params)) {
            printf("  Parameters\n");
            const char *k;
            json_t *v;
            json_object_foreach(m.params, k, v) {
                char *t = json_dumps(v, JSON_ENCODE_ANY);
                printf("    %-20s %s\n", k, t);
                free(t);
            }
            printf("\n");
        }
        rc = show_template_line(&m);
        if (m.system) printf("  System\n    %s\n\n", m.system);
    }
    wk_store_model_deinit(&m);
    wk_store_close(s);
    return rc;
}
