/*
 * test-base.c - status names and error reports, counted allocation and its
 * failure injection, the arena, the thread pool, CPU feature detection.
 */
#include "check.h"

#include "../../src/base/wk_base.h"

#include <jansson.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

static void test_errors(void)
{
    struct wk_error err;
    wk_error_clear(&err);
    CHECK_EQ_INT(err.status, WK_OK);
    CHECK_EQ_INT(wk_error_set(&err, WK_E_FORMAT, "tensor %s: bad %d", "x", 3), WK_E_FORMAT);
    CHECK_EQ_STR(err.msg, "tensor x: bad 3");
    CHECK_EQ_INT(wk_error_prefix(&err, WK_E_FORMAT, "%s: ", "f.gguf"), WK_E_FORMAT);
    /* without a report the failing status still comes back */
    CHECK_EQ_INT(wk_error_prefix(NULL, WK_E_IO, "x"), WK_E_IO);
    CHECK_EQ_STR(err.msg, "f.gguf: tensor x: bad 3");
    CHECK_EQ_INT(wk_error_set(NULL, WK_E_IO, "ignored"), WK_E_IO);
    /* a long prefix is cut, never overflows */
    char big[2000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    wk_error_prefix(&err, WK_E_FORMAT, "%s", big);
    CHECK_EQ_INT(strlen(err.msg), WK_ERROR_MSG_MAX - 1);
    for (int s = 0; s >= -9; s--) CHECK(strcmp(wk_status_str((enum wk_status)s), "unknown status") != 0);
    CHECK_EQ_STR(wk_status_str(WK_E_NOMEM), "out of memory");
}

static void test_alloc_counts_and_failures(void)
{
    int64_t base = wk_alloc_live_bytes();
    char *a = wk_malloc(100);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base + 100);
    a = wk_realloc(a, 300);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base + 300);
    char *s = wk_strdup("hello");
    CHECK_EQ_STR(s, "hello");
    void *al = wk_aligned_alloc(1000);
    CHECK_EQ_INT((uintptr_t)al % 64, 0);
    wk_free(a);
    wk_free(s);
    wk_aligned_free(al);
    wk_free(NULL);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
    /* the 3rd allocation from now fails, and every one after it */
    wk_alloc_fail_after(3);
    void *p1 = wk_malloc(8), *p2 = wk_malloc(8), *p3 = wk_malloc(8), *p4 = wk_calloc(2, 8);
    wk_alloc_fail_after(0);
    CHECK(p1 && p2 && !p3 && !p4);
    wk_free(p1);
    wk_free(p2);
    CHECK(wk_calloc(SIZE_MAX / 2, 4) == NULL); /* overflow */
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
    /* huge-page blocks: 2 MiB-aligned, zeroed, writable to the last byte,
     * counted, and under the failure hook like the others */
    const size_t hn = (size_t)3 << 20 | 12345;
    uint8_t *h = wk_huge_alloc(hn);
    CHECK(h != NULL && (uintptr_t)h % ((size_t)2 << 20) == 0);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base + (int64_t)hn);
    if (h) {
        CHECK(h[0] == 0 && h[hn / 2] == 0 && h[hn - 1] == 0);
        h[0] = 1, h[hn - 1] = 2;
        CHECK(h[0] == 1 && h[hn - 1] == 2);
    }
    wk_huge_free(h, hn);
    wk_huge_free(NULL, 0);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
    CHECK(wk_huge_alloc(0) == NULL && wk_huge_alloc(SIZE_MAX) == NULL);
    wk_alloc_fail_after(1);
    CHECK(wk_huge_alloc(4096) == NULL);
    wk_alloc_fail_after(0);
}

static void test_arena(void)
{
    struct wk_arena a;
    CHECK_EQ_INT(wk_arena_init(&a, 1000), WK_OK);
    void *x = wk_arena_alloc(&a, 10), *y = wk_arena_alloc(&a, 10);
    CHECK(x && y && (uintptr_t)y % 64 == 0 && (uint8_t *)y - (uint8_t *)x == 64);
    CHECK(wk_arena_alloc(&a, 2000) == NULL);
    wk_arena_reset(&a);
    CHECK(wk_arena_alloc(&a, 10) == x);
    CHECK(a.high_water_bytes >= 74);
    wk_arena_deinit(&a);
    wk_arena_deinit(&a); /* twice is fine */
}

struct sum_ctx {
    int64_t n;
    _Atomic int64_t total;
    _Atomic int calls;
};

static void sum_task(void *p, int ith, int nth)
{
    struct sum_ctx *c = p;
    int64_t lo, hi, s = 0;
    wk_split_range(c->n, ith, nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) s += i;
    atomic_fetch_add(&c->total, s);
    atomic_fetch_add(&c->calls, 1);
}

static void test_threadpool(void)
{
    for (int nt = 1; nt <= 4; nt++) {
        struct wk_threadpool *pool;
        CHECK_EQ_INT(wk_threadpool_create(nt, &pool), WK_OK);
        CHECK_EQ_INT(wk_threadpool_n_threads(pool), nt);
        /* many small jobs back to back: each runs on every thread once */
        for (int rep = 0; rep < 2000; rep++) {
            struct sum_ctx c = {.n = 1000 + rep};
            wk_threadpool_run(pool, sum_task, &c);
            if (c.total != c.n * (c.n - 1) / 2 || c.calls != nt) {
                CHECK_EQ_INT(c.total, c.n * (c.n - 1) / 2);
                CHECK_EQ_INT(c.calls, nt);
                break;
            }
        }
        wk_threadpool_destroy(pool);
    }
    struct wk_threadpool *pool;
    CHECK_EQ_INT(wk_threadpool_create(0, &pool), WK_E_INVALID);
    struct sum_ctx c = {.n = 10};
    wk_threadpool_run(NULL, sum_task, &c);
    CHECK_EQ_INT(c.total, 45);
    wk_threadpool_destroy(NULL);
}

/* A worker whose job starts on the caller's CPU moves itself off it
 * (threadpool.c, move_off_caller): the worker is pinned to the caller's
 * CPU (as the kernel's wake-up placement sometimes leaves it), and its
 * next job must then run on another CPU of the process's, with its
 * affinity given back whole. Needs two CPUs. */
struct cpu_ctx {
    _Atomic int cpu[2];
    _Atomic int tid;
};

static void cpu_task(void *p, int ith, int nth)
{
    struct cpu_ctx *c = p;
    (void)nth;
    atomic_store(&c->cpu[ith], sched_getcpu());
    if (ith == 1) atomic_store(&c->tid, (int)syscall(SYS_gettid));
}

static void test_threadpool_moves_off_caller(void)
{
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all) != 0 || CPU_COUNT(&all) < 2) {
        printf("  fewer than two CPUs: the worker's move is not tested\n");
        return;
    }
    struct wk_threadpool *pool;
    CHECK_EQ_INT(wk_threadpool_create(2, &pool), WK_OK);
    struct cpu_ctx c;
    atomic_init(&c.tid, 0);
    wk_threadpool_run(pool, cpu_task, &c); /* the worker's thread id */
    const int me = sched_getcpu(), tid = atomic_load(&c.tid);
    CPU_ZERO(&one);
    CPU_SET(me, &one);
    /* the caller stays on its CPU; the worker is put there too */
    CHECK(tid > 0);
    if (sched_setaffinity(0, sizeof one, &one) != 0 || sched_setaffinity(tid, sizeof one, &one) != 0) {
        printf("  affinity cannot be set here: the worker's move is not tested\n");
        (void)sched_setaffinity(0, sizeof all, &all);
        wk_threadpool_destroy(pool);
        return;
    }
    usleep(5000); /* past the once-a-millisecond limit (the first job may have moved it already) */
    wk_threadpool_run(pool, cpu_task, &c);
    CHECK_EQ_INT(atomic_load(&c.cpu[0]), me);
    CHECK(atomic_load(&c.cpu[1]) != me && atomic_load(&c.cpu[1]) >= 0);
    cpu_set_t got;
    CHECK(sched_getaffinity(tid, sizeof got, &got) == 0 && CPU_EQUAL(&got, &all));
    CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
    wk_threadpool_destroy(pool);
}

/* wk_threadpool_weighted_bounds: equal ranges until every thread has noted
 * a speed, then ranges in proportion to the noted speeds (by hand: speeds
 * 1, 3, 2 split 600 into 100, 300, 200), a moving average weighing each
 * new note 1/8 (3 then 11 gives 3 + 8/8 = 4), a floor of a quarter of the
 * fastest, covering [0, n) exactly for any n; one range for a NULL pool
 * or a pool of one. */
static void test_threadpool_weighted_bounds(void)
{
    struct wk_threadpool *pool;
    CHECK_EQ_INT(wk_threadpool_create(3, &pool), WK_OK);
    int64_t b[4];
    wk_threadpool_weighted_bounds(pool, 600, b);
    CHECK(b[0] == 0 && b[1] == 200 && b[2] == 400 && b[3] == 600);
    wk_threadpool_note_speed(pool, 0, 1000.0, 1000); /* 1 unit/ns */
    wk_threadpool_note_speed(pool, 1, 3000.0, 1000);
    wk_threadpool_weighted_bounds(pool, 600, b); /* thread 2 not noted: still equal */
    CHECK(b[1] == 200 && b[2] == 400 && b[3] == 600);
    wk_threadpool_note_speed(pool, 2, 2000.0, 1000);
    wk_threadpool_weighted_bounds(pool, 600, b);
    CHECK(b[0] == 0 && b[1] == 100 && b[2] == 400 && b[3] == 600);
    wk_threadpool_note_speed(pool, 1, 11000.0, 1000); /* average 3 + (11 - 3) / 8 = 4 */
    wk_threadpool_weighted_bounds(pool, 700, b);
    CHECK(b[0] == 0 && b[1] == 100 && b[2] == 500 && b[3] == 700);
    wk_threadpool_note_speed(pool, 0, 5.0, 0); /* no time: ignored */
    /* a thread held up for many jobs in a row still keeps a quarter of the
     * fastest's share: speeds 1, 4, 2 with thread 0 floored at 1 -> 700 as
     * 1/7, 4/7, 2/7; then thread 0 near 0 counts as 1 (a quarter of 4) */
    for (int i = 0; i < 200; i++) wk_threadpool_note_speed(pool, 0, 1.0, 1000000000);
    wk_threadpool_weighted_bounds(pool, 700, b);
    CHECK(b[0] == 0 && b[1] == 100 && b[2] == 500 && b[3] == 700);
    for (int64_t n = 0; n < 40; n++) {
        wk_threadpool_weighted_bounds(pool, n, b);
        CHECK(b[0] == 0 && b[0] <= b[1] && b[1] <= b[2] && b[2] <= b[3] && b[3] == n);
    }
    wk_threadpool_destroy(pool);
    wk_threadpool_weighted_bounds(NULL, 9, b);
    CHECK(b[0] == 0 && b[1] == 9);
    CHECK_EQ_INT(wk_threadpool_create(1, &pool), WK_OK);
    wk_threadpool_note_speed(pool, 0, 10.0, 5);
    wk_threadpool_weighted_bounds(pool, 9, b);
    CHECK(b[0] == 0 && b[1] == 9);
    wk_threadpool_destroy(pool);
}

static void test_split_range_covers_exactly(void)
{
    for (int64_t n = 0; n < 50; n++)
        for (int nth = 1; nth < 7; nth++) {
            int64_t expect = 0;
            for (int i = 0; i < nth; i++) {
                int64_t lo, hi;
                wk_split_range(n, i, nth, &lo, &hi);
                CHECK_EQ_INT(lo, expect);
                CHECK(hi - lo == n / nth || hi - lo == n / nth + 1);
                expect = hi;
            }
            CHECK_EQ_INT(expect, n);
        }
}

static void test_cpu_features(void)
{
    const struct wk_cpu_features *f = wk_cpu_features_get();
    CHECK(f->n_cores >= 1);
    CHECK(!f->avx512 || f->avx2); /* avx512 implies avx2 here */
    CHECK(!f->avx512_vnni || f->avx512);
    CHECK(wk_cpu_features_get() == f);
}

static void test_checked_math(void)
{
    uint64_t r;
    CHECK(wk_add_u64(1, 2, &r) && r == 3);
    CHECK(!wk_add_u64(UINT64_MAX, 1, &r));
    CHECK(wk_mul_u64(1ull << 31, 1ull << 31, &r) && r == 1ull << 62);
    CHECK(!wk_mul_u64(1ull << 32, 1ull << 32, &r));
}

/* RFC 3629 well-formedness, and the U+FFFD replacement JSON output relies on. */
static void test_utf8_and_buf(void)
{
    const unsigned char ok[] = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\xA6\x99";
    CHECK_EQ_INT(wk_utf8_seq_len(ok, 1), 1);
    CHECK_EQ_INT(wk_utf8_seq_len(ok + 1, 2), 2);     /* é */
    CHECK_EQ_INT(wk_utf8_seq_len(ok + 3, 3), 3);     /* € */
    CHECK_EQ_INT(wk_utf8_seq_len(ok + 6, 4), 4);     /* 🦙 */
    CHECK_EQ_INT(wk_utf8_seq_len(ok + 6, 3), 0);     /* cut short */
    CHECK_EQ_INT(wk_utf8_seq_len((const unsigned char *)"\xC0\x80", 2), 0); /* overlong NUL */
    CHECK_EQ_INT(wk_utf8_seq_len((const unsigned char *)"\xED\xA0\x80", 3), 0); /* surrogate */
    CHECK_EQ_INT(wk_utf8_seq_len((const unsigned char *)"\xF4\x90\x80\x80", 4), 0); /* > U+10FFFF */
    CHECK_EQ_INT(wk_utf8_seq_len((const unsigned char *)"\x80", 1), 0);
    size_t n;
    char *s = wk_utf8_sanitize("a\xF0\x9F\xA6" "b\xC3\xA9", 7, &n); /* a, 3 bytes of a 4-byte char, b, é */
    CHECK_EQ_STR(s, "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b\xC3\xA9");
    CHECK_EQ_INT(n, strlen(s));
    wk_free(s);
    struct wk_buf b = {0};
    for (int i = 0; i < 1000; i++) CHECK(wk_buf_add(&b, "xyz", 3));
    CHECK_EQ_INT(b.len, 3000);
    CHECK(b.cap > b.len && b.p[b.len] == '\0' && memcmp(b.p + 2997, "xyz", 3) == 0);
    CHECK(wk_buf_add(&b, NULL, 0) && b.len == 3000);
    wk_free(b.p);
}

/* wk_f32_json writes what jansson writes for json_real(v) at
 * JSON_REAL_PRECISION(9) (the reference: jansson's own dump, glibc's
 * "%.9g" under it), and the text reads back as the same float32: zeros,
 * the floats on either side of every power of ten it handles and of the
 * magnitudes it hands to snprintf, subnormals, the largest float, and
 * random bit patterns and embedding-like values in [-1, 1]. */
static int f32_json_matches(float v)
{
    char mine[WK_F32_JSON_MAX];
    size_t n = wk_f32_json(v, mine);
    json_t *r = json_real(v);
    char *ref = r ? json_dumps(r, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    int ok = ref && n == strlen(ref) && strcmp(mine, ref) == 0 && (float)strtod(mine, NULL) == v;
    if (!ok) fprintf(stderr, "  wk_f32_json(%a): \"%s\", jansson \"%s\"\n", (double)v, n ? mine : "", ref ? ref : "");
    free(ref);
    json_decref(r);
    return ok;
}

static void test_f32_json(void)
{
    int bad = 0, n = 0;
    const float fixed[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 100.0f, 123456789.0f, 1e-5f, 1e-4f, 9.99999975e-5f, 0.1f,
                           1e-19f, 1e-20f, 999999999.0f, 1e9f, 1e10f, 3.4028235e38f, 1.17549435e-38f, 1.4e-45f,
                           16777216.0f, 0.000123456789f, -7.5e-7f};
    for (size_t i = 0; i < WK_ARRAY_LEN(fixed); i++, n++) bad += !f32_json_matches(fixed[i]);
    for (int e = -45; e <= 38; e++) {
        float p = (float)pow(10.0, e), lo = p, hi = p;
        for (int k = 0; k < 3; k++, n += 3) {
            bad += !f32_json_matches(lo) + !f32_json_matches(hi) + !f32_json_matches(-lo);
            lo = nextafterf(lo, 0), hi = nextafterf(hi, INFINITY);
        }
    }
    uint64_t seed = 2026;
    for (int i = 0; i < 100000; i++) {
        uint32_t bits = (uint32_t)check_rand_u64(&seed);
        float v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v)) {
            char out[WK_F32_JSON_MAX];
            CHECK_EQ_INT(wk_f32_json(v, out), 0);
            continue;
        }
        bad += !f32_json_matches(v), n++;
        bad += !f32_json_matches(check_rand_f32(&seed) * (i % 2 ? 1.0f : 0.01f)), n++;
    }
    if (bad) fprintf(stderr, "  %d of %d floats written otherwise than jansson\n", bad, n);
    CHECK_EQ_INT(bad, 0);
}

CHECK_MAIN(TEST(test_errors), TEST(test_utf8_and_buf), TEST(test_f32_json), TEST(test_alloc_counts_and_failures), TEST(test_arena),
           TEST(test_threadpool), TEST(test_threadpool_moves_off_caller), TEST(test_threadpool_weighted_bounds), TEST(test_split_range_covers_exactly), TEST(test_cpu_features),
           TEST(test_checked_math))
