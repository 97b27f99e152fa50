/*
 * tiny_model.h - writes a tiny Gemma 3 GGUF (random F32 weights, a small
 * SentencePiece vocabulary) to a temporary file, for tests of the model and
 * runtime layers that need a real model file but not a real model.
 * Test code, header-only.
 */
#ifndef WK_TINY_MODEL_H
#define WK_TINY_MODEL_H

#include "check.h"
#include "gguf_builder.h"

#include "../../src/base/wk_base.h"
#include "../../src/model/wk_model.h"

#include <unistd.h>

struct tiny_spec {
    uint32_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_vocab, sliding_window;
    uint64_t seed;
};

static inline struct tiny_spec tiny_spec_default(void)
{
    return (struct tiny_spec){.n_embd = 32, .n_layer = 2, .n_head = 4, .n_head_kv = 2,
                              .head_dim = 8, .n_ff = 64, .n_vocab = 300, .sliding_window = 0,
                              .seed = 1};
}

struct tiny_tensor {
    char name[64];
    uint64_t ne[2];
    uint32_t n_dims;
    bool norm;
};

static inline void tiny_add(struct tiny_tensor *ts, int *n, const char *name, uint64_t a,
                            uint64_t b, uint32_t n_dims, bool norm)
{
    struct tiny_tensor *t = &ts[(*n)++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ne[0] = a;
    t->ne[1] = b;
    t->n_dims = n_dims;
    t->norm = norm;
}

/* Writes the model to a fresh temporary file and returns its path (static
 * buffer per call site is not needed: the caller owns `path`). */
static inline void tiny_model_write(const struct tiny_spec *sp, char *path, size_t path_size)
{
    struct tiny_tensor ts[256];
    int n = 0;
    const uint64_t E = sp->n_embd, D = sp->head_dim, F = sp->n_ff;
#define T2(nm, a, b, nrm) tiny_add(ts, &n, nm, a, b, 2, nrm)
#define T1(nm, a) tiny_add(ts, &n, nm, a, 1, 1, true)
    T2("token_embd.weight", E, sp->n_vocab, false);
    T1("output_norm.weight", E);
    for (uint32_t l = 0; l < sp->n_layer; l++) {
        char b[64];
#define NM(s) (snprintf(b, sizeof b, "blk.%u.%s", l, s), b)
        T1(NM("attn_norm.weight"), E);
        T2(NM("attn_q.weight"), E, sp->n_head * D, false);
        T2(NM("attn_k.weight"), E, sp->n_head_kv * D, false);
        T2(NM("attn_v.weight"), E, sp->n_head_kv * D, false);
        T2(NM("attn_output.weight"), sp->n_head * D, E, false);
        T1(NM("attn_q_norm.weight"), D);
        T1(NM("attn_k_norm.weight"), D);
        T1(NM("post_attention_norm.weight"), E);
        T1(NM("ffn_norm.weight"), E);
        T2(NM("ffn_gate.weight"), E, F, false);
        T2(NM("ffn_up.weight"), E, F, false);
        T2(NM("ffn_down.weight"), F, E, false);
        T1(NM("post_ffw_norm.weight"), E);
#undef NM
    }
#undef T1
#undef T2
    struct gb b = {0};
    uint32_t n_kv = sp->sliding_window ? 14 : 13;
    gb_header(&b, 3, (uint64_t)n, n_kv);
    gb_kv_str(&b, "general.architecture", "gemma3");
    gb_kv_u32(&b, "gemma3.embedding_length", sp->n_embd);
    gb_kv_u32(&b, "gemma3.block_count", sp->n_layer);
    gb_kv_u32(&b, "gemma3.feed_forward_length", sp->n_ff);
    gb_kv_u32(&b, "gemma3.attention.head_count", sp->n_head);
    gb_kv_u32(&b, "gemma3.attention.head_count_kv", sp->n_head_kv);
    gb_kv_u32(&b, "gemma3.attention.key_length", sp->head_dim);
    gb_kv_u32(&b, "gemma3.attention.value_length", sp->head_dim);
    gb_kv_u32(&b, "gemma3.context_length", 4096);
    if (sp->sliding_window) gb_kv_u32(&b, "gemma3.attention.sliding_window", sp->sliding_window);
    gb_kv_f32(&b, "gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
    /* a minimal vocabulary: n_vocab pieces, the first three control */
    gb_str(&b, "tokenizer.ggml.model");
    gb_u32(&b, 8);
    gb_str(&b, "llama");
    WK_ASSERT(sp->n_vocab >= 260);
    gb_str(&b, "tokenizer.ggml.tokens");
    gb_u32(&b, 9);
    gb_u32(&b, 8);
    gb_u64(&b, sp->n_vocab);
    for (uint32_t i = 0; i < sp->n_vocab; i++) {
        char t[16];
        if (i < 3) snprintf(t, sizeof t, "%s", i == 0 ? "<pad>" : i == 1 ? "<eos>" : "<bos>");
        else if (i < 259) snprintf(t, sizeof t, "<0x%02X>", i - 3);
        else snprintf(t, sizeof t, "t%u", i);
        gb_str(&b, t);
    }
    gb_str(&b, "tokenizer.ggml.token_type");
    gb_u32(&b, 9);
    gb_u32(&b, 5);
    gb_u64(&b, sp->n_vocab);
    for (uint32_t i = 0; i < sp->n_vocab; i++) {
        int32_t ty = i < 3 ? 3 : i < 259 ? 6 : 1;
        gb_bytes(&b, &ty, 4);
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        gb_tensor_info(&b, ts[i].name, ts[i].n_dims, ts[i].ne, 0, off);
        off += ts[i].ne[0] * ts[i].ne[1] * 4;
        off = (off + 31) / 32 * 32;
    }
    gb_pad(&b, 32);
    uint64_t seed = sp->seed;
    size_t base = b.n;
    for (int i = 0; i < n; i++) {
        while ((b.n - base) % 32) gb_u8(&b, 0);
        for (uint64_t j = 0; j < ts[i].ne[0] * ts[i].ne[1]; j++)
            gb_f32(&b, ts[i].norm ? 1.0f + 0.1f * check_rand_f32(&seed) : 0.3f * check_rand_f32(&seed));
    }
    snprintf(path, path_size, "/tmp/wick-tiny-XXXXXX");
    int fd = mkstemp(path);
    WK_ASSERT(fd >= 0);
    WK_ASSERT(write(fd, b.p, b.n) == (ssize_t)b.n);
    close(fd);
    free(b.p);
}

/* Writes the model, loads it, and removes the file (the loaded copy stays
 * valid); exits the test binary when it does not load. */
static inline struct wk_model *tiny_model_load(const struct tiny_spec *sp)
{
    char path[64];
    tiny_model_write(sp, path, sizeof path);
    struct wk_model *m = NULL;
    struct wk_error err;
    if (wk_model_load(path, &m, &err)) {
        fprintf(stderr, "  cannot load the tiny model: %s\n", err.msg);
        exit(1);
    }
    unlink(path);
    return m;
}

/* A context of n_ctx 64 on m with the threads, ubatch and sequences
 * given (the test fails when it cannot be made). */
static inline struct wk_context *tiny_context(struct wk_model *m, int n_threads, int n_ubatch, int n_seq)
{
    struct wk_context_params p = wk_context_params_default();
    p.n_ctx = 64;
    p.n_threads = n_threads;
    p.n_ubatch = n_ubatch;
    p.n_seq_max = n_seq;
    struct wk_context *c = NULL;
    CHECK_EQ_INT(wk_context_create(m, &p, &c, NULL), WK_OK);
    return c;
}

#endif
