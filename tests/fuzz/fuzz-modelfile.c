/*
 * fuzz-modelfile.c - libFuzzer target for the Modelfile parser and
 * printer: arbitrary bytes are parsed; what parses is formatted, and the
 * formatted text must parse again to a Modelfile that formats to the same
 * text (wk_modelfile_format's promise that show --modelfile round-trips).
 * A refusal must name the input and a line. Any crash, sanitizer report,
 * leak or broken round trip is a finding.
 *
 * Build and run (clang): make fuzz && build/fuzz/fuzz-modelfile \
 *     -max_total_time=60 build/fuzz/corpus-fuzz-modelfile tests/fuzz/corpus/modelfile
 */
#include "../../src/io/wk_modelfile.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wk_modelfile a, b;
    struct wk_error err;
    if (wk_modelfile_parse((const char *)data, size, "fuzz", &a, &err) != WK_OK) {
        if (strncmp(err.msg, "fuzz", 4) != 0) __builtin_trap();
        return 0;
    }
    char *t1 = wk_modelfile_format(&a);
    if (!t1) __builtin_trap();
    if (wk_modelfile_parse(t1, strlen(t1), "fuzz", &b, &err) != WK_OK) __builtin_trap();
    char *t2 = wk_modelfile_format(&b);
    if (!t2 || strcmp(t1, t2) != 0) __builtin_trap();
    wk_free(t1);
    wk_free(t2);
    wk_modelfile_deinit(&a);
    wk_modelfile_deinit(&b);
    return 0;
}
