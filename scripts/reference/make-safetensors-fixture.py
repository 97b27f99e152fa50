#!/usr/bin/env python3
"""Writes tests/unit/fixtures/tiny.safetensors with the reference library
(safetensors 0.8.0, torch 2.15.0), for test-safetensors.c: one tensor of
each dtype wick reads, a 0-dim scalar, a zero-size tensor and metadata.
Every value is exact in its dtype, so the C test compares them exactly:
element i of each non-scalar tensor is i - 2 (F32, F16, BF16, I8), i (U8)
or 4000000000 + i (U32); the scalar is 0.5.

    python3 scripts/reference/make-safetensors-fixture.py
"""
import pathlib

import torch
from safetensors.torch import save_file

out = pathlib.Path(__file__).resolve().parents[2] / "tests/unit/fixtures/tiny.safetensors"
ramp = torch.arange(6, dtype=torch.int64) - 2
tensors = {
    "f32": ramp.to(torch.float32).reshape(2, 3),
    "f16": ramp.to(torch.float16).reshape(3, 2),
    "bf16": ramp.to(torch.bfloat16).reshape(6),
    "i8": ramp.to(torch.int8).reshape(1, 2, 3),
    "u8": torch.arange(5, dtype=torch.uint8),
    "u32": (torch.arange(3, dtype=torch.int64) + 4000000000).to(torch.uint32),
    "scalar": torch.tensor(0.5, dtype=torch.float32),
    "empty": torch.zeros(0, 4, dtype=torch.float16),
}
save_file(tensors, str(out), metadata={"format": "pt", "note": "héllo"})
print(out, out.stat().st_size, "bytes")
