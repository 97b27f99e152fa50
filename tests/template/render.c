/*
 * render.c - jinja-render TEMPLATE VARS.json: renders a template file with
 * the JSON object of variables through wk_jinja (strftime_now pinned to
 * 2026-12-01 00:00 UTC) and prints the output; on an error prints
 * "ERROR: message" to stderr and exits 1. It also renders through
 * wk_jinja_render_runs and exits 3 ("RUNS: ...") when that output differs
 * or its runs do not cover the output exactly (in order, non-empty, merged).
 */
#include "../../src/runtime/wk_jinja.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *p = malloc(cap);
    size_t r;
    while (p && (r = fread(p + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap) { char *q = realloc(p, cap *= 2); if (!q) { free(p); p = NULL; } else p = q; }
    }
    fclose(f);
    *n = len;
    return p;
}

/* The runs check: 0 when r[0..nr) covers out[0..n) as documented. */
static int check_runs(const struct wk_jinja *t, json_t *vars, const char *out, size_t n)
{
    struct wk_error err;
    char *o2 = NULL;
    size_t n2 = 0, nr = 0, at = 0;
    struct wk_jinja_run *r = NULL;
    if (wk_jinja_render_runs(t, vars, &o2, &n2, &r, &nr, &err)) { fprintf(stderr, "RUNS: %s\n", err.msg); return 3; }
    int bad = n2 != n || memcmp(o2, out, n) != 0;
    for (size_t i = 0; i < nr && !bad; i++) {
        bad = r[i].off != at || r[i].len == 0 || (i > 0 && r[i].content == r[i - 1].content);
        at += r[i].len;
    }
    if (!bad && at != n) bad = 1;
    if (bad) fprintf(stderr, "RUNS: the runs do not cover the output\n");
    wk_free(o2);
    wk_free(r);
    return bad ? 3 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: jinja-render TEMPLATE VARS.json\n"); return 2; }
    size_t n;
    char *src = slurp(argv[1], &n);
    if (!src) { fprintf(stderr, "ERROR: cannot read %s\n", argv[1]); return 2; }
    json_error_t jerr;
    json_t *vars = json_load_file(argv[2], JSON_DECODE_ANY, &jerr);
    if (!vars) { fprintf(stderr, "ERROR: %s: %s\n", argv[2], jerr.text); free(src); return 2; }
    struct wk_error err;
    struct wk_jinja *t = NULL;
    char *out = NULL;
    size_t out_len = 0;
    enum wk_status st = wk_jinja_parse(src, n, &t, &err);
    if (!st) {
        wk_jinja_set_time(t, 1796083200LL);
        st = wk_jinja_render(t, vars, &out, &out_len, &err);
    }
    int rc = st ? 1 : 0;
    if (st) fprintf(stderr, "ERROR: %s\n", err.msg);
    else if ((rc = check_runs(t, vars, out, out_len)) == 0) fwrite(out, 1, out_len, stdout);
    wk_free(out);
    wk_jinja_free(t);
    json_decref(vars);
    free(src);
    return rc;
}
