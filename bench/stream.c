/*
 * stream.c - memory bandwidth, STREAM-style (McCalpin, "Memory Bandwidth
 * and Machine Balance in Current High Performance Computers", 1995;
 * https://www.cs.virginia.edu/stream/).
 *
 * Three float arrays a, b, c of n elements each, far larger than the caches
 * (default 256 MiB each). Two kernels, each split over the threads of a
 * wk_threadpool by contiguous ranges (wk_split_range):
 *   triad  a[i] = b[i] + s * c[i]   STREAM's own: 2 reads + 1 write;
 *   read   sum += b[i]             read-only, as a decode step reads its
 *                                  weights (not part of STREAM).
 * Bytes counted the STREAM way: triad 3 x sizeof(float) x n per pass (the
 * write-allocate read of a[] is not counted), read 1 x sizeof(float) x n.
 * Each kernel runs reps times per thread count; the best (shortest) pass
 * gives the rate, as STREAM reports. GB = 1e9 bytes. The arrays are in
 * 2 MiB transparent huge pages (MADV_HUGEPAGE), as wick's weights are:
 * with 4 KiB pages the TLB misses cost a fifth of the rate here, and the
 * ceiling should be what the memory system can do.
 *
 * Usage: build/release/bench/stream [--mib 256] [--threads 1,2] [--reps 10] [--json]
 * (a figure, not a test; `bench/bandwidth` runs it and derives tokens/s ceilings)
 */
#include "../src/base/wk_base.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* bytes of 2 MiB-aligned anonymous memory advised for huge pages, or NULL */
static float *alloc_huge(size_t bytes)
{
    const size_t hp = (size_t)2 << 20, len = (bytes + hp - 1) / hp * hp + hp;
    uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    uint8_t *al = (uint8_t *)(((uintptr_t)p + hp - 1) & ~(uintptr_t)(hp - 1));
    (void)madvise(al, len - (size_t)(al - p), MADV_HUGEPAGE);
    return (float *)al;
}

struct stream_job {
    float *a, *b, *c;
    int64_t n;
    float s;
    double sums[1024]; /* per thread: the read kernel's sum of b */
};

static void task_init(void *ctx, int ith, int nth)
{
    struct stream_job *j = ctx;
    int64_t lo, hi;
    wk_split_range(j->n, ith, nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        j->a[i] = 1.0f;
        j->b[i] = 2.0f;
        j->c[i] = 0.5f;
    }
}

/* Four floats: GCC/Clang vector extension, SSE2 on any x86-64, so the
 * loops move 16 bytes per instruction at -O2 without ISA flags (STREAM
 * itself relies on the compiler's vectorizer, which -O2 mostly leaves off). */
typedef float v4f __attribute__((vector_size(16)));

static inline v4f load4(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void task_triad(void *ctx, int ith, int nth)
{
    struct stream_job *j = ctx;
    int64_t lo, hi;
    wk_split_range(j->n, ith, nth, &lo, &hi);
    float *restrict a = j->a;
    const float *restrict b = j->b, *restrict c = j->c;
    const float s = j->s;
    const v4f sv = {s, s, s, s};
    int64_t i = lo;
    for (; i + 16 <= hi; i += 16) {
        v4f r0 = load4(b + i) + sv * load4(c + i);
        v4f r1 = load4(b + i + 4) + sv * load4(c + i + 4);
        v4f r2 = load4(b + i + 8) + sv * load4(c + i + 8);
        v4f r3 = load4(b + i + 12) + sv * load4(c + i + 12);
        memcpy(a + i, &r0, sizeof r0);
        memcpy(a + i + 4, &r1, sizeof r1);
        memcpy(a + i + 8, &r2, sizeof r2);
        memcpy(a + i + 12, &r3, sizeof r3);
    }
    for (; i < hi; i++) a[i] = b[i] + s * c[i];
}

static void task_read(void *ctx, int ith, int nth)
{
    struct stream_job *j = ctx;
    int64_t lo, hi;
    wk_split_range(j->n, ith, nth, &lo, &hi);
    const float *restrict b = j->b;
    /* four independent vector sums, so the adder's latency does not set the pace */
    v4f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    int64_t i = lo;
    for (; i + 16 <= hi; i += 16) {
        s0 += load4(b + i);
        s1 += load4(b + i + 4);
        s2 += load4(b + i + 8);
        s3 += load4(b + i + 12);
    }
    v4f t = (s0 + s1) + (s2 + s3);
    double sum = (double)t[0] + t[1] + t[2] + t[3];
    for (; i < hi; i++) sum += b[i];
    j->sums[ith] = sum;
}

/* Best time in seconds of reps passes of fn. */
static double best_of(struct wk_threadpool *pool, wk_task_fn fn, struct stream_job *j, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        int64_t t0 = wk_time_ns();
        wk_threadpool_run(pool, fn, j);
        double s = (double)(wk_time_ns() - t0) / 1e9;
        if (s < best) best = s;
    }
    return best;
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: stream [--mib M] [--threads 1,2,...] [--reps R] [--json]\n"
               "  --mib M      MiB per array, three arrays (default 256)\n"
               "  --threads    thread counts to measure (default 1,2)\n"
               "  --reps R     passes per kernel; the best counts (default 10)\n"
               "  --json       one JSON object instead of a table\n");
}

int main(int argc, char **argv)
{
    long mib = 256, reps = 10;
    int threads[64], n_threads = 0;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        char *end;
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc) {
            mib = strtol(argv[++i], &end, 10);
            if (*end || mib < 1 || mib > (1 << 16)) {
                fprintf(stderr, "stream: --mib expects 1..65536, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = strtol(argv[++i], &end, 10);
            if (*end || reps < 1 || reps > 10000) {
                fprintf(stderr, "stream: --reps expects 1..10000, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            char *p = argv[++i];
            n_threads = 0;
            for (;;) {
                long t = strtol(p, &end, 10);
                if (end == p || t < 1 || t > 1024 || n_threads == 64 || (*end && *end != ',')) {
                    fprintf(stderr, "stream: --threads expects a list like 1,2, got '%s'\n", argv[i]);
                    return 2;
                }
                threads[n_threads++] = (int)t;
                if (!*end) break;
                p = end + 1;
            }
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "stream: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (n_threads == 0) {
        threads[0] = 1;
        threads[1] = 2;
        n_threads = 2;
    }

    struct stream_job j = {.n = (int64_t)mib * (1 << 20) / (int64_t)sizeof(float), .s = 3.0f};
    size_t bytes = (size_t)j.n * sizeof(float);
    j.a = alloc_huge(bytes);
    j.b = alloc_huge(bytes);
    j.c = alloc_huge(bytes);
    if (!j.a || !j.b || !j.c) {
        fprintf(stderr, "stream: cannot allocate 3 x %ld MiB\n", mib);
        return 1;
    }
    if (json)
        printf("{\"array_bytes\": %zu, \"n\": %lld, \"reps\": %ld, \"element_bytes\": 4, "
               "\"counting\": \"triad 3 x 4 x n bytes per pass, read 4 x n\", \"results\": [",
               bytes, (long long)j.n, reps);
    else
        printf("STREAM-style, 3 arrays x %ld MiB of float, best of %ld passes; triad counts "
               "3 x 4 bytes per element, read 4 bytes\n%8s %12s %12s\n",
               mib, reps, "threads", "triad GB/s", "read GB/s");
    for (int k = 0; k < n_threads; k++) {
        struct wk_threadpool *pool = NULL;
        if (wk_threadpool_create(threads[k], &pool)) {
            fprintf(stderr, "stream: cannot start %d threads\n", threads[k]);
            return 1;
        }
        wk_threadpool_run(pool, task_init, &j); /* first touch by the threads that use the pages */
        double t_triad = best_of(pool, task_triad, &j, (int)reps);
        double t_read = best_of(pool, task_read, &j, (int)reps);
        double triad = 3.0 * (double)bytes / t_triad / 1e9, read = (double)bytes / t_read / 1e9;
        /* check the work was done: b + s*c = 2 + 3*0.5 = 3.5 everywhere; b sums
         * to 2n (float partial sums: close, exact only while they stay < 2^24) */
        double sum = 0;
        for (int t = 0; t < threads[k]; t++) sum += j.sums[t];
        if (j.a[j.n - 1] != 3.5f || j.a[0] != 3.5f || fabs(sum - 2.0 * (double)j.n) > 1e-3 * (double)j.n) {
            fprintf(stderr, "stream: wrong result (a = %g, sum = %g, expected %g)\n",
                    (double)j.a[0], sum, 2.0 * (double)j.n);
            return 1;
        }
        if (json)
            printf("%s{\"threads\": %d, \"triad_gbs\": %.3f, \"read_gbs\": %.3f}", k ? ", " : "",
                   threads[k], triad, read);
        else
            printf("%8d %12.2f %12.2f\n", threads[k], triad, read);
        wk_threadpool_destroy(pool);
    }
    if (json) printf("]}\n");
    /* the arrays stay mapped until exit */
    return 0;
}
