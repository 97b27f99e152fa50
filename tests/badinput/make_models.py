"""Writes small GGUF files for the bad-input tests: one valid tiny Gemma 3
model (random F32 weights, a 300-token SentencePiece vocabulary) and
variants of it that are broken in exactly one way each.

Written with the standard library only, from the GGUF specification, so it
shares no code with wick's reader.
"""
import random
import struct

ALIGN = 32
T_U32, T_F32, T_BOOL, T_STRING, T_ARRAY, T_I32 = 4, 6, 7, 8, 9, 5
F32, Q8_0, IQ2_XXS = 0, 8, 16

E, L, H, HKV, D, F = 64, 2, 2, 1, 32, 128


def s(x):
    b = x.encode() if isinstance(x, str) else x
    return struct.pack("<Q", len(b)) + b


def kv(key, typ, val):
    out = s(key) + struct.pack("<I", typ)
    if typ == T_U32:
        out += struct.pack("<I", val)
    elif typ == T_F32:
        out += struct.pack("<f", val)
    elif typ == T_BOOL:
        out += struct.pack("<B", val)
    elif typ == T_STRING:
        out += s(val)
    else:
        raise ValueError(typ)
    return out


def kv_array(key, elem, vals):
    out = s(key) + struct.pack("<IIQ", T_ARRAY, elem, len(vals))
    for v in vals:
        if elem == T_STRING:
            out += s(v)
        elif elem == T_F32:
            out += struct.pack("<f", v)
        elif elem == T_I32:
            out += struct.pack("<i", v)
    return out


def vocab():
    toks = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
    types = [3, 3, 3, 2, 3, 3]
    toks += ["<0x%02X>" % i for i in range(256)]
    types += [6] * 256
    words = ["\u2581", "\u2581the", "\u2581sky", "\u2581is", "\u2581blue", "\u2581why", "user", "model",
             "\n", "h", "i", "hi", "a", "e", "o", "t", "s", "y", "k", "l", "u", "b", "w", "\u2581a",
             "\u2581hi", "?", ".", "!", ",", "r", "n", "m", "d", "c", "g", "p", "f", "v", "x",
             "\u2581and"]
    toks += words
    types += [1] * len(words)
    scores = [0.0] * 262 + [-float(i) for i in range(len(words))]
    return toks, scores, types


def tensors(n_vocab, rng):
    ts = [("token_embd.weight", [E, n_vocab]), ("output_norm.weight", [E])]
    for i in range(L):
        p = f"blk.{i}."
        ts += [(p + "attn_norm.weight", [E]), (p + "attn_q.weight", [E, H * D]),
               (p + "attn_k.weight", [E, HKV * D]), (p + "attn_v.weight", [E, HKV * D]),
               (p + "attn_output.weight", [H * D, E]), (p + "attn_q_norm.weight", [D]),
               (p + "attn_k_norm.weight", [D]), (p + "post_attention_norm.weight", [E]),
               (p + "ffn_norm.weight", [E]), (p + "ffn_gate.weight", [E, F]),
               (p + "ffn_up.weight", [E, F]), (p + "ffn_down.weight", [F, E]),
               (p + "post_ffw_norm.weight", [E])]
    out = []
    for name, ne in ts:
        n = 1
        for d in ne:
            n *= d
        if name.endswith("norm.weight"):
            vals = [1.0 + 0.1 * rng.uniform(-1, 1) for _ in range(n)]
        else:
            vals = [0.2 * rng.uniform(-1, 1) for _ in range(n)]
        out.append({"name": name, "ne": ne, "type": F32, "data": struct.pack(f"<{n}f", *vals)})
    return out


def build(arch="gemma3", version=3, drop_kv=(), kv_override=None, tokenizer_model="llama",
          edit_tensors=None, alignment=ALIGN, extra_kv=()):
    """Returns the bytes of a tiny model, optionally broken (extra_kv: more
    key/value records, from kv())."""
    rng = random.Random(7)
    toks, scores, types = vocab()
    kvs = []

    def add(key, blob):
        if key not in drop_kv:
            kvs.append(blob)

    add("general.architecture", kv("general.architecture", T_STRING, arch))
    if alignment != ALIGN:
        add("general.alignment", kv("general.alignment", T_U32, alignment))
    hp = {"embedding_length": E, "block_count": L, "feed_forward_length": F,
          "attention.head_count": H, "attention.head_count_kv": HKV, "attention.key_length": D,
          "attention.value_length": D, "context_length": 512, "attention.sliding_window": 16}
    for k, v in hp.items():
        if kv_override and k in kv_override:
            v = kv_override[k]
        add(f"{arch}.{k}", kv(f"{arch}.{k}", T_U32, v))
    add(f"{arch}.attention.layer_norm_rms_epsilon", kv(f"{arch}.attention.layer_norm_rms_epsilon", T_F32, 1e-6))
    add("tokenizer.ggml.model", kv("tokenizer.ggml.model", T_STRING, tokenizer_model))
    add("tokenizer.ggml.tokens", kv_array("tokenizer.ggml.tokens", T_STRING, toks))
    add("tokenizer.ggml.scores", kv_array("tokenizer.ggml.scores", T_F32, scores))
    add("tokenizer.ggml.token_type", kv_array("tokenizer.ggml.token_type", T_I32, types))
    add("tokenizer.ggml.bos_token_id", kv("tokenizer.ggml.bos_token_id", T_U32, 2))
    add("tokenizer.ggml.eos_token_id", kv("tokenizer.ggml.eos_token_id", T_U32, 1))
    kvs += list(extra_kv)
    ts = tensors(len(toks), rng)
    if edit_tensors:
        ts = edit_tensors(ts)
    infos, data, offset = b"", b"", 0
    for t in ts:
        offset = (offset + alignment - 1) // alignment * alignment
        t.setdefault("offset", offset)
        infos += s(t["name"]) + struct.pack("<I", len(t["ne"])) + b"".join(
            struct.pack("<Q", d) for d in t["ne"]) + struct.pack("<IQ", t["type"], t["offset"])
        data += b"\0" * (offset - len(data)) + t["data"]
        offset = len(data)
    head = b"GGUF" + struct.pack("<IQQ", version, len(ts), len(kvs)) + b"".join(kvs) + infos
    head += b"\0" * ((-len(head)) % alignment)
    return head + data


def set_tensor(name, **changes):
    def edit(ts):
        for t in ts:
            if t["name"] == name:
                t.update(changes)
        return ts
    return edit


def drop_tensor(name):
    return lambda ts: [t for t in ts if t["name"] != name]


def llama_tensors(ts):
    """The tiny model's tensors as a Llama's: no QK-norms, no post-norms."""
    gemma_only = ("attn_q_norm", "attn_k_norm", "post_attention_norm", "post_ffw_norm")
    return [t for t in ts if not any(g in t["name"] for g in gemma_only)]


def yarn(arch, type_="yarn"):
    """<arch>.rope.scaling.* of a YaRN (or other type_) scaling x4 from 2048."""
    return [kv(f"{arch}.rope.scaling.type", T_STRING, type_), kv(f"{arch}.rope.scaling.factor", T_F32, 4.0),
            kv(f"{arch}.rope.scaling.original_context_length", T_U32, 2048)]


def cases():
    """(file name, bytes or None, expected message fragment); None: do not
    create the file."""
    valid = build()
    return [
        ("valid.gguf", valid, None),
        ("missing.gguf", None, "no such file"),
        ("not-gguf.gguf", b"This is a text file, not a model.\n", "not a GGUF file"),
        ("empty.gguf", b"", "not a GGUF file"),
        ("truncated-header.gguf", valid[:12], "truncated"),
        ("truncated-metadata.gguf", valid[:3000], "tokenizer.ggml.tokens"),
        ("data-past-end.gguf", valid[:-100], "runs past the end of the file"),
        ("zero-dimension.gguf", build(edit_tensors=set_tensor("blk.0.ffn_up.weight", ne=[E, 0])),
         "blk.0.ffn_up.weight: dimension 1 is 0"),
        ("absurd-dimension.gguf", build(edit_tensors=set_tensor("blk.0.ffn_up.weight", ne=[E, 1 << 50])),
         "blk.0.ffn_up.weight: dimension 1 is 1125899906842624"),
        ("unknown-architecture.gguf", build(arch="frobnicator"),
         "unknown architecture \"frobnicator\" (wick supports: "),
        ("unknown-dtype.gguf", build(edit_tensors=set_tensor("blk.1.attn_q.weight", type=99)),
         "blk.1.attn_q.weight: unknown dtype 99"),
        ("unsupported-dtype.gguf",
         build(edit_tensors=set_tensor("blk.0.ffn_gate.weight", ne=[256, 32], type=IQ2_XXS,
                                       data=b"\0" * (66 * 32))),
         "blk.0.ffn_gate.weight has dtype IQ2_XXS, which wick cannot compute with yet"),
        ("missing-tensor.gguf", build(edit_tensors=drop_tensor("blk.1.ffn_up.weight")),
         "missing tensor blk.1.ffn_up.weight"),
        ("wrong-shape.gguf", build(edit_tensors=set_tensor("blk.0.attn_k.weight", ne=[E // 2, 2 * HKV * D])),
         "blk.0.attn_k.weight has shape [32, 64, 1, 1], expected [64, 32]"),
        ("version-1.gguf", build(version=1), "version 1 is not supported"),
        ("no-architecture.gguf", build(drop_kv=("general.architecture",)),
         "missing metadata key general.architecture"),
        ("missing-hparam.gguf", build(drop_kv=("gemma3.embedding_length",)),
         "missing metadata key gemma3.embedding_length"),
        ("zero-layers.gguf", build(kv_override={"block_count": 0}),
         "gemma3.block_count = 0 is out of range"),
        ("bad-heads.gguf", build(kv_override={"attention.head_count_kv": 3}),
         "head_count 2 is not a multiple of head_count_kv 3"),
        ("unsupported-tokenizer.gguf", build(tokenizer_model="wordpiece"),
         "tokenizer model \"wordpiece\" is not supported yet"),
        ("overlapping-tensors.gguf",
         build(edit_tensors=set_tensor("blk.0.attn_v.weight", offset=0)),
         "overlap"),
        ("tiny-context.gguf", build(kv_override={"context_length": 1}),
         "gemma3.context_length = 1 is too small to use"),
        ("vocab-larger-than-embedding.gguf",
         build(edit_tensors=set_tensor("token_embd.weight", ne=[E, 200], data=b"\0" * (E * 200 * 4))),
         "the tokenizer has 302 tokens but the model's embedding only 200 rows"),
        ("bad-alignment.gguf", build(alignment=4), "general.alignment must be a u32 power of two of at least 8"),
        ("escape-sequences.gguf", build(tokenizer_model="\x1b[31mRED\x1b]0;title\x07"),
         "tokenizer model \"?[31mRED?]0;title?\" is not supported"),
        # a layer's tensors past block_count were once ignored: the model silently cut short
        ("tensor-past-block-count.gguf", build(kv_override={"block_count": 1}),
         "tensor blk.1.attn_norm.weight is past the 1 layers of gemma3.block_count"),
        ("misaligned-tensor.gguf",
         build(edit_tensors=set_tensor("output_norm.weight", offset=ALIGN * 1000 + 4)),
         "is not a multiple of the alignment"),
        # a Llama (and a Gemma 3) once ran YaRN or any other scaling type as linear scaling
        ("llama-valid.gguf", build(arch="llama", edit_tensors=llama_tensors), None),
        ("llama-rope-yarn.gguf", build(arch="llama", edit_tensors=llama_tensors, extra_kv=yarn("llama")),
         'llama.rope.scaling.type = "yarn" is not supported'),
        ("gemma3-rope-frobnicate.gguf", build(extra_kv=yarn("gemma3", "frobnicate")),
         'gemma3.rope.scaling.type = "frobnicate" is not supported'),
        ("gemma3-rope-linear.gguf", build(extra_kv=yarn("gemma3", "linear")), None),
        # a chat template of another type once made the model run as raw completion
        ("chat-template-u32.gguf", build(extra_kv=[kv("tokenizer.chat_template", T_U32, 7)]),
         "tokenizer.chat_template has type u32, expected string"),
        ("pooling-type-99.gguf", build(extra_kv=[kv("gemma3.pooling_type", T_U32, 99)]),
         "gemma3.pooling_type = 99 is not a pooling type"),
    ]


def folder_cases():
    """(folder name, fixture folder whose files other than config.json it
    links, config.json edits, expected message fragment): Hugging Face
    folders broken in their config.json."""
    return [
        # model_type lookup once read past llama's full list of 4 (UBSan)
        ("hf-unknown-model-type", "phi3/longrope/hf", {"model_type": "frobnicator"},
         "model_type 'frobnicator' (wick supports"),
        # a rope_parameters that is no object once dropped gpt-oss's YaRN silently
        ("hf-rope-parameters-string", "gpt-oss/hf", {"rope_parameters": "yarn"},
         "rope_parameters must be an object"),
        ("hf-rope-theta-string", "phi3/longrope/hf", {"rope_parameters.rope_theta": "10000"},
         "rope_parameters rope_theta must be a number"),
        # cast to an integer before any range check (UB)
        ("hf-head-dim-huge", "phi3/longrope/hf", {"head_dim": 1e300}, "head_dim 1e+300"),
        # once ignored: blk.1 unused, GELU run as SiLU, a string as a bool, ids out of the vocabulary
        ("hf-layers-past-count", "llamalike/falcon3/hf", {"num_hidden_layers": 1},
         "tensors of layer 1 (blk.1.attn_norm.weight), past the 1 layers config.json gives"),
        ("hf-hidden-act-gelu", "llamalike/falcon3/hf", {"hidden_act": "gelu"}, 'hidden_act "gelu" is not supported'),
        ("hf-hidden-act-frob", "llamalike/mistral/hf", {"hidden_act": "frob"}, 'hidden_act "frob" is not supported'),
        ("hf-hidden-act-number", "qwen3/hf", {"hidden_act": 1}, "hidden_act must be a string"),
        ("hf-gemma2-gelu-exact", "gemma2/hf", {"hidden_activation": "gelu"},
         'hidden_activation "gelu" is not supported'),
        ("hf-tie-string", "llamalike/falcon3/hf", {"tie_word_embeddings": "yes"},
         "tie_word_embeddings must be true or false"),
        ("hf-untied-no-lm-head", "phi3/mini/hf", {"tie_word_embeddings": False},
         "tie_word_embeddings is false, but the folder has no lm_head.weight"),
        ("hf-eos-huge", "llamalike/falcon3/hf", {"eos_token_id": 10 ** 9},
         "eos_token_id 1000000000 is out of the vocabulary (0..511)"),
        ("hf-eos-list-negative", "llamalike/falcon3/hf", {"eos_token_id": [1, -1]},
         "eos_token_id -1 is out of the vocabulary"),
        ("hf-bos-past-vocab", "llamalike/falcon3/hf", {"bos_token_id": 512}, "bos_token_id 512 is out of the vocabulary"),
        ("hf-bos-string", "llamalike/falcon3/hf", {"bos_token_id": "2"}, "bos_token_id must be an integer"),
        ("hf-vocab-size-wrong", "llamalike/falcon3/hf", {"vocab_size": 100},
         "vocab_size is not the embedding's 512 rows"),
    ]

