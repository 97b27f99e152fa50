#!/usr/bin/env python3
"""tests/template/make-go-expected.py - records what Go's text/template
renders for the cases of go_cases.py as Ollama applies a TEMPLATE: builds
goref_main.go (this directory) inside a Go module named goref whose
package template is Ollama's template/template.go and package api the
api/types.go types it decodes a chat into (Ollama at commit
fb30760996871fa9460115c753afd2c60d4ab0f7, with the String methods of its
open fix https://github.com/ollama/ollama/pull/18391; the go-ordered-map
it imports replaced by a small insertion-ordered map, so that it builds
with Go 1.19 and no downloads). That module is Ollama's code and stays out
of this repository: pass its folder as the first argument (default
$WICK_CACHE/goref, ~/.cache/wick/goref). Go 1.19 or later (Debian's
golang-go). Then writes go_expected.json: the Go version and, for each
case, a hash of its input and the output or the error Go gave.
test_gotemplates.py compares wick with the recording. Run it again after
changing a case.

Time-dependent output (currentDate, yesterdayDate) is not recorded: those
cases only record lengths; test_gotemplates.py checks the dates against
Python's clock."""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import go_cases  # noqa: E402


def case_hash(template, messages, tools):
    """The hash of a case's input, recorded to notice a stale recording."""
    blob = json.dumps([template, messages, tools], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def main():
    cache = os.environ.get("WICK_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "wick"))
    goref = sys.argv[1] if len(sys.argv) > 1 else os.path.join(cache, "goref")
    if not os.path.isdir(os.path.join(goref, "template")):
        sys.exit(f"make-go-expected: {goref}: not the goref module (see the docstring)")
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "goref")
        with open(os.path.join(HERE, "goref_main.go")) as f, open(os.path.join(goref, "main.go"), "w") as g:
            g.write(f.read())
        subprocess.run(["go", "build", "-o", exe, "."], cwd=goref, check=True,
                       env={**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off"})
        cases = [{"name": n, "template": t, "messages": m, "tools": tl} for n, t, m, tl in go_cases.CASES]
        if len({c["name"] for c in cases}) != len(cases):
            sys.exit("go_cases.py: two cases share a name")
        path = os.path.join(tmp, "cases.json")
        with open(path, "w") as f:
            json.dump(cases, f)
        got = json.loads(subprocess.run([exe, path], check=True, capture_output=True, text=True).stdout)
    out = {"go": got["go"], "generator": "tests/template/make-go-expected.py", "cases": {}}
    for c in cases:
        r = got["cases"][c["name"]]
        out["cases"][c["name"]] = {"hash": case_hash(c["template"], c["messages"], c["tools"]), **r}
    with open(os.path.join(HERE, "go_expected.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"go_expected.json: {len(cases)} cases recorded with {got['go']}")


if __name__ == "__main__":
    main()
