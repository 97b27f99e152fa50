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
    char *text; /* GN_TEXT */
    size_t len;
    struct gt_pipe *pipe;
    struct gt_list body, else_body;
};

struct wk_gotmpl {
    struct gt_list root;
};

void gt_list_free(struct gt_list *l);

/* ------------------------------------------------------------- the buffer */

struct gt_buf {
    char *p;
    size_t n, cap, max;
    enum wk_status st; /* WK_E_RANGE past max, WK_E_NOMEM */
};

bool gt_buf_add(struct gt_buf *b, const char *s, size_t n);
bool gt_buf_str(struct gt_buf *b, const char *s);
bool gt_buf_char(struct gt_buf *b, char c);
bool gt_buf_fmt(struct gt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ the values */

/* Go's truth: false for no value, false, 0, "", empty arrays and objects. */
bool gt_truth(const json_t *v);
/* Writes v as fmt's %v does (no value as <nil>). */
bool gt_print_value(struct gt_buf *b, const json_t *v);
/* A float as fmt's %v writes it, or (json) as encoding/json does. */
bool gt_format_float(struct gt_buf *b, double f, bool json);
/* fmt.Sprintf(f[0..n), args...). */
bool gt_sprintf(struct gt_buf *b, const char *f, size_t n, json_t *const *args, int n_args);
/* fmt.Sprint (ln false) or fmt.Sprintln (ln true) of args. */
bool gt_sprint(struct gt_buf *b, json_t *const *args, int n, bool ln);
/* json.Marshal of v (objects in their own key order); depth 0 at the top. */
bool gt_json_encode(struct gt_buf *b, const json_t *v, int depth);
/* Go's type name of v ("int", "string", "[]interface {}", ...). */
const char *gt_type_name(const json_t *v);

/* ------------------------------------------------------------ functions */

enum gt_func {
    GF_AND, GF_OR, GF_NOT, GF_LEN, GF_INDEX, GF_SLICE, GF_EQ, GF_NE, GF_LT, GF_LE,
    GF_GT, GF_GE, GF_PRINT, GF_PRINTF, GF_PRINTLN, GF_JSON, GF_COUNT_
};

/* The id of the function name[0..n), or -1. */
int gt_func_lookup(const char *name, size_t n);
const char *gt_func_name(int id);

/*
 * Calls function id (not and / or, which the executor short-circuits) on
 * args[0..n). On success stores a new reference (or NULL, no value) in
 * *out. Errors fill msg (size msg_size): WK_E_INVALID, WK_E_RANGE (the
 * result past max_output bytes), WK_E_NOMEM.
 */
enum wk_status gt_func_call(int id, json_t *const *args, int n, size_t max_output, json_t **out,
                            char *msg, size_t msg_size);

#endif
