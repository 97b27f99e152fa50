"""tests/exports.py - the real models exported to Hugging Face safetensors
in BF16 (scripts/export-safetensors-numpy, bit-identical to transformers'
export), made once and cached in ~/.cache/wick/export-np/<model> for the
tests that use them (tests/store and tests/speculative): the export takes
~45 s for Gemma 3 on 2 cores. An interrupted export is never used (the script writes OUT.tmp-<pid> and renames it); the tests
only read the folder."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick"))


def export(model):
    """The cached BF16 safetensors folder of `model` ("gemma3" or "smollm2"),
    exported first if missing; raises CalledProcessError if the export fails."""
    out = os.path.join(CACHE, "export-np", model)
    if not os.path.exists(os.path.join(out, "config.json")):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "export-safetensors-numpy"), model, out],
                       check=True)
    return out
