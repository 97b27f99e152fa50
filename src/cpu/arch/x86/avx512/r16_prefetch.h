/*
 * r16_prefetch.h - the software prefetches of the AVX-512 R16 decode
 * kernels (rows_x16_template.h, and r16_gemm_template.h's batched decode)
 * and their distances. Included by rows_x16_template.h only, after
 * X16_COMPACT_BYTES and prefetch_part.h.
 */
#ifndef WK_R16_PREFETCH_H
#define WK_R16_PREFETCH_H

/* Part it of nit of the prefetch of bytes at b + dist into L1
 * (wk_prefetch_part), and where dist2 is not 0 of the bytes at b + dist2
 * into L2; none for dist 0. */
static ALWAYS_INLINE void r16_prefetch_part(const uint8_t *b, size_t bytes, int it, int nit, size_t dist,
                                            size_t dist2)
{
    if (dist) wk_prefetch_part((uintptr_t)b + dist, (bytes + 63) / 64, it, nit, false);
    if (dist && dist2) wk_prefetch_part((uintptr_t)b + dist2, (bytes + 63) / 64, it, nit, true);
}

/* Part `part` (0..3) of the prefetch into L1 of the prepared x of 256-block
 * i (x16_prep_compact's 8 lines and 8 scales ds, and the line of its sums
 * at sums_i: 8 sums, or Q6_K's 16 sums16), for the K-quant decode kernels, which take it one
 * 256-block ahead. Wherever a row is longer than a column chunk (an FFN
 * down projection of 8960) a group's 36 KB and more of weights pass
 * through L1 between two uses of x (25 KB), and x comes back from L2;
 * without these prefetches Q4_K_R16 read 8960-element rows from memory at
 * ~73% of a plain read against ~90% for 1536, with them at ~80%
 * (bench/rows-bandwidth, Zen 4; Qwen2.5-Coder-1.5B's one-thread decode
 * 27.7 -> 29.0 t/s, means of 8 interleaved pairs). None past the chunk's
 * last block. */
static ALWAYS_INLINE void r16_prefetch_x(const uint8_t *lines, const float *ds, const float *sums_i, int64_t i,
                                         int64_t nb, int part)
{
    if (i >= nb) return;
    _mm_prefetch((const char *)(lines + X16_COMPACT_BYTES * (8 * i + 2 * part)), _MM_HINT_T0);
    _mm_prefetch((const char *)(lines + X16_COMPACT_BYTES * (8 * i + 2 * part + 1)), _MM_HINT_T0);
    if (part == 0) _mm_prefetch((const char *)(ds + 8 * i), _MM_HINT_T0);
    if (part == 1) _mm_prefetch((const char *)sums_i, _MM_HINT_T0);
}

/* Software prefetch of a group's block R16_PF_DIST bytes ahead, a line
 * at a time, all at the block's start (decode reads the groups in address
 * order: one stream): the batched-decode tiles (r16_gemm_template.h, dec),
 * where 1024 measured best (Qwen, 4 rows: 2048 spread over the block 10%
 * slower, 3072 at once 12%; with R16_PF_L2's prefetch into L2 beside it,
 * 3-6 KiB ahead, 8 rows within 3%, 4 rows +2-6%: the tiles are compute-bound,
 * left without). 0 turns it off. Only where decode_prefetch. */
#ifndef R16_PF_DIST
#define R16_PF_DIST 1024
#endif
static ALWAYS_INLINE void r16_prefetch(const uint8_t *b, size_t bytes)
{
    r16_prefetch_part(b, bytes, 0, 1, R16_PF_DIST, 0);
}

/*
 * The one-token decode kernels' prefetch distances, in bytes (0: none).
 * Measured on the Xeon (Sapphire Rapids, 2 vCPUs; bench/rows-bandwidth,
 * 256 MiB, and decode of the three models, 1 and 2 threads): Q4_K and
 * Q6_K blocks of 16 rows are 2304 and 3360 bytes, and prefetching a whole
 * block at its start (r16_prefetch, 1 KiB ahead) kept them at 88-92% and
 * 81-84% of a plain read; spread over the block's loop (r16_prefetch_part),
 * Q4_K 2 KiB ahead reads at 100-105%, Q6_K 1.5 KiB ahead at 85-94% (2 KiB
 * 83-88%, 3 KiB and more 60-85%, worse the longer).
 *
 * Beside those prefetches into L1, the same lines R16_PF_L2 bytes ahead
 * into L2 (T1): a core keeps more lines in flight when the far ones wait
 * in L2's queue instead of L1's few fill buffers. A read loop alone
 * (2026-12-05, one core) went 13.4-14.2 GB/s plain, 13-15 with T0 only at
 * 0.5-16 KiB, 17-18 with T1 only at 0.5-2 KiB, 18-18.6 with T1 at 2-4 KiB
 * and T0 at a quarter of that. The kernels at 2 threads, random codes,
 * dots / plain read (means of 8-10 runs): Q4_K 1.00 -> 1.07 (T1 4-6 KiB;
 * 8 KiB and more 1.04-1.05), Q6_K 0.91 -> 0.97 (T1 3-4 KiB; 6 KiB 0.86),
 * Q4_1 0.85-0.88 -> 0.99-1.02, Q5_0 0.87 -> 0.98, Q8_0 1.02 -> 1.07 (the
 * 32-element blocks, Q4_1, Q5_0 and Q8_0 of 320-544 bytes for 16 rows,
 * prefetched at once: T0 3 KiB ahead before, 1.5 KiB beside T1's 4 KiB
 * now). tg128 Qwen2.5-Coder-1.5B +4-9%, Gemma 3 +4-7%, SmolLM2 +9-11%.
 */
#ifndef R16_PF_Q4K
#define R16_PF_Q4K 2048
#endif
#ifndef R16_PF_Q6K
#define R16_PF_Q6K 1536
#endif
#ifndef R16_PF_B32
#define R16_PF_B32 1536
#endif
#ifndef R16_PF_L2
#define R16_PF_L2 4096
#endif

#endif
