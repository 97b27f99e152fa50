/*
 * gguf_builder.h - builds small GGUF files in memory for tests: a byte
 * buffer with helpers for the header, metadata of each type, tensor infos
 * and data. Written from the GGUF specification, independent of the
 * reader under test. Header-only, test code.
 */
#ifndef WK_GGUF_BUILDER_H
#define WK_GGUF_BUILDER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct gb {
    uint8_t *p;
    size_t n, cap;
};

static inline void gb_bytes(struct gb *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static inline void gb_u8(struct gb *b, uint8_t v) { gb_bytes(b, &v, 1); }
static inline void gb_u32(struct gb *b, uint32_t v) { gb_bytes(b, &v, 4); }
static inline void gb_u64(struct gb *b, uint64_t v) { gb_bytes(b, &v, 8); }
static inline void gb_f32(struct gb *b, float v) { gb_bytes(b, &v, 4); }
static inline void gb_str(struct gb *b, const char *s)
{
    gb_u64(b, strlen(s));
    gb_bytes(b, s, strlen(s));
}
static inline void gb_header(struct gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gb_bytes(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}
/* key/value helpers: type ids from the spec */
static inline void gb_kv_u32(struct gb *b, const char *k, uint32_t v) { gb_str(b, k); gb_u32(b, 4); gb_u32(b, v); }
static inline void gb_kv_f32(struct gb *b, const char *k, float v) { gb_str(b, k); gb_u32(b, 6); gb_f32(b, v); }
static inline void gb_kv_bool(struct gb *b, const char *k, uint8_t v) { gb_str(b, k); gb_u32(b, 7); gb_u8(b, v); }
static inline void gb_kv_str(struct gb *b, const char *k, const char *v) { gb_str(b, k); gb_u32(b, 8); gb_str(b, v); }
static inline void gb_pad(struct gb *b, size_t align)
{
    while (b->n % align) gb_u8(b, 0);
}
/* tensor info: name, dims (innermost first), type, offset */
static inline void gb_tensor_info(struct gb *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                                  uint32_t type, uint64_t offset)
{
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++) gb_u64(b, ne[i]);
    gb_u32(b, type);
    gb_u64(b, offset);
}

#endif
