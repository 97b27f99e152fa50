/*
 * fuzz-safetensors.c - libFuzzer target for the safetensors reader: the
 * parser on the raw bytes, then every accessor on what it accepted, with
 * each tensor's first and last data byte read so that a range the checks
 * let past the buffer is an ASan report. Any crash, sanitizer report or
 * leak is a finding.
 *
 * Seeds (tests/fuzz/corpus/safetensors/) were written by wk_safetensors_write
 * (every dtype, a scalar, a zero-size tensor, metadata) plus the reference
 * library's fixture tests/unit/fixtures/tiny.safetensors.
 *
 * Build and run (clang): make fuzz && build/fuzz/fuzz-safetensors \
 *     -max_total_time=60 build/fuzz/corpus-fuzz-safetensors tests/fuzz/corpus/safetensors
 */
#include "../../src/io/wk_safetensors.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wk_safetensors *st;
    struct wk_error err;
    if (wk_safetensors_open_memory(data, size, "fuzz", &st, &err) != WK_OK) {
        /* every refusal names the file */
        if (strncmp(err.msg, "fuzz: ", 6) != 0) __builtin_trap();
        return 0;
    }
    volatile uint8_t sink = 0;
    for (int64_t i = 0; i < wk_safetensors_n_tensors(st); i++) {
        const struct wk_st_tensor *t = wk_safetensors_tensor(st, i);
        if (wk_safetensors_find(st, t->name) != t) __builtin_trap();
        if (t->size_bytes != t->n_elements * wk_st_dtype_size(t->dtype)) __builtin_trap();
        if (t->size_bytes) {
            const uint8_t *p = t->data;
            sink ^= p[0] ^ p[t->size_bytes - 1];
        }
    }
    (void)sink;
    wk_safetensors_metadata(st, "format");
    wk_safetensors_close(st);
    return 0;
}
