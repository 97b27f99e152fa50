/*
 * test-tokenizer.c - the SentencePiece tokenizer on a small vocabulary
 * built here, with expected ids worked out by hand from the algorithm
 * (the pair forming the earliest vocabulary piece merges first, the longer
 * left part then the leftmost pair on ties; byte fallback; user-defined
 * pieces split first, except runs of spaces, which merge like ordinary
 * pieces as in Hugging Face tokenizers; control pieces only in
 * scaffolding); decoding and
 * the streaming detokenizer's UTF-8 hold-back; tokenizer.json's Unicode
 * normalizers (NFC, NFD, NFKC, NFKD) on a character-level vocabulary;
 * loader errors.
 */
#include "check.h"
#include "gguf_builder.h"

#include "../../src/tokenizer/wk_tokenizer.h"

enum { T_NORMAL = 1, T_UNK = 2, T_CTRL = 3, T_USER = 4, T_BYTE = 6 };

struct piece {
    const char *text;
    float score;
    int type;
};

/* ids: 0 <pad>, 1 <eos>, 2 <bos>, 3 <unk>, 4..259 <0x00>..<0xFF>, then: */
static const struct piece g_pieces[] = {
    {"\xe2\x96\x81", -1, T_NORMAL}, /* 260 ▁ */
    {"a", -2, T_NORMAL},            /* 261 */
    {"b", -3, T_NORMAL},            /* 262 */
    {"c", -4, T_NORMAL},            /* 263 */
    {"bc", -5, T_NORMAL},           /* 264: earlier than ab, so merges first */
    {"ab", -10, T_NORMAL},          /* 265 */
    {"xbc", -20, T_NORMAL},         /* 266 */
    {"\xe2\x96\x81" "a", -6, T_NORMAL}, /* 267 ▁a */
    {"  ", 0, T_USER},              /* 268 two spaces */
    {"\n", 0, T_USER},              /* 269 */
    {"<start>", 0, T_CTRL},         /* 270 */
    {"<end_of_turn>", 0, T_CTRL},   /* 271 */
    {"\xc3\xa9", -7, T_NORMAL},     /* 272 é */
    {"aa", -8, T_NORMAL},           /* 273 */
    {"<st", -9, T_NORMAL},          /* 274: looks like the start of <start> */
    {"art>", -9, T_NORMAL},         /* 275 */
    {"cc", -1, T_CTRL},             /* 276: a control piece merges could reach */
    {"\xe2\x96\x81" "b", 0, T_NORMAL}, /* 277 ▁b: later than the two-space piece */
};
#define N_PIECES (260 + (int)WK_ARRAY_LEN(g_pieces))

static struct gb build_vocab(const char *model, int n_scores_delta, uint32_t bos)
{
    struct gb b = {0};
    gb_header(&b, 3, 0, 7);
    gb_kv_str(&b, "general.architecture", "test");
    gb_kv_str(&b, "tokenizer.ggml.model", model);
    gb_str(&b, "tokenizer.ggml.tokens");
    gb_u32(&b, 9);
    gb_u32(&b, 8);
    gb_u64(&b, N_PIECES);
    const char *specials[4] = {"<pad>", "<eos>", "<bos>", "<unk>"};
    for (int i = 0; i < 4; i++) gb_str(&b, specials[i]);
    for (int i = 0; i < 256; i++) {
        char t[8];
        snprintf(t, sizeof t, "<0x%02X>", i);
        gb_str(&b, t);
    }
    for (size_t i = 0; i < WK_ARRAY_LEN(g_pieces); i++) gb_str(&b, g_pieces[i].text);
    gb_str(&b, "tokenizer.ggml.scores");
    gb_u32(&b, 9);
    gb_u32(&b, 6);
    gb_u64(&b, (uint64_t)(N_PIECES + n_scores_delta));
    for (int i = 0; i < N_PIECES + n_scores_delta; i++)
        gb_f32(&b, i >= 260 && i < N_PIECES ? g_pieces[i - 260].score : 0.0f);
    gb_str(&b, "tokenizer.ggml.token_type");
    gb_u32(&b, 9);
    gb_u32(&b, 5);
    gb_u64(&b, N_PIECES);
    for (int i = 0; i < N_PIECES; i++) {
        int32_t t = i < 3 ? T_CTRL : i == 3 ? T_UNK : i < 260 ? T_BYTE : g_pieces[i - 260].type;
        gb_bytes(&b, &t, 4);
    }
    gb_kv_u32(&b, "tokenizer.ggml.bos_token_id", bos);
    gb_kv_u32(&b, "tokenizer.ggml.eos_token_id", 1);
    return b;
}

static struct wk_tokenizer *g_tok;
static struct gb g_buf;
static struct wk_gguf *g_gguf;

static void setup(void)
{
    g_buf = build_vocab("llama", 0, 2);
    struct wk_error err;
    WK_ASSERT(wk_gguf_open_memory(g_buf.p, g_buf.n, "vocab", &g_gguf, &err) == WK_OK);
    if (wk_tokenizer_from_gguf(g_gguf, &g_tok, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
}

/* Encodes text and compares with the expected ids. */
static void expect(const char *text, bool special, const int32_t *want, int n_want)
{
    struct wk_tokens t = {0};
    CHECK_EQ_INT(wk_tokenizer_encode(g_tok, text, strlen(text), special, &t), WK_OK);
    bool same = t.n == n_want && (n_want == 0 || memcmp(t.ids, want, (size_t)n_want * 4) == 0);
    if (!same) {
        fprintf(stderr, "  \"%s\": got", text);
        for (int64_t i = 0; i < t.n; i++) fprintf(stderr, " %d", t.ids[i]);
        fprintf(stderr, ", want");
        for (int i = 0; i < n_want; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n");
    }
    CHECK(same);
    wk_tokens_deinit(&t);
}
#define EXPECT(text, special, ...)                                                                 \
    do {                                                                                           \
        static const int32_t w_[] = {__VA_ARGS__};                                                 \
        expect(text, special, w_, (int)WK_ARRAY_LEN(w_));                                          \
    } while (0)

static void test_merges_in_vocabulary_order(void)
{
    EXPECT("ab", false, 265);
    /* "abc": bc (264) is earlier than ab (265), and a + bc is not a piece
     * -> a, bc (merging ab first would have given ab, c) */
    EXPECT("abc", false, 261, 264);
    EXPECT("bab", false, 262, 265);
    /* "aa" merges; "aaa": two candidate pairs of equal score, leftmost wins */
    EXPECT("aaa", false, 273, 261);
    EXPECT(" a", false, 267);           /* ▁a */
    EXPECT("a c", false, 261, 260, 263); /* ▁c is not a piece */
    expect("", false, NULL, 0);
}

static void test_byte_fallback(void)
{
    EXPECT("z", false, 4 + 'z');
    EXPECT("\xc3\xa9", false, 272);                     /* é is a piece */
    EXPECT("\xc3\xbc", false, 4 + 0xc3, 4 + 0xbc);      /* ü is not: its bytes */
    EXPECT("\xff" "a", false, 4 + 0xff, 261);           /* invalid UTF-8 */
    EXPECT("\xe6\x97", false, 4 + 0xe6, 4 + 0x97);      /* truncated character */
}

/* A stray UTF-8 lead byte must not swallow the escaped space after it
 * (a heap overflow once): each byte is its own symbol, the space a ▁. */
static void test_stray_lead_bytes(void)
{
    EXPECT("x\xc0 \xc0 y", false, 4 + 'x', 4 + 0xc0, 260, 4 + 0xc0, 260, 4 + 'y');
    char text[600];
    for (int i = 0; i < 300; i++) text[2 * i] = (char)0xc0, text[2 * i + 1] = ' ';
    struct wk_tokens t = {0};
    CHECK_EQ_INT(wk_tokenizer_encode(g_tok, text, sizeof text, false, &t), WK_OK);
    CHECK_EQ_INT(t.n, 600);
    wk_tokens_deinit(&t);
}

static void test_user_defined_pieces(void)
{
    /* "\n" is split out first; the two-space piece merges from "▁▁" and,
     * being earlier than "▁b", before it */
    EXPECT("a\nb", true, 261, 269, 262);
    EXPECT("a  b", false, 261, 268, 262);
    EXPECT("a   b", false, 261, 268, 277);
    char buf[8];
    size_t n = wk_tokenizer_token_bytes(g_tok, 268, false, buf, sizeof buf);
    CHECK(n == 2 && memcmp(buf, "  ", 2) == 0);
}

static void test_control_pieces_only_in_scaffolding(void)
{
    EXPECT("<start>ab", true, 270, 265);
    /* as user text: characters (here bytes, as "<s" is not a piece) */
    EXPECT("<start>", false, 4 + '<', 4 + 's', 4 + 't', 261, 4 + 'r', 4 + 't', 4 + '>');
    /* "c" + "c" would merge into the control piece "cc": never from text */
    EXPECT("cc", false, 263, 263);
    EXPECT("cc", true, 276);
    EXPECT("<eos>", false, 4 + '<', 4 + 'e', 4 + 'o', 4 + 's', 4 + '>');
    /* spans: scaffolding recognises, content stays literal, and text runs
     * join across spans ("a" + "b" -> ab) */
    struct wk_text_span spans[] = {{"<start>a", 8, true}, {"b<start>", 8, false}};
    struct wk_tokens t = {0};
    CHECK_EQ_INT(wk_tokenizer_encode_spans(g_tok, spans, 2, &t), WK_OK);
    static const int32_t want[] = {270, 265, 4 + '<', 4 + 's', 4 + 't', 261, 4 + 'r', 4 + 't', 4 + '>'};
    CHECK(t.n == 9 && memcmp(t.ids, want, sizeof want) == 0);
    wk_tokens_deinit(&t);
}

static void test_decode(void)
{
    char buf[64];
    size_t n = wk_tokenizer_token_bytes(g_tok, 267, false, buf, sizeof buf);
    CHECK(n == 2 && memcmp(buf, " a", 2) == 0);
    n = wk_tokenizer_token_bytes(g_tok, 4 + 0xe6, false, buf, sizeof buf);
    CHECK(n == 1 && (uint8_t)buf[0] == 0xe6);
    CHECK_EQ_INT(wk_tokenizer_token_bytes(g_tok, 270, false, buf, sizeof buf), 0);
    n = wk_tokenizer_token_bytes(g_tok, 270, true, buf, sizeof buf);
    CHECK(n == 7 && memcmp(buf, "<start>", 7) == 0);
    CHECK_EQ_INT(wk_tokenizer_token_bytes(g_tok, 99999, true, buf, sizeof buf), 0);
    CHECK_EQ_INT(wk_tokenizer_token_bytes(g_tok, -1, true, buf, sizeof buf), 0);
    /* cut output reports the full length */
    CHECK_EQ_INT(wk_tokenizer_token_bytes(g_tok, 270, true, buf, 3), 7);
    CHECK(wk_tokenizer_is_eog(g_tok, 1));
    CHECK(wk_tokenizer_is_eog(g_tok, 271)); /* <end_of_turn> control */
    CHECK(!wk_tokenizer_is_eog(g_tok, 270));
    CHECK_EQ_INT(wk_tokenizer_bos(g_tok), 2);
    CHECK_EQ_INT(wk_tokenizer_find(g_tok, "xbc", 3), 266);
    CHECK_EQ_INT(wk_tokenizer_find(g_tok, "\xe2\x96\x81\xe2\x96\x81", 6), 268); /* escaped */
    CHECK_EQ_INT(wk_tokenizer_find(g_tok, "abcd", 4), -1);
}

/* Streaming output, concatenated, equals one-shot decoding, and nothing is
 * released mid-character. */
static void test_streaming_detok(void)
{
    struct wk_detok d;
    wk_detok_init(&d);
    size_t n;
    /* 日 = e6 97 a5 as three byte tokens */
    wk_detok_push(&d, g_tok, 4 + 0xe6, false, &n);
    CHECK_EQ_INT(n, 0);
    wk_detok_push(&d, g_tok, 4 + 0x97, false, &n);
    CHECK_EQ_INT(n, 0);
    const char *out = wk_detok_push(&d, g_tok, 4 + 0xa5, false, &n);
    CHECK(n == 3 && memcmp(out, "\xe6\x97\xa5", 3) == 0);
    /* an invalid byte is released at once; a dangling lead at the end is
     * given back by flush */
    out = wk_detok_push(&d, g_tok, 4 + 0xff, false, &n);
    CHECK(n == 1 && (uint8_t)out[0] == 0xff);
    wk_detok_push(&d, g_tok, 4 + 0xc3, false, &n);
    CHECK_EQ_INT(n, 0);
    out = wk_detok_flush(&d, &n);
    CHECK(n == 1 && (uint8_t)out[0] == 0xc3);
    wk_detok_deinit(&d);

    uint64_t seed = 77;
    for (int trial = 0; trial < 200; trial++) {
        char stream[4096], whole[4096];
        size_t ns = 0, nw = 0;
        wk_detok_init(&d);
        for (int k = 0; k < 30; k++) {
            int32_t id = (int32_t)(check_rand_u64(&seed) % N_PIECES);
            nw += wk_tokenizer_token_bytes(g_tok, id, true, whole + nw, sizeof whole - nw);
            out = wk_detok_push(&d, g_tok, id, true, &n);
            /* what is released never ends inside a valid multi-byte prefix */
            memcpy(stream + ns, out, n);
            ns += n;
        }
        out = wk_detok_flush(&d, &n);
        memcpy(stream + ns, out, n);
        ns += n;
        CHECK(ns == nw && memcmp(stream, whole, ns) == 0);
        wk_detok_deinit(&d);
    }
}

static void test_loader_errors(void)
{
    struct wk_error err;
    struct wk_tokenizer *tok;
    struct wk_gguf *g;
    struct {
        struct gb b;
        enum wk_status st;
        const char *msg;
    } cases[] = {
        {build_vocab("wordpiece", 0, 2), WK_E_UNSUPPORTED, "tokenizer model \"wordpiece\" is not supported"},
        {build_vocab("llama", -1, 2), WK_E_FORMAT, "tokenizer.ggml.scores has 277 entries"},
        {build_vocab("llama", 0, 5000), WK_E_FORMAT, "bos_token_id = 5000 is outside the vocabulary"},
    };
    for (size_t i = 0; i < WK_ARRAY_LEN(cases); i++) {
        CHECK_EQ_INT(wk_gguf_open_memory(cases[i].b.p, cases[i].b.n, "v.gguf", &g, &err), WK_OK);
        CHECK_EQ_INT(wk_tokenizer_from_gguf(g, &tok, &err), cases[i].st);
        CHECK_CONTAINS(err.msg, cases[i].msg);
        wk_gguf_close(g);
        free(cases[i].b.p);
    }
    /* no vocabulary at all */
    struct gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_kv_str(&b, "general.architecture", "x");
    CHECK_EQ_INT(wk_gguf_open_memory(b.p, b.n, "v.gguf", &g, &err), WK_OK);
    CHECK_EQ_INT(wk_tokenizer_from_gguf(g, &tok, &err), WK_E_NOT_FOUND);
    CHECK_CONTAINS(err.msg, "tokenizer.ggml.model");
    wk_gguf_close(g);
    free(b.p);
}

/* ------------------------------------------- byte-level BPE from GGUF */

/* GPT-2's byte-to-character table, written here from its definition. */
static int byte_char(int b, char *out)
{
    int cp = b;
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)) {
        int n = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174)) n++;
        cp = 256 + n;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
}

/* 256 byte characters (ids 0..255), then 00 000 33 333 77 777, "<|x|>"
 * (control), aB; merges build the digit groups and aB. */
static struct gb build_bpe_vocab(const char *pre, const char *bad_merge)
{
    static const char *extra[] = {"00", "000", "33", "333", "77", "777", "<|x|>", "aB"};
    static const char *merges[] = {"0 0", "00 0", "3 3", "33 3", "7 7", "77 7", "a B"};
    struct gb b = {0};
    gb_header(&b, 3, 0, 5);
    gb_kv_str(&b, "tokenizer.ggml.model", "gpt2");
    gb_kv_str(&b, "tokenizer.ggml.pre", pre);
    gb_str(&b, "tokenizer.ggml.tokens");
    gb_u32(&b, 9), gb_u32(&b, 8), gb_u64(&b, 256 + WK_ARRAY_LEN(extra));
    for (int i = 0; i < 256; i++) {
        char c[2];
        int n = byte_char(i, c);
        gb_u64(&b, (uint64_t)n), gb_bytes(&b, c, (size_t)n);
    }
    for (size_t i = 0; i < WK_ARRAY_LEN(extra); i++) gb_str(&b, extra[i]);
    gb_str(&b, "tokenizer.ggml.token_type");
    gb_u32(&b, 9), gb_u32(&b, 5), gb_u64(&b, 256 + WK_ARRAY_LEN(extra));
    for (size_t i = 0; i < 256 + WK_ARRAY_LEN(extra); i++) {
        int32_t t = i == 262 ? T_CTRL : T_NORMAL;
        gb_bytes(&b, &t, 4);
    }
    gb_str(&b, "tokenizer.ggml.merges");
    gb_u32(&b, 9), gb_u32(&b, 8), gb_u64(&b, WK_ARRAY_LEN(merges) + (bad_merge ? 1 : 0));
    for (size_t i = 0; i < WK_ARRAY_LEN(merges); i++) gb_str(&b, merges[i]);
    if (bad_merge) gb_str(&b, bad_merge);
    return b;
}

static struct wk_tokenizer *bpe_tok(const char *pre, const char *bad_merge, struct wk_error *err,
                                    enum wk_status *st)
{
    struct gb b = build_bpe_vocab(pre, bad_merge);
    struct wk_gguf *g;
    struct wk_tokenizer *tok = NULL;
    CHECK_EQ_INT(wk_gguf_open_memory(b.p, b.n, "bpe.gguf", &g, err), WK_OK);
    *st = wk_tokenizer_from_gguf(g, &tok, err);
    wk_gguf_close(g);
    free(b.p);
    return tok;
}

static void expect_bpe(struct wk_tokenizer *tok, const char *text, const int32_t *want, int n)
{
    struct wk_tokens t = {0};
    wk_tokenizer_encode(tok, text, strlen(text), false, &t);
    bool same = t.n == n && memcmp(t.ids, want, (size_t)n * 4) == 0;
    if (!same) {
        fprintf(stderr, "  \"%s\": got", text);
        for (int64_t i = 0; i < t.n; i++) fprintf(stderr, " %d", t.ids[i]);
        fprintf(stderr, "\n");
    }
    CHECK(same);
    wk_tokens_deinit(&t);
}
#define EXPECT_BPE(tok, text, ...)                                                                 \
    do {                                                                                           \
        static const int32_t w_[] = {__VA_ARGS__};                                                 \
        expect_bpe(tok, text, w_, (int)WK_ARRAY_LEN(w_));                                          \
    } while (0)

/* Llama 3 splits digits in groups of three from the left; starcoder-style
 * ("smollm") one by one; GPT-2 keeps the run and lets merges decide. */
static void test_bpe_digit_splits(void)
{
    struct wk_error err;
    enum wk_status st;
    enum { Z = 256, ZZZ = 257, T3 = 258, T333 = 259, S7 = 260, S777 = 261 };
    struct wk_tokenizer *l3 = bpe_tok("llama-bpe", NULL, &err, &st);
    CHECK_EQ_INT(st, WK_OK);
    /* byte characters have the byte's value as id here */
    EXPECT_BPE(l3, "3333+777", T333, '3', '+', S777);
    EXPECT_BPE(l3, "0000000", ZZZ, ZZZ, '0');
    EXPECT_BPE(l3, "00000", ZZZ, Z);
    /* control-token text in user content stays text (byte characters) */
    struct wk_tokens t = {0};
    wk_tokenizer_encode(l3, "<|x|>", 5, false, &t);
    CHECK(t.n == 5);
    t.n = 0;
    wk_tokenizer_encode(l3, "<|x|>", 5, true, &t);
    CHECK(t.n == 1 && t.ids[0] == 262);
    wk_tokens_deinit(&t);
    wk_tokenizer_destroy(l3);
    struct wk_tokenizer *sc = bpe_tok("smollm", NULL, &err, &st);
    CHECK_EQ_INT(st, WK_OK);
    EXPECT_BPE(sc, "3333", '3', '3', '3', '3');
    wk_tokenizer_destroy(sc);
    struct wk_tokenizer *g2 = bpe_tok("gpt2", NULL, &err, &st);
    CHECK_EQ_INT(st, WK_OK);
    /* one fragment; merges by rank: 3+3 (rank 2) everywhere before 33+3 */
    EXPECT_BPE(g2, "3333", T3, T3);
    /* decoding maps characters back to bytes: a space is 'Ġ' (U+0120) */
    t.n = 0;
    wk_tokenizer_encode(g2, "a b\n", 4, false, &t);
    char buf[16];
    size_t n = 0;
    for (int64_t i = 0; i < t.n; i++) n += wk_tokenizer_token_bytes(g2, t.ids[i], false, buf + n, sizeof buf - n);
    CHECK(n == 4 && memcmp(buf, "a b\n", 4) == 0);
    wk_tokens_deinit(&t);
    EXPECT_BPE(g2, "aB", 263);
    wk_tokenizer_destroy(g2);
    /* o200k (gpt-oss): digits as Llama 3's; a lower-case run ends a word
     * before an upper-case letter, so "aB" is two fragments (Llama 3: one) */
    struct wk_tokenizer *o2 = bpe_tok("gpt-4o", NULL, &err, &st);
    CHECK_EQ_INT(st, WK_OK);
    EXPECT_BPE(o2, "3333+777", T333, '3', '+', S777);
    EXPECT_BPE(o2, "aB", 'a', 'B');
    EXPECT_BPE(o2, "Ba", 'B', 'a');
    wk_tokenizer_destroy(o2);
    l3 = bpe_tok("llama-bpe", NULL, &err, &st);
    EXPECT_BPE(l3, "aB", 263);
    wk_tokenizer_destroy(l3);
}

static void test_bpe_loader_errors(void)
{
    struct wk_error err;
    enum wk_status st;
    CHECK(bpe_tok("klingon", NULL, &err, &st) == NULL);
    CHECK_EQ_INT(st, WK_E_UNSUPPORTED);
    CHECK_CONTAINS(err.msg, "unknown pre-tokenizer \"klingon\"");
    CHECK(bpe_tok("gpt2", "q z", &err, &st) == NULL);
    CHECK_EQ_INT(st, WK_E_FORMAT);
    CHECK_CONTAINS(err.msg, "merges entry 7 names a piece that is not in the vocabulary");
    CHECK(bpe_tok("gpt2", "33", &err, &st) == NULL);
    CHECK_CONTAINS(err.msg, "merges entry 7 is not two pieces separated by one space");
}

/* A character-level tokenizer.json (no pre-tokenizer, no merges: one id
 * per character, <unk> for the others) with the given normalizer. */
static struct wk_tokenizer *norm_tok(const char *normalizer)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"merges\": [], \"vocab\":"
             " {\"<unk>\": 0, \"e\": 1, \"\xcc\x81\": 2, \"\xc3\xa9\": 3, \"f\": 4, \"i\": 5,"
             " \"\xef\xac\x81\": 6, \">\": 7, \"\xcc\xb8\": 8, \"\xe2\x89\xaf\": 9}},"
             " \"added_tokens\": [{\"id\": 10, \"content\": \"<x>\", \"special\": false,"
             " \"normalized\": false}], \"normalizer\": %s}", normalizer);
    struct wk_tokenizer *tok = NULL;
    struct wk_error err;
    if (wk_tokenizer_from_hf_json(json, strlen(json), "norm.json", &tok, &err))
        fprintf(stderr, "  %s: %s\n", normalizer, err.msg);
    CHECK(tok != NULL);
    return tok;
}

/* The Unicode normalizers, worked out from UAX #15: é is e + U+0301
 * canonically, ﬁ (U+FB01) is f + i only by compatibility, ≯ (U+226F) is
 * > + U+0338. Each run between added tokens is normalized on its own
 * (tokenizers, for added tokens with "normalized": false), and invalid
 * bytes stay bytes with the valid text around them still normalized. */
static void test_unicode_normalizers(void)
{
    enum { UNK, E, ACUTE, E_ACUTE, F, I, FI, GT, SLASH, NGT, X };
    struct wk_tokenizer *nfc = norm_tok("{\"type\": \"NFC\"}");
    struct wk_tokenizer *nfd = norm_tok("{\"type\": \"NFD\"}");
    struct wk_tokenizer *nfkc = norm_tok("{\"type\": \"NFKC\"}");
    struct wk_tokenizer *nfkd = norm_tok("{\"type\": \"NFKD\"}");
    struct wk_tokenizer *seq = norm_tok("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFKD\"},"
                                        " {\"type\": \"NFC\"}]}");
    struct wk_tokenizer *none = norm_tok("null");
    if (!nfc || !nfd || !nfkc || !nfkd || !seq || !none) return;
    EXPECT_BPE(nfc, "e\xcc\x81", E_ACUTE);
    EXPECT_BPE(nfc, "\xc3\xa9", E_ACUTE);
    EXPECT_BPE(nfc, "\xef\xac\x81", FI);
    EXPECT_BPE(nfd, "\xc3\xa9", E, ACUTE);
    EXPECT_BPE(nfkc, "\xef\xac\x81" "e\xcc\x81", F, I, E_ACUTE);
    EXPECT_BPE(nfkd, "\xef\xac\x81\xc3\xa9", F, I, E, ACUTE);
    EXPECT_BPE(seq, "\xef\xac\x81" "e\xcc\x81", F, I, E_ACUTE); /* NFC(NFKD(x)) = NFKC(x) */
    EXPECT_BPE(none, "e\xcc\x81", E, ACUTE);
    /* the added token is split out first: its '>' keeps U+0338 away */
    EXPECT_BPE(nfc, "<x>\xcc\xb8>\xcc\xb8", X, SLASH, NGT);
    /* a stray byte is its own character (here <unk>), and blocks nothing */
    EXPECT_BPE(nfc, "e\xcc\x81\xff" "e\xcc\x81\xcc", E_ACUTE, UNK, E_ACUTE, UNK);
    EXPECT_BPE(nfd, "\xc3\xa9\x80\xc3\xa9", E, ACUTE, UNK, E, ACUTE);
    wk_tokenizer_destroy(nfc);
    wk_tokenizer_destroy(nfd);
    wk_tokenizer_destroy(nfkc);
    wk_tokenizer_destroy(nfkd);
    wk_tokenizer_destroy(seq);
    wk_tokenizer_destroy(none);
}

/* tokenizer.json that is malformed or uses what wick does not implement
 * is refused with an error naming the field. */
static void test_tokenizer_json_errors(void)
{
    static const struct {
        const char *json;
        enum wk_status st;
        const char *msg;
    } cases[] = {
        {"{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", WK_E_UNSUPPORTED,
         "model type \"Unigram\" is not supported"},
        {"{\"model\": {\"type\": \"WordPiece\"}}", WK_E_FORMAT, "model.vocab is not an object"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
         " \"merges\": [\"a b c\"]}}", WK_E_FORMAT, "model.merges[0] is not two pieces"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1},"
         " \"merges\": [[\"a\", \"b\"]]}}", WK_E_FORMAT,
         "model.merges[0] names a piece that is not in the vocabulary"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": 7}}", WK_E_FORMAT,
         "model.merges is not an array"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -4}, \"merges\": []}}", WK_E_FORMAT,
         "the id of \"a\" is not an integer"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
         " \"pre_tokenizer\": {\"type\": \"Whitespace\"}}", WK_E_UNSUPPORTED,
         "pre_tokenizer type \"Whitespace\" is not supported"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
         " \"normalizer\": {\"type\": \"BertNormalizer\"}}", WK_E_UNSUPPORTED,
         "normalizer BertNormalizer is supported with a WordPiece model only"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
         " \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Replace\","
         " \"pattern\": {\"String\": \" \"}, \"content\": \"\xe2\x96\x81\"}, {\"type\": \"NFKC\"}]}}",
         WK_E_UNSUPPORTED, "normalizer NFKC after Replace"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
         " \"added_tokens\": [{\"id\": 1, \"content\": \"<x>\", \"special\": false, \"normalized\": true}],"
         " \"normalizer\": {\"type\": \"NFC\"}}", WK_E_UNSUPPORTED,
         "added token \"<x>\" has \"normalized\": true"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
         " \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"},"
         " \"behavior\": \"Isolated\"}}", WK_E_FORMAT, "Split regex does not compile"},
        {"{\"model\": [1, 2", WK_E_FORMAT, "invalid JSON at line 1"},
        {"[]", WK_E_FORMAT, "not a JSON object"},
    };
    for (size_t i = 0; i < WK_ARRAY_LEN(cases); i++) {
        struct wk_tokenizer *tok = NULL;
        struct wk_error err;
        wk_error_clear(&err);
        enum wk_status st = wk_tokenizer_from_hf_json(cases[i].json, strlen(cases[i].json),
                                                      "t.json", &tok, &err);
        if (st != cases[i].st || !strstr(err.msg, cases[i].msg))
            fprintf(stderr, "  case %zu: %d \"%s\"\n", i, st, err.msg);
        CHECK_EQ_INT(st, cases[i].st);
        CHECK_CONTAINS(err.msg, cases[i].msg);
        CHECK_CONTAINS(err.msg, "t.json");
        CHECK(tok == NULL);
    }
    struct wk_tokenizer *tok;
    struct wk_error err;
    CHECK_EQ_INT(wk_tokenizer_from_hf("/nonexistent-dir", &tok, &err), WK_E_NOT_FOUND);
    CHECK_CONTAINS(err.msg, "/nonexistent-dir/tokenizer.json: no such file");
}

int main(int argc, char **argv)
{
    setup();
    static const struct check_test tests[] = {
        TEST(test_merges_in_vocabulary_order), TEST(test_byte_fallback), TEST(test_stray_lead_bytes), TEST(test_user_defined_pieces),
        TEST(test_control_pieces_only_in_scaffolding), TEST(test_decode), TEST(test_streaming_detok),
        TEST(test_loader_errors), TEST(test_bpe_digit_splits), TEST(test_bpe_loader_errors),
        TEST(test_unicode_normalizers), TEST(test_tokenizer_json_errors)};
    int rc = check_main(argc, argv, tests, (int)WK_ARRAY_LEN(tests));
    wk_tokenizer_destroy(g_tok);
    wk_gguf_close(g_gguf);
    free(g_buf.p);
    return rc;
}
