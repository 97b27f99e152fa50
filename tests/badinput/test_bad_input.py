#!/usr/bin/env python3
"""Bad input reaches the user as a clear error, never a crash.

Each broken model file (made by make_models.py) is given to `wick run`:
it must exit with status 1 and an error on stderr naming the file and the
problem. The valid tiny model must run. Command-line mistakes exit 2.
Every case runs against each wick binary given (the release build and,
when built, the AddressSanitizer + UBSan build, where any memory error
would show).

Usage: test_bad_input.py [WICK...]   (default: build/release/wick, and
build/asan/wick when present)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import make_models  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
failures = 0
checks = 0


def run(wick, args, stdin=b""):
    p = subprocess.run([wick] + args, input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def check(cond, what, detail=""):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print(f"FAIL {what}\n{detail}")


def sanitizer_clean(err):
    return "AddressSanitizer" not in err and "runtime error:" not in err and "LeakSanitizer" not in err


def make_folder(dst, src, edits):
    """A Hugging Face folder at dst: src's files linked, its config.json
    with edits ({"a.b": value} sets cfg["a"]["b"])."""
    os.makedirs(dst)
    for f in os.listdir(src):
        if f != "config.json":
            os.symlink(os.path.join(src, f), os.path.join(dst, f))
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    for key, value in edits.items():
        *outer, last = key.split(".")
        obj = cfg
        for k in outer:
            obj = obj[k]
        obj[last] = value
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f)


def main():
    wicks = sys.argv[1:] or [w for w in (os.path.join(ROOT, "build/release/wick"),
                                         os.path.join(ROOT, "build/asan/wick")) if os.path.exists(w)]
    tmp = tempfile.mkdtemp(prefix="wick-bad-")
    try:
        cases = make_models.cases()
        for name, data, _ in cases:
            if data is not None:
                with open(os.path.join(tmp, name), "wb") as f:
                    f.write(data)
        folders = make_models.folder_cases()
        for name, fixture, edits, _ in folders:
            make_folder(os.path.join(tmp, name), os.path.join(ROOT, "tests/golden", fixture), edits)
        for wick in wicks:
            tag = os.path.relpath(wick, ROOT)
            for name, _, _, expect in folders:
                path = os.path.join(tmp, name)
                rc, out, err = run(wick, ["run", path, "hi", "--num-predict", "3", "--temperature", "0"])
                detail = f"  [{tag}] rc={rc}\n  stderr: {err.strip()[:600]}"
                check(sanitizer_clean(err), f"{name}: sanitizer report", detail)
                check(rc == 1 and expect in err, f"{name}: exit status 1 and '{expect}'", detail)
            for name, _, expect in cases:
                path = os.path.join(tmp, name)
                rc, out, err = run(wick, ["run", path, "why is the sky blue?", "--num-predict", "3",
                                          "--temperature", "0"])
                detail = f"  [{tag}] rc={rc}\n  stderr: {err.strip()[:600]}"
                check(sanitizer_clean(err), f"{name}: sanitizer report", detail)
                if expect is None:
                    check(rc == 0, f"{name}: valid tiny model should run", detail)
                else:
                    check(rc == 1, f"{name}: exit status 1", detail)
                    check(path in err, f"{name}: message names the file", detail)
                    check(expect in err, f"{name}: message says '{expect}'", detail)
            valid = os.path.join(tmp, "valid.gguf")
            # a directory is not a model
            rc, _, err = run(wick, ["run", tmp, "hi"])
            check(rc == 1 and "is a directory" in err, "directory as model", err)
            # command-line mistakes
            rc, _, err = run(wick, ["run", valid, "hi", "--temperatur", "1"])
            check(rc == 2 and "unknown option '--temperatur'" in err, "unknown option", err)
            rc, _, err = run(wick, ["run", valid, "hi", "--temperature", "hot"])
            check(rc == 2 and "--temperature expects a number" in err and "'hot'" in err, "bad number", err)
            rc, _, err = run(wick, ["run", valid, "hi", "--threads"])
            check(rc == 2 and "--threads needs a value" in err, "missing value", err)
            # an option that takes a value given last, in every command (create, serve, the runner and
            # template once read past the end of argv: SIGSEGV)
            for args in (["create", "x", "-f"], ["create", "x", "--quantize"], ["create", "x", "--quantize-draft"],
                         ["serve", "--threads"], ["runner", "--socket", "s", "--model"], ["template", "--var"],
                         ["template", "--jinja"]):
                rc, _, err = run(wick, args)
                check(rc == 2 and f"{args[-1]} needs a value" in err and sanitizer_clean(err),
                      f"{' '.join(args)}: exit 2, the option named", f"rc={rc} {err[-300:]}")
            rc, _, err = run(wick, ["run"])
            check(rc == 2 and "missing MODEL" in err, "missing model", err)
            # two parts of wick show asked for at once (ollama show refuses them too)
            rc, out, err = run(wick, ["show", valid, "--modelfile", "--license"])
            check(rc == 2 and "only one of" in err and out == "", "wick show with two parts: exit 2", err)
            # a KV cache type wick does not have: exit 2 naming the variable read (as wick serve)
            for env, name in (({"OLLAMA_KV_CACHE_TYPE": "q4_0"}, "OLLAMA_KV_CACHE_TYPE is 'q4_0'"),
                              ({"OLLAMA_KV_CACHE_TYPE": "q8_0", "WICK_KV_CACHE_TYPE": "bogus"},
                               "WICK_KV_CACHE_TYPE is 'bogus'")):
                p = subprocess.run([wick, "run", valid, "hi"], capture_output=True, text=True, timeout=60,
                                   env=dict(os.environ, **env))
                check(p.returncode == 2 and name in p.stderr, f"wick run with {env}: exit 2 naming it", p.stderr)
            rc, _, err = run(wick, ["frobnicate"])
            check(rc == 2 and "unknown command 'frobnicate'" in err, "unknown command", err)
            # wick bench: option mistakes exit 2; a short run prints llama-bench-style JSON
            rc, _, err = run(wick, ["bench", valid, "-x"])
            check(rc == 2 and "unknown option '-x'" in err, "bench unknown option", err)
            rc, _, err = run(wick, ["bench", valid, "-p", "many"])
            check(rc == 2 and "-p expects an integer" in err and "'many'" in err, "bench bad number", err)
            rc, _, err = run(wick, ["bench", valid, "-r", "0"])
            check(rc == 2 and "-r expects an integer between 1" in err, "bench zero repetitions", err)
            rc, _, err = run(wick, ["bench", valid, "-n", "-3"])
            check(rc == 2 and "-n expects an integer" in err, "bench negative -n", err)
            rc, _, err = run(wick, ["bench", valid, "-t"])
            check(rc == 2 and "-t needs a value" in err, "bench missing value", err)
            rc, _, err = run(wick, ["bench", valid, "-p", "0", "-n", "0"])
            check(rc == 2 and "nothing to measure" in err, "bench -p 0 -n 0", err)
            rc, _, err = run(wick, ["bench"])
            check(rc == 2 and "missing MODEL" in err, "bench missing model", err)
            rc, _, err = run(wick, ["bench", os.path.join(tmp, "no-such.gguf")])
            check(rc == 1 and "no-such.gguf" in err, "bench missing file", err)
            rc, out, err = run(wick, ["bench", valid, "-p", "16", "-n", "4", "-r", "1", "--json"])
            check(rc == 0 and sanitizer_clean(err), "bench --json runs", err)
            try:
                res = json.loads(out)
            except ValueError:
                res = None
            check(isinstance(res, list) and len(res) == 2, "bench --json is an array of 2 tests", out)
            if isinstance(res, list) and len(res) == 2:
                fields = ("model", "n_threads", "n_prompt", "n_gen", "avg_ts", "stddev_ts",
                          "samples_ts", "peak_rss_bytes")
                check(all(f in r for r in res for f in fields), "bench --json fields", out)
                check([(r.get("n_prompt"), r.get("n_gen")) for r in res] == [(16, 0), (0, 4)],
                      "bench --json tests pp16 and tg4", out)
                check(all(len(r.get("samples_ts", [])) == 1 and r.get("avg_ts", 0) > 0 and
                          r.get("stddev_ts") == 0 and r.get("peak_rss_bytes", 0) > 0 and
                          r.get("n_threads", 0) >= 1 and r.get("model") == "valid.gguf" for r in res),
                      "bench --json values", out)
            rc, out, err = run(wick, ["bench", valid, "-p", "0", "-n", "2", "-r", "2", "-t", "1", "--json"])
            try:
                res = json.loads(out)
            except ValueError:
                res = None
            check(rc == 0 and isinstance(res, list) and len(res) == 1 and res[0]["n_gen"] == 2 and
                  res[0]["n_threads"] == 1 and len(res[0]["samples_ts"]) == 2, "bench -p 0 skips pp", out + err)
            # a prompt that does not fit is an error, not a silent cut
            rc, _, err = run(wick, ["run", valid, "hi " * 40, "--ctx-size", "16"])
            check(rc == 1 and "does not fit in the context of 16 tokens" in err, "prompt too long", err)
            # empty stdin and no prompt; an empty prompt
            rc, _, err = run(wick, ["run", valid], stdin=b"  \n")
            check(rc == 2 and "no prompt" in err, "empty stdin", err)
            check(sanitizer_clean(err), "sanitizer", err)
            rc, _, err = run(wick, ["run", valid, ""])
            check(rc == 2 and "the prompt is empty" in err, "empty prompt", err)
            # a NUL byte in the prompt on stdin
            rc, _, err = run(wick, ["run", valid], stdin=b"hello\0world")
            check(rc == 1 and "NUL byte" in err, "NUL in stdin", err)
            # stdin that cannot be read (a directory)
            d = os.open(tmp, os.O_RDONLY)
            try:
                p = subprocess.run([wick, "run", valid], stdin=d, capture_output=True, timeout=120)
            finally:
                os.close(d)
            check(p.returncode == 1 and b"cannot read the prompt from stdin" in p.stderr,
                  "directory as stdin", p.stderr.decode())
            # a prompt that starts with '-': an error with a hint, fine after --
            rc, _, err = run(wick, ["run", valid, "-5 degrees"])
            check(rc == 2 and "goes after --" in err, "dash prompt hint", err)
            rc, out, err = run(wick, ["run", valid, "--num-predict", "2", "--", "-5 degrees"])
            check(rc == 0, "dash prompt after --", err)
            # an answer that cannot be written is an error, not exit 0
            with open("/dev/full", "wb") as full:
                p = subprocess.run([wick, "run", valid, "hi", "--num-predict", "2"], stdout=full,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=120)
            check(p.returncode == 1 and b"cannot write the answer" in p.stderr, "stdout full",
                  p.stderr.decode())
            # a FIFO as the model file must not hang
            fifo = os.path.join(tmp, "model.fifo")
            if not os.path.exists(fifo):
                os.mkfifo(fifo)
            rc, _, err = run(wick, ["run", fifo, "hi"])
            check(rc == 1 and "not a regular file" in err, "FIFO as model", err)
            # wick show of a model that does not load fails with the loader's error (it once
            # printed "Template: unknown: ..." and exited 0, calling the invalid pooling "embedding")
            for name, want in (("pooling-type-99.gguf", "gemma3.pooling_type = 99 is not a pooling type"),
                               ("llama-rope-yarn.gguf", 'llama.rope.scaling.type = "yarn" is not supported')):
                rc, _, err = run(wick, ["show", os.path.join(tmp, name)])
                check(rc == 1 and want in err and sanitizer_clean(err), f"show {name}: exit 1 and the error",
                      f"rc={rc} {err[-300:]}")
            rc, out, err = run(wick, ["show", valid])
            check(rc == 0 and "  Capabilities\n    completion\n\n" in out, "show of the valid model: completion only",
                  out + err)
        # the real model cut short (when it has been fetched)
        cache = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")), "models")
        real = os.path.join(cache, "gemma-3-270m-q4_k_m.gguf")
        if os.path.exists(real):
            cut = os.path.join(tmp, "gemma3-cut.gguf")
            with open(real, "rb") as f, open(cut, "wb") as g:
                g.write(f.read(100 << 20))
            rc, _, err = run(wicks[0], ["run", cut, "hi"])
            check(rc == 1 and cut in err and "runs past the end of the file" in err,
                  "real model truncated to 100 MB", err)
    finally:
        shutil.rmtree(tmp)
    print(f"bad input: {checks} checks, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
