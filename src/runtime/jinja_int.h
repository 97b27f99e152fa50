/*
 * jinja_int.h - the internals of the Jinja engine (wk_jinja.h): tokens,
 * the syntax tree, runtime values and the helpers the lexer, parser,
 * evaluator and filters share.
 */
#ifndef WK_JINJA_INT_H
#define WK_JINJA_INT_H

#include "wk_jinja.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- tokens ---- */
enum jtok {
    JT_EOF, JT_DATA, JT_VAR_BEGIN, JT_VAR_END, JT_BLOCK_BEGIN, JT_BLOCK_END,
    JT_NAME, JT_STRING, JT_INT, JT_FLOAT, JT_OP
};

struct jtoken {
    enum jtok type;
    int line;
    const char *s; /* into the source (DATA, NAME, OP) or owned (STRING) */
    size_t len;
    long long ival;
    double fval;
};

struct jtokens {
    struct jtoken *v;
    size_t n, cap;
};

/* Splits src into tokens with trim_blocks, lstrip_blocks and the - / +
 * markers applied. STRING tokens own s (free with jinja_tokens_free). */
enum wk_status jinja_lex(const char *src, size_t len, struct jtokens *out, struct wk_error *err);
void jinja_tokens_free(struct jtokens *t);

/* ---- syntax tree ---- */
enum jnode {
    /* statements */
    JN_TEXT, JN_OUT, JN_IF, JN_FOR, JN_SET, JN_SETBLOCK, JN_MACRO, JN_CALLBLOCK, JN_FILTERBLOCK,
    JN_BREAK, JN_CONTINUE, JN_BODY,
    /* expressions */
    JE_LIT, JE_NAME, JE_ATTR, JE_ITEM, JE_SLICE, JE_CALL, JE_FILTER, JE_TEST, JE_NEG, JE_POS,
    JE_NOT, JE_BIN, JE_AND, JE_OR, JE_CMP, JE_COND, JE_LIST, JE_TUPLE, JE_DICT, JE_KWARG
};

enum jcmp { JC_EQ, JC_NE, JC_LT, JC_LE, JC_GT, JC_GE, JC_IN, JC_NOTIN };

struct jnode_vec {
    struct jnode_s **v;
    size_t n, cap;
};

struct jnode_s {
    enum jnode kind;
    int line;
    int op;      /* JE_BIN: '+', '-', '*', '/', 'F' (//), '%', 'P' (**), '~'; JE_CMP: enum jcmp */
    bool negate; /* JE_TEST: "is not" */
    char *str;   /* name, attribute, filter or test name, text (owned) */
    size_t len;
    json_t *lit; /* JE_LIT */
    struct jnode_s *a, *b, *c, *d;
    struct jnode_vec args, kwargs, body, orelse;
};

struct wk_jinja {
    struct jnode_s *root; /* a JN_BODY */
    long long fixed_time; /* < 0: now */
};

enum wk_status jinja_parse_tokens(const struct jtokens *toks, struct jnode_s **root,
                                  struct wk_error *err);
void jinja_node_free(struct jnode_s *n);

/* ---- values ---- */
enum jv_kind {
    JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_NS,
    JV_MACRO, JV_FUNC, JV_METHOD, JV_LOOP, JV_GEN
};

struct jframe;
/* The state behind loop: the items iterated and the current index. */
struct jloop {
    json_t *items;
    size_t index, length;
};

/* A runtime value. STR, LIST, DICT, NS and GEN hold a reference to j (a
 * jansson string, array, object, object, array); METHOD holds its receiver
 * in recv. GEN is what jinja2's generator filters (map, select, reject,
 * selectattr, rejectattr, batch, unique, items) return: its items are
 * computed eagerly into j, iterating it empties j (a generator runs once),
 * it is always true, has no len() and no JSON form; name is the Python
 * function it prints as. UNDEF may carry why it is undefined: owner (a
 * static type repr such as "dict object" or "None") and name, or, when
 * has_index, the integer key in u.i. */
struct jv {
    enum jv_kind k;
    bool tuple; /* a LIST made by a tuple literal or items(): prints with () */
    bool safe;  /* a STR that is markupsafe's Markup (from |safe, |escape): + escapes a plain str operand */
    union {
        bool b;
        long long i;
        double f;
        json_t *j;
        const struct jnode_s *macro;
        int func;
        struct jloop *loop;
    } u;
    bool has_index;         /* UNDEF: missing an integer key, u.i */
    const char *name;       /* UNDEF: the missing name; METHOD, FUNC, GEN: its name */
    const char *owner;      /* UNDEF: the object the name was missing from */
    json_t *hold;           /* a reference keeping name alive, or NULL */
    struct jv *recv;        /* METHOD: the receiver (owned) */
    struct jframe *closure; /* MACRO: the frame it was defined in */
};

#define JV_UNDEF_V ((struct jv){.k = JV_UNDEF})
#define JV_NONE_V ((struct jv){.k = JV_NONE})

static inline struct jv jv_bool(bool b) { return (struct jv){.k = JV_BOOL, .u.b = b}; }
static inline struct jv jv_int(long long i) { return (struct jv){.k = JV_INT, .u.i = i}; }
static inline struct jv jv_float(double f) { return (struct jv){.k = JV_FLOAT, .u.f = f}; }

/* An output buffer with a cap; failing appends record WK_E_NOMEM or
 * WK_E_RANGE in st and are then no-ops. */
struct jbuf {
    char *p;
    size_t n, cap, limit;
    enum wk_status st;
    uint8_t *t; /* NULL, or one provenance byte per byte of p (1: content) */
};
/* Appends bytes that are not content. */
void jbuf_put(struct jbuf *b, const char *s, size_t n);
/* Appends bytes [off, off+n) of the string s (a jansson string / a JV_STR
 * value; other values append nothing) with their provenance. */
void jbuf_put_j(struct jbuf *b, const json_t *s, size_t off, size_t n);
void jbuf_put_v(struct jbuf *b, const struct jv *s, size_t off, size_t n);
/* Appends s[0..n) with the provenance bits[0..n) (NULL: not content). */
void jbuf_put_bits(struct jbuf *b, const char *s, const uint8_t *bits, size_t n);
/* Frees a buffer not passed to jv_str_take. */
void jbuf_free(struct jbuf *b);
void jbuf_puts(struct jbuf *b, const char *s);
/* Appends n copies of ch (not content), the size checked first. */
void jbuf_fill(struct jbuf *b, char ch, unsigned long long n);
/* Makes room for more bytes (false when the cap or memory refuses). */
bool jbuf_reserve(struct jbuf *b, size_t more);
void jbuf_printf(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The render state. */
struct jctx {
    const struct wk_jinja *t;
    struct jbuf *out;
    struct wk_error *err;
    enum wk_status st;
    int depth;
    long long iterations;
    long long steps;            /* the work budget spent, but for bytes */
    unsigned long long bytes;   /* bytes of text copied or scanned */
    struct jctx *saved_active;  /* jinja_active_ctx before this render */
    struct jframe *globals;
    struct jframe *frame; /* the innermost scope */
    const struct jnode_s *caller_body; /* the body of the enclosing {% call %} */
    struct jframe *caller_frame;
};

/* The render in progress on this thread (NULL: none) and its
 * bookkeeping: jinja_track.c. jinja_track_begin makes c the active render
 * and starts its marks (tuples, nesting depths); jinja_track_end ends
 * them and restores the previous active render. */
extern _Thread_local struct jctx *jinja_active_ctx;
void jinja_track_begin(struct jctx *c);
void jinja_track_end(struct jctx *c);
/* Fails c with "template too expensive" (once); returns false. */
bool jinja_over_budget(struct jctx *c);
/* A step of the work budget stands for this many bytes of text copied
 * or scanned. */
#define JINJA_STEP_BYTES 32
/* Charges steps and bytes to the active render's work budget; false
 * when the render has failed or is past the budget (the error is then
 * set). Without an active render, true. */
static inline bool jinja_cost(long long steps, size_t bytes)
{
    struct jctx *c = jinja_active_ctx;
    if (!c) return true;
    c->steps += steps;
    c->bytes += bytes;
    if (c->steps + (long long)(c->bytes / JINJA_STEP_BYTES) > WK_JINJA_MAX_STEPS) return jinja_over_budget(c);
    return c->st == WK_OK;
}
/* Fails c (when not NULL and not failed already) with "WHAT larger than
 * the limit": a string of n bytes passing WK_JINJA_MAX_OUTPUT. */
void jinja_too_large(struct jctx *c, const char *what, unsigned long long n);
/* Whether a list of n items is within WK_JINJA_MAX_ITEMS; fails c (when
 * not NULL) if not. Call it before making the list. */
bool jinja_items_ok(struct jctx *c, unsigned long long n);
/* Whether the list or dict j (anything else passes) nests at most
 * WK_JINJA_MAX_NESTING deep; fails c (when not NULL) if not. Call it on
 * each list or dict made from other values that may be lists or dicts
 * (never on a namespace's own object, which changes). */
bool jinja_nest_ok(struct jctx *c, json_t *j);

/* values: jinja_value.c */
void jv_free(struct jv *v);
struct jv jv_copy(const struct jv *v);
struct jv jv_from_json(json_t *j); /* takes a new reference */
struct jv jv_str(const char *s, size_t n);
struct jv jv_str_take(struct jbuf *b); /* b's text; frees b */
bool jv_is_str(const struct jv *v);
/* markupsafe.escape(s): & < > ' " as entities; the result is safe. */
struct jv jinja_escape(const struct jv *s);
const char *jv_s(const struct jv *v);
size_t jv_len_s(const struct jv *v);
bool jv_truthy(const struct jv *v);
bool jv_equal(const struct jv *a, const struct jv *b);
const char *jv_type_name(const struct jv *v);
/* A json value (a new reference) of v, or NULL when v has no JSON form. */
json_t *jv_to_json(const struct jv *v);
/* Python str(v) / repr(v) appended to b. */
void jv_write_str(struct jbuf *b, const struct jv *v);
void jv_write_repr(struct jbuf *b, const struct jv *v);
void jinja_write_float(struct jbuf *b, double f);
/* How json.dumps formats: newlines (indent is not None), then each level
 * indented by indent[0..indent_len) or, when indent is NULL, by spaces
 * spaces; the separators between items and after keys; whether keys are
 * sorted and non-ASCII characters escaped. */
struct jjson_fmt {
    bool newlines, sort_keys, ascii;
    const char *indent, *item_sep, *key_sep;
    size_t indent_len, item_len, key_len;
    unsigned long long spaces;
};
/* json.dumps(j) with the format f, at nesting level (0 at the top). */
void jinja_json_dump(struct jbuf *b, json_t *j, const struct jjson_fmt *f, int level);
int jv_compare(struct jctx *c, const struct jv *a, const struct jv *b, bool *ok);
/* Number of elements of a sequence/mapping/string (code points); -1 if none. */
long long jv_length(const struct jv *v);
/* The items of an iterable as a new array (dicts: keys; strings: chars). */
json_t *jv_iter_list(struct jctx *c, const struct jv *v);
size_t utf8_count(const char *s, size_t n);
static inline bool jv_refd(enum jv_kind k) { return k == JV_STR || k == JV_LIST || k == JV_DICT || k == JV_NS || k == JV_GEN; }

/* Dict keys. A jansson object's keys are strings, so a non-string key is
 * stored as "\x01" + a type letter + text: i (int), f (float repr), b (bool
 * 0/1), n (None); a str key that starts with "\x01" is stored as "\x01s" +
 * the key. jv_key_encode writes k's stored form, NUL-terminated, into b
 * (false, with the error set, for an unhashable key); jv_key_decode makes
 * the key value of a stored key. */
bool jv_key_encode(struct jctx *c, const struct jv *k, struct jbuf *b);
struct jv jv_key_decode(const char *key);

/* Tuples. A tuple stored inside a list or dict is a jansson array marked in
 * the render's marks (jinja_track.c), so that it reads back, and prints,
 * as a tuple. */
bool jinja_is_tuple(const json_t *a);
void jinja_mark_tuple(json_t *a);
/* Undefined stored in a list or dict literal (jinja2 keeps it there; a
 * JSON array or object cannot hold it): one shared jansson object, found
 * by identity. It reads back as undefined (jv_from_json), prints in a
 * container as "Undefined" and is not JSON serializable (tojson), as in
 * Python. */
json_t *jinja_undef_json(void);
/* A generator value of the items of a (taken), printing as Python's name. */
struct jv jv_gen(json_t *a, const char *name);
/* The failure of using the undefined v (its name and owner in the message). */
void jinja_undef_fail(struct jctx *c, const struct jv *v);
/* An undefined value for owner's missing attribute or key name (a string
 * that lives as long as the template, or that hold, when not NULL, keeps
 * alive: the value takes a new reference to it). */
struct jv jv_undef_in(const struct jv *owner, const char *name, json_t *hold);

/* Provenance: jinja_taint.c. While a render that asked for runs is in
 * progress (jinja_taint_begin to jinja_taint_end, per thread), strings may
 * carry one byte per byte saying whether it came from content;
 * jinja_taint_get gives them (NULL: no content bytes), jinja_taint_set
 * records them for s (bits NULL: all content; a no-op when inactive, when
 * s already has some, or when no bit is set). jinja_taint_vars marks the
 * content strings of the variables. jinja_substr / jv_substr make the
 * substring [off, off+n) of s keeping its bits (jv_substr of a non-string
 * is ""). */
void jinja_taint_begin(void);
void jinja_taint_end(void);
bool jinja_taint_on(void);
const uint8_t *jinja_taint_get(const json_t *s);
void jinja_taint_set(json_t *s, const uint8_t *bits);
void jinja_taint_vars(const json_t *vars);
json_t *jinja_substr(const json_t *s, size_t off, size_t n);
struct jv jv_substr(const struct jv *s, size_t off, size_t n);

/* errors */
enum wk_status jinja_fail(struct jctx *c, enum wk_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* eval: jinja_eval.c */
struct jv jinja_eval(struct jctx *c, const struct jnode_s *n);
struct jv jinja_call_macro(struct jctx *c, const struct jv *m, struct jv *args, size_t nargs,
                           const char **kwnames, struct jv *kwvals, size_t nkw,
                           const struct jnode_s *caller);
/* a op b for the binary operators of JE_BIN but ~. */
struct jv jinja_arith(struct jctx *c, int op, struct jv *a, struct jv *b);
struct jv jinja_getattr(struct jctx *c, const struct jv *obj, const char *name);
struct jv jinja_getitem(struct jctx *c, const struct jv *obj, const struct jv *key);

/* filters, tests, methods: jinja_filters.c, jinja_methods.c */
struct jv jinja_filter(struct jctx *c, const char *name, struct jv *v, struct jv *args,
                       size_t nargs, const char **kwnames, struct jv *kwvals, size_t nkw);
bool jinja_test(struct jctx *c, const char *name, const struct jv *v, struct jv *args,
                size_t nargs);
bool jinja_filter_known(const char *name);
/* Python's str.format of s (a str) with args and keyword arguments. */
struct jv jinja_str_format(struct jctx *c, const struct jv *s, struct jv *args, size_t nargs,
                           const char **kwnames, struct jv *kwvals, size_t nkw);
struct jv jinja_filter_more(struct jctx *c, const char *name, struct jv *v, struct jv *args, size_t nargs,
                            const char **kwnames, struct jv *kwvals, size_t nkw);
bool jinja_test_known(const char *name);
bool jinja_has_method(const struct jv *recv, const char *name);
struct jv jinja_call_method(struct jctx *c, const struct jv *m, struct jv *args, size_t nargs,
                            const char **kwnames, struct jv *kwvals, size_t nkw);
struct jv jinja_call_func(struct jctx *c, const struct jv *f, struct jv *args, size_t nargs,
                          const char **kwnames, struct jv *kwvals, size_t nkw);

#endif
