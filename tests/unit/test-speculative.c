/*
 * test-speculative.c - speculative decoding (wk_session_set_draft) on tiny
 * random Gemma 3 models, by the properties that define it:
 *   - greedy output with a draft equals output without it, token for token
 *     (a draft that is the target itself, one that shares its first layer,
 *     an unrelated one), with penalties, a sliding-window (rotating) cache
 *     and prefix reuse across requests;
 *   - sampling keeps the target's distribution: the first 3 tokens of
 *     20,000 seeded runs with speculation against 20,000 without, by a
 *     two-sample chi-square test (p > 0.001), and the test's power shown
 *     by the draft's own distribution failing it (p < 0.001);
 *   - num_predict, stop strings, the context limit, cancellation and
 *     logprobs behave as without speculation;
 *   - the draft length controller's choices follow from its inputs.
 */
#include "check.h"
#include "chi_square.h"
#include "tiny_model.h"

#include "../../src/runtime/wk_runtime.h"

struct model {
    struct wk_model *m;
    struct wk_tokenizer *tok;
};

static struct model load(uint32_t n_layer, uint64_t seed, uint32_t window)
{
    struct tiny_spec sp = tiny_spec_default();
    sp.n_layer = n_layer, sp.seed = seed, sp.sliding_window = window;
    char path[64];
    tiny_model_write(&sp, path, sizeof path);
    struct model r;
    struct wk_error err;
    CHECK_EQ_INT(wk_model_load(path, &r.m, &err), WK_OK);
    unlink(path);
    CHECK_EQ_INT(wk_tokenizer_from_gguf(wk_model_gguf(r.m), &r.tok, &err), WK_OK);
    return r;
}

static void unload(struct model *r)
{
    wk_tokenizer_destroy(r->tok);
    wk_model_destroy(r->m);
}

static struct wk_session *session(const struct model *t, const struct model *draft, int32_t n_ctx,
                                  int32_t n_ubatch)
{
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = n_ctx, cp.n_threads = 1, cp.n_ubatch = n_ubatch;
    struct wk_session *s;
    struct wk_error err;
    CHECK_EQ_INT(wk_session_create(t->m, t->tok, &cp, &s, &err), WK_OK);
    if (draft) CHECK_EQ_INT(wk_session_set_draft(s, draft->m, &err), WK_OK);
    return s;
}

/* What a generation produced. */
struct run {
    int32_t ids[512];
    int n_ids;
    char text[4096];
    size_t n_text;
    float lp[512];
    int n_lp;
    int cancel_after; /* pieces; 0 = never */
    int pieces;
    volatile bool cancel;
};

static void on_token(void *user, int32_t id)
{
    struct run *r = user;
    if (r->n_ids < (int)WK_ARRAY_LEN(r->ids)) r->ids[r->n_ids++] = id;
}

static bool on_piece(void *user, const char *text, size_t len)
{
    struct run *r = user;
    if (r->n_text + len < sizeof r->text) memcpy(r->text + r->n_text, text, len), r->n_text += len;
    if (r->cancel_after && ++r->pieces >= r->cancel_after) r->cancel = true;
    return true;
}

static void on_logprobs(void *user, const struct wk_token_logprobs *lp)
{
    struct run *r = user;
    if (r->n_lp < (int)WK_ARRAY_LEN(r->lp)) r->lp[r->n_lp++] = lp->logprob;
}

static enum wk_status generate(struct wk_session *s, const struct wk_tokens *prompt,
                               struct wk_generate_params gp, struct run *r,
                               struct wk_generate_stats *st)
{
    gp.on_token = on_token, gp.on_piece = on_piece, gp.on_logprobs = on_logprobs;
    gp.user = r, gp.cancel = &r->cancel;
    struct wk_error err;
    return wk_session_generate(s, prompt, &gp, st, &err);
}

/* generate with no speculation of any kind (draft_max 0: not even prompt
 * lookup, which a session without a draft does when greedy) */
static enum wk_status generate_plain(struct wk_session *s, const struct wk_tokens *prompt,
                                     struct wk_generate_params gp, struct run *r,
                                     struct wk_generate_stats *st)
{
    gp.draft_max = gp.draft_min = 0;
    enum wk_status status = generate(s, prompt, gp, r, st);
    CHECK_EQ_INT(st->spec_rounds, 0);
    return status;
}

static bool same_run(const struct run *a, const struct run *b)
{
    return a->n_ids == b->n_ids && memcmp(a->ids, b->ids, sizeof(int32_t) * (size_t)a->n_ids) == 0 &&
           a->n_text == b->n_text && memcmp(a->text, b->text, a->n_text) == 0 && a->n_lp == b->n_lp &&
           memcmp(a->lp, b->lp, sizeof(float) * (size_t)a->n_lp) == 0;
}

static void prompt_of(struct wk_tokens *p, int n, int salt)
{
    p->n = 0;
    wk_tokens_push(p, 2); /* <bos> */
    for (int i = 1; i < n; i++) wk_tokens_push(p, 259 + (salt * 7 + i * 13) % 41);
}

/* Greedy, with and without penalties, drafts of three kinds, fixed and
 * adaptive k: the same tokens, text, logprobs and stop reason. The second
 * request continues the first (prefix reuse for target and draft). */
static void test_greedy_equal(void)
{
    struct model t = load(2, 1, 0), tw = load(2, 1, 6);
    struct model self = load(2, 1, 0), half = load(1, 1, 0), other = load(2, 99, 0);
    const struct model *drafts[3] = {&self, &half, &other};
    struct wk_tokens prompt = {0}, next = {0};
    for (int window = 0; window < 2; window++) {
        const struct model *target = window ? &tw : &t;
        for (int di = 0; di < 3; di++) {
            const struct model *draft = drafts[di];
            if (window && draft == &self) continue; /* the windowed target has its own weights */
            for (int variant = 0; variant < 4; variant++) {
                struct wk_generate_params gp = wk_generate_params_default();
                gp.sampler.temperature = 0;
                gp.num_predict = 40;
                gp.top_logprobs = 2;
                if (variant & 1) gp.sampler.repeat_penalty = 1.3f, gp.sampler.presence_penalty = 0.4f,
                                 gp.sampler.frequency_penalty = 0.2f;
                gp.draft_max = variant & 2 ? 8 : 3;
                gp.draft_min = variant & 2 ? 0 : 3;
                struct wk_session *plain = session(target, NULL, 96, 4);
                struct wk_session *spec = session(target, draft, 96, 4);
                struct wk_generate_stats sa, sb;
                for (int salt = 0; salt < 3; salt++) {
                    prompt_of(&prompt, 9 + salt, salt + 10 * variant);
                    struct run a = {0}, b = {0};
                    CHECK_EQ_INT(generate_plain(plain, &prompt, gp, &a, &sa), WK_OK);
                    CHECK_EQ_INT(generate(spec, &prompt, gp, &b, &sb), WK_OK);
                    CHECK(same_run(&a, &b));
                    CHECK_EQ_STR(sa.done_reason, sb.done_reason);
                    CHECK_EQ_INT(sa.eval_count, sb.eval_count);
                    if (!(variant & 2)) CHECK(sb.spec_rounds > 0);
                    if (draft == &self && sb.draft_count > 0) CHECK_EQ_INT(sb.draft_accepted, sb.draft_count);
                    /* a follow-up that extends the first answer */
                    next.n = 0;
                    for (int64_t i = 0; i < prompt.n; i++) wk_tokens_push(&next, prompt.ids[i]);
                    for (int i = 0; i + 1 < a.n_ids; i++) wk_tokens_push(&next, a.ids[i]);
                    for (int i = 0; i < 3; i++) wk_tokens_push(&next, 270 + i + salt);
                    struct run c = {0}, d = {0};
                    CHECK_EQ_INT(generate_plain(plain, &next, gp, &c, &sa), WK_OK);
                    CHECK_EQ_INT(generate(spec, &next, gp, &d, &sb), WK_OK);
                    CHECK(same_run(&c, &d));
                    CHECK_EQ_INT(sa.prompt_eval_count, sb.prompt_eval_count);
                }
                wk_session_destroy(plain);
                wk_session_destroy(spec);
            }
        }
    }
    /* the unrelated draft is really rejected sometimes, the self-draft never */
    struct wk_session *spec = session(&t, &other, 96, 512);
    struct wk_generate_params gp = wk_generate_params_default();
    gp.sampler.temperature = 0, gp.num_predict = 60, gp.draft_min = 4, gp.draft_max = 4;
    gp.sampler.presence_penalty = 2; /* tiny random models repeat one token when greedy */
    struct run r = {0};
    struct wk_generate_stats st;
    prompt_of(&prompt, 8, 3);
    CHECK_EQ_INT(generate(spec, &prompt, gp, &r, &st), WK_OK);
    if (!(st.draft_count > 0 && st.draft_accepted < st.draft_count))
        fprintf(stderr, "  drafted %d, accepted %d, %d tokens\n", st.draft_count, st.draft_accepted, r.n_ids);
    CHECK(st.draft_count > 0 && st.draft_accepted < st.draft_count);
    wk_session_destroy(spec);
    wk_tokens_deinit(&prompt);
    wk_tokens_deinit(&next);
    unload(&t), unload(&tw), unload(&self), unload(&half), unload(&other);
}

/* num_predict 1..9, a stop string, the context limit and cancellation
 * end speculative generation exactly where plain generation ends. */
static void test_limits(void)
{
    struct model t = load(2, 1, 6), half = load(1, 1, 6);
    struct wk_tokens prompt = {0};
    prompt_of(&prompt, 10, 1);
    struct wk_generate_params gp = wk_generate_params_default();
    gp.sampler.temperature = 0;
    gp.draft_min = gp.draft_max = 5;
    struct wk_generate_stats sa, sb;
    for (int n = 1; n <= 9; n++) {
        struct wk_session *plain = session(&t, NULL, 64, 4), *spec = session(&t, &half, 64, 4);
        gp.num_predict = n;
        struct run a = {0}, b = {0};
        CHECK_EQ_INT(generate_plain(plain, &prompt, gp, &a, &sa), WK_OK);
        CHECK_EQ_INT(generate(spec, &prompt, gp, &b, &sb), WK_OK);
        CHECK(same_run(&a, &b));
        CHECK_EQ_INT(sb.eval_count, n);
        CHECK_EQ_STR(sb.done_reason, "length");
        wk_session_destroy(plain), wk_session_destroy(spec);
    }
    /* the context: 40 positions, a 10-token prompt, no num_predict */
    struct wk_session *plain = session(&t, NULL, 40, 4), *spec = session(&t, &half, 40, 4);
    gp.num_predict = -1;
    struct run a = {0}, b = {0};
    CHECK_EQ_INT(generate_plain(plain, &prompt, gp, &a, &sa), WK_OK);
    CHECK_EQ_INT(generate(spec, &prompt, gp, &b, &sb), WK_OK);
    CHECK(same_run(&a, &b));
    CHECK_EQ_STR(sb.done_reason, sa.done_reason);
    CHECK_EQ_INT(wk_context_n_past(wk_session_context(spec)), wk_context_n_past(wk_session_context(plain)));
    CHECK(wk_context_n_past(wk_session_context(spec)) <= 40);
    /* a stop string from the middle of the plain answer */
    gp.num_predict = 30;
    struct run full = {0};
    CHECK_EQ_INT(generate_plain(plain, &prompt, gp, &full, &sa), WK_OK);
    CHECK(full.n_text > 12);
    char stop[8];
    memcpy(stop, full.text + full.n_text / 2, 3), stop[3] = '\0';
    const char *stops[1] = {stop};
    gp.stop = stops, gp.n_stop = 1;
    struct run c = {0}, d = {0};
    CHECK_EQ_INT(generate_plain(plain, &prompt, gp, &c, &sa), WK_OK);
    CHECK_EQ_INT(generate(spec, &prompt, gp, &d, &sb), WK_OK);
    CHECK(same_run(&c, &d));
    CHECK_EQ_STR(sb.done_reason, "stop");
    CHECK(d.n_text < full.n_text && strstr(d.text, stop) == NULL);
    gp.stop = NULL, gp.n_stop = 0;
    /* cancellation after 4 pieces of text */
    struct run e = {.cancel_after = 4}, f = {.cancel_after = 4};
    CHECK_EQ_INT(generate_plain(plain, &prompt, gp, &e, &sa), WK_E_CANCELLED);
    CHECK_EQ_INT(generate(spec, &prompt, gp, &f, &sb), WK_E_CANCELLED);
    CHECK(same_run(&e, &f));
    CHECK_EQ_INT(f.pieces, 4);
    /* after a cancellation the session still answers as plain decoding does */
    struct run g = {0}, h = {0};
    CHECK_EQ_INT(generate_plain(plain, &prompt, gp, &g, &sa), WK_OK);
    CHECK_EQ_INT(generate(spec, &prompt, gp, &h, &sb), WK_OK);
    if (!same_run(&g, &h)) fprintf(stderr, "plain %d [%.*s]\nspec  %d [%.*s] pe %d %d\n", g.n_ids, (int)g.n_text, g.text, h.n_ids, (int)h.n_text, h.text, sa.prompt_eval_count, sb.prompt_eval_count);
    CHECK(same_run(&g, &h));
    wk_session_destroy(plain), wk_session_destroy(spec);
    wk_tokens_deinit(&prompt);
    unload(&t), unload(&half);
}

/* Under AddressSanitizer (-O1, every access checked: 61 s for the full
 * count) 2,000 runs go through the same paths and the statistical checks
 * are left to the release build's run. */
#if defined(__SANITIZE_ADDRESS__)
#define N_RUNS 2000
#define STAT_CHECKS 0
#else
#define N_RUNS 20000
#define STAT_CHECKS 1
#endif

/* The first 3 tokens of N_RUNS runs seeded 1..N_RUNS, as one key each. */
static void sample_runs(struct wk_session *s, const struct wk_tokens *prompt,
                        struct wk_generate_params gp, struct hist *h, struct wk_generate_stats *total)
{
    memset(h, 0, sizeof *h);
    memset(total, 0, sizeof *total);
    gp.num_predict = 3;
    for (int i = 0; i < N_RUNS; i++) {
        gp.sampler.seed = i + 1;
        struct run r = {0};
        struct wk_generate_stats st;
        CHECK_EQ_INT(generate(s, prompt, gp, &r, &st), WK_OK);
        int64_t key = 0;
        for (int j = 0; j < 3; j++) key = key * 1000 + (j < r.n_ids ? r.ids[j] + 1 : 0);
        hist_add(h, key);
        total->draft_count += st.draft_count, total->draft_accepted += st.draft_accepted;
        total->spec_rounds += st.spec_rounds;
    }
}

/* The chi-square machinery itself against known values: the 0.001 critical
 * values for 1, 4 and 30 degrees of freedom. */
static void test_chi_square_function(void)
{
    CHECK_NEAR(gamma_q(0.5, 10.828 / 2), 0.001, 2e-6, 0);
    CHECK_NEAR(gamma_q(2.0, 18.467 / 2), 0.001, 2e-6, 0);
    CHECK_NEAR(gamma_q(15.0, 59.703 / 2), 0.001, 2e-6, 0);
    CHECK_NEAR(gamma_q(15.0, 29.336 / 2), 0.5, 1e-4, 0);
}

static void test_sampling_distribution(void)
{
    struct model t = load(2, 1, 0), half = load(1, 1, 0), other = load(2, 99, 0);
    struct wk_tokens prompt = {0};
    prompt_of(&prompt, 8, 5);
    struct cfg {
        float temperature, top_p, presence, frequency;
        int32_t top_k;
        const struct model *draft;
    } cfgs[] = {{1.0f, 1.0f, 0, 0, 4, &half},
                {1.5f, 0.9f, 0.8f, 0.4f, 6, &other}};
    for (size_t ci = 0; ci < WK_ARRAY_LEN(cfgs); ci++) {
        const struct cfg *c = &cfgs[ci];
        struct wk_generate_params gp = wk_generate_params_default();
        gp.sampler.temperature = c->temperature, gp.sampler.top_k = c->top_k, gp.sampler.top_p = c->top_p;
        gp.sampler.presence_penalty = c->presence, gp.sampler.frequency_penalty = c->frequency;
        gp.draft_min = gp.draft_max = 2; /* every run speculates: drafts for tokens 2 and 3 */
        struct wk_session *plain = session(&t, NULL, 64, 512), *spec = session(&t, c->draft, 64, 512);
        struct hist *hp = malloc(sizeof *hp), *hs = malloc(sizeof *hs), *hd = malloc(sizeof *hd);
        struct wk_generate_stats tp, ts, td;
        sample_runs(plain, &prompt, gp, hp, &tp); /* lookup: greedy only */
        CHECK_EQ_INT(tp.spec_rounds, 0);
        sample_runs(spec, &prompt, gp, hs, &ts);
        int dof;
        double p = chi_square_p(hp, hs, &dof);
        fprintf(stderr, "  config %zu: %d outcomes, chi-square p = %.4f (%d dof); drafted %d, accepted %d\n",
                ci, hp->n, p, dof, ts.draft_count, ts.draft_accepted);
        CHECK(!STAT_CHECKS || dof >= 10);
        CHECK(!STAT_CHECKS || p > 0.001);
        CHECK(ts.draft_count > N_RUNS && ts.draft_accepted > 0 && ts.draft_accepted < ts.draft_count);
        /* power: the draft's own distribution is told apart */
        struct wk_session *dsess = session(c->draft, NULL, 64, 512);
        sample_runs(dsess, &prompt, gp, hd, &td);
        double pd = chi_square_p(hp, hd, &dof);
        fprintf(stderr, "  config %zu: the draft alone, p = %.3g\n", ci, pd);
        CHECK(!STAT_CHECKS || pd < 0.001);
        wk_session_destroy(dsess);
        wk_session_destroy(plain), wk_session_destroy(spec);
        free(hp), free(hs), free(hd);
    }
    wk_tokens_deinit(&prompt);
    unload(&t), unload(&half), unload(&other);
}

/* wk_lookup_draft on sequences worked out by hand. */
static void test_lookup_draft(void)
{
    int32_t out[8];
    /* seq 1 2 3 4 5 1 2 3 | 4: "1 2 3 4" (n = 4) occurred at 0, then 5 1 2 */
    const int32_t a[] = {1, 2, 3, 4, 5, 1, 2, 3};
    CHECK_EQ_INT(wk_lookup_draft(a, 8, 4, 3, out), 3);
    CHECK(out[0] == 5 && out[1] == 1 && out[2] == 2);
    /* past the sequence's end the pattern (period 5) repeats: 5 1 2 3 4 5 1 2 */
    CHECK_EQ_INT(wk_lookup_draft(a, 8, 4, 8, out), 8);
    CHECK(out[3] == 3 && out[4] == 4 && out[5] == 5 && out[6] == 1 && out[7] == 2);
    /* the most recent occurrence: seq 7 8 1 7 8 2 7 | 8, "7 8" at 3 (not 0),
     * then the period-3 pattern: 2 7 8 2 7 */
    const int32_t b[] = {7, 8, 1, 7, 8, 2, 7};
    CHECK_EQ_INT(wk_lookup_draft(b, 7, 8, 5, out), 5);
    CHECK(out[0] == 2 && out[1] == 7 && out[2] == 8 && out[3] == 2 && out[4] == 7);
    /* one token repeated: more of it */
    const int32_t r[] = {3, 9, 9, 9};
    CHECK_EQ_INT(wk_lookup_draft(r, 4, 9, 4, out), 4);
    CHECK(out[0] == 9 && out[3] == 9);
    /* the longest n first: "1 2 3" at 0 (then 9) beats a later "2 3" (then 8) */
    const int32_t c[] = {1, 2, 3, 9, 4, 2, 3, 8, 1, 2};
    CHECK_EQ_INT(wk_lookup_draft(c, 10, 3, 1, out), 1);
    CHECK_EQ_INT(out[0], 9);
    /* no earlier occurrence of two tokens (one token, 5, is too short) */
    const int32_t d[] = {5, 6, 5};
    CHECK_EQ_INT(wk_lookup_draft(d, 3, 7, 4, out), 0);
    CHECK_EQ_INT(wk_lookup_draft(d, 0, 7, 4, out), 0);
    CHECK_EQ_INT(wk_lookup_draft(a, 8, 4, 0, out), 0);
}

/* Prompt lookup (a session without a draft, greedy): the same tokens,
 * text, logprobs and stop reason as plain decoding, with penalties, a
 * rotating cache rolled back past n_ubatch, num_predict and a stop string;
 * it really drafts (tiny random models repeat themselves when greedy), and
 * it stays off when sampling. */
static void test_lookup(void)
{
    struct model t = load(2, 1, 0), tw = load(2, 1, 6);
    struct wk_tokens prompt = {0};
    int rounds = 0, accepted = 0, drafted = 0;
    for (int window = 0; window < 2; window++) {
        for (int variant = 0; variant < 4; variant++) {
            struct wk_generate_params gp = wk_generate_params_default();
            gp.sampler.temperature = 0, gp.top_logprobs = 2;
            gp.num_predict = variant & 2 ? 37 : 60;
            if (variant & 1) gp.sampler.repeat_penalty = 1.2f, gp.sampler.frequency_penalty = 0.1f;
            gp.draft_min = variant & 2 ? 6 : 0; /* every match drafted (6 > n_ubatch + 1 with the window) */
            struct wk_session *plain = session(window ? &tw : &t, NULL, 128, 4);
            struct wk_session *look = session(window ? &tw : &t, NULL, 128, 4);
            for (int salt = 0; salt < 3; salt++) {
                prompt_of(&prompt, 12 + salt, salt + 5 * variant);
                struct run a = {0}, b = {0};
                struct wk_generate_stats sa, sb;
                CHECK_EQ_INT(generate_plain(plain, &prompt, gp, &a, &sa), WK_OK);
                CHECK_EQ_INT(generate(look, &prompt, gp, &b, &sb), WK_OK);
                CHECK(same_run(&a, &b));
                CHECK_EQ_STR(sa.done_reason, sb.done_reason);
                CHECK_EQ_INT(sa.eval_count, sb.eval_count);
                rounds += sb.spec_rounds, accepted += sb.draft_accepted, drafted += sb.draft_count;
            }
            /* a stop string from the middle of the answer */
            struct run full = {0}, c = {0}, d = {0};
            struct wk_generate_stats sa, sb;
            CHECK_EQ_INT(generate_plain(plain, &prompt, gp, &full, &sa), WK_OK);
            char stop[8] = "";
            if (full.n_text > 8) memcpy(stop, full.text + full.n_text / 2, 3);
            const char *stops[1] = {stop};
            if (stop[0]) gp.stop = stops, gp.n_stop = 1;
            CHECK_EQ_INT(generate_plain(plain, &prompt, gp, &c, &sa), WK_OK);
            CHECK_EQ_INT(generate(look, &prompt, gp, &d, &sb), WK_OK);
            CHECK(same_run(&c, &d));
            CHECK_EQ_STR(sa.done_reason, sb.done_reason);
            wk_session_destroy(plain), wk_session_destroy(look);
        }
    }
    fprintf(stderr, "  lookup: %d rounds, %d of %d drafts accepted\n", rounds, accepted, drafted);
    CHECK(rounds > 20 && accepted > 0 && accepted < drafted);
    /* sampling: no lookup */
    struct wk_session *s = session(&t, NULL, 128, 4);
    struct wk_generate_params gp = wk_generate_params_default();
    gp.sampler.temperature = 0.7f, gp.sampler.seed = 5, gp.num_predict = 40, gp.draft_min = 4;
    struct run r = {0};
    struct wk_generate_stats st;
    prompt_of(&prompt, 12, 1);
    CHECK_EQ_INT(generate(s, &prompt, gp, &r, &st), WK_OK);
    CHECK_EQ_INT(st.spec_rounds, 0);
    CHECK_EQ_INT(st.eval_count, 40);
    wk_session_destroy(s);
    wk_tokens_deinit(&prompt);
    unload(&t), unload(&tw);
}

/* A cost table with each listed row count measured at ms[i] (twice:
 * the first sample of a count is dropped). */
static void rows_cost_set(struct wk_rows_cost *c, const int32_t *rows, const double *ms, int n)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < n; i++)
        for (int rep = 0; rep < 2; rep++) wk_rows_cost_add(c, rows[i], (int64_t)(ms[i] * 1e6));
}

/* Drafts shared by several sequences' step (wk_spec_share): the D that
 * maximises expected tokens over the measured (or estimated) cost of the
 * step's rows, the drafts given best chance first. */
static void test_share(void)
{
    struct wk_rows_cost c;
    double acc[3] = {0.9, 0.9, 0.9};
    int32_t k_max[3] = {8, 8, 8}, k[3] = {-1, -1, -1};
    memset(&c, 0, sizeof c);
    CHECK_EQ_INT(wk_spec_share(&c, 2, acc, k_max, 15, k), 0); /* no cost measured: no drafts */
    CHECK_EQ_INT(k[0], 0);
    wk_rows_cost_add(&c, 2, 10000000);
    CHECK(wk_rows_cost_est(&c, 2) == 0); /* a count's first step is dropped */
    /* estimates: measured counts as measured, others between measured
     * ones interpolated, above them the largest plus the mean extra per
     * row between measured ones (2 -> 5: 2 ms a row, 5 -> 6: 1), below them the smallest */
    rows_cost_set(&c, (const int32_t[]){2, 5, 6}, (const double[]){10, 16, 17}, 3);
    CHECK_NEAR(wk_rows_cost_est(&c, 5), 16e6, 1, 0);
    CHECK_NEAR(wk_rows_cost_est(&c, 3), 12e6, 1, 0);
    CHECK_NEAR(wk_rows_cost_est(&c, 8), 17e6 + 2 * 1.75e6, 1, 0); /* extra: 2, then 0.75 2 + 0.25 1 */
    CHECK_NEAR(wk_rows_cost_est(&c, 1), 10e6, 1, 0);
    /* tiles that read each weight once for 8 tokens: 1-8 rows 10 ms,
     * 9-16 rows 20 ms. Two sequences at 0.9: 6 drafts, three each (2 +
     * 2 (0.9 + 0.81 + 0.729) = 6.88 tokens in 10 ms; 16 rows would give
     * 2 + 2 (0.9 + ... + 0.9^7) = 11.4 in 20 ms) */
    rows_cost_set(&c, (const int32_t[]){1, 2, 8, 9, 16}, (const double[]){10, 10, 10, 20, 20}, 5);
    CHECK_EQ_INT(wk_spec_share(&c, 2, acc, k_max, 15, k), 6);
    CHECK_EQ_INT(k[0], 3);
    CHECK_EQ_INT(k[1], 3);
    /* the better chances first: 0.9 ... 0.9^5 = 0.59 of the first, then
     * the second's 0.55 before the first's 0.9^6 = 0.53 */
    acc[1] = 0.55;
    CHECK_EQ_INT(wk_spec_share(&c, 2, acc, k_max, 15, k), 6);
    CHECK_EQ_INT(k[0], 5);
    CHECK_EQ_INT(k[1], 1);
    /* what is on offer bounds it (0.9, 0.81, then the second's 0.55,
     * 0.30, 0.17, 0.09), and so does the budget */
    k_max[0] = 2;
    CHECK_EQ_INT(wk_spec_share(&c, 2, acc, k_max, 15, k), 6);
    CHECK_EQ_INT(k[0], 2);
    CHECK_EQ_INT(k[1], 4);
    CHECK_EQ_INT(wk_spec_share(&c, 2, acc, k_max, 1, k), 1);
    CHECK_EQ_INT(k[0], 1);
    CHECK_EQ_INT(k[1], 0);
    /* every row costs: 10 ms + 1 ms a row. At 0.1 a draft adds 0.1 token
     * for 1 ms, below the step's 2 tokens per 12 ms: none */
    rows_cost_set(&c, (const int32_t[]){2, 3, 4, 5}, (const double[]){12, 13, 14, 15}, 4);
    acc[0] = acc[1] = 0.1, k_max[0] = 8;
    CHECK_EQ_INT(wk_spec_share(&c, 2, acc, k_max, 15, k), 0);
    /* at 0.5, 0.5 + 0.5 + 0.25 + 0.25 tokens for 4 ms: 3.5 / 16 beats 2 / 12 and
     * 3 / 14, and a fifth (0.125) does not pay: (3.5 + 0.125) / 17 < 3.5 / 16 */
    acc[0] = acc[1] = 0.5;
    CHECK_EQ_INT(wk_spec_share(&c, 2, acc, k_max, 15, k), 4);
    CHECK_EQ_INT(k[0], 2);
    CHECK_EQ_INT(k[1], 2);
    /* a third sequence with nothing on offer takes none, and its row
     * makes the step dearer to leave: 3 rows 13 ms, 4 / 13 + 1 (0.5 + 0.5)
     * = 4 / 15 beats 3.5 / 14 and 4.25 / 16 */
    k_max[2] = 0;
    CHECK_EQ_INT(wk_spec_share(&c, 3, acc, k_max, 15, k), 2);
    CHECK_EQ_INT(k[0], 1);
    CHECK_EQ_INT(k[1], 1);
    CHECK_EQ_INT(k[2], 0);
}

/* The controller: k from the acceptance rate and costs. */
static void test_controller(void)
{
    struct wk_spec_ctl c;
    wk_spec_ctl_init(&c);
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 0); /* no plain step measured yet */
    wk_spec_ctl_plain(&c, 10000000);       /* 10 ms a step */
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 3); /* the first round probes */
    wk_spec_ctl_update(&c, 3, 3, 3 * 50000000, 90000000); /* first touches: its times are dropped */
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 3);                 /* so the second probes too */
    /* cheap drafts that are always accepted, verification at about a plain
     * step whatever its length: k grows to the cap */
    for (int k = 1; k <= 8; k++)
        for (int i = 0; i < 10; i++) wk_spec_ctl_update(&c, k, k, k * 1000000, 11000000);
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 8);
    /* verifying more than 4 tokens measured at three steps: k stops at 3
     * (at acceptance ~1: 4 tokens for 3 + 11 ms beat 9 for 8 + 33 ms) */
    for (int k = 4; k <= 8; k++)
        for (int i = 0; i < 20; i++) wk_spec_ctl_update(&c, k, k, k * 1000000, 33000000);
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 3);
    /* a cheap draft (a tenth of a step a token) that is mostly rejected:
     * speculation pauses for WK_SPEC_PAUSE plain steps */
    for (int i = 0; i < 40; i++) wk_spec_ctl_update(&c, 2, 0, 2 * 1000000, 12000000);
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 0);
    for (int i = 0; i < WK_SPEC_PAUSE - 1; i++) {
        wk_spec_ctl_plain(&c, 10000000);
        CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 0);
    }
    wk_spec_ctl_plain(&c, 10000000);
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 3); /* a probe after the pause */
    /* probes that do not pay: each pause lasts twice the one before, and
     * after WK_SPEC_PROBES of them speculation is off for the rest of the
     * request */
    int32_t len = WK_SPEC_PAUSE;
    for (int probe = 1; probe < WK_SPEC_PROBES; probe++) {
        wk_spec_ctl_update(&c, 3, 0, 3 * 1000000, 12000000);
        len *= 2;
        int steps = 0;
        do {
            CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 0);
            wk_spec_ctl_plain(&c, 10000000);
            steps++;
        } while (wk_spec_ctl_k(&c, 8) == 0 && steps < 10000);
        CHECK_EQ_INT(steps, len); /* then a probe */
    }
    wk_spec_ctl_update(&c, 3, 0, 3 * 1000000, 12000000);
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 0);
    for (int i = 0; i < 8 * len; i++) {
        wk_spec_ctl_plain(&c, 10000000);
        CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 0);
    }
    /* a new request: the doubled pause has run out, so it probes */
    wk_spec_ctl_begin(&c);
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 3);
    /* a new request in the middle of a doubled pause waits for its end */
    wk_spec_ctl_update(&c, 3, 0, 3 * 1000000, 12000000);
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 0);
    wk_spec_ctl_begin(&c);
    int steps = 0;
    do {
        wk_spec_ctl_plain(&c, 10000000);
        steps++;
    } while (wk_spec_ctl_k(&c, 8) == 0 && steps < 10000);
    CHECK_EQ_INT(steps, 4 * len); /* the pause after the last probe (2 len), doubled */
    /* a request whose first two rounds are rejected pauses only a quarter
     * as long before probing again (its first tokens are the hardest); a
     * draft at half a step a token, which would pay if accepted */
    wk_spec_ctl_init(&c);
    wk_spec_ctl_begin(&c);
    wk_spec_ctl_plain(&c, 10000000);
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 3);
    wk_spec_ctl_update(&c, 3, 0, 3 * 5000000, 12000000); /* first touches */
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 3);
    wk_spec_ctl_update(&c, 3, 0, 3 * 5000000, 12000000);
    steps = 0;
    while (wk_spec_ctl_k(&c, 8) == 0 && steps < 10000) {
        wk_spec_ctl_plain(&c, 10000000);
        steps++;
    }
    CHECK_EQ_INT(steps, WK_SPEC_PAUSE / 4);
    /* a draft that costs what the target does (10 ms a token, verification
     * 12 ms): even rounds accepted whole would not beat plain decoding by
     * WK_SPEC_WORTH, so the first rejected rounds switch it off for the
     * request, no more probes */
    wk_spec_ctl_init(&c);
    wk_spec_ctl_begin(&c);
    wk_spec_ctl_plain(&c, 10000000);
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 3);
    wk_spec_ctl_update(&c, 3, 0, 3 * 10000000, 12000000);
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 3);
    wk_spec_ctl_update(&c, 3, 0, 3 * 10000000, 12000000);
    for (int i = 0; i < 64 * WK_SPEC_PAUSE; i++) {
        CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), 0);
        wk_spec_ctl_plain(&c, 10000000);
    }
    /* at acceptance 0.8 with drafts at a tenth of a step and free extra
     * verification, the best k maximises (1 - 0.8^(k+1)) / (0.2 (0.1 k + 1)):
     * k = 5 of 1..8, computed here from the formula */
    wk_spec_ctl_init(&c);
    wk_spec_ctl_plain(&c, 10000000);
    c.acc = 80, c.trials = 100, c.t_draft = 1000000, c.t_extra = 0; /* t_v(n) = t_1 for every n */
    int best = 0;
    double best_rate = 0;
    for (int k = 1; k <= 8; k++) {
        double rate = (1 - pow(0.8, k + 1)) / 0.2 / (0.1 * k + 1);
        if (rate > best_rate) best = k, best_rate = rate;
    }
    CHECK_EQ_INT(wk_spec_ctl_k(&c, 8), best);
}

static void test_bad_draft(void)
{
    struct tiny_spec sp = tiny_spec_default();
    sp.n_vocab = 280;
    char path[64];
    tiny_model_write(&sp, path, sizeof path);
    struct wk_model *small;
    struct wk_error err;
    CHECK_EQ_INT(wk_model_load(path, &small, &err), WK_OK);
    unlink(path);
    struct model t = load(2, 1, 0);
    struct wk_session *s = session(&t, NULL, 64, 512);
    CHECK_EQ_INT(wk_session_set_draft(s, small, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "has 280 tokens but the target");
    struct wk_generate_params gp = wk_generate_params_default();
    gp.draft_max = -1;
    struct wk_tokens prompt = {0};
    prompt_of(&prompt, 5, 0);
    struct wk_generate_stats st;
    CHECK_EQ_INT(wk_session_generate(s, &prompt, &gp, &st, &err), WK_E_INVALID);
    wk_tokens_deinit(&prompt);
    wk_session_destroy(s);
    wk_model_destroy(small);
    unload(&t);
}

CHECK_MAIN(TEST(test_greedy_equal), TEST(test_limits), TEST(test_lookup_draft), TEST(test_lookup),
           TEST(test_chi_square_function),
           TEST(test_sampling_distribution), TEST(test_controller), TEST(test_share), TEST(test_bad_draft))
