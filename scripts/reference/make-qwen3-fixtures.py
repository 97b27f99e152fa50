#!/usr/bin/env python3
"""Makes the tiny Qwen 3 fixtures in tests/golden/qwen3/ (test-qwen3.c):

  hf/                  a randomly initialised Qwen3ForCausalLM (transformers
                       5.x), float32 safetensors, with a small byte-level BPE
                       tokenizer (tokenizers) that has Qwen's special tokens
                       and Qwen 3's chat template
  qwen3-tiny-f32.gguf  the same weights and tokenizer written with the gguf
                       package under llama.cpp's qwen3 keys and tensor names
  reference.json       3 prompts of 32 token ids, transformers' greedy
                       32-token continuations, chat-template renderings
                       (enable_thinking=False) with their token ids
  logits.safetensors   transformers' float32 logits for every prompt
                       position: "logits" [3, 32, vocab]

The model keeps Qwen 3's structure in small: GQA (4 query heads, 2 KV
heads), head_dim 32 with num_heads * head_dim != hidden_size, per-head
QK-norm, NEOX RoPE, SwiGLU, tied embeddings. Weights are drawn with larger
scales than the default init (and norm gains away from 1) so the logits
are far from uniform and greedy continuations do not all repeat one token.

    /root/.pyenv/versions/3.11.7/bin/python3 scripts/reference/make-qwen3-fixtures.py
"""
import codecs
import contextlib
import io
import json
import pathlib
import shutil
with contextlib.redirect_stdout(io.StringIO()):
    import this  # the Zen of Python, as training text

import numpy as np
import torch
from safetensors.torch import save_file
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

import gguf

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/golden/qwen3"
HF = OUT / "hf"
SEED = 1234
SCALE = 2.5  # Linear weights ~ N(0, (SCALE / sqrt(fan_in))^2)
N_BASE = 507  # byte-level BPE pieces; 5 added tokens make the vocab 512
SPECIALS = [("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
            ("<think>", False), ("</think>", False)]  # (content, special) as in Qwen 3

# Qwen 2/3's pre-tokenizer split (tokenizer.json Split, behavior Isolated)
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")

# Qwen 3's chat template (Qwen/Qwen3-0.6B tokenizer_config.json)
CHAT_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}"""

# A prompt whose greedy continuation writes <think> (510) at step 4 and
# </think> (511) at step 20, found by a search over 4096 random 8-token
# prompts (torch.randint(0, 507, generator seeded 7)) with this model.
THINK_PROMPT = [116, 311, 193, 483, 252, 84, 159, 266]

CHATS = [
    ("system_user", [{"role": "system", "content": "You are a terse assistant."},
                     {"role": "user", "content": "Name three primary colours."}]),
    ("user_only", [{"role": "user", "content": "Why is the sky blue?"}]),
    ("multi_turn_with_thinking", [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "<think>\nThe user wants a sum.\n</think>\n\n4"},
        {"role": "user", "content": "And 3 + 3?"}]),
    ("tool_result", [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me look."},
        {"role": "tool", "content": "{\"temp\": 21}"},
        {"role": "tool", "content": "{\"sky\": \"clear\"}"}]),
    ("assistant_last_with_reasoning", [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<think>\n\nbrief thought\n\n</think>\n\nHello!"}]),
]


def training_text():
    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    text += "\n" + codecs.decode(this.s, "rot13")
    return [text] * 4


def make_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False, trim_offsets=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=N_BASE, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_text(), trainer=trainer)
    assert tok.get_vocab_size() == N_BASE, tok.get_vocab_size()
    for content, special in SPECIALS:
        t = AddedToken(content, special=special, normalized=False)
        (tok.add_special_tokens if special else tok.add_tokens)([t])
    assert tok.get_vocab_size() == N_BASE + len(SPECIALS)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", unk_token=None, bos_token=None)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def make_model(vocab):
    cfg = Qwen3Config(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                      max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=True,
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                      bos_token_id=None, eos_token_id=vocab - 3, pad_token_id=vocab - 5,
                      attention_bias=False, use_sliding_window=False)
    torch.manual_seed(SEED)
    model = Qwen3ForCausalLM(cfg).float().eval()
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g))
            elif p.dim() == 2 and "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:  # a Linear [out, in]: unit-variance outputs, a little more
                p.copy_(torch.randn(p.shape, generator=g) * (SCALE / p.shape[1] ** 0.5))
    model.config.attn_implementation = "eager"
    model.set_attn_implementation("eager")
    return model


def write_gguf(model, tok, path):
    cfg = model.config
    w = gguf.GGUFWriter(str(path), "qwen3")
    w.add_name("qwen3-tiny")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    # tokenizer as llama.cpp's converter writes a Qwen 2/3 one
    backend = tok.backend_tokenizer
    vocab = backend.get_vocab(with_added_tokens=True)
    pieces = [None] * len(vocab)
    for piece, i in vocab.items():
        pieces[i] = piece
    added = {t.content: t for t in backend.get_added_tokens_decoder().values()}
    types = [gguf.TokenType.NORMAL] * len(pieces)
    for i, p in enumerate(pieces):
        if p in added:
            types[i] = gguf.TokenType.CONTROL if added[p].special else gguf.TokenType.USER_DEFINED
    merges = json.loads(backend.to_str())["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(pieces)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_eos_token_id(vocab["<|im_end|>"])
    w.add_pad_token_id(vocab["<|endoftext|>"])
    w.add_bos_token_id(vocab["<|endoftext|>"])
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
             "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
             "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for name, t in model.state_dict().items():
        a = t.detach().float().numpy()
        if name == "model.embed_tokens.weight":
            g = "token_embd.weight"
        elif name == "model.norm.weight":
            g = "output_norm.weight"
        elif name == "lm_head.weight":
            continue  # tied
        else:
            parts = name.split(".")  # model.layers.N.<module...>.weight
            g = f"blk.{parts[2]}.{names['.'.join(parts[3:-1])]}.weight"
        w.add_tensor(g, np.ascontiguousarray(a))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    if HF.exists():
        shutil.rmtree(HF)
    HF.mkdir(parents=True)
    tok = make_tokenizer()
    vocab = len(tok)
    model = make_model(vocab)
    model.save_pretrained(HF, safe_serialization=True)
    tok.save_pretrained(HF)
    model.generation_config.save_pretrained(HF)

    # prompts: 32 ids of text from three places, plus greedy continuations
    text = (ROOT / "scripts/reference/long_text.txt").read_text(encoding="utf-8")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    prompts = [ids[0:32], ids[100:132], ids[200:232]]
    assert all(len(p) == 32 for p in prompts)
    x = torch.tensor(prompts)
    with torch.no_grad():
        logits = model(x).logits.float()
        cont, gaps = [], []
        for p in prompts:  # greedy by hand: no generation-config surprises
            seq = list(p)
            for _ in range(32):
                out = model(torch.tensor([seq])).logits[0, -1]
                top = torch.topk(out, 2).values
                gaps.append(float(top[0] - top[1]))
                seq.append(int(torch.argmax(out)))
            cont.append(seq[32:])
        seq = list(THINK_PROMPT)
        for _ in range(32):
            seq.append(int(torch.argmax(model(torch.tensor([seq])).logits[0, -1])))
        think_cont = seq[len(THINK_PROMPT):]
    save_file({"logits": logits.contiguous()}, str(OUT / "logits.safetensors"))

    chats = []
    for name, msgs in CHATS:
        s = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True,
                                    enable_thinking=False)
        chats.append({"name": name, "messages": msgs, "prompt": s,
                      "prompt_ids": tok(s, add_special_tokens=False)["input_ids"]})
    assert 510 in think_cont and 511 in think_cont, think_cont
    ref = {
        "reference": "scripts/reference/make-qwen3-fixtures.py (transformers %s, torch %s)"
                     % (__import__("transformers").__version__, torch.__version__),
        "n_vocab": vocab,
        "prompts": prompts,
        "greedy": cont,
        "chats": chats,
        "think_prompt": THINK_PROMPT,
        "think_greedy": think_cont,
        "decoded_greedy": [tok.decode(c) for c in cont],
    }
    (OUT / "reference.json").write_text(json.dumps(ref, indent=1, ensure_ascii=False) + "\n")
    write_gguf(model, tok, OUT / "qwen3-tiny-f32.gguf")
    for p in sorted(OUT.rglob("*")):
        if p.is_file():
            print(f"{p.stat().st_size:9d}  {p.relative_to(ROOT)}")
    print("greedy:", cont)
    print("smallest greedy top-2 gap: %.4f" % min(gaps))


if __name__ == "__main__":
    main()
