#!/usr/bin/env python3
"""Writes the fuzz seed corpus (tests/fuzz/corpus/gguf/): small valid
GGUF files of different shapes, so the fuzzer starts from inputs that
reach deep into the parser, the model loader and the tokenizer."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "badinput"))
import make_models as mm  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "corpus", "gguf")


def header_only():
    return b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + mm.kv("general.architecture", mm.T_STRING, "gemma3") + \
        mm.kv_array("a", mm.T_F32, [1.0, 2.0])


def main():
    os.makedirs(OUT, exist_ok=True)
    files = {"header-only.gguf": header_only()}
    mm.E, mm.L, mm.H, mm.HKV, mm.D, mm.F = 8, 1, 2, 1, 4, 16
    files["tiny-gemma3.gguf"] = mm.build()
    files["tiny-gemma3-v2-align64.gguf"] = mm.build(version=2, alignment=64)
    files["tiny-no-tokenizer.gguf"] = mm.build(drop_kv=("tokenizer.ggml.tokens",))
    for name, data in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        print(name, len(data))


if __name__ == "__main__":
    main()
