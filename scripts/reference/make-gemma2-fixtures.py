#!/usr/bin/env python3
"""Makes tests/golden/gemma2/ (test-gemma2.c): a tiny random Gemma2ForCausalLM
against transformers float32 (attn_implementation "eager").

  hf/                 the model as transformers 5 saves it: hidden 64, 4 layers
                      (layer_types sliding, full, sliding, full), 4 heads, 2 KV
                      heads, head_dim 16, intermediate 64, sliding_window 8,
                      query_pre_attn_scalar 16 (= head_dim, the value llama.cpp
                      assumes for a GGUF, which does not carry it),
                      attn_logit_softcapping 50, final_logit_softcapping 30;
                      model.safetensors (F32, embeddings tied); the tokenizer of
                      tests/golden/gemma4/dense (512 pieces, <bos> = 2) without
                      its chat template, plus tokenizer.model: the same pieces
                      written as a SentencePiece BPE ModelProto (encoded here by
                      hand; scores -id), since llama.cpp's Gemma 2 converter
                      reads only tokenizer.model
  gemma2-f32.gguf     hf/ converted by llama.cpp's own convert_hf_to_gguf.py
                      (llama-cpp-python 0.3.36 source package, --outtype f32)
  logits.safetensors  "logits" F32 [3, 32, 512]: transformers' logits at every
                      position of the 3 prompts
  reference.json      the prompts (<bos> + 31 ids of long_text.txt), the greedy
                      32-token continuations (argmax loop without cache), and
                      checks: how far the logits move with the attention
                      softcap removed, and with the sliding window removed
                      (relative, far above the tests' 1e-3), the smallest
                      top-1 - top-2 margin of the greedy steps

The q/k projections are drawn wide (8/sqrt(fan_in)) so that attention scores
reach tens and the softcap at 50 bends them.

    PYTHONPATH=/tmp/sp ~/.cache/wick/grammar-anchors-venv/bin/python scripts/reference/make-gemma2-fixtures.py

(llama.cpp's converter needs the `sentencepiece` module importable; LCPP names
its unpacked source.)
"""
import json
import math
import os
import pathlib
import shutil
import struct
import subprocess
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, Gemma2Config, Gemma2ForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/golden/gemma2"
HF = OUT / "hf"
SEED = 1729
CACHE = pathlib.Path(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")))
LCPP = pathlib.Path(os.environ.get("LCPP", CACHE / "llama.cpp/src/llama_cpp_python-0.3.36/vendor/llama.cpp"))
N_POS, N_GREEDY = 32, 32


def make_model(vocab, attn_cap=50.0, window=8):
    cfg = Gemma2Config(vocab_size=vocab, hidden_size=64, intermediate_size=64, num_hidden_layers=4,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
                       rms_norm_eps=1e-6, sliding_window=window, query_pre_attn_scalar=16,
                       attn_logit_softcapping=attn_cap, final_logit_softcapping=30.0,
                       bos_token_id=2, eos_token_id=1, pad_token_id=0, tie_word_embeddings=True)
    cfg._attn_implementation = "eager"
    return Gemma2ForCausalLM(cfg).eval()


def draw(model):
    """Embeddings N(0, 1); q/k projections N(0, (8/sqrt(fan_in))^2) so scores
    are large; other matrices 2.5/sqrt(fan_in); norm weights (gain - 1) in
    +-0.3."""
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() == 1:
                p.copy_(0.3 * (2 * torch.rand(p.shape, generator=g) - 1))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                s = 8.0 if ("q_proj" in name or "k_proj" in name) else 2.5
                p.copy_(torch.randn(p.shape, generator=g) * s / math.sqrt(p.shape[1]))


def greedy(model, prompt, n):
    seq, margins = list(prompt), []
    with torch.no_grad():
        for _ in range(n):
            row = model(torch.tensor([seq])).logits[0, -1]
            top = torch.topk(row, 2).values
            margins.append(float(top[0] - top[1]))
            seq.append(int(torch.argmax(row)))
    return seq[len(prompt):], min(margins)


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def spm_model(tok_json):
    """A SentencePiece ModelProto (BPE, byte fallback) of tokenizer.json's
    pieces: field numbers of sentencepiece_model.proto."""
    vocab = json.loads(tok_json.read_text())["model"]["vocab"]
    pieces = sorted(vocab.items(), key=lambda kv: kv[1])
    assert [i for _, i in pieces] == list(range(len(pieces)))
    special = {"<pad>": 3, "<eos>": 3, "<bos>": 3, "<unk>": 2}
    body = b""
    for p, i in pieces:
        if p in special:
            t, score = special[p], 0.0
        elif p.startswith("<0x") and len(p) == 6:
            t, score = 6, 0.0
        elif p.startswith("<") and p.endswith(">") and len(p) > 2:
            t, score = 4, 0.0
        else:
            t, score = 1, -float(i)
        sp = field(1, 2, p.encode()) + field(2, 5, struct.pack("<f", score)) + field(3, 0, varint(t))
        body += field(1, 2, sp)
    trainer = (field(3, 0, varint(2)) + field(4, 0, varint(len(pieces))) + field(35, 0, varint(1)) +
               field(40, 0, varint(3)) + field(41, 0, varint(2)) + field(42, 0, varint(1)) + field(43, 0, varint(0)))
    norm = field(1, 2, b"identity") + field(3, 0, varint(0)) + field(4, 0, varint(0)) + field(5, 0, varint(1))
    return body + field(2, 2, trainer) + field(3, 2, norm)


def convert_gguf(path):
    if not (LCPP / "convert_hf_to_gguf.py").exists():
        sys.exit(f"{LCPP}/convert_hf_to_gguf.py is missing (set LCPP)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(LCPP / "gguf-py"),
                                                                     os.environ.get("PYTHONPATH")])))
    subprocess.run([sys.executable, str(LCPP / "convert_hf_to_gguf.py"), str(HF), "--outtype", "f32",
                    "--outfile", str(path)], check=True, env=env)


def rel_change(a, b):
    r = (a - b).abs().amax(-1) / a.abs().amax(-1)
    return float(r.max()), float(r[:, -1].min())


def main():
    torch.manual_seed(SEED)
    if OUT.exists():
        shutil.rmtree(OUT)
    HF.mkdir(parents=True)
    src = ROOT / "tests/golden/gemma4/dense"
    tok = AutoTokenizer.from_pretrained(src)
    tok.chat_template = None
    vocab = len(tok)
    model = make_model(vocab)
    draw(model)
    model.save_pretrained(HF, safe_serialization=True)
    tok.save_pretrained(HF)
    (HF / "chat_template.jinja").unlink(missing_ok=True)
    (HF / "tokenizer.model").write_bytes(spm_model(src / "tokenizer.json"))
    model = Gemma2ForCausalLM.from_pretrained(HF, torch_dtype=torch.float32, attn_implementation="eager").eval()
    cfg = json.loads((HF / "config.json").read_text())
    assert cfg["layer_types"] == ["sliding_attention", "full_attention"] * 2, cfg["layer_types"]
    nocap = make_model(vocab, attn_cap=None)
    nocap.load_state_dict(model.state_dict(), strict=False)
    nowin = make_model(vocab, window=4096)
    nowin.load_state_dict(model.state_dict(), strict=False)

    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    prompts = [[2] + ids[0:N_POS - 1], [2] + ids[200:200 + N_POS - 1], [2] + ids[400:400 + N_POS - 1]]
    assert all(len(p) == N_POS for p in prompts)
    x = torch.tensor(prompts)
    with torch.no_grad():
        logits = model(x).logits.float()
        l_nocap = nocap(x).logits.float()
        l_nowin = nowin(x).logits.float()
    cap_max, cap_last = rel_change(logits, l_nocap)
    win_max, win_last = rel_change(logits, l_nowin)
    print(f"attention softcap vs none: max relative logit change {cap_max:.3g} (last position, smallest {cap_last:.3g})")
    print(f"sliding window vs none: max relative logit change {win_max:.3g} (last position, smallest {win_last:.3g})")
    assert cap_last > 0.02 and win_last > 0.02
    outs = [greedy(model, p, N_GREEDY) for p in prompts]
    print("greedy margins", [round(m, 3) for _, m in outs])

    save_file({"logits": logits.contiguous()}, str(OUT / "logits.safetensors"))
    import tokenizers
    import transformers
    ref = {
        "generator": "scripts/reference/make-gemma2-fixtures.py",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "python": sys.version.split()[0]},
        "prompts": prompts,
        "greedy": [o for o, _ in outs],
        "checks": {"max_rel_logit_change_without_attn_softcap": cap_max,
                   "min_rel_logit_change_without_attn_softcap_last_position": cap_last,
                   "max_rel_logit_change_without_sliding_window": win_max,
                   "min_rel_logit_change_without_sliding_window_last_position": win_last,
                   "min_top1_top2_margin_greedy": min(m for _, m in outs)},
    }
    (OUT / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    convert_gguf(OUT / "gemma2-f32.gguf")


if __name__ == "__main__":
    main()
