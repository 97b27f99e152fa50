#!/usr/bin/env python3
"""Makes tests/golden/gpt-oss/ (test-gpt-oss.c): a tiny random
GptOssForCausalLM against transformers float32 (attn_implementation "eager").

  hf/                 the model as transformers 5 saves it: hidden 64, 2 layers
                      (layer_types sliding, full; sliding_window 8), 4 heads of
                      64 / 2 KV heads (n_head * head_dim = 256 != hidden), 4
                      experts of width 32, top 2, biases everywhere, attention
                      sinks, swiglu_limit 7, alpha 1.702; YaRN RoPE (theta 1e4,
                      factor 8, original_max_position_embeddings 64, beta_fast
                      32, beta_slow 1, truncate true: the dims ggml also
                      truncates); model.safetensors (BF16, every weight exact in
                      BF16); the tokenizer of tests/golden/qwen3/hf plus the
                      harmony special tokens (ids 512..518) and llama.cpp's
                      openai-gpt-oss-120b.jinja as chat template
  gpt-oss-f32.gguf    hf/ converted by llama.cpp's own convert_hf_to_gguf.py
                      (llama-cpp-python 0.3.36 source package, --outtype f32;
                      it takes unquantized experts, warning "not in MXFP4", and
                      splits and transposes gate_up_proj itself)
  logits.safetensors  "logits" F32 [3, 32, 519]: transformers' logits at every
                      position of the 3 prompts
  reference.json      the prompts (32 ids of long_text.txt), the greedy 32-token
                      continuations (argmax loop without cache) and checks: how
                      far the logits move (relative) without the sinks, the
                      sliding window, YaRN, the clamp, the router bias, and
                      with truncate false (what the real gpt-oss config says:
                      transformers then does not round the correction dims,
                      ggml always does); the smallest top-1 - top-2 margin;
                      the last position's logits with truncate false (6
                      decimals), for a folder so configured
  gpt-oss-mxfp4.gguf, mxfp4/
                      the same GGUF with MXFP4 experts and its reference
                      (make-gpt-oss-mxfp4-fixture.py, run at the end)

    PYTHONPATH=/tmp/sp ~/.cache/wick/grammar-anchors-venv/bin/python scripts/reference/make-gpt-oss-fixtures.py

(llama.cpp's converter needs `sentencepiece` importable; LCPP names the
unpacked llama.cpp.)
"""
import copy
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, GptOssConfig, GptOssForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/golden/gpt-oss"
HF = OUT / "hf"
SEED = 1117
CACHE = pathlib.Path(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")))
LCPP = pathlib.Path(os.environ.get("LCPP", CACHE / "llama.cpp/src/llama_cpp_python-0.3.36/vendor/llama.cpp"))
N_POS, N_GREEDY = 32, 32
HARMONY = ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>", "<|call|>"]
YARN = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0, "beta_fast": 32.0, "beta_slow": 1.0,
        "truncate": True, "original_max_position_embeddings": 64}


def make_model(vocab, rope=YARN, window=8, limit=7.0):
    cfg = GptOssConfig(vocab_size=vocab, hidden_size=64, intermediate_size=32, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=64, num_local_experts=4,
                       num_experts_per_tok=2, max_position_embeddings=512, rms_norm_eps=1e-5,
                       sliding_window=window, rope_parameters=dict(rope), swiglu_limit=limit,
                       tie_word_embeddings=False, bos_token_id=None, eos_token_id=517, pad_token_id=507)
    cfg._attn_implementation = "eager"
    return GptOssForCausalLM(cfg).eval()


def draw(model):
    """Embeddings N(0, 1); q/k projections 4/sqrt(fan_in) (scores of several
    units, so YaRN's attention factor and the sinks matter); expert gate_up
    8/sqrt(E) with biases +-3 (pre-activations past the clamp at 7); other
    matrices 2.5/sqrt(fan_in); norm gains 1 +- 0.3;
    bias +-1.5; other biases +-0.5. Every value exact in BF16."""
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            u = 2 * torch.rand(p.shape, generator=g) - 1
            if "norm" in name:
                p.copy_(1 + 0.3 * u)
            elif name.endswith("sinks"):
                p.copy_(2 + 4 * u)
            elif "router.bias" in name:
                p.copy_(1.5 * u)
            elif "gate_up_proj_bias" in name:
                p.copy_(3 * u)
            elif "bias" in name:
                p.copy_(0.5 * u)
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            elif "gate_up_proj" in name:  # [NE][E][2F]
                p.copy_(torch.randn(p.shape, generator=g) * 8 / math.sqrt(p.shape[1]))
            elif "down_proj" in name:  # [NE][F][E]
                p.copy_(torch.randn(p.shape, generator=g) * 2.5 / math.sqrt(p.shape[1]))
            else:
                s = 4.0 if ("q_proj" in name or "k_proj" in name) else 2.5
                p.copy_(torch.randn(p.shape, generator=g) * s / math.sqrt(p.shape[-1]))
            p.copy_(p.bfloat16().float())


def greedy(model, prompt, n):
    seq, margins = list(prompt), []
    with torch.no_grad():
        for _ in range(n):
            row = model(torch.tensor([seq])).logits[0, -1]
            top = torch.topk(row, 2).values
            margins.append(float(top[0] - top[1]))
            seq.append(int(torch.argmax(row)))
    return seq[len(prompt):], min(margins)


# The converter knows a BPE pre-tokenizer by the hash of what it makes of a
# fixed text; this test tokenizer (Qwen 2/3's split rules) has no entry, so
# the converter runs with get_vocab_base_pre answering "qwen2"; nothing else
# is changed.
RUN_CONVERTER = """
import runpy, sys
sys.path.insert(0, sys.argv[1])
import conversion.base as base
for cls in vars(base).values():
    if isinstance(cls, type) and "get_vocab_base_pre" in vars(cls):
        cls.get_vocab_base_pre = lambda self, tokenizer: "qwen2"
sys.argv = [sys.argv[1] + "/convert_hf_to_gguf.py"] + sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def convert_gguf(path):
    if not (LCPP / "convert_hf_to_gguf.py").exists():
        sys.exit(f"{LCPP}/convert_hf_to_gguf.py is missing (set LCPP to an unpacked llama.cpp)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(LCPP / "gguf-py"),
                                                                     os.environ.get("PYTHONPATH")])))
    subprocess.run([sys.executable, "-c", RUN_CONVERTER, str(LCPP), str(HF), "--outtype", "f32",
                    "--outfile", str(path)], check=True, env=env)


def rel_change(a, b):
    r = (a - b).abs().amax(-1) / a.abs().amax(-1)
    return float(r.max()), float(r[:, -1].min())


def variant(model, vocab, edit=None, **kw):
    v = make_model(vocab, **kw)
    v.load_state_dict(model.state_dict())
    if edit:
        with torch.no_grad():
            for name, p in v.named_parameters():
                edit(name, p)
    return v


def main():
    torch.manual_seed(SEED)
    if OUT.exists():
        shutil.rmtree(OUT)
    HF.mkdir(parents=True)
    tok = AutoTokenizer.from_pretrained(ROOT / "tests/golden/qwen3/hf")
    tok.add_special_tokens({"additional_special_tokens": HARMONY})
    tok.chat_template = (LCPP / "models/templates/openai-gpt-oss-120b.jinja").read_text(encoding="utf-8")
    vocab = len(tok)
    assert vocab == 519 and tok.convert_tokens_to_ids("<|return|>") == 517, vocab
    model = make_model(vocab)
    draw(model)
    model.to(torch.bfloat16).save_pretrained(HF, safe_serialization=True)
    tok.save_pretrained(HF)
    model = GptOssForCausalLM.from_pretrained(HF, dtype=torch.float32, attn_implementation="eager").eval()
    cfg = json.loads((HF / "config.json").read_text())
    assert cfg["layer_types"] == ["sliding_attention", "full_attention"], cfg["layer_types"]

    no_rope = {"rope_type": "default", "rope_theta": 10000.0}
    variants = {
        "sinks": variant(model, vocab, lambda n, p: p.fill_(-math.inf) if n.endswith("sinks") else None),
        "sliding_window": variant(model, vocab, window=4096),
        "yarn": variant(model, vocab, rope=no_rope),
        "swiglu_clamp": variant(model, vocab, limit=1e6),
        "router_bias": variant(model, vocab, lambda n, p: p.zero_() if "router.bias" in n else None),
        "yarn_truncate": variant(model, vocab, rope=dict(YARN, truncate=False)),
    }
    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    prompts = [ids[o:o + N_POS] for o in (0, 150, 300)]
    assert all(len(p) == N_POS for p in prompts)
    x = torch.tensor(prompts)
    checks = {}
    with torch.no_grad():
        logits = model(x).logits.float()
        for k, v in variants.items():
            lv = v(x).logits.float()
            if k == "yarn_truncate":  # test-gpt-oss.c checks a truncate-false folder against these
                trunc_false_last = [[round(float(f), 6) for f in row] for row in lv[:, -1]]
            mx, last = rel_change(logits, lv)
            # the sink, clamp and router bias act from the first position; the
            # window and YaRN's factor over distance, so the last position
            checks[f"max_rel_logit_change_without_{k}"] = mx
            checks[f"min_rel_logit_change_without_{k}_last_position"] = last
            print(f"without {k}: max relative logit change {mx:.3g} (last position, smallest {last:.3g})")
    for k in ("sinks", "sliding_window", "yarn", "swiglu_clamp", "router_bias"):
        assert checks[f"max_rel_logit_change_without_{k}"] > 0.5, k
        assert checks[f"min_rel_logit_change_without_{k}_last_position"] > (0.005 if k == "sinks" else 0.02), k
    outs = [greedy(model, p, N_GREEDY) for p in prompts]
    print("greedy margins", [round(m, 3) for _, m in outs])
    checks["min_top1_top2_margin_greedy"] = min(m for _, m in outs)
    save_file({"logits": logits.contiguous()}, str(OUT / "logits.safetensors"))
    import tokenizers
    import transformers
    ref = {
        "generator": "scripts/reference/make-gpt-oss-fixtures.py",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "python": sys.version.split()[0]},
        "prompts": prompts,
        "greedy": [o for o, _ in outs],
        "checks": checks,
        "logits_truncate_false_last_position": trunc_false_last,
    }
    (OUT / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    convert_gguf(OUT / "gpt-oss-f32.gguf")
    subprocess.run([sys.executable, str(pathlib.Path(__file__).with_name("make-gpt-oss-mxfp4-fixture.py"))], check=True)


if __name__ == "__main__":
    main()
