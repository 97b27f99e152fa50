"""Shared steps of the golden-fixture scripts (make-golden-*.py): greedy
reference decoding with transformers on a GGUF, and reference token ids of
the tricky strings with Hugging Face `tokenizers` (the tokenizer
transformers builds from the GGUF, given user text, so control-token text
stays text), with llama.cpp's ids recorded beside them where they differ."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from tricky_strings import tricky_strings  # noqa: E402

CACHE = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")), "models")


def greedy_cases(model, ll, hf_tok, cases, render, eos_ids, n_steps, through_eos=False):
    """For each (name, messages): the rendered prompt's ids (llama.cpp, with
    control tokens; must equal HF's), and n_steps greedy steps of the model,
    each the chosen id and the top-5 (id, logit); plus the first 20 tokens,
    up to the first end-of-generation token, decoded by HF's tokenizer.
    through_eos: keep decoding past end-of-generation tokens (the logits
    are untouched; generation is only told no token ends it), so every
    case has n_steps steps."""
    out = []
    for name, messages in cases:
        text = render(messages)
        ids = ll.tokenize(text.encode(), add_bos=False, special=True)
        hf_ids = hf_tok.encode(text, add_special_tokens=False)
        assert ids == hf_ids, (name, ids, hf_ids)
        stop = [-1] if through_eos else eos_ids
        x = torch.tensor([ids])
        with torch.no_grad():
            # an explicit all-ones mask: without one, generate() masks every
            # prompt token equal to pad_token_id (<|im_end|> in ChatML)
            gen = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=n_steps,
                                 do_sample=False, output_logits=True, return_dict_in_generate=True,
                                 eos_token_id=stop, pad_token_id=eos_ids[0])
        steps = []
        for lg in gen.logits:
            v, i = torch.topk(lg[0].float(), 5)
            steps.append({"id": int(i[0]), "top": [[int(a), round(float(b), 5)] for a, b in zip(i, v)]})
        first = [s["id"] for s in steps[:20]]
        for k, t in enumerate(first):
            if t in eos_ids:
                first = first[:k]
                break
        text20 = hf_tok.decode(first, skip_special_tokens=True)
        print(name, len(ids), "prompt tokens,", len(steps), "steps", file=sys.stderr)
        out.append({"name": name, "messages": messages, "prompt_ids": ids, "steps": steps,
                    "text_20": text20})
    return out


def tokenize_strings(ll, hf_tok):
    """HF's ids of each tricky string as user text (split_special_tokens);
    llama.cpp's beside them where they differ."""
    strings, n_disagree = [], 0
    for s in tricky_strings():
        ids = hf_tok.encode(s, add_special_tokens=False, split_special_tokens=True)
        entry = {"text": s, "ids": ids}
        ll_ids = ll.tokenize(s.encode(), add_bos=False, special=False)
        if ll_ids != ids:
            entry["llama_cpp_ids"] = ll_ids
            n_disagree += 1
        strings.append(entry)
    return strings, n_disagree
