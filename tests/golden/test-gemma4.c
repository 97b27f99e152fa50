/*
 * test-gemma4.c - tiny Gemma 4 models and MTP assistants against
 * transformers 5.24 (fixtures: tests/golden/gemma4/, made by
 * scripts/reference/make-gemma4-fixtures.py, the GGUFs by llama.cpp's
 * converter through scripts/reference/make-gemma4-gguf.sh, the trained
 * assistant by scripts/reference/train-gemma4-assistant.py; README.md
 * there):
 *   1. hyperparameters and per-layer structure (head dims, KV donors,
 *      double-wide FFN, K = V, experts) as config.json and llama.cpp's
 *      GGUF keys give them;
 *   2. logits of every position of 3 prompts of 32 tokens, dense (PLE,
 *      KV sharing, two head dims) and MoE, from the HF folders and the
 *      GGUFs, within REL_TOL of transformers' float32 logits (error of a
 *      row: max_i |wick_i - ref_i| / max_i |ref_i|, printed), through one
 *      prefill, one-token decode steps, and chunks of 5 (rotating caches
 *      wrapping, the KV-shared layers on the last row only);
 *      suppress_tokens (generation_config.json) are -inf;
 *   3. greedy 32-token continuations identical (transformers' generate);
 *      the GGUF's tokenizer (tokenizer.ggml.model "gemma4", as llama.cpp's
 *      converter writes it) gives transformers' ids and the folder's;
 *   4. the MTP assistants (ordered embeddings and plain): logits and
 *      output states of 4 draft steps within REL_TOL of
 *      Gemma4AssistantForCausalLM given the same target states, and the
 *      same drafted tokens; an assistant built for another hidden size
 *      is refused naming both sizes; bad config.json fields are errors
 *      naming them;
 *   5. speculative decoding with the assistants: greedy output equals
 *      plain greedy output for 10 prompts of 128 tokens (the trained
 *      assistant accepting part of its drafts), and sampling keeps the
 *      distribution of the first 3 tokens over 10,000 seeded runs
 *      (two-sample chi-square, p > 0.001), with a power check.
 *
 * Usage: test-gemma4 [FILTER]; run from the repository root, or with
 * WICK_GEMMA4_FIXTURES naming the fixture folder.
 */
#include "../unit/check.h"
#include "fixture.h"
#include "../unit/chi_square.h"

#include "../../src/io/wk_safetensors.h"
#include "../../src/model/model_internal.h"
#include "../../src/runtime/wk_runtime.h"

#include <jansson.h>

#define REL_TOL 1e-3
#define N_PROMPTS 3
#define N_POS 32
#define VOCAB 512
#define DRAFT_STEPS 4
#define N_RUNS 10000 /* 20,000 took 34 s on a 2-core Zen 1; the power check below still gives p ~ 0 */

static char g_dir[1024];
static json_t *g_ref;
static struct wk_safetensors *g_arrays; /* reference.safetensors */

static const float *ref_array(const char *name, int64_t n_elements)
{
    const struct wk_st_tensor *t = wk_safetensors_find(g_arrays, name);
    CHECK(t && t->dtype == WK_ST_F32 && (int64_t)t->n_elements == n_elements);
    return t && t->dtype == WK_ST_F32 && (int64_t)t->n_elements == n_elements ? t->data : NULL;
}

static struct wk_model *load(const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    return fixture_load(path);
}

/* Prompt p of the fixture model `model` ("dense" or "moe"). */
static void model_prompt_ids(const char *model, size_t p, int32_t *ids)
{
    json_t *arr = json_array_get(json_object_get(json_object_get(g_ref, model), "prompts"), p);
    CHECK_EQ_INT(json_array_size(arr), N_POS);
    for (size_t i = 0; i < N_POS; i++) ids[i] = fixture_id(arr, i);
}

static void prompt_ids(size_t p, int32_t *ids) { model_prompt_ids("dense", p, ids); }

static struct wk_context *new_context(const struct wk_model *m, int32_t n_ubatch, struct wk_threadpool *pool)
{
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = 256;
    cp.n_threads = pool ? 0 : 2;
    cp.n_ubatch = n_ubatch;
    cp.pool = pool;
    struct wk_context *ctx = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_context_create(m, &cp, &ctx, &err), WK_OK);
    return ctx;
}

/* ----------------------------------------------------------- structure */

static void test_hparams(void)
{
    static const char *const dense[2] = {"dense", "dense.gguf"}, *const moe[2] = {"moe", "moe.gguf"};
    for (int which = 0; which < 2; which++) {
        struct wk_model *m = load(dense[which]);
        if (!m) continue;
        const struct wk_hparams *hp = wk_model_hparams(m);
        CHECK_EQ_STR(wk_model_family(m), "gemma4");
        CHECK_EQ_INT(hp->n_vocab, VOCAB);
        CHECK_EQ_INT(hp->n_embd, 64);
        CHECK_EQ_INT(hp->n_layer, 6);
        CHECK_EQ_INT(hp->n_head, 4);
        CHECK_EQ_INT(hp->n_embd_ple, 8);
        CHECK_EQ_INT(hp->sliding_window, 8);
        CHECK_NEAR(hp->attn_scale, 1.0, 0, 0);
        CHECK_NEAR(hp->final_softcap, 30.0, 0, 1e-6);
        static const int kinds[6] = {1, 1, 0, 1, 1, 0}, donors[6] = {0, 1, 2, 3, 3, 2}, ff[6] = {32, 32, 32, 32, 64, 64};
        for (int i = 0; i < 6; i++) {
            const struct wk_layer *l = &m->layers[i];
            CHECK_EQ_INT(l->sliding, kinds[i]);
            CHECK_EQ_INT(l->head_dim, kinds[i] ? 16 : 32);
            CHECK_EQ_INT(l->n_rot, kinds[i] ? 16 : 32);
            CHECK_EQ_INT(l->n_head_kv, 2);
            CHECK_EQ_INT(l->kv_layer, donors[i]);
            CHECK_EQ_INT(l->n_ff, ff[i]);
            CHECK(l->v_norm == (donors[i] == i) && !l->k_eq_v);
            CHECK((l->wk != NULL) == (donors[i] == i));
            /* proportional RoPE: 4 of the 16 pairs of the full layers turn */
            if (!kinds[i]) {
                const float *f = l->rope_freqs->data;
                CHECK(f[3] == 1.0f && !(f[4] < 1e29f) && !(f[15] < 1e29f));
            }
        }
        /* suppress_tokens come from generation_config.json (llama.cpp's GGUF has none) */
        CHECK_EQ_INT(m->n_suppress, which == 0 ? 3 : 0);
        wk_model_destroy(m);

        if (!(m = load(moe[which]))) continue;
        hp = wk_model_hparams(m);
        CHECK_EQ_INT(hp->n_embd, 48);
        CHECK_EQ_INT(hp->n_layer, 4);
        CHECK_EQ_INT(hp->n_expert, 8);
        CHECK_EQ_INT(hp->n_expert_used, 2);
        CHECK_EQ_INT(hp->n_ff_exp, 12);
        CHECK_EQ_INT(hp->n_embd_ple, 0);
        for (int i = 0; i < 4; i++) {
            const struct wk_layer *l = &m->layers[i];
            bool full = i % 2 == 1;
            CHECK_EQ_INT(l->sliding, !full);
            CHECK_EQ_INT(l->n_head_kv, full ? 1 : 2);
            CHECK_EQ_INT(l->k_eq_v, full); /* no v_proj on full layers */
            CHECK(l->moe.router && l->moe.gate_up && l->moe.down && l->moe.gate_up->ne[2] == 8);
        }
        wk_model_destroy(m);
    }
}

/* ------------------------------------------------------------- logits */

static void logits_of(const char *model, const char *ref_model)
{
    char ref_name[64];
    snprintf(ref_name, sizeof ref_name, "%s.logits", ref_model);
    struct wk_model *m = load(model);
    if (!m) return;
    const float *ref = ref_array(ref_name, (int64_t)N_PROMPTS * N_POS * VOCAB);
    float *out = malloc((size_t)N_POS * VOCAB * sizeof *out);
    double worst[3] = {0, 0, 0}; /* prefill, one-token steps, chunks of 5 */
    for (size_t p = 0; ref && p < N_PROMPTS; p++) {
        int32_t ids[N_POS];
        model_prompt_ids(ref_model, p, ids);
        const float *rp = ref + p * N_POS * VOCAB;
        struct wk_error err;
        struct wk_context *ctx = new_context(m, 512, NULL);
        CHECK_EQ_INT(wk_context_decode_all(ctx, ids, N_POS, out, NULL, &err), WK_OK);
        for (int32_t t = 0; t < N_POS; t++) {
            const float *row = out + (size_t)t * VOCAB;
            double e = fixture_row_error(row, rp + (size_t)t * VOCAB, VOCAB, m->suppress, m->n_suppress);
            if (!(e <= REL_TOL)) fprintf(stderr, "  %s prompt %zu position %d: relative error %.3g\n", model, p, t, e);
            CHECK(e <= REL_TOL);
            worst[0] = fmax(worst[0], e);
            for (int32_t j = 0; j < m->n_suppress; j++) CHECK(isinf(row[m->suppress[j]]) && row[m->suppress[j]] < 0);
        }
        wk_context_destroy(ctx);
        /* one token at a time: the decode path */
        ctx = new_context(m, 512, NULL);
        for (int32_t t = 0; t < N_POS; t++) {
            CHECK_EQ_INT(wk_context_decode(ctx, ids + t, 1, out, NULL, &err), WK_OK);
            double e = fixture_row_error(out, rp + (size_t)t * VOCAB, VOCAB, m->suppress, m->n_suppress);
            CHECK(e <= REL_TOL);
            worst[1] = fmax(worst[1], e);
        }
        wk_context_destroy(ctx);
        /* chunks of 5: rings of W + 5 + 16 slots wrap; past the first
         * KV-shared layer only the row whose logits are asked for runs */
        ctx = new_context(m, 5, NULL);
        CHECK_EQ_INT(wk_context_decode(ctx, ids, N_POS - 3, NULL, NULL, &err), WK_OK);
        CHECK_EQ_INT(wk_context_decode(ctx, ids + N_POS - 3, 3, out, NULL, &err), WK_OK);
        double e = fixture_row_error(out, rp + (size_t)(N_POS - 1) * VOCAB, VOCAB, m->suppress, m->n_suppress);
        CHECK(e <= REL_TOL);
        worst[2] = fmax(worst[2], e);
        wk_context_destroy(ctx);
    }
    printf("  %-10s max relative logits error: prefill %.3g, one-token steps %.3g, chunks of 5 %.3g (tolerance %g)\n",
           model, worst[0], worst[1], worst[2], REL_TOL);
    free(out);
    wk_model_destroy(m);
}

static void test_logits(void)
{
    logits_of("dense", "dense");
    logits_of("dense.gguf", "dense");
    logits_of("moe", "moe");
    logits_of("moe.gguf", "moe");
}

static void greedy_of(const char *model, const char *ref_model, const char *key)
{
    struct wk_model *m = load(model);
    if (!m) return;
    float *out = malloc((size_t)VOCAB * sizeof *out);
    json_t *want_all = json_object_get(json_object_get(g_ref, ref_model), key);
    CHECK_EQ_INT(json_array_size(want_all), N_PROMPTS);
    for (size_t p = 0; p < N_PROMPTS; p++) {
        int32_t ids[N_POS];
        model_prompt_ids(ref_model, p, ids);
        json_t *want = json_array_get(want_all, p);
        CHECK_EQ_INT(json_array_size(want), 32);
        struct wk_context *ctx = new_context(m, 512, NULL);
        struct wk_error err;
        CHECK_EQ_INT(wk_context_decode(ctx, ids, N_POS, out, NULL, &err), WK_OK);
        for (size_t s = 0; s < json_array_size(want); s++) {
            int32_t id = fixture_argmax(out, VOCAB);
            if (id != fixture_id(want, s))
                fprintf(stderr, "  %s prompt %zu step %zu: wick %d, transformers %d\n", model, p, s, id, fixture_id(want, s));
            CHECK_EQ_INT(id, fixture_id(want, s));
            if (id != fixture_id(want, s)) break;
            CHECK_EQ_INT(wk_context_decode(ctx, &id, 1, out, NULL, &err), WK_OK);
        }
        wk_context_destroy(ctx);
    }
    free(out);
    wk_model_destroy(m);
}

static void test_greedy(void)
{
    greedy_of("dense", "dense", "greedy");
    greedy_of("dense.gguf", "dense", "greedy_without_suppress"); /* no suppress_tokens in the GGUF */
    greedy_of("moe", "moe", "greedy");
    greedy_of("moe.gguf", "moe", "greedy");
}

/* ---------------------------------------------------------- tokenizer */

static void encode(const struct wk_tokenizer *tok, const char *text, bool special, struct wk_tokens *t)
{
    t->n = 0;
    CHECK_EQ_INT(wk_tokenizer_encode(tok, text, strlen(text), special, t), WK_OK);
}

static bool same_ids(const struct wk_tokens *a, const int32_t *b, int64_t n)
{
    bool same = a->n == n;
    for (int64_t i = 0; same && i < n; i++) same = a->ids[i] == b[i];
    return same;
}

/* The reference's encode cases (transformers' ids) through tok. */
static void check_encode_cases(const struct wk_tokenizer *tok, const char *name)
{
    json_t *cases = json_object_get(json_object_get(g_ref, "tokenizer"), "encode_cases"), *c;
    CHECK(json_array_size(cases) >= 5);
    struct wk_tokens t = {0};
    int32_t want[64];
    size_t i;
    json_array_foreach(cases, i, c)
    {
        json_t *ids = json_object_get(c, "ids");
        const char *text = json_string_value(json_object_get(c, "text"));
        size_t n = json_array_size(ids);
        CHECK(text && n <= 64);
        for (size_t k = 0; k < n && k < 64; k++) want[k] = fixture_id(ids, k);
        encode(tok, text ? text : "", false, &t);
        if (!same_ids(&t, want, (int64_t)n)) fprintf(stderr, "  %s: \"%s\" tokenizes differently\n", name, text);
        CHECK(same_ids(&t, want, (int64_t)n));
    }
    wk_tokens_deinit(&t);
}

/* tok (a GGUF's) and ref (the folder's) give the same ids for more text
 * (newlines, tabs, bytes, control markup as literal text, with
 * parse_special too when specials) and the same bytes for every token of
 * the prompts. */
static void check_same_as_folder(const struct wk_tokenizer *tok, const struct wk_tokenizer *ref, const char *name,
                                 bool specials)
{
    static const char *const more[] = {
        "line one\nline two\n\n\nthree", "\ttab\tand  \n  spaces   ", " leading space", "trailing ",
        "<start_of_turn>user literal<end_of_turn>\n", "bytes \x01\x7f \xff\xfe end", "日本語のテキスト",
        "The quick brown fox jumps over the lazy dog. 12345 + 678 = 13023!", ""};
    struct wk_tokens t = {0}, u = {0};
    for (int special = 0; special <= (int)specials; special++) {
        for (size_t k = 0; k < WK_ARRAY_LEN(more); k++) {
            encode(tok, more[k], special, &t);
            encode(ref, more[k], special, &u);
            if (!same_ids(&t, u.ids, u.n)) fprintf(stderr, "  %s and dense differ on text %zu\n", name, k);
            CHECK(same_ids(&t, u.ids, u.n));
        }
    }
    for (size_t p = 0; p < N_PROMPTS; p++) {
        int32_t ids[N_POS];
        prompt_ids(p, ids);
        for (int32_t k = 0; k < N_POS; k++) {
            char a[64], b[64];
            size_t na = wk_tokenizer_token_bytes(tok, ids[k], true, a, sizeof a);
            size_t nb = wk_tokenizer_token_bytes(ref, ids[k], true, b, sizeof b);
            CHECK(na == nb && na <= sizeof a && memcmp(a, b, na) == 0);
        }
    }
    wk_tokens_deinit(&t);
    wk_tokens_deinit(&u);
}

/* llama.cpp's converter writes tokenizer.ggml.model "gemma4" for Gemma 4.
 * dense.gguf is its output for tests/golden/gemma4/dense, byte for byte:
 * the model loads with its tokenizer, which gives transformers' ids for
 * the reference strings and the folder tokenizer's for more text, with
 * BOS added. There <start_of_turn> / <end_of_turn> are NORMAL tokens (the
 * folder does not list them among transformers' special tokens, which is
 * what the converter marks CONTROL), so the chat case is checked on
 * gemma4-llamacpp/vocab.gguf, converted with them listed
 * (scripts/reference/make-gemma4-vocab-gguf.sh): the reference chat ids,
 * and the chat prompt wick renders for dense.gguf tokenized by it. */
static void test_gguf_tokenizer(void)
{
    struct wk_model *mg = load("dense.gguf"), *mf = load("dense");
    struct wk_tokenizer *tg = NULL, *tf = NULL, *tv = NULL;
    struct wk_gguf *gv = NULL;
    struct wk_error err;
    if (!mg || !mf) goto out;
    enum wk_status st = wk_tokenizer_for_model(mg, &tg, &err);
    if (st) fprintf(stderr, "  dense.gguf tokenizer: %s\n", err.msg);
    CHECK_EQ_INT(st, WK_OK);
    CHECK_EQ_INT(wk_tokenizer_for_model(mf, &tf, &err), WK_OK);
    char path[1200];
    snprintf(path, sizeof path, "%s/../gemma4-llamacpp/vocab.gguf", g_dir);
    CHECK_EQ_INT(wk_gguf_open(path, &gv, &err), WK_OK);
    if (gv) CHECK_EQ_INT(wk_tokenizer_from_gguf(gv, &tv, &err), WK_OK);
    if (!tg || !tf || !tv) goto out;
    for (int which = 0; which < 2; which++) {
        const struct wk_tokenizer *tok = which ? tv : tg;
        const char *name = which ? "vocab.gguf" : "dense.gguf";
        CHECK_EQ_INT(wk_tokenizer_n_vocab(tok), VOCAB);
        CHECK_EQ_INT(wk_tokenizer_bos(tok), 2);
        CHECK_EQ_INT(wk_tokenizer_eos(tok), 1);
        CHECK(wk_tokenizer_add_bos(tok));
        CHECK(wk_tokenizer_is_eog(tok, 1));
        CHECK_EQ_INT(wk_tokenizer_token_type(tok, 7), WK_TOKEN_BYTE);
        CHECK_EQ_INT(wk_tokenizer_token_type(tok, 5), which ? WK_TOKEN_CONTROL : WK_TOKEN_NORMAL);
        check_encode_cases(tok, name);
        check_same_as_folder(tok, tf, name, which == 1);
    }
    CHECK(wk_tokenizer_is_eog(tv, 6) && wk_tokenizer_add_bos(tf));
    json_t *chat = json_object_get(json_object_get(g_ref, "tokenizer"), "chat_case");
    json_t *chat_ids = json_object_get(chat, "ids");
    size_t n_chat = json_array_size(chat_ids);
    int32_t want[64];
    CHECK(n_chat > 0 && n_chat <= 64);
    for (size_t k = 0; k < n_chat && k < 64; k++) want[k] = fixture_id(chat_ids, k);
    struct wk_tokens t = {0};
    encode(tv, json_string_value(json_object_get(chat, "text")), true, &t);
    CHECK(same_ids(&t, want, (int64_t)n_chat));
    struct wk_chat_message msg = {"user", "hi"};
    struct wk_prompt prompt = {0};
    CHECK_EQ_INT(wk_chat_render(mg, tv, &msg, 1, true, &prompt, &err), WK_OK);
    t.n = 0;
    CHECK_EQ_INT(wk_prompt_tokenize(tv, &prompt, &t), WK_OK);
    CHECK(same_ids(&t, want, (int64_t)n_chat));
    wk_prompt_deinit(&prompt);
    wk_tokens_deinit(&t);
out:
    wk_tokenizer_destroy(tg), wk_tokenizer_destroy(tf), wk_tokenizer_destroy(tv);
    wk_gguf_close(gv);
    wk_model_destroy(mg), wk_model_destroy(mf);
}

/* ---------------------------------------------------------- assistant */

/* The assistant's 4 draft steps after each prompt, as transformers ran them. */
static void assistant_of(const char *name)
{
    struct wk_model *t = load("dense"), *a = load(name);
    if (!t || !a) {
        wk_model_destroy(t), wk_model_destroy(a);
        return;
    }
    struct wk_error err;
    CHECK_EQ_INT(wk_model_check_mtp(a, t, &err), WK_OK);
    char key[128];
    snprintf(key, sizeof key, "%s.logits", name);
    const float *ref_logits = ref_array(key, (int64_t)N_PROMPTS * DRAFT_STEPS * VOCAB);
    snprintf(key, sizeof key, "%s.hidden_out", name);
    const float *ref_hidden = ref_array(key, (int64_t)N_PROMPTS * DRAFT_STEPS * 64);
    const float *ref_cond = ref_array("dense.cond.0", 64);
    json_t *cases = json_object_get(json_object_get(g_ref, name), "cases");
    CHECK_EQ_INT(json_array_size(cases), N_PROMPTS);
    float *logits = malloc((size_t)VOCAB * sizeof *logits), *last = malloc((size_t)VOCAB * sizeof *last);
    float cond[64], next[64];
    double worst_l = 0, worst_h = 0;
    for (size_t p = 0; ref_logits && ref_hidden && ref_cond && p < N_PROMPTS; p++) {
        json_t *c = json_array_get(cases, p);
        int32_t ids[N_POS];
        prompt_ids(p, ids);
        CHECK_EQ_INT(json_integer_value(json_object_get(c, "p")), N_POS - 1);
        CHECK_EQ_INT(json_integer_value(json_object_get(c, "position_id")), N_POS);
        struct wk_context *tc = new_context(t, 512, NULL), *ac = new_context(a, 512, wk_context_pool(tc));
        CHECK_EQ_INT(wk_context_decode(tc, ids, N_POS, last, NULL, &err), WK_OK);
        memcpy(cond, wk_context_hidden(tc, 0), sizeof cond);
        if (p == 0) CHECK(fixture_row_error(cond, ref_cond, 64, NULL, 0) <= REL_TOL);
        int32_t tok = (int32_t)json_integer_value(json_object_get(c, "t"));
        CHECK_EQ_INT(tok, fixture_argmax(last, VOCAB)); /* t: the target's greedy token */
        json_t *drafts = json_object_get(c, "draft_tokens");
        for (int s = 0; s < DRAFT_STEPS; s++) {
            CHECK_EQ_INT(wk_context_mtp_step(ac, tc, tok, cond, logits, next, &err), WK_OK);
            const size_t row = p * DRAFT_STEPS + (size_t)s;
            double el = fixture_row_error(logits, ref_logits + row * VOCAB, VOCAB, NULL, 0);
            double eh = fixture_row_error(next, ref_hidden + row * 64, 64, NULL, 0);
            if (!(el <= REL_TOL && eh <= REL_TOL))
                fprintf(stderr, "  %s prompt %zu step %d: logits error %.3g, state error %.3g\n", name, p, s, el, eh);
            CHECK(el <= REL_TOL && eh <= REL_TOL);
            worst_l = fmax(worst_l, el), worst_h = fmax(worst_h, eh);
            tok = fixture_argmax(logits, VOCAB);
            CHECK_EQ_INT(tok, fixture_id(drafts, (size_t)s));
            memcpy(cond, next, sizeof cond);
        }
        CHECK_EQ_INT(wk_context_n_past(tc), N_POS); /* drafting writes no cache */
        wk_context_destroy(ac);
        wk_context_destroy(tc);
    }
    printf("  %-16s max relative error over %d draft steps: logits %.3g, output state %.3g\n", name,
           N_PROMPTS * DRAFT_STEPS, worst_l, worst_h);
    free(logits), free(last);
    wk_model_destroy(a), wk_model_destroy(t);
}

static void test_assistant(void)
{
    assistant_of("assistant");
    assistant_of("assistant-plain");
}

static void test_assistant_mismatch(void)
{
    struct wk_model *t = load("dense"), *bad = load("assistant-bad"), *moe = load("moe"), *a = load("assistant");
    struct wk_error err;
    wk_error_clear(&err);
    if (t && bad) {
        CHECK_EQ_INT(wk_model_check_mtp(bad, t, &err), WK_E_INVALID);
        CHECK(strstr(err.msg, "hidden size 48") && strstr(err.msg, "has 64"));
    }
    if (moe && a) { /* 64 expected, the MoE model is 48 wide */
        CHECK_EQ_INT(wk_model_check_mtp(a, moe, &err), WK_E_INVALID);
        CHECK(strstr(err.msg, "backbone_hidden_size") != NULL);
    }
    if (t) CHECK_EQ_INT(wk_model_check_mtp(t, t, &err), WK_E_INVALID); /* not an assistant */
    wk_model_destroy(t), wk_model_destroy(bad), wk_model_destroy(moe), wk_model_destroy(a);
}

/* A copy of fixture folder `from` in a temporary folder (its files linked)
 * with config.json's key set to value; the folder's path in dir. */
static void patched_folder(const char *from, const char *key, json_t *value, char *dir, size_t cap)
{
    snprintf(dir, cap, "/tmp/wick-test-g4.XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    char src[1200], path[1300], cmd[2800];
    snprintf(src, sizeof src, "%s/%s", g_dir, from);
    snprintf(cmd, sizeof cmd, "for f in '%s'/*; do ln -s \"$(realpath \"$f\")\" '%s'/; done; rm '%s/config.json'", src,
             dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(path, sizeof path, "%s/config.json", src);
    json_t *cfg = json_load_file(path, 0, NULL);
    CHECK(cfg != NULL);
    json_object_set_new(cfg, key, value);
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK_EQ_INT(json_dump_file(cfg, path, 0), 0);
    json_decref(cfg);
}

/* Bad config.json fields are errors naming them, not crashes or a
 * misread model. */
static void test_bad_configs(void)
{
    static const struct {
        const char *model, *key, *value, *want;
    } cases[] = {
        {"dense", "layer_types", "[\"sliding_attention\", \"full_attention\"]", "layer_types has 2 entries for 6 layers"},
        {"dense", "layer_types", "\"x\"", "layer_types must be a list"},
        {"dense", "num_kv_shared_layers", "9", "num_kv_shared_layers out of range"},
        {"dense", "global_head_dim", "\"wide\"", "global_head_dim must be a number"},
        {"moe", "top_k_experts", "12", "expert_used_count 12 must be 1..expert_count 8"},
    };
    for (size_t i = 0; i < WK_ARRAY_LEN(cases); i++) {
        char dir[64], cmd[128];
        patched_folder(cases[i].model, cases[i].key, json_loads(cases[i].value, JSON_DECODE_ANY, NULL), dir, sizeof dir);
        struct wk_model *m = NULL;
        struct wk_error err;
        wk_error_clear(&err);
        CHECK_EQ_INT(wk_model_load(dir, &m, &err), WK_E_FORMAT);
        if (!strstr(err.msg, cases[i].want)) fprintf(stderr, "  %s: %s\n", cases[i].key, err.msg);
        CHECK(strstr(err.msg, cases[i].want) != NULL);
        wk_model_destroy(m);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK_EQ_INT(system(cmd), 0);
    }
    /* RoPE scaling, which Gemma 4 does not have: refused, not ignored */
    char dir[64], cmd[128];
    patched_folder("dense", "rope_scaling", json_loads("{\"rope_type\": \"linear\", \"factor\": 4.0}", 0, NULL), dir,
                   sizeof dir);
    struct wk_model *m = NULL;
    struct wk_error err;
    wk_error_clear(&err);
    CHECK_EQ_INT(wk_model_load(dir, &m, &err), WK_E_UNSUPPORTED);
    CHECK(strstr(err.msg, "rope.scaling.factor 4") != NULL);
    wk_model_destroy(m);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

/* ------------------------------------------------------- speculation */

struct run {
    int32_t ids[256];
    int32_t n;
};

static void on_token(void *user, int32_t id)
{
    struct run *r = user;
    if (r->n < 256) r->ids[r->n++] = id;
}

static enum wk_dtype g_kv = WK_DTYPE_F32; /* the sessions' KV cache type */

static struct wk_session *session(struct wk_model *m, struct wk_tokenizer *tok, struct wk_model *draft,
                                  int32_t n_threads)
{
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = 256;
    cp.n_threads = n_threads;
    cp.kv_type = g_kv;
    struct wk_session *s = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_session_create(m, tok, &cp, &s, &err), WK_OK);
    if (s && draft) CHECK_EQ_INT(wk_session_set_draft(s, draft, &err), WK_OK);
    return s;
}

static enum wk_status generate(struct wk_session *s, const struct wk_tokens *prompt, struct wk_generate_params gp,
                               struct run *r, struct wk_generate_stats *st)
{
    struct wk_error err;
    r->n = 0;
    gp.on_token = on_token;
    gp.user = r;
    enum wk_status rc = wk_session_generate(s, prompt, &gp, st, &err);
    if (rc) fprintf(stderr, "  generate: %s\n", err.msg);
    return rc;
}

/* Prompt i of 10: the fixtures' 3, then 7 more from a fixed generator. */
static void prompt_of(int i, struct wk_tokens *out)
{
    out->n = 0;
    if (i < N_PROMPTS) {
        int32_t ids[N_POS];
        prompt_ids((size_t)i, ids);
        for (int j = 0; j < N_POS; j++) wk_tokens_push(out, ids[j]);
        return;
    }
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    wk_tokens_push(out, 2);
    for (int j = 0; j < 12 + i; j++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        wk_tokens_push(out, 7 + (int32_t)((x >> 33) % (VOCAB - 7)));
    }
}

/* Greedy with the assistant (trained, and random) equals greedy without,
 * over n_prompts prompts of n_predict tokens each. */
static void greedy_with_assistant(int n_prompts, int n_predict)
{
    struct wk_model *t = load("dense"), *trained = load("assistant-trained"), *random = load("assistant");
    struct wk_tokenizer *tok = NULL;
    struct wk_error err;
    if (!t || !trained || !random || wk_tokenizer_for_model(t, &tok, &err)) {
        CHECK(!"models and tokenizer load");
        goto out;
    }
    struct wk_session *plain = session(t, tok, NULL, 2), *spec = session(t, tok, trained, 2),
                      *spec2 = session(t, tok, random, 2);
    struct wk_generate_params gp = wk_generate_params_default();
    gp.sampler.temperature = 0;
    gp.num_predict = n_predict;
    gp.draft_min = 3; /* draft every step: the controller would pause a poor assistant */
    struct wk_tokens prompt = {0};
    int32_t drafted = 0, accepted = 0, equal = 0;
    for (int i = 0; i < n_prompts; i++) {
        prompt_of(i, &prompt);
        struct run a, b, c;
        struct wk_generate_stats sa, sb, sc;
        CHECK_EQ_INT(generate(plain, &prompt, gp, &a, &sa), WK_OK);
        CHECK_EQ_INT(generate(spec, &prompt, gp, &b, &sb), WK_OK);
        CHECK_EQ_INT(generate(spec2, &prompt, gp, &c, &sc), WK_OK);
        bool same = a.n == b.n && a.n == c.n && !memcmp(a.ids, b.ids, (size_t)a.n * sizeof *a.ids) &&
                    !memcmp(a.ids, c.ids, (size_t)a.n * sizeof *a.ids);
        CHECK(same);
        equal += same;
        CHECK(sb.spec_rounds > 0 && sc.spec_rounds > 0);
        drafted += sb.draft_count, accepted += sb.draft_accepted;
    }
    printf("  %d prompts x %d tokens (%s KV cache): %d equal to plain greedy; trained assistant accepted %d of %d "
           "drafts\n", n_prompts, n_predict, g_kv == WK_DTYPE_F16 ? "f16" : "f32", equal, accepted, drafted);
    CHECK(accepted > drafted / 10 && accepted < drafted); /* rounds that accept some, not all */
    wk_tokens_deinit(&prompt);
    wk_session_destroy(plain), wk_session_destroy(spec), wk_session_destroy(spec2);
out:
    wk_tokenizer_destroy(tok);
    wk_model_destroy(t), wk_model_destroy(trained), wk_model_destroy(random);
}

static void test_greedy_with_assistant(void) { greedy_with_assistant(10, 128); }

/* The same with an f16 KV cache: the assistant reads the target's f16
 * cache (its context takes the target's type), greedy stays plain greedy. */
static void test_greedy_with_assistant_f16(void)
{
    g_kv = WK_DTYPE_F16;
    greedy_with_assistant(3, 64);
    g_kv = WK_DTYPE_F32;
}

/* The first 3 tokens of N_RUNS runs seeded 1..N_RUNS, as one key each. */
static void sample_runs(struct wk_session *s, const struct wk_tokens *prompt, struct wk_generate_params gp,
                        struct hist *h, struct wk_generate_stats *total)
{
    memset(h, 0, sizeof *h);
    memset(total, 0, sizeof *total);
    gp.num_predict = 3;
    for (int i = 0; i < N_RUNS; i++) {
        gp.sampler.seed = (uint64_t)i + 1;
        struct run r;
        struct wk_generate_stats st;
        CHECK_EQ_INT(generate(s, prompt, gp, &r, &st), WK_OK);
        int64_t key = 0;
        for (int j = 0; j < 3; j++) key = key * 1000 + (j < r.n ? r.ids[j] + 1 : 0);
        hist_add(h, key);
        total->draft_count += st.draft_count, total->draft_accepted += st.draft_accepted;
    }
}

static void test_sampling_distribution(void)
{
    struct wk_model *t = load("dense"), *a = load("assistant-trained");
    struct wk_tokenizer *tok = NULL;
    struct wk_error err;
    if (!t || !a || wk_tokenizer_for_model(t, &tok, &err)) {
        CHECK(!"models and tokenizer load");
        goto out;
    }
    struct wk_tokens prompt = {0};
    prompt_of(4, &prompt);
    struct wk_generate_params gp = wk_generate_params_default();
    gp.sampler.temperature = 1.0f, gp.sampler.top_k = 6;
    gp.draft_min = gp.draft_max = 2; /* every run speculates: drafts for tokens 2 and 3 */
    /* one thread: 60,000 short runs of a tiny model would mostly wait on
     * thread hand-offs */
    struct wk_session *plain = session(t, tok, NULL, 1), *spec = session(t, tok, a, 1);
    struct hist *hp = malloc(sizeof *hp), *hs = malloc(sizeof *hs), *hw = malloc(sizeof *hw);
    struct wk_generate_stats tp, ts, tw;
    sample_runs(plain, &prompt, gp, hp, &tp);
    sample_runs(spec, &prompt, gp, hs, &ts);
    int dof;
    double p = chi_square_p(hp, hs, &dof);
    printf("  %d outcomes, chi-square p = %.4f (%d dof); drafted %d, accepted %d\n", hp->n, p, dof, ts.draft_count,
           ts.draft_accepted);
    CHECK(dof >= 10);
    CHECK(p > 0.001);
    CHECK(ts.draft_count > N_RUNS && ts.draft_accepted > ts.draft_count / 50 && ts.draft_accepted < ts.draft_count);
    /* power: a slightly different distribution (top_k 5) is told apart */
    gp.sampler.top_k = 5;
    sample_runs(plain, &prompt, gp, hw, &tw);
    double pw = chi_square_p(hp, hw, &dof);
    printf("  top_k 5 against top_k 6: p = %.3g\n", pw);
    CHECK(pw < 0.001);
    wk_session_destroy(plain), wk_session_destroy(spec);
    free(hp), free(hs), free(hw);
    wk_tokens_deinit(&prompt);
out:
    wk_tokenizer_destroy(tok);
    wk_model_destroy(t), wk_model_destroy(a);
}

int main(int argc, char **argv)
{
    const char *d = getenv("WICK_GEMMA4_FIXTURES");
    snprintf(g_dir, sizeof g_dir, "%s", d && *d ? d : "tests/golden/gemma4");
    char path[1200];
    snprintf(path, sizeof path, "%s/reference.json", g_dir);
    json_error_t je;
    g_ref = json_load_file(path, 0, &je);
    if (!g_ref) {
        fprintf(stderr, "test-gemma4: %s: %s\n", path, je.text);
        return 1;
    }
    snprintf(path, sizeof path, "%s/reference.safetensors", g_dir);
    struct wk_error err;
    if (wk_safetensors_open(path, &g_arrays, &err)) {
        fprintf(stderr, "test-gemma4: %s\n", err.msg);
        return 1;
    }
    static const struct check_test tests[] = {
        TEST(test_hparams),           TEST(test_logits),
        TEST(test_greedy),            TEST(test_gguf_tokenizer),    TEST(test_assistant),
        TEST(test_assistant_mismatch), TEST(test_bad_configs),  TEST(test_greedy_with_assistant), TEST(test_greedy_with_assistant_f16),
        TEST(test_sampling_distribution)};
    int rc = check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    wk_safetensors_close(g_arrays);
    json_decref(g_ref);
    return rc;
}
