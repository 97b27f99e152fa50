/*
 * test-io.c - the GGUF reader: every value type, nested arrays, tensors and
 * alignment read back as written; each kind of malformed file refused with
 * a message naming the field; every truncation of a valid file refused
 * cleanly; allocation failures at every point leak nothing.
 */
#include "check.h"
#include "gguf_builder.h"

#include "../../src/io/wk_io.h"
#include "../../src/io/wk_json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* A valid file exercising every metadata type and two tensors. */
static struct gb build_valid_v(uint32_t alignment, uint32_t version)
{
    struct gb b = {0};
    gb_header(&b, version, 2, 16 + (alignment ? 1 : 0));
    gb_str(&b, "u8"); gb_u32(&b, 0); gb_u8(&b, 200);
    gb_str(&b, "i8"); gb_u32(&b, 1); gb_u8(&b, (uint8_t)-5);
    gb_str(&b, "u16"); gb_u32(&b, 2); { uint16_t v = 60000; gb_bytes(&b, &v, 2); }
    gb_str(&b, "i16"); gb_u32(&b, 3); { int16_t v = -30000; gb_bytes(&b, &v, 2); }
    gb_kv_u32(&b, "u32", 4000000000u);
    gb_str(&b, "i32"); gb_u32(&b, 5); { int32_t v = -7; gb_bytes(&b, &v, 4); }
    gb_kv_f32(&b, "f32", 1.5f);
    gb_kv_bool(&b, "bool", 1);
    gb_kv_str(&b, "str", "héllo");
    gb_str(&b, "u64"); gb_u32(&b, 10); gb_u64(&b, 1ull << 40);
    gb_str(&b, "i64"); gb_u32(&b, 11); gb_u64(&b, (uint64_t)-(1ll << 40));
    gb_str(&b, "f64"); gb_u32(&b, 12); { double v = -2.25; gb_bytes(&b, &v, 8); }
    gb_str(&b, "arr.u32"); gb_u32(&b, 9); gb_u32(&b, 4); gb_u64(&b, 3);
    gb_u32(&b, 1); gb_u32(&b, 2); gb_u32(&b, 3);
    gb_str(&b, "arr.str"); gb_u32(&b, 9); gb_u32(&b, 8); gb_u64(&b, 2); gb_str(&b, "a"); gb_str(&b, "");
    /* array of 2 arrays of i16: [[1, 2], [-3]] */
    gb_str(&b, "arr.nested"); gb_u32(&b, 9); gb_u32(&b, 9); gb_u64(&b, 2);
    gb_u32(&b, 3); gb_u64(&b, 2); { int16_t v[2] = {1, 2}; gb_bytes(&b, v, 4); }
    gb_u32(&b, 3); gb_u64(&b, 1); { int16_t v = -3; gb_bytes(&b, &v, 2); }
    gb_str(&b, "arr.empty"); gb_u32(&b, 9); gb_u32(&b, 6); gb_u64(&b, 0);
    if (alignment) gb_kv_u32(&b, "general.alignment", alignment);
    uint32_t al = alignment ? alignment : 32;
    uint64_t ne_a[2] = {3, 2}, ne_b[2] = {32, 2};
    gb_tensor_info(&b, "a", 2, ne_a, 0, 0);           /* F32 [2][3] = 24 bytes */
    gb_tensor_info(&b, "b", 2, ne_b, 8, al);          /* Q8_0, 2 blocks = 68 bytes */
    gb_pad(&b, al);
    for (int i = 0; i < 6; i++) gb_f32(&b, (float)i);
    gb_pad(&b, al);
    for (int r = 0; r < 2; r++) {
        uint16_t d = 0x3c00; /* 1.0 */
        gb_bytes(&b, &d, 2);
        for (int j = 0; j < 32; j++) gb_u8(&b, (uint8_t)(j - 16 + r));
    }
    return b;
}

static struct gb build_valid(uint32_t alignment)
{
    return build_valid_v(alignment, 3);
}

/* Version 2 has the same layout as 3 (64-bit counts and lengths). */
static void test_version_2(void)
{
    struct gb b = build_valid_v(0, 2);
    struct wk_gguf *g;
    CHECK_EQ_INT(wk_gguf_open_memory(b.p, b.n, "v2", &g, NULL), WK_OK);
    CHECK_EQ_INT(wk_gguf_version(g), 2);
    CHECK(wk_gguf_str_eq(wk_gguf_find(g, "str")->str, "héllo"));
    CHECK_NEAR(((const float *)wk_gguf_find_tensor(g, "a")->t.data)[4], 4.0, 0, 0);
    wk_gguf_close(g);
    free(b.p);
}

static void test_reads_every_type(void)
{
    struct gb b = build_valid(0);
    struct wk_gguf *g;
    struct wk_error err;
    CHECK_EQ_INT(wk_gguf_open_memory(b.p, b.n, "mem", &g, &err), WK_OK);
    CHECK_EQ_INT(wk_gguf_version(g), 3);
    CHECK_EQ_INT(wk_gguf_n_kv(g), 16);
    CHECK_EQ_INT(wk_gguf_find(g, "u8")->u, 200);
    CHECK_EQ_INT(wk_gguf_find(g, "i8")->i, -5);
    CHECK_EQ_INT(wk_gguf_find(g, "u16")->u, 60000);
    CHECK_EQ_INT(wk_gguf_find(g, "i16")->i, -30000);
    CHECK_EQ_INT(wk_gguf_find(g, "u32")->u, 4000000000u);
    CHECK_EQ_INT(wk_gguf_find(g, "i32")->i, -7);
    CHECK_NEAR(wk_gguf_find(g, "f32")->f, 1.5, 0, 0);
    CHECK(wk_gguf_find(g, "bool")->b);
    CHECK(wk_gguf_str_eq(wk_gguf_find(g, "str")->str, "héllo"));
    CHECK_EQ_INT(wk_gguf_find(g, "u64")->u, 1ull << 40);
    CHECK_EQ_INT(wk_gguf_find(g, "i64")->i, -(1ll << 40));
    CHECK_NEAR(wk_gguf_find(g, "f64")->f, -2.25, 0, 0);
    const struct wk_gguf_value *a = wk_gguf_find(g, "arr.u32");
    CHECK_EQ_INT(a->arr.n, 3);
    CHECK_EQ_INT(wk_gguf_arr_i64(a, 2), 3);
    a = wk_gguf_find(g, "arr.str");
    CHECK_EQ_INT(a->arr.n, 2);
    CHECK(wk_gguf_str_eq(a->arr.strs[0], "a") && wk_gguf_str_eq(a->arr.strs[1], ""));
    a = wk_gguf_find(g, "arr.nested");
    CHECK_EQ_INT(a->arr.elem_type, WK_GGUF_ARRAY);
    CHECK_EQ_INT(a->arr.items[0].arr.n, 2);
    CHECK_EQ_INT(wk_gguf_arr_i64(&a->arr.items[0], 1), 2);
    CHECK_EQ_INT(wk_gguf_arr_i64(&a->arr.items[1], 0), -3);
    CHECK_EQ_INT(wk_gguf_find(g, "arr.empty")->arr.n, 0);
    CHECK(wk_gguf_find(g, "missing") == NULL);
    /* typed getters: conversions and their errors */
    uint32_t u;
    float f;
    CHECK_EQ_INT(wk_gguf_get_u32(g, "u16", &u, &err), WK_OK);
    CHECK_EQ_INT(u, 60000);
    CHECK_EQ_INT(wk_gguf_get_u32(g, "i32", &u, &err), WK_E_FORMAT);
    CHECK_CONTAINS(err.msg, "i32");
    CHECK_EQ_INT(wk_gguf_get_f32(g, "str", &f, &err), WK_E_FORMAT);
    CHECK_CONTAINS(err.msg, "has type string, expected f32");
    CHECK_EQ_INT(wk_gguf_get_u32(g, "nope", &u, &err), WK_E_NOT_FOUND);
    CHECK_CONTAINS(err.msg, "missing metadata key nope");
    /* tensors */
    CHECK_EQ_INT(wk_gguf_n_tensors(g), 2);
    const struct wk_gguf_tensor *t = wk_gguf_find_tensor(g, "a");
    CHECK_EQ_INT(t->t.ne[0], 3);
    CHECK_EQ_INT(t->t.ne[1], 2);
    CHECK_EQ_INT(t->size_bytes, 24);
    CHECK_NEAR(((const float *)t->t.data)[5], 5.0, 0, 0);
    t = wk_gguf_find_tensor(g, "b");
    CHECK_EQ_INT(t->t.dtype, WK_DTYPE_Q8_0);
    CHECK_EQ_INT(t->size_bytes, 68);
    CHECK_EQ_INT(t->t.nb[1], 34);
    CHECK_EQ_INT(((const int8_t *)wk_tensor_row(&t->t, 1))[2 + 3], 3 - 16 + 1);
    CHECK_EQ_INT(wk_gguf_data_offset(g) % 32, 0);
    wk_gguf_close(g);
    free(b.p);
}

static void test_alignment(void)
{
    struct gb b = build_valid(64);
    struct wk_gguf *g;
    struct wk_error err;
    CHECK_EQ_INT(wk_gguf_open_memory(b.p, b.n, "mem", &g, &err), WK_OK);
    CHECK_EQ_INT(wk_gguf_alignment(g), 64);
    CHECK_EQ_INT(wk_gguf_data_offset(g) % 64, 0);
    CHECK_EQ_INT((uintptr_t)((const uint8_t *)wk_gguf_find_tensor(g, "b")->t.data - b.p) % 64, 0);
    wk_gguf_close(g);
    free(b.p);
    /* not a power of two */
    struct gb c = {0};
    gb_header(&c, 3, 0, 1);
    gb_kv_u32(&c, "general.alignment", 48);
    CHECK_EQ_INT(wk_gguf_open_memory(c.p, c.n, "mem", &g, &err), WK_E_FORMAT);
    CHECK_CONTAINS(err.msg, "general.alignment must be a u32 power of two");
    free(c.p);
    /* 4 would let an 8-byte offset misalign data for some block types */
    struct gb d = {0};
    gb_header(&d, 3, 0, 1);
    gb_kv_u32(&d, "general.alignment", 4);
    CHECK_EQ_INT(wk_gguf_open_memory(d.p, d.n, "mem", &g, &err), WK_E_FORMAT);
    CHECK_CONTAINS(err.msg, "of at least 8");
    free(d.p);
}

/* Every proper prefix of a valid file is refused with a clear error. */
static void test_every_truncation_is_refused(void)
{
    struct gb b = build_valid(0);
    int crashed_or_accepted = 0;
    for (size_t n = 0; n < b.n; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, b.p, n);
        struct wk_gguf *g = NULL;
        struct wk_error err;
        wk_error_clear(&err);
        enum wk_status st = wk_gguf_open_memory(copy, n, "cut.gguf", &g, &err);
        if (st == WK_OK || !strstr(err.msg, "cut.gguf")) {
            crashed_or_accepted++;
            fprintf(stderr, "  prefix %zu: status %d, message \"%s\"\n", n, st, err.msg);
        }
        wk_gguf_close(g);
        /* the same without an error report: the status alone must say so */
        g = NULL;
        if (wk_gguf_open_memory(copy, n, "cut.gguf", &g, NULL) == WK_OK) {
            crashed_or_accepted++;
            fprintf(stderr, "  prefix %zu accepted without an error report\n", n);
        }
        wk_gguf_close(g);
        free(copy);
    }
    CHECK_EQ_INT(crashed_or_accepted, 0);
    free(b.p);
}

struct bad_case {
    const char *what;
    void (*build)(struct gb *b);
    enum wk_status status;
    const char *msg;
};

static void bad_not_gguf(struct gb *b) { gb_bytes(b, "hello world, not a model", 24); }
static void bad_v1(struct gb *b) { gb_header(b, 1, 0, 0); }
static void bad_v99(struct gb *b) { gb_header(b, 99, 0, 0); }
static void bad_big_endian(struct gb *b) { gb_header(b, 0x03000000, 0, 0); }
static void bad_kv_count(struct gb *b) { gb_header(b, 3, 0, 1ull << 40); }
static void bad_tensor_count(struct gb *b) { gb_header(b, 3, 1ull << 62, 0); }
static void bad_str_len(struct gb *b)
{
    gb_header(b, 3, 0, 1);
    gb_u64(b, 1ull << 63);
    for (int i = 0; i < 32; i++) gb_u8(b, 0);
}
static void bad_value_type(struct gb *b)
{
    gb_header(b, 3, 0, 1);
    gb_str(b, "k");
    gb_u32(b, 77);
}
static void bad_array_count(struct gb *b)
{
    gb_header(b, 3, 0, 1);
    gb_str(b, "tokenizer.ggml.tokens");
    gb_u32(b, 9);
    gb_u32(b, 8);
    gb_u64(b, 1ull << 50);
}
static void bad_nesting(struct gb *b)
{
    gb_header(b, 3, 0, 1);
    gb_str(b, "deep");
    gb_u32(b, 9);
    for (int i = 0; i < 20; i++) {
        gb_u32(b, 9);
        gb_u64(b, 1);
    }
    gb_u32(b, 4);
    gb_u64(b, 0);
}
static void bad_bool(struct gb *b)
{
    gb_header(b, 3, 0, 1);
    gb_kv_bool(b, "flag", 2);
}
static void bad_dup_key(struct gb *b)
{
    gb_header(b, 3, 0, 2);
    gb_kv_u32(b, "k", 1);
    gb_kv_u32(b, "k", 2);
}
static void tensor_file(struct gb *b, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                        uint64_t offset, size_t data_bytes)
{
    gb_header(b, 3, 1, 0);
    gb_tensor_info(b, "blk.0.w", n_dims, ne, type, offset);
    gb_pad(b, 32);
    for (size_t i = 0; i < data_bytes; i++) gb_u8(b, 0);
}
static void bad_zero_dim(struct gb *b) { uint64_t ne[2] = {32, 0}; tensor_file(b, 2, ne, 0, 0, 64); }
static void bad_absurd_dim(struct gb *b) { uint64_t ne[2] = {32, 1ull << 60}; tensor_file(b, 2, ne, 0, 0, 64); }
static void bad_n_dims(struct gb *b) { uint64_t ne[5] = {1, 1, 1, 1, 1}; tensor_file(b, 5, ne, 0, 0, 64); }
static void bad_dtype(struct gb *b) { uint64_t ne[1] = {32}; tensor_file(b, 1, ne, 77, 0, 64); }
static void bad_block(struct gb *b) { uint64_t ne[1] = {33}; tensor_file(b, 1, ne, 8, 0, 64); }
static void bad_past_end(struct gb *b) { uint64_t ne[2] = {32, 4}; tensor_file(b, 2, ne, 0, 0, 100); }
static void bad_misaligned(struct gb *b) { uint64_t ne[1] = {4}; tensor_file(b, 1, ne, 0, 8, 64); }
static void bad_overflow(struct gb *b) { uint64_t ne[4] = {1ull << 40, 1ull << 40, 1, 1}; tensor_file(b, 4, ne, 0, 0, 64); }
static void bad_overlap(struct gb *b)
{
    uint64_t ne[1] = {16};
    gb_header(b, 3, 2, 0);
    gb_tensor_info(b, "x", 1, ne, 0, 0);
    gb_tensor_info(b, "y", 1, ne, 0, 32);
    gb_pad(b, 32);
    for (int i = 0; i < 128; i++) gb_u8(b, 0);
}
static void bad_dup_tensor(struct gb *b)
{
    uint64_t ne[1] = {8};
    gb_header(b, 3, 2, 0);
    gb_tensor_info(b, "x", 1, ne, 0, 0);
    gb_tensor_info(b, "x", 1, ne, 0, 32);
    gb_pad(b, 32);
    for (int i = 0; i < 64; i++) gb_u8(b, 0);
}

static void test_malformed_files_are_refused(void)
{
    static const struct bad_case cases[] = {
        {"not gguf", bad_not_gguf, WK_E_FORMAT, "not a GGUF file"},
        {"version 1", bad_v1, WK_E_UNSUPPORTED, "version 1 is not supported"},
        {"version 99", bad_v99, WK_E_UNSUPPORTED, "unknown GGUF version 99"},
        {"big endian", bad_big_endian, WK_E_UNSUPPORTED, "big-endian"},
        {"kv count", bad_kv_count, WK_E_FORMAT, "metadata count"},
        {"tensor count", bad_tensor_count, WK_E_FORMAT, "tensor count"},
        {"string length", bad_str_len, WK_E_FORMAT, "runs past the end"},
        {"value type", bad_value_type, WK_E_FORMAT, "unknown value type 77"},
        {"array count", bad_array_count, WK_E_FORMAT, "tokenizer.ggml.tokens: array of"},
        {"nesting", bad_nesting, WK_E_FORMAT, "nested deeper"},
        {"bool", bad_bool, WK_E_FORMAT, "bool has value 2"},
        {"duplicate key", bad_dup_key, WK_E_FORMAT, "duplicate metadata key k"},
        {"zero dim", bad_zero_dim, WK_E_FORMAT, "blk.0.w: dimension 1 is 0"},
        {"absurd dim", bad_absurd_dim, WK_E_FORMAT, "blk.0.w: dimension 1 is 1152921504606846976"},
        {"n_dims", bad_n_dims, WK_E_FORMAT, "5 dimensions"},
        {"dtype", bad_dtype, WK_E_UNSUPPORTED, "blk.0.w: unknown dtype 77"},
        {"block", bad_block, WK_E_FORMAT, "not a multiple of Q8_0's block size"},
        {"past end", bad_past_end, WK_E_FORMAT, "blk.0.w: data at offset 0 + 512 bytes runs past the end"},
        {"misaligned", bad_misaligned, WK_E_FORMAT, "offset 8 is not a multiple of the alignment"},
        {"overflow", bad_overflow, WK_E_FORMAT, "blk.0.w"},
        {"overlap", bad_overlap, WK_E_FORMAT, "tensors x and y overlap"},
        {"duplicate tensor", bad_dup_tensor, WK_E_FORMAT, "duplicate tensor name x"},
    };
    for (size_t i = 0; i < WK_ARRAY_LEN(cases); i++) {
        struct gb b = {0};
        cases[i].build(&b);
        struct wk_gguf *g = NULL;
        struct wk_error err;
        wk_error_clear(&err);
        enum wk_status st = wk_gguf_open_memory(b.p, b.n, "bad.gguf", &g, &err);
        if (st != cases[i].status || !strstr(err.msg, cases[i].msg))
            fprintf(stderr, "  case %s: status %d, \"%s\"\n", cases[i].what, st, err.msg);
        CHECK_EQ_INT(st, cases[i].status);
        CHECK_CONTAINS(err.msg, cases[i].msg);
        CHECK_CONTAINS(err.msg, "bad.gguf");
        CHECK(g == NULL);
        free(b.p);
    }
}

/* Failing the nth allocation, for every n, gives WK_E_NOMEM and frees
 * everything already allocated. */
static void test_allocation_failures_leak_nothing(void)
{
    struct gb b = build_valid(0);
    int64_t base = wk_alloc_live_bytes();
    int n_fail = 0;
    for (int64_t n = 1; n < 200; n++) {
        wk_alloc_fail_after(n);
        struct wk_gguf *g = NULL;
        struct wk_error err;
        enum wk_status st = wk_gguf_open_memory(b.p, b.n, "mem", &g, &err);
        wk_alloc_fail_after(0);
        if (st == WK_OK) {
            wk_gguf_close(g);
            break;
        }
        n_fail++;
        CHECK_EQ_INT(st, WK_E_NOMEM);
        CHECK_EQ_INT(wk_alloc_live_bytes(), base);
    }
    CHECK(n_fail > 3);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
    free(b.p);
}

/* 200,000 keys and 100,000 tensors load (the duplicate checks are hashed;
 * quadratic ones took minutes), lookups find the last ones, and a
 * duplicate at the very end is still caught. */
static void test_many_entries(void)
{
    const int n_kv = 200000, n_t = 100000;
    for (int dup = 0; dup < 2; dup++) {
        struct gb b = {0};
        gb_header(&b, 3, (uint64_t)n_t, (uint64_t)n_kv);
        char key[32];
        for (int i = 0; i < n_kv; i++) {
            snprintf(key, sizeof key, "k.%d", dup && i == n_kv - 1 ? 7 : i);
            gb_kv_u32(&b, key, (uint32_t)i);
        }
        for (int i = 0; i < n_t; i++) {
            uint64_t ne[1] = {1};
            snprintf(key, sizeof key, "t.%d", i);
            gb_tensor_info(&b, key, 1, ne, 0, (uint64_t)i * 32);
        }
        gb_pad(&b, 32);
        for (int i = 0; i < n_t * 32; i++) gb_u8(&b, 0);
        struct wk_gguf *g = NULL;
        struct wk_error err;
        enum wk_status st = wk_gguf_open_memory(b.p, b.n, "many", &g, &err);
        if (dup) {
            CHECK_EQ_INT(st, WK_E_FORMAT);
            CHECK_CONTAINS(err.msg, "duplicate metadata key k.7");
        } else {
            CHECK_EQ_INT(st, WK_OK);
            CHECK_EQ_INT(wk_gguf_find(g, "k.199999")->u, 199999);
            CHECK(wk_gguf_find_tensor(g, "t.99999") != NULL);
            CHECK(wk_gguf_find_tensor(g, "t.100000") == NULL);
        }
        wk_gguf_close(g);
        free(b.p);
    }
}

static void test_open_errors(void)
{
    struct wk_gguf *g;
    struct wk_error err;
    CHECK_EQ_INT(wk_gguf_open("/nonexistent/model.gguf", &g, &err), WK_E_NOT_FOUND);
    CHECK_CONTAINS(err.msg, "/nonexistent/model.gguf: no such file");
    CHECK_EQ_INT(wk_gguf_open("/tmp", &g, &err), WK_E_IO);
    CHECK_CONTAINS(err.msg, "is a directory");
}

/* wk_json_load_file against jansson's own json_load_file on the same
 * files: equal values, the same error texts for malformed JSON; a FIFO
 * refused at once (no wait for a writer), a directory and a missing file
 * refused with their reason. */
static void test_json_load_file(void)
{
    char dir[] = "/tmp/wick-test-json-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    static const char *texts[] = {
        "{\"a\": [1, 2.5, \"x\\u00e9\"], \"b\": {\"c\": null, \"d\": true}}",
        "(a long array)", "[1, 2, 3]\n", "{\"a\": 1, \"a\": 2}", "{\"a\": }", "[1, 2", "", "nul\"l", "{\"s\": \"a\\u0000b\"}", "\"ok\"",
    };
    static const size_t flags[] = {0, JSON_REJECT_DUPLICATES, JSON_ALLOW_NUL, JSON_DECODE_ANY};
    char path[128];
    snprintf(path, sizeof path, "%s/f.json", dir);
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        /* a long one too: past one read's 64 KiB */
        FILE *f = fopen(path, "w");
        if (i == 1) {
            fputs("[", f);
            for (int k = 0; k < 40000; k++) fprintf(f, "%s%d", k ? ", " : "", k * 7);
            fputs("]", f);
        } else {
            fputs(texts[i], f);
        }
        fclose(f);
        for (size_t fl = 0; fl < sizeof flags / sizeof *flags; fl++) {
            json_error_t e1, e2;
            json_t *a = json_load_file(path, flags[fl], &e1), *b = wk_json_load_file(path, flags[fl], &e2);
            CHECK((a == NULL) == (b == NULL));
            if (a && b) CHECK(json_equal(a, b));
            if (!a && !b) {
                CHECK_EQ_STR(e2.text, e1.text);
                CHECK_EQ_INT(e2.line, e1.line);
                CHECK_EQ_INT(e2.column, e1.column);
                CHECK_EQ_STR(e2.source, path);
            }
            json_decref(a);
            json_decref(b);
        }
    }
    json_error_t e;
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    CHECK(wk_json_load_file(fifo, 0, &e) == NULL);
    CHECK_CONTAINS(e.text, "not a regular file");
    CHECK(wk_json_load_file(dir, 0, &e) == NULL);
    CHECK_CONTAINS(e.text, "is a directory");
    snprintf(path, sizeof path, "%s/missing.json", dir);
    CHECK(wk_json_load_file(path, 0, &e) == NULL);
    CHECK_CONTAINS(e.text, "unable to open");
    CHECK_CONTAINS(e.text, "No such file");
    CHECK_EQ_INT(json_error_code(&e), json_error_cannot_open_file);
    CHECK(wk_json_load_file(path, 0, NULL) == NULL);
    /* the reader under it, wk_read_file: its errno for each refusal, an
     * empty file as "", a file over max refused */
    size_t n = 1;
    CHECK(wk_read_file(path, 100, &n) == NULL && errno == ENOENT);
    CHECK(wk_read_file(dir, 100, &n) == NULL && errno == EISDIR);
    CHECK(wk_read_file(fifo, 100, &n) == NULL && errno == EINVAL);
    FILE *f = fopen(path, "w");
    fclose(f);
    char *t = wk_read_file(path, 100, &n);
    CHECK(t != NULL && n == 0 && t[0] == '\0');
    wk_free(t);
    f = fopen(path, "w");
    fputs("0123456789", f);
    fclose(f);
    t = wk_read_file(path, 10, &n);
    CHECK(t != NULL && n == 10 && strcmp(t, "0123456789") == 0);
    wk_free(t);
    CHECK(wk_read_file(path, 9, &n) == NULL && errno == EFBIG);
    unlink(path);
    unlink(fifo);
    snprintf(path, sizeof path, "%s/f.json", dir);
    unlink(path);
    rmdir(dir);
}

CHECK_MAIN(TEST(test_json_load_file), TEST(test_reads_every_type), TEST(test_version_2), TEST(test_alignment), TEST(test_every_truncation_is_refused),
           TEST(test_malformed_files_are_refused), TEST(test_allocation_failures_leak_nothing),
           TEST(test_many_entries), TEST(test_open_errors))
