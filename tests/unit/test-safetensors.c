/*
 * test-safetensors.c - the safetensors reader and writer: a round trip of
 * every dtype (scalars, zero-size and 8-dim tensors, metadata); a fixture
 * written by the reference Python library (scripts/reference/
 * make-safetensors-fixture.py) read back exactly; when python3 can import
 * safetensors, our files read by the reference reader too; one hand-built
 * bad file per reader rule, each refused with a message naming the file and
 * the problem; every truncation refused; bad writer arguments refused and a
 * failed write leaving the old file alone; allocation failures leak nothing.
 */
#include "check.h"

#include "../../src/io/wk_safetensors.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[64]; /* a fresh temporary folder, made on first use */

static void setup(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/wick-test-st.XXXXXX");
    CHECK(mkdtemp(g_dir) != NULL);
}

static const char *tmp_path(const char *name)
{
    if (!g_dir[0]) setup();
    static char buf[4][160];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", g_dir, name);
    return p;
}

/* The whole file at path in a malloc'd buffer (size in *n), or NULL. */
static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(*n + 1);
    if (fread(p, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return p;
}

static int count_dir_entries(void)
{
    DIR *d = opendir(g_dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* ------------------------------------------------------------ round trip */

static float g_f32[6] = {-2, -1, 0, 1.5f, 2, 3};
static uint16_t g_f16[4] = {0xC000, 0xBC00, 0x0000, 0x3E00};
static uint16_t g_bf16[3] = {0xC000, 0x3F80, 0x7F80};
static int8_t g_i8[5] = {-128, -1, 0, 1, 127};
static uint8_t g_u8[3] = {0, 200, 255};
static uint32_t g_u32[2] = {4000000000u, 7};
static float g_scalar = 0.25f;
static uint8_t g_big[2 * 1 * 1 * 1 * 1 * 1 * 1 * 3];
static const int64_t sh_f32[2] = {2, 3}, sh_f16[2] = {2, 2}, sh_bf16[1] = {3}, sh_i8[1] = {5},
                     sh_u8[3] = {1, 3, 1}, sh_u32[1] = {2}, sh_empty[2] = {4, 0},
                     sh_8d[8] = {2, 1, 1, 1, 1, 1, 1, 3};

/* Given smallest elements first, so the writer has to reorder them. */
static const struct wk_st_write_tensor g_tensors[] = {
    {"u8", WK_ST_U8, 3, sh_u8, g_u8},
    {"i8", WK_ST_I8, 1, sh_i8, g_i8},
    {"model.layers.0.big", WK_ST_U8, 8, sh_8d, g_big},
    {"f16", WK_ST_F16, 2, sh_f16, g_f16},
    {"empty", WK_ST_F16, 2, sh_empty, NULL},
    {"bf16 ünïcode", WK_ST_BF16, 1, sh_bf16, g_bf16},
    {"f32", WK_ST_F32, 2, sh_f32, g_f32},
    {"scalar", WK_ST_F32, 0, NULL, &g_scalar},
    {"u32", WK_ST_U32, 1, sh_u32, g_u32},
};
#define N_TENSORS ((int64_t)WK_ARRAY_LEN(g_tensors))
static const char *const g_meta[] = {"format", "pt", "note", "héllo \"quoted\"\n", "empty", ""};

static uint64_t write_tensor_bytes(const struct wk_st_write_tensor *w)
{
    uint64_t n = wk_st_dtype_size(w->dtype);
    for (int d = 0; d < w->n_dims; d++) n *= (uint64_t)w->shape[d];
    return n;
}

static void test_dtype_table(void)
{
    CHECK_EQ_INT(wk_st_dtype_size(WK_ST_F32), 4);
    CHECK_EQ_INT(wk_st_dtype_size(WK_ST_BF16), 2);
    CHECK_EQ_INT(wk_st_dtype_size(WK_ST_U8), 1);
    CHECK_EQ_INT(wk_st_dtype_size(WK_ST_U32), 4);
    CHECK_EQ_INT(wk_st_dtype_size((enum wk_st_dtype)99), 0);
    CHECK_EQ_STR(wk_st_dtype_name(WK_ST_BF16), "BF16");
    CHECK_EQ_STR(wk_st_dtype_name(WK_ST_I8), "I8");
    CHECK_EQ_STR(wk_st_dtype_name((enum wk_st_dtype)-1), "unknown");
}

static void test_round_trip(void)
{
    for (size_t i = 0; i < sizeof g_big; i++) g_big[i] = (uint8_t)(i * 37 + 1);
    const char *path = tmp_path("rt.safetensors");
    struct wk_error err = {0}; /* a success writes no message: the check below reads it */
    int64_t base = wk_alloc_live_bytes();
    /* twice: the second write replaces the first file */
    for (int pass = 0; pass < 2; pass++) {
        int n_meta = pass ? 3 : 1;
        CHECK_EQ_INT(wk_safetensors_write(path, g_tensors, N_TENSORS, g_meta, n_meta, &err), WK_OK);
        CHECK_EQ_STR(pass ? err.msg : "", "");
    }
    CHECK_EQ_INT(count_dir_entries(), 1); /* no temporary file left */
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);

    size_t file_size = 0;
    uint8_t *bytes = slurp(path, &file_size);
    uint64_t hlen = 0;
    memcpy(&hlen, bytes, 8);
    CHECK_EQ_INT(hlen % 8, 0);
    CHECK_EQ_INT(bytes[8], '{');
    CHECK_EQ_INT(bytes[8 + hlen - 1] == ' ' || bytes[8 + hlen - 1] == '}', 1);
    uint64_t total = 0;
    for (int64_t i = 0; i < N_TENSORS; i++) total += write_tensor_bytes(&g_tensors[i]);
    CHECK_EQ_INT(file_size, 8 + hlen + total); /* contiguous: no gaps, no tail */
    free(bytes);

    struct wk_safetensors *st;
    CHECK_EQ_INT(wk_safetensors_open(path, &st, &err), WK_OK);
    if (!st) return;
    CHECK_EQ_INT(wk_safetensors_n_tensors(st), N_TENSORS);
    /* by element size, given order within one size; the zero-size tensor
     * shares its offset with bf16 and sorts before it (by begin, then end,
     * as the reference sorts data_offsets) */
    static const char *const order[] = {"f32", "scalar", "u32", "f16", "empty", "bf16 ünïcode",
                                        "u8", "i8", "model.layers.0.big"};
    for (int64_t i = 0; i < N_TENSORS; i++) {
        const struct wk_st_tensor *t = wk_safetensors_tensor(st, i);
        CHECK_EQ_STR(t->name, order[i]);
        CHECK_EQ_INT((uintptr_t)t->data % wk_st_dtype_size(t->dtype), 0);
    }
    for (int64_t i = 0; i < N_TENSORS; i++) {
        const struct wk_st_write_tensor *w = &g_tensors[i];
        const struct wk_st_tensor *t = wk_safetensors_find(st, w->name);
        CHECK(t != NULL);
        if (!t) continue;
        CHECK_EQ_STR(t->name, w->name);
        CHECK_EQ_INT(t->dtype, w->dtype);
        CHECK_EQ_INT(t->n_dims, w->n_dims);
        uint64_t n_el = 1;
        for (int d = 0; d < w->n_dims; d++) {
            CHECK_EQ_INT(t->shape[d], w->shape[d]);
            n_el *= (uint64_t)w->shape[d];
        }
        CHECK_EQ_INT(t->n_elements, n_el);
        CHECK_EQ_INT(t->size_bytes, write_tensor_bytes(w));
        CHECK(t->size_bytes == 0 || memcmp(t->data, w->data, t->size_bytes) == 0);
    }
    CHECK_EQ_INT(wk_safetensors_find(st, "scalar")->n_elements, 1);
    CHECK_EQ_INT(wk_safetensors_find(st, "empty")->n_elements, 0);
    CHECK(wk_safetensors_find(st, "nope") == NULL);
    CHECK(wk_safetensors_find(st, "") == NULL);
    CHECK_EQ_STR(wk_safetensors_metadata(st, "format"), "pt");
    CHECK_EQ_STR(wk_safetensors_metadata(st, "note"), "héllo \"quoted\"\n");
    CHECK_EQ_STR(wk_safetensors_metadata(st, "empty"), "");
    CHECK(wk_safetensors_metadata(st, "absent") == NULL);
    wk_safetensors_close(st);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
    unlink(path);
}

/* ------------------------------------------------ the reference library */

/* tests/unit/fixtures/tiny.safetensors, written by Python's safetensors
 * (see its script): every value is checked exactly. */
static void test_python_fixture(void)
{
    struct wk_safetensors *st;
    struct wk_error err;
    CHECK_EQ_INT(wk_safetensors_open("tests/unit/fixtures/tiny.safetensors", &st, &err), WK_OK);
    if (!st) {
        fprintf(stderr, "  %s (run from the repository root)\n", err.msg);
        return;
    }
    CHECK_EQ_INT(wk_safetensors_n_tensors(st), 8);
    CHECK_EQ_STR(wk_safetensors_metadata(st, "format"), "pt");
    CHECK_EQ_STR(wk_safetensors_metadata(st, "note"), "héllo");

    const struct wk_st_tensor *t = wk_safetensors_find(st, "f32");
    CHECK_EQ_INT(t->dtype, WK_ST_F32);
    CHECK_EQ_INT(t->n_dims, 2);
    CHECK_EQ_INT(t->shape[0], 2);
    CHECK_EQ_INT(t->shape[1], 3);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((const float *)t->data)[i], i - 2);

    static const uint16_t f16[6] = {0xC000, 0xBC00, 0x0000, 0x3C00, 0x4000, 0x4200};
    static const uint16_t bf16[6] = {0xC000, 0xBF80, 0x0000, 0x3F80, 0x4000, 0x4040};
    t = wk_safetensors_find(st, "f16");
    CHECK_EQ_INT(t->dtype, WK_ST_F16);
    CHECK_EQ_INT(t->shape[0], 3);
    CHECK_EQ_INT(t->shape[1], 2);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((const uint16_t *)t->data)[i], f16[i]);
    t = wk_safetensors_find(st, "bf16");
    CHECK_EQ_INT(t->dtype, WK_ST_BF16);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((const uint16_t *)t->data)[i], bf16[i]);
    t = wk_safetensors_find(st, "i8");
    CHECK_EQ_INT(t->n_dims, 3);
    CHECK_EQ_INT(t->n_elements, 6);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((const int8_t *)t->data)[i], i - 2);
    t = wk_safetensors_find(st, "u8");
    CHECK_EQ_INT(t->dtype, WK_ST_U8);
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(((const uint8_t *)t->data)[i], i);
    t = wk_safetensors_find(st, "u32");
    CHECK_EQ_INT(t->dtype, WK_ST_U32);
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(((const uint32_t *)t->data)[i], 4000000000u + i);
    t = wk_safetensors_find(st, "scalar");
    CHECK_EQ_INT(t->n_dims, 0);
    CHECK_EQ_INT(t->n_elements, 1);
    CHECK_NEAR(*(const float *)t->data, 0.5, 0, 0);
    t = wk_safetensors_find(st, "empty");
    CHECK_EQ_INT(t->n_dims, 2);
    CHECK_EQ_INT(t->size_bytes, 0);
    /* file order: by offset, the zero-size tensor before f16 at its offset */
    static const char *const order[] = {"f32", "scalar", "u32", "bf16",
                                        "empty", "f16", "i8", "u8"};
    for (int i = 0; i < 8; i++) CHECK_EQ_STR(wk_safetensors_tensor(st, i)->name, order[i]);
    wk_safetensors_close(st);
}

/* Our file read by the reference reader (its Rust core, which refuses
 * gaps, tails and bad offsets), when python3 can import safetensors: it
 * prints each tensor as "name dtype shape hex", sorted by name. */
static void test_python_reads_our_file(void)
{
    if (system("python3 -c 'import safetensors' >/dev/null 2>&1") != 0) {
        printf("  (python3 safetensors not importable: skipped)\n");
        return;
    }
    const char *path = tmp_path("py.safetensors"), *out = tmp_path("py.txt");
    CHECK_EQ_INT(wk_safetensors_write(path, g_tensors, N_TENSORS, g_meta, 3, NULL), WK_OK);
    char cmd[1024];
    snprintf(
        cmd, sizeof cmd,
        "python3 -c 'import sys, safetensors\n"
        "for n, t in sorted(safetensors.deserialize(open(sys.argv[1], \"rb\").read())):\n"
        "    print(n, t[\"dtype\"], \",\".join(map(str, t[\"shape\"])), bytes(t[\"data\"]).hex())'"
        " %s > %s",
        path, out);
    CHECK_EQ_INT(system(cmd), 0);
    size_t n = 0;
    char *text = (char *)slurp(out, &n);
    if (!text) return;
    text[n] = 0;
    for (int64_t i = 0; i < N_TENSORS; i++) {
        const struct wk_st_write_tensor *w = &g_tensors[i];
        char line[512];
        int k = snprintf(line, sizeof line, "%s %s ", w->name, wk_st_dtype_name(w->dtype));
        for (int d = 0; d < w->n_dims; d++)
            k += snprintf(line + k, sizeof line - (size_t)k, "%s%lld", d ? "," : "",
                          (long long)w->shape[d]);
        k += snprintf(line + k, sizeof line - (size_t)k, " ");
        for (uint64_t b = 0; b < write_tensor_bytes(w); b++)
            k += snprintf(line + k, sizeof line - (size_t)k, "%02x", ((const uint8_t *)w->data)[b]);
        snprintf(line + k, sizeof line - (size_t)k, "\n");
        CHECK_CONTAINS(text, line);
    }
    free(text);
    unlink(path);
    unlink(out);
}

/* ------------------------------------------------------------- bad files */

/* An 8-byte length (hlen, or the header's own when ~0) + header + n_data
 * zero bytes, in a malloc'd buffer. */
static uint8_t *build(const char *header, uint64_t hlen, size_t n_data, size_t *size)
{
    size_t h = strlen(header);
    if (hlen == ~0ull) hlen = h;
    *size = 8 + h + n_data;
    uint8_t *p = calloc(1, *size);
    memcpy(p, &hlen, 8);
    memcpy(p + 8, header, h);
    return p;
}

static void expect_bad(const char *header, uint64_t hlen, size_t n_data, enum wk_status want,
                       const char *msg, int line)
{
    size_t size;
    uint8_t *p = build(header, hlen, n_data, &size);
    struct wk_safetensors *st = (struct wk_safetensors *)1;
    struct wk_error err = {0};
    int64_t base = wk_alloc_live_bytes();
    enum wk_status got = wk_safetensors_open_memory(p, size, "bad.safetensors", &st, &err);
    if (got != want || !strstr(err.msg, msg) || strncmp(err.msg, "bad.safetensors: ", 17) != 0)
        fprintf(stderr, "  (case at line %d: %s)\n", line, header);
    CHECK_EQ_INT(got, want);
    CHECK(st == NULL);
    CHECK_EQ_INT(strncmp(err.msg, "bad.safetensors: ", 17), 0);
    CHECK_CONTAINS(err.msg, msg);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
    free(p);
}
#define BAD(header, n_data, want, msg) expect_bad(header, ~0ull, n_data, want, msg, __LINE__)
#define T(name, dtype, shape, offsets)                                                             \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":" offsets "}"

static void test_bad_lengths(void)
{
    {
        uint8_t five[5] = {2, 0, 0, 0, 0};
        struct wk_safetensors *st;
        struct wk_error err;
        CHECK_EQ_INT(wk_safetensors_open_memory(five, 5, "bad.safetensors", &st, &err),
                     WK_E_FORMAT);
        CHECK_CONTAINS(err.msg,
                       "bad.safetensors: file too short for a safetensors header length (5 bytes");
    }
    expect_bad("{}", 1, 0, WK_E_FORMAT, "header length 1 is out of range", __LINE__);
    expect_bad("{}", 0, 0, WK_E_FORMAT, "header length 0 is out of range", __LINE__);
    expect_bad("{}", (100 << 20) + 1, 0, WK_E_FORMAT, "header length 104857601 is out of range",
               __LINE__);
    expect_bad("{}", ~0ull - 7, 0, WK_E_FORMAT, "out of range", __LINE__); /* 8 + N wraps */
    expect_bad("{}", 3, 0, WK_E_FORMAT, "header length 3 runs past the end of the file (10 bytes)",
               __LINE__);
    expect_bad("{\"a\":{}}  ", 100, 50, WK_E_FORMAT, "header length 100 runs past the end",
               __LINE__);
}

/* A file on disk of header length 2 and header {}: an error naming it. */
static void test_empty_header_names_the_file(void)
{
    const char *path = tmp_path("empty.safetensors");
    FILE *f = fopen(path, "wb");
    fwrite("\x02\0\0\0\0\0\0\0{}", 1, 10, f);
    fclose(f);
    struct wk_safetensors *st;
    struct wk_error err;
    CHECK_EQ_INT(wk_safetensors_open(path, &st, &err), WK_E_FORMAT);
    char want[256];
    snprintf(want, sizeof want, "%s: no tensors", path);
    CHECK_EQ_STR(err.msg, want);
    unlink(path);
    BAD("{\"__metadata__\":{\"a\":\"b\"}}", 0, WK_E_FORMAT, "bad.safetensors: no tensors");
}

static void test_bad_json(void)
{
    BAD("{\"a\":", 0, WK_E_FORMAT, "header is not valid JSON");
    BAD("{\"a\":{}} x", 0, WK_E_FORMAT, "header is not valid JSON");
    BAD("{\"\xff\":{}}", 0, WK_E_FORMAT, "header is not valid JSON"); /* not UTF-8 */
    BAD("{\"a\\u0000b\":{}}", 0, WK_E_FORMAT, "header is not valid JSON"); /* NUL in a key */
    BAD("[]", 0, WK_E_FORMAT, "header is not a JSON object");
    BAD("{" T("a", "U8", "[1]", "[0,1]") "," T("a", "U8", "[1]", "[1,2]") "}", 2, WK_E_FORMAT,
        "duplicate");
    BAD("{" T("", "U8", "[1]", "[0,1]") "}", 1, WK_E_FORMAT, "a tensor has an empty name");
    BAD("{\"a\":[1]}", 0, WK_E_FORMAT, "tensor a: entry is not a JSON object");
    BAD("{\"__metadata__\":[]," T("a", "U8", "[1]", "[0,1]") "}", 1, WK_E_FORMAT,
        "__metadata__ is not a JSON object");
    BAD("{\"__metadata__\":{\"k\":1}," T("a", "U8", "[1]", "[0,1]") "}", 1, WK_E_FORMAT,
        "__metadata__ k is not a string");
}

static void test_bad_dtype(void)
{
    BAD("{\"a\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1, WK_E_FORMAT,
        "tensor a: dtype is missing or not a string");
    BAD("{" T("a", "F33", "[1]", "[0,4]") "}", 4, WK_E_FORMAT, "tensor a: unknown dtype \"F33\"");
    BAD("{" T("w", "U64", "[1]", "[0,8]") "}", 8, WK_E_UNSUPPORTED,
        "tensor w: dtype U64 is not supported");
    BAD("{" T("w", "I16", "[1]", "[0,2]") "}", 2, WK_E_UNSUPPORTED, "dtype I16 is not supported");
    BAD("{" T("w", "F64", "[1]", "[0,8]") "}", 8, WK_E_UNSUPPORTED, "dtype F64 is not supported");
    BAD("{" T("mask", "BOOL", "[1]", "[0,1]") "}", 1, WK_E_UNSUPPORTED,
        "tensor mask: dtype BOOL is not supported");
}

static void test_bad_shape(void)
{
    BAD("{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", 1, WK_E_FORMAT,
        "tensor a: shape is missing or not an array");
    BAD("{" T("a", "U8", "[2,-1]", "[0,0]") "}", 0, WK_E_FORMAT,
        "tensor a: shape[1] is not a non-negative integer");
    BAD("{" T("a", "U8", "[1.0]", "[0,1]") "}", 1, WK_E_FORMAT,
        "shape[0] is not a non-negative integer");
    BAD("{" T("a", "U8", "[1,1,1,1,1,1,1,1,1]", "[0,1]") "}", 1, WK_E_FORMAT,
        "tensor a: shape has 9 dimensions (at most 8)");
    BAD("{" T("a", "U8", "[4294967296,4294967296]", "[0,1]") "}", 1, WK_E_FORMAT,
        "tensor a: element count overflows");
    BAD("{" T("a", "F32", "[4611686018427387904]", "[0,1]") "}", 1, WK_E_FORMAT,
        "tensor a: byte size overflows");
}

static void test_bad_offsets(void)
{
    BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, WK_E_FORMAT,
        "tensor a: data_offsets is missing or not two integers");
    BAD("{" T("a", "U8", "[1]", "[0,1,2]") "}", 2, WK_E_FORMAT,
        "data_offsets is missing or not two");
    BAD("{" T("a", "U8", "[1]", "[0,\"1\"]") "}", 1, WK_E_FORMAT, "not two integers");
    BAD("{" T("a", "U8", "[0]", "[2,1]") "}", 2, WK_E_FORMAT,
        "tensor a: data_offsets [2, 1] must have 0 <= begin <= end");
    BAD("{" T("a", "U8", "[0]", "[-1,-1]") "}", 2, WK_E_FORMAT, "must have 0 <= begin <= end");
    /* wrong byte size */
    BAD("{" T("a", "F32", "[2,3]", "[0,20]") "}", 24, WK_E_FORMAT,
        "tensor a: data_offsets [0, 20] hold 20 bytes, but 6 elements of F32 need 24");
    /* range past the end */
    BAD("{" T("a", "F16", "[4]", "[0,8]") "}", 7, WK_E_FORMAT,
        "tensor a: data_offsets [0, 8] run past the end of the data section (7 bytes)");
    BAD("{" T("a", "U8", "[1]", "[9223372036854775806,9223372036854775807]") "}", 7, WK_E_FORMAT,
        "run past the end of the data section");
    /* overlapping ranges, in either header order */
    BAD("{" T("a", "F32", "[2]", "[0,8]") "," T("b", "U8", "[4]", "[4,8]") "}", 8, WK_E_FORMAT,
        "tensors a and b overlap");
    BAD("{" T("b", "U8", "[4]", "[4,8]") "," T("c", "U8", "[0]", "[6,6]") "," T("a", "F32", "[2]",
                                                                                 "[0,8]") "}",
        8, WK_E_FORMAT, "tensors a and b overlap");
    BAD("{" T("x", "U8", "[4]", "[0,4]") "," T("y", "U8", "[4]", "[0,4]") "}", 8, WK_E_FORMAT,
        "tensors x and y overlap");
}

/* What the reader allows beyond the reference writer's output: tensors
 * in any header order, a zero-size tensor between two others, keys it does
 * not know, a header without padding. What it does not (as the reference
 * reader, safetensors 0.5's Metadata::validate, does not): a gap between
 * tensors, bytes after the last one, a zero-size tensor inside another,
 * and so a header length one byte short, which moved every tensor by a
 * byte and ran the model on garbage. */
static void test_lenient_but_valid(void)
{
    size_t size;
    uint8_t *p = build("{" T("b", "U8", "[2]", "[3,5]") "," T("z", "F32", "[0,5]", "[5,5]") ","
                       T("a", "U8", "[2]", "[0,2]") ",\"x\":{\"dtype\":\"I8\",\"shape\":[],"
                       "\"data_offsets\":[2,3],\"extra\":1}}",
                       ~0ull, 5, &size);
    p[size - 5 + 3] = 42;
    struct wk_safetensors *st;
    struct wk_error err;
    CHECK_EQ_INT(wk_safetensors_open_memory(p, size, "ok", &st, &err), WK_OK);
    if (st) {
        CHECK_EQ_INT(wk_safetensors_n_tensors(st), 4);
        CHECK_EQ_STR(wk_safetensors_tensor(st, 0)->name, "a");
        CHECK_EQ_STR(wk_safetensors_tensor(st, 1)->name, "x");
        CHECK_EQ_STR(wk_safetensors_tensor(st, 2)->name, "b");
        CHECK_EQ_STR(wk_safetensors_tensor(st, 3)->name, "z");
        CHECK_EQ_INT(((const uint8_t *)wk_safetensors_find(st, "b")->data)[0], 42);
        CHECK(wk_safetensors_metadata(st, "format") == NULL);
        wk_safetensors_close(st);
    }
    free(p);
    BAD("{" T("a", "U8", "[2]", "[0,2]") "," T("b", "U8", "[2]", "[6,8]") "}", 8, WK_E_FORMAT,
        "tensor b starts at byte 6 of the data, but a ends at 2");
    BAD("{" T("a", "U8", "[2]", "[2,4]") "}", 4, WK_E_FORMAT, "the first tensor, a, starts at byte 2 of the data, not 0");
    BAD("{" T("a", "U8", "[2]", "[0,2]") "}", 12, WK_E_FORMAT,
        "the tensors cover 2 bytes of data, but the file holds 12 after its header");
    BAD("{" T("a", "U8", "[4]", "[0,4]") "," T("z", "U8", "[0]", "[2,2]") "}", 4, WK_E_FORMAT,
        "tensors a and z overlap");
    /* a header padded with a space, its length one short: the JSON still
     * reads, but the data would start a byte early */
    const char *h = "{" T("a", "U8", "[4]", "[0,4]") "} ";
    p = build(h, strlen(h) - 1, 4, &size);
    CHECK_EQ_INT(wk_safetensors_open_memory(p, size, "short", &st, &err), WK_E_FORMAT);
    CHECK_CONTAINS(err.msg, "the tensors cover 4 bytes of data, but the file holds 5 after its header");
    free(p);
}

/* Every proper prefix of a valid file is refused cleanly. */
static void test_every_truncation_is_refused(void)
{
    const char *path = tmp_path("trunc.safetensors");
    CHECK_EQ_INT(wk_safetensors_write(path, g_tensors, N_TENSORS, g_meta, 3, NULL), WK_OK);
    size_t n = 0;
    uint8_t *p = slurp(path, &n);
    int64_t base = wk_alloc_live_bytes();
    int bad = 0;
    for (size_t k = 0; k < n; k++) {
        struct wk_safetensors *st;
        struct wk_error err;
        enum wk_status s = wk_safetensors_open_memory(p, k, "cut", &st, &err);
        bad += s != WK_E_FORMAT || strncmp(err.msg, "cut: ", 5) != 0;
        wk_safetensors_close(st);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
    free(p);
    unlink(path);
}

/* --------------------------------------------------------------- writer */

static void test_writer_errors(void)
{
    const char *path = tmp_path("keep.safetensors");
    CHECK_EQ_INT(wk_safetensors_write(path, g_tensors, 1, NULL, 0, NULL), WK_OK);
    size_t n0;
    uint8_t *before = slurp(path, &n0);
    int64_t base = wk_alloc_live_bytes();
    static const int64_t neg[2] = {2, -1}, huge[2] = {INT64_MAX, 4}, big[1] = {1ll << 62};
    uint8_t data[4] = {0};
    struct {
        struct wk_st_write_tensor t[2];
        int n;
        const char *msg;
    } cases[] = {
        {{{"a", WK_ST_U8, 0, NULL, data}}, 0, "need at least one tensor"},
        {{{"", WK_ST_U8, 0, NULL, data}}, 1, "tensor name \"\" is empty or reserved"},
        {{{NULL, WK_ST_U8, 0, NULL, data}}, 1, "is empty or reserved"},
        {{{"__metadata__", WK_ST_U8, 0, NULL, data}}, 1, "is empty or reserved"},
        {{{"a", WK_ST_U8, 0, NULL, data}, {"a", WK_ST_U8, 0, NULL, data}}, 2,
         "tensor name a is used twice"},
        {{{"a", (enum wk_st_dtype)WK_ST_DTYPE_COUNT, 0, NULL, data}}, 1, "tensor a: dtype 8 is not a wk_st_dtype"},
        {{{"a", WK_ST_U8, 9, huge, data}}, 1, "tensor a: 9 dimensions (0 to 8)"},
        {{{"a", WK_ST_U8, -1, NULL, data}}, 1, "tensor a: -1 dimensions"},
        {{{"a", WK_ST_U8, 2, neg, data}}, 1, "tensor a: shape[1] = -1 is negative or overflows"},
        {{{"a", WK_ST_F32, 2, huge, data}}, 1, "shape[1] = 4 is negative or overflows"},
        {{{"a", WK_ST_F32, 1, big, data}}, 1, "tensor a: byte size overflows"},
        {{{"a", WK_ST_U8, 1, big, data}, {"b", WK_ST_U8, 1, big, data}}, 2,
         "the data section overflows"},
        {{{"a", WK_ST_U8, 0, NULL, NULL}}, 1, "tensor a: data is NULL"},
        {{{"\xc3(", WK_ST_U8, 0, NULL, data}}, 1, "is not UTF-8"},
    };
    for (size_t i = 0; i < WK_ARRAY_LEN(cases); i++) {
        struct wk_error err = {0};
        CHECK_EQ_INT(wk_safetensors_write(path, cases[i].t, cases[i].n, NULL, 0, &err),
                     WK_E_INVALID);
        CHECK_EQ_INT(strncmp(err.msg, path, strlen(path)), 0);
        CHECK_CONTAINS(err.msg, cases[i].msg);
    }
    struct wk_error err;
    const char *dup_meta[] = {"k", "1", "k", "2"}, *bad_meta[] = {"k", "\xff"};
    CHECK_EQ_INT(wk_safetensors_write(path, g_tensors, 1, dup_meta, 2, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "metadata pair 1 is NULL, not UTF-8 or a repeated key");
    CHECK_EQ_INT(wk_safetensors_write(path, g_tensors, 1, bad_meta, 1, &err), WK_E_INVALID);
    CHECK_EQ_INT(wk_safetensors_write(path, g_tensors, 1, NULL, 1, &err), WK_E_INVALID);
    CHECK_EQ_INT(wk_safetensors_write("/nonexistent/dir/x.safetensors", g_tensors, 1, NULL, 0,
                                      &err),
                 WK_E_IO);
    CHECK_CONTAINS(err.msg, "/nonexistent/dir/x.safetensors: cannot create "
                            "/nonexistent/dir/x.safetensors.tmp.");
    CHECK_CONTAINS(err.msg, "No such file or directory");
    /* the old file is untouched and no temporary file is left */
    size_t n1;
    uint8_t *after = slurp(path, &n1);
    CHECK(n0 == n1 && memcmp(before, after, n0) == 0);
    CHECK_EQ_INT(count_dir_entries(), 1);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
    free(before);
    free(after);
    unlink(path);
}

static void test_open_errors(void)
{
    struct wk_safetensors *st;
    struct wk_error err;
    CHECK_EQ_INT(wk_safetensors_open("/nonexistent/model.safetensors", &st, &err), WK_E_NOT_FOUND);
    CHECK_CONTAINS(err.msg, "/nonexistent/model.safetensors");
    CHECK(st == NULL);
    CHECK_EQ_INT(wk_safetensors_open(g_dir, &st, &err), WK_E_IO);
    wk_safetensors_close(NULL);
}

/* Failing the nth allocation, for every n, gives WK_E_NOMEM and frees
 * everything already allocated, in the reader and the writer. */
static void test_allocation_failures_leak_nothing(void)
{
    const char *path = tmp_path("nomem.safetensors");
    CHECK_EQ_INT(wk_safetensors_write(path, g_tensors, N_TENSORS, g_meta, 3, NULL), WK_OK);
    size_t n = 0;
    uint8_t *p = slurp(path, &n);
    int64_t base = wk_alloc_live_bytes();
    int n_fail = 0;
    for (int64_t k = 1; k < 100; k++) {
        struct wk_safetensors *st = NULL;
        struct wk_error err;
        wk_alloc_fail_after(k);
        enum wk_status s = wk_safetensors_open_memory(p, n, "mem", &st, &err);
        wk_alloc_fail_after(0);
        if (s == WK_OK) {
            wk_safetensors_close(st);
            break;
        }
        n_fail++;
        CHECK_EQ_INT(s, WK_E_NOMEM);
        CHECK_EQ_INT(wk_alloc_live_bytes(), base);
    }
    CHECK(n_fail > 10);
    n_fail = 0;
    for (int64_t k = 1; k < 100; k++) {
        wk_alloc_fail_after(k);
        enum wk_status s = wk_safetensors_write(path, g_tensors, N_TENSORS, g_meta, 3, NULL);
        wk_alloc_fail_after(0);
        if (s == WK_OK) break;
        n_fail++;
        CHECK_EQ_INT(s, WK_E_NOMEM);
        CHECK_EQ_INT(wk_alloc_live_bytes(), base);
    }
    CHECK(n_fail >= 2);
    CHECK_EQ_INT(count_dir_entries(), 1);
    free(p);
    unlink(path);
}

static void teardown(void)
{
    if (!g_dir[0]) return;
    CHECK_EQ_INT(count_dir_entries(), 0);
    CHECK_EQ_INT(rmdir(g_dir), 0);
}

CHECK_MAIN(TEST(test_dtype_table), TEST(test_round_trip), TEST(test_python_fixture),
           TEST(test_python_reads_our_file), TEST(test_bad_lengths),
           TEST(test_empty_header_names_the_file), TEST(test_bad_json), TEST(test_bad_dtype),
           TEST(test_bad_shape), TEST(test_bad_offsets), TEST(test_lenient_but_valid),
           TEST(test_every_truncation_is_refused), TEST(test_writer_errors),
           TEST(test_open_errors), TEST(test_allocation_failures_leak_nothing), TEST(teardown))
