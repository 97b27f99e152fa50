#!/usr/bin/env python3
"""Builds tests/golden/qwen2.5-coder-1.5b.json, the reference for wick's
golden test on Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF). Not run in CI;
rerun by hand:

    pip install torch transformers accelerate gguf jinja2 llama-cpp-python
    scripts/fetch-models qwen2.5-coder
    python3 scripts/reference/make-golden-qwen2.5.py

References (independent of wick):
  * prompts: the chat template stored in the GGUF, rendered with jinja2
    (its default system message included);
  * token ids: transformers' Qwen2Tokenizer class (Hugging Face
    `tokenizers`) built from the GGUF's vocabulary and merges, as
    make-tokenizer-reference.py does (NFC, Qwen's split; transformers' GGUF
    import drops the NFC step). Prompts: control tokens recognised, ids
    checked against llama.cpp's; tricky strings: user text, llama.cpp's ids
    recorded beside where they differ;
  * logits: transformers loading the same GGUF (weights dequantized to
    float32, the untied output.weight as lm_head, computed in float32),
    greedy, 64 steps per prompt (continuing past <|im_end|>), top-5 logits
    per step.
"""
import importlib.util
import json
import os
import sys

import gguf
import jinja2
import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(__file__))
from golden_common import CACHE, greedy_cases, tokenize_strings  # noqa: E402

GGUF = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "qwen2.5-coder-1.5b.json")
LONG_TEXT = open(os.path.join(os.path.dirname(__file__), "long_text.txt"), encoding="utf-8").read().strip()

CASES = [
    ("english", [{"role": "user", "content": "Why is the sky blue?"}]),
    ("code", [{"role": "user", "content": "Write a Python function that checks whether a number is prime."}]),
    ("chinese", [{"role": "user", "content": "为什么天空是蓝色的？请简单解释。"}]),
    ("long", [{"role": "user", "content": LONG_TEXT + "\n\nSummarize the story above in one sentence."}]),
    ("multiturn", [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "The capital of France is Paris."},
        {"role": "user", "content": "And what river flows through it?"},
    ]),
]


def reference_tokenizer(path):
    spec = importlib.util.spec_from_file_location(
        "mtr", os.path.join(os.path.dirname(__file__), "make-tokenizer-reference.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.qwen2_tokenizer(path)


def main():
    import llama_cpp

    path = os.path.join(CACHE, GGUF)
    r = gguf.GGUFReader(path)
    f = r.fields["tokenizer.chat_template"]
    template = jinja2.Environment().from_string(bytes(f.parts[f.data[0]]).decode())

    def render(messages):
        return template.render(messages=messages, add_generation_prompt=True)

    ll = llama_cpp.Llama(path, vocab_only=True, verbose=False)
    hf_tok = reference_tokenizer(path)
    model = AutoModelForCausalLM.from_pretrained(CACHE, gguf_file=GGUF, dtype=torch.float32)
    model.eval()
    # the GGUF's own output projection is lm_head, not the embeddings
    out = next(t for t in r.tensors if t.name == "output.weight")
    want = gguf.quants.dequantize(out.data, out.tensor_type).reshape(model.lm_head.weight.shape)
    assert np.array_equal(model.lm_head.weight.detach().numpy(), want.astype(np.float32))
    assert not torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)
    cases = greedy_cases(model, ll, hf_tok, CASES, render, [151645, 151643], 64, through_eos=True)
    strings, n_disagree = tokenize_strings(ll, hf_tok)
    fixture = {
        "model": GGUF,
        "sha256": SHA256,
        "reference": {
            "script": "scripts/reference/make-golden-qwen2.5.py",
            "logits": f"transformers {transformers.__version__}, torch {torch.__version__}, "
                      "float32, weights dequantized from the GGUF, greedy",
            "token_ids": "Hugging Face tokenizers (transformers' Qwen2Tokenizer from the GGUF's vocabulary); "
                         f"llama.cpp (llama-cpp-python {llama_cpp.__version__}) beside",
        },
        "cases": cases,
        "tokenize": strings,
    }
    with open(OUT, "w", encoding="utf-8") as o:
        json.dump(fixture, o, ensure_ascii=False, separators=(",", ":"))
        o.write("\n")
    print(f"wrote {OUT}: {len(cases)} cases, {len(strings)} strings "
          f"({n_disagree} where llama.cpp differs)", file=sys.stderr)


if __name__ == "__main__":
    main()
