/*
 * lowbit_template.h - SIMD kernels for the low-bit GGUF weight types Q2_K,
 * Q3_K, IQ4_NL, IQ4_XS and MXFP4 (block layouts in src/tensor/wk_tensor.h):
 * the dot with an f32 activation row (vec_dot, the exact path the forward
 * pass uses), the decode matvec over several rows (vec_dot_rows) and the
 * dequantization (to_f32, which the prefill tiles use). One source for two
 * ISAs: avx2/lowbit_avx2.c and avx512/lowbit_avx512.c each define a 16-float
 * vector type V16 and its operations, then include this file, which is
 * compiled with that file's -m flags only.
 *
 * Every type is first brought to int8 codes in element order, 16 at a
 * time, with 128-bit byte operations (SSSE3 pshufb for the IQ4 and MXFP4
 * code books, shifts and masks for the 2- and 3-bit fields), then widened
 * to floats (V16 from_i8). Arithmetic:
 *   - to_f32 is bit-identical to the reference (src/tensor/quant_ref_k.c,
 *     quant_mxfp4.c): the same float products in the same order (d * v;
 *     Q2_K's dl * q - ml, two roundings, no FMA).
 *   - vec_dot applies a block's (or 16-element sub-block's) factor to the
 *     sum of its q * x products instead of to each weight (Q2_K folds its
 *     min in one FMA per weight), and adds over 16 lanes and two
 *     accumulators: only rounding differs from the reference, within the
 *     table's 1e-5 of sum |w x| (tests/unit/test-cpu.c).
 *   - vec_dot_rows is vec_dot row by row (rows read one after another, as
 *     rows_avx2.c explains is best for the hardware prefetcher), so each
 *     row's result is the same whatever rows share the call.
 *
 * The including file defines, before including:
 *   V16, v16_zero(), v16_set1(f), v16_load(p), v16_store(p, v),
 *   v16_from_i8(__m128i: 16 int8 -> 16 floats), v16_mul, v16_add, v16_sub,
 *   v16_fma(a, b, c) = a * b + c (fused), v16_hsum(v) -> float;
 *   LOWBIT_FILL, the name of the fill function this file defines.
 */
#include <immintrin.h>
#include <string.h>

#define LB_INLINE static inline __attribute__((always_inline))

LB_INLINE float lb_f16(wk_f16 h)
{
    return _cvtsh_ss(h);
}

/* Elements 0-15 (low nibbles of qs[0..15]) and 16-31 (high nibbles) of a
 * 16-byte group, looked up in the 16-entry int8 code book tbl. */
LB_INLINE void lb_lut(__m128i tbl, const uint8_t *qs, __m128i *lo, __m128i *hi)
{
    const __m128i m4 = _mm_set1_epi8(0x0F);
    __m128i v = _mm_loadu_si128((const __m128i *)qs);
    *lo = _mm_shuffle_epi8(tbl, _mm_and_si128(v, m4));
    *hi = _mm_shuffle_epi8(tbl, _mm_and_si128(_mm_srli_epi16(v, 4), m4));
}

/* 2-bit fields j (bits 2j, 2j+1) of 16 bytes, as 0..3. */
LB_INLINE __m128i lb_2bit(__m128i v, int j)
{
    return _mm_and_si128(_mm_srl_epi16(v, _mm_cvtsi32_si128(2 * j)), _mm_set1_epi8(3));
}

/* Q3_K's q = low2 - 4 + 4 * hbit, hbit = bit k of each hmask byte. */
LB_INLINE __m128i lb_q3(__m128i lo2, __m128i hm, int k)
{
    __m128i hb = _mm_and_si128(_mm_srl_epi16(hm, _mm_cvtsi32_si128(k)), _mm_set1_epi8(1));
    return _mm_sub_epi8(_mm_or_si128(lo2, _mm_slli_epi16(hb, 2)), _mm_set1_epi8(4));
}

/* The 16 factors of a Q3_K super-block, d * (sc - 32), 16 at a time:
 * low 4 bits of scale s are nibble s / 8 of scales[s % 8], high 2 bits
 * are bits 2(s / 4).. of scales[8 + s % 4]. */
LB_INLINE void lb_q3_factors(const struct wk_block_q3_k *b, float dl[16])
{
    uint64_t a;
    uint32_t c;
    memcpy(&a, b->scales, 8);
    memcpy(&c, b->scales + 8, 4);
    const __m128i av = _mm_cvtsi64_si128((long long)a), m4 = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_unpacklo_epi64(_mm_and_si128(av, m4), _mm_and_si128(_mm_srli_epi16(av, 4), m4));
    const uint32_t m2 = 0x03030303u;
    const __m128i hi = _mm_setr_epi32((int)(c & m2), (int)((c >> 2) & m2), (int)((c >> 4) & m2), (int)((c >> 6) & m2));
    const __m128i sc = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
    v16_store(dl, v16_mul(v16_set1(lb_f16(b->d)), v16_from_i8(sc)));
}

/* IQ4_XS sub-block ib's factor d * (sc - 32). */
LB_INLINE float lb_iq4xs_factor(const struct wk_block_iq4_xs *b, float d, int ib)
{
    const int lo = (b->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF;
    const int hi = (b->scales_h >> (2 * ib)) & 3;
    return d * (float)((lo | (hi << 4)) - 32);
}

/* sum q * x over 32 elements as 16 lanes (codes lo: elements 0-15, hi: 16-31). */
LB_INLINE V16 lb_dot32(__m128i lo, __m128i hi, const float *x)
{
    return v16_fma(v16_from_i8(hi), v16_load(x + 16), v16_mul(v16_from_i8(lo), v16_load(x)));
}

/* ------------------------------------------------------ IQ4_NL, MXFP4 */

static float lb_dot_iq4_nl(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_iq4_nl *b = w;
    const float *x = xv;
    const __m128i tbl = _mm_loadu_si128((const __m128i *)wk_iq4nl_values);
    V16 acc0 = v16_zero(), acc1 = v16_zero();
    int64_t nb = n / WK_QK4_NL, i = 0;
    __m128i lo, hi;
    for (; i + 2 <= nb; i += 2) {
        lb_lut(tbl, b[i].qs, &lo, &hi);
        acc0 = v16_fma(v16_set1(lb_f16(b[i].d)), lb_dot32(lo, hi, x + 32 * i), acc0);
        lb_lut(tbl, b[i + 1].qs, &lo, &hi);
        acc1 = v16_fma(v16_set1(lb_f16(b[i + 1].d)), lb_dot32(lo, hi, x + 32 * i + 32), acc1);
    }
    for (; i < nb; i++) {
        lb_lut(tbl, b[i].qs, &lo, &hi);
        acc0 = v16_fma(v16_set1(lb_f16(b[i].d)), lb_dot32(lo, hi, x + 32 * i), acc0);
    }
    return v16_hsum(v16_add(acc0, acc1));
}

static float lb_dot_mxfp4(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_mxfp4 *b = w;
    const float *x = xv;
    const __m128i tbl = _mm_loadu_si128((const __m128i *)wk_mxfp4_values);
    V16 acc0 = v16_zero(), acc1 = v16_zero();
    int64_t nb = n / WK_QK_MXFP4, i = 0;
    __m128i lo, hi;
    for (; i + 2 <= nb; i += 2) {
        lb_lut(tbl, b[i].qs, &lo, &hi);
        acc0 = v16_fma(v16_set1(wk_e8m0_to_f32_half(b[i].e)), lb_dot32(lo, hi, x + 32 * i), acc0);
        lb_lut(tbl, b[i + 1].qs, &lo, &hi);
        acc1 = v16_fma(v16_set1(wk_e8m0_to_f32_half(b[i + 1].e)), lb_dot32(lo, hi, x + 32 * i + 32), acc1);
    }
    for (; i < nb; i++) {
        lb_lut(tbl, b[i].qs, &lo, &hi);
        acc0 = v16_fma(v16_set1(wk_e8m0_to_f32_half(b[i].e)), lb_dot32(lo, hi, x + 32 * i), acc0);
    }
    return v16_hsum(v16_add(acc0, acc1));
}

static void lb_to_f32_iq4_nl(const void *src, float *y, int64_t n)
{
    const struct wk_block_iq4_nl *b = src;
    const __m128i tbl = _mm_loadu_si128((const __m128i *)wk_iq4nl_values);
    for (int64_t i = 0; i < n / WK_QK4_NL; i++) {
        __m128i lo, hi;
        lb_lut(tbl, b[i].qs, &lo, &hi);
        const V16 d = v16_set1(lb_f16(b[i].d));
        v16_store(y + 32 * i, v16_mul(d, v16_from_i8(lo)));
        v16_store(y + 32 * i + 16, v16_mul(d, v16_from_i8(hi)));
    }
}

static void lb_to_f32_mxfp4(const void *src, float *y, int64_t n)
{
    const struct wk_block_mxfp4 *b = src;
    const __m128i tbl = _mm_loadu_si128((const __m128i *)wk_mxfp4_values);
    for (int64_t i = 0; i < n / WK_QK_MXFP4; i++) {
        __m128i lo, hi;
        lb_lut(tbl, b[i].qs, &lo, &hi);
        const V16 d = v16_set1(wk_e8m0_to_f32_half(b[i].e));
        v16_store(y + 32 * i, v16_mul(d, v16_from_i8(lo)));
        v16_store(y + 32 * i + 16, v16_mul(d, v16_from_i8(hi)));
    }
}

/* ------------------------------------------------------------- IQ4_XS */

static float lb_dot_iq4_xs(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_iq4_xs *b = w;
    const float *x = xv;
    const __m128i tbl = _mm_loadu_si128((const __m128i *)wk_iq4nl_values);
    V16 acc0 = v16_zero(), acc1 = v16_zero();
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const float d = lb_f16(b[i].d);
        const float *xb = x + WK_QK_K * i;
        for (int ib = 0; ib < 8; ib += 2) {
            __m128i lo, hi;
            lb_lut(tbl, b[i].qs + 16 * ib, &lo, &hi);
            acc0 = v16_fma(v16_set1(lb_iq4xs_factor(&b[i], d, ib)), lb_dot32(lo, hi, xb + 32 * ib), acc0);
            lb_lut(tbl, b[i].qs + 16 * ib + 16, &lo, &hi);
            acc1 = v16_fma(v16_set1(lb_iq4xs_factor(&b[i], d, ib + 1)), lb_dot32(lo, hi, xb + 32 * ib + 32), acc1);
        }
    }
    return v16_hsum(v16_add(acc0, acc1));
}

static void lb_to_f32_iq4_xs(const void *src, float *y, int64_t n)
{
    const struct wk_block_iq4_xs *b = src;
    const __m128i tbl = _mm_loadu_si128((const __m128i *)wk_iq4nl_values);
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const float d = lb_f16(b[i].d);
        for (int ib = 0; ib < 8; ib++) {
            __m128i lo, hi;
            lb_lut(tbl, b[i].qs + 16 * ib, &lo, &hi);
            const V16 dl = v16_set1(lb_iq4xs_factor(&b[i], d, ib));
            float *yb = y + WK_QK_K * i + 32 * ib;
            v16_store(yb, v16_mul(dl, v16_from_i8(lo)));
            v16_store(yb + 16, v16_mul(dl, v16_from_i8(hi)));
        }
    }
}

/* --------------------------------------------------------------- Q2_K */

/*
 * Q2_K: 128-element half h reads qs[32h..32h+31] as one 32-byte vector;
 * field j of its low 16 bytes is sub-block 8h + 2j (elements 128h + 32j +
 * 0..15), of its high 16 bytes sub-block 8h + 2j + 1. Fields are taken in
 * order by shifting the vector right by 2 after each (16-bit shifts: a
 * byte's low bits only ever come from itself within 8 bits). The 16
 * factors dl = d * sc and ml = dmin * m are made 16 at a time up front.
 * Each weight is dl * q - ml: the dot builds it in one FMA and multiplies
 * it with x in a second.
 */
static float lb_dot_q2_k(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_q2_k *b = w;
    const float *x = xv;
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    V16 acc0 = v16_zero(), acc1 = v16_zero();
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float dl[16], nml[16];
        const __m128i sc = _mm_loadu_si128((const __m128i *)b[i].scales);
        v16_store(dl, v16_mul(v16_set1(lb_f16(b[i].d)), v16_from_i8(_mm_and_si128(sc, m4))));
        v16_store(nml, v16_mul(v16_set1(-lb_f16(b[i].dmin)), v16_from_i8(_mm_and_si128(_mm_srli_epi16(sc, 4), m4))));
        const float *xb = x + WK_QK_K * i;
        for (int h = 0; h < 2; h++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * h));
            for (int j = 0; j < 4; j++) {
                const int s = 8 * h + 2 * j;
                const float *xs = xb + 16 * s;
                const __m256i q = _mm256_and_si256(v, m3);
                v = _mm256_srli_epi16(v, 2);
                V16 wa = v16_fma(v16_from_i8(_mm256_castsi256_si128(q)), v16_set1(dl[s]), v16_set1(nml[s]));
                V16 wb = v16_fma(v16_from_i8(_mm256_extracti128_si256(q, 1)), v16_set1(dl[s + 1]), v16_set1(nml[s + 1]));
                acc0 = v16_fma(wa, v16_load(xs), acc0);
                acc1 = v16_fma(wb, v16_load(xs + 16), acc1);
            }
        }
    }
    return v16_hsum(v16_add(acc0, acc1));
}

static void lb_to_f32_q2_k(const void *src, float *y, int64_t n)
{
    const struct wk_block_q2_k *b = src;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        const float d = lb_f16(b[i].d), dmin = lb_f16(b[i].dmin);
        for (int h = 0; h < 2; h++) {
            const __m128i v[2] = {_mm_loadu_si128((const __m128i *)(b[i].qs + 32 * h)),
                                  _mm_loadu_si128((const __m128i *)(b[i].qs + 32 * h + 16))};
            for (int s2 = 0; s2 < 8; s2++) {
                const int s = 8 * h + s2, j = s2 / 2;
                const V16 dl = v16_set1(d * (float)(b[i].scales[s] & 0xF));
                const V16 ml = v16_set1(dmin * (float)(b[i].scales[s] >> 4));
                v16_store(y + WK_QK_K * i + 16 * s, v16_sub(v16_mul(dl, v16_from_i8(lb_2bit(v[s2 % 2], j))), ml));
            }
        }
    }
}

/* --------------------------------------------------------------- Q3_K */

/* Q3_K: the low two bits as Q2_K's; the third is bit 4h + j of
 * hmask[0..31] (the low 16 bytes for the first sub-block of a pair),
 * taken in order by shifting hmask right by 1 after each field. */
static float lb_dot_q3_k(int64_t n, const void *w, const void *xv)
{
    const struct wk_block_q3_k *b = w;
    const float *x = xv;
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1), four = _mm256_set1_epi8(4);
    V16 acc0 = v16_zero(), acc1 = v16_zero();
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float dl[16];
        lb_q3_factors(&b[i], dl);
        const float *xb = x + WK_QK_K * i;
        __m256i hm = _mm256_loadu_si256((const __m256i *)b[i].hmask);
        for (int h = 0; h < 2; h++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * h));
            for (int j = 0; j < 4; j++) {
                const int s = 8 * h + 2 * j;
                const float *xs = xb + 16 * s;
                const __m256i hb = _mm256_slli_epi16(_mm256_and_si256(hm, one), 2);
                const __m256i q = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(v, m3), hb), four);
                v = _mm256_srli_epi16(v, 2);
                hm = _mm256_srli_epi16(hm, 1);
                V16 pa = v16_mul(v16_from_i8(_mm256_castsi256_si128(q)), v16_load(xs));
                V16 pb = v16_mul(v16_from_i8(_mm256_extracti128_si256(q, 1)), v16_load(xs + 16));
                acc0 = v16_fma(v16_set1(dl[s]), pa, acc0);
                acc1 = v16_fma(v16_set1(dl[s + 1]), pb, acc1);
            }
        }
    }
    return v16_hsum(v16_add(acc0, acc1));
}

static void lb_to_f32_q3_k(const void *src, float *y, int64_t n)
{
    const struct wk_block_q3_k *b = src;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float dl[16];
        lb_q3_factors(&b[i], dl);
        const __m128i hm[2] = {_mm_loadu_si128((const __m128i *)b[i].hmask),
                               _mm_loadu_si128((const __m128i *)(b[i].hmask + 16))};
        for (int h = 0; h < 2; h++) {
            const __m128i v[2] = {_mm_loadu_si128((const __m128i *)(b[i].qs + 32 * h)),
                                  _mm_loadu_si128((const __m128i *)(b[i].qs + 32 * h + 16))};
            for (int s2 = 0; s2 < 8; s2++) {
                const int s = 8 * h + s2, j = s2 / 2;
                __m128i q = lb_q3(lb_2bit(v[s2 % 2], j), hm[s2 % 2], 4 * h + j);
                v16_store(y + WK_QK_K * i + 16 * s, v16_mul(v16_set1(dl[s]), v16_from_i8(q)));
            }
        }
    }
}

/* ------------------------------------------------------------ the table */

#define LB_ROWS(name)                                                                              \
    static void lb_rows_##name(int64_t n, const void *w, size_t w_stride, const float *x,          \
                               float *out, int64_t n_rows)                                         \
    {                                                                                              \
        for (int64_t r = 0; r < n_rows; r++)                                                       \
            out[r] = lb_dot_##name(n, (const uint8_t *)w + (size_t)r * w_stride, x);              \
    }
LB_ROWS(q2_k)
LB_ROWS(q3_k)
LB_ROWS(iq4_nl)
LB_ROWS(iq4_xs)
LB_ROWS(mxfp4)

void LOWBIT_FILL(struct wk_cpu_kernels *k)
{
#define LB_SET(T, name)                                                                            \
    k->vec_dot[T] = lb_dot_##name, k->vec_dot_rows[T] = lb_rows_##name, k->to_f32[T] = lb_to_f32_##name
    LB_SET(WK_DTYPE_Q2_K, q2_k);
    LB_SET(WK_DTYPE_Q3_K, q3_k);
    LB_SET(WK_DTYPE_IQ4_NL, iq4_nl);
    LB_SET(WK_DTYPE_IQ4_XS, iq4_xs);
    LB_SET(WK_DTYPE_MXFP4, mxfp4);
#undef LB_SET
}
