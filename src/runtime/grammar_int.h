/*
 * grammar_int.h - internals shared by the grammar engine's files
 * (wk_grammar.h): the GBNF syntax tree, the compiled per-rule DFAs, the
 * token trie and the helpers the matcher uses to step through them.
 *
 * Pipeline: GBNF text --grammar_gbnf.c--> syntax tree (struct gast)
 * --grammar_compile.c--> per rule a Thompson NFA over bytes (UTF-8) with
 * call edges, determinized into DFA states (struct gstate). JSON Schema
 * (grammar_schema*.c, grammar_regex.c) is first written as GBNF text.
 */
#ifndef WK_GRAMMAR_INT_H
#define WK_GRAMMAR_INT_H

#include "wk_grammar.h"

#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------ limits */

#define GR_MAX_AST_NODES (4 << 20)
#define GR_MAX_RULES 200000
#define GR_MAX_REPEAT 100000       /* n of {m,n} in GBNF */
#define GR_MAX_NFA_STATES (4 << 20) /* in one rule's NFA */
#define GR_MAX_NFA_EDGES (8 << 20)  /* in one rule's NFA */
#define GR_MAX_VISITS (32 << 20)    /* syntax nodes of one rule, with the rules copied in */
#define GR_MAX_DFA_STATES 150000   /* in the whole grammar */
#define GR_MAX_SET_POOL (6 << 20)  /* NFA state ids in all DFA state sets of a rule */
#define GR_MAX_WORK 15000000       /* NFA states and edges visited while determinizing */
#define GR_INLINE_MAX 256          /* syntax nodes of a rule inlined into its callers */

/* ------------------------------------------------------- syntax tree */

enum gast_kind {
    GA_EMPTY = 0, /* matches "" */
    GA_BYTES,     /* a literal: bytes[a .. a+b) */
    GA_CLASS,     /* code points: ranges[a .. a+b) (pairs lo, hi), already complemented */
    GA_SEQ,       /* children in order */
    GA_ALT,       /* one of the children */
    GA_REP,       /* child repeated a..b times (b = -1: unbounded) */
    GA_REF,       /* rule a */
};

struct gast {
    uint8_t kind;
    int32_t a, b;
    int32_t child, next; /* first child, next sibling: -1 none */
};

struct gast_rule {
    int32_t name;   /* offset into names */
    int32_t body;   /* syntax node, -1 while undefined */
    int32_t line, col; /* where defined (or first used, while undefined) */
};

struct gast_tree {
    struct gast *nodes;
    int32_t n_nodes, cap_nodes;
    uint8_t *bytes;
    int32_t n_bytes, cap_bytes;
    uint32_t *ranges; /* pairs */
    int32_t n_ranges, cap_ranges;
    struct gast_rule *rules;
    int32_t n_rules, cap_rules;
    char *names;
    int32_t n_names, cap_names;
};

void wk__gast_deinit(struct gast_tree *t);
/* Parses GBNF text into t (zeroed by the caller). Errors as wk_grammar_from_gbnf. */
enum wk_status wk__gbnf_parse(const char *src, size_t len, struct gast_tree *t,
                              struct wk_error *err);
/* The rule named name[0..len), or -1. */
int32_t wk__gast_find_rule(const struct gast_tree *t, const char *name, size_t len);
/* Compiles a parsed tree with root rule index root into a grammar. */
enum wk_status wk__grammar_compile(const struct gast_tree *t, int32_t root,
                                   struct wk_grammar **out, struct wk_error *err);

/* ------------------------------------------------------ compiled DFA */

enum {
    GS_FINAL = 1,      /* the rule may end here */
    GS_BYTES = 2,      /* has byte edges: may be a stack top */
    GS_CALLS = 4,      /* has call edges */
    GS_PURE_FINAL = 8, /* final with no edges: returning here is a tail call */
};

struct gstate {
    int32_t rule;
    int32_t r_off;   /* byte ranges grange[r_off .. r_off+n_r), sorted */
    int32_t n_r;
    int32_t table;   /* -1, or a 256-entry row of tables[] */
    int32_t c_off;   /* calls gcall[c_off .. c_off+n_c) */
    int32_t n_c;
    uint32_t flags;
};

struct grange {
    uint8_t lo, hi;
    int32_t to;
};

struct gcall {
    int32_t rule, to;
};

struct wk_grammar {
    int32_t n_rules, root;
    int32_t *rule_start; /* DFA start state per rule; -1 for rules only inlined */
    char **rule_names;
    struct gstate *states;
    int32_t n_states;
    struct grange *ranges;
    int32_t n_ranges;
    int32_t *tables;
    int32_t n_tables;
    struct gcall *calls;
    int32_t n_calls;
};

/* The DFA state after byte b from state q, or -1. */
static inline int32_t wk__gstep(const struct wk_grammar *g, int32_t q, uint8_t b)
{
    const struct gstate *s = &g->states[q];
    if (s->table >= 0) return g->tables[(size_t)s->table * 256 + b];
    const struct grange *r = g->ranges + s->r_off;
    for (int32_t i = 0; i < s->n_r; i++) {
        if (b < r[i].lo) return -1;
        if (b <= r[i].hi) return r[i].to;
    }
    return -1;
}

/* ------------------------------------------------------- token trie */

/*
 * Tokens as a trie in preorder: node 0 is the root (the empty prefix);
 * node i's subtree is [i, i + size[i]); its children are i+1, then each
 * next one at c + size[c]. The tokens whose bytes end at node i are
 * tok[tok_off[i] .. tok_off[i+1]), so a subtree's tokens are the
 * contiguous tok[tok_off[i] .. tok_off[i + size[i]]).
 */
struct gtrie {
    int32_t n_nodes;
    uint8_t *byte;
    int32_t *size;
    int32_t *tok_off; /* n_nodes + 1 */
    int32_t *tok;
    int32_t max_depth;
};

/* Builds a trie from n strings (strs[i][0..lens[i]), ids[i]); empty
 * strings are skipped. Errors: WK_E_NOMEM. */
enum wk_status wk__gtrie_build(struct gtrie *t, const uint8_t *const *strs, const uint32_t *lens,
                               const int32_t *ids, int32_t n);
void wk__gtrie_deinit(struct gtrie *t);

struct wk_grammar_vocab {
    int32_t n_tokens;
    int32_t n_words; /* ceil(n_tokens / 32) */
    struct gtrie trie;
    uint8_t **bytes; /* per token (NULL: never allowed) */
    uint32_t *lens;
    int32_t *eog;
    int32_t n_eog;
    uint8_t *is_eog; /* per token */
};


/* ------------------------------------------------------------ matcher */

#define GM_NIL (-1) /* below the last frame: the grammar's end (or, in a
                     * precomputation walk, the unknown frames below) */

/* One stack: a DFA state with byte edges (the top) and its return frame. */
struct gpair {
    int32_t q, parent;
};

/* Interned return frames (q, parent): equal stacks share ids. Nodes made
 * while looking ahead are removed again last-in first-out (truncate),
 * which linear probing allows. */
struct gnodes {
    int32_t *q, *parent, *depth;
    int32_t n, cap;
    int32_t *slot;
    uint32_t mask;
};

/* What the token walk found for one DFA state (precomputed). */
struct gtc {
    int32_t n_acc;   /* tokens accepted whatever the frames below */
    uint32_t *bits;  /* n_words, when dense */
    int32_t *ids;    /* n_acc ids, when sparse */
    struct gtrie *sfx; /* tokens running past the rule's end: their rest, or NULL */
    int64_t bytes;     /* held by bits, ids and sfx */
    bool done;
};

struct gsnap {
    struct gpair *p;
    int32_t n, cap;
    bool accepting, terminated;
};

#define GM_LRU 8
struct glru {
    uint64_t key;
    struct gpair *p;
    int32_t n, cap;
    bool accepting, used;
    uint32_t *bits;
    uint64_t tick;
};

struct wk_grammar_matcher {
    const struct wk_grammar *g;
    const struct wk_grammar_vocab *v;
    struct gnodes nodes;
    struct gsnap cur;
    struct gsnap hist[WK_GRAMMAR_MAX_HISTORY];
    int32_t hist_head, hist_n;
    int32_t compact_at;
    /* closure scratch */
    struct gpair *work;
    int32_t n_work, cap_work;
    int32_t *vq, *vp;
    uint32_t *vstamp, vcur, vmask, vcount;
    /* a stack of sets for walks: pairs, by offset */
    struct gpair *pb;
    int32_t n_pb, cap_pb;
    bool ended;    /* set by the last advance: a stack reached its bottom */
    bool overflow; /* too many stacks, too deep, or out of memory */
    bool nomem;
    /* precomputed token sets per DFA state */
    struct gtc *tc;
    int64_t tc_bytes; /* held by all of tc[] */
    int64_t tc_steps; /* trie nodes visited computing tc[] */
    uint32_t *scratch_bits;
    int32_t *acc, n_acc, cap_acc;
    int32_t *ent, *ent_depth, n_ent, cap_ent;
    struct glru lru[GM_LRU];
    uint64_t tick;
    char errmsg[256];
};

/* grammar_match.c */
int32_t wk__gm_intern(struct wk_grammar_matcher *m, int32_t q, int32_t parent);
void wk__gm_truncate(struct wk_grammar_matcher *m, int32_t mark);
/* The set after byte b from the set at pb[in .. in+n_in); written at the
 * end of pb; returns its size (m->ended tells whether a stack ended). */
int32_t wk__gm_advance(struct wk_grammar_matcher *m, int32_t in, int32_t n_in, uint8_t b);
/* The set of stacks (q, parent) expands to, appended to pb; returns its size. */
int32_t wk__gm_expand(struct wk_grammar_matcher *m, int32_t q, int32_t parent);
/* grammar_mask.c */
#ifndef GM_PRECOMPUTE_STEPS
#define GM_PRECOMPUTE_STEPS 2000000 /* trie nodes walked when a matcher is created, about */
#endif
#ifndef GM_TC_MAX_BYTES
#define GM_TC_MAX_BYTES (64 << 20) /* token sets kept past this are dropped before a mask */
#endif
bool wk__gm_tc_compute(struct wk_grammar_matcher *m, int32_t q);
void wk__gm_tc_free(struct wk_grammar_matcher *m);
void wk__gm_lru_flush(struct wk_grammar_matcher *m);


/* ------------------------------------------------------- text buffer */

/* A growable NUL-terminated string for writing GBNF. ok goes false on the
 * first allocation failure or past max bytes; later appends do nothing. */
struct gbuf {
    char *s;
    size_t n, cap, max;
    bool ok;
    bool nomem; /* ok went false because an allocation failed */
};
/* Marks dst failed when src is (keeping why). */
static inline void wk__gbuf_taint(struct gbuf *dst, const struct gbuf *src)
{
    if (!src->ok) dst->ok = false;
    if (src->nomem) dst->nomem = true;
}
/* The status for a buffer that failed: out of memory, or too large. */
#define SC_BUF_STATUS(b) ((b)->nomem ? WK_E_NOMEM : WK_E_RANGE)
void wk__gbuf_init(struct gbuf *b, size_t max);
void wk__gbuf_free(struct gbuf *b);
void wk__gbuf_put(struct gbuf *b, const char *s, size_t n);
void wk__gbuf_puts(struct gbuf *b, const char *s);
void wk__gbuf_printf(struct gbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends code point cp escaped for a GBNF "literal" or [class]. */
void wk__gbuf_put_cp(struct gbuf *b, uint32_t cp);
/* Appends s[0..n) as a GBNF "literal" (quotes included). */
void wk__gbuf_put_literal(struct gbuf *b, const char *s, size_t n);

/* Decodes one UTF-8 code point at s[0..n); returns its length, or 0 when
 * invalid (overlong, surrogate, past U+10FFFF, cut short). */
int wk__utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);
/* Encodes cp (<= U+10FFFF) into out[4]; returns the length. */
int wk__utf8_encode(uint32_t cp, uint8_t *out);

/* ----------------------------------------------------- schema compiler */

/* Flags of the shared rules a schema's grammar uses. */
enum {
    SC_STRING = 1, SC_VALUE = 2, SC_OBJECT = 4, SC_ARRAY = 8, SC_NUMBER = 16, SC_CHAR = 32,
};

struct sc_ref {
    const json_t *node;
    int32_t id;
};

struct sc {
    const json_t *doc;
    struct gbuf rules; /* rule definitions other than root */
    struct wk_error *err;
    enum wk_status st;
    int32_t next_id;
    struct sc_ref *refs;
    int32_t n_refs, cap_refs;
    uint32_t used;
    int depth;
    char path[512];
    size_t path_len;
    json_t *keep; /* schemas made by merging, kept alive until the end */
    int64_t merged; /* values the allOf merges have copied (wk__sc_merge; bounded by SC_MAX_MERGED) */
};

/* At most this many JSON values copied by one schema's allOf merges: each
 * merge copies what it merges, so an allOf of n parts copies ~n^2 / 2
 * parts' worth. The time to reach the cap grows with it: 2,000,000 took
 * 1.6 s (10.5 s under ASan) on a 2-core Zen 1 of this project, for an
 * allOf of 2,000 one-property objects; a schema's own allOf of ten parts
 * of 1,000 values each copies ~55,000. */
#define SC_MAX_MERGED 500000

/* Results of the expression writers: */
#define SC_OK 1    /* an expression was appended */
#define SC_NEVER 0 /* nothing matches: nothing appended */
#define SC_ERR -1  /* c->st and the error are set */

int wk__sc_fail(struct sc *c, enum wk_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int wk__sc_gen(struct sc *c, const json_t *s, struct gbuf *out);
/* Appends a reference to a new rule holding expr; returns SC_OK/SC_ERR. */
int wk__sc_rule(struct sc *c, const char *expr, struct gbuf *out);
void wk__sc_path_push(struct sc *c, const char *seg, size_t *saved);
void wk__sc_path_pop(struct sc *c, size_t saved);
/* grammar_schema_merge.c: allOf of a and b as one schema (new reference),
 * NULL on error; whether no text can validate against both a and b */
json_t *wk__sc_merge(struct sc *c, const json_t *a, const json_t *b);
bool wk__sc_disjoint(struct sc *c, const json_t *a, const json_t *b);
/* grammar_schema_obj.c */
int wk__sc_object(struct sc *c, const json_t *s, struct gbuf *out);
int wk__sc_array(struct sc *c, const json_t *s, struct gbuf *out);
/* grammar_schema_types.c */
int wk__sc_string(struct sc *c, const json_t *s, struct gbuf *out);
int wk__sc_number(struct sc *c, const json_t *s, bool integer, struct gbuf *out);
void wk__sc_shared_rules(struct sc *c);
/* grammar_regex.c: the JSON string contents (no quotes) whose decoded
 * text Python's re.search(pattern, text) matches (a subset: stricter is
 * allowed). Returns SC_OK, or SC_ERR with an unsupported-feature message. */
int wk__sc_regex(struct sc *c, const char *pat, size_t len, struct gbuf *out);
/* The GBNF for one JSON string character (escapes included). */
extern const char wk__sc_char[];

#endif /* WK_GRAMMAR_INT_H */
