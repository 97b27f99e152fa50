/*
 * cmd_create.c - the model store from the command line: `wick create NAME
 * -f Modelfile`, `wick list`, `wick show NAME`, `wick rm NAME...`, `wick
 * cp SRC DST` (as `ollama create/list/show/rm/cp`). The store and its
 * crash safety are src/server/wk_store.h; the Modelfile grammar is
 * src/io/wk_modelfile.h.
 */
#include "cli.h"

#include "../src/io/wk_io.h"
#include "../src/io/wk_modelfile.h"
#include "../src/server/wk_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

/* Reads the whole file at path (wk_malloc'd, NUL-terminated). */
static char *read_file(const char *path, size_t *len)
{
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
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}

/* path relative to the Modelfile's folder unless absolute, into out. */
static void relative_to(const char *mf_path, const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(mf_path, '/');
    if (path[0] == '/' || path[0] == '~' || !slash) snprintf(out, cap, "%s", path);
    else snprintf(out, cap, "%.*s/%s", (int)(slash - mf_path), mf_path, path);
    if (path[0] == '~' && getenv("HOME")) snprintf(out, cap, "%s%s", getenv("HOME"), path + 1);
}

static bool is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Checks the file is GGUF a model can load from (the header parses). */
static enum wk_status check_gguf(const char *path, struct wk_error *err)
{
    struct wk_gguf *g;
    enum wk_status st = wk_gguf_open(path, &g, err);
    if (!st) wk_gguf_close(g);
    return st;
}

/* The draft must share the target's vocabulary, token for token. */
static enum wk_status check_vocab(const char *target, const char *draft, struct wk_error *err)
{
    struct wk_gguf *a, *b;
    enum wk_status st = wk_gguf_open(target, &a, err);
    if (st) return st;
    if ((st = wk_gguf_open(draft, &b, err))) {
        wk_gguf_close(a);
        return st;
    }
    const struct wk_gguf_value *ta = wk_gguf_find(a, "tokenizer.ggml.tokens");
    const struct wk_gguf_value *tb = wk_gguf_find(b, "tokenizer.ggml.tokens");
    uint64_t na = ta && ta->type == WK_GGUF_ARRAY ? ta->arr.n : 0;
    uint64_t nb = tb && tb->type == WK_GGUF_ARRAY ? tb->arr.n : 0;
    uint64_t diff = na == nb ? na : 0;
    for (uint64_t i = 0; na == nb && i < na && ta->arr.strs && tb->arr.strs; i++)
        if (ta->arr.strs[i].len != tb->arr.strs[i].len ||
            memcmp(ta->arr.strs[i].data, tb->arr.strs[i].data, ta->arr.strs[i].len) != 0) {
            diff = i;
            break;
        }
    if (na != nb || diff < na)
        st = wk_error_set(err, WK_E_INVALID,
                          "the draft's vocabulary does not match the target's (%llu vs %llu tokens%s)",
                          (unsigned long long)nb, (unsigned long long)na,
                          na == nb ? ", they differ" : "");
    wk_gguf_close(a);
    wk_gguf_close(b);
    return st;
}

/* Adds a layer for a blob to layers. */
static void add_layer(json_t *layers, const char *mt, const char *digest, uint64_t size)
{
    json_array_append_new(layers, json_pack("{s:s, s:s, s:I}", "mediaType", mt, "digest", digest,
                                            "size", (json_int_t)size));
}

static enum wk_status add_text_layer(struct wk_store *s, json_t *layers, const char *mt,
                                     const char *text, size_t len, struct wk_error *err)
{
    char digest[80];
    enum wk_status st = wk_store_add_bytes(s, text, len, digest, err);
    if (!st) add_layer(layers, mt, digest, len);
    return st;
}

/* The Modelfile's PARAMETERs as Ollama's params JSON: name -> value,
 * stop -> list, over the base model's. */
static json_t *params_json(const struct wk_modelfile *mf, json_t *base)
{
    json_t *p = base ? json_deep_copy(base) : json_object();
    bool stop_reset = false;
    for (int32_t i = 0; i < mf->n_params; i++) {
        const struct wk_mf_param *q = &mf->params[i];
        if (strcmp(q->name, "stop") == 0) {
            if (!stop_reset) json_object_set_new(p, "stop", json_array()), stop_reset = true;
            json_array_append_new(json_object_get(p, "stop"), json_string(q->s));
            continue;
        }
        json_t *v = q->type == WK_MF_FLOAT ? json_real(q->f)
                    : q->type == WK_MF_INT ? json_integer(q->i)
                    : q->type == WK_MF_BOOL ? json_boolean(q->b)
                                            : json_string(q->s);
        json_object_set_new(p, q->name, v);
    }
    return p;
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
        else if (bad) return WK_EXIT_USAGE;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "wick create: unknown option '%s'\n", argv[i]);
            return WK_EXIT_USAGE;
        } else if (!name) name = argv[i];
        else {
            fprintf(stderr, "wick create: one model name, got '%s' too\n", argv[i]);
            return WK_EXIT_USAGE;
        }
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
    char *text = read_file(mf_path, &len);
    if (!text) {
        fprintf(stderr, "wick create: cannot read %s: %s\n", mf_path, strerror(errno));
        return WK_EXIT_ERROR;
    }
    struct wk_modelfile mf = {0};
    st = wk_modelfile_parse(text, len, mf_path, &mf, &err);
    wk_free(text);
    if (st) return fail("create", &err, st);
    struct wk_store *s = NULL;
    json_t *base = NULL, *layers = json_array(), *config = NULL, *params = NULL;
    char from[4096], draft[4096] = "";
    relative_to(mf_path, mf.from, from, sizeof from);
    if (mf.draft) relative_to(mf_path, mf.draft, draft, sizeof draft);
    struct progress pr = {.tty = isatty(2), .last = -1};
    char digest[80];
    uint64_t size;

    if (quant_draft && !mf.draft) {
        st = wk_error_set(&err, WK_E_INVALID, "--quantize-draft requires a DRAFT model");
    } else if (quant || quant_draft) {
        st = wk_error_set(&err, WK_E_UNSUPPORTED, "--quantize%s %s is not supported yet",
                          quant ? "" : "-draft", quant ? quant : quant_draft);
    } else if (mf.draft && strcmp(from, draft) == 0) {
        st = wk_error_set(&err, WK_E_INVALID, "DRAFT must not reference the same local path as FROM: %s", draft);
    } else if (mf.draft && !is_file(draft)) {
        st = wk_error_set(&err, is_dir(draft) ? WK_E_UNSUPPORTED : WK_E_NOT_FOUND,
                          is_dir(draft) ? "DRAFT %s: safetensors folders are not supported yet"
                                        : "DRAFT %s: no such file",
                          draft);
    } else if (is_dir(from)) {
        st = wk_error_set(&err, WK_E_UNSUPPORTED, "FROM %s: safetensors folders are not supported yet", from);
    }
    if (!st) st = open_store(&s, &err);
    const char *weights_path = NULL;
    char base_weights[4200] = "";
    if (!st && is_file(from)) {
        weights_path = from;
        st = check_gguf(from, &err);
    } else if (!st) { /* FROM a stored model: its layers, overridden by this Modelfile */
        struct wk_model_name bn;
        if (!(st = wk_model_name_parse(mf.from, &bn, &err)) && !(st = wk_store_read_manifest(s, &bn, &base, &err))) {
            const char *w = wk_manifest_layer(base, WK_MT_MODEL);
            if (w) wk_store_blob_path(s, w, base_weights, sizeof base_weights);
            weights_path = base_weights;
        } else if (st == WK_E_NOT_FOUND || st == WK_E_INVALID) {
            st = wk_error_set(&err, WK_E_NOT_FOUND, "FROM %s: no such file or stored model", mf.from);
        }
    }
    if (!st && mf.draft) st = check_gguf(draft, &err);
    if (!st && mf.draft) st = check_vocab(weights_path, draft, &err);
    if (!st && weights_path == from) {
        pr.what = "copying model data";
        if (!pr.tty) fprintf(stderr, "copying model data from %s\n", from);
        if (!(st = wk_store_add_file(s, from, on_progress, &pr, digest, &size, &err)))
            add_layer(layers, WK_MT_MODEL, digest, size);
    } else if (!st) {
        json_t *l;
        size_t i;
        json_array_foreach(json_object_get(base, "layers"), i, l) {
            const char *mt = json_string_value(json_object_get(l, "mediaType"));
            if (strcmp(mt, WK_MT_MODEL) == 0 || (strcmp(mt, WK_MT_DRAFT) == 0 && !mf.draft))
                json_array_append(layers, l);
        }
    }
    if (!st && mf.draft) {
        pr.what = "copying draft data";
        pr.last = -1;
        if (!pr.tty) fprintf(stderr, "copying draft data from %s\n", draft);
        if (!(st = wk_store_add_file(s, draft, on_progress, &pr, digest, &size, &err)))
            add_layer(layers, WK_MT_DRAFT, digest, size);
    }
    /* the Modelfile's text layers, each over the base model's */
    char *base_params = !st && base ? wk_store_layer_text(s, base, WK_MT_PARAMS) : NULL;
    json_t *bp = base_params ? json_loads(base_params, 0, NULL) : NULL;
    wk_free(base_params);
    params = st ? NULL : params_json(&mf, bp);
    json_decref(bp);
    if (!st && json_object_size(params) > 0) {
        char *t = json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS);
        st = add_text_layer(s, layers, WK_MT_PARAMS, t, strlen(t), &err);
        free(t);
    }
    static const char *const text_mts[] = {WK_MT_TEMPLATE, WK_MT_SYSTEM};
    const char *texts[] = {mf.template_text, mf.system};
    for (int i = 0; i < 2 && !st; i++) {
        char *inherited = !texts[i] && base ? wk_store_layer_text(s, base, text_mts[i]) : NULL;
        const char *t = texts[i] ? texts[i] : inherited;
        if (t) st = add_text_layer(s, layers, text_mts[i], t, strlen(t), &err);
        wk_free(inherited);
    }
    if (!st && (mf.n_messages > 0 || (base && wk_manifest_layer(base, WK_MT_MESSAGES)))) {
        json_t *msgs = json_array();
        for (int32_t i = 0; i < mf.n_messages; i++)
            json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", mf.messages[i].role, "content",
                                                  mf.messages[i].content));
        char *t = mf.n_messages ? json_dumps(msgs, JSON_COMPACT) : wk_store_layer_text(s, base, WK_MT_MESSAGES);
        if (t) st = add_text_layer(s, layers, WK_MT_MESSAGES, t, strlen(t), &err);
        if (mf.n_messages) free(t);
        else wk_free(t);
        json_decref(msgs);
    }
    for (int32_t i = 0; i < mf.n_licenses && !st; i++)
        st = add_text_layer(s, layers, WK_MT_LICENSE, mf.licenses[i], strlen(mf.licenses[i]), &err);
    if (!st && mf.n_licenses == 0 && base) {
        size_t i;
        json_t *l;
        json_array_foreach(json_object_get(base, "layers"), i, l)
            if (strcmp(json_string_value(json_object_get(l, "mediaType")), WK_MT_LICENSE) == 0)
                json_array_append(layers, l);
    }
    /* the config blob, then the manifest: last, once every blob is in place */
    if (!st) {
        char wpath[4200];
        wk_store_blob_path(s, json_string_value(json_object_get(json_array_get(layers, 0), "digest")),
                           wpath, sizeof wpath);
        json_t *d = wk_model_details(wpath, NULL, NULL);
        config = json_pack("{s:s, s:O, s:O, s:O, s:O, s:[s]}", "model_format", "gguf", "model_family",
                           json_object_get(d, "family"), "model_families", json_object_get(d, "families"),
                           "model_type", json_object_get(d, "parameter_size"), "file_type",
                           json_object_get(d, "quantization_level"), "capabilities", "completion");
        json_decref(d);
        size_t i;
        json_t *l;
        json_array_foreach(layers, i, l) if (strcmp(json_string_value(json_object_get(l, "mediaType")), WK_MT_DRAFT) == 0) {
            char dpath[4200];
            wk_store_blob_path(s, json_string_value(json_object_get(l, "digest")), dpath, sizeof dpath);
            json_t *dd2 = wk_model_details(dpath, NULL, NULL);
            json_object_set_new(config, "draft", json_pack("{s:s, s:O, s:O, s:O}", "model_format", "gguf",
                                                           "architecture", json_object_get(dd2, "family"),
                                                           "model_type", json_object_get(dd2, "parameter_size"),
                                                           "file_type", json_object_get(dd2, "quantization_level")));
            json_decref(dd2);
        }
        char *t = json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS);
        st = wk_store_add_bytes(s, t, strlen(t), digest, &err);
        json_t *manifest = json_pack("{s:i, s:s, s:{s:s, s:s, s:I}, s:O}", "schemaVersion", 2, "mediaType",
                                     WK_MT_MANIFEST, "config", "mediaType", WK_MT_CONFIG, "digest", digest,
                                     "size", (json_int_t)strlen(t), "layers", layers);
        free(t);
        if (!st) {
            fprintf(stderr, "writing manifest\n");
            st = wk_store_write_manifest(s, &n, manifest, &err);
        }
        json_decref(manifest);
    }
    json_decref(config);
    json_decref(params);
    json_decref(layers);
    json_decref(base);
    wk_store_close(s);
    wk_modelfile_deinit(&mf);
    if (st) return fail("create", &err, st);
    fprintf(stderr, "success\n");
    return WK_EXIT_OK;
}

/* ------------------------------------------------------------ list, rm, cp */

int cmd_list(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "Usage: wick list\n");
        return WK_EXIT_USAGE;
    }
    struct wk_error err;
    struct wk_store *s;
    enum wk_status st = open_store(&s, &err);
    if (st) return fail("list", &err, st);
    json_t *l = wk_store_list(s);
    printf("%-40s %-14s %-10s %s\n", "NAME", "ID", "SIZE", "MODIFIED");
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(l, "models"), i, m) {
        char size[32];
        snprintf(size, sizeof size, "%.0f MB", (double)json_integer_value(json_object_get(m, "size")) / 1e6);
        printf("%-40s %-14.12s %-10s %s\n", json_string_value(json_object_get(m, "name")),
               json_string_value(json_object_get(m, "digest")), size,
               json_string_value(json_object_get(m, "modified_at")));
    }
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

/* The stored model as a Modelfile: FROM and DRAFT name the blobs, so
 * `wick create` from it reuses them. */
static char *stored_modelfile(struct wk_store *s, json_t *m, struct wk_error *err)
{
    struct wk_modelfile mf = {0};
    char path[4200];
    const char *w = wk_manifest_layer(m, WK_MT_MODEL), *d = wk_manifest_layer(m, WK_MT_DRAFT);
    if (w) wk_store_blob_path(s, w, path, sizeof path), mf.from = wk_asprintf("%s", path);
    if (d) wk_store_blob_path(s, d, path, sizeof path), mf.draft = wk_asprintf("%s", path);
    mf.template_text = wk_store_layer_text(s, m, WK_MT_TEMPLATE);
    mf.system = wk_store_layer_text(s, m, WK_MT_SYSTEM);
    char *p = wk_store_layer_text(s, m, WK_MT_PARAMS);
    json_t *params = p ? json_loads(p, 0, NULL) : NULL;
    wk_free(p);
    const char *k;
    json_t *v;
    enum wk_status st = WK_OK;
    json_object_foreach(params, k, v) {
        json_t *vals = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
        size_t i;
        json_t *e;
        json_array_foreach(vals, i, e) {
            char buf[64];
            const char *t = json_is_string(e) ? json_string_value(e) : buf;
            if (json_is_integer(e)) snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(e));
            else if (json_is_real(e)) snprintf(buf, sizeof buf, "%.17g", json_real_value(e));
            else if (json_is_boolean(e)) snprintf(buf, sizeof buf, "%s", json_is_true(e) ? "true" : "false");
            if (!st) st = wk_modelfile_add_param(&mf, k, t, err);
        }
        json_decref(vals);
    }
    json_decref(params);
    char *msgs = wk_store_layer_text(s, m, WK_MT_MESSAGES);
    json_t *ml = msgs ? json_loads(msgs, 0, NULL) : NULL;
    wk_free(msgs);
    size_t n = json_array_size(ml), i;
    json_t *e;
    mf.messages = n ? wk_calloc(n, sizeof *mf.messages) : NULL;
    json_array_foreach(ml, i, e) {
        mf.messages[i].role = wk_asprintf("%s", json_string_value(json_object_get(e, "role")));
        mf.messages[i].content = wk_asprintf("%s", json_string_value(json_object_get(e, "content")));
        mf.n_messages++;
    }
    json_decref(ml);
    json_array_foreach(json_object_get(m, "layers"), i, e) {
        if (strcmp(json_string_value(json_object_get(e, "mediaType")), WK_MT_LICENSE) != 0) continue;
        char **l = wk_realloc(mf.licenses, (size_t)(mf.n_licenses + 1) * sizeof *l);
        if (!l) break;
        mf.licenses = l;
        wk_store_blob_path(s, json_string_value(json_object_get(e, "digest")), path, sizeof path);
        size_t len;
        mf.licenses[mf.n_licenses++] = read_file(path, &len);
    }
    char *out = st ? NULL : wk_modelfile_format(&mf);
    wk_modelfile_deinit(&mf);
    return out;
}

static void show_details(const char *title, const char *path)
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
    printf("    %-20s %s\n\n", "quantization", json_string_value(json_object_get(d, "quantization_level")));
    json_decref(d);
    json_decref(info);
}

int cmd_show(int argc, char **argv)
{
    const char *name = NULL, *part = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--modelfile") == 0 || strcmp(argv[i], "--parameters") == 0 ||
            strcmp(argv[i], "--template") == 0 || strcmp(argv[i], "--system") == 0 ||
            strcmp(argv[i], "--license") == 0)
            part = argv[i] + 2;
        else if (argv[i][0] == '-' || name) {
            fprintf(stderr, "Usage: wick show MODEL [--modelfile|--parameters|--template|--system|--license]\n");
            return WK_EXIT_USAGE;
        } else name = argv[i];
    }
    if (!name) {
        fprintf(stderr, "Usage: wick show MODEL [--modelfile|--parameters|--template|--system|--license]\n");
        return WK_EXIT_USAGE;
    }
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
        char *t = m.manifest ? stored_modelfile(s, m.manifest, &err) : NULL;
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
                char *t = json_dumps(e, JSON_ENCODE_ANY);
                printf("%-30s %s\n", k, t);
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
        wk_free(t);
    } else {
        show_details("Model", m.weights);
        printf("  Capabilities\n    completion\n\n");
        if (m.draft[0]) show_details("Draft", m.draft);
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
        if (m.system) printf("  System\n    %s\n\n", m.system);
    }
    wk_store_model_deinit(&m);
    wk_store_close(s);
    return rc;
}
