/*
 * fuzz-toolcall.c - libFuzzer target for the streaming tool-call parser
 * (wk_toolcall.h). The first input byte picks the format, the second seeds
 * the piece sizes, the rest is the generated text. It is parsed whole, in
 * pieces whose sizes come from the data, and one byte at a time; the three
 * runs must give the same content, calls and flags. The content and the
 * calls' block texts, in the order they came, must be the input less only
 * whitespace (and ';') between blocks; with no call the content is the
 * input exactly; every call has a name and an object of arguments, and
 * indices count up from 0. Any crash, sanitizer report, leak, timeout or
 * broken invariant is a finding.
 *
 * Build and run (clang): make build/fuzz/fuzz-toolcall && build/fuzz/fuzz-toolcall \
 *     -max_total_time=180 -timeout=10 build/fuzz/corpus-fuzz-toolcall
 */
#include "../../src/runtime/wk_toolcall.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct out {
    char *text; /* the content */
    size_t n, cap;
    char *recon; /* the content and the calls' blocks, in order */
    size_t rn, rcap;
    json_t *calls;
    int last_block;
};

static void add(char **b, size_t *n, size_t *cap, const char *t, size_t len)
{
    if (*n + len > *cap) {
        *cap = (*n + len) * 2;
        *b = realloc(*b, *cap);
    }
    memcpy(*b + *n, t, len);
    *n += len;
}

static bool on_content(void *user, const char *t, size_t len)
{
    struct out *o = user;
    if (!len) __builtin_trap();
    add(&o->text, &o->n, &o->cap, t, len);
    add(&o->recon, &o->rn, &o->rcap, t, len);
    o->last_block = -1;
    return true;
}

static bool on_call(void *user, const struct wk_toolcall *c)
{
    struct out *o = user;
    if (!c->name || !c->name[0] || !json_is_object(c->arguments) ||
        c->index != (int)json_array_size(o->calls))
        __builtin_trap();
    json_t *v =
        json_pack("{s:s, s:O, s:s?}", "name", c->name, "arguments", c->arguments, "id", c->id);
    json_array_append_new(o->calls, v);
    if (c->block != o->last_block)
        add(&o->recon, &o->rn, &o->rcap, c->raw, c->raw_len); /* a block, once */
    o->last_block = c->block;
    return true;
}

/* Parses text[0..n) in pieces: sizes from seed (0: whole, 1: bytes). */
static void run(enum wk_toolcall_format fmt, const char *text, size_t n, unsigned seed,
                struct out *o, unsigned *flags)
{
    memset(o, 0, sizeof *o);
    o->calls = json_array();
    o->last_block = -1;
    struct wk_toolcall_parser *p;
    if (wk_toolcall_parser_create(fmt, &p, NULL) != WK_OK) __builtin_trap();
    struct wk_toolcall_sink sink = {on_content, on_call, o};
    uint32_t s = seed * 2654435761u + 1;
    for (size_t at = 0; at < n;) {
        size_t k = n - at;
        if (seed == 1)
            k = 1;
        else if (seed) {
            s = s * 1103515245u + 12345u;
            k = 1 + (s >> 16) % 24;
            if (k > n - at) k = n - at;
        }
        if (wk_toolcall_parser_push(p, text + at, k, &sink) != WK_OK) __builtin_trap();
        at += k;
    }
    if (wk_toolcall_parser_finish(p, &sink) != WK_OK) __builtin_trap();
    *flags = wk_toolcall_parser_flags(p);
    if (wk_toolcall_parser_n_calls(p) != (int)json_array_size(o->calls)) __builtin_trap();
    wk_toolcall_parser_free(p);
}

static bool same(const struct out *a, unsigned fa, const struct out *b, unsigned fb)
{
    return fa == fb && a->n == b->n && (!a->n || memcmp(a->text, b->text, a->n) == 0) &&
           json_equal(a->calls, b->calls);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 1 << 16) return 0;
    enum wk_toolcall_format fmt = (enum wk_toolcall_format)(data[0] % WK_TOOLCALL_N_FORMATS);
    unsigned seed = data[1] < 2 ? data[1] + 2u : data[1];
    const char *text = (const char *)data + 2;
    size_t n = size - 2;
    struct out whole, pieces, bytes;
    unsigned fw, fp, fb;
    run(fmt, text, n, 0, &whole, &fw);
    run(fmt, text, n, seed, &pieces, &fp);
    run(fmt, text, n, 1, &bytes, &fb);
    if (!same(&whole, fw, &pieces, fp) || !same(&whole, fw, &bytes, fb)) __builtin_trap();
    /* the content and the blocks, in order, are the input less whitespace (and ';') gaps */
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (j < whole.rn && text[i] == whole.recon[j])
            j++;
        else if (!strchr(" \t\r\n;", text[i]) || !text[i])
            __builtin_trap();
    }
    if (j != whole.rn) __builtin_trap();
    /* with no call, nothing is dropped */
    if (!json_array_size(whole.calls) && (whole.n != n || (n && memcmp(whole.text, text, n))))
        __builtin_trap();
    if (fmt == WK_TOOLCALL_NONE && json_array_size(whole.calls)) __builtin_trap();
    struct out *all[3] = {&whole, &pieces, &bytes};
    for (int i = 0; i < 3; i++) {
        free(all[i]->text);
        free(all[i]->recon);
        json_decref(all[i]->calls);
    }
    return 0;
}
