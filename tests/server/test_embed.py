#!/usr/bin/env python3
"""Embeddings on `wick serve` with the real `ollama` and `openai` clients, over
real HTTP, on all-MiniLM-L6-v2 (scripts/fetch-models minilm) imported with
`wick create` from its sentence-transformers folder, in a temporary store.

References: sentence-transformers' vectors and ids of the 200 inputs of
tests/golden/minilm/embeddings.json.xz and the retrieval ranking of
tests/golden/minilm/retrieval.json (scripts/reference/make-embed-fixtures.py).
A generating model, SmolLM2-135M (scripts/fetch-models smollm2), embeds
too, against llama.cpp's llama-embedding (last-token pooling,
tests/golden/smollm2-embed, scripts/reference/make-decoder-embed-fixture.py):
ollama.embed, openai, legacy, batch against single, truncation at num_ctx,
/api/embed without input (200, no embeddings, the model loaded), and
copies of its GGUF with smollm2.pooling_type 1 (mean: llama.cpp's
mean-pooled vectors; /api/show says embedding, generate is a 400, as
Ollama) and 4 (rank: a 400).
Checks: ollama.embed, ollama.embeddings (legacy), openai embeddings.create
with float, base64 (decoded here) and the client's default (base64 it
decodes), token-id inputs, dimensions; counts (prompt_eval_count,
usage.prompt_tokens against the reference ids); /api/show's capabilities;
the retrieval ranking, also through LangChain's OllamaEmbeddings and
OpenAIEmbeddings in an InMemoryVectorStore; 8 concurrent clients; bad input (an empty OpenAI list, 10,000 inputs, a 1 MB string,
non-string items, truncate false on an over-long text, chat to the embedding
model) answered with clear 400s while the server
serves on. WICK_BIN runs another build (the ASan one).
"""
import base64
import json
import lzma
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import numpy as np
import ollama
import openai

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WICK = os.environ.get("WICK_BIN") or os.path.join(ROOT, "build", "release", "wick")
CACHE = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")), "models")
MINILM = os.path.join(CACHE, "all-MiniLM-L6-v2")
SMOL = os.path.join(CACHE, "SmolLM2-135M-Instruct.Q4_1.gguf")
GOLDEN = os.path.join(ROOT, "tests", "golden", "minilm")

sys.path.insert(0, os.path.join(ROOT, "tests"))
from checks import check, finish  # noqa: E402


def cos(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


class Server:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="wick-embed-")
        for name, path in (("minilm", MINILM), ("smollm2", SMOL)):
            mf = os.path.join(self.dir, name + ".Modelfile")
            with open(mf, "w") as f:
                f.write(f"FROM {path}\n")
            subprocess.run([WICK, "create", name, "-f", mf], env=dict(os.environ, WICK_MODELS=self.dir),
                           check=True, capture_output=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, WICK_HOST=f"127.0.0.1:{self.port}", WICK_MODELS=self.dir)
        self.log = open(os.path.join(self.dir, "serve.log"), "w+")
        self.proc = subprocess.Popen([WICK, "serve"], env=env, stderr=self.log)
        for _ in range(400):
            try:
                urllib.request.urlopen(self.url + "/", timeout=2).read()
                break
            except OSError:
                time.sleep(0.05)

    def post(self, path, obj=None, raw=None):
        """(status, parsed body) of one POST."""
        data = raw if raw is not None else json.dumps(obj).encode()
        req = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=300) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def test_ollama(srv, ref):
    cl = ollama.Client(host=srv.url)
    texts = [c["text"] for c in ref]
    r = cl.embed(model="minilm", input=texts)
    cs = [cos(a, c["embedding"]) for a, c in zip(r.embeddings, ref)]
    n_ids = sum(len(c["ids"]) for c in ref)
    check(len(r.embeddings) == len(ref) and min(cs) >= 0.9999,
          "ollama.embed: the reference inputs agree with sentence-transformers (cosine >= 0.9999 each)",
          f"{len(r.embeddings)} vectors, lowest cosine {min(cs) if cs else None}")
    print(f"  ollama.embed: {len(texts)} inputs, lowest cosine {min(cs):.9f}")
    check(r.prompt_eval_count == n_ids, "ollama.embed: prompt_eval_count is the inputs' tokens ([CLS], [SEP], truncation)",
          f"{r.prompt_eval_count} vs {n_ids}")
    check(r.total_duration and r.total_duration > 0 and r.load_duration is not None and r.load_duration >= 0,
          "ollama.embed: total_duration and load_duration", f"{r.total_duration} {r.load_duration}")
    norms = [float(np.linalg.norm(v)) for v in r.embeddings]
    check(all(abs(n - 1) < 1e-5 for n in norms), "ollama.embed: vectors are unit length", f"{min(norms)} {max(norms)}")
    one = cl.embed(model="minilm", input=ref[3]["text"])
    check(len(one.embeddings) == 1 and cos(one.embeddings[0], ref[3]["embedding"]) >= 0.9999,
          "ollama.embed: a string input", str(len(one.embeddings)))
    d = cl.embed(model="minilm", input=ref[5]["text"], dimensions=128)
    v = d.embeddings[0]
    check(len(v) == 128 and abs(float(np.linalg.norm(v)) - 1) < 1e-5 and cos(v, ref[5]["embedding"][:128]) >= 0.9999,
          "ollama.embed dimensions=128: the first 128 dimensions, renormalized", f"{len(v)}")
    legacy = cl.embeddings(model="minilm", prompt=ref[7]["text"])
    check(cos(legacy.embedding, ref[7]["embedding"]) >= 0.9999, "ollama.embeddings (legacy /api/embeddings)",
          f"{len(legacy.embedding)}")
    check(len(cl.embeddings(model="minilm", prompt="").embedding) == 0, "ollama.embeddings: an empty prompt gives []")
    # encoding_format base64 on the legacy route too: the f32 bytes of the same vector
    st, b = srv.post("/api/embeddings", {"model": "minilm", "prompt": ref[7]["text"], "encoding_format": "base64"})
    v = np.frombuffer(base64.b64decode(b.get("embedding", "")), dtype="<f4") if st == 200 and \
        isinstance(b.get("embedding"), str) else np.zeros(0)
    check(len(v) == len(legacy.embedding) and np.array_equal(v, np.float32(legacy.embedding)),
          "/api/embeddings encoding_format base64: the same float32 vector", f"{st} {len(v)}")
    show = cl.show("minilm")
    check(list(show.capabilities or []) == ["embedding"], "/api/show: capabilities [embedding]", str(show.capabilities))


def test_openai(srv, ref):
    cl = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    texts = [c["text"] for c in ref[:64]]
    n_ids = sum(len(c["ids"]) for c in ref[:64])
    by_fmt = {}
    for fmt in ("float", "base64", None):
        kw = {"encoding_format": fmt} if fmt else {}
        r = cl.embeddings.create(model="minilm", input=texts, **kw)
        vecs = []
        for d in r.data:
            e = d.embedding
            vecs.append(np.frombuffer(base64.b64decode(e), dtype="<f4") if isinstance(e, str) else e)
        by_fmt[fmt] = vecs
        cs = [cos(a, c["embedding"]) for a, c in zip(vecs, ref)]
        name = fmt or "the client's default (base64, decoded by the client)"
        check(len(vecs) == 64 and min(cs) >= 0.9999 and [d.index for d in r.data] == list(range(64)),
              f"openai embeddings.create ({name}): 64 inputs agree with sentence-transformers",
              f"{len(vecs)}, lowest cosine {min(cs) if cs else None}")
        check(r.usage.prompt_tokens == n_ids and r.usage.total_tokens == n_ids, f"openai ({name}): usage",
              f"{r.usage} vs {n_ids}")
    # the float text (9 significant digits) reads back as the very float32s base64 carries
    same = all(np.array_equal(np.asarray(a, dtype=np.float32), b) for a, b in zip(by_fmt["float"], by_fmt["base64"]))
    check(same, "openai: the float format's numbers are the base64 float32s exactly")
    print(f"  openai embeddings: 64 inputs x 3 encodings, lowest cosine {min(cs):.9f}")
    ids = ref[10]["ids"]
    r = cl.embeddings.create(model="minilm", input=[ids, ref[11]["ids"]], encoding_format="float")
    check(cos(r.data[0].embedding, ref[10]["embedding"]) >= 0.9999 and cos(r.data[1].embedding, ref[11]["embedding"]) >= 0.9999,
          "openai: token-id inputs embed as their text does")
    r = cl.embeddings.create(model="minilm", input=ids, encoding_format="float", dimensions=64)
    check(len(r.data) == 1 and len(r.data[0].embedding) == 64, "openai: one token-id list, dimensions=64")


def test_decoder(srv, dref):
    """A generating model (SmolLM2-135M) embeds as llama.cpp and Ollama do: the last token's final-normed
    hidden state, normalized; against llama.cpp's llama-embedding (tests/golden/smollm2-embed)."""
    cl = ollama.Client(host=srv.url)
    texts = [c["text"] for c in dref]
    r = cl.embed(model="smollm2", input=texts)
    cs = [cos(a, c["last"]) for a, c in zip(r.embeddings, dref)]
    check(len(r.embeddings) == len(dref) and min(cs) >= 0.9999,
          "ollama.embed on a decoder model: last-token vectors agree with llama.cpp's (cosine >= 0.9999 each)",
          f"{len(r.embeddings)} vectors, lowest cosine {min(cs) if cs else None}")
    print(f"  ollama.embed smollm2: {len(texts)} inputs, lowest cosine to llama.cpp {min(cs):.9f}")
    norms = [float(np.linalg.norm(v)) for v in r.embeddings]
    check(all(abs(n - 1) < 1e-5 for n in norms), "ollama.embed smollm2: vectors are unit length", f"{norms[:3]}")
    n_ids = sum(len(c["ids"]) for c in dref)
    check(r.prompt_eval_count == n_ids, "ollama.embed smollm2: prompt_eval_count is llama.cpp's token count",
          f"{r.prompt_eval_count} vs {n_ids}")
    # one at a time: the same vectors, bit for bit, as in the batch
    singles = [cl.embed(model="smollm2", input=t).embeddings[0] for t in texts[:6]]
    check(all(a == b for a, b in zip(singles, r.embeddings[:6])),
          "ollama.embed smollm2: each input alone gives its vector in the batch, exactly")
    oa = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    o = oa.embeddings.create(model="smollm2", input=texts[:8], encoding_format="float")
    cs = [cos(d.embedding, c["last"]) for d, c in zip(o.data, dref)]
    check(len(o.data) == 8 and min(cs) >= 0.9999 and all(abs(float(np.linalg.norm(d.embedding)) - 1) < 1e-5 for d in o.data),
          "openai embeddings.create on a decoder model: normalized, agrees with llama.cpp", f"lowest cosine {min(cs)}")
    o = oa.embeddings.create(model="smollm2", input=[dref[2]["ids"]], encoding_format="float")
    check(cos(o.data[0].embedding, dref[2]["last"]) >= 0.9999, "openai on a decoder model: token ids embed as their text")
    legacy = cl.embeddings(model="smollm2", prompt=texts[0])
    check(cos(legacy.embedding, dref[0]["last"]) >= 0.9999 and abs(float(np.linalg.norm(legacy.embedding)) - 1) > 1e-3,
          "ollama.embeddings (legacy) on a decoder model: the same direction, not normalized (as Ollama)",
          f"norm {float(np.linalg.norm(legacy.embedding))}")
    # while the same runner generates (its parallel slots stepping), embeds run between steps, unchanged
    gen = {}
    th = threading.Thread(target=lambda: gen.update(r=cl.generate(
        model="smollm2", prompt="Count from one to fifty in words.", options={"num_predict": 48, "temperature": 0})))
    th.start()
    during = [cl.embed(model="smollm2", input=texts[:4]).embeddings for _ in range(3)]
    th.join()
    check(all(d == r.embeddings[:4] for d in during) and gen.get("r") is not None and gen["r"].eval_count > 0,
          "ollama.embed smollm2 while the model generates: the same vectors, and the generation completes",
          f"{gen.get('r') and gen['r'].eval_count}")
    # options are checked as /api/generate checks them: an unknown name, a wrong type or a value out
    # of the table's range is a 400 naming it; a sampling option is accepted (nothing to act on)
    for route in ("/api/embed", "/api/embeddings"):
        inp = {"prompt": "a"} if route == "/api/embeddings" else {"input": "a"}
        for opts, what in (({"bogus": 1}, "'bogus'"), ({"temperature": "x"}, "'temperature'"),
                           ({"num_ctx": 8}, "'num_ctx'"), ({"mirostat": 2}, "Mirostat")):
            st, ans = srv.post(route, dict(inp, model="smollm2", options=opts))
            check(st == 400 and what in json.dumps(ans.get("error")), f"{route} options {opts}: a 400 naming it",
                  str(ans)[:200])
        st, ans = srv.post(route, dict(inp, model="smollm2", options={"temperature": 0.5, "num_ctx": 128}))
        check(st == 200, f"{route}: valid options accepted", str(ans)[:200])
        st, ans = srv.post(route, dict(inp, model="smollm2", num_ctx=16))
        check(st == 400 and "num_ctx" in json.dumps(ans), f"{route}: num_ctx at the top level is a 400", str(ans)[:200])
    # OpenAI's embeddings take no options (an Ollama field): a 400, as on its chat route
    for extra in ({"options": {"num_ctx": 16}}, {"num_ctx": 16}):
        st, ans = srv.post("/v1/embeddings", dict(extra, model="smollm2", input="a"))
        check(st == 400, f"/v1/embeddings with {extra}: a 400", str(ans)[:200])
    # a request without num_ctx takes the model's default, not an earlier request's: the input is
    # not cut to the 16 tokens the request before asked for
    long_words = "word " * 200
    counts = [srv.post("/api/embed", dict(model="smollm2", input=long_words, **o))[1].get("prompt_eval_count")
              for o in ({}, {"options": {"num_ctx": 16}}, {})]
    check(counts[0] == counts[2] and counts[0] > 100 and counts[1] == 16,
          "/api/embed without num_ctx after one with num_ctx 16: the whole input again", str(counts))
    # truncation at the context (num_ctx 64): cut to fit, or a 400 with truncate false
    long_text = dref[-1]["text"]
    st, ans = srv.post("/api/embed", {"model": "smollm2", "input": long_text, "truncate": False, "options": {"num_ctx": 64}})
    check(st == 400 and "limit of 64" in ans.get("error", ""), "/api/embed smollm2: truncate false over num_ctx is a 400",
          f"{st} {ans}"[:300])
    st, ans = srv.post("/api/embed", {"model": "smollm2", "input": long_text, "options": {"num_ctx": 64}})
    check(st == 200 and ans.get("prompt_eval_count") == 64, "/api/embed smollm2: an input over num_ctx is cut to it",
          f"{st} {ans.get('prompt_eval_count')}")
    # no input: the model is loaded, nothing embedded (Ollama's EmbedHandler)
    for name in ("smollm2", "minilm"):
        for body in ({"model": name}, {"model": name, "input": None}, {"model": name, "input": ""}):
            st, ans = srv.post("/api/embed", body)
            check(st == 200 and ans == {"model": name, "embeddings": []},
                  f"/api/embed {name} with input {body.get('input', 'absent')!r}: 200, no embeddings", f"{st} {ans}")
        check(any(m.model.startswith(name) for m in cl.ps().models), f"/api/embed {name} without input loads the model")
    show = cl.show("smollm2")
    check("completion" in (show.capabilities or []) and "embedding" not in (show.capabilities or []),
          "/api/show smollm2: completion (Ollama lists embedding only for a GGUF with pooling_type)",
          str(show.capabilities))
    st, ans = srv.post("/api/embed", {"model": "smollm2", "input": ["ok", ""]})
    check(st == 400 and "input 1" in ans.get("error", ""), "/api/embed smollm2: an input of no tokens is a 400",
          f"{st} {ans}")


def gguf_with_pooling(src, dst, pooling_type):
    """A copy of GGUF src at dst with {arch}.pooling_type set (the gguf package; tensors copied as they are)."""
    import gguf
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for f in r.fields.values():
        if f.name == "general.architecture" or f.name.startswith("GGUF."):
            continue
        t = f.types[0]
        w.add_key_value(f.name, f.contents(), t, sub_type=f.types[-1] if t == gguf.GGUFValueType.ARRAY else None)
    w.add_uint32(f"{arch}.pooling_type", pooling_type)
    for t in r.tensors:
        w.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for t in r.tensors:
        w.write_tensor_data(t.data)
    w.close()


def test_decoder_pooling_type(srv, dref):
    """{arch}.pooling_type in a decoder's GGUF picks the pooling: 1 (mean) gives llama.cpp's mean-pooled
    vectors; 4 (rank) is refused with a clear 400; such a GGUF is an embedding model, as Ollama lists it."""
    mean_path = os.path.join(srv.dir, "smol-mean.gguf")
    gguf_with_pooling(SMOL, mean_path, 1)  # (the gguf package's writer: ~7 s a file on a 2-core Zen 1)
    with open(mean_path, "rb") as f:
        data = bytearray(f.read())
    key = b"llama.pooling_type" + struct.pack("<I", 4)  # the key, its type (GGUF uint32), then its value
    at = data.find(key)
    check(at > 0 and data.find(key, at + 1) < 0 and struct.unpack_from("<I", data, at + len(key))[0] == 1,
          "the mean GGUF holds one llama.pooling_type, 1", str(at))
    struct.pack_into("<I", data, at + len(key), 4)
    with open(os.path.join(srv.dir, "smol-rank.gguf"), "wb") as f:
        f.write(data)
    for name in ("smol-mean", "smol-rank"):
        path = os.path.join(srv.dir, name + ".gguf")
        mf = os.path.join(srv.dir, name + ".Modelfile")
        with open(mf, "w") as f:
            f.write(f"FROM {path}\n")
        subprocess.run([WICK, "create", name, "-f", mf], env=dict(os.environ, WICK_MODELS=srv.dir), check=True,
                       capture_output=True)
        os.unlink(path)
    cl = ollama.Client(host=srv.url)
    with_mean = [c for c in dref if "mean" in c]
    r = cl.embed(model="smol-mean", input=[c["text"] for c in with_mean])
    cs = [cos(a, c["mean"]) for a, c in zip(r.embeddings, with_mean)]
    check(len(cs) == 8 and min(cs) >= 0.9999, "smollm2.pooling_type 1: mean-pooled vectors agree with llama.cpp's",
          f"lowest cosine {min(cs) if cs else None}")
    print(f"  ollama.embed smollm2 with pooling_type 1 (mean): 8 inputs, lowest cosine {min(cs):.9f}")
    st, ans = srv.post("/api/embed", {"model": "smol-rank", "input": "hello"})
    check(st == 400 and "pooling_type is 4" in ans.get("error", ""), "pooling_type 4 (rank): a clear 400",
          f"{st} {ans}"[:300])
    # Ollama's capabilities (server/images.go): a GGUF with a pooling_type is an embedding model
    check(list(cl.show("smol-mean").capabilities or []) == ["embedding"],
          "/api/show: a decoder GGUF with pooling_type has the embedding capability only",
          str(cl.show("smol-mean").capabilities))
    st, ans = srv.post("/api/generate", {"model": "smol-mean", "prompt": "Hi", "stream": False})
    check(st == 400 and "embedding model" in ans.get("error", ""), "generate to it is a clear 400", f"{st} {ans}"[:300])
    for name in ("smol-mean", "smol-rank"):
        st, _ = srv.post("/api/embed", {"model": name, "keep_alive": 0})  # unloaded
        check(st == 200, f"/api/embed {name} without input, keep_alive 0")


def test_retrieval(srv):
    ret = json.load(open(os.path.join(GOLDEN, "retrieval.json"), encoding="utf-8"))
    cl = ollama.Client(host=srv.url)
    d = np.array(cl.embed(model="minilm", input=ret["documents"]).embeddings)
    oc = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    q = np.array([e.embedding for e in oc.embeddings.create(model="minilm", input=ret["queries"]).data])
    ranking = [[int(i) for i in np.argsort(-(qv @ d.T), kind="stable")] for qv in q]
    check(ranking == ret["ranking"], "retrieval: 6 queries rank 8 documents as sentence-transformers does",
          f"{ranking} vs {ret['ranking']}")


def test_langchain(srv):
    """LangChain's OllamaEmbeddings and OpenAIEmbeddings over an in-memory vector store:
    the top document of each query is sentence-transformers' (and so is the whole ranking)."""
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_ollama import OllamaEmbeddings
    from langchain_openai import OpenAIEmbeddings
    ret = json.load(open(os.path.join(GOLDEN, "retrieval.json"), encoding="utf-8"))
    embedders = {
        "OllamaEmbeddings": OllamaEmbeddings(model="minilm", base_url=srv.url),
        # no tiktoken (it would download its tables): the texts go as they are
        "OpenAIEmbeddings": OpenAIEmbeddings(model="minilm", base_url=srv.url + "/v1", api_key="none",
                                             check_embedding_ctx_length=False),
    }
    for name, emb in embedders.items():
        store = InMemoryVectorStore.from_texts(ret["documents"], emb)
        ranking = []
        for q in ret["queries"]:
            hits = store.similarity_search(q, k=len(ret["documents"]))
            ranking.append([ret["documents"].index(h.page_content) for h in hits])
        check(ranking == ret["ranking"], f"LangChain {name}: retrieval ranks as sentence-transformers",
              f"{ranking} vs {ret['ranking']}")


def runner_runs(srv, name):
    """The encodes the model's runner has run (/api/ps's "wick" status)."""
    ps = json.loads(urllib.request.urlopen(srv.url + "/api/ps", timeout=30).read())
    return next(m for m in ps["models"] if m["name"].startswith(name))["wick"]["runs"]


def test_concurrent(srv, ref):
    """8 clients at once, each its own slice of inputs: each gets exactly the
    vectors it gets alone, though the runner merges requests that arrive
    while it computes into shared encodes; a ninth with a bad token id
    beside them is refused alone."""
    slices = [[c["text"] for c in ref[k * 20:(k + 1) * 20]] for k in range(8)]
    alone = [ollama.Client(host=srv.url).embed(model="minilm", input=t).embeddings for t in slices]
    runs0 = runner_runs(srv, "minilm")
    out, bad = {}, {}

    def one(k):
        out[k] = ollama.Client(host=srv.url).embed(model="minilm", input=slices[k]).embeddings

    def wrong():
        bad["r"] = srv.post("/v1/embeddings", {"model": "minilm", "input": [[101, 2000, 10 ** 9, 102]]})

    ts = [threading.Thread(target=one, args=(k,)) for k in range(8)] + [threading.Thread(target=wrong)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    runs = runner_runs(srv, "minilm") - runs0
    worst = min(cos(v, ref[k * 20 + i]["embedding"]) for k in range(8) for i, v in enumerate(out.get(k, [])))
    check(all(len(out.get(k, [])) == 20 for k in range(8)) and worst >= 0.9999,
          "8 concurrent /api/embed requests each get their own inputs' vectors", f"lowest cosine {worst}")
    check(all(out.get(k) == alone[k] for k in range(8)), "each concurrent request's vectors are those it gets alone")
    check(runs < 8, "the runner merged concurrent requests into shared encodes", f"{runs} encodes for 8 requests")
    st, body = bad.get("r", (None, {}))
    check(st == 400 and "outside the vocabulary" in json.dumps(body),
          "a concurrent request with a bad token id: 400, the others unharmed", f"{st} {body}")
    print(f"  8 concurrent requests (and a bad one) in {runs} encodes")


def test_bad_input(srv, ref):
    long_text = max(ref, key=lambda c: len(c["text"]))["text"]
    cases = [
        ("/api/embed", {"model": "minilm", "input": ["x"] * 10000}, "10000"),
        ("/api/embed", {"model": "minilm", "input": "a" * (1 << 20)}, "bytes"),
        ("/api/embed", {"model": "minilm", "input": ["ok", 7, {"a": 1}]}, "input 1"),
        ("/api/embed", {"model": "minilm", "input": [None]}, "input 0"),
        ("/api/embed", {"model": "minilm", "input": long_text, "truncate": False}, "limit of 256"),
        ("/v1/embeddings", {"model": "minilm"}, "input is required"),
        ("/api/embed", {"input": "x"}, "model is required"),
        ("/api/embeddings", {"model": "minilm", "prompt": 5}, "prompt must be a string"),
        ("/v1/embeddings", {"model": "minilm", "input": []}, "empty list"),
        ("/v1/embeddings", {"model": "minilm", "input": [[101, -5]]}, "token id"),
        ("/v1/embeddings", {"model": "minilm", "input": [[101, 99999, 102]]}, "outside the vocabulary"),
        ("/v1/embeddings", {"model": "minilm", "input": "x", "encoding_format": "int8"}, "encoding_format"),
        ("/api/embed", {"model": "smollm2", "input": [[1, 2]]}, "input 0 must be a string"),
        ("/v1/embeddings", {"model": "smollm2", "input": [[1, 99999999]]}, "outside the vocabulary"),
        ("/api/chat", {"model": "minilm", "messages": [{"role": "user", "content": "hi"}]}, "embedding model"),
        ("/api/generate", {"model": "minilm", "prompt": "hi"}, "embedding model"),
        ("/v1/chat/completions", {"model": "minilm", "messages": [{"role": "user", "content": "hi"}]}, "embedding model"),
    ]
    for path, body, want in cases:
        st, ans = srv.post(path, body)
        err = ans.get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        check(st == 400 and isinstance(msg, str) and want in msg, f"{path} {want}: a clear 400", f"{st} {ans}"[:300])
    # what Ollama's EmbedHandler / EmbeddingsHandler answer (server/routes.go): an empty list or request
    # loads the model and embeds nothing; dimensions 0 or below keeps the whole vector
    st, ans = srv.post("/api/embed", {"model": "minilm", "input": []})
    check(st == 200 and ans.get("embeddings") == [], "/api/embed with input []: 200, no embeddings (as Ollama)",
          f"{st} {ans}")
    st, ans = srv.post("/api/embeddings", {"model": "minilm"})
    check(st == 200 and ans.get("embedding") == [], "/api/embeddings without a prompt: 200, [] (as Ollama)",
          f"{st} {ans}")
    for d in (0, -3):
        st, ans = srv.post("/api/embed", {"model": "minilm", "input": ref[0]["text"], "dimensions": d})
        e = (ans.get("embeddings") or [[]])[0]
        check(st == 200 and len(e) == 384 and cos(e, ref[0]["embedding"]) >= 0.9999,
              f"/api/embed dimensions {d}: the whole vector (as Ollama)", f"{st} {len(e)}")
    st, ans = srv.post("/api/embed", raw=b"{not json")
    check(st == 400 and "invalid JSON" in ans.get("error", ""), "/api/embed: invalid JSON is a 400", f"{st} {ans}")
    st, ans = srv.post("/api/embed", {"model": "nope", "input": "x"})
    check(st == 404, "/api/embed: an unknown model is a 404", f"{st} {ans}")
    r = ollama.Client(host=srv.url).embed(model="minilm", input=ref[0]["text"])
    check(cos(r.embeddings[0], ref[0]["embedding"]) >= 0.9999, "the server serves on after the bad requests")


def test_store_changes(srv, ref):
    """The server resolves a name again when its manifest changes (it keeps
    the last resolutions with the manifest bytes they came from): a copy
    embeds, deleted it is a 404 at once, the name copied from another model
    (SmolLM2, 576 dims) embeds with that model, also when the delete and the
    copy come back to back with nothing between them."""
    cl = ollama.Client(host=srv.url)
    cl.copy("minilm", "minilm-copy")
    for i in range(2):  # the second answered from the kept resolution
        st, ans = srv.post("/api/embed", {"model": "minilm-copy", "input": ref[1]["text"]})
        check(st == 200 and cos(ans["embeddings"][0], ref[1]["embedding"]) >= 0.9999, f"a copy embeds ({i + 1})",
              f"{st} {str(ans)[:200]}")
    cl.delete("minilm-copy")
    st, ans = srv.post("/api/embed", {"model": "minilm-copy", "input": ref[1]["text"]})
    check(st == 404 and "not found" in ans.get("error", ""), "deleted, the copy is a 404 at once", f"{st} {ans}")
    cl.copy("smollm2", "minilm-copy")
    st, ans = srv.post("/api/embed", {"model": "minilm-copy", "input": ref[1]["text"]})
    check(st == 200 and len(ans["embeddings"][0]) == 576, "the name copied from SmolLM2 embeds with SmolLM2 (576 dims)",
          f"{st} {len(ans.get('embeddings', [[]])[0])}")
    cl.delete("minilm-copy")
    cl.copy("minilm", "minilm-copy")
    st, ans = srv.post("/api/embed", {"model": "minilm-copy", "input": ref[1]["text"]})
    check(st == 200 and len(ans["embeddings"][0]) == 384, "and copied from all-MiniLM-L6-v2 again (384 dims)",
          f"{st} {len(ans.get('embeddings', [[]])[0])}")
    cl.delete("minilm-copy")
    cl.copy("smollm2", "minilm-copy")  # delete and copy back to back
    st, ans = srv.post("/api/embed", {"model": "minilm-copy", "input": ref[1]["text"]})
    check(st == 200 and len(ans["embeddings"][0]) == 576, "deleted and copied back to back: the new model's vectors",
          f"{st} {len(ans.get('embeddings', [[]])[0])}")
    cl.delete("minilm-copy")


def test_nan_vector(srv):
    """A model whose vector holds NaN (a copy of the folder with one NaN in the last layer's output
    LayerNorm bias, so every token's element 0 is NaN): JSON has no NaN, so the float routes are a
    500 naming it (not a vector silently cut short), base64 carries the bytes, the server serves on."""
    d = os.path.join(srv.dir, "minilm-nan")
    os.makedirs(d)
    for name in os.listdir(MINILM):
        if name != "model.safetensors":
            os.symlink(os.path.join(MINILM, name), os.path.join(d, name))
    src = os.path.join(MINILM, "model.safetensors")
    with open(src, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    start = 8 + n + header["encoder.layer.5.output.LayerNorm.bias"]["data_offsets"][0]
    dst = os.path.join(d, "model.safetensors")
    shutil.copyfile(src, dst)
    with open(dst, "r+b") as f:
        f.seek(start)
        f.write(struct.pack("<f", float("nan")))
    mf = os.path.join(srv.dir, "nan.Modelfile")
    with open(mf, "w") as f:
        f.write(f"FROM {d}\n")
    subprocess.run([WICK, "create", "minilm-nan", "-f", mf], env=dict(os.environ, WICK_MODELS=srv.dir), check=True,
                   capture_output=True)
    shutil.rmtree(d)
    for path, body in (("/api/embed", {"model": "minilm-nan", "input": "hello"}),
                       ("/api/embeddings", {"model": "minilm-nan", "prompt": "hello"}),
                       ("/v1/embeddings", {"model": "minilm-nan", "input": "hello"})):
        st, ans = srv.post(path, body)
        err = ans.get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        check(st == 500 and isinstance(msg, str) and "NaN at element 0" in msg,
              f"{path}: a vector holding NaN is a 500 naming it", f"{st} {ans}"[:300])
    st, ans = srv.post("/v1/embeddings", {"model": "minilm-nan", "input": "hello", "encoding_format": "base64"})
    v = np.frombuffer(base64.b64decode(ans["data"][0]["embedding"]), dtype="<f4") if st == 200 else np.zeros(0)
    check(len(v) == 384 and np.isnan(v[0]) and np.isfinite(v[1:]).all(),
          "/v1/embeddings base64: the NaN goes out as its bytes", f"{st} {len(v)}")
    st, ans = srv.post("/api/embed", {"model": "minilm", "input": "hello"})
    check(st == 200 and len(ans.get("embeddings", [[]])[0]) == 384, "the server serves on", f"{st}")


def main():
    if not os.path.isdir(MINILM):
        print("test_embed: all-MiniLM-L6-v2 is missing (scripts/fetch-models minilm)")
        sys.exit(1)
    with lzma.open(os.path.join(GOLDEN, "embeddings.json.xz"), "rt", encoding="utf-8") as f:
        # wick serve refuses "\u0000" in a request body (a 400); the
        # golden test covers those inputs
        ref = [c for c in json.load(f)["cases"] if "\x00" not in c["text"]]
    srv = Server()
    try:
        test_ollama(srv, ref)
        test_openai(srv, ref)
        with lzma.open(os.path.join(ROOT, "tests", "golden", "smollm2-embed", "embeddings.json.xz"), "rt",
                       encoding="utf-8") as f:
            dref = json.load(f)["cases"]
        test_decoder(srv, dref)
        test_decoder_pooling_type(srv, dref)
        test_retrieval(srv)
        test_langchain(srv)
        test_concurrent(srv, ref)
        test_bad_input(srv, ref)
        test_store_changes(srv, ref)
        test_nan_vector(srv)
        check(srv.proc.poll() is None, "the server is still up")
    finally:
        rc = srv.stop()
        srv.log.seek(0)
        log = srv.log.read()
        check(rc == 0 and "AddressSanitizer" not in log and "runtime error" not in log,
              "the server exits cleanly with no sanitizer report", f"rc {rc}: {log[-2000:]}")
        shutil.rmtree(srv.dir, ignore_errors=True)
    finish("test_embed")


if __name__ == "__main__":
    main()
