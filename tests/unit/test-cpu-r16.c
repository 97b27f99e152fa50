/*
 * test-cpu-r16.c - the R16 layout (16 rows interleaved for the VNNI decode
 * kernels: pack, unpack, get_row, the x16 dot against the dequantized
 * product) and the threaded matmul's decode split, many-matrix and GLU
 * forms against single matmuls, at each dispatch level (`make unit` runs it
 * again with WICK_CPU=avx2). Split from test-cpu.c.
 */
#include "check.h"
#include "cpu_blocks.h"

#include "../../src/base/wk_base.h"
#include "../../src/cpu/wk_cpu.h"
#include "../../src/cpu/wk_cpu_arch.h"

/* Exact-over-the-integers check of one x16 dot (test_vec_dot_rows_x16's
 * bounds): got against the dot of the row-major row wrow (dtype t, n
 * elements) with x~ (d, hi, lo of wk__x16_quantize_ref) within 1e-5 of
 * the sum of |products|, and against the f32 dot with x within x~'s
 * rounding bound. */
static bool x16_dot_ok(enum wk_dtype t, const uint8_t *wrow, int64_t n, const float *x, const float *d,
                       const int8_t *hi, const int8_t *lo, float got)
{
    float *wf = wk_aligned_alloc((size_t)n * 4);
    wk_dtype_traits_get(t)->to_f32(wrow, wf, n);
    double want = 0, exact = 0, mag = 0, bound = 0;
    for (int64_t i = 0; i < n; i++) {
        const double xt = (double)d[i / 32] * (hi[i] + lo[i] / 256.0);
        want += (double)wf[i] * xt, exact += (double)wf[i] * x[i], mag += fabs((double)wf[i] * xt);
        bound += fabs((double)wf[i]) * d[i / 32] * 127.0 / 32512.0;
    }
    wk_aligned_free(wf);
    return fabs(got - want) <= 1e-5 * mag + 1e-6 && fabs(got - exact) <= bound + 1e-5 * mag + 1e-6;
}

/*
 * The R16 layout (repack.c) of Q4_1, Q5_0 and Q8_0 (rows of 96, 2112 and
 * 16640 elements), Q6_K and Q4_K (256, 2304 and 16640); the long rows are two or more column chunks
 * of the AVX-512 kernels:
 * - packing, then unpacking every row (whole, and in pieces), gives back
 *   the row-major bytes; wk_cpu_get_row of the R16 tensor gives the
 *   row-major row's floats;
 * - where the table has R16 kernels for the type (AVX-512 VNNI: all five;
 *   AVX2: the same), the
 *   R16 vec_dot_rows_x16 is within test_vec_dot_rows_x16's bounds of the
 *   exact dot with x~ for every row, and its tokens entry gives its bits
 *   for each of 17 tokens, as does vec_dot_rows_r16 with x prepared once
 *   (r16_prepare) for two ranges of rows, and vec_dot_rows_r16_tokens
 *   with the tokens' x prepared (batched decode, verification): all 17
 *   (AVX-512: tiles of 6, 6, 5; with AMX a tile of 16 and one token
 *   through VNNI), 2, and 3, 8 and 11 on rows 16.. with wider output rows
 *   (nothing else written; with AMX, 8 is the tile of interleaved hi and
 *   lo rows and 11 a tile of 11); the AMX tiles run only where the CPU
 *   grants AMX (tiles of 1 to 8 rows: build r16_amx.c with
 *   -DAMX_TOK_MIN=1);
 * - the matmul of the R16 tensor: decode on 1, 2 and 3 threads gives the
 *   kernel's bits (shares of whole groups); prefill gives the row-major
 *   tensor's prefill bits (the same dequantized rows into the same GEMM),
 *   or, where the type has a gemm_r16 kernel, results within the same
 *   bounds of the exact dot with each token's x~ (on AVX2: the decode
 *   bits, as the tokens entry gives for 2 tokens too), equal on 1, 2 and 3
 *   threads and equal from a call on a subset of the tokens and rows (17
 *   tokens: whole micro-tiles and a tail, with AMX a tile of 16 and one; 80 rows: a tile of four groups
 *   and one of one); WK_MATMUL_PER_TOKEN gives the decode bits of each
 *   token.
 */
static void test_r16_layout(void)
{
    const struct wk_cpu_kernels *k = wk_cpu_kernels_get();
    const enum wk_dtype types[5] = {WK_DTYPE_Q4_1, WK_DTYPE_Q5_0, WK_DTYPE_Q8_0, WK_DTYPE_Q6_K, WK_DTYPE_Q4_K};
    /* 16640: past the AVX2 kernels' 16384 that are prepared whole on the stack */
    const int64_t ns[5][3] = {{96, 2112, 16640}, {96, 2112, 16640}, {96, 2112, 16640}, {256, 2304, 16640}, {256, 2304, 16640}};
    const int64_t n_rows = 80, n_tok = 17;
    uint64_t seed = 77;
    for (int ti = 0; ti < 5; ti++)
        for (int ni = 0; ni < 3; ni++) {
            if (!ns[ti][ni]) continue;
            const enum wk_dtype t = types[ti], r16 = wk_cpu_r16_dtype(t);
            const int64_t bs = wk_dtype_traits_get(t)->block_size, n = ns[ti][ni];
            const size_t row = wk_dtype_row_bytes(t, n), bb = wk_dtype_traits_get(t)->block_bytes;
            CHECK(r16 != WK_DTYPE_COUNT && wk_dtype_base(r16) == t && wk_dtype_row_bytes(r16, n) == row);
            uint8_t *orig = wk_aligned_alloc(row * n_rows), *packed = wk_aligned_alloc(row * n_rows);
            uint8_t *back = wk_aligned_alloc(row), *tmp = wk_aligned_alloc(row * WK_R16_ROWS);
            fill_random_blocks(t, orig, n / bs * n_rows, &seed);
            memcpy(packed, orig, row * n_rows);
            wk_cpu_r16_pack(t, packed, n, n_rows, tmp);
            CHECK(memcmp(packed, orig, row * n_rows) != 0);
            const struct wk_tensor w = {.name = "w", .dtype = t, .n_dims = 2, .ne = {n, n_rows, 1, 1},
                                        .nb = {bb, row, row * n_rows, row * n_rows}, .data = orig};
            struct wk_tensor wr = w;
            wr.dtype = r16, wr.data = packed;
            float *fa = wk_aligned_alloc((size_t)n * 4), *fb = wk_aligned_alloc((size_t)n * 4);
            int bad = 0;
            for (int64_t r = 0; r < n_rows; r++) {
                wk_cpu_r16_unpack_row(r16, packed, n, r, 0, n / bs, back);
                bad += memcmp(back, orig + r * row, row) != 0;
                const int64_t half = n / bs / 2;
                wk_cpu_r16_unpack_row(r16, packed, n, r, half, n / bs - half, back);
                bad += memcmp(back, orig + r * row + half * bb, row - half * bb) != 0;
                wk_cpu_get_row(k, &w, r, fa);
                wk_cpu_get_row(k, &wr, r, fb);
                bad += memcmp(fa, fb, (size_t)n * 4) != 0;
            }
            CHECK_EQ_INT(bad, 0);
            wk_aligned_free(fa), wk_aligned_free(fb);
            if (k->vec_dot_rows_x16[r16]) {
                float *x = wk_aligned_alloc((size_t)(n * n_tok) * 4), *d = wk_aligned_alloc((size_t)n / 32 * 4);
                int8_t *hi = wk_aligned_alloc((size_t)n), *lo = wk_aligned_alloc((size_t)n);
                for (int64_t i = 0; i < n * n_tok; i++) x[i] = check_rand_f32(&seed) * (i % 32 == 5 ? 4 : 1);
                float *got = wk_aligned_alloc((size_t)(n_rows * n_tok) * 4);
                float *tok = wk_aligned_alloc((size_t)(n_rows * n_tok) * 4);
                for (int64_t j = 0; j < n_tok; j++) k->vec_dot_rows_x16[r16](n, packed, row, x + j * n, got + j * n_rows, n_rows);
                wk__x16_quantize_ref(n, x, d, hi, lo);
                for (int64_t r = 0; r < n_rows; r++) bad += !x16_dot_ok(t, orig + r * row, n, x, d, hi, lo, got[r]);
                k->vec_dot_rows_x16_tokens[r16](n, packed, row, x, (size_t)n, (int32_t)n_tok, tok, (size_t)n_rows, n_rows);
                bad += memcmp(got, tok, (size_t)(n_rows * n_tok) * 4) != 0;
                /* x prepared once, then rows 16..47 and 0..15 apart */
                float *prep = wk_aligned_alloc(wk_cpu_r16_prep_floats(n) * 4);
                k->r16_prepare(n, x, prep);
                k->vec_dot_rows_r16[r16](n, packed + WK_R16_ROWS * row, row, prep, tok + WK_R16_ROWS, n_rows - WK_R16_ROWS);
                k->vec_dot_rows_r16[r16](n, packed, row, prep, tok, WK_R16_ROWS);
                bad += memcmp(got, tok, (size_t)n_rows * 4) != 0;
                wk_aligned_free(prep);
                /* every token's x prepared, ldp floats apart: the tokens entry */
                const size_t ldp = wk_cpu_r16_prep_floats(n);
                prep = wk_aligned_alloc(ldp * (size_t)n_tok * 4);
                for (int64_t j = 0; j < n_tok; j++) k->r16_prepare(n, x + j * n, prep + (size_t)j * ldp);
                memset(tok, 0, (size_t)(n_rows * n_tok) * 4);
                k->vec_dot_rows_r16_tokens[r16](n, packed, row, prep, ldp, (int32_t)n_tok, tok, (size_t)n_rows, n_rows);
                bad += memcmp(got, tok, (size_t)(n_rows * n_tok) * 4) != 0;
                /* two tokens (the AVX2 two-token tile), tokens 3 and 4 */
                memset(tok, 0, (size_t)(n_rows * 2) * 4);
                k->vec_dot_rows_r16_tokens[r16](n, packed, row, prep + 3 * ldp, ldp, 2, tok, (size_t)n_rows, n_rows);
                bad += memcmp(got + 3 * n_rows, tok, (size_t)(n_rows * 2) * 4) != 0;
                /* 3, 8 and 11 tokens from token 3 (AVX-512's tiles of like width:
                 * 3; 4 + 4; 6 + 5; the AMX table's: 3 through VNNI, a tile of 8
                 * with hi and lo rows interleaved, one of 11), results ldo = n_rows + 5 apart, and rows
                 * 16.. alone: each token's rows their lone decode's bits, nothing
                 * else written */
                const int32_t counts[3] = {3, 8, 11};
                const size_t ldo = (size_t)n_rows + 5;
                float *wide = wk_aligned_alloc(ldo * 11 * 4);
                for (int ci = 0; ci < 3; ci++) {
                    const int32_t nt = counts[ci];
                    for (size_t e = 0; e < ldo * 11; e++) wide[e] = NAN;
                    k->vec_dot_rows_r16_tokens[r16](n, packed + WK_R16_ROWS * row, row, prep + 3 * ldp, ldp, nt,
                                                    wide + WK_R16_ROWS, ldo, n_rows - WK_R16_ROWS);
                    for (int32_t j = 0; j < nt; j++) {
                        bad += memcmp(got + (3 + j) * n_rows + WK_R16_ROWS, wide + j * ldo + WK_R16_ROWS,
                                      (size_t)(n_rows - WK_R16_ROWS) * 4) != 0;
                        for (size_t e = 0; e < ldo; e++)
                            bad += (e < WK_R16_ROWS || e >= (size_t)n_rows) && !isnan(wide[j * ldo + e]);
                    }
                }
                wk_aligned_free(wide);
                wk_aligned_free(prep);
                /* the matmul over the pool, whole groups a thread */
                float *y = wk_aligned_alloc((size_t)(n_rows * n_tok) * 4), *y2 = wk_aligned_alloc((size_t)(n_rows * n_tok) * 4);
                for (int th = 1; th <= 3; th++) {
                    struct wk_threadpool *pool;
                    CHECK_EQ_INT(wk_threadpool_create(th, &pool), WK_OK);
                    float *scratch = wk_aligned_alloc(wk_cpu_matmul_scratch_floats(n, th, n_tok) * 4);
                    for (int rep = 0; rep < 3; rep++) {
                        wk_cpu_matmul(pool, k, &wr, x, y, 1, scratch, 0);
                        bad += memcmp(y, got, (size_t)n_rows * 4) != 0;
                    }
                    wk_cpu_matmul(pool, k, &wr, x, y, n_tok, scratch, WK_MATMUL_PER_TOKEN);
                    bad += memcmp(y, got, (size_t)(n_rows * n_tok) * 4) != 0;
                    wk_cpu_matmul(pool, k, &wr, x, y, n_tok, scratch, 0);
                    if (k->gemm_r16[r16]) {
                        /* the integer GEMM: each token's rows within the bounds of the
                         * exact dot with its x~, the same bits on every thread count */
                        if (th == 1) memcpy(y2, y, (size_t)(n_rows * n_tok) * 4);
                        bad += memcmp(y, y2, (size_t)(n_rows * n_tok) * 4) != 0;
                        /* AVX2's tiles give every row decode's arithmetic: the decode bits */
                        if (strcmp(k->isa, "avx2") == 0) bad += memcmp(y, got, (size_t)(n_rows * n_tok) * 4) != 0;
                        for (int64_t j = 0; th == 1 && j < n_tok; j++) {
                            wk__x16_quantize_ref(n, x + j * n, d, hi, lo);
                            for (int64_t r = 0; r < n_rows; r++)
                                bad += !x16_dot_ok(t, orig + r * row, n, x + j * n, d, hi, lo, y[j * n_rows + r]);
                        }
                    } else {
                        wk_cpu_matmul(pool, k, &w, x, y2, n_tok, scratch, 0);
                        bad += memcmp(y, y2, (size_t)(n_rows * n_tok) * 4) != 0;
                    }
                    wk_aligned_free(scratch);
                    wk_threadpool_destroy(pool);
                }
                if (k->gemm_r16[r16]) {
                    /* a call's tokens and rows do not change a result: tokens 2.. and
                     * rows 16.. alone give the whole call's bits */
                    const size_t ldp = wk_cpu_r16_gemm_prep_floats(k, n);
                    float *xp = wk_aligned_alloc(ldp * (size_t)n_tok * 4), *z = wk_aligned_alloc((size_t)(n_rows * n_tok) * 4);
                    for (int64_t j = 0; j < n_tok; j++) wk_cpu_r16_prepare_gemm(k, n, x + j * n, xp + (size_t)j * ldp);
                    for (int64_t i = 0; i < n_rows * n_tok; i++) z[i] = NAN;
                    k->gemm_r16[r16](n, packed + WK_R16_ROWS * row, row, xp + 2 * ldp, ldp, n_tok - 2,
                                     z + 2 * n_rows + WK_R16_ROWS, (size_t)n_rows, n_rows - WK_R16_ROWS);
                    for (int64_t j = 2; j < n_tok; j++)
                        bad += memcmp(z + j * n_rows + WK_R16_ROWS, y2 + j * n_rows + WK_R16_ROWS,
                                      (size_t)(n_rows - WK_R16_ROWS) * 4) != 0;
                    wk_aligned_free(xp), wk_aligned_free(z);
                }
                if (bad) fprintf(stderr, "  r16 %s n=%lld: %d failures\n", wk_dtype_name(t), (long long)n, bad);
                CHECK_EQ_INT(bad, 0);
                wk_aligned_free(x), wk_aligned_free(d), wk_aligned_free(hi), wk_aligned_free(lo);
                wk_aligned_free(got), wk_aligned_free(tok), wk_aligned_free(y), wk_aligned_free(y2);
            }
            wk_aligned_free(orig), wk_aligned_free(packed), wk_aligned_free(back), wk_aligned_free(tmp);
        }
}

/* Decode of a matmul group whose R16 part (512 rows of Q8_0_R16) is
 * followed by a row-major part ending off a group (37 rows of Q8_0), and
 * of a GLU pair of R16 matrices, on 2 and 3 threads, 100 times each: the
 * threads' chunks and steals cut the R16 part into whole groups only, so
 * each output equals the kernels' own (R16 rows: vec_dot_rows_x16 of the
 * R16 dtype; the tail: the row-major Q8_0 one), and the GLU outputs equal
 * GELU(gate) * up of those. (A steal cut at a multiple of 16 from the end
 * of the rows, not from row 0, split a group here.) */
static void test_r16_groups(void)
{
    const struct wk_cpu_kernels *k = wk_cpu_kernels_get();
    if (!k->vec_dot_rows_x16[WK_DTYPE_Q8_0_R16]) return;
    uint64_t seed = 12;
    const int64_t n = 4096, ra = 512, rb = 37;
    const size_t row = wk_dtype_row_bytes(WK_DTYPE_Q8_0, n);
    uint8_t *wa = wk_aligned_alloc(row * ra), *wb = wk_aligned_alloc(row * rb), *wu = wk_aligned_alloc(row * ra);
    uint8_t *tmp = wk_aligned_alloc(row * WK_R16_ROWS);
    fill_random_blocks(WK_DTYPE_Q8_0, wa, n / 32 * ra, &seed);
    fill_random_blocks(WK_DTYPE_Q8_0, wb, n / 32 * rb, &seed);
    fill_random_blocks(WK_DTYPE_Q8_0, wu, n / 32 * ra, &seed);
    wk_cpu_r16_pack(WK_DTYPE_Q8_0, wa, n, ra, tmp);
    wk_cpu_r16_pack(WK_DTYPE_Q8_0, wu, n, ra, tmp);
    const struct wk_tensor a = {.name = "a", .dtype = WK_DTYPE_Q8_0_R16, .n_dims = 2, .ne = {n, ra, 1, 1},
                                .nb = {34, row, row * ra, row * ra}, .data = wa};
    const struct wk_tensor b = {.name = "b", .dtype = WK_DTYPE_Q8_0, .n_dims = 2, .ne = {n, rb, 1, 1},
                                .nb = {34, row, row * rb, row * rb}, .data = wb};
    struct wk_tensor u = a;
    u.data = wu;
    float *x = wk_aligned_alloc(n * 4);
    for (int64_t j = 0; j < n; j++) x[j] = check_rand_f32(&seed);
    float *za = wk_aligned_alloc(ra * 4), *zb = wk_aligned_alloc(rb * 4), *zu = wk_aligned_alloc(ra * 4);
    float *ya = wk_aligned_alloc(ra * 4), *yb = wk_aligned_alloc(rb * 4), *yu = wk_aligned_alloc(ra * 4);
    k->vec_dot_rows_x16[WK_DTYPE_Q8_0_R16](n, wa, row, x, za, ra);
    k->vec_dot_rows_x16[WK_DTYPE_Q8_0_R16](n, wu, row, x, zu, ra);
    k->vec_dot_rows_x16[WK_DTYPE_Q8_0](n, wb, row, x, zb, rb);
    float *glu = wk_aligned_alloc(ra * 4);
    memcpy(glu, za, ra * 4);
    k->geglu(ra, glu, zu);
    int bad = 0;
    for (int th = 2; th <= 3; th++) {
        struct wk_threadpool *pool;
        CHECK_EQ_INT(wk_threadpool_create(th, &pool), WK_OK);
        float *scratch = wk_aligned_alloc(wk_cpu_matmul_scratch_floats(n, th, 1) * 4);
        const struct wk_tensor *ws[2] = {&a, &b};
        float *ys[2] = {ya, yb};
        for (int rep = 0; rep < 300; rep++) {
            wk_cpu_matmul_many(pool, k, 2, ws, ys, x, 1, scratch, 0);
            bad += memcmp(ya, za, ra * 4) != 0 || memcmp(yb, zb, rb * 4) != 0;
            wk_cpu_matmul_glu(pool, k, &a, &u, x, ya, yu, 1, scratch, WK_GLU_GELU_TANH, 0);
            bad += memcmp(ya, glu, ra * 4) != 0;
        }
        wk_aligned_free(scratch);
        wk_threadpool_destroy(pool);
    }
    CHECK_EQ_INT(bad, 0);
    wk_aligned_free(wa), wk_aligned_free(wb), wk_aligned_free(wu), wk_aligned_free(tmp), wk_aligned_free(x);
    wk_aligned_free(za), wk_aligned_free(zb), wk_aligned_free(zu), wk_aligned_free(ya), wk_aligned_free(yb);
    wk_aligned_free(yu), wk_aligned_free(glu);
}

/* Grouped products equal the separate ones, and the GLU pair equals the
 * activation of one product times the other. */
/* Decode products, whose rows the threads share by their recent speeds,
 * stealing on matrices from 1 MiB of weights a thread (matmul.c): a
 * three-matrix group, a GLU pair and a small matrix on pools of 2, 3 and 5
 * threads, three times each, give the 1-thread pool's bits (each row is computed whole by one thread, whichever), every
 * output written (the buffers start as NaN), and equal the rows' own dots. */
static void test_matmul_balanced_decode(void)
{
    const struct wk_cpu_kernels *k = wk_cpu_kernels_get();
    uint64_t seed = 41;
    const int64_t n_in = 576, outs[3] = {6001, 1999, 3003};
    const enum wk_dtype t = WK_DTYPE_Q4_1;
    const size_t row = wk_dtype_row_bytes(t, n_in);
    void *data[3];
    struct wk_tensor w[3];
    for (int i = 0; i < 3; i++) {
        data[i] = wk_aligned_alloc(row * (size_t)outs[i]);
        fill_random_blocks(t, data[i], n_in / 32 * outs[i], &seed);
        w[i] = (struct wk_tensor){.name = "w", .dtype = t, .n_dims = 2, .ne = {n_in, outs[i], 1, 1},
                                  .nb = {20, row, row * outs[i], row * outs[i]}, .data = data[i]};
    }
    float *x = wk_aligned_alloc(n_in * 4);
    for (int64_t i = 0; i < n_in; i++) x[i] = check_rand_f32(&seed);
    /* and a small one (fixed shares, no stealing): w[1]'s first 37 rows */
    struct wk_tensor small = w[1];
    small.ne[1] = 37;
    const int64_t n_y = outs[0] + outs[1] + outs[2] + 2 * outs[0] + 37;
    float *want = wk_aligned_alloc((size_t)n_y * 4), *got = wk_aligned_alloc((size_t)n_y * 4);
    static const int threads[] = {1, 2, 3, 5};
    for (size_t ti = 0; ti < WK_ARRAY_LEN(threads); ti++) {
        const int th = threads[ti];
        struct wk_threadpool *pool;
        CHECK_EQ_INT(wk_threadpool_create(th, &pool), WK_OK);
        float *scratch = wk_aligned_alloc(wk_cpu_matmul_scratch_floats(n_in, th, 1) * 4);
        float *y = ti == 0 ? want : got;
        for (int64_t i = 0; i < n_y; i++) y[i] = NAN;
        const struct wk_tensor *ws[3] = {&w[0], &w[1], &w[2]};
        float *ys[3] = {y, y + outs[0], y + outs[0] + outs[1]};
        for (int rep = 0; rep < 3; rep++) { /* the split varies with timing */
            wk_cpu_matmul_many(pool, k, 3, ws, ys, x, 1, scratch, 0);
            float *g = y + outs[0] + outs[1] + outs[2];
            wk_cpu_matmul_glu(pool, k, &w[0], &w[0], x, g, g + outs[0], 1, scratch, WK_GLU_SILU, 0);
            wk_cpu_matmul(pool, k, &small, x, g + 2 * outs[0], 1, scratch, 0);
            if (ti > 0) CHECK(memcmp(want, got, (size_t)n_y * 4) == 0);
        }
        bool all = true;
        for (int64_t i = 0; i < n_y; i++) all = all && !isnan(y[i]);
        CHECK(all);
        wk_aligned_free(scratch);
        wk_threadpool_destroy(pool);
    }
    /* the group's rows against each row alone through the decode kernel */
    wk_vec_dot_rows_fn f = k->vec_dot_rows_x16[t] ? k->vec_dot_rows_x16[t] : k->vec_dot_rows[t];
    int64_t base = 0, bad = 0;
    for (int i = 0; i < 3; i++) {
        for (int64_t r = 0; r < outs[i]; r += 97) {
            float one;
            f(n_in, (const uint8_t *)data[i] + (size_t)r * row, row, x, &one, 1);
            bad += one != want[base + r];
        }
        base += outs[i];
    }
    CHECK_EQ_INT((int)bad, 0);
    for (int i = 0; i < 3; i++) wk_aligned_free(data[i]);
    wk_aligned_free(x), wk_aligned_free(want), wk_aligned_free(got);
}

static void test_matmul_many_and_glu(void)
{
    const struct wk_cpu_kernels *k = wk_cpu_kernels_get();
    uint64_t seed = 17;
    const int64_t n_in = 256;
    const int64_t outs[3] = {40, 8, 24};
    void *data[3];
    struct wk_tensor w[3];
    for (int i = 0; i < 3; i++) {
        size_t row = wk_dtype_row_bytes(WK_DTYPE_Q4_K, n_in);
        data[i] = wk_aligned_alloc(row * (size_t)outs[i]);
        fill_random_blocks(WK_DTYPE_Q4_K, data[i], outs[i], &seed);
        w[i] = (struct wk_tensor){.name = "w", .dtype = WK_DTYPE_Q4_K, .n_dims = 2,
                                  .ne = {n_in, outs[i], 1, 1}, .nb = {144, row, row * outs[i], row * outs[i]},
                                  .data = data[i]};
    }
    for (int nt = 1; nt <= 5; nt += 4) {
        float x[5 * 256];
        for (int i = 0; i < nt * n_in; i++) x[i] = check_rand_f32(&seed);
        struct wk_threadpool *pool;
        wk_threadpool_create(2, &pool);
        float *scratch = wk_aligned_alloc(wk_cpu_matmul_scratch_floats(n_in, 2, nt) * 4);
        float sep[3][5 * 40], grp[3][5 * 40];
        const struct wk_tensor *ws[3] = {&w[0], &w[1], &w[2]};
        float *ys[3] = {grp[0], grp[1], grp[2]};
        for (int i = 0; i < 3; i++) wk_cpu_matmul(pool, k, &w[i], x, sep[i], nt, scratch, 0);
        wk_cpu_matmul_many(pool, k, 3, ws, ys, x, nt, scratch, 0);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < nt * outs[i]; j++) CHECK_NEAR(grp[i][j], sep[i][j], 1e-5, 1e-5);
        /* GLU: gate = w[0], up = a second 40-row matrix made of w[0] too */
        float g[5 * 40], up[5 * 40], want[5 * 40];
        memcpy(want, sep[0], sizeof want);
        wk_geglu(nt * 40, want, sep[0]);
        wk_cpu_matmul_glu(pool, k, &w[0], &w[0], x, g, up, nt, scratch, WK_GLU_GELU_TANH, 0);
        for (int j = 0; j < nt * 40; j++) CHECK_NEAR(g[j], want[j], 1e-5, 1e-4);
        memcpy(want, sep[0], sizeof want);
        wk_swiglu(nt * 40, want, sep[0]);
        wk_cpu_matmul_glu(pool, k, &w[0], &w[0], x, g, up, nt, scratch, WK_GLU_SILU, 0);
        for (int j = 0; j < nt * 40; j++) CHECK_NEAR(g[j], want[j], 1e-5, 1e-4);
        wk_aligned_free(scratch);
        wk_threadpool_destroy(pool);
    }
    for (int i = 0; i < 3; i++) wk_aligned_free(data[i]);
}

/* Sets every code of the nb blocks of type t at w (one row) to its
 * largest: 4-bit codes 15 (Q4_1, Q4_K), 5-bit 31 (Q5_0), Q8_0 127, Q6_K 63. */
static void max_codes(enum wk_dtype t, uint8_t *w, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++) {
        if (t == WK_DTYPE_Q4_1) memset(((struct wk_block_q4_1 *)w)[b].qs, 0xFF, sizeof ((struct wk_block_q4_1 *)w)[b].qs);
        if (t == WK_DTYPE_Q4_K) memset(((struct wk_block_q4_k *)w)[b].qs, 0xFF, sizeof ((struct wk_block_q4_k *)w)[b].qs);
        if (t == WK_DTYPE_Q5_0) {
            memset(((struct wk_block_q5_0 *)w)[b].qs, 0xFF, sizeof ((struct wk_block_q5_0 *)w)[b].qs);
            memset(((struct wk_block_q5_0 *)w)[b].qh, 0xFF, sizeof ((struct wk_block_q5_0 *)w)[b].qh);
        }
        if (t == WK_DTYPE_Q8_0) memset(((struct wk_block_q8_0 *)w)[b].qs, 127, sizeof ((struct wk_block_q8_0 *)w)[b].qs);
        if (t == WK_DTYPE_Q6_K) {
            memset(((struct wk_block_q6_k *)w)[b].ql, 0xFF, sizeof ((struct wk_block_q6_k *)w)[b].ql);
            memset(((struct wk_block_q6_k *)w)[b].qh, 0xFF, sizeof ((struct wk_block_q6_k *)w)[b].qh);
        }
    }
}

/* The AMX gemm_r16 (r16_amx.c, where the CPU grants AMX) against the
 * AVX-512 VNNI one it stands on, bit for bit: each R16 type, rows of one
 * column chunk and of two (a short second one), 80 rows (a tile of four
 * groups and one of one) and 37 tokens (two tiles of 16 through AMX, 5
 * through VNNI), column chunks of an odd block count, output rows ldo apart wider than the matrix, and a call
 * on tokens 3.. and rows 16.. alone. */
static void test_r16_gemm_amx(void)
{
    const struct wk_cpu_kernels *amx = wk_cpu_kernels_for("amx"), *vnni = wk_cpu_kernels_for("avx512");
    if (!amx || !vnni) {
        printf("  no AMX kernels here (no AMX, not granted, or WICK_CPU=%s caps it): skipped\n",
               getenv("WICK_CPU") ? getenv("WICK_CPU") : "(unset)");
        return;
    }
    const enum wk_dtype types[5] = {WK_DTYPE_Q4_1, WK_DTYPE_Q5_0, WK_DTYPE_Q8_0, WK_DTYPE_Q4_K, WK_DTYPE_Q6_K};
    /* 32-element types: 2080 = chunks of 64 blocks and of 1 (amx_tile's
     * pipeline with one block), 2144 = 64 and 3 (an odd count past one: it
     * leaves its loop from the first tile set); K-quants: 8 super-blocks in
     * the last chunk, and 2 in one */
    const int64_t ns_b32[3] = {2080, 4352, 2144}, ns_k[3] = {2304, 4352, 512}, n_rows = 80, n_tok = 37, ldo = 83;
    uint64_t seed = 5;
    int n_amx = 0;
    for (int ti = 0; ti < 5; ti++)
        for (int ni = 0; ni < 3; ni++) {
            const enum wk_dtype t = types[ti], r16 = wk_cpu_r16_dtype(t);
            const int64_t bs = wk_dtype_traits_get(t)->block_size, n = bs == 32 ? ns_b32[ni] : ns_k[ni];
            if (!amx->gemm_r16[r16] || !vnni->gemm_r16[r16]) continue;
            n_amx += amx->gemm_r16[r16] != vnni->gemm_r16[r16];
            const size_t row = wk_dtype_row_bytes(t, n), ldp = wk_cpu_r16_gemm_prep_floats(amx, n);
            uint8_t *w = wk_aligned_alloc(row * n_rows), *tmp = wk_aligned_alloc(row * WK_R16_ROWS);
            fill_random_blocks(t, w, n / bs * n_rows, &seed);
            /* row 0 every code at its largest (15 for the 4-bit types) */
            max_codes(t, w, n / bs);
            wk_cpu_r16_pack(t, w, n, n_rows, tmp);
            float *x = wk_aligned_alloc((size_t)(n * n_tok) * 4), *prep = wk_aligned_alloc(ldp * (size_t)n_tok * 4);
            for (int64_t i = 0; i < n * n_tok; i++) x[i] = check_rand_f32(&seed) * (i % 32 == 7 ? 8 : 1);
            /* tokens 0 and 1 all +1 and all -1: each block's x~ +-127 256
             * everywhere, so row 0's block dots reach 32 127 256 15 (the
             * BF16 tiles' f32 sums stay exact below 2^24) */
            for (int64_t i = 0; i < n; i++) x[i] = 1.0f, x[n + i] = -1.0f;
            /* the AMX table's preparation (the VNNI one's, then the BF16 tiles' rows where they are), which
             * the VNNI GEMM reads the start of */
            for (int64_t j = 0; j < n_tok; j++) wk_cpu_r16_prepare_gemm(amx, n, x + j * n, prep + (size_t)j * ldp);
            float *ya = wk_aligned_alloc((size_t)(ldo * n_tok) * 4), *yv = wk_aligned_alloc((size_t)(ldo * n_tok) * 4);
            for (int64_t i = 0; i < ldo * n_tok; i++) ya[i] = yv[i] = -1.0f;
            amx->gemm_r16[r16](n, w, row, prep, ldp, n_tok, ya, (size_t)ldo, n_rows);
            vnni->gemm_r16[r16](n, w, row, prep, ldp, n_tok, yv, (size_t)ldo, n_rows);
            int bad = memcmp(ya, yv, (size_t)(ldo * n_tok) * 4) != 0;
            for (int64_t i = 0; i < ldo * n_tok; i++) ya[i] = NAN;
            amx->gemm_r16[r16](n, w + WK_R16_ROWS * row, row, prep + 3 * ldp, ldp, n_tok - 3, ya + 3 * ldo + WK_R16_ROWS,
                               (size_t)ldo, n_rows - WK_R16_ROWS);
            for (int64_t j = 3; j < n_tok; j++)
                bad += memcmp(ya + j * ldo + WK_R16_ROWS, yv + j * ldo + WK_R16_ROWS, (size_t)(n_rows - WK_R16_ROWS) * 4) != 0;
            if (bad) fprintf(stderr, "  amx %s n=%lld: %d failures\n", wk_dtype_name(t), (long long)n, bad);
            CHECK_EQ_INT(bad, 0);
            wk_aligned_free(w), wk_aligned_free(tmp), wk_aligned_free(x), wk_aligned_free(prep);
            wk_aligned_free(ya), wk_aligned_free(yv);
        }
    CHECK(n_amx >= 12); /* Q4_1, Q5_0, Q8_0 and Q4_K went through AMX at the three lengths (and Q6_K with AMX-BF16) */
}

CHECK_MAIN(TEST(test_matmul_balanced_decode), TEST(test_r16_layout), TEST(test_r16_groups),
           TEST(test_matmul_many_and_glu), TEST(test_r16_gemm_amx))
