/*
 * logprobs.c - log-probabilities of a generated token and its most likely
 * alternatives (docs/reference/ollama-mlx-runner.md §4.7): the
 * log-softmax of the raw logits over the whole vocabulary.
 */
#include "wk_runtime.h"

#include "../cpu/wk_cpu.h"

#include <math.h>

void wk_logprobs_compute(const float *logits, int32_t n_vocab, int32_t id, int32_t k,
                         struct wk_token_logprobs *out)
{
    k = k < 0 ? 0 : k > WK_MAX_TOP_LOGPROBS ? WK_MAX_TOP_LOGPROBS : k;
    if (k > n_vocab) k = n_vocab;
    const struct wk_cpu_kernels *kt = wk_cpu_kernels_get();
    const float mx = kt->max_f32(n_vocab, logits);
    const double lse = mx + log(kt->sum_exp(n_vocab, logits, mx));
    out->id = id;
    out->logprob = (float)(logits[id] - lse);
    /* the k largest by insertion into a sorted list (k <= 20) */
    int32_t n = 0;
    for (int32_t i = 0; i < n_vocab && k > 0; i++) {
        float v = logits[i];
        if (n == k && !(v > logits[out->top_ids[n - 1]])) continue;
        int32_t j = n < k ? n++ : k - 1;
        while (j > 0 && v > logits[out->top_ids[j - 1]]) {
            out->top_ids[j] = out->top_ids[j - 1];
            j--;
        }
        out->top_ids[j] = i;
    }
    out->n_top = n;
    for (int32_t j = 0; j < n; j++) out->top_logprobs[j] = (float)(logits[out->top_ids[j]] - lse);
}
