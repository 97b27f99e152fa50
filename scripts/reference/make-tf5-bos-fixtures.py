#!/usr/bin/env python3
"""Fixtures for tests/golden/tf5-bos: Hugging Face tokenizer folders whose
BOS / EOS come only from tokenizer.json's post-processor, as transformers 5
writes them (its save_pretrained drops add_bos_token / add_eos_token from
tokenizer_config.json, and its from_pretrained ignores them when a
tokenizer.json exists: the post-processor alone decides).

Folders (each a tiny tokenizer trained here on a few sentences; the ids
mean nothing):
  gemma3/     GemmaTokenizer(add_bos_token=True) saved by transformers 5:
              post-processor TemplateProcessing "<bos> $A", no add_bos_token
              in tokenizer_config.json (checked below).
  gemma3-cfg-false/  the same with "add_bos_token": false written into
              tokenizer_config.json by hand: transformers 5 still adds BOS.
  sequence/   byte-level BPE (Llama 3 style), post-processor
              Sequence[ByteLevel, TemplateProcessing "<|begin|> $A <|end|>"].
  bert/       the byte-level BPE with BertProcessing ([CLS] $A [SEP]).
  roberta/    the byte-level BPE with RobertaProcessing (<s> $A </s>).
  bytelevel/  the byte-level BPE with a ByteLevel post-processor only (adds
              nothing), add_bos_token true in tokenizer_config.json: which
              transformers 5 ignores.

expected.json: for each folder and text, the ids of
tokenizers.Tokenizer.from_file(folder/tokenizer.json).encode(text), checked
here to equal transformers' AutoTokenizer.from_pretrained(folder)(text).

Run from the repository root (CPU, seconds):
    ~/.cache/wick/grammar-anchors-venv/bin/python scripts/reference/make-tf5-bos-fixtures.py
Made with transformers 5.24.0 and tokenizers 0.23.3.
"""
import json
import os
import shutil
import sys
import warnings

warnings.filterwarnings("ignore")

import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402
from transformers import AutoTokenizer, GemmaTokenizer, PreTrainedTokenizerFast  # noqa: E402

transformers.logging.set_verbosity_error()
OUT = os.path.join("tests", "golden", "tf5-bos")

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A tokenizer splits text into pieces; the model predicts the next piece.",
    "Numbers like 12345 and 3.14 appear in text, and so do emoji and accents: café, naïve.",
    "def main():\n    print('hello, world')\n    return 0\n",
    "Questions and answers, stories and lists: a tiny corpus for a tiny tokenizer.",
] * 4

TEXTS = [
    "Hello world",
    "The quick brown fox.",
    " leading space and  two spaces",
    "café 12345\nnew line",
    "",
    "<bos> written in the text",
]

GEMMA_SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]


def train_gemma_style():
    """SentencePiece-style BPE as Gemma's: spaces -> "▁", byte fallback."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True)
    byte_pieces = [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=GEMMA_SPECIALS + byte_pieces,
                                  show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    j = json.loads(tok.to_str())
    return j["model"]["vocab"], [tuple(m) if isinstance(m, list) else tuple(m.split(" "))
                                 for m in j["model"]["merges"]]


def save_gemma3(folder, cfg_add_bos=None):
    vocab, merges = train_gemma_style()
    tk = GemmaTokenizer(vocab=vocab, merges=merges, add_bos_token=True,
                        extra_special_tokens=["<start_of_turn>", "<end_of_turn>"])
    tk.save_pretrained(folder)
    cfg_path = os.path.join(folder, "tokenizer_config.json")
    cfg = json.load(open(cfg_path))
    assert "add_bos_token" not in cfg and "add_eos_token" not in cfg, cfg
    if cfg_add_bos is not None:
        cfg["add_bos_token"] = cfg_add_bos
        with open(cfg_path, "w") as f:
            json.dump(cfg, f, indent=2, ensure_ascii=False)
    pp = json.load(open(os.path.join(folder, "tokenizer.json")))["post_processor"]
    assert pp["type"] == "TemplateProcessing", pp
    assert pp["single"][0] == {"SpecialToken": {"id": "<bos>", "type_id": 0}}, pp


def train_byte_level():
    """GPT-2 / Llama 3 style byte-level BPE with four special tokens."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|begin|>", "<|end|>", "[CLS]", "[SEP]", "<s>", "</s>"]
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def save_byte_level(folder, post, cfg_extra):
    tok = train_byte_level()
    tok.post_processor = post(tok)
    tk = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin|>", eos_token="<|end|>")
    tk.save_pretrained(folder)
    cfg_path = os.path.join(folder, "tokenizer_config.json")
    cfg = json.load(open(cfg_path))
    assert "add_bos_token" not in cfg and "add_eos_token" not in cfg, cfg
    if cfg_extra:
        cfg.update(cfg_extra)
        with open(cfg_path, "w") as f:
            json.dump(cfg, f, indent=2, ensure_ascii=False)


def template(tok):
    t = processors.TemplateProcessing(
        single="<|begin|> $A <|end|>", pair="<|begin|> $A <|end|> $B:1 <|end|>:1",
        special_tokens=[("<|begin|>", tok.token_to_id("<|begin|>")), ("<|end|>", tok.token_to_id("<|end|>"))])
    return processors.Sequence([processors.ByteLevel(trim_offsets=False), t])


def bert(tok):
    return processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]")))


def roberta(tok):
    return processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    save_gemma3(os.path.join(OUT, "gemma3"))
    save_gemma3(os.path.join(OUT, "gemma3-cfg-false"), cfg_add_bos=False)
    save_byte_level(os.path.join(OUT, "sequence"), template, None)
    save_byte_level(os.path.join(OUT, "bert"), bert, None)
    save_byte_level(os.path.join(OUT, "roberta"), roberta, None)
    save_byte_level(os.path.join(OUT, "bytelevel"), lambda t: processors.ByteLevel(), {"add_bos_token": True})
    expected = {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                "python": sys.version.split()[0], "folders": {}}
    for name in sorted(os.listdir(OUT)):
        folder = os.path.join(OUT, name)
        if not os.path.isdir(folder):
            continue
        raw = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        auto = AutoTokenizer.from_pretrained(folder)
        cases = []
        for text in TEXTS:
            ids = raw.encode(text).ids
            assert auto(text).input_ids == ids, (name, text, auto(text).input_ids, ids)
            cases.append({"text": text, "ids": ids})
        expected["folders"][name] = cases
        print(name, [c["ids"][:3] + ["..."] + c["ids"][-1:] for c in cases[:2]])
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
