/*
 * test-slots.c - several generations stepped together on one context
 * (wk_slots.h), on the real SmolLM2-135M GGUF ($WICK_CACHE/models or
 * ~/.cache/wick/models; skipped when absent, scripts/fetch-models puts it
 * there; WICK_TEST_SLOTS_MODEL=path runs them on another GGUF):
 * - 16 requests of different lengths on 8 slots, added at different steps
 *   (some while others decode, queued while the slots are full), greedy
 *   and seeded sampling (temperature 0.8, top_k, top_p, a seed each), some
 *   with stop strings, num_predict or logprobs: each gets exactly the
 *   tokens, text, logprobs and done reason it gets alone through
 *   wk_session_generate with the same parameters;
 * - cancelling a slot (wk_slots_cancel, or its cancel flag) frees it
 *   within the step and leaves the others' outputs as they are alone;
 * - a long prompt arriving while three slots decode is prefilled one
 *   n_ubatch chunk per step, and each of the three gets a token every step
 *   meanwhile (the step trace and the tokens' arrival);
 * - with n_ubatch 256, a prompt arriving while others decode is prefilled
 *   128 rows a step, cut so that it equals its run alone;
 * - a request whose prompt continues an earlier one's (prompt and answer)
 *   goes to that slot and prefills only what is new, and an unrelated one
 *   takes an empty slot rather than that cache; the continuation equals
 *   the same two requests in turn on one session;
 * - the same seeded request twice (session and slot): the second, its
 *   prompt cached, gets the tokens and logprobs of the first;
 * - two prompts sharing a system prompt, in turn A, B, A on two slots:
 *   B takes the other slot with the shared prefix copied, and A's second
 *   run finds its whole prompt cached (Ollama's slot choice);
 * - a request sharing a system prompt with a busy slot starts in an
 *   empty slot with that prefix's KV copied, prefills only the rest, and
 *   equals the two requests in turn on one session;
 * - requests refused by name (empty, too long), and a full set of slots
 *   answers -1.
 */
#include "check.h"

#include "../../src/runtime/wk_slots.h"

#define N_UBATCH 16
#define N_CTX 512
#define N_THREADS 2
#define MAX_TOK 64

static struct wk_model *g_m;
static int32_t g_ubatch = N_UBATCH; /* the contexts' n_ubatch */
static struct wk_tokenizer *g_tok;

/* What one request produced. */
struct out {
    int32_t ids[MAX_TOK];
    int32_t n;
    struct wk_token_logprobs lp[MAX_TOK];
    int32_t n_lp;
    int32_t steps_with_token; /* set by the long-prompt test */
    char *text;
    size_t text_len;
    struct wk_generate_stats stats;
    struct wk_error err;
    enum wk_status st;
    bool finished;
};

static void on_token(void *user, int32_t id)
{
    struct out *o = user;
    if (o->n < MAX_TOK) o->ids[o->n] = id;
    o->n++;
}

static void on_logprobs(void *user, const struct wk_token_logprobs *lp)
{
    struct out *o = user;
    if (o->n_lp < MAX_TOK) o->lp[o->n_lp] = *lp;
    o->n_lp++;
}

/* A request: its prompt and parameters (pointing into o). */
struct req {
    const char *text;
    struct wk_tokens prompt;
    struct wk_generate_params p;
    const char *stop[1];
    volatile bool cancel;
    struct out alone, batched;
    int32_t slot;
};

static void req_init(struct req *r, const char *text, int i)
{
    memset(r, 0, sizeof *r);
    r->text = text;
    struct wk_prompt pr = {0};
    CHECK_EQ_INT(wk_prompt_raw(g_tok, text, strlen(text), false, &pr), WK_OK);
    CHECK_EQ_INT(wk_prompt_tokenize(g_tok, &pr, &r->prompt), WK_OK);
    wk_prompt_deinit(&pr);
    r->p = wk_generate_params_default();
    r->p.num_predict = 6 + (i * 5) % 17;
    if (i % 2) {
        r->p.sampler.temperature = 0.8f;
        r->p.sampler.top_k = 40;
        r->p.sampler.top_p = 0.9f;
        r->p.sampler.seed = 1000 + i;
    } else {
        r->p.sampler.temperature = 0;
    }
    if (i % 3 == 0) r->p.top_logprobs = 3;
    r->p.on_token = on_token;
    r->p.cancel = &r->cancel;
    r->slot = -1;
}

/* Points the callbacks at o. */
static void req_bind(struct req *r, struct out *o)
{
    r->p.user = o;
    r->p.collect = &o->text;
    r->p.collect_len = &o->text_len;
    r->p.on_logprobs = r->p.top_logprobs ? on_logprobs : NULL;
}

static struct wk_session *session_new(void)
{
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = N_CTX, cp.n_threads = N_THREADS, cp.n_ubatch = g_ubatch;
    struct wk_session *s = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_session_create(g_m, g_tok, &cp, &s, &err), WK_OK);
    return s;
}

/* r through wk_session_generate on s, into r->alone. */
static void run_in(struct wk_session *s, struct req *r)
{
    req_bind(r, &r->alone);
    r->alone.st = wk_session_generate(s, &r->prompt, &r->p, &r->alone.stats, &r->alone.err);
}

/* r alone on a fresh session. */
static void run_alone(struct req *r)
{
    struct wk_session *s = session_new();
    if (s) run_in(s, r);
    wk_session_destroy(s);
}

static void out_free(struct out *o) { wk_free(o->text); }

static void req_deinit(struct req *r)
{
    wk_tokens_deinit(&r->prompt);
    out_free(&r->alone);
    out_free(&r->batched);
}

/* Checks that out b equals out a (r: the request, i: its number, for the message). */
static void check_outs(const struct req *r, int i, const struct out *a, const struct out *b)
{
    if (a->n != b->n || a->st != b->st || memcmp(a->ids, b->ids, sizeof(int32_t) * (size_t)WK_MIN(a->n, MAX_TOK)))
        fprintf(stderr, "request %d (%s): alone %d tokens (status %d), batched %d (status %d)\n", i, r->text,
                a->n, a->st, b->n, b->st);
    CHECK_EQ_INT(b->st, a->st);
    CHECK_EQ_INT(b->n, a->n);
    CHECK(memcmp(a->ids, b->ids, sizeof(int32_t) * (size_t)WK_MIN(a->n, MAX_TOK)) == 0);
    CHECK_EQ_INT(b->text_len, a->text_len);
    if (a->text && b->text) CHECK_EQ_STR(b->text, a->text);
    CHECK_EQ_STR(b->stats.done_reason, a->stats.done_reason);
    CHECK_EQ_INT(b->stats.eval_count, a->stats.eval_count);
    CHECK_EQ_INT(b->stats.prompt_tokens, a->stats.prompt_tokens);
    CHECK_EQ_INT(b->n_lp, a->n_lp);
    for (int32_t k = 0; k < WK_MIN(a->n_lp, MAX_TOK) && k < b->n_lp; k++) {
        CHECK_EQ_INT(b->lp[k].id, a->lp[k].id);
        if (b->lp[k].logprob != a->lp[k].logprob)
            fprintf(stderr, "request %d: logprob %d: %.9g against %.9g\n", i, k, b->lp[k].logprob, a->lp[k].logprob);
        CHECK(b->lp[k].logprob == a->lp[k].logprob);
        CHECK_EQ_INT(b->lp[k].n_top, a->lp[k].n_top);
        for (int32_t j = 0; j < a->lp[k].n_top && j < b->lp[k].n_top; j++) {
            CHECK_EQ_INT(b->lp[k].top_ids[j], a->lp[k].top_ids[j]);
            CHECK(b->lp[k].top_logprobs[j] == a->lp[k].top_logprobs[j]);
        }
    }
}

/* Checks that r's batched run equals its run alone. */
static void check_same(const struct req *r, int i)
{
    CHECK(r->batched.finished);
    check_outs(r, i, &r->alone, &r->batched);
}

static struct wk_slots *slots_new(int32_t n)
{
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = N_CTX, cp.n_threads = N_THREADS, cp.n_ubatch = g_ubatch, cp.n_seq_max = n;
    struct wk_slots *s = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_slots_create(g_m, g_tok, &cp, &s, &err), WK_OK);
    return s;
}

/* Adds r to s; true when it got a slot. */
static bool add(struct wk_slots *s, struct req *r)
{
    req_bind(r, &r->batched);
    struct wk_slot_request q = {.prompt = &r->prompt, .gen = &r->p, .stats = &r->batched.stats,
                                .err = &r->batched.err};
    struct wk_error err;
    CHECK_EQ_INT(wk_slots_add(s, &q, &r->slot, &err), WK_OK);
    return r->slot >= 0;
}

/* Records the requests that ended in step st. */
static void collect_done(const struct wk_slots_step *st, struct req *reqs, int n)
{
    for (int32_t d = 0; d < st->n_done; d++)
        for (int i = 0; i < n; i++)
            if (reqs[i].slot == st->done[d].slot && !reqs[i].batched.finished) {
                reqs[i].batched.finished = true;
                reqs[i].batched.st = st->done[d].status;
                reqs[i].slot = -1;
                break;
            }
}

static const char *g_texts[] = {
    "The capital of France is",
    "Write a haiku about the sea.",
    "1, 2, 3, 4,",
    "Once upon a time, in a small village at the edge of a great forest, there lived an old woodcutter who",
    "def fibonacci(n):",
    "Q: What is the boiling point of water?\nA:",
    "Hello",
    "List three colours:",
    "In 1492, Columbus sailed across the Atlantic Ocean and reached the islands of the Caribbean. The voyage",
    "The quick brown fox",
    "Translate to French: good morning",
    "Why is the sky blue? Explain in one sentence.",
    "import numpy as np\nx = np.arange(10)\nprint(",
    "Dear Sir or Madam, I am writing to",
    "A recipe for pancakes: first,",
    "Photosynthesis is the process by which plants convert light energy, usually from the Sun, into chemical energy that",
};
/* Under AddressSanitizer (-O1, every access checked) a smaller crowd: 6 requests on 3 slots
 * (and no long prompt: test_all). */
#if defined(__SANITIZE_ADDRESS__)
#define N_REQ 6
#define N_SLOTS 3
#else
#define N_REQ ((int)(sizeof g_texts / sizeof g_texts[0]))
#define N_SLOTS 8
#endif

static void test_concurrent_equals_alone(void)
{
    static struct req reqs[N_REQ];
    for (int i = 0; i < N_REQ; i++) {
        req_init(&reqs[i], g_texts[i], i);
        if (i == 5 || i == 10) { /* a stop string from the middle of its own answer */
            run_alone(&reqs[i]);
            const struct out *a = &reqs[i].alone;
            static char stops[2][8];
            char *st = stops[i == 10];
            if (a->text_len > 8) {
                memcpy(st, a->text + a->text_len / 2, 3);
                st[3] = '\0';
                reqs[i].stop[0] = st;
                reqs[i].p.stop = reqs[i].stop;
                reqs[i].p.n_stop = 1;
            }
            out_free(&reqs[i].alone);
            memset(&reqs[i].alone, 0, sizeof reqs[i].alone);
        }
        run_alone(&reqs[i]);
        CHECK_EQ_INT(reqs[i].alone.st, WK_OK);
    }
    CHECK(reqs[5].p.n_stop == 1 && strcmp(reqs[5].alone.stats.done_reason, "stop") == 0);
    struct wk_slots *s = slots_new(N_SLOTS);
    if (!s) return;
    int next = 0, steps = 0, max_decode = 0;
    while (steps < 2000) {
        /* request j arrives at step 2 j and waits while every slot is busy */
        while (next < N_REQ && steps >= 2 * next && add(s, &reqs[next])) next++;
        if (next == N_REQ && wk_slots_n_active(s) == 0) break;
        struct wk_slots_step st;
        CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
        max_decode = WK_MAX(max_decode, st.n_decode);
        collect_done(&st, reqs, N_REQ);
        steps++;
    }
    printf("  %d requests on %d slots: %d steps, at most %d decode rows in a step\n", N_REQ, N_SLOTS, steps,
           max_decode);
    CHECK(max_decode >= N_SLOTS - 2);
    for (int i = 0; i < N_REQ; i++) {
        check_same(&reqs[i], i);
        req_deinit(&reqs[i]);
    }
    wk_slots_destroy(s);
}

static void test_cancel(void)
{
    static struct req reqs[4];
    for (int i = 0; i < 4; i++) {
        req_init(&reqs[i], g_texts[i + 4], i);
        reqs[i].p.num_predict = 16;
        run_alone(&reqs[i]);
    }
    struct wk_slots *s = slots_new(4);
    if (!s) return;
    for (int i = 0; i < 4; i++) CHECK(add(s, &reqs[i]));
    struct wk_slot_request q = {.prompt = &reqs[0].prompt, .gen = &reqs[0].p, .stats = &reqs[0].batched.stats};
    int32_t busy;
    struct wk_error err;
    CHECK_EQ_INT(wk_slots_add(s, &q, &busy, &err), WK_OK);
    CHECK_EQ_INT(busy, -1); /* all four taken */
    struct wk_slots_step st;
    for (int k = 0; k < 8; k++) {
        CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
        collect_done(&st, reqs, 4);
    }
    /* a client leaves: its slot is free at once, nothing more reaches it */
    int32_t n_tok = reqs[1].batched.n, slot1 = reqs[1].slot;
    CHECK(slot1 >= 0);
    wk_slots_cancel(s, slot1);
    CHECK_EQ_INT(wk_slots_n_active(s), 3);
    CHECK_EQ_INT(reqs[1].batched.err.status, WK_E_CANCELLED);
    CHECK(reqs[1].batched.text == NULL);
    reqs[1].slot = -1;
    /* another through its cancel flag: ends in the next step */
    reqs[2].cancel = true;
    CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
    int32_t slot2 = reqs[2].slot;
    collect_done(&st, reqs, 4);
    CHECK(reqs[2].batched.finished);
    CHECK_EQ_INT(reqs[2].batched.st, WK_E_CANCELLED);
    CHECK_EQ_INT(st.done[0].slot, slot2);
    while (wk_slots_n_active(s) > 0) {
        CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
        collect_done(&st, reqs, 4);
    }
    CHECK_EQ_INT(reqs[1].batched.n, n_tok);
    check_same(&reqs[0], 0);
    check_same(&reqs[3], 3);
    for (int i = 0; i < 4; i++) req_deinit(&reqs[i]);
    wk_slots_destroy(s);
}

static void test_long_prompt_chunked(void)
{
    static struct req reqs[4];
    for (int i = 0; i < 3; i++) {
        req_init(&reqs[i], g_texts[i * 2 + 1], 0);
        reqs[i].p.num_predict = 28;
        run_alone(&reqs[i]);
    }
    char long_text[4096] = "";
    for (int k = 0; k < 6; k++) strcat(long_text, g_texts[15]), strcat(long_text, " ");
    req_init(&reqs[3], long_text, 1);
    reqs[3].p.num_predict = 5;
    run_alone(&reqs[3]);
    const int32_t n_long = (int32_t)reqs[3].prompt.n;
    CHECK(n_long > 4 * N_UBATCH);
    struct wk_slots *s = slots_new(4);
    if (!s) return;
    struct wk_slots_step st;
    for (int i = 0; i < 3; i++) CHECK(add(s, &reqs[i]));
    /* until all three decode */
    for (int k = 0; k < 8; k++) CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
    CHECK_EQ_INT(st.n_decode, 3);
    CHECK(add(s, &reqs[3]));
    int32_t chunks = 0, prefilled = 0, n_decoding = 0;
    while (!reqs[3].batched.finished && chunks < 100) {
        int32_t before[3], n_live = 0;
        for (int i = 0; i < 3; i++) before[i] = reqs[i].batched.n, n_live += !reqs[i].batched.finished;
        CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
        collect_done(&st, reqs, 4);
        if (st.prefill_slot == reqs[3].slot || (reqs[3].batched.finished && st.n_prefill)) {
            chunks++;
            prefilled += st.n_prefill;
            CHECK(st.n_prefill <= N_UBATCH);
            /* the others got their token this very step (one that ends
             * with an end-of-generation token has none to count) */
            CHECK_EQ_INT(st.n_decode, n_live);
            for (int i = 0; i < 3; i++) /* more than one where prompt lookup's drafts were kept */
                if (!reqs[i].batched.finished) CHECK(reqs[i].batched.n >= before[i] + 1);
            n_decoding += n_live;
        } else if (st.prefill_slot < 0 && prefilled < n_long) {
            CHECK(!"a step without the long prompt's chunk while it waits");
        }
        if (prefilled == n_long) break;
    }
    printf("  a %d-token prompt in %d chunks of <= %d while 3 slots decode: %d of their tokens meanwhile, one "
           "per live slot and step\n", n_long, chunks, N_UBATCH, n_decoding);
    CHECK(n_decoding >= 2 * chunks);
    CHECK_EQ_INT(prefilled, n_long);
    CHECK_EQ_INT(chunks, (n_long + N_UBATCH - 1) / N_UBATCH);
    while (wk_slots_n_active(s) > 0) {
        CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
        collect_done(&st, reqs, 4);
    }
    for (int i = 0; i < 4; i++) {
        check_same(&reqs[i], i);
        req_deinit(&reqs[i]);
    }
    wk_slots_destroy(s);
}

/*
 * With n_ubatch 256, a prompt arriving while three slots decode is
 * prefilled 128 rows a step (chunk_busy), cut so each row computes as in
 * a lone prefill cut every 256: 385 tokens in 128 + 128 + 129 (not a lone
 * last row, which that prefill has not), 257 in 128 + 128 + 1 (as that
 * prefill ends); each request equals its run alone.
 */
static void test_busy_chunks(void)
{
    static const int32_t lens[] = {385, 257}, want[2][3] = {{128, 128, 129}, {128, 128, 1}};
    g_ubatch = 256;
    char long_text[4096] = "";
    for (int k = 0; k < 20; k++) strcat(long_text, g_texts[15]), strcat(long_text, " ");
    for (int c = 0; c < 2; c++) {
        static struct req reqs[4];
        for (int i = 0; i < 3; i++) {
            req_init(&reqs[i], g_texts[i * 2 + 2], i);
            reqs[i].p.num_predict = 30;
            run_alone(&reqs[i]);
        }
        req_init(&reqs[3], long_text, 1);
        CHECK(reqs[3].prompt.n >= lens[c]);
        reqs[3].prompt.n = lens[c];
        reqs[3].p.num_predict = 4;
        run_alone(&reqs[3]);
        struct wk_slots *s = slots_new(4);
        if (!s) break;
        struct wk_slots_step st;
        for (int i = 0; i < 3; i++) CHECK(add(s, &reqs[i]));
        for (int k = 0; k < 4; k++) CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
        CHECK_EQ_INT(st.n_decode, 3);
        CHECK(add(s, &reqs[3]));
        int32_t got[8], n_got = 0;
        while (wk_slots_n_active(s) > 0) {
            CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
            collect_done(&st, reqs, 4);
            if (st.prefill_slot >= 0 && n_got < 8) got[n_got++] = st.n_prefill;
        }
        printf("  a %d-token prompt while 3 slots decode (n_ubatch 256): chunks %d %d %d\n", lens[c], got[0],
               n_got > 1 ? got[1] : 0, n_got > 2 ? got[2] : 0);
        CHECK_EQ_INT(n_got, 3);
        for (int k = 0; k < 3 && k < n_got; k++) CHECK_EQ_INT(got[k], want[c][k]);
        for (int i = 0; i < 4; i++) {
            check_same(&reqs[i], i);
            req_deinit(&reqs[i]);
        }
        wk_slots_destroy(s);
    }
    g_ubatch = N_UBATCH;
}

static void test_refused(void)
{
    struct wk_slots *s = slots_new(2);
    if (!s) return;
    struct wk_tokens empty = {0}, big = {0};
    for (int i = 0; i < N_CTX; i++) wk_tokens_push(&big, 1);
    struct wk_generate_params p = wk_generate_params_default();
    struct wk_generate_stats stats;
    struct wk_slot_request q = {.prompt = &empty, .gen = &p, .stats = &stats};
    int32_t slot;
    struct wk_error err;
    CHECK_EQ_INT(wk_slots_add(s, &q, &slot, &err), WK_E_INVALID);
    q.prompt = &big;
    CHECK_EQ_INT(wk_slots_add(s, &q, &slot, &err), WK_E_RANGE);
    CHECK_CONTAINS(err.msg, "does not fit");
    CHECK_EQ_INT(wk_slots_n_active(s), 0);
    wk_tokens_deinit(&big);
    wk_slots_destroy(s);
}

/* Steps s until no slot is active. */
static void drain(struct wk_slots *s, struct req *reqs, int n)
{
    struct wk_slots_step st;
    for (int k = 0; k < 1000 && wk_slots_n_active(s) > 0; k++) {
        CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
        collect_done(&st, reqs, n);
    }
}

static void test_prefix_reuse(void)
{
    static struct req reqs[3]; /* A, an unrelated C, then B = A's prompt, A's answer, more */
    req_init(&reqs[0], g_texts[3], 0);
    req_init(&reqs[1], g_texts[6], 2);
    req_init(&reqs[2], g_texts[9], 1);
    reqs[0].p.num_predict = 10;
    struct wk_session *ss = session_new();
    if (!ss) return;
    run_in(ss, &reqs[0]);
    struct wk_tokens b = {0};
    for (int64_t i = 0; i < reqs[0].prompt.n; i++) wk_tokens_push(&b, reqs[0].prompt.ids[i]);
    for (int32_t i = 0; i < reqs[0].alone.n && i < MAX_TOK; i++) wk_tokens_push(&b, reqs[0].alone.ids[i]);
    for (int64_t i = 0; i < reqs[2].prompt.n; i++) wk_tokens_push(&b, reqs[2].prompt.ids[i]);
    wk_tokens_deinit(&reqs[2].prompt);
    reqs[2].prompt = b;
    run_in(ss, &reqs[2]); /* B after A on one session: its prefix is reused */
    wk_session_destroy(ss);
    run_alone(&reqs[1]);
    CHECK(reqs[2].alone.stats.prompt_eval_count < reqs[2].alone.stats.prompt_tokens);

    struct wk_slots *s = slots_new(2);
    if (!s) return;
    CHECK(add(s, &reqs[0]));
    int32_t slot_a = reqs[0].slot;
    drain(s, reqs, 3);
    CHECK(add(s, &reqs[1])); /* the empty slot, not A's cache */
    CHECK(reqs[1].slot != slot_a);
    struct wk_slots_step st;
    CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
    collect_done(&st, reqs, 3);
    CHECK(add(s, &reqs[2])); /* A's slot: the longest common prefix */
    CHECK_EQ_INT(reqs[2].slot, slot_a);
    drain(s, reqs, 3);
    printf("  prefix reuse: B prefilled %d of its %d tokens\n", reqs[2].batched.stats.prompt_eval_count,
           reqs[2].batched.stats.prompt_tokens);
    CHECK_EQ_INT(reqs[2].batched.stats.prompt_eval_count, reqs[2].alone.stats.prompt_eval_count);
    for (int i = 0; i < 3; i++) {
        check_same(&reqs[i], i);
        req_deinit(&reqs[i]);
    }
    wk_slots_destroy(s);
}

/*
 * Two prompts sharing a long prefix (a system prompt, then different
 * questions) in turn on 2 slots, A, B, A: B takes the other slot with the
 * shared prefix copied, rather than A's slot cut back to it (Ollama's
 * slot choice), so A's second run prefills only what a repeat on one
 * session does; under a longest-prefix choice B would cut A's cache and A
 * would prefill all its question again. Each equals its run alone.
 */
static void test_alternating(void)
{
    static const char *const sys = "You are a careful assistant. Answer every question in one short sentence, "
                                   "and say so when you do not know. ";
    static const char *const qs[2] = {
        "Which river flows through the city of Paris, and into which sea does it finally empty its water?",
        "How many legs does a spider have, and how do they differ from the legs of an insect such as an ant?"};
    char text[2][400];
    for (int i = 0; i < 2; i++) snprintf(text[i], sizeof text[i], "%s%s", sys, qs[i]);
    static struct req r[3]; /* A, B, A */
    for (int i = 0; i < 3; i++) req_init(&r[i], text[i == 1], 0);
    struct wk_session *ss = session_new(); /* the reference: A, then A again on one session; B alone */
    if (!ss) return;
    run_in(ss, &r[0]);
    run_in(ss, &r[2]);
    wk_session_destroy(ss);
    run_alone(&r[1]);
    int32_t common = 0;
    while (common < r[0].prompt.n && r[0].prompt.ids[common] == r[1].prompt.ids[common]) common++;
    const int32_t repeat = r[2].alone.stats.prompt_eval_count;
    CHECK(common >= 20 && repeat < (int32_t)r[0].prompt.n - common);
    struct wk_slots *s = slots_new(2);
    if (!s) return;
    int32_t slot[3];
    for (int i = 0; i < 3; i++) {
        CHECK(add(s, &r[i]));
        slot[i] = r[i].slot;
        drain(s, r, 3);
    }
    printf("  alternating: B prefilled %d of %lld (%d shared), A again %d of %lld\n",
           r[1].batched.stats.prompt_eval_count, (long long)r[1].prompt.n, common,
           r[2].batched.stats.prompt_eval_count, (long long)r[2].prompt.n);
    CHECK(slot[1] != slot[0] && slot[2] == slot[0]);
    CHECK(r[1].batched.stats.prompt_eval_count <= (int32_t)r[1].prompt.n - common + N_UBATCH);
    CHECK_EQ_INT(r[2].batched.stats.prompt_eval_count, repeat);
    for (int i = 0; i < 3; i++) {
        check_same(&r[i], i);
        req_deinit(&r[i]);
    }
    wk_slots_destroy(s);
}

/*
 * The same seeded request twice, on one session and on one slot: the
 * second finds its prompt cached and prefills only the end, yet gets the
 * tokens and logprobs of a run on an empty cache (wk_context_reusable),
 * for prompts whose last chunk from 0 is one row (17 tokens with n_ubatch
 * 16), several rows (20) or the whole prompt (2), and with n_ubatch 64 a
 * prompt whose attention blocks (of ATTN_QBLOCK positions) the resumed prefill
 * must cut as a prefill from 0 does (45).
 */
static void test_repeat(void)
{
    static const int64_t lens[] = {17, 20, 2, 45};
    for (int k = 0; k < 4; k++) {
#if defined(__SANITIZE_ADDRESS__)
        if (k == 1 || k == 2) continue; /* 5 s each there; 17 and 45 (two ubatches) take the same paths */
#endif
        g_ubatch = k == 3 ? 64 : N_UBATCH;
        static struct req r[2]; /* r[0]: alone on an empty cache, then on a slot; r[1]: both again */
        for (int j = 0; j < 2; j++) {
            req_init(&r[j],
                     "Once upon a time, in a small village at the edge of a great forest, there lived an old "
                     "woodcutter who knew every tree by name. Each morning he walked into the woods with his axe "
                     "and his dog, and each evening he came back with",
                     1);
            r[j].p.num_predict = 12;
            r[j].p.top_logprobs = 3;
            r[j].p.sampler.temperature = 1.5f, r[j].p.sampler.top_k = 0, r[j].p.sampler.top_p = 1;
            CHECK(r[j].prompt.n >= lens[k]);
            r[j].prompt.n = lens[k];
        }
        struct wk_session *ss = session_new();
        if (!ss) return;
        run_in(ss, &r[0]);
        run_in(ss, &r[1]);
        wk_session_destroy(ss);
        CHECK(r[1].alone.stats.prompt_eval_count < lens[k] || lens[k] == 2);
        struct wk_slots *s = slots_new(1);
        if (!s) return;
        for (int j = 0; j < 2; j++) {
            CHECK(add(s, &r[j]));
            drain(s, r, 2);
        }
        printf("  repeat, %d tokens: the second prefilled %d on a session, %d on a slot\n", (int)lens[k],
               r[1].alone.stats.prompt_eval_count, r[1].batched.stats.prompt_eval_count);
        check_same(&r[0], 0);
        check_outs(&r[1], 1, &r[0].alone, &r[1].alone);
        check_outs(&r[1], 1, &r[0].alone, &r[1].batched);
        for (int j = 0; j < 2; j++) req_deinit(&r[j]);
        wk_slots_destroy(s);
    }
    g_ubatch = N_UBATCH;
}

static void test_shared_system_prompt(void)
{
    static struct req reqs[2];
    req_init(&reqs[0], "You are a careful assistant. You answer in one short sentence, and you never make up "
                       "facts you do not know. You say so when a question has no answer. Question: what is the "
                       "largest planet?", 1);
    req_init(&reqs[1], "You are a careful assistant. You answer in one short sentence, and you never make up "
                       "facts you do not know. You say so when a question has no answer. Question: why do cats "
                       "purr?", 3);
    reqs[0].p.num_predict = 20;
    struct wk_session *ss = session_new();
    if (!ss) return;
    run_in(ss, &reqs[0]);
    run_in(ss, &reqs[1]); /* the second after the first on one session: the shared part reused */
    wk_session_destroy(ss);
    CHECK(reqs[1].alone.stats.prompt_eval_count < reqs[1].alone.stats.prompt_tokens - 20);

    struct wk_slots *s = slots_new(2);
    if (!s) return;
    CHECK(add(s, &reqs[0]));
    struct wk_slots_step st;
    for (int k = 0; k < 5; k++) {
        CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
        collect_done(&st, reqs, 2);
    }
    CHECK(add(s, &reqs[1])); /* the empty slot, its prefix copied from the busy one */
    CHECK(reqs[1].slot >= 0 && reqs[1].slot != reqs[0].slot);
    drain(s, reqs, 2);
    printf("  shared system prompt: the second prefilled %d of its %d tokens\n",
           reqs[1].batched.stats.prompt_eval_count, reqs[1].batched.stats.prompt_tokens);
    CHECK_EQ_INT(reqs[1].batched.stats.prompt_eval_count, reqs[1].alone.stats.prompt_eval_count);
    for (int i = 0; i < 2; i++) {
        check_same(&reqs[i], i);
        req_deinit(&reqs[i]);
    }
    wk_slots_destroy(s);
}

/* Prompt lookup on slots: greedy requests whose answers repeat their
 * prompts (and a seeded one, which does not look up) on 3 slots, each
 * equal to its plain run alone (draft_max 0: no lookup), with drafts
 * kept and rejected; the rounds reported in the stats. */
static void test_lookup(void)
{
    static const char *texts[] = {
        "Copy this list exactly: apple, banana, cherry, apple, banana, cherry, apple, banana, cherry, apple,",
        "a b c d e f g a b c d e f g a b c d e f g a b c",
        "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\ndef add(a, b):\n",
        "1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3,"};
    static struct req reqs[4];
    for (int i = 0; i < 4; i++) {
        req_init(&reqs[i], texts[i], i == 1 ? 1 : 2 * i); /* request 1 seeded, the rest greedy */
#if defined(__SANITIZE_ADDRESS__)
        reqs[i].p.num_predict = 16; /* the same paths, in a third of the time there */
#else
        reqs[i].p.num_predict = 40;
#endif
        reqs[i].p.draft_max = 0;
        run_alone(&reqs[i]); /* plain decoding */
        CHECK_EQ_INT(reqs[i].alone.stats.spec_rounds, 0);
        reqs[i].p.draft_max = 8;
    }
    struct wk_slots *s = slots_new(3);
    if (!s) return;
    int added = 0;
    struct wk_slots_step st;
    while (added < 4 || wk_slots_n_active(s) > 0) {
        if (added < 4 && add(s, &reqs[added])) added++;
        CHECK_EQ_INT(wk_slots_step(s, &st, NULL), WK_OK);
        collect_done(&st, reqs, 4);
    }
    int rounds = 0, drafted = 0, accepted = 0;
    for (int i = 0; i < 4; i++) {
        check_same(&reqs[i], i);
        if (i == 1) CHECK_EQ_INT(reqs[i].batched.stats.spec_rounds, 0);
        rounds += reqs[i].batched.stats.spec_rounds, drafted += reqs[i].batched.stats.draft_count;
        accepted += reqs[i].batched.stats.draft_accepted;
        req_deinit(&reqs[i]);
    }
    printf("  prompt lookup on 3 slots: %d rounds, %d of %d drafts kept\n", rounds, accepted, drafted);
    CHECK(rounds > 3 && accepted > 0);
    wk_slots_destroy(s);
}

static void test_all(void)
{
    const char *cache = getenv("WICK_CACHE"), *home = getenv("HOME"), *other = getenv("WICK_TEST_SLOTS_MODEL");
    char path[1024];
    if (other) /* the same checks on another GGUF (Qwen2.5-Coder-1.5B: all pass, about 70 s on 2 busy cores) */
        snprintf(path, sizeof path, "%s", other);
    else if (cache)
        snprintf(path, sizeof path, "%s/models/SmolLM2-135M-Instruct.Q4_1.gguf", cache);
    else
        snprintf(path, sizeof path, "%s/.cache/wick/models/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : ".");
    struct wk_error err;
    if (wk_model_load(path, &g_m, &err) || wk_tokenizer_from_gguf(wk_model_gguf(g_m), &g_tok, &err)) {
        printf("  skipped: %s (scripts/fetch-models downloads it)\n", err.msg);
        wk_model_destroy(g_m);
        return;
    }
    printf("  on %s\n", path);
    static void (*const parts[])(void) = {test_refused,       test_cancel, test_prefix_reuse, test_alternating,
                                          test_repeat,        test_shared_system_prompt,
                                          test_long_prompt_chunked, test_busy_chunks, test_concurrent_equals_alone,
                                          test_lookup};
    static const char *const names[] = {"refused",     "cancel",      "prefix reuse", "alternating", "repeat",
                                        "system prompt", "long prompt", "busy chunks", "16 on 8",     "lookup"};
    for (int i = 0; i < 10; i++) {
#if defined(__SANITIZE_ADDRESS__)
        /* 40 s each there; their memory paths run in the others (a chunk while slots decode: "16 on 8") */
        if (parts[i] == test_long_prompt_chunked || parts[i] == test_busy_chunks) continue;
#endif
        int64_t t0 = wk_time_ns();
        parts[i]();
        printf("  %s: %.1f s\n", names[i], (double)(wk_time_ns() - t0) * 1e-9);
    }
    wk_tokenizer_destroy(g_tok);
    wk_model_destroy(g_m);
}

CHECK_MAIN(TEST(test_all))
