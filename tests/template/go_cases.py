"""tests/template/go_cases.py - chat cases whose expected output is what Go's
text/template gives with Ollama's template data and funcs: each case's
output (or error) was recorded by make-go-expected.py, which runs a Go
program with Ollama's template package and the api types it uses (kept
outside this repository: see make-go-expected.py) over these cases, into
go_expected.json. test_gotemplates.py
renders every case with `wick template --go` and compares.

A case: (name, template, messages, tools or None). Change a case or add one,
then run tests/template/make-go-expected.py (it needs Go, Debian's
golang-go) to record Go's output again."""

U1 = {"role": "user", "content": "Hi!"}
A1 = {"role": "assistant", "content": "Hello."}
U2 = {"role": "user", "content": "Weather in Paris?"}
SYS = {"role": "system", "content": "You are terse."}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "required": ["city"],
                   "properties": {"unit": {"type": "string", "enum": ["c", "f"]},
                                  "city": {"type": "string", "description": "The city <b> & co"}}}}}
# every kind of parameter: anyOf, type lists, nested properties (in their
# order), items, numbers in enum and items, unknown keys (dropped)
RICH = {"type": "function", "function": {
    "name": "search", "description": "",
    "parameters": {"type": "object", "required": [], "$defs": {"b": 1, "a": [2.5, 1000000]},
                   "properties": {
                       "q": {"type": ["string", "null"], "description": "Query"},
                       "n": {"type": "integer", "enum": [1, 2.5, 1e3], "minimum": 0},
                       "opt": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "number", "a": 1}}]},
                       "flt": {"type": "object", "properties": {"z": {"type": "boolean"}, "a": {"type": "x"}},
                               "required": ["z"]},
                       "any": {"description": "anything", "items": []},
                       "one": {"type": ["number"]},
                       "e": {"type": "string", "enum": [], "required": [], "anyOf": [], "description": ""},
                   }}}}
# RICH without its nested properties: fmt prints a *api.ToolPropertiesMap as
# the address it holds, which differs from run to run
FLAT = {"type": "function", "function": {**RICH["function"], "parameters": {
    **RICH["function"]["parameters"],
    "properties": {k: v for k, v in RICH["function"]["parameters"]["properties"].items() if k != "flt"}}}}
BARE = {"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}}
CALL = {"role": "assistant", "content": "",
        "tool_calls": [{"function": {"name": "get_weather",
                                     "arguments": {"unit": "c", "city": "Paris", "n": 1000000, "x": 2.5,
                                                   "deep": {"b": [1, None, True], "a": "<&>"}}}},
                       {"id": "call_2", "function": {"index": 1, "name": "ping"}}]}
RESULT = {"role": "tool", "content": "22 degrees", "tool_name": "get_weather"}
CHAT = [SYS, U1, A1, U2, CALL, RESULT]

M = "{{ range .Messages }}{{ end }}"  # names .Messages: Ollama's one-run path
TOOLS = "{{ range .Tools }}"
PROPS = "{{ range .Tools }}{{ range $k, $v := .Function.Parameters.Properties }}"

TOOLS_TMPL = open(__file__.replace("go_cases.py", "tools.gotmpl")).read()  # written for these tests

CASES = [
    # ---- bug 1: Ollama's tool types print as JSON; a missing field is Go's zero value
    ("a TEMPLATE printing each tool's {{ .Function }} as Qwen's do: tools, tool calls and results", TOOLS_TMPL, CHAT,
     [WEATHER, RICH]),
    ("{{ .Function }} and {{ .Function.Parameters }} print as JSON",
     TOOLS + "{{ .Function }}\n{{ .Function.Parameters }}\n{{ end }}" + M, [U1], [WEATHER, RICH, BARE]),
    ("a tool, .Tools, slice and index of .Tools, json of each",
     "{{ .Tools }}|{{ slice .Tools 1 }}|{{ index .Tools 0 }}|{{ json .Tools }}|" + TOOLS +
     "{{ json .Function }}{{ end }}" + M, [U1], [WEATHER, BARE]),
    ("tool fields: Type, Items, Name, Description, Defs, Required, Properties (a map: JSON)",
     TOOLS + "{{ .Type }}|{{ .Items }}|{{ .Function.Name }}|{{ .Function.Description }}|"
     "{{ .Function.Parameters.Defs }}|{{ .Function.Parameters.Required }}|{{ .Function.Parameters.Properties }}\n"
     "{{ end }}" + M, [U1], [WEATHER, RICH, BARE]),
    ("property fields, present and missing (zero values: \"\", [], <nil>, <no value>)",
     PROPS + "{{ $k }}: {{ $v.Type }}|{{ $v.Description }}|{{ $v.Enum }}|{{ $v.Items }}|{{ $v.Properties }}|"
     "{{ $v.AnyOf }}|{{ $v.Required }}\n{{ end }}{{ end }}" + M, [U1], [WEATHER, FLAT]),
    ("a property printed as a Go struct, %+v, and its json",
     PROPS + "{{ $v }} {{ printf \"%+v\" $v }} {{ json $v }}\n{{ end }}{{ end }}" + M, [U1], [FLAT]),
    ("json, len and if of a property's missing fields",
     PROPS + "{{ json $v.Enum }} {{ json $v.Type }} {{ json $v.Properties }} {{ len $v.Enum }} "
     "{{ len $v.AnyOf }} {{ if $v.Description }}d{{ end }}{{ if $v }}s{{ end }}\n{{ end }}{{ end }}" + M,
     [U1], [WEATHER, RICH]),
    ("empty lists given in the request: present (json []) but left out of the struct's JSON (omitempty)",
     TOOLS + "{{ json .Function.Parameters.Required }} {{ json .Function.Parameters }}\n{{ end }}" + PROPS +
     "{{ if eq $k \"e\" }}{{ json $v.Enum }} {{ json $v.Required }} {{ json $v.AnyOf }} {{ $v.Enum }} {{ json $v }} "
     "{{ $v }}{{ end }}{{ end }}{{ end }}" + M, [U1], [FLAT]),
    ("a property's type: a list, ranged and indexed",
     PROPS + "{{ $k }} {{ len $v.Type }}{{ range $v.Type }} {{ . }}{{ end }}{{ with $v.Type }} {{ index . 0 }}"
     "{{ end }}\n{{ end }}{{ end }}" + M, [U1], [RICH]),
    ("a missing key of the properties map is a zero api.ToolProperty (a struct: true)",
     TOOLS + "{{ with .Function.Parameters.Properties.nope }}[{{ . }}|{{ .Type }}|{{ json . }}]{{ end }}"
     "{{ index .Function.Parameters.Properties \"nope\" }}{{ end }}" + M, [U1], [WEATHER]),
    ("no tools: .Tools is a nil templateTools (prints null, is false, has length 0)",
     "{{ .Tools }}|{{ json .Tools }}|{{ len .Tools }}|{{ if .Tools }}T{{ else }}F{{ end }}" + M, [U1], None),
    ("a tool without properties: a nil map (prints {}, json null)",
     TOOLS + "{{ .Function.Parameters.Properties }}|{{ json .Function.Parameters.Properties }}|"
     "{{ . }}{{ end }}" + M, [U1], [BARE]),
    ("messages printed as Go structs: the action derefs, printf shows &",
     "{{ range .Messages }}{{ . }}|{{ printf \"%v|%+v\" . . }}|{{ print . }}\n{{ end }}", [U1, CALL, RESULT], None),
    ("a message's fields: Images and ToolCalls (nil slices) and their json",
     "{{ range .Messages }}{{ .Images }}|{{ .ToolCalls }}|{{ len .Images }}|{{ json .Images }}|"
     "{{ json .ToolCalls }}|{{ json . }}\n{{ end }}", [U1, CALL], None),
    ("tool calls: the call and its function as structs, the arguments as JSON (keys sorted, numbers float64)",
     "{{ range .Messages }}{{ range .ToolCalls }}{{ . }}|{{ .ID }}|{{ .Function }}|{{ .Function.Index }}|"
     "{{ .Function.Arguments }}|{{ json .Function }}\n{{ end }}{{ end }}", [CALL], None),
    ("ranging over a call's arguments: float64 values, %T",
     "{{ range .Messages }}{{ range .ToolCalls }}{{ range $k, $v := .Function.Arguments }}{{ $k }}={{ $v }} "
     "{{ printf \"%T %v\" $v $v }};{{ end }}{{ .Function.Arguments.nope }}\n{{ end }}{{ end }}", [CALL], None),
    ("%T of the typed values",
     "{{ range .Messages }}{{ printf \"%T\" . }} {{ printf \"%T\" .Images }} {{ range .ToolCalls }}"
     "{{ printf \"%T %T %T\" . .Function .Function.Arguments }}{{ end }}{{ end }} {{ printf \"%T\" .Tools }}" + TOOLS +
     "{{ printf \" %T %T %T %T\" . .Function .Function.Parameters .Function.Parameters.Properties }}{{ end }}",
     [CALL], [WEATHER]),
    # ---- bug 2: Ollama's funcs
    ("toTypeScriptType of each property, and of other values",
     PROPS + "{{ $k }}: {{ toTypeScriptType $v }}\n{{ end }}{{ end }}{{ toTypeScriptType 1 }} "
     "{{ toTypeScriptType .Tools }} {{ toTypeScriptType nil }}" + M, [U1], [WEATHER, RICH]),
    ("toTypeScriptType of a property's anyOf entries and nested properties",
     PROPS + "{{ range $v.AnyOf }}{{ toTypeScriptType . }};{{ end }}{{ end }}{{ end }}" + M, [U1], [RICH]),
    ("toTypeScriptType without an argument: an error",
     "{{ toTypeScriptType }}" + M, [U1], None),
    ("currentDate with an argument that is not a string: an error", "{{ currentDate 1 }}" + M, [U1], None),
    ("yesterdayDate with two string arguments (ignored) is a date of 10 bytes",
     "{{ len (yesterdayDate \"a\" \"b\") }} {{ len currentDate }}" + M, [U1], None),
    # ---- bug 4: a field the struct lacks is an error; map keys stay <no value>
    ("a field a message lacks", "{{ range .Messages }}{{ .Nope }}{{ end }}", [U1], None),
    ("a lowercase field of a message", "{{ range .Messages }}{{ .role }}{{ end }}", [U1], None),
    ("a field a tool lacks", TOOLS + "{{ .Function.Nope }}{{ end }}" + M, [U1], [WEATHER]),
    ("a tool's JSON key is not its field", TOOLS + "{{ .function }}{{ end }}" + M, [U1], [WEATHER]),
    ("a field a tool call lacks", "{{ range .Messages }}{{ range .ToolCalls }}{{ .Nope }}{{ end }}{{ end }}",
     [CALL], None),
    ("a field a property lacks", PROPS + "{{ $v.Nope }}{{ end }}{{ end }}" + M, [U1], [WEATHER]),
    ("a field of nested properties (a *api.ToolPropertiesMap)",
     PROPS + "{{ if eq $k \"flt\" }}{{ $v.Properties.z }}{{ end }}{{ end }}{{ end }}" + M, [U1], [RICH]),
    ("a field of a nil *api.ToolPropertiesMap", PROPS + "{{ $v.Properties.z }}{{ end }}{{ end }}" + M,
     [U1], [WEATHER]),
    ("a field of the root map and of the arguments map: <no value>",
     "{{ .Nope }}|{{ range .Messages }}{{ range .ToolCalls }}{{ .Function.Arguments.nope }}{{ end }}{{ end }}",
     [CALL], None),
    ("range over a struct", TOOLS + "{{ range .Function.Parameters }}{{ end }}{{ end }}" + M, [U1], [BARE]),
    ("len of a struct", "{{ range .Messages }}{{ len . }}{{ end }}", [U1], None),
    ("index of a struct", TOOLS + "{{ index . \"type\" }}{{ end }}" + M, [U1], [WEATHER]),
    ("eq of a property's type (a list) and a string", PROPS + "{{ eq $v.Type \"string\" }}{{ end }}{{ end }}" + M,
     [U1], [WEATHER]),
    # ---- bug 3: fmt's verbs
    ("printf %U, %#U, %c, %q of runes",
     '{{ printf "%U|%#U|%#U|%U|%c|%q|%q|%+q|%#U|%.6U|%8U|%-8U|" 233 233 2 -1 233 233 10 233 128512 65 65 65 }}' + M,
     [U1], None),
    ("printf * widths and precisions, [n] argument indexes",
     '{{ printf "%*d|%-*d|%*d|%.*f|%[2]d %[1]d|%[2]*[1]d|%[1]d %d|%d %[1]d %d" 5 3 4 7 -4 2 2 3.14159 }}' + M,
     [U1], None),
    ("printf bad widths, precisions and indexes",
     '{{ printf "%*d|%.*d|%[3]d|%[x]d|%[]d|%[0]d|%[1]*d|%.[2]d|%[5" "a" 1 -1 5 6 7 }}' + M, [U1], None),
    ("printf widths past 1e6: %!(NOVERB)", '{{ printf "%0999999999d|%.10000000f" 1 2.5 }}' + M, [U1], None),
    ("printf missing and extra arguments, a verb that is not ASCII",
     '{{ printf "%d %s|%v" 1 }}|{{ printf "%d" 1 2 "x" nil }}|{{ printf "%é|%!" 1 }}|{{ printf "%v" }}|'
     '{{ printf "%" }}|{{ printf "%-" }}' + M, [U1], None),
    ("printf integers: bases, flags, zero padding, precision",
     '{{ printf "%x|%X|%#x|%#o|%O|%b|%#b|%08.3d|%+d|% d|%-6d|%06d|%#08x|%.0d|%5.0d|%o|%+v|%x" '
     '255 255 255 8 8 5 5 7 5 5 -3 -3 255 0 0 -8 5 -255 }}' + M, [U1], None),
    ("printf floats: %f %e %g %v with flags, precisions, zero padding",
     '{{ printf "%f|%.2f|%8.3f|%-8.2f|%08.2f|%+.1e|%E|%g|%G|%.3g|%v|%v|%v|%5.1f|% f|%+v|%.3v|%010v" '
     '3.14159 3.14159 -3.14159 2.5 -2.5 12345.678 0.000012 1e21 1e-7 1234.5678 1e6 1e20 100000.0 9.96 1.5 1.5 '
     '3.14159 -1.5 }}' + M, [U1], None),
    ("printf strings: %s %q %x %v with widths, precision, flags",
     '{{ printf "%5s|%-5s|%05s|%.2s|%q|%+q|%#q|%x|% x|%#x|% #X|%.1x|%10.3q|%v|%s|%8.2v" '
     '"ab" "ab" "ab" "héllo" "a\\"b\\n\\u00e9" "é" "raw" "hi" "hi" "hi" "hi" "hi" "héllo" "v" "s" "xyz" }}' + M,
     [U1], None),
    ("printf of the wrong kinds, bools, nil, lists and maps",
     '{{ printf "%d|%s|%t|%5t|%05t|%v|%d|%s|%v|%T|%T|%T|%T" "s" 1 true false true nil nil true '
     '.Tools 1 "s" 1.5 nil }}|{{ range .Messages }}{{ range .ToolCalls }}{{ printf "%v|%d|%s" '
     '.Function.Arguments.deep .Function.Arguments.deep .Function.Arguments }}{{ end }}{{ end }}',
     [CALL], None),
    ("print and println with typed values",
     "{{ range .Messages }}{{ print . 1 2 \"a\" .Role }}|{{ println .ToolCalls }}{{ end }}", [U1, CALL], None),
]
