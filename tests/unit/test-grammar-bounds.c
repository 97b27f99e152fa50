/*
 * test-grammar-bounds.c - the grammar engine (src/runtime/wk_grammar.h)
 * at its bounds: the cost of repeated elements and of large rule sets
 * (what a grammar compiles to and what a matcher holds, never how long
 * it takes), sizes refused before the work with errors that say why, and
 * JSON Schema number ranges, whose every accepted text is checked against
 * Python's jsonschema semantics worked out from first principles: a text
 * with a fraction is the double float() reads from it (correctly rounded,
 * as strtod), an integer text is an exact integer, and Python compares
 * ints and floats exactly.
 */
#include "check.h"
#include "grammar_util.h"

#include "../../src/runtime/wk_grammar.h"

#include <jansson.h>
#include <stdbool.h>

/* ------------------------------------------------------------- helpers */

static struct wk_grammar *gbnf(const char *src, struct wk_error *err)
{
    struct wk_grammar *g = NULL;
    enum wk_status st = wk_grammar_from_gbnf(src, strlen(src), NULL, &g, err);
    if (st != WK_OK) fprintf(stderr, "grammar failed: %s\n", err->msg);
    return g;
}

/* ------------------------------------------------- repeated elements */

/* Tokens: every string of 1 to 3 lowercase letters (18,278), then an
 * end-of-generation token. */
static struct wk_grammar_vocab *letters_vocab(int32_t *n_out, char (**tok_out)[4])
{
    int32_t n = 26 + 26 * 26 + 26 * 26 * 26 + 1;
    char(*tok)[4] = calloc((size_t)n, 4);
    const char **ptr = malloc((size_t)n * sizeof *ptr);
    size_t *len = malloc((size_t)n * sizeof *len);
    int32_t k = 0;
    for (int l = 1; l <= 3; l++) {
        int total = l == 1 ? 26 : l == 2 ? 676 : 17576;
        for (int i = 0; i < total; i++, k++) {
            for (int j = 0, x = i; j < l; j++, x /= 26) tok[k][l - 1 - j] = (char)('a' + x % 26);
            len[k] = (size_t)l;
        }
    }
    len[k] = 0; /* the end token */
    for (int32_t i = 0; i < n; i++) ptr[i] = tok[i];
    int32_t eog = n - 1;
    struct wk_grammar_vocab *v = NULL;
    wk_grammar_vocab_create_from_bytes(ptr, len, n, &eog, 1, &v, NULL);
    free(ptr);
    free(len);
    *n_out = n;
    *tok_out = tok;
    return v;
}

/*
 * `[a-z]{1,8000}`: 8001 states (one per number of letters read, as the
 * smallest automaton for 1 to 8000 letters has), and a matcher that holds
 * little, whatever the states (its start used to precompute the token
 * sets of all of them: seconds and hundreds of MB per request). The masks
 * follow from the rule alone: a token of k letters is allowed while k
 * letters still fit, the end once one letter is in.
 */
static void test_repeated_class(void)
{
    struct wk_error err = {0};
    struct wk_grammar *inl = gbnf("root ::= [a-z]{1,8000}", &err);
    CHECK(inl != NULL);
    if (!inl) return;
    CHECK_EQ_INT(wk_grammar_n_states(inl), 8001);
    int32_t n;
    char(*tok)[4];
    struct wk_grammar_vocab *v = letters_vocab(&n, &tok);
    int64_t live = wk_alloc_live_bytes();
    struct wk_grammar_matcher *m = NULL;
    CHECK_EQ_INT(wk_grammar_matcher_create(inl, v, &m, NULL), WK_OK);
    CHECK(wk_alloc_live_bytes() - live < (4 << 20));
    uint32_t *bits = calloc((size_t)(n + 31) / 32, 4);
    char *text = malloc(8002);
    memset(text, 'q', 8001);
    text[8001] = '\0';
    CHECK(!matches(m, ""));
    CHECK(matches(m, "a"));
    text[8000] = '\0';
    CHECK(matches(m, text));
    text[8000] = 'q';
    CHECK(!matches(m, text));
    static const int done_at[] = {0, 1, 7000, 7997, 7998, 7999, 8000};
    for (size_t c = 0; m && c < sizeof done_at / sizeof done_at[0]; c++) {
        int d = done_at[c], wrong = 0;
        wk_grammar_matcher_reset(m);
        CHECK(d == 0 || wk_grammar_matcher_accept_bytes(m, text, (size_t)d));
        CHECK_EQ_INT(wk_grammar_matcher_mask(m, bits), WK_OK);
        for (int32_t i = 0; i < n - 1; i++)
            wrong += (int)(bits[i >> 5] >> (i & 31) & 1) != (d + (int)strlen(tok[i]) <= 8000);
        CHECK_EQ_INT(wrong, 0);
        CHECK_EQ_INT(bits[(n - 1) >> 5] >> ((n - 1) & 31) & 1, d >= 1); /* end: once complete */
    }
    CHECK(wk_alloc_live_bytes() - live < (8 << 20));
    free(text);
    free(bits);
    free(tok);
    wk_grammar_matcher_free(m);
    wk_grammar_vocab_free(v);
    wk_grammar_free(inl);
}

/* Groups and literals repeated in place, nested, behave as the text says. */
static void test_repeated_groups(void)
{
    struct wk_error err = {0};
    static const struct {
        const char *src, *text;
        bool ok;
    } cases[] = {
        {"root ::= (\"ab\" [0-9]?){2,40} \"!\"", "ab1abab9!", true},
        {"root ::= (\"ab\" [0-9]?){2,40} \"!\"", "ab1!", false},
        {"root ::= (\"ab\" [0-9]?){2,40} \"!\"", "ab12ab!", false},
        {"root ::= \"xy\"{3}{6} \"z\"", "xyxyxyxyxyxyxyxyxyxyxyxyxyxyxyxyxyxyz", true}, /* 18 xy */
        {"root ::= \"xy\"{3}{6} \"z\"", "xyxyxyxyxyxyxyxyxyxyxyxyxyxyxyxyxyz", false},  /* 17 */
        {"root ::= ([a-c] | \"-\" [0-9]{2}){20,} w\nw ::= \".\"", "abcabcabcabcabcabc-12ab.", true},
        {"root ::= ([a-c] | \"-\" [0-9]{2}){20,} w\nw ::= \".\"", "abcabcabcabcabcabc-1ab.", false},
        {"root ::= [a-z]{0,30}{0,30} \";\"", ";", true},
    };
    struct wk_grammar_vocab *v = tiny_vocab();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wk_grammar *g = gbnf(cases[i].src, &err);
        struct wk_grammar_matcher *m = NULL;
        CHECK(g && wk_grammar_matcher_create(g, v, &m, NULL) == WK_OK);
        if (m && matches(m, cases[i].text) != cases[i].ok)
            fprintf(stderr, "  %s: \"%s\" should %smatch\n", cases[i].src, cases[i].text, cases[i].ok ? "" : "not ");
        CHECK(m && matches(m, cases[i].text) == cases[i].ok);
        wk_grammar_matcher_free(m);
        wk_grammar_free(g);
    }
    /* the 900 letters a nested repetition allows, not one more */
    struct wk_grammar *g = gbnf("root ::= [a-z]{0,30}{0,30} \";\"", &err);
    struct wk_grammar_matcher *m = NULL;
    CHECK(g && wk_grammar_matcher_create(g, v, &m, NULL) == WK_OK);
    char *s = malloc(903);
    memset(s, 'k', 900);
    strcpy(s + 900, ";");
    CHECK(m && matches(m, s));
    memset(s, 'k', 901);
    strcpy(s + 901, ";");
    CHECK(m && !matches(m, s));
    free(s);
    wk_grammar_matcher_free(m);
    wk_grammar_free(g);
    wk_grammar_vocab_free(v);
}

/*
 * Sizes refused before the work, each with the reason. x{0,100}{0,100}
 * {0,100} allows up to a million x: a rule with finitely many texts, the
 * longest a million steps long, needs a state after each step (the texts
 * that may follow a prefix of the longest text get shorter with every
 * step), past the 150,000 DFA states a grammar may have. 300 copies of a
 * 15,000-byte literal are 4.5 million NFA states, past 4,194,304.
 */
static void test_refused_up_front(void)
{
    static const struct {
        const char *src, *want;
    } cases[] = {
        {"root ::= x{0,100}{0,100}{0,100}\nx ::= \"a\"", "rule 'root' has a text of 1000000 bytes and rule calls"},
        {"root ::= [a-z]{0,100}{0,100}{0,100}", "rule 'root' has a text of 1000000 bytes and rule calls"},
        {"root ::= (\"ab\"{60000}){3}", "rule 'root' has a text of 360000 bytes and rule calls"},
        {"root ::= \"<\" y \">\"\ny ::= x{0,1000}{0,1000}\nx ::= [0-9]", "rule 'root' has a text of 1000002"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wk_grammar *g = NULL;
        struct wk_error err = {0};
        CHECK_EQ_INT(wk_grammar_from_gbnf(cases[i].src, strlen(cases[i].src), NULL, &g, &err), WK_E_RANGE);
        CHECK_CONTAINS(err.msg, cases[i].want);
        CHECK_CONTAINS(err.msg, "more than the 150000 DFA states allowed");
        CHECK(g == NULL);
    }
    size_t lit = 15000;
    char *src = malloc(lit + 64);
    strcpy(src, "root ::= x{300}\nx ::= \"");
    size_t at = strlen(src);
    memset(src + at, 'w', lit);
    strcpy(src + at + lit, "\"");
    struct wk_grammar *g = NULL;
    struct wk_error err = {0};
    CHECK_EQ_INT(wk_grammar_from_gbnf(src, strlen(src), NULL, &g, &err), WK_E_RANGE);
    CHECK_CONTAINS(err.msg, "rule 'root' expands to 45");
    CHECK_CONTAINS(err.msg, "NFA states (at most 4194304)");
    free(src);
    /* e (100 empty alternatives: 100 edges into its end) copied in at each
     * of 100,000 references: 10,099,999 edges; at 1,000,000 references,
     * 201 syntax nodes each are past the 33,554,432 nodes walked */
    for (int refs = 100000; refs <= 1000000; refs *= 10) {
        src = malloc((size_t)refs * 2 + 1024);
        size_t k = (size_t)sprintf(src, "e ::= \"\"");
        for (int i = 1; i < 100; i++) k += (size_t)sprintf(src + k, " | \"\"");
        k += (size_t)sprintf(src + k, "\nroot ::=");
        for (int i = 0; i < refs; i++) k += (size_t)sprintf(src + k, " e");
        CHECK_EQ_INT(wk_grammar_from_gbnf(src, strlen(src), NULL, &g, &err), WK_E_RANGE);
        CHECK_CONTAINS(err.msg, refs == 100000 ? "rule 'root' expands to 10099999 NFA edges (at most 8388608)"
                                               : "rule 'root' expands to more than 33554432 syntax nodes");
        free(src);
    }
    /* just inside: 100,000 letters (100,003 states) compile */
    g = gbnf("root ::= [a-z]{1,100000}", &err);
    CHECK(g != NULL);
    wk_grammar_free(g);
}

/* 60,000 rules: positions in errors are right at the end of the text
 * (they are counted once, not from the start for each rule). */
static void test_many_rules(void)
{
    int n = 60000;
    char *src = malloc((size_t)n * 24 + 64);
    size_t k = (size_t)sprintf(src, "root ::= r0 r%d\n", n - 1);
    for (int i = 0; i < n; i++) k += (size_t)sprintf(src + k, "r%d ::= \"a\"\n", i);
    struct wk_grammar *g = NULL;
    struct wk_error err = {0};
    g = gbnf(src, &err);
    CHECK(g != NULL);
    CHECK_EQ_INT(wk_grammar_n_rules(g), n + 1);
    struct wk_grammar_vocab *v = tiny_vocab();
    struct wk_grammar_matcher *m = NULL;
    CHECK(g && wk_grammar_matcher_create(g, v, &m, NULL) == WK_OK);
    CHECK(m && matches(m, "aa") && !matches(m, "a"));
    wk_grammar_matcher_free(m);
    wk_grammar_vocab_free(v);
    wk_grammar_free(g);
    sprintf(src + k, "bad ::= \"b\" zz\n");
    g = NULL;
    CHECK_EQ_INT(wk_grammar_from_gbnf(src, strlen(src), NULL, &g, &err), WK_E_INVALID);
    char want[64];
    snprintf(want, sizeof want, "line %d column 13: undefined rule 'zz'", n + 2);
    CHECK_CONTAINS(err.msg, want);
    sprintf(src + k, "r7 ::= \"b\"\n");
    CHECK_EQ_INT(wk_grammar_from_gbnf(src, strlen(src), NULL, &g, &err), WK_E_INVALID);
    snprintf(want, sizeof want, "line %d column 1: rule 'r7' defined twice", n + 2);
    CHECK_CONTAINS(err.msg, want);
    free(src);
}

/* ---------------------------------------------------- number ranges */

/* Python's comparison of a float and an int: exact. -1, 0 or 1. */
static int cmp_f_i(double v, int64_t i)
{
    if (v >= 9.3e18) return 1;
    if (v <= -9.3e18) return -1;
    double f = floor(v);
    int64_t fi = (int64_t)f;
    if (fi != i) return fi < i ? -1 : 1;
    return v == f ? 0 : 1;
}

/* A bound keyword as Python holds it: an int (exact) or a float. */
struct pbound {
    bool has, is_int;
    int64_t i;
    double d;
};

/* Whether the number text t satisfies every bound, as jsonschema decides:
 * a text with '.' is float(t); one without is int(t). */
static bool py_valid(const char *t, const struct pbound b[4])
{
    bool is_float = strchr(t, '.') || strchr(t, 'e') || strchr(t, 'E');
    double v = is_float ? strtod(t, NULL) : 0;
    int64_t n = is_float ? 0 : strtoll(t, NULL, 10);
    for (int k = 0; k < 4; k++) {
        if (!b[k].has) continue;
        int c; /* the text against the bound */
        if (is_float) c = b[k].is_int ? cmp_f_i(v, b[k].i) : (v > b[k].d) - (v < b[k].d);
        else c = b[k].is_int ? (n > b[k].i) - (n < b[k].i) : -cmp_f_i(b[k].d, n);
        bool ok = k == 0 ? c >= 0 : k == 1 ? c > 0 : k == 2 ? c <= 0 : c < 0;
        if (!ok) return false;
    }
    return true;
}

/* Whether a text is one the grammar is meant to reach when valid: plain
 * decimal, at most 16 fraction digits, 18 integer digits and 15
 * significant digits, and not a negative zero. */
static bool plain(const char *t)
{
    const char *p = t + (*t == '-'), *dot = strchr(p, '.');
    size_t ip = dot ? (size_t)(dot - p) : strlen(p), fr = dot ? strlen(dot + 1) : 0;
    if (ip == 0 || ip > 18 || fr > 16 || (ip > 1 && p[0] == '0') || (dot && fr == 0)) return false;
    char dig[64];
    size_t nd = 0;
    for (const char *q = p; *q; q++)
        if (*q >= '0' && *q <= '9' && nd < sizeof dig - 1) dig[nd++] = *q;
    dig[nd] = '\0';
    size_t a = strspn(dig, "0"), z = nd;
    while (z > a && dig[z - 1] == '0') z--;
    if (z == a) return *t != '-'; /* zero */
    return z - a <= 15;
}

/* Candidate texts around the value x: x written with 0..17 fraction
 * digits, nudged by one unit of the last digit and half of one. */
static int around(double x, char (*out)[48], int cap, int n)
{
    for (int k = 0; k <= 17 && n + 5 <= cap; k++) {
        double u = pow(10, -k);
        const double d[5] = {0, u, -u, u / 2, -u / 2};
        for (int j = 0; j < 5; j++) snprintf(out[n++], 48, "%.*f", k, x + d[j]);
    }
    return n;
}

/*
 * Each schema: its named cases (jsonschema's verdict worked out by hand),
 * then texts near every bound and random ones across the range, where
 * every text the grammar accepts must be valid, and every valid plain
 * text (above) accepted.
 */
static void test_number_ranges(void)
{
    static const struct {
        const char *schema;
        const char *yes[6], *no[6];
    } cases[] = {
        {"{\"type\":\"number\",\"minimum\":1.5,\"maximum\":1.6}",
         {"1.55", "1.5", "1.6", "1.60", "1.5999", NULL}, {"1.61", "1.49", "2", "1", "1.6000000000000003", NULL}},
        {"{\"type\":\"number\",\"minimum\":0.1,\"maximum\":0.9}",
         {"0.5", "0.1", "0.9", "0.10", NULL}, {"0.05", "0.95", "0", "1", "0.09", NULL}},
        {"{\"type\":\"number\",\"exclusiveMinimum\":1.5,\"exclusiveMaximum\":1.6}",
         {"1.55", "1.51", "1.5000000000000003", "1.5999999999999999", NULL},
         {"1.5", "1.6", "1.50", "1.5000000000000001", NULL}},
        {"{\"type\":\"number\",\"minimum\":2.5,\"maximum\":3.5}", {"2.5", "3", "3.5", "3.0", NULL}, {"2.4", "3.6", "4", NULL}},
        {"{\"type\":\"number\",\"exclusiveMinimum\":0.1,\"exclusiveMaximum\":0.30000000000000004}",
         {"0.2", "0.3", "0.3000000000000000", NULL}, {"0.1", "0.30000000000000004", "0.3000000000000001", NULL}},
        {"{\"type\":\"number\",\"minimum\":-1.6,\"maximum\":-1.5}", {"-1.5", "-1.6", "-1.55", NULL}, {"-1.4", "-1.7", "1.55", NULL}},
        {"{\"type\":\"number\",\"exclusiveMinimum\":-0.5,\"exclusiveMaximum\":0.5}",
         {"0", "-0.25", "0.4999", "0.0", NULL}, {"-0.5", "0.5", "-1", "1", NULL}},
        {"{\"type\":\"number\",\"minimum\":1e-10,\"maximum\":2e-10}",
         {"0.0000000001", "0.00000000015", "0.0000000002", NULL}, {"0.00000000009", "0", "0.00000000021", NULL}},
        {"{\"type\":\"number\",\"minimum\":123456.789,\"exclusiveMaximum\":123456.79}",
         {"123456.789", "123456.7895", NULL}, {"123456.79", "123456.78", "123457", NULL}},
        {"{\"type\":\"number\",\"minimum\":0.1}", {"0.1", "7", "1000000.5", NULL}, {"0.09", "0", "-1", NULL}},
        {"{\"type\":\"number\",\"exclusiveMaximum\":-0.25}", {"-0.26", "-5", "-1000.125", NULL}, {"-0.25", "0", "-0.2", NULL}},
        {"{\"type\":\"number\",\"minimum\":1.5,\"exclusiveMinimum\":1.5,\"maximum\":2}", {"1.7", "2", NULL}, {"1.5", "2.1", NULL}},
        {"{\"type\":\"number\",\"minimum\":99999999999999990,\"exclusiveMaximum\":1e17}",
         {"99999999999999990", "99999999999999999", NULL}, {"100000000000000000", "99999999999999989", NULL}},
        {"{\"type\":\"number\",\"minimum\":9007199254740990,\"maximum\":9007199254740993}",
         {"9007199254740993", "9007199254740992.0", NULL}, {"9007199254740994", "9007199254740989", NULL}},
        {"{\"type\":\"integer\",\"minimum\":9007199254740990,\"exclusiveMaximum\":9007199254740993}",
         {"9007199254740990", "9007199254740992", NULL}, {"9007199254740993", "9007199254740989", NULL}},
        {"{\"type\":\"number\",\"minimum\":1e-20,\"maximum\":2e-20}", {NULL}, {"0", "0.0000000000000001", NULL}},
        {"{\"type\":\"number\",\"minimum\":0.10000000000000002,\"maximum\":0.10000000000000002}", {NULL}, {"0.1", NULL}},
    };
    struct wk_grammar_vocab *v = tiny_vocab();
    enum { CAP = 4096 };
    char(*texts)[48] = malloc(CAP * sizeof *texts);
    uint64_t rng = 1234;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        json_t *s = json_loads(cases[ci].schema, 0, NULL);
        struct wk_grammar *g = NULL;
        struct wk_error err = {0};
        CHECK_EQ_INT(wk_grammar_from_json_schema(s, &g, &err), WK_OK); /* each one is satisfiable */
        struct wk_grammar_matcher *m = NULL;
        if (!g || wk_grammar_matcher_create(g, v, &m, NULL) != WK_OK) {
            fprintf(stderr, "  %s: %s\n", cases[ci].schema, err.msg);
            json_decref(s);
            continue;
        }
        struct pbound b[4];
        static const char *const kw[4] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
        int n = 0;
        for (int k = 0; k < 4; k++) {
            const json_t *x = json_object_get(s, kw[k]);
            b[k] = (struct pbound){x != NULL, json_is_integer(x), x ? json_integer_value(x) : 0,
                                   x ? json_number_value(x) : 0};
            if (x) n = around(b[k].d, texts, CAP, n);
        }
        for (int j = 0; cases[ci].yes[j]; j++) {
            CHECK(py_valid(cases[ci].yes[j], b)); /* the hand-worked case agrees with the reference */
            if (!matches(m, cases[ci].yes[j])) fprintf(stderr, "  %s: %s refused\n", cases[ci].schema, cases[ci].yes[j]);
            CHECK(matches(m, cases[ci].yes[j]));
        }
        for (int j = 0; cases[ci].no[j]; j++) {
            CHECK(!py_valid(cases[ci].no[j], b));
            if (matches(m, cases[ci].no[j])) fprintf(stderr, "  %s: %s accepted\n", cases[ci].schema, cases[ci].no[j]);
            CHECK(!matches(m, cases[ci].no[j]));
        }
        /* random texts between the bounds, a little past them */
        bool has_lo = b[0].has || b[1].has, has_hi = b[2].has || b[3].has;
        double lo = b[0].has ? b[0].d : b[1].d, hi = b[2].has ? b[2].d : b[3].d;
        if (!has_lo) lo = hi - 10;
        if (!has_hi) hi = lo + 10;
        double span = hi - lo > 0 ? hi - lo : fabs(lo) * 1e-15 + 1e-300;
        while (n < CAP) {
            double x = lo - span * 0.1 + span * 1.2 * (double)(check_rand_u64(&rng) >> 11) / 9007199254740992.0;
            int digits = (int)(check_rand_u64(&rng) % 17);
            snprintf(texts[n++], 48, "%.*f", digits, x);
        }
        /* "integer" asks for integer texts (2.0 would do for jsonschema; it is never written) */
        bool ints_only = strstr(cases[ci].schema, "integer") != NULL;
        int unsound = 0, missed = 0;
        for (int i = 0; i < n; i++) {
            bool got = matches(m, texts[i]), want = py_valid(texts[i], b);
            bool reach = plain(texts[i]) && !(ints_only && strchr(texts[i], '.'));
            if (got && !want && unsound++ < 3) fprintf(stderr, "  %s: invalid %s accepted\n", cases[ci].schema, texts[i]);
            if (!got && want && reach && missed++ < 3)
                fprintf(stderr, "  %s: valid %s refused\n", cases[ci].schema, texts[i]);
        }
        CHECK_EQ_INT(unsound, 0);
        CHECK_EQ_INT(missed, 0);
        wk_grammar_matcher_free(m);
        wk_grammar_free(g);
        json_decref(s);
    }
    free(texts);
    wk_grammar_vocab_free(v);
}

/* A range narrower than 16 fraction digits still gets a text, valid. */
static void test_number_narrow(void)
{
    static const char *const schemas[] = {
        "{\"type\":\"number\",\"minimum\":1e-20,\"maximum\":2e-20}",
        "{\"type\":\"number\",\"minimum\":0.10000000000000002,\"maximum\":0.10000000000000002}",
        "{\"type\":\"number\",\"exclusiveMinimum\":5e-300,\"exclusiveMaximum\":6e-300}",
    };
    struct wk_grammar_vocab *v = tiny_vocab();
    for (size_t i = 0; i < sizeof schemas / sizeof schemas[0]; i++) {
        json_t *s = json_loads(schemas[i], 0, NULL);
        char *text = NULL;
        CHECK_EQ_INT(wk_grammar_json_schema_to_gbnf(s, &text, NULL), WK_OK);
        /* the one text: root ::= ( "<number>" ) */
        char lit[64] = "";
        const char *q = text ? strchr(text, '"') : NULL;
        if (q) snprintf(lit, sizeof lit, "%.*s", (int)strcspn(q + 1, "\""), q + 1);
        struct pbound b[4];
        static const char *const kw[4] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
        for (int k = 0; k < 4; k++) {
            const json_t *x = json_object_get(s, kw[k]);
            b[k] = (struct pbound){x != NULL, false, 0, x ? json_number_value(x) : 0};
        }
        CHECK(lit[0] && py_valid(lit, b));
        struct wk_grammar *g = NULL;
        struct wk_grammar_matcher *m = NULL;
        CHECK_EQ_INT(wk_grammar_from_json_schema(s, &g, NULL), WK_OK);
        CHECK(g && wk_grammar_matcher_create(g, v, &m, NULL) == WK_OK);
        CHECK(m && matches(m, lit));
        wk_grammar_matcher_free(m);
        wk_grammar_free(g);
        wk_free(text);
        json_decref(s);
    }
    wk_grammar_vocab_free(v);
}

CHECK_MAIN(TEST(test_repeated_class), TEST(test_repeated_groups), TEST(test_refused_up_front),
           TEST(test_many_rules), TEST(test_number_ranges), TEST(test_number_narrow))
