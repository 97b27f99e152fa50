/*
 * wk_base.h - the bottom layer of wick: status codes and error messages,
 * logging, tracked allocation, arenas, memory-mapped files, the thread pool,
 * CPU feature detection and a monotonic clock.
 *
 * Every other module includes this header; it includes nothing of wick's.
 *
 * Conventions (see CONVENTIONS.md): fallible functions return enum wk_status
 * (0 ok, negative error) and, where the failure depends on data, fill a
 * caller-provided struct wk_error with a message naming what and where.
 */
#ifndef WK_BASE_H
#define WK_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ status */

enum wk_status {
    WK_OK = 0,
    WK_E_NOMEM = -1,       /* an allocation failed */
    WK_E_IO = -2,          /* open/read/mmap failed (errno-level) */
    WK_E_FORMAT = -3,      /* a file or message is malformed */
    WK_E_UNSUPPORTED = -4, /* well-formed but not something wick handles */
    WK_E_INVALID = -5,     /* a caller-supplied argument or option is invalid */
    WK_E_NOT_FOUND = -6,   /* a named thing (file, tensor, key) does not exist */
    WK_E_RANGE = -7,       /* a value is outside the allowed range (context) */
    WK_E_CANCELLED = -8,   /* the operation was cancelled by its caller */
    WK_E_INTERNAL = -9,    /* a bug in wick */
    WK_E_PERMISSION = -10, /* refused by a setting of the operator's (server-side paths off, ...) */
};

/* Returns a short static name for a status ("out of memory", ...). Never NULL. */
const char *wk_status_str(enum wk_status st);

/*
 * An error report: the status plus a message naming the problem and where it
 * is. Callers own the struct (usually on the stack); functions that take a
 * `struct wk_error *err` accept NULL when the caller needs only the status.
 */
#define WK_ERROR_MSG_MAX 512
struct wk_error {
    enum wk_status status;
    char msg[WK_ERROR_MSG_MAX];
};

/* Clears an error report to WK_OK and an empty message. err may be NULL. */
void wk_error_clear(struct wk_error *err);

/*
 * Records status st and a printf-style message in err (which may be NULL)
 * and returns st, so a failing path reads `return wk_error_set(err, ...)`.
 */
enum wk_status wk_error_set(struct wk_error *err, enum wk_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Prepends context ("file.gguf: ") to the message already in err (which
 * may be NULL) and returns st, the failing status being passed up, so a
 * path reads `return wk_error_prefix(err, st, "tensor %s: ", name)`.
 */
enum wk_status wk_error_prefix(struct wk_error *err, enum wk_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Always-on assertion for programmer errors, never for data from outside. */
#define WK_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) wk_assert_fail(#cond, __FILE__, __LINE__);                                    \
    } while (0)
#ifdef NDEBUG
#define WK_DASSERT(cond)                                                                           \
    do {                                                                                           \
    } while (0)
#else
#define WK_DASSERT(cond) WK_ASSERT(cond)
#endif
_Noreturn void wk_assert_fail(const char *expr, const char *file, int line);

/* ----------------------------------------------------------- checked math */

/* Overflow-safe size arithmetic: return false (and leave *out unspecified)
 * when the exact result does not fit. */
static inline bool wk_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}
static inline bool wk_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

/* ----------------------------------------------------------------- logging */

enum wk_log_level { WK_LOG_DEBUG = 0, WK_LOG_INFO = 1, WK_LOG_WARN = 2, WK_LOG_ERROR = 3 };

/* Messages below this level are dropped. Set before threads start. */
void wk_log_set_level(enum wk_log_level level);
/* Writes one line to stderr, prefixed by the level, if level passes. */
void wk_log(enum wk_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* -------------------------------------------------------------- allocation */

/*
 * Heap allocation through wick's counters: the number of live bytes is kept
 * so tests can check for leaks, and tests can make the Nth allocation fail.
 * Semantics match malloc/calloc/realloc/free/strdup; all are thread-safe.
 * wk_free(NULL) is a no-op. Blocks are 16-byte aligned.
 */
void *wk_malloc(size_t size);
void *wk_calloc(size_t n, size_t size);
void *wk_realloc(void *p, size_t size);
void wk_free(void *p);
char *wk_strdup(const char *s);
char *wk_strndup(const char *s, size_t n);
/* A copy of the n bytes at p (NUL bytes included) with a NUL after them;
 * NULL when out of memory. */
char *wk_memdup0(const void *p, size_t n);

/*
 * 64-byte-aligned allocation for SIMD buffers; counted like wk_malloc.
 * Free with wk_aligned_free (NULL ok). Contents uninitialised.
 */
void *wk_aligned_alloc(size_t size);
void wk_aligned_free(void *p);

/*
 * size bytes of zeroed anonymous memory, 2 MiB-aligned and advised for
 * transparent huge pages (madvise MADV_HUGEPAGE; advice only, 4 KiB pages
 * where the kernel gives none), for weights that every forward streams:
 * with 4 KiB pages each 4 KiB read is a TLB miss (mapfile.c says the
 * same of a model's file). Counted like wk_malloc (and its failure hook);
 * NULL when out of memory. Free with wk_huge_free(p, size), the same size.
 */
void *wk_huge_alloc(size_t size);
void wk_huge_free(void *p, size_t size);
/* The mapping under wk_huge_alloc, neither counted nor under the failure
 * hook (a model file read into memory, mapfile.c): its length, a multiple
 * of 2 MiB, in *len; free it with munmap(p, *len). NULL with errno set
 * when out of memory (ENOMEM) or size is 0 (EINVAL). */
void *wk_huge_map(size_t size, size_t *len);

/* Bytes currently live through the functions above. */
int64_t wk_alloc_live_bytes(void);
/* Test hook: the nth allocation from now (1-based) and all after it fail,
 * until reset with n = 0. */
void wk_alloc_fail_after(int64_t n);

/* ------------------------------------------------------------------ arena */

/*
 * A bump allocator for per-forward scratch: one block sized at load, reset
 * each step. Allocation never touches the heap; running out is a bug of the
 * sizing code and returns NULL.
 */
struct wk_arena {
    uint8_t *base;
    size_t size_bytes;
    size_t used_bytes;
    size_t high_water_bytes;
};

/* Allocates the arena's block of size_bytes. Returns WK_E_NOMEM on failure. */
enum wk_status wk_arena_init(struct wk_arena *a, size_t size_bytes);
/* Frees the block; a may be NULL or already deinitialised. */
void wk_arena_deinit(struct wk_arena *a);
/* Returns n_bytes of 64-byte-aligned scratch, or NULL when the arena is full. */
void *wk_arena_alloc(struct wk_arena *a, size_t n_bytes);
/* Forgets every allocation; the memory is reused by the next ones. */
void wk_arena_reset(struct wk_arena *a);

/* ------------------------------------------------------------ mapped file */

/*
 * A read-only memory map of a whole file. data is valid until close; the
 * mapping is private, so the file's later changes are not guaranteed to show.
 */
struct wk_mapped_file {
    const uint8_t *data;
    uint64_t size_bytes;
    char *path; /* owned copy of the path, for error messages */
    void *map_base;   /* what close unmaps (data may lie past it) */
    size_t map_bytes;
    bool anonymous;   /* read into anonymous memory (resident), not a file mapping */
};

/*
 * Maps the file at path. Errors: WK_E_NOT_FOUND (no such file), WK_E_IO
 * (cannot open, is a directory, cannot map), each naming the path in err.
 * An empty file maps with data == NULL and size 0.
 */
enum wk_status wk_mapped_file_open(struct wk_mapped_file *f, const char *path,
                                   struct wk_error *err);
/*
 * As wk_mapped_file_open, or with resident true: the file is read (pread)
 * into 2 MiB-aligned anonymous memory advised for transparent huge pages
 * (MADV_HUGEPAGE) and then made read-only; for model weights, which decode
 * streams whole every token (fewer TLB misses). A file larger than the
 * memory available (MemAvailable), or one no anonymous memory can be had
 * for, is mapped as without resident. Extra errors when resident: WK_E_IO
 * (a read fails, or the file shrinks while being read).
 */
enum wk_status wk_mapped_file_open_ex(struct wk_mapped_file *f, const char *path, bool resident,
                                      struct wk_error *err);
/* Makes the bytes of a file read into anonymous memory (f->anonymous)
 * writable, or read-only again: for a loader that rewrites them in place
 * (the R16 repacking of weights). Returns false, changing nothing, for a
 * file mapping or when mprotect fails. */
bool wk_mapped_file_set_writable(struct wk_mapped_file *f, bool writable);
/* Unmaps; f may be NULL or already closed. */
void wk_mapped_file_close(struct wk_mapped_file *f);
/*
 * The whole regular file at path, read (not mapped), NUL-terminated:
 * wk_malloc'd, its length (without the NUL) in *len. NULL with errno set
 * when it cannot be opened or read (open's or read's errno), is not a
 * regular file (EISDIR for a directory, EINVAL otherwise: a FIFO is
 * refused at once, never waited on), holds more than max bytes (EFBIG) or
 * memory runs out (ENOMEM).
 */
char *wk_read_file(const char *path, size_t max, size_t *len);

/* --------------------------------------------------------------- CPU info */

/* What the CPU and the OS together support (CPUID leaves plus XGETBV). */
struct wk_cpu_features {
    bool avx2;       /* AVX2 + FMA + F16C, and the OS saves YMM state */
    bool avx512;     /* AVX-512 F, BW, VL, DQ, and the OS saves ZMM state */
    bool avx512_vnni;
    /* AMX-TILE and AMX-INT8, the OS saving tile state (XCR0 bits 17-18) and,
     * on Linux, this process granted it (arch_prctl ARCH_REQ_XCOMP_PERM) */
    bool amx_int8;
    /* amx_int8, and AMX-BF16 with AVX512_BF16's conversions (the R16
     * prefill GEMM of 4-bit codes on BF16 tiles, r16_amx.c; the same bits
     * as the int8 tiles). WICK_AMX_BF16=0 turns it off. */
    bool amx_bf16;
    /* The AVX-512 R16 decode kernels issue software prefetches (R16_PF_*,
     * rows_x16_template.h): yes on Intel, where they measured faster
     * (Sapphire Rapids: 85-105% of a plain read against 69-82% without);
     * no on AMD, where the hardware prefetchers alone were faster (Zen 4:
     * one-thread decode 8-23% faster without). WICK_PREFETCH=0|1 overrides. */
    bool decode_prefetch;
    int n_cores;     /* logical CPUs this process may use (affinity, cgroup quota) */
};

/* Reads the features once (thread-safe, idempotent) and returns them. The
 * environment variable WICK_CPU=ref|avx2|avx512 caps what is reported
 * (avx512: AVX-512 and VNNI without AMX); WICK_PREFETCH=0|1 sets
 * decode_prefetch. Any other value of either is ignored with a warning
 * (wk_log). */
const struct wk_cpu_features *wk_cpu_features_get(void);

/* ---------------------------------------------------------------- timing */

/* Monotonic time in nanoseconds. */
int64_t wk_time_ns(void);
/* The value of environment variable wick_name (WICK_...) when set and not
 * empty, else of ollama_name (its OLLAMA_... counterpart, as Ollama users
 * set it), else NULL. Borrowed from the environment. */
const char *wk_getenv_alias(const char *wick_name, const char *ollama_name);

/* ----------------------------------------------------------- thread pool */

/*
 * A persistent pool of n_threads workers (the caller counts as thread 0).
 * wk_threadpool_run() runs fn(ctx, ith, nth) on every thread and returns when
 * all are done; work is split by (ith, nth). Workers spin briefly between
 * jobs and then sleep, so a token loop's many small jobs stay cheap.
 * One caller at a time: run is not reentrant.
 */
struct wk_threadpool;
typedef void (*wk_task_fn)(void *ctx, int ith, int nth);

/* Creates a pool of n_threads (>= 1; 1 means no worker threads).
 * Errors: WK_E_INVALID for n_threads < 1 or > 1024, WK_E_NOMEM, WK_E_IO
 * when a thread cannot be started. */
enum wk_status wk_threadpool_create(int n_threads, struct wk_threadpool **out);
/* Stops and joins the workers; pool may be NULL. */
void wk_threadpool_destroy(struct wk_threadpool *pool);
/* Number of threads including the caller. */
int wk_threadpool_n_threads(const struct wk_threadpool *pool);
/* Runs fn on all threads and waits. pool may be NULL: then fn(ctx, 0, 1). */
void wk_threadpool_run(struct wk_threadpool *pool, wk_task_fn fn, void *ctx);

/*
 * Thread speeds, for splitting work by how fast each thread has lately
 * been (on a VM the vCPUs can run at unequal speeds for seconds at a time).
 * wk_threadpool_note_speed records that thread ith did work units in ns
 * nanoseconds (only ith's own slot is written; a moving average over
 * recent notes, each weighing 1/8). wk_threadpool_weighted_bounds splits
 * n units into n_threads contiguous ranges, range i = [bounds[i],
 * bounds[i + 1]) with bounds [n_threads + 1], proportional to the
 * averages, each counted at least a quarter of the highest (equal until
 * every thread has noted). Call it on the caller between jobs: it
 * reads the workers' slots, which the join orders after their notes.
 * pool may be NULL (one range).
 */
void wk_threadpool_note_speed(struct wk_threadpool *pool, int ith, double work, int64_t ns);
void wk_threadpool_weighted_bounds(const struct wk_threadpool *pool, int64_t n, int64_t *bounds);

/* Splits [0, n) into nth near-equal contiguous ranges and returns thread
 * ith's as [*lo, *hi). */
static inline void wk_split_range(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi)
{
    int64_t per = n / nth, rem = n % nth;
    *lo = ith * per + (ith < rem ? ith : rem);
    *hi = *lo + per + (ith < rem ? 1 : 0);
}

/* ------------------------------------------------------------------ misc */

#define WK_MIN(a, b) ((a) < (b) ? (a) : (b))
#define WK_MAX(a, b) ((a) > (b) ? (a) : (b))
#define WK_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Copies s[0..n) into out (out_size >= 8) for an error message: bytes
 * outside printable ASCII become '?', so text from a hostile file cannot
 * send escape sequences to a terminal; a cut copy ends in "...". */
void wk_str_printable(const char *s, size_t n, char *out, size_t out_size);

/* The longest text wk_f32_json writes, its NUL included. */
#define WK_F32_JSON_MAX 32
/* Writes float32 v into out [WK_F32_JSON_MAX] as JSON text with 9
 * significant digits (the fewest that always read back as the same
 * float32), byte for byte what jansson 2.14 writes for json_real(v) with
 * JSON_REAL_PRECISION(9) ("%.9g" of v, ".0" added to an integer, the
 * exponent without '+' or leading zeros), NUL-terminated. Returns the
 * length, or 0 (nothing written) when v is NaN or infinite, which JSON
 * cannot hold. Thread-safe; f32_text.c. */
size_t wk_f32_json(float v, char *out);

/* Writes double v into out [32] as the shortest "%.{1..17}g" text that
 * reads back (strtod) as v: 0.3 for the double nearest 0.3, where "%.17g"
 * gives 0.29999999999999999 (how a Modelfile's PARAMETER shows; Python's
 * repr and Go's %v write the same digits). NUL-terminated; returns the
 * length. NaN and infinities as "%g" writes them. f32_text.c. */
size_t wk_f64_text(double v, char *out);

/* A growable byte string, kept NUL-terminated once anything is added.
 * Zero-initialise; free p with wk_free. */
struct wk_buf {
    char *p;
    size_t len, cap;
};
/* Appends s[0..n). Returns false (nothing appended) when out of memory. */
bool wk_buf_add(struct wk_buf *b, const char *s, size_t n);

/* Length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629: no
 * overlong forms, no surrogates, at most U+10FFFF), or 0. */
size_t wk_utf8_seq_len(const unsigned char *s, size_t n);

/* A wk_malloc'd, NUL-terminated copy of s[0..n) in which every byte that
 * does not start a well-formed UTF-8 sequence (a token that is part of a
 * character, a stray byte) is replaced by U+FFFD, so the copy is valid
 * UTF-8 (what JSON strings need); its length in *out_len. NULL on ENOMEM. */
char *wk_utf8_sanitize(const char *s, size_t n, size_t *out_len);

/* Formats into a fresh wk_malloc'd string (caller frees); NULL on ENOMEM. */
char *wk_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* WK_BASE_H */
