/*
 * threadpool.c - a persistent pool of worker threads for the compute loop.
 *
 * One job at a time: wk_threadpool_run() publishes (fn, ctx) and bumps a
 * generation counter; each worker, which spins on that counter for a while
 * and then sleeps on a condition variable, runs its share and bumps n_done.
 * The caller is thread 0 and spins until every worker has finished.
 *
 * Sleep/wake without lost wakeups: a worker registers in n_sleeping and
 * re-checks the generation under the mutex; the caller bumps the generation
 * before reading n_sleeping (both sequentially consistent), so either the
 * worker sees the new generation or the caller sees the sleeper and signals.
 */
#include "wk_base.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SPIN_NS 2000000 /* a worker spins for 2 ms of wall time after its last
                         * job, then sleeps: jobs within a forward pass and
                         * between decode steps come sooner than that, and an
                         * idle runner stops costing CPU at once (a count of
                         * yields took ~0.12 s of CPU on an idle core) */
#define YIELD_AFTER 2000 /* spins before yielding the core on each turn, so an
                          * oversubscribed machine does not burn timeslices */

struct worker_arg {
    struct wk_threadpool *pool;
    int ith;
};

struct speed_slot {
    _Alignas(64) _Atomic float v;
};

/* A worker's kernel thread id and the CPU it started its last job on; one
 * cache line each. */
struct cpu_slot {
    _Alignas(64) _Atomic int cpu;
    _Atomic int tid;
};

#define NUDGE_EVERY_NS 1000000 /* at most one nudge (below) a millisecond */

struct wk_threadpool {
    int n_threads;
    pthread_t *threads;
    struct worker_arg *args;
    _Atomic uint64_t generation;
    _Atomic int n_done;
    _Atomic int n_sleeping;
    _Atomic bool stop;
    wk_task_fn fn;
    void *ctx;
    /* [n_threads]: work units per ns, moving average (0: none yet); one
     * cache line each, as each thread writes its own after every job */
    struct speed_slot *speed;
    struct cpu_slot *cpus; /* [n_threads] (slot 0 unused) */
    cpu_set_t allowed;     /* the CPUs this process may run on, at creation */
    bool can_nudge;        /* at least as many of them as threads */
    int64_t last_nudge_ns;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *p)
{
    struct worker_arg *arg = p;
    struct wk_threadpool *pool = arg->pool;
    uint64_t seen = 0;
    atomic_store(&pool->cpus[arg->ith].tid, (int)syscall(SYS_gettid));
    for (;;) {
        uint64_t g;
        int spins = 0;
        int64_t t0 = 0;
        while ((g = atomic_load(&pool->generation)) == seen) {
            if (++spins <= YIELD_AFTER) {
                cpu_relax();
                continue;
            }
            if (spins == YIELD_AFTER + 1) t0 = wk_time_ns();
            if ((spins & 63) || wk_time_ns() - t0 < SPIN_NS) {
                sched_yield();
                continue;
            }
            pthread_mutex_lock(&pool->mu);
            atomic_fetch_add(&pool->n_sleeping, 1);
            while (atomic_load(&pool->generation) == seen) pthread_cond_wait(&pool->cv, &pool->mu);
            atomic_fetch_sub(&pool->n_sleeping, 1);
            pthread_mutex_unlock(&pool->mu);
            spins = 0;
        }
        seen = g;
        if (atomic_load(&pool->stop)) return NULL;
        atomic_store_explicit(&pool->cpus[arg->ith].cpu, sched_getcpu(), memory_order_relaxed);
        pool->fn(pool->ctx, arg->ith, pool->n_threads);
        atomic_fetch_add_explicit(&pool->n_done, 1, memory_order_release);
    }
}

static void publish(struct wk_threadpool *pool)
{
    atomic_fetch_add(&pool->generation, 1);
    if (atomic_load(&pool->n_sleeping) > 0) {
        pthread_mutex_lock(&pool->mu);
        pthread_cond_broadcast(&pool->cv);
        pthread_mutex_unlock(&pool->mu);
    }
}

enum wk_status wk_threadpool_create(int n_threads, struct wk_threadpool **out)
{
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024) return WK_E_INVALID;
    struct wk_threadpool *pool = wk_calloc(1, sizeof *pool);
    if (!pool) return WK_E_NOMEM;
    pool->n_threads = n_threads;
    pool->speed = wk_aligned_alloc((size_t)n_threads * sizeof *pool->speed);
    if (!pool->speed) {
        wk_free(pool);
        return WK_E_NOMEM;
    }
    for (int i = 0; i < n_threads; i++) atomic_init(&pool->speed[i].v, 0.0f);
    pool->cpus = wk_aligned_alloc((size_t)n_threads * sizeof *pool->cpus);
    if (!pool->cpus) {
        wk_aligned_free(pool->speed);
        wk_free(pool);
        return WK_E_NOMEM;
    }
    for (int i = 0; i < n_threads; i++) atomic_init(&pool->cpus[i].cpu, -1), atomic_init(&pool->cpus[i].tid, 0);
    pool->can_nudge = sched_getaffinity(0, sizeof pool->allowed, &pool->allowed) == 0 &&
                      CPU_COUNT(&pool->allowed) >= n_threads;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->cv, NULL);
    int n_workers = n_threads - 1;
    if (n_workers > 0) {
        pool->threads = wk_calloc((size_t)n_workers, sizeof *pool->threads);
        pool->args = wk_calloc((size_t)n_workers, sizeof *pool->args);
        if (!pool->threads || !pool->args) {
            pool->n_threads = 1;
            wk_threadpool_destroy(pool);
            return WK_E_NOMEM;
        }
    }
    /* Workers block every signal (they inherit the mask), so a Ctrl-C is
     * always delivered to the thread that handles it, not to a worker. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int i = 0; i < n_workers; i++) {
        pool->args[i].pool = pool;
        pool->args[i].ith = i + 1;
        if (pthread_create(&pool->threads[i], NULL, worker_main, &pool->args[i]) != 0) {
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            pool->n_threads = i + 1; /* join only those started */
            wk_threadpool_destroy(pool);
            return WK_E_IO;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    *out = pool;
    return WK_OK;
}

void wk_threadpool_destroy(struct wk_threadpool *pool)
{
    if (!pool) return;
    atomic_store(&pool->stop, true);
    publish(pool);
    for (int i = 0; i < pool->n_threads - 1; i++) pthread_join(pool->threads[i], NULL);
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->cv);
    wk_free(pool->threads);
    wk_free(pool->args);
    wk_aligned_free(pool->speed);
    wk_aligned_free(pool->cpus);
    wk_free(pool);
}

int wk_threadpool_n_threads(const struct wk_threadpool *pool)
{
    return pool ? pool->n_threads : 1;
}

/*
 * A worker woken from its sleep is often queued on the waker's CPU (the
 * kernel's wake-affine placement, when the other CPUs were busy at that
 * instant), and stays there after they go idle: the two threads then
 * share one core, handing it back and forth with sched_yield, and a
 * forward runs at half speed or worse until the load balancer moves one
 * (measured on a 2-vCPU VM: a sentence's embedding through wick serve in
 * ~9 ms instead of ~2, one request in three). So after a run, a worker
 * that started its share on the caller's CPU is moved off it: its
 * affinity set to the process's CPUs but this one (the kernel migrates
 * it at once), then given back whole, which does not move it again. Only
 * where there are at least as many CPUs as threads, at most once a
 * millisecond.
 */
static void nudge(struct wk_threadpool *pool)
{
    const int me = sched_getcpu();
    if (me < 0 || me >= CPU_SETSIZE || !CPU_ISSET(me, &pool->allowed)) return;
    for (int i = 1; i < pool->n_threads; i++) {
        const int tid = atomic_load_explicit(&pool->cpus[i].tid, memory_order_relaxed);
        if (atomic_load_explicit(&pool->cpus[i].cpu, memory_order_relaxed) != me || tid <= 0) continue;
        const int64_t now = wk_time_ns();
        if (now - pool->last_nudge_ns < NUDGE_EVERY_NS) return;
        pool->last_nudge_ns = now;
        cpu_set_t others = pool->allowed;
        CPU_CLR(me, &others);
        if (sched_setaffinity(tid, sizeof others, &others) == 0)
            (void)sched_setaffinity(tid, sizeof pool->allowed, &pool->allowed);
        atomic_store_explicit(&pool->cpus[i].cpu, -1, memory_order_relaxed);
        return;
    }
}

void wk_threadpool_run(struct wk_threadpool *pool, wk_task_fn fn, void *ctx)
{
    if (!pool || pool->n_threads == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->ctx = ctx;
    atomic_store(&pool->n_done, 0);
    publish(pool);
    fn(ctx, 0, pool->n_threads);
    for (int spins = 0;
         atomic_load_explicit(&pool->n_done, memory_order_acquire) < pool->n_threads - 1; spins++) {
        if (spins > YIELD_AFTER) sched_yield();
        else cpu_relax();
    }
    if (pool->can_nudge) nudge(pool);
}

void wk_threadpool_note_speed(struct wk_threadpool *pool, int ith, double work, int64_t ns)
{
    if (!pool || ns <= 0 || work <= 0) return;
    const float v = (float)(work / (double)ns);
    const float old = atomic_load_explicit(&pool->speed[ith].v, memory_order_relaxed);
    atomic_store_explicit(&pool->speed[ith].v, old > 0 ? old + (v - old) / 8 : v, memory_order_relaxed);
}

void wk_threadpool_weighted_bounds(const struct wk_threadpool *pool, int64_t n, int64_t *bounds)
{
    bounds[0] = 0;
    if (!pool || pool->n_threads == 1) {
        bounds[1] = n;
        return;
    }
    const int nth = pool->n_threads;
    float top = 0;
    for (int i = 0; i < nth; i++) {
        const float v = atomic_load_explicit(&pool->speed[i].v, memory_order_relaxed);
        if (!(v > 0)) { /* not every thread noted yet: equal ranges */
            for (int j = 0; j < nth; j++) bounds[j + 1] = n * (j + 1) / nth;
            return;
        }
        top = WK_MAX(top, v);
    }
    /* each counted at least a quarter of the fastest: a thread that was
     * held up for a while keeps a share, so it keeps noting its speed
     * (one with no work notes nothing and could otherwise never recover) */
    double total = 0;
    for (int i = 0; i < nth; i++)
        total += WK_MAX(atomic_load_explicit(&pool->speed[i].v, memory_order_relaxed), top / 4);
    double cum = 0;
    for (int i = 0; i < nth; i++) {
        cum += WK_MAX(atomic_load_explicit(&pool->speed[i].v, memory_order_relaxed), top / 4);
        const int64_t b = i + 1 == nth ? n : (int64_t)((double)n * cum / total + 0.5);
        bounds[i + 1] = WK_MIN(n, WK_MAX(bounds[i], b));
    }
}
