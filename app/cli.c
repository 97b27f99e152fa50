/*
 * cli.c - option parsing helpers shared by the subcommands.
 */
#include "cli.h"

#include "../src/base/wk_base.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cli_opt_value(int argc, char **argv, int *i, const char *name, const char **value,
                   bool *bad, const char *cmd)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return false;
    if (a[n] == '=') {
        *value = a + n + 1;
        return true;
    }
    if (a[n] != '\0') return false;
    if (*i + 1 >= argc) {
        fprintf(stderr, "wick %s: option %s needs a value\n", cmd, name);
        *bad = true;
        *value = ""; /* never read by a caller that checks *bad; not NULL for one that would */
        return true;
    }
    *value = argv[++*i];
    return true;
}

bool cli_parse_f32(const char *cmd, const char *name, const char *text, float lo, float hi,
                   float *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end != '\0' || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "wick %s: %s expects a number between %g and %g, got '%s'\n", cmd, name,
                (double)lo, (double)hi, text);
        return false;
    }
    *out = (float)v;
    return true;
}

bool cli_parse_i64(const char *cmd, const char *name, const char *text, int64_t lo, int64_t hi,
                   int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "wick %s: %s expects an integer between %lld and %lld, got '%s'\n", cmd,
                name, (long long)lo, (long long)hi, text);
        return false;
    }
    *out = v;
    return true;
}

void cli_print_json_string(FILE *f, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        size_t len = wk_utf8_seq_len(u + i, n - i);
        if (len == 0) fputs("\\ufffd", f), len = 1;
        else if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
        else fwrite(u + i, 1, len, f);
        i += len;
    }
    fputc('"', f);
}
