/*
 * test-tensor.c - float conversions (exhaustive for binary16), the dtype
 * traits table against the GGUF specification's block sizes, and each
 * reference dequantization on hand-made blocks whose values follow from the
 * format description.
 */
#include "check.h"

#include "../../src/tensor/wk_tensor.h"

static void test_f16_round_trip_exhaustive(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = wk_f16_to_f32((wk_f16)h);
        bool nan = ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff);
        if (nan) {
            bad += !(f != f);
            continue;
        }
        bad += wk_f32_to_f16(f) != h;
    }
    CHECK_EQ_INT(bad, 0);
    /* known values */
    CHECK_EQ_INT(wk_f32_to_f16(1.0f), 0x3c00);
    CHECK_EQ_INT(wk_f32_to_f16(-2.0f), 0xc000);
    CHECK_EQ_INT(wk_f32_to_f16(65504.0f), 0x7bff);
    CHECK_EQ_INT(wk_f32_to_f16(65520.0f), 0x7c00);            /* rounds to inf */
    CHECK_EQ_INT(wk_f32_to_f16(5.9604645e-08f), 0x0001);      /* smallest subnormal */
    CHECK_EQ_INT(wk_f32_to_f16(2.9802322e-08f), 0x0000);      /* half of it: ties to even (0) */
    CHECK_EQ_INT(wk_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);  /* tie, even mantissa stays */
    CHECK_EQ_INT(wk_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);  /* tie, odd rounds up */
    CHECK_NEAR(wk_f16_to_f32(0x3555), 0.333251953125, 0, 0);
}

static void test_bf16(void)
{
    CHECK_EQ_INT(wk_f32_to_bf16(1.0f), 0x3f80);
    CHECK_NEAR(wk_bf16_to_f32(0x4049), 3.140625, 0, 0);
    CHECK_EQ_INT(wk_f32_to_bf16(1.00390625f), 0x3f80); /* tie to even */
    CHECK_EQ_INT(wk_f32_to_bf16(1.01171875f), 0x3f82); /* tie, odd rounds up */
    float nan = __builtin_nanf("");
    wk_bf16 b = wk_f32_to_bf16(nan);
    CHECK(wk_bf16_to_f32(b) != wk_bf16_to_f32(b));
}

/* Block sizes and byte sizes as the GGUF specification lists them. */
static void test_traits_table(void)
{
    static const struct {
        uint32_t t;
        const char *name;
        int64_t bs;
        size_t bytes;
    } spec[] = {
        {0, "F32", 1, 4},     {1, "F16", 1, 2},       {2, "Q4_0", 32, 18},  {3, "Q4_1", 32, 20},
        {6, "Q5_0", 32, 22},  {7, "Q5_1", 32, 24},    {8, "Q8_0", 32, 34},  {9, "Q8_1", 32, 36},
        {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176}, {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292},
        {30, "BF16", 1, 2},   {10, "Q2_K", 256, 84},  {11, "Q3_K", 256, 110},
        {20, "IQ4_NL", 32, 18}, {23, "IQ4_XS", 256, 136}, {39, "MXFP4", 32, 17},
    };
    for (size_t i = 0; i < WK_ARRAY_LEN(spec); i++) {
        const struct wk_dtype_traits *tr = wk_dtype_traits_get(spec[i].t);
        CHECK(tr != NULL);
        if (!tr) continue;
        CHECK_EQ_STR(tr->name, spec[i].name);
        CHECK_EQ_INT(tr->block_size, spec[i].bs);
        CHECK_EQ_INT(tr->block_bytes, spec[i].bytes);
    }
    CHECK(wk_dtype_traits_get(4) == NULL);   /* retired id */
    CHECK(wk_dtype_traits_get(1000) == NULL);
    CHECK_EQ_STR(wk_dtype_name(1000), "unknown");
    CHECK(!wk_dtype_traits_get(16)->supported); /* IQ2_XXS: known, not computed */
    CHECK(wk_dtype_traits_get(WK_DTYPE_Q2_K)->supported && wk_dtype_traits_get(WK_DTYPE_IQ4_XS)->vec_dot);
    CHECK_EQ_INT(wk_dtype_row_bytes(WK_DTYPE_Q4_K, 512), 288);
    CHECK_EQ_INT(wk_dtype_row_bytes(WK_DTYPE_Q4_K, 100), 0);
}

static void test_dequant_known_blocks(void)
{
    float out[256];
    /* Q4_0: d = 2, nibble 9 -> (9 - 8) * 2 = 2 for element j, 3 -> -10 for j+16 */
    struct wk_block_q4_0 q40 = {.d = wk_f32_to_f16(2.0f)};
    memset(q40.qs, 0x39, sizeof q40.qs);
    wk_ref_q4_0_to_f32(&q40, out, 32);
    CHECK_NEAR(out[0], 2, 0, 0);
    CHECK_NEAR(out[16], -10, 0, 0);
    /* Q4_1: x = q*d + m */
    struct wk_block_q4_1 q41 = {.d = wk_f32_to_f16(0.5f), .m = wk_f32_to_f16(-1.0f)};
    memset(q41.qs, 0xf0, sizeof q41.qs);
    wk_ref_q4_1_to_f32(&q41, out, 32);
    CHECK_NEAR(out[3], -1.0, 0, 0);
    CHECK_NEAR(out[19], 6.5, 0, 0);
    /* Q5_0: high bit of element 17 set: q = 16 | nibble */
    struct wk_block_q5_0 q50 = {.d = wk_f32_to_f16(1.0f), .qh = {0, 0, 0x02, 0}};
    memset(q50.qs, 0x21, sizeof q50.qs);
    wk_ref_q5_0_to_f32(&q50, out, 32);
    CHECK_NEAR(out[0], 1 - 16, 0, 0);
    CHECK_NEAR(out[16], 2 - 16, 0, 0);
    CHECK_NEAR(out[17], 18 - 16, 0, 0);
    /* Q8_0 */
    struct wk_block_q8_0 q80 = {.d = wk_f32_to_f16(0.25f)};
    for (int i = 0; i < 32; i++) q80.qs[i] = (int8_t)(i - 16);
    wk_ref_q8_0_to_f32(&q80, out, 32);
    CHECK_NEAR(out[31], 3.75, 0, 0);
    /* Q4_K: sub-block 5 (elements 160..191) has scale and min from the
     * packed high bits: scales[9] low nibble | scales[1] top bits << 4 */
    struct wk_block_q4_k q4k = {.d = wk_f32_to_f16(1.0f), .dmin = wk_f32_to_f16(0.5f)};
    memset(q4k.scales, 0, sizeof q4k.scales);
    q4k.scales[9] = 0x3 | (0x2 << 4); /* sc low = 3, m low = 2 */
    q4k.scales[1] = 1 << 6;           /* sc high bits = 1 -> sc = 3 | 16 = 19 */
    q4k.scales[5] = 2 << 6;           /* m high bits = 2 -> m = 2 | 32 = 34 */
    memset(q4k.qs, 0x75, sizeof q4k.qs); /* low nibble 5, high nibble 7 */
    wk_ref_q4_k_to_f32(&q4k, out, 256);
    /* element 160 is in group 2 (128..191), high half (>= 160): nibble 7 */
    CHECK_NEAR(out[160], 1.0 * 19 * 7 - 0.5 * 34, 0, 0);
    CHECK_NEAR(out[0], 0, 0, 0); /* scale 0, min 0 */
    /* Q6_K: element 200 = second half, quarter 2 (r = 72 -> k = 8): high
     * nibble of ql[64 + 8], bits 4-5 of qh[32 + 8] */
    struct wk_block_q6_k q6 = {.d = wk_f32_to_f16(0.5f)};
    memset(q6.ql, 0, sizeof q6.ql);
    memset(q6.qh, 0, sizeof q6.qh);
    for (int i = 0; i < 16; i++) q6.scales[i] = (int8_t)(i + 1);
    q6.ql[64 + 8] = 0xa0;     /* high nibble 10 */
    q6.qh[32 + 8] = 0x3 << 4; /* 2 high bits = 3 -> q = 10 | 48 = 58 */
    wk_ref_q6_k_to_f32(&q6, out, 256);
    CHECK_NEAR(out[200], 0.5 * 13 * (58 - 32), 0, 0); /* scale index 200/16 = 12 -> 13 */
    CHECK_NEAR(out[0], 0.5 * 1 * (0 - 32), 0, 0);
}

/* Quantize then dequantize stays within the format's step (Q4_K, Q6_K: see
 * their bounds): half a step
 * for Q8_0/Q8_K/Q4_1/Q5_1; Q4_0 and Q5_0 map the value of largest
 * magnitude to -8d (-16d), so the opposite extreme is clipped to 7d (15d)
 * and may be off by a whole step. Plus 1% for the f16 scale. */
static void test_quantize_round_trip_bounds(void)
{
    uint64_t seed = 9;
    float x[256], y[256];
    float amax = 0, mn = 0, mx = 0;
    for (int i = 0; i < 256; i++) {
        x[i] = 4 * check_rand_f32(&seed);
        amax = fmaxf(amax, fabsf(x[i])), mn = fminf(mn, x[i]), mx = fmaxf(mx, x[i]);
    }
    uint8_t buf[512];
    struct {
        const char *name;
        wk_from_f32_fn q;
        wk_to_f32_fn d;
        double bound;
    } t[] = {
        {"q8_0", wk_ref_q8_0_from_f32, wk_ref_q8_0_to_f32, amax / 127 * 0.5},
        {"q8_k", wk_ref_q8_k_from_f32, wk_ref_q8_k_to_f32, amax / 127 * 0.5},
        {"q4_0", wk_ref_q4_0_from_f32, wk_ref_q4_0_to_f32, amax / 8},
        {"q5_0", wk_ref_q5_0_from_f32, wk_ref_q5_0_to_f32, amax / 16},
        {"q4_1", wk_ref_q4_1_from_f32, wk_ref_q4_1_to_f32, (mx - mn) / 15 * 0.5},
        {"q5_1", wk_ref_q5_1_from_f32, wk_ref_q5_1_to_f32, (mx - mn) / 31 * 0.5},
        /* K-quants: half a sub-block step, plus what rounding the 6-bit
         * sub-block scales to the super-block scale can clip at the range's
         * end (at most half a super-block step, 15 or 31 times) and the
         * rounded Q4_K minimum */
        {"q4_k", wk_ref_q4_k_from_f32, wk_ref_q4_k_to_f32, (mx - mn) / 15 * (0.5 + 15.0 / 126) + fabs(mn) / 126},
        {"q6_k", wk_ref_q6_k_from_f32, wk_ref_q6_k_to_f32, amax / 31 * (0.5 + 31.0 / 254)},
        /* affine groups: half a step of the group's range */
        {"i8g64", wk_ref_i8g64_from_f32, wk_ref_i8g64_to_f32, (mx - mn) / 255 * 0.5},
        {"i4g64", wk_ref_i4g64_from_f32, wk_ref_i4g64_to_f32, (mx - mn) / 15 * 0.5},
    };
    for (size_t k = 0; k < WK_ARRAY_LEN(t); k++) {
        t[k].q(x, buf, 256);
        t[k].d(buf, y, 256);
        double worst = 0;
        for (int i = 0; i < 256; i++) worst = fmax(worst, fabs(x[i] - y[i]));
        if (!(worst <= t[k].bound * 1.01 + amax * 1e-3))
            fprintf(stderr, "  %s: worst error %g, bound %g\n", t[k].name, worst, t[k].bound);
        CHECK(worst <= t[k].bound * 1.01 + amax * 1e-3);
    }
}

/* The affine-group dots equal the dot of the dequantized row with x. */
static void test_affine_group_dots(void)
{
    uint64_t seed = 21;
    float w[256], x[256], y[256];
    for (int i = 0; i < 256; i++) w[i] = 3 * check_rand_f32(&seed) - 1, x[i] = check_rand_f32(&seed);
    uint8_t buf[512];
    const enum wk_dtype types[] = {WK_DTYPE_I8G64, WK_DTYPE_I4G64};
    for (size_t k = 0; k < WK_ARRAY_LEN(types); k++) {
        const struct wk_dtype_traits *tr = wk_dtype_traits_get(types[k]);
        tr->from_f32(w, buf, 256);
        tr->to_f32(buf, y, 256);
        double want = 0;
        for (int i = 0; i < 256; i++) want += (double)y[i] * x[i];
        CHECK_NEAR(tr->vec_dot(256, buf, x), want, 0, 1e-4);
    }
}

/* Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4: to_f32 of the random blocks in
 * tests/unit/fixtures/kquant.bin (made by make_kquant.py beside it) gives
 * the gguf package's dequantized floats bit for bit. */
static void test_lowbit_dequant_matches_gguf(void)
{
    FILE *f = fopen("tests/unit/fixtures/kquant.bin", "rb");
    CHECK(f != NULL);
    if (!f) return;
    int n_types = 0;
    uint32_t hdr[3];
    while (fread(hdr, 4, 3, f) == 3) {
        const struct wk_dtype_traits *tr = wk_dtype_traits_get(hdr[0]);
        CHECK(tr && tr->supported && tr->to_f32 && tr->block_bytes == hdr[2]);
        if (!tr || !tr->to_f32 || tr->block_bytes != hdr[2]) break;
        const int64_t n = (int64_t)hdr[1] * tr->block_size;
        uint8_t *blocks = malloc((size_t)hdr[1] * hdr[2]);
        float *want = malloc((size_t)n * 4), *got = malloc((size_t)n * 4);
        CHECK(fread(blocks, hdr[2], hdr[1], f) == hdr[1]);
        CHECK(fread(want, 4, (size_t)n, f) == (size_t)n);
        tr->to_f32(blocks, got, n);
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) bad += memcmp(&got[i], &want[i], 4) != 0;
        if (bad) fprintf(stderr, "  %s: %lld of %lld floats differ\n", tr->name, (long long)bad, (long long)n);
        CHECK_EQ_INT(bad, 0);
        printf("  %s: %lld floats\n", tr->name, (long long)n);
        n_types++;
        free(blocks), free(want), free(got);
    }
    fclose(f);
    CHECK_EQ_INT(n_types, 5);
}

/* MXFP4's quantizer gives the gguf package's blocks byte for byte on the
 * rows of tests/unit/fixtures/mxfp4_quant.bin (make_kquant.py: random
 * rows at many scales, zeros, grid values and ties, -0, maxima at and just
 * below powers of two, values near FLT_MAX). */
static void test_mxfp4_quantize_matches_gguf(void)
{
    FILE *f = fopen("tests/unit/fixtures/mxfp4_quant.bin", "rb");
    CHECK(f != NULL);
    if (!f) return;
    uint32_t nb = 0;
    CHECK(fread(&nb, 4, 1, f) == 1 && nb > 0 && nb < 100000);
    float *x = malloc((size_t)nb * 32 * 4);
    uint8_t *want = malloc((size_t)nb * 17), *got = malloc((size_t)nb * 17);
    CHECK(fread(x, 4, (size_t)nb * 32, f) == (size_t)nb * 32);
    CHECK(fread(want, 17, nb, f) == nb);
    fclose(f);
    wk_dtype_traits_get(WK_DTYPE_MXFP4)->from_f32(x, got, (int64_t)nb * 32);
    int bad = 0;
    for (uint32_t b = 0; b < nb; b++)
        if (memcmp(got + 17 * b, want + 17 * b, 17) != 0) {
            if (bad++ < 4) fprintf(stderr, "  MXFP4 block %u differs (e %u vs %u)\n", b, got[17 * b], want[17 * b]);
        }
    CHECK_EQ_INT(bad, 0);
    printf("  MXFP4: %u blocks\n", nb);
    free(x), free(want), free(got);
}

/* Their reference dots with f32 x equal the double-precision sum over the
 * dequantized row within the bound of a float sum of n rounded products,
 * n * 2^-24 * sum |w_i x_i| (plus a tiny absolute term), over random blocks
 * (random bytes, finite f16 scales) of 1 to 17 blocks. */
static void test_lowbit_dot_vs_f64(void)
{
    static const enum wk_dtype types[] = {WK_DTYPE_Q2_K, WK_DTYPE_Q3_K, WK_DTYPE_IQ4_NL, WK_DTYPE_IQ4_XS,
                                          WK_DTYPE_MXFP4};
    static const int counts[] = {1, 2, 3, 5, 8, 17};
    uint64_t seed = 77;
    double worst = 0;
    for (size_t k = 0; k < WK_ARRAY_LEN(types); k++) {
        const struct wk_dtype_traits *tr = wk_dtype_traits_get(types[k]);
        for (size_t c = 0; c < WK_ARRAY_LEN(counts); c++)
            for (int rep = 0; rep < 4; rep++) {
                const int64_t nb = counts[c], n = nb * tr->block_size;
                uint8_t *w = malloc((size_t)nb * tr->block_bytes);
                float *x = malloc((size_t)n * 4), *wf = malloc((size_t)n * 4);
                for (size_t i = 0; i < (size_t)nb * tr->block_bytes; i++) w[i] = (uint8_t)check_rand_u64(&seed);
                for (int64_t b = 0; b < nb; b++) { /* finite scales: d, and Q2_K's dmin */
                    uint8_t *blk = w + b * tr->block_bytes;
                    wk_f16 d = wk_f32_to_f16(0.05f * check_rand_f32(&seed)), m = wk_f32_to_f16(0.02f * check_rand_f32(&seed));
                    if (types[k] == WK_DTYPE_Q2_K) memcpy(blk + 80, &d, 2), memcpy(blk + 82, &m, 2);
                    else if (types[k] == WK_DTYPE_Q3_K) memcpy(blk + 108, &d, 2);
                    else if (types[k] == WK_DTYPE_MXFP4) blk[0] = (uint8_t)(118 + check_rand_u64(&seed) % 16);
                    else memcpy(blk, &d, 2);
                }
                for (int64_t i = 0; i < n; i++) x[i] = 2 * check_rand_f32(&seed);
                tr->to_f32(w, wf, n);
                double want = 0, mag = 0;
                for (int64_t i = 0; i < n; i++) want += (double)wf[i] * x[i], mag += fabs((double)wf[i] * x[i]);
                const double err = fabs((double)tr->vec_dot(n, w, x) - want);
                const double bound = (double)n * 0x1p-24 * mag + 1e-30;
                if (err > bound) fprintf(stderr, "  %s n=%lld: err %.3g > %.3g\n", tr->name, (long long)n, err, bound);
                CHECK(err <= bound);
                if (mag > 0 && err / mag > worst) worst = err / mag;
                free(w), free(x), free(wf);
            }
    }
    printf("  worst |dot - f64| / sum|w x| = %.3g\n", worst);
}

CHECK_MAIN(TEST(test_f16_round_trip_exhaustive), TEST(test_affine_group_dots), TEST(test_bf16), TEST(test_traits_table),
           TEST(test_dequant_known_blocks), TEST(test_quantize_round_trip_bounds),
           TEST(test_lowbit_dequant_matches_gguf), TEST(test_mxfp4_quantize_matches_gguf),
           TEST(test_lowbit_dot_vs_f64))
