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
    round-trip and streaming checks the test makes;
  * Unicode normalization: tests/golden/qwen3-nfc/tokenizer.json is the tiny
    Qwen 3 tokenizer of tests/golden/qwen3/hf with normalizer NFC, as real
    Qwen 3 tokenizer.json files have (plus merges for a few composed
    characters, so that a composed é, Å, 가, 각 becomes one token); named
    cases on text NFC changes (decomposed accents, Hangul jamo, singletons
    such as U+212B, combining marks to reorder, marks beside added tokens,
    with and without special-token parsing), the same tokenizer with NFD,
    NFKC, NFKD and a Sequence in its place (the "variants": only the
    normalizer differs), and in "bulk" the tricky strings
    (tricky_strings.py) as they are and in NFD and NFKD, for each of them
    (the ASCII ones for NFC only).

Cases with "special": true are encoded with special tokens parsed (template
scaffolding, encode_special_tokens False); the others as user content.

Run by hand: python3 scripts/reference/make-tokenizer-cases.py
"""
import copy
import json
import os
import sys
import tempfile
import unicodedata

from tokenizers import Tokenizer

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
from gguf_to_tokenizer_json import export  # noqa: E402
from golden_common import CACHE  # noqa: E402
from tricky_strings import tricky_strings  # noqa: E402

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


# The variants of the NFC tokenizer: only the normalizer differs.
NORMALIZERS = {
    "qwen3-nfc": {"type": "NFC"},
    "qwen3-nfd": {"type": "NFD"},
    "qwen3-nfkc": {"type": "NFKC"},
    "qwen3-nfkd": {"type": "NFKD"},
    "qwen3-nfkd-nfc": {"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "NFC"}]},
}

# Text that normalization changes: (name, text, special).
NFC_TEXTS = [
    ("e + U+0301", "e\u0301", False),
    ("composed e-acute", "\u00e9", False),
    ("Cafe + U+0301 vs Cafe-acute", "Cafe\u0301 and Caf\u00e9", False),
    ("A + ring", "A\u030angstro\u0308m", False),
    ("Angstrom sign U+212B", "\u212b = 1e-10 m", False),
    ("Hangul jamo L V", "\u1100\u1161", False),
    ("Hangul jamo L V T", "\u1100\u1161\u11a8", False),
    ("Hangul jamo word", "\u1112\u1161\u11ab\u1100\u1173\u11af \ud55c\uae00", False),
    ("Hangul syllable + T jamo", "\uac00\u11a8", False),
    ("composed Hangul", "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8", False),
    ("mixed scripts decomposed", "nai\u0308ve \u03b1\u0301 Vie\u0323\u0302t \u0438\u0306 \u304b\u3099 \u1ea0", False),
    ("mixed scripts composed", "na\u00efve \u03ac Vi\u1ec7t \u0439 \u304c \u65e5\u672c\u8a9e", False),
    ("marks to reorder", "a\u0301\u0316 q\u0307\u0323 x\u0315\u0300\u05ae", False),
    ("composition exclusion", "\u0958 \u0915\u093c \u2126", False),
    ("UAX 15 long s", "\u1e9b\u0323", False),
    ("compatibility", "\ufb01ne \u2460 \uff21\uff22\uff23 x\u00b2 \u00bd \u00a0 \u2003 \u3000 \u33a1", False),
    ("lone combining marks", "\u0301\u0301 \u0338", False),
    ("combining mark after '>'", "a>\u0338b =\u0338 <\u0338", False),
    ("U+0338 after im_start (parsed)", "<|im_start|>\u0338user e\u0301<|im_end|>\u0301e", True),
    ("U+0338 after im_start (user text)", "<|im_start|>\u0338user e\u0301<|im_end|>\u0301e", False),
    ("U+0338 after think (user-defined)", "<think>\u0338</think>\u0338 \u1100<think>\u1161", False),
    ("jamo split by im_end (parsed)", "\u1100<|im_end|>\u1161\u11a8", True),
    ("emoji ZWJ and variation selector", "\U0001f469\u200d\U0001f469\u200d\U0001f467 \u2764\ufe0f", False),
]


def composed_merges(vocab, merges, chars):
    """Adds merges (and pieces) that build each of chars from its UTF-8
    bytes, left to right."""
    b2u = byte_to_unicode()
    for ch in chars:
        parts = [b2u[b] for b in ch.encode()]
        left = parts[0]
        for right in parts[1:]:
            if left + right not in vocab:
                vocab[left + right] = max(vocab.values()) + 1
                merges.append([left, right])
            left = left + right


def qwen3_nfc_tokenizer():
    with open(os.path.join(GOLDEN, "qwen3", "hf", "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    tj["normalizer"] = NORMALIZERS["qwen3-nfc"]
    vocab, merges = tj["model"]["vocab"], tj["model"]["merges"]
    composed_merges(vocab, merges, ["\u00e9", "\u00c5", "\uac00", "\uac01", "\u226f"])
    # the added tokens follow the model's vocabulary, as `tokenizers`
    # numbers them when it loads the file
    for k, t in enumerate(tj["added_tokens"]):
        t["id"] = len(vocab) + k
    return tj


def main():
    l3_dir = os.path.join(GOLDEN, "llama3-digits")
    os.makedirs(l3_dir, exist_ok=True)
    with open(os.path.join(l3_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(llama3_digits_tokenizer(), f, ensure_ascii=False, indent=1)
    toks = {"llama3-digits": Tokenizer.from_file(os.path.join(l3_dir, "tokenizer.json"))}
    nfc_dir = os.path.join(GOLDEN, "qwen3-nfc")
    os.makedirs(nfc_dir, exist_ok=True)
    nfc = qwen3_nfc_tokenizer()
    with open(os.path.join(nfc_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(nfc, f, ensure_ascii=False, indent=1)
    toks["qwen3-nfc"] = Tokenizer.from_file(os.path.join(nfc_dir, "tokenizer.json"))
    for name, norm in NORMALIZERS.items():
        if name != "qwen3-nfc":
            v = copy.deepcopy(nfc)
            v["normalizer"] = norm
            toks[name] = Tokenizer.from_str(json.dumps(v))
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
    cases += [(f"{n} (qwen3-nfc)", "qwen3-nfc", s, special) for n, s, special in NFC_TEXTS]
    for name in NORMALIZERS:
        if name != "qwen3-nfc":
            cases += [(f"{n} ({name})", name, s, special) for n, s, special in NFC_TEXTS
                      if n in ("A + ring", "Hangul jamo L V T", "compatibility", "UAX 15 long s",
                               "U+0338 after im_start (parsed)", "marks to reorder")]
    bulk_texts = []
    for t in tricky_strings():
        for form in (t, unicodedata.normalize("NFD", t), unicodedata.normalize("NFKD", t)):
            if form not in bulk_texts:
                bulk_texts.append(form)

    def encode(tok, text, special=False):
        tok.encode_special_tokens = not special
        return tok.encode(text, add_special_tokens=False).ids

    out = []
    for c in cases:
        n, t, s = c[:3]
        special = len(c) > 3 and c[3]
        o = {"name": n, "tokenizer": t, "text": s, "ids": encode(toks[t], s, special)}
        if special:
            o["special"] = True
        out.append(o)
    # ASCII is its own normal form: once, with the NFC tokenizer
    bulk = [{"tokenizer": name, "text": s, "ids": encode(toks[name], s)}
            for name in NORMALIZERS for s in bulk_texts if name == "qwen3-nfc" or not s.isascii()]
    # the normalization must matter: the NFC ids of a text and its NFD form agree
    nfc_ids = {b["text"]: b["ids"] for b in bulk if b["tokenizer"] == "qwen3-nfc"}
    raw = Tokenizer.from_file(os.path.join(GOLDEN, "qwen3", "hf", "tokenizer.json"))
    n_changed = sum(encode(raw, s) != encode(raw, unicodedata.normalize("NFC", s)) for s in bulk_texts)
    assert all(nfc_ids[unicodedata.normalize("NFD", s)] == nfc_ids[s] for s in tricky_strings()
               if unicodedata.normalize("NFC", s) == s)
    with open(os.path.join(GOLDEN, "tokenizer-cases.json"), "w", encoding="utf-8") as f:
        text = json.dumps({"reference": "Hugging Face tokenizers, user content (encode_special_tokens) "
                                        "unless a case says \"special\": true",
                           "script": "scripts/reference/make-tokenizer-cases.py",
                           "normalizer_variants": {k: v for k, v in NORMALIZERS.items() if k != "qwen3-nfc"},
                           "cases": out, "bulk": []}, ensure_ascii=False, indent=1)
        # bulk entries one to a line: thousands of them
        rows = ",\n  ".join(json.dumps(b, ensure_ascii=False, separators=(",", ":")) for b in bulk)
        f.write(text.replace('"bulk": []', '"bulk": [\n  ' + rows + "\n ]"))
        f.write("\n")
    print(f"{len(out)} cases, {len(bulk)} bulk strings ({len(bulk_texts)} texts, "
          f"{n_changed} of them tokenized differently once NFC)", file=sys.stderr)
    for c in out[:3]:
        print(c, file=sys.stderr)


if __name__ == "__main__":
    main()
