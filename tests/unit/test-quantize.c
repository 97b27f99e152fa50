/*
 * test-quantize.c - wk_quantize_folder (wick create --quantize) on a
 * folder written here: 2-D weights and Gemma 4's 3-D expert tensors
 * ([n_expert][rows][n_in]) become rows of blocks of the chosen type
 * (a U8 tensor of the same leading shape, the last dimension in bytes, and
 * wick.dtype.<name> metadata) whose dequantized values are the originals
 * rounded to the block's grid (Q8_0: a scale d <= max|x| / 127 per block
 * of 32, each value within d / 2 unless it saturates at 127 d); norms,
 * MoE routers and 1-D tensors stay as they were, bit for bit; an unknown
 * type is refused by name.
 */
#include "check.h"

#include "../../src/io/wk_safetensors.h"
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

static void test_bad_type(void)
{
    struct wk_error err;
    CHECK_EQ_INT(wk_quantize_folder("/nonexistent", "/nonexistent2", "q3_k", false, &err), WK_E_INVALID);
    CHECK(strstr(err.msg, "q3_k") != NULL);
}

CHECK_MAIN(TEST(test_experts_and_routers), TEST(test_bad_type))
