/*
 * json_file.c - JSON files read whole, then parsed (wk_json.h).
 */
#include "wk_json.h"

#include "../base/wk_base.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* error as jansson fills it for a file it cannot open */
static json_t *fail(json_error_t *error, const char *path, const char *why)
{
    if (error) {
        memset(error, 0, sizeof *error);
        error->line = error->column = -1;
        snprintf(error->source, sizeof error->source, "%s", path);
        /* as jansson keeps it: the text, and the error code in its last byte */
        snprintf(error->text, sizeof error->text - 1, "unable to open %s: %s", path, why);
        error->text[sizeof error->text - 1] = (char)json_error_cannot_open_file;
    }
    return NULL;
}

json_t *wk_json_load_file(const char *path, size_t flags, json_error_t *error)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return fail(error, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        close(fd);
        return fail(error, path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fail(error, path, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
    }
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    struct wk_buf b = {0};
    char chunk[65536];
    for (;;) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            const int e = errno;
            close(fd);
            wk_free(b.p);
            return fail(error, path, strerror(e));
        }
        if (r == 0) break;
        if (!wk_buf_add(&b, chunk, (size_t)r)) {
            close(fd);
            wk_free(b.p);
            return fail(error, path, "out of memory");
        }
    }
    close(fd);
    json_t *j = json_loadb(b.p ? b.p : "", b.len, flags, error);
    if (!j && error) snprintf(error->source, sizeof error->source, "%s", path);
    wk_free(b.p);
    return j;
}
