#!/usr/bin/env python3
"""Reference embeddings of all-MiniLM-L6-v2 (scripts/fetch-models minilm)
from sentence-transformers on the same folder, for tests/golden/test-embed
and tests/server/test_embed.py:

  tests/golden/minilm/embeddings.json.xz  {"model": ..., "n_embd": 384,
      "max_seq_length": 256, "cases": [{"text", "ids", "embedding"}]}:
      200 inputs (prose in several languages, code, an empty string, an
      over-long text truncated at max_seq_length, special-token text,
      emoji), the ids sentence-transformers' tokenizer gives (with [CLS]
      and [SEP], truncated) and the normalized embedding, rounded to 6
      decimals (the tests ask cosine >= 0.9999).
  tests/golden/minilm/retrieval.json  a small retrieval set: documents,
      queries and the document ranking by cosine for each query.

Run by hand (a python with sentence-transformers, torch CPU):
    python3 scripts/reference/make-embed-fixtures.py
"""
import json
import lzma
import os
import sys

from sentence_transformers import SentenceTransformer

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
from tricky_strings import tricky_strings  # noqa: E402

CACHE = os.path.join(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")), "models")
MODEL = os.path.join(CACHE, "all-MiniLM-L6-v2")
GOLDEN = os.path.join(HERE, "..", "..", "tests", "golden", "minilm")

PROSE = [
    "The cat sits on the mat.", "A dog is playing in the park.", "Stock markets fell sharply on Monday.",
    "The Federal Reserve raised interest rates by a quarter point.", "How do I reset my password?",
    "I forgot my login credentials and cannot get into my account.", "Photosynthesis converts light into chemical energy.",
    "Plants use sunlight to make sugar from carbon dioxide and water.", "The Eiffel Tower is in Paris.",
    "Mount Everest is the highest mountain on Earth.", "She plays the violin beautifully.",
    "The recipe calls for two cups of flour and one egg.", "Quantum computers use qubits instead of bits.",
    "The train to Berlin leaves at half past eight.", "Please send me the invoice by Friday.",
    "Le chat dort sur le canapé.", "Der Hund spielt im Garten mit einem Ball.", "El niño come una manzana roja.",
    "La economía creció un tres por ciento el año pasado.", "Il treno per Roma è in ritardo.",
    "Ik woon in een klein huis aan de rivier.", "Ele gosta de café com leite pela manhã.",
    "Кошка спит на диване.", "Москва — столица России.", "東京は日本の首都です。", "我喜欢在公园里散步。",
    "机器学习是人工智能的一个分支。", "서울은 한국의 수도입니다.", "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
    "İstanbul Boğazı iki kıtayı ayırır.", "Dvořák složil Novosvětskou symfonii.", "Zürich liegt am Zürichsee.",
    "القاهرة هي عاصمة مصر.", "ירושלים היא עיר עתיקה.", "नई दिल्ली भारत की राजधानी है।", "กรุงเทพเป็นเมืองหลวงของประเทศไทย",
    "Việt Nam có nhiều bãi biển đẹp.", "Jag älskar att läsa böcker på vintern.", "Hyvää huomenta kaikille!",
    "Wszystkiego najlepszego z okazji urodzin!",
]
CODE = [
    "def add(a, b):\n    return a + b", "for (int i = 0; i < n; i++) { sum += x[i]; }",
    "SELECT name, COUNT(*) FROM users GROUP BY name HAVING COUNT(*) > 1;",
    "const fetchData = async (url) => { const r = await fetch(url); return r.json(); };",
    "#include <stdio.h>\nint main(void) { printf(\"hello\\n\"); return 0; }", "git commit -m \"fix: handle empty input\"",
    "{\"name\": \"wick\", \"version\": \"0.1.0\", \"tags\": [\"llm\", \"c\"]}", "x = np.linalg.solve(A, b)  # solve Ax = b",
    "<div class=\"card\"><h2>Title</h2><p>Body</p></div>", "fn main() { println!(\"{}\", 42); }",
]
SPECIAL = ["", " ", "[CLS] [SEP] [MASK]", "hello [SEP] world", "🤗 😀 🥲", "a" * 150, "x\x00y\x01z",
           "e\u0301 vs é", "ALL CAPS SENTENCE HERE", "numbers 1234567890 3.14159 1e-12"]


def inputs():
    long_text = open(os.path.join(HERE, "long_text.txt"), encoding="utf-8").read()
    out = PROSE + CODE + SPECIAL + [(long_text + "\n") * 6, " ".join(["word"] * 600)]
    for t in tricky_strings():
        if len(out) >= 200:
            break
        if t not in out:
            out.append(t)
    assert len(out) == 200, len(out)
    return out


RETRIEVAL_DOCS = [
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
    "Python is a popular programming language for data science.",
    "The mitochondria is the powerhouse of the cell.",
    "Bananas are rich in potassium and easy to digest.",
    "The stock market closed higher after strong earnings reports.",
    "To reset your password, click 'Forgot password' on the login page.",
    "Mount Kilimanjaro is the tallest mountain in Africa.",
    "Regular exercise improves cardiovascular health.",
]
RETRIEVAL_QUERIES = ["Which landmark is in Paris?", "How can I change my forgotten password?",
                     "What organelle produces energy for cells?", "Which fruit has a lot of potassium?",
                     "What language do data scientists use?", "Is working out good for the heart?"]


def main():
    model = SentenceTransformer(MODEL, device="cpu")
    texts = inputs()
    tok = model.tokenizer
    emb = model.encode(texts, batch_size=32, normalize_embeddings=False, convert_to_numpy=True)
    cases = []
    for t, e in zip(texts, emb):
        ids = tok(t, truncation=True, max_length=model.max_seq_length)["input_ids"]
        cases.append({"text": t, "ids": ids, "embedding": [round(float(x), 6) for x in e]})
    os.makedirs(GOLDEN, exist_ok=True)
    path = os.path.join(GOLDEN, "embeddings.json.xz")
    with lzma.open(path, "wt", encoding="utf-8", preset=9) as f:
        json.dump({"model": "all-MiniLM-L6-v2", "n_embd": int(emb.shape[1]), "max_seq_length": model.max_seq_length,
                   "cases": cases}, f, ensure_ascii=True, separators=(",", ":"))
    n_trunc = sum(len(c["ids"]) == model.max_seq_length for c in cases)
    print(f"{path}: {len(cases)} cases, {n_trunc} truncated at {model.max_seq_length}", file=sys.stderr)
    d = model.encode(RETRIEVAL_DOCS, convert_to_numpy=True)
    q = model.encode(RETRIEVAL_QUERIES, convert_to_numpy=True)
    ranking = [[int(i) for i in (-(qv @ d.T)).argsort()] for qv in q]
    path = os.path.join(GOLDEN, "retrieval.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"documents": RETRIEVAL_DOCS, "queries": RETRIEVAL_QUERIES, "ranking": ranking,
                   "query_embeddings": [[round(float(x), 6) for x in v] for v in q]}, f, indent=1)
    print(f"{path}: rankings {ranking}", file=sys.stderr)


if __name__ == "__main__":
    main()
