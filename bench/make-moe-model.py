#!/usr/bin/env python3
"""bench/make-moe-model.py OUT - a random GLM-4-MoE-Lite of mid size (hidden 512, 4 layers: 1 dense,
3 MoE of 64 experts, top 4, expert FFN 256, 1 shared; MLA kv_lora 128), F32 safetensors (~320 MB),
for bench/moe-prefill: not a fixture, not committed. Run with a python that has torch and
transformers >= 5 (/root/.pyenv/versions/3.11.7/bin/python3 here)."""
import sys, torch, shutil
from transformers import Glm4MoeLiteConfig, Glm4MoeLiteForCausalLM
out = sys.argv[1]
cfg = Glm4MoeLiteConfig(vocab_size=2048, hidden_size=512, intermediate_size=1024, moe_intermediate_size=256,
    num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=8, n_shared_experts=1, n_routed_experts=64,
    num_experts_per_tok=4, routed_scaling_factor=1.8, norm_topk_prob=True, q_lora_rank=128, kv_lora_rank=128,
    qk_nope_head_dim=64, qk_rope_head_dim=32, v_head_dim=64, max_position_embeddings=4096,
    rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, mlp_layer_types=["dense"] + ["sparse"] * 3,
    bos_token_id=None, eos_token_id=0, pad_token_id=None)
torch.manual_seed(0)
m = Glm4MoeLiteForCausalLM(cfg).float()
with torch.no_grad():
    for n, b in m.named_buffers():
        if n.endswith("e_score_correction_bias"): b.copy_(0.01 * torch.randn(b.shape))
m.save_pretrained(out)
