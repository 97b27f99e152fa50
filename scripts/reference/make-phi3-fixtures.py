#!/usr/bin/env python3
"""Makes tests/golden/phi3/ (test-phi3.c): two tiny random Phi3ForCausalLM
models against transformers float32 (attn_implementation "eager").

  longrope/           Phi-3.5-mini-like: hidden 64, 2 layers, 4 heads, 2 KV
                      heads (head_dim 16, all 16 dims rotated: 8 pairs),
                      intermediate 64, separate lm_head, sliding_window 12 (as
                      Phi-3-mini-4k has one: 2047), LongRoPE with
                      original_max_position_embeddings 16 and
                      max_position_embeddings 128 (factor 8, attention factor
                      sqrt(1 + ln 8 / ln 16) = 1.3229): the 32-position prompts
                      are longer than 16, so transformers uses long_factor;
                      wick's test context (128 > 16) picks the long factors too
  mini/               Phi-4-mini-like: hidden 64, 2 layers, 4 heads, 2 KV
                      heads, intermediate 32, partial_rotary_factor 0.75 (12 of 16 dims rotated:
                      6 pairs), embeddings tied, LongRoPE with
                      original_max_position_embeddings 128 and
                      max_position_embeddings 256 (attention factor
                      sqrt(1 + ln 2 / ln 128) = 1.0691): every sequence here
                      (<= 64 positions) and wick's 128-position test context
                      stay within 128, so both use short_factor

Each holds:
  hf/                 the model as transformers 5 saves it (fused qkv_proj and
                      gate_up_proj, F32), the tokenizer of
                      tests/golden/gemma4/dense (512 pieces, <bos> = 2) without
                      its chat template, plus tokenizer.model written by hand
                      (make-gemma2-fixtures.py's spm_model), which llama.cpp's
                      Phi-3 converter requires; longrope's has three special
                      tokens renamed <|end|> (4), <|user|> (5), <|assistant|>
                      (6), no BOS added (Phi-3.5's add_bos_token false) and
                      Phi-3.5-mini-instruct's chat template (llama.cpp's
                      models/templates copy)
  phi3-f32.gguf       hf/ converted by llama.cpp's own convert_hf_to_gguf.py
                      (llama-cpp-python 0.3.36 source package, --outtype f32):
                      attn_qkv, ffn_up of 2·n_ff rows, rope_factors_long /
                      rope_factors_short, rope.scaling.attn_factor
  logits.safetensors  "logits" F32 [3, 32, 512]: transformers' logits at every
                      position of the 3 prompts; longrope's also
                      "logits_short" F32 [16, 512]: those of the first prompt's
                      first 16 tokens alone (no longer than the original
                      context, so transformers takes the short factors)
  reference.json      the prompts (<bos> + 31 ids of long_text.txt), the greedy
                      32-token continuations (argmax loop without cache), and
                      checks: how far the logits move (relative, the tests
                      want > 1e-2, ten times their tolerance) without each
                      feature: the factors in use (set to 1), the attention
                      factor (set to 1), the other factor set in use (long vs
                      short), the sliding window, partial rotary (all dims
                      rotated); the smallest top-1 - top-2 margin of the greedy
                      steps; longrope's: chats (apply_chat_template's prompt
                      and its ids) and the ids of the turn markers

    PYTHONPATH=/tmp/sp ~/.cache/wick/grammar-anchors-venv/bin/python scripts/reference/make-phi3-fixtures.py

(llama.cpp's converter needs the `sentencepiece` module importable; LCPP names
its unpacked source.)
"""
import importlib.util
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, Phi3Config, Phi3ForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/golden/phi3"
SEED = 3142
CACHE = pathlib.Path(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")))
LCPP = pathlib.Path(os.environ.get("LCPP", CACHE / "llama.cpp/src/llama_cpp_python-0.3.36/vendor/llama.cpp"))
N_POS, N_GREEDY = 32, 32

_spec = importlib.util.spec_from_file_location("gemma2fix", ROOT / "scripts/reference/make-gemma2-fixtures.py")
_gemma2 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gemma2)
spm_model = _gemma2.spm_model

g = torch.Generator().manual_seed(SEED)
LONGROPE = {  # per-pair divisors as Phi-3.5's: short near 1, long growing with the pair
    "short": [round(1.0 + 0.1 * i + 0.2 * float(torch.rand(1, generator=g)), 4) for i in range(8)],
    "long": [round(1.0 + 4.0 * i * i / 7 + 0.5 * float(torch.rand(1, generator=g)), 4) for i in range(8)],
}
FIXTURES = {
    "longrope": dict(layers=2, ff=64, tie=False, window=12, partial=1.0, orig=16, max_pos=128, pairs=8, chat=True),
    "mini": dict(layers=2, ff=32, tie=True, window=None, partial=0.75, orig=128, max_pos=256, pairs=6, chat=False),
}
RENAME = {"<mask>": "<|end|>", "<start_of_turn>": "<|user|>", "<end_of_turn>": "<|assistant|>"}
CHATS = [("user", [{"role": "user", "content": "Hello there"}]),
         ("system", [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Hi"}]),
         ("turns", [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
                    {"role": "user", "content": "How are you?"}])]


def rope_params(f, short=None, long=None, attn=None, partial=None, pairs=None):
    pairs = pairs or f["pairs"]
    p = {"rope_type": "longrope", "rope_theta": 10000.0,
         "short_factor": short or LONGROPE["short"][:pairs], "long_factor": long or LONGROPE["long"][:pairs],
         "partial_rotary_factor": partial or f["partial"],
         "original_max_position_embeddings": f["orig"]}
    if attn is not None:
        p["attention_factor"] = attn
    return p


def make_model(vocab, f, rope=None, window="same"):
    cfg = Phi3Config(vocab_size=vocab, hidden_size=64, intermediate_size=f["ff"], num_hidden_layers=f["layers"],
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=f["max_pos"],
                     original_max_position_embeddings=f["orig"], rms_norm_eps=1e-5,
                     rope_parameters=rope or rope_params(f),
                     sliding_window=f["window"] if window == "same" else window, tie_word_embeddings=f["tie"],
                     bos_token_id=2, eos_token_id=1, pad_token_id=0)
    cfg._attn_implementation = "eager"
    return Phi3ForCausalLM(cfg).eval()


def draw(model):
    """Embeddings N(0, 1); qkv_proj N(0, (6/sqrt(fan_in))^2) so that scores
    are large and RoPE moves them; other matrices 2.5/sqrt(fan_in); norm
    gains 1 +- 0.3."""
    gen = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() == 1:
                p.copy_(1 + 0.3 * (2 * torch.rand(p.shape, generator=gen) - 1))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            else:
                s = 6.0 if "qkv_proj" in name else 2.5
                p.copy_(torch.randn(p.shape, generator=gen) * s / math.sqrt(p.shape[1]))


def greedy(model, prompt, n):
    seq, margins = list(prompt), []
    with torch.no_grad():
        for _ in range(n):
            row = model(torch.tensor([seq])).logits[0, -1]
            top = torch.topk(row, 2).values
            margins.append(float(top[0] - top[1]))
            seq.append(int(torch.argmax(row)))
    return seq[len(prompt):], min(margins)


def convert_gguf(hf, path):
    if not (LCPP / "convert_hf_to_gguf.py").exists():
        sys.exit(f"{LCPP}/convert_hf_to_gguf.py is missing (set LCPP)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(LCPP / "gguf-py"),
                                                                     os.environ.get("PYTHONPATH")])))
    subprocess.run([sys.executable, str(LCPP / "convert_hf_to_gguf.py"), str(hf), "--outtype", "f32",
                    "--outfile", str(path)], check=True, env=env)


def rel_change(a, b):
    r = (a - b).abs().amax(-1) / a.abs().amax(-1)
    return float(r.max()), float(r[:, -1].min())


def variants(vocab, f):
    """The models each feature is checked against: name -> model (same weights)."""
    pairs, in_use = f["pairs"], "long" if f["orig"] < N_POS else "short"
    ones = [1.0] * pairs
    attn = math.sqrt(1 + math.log(f["max_pos"] / f["orig"]) / math.log(f["orig"]))
    v = {
        f"{in_use}_factors": make_model(vocab, f, rope_params(f, **{in_use: ones}, attn=attn)),
        "attention_factor": make_model(vocab, f, rope_params(f, attn=1.0)),
        "short_vs_long": make_model(vocab, f, rope_params(f, **{in_use: LONGROPE["short" if in_use == "long" else
                                                                                  "long"][:pairs]})),
    }
    if f["window"]:
        v["sliding_window"] = make_model(vocab, f, window=None)
    if f["partial"] < 1:
        full = rope_params(f, short=LONGROPE["short"], long=LONGROPE["long"], partial=1.0, pairs=8)
        v["partial_rotary"] = make_model(vocab, f, full)
    return v


def phi_tokenizer(src, dst):
    """src's tokenizer files in dst with three of its special tokens renamed
    to Phi-3's turn markers (same ids, still special) and Phi-3.5-mini's
    chat template; tokenizer.model (spm_model) of the renamed pieces."""
    dst.mkdir(parents=True, exist_ok=True)
    text = (src / "tokenizer.json").read_text()
    for old, new in RENAME.items():
        assert text.count(f'"{old}"') >= 2, old  # the vocab and added_tokens
        text = text.replace(f'"{old}"', f'"{new}"')
    tj = json.loads(text)
    tj["post_processor"] = None  # no BOS added, as Phi-3.5's tokenizer (add_bos_token false)
    (dst / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False))
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    cfg["add_bos_token"] = False
    cfg["chat_template"] = (LCPP / "models/templates/microsoft-Phi-3.5-mini-instruct.jinja").read_text()
    cfg.pop("mask_token", None)
    (dst / "tokenizer_config.json").write_text(json.dumps(cfg, indent=1))
    (dst / "tokenizer.model").write_bytes(spm_model(dst / "tokenizer.json"))
    return AutoTokenizer.from_pretrained(dst)


def make(name, f, tok, src):
    out = OUT / name
    hf = out / "hf"
    hf.mkdir(parents=True)
    vocab = len(tok)
    model = make_model(vocab, f)
    draw(model)
    model.save_pretrained(hf, safe_serialization=True)
    chats = []
    if f["chat"]:
        tok = phi_tokenizer(src, hf)
        for cname, msgs in CHATS:
            s = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
            chats.append({"name": cname, "messages": msgs, "prompt": s,
                          "prompt_ids": tok(s, add_special_tokens=False)["input_ids"]})
    else:
        tok.save_pretrained(hf)
        (hf / "chat_template.jinja").unlink(missing_ok=True)
        (hf / "tokenizer.model").write_bytes(spm_model(src / "tokenizer.json"))
    model = Phi3ForCausalLM.from_pretrained(hf, torch_dtype=torch.float32, attn_implementation="eager").eval()
    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    prompts = [[2] + ids[0:N_POS - 1], [2] + ids[200:200 + N_POS - 1], [2] + ids[400:400 + N_POS - 1]]
    x = torch.tensor(prompts)
    checks = {}
    with torch.no_grad():
        logits = model(x).logits.float()
        for what, alt in variants(vocab, f).items():
            alt.load_state_dict(model.state_dict(), strict=False)
            mx, last = rel_change(logits, alt(x).logits.float())
            print(f"{name}: without {what}: max relative logit change {mx:.3g} (last position, smallest {last:.3g})")
            assert last > 0.02, (name, what, last)
            checks[f"max_rel_logit_change_without_{what}"] = mx
            checks[f"min_rel_logit_change_without_{what}_last_position"] = last
    outs = [greedy(model, p, N_GREEDY) for p in prompts]
    checks["min_top1_top2_margin_greedy"] = min(m for _, m in outs)
    print(name, "greedy margins", [round(m, 3) for _, m in outs])
    arrays = {"logits": logits.contiguous()}
    if f["orig"] < N_POS:  # the first prompt cut to the original context: transformers takes the short factors
        with torch.no_grad():
            arrays["logits_short"] = model(x[:1, :f["orig"]]).logits.float()[0].contiguous()
    save_file(arrays, str(out / "logits.safetensors"))
    import tokenizers
    import transformers
    ref = {
        "generator": "scripts/reference/make-phi3-fixtures.py",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "python": sys.version.split()[0]},
        "config": f,
        "rope_attention_factor": float(model.model.rotary_emb.attention_scaling),
        "prompts": prompts,
        "greedy": [o for o, _ in outs],
        "checks": checks,
        "chats": chats,
        "end_of_turn": {t: tok.convert_tokens_to_ids(t) for t in RENAME.values()} if chats else {},
    }
    (out / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    convert_gguf(hf, out / "phi3-f32.gguf")


def main():
    torch.manual_seed(SEED)
    if OUT.exists():
        shutil.rmtree(OUT)
    src = ROOT / "tests/golden/gemma4/dense"
    tok = AutoTokenizer.from_pretrained(src)
    tok.chat_template = None
    for name, f in FIXTURES.items():
        make(name, f, tok, src)


if __name__ == "__main__":
    main()
