/*
 * mapfile.c - whole files in memory, read-only: mapped (POSIX mmap), or
 * read into anonymous memory backed by transparent huge pages.
 *
 * The second is for model weights: decode streams every weight once per
 * token, and with 4 KiB pages of a file mapping that is a TLB miss every
 * 4 KiB (25,000 page walks a token for a 100 MB model); 2 MiB pages
 * remove nearly all of them (measured: +10-15% tokens/s at 2 threads on
 * this repo's models, BENCHMARKS.md). The file is read with pread, never
 * mapped, so the process's RSS holds one copy.
 */
#include "wk_base.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads the size_bytes of fd into 2 MiB-aligned anonymous memory advised
 * for huge pages; sets f->data, f->map_base, f->map_bytes. */
static enum wk_status read_resident(struct wk_mapped_file *f, int fd, struct wk_error *err)
{
    const size_t size = (size_t)f->size_bytes;
    size_t map_bytes;
    /* at least 4 KiB past the end stay mapped, as they did before this used
     * wk_huge_map: a vector load may cross the last byte */
    uint8_t *data = wk_huge_map(size + 4096, &map_bytes);
    if (!data)
        return wk_error_set(err, WK_E_NOMEM, "%s: cannot allocate %zu bytes: %s", f->path, size,
                            strerror(errno));
    size_t got = 0;
    while (got < size) {
        ssize_t r = pread(fd, data + got, size - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = errno;
            munmap(data, map_bytes);
            if (r == 0)
                return wk_error_set(err, WK_E_IO, "%s: file shrank while being read (%zu of %zu bytes)",
                                    f->path, got, size);
            return wk_error_set(err, WK_E_IO, "%s: read failed: %s", f->path, strerror(e));
        }
        got += (size_t)r;
    }
    (void)mprotect(data, map_bytes, PROT_READ);
    f->data = data;
    f->map_base = data;
    f->map_bytes = map_bytes;
    f->anonymous = true;
    return WK_OK;
}

/* MemAvailable from /proc/meminfo in bytes, or UINT64_MAX when unknown. */
static uint64_t mem_available(void)
{
    FILE *fp = fopen("/proc/meminfo", "re");
    if (!fp) return UINT64_MAX;
    char line[256];
    uint64_t kb = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, fp))
        found = sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1;
    fclose(fp);
    return found ? kb * 1024 : UINT64_MAX;
}

enum wk_status wk_mapped_file_open(struct wk_mapped_file *f, const char *path,
                                   struct wk_error *err)
{
    return wk_mapped_file_open_ex(f, path, false, err);
}

enum wk_status wk_mapped_file_open_ex(struct wk_mapped_file *f, const char *path, bool resident,
                                      struct wk_error *err)
{
    memset(f, 0, sizeof *f);
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; regular files
     * ignore it */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        return wk_error_set(err, e == ENOENT ? WK_E_NOT_FOUND : WK_E_IO, "%s: %s", path,
                            e == ENOENT ? "no such file" : strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return wk_error_set(err, WK_E_IO, "%s: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return wk_error_set(err, WK_E_IO, "%s: is a directory, not a file", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return wk_error_set(err, WK_E_IO, "%s: not a regular file", path);
    }
    f->path = wk_strdup(path);
    if (!f->path) {
        close(fd);
        return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    }
    f->size_bytes = (uint64_t)st.st_size;
    /* the pread loop wants blocking reads (O_NONBLOCK was for the open) */
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    /* a file larger than the memory available is mapped instead: the page
     * cache can then hold what fits */
    if (resident && f->size_bytes > 0 && f->size_bytes < mem_available()) {
        enum wk_status rst = read_resident(f, fd, err);
        if (rst != WK_E_NOMEM) {
            close(fd);
            if (rst) {
                char *p = f->path;
                memset(f, 0, sizeof *f);
                wk_free(p);
            }
            return rst;
        }
        wk_error_clear(err); /* no memory for a copy: map it */
    }
    if (f->size_bytes > 0) {
        void *p = mmap(NULL, (size_t)f->size_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            wk_free(f->path);
            memset(f, 0, sizeof *f);
            return wk_error_set(err, WK_E_IO, "%s: cannot map: %s", path, strerror(e));
        }
        f->data = p;
        f->map_base = p;
        f->map_bytes = (size_t)f->size_bytes;
    }
    close(fd);
    return WK_OK;
}

bool wk_mapped_file_set_writable(struct wk_mapped_file *f, bool writable)
{
    if (!f || !f->anonymous || !f->map_base) return false;
    return mprotect(f->map_base, f->map_bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ) == 0;
}

void wk_mapped_file_close(struct wk_mapped_file *f)
{
    if (!f) return;
    if (f->map_base) munmap(f->map_base, f->map_bytes);
    wk_free(f->path);
    memset(f, 0, sizeof *f);
}

char *wk_read_file(const char *path, size_t max, size_t *len)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NULL;
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : !S_ISREG(st.st_mode) ? EINVAL : 0;
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    struct wk_buf b = {0};
    char chunk[65536];
    while (!e) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            e = r < 0 ? errno : 0;
            break;
        }
        e = b.len + (size_t)r > max ? EFBIG : !wk_buf_add(&b, chunk, (size_t)r) ? ENOMEM : 0;
    }
    close(fd);
    if (!e && !b.p && !(b.p = wk_calloc(1, 1))) e = ENOMEM; /* an empty file */
    if (e) {
        wk_free(b.p);
        errno = e;
        return NULL;
    }
    *len = b.len;
    return b.p;
}
