#!/usr/bin/env python3
"""tests/template/test_gotemplates.py - Modelfile TEMPLATEs in the styles
Ollama's documentation shows (docs/template.md, docs/modelfile.md: plain
.Prompt, .System with .Prompt and .Response, .Messages with range, .Tools and
tool calls) rendered by `wick template --go` as Ollama applies them.

The expected strings are worked out by hand from Go's text/template rules
({{- and -}} trim the whitespace beside them, <no value> for a missing key)
and from what Ollama's documentation and template.Execute say: messages of
one role in a row are merged with a blank line; .System is every system
message; a template without .Messages runs once per exchange with .System,
.Prompt and .Response and the last run stops after {{ .Response }}, so the
prompt ends where the answer goes; a template that names neither .Messages
nor .Response gets {{ .Response }} at its end; tools and a tool call's
arguments print as their JSON, keys of maps sorted as Go's encoding/json
writes them. Errors name the template's line.

test_go_reference compares with Go itself: the cases of go_cases.py, whose
outputs Go's text/template gave with Ollama's template data types and funcs
(go_expected.json, recorded by make-go-expected.py with a Go program
built on Ollama's template package, kept outside this repository). test_dates checks currentDate and yesterdayDate against Python's
clock (Go's time.Now in the local time zone)."""
import atexit
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zoneinfo

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WICK = os.path.join(ROOT, "build", "release", "wick")
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "template"))
import checks as harness  # noqa: E402
from checks import check  # noqa: E402
import go_cases  # noqa: E402

TMP = tempfile.mkdtemp(prefix="wick-gotmpl-")
atexit.register(shutil.rmtree, TMP, True)

SYS = {"role": "system", "content": "You are terse."}
U1 = {"role": "user", "content": "Hi!"}
A1 = {"role": "assistant", "content": "Hello."}
U2 = {"role": "user", "content": "Why is the sky blue?"}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "required": ["city"],
                   "properties": {"unit": {"type": "string", "enum": ["c", "f"]},
                                  "city": {"type": "string", "description": "The city"}}}}}
CALL = {"role": "assistant", "content": "",
        "tool_calls": [{"function": {"name": "get_weather", "arguments": {"unit": "c", "city": "Paris"}}}]}
RESULT = {"role": "tool", "content": "22 degrees", "tool_name": "get_weather"}

CHATML_MESSAGES = """{{- range .Messages }}<|im_start|>{{ .Role }}
{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
"""
CHATML_LEGACY = """{{ if .System }}<|im_start|>system
{{ .System }}<|im_end|>
{{ end }}{{ if .Prompt }}<|im_start|>user
{{ .Prompt }}<|im_end|>
{{ end }}<|im_start|>assistant
{{ .Response }}<|im_end|>
"""
LLAMA3 = """{{- if .System }}<|start_header_id|>system<|end_header_id|>

{{ .System }}<|eot_id|>
{{- end }}
{{- range $i, $_ := .Messages }}
{{- $last := eq (len (slice $.Messages $i)) 1 }}
{{- if ne .Role "system" }}<|start_header_id|>{{ .Role }}<|end_header_id|>

{{ .Content }}<|eot_id|>
{{- if and $last (ne .Role "assistant") }}<|start_header_id|>assistant<|end_header_id|>

{{ end }}
{{- end }}
{{- end }}"""
TOOLS = """{{- if .Tools }}Tools:
{{- range .Tools }}
{{ . }}
{{- end }}
{{ end }}
{{- range .Messages }}
{{- if eq .Role "assistant" }}[A]
{{- range .ToolCalls }} call {{ .Function.Name }} {{ .Function.Arguments }}{{ end }}{{ .Content }}
{{ else if eq .Role "tool" }}[T {{ .ToolName }}] {{ .Content }}
{{ else }}[{{ .Role }}] {{ .Content }}
{{ end }}
{{- end }}[A]"""

CASES = [
    # (name, template, messages, tools, expected)
    ("plain .Prompt: a raw completion of the last user message",
     "{{ .Prompt }}", [U2], None, "Why is the sky blue?"),
    ("plain .Prompt over a conversation: each prompt followed by its answer ({{ .Response }} appended)",
     "{{ .Prompt }}", [U1, A1, U2], None, "Hi!Hello.Why is the sky blue?"),
    (".System and .Prompt, no .Response: the answer appended after each exchange",
     "{{ if .System }}<<SYS>>{{ .System }}<</SYS>>\n{{ end }}[INST] {{ .Prompt }} [/INST]",
     [SYS, U1, A1, U2], None,
     "<<SYS>>You are terse.<</SYS>>\n[INST] Hi! [/INST]Hello.[INST] Why is the sky blue? [/INST]"),
    ("legacy ChatML with .Response: every exchange, the last cut after {{ .Response }}",
     CHATML_LEGACY, [SYS, U1, A1, U2], None,
     "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
     "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWhy is the sky blue?<|im_end|>\n"
     "<|im_start|>assistant\n"),
    ("legacy ChatML, the conversation ends with a partial answer: it is continued",
     CHATML_LEGACY, [U1, {"role": "assistant", "content": "Hel"}], None,
     "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nHel"),
    (".Messages with range (ChatML)",
     CHATML_MESSAGES, [SYS, U1, A1, U2], None,
     "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
     "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWhy is the sky blue?<|im_end|>\n"
     "<|im_start|>assistant\n"),
    (".Messages: two user messages in a row are merged with a blank line",
     CHATML_MESSAGES, [U1, {"role": "user", "content": "Are you there?"}], None,
     "<|im_start|>user\nHi!\n\nAre you there?<|im_end|>\n<|im_start|>assistant\n"),
    (".System with .Messages: every system message, joined",
     "{{ .System }}|{{ range .Messages }}{{ .Role }};{{ end }}",
     [SYS, U1, {"role": "system", "content": "Use French."}], None,
     "You are terse.\n\nUse French.|system;user;system;"),
    ("Llama 3 style: $last from slice and len, the assistant header after the last user turn",
     LLAMA3, [SYS, U1, A1, U2], None,
     "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nWhy is the sky blue?<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\n"),
    (".Tools printed as JSON (Ollama's field order, properties sorted), a tool call's arguments as JSON "
     "(keys sorted), the tool result with .ToolName",
     TOOLS, [U2, CALL, RESULT], [WEATHER],
     'Tools:\n{"type":"function","function":{"name":"get_weather","description":"Weather in a city",'
     '"parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string",'
     '"description":"The city"},"unit":{"type":"string","enum":["c","f"]}}}}}\n'
     '[user] Why is the sky blue?\n[A] call get_weather {"city":"Paris","unit":"c"}\n'
     '[T get_weather] 22 degrees\n[A]'),
    ("json of .Tools and index into a tool's fields (.Tools is there only where the template names .Messages)",
     '{{ json .Tools }} {{ (index .Tools 0).Function.Name }}{{ range .Messages }}{{ end }}', [U1], [WEATHER],
     '[{"type":"function","function":{"name":"get_weather","description":"Weather in a city",'
     '"parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string",'
     '"description":"The city"},"unit":{"type":"string","enum":["c","f"]}}}}}] get_weather'),
    ("no tools: .Tools is empty, the if falls through",
     "{{ if .Tools }}T{{ else }}none{{ end }}{{ range .Messages }} {{ .Content }}{{ end }}", [U1], None,
     "none Hi!"),
]


def run(args):
    p = subprocess.run([WICK] + args, capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode(errors="replace")


def render(template, messages, tools=None):
    tpath, mpath = os.path.join(TMP, "t.gotmpl"), os.path.join(TMP, "m.json")
    open(tpath, "w").write(template)
    json.dump({"messages": messages, **({"tools": tools} if tools else {})}, open(mpath, "w"))
    return run(["template", "--go", tpath, "--messages", mpath])


def test_go_templates():
    """A dozen Modelfile TEMPLATEs in Ollama's documented styles."""
    for name, template, messages, tools, want in CASES:
        rc, out, err = render(template, messages, tools)
        check(rc == 0 and out == want, name, f"rc {rc} {err}\n  wick: {out!r}\n  want: {want!r}")


def test_go_template_errors():
    """Parse and execution errors name the line."""
    rc, out, err = render("{{ index .Tools 0 }}", [U1], [WEATHER])
    check(rc == 1 and "index of untyped nil" in err, "a template without .Messages has no .Tools (as in Ollama)", err)
    rc, out, err = render("<|user|>\n{{ .Prompt }}\n{{ if .System }}{{ .System }}\n", [U1])
    check(rc == 1 and "line 3" in err and "not closed" in err, "an unclosed if: an error naming line 3", err)
    rc, out, err = render("a\nb\n{{ range .Messages }}{{ .Content.Text }}{{ end }}", [U1])
    check(rc == 1 and "line 3" in err, "a field of a string: an execution error naming line 3", err)
    rc, out, err = render("{{ template \"x\" }}", [U1])
    check(rc == 1 and "line 1" in err, "an undefined template: an error naming line 1", err)
    # wick's limit (Go has none so low): nesting past WK_GOTMPL_MAX_DEPTH in the data is refused
    deep = {}
    for _ in range(150):
        deep = {"x": deep}
    rc, out, err = render("{{ range .Messages }}{{ end }}", [{**CALL, "tool_calls": [
        {"function": {"name": "f", "arguments": deep}}]}])
    check(rc == 1 and "arguments nested deeper than" in err, "tool call arguments nested 150 deep: a clear error", err)
    prop = {"type": "object"}
    for _ in range(80):
        prop = {"type": "object", "properties": {"p": prop}}
    rc, out, err = render("{{ range .Messages }}{{ end }}", [U1], [{"type": "function", "function": {
        "name": "f", "parameters": {"type": "object", "properties": {"a": prop}}}}])
    check(rc == 1 and "tools nested deeper than" in err, "tool parameters nested 80 deep: a clear error", err)


def go_error_text(err):
    """The part of a Go template error after its position: text/template
    writes 'template: :LINE:COL: executing "" at <NODE>: MESSAGE'."""
    return err.split(">: ", 1)[1] if ">: " in err else err


def test_go_reference():
    """Every case of go_cases.py renders as Go's text/template did with
    Ollama's data and funcs (go_expected.json); an error where Go gave one,
    with Go's message."""
    make = __import__("make-go-expected")
    rec = json.load(open(os.path.join(ROOT, "tests", "template", "go_expected.json")))
    check(set(rec["cases"]) == {c[0] for c in go_cases.CASES}, "go_expected.json records every case of go_cases.py",
          "run tests/template/make-go-expected.py")
    for name, template, messages, tools in go_cases.CASES:
        want = rec["cases"].get(name)
        if not want or want["hash"] != make.case_hash(template, messages, tools):
            check(False, f"{name}: recorded", "stale: run tests/template/make-go-expected.py")
            continue
        rc, out, err = render(template, messages, tools)
        if "out" in want:
            check(rc == 0 and out == want["out"], f"{name} (as {rec['go']})",
                  f"rc {rc} {err}\n  wick: {out!r}\n  go:   {want['out']!r}")
        else:
            msg = go_error_text(want["err"])
            check(rc == 1 and msg in err, f"{name}: an error (as {rec['go']})",
                  f"rc {rc} out {out!r}\n  wick: {err.strip()!r}\n  go:   {want['err']!r}")


def test_dates():
    """currentDate and yesterdayDate: Go's time.Now().Format("2006-01-02")
    and the day before, in the local time zone (TZ), as Python's clock
    gives them (read before and after, in case midnight passes)."""
    tpath, mpath = os.path.join(TMP, "d.gotmpl"), os.path.join(TMP, "d.json")
    open(tpath, "w").write('{{ currentDate }} {{ yesterdayDate }} {{ currentDate "%Y" }}{{ range .Messages }}{{ end }}')
    json.dump({"messages": [go_cases.U1]}, open(mpath, "w"))
    for tz in ("UTC", "Pacific/Kiritimati", "America/Los_Angeles"):
        zone = zoneinfo.ZoneInfo(tz)
        before = datetime.datetime.now(zone).date()
        p = subprocess.run([WICK, "template", "--go", tpath, "--messages", mpath], capture_output=True, timeout=60,
                           env={**os.environ, "TZ": tz})
        after = datetime.datetime.now(zone).date()
        want = {f"{d} {d - datetime.timedelta(days=1)} {d}" for d in (before, after)}
        check(p.returncode == 0 and p.stdout.decode() in want, f"currentDate, yesterdayDate with TZ={tz}",
              f"{p.stdout!r} {p.stderr!r} want {sorted(want)}")


if __name__ == "__main__":
    test_go_templates()
    test_go_template_errors()
    test_go_reference()
    test_dates()
    print(f"Go templates: {harness.checks} checks, {harness.failures} failed")
    sys.exit(1 if harness.failures else 0)
