#!/usr/bin/env bash
# scripts/reference/make-gemma4-gguf.sh - the GGUF versions of the tiny
# Gemma 4 fixtures (tests/golden/gemma4/{dense,moe}.gguf), written by
# llama.cpp's own converter (convert_hf_to_gguf.py and its gguf-py, from
# the llama-cpp-python 0.3.36 source package that bench/compare unpacks
# into ~/.cache/wick/llama.cpp/src), F32: so wick's GGUF loader is tested
# against the keys and tensor names llama.cpp writes for Gemma 4
# (per-layer head_count_kv / feed_forward_length arrays, key_length_swa,
# rope_freqs.weight, ffn_gate_up_exps, ...), not against our own reading
# of them. The GGUFs carry no suppress_tokens (llama.cpp's converter
# writes none), so their greedy reference is greedy_without_suppress.
#
#     scripts/reference/make-gemma4-gguf.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=${WICK_CACHE:-$HOME/.cache/wick}
LCPP=$CACHE/llama.cpp/src/llama_cpp_python-0.3.36/vendor/llama.cpp
PY=${PYTHON:-/root/.pyenv/versions/3.11.7/bin/python3}
if [ ! -f "$LCPP/convert_hf_to_gguf.py" ]; then
    mkdir -p "$CACHE/llama.cpp/src"
    "$PY" -m pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$CACHE/llama.cpp/dl"
    tar -xzf "$CACHE/llama.cpp/dl/llama_cpp_python-0.3.36.tar.gz" -C "$CACHE/llama.cpp/src"
fi
for m in dense moe; do
    PYTHONPATH="$LCPP/gguf-py" "$PY" "$LCPP/convert_hf_to_gguf.py" "tests/golden/gemma4/$m" \
        --outtype f32 --outfile "tests/golden/gemma4/$m.gguf"
done
