/*
 * test-wordpiece.c - the WordPiece tokenizer (src/tokenizer/wordpiece.c)
 * on a small hand-made BERT tokenizer.json: normalization (lowercase,
 * accents, control characters, CJK), punctuation splits, "##" pieces, the
 * unknown word, max_input_chars_per_word, hostile bytes, loader errors.
 * Parity with `tokenizers` on real text is tests/golden's (minilm).
 */
#include "check.h"
#include "gguf_builder.h"

#include "../../src/tokenizer/wk_tokenizer.h"

#define VOCAB                                                                                      \
    "{\"[PAD]\":0,\"[UNK]\":1,\"[CLS]\":2,\"[SEP]\":3,\"un\":4,\"##aff\":5,\"##able\":6,"          \
    "\"hello\":7,\",\":8,\"world\":9,\"!\":10,\"cafe\":11,\"\xe4\xb8\xad\":12,\"a\":13,\"##a\":14}"
#define ADDED                                                                                      \
    "[{\"id\":0,\"content\":\"[PAD]\",\"special\":true},{\"id\":1,\"content\":\"[UNK]\",\"special\":true}," \
    "{\"id\":2,\"content\":\"[CLS]\",\"special\":true},{\"id\":3,\"content\":\"[SEP]\",\"special\":true}]"
#define POST                                                                                       \
    "{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",3],\"cls\":[\"[CLS]\",2]}"

static const char *k_json =
    "{\"added_tokens\":" ADDED ",\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,"
    "\"handle_chinese_chars\":true,\"strip_accents\":null,\"lowercase\":true},"
    "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},\"post_processor\":" POST ","
    "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\","
    "\"max_input_chars_per_word\":100,\"vocab\":" VOCAB "}}";

static struct wk_tokenizer *load(void)
{
    struct wk_tokenizer *tok = NULL;
    struct wk_error err;
    enum wk_status st = wk_tokenizer_from_hf_json(k_json, strlen(k_json), "t.json", &tok, &err);
    if (st) fprintf(stderr, "%s\n", err.msg);
    CHECK_EQ_INT(st, WK_OK);
    return tok;
}

static void expect(const struct wk_tokenizer *tok, const char *text, size_t len, bool special,
                   const int32_t *ids, int n)
{
    struct wk_tokens t = {0};
    CHECK_EQ_INT(wk_tokenizer_encode(tok, text, len, special, &t), WK_OK);
    bool same = t.n == n;
    for (int i = 0; same && i < n; i++) same = t.ids[i] == ids[i];
    if (!same) {
        fprintf(stderr, "  \"%.40s\": got", text);
        for (int64_t i = 0; i < t.n && i < 20; i++) fprintf(stderr, " %d", t.ids[i]);
        fprintf(stderr, "\n");
    }
    CHECK(same);
    wk_tokens_deinit(&t);
}
#define EXPECT(tok, text, ...)                                                                      \
    do {                                                                                           \
        static const int32_t ids_[] = {__VA_ARGS__};                                               \
        expect(tok, text, sizeof text - 1, true, ids_, (int)WK_ARRAY_LEN(ids_));                   \
    } while (0)

static void test_pieces(void)
{
    struct wk_tokenizer *tok = load();
    if (!tok) return;
    CHECK_EQ_INT(wk_tokenizer_model_kind(tok), WK_TOKENIZER_WPM);
    CHECK(wk_tokenizer_add_bos(tok));
    CHECK_EQ_INT(wk_tokenizer_bos(tok), 2);
    CHECK_EQ_INT(wk_tokenizer_eos_to_add(tok), 3);
    EXPECT(tok, "Unaffable", 4, 5, 6);
    EXPECT(tok, "Hello, WORLD!", 7, 8, 9, 10);
    EXPECT(tok, "  hello\t\n\r world  ", 7, 9);
    EXPECT(tok, "CAF\xc3\x89 cafe\xcc\x81", 11, 11);          /* accents stripped, composed or not */
    EXPECT(tok, "\xe4\xb8\xad\xe4\xb8\xad", 12, 12);           /* each CJK ideograph a word */
    EXPECT(tok, "\xe4\xb8\xad\xe6\x96\x87", 12, 1);            /* 文 is not in the vocabulary */
    EXPECT(tok, "unx", 1);                                     /* no piece for "x": the word is unknown */
    EXPECT(tok, "hel\x01lo\x7f w\xe2\x80\x8borld", 7, 9);      /* control and format characters removed */
    EXPECT(tok, "\xff\xfehello\xc3", 7);                       /* invalid UTF-8 removed */
    EXPECT(tok, "hello[SEP]world", 7, 3, 9);                   /* special-token text, with parse_special */
    static const int32_t lit[] = {7, 1, 1, 1, 9};              /* "[", "sep", "]" as text */
    expect(tok, "hello[SEP]world", 15, false, lit, 5);
    char word[102];
    memset(word, 'a', sizeof word);
    int32_t ids[100];
    ids[0] = 13;
    for (int i = 1; i < 100; i++) ids[i] = 14;
    expect(tok, word, 100, true, ids, 100);                    /* 100 characters: pieces */
    ids[0] = 1;
    expect(tok, word, 101, true, ids, 1);                      /* 101: unknown outright */
    char piece[64];
    CHECK_EQ_INT(wk_tokenizer_token_bytes(tok, 5, false, piece, sizeof piece), 3);
    CHECK(memcmp(piece, "aff", 3) == 0);
    CHECK_EQ_INT(wk_tokenizer_token_bytes(tok, 7, false, piece, sizeof piece), 6);
    CHECK(memcmp(piece, " hello", 6) == 0);
    /* a size query with no buffer (NULL, 0): the same counts, nothing
     * written (memcpy from a NULL destination once: UBSan in the asan build) */
    CHECK_EQ_INT(wk_tokenizer_token_bytes(tok, 5, false, NULL, 0), 3);
    CHECK_EQ_INT(wk_tokenizer_token_bytes(tok, 7, false, NULL, 0), 6);
    CHECK_EQ_INT(wk_tokenizer_token_bytes(tok, 7, false, piece, 1), 6);
    CHECK(piece[0] == ' ');
    wk_tokenizer_destroy(tok);
}

/* Hostile input: long runs of everything, every byte value. */
static void test_hostile(void)
{
    struct wk_tokenizer *tok = load();
    if (!tok) return;
    size_t n = 1 << 20;
    char *s = malloc(n);
    CHECK(s != NULL);
    if (!s) return;
    for (size_t i = 0; i < n; i++) s[i] = (char)(i * 2654435761u >> 13);
    struct wk_tokens t = {0};
    CHECK_EQ_INT(wk_tokenizer_encode(tok, s, n, true, &t), WK_OK);
    CHECK(t.n > 0);
    memset(s, 'a', n); /* one word of 2^20 characters */
    t.n = 0;
    CHECK_EQ_INT(wk_tokenizer_encode(tok, s, n, false, &t), WK_OK);
    CHECK_EQ_INT(t.n, 1);
    for (size_t i = 0; i + 3 <= n; i += 3) memcpy(s + i, "\xe4\xb8\xad", 3);
    t.n = 0;
    CHECK_EQ_INT(wk_tokenizer_encode(tok, s, n / 3 * 3, false, &t), WK_OK);
    CHECK_EQ_INT(t.n, (int64_t)(n / 3));
    wk_tokens_deinit(&t);
    free(s);
    wk_tokenizer_destroy(tok);
}

static void test_loader_errors(void)
{
    static const struct {
        const char *json, *msg;
    } cases[] = {
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"vocab\":" VOCAB "},"
         "\"normalizer\":{\"type\":\"NFC\"},\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"}}",
         "BertNormalizer only"},
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"vocab\":" VOCAB "},"
         "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"}}",
         "needs the BertNormalizer"},
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"vocab\":" VOCAB "},"
         "\"normalizer\":{\"type\":\"BertNormalizer\"}}",
         "needs the BertPreTokenizer"},
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"<nope>\",\"vocab\":" VOCAB "},"
         "\"normalizer\":{\"type\":\"BertNormalizer\"},\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"}}",
         "unk_token"},
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"vocab\":" VOCAB "},"
         "\"normalizer\":{\"type\":\"BertNormalizer\"},\"pre_tokenizer\":{\"type\":\"Whitespace\"}}",
         "BertPreTokenizer"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},"
         "\"normalizer\":{\"type\":\"BertNormalizer\"}}",
         "WordPiece model only"},
    };
    for (size_t i = 0; i < WK_ARRAY_LEN(cases); i++) {
        struct wk_tokenizer *tok = NULL;
        struct wk_error err;
        wk_error_clear(&err);
        enum wk_status st = wk_tokenizer_from_hf_json(cases[i].json, strlen(cases[i].json), "t.json", &tok, &err);
        if (st == WK_OK || !strstr(err.msg, cases[i].msg)) fprintf(stderr, "  case %zu: %d \"%s\"\n", i, st, err.msg);
        CHECK(st != WK_OK);
        CHECK_CONTAINS(err.msg, cases[i].msg);
        CHECK(tok == NULL);
        wk_tokenizer_destroy(tok);
    }
}

/* llama.cpp's "bert" GGUF vocabulary: word starts carry '▁', continuations
 * none, [CLS] / [SEP] as bos / eos; it must tokenize as the tokenizer.json. */
static void test_gguf_vocab(void)
{
    static const char *pieces[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "\xe2\x96\x81un", "aff", "able",
                                   "\xe2\x96\x81hello", "\xe2\x96\x81,", "\xe2\x96\x81world", "\xe2\x96\x81!"};
    const int32_t types[] = {3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1};
    struct gb b = {0};
    gb_header(&b, 3, 0, 7);
    gb_kv_str(&b, "tokenizer.ggml.model", "bert");
    gb_str(&b, "tokenizer.ggml.tokens");
    gb_u32(&b, 9), gb_u32(&b, 8), gb_u64(&b, WK_ARRAY_LEN(pieces));
    for (size_t i = 0; i < WK_ARRAY_LEN(pieces); i++) gb_str(&b, pieces[i]);
    gb_str(&b, "tokenizer.ggml.token_type");
    gb_u32(&b, 9), gb_u32(&b, 5), gb_u64(&b, WK_ARRAY_LEN(types));
    gb_bytes(&b, types, sizeof types);
    gb_kv_u32(&b, "tokenizer.ggml.bos_token_id", 2);
    gb_kv_u32(&b, "tokenizer.ggml.eos_token_id", 3);
    gb_kv_u32(&b, "tokenizer.ggml.unknown_token_id", 1);
    gb_kv_bool(&b, "tokenizer.ggml.add_eos_token", 1);
    struct wk_gguf *g;
    struct wk_tokenizer *tok = NULL;
    struct wk_error err;
    CHECK_EQ_INT(wk_gguf_open_memory(b.p, b.n, "bert.gguf", &g, &err), WK_OK);
    enum wk_status st = wk_tokenizer_from_gguf(g, &tok, &err);
    if (st) fprintf(stderr, "%s\n", err.msg);
    CHECK_EQ_INT(st, WK_OK);
    wk_gguf_close(g);
    free(b.p);
    if (!tok) return;
    CHECK_EQ_INT(wk_tokenizer_model_kind(tok), WK_TOKENIZER_WPM);
    CHECK(wk_tokenizer_add_bos(tok));
    CHECK_EQ_INT(wk_tokenizer_bos(tok), 2);
    CHECK_EQ_INT(wk_tokenizer_eos_to_add(tok), 3);
    EXPECT(tok, "Unaffable, HELLO world!", 4, 5, 6, 8, 7, 9, 10);
    EXPECT(tok, "unx [SEP]", 1, 3);
    wk_tokenizer_destroy(tok);
}

CHECK_MAIN(TEST(test_pieces), TEST(test_hostile), TEST(test_loader_errors), TEST(test_gguf_vocab))
