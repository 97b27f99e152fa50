"""gpt-oss's harmony format through `wick serve` (the tiny random gpt-oss of
tests/golden/gpt-oss, its GGUF made by llama.cpp's converter with the real
openai-gpt-oss-120b chat template): Ollama's think levels and OpenAI's
reasoning_effort reach the template's reasoning effort, and bad values are
400s naming the field. Run from test_server.py (its Server and store).

References: the harmony template itself (its system message says
"Reasoning: <effort>"), rendered by /api/apply-template; the mapping of
reasoning_effort is Ollama's OpenAI layer's (docs/reference/
ollama-mlx-runner.md, chat completions): none -> think off, minimal -> low,
max -> the highest level.
"""
import os
import subprocess

import openai

from checks import check

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GGUF = os.path.join(ROOT, "tests", "golden", "gpt-oss", "gpt-oss-f32.gguf")
MSGS = [{"role": "user", "content": "Say hi."}]


def test_harmony(s, wick):
    mf = os.path.join(s.dir, "gptoss.Modelfile")
    with open(mf, "w") as f:
        f.write(f"FROM {GGUF}\n")
    p = subprocess.run([wick, "create", "gptoss", "-f", mf], capture_output=True, text=True,
                       env=dict(os.environ, WICK_MODELS=s.dir))
    check(p.returncode == 0, "setup: wick create gptoss from the gpt-oss fixture", p.stderr)

    # Ollama's think levels set the template's reasoning effort
    prompts = {}
    for level in ("low", "medium", "high"):
        st, r = s.post("/api/apply-template", {"model": "gptoss", "messages": MSGS, "think": level})
        prompts[level] = r.get("prompt", "")
        check(st == 200 and f"Reasoning: {level}" in prompts[level], f"think {level!r} renders 'Reasoning: {level}'",
              str(r)[:300])

    # OpenAI's reasoning_effort: the same prompts, seen through prompt_tokens
    ollama_counts = {}
    for level in ("low", "medium", "high"):
        st, r = s.post("/api/chat", {"model": "gptoss", "messages": MSGS, "think": level,
                                     "options": {"num_predict": 1, "temperature": 0}})
        check(st == 200, f"/api/chat with think {level!r} answers", str(r)[:300])
        ollama_counts[level] = r.get("prompt_eval_count")
    distinct = len(set(ollama_counts.values())) == 3
    check(distinct, "the three levels' prompts differ in length (so the counts below tell them apart)",
          str(ollama_counts))
    cl = openai.OpenAI(base_url=f"http://{s.host}/v1", api_key="x")
    for effort, level in (("minimal", "low"), ("low", "low"), ("medium", "medium"), ("high", "high"),
                          ("max", "high")):
        c = cl.chat.completions.create(model="gptoss", messages=MSGS, max_tokens=1, temperature=0,
                                       reasoning_effort=effort)
        check(c.usage.prompt_tokens == ollama_counts[level],
              f"reasoning_effort {effort!r} renders the prompt of think {level!r}",
              f"{c.usage.prompt_tokens} vs {ollama_counts}")
    for body, name in (({"reasoning_effort": "extreme"}, "reasoning_effort"),
                       ({"reasoning": {"effort": 3}}, "reasoning.effort"),
                       ({"reasoning": "high"}, "reasoning")):
        st, r = s.post("/v1/chat/completions", dict({"model": "gptoss", "messages": MSGS, "max_tokens": 1}, **body))
        e = r.get("error")
        msg = e.get("message", "") if isinstance(e, dict) else str(e)
        check(st == 400 and name in msg, f"{body}: 400 naming {name}", str(r)[:300])
    st, r = s.post("/v1/chat/completions", {"model": "gptoss", "messages": MSGS, "max_tokens": 1,
                                            "reasoning": {"effort": "high"}})
    check(st == 200 and r["usage"]["prompt_tokens"] == ollama_counts["high"],
          "reasoning.effort 'high' renders the prompt of think 'high'", str(r)[:300])
