/*
 * wk_gotmpl.h - an engine for the Go text/template TEMPLATEs of Ollama's
 * Modelfiles (docs/modelfile.md, docs/template.md in Ollama).
 *
 * The language is Go's text/template: text and {{ actions }} with {{- -}}
 * trimming and comment actions; if / else if / else / end, range (with
 * $i, $e := ..., over arrays and objects, with else, break and continue),
 * with / else with; variables ($x := ..., $x = ..., and $, the root);
 * pipelines with |; literals (strings "..." and `...`, characters 'a',
 * numbers, true, false, nil); parenthesised pipelines with field access;
 * and the functions and, or, not, len, index, slice, eq (with several
 * arguments), ne, lt, le, gt, ge, print, printf, println and Ollama's json
 * (Go's json.Marshal), currentDate and yesterdayDate (the local date, or
 * the day before, YYYY-MM-DD) and toTypeScriptType (of a tool parameter);
 * a function named as an argument is called without arguments. printf
 * and printing follow Go's fmt (flags, widths and precisions up to Go's
 * limit of 1e6, * and [n] argument indexes, %v %d %s %q %x %X %o %O %b
 * %c %U %e %f %g %t %T). Not supported: define / template / block,
 * methods, call, html / js / urlquery, complex numbers, %#v's Go syntax.
 *
 * The data (the dot) is a jansson value, seen as Go sees map[string]any:
 * .Field looks the key up in an object (a missing key or a JSON null is
 * "no value", printed <no value>; as an extension, a missing key "Name" is
 * also looked up as "name", so Ollama API JSON with lowercase keys works);
 * JSON integers are Go ints and JSON reals float64s; range over an object
 * goes in sorted key order, as fmt prints maps. json writes an object's
 * members in the object's own order (build them in the order of Ollama's
 * struct fields to get Ollama's bytes).
 *
 * Rendering is bounded: a limit on nesting (checked when parsing), on the
 * output size and on the number of range iterations; a template past one
 * stops with WK_E_RANGE.
 */
#ifndef WK_GOTMPL_H
#define WK_GOTMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../base/wk_base.h"

/* A parsed template; immutable once parsed, so several threads may render
 * one at once. */
struct wk_gotmpl;

/* The default limits. */
#define WK_GOTMPL_MAX_OUTPUT ((size_t)64 << 20) /* bytes of output */
#define WK_GOTMPL_MAX_DEPTH 100                 /* nested blocks and parentheses */
#define WK_GOTMPL_MAX_ITERATIONS 10000000LL     /* range iterations in all */

/* Limits for wk_gotmpl_render_ex; a field that is 0 takes its default. */
struct wk_gotmpl_limits {
    size_t max_output;
    long long max_iterations;
};

/*
 * Parses the template src[0..len) (UTF-8; need not be NUL-terminated).
 * On success stores a new template in *out, freed with wk_gotmpl_free.
 * Errors: WK_E_FORMAT (a syntax error, an undefined variable or function:
 * the message names the line), WK_E_RANGE (nested deeper than
 * WK_GOTMPL_MAX_DEPTH), WK_E_NOMEM. *out is NULL on error; err may be NULL.
 */
enum wk_status wk_gotmpl_parse(const char *src, size_t len, struct wk_gotmpl **out,
                               struct wk_error *err);

/*
 * Executes t with data as the dot (and $); data NULL means no value. The
 * caller keeps its reference and data is not modified. On success stores a
 * NUL-terminated string in *out (freed by the caller with wk_free) and its
 * length without the NUL in *out_len (out_len may be NULL). Errors:
 * WK_E_INVALID (an execution error as Go would report it: a range over a
 * non-list, a bad comparison, an index out of range, a field of a string,
 * a function given the wrong arguments; the message names the line),
 * WK_E_RANGE (output or iteration limit passed), WK_E_NOMEM. *out is NULL
 * on error; err may be NULL.
 */
enum wk_status wk_gotmpl_render(const struct wk_gotmpl *t, const json_t *data, char **out,
                                size_t *out_len, struct wk_error *err);

/* As wk_gotmpl_render with the limits lim (NULL: the defaults). */
enum wk_status wk_gotmpl_render_ex(const struct wk_gotmpl *t, const json_t *data,
                                   const struct wk_gotmpl_limits *lim, char **out,
                                   size_t *out_len, struct wk_error *err);

/* A run of output bytes [off, off + len) and where they came from:
 * content (message text, to be kept literal when tokenizing) or not (the
 * template's scaffolding). */
struct wk_gotmpl_run {
    size_t off, len;
    bool content;
};

/*
 * Renders like wk_gotmpl_render and also says where each output byte came
 * from, so that a tokenizer can keep message text literal (a user typing
 * "<|im_end|>" gets those characters, not the control token) while parsing
 * the template's own text for special tokens. On success *runs (freed by
 * the caller with wk_free; NULL when the output is empty) holds *n_runs
 * runs that cover the output exactly, in order, none empty, adjacent runs
 * of the same kind merged. Errors as wk_gotmpl_render; *out and *runs are
 * NULL and *n_runs 0 on error.
 *
 * The content rule: content is the string values found anywhere in data
 * at the keys "Content", "content", "Prompt", "prompt", "System",
 * "system", "Response", "response", "Thinking", "thinking", "Suffix",
 * "suffix",
 * "Description", "description" (a tool's or a parameter's), and every
 * string value at any depth inside "Arguments" / "arguments" (a tool
 * call's arguments; their keys are not content). Role names, tool
 * definitions and everything else are not. The mark goes with the string
 * wherever the template takes it: printed directly ({{ .Content }},
 * {{ $m.Content }}), through variables, with / range dots, and / or,
 * index; slice of a content string stays content; print, println and
 * printf (%s, %v, %q, and %v of a list or map holding content) and json
 * (of the string or of a list or object holding it) make strings whose
 * bytes that came from content stay content (escapes of content bytes
 * included), while their own text, quotes, padding and punctuation are
 * not; other verbs (%x, %d, ...) and everything the template writes
 * itself are not content. Content is found by the identity of the jansson
 * string, so a string object shared between a content key and another key
 * counts as content in both places.
 */
enum wk_status wk_gotmpl_render_runs(const struct wk_gotmpl *t, const json_t *data, char **out,
                                     size_t *out_len, struct wk_gotmpl_run **runs, size_t *n_runs,
                                     struct wk_error *err);

/*
 * Renders t for a chat as Ollama applies a Modelfile TEMPLATE
 * (template.Execute in Ollama's template/template.go):
 *  - the messages are collated: consecutive messages of one role (other
 *    than tool) become one, their contents joined by a blank line; .System
 *    is every system message's content joined the same way;
 *  - a template that names .Messages (any field or variable identifier
 *    "messages", any case) runs once with .System, .Messages (each with
 *    .Role, .Content, .Thinking, .Images, .ToolCalls [{.ID, .Function
 *    {.Index, .Name, .Arguments}}], .ToolName, .ToolCallID), .Tools (each
 *    tool with Ollama's fields in order; a tool, the list and a tool's
 *    properties and a call's arguments print as their JSON), .Response ""
 *    and .Think false;
 *  - the messages, tool calls, tools and tool parameters are Go typed
 *    values as in Ollama (templateMessage, templateToolCall, templateTool,
 *    templateToolFunction, api.ToolProperty, ...): a field the Go struct
 *    lacks (.Nope, or .role for .Role) is an execution error naming the
 *    type, a field the request left out is the Go zero value ("", an
 *    empty list, <nil>), and they print as fmt prints them (a message as
 *    {user Hi!  [] []  }); a tool, its .Function and its
 *    .Function.Parameters print as their JSON (as Ollama's api.ToolFunction
 *    did through v0.13.5 and ollama/ollama#18391 restores; Ollama 0.14 to
 *    this writing prints Go struct syntax there); numbers in a call's
 *    arguments and in a tool's free-form values are float64 as in Go;
 *  - any other template runs once per exchange with .System, .Prompt and
 *    .Response (a system message or a user message after an answer starts
 *    the next), and the last time everything after the first action that
 *    prints .Response is cut, so the prompt ends where the answer goes; a
 *    template that names neither messages nor response gets
 *    {{ .Response }} appended, as Ollama's Parse appends it.
 * messages: a JSON array in Ollama's API shape (role, content, thinking,
 * tool_calls with function {index, name, arguments}, tool_name,
 * tool_call_id); tools: NULL or a JSON array of tools in Ollama's API
 * shape. Output and runs as wk_gotmpl_render_runs (runs may be NULL; the
 * runs mark message content, which a tokenizer keeps literal). Errors:
 * WK_E_INVALID (a message without a string role, content that is not a
 * string; an execution error naming the template line), WK_E_RANGE,
 * WK_E_NOMEM.
 */
enum wk_status wk_gotmpl_render_chat(const struct wk_gotmpl *t, const json_t *messages, const json_t *tools,
                                     char **out, size_t *out_len, struct wk_gotmpl_run **runs, size_t *n_runs,
                                     struct wk_error *err);

/* Frees a template from wk_gotmpl_parse; NULL is a no-op. */
void wk_gotmpl_free(struct wk_gotmpl *t);

#endif
