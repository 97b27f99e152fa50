#!/usr/bin/env python3
"""Makes tests/golden/qwen3-moe/ (test-qwen3-moe.c): a tiny random
Qwen3MoeForCausalLM against transformers float32.

  hf/                 the model as transformers 5 saves it: hidden 64, 3 layers,
                      4 heads / 2 KV heads of 16, 8 experts of width 32, top 2,
                      norm_topk_prob true, every layer sparse (llama.cpp's
                      converter cannot map the dense MLP of mlp_only_layers for
                      qwen3moe: "Can not map tensor ...mlp.down_proj.weight"),
                      untied output; model.safetensors
                      (BF16, every weight exact in BF16 and F16); the tokenizer of tests/golden/qwen3/hf (512 ids)
  qwen3-moe-f16.gguf  hf/ converted by llama.cpp's own convert_hf_to_gguf.py
                      (llama-cpp-python 0.3.36 source package, --outtype f16;
                      see RUN_CONVERTER)
  logits.safetensors  "logits" F32 [3, 32, 512]: transformers' logits at every
                      position of the 3 prompts
  reference.json      the prompts (32 ids of long_text.txt), the greedy 32-token
                      continuations (argmax loop without cache) and checks: the
                      smallest top-1 - top-2 margin of the greedy steps, and how
                      far the logits move without norm_topk_prob (relative)

    ~/.cache/wick/grammar-anchors-venv/bin/python scripts/reference/make-qwen3-moe-fixtures.py

(llama.cpp's converter needs `sentencepiece` importable: PYTHONPATH=DIR after
pip install --target DIR sentencepiece; LCPP names the unpacked llama.cpp.)
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
from transformers import AutoTokenizer, Qwen3MoeConfig, Qwen3MoeForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/golden/qwen3-moe"
HF = OUT / "hf"
SEED = 3141
CACHE = pathlib.Path(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")))
LCPP = pathlib.Path(os.environ.get("LCPP", CACHE / "llama.cpp/src/llama_cpp_python-0.3.36/vendor/llama.cpp"))
N_POS, N_GREEDY = 32, 32


def make_model(vocab, norm_topk=True):
    cfg = Qwen3MoeConfig(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=8,
                         num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=norm_topk,
                         decoder_sparse_step=1, mlp_only_layers=[], max_position_embeddings=512,
                         rms_norm_eps=1e-6, tie_word_embeddings=False, rope_parameters={"rope_type": "default",
                                                                                        "rope_theta": 10000.0},
                         bos_token_id=None, eos_token_id=509, pad_token_id=507)
    return Qwen3MoeForCausalLM(cfg).eval()


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
                p.copy_(torch.randn(p.shape, generator=g) * 2.5 / math.sqrt(p.shape[-1]))
            # exact in BF16 (the folder) and F16 (the GGUF): fixtures stay small
            q = p.bfloat16().float()
            p.copy_(torch.where(q.half().float() == q, q, torch.zeros_like(q)))


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
# fixed text; this 512-piece test tokenizer (Qwen 2/3's split rules) has no
# entry, so the converter runs with get_vocab_base_pre answering "qwen2" (what
# it writes for Qwen 3's own tokenizer); nothing else is changed.
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
    subprocess.run([sys.executable, "-c", RUN_CONVERTER, str(LCPP), str(HF), "--outtype", "f16",
                    "--outfile", str(path)], check=True, env=env)


def main():
    torch.manual_seed(SEED)
    if OUT.exists():
        shutil.rmtree(OUT)
    HF.mkdir(parents=True)
    tok = AutoTokenizer.from_pretrained(ROOT / "tests/golden/qwen3/hf")
    vocab = 512
    model = make_model(vocab)
    draw(model)
    model.to(torch.bfloat16).save_pretrained(HF, safe_serialization=True)
    tok.save_pretrained(HF)
    model = Qwen3MoeForCausalLM.from_pretrained(HF, dtype=torch.float32).eval()
    kinds = [type(layer.mlp).__name__ for layer in model.model.layers]
    print("mlp kinds", kinds)
    assert len(set(kinds)) == 1, kinds
    plain = make_model(vocab, norm_topk=False)
    plain.load_state_dict(model.state_dict())

    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    prompts = [ids[o:o + N_POS] for o in (0, 150, 300)]
    assert all(len(p) == N_POS for p in prompts)
    x = torch.tensor(prompts)
    with torch.no_grad():
        logits = model(x).logits.float()
        logits_plain = plain(x).logits.float()
    rel = float(((logits - logits_plain).abs().amax(-1) / logits.abs().amax(-1)).max())
    print(f"norm_topk_prob vs not: max relative logit change {rel:.3g}")
    outs = [greedy(model, p, N_GREEDY) for p in prompts]
    print("greedy margins", [round(m, 3) for _, m in outs])
    save_file({"logits": logits.contiguous()}, str(OUT / "logits.safetensors"))
    import tokenizers
    import transformers
    ref = {
        "generator": "scripts/reference/make-qwen3-moe-fixtures.py",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "python": sys.version.split()[0]},
        "prompts": prompts,
        "greedy": [o for o, _ in outs],
        "checks": {"max_rel_logit_change_without_norm_topk_prob": rel,
                   "min_top1_top2_margin_greedy": min(m for _, m in outs)},
    }
    (OUT / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    convert_gguf(OUT / "qwen3-moe-f16.gguf")


if __name__ == "__main__":
    main()
