/*
 * models.c - the models `wick serve` offers: GGUF files in the models
 * folder, named by file stem (model_find in sched.c), and what /api/tags,
 * /api/show and /api/ps say about each, read from the GGUF metadata
 * (docs/reference/ollama-mlx-runner.md §8.4).
 */
#include "server_internal.h"

#include "../io/wk_io.h"
#include "../model/wk_model.h"

#include <sys/stat.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* llama.cpp's general.file_type values (LLAMA_FTYPE_*). */
static const char *file_type_name(int64_t t)
{
    static const struct {
        int64_t t;
        const char *name;
    } names[] = {{0, "F32"},     {1, "F16"},     {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},
                 {8, "Q5_0"},    {9, "Q5_1"},    {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"},
                 {13, "Q3_K_L"}, {14, "Q4_K_S"}, {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"},
                 {18, "Q6_K"},   {21, "Q2_K_S"}, {25, "IQ4_NL"}, {30, "IQ4_XS"}, {32, "BF16"},
                 {38, "MXFP4"}};
    for (size_t i = 0; i < WK_ARRAY_LEN(names); i++)
        if (names[i].t == t) return names[i].name;
    return "unknown";
}

/* Ollama's human count: "135M", "268.10M", "1.5B". */
static void format_count(int64_t n, char *out, size_t cap)
{
    double v;
    const char *unit;
    if (n >= 1000000000) v = (double)n / 1e9, unit = "B";
    else if (n >= 1000000) v = (double)n / 1e6, unit = "M";
    else if (n >= 1000) v = (double)n / 1e3, unit = "K";
    else v = (double)n, unit = "";
    if (v == (double)(int64_t)v) snprintf(out, cap, "%lld%s", (long long)v, unit);
    else if (*unit == 'B') snprintf(out, cap, "%.1f%s", v, unit);
    else if (*unit == 'M') snprintf(out, cap, "%.2f%s", v, unit);
    else snprintf(out, cap, "%.0f%s", v, unit);
}

static json_t *gguf_str_json(const struct wk_gguf_value *v)
{
    if (!v || v->type != WK_GGUF_STRING) return NULL;
    size_t n;
    char *s = wk_utf8_sanitize(v->str.data, v->str.len, &n);
    json_t *j = s ? json_stringn(s, n) : NULL;
    wk_free(s);
    return j;
}

/* The same for a Hugging Face folder, from the loaded model. */
static json_t *folder_details(const char *path, json_t **model_info, char **template_out)
{
    if (srv_embed_folder(path)) return srv_embed_details(path, model_info, template_out); /* api_embed.c */
    struct wk_model *m;
    if (wk_model_load_ex(path, false, &m, NULL)) return NULL;
    const struct wk_hparams *hp = wk_model_hparams(m);
    char psize[32];
    enum wk_dtype main_dtype;
    format_count((int64_t)wk_model_n_params(m, &main_dtype), psize, sizeof psize);
    const char *qname = wk_dtype_traits_get(main_dtype)->name;
    json_t *details = json_pack("{s:s, s:s, s:s, s:[s], s:s, s:s}", "parent_model", "", "format",
                                "safetensors", "family", hp->arch_name, "families", hp->arch_name,
                                "parameter_size", psize, "quantization_level", qname ? qname : "unknown");
    if (model_info) {
        char k[4][96];
        snprintf(k[0], 96, "%s.context_length", hp->arch_name);
        snprintf(k[1], 96, "%s.embedding_length", hp->arch_name);
        snprintf(k[2], 96, "%s.block_count", hp->arch_name);
        snprintf(k[3], 96, "%s.vocab_size", hp->arch_name);
        *model_info = json_pack("{s:s, s:i, s:i, s:i, s:i}", "general.architecture", hp->arch_name, k[0],
                                hp->n_ctx_train, k[1], hp->n_embd, k[2], hp->n_layer, k[3], hp->n_vocab);
    }
    if (template_out) {
        size_t len;
        const char *t = wk_model_chat_template(m, &len);
        *template_out = wk_asprintf("%.*s", (int)(t ? len : 0), t ? t : "");
    }
    wk_model_destroy(m);
    return details;
}

json_t *wk_model_details(const char *path, json_t **model_info, char **template_out)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return folder_details(path, model_info, template_out);
    struct wk_gguf *g;
    if (wk_gguf_open(path, &g, NULL)) return NULL;
    char arch[64] = "unknown";
    const struct wk_gguf_value *a = wk_gguf_find(g, "general.architecture");
    if (a && a->type == WK_GGUF_STRING)
        snprintf(arch, sizeof arch, "%.*s", (int)WK_MIN(a->str.len, 63), a->str.data);
    int64_t params = 0;
    for (int64_t i = 0; i < wk_gguf_n_tensors(g); i++) {
        const struct wk_tensor *t = &wk_gguf_tensor(g, i)->t;
        int64_t n = 1;
        for (int d = 0; d < 4; d++) n *= t->ne[d] > 0 ? t->ne[d] : 1;
        params += n;
    }
    const struct wk_gguf_value *ft = wk_gguf_find(g, "general.file_type");
    char psize[32];
    format_count(params, psize, sizeof psize);
    json_t *details = json_pack("{s:s, s:s, s:s, s:[s], s:s, s:s}", "parent_model", "", "format",
                                "gguf", "family", arch, "families", arch, "parameter_size", psize,
                                "quantization_level",
                                ft ? file_type_name(ft->type == WK_GGUF_I32 || ft->type == WK_GGUF_I64
                                                        ? ft->i
                                                        : (int64_t)ft->u)
                                   : "unknown");
    if (model_info) {
        json_t *mi = json_pack("{s:s, s:I}", "general.architecture", arch, "general.parameter_count",
                               (json_int_t)params);
        static const char *keys[] = {"context_length",        "embedding_length",
                                     "block_count",           "attention.head_count",
                                     "attention.head_count_kv", "feed_forward_length"};
        for (size_t i = 0; i < WK_ARRAY_LEN(keys); i++) {
            char key[128];
            snprintf(key, sizeof key, "%s.%s", arch, keys[i]);
            const struct wk_gguf_value *v = wk_gguf_find(g, key);
            if (v && (v->type == WK_GGUF_U32 || v->type == WK_GGUF_U64))
                json_object_set_new(mi, key, json_integer((json_int_t)v->u));
            else if (v && (v->type == WK_GGUF_I32 || v->type == WK_GGUF_I64))
                json_object_set_new(mi, key, json_integer((json_int_t)v->i));
        }
        const struct wk_gguf_value *toks = wk_gguf_find(g, "tokenizer.ggml.tokens");
        if (toks && toks->type == WK_GGUF_ARRAY) {
            char key[128];
            snprintf(key, sizeof key, "%s.vocab_size", arch);
            json_object_set_new(mi, key, json_integer((json_int_t)toks->arr.n));
        }
        *model_info = mi;
    }
    if (template_out) {
        json_t *t = gguf_str_json(wk_gguf_find(g, "tokenizer.chat_template"));
        *template_out = wk_asprintf("%s", t ? json_string_value(t) : "");
        json_decref(t);
    }
    wk_gguf_close(g);
    return details;
}

/* srv_model_find's answers without sm (an embed request's, one per
 * request: reading the manifest and resolving it took ~30-100 us of a 2 ms
 * one-sentence request), kept with the manifest's bytes they came from: a
 * hit reads the manifest again (no parsing, no blob reads) and must find
 * the same bytes, and the weights (and the draft) must still exist. What a
 * name resolves to depends only on its manifest, so a deleted, replaced or
 * re-created model is resolved anew (file metadata alone would not do: a
 * manifest deleted and re-created within one timestamp tick can reuse its
 * inode and size). */
#define FIND_CACHE 8
#define FIND_MANIFEST_MAX 65536 /* larger manifests are not kept */
struct find_cached {
    bool used;
    char dir[4096], key[600]; /* models_dir and the name as parsed */
    char *manifest;           /* the manifest's bytes (wk_malloc'd) */
    size_t manifest_len;
    struct srv_model m;
};
static struct find_cached g_find[FIND_CACHE];
static int g_find_next; /* the slot the next new entry takes */
static pthread_mutex_t g_find_mu = PTHREAD_MUTEX_INITIALIZER;

static bool exists(const char *path)
{
    struct stat st;
    return !*path || stat(path, &st) == 0;
}

/* The entry for (dir, key), or NULL; g_find_mu held. */
static struct find_cached *find_entry(const char *dir, const char *key)
{
    for (int i = 0; i < FIND_CACHE; i++)
        if (g_find[i].used && !strcmp(g_find[i].key, key) && !strcmp(g_find[i].dir, dir)) return &g_find[i];
    return NULL;
}

enum wk_status srv_model_find(const char *models_dir, const char *name, struct srv_model *out,
                              struct wk_store_model *sm, struct wk_error *err)
{
    struct wk_store *s;
    struct wk_store_model local;
    struct wk_model_name n;
    enum wk_status st = wk_store_open(models_dir, &s, err);
    if (st) return st;
    char key[600], mpath[4200];
    size_t mlen = 0;
    char *mbytes = NULL; /* the manifest as it is before it is resolved */
    if (!sm && !wk_model_name_parse(name, &n, NULL) && strlen(models_dir) < sizeof g_find[0].dir) {
        wk_model_name_format(&n, key, sizeof key);
        wk_store_manifest_path(s, &n, mpath, sizeof mpath);
        mbytes = wk_read_file(mpath, FIND_MANIFEST_MAX, &mlen);
        bool hit = false;
        pthread_mutex_lock(&g_find_mu);
        struct find_cached *e = mbytes ? find_entry(models_dir, key) : NULL;
        if (e && e->manifest_len == mlen && !memcmp(e->manifest, mbytes, mlen) && exists(e->m.path) &&
            exists(e->m.draft))
            *out = e->m, hit = true;
        pthread_mutex_unlock(&g_find_mu);
        if (hit) {
            wk_free(mbytes);
            wk_store_close(s);
            return WK_OK;
        }
    }
    if (!sm) sm = &local;
    if (wk_model_name_parse(name, &n, NULL) || (st = wk_store_resolve(s, name, false, sm, err))) {
        char shown[160];
        wk_str_printable(name, strlen(name), shown, sizeof shown);
        wk_free(mbytes);
        wk_store_close(s);
        return wk_error_set(err, WK_E_NOT_FOUND, "model '%s' not found", shown);
    }
    wk_store_existing_name(s, &n); /* SMOL is smol: one runner, one name in /api/ps */
    wk_model_name_format(&n, out->name, sizeof out->name);
    snprintf(out->path, sizeof out->path, "%s", sm->weights);
    snprintf(out->draft, sizeof out->draft, "%s", sm->draft);
    if (sm == &local) wk_store_model_deinit(&local);
    wk_store_close(s);
    /* kept only when the manifest is still the bytes read before resolving */
    size_t alen = 0;
    char *after = mbytes ? wk_read_file(mpath, FIND_MANIFEST_MAX, &alen) : NULL;
    if (after && alen == mlen && !memcmp(after, mbytes, mlen)) {
        pthread_mutex_lock(&g_find_mu);
        struct find_cached *e = find_entry(models_dir, key);
        if (!e) e = &g_find[g_find_next], g_find_next = (g_find_next + 1) % FIND_CACHE;
        wk_free(e->manifest);
        e->used = true;
        snprintf(e->dir, sizeof e->dir, "%s", models_dir);
        snprintf(e->key, sizeof e->key, "%s", key);
        e->manifest = mbytes, e->manifest_len = mlen, mbytes = NULL;
        e->m = *out;
        pthread_mutex_unlock(&g_find_mu);
    }
    wk_free(after);
    wk_free(mbytes);
    return WK_OK;
}

json_t *srv_models_list(const char *models_dir)
{
    struct wk_store *s;
    if (wk_store_open(models_dir, &s, NULL)) return json_pack("{s:[]}", "models");
    json_t *l = wk_store_list(s);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(l, "models"), i, m) {
        struct wk_store_model sm;
        const char *name = json_string_value(json_object_get(m, "name"));
        json_t *details = NULL, *caps = NULL;
        if (!wk_store_resolve(s, name, false, &sm, NULL)) {
            const bool go = sm.template_text && *sm.template_text;
            char *tmpl = NULL;
            details = wk_model_details(sm.weights, NULL, go ? NULL : &tmpl);
            caps = wk_capabilities(go ? sm.template_text : tmpl, go, json_string_value(json_object_get(details, "family")),
                                   sm.weights);
            wk_free(tmpl);
            wk_store_model_deinit(&sm);
        }
        json_object_set_new(m, "details", details ? details : json_object());
        json_object_set_new(m, "capabilities", caps ? caps : json_pack("[s]", "completion"));
    }
    wk_store_close(s);
    return l;
}

json_t *srv_models_digests(const char *models_dir)
{
    struct wk_store *s;
    json_t *out = json_object();
    if (wk_store_open(models_dir, &s, NULL)) return out;
    json_t *l = wk_store_list(s);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(l, "models"), i, m)
        json_object_set(out, json_string_value(json_object_get(m, "name")), json_object_get(m, "digest"));
    json_decref(l);
    wk_store_close(s);
    return out;
}
