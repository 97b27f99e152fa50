/*
 * model.c - the architecture registry and the loading steps every family
 * shares: open the GGUF, pick the family by general.architecture, read the
 * common hyperparameters, let the family find its tensors, check them.
 */
#include "backend.h"
#include "model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The registry: families.gen.h (written by the Makefile from the
 * WK_FAMILY lines of src/model/ (its .c files)) names each as WK_FAMILY_ENTRY(id). */
#define WK_FAMILY_ENTRY(id) extern const struct wk_family wk_family_##id;
#include "families.gen.h"
#undef WK_FAMILY_ENTRY
#define WK_FAMILY_ENTRY(id) &wk_family_##id,
static const struct wk_family *const g_families[] = {
#include "families.gen.h"
};
#undef WK_FAMILY_ENTRY

const struct wk_family *const *wk__families(size_t *n)
{
    *n = WK_ARRAY_LEN(g_families);
    return g_families;
}

/* "a, b (Label), c" of every family's GGUF architectures, for messages. */
static void list_archs(char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < WK_ARRAY_LEN(g_families); i++) {
        const struct wk_family *f = g_families[i];
        for (size_t j = 0; j < WK_ARRAY_LEN(f->gguf_archs) && f->gguf_archs[j] && len < cap; j++) {
            int w = snprintf(out + len, cap - len, "%s%s%s%s%s", len ? ", " : "", f->gguf_archs[j],
                             f->label ? " (" : "", f->label ? f->label : "", f->label ? ")" : "");
            if (w > 0) len += (size_t)w;
        }
    }
}

/* A Hugging Face model's hyperparameter key: *found false when absent
 * (an error when required). */
static enum wk_status hf_number(const struct wk_model *m, const char *key, bool required, double *d,
                                bool *found, struct wk_error *err)
{
    *found = wk__hf_number(m->hf, key, d);
    if (!*found && required)
        return wk_error_set(err, WK_E_FORMAT, "%s: config.json lacks the field for %s", wk__model_path(m), key);
    return WK_OK;
}

enum wk_status wk__hp_u32(const struct wk_model *m, const char *suffix, bool required,
                          int32_t *out, int32_t max, struct wk_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->hp.arch_name, suffix);
    uint32_t v;
    enum wk_status st;
    if (m->hf) {
        double d;
        bool found;
        if ((st = hf_number(m, key, required, &d, &found, err)) || !found) return st;
        if (!(d >= 0 && d <= 4294967295.0) || d != (double)(int64_t)d) /* range first: the cast of 1e30 is UB */
            return wk_error_set(err, WK_E_FORMAT, "%s: config.json: %s = %g is not a whole number",
                                wk__model_path(m), key, d);
        v = (uint32_t)d;
    } else {
        if (!required && !wk_gguf_find(m->gguf, key)) return WK_OK;
        st = wk_gguf_get_u32(m->gguf, key, &v, err);
        if (st == WK_E_NOT_FOUND) st = WK_E_FORMAT;
        if (st) return err ? (err->status = st) : st;
    }
    if (v < 1 || v > (uint32_t)max)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s = %u is out of range (1..%d)",
                            wk__model_path(m), key, v, max);
    *out = (int32_t)v;
    return WK_OK;
}

enum wk_status wk__hp_f32(const struct wk_model *m, const char *suffix, bool required, float *out,
                          struct wk_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->hp.arch_name, suffix);
    float v;
    enum wk_status st;
    if (m->hf) {
        double d;
        bool found;
        if ((st = hf_number(m, key, required, &d, &found, err)) || !found) return st;
        v = (float)d;
    } else {
        if (!required && !wk_gguf_find(m->gguf, key)) return WK_OK;
        st = wk_gguf_get_f32(m->gguf, key, &v, err);
        if (st == WK_E_NOT_FOUND) st = WK_E_FORMAT;
        if (st) return err ? (err->status = st) : st;
    }
    if (!(v == v) || v > 1e30f || v < -1e30f)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s = %g is not a usable number",
                            wk__model_path(m), key, v);
    *out = v;
    return WK_OK;
}

/* wk__tensor and wk__tensor3: tensor name with ne {ne[0], ne[1], ne[2], 1}. */
static enum wk_status find_tensor(const struct wk_model *m, const struct wk_tensor **out, bool optional,
                                  bool f32_only, const int64_t ne[3], const char *name, struct wk_error *err)
{
    const char *path = wk__model_path(m);
    const struct wk_tensor *t = wk__find_tensor(m, name);
    *out = NULL;
    if (!t) {
        if (optional) return WK_OK;
        return wk_error_set(err, WK_E_FORMAT, "%s: missing tensor %s", path, name);
    }
    const struct wk_dtype_traits *tr = wk_dtype_traits_get(t->dtype);
    if (!tr->supported || (!f32_only && !tr->vec_dot) || (f32_only && t->dtype != WK_DTYPE_F32))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: tensor %s has dtype %s, which wick %s",
                            path, name, tr->name,
                            f32_only ? "expects to be F32 here" : "cannot compute with yet");
    if (t->ne[0] != ne[0] || t->ne[1] != ne[1] || t->ne[2] != ne[2] || t->ne[3] != 1) {
        if (ne[2] == 1)
            return wk_error_set(err, WK_E_FORMAT,
                                "%s: tensor %s has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]",
                                path, name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                                (long long)t->ne[3], (long long)ne[0], (long long)ne[1]);
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: tensor %s has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, %lld]",
                            path, name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                            (long long)t->ne[3], (long long)ne[0], (long long)ne[1], (long long)ne[2]);
    }
    *out = t;
    return WK_OK;
}

enum wk_status wk__tensor(const struct wk_model *m, const struct wk_tensor **out, bool optional,
                          bool f32_only, int64_t ne0, int64_t ne1, struct wk_error *err,
                          const char *fmt, ...)
{
    char name[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const int64_t ne[3] = {ne0, ne1, 1};
    return find_tensor(m, out, optional, f32_only, ne, name, err);
}

enum wk_status wk__tensor3(const struct wk_model *m, const struct wk_tensor **out, bool optional,
                           int64_t ne0, int64_t ne1, int64_t ne2, struct wk_error *err, const char *fmt, ...)
{
    char name[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const int64_t ne[3] = {ne0, ne1, ne2};
    return find_tensor(m, out, optional, false, ne, name, err);
}

#define MAX_DIM (1 << 20)

enum wk_status wk__load_core_hparams(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    if ((st = wk__hp_u32(m, "embedding_length", true, &hp->n_embd, MAX_DIM, err)) ||
        (st = wk__hp_u32(m, "block_count", true, &hp->n_layer, 4096, err)) ||
        (st = wk__hp_u32(m, "attention.head_count", true, &hp->n_head, 4096, err)) ||
        (st = wk__hp_u32(m, "context_length", false, &hp->n_ctx_train, 1 << 24, err)) ||
        (st = wk__hp_f32(m, "attention.layer_norm_rms_epsilon", false, &hp->rms_eps, err)) ||
        (st = wk__hp_f32(m, "rope.freq_base", false, &hp->rope_base, err)))
        return st;
    return WK_OK;
}

enum wk_status wk__load_common_hparams(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    const char *path = wk__model_path(m);
    enum wk_status st;
    if ((st = wk__load_core_hparams(m, err)) ||
        (st = wk__hp_u32(m, "feed_forward_length", true, &hp->n_ff, MAX_DIM, err)))
        return st;
    hp->n_head_kv = hp->n_head;
    if (hp->head_dim == 0) hp->head_dim = hp->n_embd / hp->n_head;
    if ((st = wk__hp_u32(m, "attention.head_count_kv", false, &hp->n_head_kv, 4096, err)) ||
        (st = wk__hp_u32(m, "attention.key_length", false, &hp->head_dim, 4096, err)))
        return st;
    int32_t v_len = hp->head_dim;
    if ((st = wk__hp_u32(m, "attention.value_length", false, &v_len, 4096, err))) return st;
    if (v_len != hp->head_dim)
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: key_length %d differs from value_length %d",
                            path, hp->head_dim, v_len);
    if (hp->n_head % hp->n_head_kv != 0 || hp->head_dim < 2 || hp->head_dim % 2 != 0)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: head_count %d is not a multiple of head_count_kv %d, or head "
                            "dim %d is odd",
                            path, hp->n_head, hp->n_head_kv, hp->head_dim);
    hp->n_rot = hp->head_dim;
    if (!(hp->rms_eps > 0) || !(hp->rope_base > 1))
        return wk_error_set(err, WK_E_FORMAT, "%s: rms epsilon or RoPE base out of range", path);
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.factor", hp->arch_name);
    double unused;
    if (m->hf ? wk__hf_number(m->hf, key, &unused) : wk_gguf_find(m->gguf, key) != NULL) {
        float factor = 1;
        if ((st = wk__hp_f32(m, "rope.scaling.factor", true, &factor, err))) return st;
        if (factor > 0) hp->rope_freq_scale = 1.0f / factor;
    }
    /* a factor read as linear scaling: only when the type says so */
    return wk__check_rope_scaling_type(m, err);
}

enum wk_status wk__check_rope_scaling_type(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", hp->arch_name);
    if (!m->gguf || !wk_gguf_find(m->gguf, key)) return WK_OK; /* a folder's rope_scaling: hf.c */
    struct wk_gguf_str type;
    enum wk_status st = wk_gguf_get_str(m->gguf, key, &type, err);
    if (st) return st;
    if (wk_gguf_str_eq(type, "none")) {
        hp->rope_freq_scale = 1.0f; /* a factor beside type none means nothing */
    } else if (!wk_gguf_str_eq(type, "linear")) {
        char t[64];
        wk_str_printable(type.data, (size_t)type.len, t, sizeof t);
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: %s = \"%s\" is not supported (wick knows none and linear)",
                            wk__model_path(m), key, t);
    }
    return WK_OK;
}

enum wk_status wk__refuse_rope_scaling(struct wk_model *m, const char *family, struct wk_error *err)
{
    const struct wk_hparams *hp = &m->hp;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", hp->arch_name);
    if (m->gguf && wk_gguf_find(m->gguf, key)) {
        struct wk_gguf_str type;
        enum wk_status st = wk_gguf_get_str(m->gguf, key, &type, err);
        if (st) return st;
        if (!wk_gguf_str_eq(type, "none")) {
            char t[64];
            wk_str_printable(type.data, (size_t)type.len, t, sizeof t);
            return wk_error_set(err, WK_E_UNSUPPORTED, "%s: %s = \"%s\" is not supported", wk__model_path(m), key, t);
        }
    }
    float factor = 1.0f;
    enum wk_status st = wk__hp_f32(m, "rope.scaling.factor", false, &factor, err);
    if (st) return st;
    if (factor != 1.0f && factor != 0.0f)
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: %s.rope.scaling.factor %g: RoPE scaling is not supported for %s",
                            wk__model_path(m), hp->arch_name, (double)factor, family);
    return WK_OK;
}

enum wk_status wk__layer_bools(const struct wk_model *m, const char *suffix, bool *out, bool *found,
                               struct wk_error *err)
{
    const struct wk_hparams *hp = &m->hp;
    const char *path = wk__model_path(m);
    char key[128];
    snprintf(key, sizeof key, "%s.%s", hp->arch_name, suffix);
    *found = false;
    if (m->hf) {
        int n = wk__hf_bools(m->hf, key, out, hp->n_layer);
        if (n < 0) return WK_OK;
        if (n != hp->n_layer)
            return wk_error_set(err, WK_E_FORMAT, "%s: config.json: the list for %s (layer_types) has %d entries for %d layers",
                                path, key, n, hp->n_layer);
        *found = true;
        return WK_OK;
    }
    if (!wk_gguf_find(m->gguf, key)) return WK_OK;
    const struct wk_gguf_value *arr;
    enum wk_status st = wk_gguf_get_arr(m->gguf, key, WK_GGUF_BOOL, &arr, err);
    if (st) return st;
    if (arr->arr.n != (uint64_t)hp->n_layer)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s has %llu entries for %d layers", path, key,
                            (unsigned long long)arr->arr.n, hp->n_layer);
    for (int32_t i = 0; i < hp->n_layer; i++) out[i] = wk_gguf_arr_bool(arr, (uint64_t)i);
    *found = true;
    return WK_OK;
}

/* A tensor of a layer past block_count would be ignored and the model
 * silently cut short (llama.cpp refuses tensors it does not use): in a
 * GGUF, or in a folder past config.json's layer count (plus its
 * num_nextn_predict_layers MTP layers, which a GGUF conversion drops). */
static enum wk_status check_layer_tensors(const struct wk_model *m, struct wk_error *err)
{
    const int64_t n = m->hf ? wk__hf_n_tensors(m->hf) : wk_gguf_n_tensors(m->gguf);
    double nextn = 0;
    char key[160];
    snprintf(key, sizeof key, "%s.nextn_predict_layers", m->hp.arch_name);
    if (m->hf) wk__hf_number(m->hf, key, &nextn);
    for (int64_t i = 0; i < n; i++) {
        const char *name = m->hf ? wk__hf_tensor_name(m->hf, (int)i) : wk_gguf_tensor(m->gguf, i)->t.name;
        char *end;
        if (!name || strncmp(name, "blk.", 4) != 0) continue;
        long layer = strtol(name + 4, &end, 10);
        if (end == name + 4 || *end != '.' || layer < m->hp.n_layer + (long)nextn) continue;
        if (m->hf)
            return wk_error_set(err, WK_E_FORMAT, "%s: the folder has tensors of layer %ld (%s), past the %d layers "
                                "config.json gives (num_hidden_layers)", wk__model_path(m), layer, name, m->hp.n_layer);
        return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s is past the %d layers of %s.block_count",
                            wk__model_path(m), name, m->hp.n_layer, m->hp.arch_name);
    }
    return WK_OK;
}

const struct wk_tensor *wk__find_tensor(const struct wk_model *m, const char *name)
{
    const struct wk_gguf_tensor *gt = m->gguf ? wk_gguf_find_tensor(m->gguf, name) : NULL;
    return m->hf ? wk__hf_tensor(m->hf, name) : gt ? &gt->t : NULL;
}

enum wk_status wk__load_embeddings(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    const char *path = wk__model_path(m);
    enum wk_status st;
    const int64_t E = hp->n_embd;
    const struct wk_tensor *te = wk__find_tensor(m, "token_embd.weight");
    if (!te) return wk_error_set(err, WK_E_FORMAT, "%s: missing tensor token_embd.weight", path);
    if (te->ne[1] < 1 || te->ne[1] > (1 << 24))
        return wk_error_set(err, WK_E_FORMAT, "%s: token_embd.weight has %lld rows", path,
                            (long long)te->ne[1]);
    hp->n_vocab = (int32_t)te->ne[1];
    if ((st = wk__tensor(m, &m->tok_embd, false, false, E, hp->n_vocab, err, "token_embd.weight")) ||
        (st = wk__tensor(m, &m->output_norm, false, true, E, 1, err, "output_norm.weight")) ||
        (st = wk__tensor(m, &m->output, true, false, E, hp->n_vocab, err, "output.weight")))
        return st;
    if (!m->output) m->output = m->tok_embd; /* tied */
    return WK_OK;
}

void wk__tensor_rows(const struct wk_tensor *t, int64_t row0, int64_t n_rows, const char *name,
                     struct wk_tensor *out)
{
    WK_ASSERT(t->n_dims <= 2 && row0 >= 0 && n_rows >= 0 && row0 + n_rows <= t->ne[1]);
    *out = *t;
    out->name = name;
    out->ne[1] = n_rows;
    out->data = (const char *)t->data + (size_t)row0 * t->nb[1];
    out->nb[2] = out->nb[3] = t->nb[1] * (size_t)n_rows;
}

enum wk_status wk__load_common_tensors(struct wk_model *m, struct wk_error *err)
{
    struct wk_hparams *hp = &m->hp;
    enum wk_status st;
    const int64_t E = hp->n_embd, D = hp->head_dim, F = hp->n_ff;
    if ((st = wk__load_embeddings(m, err))) return st;
    m->layers = wk_calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    const int64_t HQ = (int64_t)hp->n_head * D, HK = (int64_t)hp->n_head_kv * D;
    for (int i = 0; i < hp->n_layer; i++) {
        struct wk_layer *l = &m->layers[i];
        char router[64]; /* a layer of routed experts has no dense FFN (the family loads the experts) */
        snprintf(router, sizeof router, "blk.%d.ffn_gate_inp.weight", i);
        const bool sparse = hp->n_expert > 0 && wk__find_tensor(m, router) != NULL;
        if ((!hp->no_pre_norm &&
             (st = wk__tensor(m, &l->attn_norm, false, true, E, 1, err, "blk.%d.attn_norm.weight", i))) ||
            (st = wk__tensor(m, &l->wq, false, false, E, HQ, err, "blk.%d.attn_q.weight", i)) ||
            (st = wk__tensor(m, &l->wk, false, false, E, HK, err, "blk.%d.attn_k.weight", i)) ||
            (st = wk__tensor(m, &l->wv, false, false, E, HK, err, "blk.%d.attn_v.weight", i)) ||
            (st = wk__tensor(m, &l->wo, false, false, HQ, E, err, "blk.%d.attn_output.weight", i)) ||
            (!hp->no_pre_norm &&
             (st = wk__tensor(m, &l->ffn_norm, false, true, E, 1, err, "blk.%d.ffn_norm.weight", i))) ||
            (!sparse && (st = wk__tensor(m, &l->ffn_gate, false, false, E, F, err, "blk.%d.ffn_gate.weight", i))) ||
            (!sparse && (st = wk__tensor(m, &l->ffn_up, false, false, E, F, err, "blk.%d.ffn_up.weight", i))) ||
            (!sparse && (st = wk__tensor(m, &l->ffn_down, false, false, F, E, err, "blk.%d.ffn_down.weight", i))) ||
            (st = wk__tensor(m, &l->bq, true, true, HQ, 1, err, "blk.%d.attn_q.bias", i)) ||
            (st = wk__tensor(m, &l->bk, true, true, HK, 1, err, "blk.%d.attn_k.bias", i)) ||
            (st = wk__tensor(m, &l->bv, true, true, HK, 1, err, "blk.%d.attn_v.bias", i)) ||
            (st = wk__tensor(m, &l->bo, true, true, E, 1, err, "blk.%d.attn_output.bias", i)))
            return st;
        static const char *const ffn_bias[3] = {"ffn_gate", "ffn_up", "ffn_down"};
        for (int b = 0; b < 3; b++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s.bias", i, ffn_bias[b]);
            if (wk__find_tensor(m, name))
                return wk_error_set(err, WK_E_UNSUPPORTED, "%s: tensor %s: biases on the FFN projections are not "
                                    "supported", wk__model_path(m), name);
        }
        l->rope_base = hp->rope_base;
        l->rope_scale = hp->rope_freq_scale;
        l->head_dim = hp->head_dim;
        l->n_head_kv = hp->n_head_kv;
        l->n_rot = hp->n_rot;
        l->n_ff = sparse ? 0 : hp->n_ff;
        l->kv_layer = i;
        l->out_scale = 1.0f;
    }
    return WK_OK;
}

/* GGUF metadata read later, where a wrong type or value would be
 * skipped: tokenizer.chat_template must be a string (else the model would
 * run as raw completion), <arch>.pooling_type one of llama.cpp's (0 none,
 * 1 mean, 2 CLS, 3 last, 4 rank). */
static enum wk_status check_gguf_meta(const struct wk_model *m, struct wk_error *err)
{
    if (!m->gguf) return WK_OK;
    struct wk_gguf_str t;
    enum wk_status st;
    if (wk_gguf_find(m->gguf, "tokenizer.chat_template") &&
        (st = wk_gguf_get_str(m->gguf, "tokenizer.chat_template", &t, err)))
        return st;
    char key[160];
    snprintf(key, sizeof key, "%s.pooling_type", m->hp.arch_name);
    int64_t pooling = 0;
    if (wk_gguf_find(m->gguf, key) && (st = wk_gguf_get_i64(m->gguf, key, &pooling, err))) return st;
    if (pooling < 0 || pooling > 4)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s = %lld is not a pooling type (0 none, 1 mean, 2 CLS, 3 last, "
                            "4 rank)", wk__model_path(m), key, (long long)pooling);
    return WK_OK;
}

enum wk_status wk_model_load(const char *path, struct wk_model **out, struct wk_error *err)
{
    /* weights in huge pages unless WICK_MMAP=1 asks for the file mapping */
    const char *mm = getenv("WICK_MMAP");
    return wk_model_load_ex(path, !(mm && *mm && strcmp(mm, "0") != 0), out, err);
}

enum wk_status wk_model_load_ex(const char *path, bool resident, struct wk_model **out,
                                struct wk_error *err)
{
    *out = NULL;
    struct wk_model *m = wk_calloc(1, sizeof *m);
    if (!m) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    struct stat sb;
    enum wk_status st;
    struct wk_gguf_str arch;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) { /* a Hugging Face folder */
        char cfg[4200];
        snprintf(cfg, sizeof cfg, "%.4000s/config.json", path);
        if (access(cfg, F_OK) != 0) {
            st = wk_error_set(err, WK_E_INVALID,
                              "%s is a directory, not a GGUF file (nor a Hugging Face folder: no config.json)", path);
            goto fail;
        }
        if ((st = wk__hf_open(m, path, resident, err))) goto fail;
        arch.data = wk__hf_arch(m->hf);
        arch.len = strlen(arch.data);
    } else {
        if ((st = wk_gguf_open_ex(path, resident, &m->gguf, err))) goto fail;
        if ((st = wk_gguf_get_str(m->gguf, "general.architecture", &arch, err))) {
            if (st == WK_E_NOT_FOUND) st = err ? (err->status = WK_E_FORMAT) : WK_E_FORMAT;
            goto fail;
        }
    }
    m->hp.rope_attn_factor = 1.0f;
    for (size_t i = 0; i < WK_ARRAY_LEN(g_families) && !m->family; i++)
        for (size_t j = 0; j < WK_ARRAY_LEN(g_families[i]->gguf_archs) && g_families[i]->gguf_archs[j]; j++)
            if (wk_gguf_str_eq(arch, g_families[i]->gguf_archs[j])) {
                m->family = g_families[i];
                m->hp.arch_name = g_families[i]->gguf_archs[j];
                break;
            }
    if (!m->family) {
        char a[64], known[512];
        wk_str_printable(arch.data, (size_t)arch.len, a, sizeof a);
        list_archs(known, sizeof known);
        st = wk_error_set(err, WK_E_UNSUPPORTED, "%s: unknown architecture \"%s\" (wick supports: %s)", path, a,
                          known);
        goto fail;
    }
    m->hp.residual_scale = 1.0f; /* the knobs whose neutral value is not 0 */
    m->hp.logit_scale = 1.0f;
    if ((st = m->family->load(m, err)) || (st = check_layer_tensors(m, err)) || (st = check_gguf_meta(m, err)))
        goto fail;
    if (m->hp.n_ctx_train < 16) {
        st = wk_error_set(err, WK_E_FORMAT, "%s: %s.context_length = %d is too small to use", path,
                          m->hp.arch_name, m->hp.n_ctx_train);
        goto fail;
    }
    /* the backend prepares the weights once (the CPU: its R16 layout) */
    if ((st = wk__backend_cpu_type.upload(m, resident, err))) goto fail;
    *out = m;
    return WK_OK;
fail:
    wk_model_destroy(m);
    return st;
}

void wk_model_destroy(struct wk_model *m)
{
    if (!m) return;
    wk_free(m->layers);
    wk_free(m->suppress);
    wk_free(m->owned_f32);
    wk_free(m->mla_tensors);
    wk_free(m->mla_data);
    wk_free(m->expert_tables);
    wk_free(m->view_tensors);
    wk_gguf_close(m->gguf);
    wk__hf_close(m->hf);
    wk_free(m);
}

const char *wk__model_path(const struct wk_model *m)
{
    return m->hf ? wk__hf_dir(m->hf) : wk_gguf_path(m->gguf);
}

const char *wk_model_path(const struct wk_model *m) { return wk__model_path(m); }
const char *wk_model_hf_dir(const struct wk_model *m) { return m->hf ? wk__hf_dir(m->hf) : NULL; }

const char *wk_model_chat_template(const struct wk_model *m, size_t *len)
{
    if (m->hf) {
        const char *t = wk__hf_chat_template(m->hf);
        *len = t ? strlen(t) : 0;
        return t;
    }
    struct wk_gguf_str t;
    if (!wk_gguf_find(m->gguf, "tokenizer.chat_template") ||
        wk_gguf_get_str(m->gguf, "tokenizer.chat_template", &t, NULL))
        return NULL;
    *len = (size_t)t.len;
    return t.data;
}

const struct wk_hparams *wk_model_hparams(const struct wk_model *m) { return &m->hp; }
const char *wk_model_family(const struct wk_model *m) { return m->family->name; }
enum wk_chat_format wk_model_chat_format(const struct wk_model *m) { return m->family->chat; }

int64_t wk_model_kv_values(const struct wk_model *m, int32_t il)
{
    WK_ASSERT(il >= 0 && il < m->hp.n_layer);
    const struct wk_layer *l = &m->layers[il];
    if (l->kv_layer != il) return 0;
    if (l->mla.on) return (int64_t)l->mla.kv_lora + l->n_rot;
    return 2 * (int64_t)l->n_head_kv * l->head_dim;
}
const struct wk_gguf *wk_model_gguf(const struct wk_model *m) { return m->gguf; }

uint64_t wk_model_n_params(const struct wk_model *m, enum wk_dtype *main_dtype)
{
    uint64_t n = 0, per[WK_DTYPE_COUNT] = {0};
    if (m->hf) wk__hf_count_params(m->hf, per);
    for (int64_t i = 0; !m->hf && i < wk_gguf_n_tensors(m->gguf); i++) {
        const struct wk_tensor *t = &wk_gguf_tensor(m->gguf, i)->t;
        if ((unsigned)t->dtype < WK_DTYPE_COUNT) per[wk_dtype_base(t->dtype)] += (uint64_t)wk_tensor_n_elements(t);
    }
    *main_dtype = WK_DTYPE_F32;
    for (int d = 0; d < WK_DTYPE_COUNT; d++) {
        n += per[d];
        if (per[d] > per[*main_dtype]) *main_dtype = (enum wk_dtype)d;
    }
    return n;
}

uint64_t wk_model_weight_bytes(const struct wk_model *m)
{
    if (m->hf) return wk__hf_weight_bytes(m->hf);
    uint64_t n = 0;
    for (int64_t i = 0; i < wk_gguf_n_tensors(m->gguf); i++) n += wk_gguf_tensor(m->gguf, i)->size_bytes;
    return n;
}
