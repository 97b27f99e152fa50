/*
 * grammar_check.c - the checks on a compiled grammar (grammar_compile.c)
 * and the grammar's public entry points.
 *
 * nullable: a rule that can match "" (its start reaches a final state
 * through calls of nullable rules only). finishing: a rule that can match
 * some finite text; every rule used must, or the matcher could walk into a
 * dead end. Left recursion: a rule that can call itself (through others)
 * before reading a byte; the stack would grow without input, so it is
 * refused, as llama.cpp does.
 */
#include "grammar_int.h"

#include <stdlib.h>

void wk_grammar_free(struct wk_grammar *g)
{
    if (!g) return;
    if (g->rule_names)
        for (int32_t r = 0; r < g->n_rules; r++) wk_free(g->rule_names[r]);
    wk_free(g->rule_names);
    wk_free(g->rule_start);
    wk_free(g->states);
    wk_free(g->ranges);
    wk_free(g->tables);
    wk_free(g->calls);
    wk_free(g);
}

int32_t wk_grammar_n_rules(const struct wk_grammar *g)
{
    return g ? g->n_rules : 0;
}

int32_t wk_grammar_n_states(const struct wk_grammar *g)
{
    return g ? g->n_states : 0;
}

/* States of rule r reachable from its start without reading a byte
 * (through calls of nullable rules); returns how many, in list. */
static int32_t zero_reach(const struct wk_grammar *g, int32_t r, const uint8_t *nullable,
                          int32_t *list, uint32_t *seen, uint32_t stamp)
{
    int32_t n = 0, i = 0;
    int32_t q0 = g->rule_start[r];
    list[n++] = q0;
    seen[q0] = stamp;
    while (i < n) {
        const struct gstate *s = &g->states[list[i++]];
        for (int32_t k = 0; k < s->n_c; k++) {
            const struct gcall *cl = &g->calls[s->c_off + k];
            if (nullable[cl->rule] && seen[cl->to] != stamp) {
                seen[cl->to] = stamp;
                list[n++] = cl->to;
            }
        }
    }
    return n;
}

static enum wk_status rule_error(const struct gast_tree *t, struct wk_error *err, int32_t r,
                                 const char *what)
{
    return wk_error_set(err, WK_E_INVALID, "grammar line %d column %d: %s rule '%s'",
                        t->rules[r].line, t->rules[r].col, what, t->names + t->rules[r].name);
}

/* Finishing rules: iterate to a fixed point over all compiled rules. */
static void find_finishing(const struct wk_grammar *g, uint8_t *fin, int32_t *list, uint32_t *seen,
                           uint32_t *stamp)
{
    for (bool changed = true; changed;) {
        changed = false;
        for (int32_t r = g->n_rules - 1; r >= 0; r--) {
            if (g->rule_start[r] < 0 || fin[r]) continue;
            ++*stamp;
            int32_t n = 0, i = 0;
            list[n++] = g->rule_start[r];
            seen[g->rule_start[r]] = *stamp;
            bool ok = false;
            while (i < n && !ok) {
                const struct gstate *s = &g->states[list[i++]];
                if (s->flags & GS_FINAL) ok = true;
                for (int32_t k = 0; k < s->n_r; k++) {
                    int32_t to = g->ranges[s->r_off + k].to;
                    if (seen[to] != *stamp) seen[to] = *stamp, list[n++] = to;
                }
                for (int32_t k = 0; k < s->n_c; k++) {
                    const struct gcall *cl = &g->calls[s->c_off + k];
                    if (fin[cl->rule] && seen[cl->to] != *stamp) seen[cl->to] = *stamp, list[n++] = cl->to;
                }
            }
            if (ok) fin[r] = 1, changed = true;
        }
    }
}

enum wk_status wk__grammar_check(const struct wk_grammar *g, const struct gast_tree *t,
                                 struct wk_error *err)
{
    int32_t nr = g->n_rules;
    enum wk_status st = WK_OK;
    uint8_t *nullable = wk_calloc((size_t)nr + 1, 1), *fin = wk_calloc((size_t)nr + 1, 1);
    uint8_t *color = wk_calloc((size_t)nr + 1, 1);
    int32_t *list = wk_malloc(((size_t)g->n_states + 1) * sizeof *list);
    uint32_t *seen = wk_calloc((size_t)g->n_states + 1, sizeof *seen), stamp = 0;
    int32_t *ledge_off = wk_calloc((size_t)nr + 2, sizeof(int32_t)), *ledge = NULL;
    int32_t *stk = wk_malloc(((size_t)nr + 1) * 2 * sizeof(int32_t));
    if (!nullable || !fin || !color || !list || !seen || !ledge_off || !stk) {
        st = wk_error_set(err, WK_E_NOMEM, "grammar: out of memory");
        goto done;
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (int32_t r = nr - 1; r >= 0; r--) {
            if (g->rule_start[r] < 0 || nullable[r]) continue;
            int32_t n = zero_reach(g, r, nullable, list, seen, ++stamp);
            for (int32_t i = 0; i < n; i++)
                if (g->states[list[i]].flags & GS_FINAL) {
                    nullable[r] = 1;
                    changed = true;
                    break;
                }
        }
    }
    find_finishing(g, fin, list, seen, &stamp);
    for (int32_t r = 0; r < nr; r++)
        if (g->rule_start[r] >= 0 && !fin[r]) {
            st = rule_error(t, err, r, "no finite text matches");
            goto done;
        }
    /* left edges: calls reachable before any byte */
    int64_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        int32_t pos = 0;
        for (int32_t r = 0; r < nr; r++) {
            if (pass == 1) ledge_off[r] = pos;
            if (g->rule_start[r] < 0) continue;
            int32_t n = zero_reach(g, r, nullable, list, seen, ++stamp);
            for (int32_t i = 0; i < n; i++) {
                const struct gstate *s = &g->states[list[i]];
                for (int32_t k = 0; k < s->n_c; k++) {
                    if (pass == 1) ledge[pos] = g->calls[s->c_off + k].rule;
                    pos++;
                }
            }
        }
        if (pass == 1) ledge_off[nr] = pos;
        total = pos;
        if (pass == 0) {
            ledge = wk_malloc(((size_t)total + 1) * sizeof *ledge);
            if (!ledge) {
                st = wk_error_set(err, WK_E_NOMEM, "grammar: out of memory");
                goto done;
            }
        }
    }
    /* a cycle of left edges (iterative DFS, colors 0 new, 1 open, 2 done) */
    for (int32_t r0 = 0; r0 < nr; r0++) {
        if (g->rule_start[r0] < 0 || color[r0]) continue;
        int32_t sp = 0;
        stk[0] = r0, stk[1] = ledge_off[r0];
        color[r0] = 1;
        sp = 1;
        while (sp > 0) {
            int32_t v = stk[2 * (sp - 1)], *it = &stk[2 * (sp - 1) + 1];
            if (*it < ledge_off[v + 1]) {
                int32_t w = ledge[(*it)++];
                if (color[w] == 1) {
                    st = rule_error(t, err, w, "left recursion in");
                    goto done;
                }
                if (color[w] == 0) {
                    color[w] = 1;
                    stk[2 * sp] = w, stk[2 * sp + 1] = ledge_off[w];
                    sp++;
                }
            } else {
                color[v] = 2;
                sp--;
            }
        }
    }
done:
    wk_free(nullable), wk_free(fin), wk_free(color), wk_free(list), wk_free(seen);
    wk_free(ledge_off), wk_free(ledge), wk_free(stk);
    return st;
}

enum wk_status wk_grammar_from_gbnf(const char *src, size_t len, const char *root,
                                    struct wk_grammar **out, struct wk_error *err)
{
    *out = NULL;
    if (!root) root = "root";
    struct gast_tree t = {0};
    enum wk_status st = wk__gbnf_parse(src, len, &t, err);
    if (st == WK_OK) {
        int32_t r = wk__gast_find_rule(&t, root, strlen(root));
        if (r < 0)
            st = wk_error_set(err, WK_E_INVALID, "grammar: no rule named '%s' (the start rule)", root);
        else
            st = wk__grammar_compile(&t, r, out, err);
    }
    wk__gast_deinit(&t);
    return st;
}
