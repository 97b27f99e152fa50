/*
 * batch-decode.c - the engine's decode rate with N sequences stepped
 * together (what wk_slots' decode forward runs each step: one row per
 * sequence, computed by the one-token kernels), against one sequence,
 * without HTTP, clients, sampling or prefill in the way.
 *
 * For each N: a context with N sequences of n_ctx positions each; every
 * sequence is given the same --prompt-token prompt (default 32; one
 * prefill each, so each step's attention reads that many cached positions
 * and more for every sequence; --ctx C sizes each sequence's context
 * (default: just the prompt and the steps; a server's slot holds num_ctx
 * positions, 4096 unless set), --kv f16 keeps it in halves (q8_0: q8_0 blocks)
 * (wk_context_params.kv_type), then
 * --steps batches of N rows (one per sequence, the next token of each, its
 * logits wanted) are timed. Reported: ms per step, tokens/s (N rows per
 * step) and the ratio to N = 1; the best of --reps runs.
 *
 * Usage: build/release/bench/batch-decode MODEL.gguf [-N 1,2,4,8,16]
 *        [--threads 2] [--steps 32] [--reps 3] [--prompt 32] [--ctx C] [--kv f32|f16|q8_0]
 * (a figure, not a test: BENCHMARKS.md has the numbers)
 */
#include "../src/model/wk_model.h"

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

/* Seconds for steps decode batches of n rows on a fresh context, or < 0
 * on an error (printed). */
static double run(struct wk_model *m, int n, int threads, int steps, int np, int n_ctx, enum wk_dtype kv)
{
    struct wk_context_params p = wk_context_params_default();
    p.n_ctx = n_ctx, p.n_threads = threads, p.n_seq_max = n, p.kv_type = kv;
    struct wk_context *ctx;
    struct wk_error err;
    if (wk_context_create(m, &p, &ctx, &err)) {
        fprintf(stderr, "batch-decode: %s\n", err.msg);
        return -1;
    }
    const int32_t n_vocab = wk_model_hparams(m)->n_vocab;
    float *logits = malloc((size_t)n * (size_t)n_vocab * sizeof(float));
    int32_t tok[WK_SEQ_MAX], pos[WK_SEQ_MAX], seq[WK_SEQ_MAX];
    bool want[WK_SEQ_MAX];
    int32_t *prompt = malloc((size_t)np * sizeof(int32_t)), *ppos = malloc((size_t)np * sizeof(int32_t)),
            *pseq = malloc((size_t)np * sizeof(int32_t));
    bool *pwant = calloc((size_t)np, sizeof(bool));
    double t = -1;
    if (!prompt || !ppos || !pseq || !pwant) {
        fprintf(stderr, "batch-decode: out of memory\n");
        goto done;
    }
    for (int i = 0; i < np; i++) prompt[i] = 100 + 37 * i % (n_vocab - 100);
    for (int s = 0; s < n && logits; s++) {
        for (int i = 0; i < np; i++) ppos[i] = i, pseq[i] = s;
        pwant[np - 1] = true;
        struct wk_batch b = {.n_tokens = np, .tokens = prompt, .pos = ppos, .seq_id = pseq, .logits = pwant};
        if (wk_context_decode_batch(ctx, &b, logits, NULL, &err)) goto fail;
    }
    for (int s = 0; s < n; s++) tok[s] = 200 + s, pos[s] = np, seq[s] = s, want[s] = true;
    const double t0 = now();
    for (int k = 0; k < steps; k++) {
        struct wk_batch b = {.n_tokens = n, .tokens = tok, .pos = pos, .seq_id = seq, .logits = want};
        if (wk_context_decode_batch(ctx, &b, logits, NULL, &err)) goto fail;
        for (int s = 0; s < n; s++) pos[s]++, tok[s] = (tok[s] * 31 + 7) % n_vocab;
    }
    t = now() - t0;
    goto done;
fail:
    fprintf(stderr, "batch-decode: %s\n", err.msg);
done:
    free(prompt), free(ppos), free(pseq), free(pwant);
    free(logits);
    wk_context_destroy(ctx);
    return t;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *ns = "1,2,4,8,16";
    int threads = 2, steps = 32, reps = 3, np = 32, ctx = 0;
    enum wk_dtype kv = WK_DTYPE_F32;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-N") && i + 1 < argc) ns = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--prompt") && i + 1 < argc) np = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ctx") && i + 1 < argc) ctx = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kv") && i + 1 < argc && wk_kv_type_parse(argv[i + 1], &kv))
            i++;
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else {
            fprintf(stderr, "usage: batch-decode MODEL.gguf [-N 1,2,4,8,16] [--threads 2] [--steps 32] [--reps 3] [--prompt 32] [--ctx C] [--kv f32|f16|q8_0]\n");
            return 2;
        }
    }
    if (!path || threads < 1 || steps < 1 || reps < 1 || np < 1) {
        fprintf(stderr, "usage: batch-decode MODEL.gguf [-N 1,2,4,8,16] [--threads 2] [--steps 32] [--reps 3] [--prompt 32] [--ctx C] [--kv f32|f16|q8_0]\n");
        return 2;
    }
    if (ctx < np + steps + 1) ctx = np + steps + 1; /* the prompt and the steps fit */
    struct wk_model *m;
    struct wk_error err;
    if (wk_model_load(path, &m, &err)) {
        fprintf(stderr, "batch-decode: %s\n", err.msg);
        return 1;
    }
    printf("%s, %d threads, %d-token prompts, context %d (%s KV cache), %d steps, best of %d\n| N | ms/step | tokens/s | vs N=1 |\n"
           "|---:|---:|---:|---:|\n",
           path, threads, np, ctx, wk_kv_type_name(kv), steps, reps);
    double base = 0;
    for (const char *c = ns; *c;) {
        int n = atoi(c);
        if (n < 1 || n > WK_SEQ_MAX) {
            fprintf(stderr, "batch-decode: N %d outside 1..%d\n", n, WK_SEQ_MAX);
            return 2;
        }
        double best = -1;
        for (int r = 0; r < reps; r++) {
            double t = run(m, n, threads, steps, np, ctx, kv);
            if (t < 0) return 1;
            if (best < 0 || t < best) best = t;
        }
        double tps = n * steps / best;
        if (!base) base = tps;
        printf("| %d | %.2f | %.1f | %.2fx |\n", n, 1e3 * best / steps, tps, tps / base);
        fflush(stdout);
        c = strchr(c, ',');
        if (!c) break;
        c++;
    }
    wk_model_destroy(m);
    return 0;
}
