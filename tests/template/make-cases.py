#!/usr/bin/env python3
"""make-cases.py TEMPLATES_DIR OUT_DIR - renders every *.jinja of TEMPLATES_DIR
with jinja2 configured as transformers does (ImmutableSandboxedEnvironment,
trim_blocks, lstrip_blocks, loopcontrols, the generation tag, their tojson,
raise_exception, strftime_now pinned to 2026-12-01 00:00 UTC) on a fixed set
of conversations; writes OUT_DIR/cases/N.json (the variables) and
OUT_DIR/expected/TEMPLATE.N.out (the output) or .err (the error). Cases of
one template's own (EXTRA: harmony's developer message, thinking, reasoning
effort and tool calls for gpt-oss) follow the common ones; other templates
have no expected file for them, and run skips those."""
import datetime, json, os, sys
import jinja2
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED = datetime.datetime(2026, 12, 1, 0, 0, 0)


class Generation(Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_gen"), [], [], body).set_lineno(lineno)

    def _gen(self, caller):
        return caller()


def env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, jinja2.ext.loopcontrols])
    e.filters["tojson"] = tojson
    e.globals["raise_exception"] = raise_exception
    e.globals["strftime_now"] = lambda fmt: FIXED.strftime(fmt)
    e.globals["namespace"] = jinja2.utils.Namespace
    e.globals["dict"] = dict
    return e


TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City"}},
                         "required": ["city"]}}}]
# an array parameter: Hermes 2 Pro / 3's json_to_python_type looks up basic_type_map[undefined] on its items
TOOLS_ARRAY = [{"type": "function", "function": {"name": "search", "description": "Search",
                "parameters": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
                               "required": ["tags"]}}}]
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}


def conversations():
    u = lambda t: {"role": "user", "content": t}
    a = lambda t: {"role": "assistant", "content": t}
    s = {"role": "system", "content": "You are helpful."}
    convs = [
        ([u("Hello")], {}),
        ([s, u("Hello")], {}),
        ([u("Hi"), a("Hello!"), u("How are you?")], {}),
        ([s, u("Hi"), a("Hello!"), u("How are you?")], {}),
        ([u("Hello")], {"add_generation_prompt": False}),
        ([s, u("Hi"), a("Hello!")], {"add_generation_prompt": False}),
        ([u("Weather in Paris?")], {"tools": TOOLS}),
        ([s, u("Weather in Paris?"), {"role": "assistant", "content": "", "tool_calls": [CALL]},
          {"role": "tool", "content": "{\"temp\": 20}", "tool_call_id": "call_1", "name": "get_weather"}], {"tools": TOOLS}),
        ([u("Think"), {"role": "assistant", "content": "Answer", "reasoning_content": "Let me think"}, u("Again")], {}),
        ([u("Héllo wörld — 你好 🎉"), a("Ça va ✓")], {"add_generation_prompt": False}),
        ([u("")], {}),
        ([s, u("  spaced  \n lines\n"), a("ok"), u("bye")], {"enable_thinking": False}),
        ([u("Weather?"), {"role": "assistant", "content": None, "tool_calls": [CALL]},
          {"role": "tool", "content": "sunny", "tool_call_id": "call_1"}], {"tools": TOOLS, "add_generation_prompt": False}),
        ([u("Find posts tagged a and b")], {"tools": TOOLS_ARRAY}),
        # a tool call without a content key (transformers drops None values): undefined in a dict literal
        ([u("Weather?"), {"role": "assistant", "tool_calls": [CALL]},
          {"role": "tool", "content": "sunny", "tool_call_id": "call_1"}], {"tools": TOOLS}),
    ]
    for msgs, extra in convs:
        v = {"messages": msgs, "tools": None, "documents": None, "add_generation_prompt": True,
             "bos_token": "<s>", "eos_token": "</s>"}
        v.update(extra)
        yield v


def harmony_conversations():
    """gpt-oss (harmony): developer instructions, a thinking assistant turn,
    tool calls with their thinking, tool results, reasoning_effort."""
    u = lambda t: {"role": "user", "content": t}
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    convs = [
        ([{"role": "developer", "content": "Answer in French."}, u("Hello")], {"reasoning_effort": "high"}),
        ([{"role": "system", "content": "You are terse."}, u("2+2?"),
          {"role": "assistant", "content": "4", "thinking": "Two and two make four."}, u("And 3+3?")],
         {"reasoning_effort": "low"}),
        ([u("Weather in Paris?"), {"role": "assistant", "content": "", "thinking": "I should call the tool.",
                                   "tool_calls": [call]},
          {"role": "tool", "content": "{\"temp\": 20}", "tool_call_id": "c1"}], {"tools": TOOLS}),
        ([u("Weather in Paris?"), {"role": "assistant", "content": "", "tool_calls": [call]},
          {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
          {"role": "assistant", "content": "It is sunny.", "thinking": "The tool said sunny."}, u("Thanks")],
         {"tools": TOOLS, "reasoning_effort": "medium", "builtin_tools": ["browser", "python"]}),
        ([u("Hi"), {"role": "assistant", "content": "Hello!", "thinking": "Greet back."}],
         {"add_generation_prompt": False}),
    ]
    for msgs, extra in convs:
        v = {"messages": msgs, "tools": None, "documents": None, "add_generation_prompt": True,
             "bos_token": "<s>", "eos_token": "</s>"}
        v.update(extra)
        yield v


EXTRA = {"openai-gpt-oss-120b.jinja": harmony_conversations}


def main():
    tdir, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.join(out, "cases"), exist_ok=True)
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    cases = list(conversations())
    own = {}  # template -> the indices of its own cases
    for name, make in EXTRA.items():
        own[name] = range(len(cases), len(cases) + len(list(make())))
        cases += list(make())
    shared = len(list(conversations()))
    for i, v in enumerate(cases):
        with open(os.path.join(out, "cases", f"{i}.json"), "w") as f:
            json.dump(v, f, ensure_ascii=False)
    e = env()
    for name in sorted(os.listdir(tdir)):
        if not name.endswith(".jinja"):
            continue
        src = open(os.path.join(tdir, name), encoding="utf-8").read()
        try:
            t = e.from_string(src)
            err_all = None
        except Exception as ex:
            t, err_all = None, f"{type(ex).__name__}: {ex}"
        for i, v in enumerate(cases):
            if i >= shared and i not in own.get(name, ()):
                continue
            base = os.path.join(out, "expected", f"{name}.{i}")
            try:
                if err_all:
                    raise RuntimeError(err_all)
                text = t.render(**v)
                open(base + ".out", "w", encoding="utf-8", newline="").write(text)
            except Exception as ex:
                open(base + ".err", "w").write(f"{type(ex).__name__}: {ex}\n")


if __name__ == "__main__":
    main()
