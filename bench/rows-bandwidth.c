/*
 * rows-bandwidth.c - how much of the memory bandwidth the decode kernels
 * use: 2 threads run the decode dot the matmul would pick for a weight type
 * (vec_dot_rows_x16 where the ISA has one, else vec_dot_rows) over a
 * 256 MiB matrix in 2 MiB huge pages (an R16 type: vec_dot_rows_r16 on x
 * prepared once per thread, as decode runs it) (each thread its half of the rows, as
 * the matmul splits them), against a plain 2-thread read of the same
 * bytes; best of 4 each, repeated, in GB/s of weight bytes. This VM's
 * bandwidth changes from one stretch of time to the next (~35 or ~55 GB/s
 * at 2 threads), so compare the two figures of one line, not lines.
 *
 * Usage: build/release/bench/rows-bandwidth [type=q8_0|q4_1|q5_0|q4_k|q6_k|q4_1_r16|q5_0_r16|q8_0_r16|q4_k_r16|q6_k_r16]
 *                                            [n=640] [lines=6]
 *                                            [KiB=262144] [threads=2] [piece KiB=0] [fill=0x11|random]
 * (q4_k and q6_k are the plain types' x16 kernels; their R16 layouts, which
 * the loader repacks every Q4_K and Q6_K matrix into, are q4_k_r16 and
 * q6_k_r16.) fill random: codes from a fixed xorshift stream, the blocks'
 * f16 scales set to 2^-7, instead of every byte 0x11: on the Xeon of
 * 2026-12-05 the kernels read random codes 5-10% slower than uniform ones.
 * piece KiB > 0: the matrix is read as consecutive pieces of that size,
 * one pool run (and one prepared x) each, as a decode step's matrices
 * follow one another.
 * With a small matrix (512 KiB, 1 thread) the rows stay in L2 and the
 * figure is the kernel's compute rate instead. (a figure, not a test)
 */
#include "../src/cpu/wk_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct job {
    const struct wk_cpu_kernels *k;
    enum wk_dtype t;
    const uint8_t *w;
    size_t row, rows;
    size_t r0, nr; /* the piece a pool run reads: rows r0 .. r0 + nr */
    int n;
    const float *x;
    float *y;
    float *prep[64]; /* each thread's x prepared for vec_dot_rows_r16 (an R16 type), else NULL */
    uint64_t sink[2];
};

static void rows_task(void *c, int ith, int nth)
{
    struct job *j = c;
    int64_t lo, hi;
    /* whole groups of rows for an R16 layout (16), else any split */
    const int64_t g = wk_dtype_base(j->t) != j->t ? WK_R16_ROWS : 1;
    wk_split_range((int64_t)j->nr / g, ith, nth, &lo, &hi);
    lo = lo * g + (int64_t)j->r0, hi = hi * g + (int64_t)j->r0;
    /* as the matmul picks: an R16 type's kernel on x prepared once by the
     * thread (its decode path), else the 16-bit-activation kernel where the
     * type has one */
    if (j->prep[ith]) {
        j->k->r16_prepare(j->n, j->x, j->prep[ith]);
        j->k->vec_dot_rows_r16[j->t](j->n, j->w + lo * j->row, j->row, j->prep[ith], j->y + lo, hi - lo);
        return;
    }
    wk_vec_dot_rows_fn f = j->k->vec_dot_rows_x16[j->t] ? j->k->vec_dot_rows_x16[j->t] : j->k->vec_dot_rows[j->t];
    f(j->n, j->w + lo * j->row, j->row, j->x, j->y + lo, hi - lo);
}

static void read_task(void *c, int ith, int nth)
{
    struct job *j = c;
    int64_t lo, hi;
    wk_split_range((int64_t)(j->nr * j->row / 64), ith, nth, &lo, &hi);
    lo += (int64_t)(j->r0 * j->row / 64), hi += (int64_t)(j->r0 * j->row / 64);
    const uint64_t *p = (const uint64_t *)j->w;
    uint64_t s = 0;
    for (int64_t i = lo * 8; i < hi * 8; i += 8)
        s += p[i] ^ p[i + 1] ^ p[i + 2] ^ p[i + 3] ^ p[i + 4] ^ p[i + 5] ^ p[i + 6] ^ p[i + 7];
    j->sink[ith & 1] = s;
}

/* Best of several timings, each of enough passes to read >= 64 MiB (one
 * pass over a big matrix; many over one that fits in cache); a pass is one
 * pool run a piece of piece_rows rows, in address order. */
static double best_gbs(struct wk_threadpool *pool, wk_task_fn fn, struct job *j, size_t piece_rows)
{
    const size_t bytes = j->rows * j->row, passes = bytes >= ((size_t)64 << 20) ? 1 : ((size_t)64 << 20) / bytes;
    double best = 1e30;
    for (int i = 0; i < (passes > 1 ? 12 : 4); i++) {
        int64_t t0 = wk_time_ns();
        for (size_t p = 0; p < passes; p++)
            for (j->r0 = 0; j->r0 < j->rows; j->r0 += piece_rows) {
                j->nr = WK_MIN(piece_rows, j->rows - j->r0);
                wk_threadpool_run(pool, fn, j);
            }
        double s = (double)(wk_time_ns() - t0) / 1e9 / (double)passes;
        if (s < best) best = s;
    }
    return (double)bytes / 1e9 / best;
}

int main(int argc, char **argv)
{
    const char *tname = argc > 1 ? argv[1] : "q8_0";
    int n = argc > 2 ? atoi(argv[2]) : 640, lines = argc > 3 ? atoi(argv[3]) : 6;
    const long kib = argc > 4 ? atol(argv[4]) : 256L << 10;
    const int threads = argc > 5 ? atoi(argv[5]) : 2;
    const long piece_kib = argc > 6 ? atol(argv[6]) : 0;
    const bool random_fill = argc > 7 && strcmp(argv[7], "random") == 0;
    if (argc > 7 && !random_fill && strcmp(argv[7], "0x11") != 0) {
        fprintf(stderr, "rows-bandwidth: fill is 0x11 or random\n");
        return 2;
    }
    if (kib < 64 || kib > (4L << 20) || threads < 1 || threads > 64 || piece_kib < 0) {
        fprintf(stderr, "rows-bandwidth: KiB 64..4194304, threads 1..64, piece KiB >= 0\n");
        return 2;
    }
    enum wk_dtype t = WK_DTYPE_COUNT;
    for (uint32_t i = 0; i < WK_DTYPE_COUNT; i++) {
        const struct wk_dtype_traits *tr = wk_dtype_traits_get(i);
        if (tr && tr->name && strcasecmp(tr->name, tname) == 0) t = i;
    }
    if (t == WK_DTYPE_COUNT || n <= 0 || n % 32 != 0 ||
        (n % 256 != 0 && (t == WK_DTYPE_Q4_K || t == WK_DTYPE_Q6_K))) {
        fprintf(stderr, "rows-bandwidth: bad type or row length\n");
        return 2;
    }
    const struct wk_cpu_kernels *k = wk_cpu_kernels_get();
    struct wk_threadpool *pool;
    if (wk_threadpool_create(threads, &pool)) return 1;
    size_t row = wk_dtype_row_bytes(t, n), rows = ((size_t)kib << 10) / row / WK_R16_ROWS * WK_R16_ROWS;
    const size_t hp = (size_t)2 << 20;
    uint8_t *raw = mmap(NULL, rows * row + hp, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return 1;
    uint8_t *w = (uint8_t *)(((uintptr_t)raw + hp - 1) & ~(uintptr_t)(hp - 1));
    (void)madvise(w, rows * row, MADV_HUGEPAGE);
    if (random_fill) { /* a fixed xorshift stream, then small finite f16 scales (2^-7) where the block keeps them */
        uint64_t sd = 88172645463325252ull;
        for (size_t i = 0; i < rows * row; i++) sd ^= sd << 13, sd ^= sd >> 7, sd ^= sd << 17, w[i] = (uint8_t)sd;
        const enum wk_dtype base = wk_dtype_base(t);
        const size_t bb = wk_dtype_traits_get(base)->block_bytes;
        const uint16_t h = 0x2000;
        for (size_t b = 0; b < rows * row / bb; b++) {
            if (base == WK_DTYPE_Q6_K) memcpy(w + b * bb + bb - 2, &h, 2); /* d last */
            else memcpy(w + b * bb, &h, 2); /* d first */
            if (base == WK_DTYPE_Q4_K || base == WK_DTYPE_Q4_1) memcpy(w + b * bb + 2, &h, 2); /* dmin, m */
        }
    } else {
        memset(w, 0x11, rows * row); /* small finite f16 scales, nibbles 1 */
    }
    if (wk_dtype_base(t) != t) { /* the R16 layout of those bytes (the loader's repacking) */
        void *tmp = wk_aligned_alloc(WK_R16_ROWS * row);
        wk_cpu_r16_pack(wk_dtype_base(t), w, n, (int64_t)rows, tmp);
        wk_aligned_free(tmp);
    }
    /* pieces of whole groups of 16 rows (0: the whole matrix in one run) */
    size_t piece_rows = piece_kib ? ((size_t)piece_kib << 10) / row / WK_R16_ROWS * WK_R16_ROWS : rows;
    if (piece_rows == 0) piece_rows = WK_R16_ROWS;
    float *x = wk_aligned_alloc((size_t)n * 4), *y = wk_aligned_alloc(rows * 4);
    for (int i = 0; i < n; i++) x[i] = 0.01f * (float)(i % 7);
    struct job j = {.k = k, .t = t, .w = w, .row = row, .rows = rows, .n = n, .x = x, .y = y};
    const bool prepared = k->r16_prepare && k->vec_dot_rows_r16[t];
    for (int i = 0; prepared && i < threads; i++) j.prep[i] = wk_aligned_alloc(wk_cpu_r16_prep_floats(n) * 4);
    printf("%s rows of %d, %zu KiB in pieces of %zu KiB, isa %s, %d thread(s), %s\n", wk_dtype_traits_get(t)->name,
           n, rows * row >> 10, piece_rows * row >> 10, k->isa, threads,
           prepared              ? "16-bit activations prepared once (vec_dot_rows_r16)"
           : k->vec_dot_rows_x16[t] ? "16-bit activations (vec_dot_rows_x16)"
                                 : "f32 activations (vec_dot_rows)");
    for (int l = 0; l < lines; l++) {
        double a = best_gbs(pool, rows_task, &j, piece_rows), b = best_gbs(pool, read_task, &j, piece_rows);
        printf("decode dots %6.1f GB/s   plain read %6.1f GB/s   (%3.0f%%)\n", a, b, 100 * a / b);
    }
    for (int i = 0; i < threads; i++) wk_aligned_free(j.prep[i]);
    wk_threadpool_destroy(pool);
    return 0;
}
