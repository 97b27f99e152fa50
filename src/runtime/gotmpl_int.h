/*
 * gotmpl_int.h - internals of the Go text/template engine (wk_gotmpl.h):
 * the syntax tree the parser builds, the output buffer and the built-in
 * functions and value formatting the executor calls.
 *
 * Values are jansson references; NULL is Go's "no value" (a missing key,
 * a JSON null, nil). Functions that return a value return a new reference.
 */
#ifndef WK_GOTMPL_INT_H
#define WK_GOTMPL_INT_H

#include "wk_gotmpl.h"

#include <stdbool.h>
#include <stdint.h>

/* --------------------------------------------------------------- the tree */

enum gt_arg_kind {
    GA_DOT,    /* . */
    GA_FIELD,  /* .A.B: fields of the dot */
    GA_VAR,    /* $x.A.B (name "$" is the root) */
    GA_PIPE,   /* (pipeline).A.B */
    GA_FUNC,   /* a function name */
    GA_STRING, /* "..." or `...` */
    GA_INT,    /* 1, 'a', 0x10 */
    GA_FLOAT,  /* 1.5, 1e3 */
    GA_BOOL,   /* true / false */
    GA_NIL,    /* nil */
};

struct gt_pipe;

struct gt_arg {
    enum gt_arg_kind kind;
    char *str; /* GA_STRING text, GA_VAR name */
    size_t len;
    int64_t i; /* GA_INT, GA_BOOL; GA_FUNC: the function id */
    double f;
    char **fields; /* the field chain */
    int n_fields;
    struct gt_pipe *pipe; /* GA_PIPE */
};

struct gt_cmd {
    struct gt_arg *args;
    int n_args;
};

struct gt_pipe {
    int line;
    bool decl;   /* $x := ... */
    bool assign; /* $x = ... */
    int n_vars;
    char *vars[2];
    struct gt_cmd *cmds;
    int n_cmds;
};

enum gt_node_kind { GN_TEXT, GN_ACTION, GN_IF, GN_WITH, GN_RANGE, GN_BREAK, GN_CONTINUE };

struct gt_node;
struct gt_list {
    struct gt_node **nodes;
    int n, cap;
};

struct gt_node {
    enum gt_node_kind kind;
    int line;
    int ord; /* its place in the walk of Ollama's deleteNode (gotmpl_ollama.c) */
    char *text; /* GN_TEXT */
    size_t len;
    struct gt_pipe *pipe;
    struct gt_list body, else_body;
};

struct wk_gotmpl {
    struct gt_list root;
    /* Ollama's view (gt_tree_index): the ord of the first action that
     * prints a .Response field (-1: none), and whether an identifier
     * "messages" / "response" appears anywhere (any case) */
    int response_ord;
    bool uses_messages, uses_response;
};

void gt_list_free(struct gt_list *l);
/* Numbers t's nodes (gt_node.ord) and fills response_ord, uses_messages
 * and uses_response (gotmpl_ollama.c); called once by the parser. */
void gt_tree_index(struct wk_gotmpl *t);

/* ------------------------------------------------------------- Go types */

/*
 * The data is jansson values, seen as Go's map[string]any; a value may
 * also be recorded as one of Go's typed values (a struct, a map or slice
 * type, with or without a String method), as Ollama's template data is:
 * its fields then follow Go's rules (a field the struct lacks is an
 * error, a missing member is the field's zero value), and it prints as
 * fmt prints the Go value. The record goes by the identity of the jansson
 * value (gt_prov_set_type).
 */

/* A field's Go zero value, what a missing or null member reads as. */
enum gt_zero {
    GZ_STRING, /* "" */
    GZ_INT,    /* 0 */
    GZ_ANY,    /* a nil interface: no value */
    GZ_SLICE,  /* a nil slice: prints [], len 0, json null */
    GZ_MAP,    /* a nil map */
    GZ_PTR,    /* a nil pointer: prints <nil>, json null */
    GZ_STRUCT, /* the struct with every field zero */
};

enum gt_kind { GT_STRUCT, GT_MAP, GT_SLICE };

/* How %v and %s print a value of the type: as fmt prints the kind, or
 * through a String method: its JSON, or api.PropertyType's (one name as
 * itself, several as a list). */
enum gt_show { GS_PLAIN, GS_JSON, GS_PROPTYPE };

struct gt_type;

struct gt_field {
    const char *name; /* Go's field name */
    const char *key;  /* the member of the object that holds it */
    enum gt_zero zero;
    const struct gt_type *type; /* its type where that matters (GZ_MAP, GZ_PTR, GZ_STRUCT, a slice type) */
    bool omitempty; /* json.Marshal leaves it out when empty (null; "", 0, no elements unless GZ_ANY) */
};

struct gt_type {
    const char *name; /* as Go's messages write it: "*template.templateMessage" */
    enum gt_kind kind;
    bool pointer; /* a pointer to the struct: fmt's %v writes &{...} */
    enum gt_show show;
    const char *nil_text;          /* a nil value of a type with a String method: what it returns */
    const struct gt_field *fields; /* GT_STRUCT: the fields in order */
    int n_fields;
    /* GT_MAP: the element type, a missing key reading as its zero struct
     * (NULL: as no value) */
    const struct gt_type *elem;
};

/* A value of the data recorded as a Go type (nil: a nil slice, map or
 * pointer of that type). */
struct gt_typed {
    const json_t *v;
    const struct gt_type *type;
    bool nil;
};

/* api.ToolProperty (gotmpl_ollama.c), which toTypeScriptType takes. */
extern const struct gt_type gt_type_tool_property;

/* How gt_render runs a template. */
struct gt_render_opts {
    const struct wk_gotmpl_limits *lim; /* NULL: the defaults */
    /* skip every node whose ord is past t->response_ord, as Ollama's
     * legacy rendering cuts the template after {{ .Response }} */
    bool cut_after_response;
    /* values of the data that are Go typed values (they must outlive the
     * rendering) */
    const struct gt_typed *typed;
    size_t n_typed;
};

/* Renders t with opts; with runs, the provenance runs too (see
 * wk_gotmpl_render_runs; typed values need runs). */
enum wk_status gt_render(const struct wk_gotmpl *t, const json_t *data, const struct gt_render_opts *opts,
                         char **out, size_t *out_len, struct wk_gotmpl_run **runs, size_t *n_runs,
                         struct wk_error *err);

/* ------------------------------------------------------------- the buffer */

/* A range of bytes that came from message content (wk_gotmpl_render_runs). */
struct gt_span {
    size_t off, len;
};

struct gt_prov;

struct gt_buf {
    char *p;
    size_t n, cap, max;
    enum wk_status st; /* WK_E_RANGE past max, WK_E_NOMEM */
    /* With prov (NULL: no tracking), the content spans of p, in order,
     * none empty, adjacent ones merged; freed by gt_buf_free. */
    const struct gt_prov *prov;
    struct gt_span *spans;
    size_t n_spans, cap_spans;
};

bool gt_buf_add(struct gt_buf *b, const char *s, size_t n);
bool gt_buf_str(struct gt_buf *b, const char *s);
bool gt_buf_char(struct gt_buf *b, char c);
bool gt_buf_fmt(struct gt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Frees p and the spans of b. */
void gt_buf_free(struct gt_buf *b);
/* Records b's bytes [from, to) as content (a no-op without b->prov). */
bool gt_buf_mark(struct gt_buf *b, size_t from, size_t to);
/* Adds s[0..n), the bytes in the spans sp[0..n_sp) of s marked content. */
bool gt_buf_add_marked(struct gt_buf *b, const char *s, size_t n, const struct gt_span *sp,
                       size_t n_sp);
/* Whether byte i is in the spans sp[0..n_sp); *k (start 0) moves along
 * them as i grows. */
bool gt_span_has(const struct gt_span *sp, size_t n_sp, size_t *k, size_t i);
/* The runs of b's first len bytes (the output without its NUL). */
enum wk_status gt_buf_runs(const struct gt_buf *b, size_t len, struct wk_gotmpl_run **runs,
                           size_t *n_runs);

/* ------------------------------------------------------------ provenance */

/* The table of content strings of data (the rule of wk_gotmpl.h); NULL
 * when out of memory. */
struct gt_prov *gt_prov_new(const json_t *data);
void gt_prov_free(struct gt_prov *p);
/* Records v as a value of Go type ty (nil: a nil slice, map or pointer);
 * own: p keeps a reference to v, else v must outlive p. False when out
 * of memory. */
bool gt_prov_set_type(struct gt_prov *p, const json_t *v, const struct gt_type *ty, bool nil, bool own);
/* The Go type recorded for v (NULL: none, a plain JSON value; p may be
 * NULL); *nil (may be NULL) says whether v is a nil value of it. */
const struct gt_type *gt_prov_type(const struct gt_prov *p, const json_t *v, bool *nil);
/* A new reference to the zero value of field f (NULL: no value, or out
 * of memory: *nomem set); the same value each time for one field. */
json_t *gt_prov_zero(struct gt_prov *p, const struct gt_field *f, bool *nomem);
/* A new reference to the zero struct of type ty, as gt_prov_zero. */
json_t *gt_prov_zero_struct(struct gt_prov *p, const struct gt_type *ty, bool *nomem);
/* The content spans of the string v (NULL, *n 0: none). */
const struct gt_span *gt_prov_get(const struct gt_prov *p, const json_t *v, size_t *n);
/* Records the content spans[0..n) (wk_malloc'd, taken over) of v, a
 * string a function made; keeps a reference to v. p NULL: frees spans. */
bool gt_prov_add(struct gt_prov *p, json_t *v, struct gt_span *spans, size_t n);

/* ------------------------------------------------------------ the values */

/* Go's truth: false for no value, false, 0, "", empty arrays and objects;
 * true for a struct (a value recorded in p as a Go struct; p may be NULL). */
bool gt_truth(const struct gt_prov *p, const json_t *v);
/* Writes v as fmt's %v does (no value as <nil>), with b->prov's types. */
bool gt_print_value(struct gt_buf *b, const json_t *v);
/* Writes v as an action {{ v }} prints it: as %v, but a pointer to a
 * struct without its & (text/template prints what it points to). */
bool gt_print_action(struct gt_buf *b, const json_t *v);
/* A float as fmt's %v writes it, or (json) as encoding/json does. */
bool gt_format_float(struct gt_buf *b, double f, bool json);
/* fmt.Sprintf(f[0..n), args...). */
bool gt_sprintf(struct gt_buf *b, const char *f, size_t n, json_t *const *args, int n_args);
/* fmt.Sprint (ln false) or fmt.Sprintln (ln true) of args. */
bool gt_sprint(struct gt_buf *b, json_t *const *args, int n, bool ln);
/* json.Marshal of v (objects in their own key order); depth 0 at the top. */
bool gt_json_encode(struct gt_buf *b, const json_t *v, int depth);
/* Go's type name of v ("int", "string", "[]interface {}", ...; a typed
 * value's type as p records it; p may be NULL). */
const char *gt_type_name(const struct gt_prov *p, const json_t *v);

/* ------------------------------------------------------------ functions */

enum gt_func {
    GF_AND, GF_OR, GF_NOT, GF_LEN, GF_INDEX, GF_SLICE, GF_EQ, GF_NE, GF_LT, GF_LE,
    GF_GT, GF_GE, GF_PRINT, GF_PRINTF, GF_PRINTLN, GF_JSON, GF_CURRENT_DATE, GF_YESTERDAY_DATE,
    GF_TO_TS_TYPE, GF_COUNT_
};

/* Ollama's currentDate and yesterdayDate (GF_CURRENT_DATE,
 * GF_YESTERDAY_DATE: the local date, or the day before, as YYYY-MM-DD;
 * any string arguments are ignored) and toTypeScriptType (GF_TO_TS_TYPE:
 * an api.ToolProperty's TypeScript type, "any" for anything else);
 * gotmpl_ollama.c. Arguments and errors as gt_func_call. */
enum wk_status gt_ollama_call(int id, json_t *const *args, int n, struct gt_prov *prov, json_t **out,
                              char *msg, size_t msg_size);

/* The id of the function name[0..n), or -1. */
int gt_func_lookup(const char *name, size_t n);
const char *gt_func_name(int id);

/*
 * Calls function id (not and / or, which the executor short-circuits) on
 * args[0..n). On success stores a new reference (or NULL, no value) in
 * *out; with prov, the strings it makes from content carry the mark (see
 * gt_prov_add). Errors fill msg (size msg_size): WK_E_INVALID, WK_E_RANGE (the
 * result past max_output bytes), WK_E_NOMEM.
 */
enum wk_status gt_func_call(int id, json_t *const *args, int n, size_t max_output,
                            struct gt_prov *prov, json_t **out, char *msg, size_t msg_size);

#endif
