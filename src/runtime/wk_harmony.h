/*
 * wk_harmony.h - reads gpt-oss's generated text in OpenAI's harmony format
 * into thinking, content and tool calls, as it streams, and maps Ollama's
 * think levels to the template's reasoning effort.
 *
 * A harmony turn is a run of messages, each "<|start|>HEADER<|message|>
 * BODY" closed by <|end|> (more follows), <|return|> (the answer is done)
 * or <|call|> (a tool call: the turn stops for its result). The prompt
 * ends "<|start|>assistant", so the generated text starts inside the
 * first header. The header holds the role ("assistant"), the channel
 * ("<|channel|>analysis" / "commentary" / "final"), a recipient
 * ("to=functions.NAME", before or after the channel) and a constraint
 * ("<|constrain|>json" or a bare "json"). Bodies go:
 *   analysis                     -> thinking
 *   final, or no channel         -> content
 *   a recipient (any channel)    -> a tool call: name NAME for
 *                                   functions.NAME, else the recipient
 *                                   as written (browser.search, python);
 *                                   arguments the body, a JSON object
 *                                   (else the body is handed on as
 *                                   content, flagged malformed)
 *   commentary, no recipient     -> content (a preamble to the user)
 * The framing tokens are rendered as text (the tokenizer marks them
 * user-defined for an o200k_harmony vocabulary, as llama.cpp does);
 * <|return|> and <|call|> end generation, so the text may end without
 * them: finish closes the open message as they would.
 *
 * Streaming: push text in any pieces; thinking and content go out as soon
 * as they cannot be the start of a marker (at most 10 bytes held), a
 * header and a tool call's body when complete. A header longer than
 * WK_HARMONY_MAX_HEADER bytes, or one never closed, is no header: its
 * text is content and the rest of the answer too. Bodies of calls are
 * limited to WK_TOOLCALL_MAX_BLOCK bytes (past it: content, malformed).
 *
 * Sources: OpenAI's harmony response format guide (cookbook), the
 * template llama.cpp ships as models/templates/openai-gpt-oss-120b.jinja,
 * and llama.cpp's common/chat parser for gpt-oss (read, not copied).
 */
#ifndef WK_HARMONY_H
#define WK_HARMONY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../base/wk_base.h"
#include "wk_toolcall.h"

#define WK_HARMONY_MAX_HEADER 512

/* Where the parser's output goes, in order; any callback may be NULL
 * (dropped). A callback returning false stops the parser (push / finish
 * return WK_E_CANCELLED). Texts are borrowed for the call; the call as
 * wk_toolcall.h's sink gets it (id NULL, raw the body). */
struct wk_harmony_sink {
    bool (*thinking)(void *user, const char *text, size_t len);
    bool (*content)(void *user, const char *text, size_t len);
    bool (*call)(void *user, const struct wk_toolcall *call);
    void *user;
};

struct wk_harmony_parser;

/* A new parser at the start of an assistant turn (just after
 * "<|start|>assistant"); free with wk_harmony_parser_free. Errors:
 * WK_E_NOMEM. */
enum wk_status wk_harmony_parser_create(struct wk_harmony_parser **out, struct wk_error *err);
void wk_harmony_parser_free(struct wk_harmony_parser *p);

/* Feeds text[0..len), the next piece of generated text. Errors:
 * WK_E_NOMEM, WK_E_CANCELLED; after an error the parser may only be freed. */
enum wk_status wk_harmony_parser_push(struct wk_harmony_parser *p, const char *text, size_t len,
                                      const struct wk_harmony_sink *sink);

/* Ends the answer: settles what is held (a marker's first bytes as the
 * body's text, an unclosed header as content, a tool call's body as a
 * call). Push no more afterwards. Errors as push. */
enum wk_status wk_harmony_parser_finish(struct wk_harmony_parser *p, const struct wk_harmony_sink *sink);

/* WK_TOOLCALL_F_MALFORMED when a call's body was not a JSON object. */
unsigned wk_harmony_parser_flags(const struct wk_harmony_parser *p);

/*
 * The reasoning effort ("low", "medium", "high": the template's
 * reasoning_effort variable) for an Ollama request's think value: true ->
 * "medium" (the template's default), a level string -> itself, false or
 * NULL -> NULL (gpt-oss always reasons; the caller hides the thinking).
 * Errors: WK_E_INVALID (err names the value) for any other string or type.
 */
enum wk_status wk_harmony_reasoning_effort(const json_t *think, const char **effort, struct wk_error *err);

#endif
