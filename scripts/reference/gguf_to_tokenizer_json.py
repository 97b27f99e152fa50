#!/usr/bin/env python3
"""Exports a GGUF file's tokenizer as a Hugging Face tokenizer.json, the
form the `tokenizers` library loads. Standard library only (a small GGUF
metadata reader below), so the tests can run it anywhere:

    python3 scripts/reference/gguf_to_tokenizer_json.py MODEL.gguf OUT_DIR

Written from the GGUF specification and the tokenizer.json format; it
follows what transformers' GGUF import produces, so `tokenizers` gives the
same ids on this file as on transformers' own conversion:
  * "llama" (SentencePiece BPE): spaces normalised to '▁', byte fallback,
    merges derived from the vocabulary (every split of a piece into two
    pieces, pieces in id order, longer left part first), control and
    user-defined pieces as added tokens except runs of spaces, which become
    ordinary '▁' pieces;
  * "gpt2" (byte-level BPE): the GGUF's merges in order, the pre-tokenizer
    tokenizer.ggml.pre names (Digits then ByteLevel for "smollm" and the
    other starcoder-style tokenizers, ByteLevel alone for "gpt2"/"default"),
    control pieces as special added tokens; "qwen2" as transformers'
    Qwen2Tokenizer (Qwen's own tokenizer.json) builds it: NFC, its Split
    regex, ByteLevel without the GPT-2 regex. transformers' GGUF import
    drops the NFC step (it keeps only the split); this exporter follows the
    model's tokenizer.
"""
import json
import os
import struct
import sys


def read_gguf_metadata(path):
    """The metadata key/values of a GGUF file (v2/v3), arrays as lists."""
    with open(path, "rb") as f:
        data = f.read(64 << 20)  # tokenizer metadata sits at the front
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n]
        pos += n
        return s.decode("utf-8", errors="surrogateescape")

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(scalar[t])

    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    pos = 4
    version, _, n_kv = take("I"), take("Q"), take("Q")
    if version not in (2, 3):
        raise ValueError(f"{path}: GGUF version {version}")
    meta = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(take("I"))
    return meta


PRE = {
    "default": [], "gpt2": [],
    "smollm": ["digits"], "starcoder": ["digits"], "refact": ["digits"], "command-r": ["digits"],
    "codeshell": ["digits"], "exaone": ["digits"], "minerva-7b": ["digits"],
    "qwen2": ["qwen2"],
}

# Qwen 2's split (transformers' Qwen2Tokenizer, PRETOKENIZE_REGEX)
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def added(tid, content, special):
    return {"id": tid, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": special}


def export_spm(meta):
    tokens, types = meta["tokenizer.ggml.tokens"], meta.get("tokenizer.ggml.token_type")
    types = types or [1] * len(tokens)
    vocab, added_tokens = {}, []
    for i, (t, ty) in enumerate(zip(tokens, types)):
        if ty == 4 and t and set(t) == {" "}:
            t, ty = "\u2581" * len(t), 1  # space runs: ordinary escaped pieces
        if t not in vocab:
            vocab[t] = i
        if ty in (2, 3):
            added_tokens.append(added(i, t, True))
        elif ty == 4:
            added_tokens.append(added(i, t, False))
    merges = []
    for piece, pid in sorted(vocab.items(), key=lambda kv: kv[1]):
        local = [(piece[:k], piece[k:]) for k in range(1, len(piece))
                 if piece[:k] in vocab and piece[k:] in vocab]
        local.sort(key=lambda lr: -len(lr[0]))
        merges.extend([l, r] for l, r in local)
    unk = meta.get("tokenizer.ggml.unknown_token_id")
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
        "pre_tokenizer": None, "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None,
                  "unk_token": tokens[unk] if unk is not None else None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": True,
                  "byte_fallback": True, "ignore_merges": False, "vocab": vocab, "merges": merges},
    }


def export_bpe(meta):
    tokens, types = meta["tokenizer.ggml.tokens"], meta.get("tokenizer.ggml.token_type")
    types = types or [1] * len(tokens)
    pre = meta.get("tokenizer.ggml.pre", "default")
    if pre not in PRE:
        raise ValueError(f"pre-tokenizer {pre!r} is not known to this exporter")
    steps = []
    if "digits" in PRE[pre]:
        steps.append({"type": "Digits", "individual_digits": True})
    qwen2 = "qwen2" in PRE[pre]
    if qwen2:  # Qwen's tokenizer.json: NFC, then its split, then bytes
        steps.append({"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated", "invert": False})
    steps.append({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": not qwen2})
    vocab = {}
    for i, t in enumerate(tokens):
        vocab.setdefault(t, i)
    added_tokens = [added(i, t, True) for i, (t, ty) in enumerate(zip(tokens, types)) if ty == 3]
    added_tokens += [added(i, t, False) for i, (t, ty) in enumerate(zip(tokens, types)) if ty == 4]
    merges = [m.split(" ", 1) for m in meta["tokenizer.ggml.merges"]]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
        "normalizer": {"type": "NFC"} if qwen2 else None,
        "pre_tokenizer": steps[0] if len(steps) == 1 else {"type": "Sequence", "pretokenizers": steps},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }


def export(gguf_path, out_dir):
    meta = read_gguf_metadata(gguf_path)
    model = meta["tokenizer.ggml.model"]
    if model == "llama":
        tj = export_spm(meta)
    elif model == "gpt2":
        tj = export_bpe(meta)
    else:
        raise ValueError(f"tokenizer model {model!r} is not known to this exporter")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False, separators=(",", ":"))
    tokens = meta["tokenizer.ggml.tokens"]
    cfg = {"add_bos_token": bool(meta.get("tokenizer.ggml.add_bos_token", model == "llama"))}
    for key, name in (("bos_token", "tokenizer.ggml.bos_token_id"), ("eos_token", "tokenizer.ggml.eos_token_id")):
        if name in meta:
            cfg[key] = tokens[meta[name]]
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, ensure_ascii=False)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: gguf_to_tokenizer_json.py MODEL.gguf OUT_DIR")
    export(sys.argv[1], sys.argv[2])
