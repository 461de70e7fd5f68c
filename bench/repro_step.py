#!/usr/bin/env python3
"""Step time under the reproducible arithmetic pot-repro/1 against ATen's
own kernels (docs/performance.md, "The reproducible arithmetic").

    python3 bench/repro_step.py [--steps 10] [--rounds 3] [--threads 1 2] [--models mlp transformer cnn] [--json]

For each model of the determinism matrix (tests/replay/train.py: the MLP,
the GPT and the CNN, AdamW, clip_grad_norm_ 1.0, dropout 0.1 from per_step
seeds, F32), each thread count and each arithmetic, a run is recorded with
pot.torch.Recorder and the training step itself (forward, backward,
clipping, optimizer update: what runs between begin_step and end_step,
whose costs are the same under both arithmetics) is timed. Each
configuration runs --rounds times, native and pot-repro/1 in turn (the
order swapped each round), so that a machine whose speed drifts slows both
alike: a time is the median over every round's steps after the first
two, the ratio the median of the rounds' ratios (min and max beside it:
a wide spread says the machine was noisy). Needs `pot` importable
(bindings/python installed, as bindings/python/run-tests.sh does).
Prints a table and, with --json, one JSON line.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "replay"))
import train as T  # noqa: E402

import pot.torch as pt  # noqa: E402

BATCH = 16


def step_times(model_name, threads, arithmetic, steps, work):
    torch.manual_seed(1)
    torch.set_num_threads(threads)
    model = T.build_task(model_name)
    samples = T.make_samples(model_name, BATCH * 4, 7, torch.float32)
    data_dir = os.path.join(work, "data")
    pt.write_dataset(samples, data_dir)
    program = os.path.join(work, "program.pt")
    pt.save_program(model, program)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    extra = {"intra_op_threads": threads} if arithmetic == "native" else {}
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=BATCH, seed=7, dropout=T.DROPOUT,
                        grad_clip_max_norm=1.0, arithmetic=arithmetic, **extra)
    schedule = [[[(BATCH * t + i) % len(samples) for i in range(BATCH)]] for t in range(steps)]
    task = pt.make_task(model, opt, spec, dataset_dir=data_dir, schedule=schedule, end_height=10 ** 6,
                        owner=b"owner", challenge_rounds=2, program=program)
    rec = pt.Recorder(model, opt, task, program, os.path.join(work, "ckpt"), dataset_dir=data_dir,
                      schedule=schedule, checkpoint_every=steps, miner_identity=b"miner", self_check=False)
    names = rec.input_names
    times = []
    for t in range(1, steps + 1):
        batch = [samples[i] for i in schedule[t - 1][0]]
        inputs = [torch.stack([s[n] for s in batch]) for n in names]
        rec.begin_step(schedule[t - 1][0])
        start = time.perf_counter()
        loss = model(*inputs)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
        rec.end_step(loss)
    rec.close()
    return times[2:] if len(times) > 2 else times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", default=["mlp", "transformer", "cnn"])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs; median step (forward, backward, clip, AdamW), "
          f"batch {BATCH}, {a.rounds} rounds of {a.steps} steps")
    print(f"{'model':12s} {'threads':>7s} {'native ms':>10s} {'pot-repro ms':>13s} {'ratio':>6s} {'min':>5s} {'max':>5s}")
    for m in a.models:
        for n in a.threads:
            times = {"native": [], "pot-repro/1": []}
            ratios = []
            for r in range(a.rounds):
                medians = {}
                order = ("native", "pot-repro/1") if r % 2 == 0 else ("pot-repro/1", "native")
                for arithmetic in order:
                    with tempfile.TemporaryDirectory() as work:
                        steps = step_times(m, n, arithmetic, a.steps, work)
                    times[arithmetic] += steps
                    medians[arithmetic] = statistics.median(steps)
                ratios.append(medians["pot-repro/1"] / medians["native"])
            native, repro = statistics.median(times["native"]), statistics.median(times["pot-repro/1"])
            ratio = statistics.median(ratios)
            rows.append({"model": m, "threads": n, "native_s": native, "repro_s": repro, "ratio": ratio,
                         "ratio_min": min(ratios), "ratio_max": max(ratios)})
            print(f"{m:12s} {n:7d} {native * 1e3:10.2f} {repro * 1e3:13.2f} {ratio:6.2f} {min(ratios):5.2f} "
                  f"{max(ratios):5.2f}")
    if a.json:
        print(json.dumps({"torch": torch.__version__, "rows": rows}))


if __name__ == "__main__":
    main()
