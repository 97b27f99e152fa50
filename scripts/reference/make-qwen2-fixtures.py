#!/usr/bin/env python3
"""Makes the tiny Qwen 2 fixtures in tests/golden/qwen2/ (test-qwen2.c):

  hf/                  a randomly initialised Qwen2ForCausalLM (transformers
                       5.x), float32 safetensors, untied lm_head, with the
                       tiny byte-level BPE tokenizer of the Qwen 3 fixtures
                       (make-qwen3-fixtures.py) given Qwen 2.5's added tokens
                       and Qwen2.5-Instruct's chat template
  qwen2-tiny-f32.gguf  the same folder converted by llama.cpp's own
                       convert_hf_to_gguf.py (from the llama-cpp-python
                       0.3.36 source package, --outtype f32). The converter
                       names a BPE pre-tokenizer by hashing its output on a
                       test string, which a tokenizer trained here cannot
                       match; it is told "qwen2" (the split this tokenizer
                       uses) and everything else is the converter's own.
  reference.json       3 prompts of 32 token ids; transformers' greedy
                       32-token continuations with full attention and with
                       the sliding window below; chat-template renderings
                       (apply_chat_template) with their token ids
  llama-bias/          a tiny LlamaForCausalLM with attention_bias (biases on
                       Q, K, V and the attention output), the same tokenizer
  logits.safetensors   transformers' float32 logits for every prompt
                       position: "logits" [3, 32, vocab] (the folder as
                       saved), "logits_swa" [3, 32, vocab] (the same
                       weights with use_sliding_window true, sliding_window
                       8, max_window_layers 1: layers 1 and 2 attend to the
                       last 8 positions) and "logits_llama_bias" (llama-bias/)

Qwen 2's structure in small: GQA (4 query heads, 2 KV heads, head_dim 16),
biases on Q, K and V (drawn large, as Qwen's K biases are), NEOX RoPE,
SwiGLU, untied output. Weights are drawn with larger scales than the
default init (and norm gains away from 1) so the logits are far from
uniform and greedy continuations do not all repeat one token.

    python3 scripts/reference/make-qwen2-fixtures.py
"""
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys

import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/golden/qwen2"
HF = OUT / "hf"
SEED = 4321
SCALE = 2.5  # Linear weights ~ N(0, (SCALE / sqrt(fan_in))^2)
BIAS = 1.0   # biases ~ N(0, BIAS^2)
CACHE = pathlib.Path(os.environ.get("WICK_CACHE", os.path.expanduser("~/.cache/wick")))
LCPP = CACHE / "llama.cpp/src/llama_cpp_python-0.3.36/vendor/llama.cpp"

# Qwen2.5-Instruct's chat template (tokenizer_config.json of
# Qwen/Qwen2.5-Coder-1.5B-Instruct, as its GGUF's tokenizer.chat_template)
CHAT_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""

# Qwen 2.5's added tokens (content, special), within the tiny vocabulary
SPECIALS = [("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
            ("<tool_call>", False), ("</tool_call>", False)]

CHATS = [
    ("user_only_default_system", [{"role": "user", "content": "Why is the sky blue?"}]),
    ("system_user", [{"role": "system", "content": "You are a terse assistant."},
                     {"role": "user", "content": "Name three primary colours."}]),
    ("multi_turn", [
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And 3 + 3?"}]),
    ("tool_results", [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me look."},
        {"role": "tool", "content": "{\"temp\": 21}"},
        {"role": "tool", "content": "{\"sky\": \"clear\"}"},
        {"role": "user", "content": "Thanks. <|im_end|> is just text here."}]),
    ("late_system", [
        {"role": "user", "content": "Hi"},
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hello?"}]),
]


def qwen3_fixtures():
    """make-qwen3-fixtures.py as a module (its tokenizer recipe)."""
    spec = importlib.util.spec_from_file_location("mq3", ROOT / "scripts/reference/make-qwen3-fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_tokenizer():
    mq3 = qwen3_fixtures()
    mq3.SPECIALS = SPECIALS
    mq3.CHAT_TEMPLATE = CHAT_TEMPLATE
    return mq3.make_tokenizer()


def make_model(vocab, **swa):
    cfg = Qwen2Config(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      rms_norm_eps=1e-6, tie_word_embeddings=False,
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                      bos_token_id=None, eos_token_id=vocab - 3, pad_token_id=vocab - 5, **swa)
    return draw(Qwen2ForCausalLM, cfg, SEED)


def draw(cls, cfg, seed):
    """cls(cfg) in float32 with its weights drawn wider than the default
    init: norm gains 1 ± 0.3, biases ~ N(0, BIAS^2), embeddings N(0, 1), a
    Linear [out, in] with unit-variance outputs times SCALE."""
    torch.manual_seed(seed)
    model = cls(cfg).float().eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(BIAS * torch.randn(p.shape, generator=g))
            elif p.dim() == 2 and "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) * (SCALE / p.shape[1] ** 0.5))
    model.set_attn_implementation("eager")
    return model


def make_llama_bias(vocab):
    """A tiny LlamaForCausalLM with attention_bias (biases on Q, K, V and
    the attention output), drawn as make_model draws Qwen 2."""
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=True, mlp_bias=False,
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                      bos_token_id=None, eos_token_id=vocab - 3, pad_token_id=vocab - 5)
    return draw(LlamaForCausalLM, cfg, SEED + 1)


def greedy(model, prompt, n):
    seq = list(prompt)
    with torch.no_grad():
        for _ in range(n):  # by hand: no generation-config surprises
            seq.append(int(torch.argmax(model(torch.tensor([seq])).logits[0, -1])))
    return seq[len(prompt):]


def convert_gguf(path):
    if not (LCPP / "convert_hf_to_gguf.py").exists():
        sys.exit(f"{LCPP}/convert_hf_to_gguf.py is missing: run scripts/reference/make-gemma4-gguf.sh "
                 "(or bench/compare --build-only) once to unpack llama.cpp's source package")
    code = ("import sys; sys.path.insert(0, %r); sys.argv = ['convert_hf_to_gguf.py', %r, '--outtype', 'f32', "
            "'--outfile', %r]; import convert_hf_to_gguf as c; from conversion.base import TextModel; "
            "TextModel.get_vocab_base_pre = lambda self, tokenizer: 'qwen2'; c.main()"
            % (str(LCPP), str(HF), str(path)))
    env = dict(os.environ, PYTHONPATH=str(LCPP / "gguf-py"))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def main():
    for d in (HF, OUT / "llama-bias"):
        if d.exists():
            shutil.rmtree(d)
    HF.mkdir(parents=True)
    tok = make_tokenizer()
    vocab = len(tok)
    model = make_model(vocab)
    model.save_pretrained(HF, safe_serialization=True)
    tok.save_pretrained(HF)
    model.generation_config.save_pretrained(HF)
    swa = make_model(vocab, use_sliding_window=True, sliding_window=8, max_window_layers=1)
    swa.load_state_dict(model.state_dict())
    assert swa.config.layer_types == ["full_attention", "sliding_attention", "sliding_attention"]

    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    prompts = [ids[0:32], ids[100:132], ids[200:232]]
    assert all(len(p) == 32 for p in prompts)
    x = torch.tensor(prompts)
    with torch.no_grad():
        logits = model(x).logits.float()
        logits_swa = swa(x).logits.float()
    diff = (logits_swa[:, 8:] - logits[:, 8:]).abs().max()
    assert diff > 1.0, f"the window does not change the logits ({diff})"
    assert (logits_swa[:, :8] - logits[:, :8]).abs().max() < 1e-4
    llama = make_llama_bias(vocab)
    (OUT / "llama-bias").mkdir(exist_ok=True)
    llama.save_pretrained(OUT / "llama-bias", safe_serialization=True)
    tok.save_pretrained(OUT / "llama-bias")
    with torch.no_grad():
        logits_llama = llama(x).logits.float()
    save_file({"logits": logits.contiguous(), "logits_swa": logits_swa.contiguous(),
               "logits_llama_bias": logits_llama.contiguous()}, str(OUT / "logits.safetensors"))
    cont = [greedy(model, p, 32) for p in prompts]
    cont_swa = [greedy(swa, p, 32) for p in prompts]

    chats = []
    for name, msgs in CHATS:
        s = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        chats.append({"name": name, "messages": msgs, "prompt": s, "prompt_ids": chat_ids(tok, msgs, s)})
    ref = {
        "reference": "scripts/reference/make-qwen2-fixtures.py (transformers %s, torch %s)"
                     % (__import__("transformers").__version__, torch.__version__),
        "n_vocab": vocab,
        "prompts": prompts,
        "greedy": cont,
        "greedy_swa": cont_swa,
        "chats": chats,
        "decoded_greedy": [tok.decode(c) for c in cont],
    }
    (OUT / "reference.json").write_text(json.dumps(ref, indent=1, ensure_ascii=False) + "\n")
    convert_gguf(OUT / "qwen2-tiny-f32.gguf")
    for p in sorted(OUT.rglob("*")):
        if p.is_file():
            print(f"{p.stat().st_size:9d}  {p.relative_to(ROOT)}")
    print("greedy:", cont)
    print("greedy with the window:", cont_swa)


def chat_ids(tok, messages, prompt):
    """The ids of the rendered prompt where control-token text is a control
    token only outside the messages' contents: the contents are found in
    the prompt in order; the prompt is cut at the special tokens lying
    outside them, and each run between is tokenized as text (HF
    tokenizers, split_special_tokens). Without control-token text in any
    content this is the plain tokenization of the prompt (asserted)."""
    spans, pos = [], 0
    for m in messages:
        k = prompt.index(m["content"], pos)
        spans.append((k, k + len(m["content"])))
        pos = k + len(m["content"])
    specials = [t for t, special in SPECIALS if special]
    out, run, i = [], 0, 0
    while i < len(prompt):
        hit = next((t for t in specials if prompt.startswith(t, i)), None)
        if hit and not any(a <= i < b for a, b in spans):
            out += tok(prompt[run:i], add_special_tokens=False, split_special_tokens=True)["input_ids"]
            out.append(tok.convert_tokens_to_ids(hit))
            i += len(hit)
            run = i
        else:
            i += 1
    out += tok(prompt[run:], add_special_tokens=False, split_special_tokens=True)["input_ids"]
    if not any(t in m["content"] for m in messages for t, _ in SPECIALS):
        assert out == tok(prompt, add_special_tokens=False)["input_ids"]
    return out


if __name__ == "__main__":
    main()
