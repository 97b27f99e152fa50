/*
 * run_display.c - how `wick run` prints an answer as it streams, in this
 * process or from a server: the thinking block ("Thinking..." ...
 * "...done thinking."), and word wrap as `ollama run` does it: on a
 * terminal, a line that would pass the width less 5 columns breaks before
 * the word that reaches it (the word, already printed, is erased with
 * cursor-left and clear-to-end-of-line and printed again on the next
 * line); a word longer than the width less 10 is broken where it is.
 * Columns are counted per character with utf8proc's East Asian widths;
 * a UTF-8 character split between two pieces waits for its end.
 */
#include "run.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <utf8proc.h>

#define NO_BACKTRACK (1 << 20) /* a word too long to move down whole */

void run_display_begin(struct run_display *d, bool wrap)
{
    bool thinking = d->thinking;
    memset(d, 0, sizeof *d);
    d->thinking = thinking;
    struct winsize ws;
    if (wrap && isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 10) {
        d->wrap = true;
        d->width = ws.ws_col;
    }
}

static bool out(struct run_display *d, const char *p, size_t n)
{
    if (d->write_failed) return false;
    if (n && fwrite(p, 1, n, stdout) != n) d->write_failed = true;
    return !d->write_failed;
}

/* Bytes of the UTF-8 sequence that byte c starts (1 for a stray byte). */
static size_t seq_len(unsigned char c)
{
    return c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
}

static void word_add(struct run_display *d, const char *p, size_t n, int w)
{
    if (d->word_len + n > sizeof d->word) {
        d->word_width = NO_BACKTRACK;
        return;
    }
    memcpy(d->word + d->word_len, p, n);
    d->word_len += n;
    d->word_width += w;
}

/* One character p[0..n) of width w, wrapped. */
static void wrap_char(struct run_display *d, const char *p, size_t n, int w)
{
    if (*p == '\n' || *p == '\r') {
        out(d, p, n);
        d->line_len = 0;
        d->word_len = 0, d->word_width = 0;
        return;
    }
    const bool blank = *p == ' ' || *p == '\t';
    if (d->line_len + w > d->width - 5) {
        if (blank) { /* the break itself */
            out(d, "\n", 1);
            d->line_len = 0;
        } else if (d->word_width > 0 && d->word_width <= d->width - 10) {
            char esc[32];
            int k = snprintf(esc, sizeof esc, "\x1b[%dD\x1b[K\n", d->word_width);
            out(d, esc, (size_t)k);
            out(d, d->word, d->word_len);
            out(d, p, n);
            d->line_len = d->word_width + w;
            word_add(d, p, n, w);
        } else {
            out(d, "\n", 1);
            out(d, p, n);
            d->line_len = w;
            d->word_len = 0, d->word_width = 0;
            word_add(d, p, n, w);
        }
        return;
    }
    out(d, p, n);
    d->line_len += w;
    if (blank || w >= 2) d->word_len = 0, d->word_width = 0; /* a break opportunity */
    else word_add(d, p, n, w);
}

/* text[0..len) through the wrapper, character by character. */
static void wrap_text(struct run_display *d, const char *text, size_t len)
{
    size_t i = 0;
    if (d->n_partial) { /* complete the character the last piece began */
        size_t need = seq_len((unsigned char)d->partial[0]) - d->n_partial;
        size_t take = need < len ? need : len;
        memcpy(d->partial + d->n_partial, text, take);
        d->n_partial += take;
        i = take;
        if (d->n_partial < seq_len((unsigned char)d->partial[0])) return;
        char ch[4];
        size_t n = d->n_partial;
        memcpy(ch, d->partial, n);
        d->n_partial = 0;
        wrap_text(d, ch, n);
    }
    while (i < len) {
        size_t n = seq_len((unsigned char)text[i]);
        if (i + n > len) {
            memcpy(d->partial, text + i, len - i);
            d->n_partial = len - i;
            return;
        }
        utf8proc_int32_t cp;
        utf8proc_ssize_t got = utf8proc_iterate((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)n, &cp);
        int w = 1;
        if (got <= 0) n = 1; /* not UTF-8: one byte, one column */
        else if (cp >= 0x20) w = utf8proc_charwidth(cp);
        else w = cp == '\t' ? 1 : 0;
        wrap_char(d, text + i, n, w);
        i += n;
    }
}

static bool print_text(struct run_display *d, const char *text, size_t len)
{
    if (d->wrap) wrap_text(d, text, len);
    else out(d, text, len);
    if (!d->write_failed && fflush(stdout) != 0) d->write_failed = true;
    return !d->write_failed;
}

bool run_display_end_thinking(struct run_display *d)
{
    if (!d->thinking) return true;
    d->thinking = false;
    if (!d->think_nl) out(d, "\n", 1);
    out(d, "...done thinking.\n\n", 19);
    d->line_len = 0, d->word_len = 0, d->word_width = 0;
    return !d->write_failed;
}

bool run_display_text(struct run_display *d, const char *text, size_t len)
{
    if (len == 0) return !d->write_failed;
    return run_display_end_thinking(d) && print_text(d, text, len);
}

bool run_display_thinking(struct run_display *d, const char *text, size_t len)
{
    if (len == 0) return !d->write_failed;
    if (!d->thinking) {
        out(d, "Thinking...\n", 12);
        d->thinking = true;
        d->line_len = 0, d->word_len = 0, d->word_width = 0;
    }
    d->think_nl = text[len - 1] == '\n';
    return print_text(d, text, len);
}

static void print_duration(const char *label, int64_t ns)
{
    double s = (double)ns / 1e9;
    if (s >= 1)
        fprintf(stderr, "%-22s%.6gs\n", label, s);
    else if (s >= 1e-3)
        fprintf(stderr, "%-22s%.6gms\n", label, s * 1e3);
    else
        fprintf(stderr, "%-22s%.6gµs\n", label, s * 1e6);
}

void run_print_stats(int64_t total_ns, int64_t load_ns, int64_t prompt_eval_count, int64_t prompt_eval_ns,
                     int64_t eval_count, int64_t eval_ns)
{
    print_duration("total duration:", total_ns);
    print_duration("load duration:", load_ns);
    fprintf(stderr, "%-22s%lld token(s)\n", "prompt eval count:", (long long)prompt_eval_count);
    print_duration("prompt eval duration:", prompt_eval_ns);
    fprintf(stderr, "%-22s%.2f tokens/s\n", "prompt eval rate:",
            prompt_eval_ns > 0 ? (double)prompt_eval_count / ((double)prompt_eval_ns / 1e9) : 0.0);
    fprintf(stderr, "%-22s%lld token(s)\n", "eval count:", (long long)eval_count);
    print_duration("eval duration:", eval_ns);
    fprintf(stderr, "%-22s%.2f tokens/s\n", "eval rate:",
            eval_ns > 0 ? (double)eval_count / ((double)eval_ns / 1e9) : 0.0);
}

void run_print_logprob(const char *bytes, size_t len, double logprob)
{
    fprintf(stderr, "logprobs: ");
    cli_print_json_string(stderr, bytes, len);
    fprintf(stderr, " %.4f", logprob);
}

void run_print_top_logprob(int index, const char *bytes, size_t len, double logprob)
{
    fprintf(stderr, index ? ", " : " | ");
    cli_print_json_string(stderr, bytes, len);
    fprintf(stderr, " %.4f", logprob);
}
