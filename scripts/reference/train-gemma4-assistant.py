#!/usr/bin/env python3
"""Trains a tiny Gemma 4 MTP assistant for tests/golden/gemma4/dense, so
that speculative decoding with it accepts drafts (the random assistants of
make-gemma4-fixtures.py never agree with the target, which leaves the
accept, bonus-token and partial-rollback paths untested). Writes
tests/golden/gemma4/assistant-trained/ (config.json, model.safetensors).

The architecture is the fixture assistant's (ordered embeddings, 16
centroids, top 4); only the weights differ. Training data: 256 sequences
of 64 tokens sampled from the target at temperature 0.7 after a random
4-token prompt. For each anchor position P, the assistant gets what wick
(and transformers' SinglePositionMultiTokenCandidateGenerator) gives it:
the target's embedding of token P, the target's final-normed hidden state
at P - 1, the target's K/V of positions 0..P-1 and position id P; step 2
takes token P + 1 and step 1's output state. The loss is the KL divergence
from the target's distribution of the token after (rows P and P + 1),
plus a cross-entropy teaching the centroids to rank the centroid of the
target's argmax first (the top-k selection passes no gradient). Fixed
seeds; CPU; about a minute.

    /root/.pyenv/versions/3.11.7/bin/python3 scripts/reference/train-gemma4-assistant.py

Uses transformers 5.24 (Gemma4ForCausalLM, Gemma4AssistantForCausalLM),
torch 2.15. A test input, not a model: the numbers it reaches (printed)
only need acceptance well above zero and well below one.
"""
import json
import pathlib
import shutil

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, Gemma4AssistantForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIX = ROOT / "tests/golden/gemma4"
OUT = FIX / "assistant-trained"

torch.manual_seed(1234)
target = AutoModelForCausalLM.from_pretrained(FIX / "dense", dtype=torch.float32, attn_implementation="eager")
target.eval()
assistant = Gemma4AssistantForCausalLM.from_pretrained(FIX / "assistant", dtype=torch.float32,
                                                       attn_implementation="eager")
assistant.train()
V = target.config.vocab_size
N_SEQ, LEN, PROMPT = 256, 64, 4

# the sequences, sampled from the target
with torch.no_grad():
    seqs = torch.cat([torch.full((N_SEQ, 1), 2), torch.randint(7, V, (N_SEQ, PROMPT - 1))], dim=1)
    out = target.generate(seqs, attention_mask=torch.ones_like(seqs), do_sample=True, temperature=0.7,
                          top_k=0, max_new_tokens=LEN - PROMPT, min_new_tokens=LEN - PROMPT)
    seqs = out[:, :LEN]
    o = target(seqs, output_hidden_states=True, return_shared_kv_states=True)
    hidden = o.hidden_states[-1]                      # [N, L, H] final-normed
    logp_t = F.log_softmax(o.logits.float(), dim=-1)  # [N, L, V]; row r predicts token r + 1
    kv = o.shared_kv_states
    emb = target.model.embed_tokens(seqs)             # scaled, as the target feeds itself

per = V // assistant.config.num_centroids
order = assistant.masked_embedding.token_ordering.long()
centroid_of = torch.empty(V, dtype=torch.long)
centroid_of[order] = torch.arange(V) // per

opt = torch.optim.Adam(assistant.parameters(), lr=3e-3)
anchors = list(range(PROMPT, LEN - 2))
for epoch in range(10):
    total, n = 0.0, 0
    for P in [anchors[i] for i in torch.randperm(len(anchors))]:
        skv = {k: (v[0][:, :, :P], v[1][:, :, :P]) for k, v in kv.items()}
        pos = torch.full((N_SEQ, 1), P)
        mask = torch.ones(N_SEQ, P + 1, dtype=torch.long)
        cond = hidden[:, P - 1:P]
        loss = 0.0
        for step in range(2):
            x = torch.cat([emb[:, P + step:P + step + 1], cond], dim=-1)
            r = assistant(inputs_embeds=x, position_ids=pos, shared_kv_states=skv, attention_mask=mask)
            h = assistant.model(inputs_embeds=assistant.pre_projection(x), position_ids=pos,
                                shared_kv_states=skv,
                                attention_mask=assistant.create_attention_masks(
                                    assistant.pre_projection(x), mask, skv)).last_hidden_state
            full = assistant.lm_head(h)[:, 0]                  # unmasked logits: gradient everywhere
            ref = logp_t[:, P + step]
            loss = loss + F.kl_div(F.log_softmax(full, -1), ref, log_target=True, reduction="batchmean")
            cl = assistant.masked_embedding.centroids(h)[:, 0]
            loss = loss + F.cross_entropy(cl, centroid_of[ref.argmax(-1)])
            cond = r.last_hidden_state
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += float(loss.detach())
        n += 1
    print(f"epoch {epoch}: mean loss {total / n:.3f}")

# greedy agreement of step 0 with the target on the training anchors (a rough acceptance figure)
assistant.eval()
with torch.no_grad():
    agree = []
    for P in anchors:
        skv = {k: (v[0][:, :, :P], v[1][:, :, :P]) for k, v in kv.items()}
        x = torch.cat([emb[:, P:P + 1], hidden[:, P - 1:P]], dim=-1)
        r = assistant(inputs_embeds=x, position_ids=torch.full((N_SEQ, 1), P), shared_kv_states=skv,
                      attention_mask=torch.ones(N_SEQ, P + 1, dtype=torch.long))
        agree.append((r.logits[:, 0].argmax(-1) == logp_t[:, P].argmax(-1)).float().mean())
    print(f"step-0 greedy agreement with the target: {float(torch.stack(agree).mean()):.3f}")

if OUT.exists():
    shutil.rmtree(OUT)
assistant.save_pretrained(OUT)
# the flat config of the fixture assistant (make-gemma4-fixtures.py writes released checkpoints' form)
shutil.copy(FIX / "assistant/config.json", OUT / "config.json")
shutil.copy(FIX / "assistant/generation_config.json", OUT / "generation_config.json")
print("wrote", OUT, sorted(p.name for p in OUT.iterdir()))
