/*
 * api_store.c - the Ollama routes over the model store: /api/show (the
 * whole of it: parameters, system, template, license, messages,
 * capabilities, model_info from the GGUF metadata, tensors when verbose),
 * /api/create (from a stored model, or from "files" uploaded through
 * /api/blobs), /api/copy, /api/delete and HEAD/POST /api/blobs/:digest.
 * Shapes follow Ollama's server/routes.go and api/types.go (read to learn
 * them; written anew) and docs/api.md.
 */
#include "server_internal.h"

#include "../io/wk_io.h"
#include "../io/wk_options.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dup_str(json_t *v) { return json_is_string(v) ? wk_asprintf("%s", json_string_value(v)) : NULL; }

static void collect_status(void *user, const char *line)
{
    json_array_append_new(user, json_pack("{s:s}", "status", line));
}

/* "model", else the older "name": a string, or NULL. */
static const char *model_field(json_t *body)
{
    json_t *v = json_object_get(body, "model");
    if (!v || (json_is_string(v) && json_string_length(v) == 0)) v = json_object_get(body, "name");
    return json_string_value(v);
}

/* The 400 for a request whose model_field is NULL: absent, or not a string. */
static const char *model_missing(json_t *body)
{
    json_t *v = json_object_get(body, "model");
    if (!v || json_is_null(v)) v = json_object_get(body, "name");
    return v && !json_is_null(v) && !json_is_string(v) ? "model must be a string" : "model is required";
}

/* ------------------------------------------------------------ /api/show */

/* A GGUF metadata value as JSON; an array of more than 5 items only when
 * verbose (else [], as Ollama's getModelData empties the tokenizer's
 * lists unless asked). */
static json_t *gguf_json(const struct wk_gguf_value *v, bool verbose)
{
    switch (v->type) {
    case WK_GGUF_U8: case WK_GGUF_U16: case WK_GGUF_U32: case WK_GGUF_U64:
        return v->u > (uint64_t)INT64_MAX ? json_real((double)v->u) : json_integer((json_int_t)v->u);
    case WK_GGUF_I8: case WK_GGUF_I16: case WK_GGUF_I32: case WK_GGUF_I64: return json_integer((json_int_t)v->i);
    case WK_GGUF_F32: case WK_GGUF_F64: return json_real(v->f);
    case WK_GGUF_BOOL: return json_boolean(v->b);
    case WK_GGUF_STRING: {
        size_t n;
        char *s = wk_utf8_sanitize(v->str.data, v->str.len, &n);
        json_t *j = s ? json_stringn(s, n) : NULL;
        wk_free(s);
        return j ? j : json_null();
    }
    case WK_GGUF_ARRAY: {
        json_t *a = json_array();
        if (!verbose && v->arr.n > 5) return a;
        for (uint64_t i = 0; i < v->arr.n && a; i++) {
            json_t *e;
            switch (v->arr.elem_type) {
            case WK_GGUF_STRING: {
                const struct wk_gguf_value sv = {.type = WK_GGUF_STRING, .str = v->arr.strs[i]};
                e = gguf_json(&sv, true);
                break;
            }
            case WK_GGUF_ARRAY: e = gguf_json(&v->arr.items[i], true); break;
            case WK_GGUF_F32: case WK_GGUF_F64: e = json_real(wk_gguf_arr_f64(v, i)); break;
            case WK_GGUF_BOOL: e = json_boolean(wk_gguf_arr_bool(v, i)); break;
            default: e = json_integer((json_int_t)wk_gguf_arr_i64(v, i)); break;
            }
            json_array_append_new(a, e);
        }
        return a ? a : json_null();
    }
    default: return json_null();
    }
}

/* Every metadata key of the GGUF file at path (Ollama's model_info) and,
 * when tensors is not NULL, [{name, type, shape}] of its tensors. NULL
 * when the file is not GGUF (a Hugging Face folder: the caller keeps
 * wk_model_details' summary). */
static json_t *gguf_model_info(const char *path, bool verbose, json_t **tensors)
{
    struct wk_gguf *g;
    if (wk_gguf_open(path, &g, NULL)) return NULL;
    json_t *mi = json_object();
    for (int64_t i = 0; i < wk_gguf_n_kv(g); i++)
        json_object_set_new(mi, wk_gguf_kv_key(g, i), gguf_json(wk_gguf_kv_value(g, i), verbose));
    if (tensors) *tensors = json_array();
    int64_t params = 0; /* Ollama's general.parameter_count: the tensors' elements */
    for (int64_t i = 0; i < wk_gguf_n_tensors(g); i++) {
        const struct wk_tensor *t = &wk_gguf_tensor(g, i)->t;
        params += wk_tensor_n_elements(t);
        if (!tensors) continue;
        const char *type = wk_dtype_traits_get(t->dtype)->name;
        json_t *shape = json_array();
        for (int d = 0; d < t->n_dims; d++) json_array_append_new(shape, json_integer(t->ne[d]));
        json_array_append_new(*tensors, json_pack("{s:s, s:s, s:o}", "name", t->name, "type", type ? type : "?",
                                                  "shape", shape));
    }
    json_object_set_new(mi, "general.parameter_count", json_integer((json_int_t)params));
    wk_gguf_close(g);
    return mi;
}

/* The licenses of manifest m joined by newlines (Ollama's license field). */
static char *licenses_text(const struct wk_store *s, json_t *m)
{
    struct wk_buf b = {0};
    wk_buf_add(&b, "", 0);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(m, "layers"), i, e) {
        const char *mt = json_string_value(json_object_get(e, "mediaType"));
        if (!mt || strcmp(mt, WK_MT_LICENSE) != 0) continue;
        char *t = wk_store_blob_text(s, json_string_value(json_object_get(e, "digest")));
        if (!t) continue;
        if (b.len) wk_buf_add(&b, "\n", 1);
        wk_buf_add(&b, t, strlen(t));
        wk_free(t);
    }
    return b.p;
}

/* When the model was last created or copied: its /api/tags modified_at. */
static json_t *modified_at(const struct wk_store *s, const char *canonical)
{
    json_t *l = wk_store_list(s), *out = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(l, "models"), i, e)
        if (!out && strcmp(json_string_value(json_object_get(e, "name")), canonical) == 0)
            out = json_incref(json_object_get(e, "modified_at"));
    json_decref(l);
    return out ? out : json_string("");
}

enum MHD_Result srv_serve_show(struct srv_server *srv, struct MHD_Connection *c, json_t *body)
{
    const char *name = model_field(body);
    json_t *verbose = json_object_get(body, "verbose");
    if (!name) return srv_reply_error(c, 400, model_missing(body));
    if (verbose && !json_is_boolean(verbose) && !json_is_null(verbose))
        return srv_reply_error(c, 400, "verbose must be true or false");
    struct srv_model m;
    struct wk_error err;
    struct wk_store_model sm = {0};
    struct wk_store *s;
    if (srv_model_find(srv->models_dir, name, &m, &sm, &err)) return srv_reply_error(c, 404, err.msg);
    if (wk_store_open(srv->models_dir, &s, &err)) {
        wk_store_model_deinit(&sm);
        return srv_reply_error(c, 500, err.msg);
    }
    json_t *info = NULL, *tensors = NULL;
    char *tmpl = NULL;
    json_t *details = wk_model_details(m.path, &info, &tmpl);
    json_t *full = details ? gguf_model_info(m.path, json_is_true(verbose), json_is_true(verbose) ? &tensors : NULL) : NULL;
    char *modelfile = details ? wk_store_modelfile(s, sm.manifest, m.name, &err) : NULL;
    if (!details || !modelfile) {
        json_decref(details), json_decref(info), json_decref(full), json_decref(tensors);
        wk_free(tmpl), wk_free(modelfile);
        wk_store_model_deinit(&sm);
        wk_store_close(s);
        return srv_reply_error(c, 500, details ? err.msg : "cannot read the model file");
    }
    const bool go = sm.template_text && *sm.template_text; /* the Modelfile's TEMPLATE renders */
    const char *t = go ? sm.template_text : tmpl;
    char *params = wk_store_params_text(sm.params), *lic = licenses_text(s, sm.manifest);
    json_t *obj = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "license", lic ? lic : "", "modelfile", modelfile,
                            "parameters", params ? params : "", "template", t ? t : "", "details", details,
                            "model_info", full ? full : info,
                            "capabilities", wk_capabilities(t, go, json_string_value(json_object_get(details, "family")),
                                                            m.path),
                            "modified_at", modified_at(s, m.name));
    if (full) json_decref(info);
    if (sm.system && *sm.system) json_object_set_new(obj, "system", json_string(sm.system));
    if (json_array_size(sm.messages)) json_object_set(obj, "messages", sm.messages);
    if (tensors) json_object_set_new(obj, "tensors", tensors);
    wk_free(params), wk_free(lic), wk_free(modelfile), wk_free(tmpl);
    wk_store_model_deinit(&sm);
    wk_store_close(s);
    return srv_reply_json(c, 200, obj);
}

/* Marks the runners of model n (a name just overwritten or removed) to
 * stop once idle, as /api/delete, /api/copy and /api/create need: the
 * next request loads what the name holds now. */
static void unload_name(struct srv_server *srv, const struct wk_model_name *n)
{
    char canonical[WK_MODEL_NAME_MAX];
    wk_model_name_format(n, canonical, sizeof canonical);
    srv_sched_unload(srv->sched, canonical);
}

/* ------------------------------------------------------------ /api/create */

/* Parameter k's JSON value, typed as a request's options must be (the
 * options table, wk_options.h: stop a string or a list of strings, a
 * boolean option a boolean, the others a number; as Ollama's
 * api.Options.FromMap refuses other types at load), so a stored model's
 * parameters are ones a request could have given. 0, or a 400's message. */
static int param_type_ok(const char *k, json_t *v, char *msg, size_t cap)
{
    const struct wk_option *o = wk_option_find(k);
    if (!o) return 0; /* wk_modelfile_add_param names it */
    size_t i;
    json_t *e;
    if (o->type == WK_MF_STRING) {
        if (json_is_string(v)) return 0;
        bool ok = json_is_array(v);
        json_array_foreach(v, i, e) ok = ok && json_is_string(e);
        if (!ok) return snprintf(msg, cap, "parameter '%s' must be a string or a list of strings", k), -1;
        return 0;
    }
    if (o->type == WK_MF_BOOL && !json_is_boolean(v))
        return snprintf(msg, cap, "parameter '%s' must be a boolean", k), -1;
    if (o->type != WK_MF_BOOL && !json_is_number(v))
        return snprintf(msg, cap, "parameter '%s' must be a number", k), -1;
    return 0;
}

/* Ollama's create request ({model, parameters, template, system, messages,
 * license, quantize, stream}) as a Modelfile FROM from_s into
 * wk_store_create; store_files: from_s is a blob of this store (or a
 * folder of links to blobs) that /api/create's "files" named. */
static enum MHD_Result create_from(struct srv_server *srv, struct MHD_Connection *c, json_t *body, const char *from_s,
                                   bool store_files)
{
    struct wk_error err;
    wk_error_clear(&err);
    struct wk_model_name n;
    json_t *model = json_object_get(body, "model");
    if (!model) model = json_object_get(body, "name");
    json_t *params = json_object_get(body, "parameters");
    json_t *msgs = json_object_get(body, "messages"), *lic = json_object_get(body, "license");
    json_t *stream = json_object_get(body, "stream");
    if (model && !json_is_null(model) && !json_is_string(model)) return srv_reply_error(c, 400, "model must be a string");
    if (!json_is_string(model)) return srv_reply_error(c, 400, "model is required");
    if (wk_model_name_parse(json_string_value(model), &n, &err)) return srv_reply_error(c, 400, err.msg);
    if ((params && !json_is_object(params)) || (msgs && !json_is_array(msgs)) ||
        (lic && !json_is_string(lic) && !json_is_array(lic)))
        return srv_reply_error(c, 400, "parameters must be an object, messages a list, license a string or a list");
    static const char *const texts[] = {"template", "system", "renderer", "parser"};
    for (size_t t = 0; t < WK_ARRAY_LEN(texts); t++) {
        json_t *v = json_object_get(body, texts[t]);
        if (v && !json_is_null(v) && !json_is_string(v)) {
            char m[64];
            snprintf(m, sizeof m, "%s must be a string", texts[t]);
            return srv_reply_error(c, 400, m);
        }
    }
    if (stream && !json_is_null(stream) && !json_is_boolean(stream))
        return srv_reply_error(c, 400, "stream must be a boolean");
    const char *k;
    json_t *v;
    json_object_foreach(params, k, v) {
        char m[160];
        if (param_type_ok(k, v, m, sizeof m)) return srv_reply_error(c, 400, m);
    }
    struct wk_modelfile mf = {0};
    enum wk_status st = WK_OK;
    mf.from = wk_asprintf("%s", from_s);
    mf.template_text = dup_str(json_object_get(body, "template"));
    mf.system = dup_str(json_object_get(body, "system"));
    mf.renderer = dup_str(json_object_get(body, "renderer")); /* refused by wk_store_create, not dropped */
    mf.parser = dup_str(json_object_get(body, "parser"));
    json_object_foreach(params, k, v) if (!st) st = wk_modelfile_add_json_param(&mf, k, v, &err);
    size_t nm = json_array_size(msgs), nl = json_is_array(lic) ? json_array_size(lic) : lic ? 1 : 0, i;
    mf.messages = nm ? wk_calloc(nm, sizeof *mf.messages) : NULL;
    mf.licenses = nl ? wk_calloc(nl, sizeof *mf.licenses) : NULL;
    for (i = 0; i < nm && !st; i++, mf.n_messages++) {
        json_t *m = json_array_get(msgs, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role || !json_is_string(json_object_get(m, "content")) ||
            (strcmp(role, "system") && strcmp(role, "user") && strcmp(role, "assistant")))
            st = wk_error_set(&err, WK_E_INVALID, "messages[%zu]: a role of system, user or assistant and a content string", i);
        mf.messages[i].role = dup_str(json_object_get(m, "role"));
        mf.messages[i].content = dup_str(json_object_get(m, "content"));
    }
    for (i = 0; i < nl && !st; i++, mf.n_licenses++)
        if (!(mf.licenses[i] = dup_str(json_is_array(lic) ? json_array_get(lic, i) : lic)))
            st = wk_error_set(&err, WK_E_INVALID, "license must be a string or a list of strings");
    json_t *lines = json_array();
    if (!st) {
        struct wk_store *s;
        const char *q = json_string_value(json_object_get(body, "quantize"));
        /* relative paths are not this process's business: they resolve nowhere */
        /* files: FROM is this store's own blob (or a folder of links to
         * blobs), not a path of the client's choosing */
        struct wk_create_opts o = {.base_dir = "/nonexistent", .quantize = q, .status = collect_status, .user = lines,
                                   .no_paths = !srv->allow_paths && !store_files};
        if (!(st = wk_store_open(srv->models_dir, &s, &err))) {
            st = wk_store_create(s, &n, &mf, &o, &err);
            wk_store_close(s);
        }
    }
    wk_modelfile_deinit(&mf);
    if (st) {
        json_decref(lines);
        return srv_reply_error(c, (unsigned)srv_http_status(st), err.msg);
    }
    unload_name(srv, &n); /* a runner of what the name held before goes once idle */
    json_array_append_new(lines, json_pack("{s:s}", "status", "success"));
    if (json_is_false(stream)) {
        json_decref(lines);
        return srv_reply_json(c, 200, json_pack("{s:s}", "status", "success"));
    }
    struct wk_buf b = {0};
    json_t *l;
    json_array_foreach(lines, i, l) srv_buf_json(&b, json_incref(l), "\n");
    json_decref(lines);
    enum MHD_Result ret = srv_reply_raw(c, 200, "application/x-ndjson", b.p ? b.p : "", b.len);
    wk_free(b.p);
    return ret;
}


/* A file name of "files": one path part, no '/', not "." or "..". */
static bool file_name_ok(const char *n)
{
    return *n && !strchr(n, '/') && strcmp(n, ".") && strcmp(n, "..") && strlen(n) < 256;
}

/* Checks "files" ({name: digest}, each blob stored) into from[cap]: the
 * one GGUF blob's path, or a new folder of links named as the files (a
 * Hugging Face folder; *folder set, for the caller to remove). Returns 0 or
 * an HTTP status with msg. */
static int files_source(struct srv_server *srv, json_t *files, char *from, size_t cap, bool *folder, char *msg,
                        size_t mcap)
{
    *folder = false;
    if (!json_is_object(files) || json_object_size(files) == 0)
        return snprintf(msg, mcap, "files must be an object of file names to blob digests"), 400;
    const char *k;
    json_t *v;
    int n_gguf = 0;
    char gguf[4200] = "";
    struct wk_store *s;
    struct wk_error err;
    if (wk_store_open(srv->models_dir, &s, &err)) return snprintf(msg, mcap, "%s", err.msg), 500;
    json_object_foreach(files, k, v) {
        char path[4200];
        struct stat sb;
        if (!file_name_ok(k) || !wk_digest_ok(json_string_value(v))) {
            wk_store_close(s);
            return snprintf(msg, mcap, "files: '%.100s' must be a file name mapped to a \"sha256:<64 hex>\" digest", k), 400;
        }
        wk_store_blob_path(s, json_string_value(v), path, sizeof path);
        if (stat(path, &sb) != 0) {
            wk_store_close(s);
            return snprintf(msg, mcap, "files: blob %s (%.100s) not found; upload it with POST /api/blobs/%s first",
                            json_string_value(v), k, json_string_value(v)), 400;
        }
        size_t kl = strlen(k);
        if (kl > 5 && strcmp(k + kl - 5, ".gguf") == 0) n_gguf++, snprintf(gguf, sizeof gguf, "%s", path);
    }
    if (n_gguf > 1 || (n_gguf == 1 && json_object_size(files) > 1)) {
        wk_store_close(s);
        return snprintf(msg, mcap, "files: one GGUF file alone, or a Hugging Face folder's files (split GGUF files and "
                                   "projectors are not supported yet)"), 400;
    }
    if (n_gguf == 1) {
        wk_store_close(s);
        snprintf(from, cap, "%s", gguf);
        return 0;
    }
    snprintf(from, cap, "%.3000s/blobs/.tmp-%d-filesXXXXXX", wk_store_dir(s), (int)getpid());
    if (!mkdtemp(from)) {
        wk_store_close(s);
        return snprintf(msg, mcap, "cannot make a folder in the store: %s", strerror(errno)), 500;
    }
    *folder = true;
    json_object_foreach(files, k, v) {
        char target[4200], link[4400];
        wk_store_blob_path(s, json_string_value(v), target, sizeof target);
        snprintf(link, sizeof link, "%s/%s", from, k);
        if (symlink(target, link) != 0) {
            wk_store_close(s);
            return snprintf(msg, mcap, "cannot link %.300s: %s", link, strerror(errno)), 500;
        }
    }
    wk_store_close(s);
    return 0;
}

/* Removes the folder of links files_source made. */
static void remove_links(const char *dir, json_t *files)
{
    const char *k;
    json_t *v;
    json_object_foreach(files, k, v) {
        char link[4400];
        snprintf(link, sizeof link, "%s/%s", dir, k);
        unlink(link);
    }
    rmdir(dir);
}

enum MHD_Result srv_serve_create(struct srv_server *srv, struct MHD_Connection *c, json_t *body)
{
    json_t *from = json_object_get(body, "from"), *files = json_object_get(body, "files");
    json_t *adapters = json_object_get(body, "adapters");
    if (adapters && !json_is_null(adapters) && !(json_is_object(adapters) && json_object_size(adapters) == 0))
        return srv_reply_error(c, 400, "adapters (LoRA) are not supported yet");
    if (from && !json_is_null(from) && files && !json_is_null(files))
        return srv_reply_error(c, 400, "give either 'from' or 'files', not both");
    if (json_is_string(from)) return create_from(srv, c, body, json_string_value(from), false);
    if (from && !json_is_null(from)) return srv_reply_error(c, 400, "from must be a string: a stored model's name");
    if (!files || json_is_null(files)) return srv_reply_error(c, 400, "neither 'from' or 'files' was specified");
    if (!srv->allow_paths && json_is_string(json_object_get(body, "quantize")))
        return srv_reply_error(c, 403, "quantize reads and writes whole models on the server: start wick serve with "
                                       "--allow-paths (WICK_ALLOW_PATHS=1) to allow it");
    char src[4200], msg[600];
    bool folder;
    int status = files_source(srv, files, src, sizeof src, &folder, msg, sizeof msg);
    if (status) {
        if (folder) remove_links(src, files);
        return srv_reply_error(c, (unsigned)status, msg);
    }
    enum MHD_Result r = create_from(srv, c, body, src, true);
    if (folder) remove_links(src, files);
    return r;
}

/* ------------------------------------------------------------ copy, delete */

enum MHD_Result srv_serve_copy(struct srv_server *srv, struct MHD_Connection *c, json_t *body)
{
    const char *src = json_string_value(json_object_get(body, "source"));
    const char *dst = json_string_value(json_object_get(body, "destination"));
    if (!src || !dst) return srv_reply_error(c, 400, "source and destination are required (model names)");
    struct wk_model_name a, b;
    struct wk_error err;
    if (wk_model_name_parse(src, &a, &err) || wk_model_name_parse(dst, &b, &err)) return srv_reply_error(c, 400, err.msg);
    struct wk_store *s;
    enum wk_status st = wk_store_open(srv->models_dir, &s, &err);
    if (!st) {
        st = wk_store_copy(s, &a, &b, &err);
        wk_store_close(s);
    }
    if (st) return srv_reply_error(c, (unsigned)srv_http_status(st), err.msg);
    unload_name(srv, &b); /* a runner of what the name held before goes once idle */
    return srv_reply_raw(c, 200, "application/json; charset=utf-8", "", 0);
}

enum MHD_Result srv_serve_delete(struct srv_server *srv, struct MHD_Connection *c, json_t *body)
{
    const char *name = model_field(body);
    if (!name) return srv_reply_error(c, 400, model_missing(body));
    struct wk_model_name n;
    struct wk_error err;
    if (wk_model_name_parse(name, &n, &err)) return srv_reply_error(c, 400, err.msg);
    struct wk_store *s;
    enum wk_status st = wk_store_open(srv->models_dir, &s, &err);
    if (!st) {
        st = wk_store_remove(s, &n, &err);
        wk_store_close(s);
    }
    if (st) return srv_reply_error(c, (unsigned)srv_http_status(st), err.msg);
    unload_name(srv, &n); /* its runner goes once idle */
    return srv_reply_raw(c, 200, "application/json; charset=utf-8", "", 0);
}

/* ------------------------------------------------------------ /api/blobs */

/* A blob route's digest as Ollama's manifest.BlobsPath takes it (sha256:
 * or sha256- and 64 hex digits, either case) into d as the store names it
 * (sha256: and lower case); false when it is not one. */
static bool blob_digest(const char *in, char d[72])
{
    if (!in || strlen(in) != 71 || strncmp(in, "sha256", 6) != 0 || (in[6] != ':' && in[6] != '-')) return false;
    memcpy(d, "sha256:", 7);
    for (int i = 7; i < 71; i++) d[i] = (char)tolower((unsigned char)in[i]);
    d[71] = '\0';
    return wk_digest_ok(d);
}

#define BLOB_DIGEST_ERR "the digest must be \"sha256:\" (or \"sha256-\") and 64 hex digits"

enum MHD_Result srv_serve_blob_head(struct srv_server *srv, struct MHD_Connection *c, const char *given)
{
    char digest[72];
    if (!blob_digest(given, digest)) return srv_reply_error(c, 400, BLOB_DIGEST_ERR);
    struct wk_store *s;
    struct wk_error err;
    if (wk_store_open(srv->models_dir, &s, &err)) return srv_reply_error(c, 500, err.msg);
    char path[4200];
    struct stat sb;
    wk_store_blob_path(s, digest, path, sizeof path);
    wk_store_close(s);
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return srv_reply_error(c, 404, "blob not found");
    return srv_reply_raw(c, 200, "application/json; charset=utf-8", "", 0);
}

struct srv_upload {
    struct wk_store *s;
    struct wk_blob_writer *w; /* NULL when the blob is stored already, or after an error */
    char digest[80];
    int status;               /* an error's HTTP status, 0 while all is well */
    bool exists;
    struct wk_error err;
};

struct srv_upload *srv_upload_begin(struct srv_server *srv, const char *given)
{
    struct srv_upload *u = wk_calloc(1, sizeof *u);
    if (!u) return NULL;
    char digest[72];
    if (!blob_digest(given, digest)) {
        u->status = 400;
        wk_error_set(&u->err, WK_E_INVALID, BLOB_DIGEST_ERR);
        return u;
    }
    snprintf(u->digest, sizeof u->digest, "%s", digest);
    if (wk_store_open(srv->models_dir, &u->s, &u->err)) {
        u->status = 500;
        return u;
    }
    char path[4200];
    struct stat sb;
    wk_store_blob_path(u->s, digest, path, sizeof path);
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) u->exists = true; /* as Ollama: 200, the body unread */
    else if (wk_store_blob_begin(u->s, &u->w, &u->err)) u->status = 500;
    return u;
}

bool srv_upload_known(const struct srv_upload *u) { return u->status || u->exists; }

void srv_upload_data(struct srv_upload *u, const char *data, size_t n)
{
    if (!u->w || u->status) return;
    if (wk_store_blob_write(u->w, data, n, &u->err)) {
        u->status = 500;
        wk_store_blob_abort(u->w);
        u->w = NULL;
    }
}

void srv_upload_free(struct srv_upload *u)
{
    if (!u) return;
    wk_store_blob_abort(u->w);
    wk_store_close(u->s);
    wk_free(u);
}

enum MHD_Result srv_upload_finish(struct MHD_Connection *c, struct srv_upload *u)
{
    enum MHD_Result r;
    char got[80];
    if (u->status) {
        r = srv_reply_error(c, (unsigned)u->status, u->err.msg);
    } else if (u->exists) {
        r = srv_reply_raw(c, 200, "application/json; charset=utf-8", "", 0);
    } else {
        enum wk_status st = wk_store_blob_commit(u->w, u->digest, got, &u->err);
        u->w = NULL;
        r = st ? srv_reply_error(c, (unsigned)srv_http_status(st), u->err.msg)
               : srv_reply_raw(c, 201, "application/json; charset=utf-8", "", 0);
    }
    srv_upload_free(u);
    return r;
}

/* ------------------------------------------------------------ /api/ps */

json_t *srv_ps_list(struct srv_server *srv)
{
    json_t *ps = srv_sched_list(srv->sched), *tags = srv_models_digests(srv->models_dir);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(ps, "models"), i, m) {
        json_t *d = json_object_get(tags, json_string_value(json_object_get(m, "name")));
        if (d) json_object_set(m, "digest", d);
    }
    json_decref(tags);
    return ps;
}
