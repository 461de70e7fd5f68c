#!/usr/bin/env python3
"""Replay, recorder and re-derivation costs on the >= 5M-parameter transformer
(docs/performance.md, "Replay"). Side by side on this machine:

  1. the eager PyTorch training step (tests/replay/train.py, transformer5m,
     AdamW, dropout, 1 thread as the spec pins it);
  2. the C++ replay of each step through the C API (pot_check_run): loading
     S_{t-1} from its file, the step, digesting S_t;
  3. the recorder's end_step through the C API (pot_record_run): digesting
     weights + optimizer state, appending the leaf, a checkpoint every k;
  4. re-deriving S_{c+j} from checkpoint c (pot checkpoints state), j = 1..k-1.

Usage: /usr/bin/python3 bench/replay_bench.py --build BUILD_DIR [--steps N] [--every K] [--work DIR]
(BUILD_DIR built with POT_WITH_TORCH=ON and tests). Prints a table and a JSON line.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if p.returncode not in (0, 1):
        sys.exit(f"{' '.join(map(str, cmd))} failed ({p.returncode}): {p.stdout[-500:]} {p.stderr[-500:]}")
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="build directory (POT_WITH_TORCH=ON, tests built)")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--every", type=int, default=4, help="checkpoint interval k")
    ap.add_argument("--work", default=None, help="scratch directory (default: a temporary one)")
    a = ap.parse_args()
    check_run = os.path.join(a.build, "tests", "pot_check_run")
    record_run = os.path.join(a.build, "tests", "pot_record_run")
    pot = os.path.join(a.build, "src", "cli", "pot")
    work = a.work or tempfile.mkdtemp(prefix="pot-replay-bench-")
    os.makedirs(work, exist_ok=True)
    rundir, ck = os.path.join(work, "run"), os.path.join(work, "ck")
    shutil.rmtree(ck, ignore_errors=True)
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores; figures are only comparable on an idle machine)")

    run([sys.executable, os.path.join(ROOT, "tests", "replay", "train.py"), "--out", rundir, "--model", "transformer5m",
         "--optim", "adamw", "--steps", a.steps, "--threads", 1])
    meta = json.load(open(os.path.join(rundir, "run.json")))
    train_s = meta["step_seconds"]

    t0 = time.perf_counter()
    p = run([check_run, rundir])
    check_wall = time.perf_counter() - t0
    rows = [json.loads(l) for l in p.stdout.splitlines() if '"step"' in l]
    assert all(r["match"] for r in rows), "the replay did not reproduce the run"
    replay_s = [r["replay_seconds"] for r in rows]

    p = run([record_run, rundir, ck, "--every", a.every])
    info = json.loads(p.stdout.strip().splitlines()[-1])
    end_s = info["end_step_seconds"]

    derive = []
    c = a.every  # checkpoint c = k; derive S_{c+j}
    for j in range(1, a.every):
        if c + j > a.steps:
            break
        shutil.rmtree(os.path.join(ck, "derived"), ignore_errors=True)
        t0 = time.perf_counter()
        p = run([pot, "checkpoints", "state", ck, "--step", c + j, "--dataset", os.path.join(rundir, "samples"),
                 "--json"])
        derive.append((j, time.perf_counter() - t0, json.loads(p.stdout)["replayed_steps"]))

    med_train, med_replay = statistics.median(train_s), statistics.median(replay_s)
    med_end, mean_end = statistics.median(end_s), statistics.mean(end_s)
    print(f"model: transformer5m, {meta['params']:,} parameters, AdamW, batch {meta['batch']}, 1 thread, "
          f"{a.steps} steps")
    print(f"{'':38s} {'median':>10s} {'min':>10s} {'max':>10s}")
    for name, xs in (("python training step (s)", train_s), ("C++ replay incl. state load (s)", replay_s),
                     ("recorder end_step (s)", end_s)):
        print(f"{name:38s} {statistics.median(xs):10.3f} {min(xs):10.3f} {max(xs):10.3f}")
    print(f"replay / training step: {med_replay / med_train:.2f}x (target <= 2x); "
          f"pot_check_run process incl. program load: {check_wall:.2f} s for {a.steps} steps")
    print(f"recorder overhead: median {100 * med_end / med_train:.1f}%, mean {100 * mean_end / med_train:.1f}% "
          f"(checkpoint every {a.every}) of the training step (target <= 10%)")
    for j, secs, n in derive:
        print(f"re-derive S_{c + j} from checkpoint {c}: {n} steps replayed in {secs:.2f} s "
              f"= {secs / med_replay:.2f} replay steps (process start and program load included)")
    print(json.dumps({"params": meta["params"], "train_median_s": med_train, "replay_median_s": med_replay,
                      "replay_ratio": med_replay / med_train, "end_step_median_s": med_end,
                      "end_step_mean_s": mean_end, "derive": derive}))


if __name__ == "__main__":
    main()
