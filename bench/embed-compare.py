#!/usr/bin/env python3
"""bench/embed-compare.py - embedding speed side by side on this machine, on
all-MiniLM-L6-v2 (scripts/fetch-models minilm) and the inputs of
tests/golden/minilm/embeddings.json.xz (cycled to the batch):

  wick (in-process)   build/release/bench/embed: tokenize + embed, one call
  wick serve          POST /api/embed over HTTP (the runner process)
  llama-server        POST /v1/embeddings over HTTP on the same folder converted
                      by llama.cpp's own convert_hf_to_gguf.py (F32), --embeddings, 16
                      slots of 512 positions (a sequence must fit one slot), ubatch 8192
  sentence-transformers  model.encode on torch CPU (batch_size 32, its default, and
                      the whole batch at once)

The inputs: the 200 reference inputs but the 2 over-long ones and the 1 with a
NUL byte (every engine takes each as it is), 5 to 120 tokens, cycled. For each:
sentences per second for a batch of BATCH (best of REPEATS), the
median latency of one sentence (50 runs), and for the two servers the
sentences per second of 16 clients at once each sending one sentence a
request (BATCH / 16 requests each, best of REPEATS). The two servers run
side by side and are measured interleaved (a batch of one, a batch of the
other, each round; one-sentence requests in blocks of 10, alternating; a
pause before each switch), so a slow stretch of
a shared machine falls on both; "ratio" gives wick serve / llama-server per
round (batch and 16 clients: sentences/s; one sentence: the latency of
llama-server / wick's). Figures, not a test. Usage:

  python3 bench/embed-compare.py [--batch 256] [--repeats 3] [--threads 2]
      [--llama-server PATH] [--gguf all-MiniLM-L6-v2-f32.gguf (scripts/reference/make-minilm-gguf.sh)]
      [--st-python PYTHON]

The python running it needs nothing beyond the standard library; sentence-
transformers runs under --st-python (a python with sentence-transformers).
"""
import argparse
import json
import lzma
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
CACHE = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")))
MODEL = os.path.join(CACHE, "models", "all-MiniLM-L6-v2")

ST_CODE = r"""
import json, sys, time, statistics, torch
from sentence_transformers import SentenceTransformer
torch.set_num_threads(int(sys.argv[2]))
texts = json.load(open(sys.argv[1]))
m = SentenceTransformer(sys.argv[3], device="cpu")
out = {}
for bs in (32, len(texts)):
    m.encode(texts, batch_size=bs)
    best = 1e9
    for _ in range(int(sys.argv[4])):
        t = time.perf_counter(); m.encode(texts, batch_size=bs); best = min(best, time.perf_counter() - t)
    out[f"batch_size {bs}"] = len(texts) / best
one = []
for i in range(50):
    t = time.perf_counter(); m.encode([texts[i % len(texts)]]); one.append((time.perf_counter() - t) * 1e3)
out["one_ms"] = statistics.median(one)
print(json.dumps(out))
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, obj, timeout=600):
    req = urllib.request.Request(url, data=json.dumps(obj).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{url}: {e.code} {e.read()[:300]!r}") from None


def wait_up(url, proc, limit=120):
    t0 = time.time()
    while time.time() - t0 < limit and proc.poll() is None:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return True
        except OSError:
            time.sleep(0.1)
    return False


# Seconds between one server's requests and the other's: both keep their
# threads spinning a while after a request (wick's pool 2 ms, ggml's
# polling), which on 2 cores would slow the other one down.
SETTLE = 0.2


def http_bench(servers, texts, repeats):
    """servers: {name: (url, body_of)}, measured interleaved (see the top)."""
    for url, body_of in servers.values():
        post(url, body_of(texts[:4]))  # load
    res = {n: {"batch_s": [], "one_ms": [], "clients_s": []} for n in servers}
    n_cl, per = 16, max(4, len(texts) // 16)

    def client(url, body_of, k):
        for i in range(per):
            post(url, body_of([texts[(k * per + i) % len(texts)]]))

    for _ in range(repeats):
        for n, (url, body_of) in servers.items():
            time.sleep(SETTLE)
            t = time.perf_counter()
            post(url, body_of(texts))
            res[n]["batch_s"].append(time.perf_counter() - t)
        # CLIENTS clients at once, each sending one sentence a request (a RAG
        # ingestion with parallel workers): sentences per second over them all
        for n, (url, body_of) in servers.items():
            time.sleep(SETTLE)
            ths = [threading.Thread(target=client, args=(url, body_of, k)) for k in range(n_cl)]
            t = time.perf_counter()
            for th in ths:
                th.start()
            for th in ths:
                th.join()
            res[n]["clients_s"].append(time.perf_counter() - t)
    for i0 in range(0, 50, 10):
        for n, (url, body_of) in servers.items():
            time.sleep(SETTLE)
            for i in range(i0, i0 + 10):
                t = time.perf_counter()
                post(url, body_of([texts[i % len(texts)]]))
                res[n]["one_ms"].append((time.perf_counter() - t) * 1e3)
    out = {n: {"sentences_per_s": len(texts) / min(r["batch_s"]), "one_ms": statistics.median(r["one_ms"]),
               f"{n_cl}_clients_sentences_per_s": n_cl * per / min(r["clients_s"])} for n, r in res.items()}
    if len(servers) == 2:
        a, b = (res[n] for n in servers)
        out["ratio"] = {"batch": [round(y / x, 2) for x, y in zip(a["batch_s"], b["batch_s"])],
                        f"{n_cl}_clients": [round(y / x, 2) for x, y in zip(a["clients_s"], b["clients_s"])],
                        "one_sentence": round(statistics.median(b["one_ms"]) / statistics.median(a["one_ms"]), 2)}
    return out


def start_wick(a, stack):
    tmp = tempfile.mkdtemp(prefix="wick-embed-bench-")
    mf = os.path.join(tmp, "Modelfile")
    open(mf, "w").write(f"FROM {MODEL}\n")
    env = dict(os.environ, WICK_MODELS=tmp)
    wick = os.path.join(ROOT, "build", "release", "wick")
    subprocess.run([wick, "create", "minilm", "-f", mf], env=env, check=True, capture_output=True)
    port = free_port()
    env.update(WICK_HOST=f"127.0.0.1:{port}")
    p = subprocess.Popen([wick, "serve"], env=env, stderr=subprocess.DEVNULL)
    stack.append(p)
    if not wait_up(f"http://127.0.0.1:{port}/", p):
        raise RuntimeError("wick serve did not start")
    return f"http://127.0.0.1:{port}/api/embed", lambda t: {"model": "minilm", "input": t}


def start_llama_server(a, stack):
    port = free_port()
    p = subprocess.Popen([a.llama_server, "-m", a.gguf, "--embeddings", "--port", str(port), "-t", str(a.threads),
                          "-c", str(512 * 16), "-b", "8192", "-ub", "8192", "-np", "16", "--pooling", "mean"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stack.append(p)
    if not wait_up(f"http://127.0.0.1:{port}/health", p):
        return None
    time.sleep(1)
    return f"http://127.0.0.1:{port}/v1/embeddings", lambda t: {"input": t}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--llama-server", default=os.path.join(CACHE, "llama.cpp", "build", "bin", "llama-server"))
    ap.add_argument("--gguf", default=os.path.join(CACHE, "models", "all-MiniLM-L6-v2-f32.gguf"))
    ap.add_argument("--st-python", default=os.path.join(CACHE, "grammar-anchors-venv", "bin", "python"))
    a = ap.parse_args()
    with lzma.open(os.path.join(ROOT, "tests", "golden", "minilm", "embeddings.json.xz"), "rt", encoding="utf-8") as f:
        fx = json.load(f)
    # every engine takes every input as it is: none cut at the limit (llama-server refuses
    # those), none with NUL (wick serve refuses it in a body)
    cases = [c for c in fx["cases"] if "\x00" not in c["text"] and len(c["ids"]) < fx["max_seq_length"]]
    texts = [cases[i % len(cases)]["text"] for i in range(a.batch)]
    tmp = tempfile.mkdtemp(prefix="embed-bench-")
    tj = os.path.join(tmp, "texts.json")
    json.dump(texts, open(tj, "w"))
    cj = os.path.join(tmp, "cases.json")
    json.dump({"cases": [{"text": t} for t in texts]}, open(cj, "w"))
    res = {}
    out = subprocess.run([os.path.join(ROOT, "build", "release", "bench", "embed"), MODEL, cj, str(a.batch),
                          str(a.repeats), str(a.threads)], capture_output=True, text=True, check=True).stdout
    res["wick (in-process)"] = json.loads(out)
    stack = []
    try:
        servers = {"wick serve /api/embed": start_wick(a, stack)}
        if os.path.exists(a.llama_server) and os.path.exists(a.gguf):
            ls = start_llama_server(a, stack)
            if ls:
                servers["llama-server /v1/embeddings"] = ls
            else:
                res["llama-server /v1/embeddings"] = {"error": "llama-server did not start"}
        res.update(http_bench(servers, texts, a.repeats))
    finally:
        for p in stack:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=30)
    st = subprocess.run([a.st_python, "-c", ST_CODE, tj, str(a.threads), MODEL, str(a.repeats)], capture_output=True,
                        text=True)
    res["sentence-transformers (torch CPU)"] = json.loads(st.stdout.strip().splitlines()[-1]) if st.returncode == 0 \
        else {"error": st.stderr[-300:]}
    for k, v in res.items():
        print(f"{k:36s} {json.dumps(v)}")


if __name__ == "__main__":
    main()
