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
    _Atomic int caller_cpu; /* the CPU the caller published the job from */
    cpu_set_t allowed;      /* the CPUs this process may run on, at creation */
    bool can_move;          /* at least as many of them as threads */
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/*
 * A worker is at times on the same CPU as the caller when a job comes: a
 * worker woken from its sleep is queued on the waker's CPU when the others
 * were busy at that instant (the kernel's wake-affine placement), or the
 * caller, woken by a request, lands on the CPU where the worker spins;
 * and they stay there after the other CPUs go idle. The two then share
 * one core, handing it back and forth with sched_yield, and a forward
 * runs at half speed or worse until the load balancer moves one (measured
 * on a 2-vCPU VM: a sentence's embedding through wick serve in ~9 ms
 * instead of ~2, one request in seven). So a worker that starts a job on
 * the CPU the caller published it from moves itself off: its affinity set
 * to the process's CPUs but that one (the kernel migrates it at once),
 * then given back whole, which does not move it again. Only where there
 * are at least as many CPUs as threads (can_move), and at most once a
 * millisecond a worker (*last, its last move's time), so that a machine
 * busy with other work, where the kernel keeps putting them together,
 * costs little.
 */
static void move_off_caller(struct wk_threadpool *pool, int64_t *last)
{
    const int c = sched_getcpu();
    if (c < 0 || c >= CPU_SETSIZE || c != atomic_load_explicit(&pool->caller_cpu, memory_order_relaxed)) return;
    const int64_t now = wk_time_ns();
    if (now - *last < 1000000) return;
    *last = now;
    cpu_set_t others = pool->allowed;
    CPU_CLR(c, &others);
    if (CPU_COUNT(&others) > 0 && sched_setaffinity(0, sizeof others, &others) == 0)
        (void)sched_setaffinity(0, sizeof pool->allowed, &pool->allowed);
}

static void *worker_main(void *p)
{
    struct worker_arg *arg = p;
    struct wk_threadpool *pool = arg->pool;
    uint64_t seen = 0;
    int64_t last_move = INT64_MIN / 2;
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
        if (pool->can_move) move_off_caller(pool, &last_move);
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
    pool->can_move = sched_getaffinity(0, sizeof pool->allowed, &pool->allowed) == 0 &&
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
    wk_free(pool);
}

int wk_threadpool_n_threads(const struct wk_threadpool *pool)
{
    return pool ? pool->n_threads : 1;
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
    if (pool->can_move) atomic_store_explicit(&pool->caller_cpu, sched_getcpu(), memory_order_relaxed);
    publish(pool);
    fn(ctx, 0, pool->n_threads);
    for (int spins = 0;
         atomic_load_explicit(&pool->n_done, memory_order_acquire) < pool->n_threads - 1; spins++) {
        if (spins > YIELD_AFTER) sched_yield();
        else cpu_relax();
    }
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
