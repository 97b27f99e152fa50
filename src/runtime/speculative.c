/*
 * speculative.c - prompt lookup's drafts (wk_lookup_draft), and how many
 * tokens to draft: the draft length controller of wk_runtime.h
 * (wk_spec_ctl), from the running acceptance rate and the
 * measured costs of drafting, verifying and plain decoding. The expected
 * tokens per round with per-token acceptance a and k drafts is
 * (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023, eq. 1).
 *
 * Verification is not linear in its tokens: the float kernels load each
 * weight once for up to four tokens, so verifying 2-4 tokens costs about a
 * plain step and the fifth starts another pass. So the cost of verifying n
 * tokens is kept per n, measured; an n not yet measured is estimated from
 * the largest measured one below it plus the mean extra cost per token
 * seen so far. The estimate errs low (the extra cost of tokens that
 * shared a pass is near 0), so unmeasured lengths get tried and measured:
 * that is the controller's exploration.
 */
#include "wk_runtime.h"

#include <math.h>

#define DECAY 0.9   /* per round, of the acceptance counts */
#define SMOOTH 0.25 /* weight of a new timing in its running mean */

void wk_spec_ctl_init(struct wk_spec_ctl *c)
{
    /* a prior of two trials at 0.7 until rounds are seen */
    *c = (struct wk_spec_ctl){.acc = 1.4, .trials = 2.0};
}

static void smooth(double *mean, double x)
{
    *mean = *mean > 0 ? (1 - SMOOTH) * *mean + SMOOTH * x : x;
}

/* Expected tokens a round of k drafts yields (accepted ones plus the
 * token the target adds), at acceptance a. */
static double expected_tokens(double a, int32_t k)
{
    if (a >= 1) return k + 1;
    return (1 - pow(a, k + 1)) / (1 - a);
}

/* The cost of verifying n tokens: measured, or estimated (top of file). */
static double verify_cost(const struct wk_spec_ctl *c, int32_t n)
{
    if (c->t_verify[n] > 0) return c->t_verify[n];
    int32_t m = n - 1;
    while (m > 1 && c->t_verify[m] <= 0) m--;
    double base = m > 1 ? c->t_verify[m] : c->t_step;
    return base + (n - m) * c->t_extra;
}

void wk_spec_ctl_begin(struct wk_spec_ctl *c)
{
    c->off = false, c->failed_probes = 0, c->req_rounds = 0;
}

int32_t wk_spec_ctl_k(struct wk_spec_ctl *c, int32_t k_max)
{
    if (k_max < 1 || c->off || c->pause > 0 || c->t_step <= 0) return 0;
    k_max = WK_MIN(k_max, WK_VERIFY_MAX - 1);
    const double a = wk_spec_ctl_acceptance(c);
    if (c->probe || c->t_draft <= 0) {
        c->probed = true;
        return WK_MIN(k_max, 3);
    }
    int32_t best = 0;
    double best_rate = 1 / c->t_step, ideal = 0; /* plain decoding; every draft accepted */
    for (int32_t k = 1; k <= k_max; k++) {
        double cost = k * c->t_draft + verify_cost(c, k + 1);
        double rate = expected_tokens(a, k) / cost;
        if (rate > best_rate) best = k, best_rate = rate;
        ideal = fmax(ideal, (k + 1) / cost);
    }
    if (best == 0) {
        /* each pause that follows a probe doubles; the first of a request
         * that has seen only its first rounds is short (the tokens right
         * after a prompt are often the draft's hardest: two rejected
         * rounds there say little about the rest); and since the draft's
         * catch-up after a pause costs about a prefill of the tokens it
         * missed, WK_SPEC_PROBES probes in a row that do not pay switch
         * speculation off until the next request (wk_spec_ctl_begin) */
        const int32_t first = c->req_rounds <= 2 ? WK_SPEC_PAUSE / 4 : WK_SPEC_PAUSE;
        c->pause_len = c->pause_len > 0 ? WK_MIN(2 * c->pause_len, 64 * WK_SPEC_PAUSE) : first;
        c->pause = c->pause_len;
        if (c->probed && ++c->failed_probes >= WK_SPEC_PROBES) c->off = true;
        /* a draft so costly that even accepting everything would barely
         * beat plain decoding is not worth probing again this request */
        if (ideal < WK_SPEC_WORTH / c->t_step) c->off = true;
    }
    c->probed = false;
    return best;
}

double wk_spec_ctl_acceptance(const struct wk_spec_ctl *c)
{
    return c->trials > 0 ? c->acc / c->trials : 0;
}

void wk_spec_ctl_count(struct wk_spec_ctl *c, int32_t k, int32_t accepted)
{
    if (k < 1 || k >= WK_VERIFY_MAX) return;
    c->probe = false;
    c->req_rounds++;
    c->acc = DECAY * c->acc + accepted;
    if (accepted == k) c->pause_len = 0, c->failed_probes = 0; /* a full round: pauses start short again */
    c->trials = DECAY * c->trials + accepted + (accepted < k);
}

void wk_spec_ctl_update(struct wk_spec_ctl *c, int32_t k, int32_t accepted, int64_t draft_ns,
                        int64_t verify_ns)
{
    if (k < 1 || k >= WK_VERIFY_MAX) return;
    wk_spec_ctl_count(c, k, accepted);
    /* a session's first round also pays for first touches of the draft's
     * cache and the verification buffers: its times would say the draft
     * costs several times what it does (then t_draft stays 0 and the next
     * round probes again) */
    if (c->n_rounds++ == 0) return;
    smooth(&c->t_draft, (double)draft_ns / k);
    smooth(&c->t_verify[k + 1], (double)verify_ns);
    if (c->t_step > 0) {
        double extra = ((double)verify_ns - c->t_step) / k;
        smooth(&c->t_extra, extra > 0 ? extra : 0);
    }
}

void wk_spec_ctl_plain(struct wk_spec_ctl *c, int64_t step_ns)
{
    smooth(&c->t_step, (double)step_ns);
    if (c->pause > 0 && --c->pause == 0) {
        /* try again, weighing new rounds more than the ones that paused it */
        c->acc *= 0.5, c->trials *= 0.5;
        c->probe = true;
    }
}

void wk_rows_cost_add(struct wk_rows_cost *c, int32_t rows, int64_t ns)
{
    if (rows < 1 || rows > WK_ROWS_COST_MAX || c->seen[rows]++ == 0) return; /* the first: first touches */
    smooth(&c->t[rows], (double)ns);
    int32_t m = rows - 1;
    while (m > 0 && c->t[m] <= 0) m--;
    if (m > 0) {
        const double extra = (c->t[rows] - c->t[m]) / (rows - m);
        smooth(&c->extra, extra > 0 ? extra : 0);
    }
}

double wk_rows_cost_est(const struct wk_rows_cost *c, int32_t rows)
{
    rows = WK_MAX(1, WK_MIN(rows, WK_ROWS_COST_MAX));
    if (c->t[rows] > 0) return c->t[rows];
    int32_t m = rows - 1, M = rows + 1;
    while (m > 0 && c->t[m] <= 0) m--;
    while (M <= WK_ROWS_COST_MAX && c->t[M] <= 0) M++;
    if (m > 0 && M <= WK_ROWS_COST_MAX) return c->t[m] + (c->t[M] - c->t[m]) * (rows - m) / (M - m);
    if (m > 0) return c->t[m] + (rows - m) * c->extra;
    return M <= WK_ROWS_COST_MAX ? c->t[M] : 0; /* only larger counts measured: the smallest of them */
}

int32_t wk_spec_share(const struct wk_rows_cost *c, int32_t n, const double *acc, const int32_t *k_max,
                      int32_t budget, int32_t *k)
{
    for (int32_t i = 0; i < n; i++) k[i] = 0;
    budget = WK_MIN(budget, WK_ROWS_COST_MAX - n);
    const double t0 = wk_rows_cost_est(c, n);
    if (n < 1 || budget < 1 || t0 <= 0) return 0;
    /* drafts added best chance first, each one's slot kept; then the ones
     * past the best count given back */
    int32_t picked[WK_ROWS_COST_MAX], d = 0, best = 0;
    double tokens = n, best_rate = n / t0;
    while (d < budget) {
        int32_t pick = -1;
        double gain = 0;
        for (int32_t i = 0; i < n; i++) {
            const double g = k[i] < k_max[i] ? pow(WK_MAX(0.0, WK_MIN(acc[i], 1.0)), k[i] + 1) : -1;
            if (g >= 0 && (pick < 0 || g > gain)) pick = i, gain = g;
        }
        if (pick < 0) break;
        k[pick]++, tokens += gain, picked[d++] = pick;
        const double rate = tokens / wk_rows_cost_est(c, n + d);
        if (rate > best_rate) best = d, best_rate = rate;
    }
    while (d > best) k[picked[--d]]--;
    return best;
}

/* Token i of the sequence hist [n_hist] then last. */
static inline int32_t seq_at(const int32_t *hist, int32_t n_hist, int32_t last, int32_t i)
{
    return i < n_hist ? hist[i] : last;
}

int32_t wk_lookup_draft(const int32_t *hist, int32_t n_hist, int32_t last, int32_t k, int32_t *out)
{
    const int32_t len = n_hist + 1;
    if (k < 1) return 0;
    for (int32_t n = WK_LOOKUP_NGRAM_MAX; n >= WK_LOOKUP_NGRAM_MIN; n--) {
        const int32_t suffix = len - n; /* where the last n tokens start */
        if (suffix < 1) continue;
        /* earlier occurrences start at j < suffix, most recent first */
        for (int32_t j = suffix - 1; j >= 0; j--) {
            int32_t t = n - 1; /* compare from the end: last differs most often */
            while (t >= 0 && seq_at(hist, n_hist, last, j + t) == seq_at(hist, n_hist, last, suffix + t)) t--;
            if (t >= 0) continue;
            /* position len + m repeats position j + n + m: past the
             * sequence's end that is a token drafted here (a pattern of
             * period suffix - j, continued) */
            for (int32_t m = 0; m < k; m++) {
                const int32_t src = j + n + m;
                out[m] = src < len ? seq_at(hist, n_hist, last, src) : out[src - len];
            }
            return k;
        }
    }
    return 0;
}
