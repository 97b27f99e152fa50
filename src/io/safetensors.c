/*
 * safetensors.c - safetensors reader and writer (see wk_safetensors.h for
 * the layout; the spec is the README of github.com/huggingface/safetensors,
 * and its Rust crate is the reference for what readers refuse).
 *
 * Reading: the 8-byte header length is bounded first, the header is parsed
 * by jansson (which checks UTF-8 and, with JSON_REJECT_DUPLICATES, unique
 * keys), and every entry is copied into a struct wk_st_tensor after its
 * dtype, shape, byte size and range were checked. The tensors are then
 * sorted by offset and checked for overlap. The JSON tree is freed before
 * open returns; only names and metadata strings are kept (wk_malloc'd).
 *
 * Invariants after a successful open: n_tensors >= 1; every tensor's
 * [data, data + size_bytes) lies inside the data section and overlaps no
 * other non-empty tensor; size_bytes == n_elements * dtype size without
 * overflow; tensors[] is in offset order and by_name[] in strcmp order.
 */
#include "wk_safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct wk_safetensors {
    struct wk_mapped_file file; /* unused (zero) when opened from memory */
    const uint8_t *data;
    uint64_t size;
    char *name;
    int64_t n_tensors;
    struct wk_st_tensor *tensors;        /* file order */
    const struct wk_st_tensor **by_name; /* sorted by name, for find */
    int64_t n_meta;
    char **meta; /* [n_meta][2]: key, value */
};

static const struct {
    const char *name;
    uint8_t size;
} g_dtypes[WK_ST_DTYPE_COUNT] = {
    [WK_ST_F32] = {"F32", 4}, [WK_ST_F16] = {"F16", 2}, [WK_ST_BF16] = {"BF16", 2},
    [WK_ST_I8] = {"I8", 1},   [WK_ST_U8] = {"U8", 1},   [WK_ST_U32] = {"U32", 4},
    [WK_ST_I32] = {"I32", 4}, [WK_ST_I64] = {"I64", 8},
};

/* dtypes of the safetensors spec that wick does not read. */
static const char *const g_unsupported[] = {
    "BOOL", "I16",     "U16",     "U64",     "F64",
    "C64",  "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2",
};

size_t wk_st_dtype_size(enum wk_st_dtype t)
{
    return (unsigned)t < WK_ST_DTYPE_COUNT ? g_dtypes[t].size : 0;
}

const char *wk_st_dtype_name(enum wk_st_dtype t)
{
    return (unsigned)t < WK_ST_DTYPE_COUNT ? g_dtypes[t].name : "unknown";
}

/* ------------------------------------------------------------------ reader */

/* A printable, bounded copy of a name from the file, for messages. */
static void printable(const char *s, char *out, size_t out_size)
{
    wk_str_printable(s, strlen(s), out, out_size);
}

static enum wk_status parse_dtype(const struct wk_safetensors *st, const char *nb, json_t *jd,
                                  enum wk_st_dtype *out, struct wk_error *err)
{
    if (!json_is_string(jd))
        return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s: dtype is missing or not a string",
                            st->name, nb);
    const char *s = json_string_value(jd);
    for (int i = 0; i < WK_ST_DTYPE_COUNT; i++)
        if (strcmp(s, g_dtypes[i].name) == 0) {
            *out = (enum wk_st_dtype)i;
            return WK_OK;
        }
    for (size_t i = 0; i < WK_ARRAY_LEN(g_unsupported); i++)
        if (strcmp(s, g_unsupported[i]) == 0)
            return wk_error_set(err, WK_E_UNSUPPORTED,
                                "%s: tensor %s: dtype %s is not supported (wick reads F32, F16, "
                                "BF16, I8, U8, U32, I32, I64)",
                                st->name, nb, s);
    char db[64];
    printable(s, db, sizeof db);
    return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s: unknown dtype \"%s\"", st->name, nb, db);
}

/* Fills t from one header entry, checking its range against the data
 * section [base, base + data_size). t->name is already set. */
static enum wk_status parse_tensor(const struct wk_safetensors *st, json_t *v, const uint8_t *base,
                                   uint64_t data_size, struct wk_st_tensor *t,
                                   struct wk_error *err)
{
    char nb[128];
    printable(t->name, nb, sizeof nb);
    if (!json_is_object(v))
        return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s: entry is not a JSON object",
                            st->name, nb);
    enum wk_status s = parse_dtype(st, nb, json_object_get(v, "dtype"), &t->dtype, err);
    if (s) return s;

    json_t *js = json_object_get(v, "shape");
    if (!json_is_array(js))
        return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s: shape is missing or not an array",
                            st->name, nb);
    if (json_array_size(js) > WK_ST_MAX_DIMS)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: tensor %s: shape has %zu dimensions (at most %d)", st->name, nb,
                            json_array_size(js), WK_ST_MAX_DIMS);
    t->n_dims = (int32_t)json_array_size(js);
    t->n_elements = 1;
    for (int32_t d = 0; d < t->n_dims; d++) {
        json_t *jd = json_array_get(js, (size_t)d);
        if (!json_is_integer(jd) || json_integer_value(jd) < 0)
            return wk_error_set(err, WK_E_FORMAT,
                                "%s: tensor %s: shape[%d] is not a non-negative integer", st->name,
                                nb, (int)d);
        t->shape[d] = json_integer_value(jd);
        if (!wk_mul_u64(t->n_elements, (uint64_t)t->shape[d], &t->n_elements))
            return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s: element count overflows",
                                st->name, nb);
    }
    if (!wk_mul_u64(t->n_elements, g_dtypes[t->dtype].size, &t->size_bytes))
        return wk_error_set(err, WK_E_FORMAT, "%s: tensor %s: byte size overflows", st->name, nb);

    json_t *jo = json_object_get(v, "data_offsets");
    json_t *jb = json_array_get(jo, 0), *je = json_array_get(jo, 1);
    if (!json_is_array(jo) || json_array_size(jo) != 2 || !json_is_integer(jb) ||
        !json_is_integer(je))
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: tensor %s: data_offsets is missing or not two integers", st->name,
                            nb);
    long long b = json_integer_value(jb), e = json_integer_value(je);
    if (b < 0 || e < b)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: tensor %s: data_offsets [%lld, %lld] must have 0 <= begin <= end",
                            st->name, nb, b, e);
    if ((uint64_t)(e - b) != t->size_bytes)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: tensor %s: data_offsets [%lld, %lld] hold %llu bytes, but %llu "
                            "elements of %s need %llu",
                            st->name, nb, b, e, (unsigned long long)(e - b),
                            (unsigned long long)t->n_elements, g_dtypes[t->dtype].name,
                            (unsigned long long)t->size_bytes);
    if ((uint64_t)e > data_size)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: tensor %s: data_offsets [%lld, %lld] run past the end of the data "
                            "section (%llu bytes)",
                            st->name, nb, b, e, (unsigned long long)data_size);
    t->data = base + b;
    return WK_OK;
}

static enum wk_status parse_metadata(struct wk_safetensors *st, json_t *meta,
                                     struct wk_error *err)
{
    if (!json_is_object(meta))
        return wk_error_set(err, WK_E_FORMAT, "%s: __metadata__ is not a JSON object", st->name);
    st->meta = wk_calloc(2 * json_object_size(meta) + 1, sizeof *st->meta);
    if (!st->meta) return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", st->name);
    st->n_meta = (int64_t)json_object_size(meta); /* close frees the NULLs too */
    const char *key;
    json_t *v;
    int64_t i = 0;
    json_object_foreach(meta, key, v) {
        if (!json_is_string(v)) {
            char kb[128];
            printable(key, kb, sizeof kb);
            return wk_error_set(err, WK_E_FORMAT, "%s: __metadata__ %s is not a string",
                                st->name, kb);
        }
        /* without JSON_ALLOW_NUL jansson refuses \u0000, so strdup loses nothing */
        st->meta[2 * i] = wk_strdup(key);
        st->meta[2 * i + 1] = wk_strdup(json_string_value(v));
        if (!st->meta[2 * i] || !st->meta[2 * i + 1])
            return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", st->name);
        i++;
    }
    return WK_OK;
}

static int cmp_offset(const void *a, const void *b)
{
    const struct wk_st_tensor *x = a, *y = b;
    const uint8_t *px = x->data, *py = y->data;
    if (px != py) return px < py ? -1 : 1;
    /* by (begin, end), as the reference sorts data_offsets: an empty tensor
     * before a non-empty one at its offset; empty ones by name */
    if (x->size_bytes != y->size_bytes) return x->size_bytes < y->size_bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp((*(const struct wk_st_tensor *const *)a)->name,
                  (*(const struct wk_st_tensor *const *)b)->name);
}

/* The tensors, in offset order, must cover the data exactly: each starts
 * where the ones before it end (no overlap, no gap) and the last ends at
 * the file's end, as the safetensors reference checks (its
 * Metadata::validate: InvalidOffset, MetadataIncompleteBuffer). A header
 * length one byte short (a header padded with spaces still parses) moves
 * every tensor by a byte: without this it loaded and ran on garbage. */
static enum wk_status check_layout(const struct wk_safetensors *st, const uint8_t *base, uint64_t data_size,
                                   struct wk_error *err)
{
    uint64_t end = 0;
    const struct wk_st_tensor *last = NULL;
    for (int64_t i = 0; i < st->n_tensors; i++) {
        const struct wk_st_tensor *t = &st->tensors[i];
        const uint64_t off = (uint64_t)((const uint8_t *)t->data - base);
        if (off != end) {
            char a[128], b[128];
            printable(t->name, b, sizeof b);
            if (last) printable(last->name, a, sizeof a);
            if (off < end) /* end > 0: there is a last */
                return wk_error_set(err, WK_E_FORMAT, "%s: tensors %s and %s overlap", st->name, a, b);
            if (!last)
                return wk_error_set(err, WK_E_FORMAT,
                                    "%s: the first tensor, %s, starts at byte %llu of the data, not 0 (the tensors "
                                    "must cover the data without gaps)",
                                    st->name, b, (unsigned long long)off);
            return wk_error_set(err, WK_E_FORMAT,
                                "%s: tensor %s starts at byte %llu of the data, but %s ends at %llu (the tensors "
                                "must cover the data without gaps)",
                                st->name, b, (unsigned long long)off, a, (unsigned long long)end);
        }
        end = off + t->size_bytes;
        last = t;
    }
    if (end != data_size)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: the tensors cover %llu bytes of data, but the file holds %llu after its header "
                            "(a wrong header length, or bytes after the last tensor)",
                            st->name, (unsigned long long)end, (unsigned long long)data_size);
    return WK_OK;
}

static enum wk_status parse_header(struct wk_safetensors *st, json_t *root, uint64_t header_bytes,
                                   struct wk_error *err)
{
    const uint8_t *base = st->data + 8 + header_bytes;
    uint64_t data_size = st->size - 8 - header_bytes;
    json_t *meta = json_object_get(root, "__metadata__");
    enum wk_status s;
    if (meta && (s = parse_metadata(st, meta, err))) return s;

    size_t n = json_object_size(root) - (meta ? 1 : 0);
    if (n == 0) return wk_error_set(err, WK_E_FORMAT, "%s: no tensors", st->name);
    st->tensors = wk_calloc(n, sizeof *st->tensors);
    st->by_name = wk_malloc(n * sizeof *st->by_name);
    if (!st->tensors || !st->by_name)
        return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", st->name);
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (v == meta) continue;
        if (!*key)
            return wk_error_set(err, WK_E_FORMAT, "%s: a tensor has an empty name", st->name);
        struct wk_st_tensor *t = &st->tensors[st->n_tensors];
        if (!(t->name = wk_strdup(key)))
            return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", st->name);
        st->n_tensors++;
        if ((s = parse_tensor(st, v, base, data_size, t, err))) return s;
    }
    qsort(st->tensors, n, sizeof *st->tensors, cmp_offset);
    for (size_t i = 0; i < n; i++) st->by_name[i] = &st->tensors[i];
    qsort(st->by_name, n, sizeof *st->by_name, cmp_name);
    return check_layout(st, base, data_size, err);
}

static enum wk_status parse(struct wk_safetensors *st, struct wk_error *err)
{
    if (st->size < 8)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: file too short for a safetensors header length (%llu bytes, "
                            "need 8)",
                            st->name, (unsigned long long)st->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | st->data[i];
    if (n < 2 || n > WK_ST_MAX_HEADER_BYTES)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: header length %llu is out of range (2 to %llu bytes)", st->name,
                            (unsigned long long)n, (unsigned long long)WK_ST_MAX_HEADER_BYTES);
    if (n > st->size - 8)
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: header length %llu runs past the end of the file (%llu bytes)",
                            st->name, (unsigned long long)n, (unsigned long long)st->size);
    json_error_t je;
    json_t *root = json_loadb((const char *)st->data + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        char text[160];
        printable(je.text, text, sizeof text);
        return wk_error_set(err, WK_E_FORMAT, "%s: header is not valid JSON: %s (at byte %d)",
                            st->name, text, je.position);
    }
    enum wk_status s =
        json_is_object(root)
            ? parse_header(st, root, n, err)
            : wk_error_set(err, WK_E_FORMAT, "%s: header is not a JSON object", st->name);
    json_decref(root);
    return s;
}

static enum wk_status open_common(struct wk_safetensors *st, struct wk_safetensors **out,
                                  struct wk_error *err)
{
    enum wk_status s = parse(st, err);
    if (s) {
        wk_safetensors_close(st);
        return s;
    }
    *out = st;
    return WK_OK;
}

enum wk_status wk_safetensors_open_memory(const void *data, uint64_t size, const char *name,
                                          struct wk_safetensors **out, struct wk_error *err)
{
    *out = NULL;
    struct wk_safetensors *st = wk_calloc(1, sizeof *st);
    if (!st || !(st->name = wk_strdup(name))) {
        wk_free(st);
        return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", name);
    }
    st->data = data;
    st->size = size;
    return open_common(st, out, err);
}

enum wk_status wk_safetensors_open(const char *path, struct wk_safetensors **out,
                                   struct wk_error *err)
{
    return wk_safetensors_open_ex(path, false, out, err);
}

enum wk_status wk_safetensors_open_ex(const char *path, bool resident, struct wk_safetensors **out,
                                      struct wk_error *err)
{
    *out = NULL;
    struct wk_safetensors *st = wk_calloc(1, sizeof *st);
    if (!st) return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    enum wk_status s = wk_mapped_file_open_ex(&st->file, path, resident, err);
    if (s) {
        wk_free(st);
        return s;
    }
    if (!(st->name = wk_strdup(path))) {
        wk_safetensors_close(st);
        return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    }
    st->data = st->file.data;
    st->size = st->file.size_bytes;
    return open_common(st, out, err);
}

void wk_safetensors_close(struct wk_safetensors *st)
{
    if (!st) return;
    for (int64_t i = 0; i < st->n_tensors; i++) wk_free((char *)st->tensors[i].name);
    for (int64_t i = 0; i < 2 * st->n_meta; i++) wk_free(st->meta[i]);
    wk_free(st->tensors);
    wk_free(st->by_name);
    wk_free(st->meta);
    wk_free(st->name);
    wk_mapped_file_close(&st->file);
    wk_free(st);
}

int64_t wk_safetensors_n_tensors(const struct wk_safetensors *st) { return st->n_tensors; }

const struct wk_st_tensor *wk_safetensors_tensor(const struct wk_safetensors *st, int64_t i)
{
    WK_ASSERT(i >= 0 && i < st->n_tensors);
    return &st->tensors[i];
}

const struct wk_st_tensor *wk_safetensors_find(const struct wk_safetensors *st, const char *name)
{
    struct wk_st_tensor key = {.name = name};
    const struct wk_st_tensor *kp = &key;
    const struct wk_st_tensor **hit =
        bsearch(&kp, st->by_name, (size_t)st->n_tensors, sizeof *st->by_name, cmp_name);
    return hit ? *hit : NULL;
}

const char *wk_safetensors_metadata(const struct wk_safetensors *st, const char *key)
{
    for (int64_t i = 0; i < st->n_meta; i++)
        if (strcmp(st->meta[2 * i], key) == 0) return st->meta[2 * i + 1];
    return NULL;
}

/* ------------------------------------------------------------------ writer */

/* Checks tensor t for writing and computes its byte size. */
static enum wk_status check_write_tensor(const char *path, const struct wk_st_write_tensor *t,
                                         uint64_t *size_bytes, struct wk_error *err)
{
    char nb[128];
    printable(t->name ? t->name : "(null)", nb, sizeof nb);
    if (!t->name || !*t->name || strcmp(t->name, "__metadata__") == 0)
        return wk_error_set(err, WK_E_INVALID, "%s: tensor name \"%s\" is empty or reserved",
                            path, nb);
    if ((unsigned)t->dtype >= WK_ST_DTYPE_COUNT)
        return wk_error_set(err, WK_E_INVALID, "%s: tensor %s: dtype %d is not a wk_st_dtype",
                            path, nb, (int)t->dtype);
    if (t->n_dims < 0 || t->n_dims > WK_ST_MAX_DIMS || (t->n_dims && !t->shape))
        return wk_error_set(err, WK_E_INVALID, "%s: tensor %s: %d dimensions (0 to %d)", path, nb,
                            (int)t->n_dims, WK_ST_MAX_DIMS);
    uint64_t n_el = 1;
    for (int32_t d = 0; d < t->n_dims; d++)
        if (t->shape[d] < 0 || !wk_mul_u64(n_el, (uint64_t)t->shape[d], &n_el))
            return wk_error_set(err, WK_E_INVALID,
                                "%s: tensor %s: shape[%d] = %lld is negative or overflows", path,
                                nb, (int)d, (long long)t->shape[d]);
    if (!wk_mul_u64(n_el, g_dtypes[t->dtype].size, size_bytes) || *size_bytes > INT64_MAX)
        return wk_error_set(err, WK_E_INVALID, "%s: tensor %s: byte size overflows", path, nb);
    if (*size_bytes && !t->data)
        return wk_error_set(err, WK_E_INVALID, "%s: tensor %s: data is NULL", path, nb);
    return WK_OK;
}

/* The header object for tensors[order[0..n)] laid out from offset 0, and
 * the metadata pairs. jansson's *_new and 'o' calls take the reference
 * even when they fail, so one decref of root frees everything. */
static enum wk_status build_header(const char *path, const struct wk_st_write_tensor *tensors,
                                   const int64_t *order, int64_t n, const char *const *meta_kv,
                                   int32_t n_meta, json_t **out, struct wk_error *err)
{
    json_t *root = json_object();
    if (!root) return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    enum wk_status s = WK_OK;
    if (n_meta > 0) {
        json_t *meta = json_object();
        for (int32_t i = 0; i < n_meta && !s; i++) {
            const char *k = meta_kv[2 * i], *v = meta_kv[2 * i + 1];
            if (!k || !v || json_object_get(meta, k) ||
                json_object_set_new(meta, k, json_string(v)) != 0)
                s = wk_error_set(err, WK_E_INVALID,
                                 "%s: metadata pair %d is NULL, not UTF-8 or a repeated key", path,
                                 (int)i);
        }
        if (json_object_set_new(root, "__metadata__", meta) != 0 && !s)
            s = wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    }
    uint64_t offset = 0;
    for (int64_t k = 0; k < n && !s; k++) {
        const struct wk_st_write_tensor *t = &tensors[order[k]];
        uint64_t size_bytes = 0, end;
        if ((s = check_write_tensor(path, t, &size_bytes, err))) break;
        if (!wk_add_u64(offset, size_bytes, &end) || end > INT64_MAX) {
            s = wk_error_set(err, WK_E_INVALID, "%s: the data section overflows", path);
            break;
        }
        char nb[128];
        printable(t->name, nb, sizeof nb);
        if (json_object_get(root, t->name)) {
            s = wk_error_set(err, WK_E_INVALID, "%s: tensor name %s is used twice", path, nb);
            break;
        }
        json_t *shape = json_array();
        for (int32_t d = 0; d < t->n_dims; d++)
            json_array_append_new(shape, json_integer(t->shape[d]));
        if ((int64_t)json_array_size(shape) != t->n_dims) {
            json_decref(shape);
            s = wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
            break;
        }
        json_t *entry = json_pack("{s:s, s:o, s:[I,I]}", "dtype", g_dtypes[t->dtype].name,
                                  "shape", shape, "data_offsets", (json_int_t)offset,
                                  (json_int_t)end);
        if (!entry) s = wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
        else if (json_object_set_new(root, t->name, entry) != 0) /* refuses non-UTF-8 keys */
            s = wk_error_set(err, WK_E_INVALID, "%s: tensor name %s is not UTF-8", path, nb);
        offset = end;
    }
    if (s) {
        json_decref(root);
        return s;
    }
    *out = root;
    return WK_OK;
}

static bool write_all(int fd, const void *p, uint64_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, (size_t)WK_MIN(n, (uint64_t)1 << 30));
        if (w < 0 && errno == EINTR) continue;
        if (w == 0) errno = EIO;
        if (w <= 0) return false;
        b += w;
        n -= (uint64_t)w;
    }
    return true;
}

/* Writes the file body to the open temporary file fd. */
static bool write_body(int fd, const char *header, size_t header_len,
                       const struct wk_st_write_tensor *tensors, const int64_t *order, int64_t n)
{
    static const char spaces[8] = "        ";
    size_t padded = (header_len + 7) / 8 * 8;
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    if (!write_all(fd, len, 8) || !write_all(fd, header, header_len) ||
        !write_all(fd, spaces, padded - header_len))
        return false;
    for (int64_t k = 0; k < n; k++) {
        const struct wk_st_write_tensor *t = &tensors[order[k]];
        uint64_t size = wk_st_dtype_size(t->dtype); /* checked by build_header */
        for (int32_t d = 0; d < t->n_dims; d++) size *= (uint64_t)t->shape[d];
        if (size && !write_all(fd, t->data, size)) return false;
    }
    return true;
}

/* Records errno's failure of verb on the temporary file tmp. */
static enum wk_status io_error(struct wk_error *err, const char *path, const char *verb,
                               const char *tmp)
{
    return wk_error_set(err, WK_E_IO, "%s: cannot %s %s: %s", path, verb, tmp, strerror(errno));
}

/* Syncs the folder holding path, so the rename itself is durable. Best
 * effort: some file systems refuse fsync on a directory. */
static void sync_folder(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? wk_strndup(path, slash == path ? 1 : (size_t)(slash - path))
                      : wk_strdup(".");
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    wk_free(dir);
}

enum wk_status wk_safetensors_write(const char *path, const struct wk_st_write_tensor *tensors,
                                    int64_t n, const char *const *meta_kv, int32_t n_meta,
                                    struct wk_error *err)
{
    if (n < 1 || !tensors || n_meta < 0 || (n_meta > 0 && !meta_kv))
        return wk_error_set(err, WK_E_INVALID,
                            "%s: need at least one tensor and n_meta >= 0 (got %lld, %d)", path,
                            (long long)n, (int)n_meta);
    if ((uint64_t)n > SIZE_MAX / sizeof(int64_t))
        return wk_error_set(err, WK_E_INVALID, "%s: %lld tensors", path, (long long)n);
    /* largest elements first, stable: every offset is then a multiple of
     * its tensor's element size, with no gaps */
    int64_t *order = wk_malloc((size_t)n * sizeof *order);
    if (!order) return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    int64_t k = 0;
    for (size_t size = 8; size >= 1; size /= 2)
        for (int64_t i = 0; i < n; i++)
            if (wk_st_dtype_size(tensors[i].dtype) == size) order[k++] = i;
    for (int64_t i = 0; i < n; i++) /* a bad dtype, for build_header to name */
        if (wk_st_dtype_size(tensors[i].dtype) == 0) order[k++] = i;

    json_t *root = NULL;
    enum wk_status s = build_header(path, tensors, order, n, meta_kv, n_meta, &root, err);
    char *header = s ? NULL : json_dumps(root, JSON_COMPACT);
    json_decref(root);
    char *tmp = s ? NULL : wk_asprintf("%s.tmp.XXXXXX", path);
    if (!s && (!header || !tmp)) s = wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    if (!s && strlen(header) > WK_ST_MAX_HEADER_BYTES) /* readers would refuse it */
        s = wk_error_set(err, WK_E_INVALID, "%s: header of %zu bytes is over the %llu limit", path,
                         strlen(header), (unsigned long long)WK_ST_MAX_HEADER_BYTES);
    if (s) {
        free(header);
        wk_free(tmp);
        wk_free(order);
        return s;
    }

    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        s = io_error(err, path, "create", tmp);
    } else {
        if (fchmod(fd, 0644) != 0) s = io_error(err, path, "chmod", tmp);
        else if (!write_body(fd, header, strlen(header), tensors, order, n))
            s = io_error(err, path, "write", tmp);
        else if (fsync(fd) != 0) s = io_error(err, path, "fsync", tmp);
        if (close(fd) != 0 && !s) s = io_error(err, path, "close", tmp);
        if (!s && rename(tmp, path) != 0) s = io_error(err, path, "rename", tmp);
        if (s) unlink(tmp);
        else sync_folder(path);
    }
    free(header);
    wk_free(tmp);
    wk_free(order);
    return s;
}
