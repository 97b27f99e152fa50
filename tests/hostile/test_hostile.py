#!/usr/bin/env python3
"""tests/hostile - `wick serve` and the CLI against hostile clients (issue
20): every case a probe found is replayed, and each must give a clear error,
cost little (the server's and runner's CPU and peak RSS read from /proc
around it), and leave the server serving the next request.

Cases (numbered as issue 20's list):
 1. server-side paths: /api/create's "from" names a stored model only
    unless the operator allows paths (--allow-paths); the refusal does not
    depend on what exists on the server's machine (a FIFO is not even
    opened); quantize refused likewise; with --allow-paths a folder import
    works and a broken one is a 400 naming the problem. Host and Origin
    as Ollama checks them: a Host that does not name this machine is a
    403 (DNS rebinding), a browser Origin outside the allowed list a 403,
    allowed origins get CORS headers and preflights a 204.
 3. `wick create -f` reads at most 16 MiB (/dev/zero, a GGUF named by
    mistake: a clear error, little memory), and a binary file is no
    Modelfile.

Run by tests/hostile/run (the api-venv of tests/server for the clients).
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

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WICK = os.environ.get("WICK_BIN") or os.path.join(ROOT, "build", "release", "wick")  # WICK_BIN: another build
CACHE = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")), "models")
SMOL_GGUF = os.path.join(CACHE, "SmolLM2-135M-Instruct.Q4_1.gguf")
TICK = os.sysconf("SC_CLK_TCK")

sys.path.insert(0, os.path.join(ROOT, "tests"))
from checks import check, finish  # noqa: E402


def proc_cost(pid):
    """(CPU seconds, peak RSS in MiB) of a live process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    hwm = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    return cpu, hwm


class Server:
    """A `wick serve` on a free port over the store at store."""

    def __init__(self, store, *args, env=None):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        e = dict(os.environ, WICK_HOST=f"127.0.0.1:{self.port}", WICK_MODELS=store)
        for k in ("WICK_ALLOW_PATHS", "OLLAMA_ORIGINS", "WICK_ORIGINS"):
            e.pop(k, None)
        e.update(env or {})
        self.proc = subprocess.Popen([WICK, "serve", *args], env=e, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                if self.request("GET", "/")[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        out = (r.status, data, {k.lower(): v for k, v in r.getheaders()})
        c.close()
        return out

    def post(self, path, obj, headers=None):
        st, data, _ = self.request("POST", path, json.dumps(obj), headers)
        try:
            return st, json.loads(data)
        except ValueError:
            return st, {"raw": data.decode(errors="replace")}

    def alive(self):
        return self.request("GET", "/api/version")[0] == 200

    def cost(self):
        return proc_cost(self.proc.pid)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def make_store():
    store = tempfile.mkdtemp(prefix="wick-hostile-")
    mf = os.path.join(store, "smol.Modelfile")
    with open(mf, "w") as f:
        f.write(f"FROM {SMOL_GGUF}\n")
    p = subprocess.run([WICK, "create", "smollm2", "-f", mf], env=dict(os.environ, WICK_MODELS=store),
                       capture_output=True, text=True)
    check(p.returncode == 0, "setup: smollm2 created in a temporary store", p.stderr)
    return store


# ------------------------------------------------------------------ 1: paths, Host, Origin

def test_paths(store, work):
    s = Server(store)
    try:
        fifo = os.path.join(work, "fifo")
        os.mkfifo(fifo)
        targets = ["/etc/shadow", "/etc", "/proc/self/root", "~/x", "/nonexistent/x", fifo, SMOL_GGUF]
        bodies = {}
        c0, _ = s.cost()
        for t in targets:
            t0 = time.time()
            st, body = s.post("/api/create", {"model": "x", "from": t})
            took = time.time() - t0
            bodies[t] = body.get("error", "")
            check(st == 404 and took < 5 and "server-side paths are off" in bodies[t],
                  f"paths off: /api/create from {t!r} is 404 naming the setting, at once", f"{st} {body} {took:.1f}s")
        # the answer tells nothing of what exists: only the echoed name differs
        shapes = {bodies[t].replace(t, "NAME") for t in targets}
        check(len(shapes) == 1, "paths off: the same error whatever exists at the path", str(shapes))
        c1, _ = s.cost()
        check(c1 - c0 < 0.1 * len(targets) + 0.2, "paths off: the refusals cost the server little CPU",
              f"{c1 - c0:.2f} s for {len(targets)}")
        st, body = s.post("/api/create", {"model": "x", "from": "smollm2", "quantize": "q4_0"})
        check(st == 403 and "server-side paths are off" in body.get("error", ""),
              "paths off: quantize is 403 naming the setting", str(body))
        st, body = s.post("/api/create", {"model": "smol-copy", "from": "smollm2", "system": "Be brief.", "stream": False})
        check(st == 200 and body == {"status": "success"}, "paths off: from a stored model still works", str(body))
        check(not os.path.exists(os.path.join(store, "manifests", "registry.ollama.ai", "library", "x")),
              "paths off: nothing was stored for the refused creates")
        check(s.alive(), "paths off: the server serves on")
    finally:
        s.stop()
    s = Server(store, "--allow-paths")
    try:
        st, body = s.post("/api/create", {"model": "smol-file", "from": SMOL_GGUF, "stream": False})
        check(st == 200, "--allow-paths: /api/create from a GGUF path works", str(body))
        bad = os.path.join(work, "bad-rope")
        os.makedirs(bad, exist_ok=True)
        with open(os.path.join(bad, "config.json"), "w") as f:
            json.dump({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1, "intermediate_size": 128,
                       "num_attention_heads": 4, "rope_scaling": {"rope_type": "warp", "factor": 2}}, f)
        st, body = s.post("/api/create", {"model": "badrope", "from": bad})
        check(st == 400 and "rope_scaling type 'warp'" in body.get("error", "") and s.alive(),
              "--allow-paths: a folder with an unknown rope_scaling type is 400 naming it; the server serves on",
              str(body))
    finally:
        s.stop()
    s = Server(store, env={"WICK_ALLOW_PATHS": "1"})
    try:
        st, body = s.post("/api/create", {"model": "smol-file2", "from": SMOL_GGUF, "stream": False})
        check(st == 200, "WICK_ALLOW_PATHS=1: /api/create from a GGUF path works", str(body))
    finally:
        s.stop()


def test_host_origin(store):
    s = Server(store, env={"OLLAMA_ORIGINS": "https://app.example.com, chrome-extension://*"})
    try:
        for host, ok in (("127.0.0.1", True), (f"localhost:{s.port}", True), ("[::1]:80", True),
                         ("ollama.localhost", True), ("box.local", True), ("10.0.0.7:11434", True),
                         (socket.gethostname(), True), ("evil.example", False), ("evil.example:11434", False),
                         ("127.0.0.1.nip.io", False), ("8.8.8.8", False)):
            st, body, _ = s.request("GET", "/api/tags", headers={"Host": host})
            check((st == 200) == ok and (ok or b"not allowed" in body),
                  f"Host {host!r}: {'served' if ok else '403'}", f"{st} {body[:200]}")
        # a rebinding page's POST is refused before its body is read or acted on
        st, body = s.post("/api/create", {"model": "evil", "from": "smollm2"}, headers={"Host": "evil.example"})
        check(st == 403 and not os.path.exists(os.path.join(store, "manifests", "registry.ollama.ai", "library", "evil")),
              "Host evil.example: /api/create refused, nothing stored", str(body))
        for origin, ok in (("http://localhost", True), ("http://localhost:3000", True), ("https://127.0.0.1:8443", True),
                           ("http://0.0.0.0:1", True), ("app://main", True), ("file://", True), ("tauri://x", True),
                           ("https://app.example.com", True), ("chrome-extension://abcdef", True),
                           ("https://evil.example", False), ("null", False), ("http://localhost.evil.example", False),
                           ("https://app.example.com.evil", False)):
            st, body, hdr = s.request("GET", "/api/version", headers={"Origin": origin})
            acao = hdr.get("access-control-allow-origin")
            check((st == 200 and acao == origin) if ok else (st == 403 and acao is None and b"not allowed" in body),
                  f"Origin {origin!r}: {'served with CORS headers' if ok else '403 without them'}",
                  f"{st} {acao} {body[:200]}")
        st, _, hdr = s.request("OPTIONS", "/api/chat", headers={"Origin": "http://localhost:5173",
                                                                 "Access-Control-Request-Method": "POST"})
        check(st == 204 and hdr.get("access-control-allow-origin") == "http://localhost:5173"
              and "POST" in hdr.get("access-control-allow-methods", ""), "preflight from an allowed origin: 204", str(hdr))
        st, _, hdr = s.request("OPTIONS", "/api/chat", headers={"Origin": "https://evil.example",
                                                                 "Access-Control-Request-Method": "POST"})
        check(st == 403 and "access-control-allow-origin" not in hdr, "preflight from another origin: 403")
        st, body = s.post("/api/generate", {"model": "smollm2", "prompt": "Hi", "stream": False,
                                            "options": {"num_predict": 2, "temperature": 0}},
                          headers={"Origin": "https://evil.example"})
        check(st == 403, "a generation from another origin: 403", str(body))
        check(s.alive(), "Host/Origin: the server serves on")
    finally:
        s.stop()


def run_cost(args, env=None, timeout=60):
    """(exit code, stderr, CPU seconds, peak RSS MiB) of a wick command,
    its own rusage from wait4."""
    p = subprocess.Popen([WICK, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t0 = time.time()
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.time() - t0 > timeout:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.01)
    err = p.stderr.read().decode(errors="replace")
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, err, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


# ------------------------------------------------------------------ 3: create -f reads bounded

def test_create_file_bounded(store):
    env = dict(os.environ, WICK_MODELS=store)
    for path, says in (("/dev/zero", "larger than 16 MiB"), (SMOL_GGUF, "larger than 16 MiB")):
        rc, err, cpu, rss = run_cost(["create", "x", "-f", path], env=env)
        check(rc != 0 and says in err and "not a Modelfile" in err and rss < 64 and cpu < 1,
              f"wick create -f {os.path.basename(path)}: a clear error, peak RSS {rss:.0f} MiB, {cpu:.2f} s CPU",
              err)
    small = os.path.join(store, "binary.Modelfile")
    with open(small, "wb") as f:
        f.write(b"GGUF\x03\x00\x00\x00" + bytes(100))
    rc, err, _, _ = run_cost(["create", "x", "-f", small], env=env)
    check(rc != 0 and "binary data" in err, "wick create -f a small binary file: not a Modelfile", err)


def main():
    store = make_store()
    work = tempfile.mkdtemp(prefix="wick-hostile-work-")
    try:
        for t in (test_paths, test_host_origin, test_create_file_bounded):
            t0 = time.time()
            t(store, work) if t is test_paths else t(store)
            print(f"{t.__name__}: {time.time() - t0:.1f} s", flush=True)
    finally:
        shutil.rmtree(store, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    finish("hostile")


if __name__ == "__main__":
    main()
