/*
 * wk_jinja.h - a Jinja template engine with the semantics Hugging Face
 * transformers gives chat templates: jinja2's ImmutableSandboxedEnvironment
 * with trim_blocks, lstrip_blocks and the loopcontrols extension, the
 * tojson filter of transformers (json.dumps, ensure_ascii=False), and the
 * globals raise_exception, strftime_now, namespace, dict and range.
 *
 * Values come from jansson: the render variables are a JSON object whose
 * members become the template's globals (messages, tools,
 * add_generation_prompt, bos_token, eos_token, any keyword arguments).
 * Printing follows Python: ints as ints, floats as repr, None/True/False,
 * lists and dicts as Python's str() of them.
 *
 * Rendering is bounded: a recursion depth limit, a cap on the output size
 * and on the number of loop iterations; a template that passes one stops
 * with WK_E_RANGE.
 */
#ifndef WK_JINJA_H
#define WK_JINJA_H

#include <jansson.h>
#include <stddef.h>

#include "../base/wk_base.h"

/* A parsed template; immutable once parsed, so one may be rendered by
 * several threads at once. */
struct wk_jinja;

/* The limits a render runs under (wk_jinja_render uses these defaults). */
#define WK_JINJA_MAX_OUTPUT ((size_t)64 << 20) /* bytes of output */
#define WK_JINJA_MAX_DEPTH 200                 /* nested macro calls / expressions */
#define WK_JINJA_MAX_ITERATIONS 1000000LL      /* loop iterations and range() items in all */

/*
 * Parses the template src[0..len) (UTF-8; need not be NUL-terminated).
 * On success stores a new template in *out, which the caller frees with
 * wk_jinja_free. Errors: WK_E_FORMAT (a syntax error: the message names the
 * line), WK_E_NOMEM, WK_E_RANGE (a template nested too deeply). *out is
 * NULL on error. err may be NULL.
 */
enum wk_status wk_jinja_parse(const char *src, size_t len, struct wk_jinja **out,
                              struct wk_error *err);

/*
 * Renders t with the variables vars (a JSON object; NULL means none; the
 * caller keeps its reference, and vars is not modified). On success stores
 * a NUL-terminated string in *out (freed by the caller with wk_free) and
 * its length, without the NUL, in *out_len (out_len may be NULL). Errors:
 * WK_E_INVALID (raise_exception, an undefined value used, a type error, an
 * unknown filter or test: the message says which), WK_E_RANGE (a limit
 * passed: output size, recursion depth, loop iterations), WK_E_NOMEM.
 * *out is NULL on error. err may be NULL.
 */
enum wk_status wk_jinja_render(const struct wk_jinja *t, const json_t *vars, char **out,
                               size_t *out_len, struct wk_error *err);

/*
 * Pins the time strftime_now(format) formats in renders of t to the UTC
 * time unix_seconds (tests pin it for reproducible output); a negative
 * value (the default) means the current local time. Call it before
 * rendering, not while another thread renders t.
 */
void wk_jinja_set_time(struct wk_jinja *t, long long unix_seconds);

/* Frees a template from wk_jinja_parse; NULL is a no-op. */
void wk_jinja_free(struct wk_jinja *t);

#endif
