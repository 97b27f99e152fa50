#!/usr/bin/env python3
"""Builds tests/golden/gemma3-270m.json, the reference wick's golden test
compares against on Gemma 3 270M (Q4_K_M GGUF). Not run in CI; rerun by
hand when the cases change:

    pip install torch transformers accelerate gguf llama-cpp-python
    scripts/fetch-models gemma3
    python3 scripts/reference/make-golden-gemma3.py

References (independent of wick):
  * prompts: Gemma 3's published chat template (below, as Python, since
    the GGUF carries none);
  * token ids: Hugging Face `tokenizers` as transformers builds it from the
    GGUF. Prompts: control tokens recognised, ids checked against llama.cpp
    (llama-cpp-python, built from its source package). Tricky strings: user
    text (split_special_tokens), so control-token look-alikes stay text;
    llama.cpp's ids recorded beside where they differ (runs of 32 or more
    spaces, which llama.cpp splits 31 + 1 and tokenizers 16 + 16; "</s>",
    which llama.cpp retypes as a control token);
  * logits: transformers loading the same GGUF (weights dequantized to
    float32, computed in float32), greedy, 64 steps; per step the chosen
    id and the top-5 (id, logit).
"""
import json
import os
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, os.path.dirname(__file__))
from golden_common import CACHE, greedy_cases, tokenize_strings  # noqa: E402

GGUF = "gemma-3-270m-q4_k_m.gguf"
OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "gemma3-270m.json")
LONG_TEXT = open(os.path.join(os.path.dirname(__file__), "long_text.txt"), encoding="utf-8").read().strip()

CASES = [
    ("english", [{"role": "user", "content": "Why is the sky blue?"}]),
    ("code", [{"role": "user", "content": "Write a Python function that checks whether a number is prime."}]),
    ("russian", [{"role": "user", "content": "Объясни, почему небо голубое."}]),
    ("japanese", [{"role": "user", "content": "日本の首都はどこですか？簡単に説明してください。"}]),
    ("long", [{"role": "user", "content": LONG_TEXT + "\n\nSummarize the story above in one sentence."}]),
    # longer than the 512-token sliding window, so the window's mask is tested
    ("window", [{"role": "user", "content": LONG_TEXT + "\n\n" + LONG_TEXT.replace("Tomas", "Maria")
                 + "\n\nThe two stories above differ in one name. Which one?"}]),
    ("multiturn", [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "The capital of France is Paris."},
        {"role": "user", "content": "And what river flows through it?"},
    ]),
]


def render_gemma3(messages):
    """Gemma 3's chat template (tokenizer_config.json), text-only subset."""
    out = "<bos>"
    first_user_prefix = ""
    loop = messages
    if messages and messages[0]["role"] == "system":
        first_user_prefix = messages[0]["content"] + "\n\n"
        loop = messages[1:]
    for i, m in enumerate(loop):
        if (m["role"] == "user") != (i % 2 == 0):
            raise ValueError("roles must alternate")
        role = "model" if m["role"] == "assistant" else m["role"]
        out += "<start_of_turn>" + role + "\n" + (first_user_prefix if i == 0 else "")
        out += m["content"].strip() + "<end_of_turn>\n"
    return out + "<start_of_turn>model\n"


def main():
    import llama_cpp

    path = os.path.join(CACHE, GGUF)
    ll = llama_cpp.Llama(path, vocab_only=True, verbose=False)
    hf_tok = AutoTokenizer.from_pretrained(CACHE, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(CACHE, gguf_file=GGUF, dtype=torch.float32)
    model.eval()
    cases = greedy_cases(model, ll, hf_tok, CASES, render_gemma3, [1, 106], 64)
    strings, n_disagree = tokenize_strings(ll, hf_tok)
    fixture = {
        "model": GGUF,
        "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "reference": {
            "script": "scripts/reference/make-golden-gemma3.py",
            "logits": f"transformers {transformers.__version__}, torch {torch.__version__}, "
                      "float32, weights dequantized from the GGUF, greedy",
            "token_ids": "Hugging Face tokenizers (transformers' GGUF import); "
                         f"llama.cpp (llama-cpp-python {llama_cpp.__version__}) beside",
        },
        "cases": cases,
        "tokenize": strings,
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: {len(cases)} cases, {len(strings)} strings "
          f"({n_disagree} where llama.cpp differs)", file=sys.stderr)


if __name__ == "__main__":
    main()
