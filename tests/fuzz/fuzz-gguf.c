/*
 * fuzz-gguf.c - libFuzzer target for everything that reads a model file:
 * the GGUF parser on the raw bytes, then (through a memfd, so the real
 * mmap path runs) model loading with its hyperparameter and tensor checks,
 * the tokenizer built from the metadata, and one short forward pass when
 * the file is a loadable model. Any crash, sanitizer report or leak is a
 * finding.
 *
 * Build and run (clang): make fuzz && build/fuzz/fuzz-gguf -max_total_time=60 \
 *     build/fuzz/corpus tests/fuzz/corpus/gguf
 */
#include "../../src/model/wk_model.h"
#include "../../src/tokenizer/wk_tokenizer.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static void exercise_tokenizer(const struct wk_gguf *g)
{
    struct wk_tokenizer *tok;
    if (wk_tokenizer_from_gguf(g, &tok, NULL)) return;
    static const char text[] = "<bos>Hello  wörld\n\n<start_of_turn>日本 \xff<eos>";
    struct wk_tokens ids = {0};
    wk_tokenizer_encode(tok, text, sizeof text - 1, true, &ids);
    wk_tokenizer_encode(tok, text, sizeof text - 1, false, &ids);
    struct wk_detok d;
    wk_detok_init(&d);
    size_t n;
    for (int64_t i = 0; i < ids.n; i++) wk_detok_push(&d, tok, ids.ids[i], true, &n);
    wk_detok_flush(&d, &n);
    wk_detok_deinit(&d);
    wk_tokens_deinit(&ids);
    wk_tokenizer_destroy(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wk_gguf *g;
    if (wk_gguf_open_memory(data, size, "fuzz", &g, NULL) != WK_OK) return 0;
    exercise_tokenizer(g);
    wk_gguf_close(g);

    int fd = memfd_create("fuzz.gguf", 0);
    if (fd < 0) return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        struct wk_model *m;
        if (wk_model_load(path, &m, NULL) == WK_OK) {
            struct wk_context_params p = wk_context_params_default();
            p.n_ctx = 8;
            p.n_threads = 1;
            struct wk_context *ctx;
            const struct wk_hparams *hp = wk_model_hparams(m);
            /* keep runs short: skip forward passes over huge shapes */
            if ((int64_t)hp->n_embd * hp->n_vocab < (1 << 22) &&
                wk_context_create(m, &p, &ctx, NULL) == WK_OK) {
                int32_t tokens[2] = {0, hp->n_vocab - 1};
                float *logits = wk_malloc((size_t)hp->n_vocab * sizeof(float));
                if (logits) wk_context_decode(ctx, tokens, 2, logits, NULL, NULL);
                wk_free(logits);
                wk_context_destroy(ctx);
            }
            wk_model_destroy(m);
        }
    }
    close(fd);
    return 0;
}
