#!/usr/bin/env bash
# scripts/reference/make-minilm-gguf.sh - llama.cpp's own GGUF of
# all-MiniLM-L6-v2 (scripts/fetch-models minilm), F32, by the
# convert_hf_to_gguf.py of the llama-cpp-python 0.3.36 sdist, into the model
# cache beside the folder: $WICK_CACHE/models/all-MiniLM-L6-v2-f32.gguf.
# make golden then also runs test-embed on it (wick's "bert" GGUF loader and
# llama.cpp's BERT vocabulary against sentence-transformers), and
# bench/embed-compare.py gives it to llama-server.
#
#   scripts/reference/make-minilm-gguf.sh [PYTHON]   (a python with torch, transformers, numpy)
set -euo pipefail
CACHE=${WICK_CACHE:-$HOME/.cache/wick}
PY=${1:-$CACHE/grammar-anchors-venv/bin/python}
SDIST=$CACHE/llama-cpp-python/llama_cpp_python-0.3.36
if [ ! -f "$SDIST/vendor/llama.cpp/convert_hf_to_gguf.py" ]; then
    mkdir -p "$CACHE/llama-cpp-python"
    [ -f "$SDIST.tar.gz" ] || (cd "$CACHE/llama-cpp-python" && pip download --no-deps --no-binary :all: \
        "llama-cpp-python==0.3.36" -d .)
    tar -xzf "$SDIST.tar.gz" -C "$CACHE/llama-cpp-python"
fi
CONV=$SDIST/vendor/llama.cpp
OUT=$CACHE/models/all-MiniLM-L6-v2-f32.gguf
PYTHONPATH=$CONV/gguf-py "$PY" "$CONV/convert_hf_to_gguf.py" "$CACHE/models/all-MiniLM-L6-v2" \
    --outtype f32 --outfile "$OUT.tmp" >&2
mv -f "$OUT.tmp" "$OUT"
echo "$OUT"
