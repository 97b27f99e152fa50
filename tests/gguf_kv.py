"""tests/gguf_kv.py - a GGUF file's metadata read per the GGUF spec (ggml's
docs/gguf.md) with the standard library, for tests that need a few keys:
the `gguf` package's reader builds an array per token string and took
15-37 s on Gemma 3's 262k-entry vocabulary on 2 cores."""
import struct

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def gguf_kv(path):
    """{key: value} of the GGUF at path: numbers and booleans as Python
    values, strings decoded as UTF-8, an array as its length."""
    out = {}
    with open(path, "rb") as f:
        def rd(fmt):
            return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

        def value(t):
            if t == 8:
                return f.read(rd("<Q")).decode("utf-8", "replace")
            if t == 9:
                et, n = rd("<I"), rd("<Q")
                if et in _SCALARS:
                    f.seek(n * struct.calcsize(_SCALARS[et]), 1)
                else:
                    for _ in range(n):
                        value(et)
                return n
            return rd(_SCALARS[t])
        if f.read(4) != b"GGUF" or rd("<I") < 2:
            raise ValueError(f"{path}: not a GGUF file of version 2 or later")
        rd("<Q")  # tensor count
        for _ in range(rd("<Q")):
            key = f.read(rd("<Q")).decode()
            out[key] = value(rd("<I"))
    return out
