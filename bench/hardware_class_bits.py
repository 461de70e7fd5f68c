#!/usr/bin/env python3
"""Which parts of the hardware change the bits of a training step? The
measurement behind the hardware class (docs/PROTOCOL.md 14.4).

Trains each model of the replay matrix (tests/replay/train.py's task
builders and hyper-parameters; F32 and BF16; 1 intra-op thread) for a few
steps in a child process per environment: as this machine computes, with
ATen's baseline kernels (ATEN_CPU_CAPABILITY=default), with oneDNN held to
SSE4.1 (ONEDNN_MAX_CPU_ISA=SSE41), with both, and held to AVX2. Prints each child's
hardware class and, per configuration, whether the final state's bits
differ from the first environment's and by how much the norm of the whole
update (S_n - S_0, float64) differs.

Usage: PYTHON bench/hardware_class_bits.py [--steps N]   (~2 min; PYTHON: Debian's
/usr/bin/python3, or a torch 2.x venv's, scripts/torch-env)
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENVS = [{}, {"ATEN_CPU_CAPABILITY": "default"}, {"ONEDNN_MAX_CPU_ISA": "SSE41"},
        {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41"},
        # On an AVX-512 machine: the AVX2 kernels a task of class
        # aten:avx2/onednn:avx2 asks for (the same as the first row elsewhere).
        {"ATEN_CPU_CAPABILITY": "avx2"}, {"ONEDNN_MAX_CPU_ISA": "AVX2"},
        {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}]
CONFIGS = [(m, o, d) for m in ("mlp", "transformer", "cnn") for (o, d) in (("adamw", "f32"), ("sgd", "bf16"))]


def child(steps):
    import hashlib

    import torch
    sys.path.insert(0, os.path.join(ROOT, "tests", "replay"))
    import potstate
    import train as T
    torch.set_num_threads(1)
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16}
    out = {"class": potstate.hardware_class(), "runs": {}}
    for model_name, optim, dt in CONFIGS:
        torch.manual_seed(1)
        task = T.build_task(model_name).to(dtypes[dt])
        samples = T.make_samples(model_name, 64, 7, dtypes[dt])
        params = list(task.parameters())
        s0 = [p.detach().double().clone() for p in params]
        if optim == "sgd":
            opt = torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
        else:
            opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
        names = list(samples[0].keys())
        for t in range(steps):
            batch = [samples[(8 * t + i) % 64] for i in range(8)]
            opt.zero_grad(set_to_none=True)
            task.train()
            torch.manual_seed(t)
            task(*[torch.stack([s[n] for s in batch]) for n in names]).backward()
            opt.step()
        h = hashlib.sha256()
        for p in params:
            h.update(p.detach().contiguous().view(torch.uint8).numpy().tobytes())
        norm = sum(float(((p.detach().double() - a) ** 2).sum()) for p, a in zip(params, s0)) ** 0.5
        out["runs"][f"{model_name}-{optim}-{dt}"] = {"digest": h.hexdigest(), "norm": norm}
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        return child(a.steps)
    results = []
    for env in ENVS:
        p = subprocess.run([sys.executable, __file__, "--child", "--steps", str(a.steps)], check=True,
                           capture_output=True, text=True, env={**os.environ, **env})
        results.append(json.loads(p.stdout))
    base = results[0]
    print(f"{a.steps} steps per configuration, 1 thread; bits and update norm compared with the first row's class")
    for env, r in zip(ENVS, results):
        label = " ".join(f"{k}={v}" for k, v in env.items()) or "(as the machine computes)"
        print(f"\n{label}: {r['class']}")
        for name, run in r["runs"].items():
            b = base["runs"][name]
            rel = abs(run["norm"] - b["norm"]) / b["norm"]
            print(f"  {name:22s} bits {'differ' if run['digest'] != b['digest'] else 'same  '}  "
                  f"update norm relative difference {rel:.2e}")


if __name__ == "__main__":
    main()
