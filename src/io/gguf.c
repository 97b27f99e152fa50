/*
 * gguf.c - GGUF reader (versions 2 and 3), validating everything it reads.
 *
 * Layout (little-endian):
 *   u32 magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
 *   n_kv x { string key | u32 type | value }
 *   n_tensors x { string name | u32 n_dims | u64 ne[n_dims] | u32 type | u64 offset }
 *   padding to `general.alignment` (default 32) | tensor data
 * A string is u64 length + bytes; an array is u32 element type + u64 count +
 * elements (arrays may nest).
 *
 * Invariants after a successful open: every string, array and tensor lies
 * inside the file; counts were checked against the bytes left before any
 * allocation sized by them; tensor dims are in [1, 2^48), ne[0] is a
 * multiple of the type's block size, sizes did not overflow, offsets are
 * aligned, and tensors do not overlap.
 */
#include "wk_io.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DIMS 4
#define MAX_NESTING 8
#define MAX_DIM_VALUE ((uint64_t)1 << 48)
#define DEFAULT_ALIGNMENT 32

/* Open-addressing index from a name to its position, for the metadata keys
 * and the tensor names: duplicate checks and lookups in O(1), so a file
 * with a million entries cannot make loading quadratic. */
struct name_index {
    int64_t *slots; /* position + 1; 0 = empty */
    uint64_t cap;
};

struct wk_gguf {
    struct wk_mapped_file file; /* unused (zero) when opened from memory */
    const uint8_t *data;
    uint64_t size;
    char *name;
    uint32_t version;
    uint64_t alignment;
    uint64_t data_offset;
    int64_t n_kv;
    char **keys;
    struct wk_gguf_value *values;
    int64_t n_tensors;
    struct wk_gguf_tensor *tensors;
    struct name_index key_index, tensor_index;
};

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static bool index_init(struct name_index *ix, int64_t n)
{
    ix->cap = 16;
    while (ix->cap < (uint64_t)n * 2) ix->cap <<= 1;
    ix->slots = wk_calloc(ix->cap, sizeof *ix->slots);
    return ix->slots != NULL;
}

/* Position of name among names[], or -1. */
static int64_t index_find(const struct name_index *ix, const char *const *names, size_t stride,
                          const char *name)
{
    if (!ix->slots) return -1;
    for (uint64_t i = hash_name(name) & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
        int64_t pos = ix->slots[i] - 1;
        if (pos < 0) return -1;
        const char *other = *(const char *const *)((const char *)names + (size_t)pos * stride);
        if (strcmp(other, name) == 0) return pos;
    }
}

/* Adds names[pos]; false when the name is already present. */
static bool index_add(struct name_index *ix, const char *const *names, size_t stride, int64_t pos)
{
    const char *name = *(const char *const *)((const char *)names + (size_t)pos * stride);
    uint64_t i = hash_name(name) & (ix->cap - 1);
    for (; ix->slots[i]; i = (i + 1) & (ix->cap - 1)) {
        const char *other =
            *(const char *const *)((const char *)names + (size_t)(ix->slots[i] - 1) * stride);
        if (strcmp(other, name) == 0) return false;
    }
    ix->slots[i] = pos + 1;
    return true;
}

struct cursor {
    const uint8_t *data;
    uint64_t pos, size;
    const char *name;
    struct wk_error *err;
};

static const char *g_type_names[WK_GGUF_TYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};
static const uint8_t g_type_sizes[WK_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *wk_gguf_type_name(enum wk_gguf_type t)
{
    return (unsigned)t < WK_GGUF_TYPE_COUNT ? g_type_names[t] : "unknown";
}

static enum wk_status truncated(struct cursor *c, const char *what, uint64_t need)
{
    return wk_error_set(c->err, WK_E_FORMAT,
                        "%s: truncated: %s needs %llu bytes at offset %llu, file has %llu",
                        c->name, what, (unsigned long long)need, (unsigned long long)c->pos,
                        (unsigned long long)c->size);
}

static enum wk_status read_bytes(struct cursor *c, void *dst, uint64_t n, const char *what)
{
    if (n > c->size - c->pos) return truncated(c, what, n);
    memcpy(dst, c->data + c->pos, (size_t)n);
    c->pos += n;
    return WK_OK;
}

static enum wk_status read_u32(struct cursor *c, uint32_t *v, const char *what)
{
    return read_bytes(c, v, 4, what);
}

static enum wk_status read_u64(struct cursor *c, uint64_t *v, const char *what)
{
    return read_bytes(c, v, 8, what);
}

static enum wk_status read_str(struct cursor *c, struct wk_gguf_str *s, const char *what)
{
    uint64_t len = 0;
    enum wk_status st = read_u64(c, &len, what);
    if (st) return st;
    if (len > c->size - c->pos)
        return wk_error_set(c->err, WK_E_FORMAT,
                            "%s: %s: string length %llu at offset %llu runs past the end of "
                            "the file (%llu bytes)",
                            c->name, what, (unsigned long long)len, (unsigned long long)(c->pos - 8),
                            (unsigned long long)c->size);
    s->data = (const char *)c->data + c->pos;
    s->len = len;
    c->pos += len;
    return WK_OK;
}

/* A printable, bounded copy of a key or name for messages. */
static void printable(struct wk_gguf_str s, char *out, size_t out_size)
{
    wk_str_printable(s.data, (size_t)s.len, out, out_size);
}

static void value_free(struct wk_gguf_value *v)
{
    if (v->type != WK_GGUF_ARRAY) return;
    wk_free(v->arr.strs);
    if (v->arr.items) {
        for (uint64_t i = 0; i < v->arr.n; i++) value_free(&v->arr.items[i]);
        wk_free(v->arr.items);
    }
    v->arr.strs = NULL;
    v->arr.items = NULL;
}

static enum wk_status read_value(struct cursor *c, enum wk_gguf_type type, struct wk_gguf_value *v,
                                 const char *key, int depth);

static enum wk_status read_array(struct cursor *c, struct wk_gguf_value *v, const char *key,
                                 int depth)
{
    uint32_t et;
    uint64_t n;
    enum wk_status st;
    if ((st = read_u32(c, &et, "array element type")) || (st = read_u64(c, &n, "array length")))
        return wk_error_prefix(c->err, st, "key %s: ", key);
    if (et >= WK_GGUF_TYPE_COUNT)
        return wk_error_set(c->err, WK_E_FORMAT, "%s: key %s: unknown array element type %u",
                            c->name, key, et);
    if (depth >= MAX_NESTING)
        return wk_error_set(c->err, WK_E_FORMAT, "%s: key %s: arrays nested deeper than %d",
                            c->name, key, MAX_NESTING);
    v->arr.elem_type = (enum wk_gguf_type)et;
    uint64_t left = c->size - c->pos;
    uint64_t min_elem = g_type_sizes[et] ? g_type_sizes[et] : (et == WK_GGUF_STRING ? 8 : 12);
    if (n > left / min_elem)
        return wk_error_set(c->err, WK_E_FORMAT,
                            "%s: key %s: array of %llu %s elements needs at least %llu bytes, "
                            "only %llu left",
                            c->name, key, (unsigned long long)n, g_type_names[et],
                            (unsigned long long)n * min_elem, (unsigned long long)left);
    v->arr.n = n;
    if (g_type_sizes[et]) {
        v->arr.raw = c->data + c->pos;
        c->pos += n * g_type_sizes[et];
        if (et == WK_GGUF_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (v->arr.raw[i] > 1)
                    return wk_error_set(c->err, WK_E_FORMAT,
                                        "%s: key %s: bool element %llu has value %u", c->name, key,
                                        (unsigned long long)i, v->arr.raw[i]);
        return WK_OK;
    }
    if (et == WK_GGUF_STRING) {
        v->arr.strs = wk_malloc((size_t)(n ? n : 1) * sizeof *v->arr.strs);
        if (!v->arr.strs) return wk_error_set(c->err, WK_E_NOMEM, "%s: out of memory", c->name);
        for (uint64_t i = 0; i < n; i++)
            if ((st = read_str(c, &v->arr.strs[i], "array string")))
                return wk_error_prefix(c->err, st, "key %s element %llu: ", key, (unsigned long long)i);
        return WK_OK;
    }
    v->arr.items = wk_calloc((size_t)(n ? n : 1), sizeof *v->arr.items);
    if (!v->arr.items) return wk_error_set(c->err, WK_E_NOMEM, "%s: out of memory", c->name);
    for (uint64_t i = 0; i < n; i++) {
        v->arr.items[i].type = WK_GGUF_ARRAY;
        if ((st = read_array(c, &v->arr.items[i], key, depth + 1))) {
            v->arr.n = i + 1; /* free what was parsed */
            return st;
        }
    }
    return WK_OK;
}

static enum wk_status read_value(struct cursor *c, enum wk_gguf_type type, struct wk_gguf_value *v,
                                 const char *key, int depth)
{
    v->type = type;
    uint8_t raw[8] = {0};
    enum wk_status st;
    switch (type) {
    case WK_GGUF_STRING: return read_str(c, &v->str, key);
    case WK_GGUF_ARRAY: return read_array(c, v, key, depth);
    default: break;
    }
    if ((st = read_bytes(c, raw, g_type_sizes[type], key))) return st;
    switch (type) {
    case WK_GGUF_U8: v->u = raw[0]; break;
    case WK_GGUF_I8: v->i = (int8_t)raw[0]; break;
    case WK_GGUF_U16: { uint16_t x; memcpy(&x, raw, 2); v->u = x; break; }
    case WK_GGUF_I16: { int16_t x; memcpy(&x, raw, 2); v->i = x; break; }
    case WK_GGUF_U32: { uint32_t x; memcpy(&x, raw, 4); v->u = x; break; }
    case WK_GGUF_I32: { int32_t x; memcpy(&x, raw, 4); v->i = x; break; }
    case WK_GGUF_U64: { uint64_t x; memcpy(&x, raw, 8); v->u = x; break; }
    case WK_GGUF_I64: { int64_t x; memcpy(&x, raw, 8); v->i = x; break; }
    case WK_GGUF_F32: { float x; memcpy(&x, raw, 4); v->f = x; break; }
    case WK_GGUF_F64: { double x; memcpy(&x, raw, 8); v->f = x; break; }
    case WK_GGUF_BOOL:
        if (raw[0] > 1)
            return wk_error_set(c->err, WK_E_FORMAT, "%s: key %s: bool has value %u", c->name,
                                key, raw[0]);
        v->b = raw[0] != 0;
        break;
    default: break;
    }
    return WK_OK;
}

static enum wk_status parse_header(struct wk_gguf *g, struct cursor *c, uint64_t *n_tensors,
                                   uint64_t *n_kv)
{
    uint8_t magic[4];
    if (c->size < 4 || memcmp(c->data, "GGUF", 4) != 0) {
        return wk_error_set(c->err, WK_E_FORMAT, "%s: not a GGUF file (no \"GGUF\" magic)",
                            c->name);
    }
    enum wk_status st = read_bytes(c, magic, 4, "magic");
    if (!st) st = read_u32(c, &g->version, "version");
    if (st) return st;
    if (g->version == 1)
        return wk_error_set(c->err, WK_E_UNSUPPORTED,
                            "%s: GGUF version 1 is not supported (re-convert the model)", c->name);
    if (g->version < 2 || g->version > 3) {
        if ((g->version & 0xffff) == 0 && (g->version >> 24) >= 1 && (g->version >> 24) <= 3)
            return wk_error_set(c->err, WK_E_UNSUPPORTED,
                                "%s: big-endian GGUF is not supported", c->name);
        return wk_error_set(c->err, WK_E_UNSUPPORTED, "%s: unknown GGUF version %u", c->name,
                            g->version);
    }
    if ((st = read_u64(c, n_tensors, "tensor count")) || (st = read_u64(c, n_kv, "metadata count")))
        return st;
    /* each key/value takes at least 8 (key length) + 4 (type) + 1 bytes, each
     * tensor info at least 8 + 4 + 8 + 4 + 8 */
    uint64_t left = c->size - c->pos;
    if (*n_kv > left / 13)
        return wk_error_set(c->err, WK_E_FORMAT,
                            "%s: metadata count %llu cannot fit in the %llu bytes left", c->name,
                            (unsigned long long)*n_kv, (unsigned long long)left);
    if (*n_tensors > left / 32)
        return wk_error_set(c->err, WK_E_FORMAT,
                            "%s: tensor count %llu cannot fit in the %llu bytes left", c->name,
                            (unsigned long long)*n_tensors, (unsigned long long)left);
    return WK_OK;
}

static enum wk_status parse_kv(struct wk_gguf *g, struct cursor *c)
{
    enum wk_status st;
    for (int64_t i = 0; i < g->n_kv; i++) {
        struct wk_gguf_str key;
        char kbuf[128];
        if ((st = read_str(c, &key, "metadata key")))
            return wk_error_prefix(c->err, st, "metadata entry %lld: ", (long long)i);
        printable(key, kbuf, sizeof kbuf);
        if (key.len == 0 || memchr(key.data, '\0', (size_t)key.len))
            return wk_error_set(c->err, WK_E_FORMAT, "%s: metadata entry %lld: empty or invalid key",
                                c->name, (long long)i);
        g->keys[i] = wk_malloc((size_t)key.len + 1);
        if (!g->keys[i]) return wk_error_set(c->err, WK_E_NOMEM, "%s: out of memory", c->name);
        memcpy(g->keys[i], key.data, (size_t)key.len);
        g->keys[i][key.len] = '\0';
        if (!index_add(&g->key_index, (const char *const *)g->keys, sizeof *g->keys, i))
            return wk_error_set(c->err, WK_E_FORMAT, "%s: duplicate metadata key %s", c->name,
                                kbuf);
        uint32_t type;
        if ((st = read_u32(c, &type, "value type"))) return wk_error_prefix(c->err, st, "key %s: ", kbuf);
        if (type >= WK_GGUF_TYPE_COUNT)
            return wk_error_set(c->err, WK_E_FORMAT, "%s: key %s: unknown value type %u", c->name,
                                kbuf, type);
        if ((st = read_value(c, (enum wk_gguf_type)type, &g->values[i], kbuf, 0))) {
            if (c->err && !strstr(c->err->msg, kbuf)) wk_error_prefix(c->err, st, "key %s: ", kbuf);
            return st;
        }
    }
    return WK_OK;
}

static int cmp_offset(const void *a, const void *b)
{
    const struct wk_gguf_tensor *x = *(const struct wk_gguf_tensor *const *)a;
    const struct wk_gguf_tensor *y = *(const struct wk_gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static enum wk_status parse_tensor_infos(struct wk_gguf *g, struct cursor *c)
{
    enum wk_status st;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        struct wk_gguf_tensor *t = &g->tensors[i];
        struct wk_gguf_str name;
        char nbuf[128];
        if ((st = read_str(c, &name, "tensor name")))
            return wk_error_prefix(c->err, st, "tensor info %lld: ", (long long)i);
        printable(name, nbuf, sizeof nbuf);
        if (name.len == 0 || memchr(name.data, '\0', (size_t)name.len))
            return wk_error_set(c->err, WK_E_FORMAT, "%s: tensor info %lld: empty or invalid name",
                                c->name, (long long)i);
        char *nm = wk_malloc((size_t)name.len + 1);
        if (!nm) return wk_error_set(c->err, WK_E_NOMEM, "%s: out of memory", c->name);
        memcpy(nm, name.data, (size_t)name.len);
        nm[name.len] = '\0';
        t->t.name = nm;
        uint32_t n_dims;
        if ((st = read_u32(c, &n_dims, "dimension count")))
            return wk_error_prefix(c->err, st, "tensor %s: ", nbuf);
        if (n_dims < 1 || n_dims > MAX_DIMS)
            return wk_error_set(c->err, WK_E_FORMAT, "%s: tensor %s: %u dimensions (must be 1..%d)",
                                c->name, nbuf, n_dims, MAX_DIMS);
        t->t.n_dims = (int)n_dims;
        uint64_t n_elem = 1;
        for (int d = 0; d < MAX_DIMS; d++) t->t.ne[d] = 1;
        for (uint32_t d = 0; d < n_dims; d++) {
            uint64_t ne = 0;
            if ((st = read_u64(c, &ne, "dimension"))) return wk_error_prefix(c->err, st, "tensor %s: ", nbuf);
            if (ne == 0 || ne >= MAX_DIM_VALUE)
                return wk_error_set(c->err, WK_E_FORMAT,
                                    "%s: tensor %s: dimension %u is %llu (must be 1..2^48)",
                                    c->name, nbuf, d, (unsigned long long)ne);
            if (!wk_mul_u64(n_elem, ne, &n_elem))
                return wk_error_set(c->err, WK_E_FORMAT,
                                    "%s: tensor %s: element count overflows", c->name, nbuf);
            t->t.ne[d] = (int64_t)ne;
        }
        uint32_t type;
        if ((st = read_u32(c, &type, "tensor type")) || (st = read_u64(c, &t->offset, "tensor offset")))
            return wk_error_prefix(c->err, st, "tensor %s: ", nbuf);
        const struct wk_dtype_traits *tr = type < WK_DTYPE_GGUF_COUNT ? wk_dtype_traits_get(type) : NULL;
        if (!tr)
            return wk_error_set(c->err, WK_E_UNSUPPORTED, "%s: tensor %s: unknown dtype %u",
                                c->name, nbuf, type);
        t->t.dtype = (enum wk_dtype)type;
        if (t->t.ne[0] % tr->block_size != 0)
            return wk_error_set(c->err, WK_E_FORMAT,
                                "%s: tensor %s: row length %lld is not a multiple of %s's block "
                                "size %lld",
                                c->name, nbuf, (long long)t->t.ne[0], tr->name,
                                (long long)tr->block_size);
        uint64_t row = (uint64_t)t->t.ne[0] / (uint64_t)tr->block_size * tr->block_bytes;
        uint64_t size;
        if (!wk_mul_u64(n_elem / (uint64_t)t->t.ne[0], row, &size))
            return wk_error_set(c->err, WK_E_FORMAT, "%s: tensor %s: byte size overflows", c->name,
                                nbuf);
        t->size_bytes = size;
        t->t.nb[0] = tr->block_bytes;
        t->t.nb[1] = (size_t)row;
        for (int d = 2; d < MAX_DIMS; d++) t->t.nb[d] = t->t.nb[d - 1] * (size_t)t->t.ne[d - 1];
        if (!index_add(&g->tensor_index, &g->tensors[0].t.name, sizeof *g->tensors, i))
            return wk_error_set(c->err, WK_E_FORMAT, "%s: duplicate tensor name %s", c->name,
                                nbuf);
    }
    return WK_OK;
}

static enum wk_status check_tensor_data(struct wk_gguf *g, struct cursor *c)
{
    uint64_t data_size = g->size - g->data_offset;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        struct wk_gguf_tensor *t = &g->tensors[i];
        uint64_t end;
        char nbuf[128];
        wk_str_printable(t->t.name, strlen(t->t.name), nbuf, sizeof nbuf);
        if (t->offset % g->alignment != 0)
            return wk_error_set(c->err, WK_E_FORMAT,
                                "%s: tensor %s: offset %llu is not a multiple of the alignment %llu",
                                c->name, nbuf, (unsigned long long)t->offset,
                                (unsigned long long)g->alignment);
        if (!wk_add_u64(t->offset, t->size_bytes, &end) || end > data_size)
            return wk_error_set(c->err, WK_E_FORMAT,
                                "%s: tensor %s: data at offset %llu + %llu bytes runs past the end "
                                "of the file (data section holds %llu bytes)",
                                c->name, nbuf, (unsigned long long)t->offset,
                                (unsigned long long)t->size_bytes, (unsigned long long)data_size);
        t->t.data = g->data + g->data_offset + t->offset;
    }
    if (g->n_tensors < 2) return WK_OK;
    struct wk_gguf_tensor **order = wk_malloc((size_t)g->n_tensors * sizeof *order);
    if (!order) return wk_error_set(c->err, WK_E_NOMEM, "%s: out of memory", c->name);
    for (int64_t i = 0; i < g->n_tensors; i++) order[i] = &g->tensors[i];
    qsort(order, (size_t)g->n_tensors, sizeof *order, cmp_offset);
    enum wk_status st = WK_OK;
    for (int64_t i = 1; i < g->n_tensors; i++) {
        if (order[i - 1]->offset + order[i - 1]->size_bytes > order[i]->offset) {
            char a[128], b[128];
            wk_str_printable(order[i - 1]->t.name, strlen(order[i - 1]->t.name), a, sizeof a);
            wk_str_printable(order[i]->t.name, strlen(order[i]->t.name), b, sizeof b);
            st = wk_error_set(c->err, WK_E_FORMAT, "%s: tensors %s and %s overlap", c->name, a, b);
            break;
        }
    }
    wk_free(order);
    return st;
}

static enum wk_status parse(struct wk_gguf *g, struct wk_error *err)
{
    struct cursor c = {.data = g->data, .pos = 0, .size = g->size, .name = g->name, .err = err};
    uint64_t n_tensors, n_kv;
    enum wk_status st = parse_header(g, &c, &n_tensors, &n_kv);
    if (st) return st;
    g->n_kv = (int64_t)n_kv;
    g->n_tensors = (int64_t)n_tensors;
    g->keys = wk_calloc((size_t)n_kv + 1, sizeof *g->keys);
    g->values = wk_calloc((size_t)n_kv + 1, sizeof *g->values);
    g->tensors = wk_calloc((size_t)n_tensors + 1, sizeof *g->tensors);
    if (!g->keys || !g->values || !g->tensors || !index_init(&g->key_index, g->n_kv) ||
        !index_init(&g->tensor_index, g->n_tensors))
        return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", g->name);
    if ((st = parse_kv(g, &c))) return st;

    g->alignment = DEFAULT_ALIGNMENT;
    const struct wk_gguf_value *al = wk_gguf_find(g, "general.alignment");
    if (al) {
        /* the spec asks for a multiple of 8; a power of two, so every
         * tensor's data is naturally aligned for its element type */
        if (al->type != WK_GGUF_U32 || al->u < 8 || (al->u & (al->u - 1)) != 0)
            return wk_error_set(err, WK_E_FORMAT,
                                "%s: general.alignment must be a u32 power of two of at least 8, "
                                "got %s %llu",
                                g->name, wk_gguf_type_name(al->type),
                                (unsigned long long)(al->type == WK_GGUF_U32 ? al->u : 0));
        g->alignment = al->u;
    }
    if ((st = parse_tensor_infos(g, &c))) return st;
    uint64_t pad = (g->alignment - c.pos % g->alignment) % g->alignment;
    if (!wk_add_u64(c.pos, pad, &g->data_offset) || g->data_offset > g->size) {
        if (g->n_tensors == 0) {
            g->data_offset = g->size;
            return WK_OK;
        }
        return wk_error_set(err, WK_E_FORMAT,
                            "%s: truncated: tensor data should start at offset %llu, file has %llu "
                            "bytes",
                            g->name, (unsigned long long)(c.pos + pad), (unsigned long long)g->size);
    }
    return check_tensor_data(g, &c);
}

static enum wk_status open_common(struct wk_gguf *g, struct wk_gguf **out, struct wk_error *err)
{
    enum wk_status st = parse(g, err);
    if (st) {
        wk_gguf_close(g);
        return st;
    }
    *out = g;
    return WK_OK;
}

enum wk_status wk_gguf_open_memory(const void *data, uint64_t size, const char *name,
                                   struct wk_gguf **out, struct wk_error *err)
{
    *out = NULL;
    struct wk_gguf *g = wk_calloc(1, sizeof *g);
    if (!g) return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", name);
    g->name = wk_strdup(name);
    if (!g->name) {
        wk_free(g);
        return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", name);
    }
    g->data = data;
    g->size = size;
    return open_common(g, out, err);
}

enum wk_status wk_gguf_open(const char *path, struct wk_gguf **out, struct wk_error *err)
{
    return wk_gguf_open_ex(path, false, out, err);
}

enum wk_status wk_gguf_open_ex(const char *path, bool resident, struct wk_gguf **out,
                               struct wk_error *err)
{
    *out = NULL;
    struct wk_gguf *g = wk_calloc(1, sizeof *g);
    if (!g) return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    enum wk_status st = wk_mapped_file_open_ex(&g->file, path, resident, err);
    if (st) {
        wk_free(g);
        return st;
    }
    g->name = wk_strdup(path);
    if (!g->name) {
        wk_gguf_close(g);
        return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    }
    g->data = g->file.data;
    g->size = g->file.size_bytes;
    return open_common(g, out, err);
}

void wk_gguf_close(struct wk_gguf *g)
{
    if (!g) return;
    if (g->keys)
        for (int64_t i = 0; i < g->n_kv; i++) wk_free(g->keys[i]);
    if (g->values)
        for (int64_t i = 0; i < g->n_kv; i++) value_free(&g->values[i]);
    if (g->tensors)
        for (int64_t i = 0; i < g->n_tensors; i++) wk_free((char *)g->tensors[i].t.name);
    wk_free(g->keys);
    wk_free(g->values);
    wk_free(g->tensors);
    wk_free(g->key_index.slots);
    wk_free(g->tensor_index.slots);
    wk_free(g->name);
    wk_mapped_file_close(&g->file);
    wk_free(g);
}

uint32_t wk_gguf_version(const struct wk_gguf *g) { return g->version; }
const char *wk_gguf_path(const struct wk_gguf *g) { return g->name; }
uint64_t wk_gguf_alignment(const struct wk_gguf *g) { return g->alignment; }
uint64_t wk_gguf_data_offset(const struct wk_gguf *g) { return g->data_offset; }
int64_t wk_gguf_n_kv(const struct wk_gguf *g) { return g->n_kv; }
const char *wk_gguf_kv_key(const struct wk_gguf *g, int64_t i) { return g->keys[i]; }
const struct wk_gguf_value *wk_gguf_kv_value(const struct wk_gguf *g, int64_t i) { return &g->values[i]; }
bool wk_gguf_set_writable(struct wk_gguf *g, bool writable)
{
    return wk_mapped_file_set_writable(&g->file, writable);
}

void wk_gguf_retype_tensor(struct wk_gguf *g, const struct wk_tensor *t, enum wk_dtype d)
{
    const struct wk_gguf_tensor *gt = (const struct wk_gguf_tensor *)t; /* t is its first member */
    WK_ASSERT(gt >= g->tensors && gt < g->tensors + g->n_tensors &&
              wk_dtype_row_bytes(d, t->ne[0]) == wk_dtype_row_bytes(t->dtype, t->ne[0]));
    g->tensors[gt - g->tensors].t.dtype = d;
}

int64_t wk_gguf_n_tensors(const struct wk_gguf *g) { return g->n_tensors; }
const struct wk_gguf_tensor *wk_gguf_tensor(const struct wk_gguf *g, int64_t i) { return &g->tensors[i]; }

const struct wk_gguf_value *wk_gguf_find(const struct wk_gguf *g, const char *key)
{
    int64_t i = index_find(&g->key_index, (const char *const *)g->keys, sizeof *g->keys, key);
    return i >= 0 ? &g->values[i] : NULL;
}

const struct wk_gguf_tensor *wk_gguf_find_tensor(const struct wk_gguf *g, const char *name)
{
    int64_t i = index_find(&g->tensor_index, &g->tensors[0].t.name, sizeof *g->tensors, name);
    return i >= 0 ? &g->tensors[i] : NULL;
}

static bool is_unsigned(enum wk_gguf_type t)
{
    return t == WK_GGUF_U8 || t == WK_GGUF_U16 || t == WK_GGUF_U32 || t == WK_GGUF_U64;
}
static bool is_signed(enum wk_gguf_type t)
{
    return t == WK_GGUF_I8 || t == WK_GGUF_I16 || t == WK_GGUF_I32 || t == WK_GGUF_I64;
}

static enum wk_status get_typed(const struct wk_gguf *g, const char *key, const char *want,
                                bool ok_type(enum wk_gguf_type), const struct wk_gguf_value **v,
                                struct wk_error *err)
{
    *v = wk_gguf_find(g, key);
    if (!*v) return wk_error_set(err, WK_E_NOT_FOUND, "%s: missing metadata key %s", g->name, key);
    if (!ok_type((*v)->type))
        return wk_error_set(err, WK_E_FORMAT, "%s: metadata key %s has type %s, expected %s",
                            g->name, key, wk_gguf_type_name((*v)->type), want);
    return WK_OK;
}

static bool is_int(enum wk_gguf_type t) { return is_signed(t) || is_unsigned(t); }
static bool is_float(enum wk_gguf_type t) { return t == WK_GGUF_F32 || t == WK_GGUF_F64; }
static bool is_bool(enum wk_gguf_type t) { return t == WK_GGUF_BOOL; }
static bool is_str(enum wk_gguf_type t) { return t == WK_GGUF_STRING; }
static bool is_arr(enum wk_gguf_type t) { return t == WK_GGUF_ARRAY; }

enum wk_status wk_gguf_get_i64(const struct wk_gguf *g, const char *key, int64_t *out,
                               struct wk_error *err)
{
    const struct wk_gguf_value *v;
    enum wk_status st = get_typed(g, key, "an integer", is_int, &v, err);
    if (st) return st;
    if (is_unsigned(v->type) && v->u > (uint64_t)INT64_MAX)
        return wk_error_set(err, WK_E_FORMAT, "%s: metadata key %s: value %llu out of range",
                            g->name, key, (unsigned long long)v->u);
    *out = is_unsigned(v->type) ? (int64_t)v->u : v->i;
    return WK_OK;
}

enum wk_status wk_gguf_get_u32(const struct wk_gguf *g, const char *key, uint32_t *out,
                               struct wk_error *err)
{
    int64_t x;
    enum wk_status st = wk_gguf_get_i64(g, key, &x, err);
    if (st) return st;
    if (x < 0 || x > (int64_t)UINT32_MAX)
        return wk_error_set(err, WK_E_FORMAT, "%s: metadata key %s: value %lld out of range",
                            g->name, key, (long long)x);
    *out = (uint32_t)x;
    return WK_OK;
}

enum wk_status wk_gguf_get_f32(const struct wk_gguf *g, const char *key, float *out,
                               struct wk_error *err)
{
    const struct wk_gguf_value *v;
    enum wk_status st = get_typed(g, key, "f32", is_float, &v, err);
    if (st) return st;
    *out = (float)v->f;
    return WK_OK;
}

enum wk_status wk_gguf_get_bool(const struct wk_gguf *g, const char *key, bool *out,
                                struct wk_error *err)
{
    const struct wk_gguf_value *v;
    enum wk_status st = get_typed(g, key, "bool", is_bool, &v, err);
    if (st) return st;
    *out = v->b;
    return WK_OK;
}

enum wk_status wk_gguf_get_str(const struct wk_gguf *g, const char *key, struct wk_gguf_str *out,
                               struct wk_error *err)
{
    const struct wk_gguf_value *v;
    enum wk_status st = get_typed(g, key, "string", is_str, &v, err);
    if (st) return st;
    *out = v->str;
    return WK_OK;
}

enum wk_status wk_gguf_get_arr(const struct wk_gguf *g, const char *key, enum wk_gguf_type elem,
                               const struct wk_gguf_value **out, struct wk_error *err)
{
    const struct wk_gguf_value *v;
    enum wk_status st = get_typed(g, key, "array", is_arr, &v, err);
    if (st) return st;
    if (elem != WK_GGUF_TYPE_COUNT && v->arr.elem_type != elem &&
        !(is_int(elem) && is_int(v->arr.elem_type)) &&
        !(is_float(elem) && is_float(v->arr.elem_type)))
        return wk_error_set(err, WK_E_FORMAT, "%s: metadata key %s is an array of %s, expected %s",
                            g->name, key, wk_gguf_type_name(v->arr.elem_type),
                            wk_gguf_type_name(elem));
    *out = v;
    return WK_OK;
}

int64_t wk_gguf_arr_i64(const struct wk_gguf_value *a, uint64_t i)
{
    const uint8_t *p = a->arr.raw + i * g_type_sizes[a->arr.elem_type];
    switch (a->arr.elem_type) {
    case WK_GGUF_U8: return p[0];
    case WK_GGUF_I8: return (int8_t)p[0];
    case WK_GGUF_U16: { uint16_t x; memcpy(&x, p, 2); return x; }
    case WK_GGUF_I16: { int16_t x; memcpy(&x, p, 2); return x; }
    case WK_GGUF_U32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case WK_GGUF_I32: { int32_t x; memcpy(&x, p, 4); return x; }
    case WK_GGUF_U64: { uint64_t x; memcpy(&x, p, 8); return (int64_t)x; }
    case WK_GGUF_I64: { int64_t x; memcpy(&x, p, 8); return x; }
    case WK_GGUF_BOOL: return p[0];
    default: return 0;
    }
}

double wk_gguf_arr_f64(const struct wk_gguf_value *a, uint64_t i)
{
    const uint8_t *p = a->arr.raw + i * g_type_sizes[a->arr.elem_type];
    if (a->arr.elem_type == WK_GGUF_F32) {
        float x;
        memcpy(&x, p, 4);
        return x;
    }
    if (a->arr.elem_type == WK_GGUF_F64) {
        double x;
        memcpy(&x, p, 8);
        return x;
    }
    return (double)wk_gguf_arr_i64(a, i);
}

bool wk_gguf_arr_bool(const struct wk_gguf_value *a, uint64_t i)
{
    return a->arr.raw[i] != 0;
}

bool wk_gguf_str_eq(struct wk_gguf_str a, const char *s)
{
    size_t n = strlen(s);
    return a.len == n && memcmp(a.data, s, n) == 0;
}
