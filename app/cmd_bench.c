/*
 * cmd_bench.c - `wick bench MODEL`: prompt-processing and generation speed,
 * measured the way llama.cpp's llama-bench measures them, so the two can
 * be set side by side (bench/compare).
 *
 * Two tests, each from an empty KV cache:
 *   ppP  decode one batch of P tokens (wk_context_decode chunks it by
 *        n_ubatch = 512) and compute the last token's logits;
 *   tgN  decode N tokens one at a time, with logits after each.
 * Token ids are pseudo-random valid ids from a fixed seed (the forward pass
 * costs the same for any id; nothing is sampled). Each test runs once as a
 * warm-up (pages the mapped weights in, settles the thread pool), then -r
 * times; the rate of each repetition is tokens / seconds and the report is
 * the mean and sample standard deviation of those rates, as llama-bench's
 * avg_ts and stddev_ts. Peak RSS is the process's getrusage(RUSAGE_SELF)
 * ru_maxrss at the end: weights paged in from the mapping, KV cache and
 * scratch.
 *
 * Output: a markdown table like llama-bench's, or with --json a JSON array
 * with one object per test (llama-bench's field names where they exist).
 */
#include "cli.h"

#include "../src/io/wk_options.h"

#include "../src/model/wk_model.h"
#include "../src/runtime/wk_runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define BENCH_SEED 0x5eed1234abcdULL
#define BENCH_MAX_TOKENS (1 << 16)
#define BENCH_CTX_MARGIN 16

struct bench_opts {
    const char *model;
    int32_t n_prompt, n_gen, n_threads, n_reps;
    int32_t logprobs; /* -1 = off; else tg also computes logprobs with this many alternatives */
    enum wk_dtype kv_type; /* the KV cache's elements (--kv-cache-type) */
    bool json;
};

struct bench_result {
    const char *name; /* "pp" or "tg" */
    int32_t n_prompt, n_gen;
    double *ts;       /* [n_reps] tokens/s of each repetition */
    int64_t *ns;      /* [n_reps] wall time of each repetition */
    double avg_ts, stddev_ts;
    int64_t avg_ns, stddev_ns;
};

static void bench_usage(FILE *f)
{
    fprintf(f,
            "Usage: wick bench MODEL.gguf [options]\n\n"
            "Prompt processing (ppP: one batch of P tokens) and generation (tgN: N tokens one\n"
            "at a time) in tokens/s, each from an empty KV cache, mean and standard deviation\n"
            "over the repetitions after one warm-up run, as llama-bench measures them.\n\n"
            "Options:\n"
            "  -p, --n-prompt P       prompt tokens, 0 = skip the pp test (default 512)\n"
            "  -n, --n-gen N          generated tokens, 0 = skip the tg test (default 128)\n"
            "  -t, --threads T        compute threads (default: the CPUs this process may use)\n"
            "  -r, --repetitions R    timed repetitions of each test (default 5)\n"
            "  --logprobs K           tg also computes each token's logprobs and K alternatives\n"
            "                         (0..20), as generation with logprobs on does\n"
            "  --kv-cache-type T      the KV cache's elements: f32 (default), f16 or q8_0\n"
            "  --json                 print a JSON array (one object per test) instead of a table\n");
}

/* Matches short or long option name (argv[*i] == short, long, or long=...). */
static bool opt(int argc, char **argv, int *i, const char *short_name, const char *long_name,
                const char **v, bool *bad)
{
    return cli_opt_value(argc, argv, i, short_name, v, bad, "bench") ||
           cli_opt_value(argc, argv, i, long_name, v, bad, "bench");
}

/* Parses argv (argv[0] == "bench"). Returns -1 to continue, else an exit code. */
static int parse_args(int argc, char **argv, struct bench_opts *o)
{
    *o = (struct bench_opts){.n_prompt = 512, .n_gen = 128, .n_threads = 0, .n_reps = 5,
                             .logprobs = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        bool bad = false;
        int64_t x;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            bench_usage(stdout);
            return WK_EXIT_OK;
        } else if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (opt(argc, argv, &i, "-p", "--n-prompt", &v, &bad)) {
            if (bad || !cli_parse_i64("bench", "-p", v, 0, BENCH_MAX_TOKENS, &x))
                return WK_EXIT_USAGE;
            o->n_prompt = (int32_t)x;
        } else if (opt(argc, argv, &i, "-n", "--n-gen", &v, &bad)) {
            if (bad || !cli_parse_i64("bench", "-n", v, 0, BENCH_MAX_TOKENS, &x))
                return WK_EXIT_USAGE;
            o->n_gen = (int32_t)x;
        } else if (opt(argc, argv, &i, "-t", "--threads", &v, &bad)) {
            if (bad || !cli_parse_i64("bench", "-t", v, 1, WK_MAX_THREADS, &x)) return WK_EXIT_USAGE;
            o->n_threads = (int32_t)x;
        } else if (cli_opt_value(argc, argv, &i, "--logprobs", &v, &bad, "bench")) {
            if (bad || !cli_parse_i64("bench", "--logprobs", v, 0, WK_MAX_TOP_LOGPROBS, &x))
                return WK_EXIT_USAGE;
            o->logprobs = (int32_t)x;
        } else if (cli_opt_value(argc, argv, &i, "--kv-cache-type", &v, &bad, "bench")) {
            if (bad) return WK_EXIT_USAGE;
            if (!*v || !wk_kv_type_parse(v, &o->kv_type)) {
                fprintf(stderr, "wick bench: --kv-cache-type must be f32, f16 or q8_0, not '%s'\n", v);
                return WK_EXIT_USAGE;
            }
        } else if (opt(argc, argv, &i, "-r", "--repetitions", &v, &bad)) {
            if (bad || !cli_parse_i64("bench", "-r", v, 1, 1000, &x)) return WK_EXIT_USAGE;
            o->n_reps = (int32_t)x;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "wick bench: unknown option '%s' (see wick bench --help)\n", a);
            return WK_EXIT_USAGE;
        } else if (!o->model) {
            o->model = a;
        } else {
            fprintf(stderr, "wick bench: unexpected argument '%s'\n", a);
            return WK_EXIT_USAGE;
        }
    }
    if (!o->model) {
        fprintf(stderr, "wick bench: missing MODEL\n");
        bench_usage(stderr);
        return WK_EXIT_USAGE;
    }
    if (o->n_prompt == 0 && o->n_gen == 0) {
        fprintf(stderr, "wick bench: nothing to measure: -p and -n are both 0\n");
        return WK_EXIT_USAGE;
    }
    return -1;
}

/* splitmix64: a fixed, seedable stream of ids, the same on every run. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* One timed run of a test from an empty cache. Returns the wall time in ns,
 * or -1 (message printed) when decode fails. tokens: [max(P, N)] ids. */
static int64_t run_once(struct wk_context *ctx, const struct bench_result *r,
                        const int32_t *tokens, float *logits, int32_t n_vocab, int32_t logprobs)
{
    struct wk_error err;
    wk_error_clear(&err);
    wk_context_truncate(ctx, 0);
    enum wk_status st = WK_OK;
    int64_t t0 = wk_time_ns();
    if (r->n_prompt > 0) {
        st = wk_context_decode(ctx, tokens, r->n_prompt, logits, NULL, &err);
    } else {
        for (int32_t i = 0; i < r->n_gen && !st; i++) {
            st = wk_context_decode(ctx, tokens + i, 1, logits, NULL, &err);
            if (logprobs >= 0) {
                struct wk_token_logprobs lp;
                wk_logprobs_compute(logits, n_vocab, tokens[i], logprobs, &lp);
            }
        }
    }
    int64_t ns = wk_time_ns() - t0;
    if (st) {
        fprintf(stderr, "wick bench: %s: %s\n", r->name, err.msg[0] ? err.msg : wk_status_str(st));
        return -1;
    }
    return ns > 0 ? ns : 1;
}

static void summarize(struct bench_result *r, int32_t n_reps)
{
    double sum = 0, sum_ns = 0;
    for (int32_t i = 0; i < n_reps; i++) {
        sum += r->ts[i];
        sum_ns += (double)r->ns[i];
    }
    r->avg_ts = sum / n_reps;
    double avg_ns = sum_ns / n_reps, var = 0, var_ns = 0;
    for (int32_t i = 0; i < n_reps; i++) {
        var += (r->ts[i] - r->avg_ts) * (r->ts[i] - r->avg_ts);
        var_ns += ((double)r->ns[i] - avg_ns) * ((double)r->ns[i] - avg_ns);
    }
    /* sample standard deviation (n - 1), as llama-bench; 0 for one sample */
    r->stddev_ts = n_reps > 1 ? sqrt(var / (n_reps - 1)) : 0;
    r->avg_ns = (int64_t)llround(avg_ns);
    r->stddev_ns = n_reps > 1 ? (int64_t)llround(sqrt(var_ns / (n_reps - 1))) : 0;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void print_json(const struct bench_opts *o, const struct wk_model *m,
                       const struct bench_result *res, int n_res, int32_t n_threads,
                       uint64_t peak_rss)
{
    const struct wk_hparams *hp = wk_model_hparams(m);
    printf("[\n");
    for (int k = 0; k < n_res; k++) {
        const struct bench_result *r = &res[k];
        printf("  {\n    \"model\": ");
        const char *name = base_name(o->model);
        cli_print_json_string(stdout, name, strlen(name));
        printf(",\n    \"model_filename\": ");
        cli_print_json_string(stdout, o->model, strlen(o->model));
        printf(",\n    \"model_type\": ");
        cli_print_json_string(stdout, hp->arch_name, strlen(hp->arch_name));
        printf(",\n    \"model_size\": %llu,\n", (unsigned long long)wk_model_weight_bytes(m));
        printf("    \"isa\": \"%s\",\n", wk_cpu_kernels_get()->isa);
        printf("    \"n_threads\": %d,\n    \"n_ubatch\": 512,\n", n_threads);
        const char *kvt = wk_kv_type_name(o->kv_type);
        printf("    \"type_k\": \"%s\",\n    \"type_v\": \"%s\",\n", kvt, kvt); /* llama-bench's names */
        printf("    \"n_prompt\": %d,\n    \"n_gen\": %d,\n", r->n_prompt, r->n_gen);
        printf("    \"logprobs\": %d,\n", r->n_gen > 0 ? o->logprobs : -1);
        printf("    \"avg_ns\": %lld,\n    \"stddev_ns\": %lld,\n", (long long)r->avg_ns,
               (long long)r->stddev_ns);
        printf("    \"avg_ts\": %.6f,\n    \"stddev_ts\": %.6f,\n", r->avg_ts, r->stddev_ts);
        printf("    \"samples_ns\": [");
        for (int32_t i = 0; i < o->n_reps; i++)
            printf("%s%lld", i ? ", " : " ", (long long)r->ns[i]);
        printf(" ],\n    \"samples_ts\": [");
        for (int32_t i = 0; i < o->n_reps; i++) printf("%s%.6f", i ? ", " : " ", r->ts[i]);
        printf(" ],\n    \"peak_rss_bytes\": %llu\n  }%s\n", (unsigned long long)peak_rss,
               k + 1 < n_res ? "," : "");
    }
    printf("]\n");
}

static void print_table(const struct bench_opts *o, const struct wk_model *m,
                        const struct bench_result *res, int n_res, int32_t n_threads,
                        uint64_t peak_rss)
{
    const struct wk_hparams *hp = wk_model_hparams(m);
    printf("| model | size | isa | threads | test | t/s |\n");
    printf("| --- | ---: | --- | ---: | ---: | ---: |\n");
    for (int k = 0; k < n_res; k++) {
        const struct bench_result *r = &res[k];
        char lp[32] = "";
        if (r->n_gen > 0 && o->logprobs >= 0) snprintf(lp, sizeof lp, " +logprobs %d", o->logprobs);
        printf("| %s %s | %.2f MiB | %s | %d | %s%d%s | %.2f ± %.2f |\n", hp->arch_name,
               base_name(o->model), (double)wk_model_weight_bytes(m) / (1 << 20),
               wk_cpu_kernels_get()->isa, n_threads, r->name,
               r->n_prompt > 0 ? r->n_prompt : r->n_gen, lp, r->avg_ts, r->stddev_ts);
    }
    printf("\npeak RSS: %.1f MiB\n", (double)peak_rss / (1 << 20));
}

int cmd_bench(int argc, char **argv)
{
    struct bench_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;

    struct wk_error err;
    wk_error_clear(&err);
    struct wk_model *m = NULL;
    struct wk_context *ctx = NULL;
    int32_t *tokens = NULL;
    float *logits = NULL;
    struct bench_result res[2];
    int n_res = 0;
    memset(res, 0, sizeof res);
    rc = WK_EXIT_ERROR;

    if (wk_model_load(o.model, &m, &err)) {
        fprintf(stderr, "wick bench: %s\n", err.msg);
        goto done;
    }
    const struct wk_hparams *hp = wk_model_hparams(m);
    int n_cpus = wk_cpu_features_get()->n_cores;
    if (o.n_threads > n_cpus)
        fprintf(stderr,
                "wick bench: warning: -t %d is more than the %d CPUs this process may use; "
                "extra threads wait for each other and slow everything down\n",
                o.n_threads, n_cpus);
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = o.n_prompt + o.n_gen + BENCH_CTX_MARGIN;
    cp.n_threads = o.n_threads;
    cp.n_ubatch = 512;
    cp.kv_type = o.kv_type;
    if (wk_context_create(m, &cp, &ctx, &err)) {
        fprintf(stderr, "wick bench: %s\n", err.msg);
        goto done;
    }
    int32_t n_tok = WK_MAX(o.n_prompt, o.n_gen);
    tokens = malloc((size_t)n_tok * sizeof *tokens);
    logits = malloc((size_t)hp->n_vocab * sizeof *logits);
    if (!tokens || !logits) {
        fprintf(stderr, "wick bench: out of memory\n");
        goto done;
    }
    uint64_t seed = BENCH_SEED;
    for (int32_t i = 0; i < n_tok; i++) tokens[i] = (int32_t)(next_u64(&seed) % (uint64_t)hp->n_vocab);

    if (o.n_prompt > 0) res[n_res++] = (struct bench_result){.name = "pp", .n_prompt = o.n_prompt};
    if (o.n_gen > 0) res[n_res++] = (struct bench_result){.name = "tg", .n_gen = o.n_gen};
    for (int k = 0; k < n_res; k++) {
        struct bench_result *r = &res[k];
        r->ts = calloc((size_t)o.n_reps, sizeof *r->ts);
        r->ns = calloc((size_t)o.n_reps, sizeof *r->ns);
        if (!r->ts || !r->ns) {
            fprintf(stderr, "wick bench: out of memory\n");
            goto done;
        }
        if (run_once(ctx, r, tokens, logits, hp->n_vocab, o.logprobs) < 0) goto done; /* warm-up */
        int32_t n = r->n_prompt > 0 ? r->n_prompt : r->n_gen;
        for (int32_t i = 0; i < o.n_reps; i++) {
            int64_t ns = run_once(ctx, r, tokens, logits, hp->n_vocab, o.logprobs);
            if (ns < 0) goto done;
            r->ns[i] = ns;
            r->ts[i] = (double)n / ((double)ns / 1e9);
        }
        summarize(r, o.n_reps);
    }

    struct rusage ru;
    uint64_t peak_rss = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0) peak_rss = (uint64_t)ru.ru_maxrss * 1024; /* KiB on Linux */
    int32_t n_threads = wk_context_n_threads(ctx);
    if (o.json)
        print_json(&o, m, res, n_res, n_threads, peak_rss);
    else
        print_table(&o, m, res, n_res, n_threads, peak_rss);
    rc = fflush(stdout) == 0 ? WK_EXIT_OK : WK_EXIT_ERROR;
    if (rc) fprintf(stderr, "wick bench: cannot write the results to stdout\n");

done:
    for (int k = 0; k < 2; k++) {
        free(res[k].ts);
        free(res[k].ns);
    }
    free(tokens);
    free(logits);
    wk_context_destroy(ctx);
    wk_model_destroy(m);
    return rc;
}
