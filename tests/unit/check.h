/*
 * check.h - the unit-test harness: checks that print both values and the
 * location on failure, and a main() that runs the registered tests and
 * exits nonzero when any check failed. Header-only; one test file per
 * module (tests/unit/test-<module>.c).
 */
#ifndef WK_CHECK_H
#define WK_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_check_failures;
static int g_check_count;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        g_check_count++;                                                                           \
        if (!(cond)) {                                                                             \
            g_check_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                      \
        g_check_count++;                                                                           \
        if (va_ != vb_) {                                                                          \
            g_check_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK_EQ_INT failed: %s = %lld, %s = %lld\n", __FILE__,        \
                    __LINE__, #a, va_, #b, vb_);                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                         \
    do {                                                                                           \
        const char *sa_ = (a), *sb_ = (b);                                                         \
        g_check_count++;                                                                           \
        if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                                               \
            g_check_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK_EQ_STR failed: %s = \"%s\", %s = \"%s\"\n", __FILE__,    \
                    __LINE__, #a, sa_ ? sa_ : "(null)", #b, sb_ ? sb_ : "(null)");                 \
        }                                                                                          \
    } while (0)

/* |a - b| <= tol_abs + tol_rel * |b| */
#define CHECK_NEAR(a, b, tol_abs, tol_rel)                                                         \
    do {                                                                                           \
        double va_ = (double)(a), vb_ = (double)(b);                                               \
        g_check_count++;                                                                           \
        if (!(fabs(va_ - vb_) <= (tol_abs) + (tol_rel)*fabs(vb_))) {                               \
            g_check_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.9g, %s = %.9g\n", __FILE__,          \
                    __LINE__, #a, va_, #b, vb_);                                                   \
        }                                                                                          \
    } while (0)

/* Message contains a substring. */
#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        const char *h_ = (hay), *n_ = (needle);                                                    \
        g_check_count++;                                                                           \
        if (!h_ || !strstr(h_, n_)) {                                                              \
            g_check_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK_CONTAINS failed: \"%s\" does not contain \"%s\"\n",      \
                    __FILE__, __LINE__, h_ ? h_ : "(null)", n_);                                   \
        }                                                                                          \
    } while (0)

typedef void (*check_test_fn)(void);
struct check_test {
    const char *name;
    check_test_fn fn;
};

/* Runs the tests (optionally only those whose name contains argv[1]). */
static inline int check_main(int argc, char **argv, const struct check_test *tests, int n)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    for (int i = 0; i < n; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        int before = g_check_failures;
        tests[i].fn();
        printf("%-40s %s\n", tests[i].name, g_check_failures == before ? "ok" : "FAILED");
    }
    printf("%d checks, %d failed\n", g_check_count, g_check_failures);
    return g_check_failures ? 1 : 0;
}

#define CHECK_MAIN(...)                                                                            \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        static const struct check_test tests_[] = {__VA_ARGS__};                                   \
        return check_main(argc, argv, tests_, (int)(sizeof tests_ / sizeof tests_[0]));            \
    }
#define TEST(fn) {#fn, fn}

/* Deterministic PRNG for tests (splitmix64). */
static inline uint64_t check_rand_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Uniform in [-1, 1). */
static inline float check_rand_f32(uint64_t *s)
{
    return (float)((check_rand_u64(s) >> 40) * (1.0 / 8388608.0) - 1.0);
}

#endif
