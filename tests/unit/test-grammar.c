/*
 * test-grammar.c - the grammar engine (src/runtime/wk_grammar.h): GBNF
 * parsing and its errors (line:column, left recursion), matching byte
 * strings (cases worked out by hand from the grammars), token masks on a
 * small vocabulary (the allowed sets worked out by hand), masks against
 * stepping each token's bytes directly (two separate code paths), end of
 * generation only when complete, rollback, JSON Schema compilation
 * (integer ranges against plain arithmetic, objects, strings, refusals
 * naming the keyword and path), allocation failures without leaks, and
 * hostile inputs that must stop with an error or stay bounded.
 */
#include "check.h"
#include "grammar_util.h"

#include "../../src/runtime/wk_grammar.h"

#include <jansson.h>
#include <pthread.h>

/* ------------------------------------------------------------- helpers */

static struct wk_grammar *gbnf(const char *src)
{
    struct wk_grammar *g = NULL;
    struct wk_error err = {0};
    enum wk_status st = wk_grammar_from_gbnf(src, strlen(src), NULL, &g, &err);
    if (st != WK_OK) fprintf(stderr, "grammar failed: %s\n", err.msg);
    return g;
}

static struct wk_grammar *schema(const char *text)
{
    json_error_t je;
    json_t *s = json_loads(text, JSON_DECODE_ANY, &je);
    if (!s) {
        fprintf(stderr, "bad test JSON: %s\n", je.text);
        return NULL;
    }
    struct wk_grammar *g = NULL;
    struct wk_error err = {0};
    if (wk_grammar_from_json_schema(s, &g, &err) != WK_OK) fprintf(stderr, "schema failed: %s\n", err.msg);
    json_decref(s);
    return g;
}

struct mcase {
    const char *text;
    bool ok;
};

static void check_cases(const char *what, struct wk_grammar *g, const struct mcase *c, int n)
{
    CHECK(g != NULL);
    if (!g) return;
    struct wk_grammar_vocab *v = tiny_vocab();
    struct wk_grammar_matcher *m = NULL;
    CHECK_EQ_INT(wk_grammar_matcher_create(g, v, &m, NULL), WK_OK);
    for (int i = 0; m && i < n; i++) {
        bool got = matches(m, c[i].text);
        if (got != c[i].ok) fprintf(stderr, "  %s: \"%s\" should %smatch\n", what, c[i].text, c[i].ok ? "" : "not ");
        CHECK_EQ_INT(got, c[i].ok);
    }
    wk_grammar_matcher_free(m);
    wk_grammar_vocab_free(v);
}

/* ----------------------------------------------------------- GBNF errors */

static void test_gbnf_errors(void)
{
    static const struct {
        const char *src, *want;
        enum wk_status st;
    } cases[] = {
        {"root ::= \"a", "line 1 column 10: unterminated string literal", WK_E_INVALID},
        {"root ::= [a-", "line 1 column 10: unterminated character class", WK_E_INVALID},
        {"root ::= foo", "line 1 column 10: undefined rule 'foo'", WK_E_INVALID},
        {"root ::= \"a\"\nroot ::= \"b\"", "line 2 column 1: rule 'root' defined twice", WK_E_INVALID},
        {"root ::= ( \"a\"\n", "line 1 column 10: unclosed '('", WK_E_INVALID},
        {"root ::= \"a\"{3,2}", "line 1 column 13: repetition {3,2}: max below min", WK_E_INVALID},
        {"root ::= \"\\q\"", "line 1 column 11: unknown escape \\q", WK_E_INVALID},
        {"root ::= [z-a]", "class range out of order", WK_E_INVALID},
        {"# a comment\nroot ::= \"x\" )", "line 2 column 14: unexpected ')'", WK_E_INVALID},
        {"root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"", "line 2 column 1: left recursion in rule 'expr'", WK_E_INVALID},
        {"root ::= a\na ::= b \"x\"\nb ::= c? a | \"z\"\nc ::= \"y\"", "left recursion in rule", WK_E_INVALID},
        {"root ::= \"a\" root", "no finite text matches rule 'root'", WK_E_INVALID},
        {"foo ::= \"a\"", "no rule named 'root'", WK_E_INVALID},
        {"root ::= \"a\"{100001}", "repetition count over 100000", WK_E_INVALID},
        {"root ::= \"a\" b ::= \"c\"", "rule definition inside another rule's body", WK_E_INVALID},
        {"root ::= \"\\xZZ\"", "\\x needs 2 hex digits", WK_E_INVALID},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wk_grammar *g = NULL;
        struct wk_error err = {0};
        enum wk_status st = wk_grammar_from_gbnf(cases[i].src, strlen(cases[i].src), NULL, &g, &err);
        CHECK_EQ_INT(st, cases[i].st);
        CHECK(g == NULL);
        CHECK_CONTAINS(err.msg, cases[i].want);
    }
    /* an empty alternative, a continuation line starting with |, and a
     * body spread over lines inside parentheses are all fine */
    struct wk_grammar *g = gbnf("root ::= \"a\" ws x\nws ::= | \" \"\nx ::= (\n  \"b\"\n  | \"c\" )\n  | \"d\"\n");
    CHECK(g != NULL);
    wk_grammar_free(g);
}

/* ------------------------------------------------------------- matching */

static void test_gbnf_match(void)
{
    static const struct mcase rep[] = {
        {"ab", true}, {"abab", true}, {"ababc", true}, {"c", false}, {"", false}, {"aba", false}, {"abcc", false},
    };
    struct wk_grammar *g = gbnf("root ::= \"ab\"+ \"c\"?");
    check_cases("ab+c?", g, rep, 7);
    wk_grammar_free(g);

    static const struct mcase cls[] = {
        {"a1!", true}, {"ab9", true}, {"abc9", true}, {"ab", false}, {"abcd", false}, {"a", false}, {"ab9!", true},
    };
    g = gbnf("root ::= [a-c0-9]{2,3} [^a-z]");
    check_cases("class", g, cls, 7);
    wk_grammar_free(g);

    static const struct mcase uni[] = {
        {"\xce\xb1\xce\xb2\xc3\xa9", true}, /* αβé */
        {"\xce\xb4\xc3\xa9", false},        /* δé: δ is past γ */
        {"\xc3\xa9", false},
        {"\xce\xb1" "e", false},
    };
    g = gbnf("root ::= [\\u03b1-\\u03b3]+ \"\\u00e9\"");
    check_cases("unicode", g, uni, 4);
    wk_grammar_free(g);

    static const struct mcase any[] = {
        {"\xe6\x97\xa5x", true}, {"ax", true}, {"\xff" "x", false}, {"\xed\xa0\x80x", false} /* a surrogate */,
        {"\xc0\x80x", false} /* overlong */, {"x", false},
    };
    g = gbnf("root ::= . \"x\"");
    check_cases("dot", g, any, 6);
    wk_grammar_free(g);

    static const struct mcase esc[] = {{"A\xc3\xa9\t]", true}, {"A\xc3\xa9\t-", true}, {"A\xc3\xa9\t\\", false}};
    g = gbnf("root ::= \"\\x41\\u00e9\\t\" [\\]\\-]");
    check_cases("escapes", g, esc, 3);
    wk_grammar_free(g);

    static const struct mcase cnt[] = {
        {"aac", true}, {"aabbc", true}, {"aabbccc", true}, {"aabbbc", false}, {"ac", false}, {"aaac", false},
    };
    g = gbnf("root ::= \"a\"{2} \"b\"{0,2} \"c\"{1,}");
    check_cases("counts", g, cnt, 6);
    wk_grammar_free(g);

    static const struct mcase paren[] = {{"((()))", true}, {"", true}, {"()()", false}, {"(()", false}};
    g = gbnf("root ::= \"(\" root \")\" | \"\"");
    check_cases("parens", g, paren, 4);
    wk_grammar_free(g);

    /* ambiguous: x x with x one or two a's */
    static const struct mcase amb[] = {{"aa", true}, {"aaa", true}, {"aaaa", true}, {"a", false}, {"aaaaa", false}};
    g = gbnf("root ::= x x\nx ::= \"a\" | \"aa\"");
    check_cases("ambiguous", g, amb, 5);
    wk_grammar_free(g);

    /* llama.cpp's arithmetic example shape: recursion through groups */
    static const struct mcase expr[] = {{"1+2*(3-4)", true}, {"(1)", true}, {"1+", false}, {"()", false}};
    g = gbnf("root ::= expr\nexpr ::= term ([-+*/] term)*\nterm ::= [0-9]+ | \"(\" expr \")\"\n");
    check_cases("expr", g, expr, 4);
    wk_grammar_free(g);
}

/* ---------------------------------------------------------------- masks */

#define V_EOG 11
static const char *const V1[] = {"a", "b", "ab", "ba", "abc", "{", "}", "\"", "\"}", "x\"", ",", "", "", "{\"a"};

static struct wk_grammar_vocab *vocab1(void)
{
    size_t lens[14];
    for (int i = 0; i < 14; i++) lens[i] = strlen(V1[i]);
    int32_t eog = V_EOG;
    struct wk_grammar_vocab *v = NULL;
    CHECK_EQ_INT(wk_grammar_vocab_create_from_bytes(V1, lens, 14, &eog, 1, &v, NULL), WK_OK);
    return v;
}

/* The allowed ids as a sorted list in out; returns how many. */
static int allowed(struct wk_grammar_matcher *m, int n_vocab, int *out)
{
    uint32_t bits[8] = {0};
    CHECK_EQ_INT(wk_grammar_matcher_mask(m, bits), WK_OK);
    int k = 0;
    for (int i = 0; i < n_vocab; i++)
        if (bits[i >> 5] >> (i & 31) & 1) out[k++] = i;
    return k;
}

static void check_allowed(struct wk_grammar_matcher *m, int n_vocab, const int *want, int n_want, const char *at)
{
    int got[64];
    int n = allowed(m, n_vocab, got);
    bool same = n == n_want;
    for (int i = 0; same && i < n; i++) same = got[i] == want[i];
    if (!same) {
        fprintf(stderr, "  mask at %s: got", at);
        for (int i = 0; i < n; i++) fprintf(stderr, " %d", got[i]);
        fprintf(stderr, ", want");
        for (int i = 0; i < n_want; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n");
    }
    CHECK(same);
}

static void test_masks(void)
{
    struct wk_grammar_vocab *v = vocab1();
    struct wk_grammar *g = gbnf("root ::= \"{\" ( \"\\\"\" [a-b]* \"\\\"\" )? \"}\"");
    struct wk_grammar_matcher *m = NULL;
    CHECK_EQ_INT(wk_grammar_matcher_create(g, v, &m, NULL), WK_OK);
    if (!m) return;
    /* by hand: start {, {"a; after { : } or "; in the string: a b ab ba " "}
     * (abc has c, x" starts with x); after the string: }; then only EOG */
    check_allowed(m, 14, (const int[]){5, 13}, 2, "start");
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, V_EOG), WK_E_INVALID); /* not complete */
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 12), WK_E_INVALID);    /* a special token */
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 0), WK_E_INVALID);     /* "a" not allowed */
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 5), WK_OK);
    check_allowed(m, 14, (const int[]){6, 7}, 2, "{");
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 7), WK_OK);
    check_allowed(m, 14, (const int[]){0, 1, 2, 3, 7, 8}, 6, "{\"");
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 3), WK_OK);
    check_allowed(m, 14, (const int[]){0, 1, 2, 3, 7, 8}, 6, "{\"ba");
    CHECK(!wk_grammar_matcher_is_complete(m));
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 8), WK_OK);
    CHECK(wk_grammar_matcher_is_complete(m));
    CHECK(wk_grammar_matcher_is_finished(m)); /* nothing may follow */
    check_allowed(m, 14, (const int[]){V_EOG}, 1, "{\"ba\"}");
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, V_EOG), WK_OK);
    CHECK(wk_grammar_matcher_is_finished(m));
    /* rollback over the end token and the string's end */
    wk_grammar_matcher_rollback(m, 2);
    check_allowed(m, 14, (const int[]){0, 1, 2, 3, 7, 8}, 6, "rolled back to {\"ba");
    CHECK(!wk_grammar_matcher_is_finished(m));
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 7), WK_OK);
    check_allowed(m, 14, (const int[]){6}, 1, "{\"ba\"");
    wk_grammar_matcher_rollback(m, 100); /* clamps to the start */
    check_allowed(m, 14, (const int[]){5, 13}, 2, "rolled back to the start");
    wk_grammar_matcher_free(m);
    wk_grammar_free(g);

    /* rule calls: the tokens that run past an item's end (a, a] b,) are
     * decided against the list around it */
    static const char *const V2[] = {"[", "a", "aa", "a,", "a]", ",", ",a", "]", "b", "b,", "[a", "ab", ""};
    size_t lens[13];
    for (int i = 0; i < 13; i++) lens[i] = strlen(V2[i]);
    int32_t eog = 12;
    struct wk_grammar_vocab *v2 = NULL;
    CHECK_EQ_INT(wk_grammar_vocab_create_from_bytes(V2, lens, 13, &eog, 1, &v2, NULL), WK_OK);
    g = gbnf("root ::= \"[\" item ( \",\" item )* \"]\"\nitem ::= \"a\"+ | \"b\"");
    CHECK_EQ_INT(wk_grammar_matcher_create(g, v2, &m, NULL), WK_OK);
    check_allowed(m, 13, (const int[]){0, 10}, 2, "start");
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 0), WK_OK);
    check_allowed(m, 13, (const int[]){1, 2, 3, 4, 8, 9}, 6, "[");
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 1), WK_OK);
    check_allowed(m, 13, (const int[]){1, 2, 3, 4, 5, 6, 7}, 7, "[a");
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 6), WK_OK);
    check_allowed(m, 13, (const int[]){1, 2, 3, 4, 5, 6, 7}, 7, "[a,a");
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 5), WK_OK);
    check_allowed(m, 13, (const int[]){1, 2, 3, 4, 8, 9}, 6, "[a,a,");
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 8), WK_OK);
    check_allowed(m, 13, (const int[]){5, 6, 7}, 3, "[a,a,b");
    CHECK_EQ_INT(wk_grammar_matcher_accept(m, 7), WK_OK);
    check_allowed(m, 13, (const int[]){12}, 1, "[a,a,b]");
    wk_grammar_matcher_free(m);
    wk_grammar_free(g);
    wk_grammar_vocab_free(v2);
    wk_grammar_vocab_free(v);
}

/* ------------------------------------------- masks against direct steps */

/* A vocabulary of all single bytes, JSON-ish pieces and an end token. */
static struct wk_grammar_vocab *mixed_vocab(int *n_out, const char ***tok_out, size_t **len_out)
{
    static const char *const extra[] = {
        "{\"", "\":", "\": ", "\", \"", "\"}", "\"]", "[\"", "true", "false", "null", "12", "-1", ".5",
        "e+", "\\n", "\\\"", "\\u00e9", ", ", "}, {", "[]", "{}", "ab", "a\"", "\"a", "é", "日本", "}]",
        "],", "},", "[[", "1,", "0.", "\"\"", "\\\\", ",\"", "ORD-", "-12", "T10", ":00Z", "@x.org",
    };
    int n_extra = (int)(sizeof extra / sizeof extra[0]), n = 256 + n_extra + 1;
    static char bytes[256];
    const char **tok = calloc((size_t)n, sizeof *tok);
    size_t *len = calloc((size_t)n, sizeof *len);
    for (int i = 0; i < 256; i++) bytes[i] = (char)i, tok[i] = &bytes[i], len[i] = 1;
    for (int i = 0; i < n_extra; i++) tok[256 + i] = extra[i], len[256 + i] = strlen(extra[i]);
    tok[n - 1] = "";
    int32_t eog = n - 1;
    struct wk_grammar_vocab *v = NULL;
    wk_grammar_vocab_create_from_bytes(tok, len, n, &eog, 1, &v, NULL);
    *n_out = n;
    *tok_out = tok;
    *len_out = len;
    return v;
}

/* Walks g at random (seeded) and checks at every step that the mask has
 * exactly the tokens whose bytes step through (and the end token exactly
 * when complete). */
static void consistency(struct wk_grammar *g, uint64_t seed, int steps)
{
    int n;
    const char **tok;
    size_t *len;
    struct wk_grammar_vocab *v = mixed_vocab(&n, &tok, &len);
    struct wk_grammar_matcher *m = NULL;
    CHECK_EQ_INT(wk_grammar_matcher_create(g, v, &m, NULL), WK_OK);
    uint32_t bits[16];
    int32_t ids[512];
    int bad = 0;
    for (int step = 0; m && step < steps; step++) {
        CHECK_EQ_INT(wk_grammar_matcher_mask(m, bits), WK_OK);
        int k = 0;
        for (int i = 0; i < n - 1; i++) {
            bool in = bits[i >> 5] >> (i & 31) & 1;
            if (in != wk_grammar_matcher_accepts_bytes(m, tok[i], len[i])) bad++;
            if (in) ids[k++] = i;
        }
        bool eog = bits[(n - 1) >> 5] >> ((n - 1) & 31) & 1;
        if (eog != wk_grammar_matcher_is_complete(m)) bad++;
        if (k == 0) break;
        CHECK_EQ_INT(wk_grammar_matcher_accept(m, ids[check_rand_u64(&seed) % (uint64_t)k]), WK_OK);
        if (step % 7 == 6) wk_grammar_matcher_rollback(m, 3);
    }
    CHECK_EQ_INT(bad, 0);
    wk_grammar_matcher_free(m);
    wk_grammar_vocab_free(v);
    free(tok);
    free(len);
}

static void test_mask_consistency(void)
{
    struct wk_grammar *g = NULL;
    CHECK_EQ_INT(wk_grammar_json_object(&g, NULL), WK_OK);
    for (uint64_t s = 1; s <= 3; s++) consistency(g, s, 60);
    wk_grammar_free(g);
    g = schema("{\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"string\", \"pattern\": \"^ORD-[0-9]{3}$\"},"
               " \"n\": {\"type\": \"integer\", \"minimum\": -20, \"maximum\": 300}, \"x\": {\"type\": \"number\"},"
               " \"tags\": {\"type\": \"array\", \"items\": {\"enum\": [\"a\", \"ab\", 1]}}, \"at\": {\"type\": \"string\","
               " \"format\": \"date-time\"}}, \"required\": [\"id\", \"n\"]}");
    CHECK(g != NULL);
    for (uint64_t s = 1; g && s <= 3; s++) consistency(g, s, 60);
    wk_grammar_free(g);
    g = gbnf("root ::= \"[\" item ( \",\" item )* \"]\"\nitem ::= \"a\"+ | \"b\" | root");
    for (uint64_t s = 1; g && s <= 3; s++) consistency(g, s, 40);
    wk_grammar_free(g);
}

/* ----------------------------------------------------------- JSON Schema */

/* Every integer in [-300, 300] against lo <= v <= hi, by arithmetic. */
static void int_range_case(const char *sch, long lo, long hi)
{
    struct wk_grammar *g = schema(sch);
    CHECK(g != NULL);
    if (!g) return;
    struct wk_grammar_vocab *v = tiny_vocab();
    struct wk_grammar_matcher *m = NULL;
    wk_grammar_matcher_create(g, v, &m, NULL);
    int bad = 0;
    for (long x = -300; x <= 300; x++) {
        char t[32];
        snprintf(t, sizeof t, "%ld", x);
        if (matches(m, t) != (x >= lo && x <= hi)) {
            if (bad++ < 5) fprintf(stderr, "  %s: %ld\n", sch, x);
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(!matches(m, "007"));
    CHECK(!matches(m, "1.0"));
    wk_grammar_matcher_free(m);
    wk_grammar_vocab_free(v);
    wk_grammar_free(g);
}

static void test_schema_numbers(void)
{
    int_range_case("{\"type\": \"integer\", \"minimum\": -5, \"maximum\": 123}", -5, 123);
    int_range_case("{\"type\": \"integer\", \"exclusiveMinimum\": -100, \"exclusiveMaximum\": 10}", -99, 9);
    int_range_case("{\"type\": \"integer\", \"minimum\": 190}", 190, 1000000);
    int_range_case("{\"type\": \"integer\", \"maximum\": -17}", -1000000, -17);
    int_range_case("{\"type\": \"integer\", \"minimum\": 2.5, \"maximum\": 7.9}", 3, 7);
    int_range_case("{\"type\": \"integer\", \"minimum\": 0, \"maximum\": 0}", 0, 0);
    static const struct mcase unit[] = {
        {"0", true}, {"0.5", true}, {"0.999", true}, {"1", false}, {"1.0", false}, {"-0.1", false},
        {"1e0", false}, {"0.0", true}, {".5", false},
    };
    struct wk_grammar *g = schema("{\"type\": \"number\", \"minimum\": 0, \"exclusiveMaximum\": 1}");
    check_cases("[0,1)", g, unit, 9);
    wk_grammar_free(g);
    static const struct mcase gt[] = {
        {"3", false}, {"3.0", false}, {"3.01", true}, {"4", true}, {"-2", false}, {"3.000", false}, {"12.5", true},
    };
    g = schema("{\"type\": \"number\", \"exclusiveMinimum\": 3}");
    check_cases("(3,inf)", g, gt, 7);
    wk_grammar_free(g);
    static const struct mcase neg[] = {
        {"-2.5", true}, {"-2", true}, {"-1.5", true}, {"3", true}, {"3.5", true}, {"-0.5", true}, {"0", true},
        {"-2.51", false}, {"3.76", false}, {"3.75", true}, {"-3", false}, {"4", false},
    };
    g = schema("{\"type\": \"number\", \"minimum\": -2.5, \"maximum\": 3.75}"); /* exact: -2.5 <= x <= 3.75 */
    check_cases("[-2.5,3.75]", g, neg, 12);
    wk_grammar_free(g);
    static const struct mcase num[] = {
        {"-0.25e+10", true}, {"1E5", true}, {"01", false}, {"1.", false}, {"+1", false}, {"1e", false},
    };
    g = schema("{\"type\": \"number\"}");
    check_cases("number", g, num, 6);
    wk_grammar_free(g);
}

static void test_schema_objects(void)
{
    static const struct mcase obj[] = {
        {"{\"a\":1}", true},
        {"{\"a\": 1, \"b\": \"x\"}", true},
        {"{\"a\":1,\"b\":\"x\"}", true},
        {"{\"b\":\"x\",\"a\":1}", false}, /* properties come in the schema's order */
        {"{}", false},
        {"{\"a\":1,\"c\":2}", false}, /* additionalProperties absent: none */
        {"{\"a\":  1}", false},       /* at most one space */
        {"{ \"a\":1}", false},
    };
    struct wk_grammar *g = schema("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"},"
                                  " \"b\": {\"type\": \"string\"}}, \"required\": [\"a\"]}");
    check_cases("object", g, obj, 8);
    wk_grammar_free(g);
    /* extra keys never spell a declared name */
    static const struct mcase add[] = {
        {"{\"ab\":1,\"a\":true}", true}, {"{\"ab\":1,\"abc\":null}", true}, {"{\"ab\":1,\"ab\":true}", false},
        {"{\"ab\":1,\"x\":true,\"b\":1}", false}, {"{\"ab\":1,\"\":true}", true}, {"{\"ab\":1,\"x\":2}", false},
    };
    g = schema("{\"properties\": {\"ab\": {}, \"b\": {}}, \"required\": [\"ab\"], \"additionalProperties\":"
               " {\"type\": [\"boolean\", \"null\"]}}");
    check_cases("additional", g, add, 6);
    wk_grammar_free(g);
    static const struct mcase str[] = {
        {"\"ab\"", true}, {"\"a\"", false}, {"\"abcd\"", false}, {"\"\\u00e9\\n\"", true},
        {"\"\xc3\xa9\xe6\x97\xa5\"", true}, {"\"a\nb\"", false} /* raw control character */, {"\"\\ud800x\"", false},
    };
    g = schema("{\"type\": \"string\", \"minLength\": 2, \"maxLength\": 3}");
    check_cases("string", g, str, 7);
    wk_grammar_free(g);
    static const struct mcase pat[] = {{"\"aab\"", true}, {"\"b\"", false}, {"\"aabx\"", false}};
    g = schema("{\"type\": \"string\", \"pattern\": \"^a+b$\"}");
    check_cases("anchored pattern", g, pat, 3);
    wk_grammar_free(g);
    static const struct mcase pat2[] = {{"\"xby\"", true}, {"\"xx\"", false}, {"\"b\"", true}};
    g = schema("{\"type\": \"string\", \"pattern\": \"b\"}");
    check_cases("search pattern", g, pat2, 3);
    wk_grammar_free(g);
    static const struct mcase en[] = {{"\"x\"", true}, {"1", true}, {"null", true}, {"2", false}, {"\"y\"", false}};
    g = schema("{\"enum\": [\"x\", 1, null]}");
    check_cases("enum", g, en, 5);
    wk_grammar_free(g);
    static const struct mcase en2[] = {{"\"x\"", true}, {"1", false}};
    g = schema("{\"type\": \"string\", \"enum\": [\"x\", 1]}");
    check_cases("enum and type", g, en2, 2);
    wk_grammar_free(g);
    static const struct mcase tree[] = {
        {"{\"v\":1}", true}, {"{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[]}]}", true}, {"{\"kids\":[]}", false},
    };
    g = schema("{\"$defs\": {\"n\": {\"type\": \"object\", \"properties\": {\"v\": {\"type\": \"integer\"},"
               " \"kids\": {\"type\": \"array\", \"items\": {\"$ref\": \"#/$defs/n\"}}}, \"required\": [\"v\"]}},"
               " \"$ref\": \"#/$defs/n\"}");
    check_cases("recursive $ref", g, tree, 3);
    wk_grammar_free(g);
    static const struct mcase js[] = {
        {"{}", true}, {"{\"a\": [1, {\"b\": null}], \"c\": \"d\"}", true}, {"[1]", false}, {"{\"a\":1,}", false},
    };
    CHECK_EQ_INT(wk_grammar_json_object(&g, NULL), WK_OK);
    check_cases("json object", g, js, 4);
    wk_grammar_free(g);
    static const struct mcase dt[] = {
        {"\"2024-02-28T23:59:59Z\"", true}, {"\"2024-02-30T10:00:00Z\"", false}, {"\"2024-13-01T10:00:00Z\"", false},
        {"\"2024-04-30T10:00:00.123+05:30\"", true}, {"\"2024-04-31T10:00:00Z\"", false},
    };
    g = schema("{\"type\": \"string\", \"format\": \"date-time\"}");
    check_cases("date-time", g, dt, 5);
    wk_grammar_free(g);
}

static void test_schema_refusals(void)
{
    static const struct {
        const char *schema, *want;
        enum wk_status st;
    } cases[] = {
        {"{\"not\": {}}", "keyword \"not\" at # is not supported", WK_E_UNSUPPORTED},
        {"{\"properties\": {\"a\": {\"multipleOf\": 2}}}", "keyword \"multipleOf\" at #/properties/a", WK_E_UNSUPPORTED},
        {"{\"items\": {\"uniqueItems\": true}}", "keyword \"uniqueItems\" at #/items", WK_E_UNSUPPORTED},
        {"{\"if\": {}, \"then\": {}}", "keyword \"if\"", WK_E_UNSUPPORTED},
        {"{\"patternProperties\": {\"a\": {}}}", "patternProperties", WK_E_UNSUPPORTED},
        {"{\"type\": \"string\", \"format\": \"hostname\"}", "format \"hostname\"", WK_E_UNSUPPORTED},
        {"{\"$ref\": \"http://example.com/s.json\"}", "only references inside the schema", WK_E_UNSUPPORTED},
        {"{\"oneOf\": [{\"type\": \"integer\"}, {\"minimum\": 2}]}", "alternatives 0 and 1 may both match", WK_E_UNSUPPORTED},
        {"{\"type\": \"string\", \"pattern\": \"(?=a)\"}", "lookaround", WK_E_UNSUPPORTED},
        {"{\"type\": \"string\", \"pattern\": \"(a)\\\\1\"}", "backreference", WK_E_UNSUPPORTED},
        {"false", "matches nothing", WK_E_INVALID},
        {"{\"type\": \"strung\"}", "not a JSON Schema type", WK_E_INVALID},
        {"{\"$ref\": \"#/$defs/missing\"}", "no such schema", WK_E_INVALID},
        {"{\"allOf\": [{\"pattern\": \"a\"}, {\"pattern\": \"b\"}]}", "cannot merge two different \"pattern\"", WK_E_UNSUPPORTED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *s = json_loads(cases[i].schema, JSON_DECODE_ANY, NULL);
        struct wk_grammar *g = NULL;
        struct wk_error err = {0};
        CHECK_EQ_INT(wk_grammar_from_json_schema(s, &g, &err), cases[i].st);
        CHECK(g == NULL);
        CHECK_CONTAINS(err.msg, cases[i].want);
        json_decref(s);
    }
    /* annotations and no-op keywords pass */
    struct wk_grammar *g = schema("{\"title\": \"t\", \"description\": \"d\", \"default\": 1, \"examples\": [1],"
                                  " \"$comment\": \"c\", \"deprecated\": false, \"uniqueItems\": false,"
                                  " \"type\": \"integer\", \"x-vendor\": 3}");
    CHECK(g != NULL);
    wk_grammar_free(g);
}

/* ----------------------------------------------------- allocation failures */

static void test_alloc_failures(void)
{
    static const char *const V[] = {"{", "}", "\"", "a", "\":", "1", ""};
    size_t lens[7];
    for (int i = 0; i < 7; i++) lens[i] = strlen(V[i]);
    int32_t eog = 6;
    json_t *sch = json_loads("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\", \"minimum\": 3},"
                             " \"s\": {\"type\": \"string\", \"pattern\": \"^a+$\"}}, \"additionalProperties\": true}",
                             0, NULL);
    int64_t live = wk_alloc_live_bytes();
    int done = 0;
    for (int64_t k = 1; k < 100000 && !done; k++) {
        struct wk_grammar *g = NULL;
        struct wk_grammar_vocab *v = NULL;
        struct wk_grammar_matcher *m = NULL;
        uint32_t bits[1];
        wk_alloc_fail_after(k);
        enum wk_status st = wk_grammar_from_json_schema(sch, &g, NULL);
        if (st == WK_OK) st = wk_grammar_vocab_create_from_bytes(V, lens, 7, &eog, 1, &v, NULL);
        if (st == WK_OK) st = wk_grammar_matcher_create(g, v, &m, NULL);
        if (st == WK_OK) st = wk_grammar_matcher_mask(m, bits);
        if (st == WK_OK) st = wk_grammar_matcher_accept(m, 0);
        if (st == WK_OK) st = wk_grammar_matcher_mask(m, bits);
        if (st == WK_OK) st = wk_grammar_matcher_accept(m, 2);
        wk_alloc_fail_after(0);
        CHECK(st == WK_OK || st == WK_E_NOMEM);
        if (st == WK_OK) {
            done = 1;
            CHECK_EQ_INT(bits[0], (1u << 4) | (1u << 2) | (1u << 1)); /* after {: } " or ": (a key may hold :) */
        }
        wk_grammar_matcher_free(m);
        wk_grammar_vocab_free(v);
        wk_grammar_free(g);
    }
    CHECK(done);
    CHECK_EQ_INT(wk_alloc_live_bytes(), live);
    json_decref(sch);
    /* GBNF text with every construct */
    const char *src = "root ::= item (\",\" item)*\nitem ::= [a-z\\u00e9]+ | \"(\" root \")\" | . \"x\"{2,3}\n";
    done = 0;
    for (int64_t k = 1; k < 100000 && !done; k++) {
        struct wk_grammar *g = NULL;
        wk_alloc_fail_after(k);
        enum wk_status st = wk_grammar_from_gbnf(src, strlen(src), NULL, &g, NULL);
        wk_alloc_fail_after(0);
        CHECK(st == WK_OK || st == WK_E_NOMEM);
        done = st == WK_OK;
        wk_grammar_free(g);
    }
    CHECK(done);
    CHECK_EQ_INT(wk_alloc_live_bytes(), live);
}

/* --------------------------------------------------------------- hostile */

/* An object schema of n properties (optional, or all required) or an
 * allOf of n one-property objects, compiled: its status, error text in msg. */
struct big_schema {
    int n, kind; /* 0 optional properties, 1 required names only, 2 allOf */
    enum wk_status st;
    char msg[sizeof ((struct wk_error *)0)->msg];
};

static void *compile_big(void *arg)
{
    struct big_schema *b = arg;
    json_t *j;
    if (b->kind == 2) {
        json_t *all = json_array();
        char name[32];
        for (int i = 0; i < b->n; i++) {
            snprintf(name, sizeof name, "a%d", i);
            json_array_append_new(all, json_pack("{s:s, s:{s:{s:s}}}", "type", "object", "properties", name, "type",
                                                 "integer"));
        }
        j = json_pack("{s:o}", "allOf", all);
    } else {
        json_t *props = json_object(), *req = json_array();
        char name[32];
        for (int i = 0; i < b->n; i++) {
            snprintf(name, sizeof name, "p%d", i);
            if (b->kind == 0) json_object_set_new(props, name, json_pack("{s:s}", "type", "integer"));
            else json_array_append_new(req, json_string(name));
        }
        j = b->kind == 0 ? json_pack("{s:s, s:o}", "type", "object", "properties", props)
                         : json_pack("{s:s, s:o}", "type", "object", "required", req);
        if (b->kind == 0) json_decref(req);
        else json_decref(props);
    }
    struct wk_error err = {0};
    struct wk_grammar *g = NULL;
    b->st = wk_grammar_from_json_schema(j, &g, &err);
    snprintf(b->msg, sizeof b->msg, "%s", err.msg);
    wk_grammar_free(g);
    json_decref(j);
    return NULL;
}

/* Objects of many members and long allOf lists: an error, soon, on a
 * thread with a small stack (the server compiles a request's schema on
 * its connection thread). The members were written by a recursion per
 * property, which ran a 2 MiB stack out at ~13,000 optional ones; the
 * required names were looked up in a list per property (100,000 took
 * 42 s), and each allOf part merged copied everything merged before it. */
static void test_hostile_sizes(void)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 << 10);
    struct big_schema cases[] = {{.n = 60000, .kind = 0}, {.n = 100000, .kind = 1}, {.n = 2000, .kind = 2},
                                 {.n = 20, .kind = 2}, {.n = 20, .kind = 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pthread_t t;
        const int64_t t0 = wk_time_ns();
        CHECK_EQ_INT(pthread_create(&t, &a, compile_big, &cases[i]), 0);
        pthread_join(t, NULL);
        CHECK((wk_time_ns() - t0) / 1000000 < 10000); /* generous: a bound, not a speed test */
        if (cases[i].n == 20) CHECK_EQ_INT(cases[i].st, WK_OK);
        else CHECK_EQ_INT(cases[i].st, WK_E_RANGE);
    }
    CHECK_CONTAINS(cases[2].msg, "allOf at #: merging its schemas copies more than");
    pthread_attr_destroy(&a);
}

static void test_hostile(void)
{
    struct wk_error err = {0};
    struct wk_grammar *g = NULL;
    /* groups nested 300 deep */
    char *deep = malloc(1000);
    strcpy(deep, "root ::= ");
    for (int i = 0; i < 300; i++) strcat(deep, "(");
    strcat(deep, "\"a\"");
    for (int i = 0; i < 300; i++) strcat(deep, ")");
    CHECK_EQ_INT(wk_grammar_from_gbnf(deep, strlen(deep), NULL, &g, &err), WK_E_INVALID);
    CHECK_CONTAINS(err.msg, "nested deeper than 200");
    free(deep);
    /* a schema nested 100 deep */
    char *s = malloc(4000);
    s[0] = 0;
    for (int i = 0; i < 100; i++) strcat(s, "{\"items\": ");
    strcat(s, "{}");
    for (int i = 0; i < 100; i++) strcat(s, "}");
    json_t *j = json_loads(s, 0, NULL);
    CHECK_EQ_INT(wk_grammar_from_json_schema(j, &g, &err), WK_E_RANGE);
    CHECK_CONTAINS(err.msg, "nested deeper than 64");
    json_decref(j);
    free(s);
    /* an enum of 10,000 values compiles; 100,001 are refused */
    json_t *en = json_array();
    for (int i = 0; i < 10000; i++) json_array_append_new(en, json_sprintf("value-%d", i * 7919 % 100003));
    j = json_pack("{s:o}", "enum", en);
    int64_t t0 = wk_time_ns();
    CHECK_EQ_INT(wk_grammar_from_json_schema(j, &g, &err), WK_OK);
    struct wk_grammar_vocab *v = tiny_vocab();
    struct wk_grammar_matcher *m = NULL;
    CHECK_EQ_INT(wk_grammar_matcher_create(g, v, &m, NULL), WK_OK);
    CHECK(matches(m, "\"value-7919\""));
    CHECK(!matches(m, "\"value-7920\""));
    CHECK((wk_time_ns() - t0) / 1000000 < 20000); /* generous: a bound, not a speed test */
    wk_grammar_matcher_free(m);
    wk_grammar_free(g);
    json_decref(j);
    en = json_array();
    for (int i = 0; i < 100001; i++) json_array_append_new(en, json_integer(i));
    j = json_pack("{s:o}", "enum", en);
    CHECK_EQ_INT(wk_grammar_from_json_schema(j, &g, &err), WK_E_RANGE);
    json_decref(j);
    /* (a*)*b: no blow-up, in a pattern and in GBNF */
    g = schema("{\"type\": \"string\", \"pattern\": \"^(a*)*b$\"}");
    CHECK(g != NULL);
    CHECK_EQ_INT(wk_grammar_matcher_create(g, v, &m, NULL), WK_OK);
    char *longa = malloc(20010);
    longa[0] = '"';
    memset(longa + 1, 'a', 20000);
    strcpy(longa + 20001, "b\"");
    CHECK(matches(m, longa));
    longa[20001] = 'c';
    CHECK(!matches(m, longa));
    free(longa);
    wk_grammar_matcher_free(m);
    wk_grammar_free(g);
    g = gbnf("root ::= (\"a\"*)* \"b\"");
    CHECK(g != NULL);
    wk_grammar_free(g);
    /* nesting past the stack depth limit is simply not allowed, and the
     * masks near the limit agree with what accept allows */
    CHECK_EQ_INT(wk_grammar_json_object(&g, NULL), WK_OK);
    int n_mixed;
    const char **tok;
    size_t *len;
    struct wk_grammar_vocab *mv = mixed_vocab(&n_mixed, &tok, &len);
    CHECK_EQ_INT(wk_grammar_matcher_create(g, mv, &m, NULL), WK_OK);
    CHECK(wk_grammar_matcher_accept_bytes(m, "{\"a\":", 5));
    int depth = 0, disagree = 0;
    uint32_t bits[16];
    while (depth < 5000 && wk_grammar_matcher_accept_bytes(m, "[", 1)) {
        depth++;
        if (depth < WK_GRAMMAR_MAX_DEPTH - 3) continue;
        CHECK_EQ_INT(wk_grammar_matcher_mask(m, bits), WK_OK);
        for (int i = 0; i < n_mixed - 1; i++)
            disagree += (int)(bits[i >> 5] >> (i & 31) & 1) != (int)wk_grammar_matcher_accepts_bytes(m, tok[i], len[i]);
    }
    CHECK(depth > 100 && depth <= WK_GRAMMAR_MAX_DEPTH);
    CHECK_EQ_INT(disagree, 0);
    CHECK(wk_grammar_matcher_accept_bytes(m, "]", 1)); /* it can still close */
    wk_grammar_matcher_free(m);
    wk_grammar_vocab_free(mv);
    free(tok);
    free(len);
    wk_grammar_free(g);
    /* a grammar whose stacks double with every byte fails closed */
    g = gbnf("root ::= x y z\nx ::= y x \"b\" | z x \"c\" | \"\"\ny ::= \"a\"+\nz ::= \"a\"+");
    CHECK(g != NULL);
    CHECK_EQ_INT(wk_grammar_matcher_create(g, v, &m, NULL), WK_OK);
    enum wk_status st = WK_OK;
    for (int i = 0; i < 40 && st == WK_OK; i++) {
        st = wk_grammar_matcher_accept_bytes(m, "a", 1) ? WK_OK : WK_E_RANGE;
        if (st == WK_OK) st = wk_grammar_matcher_mask(m, bits);
    }
    CHECK_EQ_INT(st, WK_E_RANGE);
    wk_grammar_matcher_free(m);
    wk_grammar_free(g);
    wk_grammar_vocab_free(v);
}

CHECK_MAIN(TEST(test_gbnf_errors), TEST(test_gbnf_match), TEST(test_masks), TEST(test_mask_consistency),
           TEST(test_schema_numbers), TEST(test_schema_objects), TEST(test_schema_refusals),
           TEST(test_alloc_failures), TEST(test_hostile), TEST(test_hostile_sizes))
