"""The rest of the Ollama API through the real `ollama` client: blobs and
create with files, copy, delete, show (complete), list, ps, chat, generate,
each call's typed response checked field by field; and the environment as
Ollama users set it (OLLAMA_HOST with IPv6, OLLAMA_MODELS,
OLLAMA_CONTEXT_LENGTH, OLLAMA_KEEP_ALIVE, OLLAMA_NUM_PARALLEL,
OLLAMA_ORIGINS with CORS). Run from test_server.py (its Server and store).

References: the GGUF file read by the `gguf` package (gguf-py, llama.cpp's
own reader) for model_info, tensors and the chat template; hashlib for
digests; the manifests on disk for digests and layers.
"""
import hashlib
import http.client
import json
import os
import socket
import subprocess
import time

import gguf
import ollama

from checks import check

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def wick_bin():
    return os.environ.get("WICK_BIN", os.path.join(ROOT, "build", "release", "wick"))


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def gguf_reference(path):
    """model_info's scalar keys, the token list, the tensors and the chat
    template, as gguf-py reads the file."""
    r = gguf.GGUFReader(path)
    scalars, arrays = {}, {}
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue
        v = f.contents()
        (arrays if isinstance(v, list) else scalars)[f.name] = v
    tensors = [(t.name, [int(x) for x in t.shape]) for t in r.tensors]
    return scalars, arrays, tensors


def raw(port, method, path, body=None, headers=None, host="127.0.0.1"):
    c = http.client.HTTPConnection(host, port, timeout=60)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data, {k.lower(): v for k, v in r.getheaders()}


def test_ollama_surface(s, smol_gguf):
    cl = s.ollama
    # blobs: the client hashes the file, HEADs, then POSTs it
    digest = cl.create_blob(smol_gguf)
    check(digest == sha256_file(smol_gguf), "create_blob returns the file's sha256", digest)
    st, _, _ = raw(s.port, "HEAD", f"/api/blobs/{digest}")
    check(st == 200, "HEAD /api/blobs/<stored digest>: 200", str(st))
    st, _, _ = raw(s.port, "HEAD", f"/api/blobs/sha256-{digest[7:].upper()}")
    check(st == 200, "HEAD /api/blobs/sha256-<HEX>: the same blob (Ollama's BlobsPath takes '-' and either case)",
          str(st))
    st, body, _ = raw(s.port, "GET", "/api/version")
    ver = tuple(int(x) for x in json.loads(body)["version"].split("."))
    check(st == 200 and ver >= (0, 6, 5), "/api/version: the Ollama API level, at least what clients gate on "
          "(Continue wants 0.6.5)", str(body))
    st, body, _ = raw(s.port, "POST", "/api/generate", json.dumps({"model": "smollm2", "system": "Be brief.",
                                                                      "stream": False}))
    check(st == 200 and json.loads(body).get("done_reason") == "load",
          "/api/generate with a system and no prompt only loads the model (Ollama checks the prompt alone)", str(body))
    other = "sha256:" + hashlib.sha256(b"not stored").hexdigest()
    st, _, _ = raw(s.port, "HEAD", f"/api/blobs/{other}")
    check(st == 404, "HEAD /api/blobs/<unknown digest>: 404", str(st))
    st, body, _ = raw(s.port, "POST", f"/api/blobs/{other}", b"other bytes")
    blob_path = os.path.join(s.dir, "blobs", "sha256-" + other[7:])
    check(st == 400 and b"digest mismatch" in body and not os.path.exists(blob_path),
          "POST /api/blobs with bytes of another digest: 400 'digest mismatch', nothing stored", f"{st} {body[:200]}")
    data = os.urandom(3 << 20)  # larger than a JSON body may be, written as it arrives
    good = "sha256:" + hashlib.sha256(data).hexdigest()
    st, body, _ = raw(s.port, "POST", f"/api/blobs/{good}", data)
    stored = os.path.join(s.dir, "blobs", "sha256-" + good[7:])
    check(st == 201 and os.path.exists(stored) and open(stored, "rb").read() == data,
          "POST /api/blobs of 3 MiB: 201, the blob stored byte for byte", f"{st} {body[:200]}")
    st, body, _ = raw(s.port, "HEAD", "/api/blobs/sha256:xyz")
    check(st == 400, "a malformed digest: 400", str(st))
    # a client that waits for "100 Continue" (curl does for large bodies) gets the answer at once
    # when the blob is stored already, and sends none of its 300 MB
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as k:
        k.sendall(f"POST /api/blobs/{digest} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 300000000\r\n"
                  "Expect: 100-continue\r\n\r\n".encode())
        first = k.recv(4096).split(b"\r\n", 1)[0]
    check(first == b"HTTP/1.1 200 OK", "POST of a stored blob with Expect: 100-continue: 200 before any body", str(first))

    # create from files, with system, parameters and messages
    r = cl.create(model="fromfiles", files={"smol.gguf": digest}, system="You are terse.",
                  parameters={"temperature": 0, "num_predict": 6, "stop": ["<|im_end|>", "###"]},
                  messages=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}])
    check(r.status == "success", "create(files=...) succeeds", str(r))
    try:
        cl.create(model="withlora", files={"smol.gguf": digest}, adapters={"lora.gguf": digest})
        check(False, "create with adapters is refused")
    except ollama.ResponseError as e:
        check(e.status_code == 400 and "adapters" in e.error, "create with adapters: 400 naming adapters", e.error)
    try:
        cl.create(model="missing", files={"smol.gguf": other})
        check(False, "create from an unknown blob is refused")
    except ollama.ResponseError as e:
        check(e.status_code == 400 and other in e.error, "create from a blob not uploaded: 400 naming it", e.error)

    # create from a Hugging Face folder's files (the tiny GLM-4-MoE-Lite of
    # tests/golden, whose logits test-glm4-moe-lite checks against
    # transformers): the same layers and the same greedy answer as the model
    # `wick create` makes from the folder itself
    hf = os.path.join(ROOT, "tests", "golden", "glm4-moe-lite", "hf")
    files = {f: cl.create_blob(os.path.join(hf, f)) for f in sorted(os.listdir(hf))}
    r = cl.create(model="fromhf", files=files)
    check(r.status == "success", "create(files=...) from a Hugging Face folder's files succeeds", str(r))
    mf = os.path.join(s.dir, "hf.Modelfile")
    with open(mf, "w") as f:
        f.write(f"FROM {hf}\n")
    p = subprocess.run([wick_bin(), "create", "hfdirect", "-f", mf], capture_output=True, text=True,
                       env=dict(os.environ, WICK_MODELS=s.dir))
    check(p.returncode == 0, "setup: wick create from the folder", p.stderr)

    def layers(name):
        m = json.load(open(os.path.join(s.dir, "manifests", "registry.ollama.ai", "library", name, "latest")))
        return sorted((l["mediaType"], l["digest"], l.get("name")) for l in m["layers"])
    check(layers("fromhf") == layers("hfdirect"), "the uploaded files make the same layers as the folder",
          f"{layers('fromhf')} vs {layers('hfdirect')}")
    opts = {"temperature": 0, "num_predict": 12}
    a = cl.generate(model="fromhf", prompt="Hello there", raw=True, options=opts)
    b = cl.generate(model="hfdirect", prompt="Hello there", raw=True, options=opts)
    check(a.eval_count == 12 and a.response == b.response, "and the same greedy answer", f"{a.response!r} vs {b.response!r}")
    check(not [f for f in os.listdir(os.path.join(s.dir, "blobs")) if f.startswith(".tmp")],
          "no temporary folder of links is left in blobs/")
    cl.delete("fromhf")
    cl.delete("hfdirect")

    # list
    names = {m.model: m for m in cl.list().models}
    check("fromfiles:latest" in names, "list() has the created model", str(list(names)))
    m = names.get("fromfiles:latest")
    manifest_path = os.path.join(s.dir, "manifests", "registry.ollama.ai", "library", "fromfiles", "latest")
    manifest = json.load(open(manifest_path))
    layer_sizes = sum(l["size"] for l in manifest["layers"]) + manifest["config"]["size"]
    check(m is not None and m.size == layer_sizes and m.details.family == "llama" and m.details.format == "gguf"
          and m.details.quantization_level == "Q4_1" and m.modified_at is not None and len(m.digest or "") == 64,
          "list(): size = the manifest's layers, details from the GGUF, a digest", str(m))

    # show, against gguf-py's reading of the same file
    scalars, arrays, tensors = gguf_reference(smol_gguf)
    sh = cl.show("fromfiles")
    mi = dict(sh.modelinfo or {})
    st, body, _ = raw(s.port, "POST", "/api/show", json.dumps({"model": "fromfiles"}))
    shj = json.loads(body)  # fields the client's ShowResponse does not declare: system, messages
    check(shj.get("system") == "You are terse.", "show: system", str(shj.get("system")))
    plines = (sh.parameters or "").splitlines()
    check(sorted(l.split()[0] for l in plines) == ["num_predict", "stop", "stop", "temperature"]
          and any(l.split(None, 1)[1] == '"###"' for l in plines if l.startswith("stop")),
          "show: parameters, one line per value, as Ollama writes them", sh.parameters)
    check(sh.template == scalars["tokenizer.chat_template"], "show: the template is the GGUF's chat template")
    check(set(sh.capabilities or []) == {"completion"}, "show: capabilities of SmolLM2 (no tools, no thinking)",
          str(sh.capabilities))
    check([(x["role"], x["content"]) for x in shj.get("messages", [])] == [("user", "Hi"), ("assistant", "Hello!")],
          "show: messages", str(shj.get("messages")))
    check("PARAMETER num_predict 6" in sh.modelfile and "SYSTEM" in sh.modelfile and "MESSAGE user Hi" in sh.modelfile
          and "# FROM fromfiles:latest" in sh.modelfile, "show: the modelfile rebuilds it", sh.modelfile)
    bad = [k for k, v in scalars.items() if k != "general.parameter_count" and mi.get(k) != v
           and not (isinstance(v, float) and abs(mi.get(k, 1e30) - v) <= 1e-6 * abs(v))]
    check(not bad and set(mi) >= set(scalars), "show: model_info holds every GGUF key with its value (gguf-py)",
          str(bad[:5]))
    check(all(mi.get(k) == ([] if len(v) > 5 else v) for k, v in arrays.items()),
          "show: arrays of more than 5 items (tokens, merges) are [] unless verbose (Ollama's getModelData)",
          str([k for k, v in arrays.items() if mi.get(k) != ([] if len(v) > 5 else v)]))
    params = sum(int(__import__("numpy").prod(sh_)) for _, sh_ in tensors)
    check(mi.get("general.parameter_count") == params, "show: general.parameter_count = the tensors' elements",
          f"{mi.get('general.parameter_count')} vs {params}")
    st, body, _ = raw(s.port, "POST", "/api/show", json.dumps({"model": "fromfiles", "verbose": True}))
    vj = json.loads(body)
    check(st == 200 and vj["model_info"]["tokenizer.ggml.tokens"] == arrays["tokenizer.ggml.tokens"],
          "show verbose: tokenizer.ggml.tokens as gguf-py reads them", str(st))
    check([(t["name"], t["shape"]) for t in vj.get("tensors", [])] == tensors,
          "show verbose: tensors (name, shape) as gguf-py reads them", str(len(vj.get("tensors", []))))
    try:
        cl.show("nosuchmodel")
        check(False, "show of an unknown model fails")
    except ollama.ResponseError as e:
        check(e.status_code == 404, "show of an unknown model: 404", e.error)

    # generate and chat: every field of the typed responses
    g = cl.generate(model="fromfiles", prompt="Say hi.")
    check(g.done and g.done_reason in ("stop", "length") and g.eval_count is not None and 1 <= g.eval_count <= 6
          and g.prompt_eval_count and g.total_duration and g.load_duration is not None and g.eval_duration
          and g.prompt_eval_duration and g.created_at and g.model == "fromfiles" and isinstance(g.response, str),
          "generate(): the model's num_predict 6 applies; every field present", str(g))
    c = cl.chat(model="fromfiles", messages=[{"role": "user", "content": "Say hi."}])
    check(c.done and c.message.role == "assistant" and isinstance(c.message.content, str) and c.eval_count <= 6
          and c.prompt_eval_count > g.prompt_eval_count - 40 and c.total_duration and c.created_at,
          "chat(): every field present", str(c))

    # ps: digest and sizes
    ps = {p.model: p for p in cl.ps().models}
    p = ps.get("fromfiles:latest")
    check(p is not None and p.digest == m.digest and p.size > 50 << 20 and p.size_vram == 0
          and p.details.family == "llama" and p.expires_at is not None and p.context_length == 4096,
          "ps(): digest as list() gives it, size (resident bytes), details, expiry", str(p))

    # copy
    r = cl.copy("fromfiles", "copied:v1")
    check(r.status == "success", "copy() succeeds", str(r))
    sc = cl.show("copied:v1")
    check(sc.template == sh.template and sc.parameters == sh.parameters and sc.modelfile.replace("copied:v1", "fromfiles:latest")
          == sh.modelfile, "the copy shows the same template, parameters and Modelfile")
    # another spelling of a name is that name (Ollama's getExistingName): its runner, no second one
    before = {p.model for p in cl.ps().models}
    cl.generate(model="FromFiles", prompt="Say hi.", options={"num_predict": 1})
    after = {p.model for p in cl.ps().models}
    check(after == before and "fromfiles:latest" in after,
          "FromFiles uses fromfiles' loaded runner (no second one, no FromFiles in ps)", f"{before} -> {after}")
    try:
        cl.copy("nosuchmodel", "x")
        check(False, "copy of an unknown model fails")
    except ollama.ResponseError as e:
        check(e.status_code == 404, "copy of an unknown model: 404", e.error)

    # delete
    r = cl.delete("copied:v1")
    names = {x.model for x in cl.list().models}
    check(r.status == "success" and "copied:v1" not in names and "fromfiles:latest" in names,
          "delete() removes that name only", str(names))
    r = cl.delete("fromfiles")
    check(r.status == "success" and os.path.exists(smol_blob(s)), "deleting fromfiles keeps the blob smollm2 shares")
    try:
        cl.delete("fromfiles")
        check(False, "deleting it again fails")
    except ollama.ResponseError as e:
        check(e.status_code == 404, "deleting a deleted model: 404", e.error)
    check(os.path.exists(stored), "the deletes keep a blob no model names yet (an upload waiting for its create)")
    st, _, _ = raw(s.port, "POST", "/api/delete", json.dumps({"model": "smollm2"}))
    check(st == 405, "POST /api/delete: 405 (it is DELETE)", str(st))
    g = cl.generate(model="smollm2", prompt="Hi", options={"num_predict": 2})
    check(g.done, "smollm2 still runs after the deletes")


def smol_blob(s):
    m = json.load(open(os.path.join(s.dir, "manifests", "registry.ollama.ai", "library", "smollm2", "latest")))
    d = next(l["digest"] for l in m["layers"] if l["mediaType"].endswith(".model"))
    return os.path.join(s.dir, "blobs", "sha256-" + d[7:])


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    with socket.socket(family) as k:
        k.bind((host, 0))
        return k.getsockname()[1]


def start(wick, env, port, host="127.0.0.1"):
    p = subprocess.Popen([wick, "serve"], env=env, stderr=subprocess.PIPE, text=True)
    for _ in range(100):
        try:
            if raw(port, "GET", "/", host=host)[0] == 200:
                return p
        except OSError:
            time.sleep(0.05)
    return p


def test_kv_q8_0(wick, store, ref_port, base):
    """OLLAMA_KV_CACHE_TYPE=q8_0: the runner's two slots hold q8_0 (each 32 entries of a key or
    value vector as ggml's q8_0 quantizes them: bench/kl's mean KL 0.0011 against the f32 cache
    on SmolLM2, the same with WICK_CPU=ref); greedy text as the f32 server's up to the f32
    answer's first near-tie, and the log-probabilities of its tokens near the f32 server's but not
    equal to them (the cache is read). Near-ties: "The three primary colors are" has top-2
    margins down to 0.018 in its first 24 tokens on the AVX2 kernels, and q8_0's answer turned at
    its fourth token there ("colors:" against "colors of"); the code prompt's smallest margin in
    those 24 is 0.14 (Zen 1)."""
    port = free_port()
    env = dict(base, OLLAMA_HOST=f"127.0.0.1:{port}", OLLAMA_MODELS=store, OLLAMA_CONTEXT_LENGTH="512",
               OLLAMA_NUM_PARALLEL="2", OLLAMA_KV_CACHE_TYPE="q8_0")
    p = start(wick, env, port)
    try:
        req = dict(model="smollm2", prompt="def fibonacci(n):", raw=True, logprobs=True, top_logprobs=2,
                   options={"num_predict": 24, "temperature": 0})
        a = ollama.Client(host=f"http://127.0.0.1:{port}").generate(**req)
        b = ollama.Client(host=f"http://127.0.0.1:{ref_port}").generate(**req)
        # compared up to the f32 answer's first token whose top-2 margin is under 0.1 (q8_0 moves
        # log-probabilities by up to ~0.08: measured 0.010-0.079 over six prompts, Zen 1)
        margins = [t.top_logprobs[0].logprob - t.top_logprobs[1].logprob for t in b.logprobs or []]
        n = next((i for i, m in enumerate(margins) if m < 0.1), len(margins))
        ta = [t.token for t in a.logprobs or []]
        tb = [t.token for t in b.logprobs or []]
        check(len(tb) == 24 and n >= 12 and ta[:n] == tb[:n],
              f"OLLAMA_KV_CACHE_TYPE=q8_0: the f32 cache's greedy tokens up to its first near-tie ({n} of 24)",
              f"{a.response!r} {b.response!r} {margins}")
        la = [t.logprob for t in a.logprobs or []][:n]
        lb = [t.logprob for t in b.logprobs or []][:n]
        worst = max((abs(x - y) for x, y in zip(la, lb)), default=-1)
        check(len(la) == n and 0 < worst < 0.15,
              "q8_0: those tokens' log-probabilities within 0.15 of the f32 cache's, not all equal", f"{worst} {la[:4]} {lb[:4]}")
    finally:
        p.terminate()
        err = p.communicate(timeout=20)[1]
    check("OLLAMA_KV_CACHE_TYPE=q8_0" in err and "wick runner: the KV cache holds q8_0 entries (2 slot(s)" in err,
          "OLLAMA_KV_CACHE_TYPE=q8_0 is read, said, and the runner's two slots hold q8_0", err[-400:])


def test_ollama_env(wick, store, ref_port=None):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("WICK_", "OLLAMA_"))}
    # IPv6 loopback, models and context length from OLLAMA_*
    have_v6 = socket.has_ipv6
    try:
        port = free_port(socket.AF_INET6, "::1")
    except OSError:
        have_v6, port = False, free_port()
    host = "::1" if have_v6 else "127.0.0.1"
    env = dict(base, OLLAMA_HOST=f"[::1]:{port}" if have_v6 else f"127.0.0.1:{port}", OLLAMA_MODELS=store,
               OLLAMA_CONTEXT_LENGTH="512", OLLAMA_KEEP_ALIVE="0", OLLAMA_NUM_PARALLEL="2",
               OLLAMA_ORIGINS="http://dash.example:8080", OLLAMA_KV_CACHE_TYPE="f16")
    p = start(wick, env, port, host)
    try:
        cl = ollama.Client(host=f"http://[::1]:{port}" if have_v6 else f"http://127.0.0.1:{port}")
        names = {m.model for m in cl.list().models}
        check("smollm2:latest" in names, f"OLLAMA_HOST={env['OLLAMA_HOST']} and OLLAMA_MODELS: the server answers there "
              "with that store", str(names))
        # the context length: prompt tokens past 512 are refused
        long_prompt = "one two three four five six seven eight nine ten " * 80
        try:
            cl.generate(model="smollm2", prompt=long_prompt, options={"num_predict": 1})
            check(False, "OLLAMA_CONTEXT_LENGTH=512 refuses a ~900-token prompt")
        except ollama.ResponseError as e:
            check(e.status_code == 400 and "512" in e.error, "OLLAMA_CONTEXT_LENGTH=512: a ~900-token prompt is a 400 "
                  "naming 512", e.error)
        # OLLAMA_KV_CACHE_TYPE=f16: the runner's caches hold halves (logits within ~1e-2 of the f32
        # cache's on SmolLM2), and greedy text comes out as the f32 server's does
        if ref_port:
            req = dict(model="smollm2", prompt="The three primary colors are", raw=True,
                       options={"num_predict": 24, "temperature": 0})
            a = cl.generate(**req).response
            b = ollama.Client(host=f"http://127.0.0.1:{ref_port}").generate(**req).response
            check(a == b and len(a) > 40, "OLLAMA_KV_CACHE_TYPE=f16: 24 greedy tokens as the f32 cache's", f"{a!r} {b!r}")
        g = cl.generate(model="smollm2", prompt="Hi", options={"num_predict": 2})
        time.sleep(0.5)
        check(g.done and not cl.ps().models, "OLLAMA_KEEP_ALIVE=0: the model is unloaded after the request",
              str(cl.ps().models))
        # CORS: an origin of OLLAMA_ORIGINS gets the headers, another does not
        st, _, h = raw(port, "OPTIONS", "/api/chat", headers={"Origin": "http://dash.example:8080",
                                                              "Access-Control-Request-Method": "POST"}, host=host)
        check(st == 204 and h.get("access-control-allow-origin") == "http://dash.example:8080"
              and "POST" in h.get("access-control-allow-methods", ""),
              "CORS preflight from an OLLAMA_ORIGINS origin: 204 with the headers", f"{st} {h}")
        st, _, h = raw(port, "GET", "/api/tags", headers={"Origin": "http://dash.example:8080"}, host=host)
        check(st == 200 and h.get("access-control-allow-origin") == "http://dash.example:8080",
              "a GET from that origin carries Access-Control-Allow-Origin", f"{st} {h}")
        st, _, h = raw(port, "OPTIONS", "/api/chat", headers={"Origin": "http://other.example",
                                                              "Access-Control-Request-Method": "POST"}, host=host)
        check(st == 403 and "access-control-allow-origin" not in h, "a preflight from another origin: 403, no CORS headers",
              f"{st} {h}")
        st, body, _ = raw(port, "HEAD", "/", host=host)
        check(st == 200 and body == b"", "HEAD /: 200 without a body", f"{st} {body!r}")
    finally:
        p.terminate()
        err = p.communicate(timeout=20)[1]
    check("OLLAMA_NUM_PARALLEL=2: each model computes up to 2" in err, "OLLAMA_NUM_PARALLEL=2 is read and said", err[-300:])
    check("OLLAMA_KV_CACHE_TYPE=f16" in err and "wick runner: the KV cache holds f16 entries (2 slot(s)" in err,
          "OLLAMA_KV_CACHE_TYPE=f16 is read, said, and the runner's two slots hold f16", err[-400:])
    if ref_port:
        test_kv_q8_0(wick, store, ref_port, base)
    for h in ("127.0.0.1:abc", ":99999", "ftp://127.0.0.1:1", "127.0.0.1 :1"):
        bad = subprocess.run([wick, "serve"], env=dict(base, OLLAMA_HOST=h), capture_output=True, text=True, timeout=20)
        check(bad.returncode == 2 and "bad address" in bad.stderr, f"OLLAMA_HOST={h!r}: exit 2, not the default port",
              bad.stderr)
    # a bad value is a clear error at start
    bad = subprocess.run([wick, "serve"], env=dict(base, OLLAMA_HOST=f"127.0.0.1:{free_port()}",
                                                   OLLAMA_CONTEXT_LENGTH="lots"),
                         capture_output=True, text=True, timeout=20)
    check(bad.returncode == 2 and "OLLAMA_CONTEXT_LENGTH" in bad.stderr, "OLLAMA_CONTEXT_LENGTH=lots: exit 2 naming it",
          bad.stderr)
    # a KV cache type wick does not have (Ollama's q4_0: wick's cache is f32, f16 or q8_0), and
    # a loaded-model count atoi read as its leading digits, or below 0
    for var, val in (("OLLAMA_KV_CACHE_TYPE", "q4_0"), ("OLLAMA_KV_CACHE_TYPE", "Q8_0"),
                     ("OLLAMA_MAX_LOADED_MODELS", "3x"), ("OLLAMA_MAX_LOADED_MODELS", "-1")):
        bad = subprocess.run([wick, "serve"], env=dict(base, OLLAMA_HOST=f"127.0.0.1:{free_port()}", **{var: val}),
                             capture_output=True, text=True, timeout=20)
        check(bad.returncode == 2 and var in bad.stderr and f"'{val}'" in bad.stderr,
              f"{var}={val!r}: exit 2 naming it", bad.stderr)
    # 0 is what Ollama's envconfig reads as unset for these three (its default): a server starts
    zero = subprocess.Popen([wick, "serve"], env=dict(base, OLLAMA_HOST=f"127.0.0.1:{free_port()}",
                                                      OLLAMA_NUM_PARALLEL="0", OLLAMA_MAX_LOADED_MODELS="0",
                                                      OLLAMA_CONTEXT_LENGTH="0"),
                            stderr=subprocess.PIPE, text=True)
    first = zero.stderr.readline()
    zero.terminate()
    zero.communicate(timeout=20)
    check("listening on" in first, "OLLAMA_NUM_PARALLEL, OLLAMA_MAX_LOADED_MODELS, OLLAMA_CONTEXT_LENGTH=0: served",
          first)
    # a keep-alive Go's time.ParseDuration does not read (Ollama falls back to 5m without a word)
    for ka in ("5 minutes", "1d", "nan"):
        bad = subprocess.run([wick, "serve"], env=dict(base, OLLAMA_HOST=f"127.0.0.1:{free_port()}", OLLAMA_KEEP_ALIVE=ka),
                             capture_output=True, text=True, timeout=20)
        check(bad.returncode == 2 and "OLLAMA_KEEP_ALIVE" in bad.stderr and ka in bad.stderr,
              f"OLLAMA_KEEP_ALIVE={ka!r}: exit 2 naming it", bad.stderr)
