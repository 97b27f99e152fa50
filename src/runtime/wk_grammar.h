/*
 * wk_grammar.h - grammar-constrained decoding: the engine behind structured
 * output (JSON mode, JSON Schema, GBNF grammars).
 *
 * Three objects:
 *   - struct wk_grammar: a compiled grammar, immutable, shareable across
 *     threads. Built from llama.cpp's GBNF text (wk_grammar_from_gbnf) or
 *     from a JSON Schema (wk_grammar_from_json_schema, which writes GBNF
 *     and compiles it). Each rule is compiled to a byte-level DFA whose
 *     edges are bytes or calls of other rules (a recursive transition
 *     network): repetition, groups and alternation inside a rule are DFA
 *     loops, only rule references push a stack frame.
 *   - struct wk_grammar_vocab: one tokenizer's tokens as byte strings in a
 *     trie (preorder arrays, so a subtree's tokens are contiguous), built
 *     once per tokenizer and shareable across threads.
 *   - struct wk_grammar_matcher: one sequence's parse state: a set of
 *     stacks (each a DFA state plus a chain of return frames) after the
 *     bytes accepted so far, with undo for the last tokens. Not
 *     thread-safe: one sequence, one thread at a time.
 *
 * Masks: for each DFA state that can be a stack top the matcher walks the
 * token trie once with only that rule's frame (the frames below unknown)
 * and stores the tokens it accepts whatever lies below, plus a trie of
 * the remaining bytes of the tokens that run past the end of the rule;
 * at run time a mask is the union of the stored sets of the stack tops,
 * with those leftover suffixes walked against the real frames below, and
 * the last few masks are kept keyed by the whole state. This follows the
 * split of context-independent and context-dependent tokens of XGrammar
 * (Dong et al. 2024), over per-rule DFAs.
 *
 * Bounds: grammar sizes (rules, NFA and DFA states, repetition counts),
 * stacks per state (WK_GRAMMAR_MAX_STACKS, exceeded = WK_E_RANGE: the
 * matcher fails closed) and stack depth (WK_GRAMMAR_MAX_DEPTH: deeper
 * nesting is simply not allowed). Left recursion is refused at compile
 * time.
 */
#ifndef WK_GRAMMAR_H
#define WK_GRAMMAR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/wk_base.h"
#include "../tokenizer/wk_tokenizer.h"

#define WK_GRAMMAR_MAX_STACKS 4096   /* stacks in one parse state */
#define WK_GRAMMAR_MAX_DEPTH 1000    /* frames in one stack */
#define WK_GRAMMAR_MAX_HISTORY 64    /* tokens wk_grammar_matcher_rollback can undo */
#define WK_GRAMMAR_MAX_SRC (16 << 20) /* bytes of GBNF text */

/* ------------------------------------------------------------- grammar */

struct wk_grammar;

/*
 * Compiles GBNF text src[0..len) (llama.cpp's syntax: `name ::= body`
 * rules; alternation |, sequences, groups ( ), repetition * + ? {m} {m,}
 * {m,n}; "literals" and [classes] / [^classes] with the escapes \x \u \U
 * \t \r \n \\ \" \[ \] \- \^; . for any character; # comments) with the
 * rule named root (NULL: "root") as the start. Characters are Unicode code
 * points matched as their UTF-8 bytes. On success *out is a new grammar
 * (wk_grammar_free). Errors: WK_E_INVALID for a syntax error, an undefined
 * or twice-defined rule, left recursion ("left recursion in rule X") or a
 * rule that can never finish (messages give line:column where there is
 * one), WK_E_RANGE for a grammar past the size limits (refused before the
 * work where the counts show it: a rule expanding to too many NFA states,
 * or one whose longest text is too long for the DFA states allowed),
 * WK_E_NOMEM. *out is NULL on error; err may be NULL.
 */
enum wk_status wk_grammar_from_gbnf(const char *src, size_t len, const char *root,
                                    struct wk_grammar **out, struct wk_error *err);

/*
 * Compiles a JSON Schema (draft 2020-12; borrowed for the call) to a
 * grammar whose every output validates against it. The output is compact
 * JSON with one optional space after ':' and ','; object properties come
 * in the schema's order, required ones always present. Supported: type
 * (also lists), properties, required, additionalProperties (true or a
 * schema: extra members after the declared ones, keys without escapes
 * and never a declared name; absent: none when properties are given,
 * stricter than the spec but sound, any when not), maxProperties,
 * minProperties (when the required members reach it), enum, const, items,
 * prefixItems, minItems, maxItems, minLength, maxLength, pattern (a
 * regex subset), anyOf, oneOf (only with alternatives that cannot both
 * match), allOf (merged), $ref to #, #/$defs/..., #/definitions/... and
 * other local JSON pointers and to a unique $anchor (recursion allowed;
 * not to other documents or embedded $id resources), minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum (exact for integer texts; texts with
 * a fraction have at most 16 fraction digits and read, as Python's float()
 * reads them, within the bounds: every such valid text of up to 15
 * significant digits is allowed), format (date-time, date, time,
 * uuid, email, idn-email, uri, ipv4, json-pointer; simplified, every
 * text they allow valid), maxItems up to 1000 (more counts as 1000), and
 * the annotations (title, description, ...) and unknown keywords,
 * which are ignored. Errors: WK_E_UNSUPPORTED naming the keyword and its
 * JSON path (for a constraining keyword not supported), WK_E_INVALID (a
 * malformed schema, or one nothing can satisfy), WK_E_RANGE (past the size
 * limits), WK_E_NOMEM. *out is NULL on error; err may be NULL.
 */
enum wk_status wk_grammar_from_json_schema(const json_t *schema, struct wk_grammar **out,
                                           struct wk_error *err);

/*
 * The GBNF text wk_grammar_from_json_schema compiles (root rule "root"):
 * *out is a NUL-terminated string the caller frees with wk_free. Same
 * errors, except those the GBNF compiler would report.
 */
enum wk_status wk_grammar_json_schema_to_gbnf(const json_t *schema, char **out,
                                              struct wk_error *err);

/* A grammar for any JSON object (Ollama's format: "json"). Errors:
 * WK_E_NOMEM. */
enum wk_status wk_grammar_json_object(struct wk_grammar **out, struct wk_error *err);

/* Frees a grammar; g may be NULL. No matcher may still use it. */
void wk_grammar_free(struct wk_grammar *g);

/* Counts for messages and tests: rules, DFA states. */
int32_t wk_grammar_n_rules(const struct wk_grammar *g);
int32_t wk_grammar_n_states(const struct wk_grammar *g);

/* --------------------------------------------------------------- vocab */

struct wk_grammar_vocab;

/*
 * Builds the byte strings of every token of tok (wk_tokenizer_token_bytes
 * without special rendering). Control, unknown and unused tokens, and any
 * token with no bytes, are never allowed by a grammar; end-of-generation
 * tokens (wk_tokenizer_is_eog) are allowed exactly when the grammar is
 * complete. tok is borrowed for the call only. Errors: WK_E_NOMEM.
 */
enum wk_status wk_grammar_vocab_create(const struct wk_tokenizer *tok,
                                       struct wk_grammar_vocab **out, struct wk_error *err);

/*
 * As wk_grammar_vocab_create from n token byte strings: token i is
 * tokens[i][0..lens[i]) (copied; lens[i] 0 = never allowed), and the
 * n_eog ids eog_ids[] end generation. Errors: WK_E_INVALID (n < 1, an
 * eog id out of range, a token over 64 KiB), WK_E_NOMEM.
 */
enum wk_status wk_grammar_vocab_create_from_bytes(const char *const *tokens, const size_t *lens,
                                                  int32_t n, const int32_t *eog_ids,
                                                  int32_t n_eog, struct wk_grammar_vocab **out,
                                                  struct wk_error *err);

/* Frees a vocabulary; v may be NULL. No matcher may still use it. */
void wk_grammar_vocab_free(struct wk_grammar_vocab *v);

/* The number of tokens (the mask covers ceil(n / 32) words). */
int32_t wk_grammar_vocab_n_tokens(const struct wk_grammar_vocab *v);

/* ------------------------------------------------------------- matcher */

struct wk_grammar_matcher;

/*
 * Creates a matcher at the start of g over vocabulary v (both borrowed:
 * they must outlive the matcher). It precomputes the token sets of the
 * grammar's states within a budget of work and memory; the rest are
 * computed on first use, and stored sets past a memory budget are dropped
 * and computed again when needed. Errors:
 * WK_E_RANGE (the start state has too many stacks), WK_E_NOMEM.
 */
enum wk_status wk_grammar_matcher_create(const struct wk_grammar *g,
                                         const struct wk_grammar_vocab *v,
                                         struct wk_grammar_matcher **out, struct wk_error *err);

/* Frees a matcher; m may be NULL. */
void wk_grammar_matcher_free(struct wk_grammar_matcher *m);

/*
 * Writes the tokens allowed next: bitmask[ceil(n_vocab / 32)] words, bit
 * (i % 32) of word i / 32 set when token i may follow. End-of-generation
 * tokens are set when the grammar is complete. Errors: WK_E_RANGE (too
 * many stacks while looking ahead; the mask is then all clear),
 * WK_E_NOMEM. The message of the last error is in wk_grammar_matcher_error.
 */
enum wk_status wk_grammar_matcher_mask(struct wk_grammar_matcher *m, uint32_t *bitmask);

/*
 * Advances over token id. Errors: WK_E_INVALID (the token is not allowed
 * here, or out of range; the state is unchanged), WK_E_RANGE (too many
 * stacks; unchanged), WK_E_NOMEM. An end-of-generation token is accepted
 * only when complete, and finishes the matcher.
 */
enum wk_status wk_grammar_matcher_accept(struct wk_grammar_matcher *m, int32_t id);

/* Whether bytes[0..len) may follow now (the state is not changed). */
bool wk_grammar_matcher_accepts_bytes(struct wk_grammar_matcher *m, const char *bytes,
                                      size_t len);

/* Advances over raw bytes (not a token): false and unchanged when they
 * may not follow. Counts as one step for rollback. */
bool wk_grammar_matcher_accept_bytes(struct wk_grammar_matcher *m, const char *bytes, size_t len);

/* Whether the grammar accepts the text so far (end of generation is
 * allowed now). */
bool wk_grammar_matcher_is_complete(const struct wk_grammar_matcher *m);

/* Whether generation should stop: an end-of-generation token was
 * accepted, or the text is complete and nothing more may follow. */
bool wk_grammar_matcher_is_finished(const struct wk_grammar_matcher *m);

/* Undoes the last n_tokens accepted steps (at most WK_GRAMMAR_MAX_HISTORY
 * and at most as many as were accepted; more is clamped). */
void wk_grammar_matcher_rollback(struct wk_grammar_matcher *m, int32_t n_tokens);

/* Back to the start state (the precomputed sets are kept). */
void wk_grammar_matcher_reset(struct wk_grammar_matcher *m);

/* The message of the matcher's last error ("" if none); borrowed. */
const char *wk_grammar_matcher_error(const struct wk_grammar_matcher *m);

#endif /* WK_GRAMMAR_H */
