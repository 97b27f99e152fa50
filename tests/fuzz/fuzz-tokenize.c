/*
 * fuzz-tokenize.c - libFuzzer target for the encoders: arbitrary bytes are
 * tokenized by the real Gemma 3 (SentencePiece) and SmolLM2 (byte-level
 * BPE) vocabularies, as user text and as template scaffolding, and must
 * come back byte for byte through the streaming detokenizer (both
 * vocabularies cover every byte, so encoding loses nothing; the one thing
 * SentencePiece cannot give back is a literal '▁', its stand-in for a
 * space, which decodes as a space; and a byte-level vocabulary without a
 * piece for a byte that never occurs in UTF-8 gives back U+FFFD for it).
 * A crash, a sanitizer report or a round trip that differs is a finding.
 *
 * The models come from $WICK_CACHE/models or ~/.cache/wick/models
 * (scripts/fetch-models). Build and run: make fuzz &&
 *   build/fuzz/fuzz-tokenize -max_total_time=60 build/fuzz/corpus-tok tests/fuzz/corpus/text
 */
#include "../../src/tokenizer/wk_tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct wk_tokenizer *g_tok[2];
static bool g_byte_ok[2][256]; /* the byte alone comes back from encode + decode */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    static const char *files[2] = {"gemma-3-270m-q4_k_m.gguf", "SmolLM2-135M-Instruct.Q4_1.gguf"};
    const char *cache = getenv("WICK_CACHE"), *home = getenv("HOME");
    for (int i = 0; i < 2; i++) {
        char path[4096];
        if (cache) snprintf(path, sizeof path, "%s/models/%s", cache, files[i]);
        else snprintf(path, sizeof path, "%s/.cache/wick/models/%s", home ? home : ".", files[i]);
        struct wk_gguf *g;
        struct wk_error err;
        if (wk_gguf_open(path, &g, &err) || wk_tokenizer_from_gguf(g, &g_tok[i], &err)) {
            fprintf(stderr, "fuzz-tokenize: %s (run scripts/fetch-models)\n", err.msg);
            exit(1);
        }
        wk_gguf_close(g); /* the tokenizer keeps its own copy */
        for (int b = 0; b < 256; b++) {
            char c = (char)b, out[8];
            struct wk_tokens ids = {0};
            wk_tokenizer_encode(g_tok[i], &c, 1, false, &ids);
            size_t n = ids.n == 1 ? wk_tokenizer_token_bytes(g_tok[i], ids.ids[0], false, out, 8) : 0;
            g_byte_ok[i][b] = n == 1 && out[0] == c;
            wk_tokens_deinit(&ids);
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    const struct wk_tokenizer *tok = g_tok[data[0] & 1];
    bool special = data[0] & 2;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    struct wk_tokens ids = {0};
    if (wk_tokenizer_encode(tok, text, len, special, &ids)) abort();
    struct wk_detok d;
    wk_detok_init(&d);
    char *back = malloc(len * 4 + 64);
    size_t n_back = 0, n;
    for (int64_t i = 0; i < ids.n; i++) {
        const char *s = wk_detok_push(&d, tok, ids.ids[i], true, &n);
        if (!s || n_back + n > len * 4 + 64) abort();
        memcpy(back + n_back, s, n), n_back += n;
    }
    const char *s = wk_detok_flush(&d, &n);
    memcpy(back + n_back, s, n), n_back += n;
    char *want = malloc(3 * len + 1);
    size_t n_want = 0;
    int which = data[0] & 1;
    for (size_t i = 0; i < len;) {
        if (which == 0 && i + 3 <= len && memcmp(text + i, "\xe2\x96\x81", 3) == 0) {
            want[n_want++] = ' ';
            i += 3;
        } else if (!g_byte_ok[which][(uint8_t)text[i]]) {
            memcpy(want + n_want, "\xef\xbf\xbd", 3), n_want += 3;
            i++;
        } else {
            want[n_want++] = text[i++];
        }
    }
    if (n_back != n_want || memcmp(back, want, n_want) != 0) {
        fprintf(stderr, "round trip differs: %zu bytes in, %zu out\n", len, n_back);
        abort();
    }
    free(back);
    free(want);
    wk_detok_deinit(&d);
    wk_tokens_deinit(&ids);
    return 0;
}
