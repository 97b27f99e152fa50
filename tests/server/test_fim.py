"""Fill in the middle: Ollama's /api/generate "suffix" and OpenAI's legacy
/v1/completions "suffix" on Qwen2.5-Coder-1.5B (whose vocabulary has
<|fim_prefix|>, <|fim_suffix|>, <|fim_middle|>), through the real `ollama`
and `openai` clients. Run from test_server.py (its Server and store).

References: the prompt format from first principles, as Qwen2.5-Coder's
model card gives it and llama-server's format_prompt_infill builds it
(prefix-suffix-middle: <|fim_prefix|>{prefix}<|fim_suffix|>{suffix}
<|fim_middle|>): the answer must be the model's greedy continuation of
that prompt sent raw, token for token; and what the middle must say (the
body of add() that the suffix calls). Ollama's rules for the rest: a Go
TEMPLATE that names .Suffix renders the prompt ("insert" in the
capabilities), a model that cannot fill in is a 400 "does not support
insert", an empty prompt only loads the model, raw mode takes no suffix.
"""
import ollama
import openai

from checks import check

PREFIX = "def add(a, b):\n    "
SUFFIX = "\n\n\nprint(add(2, 3))\n"
FIM = "<|fim_prefix|>" + PREFIX + "<|fim_suffix|>" + SUFFIX + "<|fim_middle|>"
# Ollama's own template for its qwen2.5-coder models (ollama.com/library/qwen2.5-coder), the FIM branch
GO_TEMPLATE = ("{{- if .Suffix }}<|fim_prefix|>{{ .Prompt }}<|fim_suffix|>{{ .Suffix }}<|fim_middle|>"
               "{{- else }}<|im_start|>user\n{{ .Prompt }}<|im_end|>\n<|im_start|>assistant\n{{ end }}")


def test_fill_in_middle(s, qwen, smol):
    greedy = {"temperature": 0, "num_predict": 10}
    want = s.ollama.generate(model=qwen, prompt=FIM, raw=True, options=greedy)
    got = s.ollama.generate(model=qwen, prompt=PREFIX, suffix=SUFFIX, options=greedy)
    check(got.response == want.response and got.prompt_eval_count == want.prompt_eval_count
          and got.response.startswith("return a + b") and got.prompt_eval_count < len(got.context or []) <= got.prompt_eval_count + got.eval_count,
          "ollama generate with a suffix: the greedy middle of the PSM prompt (return a + b), token for token "
          "as that prompt sent raw; its context the prompt's and the middle's ids", f"{got.response!r} vs {want.response!r}; {got.prompt_eval_count} vs "
          f"{want.prompt_eval_count}")
    # the prefix and suffix stay text: control-token spelling in them is not the control token
    odd = s.ollama.generate(model=qwen, prompt="s = '<|fim_middle|>'\n", suffix=SUFFIX, options=greedy)
    lit = s.ollama.generate(model=qwen, prompt=FIM.replace(PREFIX, "s = '<|fim_middle|>'\n"), raw=True,
                            options=greedy)
    check(odd.prompt_eval_count > lit.prompt_eval_count,
          "a prefix that spells <|fim_middle|> is tokenized as text (more tokens than the control token)",
          f"{odd.prompt_eval_count} vs {lit.prompt_eval_count}")
    chunks = list(s.ollama.generate(model=qwen, prompt=PREFIX, suffix=SUFFIX, options=greedy, stream=True))
    check("".join(c.response for c in chunks) == got.response and chunks[-1].done,
          "ollama generate with a suffix, streamed: the same middle", repr([c.response for c in chunks]))
    oc = s.openai.completions.create(model=qwen, prompt=PREFIX, suffix=SUFFIX, max_tokens=10, temperature=0)
    check(oc.choices[0].text == got.response, "openai completions with a suffix: the same middle",
          repr(oc.choices[0].text))

    st, body = s.post("/api/create", {"model": "qwen-fim-go", "from": qwen, "template": GO_TEMPLATE})
    check(st == 200, "create a model whose Go TEMPLATE names .Suffix", str(body))
    go = s.ollama.generate(model="qwen-fim-go", prompt=PREFIX, suffix=SUFFIX, options=greedy)
    check(go.response == got.response and go.prompt_eval_count == got.prompt_eval_count,
          "a Go TEMPLATE's FIM branch (Ollama's qwen2.5-coder template): the same prompt and middle",
          f"{go.response!r} {go.prompt_eval_count}")
    caps = {m: list(s.ollama.show(m).capabilities or []) for m in (qwen, "qwen-fim-go", smol)}
    check("insert" in caps[qwen] and "insert" in caps["qwen-fim-go"] and "insert" not in caps[smol],
          "show: insert for a vocabulary with FIM tokens and for a TEMPLATE naming .Suffix, not for SmolLM2",
          str(caps))

    try:
        s.ollama.generate(model=smol, prompt=PREFIX, suffix=SUFFIX, options=greedy)
        check(False, "a model without FIM tokens refuses a suffix")
    except ollama.ResponseError as e:
        check(e.status_code == 400 and "does not support insert" in e.error,
              "a model without FIM tokens: 400 does not support insert", e.error)
    try:
        s.openai.completions.create(model=smol, prompt=PREFIX, suffix=SUFFIX, max_tokens=2)
        check(False, "openai: a model without FIM tokens refuses a suffix")
    except openai.BadRequestError as e:
        check("does not support insert" in str(e), "openai: a suffix on SmolLM2 is 400", str(e))
    st, body = s.post("/api/generate", {"model": qwen, "prompt": PREFIX, "suffix": SUFFIX, "raw": True})
    check(st == 400 and "suffix" in body["error"], "raw mode with a suffix: 400", str(body))
    st, body = s.post("/api/generate", {"model": qwen, "prompt": PREFIX, "suffix": SUFFIX, "think": True})
    check(st == 400 and "suffix" in body["error"], "think with a suffix: 400, not dropped", str(body))
    st, body = s.post("/api/generate", {"model": qwen, "prompt": PREFIX, "suffix": 3})
    check(st == 400 and "suffix" in body["error"], "a suffix that is not a string: 400", str(body))
    st, body = s.post("/api/chat", {"model": qwen, "messages": [{"role": "user", "content": "x"}], "suffix": "y"})
    check(st == 400 and "suffix" in body["error"], "/api/chat with a suffix: 400, not dropped", str(body))
    st, body = s.post("/api/generate", {"model": qwen, "prompt": "", "suffix": SUFFIX, "stream": False})
    check(st == 200 and body.get("done_reason") == "load", "an empty prompt with a suffix only loads the model "
          "(as Ollama)", str(body))
