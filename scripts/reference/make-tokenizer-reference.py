#!/usr/bin/env python3
"""Reference token ids of the parity corpus (tests/golden/tokenizer-corpus.jsonl.xz)
for the real models, from Hugging Face `tokenizers`; written to
tests/golden/tokenizer-ids-<model>.jsonl.xz, one line per document:
{"doc": [ids of the whole document], "lines": [[ids of each line], ...]}
(lines split at "\\n", without it). Text is user content: control-token text
stays text (split_special_tokens).

The tokenizer.json `tokenizers` loads is exported from the GGUF by
scripts/reference/gguf_to_tokenizer_json.py; this script first checks that
it gives the same ids as transformers' own GGUF import on every document
(with SmolLM2's Digits pre-tokenizer restored, see make-golden-smollm2.py).
It also counts where llama.cpp's tokenizer disagrees with `tokenizers` and
prints examples (for BENCHMARKS.md). Run by hand:

    pip install tokenizers transformers gguf llama-cpp-python
    python3 scripts/reference/make-tokenizer-reference.py [MODEL...]

For Qwen 2.5 the reference is transformers' Qwen2Tokenizer class built from
the GGUF's vocabulary and merges (NFC, Qwen's split, bytes), not
transformers' GGUF import, which drops the NFC step.
"""
import json
import lzma
import os
import sys
import tempfile

from tokenizers import Tokenizer, pre_tokenizers
from transformers import AutoTokenizer

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
from gguf_to_tokenizer_json import export  # noqa: E402
from golden_common import CACHE  # noqa: E402

GOLDEN = os.path.join(HERE, "..", "..", "tests", "golden")
MODELS = [("gemma3", "gemma-3-270m-q4_k_m.gguf"), ("smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
          ("qwen2.5-coder", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")]


def qwen2_tokenizer(path):
    """transformers' Qwen2Tokenizer from a GGUF's vocabulary and merges,
    with its control pieces as special added tokens and its user-defined
    pieces as plain added tokens (as Qwen's tokenizer.json has them)."""
    from tokenizers import AddedToken
    from transformers import Qwen2Tokenizer
    from gguf_to_tokenizer_json import read_gguf_metadata
    meta = read_gguf_metadata(path)
    tokens, types = meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.token_type"]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Qwen2Tokenizer(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]])
    tok.add_tokens([AddedToken(t, special=ty == 3, normalized=False) for t, ty in zip(tokens, types) if ty in (3, 4)])
    return tok


def main():
    import llama_cpp

    only = sys.argv[1:]  # model names to remake (default: all)

    with lzma.open(os.path.join(GOLDEN, "tokenizer-corpus.jsonl.xz"), "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    for name, gguf in MODELS:
        if only and name not in only:
            continue
        tmp = tempfile.mkdtemp()
        export(os.path.join(CACHE, gguf), tmp)
        tok = Tokenizer.from_file(os.path.join(tmp, "tokenizer.json"))
        tok.encode_special_tokens = True  # user content: control-token text stays text
        hf = AutoTokenizer.from_pretrained(CACHE, gguf_file=gguf)
        if name == "qwen2.5-coder":
            # transformers' GGUF import keeps Qwen's split but drops the NFC
            # normalizer its Qwen2Tokenizer class (Qwen's tokenizer.json) has:
            # the class itself, from the GGUF's vocabulary and merges
            hf = qwen2_tokenizer(os.path.join(CACHE, gguf))
        elif name == "smollm2":
            hf.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
                pre_tokenizers.Digits(individual_digits=True),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
        ll = llama_cpp.Llama(os.path.join(CACHE, gguf), vocab_only=True, verbose=False)
        out, n_ids, ll_docs, ll_lines, examples = [], 0, 0, 0, []
        for d in docs:
            text = d["text"]
            ids = tok.encode(text, add_special_tokens=False).ids
            ref = hf.encode(text, add_special_tokens=False, split_special_tokens=True)
            if ids != ref:
                sys.exit(f"{name}: the exported tokenizer.json differs from transformers' conversion on a {d['kind']} document")
            lines = [tok.encode(l, add_special_tokens=False).ids
                     for l in text.split("\n")]
            out.append({"doc": ids, "lines": lines})
            n_ids += len(ids)
            if ll.tokenize(text.encode(), add_bos=False, special=False) != ids:
                ll_docs += 1
                for l, lids in zip(text.split("\n"), lines):
                    if ll.tokenize(l.encode(), add_bos=False, special=False) != lids:
                        ll_lines += 1
                        if len(examples) < 6:
                            examples.append((d["kind"], l[:60]))
        path = os.path.join(GOLDEN, f"tokenizer-ids-{name}.jsonl.xz")
        with lzma.open(path, "wt", encoding="utf-8", preset=9) as f:
            for o in out:
                f.write(json.dumps(o, separators=(",", ":")) + "\n")
        print(f"{name}: {len(docs)} documents, {n_ids} tokens -> {path}; llama.cpp differs on "
              f"{ll_docs} documents, {ll_lines} lines, e.g. {examples}", file=sys.stderr)


if __name__ == "__main__":
    main()
