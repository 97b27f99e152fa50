#!/usr/bin/env python3
"""Reference embeddings of a decoder model, SmolLM2-135M-Instruct Q4_1
(scripts/fetch-models smollm2), from llama.cpp's own embedding path, for
tests/golden/test-decoder-embed.c and tests/server/test_embed.py:

  tests/golden/smollm2-embed/embeddings.json.xz  {"model", "source",
      "n_embd", "cases": [{"text", "ids", "last", "mean"?, "cls"?,
      "last_q8"}]}: 20 inputs (prose in several languages, code with
      newlines, numbers, emoji, control-token text, one of about 900
      tokens so that it spans two 512-row ubatches), the ids llama.cpp
      tokenized them to (add_special and parse_special, as llama-embedding
      and Ollama tokenize), and L2-normalized embeddings, as
      llama-embedding prints them (7 decimals):
        last   pooling last (what Ollama answers for a model whose GGUF has
               no pooling_type: the last token's final-normed hidden
               state), mean and cls for the first 8 inputs: llama.cpp on
               the Q4_1 file's weights dequantized to F32 (the same values;
               this script writes that copy with the gguf package), with an
               F32 KV cache: its forward without rounding activations;
        last_q8  pooling last, llama.cpp on the Q4_1 file itself, as it
               runs it by default: each matmul's activations rounded to
               Q8_1 (ggml's vec_dot_type for Q4_1), which costs about 3e-4
               of cosine against the unrounded forward (wick computes in
               f32 on CPUs without AVX-512 VNNI).

Each input runs in its own llama-embedding process (one sequence, as
Ollama's runner computes one), built from the llama-cpp-python sdist by
bench/compare --build-only (llama-bench and llama-embedding, cached in
~/.cache/wick/llama.cpp/bin). Needs the gguf and numpy packages (the API
test venv, ~/.cache/wick/api-venv, has them):
    bench/compare --build-only
    ~/.cache/wick/api-venv/bin/python scripts/reference/make-decoder-embed-fixture.py
"""
import json
import lzma
import os
import re
import subprocess
import sys
import tempfile

import gguf
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
CACHE = os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick"))
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
LLAMA_EMBEDDING = os.path.join(CACHE, "llama.cpp", "bin", "llama-embedding")
OUT = os.path.join(ROOT, "tests", "golden", "smollm2-embed", "embeddings.json.xz")
SEP = "\x1e"  # llama-embedding splits -p at this (default "\n", which the texts hold)

with open(os.path.join(HERE, "long_text.txt"), encoding="utf-8") as f:
    LONG = f.read().strip()

TEXTS = [
    "Why is the sky blue?",
    "The cat sits on the mat.",
    "Photosynthesis converts light into chemical energy in plants.",
    "How do I reset my password?",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "Le renard brun rapide saute par-dessus le chien paresseux.",
    "東京は日本の首都です。",
    "Москва — столица России.",
    "The quarterly revenue grew 12.5% to $4,310,000 in 2024.",
    "I love pizza 🍕 and tacos 🌮!",
    "<|im_start|>user\nHello<|im_end|>",
    "a",
    "   leading and trailing spaces   ",
    "SELECT name, count(*) FROM users GROUP BY name HAVING count(*) > 1;",
    "Quantum computers use qubits instead of bits.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "Mount Everest is the highest mountain on Earth.",
    "{\"key\": [1, 2, 3], \"nested\": {\"ok\": true}}",
    "The meeting is moved to Thursday at 3 pm; please bring the slides.",
    " ".join([LONG] * 3),  # about 900 tokens: more than one 512-row ubatch
]
WITH_MEAN_CLS = 8  # the first 8 inputs also get mean and cls pooling


def embed(model, text, pooling, extra=()):
    """(ids, vector) of one input: llama-embedding --pooling POOLING --embd-normalize 2."""
    assert SEP not in text
    cmd = [LLAMA_EMBEDDING, "-m", model, "--pooling", pooling, "--embd-normalize", "2",
           "--embd-output-format", "json", "--embd-separator", SEP, "--verbose-prompt",
           "-t", str(os.cpu_count() or 1), "-c", "4096", *extra, "-p", text]
    r = subprocess.run(cmd, capture_output=True, check=True)
    out = r.stdout.decode("utf-8", errors="replace")
    ids = [int(m.group(1)) for m in re.finditer(r"^\s*(\d+) -> '", out, re.M)]
    start = out.index('{\n  "object": "list"')
    data = json.loads(out[start:])["data"]
    assert len(data) == 1, len(data)
    return ids, data[0]["embedding"]


def write_f32_copy(src, dst):
    """src's metadata and tensors, every tensor dequantized to F32 (gguf.quants), into dst."""
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(dst, r.fields["general.architecture"].contents())
    for f in r.fields.values():
        if f.name == "general.architecture" or f.name.startswith("GGUF."):
            continue
        t = f.types[0]
        w.add_key_value(f.name, 0 if f.name == "general.file_type" else f.contents(), t,
                        sub_type=f.types[-1] if t == gguf.GGUFValueType.ARRAY else None)
    for t in r.tensors:
        a = np.array(t.data, dtype=np.float32) if t.tensor_type == gguf.GGMLQuantizationType.F32 \
            else gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        w.add_tensor(t.name, a.reshape([int(x) for x in reversed(t.shape)]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    if not os.path.exists(LLAMA_EMBEDDING):
        sys.exit(f"{LLAMA_EMBEDDING} is missing: run bench/compare --build-only")
    cases = []
    with tempfile.TemporaryDirectory(prefix="smollm2-f32-") as tmp:
        f32 = os.path.join(tmp, "smollm2-f32.gguf")
        write_f32_copy(MODEL, f32)
        kv = ("-ctk", "f32", "-ctv", "f32")
        for i, t in enumerate(TEXTS):
            ids, last = embed(f32, t, "last", kv)
            ids_q, last_q8 = embed(MODEL, t, "last")
            assert ids_q == ids
            c = {"text": t, "ids": ids, "last": last}
            if i < WITH_MEAN_CLS:
                ids_m, c["mean"] = embed(f32, t, "mean", kv)
                ids_c, c["cls"] = embed(f32, t, "cls", kv)
                assert ids_m == ids and ids_c == ids
            c["last_q8"] = last_q8
            cases.append(c)
            print(f"{i}: {len(ids)} tokens", file=sys.stderr)
    ver = open(os.path.join(CACHE, "llama.cpp", "bin", "VERSION")).read().strip()
    doc = {"model": os.path.basename(MODEL),
           "source": f"llama.cpp's llama-embedding (llama-cpp-python {ver} sdist), --embd-normalize 2, one input "
                     "per run; last/mean/cls on the weights dequantized to F32 with an F32 KV cache, last_q8 on "
                     "the Q4_1 file (activations rounded to Q8_1)",
           "n_embd": len(cases[0]["last"]), "cases": cases}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with lzma.open(OUT, "wt", encoding="utf-8", preset=9) as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
