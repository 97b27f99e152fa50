/*
 * test-quantize.c - wk_quantize_folder (wick create --quantize) on a
 * folder written here: 2-D weights and Gemma 4's 3-D expert tensors
 * ([n_expert][rows][n_in]) become rows of blocks of the chosen type
 * (a U8 tensor of the same leading shape, the last dimension in bytes, and
 * wick.dtype.<name> metadata) whose dequantized values are the originals
 * rounded to the block's grid (Q8_0: a scale d <= max|x| / 127 per block
 * of 32, each value within d / 2 unless it saturates at 127 d); norms,
 * MoE routers and 1-D tensors stay as they were, bit for bit; an unknown
 * type is refused by name. mxfp4: every matrix's rows are
 * wk_ref_mxfp4_from_f32's blocks byte for byte (that quantizer is the gguf
 * package's, test-tensor.c), 3-D experts included, the embedding Q8_0;
 * the tiny Gemma 4 MoE fixture quantized so loads and decodes.
 */
#include "check.h"

#include "../../src/io/wk_safetensors.h"
#include "../../src/model/wk_model.h"
#include "../../src/store/wk_store.h"
#include "../../src/tensor/wk_tensor.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define N_EXP 3
#define ROWS 8
#define N_IN 64

static float value(int64_t i) { return (float)sin(0.37 * (double)i) * (1.0f + (float)(i % 7)); }

static void test_experts_and_routers(void)
{
    char src[64] = "/tmp/wick-test-q.XXXXXX", dst[96], path[160];
    CHECK(mkdtemp(src) != NULL);
    snprintf(dst, sizeof dst, "%s/out", src);
    CHECK_EQ_INT(mkdir(dst, 0700), 0);
    static float experts[N_EXP * ROWS * N_IN], router[N_EXP * N_IN], down[ROWS * N_IN], norm[N_IN];
    for (int64_t i = 0; i < N_EXP * ROWS * N_IN; i++) experts[i] = value(i);
    for (int64_t i = 0; i < N_EXP * N_IN; i++) router[i] = value(i + 5);
    for (int64_t i = 0; i < ROWS * N_IN; i++) down[i] = value(i + 11);
    for (int64_t i = 0; i < N_IN; i++) norm[i] = 1 + value(i) / 100;
    const int64_t s3[3] = {N_EXP, ROWS, N_IN}, sr[2] = {N_EXP, N_IN}, sd[2] = {ROWS, N_IN}, sn[1] = {N_IN};
    const struct wk_st_write_tensor ts[] = {
        {"model.layers.0.experts.gate_up_proj", WK_ST_F32, 3, s3, experts},
        {"model.layers.0.router.proj.weight", WK_ST_F32, 2, sr, router},
        {"model.layers.0.mlp.down_proj.weight", WK_ST_F32, 2, sd, down},
        {"model.layers.0.input_layernorm.weight", WK_ST_F32, 1, sn, norm}};
    struct wk_error err;
    snprintf(path, sizeof path, "%s/model.safetensors", src);
    CHECK_EQ_INT(wk_safetensors_write(path, ts, 4, NULL, 0, &err), WK_OK);
    CHECK_EQ_INT(wk_quantize_folder(src, dst, "q8_0", false, &err), WK_OK);

    snprintf(path, sizeof path, "%s/model.safetensors", dst);
    struct wk_safetensors *f = NULL;
    CHECK_EQ_INT(wk_safetensors_open(path, &f, &err), WK_OK);
    if (!f) return;
    const size_t row_bytes = (size_t)N_IN / 32 * sizeof(struct wk_block_q8_0);
    const struct wk_st_tensor *e = wk_safetensors_find(f, "model.layers.0.experts.gate_up_proj");
    CHECK(e && e->dtype == WK_ST_U8 && e->n_dims == 3 && e->shape[0] == N_EXP && e->shape[1] == ROWS &&
          e->shape[2] == (int64_t)row_bytes);
    CHECK_EQ_STR(wk_safetensors_metadata(f, "wick.dtype.model.layers.0.experts.gate_up_proj"), "Q8_0");
    /* every value is its block's scale d times an integer of -127..127,
     * the nearest one (within half a step) unless it saturates, and d
     * is at most amax / 127: the error stays below amax / 16 */
    double worst = 0;
    int bad = 0;
    for (int64_t r = 0; e && r < N_EXP * ROWS; r++) {
        const struct wk_block_q8_0 *blk = (const void *)((const uint8_t *)e->data + r * row_bytes);
        float got[N_IN];
        wk_dtype_traits_get(WK_DTYPE_Q8_0)->to_f32(blk, got, N_IN);
        for (int b = 0; b < N_IN / 32; b++) {
            const double dd = wk_f16_to_f32(blk[b].d);
            double amax = 0;
            for (int i = 0; i < 32; i++) amax = fmax(amax, fabs(experts[r * N_IN + b * 32 + i]));
            bad += !(dd > 0 && dd <= amax / 127 * 1.001);
            for (int i = 0; i < 32; i++) {
                double x = experts[r * N_IN + b * 32 + i], q = got[b * 32 + i];
                double half = fabs(x) <= 127 * dd ? dd / 2 : fabs(x) - 127 * dd;
                bad += !(fabs(q - x) <= half * (1 + 1e-5) + 1e-7);
                worst = fmax(worst, fabs(q - x) / amax);
            }
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(worst > 0 && worst < 1.0 / 16); /* rounded, not left exact, and close */
    const struct wk_st_tensor *d = wk_safetensors_find(f, "model.layers.0.mlp.down_proj.weight");
    CHECK(d && d->dtype == WK_ST_U8 && d->n_dims == 2 && d->shape[1] == (int64_t)row_bytes);
    /* the router and the norm as they were, bit for bit */
    const struct wk_st_tensor *r = wk_safetensors_find(f, "model.layers.0.router.proj.weight");
    CHECK(r && r->dtype == WK_ST_F32 && r->n_dims == 2 && !memcmp(r->data, router, sizeof router));
    const struct wk_st_tensor *n = wk_safetensors_find(f, "model.layers.0.input_layernorm.weight");
    CHECK(n && n->dtype == WK_ST_F32 && !memcmp(n->data, norm, sizeof norm));
    CHECK(wk_safetensors_metadata(f, "wick.dtype.model.layers.0.router.proj.weight") == NULL);
    wk_safetensors_close(f);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", src);
    CHECK_EQ_INT(system(cmd), 0);
}

/* Writes tensors ts[0..n) to <dir>/model.safetensors (dir made fresh). */
static void write_folder(char *dir, const struct wk_st_write_tensor *ts, int n)
{
    char path[160];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    struct wk_error err;
    CHECK_EQ_INT(wk_safetensors_write(path, ts, n, NULL, 0, &err), WK_OK);
}

static void test_mxfp4_blocks(void)
{
    char src[64] = "/tmp/wick-test-q.XXXXXX", dst[96], path[160];
    static float experts[N_EXP * ROWS * N_IN], down[ROWS * N_IN], embed[ROWS * N_IN];
    uint64_t seed = 4;
    for (int64_t i = 0; i < N_EXP * ROWS * N_IN; i++) experts[i] = 3 * check_rand_f32(&seed);
    for (int64_t i = 0; i < ROWS * N_IN; i++) down[i] = value(i + 3), embed[i] = value(i + 9);
    const int64_t s3[3] = {N_EXP, ROWS, N_IN}, sd[2] = {ROWS, N_IN};
    const struct wk_st_write_tensor ts[] = {{"model.layers.0.experts.gate_up_proj", WK_ST_F32, 3, s3, experts},
                                            {"model.layers.0.mlp.down_proj.weight", WK_ST_F32, 2, sd, down},
                                            {"model.embed_tokens.weight", WK_ST_F32, 2, sd, embed}};
    write_folder(src, ts, 3);
    snprintf(dst, sizeof dst, "%s/out", src);
    CHECK_EQ_INT(mkdir(dst, 0700), 0);
    struct wk_error err;
    CHECK_EQ_INT(wk_quantize_folder(src, dst, "MXFP4", false, &err), WK_OK);
    snprintf(path, sizeof path, "%s/model.safetensors", dst);
    struct wk_safetensors *f = NULL;
    CHECK_EQ_INT(wk_safetensors_open(path, &f, &err), WK_OK);
    if (!f) return;
    const size_t rb = wk_dtype_row_bytes(WK_DTYPE_MXFP4, N_IN);
    for (int k = 0; k < 2; k++) {
        const struct wk_st_tensor *t = wk_safetensors_find(f, ts[k].name);
        char key[128];
        snprintf(key, sizeof key, "wick.dtype.%s", ts[k].name);
        CHECK_EQ_STR(wk_safetensors_metadata(f, key), "MXFP4");
        const int64_t rows = k == 0 ? N_EXP * ROWS : ROWS;
        CHECK(t && t->dtype == WK_ST_U8 && t->shape[t->n_dims - 1] == (int64_t)rb && t->n_elements == rows * rb);
        if (!t || t->n_elements != rows * rb) continue;
        uint8_t want[64];
        int bad = 0;
        for (int64_t r = 0; r < rows; r++) {
            wk_ref_mxfp4_from_f32((const float *)ts[k].data + r * N_IN, want, N_IN);
            bad += memcmp(want, (const uint8_t *)t->data + r * rb, rb) != 0;
        }
        CHECK_EQ_INT(bad, 0);
    }
    CHECK_EQ_STR(wk_safetensors_metadata(f, "wick.dtype.model.embed_tokens.weight"), "Q8_0");
    wk_safetensors_close(f);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", src);
    CHECK_EQ_INT(system(cmd), 0);
}

/* The last token's logits [n_vocab] of the prompt on the model at path. */
static float *logits_of(const char *path, const int32_t *ids, int n, int32_t *n_vocab)
{
    struct wk_model *m = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_model_load(path, &m, &err), WK_OK);
    if (!m) {
        fprintf(stderr, "  %s: %s\n", path, err.msg);
        return NULL;
    }
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = 64, cp.n_threads = 2;
    struct wk_context *ctx = NULL;
    CHECK_EQ_INT(wk_context_create(m, &cp, &ctx, &err), WK_OK);
    *n_vocab = wk_model_hparams(m)->n_vocab;
    float *out = malloc((size_t)*n_vocab * 4);
    CHECK_EQ_INT(wk_context_decode(ctx, ids, n, out, NULL, &err), WK_OK);
    wk_context_destroy(ctx);
    wk_model_destroy(m);
    return out;
}

/* Max |a - b| over n floats, or INFINITY where b has a non-finite value. */
static double max_diff(const float *a, const float *b, int32_t n)
{
    double d = 0;
    for (int32_t i = 0; i < n; i++) d = isfinite(b[i]) ? fmax(d, fabs((double)a[i] - b[i])) : INFINITY;
    return d;
}

/* The last logits of a prompt on the fixture quantized to type. */
static float *quantized_logits(const char *from, const char *type, const int32_t *ids, int n, int32_t *nv,
                               int *n_mx)
{
    char dst[64] = "/tmp/wick-test-mx.XXXXXX", path[160];
    CHECK(mkdtemp(dst) != NULL);
    struct wk_error err;
    CHECK_EQ_INT(wk_quantize_folder(from, dst, type, false, &err), WK_OK);
    snprintf(path, sizeof path, "%s/model.safetensors", dst);
    struct wk_safetensors *f = NULL;
    CHECK_EQ_INT(wk_safetensors_open(path, &f, &err), WK_OK);
    *n_mx = 0;
    for (int64_t i = 0; f && i < wk_safetensors_n_tensors(f); i++) {
        char key[300];
        snprintf(key, sizeof key, "wick.dtype.%s", wk_safetensors_tensor(f, i)->name);
        const char *dt = wk_safetensors_metadata(f, key);
        *n_mx += dt && strcmp(dt, "MXFP4") == 0;
    }
    wk_safetensors_close(f);
    float *out = logits_of(dst, ids, n, nv);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dst);
    CHECK_EQ_INT(system(cmd), 0);
    return out;
}

/* The tiny Gemma 4 MoE fixture (tests/golden/gemma4/moe) quantized to
 * mxfp4 loads and runs. Its matrices with rows of 32 or 64 (FFN down,
 * attention output) become MXFP4; the others (rows of 48 and 12, experts
 * included) are no multiple of 32 and stay F32. Random weights at 4 bits
 * move its logits a lot (q4_0: ~5 of 9.8), so the check is relative:
 * finite, and within twice q4_0's distance from the float model's. */
static void test_mxfp4_model_runs(void)
{
    const char *from = "tests/golden/gemma4/moe";
    const int32_t ids[6] = {2, 10, 20, 30, 40, 50};
    int32_t nv = 0, nv_q = 0, nv_m = 0;
    int n_mx = 0, n_mx_q4 = 0;
    float *a = logits_of(from, ids, 6, &nv);
    float *q = quantized_logits(from, "q4_0", ids, 6, &nv_q, &n_mx_q4);
    float *m = quantized_logits(from, "mxfp4", ids, 6, &nv_m, &n_mx);
    CHECK(n_mx >= 4 && n_mx_q4 == 0);
    CHECK(a && q && m && nv == nv_q && nv == nv_m);
    if (a && q && m && nv == nv_q && nv == nv_m) {
        const double dq = max_diff(a, q, nv), dm = max_diff(a, m, nv);
        printf("  %d MXFP4 tensors; max |logit - float's|: mxfp4 %.3g, q4_0 %.3g\n", n_mx, dm, dq);
        CHECK(dm > 0 && dm < 2 * dq);
    }
    free(a), free(q), free(m);
}

/* The tiny gpt-oss fixture (tests/golden/gpt-oss/hf) quantized to mxfp4
 * loads and runs: its 8 attention matrices become MXFP4; its routers stay
 * BF16, and so do its experts (stored transposed, [n_expert][n_in][rows]),
 * which were once blocked across the wrong axis and then refused by the
 * loader. */
static void test_mxfp4_gpt_oss(void)
{
    const char *from = "tests/golden/gpt-oss/hf";
    const int32_t ids[4] = {2, 10, 20, 30};
    int32_t nv = 0, nv_m = 0;
    int n_mx = 0;
    float *a = logits_of(from, ids, 4, &nv);
    float *m = quantized_logits(from, "mxfp4", ids, 4, &nv_m, &n_mx);
    CHECK_EQ_INT(n_mx, 8);
    CHECK(a && m && nv == nv_m);
    if (a && m && nv == nv_m) CHECK(isfinite(max_diff(a, m, nv)));
    free(a), free(m);
}

static void test_bad_type(void)
{
    struct wk_error err;
    CHECK_EQ_INT(wk_quantize_folder("/nonexistent", "/nonexistent2", "q3_k", false, &err), WK_E_INVALID);
    CHECK(strstr(err.msg, "q3_k") != NULL);
}

CHECK_MAIN(TEST(test_experts_and_routers), TEST(test_mxfp4_blocks), TEST(test_mxfp4_model_runs),
           TEST(test_mxfp4_gpt_oss), TEST(test_bad_type))
