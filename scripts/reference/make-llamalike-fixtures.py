#!/usr/bin/env python3
"""Makes tests/golden/llamalike/<case>/ (test-llamalike.c): tiny random
models of the Llama-shaped families people run, each against transformers
float32, each also converted by llama.cpp's own convert_hf_to_gguf.py
(llama-cpp-python 0.3.36 source package, --outtype f32).

Cases (hidden 64, 2 layers, 4 heads / 2 KV heads unless said; F32 weights):
  mistral    MistralForCausalLM, sliding_window 8 (so the window matters
             within 32 positions: checks.max_rel_logit_change_without_window).
             llama.cpp's converter writes arch "llama" and drops
             sliding_window (its llama graph has no window; Mistral 7B v0.2+
             ship sliding_window null), so the GGUF is compared against a
             second reference, mistral/no-window/, made by the same weights
             with sliding_window null.
  nemo       MistralForCausalLM as Mistral-Nemo: head_dim 32 != 64 / 4
             (GGUF attention.key_length), rope_theta 1e6, window null.
  mixtral    MixtralForCausalLM: 4 experts of width 32, top 2, softmax router
             renormalised over the chosen (GGUF arch "llama" with
             expert_count, ffn_gate_inp, ffn_{gate,up,down}_exps);
             checks: how far the logits move with top 1 instead.
  falcon3    LlamaForCausalLM shaped as Falcon 3 (head_dim 32 with 2 heads /
             1 KV head, rope_theta 1000042, rms eps 1e-6): the converter
             writes nothing special for it (only a pre-tokenizer name).
  exaone     EXAONE 3.5 (ExaoneForCausalLM, remote code; transformers 5.24
             has its config but no model): a LlamaForCausalLM's weights
             saved under EXAONE's tensor names (transformer.h.N.attn.
             attention.q_proj, mlp.c_fc_0, ...) and config keys (num_layers,
             layer_norm_epsilon, activation_function), tied embeddings; the
             Llama's float32 logits are the reference (the math is the same).
             The converter writes arch "exaone" without permuting Q and K.
             RoPE scaling llama3 as EXAONE 3.5 ships (factor 8, original
             context 64 here, so pairs are kept, interpolated and divided
             within 32 positions); the converter writes rope_freqs.weight.
  internlm3  InternLM3ForCausalLM (remote code) the same way: Llama's tensor
             names, config model_type "internlm3", qkv_bias/bias false,
             head_dim 32; the converter writes arch "llama". Its set_vocab
             insists on a SentencePiece tokenizer.model, so the converter runs
             with Llama's set_vocab (tokenizer.json) instead; nothing else
             changed. (InternLM 2's fused wqkv: not made.)
  r1-qwen    Qwen2ForCausalLM carrying DeepSeek-R1-Distill-Qwen-32B's chat
             template (llama.cpp's models/templates copy) and R1's special
             tokens added to the tiny Qwen tokenizer; reference.json "chats":
             conversations rendered by transformers' jinja2 and their ids.
  r1-llama   LlamaForCausalLM likewise with DeepSeek-R1-Distill-Llama-8B's.
  tekken     no model: Mistral-Nemo's tokenizer kind (case_tekken), as
             tokenizer.json and as the converter's --vocab-only GGUF
             (pre "tekken"), and the tricky strings' ids.

Each case folder: hf/, <case>-f32.gguf, logits.safetensors ("logits" F32
[3, 32, vocab]: transformers' logits at every position of 3 prompts of 32
ids of long_text.txt), reference.json (prompts, greedy 32-token
continuations by an argmax loop without cache, vocab, checks).

    PYTHONPATH=DIR ~/.cache/wick/grammar-anchors-venv/bin/python scripts/reference/make-llamalike-fixtures.py [CASE...]

(DIR holds `sentencepiece`, which the converter imports; LCPP names the
unpacked llama.cpp.)
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
from transformers import (AutoTokenizer, LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                          MixtralConfig, MixtralForCausalLM, Qwen2Config, Qwen2ForCausalLM)

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/golden/llamalike"
CACHE = pathlib.Path(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")))
LCPP = pathlib.Path(os.environ.get("LCPP", CACHE / "llama.cpp/src/llama_cpp_python-0.3.36/vendor/llama.cpp"))
N_POS, N_GREEDY = 32, 32
SPM_TOK = ROOT / "tests/golden/gemma4/dense"  # SentencePiece-style BPE, 512 pieces
QWEN_TOK = ROOT / "tests/golden/qwen3/hf"     # Qwen's split rules, 512 ids
R1_TOKENS = ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"]
CHATS = [
    ("one_turn", [{"role": "user", "content": "Hello there"}]),
    ("system", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sky blue?"}]),
    ("multi_turn", [{"role": "user", "content": "2+2?"},
                    {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"},
                    {"role": "user", "content": "and 3+3?"}]),
]

# get_vocab_base_pre knows a pre-tokenizer by the hash of what it makes of a
# fixed text; the tiny test tokenizers have no entry, so it answers what the
# converter writes for the real model's tokenizer (PRE). InternLM 3's
# set_vocab reads only tokenizer.model: Llama's set_vocab is used instead.
# transformers 5.24's ExaoneConfig renames EXAONE's keys (num_layers ->
# num_hidden_layers, activation_function -> hidden_act) and the converter's
# ExaoneModel then fails on hparams["activation_function"]: for EXAONE the
# converter's load_hparams gives config.json as it is (what its own
# fallback reads when AutoConfig fails, as for remote-code models).
RUN_CONVERTER = """
import runpy, sys
sys.path.insert(0, sys.argv[1])
pre = sys.argv[2]
import conversion.base as base
if pre != "-":
    for cls in vars(base).values():
        if isinstance(cls, type) and "get_vocab_base_pre" in vars(cls):
            cls.get_vocab_base_pre = lambda self, tokenizer: pre
import conversion.internlm as internlm, conversion.llama as llama
internlm.InternLM3Model.set_vocab = llama.LlamaModel.set_vocab
internlm.InternLM3Model.origin_hf_arch = "InternLM3ForCausalLM"  # what LlamaModel's reads
internlm.InternLM3Model.is_mistral_format = False
import json, pathlib
load_hparams = base.ModelBase.load_hparams
def exaone_hparams(dir_model, is_mistral_format):
    cfg = json.loads((pathlib.Path(dir_model) / "config.json").read_text())
    return cfg if cfg.get("model_type") == "exaone" else load_hparams(dir_model, is_mistral_format)
base.ModelBase.load_hparams = staticmethod(exaone_hparams)
sys.argv = [sys.argv[1] + "/convert_hf_to_gguf.py"] + sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def draw(model, seed, scale=2.5):
    """Weights wider than the default init (Linear ~ N(0, (scale/sqrt(fan_in))^2),
    embeddings N(0, 1), norm gains 1 +- 0.3), so logits are far from uniform."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() == 1:
                p.copy_(1 + 0.3 * (2 * torch.rand(p.shape, generator=g) - 1))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) * scale / math.sqrt(p.shape[-1]))


def greedy(model, prompt, n):
    seq, margins = list(prompt), []
    with torch.no_grad():
        for _ in range(n):
            row = model(torch.tensor([seq])).logits[0, -1]
            top = torch.topk(row, 2).values
            margins.append(float(top[0] - top[1]))
            seq.append(int(torch.argmax(row)))
    return seq[len(prompt):], min(margins)


def rel_change(a, b):
    return float(((a - b).abs().amax(-1) / a.abs().amax(-1)).max())


def convert_gguf(hf, path, pre="-"):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(LCPP / "gguf-py"),
                                                                     os.environ.get("PYTHONPATH")])))
    subprocess.run([sys.executable, "-c", RUN_CONVERTER, str(LCPP), pre, str(hf), "--outtype", "f32",
                    "--outfile", str(path)], check=True, env=env, stdout=subprocess.DEVNULL)


def prompts_of(tok):
    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    ps = [ids[o:o + N_POS] for o in (0, 150, 300)]
    assert all(len(p) == N_POS for p in ps)
    return ps


def write_reference(out, model, prompts, vocab, checks, extra=None):
    x = torch.tensor(prompts)
    with torch.no_grad():
        logits = model(x).logits.float()
    outs = [greedy(model, p, N_GREEDY) for p in prompts]
    checks = dict(checks, min_top1_top2_margin_greedy=min(m for _, m in outs))
    save_file({"logits": logits.contiguous()}, str(out / "logits.safetensors"))
    import tokenizers
    import transformers
    ref = {"generator": "scripts/reference/make-llamalike-fixtures.py",
           "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                        "tokenizers": tokenizers.__version__, "python": sys.version.split()[0]},
           "vocab": vocab, "prompts": prompts, "greedy": [o for o, _ in outs], "checks": checks}
    ref.update(extra or {})
    (out / "reference.json").write_text(json.dumps(ref, indent=1, ensure_ascii=False) + "\n")
    print(out.name, checks, file=sys.stderr)
    return logits


def tokenizer(path, r1_template=None):
    tok = AutoTokenizer.from_pretrained(path)
    tok.chat_template = None
    if r1_template:
        tok.add_special_tokens({"additional_special_tokens": R1_TOKENS})
        tok.add_tokens(["<think>", "</think>"])
        tok.bos_token, tok.eos_token = R1_TOKENS[0], R1_TOKENS[1]
        if tok.backend_tokenizer.post_processor is not None:
            # the BOS that encoding adds is the template's bos_token, as in
            # the real R1 distills (the tiny tokenizer's own was <bos>)
            from tokenizers.processors import TemplateProcessing
            bos = R1_TOKENS[0]
            tok.backend_tokenizer.post_processor = TemplateProcessing(
                single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                special_tokens=[(bos, tok.convert_tokens_to_ids(bos))])
        tok.chat_template = (LCPP / "models/templates" / r1_template).read_text(encoding="utf-8")
    return tok


def save(model, tok, hf):
    hf.mkdir(parents=True)
    model.save_pretrained(hf, safe_serialization=True)
    tok.save_pretrained(hf)
    if tok.chat_template is None:
        (hf / "chat_template.jinja").unlink(missing_ok=True)


def llama_cfg(vocab, **kw):
    base = dict(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, max_position_embeddings=256, rms_norm_eps=1e-5,
                tie_word_embeddings=False, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                bos_token_id=2, eos_token_id=1, pad_token_id=0)
    base.update(kw)
    return base


def case_mistral(out):
    tok = tokenizer(SPM_TOK)
    vocab = len(tok)
    model = MistralForCausalLM(MistralConfig(**llama_cfg(vocab, sliding_window=8))).eval()
    draw(model, 101)
    save(model, tok, out / "hf")
    model = MistralForCausalLM.from_pretrained(out / "hf", dtype=torch.float32).eval()
    plain = MistralForCausalLM(MistralConfig(**llama_cfg(vocab, sliding_window=None))).eval()
    plain.load_state_dict(model.state_dict())
    prompts = prompts_of(tok)
    with torch.no_grad():
        rel = rel_change(model(torch.tensor(prompts)).logits, plain(torch.tensor(prompts)).logits)
    assert rel > 0.1, rel
    write_reference(out, model, prompts, vocab, {"max_rel_logit_change_without_window": rel},
                    {"sliding_window": 8})
    (out / "no-window").mkdir()
    write_reference(out / "no-window", plain, prompts, vocab, {}, {"sliding_window": None})
    convert_gguf(out / "hf", out / "no-window/mistral-f32.gguf")


def case_nemo(out):
    tok = tokenizer(SPM_TOK)
    vocab = len(tok)
    cfg = llama_cfg(vocab, head_dim=32, sliding_window=None,
                    rope_parameters={"rope_type": "default", "rope_theta": 1e6})
    model = MistralForCausalLM(MistralConfig(**cfg)).eval()
    draw(model, 102)
    save(model, tok, out / "hf")
    model = MistralForCausalLM.from_pretrained(out / "hf", dtype=torch.float32).eval()
    assert model.model.layers[0].self_attn.q_proj.weight.shape == (128, 64)
    write_reference(out, model, prompts_of(tok), vocab, {"head_dim": 32, "hidden_over_heads": 16})
    convert_gguf(out / "hf", out / "nemo-f32.gguf")


def case_mixtral(out):
    tok = tokenizer(SPM_TOK)
    vocab = len(tok)

    def make(k):
        cfg = llama_cfg(vocab, intermediate_size=32, num_local_experts=4, num_experts_per_tok=k, sliding_window=None)
        return MixtralForCausalLM(MixtralConfig(**cfg)).eval()
    model = make(2)
    draw(model, 103)
    save(model, tok, out / "hf")
    model = MixtralForCausalLM.from_pretrained(out / "hf", dtype=torch.float32).eval()
    top1 = make(1)
    top1.load_state_dict(model.state_dict())
    prompts = prompts_of(tok)
    with torch.no_grad():
        rel = rel_change(model(torch.tensor(prompts)).logits, top1(torch.tensor(prompts)).logits)
    assert rel > 0.1, rel
    write_reference(out, model, prompts, vocab, {"max_rel_logit_change_top1_instead_of_top2": rel})
    convert_gguf(out / "hf", out / "mixtral-f32.gguf")


def case_falcon3(out):
    tok = tokenizer(SPM_TOK)
    vocab = len(tok)
    cfg = llama_cfg(vocab, num_attention_heads=2, num_key_value_heads=1, head_dim=32, rms_norm_eps=1e-6,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000042.0})
    model = LlamaForCausalLM(LlamaConfig(**cfg)).eval()
    draw(model, 104)
    save(model, tok, out / "hf")
    model = LlamaForCausalLM.from_pretrained(out / "hf", dtype=torch.float32).eval()
    write_reference(out, model, prompts_of(tok), vocab, {})
    convert_gguf(out / "hf", out / "falcon3-f32.gguf")


EXAONE_NAMES = [("model.embed_tokens.", "transformer.wte."), ("model.norm.", "transformer.ln_f."),
                ("model.layers.", "transformer.h."), (".input_layernorm.", ".ln_1."),
                (".post_attention_layernorm.", ".ln_2."), (".self_attn.o_proj.", ".attn.attention.out_proj."),
                (".self_attn.", ".attn.attention."), (".mlp.gate_proj.", ".mlp.c_fc_0."),
                (".mlp.up_proj.", ".mlp.c_fc_1."), (".mlp.down_proj.", ".mlp.c_proj.")]


def renamed_folder(model, tok, hf, config, rename):
    """model's weights under rename(name) with config as config.json."""
    hf.mkdir(parents=True)
    sd = {}
    for k, v in model.state_dict().items():
        if k == "lm_head.weight" and config.get("tie_word_embeddings"):
            continue
        sd[rename(k)] = v.contiguous()
    save_file(sd, str(hf / "model.safetensors"), metadata={"format": "pt"})
    (hf / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    tok.save_pretrained(hf)
    (hf / "chat_template.jinja").unlink(missing_ok=True)


def case_exaone(out):
    tok = tokenizer(SPM_TOK)
    vocab = len(tok)
    rope = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64}
    cfg = llama_cfg(vocab, tie_word_embeddings=True, rope_parameters=dict(rope, rope_theta=1e6))
    model = LlamaForCausalLM(LlamaConfig(**cfg)).eval()
    draw(model, 105)

    def rename(k):
        for a, b in EXAONE_NAMES:
            k = k.replace(a, b)
        return k
    config = {"architectures": ["ExaoneForCausalLM"], "model_type": "exaone", "vocab_size": vocab,
              "hidden_size": 64, "num_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "intermediate_size": 96, "layer_norm_epsilon": 1e-5, "rope_theta": 1e6, "rope_scaling": rope,
              "max_position_embeddings": 256, "activation_function": "silu", "tie_word_embeddings": True,
              "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0, "torch_dtype": "float32"}
    renamed_folder(model, tok, out / "hf", config, rename)
    plain = LlamaForCausalLM(LlamaConfig(**dict(cfg, rope_parameters={"rope_type": "default",
                                                                      "rope_theta": 1e6}))).eval()
    plain.load_state_dict(model.state_dict())
    prompts = prompts_of(tok)
    with torch.no_grad():
        rel = rel_change(model(torch.tensor(prompts)).logits, plain(torch.tensor(prompts)).logits)
    assert rel > 0.1, rel
    write_reference(out, model, prompts, vocab, {"max_rel_logit_change_without_llama3_rope_scaling": rel},
                    {"reference_model": "LlamaForCausalLM, same weights"})
    convert_gguf(out / "hf", out / "exaone-f32.gguf", "exaone")


def case_internlm3(out):
    tok = tokenizer(SPM_TOK)
    vocab = len(tok)
    cfg = llama_cfg(vocab, head_dim=32, rope_parameters={"rope_type": "default", "rope_theta": 50000000.0})
    model = LlamaForCausalLM(LlamaConfig(**cfg)).eval()
    draw(model, 106)
    config = {"architectures": ["InternLM3ForCausalLM"], "model_type": "internlm3", "vocab_size": vocab,
              "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "head_dim": 32, "intermediate_size": 96, "rms_norm_eps": 1e-5, "rope_theta": 50000000.0,
              "rope_scaling": None, "max_position_embeddings": 256, "hidden_act": "silu", "qkv_bias": False,
              "bias": False, "tie_word_embeddings": False, "bos_token_id": 2, "eos_token_id": 1,
              "pad_token_id": 0, "torch_dtype": "float32"}
    renamed_folder(model, tok, out / "hf", config, lambda k: k)
    write_reference(out, model, prompts_of(tok), vocab, {}, {"reference_model": "LlamaForCausalLM, same weights"})
    convert_gguf(out / "hf", out / "internlm3-f32.gguf")


def chats(tok):
    res = []
    for name, msgs in CHATS:
        prompt = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        res.append({"name": name, "messages": msgs, "prompt": prompt,
                    "prompt_ids": tok(prompt, add_special_tokens=False)["input_ids"]})
    return res


def case_r1(out, qwen):
    tmpl = "deepseek-ai-DeepSeek-R1-Distill-%s.jinja" % ("Qwen-32B" if qwen else "Llama-8B")
    tok = tokenizer(QWEN_TOK if qwen else SPM_TOK, tmpl)
    vocab = len(tok)
    bos, eos = tok.convert_tokens_to_ids(R1_TOKENS[0]), tok.convert_tokens_to_ids(R1_TOKENS[1])
    if qwen:
        cfg = Qwen2Config(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                          rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos,
                          rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
        model = Qwen2ForCausalLM(cfg).eval()
    else:
        model = LlamaForCausalLM(LlamaConfig(**llama_cfg(vocab, bos_token_id=bos, eos_token_id=eos))).eval()
    draw(model, 107 if qwen else 108)
    save(model, tok, out / "hf")
    cls = Qwen2ForCausalLM if qwen else LlamaForCausalLM
    model = cls.from_pretrained(out / "hf", dtype=torch.float32).eval()
    write_reference(out, model, prompts_of(tok), vocab, {}, {"template": tmpl, "chats": chats(tok)})
    convert_gguf(out / "hf", out / ("r1-%s-f32.gguf" % ("qwen" if qwen else "llama")),
                 "deepseek-r1-qwen" if qwen else "llama-bpe")


TEKKEN_RE = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
             r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")


TEKKEN_EXTRA = ["HelloWorld", "getHTTPResponse", "iPhone", "XMLHttpRequest", "camelCaseWordsHere", "2024",
                "12345", "3.14159", "ALLCAPS words", "don't", "path/to/file\n", "McDonald's"]


def case_tekken(out):
    """Mistral-Nemo's tokenizer kind (GGUF pre "tekken"): a byte-level BPE
    of 450 pieces trained here on long_text.txt and TEKKEN_EXTRA, then put
    behind Nemo's split regex (its tokenizer.json's Split, then ByteLevel
    without its own regex);
    tokenizer.json, the converter's --vocab-only GGUF of it, and the ids
    tokenizers gives the tricky strings."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    sys.path.insert(0, str(ROOT / "scripts/reference"))
    from tricky_strings import tricky_strings
    tk = Tokenizer(models.BPE())
    # trained behind GPT-2's coarser split, so that merges cross the
    # boundaries tekken's split draws (inside camelCase words, between
    # digits): a wrong split then gives other ids
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    extra = [" ".join(TEKKEN_EXTRA)] * 30
    tk.train_from_iterator([text] + extra, trainers.BpeTrainer(
        vocab_size=450, special_tokens=["<unk>", "<s>", "</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(TEKKEN_RE), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    hf = out / "hf"
    hf.mkdir()
    tk.save(str(hf / "tokenizer.json"))
    (hf / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>",
                                                          "unk_token": "<unk>", "tokenizer_class":
                                                          "PreTrainedTokenizerFast"}, indent=1) + "\n")
    cfg = json.loads((ROOT / "tests/golden/llamalike/nemo/hf/config.json").read_text())
    cfg["vocab_size"] = tk.get_vocab_size()
    (hf / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    tk.encode_special_tokens = True  # user content: "<s>" stays text
    strings = [{"text": t, "ids": tk.encode(t, add_special_tokens=False).ids}
               for t in TEKKEN_EXTRA + [" ".join(TEKKEN_EXTRA)] + tricky_strings()]
    (out / "reference.json").write_text(json.dumps({"generator": "scripts/reference/make-llamalike-fixtures.py",
                                                    "strings": strings}, indent=1, ensure_ascii=False) + "\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(LCPP / "gguf-py"),
                                                                     os.environ.get("PYTHONPATH")])))
    subprocess.run([sys.executable, "-c", RUN_CONVERTER, str(LCPP), "tekken", str(hf), "--vocab-only",
                    "--outfile", str(out / "tekken-vocab.gguf")], check=True, env=env, stdout=subprocess.DEVNULL)
    (hf / "config.json").unlink()


CASES = {"tekken": case_tekken, "mistral": case_mistral, "nemo": case_nemo, "mixtral": case_mixtral, "falcon3": case_falcon3,
         "exaone": case_exaone, "internlm3": case_internlm3, "r1-qwen": lambda o: case_r1(o, True),
         "r1-llama": lambda o: case_r1(o, False)}


def main():
    if not (LCPP / "convert_hf_to_gguf.py").exists():
        sys.exit(f"{LCPP}/convert_hf_to_gguf.py is missing (set LCPP to an unpacked llama.cpp)")
    for name in sys.argv[1:] or CASES:
        torch.manual_seed(0)
        out = OUT / name
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        CASES[name](out)


if __name__ == "__main__":
    main()
