#!/usr/bin/env bash
# scripts/reference/make-gemma4-vocab-gguf.sh - a vocabulary-only GGUF of
# the tiny Gemma 4 tokenizer (tests/golden/gemma4-llamacpp/vocab.gguf),
# written by llama.cpp's own converter (convert_hf_to_gguf.py --vocab-only
# and its gguf-py, from the llama-cpp-python 0.3.36 source package), so
# that wick reads tokenizer.ggml.model = "gemma4" as llama.cpp writes it.
#
# tests/golden/gemma4/dense.gguf, the converter's output for the dense
# folder as it is, has <start_of_turn> and <end_of_turn> as NORMAL tokens:
# the folder declares them only as special added tokens in tokenizer.json,
# and the converter marks CONTROL only transformers' all_special_ids. This
# file is converted from a copy of tests/golden/gemma4/dense whose
# tokenizer_config.json also lists them as extra_special_tokens (as a real
# chat model's does), so they are CONTROL here and the chat case can be
# checked; nothing else differs.
#
#     scripts/reference/make-gemma4-vocab-gguf.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=${WICK_CACHE:-$HOME/.cache/wick}
LCPP=${LCPP:-$CACHE/llama.cpp/src/llama_cpp_python-0.3.36/vendor/llama.cpp}
PY=${PYTHON:-$CACHE/grammar-anchors-venv/bin/python}
if [ ! -f "$LCPP/convert_hf_to_gguf.py" ]; then
    mkdir -p "$CACHE/llama.cpp/src"
    "$PY" -m pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$CACHE/llama.cpp/dl"
    tar -xzf "$CACHE/llama.cpp/dl/llama_cpp_python-0.3.36.tar.gz" -C "$CACHE/llama.cpp/src"
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cp -r tests/golden/gemma4/dense "$TMP/dense"
"$PY" - "$TMP/dense/tokenizer_config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["extra_special_tokens"] = ["<start_of_turn>", "<end_of_turn>"]
json.dump(c, open(p, "w"), indent=2)
PY
mkdir -p tests/golden/gemma4-llamacpp
PYTHONPATH="$LCPP/gguf-py" "$PY" "$LCPP/convert_hf_to_gguf.py" "$TMP/dense" --vocab-only \
    --outfile tests/golden/gemma4-llamacpp/vocab.gguf
