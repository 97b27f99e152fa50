/*
 * wk_safetensors.h - the safetensors format (Hugging Face), read and written.
 *
 * Layout (github.com/huggingface/safetensors, README "Format"):
 *   u64 N (little-endian) | N bytes of UTF-8 JSON header | data section
 * The header is an object mapping each tensor name to
 *   {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
 * (offsets in bytes from the start of the data section, shape outermost
 * first, row-major data) plus an optional "__metadata__" object of string to
 * string. The reference writer pads the header with spaces to a multiple of
 * 8 bytes, and its reader insists that the tensors cover the data section
 * contiguously.
 *
 * The reader maps the file and checks every entry (dtype, shape, byte size,
 * range, overlap) with overflow-safe arithmetic before anything is used; an
 * error names the file, the tensor and the numbers involved. Tensor data are
 * views into the mapping and live as long as the struct wk_safetensors.
 */
#ifndef WK_SAFETENSORS_H
#define WK_SAFETENSORS_H

#include "../base/wk_base.h"

/* The element types wick reads; the file spells them as the names below. */
enum wk_st_dtype { WK_ST_F32, WK_ST_F16, WK_ST_BF16, WK_ST_I8, WK_ST_U8, WK_ST_U32, WK_ST_I32, WK_ST_I64 };
#define WK_ST_DTYPE_COUNT 8
#define WK_ST_MAX_DIMS 8
/* The largest header the reader accepts (the reference reader's limit). */
#define WK_ST_MAX_HEADER_BYTES ((uint64_t)100 << 20)

/* Bytes per element of t (4, 2, 2, 1, 1, 4); 0 for a value outside the enum. */
size_t wk_st_dtype_size(enum wk_st_dtype t);
/* The file's name for t ("F32", "BF16", ...); "unknown" outside the enum. */
const char *wk_st_dtype_name(enum wk_st_dtype t);

/*
 * One tensor of an open file. name is NUL-terminated and owned by the
 * struct wk_safetensors; shape[0..n_dims) is outermost first (n_dims 0 is a
 * scalar of one element); data points at size_bytes = n_elements *
 * wk_st_dtype_size(dtype) bytes in the mapping (little-endian, row-major).
 * data is naturally aligned in files wick or the reference library wrote,
 * but may be unaligned in others: read it with memcpy unless you checked.
 */
struct wk_st_tensor {
    const char *name;
    enum wk_st_dtype dtype;
    int32_t n_dims;
    int64_t shape[WK_ST_MAX_DIMS];
    uint64_t n_elements, size_bytes;
    const void *data;
};

struct wk_safetensors;

/*
 * Maps and parses the safetensors file at path.
 * Errors, each message starting with the path: WK_E_NOT_FOUND (no file),
 * WK_E_IO (unreadable, a directory), WK_E_FORMAT (shorter than 8 bytes; a
 * header length under 2, over WK_ST_MAX_HEADER_BYTES or past the end; a
 * header that is not a UTF-8 JSON object, or has a duplicate key; an entry
 * that is not an object; an empty tensor name; an unknown dtype; a shape
 * that is not an array of at most 8 non-negative integers; data_offsets that
 * are not two integers begin <= end, whose length differs from the shape's
 * byte size, that run past the data section or overlap another tensor's;
 * sizes that overflow; a "__metadata__" that is not an object of strings; no
 * tensors), WK_E_UNSUPPORTED (a valid safetensors dtype wick does not read:
 * BOOL, I16, U16, I32, I64, U64, F64, F8_*, ...; the message names the dtype
 * and the tensor), WK_E_NOMEM.
 * On success *out is owned by the caller (wk_safetensors_close); on error
 * *out is NULL. Thread-safe (no shared state).
 */
enum wk_status wk_safetensors_open(const char *path, struct wk_safetensors **out,
                                   struct wk_error *err);
/* As wk_safetensors_open, or with resident true: the file read into
 * memory advised for transparent huge pages (wk_mapped_file_open_ex), as
 * model weights want it; extra errors those of a failed read. */
enum wk_status wk_safetensors_open_ex(const char *path, bool resident, struct wk_safetensors **out,
                                      struct wk_error *err);

/* As wk_safetensors_open over data[0..size), which the caller keeps alive
 * (borrowed) until close; name (copied) stands for the path in error
 * messages. For tests and fuzzing. */
enum wk_status wk_safetensors_open_memory(const void *data, uint64_t size, const char *name,
                                          struct wk_safetensors **out, struct wk_error *err);

/* Frees the parse and unmaps the file; st may be NULL. Every pointer
 * obtained from st becomes invalid. */
void wk_safetensors_close(struct wk_safetensors *st);

/* Number of tensors (at least 1). */
int64_t wk_safetensors_n_tensors(const struct wk_safetensors *st);

/* Tensor i, 0 <= i < n_tensors, in file order (by data offset; zero-size
 * tensors at the same offset by name). Borrowed until close. */
const struct wk_st_tensor *wk_safetensors_tensor(const struct wk_safetensors *st, int64_t i);

/* The tensor called name, or NULL when there is none (O(log n)). Borrowed
 * until close. */
const struct wk_st_tensor *wk_safetensors_find(const struct wk_safetensors *st, const char *name);

/* The "__metadata__" value for key (NUL-terminated, borrowed until close),
 * or NULL when absent. */
const char *wk_safetensors_metadata(const struct wk_safetensors *st, const char *key);

/* One tensor to write: name (non-empty UTF-8, not "__metadata__"), dtype,
 * shape[0..n_dims) outermost first (0 <= n_dims <= 8, each >= 0), and data
 * holding n_elements * wk_st_dtype_size(dtype) bytes (may be NULL when that
 * is 0). All borrowed for the duration of the call. */
struct wk_st_write_tensor {
    const char *name;
    enum wk_st_dtype dtype;
    int32_t n_dims;
    const int64_t *shape;
    const void *data;
};

/*
 * Writes tensors[0..n) (n >= 1, names unique) and the metadata pairs
 * meta_kv[0..2*n_meta) = {key0, value0, key1, value1, ...} (UTF-8 strings;
 * meta_kv may be NULL when n_meta is 0) as one safetensors file at path.
 * The header JSON is padded with spaces to a multiple of 8 bytes. The data
 * section holds the tensors contiguously (the reference reader refuses gaps
 * and trailing bytes), ordered by element size, largest first, and in the
 * given order within one size: so each tensor's offset is a multiple of its
 * element size, and its data naturally aligned in a mapping. The file is
 * written to a temporary file in the same folder, fsync'd and renamed over
 * path, and the folder is fsync'd (best effort), so a crash leaves either
 * the old file or the whole new one under path; the new file has mode 0644.
 * Errors: WK_E_INVALID (n < 1, n_meta < 0, an empty, duplicate, reserved
 * or non-UTF-8 name or metadata string, a dtype outside the enum, n_dims
 * outside 0..8, a negative dimension, NULL data for a non-empty tensor, a
 * byte size that overflows, a header over WK_ST_MAX_HEADER_BYTES), WK_E_IO
 * (the temporary file cannot be created, written, synced or renamed; the
 * message names the path and the OS error; the temporary file is removed),
 * WK_E_NOMEM; every message starts with path. Thread-safe for distinct
 * paths.
 */
enum wk_status wk_safetensors_write(const char *path, const struct wk_st_write_tensor *tensors,
                                    int64_t n, const char *const *meta_kv, int32_t n_meta,
                                    struct wk_error *err);

#endif /* WK_SAFETENSORS_H */
