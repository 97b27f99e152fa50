/*
 * cpu.c - CPU feature detection: CPUID for what the processor has, XGETBV
 * for what register state the OS saves (Intel SDM vol. 1, 13.2 and 15.2).
 * A feature counts only when both agree.
 */
#include "wk_base.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

static uint64_t xgetbv0(void)
{
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

static void detect(struct wk_cpu_features *f)
{
    unsigned a, b, c, d;
    /* vendor string of leaf 0 (EBX, EDX, ECX): AMD and Hygon (Zen) decode
     * without software prefetches (wk_cpu_features.decode_prefetch) */
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        char v[13];
        memcpy(v, &b, 4), memcpy(v + 4, &d, 4), memcpy(v + 8, &c, 4), v[12] = 0;
        f->decode_prefetch = strcmp(v, "AuthenticAMD") != 0 && strcmp(v, "HygonGenuine") != 0;
    }
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    bool osxsave = c & (1u << 27), fma = c & (1u << 12), f16c = c & (1u << 29),
         avx = c & (1u << 28);
    if (!osxsave || !avx) return;
    uint64_t xcr0 = xgetbv0();
    bool ymm_ok = (xcr0 & 0x6) == 0x6;       /* SSE + AVX state */
    bool zmm_ok = (xcr0 & 0xe6) == 0xe6;     /* + opmask, ZMM_Hi256, Hi16_ZMM */
    if (__get_cpuid_max(0, NULL) < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    bool avx2 = b & (1u << 5);
    bool avx512f = b & (1u << 16), avx512dq = b & (1u << 17), avx512bw = b & (1u << 30),
         avx512vl = b & (1u << 31), vnni = c & (1u << 11);
    f->avx2 = ymm_ok && avx2 && fma && f16c;
    f->avx512 = f->avx2 && zmm_ok && avx512f && avx512dq && avx512bw && avx512vl;
    f->avx512_vnni = f->avx512 && vnni;
    /* AMX: CPUID.7.0:EDX bits 24 (TILE) and 25 (INT8), XCR0 bits 17-18
     * (XTILECFG, XTILEDATA); the OS's grant is asked for in init_once,
     * after WICK_CPU, by amx_granted */
    f->amx_int8 = f->avx512_vnni && (d & (1u << 24)) && (d & (1u << 25)) && (xcr0 & 0x60000) == 0x60000;
    /* AMX-BF16: CPUID.7.0:EDX bit 22; AVX512_BF16 (the conversions): CPUID.7.1:EAX bit 5 */
    unsigned a1 = 0, b1, c1, d1;
    if (a >= 1) __cpuid_count(7, 1, a1, b1, c1, d1);
    f->amx_bf16 = f->amx_int8 && (d & (1u << 22)) && (a1 & (1u << 5));
}

/* Linux hands out the 8 KiB tile data state only to a process that asks
 * (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): without the grant the first
 * tile instruction faults. Asked only where the AMX kernels would run. */
static bool amx_granted(void)
{
#if defined(__linux__)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
#else
    return false;
#endif
}
#else
static void detect(struct wk_cpu_features *f)
{
    (void)f;
}
static bool amx_granted(void)
{
    return false;
}
#endif

/* CPUs this process may run on: the online count, narrowed by the
 * affinity mask (taskset, container cpusets) and a cgroup v2 CPU quota
 * (cpu.max "quota period", rounded up). */
static int usable_cpus(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = online > 0 ? (int)online : 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 && CPU_COUNT(&set) < n)
        n = CPU_COUNT(&set);
    FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
    if (f) {
        char quota[32];
        long period;
        if (fscanf(f, "%31s %ld", quota, &period) == 2 && strcmp(quota, "max") != 0 && period > 0) {
            long q = atol(quota);
            long cpus = (q + period - 1) / period;
            if (cpus >= 1 && cpus < n) n = (int)cpus;
        }
        fclose(f);
    }
    return n;
}

static struct wk_cpu_features g_features; /* written once, under g_once */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_once(void)
{
    detect(&g_features);
    const char *cap = getenv("WICK_CPU");
    if (cap && strcmp(cap, "ref") == 0) {
        g_features.avx2 = g_features.avx512 = g_features.avx512_vnni = g_features.amx_int8 = g_features.amx_bf16 = false;
    } else if (cap && strcmp(cap, "avx2") == 0) {
        g_features.avx512 = g_features.avx512_vnni = g_features.amx_int8 = g_features.amx_bf16 = false;
    } else if (cap && strcmp(cap, "avx512") == 0) {
        g_features.amx_int8 = g_features.amx_bf16 = false;
    } else if (cap && *cap) {
        wk_log(WK_LOG_WARN, "WICK_CPU=%s ignored: ref, avx2 or avx512", cap);
    }
    g_features.amx_int8 = g_features.amx_int8 && amx_granted();
    g_features.amx_bf16 = g_features.amx_bf16 && g_features.amx_int8;
    const char *bf = getenv("WICK_AMX_BF16"); /* 0: the int8 tiles for the 4-bit types too (the same bits) */
    if (bf && strcmp(bf, "0") == 0) g_features.amx_bf16 = false;
    else if (bf && *bf && strcmp(bf, "1") != 0) wk_log(WK_LOG_WARN, "WICK_AMX_BF16=%s ignored: 0 or 1", bf);
    const char *pf = getenv("WICK_PREFETCH");
    if (pf && (strcmp(pf, "0") == 0 || strcmp(pf, "1") == 0)) g_features.decode_prefetch = pf[0] == '1';
    else if (pf && *pf) wk_log(WK_LOG_WARN, "WICK_PREFETCH=%s ignored: 0 or 1", pf);
    g_features.n_cores = usable_cpus();
}

const struct wk_cpu_features *wk_cpu_features_get(void)
{
    pthread_once(&g_once, init_once);
    return &g_features;
}
