/*
 * kl.c - how far a quantized model's next-token distributions are from a
 * reference's over a fixed text: the mean over positions of
 * KL(p_ref || p_test) = sum_v p_ref(v) (log p_ref(v) - log p_test(v)), the
 * largest KL at one position, and how often the two argmaxes agree (the
 * measure llama.cpp's perplexity --kl-divergence reports).
 *
 * Usage: build/release/bench/kl REF TEST [--tokens 2000] [--text FILE]
 *        [--kv-ref f32|f16|q8_0] [--kv-test f32|f16|q8_0]
 * REF and TEST: GGUF files, Hugging Face folders or store names
 * (WICK_MODELS); they must share the vocabulary. --kv-ref / --kv-test:
 * each one's KV cache type (wk_context_params.kv_type; f32 unless set),
 * so that REF = TEST measures what a cache type costs. The text (default the
 * GPL-3 text every Debian machine has, /usr/share/common-licenses/GPL-3)
 * is tokenized by REF's tokenizer with BOS, cut to --tokens, and run
 * through both in prefill chunks of 128 with every position's logits.
 * A figure, not a test.
 */
#include "../src/runtime/wk_runtime.h"
#include "../src/store/wk_store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 128

static int die(const char *what, const struct wk_error *err)
{
    fprintf(stderr, "kl: %s: %s\n", what, err->msg);
    return 1;
}

/* log-softmax of x[n] into out (double). */
static void log_softmax(const float *x, int32_t n, double *out)
{
    double mx = -INFINITY, s = 0;
    for (int32_t i = 0; i < n; i++) mx = fmax(mx, x[i]);
    for (int32_t i = 0; i < n; i++) s += exp(x[i] - mx);
    double lse = mx + log(s);
    for (int32_t i = 0; i < n; i++) out[i] = x[i] - lse;
}

int main(int argc, char **argv)
{
    const char *ref = NULL, *test = NULL, *text_path = "/usr/share/common-licenses/GPL-3";
    int n_tokens = 2000;
    enum wk_dtype kv[2] = {WK_DTYPE_F32, WK_DTYPE_F32};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tokens") == 0 && i + 1 < argc) n_tokens = atoi(argv[++i]);
        else if (strncmp(argv[i], "--kv-", 5) == 0 && i + 1 < argc &&
                 (!strcmp(argv[i], "--kv-ref") || !strcmp(argv[i], "--kv-test"))) {
            if (!wk_kv_type_parse(argv[i + 1], &kv[argv[i][5] == 't'])) {
                fprintf(stderr, "kl: %s takes f32, f16 or q8_0, not '%s'\n", argv[i], argv[i + 1]);
                return 2;
            }
            i++;
        }
        else if (strcmp(argv[i], "--text") == 0 && i + 1 < argc) text_path = argv[++i];
        else if (!ref) ref = argv[i];
        else if (!test) test = argv[i];
    }
    if (!ref || !test || n_tokens < 2) {
        fprintf(stderr, "usage: kl REF TEST [--tokens 2000] [--text FILE] [--kv-ref T] [--kv-test T]\n");
        return 2;
    }
    struct wk_error err;
    wk_error_clear(&err);
    char dir[4096];
    wk_store_default_dir(dir, sizeof dir);
    struct wk_store *store;
    if (wk_store_open(dir, &store, &err)) return die(dir, &err);
    const char *names[2] = {ref, test};
    struct wk_store_model sm[2];
    struct wk_model *m[2] = {NULL, NULL};
    struct wk_context *c[2] = {NULL, NULL};
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = n_tokens + 1;
    for (int k = 0; k < 2; k++) {
        cp.kv_type = kv[k];
        if (wk_store_resolve(store, names[k], true, &sm[k], &err) || wk_model_load(sm[k].weights, &m[k], &err) ||
            wk_context_create(m[k], &cp, &c[k], &err))
            return die(names[k], &err);
    }
    struct wk_tokenizer *tok;
    if (wk_tokenizer_for_model(m[0], &tok, &err)) return die(ref, &err);
    int32_t n_vocab = wk_model_hparams(m[0])->n_vocab;
    if (wk_model_hparams(m[1])->n_vocab != n_vocab) {
        fprintf(stderr, "kl: the models' vocabularies differ\n");
        return 1;
    }
    FILE *f = fopen(text_path, "rb");
    if (!f) {
        perror(text_path);
        return 1;
    }
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    struct wk_prompt p = {0};
    struct wk_tokens ids = {0};
    if (wk_prompt_raw(tok, text, len, false, &p) || wk_prompt_tokenize(tok, &p, &ids)) return 1;
    if (ids.n < n_tokens) {
        fprintf(stderr, "kl: the text has only %lld tokens\n", (long long)ids.n);
        return 1;
    }
    float *lg[2] = {malloc((size_t)CHUNK * n_vocab * sizeof(float)), malloc((size_t)CHUNK * n_vocab * sizeof(float))};
    double *a = malloc((size_t)n_vocab * sizeof *a), *b = malloc((size_t)n_vocab * sizeof *b);
    double sum = 0, worst = 0;
    int64_t agree = 0, counted = 0;
    for (int32_t done = 0; done < n_tokens; done += CHUNK) {
        int32_t n = n_tokens - done < CHUNK ? n_tokens - done : CHUNK;
        for (int k = 0; k < 2; k++)
            if (wk_context_decode_all(c[k], ids.ids + done, n, lg[k], NULL, &err)) return die(names[k], &err);
        for (int32_t r = 0; r < n; r++) { /* position done + r predicts token done + r + 1 */
            log_softmax(lg[0] + (size_t)r * n_vocab, n_vocab, a);
            log_softmax(lg[1] + (size_t)r * n_vocab, n_vocab, b);
            double kl = 0;
            int32_t am = 0, bm = 0;
            for (int32_t v = 0; v < n_vocab; v++) {
                kl += exp(a[v]) * (a[v] - b[v]);
                if (a[v] > a[am]) am = v;
                if (b[v] > b[bm]) bm = v;
            }
            sum += kl;
            worst = fmax(worst, kl);
            agree += am == bm;
            counted++;
        }
    }
    printf("{\"ref\": \"%s\", \"test\": \"%s\", \"positions\": %lld, \"mean_kl\": %.6f, \"max_kl\": %.6f, "
           "\"top1_agreement\": %.4f}\n",
           ref, test, (long long)counted, sum / (double)counted, worst, (double)agree / (double)counted);
    return 0;
}
