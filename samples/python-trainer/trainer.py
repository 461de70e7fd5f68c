#!/usr/bin/env python3
"""A PyTorch training loop recorded for Proof of Training with the three
lines of pot.torch (docs/python.md): a small GPT language model on a
synthetic corpus, dropout on, a shuffled DataLoader, AdamW, a cosine
learning-rate schedule, the per_step seed policy.

    /usr/bin/python3 samples/python-trainer/trainer.py --out /tmp/run --steps 50

writes the run directory: program.pt, data/ (one safetensors file per
sample), ckpt/ (the recorder's checkpoint directory: commitment, log,
every k-th state) and run.json (run id, roots, losses, timings). The demo
(samples/demo) imports this module to train its miners.
"""
import argparse
import json
import math
import os
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import pot
import pot.torch as pt

VOCAB, CONTEXT, WIDTH, LAYERS, HEADS = 48, 24, 48, 2, 2


class Block(nn.Module):
    def __init__(self, d, heads, p):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(p)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = self.drop(att.masked_fill(~mask, float("-inf")).softmax(dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.mlp(self.ln2(x)))


class LanguageModel(nn.Module):
    """forward(tokens) -> the next-token cross-entropy: the task's loss."""

    def __init__(self, p=0.1):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, WIDTH), nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.ModuleList([Block(WIDTH, HEADS, p) for _ in range(LAYERS)])
        self.ln = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.head.weight = self.tok.weight  # tied embeddings
        self.drop = nn.Dropout(p)
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)

    def forward(self, tokens):
        x, y = tokens[:, :-1], tokens[:, 1:]
        h = self.drop(self.tok(x) + self.pos(torch.arange(x.shape[1])))
        for block in self.blocks:
            h = block(h)
        logits = self.head(self.ln(h))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def corpus(n, seed):
    """n sequences of CONTEXT + 1 tokens with learnable structure: a few
    repeating motifs with noise."""
    g = torch.Generator().manual_seed(seed)
    motifs = torch.randint(0, VOCAB, (6, 5), generator=g)
    out = []
    for _ in range(n):
        m = motifs[torch.randint(0, len(motifs), (1,), generator=g).item()]
        seq = m.repeat(CONTEXT // len(m) + 2)[: CONTEXT + 1].clone()
        noise = torch.rand(CONTEXT + 1, generator=g) < 0.1
        seq[noise] = torch.randint(0, VOCAB, (int(noise.sum()),), generator=g)
        out.append(seq)
    return out


class Corpus(torch.utils.data.Dataset):
    def __init__(self, seqs):
        self.seqs = seqs

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        return i, self.seqs[i]


def setup(out, steps=200, batch=16, data_seed=7, train_data_seed=None, init_seed=1, lr=3e-3, samples=256,
          base_seed=20261130, program=None, arithmetic="native"):
    """The model, optimizer, LR scheduler, loader, spec and schedule of a run
    in `out`, with its program file (saved unless `program` is given) and
    the committed data written to out/data. A task owner and every miner of
    the task build the same ones."""
    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    committed = corpus(samples, data_seed)
    trained_on = committed if train_data_seed is None else corpus(samples, train_data_seed)
    torch.manual_seed(init_seed)
    model = LanguageModel()
    if program is None:
        program = os.path.join(out, "program.pt")
        pt.save_program(model, program)
    pt.write_dataset(({"tokens": s} for s in committed), os.path.join(out, "data"))
    loader = torch.utils.data.DataLoader(Corpus(trained_on), batch_size=batch, shuffle=True, drop_last=True,
                                         generator=torch.Generator().manual_seed(data_seed))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=batch, dropout=0.1, seed=base_seed,
                        scheduler=sched, arithmetic=arithmetic)
    schedule = pt.plan_schedule(loader, steps)
    return {"model": model, "optimizer": opt, "scheduler": sched, "loader": loader, "spec": spec,
            "schedule": schedule, "program": program, "data": os.path.join(out, "data")}


def make_task(out, owner=b"task owner", rounds=8, end_height=10**6, **setup_args):
    """The task its owner posts for runs of this trainer (pot.torch.make_task
    over setup()'s S_0, data, schedule and spec; runs register and seal by
    block `end_height`). Returns (task, program)."""
    s = setup(out, **setup_args)
    task = pt.make_task(s["model"], s["optimizer"], s["spec"], dataset_dir=s["data"], schedule=s["schedule"],
                        end_height=end_height, owner=owner, challenge_rounds=rounds, program=s["program"])
    return task, s["program"]


def train(out, steps=200, batch=16, every=20, data_seed=7, train_data_seed=None, init_seed=1, lr=3e-3,
          samples=256, base_seed=20261130, post_every=50, on_root=None, substitute=None, frozen=False,
          self_check=True, identity=b"miner", on_start=None, after_step=None, progress=None, task=None, owner=b"task owner",
          program=None, arithmetic="native"):
    """Trains and records a run into `out`. Returns a dict of what a miner
    publishes and keeps.

    The run answers to `task` (a pot.Task, with `program` the task's model
    program file); without one, the task is built here as its owner would
    (make_task: the same initial model, data, schedule and spec) and
    returned as "task". The recorder refuses a run the task does not admit.

    Cheating options (for the demo): train_data_seed trains on another corpus
    than the committed one; substitute(t, model, optimizer) -> loss or None
    replaces step t with a state taken from elsewhere (the recorded state is
    then whatever substitute left in the model and optimizer); frozen records
    S_0 again and again with a constant loss, training nothing. A cheater
    passes self_check=False: the recorder's self-check of step 1 would stop
    it (it replays step 1 as a verifier does).
    on_root(size, root, proof) is called every post_every steps (the miner
    posting its checkpoint root with a consistency proof); on_start(recorder)
    once the commitment exists, before step 1 (the miner registering it);
    after_step(t, model, optimizer, loss) after each step."""
    s = setup(out, steps=steps, batch=batch, data_seed=data_seed, train_data_seed=train_data_seed,
              init_seed=init_seed, lr=lr, samples=samples, base_seed=base_seed, program=program,
              arithmetic=arithmetic)
    model, opt, sched, loader, program = s["model"], s["optimizer"], s["scheduler"], s["loader"], s["program"]
    if task is None:
        task = pt.make_task(model, opt, s["spec"], dataset_dir=s["data"], schedule=s["schedule"], owner=owner,
                            end_height=10**6, challenge_rounds=min(8, steps), program=program)
    rec = pt.Recorder(model, opt, task, program, os.path.join(out, "ckpt"), dataset_dir=s["data"],
                      schedule=s["schedule"], checkpoint_every=every, miner_identity=identity,
                      self_check=self_check)  # line 1
    if on_start is not None:
        on_start(rec)
    losses, train_seconds, t, posted = [], 0.0, 0, 0
    while t < steps:
        for indices, tokens in loader:
            t += 1
            if t > steps:
                break
            start = time.perf_counter()
            rec.begin_step(indices)                                                        # line 2
            loss = None
            if substitute is not None:
                loss = substitute(t, model, opt)
            if frozen:
                loss = 2.5
            if loss is not None:
                # A cheater still draws the step's dropout masks (a forward
                # pass without a backward, thrown away): the recorder, like
                # every verifier, refuses a step that declares dropout and
                # draws nothing. What it records is not what it computed.
                with torch.no_grad():
                    model(tokens)
            else:
                loss = model(tokens)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            with warnings.catch_warnings():
                # A cheater that skips optimizer.step() still steps the schedule.
                warnings.simplefilter("ignore", UserWarning)
                sched.step()
            rec.end_step(loss)                                                             # line 3
            train_seconds += time.perf_counter() - start
            losses.append(pt.step_loss(loss))
            if after_step is not None:
                after_step(t, model, opt, losses[-1])
            if on_root is not None and (t % post_every == 0 or t == steps):
                on_root(t, rec.root(t), rec.consistency_proof(posted, t) if posted else b"")
                posted = t
            if progress is not None:
                progress(t, steps)
    root = rec.finish()
    info = {"run_id": rec.run_id.hex(), "root": root.hex(), "steps": steps, "losses": losses,
            "train_seconds": train_seconds, "checkpoint_every": every}
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump(info, f, indent=1)
    return {"recorder": rec, "spec": task.spec, "task": task, "program": program, "model": model, "optimizer": opt,
            **info}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--every", type=int, default=20, help="checkpoint interval")
    ap.add_argument("--arithmetic", default="native", help="native or pot-repro/1 (docs/PROTOCOL.md 14.6)")
    ap.add_argument("--export", help="also write what `pot verify` needs for the verified step into this directory")
    a = ap.parse_args()
    r = train(a.out, steps=a.steps, every=a.every, arithmetic=a.arithmetic,
              progress=lambda t, n: print(f"\rstep {t}/{n}", end="", file=sys.stderr, flush=True))
    print(file=sys.stderr)
    print(f"run {r['run_id'][:16]}...: {a.steps} steps in {r['train_seconds']:.1f} s, "
          f"loss {r['losses'][0]:.3f} -> {r['losses'][-1]:.3f}, log root {r['root'][:16]}...")
    # Serve and verify one step, as a verifier would.
    rec, t = r["recorder"], max(1, a.steps // 2 + 1)
    manifest = rec.serve(t)
    v = pot.verify_step(rec.commitment, r["spec"], r["program"], t, a.steps, bytes.fromhex(r["root"]), manifest,
                        rec.state_path(t - 1))
    print(f"step {t} replayed: {v.replayed_state_digest.hex()[:16]}... == committed: "
          f"{v.replayed_state_digest == v.committed_state_digest}")
    if a.export:
        # A verifier's inputs for `pot verify` (docs/cli.md): the opening,
        # the commitment, the spec, the posted root and the served S_{t-1};
        # `args` holds the options that are not files.
        os.makedirs(a.export, exist_ok=True)
        for name, data in (("manifest.bin", manifest), ("commitment.bin", rec.commitment.encode())):
            with open(os.path.join(a.export, name), "wb") as f:
                f.write(data)
        with open(os.path.join(a.export, "spec.json"), "w") as f:
            f.write(r["spec"].to_json())
        with open(os.path.join(a.export, "args"), "w") as f:
            f.write(f"--step {t} --size {a.steps} --root {r['root']} --program {r['program']} "
                    f"--pre-state {rec.state_path(t - 1)}\n")
    rec.close()


if __name__ == "__main__":
    main()
