#!/usr/bin/env python3
"""Builds tests/golden/gemma3-270m.json, the reference wick's golden test
compares against. Not run in CI; rerun by hand when the cases change:

    pip install torch transformers accelerate gguf llama-cpp-python
    scripts/fetch-models gemma3
    python3 scripts/reference/make-golden-gemma3.py

References (independent of wick):
  * token ids: llama.cpp's tokenizer (llama-cpp-python, built from its
    source package) on the GGUF's own vocabulary. Chat prompts are rendered
    with Gemma 3's published chat template (below, as text) and tokenized
    with control tokens recognised; the tricky strings are tokenized as
    user text (special=False), so control-token look-alikes stay text.
    Hugging Face's GGUF-converted tokenizer is consulted too: the prompts'
    ids must agree with it, and where it disagrees on a tricky string the
    fixture records its ids beside llama.cpp's. One exception: llama.cpp
    retypes the user-defined piece "</s>" as a control token (a heuristic
    in its end-of-generation list, meant for another model), so for strings
    containing "</s>" the GGUF's own typing, which HF follows, is the
    reference and the entry says so.
  * logits: transformers loading the same GGUF (weights dequantized to
    float32, computed in float32), greedy decoding; per step the chosen id
    and the top-5 (id, logit).
"""
import json
import os
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, os.path.dirname(__file__))
from tricky_strings import tricky_strings  # noqa: E402

N_STEPS = 64
CACHE = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")), "models")
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

# Gemma 3's chat template as published with the model (tokenizer_config.json),
# text-only subset, rendered here with plain Python so it does not depend on
# wick's renderer.
def render_gemma3(messages):
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

    cases = []
    for name, messages in CASES:
        text = render_gemma3(messages)
        ids = ll.tokenize(text.encode(), add_bos=False, special=True)
        hf_ids = hf_tok.encode(text, add_special_tokens=False)
        assert ids == hf_ids, (name, ids, hf_ids)
        steps = []
        with torch.no_grad():
            out = model.generate(
                torch.tensor([ids]), max_new_tokens=N_STEPS, do_sample=False,
                output_logits=True, return_dict_in_generate=True,
                eos_token_id=[1, 106], pad_token_id=0,
            )
        for lg in out.logits:
            v, i = torch.topk(lg[0].float(), 5)
            steps.append({"id": int(i[0]),
                          "top": [[int(a), round(float(b), 5)] for a, b in zip(i, v)]})
        print(name, len(ids), "prompt tokens,", len(steps), "steps", file=sys.stderr)
        # the first 20 generated tokens as text, decoded by HF's tokenizer:
        # what `wick run --temperature 0 --num-predict 20` must print
        text20 = hf_tok.decode([st["id"] for st in steps[:20]], skip_special_tokens=True)
        cases.append({"name": name, "messages": messages, "prompt_ids": ids, "steps": steps,
                      "text_20": text20})

    strings = []
    n_disagree = 0
    for s in tricky_strings():
        ids = ll.tokenize(s.encode(), add_bos=False, special=False)
        entry = {"text": s, "ids": ids}
        hf_ids = hf_tok.encode(s, add_special_tokens=False)
        if "</s>" in s:
            entry = {"text": s, "ids": hf_ids, "llama_cpp_ids": ids,
                     "reference": "hf: llama.cpp retypes the user-defined piece </s> as control"}
        elif hf_ids != ids:
            entry["hf_ids"] = hf_ids
            n_disagree += 1
        strings.append(entry)

    fixture = {
        "model": GGUF,
        "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "reference": {
            "logits": f"transformers {transformers.__version__}, torch {torch.__version__}, "
                      "float32, weights dequantized from the GGUF, greedy",
            "token_ids": f"llama.cpp tokenizer via llama-cpp-python {llama_cpp.__version__}",
        },
        "steps_per_case": N_STEPS,
        "cases": cases,
        "tokenize": strings,
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: {len(cases)} cases, {len(strings)} strings "
          f"({n_disagree} where HF's GGUF tokenizer differs)", file=sys.stderr)


if __name__ == "__main__":
    main()
