#!/usr/bin/env python3
"""Which per-tensor statistics of S_t would flag the step that poisons a
state, and how often do they flag honest steps? The measurement before the
state statistics of round 3 (docs/security.md 6.3, attack 1: one forged
step puts 1e15 into a few columns of the positional embedding and saturates
the Adam moments, after which every later step is cheap and replays bit
for bit; only a challenge of the poisoning step catches it).

For the models of the replay matrix (tests/replay/train.py, its optimizers'
hyper-parameters, a cosine schedule) trained honestly, each S_t's tensors
(parameters and optimizer state) are summarised by candidate statistics
(max |x| and the L2 norm, in binary64; parameters, optimizer state and
floating-point buffers, as S_t holds them), and candidate rules over each pair
S_{t-1}, S_t are counted:

  jump      a tensor's max |x| grows by more than 2^10 x max(its previous
            max |x|, 1) in one step;
  norm      a tensor's L2 norm grows by more than 2^10 x max(its previous
            norm, 1), or shrinks below 2^-10 of it (from above 1);
  saturated an optimizer-state tensor holds |x| >= 2^40;

then the same runs with the attack applied at step `k` (the transformer's
positional embedding: 1e15 in four columns; Adam's moments: exp_avg +-2^63,
exp_avg_sq 2^126), reporting whether each rule flags step k. A flag costs
one more replay (a certain challenge), never a verdict, so honest flags
cost verifiers time, not miners their bonds.

Usage: /usr/bin/python3 bench/state_flags.py [steps]   (Debian's torch; 1 thread)
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matrix_setup import matrix_run  # noqa: E402

JUMP = 2.0 ** 10
SATURATED = 2.0 ** 40


def statistics(model, opt):
    """name -> (max |x|, L2 norm), both binary64, over the parameters, the
    optimizer's tensors (its 0-dim step counters skipped) and the
    floating-point buffers (BatchNorm's running statistics)."""
    names = {id(p): n for n, p in model.named_parameters()}
    out = {}
    for n, p in model.named_parameters():
        x = p.detach().double()
        out[f"param/{n}"] = (float(x.abs().max()), float(x.norm()))
    for p, st in opt.state.items():
        for k, v in st.items():
            if torch.is_tensor(v) and v.dim() > 0:
                x = v.double()
                out[f"optim/{names[id(p)]}/{k}"] = (float(x.abs().max()), float(x.norm()))
    for n, b in model.named_buffers():
        if b.is_floating_point() and b.numel() > 0:
            x = b.double()
            out[f"buffer/{n}"] = (float(x.abs().max()), float(x.norm()))
    return out


def flags(prev, cur):
    """The rules each step trips: {rule: [tensors]}."""
    hit = {"jump": [], "norm": [], "saturated": []}
    for name, (m, n) in cur.items():
        if name in prev:
            pm, pn = prev[name]
            if m > JUMP * max(pm, 1.0):
                hit["jump"].append(name)
            if n > JUMP * max(pn, 1.0) or (pn > 1.0 and n < pn / JUMP):
                hit["norm"].append(name)
        if name.startswith("optim/") and m >= SATURATED:
            hit["saturated"].append(name)
    return hit


def poison(model, opt):
    """Round 3, attack 1's forged state, applied in place."""
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("wpe.weight"):
                p[:, :4] = 1e15
    for st in opt.state.values():
        if "exp_avg" in st:
            sign = torch.where(torch.rand(st["exp_avg"].shape) < 0.5, -1.0, 1.0).to(st["exp_avg"].dtype)
            st["exp_avg"].copy_(sign * 2.0 ** 63)
            st["exp_avg_sq"].fill_(2.0 ** 126)


def run(model_name, optim, dtype, steps, poison_at=None, n_samples=64):
    """Per step t = 1..steps: the rules tripped from S_{t-1} to S_t."""
    task, samples, opt, sched, names = matrix_run(model_name, optim, dtype, steps, n_samples)
    prev = statistics(task, opt)
    rows = []
    for t in range(1, steps + 1):
        batch = [samples[(8 * (t - 1) + i) % n_samples] for i in range(8)]
        args = [torch.stack([s[n] for s in batch]) for n in names]
        opt.zero_grad(set_to_none=True)
        task.train()
        torch.manual_seed(t)
        task(*args).backward()
        opt.step()
        sched.step()
        if t == poison_at:
            poison(task, opt)
        cur = statistics(task, opt)
        rows.append(flags(prev, cur))
        prev = cur
    return rows


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    torch.set_num_threads(1)
    cases = [("mlp", "sgd", torch.float32), ("mlp", "adam", torch.float32), ("mlp", "adamw", torch.float64),
             ("transformer", "adamw", torch.float32), ("transformer", "adam", torch.bfloat16),
             ("transformer", "sgd", torch.float64), ("cnn", "sgd", torch.float32), ("cnn", "sgd", torch.bfloat16),
             ("cnn", "adamw", torch.float32)]
    total = {"jump": 0, "norm": 0, "saturated": 0}
    n = 0
    print(f"honest runs, {steps} steps each: steps each rule flags (first tensors named)")
    for m, o, d in cases:
        rows = run(m, o, d, steps)
        n += len(rows)
        counts = {r: sum(1 for row in rows if row[r]) for r in total}
        for r in total:
            total[r] += counts[r]
        first = {r: next((f"t={t} {row[r][0]}" for t, row in enumerate(rows, 1) if row[r]), "-") for r in total}
        print(f"  {m:11s} {o:5s} {str(d)[6:]:8s} " + "  ".join(f"{r} {counts[r]:3d} ({first[r]})" for r in total),
              flush=True)
    print("  all: " + ", ".join(f"{r} {total[r]} of {n} steps ({total[r] / n:.4f})" for r in total))
    print("attack 1 (positional embedding 1e15 in 4 columns, Adam moments saturated) at step k:")
    for m, o, d in [("transformer", "adam", torch.float32), ("transformer", "adamw", torch.float32),
                    ("transformer", "adam", torch.bfloat16)]:
        for k in (1, steps // 2):
            rows = run(m, o, d, steps, poison_at=k)
            hit = rows[k - 1]
            later = sum(1 for row in rows[k:] if any(row.values()))
            print(f"  {m} {o} {str(d)[6:]} k={k}: step k flagged by "
                  + ", ".join(f"{r} ({len(hit[r])} tensors)" for r in hit if hit[r]) + f"; later steps flagged {later}",
                  flush=True)


if __name__ == "__main__":
    main()
