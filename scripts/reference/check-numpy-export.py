#!/usr/bin/env python3
"""Compares two Hugging Face exports tensor by tensor, bit for bit: the
test suite's (scripts/export-safetensors-numpy) against the transformers
reference (scripts/export-safetensors). Standard library only.

    python3 scripts/reference/check-numpy-export.py DIR_A DIR_B
"""
import json
import struct
import sys


def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items()}


def main():
    a, b = (tensors(d + "/model.safetensors") for d in sys.argv[1:3])
    same = sum(1 for k in a if k in b and a[k] == b[k])
    diff = sorted(k for k in a if k in b and a[k] != b[k])
    print(f"{len(a)} vs {len(b)} tensors; {same} identical; differ: {diff[:5]}; only in one: "
          f"{sorted(set(a) ^ set(b))[:5]}")
    sys.exit(0 if same == len(a) == len(b) else 1)


if __name__ == "__main__":
    main()
