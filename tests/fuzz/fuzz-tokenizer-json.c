/*
 * fuzz-tokenizer-json.c - libFuzzer target for the tokenizer.json loader:
 * arbitrary bytes as tokenizer.json, then, when they load, a few strings
 * encoded and decoded. A crash, a sanitizer report or a leak is a finding.
 *
 * Build and run: make fuzz && build/fuzz/fuzz-tokenizer-json
 *   -max_total_time=60 build/fuzz/corpus-json tests/fuzz/corpus/tokenizer-json
 */
#include "../../src/tokenizer/wk_tokenizer.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wk_tokenizer *tok;
    if (wk_tokenizer_from_hf_json((const char *)data, size, "fuzz.json", &tok, NULL)) return 0;
    static const char *texts[] = {"Hello  world!\n", "<|im_start|>user 3333+777 🦙", "\xff\xfe é e\xcc\x81\xcc",
                                  ""};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        struct wk_tokens ids = {0};
        wk_tokenizer_encode(tok, texts[i], strlen(texts[i]), i & 1, &ids);
        char buf[64];
        for (int64_t k = 0; k < ids.n; k++) wk_tokenizer_token_bytes(tok, ids.ids[k], true, buf, sizeof buf);
        wk_tokens_deinit(&ids);
    }
    wk_tokenizer_destroy(tok);
    return 0;
}
