/*
 * cpu_blocks.h - random but valid weight blocks of every dtype, shared by
 * the kernel tests (test-cpu.c, test-cpu-r16.c).
 */
#ifndef WK_TEST_CPU_BLOCKS_H
#define WK_TEST_CPU_BLOCKS_H

#include "check.h"

#include "../../src/cpu/wk_cpu.h"

/* Random but valid blocks: random bytes, then every f16 scale field set to
 * a finite value of moderate size so sums stay far from overflow. */
static void fill_random_blocks(enum wk_dtype t, void *dst, int64_t n_blocks, uint64_t *seed)
{
    const struct wk_dtype_traits *tr = wk_dtype_traits_get(t);
    uint8_t *p = dst;
    for (size_t i = 0; i < tr->block_bytes * (size_t)n_blocks; i++) p[i] = (uint8_t)check_rand_u64(seed);
    for (int64_t b = 0; b < n_blocks; b++) {
        uint8_t *blk = p + b * tr->block_bytes;
        wk_f16 h1 = wk_f32_to_f16(0.01f + 0.02f * (check_rand_f32(seed) + 1));
        wk_f16 h2 = wk_f32_to_f16(0.01f * check_rand_f32(seed));
        switch (t) {
        case WK_DTYPE_Q4_0: case WK_DTYPE_Q5_0: case WK_DTYPE_Q8_0:
            memcpy(blk, &h1, 2);
            break;
        case WK_DTYPE_Q4_1: case WK_DTYPE_Q5_1: case WK_DTYPE_Q4_K: case WK_DTYPE_Q5_K:
        case WK_DTYPE_I8G64: case WK_DTYPE_I4G64: /* scale, bias */
            memcpy(blk, &h1, 2);
            memcpy(blk + 2, &h2, 2);
            break;
        case WK_DTYPE_Q6_K:
            memcpy(blk + offsetof(struct wk_block_q6_k, d), &h1, 2);
            break;
        case WK_DTYPE_Q2_K:
            memcpy(blk + offsetof(struct wk_block_q2_k, d), &h1, 2);
            memcpy(blk + offsetof(struct wk_block_q2_k, dmin), &h2, 2);
            break;
        case WK_DTYPE_Q3_K:
            memcpy(blk + offsetof(struct wk_block_q3_k, d), &h1, 2);
            break;
        case WK_DTYPE_IQ4_NL: case WK_DTYPE_IQ4_XS:
            memcpy(blk, &h1, 2);
            break;
        case WK_DTYPE_MXFP4: /* d = 2^(e - 128) from 2^-8 to 2^-3 */
            blk[0] = (uint8_t)(120 + check_rand_u64(seed) % 6);
            break;
        case WK_DTYPE_F16: {
            wk_f16 *h = (wk_f16 *)blk;
            *h = wk_f32_to_f16(check_rand_f32(seed));
            break;
        }
        case WK_DTYPE_BF16: {
            wk_bf16 *h = (wk_bf16 *)blk;
            *h = wk_f32_to_bf16(check_rand_f32(seed));
            break;
        }
        case WK_DTYPE_F32: {
            float f = check_rand_f32(seed);
            memcpy(blk, &f, 4);
            break;
        }
        default: break;
        }
    }
}

#endif
