#!/usr/bin/env python3
"""Makes tests/golden/{granite,granitemoe,olmo2,smollm3}/
(test-granite-olmo2-smollm3.c): tiny random GraniteForCausalLM,
GraniteMoeForCausalLM, Olmo2ForCausalLM and SmolLM3ForCausalLM models against transformers float32 (eager attention).

Each folder:
  hf/                 the model as transformers 5 saves it (config.json,
                      model.safetensors F32) with the tokenizer of
                      tests/golden/qwen3/hf (byte-level BPE, 512 ids), its
                      chat template removed
  <name>-f32.gguf     hf/ converted by llama.cpp's own convert_hf_to_gguf.py
                      (llama-cpp-python 0.3.36 source package, --outtype
                      f32). The converter names a BPE pre-tokenizer by
                      hashing its output on a test string, which this
                      tokenizer cannot match: it is told "qwen2" (the split
                      the tokenizer uses); everything else is its own.
  logits.safetensors  "logits" F32 [3, 32, 512]: transformers' logits at every
                      position of the 3 prompts
  *-chat_template.jinja  (granite, smollm3) the family's real chat template,
                      llama.cpp's copy in models/templates
  reference.json      the prompts (32 ids of long_text.txt each), the greedy
                      32-token continuations (argmax loop without cache), and
                      checks: for each distinctive feature, how far the logits
                      of the last position move (relative to the row's
                      largest, the smallest over the prompts) when the
                      feature is turned off, which must be far above the
                      tests' 1e-3; the smallest top-1 - top-2 greedy margin

The features:
  granite  embedding_multiplier 6, residual_multiplier 0.5,
           attention_multiplier 0.4 (instead of head_dim^-1/2 = 0.25),
           logits_scaling 3; 2 layers
  granitemoe the same multipliers; every layer 2 of 4 SwiGLU experts of 32
           (softmax over the top 2 router logits); 2 layers
  olmo2    no pre-norms, post-norms after attention and MLP, Q and K
           RMS-normalised over all heads at once (gains of n_head*head_dim);
           checked against per-head QK norms and against no post-norms;
           2 layers
  smollm3  4 layers, layer 3 without RoPE (no_rope_layers [1, 1, 1, 0], what
           llama.cpp hard-codes for a GGUF), tied embeddings; checked against
           RoPE on every layer

    PYTHONPATH=/dir/with/sentencepiece ~/.cache/wick/grammar-anchors-venv/bin/python \\
        scripts/reference/make-granite-olmo2-smollm3-fixtures.py [granite|granitemoe|olmo2|smollm3 ...]
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
from transformers import (AutoTokenizer, GraniteConfig, GraniteForCausalLM, GraniteMoeConfig, GraniteMoeForCausalLM,
                          Olmo2Config, Olmo2ForCausalLM, SmolLM3Config, SmolLM3ForCausalLM)

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEED = 4242
CACHE = pathlib.Path(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")))
LCPP = pathlib.Path(os.environ.get("LCPP", CACHE / "llama.cpp/src/llama_cpp_python-0.3.36/vendor/llama.cpp"))
N_POS, N_GREEDY = 32, 32
TEMPLATES = {"granite": ("ibm-granite-granite-3.3-2B-Instruct.jinja", "granite-3.3-chat_template.jinja"),
             "smollm3": ("HuggingFaceTB-SmolLM3-3B.jinja", "smollm3-chat_template.jinja")}
GRANITE = dict(embedding_multiplier=6.0, residual_multiplier=0.5, attention_multiplier=0.4, logits_scaling=3.0)


def common(tok):
    return dict(vocab_size=512, hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2,
                max_position_embeddings=256, bos_token_id=None, eos_token_id=tok.eos_token_id,
                pad_token_id=tok.pad_token_id)


def make(family, tok, **over):
    c = common(tok)
    if family == "granite":
        cfg = GraniteConfig(**c, num_hidden_layers=2, rms_norm_eps=1e-5, tie_word_embeddings=False,
                            **{**GRANITE, **over})
        cls = GraniteForCausalLM
    elif family == "granitemoe":
        c["intermediate_size"] = 32
        cfg = GraniteMoeConfig(**c, num_hidden_layers=2, rms_norm_eps=1e-5, tie_word_embeddings=False,
                               num_local_experts=4, num_experts_per_tok=2, **{**GRANITE, **over})
        cls = GraniteMoeForCausalLM
    elif family == "olmo2":
        cfg = Olmo2Config(**c, num_hidden_layers=2, rms_norm_eps=1e-6, tie_word_embeddings=False, **over)
        cls = Olmo2ForCausalLM
    else:
        cfg = SmolLM3Config(**c, num_hidden_layers=4, rms_norm_eps=1e-6, tie_word_embeddings=True,
                            no_rope_layers=over.get("no_rope_layers", [1, 1, 1, 0]))
        cls = SmolLM3ForCausalLM
    cfg._attn_implementation = "eager"
    return cls(cfg).eval()


def draw(model):
    """Embeddings N(0, 1); q/k projections N(0, (6/sqrt(fan_in))^2) so scores
    are large; other matrices 2.5/sqrt(fan_in); norm gains 1 +- 0.3."""
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() == 1:
                p.copy_(1 + 0.3 * (2 * torch.rand(p.shape, generator=g) - 1))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                s = 6.0 if ("q_proj" in name or "k_proj" in name) else 2.5
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


class PerHeadNorm(torch.nn.Module):
    """An OLMo 2 q_norm/k_norm applied per head (Qwen 3's way) with the same
    gains: what the full-width norm is checked against."""

    def __init__(self, norm, head_dim):
        super().__init__()
        self.norm, self.d = norm, head_dim

    def forward(self, x):
        shape = x.shape
        h = x.reshape(*shape[:-1], -1, self.d).float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.norm.variance_epsilon)
        return self.norm.weight * h.reshape(shape)


def variants(family, model, tok):
    """(check name, model with the feature off) pairs."""
    out = []
    sd = model.state_dict()
    if family in ("granite", "granitemoe"):
        neutral = dict(embedding_multiplier=1.0, residual_multiplier=1.0, attention_multiplier=0.25,
                       logits_scaling=1.0)
        for k, v in neutral.items():
            m = make(family, tok, **{k: v})
            m.load_state_dict(sd)
            out.append((k, m))
    elif family == "olmo2":
        m = make(family, tok)
        m.load_state_dict(sd)
        for layer in m.model.layers:
            a = layer.self_attn
            a.q_norm, a.k_norm = PerHeadNorm(a.q_norm, a.head_dim), PerHeadNorm(a.k_norm, a.head_dim)
        out.append(("full_width_qk_norm", m))
        m = make(family, tok)
        m.load_state_dict(sd)
        for layer in m.model.layers:
            layer.post_attention_layernorm = torch.nn.Identity()
            layer.post_feedforward_layernorm = torch.nn.Identity()
        out.append(("post_norms", m))
    else:
        m = make(family, tok, no_rope_layers=[1, 1, 1, 1])
        m.load_state_dict(sd)
        out.append(("nope_layer", m))
    return out


# The converter knows a BPE pre-tokenizer by the hash of what it makes of a
# fixed text; this 512-piece test tokenizer (Qwen 2/3's split rules) has no
# entry, so the converter runs with get_vocab_base_pre answering "qwen2";
# nothing else is changed.
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


def convert_gguf(hf, path):
    if not (LCPP / "convert_hf_to_gguf.py").exists():
        sys.exit(f"{LCPP}/convert_hf_to_gguf.py is missing (set LCPP to an unpacked llama.cpp)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(LCPP / "gguf-py"),
                                                                     os.environ.get("PYTHONPATH")])))
    subprocess.run([sys.executable, "-c", RUN_CONVERTER, str(LCPP), str(hf), "--outtype", "f32",
                    "--outfile", str(path)], check=True, env=env)


def build(family):
    out = ROOT / "tests/golden" / family
    hf = out / "hf"
    torch.manual_seed(SEED)
    if out.exists():
        shutil.rmtree(out)
    hf.mkdir(parents=True)
    tok = AutoTokenizer.from_pretrained(ROOT / "tests/golden/qwen3/hf")
    tok.chat_template = None
    model = make(family, tok)
    draw(model)
    model.save_pretrained(hf, safe_serialization=True)
    tok.save_pretrained(hf)
    (hf / "chat_template.jinja").unlink(missing_ok=True)
    model = type(model).from_pretrained(hf, dtype=torch.float32, attn_implementation="eager").eval()

    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    prompts = [ids[o:o + N_POS] for o in (0, 150, 300)]
    assert all(len(p) == N_POS for p in prompts)
    x = torch.tensor(prompts)
    with torch.no_grad():
        logits = model(x).logits.float()
    checks = {}
    for name, m in variants(family, model, tok):
        with torch.no_grad():
            other = m(x).logits.float()
        rel = (logits - other).abs().amax(-1) / logits.abs().amax(-1)
        checks[f"min_rel_logit_change_without_{name}_last_position"] = float(rel[:, -1].min())
        print(f"{family}: without {name}: relative logit change at the last position >= {float(rel[:, -1].min()):.3g}")
        assert float(rel[:, -1].min()) > 0.01, name
    outs = [greedy(model, p, N_GREEDY) for p in prompts]
    checks["min_top1_top2_margin_greedy"] = min(m for _, m in outs)
    print("greedy margins", [round(m, 3) for _, m in outs])
    save_file({"logits": logits.contiguous()}, str(out / "logits.safetensors"))
    import tokenizers
    import transformers
    ref = {
        "generator": "scripts/reference/make-granite-olmo2-smollm3-fixtures.py",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "python": sys.version.split()[0]},
        "prompts": prompts,
        "greedy": [o for o, _ in outs],
        "checks": checks,
    }
    (out / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    convert_gguf(hf, out / f"{family}-f32.gguf")
    if family in TEMPLATES:  # the real chat template, for the test's rendering checks
        shutil.copy(LCPP / "models/templates" / TEMPLATES[family][0], out / TEMPLATES[family][1])


def main():
    for family in sys.argv[1:] or ["granite", "granitemoe", "olmo2", "smollm3"]:
        build(family)


if __name__ == "__main__":
    main()
