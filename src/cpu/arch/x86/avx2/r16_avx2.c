/*
 * r16_avx2.c - the R16 dtypes (repack.c: Q4_K_R16, Q6_K_R16, Q4_1_R16,
 * Q5_0_R16, Q8_0_R16) on AVX2: the table's r16_prepare and, for each,
 * vec_dot_rows_x16, vec_dot_rows_x16_tokens, vec_dot_rows_r16,
 * vec_dot_rows_r16_tokens and gemm_r16 (wk_cpu.h). With them the loader
 * repacks Q4_K, Q6_K, Q4_1, Q5_0 and Q8_0 matrices (backend_cpu.c);
 * decode reads them with x prepared once per
 * thread and matmul, and prefill, batched decode and verification run an
 * integer GEMM over them instead of dequantizing tiles to f32 for the f32
 * GEMM. AVX2 + FMA + F16C. Spec: rows_x16_ref.c (the x16 dot).
 *
 * Why an integer GEMM pays on AVX2 (measured on the AMD EPYC Zen 3 of
 * this project, one core, register-only loops): vpmaddwd issues two a
 * cycle like the FMA, but multiplies 16 int16 pairs where an FMA
 * multiplies 8 floats; with its vpaddd, 5.2 G pairs a second against
 * 6.4 G FMAs, so 83 against 51 G multiply-adds a second. (An earlier
 * note measured one vpmaddwd a cycle: a loop bound by its own chain.)
 *
 * x (r16_prepare): per column chunk of WK_R16_PREP_CHUNK elements
 * (WK_R16_PREP_CHUNK_FLOATS floats), the x16 quantization of
 * rows_x16_avx2.c's K-quant rows (wk__avx2_x16k_prep): each 32-element
 * block's int16 values v = 256 hi + lo, the 16 even elements then the 16
 * odd ones, then d / 256 per block, then (d / 256) sum(v) per block
 * (Q4_K's and Q4_1's min terms); at the chunk's end 32 sum(v) per 16
 * elements as int32 (Q6_K's -32, Q5_0's -16, Q8_0's -128).
 *
 * Q4_K weights: a 64-byte vector of the group's block holds qs[32g + 4k ..
 * + 3] of 16 rows, row r's four bytes at 4r; a 32-byte half holds 8 rows,
 * one a 32-bit lane. Read as int16 lanes (two a row), an and and shifts
 * give the codes of elements (4k, 4k + 2) and (4k + 1, 4k + 3) of
 * sub-block 2g (low nibbles) and of 2g + 1 (high), already int16 pairs in
 * each row's lane. The int32 at byte 4k of x's even half is (v_4k,
 * v_4k+2) and at 32 + 4k (v_4k+1, v_4k+3): broadcast, one vpmaddwd
 * against a code vector adds two products to each of 8 rows. A row's
 * sub-block sum S = sum q v (|S| <= 32 * 15 * 32639 < 2^24) thus ends in
 * its own lane, no reduction across lanes; then per sub-block one
 * conversion and two FMAs add d sc (d_x / 256) S - dmin m (d_x / 256)
 * sum(v) to the row's float sum, in sub-block order (the rows' factors
 * d sc and dmin m computed once per super-block). Q6_K the same way per
 * 16-element scale group, the codes' -32 in integers (r16a_q6k_tile).
 *
 * Tiles: r16a_tile (Q4_K) and r16a_q6k_tile are the group's 16 rows by T
 * (1..4) tokens, the int32 sums in registers (one half's two code vectors
 * at a time); r16a_tile_many and r16a_q6k_tile_many (more than 4 tokens)
 * take up to 16 tokens against a sub-block's (scale group's) codes
 * unpacked once into L1. A row's
 * arithmetic is the same in every tile, whatever the other rows and
 * tokens, so decode (T = 1), the tokens entries and the GEMM give the
 * same bits: verification and batched decode through the GEMM equal a
 * lone decode step. A row's column chunks are added in column order.
 * Measured (`bench/gemm-r16`, one core of the Zen 3, a 1536 x 1536 Q4_K
 * matrix, 64 tokens): the GEMM 53-54 G multiply-adds a second against
 * 38.6 for dequantized tiles through the f32 GEMM; decode ~20 GB/s of
 * rows in L2/L3 against 13 for the row-major 16-bit kernel.
 */
#include "kernels_avx2.h"
#include "../prefetch_part.h"

#include <stdbool.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")

#define R16A_CHUNK WK_R16_PREP_CHUNK
#define R16A_CHUNK_FLOATS WK_R16_PREP_CHUNK_FLOATS
_Static_assert(R16A_CHUNK / 32 * 18 + R16A_CHUNK / 16 <= R16A_CHUNK_FLOATS, "the prepared chunk fits wk_cpu.h's");
#define R16A_T 4 /* tokens per register tile (the tiles have four sets of sums) */
/* tokens per many-token tile (measured: 8 -> 16 took the Q4_K GEMM from 50 to 53-54 G
 * multiply-adds a second; 24 and 32 within noise of 16) */
#define R16A_TM 16
/* groups a tile of tokens visits in turn, per column chunk (74 KB of
 * Q4_K, 108 KB of Q6_K: L2) */
#define R16A_GROUPS 4

/* Decode (one token) reads the groups as one stream of bytes, which the
 * hardware prefetchers of the Zen 3 serve at ~15 GB/s a core against ~20
 * for the several streams of the row-major kernels; prefetching this far
 * ahead by hand brings R16 decode from DRAM there too (bench/rows-bandwidth:
 * 1024 bytes ahead gave 17-18, 2048 gave 19-20, 4096 18-20 GB/s). */
#define R16A_PF 2048

/* Line l (64 bytes) of the group block at b, R16A_PF bytes ahead, for a
 * one-token tile (T == 1) whose block of gb bytes has l lines or more. */
#define r16a_prefetch(T, b, l, gb)                                                                             \
    do {                                                                                                   \
        if ((T) == 1 && 64 * (size_t)(l) < (gb)) _mm_prefetch((const char *)(b) + R16A_PF + 64 * (l), _MM_HINT_T0); \
    } while (0)

/* Several tokens (batched decode, verification, prefill): a tile of
 * tokens over a group's column chunk prefetches, spread over its blocks,
 * the chunk the same group's tile takes next (this group's next chunk, or
 * at the row's end the first chunk of the group R16A_GROUPS on) into L2:
 * left to the hardware prefetchers the tile's first pass asked for weights
 * faster than a core gets them (r16a_run). Measured only on a Zen 4 with
 * WICK_CPU=avx2 (one core, 96 MiB from memory, G multiply-adds a second):
 * Q4_K 8 tokens 40-51 -> 56, Q4_1 49-50 -> 57, Q6_K 38 -> 44 (4 tokens:
 * Q4_K +5%, Q6_K even); rows in L2 within -5..+6%. (wk_prefetch_part's
 * parts, one a block.) */

/* Where a prepared chunk keeps, for the codes' offsets (Q6_K, Q5_0,
 * Q8_0), 32 sum(v) of each 16-element half block as an int32 (its bits in
 * a float slot): the chunk's last WK_R16_PREP_CHUNK / 16 floats. */
#define R16A_S16(p) ((p) + R16A_CHUNK_FLOATS - R16A_CHUNK / 16)

/* r16_prepare: x [n] into prep [wk_cpu_r16_prep_floats(n)], chunk by
 * chunk (wk__avx2_x16k_prep, then the half-block sums). */
static void r16a_prepare(int64_t n, const float *x, float *prep)
{
    for (int64_t c0 = 0; c0 < n; c0 += R16A_CHUNK) {
        float *p = prep + (c0 / R16A_CHUNK) * R16A_CHUNK_FLOATS;
        const int64_t nc = WK_MIN(R16A_CHUNK, n - c0);
        int32_t hs[R16A_CHUNK / 16];
        wk__avx2_x16k_prep(nc, x + c0, p, hs);
        for (int64_t i = 0; i < nc / 16; i++) hs[i] *= 32; /* |.| < 2^25 */
        memcpy(R16A_S16(p), hs, (size_t)(nc / 16) * sizeof hs[0]);
    }
}

/* One token's results of a tile's 16 rows, a0 rows 0-7 and a1 rows 8-15,
 * into out[0..15] (added to what is there when add). */
ALWAYS_INLINE void r16a_out(float *out, __m256 a0, __m256 a1, bool add)
{
    if (add) a0 = _mm256_add_ps(_mm256_loadu_ps(out), a0), a1 = _mm256_add_ps(_mm256_loadu_ps(out + 8), a1);
    _mm256_storeu_ps(out, a0);
    _mm256_storeu_ps(out + 8, a1);
}

/* The 6-bit scale and min of sub-block j (0..7) of 8 rows (wk_q4_k_scale_min),
 * from their scale bytes 0-3 (w0), 4-7 (w1) and 8-11 (w2), one row a lane. */
ALWAYS_INLINE void r16a_scale_min(int j, __m256i w0, __m256i w1, __m256i w2, __m256 *sc, __m256 *m)
{
    const __m256i m6 = _mm256_set1_epi32(63), l4 = _mm256_set1_epi32(0x0F), h2 = _mm256_set1_epi32(0x30);
    __m256i s, n;
    if (j < 4) {
        s = _mm256_and_si256(_mm256_srli_epi32(w0, 8 * j), m6);
        n = _mm256_and_si256(_mm256_srli_epi32(w1, 8 * j), m6);
    } else {
        const int o = 8 * (j - 4);
        s = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, o), l4),
                            _mm256_and_si256(_mm256_srli_epi32(w0, o + 2), h2));
        n = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, o + 4), l4),
                            _mm256_and_si256(_mm256_srli_epi32(w1, o + 2), h2));
    }
    *sc = _mm256_cvtepi32_ps(s);
    *m = _mm256_cvtepi32_ps(n);
}

/* The factors d sc_j and dmin m_j of the 8 sub-blocks of the 16 rows of
 * the Q4_K_R16 block at b (half h's 8 rows in f[h][j], fm[h][j]). */
ALWAYS_INLINE void r16a_q4k_factors(const uint8_t *b, __m256 f[2][8], __m256 fm[2][8])
{
    UNROLL
    for (int h = 0; h < 2; h++) {
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + 16 * h)));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + 32 + 16 * h)));
        const __m256i w0 = _mm256_loadu_si256((const __m256i *)(b + 64 + 32 * h));
        const __m256i w1 = _mm256_loadu_si256((const __m256i *)(b + 128 + 32 * h));
        const __m256i w2 = _mm256_loadu_si256((const __m256i *)(b + 192 + 32 * h));
        UNROLL
        for (int j = 0; j < 8; j++) {
            __m256 sc, mn;
            r16a_scale_min(j, w0, w1, w2, &sc, &mn);
            f[h][j] = _mm256_mul_ps(d, sc);
            fm[h][j] = _mm256_mul_ps(dmin, mn);
        }
    }
}

/*
 * One step of the register tiles (r16a_tile, r16a_q6k_tile): half h's two
 * code vectors e and od against every token's x pairs at byte o of its
 * line (l0..l3), into the tile's named int32 sums s<h><t>. A macro over
 * the tiles' local names, so the sums stay named variables. The empty asm
 * keeps each sum one chain in a register: GCC otherwise reassociates the
 * unrolled integer adds into a tree whose temporaries spill.
 */
#define R16A_TOKEN(S, L)                                                                                   \
    do {                                                                                                   \
        S = _mm256_add_epi32(S, _mm256_madd_epi16(e, _mm256_castps_si256(_mm256_broadcast_ss((const float *)(L + o))))); \
        S = _mm256_add_epi32(S, _mm256_madd_epi16(od, _mm256_castps_si256(_mm256_broadcast_ss((const float *)(L + o + 32))))); \
        __asm__("" : "+x"(S));                                                                             \
    } while (0)
#define R16A_TOKENS(h)                                                                                     \
    do {                                                                                                   \
        if ((h) == 0) {                                                                                    \
            R16A_TOKEN(s00, l0);                                                                           \
            if (T > 1) R16A_TOKEN(s01, l1);                                                                \
            if (T > 2) R16A_TOKEN(s02, l2);                                                                \
            if (T > 3) R16A_TOKEN(s03, l3);                                                                \
        } else {                                                                                           \
            R16A_TOKEN(s10, l0);                                                                           \
            if (T > 1) R16A_TOKEN(s11, l1);                                                                \
            if (T > 2) R16A_TOKEN(s12, l2);                                                                \
            if (T > 3) R16A_TOKEN(s13, l3);                                                                \
        }                                                                                                  \
    } while (0)

/*
 * Micro-tile: the 16 rows of the group whose column chunk of nc elements
 * (a multiple of 256) starts at g, against T (1..4) tokens' prepared
 * chunks p[t]: out[t][0..15] (+)= the rows' dots. Per 4 elements of a
 * sub-block, two 32-byte vectors (rows 0-7, 8-15) give two code vectors
 * each, against each token's two broadcasts (loaded again for the
 * second half: loads are cheap, registers are not). Inlined
 * with constant T; the accumulators are named variables, not arrays (GCC
 * kept arrays of them on the stack, every vpaddd a memory operand).
 */
ALWAYS_INLINE void r16a_tile(const int T, int64_t nc, const uint8_t *g, uintptr_t pfa, size_t pfl,
                             const float *const *p, float *const *out, const bool add)
{
    const size_t gb = WK_R16_ROWS * sizeof(struct wk_block_q4_k);
    const int64_t nxb = nc / 32, nsb = nc / WK_QK_K;
    const __m256i m4 = _mm256_set1_epi16(0x000F);
    const uint8_t *l0 = (const uint8_t *)p[0], *l1 = (const uint8_t *)p[T > 1 ? 1 : 0];
    const uint8_t *l2 = (const uint8_t *)p[T > 2 ? 2 : 0], *l3 = (const uint8_t *)p[T > 3 ? 3 : 0];
    const float *dx0 = p[0] + nxb * 16, *dx1 = p[T > 1 ? 1 : 0] + nxb * 16;
    const float *dx2 = p[T > 2 ? 2 : 0] + nxb * 16, *dx3 = p[T > 3 ? 3 : 0] + nxb * 16;
    __m256 acc[2][4]; /* touched once a sub-block: memory is fine */
    UNROLL
    for (int t = 0; t < 4; t++) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nsb; i++) {
        if (pfa) wk_prefetch_part(pfa, pfl, i, nsb, true);
        const uint8_t *b = g + (size_t)i * gb;
        /* the rows' factors d sc_j and dmin m_j of the 8 sub-blocks, kept in L1 */
        __m256 f[2][8], fm[2][8];
        r16a_q4k_factors(b, f, fm);
        for (int gg = 0; gg < 4; gg++)
        UNROLL
        for (int hi_nib = 0; hi_nib < 2; hi_nib++) { /* sub-block j: the vectors of pair gg, low nibbles for even j */
            const int j = 2 * gg + hi_nib;
            const int64_t xb = 8 * i + j;
            const uint8_t *vb = b + 256 + 64 * 8 * gg;
            const __m256i z = _mm256_setzero_si256();
            __m256i s00 = z, s01 = z, s02 = z, s03 = z, s10 = z, s11 = z, s12 = z, s13 = z;
            UNROLL
            for (int k = 0; k < 8; k++) {
                const size_t o = 64 * (size_t)xb + 4 * (size_t)k;
                r16a_prefetch(T, b, 8 * j + k, gb);
                /* one half at a time: its two code vectors, then every token (the
                 * broadcasts loaded again for the second half; loads are cheap,
                 * registers are not) */
                UNROLL
                for (int h = 0; h < 2; h++) {
                    const __m256i v = _mm256_loadu_si256((const __m256i *)(vb + 64 * k + 32 * h));
                    /* bits 0-3 / 8-11 of each int16 lane: (4k, 4k + 2) / (4k + 1, 4k + 3) of
                     * the low nibbles' sub-block; bits 4-7 / 12-15: the high nibbles' */
                    const __m256i e = hi_nib ? _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) : _mm256_and_si256(v, m4);
                    const __m256i od = hi_nib ? _mm256_srli_epi16(v, 12) : _mm256_and_si256(_mm256_srli_epi16(v, 8), m4);
                    R16A_TOKENS(h);
                }
            }
            /* acc += (S d_x / 256) d sc_j - dmin m_j (d_x / 256) sum(v) */
#define R16A_FLOAT(H, T_, S, DX)                                                                           \
    do {                                                                                                   \
        acc[H][T_] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(S), _mm256_broadcast_ss(DX + xb)),   \
                                     f[H][j], acc[H][T_]);                                                 \
        acc[H][T_] = _mm256_fnmadd_ps(fm[H][j], _mm256_broadcast_ss(DX + nxb + xb), acc[H][T_]);           \
    } while (0)
            R16A_FLOAT(0, 0, s00, dx0);
            R16A_FLOAT(1, 0, s10, dx0);
            if (T > 1) {
                R16A_FLOAT(0, 1, s01, dx1);
                R16A_FLOAT(1, 1, s11, dx1);
            }
            if (T > 2) {
                R16A_FLOAT(0, 2, s02, dx2);
                R16A_FLOAT(1, 2, s12, dx2);
            }
            if (T > 3) {
                R16A_FLOAT(0, 3, s03, dx3);
                R16A_FLOAT(1, 3, s13, dx3);
            }
#undef R16A_FLOAT
        }
    }
    UNROLL
    for (int t = 0; t < T; t++) r16a_out(out[t], acc[0][t], acc[1][t], add);
}

/*
 * Micro-tile for many tokens: the 16 rows of the group's column chunk at g
 * against T (1..R16A_TM) tokens' prepared chunks p[t], out[t][0..15] (+)=
 * the rows' dots, with r16a_tile's arithmetic (the same bits). Per
 * sub-block the codes of its 8 steps (two halves, even and odd element
 * pairs: 32 vectors, 1 KB) are unpacked once into an L1 buffer, then
 * each token in turn runs its 32 vpmaddwd against them as memory operands
 * with two int32 sums in registers; the float sums live in memory (one
 * load and store a sub-block). Register tiles of 4 tokens spent half their
 * instructions on spills and register moves.
 */
static void r16a_tile_many(int T, int64_t nc, const uint8_t *g, uintptr_t pfa, size_t pfl, const float *const *p,
                           float *const *out, bool add)
{
    const size_t gb = WK_R16_ROWS * sizeof(struct wk_block_q4_k);
    const int64_t nxb = nc / 32, nsb = nc / WK_QK_K;
    const __m256i m4 = _mm256_set1_epi16(0x000F);
    _Alignas(32) __m256 acc[R16A_TM][2];
    _Alignas(32) __m256 f[2][8], fm[2][8];
    _Alignas(32) __m256i c[8][4]; /* step k: half 0 even, odd; half 1 even, odd */
    for (int t = 0; t < T; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nsb; i++) {
        if (pfa) wk_prefetch_part(pfa, pfl, i, nsb, true);
        const uint8_t *b = g + (size_t)i * gb;
        r16a_q4k_factors(b, f, fm);
        for (int j = 0; j < 8; j++) {
            const int64_t xb = 8 * i + j;
            const uint8_t *vb = b + 256 + 64 * 8 * (j / 2);
            /* (v >> 0 or 4) & 15: elements (4k, 4k + 2); (v >> 8 or 12) & 15: (4k + 1, 4k + 3) */
            const __m128i se = _mm_cvtsi32_si128(4 * (j & 1)), so = _mm_cvtsi32_si128(8 + 4 * (j & 1));
            UNROLL
            for (int k = 0; k < 8; k++) {
                UNROLL
                for (int h = 0; h < 2; h++) {
                    const __m256i v = _mm256_loadu_si256((const __m256i *)(vb + 64 * k + 32 * h));
                    c[k][2 * h] = _mm256_and_si256(_mm256_srl_epi16(v, se), m4);
                    c[k][2 * h + 1] = _mm256_and_si256(_mm256_srl_epi16(v, so), m4);
                }
            }
            for (int t = 0; t < T; t++) {
                const uint8_t *ln = (const uint8_t *)p[t] + 64 * xb;
                const float *dx = p[t] + nxb * 16;
                __m256i s0 = _mm256_setzero_si256(), s1 = s0, u0 = s0, u1 = s0;
                UNROLL
                for (int k = 0; k < 8; k++) {
                    const __m256i pe = _mm256_castps_si256(_mm256_broadcast_ss((const float *)(ln + 4 * k)));
                    const __m256i po = _mm256_castps_si256(_mm256_broadcast_ss((const float *)(ln + 32 + 4 * k)));
                    s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(c[k][0], pe));
                    s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(c[k][2], pe));
                    u0 = _mm256_add_epi32(u0, _mm256_madd_epi16(c[k][1], po));
                    u1 = _mm256_add_epi32(u1, _mm256_madd_epi16(c[k][3], po));
                    __asm__("" : "+x"(s0), "+x"(s1), "+x"(u0), "+x"(u1));
                }
                s0 = _mm256_add_epi32(s0, u0), s1 = _mm256_add_epi32(s1, u1);
                const __m256 vdx = _mm256_broadcast_ss(dx + xb), vcs = _mm256_broadcast_ss(dx + nxb + xb);
                acc[t][0] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(s0), vdx), f[0][j], acc[t][0]);
                acc[t][0] = _mm256_fnmadd_ps(fm[0][j], vcs, acc[t][0]);
                acc[t][1] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(s1), vdx), f[1][j], acc[t][1]);
                acc[t][1] = _mm256_fnmadd_ps(fm[1][j], vcs, acc[t][1]);
            }
        }
    }
    for (int t = 0; t < T; t++) r16a_out(out[t], acc[t][0], acc[t][1], add);
}

/*
 * Q6_K_R16 (repack.c: d[16], then four phases of 832 bytes, phase 2hh + p
 * holding for k = 4p .. 4p + 3 the vectors of ql[64hh + 4k ..], ql[64hh +
 * 32 + 4k ..] and qh[32hh + 4k ..], then the 16 rows' int8 scales of the
 * 16-element groups 8hh + 2q + p), the same tile shape: 16 rows against
 * T (1..4) tokens. Quarter q of half hh (elements 128hh + 32q .., x block
 * 8i + 4hh + q) takes its codes from the low (q = 0, 1) or high (2, 3)
 * nibbles of the first (q even) or second ql vector, and bits 2q, 2q + 1
 * of qh's bytes as bits 4-5: as int16 lanes, (4k, 4k + 2) from each
 * lane's low byte, (4k + 1, 4k + 3) from its high byte. Per 16-element
 * scale group (q, p): S = sum q v - 32 sum(v) = sum (q - 32) v in int32,
 * the sum of v prepared (R16A_S16), exact also in its conversion (|S| <
 * 2^24), then acc += d sc (S d_x / 256).
 */
ALWAYS_INLINE __m256i r16a_q6_code(const int q, const int odd, __m256i ab, __m256i qh)
{
    const __m256i m4 = _mm256_set1_epi16(0x000F), m30 = _mm256_set1_epi16(0x0030);
    /* the nibble: low byte's (odd = 0) or high byte's, low (q < 2) or high half */
    const int nsh = 8 * odd + 4 * (q >> 1);
    const __m256i lo = nsh == 12 ? _mm256_srli_epi16(ab, 12) : _mm256_and_si256(_mm256_srli_epi16(ab, nsh), m4);
    /* bits 2q, 2q + 1 of the byte, moved to bits 4-5 */
    const int hsh = 8 * odd + 2 * q - 4;
    const __m256i hb = hsh < 0 ? _mm256_slli_epi16(qh, -hsh) : _mm256_srli_epi16(qh, hsh);
    return _mm256_or_si256(lo, _mm256_and_si256(hb, m30));
}

/* S = sum q v less 32 sum(v) (the prepared half-block sum at c, an int32
 * broadcast): sum (q - 32) v, |S| <= 16 * 32 * 32639 < 2^24, so exact in
 * int32 and in its conversion to float. */
ALWAYS_INLINE __m256i r16a_q6_less32(__m256i s, const float *c)
{
    return _mm256_sub_epi32(s, _mm256_castps_si256(_mm256_broadcast_ss(c)));
}

ALWAYS_INLINE void r16a_q6k_tile(const int T, int64_t nc, const uint8_t *g, uintptr_t pfa, size_t pfl,
                                 const float *const *p, float *const *out, const bool add)
{
    const size_t gb = WK_R16_ROWS * sizeof(struct wk_block_q6_k);
    const int64_t nxb = nc / 32, nsb = nc / WK_QK_K;
    const uint8_t *l0 = (const uint8_t *)p[0], *l1 = (const uint8_t *)p[T > 1 ? 1 : 0];
    const uint8_t *l2 = (const uint8_t *)p[T > 2 ? 2 : 0], *l3 = (const uint8_t *)p[T > 3 ? 3 : 0];
    const float *const dx[4] = {p[0] + nxb * 16, p[T > 1 ? 1 : 0] + nxb * 16, p[T > 2 ? 2 : 0] + nxb * 16,
                                p[T > 3 ? 3 : 0] + nxb * 16};
    const float *const c16[4] = {R16A_S16(p[0]), R16A_S16(p[T > 1 ? 1 : 0]), R16A_S16(p[T > 2 ? 2 : 0]),
                                 R16A_S16(p[T > 3 ? 3 : 0])};
    __m256 acc[2][4]; /* touched once a scale group: memory is fine */
    UNROLL
    for (int t = 0; t < 4; t++) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nsb; i++) {
        if (pfa) wk_prefetch_part(pfa, pfl, i, nsb, true);
        const uint8_t *b = g + (size_t)i * gb;
        const __m256 d[2] = {_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b)),
                             _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + 16)))};
        for (int ph = 0; ph < 4; ph++) { /* phase 2hh + pp */
            const int hh = ph >> 1, pp = ph & 1;
            const uint8_t *pb = b + 32 + 832 * ph;
            UNROLL
            for (int q = 0; q < 4; q++) {
                const int64_t xb = 8 * i + 4 * hh + q;
                const __m256i z = _mm256_setzero_si256();
                __m256i s00 = z, s01 = z, s02 = z, s03 = z, s10 = z, s11 = z, s12 = z, s13 = z;
                UNROLL
                for (int kk = 0; kk < 4; kk++) {
                    const size_t o = 64 * (size_t)xb + 4 * (size_t)(4 * pp + kk);
                    r16a_prefetch(T, b, 16 * ph + 4 * q + kk, gb);
                    UNROLL
                    for (int h = 0; h < 2; h++) {
                        const __m256i ab = _mm256_loadu_si256((const __m256i *)(pb + 192 * kk + 64 * (q & 1) + 32 * h));
                        const __m256i qh = _mm256_loadu_si256((const __m256i *)(pb + 192 * kk + 128 + 32 * h));
                        const __m256i e = r16a_q6_code(q, 0, ab, qh), od = r16a_q6_code(q, 1, ab, qh);
                        R16A_TOKENS(h);
                    }
                }
                /* the 8 rows' int8 scales of group (q, pp), times d */
                __m256 f[2];
                UNROLL
                for (int h = 0; h < 2; h++)
                    f[h] = _mm256_mul_ps(d[h], _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                                  _mm_loadl_epi64((const __m128i *)(pb + 768 + 16 * q + 8 * h)))));
#define R16A_FLOAT(H, T_, S)                                                                               \
    acc[H][T_] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(r16a_q6_less32(S, c16[T_] + 2 * xb + pp)),     \
                                               _mm256_broadcast_ss(dx[T_] + xb)),                             \
                                 f[H], acc[H][T_])
                R16A_FLOAT(0, 0, s00);
                R16A_FLOAT(1, 0, s10);
                if (T > 1) {
                    R16A_FLOAT(0, 1, s01);
                    R16A_FLOAT(1, 1, s11);
                }
                if (T > 2) {
                    R16A_FLOAT(0, 2, s02);
                    R16A_FLOAT(1, 2, s12);
                }
                if (T > 3) {
                    R16A_FLOAT(0, 3, s03);
                    R16A_FLOAT(1, 3, s13);
                }
#undef R16A_FLOAT
            }
        }
    }
    UNROLL
    for (int t = 0; t < T; t++) r16a_out(out[t], acc[0][t], acc[1][t], add);
}

/* Q6_K's many-token tile: r16a_q6k_tile's arithmetic (the same bits) for
 * up to R16A_TM tokens, as r16a_tile_many does for Q4_K: per 16-element
 * scale group its codes (4 steps, two halves, even and odd pairs: 16
 * vectors) unpacked once into L1, then each token in turn. */
static void r16a_q6k_tile_many(int T, int64_t nc, const uint8_t *g, uintptr_t pfa, size_t pfl,
                               const float *const *p, float *const *out, bool add)
{
    const size_t gb = WK_R16_ROWS * sizeof(struct wk_block_q6_k);
    const int64_t nxb = nc / 32, nsb = nc / WK_QK_K;
    _Alignas(32) __m256 acc[R16A_TM][2];
    _Alignas(32) __m256i c[4][4]; /* step kk: half 0 even, odd; half 1 even, odd */
    for (int t = 0; t < T; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nsb; i++) {
        if (pfa) wk_prefetch_part(pfa, pfl, i, nsb, true);
        const uint8_t *b = g + (size_t)i * gb;
        const __m256 d[2] = {_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b)),
                             _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + 16)))};
        for (int ph = 0; ph < 4; ph++) { /* phase 2hh + pp */
            const int hh = ph >> 1, pp = ph & 1;
            const uint8_t *pb = b + 32 + 832 * ph;
            UNROLL
            for (int q = 0; q < 4; q++) {
                const int64_t xb = 8 * i + 4 * hh + q;
                UNROLL
                for (int kk = 0; kk < 4; kk++) {
                    UNROLL
                    for (int h = 0; h < 2; h++) {
                        const __m256i ab = _mm256_loadu_si256((const __m256i *)(pb + 192 * kk + 64 * (q & 1) + 32 * h));
                        const __m256i qh = _mm256_loadu_si256((const __m256i *)(pb + 192 * kk + 128 + 32 * h));
                        c[kk][2 * h] = r16a_q6_code(q, 0, ab, qh);
                        c[kk][2 * h + 1] = r16a_q6_code(q, 1, ab, qh);
                    }
                }
                __m256 f[2];
                UNROLL
                for (int h = 0; h < 2; h++)
                    f[h] = _mm256_mul_ps(d[h], _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                                  _mm_loadl_epi64((const __m128i *)(pb + 768 + 16 * q + 8 * h)))));
                for (int t = 0; t < T; t++) {
                    const uint8_t *ln = (const uint8_t *)p[t] + 64 * xb + 16 * pp;
                    /* (r16a_tile_many's loop over 4 steps; a shared always-inline helper for the
                     * three many-token tiles made GCC copy the staged codes between stack slots
                     * every sub-block: 3% slower, so each tile keeps its own loop) */
                    __m256i s0 = _mm256_setzero_si256(), s1 = s0, u0 = s0, u1 = s0;
                    UNROLL
                    for (int kk = 0; kk < 4; kk++) {
                        const __m256i pe = _mm256_castps_si256(_mm256_broadcast_ss((const float *)(ln + 4 * kk)));
                        const __m256i po = _mm256_castps_si256(_mm256_broadcast_ss((const float *)(ln + 32 + 4 * kk)));
                        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(c[kk][0], pe));
                        s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(c[kk][2], pe));
                        u0 = _mm256_add_epi32(u0, _mm256_madd_epi16(c[kk][1], po));
                        u1 = _mm256_add_epi32(u1, _mm256_madd_epi16(c[kk][3], po));
                        __asm__("" : "+x"(s0), "+x"(s1), "+x"(u0), "+x"(u1));
                    }
                    s0 = _mm256_add_epi32(s0, u0), s1 = _mm256_add_epi32(s1, u1);
                    const __m256 vdx = _mm256_broadcast_ss(p[t] + nxb * 16 + xb);
                    const float *c = R16A_S16(p[t]) + 2 * xb + pp;
                    s0 = r16a_q6_less32(s0, c), s1 = r16a_q6_less32(s1, c);
                    acc[t][0] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(s0), vdx), f[0], acc[t][0]);
                    acc[t][1] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(s1), vdx), f[1], acc[t][1]);
                }
            }
        }
    }
    for (int t = 0; t < T; t++) r16a_out(out[t], acc[t][0], acc[t][1], add);
}

/*
 * Q4_1_R16, Q5_0_R16 and Q8_0_R16 (repack.c): 32-element blocks, per group
 * block the 16 rows' f16 d (and Q4_1's m, Q5_0's fifth bits), then the
 * codes, vector k holding bytes 4k .. 4k + 3 of the 16 rows. The tiles see
 * a block as 8 steps of 4 elements, as Q4_K's sub-block: step k of Q4_1
 * and Q5_0 takes elements 4k' .. 4k' + 3 (k' = k mod 4) of vector k' from
 * the low (k < 4) or high nibbles (elements 16 + 4k' ..), Q5_0 or-ing in
 * their fifth bits; step k of Q8_0 takes vector k's bytes, stored as
 * q + 128, as unsigned int16 codes. Per block and row: S = sum q v
 * (int32), less 16 sum(v) (Q5_0) or 128 sum(v) (Q8_0) in integers (the
 * prepared half-block sums), then acc += d (S d_x / 256) (+ m (d_x / 256)
 * sum(v) for Q4_1). Q4_1's and Q5_0's S are exact in their conversion
 * (|S| < 2^24); Q8_0's |S| stays under 32 * 128 * 32639 < 2^27, its
 * conversion rounded the same way in every tile.
 */
enum r16a_kind { R16A_Q4_K, R16A_Q6_K, R16A_Q4_1, R16A_Q5_0, R16A_Q8_0 };

/* Elements of a kind's block, and bytes of a group's block (16 rows). */
#define R16A_QK(K) ((K) == R16A_Q4_K || (K) == R16A_Q6_K ? WK_QK_K : 32)
#define R16A_GB(K)                                                                                               \
    (WK_R16_ROWS * ((K) == R16A_Q4_K   ? sizeof(struct wk_block_q4_k)                                           \
                    : (K) == R16A_Q6_K ? sizeof(struct wk_block_q6_k)                                           \
                    : (K) == R16A_Q4_1 ? sizeof(struct wk_block_q4_1)                                           \
                    : (K) == R16A_Q5_0 ? sizeof(struct wk_block_q5_0)                                           \
                                       : sizeof(struct wk_block_q8_0)))

/* Step k's codes of half h (rows 8h .. 8h + 7) of the group block b, as
 * int16 pairs in each row's lane: elements (4k, 4k + 2) of the block in
 * e, (4k + 1, 4k + 3) in od (Q4_1, Q5_0: from vector k mod 4, as above;
 * Q8_0: from vector k). */
ALWAYS_INLINE void r16a_b32_codes(const enum r16a_kind K, const uint8_t *b, const int k, const int h, __m256i *e,
                                  __m256i *od)
{
    if (K == R16A_Q8_0) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(b + 32 + 64 * k + 32 * h));
        *e = _mm256_and_si256(v, _mm256_set1_epi16(0x00FF));
        *od = _mm256_srli_epi16(v, 8);
        return;
    }
    const __m256i m4 = _mm256_set1_epi16(0x000F);
    const int kk = k & 3, hi = k >> 2;
    const __m256i v = _mm256_loadu_si256((const __m256i *)(b + (K == R16A_Q4_1 ? 64 : 96) + 64 * kk + 32 * h));
    *e = hi ? _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) : _mm256_and_si256(v, m4);
    *od = hi ? _mm256_srli_epi16(v, 12) : _mm256_and_si256(_mm256_srli_epi16(v, 8), m4);
    if (K == R16A_Q5_0) {
        /* byte kk of each row's qh (bit 4 hi + j: element 16 hi + 4kk + j's fifth bit) into the
         * high byte of both int16 lanes; then an unsigned high multiply by 2^(12 - j) moves bit j
         * of that byte to bit 4: j = 4hi, 4hi + 2 for e's lanes, 4hi + 1, 4hi + 3 for od's */
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(b + 32 + 32 * h));
        const int32_t c0 = 0x80 | kk << 8 | 0x80 << 16 | kk << 24, s = 0x0400 | 0x04 << 24;
        const __m256i hb = _mm256_shuffle_epi8(qh, _mm256_setr_epi32(c0, c0 + s, c0 + 2 * s, c0 + 3 * s, c0, c0 + s,
                                                                     c0 + 2 * s, c0 + 3 * s));
        const int j = 4 * hi;
        const __m256i m10 = _mm256_set1_epi16(0x0010);
        const __m256i be = _mm256_mulhi_epu16(hb, _mm256_set1_epi32(1 << (12 - j) | 1 << (10 - j) << 16));
        const __m256i bo = _mm256_mulhi_epu16(hb, _mm256_set1_epi32(1 << (11 - j) | 1 << (9 - j) << 16));
        *e = _mm256_or_si256(*e, _mm256_and_si256(be, m10));
        *od = _mm256_or_si256(*od, _mm256_and_si256(bo, m10));
    }
}

/* The rows' factors of the group block b: d in f[h], Q4_1's m in fm[h]. */
ALWAYS_INLINE void r16a_b32_factors(const enum r16a_kind K, const uint8_t *b, __m256 f[2], __m256 fm[2])
{
    UNROLL
    for (int h = 0; h < 2; h++) {
        f[h] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + 16 * h)));
        fm[h] = K == R16A_Q4_1 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + 32 + 16 * h)))
                               : _mm256_setzero_ps();
    }
}

/* S less the codes' offset times sum(v) of x block xb (Q5_0: 16, Q8_0:
 * 128; from the prepared 32 sum(v) of its halves at s16), in int32. */
ALWAYS_INLINE __m256i r16a_b32_less(const enum r16a_kind K, __m256i S, const float *s16, int64_t xb)
{
    if (K == R16A_Q4_1) return S;
    int32_t c[2]; /* the halves' 32 sum(v), int32 bits in float slots */
    memcpy(c, s16 + 2 * xb, sizeof c);
    const int32_t c32 = c[0] + c[1];
    return _mm256_sub_epi32(S, _mm256_set1_epi32(K == R16A_Q5_0 ? c32 / 2 : 4 * c32));
}

/* acc += d (S' d_x / 256) (+ m (d_x / 256) sum(v), Q4_1): one row lane each. */
ALWAYS_INLINE __m256 r16a_b32_float(const enum r16a_kind K, __m256 acc, __m256i S, const float *p, int64_t nxb,
                                    int64_t xb, __m256 f, __m256 fm)
{
    S = r16a_b32_less(K, S, R16A_S16(p), xb);
    acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(S), _mm256_broadcast_ss(p + nxb * 16 + xb)), f, acc);
    if (K == R16A_Q4_1) acc = _mm256_fmadd_ps(fm, _mm256_broadcast_ss(p + nxb * 17 + xb), acc);
    return acc;
}

/* The register tile for the 32-element kinds: r16a_tile's shape (16 rows
 * by T = 1..4 tokens, the sums named), a block's 8 steps in turn. */
ALWAYS_INLINE void r16a_b32_tile(const enum r16a_kind K, const int T, int64_t nc, const uint8_t *g, uintptr_t pfa,
                                 size_t pfl, const float *const *p, float *const *out, const bool add)
{
    const size_t gb = R16A_GB(K);
    const int64_t nxb = nc / 32;
    const float *const pt[4] = {p[0], p[T > 1 ? 1 : 0], p[T > 2 ? 2 : 0], p[T > 3 ? 3 : 0]};
    const uint8_t *l0 = (const uint8_t *)pt[0], *l1 = (const uint8_t *)pt[1];
    const uint8_t *l2 = (const uint8_t *)pt[2], *l3 = (const uint8_t *)pt[3];
    __m256 acc[2][4];
    UNROLL
    for (int t = 0; t < 4; t++) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    for (int64_t xb = 0; xb < nxb; xb++) {
        if (pfa) wk_prefetch_part(pfa, pfl, xb, nxb, true);
        const uint8_t *b = g + (size_t)xb * gb;
        const __m256i z = _mm256_setzero_si256();
        __m256i s00 = z, s01 = z, s02 = z, s03 = z, s10 = z, s11 = z, s12 = z, s13 = z;
        UNROLL
        for (int k = 0; k < 8; k++) {
            const size_t o = 64 * (size_t)xb + 4 * (size_t)k;
            r16a_prefetch(T, b, k, gb);
            UNROLL
            for (int h = 0; h < 2; h++) {
                __m256i e, od;
                r16a_b32_codes(K, b, k, h, &e, &od);
                R16A_TOKENS(h);
            }
        }
        __m256 f[2], fm[2];
        r16a_b32_factors(K, b, f, fm);
        acc[0][0] = r16a_b32_float(K, acc[0][0], s00, pt[0], nxb, xb, f[0], fm[0]);
        acc[1][0] = r16a_b32_float(K, acc[1][0], s10, pt[0], nxb, xb, f[1], fm[1]);
        if (T > 1) {
            acc[0][1] = r16a_b32_float(K, acc[0][1], s01, pt[1], nxb, xb, f[0], fm[0]);
            acc[1][1] = r16a_b32_float(K, acc[1][1], s11, pt[1], nxb, xb, f[1], fm[1]);
        }
        if (T > 2) {
            acc[0][2] = r16a_b32_float(K, acc[0][2], s02, pt[2], nxb, xb, f[0], fm[0]);
            acc[1][2] = r16a_b32_float(K, acc[1][2], s12, pt[2], nxb, xb, f[1], fm[1]);
        }
        if (T > 3) {
            acc[0][3] = r16a_b32_float(K, acc[0][3], s03, pt[3], nxb, xb, f[0], fm[0]);
            acc[1][3] = r16a_b32_float(K, acc[1][3], s13, pt[3], nxb, xb, f[1], fm[1]);
        }
    }
    UNROLL
    for (int t = 0; t < T; t++) r16a_out(out[t], acc[0][t], acc[1][t], add);
}

/* The many-token tile for the 32-element kinds: r16a_b32_tile's
 * arithmetic (the same bits) for up to R16A_TM tokens, a block's codes
 * (8 steps, two halves, even and odd pairs: 32 vectors) unpacked once
 * into L1, then each token in turn, as r16a_tile_many. */
ALWAYS_INLINE void r16a_b32_tile_many(const enum r16a_kind K, int T, int64_t nc, const uint8_t *g, uintptr_t pfa,
                                      size_t pfl, const float *const *p, float *const *out, bool add)
{
    const size_t gb = R16A_GB(K);
    const int64_t nxb = nc / 32;
    _Alignas(32) __m256 acc[R16A_TM][2];
    _Alignas(32) __m256i c[8][4]; /* step k: half 0 even, odd; half 1 even, odd */
    for (int t = 0; t < T; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    for (int64_t xb = 0; xb < nxb; xb++) {
        if (pfa) wk_prefetch_part(pfa, pfl, xb, nxb, true);
        const uint8_t *b = g + (size_t)xb * gb;
        UNROLL
        for (int k = 0; k < 8; k++)
            UNROLL
            for (int h = 0; h < 2; h++) r16a_b32_codes(K, b, k, h, &c[k][2 * h], &c[k][2 * h + 1]);
        __m256 f[2], fm[2];
        r16a_b32_factors(K, b, f, fm);
        for (int t = 0; t < T; t++) {
            const uint8_t *ln = (const uint8_t *)p[t] + 64 * xb;
            __m256i s0 = _mm256_setzero_si256(), s1 = s0, u0 = s0, u1 = s0;
            UNROLL
            for (int k = 0; k < 8; k++) {
                const __m256i pe = _mm256_castps_si256(_mm256_broadcast_ss((const float *)(ln + 4 * k)));
                const __m256i po = _mm256_castps_si256(_mm256_broadcast_ss((const float *)(ln + 32 + 4 * k)));
                s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(c[k][0], pe));
                s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(c[k][2], pe));
                u0 = _mm256_add_epi32(u0, _mm256_madd_epi16(c[k][1], po));
                u1 = _mm256_add_epi32(u1, _mm256_madd_epi16(c[k][3], po));
                __asm__("" : "+x"(s0), "+x"(s1), "+x"(u0), "+x"(u1));
            }
            s0 = _mm256_add_epi32(s0, u0), s1 = _mm256_add_epi32(s1, u1);
            acc[t][0] = r16a_b32_float(K, acc[t][0], s0, p[t], nxb, xb, f[0], fm[0]);
            acc[t][1] = r16a_b32_float(K, acc[t][1], s1, p[t], nxb, xb, f[1], fm[1]);
        }
    }
    for (int t = 0; t < T; t++) r16a_out(out[t], acc[t][0], acc[t][1], add);
}

/*
 * The n_rows / 16 groups at w (rows of n elements, stride bytes each) for
 * n_tokens tokens prepared at prep, ldp floats apart: out[t * ldo + r]
 * (+)= row r's dot with token t (added when add0, and for every column
 * chunk after the first). One token: group by group, each group's chunks
 * in turn (the weights in address order, one stream); several: tiles of
 * R16A_GROUPS groups, per column chunk every tile of tokens over the
 * tile's groups (the groups' chunk in L2, a tile of tokens' x in L1).
 */
ALWAYS_INLINE void r16a_run(const enum r16a_kind K, int64_t n, const uint8_t *w, size_t stride, const float *prep,
                            size_t ldp, int64_t n_tokens, float *out, size_t ldo, int64_t n_rows, bool add0)
{
    WK_ASSERT(n_rows % WK_R16_ROWS == 0); /* the R16 entries take whole groups */
    const size_t bb = R16A_GB(K);
    const int64_t n_groups = n_rows / WK_R16_ROWS, gt = n_tokens > 1 ? R16A_GROUPS : 1;
    /* more than R16A_T tokens take the many-token tiles */
    const int tw = n_tokens > R16A_T ? R16A_TM : R16A_T;
    for (int64_t g0 = 0; g0 < n_groups; g0 += gt) {
        const int64_t g1 = WK_MIN(n_groups, g0 + gt);
        for (int64_t c0 = 0; c0 < n; c0 += R16A_CHUNK) {
            const int64_t nc = WK_MIN(R16A_CHUNK, n - c0);
            const bool add = add0 || c0 > 0;
            for (int64_t t0 = 0; t0 < n_tokens; t0 += tw) {
                const int T = (int)WK_MIN(tw, n_tokens - t0);
                const float *p[R16A_TM > R16A_T ? R16A_TM : R16A_T];
                for (int t = 0; t < T; t++) p[t] = prep + (size_t)(t0 + t) * ldp + (c0 / R16A_CHUNK) * R16A_CHUNK_FLOATS;
                for (int64_t gi = g0; gi < g1; gi++) {
                    const uint8_t *wg = w + (size_t)gi * WK_R16_ROWS * stride + (size_t)(c0 / R16A_QK(K)) * bb;
                    float *o[R16A_TM > R16A_T ? R16A_TM : R16A_T];
                    for (int t = 0; t < T; t++) o[t] = out + (size_t)(t0 + t) * ldo + WK_R16_ROWS * gi;
                    const size_t cb = (size_t)(nc / R16A_QK(K)) * bb; /* this chunk's bytes */
                    const uintptr_t pfa = n_tokens == 1 || t0 > 0 ? 0
                                          : c0 + R16A_CHUNK < n ? (uintptr_t)wg + cb
                                                                : (uintptr_t)w + (size_t)(gi + gt) * WK_R16_ROWS * stride;
                    const size_t pfl = cb / 64;
                    if (tw > R16A_T) {
                        if (K == R16A_Q6_K) r16a_q6k_tile_many(T, nc, wg, pfa, pfl, p, o, add);
                        else if (K == R16A_Q4_K) r16a_tile_many(T, nc, wg, pfa, pfl, p, o, add);
                        else r16a_b32_tile_many(K, T, nc, wg, pfa, pfl, p, o, add);
                        continue;
                    }
                    /* each width its own unrolled code */
#define R16A_REG_TILE(T_)                                                                                      \
    (K == R16A_Q6_K   ? r16a_q6k_tile(T_, nc, wg, pfa, pfl, p, o, add)                                         \
     : K == R16A_Q4_K ? r16a_tile(T_, nc, wg, pfa, pfl, p, o, add)                                             \
                      : r16a_b32_tile(K, T_, nc, wg, pfa, pfl, p, o, add))
                    switch (T) {
                    case 4: R16A_REG_TILE(4); break;
                    case 3: R16A_REG_TILE(3); break;
                    case 2: R16A_REG_TILE(2); break;
                    default: R16A_REG_TILE(1); break;
                    }
#undef R16A_REG_TILE
                }
            }
        }
    }
}

/* Rows up to this long have x prepared whole on the stack (40 KB). */
#define R16A_PREP_MAX (8 * R16A_CHUNK)

/* vec_dot_rows_x16_tokens: x prepared here, whole when it fits (then as
 * the prepared entries), else a column chunk at a time (up to R16A_T
 * tokens at once); the same bits either way. */
ALWAYS_INLINE void r16a_tokens(const enum r16a_kind K, int64_t n, const void *w, size_t stride, const float *x, size_t ldx,
                               int32_t n_tokens, float *out, size_t ldo, int64_t n_rows)
{
    if (n_tokens == 1 && n <= R16A_PREP_MAX) {
        _Alignas(64) float prep[R16A_PREP_MAX / R16A_CHUNK * R16A_CHUNK_FLOATS];
        r16a_prepare(n, x, prep);
        r16a_run(K, n, w, stride, prep, 0, 1, out, 0, n_rows, false);
        return;
    }
    const size_t bb = R16A_GB(K);
    _Alignas(64) float prep[R16A_T][R16A_CHUNK_FLOATS];
    for (int32_t t0 = 0; t0 < n_tokens; t0 += R16A_T) {
        const int32_t T = WK_MIN(R16A_T, n_tokens - t0);
        for (int64_t c0 = 0; c0 < n; c0 += R16A_CHUNK) {
            const int64_t nc = WK_MIN(R16A_CHUNK, n - c0);
            for (int32_t t = 0; t < T; t++) r16a_prepare(nc, x + (size_t)(t0 + t) * ldx + c0, prep[t]);
            r16a_run(K, nc, (const uint8_t *)w + (size_t)(c0 / R16A_QK(K)) * bb, stride, prep[0], R16A_CHUNK_FLOATS, T,
                     out + (size_t)t0 * ldo, ldo, n_rows, c0 > 0);
        }
    }
}

/* The table's entries for an R16 dtype (kind K, named name): vec_dot_rows_x16
 * and _tokens (x prepared here), vec_dot_rows_r16 and _tokens, gemm_r16
 * (x prepared by r16_prepare; the GEMM is the tokens entry: every
 * token's results are the one-token bits). */
#define R16A_ENTRIES(name, K)                                                                                 \
    static void r16a_rows_##name(int64_t n, const void *w, size_t stride, const float *x, float *out,          \
                                 int64_t n_rows)                                                               \
    {                                                                                                          \
        r16a_tokens(K, n, w, stride, x, (size_t)n, 1, out, 0, n_rows);                                        \
    }                                                                                                          \
    static void r16a_tokens_##name(int64_t n, const void *w, size_t stride, const float *x, size_t ldx,        \
                                   int32_t n_tokens, float *out, size_t ldo, int64_t n_rows)                   \
    {                                                                                                          \
        r16a_tokens(K, n, w, stride, x, ldx, n_tokens, out, ldo, n_rows);                                     \
    }                                                                                                          \
    static void r16a_prepared_##name(int64_t n, const void *w, size_t stride, const float *prep, float *out,   \
                                     int64_t n_rows)                                                           \
    {                                                                                                          \
        r16a_run(K, n, w, stride, prep, 0, 1, out, 0, n_rows, false);                                        \
    }                                                                                                          \
    static void r16a_prepared_tokens_##name(int64_t n, const void *w, size_t stride, const float *prep,        \
                                            size_t ldp, int32_t n_tokens, float *out, size_t ldo,              \
                                            int64_t n_rows)                                                    \
    {                                                                                                          \
        r16a_run(K, n, w, stride, prep, ldp, n_tokens, out, ldo, n_rows, false);                              \
    }                                                                                                          \
    static void r16a_gemm_##name(int64_t n, const void *w, size_t stride, const float *prep, size_t ldp,       \
                                 int64_t n_tokens, float *out, size_t ldo, int64_t n_rows)                     \
    {                                                                                                          \
        r16a_run(K, n, w, stride, prep, ldp, n_tokens, out, ldo, n_rows, false);                              \
    }
R16A_ENTRIES(q4k, R16A_Q4_K)
R16A_ENTRIES(q6k, R16A_Q6_K)
R16A_ENTRIES(q4_1, R16A_Q4_1)
R16A_ENTRIES(q5_0, R16A_Q5_0)
R16A_ENTRIES(q8_0, R16A_Q8_0)

void wk__avx2_fill_r16(struct wk_cpu_kernels *k)
{
    k->r16_prepare = r16a_prepare;
#define R16A_FILL(name, dt)                                                                                    \
    (k->vec_dot_rows_x16[dt] = r16a_rows_##name, k->vec_dot_rows_x16_tokens[dt] = r16a_tokens_##name,          \
     k->vec_dot_rows_r16[dt] = r16a_prepared_##name, k->vec_dot_rows_r16_tokens[dt] = r16a_prepared_tokens_##name, \
     k->gemm_r16[dt] = r16a_gemm_##name)
    R16A_FILL(q4k, WK_DTYPE_Q4_K_R16);
    R16A_FILL(q6k, WK_DTYPE_Q6_K_R16);
    R16A_FILL(q4_1, WK_DTYPE_Q4_1_R16);
    R16A_FILL(q5_0, WK_DTYPE_Q5_0_R16);
    R16A_FILL(q8_0, WK_DTYPE_Q8_0_R16);
#undef R16A_FILL
}
