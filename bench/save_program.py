#!/usr/bin/env python3
"""Cost of pot.torch.save_program on a model of a given size: time, peak
memory and file size, scripted and traced.

    python3 bench/save_program.py [--layers 24] [--width 2048] [--runs 3] [--json]

The model is `--layers` Linear(width, width) layers with a ReLU between
them (24 x 2048^2: 100.7M parameters, 403 MB in float32), defined in a
module file of its own (TorchScript compiles from source). Each run is a
fresh Python process that builds the model, then saves it once scripted
and once traced (save_program(..., example=batch)); it reports the seconds
of each save and the process's peak resident memory above what it held
before the save (getrusage's ru_maxrss; the traced save runs second, in a
process of its own). Medians of `--runs`. The program file holds every
parameter, zeroed, and save_program writes it twice (once as
torch.jit.save writes it, once again after dropping TorchScript's debug
records: docs/python.md "One digest per module"), so the time is about
twice a plain torch.jit.save's (docs/performance.md "Saving the
program"). Exit 0 when every run succeeded, 3 otherwise.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

MODEL = '''
import torch


class Layers(torch.nn.Module):
    def __init__(self, layers: int, width: int):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x.sum()
'''

RUN = textwrap.dedent('''
    import json, resource, sys, time
    import torch
    sys.path.insert(0, sys.argv[1])
    import pot.torch as pt
    from layers import Layers
    layers, width, how, path = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    torch.manual_seed(0)
    model = Layers(layers, width)
    model.train()
    example = {"x": torch.randn(2, width)} if how == "trace" else None
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    pt.save_program(model, path, example=example)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    params = sum(p.numel() for p in model.parameters())
    print(json.dumps({"seconds": seconds, "peak_mb": (peak - before) / 1024, "params": params,
                      "model_mb": params * 4 / 1e6}))
''')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "layers.py"), "w") as f:
            f.write(MODEL)
        for how in ("script", "trace"):
            runs = []
            for _ in range(a.runs):
                path = os.path.join(d, f"{how}.pt")
                p = subprocess.run([sys.executable, "-c", RUN, d, str(a.layers), str(a.width), how, path],
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    print(f"save_program ({how}) failed: {p.stderr.strip()[-2000:]}", file=sys.stderr)
                    return 3
                r = json.loads(p.stdout.strip().splitlines()[-1])
                r["file_mb"] = os.path.getsize(path) / 1e6
                runs.append(r)
            results[how] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    if a.json:
        print(json.dumps(results))
        return 0
    for how, r in results.items():
        print(f"{how:6s} {r['params'] / 1e6:.1f}M parameters ({r['model_mb']:.0f} MB): {r['seconds']:.2f} s, "
              f"peak +{r['peak_mb']:.0f} MB ({r['peak_mb'] / r['model_mb']:.1f}x the model), "
              f"file {r['file_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
