#!/usr/bin/env python3
"""Makes tests/golden/bf16.json: transformers' greedy answers on the BF16
Hugging Face exports (scripts/export-safetensors, bit-identical to the
test suite's scripts/export-safetensors-numpy), the reference that wick's
safetensors import is held to (issue 7, point 1).

For each model and each single-turn prompt of the golden fixtures
(tests/golden/{gemma3-270m,smollm2-135m}.json): the prompt rendered by the
export's chat template (transformers' apply_chat_template), then 64 greedy
steps in float32 computed from the BF16 weights, stopping at the
tokenizer's end of turn as `wick run` does; the generated ids and their
text (decoded without special tokens).

    pip install torch transformers
    python3 scripts/reference/make-golden-bf16.py   # needs ~/.cache/wick/export/{gemma3,smollm2}
"""
import json
import os

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXPORT = os.path.join(os.environ.get("WICK_CACHE") or os.path.expanduser("~/.cache/wick"), "export")
MODELS = [("gemma3", "gemma3-270m.json"), ("smollm2", "smollm2-135m.json")]


def main():
    torch.set_num_threads(2)
    out = {"reference": f"transformers {__import__('transformers').__version__}, torch {torch.__version__}, "
                        "float32 compute from the BF16 export; scripts/reference/make-golden-bf16.py",
           "models": []}
    for name, fixture in MODELS:
        d = os.path.join(EXPORT, name)
        tok = AutoTokenizer.from_pretrained(d)
        model = AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.float32).eval()
        eos = set(model.generation_config.eos_token_id if isinstance(model.generation_config.eos_token_id, list)
                  else [model.generation_config.eos_token_id])
        eos.add(tok.convert_tokens_to_ids("<end_of_turn>" if name == "gemma3" else "<|im_end|>"))
        cases = []
        for c in json.load(open(os.path.join(ROOT, "tests", "golden", fixture)))["cases"]:
            if len(c["messages"]) != 1:
                continue
            ids = tok.apply_chat_template(c["messages"], add_generation_prompt=True, return_dict=False)
            if hasattr(ids, "input_ids"):
                ids = ids["input_ids"]
            x = torch.tensor([ids])
            gen = []
            with torch.no_grad():
                past = None
                for _ in range(64):
                    o = model(x if past is None else x[:, -1:], past_key_values=past, use_cache=True)
                    past = o.past_key_values
                    nxt = int(o.logits[0, -1].argmax())
                    if nxt in eos:
                        break
                    gen.append(nxt)
                    x = torch.cat([x, torch.tensor([[nxt]])], dim=1)
            cases.append({"name": c["name"], "messages": c["messages"], "prompt_ids": list(ids),
                          "ids": gen, "text": tok.decode(gen, skip_special_tokens=True)})
            print(name, c["name"], len(gen), repr(cases[-1]["text"][:60]), flush=True)
        out["models"].append({"model": name, "cases": cases})
    with open(os.path.join(ROOT, "tests", "golden", "bf16.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
