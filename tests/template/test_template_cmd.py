#!/usr/bin/env python3
"""tests/template/test_template_cmd.py - `wick template` end to end: a model's
own chat template (SmolLM2's GGUF, read with the gguf package) rendered as
Python's jinja2 renders it with transformers' environment, a Jinja file with
--var, an Ollama Go TEMPLATE against the bytes Go's text/template gives, and
the errors. Run by tests/template/run in its virtual environment."""
import atexit
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WICK = os.path.join(ROOT, "build", "release", "wick")
CACHE = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")), "models")
MODEL = os.path.join(CACHE, "gemma-3-270m-q4_k_m.gguf")
SMOL = os.path.join(CACHE, json.load(open(os.path.join(ROOT, "tests", "golden", "smollm2-135m.json")))["model"])

sys.path.insert(0, os.path.join(ROOT, "tests"))
import checks as harness  # noqa: E402
from checks import check  # noqa: E402


def run(args):
    p = subprocess.run([WICK] + args, capture_output=True, timeout=300)
    return p.returncode, p.stdout.decode(), p.stderr.decode(errors="replace")


def jinja2_render(template, variables):
    """The template rendered by Python's jinja2 configured as transformers does
    (tests/template/make-cases.py's environment)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_cases", os.path.join(ROOT, "tests", "template", "make-cases.py"))
    mc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mc)
    return mc.env().from_string(template).render(**variables)


def test_template_command():
    """wick template: a model's own chat template (SmolLM2's GGUF), a Jinja
    file, an Ollama Go TEMPLATE, and its errors."""
    import gguf
    import tempfile
    tmp = tempfile.mkdtemp(prefix="wick-template-")
    atexit.register(shutil.rmtree, tmp, True)
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <|im_end|> there"},
            {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Why is the sky blue?"}]
    mpath = os.path.join(tmp, "msgs.json")
    json.dump(msgs, open(mpath, "w"))
    r = gguf.GGUFReader(SMOL)
    field = lambda k: r.fields[k]
    tmpl = bytes(field("tokenizer.chat_template").parts[-1]).decode()
    tokens = field("tokenizer.ggml.tokens")
    tok = lambda i: bytes(tokens.parts[tokens.data[i]]).decode()
    bos = tok(int(field("tokenizer.ggml.bos_token_id").parts[-1][0]))
    eos = tok(int(field("tokenizer.ggml.eos_token_id").parts[-1][0]))
    for gen in (True, False):
        want = jinja2_render(tmpl, {"messages": msgs, "add_generation_prompt": gen, "bos_token": bos, "eos_token": eos})
        rc, out, err = run(["template", SMOL, "--messages", mpath] + ([] if gen else ["--no-generation-prompt"]))
        check(rc == 0 and out == want, f"SmolLM2's own template, add_generation_prompt {gen}: as jinja2 renders it",
              f"rc {rc} {err}\n  wick:   {out!r}\n  jinja2: {want!r}")
    jpath = os.path.join(tmp, "t.jinja")
    open(jpath, "w").write("{% for m in messages %}[{{ m.role | upper }}] {{ m.content | trim }}{{ sep }}{% endfor %}"
                           "{% if add_generation_prompt %}[BOT]{% endif %}")
    want = jinja2_render(open(jpath).read(), {"messages": msgs, "add_generation_prompt": True, "bos_token": "",
                                               "eos_token": "", "sep": " | "})
    rc, out, err = run(["template", "--jinja", jpath, "--messages", mpath, "--var", 'sep=" | "'])
    check(rc == 0 and out == want, "a Jinja file with --var: as jinja2 renders it", f"{out!r} vs {want!r} {err}")
    for bad in ("=1", "sep", "sep={"):
        rc, out, err = run(["template", "--jinja", jpath, "--messages", mpath, "--var", bad])
        check(rc == 2 and f"--var {bad}: want NAME=JSON" in err, f"--var {bad}: a usage error naming it", err)
    gpath = os.path.join(tmp, "t.go")
    open(gpath, "w").write("{{ if .System }}<|system|>{{ .System }}\n{{ end }}"
                           "{{- range .Messages }}{{ if ne .Role \"system\" }}<|{{ .Role }}|>{{ .Content }}\n{{ end }}{{ end }}"
                           "<|assistant|>")
    rc, out, err = run(["template", "--go", gpath, "--messages", mpath])
    # the bytes Go 1.19's text/template gives for this template and data (.System the last system
    # message; "{{-" trims nothing here: the newline sits inside the if block)
    want = ("<|system|>Be brief.\n<|user|>Hi <|im_end|> there\n<|assistant|>Hello!\n"
            "<|user|>Why is the sky blue?\n<|assistant|>")
    check(rc == 0 and out == want, "an Ollama Go TEMPLATE renders as Go's text/template does", f"{out!r} {err}")
    # Gemma 3 base has no chat template in its GGUF: the Gemma turn format built into wick (the template
    # Gemma 3's tokenizer_config.json carries: the system message folded into the first user turn)
    rc, out, err = run(["template", MODEL, "--messages", mpath])
    want = ("<bos><start_of_turn>user\nBe brief.\n\nHi <|im_end|> there<end_of_turn>\n<start_of_turn>model\n"
            "Hello!<end_of_turn>\n<start_of_turn>user\nWhy is the sky blue?<end_of_turn>\n<start_of_turn>model\n")
    check(rc == 0 and out == want, "Gemma 3 base: the built-in Gemma turn format", f"{out!r} {err}")
    rc, out, err = run(["template", MODEL, "--messages", mpath, "--var", "x=1"])
    check(rc == 2 and "--var" in err, "--var with a built-in format: a usage error", err)
    # a Llama-family model with no chat template at all (the tiny Qwen 2 folder without its
    # chat_template.jinja): raw completion, as Ollama's default TEMPLATE {{ .Prompt }} renders a chat
    base = os.path.join(tmp, "base")
    shutil.copytree(os.path.join(ROOT, "tests", "golden", "qwen2", "hf"), base)
    os.remove(os.path.join(base, "chat_template.jinja"))
    rc, out, err = run(["template", base, "--messages", mpath])
    check(rc == 0 and out == "Hi <|im_end|> thereHello!Why is the sky blue?",
          "a base model: raw completion (each prompt, then its answer)", f"{out!r} {err}")
    open(jpath, "w").write("{% if messages %}{{ raise_exception('only two turns, please') }}{% endif %}")
    rc, out, err = run(["template", "--jinja", jpath, "--messages", mpath])
    check(rc == 1 and "only two turns, please" in err, "raise_exception's message is the error", err)
    open(jpath, "w").write("{% for m in messages %}{{ m.content }")
    rc, out, err = run(["template", "--jinja", jpath, "--messages", mpath])
    check(rc == 1 and "line 1" in err, "a syntax error names its line", err)
    rc, out, err = run(["template", "--jinja", jpath])
    check(rc == 2, "no --messages: a usage error", err)



if __name__ == "__main__":
    test_template_command()
    print(f"wick template: {harness.checks} checks, {harness.failures} failed")
    sys.exit(1 if harness.failures else 0)
