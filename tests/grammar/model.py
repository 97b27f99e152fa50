#!/usr/bin/env python3
"""tests/grammar/model.py - structured output on a real model (issue 23,
acceptance 2): every JSON-Schema-Test-Suite schema wick accepts (as an Ollama
`format`), sampled from SmolLM2-135M-Instruct through `wick serve` at
temperature 1 with several seeds, and each answer validated by Python's
jsonschema (Draft202012Validator, with format checking). A schema wick
refuses must be a 400 naming the format's problem.

An answer cut by num_predict (done_reason "length") is unfinished: counted
and reported apart, not validated. Schemas that are not objects (true /
false) cannot be an Ollama format and are skipped. Exits non-zero when any
finished answer is invalid or a refusal is not a clear 400.

Usage (tests/grammar/run --model runs it in its virtual environment):
  model.py --suite DIR --wick build/release/wick --model SMOLLM2.gguf
           [--seeds 5] [--every 1] [--num-predict 256]
"""
import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from jsonschema import Draft202012Validator


def post(port, path, obj, timeout=300):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(obj).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", required=True)
    ap.add_argument("--wick", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--every", type=int, default=1, help="take every Nth schema")
    ap.add_argument("--num-predict", type=int, default=256)
    args = ap.parse_args()
    schemas = []
    for path in sorted(glob.glob(os.path.join(args.suite, "*.json"))):
        for i, g in enumerate(json.load(open(path, encoding="utf-8"))):
            schemas.append((f"{os.path.basename(path)}#{i} {g['description']}", g["schema"]))
    schemas = schemas[::args.every]
    store = tempfile.mkdtemp(prefix="wick-grammar-model-")
    mf = os.path.join(store, "Modelfile")
    open(mf, "w").write(f"FROM {args.model}\n")
    env = dict(os.environ, WICK_MODELS=store)
    subprocess.run([args.wick, "create", "m", "-f", mf], env=env, check=True, capture_output=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([args.wick, "serve"], env=dict(env, WICK_HOST=f"127.0.0.1:{port}"),
                            stderr=subprocess.DEVNULL)
    t0 = time.time()
    counts = dict(schemas=len(schemas), skipped=0, accepted=0, refused=0, answers=0, valid=0, invalid=0,
                  unfinished=0, tokens=0)
    bad = []
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        for desc, schema in schemas:
            if not isinstance(schema, dict):
                counts["skipped"] += 1
                continue
            validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
            prompt = "Write one JSON value that fits this JSON schema, and nothing else.\n" + json.dumps(schema)
            for seed in range(1, args.seeds + 1):
                st, r = post(port, "/api/chat", {
                    "model": "m", "stream": False, "format": schema,
                    "messages": [{"role": "user", "content": prompt}],
                    "options": {"temperature": 1, "seed": seed, "num_predict": args.num_predict}})
                if st != 200:
                    counts["refused"] += 1
                    why = r.get("error", "")
                    # a refusal must be a 400 naming the format's problem (or the body's: jansson takes no
                    # \u0000 in strings, so the suite's two NUL-character schemas are refused as invalid JSON)
                    if st != 400 or not ("format" in why or "\\u0000 is not allowed" in why):
                        bad.append((desc, schema, f"HTTP {st}", r.get("error", "")))
                    break
                if seed == 1:
                    counts["accepted"] += 1
                counts["answers"] += 1
                counts["tokens"] += r.get("eval_count", 0)
                text = r["message"]["content"]
                if r.get("done_reason") == "length":
                    counts["unfinished"] += 1
                    continue
                try:
                    errs = list(validator.iter_errors(json.loads(text)))
                    why = errs[0].message[:200] if errs else None
                except ValueError as e:
                    why = f"not JSON: {e}"
                if why:
                    counts["invalid"] += 1
                    bad.append((desc, schema, text, why))
                else:
                    counts["valid"] += 1
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        shutil.rmtree(store, ignore_errors=True)
    for desc, schema, text, why in bad[:20]:
        print(f"BAD: {desc}\n  schema: {json.dumps(schema)[:300]}\n  answer: {text[:300]!r}\n  why:    {why}")
    print("model: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + f"; {time.time() - t0:.0f} s")
    finished = counts["answers"] - counts["unfinished"]
    print(f"finished answers valid: {counts['valid']}/{finished}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
