#!/usr/bin/env python3
"""Makes the MXFP4 part of tests/golden/gpt-oss/ (test-gpt-oss.c test_mxfp4)
from what make-gpt-oss-fixtures.py left there (which runs this at its end):

  gpt-oss-mxfp4.gguf  gpt-oss-f32.gguf (llama.cpp's converter) with the three
                      expert tensors of every layer (ffn_gate_exps,
                      ffn_up_exps, ffn_down_exps) quantized to MXFP4 (GGUF type
                      39) by the gguf package (gguf.quants.quantize); every
                      other key and tensor copied unchanged by GGUFReader /
                      GGUFWriter, as gguf-py's gguf_new_metadata.py does
  mxfp4/logits.safetensors
                      "logits" F32 [3, 32, 519]: transformers float32 (eager)
                      logits at every position of the same 3 prompts, from hf/
                      with its expert weights replaced by the MXFP4-dequantized
                      values (gguf.quants.dequantize of the bytes written)
  mxfp4/reference.json
                      the prompts, the greedy 32-token continuations of that
                      model, and checks: how far the MXFP4 rounding moves the
                      logits from the F32 model (relative, as the F32 fixture
                      measures its features), the smallest greedy top-1 - top-2
                      margin

Layouts (llama.cpp conversion/gpt_oss.py, src/model/hf_gpt_oss.c):
transformers' gate_up_proj is [n_expert][n_embd][2 n_ff] with gate in the even
and up in the odd columns; the GGUF's ffn_gate_exps / ffn_up_exps are numpy
[n_expert][n_ff][n_embd] (ne [n_embd, n_ff, n_expert]) = gate_up_proj[:, :,
0::2 / 1::2] transposed. down_proj is [n_expert][n_ff][n_embd]; ffn_down_exps
numpy [n_expert][n_embd][n_ff] is its transpose. MXFP4 blocks run along a
GGUF row (32 elements: n_embd for gate/up, n_ff for down), so the rounding is
along transformers' n_embd axis for gate_up_proj and its n_ff axis for
down_proj.

    PYTHONPATH=/tmp/sp ~/.cache/wick/grammar-anchors-venv/bin/python scripts/reference/make-gpt-oss-mxfp4-fixture.py
"""
import json
import pathlib
import sys

import numpy as np
import torch
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter, Keys
from gguf.quants import dequantize, quantize
from safetensors.torch import load_file, save_file
from transformers import GptOssForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/golden/gpt-oss"
MX = OUT / "mxfp4"
EXPERTS = ("ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight")
N_GREEDY = 32


def write_mxfp4_gguf(src, dst):
    """Copies src to dst with the expert weights in MXFP4; returns
    {name: dequantized numpy array in the GGUF's numpy layout}."""
    r = GGUFReader(src)
    arch = r.fields[Keys.General.ARCHITECTURE].contents()
    w = GGUFWriter(dst, arch)
    for f in r.fields.values():
        if f.name == Keys.General.ARCHITECTURE or f.name.startswith("GGUF."):
            continue
        vt = f.types[0]
        w.add_key_value(f.name, f.contents(), vt, sub_type=f.types[-1] if vt == GGUFValueType.ARRAY else None)
    deq = {}
    for t in r.tensors:
        data = np.array(t.data)
        if t.name.endswith(EXPERTS):
            assert t.tensor_type == GGMLQuantizationType.F32 and data.ndim == 3, (t.name, t.tensor_type)
            q = quantize(data, GGMLQuantizationType.MXFP4)
            deq[t.name] = dequantize(q, GGMLQuantizationType.MXFP4).reshape(data.shape)
            w.add_tensor(t.name, q, raw_dtype=GGMLQuantizationType.MXFP4)
        else:
            w.add_tensor(t.name, data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    assert len(deq) == 3 * r.fields[f"{arch}.block_count"].contents(), sorted(deq)
    return deq, {t.name: np.array(t.data) for t in r.tensors if t.name.endswith(EXPERTS)}


def greedy(model, prompt, n):
    seq, margins = list(prompt), []
    with torch.no_grad():
        for _ in range(n):
            row = model(torch.tensor([seq])).logits[0, -1]
            top = torch.topk(row, 2).values
            margins.append(float(top[0] - top[1]))
            seq.append(int(torch.argmax(row)))
    return seq[len(prompt):], min(margins)


def main():
    ref = json.loads((OUT / "reference.json").read_text())
    prompts = ref["prompts"]
    MX.mkdir(exist_ok=True)
    deq, f32 = write_mxfp4_gguf(OUT / "gpt-oss-f32.gguf", OUT / "gpt-oss-mxfp4.gguf")
    model = GptOssForCausalLM.from_pretrained(OUT / "hf", dtype=torch.float32, attn_implementation="eager").eval()
    x = torch.tensor(prompts)
    checks = {}
    with torch.no_grad():
        base = model(x).logits.float()
        stored = load_file(str(OUT / "logits.safetensors"))["logits"]
        checks["f32_model_max_abs_diff_from_stored_logits"] = float((base - stored).abs().max())
        for i, layer in enumerate(model.model.layers):
            ex = layer.mlp.experts
            g = lambda k: torch.from_numpy(f32[f"blk.{i}.{k}"])
            d = lambda k: torch.from_numpy(deq[f"blk.{i}.{k}"])
            # the layout mapping, checked on the F32 GGUF before it is used
            assert torch.equal(ex.gate_up_proj[:, :, 0::2], g(EXPERTS[0]).transpose(1, 2))
            assert torch.equal(ex.gate_up_proj[:, :, 1::2], g(EXPERTS[1]).transpose(1, 2))
            assert torch.equal(ex.down_proj, g(EXPERTS[2]).transpose(1, 2))
            ex.gate_up_proj[:, :, 0::2] = d(EXPERTS[0]).transpose(1, 2)
            ex.gate_up_proj[:, :, 1::2] = d(EXPERTS[1]).transpose(1, 2)
            ex.down_proj.copy_(d(EXPERTS[2]).transpose(1, 2))
            wmax = max(float((ex.gate_up_proj[:, :, 0::2] - g(EXPERTS[0]).transpose(1, 2)).abs().max()),
                       float((ex.down_proj - g(EXPERTS[2]).transpose(1, 2)).abs().max()))
            checks[f"layer{i}_max_abs_expert_weight_rounding"] = wmax
        logits = model(x).logits.float()
    r = (logits - base).abs().amax(-1) / logits.abs().amax(-1)
    checks["max_rel_logit_change_mxfp4_vs_f32"] = float(r.max())
    checks["min_rel_logit_change_mxfp4_vs_f32"] = float(r.min())
    checks["positions_argmax_changed_by_mxfp4"] = int((logits.argmax(-1) != base.argmax(-1)).sum())
    print(f"MXFP4 rounding moves the logits by {float(r.min()):.3g}..{float(r.max()):.3g} (relative)")
    assert checks["min_rel_logit_change_mxfp4_vs_f32"] > 0.01, checks
    outs = [greedy(model, p, N_GREEDY) for p in prompts]
    checks["min_top1_top2_margin_greedy"] = min(m for _, m in outs)
    print("greedy margins", [round(m, 3) for _, m in outs])
    save_file({"logits": logits.contiguous()}, str(MX / "logits.safetensors"))
    import importlib.metadata

    import transformers
    out = {
        "generator": "scripts/reference/make-gpt-oss-mxfp4-fixture.py",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "gguf": importlib.metadata.version("gguf"), "python": sys.version.split()[0]},
        "gguf": "../gpt-oss-mxfp4.gguf",
        "prompts": prompts,
        "greedy": [o for o, _ in outs],
        "checks": checks,
    }
    (MX / "reference.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
