/*
 * test-gotmpl.c - the Go text/template engine (wk_gotmpl.h): Ollama-style
 * TEMPLATEs (plain, ChatML, Llama 3 with tools, Mistral with [INST] and
 * tool calls, json, $ inside range, trimming, slice / index / len / eq,
 * printf, with, variables, range over objects, break / continue), then
 * errors naming the line and hostile templates stopping with WK_E_RANGE.
 *
 * Every expected output in the table below was computed by Go itself
 * (go1.19.8, text/template) with a small program: template.New("").Funcs(
 * {"json": func(v any) string { b, _ := json.Marshal(v); return string(b) }})
 * .Parse(tmpl).Execute(&out, data), data being the JSON below decoded with
 * UseNumber into map[string]any with integers as int and reals as float64
 * (how this engine sees jansson integers and reals). Objects in the data
 * have their keys in sorted order, so json's output (Go sorts map keys;
 * this engine keeps the object's order) agrees.
 */
#include "check.h"

#include "../../src/runtime/wk_gotmpl.h"

struct tcase {
    const char *name, *tmpl, *data, *want;
};

static const struct tcase cases[] = {
    {"plain",
     "{{ .System }} {{ .Prompt }}",
     "{\"System\": \"You are helpful.\", \"Prompt\": \"Why is the sky blue?\"}",
     "You are helpful. Why is the sky blue?"},
    {"if_system",
     "{{ if .System }}<|system|>\n"
     "{{ .System }}</s>\n"
     "{{ end }}<|user|>\n"
     "{{ .Prompt }}</s>\n"
     "<|assistant|>\n"
     "{{ .Response }}",
     "{\"System\": \"Be kind.\", \"Prompt\": \"Hi\", \"Response\": \"\"}",
     "<|system|>\n"
     "Be kind.</s>\n"
     "<|user|>\n"
     "Hi</s>\n"
     "<|assistant|>\n"},
    {"if_no_system",
     "{{ if .System }}<|system|>\n"
     "{{ .System }}</s>\n"
     "{{ end }}<|user|>\n"
     "{{ .Prompt }}</s>\n"
     "<|assistant|>\n",
     "{\"Prompt\": \"Hi\"}",
     "<|user|>\n"
     "Hi</s>\n"
     "<|assistant|>\n"},
    {"chatml",
     "{{- range .Messages }}<|im_start|>{{ .Role }}\n"
     "{{ .Content }}<|im_end|>\n"
     "{{ end }}<|im_start|>assistant\n",
     "{\"Messages\": [{\"Role\": \"system\", \"Content\": \"Be brief.\"}, {\"Role\": \"user\", \"Content\": \"Hi <there> & you\"}, {\"Role\": \"assistant\", \"Content\": \"Hello!\"}, {\"Role\": \"user\", \"Content\": \"Weather in Paris?\"}]}",
     "<|im_start|>system\n"
     "Be brief.<|im_end|>\n"
     "<|im_start|>user\n"
     "Hi <there> & you<|im_end|>\n"
     "<|im_start|>assistant\n"
     "Hello!<|im_end|>\n"
     "<|im_start|>user\n"
     "Weather in Paris?<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {"llama3",
     "{{- if or .System .Tools }}<|start_header_id|>system<|end_header_id|>\n"
     "{{- if .System }}\n"
     "\n"
     "{{ .System }}\n"
     "{{- end }}\n"
     "{{- if .Tools }}\n"
     "\n"
     "You have access to the following functions:\n"
     "{{- range .Tools }}\n"
     "{{ json . }}\n"
     "{{- end }}\n"
     "{{- end }}<|eot_id|>\n"
     "{{- end }}\n"
     "{{- range $i, $_ := .Messages }}\n"
     "{{- $last := eq (len (slice $.Messages $i)) 1 }}\n"
     "{{- if eq .Role \"user\" }}<|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "{{ .Content }}<|eot_id|>{{ if $last }}<|start_header_id|>assistant<|end_header_id|>\n"
     "\n"
     "{{ end }}\n"
     "{{- else if eq .Role \"assistant\" }}<|start_header_id|>assistant<|end_header_id|>\n"
     "{{- if .ToolCalls }}\n"
     "{{ range .ToolCalls }}{\"name\": \"{{ .Function.Name }}\", \"parameters\": {{ json .Function.Arguments }}}{{ end }}\n"
     "{{- else }}\n"
     "\n"
     "{{ .Content }}\n"
     "{{- end }}{{ if not $last }}<|eot_id|>{{ end }}\n"
     "{{- else if eq .Role \"tool\" }}<|start_header_id|>ipython<|end_header_id|>\n"
     "\n"
     "{{ .Content }}<|eot_id|>{{ if $last }}<|start_header_id|>assistant<|end_header_id|>\n"
     "\n"
     "{{ end }}\n"
     "{{- end }}\n"
     "{{- end }}",
     "{\"System\": \"You are a bot.\", \"Tools\": [{\"Function\": {\"Description\": \"Get the weather\", \"Name\": \"get_weather\", \"Parameters\": {\"properties\": {\"city\": {\"description\": \"City name\", \"type\": \"string\"}}, \"required\": [\"city\"], \"type\": \"object\"}}, \"Type\": \"function\"}], \"Messages\": [{\"Role\": \"user\", \"Content\": \"Weather in Paris?\"}, {\"Role\": \"assistant\", \"Content\": \"\", \"ToolCalls\": [{\"Function\": {\"Arguments\": {\"city\": \"Paris\", \"days\": 2}, \"Name\": \"get_weather\"}}]}, {\"Role\": \"tool\", \"Content\": \"18C, sunny\"}]}",
     "<|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "You are a bot.\n"
     "\n"
     "You have access to the following functions:\n"
     "{\"Function\":{\"Description\":\"Get the weather\",\"Name\":\"get_weather\",\"Parameters\":{\"properties\":{\"city\":{\"description\":\"City name\",\"type\":\"string\"}},\"required\":[\"city\"],\"type\":\"object\"}},\"Type\":\"function\"}<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "Weather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
     "{\"name\": \"get_weather\", \"parameters\": {\"city\":\"Paris\",\"days\":2}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n"
     "\n"
     "18C, sunny<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
     "\n"},
    {"llama3_plain",
     "{{- range $i, $_ := .Messages }}\n"
     "{{- $last := eq (len (slice $.Messages $i)) 1 -}}\n"
     "<|start_header_id|>{{ .Role }}<|end_header_id|>\n"
     "\n"
     "{{ .Content }}{{ if or (ne .Role \"assistant\") (not $last) }}<|eot_id|>{{ end }}\n"
     "{{- if and $last (ne .Role \"assistant\") }}<|start_header_id|>assistant<|end_header_id|>\n"
     "\n"
     "{{ end }}\n"
     "{{- end }}",
     "{\"Messages\": [{\"Role\": \"system\", \"Content\": \"Be brief.\"}, {\"Role\": \"user\", \"Content\": \"Hi <there> & you\"}, {\"Role\": \"assistant\", \"Content\": \"Hello!\"}, {\"Role\": \"user\", \"Content\": \"Weather in Paris?\"}]}",
     "<|start_header_id|>system<|end_header_id|>\n"
     "\n"
     "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "Hi <there> & you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
     "\n"
     "Hello!<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
     "\n"
     "Weather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
     "\n"},
    {"mistral",
     "{{- range $index, $_ := .Messages }}\n"
     "{{- if eq .Role \"user\" }}\n"
     "{{- if and (eq (len (slice $.Messages $index)) 1) $.Tools }}[AVAILABLE_TOOLS] {{ json $.Tools }}[/AVAILABLE_TOOLS]\n"
     "{{- end }}[INST] {{ if and $.System (eq (len (slice $.Messages $index)) 1) }}{{ $.System }}\n"
     "\n"
     "{{ end }}{{ .Content }}[/INST]\n"
     "{{- else if eq .Role \"assistant\" }}\n"
     "{{- if .Content }} {{ .Content }}</s>\n"
     "{{- else if .ToolCalls }}[TOOL_CALLS] [\n"
     "{{- range .ToolCalls }}{\"name\": \"{{ .Function.Name }}\", \"arguments\": {{ json .Function.Arguments }}}\n"
     "{{- end }}]</s>\n"
     "{{- end }}\n"
     "{{- else if eq .Role \"tool\" }}[TOOL_RESULTS] {\"content\": {{ .Content }}} [/TOOL_RESULTS]\n"
     "{{- end }}\n"
     "{{- end }}",
     "{\"System\": \"Answer in French.\", \"Tools\": [{\"Function\": {\"Description\": \"Get the weather\", \"Name\": \"get_weather\", \"Parameters\": {\"properties\": {\"city\": {\"description\": \"City name\", \"type\": \"string\"}}, \"required\": [\"city\"], \"type\": \"object\"}}, \"Type\": \"function\"}], \"Messages\": [{\"Role\": \"user\", \"Content\": \"Hi <there> & you\"}, {\"Role\": \"assistant\", \"Content\": \"Hello!\"}, {\"Role\": \"user\", \"Content\": \"Weather in Paris?\"}]}",
     "[INST] Hi <there> & you[/INST] Hello!</s>[AVAILABLE_TOOLS] [{\"Function\":{\"Description\":\"Get the weather\",\"Name\":\"get_weather\",\"Parameters\":{\"properties\":{\"city\":{\"description\":\"City name\",\"type\":\"string\"}},\"required\":[\"city\"],\"type\":\"object\"}},\"Type\":\"function\"}][/AVAILABLE_TOOLS][INST] Answer in French.\n"
     "\n"
     "Weather in Paris?[/INST]"},
    {"mistral_toolcalls",
     "{{- range $index, $_ := .Messages }}\n"
     "{{- if eq .Role \"user\" }}[INST] {{ .Content }}[/INST]\n"
     "{{- else if eq .Role \"assistant\" }}\n"
     "{{- if .Content }} {{ .Content }}</s>\n"
     "{{- else if .ToolCalls }}[TOOL_CALLS] [\n"
     "{{- range .ToolCalls }}{\"name\": \"{{ .Function.Name }}\", \"arguments\": {{ json .Function.Arguments }}}\n"
     "{{- end }}]</s>\n"
     "{{- end }}\n"
     "{{- else if eq .Role \"tool\" }}[TOOL_RESULTS] {\"content\": {{ .Content }}} [/TOOL_RESULTS]\n"
     "{{- end }}\n"
     "{{- end }}",
     "{\"Messages\": [{\"Role\": \"user\", \"Content\": \"Weather in Paris?\"}, {\"Role\": \"assistant\", \"Content\": \"\", \"ToolCalls\": [{\"Function\": {\"Arguments\": {\"city\": \"Paris\", \"days\": 2}, \"Name\": \"get_weather\"}}]}, {\"Role\": \"tool\", \"Content\": \"18C, sunny\"}]}",
     "[INST] Weather in Paris?[/INST][TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\",\"days\":2}}]</s>[TOOL_RESULTS] {\"content\": 18C, sunny} [/TOOL_RESULTS]"},
    {"tools_json",
     "{{ if .Tools }}<tools>\n"
     "{{ range $.Tools }}{{ json .Function }}\n"
     "{{ end }}</tools>{{ end }}\n"
     "{{ range .Messages }}{{ .Role }}: {{ .Content }}|{{ len $.Tools }}\n"
     "{{ end }}",
     "{\"Tools\": [{\"Function\": {\"Description\": \"Get the weather\", \"Name\": \"get_weather\", \"Parameters\": {\"properties\": {\"city\": {\"description\": \"City name\", \"type\": \"string\"}}, \"required\": [\"city\"], \"type\": \"object\"}}, \"Type\": \"function\"}], \"Messages\": [{\"Role\": \"system\", \"Content\": \"Be brief.\"}, {\"Role\": \"user\", \"Content\": \"Hi <there> & you\"}]}",
     "<tools>\n"
     "{\"Description\":\"Get the weather\",\"Name\":\"get_weather\",\"Parameters\":{\"properties\":{\"city\":{\"description\":\"City name\",\"type\":\"string\"}},\"required\":[\"city\"],\"type\":\"object\"}}\n"
     "</tools>\n"
     "system: Be brief.|1\n"
     "user: Hi <there> & you|1\n"},
    {"json_values",
     "{{ json .S }} {{ json .L }} {{ json .F }} {{ json .N }} {{ json .Missing }} {{ json 3 }} {{ json \"a\\tb\" }} {{ json .Big }} {{ json .Small }}",
     "{\"S\": \"<b>\\\"q\\\" & é\", \"L\": [1, 2.5, true, null, \"x\"], \"F\": 0.1, \"N\": null, \"Big\": 1e+21, \"Small\": 1e-07}",
     "\"\\u003cb\\u003e\\\"q\\\" \\u0026 é\" [1,2.5,true,null,\"x\"] 0.1 null null 3 \"a\\tb\" 1e+21 1e-7"},
    {"trim",
     "a  {{- \"b\" -}}  c\n"
     "{{- /* a comment */ -}}\n"
     "  d {{/* kept */}} e\n"
     "\t{{- 3 }} {{ -3 }} {{ 4 -}}\n"
     "\n"
     "f",
     "{}",
     "abcd  e3 -3 4f"},
    {"slice_index_len_eq",
     "{{ slice .S 1 3 }}|{{ slice .S 2 }}|{{ slice .L 1 }}|{{ slice .L 0 2 3 }}|{{ index .L 2 }}|{{ index .M \"k\" }}|{{ index .N 1 0 }}|{{ len .S }} {{ len .L }} {{ len .M }}|{{ eq .R \"a\" \"b\" \"user\" }} {{ eq .R \"a\" \"b\" }} {{ eq 2 1 2 3 }} {{ ne .R \"user\" }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt \"b\" \"a\" }} {{ ge 1.5 2.5 }}|{{ index .S 0 }}",
     "{\"S\": \"hello\", \"L\": [10, 20, 30], \"M\": {\"k\": \"v\"}, \"N\": [[1, 2], [3]], \"R\": \"user\"}",
     "el|llo|[20 30]|[10 20]|30|v|3|5 3 1|true false true false true true true false|104"},
    {"printf",
     "{{ printf \"%s=%d\" .K .V }}|{{ printf \"%q\" .K }}|{{ printf \"%v %v %v\" .L .M true }}|{{ printf \"%5d|%-5s|%05.2f|%x|%X|%c\" 42 \"ab\" 3.14159 255 \"hi\" 65 }}|{{ printf \"%d\" \"x\" }}|{{ printf \"%s %s\" \"a\" }}|{{ printf \"%s\" \"a\" \"b\" }}|{{ printf \"%.2s|%t|%e|%g|%%\" \"abc\" false 1234.5 0.000012 }}|{{ .K | printf \"<%s>\" }}",
     "{\"K\": \"key \\\"1\\\"\\n\", \"V\": 7, \"L\": [1, \"a\"], \"M\": {\"z\": 1, \"a\": \"b\"}}",
     "key \"1\"\n"
     "=7|\"key \\\"1\\\"\\n\"|[1 a] map[a:b z:1] true|   42|ab   |03.14|ff|6869|A|%!d(string=x)|a %!s(MISSING)|a%!(EXTRA string=b)|ab|false|1.234500e+03|1.2e-05|%|<key \"1\"\n"
     ">"},
    {"print_println",
     "{{ print 1 2 \"a\" \"b\" 3 .Missing }}|{{ println 1 \"a\" }}|{{ print }}|{{ print .F .I }}",
     "{\"F\": 2.5, \"I\": -4}",
     "1 2ab3 <nil>|1 a\n"
     "||2.5 -4"},
    {"with_vars",
     "{{ with .User }}{{ .Name }} ({{ $.Site }}){{ else }}anon{{ end }}|{{ with .Nobody }}x{{ else }}none{{ end }}|{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ $y := 3 }}{{ $y }}{{ end }}{{ $x }}|{{ with $n := .User.Name }}{{ $n }}!{{ end }}|{{ if $v := .Site }}{{ $v }}{{ else }}no{{ end }}",
     "{\"User\": {\"Name\": \"Ada\"}, \"Site\": \"wick\"}",
     "Ada (wick)|none|32|Ada!|wick"},
    {"range_map_break",
     "{{ range $k, $v := .M }}{{ $k }}={{ $v }},{{ end }}|{{ range .L }}{{ if eq . 3 }}{{ break }}{{ end }}{{ if eq . 1 }}{{ continue }}{{ end }}{{ . }}{{ end }}|{{ range .E }}x{{ else }}empty{{ end }}|{{ range .Missing }}x{{ else }}nil{{ end }}|{{ range $i, $e := .L }}{{ $i }}{{ $e }}{{ end }}|{{ range $e := .L }}{{ $e }}{{ end }}",
     "{\"M\": {\"b\": 2, \"a\": 1, \"c\": [1]}, \"L\": [0, 1, 2, 3, 4], \"E\": []}",
     "a=1,b=2,c=[1],|02|empty|nil|0011223344|01234"},
    {"pipes_parens",
     "{{ .S | len }}|{{ slice \"abc\" 1 | print }}|{{ (index .Users 1).Name }}|{{ .Users | len | printf \"%d users\" }}|{{ not (eq (len .Users) 2) }}|{{ and 1 0 2 }}|{{ or 0 \"\" .Users }}",
     "{\"S\": \"hello\", \"Users\": [{\"Name\": \"a\"}, {\"Name\": \"b\"}]}",
     "5|bc|b|2 users|false|0|[map[Name:a] map[Name:b]]"},
    {"literals",
     "{{ `raw\\n{{` }}|{{ \"tab\\there\\u00e9\\x41\" }}|{{ 'a' }} {{ '\\n' }}|{{ 0x1F }} {{ 1.50 }} {{ -2 }} {{ true }} {{ false }}|{{ 1e-7 }} {{ 123456.0 }} {{ 1234567.0 }}",
     "{}",
     "raw\\n{{|tab\thereéA|97 10|31 1.5 -2 true false|1e-07 123456 1.234567e+06"},
    {"nil_values",
     "{{ .A }}|{{ .A.B.C }}|{{ .N }}|{{ if .N }}y{{ else }}n{{ end }}|{{ index .L 1 }}|{{ range .L }}[{{ . }}]{{ end }}|{{ . | len }}",
     "{\"N\": null, \"L\": [1, null]}",
     "<no value>|<no value>|<no value>|n|<no value>|[1][<no value>]|2"},
};

/* Renders tmpl with data (JSON text, NULL for none); returns the status and
 * stores the output (or NULL) in *out and the error in *err. */
static enum wk_status render(const char *tmpl, const char *data,
                             const struct wk_gotmpl_limits *lim, char **out, struct wk_error *err)
{
    *out = NULL;
    struct wk_gotmpl *t = NULL;
    enum wk_status st = wk_gotmpl_parse(tmpl, strlen(tmpl), &t, err);
    if (st != WK_OK) return st;
    json_error_t je;
    json_t *d = data ? json_loads(data, 0, &je) : NULL;
    if (data && !d) fprintf(stderr, "bad test data: %s\n", je.text);
    size_t n = 0;
    st = wk_gotmpl_render_ex(t, d, lim, out, &n, err);
    if (st == WK_OK) CHECK_EQ_INT(n, strlen(*out));
    json_decref(d);
    wk_gotmpl_free(t);
    return st;
}

static void test_ollama_templates(void)
{
    int64_t live = wk_alloc_live_bytes();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        struct wk_error err;
        enum wk_status st = render(cases[i].tmpl, cases[i].data, NULL, &out, &err);
        if (st != WK_OK) fprintf(stderr, "case %s: %s\n", cases[i].name, err.msg);
        CHECK_EQ_INT(st, WK_OK);
        if (out && strcmp(out, cases[i].want) != 0) fprintf(stderr, "case %s differs\n", cases[i].name);
        CHECK_EQ_STR(out, cases[i].want);
        wk_free(out);
    }
    CHECK_EQ_INT(wk_alloc_live_bytes(), live);
}

/* Not Go: a missing key "Name" falls back to "name" (Ollama API JSON). The
 * expected output is derived by hand from that rule. */
static void test_lowercase_fallback(void)
{
    char *out = NULL;
    struct wk_error err;
    CHECK_EQ_INT(render("{{ range .Messages }}{{ .Role }}:{{ .Content }};{{ end }}{{ .Missing }}",
                        "{\"Messages\": [{\"role\": \"user\", \"content\": \"hi\"}, "
                        "{\"Role\": \"x\", \"role\": \"y\", \"content\": \"z\"}]}",
                        NULL, &out, &err),
                 WK_OK);
    CHECK_EQ_STR(out, "user:hi;x:z;<no value>");
    wk_free(out);
    /* the object's own key order for json (Ollama's struct field order) */
    CHECK_EQ_INT(render("{{ json .T }}", "{\"T\": {\"type\": \"function\", \"function\": {}}}",
                        NULL, &out, &err),
                 WK_OK);
    CHECK_EQ_STR(out, "{\"type\":\"function\",\"function\":{}}");
    wk_free(out);
}

/* Expects tmpl (with data) to fail with st and a message containing want. */
static void expect_error(const char *tmpl, const char *data, enum wk_status st, const char *want)
{
    char *out = NULL;
    struct wk_error err;
    CHECK_EQ_INT(render(tmpl, data, NULL, &out, &err), st);
    CHECK(out == NULL);
    CHECK_CONTAINS(err.msg, want);
    wk_free(out);
}

/* The messages name the line; the wording follows Go's (go1.19.8 says, for
 * the same templates: "unclosed action", "function \"foo\" not defined",
 * "range can't iterate over 3", "undefined variable \"$x\"", "unexpected
 * {{end}}", "error calling index: index out of range: 5", "error calling
 * eq: incompatible types for comparison", "error calling lt: invalid type
 * for comparison", "can't evaluate field X in type string"). */
static void test_errors(void)
{
    int64_t live = wk_alloc_live_bytes();
    expect_error("line 1\n{{ if .X }}\n{{ .Y ", NULL, WK_E_FORMAT, "line 3: unclosed action");
    expect_error("a\nb {{ foo .X }}", NULL, WK_E_FORMAT, "line 2: function \"foo\" not defined");
    expect_error("\n\n{{ range .N }}x{{ end }}", "{\"N\": 3}", WK_E_INVALID,
                 "line 3: range can't iterate over 3");
    expect_error("{{ range .S }}x{{ end }}", "{\"S\": \"abc\"}", WK_E_INVALID,
                 "range can't iterate over abc");
    expect_error("\n{{ $x }}", NULL, WK_E_FORMAT, "line 2: undefined variable \"$x\"");
    expect_error("{{ if 1 }}{{ $y := 1 }}{{ end }}{{ $y }}", NULL, WK_E_FORMAT,
                 "undefined variable \"$y\"");
    expect_error("{{ $z = 1 }}", NULL, WK_E_FORMAT, "undefined variable \"$z\"");
    expect_error("x{{ end }}", NULL, WK_E_FORMAT, "line 1: unexpected {{end}}");
    expect_error("{{ if .X }}\nx", NULL, WK_E_FORMAT, "line 1: unexpected EOF");
    expect_error("{{ range .L }}{{ else }}{{ else }}{{ end }}", NULL, WK_E_FORMAT, "expected end");
    expect_error("{{ break }}", NULL, WK_E_FORMAT, "{{break}} outside {{range}}");
    expect_error("{{ \"abc }}", NULL, WK_E_FORMAT, "unterminated quoted string");
    expect_error("{{ /* c */ }}", NULL, WK_E_FORMAT, "line 1");
    expect_error("{{/* c */ x}}", NULL, WK_E_FORMAT, "comment ends before closing delimiter");
    expect_error("{{ template \"x\" }}", NULL, WK_E_FORMAT, "not supported");
    expect_error("{{ }}", NULL, WK_E_FORMAT, "missing value for command");
    expect_error("{{ 12ab }}", NULL, WK_E_FORMAT, "bad number syntax");
    expect_error("\n{{ index .L 5 }}", "{\"L\": [1]}", WK_E_INVALID,
                 "line 2: error calling index: index out of range: 5");
    expect_error("{{ eq 1 \"a\" }}", NULL, WK_E_INVALID,
                 "error calling eq: incompatible types for comparison");
    expect_error("{{ eq 1 1.0 }}", NULL, WK_E_INVALID, "incompatible types for comparison");
    expect_error("{{ lt true false }}", NULL, WK_E_INVALID, "invalid type for comparison");
    expect_error("{{ .S.X }}", "{\"S\": \"str\"}", WK_E_INVALID,
                 "can't evaluate field X in type string");
    expect_error("{{ len 3 }}", NULL, WK_E_INVALID, "len of type int");
    expect_error("{{ slice \"abc\" 2 1 }}", NULL, WK_E_INVALID, "invalid slice index: 2 > 1");
    expect_error("{{ slice \"abc\" 1 2 3 }}", NULL, WK_E_INVALID, "cannot 3-index slice a string");
    expect_error("{{ printf 3 }}", NULL, WK_E_INVALID, "expected string; got int");
    expect_error("{{ .X 1 }}", NULL, WK_E_INVALID, "can't give argument to non-function");
    expect_error("{{ 1 | .X }}", NULL, WK_E_INVALID, "can't give argument to non-function");
    expect_error("{{ not 1 2 }}", NULL, WK_E_INVALID, "wrong number of args for not");
    /* partial output is not returned, and nothing leaks */
    expect_error("text {{ index .L 9 }}", "{\"L\": []}", WK_E_INVALID, "index out of range: 9");
    CHECK_EQ_INT(wk_alloc_live_bytes(), live);
}

static void test_hostile(void)
{
    int64_t live = wk_alloc_live_bytes();
    /* nesting far past the limit fails at parse time, quickly */
    size_t depth = 100000;
    char *deep = malloc(depth * 20 + 1);
    size_t k = 0;
    for (size_t i = 0; i < depth; i++) k += (size_t)sprintf(deep + k, "{{ if 1 }}");
    for (size_t i = 0; i < depth; i++) k += (size_t)sprintf(deep + k, "{{ end }}");
    char *out = NULL;
    struct wk_error err;
    CHECK_EQ_INT(render(deep, NULL, NULL, &out, &err), WK_E_RANGE);
    CHECK_CONTAINS(err.msg, "nested deeper than");
    k = 0;
    for (size_t i = 0; i < depth; i++) deep[k++] = '(';
    memcpy(deep, "{{ ", 3);
    deep[k] = 0;
    CHECK_EQ_INT(render(deep, NULL, NULL, &out, &err), WK_E_RANGE);
    /* nesting within the limit is fine */
    k = 0;
    for (int i = 0; i < 50; i++) k += (size_t)sprintf(deep + k, "{{ with . }}");
    k += (size_t)sprintf(deep + k, "{{ .A }}");
    for (int i = 0; i < 50; i++) k += (size_t)sprintf(deep + k, "{{ end }}");
    CHECK_EQ_INT(render(deep, "{\"A\": 7}", NULL, &out, &err), WK_OK);
    CHECK_EQ_STR(out, "7");
    wk_free(out);
    free(deep);
    /* output doubling through nested ranges passes the cap */
    const char *bomb = "{{ range .L }}{{ range $.L }}{{ range $.L }}{{ range $.L }}"
                       "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                       "{{ end }}{{ end }}{{ end }}{{ end }}";
    char data[4096];
    k = (size_t)sprintf(data, "{\"L\": [");
    for (int i = 0; i < 100; i++) k += (size_t)sprintf(data + k, "%s%d", i ? "," : "", i);
    sprintf(data + k, "]}");
    struct wk_gotmpl_limits lim = {.max_output = 1 << 20};
    CHECK_EQ_INT(render(bomb, data, &lim, &out, &err), WK_E_RANGE);
    CHECK_CONTAINS(err.msg, "output exceeds 1048576 bytes");
    /* a printf result past the cap */
    CHECK_EQ_INT(render("{{ printf \"%0999999d\" 1 }}{{ printf \"%0999999d\" 1 }}", NULL, &lim, &out,
                        &err),
                 WK_E_RANGE);
    wk_free(out);
    /* a float's long precision in full, as Go's fmt writes it (was cut at
     * 511 bytes): 0.25 with 600 decimals is "0.25" and 598 zeros; past the
     * output cap, the cap's error */
    CHECK_EQ_INT(render("{{ printf \"%.600f|%.600e\" 0.25 0.25 }}", NULL, NULL, &out, &err), WK_OK);
    if (out) {
        char want[1300];
        size_t w = (size_t)sprintf(want, "0.25");
        for (int i = 0; i < 598; i++) want[w++] = '0';
        w += (size_t)sprintf(want + w, "|2.5");
        for (int i = 0; i < 599; i++) want[w++] = '0';
        sprintf(want + w, "e-01");
        CHECK(strcmp(out, want) == 0);
    }
    wk_free(out);
    CHECK_EQ_INT(render("{{ printf \"%.2000000f\" 1.5 }}", NULL, &lim, &out, &err), WK_E_RANGE);
    wk_free(out);
    /* the iteration limit */
    const char *loops = "{{ range .L }}{{ range $.L }}{{ range $.L }}{{ end }}{{ end }}{{ end }}";
    struct wk_gotmpl_limits lim2 = {.max_iterations = 100000};
    CHECK_EQ_INT(render(loops, data, &lim2, &out, &err), WK_E_RANGE);
    CHECK_CONTAINS(err.msg, "range iterations");
    CHECK_EQ_INT(wk_alloc_live_bytes(), live);
}

static void test_nomem(void)
{
    /* every allocation failing in turn gives WK_E_NOMEM (or success), never a crash */
    const struct tcase *c = &cases[4]; /* llama3 */
    json_t *d = json_loads(c->data, 0, NULL);
    int64_t live = wk_alloc_live_bytes();
    for (int64_t n = 1; n < 400; n++) {
        struct wk_gotmpl *t = NULL;
        char *out = NULL;
        wk_alloc_fail_after(n);
        enum wk_status st = wk_gotmpl_parse(c->tmpl, strlen(c->tmpl), &t, NULL);
        if (st == WK_OK) st = wk_gotmpl_render(t, d, &out, NULL, NULL);
        wk_alloc_fail_after(0);
        CHECK(st == WK_OK || st == WK_E_NOMEM);
        if (st == WK_OK) CHECK_EQ_STR(out, c->want);
        wk_free(out);
        wk_gotmpl_free(t);
    }
    CHECK_EQ_INT(wk_alloc_live_bytes(), live);
    json_decref(d);
}

/* ------------------------------------------------------------ provenance */

/* Whether runs[0..n) cover len bytes exactly, in order, none empty, the
 * same kinds never adjacent. */
static bool runs_ok(const struct wk_gotmpl_run *runs, size_t n, size_t len)
{
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (runs[i].off != at || runs[i].len == 0) return false;
        if (i && runs[i].content == runs[i - 1].content) return false;
        at += runs[i].len;
    }
    return at == len && (len > 0 || (n == 0 && !runs));
}

/* Renders tmpl over data with runs, checks them and returns them written
 * out as "[S]scaffolding[C]content..." (static storage) or "ERROR". */
static const char *runs_of(const char *tmpl, const char *data)
{
    static char shown[4096];
    struct wk_gotmpl *t = NULL;
    json_t *d = json_loads(data, 0, NULL);
    CHECK(d != NULL);
    snprintf(shown, sizeof shown, "ERROR");
    if (wk_gotmpl_parse(tmpl, strlen(tmpl), &t, NULL) != WK_OK) return shown;
    char *out = NULL, *plain = NULL;
    size_t len = 0, n = 0;
    struct wk_gotmpl_run *runs = NULL;
    if (wk_gotmpl_render_runs(t, d, &out, &len, &runs, &n, NULL) == WK_OK) {
        CHECK(runs_ok(runs, n, len));
        CHECK_EQ_INT(wk_gotmpl_render(t, d, &plain, NULL, NULL), WK_OK);
        CHECK_EQ_STR(out, plain);
        size_t k = 0;
        shown[0] = 0;
        for (size_t i = 0; i < n; i++)
            k += (size_t)snprintf(shown + k, sizeof shown - k, "[%c]%.*s", runs[i].content ? 'C' : 'S',
                                  (int)runs[i].len, out + runs[i].off);
    }
    wk_free(out);
    wk_free(plain);
    wk_free(runs);
    wk_gotmpl_free(t);
    json_decref(d);
    return shown;
}

static void test_runs(void)
{
    int64_t live = wk_alloc_live_bytes();
    const char *chatml = "{{ range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}";
    CHECK_EQ_STR(runs_of(chatml, "{\"Messages\": [{\"Role\": \"user\", \"Content\": \"<|im_end|> hi\"}]}"),
                 "[S]<|im_start|>user\n[C]<|im_end|> hi[S]<|im_end|>\n");
    CHECK_EQ_STR(runs_of("{{ .System }} {{ .Prompt }}", "{\"System\": \"sys\", \"Prompt\": \"p\"}"),
                 "[C]sys[S] [C]p");
    CHECK_EQ_STR(runs_of("<{{ .System }}|{{ .Response }}>", "{\"system\": \"a\", \"response\": \"b\"}"),
                 "[S]<[C]a[S]|[C]b[S]>");
    /* a role, a name, a tool's name are not content; a tool's description (the client's text) is */
    CHECK_EQ_STR(runs_of("{{ .Role }}{{ .Name }}{{ json .Tools }}",
                         "{\"Role\": \"<|x|>\", \"Name\": \"n\", \"Tools\": [{\"Name\": \"f\", \"Description\": \"d\"}]}"),
                 "[S]<|x|>n[{\"Name\":\"f\",\"Description\":\"[C]d[S]\"}]");
    /* variables, with, index, and / or */
    CHECK_EQ_STR(runs_of("{{ range $i, $m := .Messages }}{{ $m.Role }}:{{ $m.Content }};{{ end }}"
                         "{{ with (index .Messages 0) }}{{ .Content }}{{ end }}"
                         "{{ $c := index (index .Messages 0) \"Content\" }}{{ $c }}{{ or .X .Prompt }}",
                         "{\"Messages\": [{\"Role\": \"u\", \"Content\": \"c\"}], \"Prompt\": \"p\"}"),
                 "[S]u:[C]c[S];[C]ccp");
    /* printf: the bytes from content are content, printf's own are not */
    CHECK_EQ_STR(runs_of("{{ printf \"%s!\" .Content }}{{ printf \"%4s|%q|%x\" .Content .Content .Content }}",
                         "{\"Content\": \"a\\\"\"}"),
                 "[C]a\"[S]!  [C]a\"[S]|\"[C]a\\\"[S]\"|6122");
    CHECK_EQ_STR(runs_of("{{ print .Role .Content }}{{ println .Content }}",
                         "{\"Role\": \"u\", \"Content\": \"c\"}"),
                 "[S]u[C]cc[S]\n");
    /* slice of content stays content, printed or sliced again */
    CHECK_EQ_STR(runs_of("{{ slice .Content 1 3 }}|{{ $s := slice .Content 2 }}{{ slice $s 1 }}"
                         "|{{ slice (printf \"<%s>\" .Content) 0 3 }}",
                         "{\"Content\": \"abcd\"}"),
                 "[C]bc[S]|[C]d[S]|<[C]ab");
    /* json of content and of a tool call with arguments */
    CHECK_EQ_STR(runs_of("{{ json .Content }}", "{\"Content\": \"a<b\"}"),
                 "[S]\"[C]a\\u003cb[S]\"");
    CHECK_EQ_STR(runs_of("{{ range .ToolCalls }}{{ json .Function }}{{ end }}",
                         "{\"ToolCalls\": [{\"Function\": {\"Name\": \"get\", \"Arguments\": "
                         "{\"city\": \"Paris\", \"n\": 2, \"tags\": [\"x\"]}}}]}"),
                 "[S]{\"Name\":\"get\",\"Arguments\":{\"city\":\"[C]Paris[S]\",\"n\":2,\"tags\":[\"[C]x[S]\"]}}");
    /* empty output: no runs */
    CHECK_EQ_STR(runs_of("{{ .Content }}", "{\"Content\": \"\"}"), "");
    CHECK_EQ_INT(wk_alloc_live_bytes(), live);
}

/* Every Ollama-style template above: the same text, runs that cover it. */
static void test_runs_all_templates(void)
{
    int64_t live = wk_alloc_live_bytes();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wk_gotmpl *t = NULL;
        CHECK_EQ_INT(wk_gotmpl_parse(cases[i].tmpl, strlen(cases[i].tmpl), &t, NULL), WK_OK);
        json_t *d = json_loads(cases[i].data, 0, NULL);
        char *out = NULL;
        size_t len = 0, n = 0;
        struct wk_gotmpl_run *runs = NULL;
        CHECK_EQ_INT(wk_gotmpl_render_runs(t, d, &out, &len, &runs, &n, NULL), WK_OK);
        CHECK_EQ_STR(out, cases[i].want);
        CHECK_EQ_INT(len, strlen(cases[i].want));
        if (!runs_ok(runs, n, len)) fprintf(stderr, "case %s: bad runs\n", cases[i].name);
        CHECK(runs_ok(runs, n, len));
        wk_free(out);
        wk_free(runs);
        json_decref(d);
        wk_gotmpl_free(t);
    }
    /* an error: no text, no runs */
    struct wk_gotmpl *t = NULL;
    CHECK_EQ_INT(wk_gotmpl_parse("a{{ index .X 5 }}", 17, &t, NULL), WK_OK);
    json_t *d = json_loads("{\"X\": [1]}", 0, NULL);
    char *out = (char *)"x";
    size_t n = 7;
    struct wk_gotmpl_run *runs = (struct wk_gotmpl_run *)&n;
    CHECK_EQ_INT(wk_gotmpl_render_runs(t, d, &out, NULL, &runs, &n, NULL), WK_E_INVALID);
    CHECK(out == NULL && runs == NULL && n == 0);
    json_decref(d);
    wk_gotmpl_free(t);
    CHECK_EQ_INT(wk_alloc_live_bytes(), live);
}

static void test_runs_nomem(void)
{
    const char *tmpl = "{{ range .Messages }}{{ printf \"%q\" .Content }}{{ slice .Content 1 }}"
                       "{{ json . }}{{ end }}";
    json_t *d = json_loads("{\"Messages\": [{\"Role\": \"u\", \"Content\": \"ab\"}]}", 0, NULL);
    struct wk_gotmpl *t = NULL;
    CHECK_EQ_INT(wk_gotmpl_parse(tmpl, strlen(tmpl), &t, NULL), WK_OK);
    int64_t live = wk_alloc_live_bytes();
    for (int64_t k = 1; k < 200; k++) {
        char *out = NULL;
        size_t n = 0;
        struct wk_gotmpl_run *runs = NULL;
        wk_alloc_fail_after(k);
        enum wk_status st = wk_gotmpl_render_runs(t, d, &out, NULL, &runs, &n, NULL);
        wk_alloc_fail_after(0);
        CHECK(st == WK_OK || st == WK_E_NOMEM);
        if (st == WK_OK) CHECK_EQ_STR(out, "\"ab\"b{\"Role\":\"u\",\"Content\":\"ab\"}");
        else CHECK(out == NULL && runs == NULL && n == 0);
        wk_free(out);
        wk_free(runs);
    }
    CHECK_EQ_INT(wk_alloc_live_bytes(), live);
    wk_gotmpl_free(t);
    json_decref(d);
}

/* wk_gotmpl_render_chat over msgs (JSON), its runs shown as runs_of does. */
static const char *chat_runs_of(const char *tmpl, const char *msgs, const char *tools)
{
    static char shown[4096];
    struct wk_gotmpl *t = NULL;
    json_t *m = json_loads(msgs, 0, NULL), *tl = tools ? json_loads(tools, 0, NULL) : NULL;
    struct wk_error err;
    snprintf(shown, sizeof shown, "ERROR");
    char *out = NULL;
    size_t len = 0, n = 0;
    struct wk_gotmpl_run *runs = NULL;
    if (wk_gotmpl_parse(tmpl, strlen(tmpl), &t, NULL) == WK_OK &&
        wk_gotmpl_render_chat(t, m, tl, &out, &len, &runs, &n, &err) == WK_OK) {
        CHECK(runs_ok(runs, n, len));
        size_t k = 0;
        shown[0] = 0;
        for (size_t i = 0; i < n; i++)
            k += (size_t)snprintf(shown + k, sizeof shown - k, "[%c]%.*s", runs[i].content ? 'C' : 'S',
                                  (int)runs[i].len, out + runs[i].off);
    } else if (t) {
        snprintf(shown, sizeof shown, "ERROR %s", err.msg);
    }
    wk_free(out);
    wk_free(runs);
    wk_gotmpl_free(t);
    json_decref(m);
    json_decref(tl);
    return shown;
}

/* Ollama's application of a TEMPLATE to a chat (template.Execute): the
 * legacy path once per exchange, the last run cut after the first
 * {{ .Response }} (in deleteNode's walk: nodes after it, in its list and
 * the lists around it, are gone; an if's condition does not count), the
 * content runs; the .Messages path with tools and arguments as JSON. */
static void test_chat(void)
{
    int64_t live = wk_alloc_live_bytes();
    const char *conv = "[{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", \"content\": \"a\"},"
                       " {\"role\": \"assistant\", \"content\": \"b\"}, {\"role\": \"user\", \"content\": \"<|x|>\"}]";
    CHECK_EQ_STR(chat_runs_of("{{ if .System }}S:{{ .System }};{{ end }}{{ if .Prompt }}U:{{ .Prompt }};{{ end }}"
                              "A:{{ .Response }};END{{ if .Prompt }}X{{ end }}",
                              conv, NULL),
                 "[S]S:[C]sys[S];U:[C]a[S];A:[C]b[S];ENDXU:[C]<|x|>[S];A:");
    /* .Response inside an if: the rest of the if's list and all after it are cut */
    CHECK_EQ_STR(chat_runs_of("{{ .Prompt }}{{ if true }}<{{ .Response }}>{{ end }}|",
                              "[{\"role\": \"user\", \"content\": \"p1\"}, {\"role\": \"assistant\", \"content\": "
                              "\"r1\"}, {\"role\": \"user\", \"content\": \"p2\"}]", NULL),
                 "[C]p1[S]<[C]r1[S]>|[C]p2[S]<");
    /* an if on .Response is no cut: the first action printing it is */
    CHECK_EQ_STR(chat_runs_of("{{ if .Response }}R{{ end }}[{{ .Prompt }}]{{ .Response }}.", conv, NULL),
                 "[S]R[[C]a[S]][C]b[S].[[C]<|x|>[S]]");
    /* no .Messages, no .Response: the answer follows each exchange */
    CHECK_EQ_STR(chat_runs_of("<{{ .Prompt }}>", conv, NULL), "[S]<[C]a[S]>[C]b[S]<[C]<|x|>[S]>");
    /* .Messages: the collated list, .System joined */
    CHECK_EQ_STR(chat_runs_of("{{ .System }}|{{ range .Messages }}{{ .Role }}={{ .Content }};{{ end }}",
                              "[{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"user\", \"content\": \"b\"},"
                              " {\"role\": \"system\", \"content\": \"s\"}]", NULL),
                 "[C]s[S]|user=[C]a\n\nb[S];system=[C]s[S];");
    /* tools print as JSON (not content; a tool without properties has a nil map, null in JSON, as
     * Go gives it: tests/template/go_cases.py), a call's arguments as sorted JSON (their strings
     * content; < and > escaped as Go's encoding/json escapes them) */
    CHECK_EQ_STR(chat_runs_of("{{ range .Tools }}{{ . }}{{ end }}{{ range .Messages }}{{ range .ToolCalls }}"
                              "{{ .Function.Name }}{{ .Function.Arguments }}{{ end }}{{ end }}",
                              "[{\"role\": \"assistant\", \"tool_calls\": [{\"function\": {\"name\": \"f\", "
                              "\"arguments\": {\"z\": \"<|x|>\", \"a\": 1}}}]}]",
                              "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]"),
                 "[S]{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"\",\"parameters\":"
                 "{\"type\":\"\",\"properties\":null}}}f{\"a\":1,\"z\":\"[C]\\u003c|x|\\u003e[S]\"}");
    CHECK_EQ_STR(chat_runs_of("{{ .Prompt }}", "[{\"content\": \"no role\"}]", NULL), "ERROR message 0 has no role");
    CHECK_EQ_STR(chat_runs_of("{{ .Prompt }}", "{}", NULL), "ERROR messages must be a list");
    CHECK_EQ_INT(wk_alloc_live_bytes(), live);
    /* out of memory anywhere: WK_E_NOMEM, nothing leaked */
    const char *tmpl = "{{ range .Tools }}{{ . }}{{ end }}{{ range .Messages }}{{ .Content }}{{ range .ToolCalls }}"
                       "{{ .Function.Arguments }}{{ end }}{{ end }}";
    json_t *m = json_loads("[{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"user\", \"content\": \"b\"}, "
                           "{\"role\": \"assistant\", \"tool_calls\": [{\"function\": {\"name\": \"f\", "
                           "\"arguments\": {\"x\": [1, {\"b\": 2, \"a\": 3}]}}}]}]", 0, NULL);
    json_t *tl = json_loads("[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
                            "\"object\", \"properties\": {\"x\": {\"type\": \"array\", \"description\": \"d\"}}}}}]",
                            0, NULL);
    struct wk_gotmpl *t = NULL;
    CHECK_EQ_INT(wk_gotmpl_parse(tmpl, strlen(tmpl), &t, NULL), WK_OK);
    live = wk_alloc_live_bytes();
    for (int64_t k = 1; k < 400; k++) {
        char *out = NULL;
        size_t n = 0, len = 0;
        struct wk_gotmpl_run *runs = NULL;
        wk_alloc_fail_after(k);
        enum wk_status st = wk_gotmpl_render_chat(t, m, tl, &out, &len, &runs, &n, NULL);
        wk_alloc_fail_after(0);
        CHECK(st == WK_OK || st == WK_E_NOMEM);
        if (st == WK_OK) CHECK(runs_ok(runs, n, len));
        else CHECK(out == NULL && runs == NULL && n == 0);
        wk_free(out);
        wk_free(runs);
    }
    CHECK_EQ_INT(wk_alloc_live_bytes(), live);
    wk_gotmpl_free(t);
    json_decref(m);
    json_decref(tl);
}

CHECK_MAIN(TEST(test_ollama_templates), TEST(test_lowercase_fallback), TEST(test_errors),
           TEST(test_hostile), TEST(test_nomem), TEST(test_runs), TEST(test_runs_all_templates),
           TEST(test_runs_nomem), TEST(test_chat))
