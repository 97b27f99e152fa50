/*
 * wk_io.h - model file formats. For now: the GGUF reader.
 *
 * GGUF (ggml-org/ggml docs/gguf.md, versions 2 and 3): a little-endian
 * header (magic "GGUF", version, tensor count, metadata count), typed
 * key/value metadata (scalars, strings, arrays, arrays of arrays), tensor
 * infos (name, dims innermost first, type, offset), padding to the
 * alignment (general.alignment, default 32), then the tensor data.
 *
 * The reader maps the file and validates every length, count, offset and
 * dimension against the file with overflow-safe arithmetic before anything
 * is used; an error names the file, the field and the numbers involved.
 * Strings and tensor data are views into the mapping and live as long as
 * the struct wk_gguf.
 */
#ifndef WK_IO_H
#define WK_IO_H

#include "../base/wk_base.h"
#include "../tensor/wk_tensor.h"

enum wk_gguf_type {
    WK_GGUF_U8 = 0,
    WK_GGUF_I8 = 1,
    WK_GGUF_U16 = 2,
    WK_GGUF_I16 = 3,
    WK_GGUF_U32 = 4,
    WK_GGUF_I32 = 5,
    WK_GGUF_F32 = 6,
    WK_GGUF_BOOL = 7,
    WK_GGUF_STRING = 8,
    WK_GGUF_ARRAY = 9,
    WK_GGUF_U64 = 10,
    WK_GGUF_I64 = 11,
    WK_GGUF_F64 = 12,
    WK_GGUF_TYPE_COUNT
};

/* A string view into the mapped file: not NUL-terminated, may hold any
 * bytes. */
struct wk_gguf_str {
    const char *data;
    uint64_t len;
};

/*
 * One metadata value. Scalars are widened: unsigned types in .u, signed in
 * .i, F32/F64 in .f, BOOL in .b. Arrays keep their element type and count:
 * fixed-size elements stay in the file (.arr.raw, little-endian, unaligned;
 * read them with wk_gguf_arr_*), string elements are parsed into .arr.strs,
 * nested arrays into .arr.items.
 */
struct wk_gguf_value {
    enum wk_gguf_type type;
    union {
        uint64_t u;
        int64_t i;
        double f;
        bool b;
        struct wk_gguf_str str;
        struct {
            enum wk_gguf_type elem_type;
            uint64_t n;
            const uint8_t *raw;           /* fixed-size elements */
            struct wk_gguf_str *strs;     /* STRING elements (owned) */
            struct wk_gguf_value *items;  /* ARRAY elements (owned) */
        } arr;
    };
};

/* A tensor: a view into the mapped data. t.name is NUL-terminated and
 * owned by the struct wk_gguf. */
struct wk_gguf_tensor {
    struct wk_tensor t;
    uint64_t offset;     /* from the start of the data section */
    uint64_t size_bytes;
};

struct wk_gguf;

/*
 * Maps and parses the GGUF file at path.
 * Errors (each naming the file and the field): WK_E_NOT_FOUND (no file),
 * WK_E_IO (unreadable), WK_E_FORMAT (not GGUF, truncated, an offset or size
 * past the end, overflow, duplicate key or tensor, bad alignment, zero or
 * absurd dimension), WK_E_UNSUPPORTED (version 1 or > 3, big-endian file,
 * a tensor dtype wick does not know), WK_E_NOMEM.
 * On success *out is owned by the caller (wk_gguf_close).
 */
enum wk_status wk_gguf_open(const char *path, struct wk_gguf **out, struct wk_error *err);
/* As wk_gguf_open; with resident true the file is read into huge-page
 * backed memory instead of mapped (wk_mapped_file_open_ex), for models
 * about to run. */
enum wk_status wk_gguf_open_ex(const char *path, bool resident, struct wk_gguf **out,
                               struct wk_error *err);

/* As wk_gguf_open over a buffer the caller keeps alive until close; name
 * is used in error messages. For tests and fuzzing. */
enum wk_status wk_gguf_open_memory(const void *data, uint64_t size, const char *name,
                                   struct wk_gguf **out, struct wk_error *err);

/* Frees the parse and unmaps the file; g may be NULL. */
void wk_gguf_close(struct wk_gguf *g);

uint32_t wk_gguf_version(const struct wk_gguf *g);
/* The path (or name) the file was opened with; borrowed. */
const char *wk_gguf_path(const struct wk_gguf *g);
uint64_t wk_gguf_alignment(const struct wk_gguf *g);
/* Byte offset of the data section in the file. */
uint64_t wk_gguf_data_offset(const struct wk_gguf *g);

/* Metadata: count, i-th key (NUL-terminated, borrowed) and value. */
int64_t wk_gguf_n_kv(const struct wk_gguf *g);
const char *wk_gguf_kv_key(const struct wk_gguf *g, int64_t i);
const struct wk_gguf_value *wk_gguf_kv_value(const struct wk_gguf *g, int64_t i);
/* The value for key, or NULL when absent. */
const struct wk_gguf_value *wk_gguf_find(const struct wk_gguf *g, const char *key);
/* Name of a value type ("u32", "string", ...). */
const char *wk_gguf_type_name(enum wk_gguf_type t);

/*
 * Typed getters. Integer getters accept any integer type whose value fits
 * the target; float getters accept F32 and F64. Errors: WK_E_NOT_FOUND when
 * the key is absent (message names it), WK_E_FORMAT for the wrong type or
 * an out-of-range value. *out is untouched on error.
 */
enum wk_status wk_gguf_get_u32(const struct wk_gguf *g, const char *key, uint32_t *out,
                               struct wk_error *err);
enum wk_status wk_gguf_get_i64(const struct wk_gguf *g, const char *key, int64_t *out,
                               struct wk_error *err);
enum wk_status wk_gguf_get_f32(const struct wk_gguf *g, const char *key, float *out,
                               struct wk_error *err);
enum wk_status wk_gguf_get_bool(const struct wk_gguf *g, const char *key, bool *out,
                                struct wk_error *err);
enum wk_status wk_gguf_get_str(const struct wk_gguf *g, const char *key, struct wk_gguf_str *out,
                               struct wk_error *err);
/* An array value whose elements have type elem (WK_GGUF_TYPE_COUNT: any). */
enum wk_status wk_gguf_get_arr(const struct wk_gguf *g, const char *key, enum wk_gguf_type elem,
                               const struct wk_gguf_value **out, struct wk_error *err);

/* Element i of a fixed-size array, converted (caller checks i < n and the
 * element type: integer types for _i64, F32/F64 for _f64, BOOL for _bool). */
int64_t wk_gguf_arr_i64(const struct wk_gguf_value *arr, uint64_t i);
double wk_gguf_arr_f64(const struct wk_gguf_value *arr, uint64_t i);
bool wk_gguf_arr_bool(const struct wk_gguf_value *arr, uint64_t i);

/* True when the string view equals the NUL-terminated s. */
bool wk_gguf_str_eq(struct wk_gguf_str a, const char *s);

/* For a model loader that repacks weights in place (the R16 layout,
 * wk_cpu.h): makes the tensor data of a GGUF opened resident (read into
 * anonymous memory) writable, or read-only again. Returns false, changing
 * nothing, when the data is a file mapping (opened without resident, or
 * too big to read in) or from memory. */
bool wk_gguf_set_writable(struct wk_gguf *g, bool writable);
/* Sets the dtype of t, one of g's tensors (asserted), to d: after its
 * bytes were rewritten in d's layout (same bytes per row). */
void wk_gguf_retype_tensor(struct wk_gguf *g, const struct wk_tensor *t, enum wk_dtype d);

/* Tensors: count, i-th, and lookup by name (NULL when absent). */
int64_t wk_gguf_n_tensors(const struct wk_gguf *g);
const struct wk_gguf_tensor *wk_gguf_tensor(const struct wk_gguf *g, int64_t i);
const struct wk_gguf_tensor *wk_gguf_find_tensor(const struct wk_gguf *g, const char *name);

#endif /* WK_IO_H */
