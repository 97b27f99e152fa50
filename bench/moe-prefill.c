/*
 * moe-prefill.c - prefill tokens/s of a mixture-of-experts model with its
 * tokens grouped by expert (what wick does: each chosen expert's weights
 * read once per chunk, one matmul of all the tokens that chose it) against
 * a naive per-token expert loop (WICK_MOE_NAIVE=1: each token's k experts
 * one matmul of one row each, an expert's weights read once per token that
 * chose it), on the same model, prompt and threads.
 *
 * Each mode gets its own context (WICK_MOE_NAIVE is read at context
 * creation); a run is one prefill of n tokens from an empty cache (no
 * logits but the last token's); the best of reps runs is reported, after
 * one warm-up run. The two modes' last-token logits are compared (the sums
 * over a token's experts run in another order, so they agree to rounding,
 * not bit for bit).
 *
 * Usage: build/release/bench/moe-prefill [MODEL] [--tokens 512] [--threads 2] [--reps 5]
 * (MODEL defaults to the tiny GLM-4-MoE-Lite, tests/golden/glm4-moe-lite/hf;
 * a figure, not a test: BENCHMARKS.md has the numbers)
 */
#include "../src/model/wk_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best prefill time of reps runs (after a warm-up) in one mode; the last
 * run's logits into logits [n_vocab]. */
static double run_mode(struct wk_model *m, bool naive, const int32_t *ids, int n, int threads, int reps, float *logits)
{
    setenv("WICK_MOE_NAIVE", naive ? "1" : "0", 1);
    struct wk_context_params p = wk_context_params_default();
    p.n_ctx = n + 1;
    p.n_ubatch = n;
    p.n_threads = threads;
    struct wk_context *c = NULL;
    struct wk_error err;
    if (wk_context_create(m, &p, &c, &err)) {
        fprintf(stderr, "moe-prefill: %s\n", err.msg);
        exit(1);
    }
    double best = INFINITY;
    for (int r = 0; r <= reps; r++) {
        wk_context_truncate(c, 0);
        double t0 = now();
        if (wk_context_decode(c, ids, n, logits, NULL, &err)) {
            fprintf(stderr, "moe-prefill: %s\n", err.msg);
            exit(1);
        }
        double dt = now() - t0;
        if (r > 0 && dt < best) best = dt; /* run 0 warms up */
    }
    wk_context_destroy(c);
    return best;
}

int main(int argc, char **argv)
{
    const char *path = "tests/golden/glm4-moe-lite/hf";
    int n = 512, threads = 2, reps = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tokens") == 0 && i + 1 < argc) n = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (argv[i][0] != '-') path = argv[i];
        else {
            fprintf(stderr, "usage: moe-prefill [MODEL] [--tokens N] [--threads N] [--reps N]\n");
            return 2;
        }
    }
    struct wk_model *m = NULL;
    struct wk_error err;
    if (wk_model_load(path, &m, &err)) {
        fprintf(stderr, "moe-prefill: %s\n", err.msg);
        return 1;
    }
    const struct wk_hparams *hp = wk_model_hparams(m);
    if (hp->n_expert == 0) {
        fprintf(stderr, "moe-prefill: %s has no experts\n", path);
        return 1;
    }
    if (n < 1 || n >= hp->n_ctx_train) n = hp->n_ctx_train - 1;
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    uint64_t s = 12345;
    for (int i = 0; i < n; i++) { /* a fixed pseudo-random prompt: varied experts */
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((s >> 33) % (uint64_t)hp->n_vocab);
    }
    float *a = malloc((size_t)hp->n_vocab * sizeof *a), *b = malloc((size_t)hp->n_vocab * sizeof *b);
    double grouped = run_mode(m, false, ids, n, threads, reps, a);
    double naive = run_mode(m, true, ids, n, threads, reps, b);
    double diff = 0, scale = 0;
    for (int i = 0; i < hp->n_vocab; i++) diff = fmax(diff, fabs((double)a[i] - b[i])), scale = fmax(scale, fabs(a[i]));
    printf("model %s: %d experts, %d per token, %d layers; %d tokens, %d threads, best of %d\n", path, hp->n_expert,
           hp->n_expert_used, hp->n_layer, n, threads, reps);
    printf("  grouped by expert  %9.0f tokens/s  (%.2f ms)\n", n / grouped, 1e3 * grouped);
    printf("  per-token loop     %9.0f tokens/s  (%.2f ms)\n", n / naive, 1e3 * naive);
    printf("  speedup %.2fx; last-token logits differ by %.2g relative\n", naive / grouped, diff / scale);
    free(ids), free(a), free(b);
    wk_model_destroy(m);
    return 0;
}
