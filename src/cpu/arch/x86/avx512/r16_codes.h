/*
 * r16_codes.h - unpacking helpers of the AVX-512 R16 kernels (the layout is
 * repack.c's), shared by the VNNI kernels (rows_x16_template.h,
 * r16_gemm_template.h) and the AMX GEMM (r16_amx.c), so that each reads
 * the codes and scales the one same way. Include after dot_rows.h
 * (ALWAYS_INLINE).
 */
#ifndef WK_R16_CODES_H
#define WK_R16_CODES_H

#include <immintrin.h>

/* v >> bits in each 32-bit lane, for a count that need not be an immediate. */
static ALWAYS_INLINE __m512i r16_shr(__m512i v, int bits)
{
    return _mm512_srl_epi32(v, _mm_cvtsi32_si128(bits));
}

/* Q4_K_R16: the 6-bit scale (sc) and min (m) of sub-block s (0..7) for the
 * 16 rows, from the three vectors of the rows' packed scales (bytes 0-3,
 * 4-7, 8-11 of each row's 12, one row a 32-bit lane), as Q4_K packs them
 * (ggml's get_scale_min_k4). */
static ALWAYS_INLINE void r16_q4k_scale_min(__m512i d0, __m512i d1, __m512i d2, int s, __m512i *sc, __m512i *m)
{
    const __m512i m6 = _mm512_set1_epi32(63), m4 = _mm512_set1_epi32(15), m2 = _mm512_set1_epi32(3);
    if (s < 4) {
        *sc = _mm512_and_si512(r16_shr(d0, 8 * s), m6);
        *m = _mm512_and_si512(r16_shr(d1, 8 * s), m6);
    } else {
        const int t = s - 4;
        *sc = _mm512_or_si512(_mm512_and_si512(r16_shr(d2, 8 * t), m4),
                              _mm512_slli_epi32(_mm512_and_si512(r16_shr(d0, 8 * t + 6), m2), 4));
        *m = _mm512_or_si512(_mm512_and_si512(r16_shr(d2, 8 * t + 4), m4),
                             _mm512_slli_epi32(_mm512_and_si512(r16_shr(d1, 8 * t + 6), m2), 4));
    }
}

/* Q6_K_R16: the codes (q, 0..63) of quarter q (0..3) of a vector group,
 * from its low-nibble vector AB (A for q = 0, 2; B for q = 1, 3) and its
 * vector of high bits Q (layout as r16_group_q6k). */
static ALWAYS_INLINE __m512i r16_q6k_code(__m512i AB, __m512i Q, int q)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i lo = q < 2 ? _mm512_and_si512(AB, m4) : _mm512_and_si512(_mm512_srli_epi16(AB, 4), m4);
    const __m512i hb = q == 0   ? _mm512_slli_epi16(_mm512_and_si512(Q, _mm512_set1_epi8(0x03)), 4)
                       : q == 1 ? _mm512_slli_epi16(_mm512_and_si512(Q, _mm512_set1_epi8(0x0C)), 2)
                       : q == 2 ? _mm512_and_si512(Q, _mm512_set1_epi8(0x30))
                                : _mm512_srli_epi16(_mm512_and_si512(Q, _mm512_set1_epi8((char)0xC0)), 2);
    return _mm512_or_si512(lo, hb);
}

/* Q4_1_R16 and Q5_0_R16: vector k (0..3) of a block, v, as codes of
 * elements 4k.. (*lo, low nibbles) and 16 + 4k.. (*hi, high nibbles); for
 * Q5_0 (q5) each code's fifth bit added from qh, the 16 rows' qh (byte k
 * of a row's holds vector k's fifth bits: bit j of byte j of each dword
 * for lo, bit 4 + j for hi). */
static ALWAYS_INLINE void r16_nibble_codes(__m512i v, __m512i qh, int k, bool q5, __m512i *lo, __m512i *hi)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F), c16 = _mm512_set1_epi8(0x10);
    *lo = _mm512_and_si512(v, m4);
    *hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    if (q5) { /* byte k of each dword to its four bytes, then bit b of byte b */
        const int32_t sk = 0x01010101 * k, s4 = 0x04040404;
        const __m512i hb = _mm512_shuffle_epi8(qh, _mm512_set4_epi32(sk + 3 * s4, sk + 2 * s4, sk + s4, sk));
        *lo = _mm512_mask_add_epi8(*lo, _mm512_test_epi8_mask(hb, _mm512_set1_epi32(0x08040201)), *lo, c16);
        *hi = _mm512_mask_add_epi8(*hi, _mm512_test_epi8_mask(hb, _mm512_set1_epi32((int32_t)0x80402010u)), *hi, c16);
    }
}

/* Q4_1_R16, Q5_0_R16, Q8_0_R16: the offset factor of the 16 rows of the
 * block at b, whose scales d are dw: Q4_1's m (the f16 after the 16 d),
 * else d times -16 (Q5_0) or -128 (Q8_0, whose codes are q + 128). */
static ALWAYS_INLINE __m512 r16_b32_offset(const uint8_t *b, __m512 dw, bool has_m, float k)
{
    return has_m ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + 32))) : _mm512_mul_ps(dw, _mm512_set1_ps(k));
}

/* The float side of one 32-element block for one token in every R16 GEMM
 * (VNNI tiles and AMX), written once so that their bits agree: acc +
 * float(S) (scale ds) + off xsum, or - off xsum (neg: Q4_K's min term),
 * S the block's exact integer dot, ds and xsum x~'s block scale and sum
 * (r16_acc_block_f: S already a float, exactly; the AMX-BF16 tiles'). */
static ALWAYS_INLINE __m512 r16_acc_block_f(__m512 acc, __m512 Sf, __m512 scale, float ds, __m512 off, float xsum,
                                            bool neg)
{
    acc = _mm512_fmadd_ps(Sf, _mm512_mul_ps(scale, _mm512_set1_ps(ds)), acc);
    return neg ? _mm512_fnmadd_ps(off, _mm512_set1_ps(xsum), acc) : _mm512_fmadd_ps(off, _mm512_set1_ps(xsum), acc);
}
static ALWAYS_INLINE __m512 r16_acc_block(__m512 acc, __m512i S, __m512 scale, float ds, __m512 off, float xsum, bool neg)
{
    return r16_acc_block_f(acc, _mm512_cvtepi32_ps(S), scale, ds, off, xsum, neg);
}

/* Decode's float side of one scale group for one token, written once for
 * the decode kernels (rows_x16_template.h), batched decode on the GEMM's
 * tiles (r16_gemm_template.h, dec) and on AMX (r16_amx.c), whose bits must
 * be decode's: *acc += float(S) (scale ds), then *accc += off xoff, the
 * offset term in an accumulator of its own (r16_group: scale d_w, off m_w
 * or d_w, xoff x~'s block sum or -16 / -128 times it; r16_group_q4k's
 * sub-block sums: scale sc, off m, xoff the sum; r16_group_q6k: scale and
 * off d sc, xoff -32 times the 16-element sum). With accc == acc both go
 * into one accumulator (the Q6_K GEMM's). r16_dec_group_f: S as a float
 * equal to float(S), the AMX-BF16 tiles'. */
static ALWAYS_INLINE void r16_dec_group_f(__m512 *acc, __m512 *accc, __m512 Sf, __m512 scale, float ds, __m512 off,
                                          float xoff)
{
    *acc = _mm512_fmadd_ps(Sf, _mm512_mul_ps(scale, _mm512_set1_ps(ds)), *acc);
    *accc = _mm512_fmadd_ps(off, _mm512_set1_ps(xoff), *accc);
}
static ALWAYS_INLINE void r16_dec_group(__m512 *acc, __m512 *accc, __m512i S, __m512 scale, float ds, __m512 off,
                                        float xoff)
{
    r16_dec_group_f(acc, accc, _mm512_cvtepi32_ps(S), scale, ds, off, xoff);
}

#endif
