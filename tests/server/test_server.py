#!/usr/bin/env python3
"""`wick serve` driven by the real `ollama`, `openai` and `anthropic` Python clients and by
raw HTTP, on the real SmolLM2-135M (and Gemma 3 270M for a second model,
Qwen2.5-Coder-1.5B-Instruct for a chat that ends by itself), on a free port
with a temporary models folder.

References: the golden fixtures of transformers' greedy answers
(tests/golden/smollm2-135m.json "text_20") and transformers' log-softmax
(tests/golden/logprobs.json); the rest are properties a client relies on
(an error's status and message, the SSE and NDJSON shapes, cancellation
observed through /api/ps, equal answers from a cached and a fresh runner).
"""
import atexit
import datetime
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import ollama
import openai

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WICK = os.path.join(ROOT, "build", "release", "wick")
CACHE = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")), "models")
SMOL_FIX = json.load(open(os.path.join(ROOT, "tests", "golden", "smollm2-135m.json"), encoding="utf-8"))
LP_FIX = json.load(open(os.path.join(ROOT, "tests", "golden", "logprobs.json"), encoding="utf-8"))
SMOL = "smollm2"
QWEN_FIX = json.load(open(os.path.join(ROOT, "tests", "golden", "qwen2.5-coder-1.5b.json"), encoding="utf-8"))
QWEN = "qwen2.5-coder"

sys.path.insert(0, os.path.join(ROOT, "tests"))
from checks import check, finish  # noqa: E402


def case(name):
    return next(c for c in SMOL_FIX["cases"] if c["name"] == name)


STORE = None


def make_store():
    """A temporary model store with smollm2 and gemma3, made by `wick create`."""
    global STORE
    if STORE:
        return STORE
    STORE = tempfile.mkdtemp(prefix="wick-serve-store-")
    atexit.register(shutil.rmtree, STORE, True)  # its blobs are copies of the GGUFs (~1.4 GB)
    for name, gguf in (("smollm2", SMOL_FIX["model"]), ("gemma3", "gemma-3-270m-q4_k_m.gguf"),
                       (QWEN, QWEN_FIX["model"])):
        mf = os.path.join(STORE, name + ".Modelfile")
        with open(mf, "w") as f:
            f.write(f"FROM {os.path.join(CACHE, gguf)}\n")
        subprocess.run([WICK, "create", name, "-f", mf], env=dict(os.environ, WICK_MODELS=STORE),
                       check=True, capture_output=True)
    return STORE


class Server:
    def __init__(self):
        self.dir = make_store()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.host = f"127.0.0.1:{self.port}"
        env = dict(os.environ, WICK_HOST=self.host, WICK_MODELS=self.dir)
        self.proc = subprocess.Popen([WICK, "serve"], env=env, stderr=subprocess.PIPE)
        for _ in range(100):
            try:
                if self.raw("GET", "/")[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)
        self.ollama = ollama.Client(host=f"http://{self.host}")
        self.openai = openai.OpenAI(base_url=f"http://{self.host}/v1", api_key="unused", max_retries=0)

    def raw(self, method, path, body=None, timeout=120):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request(method, path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def post(self, path, obj):
        obj = dict(obj)
        obj.setdefault("stream", False)
        status, data = self.raw("POST", path, json.dumps(obj))
        return status, json.loads(data)

    def ps(self):
        return {m["name"]: m for m in self.post_get("/api/ps")["models"]}

    def post_get(self, path):
        return json.loads(self.raw("GET", path)[1])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=20)


def greedy(n):
    return {"temperature": 0, "num_predict": n}


# ------------------------------------------------------------------ 1: the clients

def test_ollama_client(s):
    c = case("english")
    prompt = c["messages"][0]["content"]
    r = s.ollama.chat(model=SMOL, messages=c["messages"], options=greedy(20))
    check(r.message.content == c["text_20"], "ollama chat: greedy answer equals transformers' first 20 tokens",
          f"{r.message.content!r} vs {c['text_20']!r}")
    check(r.done_reason == "length" and r.eval_count == 20 and r.prompt_eval_count == len(c["prompt_ids"]),
          "ollama chat: done_reason length, eval_count 20, prompt_eval_count = prompt tokens",
          f"{r.done_reason} {r.eval_count} {r.prompt_eval_count} vs {len(c['prompt_ids'])}")
    check(r.total_duration >= r.eval_duration > 0 and r.prompt_eval_duration > 0, "ollama chat: durations")
    parts = list(s.ollama.chat(model=SMOL, messages=c["messages"], options=greedy(20), stream=True))
    check("".join(p.message.content for p in parts) == c["text_20"] and parts[-1].done
          and not any(p.done for p in parts[:-1]), "ollama chat stream: chunks add up to the answer, done last")
    # generate: the same turn rendered by the server from prompt + system-less request
    g = s.ollama.generate(model=SMOL, prompt=prompt, options=greedy(20))
    check(g.response == c["text_20"], "ollama generate: same answer as chat", repr(g.response))
    gs = list(s.ollama.generate(model=SMOL, prompt=prompt, options=greedy(20), stream=True))
    check("".join(p.response for p in gs) == c["text_20"] and gs[-1].eval_count == 20,
          "ollama generate stream")
    # options act: num_predict, stop, seed
    st = s.ollama.generate(model=SMOL, prompt=prompt, options={"temperature": 0, "stop": ["dance"]})
    check(st.response == c["text_20"].split("dance")[0] and st.done_reason == "stop",
          "ollama generate: stop string cuts before it", repr(st.response))
    a = s.ollama.generate(model=SMOL, prompt="Tell me a story.", options={"seed": 7, "num_predict": 16, "temperature": 1})
    b = s.ollama.generate(model=SMOL, prompt="Tell me a story.", options={"seed": 7, "num_predict": 16, "temperature": 1})
    d = s.ollama.generate(model=SMOL, prompt="Tell me a story.", options={"seed": 8, "num_predict": 16, "temperature": 1})
    check(a.response == b.response and a.response != d.response, "ollama generate: seed repeats, another seed differs")
    raw = s.ollama.generate(model=SMOL, prompt="The alphabet: ABC", raw=True, options=greedy(4))
    check(raw.response.startswith("DEF"), "ollama generate raw: continues the text", repr(raw.response))
    # Ollama's Go client sends "system": "" and "template": "" with every request (no omitempty):
    # empty ones are no template or system, as Ollama reads them; a real one is refused
    for extra, ok in (({"system": "", "template": "", "context": []}, True), ({"system": "Be brief."}, False),
                      ({"template": "{{ .Prompt }}"}, False), ({"context": [1, 2]}, False)):
        st, body = s.post("/api/generate", dict({"model": SMOL, "prompt": "The alphabet: ABC", "raw": True,
                                                 "stream": False, "options": greedy(4)}, **extra))
        check((st == 200 and body.get("response") == raw.response) if ok else
              (st == 400 and "raw mode does not support" in body.get("error", "")),
              f"raw generate with {extra}: {'as without them' if ok else '400'}", f"{st} {body}")
    lg = s.ollama.generate(model=SMOL, prompt=prompt, options=greedy(3), logprobs=True, top_logprobs=3)
    check(len(lg.logprobs) == 3 and all(len(e.top_logprobs) == 3 for e in lg.logprobs)
          and "".join(e.token for e in lg.logprobs) == lg.response
          and all(e.logprob == e.top_logprobs[0].logprob for e in lg.logprobs),
          "ollama generate: logprobs in Ollama's shape, one per token, greedy = most likely", str(lg.logprobs)[:300])
    tags = [m.model for m in s.ollama.list().models]
    check("smollm2:latest" in tags and "gemma3:latest" in tags, "ollama list", str(tags))
    sh = s.ollama.show(SMOL)
    check(sh.details.family == "llama" and sh.details.quantization_level == "Q4_1"
          and sh.modelinfo["llama.context_length"] == 8192, "ollama show", str(sh.details))
    ps = s.ollama.ps().models
    check(any(m.model == "smollm2:latest" and m.context_length == 4096 for m in ps), "ollama ps", str(ps))
    try:
        s.ollama.generate(model="nope", prompt="x")
        check(False, "ollama: unknown model raises")
    except ollama.ResponseError as e:
        check(e.status_code == 404 and "model 'nope' not found" in e.error, "ollama: unknown model 404", str(e))


def test_openai_client(s):
    c = case("english")
    r = s.openai.chat.completions.create(model=SMOL, messages=c["messages"], max_tokens=20, temperature=0)
    check(r.choices[0].message.content == c["text_20"] and r.choices[0].finish_reason == "length",
          "openai chat: greedy answer", repr(r.choices[0].message.content))
    check(r.usage.prompt_tokens == len(c["prompt_ids"]) and r.usage.completion_tokens == 20
          and r.usage.total_tokens == r.usage.prompt_tokens + 20, "openai chat: usage", str(r.usage))
    # logprobs against transformers' log-softmax of the first step
    fx = next(m for m in LP_FIX["models"] if m["model"] == SMOL_FIX["model"])
    ref = next(x for x in fx["cases"] if x["name"] == "english")
    r = s.openai.chat.completions.create(model=SMOL, messages=c["messages"], max_tokens=1, temperature=0,
                                         logprobs=True, top_logprobs=20)
    lp = r.choices[0].logprobs.content[0]
    got = [t.logprob for t in lp.top_logprobs]
    want = [v for _, v in ref["top"]]
    check(len(got) == 20 and max(abs(a - b) for a, b in zip(got, want)) < 0.02,
          "openai chat: top_logprobs equal transformers' within 0.02", f"{got[:4]} vs {want[:4]}")
    check(lp.logprob == lp.top_logprobs[0].logprob and bytes(lp.bytes).decode() == lp.token,
          "openai chat: the greedy token is the most likely, bytes spell it")
    # streaming with usage: finish_reason null until the last choice chunk, one usage chunk before the end
    chunks = list(s.openai.chat.completions.create(model=SMOL, messages=c["messages"], max_tokens=20, temperature=0,
                                                   stream=True, stream_options={"include_usage": True},
                                                   logprobs=True, top_logprobs=2))
    with_choices = [k for k in chunks if k.choices]
    usage = [k for k in chunks if k.usage is not None]
    check("".join(k.choices[0].delta.content or "" for k in with_choices) == c["text_20"], "openai stream: text")
    check(all(k.choices[0].finish_reason is None for k in with_choices[:-1])
          and with_choices[-1].choices[0].finish_reason == "length", "openai stream: finish_reason null until the last")
    check(len(usage) == 1 and usage[0] is chunks[-1] and usage[0].choices == []
          and usage[0].usage.completion_tokens == 20, "openai stream: exactly one usage chunk, empty choices, last")
    check(sum(len(k.choices[0].logprobs.content) for k in with_choices if k.choices[0].logprobs) == 20,
          "openai stream: one logprob entry per token")
    # stop (string and list), seed
    r = s.openai.chat.completions.create(model=SMOL, messages=c["messages"], temperature=0, stop=["dance", "xyz"])
    check(r.choices[0].message.content == c["text_20"].split("dance")[0] and r.choices[0].finish_reason == "stop",
          "openai chat: stop list", repr(r.choices[0].message.content))
    runs = [s.openai.chat.completions.create(model=SMOL, messages=[{"role": "user", "content": "Tell me a story."}],
                                             max_tokens=16, seed=sd).choices[0].message.content for sd in (3, 3, 4)]
    check(runs[0] == runs[1] and runs[0] != runs[2], "openai chat: seed repeats, another differs")
    # llama-server's and vLLM's top_k, min_p and repetition_penalty are applied: top_k 1 makes three
    # seeds at temperature 1.5 give the greedy text; without it they differ
    story = [{"role": "user", "content": "Tell me a story."}]
    hot = [s.openai.chat.completions.create(model=SMOL, messages=story, max_tokens=12, temperature=1.5, seed=sd,
                                            **kw).choices[0].message.content
           for kw in ({}, {"extra_body": {"top_k": 1}}) for sd in (0, 1, 2)]
    cold = s.openai.chat.completions.create(model=SMOL, messages=story, max_tokens=12, temperature=0).choices[0].message.content
    check(len(set(hot[:3])) > 1 and hot[3:] == [cold] * 3, "openai chat: top_k 1 gives greedy text at any seed", str(hot))
    # logit_bias: banning the greedy first token changes it
    first = s.openai.chat.completions.create(model=SMOL, messages=c["messages"], max_tokens=1, temperature=0,
                                             logprobs=True, top_logprobs=2).choices[0].logprobs.content[0]
    banned_id = c["steps"][0]["id"]
    r = s.openai.chat.completions.create(model=SMOL, messages=c["messages"], max_tokens=1, temperature=0,
                                         logit_bias={str(banned_id): -100}, logprobs=True, top_logprobs=2)
    check(r.choices[0].logprobs.content[0].token == first.top_logprobs[1].token,
          "openai chat: logit_bias -100 on the greedy token gives the runner-up",
          f"{r.choices[0].logprobs.content[0].token!r} vs {first.top_logprobs[1].token!r}")
    # completions (raw prompt) and models
    r = s.openai.completions.create(model=SMOL, prompt="The alphabet: ABC", max_tokens=4, temperature=0)
    check(r.choices[0].text.startswith("DEF") and r.object == "text_completion", "openai completions", repr(r.choices[0].text))
    parts = list(s.openai.completions.create(model=SMOL, prompt="The alphabet: ABC", max_tokens=4, temperature=0,
                                             stream=True))
    check("".join(p.choices[0].text for p in parts) == r.choices[0].text, "openai completions stream")
    listed = s.openai.models.list().data
    ids = [m.id for m in listed]
    check("smollm2:latest" in ids, "openai models", str(ids))
    # as Ollama's: created is the model's modified time (the same on every call), owned_by its namespace
    tags = {m.model: m.modified_at for m in s.ollama.list().models}
    sm = next((m for m in listed if m.id == "smollm2:latest"), None)
    again = next((m for m in s.openai.models.list().data if m.id == "smollm2:latest"), None)
    check(sm is not None and again is not None and sm.created == again.created == int(tags["smollm2:latest"].timestamp())
          and sm.owned_by == "library", "openai models: created as modified_at, owned_by the namespace", repr(sm))
    try:
        s.openai.chat.completions.create(model="nope", messages=c["messages"])
        check(False, "openai: unknown model raises")
    except openai.NotFoundError as e:
        check(e.status_code == 404 and "not found" in str(e), "openai: unknown model 404", str(e))


def test_qwen2_chat(s):
    """Qwen2.5-Coder-1.5B-Instruct, the default model: a chat answer that
    ends its turn by itself (no num_predict), through both clients."""
    c = next(x for x in QWEN_FIX["cases"] if x["name"] == "english")
    q = [{"role": "user", "content": "Why is the sky blue? Answer in two sentences."}]
    r = s.ollama.chat(model=QWEN, messages=c["messages"], options=greedy(20))
    check(r.message.content == c["text_20"] and r.prompt_eval_count == len(c["prompt_ids"]),
          "qwen2.5 ollama chat: greedy answer equals transformers' first 20 tokens, the prompt (with the "
          "template's default system message) as many tokens as the reference's",
          f"{r.message.content!r} vs {c['text_20']!r}; {r.prompt_eval_count} vs {len(c['prompt_ids'])}")
    r = s.ollama.chat(model=QWEN, messages=q, options={"temperature": 0})
    text = r.message.content.lower()
    check(r.done_reason == "stop" and 8 < r.eval_count < 200 and "scatter" in text and "blue" in text,
          "qwen2.5 ollama chat: an on-topic answer (scattering) that ends with done_reason stop",
          f"{r.done_reason} {r.eval_count} {r.message.content!r}")
    chunks = list(s.openai.chat.completions.create(model=QWEN, messages=q, temperature=0, stream=True))
    answer = "".join(k.choices[0].delta.content or "" for k in chunks if k.choices)
    check(chunks[-1].choices[0].finish_reason == "stop" and answer == r.message.content,
          "qwen2.5 openai chat stream: the same answer, finish_reason stop", repr(answer))


# ------------------------------------------------------------------ 2: errors

def test_errors(s):
    st, body = s.raw("POST", "/api/generate", "{:")
    check(st == 400 and "invalid JSON" in json.loads(body)["error"], "body '{:' is 400", body)
    check(s.raw("GET", "/")[0] == 200, "the server keeps serving after a bad body")
    st, body = s.post("/api/generate", {"model": SMOL, "prompt": "x", "options": "x"})
    check(st == 400 and "options" in body["error"], "options 'x' is 400", str(body))
    st, body = s.post("/api/chat", {"model": SMOL, "messages": "hi"})
    check(st == 400, "messages of the wrong type is 400", str(body))
    st, body = s.post("/api/generate", {"model": SMOL, "prompt": "x", "options": {"temperature": "hot"}})
    check(st == 400 and "temperature" in body["error"], "an option of the wrong type is 400", str(body))
    st, body = s.post("/api/generate", {"model": SMOL, "prompt": "x", "options": {"warp": 9}})
    check(st == 400 and "warp" in body["error"], "an unknown option is 400 naming it", str(body))
    long_prompt = "hello " * 3000
    st, body = s.post("/api/generate", {"model": SMOL, "prompt": long_prompt, "options": {"num_ctx": 2048}})
    # the prompt's tokens: the template's text (/apply-template) tokenized with its control tokens (/tokenize),
    # as test_generate_context reads them (prefilling the 3000 tokens took 12 s on a 2-core Zen 1)
    shown = s.post("/apply-template", {"model": SMOL, "messages": [{"role": "user", "content": long_prompt}]})[1]
    n = len(s.post("/tokenize", {"model": SMOL, "content": shown.get("prompt", ""), "parse_special": True,
                                 "add_special": False})[1].get("tokens", []))
    check(st == 400 and "2048" in body["error"] and n > 3000 and str(n) in body["error"],
          "num_ctx 2048 with a 3000-token prompt is 400 naming both numbers", f"{body} / {n}")
    s.post("/api/generate", {"model": SMOL, "prompt": "hi", "options": {"num_ctx": 8192, "num_predict": 1}})
    # far past another num_ctx (600,000 bytes cannot be under 512 tokens of at most ~1 KB each):
    # refused before the runner loaded with num_ctx 8192 restarts for 512 (it stays as it is)
    pid = s.ps()["smollm2:latest"]["wick"]["pid"]
    st, body = s.post("/api/generate", {"model": SMOL, "prompt": "hello " * 100000, "options": {"num_ctx": 512}})
    after = s.ps().get("smollm2:latest", {})
    check(st == 400 and "512" in body["error"] and after.get("wick", {}).get("pid") == pid and
          after.get("context_length") == 8192, "a prompt far past another num_ctx: 400 without restarting the runner",
          f"{body} {pid} {after}")
    st, body = s.post("/api/generate", {"model": "nope", "prompt": "x"})
    check(st == 404 and body["error"] == "model 'nope' not found", "unknown model 404", str(body))
    st, body = s.post("/api/generate", {"model": "../etc/passwd", "prompt": "x"})
    check(st == 404, "a path as a model name is not found", str(body))
    st, body = s.post("/v1/chat/completions", {"model": SMOL, "messages": []})
    check(st == 400 and body["error"]["type"] == "invalid_request_error", "openai: empty messages 400 in OpenAI shape", str(body))
    # llama-server's and vLLM's extensions wick does not apply: refused naming them, unless they ask for nothing
    for field, value in (("guided_json", {"type": "object"}), ("json_schema", {"type": "object"}), ("ignore_eos", True),
                         ("min_tokens", 5), ("n_probs", 3), ("dry_multiplier", 0.8), ("xtc_probability", 0.5),
                         ("add_generation_prompt", False), ("verbosity", "low")):
        st, body = s.post("/v1/chat/completions", {"model": SMOL, "messages": [{"role": "user", "content": "x"}],
                                                   "max_tokens": 1, field: value})
        e = body.get("error", {})
        check(st == 400 and f"{field} is not supported" in (e.get("message", "") if isinstance(e, dict) else ""),
              f"openai: {field} {value!r} refused naming it", str(body))
    st, body = s.post("/v1/chat/completions", {"model": SMOL, "messages": [{"role": "user", "content": "x"}],
                                               "max_tokens": 1, "ignore_eos": False, "min_tokens": 0,
                                               "add_generation_prompt": True})
    check(st == 200, "openai: the extensions at values that ask for nothing are accepted", str(body))
    prefill = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
    st, body = s.post("/v1/chat/completions", {"model": SMOL, "messages": prefill, "max_tokens": 1,
                                               "continue_final_message": False})
    check(st == 400 and "continue_final_message false" in body["error"]["message"],
          "openai: continue_final_message false after an assistant message (wick continues it): refused", str(body))
    st, body = s.post("/v1/chat/completions", {"model": SMOL, "messages": prefill, "max_tokens": 1,
                                               "continue_final_message": True})
    check(st == 200, "openai: continue_final_message true (what wick does) accepted", str(body))
    st, body = s.post("/v1/chat/completions", {"model": SMOL, "messages": [{"role": "user", "content": "x"}], "temperature": 5})
    check(st == 400 and "temperature" in body["error"]["message"], "openai: temperature out of range 400", str(body))
    st, body = s.post("/api/generate", {"model": SMOL, "prompt": "x", "images": "aaa"})
    check(st == 400 and "images" in body["error"], "images of the wrong type is 400", str(body))
    st, body = s.post("/v1/chat/completions", {"model": SMOL, "messages": [{"role": "user", "content": "x"}],
                                               "stream_options": {"include_usage": True}})
    check(st == 400 and "stream_options" in body["error"]["message"], "stream_options without stream is 400", str(body))
    st, body = s.post("/api/generate", {"model": SMOL, "prompt": "x", "keep_alive": "nan"})
    check(st == 400 and "keep_alive" in body["error"], "keep_alive nan is 400", str(body))
    st, body = s.post("/api/generate", {"model": SMOL, "prompt": "x", "keep_alive": 1e300, "options": greedy(1)})
    exp = s.ps().get("smollm2:latest", {}).get("expires_at", "")
    check(st == 200 and exp[:4] >= "2099", "a huge keep_alive keeps the model loaded (no overflow)", exp)
    # /v1/completions' echo and best_of: refused, not dropped (false and 1 are what wick does)
    for extra, word in (({"echo": True}, "echo"), ({"echo": "yes"}, "echo"), ({"best_of": 3}, "best_of"),
                        ({"best_of": "2"}, "best_of")):
        st, body = s.post("/v1/completions", dict({"model": SMOL, "prompt": "x", "max_tokens": 1}, **extra))
        check(st == 400 and word in body["error"]["message"], f"/v1/completions {extra} is 400", str((st, body)))
    st, body = s.post("/v1/completions", {"model": SMOL, "prompt": "x", "max_tokens": 1, "echo": False, "best_of": 1})
    check(st == 200, "/v1/completions echo false and best_of 1 are taken", str((st, body)))
    # strings as Go's time.ParseDuration reads them (Ollama's keep_alive): these it refuses
    # (a bare number string, "300", is seconds: wick reads the field as OLLAMA_KEEP_ALIVE is read)
    for bad in ("-garbage", " 5m", "5m ", "0x10", "inf", "1e400s", "99999999999999h", "1h 30m", "-", ".s"):
        st, body = s.post("/api/generate", {"model": SMOL, "prompt": "x", "keep_alive": bad})
        check(st == 400 and "keep_alive" in body.get("error", ""), f"keep_alive {bad!r} is 400, as Go's ParseDuration",
              str((st, body)))
    for good, lo, hi in (("1h30m", 5300, 5500), (".5m", 20, 40), ("1.5h", 5300, 5500), ("90s", 80, 100)):
        st, body = s.post("/api/generate", {"model": SMOL, "prompt": "x", "keep_alive": good, "options": greedy(1)})
        exp = s.ps().get("smollm2:latest", {}).get("expires_at", "")
        left = (datetime.datetime.fromisoformat(exp.replace("Z", "+00:00")) -
                datetime.datetime.now(datetime.timezone.utc)).total_seconds() if exp else -1
        check(st == 200 and lo < left < hi, f"keep_alive {good!r} keeps the model {lo}-{hi} s", f"{st} {left:.0f} s")
    st, _ = s.raw("DELETE", "/api/chat")
    check(st == 405, "wrong method 405")


def test_templates(s):
    """Modelfile TEMPLATEs and the template field: a Go TEMPLATE (Ollama's
    documented ChatML style) written to render what SmolLM2's own Jinja
    template renders gives the same prompt and the same greedy answer;
    message text stays literal; the per-request template; errors naming
    the line; /api/apply-template."""
    chatml = ("{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}"
              "<|im_start|>assistant\n")
    st, body = s.post("/api/create", {"model": "smol-go", "from": SMOL, "template": chatml})
    check(st == 200, "/api/create with a TEMPLATE", str(body))
    st, body = s.post("/api/create", {"model": "smol-bad", "from": SMOL, "template": "a\n{{ if .Prompt }}x\n"})
    check(st == 400 and "line 2" in body["error"], "/api/create with a TEMPLATE that does not parse: 400 naming line 2",
          str(body))
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say <|im_end|> twice."}]
    want = ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nSay <|im_end|> twice.<|im_end|>\n"
            "<|im_start|>assistant\n")
    for model in ("smol-go", SMOL):
        st, body = s.post("/api/apply-template", {"model": model, "messages": msgs})
        check(st == 200 and body.get("prompt") == want, f"/api/apply-template {model}: the ChatML prompt", str(body))
    st, body = s.post("/apply-template", {"model": SMOL, "messages": msgs})
    check(st == 200 and body.get("prompt") == want, "/apply-template (llama-server's path)", str(body))
    a = s.ollama.chat(model="smol-go", messages=msgs, options=greedy(12))
    b = s.ollama.chat(model=SMOL, messages=msgs, options=greedy(12))
    check(a.message.content == b.message.content and a.prompt_eval_count == b.prompt_eval_count,
          "a stored Go TEMPLATE and the model's own Jinja template: the same prompt tokens and answer",
          f"{a.message.content!r} {a.prompt_eval_count} vs {b.message.content!r} {b.prompt_eval_count}")
    c = s.ollama.chat(model="smol-go", messages=[msgs[0], {"role": "user", "content": "Say  twice."}],
                      options=greedy(1))
    check(a.prompt_eval_count - c.prompt_eval_count > 1,
          "a typed <|im_end|> in a Go-templated message is several tokens of text, not one control token",
          f"{a.prompt_eval_count} vs {c.prompt_eval_count}")
    legacy = ("{{ if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}{{ if .Prompt }}<|im_start|>user\n"
              "{{ .Prompt }}<|im_end|>\n{{ end }}<|im_start|>assistant\n{{ .Response }}<|im_end|>\n")
    g = s.ollama.generate(model=SMOL, system=msgs[0]["content"], prompt=msgs[1]["content"], template=legacy,
                          options=greedy(12))
    check(g.response == b.message.content and g.prompt_eval_count == b.prompt_eval_count,
          "/api/generate with a per-request legacy template (.System, .Prompt, .Response): the same prompt and answer",
          f"{g.response!r} {g.prompt_eval_count}")
    st, body = s.post("/api/generate", {"model": SMOL, "prompt": "x", "template": "a\nb\n{{ .Prompt }"})
    check(st == 400 and "line 3" in body["error"], "a template that does not parse: 400 naming line 3", str(body))
    st, body = s.post("/api/generate", {"model": SMOL, "prompt": "x", "template": "a\n{{ range .Prompt }}{{ end }}"})
    check(st == 400 and "line 2" in body["error"], "a template that fails when run: 400 naming line 2", str(body))


def jinja2_chat(gguf_path, variables):
    """The GGUF's chat template rendered by Python's jinja2 configured as
    transformers' apply_chat_template (tests/template/make-cases.py)."""
    import importlib.util
    from gguf_kv import gguf_kv
    spec = importlib.util.spec_from_file_location("make_cases", os.path.join(ROOT, "tests", "template", "make-cases.py"))
    mc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mc)
    tmpl = gguf_kv(gguf_path)["tokenizer.chat_template"]
    return mc.env().from_string(tmpl).render(**variables)


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city"}},
                   "required": ["city"]}}}


def test_tool_prompts(s):
    """Tools and a conversation with an assistant tool call and a tool
    result, in Ollama's shape and in OpenAI's, render through Qwen2.5's own
    template exactly as transformers renders the same conversation."""
    ask = {"role": "user", "content": "What is the weather in Paris? <|im_end|>"}
    ollama_msgs = [ask, {"role": "assistant", "content": "",
                         "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                   {"role": "tool", "content": "22 degrees", "tool_name": "get_weather"}]
    openai_msgs = [ask, {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                   {"role": "tool", "content": "22 degrees", "tool_call_id": "call_1"}]
    hf_msgs = [ask, {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "22 degrees"}]
    want = jinja2_chat(os.path.join(CACHE, QWEN_FIX["model"]),
                       {"messages": hf_msgs, "tools": [WEATHER_TOOL], "add_generation_prompt": True,
                        "bos_token": "<|endoftext|>", "eos_token": "<|im_end|>"})
    for shape, msgs in (("Ollama", ollama_msgs), ("OpenAI", openai_msgs)):
        st, body = s.post("/api/apply-template", {"model": QWEN, "messages": msgs, "tools": [WEATHER_TOOL]})
        check(st == 200 and body.get("prompt") == want,
              f"tools and a tool-call turn ({shape}'s shape) render as transformers renders Qwen2.5's template",
              f"{body.get('prompt', body)!r}\n  want {want!r}")
    # OpenAI's text parts: joined by a newline, as llama-server joins them for a template of plain content
    parts = [{"role": "user", "content": [{"type": "text", "text": "Describe:"}, {"type": "text", "text": "the sky"}]}]
    want = jinja2_chat(os.path.join(CACHE, QWEN_FIX["model"]),
                       {"messages": [{"role": "user", "content": "Describe:\nthe sky"}], "add_generation_prompt": True,
                        "bos_token": "<|endoftext|>", "eos_token": "<|im_end|>"})
    st, body = s.post("/apply-template", {"model": QWEN, "messages": parts})
    check(st == 200 and body.get("prompt") == want, "OpenAI text parts joined by a newline (llama-server's join)",
          f"{body.get('prompt', body)!r}")
    # a conversation ending with the assistant's own words is continued from them (Ollama's templates
    # leave that turn open; transformers' continue_final_message: the render cut after the content),
    # the continuation what raw generation of that prompt gives
    count = [{"role": "user", "content": "Count from 1 to 10, separated by commas."},
             {"role": "assistant", "content": "1, 2, 3,"}]
    full = jinja2_chat(os.path.join(CACHE, QWEN_FIX["model"]), {"messages": count, "add_generation_prompt": False,
                                                                "bos_token": "<|endoftext|>", "eos_token": "<|im_end|>"})
    want = full[:full.rindex("1, 2, 3,") + len("1, 2, 3,")]
    st, body = s.post("/api/apply-template", {"model": QWEN, "messages": count})
    check(st == 200 and body.get("prompt") == want, "a final assistant message: the prompt ends with its words",
          f"{body.get('prompt', body)!r}\n  want {want!r}")
    for path in ("/api/chat", "/v1/chat/completions"):
        req = {"model": QWEN, "messages": count, "stream": False}
        req.update({"options": greedy(8)} if path == "/api/chat" else {"temperature": 0, "max_tokens": 8})
        st, body = s.post(path, req)
        got = body["message"]["content"] if path == "/api/chat" else body["choices"][0]["message"]["content"]
        raw = s.post("/api/generate", {"model": QWEN, "prompt": want, "raw": True, "stream": False,
                                       "options": greedy(8)})[1]["response"]
        check(st == 200 and got == raw and "4" in got and not got.lstrip().startswith("1,"),
              f"{path}: a final assistant message is continued, as raw generation of its prompt", f"{got!r} vs {raw!r}")
    st, body = s.post("/api/chat", {"model": SMOL, "messages": [ask], "tools": [{"type": "function",
                                    "function": {"name": "bad name!"}}]})
    check(st == 400 and "tools[0].function.name" in body["error"], "a tool with a bad name: 400 naming it", str(body))
    st, body = s.post("/api/chat", {"model": SMOL, "messages": [ask], "think": True})
    check(st == 400 and "does not support thinking" in body["error"], "think on a model that does not think: 400",
          str(body))


def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
      city: The name of the city

    Returns:
      The weather, in words
    """
    return "22 degrees Celsius and sunny"


def valid_weather_args(args):
    """The arguments validate against get_weather's schema: an object with
    the required string "city" and no other property."""
    return isinstance(args, dict) and set(args) == {"city"} and isinstance(args["city"], str) and args["city"]


def test_generate_context(s):
    """Ollama's deprecated /api/generate context (routes.go GenerateHandler):
    the final answer carries Tokenize(prompt + response) (the template's
    text, control tokens recognised, no BOS), and a context sent back puts
    that text before the next prompt; raw mode has none. The references:
    the template's text from /apply-template and the ids from /tokenize
    with parse_special, and the same prompt sent raw."""
    g = lambda **kw: s.post("/api/generate", dict({"model": SMOL, "stream": False, "options": greedy(10)}, **kw))[1]
    first = g(prompt="My name is Ada. Say hi.")
    shown = s.post("/apply-template", {"model": SMOL, "messages": [{"role": "user", "content": "My name is Ada. Say hi."}]})[1]
    ids = s.post("/tokenize", {"model": SMOL, "content": shown["prompt"] + first["response"], "parse_special": True,
                               "add_special": False})[1]
    check(first.get("context") == ids.get("tokens") and len(ids.get("tokens", [])) > 20,
          "generate's context: the ids of the rendered prompt and the answer (Ollama's Tokenize(prompt + response))",
          f"{first.get('context')} vs {ids}")
    second = g(prompt="What is my name?", context=first["context"])
    nxt = s.post("/apply-template", {"model": SMOL, "messages": [{"role": "user", "content": "What is my name?"}]})[1]
    raw = g(prompt=shown["prompt"] + first["response"] + nxt["prompt"], raw=True)
    check(second.get("response") == raw.get("response") and second.get("prompt_eval_count") == raw.get("prompt_eval_count"),
          "a context sent back: the earlier exchange's text before the new prompt, as that text sent raw",
          f"{second.get('response')!r} / {raw.get('response')!r}")
    r = s.ollama.generate(model=SMOL, prompt="hi", raw=True, options=greedy(2))
    check(r.context is None and s.ollama.generate(model=SMOL, prompt="hi", options=greedy(2)).context,
          "the ollama client: context in a non-raw answer, none in raw mode", repr(r.context))
    st, body = s.post("/api/generate", {"model": SMOL, "prompt": "hi", "context": [1, 10 ** 9]})
    check(st == 400 and "context" in body.get("error", ""), "a context id outside the vocabulary: 400", str(body))


def test_truncate_history(s):
    """Ollama's truncate (default true on /api/chat): a conversation past
    num_ctx keeps its system message and the longest run of recent
    messages that fits (server/prompt.go chatPrompt); the reference is the
    server's own refusal with truncate false, message by message."""
    sysm = {"role": "system", "content": "You are terse."}
    msgs = []
    for k in range(10):
        msgs += [{"role": "user", "content": f"Question {k}: tell me about topic {k} in detail. " * 4},
                 {"role": "assistant", "content": f"Answer {k}: " + "a long answer with many words. " * 10}]
    msgs.append({"role": "user", "content": "What is 2+2?"})
    opts = {"num_ctx": 512, "num_predict": 6, "temperature": 0}
    st, cut = s.post("/api/chat", {"model": SMOL, "messages": [sysm] + msgs, "stream": False, "options": opts})
    st2, refused = s.post("/api/chat", {"model": SMOL, "messages": [sysm] + msgs, "stream": False, "options": opts,
                                        "truncate": False})
    check(st == 200 and cut.get("prompt_eval_count", 1 << 30) < 512 and st2 == 400 and "512" in refused.get("error", ""),
          "a chat past num_ctx: cut to fit by default, a 400 with truncate false", f"{st} {cut} / {st2} {refused}")
    # the longest suffix whose prompt leaves num_predict (6) of the 512 positions for the answer
    fit = lambda k: s.post("/api/chat", {"model": SMOL, "messages": [sysm] + msgs[k:], "stream": False,
                                         "options": dict(opts, num_predict=1), "truncate": False})[1]
    keep = len(msgs) - 1
    while keep > 0 and fit(keep - 1).get("prompt_eval_count", 1 << 30) < 512 - 6:
        keep -= 1
    st, want = s.post("/api/chat", {"model": SMOL, "messages": [sysm] + msgs[keep:], "stream": False, "options": opts,
                                    "truncate": False})
    check(st == 200 and cut.get("prompt_eval_count") == want.get("prompt_eval_count")
          and cut["message"]["content"] == want["message"]["content"] and keep > 1,
          "the kept messages: the system message and the longest run of recent ones that fits (Ollama's chatPrompt)",
          f"kept from {keep}: {cut.get('prompt_eval_count')} vs {want.get('prompt_eval_count')}")
    # without num_predict a quarter of the context is left for the answer (no context shift here)
    st, free = s.post("/api/chat", {"model": SMOL, "messages": [sysm] + msgs, "stream": False,
                                    "options": {"num_ctx": 512, "temperature": 0}})
    check(st == 200 and free.get("prompt_eval_count", 1 << 30) < 512 - 128 and free.get("done_reason") == "stop",
          "truncated without num_predict: a quarter of the context left, the answer ends by itself", str(free)[:300])
    st, body = s.post("/api/chat", {"model": SMOL, "messages": msgs, "truncate": "yes"})
    check(st == 400 and "truncate" in body.get("error", ""), "truncate of the wrong type: 400", str(body))


def test_tool_tags(s):
    """A Modelfile TEMPLATE whose tool calls start with a tag of its own
    (Granite's <|tool_call|>[...], <function_calls>...</function_calls>):
    the tag Ollama's tools.parseTag reads from the template marks the
    calls. The model's words are forced with a GBNF grammar (llama-server's
    grammar field), so the parse is all that is tested."""
    head = ("{{- if .Tools }}<|im_start|>system\nTools: {{ range .Tools }}{{ .Function.Name }} {{ end }}<|im_end|>\n"
            "{{ end }}{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}")
    templates = {
        "smol-granite": ("{{- if .ToolCalls }}<|tool_call|>[{{ range $i, $c := .ToolCalls }}{{ if $i }}, {{ end }}"
                         "{\"name\": \"{{ .Function.Name }}\", \"arguments\": {{ .Function.Arguments }}}{{ end }}]"
                         "{{ end }}", '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]'),
        "smol-fcalls": ("{{- if .ToolCalls }}<function_calls>{{ range .ToolCalls }}{\"name\": \"{{ .Function.Name }}"
                        "\", \"arguments\": {{ .Function.Arguments }}}{{ end }}</function_calls>{{ end }}",
                        'Checking. <function_calls>{"name": "get_weather", "arguments": {"city": "Paris"}}'
                        '</function_calls>'),
    }
    # and a model's own Jinja template: Qwen2.5's <tool_call> (Hermes)
    templates[QWEN] = (None, 'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')
    for name, (calls, forced) in templates.items():
        if calls:
            tpl = head + calls + "<|im_end|>\n{{ end }}<|im_start|>assistant\n"
            st, body = s.post("/api/create", {"model": name, "from": SMOL, "template": tpl})
            check(st == 200, f"create {name}", str(body))
        grammar = "root ::= " + json.dumps(forced)
        ask = [{"role": "user", "content": "Weather in Paris?"}]
        want_text = forced.split("<", 1)[0].strip() if not forced.startswith("<") else ""
        for stream in (False, True):
            r = s.openai.chat.completions.create(model=name, messages=ask, tools=[WEATHER_TOOL], temperature=0,
                                                 max_tokens=60, stream=stream, extra_body={"grammar": grammar})
            if stream:
                chunks = list(r)
                text = "".join(k.choices[0].delta.content or "" for k in chunks if k.choices)
                tc = [t for k in chunks if k.choices for t in (k.choices[0].delta.tool_calls or [])]
                reason = next(k.choices[0].finish_reason for k in reversed(chunks) if k.choices)
            else:
                text, tc, reason = r.choices[0].message.content or "", r.choices[0].message.tool_calls or [], \
                    r.choices[0].finish_reason
            ok = (len(tc) == 1 and tc[0].function.name == "get_weather"
                  and json.loads(tc[0].function.arguments) == {"city": "Paris"})
            check(ok and reason == "tool_calls" and text.strip() == want_text,
                  f"{name} (stream {stream}): the call after the template's tag is a tool call, the text around it "
                  "content", f"{text!r} {tc!r} {reason}")


def test_tool_calls(s):
    """Qwen2.5-Coder-1.5B-Instruct with the real clients: a Python function
    as a tool (ollama), tools with tool_choice auto (openai, streamed and
    not): parseable calls whose arguments validate against the tool's
    schema, and a second turn with the tool's result answers with it."""
    # an agent's system prompt (without one this 1.5B model calls the tool again on the second turn)
    ask = [{"role": "system", "content": "You are a helpful assistant. When a tool result arrives, answer the "
                                         "user's question with it in one sentence."},
           {"role": "user", "content": "What is the weather in Paris right now?"}]
    r = s.ollama.chat(model=QWEN, messages=ask, tools=[get_weather], options={"temperature": 0, "num_predict": 80})
    calls = r.message.tool_calls or []
    check(len(calls) == 1 and calls[0].function.name == "get_weather" and valid_weather_args(calls[0].function.arguments)
          and "paris" in calls[0].function.arguments["city"].lower(),
          "ollama.chat with a Python function as a tool: one call, arguments valid for its schema",
          f"{r.message!r}")
    st, raw_r = s.post("/api/chat", {"model": QWEN, "messages": ask, "tools": [WEATHER_TOOL], "stream": False,
                                     "options": {"temperature": 0, "num_predict": 80}})
    rc = raw_r.get("message", {}).get("tool_calls") or []
    check(len(rc) == 1 and re.fullmatch(r"call_[a-z0-9]{8}", rc[0].get("id", "")),
          "/api/chat: the call has an id as Ollama's toolCallId makes them (call_ and 8 of [a-z0-9])", str(raw_r))
    turn2 = ask + [r.message, {"role": "tool", "content": get_weather("Paris"), "tool_name": "get_weather"}]
    r2 = s.ollama.chat(model=QWEN, messages=turn2, tools=[get_weather], options={"temperature": 0, "num_predict": 60})
    check("22" in (r2.message.content or "") and not r2.message.tool_calls,
          "ollama.chat, second turn with the tool's result: the answer uses it", f"{r2.message!r}")
    tool = {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city"}},
                           "required": ["city"], "additionalProperties": False}}}
    c = s.openai.chat.completions.create(model=QWEN, messages=ask, tools=[tool], tool_choice="auto", temperature=0,
                                         max_tokens=80)
    ch = c.choices[0]
    tc = ch.message.tool_calls or []
    args = json.loads(tc[0].function.arguments) if tc else None
    check(ch.finish_reason == "tool_calls" and len(tc) == 1 and tc[0].id and tc[0].type == "function" and
          tc[0].function.name == "get_weather" and valid_weather_args(args),
          "openai tools, tool_choice auto: finish_reason tool_calls, one call with an id, valid arguments", repr(ch))
    check(len(tc) == 1 and re.fullmatch(r"call_[a-z0-9]{8}", tc[0].id), "openai: the call's id as Ollama's", repr(tc))
    # parallel_tool_calls false: at most one call, where the model calls twice
    three = [{"role": "user", "content": "I need the current weather in three cities: Paris, London and Tokyo. Use "
                                         "the tool for each city."}]
    both = [s.openai.chat.completions.create(model=QWEN, messages=three, tools=[tool], temperature=0, max_tokens=150,
                                             **kw).choices[0].message.tool_calls or [] for kw in ({}, {"parallel_tool_calls": False})]
    check(len(both[0]) == 3 and len(both[1]) == 1 and both[1][0].function.arguments == both[0][0].function.arguments,
          "openai tools: three calls, and with parallel_tool_calls false the first alone", repr(both))
    chunks = list(s.openai.chat.completions.create(model=QWEN, messages=ask, tools=[tool], temperature=0,
                                                   max_tokens=80, stream=True))
    deltas = [d for k in chunks if k.choices for d in (k.choices[0].delta.tool_calls or [])]
    sargs = "".join(d.function.arguments or "" for d in deltas)
    check(len(deltas) >= 1 and deltas[0].function.name == "get_weather" and deltas[0].id and
          valid_weather_args(json.loads(sargs)) and chunks[-1].choices[0].finish_reason == "tool_calls",
          "openai tools streamed: delta.tool_calls with an id and valid arguments, finish_reason tool_calls",
          repr(deltas))
    msgs2 = ask + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": tc[0].id, "type": "function", "function": {"name": "get_weather", "arguments": tc[0].function.arguments}}]},
        {"role": "tool", "tool_call_id": tc[0].id, "content": get_weather("Paris")}] if tc else ask
    c2 = s.openai.chat.completions.create(model=QWEN, messages=msgs2, tools=[tool], temperature=0, max_tokens=60)
    check("22" in (c2.choices[0].message.content or "") and c2.choices[0].finish_reason == "stop",
          "openai, second turn with the tool's result: the answer uses it", repr(c2.choices[0]))
    # tool_choice required / a named function: a call is forced (constrained sampling) even for a greeting
    clock = {"type": "function", "function": {"name": "get_time", "description": "The time in a timezone",
             "parameters": {"type": "object", "properties": {"tz": {"type": "string", "enum": ["UTC", "CET"]}},
                            "required": ["tz"], "additionalProperties": False}}}
    hello = [{"role": "user", "content": "Hello! How are you?"}]
    for choice, want in (("required", None), ({"type": "function", "function": {"name": "get_time"}}, "get_time")):
        c = s.openai.chat.completions.create(model=QWEN, messages=hello, tools=[tool, clock], tool_choice=choice,
                                             temperature=1, seed=4, max_tokens=80)
        tc = c.choices[0].message.tool_calls or []
        ok = len(tc) == 1 if want else len(tc) >= 1  # required: "one or more" (OpenAI), a named function: it
        for t in tc:
            a = json.loads(t.function.arguments)
            ok = ok and (t.function.name == want if want else t.function.name in ("get_weather", "get_time"))
            ok = ok and (valid_weather_args(a) if t.function.name == "get_weather" else a in ({"tz": "UTC"}, {"tz": "CET"}))
        check(ok and c.choices[0].finish_reason == "tool_calls",
              f"openai tool_choice {choice}: a call is forced, its arguments valid for its schema", repr(c.choices[0]))
    # required lets the model make several calls, as auto does (it made one alone)
    c = s.openai.chat.completions.create(model=QWEN, messages=three, tools=[tool], tool_choice="required", temperature=0,
                                         max_tokens=150)
    tc = c.choices[0].message.tool_calls or []
    check(len(tc) == 3 and all(valid_weather_args(json.loads(t.function.arguments)) for t in tc),
          "openai tool_choice required: the three calls auto makes", repr(c.choices[0]))
    # strict tools under tool_choice auto (openai.pydantic_function_tool sends strict: true): a call the
    # model makes follows its schema (the unconstrained answer asks for kelvin, 10 days and a country,
    # none of which the schema allows), and an answer without a call stays free text
    forecast = {"type": "function", "function": {"name": "forecast", "description": "Weather forecast", "parameters": {
        "type": "object", "additionalProperties": False, "required": ["city", "unit", "days"],
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                       "days": {"type": "integer", "enum": [1, 2, 3]}}}}}
    strict = {"type": "function", "function": dict(forecast["function"], strict=True)}
    ask = [{"role": "user", "content": "Call forecast for Paris for 10 days in kelvin, and also pass country='FR'."}]
    calls = [s.openai.chat.completions.create(model=QWEN, messages=ask, tools=[t], temperature=0, max_tokens=80)
             .choices[0].message.tool_calls or [] for t in (forecast, strict)]
    loose, held = [json.loads(c[0].function.arguments) if c else None for c in calls]
    check(loose is not None and (loose.get("unit") not in ("celsius", "fahrenheit") or "country" in loose) and
          held is not None and set(held) == {"city", "unit", "days"} and held["unit"] in ("celsius", "fahrenheit") and
          held["days"] in (1, 2, 3), "openai strict tool, tool_choice auto: the call follows its schema", f"{loose} {held}")
    c = s.openai.chat.completions.create(model=QWEN, messages=[{"role": "user", "content": "What is 2+2? One word."}],
                                         tools=[strict], temperature=0, max_tokens=20)
    check(not c.choices[0].message.tool_calls and (c.choices[0].message.content or "").strip(),
          "openai strict tool, tool_choice auto: an answer without a call stays free text", repr(c.choices[0]))


PERSON = {"type": "object", "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 40},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "format": "email"},
    "tags": {"type": "array", "items": {"type": "string", "enum": ["friend", "family", "work"]}, "maxItems": 3}},
    "required": ["name", "age", "tags"], "additionalProperties": False}


def test_structured_output(s):
    """format and response_format as constrained sampling: at temperature 1
    over several seeds, Qwen2.5-Coder's answers validate against the schema
    (Python's jsonschema); format "json" gives a JSON object; the mask only
    removes: where the model's own answer already fits the grammar, the
    constrained answer is the same tokens; an unsupported keyword is a 400
    naming it."""
    import jsonschema
    ask = [{"role": "user", "content": "Invent a person."}]
    bad = []
    for seed in (1, 2, 3):
        r = s.ollama.chat(model=QWEN, messages=ask, format=PERSON, options={"temperature": 1, "seed": seed,
                                                                             "num_predict": 120})
        try:
            jsonschema.validate(json.loads(r.message.content), PERSON, format_checker=jsonschema.FormatChecker())
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            bad.append(f"seed {seed}: {r.message.content!r}: {e}")
    check(not bad, "ollama format {schema}, temperature 1, 3 seeds: every answer validates", "; ".join(bad))
    r = s.ollama.chat(model=QWEN, messages=[{"role": "user", "content": "The capital of France, as JSON."}],
                      format="json", options={"temperature": 0, "num_predict": 200})
    check(isinstance(json.loads(r.message.content), dict), "format json: a JSON object", repr(r.message.content))
    c = s.openai.chat.completions.create(model=QWEN, messages=ask, temperature=1, seed=5, max_tokens=120,
                                         response_format={"type": "json_schema",
                                                          "json_schema": {"name": "person", "schema": PERSON}})
    try:
        jsonschema.validate(json.loads(c.choices[0].message.content), PERSON)
        ok = True
    except Exception:  # noqa: BLE001
        ok = False
    check(ok, "openai response_format json_schema: the answer validates", repr(c.choices[0].message.content))
    # the mask only removes: an answer the model writes as valid JSON anyway is unchanged by the grammar
    fits = [{"role": "user", "content": 'Reply with exactly this JSON and nothing else: {"answer": 4}'}]
    opts = {"temperature": 0.7, "seed": 11, "num_predict": 20}
    free = s.ollama.chat(model=QWEN, messages=fits, options=opts)
    held = s.ollama.chat(model=QWEN, messages=fits, options=opts, format={
        "type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]})
    check(json.loads(free.message.content) == {"answer": 4} and held.message.content == free.message.content,
          "the same seed with and without a schema the answer already fits: the same answer",
          f"{free.message.content!r} vs {held.message.content!r}")
    # speculative decoding under a grammar: drafts are checked against it; greedy, the same answer
    person = [{"role": "user", "content": "A JSON object describing a cat."}]
    plain = s.ollama.chat(model=SMOL, messages=person, format="json", options=greedy(40))
    drafted = s.ollama.chat(model="drafted", messages=person, format="json", options=dict(greedy(40), draft_min=3))
    w = runner_state(s, "drafted:latest")
    check(plain.message.content == drafted.message.content and w.get("draft_loaded"),
          "format json with a draft model (speculative decoding, drafts checked against the grammar): the same "
          "greedy answer", f"{plain.message.content!r} vs {drafted.message.content!r}")
    st, body = s.post("/api/chat", {"model": QWEN, "messages": ask, "format": {"type": "object", "not": {}}})
    check(st == 400 and '"not"' in body["error"], "format with an unsupported keyword: 400 naming it", str(body))
    st, body = s.post("/v1/chat/completions", {"model": QWEN, "messages": ask, "grammar": "root ::= root \"a\" | \"b\""})
    check(st == 400 and "left recursion" in body["error"]["message"], "a left-recursive GBNF grammar: 400", str(body))
    c = s.openai.chat.completions.create(model=QWEN, messages=ask, max_tokens=10, temperature=0,
                                         extra_body={"grammar": 'root ::= "yes" | "no"'})
    check(c.choices[0].message.content in ("yes", "no"), "llama-server's grammar (GBNF): the answer is in it",
          repr(c.choices[0].message.content))


def test_mask_only_removes(s):
    """Acceptance 4 of issue 23, with a GBNF grammar on SmolLM2 at
    temperature 1 and a fixed seed: a grammar that allows everything gives
    the unconstrained text exactly; a grammar that forbids one character the
    unconstrained text uses gives the same tokens up to the token that
    holds it (the token offsets from logprobs), and never the character."""
    req = {"model": SMOL, "prompt": "Once upon a time", "max_tokens": 40, "temperature": 1, "seed": 42}
    st, free = s.post("/v1/completions", dict(req, logprobs=1))
    text = free["choices"][0]["text"]
    offsets = free["choices"][0]["logprobs"]["text_offset"]
    st2, every = s.post("/v1/completions", dict(req, grammar="root ::= [^\\x00]*"))
    check(st == st2 == 200 and every["choices"][0]["text"] == text,
          "a grammar that allows every text: the unconstrained text, token for token", f"{every} vs {text!r}")
    k = next((i for i in range(5, len(text)) if text[i].isalpha() and text[i].isascii()), None)
    if k is None:
        check(False, "the unconstrained text has a letter to forbid", repr(text))
        return
    c = text[k]
    start = max(o for o in offsets if o <= k)  # the token that holds text[k] starts here
    st, held = s.post("/v1/completions", dict(req, grammar=f"root ::= [^{c}]*"))
    out = held["choices"][0]["text"] if st == 200 else ""
    check(st == 200 and out[:start] == text[:start] and c not in out,
          f"a grammar forbidding {c!r}: the same text up to the token holding it (offset {start}), then no {c!r}",
          f"{out!r} vs {text!r}")


def test_api_edges(s):
    """Fields of the other API are refused, not dropped; think false on a
    model that does not think is nothing to turn off; /api/show reports the
    tools capability of a template that renders tools; a tool call naming a
    tool the request did not offer is text, not a call."""
    ask = [{"role": "user", "content": "hi"}]
    for path, field, value in (("/api/chat", "tool_choice", "required"), ("/api/chat", "grammar", 'root ::= "z"'),
                               ("/api/chat", "chat_template_kwargs", {"x": 1}), ("/api/chat", "context", [1, 2, 3]),
                               ("/v1/chat/completions", "template", "{{ .Prompt }}"),
                               ("/v1/chat/completions", "format", "json"),
                               # an option at the top level, where this API does not read it (Ollama's
                               # decoder drops it without a word); a tool list on /api/generate
                               ("/api/generate", "num_predict", 1), ("/api/chat", "temperature", 0),
                               ("/api/chat", "stop", ["Hello"]), ("/api/generate", "max_tokens", 1),
                               ("/api/generate", "tools", "garbage"),
                               ("/v1/chat/completions", "options", {"top_k": 1}),
                               ("/v1/chat/completions", "num_ctx", 300), ("/v1/chat/completions", "n_predict", 3),
                               ("/v1/chat/completions", "functions", [{"name": "f"}]),
                               ("/v1/chat/completions", "chat_template_kwargs", {"messages": []}),
                               ("/v1/chat/completions", "role", "bogus"),
                               # a sibling route's field, which this one would drop
                               ("/api/chat", "system", "be a pirate"), ("/api/chat", "prompt", "x"),
                               ("/api/generate", "messages", ask), ("/v1/chat/completions", "echo", True),
                               ("/v1/chat/completions", "repetition_penalty", 5.0),
                               ("/v1/chat/completions", "modalities", ["text", "audio"]),
                               ("/v1/chat/completions", "audio", {"voice": "alloy", "format": "wav"})):
        req = {"model": SMOL, field: value, "options": greedy(1)} if path.startswith("/api") else \
              {"model": SMOL, field: value, "max_tokens": 1}
        req.update({"prompt": "x"} if path == "/api/generate" else {"messages": ask})
        if field == "role":
            req.pop("role"), req.update(messages=[{"role": value, "content": "hi"}])
        if field == "repetition_penalty":
            req.update(repeat_penalty=1.0)
        st, body = s.post(path, req)
        e = body.get("error", {})
        e = e.get("message", "") if isinstance(e, dict) else e
        check(st == 400 and field in e, f"{path} with {field}: 400 naming it, not dropped", str(body))
    # raw: a prompt formatted by hand counts its control tokens, as Ollama's raw mode does (llama.cpp's
    # parse_special): the ChatML of the fixture's chat gives its prompt ids and its greedy answer
    c = case("english")
    chatml = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
              f"<|im_start|>user\n{c['messages'][0]['content']}<|im_end|>\n<|im_start|>assistant\n")
    r = s.ollama.generate(model=SMOL, prompt=chatml, raw=True, options=greedy(20))
    check(r.prompt_eval_count == len(c["prompt_ids"]) and r.response == c["text_20"],
          "raw: a hand-formatted ChatML prompt is the chat's prompt (control tokens parsed) and its answer",
          f"{r.prompt_eval_count} vs {len(c['prompt_ids'])}: {r.response!r}")
    # OpenAI's deprecated function role is a tool result
    st, body = s.post("/v1/chat/completions", {"model": SMOL, "max_tokens": 1, "messages": [
        {"role": "user", "content": "hi"}, {"role": "function", "name": "f", "content": "42"}]})
    check(st == 200, "openai chat: a message of the deprecated role function is taken", str(body)[:200])
    st, body = s.post("/api/generate", {"model": 5, "prompt": "x"})
    check(st == 400 and "model must be a string" in body.get("error", ""), "model 5: a 400 saying it must be a string",
          str(body))
    # a tool whose parameters are not a valid JSON schema: a 400 whatever tool_choice says
    weird = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "weird"}}}}}]
    for extra in ({}, {"tool_choice": "required"}):
        st, body = s.post("/v1/chat/completions", dict({"model": QWEN, "messages": ask, "tools": weird, "max_tokens": 1},
                                                       **extra))
        e = body.get("error", {})
        check(st == 400 and ("tools[0].function.parameters" in str(e) or "not a JSON Schema type" in str(e)),
              f"a tool schema with type 'weird' ({extra or 'tool_choice auto'}): 400", str(body)[:300])
    st, body = s.post("/api/chat", {"model": SMOL, "messages": ask, "think": False, "options": greedy(1)})
    check(st == 200, "think false on a model that does not think: nothing to turn off", str(body))
    caps = {m: s.post("/api/show", {"model": m})[1].get("capabilities") for m in (QWEN, SMOL)}
    check("tools" in caps[QWEN] and "completion" in caps[QWEN] and "tools" not in caps[SMOL],
          "/api/show capabilities: tools where the template renders them", str(caps))
    st, body = s.post("/v1/chat/completions", {
        "model": QWEN, "messages": ask, "tools": [WEATHER_TOOL], "max_tokens": 40,
        "grammar": 'root ::= "<tool_call>\\n{\\"name\\": \\"nope\\", \\"arguments\\": {}}\\n</tool_call>"'})
    m = body["choices"][0]["message"] if st == 200 else {}
    check(st == 200 and not m.get("tool_calls") and '"nope"' in (m.get("content") or ""),
          "a call of a tool not offered: its text comes back as content", str(body))


def test_template_kwargs(s):
    """chat_template_kwargs (llama-server's) reach the Jinja template: the
    tiny Qwen 3 model's template closes an empty think block in the
    generation prompt only with enable_thinking false, so that prompt is
    longer; a model with a Go TEMPLATE refuses them."""
    mf = os.path.join(s.dir, "qwen3-tiny.Modelfile")
    open(mf, "w").write(f"FROM {os.path.join(ROOT, 'tests', 'golden', 'qwen3', 'hf')}\n")
    subprocess.run([WICK, "create", "qwen3-tiny", "-f", mf], env=dict(os.environ, WICK_MODELS=s.dir), check=True,
                   capture_output=True)
    n = {}
    for on in (True, False):
        st, body = s.post("/v1/chat/completions", {"model": "qwen3-tiny", "max_tokens": 1,
                                                   "messages": [{"role": "user", "content": "hi"}],
                                                   "chat_template_kwargs": {"enable_thinking": on}})
        n[on] = body.get("usage", {}).get("prompt_tokens") if st == 200 else body
    check(isinstance(n[True], int) and isinstance(n[False], int) and n[False] > n[True],
          "chat_template_kwargs enable_thinking false adds the template's empty think block", str(n))
    st, body = s.post("/v1/chat/completions", {"model": "smol-go", "messages": [{"role": "user", "content": "hi"}],
                                               "chat_template_kwargs": {"x": 1}})
    check(st == 400 and "chat_template_kwargs" in body["error"]["message"], "kwargs with a Go TEMPLATE: 400", str(body))


# ------------------------------------------------------------------ 3: cancellation

def stream_lines(s, path, obj):
    """Opens a streamed request; returns (connection, response)."""
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    c.request("POST", path, body=json.dumps(obj), headers={"Content-Type": "application/json"})
    return c, c.getresponse()


def runner_state(s, name="smollm2:latest"):
    return s.ps().get(name, {}).get("wick", {})


def wait_idle(s, limit):
    t0 = time.time()
    while time.time() - t0 < limit:
        w = runner_state(s)
        if not w.get("busy") and w.get("queued", 0) == 0:
            return time.time() - t0
        time.sleep(0.02)
    return None


def test_cancellation(s):
    long_req = {"model": SMOL, "prompt": "Write a very long story about a dragon.",
                "options": {"temperature": 0, "num_predict": 2000}}
    c, r = stream_lines(s, "/api/generate", long_req)
    for _ in range(5):
        r.readline()
    check(runner_state(s).get("busy") is True, "runner busy while streaming")
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    took = wait_idle(s, 1.0)
    check(took is not None, "a client that leaves after 5 tokens leaves the runner idle within 1 s", f"{runner_state(s)}")
    t1 = runner_state(s)["tokens_generated"]
    time.sleep(0.3)
    check(runner_state(s)["tokens_generated"] == t1, "no tokens generated after the cancel")
    # a queued request whose client leaves never runs: n_parallel streams
    # fill the runner's slots, the next one queues
    runs0 = runner_state(s)["runs"]
    n_par = runner_state(s).get("n_parallel", 1)
    held = []
    for i in range(n_par):
        ca, ra = stream_lines(s, "/api/generate", dict(long_req, prompt=f"Write a very long story about dragon {i}."))
        ra.readline()
        held.append(ca)
    cb, rb = stream_lines(s, "/api/generate", dict(long_req, prompt="Another long story please."))
    time.sleep(0.2)
    check(runner_state(s).get("queued") == 1, f"a request past the runner's {n_par} slots is queued", str(runner_state(s)))
    cb.sock.shutdown(socket.SHUT_RDWR)
    cb.close()
    time.sleep(0.2)
    for ca in held:
        ca.sock.shutdown(socket.SHUT_RDWR)
        ca.close()
    wait_idle(s, 2.0)
    check(runner_state(s)["runs"] == runs0 + n_par, "the queued request whose client left never ran", str(runner_state(s)))
    # 20 cancel-and-retry cycles: runner RSS flat
    sizes = []
    for i in range(20):
        c, r = stream_lines(s, "/api/chat", {"model": SMOL, "messages": [{"role": "user", "content": f"Story {i}"}],
                                             "options": {"num_predict": 500}})
        for _ in range(3):
            r.readline()
        c.sock.shutdown(socket.SHUT_RDWR)
        c.close()
        wait_idle(s, 2.0)
        sizes.append(s.ps()["smollm2:latest"]["size"])
    check(sizes[-1] <= sizes[0] * 1.05, "20 cancel-and-retry cycles leave runner RSS within 5%", str(sizes))
    # nobody reading: the server and the runner go on serving others
    c, r = stream_lines(s, "/api/generate", dict(long_req, options={"temperature": 0, "num_predict": 300}))
    other = s.ollama.generate(model=SMOL, prompt="Hi", options=greedy(3))
    check(other.done, "a stream nobody reads does not block the next request")
    c.close()


# ------------------------------------------------------------------ 4: prefix reuse

def test_prefix_reuse(s):
    turn1 = [{"role": "user", "content": "What is the capital of France?"}]
    a1 = s.openai.chat.completions.create(model=SMOL, messages=turn1, temperature=0, max_tokens=30)
    conv = turn1 + [{"role": "assistant", "content": a1.choices[0].message.content},
                    {"role": "user", "content": "And of Germany?"}]
    a2 = s.openai.chat.completions.create(model=SMOL, messages=conv, temperature=0, max_tokens=30)
    cached = a2.usage.prompt_tokens_details.cached_tokens
    check(cached >= a1.usage.prompt_tokens and cached < a2.usage.prompt_tokens,
          "second turn reports cached tokens (at least the first turn's prompt)",
          f"cached {cached}, turn-1 prompt {a1.usage.prompt_tokens}, turn-2 prompt {a2.usage.prompt_tokens}")
    s.ollama.generate(model=SMOL, keep_alive=0)  # unload: the next request gets a fresh runner
    time.sleep(0.5)
    check("smollm2:latest" not in s.ps(), "keep_alive 0 with an empty prompt unloads")
    fresh = s.openai.chat.completions.create(model=SMOL, messages=conv, temperature=0, max_tokens=30)
    check(fresh.usage.prompt_tokens_details.cached_tokens == 0, "fresh runner has nothing cached")
    check(fresh.choices[0].message.content == a2.choices[0].message.content,
          "temperature-0 second turn equals a fresh runner's answer",
          f"{a2.choices[0].message.content!r} vs {fresh.choices[0].message.content!r}")
    # a cached longer prompt must not leak into a shorter one
    s.ollama.generate(model=SMOL, prompt="Here's a joke. No wait, here are some Zs: Z Z Z Z", raw=True, options=greedy(1))
    short = s.ollama.generate(model=SMOL, prompt="Here's a joke.", raw=True, options=greedy(8))
    s.ollama.generate(model=SMOL, keep_alive=0)
    time.sleep(0.5)
    ref = s.ollama.generate(model=SMOL, prompt="Here's a joke.", raw=True, options=greedy(8))
    check(short.response == ref.response and not short.response.lstrip().startswith("Z"),
          "after caching '... Z Z Z Z', 'Here's a joke.' answers as a fresh runner does",
          f"{short.response!r} vs {ref.response!r}")


# ------------------------------------------------------------------ 5-7: crashes, concurrency, load

def test_runner_killed(s):
    c, r = stream_lines(s, "/api/generate", {"model": SMOL, "prompt": "Write a long story.",
                                             "options": {"num_predict": 1000}})
    r.readline()
    pid = runner_state(s)["pid"]
    os.kill(pid, signal.SIGKILL)
    rest = r.read().decode().strip().splitlines()
    c.close()
    last = json.loads(rest[-1]) if rest else {}
    check("error" in last and r.status == 200, "a runner killed mid-request: the stream ends with an error line", str(rest[-2:]))
    nxt = s.ollama.generate(model=SMOL, prompt="Hi", options=greedy(3))
    check(nxt.done and runner_state(s).get("pid") != pid, "the next request succeeds on a fresh runner")
    # an idle runner killed, and a request at once (before the reaper's next look, 100 ms): a fresh
    # runner answers it, not a 500 "not reachable"
    for _ in range(3):
        pid = runner_state(s)["pid"]
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)
        try:
            nxt = s.ollama.generate(model=SMOL, prompt="Hi", options=greedy(3))
            ok = nxt.done and runner_state(s).get("pid") != pid
        except ollama.ResponseError as e:
            ok = False
            nxt = e
        check(ok, "a request right after its idle runner died: answered by a fresh runner", str(nxt)[:200])


def test_concurrent_same_answer(s):
    c = case("english")
    single = s.ollama.chat(model=SMOL, messages=c["messages"], options=greedy(24)).message.content
    out = [None] * 8

    def one(i):
        cl = ollama.Client(host=f"http://{s.host}")
        out[i] = cl.chat(model=SMOL, messages=c["messages"], options=greedy(24)).message.content

    ts = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    check(all(o == single for o in out), "8 concurrent temperature-0 requests return the single request's text",
          str(set(out)))


def test_cli_ps_stop_and_max_loaded(s):
    env = dict(os.environ, WICK_HOST=s.host)
    s.ollama.generate(model=SMOL, prompt="Hi", options=greedy(1))
    out = subprocess.run([WICK, "ps"], env=env, capture_output=True, text=True)
    check(out.returncode == 0 and "smollm2:latest" in out.stdout, "wick ps lists the loaded model", out.stdout + out.stderr)
    out = subprocess.run([WICK, "stop", "smollm2"], env=env, capture_output=True, text=True)
    time.sleep(0.5)
    check(out.returncode == 0 and "smollm2:latest" not in s.ps(), "wick stop unloads it", out.stderr)
    out = subprocess.run([WICK, "stop", "nope"], env=env, capture_output=True, text=True)
    check(out.returncode != 0 and "not found" in out.stderr, "wick stop of an unknown model fails", out.stderr)
    # list / show / cp / rm go to the running server, as ollama's commands do, when this environment
    # names no store of its own (its default store here: an empty HOME)
    home = tempfile.mkdtemp(prefix="wick-home-")
    cenv = {k: v for k, v in env.items() if k not in ("WICK_MODELS", "OLLAMA_MODELS")}
    cenv["HOME"] = home
    cli = lambda *a, **kw: subprocess.run([WICK, *a], env=dict(cenv, **kw), capture_output=True, text=True)
    out = cli("list")
    check(out.returncode == 0 and "smollm2:latest" in out.stdout, "wick list: the server's models", out.stdout + out.stderr)
    out = cli("cp", "smollm2", "cli-copy")
    check(out.returncode == 0 and any(m.model == "cli-copy:latest" for m in s.ollama.list().models),
          "wick cp: a copy in the server's store", out.stdout + out.stderr)
    out = cli("show", "cli-copy", "--template")
    check(out.returncode == 0 and out.stdout.rstrip("\n") == s.ollama.show("smollm2").template.rstrip("\n"),
          "wick show --template: the server's answer", out.stdout[:200] + out.stderr)
    out = cli("show", "cli-copy")
    check(out.returncode == 0 and "architecture" in out.stdout and "llama" in out.stdout and "completion" in out.stdout,
          "wick show: the model as the server shows it", out.stdout + out.stderr)
    out = cli("rm", "cli-copy", "nope")
    check(out.returncode == 1 and "deleted 'cli-copy'" in out.stdout and "not found" in out.stderr
          and not any(m.model == "cli-copy:latest" for m in s.ollama.list().models),
          "wick rm: removed from the server's store; an unknown one is an error", out.stdout + out.stderr)
    # wick create: the Modelfile's FROM uploaded as blobs (a folder's files too), the model made by /api/create
    mfd = tempfile.mkdtemp(prefix="wick-mf-")
    with open(os.path.join(mfd, "Modelfile"), "w") as f:
        f.write(f"FROM {os.path.join(CACHE, 'all-MiniLM-L6-v2')}\nLICENSE Apache-2.0\n")
    with open(os.path.join(mfd, "Modelfile.smol"), "w") as f:
        f.write(f"FROM {os.path.join(CACHE, SMOL_FIX['model'])}\nPARAMETER temperature 0.25\nSYSTEM Be brief.\n")
    out = cli("create", "cli-minilm", "-f", os.path.join(mfd, "Modelfile"))
    out2 = cli("create", "cli-smol", "-f", os.path.join(mfd, "Modelfile.smol"))
    sh = s.post("/api/show", {"model": "cli-smol"})[1] if out2.returncode == 0 else None
    e = s.ollama.embed(model="cli-minilm", input="hello") if out.returncode == 0 else None
    check(out.returncode == 0 and out2.returncode == 0 and e is not None and len(e.embeddings[0]) == 384
          and sh is not None and "temperature" in sh.get("parameters", "") and "0.25" in sh["parameters"]
          and sh.get("system") == "Be brief."
          and not os.path.exists(os.path.join(home, ".wick")),
          "wick create through the server: a folder's files and a GGUF uploaded, parameters and system kept, "
          "nothing in this environment's own store", out.stderr[-300:] + out2.stderr[-300:])
    cli("rm", "cli-minilm", "cli-smol")
    shutil.rmtree(mfd, ignore_errors=True)
    # a server that takes the connection and never answers is not "no server": its store is not
    # this machine's to change (wick rm would delete a local model of that name)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    out = cli("rm", "smollm2", WICK_HOST=f"127.0.0.1:{silent.getsockname()[1]}")
    silent.close()
    check(out.returncode == 1 and "does not answer" in out.stderr, "a hung server: wick rm refuses, no local delete",
          out.stdout + out.stderr)
    out = cli("list", WICK_MODELS=home)
    check(out.returncode == 0 and "smollm2" not in out.stdout, "wick list with WICK_MODELS: that store, not the server's",
          out.stdout)
    shutil.rmtree(home, ignore_errors=True)
    # another server on the same address is refused (not a second listener
    # sharing the port, which would split the requests between the two)
    try:
        out = subprocess.run([WICK, "serve"], env=dict(env, WICK_MODELS=s.dir), capture_output=True, text=True,
                             timeout=10)
        check(out.returncode == 1 and "cannot listen on " + s.host in out.stderr,
              "a second wick serve on the same address exits 1 naming it", out.stderr)
    except subprocess.TimeoutExpired:
        check(False, "a second wick serve on the same address exits 1 naming it", "it kept running")
    # a second server holding one model at a time: the idle one is unloaded for the next
    os.environ["WICK_MAX_LOADED_MODELS"] = "1"
    try:
        t = Server()
    finally:
        del os.environ["WICK_MAX_LOADED_MODELS"]
    try:
        t.ollama.generate(model="gemma3", prompt="Hi", options=greedy(2))
        t.ollama.generate(model=SMOL, prompt="Hi", options=greedy(2))
        check(list(t.ps()) == ["smollm2:latest"], "WICK_MAX_LOADED_MODELS=1: the idle model is unloaded first",
              str(list(t.ps())))
    finally:
        t.stop()


def test_api_create(s):
    st, body = s.post("/api/create", {"model": "stops", "from": SMOL,
                                      "parameters": {"stop": ["<|im_end|>", "<|im_end|>"], "temperature": 0},
                                      "system": "Answer in French."})
    check(st == 200 and body == {"status": "success"}, "/api/create from a stored model", str(body))
    mf = os.path.join(s.dir, "stops.Modelfile")
    with open(mf, "w") as f:
        f.write("FROM smollm2\nPARAMETER temperature 0\nPARAMETER stop \"<|im_end|>\"\n"
                "PARAMETER stop \"<|im_end|>\"\nSYSTEM Answer in French.\n")
    p = subprocess.run([WICK, "create", "stops-cli", "-f", mf], env=dict(os.environ, WICK_MODELS=s.dir),
                       capture_output=True, text=True)

    def layers(name):
        path = os.path.join(s.dir, "manifests", "registry.ollama.ai", "library", name, "latest")
        return json.load(open(path))["layers"]

    check(p.returncode == 0 and layers("stops") == layers("stops-cli"),
          "stop given twice: the same layers via /api/create and the CLI", p.stderr)
    params = json.load(open(os.path.join(s.dir, "blobs", "sha256-" + next(
        l["digest"] for l in layers("stops") if l["mediaType"].endswith("params")).split(":")[1])))
    check(params["stop"] == ["<|im_end|>", "<|im_end|>"], "two stop strings, no added quotes", str(params))
    a = s.ollama.chat(model="stops", messages=[{"role": "user", "content": "Hello!"}], options={"num_predict": 8})
    b = s.ollama.chat(model=SMOL, messages=[{"role": "system", "content": "Answer in French."},
                                            {"role": "user", "content": "Hello!"}], options=greedy(8))
    check(a.message.content == b.message.content, "the stored SYSTEM and temperature apply through /api/chat",
          f"{a.message.content!r} vs {b.message.content!r}")
    # a DRAFT is stored in the same manifest and the runner loads it beside the target
    weights = next(l["digest"] for l in layers("stops") if l["mediaType"].endswith("image.model"))
    with open(mf, "w") as f:
        f.write(f"FROM smollm2\nDRAFT {os.path.join(s.dir, 'blobs', 'sha256-' + weights.split(':')[1])}\n")
    p = subprocess.run([WICK, "create", "drafted", "-f", mf], env=dict(os.environ, WICK_MODELS=s.dir),
                       capture_output=True, text=True)
    r = s.ollama.generate(model="drafted", prompt="Hi", options=greedy(2))
    w = runner_state(s, "drafted:latest")
    check(p.returncode == 0 and r.done and w.get("draft_loaded") is True, "a model with a DRAFT: the runner loads both",
          p.stderr + str(w))
    test_speculation(s)
    # (a folder's import through /api/create, with --allow-paths: tests/hostile)
    st, body = s.post("/api/create", {"model": "x", "from": "nope"})
    check(st == 404 and "nope" in body["error"], "/api/create from an unknown model is 404", str(body))
    st, body = s.post("/api/create", {"model": "x", "from": SMOL, "parameters": {"warp": 1}})
    check(st == 400 and "warp" in body["error"], "/api/create with an unknown parameter is 400", str(body))
    # parameters typed as a request's options are (Ollama's api.Options.FromMap refuses the others)
    for params in ({"stop": [1]}, {"stop": 5}, {"top_k": [5]}, {"temperature": "0.5"}, {"penalize_newline": 1}):
        st, body = s.post("/api/create", {"model": "x", "from": SMOL, "parameters": params})
        k = next(iter(params))
        check(st == 400 and f"parameter '{k}' must be" in body.get("error", ""),
              f"/api/create with parameters {params}: a 400 naming it", str(body))
    # Ollama's built-in Go renderers and parsers: refused, not stored and ignored
    for field in ("renderer", "parser"):
        st, body = s.post("/api/create", {"model": "x", "from": SMOL, field: "qwen3-coder"})
        check(st in (400, 501) and f"{field.upper()} qwen3-coder" in body.get("error", ""),
              f"/api/create with a {field}: refused naming it", f"{st} {body}")
    for field, value in (("system", 5), ("template", []), ("stream", "x"), ("from", 5), ("model", 5), ("parser", 1)):
        st, body = s.post("/api/create", {"model": "x", "from": SMOL, field: value})
        check(st == 400 and field in body.get("error", ""), f"/api/create with {field} {value!r}: a 400 naming it",
              str(body))
    # a name overwritten (create or copy) while its model is loaded: the old runner goes, not kept
    # to its keep_alive beside the new model's
    for how in ("copy", "create"):
        s.raw("POST", "/api/copy", json.dumps({"source": SMOL, "destination": "victim"}))
        s.ollama.generate(model="victim", prompt="Hi", options=greedy(1), keep_alive=-1)
        loaded = [m["name"] for m in s.post_get("/api/ps")["models"]].count("victim:latest")
        st, _ = (s.raw("POST", "/api/copy", json.dumps({"source": "stops", "destination": "victim"})) if how == "copy"
                 else s.post("/api/create", {"model": "victim", "from": SMOL, "system": "Be brief."}))
        time.sleep(0.5)
        after = [m["name"] for m in s.post_get("/api/ps")["models"]].count("victim:latest")
        check(st == 200 and loaded == 1 and after == 0, f"/api/{how} onto a loaded name unloads its runner",
              f"{st} {loaded} {after}")
    s.raw("DELETE", "/api/delete", json.dumps({"model": "victim"}))


def test_gemma4_mtp(s):
    """Issue 9, point 4: the tiny Gemma 4 with its MTP assistant as DRAFT,
    created with --quantize int4 --quantize-draft int8, answers through
    /api/chat (the real ollama client), speculating: the final object
    carries the draft's counts, and the greedy answer equals the one
    without speculation (draft_max 0)."""
    fix = os.path.join(ROOT, "tests", "golden", "gemma4")
    mf = os.path.join(s.dir, "gemma4.Modelfile")
    with open(mf, "w") as f:
        f.write(f"FROM {fix}/dense\nDRAFT {fix}/assistant-trained\n")
    p = subprocess.run([WICK, "create", "gemma4-tiny", "-f", mf, "--quantize", "int4", "--quantize-draft", "int8"],
                       env=dict(os.environ, WICK_MODELS=s.dir), capture_output=True, text=True)
    check(p.returncode == 0, "create gemma4-tiny (int4) with its assistant (int8)", p.stderr)
    msgs = [{"role": "user", "content": "Hello there, tell me something."}]
    spec = {"temperature": 0, "num_predict": 48, "draft_min": 3}
    a = s.ollama.chat(model="gemma4-tiny", messages=msgs, options=spec)
    b = s.ollama.chat(model="gemma4-tiny", messages=msgs, options=dict(spec, draft_max=0))
    check(a.done and a.message.content != "" and a.message.content == b.message.content,
          "greedy /api/chat of gemma4-tiny with the MTP assistant equals without", f"{a.message.content!r} vs "
          f"{b.message.content!r}")
    st, fin = s.post("/api/chat", {"model": "gemma4-tiny", "messages": msgs, "options": spec})
    check(st == 200 and fin.get("draft_count", 0) > 0 and fin.get("draft_rounds", 0) > 0,
          "the final /api/chat object of gemma4-tiny carries the assistant's draft counts", str(fin))
    s.ollama.generate(model="gemma4-tiny", prompt="", keep_alive=0)  # unload: later tests count runners


def test_speculation(s):
    """The "drafted" model (SmolLM2 drafting for itself): speculative decoding
    through both APIs gives what plain decoding gives (greedy), reports its
    counts, honours stop strings, and stops when its client leaves."""
    spec = {"temperature": 0, "num_predict": 48, "draft_min": 3}
    plain = dict(spec, draft_max=0)
    msgs = [{"role": "user", "content": "Write a haiku about autumn leaves."}]
    # OpenAI (no options: the draft length is adaptive, and its first round a
    # probe); usage counts the accepted and rejected predictions
    o = s.openai.chat.completions.create(model="drafted", messages=msgs, temperature=0, max_tokens=48)
    d = o.usage.completion_tokens_details
    check(d is not None and d.accepted_prediction_tokens > 0 and d.rejected_prediction_tokens >= 0,
          "OpenAI chat with the draft: usage with accepted/rejected_prediction_tokens", str(o.usage))
    a = s.ollama.chat(model="drafted", messages=msgs, options=spec)
    b = s.ollama.chat(model="drafted", messages=msgs, options=plain)
    check(a.message.content == b.message.content and a.eval_count == b.eval_count
          and o.choices[0].message.content == b.message.content,
          "greedy /api/chat and OpenAI chat with the draft equal /api/chat without",
          f"{a.message.content!r} vs {b.message.content!r}")
    # the client's response classes drop fields they do not know: read the raw objects
    fa = s.post("/api/chat", {"model": "drafted", "messages": msgs, "options": spec, "stream": False})[1]
    fb = s.post("/api/chat", {"model": "drafted", "messages": msgs, "options": plain, "stream": False})[1]
    check(fa.get("draft_count", 0) > 0 and 0 < fa.get("draft_accepted_count", 0) <= fa["draft_count"]
          and fa.get("draft_rounds", 0) > 0 and "draft_count" not in fb,
          "the final /api/chat object carries the draft's counts (only when it ran)",
          str({k: v for k, v in fa.items() if k.startswith("draft")}))
    # a stop string from the middle of the plain answer cuts both at the same place
    text = b.message.content
    stop = text[len(text) // 2: len(text) // 2 + 4]
    sa = s.ollama.chat(model="drafted", messages=msgs, options=dict(spec, stop=[stop]))
    sb = s.ollama.chat(model="drafted", messages=msgs, options=dict(plain, stop=[stop]))
    check(sa.message.content == sb.message.content and stop not in sa.message.content
          and sa.done_reason == "stop", "a stop string during speculation cuts where plain decoding cuts",
          f"{stop!r}: {sa.message.content!r} vs {sb.message.content!r}")
    # the client leaves mid-stream: the runner goes idle and generates nothing more
    c, r = stream_lines(s, "/api/generate", {"model": "drafted", "prompt": "Write a very long story.",
                                             "options": {"temperature": 0, "num_predict": 2000, "draft_min": 4}})
    for _ in range(5):
        r.readline()
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    t0 = time.time()
    while time.time() - t0 < 1.0 and (runner_state(s, "drafted:latest").get("busy")):
        time.sleep(0.02)
    t1 = runner_state(s, "drafted:latest")
    time.sleep(0.3)
    t2 = runner_state(s, "drafted:latest")
    check(not t1.get("busy") and t1["tokens_generated"] == t2["tokens_generated"],
          "a client that leaves during speculation leaves the runner idle within 1 s, nothing generated after",
          f"{t1} {t2}")
    st, body = s.post("/api/generate", {"model": "drafted", "prompt": "x", "options": {"draft_max": 16}})
    check(st == 400 and "draft_max" in body["error"], "draft_max out of range is a 400 naming it", str(body))


def serve_rss(s):
    with open(f"/proc/{s.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024


def test_load(s):
    errors = 0
    rss = []
    t0 = time.time()
    for i in range(150):  # ~7 a second on a 2-core Zen 1 (each prefills ~17 tokens of the template again)
        st, body = s.post("/api/generate", {"model": SMOL, "prompt": f"Say {i}", "stream": False,
                                             "options": {"num_predict": 1, "temperature": 0}})
        errors += st != 200
        if i in (49, 149):
            rss.append(serve_rss(s))
    seq_rate = 150 / (time.time() - t0)
    res = [None] * 50

    def one(i):
        try:
            res[i] = s.post("/v1/completions", {"model": SMOL, "prompt": f"Count {i}", "max_tokens": 2})[0]
        except Exception as e:  # noqa: BLE001
            res[i] = str(e)

    ts = [threading.Thread(target=one, args=(i,)) for i in range(50)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    check(errors == 0, "150 sequential short requests without error", str(errors))
    check(all(r == 200 for r in res), "50 concurrent requests without error", str([r for r in res if r != 200][:3]))
    check(rss[1] <= rss[0] + 2 * 1024 * 1024, "server RSS flat over 100 requests (within 2 MiB)", str(rss))
    print(f"  {seq_rate:.1f} sequential requests/s (num_predict 1); RSS {rss[0] >> 10} -> {rss[1] >> 10} KiB", flush=True)


def test_shutdown(s):
    c, r = stream_lines(s, "/api/generate", {"model": SMOL, "prompt": "Write a long story.",
                                             "options": {"num_predict": 2000}})
    r.readline()
    pid = runner_state(s)["pid"]
    s.proc.send_signal(signal.SIGTERM)
    rest = r.read().decode().strip().splitlines()
    c.close()
    rc = s.proc.wait(timeout=20)
    check(rest and "error" in json.loads(rest[-1]), "SIGTERM ends an open stream with an error line", str(rest[-1:]))
    check(rc == 0, "wick serve exits 0 on SIGTERM", str(rc))
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    check(not alive, "the runner stops with the server")


def test_ollama_api(s):
    """tests/server/test_ollama_api.py: blobs, create with files, copy,
    delete, show, list, ps; then OLLAMA_* environment on a second server."""
    import test_ollama_api
    test_ollama_api.test_ollama_surface(s, os.path.join(CACHE, SMOL_FIX["model"]))
    test_ollama_api.test_ollama_env(WICK, s.dir, s.port)


def test_fill_in_middle(s):
    """tests/server/test_fim.py: a suffix on /api/generate and /v1/completions."""
    import test_fim
    test_fim.test_fill_in_middle(s, QWEN, SMOL)


def test_anthropic(s):
    """tests/server/test_anthropic.py: /v1/messages and count_tokens with the anthropic client."""
    import test_anthropic
    qwen = os.path.join(CACHE, QWEN_FIX["model"])
    test_anthropic.test_anthropic(s, SMOL, QWEN, case("english"), lambda msgs, tools: jinja2_chat(qwen, {
        "messages": msgs, "tools": tools, "add_generation_prompt": True, "bos_token": "<|endoftext|>",
        "eos_token": "<|im_end|>"}))


def test_responses(s):
    """tests/server/test_responses.py: /v1/responses with the openai client."""
    import test_responses
    qwen = os.path.join(CACHE, QWEN_FIX["model"])
    test_responses.test_responses(s, SMOL, QWEN, case("english"), lambda msgs, tools: jinja2_chat(qwen, {
        "messages": msgs, "tools": tools, "add_generation_prompt": True, "bos_token": "<|endoftext|>",
        "eos_token": "<|im_end|>"}))


def test_harmony(s):
    """tests/server/test_harmony.py: gpt-oss's think levels and OpenAI's reasoning_effort."""
    import test_harmony
    test_harmony.test_harmony(s, WICK)


def main():
    s = Server()
    try:
        for t in (test_errors, test_ollama_client, test_openai_client, test_qwen2_chat, test_prefix_reuse, test_cancellation,
                  test_runner_killed, test_concurrent_same_answer, test_cli_ps_stop_and_max_loaded, test_api_create, test_ollama_api, test_templates, test_template_kwargs, test_tool_prompts, test_fill_in_middle, test_generate_context, test_truncate_history, test_tool_tags, test_tool_calls, test_anthropic, test_responses, test_harmony, test_structured_output, test_mask_only_removes, test_api_edges, test_gemma4_mtp, test_load,
                  test_shutdown):
            t0 = time.time()
            t(s)
            print(f"{t.__name__}: {time.time() - t0:.1f} s", flush=True)
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
    finish("server")


if __name__ == "__main__":
    main()
