#!/usr/bin/env python3
"""Builds tests/golden/smollm2-135m.json, the reference for wick's golden
test on SmolLM2-135M-Instruct (Q4_1 GGUF). Not run in CI; rerun by hand:

    pip install torch transformers accelerate gguf jinja2 llama-cpp-python
    scripts/fetch-models smollm2
    python3 scripts/reference/make-golden-smollm2.py

References (independent of wick):
  * prompts: the chat template stored in the GGUF, rendered with jinja2;
  * token ids: Hugging Face `tokenizers`, as transformers builds it from
    the GGUF, with one repair: transformers' GGUF import drops the Digits
    pre-tokenizer that tokenizer.ggml.pre = "smollm" stands for (SmolLM2's
    own tokenizer.json splits digits one by one before the byte-level
    split), so it is put back. Prompts: control tokens recognised, ids
    checked against llama.cpp's; tricky strings: user text, llama.cpp's ids
    recorded beside where they differ;
  * logits: transformers loading the same GGUF (dequantized, float32),
    greedy, 64 steps per prompt (continuing past <|im_end|>, which
    SmolLM2 reaches early on short answers), top-5 logits per step.
"""
import json
import os
import sys

import gguf
import jinja2
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, os.path.dirname(__file__))
from golden_common import CACHE, greedy_cases, tokenize_strings  # noqa: E402

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "smollm2-135m.json")

LONG_TEXT = open(os.path.join(os.path.dirname(__file__), "long_text.txt"), encoding="utf-8").read().strip()

CASES = [
    ("english", [{"role": "user", "content": "Why is the sky blue?"}]),
    ("code", [{"role": "user", "content": "Write a Python function that reverses a string."}]),
    ("french", [{"role": "user", "content": "Pourquoi le ciel est-il bleu ? Réponds en français."}]),
    ("long", [{"role": "user", "content": LONG_TEXT + "\n\nSummarize the story above in one sentence."}]),
    ("multiturn", [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "The capital of France is Paris."},
        {"role": "user", "content": "And what river flows through it?"},
    ]),
]


def main():
    import llama_cpp

    path = os.path.join(CACHE, GGUF)
    r = gguf.GGUFReader(path)
    f = r.fields["tokenizer.chat_template"]
    template = jinja2.Environment().from_string(bytes(f.parts[f.data[0]]).decode())

    def render(messages):
        return template.render(messages=messages, add_generation_prompt=True)

    ll = llama_cpp.Llama(path, vocab_only=True, verbose=False)
    hf_tok = AutoTokenizer.from_pretrained(CACHE, gguf_file=GGUF)
    from tokenizers import pre_tokenizers
    hf_tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    model = AutoModelForCausalLM.from_pretrained(CACHE, gguf_file=GGUF, dtype=torch.float32)
    model.eval()
    cases = greedy_cases(model, ll, hf_tok, CASES, render, [2, 0], 64, through_eos=True)
    strings, n_disagree = tokenize_strings(ll, hf_tok)
    fixture = {
        "model": GGUF,
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "reference": {
            "script": "scripts/reference/make-golden-smollm2.py",
            "logits": f"transformers {transformers.__version__}, torch {torch.__version__}, "
                      "float32, weights dequantized from the GGUF, greedy",
            "token_ids": "Hugging Face tokenizers (transformers' GGUF import, Digits restored); "
                         f"llama.cpp (llama-cpp-python {llama_cpp.__version__}) beside",
        },
        "cases": cases,
        "tokenize": strings,
    }
    with open(OUT, "w", encoding="utf-8") as out:
        json.dump(fixture, out, ensure_ascii=False, separators=(",", ":"))
        out.write("\n")
    print(f"wrote {OUT}: {len(cases)} cases, {len(strings)} strings "
          f"({n_disagree} where llama.cpp differs)", file=sys.stderr)


if __name__ == "__main__":
    main()
