#!/usr/bin/env python3
"""Makes the tiny GLM-4-MoE-Lite fixtures in tests/golden/glm4-moe-lite/
(test-glm4-moe-lite.c, tests/store/test_store.py):

  hf/                     a randomly initialised Glm4MoeLiteForCausalLM
                          (transformers 5.x), float32 safetensors with
                          per-expert tensors (as save_pretrained and the
                          released checkpoints write them), and a small
                          byte-level BPE tokenizer (GLM-4's split, GLM's
                          special tokens, a short GLM-style chat template)
  glm4-moe-lite-deepseek2-f32.gguf
                          the folder converted by llama.cpp's own
                          convert_hf_to_gguf.py (arch deepseek2: key_length
                          = kv_lora_rank + rope, value_length = kv_lora_rank,
                          the per-head sizes under *_mla; kv_b_proj split
                          into attn_k_b / attn_v_b; experts merged)
  glm4-moe-lite-glm4moelite-f32.gguf
                          the same tensors under the older Ollama
                          convention (arch glm4moelite: key_length = per-head
                          q/k size, value_length = v_head_dim, head_count_kv
                          = num_key_value_heads, the absorbed sizes under
                          *_mla, no expert-group keys, no gating function),
                          written with the gguf package
  reference.json          3 prompts of 32 ids, transformers' greedy 32-token
                          continuations, the router cases' selections
  reference.safetensors   transformers' float32 logits "logits" [3, 32, V]
                          and the router cases' inputs and outputs

The router cases call transformers' Glm4MoeLiteTopkRouter directly: layer
1's router of the model on 16 random hidden states, and a constructed
router whose rows 1, 4 and 6 are equal (with equal selection biases) so
that its top-2 boundary falls inside a tie (plus an all-zero hidden
state, where every expert but one ties). torch.topk breaks such ties by
its selection algorithm (libstdc++ nth_element / partial_sort over
(value, index) pairs), not by index; wick follows it (src/model/moe.c).

The model keeps GLM-4.7-Flash's structure in small: MLA with q_lora_rank
32, kv_lora_rank 32, qk_nope 16, qk_rope 8 (interleaved RoPE), v_head_dim
16, 4 heads; layer 0 dense (first_k_dense_replace 1), layers 1-2 MoE with
8 routed experts (top 2, sigmoid scores plus a non-zero
e_score_correction_bias, norm_topk_prob, routed_scaling_factor 1.8) and
one shared expert; untied lm_head; rms_norm_eps 1e-5 (transformers' q_a
and kv_a norms keep their own 1e-6). Weights are drawn wider than the
default init (norm gains 1 +- 0.3) so logits are far from uniform and
greedy continuations do not repeat one token.

    /root/.pyenv/versions/3.11.7/bin/python3 scripts/reference/make-glm4-moe-lite-fixtures.py
"""
import codecs
import contextlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
with contextlib.redirect_stdout(io.StringIO()):
    import this  # the Zen of Python, as training text

import numpy as np
import torch
from safetensors.torch import save_file
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import Glm4MoeLiteConfig, Glm4MoeLiteForCausalLM, PreTrainedTokenizerFast

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/golden/glm4-moe-lite"
HF = OUT / "hf"
GGUF_DS2 = OUT / "glm4-moe-lite-deepseek2-f32.gguf"
GGUF_OLD = OUT / "glm4-moe-lite-glm4moelite-f32.gguf"
LLAMA_CPP = pathlib.Path(os.environ.get("WICK_CACHE", pathlib.Path.home() / ".cache/wick")) / \
    "llama.cpp/src/llama_cpp_python-0.3.36/vendor/llama.cpp"
PY = sys.executable
SEED = 4321
SCALE = 2.5  # Linear weights ~ N(0, (SCALE / sqrt(fan_in))^2)
SPECIALS = ["<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>", "<|user|>",
            "<|assistant|>", "<|observation|>", "<think>", "</think>"]
N_BASE = 512 - len(SPECIALS)

# GLM-4's pre-tokenizer split (as llama.cpp's "glm4" pre: Llama 3's regex)
GLM4_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")

# A short template in GLM-4's turn format (the released one also renders
# tools and reasoning; the tests here need only the turns)
CHAT_TEMPLATE = ("[gMASK]<sop>{%- for m in messages %}<|{{ 'observation' if m.role == 'tool' else m.role }}|>\n"
                 "{{ m.content }}{%- endfor %}{%- if add_generation_prompt %}<|assistant|>\n{%- endif %}")

CHATS = [
    ("system_user", [{"role": "system", "content": "You are a terse assistant."},
                     {"role": "user", "content": "Name three primary colours."}]),
    ("user_only", [{"role": "user", "content": "Why is the sky blue?"}]),
    ("multi_turn_tool", [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me look."},
        {"role": "tool", "content": "{\"temp\": 21}"},
        {"role": "user", "content": "And tomorrow?"}]),
]


def training_text():
    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    text += "\n" + codecs.decode(this.s, "rot13")
    return [text] * 4


def make_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(GLM4_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False, trim_offsets=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=N_BASE, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_text(), trainer=trainer)
    assert tok.get_vocab_size() == N_BASE, tok.get_vocab_size()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    assert tok.get_vocab_size() == 512
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                                   pad_token="<|endoftext|>", unk_token=None, bos_token=None)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def make_config(vocab, ids):
    return Glm4MoeLiteConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=64, moe_intermediate_size=16,
        num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4,
        n_shared_experts=1, n_routed_experts=8, num_experts_per_tok=2, routed_scaling_factor=1.8,
        norm_topk_prob=True, n_group=1, topk_group=1,
        q_lora_rank=32, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
        max_position_embeddings=512, rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, rope_interleave=True,
        mlp_layer_types=["dense", "sparse", "sparse"], attention_bias=False,
        bos_token_id=None, pad_token_id=ids["<|endoftext|>"],
        eos_token_id=[ids["<|endoftext|>"], ids["<|user|>"], ids["<|observation|>"]])


def init_weights(model):
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            elif name.endswith("mlp.gate.weight"):  # router: sigmoid scores spread over (0, 1)
                p.copy_(torch.randn(p.shape, generator=g) * (1.5 / p.shape[-1] ** 0.5))
            else:  # Linear [out, in] or stacked experts [E, out, in]
                p.copy_(torch.randn(p.shape, generator=g) * (SCALE / p.shape[-1] ** 0.5))
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.copy_(0.15 * torch.randn(b.shape, generator=g))


def convert_deepseek2():
    """llama.cpp's converter, in a child process, with the tokenizer's
    pre-tokenizer named glm4: its check hashes the encoding of a test text
    and knows only released tokenizers; this one splits as GLM-4's does."""
    code = ("import sys; sys.argv = ['convert_hf_to_gguf.py', %r, '--outtype', 'f32', '--outfile', %r];"
            "import conversion.base as b; b.TextModel.get_vocab_base_pre = lambda self, tok: 'glm4';"
            "import convert_hf_to_gguf as c; c.main()") % (str(HF), str(GGUF_DS2))
    env = dict(os.environ, PYTHONPATH=f"{LLAMA_CPP / 'gguf-py'}:{LLAMA_CPP}")
    subprocess.run([PY, "-c", code], cwd=LLAMA_CPP, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def write_glm4moelite(cfg):
    """The converted file's tensors and tokenizer under Ollama's older
    glm4moelite keys (architectures.md §6.2)."""
    sys.path.insert(0, str(LLAMA_CPP / "gguf-py"))
    import gguf
    r = gguf.GGUFReader(str(GGUF_DS2))
    w = gguf.GGUFWriter(str(GGUF_OLD), "glm4moelite")
    nope, rope, v, kvl = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim, cfg.kv_lora_rank
    per_head = {"attention.key_length": nope + rope, "attention.value_length": v,
                "attention.head_count_kv": cfg.num_key_value_heads,
                "attention.key_length_mla": kvl + rope, "attention.value_length_mla": kvl}
    dropped = ("expert_group_count", "expert_group_used_count", "expert_gating_func", "vocab_size")
    for f in r.fields.values():
        name = f.name
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        if name.startswith("deepseek2."):
            suffix = name[len("deepseek2."):]
            if suffix in dropped:
                continue
            name = "glm4moelite." + suffix
            if suffix in per_head:
                w.add_uint32(name, per_head[suffix])
                continue
        vt = f.types[0]
        if vt == gguf.GGUFValueType.ARRAY:
            sub = f.types[-1]
            if sub == gguf.GGUFValueType.STRING:
                vals = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
            else:
                vals = [f.parts[i].tolist()[0] for i in f.data]
            w.add_array(name, vals) if sub == gguf.GGUFValueType.STRING else \
                w.add_key_value(name, vals, vt, sub_type=sub)
        elif vt == gguf.GGUFValueType.STRING:
            w.add_string(name, bytes(f.parts[f.data[0]]).decode("utf-8"))
        else:
            w.add_key_value(name, f.parts[f.data[0]].tolist()[0], vt)
    for t in r.tensors:
        shape = list(reversed([int(x) for x in t.shape]))
        w.add_tensor(t.name, np.ascontiguousarray(np.asarray(t.data).reshape(shape)))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def router_cases(model, cfg):
    """Inputs and transformers' outputs of Glm4MoeLiteTopkRouter."""
    from transformers.models.glm4_moe_lite.modeling_glm4_moe_lite import Glm4MoeLiteTopkRouter
    g = torch.Generator().manual_seed(SEED + 1)
    H, E = cfg.hidden_size, cfg.n_routed_experts
    cases = {}
    r = model.model.layers[1].mlp.gate
    cases["layer1"] = (r, torch.randn(16, H, generator=g))
    tie = Glm4MoeLiteTopkRouter(cfg)
    with torch.no_grad():
        w = torch.randn(E, H, generator=g) * (1.5 / H ** 0.5)
        w[4] = w[1]
        w[6] = w[1]
        b = 0.15 * torch.randn(E, generator=g)
        b[4] = b[1]
        b[6] = b[1]
        tie.weight.copy_(w)
        tie.e_score_correction_bias.copy_(b)
    # hidden states whose top-2 boundary falls inside the 1/4/6 tie:
    # random ones where expert 1 is second or third by its choice score
    hs = [torch.zeros(H)]
    while len(hs) < 8:
        h = torch.randn(H, generator=g)
        s = torch.sigmoid(w @ h) + b
        rank = int((s > s[1]).sum())
        if rank == 1:
            hs.append(h)
    cases["tie"] = (tie, torch.stack(hs))
    out, meta = {}, {}
    for name, (router, h) in cases.items():
        with torch.no_grad():
            logits, weights, idx = router(h)
        out[f"router.{name}.weight"] = router.weight.detach().float().contiguous()
        out[f"router.{name}.bias"] = router.e_score_correction_bias.detach().float().contiguous()
        out[f"router.{name}.hidden"] = h.float().contiguous()
        out[f"router.{name}.logits"] = logits.float().contiguous()
        out[f"router.{name}.weights"] = weights.float().contiguous()
        meta[name] = {"n": int(h.shape[0]), "experts": idx.tolist()}
    # the tie case is one: "ties to the lower index" would choose otherwise somewhere
    router, h = cases["tie"]
    with torch.no_grad():
        choice = (torch.sigmoid(h @ router.weight.T) + router.e_score_correction_bias).tolist()
    k = cfg.num_experts_per_tok
    lower = [sorted(sorted(range(len(c)), key=lambda e: (-c[e], e))[:k]) for c in choice]
    assert any(sorted(a) != b for a, b in zip(meta["tie"]["experts"], lower)), meta["tie"]["experts"]
    return out, meta


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    HF.mkdir(parents=True)
    tok = make_tokenizer()
    ids = {s: tok.convert_tokens_to_ids(s) for s in SPECIALS}
    cfg = make_config(len(tok), ids)
    torch.manual_seed(SEED)
    model = Glm4MoeLiteForCausalLM(cfg).float().eval()
    init_weights(model)
    model.save_pretrained(HF, safe_serialization=True)
    tok.save_pretrained(HF)
    model.generation_config.save_pretrained(HF)
    # the released config.json's fields that llama.cpp's converter reads
    # (transformers 5 derives mlp_layer_types from first_k_dense_replace)
    c = json.loads((HF / "config.json").read_text())
    c["first_k_dense_replace"] = 1
    c["topk_method"] = "noaux_tc"
    (HF / "config.json").write_text(json.dumps(c, indent=2, sort_keys=True) + "\n")
    # everything below from the written folder
    model = Glm4MoeLiteForCausalLM.from_pretrained(HF, dtype=torch.float32).eval()
    model.set_attn_implementation("eager")

    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    tids = tok(text, add_special_tokens=False)["input_ids"]
    prompts = [tids[0:32], tids[100:132], tids[200:232]]
    assert all(len(p) == 32 for p in prompts)
    with torch.no_grad():
        logits = model(torch.tensor(prompts)).logits.float()
        cont, gaps = [], []
        for p in prompts:  # greedy by hand: no generation-config surprises
            seq = list(p)
            for _ in range(32):
                out = model(torch.tensor([seq])).logits[0, -1]
                top = torch.topk(out, 2).values
                gaps.append(float(top[0] - top[1]))
                seq.append(int(torch.argmax(out)))
            cont.append(seq[32:])
    tensors = {"logits": logits.contiguous()}
    rt, rmeta = router_cases(model, model.config)
    tensors.update(rt)
    save_file(tensors, str(OUT / "reference.safetensors"))

    convert_deepseek2()
    write_glm4moelite(model.config)
    chats = []
    for name, msgs in CHATS:
        text_ = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        chats.append({"name": name, "messages": msgs, "prompt": text_,
                      "prompt_ids": tok(text_, add_special_tokens=False)["input_ids"]})
    ref = {
        "chats": chats,
        "reference": "scripts/reference/make-glm4-moe-lite-fixtures.py (transformers %s, torch %s)"
                     % (__import__("transformers").__version__, torch.__version__),
        "n_vocab": len(tok),
        "prompts": prompts,
        "greedy": cont,
        "decoded_greedy": [tok.decode(x) for x in cont],
        "router": rmeta,
        "smallest_greedy_gap": min(gaps),
    }
    (OUT / "reference.json").write_text(json.dumps(ref, indent=1, ensure_ascii=False) + "\n")
    total = 0
    for p in sorted(OUT.rglob("*")):
        if p.is_file():
            total += p.stat().st_size
            print(f"{p.stat().st_size:9d}  {p.relative_to(ROOT)}")
    print(f"{total:9d}  total")
    print("greedy:", cont)
    print("router tie case:", rmeta["tie"]["experts"])
    print("smallest greedy top-2 gap: %.4f" % min(gaps))


if __name__ == "__main__":
    main()
