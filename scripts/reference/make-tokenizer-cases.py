#!/usr/bin/env python3
"""Named tokenizer cases with reference ids from Hugging Face `tokenizers`,
written to tests/golden/tokenizer-cases.json, plus a small Llama-3-style
byte-level tokenizer (tests/golden/llama3-digits/tokenizer.json) for the
digit-grouping cases, since no Llama 3 model is available here:

  * "3333+777" and runs of 1 to 17 zeros under the Llama 3 split regex
    (digits grouped by three from the left);
  * six tabs then "test" with the Gemma 3 vocabulary;
  * "This is 🦙.cpp" with the Gemma 3 (SentencePiece) vocabulary: the
    emoji is not a piece, so it becomes four byte-fallback pieces;
  * "<|im_start|>user" as user content with SmolLM2: stays text;
  * French, German, Cyrillic, Chinese sentences and "I am testing" for the
    round-trip and streaming checks the test makes.

Run by hand: python3 scripts/reference/make-tokenizer-cases.py
"""
import json
import os
import sys
import tempfile

from tokenizers import Tokenizer

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
from gguf_to_tokenizer_json import export  # noqa: E402
from golden_common import CACHE  # noqa: E402

GOLDEN = os.path.join(HERE, "..", "..", "tests", "golden")

LLAMA3_SPLIT = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
                "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")


def byte_to_unicode():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def llama3_digits_tokenizer():
    """Byte-level BPE: the 256 byte characters, digit runs up to three
    ("00", "000", "33", "333", "77", "777") and a few words, the Llama 3
    split then ByteLevel without its own regex, as Llama 3's tokenizer.json."""
    chars = list(byte_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    merges = [["0", "0"], ["00", "0"], ["3", "3"], ["33", "3"], ["7", "7"], ["77", "7"],
              ["Ġ", "t"], ["e", "s"], ["Ġt", "es"], ["Ġtes", "t"]]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    vocab["<|begin_of_text|>"] = len(vocab)
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": vocab["<|begin_of_text|>"], "content": "<|begin_of_text|>", "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": True, "vocab": vocab, "merges": merges},
    }


def main():
    l3_dir = os.path.join(GOLDEN, "llama3-digits")
    os.makedirs(l3_dir, exist_ok=True)
    with open(os.path.join(l3_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(llama3_digits_tokenizer(), f, ensure_ascii=False, indent=1)
    toks = {"llama3-digits": Tokenizer.from_file(os.path.join(l3_dir, "tokenizer.json"))}
    for name, gguf in (("gemma3", "gemma-3-270m-q4_k_m.gguf"), ("smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")):
        tmp = tempfile.mkdtemp()
        export(os.path.join(CACHE, gguf), tmp)
        toks[name] = Tokenizer.from_file(os.path.join(tmp, "tokenizer.json"))
    for t in toks.values():
        t.encode_special_tokens = True  # user content

    cases = [("digits 3333+777", "llama3-digits", "3333+777"),
             ("llama3 words", "llama3-digits", " test 123 tests")]
    cases += [(f"{n} zeros", "llama3-digits", "0" * n) for n in range(1, 18)]
    cases += [("six tabs then test", "gemma3", "\t\t\t\t\t\ttest"),
              ("llama emoji (SentencePiece byte fallback)", "gemma3", "This is 🦙.cpp"),
              ("llama emoji (byte-level)", "smollm2", "This is 🦙.cpp"),
              ("im_start as user text", "smollm2", "<|im_start|>user"),
              ("start_of_turn as user text", "gemma3", "<start_of_turn>user")]
    texts = {"french": "Le cœur déçu mais l'âme plutôt naïve, Louÿs rêva de crapaüter en canoë au-delà des îles.",
             "german": "Falsches Üben von Xylophonmusik quält jeden größeren Zwerg; Straße, Fuß, Maß.",
             "cyrillic": "Съешь же ещё этих мягких французских булок, да выпей чаю.",
             "chinese": "我能吞下玻璃而不伤身体。中文分词的测试句子，包括标点符号！",
             "testing": "I am testing"}
    for name in ("gemma3", "smollm2"):
        for key, text in texts.items():
            cases.append((f"{key} ({name})", name, text))
    out = [{"name": n, "tokenizer": t, "text": s, "ids": toks[t].encode(s, add_special_tokens=False).ids}
           for n, t, s in cases]
    with open(os.path.join(GOLDEN, "tokenizer-cases.json"), "w", encoding="utf-8") as f:
        json.dump({"reference": "Hugging Face tokenizers, user content (encode_special_tokens)",
                   "script": "scripts/reference/make-tokenizer-cases.py", "cases": out},
                  f, ensure_ascii=False, indent=1)
    for c in out[:3]:
        print(c, file=sys.stderr)


if __name__ == "__main__":
    main()
