#!/usr/bin/env python3
"""tests/grammar/suite.py - the body of tests/grammar/run: compiles every
schema of the JSON-Schema-Test-Suite (draft2020-12) with wick, samples
texts from each grammar and validates them with Python's jsonschema."""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from jsonschema import Draft202012Validator


def reason(msg):
    """A short key for a refusal message, by keyword where it names one."""
    for pat in (r'keyword "([^"]+)"', r'(format) "', r'(\$ref) "', r'(oneOf) at', r'(allOf) at',
                r'^json schema: (pattern) at', r'(format with pattern)', r'(pattern with minLength)',
                r'(anyOf with oneOf)', r'(minItems over)', r'(matches nothing)'):
        m = re.search(pat, msg)
        if m:
            return m.group(1)
    return msg[:60]


# Schemas of wick's own beyond the suite: each keyword's edge cases, so the
# samples exercise bounds, patterns, keys and unions the suite touches lightly.
EXTRA = [
    {"type": "integer", "minimum": -17, "maximum": 1234},
    {"type": "integer", "exclusiveMinimum": 99, "exclusiveMaximum": 1001},
    {"type": "integer", "minimum": 7},
    {"type": "integer", "maximum": -42},
    {"type": "integer", "minimum": 1.5, "maximum": 2.5},
    {"type": "number", "minimum": 0, "maximum": 1},
    {"type": "number", "exclusiveMinimum": 0},
    {"type": "number", "exclusiveMinimum": -3, "exclusiveMaximum": 2},
    {"type": "number", "minimum": -2.5, "maximum": 3.75},
    {"type": "number", "exclusiveMaximum": -1},
    # fractional bounds with no whole number between (each reads as Python's float() reads it)
    {"type": "number", "minimum": 1.5, "maximum": 1.6},
    {"type": "number", "minimum": 0.1, "maximum": 0.9},
    {"type": "number", "exclusiveMinimum": 1.5, "exclusiveMaximum": 1.6},
    {"type": "number", "exclusiveMinimum": 0.1, "exclusiveMaximum": 0.30000000000000004},
    {"type": "number", "minimum": -1.6, "maximum": -1.5},
    {"type": "number", "exclusiveMinimum": -0.5, "exclusiveMaximum": 0.5},
    {"type": "number", "minimum": 1e-10, "maximum": 2e-10},
    {"type": "number", "minimum": 1e-20, "maximum": 2e-20},
    {"type": "number", "minimum": 9007199254740990, "maximum": 9007199254740993},
    {"type": "integer", "minimum": 9007199254740990, "exclusiveMaximum": 9007199254740993},
    {"type": "number", "minimum": 99999999999999990, "exclusiveMaximum": 1e17},
    {"type": "string", "minLength": 2, "maxLength": 5},
    {"type": "string", "pattern": "^[a-z]+-[0-9]{2,4}$"},
    {"type": "string", "pattern": "ab|^c\\d$|[^a-c]x"},
    {"type": "string", "pattern": "^(a*)*b$"},
    {"type": "string", "pattern": "^\\w+@\\S+\\.[A-Z]{2}$"},
    {"type": "string", "pattern": "^[\\\\\"\\n]+$"},
    {"type": "string", "pattern": "^.{3}$"},
    {"type": "string", "format": "date-time"},
    {"type": "string", "format": "date"},
    {"type": "string", "format": "time"},
    {"type": "string", "format": "uuid"},
    {"type": "string", "format": "email"},
    {"type": "string", "format": "ipv4"},
    {"type": "string", "format": "uri"},
    {"type": "string", "format": "json-pointer"},
    {"enum": ["a", 1, None, True, {"k": [1, 2]}, [], 2.5]},
    {"type": "string", "enum": ["a", 1, "b", None]},
    {"type": "integer", "minimum": 2, "enum": [1, 2, 3, 1.0, "x"]},
    {"const": {"a": "\u00e9\"\\"}},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
     "required": ["b"], "additionalProperties": {"type": "boolean"}},
    {"type": "object", "properties": {"ab": {}, "abc": {}, "b": {}}, "additionalProperties": {"type": "null"}},
    {"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": True, "maxProperties": 3},
    {"type": "object", "properties": {"p%d" % i: {"type": "integer"} for i in range(9)}},
    {"type": "object", "required": ["z", "y"]},
    {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False, "minItems": 1},
    {"type": "array", "prefixItems": [{"const": 1}], "items": {"type": "boolean"}, "minItems": 3, "maxItems": 5},
    {"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 2}, "minItems": 2},
    {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
    {"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind", "x"]},
               {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind"]}]},
    {"anyOf": [{"type": "integer", "maximum": 0}, {"type": "integer", "minimum": 100}], "maximum": 200},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "required": ["a"]},
               {"properties": {"a": {"maximum": 9}, "b": {"type": "string"}}, "required": ["b"]}]},
    {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
               "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}}, "required": ["v"]}},
     "$ref": "#/$defs/node"},
    {"type": ["string", "null", "boolean"], "minLength": 1},
    {"minLength": 3, "maximum": 5},
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", required=True)
    ap.add_argument("--sampler", required=True)
    ap.add_argument("--min", type=int, default=190, help="fail if fewer schemas compile (suite and extra)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--per-seed", type=int, default=10)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    schemas = []
    for path in sorted(glob.glob(os.path.join(args.suite, "*.json"))):
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            groups = json.load(f)
        for i, g in enumerate(groups):
            schemas.append((f"{name}#{i} {g['description']}", g["schema"]))
    for i, x in enumerate(EXTRA):
        schemas.append((f"wick-extra#{i}", x))
    t0 = time.time()
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for i, (_, s) in enumerate(schemas):
            f.write(json.dumps({"id": i, "schema": s}) + "\n")
        jsonl = f.name
    out = subprocess.run([args.sampler, "sample", jsonl, str(args.seeds), str(args.per_seed)],
                         capture_output=True, text=True, check=False)
    os.unlink(jsonl)
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        print(f"sampler exited with {out.returncode}")
        return 1
    results = [json.loads(line) for line in out.stdout.split("\n") if line.strip()]
    if len(results) != len(schemas):
        print(f"sampler answered {len(results)} of {len(schemas)} schemas (crashed?)\n{out.stderr[-2000:]}")
        return 1
    accepted = refused = texts = valid = unfinished = sample_errors = 0
    reasons = collections.Counter()
    bad = []
    for r in results:
        desc, schema = schemas[r["id"]]
        if not r["compiled"]:
            refused += 1
            reasons[reason(r["error"])] += 1
            if args.verbose:
                print(f"refused: {desc}: {r['error']}")
            continue
        accepted += 1
        unfinished += r["unfinished"]
        for e in r["sample_errors"]:
            sample_errors += 1
            bad.append((desc, schema, "<sampler>", e))
        validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        for text in r["samples"]:
            texts += 1
            try:
                value = json.loads(text)
            except ValueError as e:
                bad.append((desc, schema, text, f"not JSON: {e}"))
                continue
            errs = list(validator.iter_errors(value))
            if errs:
                bad.append((desc, schema, text, errs[0].message[:200]))
            else:
                valid += 1
    for desc, schema, text, why in bad[:20]:
        print(f"INVALID: {desc}\n  schema: {json.dumps(schema)[:300]}\n  text:   {text[:300]!r}\n  why:    {why}")
    print(f"schemas: {len(schemas)}, accepted {accepted}, refused {refused}")
    for k, n in reasons.most_common():
        print(f"  refused {n:4d}: {k}")
    print(f"texts: {texts} generated, {valid} valid, {texts - valid} invalid, "
          f"{unfinished} unfinished (length cap), {sample_errors} sampler errors")
    print(f"time: {time.time() - t0:.1f} s")
    failed = (texts - valid) + sample_errors
    print(f"{valid} passed, {failed} failed")
    if failed:
        print(f"FAIL: {failed} invalid texts or sampler errors")
        return 1
    if accepted < args.min:
        print(f"FAIL: {accepted} schemas accepted, fewer than --min {args.min}")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
