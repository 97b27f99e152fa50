/*
 * json_file.c - JSON files read whole, then parsed (wk_json.h).
 */
#include "wk_json.h"

#include "../base/wk_base.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
    size_t n = 0;
    char *text = wk_read_file(path, SIZE_MAX - 1, &n);
    if (!text)
        return fail(error, path, errno == EISDIR ? "is a directory"
                                 : errno == EINVAL ? "not a regular file"
                                 : errno == ENOMEM ? "out of memory"
                                                   : strerror(errno));
    json_t *j = json_loadb(text, n, flags, error);
    if (!j && error) snprintf(error->source, sizeof error->source, "%s", path);
    wk_free(text);
    return j;
}

char *wk_json_text(const json_t *v)
{
    if (!json_is_real(v)) return json_dumps(v, JSON_ENCODE_ANY);
    char num[32];
    wk_f64_text(json_real_value(v), num);
    return strdup(num);
}
