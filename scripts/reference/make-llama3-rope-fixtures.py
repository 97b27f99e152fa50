#!/usr/bin/env python3
"""Makes tests/golden/llama3-rope/ (test-llama3-rope.c): a tiny random
LlamaForCausalLM with Llama 3 RoPE scaling, against transformers float32.

  hf/                 the model as transformers 5 saves it: config.json with
                      rope_parameters {rope_type "llama3", rope_theta 1e4,
                      factor 8, low_freq_factor 1, high_freq_factor 4,
                      original_max_position_embeddings 64}; model.safetensors
                      (F32); the tokenizer of tests/golden/gemma4/dense (a
                      SentencePiece-style BPE, 512 pieces, <bos> = 2) without
                      its chat template
  llama3-rope-f32.gguf  hf/ converted by llama.cpp's own convert_hf_to_gguf.py
                      (llama-cpp-python 0.3.36 source package, --outtype f32,
                      unchanged: it writes the scaling as rope_freqs.weight)
  logits.safetensors  "logits" F32 [2, 32, 512]: transformers' logits at every
                      position of the 2 prompts (row r predicts the token after
                      prompt[r])
  reference.json      the prompts (32 ids: <bos> + text of long_text.txt), the
                      greedy 16-token continuations (argmax loop without cache),
                      the per-pair RoPE divisors transformers' inverse
                      frequencies imply, and checks: how far the logits move
                      when the scaling is removed (relative, must be far above
                      the tests' 1e-3), and the smallest top-1 - top-2 margin
                      of the greedy steps

With head_dim 16 (8 RoPE pairs, wavelengths 6.3 .. 19869 at theta 1e4) and an
original context of 64, pair 0 keeps its frequency (wavelength < 64/4), pairs
1 and 2 are interpolated and pairs 3..7 are divided by 8, so all three regimes
of the scaling are exercised within 32 positions.

    ~/.cache/wick/grammar-anchors-venv/bin/python scripts/reference/make-llama3-rope-fixtures.py

(llama.cpp's converter needs the `sentencepiece` module importable, even for
a folder without tokenizer.model; see convert_gguf.)
"""
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/golden/llama3-rope"
HF = OUT / "hf"
SEED = 2718
CACHE = pathlib.Path(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")))
LCPP = pathlib.Path(os.environ.get("LCPP", CACHE / "llama.cpp/src/llama_cpp_python-0.3.36/vendor/llama.cpp"))
ROPE = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
N_POS, N_GREEDY = 32, 16


def make_model(vocab, rope):
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
                      rms_norm_eps=1e-5, tie_word_embeddings=False, rope_parameters=dict(rope),
                      bos_token_id=2, eos_token_id=1, pad_token_id=0)
    return LlamaForCausalLM(cfg).eval()


def draw(model):
    """Weights wider than the default init (Linear ~ N(0, (2.5/sqrt(fan_in))^2),
    embeddings N(0, 1), norm gains 1 +- 0.3), so logits are far from uniform."""
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() == 1:
                p.copy_(1 + 0.3 * (2 * torch.rand(p.shape, generator=g) - 1))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 2.5 / math.sqrt(p.shape[1]))


def greedy(model, prompt, n):
    seq, margins = list(prompt), []
    with torch.no_grad():
        for _ in range(n):
            row = model(torch.tensor([seq])).logits[0, -1]
            top = torch.topk(row, 2).values
            margins.append(float(top[0] - top[1]))
            seq.append(int(torch.argmax(row)))
    return seq[len(prompt):], min(margins)


def convert_gguf(path):
    if not (LCPP / "convert_hf_to_gguf.py").exists():
        sys.exit(f"{LCPP}/convert_hf_to_gguf.py is missing: run scripts/reference/make-gemma4-gguf.sh once "
                 "to unpack llama.cpp's source package (or set LCPP)")
    # the converter imports sentencepiece before it looks for tokenizer.model:
    # it must be importable (pip install --target DIR sentencepiece, and
    # DIR on PYTHONPATH)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(LCPP / "gguf-py"),
                                                                     os.environ.get("PYTHONPATH")])))
    subprocess.run([sys.executable, str(LCPP / "convert_hf_to_gguf.py"), str(HF), "--outtype", "f32",
                    "--outfile", str(path)], check=True, env=env)


def main():
    torch.manual_seed(SEED)
    if OUT.exists():
        shutil.rmtree(OUT)
    HF.mkdir(parents=True)
    tok = AutoTokenizer.from_pretrained(ROOT / "tests/golden/gemma4/dense")
    tok.chat_template = None
    vocab = len(tok)
    model = make_model(vocab, ROPE)
    draw(model)
    model.save_pretrained(HF, safe_serialization=True)
    tok.save_pretrained(HF)
    for f in ("chat_template.jinja",):
        (HF / f).unlink(missing_ok=True)
    # everything below uses the model as reloaded from the folder
    model = LlamaForCausalLM.from_pretrained(HF, torch_dtype=torch.float32).eval()
    cfg = json.loads((HF / "config.json").read_text())
    assert cfg["rope_parameters"]["rope_type"] == "llama3", cfg
    plain = make_model(vocab, {"rope_type": "default", "rope_theta": ROPE["rope_theta"]})
    plain.load_state_dict(model.state_dict())

    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    prompts = [[2] + ids[0:N_POS - 1], [2] + ids[200:200 + N_POS - 1]]
    assert all(len(p) == N_POS for p in prompts)
    x = torch.tensor(prompts)
    with torch.no_grad():
        logits = model(x).logits.float()
        logits_plain = plain(x).logits.float()
    rel = float(((logits - logits_plain).abs().amax(-1) / logits.abs().amax(-1)).max())
    rel_last = float(((logits - logits_plain).abs().amax(-1) / logits.abs().amax(-1))[:, -1].min())
    print(f"scaling vs none: max relative logit change {rel:.3g} (last position, smallest: {rel_last:.3g})")
    assert rel_last > 0.05, "the scaling must change the logits well beyond the 1e-3 tolerance"

    outs = [greedy(model, p, N_GREEDY) for p in prompts]
    inv = model.model.rotary_emb.inv_freq.float()
    inv_plain = plain.model.rotary_emb.inv_freq.float()
    divisors = (inv_plain / inv).tolist()
    print("divisors", [round(d, 4) for d in divisors], "greedy margins", [round(m, 3) for _, m in outs])

    save_file({"logits": logits.contiguous()}, str(OUT / "logits.safetensors"))
    import tokenizers
    import transformers
    ref = {
        "generator": "scripts/reference/make-llama3-rope-fixtures.py",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "python": sys.version.split()[0]},
        "rope_parameters": ROPE,
        "prompts": prompts,
        "greedy": [o for o, _ in outs],
        "rope_divisors": divisors,
        "checks": {"max_rel_logit_change_without_scaling": rel,
                   "min_rel_logit_change_without_scaling_last_position": rel_last,
                   "min_top1_top2_margin_greedy": min(m for _, m in outs)},
    }
    (OUT / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    convert_gguf(OUT / "llama3-rope-f32.gguf")


if __name__ == "__main__":
    main()
