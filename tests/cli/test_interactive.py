#!/usr/bin/env python3
"""`wick run` as `ollama run`: the interactive chat's commands on a terminal
(a pty), and `wick run` talking to a running `wick serve`, on the real
SmolLM2-135M-Instruct.

In this process (OLLAMA_HOST and WICK_HOST name a port where nothing
listens, so no server answers):

* a `\"\"\"` multi-line message reaches the model whole: at temperature 0
  its answer equals the one-shot answer to the same two-line prompt;
* /set parameter sets options (num_predict 3: `eval count: 3` from /set
  verbose, the answer is at most 3 tokens by `wick tokenize` and starts
  the 12-token one-shot answer); a bad name or value is refused with the
  reason and the chat goes on;
* /set system, /show system, /show parameters, /show modelfile show the
  session; /save stores it (`wick show NAME --modelfile` has its SYSTEM,
  PARAMETERs and MESSAGEs) and a chat on the saved model starts by
  printing its messages; /load switches model (a missing one is refused,
  the chat goes on) and forgets the conversation; /clear; an unknown
  command; /? ; /bye exits 0;
* word wrap: on a 40-column terminal no answer line passes 35 columns and
  the words are the unwrapped answer's; --nowordwrap leaves it whole.

With a server (`wick serve` started here; OLLAMA_HOST and WICK_HOST
pointing at it):

* one-shot and interactive answers stream from the server (its /api/ps
  lists the model afterwards; the store's model was never loaded here:
  `wick run --local` is what loads it in-process) and, greedy, equal the
  in-process answers;
* /show, /set parameter, /save (through /api/create) and /load work
  against the server;
* Ctrl-C stops an answer and the chat goes on;
* a model the server lacks prints "Error: model 'nope' not found" and
  exits 1 (one-shot and interactive); a format the server refuses too.

Binary: $WICK_BIN or build/release/wick; the server's: $WICK_SERVE_BIN, else
the same. Exits 1 when a check fails.
"""
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import fcntl
import termios
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WICK = os.environ.get("WICK_BIN") or os.path.join(ROOT, "build", "release", "wick")
WICK_SERVE = os.environ.get("WICK_SERVE_BIN") or WICK
CACHE = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")), "models")
SMOL = os.path.join(CACHE, "SmolLM2-135M-Instruct.Q4_1.gguf")
MULTI = "Why is the sky\nblue?"
COUNT = "Count from one to twenty."

failures = 0
checks = 0


def check(cond, what, detail=""):
    global failures, checks
    checks += 1
    print(f"{'ok  ' if cond else 'FAIL'} {what}", flush=True)
    if not cond:
        failures += 1
        print(f"     {str(detail)[-1500:]}", flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(env, *args, stdin=b""):
    p = subprocess.run([WICK, *args], input=stdin, capture_output=True, env=env, timeout=120)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


class Chat:
    """`wick run ARGS` on a pty: send lines, read until a pattern."""

    def __init__(self, env, *args, cols=0):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(WICK, [WICK, "run", *args], env)
        if cols:
            fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
        self.out = b""

    def read_until(self, pattern, timeout=60):
        """The output from now until pattern (bytes regex) matches it, or
        the timeout passes; \\r removed."""
        buf = b""
        end = time.time() + timeout
        while time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if not r:
                continue
            try:
                chunk = os.read(self.fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            if re.search(pattern, buf.replace(b"\r", b"")):
                break
        self.out += buf
        return buf.replace(b"\r", b"").decode(errors="replace")

    def send(self, line, until=rb"\n>>> $", timeout=60):
        """Sends line; the output up to the next prompt, without the echoed
        line."""
        # a line written before libedit has the terminal in raw mode is
        # echoed twice (by the terminal, then by libedit): wait a moment,
        # and drop every echo
        time.sleep(0.05)
        os.write(self.fd, line.encode() + b"\r")
        text = self.read_until(until, timeout)
        echo = line + "\n"
        at = text.find(echo)
        while at >= 0:
            text = text[at + len(echo):]
            at = text.find(echo) if text.lstrip("> .").startswith(echo) else -1
        return text

    def read_all(self, timeout=60):
        """The output until the command exits (a one-shot run)."""
        text = self.read_until(rb"(?!x)x", timeout)
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        return text

    def bye(self):
        os.write(self.fd, b"/bye\r")
        end = time.time() + 30
        while time.time() < end:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
            try:
                os.read(self.fd, 4096)
            except OSError:
                pass
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return -1


def answer_of(text):
    """An answer's text from a chat's output: what precedes the blank line
    and the prompt."""
    return re.sub(r"\n*>>> $", "", text).strip()


def unwrap(text):
    """The lines a terminal shows for wrapped output: "ESC[nD ESC[K" moves
    back n columns and clears to the end of the line."""
    lines = [""]
    i = 0
    while i < len(text):
        m = re.match(r"\x1b\[(\d+)D\x1b\[K", text[i:])
        if m:
            lines[-1] = lines[-1][:-int(m.group(1))] if int(m.group(1)) else lines[-1]
            i += m.end()
        elif text[i] == "\n":
            lines.append("")
            i += 1
        else:
            lines[-1] += text[i]
            i += 1
    return lines


def test_in_process(env, d):
    rc, ref_multi, err = run(env, "run", "smol", MULTI, "--temperature", "0", "--num-predict", "12")
    check(rc == 0 and ref_multi.strip(), "one-shot reference answer", err)
    rc, ref_count, err = run(env, "run", "smol", COUNT, "--temperature", "0", "--num-predict", "12")
    check(rc == 0 and ref_count.strip(), "one-shot reference answer (count)", err)

    c = Chat(env, "smol")
    c.read_until(rb">>> $")
    out = c.send("/set parameter temperature 0")
    check("Set parameter 'temperature' to '0'" in out, "/set parameter temperature 0", out)
    out = c.send("/set parameter num_predict 12")
    check("Set parameter 'num_predict' to '12'" in out, "/set parameter num_predict 12", out)
    out = c.send("/set parameter bogus 1")
    check("Couldn't set parameter" in out and "unknown parameter 'bogus'" in out and out.endswith(">>> "),
          "/set parameter bogus 1: refused, the chat goes on", out)
    out = c.send("/set parameter top_p 2")
    check("Couldn't set parameter" in out and "top_p" in out and "between 0 and 1" in out,
          "/set parameter top_p 2: out of range", out)
    out = c.send("/set parameter top_k abc")
    check("Couldn't set parameter" in out and "invalid int value" in out, "/set parameter top_k abc: not a number", out)
    out = c.send('"""Why is the sky', until=rb"\.\.\. $")
    check(out.endswith("... "), '""" opens a multi-line message (continuation prompt)', out)
    out = c.send('blue?"""')
    check(answer_of(out) == ref_multi.strip(), '"""multi-line""" message: the greedy answer equals the one-shot one',
          f"{answer_of(out)!r} vs {ref_multi.strip()!r}")
    out = c.send("/clear")
    check("Cleared session context" in out, "/clear", out)
    c.send("/set parameter num_predict 3")
    c.send("/set verbose")
    out = c.send(COUNT)
    m = re.search(r"^eval count:\s+(\d+) token", out, re.M)
    check(m and int(m.group(1)) == 3, "/set parameter num_predict 3: eval count 3", out)
    ans3 = re.split(r"\ntotal duration:", out)[0].strip()
    ids = subprocess.run([WICK, "tokenize", SMOL, ans3], capture_output=True, text=True, env=env).stdout.split()
    check(0 < len(ids) <= 3 and ref_count.startswith(ans3), "the 3-token answer: at most 3 tokens, starts the 12-token one",
          f"{ans3!r} {ids} {ref_count!r}")
    c.send("/set quiet")
    out = c.send("/set system You are a pirate.")
    check("Set system message." in out, "/set system", out)
    out = c.send("/show system")
    check(out.startswith("You are a pirate.\n"), "/show system prints it", out)
    out = c.send("/show parameters")
    check("Model defined parameters:" in out and re.search(r"User defined parameters:\n(.*\n)*  num_predict +3\n", out)
          and re.search(r"\n  temperature +0\n", out), "/show parameters: the model's and the user's", out)
    out = c.send("/show modelfile")
    check("FROM smol\n" in out and "PARAMETER num_predict 3\n" in out and "PARAMETER temperature 0\n" in out
          and "SYSTEM You are a pirate.\n" in out, "/show modelfile: the session's parameters and system", out)
    out = c.send("/show template")
    check("im_start" in out, "/show template: the model's chat template", out[:300])
    out = c.send("/show bogus")
    check("Unknown command '/show bogus'" in out, "/show bogus: unknown", out)
    out = c.send("/save smol-saved")
    check("Created new model 'smol-saved'" in out, "/save smol-saved", out)
    out = c.send("/save bad!name")
    check("is invalid" in out, "/save with a bad name: refused", out)
    out = c.send("/foo")
    check("Unknown command '/foo'. Type /? for help" in out, "unknown command", out)
    out = c.send("/?")
    check("Available Commands:" in out and "/set" in out and '"""' in out, "/? lists the commands", out)
    out = c.send("/set format yaml")
    check("Invalid or missing format" in out, "/set format yaml: refused", out)
    out = c.send("/load nope")
    check("Couldn't find model 'nope'" in out, "/load of a missing model: refused", out)
    out = c.send("/show system")
    check(out.startswith("You are a pirate."), "after a failed /load the session is unchanged", out)
    out = c.send("/load smol2")
    check("Loading model 'smol2'" in out, "/load smol2", out)
    out = c.send("/show system")
    check(out.startswith("You speak French."), "/load: the new model's system, the session's forgotten", out)
    out = c.send("/show parameters")
    check(re.search(r"  num_predict +5\n", out) and "User defined parameters:" in out, "/load: the new model's parameters, the user's kept", out)
    check(c.bye() == 0, "/bye exits 0")

    rc, mf, err = run(env, "show", "smol-saved", "--modelfile")
    check(rc == 0 and "SYSTEM You are a pirate." in mf and "PARAMETER num_predict 3" in mf
          and "PARAMETER temperature 0" in mf and f"MESSAGE user {COUNT}" in mf and "MESSAGE assistant" in mf
          and "Why is the sky" not in mf, "wick show smol-saved --modelfile: system, parameters, the messages since /clear",
          mf + err)
    c = Chat(env, "smol-saved")
    out = c.read_until(rb">>> $")
    check(f">>> {COUNT}\n" in out, "a chat on the saved model prints its messages first", out)
    check(c.bye() == 0, "/bye exits 0 (saved model)")


def test_wordwrap(env):
    prompt = "Write a long paragraph about the ocean."
    args = ["smol", prompt, "--temperature", "0", "--num-predict", "60"]
    rc, plain, err = run(env, "run", *args)
    c = Chat(env, *args, cols=40)
    wrapped = c.read_all()
    lines = unwrap(wrapped.rstrip("\n"))
    check(all(len(l) <= 35 for l in lines) and len(lines) > 2, "word wrap: 40 columns, no line over 35",
          "\n".join(lines))
    check(" ".join(lines).split() == plain.split(), "word wrap: the same words as unwrapped", f"{lines} vs {plain!r}")
    c = Chat(env, *args, "--nowordwrap", cols=40)
    raw = c.read_all()
    check(raw.strip() == plain.strip(), "--nowordwrap: the answer as it comes", f"{raw!r} vs {plain!r}")


def test_host_parsing(env):
    """Where the client commands look for the server (`wick ps` names the
    URL it could not reach): Ollama's OLLAMA_HOST parsing; WICK_HOST wins
    over OLLAMA_HOST, as in `wick serve`."""
    cases = [("127.0.0.1:1", None, "http://127.0.0.1:1"), (":1", None, "http://127.0.0.1:1"),
             ("[::1]:1", None, "http://[::1]:1"), ("http://127.0.0.1:1/", None, "http://127.0.0.1:1"),
             ("0.0.0.0:1", None, "http://127.0.0.1:1"), ("  127.0.0.1:1 ", None, "http://127.0.0.1:1"),
             ("127.0.0.1:2", "127.0.0.1:1", "http://127.0.0.1:1"), ("", "127.0.0.1:1", "http://127.0.0.1:1")]
    for ollama, wick, want in cases:
        e = dict(env, OLLAMA_HOST=ollama, WICK_HOST=wick or "")
        rc, out, err = run(e, "ps")
        check(rc == 1 and f"server at {want} " in err, f"OLLAMA_HOST={ollama!r} WICK_HOST={wick!r}: {want}", err)


def api(host, path, body=None):
    req = urllib.request.Request(f"http://{host}{path}", data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def test_server(env, d):
    local = dict(env)
    rc, ref_multi, _ = run(local, "run", "smol", MULTI, "--temperature", "0", "--num-predict", "12")
    host = f"127.0.0.1:{free_port()}"
    env = dict(env, OLLAMA_HOST=host, WICK_HOST=host)
    log = open(os.path.join(d, "serve.log"), "w")
    srv = subprocess.Popen([WICK_SERVE, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                api(host, "/api/version")
                break
            except OSError:
                time.sleep(0.1)
        check(api(host, "/api/ps")["models"] == [], "the server starts with no model loaded")
        rc, out, err = run(env, "run", "smol", MULTI, "--temperature", "0", "--num-predict", "12")
        names = [m["name"] for m in api(host, "/api/ps")["models"]]
        check(rc == 0 and "smol:latest" in names, "one-shot through the server: /api/ps lists the model", f"{names} {err}")
        check(out == ref_multi, "one-shot through the server: the in-process greedy answer", f"{out!r} vs {ref_multi!r}")
        rc, out, err = run(env, "run", "smol", "--temperature", "0", "--num-predict", "12", stdin=MULTI.encode())
        check(rc == 0 and out == ref_multi, "piped stdin through the server: the same answer", f"{out!r} {err}")
        rc, out, err = run(env, "run", "smol", "Say hi.", "--temperature", "0", "--num-predict", "3", "--logprobs", "2")
        lines = [l for l in err.splitlines() if l.startswith("logprobs: ")]
        check(rc == 0 and len(lines) == 3 and all(l.count(", ") == 1 for l in lines),
              "--logprobs 2 through the server: a line per token, two alternatives", err)
        api(host, "/api/generate", {"model": "smol", "keep_alive": 0})
        rc, out, err = run(env, "run", "smol", MULTI, "--temperature", "0", "--num-predict", "12", "--local")
        names = [m["name"] for m in api(host, "/api/ps")["models"]]
        check(rc == 0 and out == ref_multi and names == [], "--local: in this process, the server not asked", names)
        rc, out, err = run(env, "run", "nope", "hi")
        check(rc == 1 and "Error: model 'nope' not found" in err, "one-shot, a model the server lacks: Error, exit 1", f"{rc} {err}")
        schema = os.path.join(d, "bad.json")
        json.dump({"type": "object", "patternProperties": {"x": {}}}, open(schema, "w"))
        rc, out, err = run(env, "run", "smol", "hi", "--format", schema)
        check(rc == 1 and err.startswith("Error: ") and "patternProperties" in err, "a 400 from the server: Error, exit 1", err)
        rc, out, err = run(env, "run", "smol", "hi", "--keepalive", "0", "--num-predict", "2")
        time.sleep(0.3)
        check(rc == 0 and api(host, "/api/ps")["models"] == [], "--keepalive 0: the server unloads the model after", err)

        c = Chat(env, "nope")
        out = c.read_until(rb"Error.*\n", timeout=30)
        _, status = os.waitpid(c.pid, 0)
        check("Error: model 'nope' not found" in out and os.WEXITSTATUS(status) == 1,
              "interactive, a model the server lacks: Error, exit 1", out)

        c = Chat(env, "smol")
        c.read_until(rb">>> $")
        c.send("/set parameter temperature 0")
        c.send("/set parameter num_predict 12")
        out = c.send("/set parameter bogus 1")
        check("unknown parameter 'bogus'" in out, "server: /set parameter bogus 1 refused", out)
        c.send('"""Why is the sky', until=rb"\.\.\. $")
        out = c.send('blue?"""')
        check(answer_of(out) == ref_multi.strip(), "server: the multi-line message's greedy answer",
              f"{answer_of(out)!r} vs {ref_multi.strip()!r}")
        c.send("/set system You are a pirate.")
        out = c.send("/show system")
        check(out.startswith("You are a pirate."), "server: /show system", out)
        out = c.send("/show parameters")
        check(re.search(r"  num_predict +12\n", out), "server: /show parameters", out)
        out = c.send("/show info")
        check("llama" in out and "Capabilities" in out, "server: /show info", out)
        out = c.send("/save smol-srv")
        check("Created new model 'smol-srv'" in out, "server: /save through /api/create", out)
        c.send("/set parameter num_predict 2000")
        os.write(c.fd, b"Write a very long story about a dragon.\r")
        c.read_until(rb"dragon\.\n.{40}", timeout=60)
        os.write(c.fd, b"\x03")
        out = c.read_until(rb"\n>>> $", timeout=30)
        check(out.endswith(">>> "), "server: Ctrl-C stops the answer, the chat goes on", out[-300:])
        c.send("/set parameter num_predict 3")
        out = c.send("Say hi.")
        check(len(answer_of(out)) > 0, "server: the next message is answered", out)
        # the runner computes one request at a time: had the stopped one
        # gone on, it would have generated its 2000 tokens before this answer
        gen = sum(m["wick"]["tokens_generated"] for m in api(host, "/api/ps")["models"])
        check(gen < 1000, f"server: Ctrl-C closed the request, the server stopped generating ({gen} tokens in all)")
        out = c.send("/load nope")
        check("Couldn't find model 'nope'" in out, "server: /load of a missing model", out)
        out = c.send("/load smol2")
        out = c.send("/show system")
        check(out.startswith("You speak French."), "server: /load smol2", out)
        check(c.bye() == 0, "server: /bye exits 0")
        rc, mf, err = run(env, "show", "smol-srv", "--modelfile")
        check("SYSTEM You are a pirate." in mf and "PARAMETER num_predict 12" in mf and f'MESSAGE user """{MULTI}"""' in mf,
              "server: the saved model's Modelfile", mf + err)
    finally:
        srv.send_signal(signal.SIGINT)
        try:
            srv.wait(timeout=20)
        except subprocess.TimeoutExpired:
            srv.kill()
        log.close()


def main():
    if not os.path.exists(SMOL):
        print(f"model missing: {SMOL} (run scripts/fetch-models)")
        return 1
    t0 = time.time()
    d = tempfile.mkdtemp(prefix="wick-interactive-")
    dead = f"127.0.0.1:{free_port()}"  # nothing listens there
    env = dict(os.environ, WICK_MODELS=os.path.join(d, "store"), OLLAMA_HOST=dead, WICK_HOST=dead)
    env.pop("WICK_RUN_LOCAL", None)
    try:
        with open(os.path.join(d, "Modelfile"), "w") as f:
            f.write(f"FROM {SMOL}\n")
        with open(os.path.join(d, "Modelfile2"), "w") as f:
            f.write("FROM smol\nSYSTEM You speak French.\nPARAMETER num_predict 5\n")
        for name, mf in (("smol", "Modelfile"), ("smol2", "Modelfile2")):
            rc, _, err = run(env, "create", name, "-f", os.path.join(d, mf))
            check(rc == 0, f"wick create {name}", err)
        for t, args in ((test_host_parsing, (env,)), (test_in_process, (env, d)), (test_wordwrap, (env,)),
                        (test_server, (env, d))):
            try:
                t(*args)
            except Exception as e:  # a dead server or command: a failure, and the next part still runs
                check(False, f"{t.__name__} ran to its end", repr(e))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print(f"interactive: {checks - failures}/{checks} checks passed in {time.time() - t0:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
