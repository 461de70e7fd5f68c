#!/usr/bin/env python3
"""Does S_t depend on the step's gradient? The measurement behind check 27
`gradient_ignored` (docs/PROTOCOL.md section 21.5, docs/security.md
section 6: saturated optimizer state after a forged step 1).

For the models of the replay matrix (tests/replay/train.py, with its
optimizers' hyper-parameters and its cosine schedule) trained honestly, and
for Adam whose state was saturated after step 1 (exp_avg = +-2^63,
exp_avg_sq = 2^126: the gradient's share rounds away), each step's optimizer
update is applied twice from the same state, once with the real gradient and
once with a zero gradient, and the elements that differ (bit patterns) are
counted: in the parameters, and in the optimizer state. Prints, per
configuration, the smallest counts over the run (honest) or the largest
(saturated), and how many steps would fail check 27's whole-state rule, a
parameters-only rule, and the per-tensor rule (for tensors of any size, and
as check 27 holds it: tensors of at least 64 elements), with the largest
tensor left without a trace.

Usage: /usr/bin/python3 bench/gradient_dependence.py   (Debian's torch; ~1 min on 1 thread)
"""
import copy
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matrix_setup import matrix_run  # noqa: E402


def state_tensors(model, opt):
    names = {id(p): n for n, p in model.named_parameters()}
    out = {f"param/{n}": p.detach().clone() for n, p in model.named_parameters()}
    for p, st in opt.state.items():
        for k, v in st.items():
            if torch.is_tensor(v) and v.dim() > 0:
                out[f"optim/{names[id(p)]}/{k}"] = v.clone()
    return out


MIN_TRACED = 64  # witness::kMinTracedTensorElements


def untraced_tensors(a, b, grads):
    """The sizes of the parameters with a non-zero gradient none of whose
    elements (parameter or optimizer state) differ from the zero-gradient
    update: what the per-tensor rule of check 27 fails when a size is at
    least MIN_TRACED."""
    sizes = []
    for name, g in grads.items():
        if not g.any():
            continue
        keys = [f"param/{name}"] + [k for k in a if k.startswith(f"optim/{name}/")]
        if all(bool((bits(a[k]) == bits(b[k])).all()) for k in keys):
            sizes.append(g.numel())
    return sizes

def bits(t):
    return t.contiguous().view({8: torch.int64, 4: torch.int32, 2: torch.int16}[t.element_size()])


def differ(a, b, prefix):
    return sum(int((bits(a[k]) != bits(b[k])).sum()) for k in a if k.startswith(prefix))


def probe(model_name, optim, dtype, steps=20, saturate=False, n_samples=64):
    """Per step: (param elements differing from the zero-gradient update,
    optimizer-state elements differing, parameter elements moved, all
    parameter elements, optimizer-state elements, untraced tensors)."""
    task, samples, opt, sched, names = matrix_run(model_name, optim, dtype, steps, n_samples)
    params = list(task.parameters())
    rows = []
    for t in range(steps):
        batch = [samples[(8 * t + i) % n_samples] for i in range(8)]
        args = [torch.stack([s[n] for s in batch]) for n in names]
        opt.zero_grad(set_to_none=True)
        task.train()
        torch.manual_seed(t)  # the dropout masks of step t
        loss = task(*args)
        loss.backward()
        if saturate and t == 0:
            opt.step()  # creates state
            sched.step()
            for st in opt.state.values():
                if "exp_avg" in st:
                    # +-2^63 in every element (torch.sign of a BF16 randn is
                    # 0 in some: those elements would stay unsaturated).
                    sign = torch.where(torch.rand(st["exp_avg"].shape) < 0.5, -1.0, 1.0)
                    st["exp_avg"].copy_(sign * 2.0 ** 63)
                    st["exp_avg_sq"].fill_(2.0 ** 126)
            continue
        pre = state_tensors(task, opt)
        snap_model = copy.deepcopy(task.state_dict())
        snap_opt = copy.deepcopy(opt.state_dict())
        grads = [p.grad.clone() for p in params]
        named_grads = {n: p.grad.clone() for n, p in task.named_parameters()}
        opt.step()
        a = state_tensors(task, opt)
        task.load_state_dict(snap_model)
        opt.load_state_dict(snap_opt)
        for p in params:
            p.grad = torch.zeros_like(p)
        opt.step()
        b = state_tensors(task, opt)
        moved = sum(int((bits(a[k]) != bits(pre[k])).sum()) for k in a if k.startswith("param/"))
        total_p = sum(int(v.numel()) for k, v in a.items() if k.startswith("param/"))
        total_o = sum(int(v.numel()) for k, v in a.items() if k.startswith("optim/"))
        rows.append((differ(a, b, "param/"), differ(a, b, "optim/"), moved, total_p, total_o,
                     untraced_tensors(a, b, named_grads)))
        # continue from the real step
        task.load_state_dict(snap_model)
        opt.load_state_dict(snap_opt)
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()
        sched.step()
    return rows


def fails_check27(r):  # docs/PROTOCOL.md 21.5 (every rate here is > 0)
    return r[0] == 0 and r[1] == 0 and (r[2] > 0 or r[4] > 0)


def fails_params_only(r):  # the rule check 27 is not: the parameters must carry the gradient
    return r[0] == 0 and r[2] > 0


def report(label, rows):
    print(f"{label:46s} params {min(r[0] for r in rows):6d}..{max(r[0] for r in rows):6d} of {rows[0][3]:6d}  "
          f"optim {min(r[1] for r in rows):6d}..{max(r[1] for r in rows):6d} of {rows[0][4]:6d}  "
          f"trace >= {min(r[0] + r[1] for r in rows):6d}  "
          f"steps failing: check 27 {sum(map(fails_check27, rows)):3d}, params-only "
          f"{sum(map(fails_params_only, rows)):3d}, per-tensor any size {sum(len(r[5]) > 0 for r in rows):3d}, "
          f">= {MIN_TRACED} elements {sum(any(n >= MIN_TRACED for n in r[5]) for r in rows):3d} of {len(rows)} "
          f"(largest untraced {max((n for r in rows for n in r[5]), default=0)})",
          flush=True)


torch.set_num_threads(1)
cases = [("mlp", "sgd", torch.float32, 20, 64), ("mlp", "adam", torch.float32, 20, 64),
         ("mlp", "adamw", torch.float64, 20, 64), ("transformer", "adamw", torch.float32, 20, 64),
         ("transformer", "adam", torch.bfloat16, 20, 64), ("transformer", "sgd", torch.float64, 20, 64),
         ("cnn", "sgd", torch.float32, 20, 64), ("cnn", "sgd", torch.bfloat16, 20, 64),
         ("cnn", "adamw", torch.float32, 20, 64),
         # a whole cosine schedule, down to its smallest rates
         ("cnn", "sgd", torch.bfloat16, 300, 64), ("cnn", "sgd", torch.bfloat16, 300, 256),
         ("transformer", "adam", torch.bfloat16, 300, 64), ("cnn", "sgd", torch.float32, 300, 64)]
for m, o, d, n, k in cases:
    report(f"{m} {o} {str(d)[6:]} {n} steps {k} samples", probe(m, o, d, n, n_samples=k))
for m, o, d in [("mlp", "adam", torch.float32), ("transformer", "adamw", torch.float32),
                ("transformer", "adam", torch.bfloat16), ("cnn", "adamw", torch.bfloat16)]:
    report(f"SATURATED {m} {o} {str(d)[6:]}", probe(m, o, d, 20, saturate=True))
