#!/usr/bin/env python3
"""Whether pot-repro/1 gives one trajectory on both torch lines
(docs/determinism.md, "The two torch lines under pot-repro/1").

    PY_A tests/replay/repro_lines.py --work DIR --out a.json     # writes DIR/init.pt
    PY_B tests/replay/repro_lines.py --work DIR --out b.json     # reads it
    python3 tests/replay/repro_lines.py --compare a.json b.json

Each run records, with pot.torch.Recorder under pot-repro/1, the same
steps of each model of the determinism matrix (tests/replay/train.py: MLP,
GPT, CNN) from the same S_0 and samples (made by the first run with its
torch and saved to DIR/init.pt, loaded by the second: the two lines'
initialisers need not agree), with AdamW, SGD with momentum, and Adam,
clipping by norm 1.0, dropout 0.1 drawn from the single_seed generator (per_step
seeds name the run, and a run id covers the spec's framework_version: the
lines would draw other masks); and writes the SHA-256
of every tensor of every S_t. --compare names, per model and optimizer, the
first step whose state differs and the tensors that differ. A replay across
lines is still refused by the spec's framework_version (PROTOCOL 14.2):
this measures whether it could hold.
"""
import argparse
import hashlib
import json
import os
import sys
import tempfile

MODELS = ("mlp", "transformer", "cnn")
OPTIMIZERS = ("adamw", "sgd", "adam")
STEPS = 4
BATCH = 8


def run(work, out):
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import train as T
    import pot.torch as pt
    from pot.safetensors import Safetensors

    init_path = os.path.join(work, "init.pt")
    if os.path.exists(init_path):
        init = torch.load(init_path)
    else:
        init = {}
        for m in MODELS:
            torch.manual_seed(1)
            init[m] = {"model": T.build_task(m).state_dict(),
                       "samples": T.make_samples(m, BATCH * STEPS, 7, torch.float32)}
        os.makedirs(work, exist_ok=True)
        torch.save(init, init_path)
    torch.set_num_threads(1)
    result = {"torch": torch.__version__, "runs": {}}
    for m in MODELS:
        for kind in OPTIMIZERS:
            with tempfile.TemporaryDirectory() as tmp:
                model = T.build_task(m)
                model.load_state_dict(init[m]["model"])
                samples = init[m]["samples"]
                data = os.path.join(tmp, "data")
                pt.write_dataset(samples, data)
                program = os.path.join(tmp, "program.pt")
                pt.save_program(model, program)
                if kind == "sgd":
                    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
                else:
                    cls = torch.optim.AdamW if kind == "adamw" else torch.optim.Adam
                    opt = cls(model.parameters(), lr=1e-3, weight_decay=0.01)
                # single_seed: the dropout draws follow the generator S_0 holds,
                # the same on both lines (per_step seeds name the run, whose id
                # covers the spec's framework_version: other masks per line).
                spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=BATCH, seed=7,
                                    seed_policy="single_seed", dropout=T.DROPOUT, grad_clip_max_norm=1.0,
                                    arithmetic="pot-repro/1")
                torch.manual_seed(7)
                schedule = [[[BATCH * t + i for i in range(BATCH)]] for t in range(STEPS)]
                task = pt.make_task(model, opt, spec, dataset_dir=data, schedule=schedule, end_height=10 ** 6,
                                    owner=b"owner", challenge_rounds=2, program=program)
                rec = pt.Recorder(model, opt, task, program, os.path.join(tmp, "ckpt"), dataset_dir=data,
                                  schedule=schedule, checkpoint_every=1, miner_identity=b"miner")
                states = []
                for t in range(1, STEPS + 1):
                    rec.begin_step(schedule[t - 1][0])
                    batch = [samples[i] for i in schedule[t - 1][0]]
                    loss = model(*[torch.stack([s[n] for s in batch]) for n in rec.input_names])
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                    rec.end_step(loss)
                    with Safetensors(rec.state_path(t)) as f:
                        states.append({n: hashlib.sha256(f.tensor_data(n)).hexdigest() for n in f.names})
                rec.close()
                result["runs"][f"{m}/{kind}"] = states
    with open(out, "w") as f:
        json.dump(result, f)


def compare(a_path, b_path):
    a, b = (json.load(open(p)) for p in (a_path, b_path))
    print(f"torch {a['torch']} against torch {b['torch']}, {STEPS} steps each")
    same = 0
    for name, sa in a["runs"].items():
        sb = b["runs"][name]
        first = next((t for t, (x, y) in enumerate(zip(sa, sb), start=1) if x != y), None)
        if first is None:
            same += 1
            print(f"  {name:18s} every state equal")
            continue
        x, y = sa[first - 1], sb[first - 1]
        differ = sorted(n for n in x if x[n] != y.get(n)) + sorted(n for n in y if n not in x)
        print(f"  {name:18s} S_{first} differs first: {len(differ)} tensors ({', '.join(differ[:5])}"
              f"{'...' if len(differ) > 5 else ''})")
    print(f"{same} of {len(a['runs'])} runs give one trajectory on both lines")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work")
    ap.add_argument("--out")
    ap.add_argument("--compare", nargs=2)
    a = ap.parse_args()
    if a.compare:
        return compare(*a.compare)
    if not (a.work and a.out):
        ap.error("--work and --out, or --compare A B")
    run(a.work, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
