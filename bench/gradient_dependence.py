#!/usr/bin/env python3
"""Does S_t depend on the step's gradient? A measurement for the planned
`gradient_ignored` check (docs/security.md section 6, saturated optimizer
state after a forged step 1).

For the models of the replay matrix (tests/replay/train.py) trained honestly,
and for Adam whose state was saturated after step 1 (exp_avg = +-2^63,
exp_avg_sq = 2^126: the gradient's share rounds away), each step's optimizer
update is applied twice from the same state, once with the real gradient and
once with a zero gradient, and the elements of the parameters and of the
optimizer state that differ are counted. Prints, per configuration, the
smallest count over 20 steps (honest) or the largest (saturated).

Usage: /usr/bin/python3 bench/gradient_dependence.py   (Debian's torch; ~2 min on 1 thread)
"""
import copy
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "replay"))
import train as T  # noqa: E402


def state_tensors(model, opt):
    out = {f"param/{n}": p.detach().clone() for n, p in model.named_parameters()}
    for i, (p, st) in enumerate(opt.state.items()):
        for k, v in st.items():
            if torch.is_tensor(v) and v.dim() > 0:
                out[f"optim/{i}/{k}"] = v.clone()
    return out

def differ(a, b, prefix):
    return sum(int((a[k] != b[k]).sum()) for k in a if k.startswith(prefix))

def probe(model_name, optim, dtype, steps=20, saturate=False, lr=1e-3):
    torch.manual_seed(1)
    task = T.build_task(model_name).to(dtype)
    samples = T.make_samples(model_name, 64, 7, dtype)
    params = list(task.parameters())
    opt = {"sgd": lambda: torch.optim.SGD(params, lr=lr, momentum=0.9),
           "adam": lambda: torch.optim.Adam(params, lr=lr),
           "adamw": lambda: torch.optim.AdamW(params, lr=lr)}[optim]()
    names = list(samples[0].keys())
    rows = []
    for t in range(steps):
        batch = samples[(8 * t) % 64:(8 * t) % 64 + 8]
        args = [torch.stack([s[n] for s in batch]) for n in names]
        opt.zero_grad(set_to_none=True)
        task.train()
        loss = task(*args)
        loss.backward()
        if saturate and t == 0:
            opt.step()  # creates state
            for st in opt.state.values():
                if "exp_avg" in st:
                    st["exp_avg"].copy_(torch.sign(torch.randn_like(st["exp_avg"])) * 2.0 ** 63)
                    st["exp_avg_sq"].fill_(2.0 ** 126)
            continue
        snap_model = copy.deepcopy(task.state_dict())
        snap_opt = copy.deepcopy(opt.state_dict())
        grads = [p.grad.clone() for p in params]
        opt.step()
        a = state_tensors(task, opt)
        task.load_state_dict(snap_model)
        opt.load_state_dict(snap_opt)
        for p in params:
            p.grad = torch.zeros_like(p)
        opt.step()
        b = state_tensors(task, opt)
        total_p = sum(int(v.numel()) for k, v in a.items() if k.startswith("param/"))
        rows.append((differ(a, b, "param/"), differ(a, b, "optim/"), total_p))
        # continue from the real step
        task.load_state_dict(snap_model)
        opt.load_state_dict(snap_opt)
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()
    return rows

torch.set_num_threads(1)
cases = [("mlp", "sgd", torch.float32), ("mlp", "adam", torch.float32), ("mlp", "adamw", torch.float64),
         ("transformer", "adamw", torch.float32), ("transformer", "adam", torch.bfloat16),
         ("transformer", "sgd", torch.float64), ("cnn", "sgd", torch.float32), ("cnn", "sgd", torch.bfloat16),
         ("cnn", "adamw", torch.float32)]
for m, o, d in cases:
    rows = probe(m, o, d)
    print(f"{m:12s} {o:6s} {str(d):15s} min differing params {min(r[0] for r in rows):7d}  "
          f"min differing optim {min(r[1] for r in rows):7d}  of {rows[0][2]} params, {len(rows)} steps", flush=True)
for m, o, d in [("mlp", "adam", torch.float32), ("transformer", "adamw", torch.float32), ("transformer", "adam", torch.bfloat16)]:
    rows = probe(m, o, d, saturate=True)
    print(f"SATURATED {m:12s} {o:6s} {str(d):15s} max differing params {max(r[0] for r in rows):7d}  "
          f"max differing optim {max(r[1] for r in rows):7d}", flush=True)
