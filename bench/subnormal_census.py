#!/usr/bin/env python3
"""Subnormal values in training states: the measurement behind check 28
`subnormal` (docs/PROTOCOL.md section 18, docs/security.md 6.3, round 3
attack 7).

1. Honest runs: the models of the replay matrix (tests/replay/train.py, its
   optimizers' hyper-parameters, a cosine schedule) trained for 300 steps;
   the largest count of subnormal elements (BF16/F32/F64, the bits the
   check reads) in any state, among the parameters and among the optimizer
   state, next to the bounds (one in 4096, one in 16).
2. The honest case that reaches the range: an embedding whose rows get a
   gradient at step 1 only (Adam); the step at which their first moments
   turn subnormal and the share of the optimizer state they then hold.
3. What the check prevents, on this CPU: one training step (forward,
   backward, update) from a state of subnormal weights, and from one of
   subnormal moments, against the same step from the honest state. The
   penalty depends on the CPU: many take a microcode assist per subnormal
   operand (the red team measured 16-19x); some take none.

Usage: /usr/bin/python3 bench/subnormal_census.py   (Debian's torch; ~1 min on 1 thread)
"""
import copy
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matrix_setup import T, make_optimizer, matrix_run  # noqa: E402

PARAM_SHARE, OTHER_SHARE = 4096, 16


def subnormal(t):
    if t.dtype not in (torch.bfloat16, torch.float32, torch.float64):
        return 0
    return int(((t != 0) & (t.abs() < torch.finfo(t.dtype).tiny)).sum())


def census(model, opt):
    p = sum(subnormal(x.detach()) for x in model.parameters())
    n_p = sum(x.numel() for x in model.parameters())
    o = n_o = 0
    for st in opt.state.values():
        for v in st.values():
            if torch.is_tensor(v) and v.is_floating_point():
                o += subnormal(v)
                n_o += v.numel()
    return p, n_p, o, n_o


def honest(model_name, optim, dtype, steps, n_samples=64):
    task, samples, opt, sched, names = matrix_run(model_name, optim, dtype, steps, n_samples)
    worst = [0, 0, 0, 0]
    for t in range(steps):
        batch = [samples[(8 * t + i) % n_samples] for i in range(8)]
        task.train()
        torch.manual_seed(t)
        task(*[torch.stack([s[n] for s in batch]) for n in names]).backward()
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        p, n_p, o, n_o = census(task, opt)
        worst = [max(worst[0], p), n_p, max(worst[2], o), n_o]
    p, n_p, o, n_o = worst
    print(f"  {model_name:11s} {optim:5s} {str(dtype)[6:]:8s} {steps} steps: parameters {p} of {n_p} "
          f"(bound {n_p // PARAM_SHARE}), optimizer state {o} of {n_o} (bound {n_o // OTHER_SHARE})", flush=True)


def decaying_rows(steps=1000):
    torch.manual_seed(0)
    emb, head = torch.nn.Embedding(1000, 16), torch.nn.Linear(16, 1000)
    opt = torch.optim.Adam(list(emb.parameters()) + list(head.parameters()), lr=1e-3)
    first = None
    worst = 0.0
    for t in range(1, steps + 1):
        tokens = torch.randint(0, 1000 if t == 1 else 100, (64,))  # rows 100.. get a gradient at step 1 only
        torch.nn.functional.cross_entropy(head(emb(tokens)), tokens).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        _, _, o, n_o = census(emb, opt)
        if o and first is None:
            first = t
        worst = max(worst, o / n_o)
    print(f"  Adam, 900 of 1000 embedding rows with a gradient at step 1 only: first subnormal moment at step "
          f"{first}, at most {100 * worst:.1f}% of the optimizer state subnormal at once (bound {100 / OTHER_SHARE:.2f}%)")


def timed_step(poison):
    torch.manual_seed(1)
    task = T.build_task("transformer")
    samples = T.make_samples("transformer", 64, 7, torch.float32)
    opt = make_optimizer("adam", list(task.parameters()))
    names = list(samples[0].keys())
    args = [torch.stack([s[n] for s in samples[:8]]) for n in names]
    task(*args).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    with torch.no_grad():
        if poison == "weights":
            for p in task.parameters():
                p.fill_(1e-40)
        if poison == "moments":
            for st in opt.state.values():
                st["exp_avg"].fill_(1e-40)
                st["exp_avg_sq"].fill_(1e-41)
    model_state, opt_state = copy.deepcopy(task.state_dict()), copy.deepcopy(opt.state_dict())
    best = float("inf")
    for _ in range(7):
        task.load_state_dict(model_state)
        opt.load_state_dict(opt_state)
        start = time.perf_counter()
        task(*args).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        best = min(best, time.perf_counter() - start)
    return best


torch.set_num_threads(1)
print("1. honest runs: the most subnormal elements in any state")
for m, o, d in [("mlp", "sgd", torch.float32), ("mlp", "adam", torch.float32), ("mlp", "adamw", torch.float64),
                ("transformer", "adamw", torch.float32), ("transformer", "adam", torch.bfloat16),
                ("cnn", "sgd", torch.bfloat16), ("cnn", "adamw", torch.float32)]:
    honest(m, o, d, 300)
print("2. moments of rows whose gradient stays zero")
decaying_rows()
print("3. one step on this CPU (best of 7):")
base = timed_step(None)
for poison in ("weights", "moments"):
    t = timed_step(poison)
    print(f"  subnormal {poison}: {t * 1e3:.2f} ms against {base * 1e3:.2f} ms honest ({t / base:.2f}x)")
