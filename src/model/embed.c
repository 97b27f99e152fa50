/*
 * embed.c - an embedding model from a sentence-transformers folder
 * (wk_embed.h): config.json's hyperparameters, the pipeline of
 * modules.json (sentence-transformers' Transformer -> Pooling ->
 * Normalize, as its SentenceTransformer runs them), tokenization with
 * truncation, and the batched encode: sequences sorted longest first,
 * packed into forwards (bert.c), pooled per sequence, normalized.
 */
#include "bert_internal.h"
#include "../io/wk_json.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Rows one forward takes (at least one whole sequence). */
#define ROWS_PER_FORWARD 4096

struct wk_embed_model {
    struct wk_bert bert;
    struct wk_tokenizer *tok;
    enum wk_pooling pooling;
    bool normalize;
};

/* dir/file parsed, or NULL (missing, not JSON, or not a regular file:
 * a FIFO would block the reader). */
static json_t *load_json(const char *dir, const char *file)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return NULL;
    return wk_json_load_file(path, 0, NULL);
}

bool wk_embed_is_folder(const char *dir)
{
    json_t *cfg = load_json(dir, "config.json");
    if (!cfg) return false;
    json_t *mt = json_object_get(cfg, "model_type"), *arch = json_array_get(json_object_get(cfg, "architectures"), 0);
    bool yes = (json_is_string(mt) && strcmp(json_string_value(mt), "bert") == 0) ||
               (json_is_string(arch) && strcmp(json_string_value(arch), "BertModel") == 0);
    json_decref(cfg);
    return yes;
}

/* The general.architecture of a GGUF file, from its first 64 KiB without
 * parsing the rest (llama.cpp's writer puts it first): into arch [cap],
 * "" when it cannot be read there. */
static void gguf_arch(const char *path, char *arch, size_t cap)
{
    arch[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    static const size_t N = 65536;
    uint8_t *b = wk_malloc(N);
    size_t n = b ? fread(b, 1, N, f) : 0;
    fclose(f);
    uint64_t n_kv, at = 24, len;
    if (n < 24 || memcmp(b, "GGUF", 4) != 0) goto out;
    memcpy(&n_kv, b + 16, 8);
    for (uint64_t i = 0; i < n_kv && i < 16; i++) {
        uint32_t type;
        if (at + 8 > n || (memcpy(&len, b + at, 8), len > n - at - 8)) break;
        const uint8_t *key = b + at + 8;
        at += 8 + len;
        if (at + 4 > n) break;
        memcpy(&type, b + at, 4);
        at += 4;
        if (type != 8) break; /* only string values are walked over */
        uint64_t vlen;
        if (at + 8 > n || (memcpy(&vlen, b + at, 8), vlen > n - at - 8)) break;
        if (len == 20 && memcmp(key, "general.architecture", 20) == 0 && vlen < cap) {
            memcpy(arch, b + at + 8, vlen);
            arch[vlen] = '\0';
            break;
        }
        at += 8 + vlen;
    }
out:
    wk_free(b);
}

bool wk_embed_is_model(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return false;
    if (S_ISDIR(sb.st_mode)) return wk_embed_is_folder(path);
    if (!S_ISREG(sb.st_mode)) return false; /* a FIFO or a device: opening it could block */
    char arch[32];
    gguf_arch(path, arch, sizeof arch);
    return strcmp(arch, "bert") == 0;
}

/* An integer field of config.json in [lo, hi]; def when absent (def < 0: required). */
static enum wk_status cfg_int(json_t *cfg, const char *dir, const char *key, int64_t def, int64_t lo,
                              int64_t hi, int32_t *out, struct wk_error *err)
{
    json_t *v = json_object_get(cfg, key);
    if (!v && def >= 0) {
        *out = (int32_t)def;
        return WK_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return wk_error_set(err, WK_E_FORMAT, "%s/config.json: %s is %s, expected an integer in %lld..%lld", dir,
                            key, v ? "out of range" : "missing", (long long)lo, (long long)hi);
    *out = (int32_t)json_integer_value(v);
    return WK_OK;
}

static enum wk_status read_config(struct wk_bert *b, const char *dir, struct wk_error *err)
{
    json_t *cfg = load_json(dir, "config.json");
    if (!cfg) return wk_error_set(err, WK_E_NOT_FOUND, "%s/config.json: missing or not JSON", dir);
    enum wk_status st = WK_OK;
    json_t *act = json_object_get(cfg, "hidden_act"), *pe = json_object_get(cfg, "position_embedding_type");
    json_t *eps = json_object_get(cfg, "layer_norm_eps");
    if ((st = cfg_int(cfg, dir, "vocab_size", -1, 1, 1 << 24, &b->n_vocab, err)) ||
        (st = cfg_int(cfg, dir, "hidden_size", -1, 1, 1 << 16, &b->n_embd, err)) ||
        (st = cfg_int(cfg, dir, "num_hidden_layers", -1, 1, 256, &b->n_layer, err)) ||
        (st = cfg_int(cfg, dir, "num_attention_heads", -1, 1, 1024, &b->n_head, err)) ||
        (st = cfg_int(cfg, dir, "intermediate_size", -1, 1, 1 << 18, &b->n_ff, err)) ||
        (st = cfg_int(cfg, dir, "max_position_embeddings", -1, 2, 1 << 16, &b->n_pos, err)) ||
        (st = cfg_int(cfg, dir, "type_vocab_size", 2, 1, 1 << 10, &b->n_type, err)))
        goto out;
    if (b->n_embd % b->n_head) {
        st = wk_error_set(err, WK_E_FORMAT, "%s/config.json: hidden_size %d is not a multiple of num_attention_heads %d",
                          dir, b->n_embd, b->n_head);
        goto out;
    }
    b->head_dim = b->n_embd / b->n_head;
    if (act && !(json_is_string(act) && strcmp(json_string_value(act), "gelu") == 0)) {
        st = wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: hidden_act \"%s\" is not supported (only gelu)", dir,
                          json_is_string(act) ? json_string_value(act) : "?");
        goto out;
    }
    if (pe && !(json_is_string(pe) && strcmp(json_string_value(pe), "absolute") == 0)) {
        st = wk_error_set(err, WK_E_UNSUPPORTED, "%s/config.json: position_embedding_type \"%s\" is not supported (only absolute)",
                          dir, json_is_string(pe) ? json_string_value(pe) : "?");
        goto out;
    }
    b->ln_eps = json_is_number(eps) ? (float)json_number_value(eps) : 1e-12f;
    if (!(b->ln_eps >= 0 && b->ln_eps < 1))
        st = wk_error_set(err, WK_E_FORMAT, "%s/config.json: layer_norm_eps out of range", dir);
out:
    json_decref(cfg);
    return st;
}

/* The Pooling module's config: exactly one of mean, CLS, last token. */
static enum wk_status read_pooling(struct wk_embed_model *m, const char *dir, const char *sub, struct wk_error *err)
{
    char file[600];
    snprintf(file, sizeof file, "%s/config.json", sub);
    json_t *p = load_json(dir, file);
    if (!p) { /* the store's flat folders name it <sub>_config.json (store/create.c) */
        snprintf(file, sizeof file, "%s_config.json", sub);
        p = load_json(dir, file);
    }
    if (!p) return wk_error_set(err, WK_E_NOT_FOUND, "%s/%s: missing or not JSON", dir, file);
    static const struct {
        const char *key;
        int mode; /* enum wk_pooling, or -1: refused */
    } modes[] = {{"pooling_mode_mean_tokens", WK_POOLING_MEAN}, {"pooling_mode_cls_token", WK_POOLING_CLS},
                 {"pooling_mode_lasttoken", WK_POOLING_LAST}, {"pooling_mode_max_tokens", -1},
                 {"pooling_mode_mean_sqrt_len_tokens", -1}, {"pooling_mode_weightedmean_tokens", -1}};
    int n_on = 0;
    enum wk_status st = WK_OK;
    for (size_t i = 0; i < WK_ARRAY_LEN(modes); i++) {
        if (!json_is_true(json_object_get(p, modes[i].key))) continue;
        n_on++;
        if (modes[i].mode < 0) {
            st = wk_error_set(err, WK_E_UNSUPPORTED, "%s/%s: %s is not supported (mean, CLS or last token)", dir, file,
                              modes[i].key);
            break;
        }
        m->pooling = (enum wk_pooling)modes[i].mode;
    }
    if (!st && n_on != 1)
        st = wk_error_set(err, WK_E_UNSUPPORTED, "%s/%s: %d pooling modes are on; wick pools with exactly one", dir,
                          file, n_on);
    json_decref(p);
    return st;
}

/* modules.json: Transformer (path ""), Pooling, Normalize; anything else refused. */
static enum wk_status read_modules(struct wk_embed_model *m, const char *dir, struct wk_error *err)
{
    m->pooling = WK_POOLING_MEAN;
    m->normalize = false;
    json_t *mods = load_json(dir, "modules.json");
    if (!mods) return WK_OK;
    enum wk_status st = WK_OK;
    size_t i;
    json_t *e;
    if (!json_is_array(mods)) st = wk_error_set(err, WK_E_FORMAT, "%s/modules.json: not an array", dir);
    json_array_foreach(mods, i, e)
    {
        if (st) break;
        json_t *type = json_object_get(e, "type"), *path = json_object_get(e, "path");
        const char *ty = json_is_string(type) ? json_string_value(type) : "";
        const char *short_ty = strrchr(ty, '.') ? strrchr(ty, '.') + 1 : ty;
        if (strcmp(short_ty, "Transformer") == 0) continue;
        if (strcmp(short_ty, "Normalize") == 0) {
            m->normalize = true;
        } else if (strcmp(short_ty, "Pooling") == 0 && json_is_string(path) &&
                   !strstr(json_string_value(path), "..") && json_string_length(path) < 256) {
            st = read_pooling(m, dir, json_string_value(path), err);
        } else {
            st = wk_error_set(err, WK_E_UNSUPPORTED, "%s/modules.json: module %zu \"%.80s\" is not supported "
                              "(Transformer, Pooling, Normalize)", dir, i, ty);
        }
    }
    json_decref(mods);
    return st;
}

/* max_seq_length: sentence_bert_config.json's, else tokenizer_config's
 * model_max_length, capped by the position embeddings. */
static void read_max_tokens(struct wk_bert *b, const char *dir)
{
    int64_t n = b->n_pos;
    json_t *sb = load_json(dir, "sentence_bert_config.json"), *tc = load_json(dir, "tokenizer_config.json");
    json_t *v = json_object_get(sb, "max_seq_length"), *t = json_object_get(tc, "model_max_length");
    if (json_is_integer(v) && json_integer_value(v) >= 2) n = WK_MIN(n, json_integer_value(v));
    else if (json_is_integer(t) && json_integer_value(t) >= 2) n = WK_MIN(n, json_integer_value(t));
    b->max_tokens = (int32_t)n;
    json_decref(sb);
    json_decref(tc);
}

/* A GGUF key read as an integer in [lo, hi]; def when absent (def < 0: required). */
static enum wk_status gguf_int(const struct wk_gguf *g, const char *key, int64_t def, int64_t lo, int64_t hi,
                               int32_t *out, struct wk_error *err)
{
    int64_t v = def;
    if ((wk_gguf_find(g, key) || def < 0) && wk_gguf_get_i64(g, key, &v, err)) return err ? err->status : WK_E_FORMAT;
    if (v < lo || v > hi)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s is %lld, expected %lld..%lld", wk_gguf_path(g), key, (long long)v,
                            (long long)lo, (long long)hi);
    *out = (int32_t)v;
    return WK_OK;
}

/* llama.cpp's "bert" GGUF: its hyperparameters, pooling and tokenizer. */
static enum wk_status load_gguf(struct wk_embed_model *m, const char *path, struct wk_error *err)
{
    struct wk_bert *b = &m->bert;
    enum wk_status st = wk_gguf_open(path, &b->gguf, err);
    if (st) return st;
    const struct wk_gguf_tensor *te = wk_gguf_find_tensor(b->gguf, "token_embd.weight");
    const struct wk_gguf_tensor *tt = wk_gguf_find_tensor(b->gguf, "token_types.weight");
    int32_t pooling = 1;
    if ((st = gguf_int(b->gguf, "bert.embedding_length", -1, 1, 1 << 16, &b->n_embd, err)) ||
        (st = gguf_int(b->gguf, "bert.block_count", -1, 1, 256, &b->n_layer, err)) ||
        (st = gguf_int(b->gguf, "bert.attention.head_count", -1, 1, 1024, &b->n_head, err)) ||
        (st = gguf_int(b->gguf, "bert.feed_forward_length", -1, 1, 1 << 18, &b->n_ff, err)) ||
        (st = gguf_int(b->gguf, "bert.context_length", -1, 2, 1 << 16, &b->n_pos, err)) ||
        (st = gguf_int(b->gguf, "bert.pooling_type", 1, 0, 4, &pooling, err)))
        return st;
    if (!te || !tt) return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s is missing", path, te ? "token_types.weight" : "token_embd.weight");
    if (b->n_embd % b->n_head)
        return wk_error_set(err, WK_E_FORMAT, "%s: bert.embedding_length %d is not a multiple of the %d heads", path,
                            b->n_embd, b->n_head);
    if (wk_embed_pooling_from_type(pooling, &m->pooling))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: bert.pooling_type %d is not supported (1 mean, 2 CLS, 3 last)",
                            path, pooling);
    b->head_dim = b->n_embd / b->n_head;
    b->n_vocab = (int32_t)WK_MIN(te->t.ne[1], 1 << 24);
    b->n_type = (int32_t)WK_MIN(tt->t.ne[1], 1 << 10);
    b->ln_eps = 1e-12f;
    if (wk_gguf_find(b->gguf, "bert.attention.layer_norm_epsilon") &&
        (st = wk_gguf_get_f32(b->gguf, "bert.attention.layer_norm_epsilon", &b->ln_eps, err)))
        return st;
    b->max_tokens = b->n_pos;
    m->normalize = true; /* as Ollama and llama-server (--embd-normalize 2) answer */
    if ((st = wk__bert_load_weights(b, err))) return st;
    return wk_tokenizer_from_gguf(b->gguf, &m->tok, err);
}

enum wk_status wk_embed_model_load(const char *dir, struct wk_embed_model **out, struct wk_error *err)
{
    *out = NULL;
    struct wk_embed_model *m = wk_calloc(1, sizeof *m);
    if (!m) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    struct wk_bert *b = &m->bert;
    enum wk_status st = WK_OK;
    struct stat sb;
    const bool file = stat(dir, &sb) == 0 && S_ISREG(sb.st_mode);
    if (strlen(dir) + 20 > sizeof b->path) st = wk_error_set(err, WK_E_INVALID, "%.200s...: path too long", dir);
    if (!st) {
        snprintf(b->path, sizeof b->path, file ? "%s" : "%s/model.safetensors", dir);
        b->kernels = wk_cpu_kernels_get();
    }
    if (!st && file) {
        st = load_gguf(m, dir, err);
        if (!st && wk_tokenizer_n_vocab(m->tok) > b->n_vocab)
            st = wk_error_set(err, WK_E_FORMAT, "%s: %d tokens, more than the embedding's %d rows", dir,
                              wk_tokenizer_n_vocab(m->tok), b->n_vocab);
        if (st) {
            wk_embed_model_destroy(m);
            return st;
        }
        *out = m;
        return WK_OK;
    }
    if (!st) st = read_config(b, dir, err);
    if (!st) st = read_modules(m, dir, err);
    if (!st) st = wk__bert_load_weights(b, err);
    if (!st) st = wk_tokenizer_from_hf(dir, &m->tok, err);
    if (!st && wk_tokenizer_n_vocab(m->tok) > b->n_vocab)
        st = wk_error_set(err, WK_E_FORMAT, "%s/tokenizer.json: %d tokens, more than vocab_size %d", dir,
                          wk_tokenizer_n_vocab(m->tok), b->n_vocab);
    if (!st) read_max_tokens(b, dir);
    if (st) {
        wk_embed_model_destroy(m);
        return st;
    }
    *out = m;
    return WK_OK;
}

void wk_embed_model_destroy(struct wk_embed_model *m)
{
    if (!m) return;
    wk__bert_deinit(&m->bert);
    wk_tokenizer_destroy(m->tok);
    wk_free(m);
}

int32_t wk_embed_model_n_embd(const struct wk_embed_model *m) { return m->bert.n_embd; }
int32_t wk_embed_model_max_tokens(const struct wk_embed_model *m) { return m->bert.max_tokens; }
enum wk_pooling wk_embed_model_pooling(const struct wk_embed_model *m) { return m->pooling; }
bool wk_embed_model_normalizes(const struct wk_embed_model *m) { return m->normalize; }
const struct wk_tokenizer *wk_embed_model_tokenizer(const struct wk_embed_model *m) { return m->tok; }

uint64_t wk_embed_model_n_params(const struct wk_embed_model *m)
{
    const struct wk_bert *b = &m->bert;
    uint64_t E = (uint64_t)b->n_embd, F = (uint64_t)b->n_ff;
    uint64_t per_layer = 4 * E * E + 4 * E + 2 * E * F + F + E + 4 * E;
    return (uint64_t)(b->n_vocab + b->n_pos + b->n_type) * E + 2 * E + (uint64_t)b->n_layer * per_layer;
}

enum wk_status wk_embed_tokenize(const struct wk_tokenizer *tok, const char *text, size_t len, int64_t max_tokens,
                                 bool truncate, struct wk_tokens *out, struct wk_error *err)
{
    out->n = 0;
    int32_t bos = wk_tokenizer_add_bos(tok) ? wk_tokenizer_bos(tok) : -1;
    int32_t eos = wk_tokenizer_eos_to_add(tok);
    if (max_tokens < 1 + (eos >= 0))
        return wk_error_set(err, WK_E_RANGE, "a limit of %lld tokens leaves no room for the input", (long long)max_tokens);
    enum wk_status st = bos >= 0 ? wk_tokens_push(out, bos) : WK_OK;
    if (!st) st = wk_tokenizer_encode(tok, text, len, true, out);
    if (st) return wk_error_set(err, st, "out of memory");
    const int64_t room = max_tokens - (eos >= 0);
    if (out->n > room) {
        if (!truncate)
            return wk_error_set(err, WK_E_RANGE, "the input is %lld tokens long, over the model's limit of %lld "
                                "(truncate it, or set truncate to true)", (long long)(out->n + (eos >= 0)),
                                (long long)max_tokens);
        out->n = room;
    }
    if (eos >= 0 && wk_tokens_push(out, eos)) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    return WK_OK;
}

enum wk_status wk_embed_model_tokenize(const struct wk_embed_model *m, const char *text, size_t len,
                                       bool truncate, struct wk_tokens *out, struct wk_error *err)
{
    return wk_embed_tokenize(m->tok, text, len, m->bert.max_tokens, truncate, out, err);
}

void wk_embed_pool(enum wk_pooling pooling, const float *h, int64_t n, int64_t E, bool normalize, float *y)
{
    if (pooling == WK_POOLING_CLS || pooling == WK_POOLING_LAST) {
        memcpy(y, h + (pooling == WK_POOLING_CLS ? 0 : (n - 1) * E), (size_t)E * sizeof *y);
    } else {
        for (int64_t e = 0; e < E; e++) {
            double s = 0;
            for (int64_t r = 0; r < n; r++) s += h[r * E + e];
            y[e] = (float)(s / (double)n);
        }
    }
    if (!normalize) return;
    double s2 = 0;
    for (int64_t e = 0; e < E; e++) s2 += (double)y[e] * y[e];
    /* torch.nn.functional.normalize: x / max(|x|, 1e-12) */
    const double inv = 1.0 / WK_MAX(sqrt(s2), 1e-12);
    for (int64_t e = 0; e < E; e++) y[e] = (float)(y[e] * inv);
}

enum wk_status wk_embed_pooling_from_type(int64_t type, enum wk_pooling *out)
{
    switch (type) {
    case 1: *out = WK_POOLING_MEAN; return WK_OK;
    case 2: *out = WK_POOLING_CLS; return WK_OK;
    case 3: *out = WK_POOLING_LAST; return WK_OK;
    default: return WK_E_UNSUPPORTED;
    }
}

static enum wk_status check_inputs(const struct wk_embed_model *m, int32_t n_seq, const int32_t *const *seqs,
                                   const int32_t *n_tokens, struct wk_error *err)
{
    for (int32_t s = 0; s < n_seq; s++) {
        if (n_tokens[s] < 1 || n_tokens[s] > m->bert.max_tokens)
            return wk_error_set(err, WK_E_INVALID, "input %d has %d tokens; 1..%d fit", s, n_tokens[s],
                                m->bert.max_tokens);
        for (int32_t i = 0; i < n_tokens[s]; i++)
            if (seqs[s][i] < 0 || seqs[s][i] >= m->bert.n_vocab)
                return wk_error_set(err, WK_E_INVALID, "input %d: token %d is %d, outside the vocabulary (0..%d)", s,
                                    i, seqs[s][i], m->bert.n_vocab - 1);
    }
    return WK_OK;
}

enum wk_status wk_embed_model_check(const struct wk_embed_model *m, int32_t n_seq, const int32_t *const *seqs,
                                    const int32_t *n_tokens, struct wk_error *err)
{
    if (n_seq < 0) return wk_error_set(err, WK_E_INVALID, "n_seq %d < 0", n_seq);
    return check_inputs(m, n_seq, seqs, n_tokens, err);
}

enum wk_status wk_embed_model_encode(struct wk_embed_model *m, struct wk_threadpool *pool, int32_t n_seq,
                                     const int32_t *const *seqs, const int32_t *n_tokens, float *out,
                                     const volatile bool *cancel, struct wk_error *err)
{
    if (n_seq < 0) return wk_error_set(err, WK_E_INVALID, "n_seq %d < 0", n_seq);
    enum wk_status st = check_inputs(m, n_seq, seqs, n_tokens, err);
    if (st || n_seq == 0) return st;
    /* longest first (stable: ties keep their order) by counting sort */
    const int32_t L = m->bert.max_tokens;
    int32_t *order = wk_malloc((size_t)n_seq * sizeof *order), *count = wk_calloc((size_t)L + 2, sizeof *count);
    int32_t *start = wk_malloc(((size_t)n_seq + 1) * sizeof *start);
    const int32_t **ids = wk_malloc((size_t)n_seq * sizeof *ids);
    if (!order || !count || !start || !ids) {
        st = wk_error_set(err, WK_E_NOMEM, "out of memory");
        goto done;
    }
    for (int32_t s = 0; s < n_seq; s++) count[L - n_tokens[s] + 1]++;
    for (int32_t i = 1; i <= L + 1; i++) count[i] += count[i - 1];
    for (int32_t s = 0; s < n_seq; s++) order[count[L - n_tokens[s]]++] = s;
    for (int32_t s0 = 0; s0 < n_seq && !st;) {
        /* a forward: as many sequences as fit ROWS_PER_FORWARD rows */
        int32_t n = 0;
        int64_t rows = 0;
        start[0] = 0;
        while (s0 + n < n_seq && (n == 0 || rows + n_tokens[order[s0 + n]] <= WK_MAX(ROWS_PER_FORWARD, L))) {
            ids[n] = seqs[order[s0 + n]];
            rows += n_tokens[order[s0 + n]];
            start[++n] = (int32_t)rows;
        }
        float *h;
        st = wk__bert_forward(&m->bert, pool, n, ids, start, &h, cancel);
        if (st == WK_E_NOMEM) st = wk_error_set(err, st, "out of memory for a forward of %lld tokens", (long long)rows);
        else if (st) st = wk_error_set(err, st, "cancelled");
        for (int32_t i = 0; i < n && !st; i++)
            wk_embed_pool(m->pooling, h + (int64_t)start[i] * m->bert.n_embd, start[i + 1] - start[i], m->bert.n_embd,
                          m->normalize, out + (int64_t)order[s0 + i] * m->bert.n_embd);
        s0 += n;
    }
done:
    wk_free(order);
    wk_free(count);
    wk_free(start);
    wk_free(ids);
    return st;
}
