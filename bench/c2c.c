/*
 * c2c.c - core-to-core round trip: two threads pinned to the first two
 * CPUs this process may run on hand a counter back and forth through one
 * cache line (each waits for the other's store, then stores the next
 * value); the time per exchange is the round trip of a cache line between
 * the two cores, the cost a thread pool pays at every job's publish and
 * join, and for every line of activations one thread writes and the other
 * reads.
 *
 * Why it is here: on this VM the two vCPUs sometimes share a CCD (round
 * trip ~60-90 ns, one CCD's link to memory: ~33 GB/s for two threads) and
 * sometimes sit on two (~330-370 ns, twice the bandwidth: ~50-60 GB/s).
 * bench/bandwidth samples it beside each measurement to tell the two apart.
 *
 * Usage: build/release/bench/c2c [--json]   (median of 7 runs of 20,000 exchanges)
 * (a figure, not a test)
 */
#include "../src/base/wk_base.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXCHANGES 20000
#define RUNS 7

static _Alignas(64) _Atomic int64_t g_flag;

static bool pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return pthread_setaffinity_np(pthread_self(), sizeof s, &s) == 0;
}

static void *answer(void *arg)
{
    if (!pin(*(int *)arg)) return NULL;
    for (int64_t i = 0; i < (int64_t)EXCHANGES * RUNS; i++) {
        while (atomic_load_explicit(&g_flag, memory_order_acquire) != 2 * i + 1) continue;
        atomic_store_explicit(&g_flag, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    bool json = argc > 1 && strcmp(argv[1], "--json") == 0;
    if (argc > 2 || (argc == 2 && !json)) {
        fprintf(stderr, "Usage: c2c [--json]\n");
        return 2;
    }
    cpu_set_t mask;
    int cpus[2], n = 0;
    if (sched_getaffinity(0, sizeof mask, &mask) == 0)
        for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
            if (CPU_ISSET(c, &mask)) cpus[n++] = c;
    if (n < 2 || !pin(cpus[0])) {
        if (json) printf("{\"round_trip_ns\": null}\n");
        else printf("c2c: fewer than two CPUs\n");
        return 0;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, answer, &cpus[1]) != 0) return 1;
    double ns[RUNS];
    for (int r = 0; r < RUNS; r++) {
        int64_t t0 = wk_time_ns();
        for (int64_t i = (int64_t)r * EXCHANGES; i < (int64_t)(r + 1) * EXCHANGES; i++) {
            atomic_store_explicit(&g_flag, 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(&g_flag, memory_order_acquire) != 2 * i + 2) continue;
        }
        ns[r] = (double)(wk_time_ns() - t0) / EXCHANGES;
    }
    pthread_join(t, NULL);
    qsort(ns, RUNS, sizeof ns[0], cmp_double);
    if (json) printf("{\"round_trip_ns\": %.1f, \"cpus\": [%d, %d]}\n", ns[RUNS / 2], cpus[0], cpus[1]);
    else printf("core-to-core round trip (CPUs %d and %d): %.0f ns\n", cpus[0], cpus[1], ns[RUNS / 2]);
    return 0;
}
