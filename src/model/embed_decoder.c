/*
 * embed_decoder.c - embeddings from a decoder (causal) model, as llama.cpp
 * computes them with embeddings on and Ollama serves them (wk_embed.h):
 * one sequence decoded alone from an empty cache, its final-normed hidden
 * states (llama.cpp's t_embd, the output norm's result before the output
 * projection) pooled per the GGUF's {arch}.pooling_type, or the last
 * token's where the model has no pooling (Ollama's llamarunner asks
 * llama_get_embeddings_seq and, when that is NULL because the pooling is
 * none, takes llama_get_embeddings_ith of the sequence's last row).
 *
 * Invariant: a sequence's vector depends on its ids and the context's
 * chunking (n_ubatch) and threads only. Each one is decoded on an emptied
 * sequence 0 with wk_context_decode's chunks, so the order and company of
 * inputs in a request change nothing (tests/golden/test-decoder-embed.c
 * checks it bit for bit).
 */
#include "wk_embed.h"

#include "context_internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

enum wk_status wk_embed_decoder_pooling(const struct wk_model *m, enum wk_pooling *out, struct wk_error *err)
{
    *out = WK_POOLING_LAST;
    const struct wk_gguf *g = wk_model_gguf(m);
    const char *arch = wk_model_hparams(m)->arch_name;
    if (!g || !arch) return WK_OK;
    char key[160];
    snprintf(key, sizeof key, "%s.pooling_type", arch);
    if (!wk_gguf_find(g, key)) return WK_OK;
    int64_t type = 0;
    enum wk_status st = wk_gguf_get_i64(g, key, &type, err);
    if (st) return st;
    if (type == 0) return WK_OK; /* none: the last token's, as Ollama answers */
    if (wk_embed_pooling_from_type(type, out))
        return wk_error_set(err, WK_E_UNSUPPORTED, "%s: %s is %lld; wick embeds with 0 (none: the last token), "
                            "1 (mean), 2 (CLS) or 3 (last)%s", wk_gguf_path(g), key, (long long)type,
                            type == 4 ? " (4, rank, scores a reranker's pairs: not an embedding)" : "");
    return WK_OK;
}

bool wk_embed_gguf_has_pooling(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return false; /* a FIFO or a device could block */
    struct wk_gguf *g = NULL;
    if (wk_gguf_open(path, &g, NULL)) return false;
    struct wk_gguf_str arch;
    char key[160];
    bool has = !wk_gguf_get_str(g, "general.architecture", &arch, NULL) && arch.len < 128;
    if (has) {
        snprintf(key, sizeof key, "%.*s.pooling_type", (int)arch.len, arch.data);
        has = wk_gguf_find(g, key) != NULL;
    }
    wk_gguf_close(g);
    return has;
}

enum wk_status wk_embed_decoder(struct wk_context *ctx, enum wk_pooling pooling, const int32_t *ids, int32_t n_tokens,
                                float *out, const volatile bool *cancel, struct wk_error *err)
{
    if (n_tokens < 1) return wk_error_set(err, WK_E_INVALID, "nothing to embed: no tokens");
    if (n_tokens > wk_context_n_ctx(ctx))
        return wk_error_set(err, WK_E_RANGE, "%d tokens do not fit in the context of %d", n_tokens,
                            wk_context_n_ctx(ctx));
    const int64_t E = wk_model_hparams(ctx->m)->n_embd;
    const bool all_rows = pooling != WK_POOLING_LAST;
    float *h = all_rows ? wk_malloc((size_t)n_tokens * (size_t)E * sizeof *h) : out;
    if (!h) return wk_error_set(err, WK_E_NOMEM, "out of memory for %d hidden states", n_tokens);
    wk_context_truncate(ctx, 0); /* an empty sequence: nothing before this input counts */
    enum wk_status st = wk_context_decode_hidden(ctx, ids, n_tokens, all_rows, h, cancel, err);
    wk_context_truncate(ctx, 0);
    if (!st && all_rows) wk_embed_pool(pooling, h, n_tokens, E, false, out);
    if (all_rows) wk_free(h);
    return st;
}

enum wk_status wk_embed_decoder_check(const struct wk_model *m, int32_t n_seq, const int32_t *const *seqs,
                                      const int32_t *n_tokens, struct wk_error *err)
{
    const int32_t V = wk_model_hparams(m)->n_vocab;
    for (int32_t i = 0; i < n_seq; i++) {
        if (n_tokens[i] < 1) return wk_error_set(err, WK_E_INVALID, "input %d: nothing to embed: no tokens", i);
        for (int32_t t = 0; t < n_tokens[i]; t++)
            if (seqs[i][t] < 0 || seqs[i][t] >= V)
                return wk_error_set(err, WK_E_INVALID, "input %d: token id %d is outside the vocabulary (%d)", i,
                                    seqs[i][t], V);
    }
    return WK_OK;
}

/* Whether input i (n tokens) can share a batch of many: 2..lim tokens
 * (one chunk alone and together), or 1 token (one-token steps together). */
static int32_t batch_limit(const struct wk_context *one, const struct wk_context *many, enum wk_pooling pooling)
{
    if (!many || many->m != one->m || many->n_seq < 2) return 0;
    /* Gemma 4's KV-shared layers keep only the wanted rows: one row alone
     * (last or CLS) would then take the one-token kernels, several rows
     * together the multi-row ones */
    if (one->first_shared < one->m->hp.n_layer && pooling != WK_POOLING_MEAN) return 0;
    return WK_MIN(WK_MIN(many->n_ctx, many->n_ubatch), one->n_ubatch);
}

enum wk_status wk_embed_decoder_many(struct wk_context *one, struct wk_context *many, enum wk_pooling pooling,
                                     int32_t n_seq, const int32_t *const *seqs, const int32_t *n_tokens, float *out,
                                     const volatile bool *cancel, struct wk_error *err)
{
    if (n_seq < 0) return wk_error_set(err, WK_E_INVALID, "n_seq %d < 0", n_seq);
    const int64_t E = wk_model_hparams(one->m)->n_embd;
    const int32_t lim = batch_limit(one, many, pooling);
    /* the inputs a batch takes, longest first (ties in input order) */
    int32_t *order = wk_malloc(((size_t)n_seq + 1) * sizeof *order), n_b = 0;
    if (!order) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    for (int32_t i = 0; i < n_seq; i++)
        if (n_tokens[i] >= 1 && n_tokens[i] <= lim) order[n_b++] = i;
    for (int32_t a = 1; a < n_b; a++) /* insertion sort: stable */
        for (int32_t j = a; j > 0 && n_tokens[order[j]] > n_tokens[order[j - 1]]; j--) {
            const int32_t t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    enum wk_status st = WK_OK;
    /* the others alone, each on an emptied sequence 0 of one */
    st = wk_embed_decoder_check(one->m, n_seq, seqs, n_tokens, err);
    for (int32_t i = 0; i < n_seq && !st; i++) {
        if (n_tokens[i] >= 1 && n_tokens[i] <= lim) continue;
        st = wk_embed_decoder(one, pooling, seqs[i], n_tokens[i], out + (int64_t)i * E, cancel, err);
        if (st && st != WK_E_CANCELLED && st != WK_E_NOMEM) {
            char m[WK_ERROR_MSG_MAX];
            snprintf(m, sizeof m, "input %d: %.400s", i, err->msg);
            snprintf(err->msg, sizeof err->msg, "%s", m);
        }
    }
    /* the rows of one batch: tokens, positions, sequences, wanted rows */
    const int32_t R = many && n_b ? many->n_ubatch : 0;
    int32_t *ids = wk_malloc((size_t)R * 3 * sizeof *ids + 1);
    bool *want = wk_malloc((size_t)R + 1);
    float *h = wk_malloc((size_t)R * (size_t)E * sizeof *h + 1);
    if (!st && (!ids || !want || !h)) st = wk_error_set(err, WK_E_NOMEM, "out of memory");
    for (int32_t s0 = 0; s0 < n_b && !st;) {
        /* as many inputs as fit the sequences and one ubatch; one-token
         * inputs only with each other (each then computes as a one-token
         * step, as it does alone) */
        const bool single = n_tokens[order[s0]] == 1;
        int32_t n = 0, rows = 0;
        while (s0 + n < n_b && n < many->n_seq && rows + n_tokens[order[s0 + n]] <= R &&
               (n_tokens[order[s0 + n]] == 1) == single)
            rows += n_tokens[order[s0 + n++]];
        int32_t *pos = ids + R, *seq = ids + 2 * R, r = 0;
        for (int32_t j = 0; j < n; j++) {
            const int32_t i = order[s0 + j], L = n_tokens[i];
            for (int32_t t = 0; t < L; t++, r++) {
                ids[r] = seqs[i][t], pos[r] = t, seq[r] = j;
                want[r] = pooling == WK_POOLING_MEAN || (pooling == WK_POOLING_CLS ? t == 0 : t == L - 1);
            }
            wk_context_seq_truncate(many, j, 0);
        }
        const struct wk_batch b = {.n_tokens = rows, .tokens = ids, .pos = pos, .seq_id = seq, .logits = want};
        st = wk_context_decode_batch_hidden(many, &b, h, cancel, err);
        for (int32_t j = 0; j < n; j++) wk_context_seq_truncate(many, j, 0);
        const float *hj = h;
        for (int32_t j = 0; j < n && !st; j++) {
            const int32_t i = order[s0 + j], L = pooling == WK_POOLING_MEAN ? n_tokens[i] : 1;
            wk_embed_pool(pooling == WK_POOLING_MEAN ? pooling : WK_POOLING_LAST, hj, L, E, false,
                          out + (int64_t)i * E);
            hj += (int64_t)L * E;
        }
        s0 += n;
    }
    wk_free(order);
    wk_free(ids);
    wk_free(want);
    wk_free(h);
    return st;
}
