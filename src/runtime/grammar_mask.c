/*
 * grammar_mask.c - token masks for the grammar matcher (wk_grammar.h).
 *
 * Precomputation, per DFA state q that can be a stack top: walk the token
 * trie from the single stack (q, GM_NIL), where GM_NIL now stands for the
 * frames below, unknown. A token whose bytes all fit without the rule
 * ending is allowed under any frames ("accepted"); a token that ends
 * exactly where the rule ends is allowed too (the frames below then get
 * nothing). A token on a path where the rule ends with bytes left over
 * depends on the frames below: the rest of its bytes goes into a suffix
 * trie for q. Every other token is rejected.
 *
 * Mask: the union, over the current stacks (q, parent), of q's accepted
 * set, plus the suffix trie of q walked from the stacks the parent frame
 * expands to (in practice a handful of short suffixes such as `",` after
 * the end of a string). The last GM_LRU masks are kept by state.
 */
#include "grammar_int.h"

#include <stdio.h>
#include <stdlib.h>

#define GM_SPARSE_MAX 1024 /* accepted sets up to this size are id lists */

static bool acc_push(struct wk_grammar_matcher *m, int32_t id)
{
    if (m->n_acc >= m->cap_acc) {
        int32_t cap = m->cap_acc ? m->cap_acc * 2 : 1024;
        int32_t *p = wk_realloc(m->acc, (size_t)cap * sizeof *p);
        if (!p) {
            m->nomem = m->overflow = true;
            return false;
        }
        m->acc = p;
        m->cap_acc = cap;
    }
    m->acc[m->n_acc++] = id;
    return true;
}

static bool ent_push(struct wk_grammar_matcher *m, int32_t node, int32_t depth)
{
    if (m->n_ent >= m->cap_ent) {
        int32_t cap = m->cap_ent ? m->cap_ent * 2 : 256;
        int32_t *a = wk_realloc(m->ent, (size_t)cap * sizeof *a);
        if (a) m->ent = a;
        int32_t *b = wk_realloc(m->ent_depth, (size_t)cap * sizeof *b);
        if (b) m->ent_depth = b;
        if (!a || !b) {
            m->nomem = m->overflow = true;
            return false;
        }
        m->cap_ent = cap;
    }
    m->ent[m->n_ent] = node;
    m->ent_depth[m->n_ent++] = depth;
    return true;
}

/* The precomputation walk below trie node x from the set pb[in .. in+n_in). */
static void tc_walk(struct wk_grammar_matcher *m, const struct gtrie *t, int32_t x, int32_t in,
                    int32_t n_in, int32_t depth)
{
    int32_t end = x + t->size[x];
    for (int32_t c = x + 1; c < end && !m->overflow; c += t->size[c]) {
        int32_t mark = m->nodes.n, pb_mark = m->n_pb;
        int32_t n = wk__gm_advance(m, in, n_in, t->byte[c]);
        m->tc_steps++;
        if (n > 0 || m->ended) {
            for (int32_t k = t->tok_off[c]; k < t->tok_off[c + 1]; k++) acc_push(m, t->tok[k]);
            if (t->size[c] > 1) {
                if (m->ended) ent_push(m, c, depth + 1);
                if (n > 0) tc_walk(m, t, c, pb_mark, n, depth + 1);
            }
        }
        wk__gm_truncate(m, mark);
        m->n_pb = pb_mark;
    }
}

/* The runtime walk below trie node x: sets the bits of the tokens allowed
 * from the set pb[in .. in+n_in) (real frames below). */
static void rt_walk(struct wk_grammar_matcher *m, const struct gtrie *t, int32_t x, int32_t in,
                    int32_t n_in, uint32_t *bits)
{
    int32_t end = x + t->size[x];
    for (int32_t c = x + 1; c < end && !m->overflow; c += t->size[c]) {
        int32_t mark = m->nodes.n, pb_mark = m->n_pb;
        int32_t n = wk__gm_advance(m, in, n_in, t->byte[c]);
        if (n > 0 || m->ended) {
            for (int32_t k = t->tok_off[c]; k < t->tok_off[c + 1]; k++) {
                int32_t id = t->tok[k];
                bits[id >> 5] |= 1u << (id & 31);
            }
            if (n > 0 && t->size[c] > 1) rt_walk(m, t, c, pb_mark, n, bits);
        }
        wk__gm_truncate(m, mark);
        m->n_pb = pb_mark;
    }
}

static void tc_clear(struct wk_grammar_matcher *m, struct gtc *e)
{
    m->tc_bytes -= e->bytes;
    wk_free(e->bits);
    wk_free(e->ids);
    if (e->sfx) {
        wk__gtrie_deinit(e->sfx);
        wk_free(e->sfx);
    }
    memset(e, 0, sizeof *e);
}

/* Drops every stored token set (they are computed again on use). */
static void tc_flush(struct wk_grammar_matcher *m)
{
    for (int32_t q = 0; q < m->g->n_states && m->tc_bytes > 0; q++)
        if (m->tc[q].done) tc_clear(m, &m->tc[q]);
}

void wk__gm_tc_free(struct wk_grammar_matcher *m)
{
    if (m->tc)
        for (int32_t q = 0; q < m->g->n_states; q++) tc_clear(m, &m->tc[q]);
    wk_free(m->tc);
    wk_free(m->scratch_bits);
    wk_free(m->acc);
    wk_free(m->ent);
    wk_free(m->ent_depth);
}

/* The suffix trie of the tokens below the walk's entries that were not
 * accepted outright; NULL (and true) when there are none. */
static bool build_sfx(struct wk_grammar_matcher *m, struct gtc *e)
{
    const struct wk_grammar_vocab *v = m->v;
    const struct gtrie *t = &v->trie;
    int64_t total = 0;
    for (int32_t i = 0; i < m->n_ent; i++) {
        int32_t c = m->ent[i];
        total += t->tok_off[c + t->size[c]] - t->tok_off[c + 1];
    }
    if (total == 0) return true;
    const uint8_t **strs = wk_malloc((size_t)total * sizeof *strs);
    uint32_t *lens = wk_malloc((size_t)total * sizeof *lens);
    int32_t *ids = wk_malloc((size_t)total * sizeof *ids);
    bool ok = false;
    if (!strs || !lens || !ids) goto done;
    int32_t n = 0;
    int64_t chars = 0;
    for (int32_t i = 0; i < m->n_ent; i++) {
        int32_t c = m->ent[i], d = m->ent_depth[i];
        for (int32_t k = t->tok_off[c + 1]; k < t->tok_off[c + t->size[c]]; k++) {
            int32_t id = t->tok[k];
            if (m->scratch_bits[id >> 5] & (1u << (id & 31))) continue;
            strs[n] = v->bytes[id] + d;
            lens[n] = v->lens[id] - (uint32_t)d;
            chars += lens[n];
            ids[n++] = id;
        }
    }
    ok = true;
    if (n > 0) {
        e->bytes += (int64_t)sizeof *e->sfx + 9 * (chars + 2) + 4 * ((int64_t)n + 1);
        e->sfx = wk_calloc(1, sizeof *e->sfx);
        ok = e->sfx && wk__gtrie_build(e->sfx, strs, lens, ids, n) == WK_OK;
        if (!ok) {
            wk_free(e->sfx);
            e->sfx = NULL;
        }
    }
done:
    wk_free(strs), wk_free(lens), wk_free(ids);
    return ok;
}

bool wk__gm_tc_compute(struct wk_grammar_matcher *m, int32_t q)
{
    struct gtc *e = &m->tc[q];
    if (e->done) return true;
    const struct wk_grammar_vocab *v = m->v;
    int32_t mark = m->nodes.n;
    m->n_pb = 0;
    m->n_acc = 0;
    m->n_ent = 0;
    m->overflow = m->nomem = false;
    if (m->cap_pb < 1) {
        struct gpair *p = wk_realloc(m->pb, 256 * sizeof *p);
        if (!p) {
            m->nomem = m->overflow = true;
            return false;
        }
        m->pb = p;
        m->cap_pb = 256;
    }
    m->pb[0] = (struct gpair){q, GM_NIL};
    m->n_pb = 1;
    tc_walk(m, &v->trie, 0, 0, 1, 0);
    wk__gm_truncate(m, mark);
    m->n_pb = 0;
    if (m->overflow) return false; /* masks with this state fall back to full walks */
    memset(m->scratch_bits, 0, (size_t)v->n_words * sizeof(uint32_t));
    for (int32_t i = 0; i < m->n_acc; i++)
        m->scratch_bits[m->acc[i] >> 5] |= 1u << (m->acc[i] & 31);
    e->n_acc = m->n_acc;
    if (m->n_acc > GM_SPARSE_MAX) {
        e->bits = wk_malloc((size_t)v->n_words * sizeof(uint32_t));
        if (e->bits) memcpy(e->bits, m->scratch_bits, (size_t)v->n_words * sizeof(uint32_t));
        e->bytes = (int64_t)v->n_words * 4;
    } else {
        e->ids = wk_malloc(((size_t)m->n_acc + 1) * sizeof(int32_t));
        if (e->ids && m->n_acc) memcpy(e->ids, m->acc, (size_t)m->n_acc * sizeof(int32_t));
        e->bytes = ((int64_t)m->n_acc + 1) * 4;
    }
    m->tc_bytes += e->bytes; /* before build_sfx: tc_clear takes the whole of e->bytes off */
    int64_t before = e->bytes;
    bool ok = (e->bits || e->ids) && build_sfx(m, e);
    m->tc_bytes += e->bytes - before;
    if (!ok) {
        tc_clear(m, e);
        m->nomem = m->overflow = true;
        return false;
    }
    e->done = true;
    return true;
}

/* ------------------------------------------------------------------ LRU */

static uint64_t state_key(const struct gsnap *s)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)s->accepting;
    for (int32_t i = 0; i < s->n; i++) {
        h = (h ^ (uint32_t)s->p[i].q) * 1099511628211ull;
        h = (h ^ (uint32_t)s->p[i].parent) * 1099511628211ull;
    }
    return h;
}

void wk__gm_lru_flush(struct wk_grammar_matcher *m)
{
    for (int i = 0; i < GM_LRU; i++) m->lru[i].used = false;
}

static struct glru *lru_find(struct wk_grammar_matcher *m, uint64_t key)
{
    for (int i = 0; i < GM_LRU; i++) {
        struct glru *l = &m->lru[i];
        if (l->used && l->key == key && l->n == m->cur.n && l->accepting == m->cur.accepting &&
            (l->n == 0 || memcmp(l->p, m->cur.p, (size_t)l->n * sizeof *l->p) == 0))
            return l;
    }
    return NULL;
}

static void lru_store(struct wk_grammar_matcher *m, uint64_t key, const uint32_t *bits)
{
    struct glru *l = &m->lru[0];
    for (int i = 1; i < GM_LRU; i++) {
        if (!m->lru[i].used) {
            l = &m->lru[i];
            break;
        }
        if (l->used && m->lru[i].tick < l->tick) l = &m->lru[i];
    }
    if (!l->used || l->cap < m->cur.n) {
        int32_t cap = m->cur.n < 8 ? 8 : m->cur.n;
        if (l->cap < cap) {
            struct gpair *p = wk_realloc(l->p, (size_t)cap * sizeof *p);
            if (!p) return;
            l->p = p;
            l->cap = cap;
        }
    }
    if (!l->bits) {
        l->bits = wk_malloc((size_t)m->v->n_words * sizeof(uint32_t));
        if (!l->bits) return;
    }
    if (m->cur.n) memcpy(l->p, m->cur.p, (size_t)m->cur.n * sizeof *l->p);
    memcpy(l->bits, bits, (size_t)m->v->n_words * sizeof(uint32_t));
    l->n = m->cur.n;
    l->accepting = m->cur.accepting;
    l->key = key;
    l->tick = ++m->tick;
    l->used = true;
}

/* ----------------------------------------------------------------- mask */

static void set_eog(const struct wk_grammar_vocab *v, uint32_t *bits)
{
    for (int32_t i = 0; i < v->n_eog; i++) bits[v->eog[i] >> 5] |= 1u << (v->eog[i] & 31);
}

/* The mask from the current stacks walked over the whole token trie:
 * for states whose precomputation failed. */
static void full_walk(struct wk_grammar_matcher *m, uint32_t *bits)
{
    m->n_pb = 0;
    struct gpair *p = wk_realloc(m->pb, ((size_t)m->cur.n + 256) * sizeof *p);
    if (!p) {
        m->nomem = m->overflow = true;
        return;
    }
    m->pb = p;
    if (m->cap_pb < m->cur.n + 256) m->cap_pb = m->cur.n + 256;
    if (m->cur.n) memcpy(m->pb, m->cur.p, (size_t)m->cur.n * sizeof *p);
    m->n_pb = m->cur.n;
    rt_walk(m, &m->v->trie, 0, 0, m->cur.n, bits);
}

enum wk_status wk_grammar_matcher_mask(struct wk_grammar_matcher *m, uint32_t *bits)
{
    const struct wk_grammar_vocab *v = m->v;
    size_t nw = (size_t)v->n_words;
    m->errmsg[0] = '\0';
    if (m->cur.terminated) {
        memset(bits, 0, nw * sizeof *bits);
        set_eog(v, bits);
        return WK_OK;
    }
    uint64_t key = state_key(&m->cur);
    struct glru *hit = lru_find(m, key);
    if (hit) {
        hit->tick = ++m->tick;
        memcpy(bits, hit->bits, nw * sizeof *bits);
        return WK_OK;
    }
    memset(bits, 0, nw * sizeof *bits);
    /* the stored sets are a cache: past their budget they are dropped
     * (never while this mask uses them), and computed again when needed */
    if (m->tc_bytes > GM_TC_MAX_BYTES) tc_flush(m);
    int32_t mark = m->nodes.n;
    bool fallback = false;
    /* near the depth limit the precomputed sets (made at depth 1) could
     * allow a token that nests too deep: walk with the real stacks */
    for (int32_t i = 0; i < m->cur.n && !fallback; i++) {
        int32_t p = m->cur.p[i].parent;
        if (p >= 0 && m->nodes.depth[p] + v->trie.max_depth >= WK_GRAMMAR_MAX_DEPTH) fallback = true;
    }
    for (int32_t i = 0; i < m->cur.n && !fallback; i++)
        if (!wk__gm_tc_compute(m, m->cur.p[i].q)) {
            if (m->nomem) goto fail;
            fallback = true;
        }
    m->overflow = m->nomem = false;
    if (fallback) {
        full_walk(m, bits);
    } else {
        for (int32_t i = 0; i < m->cur.n && !m->overflow; i++) {
            struct gpair pr = m->cur.p[i];
            const struct gtc *e = &m->tc[pr.q];
            if (i == 0 || m->cur.p[i - 1].q != pr.q) { /* pairs are sorted by q */
                if (e->bits) {
                    for (size_t w = 0; w < nw; w++) bits[w] |= e->bits[w];
                } else {
                    for (int32_t k = 0; k < e->n_acc; k++)
                        bits[e->ids[k] >> 5] |= 1u << (e->ids[k] & 31);
                }
            }
            if (!e->sfx || pr.parent == GM_NIL) continue;
            m->n_pb = 0;
            int32_t n = wk__gm_expand(m, m->nodes.q[pr.parent], m->nodes.parent[pr.parent]);
            if (n > 0 && !m->overflow) rt_walk(m, e->sfx, 0, 0, n, bits);
            wk__gm_truncate(m, mark);
        }
    }
    wk__gm_truncate(m, mark);
    m->n_pb = 0;
    if (m->overflow) goto fail;
    if (m->cur.accepting) set_eog(v, bits);
    lru_store(m, key, bits);
    return WK_OK;
fail:
    wk__gm_truncate(m, mark);
    memset(bits, 0, nw * sizeof *bits);
    snprintf(m->errmsg, sizeof m->errmsg, "%s",
             m->nomem ? "grammar mask: out of memory" : "grammar mask: too many parse stacks");
    return m->nomem ? WK_E_NOMEM : WK_E_RANGE;
}
