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
