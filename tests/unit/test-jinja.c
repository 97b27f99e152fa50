/*
 * test-jinja.c - the Jinja engine (src/runtime/wk_jinja.h): small templates
 * whose expected output was computed with Python's jinja2 3.1.6 in
 * ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
 * extensions=[loopcontrols]) with x=1, y=None (python3 -c, pasted), and
 * the error and limit paths.
 */
#include "check.h"

#include "../../src/runtime/wk_jinja.h"

/* Renders src with {"x": 1, "y": null}; returns the output (caller frees)
 * or NULL, with the status in *st. */
static char *render(const char *src, enum wk_status *st)
{
    struct wk_error err;
    struct wk_jinja *t = NULL;
    char *out = NULL;
    *st = wk_jinja_parse(src, strlen(src), &t, &err);
    if (*st) return NULL;
    json_t *vars = json_pack("{s:i, s:n}", "x", 1, "y");
    *st = wk_jinja_render(t, vars, &out, NULL, &err);
    json_decref(vars);
    wk_jinja_free(t);
    return out;
}

static void expect(const char *src, const char *want)
{
    enum wk_status st;
    char *out = render(src, &st);
    CHECK_EQ_INT(st, WK_OK);
    CHECK_EQ_STR(out, want);
    wk_free(out);
}

static void test_values(void)
{
    expect("{{ [1, \"a\", none, true] }}|{{ {\"a\": 1} }}|{{ 0.1 + 0.2 }}|{{ 1e20 }}|{{ 7 // 2 }}|{{ -7 % 3 }}|{{ 7 / 2 }}",
           "[1, 'a', None, True]|{'a': 1}|0.30000000000000004|1e+20|3|2|3.5");
    expect("{{ \"x\" if false }}|{{ 0 or \"b\" }}|{{ 1 and 2 }}|{{ not none }}|{{ \"a\" in \"cat\" }}|{{ 2 not in [1] }}",
           "|b|2|True|True|True");
    expect("{{ x is defined }}{{ y is none }}{{ u is undefined }}{{ u }}{{ \"s\" is string }}{{ {} is mapping }}",
           "TrueTrueTrueTrueTrue");
}

static void test_control(void)
{
    expect("{% for x in [1,2,3] %}{{ loop.index }}{{ loop.first }}{{ loop.last }}{% if x == 2 %}{% continue %}{% endif %}-{% endfor %}",
           "1TrueFalse-2FalseFalse3FalseTrue-");
    expect("{% set ns = namespace(n=0) %}{% for i in range(5) %}{% set ns.n = ns.n + i %}{% if i == 3 %}{% break %}{% endif %}{% endfor %}{{ ns.n }}",
           "6");
    expect("{% macro m(a, b=\"B\") %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(2, b=3) }}", "[1B][23]");
    expect("{% set x %}  hi {% endset %}[{{ x }}]{{ x|trim|upper }}", "[  hi ]HI");
    expect("{% raw %}{{ no }}{% endraw %}", "{{ no }}");
    /* jinja2: a set inside a loop body does not leak out of the iteration */
    expect("{% set x = 0 %}{% for i in [1,2] %}{{ x }}{% set x = i %}{% endfor %}{{ x }}", "000");
}

static void test_whitespace(void)
{
    expect("  {% if true %}\n  yes\n  {% endif %}\nend", "  yes\nend");
    expect("a  {{- \" b \" -}}  c {#- x -#} d", "a b cd");
    expect("line\n", "line"); /* keep_trailing_newline=False */
}

static void test_filters_methods(void)
{
    expect("{{ \"a,b,,c\".split(\",\") }}{{ \" x \".strip() }}{{ \"Hello\"[1:4] }}{{ \"abc\"[::-1] }}{{ \"ab\" ~ 1 }}",
           "['a', 'b', '', 'c']xellcbaab1");
    expect("{{ [3,1,2]|sort|join(\",\") }}{{ [{\"n\":1},{\"n\":2}]|selectattr(\"n\",\"equalto\",2)|list }}{{ [{\"n\":1}]|map(attribute=\"n\")|list }}",
           "1,2,3[{'n': 2}][1]");
    /* transformers' tojson: json.dumps(x, ensure_ascii=False), keys in order */
    expect("{{ {\"b\": [1, 2], \"a\": \"\xc3\xa9\"}|tojson }}|{{ [1]|tojson(indent=2) }}",
           "{\"b\": [1, 2], \"a\": \"\xc3\xa9\"}|[\n  1\n]");
}

static void test_errors(void)
{
    enum wk_status st;
    char *out = render("{% if x %}", &st);
    CHECK_EQ_INT(st, WK_E_FORMAT);
    CHECK(out == NULL);
    out = render("{{ raise_exception('no') }}", &st);
    CHECK_EQ_INT(st, WK_E_INVALID);
    out = render("{{ u.x }}", &st);
    CHECK_EQ_INT(st, WK_E_INVALID);
    out = render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", &st);
    CHECK_EQ_INT(st, WK_E_RANGE);
    out = render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", &st);
    CHECK_EQ_INT(st, WK_E_RANGE);
    out = render("{% set s = 'x' * 1000000 %}{% for i in range(100) %}{{ s ~ s }}{% endfor %}", &st);
    CHECK_EQ_INT(st, WK_E_RANGE);
    CHECK(out == NULL);
}

CHECK_MAIN(TEST(test_values), TEST(test_control), TEST(test_whitespace), TEST(test_filters_methods), TEST(test_errors))
