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
#include <time.h>

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

void cli_human_bytes(int64_t b, char *out, size_t cap)
{
    if (b > 1000000000) snprintf(out, cap, "%.1f GB", (double)b / 1e9);
    else if (b > 1000000) snprintf(out, cap, "%.1f MB", (double)b / 1e6);
    else if (b > 1000) snprintf(out, cap, "%.1f KB", (double)b / 1e3);
    else snprintf(out, cap, "%lld B", (long long)b);
}

/* Seconds since the epoch of an RFC 3339 time (fraction ignored), or -1. */
static int64_t parse_rfc3339(const char *s)
{
    struct tm tm = {0};
    const char *p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!p) return -1;
    int64_t t = (int64_t)timegm(&tm);
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++) {}
    if (*p == 'Z' || *p == 'z') return p[1] ? -1 : t;
    int hh, mm;
    char sign;
    if (sscanf(p, "%c%2d:%2d", &sign, &hh, &mm) != 3 || (sign != '+' && sign != '-')) return -1;
    return t - (sign == '+' ? 1 : -1) * (int64_t)(hh * 3600 + mm * 60);
}

/* Ollama's humanDuration of d seconds (d >= 0). */
static void human_duration(double d, char *out, size_t cap)
{
    const int64_t seconds = (int64_t)d, minutes = (int64_t)(d / 60), hours = (int64_t)llround(d / 3600);
    if (seconds < 1) snprintf(out, cap, "Less than a second");
    else if (seconds == 1) snprintf(out, cap, "1 second");
    else if (seconds < 60) snprintf(out, cap, "%lld seconds", (long long)seconds);
    else if (minutes == 1) snprintf(out, cap, "About a minute");
    else if (minutes < 60) snprintf(out, cap, "%lld minutes", (long long)minutes);
    else if (hours == 1) snprintf(out, cap, "About an hour");
    else if (hours < 48) snprintf(out, cap, "%lld hours", (long long)hours);
    else if (hours < 24 * 7 * 2) snprintf(out, cap, "%lld days", (long long)(hours / 24));
    else if (hours < 24 * 30 * 2) snprintf(out, cap, "%lld weeks", (long long)(hours / 24 / 7));
    else if (hours < 24 * 365 * 2) snprintf(out, cap, "%lld months", (long long)(hours / 24 / 30));
    else snprintf(out, cap, "%lld years", (long long)(hours / 24 / 365));
}

void cli_human_time(const char *rfc3339, const char *zero, char *out, size_t cap)
{
    const int64_t t = parse_rfc3339(rfc3339);
    if (t < 0) {
        snprintf(out, cap, "%s", zero);
        return;
    }
    const double delta = difftime(time(NULL), (time_t)t);
    char d[64];
    if (delta / 3600 / 24 / 365 < -20) snprintf(out, cap, "Forever");
    else if (delta < 0) human_duration(-delta, d, sizeof d), snprintf(out, cap, "%s from now", d);
    else human_duration(delta, d, sizeof d), snprintf(out, cap, "%s ago", d);
}

/* Characters in UTF-8 text s (its bytes that do not continue a sequence). */
static int text_width(const char *s)
{
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

void cli_print_table(const char *const *cells, int n_rows, int n_cols)
{
    int w[16] = {0};
    n_cols = n_cols > 16 ? 16 : n_cols;
    for (int r = 0; r < n_rows; r++)
        for (int c = 0; c < n_cols; c++) {
            const int len = text_width(cells[r * n_cols + c]);
            if (len > w[c]) w[c] = len;
        }
    for (int r = 0; r < n_rows; r++) {
        for (int c = 0; c < n_cols; c++) {
            const char *cell = cells[r * n_cols + c];
            fputs(cell, stdout);
            if (c + 1 < n_cols) printf("%*s", w[c] - text_width(cell) + 4, "");
        }
        putchar('\n');
    }
}
