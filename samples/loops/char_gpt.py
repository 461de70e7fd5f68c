"""A character-level GPT trained the way nanoGPT-style repositories train
one: a train.bin of uint16 token ids, get_batch() drawing random windows
with torch.randint, a warm-up and cosine learning rate set by hand at the
top of the loop, AdamW with decay / no-decay parameter groups, gradient
clipping. The lines marked `# pot` hook it (a line `# pot-was: <code>`
replaced that code); without them it is the plain script
(bindings/python/tests/test_loop_scripts.py runs both).

    python char_gpt.py --out DIR [--steps N]
"""
import argparse
import math
import os
from typing import Optional

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F

import pot.torch as pt  # pot

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=12)
args = p.parse_args()
os.makedirs(args.out, exist_ok=True)

# data: a small corpus encoded as uint16 character ids (prepare.py)
text = "".join(f"to be or not to be, that is question {i}. " for i in range(60))
chars = sorted(set(text))
vocab_size = len(chars)
stoi = {c: i for i, c in enumerate(chars)}
np.array([stoi[c] for c in text], dtype=np.uint16).tofile(os.path.join(args.out, "train.bin"))

batch_size, block_size = 4, 16
n_embd, n_head, n_layer = 32, 2, 2
learning_rate, min_lr, warmup_iters, lr_decay_iters = 6e-3, 6e-4, 3, 10
weight_decay, grad_clip = 0.1, 1.0
torch.manual_seed(1337)
torch.set_num_threads(1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))
        self.n_embd, self.n_head = n_embd, n_head

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block() for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx, targets: Optional[torch.Tensor] = None):
        pos = torch.arange(0, idx.size(1), dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss: Optional[torch.Tensor] = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


data = np.memmap(os.path.join(args.out, "train.bin"), dtype=np.uint16, mode="r")


def get_batch():
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block_size].astype(np.int64)) for i in ix])
    return x, y


model = GPT()
params = [p for p in model.parameters() if p.requires_grad]
optim_groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=(0.9, 0.95))

# The task (its owner's part): the stream, the spec with the loop's own rates, each miner's own windows.
stream = pt.commit_stream(os.path.join(args.out, "train.bin"), os.path.join(args.out, "stream.json"), window=block_size + 1)  # pot
program = pt.with_loss(model, output=1, inputs=["x", "y"]); pt.save_program(program, os.path.join(args.out, "model.pt"))  # pot
spec = pt.make_spec(optimizer, os.path.join(args.out, "model.pt"), dtype=torch.float32, batch_size=batch_size, seed_policy="none", grad_clip_max_norm=grad_clip, rates=[get_lr(i) for i in range(args.steps)], model=program)  # pot
task = pt.make_task(program, optimizer, spec, dataset_dir=os.path.join(args.out, "stream.json"), schedule=pt.RUN_SEEDED_UNIFORM, steps=args.steps, owner=b"owner", end_height=10**6, challenge_rounds=2); open(os.path.join(args.out, "spec.json"), "w").write(spec.to_json())  # pot
rec = pt.Recorder(program, optimizer, task, os.path.join(args.out, "model.pt"), os.path.join(args.out, "ckpt"), dataset_dir=os.path.join(args.out, "stream.json"), steps=args.steps, checkpoint_every=4)  # pot

for iter_num in range(args.steps):
    lr = get_lr(iter_num)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    rec.begin_step()  # pot
    X, Y = map(rec.batch().get, ("x", "y"))  # pot-was: X, Y = get_batch()
    logits, loss = model(X, Y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    rec.end_step(loss)  # pot
    print(f"iter {iter_num}: loss {loss.item():.4f}, lr {lr:.2e}")
rec.finish(); rec.close()  # pot
