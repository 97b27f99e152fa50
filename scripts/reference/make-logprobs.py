#!/usr/bin/env python3
"""Reference log-probabilities at the first generated position, for the
logprobs test (tests/golden/test-logprobs.c): transformers loading each
GGUF (weights dequantized, float32), the prompt ids of three cases of the
golden fixtures, log_softmax of the last position's logits: the 20 most
likely tokens with their log-probabilities, and log(sum(exp)) of the row
(to check normalisation).

Usage: python3 scripts/reference/make-logprobs.py   (writes tests/golden/logprobs.json)
"""
import json
import os
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(__file__))
from golden_common import CACHE  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODELS = [("gemma3-270m.json", ["english", "code", "japanese"]),
          ("smollm2-135m.json", ["english", "code", "french"])]


def main():
    out = {"reference": f"transformers {transformers.__version__}, torch {torch.__version__}, "
                        f"float32 from the dequantized GGUF; scripts/reference/make-logprobs.py",
           "models": []}
    for fixture_name, names in MODELS:
        fx = json.load(open(os.path.join(ROOT, "tests", "golden", fixture_name), encoding="utf-8"))
        model = AutoModelForCausalLM.from_pretrained(CACHE, gguf_file=fx["model"], dtype=torch.float32)
        model.eval()
        cases = []
        for c in fx["cases"]:
            if c["name"] not in names:
                continue
            ids = torch.tensor([c["prompt_ids"]])
            with torch.no_grad():
                lg = model(ids).logits[0, -1].float()
            lp = torch.log_softmax(lg.double(), dim=-1)
            v, i = torch.topk(lp, 20)
            cases.append({"name": c["name"], "prompt_ids": c["prompt_ids"],
                          "top": [[int(a), round(float(b), 6)] for a, b in zip(i, v)],
                          "sum_exp": float(torch.exp(lp).sum())})
        out["models"].append({"model": fx["model"], "cases": cases})
        del model
    with open(os.path.join(ROOT, "tests", "golden", "logprobs.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
