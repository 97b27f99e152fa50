/*
 * grammar_compile.c - a GBNF syntax tree (grammar_gbnf.c) into per-rule
 * byte-level DFAs (struct wk_grammar).
 *
 * 1. Inlining: a rule that is not recursive, and is small with no
 *    unbounded repetition or used once, is copied into its callers, so
 *    the DFA of the caller covers it and no stack frame is needed.
 * 2. Before a rule is built, its sizes are counted from the syntax
 *    (repetitions multiplied, not copied): past the NFA limits, or with a
 *    longest text too long for the DFA states left, it is refused then,
 *    at the cost of the syntax, not of the expansion.
 * 3. Each remaining rule reachable from the root becomes a Thompson NFA
 *    over bytes: literals byte by byte, classes as the UTF-8 byte-range
 *    sequences of their code point ranges (Cox, "Regular Expression
 *    Matching" / RE2's UTF-8 range splitting), repetition as copies and
 *    loops, references to other rules as call edges.
 * 4. Subset construction makes each NFA a DFA whose states have sorted
 *    byte ranges (plus a 256-entry table when there are many) and call
 *    edges (rule, state after the call).
 * 5. Checks: nullable rules, rules that can finish (refused otherwise),
 *    left recursion (refused: "left recursion in rule X").
 */
#include "grammar_int.h"

#include <stdlib.h>

struct nedge {
    int32_t next, to, rule;
    uint8_t kind, lo, hi; /* kind: 0 epsilon, 1 byte range, 2 call */
};

struct cc {
    const struct gast_tree *t;
    struct wk_error *err;
    enum wk_status st;
    /* per rule */
    int32_t *ref_count, *inl_size, *inl_depth;
    uint8_t *recursive, *unbounded, *inlinable;
    /* the NFA being built */
    int32_t *first, n_nfa, cap_nfa;
    struct nedge *edges;
    int32_t n_edges, cap_edges;
    /* the grammar being built */
    struct wk_grammar *g;
    int32_t cap_states, cap_ranges, cap_calls, cap_tables;
    int32_t *queue, n_queue; /* rules to compile */
    int64_t work;            /* determinization steps, bounded by GR_MAX_WORK */
};

static bool grow(void **p, int32_t *cap, int64_t need, size_t sz)
{
    if (need <= *cap) return true;
    int64_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    if (c > INT32_MAX) return false;
    void *q = wk_realloc(*p, (size_t)c * sz);
    if (!q) return false;
    *p = q;
    *cap = (int32_t)c;
    return true;
}

static bool oom(struct cc *c)
{
    if (c->st == WK_OK) c->st = wk_error_set(c->err, WK_E_NOMEM, "grammar: out of memory");
    return false;
}

static const char *rname(const struct cc *c, int32_t r)
{
    return c->t->names + c->t->rules[r].name;
}

/* ------------------------------------------------ rule graph, inlining */

/* Calls fn(c, rule) for each REF under syntax node x (iteratively). */
static bool each_ref(struct cc *c, int32_t x, int32_t *stack, int32_t cap,
                     void (*fn)(struct cc *, int32_t, void *), void *arg)
{
    int32_t n = 0;
    stack[n++] = x;
    while (n > 0) {
        const struct gast *a = &c->t->nodes[stack[--n]];
        if (a->kind == GA_REF) fn(c, a->a, arg);
        for (int32_t k = a->child; k >= 0; k = c->t->nodes[k].next) {
            if (n >= cap) return false;
            stack[n++] = k;
        }
    }
    return true;
}

struct tarjan {
    int32_t *index, *low, *stack, *cstack, *citer;
    uint8_t *on;
    int32_t n_stack, next_index;
    int32_t *succ_off, *succ; /* adjacency */
};

static void count_ref(struct cc *c, int32_t r, void *arg)
{
    (void)arg;
    c->ref_count[r]++;
}

struct adj_fill {
    int32_t *succ, *pos;
    int32_t from;
};
static void fill_ref(struct cc *c, int32_t r, void *arg)
{
    struct adj_fill *f = arg;
    f->succ[f->pos[f->from]++] = r;
}
static void count_out(struct cc *c, int32_t r, void *arg)
{
    (*(int32_t *)arg)++;
}

/*
 * Marks recursive rules (on a cycle of references) with Tarjan's SCC
 * algorithm, iteratively; then, callees first (the order SCCs complete),
 * the size and depth each rule has once its inlinable callees are copied
 * in, and whether it may be inlined.
 */
static bool analyse_rules(struct cc *c, int32_t root)
{
    const struct gast_tree *t = c->t;
    int32_t n = t->n_rules;
    bool ok = false;
    int32_t *scratch = wk_malloc(((size_t)t->n_nodes + 1) * sizeof *scratch);
    struct tarjan tj = {0};
    tj.index = wk_malloc((size_t)n * sizeof(int32_t));
    tj.low = wk_malloc((size_t)n * sizeof(int32_t));
    tj.stack = wk_malloc((size_t)n * sizeof(int32_t));
    tj.cstack = wk_malloc((size_t)n * sizeof(int32_t));
    tj.citer = wk_malloc((size_t)n * sizeof(int32_t));
    tj.on = wk_calloc((size_t)n, 1);
    tj.succ_off = wk_calloc((size_t)n + 1, sizeof(int32_t));
    int32_t *order = wk_malloc((size_t)n * sizeof(int32_t)), n_order = 0;
    if (!scratch || !tj.index || !tj.low || !tj.stack || !tj.cstack || !tj.citer || !tj.on ||
        !tj.succ_off || !order) {
        oom(c);
        goto done;
    }
    for (int32_t r = 0; r < n; r++) {
        int32_t k = 0;
        each_ref(c, t->rules[r].body, scratch, t->n_nodes + 1, count_out, &k);
        tj.succ_off[r + 1] = tj.succ_off[r] + k;
        each_ref(c, t->rules[r].body, scratch, t->n_nodes + 1, count_ref, NULL);
    }
    tj.succ = wk_malloc(((size_t)tj.succ_off[n] + 1) * sizeof(int32_t));
    int32_t *pos = wk_malloc(((size_t)n + 1) * sizeof(int32_t));
    if (!tj.succ || !pos) {
        wk_free(pos);
        oom(c);
        goto done;
    }
    memcpy(pos, tj.succ_off, (size_t)n * sizeof(int32_t));
    for (int32_t r = 0; r < n; r++) {
        struct adj_fill f = {tj.succ, pos, r};
        each_ref(c, t->rules[r].body, scratch, t->n_nodes + 1, fill_ref, &f);
    }
    wk_free(pos);
    for (int32_t r = 0; r < n; r++) tj.index[r] = -1;
    for (int32_t r0 = 0; r0 < n; r0++) {
        if (tj.index[r0] >= 0) continue;
        int32_t depth = 0;
        tj.cstack[depth] = r0;
        tj.citer[depth] = tj.succ_off[r0];
        tj.index[r0] = tj.low[r0] = tj.next_index++;
        tj.stack[tj.n_stack++] = r0;
        tj.on[r0] = 1;
        while (depth >= 0) {
            int32_t v = tj.cstack[depth];
            if (tj.citer[depth] < tj.succ_off[v + 1]) {
                int32_t w = tj.succ[tj.citer[depth]++];
                if (w == v) c->recursive[v] = 1;
                if (tj.index[w] < 0) {
                    tj.index[w] = tj.low[w] = tj.next_index++;
                    tj.stack[tj.n_stack++] = w;
                    tj.on[w] = 1;
                    depth++;
                    tj.cstack[depth] = w;
                    tj.citer[depth] = tj.succ_off[w];
                } else if (tj.on[w] && tj.index[w] < tj.low[v]) {
                    tj.low[v] = tj.index[w];
                }
                continue;
            }
            if (tj.low[v] == tj.index[v]) {
                int32_t first = tj.n_stack;
                do first--; while (tj.stack[first] != v);
                bool cyc = tj.n_stack - first > 1;
                for (int32_t i = first; i < tj.n_stack; i++) {
                    tj.on[tj.stack[i]] = 0;
                    if (cyc) c->recursive[tj.stack[i]] = 1;
                    order[n_order++] = tj.stack[i];
                }
                tj.n_stack = first;
            }
            depth--;
            if (depth >= 0) {
                int32_t u = tj.cstack[depth];
                if (tj.low[v] < tj.low[u]) tj.low[u] = tj.low[v];
            }
        }
    }
    /* callees before callers: sizes with inlined callees */
    for (int32_t i = 0; i < n_order; i++) {
        int32_t r = order[i], sp = 0;
        int64_t size = 0;
        int32_t depth = 0;
        bool unb = false;
        scratch[sp++] = t->rules[r].body;
        while (sp > 0) {
            const struct gast *a = &t->nodes[scratch[--sp]];
            size++;
            if (a->kind == GA_REP && a->b < 0) unb = true;
            if (a->kind == GA_REF && c->inlinable[a->a]) {
                size += c->inl_size[a->a];
                if (c->inl_depth[a->a] > depth) depth = c->inl_depth[a->a];
                if (c->unbounded[a->a]) unb = true;
            }
            for (int32_t k = a->child; k >= 0; k = t->nodes[k].next) scratch[sp++] = k;
        }
        c->inl_size[r] = size > INT32_MAX / 4 ? INT32_MAX / 4 : (int32_t)size;
        c->inl_depth[r] = depth + 1;
        c->unbounded[r] = unb;
        c->inlinable[r] = r != root && !c->recursive[r] && c->inl_depth[r] <= 32 &&
                          ((size <= GR_INLINE_MAX && !unb) || (c->ref_count[r] == 1 && size <= (1 << 20)));
    }
    ok = true;
done:
    wk_free(scratch);
    wk_free(tj.index), wk_free(tj.low), wk_free(tj.stack), wk_free(tj.cstack), wk_free(tj.citer);
    wk_free(tj.on), wk_free(tj.succ_off), wk_free(tj.succ), wk_free(order);
    return ok;
}

/* ------------------------------------------------------------- the NFA */

static int32_t nfa_state(struct cc *c)
{
    if (c->n_nfa >= GR_MAX_NFA_STATES) {
        if (c->st == WK_OK)
            c->st = wk_error_set(c->err, WK_E_RANGE,
                                 "grammar too large: a rule needs more than %d NFA states",
                                 GR_MAX_NFA_STATES);
        return -1;
    }
    if (!grow((void **)&c->first, &c->cap_nfa, c->n_nfa + 1, sizeof *c->first)) return oom(c), -1;
    c->first[c->n_nfa] = -1;
    return c->n_nfa++;
}

static bool nfa_edge(struct cc *c, int32_t from, int kind, uint8_t lo, uint8_t hi, int32_t rule,
                     int32_t to)
{
    if (c->n_edges >= GR_MAX_NFA_EDGES) {
        if (c->st == WK_OK)
            c->st = wk_error_set(c->err, WK_E_RANGE,
                                 "grammar too large: a rule needs more than %d NFA edges", GR_MAX_NFA_EDGES);
        return false;
    }
    if (!grow((void **)&c->edges, &c->cap_edges, (int64_t)c->n_edges + 1, sizeof *c->edges))
        return oom(c);
    struct nedge *e = &c->edges[c->n_edges];
    e->kind = (uint8_t)kind;
    e->lo = lo;
    e->hi = hi;
    e->rule = rule;
    e->to = to;
    e->next = c->first[from];
    c->first[from] = c->n_edges++;
    return true;
}

/* Edges from s to e for the code points lo..hi (no surrogates inside). */
static bool utf8_range(struct cc *c, uint32_t lo, uint32_t hi, int32_t s, int32_t e)
{
    static const uint32_t maxs[3] = {0x7f, 0x7ff, 0xffff};
    if (lo > hi) return true;
    for (int i = 0; i < 3; i++)
        if (lo <= maxs[i] && hi > maxs[i])
            return utf8_range(c, lo, maxs[i], s, e) && utf8_range(c, maxs[i] + 1, hi, s, e);
    if (hi <= 0x7f) return nfa_edge(c, s, 1, (uint8_t)lo, (uint8_t)hi, 0, e);
    uint8_t a[4], b[4];
    int n = wk__utf8_encode(lo, a);
    for (int i = 1; i < n; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0)
                return utf8_range(c, lo, lo | m, s, e) && utf8_range(c, (lo | m) + 1, hi, s, e);
            if ((hi & m) != m)
                return utf8_range(c, lo, (hi & ~m) - 1, s, e) && utf8_range(c, hi & ~m, hi, s, e);
        }
    }
    wk__utf8_encode(hi, b);
    int32_t at = s;
    for (int i = 0; i < n; i++) {
        int32_t to = i == n - 1 ? e : nfa_state(c);
        if (to < 0 || !nfa_edge(c, at, 1, a[i], b[i], 0, to)) return false;
        at = to;
    }
    return true;
}

#define SZ_CAP ((int64_t)1 << 50) /* saturated: past every limit */
#define SZ_NONE (-1)              /* len: nothing matches */

/* What build would make of a syntax node, counted without making it:
 * NFA states and edges, and the longest text in DFA steps (bytes and rule
 * calls; SZ_CAP when unbounded). */
struct gsize {
    int64_t nfa, edges, len;
};

/* a + b and a * b (non-negative), saturating at SZ_CAP */
static int64_t sat_add(int64_t a, int64_t b)
{
    return a + b > SZ_CAP ? SZ_CAP : a + b;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    if (a == 0 || b == 0) return 0;
    return a > SZ_CAP / b ? SZ_CAP : a * b;
}

/* Whether build copies rule r in at a reference under mult copies. */
static bool inlined(const struct cc *c, int32_t r, int64_t mult)
{
    return c->inlinable[r] &&
           (sat_mul(mult, c->inl_size[r]) <= 4 * GR_INLINE_MAX || (mult == 1 && c->ref_count[r] == 1));
}

/*
 * Builds syntax node x from NFA state s; returns the end state (no edges
 * out of it yet), or -1. Never adds an edge into s, so fragments may
 * share their start. mult is how many copies of x the enclosing
 * repetitions make: a rule is inlined only while its copies stay small.
 */
static int32_t build(struct cc *c, int32_t x, int32_t s, int depth, int64_t mult)
{
    const struct gast *a = &c->t->nodes[x];
    if (c->st != WK_OK) return -1;
    if (depth > 400) {
        c->st = wk_error_set(c->err, WK_E_RANGE, "grammar: nested deeper than 400 levels");
        return -1;
    }
    switch (a->kind) {
    case GA_EMPTY:
        return s;
    case GA_BYTES:
        for (int32_t i = 0; i < a->b; i++) {
            int32_t t = nfa_state(c);
            uint8_t b = c->t->bytes[a->a + i];
            if (t < 0 || !nfa_edge(c, s, 1, b, b, 0, t)) return -1;
            s = t;
        }
        return s;
    case GA_CLASS: {
        int32_t e = nfa_state(c);
        if (e < 0) return -1;
        for (int32_t i = 0; i < a->b; i++)
            if (!utf8_range(c, c->t->ranges[2 * (a->a + i)], c->t->ranges[2 * (a->a + i) + 1], s, e))
                return -1;
        return e;
    }
    case GA_SEQ:
        for (int32_t k = a->child; k >= 0; k = c->t->nodes[k].next) {
            if (k != a->child) { /* a fresh start: the previous end may be a shared start */
                int32_t t = nfa_state(c);
                if (t < 0 || !nfa_edge(c, s, 0, 0, 0, 0, t)) return -1;
                s = t;
            }
            s = build(c, k, s, depth + 1, mult);
            if (s < 0) return -1;
        }
        return s;
    case GA_ALT: {
        if (a->child >= 0 && c->t->nodes[a->child].next < 0) return build(c, a->child, s, depth + 1, mult);
        int32_t e = nfa_state(c);
        if (e < 0) return -1;
        for (int32_t k = a->child; k >= 0; k = c->t->nodes[k].next) {
            int32_t t = build(c, k, s, depth + 1, mult);
            if (t < 0 || !nfa_edge(c, t, 0, 0, 0, 0, e)) return -1;
        }
        return e;
    }
    case GA_REP: {
        int32_t e;
        int64_t copies = a->b < 0 ? (int64_t)a->a + 1 : a->b;
        int64_t cm = mult * (copies > 1 ? copies : 1);
        if (cm > ((int64_t)1 << 40)) cm = (int64_t)1 << 40;
        for (int32_t i = 0; i < a->a; i++) {
            int32_t t = nfa_state(c);
            if (t < 0 || !nfa_edge(c, s, 0, 0, 0, 0, t)) return -1;
            s = build(c, a->child, t, depth + 1, cm);
            if (s < 0) return -1;
        }
        e = nfa_state(c);
        if (e < 0) return -1;
        if (a->b < 0) {
            int32_t l = nfa_state(c);
            if (l < 0 || !nfa_edge(c, s, 0, 0, 0, 0, l)) return -1;
            int32_t t = build(c, a->child, l, depth + 1, cm);
            if (t < 0 || !nfa_edge(c, t, 0, 0, 0, 0, l) || !nfa_edge(c, l, 0, 0, 0, 0, e)) return -1;
            return e;
        }
        for (int32_t i = a->a; i < a->b; i++) {
            int32_t t = nfa_state(c);
            if (t < 0 || !nfa_edge(c, s, 0, 0, 0, 0, e) || !nfa_edge(c, s, 0, 0, 0, 0, t)) return -1;
            s = build(c, a->child, t, depth + 1, cm);
            if (s < 0) return -1;
        }
        if (!nfa_edge(c, s, 0, 0, 0, 0, e)) return -1;
        return e;
    }
    case GA_REF: {
        int32_t r = a->a;
        if (inlined(c, r, mult)) return build(c, c->t->rules[r].body, s, depth + 1, mult);
        int32_t e = nfa_state(c);
        if (e < 0) return -1;
        if (c->g->rule_start[r] == -1) { /* not yet queued */
            c->g->rule_start[r] = -2;
            c->queue[c->n_queue++] = r;
        }
        return nfa_edge(c, s, 2, 0, 0, r, e) ? e : -1;
    }
    }
    return -1;
}

/* ------------------------------------------------ sizes, before building */

/* The sizes of node x under mult copies (as build: same inlining). Its
 * cost is that of the syntax it visits (counted in *visits, and cut short
 * past GR_MAX_VISITS), never of the copies it counts. */
static struct gsize size_of(const struct cc *c, int32_t x, int depth, int64_t mult, int64_t *visits)
{
    const struct gast *a = &c->t->nodes[x];
    struct gsize z = {0, 0, 0};
    if (depth > 400 || ++*visits > GR_MAX_VISITS) return z; /* build reports depth */
    switch (a->kind) {
    case GA_EMPTY:
        return z;
    case GA_BYTES:
        return (struct gsize){a->b, a->b, a->b};
    case GA_CLASS: {
        if (a->b == 0) return (struct gsize){1, 0, SZ_NONE};
        uint32_t hi = c->t->ranges[2 * (a->a + a->b - 1) + 1];
        return (struct gsize){1 + a->b, a->b, hi < 0x80 ? 1 : hi < 0x800 ? 2 : hi < 0x10000 ? 3 : 4};
    }
    case GA_SEQ:
    case GA_ALT: {
        bool seq = a->kind == GA_SEQ;
        int n = 0;
        z.len = seq ? 0 : SZ_NONE;
        for (int32_t k = a->child; k >= 0; k = c->t->nodes[k].next, n++) {
            struct gsize y = size_of(c, k, depth + 1, mult, visits);
            z.nfa = sat_add(z.nfa, y.nfa + (n > 0 && seq));
            z.edges = sat_add(z.edges, y.edges + (n > 0 || !seq)); /* glue, or into the end */
            if (seq) z.len = z.len == SZ_NONE || y.len == SZ_NONE ? SZ_NONE : sat_add(z.len, y.len);
            else if (y.len > z.len) z.len = y.len;
        }
        if (!seq && n > 1) z.nfa = sat_add(z.nfa, 1);
        if (!seq && n == 1) z.edges--;
        return z;
    }
    case GA_REP: {
        int64_t copies = a->b < 0 ? (int64_t)a->a + 1 : a->b;
        struct gsize y = size_of(c, a->child, depth + 1, sat_mul(mult, copies > 1 ? copies : 1), visits);
        int64_t per = sat_add(y.nfa, 1), per_e = sat_add(y.edges, 2);
        z.nfa = sat_add(sat_mul(a->a, per), 1);
        z.nfa = sat_add(z.nfa, a->b < 0 ? per + 1 : sat_mul(a->b - a->a, per));
        z.edges = sat_add(sat_mul(a->a, per_e - 1), 1);
        z.edges = sat_add(z.edges, a->b < 0 ? per_e + 1 : sat_mul(a->b - a->a, per_e));
        if (y.len == SZ_NONE) z.len = a->a == 0 ? 0 : SZ_NONE;
        else if (y.len == 0) z.len = 0;
        else z.len = a->b < 0 ? SZ_CAP : sat_mul(a->b, y.len);
        return z;
    }
    case GA_REF:
        if (inlined(c, a->a, mult)) return size_of(c, c->t->rules[a->a].body, depth + 1, mult, visits);
        return (struct gsize){1, 1, 1}; /* a call: one step */
    }
    return z;
}

/*
 * Refuses rule r before its NFA is built when it is sure to be past the
 * limits: more NFA states or edges than allowed, or, when the rule
 * matches finitely many texts, a longest text of len steps. Such a rule
 * needs at least len + 1 DFA states: along that text the texts that may
 * still follow get strictly shorter, so no two of its prefixes share a
 * state. (Unbounded rules have no such floor: `[a-z]{0,9999} | [a-z]*`
 * is one state after determinizing; the determinization's own bounds
 * stop those.)
 */
static bool check_size(struct cc *c, int32_t r)
{
    int64_t visits = 0;
    struct gsize z = size_of(c, c->t->rules[r].body, 0, 1, &visits);
    if (visits > GR_MAX_VISITS) {
        c->st = wk_error_set(c->err, WK_E_RANGE,
                             "grammar too large: rule '%s' expands to more than %d syntax nodes "
                             "(its rules copied in)", rname(c, r), GR_MAX_VISITS);
        return false;
    }
    if (z.nfa > GR_MAX_NFA_STATES || z.edges > GR_MAX_NFA_EDGES) {
        bool st = z.nfa > GR_MAX_NFA_STATES;
        int64_t k = st ? z.nfa : z.edges;
        c->st = wk_error_set(c->err, WK_E_RANGE,
                             "grammar too large: rule '%s' expands to %s%lld NFA %s (at most %d)",
                             rname(c, r), k >= SZ_CAP ? "over " : "", (long long)k,
                             st ? "states" : "edges", st ? GR_MAX_NFA_STATES : GR_MAX_NFA_EDGES);
        return false;
    }
    if (z.len >= 0 && z.len < SZ_CAP && (int64_t)c->g->n_states + z.len + 1 > GR_MAX_DFA_STATES) {
        c->st = wk_error_set(c->err, WK_E_RANGE,
                             "grammar too large: rule '%s' has a text of %lld bytes and rule calls, "
                             "which needs more than the %d DFA states allowed",
                             rname(c, r), (long long)z.len, GR_MAX_DFA_STATES);
        return false;
    }
    return true;
}

/* --------------------------------------------------- subset construction */

struct dfa_build {
    int32_t nfa_final;
    int32_t *stamp, cur_stamp, *stack;
    int32_t *pool, n_pool, cap_pool; /* sets: ints */
    int32_t *set_off, *set_len, *set_state, n_sets, cap_sets;
    uint8_t *set_final;
    int32_t *hash, hash_cap;
    int32_t *tmp, cap_tmp;
    int32_t *items, cap_items; /* scratch for targets */
};

static uint32_t set_hash(const int32_t *s, int32_t n, bool fin)
{
    uint32_t h = 2166136261u ^ (uint32_t)fin;
    for (int32_t i = 0; i < n; i++) h = (h ^ (uint32_t)s[i]) * 16777619u;
    return h;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* Adds a DFA state for rule r to the grammar; returns its id or -1. */
static int32_t new_dstate(struct cc *c, int32_t r)
{
    struct wk_grammar *g = c->g;
    if (g->n_states >= GR_MAX_DFA_STATES) {
        if (c->st == WK_OK)
            c->st = wk_error_set(c->err, WK_E_RANGE, "grammar too large: more than %d DFA states",
                                 GR_MAX_DFA_STATES);
        return -1;
    }
    if (!grow((void **)&g->states, &c->cap_states, g->n_states + 1, sizeof *g->states))
        return oom(c), -1;
    struct gstate *s = &g->states[g->n_states];
    memset(s, 0, sizeof *s);
    s->rule = r;
    s->table = -1;
    return g->n_states++;
}

/*
 * The DFA state of the epsilon closure of seeds[0..n) (interned; new
 * states are queued by being appended), or -1 on error.
 */
static int32_t closure_state(struct cc *c, struct dfa_build *d, int32_t r, const int32_t *seeds,
                             int32_t n)
{
    d->cur_stamp++;
    int32_t sp = 0, m = 0;
    bool fin = false;
    for (int32_t i = 0; i < n; i++)
        if (d->stamp[seeds[i]] != d->cur_stamp) {
            d->stamp[seeds[i]] = d->cur_stamp;
            d->stack[sp++] = seeds[i];
        }
    c->work += n;
    while (sp > 0) {
        int32_t u = d->stack[--sp];
        bool important = false;
        c->work++;
        if (u == d->nfa_final) fin = true;
        for (int32_t e = c->first[u]; e >= 0; e = c->edges[e].next) {
            if (c->edges[e].kind != 0) {
                important = true;
                continue;
            }
            int32_t v = c->edges[e].to;
            if (d->stamp[v] != d->cur_stamp) {
                d->stamp[v] = d->cur_stamp;
                d->stack[sp++] = v;
            }
        }
        if (important) {
            if (!grow((void **)&d->tmp, &d->cap_tmp, m + 1, sizeof *d->tmp)) return oom(c), -1;
            d->tmp[m++] = u;
        }
    }
    if (m > 1) qsort(d->tmp, (size_t)m, sizeof *d->tmp, cmp_i32);
    uint32_t h = set_hash(d->tmp, m, fin);
    uint32_t mask = (uint32_t)d->hash_cap - 1;
    for (uint32_t k = h & mask;; k = (k + 1) & mask) {
        int32_t si = d->hash[k];
        if (si < 0) break;
        if (d->set_len[si] == m && d->set_final[si] == fin &&
            (m == 0 || memcmp(d->pool + d->set_off[si], d->tmp, (size_t)m * sizeof *d->tmp) == 0))
            return d->set_state[si];
    }
    /* new set */
    if ((int64_t)d->n_pool + m > GR_MAX_SET_POOL || c->work > GR_MAX_WORK) {
        c->st = wk_error_set(c->err, WK_E_RANGE, "grammar too large: rule '%s' determinizes to too many states",
                             rname(c, r));
        return -1;
    }
    if (!grow((void **)&d->pool, &d->cap_pool, (int64_t)d->n_pool + m, sizeof *d->pool))
        return oom(c), -1;
    int32_t cs = d->cap_sets;
    if (!grow((void **)&d->set_off, &cs, d->n_sets + 1, sizeof(int32_t))) return oom(c), -1;
    cs = d->cap_sets;
    if (!grow((void **)&d->set_len, &cs, d->n_sets + 1, sizeof(int32_t))) return oom(c), -1;
    cs = d->cap_sets;
    if (!grow((void **)&d->set_state, &cs, d->n_sets + 1, sizeof(int32_t))) return oom(c), -1;
    cs = d->cap_sets;
    if (!grow((void **)&d->set_final, &cs, d->n_sets + 1, 1)) return oom(c), -1;
    d->cap_sets = cs;
    int32_t q = new_dstate(c, r);
    if (q < 0) return -1;
    int32_t si = d->n_sets++;
    if (m) memcpy(d->pool + d->n_pool, d->tmp, (size_t)m * sizeof *d->tmp);
    d->set_off[si] = d->n_pool;
    d->set_len[si] = m;
    d->set_final[si] = fin;
    d->set_state[si] = q;
    d->n_pool += m;
    if (fin) c->g->states[q].flags |= GS_FINAL;
    if (d->n_sets * 2 > d->hash_cap) { /* rehash */
        int32_t cap = d->hash_cap * 2;
        int32_t *nh = wk_malloc((size_t)cap * sizeof *nh);
        if (!nh) return oom(c), -1;
        for (int32_t i = 0; i < cap; i++) nh[i] = -1;
        for (int32_t i = 0; i < d->n_sets; i++) {
            uint32_t hh = set_hash(d->pool + d->set_off[i], d->set_len[i], d->set_final[i]);
            uint32_t k = hh & (uint32_t)(cap - 1);
            while (nh[k] >= 0) k = (k + 1) & (uint32_t)(cap - 1);
            nh[k] = i;
        }
        wk_free(d->hash);
        d->hash = nh;
        d->hash_cap = cap;
    } else {
        uint32_t k = h & mask;
        while (d->hash[k] >= 0) k = (k + 1) & mask;
        d->hash[k] = si;
    }
    return q;
}

struct callitem {
    int32_t rule, to;
};
static int cmp_call(const void *a, const void *b)
{
    const struct callitem *x = a, *y = b;
    if (x->rule != y->rule) return x->rule < y->rule ? -1 : 1;
    return x->to < y->to ? -1 : x->to > y->to;
}

/* Fills the byte ranges and calls of DFA state q (set si). */
static bool expand_dstate(struct cc *c, struct dfa_build *d, int32_t r, int32_t si)
{
    struct wk_grammar *g = c->g;
    int32_t q = d->set_state[si];
    /* elementary byte intervals */
    uint8_t mark[257] = {0};
    int32_t n_items = 0, n_calls = 0;
    for (int32_t i = 0; i < d->set_len[si]; i++) {
        int32_t u = d->pool[d->set_off[si] + i];
        for (int32_t e = c->first[u]; e >= 0; e = c->edges[e].next) {
            c->work++;
            if (c->edges[e].kind == 1) {
                mark[c->edges[e].lo] = 1;
                mark[c->edges[e].hi + 1] = 1;
                n_items++;
            } else if (c->edges[e].kind == 2) {
                n_calls++;
            }
        }
    }
    int32_t ival[256], n_iv = 0, iv_lo[257];
    int32_t cur = -1;
    for (int b = 0; b < 256; b++) {
        if (mark[b]) {
            cur = n_iv;
            iv_lo[n_iv++] = b;
        }
        ival[b] = cur;
    }
    int32_t cnt[258] = {0};
    int64_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        int32_t fill[258];
        if (pass == 1) {
            fill[0] = 0;
            for (int32_t k = 0; k < n_iv; k++) fill[k + 1] = fill[k] + cnt[k];
            total = fill[n_iv];
            if (!grow((void **)&d->items, &d->cap_items, total + 2 * (int64_t)n_calls + 1, sizeof(int32_t)))
                return oom(c);
        }
        for (int32_t i = 0; i < d->set_len[si]; i++) {
            int32_t u = d->pool[d->set_off[si] + i];
            for (int32_t e = c->first[u]; e >= 0; e = c->edges[e].next) {
                if (c->edges[e].kind != 1) continue;
                for (int32_t k = ival[c->edges[e].lo]; k <= ival[c->edges[e].hi]; k++) {
                    if (pass == 0) cnt[k]++;
                    else d->items[fill[k]++] = c->edges[e].to;
                }
            }
        }
        if (pass == 1) memcpy(cnt, fill, sizeof fill); /* cnt[k] = end of interval k */
    }
    int32_t targets[257];
    for (int32_t k = 0, start = 0; k < n_iv; k++) {
        int32_t end = cnt[k];
        targets[k] = -1;
        if (end > start) {
            /* copy: closure_state reuses d->tmp only */
            targets[k] = closure_state(c, d, r, d->items + start, end - start);
            if (targets[k] < 0) return false;
        }
        start = end;
    }
    g = c->g;
    g->states[q].r_off = g->n_ranges;
    for (int32_t k = 0; k < n_iv; k++) {
        if (targets[k] < 0) continue;
        int lo = iv_lo[k], hi = k + 1 < n_iv ? iv_lo[k + 1] - 1 : 255;
        struct gstate *s = &g->states[q];
        if (s->n_r > 0 && g->ranges[g->n_ranges - 1].to == targets[k] &&
            g->ranges[g->n_ranges - 1].hi + 1 == lo) {
            g->ranges[g->n_ranges - 1].hi = (uint8_t)hi;
            continue;
        }
        if (!grow((void **)&g->ranges, &c->cap_ranges, g->n_ranges + 1, sizeof *g->ranges)) return oom(c);
        g->ranges[g->n_ranges].lo = (uint8_t)lo;
        g->ranges[g->n_ranges].hi = (uint8_t)hi;
        g->ranges[g->n_ranges].to = targets[k];
        g->n_ranges++;
        s->n_r++;
    }
    if (g->states[q].n_r > 4) { /* a dense row for fast stepping */
        if (!grow((void **)&g->tables, &c->cap_tables, ((int64_t)g->n_tables + 1) * 256, sizeof(int32_t)))
            return oom(c);
        int32_t *row = g->tables + (size_t)g->n_tables * 256;
        for (int b = 0; b < 256; b++) row[b] = -1;
        for (int32_t i = 0; i < g->states[q].n_r; i++) {
            const struct grange *rg = &g->ranges[g->states[q].r_off + i];
            for (int b = rg->lo; b <= rg->hi; b++) row[b] = rg->to;
        }
        g->states[q].table = g->n_tables++;
    }
    if (g->states[q].n_r > 0) g->states[q].flags |= GS_BYTES;
    /* calls grouped by rule */
    if (n_calls > 0) {
        struct callitem *ci = wk_malloc((size_t)n_calls * sizeof *ci);
        if (!ci) return oom(c);
        int32_t m = 0;
        for (int32_t i = 0; i < d->set_len[si]; i++) {
            int32_t u = d->pool[d->set_off[si] + i];
            for (int32_t e = c->first[u]; e >= 0; e = c->edges[e].next)
                if (c->edges[e].kind == 2) ci[m++] = (struct callitem){c->edges[e].rule, c->edges[e].to};
        }
        qsort(ci, (size_t)m, sizeof *ci, cmp_call);
        g->states[q].c_off = g->n_calls;
        for (int32_t i = 0; i < m;) {
            int32_t j = i, k = 0;
            while (j < m && ci[j].rule == ci[i].rule) d->items[k++] = ci[j++].to;
            int32_t to = closure_state(c, d, r, d->items, k);
            if (to < 0 || !grow((void **)&c->g->calls, &c->cap_calls, c->g->n_calls + 1, sizeof(struct gcall))) {
                wk_free(ci);
                return to < 0 ? false : oom(c);
            }
            g = c->g;
            g->calls[g->n_calls++] = (struct gcall){ci[i].rule, to};
            g->states[q].n_c++;
            i = j;
        }
        g->states[q].flags |= GS_CALLS;
        wk_free(ci);
    }
    return true;
}

/* Builds rule r's NFA and DFA; sets rule_start[r]. */
static bool compile_rule(struct cc *c, int32_t r)
{
    c->n_nfa = 0;
    c->n_edges = 0;
    if (!check_size(c, r)) return false;
    int32_t s = nfa_state(c);
    if (s < 0) return false;
    int32_t e = build(c, c->t->rules[r].body, s, 0, 1);
    if (e < 0) return false;
    struct dfa_build d = {.nfa_final = e};
    bool ok = false;
    d.stamp = wk_calloc((size_t)c->n_nfa, sizeof *d.stamp);
    d.stack = wk_malloc((size_t)c->n_nfa * sizeof *d.stack);
    d.hash_cap = 64;
    d.hash = wk_malloc((size_t)d.hash_cap * sizeof *d.hash);
    if (!d.stamp || !d.stack || !d.hash) {
        oom(c);
        goto done;
    }
    for (int32_t i = 0; i < d.hash_cap; i++) d.hash[i] = -1;
    int32_t q0 = closure_state(c, &d, r, &s, 1);
    if (q0 < 0) goto done;
    c->g->rule_start[r] = q0;
    for (int32_t si = 0; si < d.n_sets; si++)
        if (!expand_dstate(c, &d, r, si)) goto done;
    for (int32_t si = 0; si < d.n_sets; si++) {
        struct gstate *st = &c->g->states[d.set_state[si]];
        if ((st->flags & GS_FINAL) && !(st->flags & (GS_BYTES | GS_CALLS))) st->flags |= GS_PURE_FINAL;
    }
    ok = true;
done:
    wk_free(d.stamp), wk_free(d.stack), wk_free(d.pool), wk_free(d.set_off), wk_free(d.set_len);
    wk_free(d.set_state), wk_free(d.set_final), wk_free(d.hash), wk_free(d.tmp), wk_free(d.items);
    return ok;
}

enum wk_status wk__grammar_check(const struct wk_grammar *g, const struct gast_tree *t,
                                 struct wk_error *err);

enum wk_status wk__grammar_compile(const struct gast_tree *t, int32_t root, struct wk_grammar **out,
                                   struct wk_error *err)
{
    *out = NULL;
    struct cc c = {.t = t, .err = err};
    int32_t n = t->n_rules;
    c.g = wk_calloc(1, sizeof *c.g);
    c.ref_count = wk_calloc((size_t)n + 1, sizeof(int32_t));
    c.inl_size = wk_calloc((size_t)n + 1, sizeof(int32_t));
    c.inl_depth = wk_calloc((size_t)n + 1, sizeof(int32_t));
    c.recursive = wk_calloc((size_t)n + 1, 1);
    c.unbounded = wk_calloc((size_t)n + 1, 1);
    c.inlinable = wk_calloc((size_t)n + 1, 1);
    c.queue = wk_malloc(((size_t)n + 1) * sizeof(int32_t));
    if (!c.g || !c.ref_count || !c.inl_size || !c.inl_depth || !c.recursive || !c.unbounded ||
        !c.inlinable || !c.queue) {
        oom(&c);
        goto done;
    }
    c.g->n_rules = n;
    c.g->root = root;
    c.g->rule_start = wk_malloc(((size_t)n + 1) * sizeof(int32_t));
    c.g->rule_names = wk_calloc((size_t)n + 1, sizeof(char *));
    if (!c.g->rule_start || !c.g->rule_names) {
        oom(&c);
        goto done;
    }
    for (int32_t r = 0; r < n; r++) {
        c.g->rule_start[r] = -1;
        c.g->rule_names[r] = wk_strdup(rname(&c, r));
        if (!c.g->rule_names[r]) {
            oom(&c);
            goto done;
        }
    }
    if (!analyse_rules(&c, root)) goto done;
    c.g->rule_start[root] = -2;
    c.queue[c.n_queue++] = root;
    for (int32_t i = 0; i < c.n_queue; i++)
        if (!compile_rule(&c, c.queue[i])) goto done;
    c.st = wk__grammar_check(c.g, t, err);
done:
    wk_free(c.ref_count), wk_free(c.inl_size), wk_free(c.inl_depth), wk_free(c.recursive);
    wk_free(c.unbounded), wk_free(c.inlinable), wk_free(c.queue), wk_free(c.first), wk_free(c.edges);
    if (c.st != WK_OK) {
        wk_grammar_free(c.g);
        return c.st;
    }
    *out = c.g;
    return WK_OK;
}
