#!/usr/bin/env python3
"""`wick pull` / `wick push` and the server's /api/pull and /api/push
against a real registry: Debian's docker-registry (distribution 2.8)
started here on 127.0.0.1 with filesystem storage in a temporary folder,
plain http, no auth; SmolLM2-135M (Q4_1 GGUF) created into a temporary
store. Checks:

a. `wick push 127.0.0.1:PORT/library/smol:latest --insecure` (after `wick
   cp`): the registry then serves that manifest, its config and layer
   digests those of the store's; a second push uploads nothing.
b. `wick pull` into an empty store: every blob's SHA-256 is its name, the
   manifest is the pushed one, no partial file is left, and `wick run` of
   the pulled name answers (greedy, 4 tokens) what the original does.
c. Resume: a pull through a forwarding proxy that stops sending the GGUF
   blob after 24 MiB is killed (SIGKILL) once the partial file holds those
   bytes; the next pull completes, and its GET of that blob asked for
   `Range: bytes=<24 MiB>-` and received the blob's size less 24 MiB. A
   proxy that drops Range (a server without ranges): the download starts
   over and is still right. A proxy that wants a Bearer token: the
   anonymous token is fetched with the challenge's service and scope and
   sent on the retried requests.
d. A blob corrupted in the registry's storage: exit 1, the message names
   the digest, and neither that blob, its partial file nor a manifest is
   left in the store.
f. Errors: a closed port ("cannot connect ... Connection refused", exit
   1), http without --insecure (exit 1, naming --insecure), an unknown
   model ("not found"), a push of a model not in the store, usage errors
   (exit 2).
e. The server (`wick serve`) with the real `ollama` client: pull with
   stream=True yields Ollama's progress objects (status, digest, total,
   completed) ending in success, and the model is listed; push of a copy
   under another tag succeeds and the registry serves it; an unknown model
   is a ResponseError 404; stream=False answers {"status":"success"}; a
   client that disconnects mid-pull cancels it (the registry connection is
   closed within seconds, the partial file kept).
"""
import hashlib
import http.client
import http.server
import json
import os
import select
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WICK = os.environ.get("WICK_BIN") or os.path.join(ROOT, "build", "release", "wick")
CACHE = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")), "models")
SMOL = os.path.join(CACHE, "SmolLM2-135M-Instruct.Q4_1.gguf")
REGISTRY_BIN = "/usr/bin/docker-registry"
MT_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
STALL_AT = 24 << 20  # bytes of the GGUF blob the stalling proxy sends

sys.path.insert(0, os.path.join(ROOT, "tests"))
from checks import check, finish  # noqa: E402

import ollama  # noqa: E402

TMP = tempfile.mkdtemp(prefix="wick-registry-test-")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# wick run talks to a server at WICK_HOST when one answers: point it where none does
NO_SERVER = f"127.0.0.1:{free_port()}"


def wick(store, *args, timeout=120):
    env = dict(os.environ, WICK_MODELS=store, WICK_HOST=NO_SERVER)
    env.pop("OLLAMA_MODELS", None)
    p = subprocess.run([WICK, *args], env=env, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def new_store(name):
    d = os.path.join(TMP, name)
    os.makedirs(d)
    return d


def manifest_file(store, host, tag="latest"):
    return os.path.join(store, "manifests", host, "library", "smol", tag)


def blobs(store):
    d = os.path.join(store, "blobs")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ------------------------------------------------------------------ the registry

class Registry:
    """docker-registry serving a temporary folder on 127.0.0.1:<free port>."""

    def __init__(self):
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.data = os.path.join(TMP, "registry-data")
        conf = os.path.join(TMP, "registry.yml")
        with open(conf, "w") as f:
            f.write(f"""version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: {self.data}
  delete:
    enabled: true
http:
  addr: 127.0.0.1:{self.port}
""")
        self.log = open(os.path.join(TMP, "registry.log"), "wb")
        self.proc = subprocess.Popen([REGISTRY_BIN, "serve", conf], stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(200):
            try:
                if urllib.request.urlopen(f"http://{self.host}/v2/", timeout=1).status == 200:
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("docker-registry did not start: " + open(self.log.name).read())

    def manifest(self, tag):
        req = urllib.request.Request(f"http://{self.host}/v2/library/smol/manifests/{tag}",
                                     headers={"Accept": MT_MANIFEST})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def blob_data(self, digest):
        hexd = digest.split(":")[1]
        return os.path.join(self.data, "docker", "registry", "v2", "blobs", "sha256", hexd[:2], hexd, "data")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


# ------------------------------------------------------------------ the proxy

class Proxy(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """A forwarding HTTP server in front of the registry (wick's model name
    names this proxy as its registry host), for what the registry does not
    do on cue. Modes: stall_after (stop sending a blob's body to a GET
    without Range after that many bytes, and wait for the client to leave),
    ignore_range (drop Range: a server without ranges), auth (ask for a
    Bearer token from /token). Records every request."""

    daemon_threads = True

    def __init__(self, upstream):
        self.upstream = upstream
        self.stall_after = None
        self.ignore_range = False
        self.auth = False
        self.log = []  # dicts: method, path, range, authorization, status, sent
        self.token_queries = []
        self.stalled = threading.Event()
        self.client_left = threading.Event()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), ProxyHandler)
        self.port = self.server_address[1]
        self.host = f"127.0.0.1:{self.port}"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def reset(self, **modes):
        self.stall_after = modes.get("stall_after")
        self.ignore_range = modes.get("ignore_range", False)
        self.auth = modes.get("auth", False)
        self.log = []
        self.token_queries = []
        self.stalled.clear()
        self.client_left.clear()

    def blob_gets(self, digest):
        return [r for r in self.log if r["method"] == "GET" and r["path"].endswith("/blobs/" + digest)]


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.forward()

    def do_GET(self):
        self.forward()

    def do_PUT(self):
        self.forward()

    def do_POST(self):
        self.forward()

    def reply(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def forward(self):
        p = self.server
        rec = {"method": self.command, "path": urllib.parse.urlsplit(self.path).path,
               "range": self.headers.get("Range"), "authorization": self.headers.get("Authorization"),
               "status": None, "sent": 0}
        with p.lock:
            p.log.append(rec)
        if p.auth and rec["path"] == "/token":
            p.token_queries.append(urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query))
            rec["status"] = 200
            return self.reply(200, b'{"token":"tok-123"}', [("Content-Type", "application/json")])
        if p.auth and rec["authorization"] != "Bearer tok-123":
            rec["status"] = 401
            challenge = (f'Bearer realm="http://{p.host}/token",service="wick-test",'
                         f'scope="repository:library/smol:pull"')
            return self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}',
                              [("WWW-Authenticate", challenge), ("Content-Type", "application/json")])
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() in ("accept", "range", "content-type") and not (k.lower() == "range" and p.ignore_range)}
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if self.command in ("PUT", "POST") else None
        rec["body"] = len(body or b"")
        up = http.client.HTTPConnection("127.0.0.1", p.upstream.port, timeout=30)
        up.request(self.command, self.path, body=body, headers=headers)
        r = up.getresponse()
        rec["status"] = r.status
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "date", "server"):
                self.send_header(k, v)
        self.end_headers()
        stall = (p.stall_after is not None and self.command == "GET" and "/blobs/" in rec["path"]
                 and not rec["range"] and r.status == 200)
        while self.command != "HEAD":
            want = 65536 if not stall else min(65536, p.stall_after - rec["sent"])
            chunk = r.read(want) if want > 0 else b""
            if not chunk:
                break
            self.wfile.write(chunk)
            rec["sent"] += len(chunk)
        up.close()
        if stall and rec["sent"] >= p.stall_after:
            self.wfile.flush()
            p.stalled.set()
            self.wait_for_client_to_leave()
        self.close_connection = True

    def wait_for_client_to_leave(self):
        p = self.server
        while not p.stop.is_set():
            ready, _, _ = select.select([self.connection], [], [], 0.05)
            if ready:
                try:
                    gone = self.connection.recv(65536) == b""
                except OSError:
                    gone = True
                if gone:
                    p.client_left.set()
                    return


# ------------------------------------------------------------------ the checks

def test_push(reg, proxy, store):
    name = f"{reg.host}/library/smol:latest"
    rc, out, err = wick(store, "cp", "smol", name)
    check(rc == 0, "wick cp smol to the registry's name", err)
    rc, out, err = wick(store, "push", name, "--insecure")
    check(rc == 0, "a: wick push --insecure succeeds", err[-2000:])
    lines = err.splitlines()
    for s in ("retrieving manifest", "pushing manifest", "success"):
        check(s in lines, f"a: push reports '{s}'", err[-1500:])
    mine = json.load(open(manifest_file(store, reg.host)))
    try:
        theirs = reg.manifest("latest")
    except OSError as e:
        theirs = {"error": str(e)}
    check([l["digest"] for l in theirs.get("layers", [])] == [l["digest"] for l in mine["layers"]]
          and theirs.get("config", {}).get("digest") == mine["config"]["digest"],
          "a: the registry serves the manifest with the store's config and layer digests",
          f"{theirs} vs {mine}")
    for l in mine["layers"] + [mine["config"]]:
        check(os.path.exists(reg.blob_data(l["digest"])) and os.path.getsize(reg.blob_data(l["digest"])) == l["size"],
              f"a: the registry stores blob {l['digest'][:19]} with its size")
    # a second push (through the proxy, which counts) finds every blob there: HEADs, then the manifest
    proxy.reset()
    again = f"{proxy.host}/library/smol:latest"
    rc, out, err = wick(store, "cp", name, again)
    rc2, out, err = wick(store, "push", again, "--insecure")
    calls = [(r["method"], r["path"].rsplit("/", 2)[-2]) for r in proxy.log]
    n_blobs = len(mine["layers"]) + 1
    check(rc == 0 and rc2 == 0 and "success" in err.splitlines()
          and calls == [("HEAD", "blobs")] * n_blobs + [("PUT", "manifests")],
          "a: a second push uploads no blob: a HEAD per blob, then the manifest", f"{calls} {err[-1000:]}")
    return mine


def test_pull(reg, src_store, original):
    store = new_store("pulled")
    name = f"{reg.host}/library/smol:latest"
    rc, out, err = wick(store, "pull", name, "--insecure")
    check(rc == 0, "b: wick pull --insecure into an empty store succeeds", err[-2000:])
    lines = err.splitlines()
    want = ["pulling manifest", "verifying sha256 digest", "writing manifest", "success"]
    check([l for l in lines if l in want] == want, "b: pull reports Ollama's statuses in order", err[-1500:])
    gguf = next(l for l in original["layers"] if l["mediaType"] == "application/vnd.ollama.image.model")
    check(any(l.startswith(f"pulling {gguf['digest'][7:19]}...") for l in lines),
          "b: pull reports the weights blob as 'pulling <12 hex>...'", err[-1500:])
    mf = manifest_file(store, reg.host)
    check(os.path.exists(mf) and json.load(open(mf)) == original, "b: the pulled manifest is the pushed one")
    names = blobs(store)
    want_blobs = sorted("sha256-" + l["digest"][7:] for l in original["layers"] + [original["config"]])
    check(names == want_blobs, "b: the store holds exactly the manifest's blobs (no partial left)", f"{names}")
    for n in names:
        check(n.startswith("sha256-") and sha256_file(os.path.join(store, "blobs", n)) == n[7:],
              f"b: blob {n[:19]}'s SHA-256 is its name")
    args = ["Hi", "--num-predict", "4", "--temperature", "0"]
    rc1, out1, err1 = wick(src_store, "run", "smol", *args)
    rc2, out2, err2 = wick(store, "run", name, *args)
    check(rc1 == 0 and rc2 == 0 and out1.strip() != "" and out1 == out2,
          "b: wick run of the pulled model (by its host/ns/name:tag) answers what the original does",
          f"{out1!r} {err1[-300:]} / {out2!r} {err2[-300:]}")
    # the same weights under a short name (whatever the name resolution does with '/')
    wick(store, "cp", name, "pulled")
    rc3, out3, err3 = wick(store, "run", "pulled", *args)
    check(rc3 == 0 and out1.strip() != "" and out3 == out1,
          "b: the pulled blobs, run as a copy named 'pulled', answer what the original does", f"{out3!r} {err3[-300:]}")
    rc, out, err = wick(store, "pull", name, "--insecure")
    check(rc == 0 and "success" in err.splitlines(), "b: pulling it again succeeds (every blob present)", err[-500:])
    # a manifest the registry holds as other bytes (pretty-printed JSON) is stored as sent: its ID in
    # wick list is the registry's digest (Docker-Content-Digest), as Ollama writes it
    pretty = json.dumps(original, indent=3).encode()
    req = urllib.request.Request(f"http://{reg.host}/v2/library/smol/manifests/pretty", data=pretty, method="PUT",
                                 headers={"Content-Type": MT_MANIFEST})
    with urllib.request.urlopen(req, timeout=10) as r:
        digest = r.headers.get("Docker-Content-Digest", "")
    rc, _, err = wick(store, "pull", f"{reg.host}/library/smol:pretty", "--insecure")
    listed = wick(store, "list")[1]
    row = next((l for l in listed.splitlines() if l.startswith(f"{reg.host}/library/smol:pretty")), "")
    check(rc == 0 and digest == "sha256:" + hashlib.sha256(pretty).hexdigest() and digest[7:19] in row.split() and
          open(manifest_file(store, reg.host, "pretty"), "rb").read() == pretty,
          "b: a pulled manifest is stored as the registry sent it, its ID the registry's digest", f"{digest} {row!r} {err[-300:]}")
    return store


def test_resume(reg, proxy, original):
    gguf = next(l for l in original["layers"] if l["mediaType"] == "application/vnd.ollama.image.model")
    digest, size = gguf["digest"], gguf["size"]
    name = f"{proxy.host}/library/smol:latest"
    store = new_store("resume")
    part = os.path.join(store, "blobs", "partial-sha256-" + digest[7:])
    final = os.path.join(store, "blobs", "sha256-" + digest[7:])
    env = dict(os.environ, WICK_MODELS=store, WICK_HOST=NO_SERVER)
    for ignore_range in (False, True):
        proxy.reset(stall_after=STALL_AT)
        p = subprocess.Popen([WICK, "pull", name, "--insecure"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        deadline = time.time() + 30
        while time.time() < deadline and not (os.path.exists(part) and os.path.getsize(part) >= STALL_AT):
            time.sleep(0.02)
        have = os.path.getsize(part) if os.path.exists(part) else -1
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stderr.close()
        what = "c (server ignores Range)" if ignore_range else "c"
        check(have == STALL_AT and 0 < have < size, f"{what}: the killed pull left a partial file of the bytes sent",
              f"{have} of {size}")
        check(not os.path.exists(final) and not os.path.exists(manifest_file(store, proxy.host)),
              f"{what}: no blob under its name and no manifest after the kill")
        proxy.reset(ignore_range=ignore_range)
        rc, out, err = wick(store, "pull", name, "--insecure")
        check(rc == 0, f"{what}: the second pull completes", err[-1500:])
        gets = proxy.blob_gets(digest)
        if not ignore_range:
            check(len(gets) == 1 and gets[0]["range"] == f"bytes={STALL_AT}-" and gets[0]["status"] == 206
                  and gets[0]["sent"] == size - STALL_AT,
                  "c: the second pull asked for the rest only (Range) and got size - 24 MiB bytes", f"{gets}")
            check(f"resuming at" in err, "c: the pull says it resumes", err[-800:])
        else:
            check(len(gets) == 1 and gets[0]["range"] == f"bytes={STALL_AT}-" and gets[0]["status"] == 200
                  and gets[0]["sent"] == size,
                  f"{what}: Range asked, 200 and the whole blob answered: the download started over", f"{gets}")
        check(os.path.exists(final) and sha256_file(final) == digest[7:] and not os.path.exists(part),
              f"{what}: the blob is complete and right, the partial file gone")
        check(os.path.exists(manifest_file(store, proxy.host)), f"{what}: the manifest is written")
        shutil.rmtree(store)
        os.makedirs(store)
    # a registry that wants a Bearer token: an anonymous one from the challenge's realm
    proxy.reset(auth=True)
    rc, out, err = wick(store, "pull", name, "--insecure")
    check(rc == 0 and os.path.exists(manifest_file(store, proxy.host)), "c: a pull through a Bearer challenge succeeds",
          err[-1500:])
    q = proxy.token_queries[0] if proxy.token_queries else {}
    check(q.get("service") == ["wick-test"] and q.get("scope") == ["repository:library/smol:pull"],
          "c: the token request carries the challenge's service and scope", f"{proxy.token_queries}")
    authed = [r for r in proxy.log if r["path"] != "/token" and r["status"] != 401]
    check(authed and all(r["authorization"] == "Bearer tok-123" for r in authed),
          "c: every request after the challenge carries the token", f"{proxy.log[:4]}")
    shutil.rmtree(store)


def test_corrupt(reg, original):
    gguf = next(l for l in original["layers"] if l["mediaType"] == "application/vnd.ollama.image.model")
    digest = gguf["digest"]
    data = reg.blob_data(digest)
    with open(data, "r+b") as f:
        f.seek(gguf["size"] // 2)
        byte = f.read(1)
        f.seek(gguf["size"] // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    try:
        store = new_store("corrupt")
        rc, out, err = wick(store, "pull", f"{reg.host}/library/smol:latest", "--insecure")
        check(rc == 1 and "wick pull:" in err and digest in err, "d: a corrupted blob fails the pull, naming its digest",
              f"rc {rc}: {err[-800:]}")
        left = blobs(store)
        check(not any(digest[7:] in n for n in left), "d: no blob or partial file of that digest is left", f"{left}")
        mdir = os.path.join(store, "manifests")
        files = [f for _, _, fs in os.walk(mdir) for f in fs if not f.startswith(".")]
        check(files == [], "d: no manifest is written", f"{files}")
    finally:
        with open(data, "r+b") as f:
            f.seek(gguf["size"] // 2)
            f.write(byte)


def test_errors(reg, store):
    dead = free_port()
    rc, out, err = wick(store, "pull", f"127.0.0.1:{dead}/library/smol:latest", "--insecure")
    check(rc == 1 and f"cannot connect to the registry at 127.0.0.1:{dead}" in err and "refused" in err.lower(),
          "f: an unreachable registry: exit 1 naming the host and 'connection refused'", f"rc {rc}: {err}")
    rc, out, err = wick(store, "pull", f"{reg.host}/library/smol:latest")
    check(rc == 1 and "--insecure" in err, "f: https to a plain-http registry: exit 1 pointing at --insecure",
          f"rc {rc}: {err}")
    rc, out, err = wick(store, "pull", f"{reg.host}/library/nosuchmodel:latest", "--insecure")
    check(rc == 1 and f"model '{reg.host}/library/nosuchmodel:latest' not found" in err,
          "f: an unknown model: exit 1, 'model ... not found'", f"rc {rc}: {err}")
    rc, out, err = wick(store, "push", f"{reg.host}/library/notstored:latest", "--insecure")
    check(rc == 1 and "not found" in err, "f: pushing a model not in the store: exit 1, not found", f"rc {rc}: {err}")
    # names the store takes but no registry does (OCI: lower-case parts joined by . _ __ -): said before
    # anything is sent (the registry answered 404 page not found)
    for bad in ("Smol", "a..b", "trail."):
        wick(store, "cp", "smol", f"{reg.host}/library/{bad}:latest")
        rc, out, err = wick(store, "push", f"{reg.host}/library/{bad}:latest", "--insecure")
        check(rc == 1 and f"'library/{bad}' cannot name a registry repository" in err,
              f"f: push of library/{bad}: exit 1 naming it", f"rc {rc}: {err}")
    # a wrong registry: an HTTP server that is not one (the proxy's upstream port's neighbour is unknown;
    # use a plain Python server that answers 404 to everything)
    class Quiet(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    rc, out, err = wick(store, "pull", f"127.0.0.1:{srv.server_address[1]}/library/smol:latest", "--insecure")
    srv.shutdown()
    check(rc == 1 and "HTTP 501" in err, "f: a server that is not a registry: exit 1 with its HTTP status", err)
    for args in (["pull"], ["pull", "a", "b"], ["pull", "--bogus", "x"], ["push"], ["pull", "bad name!"]):
        rc, out, err = wick(store, *args)
        check(rc == 2, f"f: usage error exits 2: wick {' '.join(args)}", f"rc {rc}: {err}")
    # a host with a port needs the namespace too, and the port is digits
    for bad in ("127.0.0.1:5000/smol", "127.0.0.1:50x0/library/smol", "127.0.0.1:/library/smol"):
        rc, out, err = wick(store, "cp", "smol", bad)
        check(rc == 1 and "invalid model name" in err, f"f: '{bad}' is not a model name", f"rc {rc}: {err}")
    rc, out, err = wick(store, "pull", "--help")
    check(rc == 0 and "--insecure" in out, "f: wick pull --help", out)


class Server:
    def __init__(self, store):
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        env = dict(os.environ, WICK_HOST=self.host, WICK_MODELS=store)
        self.log = open(os.path.join(TMP, "serve.log"), "wb")
        self.proc = subprocess.Popen([WICK, "serve"], env=env, stderr=self.log)
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                time.sleep(0.05)
        self.client = ollama.Client(host=f"http://{self.host}")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=20)
        self.log.close()
        # a sanitizer build reports what it found on stderr and exits nonzero
        check(rc == 0, "e: wick serve exits 0 on SIGTERM", open(self.log.name, errors="replace").read()[-3000:])


def test_server(reg, proxy, original):
    store = new_store("served")
    s = Server(store)
    try:
        for route in ("/api/pull", "/api/push"):
            c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
            c.request("POST", route, body="{}")
            r = c.getresponse()
            body = r.read().decode(errors="replace")
            c.close()
            check(r.status == 400 and "model is required" in body, f"e: wick serve has {route} (400 without a model)",
                  f"{r.status} {body}")
            if r.status == 404:
                return
        name = f"{reg.host}/library/smol:latest"
        try:
            parts = list(s.client.pull(name, insecure=True, stream=True))
        except Exception as e:  # noqa: BLE001
            parts = []
            check(False, "e: ollama pull through wick serve", repr(e))
        statuses = [p.status for p in parts]
        check(statuses[:1] == ["pulling manifest"] and statuses[-1:] == ["success"],
              "e: the stream starts with 'pulling manifest' and ends with 'success'", f"{statuses[:3]} ... {statuses[-3:]}")
        check("verifying sha256 digest" in statuses and "writing manifest" in statuses,
              "e: verifying and writing reported", f"{statuses}")
        gguf = next(l for l in original["layers"] if l["mediaType"] == "application/vnd.ollama.image.model")
        mine = [p for p in parts if p.digest == gguf["digest"]]
        check(mine and all(p.status == f"pulling {gguf['digest'][7:19]}" and p.total == gguf["size"] for p in mine)
              and mine[-1].completed == gguf["size"],
              "e: the weights blob's reports carry status, digest, total and completed up to its size",
              f"{[(p.status, p.total, p.completed) for p in mine[:3]]}")
        check(sorted(n[7:] for n in blobs(store)) == sorted(l["digest"][7:] for l in original["layers"] + [original["config"]]),
              "e: the server's store holds the blobs")
        listed = [m.model for m in s.client.list().models]
        check(name in listed, "e: the pulled model is listed", f"{listed}")
        # push a copy under another tag
        rc, out, err = wick(store, "cp", name, f"{reg.host}/library/smol:copy")
        check(rc == 0, "e: wick cp to another tag", err)
        try:
            pushed = list(s.client.push(f"{reg.host}/library/smol:copy", insecure=True, stream=True))
        except Exception as e:  # noqa: BLE001
            pushed = []
            check(False, "e: ollama push through wick serve", repr(e))
        st = [p.status for p in pushed]
        check(st[:1] == ["retrieving manifest"] and "pushing manifest" in st and st[-1:] == ["success"],
              "e: push streams retrieving manifest ... pushing manifest, success", f"{st}")
        try:
            theirs = reg.manifest("copy")
        except OSError as e:
            theirs = {"error": str(e)}
        check([l["digest"] for l in theirs.get("layers", [])] == [l["digest"] for l in original["layers"]],
              "e: the registry serves the pushed copy", f"{theirs}")
        # wick pull with no store named in its environment: through the running server, as ollama pull
        home = tempfile.mkdtemp(dir=TMP)
        env = {k: v for k, v in os.environ.items() if k not in ("WICK_MODELS", "OLLAMA_MODELS")}
        env.update(HOME=home, WICK_HOST=s.host)
        s.client.delete(f"{reg.host}/library/smol:copy")
        p = subprocess.run([WICK, "pull", f"{reg.host}/library/smol:copy", "--insecure"], env=env, capture_output=True,
                           text=True, timeout=120)
        listed = [m.model for m in s.client.list().models]
        check(p.returncode == 0 and p.stderr.rstrip().endswith("success") and f"{reg.host}/library/smol:copy" in listed
              and not os.path.exists(os.path.join(home, ".wick")),
              "e: wick pull through the running server (its /api/pull, its store)", p.stderr[-400:])
        p = subprocess.run([WICK, "pull", f"{reg.host}/library/nosuchmodel", "--insecure"], env=env, capture_output=True,
                           text=True, timeout=120)
        check(p.returncode == 1 and "not found" in p.stderr, "e: wick pull of an unknown model through the server: 1",
              p.stderr[-300:])
        try:
            s.client.pull(f"{reg.host}/library/nosuchmodel:latest", insecure=True, stream=True).__next__()
            check(False, "e: an unknown model is an error")
        except ollama.ResponseError as e:
            check(e.status_code == 404 and "not found" in str(e), "e: an unknown model is a 404 'not found'",
                  f"{e.status_code} {e}")
        try:
            r = s.client.pull(name, insecure=True, stream=False).status
        except ollama.ResponseError as e:
            r = repr(e)
        check(r == "success", "e: stream false answers one {status: success}", f"{r}")
        # a client that disconnects mid-pull cancels it (the weights blob removed first, so it downloads again)
        if os.path.exists(os.path.join(store, "blobs", "sha256-" + gguf["digest"][7:])):
            os.remove(os.path.join(store, "blobs", "sha256-" + gguf["digest"][7:]))
        proxy.reset(stall_after=STALL_AT)
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
        c.request("POST", "/api/pull", body=json.dumps({"model": f"{proxy.host}/library/smol:latest",
                                                        "insecure": True}))
        resp = c.getresponse()
        first = resp.readline()
        stalled = proxy.stalled.wait(20)
        part = os.path.join(store, "blobs", "partial-sha256-" + gguf["digest"][7:])
        for _ in range(200):  # what the proxy sent has reached the file (bytes in flight are not the point)
            if os.path.exists(part) and os.path.getsize(part) >= STALL_AT:
                break
            time.sleep(0.05)
        c.sock.shutdown(socket.SHUT_RDWR)
        c.close()
        left = proxy.client_left.wait(10)
        check(resp.status == 200 and b"pulling manifest" in first and stalled and left,
              "e: a client that disconnects mid-pull cancels it (the registry connection closes)",
              f"{resp.status} {first!r} stalled {stalled} left {left}")
        check(os.path.exists(part) and os.path.getsize(part) == STALL_AT,
              "e: the cancelled pull keeps its partial file", f"{os.path.exists(part) and os.path.getsize(part)} of {STALL_AT}")
    finally:
        s.stop()


def main():
    if not os.path.exists(REGISTRY_BIN):
        print(f"tests/registry: {REGISTRY_BIN} is missing (apt-get install docker-registry)")
        sys.exit(1)
    reg = Registry()
    proxy = Proxy(reg)
    try:
        src = new_store("source")
        mf = os.path.join(TMP, "Modelfile")
        with open(mf, "w") as f:
            f.write(f"FROM {SMOL}\n")
        rc, out, err = wick(src, "create", "smol", "-f", mf)
        check(rc == 0, "wick create smol", err)
        original = test_push(reg, proxy, src)
        test_pull(reg, src, original)
        test_resume(reg, proxy, original)
        test_corrupt(reg, original)
        test_errors(reg, src)
        if os.environ.get("WICK_REGISTRY_SKIP_SERVER") != "1":
            test_server(reg, proxy, original)
    finally:
        proxy.stop.set()
        proxy.shutdown()
        reg.stop()
        shutil.rmtree(TMP, ignore_errors=True)
    finish("registry")


if __name__ == "__main__":
    main()
