/*
 * wk_toolcall.h - pulls a model's tool calls out of its generated text, as
 * it streams, for the Ollama API (message.tool_calls) and the OpenAI API
 * (tool_calls).
 *
 * A model announces a tool call in the syntax its chat template taught it;
 * wk_toolcall_detect picks that syntax from the template's text (a Jinja
 * chat template from a GGUF, or an Ollama Go TEMPLATE), as llama.cpp's
 * common/chat.cpp and Ollama's tools parser do. The formats:
 *
 *   HERMES       Qwen 2.5 / Qwen 3 / QwQ / Hermes 2-3 / Granite 4 / ...:
 *                <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
 *                (the body may also be a JSON list of such objects, or
 *                several objects one after another)
 *   LLAMA3       Llama 3.1 / 3.2 / 3.3: {"name": "f", "parameters": {...}}
 *                ("arguments" too) as the whole answer, or after
 *                <|python_tag|>; several separated by ';' or whitespace
 *   MISTRAL      [TOOL_CALLS][{"name": "f", "arguments": {...}, "id": ...}]
 *                (Mistral Nemo) and [TOOL_CALLS]f[ARGS]{...} (Mistral Small
 *                3.2, Devstral, Ministral 3; an optional [CALL_ID]id before
 *                [ARGS] is kept as the call's id)
 *   GLM45        GLM-4.5 / 4.6 / 4.7, Ling, Laguna: <tool_call>f\n
 *                <arg_key>k</arg_key>\n<arg_value>v</arg_value>\n...</tool_call>
 *   GEMMA        Gemma 4: <|tool_call>call:f{k:<|"|>text<|"|>,n:3}<tool_call|>
 *                and FunctionGemma (Gemma 3 270M): <start_function_call>
 *                call:f{k:<escape>text<escape>}<end_function_call>. Gemma 3's
 *                own template has no tool syntax; these are the two Google
 *                ships (both in Ollama's parsers, Gemma 4's in llama.cpp's
 *                templates), and they share the call:NAME{...} body: bare
 *                keys, strings between <|"|> or <escape> delimiters (or
 *                JSON "..."), numbers, true / false / null, {...}, [...].
 *   JSON         generic: the answer is a JSON object {"name": "f",
 *                "arguments" | "parameters": {...}} or a list of them (or
 *                {"tool_calls": [...]} / {"tool_call": {...}}); Ollama's
 *                fallback for a TEMPLATE that renders .ToolCalls with no tag
 *   TAG          an Ollama TEMPLATE whose tool-call text starts with a tag
 *                of its own (Granite's <|tool_call|>[...], <function_calls>
 *                {...}</function_calls>, ...): Ollama's tools.parseTag reads
 *                it; here the tag (less a trailing '[') opens a block of
 *                JSON calls as JSON's (Command R's "tool_name" also naming
 *                the tool), which ends where the JSON value closes, at the
 *                matching closing tag </x> where the template has one, or
 *                at ``` after a tag with a fence (Command R's "Action:
 *                ```json") (wk_toolcall_detect_markers,
 *                wk_toolcall_parser_set_markers)
 *   QWEN3_CODER  (an extension) Qwen3-Coder, Qwen 3.5, Nemotron 3 Nano,
 *                Step 3.5: <tool_call>\n<function=f>\n<parameter=k>\nv\n
 *                </parameter>\n</function>\n</tool_call>
 *
 * Argument values: JSON objects as written; "arguments" given as a JSON
 * string that holds a JSON object (double-encoded) is decoded to the object.
 * GLM45 and QWEN3_CODER values are taken as JSON when they parse as JSON and
 * as strings otherwise, unless the request's tools (wk_toolcall_parser_set_
 * tools) declare that parameter a "string", which keeps it text.
 *
 * Streaming (struct wk_toolcall_parser): push the generated text in any
 * pieces; the sink gets content as soon as it cannot be the start of a
 * tool-call marker, and each tool call when its block is complete.
 *
 * Byte-exactness: the content handed out, concatenated, is the input with
 * each tool-call block removed, and with each whitespace-only gap (';' too
 * between LLAMA3 / JSON calls) that lies between a block and the start of
 * the answer, another block or the end of the answer removed. Nothing else
 * is dropped, duplicated or reordered. Content chunks are byte ranges of the
 * input; every marker is ASCII, so a chunk ends inside a UTF-8 character
 * only where an input piece did. Held back at any moment: at most a
 * marker's first bytes (up to 21), a whitespace gap that a block may still
 * follow, and an open block.
 *
 * Malformed blocks (bad JSON, no name, wrong shape, past the size limit)
 * are handed back as content, raw, with the gap before them, and flagged
 * (WK_TOOLCALL_F_MALFORMED); nothing is dropped. A block still open at
 * wk_toolcall_parser_finish is flagged WK_TOOLCALL_F_UNTERMINATED and is
 * taken as a call when its text so far parses as one (a model that stopped
 * before </tool_call>), else handed back as content.
 *
 * For LLAMA3 and JSON, whose calls have no marker, text is a call only when
 * the answer starts with '{' (JSON: or '[') after whitespace, or (LLAMA3)
 * at <|python_tag|>, which is a special token and taken anywhere; any other
 * answer streams as content at once. Such an answer that is JSON but not a
 * call (the user asked for JSON) is held until the value closes, then
 * handed back as content (flagged malformed). Use a parser only for a
 * request that offered tools.
 *
 * Limits: a block over WK_TOOLCALL_MAX_BLOCK bytes is content (flagged
 * WK_TOOLCALL_F_TOO_LARGE and malformed) and what follows streams on; so is
 * a whitespace gap past that size; GEMMA values nest at most
 * WK_TOOLCALL_MAX_DEPTH deep (jansson limits JSON's). Work is linear in the
 * input however it is split.
 *
 * Not handled: a closing marker written inside an argument's text ends the
 * block there for GLM45 / QWEN3_CODER / GEMMA (it is then usually
 * malformed, so content; HERMES and TAG, whose bodies are JSON, look for it
 * outside JSON strings only); JSON integers
 * past 64 bits make a call malformed (jansson); without the tools' schema a
 * GLM45 / QWEN3_CODER value "123" becomes the number 123; LLAMA3's
 * <|python_tag|> followed by code (built-in tools) is content.
 */
#ifndef WK_TOOLCALL_H
#define WK_TOOLCALL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../base/wk_base.h"

enum wk_toolcall_format {
    WK_TOOLCALL_NONE = 0, /* no tool-call syntax known: everything is content */
    WK_TOOLCALL_HERMES,
    WK_TOOLCALL_LLAMA3,
    WK_TOOLCALL_MISTRAL,
    WK_TOOLCALL_GLM45,
    WK_TOOLCALL_GEMMA,
    WK_TOOLCALL_JSON,
    WK_TOOLCALL_QWEN3_CODER,
    WK_TOOLCALL_TAG,
};
#define WK_TOOLCALL_N_FORMATS 9
#define WK_TOOLCALL_MAX_TAG 24 /* bytes of a TAG format's opening marker (its closing one: + 2) */

#define WK_TOOLCALL_MAX_BLOCK ((size_t)1 << 20) /* bytes of one block, markers included */
#define WK_TOOLCALL_MAX_DEPTH 64                /* nesting of GEMMA values */

/*
 * The format a chat template's text teaches, from markers in it (see
 * toolcall.c for the rules and their order). template_text[0..len) need not
 * be NUL-terminated; NULL or empty gives WK_TOOLCALL_NONE, as does a
 * template with a tool syntax wick does not parse (DeepSeek, Kimi, gpt-oss,
 * Command R, functionary, ...).
 */
enum wk_toolcall_format wk_toolcall_detect(const char *template_text, size_t len);

/*
 * As wk_toolcall_detect, and for WK_TOOLCALL_TAG the markers into open and
 * close (each at least WK_TOOLCALL_MAX_TAG + 3 bytes, NUL-terminated; close
 * "" when the block has none and ends with its JSON value). An Ollama
 * TEMPLATE's tag is found as tools.parseTag finds it (tools/template.go):
 * the first text that is not only whitespace inside the first
 * {{ if .ToolCalls }}, cut at its first '{' and trimmed; less a trailing
 * '[' (a list of calls follows). A tag "" or "[" is JSON's; one longer
 * than WK_TOOLCALL_MAX_TAG gives NONE.
 */
enum wk_toolcall_format wk_toolcall_detect_markers(const char *template_text, size_t len, char *open,
                                                   char *close);

/* The format's short name: "none", "hermes", "llama3", "mistral", "glm45",
 * "gemma", "json", "qwen3-coder", "tag"; "?" for a value out of range. */
const char *wk_toolcall_format_name(enum wk_toolcall_format fmt);

/* The format named name (as wk_toolcall_format_name gives, ASCII case
 * ignored); WK_E_NOT_FOUND (err names it) for any other string. */
enum wk_status wk_toolcall_format_from_name(const char *name, enum wk_toolcall_format *out,
                                            struct wk_error *err);

/*
 * Parses one complete tool-call block of format fmt: its whole text from
 * the opening marker (or '{' / '[' for LLAMA3 and JSON) through the closing
 * one (which may be missing: a block cut short); for TAG, whose markers
 * the parser holds, the text between them. tools (the request's tools,
 * an array of {"type": "function", "function": {...}}, or NULL) types
 * GLM45 / QWEN3_CODER values. On success *calls is a new JSON array (one
 * block may hold several calls) of objects {"name": string, "arguments":
 * object} plus "id": string when the block gave one; the caller owns it.
 * Errors: WK_E_FORMAT (not a valid call: *calls NULL), WK_E_NOMEM.
 */
enum wk_status wk_toolcall_parse_block(enum wk_toolcall_format fmt, const char *block, size_t len,
                                       const json_t *tools, json_t **calls);

/* ---------------------------------------------------------- streaming */

/* One tool call as the sink sees it. Everything is borrowed for the
 * duration of the callback: copy name / id, json_incref arguments to keep. */
struct wk_toolcall {
    const char *name;  /* NUL-terminated, not empty */
    json_t *arguments; /* always a JSON object */
    const char *id;    /* the model's own call id (MISTRAL), or NULL */
    int index;         /* 0, 1, 2, ... over the calls of this answer */
    int block;         /* 0, 1, 2, ... over the blocks that gave calls (one may give several) */
    const char *raw;   /* the block's text this call came from */
    size_t raw_len;
};

/* Where the parser's output goes, in order. Either callback may be NULL
 * (that output is dropped). A callback returning false stops the parser:
 * push / finish return WK_E_CANCELLED. content's text is borrowed. */
struct wk_toolcall_sink {
    bool (*content)(void *user, const char *text, size_t len);
    bool (*call)(void *user, const struct wk_toolcall *call);
    void *user;
};

/* Flags: what happened so far (wk_toolcall_parser_flags). */
#define WK_TOOLCALL_F_MALFORMED    1u /* a block was handed back as content */
#define WK_TOOLCALL_F_UNTERMINATED 2u /* a block was still open at finish */
#define WK_TOOLCALL_F_TOO_LARGE    4u /* a block passed WK_TOOLCALL_MAX_BLOCK */

struct wk_toolcall_parser;

/*
 * A new streaming parser for format fmt (WK_TOOLCALL_NONE passes all text
 * through as content). Free with wk_toolcall_parser_free. Errors:
 * WK_E_INVALID (fmt out of range), WK_E_NOMEM.
 */
enum wk_status wk_toolcall_parser_create(enum wk_toolcall_format fmt,
                                         struct wk_toolcall_parser **out, struct wk_error *err);

/* A TAG parser's markers (wk_toolcall_detect_markers; close "" or NULL:
 * none). Until they are set, a TAG parser passes all text through as
 * content. Errors: WK_E_INVALID (not a TAG parser, an empty open or one
 * longer than WK_TOOLCALL_MAX_TAG, a close longer than it + 2). */
enum wk_status wk_toolcall_parser_set_markers(struct wk_toolcall_parser *p, const char *open, const char *close,
                                              struct wk_error *err);

/* Frees a parser (NULL is fine). */
void wk_toolcall_parser_free(struct wk_toolcall_parser *p);

/*
 * Gives the parser the request's tools (a JSON array as in the OpenAI and
 * Ollama APIs; NULL for none), used only to keep GLM45 / QWEN3_CODER values
 * of "string" parameters as text. The parser keeps a reference.
 */
void wk_toolcall_parser_set_tools(struct wk_toolcall_parser *p, json_t *tools);

/*
 * Feeds text[0..len) (the next piece of generated text) and hands what it
 * settles to sink, in order. Errors: WK_E_NOMEM, WK_E_CANCELLED (a sink
 * callback returned false); after an error the parser may only be freed.
 */
enum wk_status wk_toolcall_parser_push(struct wk_toolcall_parser *p, const char *text, size_t len,
                                       const struct wk_toolcall_sink *sink);

/*
 * Ends the answer: hands out what is held (a marker's first bytes as
 * content; a trailing whitespace gap after a call is dropped) and settles a
 * block still open (see above). Push no more afterwards. Errors as push.
 */
enum wk_status wk_toolcall_parser_finish(struct wk_toolcall_parser *p,
                                         const struct wk_toolcall_sink *sink);

/* The WK_TOOLCALL_F_* flags of what happened so far. */
unsigned wk_toolcall_parser_flags(const struct wk_toolcall_parser *p);

/* The number of tool calls handed out so far. */
int wk_toolcall_parser_n_calls(const struct wk_toolcall_parser *p);

/*
 * The whole of a finished answer at once (a non-streamed reply): *content
 * gets the content (NUL-terminated, wk_free it; *content_len its length,
 * which may be NULL), *calls a new JSON array of {"name", "arguments"[,
 * "id"]} objects (json_decref it), *flags (may be NULL) the parser's flags.
 * tools as in wk_toolcall_parser_set_tools. Errors: WK_E_INVALID,
 * WK_E_NOMEM; outputs NULL on error.
 */
enum wk_status wk_toolcall_parse_text(enum wk_toolcall_format fmt, const char *text, size_t len,
                                      json_t *tools, char **content, size_t *content_len,
                                      json_t **calls, unsigned *flags, struct wk_error *err);

#endif
