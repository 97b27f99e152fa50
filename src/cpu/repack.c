/*
 * repack.c - the R16 weight layout (wk_cpu.h): Q4_1, Q5_0, Q8_0, Q6_K and Q4_K matrices
 * with their rows interleaved in groups of 16, so that one 64-byte load
 * holds the same four bytes of 16 rows and a decode kernel gives each row
 * its own 32-bit lane (one integer dot per lane, the scales of 16 rows one
 * conversion), instead of gathering every row's bytes and scales into
 * lanes as the row-major kernels must. The idea is the one of llama.cpp's
 * repacked Q4_0x8 CPU buffers; the layout is wick's own.
 *
 * Group g (rows 16g .. 16g + 15) keeps the bytes of those rows,
 * data + 16 g row_bytes, and within it block i (32 elements, 256 for
 * Q6_K and Q4_K) of the 16 rows is 16 block_bytes at offset 16 i block_bytes:
 *   Q4_1_R16 (320 bytes): d[16] (f16), m[16] (f16), then for k = 0..3 the
 *     bytes qs[4k .. 4k + 3] of rows 0..15 (64 bytes each): row r's
 *     elements 4k .. 4k + 3 in the low nibbles, 16 + 4k .. in the high.
 *   Q8_0_R16 (544 bytes): d[16] (f16), then for k = 0..7 the bytes
 *     qs[4k .. 4k + 3] of rows 0..15, each stored as q + 128 (unsigned,
 *     the top bit flipped), the form the u8 x s8 dot products take.
 *   Q5_0_R16 (352 bytes): d[16] (f16), qh[16] (32 bits each, reordered:
 *     byte k holds the fifth bits of the elements in the codes' vector
 *     k, bits 0-3 those of elements 4k .. 4k + 3 and bits 4-7 those of
 *     16 + 4k .. 16 + 4k + 3), then the codes as Q4_1_R16's.
 *   Q6_K_R16 (3360 bytes): d[16] (f16), then four phases in the order
 *     the kernel reads them, phase 2h + p (832 bytes each) for the
 *     block's half h (elements 128h ..) and k = 4p .. 4p + 3: for each k
 *     the vectors of ql[64h + 4k ..], ql[64h + 32 + 4k ..] and
 *     qh[32h + 4k ..] (64 bytes each, row r's four bytes at 4r: Q6_K's
 *     own bytes, holding elements 4k.. and 64 + 4k.. of the half, 32 +
 *     4k.. and 96 + 4k.., and their top two bits), then the 16 rows' int8
 *     scales of the 16-element groups 8h + 2q + p, q = 0..3 (64 bytes).
 *     Read in that order, the block is one stream: with the scales in
 *     front and the three kinds of vectors in three runs, the hardware
 *     prefetchers lost track and decode from DRAM halved.
 *   Q4_K_R16 (2304 bytes): d[16], dmin[16] (f16), the 16 rows' scales
 *     bytes 0-3, 4-7 and 8-11 (three vectors, row r's four at 4r: Q4_K's
 *     6-bit packing kept), then for g = 0..3 and k = 0..7 the vector of
 *     qs[32g + 4k .. + 3]: elements 4k.. of sub-block 2g (low nibbles)
 *     and of 2g + 1 (high).
 */
#include "wk_cpu.h"

#include <stddef.h>
#include <string.h>

enum wk_dtype wk_cpu_r16_dtype(enum wk_dtype base)
{
    /* the R16 dtypes are the last ids; wk_dtype_base maps them back */
    for (int t = WK_DTYPE_Q4_1_R16; t < WK_DTYPE_COUNT; t++)
        if (wk_dtype_base((enum wk_dtype)t) == base) return (enum wk_dtype)t;
    return WK_DTYPE_COUNT;
}

/* len bytes between a group's block (g) and a row's block (b), one way
 * (to_r16: b to g) or the other. */
static void copy_dir(uint8_t *g, uint8_t *b, size_t len, bool to_r16)
{
    if (to_r16) memcpy(g, b, len);
    else memcpy(b, g, len);
}

/* Q6_K: as move_block. */
static void move_q6_k(uint8_t *grp, int r, uint8_t *blk, bool to_r16)
{
    copy_dir(grp + 2 * r, blk + offsetof(struct wk_block_q6_k, d), 2, to_r16);
    for (int h = 0; h < 2; h++)
        for (int p = 0; p < 2; p++) {
            uint8_t *ph = grp + 32 + 832 * (2 * h + p) + 4 * r;
            for (int kk = 0; kk < 4; kk++) {
                const int k = 4 * p + kk;
                uint8_t *ql = blk + offsetof(struct wk_block_q6_k, ql) + 64 * h + 4 * k;
                copy_dir(ph + 192 * kk, ql, 4, to_r16);
                copy_dir(ph + 192 * kk + 64, ql + 32, 4, to_r16);
                copy_dir(ph + 192 * kk + 128, blk + offsetof(struct wk_block_q6_k, qh) + 32 * h + 4 * k, 4, to_r16);
            }
            for (int q = 0; q < 4; q++)
                copy_dir(ph - 4 * r + 768 + 16 * q + r, blk + offsetof(struct wk_block_q6_k, scales) + 8 * h + 2 * q + p,
                         1, to_r16);
        }
}

/* Q4_K: as move_block. */
static void move_q4_k(uint8_t *grp, int r, uint8_t *blk, bool to_r16)
{
    copy_dir(grp + 2 * r, blk + offsetof(struct wk_block_q4_k, d), 2, to_r16);
    copy_dir(grp + 32 + 2 * r, blk + offsetof(struct wk_block_q4_k, dmin), 2, to_r16);
    for (int j = 0; j < 3; j++)
        copy_dir(grp + 64 + 64 * j + 4 * r, blk + offsetof(struct wk_block_q4_k, scales) + 4 * j, 4, to_r16);
    for (int v = 0; v < 32; v++) /* v = 8g + k: qs[32g + 4k ..] = qs[4v ..] */
        copy_dir(grp + 256 + 64 * v + 4 * r, blk + offsetof(struct wk_block_q4_k, qs) + 4 * v, 4, to_r16);
}

/* The R16 block geometry of base: bytes of the 16 rows' scales (and
 * fifth bits) before the codes, offset of the codes in a row-major block,
 * 4-byte groups of codes, and the bits flipped in a code byte. */
struct r16_geom {
    size_t head, qs_off;
    int n_words;
    uint8_t flip;
};
static struct r16_geom r16_geom(enum wk_dtype base)
{
    return base == WK_DTYPE_Q4_1   ? (struct r16_geom){64, 4, 4, 0x00}
           : base == WK_DTYPE_Q5_0 ? (struct r16_geom){96, 6, 4, 0x00}
                                   : (struct r16_geom){32, 2, 8, 0x80};
}

/* Q5_0's qh (bit j: element j's fifth bit) in Q5_0_R16's order (byte k,
 * bits 0-3: elements 4k .. 4k + 3; bits 4-7: 16 + 4k ..), and back. */
static uint32_t qh_to_r16(uint32_t qh)
{
    uint32_t v = 0;
    for (int k = 0; k < 4; k++)
        v |= ((qh >> (4 * k)) & 0xF) << (8 * k) | ((qh >> (16 + 4 * k)) & 0xF) << (8 * k + 4);
    return v;
}
static uint32_t qh_from_r16(uint32_t v)
{
    uint32_t qh = 0;
    for (int k = 0; k < 4; k++)
        qh |= ((v >> (8 * k)) & 0xF) << (4 * k) | ((v >> (8 * k + 4)) & 0xF) << (16 + 4 * k);
    return qh;
}

/* Row r's block blk (row-major bytes) and its place in a group's
 * interleaved block grp, copied one way (to_r16) or the other; the source
 * is only read. */
static void move_block(enum wk_dtype base, uint8_t *grp, int r, uint8_t *blk, bool to_r16)
{
    if (base == WK_DTYPE_Q6_K || base == WK_DTYPE_Q4_K) {
        (base == WK_DTYPE_Q6_K ? move_q6_k : move_q4_k)(grp, r, blk, to_r16);
        return;
    }
    const struct r16_geom g = r16_geom(base);
    copy_dir(grp + 2 * r, blk, 2, to_r16);                                     /* d */
    if (base == WK_DTYPE_Q4_1) copy_dir(grp + 32 + 2 * r, blk + 2, 2, to_r16); /* m */
    if (base == WK_DTYPE_Q5_0) {                                               /* qh, reordered */
        uint32_t v;
        memcpy(&v, to_r16 ? blk + 2 : grp + 32 + 4 * r, 4);
        v = to_r16 ? qh_to_r16(v) : qh_from_r16(v);
        memcpy(to_r16 ? grp + 32 + 4 * r : blk + 2, &v, 4);
    }
    for (int k = 0; k < g.n_words; k++) { /* the codes, Q8_0's with the top bit flipped */
        uint8_t *gk = grp + g.head + 64 * k + 4 * r, *bk = blk + g.qs_off + 4 * k;
        copy_dir(gk, bk, 4, to_r16);
        for (int j = 0; g.flip && j < 4; j++) (to_r16 ? gk : bk)[j] ^= g.flip;
    }
}

void wk_cpu_r16_pack(enum wk_dtype base, void *data, int64_t n_in, int64_t n_rows, void *tmp)
{
    const struct wk_dtype_traits *tr = wk_dtype_traits_get(base);
    WK_ASSERT(wk_cpu_r16_dtype(base) != WK_DTYPE_COUNT && n_in % tr->block_size == 0 && n_rows % WK_R16_ROWS == 0);
    const int64_t nb = n_in / tr->block_size;
    const size_t bb = tr->block_bytes, row = (size_t)nb * bb;
    const size_t group = WK_R16_ROWS * row;
    for (int64_t g = 0; g < n_rows / WK_R16_ROWS; g++) {
        uint8_t *p = (uint8_t *)data + (size_t)g * group;
        memcpy(tmp, p, group);
        for (int64_t i = 0; i < nb; i++)
            for (int r = 0; r < WK_R16_ROWS; r++)
                move_block(base, p + (size_t)i * WK_R16_ROWS * bb, r, (uint8_t *)tmp + (size_t)r * row + (size_t)i * bb,
                           true);
    }
}

void wk_cpu_r16_unpack_row(enum wk_dtype t, const void *data, int64_t n_in, int64_t row, int64_t blk0,
                           int64_t n_blk, void *dst)
{
    const enum wk_dtype base = wk_dtype_base(t);
    const struct wk_dtype_traits *tr = wk_dtype_traits_get(base);
    const int64_t nb = n_in / tr->block_size;
    WK_ASSERT(base != t && n_in % tr->block_size == 0 && row >= 0 && blk0 >= 0 && n_blk >= 0 && blk0 + n_blk <= nb);
    const size_t bb = tr->block_bytes, row_bytes = (size_t)nb * bb;
    const uint8_t *grp = (const uint8_t *)data + (size_t)(row / WK_R16_ROWS) * WK_R16_ROWS * row_bytes;
    for (int64_t i = 0; i < n_blk; i++)
        move_block(base, (uint8_t *)(uintptr_t)(grp + (size_t)(blk0 + i) * WK_R16_ROWS * bb), (int)(row % WK_R16_ROWS),
                   (uint8_t *)dst + (size_t)i * bb, false); /* reads grp only */
}
