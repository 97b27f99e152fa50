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
 * Rendering is bounded, so that a hostile template stops soon, in bounded
 * memory, with WK_E_RANGE and a message naming the limit: a recursion
 * depth limit; a cap on the size of the output and of every string a
 * render builds (concatenation, repetition, filters, methods), checked
 * before the string is allocated; caps on loop iterations, on the items
 * of one list and on how deeply lists and dicts nest; and a work budget
 * for the whole render ("template too expensive").
 */
#ifndef WK_JINJA_H
#define WK_JINJA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../base/wk_base.h"

/* A parsed template; immutable once parsed, so one may be rendered by
 * several threads at once. */
struct wk_jinja;

/* The limits a render runs under (wk_jinja_render uses these defaults). */
#define WK_JINJA_MAX_OUTPUT ((size_t)64 << 20) /* bytes of output, and of any one string */
#define WK_JINJA_MAX_DEPTH 200                 /* nested macro calls / expressions */
#define WK_JINJA_MAX_ITERATIONS 1000000LL      /* loop iterations and range() items in all */
#define WK_JINJA_MAX_ITEMS 1000000             /* items of any one list */
#define WK_JINJA_MAX_NESTING 512               /* lists and dicts inside each other */
/* The work budget of a render, in steps: a step is a template node
 * evaluated or statement run, a loop iteration, a macro call, an item made,
 * visited or compared, or 32 bytes of text copied or scanned. */
#define WK_JINJA_MAX_STEPS 10000000LL

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

/* One run of the output: bytes [off, off+len) and whether they came from a "content" string of the variables. */
struct wk_jinja_run {
    size_t off, len;
    bool content;
};

/*
 * Renders like wk_jinja_render and also says where each output byte came
 * from, so that a tokenizer can keep message text literal (a user typing
 * "<|im_end|>" gets those characters, not the control token) while parsing
 * the template's own text for special tokens. On success *runs (freed by
 * the caller with wk_free; NULL when the output is empty) holds *n_runs
 * runs that cover the output exactly, in order, adjacent runs of the same
 * kind merged. Errors as wk_jinja_render; *runs is NULL and *n_runs 0 on
 * error.
 *
 * Content: every JSON string value found anywhere inside vars["messages"]
 * and vars["tools"] (in their objects and arrays, at any depth) except the
 * string values of the keys "role", "name", "type", "tool_call_id" and
 * "id". So a message's content, reasoning_content, thinking, a tool call's
 * arguments (a string, or the strings inside an arguments object), a tool
 * result's content, the "text" of content parts and a tool's descriptions
 * are content; roles, names, types and ids are template text, as are the
 * template's literals, bos_token, eos_token and every other variable, numbers and booleans, and what filters add of their
 * own (tojson's quotes and punctuation, indent's spaces, a join separator
 * from the template). A content byte stays content through + and ~,
 * slicing and indexing, iteration over characters, trim/strip/lstrip/rstrip,
 * split/rsplit, join, replace (the replacement text is not content),
 * upper/lower/title/capitalize, format (the format string's and the
 * arguments' bytes), indent, truncate, center, string conversion, {% set %}
 * blocks and macro output. tojson and |tojson of a string: each character
 * that came from content (or its escape, such as \n or \") is content; the
 * quotes are not. repr() (a list or dict printed with its strings quoted)
 * marks nothing as content. The bytes are tracked only here, not in
 * wk_jinja_render.
 */
enum wk_status wk_jinja_render_runs(const struct wk_jinja *t, const json_t *vars, char **out, size_t *out_len,
                                    struct wk_jinja_run **runs, size_t *n_runs, struct wk_error *err);

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
