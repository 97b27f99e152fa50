/*
 * test-gotmpl-types.c - Ollama's typed template data in the Go template
 * engine (wk_gotmpl_render_chat): out of memory anywhere while reading
 * fields of the typed values, making their zero values, printing them
 * (Go structs, String methods, printf's verbs) and calling toTypeScriptType
 * gives WK_E_NOMEM and leaks nothing, and a run that succeeds gives the
 * same bytes as one without failures; the provenance runs mark message
 * content inside the JSON a String method prints. What the outputs are is
 * checked against Go's text/template by tests/template/test_gotemplates.py
 * (go_cases.py, go_expected.json).
 */
#include "check.h"

#include "../../src/runtime/wk_gotmpl.h"

static const char *const MESSAGES =
    "[{\"role\": \"user\", \"content\": \"Hi <x>\"}, {\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": "
    "[{\"function\": {\"name\": \"get\", \"arguments\": {\"city\": \"Paris\", \"n\": 3, \"d\": {\"b\": [1, null]}}}},"
    " {\"id\": \"c2\", \"function\": {\"index\": 1, \"name\": \"ping\"}}]}, "
    "{\"role\": \"tool\", \"content\": \"22\", \"tool_name\": \"get\"}]";

static const char *const TOOLS =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get\", \"description\": \"Weather <now>\", \"parameters\": "
    "{\"type\": \"object\", \"required\": [\"city\"], \"$defs\": {\"z\": 1, \"a\": 2}, \"properties\": {"
    "\"city\": {\"type\": \"string\", \"description\": \"The city\"}, "
    "\"n\": {\"type\": [\"integer\", \"null\"], \"enum\": [1, 2.5]}, "
    "\"o\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"array\", \"items\": {\"type\": \"number\"}}]}, "
    "\"f\": {\"type\": \"object\", \"properties\": {\"z\": {\"type\": \"boolean\"}}, \"required\": [\"z\"]}}}}}, "
    "{\"type\": \"function\", \"function\": {\"name\": \"ping\", \"parameters\": {\"type\": \"object\"}}}]";

/* Templates that go through every typed path. */
static const char *const TEMPLATES[] = {
    "{{ range .Tools }}{{ . }}|{{ .Function }}|{{ .Function.Parameters }}|{{ printf \"%+v %q %10.20s\" "
    ".Function.Parameters.Properties .Function .Function }}|{{ json .Function.Parameters.Properties }}\n{{ end }}"
    "{{ range .Messages }}{{ . }}|{{ printf \"%+v|%v|%T\" . .ToolCalls .Images }}|{{ json . }}\n{{ end }}",
    "{{ range .Tools }}{{ range $k, $v := .Function.Parameters.Properties }}{{ $k }} {{ $v }} {{ $v.Type }} "
    "{{ $v.Enum }} {{ $v.Items }} {{ $v.Properties }} {{ json $v.Required }} {{ toTypeScriptType $v }} "
    "{{ range $v.AnyOf }}{{ toTypeScriptType . }};{{ end }}{{ printf \"%d %x %s\" $v $v.Properties $v }}\n"
    "{{ end }}{{ .Function.Parameters.Properties.nope }}{{ with index .Function.Parameters.Properties \"no\" }}"
    "{{ . }}{{ end }}{{ end }}{{ range .Messages }}{{ range .ToolCalls }}{{ . }} {{ .Function.Arguments }} "
    "{{ range $k, $v := .Function.Arguments }}{{ $k }}={{ $v }};{{ end }}{{ end }}{{ end }}",
    "{{ slice .Tools 1 }}{{ len .Tools }}{{ printf \"%U %#U %*d %[1]d %.*f %0999999999d\" 233 233 5 3 2 1.5 }}"
    "{{ range .Messages }}{{ .Nope }}{{ end }}",
};

/* The output of t over the test data (NULL on error; *st the status). */
static char *render(const struct wk_gotmpl *t, const json_t *m, const json_t *tl, enum wk_status *st,
                    struct wk_gotmpl_run **runs, size_t *n_runs)
{
    char *out = NULL;
    size_t len = 0;
    *st = wk_gotmpl_render_chat(t, m, tl, &out, &len, runs, n_runs, NULL);
    return out;
}

static void test_nomem(void)
{
    json_t *m = json_loads(MESSAGES, 0, NULL), *tl = json_loads(TOOLS, 0, NULL);
    CHECK(m && tl);
    for (size_t i = 0; i < sizeof TEMPLATES / sizeof TEMPLATES[0]; i++) {
        struct wk_gotmpl *t = NULL;
        CHECK_EQ_INT(wk_gotmpl_parse(TEMPLATES[i], strlen(TEMPLATES[i]), &t, NULL), WK_OK);
        enum wk_status want_st;
        struct wk_gotmpl_run *runs = NULL;
        size_t n_runs = 0;
        char *want = render(t, m, tl, &want_st, &runs, &n_runs);
        wk_free(runs);
        /* the first two render, the third stops at .Nope */
        CHECK_EQ_INT(want_st, i < 2 ? WK_OK : WK_E_INVALID);
        int64_t live = wk_alloc_live_bytes();
        int ok = 0;
        for (int64_t k = 1; k < 3000 && ok < 3; k++) {
            enum wk_status st;
            wk_alloc_fail_after(k);
            char *out = render(t, m, tl, &st, &runs, &n_runs);
            wk_alloc_fail_after(0);
            CHECK(st == want_st || st == WK_E_NOMEM);
            if (st == WK_OK) CHECK_EQ_STR(out, want);
            else CHECK(out == NULL && runs == NULL);
            ok += st == want_st;
            wk_free(out);
            wk_free(runs);
        }
        CHECK(ok > 0);
        CHECK_EQ_INT(wk_alloc_live_bytes(), live);
        wk_free(want);
        wk_gotmpl_free(t);
    }
    json_decref(m);
    json_decref(tl);
}

/* Whether the bytes of needle in out lie in content runs (all), or in
 * runs that are not content (!all). */
static bool marked(const char *out, const struct wk_gotmpl_run *runs, size_t n, const char *needle, bool content)
{
    const char *at = strstr(out, needle);
    if (!at) return false;
    for (size_t b = (size_t)(at - out); b < (size_t)(at - out) + strlen(needle); b++) {
        size_t i = 0;
        while (i < n && !(runs[i].off <= b && b < runs[i].off + runs[i].len)) i++;
        if (i == n || runs[i].content != content) return false;
    }
    return true;
}

static void test_provenance(void)
{
    const char *tmpl = "{{ range .Tools }}{{ .Function }}{{ end }}|{{ range .Messages }}{{ printf \"%q\" . }}"
                       "{{ range .ToolCalls }}{{ .Function }}{{ end }}{{ end }}";
    json_t *m = json_loads(MESSAGES, 0, NULL), *tl = json_loads(TOOLS, 0, NULL);
    struct wk_gotmpl *t = NULL;
    CHECK_EQ_INT(wk_gotmpl_parse(tmpl, strlen(tmpl), &t, NULL), WK_OK);
    enum wk_status st;
    struct wk_gotmpl_run *runs = NULL;
    size_t n = 0;
    char *out = render(t, m, tl, &st, &runs, &n);
    CHECK_EQ_INT(st, WK_OK);
    if (out) {
        /* a tool's description (escaped as JSON) is content, its name not */
        CHECK(marked(out, runs, n, "Weather \\u003cnow\\u003e", true));
        CHECK(marked(out, runs, n, "\"name\":\"get\"", false));
        /* a message printed with %q (a Go struct): its content quoted is content, its role not */
        CHECK(marked(out, runs, n, "Hi <x>", true));
        CHECK(marked(out, runs, n, "user", false));
        /* a call's arguments inside a struct printed: their strings are content */
        CHECK(marked(out, runs, n, "Paris", true));
    }
    wk_free(out);
    wk_free(runs);
    wk_gotmpl_free(t);
    json_decref(m);
    json_decref(tl);
}

CHECK_MAIN(TEST(test_nomem), TEST(test_provenance))
