/*
 * quantize.c - `wick create --quantize TYPE` for a Hugging Face folder: its
 * weights to a GGUF block type, written as a safetensors file the loader
 * (src/model/hf.c) reads in place.
 *
 * Container: a quantized weight of rows x n_in elements is a U8 tensor of
 * shape [rows, row bytes] holding the GGUF blocks of each row, with
 * "wick.dtype.<tensor name>" = the block type ("Q4_K", ...) in the file's
 * __metadata__; every other tensor is copied as it is.
 *
 * Policy (the sensitive tensors, as llama.cpp's quantize treats them):
 * - 1-D tensors (norm gains) stay in their float type;
 * - the token embedding (also the output projection when tied) and
 *   lm_head: Q8_0 when a smaller type is asked for, and kept in their
 *   float type under q8_0 (whose point is answering as the float model
 *   does: with a Q8_0 output, greedy answers drift from BF16's on 3 of
 *   the 10 golden prompts within 32 tokens);
 * - q4_K_M: Q4_K, with attention V and FFN down in Q6_K (llama.cpp's _M
 *   mix gives Q6_K to some of those; wick to all of them);
 * - int8 / int4: MLX-style affine groups of 64 (I8G64 / I4G64 blocks:
 *   an f16 scale and bias per group); int8 keeps the embedding like q8_0,
 *   int4 gives the embedding, attention V and FFN down 8 bits (the
 *   promotions Ollama's MLX import makes for sensitive tensors);
 * - mxfp4: every matrix (experts, attention V and FFN down included) in
 *   MXFP4, the embedding and lm_head in Q8_0; the blocks are
 *   wk_ref_mxfp4_from_f32's, byte for byte those of the gguf package's
 *   quantizer and ggml's quantize_row_mxfp4_ref (shared exponent
 *   floor(log2(amax)) - 2, nearest E2M1 code); gpt-oss ships its experts
 *   so, but as blocks of their transposed layout, which wick does not read:
 *   a gpt-oss folder's experts keep their float type (choose);
 * - a speculative draft (uniform): every weight in the type asked for, the
 *   embedding too. A draft's precision costs only acceptance (never the
 *   output, which the target decides), while its cost per token is what
 *   speculation saves: Gemma 3's tied 262144 x 640 embedding is 63% of its
 *   weights, and at 8 bits 76% of a q4_0 draft's bytes;
 * - a row length that is not a multiple of the type's block (256 for the
 *   K types, 32 for the others) falls back to Q8_0, or stays as it is when
 *   not even that fits.
 * The K-quant blocks are made by wk_ref_q4_k_from_f32/q6_k (round to
 * nearest, min-max scales); Q8_0 weight blocks by q8_0_search (the
 * least-squares scale among 17 candidates: mean KL 0.00145 -> 0.00143 on
 * SmolLM2, 0.00105 -> 0.00099 on Gemma 3, BENCHMARKS.md); I4G64 blocks by
 * i4g64_search (the least-squares scale and bias among 25 clipped ranges:
 * a Gemma 3 int4 draft's greedy acceptance 27% -> 70% on one prompt where
 * MLX's min-max lost it, 85-92% -> 89-98% on two others). Rows are
 * quantized on a thread per core.
 */
#include "wk_store.h"
#include "../io/wk_json.h"

#include "../io/wk_safetensors.h"
#include "../tensor/wk_tensor.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct plan {
    enum wk_dtype main, sensitive, attn_v_down;
};

static bool plan_for(const char *type, struct plan *p)
{
    static const struct {
        const char *name;
        struct plan p;
    } t[] = {{"q8_0", {WK_DTYPE_Q8_0, WK_DTYPE_COUNT, WK_DTYPE_Q8_0}},
             {"q4_0", {WK_DTYPE_Q4_0, WK_DTYPE_Q8_0, WK_DTYPE_Q4_0}},
             {"q6_k", {WK_DTYPE_Q6_K, WK_DTYPE_Q8_0, WK_DTYPE_Q6_K}},
             {"q4_k_m", {WK_DTYPE_Q4_K, WK_DTYPE_Q8_0, WK_DTYPE_Q6_K}},
             {"int8", {WK_DTYPE_I8G64, WK_DTYPE_COUNT, WK_DTYPE_I8G64}},
             {"int4", {WK_DTYPE_I4G64, WK_DTYPE_I8G64, WK_DTYPE_I8G64}},
             {"mxfp4", {WK_DTYPE_MXFP4, WK_DTYPE_Q8_0, WK_DTYPE_MXFP4}}};
    for (size_t i = 0; i < WK_ARRAY_LEN(t); i++)
        if (strcasecmp(type, t[i].name) == 0) {
            *p = t[i].p;
            return true;
        }
    return false;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The block type for tensor t under plan p (WK_DTYPE_COUNT: keep it).
 * Matrices named *.weight, and Gemma 4's 3-D expert tensors
 * (experts.gate_up_proj / experts.down_proj, [n_expert][rows][n_in]);
 * not norms, and not MoE routers (Gemma 4 router.proj, GLM mlp.gate,
 * gpt-oss mlp.router, Granite MoE router.layer / router),
 * whose choices a rounding error would change (llama.cpp keeps them F32
 * too). gpt-oss names its experts the same but stores them transposed,
 * [n_expert][n_in][rows], where a row's blocks would cut across the
 * input: kept as they are (hf.c takes them in a float type only). */
static enum wk_dtype choose(const struct plan *p, const struct wk_st_tensor *t, bool gpt_oss)
{
    bool experts = !gpt_oss && t->n_dims == 3 && (ends_with(t->name, "experts.gate_up_proj") || ends_with(t->name, "experts.down_proj"));
    if ((t->n_dims != 2 && !experts) || (!experts && !ends_with(t->name, ".weight")) ||
        ends_with(t->name, "norm.weight") || ends_with(t->name, "router.proj.weight") ||
        ends_with(t->name, "mlp.gate.weight") || ends_with(t->name, "router.weight") ||
        ends_with(t->name, "router.layer.weight"))
        return WK_DTYPE_COUNT;
    bool sensitive = strstr(t->name, "embed_tokens") || strstr(t->name, "lm_head");
    bool vd = strstr(t->name, "v_proj") || strstr(t->name, "down_proj");
    enum wk_dtype d = sensitive ? p->sensitive : vd ? p->attn_v_down : p->main;
    if (d == WK_DTYPE_COUNT) return d;
    int64_t n_in = t->shape[t->n_dims - 1];
    if (n_in % wk_dtype_traits_get(d)->block_size != 0) d = WK_DTYPE_Q8_0;
    return n_in % 32 == 0 ? d : WK_DTYPE_COUNT;
}

static float elem(const struct wk_st_tensor *t, int64_t i)
{
    const uint8_t *b = t->data;
    uint16_t h;
    if (t->dtype == WK_ST_F32) {
        float f;
        memcpy(&f, b + 4 * i, 4);
        return f;
    }
    memcpy(&h, b + 2 * i, 2);
    return t->dtype == WK_ST_BF16 ? wk_bf16_to_f32(h) : wk_f16_to_f32(h);
}

/* fminf(hi, fmaxf(lo, rintf(v))) for integers lo < hi (|lo|, |hi| < 2^21)
 * without library calls (the baseline build has no SSE4.1 roundss, so
 * those three were calls, ~70% of a search quantizer's time): v is first
 * clamped to [lo - 1, hi + 1] (rounding cannot bring a value from outside
 * back in), then rounded to nearest even in the default rounding mode by
 * adding and subtracting 1.5 * 2^23 (exact for |v| < 2^22). A NaN v gives
 * lo, as fmaxf(lo, NaN) does; -0.5 < v < 0 gives +0 where rintf gives -0,
 * which no caller tells apart (a code, or a product added to a bias). */
static inline float round_clamp(float v, float lo, float hi)
{
    v = v > lo - 1 ? v : lo - 1;
    v = v < hi + 1 ? v : hi + 1;
    float r = (v + 12582912.0f) - 12582912.0f;
    r = r > lo ? r : lo;
    return r < hi ? r : hi;
}

/* Q8_0 with the block scale that minimises the squared error among
 * amax/127 and 16 slightly smaller ones (an outlier then saturates at
 * +-127 while the rest round finer). */
static void q8_0_search(const float *x, void *dst, int64_t n)
{
    struct wk_block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / 32; i++) {
        const float *v = x + 32 * i;
        float amax = 0;
        for (int l = 0; l < 32; l++) amax = fmaxf(amax, fabsf(v[l]));
        float best_d = amax / 127, best_err = INFINITY;
        for (int k = 0; k <= 16 && amax > 0; k++) {
            float d = wk_f16_to_f32(wk_f32_to_f16(amax / (127.0f + 0.5f * (float)k))), err = 0;
            for (int l = 0; l < 32; l++) {
                float q = round_clamp(v[l] / d, -127, 127);
                err += (v[l] - q * d) * (v[l] - q * d);
            }
            if (err < best_err) best_err = err, best_d = d;
        }
        b[i].d = wk_f32_to_f16(best_d);
        float d = wk_f16_to_f32(b[i].d);
        for (int l = 0; l < 32; l++) b[i].qs[l] = (int8_t)(d > 0 ? round_clamp(v[l] / d, -127, 127) : 0);
    }
}

/* The squared error of group x [64] under scale s and bias z (f16
 * values), with the codes rounded against them; codes into q when q. */
static float i4g64_err(const float *x, float s, float z, uint8_t *q)
{
    float err = 0, is = s > 0 ? 1 / s : 0;
    for (int l = 0; l < WK_QG64; l++) {
        float c = round_clamp((x[l] - z) * is, 0, 15);
        if (q) q[l] = (uint8_t)c;
        err += (x[l] - (s * c + z)) * (x[l] - (s * c + z));
    }
    return err;
}

/*
 * I4G64 with the scale and bias that minimise the squared error among
 * MLX's (the group's min and max: wk_ref_i4g64_from_f32) and 24 ranges cut
 * at either end by 0, 3, 6, 9 or 12% (an outlier then clips while the rest round
 * finer), each range's codes refitted by least squares (x ~ s q + z), all
 * in f16 as stored. Never worse than min-max on any group.
 */
static void i4g64_search(const float *x, void *dst, int64_t n)
{
    static const float cut[5] = {0, 0.03f, 0.06f, 0.09f, 0.12f};
    struct wk_block_i4g64 *b = dst;
    for (int64_t i = 0; i < n / WK_QG64; i++) {
        const float *v = x + WK_QG64 * i;
        float lo = v[0], hi = v[0];
        for (int l = 1; l < WK_QG64; l++) lo = fminf(lo, v[l]), hi = fmaxf(hi, v[l]);
        const float range = hi - lo;
        wk_f16 bs = wk_f32_to_f16(range / 15), bz = wk_f32_to_f16(lo);
        float best = i4g64_err(v, wk_f16_to_f32(bs), wk_f16_to_f32(bz), NULL);
        uint8_t q[WK_QG64];
        for (int a = 0; a < 5 && range > 0; a++)
            for (int c = 0; c < 5; c++) {
                if (a == 0 && c == 0) continue;
                float z0 = lo + cut[a] * range, s0 = (range * (1 - cut[a] - cut[c])) / 15;
                i4g64_err(v, s0, z0, q);
                /* least squares for x ~ s q + z over the group */
                double sq = 0, sx = 0, sqq = 0, sqx = 0;
                for (int l = 0; l < WK_QG64; l++) sq += q[l], sx += v[l], sqq += (double)q[l] * q[l], sqx += (double)q[l] * v[l];
                double det = WK_QG64 * sqq - sq * sq;
                if (det <= 0) continue;
                double s1 = (WK_QG64 * sqx - sq * sx) / det, z1 = (sx - s1 * sq) / WK_QG64;
                if (!(s1 > 0)) continue;
                wk_f16 hs = wk_f32_to_f16((float)s1), hz = wk_f32_to_f16((float)z1);
                float e = i4g64_err(v, wk_f16_to_f32(hs), wk_f16_to_f32(hz), NULL);
                if (e < best) best = e, bs = hs, bz = hz;
            }
        b[i].scale = bs, b[i].bias = bz;
        i4g64_err(v, wk_f16_to_f32(bs), wk_f16_to_f32(bz), q);
        memset(b[i].q, 0, sizeof b[i].q);
        for (int l = 0; l < WK_QG64; l++) b[i].q[l / 2] |= (uint8_t)(q[l] << (l & 1 ? 4 : 0));
    }
}

/* A tensor's rows quantized on a thread pool: each thread its own range of
 * rows and its own f32 row buffer (the search quantizers cost ~100 ns an
 * element; a 270M model would take minutes on one core). */
struct quant_job {
    const struct wk_st_tensor *t;
    int64_t n_rows, n_in; /* rows of n_in: a 3-D expert tensor's experts' rows one after another */
    wk_from_f32_fn q;
    uint8_t *out;
    size_t row_bytes;
    float *rows; /* [threads][n_in] */
};

static void quant_task(void *arg, int ith, int nth)
{
    struct quant_job *j = arg;
    const int64_t n_in = j->n_in;
    int64_t lo, hi;
    wk_split_range(j->n_rows, ith, nth, &lo, &hi);
    float *row = j->rows + (size_t)ith * (size_t)n_in;
    for (int64_t r = lo; r < hi; r++) {
        for (int64_t i = 0; i < n_in; i++) row[i] = elem(j->t, r * n_in + i);
        j->q(row, j->out + (size_t)r * j->row_bytes, n_in);
    }
}

/* Rows of t as blocks of d: wk_malloc'd, rows * row bytes. */
static uint8_t *quantize_rows(struct wk_threadpool *pool, int n_threads, const struct wk_st_tensor *t,
                              enum wk_dtype d, size_t *row_bytes)
{
    const int64_t n_in = t->shape[t->n_dims - 1], rows = t->n_elements / (uint64_t)n_in;
    *row_bytes = wk_dtype_row_bytes(d, n_in);
    struct quant_job j = {.t = t, .n_rows = rows, .n_in = n_in, .row_bytes = *row_bytes,
                          .q = d == WK_DTYPE_Q8_0    ? q8_0_search
                               : d == WK_DTYPE_I4G64 ? i4g64_search
                                                     : wk_dtype_traits_get(d)->from_f32};
    j.out = wk_malloc((size_t)rows * *row_bytes);
    j.rows = wk_malloc((size_t)n_threads * (size_t)n_in * sizeof(float));
    if (!j.out || !j.rows) {
        wk_free(j.out);
        wk_free(j.rows);
        return NULL;
    }
    wk_threadpool_run(pool, quant_task, &j);
    wk_free(j.rows);
    return j.out;
}

static bool copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    bool ok = a && b;
    while (ok && (n = fread(buf, 1, sizeof buf, a)) > 0) ok = fwrite(buf, 1, n, b) == n;
    if (a) fclose(a);
    if (b) ok = fclose(b) == 0 && ok;
    return ok;
}

/* Whether the folder's config.json has model_type gpt_oss. */
static bool is_gpt_oss(const char *src)
{
    char path[4400];
    snprintf(path, sizeof path, "%.4000s/config.json", src);
    json_t *cfg = wk_json_load_file(path, 0, NULL);
    const char *t = json_string_value(json_object_get(cfg, "model_type"));
    bool yes = t && strcmp(t, "gpt_oss") == 0;
    json_decref(cfg);
    return yes;
}

enum wk_status wk_quantize_folder(const char *src, const char *dst, const char *type, bool uniform,
                                  struct wk_error *err)
{
    struct plan p;
    if (!plan_for(type, &p))
        return wk_error_set(err, WK_E_INVALID,
                            "unknown quantization type '%s' (wick knows q8_0, q4_0, q6_K, q4_K_M, int8, int4, mxfp4)", type);
    if (uniform) p.sensitive = p.attn_v_down = p.main;
    DIR *d = opendir(src);
    if (!d) return wk_error_set(err, WK_E_NOT_FOUND, "%s: cannot open the folder", src);
    const bool gpt_oss = is_gpt_oss(src);
    const int n_threads = wk_cpu_features_get()->n_cores;
    struct wk_threadpool *pool;
    enum wk_status st = wk_threadpool_create(n_threads, &pool);
    if (st) {
        closedir(d);
        return wk_error_set(err, st, "cannot start %d threads", n_threads);
    }
    struct dirent *e;
    while (!st && (e = readdir(d))) {
        const char *n = e->d_name;
        if (n[0] == '.' || strcmp(n, "model.safetensors.index.json") == 0) continue;
        char from[4400], to[4400];
        snprintf(from, sizeof from, "%.4000s/%.255s", src, n);
        snprintf(to, sizeof to, "%.4000s/%.255s", dst, n);
        if (!ends_with(n, ".safetensors")) {
            if ((ends_with(n, ".json") || strcmp(n, "chat_template.jinja") == 0) && !copy_file(from, to))
                st = wk_error_set(err, WK_E_IO, "cannot copy %s", from);
            continue;
        }
        struct wk_safetensors *f;
        if ((st = wk_safetensors_open(from, &f, err))) break;
        int64_t nt = wk_safetensors_n_tensors(f);
        struct wk_st_write_tensor *w = wk_calloc((size_t)(nt ? nt : 1), sizeof *w);
        int64_t(*shapes)[8] = wk_calloc((size_t)(nt ? nt : 1), sizeof *shapes);
        uint8_t **bufs = wk_calloc((size_t)(nt ? nt : 1), sizeof *bufs);
        char **meta = wk_calloc((size_t)(2 * nt + 1), sizeof *meta);
        int32_t n_meta = 0;
        if (!w || !shapes || !bufs || !meta) st = wk_error_set(err, WK_E_NOMEM, "out of memory");
        for (int64_t i = 0; !st && i < nt; i++) {
            const struct wk_st_tensor *t = wk_safetensors_tensor(f, i);
            enum wk_dtype q = t->dtype == WK_ST_U8 || t->dtype == WK_ST_I8 || t->dtype == WK_ST_U32
                                  ? WK_DTYPE_COUNT
                                  : choose(&p, t, gpt_oss);
            w[i] = (struct wk_st_write_tensor){t->name, t->dtype, t->n_dims, t->shape, t->data};
            if (q == WK_DTYPE_COUNT) continue;
            size_t rb;
            if (!(bufs[i] = quantize_rows(pool, n_threads, t, q, &rb))) {
                st = wk_error_set(err, WK_E_NOMEM, "out of memory");
                break;
            }
            /* the rows' shape, the last dimension now bytes of blocks */
            for (int32_t k = 0; k + 1 < t->n_dims; k++) shapes[i][k] = t->shape[k];
            shapes[i][t->n_dims - 1] = (int64_t)rb;
            w[i] = (struct wk_st_write_tensor){t->name, WK_ST_U8, t->n_dims, shapes[i], bufs[i]};
            meta[n_meta++] = wk_asprintf("wick.dtype.%s", t->name);
            meta[n_meta++] = wk_asprintf("%s", wk_dtype_traits_get(q)->name);
        }
        if (!st) st = wk_safetensors_write(to, w, nt, (const char *const *)meta, n_meta / 2, err);
        for (int64_t i = 0; bufs && i < nt; i++) wk_free(bufs[i]);
        for (int32_t i = 0; i < n_meta; i++) wk_free(meta[i]);
        wk_free(bufs);
        wk_free(meta);
        wk_free(shapes);
        wk_free(w);
        wk_safetensors_close(f);
    }
    closedir(d);
    wk_threadpool_destroy(pool);
    return st;
}
