/*
 * test-modelfile.c - the Modelfile parser and printer: every command,
 * comments, case-insensitive commands, quoted values kept byte for byte
 * across lines, typed parameters, each error message with its line,
 * format -> parse round trips (hand-picked tricky values and random ones),
 * and allocation failures at every point leaking nothing.
 */
#include "check.h"

#include "../../src/io/wk_modelfile.h"

static enum wk_status parse(const char *text, struct wk_modelfile *mf, struct wk_error *err)
{
    return wk_modelfile_parse(text, strlen(text), "Modelfile", mf, err);
}

/* Parses text, which must succeed: the checks after it index into the
 * struct, so a failure ends the run. */
static struct wk_modelfile parse_ok(const char *text)
{
    struct wk_modelfile mf;
    struct wk_error err = {0};
    enum wk_status st = parse(text, &mf, &err);
    CHECK_EQ_INT(st, WK_OK);
    if (st) {
        fprintf(stderr, "  parse failed: %s\n  input:\n%s\n", err.msg, text);
        exit(1);
    }
    return mf;
}

/* Parses text, which must fail with WK_E_FORMAT and exactly the message want. */
#define CHECK_PARSE_ERROR(text, want)                                                              \
    do {                                                                                           \
        struct wk_modelfile mf_;                                                                   \
        struct wk_error err_ = {0};                                                                \
        CHECK_EQ_INT(parse(text, &mf_, &err_), WK_E_FORMAT);                                       \
        CHECK_EQ_INT(err_.status, WK_E_FORMAT);                                                    \
        CHECK_EQ_STR(err_.msg, want);                                                              \
        CHECK(mf_.from == NULL && mf_.params == NULL && mf_.n_licenses == 0);                      \
    } while (0)

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool mf_equal(const struct wk_modelfile *a, const struct wk_modelfile *b)
{
    if (!str_eq(a->from, b->from) || !str_eq(a->draft, b->draft) ||
        !str_eq(a->template_text, b->template_text) || !str_eq(a->system, b->system) ||
        !str_eq(a->renderer, b->renderer) || !str_eq(a->parser, b->parser) ||
        !str_eq(a->requires, b->requires) || a->n_licenses != b->n_licenses ||
        a->n_messages != b->n_messages || a->n_params != b->n_params)
        return false;
    for (int32_t k = 0; k < a->n_licenses; k++)
        if (!str_eq(a->licenses[k], b->licenses[k])) return false;
    for (int32_t k = 0; k < a->n_messages; k++)
        if (!str_eq(a->messages[k].role, b->messages[k].role) ||
            !str_eq(a->messages[k].content, b->messages[k].content))
            return false;
    for (int32_t k = 0; k < a->n_params; k++) {
        const struct wk_mf_param *p = &a->params[k], *q = &b->params[k];
        if (!str_eq(p->name, q->name) || !str_eq(p->s, q->s) || p->type != q->type ||
            p->f != q->f || p->i != q->i || p->b != q->b)
            return false;
    }
    return true;
}

/* format(mf) parses back to a struct equal to mf, and formats the same. */
static void check_round_trip(const struct wk_modelfile *mf)
{
    char *text = wk_modelfile_format(mf);
    CHECK(text != NULL);
    if (!text) return;
    struct wk_modelfile back = parse_ok(text);
    bool equal = mf_equal(mf, &back);
    CHECK(equal);
    if (!equal) fprintf(stderr, "  formatted as:\n%s\n", text);
    char *again = wk_modelfile_format(&back);
    CHECK_EQ_STR(again, text);
    wk_free(again);
    wk_free(text);
    wk_modelfile_deinit(&back);
}

static void test_every_command(void)
{
    int64_t base = wk_alloc_live_bytes();
    struct wk_modelfile mf = parse_ok("FROM first.gguf\n"
                                      "FROM ./models/my model.gguf\n"
                                      "DRAFT small.gguf\n"
                                      "TEMPLATE {{ .Prompt }}\n"
                                      "SYSTEM You are terse.\n"
                                      "SYSTEM You are kind.\n"
                                      "LICENSE MIT\n"
                                      "LICENSE Apache 2.0\n"
                                      "PARAMETER temperature 0.5\n"
                                      "MESSAGE user Hi there\n"
                                      "MESSAGE assistant Hello!\n"
                                      "MESSAGE system Be brief.\n"
                                      "RENDERER qwen3-coder\n"
                                      "PARSER qwen3-coder\n"
                                      "REQUIRES 0.14.0\n");
    CHECK_EQ_STR(mf.from, "./models/my model.gguf");
    CHECK_EQ_STR(mf.draft, "small.gguf");
    CHECK_EQ_STR(mf.template_text, "{{ .Prompt }}");
    CHECK_EQ_STR(mf.system, "You are kind.");
    CHECK_EQ_INT(mf.n_licenses, 2);
    CHECK_EQ_STR(mf.licenses[0], "MIT");
    CHECK_EQ_STR(mf.licenses[1], "Apache 2.0");
    CHECK_EQ_INT(mf.n_params, 1);
    CHECK_EQ_STR(mf.params[0].name, "temperature");
    CHECK_EQ_INT(mf.n_messages, 3);
    CHECK_EQ_STR(mf.messages[0].role, "user");
    CHECK_EQ_STR(mf.messages[0].content, "Hi there");
    CHECK_EQ_STR(mf.messages[1].role, "assistant");
    CHECK_EQ_STR(mf.messages[1].content, "Hello!");
    CHECK_EQ_STR(mf.messages[2].role, "system");
    CHECK_EQ_STR(mf.renderer, "qwen3-coder");
    CHECK_EQ_STR(mf.parser, "qwen3-coder");
    CHECK_EQ_STR(mf.requires, "0.14.0");
    check_round_trip(&mf);
    wk_modelfile_deinit(&mf);
    CHECK(mf.from == NULL && mf.licenses == NULL && mf.n_params == 0);
    wk_modelfile_deinit(&mf); /* twice, and NULL */
    wk_modelfile_deinit(NULL);

    /* absent commands stay NULL; REQUIRES takes a v and semver suffixes */
    mf = parse_ok("FROM m\nREQUIRES v0.12.10-rc1\n");
    CHECK(!mf.draft && !mf.template_text && !mf.system && !mf.renderer && !mf.parser);
    CHECK(!mf.licenses && !mf.messages && !mf.params);
    CHECK_EQ_STR(mf.requires, "v0.12.10-rc1");
    wk_modelfile_deinit(&mf);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
}

static void test_comments_case_blanks(void)
{
    int64_t base = wk_alloc_live_bytes();
    struct wk_modelfile mf = parse_ok("\xef\xbb\xbf# a comment\n"
                                      "\n"
                                      "   \t\n"
                                      "  # indented comment with \"quotes\n"
                                      "from base\r\n"
                                      "\tSyStEm   keep  inner   spaces \t \r\n"
                                      "parameter\tnum_ctx\t2048\n"
                                      "System #not a comment\n"
                                      "# FROM other\n"
                                      "license  x");
    CHECK_EQ_STR(mf.from, "base");
    CHECK_EQ_STR(mf.system, "#not a comment");
    CHECK_EQ_INT(mf.n_params, 1);
    CHECK_EQ_INT(mf.params[0].i, 2048);
    CHECK_EQ_INT(mf.n_licenses, 1);
    CHECK_EQ_STR(mf.licenses[0], "x");
    wk_modelfile_deinit(&mf);

    mf = parse_ok("FROM a\nSYSTEM   keep  inner   spaces \t \r\n");
    CHECK_EQ_STR(mf.system, "keep  inner   spaces");
    wk_modelfile_deinit(&mf);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
}

static void test_quoted_values(void)
{
    int64_t base = wk_alloc_live_bytes();
    struct wk_modelfile mf = parse_ok("FROM \"my model.gguf\"  \n"
                                      "TEMPLATE \"\"\"{{ if .System }}<|system|>\n"
                                      "{{ .System }}\n"
                                      "\n"
                                      "  {{ end }}\"\"\"\n"
                                      "SYSTEM \"line one\n"
                                      "  \\\"quoted\\\" \\\"two\\\" back\\\\slash \\n kept\n"
                                      "\"\n"
                                      "MESSAGE user \"\"\"first line\n"
                                      "\n"
                                      "   third, indented\n"
                                      "\t\n"
                                      "fifth \"\"\"   \n"
                                      "MESSAGE assistant \"\"\"\"\"\"\n"
                                      "LICENSE \"\"\n"
                                      "LICENSE \"\"\"\"inner\" quotes\"\"\"\n"
                                      "LICENSE \"tab\tand é ✓\"\n"
                                      "PARAMETER stop \"\"\"\n"
                                      "\n"
                                      "\"\"\"\n");
    CHECK_EQ_STR(mf.from, "my model.gguf");
    CHECK_EQ_STR(mf.template_text, "{{ if .System }}<|system|>\n{{ .System }}\n\n  {{ end }}");
    CHECK_EQ_STR(mf.system, "line one\n  \"quoted\" \"two\" back\\slash \\n kept\n");
    CHECK_EQ_INT(mf.n_messages, 2);
    CHECK_EQ_STR(mf.messages[0].content, "first line\n\n   third, indented\n\t\nfifth ");
    CHECK_EQ_STR(mf.messages[1].content, "");
    CHECK_EQ_INT(mf.n_licenses, 3);
    CHECK_EQ_STR(mf.licenses[0], "");
    CHECK_EQ_STR(mf.licenses[1], "\"inner\" quotes");
    CHECK_EQ_STR(mf.licenses[2], "tab\tand é ✓");
    CHECK_EQ_STR(mf.params[0].s, "\n\n");
    check_round_trip(&mf);
    wk_modelfile_deinit(&mf);

    /* a bare value may hold quotes after its first byte; CRLF inside quotes is kept */
    mf = parse_ok("FROM a\nSYSTEM say \"hi\" \\\"\r\nTEMPLATE \"\"\"x\r\ny\"\"\"\r\n");
    CHECK_EQ_STR(mf.system, "say \"hi\" \\\"");
    CHECK_EQ_STR(mf.template_text, "x\r\ny");
    check_round_trip(&mf);
    wk_modelfile_deinit(&mf);

    /* lines are still counted right after multi-line values */
    CHECK_PARSE_ERROR("FROM a\nSYSTEM \"\"\"1\n2\n3\"\"\"\nTEMPLATE \"a\nb\"\nBOGUS x\n",
                      "Modelfile:7: command must be one of FROM, DRAFT, PARAMETER, TEMPLATE, "
                      "SYSTEM, MESSAGE, LICENSE, ADAPTER (got 'BOGUS')");
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
}

static void test_params(void)
{
    int64_t base = wk_alloc_live_bytes();
    struct wk_modelfile mf = parse_ok("FROM m\n"
                                      "PARAMETER stop \"<|im_end|>\"\n"
                                      "PARAMETER temperature 0.7\n"
                                      "PARAMETER stop \"<|im_end|>\"\n"
                                      "PARAMETER top_k 20\n"
                                      "PARAMETER seed -1\n"
                                      "PARAMETER num_ctx 1048576\n"
                                      "PARAMETER use_mmap false\n"
                                      "PARAMETER numa T\n"
                                      "PARAMETER stop <end of turn>\n"
                                      "PARAMETER temperature 1e-1\n"
                                      "PARAMETER min_p \"0.05\"\n");
    CHECK_EQ_INT(mf.n_params, 10);
    static const char *const names[] = {"stop",    "temperature", "stop", "top_k", "seed",
                                        "num_ctx", "use_mmap",    "numa", "stop",  "min_p"};
    for (int32_t k = 0; k < mf.n_params && k < 10; k++)
        CHECK_EQ_STR(mf.params[k].name, names[k]);
    /* both stop lines, unquoted; the third after them; temperature replaced in place */
    CHECK_EQ_STR(mf.params[0].s, "<|im_end|>");
    CHECK_EQ_INT(mf.params[0].type, WK_MF_STRING);
    CHECK_EQ_STR(mf.params[2].s, "<|im_end|>");
    CHECK_EQ_INT(mf.params[1].type, WK_MF_FLOAT);
    CHECK_NEAR(mf.params[1].f, 0.1, 0, 0);
    CHECK_EQ_STR(mf.params[1].s, "1e-1");
    CHECK_EQ_INT(mf.params[3].type, WK_MF_INT);
    CHECK_EQ_INT(mf.params[3].i, 20);
    CHECK(mf.params[4].i == -1);
    CHECK(mf.params[5].i == 1048576); /* the largest num_ctx the options table allows */
    CHECK_EQ_INT(mf.params[6].type, WK_MF_BOOL);
    CHECK(!mf.params[6].b);
    CHECK(mf.params[7].b);
    CHECK_EQ_STR(mf.params[8].s, "<end of turn>");
    CHECK_NEAR(mf.params[9].f, 0.05, 0, 0);
    CHECK_EQ_STR(mf.params[9].s, "0.05");
    int n_stop = 0;
    for (int32_t k = 0; k < mf.n_params; k++)
        n_stop += strcmp(mf.params[k].name, "stop") == 0;
    CHECK_EQ_INT(n_stop, 3);
    check_round_trip(&mf);
    wk_modelfile_deinit(&mf);

    enum wk_mf_type t = WK_MF_STRING;
    CHECK(wk_modelfile_param_type("repeat_penalty", &t) && t == WK_MF_FLOAT);
    CHECK(wk_modelfile_param_type("num_thread", &t) && t == WK_MF_INT);
    CHECK(wk_modelfile_param_type("use_mmap", &t) && t == WK_MF_BOOL);
    CHECK(wk_modelfile_param_type("stop", &t) && t == WK_MF_STRING);
    CHECK(wk_modelfile_param_type("typical_p", NULL));
    CHECK(!wk_modelfile_param_type("Temperature", &t) && t == WK_MF_STRING);
    CHECK(!wk_modelfile_param_type("mirostat", NULL));
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
}

static void test_add_param(void)
{
    int64_t base = wk_alloc_live_bytes();
    struct wk_modelfile mf = {0};
    struct wk_error err = {0};
    CHECK_EQ_INT(wk_modelfile_add_param(&mf, "stop", "a", &err), WK_OK);
    CHECK_EQ_INT(wk_modelfile_add_param(&mf, "num_predict", "5", &err), WK_OK);
    CHECK_EQ_INT(wk_modelfile_add_param(&mf, "stop", "\"b\"\n", &err), WK_OK);
    CHECK_EQ_INT(wk_modelfile_add_param(&mf, "num_predict", "-1", &err), WK_OK);
    CHECK_EQ_INT(mf.n_params, 3);
    CHECK_EQ_STR(mf.params[1].name, "num_predict");
    CHECK_EQ_INT(mf.params[1].i, -1);
    CHECK_EQ_STR(mf.params[1].s, "-1");
    CHECK_EQ_STR(mf.params[2].s, "\"b\"\n");

    CHECK_EQ_INT(wk_modelfile_add_param(&mf, "mirostat", "1", &err), WK_E_INVALID);
    CHECK_EQ_STR(err.msg, "unknown parameter 'mirostat'");
    /* a sampler wick does not have: only its off value (1 for typical_p) */
    CHECK_EQ_INT(wk_modelfile_add_param(&mf, "typical_p", "0.5", &err), WK_E_INVALID);
    CHECK(strstr(err.msg, "typical_p") && strstr(err.msg, "does not implement locally typical sampling"));
    CHECK_EQ_INT(wk_modelfile_add_param(&mf, "top_p", "high", &err), WK_E_INVALID);
    CHECK_EQ_STR(err.msg, "invalid float value 'high' for parameter top_p");
    CHECK_EQ_INT(wk_modelfile_add_param(&mf, "numa", "yes", &err), WK_E_INVALID);
    CHECK_EQ_STR(err.msg, "invalid bool value 'yes' for parameter numa");
    CHECK_EQ_INT(wk_modelfile_add_param(&mf, "stop", "a\x1b[2J", &err), WK_E_INVALID);
    CHECK_EQ_STR(err.msg, "parameter stop: value holds a control character or invalid UTF-8");
    CHECK_EQ_INT(wk_modelfile_add_param(&mf, "num_predict", "5", NULL), WK_OK);
    CHECK_EQ_INT(mf.n_params, 3);
    CHECK_EQ_INT(mf.params[1].i, 5);

    /* a struct built by hand formats to text that parses back equal */
    mf.from = wk_strdup(" spaced path ");
    check_round_trip(&mf);
    wk_modelfile_deinit(&mf);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
}

static void test_errors(void)
{
    int64_t base = wk_alloc_live_bytes();
    CHECK_PARSE_ERROR("FROM a\n\nINSTRUCTION x\n",
                      "Modelfile:3: command must be one of FROM, DRAFT, PARAMETER, TEMPLATE, "
                      "SYSTEM, MESSAGE, LICENSE, ADAPTER (got 'INSTRUCTION')");
    CHECK_PARSE_ERROR("FROM: a\n", "Modelfile:1: command must be one of FROM, DRAFT, PARAMETER, "
                                   "TEMPLATE, SYSTEM, MESSAGE, LICENSE, ADAPTER (got 'FROM:')");
    CHECK_PARSE_ERROR("FROM a\nadapter lora.gguf\n", "Modelfile:2: ADAPTER is not supported yet");
    CHECK_PARSE_ERROR("", "Modelfile: no FROM line");
    CHECK_PARSE_ERROR("# only\nSYSTEM x\n", "Modelfile: no FROM line");
    CHECK_PARSE_ERROR("FROM a\nSYSTEM \"\"\"never\nclosed\n\n",
                      "Modelfile:2: unterminated \"\"\" quote");
    CHECK_PARSE_ERROR("FROM a\n\nTEMPLATE \"never\nclosed \\\"\n",
                      "Modelfile:3: unterminated quote");
    CHECK_PARSE_ERROR("FROM a\nSYSTEM \"\"\"a\nb\"\"\" c\n",
                      "Modelfile:3: unexpected text after the closing quote");
    CHECK_PARSE_ERROR("FROM a\nSYSTEM \"a\"b\"\n",
                      "Modelfile:2: unexpected text after the closing quote");
    CHECK_PARSE_ERROR("FROM a\nSYSTEM \"\"\"x\"\"\"\"\n",
                      "Modelfile:2: unexpected text after the closing quote");
    CHECK_PARSE_ERROR("FROM a\nSYSTEM\n", "Modelfile:2: missing value after SYSTEM");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER  \n", "Modelfile:2: missing value after PARAMETER");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER top_k\n", "Modelfile:2: missing value after top_k");
    CHECK_PARSE_ERROR("FROM a\nSYSTEM x\x01y\n",
                      "Modelfile:2: control character or invalid UTF-8 (byte 0x01)");
    CHECK_PARSE_ERROR("FROM a\nSYSTEM \"\"\"x\n\x1b[2J\"\"\"\n",
                      "Modelfile:3: control character or invalid UTF-8 (byte 0x1b)");
    CHECK_PARSE_ERROR("FROM a\rSYSTEM x\n",
                      "Modelfile:1: control character or invalid UTF-8 (byte 0x0d)");
    CHECK_PARSE_ERROR("FROM a\nSYSTEM \xc3\x28\n",
                      "Modelfile:2: control character or invalid UTF-8 (byte 0xc3)");
    CHECK_PARSE_ERROR("FROM a\nSYSTEM \xc2\x85\n",
                      "Modelfile:2: control character or invalid UTF-8 (byte 0xc2)");
    {
        struct wk_modelfile mf;
        struct wk_error err;
        CHECK_EQ_INT(wk_modelfile_parse("FROM a\0b", 8, NULL, &mf, &err), WK_E_FORMAT);
        CHECK_EQ_STR(err.msg, "Modelfile:1: control character or invalid UTF-8 (byte 0x00)");
        CHECK_EQ_INT(wk_modelfile_parse("SYSTEM x", 8, "models/x/Modelfile", &mf, &err),
                     WK_E_FORMAT);
        CHECK_EQ_STR(err.msg, "models/x/Modelfile: no FROM line");
        CHECK_EQ_INT(wk_modelfile_parse("FROM a\nFOO", 10, "m.txt", &mf, NULL), WK_E_FORMAT);
    }
    CHECK_PARSE_ERROR("FROM a\nPARAMETER mirostat 2\n",
                      "Modelfile:2: unknown parameter 'mirostat'");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER Temperature 1\n",
                      "Modelfile:2: unknown parameter 'Temperature'");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER temperature abc\n",
                      "Modelfile:2: invalid float value 'abc' for parameter temperature");
    CHECK_PARSE_ERROR("FROM a\n\n\nPARAMETER top_p inf\n",
                      "Modelfile:4: invalid float value 'inf' for parameter top_p");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER top_p nan\n",
                      "Modelfile:2: invalid float value 'nan' for parameter top_p");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER top_p 1e999\n",
                      "Modelfile:2: invalid float value '1e999' for parameter top_p");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER top_p \" 0.5\"\n",
                      "Modelfile:2: invalid float value ' 0.5' for parameter top_p");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER num_ctx 1.5\n",
                      "Modelfile:2: invalid int value '1.5' for parameter num_ctx");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER seed 9223372036854775808\n",
                      "Modelfile:2: invalid int value '9223372036854775808' for parameter seed");
    /* the options table's ranges and stop limits (wk_options.h): a stored
     * model's parameters can always run */
    CHECK_PARSE_ERROR("FROM a\nPARAMETER temperature -3\n",
                      "Modelfile:2: option 'temperature' must be a number between 0 and 100, not -3");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER num_ctx 1000000000\n",
                      "Modelfile:2: option 'num_ctx' must be an integer between 16 and 1048576, not 1000000000");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER num_ctx -5\n",
                      "Modelfile:2: option 'num_ctx' must be an integer between 16 and 1048576, not -5");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER seed -5\n",
                      "Modelfile:2: option 'seed' must be an integer between -1 and 9.2233720368547748e+18, not -5");
    {
        char text[4096] = "FROM a\n";
        for (int k = 0; k < 17; k++) snprintf(text + strlen(text), sizeof text - strlen(text), "PARAMETER stop s%d\n", k);
        CHECK_PARSE_ERROR(text, "Modelfile:18: more than 16 stop parameters");
        char long_stop[1200] = "FROM a\nPARAMETER stop ";
        memset(long_stop + strlen(long_stop), 'x', 1030);
        long_stop[sizeof long_stop - 2] = '\n';
        long_stop[sizeof long_stop - 1] = '\0';
        CHECK_PARSE_ERROR(long_stop, "Modelfile:2: a stop parameter longer than 1024 bytes");
    }
    CHECK_PARSE_ERROR("FROM a\nPARAMETER top_k \"\"\n",
                      "Modelfile:2: invalid int value '' for parameter top_k");
    CHECK_PARSE_ERROR("FROM a\nPARAMETER use_mmap yes\n",
                      "Modelfile:2: invalid bool value 'yes' for parameter use_mmap");
    CHECK_PARSE_ERROR("FROM a\nMESSAGE tool hi\n",
                      "Modelfile:2: message role must be one of system, user, assistant");
    CHECK_PARSE_ERROR("FROM a\nMESSAGE User hi\n",
                      "Modelfile:2: message role must be one of system, user, assistant");
    CHECK_PARSE_ERROR("FROM a\nMESSAGE\n", "Modelfile:2: missing value after MESSAGE");
    CHECK_PARSE_ERROR("FROM a\nMESSAGE user\n", "Modelfile:2: missing value after user");
    CHECK_PARSE_ERROR("FROM a\nREQUIRES latest\n",
                      "Modelfile:2: REQUIRES must be a version like 0.14.0 (got 'latest')");
    CHECK_PARSE_ERROR("FROM a\nREQUIRES 0.14\n",
                      "Modelfile:2: REQUIRES must be a version like 0.14.0 (got '0.14')");
    CHECK_PARSE_ERROR("FROM a\nREQUIRES 0.14.0-\n",
                      "Modelfile:2: REQUIRES must be a version like 0.14.0 (got '0.14.0-')");
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
}

static void test_format(void)
{
    int64_t base = wk_alloc_live_bytes();
    struct wk_modelfile mf = parse_ok("LICENSE l\n"
                                      "REQUIRES 0.1.2\n"
                                      "MESSAGE user \"\"\" hi\"\"\"\n"
                                      "SYSTEM \"s \\\"q\\\"\"\n"
                                      "PARAMETER stop \"a\\\"\\\"\\\"b\"\n"
                                      "TEMPLATE \"\"\"t\n\"\"\"\n"
                                      "FROM f\n"
                                      "DRAFT d\n"
                                      "PARSER p\n"
                                      "RENDERER r\n"
                                      "PARAMETER top_k 3\n"
                                      "LICENSE \"\"\n");
    char *text = wk_modelfile_format(&mf);
    CHECK_EQ_STR(text, "FROM f\n"
                       "DRAFT d\n"
                       "PARAMETER stop \"a\\\"\\\"\\\"b\"\n"
                       "PARAMETER top_k 3\n"
                       "TEMPLATE \"\"\"t\n\"\"\"\n"
                       "SYSTEM \"s \\\"q\\\"\"\n"
                       "MESSAGE user \"\"\" hi\"\"\"\n"
                       "LICENSE l\n"
                       "LICENSE \"\"\n"
                       "RENDERER r\n"
                       "PARSER p\n"
                       "REQUIRES 0.1.2\n");
    wk_free(text);
    wk_modelfile_deinit(&mf);

    struct wk_modelfile empty = {0};
    text = wk_modelfile_format(&empty);
    CHECK_EQ_STR(text, "");
    wk_free(text);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
}

static void test_round_trips(void)
{
    int64_t base = wk_alloc_live_bytes();
    static const char *const inputs[] = {
        "FROM a\nSYSTEM \"\"\"ends with a quote\"\"\"\"\n", /* not valid: checked below */
        "FROM a\nSYSTEM \"ends with a quote\\\"\"\n",
        "FROM a\nSYSTEM \"has \\\"\\\"\\\" inside\"\nTEMPLATE \"\\\\\"\n",
        "FROM a\nSYSTEM \"trailing spaces   \"\nLICENSE \"  leading\"\n",
        "FROM a\nSYSTEM \"\ttabs\t\"\nLICENSE a\tb\n",
        "FROM \"\"\"日本語 ✓ émoji 🎉\"\"\"\nMESSAGE user \"\"\"\n\n\"\"\"\n",
        "FROM a\nMESSAGE assistant \"\\\\\\\\ and \\\\n and \\\"\"\n",
        "FROM a\nPARAMETER stop \"\"\"\"\"\"\nPARAMETER stop \"\\\"\"\nPARAMETER stop \\\n",
        "FROM a\nTEMPLATE \"\"\"{{- range .Messages }}\n  <|im_start|>{{ .Role }}\n{{ .Content "
        "}}<|im_end|>\n{{ end }}\"\"\"\n",
        "FROM a\nSYSTEM \"\\\"\\\"\\\"\"\nLICENSE \"\\\"\\\"\"\n",
    };
    for (size_t k = 0; k < sizeof inputs / sizeof inputs[0]; k++) {
        struct wk_modelfile mf;
        struct wk_error err;
        if (parse(inputs[k], &mf, &err) != WK_OK) {
            CHECK_EQ_INT(k, 0);
            continue;
        }
        check_round_trip(&mf);
        wk_modelfile_deinit(&mf);
    }
    struct wk_modelfile mf = parse_ok(inputs[9]);
    CHECK_EQ_STR(mf.system, "\"\"\"");
    CHECK_EQ_STR(mf.licenses[0], "\"\"");
    wk_modelfile_deinit(&mf);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
}

/* Random values built from the pieces that trip printers up. */
static char *random_value(uint64_t *rng)
{
    static const char *const pieces[] = {"\"",   "\"\"\"", "\\", " ", "\t", "\n",
                                         "\r\n", "a",      "é",  "#", "'",  "<|im_end|>"};
    char buf[256] = "";
    int n = (int)(check_rand_u64(rng) % 8);
    for (int k = 0; k < n; k++)
        strcat(buf, pieces[check_rand_u64(rng) % (sizeof pieces / sizeof pieces[0])]);
    return wk_strdup(buf);
}

static void test_random_round_trips(void)
{
    int64_t base = wk_alloc_live_bytes();
    uint64_t rng = 42;
    for (int iter = 0; iter < 2000; iter++) {
        struct wk_modelfile mf = {0};
        mf.from = random_value(&rng);
        mf.system = random_value(&rng);
        mf.template_text = random_value(&rng);
        for (int k = 0; k < 3; k++) {
            char *v = random_value(&rng);
            CHECK_EQ_INT(wk_modelfile_add_param(&mf, "stop", v, NULL), WK_OK);
            wk_free(v);
        }
        mf.licenses = wk_malloc(sizeof *mf.licenses);
        mf.licenses[mf.n_licenses++] = random_value(&rng);
        mf.messages = wk_malloc(sizeof *mf.messages);
        mf.messages[mf.n_messages++] =
            (struct wk_mf_message){wk_strdup("user"), random_value(&rng)};
        int failures = g_check_failures;
        check_round_trip(&mf);
        wk_modelfile_deinit(&mf);
        if (g_check_failures != failures) break;
    }
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
}

static void test_alloc_failures(void)
{
    static const char text[] = "FROM a\nDRAFT d\nPARAMETER stop x\nPARAMETER stop y\n"
                               "PARAMETER top_k 1\nPARAMETER top_k 2\nMESSAGE user \"hi\"\n"
                               "LICENSE l\nLICENSE m\nSYSTEM \"\"\"s\ns\"\"\"\n";
    int64_t base = wk_alloc_live_bytes();
    int n_fail = 0;
    for (int64_t n = 1; n < 100; n++) {
        struct wk_modelfile mf;
        struct wk_error err;
        wk_alloc_fail_after(n);
        enum wk_status st = parse(text, &mf, &err);
        char *formatted = st == WK_OK ? wk_modelfile_format(&mf) : NULL;
        wk_alloc_fail_after(0);
        if (st == WK_OK && formatted) {
            wk_free(formatted);
            wk_modelfile_deinit(&mf);
            break;
        }
        n_fail++;
        if (st != WK_OK) {
            CHECK_EQ_INT(st, WK_E_NOMEM);
            CHECK(mf.from == NULL && mf.params == NULL);
        }
        wk_modelfile_deinit(&mf);
        CHECK_EQ_INT(wk_alloc_live_bytes(), base);
    }
    CHECK(n_fail > 10);
    CHECK_EQ_INT(wk_alloc_live_bytes(), base);
}

CHECK_MAIN(TEST(test_every_command), TEST(test_comments_case_blanks), TEST(test_quoted_values),
           TEST(test_params), TEST(test_add_param), TEST(test_errors), TEST(test_format),
           TEST(test_round_trips), TEST(test_random_round_trips), TEST(test_alloc_failures))
