/*
 * think.c - keeps a reasoning model's <think>...</think> blocks out of the
 * answer (Qwen 3 with thinking off, and any model that writes them).
 *
 * The filter sees the generated text in pieces, in order, and hands it on
 * as runs marked kept or dropped, in the same order and covering every
 * byte, so a caller can keep byte offsets (logprobs) aligned. Dropped: each
 * "<think>" ... "</think>" block, tags included, and the whitespace right
 * after a closing tag (Qwen 3's template strips the same: content after
 * "</think>", lstrip('\n')). A block never closed drops everything after
 * its opening tag.
 *
 * State: inside (between the tags or not) and n_held, the bytes of the tag
 * being looked for that the text has matched so far; they are held back
 * until the next byte decides, then handed on from the tag string itself.
 * Both tags start with '<' and hold no other '<', so on a mismatch the
 * only way a new match can start is the mismatching byte itself being '<'.
 */
#include "wk_runtime.h"

#include <string.h>

static const char *const g_tag[2] = {"<think>", "</think>"};

void wk_think_filter_init(struct wk_think_filter *f) { memset(f, 0, sizeof *f); }

/* The held tag prefix out, kept or dropped as the text around it is. */
static bool release_held(struct wk_think_filter *f, wk_think_run_fn fn, void *user)
{
    size_t n = f->n_held;
    f->n_held = 0;
    if (n) f->skip_space = false;
    return !n || fn(user, g_tag[f->inside], n, !f->inside);
}

bool wk_think_filter_push(struct wk_think_filter *f, const char *text, size_t len, wk_think_run_fn fn,
                          void *user)
{
    size_t run = 0; /* text[run .. i) is waiting to go out, kept unless inside */
#define FLUSH_RUN(i)                                                                               \
    do {                                                                                           \
        if ((i) > run && !fn(user, text + run, (i) - run, !f->inside)) return false;               \
        run = (i);                                                                                 \
    } while (0)
    for (size_t i = 0; i < len; i++) {
        const char *tag = g_tag[f->inside];
        char c = text[i];
        if (f->n_held && c != tag[f->n_held]) { /* the tag did not come after all */
            FLUSH_RUN(i);
            if (!release_held(f, fn, user)) return false;
        }
        if (c == tag[f->n_held]) {
            FLUSH_RUN(i);
            run = i + 1; /* c is held, not part of any run */
            if (tag[++f->n_held] == '\0') {                  /* a whole tag: dropped */
                f->in_tag = true;
                bool go_on = fn(user, tag, f->n_held, false);
                f->in_tag = false;
                if (!go_on) return false;
                f->skip_space = f->inside; /* after "</think>" */
                f->inside = !f->inside;
                f->n_held = 0;
            }
            continue;
        }
        if (f->skip_space && !f->inside) {
            if (c == '\n' || c == '\r' || c == ' ' || c == '\t') {
                FLUSH_RUN(i);
                if (!fn(user, text + i, 1, false)) return false;
                run = i + 1;
                continue;
            }
            f->skip_space = false;
        }
    }
    FLUSH_RUN(len);
#undef FLUSH_RUN
    return true;
}

bool wk_think_filter_flush(struct wk_think_filter *f, wk_think_run_fn fn, void *user)
{
    return release_held(f, fn, user);
}
