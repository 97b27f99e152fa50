#!/usr/bin/env python3
"""Parallel slots (issue 26): `wick serve` with WICK_NUM_PARALLEL=4 computes
several requests of one model at once on the runner's wk_slots, and each
gets exactly the text it gets alone.

References: the same server's sequential answers (each request alone, one
after the other) for the greedy requests run 8 at once; the runner's own
status (/api/ps "wick": n_parallel, active, queued, busy) for what it is
doing. Run by tests/server/run (standard library and the api-venv's
clients, as test_server.py).

`test_parallel.py --full GGUF [GGUF ...]`: 16 requests (greedy and seeded)
at once on 16 slots against the same requests alone, on each model (issue
26's acceptance 1; minutes on Qwen2.5-Coder-1.5B, so not in CI, where
tests/unit/test-slots.c runs 16 requests on 8 slots of SmolLM2).
`test_parallel.py --soak [1000] [32]`: that many streamed requests from that
many clients, a third leaving early, the runner's RSS followed (acceptance 4).
"""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_server as ts  # noqa: E402
from test_server import SMOL, check, finish, runner_state, stream_lines, wait_idle  # noqa: E402

N_PARALLEL = 4
# 8 requests of different lengths (prompt and num_predict), so slots end
# at different steps and new ones join while others decode
PROMPTS = [
    ("Tell me about the sea.", 40),
    ("What is 2 + 2?", 8),
    ("Write a short poem about autumn leaves falling in the park.", 64),
    ("Name three colours.", 16),
    ("Explain what a compiler does, in simple words, for a child of ten years.", 48),
    ("Hi", 4),
    ("Describe a dragon guarding its gold in a cave high in the mountains.", 56),
    ("Why is the sky blue?", 24),
]


def make_smol_store():
    """A temporary store with smollm2 alone (test_server's has three models)."""
    d = tempfile.mkdtemp(prefix="wick-parallel-store-")
    mf = os.path.join(d, "smollm2.Modelfile")
    with open(mf, "w") as f:
        f.write(f"FROM {os.path.join(ts.CACHE, ts.SMOL_FIX['model'])}\n")
    subprocess.run([ts.WICK, "create", "smollm2", "-f", mf], env=dict(os.environ, WICK_MODELS=d),
                   check=True, capture_output=True)
    return d


def shut(s, store):
    """Kills the server s if it still runs and removes its store."""
    if s.proc.poll() is None:
        s.proc.kill()
        s.proc.wait()
    shutil.rmtree(store, True)


def generate(s, prompt, n):
    st, r = s.post("/api/generate", {"model": SMOL, "prompt": prompt, "options": {"temperature": 0, "num_predict": n}})
    return st, r


def at_once(s, calls, name="smollm2:latest", timeout=120):
    """Runs every call (a function of no arguments) in its own thread at
    once; returns their results and the most slots the runner of model
    name had active meanwhile."""
    results = [None] * len(calls)
    peak = [0]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], runner_state(s, name).get("active", 0))
            time.sleep(0.01)

    def one(i):
        results[i] = calls[i]()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(calls))]
    watcher = threading.Thread(target=watch)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    stop.set()
    watcher.join()
    return results, peak[0]


def test_same_as_alone(s):
    alone = [generate(s, p, n) for p, n in PROMPTS]
    check(all(st == 200 for st, _ in alone), "every request alone answers 200", str([st for st, _ in alone]))
    w = runner_state(s)
    check(w.get("n_parallel") == N_PARALLEL, f"WICK_NUM_PARALLEL={N_PARALLEL}: the runner has {N_PARALLEL} slots", str(w))
    results, peak = at_once(s, [lambda p=p, n=n: generate(s, p, n) for p, n in PROMPTS])
    for i, ((p, n), (st_a, a), r) in enumerate(zip(PROMPTS, alone, results)):
        ok = r is not None and r[0] == 200
        check(ok and r[1]["response"] == a["response"] and r[1]["eval_count"] == a["eval_count"],
              f"request {i} ({n} tokens) run 8 at once on 4 slots answers as it does alone",
              f"{r and r[1].get('response')!r} vs {a.get('response')!r}")
    check(peak >= 2, "the runner computed several requests at once (its active slots)", f"peak {peak}")
    check(wait_idle(s, 5.0) is not None and runner_state(s).get("active") == 0, "every slot free at the end",
          str(runner_state(s)))


def test_lookup(s):
    """Prompt lookup through the API: greedy requests whose answers copy their prompts, alone and
    two at once on the slots, answer exactly as with draft_max 0 (no lookup), and the final object
    counts the drafts (draft_count, draft_accepted_count, draft_rounds) only where lookup ran."""
    prompts = ["Repeat exactly: red, green, blue, red, green, blue, red, green, blue, red, green,",
               "def square(x):\n    return x * x\n\ndef square(x):\n    return x * x\n\ndef square(x):\n"]

    def gen(p, **opts):
        return s.post("/api/generate", {"model": SMOL, "prompt": p, "stream": False,
                                        "options": dict({"temperature": 0, "num_predict": 48}, **opts)})

    plain = [gen(p, draft_max=0) for p in prompts]
    look = [gen(p) for p in prompts]
    both, _ = at_once(s, [lambda p=p: gen(p) for p in prompts])
    for i, ((sp, a), (sl, b), r) in enumerate(zip(plain, look, both)):
        check(sp == 200 and sl == 200 and r is not None and r[0] == 200
              and a["response"] == b["response"] == r[1]["response"] and a["eval_count"] == b["eval_count"],
              f"lookup {i}: greedy with prompt lookup (alone and two at once) answers as with draft_max 0",
              f"{a.get('response')!r} / {b.get('response')!r} / {r and r[1].get('response')!r}")
        check("draft_count" not in a and b.get("draft_count", 0) > 0 and b.get("draft_rounds", 0) > 0
              and 0 < b.get("draft_accepted_count", 0) <= b["draft_count"],
              f"lookup {i}: the final object counts prompt lookup's drafts (none with draft_max 0)",
              str({k: v for k, v in b.items() if k.startswith("draft")}))


def test_seeded_and_chat(s):
    """Seeded sampling and streamed chat (the chat template, think routing
    off) through the slots: each answers as alone."""
    reqs = [("/api/generate", {"model": SMOL, "prompt": f"Tell me a story about {w}.",
                               "options": {"seed": 7 + i, "temperature": 0.9, "top_k": 40, "num_predict": 12 + 6 * i}})
            for i, w in enumerate(("a cat", "a ship", "the moon", "a robot"))]
    reqs += [("/api/chat", {"model": SMOL, "messages": [{"role": "user", "content": q}],
                            "options": {"temperature": 0, "num_predict": n}})
             for q, n in (("What is the capital of France?", 20), ("Count to five.", 30))]

    def text(r):
        return r.get("response", r.get("message", {}).get("content"))

    alone = [s.post(path, body) for path, body in reqs]
    results = [None] * len(reqs)

    def one(i):
        results[i] = s.post(*reqs[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(reqs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for i, ((path, body), (st_a, a), r) in enumerate(zip(reqs, alone, results)):
        check(st_a == 200 and r is not None and r[0] == 200 and text(r[1]) == text(a) and text(a),
              f"{path} request {i} ({'seeded' if 'seed' in body['options'] else 'greedy'}) at once answers as alone",
              f"{r and text(r[1])!r} vs {text(a)!r}")


def test_disconnect_frees_slot(s):
    long_req = {"model": SMOL, "prompt": "Write a very long story about a dragon.",
                "options": {"temperature": 0, "num_predict": 2000}}
    held = []
    for i in range(N_PARALLEL):  # every slot taken by a long stream
        c, r = stream_lines(s, "/api/generate", dict(long_req, prompt=f"Write a very long story about dragon {i}."))
        r.readline()
        held.append((c, r))
    w = runner_state(s)
    check(w.get("active") == N_PARALLEL and w.get("queued") == 0, "4 long streams hold the 4 slots", str(w))
    c, _ = held.pop(0)
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    t0 = time.time()
    st, g = generate(s, "Hi", 3)
    took = time.time() - t0
    w = runner_state(s)
    check(st == 200 and g.get("eval_count") == 3, "after one client left, a following request completes", str(g))
    check(w.get("busy") is True and took < 30, "it ran in the freed slot while the other streams go on",
          f"{took:.1f} s, {w}")
    for c, r in held:  # the others still stream
        line = json.loads(r.readline())
        check("response" in line and not line.get("done"), "a stream beside it goes on", str(line))
        c.sock.shutdown(socket.SHUT_RDWR)
        c.close()
    check(wait_idle(s, 2.0) is not None, "every client gone: the runner idle within 2 s", str(runner_state(s)))
    w = runner_state(s)
    check(w.get("active") == 0, "every slot free at the end", str(w))


def test_embed_beside_streams(s):
    """An embed request while every slot streams: it needs no slot, so it is
    answered while the streams go on (before, it waited for a slot to end,
    then held every stream until it was done), with the vectors it gets
    alone."""
    words = "the quick brown fox jumps over a lazy dog while seven wizards box".split()
    inputs = [" ".join(words[i % 5:i % 5 + 3 + i % 9]) for i in range(24)] + [" ".join(words * 8)]  # one past 64 tokens
    st, alone = s.post("/api/embed", {"model": SMOL, "input": inputs})
    check(st == 200 and len(alone.get("embeddings", [])) == len(inputs), "embed alone: 200", str(st))
    long_req = {"model": SMOL, "options": {"temperature": 0, "num_predict": 3000}}
    held, times = [], []
    for i in range(N_PARALLEL):  # every slot taken by a long stream
        c, r = stream_lines(s, "/api/generate", dict(long_req, prompt=f"Write a very long story about knight {i}."))
        r.readline()
        held.append((c, r))
        times.append([])

    def read(i):
        try:
            while True:
                line = held[i][1].readline()
                if not line:
                    return
                times[i].append(time.time())
        except Exception:  # the socket shut under it at the end
            return

    readers = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(N_PARALLEL)]
    for t in readers:
        t.start()
    check(runner_state(s).get("active") == N_PARALLEL, "4 long streams hold the 4 slots", str(runner_state(s)))
    t0 = time.time()
    st, r = s.post("/api/embed", {"model": SMOL, "input": inputs})
    t1 = time.time()
    streaming = sum(t.is_alive() for t in readers)
    check(streaming == N_PARALLEL, "the embed request was answered while all 4 streams went on (it took no slot)",
          f"{streaming} streams still open after {t1 - t0:.2f} s")
    check(st == 200 and r.get("embeddings") == alone["embeddings"],
          "embed while every slot streams: answered, the vectors it gets alone", str(st))
    during = [sum(t0 < t < t1 for t in ts_) for ts_ in times]
    print(f"  embed of {len(inputs)} inputs beside 4 streams: {t1 - t0:.2f} s, stream tokens meanwhile {during}")
    check(all(n >= 2 for n in during), "every stream got tokens while the embed request ran",
          f"{during} tokens in {t1 - t0:.2f} s")
    for c, _ in held:
        c.sock.shutdown(socket.SHUT_RDWR)
        c.close()
    check(wait_idle(s, 5.0) is not None and runner_state(s).get("active") == 0, "every slot free at the end",
          str(runner_state(s)))


def runner_rss_kib(s):
    """The resident set (KiB) of the server's runner processes, summed."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != s.proc.pid:
                continue
            with open(f"/proc/{pid}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration, ValueError, IndexError):
            pass
    return total


def test_random_disconnects(s, n_req=48, n_clients=12):
    """n_req streamed requests from n_clients clients at once, every third
    left after a few lines: every other one ends with done, and every slot
    is free at the end (issue 26's acceptance 4: small here, 1,000 from 32
    with --soak, which also follows the runner's RSS)."""
    import random
    rnd = random.Random(26)
    plan = [(i, rnd.randrange(1, 6) if i % 3 == 0 else None, rnd.randrange(4, 40)) for i in range(n_req)]
    lock = threading.Lock()
    errors = []
    done = [0]
    rss = []  # (requests done, runner RSS KiB)

    def client(items):
        for i, leave_after, n in items:
            body = {"model": SMOL, "prompt": f"Tell me fact number {i} about the ocean.",
                    "options": {"temperature": 0, "num_predict": n}}
            try:
                c, r = stream_lines(s, "/api/generate", dict(body, stream=True))
                lines = 0
                last = None
                while True:
                    raw = r.readline()
                    if not raw:
                        break
                    last = json.loads(raw)
                    lines += 1
                    if leave_after is not None and lines >= leave_after:
                        c.sock.shutdown(socket.SHUT_RDWR)
                        break
                c.close()
                if leave_after is None and not (last and last.get("done") and "error" not in last):
                    with lock:
                        errors.append((i, last))
            except Exception as e:  # noqa: BLE001 - any failure is the finding
                if leave_after is None:
                    with lock:
                        errors.append((i, repr(e)))
            with lock:
                done[0] += 1
                if done[0] % 50 == 0:
                    rss.append((done[0], runner_rss_kib(s)))

    threads = [threading.Thread(target=client, args=(plan[k::n_clients],)) for k in range(n_clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300 if n_req <= 48 else 3600)
    check(not errors, f"{n_req} requests from {n_clients} clients, a third leaving early: each that stays ends "
          "with done", str(errors[:3]))
    if n_req > 48:
        print(f"{n_req} requests from {n_clients} clients in {time.time() - t0:.0f} s; runner RSS (MiB) after "
              + ", ".join(f"{k}: {v / 1024:.1f}" for k, v in rss), flush=True)
        late = [v for k, v in rss if k >= n_req // 5]
        check(len(late) >= 2 and max(late) - min(late) < 8 * 1024,
              "the runner's RSS flat after the first fifth of the requests (within 8 MiB)", str(rss))
    check(wait_idle(s, 5.0) is not None and runner_state(s).get("active") == 0, "every slot free at the end",
          str(runner_state(s)))
    st, g = generate(s, "Hi", 3)
    check(st == 200 and g.get("eval_count") == 3, "the runner still answers", str(g))


# --full: acceptance 1 of issue 26 on any GGUF, 16 requests at once on 16
# slots, greedy and seeded alternately, of different prompt and answer lengths
FULL_TOPICS = ["the sea", "a lighthouse", "autumn leaves", "a compiler", "a dragon", "the moon", "bread",
               "a train journey", "chess", "the desert", "a violin", "volcanoes", "a library", "bees",
               "a snowstorm", "the first computer"]


def test_queued_past_idle_timeout():
    """A request that waits for a slot longer than the idle timeout
    (WICK_IDLE_TIMEOUT, 2 s here; 60 by default) is not idle: queued behind
    a stream of 4 s or more on one slot (its length from the decode rate
    measured first: a fixed 1500 tokens took 3.6 s once decode's attention
    read its keys contiguously, too close to the timeout to show anything),
    a streamed /api/chat, a streamed /v1/chat/completions and a
    non-streamed /api/generate each get their whole answer (before, the
    streamed ones were cut after their headers, with no error, once a slot
    freed). A connection that sends nothing is
    still closed after the timeout."""
    store = make_smol_store()
    saved = ts.STORE, os.environ.get("WICK_NUM_PARALLEL"), os.environ.get("WICK_IDLE_TIMEOUT")
    ts.STORE = store
    os.environ["WICK_NUM_PARALLEL"], os.environ["WICK_IDLE_TIMEOUT"] = "1", "2"
    s = ts.Server()
    threading.Thread(target=lambda: s.proc.stderr.read(), daemon=True).start()
    try:
        generate(s, "Hi", 1)  # loaded
        # the long stream's length: 4 s or more at this machine's decode rate (slower as its context
        # grows), within the 4096-token context (a floor of 1500 tokens took 15 s on a 2-core Zen 1)
        st, g = generate(s, "Write a very long story about a dragon.", 300)
        rate = g.get("eval_count", 0) / max(g.get("eval_duration", 1), 1) * 1e9 if st == 200 else 0
        n_long = int(min(max(4 * rate, 300), 3800))
        res = {}

        def long_stream():
            c, r = stream_lines(s, "/api/generate", {"model": SMOL, "prompt": "Write a very long story about a dragon.",
                                                     "options": {"temperature": 0, "num_predict": n_long}})
            lines = [json.loads(x) for x in r.read().splitlines() if x.strip()]
            res["long"] = lines[-1] if lines else {}
            c.close()

        def chat_stream():
            c, r = stream_lines(s, "/api/chat", {"model": SMOL, "messages": [{"role": "user", "content": "Hi"}],
                                                 "options": {"temperature": 0, "num_predict": 5}})
            body = r.read()
            res["chat"] = (r.status, [json.loads(x) for x in body.splitlines() if x.strip()])
            c.close()

        def oai_stream():
            c, r = stream_lines(s, "/v1/chat/completions", {"model": SMOL, "stream": True, "max_tokens": 5,
                                                            "temperature": 0,
                                                            "messages": [{"role": "user", "content": "Hi"}]})
            body = r.read().decode()
            res["oai"] = (r.status, body)
            c.close()

        def plain():
            res["plain"] = generate(s, "Why is the sky blue?", 5)

        first = threading.Thread(target=long_stream)
        t0 = time.time()
        first.start()
        while runner_state(s).get("active", 0) < 1 and time.time() - t0 < 30:
            time.sleep(0.02)
        others = [threading.Thread(target=f) for f in (chat_stream, oai_stream, plain)]
        for t in others:
            t.start()
        time.sleep(0.5)
        w = runner_state(s)
        check(w.get("queued", 0) == 3, "three requests queue behind the one slot", str(w))
        idle = socket.create_connection(("127.0.0.1", s.port), timeout=15)
        ti = time.time()
        try:
            closed = idle.recv(1) == b""
        except OSError:
            closed = False
        idle_s = time.time() - ti
        idle.close()
        check(closed and 1.5 < idle_s < 10, "a connection that sends nothing is closed after the idle timeout (2 s)",
              f"closed {closed} after {idle_s:.1f} s")
        first.join(120)
        for t in others:
            t.join(60)
        waited = time.time() - t0
        check(res.get("long", {}).get("eval_count") == n_long, f"the long stream ends whole ({n_long} tokens)",
              str(res.get("long")))
        check(waited > 3, "the queued requests waited past the idle timeout (2 s) by a second", f"{waited:.1f} s")
        st, lines = res.get("chat", (None, []))
        check(st == 200 and lines and lines[-1].get("done") is True and lines[-1].get("eval_count") == 5,
              "a streamed /api/chat queued past the idle timeout gets its whole answer", str((st, lines[-1:])))
        st, body = res.get("oai", (None, ""))
        check(st == 200 and body.rstrip().endswith("data: [DONE]") and '"length"' in body,
              "a streamed /v1/chat/completions queued past the idle timeout gets its whole answer", repr(body[-300:]))
        st, g = res.get("plain", (None, {}))
        check(st == 200 and g.get("eval_count") == 5,
              "a non-streamed /api/generate queued past the idle timeout gets its answer", str((st, g)))
        check(s.stop() == 0, "wick serve (WICK_IDLE_TIMEOUT=2) exits 0 on SIGTERM")
    finally:
        shut(s, store)
        ts.STORE = saved[0]
        for k, v in (("WICK_NUM_PARALLEL", saved[1]), ("WICK_IDLE_TIMEOUT", saved[2])):
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def full(gguf, name):
    """Each of 16 requests sent at once to a server with 16 slots answers
    exactly as it does alone (sent one after the other to the same server
    first): greedy and seeded sampling."""
    d = tempfile.mkdtemp(prefix="wick-parallel-full-")
    mf = os.path.join(d, "Modelfile")
    with open(mf, "w") as f:
        f.write(f"FROM {gguf}\n")
    subprocess.run([ts.WICK, "create", name, "-f", mf], env=dict(os.environ, WICK_MODELS=d), check=True,
                   capture_output=True)
    ts.STORE = d
    os.environ["WICK_NUM_PARALLEL"] = "16"
    reqs = []
    for i, topic in enumerate(FULL_TOPICS):
        opts = {"num_predict": 8 + (i * 7) % 41}
        opts.update({"seed": 100 + i, "temperature": 0.8, "top_k": 40, "top_p": 0.95} if i % 2 else {"temperature": 0})
        prompt = f"Tell me about {topic}." + " Answer in detail, with examples." * (i % 4)
        reqs.append({"model": name, "prompt": prompt, "options": opts})
    s = ts.Server()
    threading.Thread(target=lambda: s.proc.stderr.read(), daemon=True).start()
    try:
        t0 = time.time()
        alone = [s.post("/api/generate", r) for r in reqs]
        t1 = time.time()
        check(all(st == 200 for st, _ in alone), f"{name}: every request alone answers 200", str(alone)[:300])
        results, peak = at_once(s, [lambda r=r: s.post("/api/generate", r) for r in reqs], name + ":latest", 900)
        t2 = time.time()
        same = 0
        for i, ((st_a, a), r) in enumerate(zip(alone, results)):
            ok = r is not None and r[0] == 200 and r[1]["response"] == a["response"] and \
                r[1]["eval_count"] == a["eval_count"]
            same += ok
            check(ok, f"{name}: request {i} ({'seeded' if i % 2 else 'greedy'}, {a.get('eval_count')} tokens) "
                  "16 at once answers as alone", f"{r and r[1].get('response')!r} vs {a.get('response')!r}")
        n_tok = sum(a.get("eval_count", 0) for _, a in alone)
        print(f"{name}: {same}/16 identical; {n_tok} tokens: alone in turn {t1 - t0:.1f} s, 16 at once "
              f"{t2 - t1:.1f} s; at most {peak} slots active at once", flush=True)
        check(peak >= 8, f"{name}: the runner computed many requests at once", f"peak {peak}")
        check(s.stop() == 0, "wick serve exits 0 on SIGTERM")
    finally:
        shut(s, d)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--soak":  # --soak [REQUESTS] [CLIENTS] (not in CI: minutes)
        store = make_smol_store()
        ts.STORE = store
        os.environ.setdefault("WICK_NUM_PARALLEL", str(N_PARALLEL))
        s = ts.Server()
        # its log read as it comes, so a full pipe never blocks the server
        threading.Thread(target=lambda: s.proc.stderr.read(), daemon=True).start()
        try:
            test_random_disconnects(s, int(sys.argv[2]) if len(sys.argv) > 2 else 1000,
                                    int(sys.argv[3]) if len(sys.argv) > 3 else 32)
            check(s.stop() == 0, "wick serve exits 0 on SIGTERM")
        finally:
            if s.proc.poll() is None:
                s.proc.kill()
                s.proc.wait()
            shutil.rmtree(store, True)
        finish("parallel --soak")
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--full":  # --full GGUF [GGUF ...] (not in CI: minutes on Qwen)
        for i, g in enumerate(sys.argv[2:]):
            full(os.path.abspath(g), f"m{i}")
        finish("parallel --full")
        return
    store = make_smol_store()
    ts.STORE = store  # Server() takes this store instead of making test_server's
    os.environ["WICK_NUM_PARALLEL"] = str(N_PARALLEL)
    ts.WICK = os.environ.get("WICK_BIN", ts.WICK)  # an ASan build, say
    s = ts.Server()
    try:
        for t in (test_same_as_alone, test_lookup, test_seeded_and_chat, test_disconnect_frees_slot,
                  test_embed_beside_streams, test_random_disconnects):
            t0 = time.time()
            t(s)
            print(f"{t.__name__}: {time.time() - t0:.1f} s", flush=True)
        check(s.stop() == 0, "wick serve exits 0 on SIGTERM")
        log = s.proc.stderr.read().decode(errors="replace")
        check("Sanitizer" not in log and "runtime error:" not in log,
              "no sanitizer report from the server or its runners (an ASan build: WICK_BIN)", log[-3000:])
    finally:
        shut(s, store)
    t0 = time.time()
    test_queued_past_idle_timeout()
    print(f"test_queued_past_idle_timeout: {time.time() - t0:.1f} s", flush=True)
    finish("parallel")


if __name__ == "__main__":
    main()
