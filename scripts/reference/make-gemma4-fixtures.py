#!/usr/bin/env python3
"""make-gemma4-fixtures.py - tiny random Gemma 4 models and their reference
outputs from Hugging Face transformers, for wick's Gemma 4 and Gemma 4 MTP
assistant tests.

Writes tests/golden/gemma4/ (see the README.md written there):

  dense/            Gemma4ForCausalLM, E2B-like: two head dims, proportional
                    partial RoPE on full layers, KV sharing (2 last layers),
                    PLE, double-wide MLP on the shared layers, softcap 30,
                    sliding window 8, suppress_tokens in generation_config.
  moe/              Gemma4ForCausalLM, 26B-A4B-like: MoE block (8 experts,
                    top 2) beside the dense MLP, K=V on full layers with
                    num_global_key_value_heads != num_key_value_heads.
  assistant/        Gemma4AssistantForCausalLM for dense/, ordered embeddings.
  assistant-plain/  the same without ordered embeddings.
  assistant-bad/    backbone_hidden_size 48 != 64 (for a create-time error).
  reference.json    prompts, greedy outputs, conventions, config summaries.
  reference.safetensors  F32 logits (and a few debugging tensors).

Classes used (all present in transformers 5.24.0): Gemma4TextConfig,
Gemma4ForCausalLM, Gemma4AssistantConfig, Gemma4AssistantForCausalLM; the
assisted-generation driver is transformers'
SinglePositionMultiTokenCandidateGenerator (chosen by generate() when
assistant_model is a Gemma4Assistant). None was missing.

config.json files are written in the flat form that released checkpoints
use (`global_head_dim`, `num_global_key_value_heads`); transformers 5.24's
save_pretrained would instead write a `per_layer_config` map. Every model is
reloaded from the written folder with from_pretrained before any reference
output is computed, so the files on disk are what the references describe.

Run from the repository root (CPU only, about a minute):
  /root/.pyenv/versions/3.11.7/bin/python3 scripts/reference/make-gemma4-fixtures.py
"""

import json
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.torch import save_file

import tokenizers
import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import (
    Gemma4AssistantConfig,
    Gemma4AssistantForCausalLM,
    Gemma4ForCausalLM,
    Gemma4TextConfig,
    GenerationConfig,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "gemma4")

VOCAB = 512
N_PROMPT = 32
N_GEN = 32
N_DRAFT = 4
MIN_MARGIN = 0.01  # logits; see main()
ATTN = "eager"  # the reference; sdpa is cross-checked against it

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"]
PAD, EOS, BOS, UNK, MASK, SOT, EOT = range(7)
FIRST_ORDINARY = len(SPECIALS) + 256  # after the specials and <0x00>..<0xFF>

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}"
    "{%- set first_user_prefix = '' -%}"
    "{%- set loop_messages = messages -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{%- endif -%}"
    "{%- if message['role'] == 'assistant' -%}{%- set role = 'model' -%}"
    "{%- else -%}{%- set role = message['role'] -%}{%- endif -%}"
    "{{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else '') }}"
    "{{ message['content'] | trim }}"
    "{{ '<end_of_turn>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}"
)

CORPUS = """\
The quick brown fox jumps over the lazy dog. A small model runs on a laptop and answers questions.
Hello, how are you today? I am fine, thank you. What is the capital of France? Paris is the capital.
Tokens are pieces of text; the tokenizer splits words into pieces and the model predicts the next one.
Once upon a time there was a little cat who lived in a house by the river. The cat liked to sleep in
the sun and to watch the birds. One day the cat saw a fish in the water and tried to catch it.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12 100 1000 3.14 2026. Code: int main(void) { return 0; }
def f(x): return x * x + 1  # a function in Python. for i in range(10): print(i)
The weather is nice; the rain stopped and the wind is calm. We went to the market to buy bread,
apples, cheese and milk. She said that the book was interesting and that she would read it again.
Questions and answers, stories and lists, code and numbers: a tiny corpus for a tiny tokenizer.
"""

# ---------------------------------------------------------------- configs

DENSE_LAYER_TYPES = ["sliding_attention", "sliding_attention", "full_attention",
                     "sliding_attention", "sliding_attention", "full_attention"]

DENSE = dict(
    vocab_size=VOCAB, hidden_size=64, intermediate_size=32, num_hidden_layers=6,
    num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
    layer_types=DENSE_LAYER_TYPES, sliding_window=8, max_position_embeddings=512,
    final_logit_softcapping=30.0, num_kv_shared_layers=2,
    hidden_size_per_layer_input=8, vocab_size_per_layer_input=VOCAB,
    use_double_wide_mlp=True, attention_k_eq_v=False, enable_moe_block=False,
    rms_norm_eps=1e-6, tie_word_embeddings=True,
    rope_parameters={
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                           "rope_theta": 1000000.0},
    },
)

# hidden 48 != num_attention_heads * head_dim (64), to catch code that assumes
# they are equal.
MOE = dict(
    vocab_size=VOCAB, hidden_size=48, intermediate_size=32, num_hidden_layers=4,
    num_attention_heads=4, num_key_value_heads=2, num_global_key_value_heads=1,
    head_dim=16, global_head_dim=32,
    layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
    sliding_window=8,
    max_position_embeddings=512, final_logit_softcapping=30.0, num_kv_shared_layers=0,
    hidden_size_per_layer_input=0, vocab_size_per_layer_input=VOCAB,
    use_double_wide_mlp=False, attention_k_eq_v=True, enable_moe_block=True,
    num_experts=8, top_k_experts=2, moe_intermediate_size=12,
    rms_norm_eps=1e-6, tie_word_embeddings=True,
    rope_parameters=DENSE["rope_parameters"],
)

ASSISTANT_TEXT = dict(
    vocab_size=VOCAB, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
    layer_types=["sliding_attention", "full_attention"], sliding_window=8,
    max_position_embeddings=512, final_logit_softcapping=None, num_kv_shared_layers=2,
    hidden_size_per_layer_input=0, vocab_size_per_layer_input=0,
    use_double_wide_mlp=False, attention_k_eq_v=False, enable_moe_block=False,
    rms_norm_eps=1e-6, tie_word_embeddings=True,
    rope_parameters=DENSE["rope_parameters"],
)

# assistant-plain and assistant-bad: smaller still (hidden 16, 2 query heads
# over the target's 2 KV heads).
ASSISTANT_SMALL_TEXT = dict(ASSISTANT_TEXT, hidden_size=16, intermediate_size=24,
                            num_attention_heads=2)


def text_config(d):
    d = dict(d)
    return Gemma4TextConfig(**d)


def flatten_text_config(cfg_dict, src):
    """Rewrite transformers 5.24's per_layer_config into the flat keys of the
    released checkpoints (global_head_dim, num_global_key_value_heads)."""
    cfg_dict.pop("per_layer_config", None)
    cfg_dict["global_head_dim"] = src["global_head_dim"]
    if "num_global_key_value_heads" in src:
        cfg_dict["num_global_key_value_heads"] = src["num_global_key_value_heads"]
    return cfg_dict


def rewrite_config(folder, src, nested=False):
    path = os.path.join(folder, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    if nested:
        flatten_text_config(cfg["text_config"], src)
    else:
        flatten_text_config(cfg, src)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


# ---------------------------------------------------------------- weights

def randomize(model, seed, std=0.15, embed_std=0.1, norm_noise=0.1, final_norm_mean=6.0):
    """Overwrite every parameter/buffer with seeded noise large enough that
    logits have structure (transformers' std 0.02 init gives near-uniform
    logits): matrices N(0, std), token embeddings N(0, embed_std) (larger
    ones let the tied input embedding dominate the residual stream and greedy
    repeats the last token), the final norm weight final_norm_mean +
    N(0, norm_noise) (scales the logits: std ~4.7, |max| ~19, so the softcap
    30*tanh(x/30) is far from the identity), other norm weights
    1 + N(0, norm_noise),
    layer_scalar U(0.7, 1.3), router scales 1 + N(0, 0.1), the assistant's
    token_ordering a random permutation of the vocab."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if name.endswith("inv_freq") or name.endswith("embed_scale"):
                continue
            if name.endswith("token_ordering"):
                t.copy_(torch.randperm(t.numel(), generator=g))
            elif name.endswith("layer_scalar"):
                t.copy_(0.7 + 0.6 * torch.rand(t.shape, generator=g))
            elif name.endswith("router.scale") or name.endswith("per_expert_scale"):
                t.copy_(1.0 + 0.1 * torch.randn(t.shape, generator=g))
            elif name.endswith("model.norm.weight") or name == "norm.weight":
                t.copy_(final_norm_mean + norm_noise * torch.randn(t.shape, generator=g))
            elif "norm" in name and t.dim() == 1:
                t.copy_(1.0 + norm_noise * torch.randn(t.shape, generator=g))
            elif "embed_tokens" in name and t.dim() == 2:
                t.copy_(embed_std * torch.randn(t.shape, generator=g))
            elif t.dim() >= 2 and t.is_floating_point():
                t.copy_(std * torch.randn(t.shape, generator=g))
            elif t.is_floating_point():
                raise RuntimeError(f"unexpected tensor {name} {tuple(t.shape)}")


# ---------------------------------------------------------------- tokenizer

def build_tokenizer():
    """A SentencePiece-style BPE (like Gemma's): spaces become "▁" in a
    Replace normalizer, no pre-tokenizer, byte fallback through <0xNN>
    pieces, vocab exactly VOCAB ids: 0..6 specials, 7..262 bytes, the rest
    single characters and merges trained on a small built-in corpus."""
    bytes_ = ["<0x%02X>" % b for b in range(256)]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    # Train on words (Metaspace split) so merges never cross a "▁" boundary.
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIALS + bytes_,
                                  show_progress=False, min_frequency=1)
    tok.train_from_iterator(CORPUS.splitlines(), trainer=trainer)
    j = json.loads(tok.to_str())
    vocab = j["model"]["vocab"]
    assert len(vocab) == VOCAB, len(vocab)
    for i, s in enumerate(SPECIALS + bytes_):
        assert vocab[s] == i, (s, vocab[s], i)
    # Only the Gemma specials are added tokens; byte pieces live in the vocab.
    j["added_tokens"] = [
        {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for i, s in enumerate(SPECIALS)
    ]
    j["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}
    j["pre_tokenizer"] = None
    j["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "<bos>", "type_id": 1}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<bos>": {"id": "<bos>", "ids": [BOS], "tokens": ["<bos>"]}},
    }
    j["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ]}
    text = json.dumps(j, ensure_ascii=False, indent=1)
    Tokenizer.from_str(text)  # must still parse
    return text


def write_tokenizer(folder, tok_json):
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(tok_json)
        f.write("\n")
    cfg = {
        "backend": "tokenizers",
        "add_bos_token": True,
        "add_eos_token": False,
        "bos_token": "<bos>",
        "eos_token": "<eos>",
        "pad_token": "<pad>",
        "unk_token": "<unk>",
        "mask_token": "<mask>",
        "model_max_length": 512,
        "tokenizer_class": "GemmaTokenizer",
        "chat_template": CHAT_TEMPLATE,
    }
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(folder, "special_tokens_map.json"), "w") as f:
        json.dump({"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>",
                   "pad_token": "<pad>", "mask_token": "<mask>"}, f, indent=2)
        f.write("\n")


def check_tokenizer(folder):
    from transformers import AutoTokenizer
    tk = AutoTokenizer.from_pretrained(folder)
    raw = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    cases = ["Hello, how are you today?", "The cat sat by the river.", "naïve café ✓ 🙂",
             "  two  spaces", "int main(void) { return 0; }"]
    out = []
    for s in cases:
        ids = raw.encode(s, add_special_tokens=False).ids
        ids2 = tk.encode(s, add_special_tokens=False)
        assert ids == ids2, (s, ids, ids2)
        back = raw.decode(ids)
        assert back == s, (s, back)
        out.append({"text": s, "ids": ids})
    assert len(tk) == VOCAB, len(tk)
    assert tk.encode("hi")[0] == BOS
    chat = tk.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                  add_generation_prompt=True)
    assert chat == "<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n", repr(chat)
    chat_ids = tk.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=True,
                                      add_generation_prompt=True)
    if isinstance(chat_ids, dict) or hasattr(chat_ids, "keys"):
        chat_ids = chat_ids["input_ids"]
    return out, {"text": chat, "ids": list(chat_ids)}


# ---------------------------------------------------------------- helpers

def load_causal(folder):
    m = Gemma4ForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation=ATTN)
    return m.eval()


def masked(logits, suppress):
    x = logits.clone()
    if suppress:
        x[..., suppress] = float("-inf")
    return x


def make_prompts(rng, n):
    return [[BOS] + rng.integers(len(SPECIALS), VOCAB, size=N_PROMPT - 1).tolist() for _ in range(n)]


def greedy_generate(model, prompt, gen_cfg, **kw):
    ids = torch.tensor([prompt])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=gen_cfg,
                         max_new_tokens=N_GEN, do_sample=False, **kw)
    return out[0, len(prompt):].tolist()


def greedy_nocache(model, prompt, suppress, n, margins=None):
    """Argmax loop without cache; margins (a list) gets top1 - top2 per step."""
    seq = list(prompt)
    for _ in range(n):
        with torch.no_grad():
            lg = model(torch.tensor([seq]), use_cache=False).logits[0, -1]
        top = torch.topk(masked(lg, suppress), 2).values
        t = int(masked(lg, suppress).argmax())
        if margins is not None:
            margins.append(float(top[0] - top[1]))
        seq.append(t)
        if t in (EOS, EOT):
            break
    return seq[len(prompt):]


def layer_outputs(model, prompt):
    """Each decoder layer's output (after layer_scalar) and the final-normed
    hidden state, [n_layers, T, H] and [T, H]."""
    outs = []
    hooks = [layer.register_forward_hook(lambda mod, inp, out: outs.append(out.detach().clone()))
             for layer in model.model.layers]
    with torch.no_grad():
        r = model(torch.tensor([prompt]), use_cache=False, output_hidden_states=True)
    for h in hooks:
        h.remove()
    return torch.stack([o[0] for o in outs]), r.hidden_states[-1][0]


def stats(lg):
    p = torch.softmax(lg, -1)
    ent = -(p * torch.log(p.clamp_min(1e-30))).sum(-1)
    return {"logit_std": float(lg.std(-1).mean()), "logit_absmax": float(lg.abs().max()),
            "entropy_mean_nats": float(ent.mean()), "uniform_entropy_nats": float(np.log(lg.shape[-1])),
            "top1_prob_mean": float(p.max(-1).values.mean())}


# ---------------------------------------------------------------- main

def main():
    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    if os.path.isdir(OUT):
        for name in ("dense", "moe", "assistant", "assistant-plain", "assistant-bad"):
            shutil.rmtree(os.path.join(OUT, name), ignore_errors=True)
    os.makedirs(OUT, exist_ok=True)
    tensors = {}
    ref = {
        "generator": "scripts/reference/make-gemma4-fixtures.py",
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                     "tokenizers": tokenizers.__version__, "python": sys.version.split()[0]},
        "attn_implementation": ATTN,
    }

    tok_json = build_tokenizer()

    # -------------------------------------------------- dense and moe targets
    specs = [("dense", DENSE, 1234), ("moe", MOE, 5678)]
    for name, spec, seed in specs:
        folder = os.path.join(OUT, name)
        model = Gemma4ForCausalLM(text_config(spec)).eval()
        randomize(model, seed)
        model.generation_config = GenerationConfig(bos_token_id=BOS, eos_token_id=[EOS, EOT],
                                                   pad_token_id=PAD)
        model.save_pretrained(folder, safe_serialization=True)
        rewrite_config(folder, spec)
        write_tokenizer(folder, tok_json)

    # suppress_tokens for dense: two ids the unsuppressed model likes to pick
    # (so that masking changes greedy output) plus one other non-special id.
    rng = np.random.default_rng(20260)
    dense = load_causal(os.path.join(OUT, "dense"))
    probe = make_prompts(rng, 8)
    with torch.no_grad():
        am = dense(torch.tensor(probe), use_cache=False).logits.argmax(-1).flatten().tolist()
    counts = {}
    for t in am:
        if t >= len(SPECIALS):
            counts[t] = counts.get(t, 0) + 1
    top = sorted(counts, key=lambda t: (-counts[t], t))[:2]
    suppress = sorted(top + [300 if 300 not in top else 301])
    gpath = os.path.join(OUT, "dense", "generation_config.json")
    with open(gpath) as f:
        gcfg = json.load(f)
    gcfg["suppress_tokens"] = suppress
    with open(gpath, "w") as f:
        json.dump(gcfg, f, indent=2, sort_keys=True)
        f.write("\n")

    tok_cases, chat_case = check_tokenizer(os.path.join(OUT, "dense"))
    ref["tokenizer"] = {
        "model": "BPE, SentencePiece style: normalizer Replace ' ' -> '▁', no pre-tokenizer, "
                 "byte_fallback <0xNN> (ids 7..262), TemplateProcessing adds <bos>",
        "vocab_size": VOCAB,
        "special_ids": {s: i for i, s in enumerate(SPECIALS)},
        "encode_cases": tok_cases,
        "chat_case": chat_case,
    }

    # -------------------------------------------------- reference outputs
    prompt_rng = np.random.default_rng(4242)
    for name, spec, seed in specs:
        folder = os.path.join(OUT, name)
        model = load_causal(folder)
        gen_cfg = GenerationConfig.from_pretrained(folder)
        sup = list(gen_cfg.suppress_tokens or [])
        # Prompts whose 32-token greedy continuation does not end early on an
        # EOS id (deterministic: draws continue from one seeded stream).
        # Also require a top1-top2 margin of at least MIN_MARGIN at every
        # greedy step, so float32 differences cannot flip a greedy choice.
        prompts, gens, min_margins = [], [], []
        while len(prompts) < 3:
            p = make_prompts(prompt_rng, 1)[0]
            g = greedy_generate(model, p, gen_cfg)
            mg = []
            nc = greedy_nocache(model, p, sup, N_GEN, mg)
            if len(g) == N_GEN and min(g) >= len(SPECIALS) and min(mg) >= MIN_MARGIN:
                assert nc == g, (name, nc, g)
                prompts.append(p)
                gens.append(g)
                min_margins.append(min(mg))
        # Logits of the forward pass (softcapped; suppress_tokens NOT applied:
        # transformers applies them in generate's logits processors only).
        with torch.no_grad():
            logits = model(torch.tensor(prompts), use_cache=False).logits
        sdpa = Gemma4ForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                 attn_implementation="sdpa").eval()
        with torch.no_grad():
            lg_sdpa = sdpa(torch.tensor(prompts), use_cache=False).logits
        assert torch.allclose(logits, lg_sdpa, atol=2e-3, rtol=0), float((logits - lg_sdpa).abs().max())
        info = {"prompts": prompts, "greedy": gens, "suppress_tokens": sup, "checks": {}}
        for i, (p, g) in enumerate(zip(prompts, gens)):
            nc = greedy_nocache(model, p, sup, N_GEN)
            assert nc == g, (name, i, nc, g)
            assert len(set(g)) >= 4, (name, i, g)
        tensors[f"{name}.logits"] = logits.contiguous()  # [3, 32, VOCAB]
        info["checks"]["greedy_equals_nocache_argmax_loop"] = True
        info["checks"]["sdpa_vs_eager_max_abs_diff"] = float((logits - lg_sdpa).abs().max())
        info["checks"]["min_top1_top2_margin_per_greedy"] = min_margins
        info["checks"]["distinct_tokens_per_greedy"] = [len(set(g)) for g in gens]
        info["checks"]["logit_stats"] = stats(logits)
        # Unsuppressed greedy (to show suppress_tokens matter).
        if sup:
            raw_argmax = logits.argmax(-1)
            info["checks"]["prompt_rows_whose_raw_argmax_is_suppressed"] = int(
                torch.isin(raw_argmax, torch.tensor(sup)).sum())
            g_nosup = [greedy_nocache_raw(model, p, N_GEN) for p in prompts]
            info["greedy_without_suppress"] = g_nosup
        # Per-layer debugging tensors for prompt 0.
        lo, fn = layer_outputs(model, prompts[0])
        tensors[f"{name}.layer_out.0"] = lo.contiguous()
        tensors[f"{name}.final_norm.0"] = fn.contiguous()
        info["softcap_in_logits"] = True
        info["suppress_tokens_in_logits"] = False
        ref[name] = info
        print(f"{name}: stats {info['checks']['logit_stats']}")
        print(f"{name}: greedy {gens}")

    # -------------------------------------------------- assistants
    dense = load_causal(os.path.join(OUT, "dense"))
    dense_gen_cfg = GenerationConfig.from_pretrained(os.path.join(OUT, "dense"))
    sup = list(dense_gen_cfg.suppress_tokens)
    asst_specs = [("assistant", ASSISTANT_TEXT, True, 64, 97),
                  ("assistant-plain", ASSISTANT_SMALL_TEXT, False, 64, 98),
                  ("assistant-bad", ASSISTANT_SMALL_TEXT, True, 48, 99)]
    for name, tspec, ordered, backbone, seed in asst_specs:
        folder = os.path.join(OUT, name)
        cfg = Gemma4AssistantConfig(text_config=text_config(tspec),
                                    backbone_hidden_size=backbone,
                                    use_ordered_embeddings=ordered, num_centroids=16,
                                    centroid_intermediate_top_k=4, tie_word_embeddings=True)
        model = Gemma4AssistantForCausalLM(cfg).eval()
        randomize(model, seed, final_norm_mean=4.0)
        model.generation_config = GenerationConfig(bos_token_id=BOS, eos_token_id=[EOS, EOT],
                                                   pad_token_id=PAD, num_assistant_tokens=N_DRAFT,
                                                   num_assistant_tokens_schedule="constant")
        model.save_pretrained(folder, safe_serialization=True)
        rewrite_config(folder, tspec, nested=True)
        if name == "assistant-bad":
            for extra in ("generation_config.json",):
                if os.path.exists(os.path.join(folder, extra)):
                    os.remove(os.path.join(folder, extra))

    for name in ("assistant", "assistant-plain"):
        folder = os.path.join(OUT, name)
        asst = Gemma4AssistantForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                          attn_implementation=ATTN).eval()
        info = {"prompts_from": "dense", "draft_steps": N_DRAFT, "cases": []}
        for i, prompt in enumerate(ref["dense"]["prompts"]):
            case = assistant_case(dense, asst, prompt, sup, tensors, f"{name}.{i}")
            # The same drafts through transformers' own candidate generator.
            first_round, assisted = assisted_generate(dense, asst, prompt, dense_gen_cfg)
            assert first_round == case["draft_tokens"], (name, i, first_round, case["draft_tokens"])
            assert assisted == ref["dense"]["greedy"][i], (name, i, assisted, ref["dense"]["greedy"][i])
            case["generate_first_round_candidates"] = first_round
            case["assisted_greedy"] = assisted
            info["cases"].append(case)
        # sdpa cross-check of the assistant's step logits for prompt 0
        asst_sdpa = Gemma4AssistantForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                               attn_implementation="sdpa").eval()
        t2 = {}
        assistant_case(dense, asst_sdpa, ref["dense"]["prompts"][0], sup, t2, "x")
        d = float((t2["x.logits"] - tensors[f"{name}.0.logits"]).abs().max())
        for part in ("logits", "hidden_out"):  # [3, N_DRAFT, ...] per assistant
            tensors[f"{name}.{part}"] = torch.stack(
                [tensors.pop(f"{name}.{i}.{part}") for i in range(3)]).contiguous()
        assert d < 2e-3, d
        info["sdpa_vs_eager_max_abs_diff"] = d
        info["checks"] = {"draft_equals_generate_first_round": True,
                          "assisted_greedy_equals_plain_greedy": True,
                          "draft_target_agreement": agreement(ref["dense"], info)}
        ref[name] = info
        print(f"{name}: drafts {[c['draft_tokens'] for c in info['cases']]}")

    ref["configs"] = {}
    for name in ("dense", "moe", "assistant", "assistant-plain", "assistant-bad"):
        with open(os.path.join(OUT, name, "config.json")) as f:
            ref["configs"][name] = json.load(f)
    ref["dense"]["donors"] = donor_map(ref["configs"]["dense"])
    ref["conventions"] = CONVENTIONS

    save_file(tensors, os.path.join(OUT, "reference.safetensors"),
              metadata={"generator": "scripts/reference/make-gemma4-fixtures.py"})
    with open(os.path.join(OUT, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1, sort_keys=False)
        f.write("\n")
    total = 0
    for dp, _, fs in os.walk(OUT):
        for fn in fs:
            total += os.path.getsize(os.path.join(dp, fn))
    print(f"total {total} bytes under {OUT}")


def greedy_nocache_raw(model, prompt, n):
    return greedy_nocache(model, prompt, [], n)


def donor_map(cfg):
    L = cfg["num_hidden_layers"]
    first = L - cfg["num_kv_shared_layers"]
    types = cfg["layer_types"]
    out = {}
    for i in range(first, L):
        out[str(i)] = max(j for j in range(first) if types[j] == types[i])
    return {"first_shared_layer": first, "donor_of_layer": out}


def assistant_case(target, asst, prompt, suppress, tensors, key):
    """Step 0 exactly as SinglePositionMultiTokenCandidateGenerator does it
    after the target's prefill, then N_DRAFT-1 more steps."""
    n = len(prompt)
    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = target(ids, attention_mask=torch.ones_like(ids), use_cache=True,
                     output_hidden_states=True, return_shared_kv_states=True)
    p = n - 1
    hidden = out.hidden_states[-1][:, -1:]  # final-normed (== last_hidden_state) at p
    assert torch.equal(hidden[0, 0], layer_final_norm(target, prompt)[p])
    t = int(masked(out.logits[0, -1], suppress).argmax())
    kv = {k: (v[0], v[1]) for k, v in out.shared_kv_states.items()}
    pos = torch.tensor([[n]])  # input_ids.shape[1] - 1 with t appended: the position of t
    mask2d = torch.ones(1, n + 1, dtype=torch.long)  # generate's attention_mask at that point
    emb_layer = target.get_input_embeddings()
    tok = torch.tensor([[t]])
    logits, drafts, hid = [], [], []
    c = hidden
    for _ in range(N_DRAFT):
        x = torch.cat([emb_layer(tok), c], dim=-1)
        with torch.no_grad():
            o = asst(inputs_embeds=x, attention_mask=mask2d, position_ids=pos,
                     shared_kv_states=kv, use_cache=False)
        tok = o.logits.argmax(-1)
        c = o.last_hidden_state
        logits.append(o.logits[0, 0])
        hid.append(c[0, 0])
        drafts.append(int(tok))
    masks = asst.create_attention_masks(asst.pre_projection(torch.zeros(1, 1, 2 * target.config.hidden_size)),
                                        mask2d, kv)
    visible = {}
    for lt, m in masks.items():
        if m is None:
            visible[lt] = list(range(kv[lt][0].shape[2]))
        else:
            mm = m[0, 0, 0]
            vis = (mm == 0) if mm.dtype != torch.bool else mm
            visible[lt] = [int(j) for j in torch.nonzero(vis).flatten()]
    tensors[f"{key}.logits"] = torch.stack(logits).contiguous()
    tensors[f"{key}.hidden_out"] = torch.stack(hid).contiguous()
    # The target-side inputs (the same for every assistant), prompt 0 only.
    if key.endswith(".0") and "dense.cond.0" not in tensors:
        tensors["dense.cond.0"] = hidden[0, 0].contiguous()
        for lt in kv:
            short = "full" if lt == "full_attention" else "sliding"
            tensors[f"dense.shared_kv.{short}.k.0"] = kv[lt][0][0].contiguous()
            tensors[f"dense.shared_kv.{short}.v.0"] = kv[lt][1][0].contiguous()
    lgs = torch.stack(logits)
    n_masked = [int((row == row.min()).sum()) for row in lgs]
    return {
        "p": p, "t": t, "position_id": n, "draft_tokens": drafts,
        "target_greedy_after_t": None,
        "kv_len": {lt: int(kv[lt][0].shape[2]) for lt in kv},
        "visible_kv_positions": visible,
        "entries_at_mask_value_per_step": n_masked,
    }


def layer_final_norm(model, prompt):
    with torch.no_grad():
        return model(torch.tensor([prompt]), use_cache=False, output_hidden_states=True).hidden_states[-1][0]


def assisted_generate(target, asst, prompt, gen_cfg):
    """generate(assistant_model=...) greedily; also capture the candidates of
    the first drafting round."""
    from transformers.generation import candidate_generator as cg
    captured = []
    orig = cg.SinglePositionMultiTokenCandidateGenerator.get_candidates

    def spy(self, input_ids, *a, **kw):
        ids, lg = orig(self, input_ids, *a, **kw)
        if lg is not None:
            captured.append(ids[0, input_ids.shape[1]:].tolist())
        return ids, lg

    cg.SinglePositionMultiTokenCandidateGenerator.get_candidates = spy
    try:
        out = greedy_generate(target, prompt, gen_cfg, assistant_model=asst)
    finally:
        cg.SinglePositionMultiTokenCandidateGenerator.get_candidates = orig
    return captured[0], out


def agreement(dense_ref, info):
    """How many step-0 drafts match the target's greedy continuation (the
    target's greedy token after t is greedy[1], etc.)."""
    res = []
    for i, case in enumerate(info["cases"]):
        g = dense_ref["greedy"][i]
        assert g[0] == case["t"]
        case["target_greedy_after_t"] = g[1:1 + N_DRAFT]
        k = 0
        for a, b in zip(case["draft_tokens"], g[1:]):
            if a != b:
                break
            k += 1
        res.append(k)
    return {"accepted_prefix_len_per_prompt": res}


CONVENTIONS = {
    "token_ids": "prompts start with <bos>=2; other prompt ids are uniform in 7..511 (no specials)",
    "logits": "reference.safetensors '<model>.logits' F32 [3, 32, 512] (prompt, position, vocab): row r = the model's output at "
              "position r, i.e. the prediction for the token after prompt[r]. One forward over the whole "
              "prompt, no cache. final_logit_softcapping (30) IS applied (30*tanh(x/30)). suppress_tokens "
              "are NOT applied: transformers' forward never applies them, only generate()'s "
              "SuppressTokensLogitsProcessor (sets those ids to -inf). Compare only non-suppressed entries, "
              "or set the suppressed ids to -inf on both sides.",
    "greedy": "'greedy' = model.generate(prompt, do_sample=False, max_new_tokens=32) with the folder's "
              "generation_config (suppress_tokens applied as -inf before argmax, eos ids [1, 6] would stop "
              "generation but prompts were drawn so none occurs in 32 tokens); equal to an argmax loop "
              "without cache on the -inf-masked logits. 'greedy_without_suppress' is the same loop on raw "
              "logits.",
    "layer_out": "'<model>.layer_out.0' F32 [n_layers, 32, hidden]: output of decoder layer l (after PLE "
                 "injection and layer_scalar) for prompt 0; '<model>.final_norm.0' F32 [32, hidden]: after "
                 "the final RMSNorm (the row that is unembedded).",
    "assistant": "For each dense prompt (n = 32 tokens): the target (dense/) prefills the prompt with "
                 "return_shared_kv_states; p = n-1 = 31; t = argmax of the target's logits row p with "
                 "suppress_tokens masked (= greedy[0]); c = the target's FINAL-NORMED hidden state at p "
                 "(hidden_states[-1] == last_hidden_state; 'dense.cond.0' [64] for prompt 0). Step 0 input: "
                 "inputs_embeds = concat(target.embed_tokens(t) * sqrt(64) (the scaled embedding module), c) "
                 "[1, 1, 128]; position_ids = [[n]] = [[32]] -- the POSITION OF t (input_ids.shape[1]-1 after "
                 "t was appended), not p; shared_kv_states = the target's K/V after prefill of the last "
                 "non-shared layer of each type (donors: sliding layer 3, full layer 2), K normed+RoPE'd, V "
                 "v-normed, [1, n_kv, 32, head_dim] each ('dense.shared_kv.<full|sliding>.<k|v>.0' [n_kv, 32, head_dim] for prompt 0), all 32 positions 0..31 (the sliding one is the full "
                 "prefill, not a ring of 8); attention_mask = ones(1, n+1) as generate passes it. Step k>0: "
                 "t = the previous step's argmax (drafts are plain argmax of the assistant's logits: no "
                 "suppress_tokens, no softcap), c = the previous step's returned last_hidden_state "
                 "(post_projection output, [1,1,64]); same position_ids and K/V. '<asst>.logits' F32 "
                 "[3, 4, 512] (prompt, step, vocab) (ordered embeddings: non-candidate entries = min(candidate logits) - 1, "
                 "computed over the whole batch*seq, here one row); '<asst>.hidden_out' F32 [3, 4, 64] the "
                 "returned post-projected hidden. 'visible_kv_positions' lists which cached positions each "
                 "attention type of the assistant sees for this query (derived from transformers' masks).",
    "differences_from_architectures_md": [
        "assistant position_ids = p+1 (the position of t), not p (architectures.md 5.4 / Ollama offset-1); "
        "using p changes the logits (max |diff| 0.82 on prompt 0) and the first draft",
        "the assistant's sliding layer sees the last W+1 cached target positions (p-W..p; here 23..31), "
        "from transformers' bidirectional window |q-kv| <= W on the flipped KV axis",
        "in later drafting rounds transformers passes K/V from the verification forward before the cache "
        "is cropped: the full K/V are cut to len(input_ids) (after a rejection one stale entry remains, the "
        "rejected draft at the new t's position) and the sliding K/V (W-1 cached + verified tokens) are not "
        "cut, so they include rejected drafts; only the first round after prefill is recorded here",
    ],
}


if __name__ == "__main__":
    main()
