/*
 * mapfile.c - read-only memory maps of whole files (POSIX mmap).
 */
#include "wk_base.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum wk_status wk_mapped_file_open(struct wk_mapped_file *f, const char *path,
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
    }
    close(fd);
    return WK_OK;
}

void wk_mapped_file_close(struct wk_mapped_file *f)
{
    if (!f) return;
    if (f->data) munmap((void *)f->data, (size_t)f->size_bytes);
    wk_free(f->path);
    memset(f, 0, sizeof *f);
}
