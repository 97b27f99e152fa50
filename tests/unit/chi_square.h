/*
 * chi_square.h - a two-sample chi-square test of homogeneity for the
 * sampling-distribution tests of speculative decoding (test-speculative,
 * test-gemma4): histograms of outcomes and the p-value through the
 * regularized upper incomplete gamma function (below).
 * Test code, header-only.
 */
#ifndef WK_CHI_SQUARE_H
#define WK_CHI_SQUARE_H

#include "check.h"

#include "../../src/base/wk_base.h"

#include <math.h>
#include <string.h>

/* Q(a, x), the regularized upper incomplete gamma function: the series of
 * P(a, x) below x < a + 1, else the continued fraction of Q (Lentz's
 * method). The chi-square survival function is Q(dof / 2, chi / 2). */
static double gamma_q(double a, double x)
{
    if (x <= 0) return 1;
    double lg = lgamma(a);
    if (x < a + 1) {
        double term = 1 / a, sum = term;
        for (int n = 1; n < 1000 && fabs(term) > fabs(sum) * 1e-15; n++) {
            term *= x / (a + n);
            sum += term;
        }
        return 1 - sum * exp(-x + a * log(x) - lg);
    }
    double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;
    for (int i = 1; i < 1000; i++) {
        double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (fabs(d) < 1e-300) d = 1e-300;
        c = b + an / c;
        if (fabs(c) < 1e-300) c = 1e-300;
        d = 1 / d;
        double delta = d * c;
        h *= delta;
        if (fabs(delta - 1) < 1e-15) break;
    }
    return exp(-x + a * log(x) - lg) * h;
}

#define MAX_CELLS 4096

struct hist {
    int64_t key[MAX_CELLS];
    int count[MAX_CELLS];
    int n;
};

static void hist_add(struct hist *h, int64_t key)
{
    for (int i = 0; i < h->n; i++)
        if (h->key[i] == key) {
            h->count[i]++;
            return;
        }
    WK_ASSERT(h->n < MAX_CELLS);
    h->key[h->n] = key, h->count[h->n++] = 1;
}

static int hist_get(const struct hist *h, int64_t key)
{
    for (int i = 0; i < h->n; i++)
        if (h->key[i] == key) return h->count[i];
    return 0;
}

/* Two-sample chi-square test of homogeneity over the outcomes seen at
 * least 10 times in both samples together, the rarer ones pooled into one
 * cell; returns the p-value. */
static double chi_square_p(const struct hist *a, const struct hist *b, int *dof_out)
{
    double chi = 0, rare_a = 0, rare_b = 0;
    int cells = 0;
    struct hist all = {0};
    for (int i = 0; i < a->n; i++) hist_add(&all, a->key[i]);
    for (int i = 0; i < b->n; i++) hist_add(&all, b->key[i]);
    for (int i = 0; i < all.n; i++) {
        double x = hist_get(a, all.key[i]), y = hist_get(b, all.key[i]);
        if (x + y < 10) {
            rare_a += x, rare_b += y;
            continue;
        }
        /* equal sample sizes: expected (x + y) / 2 each */
        double e = (x + y) / 2;
        chi += (x - e) * (x - e) / e + (y - e) * (y - e) / e;
        cells++;
    }
    if (rare_a + rare_b >= 10) {
        double e = (rare_a + rare_b) / 2;
        chi += (rare_a - e) * (rare_a - e) / e + (rare_b - e) * (rare_b - e) / e;
        cells++;
    }
    *dof_out = cells - 1;
    return cells > 1 ? gamma_q((cells - 1) / 2.0, chi / 2) : 1;
}

#endif
