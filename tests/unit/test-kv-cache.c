/*
 * test-kv-cache.c - the F16 and Q8_0 KV caches (wk_context_params.kv_type) at the
 * CPU backend's level, for every kernel table this CPU runs:
 * - f32 to f16 (quantize[WK_DTYPE_F16], the cache's writes) rounds as the
 *   reference wk_f32_to_f16 does, which rounds to nearest even from first
 *   principles (halfway cases, subnormals, overflow to infinity: values
 *   worked out by hand below);
 * - kv_write puts each key and value where the layout says (backend.h,
 *   struct wk_attn_args, values transposed or in blocks of WK_KV_VBLK
 *   slots), rounded in F16; kv_copy copies a sequence's stripe;
 * - the same for a Q8_0 cache (its codes and f16 scales: each 32 entries
 *   of a slot's key or value vector in a kv head quantized as the
 *   reference q8_0 quantizer does), D 64 and 96;
 * - attention over an F16 or Q8_0 cache, and over values in blocks (F32,
 *   F16, Q8_0), gives bit for bit what it gives over an F32 cache with the
 *   values transposed holding the same (rounded) values: decode (one sequence,
 *   with its heads grouped, within one block and over two, and two
 *   sequences), a prefill with its keys packed, a prefill of two sequences
 *   in one ubatch, and a sliding-window ring whose keys wrap, each decode
 *   and prefill; and that cache's result against attention computed in
 *   double from its definition.
 */
#include "check.h"

#include "../../src/cpu/wk_cpu.h"
#include "../../src/model/backend.h"

#include <math.h>

static const char *const g_isas[] = {"ref", "avx2", "avx512"};

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Half-precision rounding: values whose f16 is known by hand. */
static void test_f16_rounding(void)
{
    static const struct {
        float x;
        uint16_t h;
    } cases[] = {
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
        {1.0f, 0x3c00},
        {-2.0f, 0xc000},
        {65504.0f, 0x7bff},                 /* the largest half */
        {65519.0f, 0x7bff},                 /* below halfway to 65536: down */
        {65520.0f, 0x7c00},                 /* halfway, odd mantissa: up, to infinity */
        {1e9f, 0x7c00},
        {1.0f + 1.0f / 2048, 0x3c00},       /* halfway between 1 and 1 + 2^-10: to even (1) */
        {1.0f + 3.0f / 2048, 0x3c02},       /* halfway between 1 + 2^-10 and 1 + 2^-9: to even */
        {1.0f + 1.0f / 4096, 0x3c00},       /* below halfway: down */
        {0x1p-24f, 0x0001},                 /* the smallest subnormal */
        {0x1p-25f, 0x0000},                 /* halfway to it: to even, zero */
        {0x1.8p-25f, 0x0001},               /* past halfway: up */
        {0x1.8p-24f, 0x0002},               /* 1.5 units: to even, 2 */
        {0x1p-14f, 0x0400},                 /* the smallest normal */
        {0x1.ff8p-15f, 0x03ff},             /* the largest subnormal, 1023 units */
        {0x1.ffcp-15f, 0x0400},             /* 1023.5 units: to even, out of the subnormals */
        {-0x1p-20f, 0x8010},
    };
    for (size_t i = 0; i < WK_ARRAY_LEN(cases); i++) CHECK_EQ_INT(wk_f32_to_f16(cases[i].x), cases[i].h);
    /* and back, exactly */
    CHECK(isinf(wk_f16_to_f32(0x7c00)) && wk_f16_to_f32(0x3c02) == 1.0f + 2.0f / 1024);
    CHECK(wk_f16_to_f32(0x0001) == 0x1p-24f && wk_f16_to_f32(0x8010) == -0x1p-20f && wk_f16_to_f32(0x7bff) == 65504.0f);

    /* each table's row conversion against the reference, at every length
     * up to 40 (vector bodies and tails), on the cases and random values */
    uint64_t seed = 7;
    float x[40];
    for (size_t ii = 0; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *k = wk_cpu_kernels_for(g_isas[ii]);
        if (!k) continue;
        CHECK(k->quantize[WK_DTYPE_F16] != NULL);
        for (int n = 1; n <= 40; n++) {
            for (int i = 0; i < n; i++)
                x[i] = i < (int)WK_ARRAY_LEN(cases) && n % 2 ? cases[i].x
                                                              : check_rand_f32(&seed) * from_bits(0x3f800000u + (uint32_t)(i % 24 - 12) * (1u << 23));
            wk_f16 h[40 + 8];
            for (int i = 0; i < 48; i++) h[i] = 0x5555;
            k->quantize[WK_DTYPE_F16](x, h, n);
            for (int i = 0; i < n; i++) CHECK_EQ_INT(h[i], wk_f32_to_f16(x[i]));
            CHECK_EQ_INT(h[n], 0x5555); /* nothing written past n */
        }
    }
}

/* Shapes of the test's caches (S slots; blocked values SB, whole blocks)
 * and its ring (RS slots, window RW). */
enum { NSEQ = 2, NH = 6, NKV = 2, S = 104, SB = 128, RS = 24, RW = 16, NCTX = 128, NPOS = 100 };

static void caches_init(struct wk_kv_cache *c, enum wk_dtype t, int64_t slots, int32_t v_blk, int D)
{
    const size_t es = (size_t)wk_kv_elem_bytes(t), n = (size_t)NSEQ * (size_t)slots * NKV * (size_t)D;
    *c = (struct wk_kv_cache){.k = wk_aligned_alloc(n * es), .v = wk_aligned_alloc(n * es), .type = t,
                              .n_slots = slots, .v_blk = v_blk};
    memset(c->k, 0, n * es), memset(c->v, 0, n * es);
    if (t != WK_DTYPE_Q8_0) return;
    c->ks = wk_aligned_alloc(n / WK_KV_Q8_GROUP * 2), c->vs = wk_aligned_alloc(n / WK_KV_Q8_GROUP * 2);
    memset(c->ks, 0, n / WK_KV_Q8_GROUP * 2), memset(c->vs, 0, n / WK_KV_Q8_GROUP * 2);
}

static void caches_free(struct wk_kv_cache *c)
{
    wk_aligned_free(c->k), wk_aligned_free(c->v), wk_aligned_free(c->ks), wk_aligned_free(c->vs);
}

struct be {
    struct wk_threadpool *pool;
    struct wk_backend_cpu cpu;
    float *scores, *pv, *cvt, *kpack;
};

static void be_init(struct be *b, const struct wk_cpu_kernels *k, int D, bool pack)
{
    CHECK_EQ_INT(wk_threadpool_create(2, &b->pool), WK_OK);
    b->scores = wk_aligned_alloc((size_t)2 * ATTN_QBLOCK * NCTX * 4);
    b->pv = wk_aligned_alloc((size_t)2 * ATTN_QBLOCK * (size_t)D * 4);
    wk__backend_cpu_init(&b->cpu, b->pool, k, NULL, b->scores, b->pv, NCTX, D);
    const bool can = pack && k->gemm_f32_pack && k->gemm_f32_packed_min_n > 0;
    const size_t kf = can ? NKV * k->gemm_f32_pack_floats(NCTX, D) : 0;
    const size_t vf = can && k->gemm_f32_prepacked_cols ? NKV * k->gemm_f32_pack_floats(D, NCTX) : 0;
    b->kpack = kf ? wk_aligned_alloc((kf + vf) * 4) : NULL;
    b->cpu.kpack = b->kpack, b->cpu.kpack_rows = kf ? NCTX : 0, b->cpu.vpack = vf ? b->kpack + kf : NULL;
    b->cpu.cvt_floats = wk_attn_cvt_floats(NCTX, D, kf ? NCTX : 0, vf > 0);
    b->cvt = wk_aligned_alloc((size_t)2 * b->cpu.cvt_floats * 4);
    b->cpu.cvt = b->cvt;
}

static void be_free(struct be *b)
{
    wk_threadpool_destroy(b->pool);
    wk_aligned_free(b->scores), wk_aligned_free(b->pv), wk_aligned_free(b->cvt), wk_aligned_free(b->kpack);
}

/* Writes positions 0 .. n-1 of sequence s (rows k, v [n][NKV·D]), at most
 * the cache's slots at a time (a ring's slots are positions modulo it). */
static void write_seq(struct be *b, const struct wk_kv_cache *c, int D, int s, int n, const float *k, const float *v)
{
    const int64_t hk = NKV * D;
    int32_t pos[NCTX], seq[NCTX];
    for (int p0 = 0; p0 < n; p0 += (int)c->n_slots) {
        const int m = WK_MIN((int)c->n_slots, n - p0);
        for (int i = 0; i < m; i++) pos[i] = p0 + i, seq[i] = s;
        b->cpu.base.ops->kv_write(&b->cpu.base, c, hk, D, m, pos, seq, k + p0 * hk, v + p0 * hk);
    }
}

/* One attention call: rows at pos/seq in blocks (t0, nq), over c. */
static void attend(struct be *b, const struct wk_kv_cache *c, int D, int window, int n, const int32_t *pos,
                   const int32_t *seq, int n_blk, const int32_t *t0, const int32_t *nq, const float *q, float *out)
{
    int32_t seq_hi[NSEQ] = {0, 0};
    const struct wk_attn_args a = {.q = q, .out = out, .k = c->k, .v = c->v, .ks = c->ks, .vs = c->vs,
                                   .kv_type = c->type, .n_slots = c->n_slots,
                                   .v_blk = c->v_blk,
                                   .n_head = NH, .n_head_kv = NKV, .head_dim = D, .n_rows = n, .pos = pos,
                                   .seq = seq, .blk_t0 = t0, .blk_nq = nq, .n_blk = n_blk, .window = window,
                                   .seq_hi = seq_hi};
    memset(out, 0, (size_t)n * NH * (size_t)D * 4);
    b->cpu.base.ops->attention(&b->cpu.base, &a);
}

/* Row r's attention (its head h) in double, from the definition over the
 * rounded values kr, vr of its sequence: positions lo .. pos. */
static double worst_against_double(int D, int n, const int32_t *pos, const int32_t *seq, int window,
                                   const float *q, const float *out, const float *kr, const float *vr)
{
    double worst = 0;
    for (int r = 0; r < n; r++)
        for (int h = 0; h < NH; h++) {
            const int g = h / (NH / NKV), lo = window > 0 && pos[r] - window + 1 > 0 ? pos[r] - window + 1 : 0;
            double sc[NCTX], mx = -1e300, sum = 0;
            for (int j = lo; j <= pos[r]; j++) {
                double d = 0;
                for (int e = 0; e < D; e++)
                    d += (double)q[(r * NH + h) * D + e] * kr[((size_t)seq[r] * NCTX + j) * NKV * D + g * D + e];
                sc[j] = d, mx = d > mx ? d : mx;
            }
            for (int j = lo; j <= pos[r]; j++) sc[j] = exp(sc[j] - mx), sum += sc[j];
            for (int e = 0; e < D; e++) {
                double o = 0;
                for (int j = lo; j <= pos[r]; j++) o += sc[j] / sum * vr[((size_t)seq[r] * NCTX + j) * NKV * D + g * D + e];
                worst = fmax(worst, fabs(o - out[(r * NH + h) * D + e]));
            }
        }
    return worst;
}

/* x [n] as a cache of type lt holds it: each value rounded to f16, or
 * (Q8_0) each 32 consecutive values (one position's entries of one kv
 * head: D is a multiple of 32) quantized and dequantized as ggml's q8_0
 * (the reference quantization, wk_ref_q8_0_*; tests/unit/test-quant
 * checks those against gguf-py's). */
static void round_as(enum wk_dtype lt, const float *x, float *r, size_t n)
{
    if (lt == WK_DTYPE_F16) {
        for (size_t i = 0; i < n; i++) r[i] = wk_f16_to_f32(wk_f32_to_f16(x[i]));
        return;
    }
    struct wk_block_q8_0 b;
    for (size_t i = 0; i < n; i += 32) wk_ref_q8_0_from_f32(x + i, &b, 32), wk_ref_q8_0_to_f32(&b, r + i, 32);
}

/* Entry e of a cache of type lt (F16 or Q8_0) as the float it holds: s
 * the index of its scale (Q8_0). */
static float held(const struct wk_kv_cache *c, bool value, int64_t e, int64_t s)
{
    if (c->type == WK_DTYPE_F16) return wk_f16_to_f32(((const wk_f16 *)(value ? c->v : c->k))[e]);
    return (float)((const int8_t *)(value ? c->v : c->k))[e] * wk_f16_to_f32((value ? c->vs : c->ks)[s]);
}

static void test_attention_bits(const struct wk_cpu_kernels *k, int D, enum wk_dtype lt)
{
    const int64_t hk = NKV * D;
    const size_t nkv = (size_t)NSEQ * NCTX * (size_t)hk;
    float *kx = malloc(nkv * 4), *vx = malloc(nkv * 4), *kr = malloc(nkv * 4), *vr = malloc(nkv * 4);
    float *q = malloc((size_t)16 * NH * D * 4), *o16 = malloc((size_t)16 * NH * D * 4);
    float *o32 = malloc((size_t)16 * NH * D * 4);
    uint64_t seed = 99 + (uint64_t)D;
    for (size_t i = 0; i < nkv; i++) kx[i] = check_rand_f32(&seed) * 1.5f, vx[i] = check_rand_f32(&seed) * 3.0f;
    round_as(lt, kx, kr, nkv), round_as(lt, vx, vr, nkv);
    for (int i = 0; i < 16 * NH * D; i++) q[i] = check_rand_f32(&seed) * 0.5f;
    int n_rounded = 0; /* rounding changed some values: the two caches hold what they should */
    for (size_t i = 0; i < nkv; i++) n_rounded += kr[i] != kx[i];
    CHECK(n_rounded > (int)nkv / 2);

    struct be b;
    be_init(&b, k, D, true);
    /* full caches: F32 with the values transposed (the reference), F32 and
     * lt (F16 or Q8_0) with them in blocks, lt transposed; rings: F32 and lt */
    struct wk_kv_cache full[4], r32, r16;
    caches_init(&full[0], WK_DTYPE_F32, S, 0, D), caches_init(&full[1], WK_DTYPE_F32, SB, WK_KV_VBLK, D);
    caches_init(&full[2], lt, SB, WK_KV_VBLK, D), caches_init(&full[3], lt, S, 0, D);
    caches_init(&r32, WK_DTYPE_F32, RS, 0, D), caches_init(&r16, lt, RS, 0, D);
    const char *const kind[4] = {"F32", "F32 blocked", lt == WK_DTYPE_F16 ? "F16 blocked" : "Q8_0 blocked",
                                 wk_dtype_name(lt)};
    for (int s = 0; s < NSEQ; s++) {
        const size_t o = (size_t)s * NCTX * (size_t)hk;
        for (int c = 0; c < 4; c++) {
            const bool h = full[c].type == lt;
            write_seq(&b, &full[c], D, s, NPOS, (h ? kx : kr) + o, (h ? vx : vr) + o);
        }
        write_seq(&b, &r16, D, s, 36, kx + o, vx + o), write_seq(&b, &r32, D, s, 36, kr + o, vr + o);
    }
    /* each cache holds each value (rounded as lt rounds it) where the
     * layout puts it: sequence 1, position 77 (block 1), kv head 1,
     * dimension 5 (Q8_0: its scales where wk_kv_ks_index, wk_kv_vs_index
     * say) */
    {
        const int64_t e = 5, pos = 77, g = 1, src = ((int64_t)NCTX + pos) * hk + g * D + e;
        const int64_t ke = S * hk + g * S * D + pos * D + e, ve = S * hk + (g * D + e) * S + pos;
        CHECK(held(&full[3], false, ke, wk_kv_ks_index(ke)) == kr[src]);
        CHECK(held(&full[3], true, ve, wk_kv_vs_index(S, hk, 1, g * D + e, pos)) == vr[src]);
        CHECK(((float *)full[0].k)[ke] == kr[src]);
        CHECK(((float *)full[0].v)[ve] == vr[src]);
        const int64_t vb = SB * hk + (pos / WK_KV_VBLK) * hk * WK_KV_VBLK + (g * D + e) * WK_KV_VBLK + pos % WK_KV_VBLK;
        CHECK_EQ_INT(wk_kv_v_index(SB, WK_KV_VBLK, hk, 1, g * D + e, pos), vb);
        CHECK(((float *)full[1].v)[vb] == vr[src]);
        CHECK(held(&full[2], true, vb, wk_kv_vs_index(SB, hk, 1, g * D + e, pos)) == vr[src]);
        CHECK_EQ_INT(wk_kv_vs_index(SB, hk, 1, g * D + e, pos), (hk / 32 + (g * D + e) / 32) * SB + pos);
    }

    struct {
        const char *name;
        bool ring;
        int n, n_blk;
        int32_t pos[16], seq[16], t0[4], nq[4];
    } sc[] = {
        {"decode, one sequence (heads grouped)", false, 1, 1, {97}, {1}, {0}, {1}},
        {"decode, one sequence, one block", false, 1, 1, {40}, {0}, {0}, {1}},
        {"decode, two sequences", false, 2, 2, {99, 70}, {0, 1}, {0, 1}, {1, 1}},
        {"prefill, keys packed", false, 16, 2, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {0}, {0, 8}, {8, 8}},
        {"prefill, two sequences", false, 13, 2, {60, 61, 62, 63, 64, 65, 66, 67, 80, 81, 82, 83, 84},
         {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}, {0, 8}, {8, 5}},
        {"decode, ring wrapped", true, 1, 1, {35}, {0}, {0}, {1}},
        {"prefill, ring wrapped", true, 4, 1, {32, 33, 34, 35}, {1, 1, 1, 1}, {0}, {4}},
    };
    for (size_t i = 0; i < WK_ARRAY_LEN(sc); i++) {
        const int w = sc[i].ring ? RW : 0;
        const struct wk_kv_cache *ref = sc[i].ring ? &r32 : &full[0];
        attend(&b, ref, D, w, sc[i].n, sc[i].pos, sc[i].seq, sc[i].n_blk, sc[i].t0, sc[i].nq, q, o32);
        for (int c = 1; c < (sc[i].ring ? 2 : 4); c++) {
            attend(&b, sc[i].ring ? &r16 : &full[c], D, w, sc[i].n, sc[i].pos, sc[i].seq, sc[i].n_blk, sc[i].t0,
                   sc[i].nq, q, o16);
            const bool same = memcmp(o16, o32, (size_t)sc[i].n * NH * D * 4) == 0;
            if (!same)
                fprintf(stderr, "%s, D %d, %s: %s and F32 caches differ\n", k->isa, D, sc[i].name,
                        sc[i].ring ? wk_dtype_name(lt) : kind[c]);
            CHECK(same);
        }
        const double worst = worst_against_double(D, sc[i].n, sc[i].pos, sc[i].seq, w, q, o32, kr, vr);
        if (worst > 2e-5) fprintf(stderr, "%s, D %d, %s: %.3g from the double-precision attention\n", k->isa, D,
                                  sc[i].name, worst);
        CHECK(worst <= 2e-5);
    }

    /* kv_copy: sequence 0's first 70 slots into sequence 1 (lt transposed;
     * lt blocked: whole blocks), each entry as the float it holds */
    b.cpu.base.ops->kv_copy(&b.cpu.base, &full[3], hk, D, 0, 1, 70);
    for (int64_t g = 0; g < NKV; g++)
        for (int64_t j = 0; j < 70 * D; j++) {
            const int64_t e0 = g * S * D + j, e1 = S * hk + e0;
            CHECK(held(&full[3], false, e1, wk_kv_ks_index(e1)) == held(&full[3], false, e0, wk_kv_ks_index(e0)));
        }
    for (int64_t i = 0; i < hk; i++)
        for (int64_t j = 0; j < 71; j++) {
            const float v1 = held(&full[3], true, S * hk + i * S + j, wk_kv_vs_index(S, hk, 1, i, j));
            const float v0 = held(&full[3], true, i * S + j, wk_kv_vs_index(S, hk, 0, i, j));
            CHECK(j < 70 ? v1 == v0 : i > 0 || v1 != v0); /* slot 70 not copied (they differ) */
        }
    b.cpu.base.ops->kv_copy(&b.cpu.base, &full[2], hk, D, 0, 1, 70);
    for (int64_t i = 0; i < hk; i++)
        for (int64_t j = 0; j < 70; j++)
            CHECK(held(&full[2], true, wk_kv_v_index(SB, WK_KV_VBLK, hk, 1, i, j), wk_kv_vs_index(SB, hk, 1, i, j)) ==
                  held(&full[2], true, wk_kv_v_index(SB, WK_KV_VBLK, hk, 0, i, j), wk_kv_vs_index(SB, hk, 0, i, j)));

    for (int c = 0; c < 4; c++) caches_free(&full[c]);
    caches_free(&r16), caches_free(&r32);
    be_free(&b);
    free(kx), free(vx), free(kr), free(vr), free(q), free(o16), free(o32);
}

static void test_attention_f16_as_f32(void)
{
    for (size_t ii = 0; ii < WK_ARRAY_LEN(g_isas); ii++) {
        const struct wk_cpu_kernels *k = wk_cpu_kernels_for(g_isas[ii]);
        if (!k) continue;
        test_attention_bits(k, 64, WK_DTYPE_F16);
        test_attention_bits(k, 40, WK_DTYPE_F16);
        test_attention_bits(k, 64, WK_DTYPE_Q8_0);
        test_attention_bits(k, 96, WK_DTYPE_Q8_0);
    }
}

CHECK_MAIN(TEST(test_f16_rounding), TEST(test_attention_f16_as_f32))
