/*
 * f32_text.c - a float32 as JSON text with 9 significant digits (the
 * fewest that always read back as the same float32), byte for byte what
 * jansson writes for json_real(v) under JSON_REAL_PRECISION(9): C's
 * "%.9g" of the value (correctly rounded, ties to even, trailing zeros
 * dropped), ".0" appended when neither '.' nor 'e' is present, and the
 * exponent without '+' or leading zeros ("1e-5", "1.5e10").
 *
 * Why not snprintf: an /api/embed answer of 256 vectors of 384 holds
 * 98,304 numbers, and glibc's "%.9g" (multi-precision arithmetic for
 * every value) took ~40 ms of them, a tenth of the request. Here the
 * nine digits are exact integer arithmetic: v = M * 2^E (M < 2^24), and
 * v * 10^s = M * 5^s * 2^(E + s), which for 10^-19 <= |v| < 10^9
 * (s = 8 - floor(log10 |v|) in [0, 27], 5^27 < 2^63) fits 128 bits and
 * rounds to nine digits with one shift. Other magnitudes go to snprintf.
 */
#include "wk_base.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 5^0 .. 5^27 */
static const uint64_t pow5[28] = {
    UINT64_C(1), UINT64_C(5), UINT64_C(25), UINT64_C(125), UINT64_C(625), UINT64_C(3125), UINT64_C(15625),
    UINT64_C(78125), UINT64_C(390625), UINT64_C(1953125), UINT64_C(9765625), UINT64_C(48828125),
    UINT64_C(244140625), UINT64_C(1220703125), UINT64_C(6103515625), UINT64_C(30517578125),
    UINT64_C(152587890625), UINT64_C(762939453125), UINT64_C(3814697265625), UINT64_C(19073486328125),
    UINT64_C(95367431640625), UINT64_C(476837158203125), UINT64_C(2384185791015625),
    UINT64_C(11920928955078125), UINT64_C(59604644775390625), UINT64_C(298023223876953125),
    UINT64_C(1490116119384765625), UINT64_C(7450580596923828125)};

/* 5^s * M * 2^sh rounded to an integer (ties to even); sh may be negative. */
static uint64_t scaled(uint32_t m, int s, int sh)
{
    unsigned __int128 p = (unsigned __int128)m * pow5[s];
    if (sh >= 0) return (uint64_t)(p << sh); /* below 10^9 by the caller's choice of s */
    if (sh >= 127) return 0;
    const int r = -sh;
    unsigned __int128 q = p >> r, rem = p - (q << r), half = (unsigned __int128)1 << (r - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return (uint64_t)q;
}

/* jansson's fix-ups of snprintf's "%.9g" (dump.c, jsonp_dtostr). */
static size_t slow(float v, char *out)
{
    char buf[WK_F32_JSON_MAX];
    int n = snprintf(buf, sizeof buf, "%.9g", (double)v);
    if (n < 0 || n >= (int)sizeof buf - 3) return 0;
    size_t len = (size_t)n;
    if (!strchr(buf, '.') && !strchr(buf, 'e')) {
        memcpy(buf + len, ".0", 3);
        len += 2;
    }
    char *e = strchr(buf, 'e');
    if (e) {
        char *start = e + 1, *end = start + 1;
        if (*start == '-') start++;
        while (*end == '0') end++;
        if (end != start) {
            memmove(start, end, len - (size_t)(end - buf) + 1);
            len -= (size_t)(end - start);
        }
    }
    memcpy(out, buf, len + 1);
    return len;
}

size_t wk_f32_json(float v, char *out)
{
    if (!isfinite(v)) return 0;
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    const bool neg = bits >> 31;
    const uint32_t ef = (bits >> 23) & 0xff, mf = bits & 0x7fffff;
    char *o = out;
    if (ef == 0 && mf == 0) { /* %.9g of ±0 is "0" / "-0" */
        if (neg) *o++ = '-';
        memcpy(o, "0.0", 4);
        return (size_t)(o - out) + 3;
    }
    const double a = fabs((double)v);
    if (!(a >= 1e-19 && a < 1e9)) return slow(v, out);
    const uint32_t m = ef ? mf | 0x800000u : mf;
    const int e2 = ef ? (int)ef - 150 : -149;
    /* the decimal exponent from the leading bit's binary one: floor(b2 *
     * log10(2)) (1233 / 4096), one less than the true one for some
     * mantissas, which the loop below mends */
    const int b2 = e2 + 31 - __builtin_clz(m);
    int x = (b2 * 1233) >> 12;
    uint64_t q = 0;
    for (int tries = 0; tries < 3; tries++) {
        const int s = 8 - x;
        if (s < 0 || s > 27) return slow(v, out);
        q = scaled(m, s, e2 + s);
        if (q >= 1000000000u) x++;
        else if (q < 100000000u) x--;
        else break;
    }
    if (q < 100000000u || q >= 1000000000u) return slow(v, out);
    char d[9];
    for (int i = 8; i >= 0; i--, q /= 10) d[i] = (char)('0' + q % 10);
    int nd = 9;
    while (nd > 1 && d[nd - 1] == '0') nd--;
    if (neg) *o++ = '-';
    if (x < -4 || x >= 9) { /* %g's exponent form (x >= 9 cannot happen below 10^9) */
        *o++ = d[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, d + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        *o++ = 'e';
        int ex = x;
        if (ex < 0) *o++ = '-', ex = -ex;
        if (ex >= 10) *o++ = (char)('0' + ex / 10);
        *o++ = (char)('0' + ex % 10);
    } else if (x >= 0) {
        memcpy(o, d, (size_t)x + 1);
        o += x + 1;
        *o++ = '.';
        if (nd > x + 1) {
            memcpy(o, d + x + 1, (size_t)(nd - x - 1));
            o += nd - x - 1;
        } else {
            *o++ = '0'; /* an integer: jansson's ".0" */
        }
    } else {
        *o++ = '0', *o++ = '.';
        for (int i = 0; i < -x - 1; i++) *o++ = '0';
        memcpy(o, d, (size_t)nd);
        o += nd;
    }
    *o = 0;
    return (size_t)(o - out);
}

size_t wk_f64_text(double v, char *out)
{
    int n = 0;
    for (int prec = 1; prec <= 17; prec++) {
        n = snprintf(out, 32, "%.*g", prec, v);
        if (!isfinite(v) || strtod(out, NULL) == v) break;
    }
    return n > 0 ? (size_t)n : 0;
}
