#!/usr/bin/env python3
"""llama-server's small routes on `wick serve`: GET /health, POST /tokenize and
/detokenize, GET /metrics, and HEAD on every GET route; over real HTTP, on the
real SmolLM2-135M and Gemma 3 270M, on a free port with a temporary store.

References, each independent of the route under test: `wick tokenize` and
`wick detokenize` (the CLI: the GGUF's tokenizer opened on its own, not the
runner); the Hugging Face tokenizers' ids of tests/golden/smollm2-135m.json
("tokenize": 250 texts, made by scripts/reference/make-golden-smollm2.py);
the GGUF's own metadata read by the `gguf` package (BOS id, add_bos_token,
vocabulary size); the counts and durations the generation responses reported,
and the requests this test made, against /metrics as parsed by
prometheus_client's parser. WICK_BIN runs another build (the ASan one).
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from prometheus_client.parser import text_string_to_metric_families

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WICK = os.environ.get("WICK_BIN") or os.path.join(ROOT, "build", "release", "wick")
CACHE = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")), "models")
SMOL_FIX = json.load(open(os.path.join(ROOT, "tests", "golden", "smollm2-135m.json"), encoding="utf-8"))
SMOL_GGUF = os.path.join(CACHE, SMOL_FIX["model"])
GEMMA_GGUF = os.path.join(CACHE, "gemma-3-270m-q4_k_m.gguf")
SMOL, GEMMA = "smollm2:latest", "gemma3:latest"
PROM_TYPE = "text/plain; version=0.0.4; charset=utf-8"

sys.path.insert(0, os.path.join(ROOT, "tests"))
from checks import check, finish  # noqa: E402
from gguf_kv import gguf_kv  # noqa: E402


def gguf_meta(path):
    """(BOS id, add_bos_token, vocabulary size) as the GGUF file states them."""
    kv = gguf_kv(path)
    return kv["tokenizer.ggml.bos_token_id"], bool(kv.get("tokenizer.ggml.add_bos_token", False)), kv["tokenizer.ggml.tokens"]


class Server:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="wick-llama-routes-")
        for name, path in (("smollm2", SMOL_GGUF), ("gemma3", GEMMA_GGUF)):
            mf = os.path.join(self.dir, name + ".Modelfile")
            with open(mf, "w") as f:
                f.write(f"FROM {path}\n")
            subprocess.run([WICK, "create", name, "-f", mf], env=dict(os.environ, WICK_MODELS=self.dir),
                           check=True, capture_output=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = dict(os.environ, WICK_HOST=f"127.0.0.1:{self.port}", WICK_MODELS=self.dir)
        self.log = open(os.path.join(self.dir, "serve.log"), "w+")  # the server's and its runners' stderr
        self.proc = subprocess.Popen([WICK, "serve"], env=env, stderr=self.log)
        for _ in range(400):
            try:
                if self.raw("GET", "/")[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)

    def raw(self, method, path, body=None, timeout=300):
        """(status, headers, body bytes) of one request on a fresh connection."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request(method, path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data

    def post(self, path, obj):
        st, _, data = self.raw("POST", path, json.dumps(obj))
        return st, json.loads(data)

    def ps(self):
        return [m["name"] for m in json.loads(self.raw("GET", "/api/ps")[2])["models"]]

    def metrics(self):
        """{(sample name, sorted labels): value} of /metrics, and the families by name."""
        st, h, data = self.raw("GET", "/metrics")
        check(st == 200 and h.get("content-type") == PROM_TYPE, "/metrics: 200 with the 0.0.4 text content type",
              f"{st} {h.get('content-type')}")
        fams = {f.name: f for f in text_string_to_metric_families(data.decode())}
        vals = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in fams.values() for s in f.samples}
        return vals, fams, data.decode()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def cli_tokenize(path, text, special):
    out = subprocess.run([WICK, "tokenize", path, text] + (["--special"] if special else []),
                         capture_output=True, check=True).stdout
    return [int(x) for x in out.split()]


def cli_detokenize(path, ids):
    """The bytes `wick detokenize` prints for ids (its trailing newline cut)."""
    out = subprocess.run([WICK, "detokenize", path] + [str(i) for i in ids], capture_output=True, check=True).stdout
    return out[:-1]


def piece_bytes(p):
    return p.encode("utf-8") if isinstance(p, str) else bytes(p)


def wait_for(cond, limit):
    t0 = time.time()
    while time.time() - t0 < limit:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


# ------------------------------------------------------------ /health, HEAD

def test_health_and_head(s):
    st, h, body = s.raw("GET", "/health")
    check(st == 200 and json.loads(body) == {"status": "ok"} and h["content-type"].startswith("application/json"),
          "GET /health: 200 {\"status\": \"ok\"}", f"{st} {body!r}")
    stable = ("/", "/api/version", "/api/tags", "/health", "/v1/health")
    for path in stable + ("/api/ps", "/v1/models", "/v1/models/smollm2", "/metrics"):
        gst, gh, gbody = s.raw("GET", path)
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
        c.request("HEAD", path)
        r = c.getresponse()
        hbody = r.read()
        hh = {k.lower(): v for k, v in r.getheaders()}
        # what came after the headers on the socket: nothing (a body sent anyway would be here)
        c.sock.settimeout(0.3)
        try:
            extra = c.sock.recv(100)
        except socket.timeout:
            extra = b""
        c.close()
        same_len = path not in stable or hh.get("content-length") == str(len(gbody))
        check(r.status == gst == 200 and hbody == b"" and extra == b"" and hh.get("content-type") == gh.get("content-type")
              and same_len, f"HEAD {path}: GET's status, type and length, no body",
              f"{r.status}/{gst} body {hbody[:40]!r} extra {extra[:40]!r} {hh} vs {gh} len {len(gbody)}")


# ------------------------------------------------------------ /tokenize, /detokenize

TEXTS = ["Hello, world!", "The quick brown fox jumps over the lazy dog.\nNew line\ttab",
         "Grüße aus Köln: ça va? 東京タワー 🎉🚀", "<|im_start|>user\nhi<|im_end|>", "   leading spaces and 12345 digits",
         "x" * 300]


def test_tokenize(s):
    st, body = s.post("/tokenize", {"content": "hi"})
    check(st == 400 and "model" in body.get("error", ""), "no model loaded and none named: 400 naming model", str(body))
    for text in TEXTS:
        for special in (True, False):
            req = {"model": "smollm2", "content": text}
            if not special:
                req["parse_special"] = False
            st, body = s.post("/tokenize", req)
            want = cli_tokenize(SMOL_GGUF, text, special)
            check(st == 200 and body == {"tokens": want},
                  f"/tokenize equals `wick tokenize{' --special' if special else ''}` on {text[:30]!r}",
                  f"{st} {str(body)[:200]} vs {want[:20]}")
    # the Hugging Face tokenizers' ids (user content: control-token text stays literal)
    # (a JSON body with \u0000 is refused on every route, this one included: the text with a NUL is left out)
    cases = [c for c in SMOL_FIX["tokenize"] if "\x00" not in c["text"]]
    bad = []
    for case in cases:
        st, body = s.post("/tokenize", {"model": "smollm2", "content": case["text"], "parse_special": False})
        if st != 200 or body["tokens"] != case["ids"]:
            bad.append((case["text"][:40], body))
    check(not bad and len(cases) == 249, f"/tokenize equals the HF tokenizers' ids on {len(cases)} fixture texts",
          str(bad[:3]))
    st, body = s.post("/tokenize", {"model": "smollm2", "content": "\x00nul"})
    check(st == 400 and "invalid JSON" in body.get("error", ""), "/tokenize: a NUL in the JSON body is a 400", str(body))
    # the model is loaded now: "model" may be left out
    st, body = s.post("/tokenize", {"content": TEXTS[0]})
    check(st == 200 and body["tokens"] == cli_tokenize(SMOL_GGUF, TEXTS[0], True),
          "one model loaded: /tokenize without model uses it", str(body))

    # with_pieces: the ids as without, each piece the bytes `wick detokenize` prints for it
    text = "Grüße 🎉 <|im_end|>!"
    st, plain = s.post("/tokenize", {"model": "smollm2", "content": text})
    st2, body = s.post("/tokenize", {"model": "smollm2", "content": text, "with_pieces": True})
    toks = body.get("tokens", [])
    ids = [t["id"] for t in toks]
    check(st == st2 == 200 and ids == plain["tokens"] and all(set(t) == {"id", "piece"} for t in toks),
          "with_pieces: [{id, piece}], the same ids", str(body)[:300])
    pieces_ok = all(piece_bytes(t["piece"]) == cli_detokenize(SMOL_GGUF, [t["id"]]) for t in toks)
    kinds = [type(t["piece"]).__name__ for t in toks]
    check(pieces_ok and b"".join(piece_bytes(t["piece"]) for t in toks) == text.encode(),
          "with_pieces: each piece is its token's bytes (as `wick detokenize`), all of them the text",
          str(toks))
    # 🎉 is split across tokens: a piece that is not UTF-8 on its own comes as its byte values
    check("list" in kinds and "str" in kinds and all(
        isinstance(t["piece"], str) or not _utf8(bytes(t["piece"])) for t in toks),
        "with_pieces: a piece is a string when valid UTF-8, else a list of byte values", str(kinds))

    # add_special: BOS first exactly where the GGUF says the model adds it
    for name, path in (("smollm2", SMOL_GGUF), ("gemma3", GEMMA_GGUF)):
        bos, add_bos, _ = gguf_meta(path)
        want = cli_tokenize(path, "Hello there", True)
        st, a = s.post("/tokenize", {"model": name, "content": "Hello there", "add_special": True})
        st2, b = s.post("/tokenize", {"model": name, "content": "Hello there"})
        check(st == st2 == 200 and b["tokens"] == want and a["tokens"] == ([bos] if add_bos else []) + want,
              f"{name}: add_special puts BOS ({bos}) first only when the GGUF's add_bos_token ({add_bos}) says so",
              f"{a} {b} {want}")
    check(sorted(s.ps()) == [GEMMA, SMOL], "/tokenize loaded gemma3 beside smollm2", str(s.ps()))
    st, body = s.post("/tokenize", {"content": "hi"})
    check(st == 400 and "model" in body.get("error", ""), "two models loaded and none named: 400 naming model",
          str(body))
    # unloaded (keep_alive 0), then "model" may be left out again
    s.post("/api/generate", {"model": "gemma3", "keep_alive": 0})
    check(wait_for(lambda: s.ps() == [SMOL], 20), "gemma3 unloaded", str(s.ps()))
    st, body = s.post("/tokenize", {"content": "hi"})
    check(st == 200 and body["tokens"] == cli_tokenize(SMOL_GGUF, "hi", True), "back to one model: no model needed",
          str(body))


def _utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_detokenize(s):
    for text in TEXTS:
        _, t = s.post("/tokenize", {"model": "smollm2", "content": text})
        st, body = s.post("/detokenize", {"model": "smollm2", "tokens": t["tokens"]})
        cli = cli_detokenize(SMOL_GGUF, t["tokens"])
        check(st == 200 and body == {"content": text} and cli == text.encode(),
              f"/detokenize(/tokenize(text)) == text == `wick detokenize` on {text[:30]!r}", f"{st} {body} {cli!r}")
    st, body = s.post("/detokenize", {"tokens": []})
    check(st == 200 and body == {"content": ""}, "/detokenize of no tokens: \"\"", str(body))
    # half of 🎉: bytes that are not UTF-8 on their own come back as U+FFFD
    _, t = s.post("/tokenize", {"model": "smollm2", "content": "a🎉"})
    half = t["tokens"][:-1]
    st, body = s.post("/detokenize", {"model": "smollm2", "tokens": half})
    cli = cli_detokenize(SMOL_GGUF, half)
    content = body.get("content", "")
    check(st == 200 and cli.startswith(b"a") and not _utf8(cli) and content != "a" and content.rstrip("\ufffd") == "a",
          "/detokenize of a cut character: the bytes that do not form UTF-8 come as U+FFFD", f"{body} {cli!r}")


def test_errors(s):
    _, _, n_vocab = gguf_meta(SMOL_GGUF)
    cases = [
        ("/tokenize", {"model": "smollm2", "content": 123}, 400, "content"),
        ("/tokenize", {"model": "smollm2"}, 400, "content"),
        ("/tokenize", {"model": "smollm2", "content": "x", "add_special": "yes"}, 400, "add_special"),
        ("/tokenize", {"model": "smollm2", "content": "x", "with_pieces": 1}, 400, "with_pieces"),
        ("/tokenize", {"model": "smollm2", "content": "x", "parse_special": None}, 400, "parse_special"),
        ("/tokenize", {"model": 5, "content": "x"}, 400, "model"),
        ("/tokenize", {"model": "no-such-model", "content": "x"}, 404, "no-such-model"),
        ("/detokenize", {"model": "smollm2"}, 400, "tokens"),
        ("/detokenize", {"model": "smollm2", "tokens": "1 2"}, 400, "tokens"),
        ("/detokenize", {"model": "smollm2", "tokens": [1, "2"]}, 400, "tokens[1]"),
        ("/detokenize", {"model": "smollm2", "tokens": [1, 2.5]}, 400, "tokens[1]"),
        ("/detokenize", {"model": "smollm2", "tokens": [1, 2, n_vocab]}, 400, f"tokens[2]: {n_vocab} "),
        ("/detokenize", {"model": "smollm2", "tokens": [-1]}, 400, "tokens[0]"),
        ("/detokenize", {"model": "no-such-model", "tokens": [1]}, 404, "no-such-model"),
    ]
    for path, req, want, word in cases:
        st, body = s.post(path, req)
        check(st == want and isinstance(body.get("error"), str) and word in body["error"],
              f"{path} {json.dumps(req)[:70]}: {want} naming {word!r}", f"{st} {body}")
    st, body = s.post("/detokenize", {"model": "smollm2", "tokens": [n_vocab - 1]})
    check(st == 200, "the last id of the vocabulary is accepted", f"{st} {body}")
    st, _, data = s.raw("POST", "/tokenize", "{not json")
    check(st == 400 and "invalid JSON" in json.loads(data)["error"], "/tokenize: invalid JSON is a 400", str(data))
    st, _, _ = s.raw("GET", "/tokenize")
    check(st == 405, "GET /tokenize: 405", str(st))


# ------------------------------------------------------------ /metrics

def delta(after, before, name, **labels):
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0) - before.get(key, 0)


def gen_final(s, path, req):
    """The final object of a streamed request (read as NDJSON)."""
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=300)
    c.request("POST", path, body=json.dumps(req), headers={"Content-Type": "application/json"})
    lines = c.getresponse().read().decode().strip().splitlines()
    c.close()
    return json.loads(lines[-1])


def test_metrics_format(s):
    vals, fams, text = s.metrics()
    want = {"wick_requests": "counter", "wick_prompt_tokens": "counter", "wick_prompt_tokens_cached": "counter",
            "wick_generated_tokens": "counter", "wick_prompt_seconds": "counter", "wick_generation_seconds": "counter",
            "wick_prompt_tokens_per_second": "gauge", "wick_generated_tokens_per_second": "gauge",
            "wick_requests_processing": "gauge", "wick_requests_queued": "gauge", "wick_models_loaded": "gauge",
            "wick_slots_busy": "gauge", "wick_slots_total": "gauge", "llamacpp:prompt_tokens": "counter",
            "llamacpp:tokens_predicted": "counter", "llamacpp:prompt_seconds": "counter",
            "llamacpp:tokens_predicted_seconds": "counter", "llamacpp:requests_processing": "gauge",
            "llamacpp:requests_deferred": "gauge", "llamacpp:prompt_tokens_cached": "counter"}
    got = {n: f.type for n, f in fams.items()}
    check(all(got.get(n) == t for n, t in want.items()), "/metrics: every family with its type",
          str({n: (t, got.get(n)) for n, t in want.items() if got.get(n) != t}))
    helps = [ln for ln in text.splitlines() if ln.startswith("# HELP ")]
    types = [ln for ln in text.splitlines() if ln.startswith("# TYPE ")]
    check(len(helps) == len(types) == len(fams) and all(f.documentation for f in fams.values()),
          "/metrics: one # HELP (with text) and one # TYPE per family", f"{len(helps)} {len(types)} {len(fams)}")


def test_metrics_counts(s):
    before, _, _ = s.metrics()
    msgs = [{"role": "user", "content": "Name a color."}]
    finals = [gen_final(s, "/api/chat", {"model": "smollm2", "messages": msgs,
                                         "options": {"temperature": 0, "num_predict": 5}})]
    for i in range(3):
        st, r = s.post("/api/generate", {"model": "smollm2", "prompt": f"Say the number {i}.", "stream": False,
                                         "options": {"temperature": 0, "num_predict": 5}})
        check(st == 200 and r["eval_count"] == 5, f"generate {i}: 200, 5 tokens", str(r)[:200])
        finals.append(r)
    s.raw("GET", "/api/no-such-route")
    s.post("/api/show", {"model": "no-such-model"})
    s.post("/tokenize", {"model": "smollm2", "content": 1})
    s.post("/tokenize", {"model": "smollm2"})
    after, _, _ = s.metrics()
    counts = {("/api/generate", "200"): 3, ("/api/chat", "200"): 1, ("unknown", "404"): 1, ("/api/show", "404"): 1,
              ("/tokenize", "400"): 2, ("/metrics", "200"): 1, ("/api/ps", "200"): 0}
    got = {k: delta(after, before, "wick_requests_total", route=k[0], code=k[1]) for k in counts}
    check(got == counts, "wick_requests_total rose by exactly the requests made, by route and code", str(got))
    prompt = sum(f["prompt_eval_count"] for f in finals)
    gen = sum(f["eval_count"] for f in finals)
    prompt_s = sum(f["prompt_eval_duration"] for f in finals) / 1e9
    gen_s = sum(f["eval_duration"] for f in finals) / 1e9
    d = {n: delta(after, before, n, model=SMOL) for n in ("wick_prompt_tokens_total", "wick_generated_tokens_total",
                                                          "wick_prompt_seconds_total", "wick_generation_seconds_total",
                                                          "wick_prompt_tokens_cached_total",
                                                          "wick_generation_requests_total")}
    check(d["wick_prompt_tokens_total"] == prompt and d["wick_generated_tokens_total"] == gen == 20
          and d["wick_generation_requests_total"] == 4,
          "prompt and generated tokens rose by the sums of prompt_eval_count and eval_count the responses reported",
          f"{d} vs {prompt} {gen}")
    check(abs(d["wick_prompt_seconds_total"] - prompt_s) < 1e-6 and abs(d["wick_generation_seconds_total"] - gen_s) < 1e-6,
          "prompt and generation seconds rose by the durations the responses reported", f"{d} vs {prompt_s} {gen_s}")
    lp = delta(after, before, "llamacpp:prompt_tokens_total")
    lc = delta(after, before, "llamacpp:prompt_tokens_cached_total")
    check(lp + lc == prompt and lc == d["wick_prompt_tokens_cached_total"] and 0 <= lc < prompt
          and delta(after, before, "llamacpp:tokens_predicted_total") == gen
          and abs(delta(after, before, "llamacpp:tokens_predicted_seconds_total") - gen_s) < 1e-6
          and abs(delta(after, before, "llamacpp:prompt_seconds_total") - prompt_s) < 1e-6,
          "llamacpp: counters: prefilled + cached = prompt tokens, predicted = generated", f"{lp} {lc} {prompt}")
    last = finals[-1]
    rate = last["eval_count"] / (last["eval_duration"] / 1e9)
    g = after[("wick_generated_tokens_per_second", (("model", SMOL),))]
    check(abs(g - rate) <= 1e-6 * rate, "wick_generated_tokens_per_second: the last request's eval_count / eval_duration",
          f"{g} vs {rate}")
    bucket = after[("llamacpp:predicted_tokens_seconds", ())]
    check(abs(bucket - gen / gen_s) <= 1e-6 * bucket, "llamacpp:predicted_tokens_seconds: the rate since the last read",
          f"{bucket} vs {gen / gen_s}")
    bp = after[("llamacpp:prompt_tokens_seconds", ())]
    check(abs(bp - lp / prompt_s) <= 1e-6 * bp, "llamacpp:prompt_tokens_seconds: prefilled tokens per second since the last read",
          f"{bp} vs {lp / prompt_s}")
    # the KV cache's reuse, as the OpenAI usage reports it, and the last prefill rate
    oai = {"model": "smollm2", "messages": [{"role": "user", "content": "Write one sentence about the sea."}],
           "max_tokens": 3, "temperature": 0}
    st, first = s.post("/v1/chat/completions", oai)
    m1, _, _ = s.metrics()
    st2, second = s.post("/v1/chat/completions", oai)
    m2, _, _ = s.metrics()
    cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
    # the cache keeps the prompt but its last token, cut down to a multiple
    # of 8 positions (ATTN_QBLOCK), 8 fewer where the rest would be one token
    # (wk_context_reusable, n_ubatch 512): the rest computes as from 0
    n = second["usage"]["prompt_tokens"]
    keep = (n - 1) // 8 * 8
    keep -= 8 if keep and (n - keep) % 512 == 1 and n % 512 != 1 else 0
    check(st == st2 == 200 and n > 32 and cached == keep
          and delta(m2, m1, "wick_prompt_tokens_cached_total", model=SMOL) == cached
          and delta(m2, m1, "llamacpp:prompt_tokens_cached_total") == cached
          and delta(m2, m1, "llamacpp:prompt_tokens_total") == n - keep,
          "a repeated prompt: cached tokens counted as the usage reports them, the rest prefilled",
          f"{second['usage']} {delta(m2, m1, 'wick_prompt_tokens_cached_total', model=SMOL)} want {keep}")
    ptps = m2[("wick_prompt_tokens_per_second", (("model", SMOL),))]
    want = (n - keep) / delta(m2, m1, "wick_prompt_seconds_total", model=SMOL)
    check(abs(ptps - want) <= 1e-5 * want, "wick_prompt_tokens_per_second: the last request's prefilled tokens per second",
          f"{ptps} vs {want}")
    loaded = len(s.ps())
    n_par = sum(m.get("wick", {}).get("n_parallel", 1)
                for m in json.loads(s.raw("GET", "/api/ps")[2])["models"])
    rest = {n: m2[(n, ())] for n in ("wick_requests_processing", "wick_requests_queued", "wick_slots_busy",
                                     "wick_slots_total", "wick_models_loaded", "llamacpp:requests_processing",
                                     "llamacpp:requests_deferred")}
    check(rest == {"wick_requests_processing": 0, "wick_requests_queued": 0, "wick_slots_busy": 0,
                   "wick_slots_total": n_par, "wick_models_loaded": loaded, "llamacpp:requests_processing": 0,
                   "llamacpp:requests_deferred": 0} and loaded == 1,
          "at rest: nothing processing or queued, the loaded runners' parallel slots", f"{rest} loaded {loaded} slots {n_par}")


def open_stream(s, req):
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=300)
    c.request("POST", "/api/generate", body=json.dumps(req), headers={"Content-Type": "application/json"})
    return c, c.getresponse()


def test_metrics_in_flight(s):
    long = {"model": "smollm2", "prompt": "1, 2, 3, 4, 5, 6, 7, 8,", "raw": True,
            "options": {"temperature": 0, "num_predict": 3000}}
    # the runner's n_parallel slots each hold a stream; one more queues behind them
    c1, r1 = open_stream(s, long)
    first = json.loads(r1.readline())
    n_par = next(m.get("wick", {}).get("n_parallel", 1) for m in json.loads(s.raw("GET", "/api/ps")[2])["models"])
    held = [(c1, r1)]
    for i in range(1, n_par):
        ci, ri = open_stream(s, dict(long, prompt=f"{i}, {i + 1}, {i + 2},"))
        ri.readline()
        held.append((ci, ri))
    c2, r2 = open_stream(s, dict(long, prompt="10, 20, 30, 40,"))
    held.append((c2, r2))
    m, _, _ = s.metrics()
    g = {n: m[(n, ())] for n in ("wick_requests_processing", "wick_requests_queued", "wick_slots_busy",
                                 "wick_slots_total", "llamacpp:requests_processing", "llamacpp:requests_deferred")}
    check(all(r.status == 200 for _, r in held) and "response" in first and g == {
        "wick_requests_processing": n_par, "wick_requests_queued": 1, "wick_slots_busy": n_par, "wick_slots_total": n_par,
        "llamacpp:requests_processing": n_par, "llamacpp:requests_deferred": 1},
        f"{n_par + 1} streams on one runner of {n_par} slots: {n_par} processing, one queued behind them, every slot busy",
        str(g))
    # the tokenizer does not wait behind the generation
    t0 = time.time()
    st, body = s.post("/tokenize", {"model": "smollm2", "content": "while it runs"})
    took = time.time() - t0
    m2, _, _ = s.metrics()
    check(st == 200 and body["tokens"] == cli_tokenize(SMOL_GGUF, "while it runs", True) and took < 10
          and m2[("wick_requests_processing", ())] == n_par,
          "/tokenize answers while a generation runs on the same runner", f"{st} {took:.2f} s")
    for c, _ in held:
        c.sock.shutdown(socket.SHUT_RDWR)
        c.close()
    ok = wait_for(lambda: (lambda v: v[("wick_requests_processing", ())] == 0 and v[("wick_requests_queued", ())] == 0
                           and v[("wick_slots_busy", ())] == 0)(s.metrics()[0]), 20)
    check(ok, "the clients gone: nothing processing or queued", str(s.metrics()[0].get(("wick_requests_queued", ()))))


def main():
    s = Server()
    try:
        for t in (test_health_and_head, test_tokenize, test_detokenize, test_errors, test_metrics_format,
                  test_metrics_counts, test_metrics_in_flight):
            t0 = time.time()
            t(s)
            print(f"{t.__name__}: {time.time() - t0:.1f} s", flush=True)
        check(s.stop() == 0, "wick serve exits 0 on SIGTERM")
        s.log.seek(0)
        log = s.log.read()
        check("Sanitizer" not in log and "runtime error:" not in log,
              "no sanitizer report from the server or its runners (an ASan build: WICK_BIN)", log[-3000:])
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()
        shutil.rmtree(s.dir, ignore_errors=True)  # the store's blobs: hundreds of MB
    finish("llama routes")


if __name__ == "__main__":
    main()
