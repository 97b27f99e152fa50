/*
 * grammar_match.c - the grammar matcher's parse state (wk_grammar.h): a
 * set of stacks over the per-rule DFAs, stepped one byte at a time.
 *
 * A stack is a pair (q, parent): q a DFA state with byte edges (where the
 * next byte is read), parent an interned return frame (struct gnodes: a
 * DFA state to continue in once q's rule ends, and its own parent), or
 * GM_NIL when q's rule is the last. Expanding (q, parent) follows call
 * edges (pushing the state after the call as a frame, or passing parent
 * on when that state is a pure end: tail calls push nothing) and, where q
 * is final, pops into the parent; a pop past GM_NIL means the text so far
 * is complete ("ended"). A set of stacks is deduplicated by its pairs;
 * equal frames are equal ids, so equal states are equal sets.
 *
 * The state after each accepted token is kept (WK_GRAMMAR_MAX_HISTORY of
 * them) for rollback. Frames made by accepted tokens stay in the store
 * until it is compacted (live frames renumbered in order).
 */
#include "grammar_int.h"

#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------- frame store */

static uint32_t pair_hash(int32_t q, int32_t parent)
{
    uint64_t h = ((uint64_t)(uint32_t)q << 32 | (uint32_t)parent) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32);
}

static bool nodes_rehash(struct gnodes *s, uint32_t size)
{
    int32_t *slot = wk_malloc((size_t)size * sizeof *slot);
    if (!slot) return false;
    for (uint32_t i = 0; i < size; i++) slot[i] = -1;
    for (int32_t id = 0; id < s->n; id++) {
        uint32_t k = pair_hash(s->q[id], s->parent[id]) & (size - 1);
        while (slot[k] >= 0) k = (k + 1) & (size - 1);
        slot[k] = id;
    }
    wk_free(s->slot);
    s->slot = slot;
    s->mask = size - 1;
    return true;
}

int32_t wk__gm_intern(struct wk_grammar_matcher *m, int32_t q, int32_t parent)
{
    struct gnodes *s = &m->nodes;
    uint32_t k = pair_hash(q, parent) & s->mask;
    for (; s->slot[k] >= 0; k = (k + 1) & s->mask) {
        int32_t id = s->slot[k];
        if (s->q[id] == q && s->parent[id] == parent) return id;
    }
    int32_t depth = parent >= 0 ? s->depth[parent] + 1 : 1;
    if (depth > WK_GRAMMAR_MAX_DEPTH) return -2;
    if (s->n >= s->cap) {
        int32_t cap = s->cap * 2;
        int32_t *nq = wk_realloc(s->q, (size_t)cap * sizeof *nq);
        if (nq) s->q = nq;
        int32_t *np = wk_realloc(s->parent, (size_t)cap * sizeof *np);
        if (np) s->parent = np;
        int32_t *nd = wk_realloc(s->depth, (size_t)cap * sizeof *nd);
        if (nd) s->depth = nd;
        if (!nq || !np || !nd) {
            m->nomem = m->overflow = true;
            return -2;
        }
        s->cap = cap;
    }
    if ((uint32_t)(s->n + 1) * 2 > s->mask + 1) {
        if (!nodes_rehash(s, (s->mask + 1) * 2)) {
            m->nomem = m->overflow = true;
            return -2;
        }
        k = pair_hash(q, parent) & s->mask;
        while (s->slot[k] >= 0) k = (k + 1) & s->mask;
    }
    int32_t id = s->n++;
    s->q[id] = q;
    s->parent[id] = parent;
    s->depth[id] = depth;
    s->slot[k] = id;
    return id;
}

void wk__gm_truncate(struct wk_grammar_matcher *m, int32_t mark)
{
    struct gnodes *s = &m->nodes;
    while (s->n > mark) {
        int32_t id = --s->n;
        uint32_t k = pair_hash(s->q[id], s->parent[id]) & s->mask;
        while (s->slot[k] != id) k = (k + 1) & s->mask;
        s->slot[k] = -1;
    }
}

/* ------------------------------------------------------------- closure */

static bool pb_reserve(struct wk_grammar_matcher *m, int32_t extra)
{
    if (m->n_pb + extra <= m->cap_pb) return true;
    int32_t cap = m->cap_pb ? m->cap_pb : 256;
    while (cap < m->n_pb + extra) cap *= 2;
    struct gpair *p = wk_realloc(m->pb, (size_t)cap * sizeof *p);
    if (!p) {
        m->nomem = m->overflow = true;
        return false;
    }
    m->pb = p;
    m->cap_pb = cap;
    return true;
}

/* Marks (q, parent) visited in this closure; false if it already was. */
static bool visit(struct wk_grammar_matcher *m, int32_t q, int32_t parent)
{
    if ((m->vcount + 1) * 2 > m->vmask + 1) { /* grow: keep the current marks */
        uint32_t size = (m->vmask + 1) * 2;
        int32_t *vq = wk_malloc((size_t)size * sizeof *vq), *vp = wk_malloc((size_t)size * sizeof *vp);
        uint32_t *vs = wk_calloc(size, sizeof *vs);
        if (!vq || !vp || !vs) {
            wk_free(vq), wk_free(vp), wk_free(vs);
            m->nomem = m->overflow = true;
            return false;
        }
        for (uint32_t i = 0; i <= m->vmask; i++) {
            if (m->vstamp[i] != m->vcur) continue;
            uint32_t k = pair_hash(m->vq[i], m->vp[i]) & (size - 1);
            while (vs[k] == m->vcur) k = (k + 1) & (size - 1);
            vq[k] = m->vq[i], vp[k] = m->vp[i], vs[k] = m->vcur;
        }
        wk_free(m->vq), wk_free(m->vp), wk_free(m->vstamp);
        m->vq = vq, m->vp = vp, m->vstamp = vs, m->vmask = size - 1;
    }
    uint32_t k = pair_hash(q, parent) & m->vmask;
    for (; m->vstamp[k] == m->vcur; k = (k + 1) & m->vmask)
        if (m->vq[k] == q && m->vp[k] == parent) return false;
    m->vq[k] = q, m->vp[k] = parent, m->vstamp[k] = m->vcur;
    m->vcount++;
    return true;
}

static void visit_reset(struct wk_grammar_matcher *m)
{
    if (++m->vcur == 0) { /* stamps wrapped: clear for real */
        memset(m->vstamp, 0, ((size_t)m->vmask + 1) * sizeof *m->vstamp);
        m->vcur = 1;
    }
    m->vcount = 0;
}

static bool work_push(struct wk_grammar_matcher *m, int32_t q, int32_t parent)
{
    if (m->n_work >= m->cap_work) {
        int32_t cap = m->cap_work * 2;
        struct gpair *w = wk_realloc(m->work, (size_t)cap * sizeof *w);
        if (!w) {
            m->nomem = m->overflow = true;
            return false;
        }
        m->work = w;
        m->cap_work = cap;
    }
    m->work[m->n_work++] = (struct gpair){q, parent};
    return true;
}

/* Expands (q, parent) into the set being written at the end of pb, which
 * started at offset base; the visited marks of the current closure apply. */
static void expand_into(struct wk_grammar_matcher *m, int32_t q, int32_t parent, int32_t base)
{
    const struct wk_grammar *g = m->g;
    m->n_work = 0;
    if (!work_push(m, q, parent)) return;
    while (m->n_work > 0) {
        struct gpair w = m->work[--m->n_work];
        if (!visit(m, w.q, w.parent)) continue;
        const struct gstate *s = &g->states[w.q];
        if (s->flags & GS_BYTES) {
            if (m->n_pb - base >= WK_GRAMMAR_MAX_STACKS) {
                m->overflow = true;
                return;
            }
            if (!pb_reserve(m, 1)) return;
            m->pb[m->n_pb++] = w;
        }
        for (int32_t k = 0; k < s->n_c; k++) {
            const struct gcall *cl = &g->calls[s->c_off + k];
            int32_t cont = w.parent;
            if (!(g->states[cl->to].flags & GS_PURE_FINAL)) {
                cont = wk__gm_intern(m, cl->to, w.parent);
                if (cont == -2) { /* too deep: this path is not allowed */
                    if (m->nomem) return;
                    continue;
                }
            }
            if (!work_push(m, g->rule_start[cl->rule], cont)) return;
        }
        if (s->flags & GS_FINAL) {
            if (w.parent == GM_NIL) m->ended = true;
            else if (!work_push(m, m->nodes.q[w.parent], m->nodes.parent[w.parent])) return;
        }
    }
}

int32_t wk__gm_expand(struct wk_grammar_matcher *m, int32_t q, int32_t parent)
{
    int32_t base = m->n_pb;
    m->ended = false;
    visit_reset(m);
    expand_into(m, q, parent, base);
    return m->n_pb - base;
}

int32_t wk__gm_advance(struct wk_grammar_matcher *m, int32_t in, int32_t n_in, uint8_t b)
{
    const struct wk_grammar *g = m->g;
    int32_t base = m->n_pb;
    m->ended = false;
    if (n_in == 1) { /* the common case: one stack, a plain step inside a rule */
        struct gpair p = m->pb[in];
        int32_t q2 = wk__gstep(g, p.q, b);
        if (q2 < 0) return 0;
        if (g->states[q2].flags == GS_BYTES) {
            if (!pb_reserve(m, 1)) return 0;
            m->pb[m->n_pb++] = (struct gpair){q2, p.parent};
            return 1;
        }
    }
    visit_reset(m);
    for (int32_t i = 0; i < n_in && !m->overflow; i++) {
        struct gpair p = m->pb[in + i];
        int32_t q2 = wk__gstep(g, p.q, b);
        if (q2 >= 0) expand_into(m, q2, p.parent, base);
    }
    return m->n_pb - base;
}

/* ------------------------------------------------------- state, history */

static int cmp_pair(const void *a, const void *b)
{
    const struct gpair *x = a, *y = b;
    if (x->q != y->q) return x->q < y->q ? -1 : 1;
    return x->parent < y->parent ? -1 : x->parent > y->parent;
}

static bool snap_set(struct gsnap *s, const struct gpair *p, int32_t n, bool accepting,
                     bool terminated)
{
    if (n > s->cap) {
        int32_t cap = n < 8 ? 8 : n;
        struct gpair *np = wk_realloc(s->p, (size_t)cap * sizeof *np);
        if (!np) return false;
        s->p = np;
        s->cap = cap;
    }
    if (n) memcpy(s->p, p, (size_t)n * sizeof *p);
    s->n = n;
    s->accepting = accepting;
    s->terminated = terminated;
    return true;
}

/* The i-th most recent saved state (0 = the one before cur). */
static struct gsnap *hist_at(struct wk_grammar_matcher *m, int32_t i)
{
    return &m->hist[(m->hist_head + 2 * WK_GRAMMAR_MAX_HISTORY - 1 - i) % WK_GRAMMAR_MAX_HISTORY];
}

/* Renumbers the frames reachable from the current and saved states. */
static void compact(struct wk_grammar_matcher *m)
{
    struct gnodes *s = &m->nodes;
    int32_t *map = wk_malloc(((size_t)s->n + 1) * sizeof *map);
    if (!map) return; /* keep growing; not fatal */
    for (int32_t i = 0; i < s->n; i++) map[i] = -1;
    for (int32_t h = -1; h < m->hist_n; h++) {
        const struct gsnap *sn = h < 0 ? &m->cur : hist_at(m, h);
        for (int32_t i = 0; i < sn->n; i++)
            for (int32_t p = sn->p[i].parent; p >= 0 && map[p] < 0; p = s->parent[p]) map[p] = 0;
    }
    int32_t n = 0;
    for (int32_t i = 0; i < s->n; i++) {
        if (map[i] < 0) continue;
        map[i] = n;
        s->q[n] = s->q[i];
        s->parent[n] = s->parent[i] >= 0 ? map[s->parent[i]] : s->parent[i];
        s->depth[n] = s->depth[i];
        n++;
    }
    s->n = n;
    for (int32_t h = -1; h < m->hist_n; h++) {
        struct gsnap *sn = h < 0 ? &m->cur : hist_at(m, h);
        for (int32_t i = 0; i < sn->n; i++)
            if (sn->p[i].parent >= 0) sn->p[i].parent = map[sn->p[i].parent];
        if (sn->n > 1) qsort(sn->p, (size_t)sn->n, sizeof *sn->p, cmp_pair);
    }
    wk_free(map);
    nodes_rehash(s, s->mask + 1);
    wk__gm_lru_flush(m);
    m->compact_at = n * 4 > (1 << 16) ? n * 4 : (1 << 16);
}

static void set_error(struct wk_grammar_matcher *m, const char *what)
{
    snprintf(m->errmsg, sizeof m->errmsg, "%s", what);
}

/*
 * Steps the current state over bytes[0..len): on success the new state is
 * at pb[*out .. *out + *n_out) (the caller copies it before using pb) and
 * *acc says whether it is complete. Frames made stay unless truncated.
 */
static enum wk_status step_bytes(struct wk_grammar_matcher *m, const uint8_t *bytes, size_t len,
                                 int32_t *out, int32_t *n_out, bool *acc)
{
    m->n_pb = 0;
    m->overflow = m->nomem = false;
    if (!pb_reserve(m, m->cur.n)) return WK_E_NOMEM;
    if (m->cur.n) memcpy(m->pb, m->cur.p, (size_t)m->cur.n * sizeof *m->pb);
    m->n_pb = m->cur.n;
    int32_t in = 0, n_in = m->cur.n;
    bool ended = m->cur.accepting;
    if (m->cur.terminated) return WK_E_INVALID;
    for (size_t i = 0; i < len; i++) {
        int32_t base = m->n_pb;
        int32_t n = wk__gm_advance(m, in, n_in, bytes[i]);
        if (m->overflow) return m->nomem ? WK_E_NOMEM : WK_E_RANGE;
        if (n == 0 && !m->ended) return WK_E_INVALID;
        ended = m->ended;
        if (n == 0 && i + 1 < len) return WK_E_INVALID;
        /* slide the new set down so pb does not grow with the token length */
        memmove(m->pb, m->pb + base, (size_t)n * sizeof *m->pb);
        m->n_pb = n;
        in = 0;
        n_in = n;
    }
    *out = in;
    *n_out = n_in;
    *acc = ended;
    return WK_OK;
}

static enum wk_status commit(struct wk_grammar_matcher *m, int32_t n, bool acc, bool terminated)
{
    if (n > 1) qsort(m->pb, (size_t)n, sizeof *m->pb, cmp_pair);
    /* the new state goes into the oldest history slot's buffer, then the
     * slot and cur swap: the slot keeps the old state */
    struct gsnap *h = &m->hist[m->hist_head];
    if (!snap_set(h, m->pb, n, acc, terminated)) return WK_E_NOMEM;
    struct gsnap tmp = *h;
    *h = m->cur;
    m->cur = tmp;
    m->hist_head = (m->hist_head + 1) % WK_GRAMMAR_MAX_HISTORY;
    if (m->hist_n < WK_GRAMMAR_MAX_HISTORY) m->hist_n++;
    if (m->nodes.n > m->compact_at) compact(m);
    return WK_OK;
}

static enum wk_status accept_bytes(struct wk_grammar_matcher *m, const uint8_t *b, size_t len)
{
    int32_t mark = m->nodes.n, out, n;
    bool acc;
    enum wk_status st = step_bytes(m, b, len, &out, &n, &acc);
    if (st != WK_OK) {
        wk__gm_truncate(m, mark);
        return st;
    }
    st = commit(m, n, acc, false);
    if (st != WK_OK) wk__gm_truncate(m, mark);
    return st;
}

enum wk_status wk_grammar_matcher_accept(struct wk_grammar_matcher *m, int32_t id)
{
    const struct wk_grammar_vocab *v = m->v;
    m->errmsg[0] = '\0';
    if (id < 0 || id >= v->n_tokens) {
        set_error(m, "token id out of range");
        return WK_E_INVALID;
    }
    if (v->is_eog[id]) {
        if (!m->cur.accepting || m->cur.terminated) {
            set_error(m, "end of generation before the grammar is complete");
            return WK_E_INVALID;
        }
        m->n_pb = 0;
        return commit(m, 0, true, true);
    }
    if (!v->bytes[id]) {
        set_error(m, "a special token is never allowed by a grammar");
        return WK_E_INVALID;
    }
    enum wk_status st = accept_bytes(m, v->bytes[id], v->lens[id]);
    if (st == WK_E_INVALID) set_error(m, "token not allowed by the grammar here");
    else if (st == WK_E_RANGE) set_error(m, "grammar: too many parse stacks (ambiguous grammar)");
    return st;
}

bool wk_grammar_matcher_accept_bytes(struct wk_grammar_matcher *m, const char *bytes, size_t len)
{
    return accept_bytes(m, (const uint8_t *)bytes, len) == WK_OK;
}

bool wk_grammar_matcher_accepts_bytes(struct wk_grammar_matcher *m, const char *bytes, size_t len)
{
    int32_t mark = m->nodes.n, out, n;
    bool acc;
    enum wk_status st = step_bytes(m, (const uint8_t *)bytes, len, &out, &n, &acc);
    wk__gm_truncate(m, mark);
    return st == WK_OK;
}

bool wk_grammar_matcher_is_complete(const struct wk_grammar_matcher *m)
{
    return m->cur.accepting;
}

bool wk_grammar_matcher_is_finished(const struct wk_grammar_matcher *m)
{
    return m->cur.terminated || (m->cur.accepting && m->cur.n == 0);
}

void wk_grammar_matcher_rollback(struct wk_grammar_matcher *m, int32_t n_tokens)
{
    if (n_tokens > m->hist_n) n_tokens = m->hist_n;
    for (int32_t i = 0; i < n_tokens; i++) {
        m->hist_head = (m->hist_head + WK_GRAMMAR_MAX_HISTORY - 1) % WK_GRAMMAR_MAX_HISTORY;
        struct gsnap tmp = m->cur;
        m->cur = m->hist[m->hist_head];
        m->hist[m->hist_head] = tmp;
        m->hist_n--;
    }
}

const char *wk_grammar_matcher_error(const struct wk_grammar_matcher *m)
{
    return m->errmsg;
}

/* The start state: the root rule expanded from GM_NIL. */
static enum wk_status start_state(struct wk_grammar_matcher *m)
{
    m->n_pb = 0;
    m->overflow = m->nomem = false;
    int32_t n = wk__gm_expand(m, m->g->rule_start[m->g->root], GM_NIL);
    if (m->overflow) return m->nomem ? WK_E_NOMEM : WK_E_RANGE;
    if (n > 1) qsort(m->pb, (size_t)n, sizeof *m->pb, cmp_pair);
    if (!snap_set(&m->cur, m->pb, n, m->ended, false)) return WK_E_NOMEM;
    return WK_OK;
}

void wk_grammar_matcher_reset(struct wk_grammar_matcher *m)
{
    m->hist_n = 0;
    m->hist_head = 0;
    m->nodes.n = 0;
    nodes_rehash(&m->nodes, m->nodes.mask + 1);
    wk__gm_lru_flush(m);
    start_state(m); /* succeeded at create with the same grammar and memory */
}

void wk_grammar_matcher_free(struct wk_grammar_matcher *m)
{
    if (!m) return;
    wk__gm_tc_free(m);
    wk_free(m->nodes.q), wk_free(m->nodes.parent), wk_free(m->nodes.depth), wk_free(m->nodes.slot);
    wk_free(m->cur.p);
    for (int32_t i = 0; i < WK_GRAMMAR_MAX_HISTORY; i++) wk_free(m->hist[i].p);
    wk_free(m->work), wk_free(m->vq), wk_free(m->vp), wk_free(m->vstamp), wk_free(m->pb);
    for (int i = 0; i < GM_LRU; i++) wk_free(m->lru[i].p), wk_free(m->lru[i].bits);
    wk_free(m);
}

enum wk_status wk_grammar_matcher_create(const struct wk_grammar *g,
                                         const struct wk_grammar_vocab *v,
                                         struct wk_grammar_matcher **out, struct wk_error *err)
{
    *out = NULL;
    struct wk_grammar_matcher *m = wk_calloc(1, sizeof *m);
    if (!m) return wk_error_set(err, WK_E_NOMEM, "grammar matcher: out of memory");
    m->g = g;
    m->v = v;
    m->compact_at = 1 << 16;
    m->nodes.cap = 1024;
    m->nodes.q = wk_malloc(1024 * sizeof(int32_t));
    m->nodes.parent = wk_malloc(1024 * sizeof(int32_t));
    m->nodes.depth = wk_malloc(1024 * sizeof(int32_t));
    m->cap_work = 64;
    m->work = wk_malloc(64 * sizeof *m->work);
    m->vmask = 255;
    m->vq = wk_malloc(256 * sizeof(int32_t));
    m->vp = wk_malloc(256 * sizeof(int32_t));
    m->vstamp = wk_calloc(256, sizeof(uint32_t));
    m->tc = wk_calloc((size_t)g->n_states, sizeof *m->tc);
    m->scratch_bits = wk_malloc((size_t)v->n_words * sizeof(uint32_t) + 4);
    m->vcur = 1;
    if (!m->nodes.q || !m->nodes.parent || !m->nodes.depth || !m->work || !m->vq || !m->vp ||
        !m->vstamp || !m->tc || !m->scratch_bits || !nodes_rehash(&m->nodes, 2048)) {
        wk_grammar_matcher_free(m);
        return wk_error_set(err, WK_E_NOMEM, "grammar matcher: out of memory");
    }
    for (int i = 0; i < GM_LRU; i++) { /* the mask cache, allocated once */
        m->lru[i].bits = wk_malloc((size_t)v->n_words * sizeof(uint32_t) + 4);
        m->lru[i].p = wk_malloc(8 * sizeof *m->lru[i].p);
        m->lru[i].cap = 8;
        if (!m->lru[i].bits || !m->lru[i].p) {
            wk_grammar_matcher_free(m);
            return wk_error_set(err, WK_E_NOMEM, "grammar matcher: out of memory");
        }
    }
    enum wk_status st = start_state(m);
    if (st != WK_OK) {
        wk_grammar_matcher_free(m);
        return wk_error_set(err, st, "grammar matcher: %s at the start state",
                            st == WK_E_NOMEM ? "out of memory" : "too many parse stacks");
    }
    /* precompute the token sets of the states that can be a stack top,
     * within a budget of trie walking and of memory (the cost of a request
     * stays bounded whatever the grammar); the rest are computed on first
     * use, as a generation reaches them */
    for (int32_t q = 0; q < g->n_states; q++) {
        if (m->tc_steps >= GM_PRECOMPUTE_STEPS || m->tc_bytes >= GM_TC_MAX_BYTES / 4) break;
        if (!(g->states[q].flags & GS_BYTES)) continue;
        if (!wk__gm_tc_compute(m, q) && m->nomem) {
            wk_grammar_matcher_free(m);
            return wk_error_set(err, WK_E_NOMEM, "grammar matcher: out of memory");
        }
    }
    *out = m;
    return WK_OK;
}
