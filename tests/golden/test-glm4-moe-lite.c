/*
 * test-glm4-moe-lite.c - a tiny GLM-4-MoE-Lite (Glm4MoeLiteForCausalLM)
 * against transformers, loaded from its Hugging Face folder and from the
 * GGUFs of the same weights under both key conventions (fixtures:
 * tests/golden/glm4-moe-lite/, made by
 * scripts/reference/make-glm4-moe-lite-fixtures.py; README.md there):
 *   1. hyperparameters as config.json / each convention's keys give them,
 *      and an MLA cache of kv_lora_rank + rope dims values a position;
 *   2. logits of every position of 3 prompts of 32 tokens (prefill, f32)
 *      and of each prompt's last token decoded alone within REL_TOL of
 *      transformers' float32 logits (error of a row: max_i |wick_i -
 *      ref_i| / max_i |ref_i|; printed);
 *   3. greedy 32-token continuations identical to transformers';
 *   4. verification (wk_context_verify) gives the bits of one-token steps
 *      (1-3 threads, prefill chunks of 512 and 2);
 *   5. decoding from the compressed cache equals decoding with full
 *      per-head K and V (wk_context_params.mla_uncompressed: the
 *      non-absorbed attention in double precision);
 *   6. the router: transformers' chosen experts (in torch.topk's order,
 *      ties included) and weights for fixed hidden states;
 *   7. the chat prompt equals apply_chat_template's string and ids;
 *   8. bad inputs: num_experts_per_tok > n_routed_experts in config.json,
 *      an expert tensor missing from the GGUF or the folder, keys of the
 *      other convention.
 *
 * Usage: test-glm4-moe-lite [FILTER]; run from the repository root, or
 * with WICK_GLM4_FIXTURES naming the fixture folder.
 */
#include "../unit/check.h"
#include "fixture.h"

#include "../../src/io/wk_safetensors.h"
#include "../../src/model/model_internal.h"
#include "../../src/runtime/wk_runtime.h"

#include <jansson.h>

#define REL_TOL 1e-3
#define N_PROMPTS 3
#define N_POS 32
#define N_MODELS 3

static char g_dir[1024];
static json_t *g_ref;
static struct wk_safetensors *g_st;
static const float *g_logits; /* [N_PROMPTS][N_POS][n_vocab] */
static int32_t g_vocab;
static const char *const g_names[N_MODELS] = {"hf", "deepseek2 gguf", "glm4moelite gguf"};

static const char *model_path(int which, char *buf, size_t cap)
{
    static const char *const files[N_MODELS] = {"hf", "glm4-moe-lite-deepseek2-f32.gguf",
                                                "glm4-moe-lite-glm4moelite-f32.gguf"};
    snprintf(buf, cap, "%s/%s", g_dir, files[which]);
    return buf;
}

static struct wk_model *load(int which)
{
    char path[1200];
    return fixture_load(model_path(which, path, sizeof path));
}


static void test_hparams(void)
{
    static const char *const arch[N_MODELS] = {"deepseek2", "deepseek2", "glm4moelite"};
    for (int which = 0; which < N_MODELS; which++) {
        struct wk_model *m = load(which);
        if (!m) continue;
        const struct wk_hparams *hp = wk_model_hparams(m);
        CHECK_EQ_STR(wk_model_family(m), "glm4moelite");
        CHECK_EQ_STR(hp->arch_name, arch[which]);
        CHECK_EQ_INT(hp->n_vocab, 512);
        CHECK_EQ_INT(hp->n_embd, 64);
        CHECK_EQ_INT(hp->n_layer, 3);
        CHECK_EQ_INT(hp->n_head, 4);
        CHECK_EQ_INT(hp->n_lora_q, 32);
        CHECK_EQ_INT(hp->n_lora_kv, 32);
        CHECK_EQ_INT(hp->n_embd_head_k_mla, 24); /* nope 16 + rope 8 */
        CHECK_EQ_INT(hp->n_embd_head_v_mla, 16);
        CHECK_EQ_INT(hp->head_dim, 24);
        CHECK_EQ_INT(hp->n_rot, 8);
        CHECK_EQ_INT(hp->n_ff, 64);
        CHECK_EQ_INT(hp->n_expert, 8);
        CHECK_EQ_INT(hp->n_expert_used, 2);
        CHECK_EQ_INT(hp->n_expert_shared, 1);
        CHECK_EQ_INT(hp->n_ff_exp, 16);
        CHECK_EQ_INT(hp->n_layer_dense_lead, 1);
        CHECK(hp->expert_weights_norm);
        CHECK_NEAR(hp->expert_weights_scale, 1.8, 0, 1e-6);
        CHECK_EQ_INT(hp->n_ctx_train, 512);
        CHECK_NEAR(hp->rope_base, 10000.0, 0, 1e-6);
        CHECK_NEAR(hp->rms_eps, 1e-5, 0, 1e-6);
        CHECK_NEAR(hp->attn_scale, 1.0 / sqrt(24.0), 0, 1e-6);
        /* the compressed cache: kv_lora_rank + rope dims a position, every layer */
        for (int32_t il = 0; il < hp->n_layer; il++) CHECK_EQ_INT(wk_model_kv_values(m, il), 32 + 8);
        /* layer 0 dense, 1 and 2 MoE with a shared expert */
        CHECK(m->layers[0].moe.router == NULL && m->layers[0].ffn_gate != NULL);
        CHECK(m->layers[1].moe.sigmoid && m->layers[2].moe.sel_bias != NULL && m->layers[2].ffn_gate != NULL);
        wk_model_destroy(m);
    }
}

static struct wk_context *new_context(struct wk_model *m, int threads, int n_ubatch, bool uncompressed)
{
    struct wk_context_params cp = wk_context_params_default();
    cp.n_ctx = 128;
    cp.n_threads = threads;
    cp.n_ubatch = n_ubatch;
    cp.mla_uncompressed = uncompressed;
    struct wk_context *ctx = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_context_create(m, &cp, &ctx, &err), WK_OK);
    /* an f16 KV cache is refused by name (the compressed cache is f32 only;
     * wick serve's runner then keeps f32) */
    struct wk_context *c16 = NULL;
    cp.kv_type = WK_DTYPE_F16;
    CHECK_EQ_INT(wk_context_create(m, &cp, &c16, &err), WK_E_UNSUPPORTED);
    CHECK(c16 == NULL && strstr(err.msg, "f16") != NULL);
    return ctx;
}

static void prompt_ids(size_t p, int32_t *ids)
{
    json_t *arr = json_array_get(json_object_get(g_ref, "prompts"), p);
    CHECK_EQ_INT(json_array_size(arr), N_POS);
    for (size_t i = 0; i < N_POS; i++) ids[i] = fixture_id(arr, i);
}

static void test_logits(void)
{
    float *out = malloc((size_t)N_POS * (size_t)g_vocab * sizeof *out);
    for (int which = 0; which < N_MODELS; which++) {
        struct wk_model *m = load(which);
        if (!m) continue;
        double worst_prefill = 0, worst_decode = 0;
        for (size_t p = 0; p < N_PROMPTS; p++) {
            int32_t ids[N_POS];
            prompt_ids(p, ids);
            const float *ref = g_logits + p * N_POS * (size_t)g_vocab;
            struct wk_error err;
            struct wk_context *ctx = new_context(m, 2, 512, false);
            CHECK_EQ_INT(wk_context_decode_all(ctx, ids, N_POS, out, NULL, &err), WK_OK);
            for (int32_t t = 0; t < N_POS; t++) {
                double e = fixture_row_error(out + (size_t)t * g_vocab, ref + (size_t)t * g_vocab, g_vocab, NULL, 0);
                if (!(e <= REL_TOL))
                    fprintf(stderr, "  %s prompt %zu position %d: relative error %.3g\n", g_names[which], p, t, e);
                CHECK(e <= REL_TOL);
                worst_prefill = fmax(worst_prefill, e);
            }
            wk_context_destroy(ctx);
            /* the last token alone after the others: the one-token path */
            ctx = new_context(m, 2, 512, false);
            CHECK_EQ_INT(wk_context_decode(ctx, ids, N_POS - 1, NULL, NULL, &err), WK_OK);
            CHECK_EQ_INT(wk_context_decode(ctx, ids + N_POS - 1, 1, out, NULL, &err), WK_OK);
            double e = fixture_row_error(out, ref + (size_t)(N_POS - 1) * g_vocab, g_vocab, NULL, 0);
            CHECK(e <= REL_TOL);
            worst_decode = fmax(worst_decode, e);
            wk_context_destroy(ctx);
        }
        printf("  %-16s max relative logits error: prefill %.3g, one-token decode %.3g (tolerance %g)\n",
               g_names[which], worst_prefill, worst_decode, REL_TOL);
        wk_model_destroy(m);
    }
    free(out);
}

static void test_greedy(void)
{
    float *out = malloc((size_t)g_vocab * sizeof *out);
    for (int which = 0; which < N_MODELS; which++) {
        struct wk_model *m = load(which);
        if (!m) continue;
        for (size_t p = 0; p < N_PROMPTS; p++) {
            int32_t ids[N_POS];
            prompt_ids(p, ids);
            json_t *want = json_array_get(json_object_get(g_ref, "greedy"), p);
            struct wk_context *ctx = new_context(m, 2, 512, false);
            struct wk_error err;
            CHECK_EQ_INT(wk_context_decode(ctx, ids, N_POS, out, NULL, &err), WK_OK);
            int same = 0;
            for (size_t s = 0; s < json_array_size(want); s++) {
                int32_t id = fixture_argmax(out, g_vocab);
                if (id != fixture_id(want, s)) {
                    fprintf(stderr, "  %s prompt %zu step %zu: wick %d, transformers %d\n", g_names[which], p, s,
                            id, fixture_id(want, s));
                    break;
                }
                same++;
                CHECK_EQ_INT(wk_context_decode(ctx, &id, 1, out, NULL, &err), WK_OK);
            }
            CHECK_EQ_INT(same, N_POS);
            wk_context_destroy(ctx);
        }
        wk_model_destroy(m);
    }
    free(out);
}

/* wk_context_verify of 5 tokens after a prompt: the bits of 5 one-token
 * steps, on 1-3 threads, with the 5 in one chunk or in chunks of 2; and
 * the cache it leaves is the steps' cache. */
static void test_verify_equals_steps(void)
{
    struct wk_model *m = load(0);
    if (!m) return;
    int32_t ids[N_POS];
    prompt_ids(0, ids);
    const int32_t draft[5] = {17, 280, 3, 299, 42};
    const int V = g_vocab;
    float *steps = malloc((size_t)V * 5 * 4), *ver = malloc((size_t)V * 5 * 4);
    for (int th = 1; th <= 3; th++)
        for (int ub = 512; ub >= 2; ub = ub == 512 ? 2 : 0) {
            struct wk_context *a = new_context(m, th, ub, false), *b = new_context(m, th, ub, false);
            CHECK_EQ_INT(wk_context_decode(a, ids, 12, NULL, NULL, NULL), WK_OK);
            CHECK_EQ_INT(wk_context_decode(b, ids, 12, NULL, NULL, NULL), WK_OK);
            for (int i = 0; i < 5; i++)
                CHECK_EQ_INT(wk_context_decode(a, &draft[i], 1, steps + (size_t)i * V, NULL, NULL), WK_OK);
            CHECK_EQ_INT(wk_context_verify(b, draft, 5, ver, NULL, NULL), WK_OK);
            for (int i = 0; i < 5; i++)
                if (memcmp(steps + (size_t)i * V, ver + (size_t)i * V, (size_t)V * 4) != 0) {
                    fprintf(stderr, "  threads=%d n_ubatch=%d token %d: verify differs from the step (%.3g)\n", th,
                            ub, i, fixture_row_error(ver + (size_t)i * V, steps + (size_t)i * V, V, NULL, 0));
                    CHECK(0);
                }
            CHECK_EQ_INT(wk_context_decode(a, ids, 3, steps, NULL, NULL), WK_OK);
            CHECK_EQ_INT(wk_context_decode(b, ids, 3, ver, NULL, NULL), WK_OK);
            CHECK(memcmp(steps, ver, (size_t)V * 4) == 0);
            wk_context_destroy(a), wk_context_destroy(b);
        }
    free(steps), free(ver);
    wk_model_destroy(m);
}

/* The compressed cache (kv_lora + rope a position, absorbed attention)
 * against full per-head K and V expanded from it (naive attention in
 * double): a prefill, then one-token steps, every position's logits. */
static void test_compressed_equals_uncompressed(void)
{
    for (int which = 0; which < N_MODELS; which += 1) {
        struct wk_model *m = load(which);
        if (!m) continue;
        int32_t ids[N_POS];
        prompt_ids(1, ids);
        const int V = g_vocab;
        float *a = malloc((size_t)V * N_POS * 4), *b = malloc((size_t)V * N_POS * 4);
        struct wk_context *ca = new_context(m, 2, 512, false), *cb = new_context(m, 2, 512, true);
        CHECK_EQ_INT(wk_context_decode_all(ca, ids, 20, a, NULL, NULL), WK_OK);
        CHECK_EQ_INT(wk_context_decode_all(cb, ids, 20, b, NULL, NULL), WK_OK);
        for (int t = 20; t < N_POS; t++) {
            CHECK_EQ_INT(wk_context_decode(ca, &ids[t], 1, a + (size_t)t * V, NULL, NULL), WK_OK);
            CHECK_EQ_INT(wk_context_decode(cb, &ids[t], 1, b + (size_t)t * V, NULL, NULL), WK_OK);
        }
        double worst = 0;
        for (int t = 0; t < N_POS; t++) worst = fmax(worst, fixture_row_error(a + (size_t)t * V, b + (size_t)t * V, V, NULL, 0));
        printf("  %-16s compressed vs uncompressed K/V: max relative logits difference %.3g\n", g_names[which],
               worst);
        CHECK(worst <= 1e-5);
        /* the uncompressed run is no copy of the other: it differs in the last bits somewhere */
        CHECK(memcmp(a, b, (size_t)V * N_POS * 4) != 0);
        wk_context_destroy(ca), wk_context_destroy(cb);
        free(a), free(b);
        wk_model_destroy(m);
    }
}

static const struct wk_st_tensor *ref_tensor(const char *name)
{
    const struct wk_st_tensor *t = wk_safetensors_find(g_st, name);
    CHECK(t != NULL && t->dtype == WK_ST_F32);
    return t;
}

/* transformers' Glm4MoeLiteTopkRouter on fixed hidden states: the same
 * experts in the same order (torch.topk's, ties included) and weights. */
static void test_router(void)
{
    struct wk_model *m = load(0);
    if (!m) return;
    const struct wk_hparams *hp = wk_model_hparams(m);
    const int32_t NE = hp->n_expert, K = hp->n_expert_used, E = hp->n_embd;
    static const char *const cases[2] = {"layer1", "tie"};
    int boundary_ties = 0;
    for (int ci = 0; ci < 2; ci++) {
        char name[96];
        json_t *meta = json_object_get(json_object_get(g_ref, "router"), cases[ci]);
        const int32_t n = (int32_t)json_integer_value(json_object_get(meta, "n"));
        json_t *experts = json_object_get(meta, "experts");
        snprintf(name, sizeof name, "router.%s.weight", cases[ci]);
        const struct wk_st_tensor *tw = ref_tensor(name);
        snprintf(name, sizeof name, "router.%s.bias", cases[ci]);
        const float *bias = ref_tensor(name)->data;
        snprintf(name, sizeof name, "router.%s.hidden", cases[ci]);
        const float *hidden = ref_tensor(name)->data;
        snprintf(name, sizeof name, "router.%s.logits", cases[ci]);
        const float *ref_logits = ref_tensor(name)->data;
        snprintf(name, sizeof name, "router.%s.weights", cases[ci]);
        const float *ref_w = ref_tensor(name)->data;
        if (!tw || !bias || !hidden || !ref_logits || !ref_w || tw->shape[0] != NE || tw->shape[1] != E) break;
        if (ci == 0) { /* the model's own router is the one the fixture ran */
            const struct wk_tensor *r = m->layers[1].moe.router;
            CHECK(r->dtype == WK_DTYPE_F32 && memcmp(r->data, tw->data, (size_t)NE * E * 4) == 0);
            CHECK(memcmp(m->layers[1].moe.sel_bias->data, bias, (size_t)NE * 4) == 0);
        }
        for (int32_t t = 0; t < n; t++) {
            const float *w = tw->data;
            float logits[64];
            double worst = 0;
            for (int32_t e = 0; e < NE; e++) { /* wick's logits, close to torch's */
                float d = 0;
                for (int32_t i = 0; i < E; i++) d += w[e * E + i] * hidden[t * E + i];
                logits[e] = d;
                worst = fmax(worst, fabs((double)d - ref_logits[t * NE + e]));
            }
            CHECK(worst <= 1e-5);
            /* the selection on torch's logits: exactly its experts, in its order */
            int32_t idx[16];
            float wt[16];
            wk__moe_select_sigmoid(ref_logits + t * NE, bias, NE, K, hp->expert_weights_norm,
                                   hp->expert_weights_scale, idx, wt);
            json_t *want = json_array_get(experts, (size_t)t);
            for (int32_t j = 0; j < K; j++) {
                if (idx[j] != fixture_id(want, (size_t)j))
                    fprintf(stderr, "  router %s row %d choice %d: wick expert %d, transformers %d\n", cases[ci], t, j,
                            idx[j], fixture_id(want, (size_t)j));
                CHECK_EQ_INT(idx[j], fixture_id(want, (size_t)j));
                CHECK_NEAR(wt[j], ref_w[t * K + j], 1e-6, 1e-6);
            }
            /* and on wick's own logits the same experts */
            int32_t idx2[16];
            wk__moe_select_sigmoid(logits, bias, NE, K, hp->expert_weights_norm, hp->expert_weights_scale, idx2, wt);
            for (int32_t j = 0; j < K; j++) CHECK_EQ_INT(idx2[j], idx[j]);
            /* a tie at the boundary: an expert tied with a chosen one left out */
            for (int32_t j = 0; ci == 1 && j < K; j++)
                for (int32_t e = 0; e < NE; e++) {
                    bool chosen = false;
                    for (int32_t q = 0; q < K; q++) chosen |= idx[q] == e;
                    if (!chosen && ref_logits[t * NE + e] == ref_logits[t * NE + idx[j]] && bias[e] == bias[idx[j]])
                        boundary_ties++;
                }
        }
    }
    printf("  router: %d chosen/left-out ties at the top-k boundary, resolved as torch.topk does\n", boundary_ties);
    CHECK(boundary_ties >= 3);
    /* torch's selection, not the lower index: all-equal keys */
    const float same[8] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    int32_t idx[8];
    wk__topk_torch(same, 8, 2, idx);
    CHECK(idx[0] == 6 && idx[1] == 5); /* torch.topk(torch.full((8,), .5), 2, sorted=False) */
    float wide[64];
    for (int i = 0; i < 64; i++) wide[i] = 0.5f;
    wk__topk_torch(wide, 64, 4, idx);
    CHECK(idx[0] == 42 && idx[1] == 43 && idx[2] == 44 && idx[3] == 41);
    wk_model_destroy(m);
}

static void test_chat_template(void)
{
    for (int which = 0; which < N_MODELS; which += 2) {
        struct wk_model *m = load(which);
        if (!m) continue;
        struct wk_tokenizer *tok = NULL;
        struct wk_error err;
        CHECK_EQ_INT(wk_tokenizer_for_model(m, &tok, &err), WK_OK);
        json_t *chats = json_object_get(g_ref, "chats"), *c;
        size_t k;
        CHECK(json_array_size(chats) >= 3);
        json_array_foreach(chats, k, c) fixture_check_chat(m, tok, c, false);
        /* a session asked for an f16 cache gets f32, the compressed cache's only kind */
        struct wk_context_params cp = wk_context_params_default();
        cp.n_ctx = 64, cp.n_threads = 1, cp.kv_type = WK_DTYPE_F16;
        struct wk_session *s = NULL;
        CHECK_EQ_INT(wk_session_create(m, tok, &cp, &s, &err), WK_OK);
        CHECK(s && wk_context_kv_type(wk_session_context(s)) == WK_DTYPE_F32);
        wk_session_destroy(s);
        wk_tokenizer_destroy(tok);
        wk_model_destroy(m);
    }
}

/* A copy of file src at dst with the first occurrence of `from` replaced
 * by `to` (same length): a renamed tensor or key in a GGUF or safetensors
 * header. */
static bool copy_patched(const char *src, const char *dst, const char *from, const char *to)
{
    FILE *f = fopen(src, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    bool ok = buf && fread(buf, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    size_t lf = strlen(from);
    char *hit = NULL;
    for (long i = 0; ok && !hit && i + (long)lf <= n; i++)
        if (memcmp(buf + i, from, lf) == 0) hit = buf + i;
    if (hit) memcpy(hit, to, lf);
    f = ok && hit ? fopen(dst, "wb") : NULL;
    ok = f && fwrite(buf, 1, (size_t)n, f) == (size_t)n;
    if (f) fclose(f);
    free(buf);
    return ok;
}

static void test_errors(void)
{
    char dir[] = "/tmp/wick-glm4-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char src[1200], dst[1200], cfg[1300], cmd[4000];
    struct wk_model *m = NULL;
    struct wk_error err;
    /* config.json: more experts per token than routed experts */
    model_path(0, src, sizeof src);
    snprintf(dst, sizeof dst, "%s/hf", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s'/* '%s'/", dst, src, dst);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(cfg, sizeof cfg, "%s/config.json", dst);
    json_t *c = json_load_file(cfg, 0, NULL);
    CHECK(c != NULL);
    json_object_set_new(c, "n_routed_experts", json_integer(1));
    json_dump_file(c, cfg, JSON_INDENT(1));
    CHECK_EQ_INT(wk_model_load(dst, &m, &err), WK_E_FORMAT);
    CHECK_CONTAINS(err.msg, "num_experts_per_tok 2 exceeds n_routed_experts 1");
    CHECK_CONTAINS(err.msg, "config.json");
    json_object_set_new(c, "n_routed_experts", json_integer(8));
    json_dump_file(c, cfg, JSON_INDENT(1));
    json_decref(c);
    CHECK_EQ_INT(wk_model_load(dst, &m, &err), WK_OK);
    wk_model_destroy(m);
    m = NULL;
    /* the folder without one expert's tensor */
    char st_src[1300], st_dst[1300];
    snprintf(st_src, sizeof st_src, "%s/model.safetensors", src);
    snprintf(st_dst, sizeof st_dst, "%s/model.safetensors", dst);
    CHECK(copy_patched(st_src, st_dst, "model.layers.2.mlp.experts.5.up_proj.weight",
                       "model.layers.2.mlp.experts.5.up_proj.wxight"));
    CHECK_EQ_INT(wk_model_load(dst, &m, &err), WK_E_FORMAT);
    CHECK_CONTAINS(err.msg, "missing tensor model.layers.2.mlp.experts.5.up_proj.weight");
    /* a GGUF without an expert tensor */
    char gsrc[1200], gdst[1300];
    model_path(1, gsrc, sizeof gsrc);
    snprintf(gdst, sizeof gdst, "%s/no-expert.gguf", dir);
    CHECK(copy_patched(gsrc, gdst, "blk.2.ffn_up_exps.weight", "blk.2.ffn_up_exps.wxight"));
    CHECK_EQ_INT(wk_model_load(gdst, &m, &err), WK_E_FORMAT);
    CHECK_CONTAINS(err.msg, "missing tensor blk.2.ffn_up_exps.weight");
    CHECK(copy_patched(gsrc, gdst, "blk.1.ffn_gate_exps.weight", "blk.1.ffn_gate_exps.wxight"));
    CHECK_EQ_INT(wk_model_load(gdst, &m, &err), WK_E_FORMAT);
    CHECK_CONTAINS(err.msg, "missing tensor blk.1.ffn_gate_exps.weight");
    /* a deepseek2 file whose key_length_mla was written with the other
     * convention's meaning: named, not misread */
    CHECK(copy_patched(gsrc, gdst, "deepseek2.attention.key_length_mla", "deepseek2.attention.key_length_xyz"));
    CHECK_EQ_INT(wk_model_load(gdst, &m, &err), WK_E_FORMAT);
    CHECK_CONTAINS(err.msg, "deepseek2.attention.key_length_mla");
    model_path(2, gsrc, sizeof gsrc);
    CHECK(copy_patched(gsrc, gdst, "glm4moelite.attention.key_length_mla", "glm4moelite.attention.key_length_xyz"));
    CHECK_EQ_INT(wk_model_load(gdst, &m, &err), WK_OK); /* the per-head sizes are the plain keys there */
    wk_model_destroy(m);
    m = NULL;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

int main(int argc, char **argv)
{
    const char *d = getenv("WICK_GLM4_FIXTURES");
    snprintf(g_dir, sizeof g_dir, "%s", d && *d ? d : "tests/golden/glm4-moe-lite");
    char path[1200];
    snprintf(path, sizeof path, "%s/reference.json", g_dir);
    json_error_t je;
    g_ref = json_load_file(path, 0, &je);
    if (!g_ref) {
        fprintf(stderr, "test-glm4-moe-lite: %s: %s\n", path, je.text);
        return 1;
    }
    snprintf(path, sizeof path, "%s/reference.safetensors", g_dir);
    struct wk_error err;
    if (wk_safetensors_open(path, &g_st, &err)) {
        fprintf(stderr, "test-glm4-moe-lite: %s\n", err.msg);
        return 1;
    }
    const struct wk_st_tensor *t = wk_safetensors_find(g_st, "logits");
    g_vocab = (int32_t)json_integer_value(json_object_get(g_ref, "n_vocab"));
    if (!t || t->dtype != WK_ST_F32 || t->n_dims != 3 || t->shape[0] != N_PROMPTS || t->shape[1] != N_POS ||
        t->shape[2] != g_vocab) {
        fprintf(stderr, "test-glm4-moe-lite: %s: logits is not F32 [%d, %d, %d]\n", path, N_PROMPTS, N_POS, g_vocab);
        return 1;
    }
    g_logits = t->data;
    static const struct check_test tests[] = {TEST(test_hparams),
                                              TEST(test_logits),
                                              TEST(test_greedy),
                                              TEST(test_verify_equals_steps),
                                              TEST(test_compressed_equals_uncompressed),
                                              TEST(test_router),
                                              TEST(test_chat_template),
                                              TEST(test_errors)};
    int rc = check_main(argc, argv, tests, (int)(sizeof tests / sizeof tests[0]));
    wk_safetensors_close(g_st);
    json_decref(g_ref);
    return rc;
}
