/*
 * create.c - a Modelfile into a stored model (wk_store_create), shared by
 * `wick create` and POST /api/create. Blobs first (the weights, the
 * draft, the params/template/system/messages/license texts, the config),
 * the manifest last, so a create killed at any moment leaves no manifest
 * pointing at a missing blob. Follows Ollama's create semantics
 * (docs/reference/ollama-mlx-runner.md §6.1): FROM a file or a
 * stored model, whose layers this Modelfile's commands override.
 */
#include "wk_store.h"
#include "../io/wk_json.h"

#include "../io/wk_io.h"
#include "../model/wk_embed.h"
#include "../model/wk_model.h"
#include "../runtime/wk_gotmpl.h"
#include "../runtime/wk_runtime.h"

#include <dirent.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct build {
    struct wk_store *s;
    const struct wk_modelfile *mf;
    const struct wk_create_opts *o;
    json_t *base;   /* the FROM model's manifest, or NULL */
    json_t *layers; /* the new manifest's */
    struct wk_error *err;
};

static void say(const struct build *b, const char *fmt, const char *arg)
{
    if (!b->o->status) return;
    char line[4400];
    snprintf(line, sizeof line, fmt, arg);
    b->o->status(b->o->user, line);
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

/* path against base_dir unless absolute (or ~/), into out. */
static void resolve_path(const char *base_dir, const char *path, char *out, size_t cap)
{
    if (path[0] == '~' && path[1] == '/' && getenv("HOME")) snprintf(out, cap, "%s%s", getenv("HOME"), path + 1);
    else if (path[0] == '/' || !base_dir || !*base_dir) snprintf(out, cap, "%s", path);
    else snprintf(out, cap, "%s/%s", base_dir, path);
}

static enum wk_status check_gguf(const char *path, struct wk_error *err)
{
    struct wk_gguf *g;
    enum wk_status st = wk_gguf_open(path, &g, err);
    if (!st) wk_gguf_close(g);
    return st;
}

/* Loads the model at path and its tokenizer (the caller frees both). */
static enum wk_status load_with_tokenizer(const char *path, struct wk_model **m, struct wk_tokenizer **tok,
                                          struct wk_error *err)
{
    *tok = NULL;
    enum wk_status st = wk_model_load_ex(path, false, m, err);
    if (!st && (st = wk_tokenizer_for_model(*m, tok, err))) {
        wk_model_destroy(*m);
        *m = NULL;
    }
    return st;
}

/* A Gemma 4 MTP assistant (no tokenizer of its own) must fit its target
 * (wk_model_check_mtp: hidden size, vocabulary, the caches it reads);
 * *is_mtp false when draft is an ordinary model. */
static enum wk_status check_mtp(const char *target, const char *draft, bool *is_mtp, struct wk_error *err)
{
    struct wk_model *ma = NULL, *mb = NULL;
    enum wk_status st = wk_model_load_ex(draft, false, &mb, err);
    *is_mtp = !st && wk_model_is_mtp(mb);
    if (*is_mtp && !(st = wk_model_load_ex(target, false, &ma, err))) st = wk_model_check_mtp(mb, ma, err);
    wk_model_destroy(ma);
    wk_model_destroy(mb);
    return st;
}

/* The draft must share the target's vocabulary, token for token (each
 * id's bytes), whatever the formats of the two; an MTP assistant must fit
 * its target (check_mtp). */
static enum wk_status check_vocab(const char *target, const char *draft, struct wk_error *err)
{
    struct wk_model *ma = NULL, *mb = NULL;
    struct wk_tokenizer *ta = NULL, *tb = NULL;
    bool is_mtp;
    enum wk_status st = check_mtp(target, draft, &is_mtp, err);
    if (st || is_mtp) return st;
    st = load_with_tokenizer(target, &ma, &ta, err);
    if (!st) st = load_with_tokenizer(draft, &mb, &tb, err);
    if (!st) {
        int32_t na = wk_tokenizer_n_vocab(ta), nb = wk_tokenizer_n_vocab(tb), first = -1;
        char x[256], y[256];
        for (int32_t i = 0; na == nb && i < na && first < 0; i++) {
            size_t lx = wk_tokenizer_token_bytes(ta, i, true, x, sizeof x);
            size_t ly = wk_tokenizer_token_bytes(tb, i, true, y, sizeof y);
            if (lx != ly || memcmp(x, y, WK_MIN(lx, sizeof x)) != 0) first = i;
        }
        if (na != nb || first >= 0)
            st = wk_error_set(err, WK_E_INVALID,
                              na != nb ? "the draft's vocabulary does not match the target's (%d vs %d tokens)"
                                       : "the draft's vocabulary does not match the target's (token %d differs)",
                              na != nb ? nb : first, na);
    }
    wk_tokenizer_destroy(ta);
    wk_tokenizer_destroy(tb);
    wk_model_destroy(ma);
    wk_model_destroy(mb);
    return st;
}

static void add_layer(json_t *layers, const char *mt, const char *digest, uint64_t size)
{
    json_array_append_new(layers, json_pack("{s:s, s:s, s:I}", "mediaType", mt, "digest", digest,
                                            "size", (json_int_t)size));
}

static enum wk_status add_text(struct build *b, const char *mt, const char *text)
{
    char digest[80];
    size_t len = strlen(text);
    enum wk_status st = wk_store_add_bytes(b->s, text, len, digest, b->err);
    if (!st) add_layer(b->layers, mt, digest, len);
    return st;
}

/* Appends the base model's layers of media type mt. */
static void inherit(struct build *b, const char *mt)
{
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(b->base, "layers"), i, l)
        if (strcmp(json_string_value(json_object_get(l, "mediaType")), mt) == 0) json_array_append(b->layers, l);
}

static enum wk_status add_file(struct build *b, const char *mt, const char *path, const char *what)
{
    char digest[80];
    uint64_t size;
    say(b, what, path);
    enum wk_status st = wk_store_add_file(b->s, path, b->o->progress, b->o->user, digest, &size, b->err);
    if (!st) add_layer(b->layers, mt, digest, size);
    return st;
}

/* A draft: a GGUF file or a Hugging Face folder (as the weights, named
 * "draft/<file>" for a folder's files). */
static enum wk_status add_draft(struct build *b, const char *draft)
{
    if (!is_dir(draft)) return add_file(b, WK_MT_DRAFT, draft, "copying draft data from %s");
    DIR *d = opendir(draft);
    struct dirent *e;
    enum wk_status st = WK_OK;
    while (!st && d && (e = readdir(d))) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        bool tensors = len > 12 && strcmp(n + len - 12, ".safetensors") == 0;
        bool json = (len > 5 && strcmp(n + len - 5, ".json") == 0 && strcmp(n, "model.safetensors.index.json") != 0) ||
                    strcmp(n, "chat_template.jinja") == 0;
        if (n[0] == '.' || (!tensors && !json)) continue;
        char path[4400], name[300];
        snprintf(path, sizeof path, "%.4000s/%.255s", draft, n);
        snprintf(name, sizeof name, "draft/%s", n);
        size_t before = json_array_size(b->layers);
        if (!(st = add_file(b, tensors ? WK_MT_DRAFT : WK_MT_JSON, path, "copying draft %s")))
            json_object_set_new(json_array_get(b->layers, before), "name", json_string(name));
    }
    if (d) closedir(d);
    return st;
}

/* An embedding folder's Pooling module config (modules.json names its
 * sub-folder, "1_Pooling"): a JSON layer named "<sub-folder>_config.json",
 * since the store's folders are flat; wk_embed_model_load reads that name
 * when the sub-folder is absent (a flat folder, as /api/create's files
 * make it, has that file among its JSON layers already). None without
 * modules.json or Pooling. */
static enum wk_status add_pooling_config(struct build *b, const char *dir)
{
    char path[4400];
    snprintf(path, sizeof path, "%.4000s/modules.json", dir);
    json_t *mods = wk_json_load_file(path, 0, NULL), *e;
    size_t i;
    enum wk_status st = WK_OK;
    json_array_foreach(mods, i, e)
    {
        const char *type = json_string_value(json_object_get(e, "type")), *sub = json_string_value(json_object_get(e, "path"));
        if (!type || !sub || !strstr(type, "Pooling") || !*sub || strchr(sub, '/') || sub[0] == '.' || strlen(sub) > 200)
            continue;
        char name[300];
        snprintf(path, sizeof path, "%.4000s/%s/config.json", dir, sub);
        snprintf(name, sizeof name, "%s_config.json", sub);
        struct stat sb;
        if (stat(path, &sb) != 0) break; /* a flat folder (/api/create's files): <sub>_config.json is a layer already */
        size_t before = json_array_size(b->layers);
        if (!(st = add_file(b, WK_MT_JSON, path, "copying %s")))
            json_object_set_new(json_array_get(b->layers, before), "name", json_string(name));
        break;
    }
    json_decref(mods);
    return st;
}

/* A Hugging Face folder: its safetensors files as tensor layers and its
 * JSON and template files as JSON layers, each named by its file name;
 * loaded once first, so a folder wick cannot run is an error now. */
static enum wk_status add_folder(struct build *b, const char *dir)
{
    const bool embed = wk_embed_is_folder(dir);
    enum wk_status st;
    if (embed) { /* a BERT sentence-transformers folder (wk_embed.h) */
        struct wk_embed_model *em;
        if ((st = wk_embed_model_load(dir, &em, b->err))) return st;
        wk_embed_model_destroy(em);
        if ((st = add_pooling_config(b, dir))) return st;
    } else {
        struct wk_model *m;
        if ((st = wk_model_load_ex(dir, false, &m, b->err))) return st;
        wk_model_destroy(m);
    }
    DIR *d = opendir(dir);
    struct dirent *e;
    while (!st && d && (e = readdir(d))) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        bool tensors = len > 12 && strcmp(n + len - 12, ".safetensors") == 0;
        bool json = (len > 5 && strcmp(n + len - 5, ".json") == 0 && strcmp(n, "model.safetensors.index.json") != 0) ||
                    strcmp(n, "chat_template.jinja") == 0 || strcmp(n, "tokenizer.model") == 0;
        if (n[0] == '.' || (!tensors && !json)) continue;
        char path[4400];
        snprintf(path, sizeof path, "%.4000s/%.255s", dir, n);
        size_t before = json_array_size(b->layers);
        if (!(st = add_file(b, tensors ? WK_MT_TENSOR : WK_MT_JSON, path, "copying %s")))
            json_object_set_new(json_array_get(b->layers, before), "name", json_string(n));
    }
    if (d) closedir(d);
    return st;
}

/* The weights: a GGUF file, or the stored FROM model's (whose draft comes
 * along unless this Modelfile names one). *weights: their path. */
static enum wk_status add_weights(struct build *b, const char *from, char *weights, size_t cap)
{
    const struct wk_modelfile *mf = b->mf;
    /* with server-side paths off, FROM is a stored model's name only (checked
     * by wk_store_create): no file or folder is looked up by it */
    bool paths = !b->o->no_paths;
    if (paths && is_dir(from)) {
        snprintf(weights, cap, "%s", from);
        return add_folder(b, from);
    }
    if (paths && is_file(from)) {
        snprintf(weights, cap, "%s", from);
        /* the whole model and its tokenizer load (mapped, not read), so a
         * stored model can run: not only a GGUF header (one with no
         * tensors, an unknown architecture, a missing vocabulary) */
        struct wk_model *m = NULL;
        struct wk_tokenizer *tok = NULL;
        enum wk_status st = check_gguf(from, b->err);
        if (!st && wk_embed_is_model(from)) { /* llama.cpp's "bert" GGUF (wk_embed.h) */
            struct wk_embed_model *em;
            if (!(st = wk_embed_model_load(from, &em, b->err))) wk_embed_model_destroy(em);
            return st ? st : add_file(b, WK_MT_MODEL, from, "copying model data from %s");
        }
        if (!st) st = load_with_tokenizer(from, &m, &tok, b->err);
        wk_tokenizer_destroy(tok);
        wk_model_destroy(m);
        return st ? st : add_file(b, WK_MT_MODEL, from, "copying model data from %s");
    }
    struct wk_model_name bn;
    enum wk_status st = wk_model_name_parse(mf->from, &bn, NULL);
    if (st || (st = wk_store_read_manifest(b->s, &bn, &b->base, NULL)))
        return wk_error_set(b->err, WK_E_NOT_FOUND, "FROM %s: no such file or stored model", mf->from);
    struct wk_store_model sm;
    if ((st = wk_store_resolve(b->s, mf->from, false, &sm, b->err))) return st;
    snprintf(weights, cap, "%s", sm.weights);
    wk_store_model_deinit(&sm);
    inherit(b, WK_MT_MODEL);
    inherit(b, WK_MT_TENSOR);
    inherit(b, WK_MT_JSON);
    if (!mf->draft) inherit(b, WK_MT_DRAFT);
    return WK_OK;
}

/* PARAMETERs over the base model's: name -> value, stop -> list (this
 * Modelfile's stops replace the base's). */
static json_t *params_json(struct build *b)
{
    char *t = b->base ? wk_store_layer_text(b->s, b->base, WK_MT_PARAMS) : NULL;
    json_t *p = t ? json_loads(t, 0, NULL) : NULL;
    wk_free(t);
    if (!json_is_object(p)) json_decref(p), p = json_object();
    bool stop_reset = false;
    for (int32_t i = 0; i < b->mf->n_params; i++) {
        const struct wk_mf_param *q = &b->mf->params[i];
        if (strcmp(q->name, "stop") == 0) {
            if (!stop_reset) json_object_set_new(p, "stop", json_array()), stop_reset = true;
            json_array_append_new(json_object_get(p, "stop"), json_string(q->s));
            continue;
        }
        json_object_set_new(p, q->name, q->type == WK_MF_FLOAT ? json_real(q->f)
                                        : q->type == WK_MF_INT ? json_integer(q->i)
                                        : q->type == WK_MF_BOOL ? json_boolean(q->b)
                                                                : json_string(q->s));
    }
    return p;
}

/* The Modelfile's text layers, each replacing the base model's. */
static enum wk_status add_texts(struct build *b)
{
    const struct wk_modelfile *mf = b->mf;
    enum wk_status st = WK_OK;
    json_t *p = params_json(b);
    if (json_object_size(p) > 0) {
        char *t = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
        st = t ? add_text(b, WK_MT_PARAMS, t) : wk_error_set(b->err, WK_E_NOMEM, "out of memory");
        free(t);
    }
    json_decref(p);
    const char *mts[] = {WK_MT_TEMPLATE, WK_MT_SYSTEM};
    const char *texts[] = {mf->template_text, mf->system};
    for (int i = 0; i < 2 && !st; i++) {
        if (texts[i]) st = add_text(b, mts[i], texts[i]);
        else inherit(b, mts[i]);
    }
    if (!st && mf->n_messages > 0) {
        json_t *msgs = json_array();
        for (int32_t i = 0; i < mf->n_messages; i++)
            json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", mf->messages[i].role, "content",
                                                  mf->messages[i].content));
        char *t = json_dumps(msgs, JSON_COMPACT);
        st = t ? add_text(b, WK_MT_MESSAGES, t) : wk_error_set(b->err, WK_E_NOMEM, "out of memory");
        free(t);
        json_decref(msgs);
    } else if (!st) {
        inherit(b, WK_MT_MESSAGES);
    }
    for (int32_t i = 0; i < mf->n_licenses && !st; i++) st = add_text(b, WK_MT_LICENSE, mf->licenses[i]);
    if (!st && mf->n_licenses == 0) inherit(b, WK_MT_LICENSE);
    return st;
}

/* What the config blob says of the GGUF blob of layer mt. */
static json_t *gguf_config(struct build *b, const char *mt)
{
    size_t i;
    json_t *l;
    json_array_foreach(b->layers, i, l) {
        if (strcmp(json_string_value(json_object_get(l, "mediaType")), mt) != 0) continue;
        char path[4200];
        wk_store_blob_path(b->s, json_string_value(json_object_get(l, "digest")), path, sizeof path);
        json_t *det = wk_model_details(path, NULL, NULL);
        json_t *c = json_pack("{s:s, s:O, s:O, s:O, s:O}", "model_format", "gguf", "model_family",
                              json_object_get(det, "family"), "model_families",
                              json_object_get(det, "families"), "model_type",
                              json_object_get(det, "parameter_size"), "file_type",
                              json_object_get(det, "quantization_level"));
        json_decref(det);
        return c;
    }
    return NULL;
}

/* The config blob, then the manifest. */
/* The config's description of a safetensors model at path. */
static json_t *folder_config(const char *path, const char *quant, struct wk_error *err)
{
    if (wk_embed_is_folder(path))
        return json_pack("{s:s, s:s, s:[s], s:s}", "model_format", "safetensors", "model_family", "bert",
                         "model_families", "bert", "file_type", "F32");
    struct wk_model *m;
    if (wk_model_load_ex(path, false, &m, err)) return NULL;
    char ft[32] = "";
    for (size_t i = 0; quant && quant[i] && i < sizeof ft - 1; i++)
        ft[i] = (char)(quant[i] >= 'a' && quant[i] <= 'z' ? quant[i] - 'a' + 'A' : quant[i]);
    json_t *c = json_pack("{s:s, s:s, s:[s], s:s}", "model_format", "safetensors", "model_family",
                          wk_model_hparams(m)->arch_name, "model_families", wk_model_hparams(m)->arch_name,
                          "file_type", ft);
    wk_model_destroy(m);
    return c;
}

static enum wk_status write_manifest(struct build *b, const struct wk_model_name *n, const char *weights,
                                     const char *draft_path)
{
    json_t *config = gguf_config(b, WK_MT_MODEL);
    json_t *draft = !draft_path || !*draft_path ? NULL
                    : is_dir(draft_path)       ? folder_config(draft_path, b->o->quantize_draft, b->err)
                                               : gguf_config(b, WK_MT_DRAFT);
    if (draft && is_dir(draft_path)) json_object_set_new(draft, "tensor_prefix", json_string("draft/"));
    if (!config && !(config = folder_config(weights, b->o->quantize, b->err))) { /* safetensors */
        json_decref(draft);
        return b->err ? b->err->status : WK_E_FORMAT;
    }
    json_object_set_new(config, "capabilities",
                        json_pack("[s]", wk_embed_is_model(weights) ? "embedding" : "completion"));
    if (draft) json_object_set_new(config, "draft", draft);
    char *t = json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(config);
    char digest[80];
    enum wk_status st = t ? wk_store_add_bytes(b->s, t, strlen(t), digest, b->err)
                          : wk_error_set(b->err, WK_E_NOMEM, "out of memory");
    if (!st) {
        json_t *m = json_pack("{s:i, s:s, s:{s:s, s:s, s:I}, s:O}", "schemaVersion", 2, "mediaType",
                              WK_MT_MANIFEST, "config", "mediaType", WK_MT_CONFIG, "digest", digest,
                              "size", (json_int_t)strlen(t), "layers", b->layers);
        say(b, "%s", "writing manifest");
        st = wk_store_write_manifest(b->s, n, m, b->err);
        json_decref(m);
    }
    free(t);
    return st;
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[4400];
        snprintf(p, sizeof p, "%.4000s/%.255s", dir, e->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

/* Quantizes folder src to type into a fresh temporary folder of the store
 * (its path into out). */
static enum wk_status quantize_to(struct build *b, const char *src, const char *type, char *out, size_t cap,
                                  const char *what)
{
    /* a folder of this request's own (a stale one, its process gone, is wk_store_clean_stale's) */
    snprintf(out, cap, "%.3000s/.tmp-%d-quant-%s-XXXXXX", wk_store_dir(b->s), (int)getpid(), what);
    if (!mkdtemp(out)) {
        out[0] = '\0';
        return wk_error_set(b->err, WK_E_IO, "cannot create a folder in %s", wk_store_dir(b->s));
    }
    say(b, "quantizing %s", what);
    /* a draft's bytes per token are what speculation saves: all of it in the type */
    enum wk_status st = wk_quantize_folder(src, out, type, strcmp(what, "draft") == 0, b->err);
    if (st) {
        remove_tree(out);
        out[0] = '\0';
    }
    return st;
}

enum wk_status wk_store_create(struct wk_store *s, const struct wk_model_name *n,
                               const struct wk_modelfile *mf, const struct wk_create_opts *o,
                               struct wk_error *err)
{
    /* Ollama's RENDERER and PARSER name its built-in Go prompt renderers
     * and output parsers (qwen3-coder, harmony, ...): what the model is
     * shown and how its tool calls and thinking are read. wick renders
     * the model's chat template (or a TEMPLATE) and reads tool calls by
     * the template's syntax: refused, not stored and ignored */
    if ((mf->renderer && *mf->renderer) || (mf->parser && *mf->parser))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s %s: Ollama's built-in %s are not supported (wick formats "
                            "prompts with the model's chat template or a TEMPLATE, and reads tool calls and thinking "
                            "from the template's own syntax)",
                            mf->renderer && *mf->renderer ? "RENDERER" : "PARSER",
                            mf->renderer && *mf->renderer ? mf->renderer : mf->parser,
                            mf->renderer && *mf->renderer ? "prompt renderers" : "output parsers");
    /* every request renders the stored messages before its own: past this
     * many, no chat template renders within its step budget and the model
     * could never run (a create of 200,000 took, every run then failed) */
    if (mf->n_messages > WK_STORE_MAX_MESSAGES)
        return wk_error_set(err, WK_E_RANGE, "%d MESSAGE lines: at most %d (each request's prompt begins with them)",
                            mf->n_messages, WK_STORE_MAX_MESSAGES);
    if (mf->template_text && *mf->template_text) { /* a TEMPLATE that cannot run is refused now, not at run time */
        struct wk_gotmpl *t = NULL;
        struct wk_error e;
        enum wk_status st = wk_gotmpl_parse(mf->template_text, strlen(mf->template_text), &t, &e);
        wk_gotmpl_free(t);
        if (st) return wk_error_set(err, st == WK_E_NOMEM ? st : WK_E_INVALID, "TEMPLATE: %s", e.msg);
    }
    struct build b = {.s = s, .mf = mf, .o = o, .layers = json_array(), .err = err};
    char from[4200], draft[4200] = "", weights[4200] = "";
    if (o->no_paths) { /* before anything looks at the file system */
        struct wk_model_name fn;
        enum wk_status st = WK_OK;
        if (mf->draft || o->quantize || o->quantize_draft)
            st = wk_error_set(err, WK_E_PERMISSION, "%s takes a %s of the server's machine%s, and server-side paths "
                              "are off (wick serve --allow-paths, or WICK_ALLOW_PATHS=1)",
                              mf->draft ? "DRAFT" : "quantize", mf->draft ? "file or folder" : "safetensors folder",
                              mf->draft ? "" : " (a stored model, GGUF or folder, is not quantized yet)");
        else if (wk_model_name_parse(mf->from, &fn, NULL) || wk_store_read_manifest(s, &fn, &b.base, NULL))
            st = wk_error_set(err, WK_E_NOT_FOUND, "from '%.200s': no such stored model (a file or folder of the "
                              "server's machine is not taken: server-side paths are off; wick serve --allow-paths, "
                              "or WICK_ALLOW_PATHS=1)", mf->from);
        json_decref(b.base);
        b.base = NULL;
        if (st) {
            json_decref(b.layers);
            return st;
        }
    }
    if (o->no_paths) snprintf(from, sizeof from, "%s", mf->from); /* a stored name: add_weights looks up no file */
    else resolve_path(o->base_dir, mf->from, from, sizeof from);
    if (mf->draft) resolve_path(o->base_dir, mf->draft, draft, sizeof draft);
    enum wk_status st = WK_OK;
    char qfrom[4200] = "", qdraft[4200] = "";
    if (o->quantize_draft && !mf->draft)
        st = wk_error_set(err, WK_E_INVALID, "--quantize-draft requires a DRAFT model");
    else if (o->quantize && !is_dir(from))
        st = wk_error_set(err, WK_E_UNSUPPORTED, "--quantize takes a safetensors folder FROM (%s is not one)", from);
    else if (o->quantize_draft && !is_dir(draft))
        st = wk_error_set(err, WK_E_UNSUPPORTED, "--quantize-draft takes a safetensors folder DRAFT (%s is not one)", draft);
    else if (mf->draft && strcmp(from, draft) == 0)
        st = wk_error_set(err, WK_E_INVALID, "DRAFT must not reference the same local path as FROM: %s", draft);
    else if (mf->draft && !is_file(draft) && !is_dir(draft))
        st = wk_error_set(err, WK_E_NOT_FOUND, "DRAFT %s: no such file or folder", draft);
    /* quantized copies in the store's folder, imported like any folder, then removed */
    if (!st && o->quantize) st = quantize_to(&b, from, o->quantize, qfrom, sizeof qfrom, "model");
    if (!st && o->quantize_draft) st = quantize_to(&b, draft, o->quantize_draft, qdraft, sizeof qdraft, "draft");
    if (!st && o->quantize) snprintf(from, sizeof from, "%s", qfrom);
    if (!st && o->quantize_draft) snprintf(draft, sizeof draft, "%s", qdraft);
    /* a draft's vocabulary is checked before any weights are copied */
    bool local = !o->no_paths && (is_file(from) || is_dir(from));
    if (!st && mf->draft && local) st = check_vocab(from, draft, err);
    if (!st) st = add_weights(&b, from, weights, sizeof weights);
    if (!st && mf->draft && !local) st = check_vocab(weights, draft, err);
    if (!st && mf->draft) st = add_draft(&b, draft);
    if (!st) st = add_texts(&b);
    if (!st) st = write_manifest(&b, n, weights, mf->draft ? draft : NULL);
    if (qfrom[0]) remove_tree(qfrom);
    if (qdraft[0]) remove_tree(qdraft);
    if (st) wk_store_drop_created(s); /* no orphan blobs of a failed create */
    json_decref(b.layers);
    json_decref(b.base);
    return st;
}

enum wk_status wk_modelfile_add_json_param(struct wk_modelfile *mf, const char *k, json_t *v,
                                           struct wk_error *err)
{
    json_t *vals = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
    size_t i;
    json_t *e;
    enum wk_status st = WK_OK;
    json_array_foreach(vals, i, e) {
        char buf[64];
        const char *t = json_is_string(e) ? json_string_value(e) : buf;
        if (json_is_integer(e)) snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(e));
        else if (json_is_real(e)) wk_f64_text(json_real_value(e), buf);
        else if (json_is_boolean(e)) snprintf(buf, sizeof buf, "%s", json_is_true(e) ? "true" : "false");
        else if (!json_is_string(e)) st = wk_error_set(err, WK_E_INVALID, "parameter '%s' has a value of the wrong type", k);
        if (!st) st = wk_modelfile_add_param(mf, k, t, err);
        if (st) break;
    }
    json_decref(vals);
    return st;
}
