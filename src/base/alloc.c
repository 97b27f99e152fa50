/*
 * alloc.c - counted heap allocation and the scratch arena.
 *
 * Each wk_malloc block carries a 16-byte header holding its size, so the
 * live-byte counter stays exact through realloc and free. Aligned blocks
 * store the offset back to the raw pointer just before the aligned address.
 */
#include "wk_base.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HDR 16
#define HUGE_PAGE ((size_t)2 << 20)

static _Atomic int64_t g_live_bytes;
static _Atomic int64_t g_fail_countdown; /* test hook; 0 = off */

static bool should_fail(void)
{
    int64_t c = atomic_load_explicit(&g_fail_countdown, memory_order_relaxed);
    if (c <= 0) return false;
    if (c == 1) return true; /* stays at 1: every later allocation fails too */
    atomic_fetch_sub(&g_fail_countdown, 1);
    return false;
}

void wk_alloc_fail_after(int64_t n)
{
    atomic_store(&g_fail_countdown, n < 0 ? 0 : n);
}

int64_t wk_alloc_live_bytes(void)
{
    return atomic_load(&g_live_bytes);
}

void *wk_malloc(size_t size)
{
    if (size > SIZE_MAX - HDR || should_fail()) return NULL;
    uint8_t *p = malloc(size + HDR);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    atomic_fetch_add(&g_live_bytes, (int64_t)size);
    return p + HDR;
}

void *wk_calloc(size_t n, size_t size)
{
    uint64_t total;
    if (!wk_mul_u64(n, size, &total) || total > SIZE_MAX) return NULL;
    void *p = wk_malloc((size_t)total);
    if (p) memset(p, 0, (size_t)total);
    return p;
}

void wk_free(void *p)
{
    if (!p) return;
    uint8_t *raw = (uint8_t *)p - HDR;
    size_t size;
    memcpy(&size, raw, sizeof size);
    atomic_fetch_sub(&g_live_bytes, (int64_t)size);
    free(raw);
}

void *wk_realloc(void *p, size_t size)
{
    if (!p) return wk_malloc(size);
    if (size > SIZE_MAX - HDR || should_fail()) return NULL;
    uint8_t *raw = (uint8_t *)p - HDR;
    size_t old;
    memcpy(&old, raw, sizeof old);
    uint8_t *nraw = realloc(raw, size + HDR);
    if (!nraw) return NULL;
    memcpy(nraw, &size, sizeof size);
    atomic_fetch_add(&g_live_bytes, (int64_t)size - (int64_t)old);
    return nraw + HDR;
}

void *wk_huge_map(size_t size, size_t *len)
{
    if (!size || size > SIZE_MAX - 2 * HUGE_PAGE) {
        errno = size ? ENOMEM : EINVAL;
        return NULL;
    }
    *len = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    uint8_t *base = mmap(NULL, *len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)base + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    /* keep [p, p + len): the slack before it and after it goes back (base
     * is page-aligned, so p - base < HUGE_PAGE and some slack follows) */
    if (p > base) munmap(base, (size_t)(p - base));
    munmap(p + *len, (size_t)(base + HUGE_PAGE - p));
    (void)madvise(p, *len, MADV_HUGEPAGE); /* advice only */
    return p;
}

void *wk_huge_alloc(size_t size)
{
    size_t len;
    void *p = should_fail() ? NULL : wk_huge_map(size, &len);
    if (p) atomic_fetch_add(&g_live_bytes, (int64_t)size);
    return p;
}

void wk_huge_free(void *p, size_t size)
{
    if (!p) return;
    atomic_fetch_sub(&g_live_bytes, (int64_t)size);
    munmap(p, (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
}

char *wk_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = wk_malloc(len + 1);
    if (!d) return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *wk_memdup0(const void *p, size_t n)
{
    char *d = wk_malloc(n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

char *wk_strdup(const char *s)
{
    return wk_strndup(s, SIZE_MAX);
}

void *wk_aligned_alloc(size_t size)
{
    if (size > SIZE_MAX - 128) return NULL;
    uint8_t *raw = wk_malloc(size + 64);
    if (!raw) return NULL;
    uintptr_t a = ((uintptr_t)raw + 64) & ~(uintptr_t)63; /* at least 16 bytes past raw */
    uint8_t *p = (uint8_t *)a;
    uint32_t off = (uint32_t)(p - raw);
    memcpy(p - sizeof off, &off, sizeof off);
    return p;
}

void wk_aligned_free(void *p)
{
    if (!p) return;
    uint32_t off;
    memcpy(&off, (uint8_t *)p - sizeof off, sizeof off);
    wk_free((uint8_t *)p - off);
}

enum wk_status wk_arena_init(struct wk_arena *a, size_t size_bytes)
{
    memset(a, 0, sizeof *a);
    a->base = wk_aligned_alloc(size_bytes ? size_bytes : 64);
    if (!a->base) return WK_E_NOMEM;
    a->size_bytes = size_bytes;
    return WK_OK;
}

void wk_arena_deinit(struct wk_arena *a)
{
    if (!a) return;
    wk_aligned_free(a->base);
    memset(a, 0, sizeof *a);
}

void *wk_arena_alloc(struct wk_arena *a, size_t n_bytes)
{
    size_t start = (a->used_bytes + 63) & ~(size_t)63;
    if (start > a->size_bytes || n_bytes > a->size_bytes - start) return NULL;
    a->used_bytes = start + n_bytes;
    if (a->used_bytes > a->high_water_bytes) a->high_water_bytes = a->used_bytes;
    return a->base + start;
}

void wk_arena_reset(struct wk_arena *a)
{
    a->used_bytes = 0;
}
