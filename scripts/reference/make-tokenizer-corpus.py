#!/usr/bin/env python3
"""Builds the tokenizer parity corpus, tests/golden/tokenizer-corpus.jsonl.xz:
about 2.4 MB of documents of these kinds, each tagged:

  prose     translated messages of Debian packages (gettext .mo catalogs in
            /usr/share/locale) in 20 languages and 10+ scripts: Latin,
            Cyrillic, Greek, Georgian, Armenian, Arabic, Hebrew, Devanagari,
            Thai, CJK, Hangul
  code      Python standard library sources and C headers
  json      JSON documents serialised from Python data (nested, unicode, numbers)
  markdown  package descriptions (METADATA) of installed Python packages
  space     whitespace stress: runs of spaces, tabs, newlines, carriage
            returns and Unicode spaces around words
  emoji     emoji sequences: skin tones, ZWJ families, flags, keycaps, VS-16
  unicode   random valid Unicode text (seeded): assigned, non-surrogate,
            non-private code points from every plane in use

The sources are this machine's files, so the corpus is committed rather
than rebuilt in CI; this script records how it was made. Run by hand:
    python3 scripts/reference/make-tokenizer-corpus.py
"""
import gettext
import glob
import json
import lzma
import os
import random
import sys
import unicodedata

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "tokenizer-corpus.jsonl.xz")
DOC_BYTES = 4096
rng = random.Random(20261129)

LANGS = ["ru", "uk", "el", "ka", "hy", "ar", "he", "hi", "th", "ja", "zh_CN", "zh_TW", "ko",
         "de", "fr", "es", "pl", "tr", "vi", "cs"]


def docs_from_text(kind, text, limit):
    """Cuts text into documents of about DOC_BYTES at line ends."""
    out, cur, total = [], [], 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        if sum(len(x.encode()) for x in cur) >= DOC_BYTES:
            doc = "".join(cur)
            out.append({"kind": kind, "text": doc})
            total += len(doc.encode())
            cur = []
            if total >= limit:
                break
    if cur and total < limit:
        out.append({"kind": kind, "text": "".join(cur)})
    return out


def prose():
    docs = []
    for lang in LANGS:
        msgs = []
        for mo in sorted(glob.glob(f"/usr/share/locale/{lang}/LC_MESSAGES/*.mo")):
            try:
                with open(mo, "rb") as f:
                    cat = gettext.GNUTranslations(f)._catalog
            except Exception:
                continue
            for k, v in cat.items():
                if isinstance(v, str) and len(v) > 20 and k:
                    msgs.append(v)
        rng.shuffle(msgs)
        docs += docs_from_text("prose", "\n".join(msgs[:1500]), 60_000)
    return docs


def code():
    files = sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "*.py")))
    files = [f for f in files if os.path.getsize(f) < 60_000][:60]
    files += sorted(glob.glob("/usr/include/*.h"))[:40]
    text = ""
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            text += fh.read()
        if len(text) > 700_000:
            break
    return docs_from_text("code", text, 500_000)


def json_docs():
    words = ["alpha", "βήτα", "гамма", "δέλτα", "日本", "emoji 🙂", "tab\there", "quote \"x\"", "back\\slash"]
    docs = []
    for i in range(40):
        obj = {"id": i, "name": rng.choice(words), "values": [rng.randint(-10**9, 10**9) for _ in range(30)],
               "floats": [round(rng.uniform(-1e6, 1e6), rng.randint(0, 8)) for _ in range(20)],
               "nested": {"list": [{"k": rng.choice(words), "v": rng.random()} for _ in range(10)],
                          "flag": rng.random() < 0.5, "none": None},
               "unicode": "".join(chr(rng.randint(0x20, 0x2FFF)) for _ in range(40))}
        docs.append({"kind": "json", "text": json.dumps(obj, ensure_ascii=rng.random() < 0.3,
                                                        indent=rng.choice([None, 2, 4, "\t"]))})
    return docs


def markdown():
    text = ""
    for meta in sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "site-packages", "*.dist-info", "METADATA"))):
        with open(meta, encoding="utf-8", errors="replace") as fh:
            body = fh.read().split("\n\n", 1)
        if len(body) == 2:
            text += body[1] + "\n"
        if len(text) > 400_000:
            break
    return docs_from_text("markdown", text, 300_000)


def space():
    ws = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\u00a0", "\u3000", "\u2009", " \n ", "\t \t"]
    docs = []
    for _ in range(25):
        parts = []
        for _ in range(400):
            r = rng.random()
            if r < 0.5:
                parts.append(rng.choice(["word", "x", "Hello", "indent", "12", "é", "日本", "{", "}"]))
            elif r < 0.9:
                parts.append(rng.choice(ws) * rng.randint(1, 3))
            else:
                parts.append(" " * rng.randint(1, 70))
        docs.append({"kind": "space", "text": "".join(parts)})
    return docs


def emoji():
    base = [chr(c) for c in list(range(0x1F600, 0x1F64F)) + list(range(0x1F300, 0x1F5FF)) +
            list(range(0x1F680, 0x1F6FF)) + list(range(0x1F900, 0x1F9FF))]
    tones = [chr(c) for c in range(0x1F3FB, 0x1F400)]
    flags = ["".join(chr(0x1F1E6 + ord(c) - 65) for c in cc) for cc in ["FR", "JP", "US", "DE", "BR", "IN", "UA", "KR"]]
    seqs = ["👨‍👩‍👧‍👦", "👩‍💻", "🏳️‍🌈", "❤️", "1️⃣", "🧑🏽‍🚀", "👍🏿", "🫶🏻"]
    docs = []
    for _ in range(15):
        parts = []
        for _ in range(500):
            r = rng.random()
            if r < 0.5:
                parts.append(rng.choice(base))
            elif r < 0.6:
                parts.append(rng.choice(base) + rng.choice(tones))
            elif r < 0.7:
                parts.append(rng.choice(flags))
            elif r < 0.8:
                parts.append(rng.choice(seqs))
            else:
                parts.append(rng.choice([" ", "\n", " and ", "!", "."]))
        docs.append({"kind": "emoji", "text": "".join(parts)})
    return docs


def random_unicode():
    ranges = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x52F), (0x590, 0x6FF),
              (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x2000, 0x2BFF), (0x3000, 0x30FF),
              (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xF900, 0xFAFF), (0xFF00, 0xFFEF),
              (0x10000, 0x1007F), (0x1D400, 0x1D7FF), (0x1F000, 0x1FAFF), (0x20000, 0x2A6DF)]
    docs = []
    for _ in range(40):
        chars = []
        while len(chars) < 1200:
            lo, hi = rng.choice(ranges)
            c = rng.randint(lo, hi)
            if unicodedata.category(chr(c)) not in ("Cn", "Cs", "Co"):
                chars.append(chr(c))
        docs.append({"kind": "unicode", "text": "".join(chars)})
    return docs


def main():
    docs = prose() + code() + json_docs() + markdown() + space() + emoji() + random_unicode()
    total = sum(len(d["text"].encode()) for d in docs)
    kinds = {}
    for d in docs:
        kinds[d["kind"]] = kinds.get(d["kind"], 0) + len(d["text"].encode())
    with lzma.open(OUT, "wt", encoding="utf-8", preset=9) as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}: {len(docs)} documents, {total} bytes; " +
          ", ".join(f"{k} {v}" for k, v in kinds.items()), file=sys.stderr)


if __name__ == "__main__":
    main()
