#!/usr/bin/env python3
"""The pot demo: Proof of Training end to end, on this machine.

0. A task owner posts the task to the reference ledger: the model program,
   the data set, S_0, the schedule and the spec (dropout, per-step seeds,
   AdamW), 200 steps, 8 bitwise challenges per run.
1. An honest miner trains the task's small GPT language model on its
   synthetic corpus for 200 steps with PyTorch through pot.torch.Recorder
   (a shuffled schedule, cosine LR), posting checkpoint roots with
   consistency proofs to the reference ledger as it goes.
2. The ledger draws each run's challenges, once, from the chain's randomness
   of the block after the run is sealed (rounds and mode are the task's;
   nobody chooses the steps); the miner serves openings from its checkpoint directory
   (re-deriving pre-states from the nearest stored checkpoint).
3. Three verifiers -- C++ (the pot CLI), Go (samples/go-verifier) and Python
   (pot.verify_step, on 2 threads instead of the spec's 1, through the
   norm-bucket path) -- verify the openings by replaying the steps, commit and
   reveal witnesses; the ledger's verdicts are PASS.
4. A miner that substitutes a pre-trained model's states for half of its
   trajectory, and one that trains on other data than it committed to, are
   caught with the failing check named; the loss-curve checks flag a run
   whose loss is frozen.
5. A summary, and a self-contained HTML report (`pot report`).

Usage: python samples/demo/demo.py --pot PATH/pot --go-verifier PATH [--out DIR]
(scripts/demo builds everything and runs it).
"""
import argparse
import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import torch

import pot
import pot.torch as pt

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python-trainer"))
import trainer  # noqa: E402

STEPS = 200
OWNER = b"task owner"
ROUNDS = 8  # challenged steps per run: the task's challenge policy
VERIFIERS = [("C++ (pot CLI)", "C++", "616c696365"), ("Go (go-verifier)", "Go", "626f62"),
             ("Python (pot.verify_step, 2 threads)", "Python", "6361726f6c")]
STAKES = {"C++": 40, "Go": 35, "Python": 25}  # registered stakes: a committee's majority decides
# The bonds (docs/ledger.md 2.18). A run's reward, in the chain's units;
# the miner bond is what `pot security` gives for it: the least bond that
# makes forging even one of the 200 steps worthless in expectation, with
# ROUNDS challenges per run (docs/PROTOCOL.md 12.2).
REWARD = 1000
MINER_BOND = pot.security_bond(REWARD, pot.detection_probability(STEPS, 1, ROUNDS))
TASK_BOND = DISPUTE_BOND = 100


def say(msg=""):
    print(msg, flush=True)


def bar(label):
    """A progress bar: redrawn in place on a terminal, a line per quarter
    otherwise (logs)."""
    tty = sys.stdout.isatty()

    def show(t, n):
        if not tty and t != n and t % max(1, n // 4):
            return
        filled = int(30 * t / n)
        line = f"  {label} [{'#' * filled}{'.' * (30 - filled)}] {t}/{n}"
        sys.stdout.write(("\r" + line + ("\n" if t == n else "")) if tty else line + "\n")
        sys.stdout.flush()
    return show


def tagged(tag, body):
    return hashlib.sha256(bytes([len(tag)]) + tag.encode() + body).digest()


class Chain:
    """The reference ledger and a block height that the demo advances. Each
    block begins with the runtime posting its randomness (here a SHA-256 of
    the height, standing in for a drand round)."""

    def __init__(self):
        self.ledger = pot.Ledger(draw_delay=1, opening_window=5, commit_window=5, reveal_window=5,
                                 max_committee_size=len(VERIFIERS), min_stake=10, max_rounds=ROUNDS,
                                 max_attempts=1, dispute_window=1, dispute_arity=2, task_bond=TASK_BOND,
                                 miner_bond=MINER_BOND, dispute_bond=DISPUTE_BOND, max_task_blocks=10**6,
                                 max_open_tasks=4, miner_grace=5)
        self.height = 100
        self.post_randomness()

    def call(self, name, **args):
        if name not in ("run_info", "challenge_info", "account_info", "ledger_info"):
            args["now"] = self.height
        return self.ledger.apply({"call": name, **args})

    def post_randomness(self):
        self.call("post_randomness", randomness=hashlib.sha256(b"drand round %d" % self.height).hexdigest())

    def tick(self):
        self.height += 1
        self.post_randomness()

    def wait_until(self, height):
        while self.height < height:
            self.tick()


def run_cmd(cmd):
    start = time.perf_counter()
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    secs = time.perf_counter() - start
    out = p.stdout.strip()
    try:
        j = json.loads(out[out.index("{"):]) if "{" in out else {}
    except ValueError:
        j = {}
    return p.returncode, j, p.stderr.strip(), secs


class Miner:
    """A trained run: its recorder, files and ledger identity."""

    def __init__(self, name, out, chain, identity, task, program, **train_args):
        self.name, self.out, self.chain, self.identity = name, out, chain, identity
        shutil.rmtree(out, ignore_errors=True)
        self.run_id = None
        posts = []

        def on_root(size, root, proof):
            posts.append(size)
            self.chain.tick()
            # The sealing post names the steps the run's statistics flag
            # (docs/ledger.md 2.3): challenged for certain.
            flagged = {"flagged_steps": self.recorder.flagged_steps(size)} if size == STEPS else {}
            self.chain.call("post_checkpoint_root", caller=identity, run_id=self.run_id, size=size,
                            root=root.hex(), consistency_proof=proof.hex(), **flagged)

        def on_start(rec):  # the commitment goes on chain, bonded, before training starts
            self.recorder = rec
            self.chain.call("deposit", identity=identity, amount=MINER_BOND)  # the runtime takes the funds
            res = self.chain.call("start_training_commitment", caller=identity,
                                  commitment=rec.commitment.encode().hex())
            self.run_id = res["run_id"]

        self.r = trainer.train(out, steps=STEPS, identity=bytes.fromhex(identity), on_start=on_start,
                               on_root=on_root, progress=bar(name), task=task, program=program, **train_args)
        self.rec, self.spec, self.program = self.r["recorder"], self.r["spec"], self.r["program"]
        self.spec_path = os.path.join(out, "spec.json")
        with open(self.spec_path, "w") as f:
            f.write(self.spec.to_json())
        self.commitment_path = os.path.join(out, "ckpt", "commitment.bin")
        self.root = self.r["root"]
        self.posts = posts
        self.bytes_served = 0

    def leaf(self, t):
        """Leaf t as the recorder wrote it: steps.jsonl holds the values, the
        leaf names the run (docs/PROTOCOL.md section 10)."""
        import struct
        with open(os.path.join(self.out, "ckpt", "steps.jsonl")) as f:
            rec = json.loads(f.readlines()[t - 1])
        bits = lambda h: struct.unpack(">d", int(h, 16).to_bytes(8, "big"))[0]  # noqa: E731
        return pot.StepLeaf(self.rec.commitment.run_id, t, pot.Digest(rec["state_digest"]),
                            pot.Digest(rec["stats_digest"]), bits(rec["loss_bits"]),
                            bits(rec["update_norm_bits"])).encode()

    def serve(self, challenge_id, t):
        """Opens step t: the manifest, the served state files, and the ledger
        call submit_opening. In norm-bucket mode the reference bucket is the
        one of the leaf's committed norm: there is nothing to declare."""
        manifest = self.rec.serve(t, post_state=True)
        path = os.path.join(self.out, f"opening-{t}.bin")
        with open(path, "wb") as f:
            f.write(manifest)
        pre, post = self.rec.state_path(t - 1), self.rec.state_path(t)
        self.bytes_served += len(manifest) + os.path.getsize(pre) + os.path.getsize(post)
        with pot.Tree.open(os.path.join(self.out, "ckpt", "log.tree")) as log:
            proof = log.inclusion_proof(t - 1, STEPS)
        self.chain.call("submit_opening", caller=self.identity, challenge_id=challenge_id,
                        manifest_digest=tagged("pot/v3/opening", manifest).hex(), step_leaf=self.leaf(t).hex(),
                        leaf_proof=proof.hex())
        return path, pre, post


def verify_all(args, miner, cid, mode, t, manifest, pre, post, timings):
    """The three verifiers on challenge `cid` (step t, the task's `mode`).
    Returns, per verifier, (identity, statement, salt hex, commitment hex,
    check): each states what it found, in the environment it replayed in
    (docs/PROTOCOL.md section 19), and commits to it."""
    out = []

    def commit(ident, statement, check):
        salt = pot.witness_salt()
        out.append((ident, statement, salt.hex(), pot.witness_commitment(statement, salt, bytes.fromhex(ident)).hex(),
                    check))
    # The steps the run sealed with as flagged (run_info): every verifier
    # requires the opening to list the same (check 32).
    sealed = miner.chain.call("run_info", run_id=miner.run_id)["flagged_steps"]
    sealed_arg = ",".join(str(s) for s in sealed) or "none"
    common = ["--step", t, "--commitment", miner.commitment_path, "--spec", miner.spec_path, "--program",
              miner.program, "--root", miner.root, "--size", STEPS, "--pre-state", pre, "--challenge-id", cid,
              "--sealed-flags", sealed_arg]
    # C++: the pot command-line tool, bitwise on the spec's thread count.
    rc, j, err, secs = run_cmd([args.pot, "verify", manifest, *common, "--json"])
    timings["C++"] += secs
    if j.get("statement"):
        commit(VERIFIERS[0][2], j["statement"], j.get("check", "error"))
    else:
        say(f"    C++ verifier failed: {err[:300]}")
        out.append((VERIFIERS[0][2], None, None, None, "error"))
    # Go: samples/go-verifier in replay mode.
    rc, j, err, secs = run_cmd([args.go_verifier, "-replay", "-manifest", manifest, "-step", t, "-commitment",
                                miner.commitment_path, "-spec", miner.spec_path, "-program", miner.program, "-root",
                                miner.root, "-size", STEPS, "-pre-state", pre, "-identity", VERIFIERS[1][2],
                                "-challenge-id", cid, "-sealed-flags", sealed_arg, "-json"])
    timings["Go"] += secs
    if j.get("statement"):
        out.append((VERIFIERS[1][2], j["statement"], j["salt"], j["witness_commitment"], j.get("check", "ok")))
    else:
        say(f"    Go verifier failed: {err[:300]}")
        out.append((VERIFIERS[1][2], None, None, None, "error"))
    # Python: another thread count than the spec, so the norm-bucket path. In
    # a bitwise challenge its environment (2 threads) cannot judge the step:
    # it says so, and the ledger records it as misconfigured, not counted.
    start = time.perf_counter()
    miner.rec.commitment.set_sealed_flags(sealed)
    try:
        r = pot.verify_step(miner.rec.commitment, miner.spec, miner.program, t, STEPS, bytes.fromhex(miner.root),
                            open(manifest, "rb").read(), pre, post, pot.VerifyMode.NORM_BUCKET, 2)
        check = "ok"
    except pot.Error as e:
        r, check = e.result, str(e.check) if e.check is not None else e.status
    timings["Python"] += time.perf_counter() - start
    if r is not None and check != "error":
        challenge_mode = pot.VerifyMode.NORM_BUCKET if mode == "norm_bucket" else pot.VerifyMode.BITWISE
        commit(VERIFIERS[2][2], pot.witness_statement(r, miner.spec, bytes.fromhex(miner.run_id), t, cid,
                                                      challenge_mode, 2), check)
    else:
        out.append((VERIFIERS[2][2], None, None, None, check))
    return out


def challenge(args, chain, miner, timings):
    """Issues the run's challenges from the randomness of the block after its
    seal, has the miner open them and the verifiers witness them (all in the
    commit phase), reveals, finalizes. Returns the per-challenge records for
    the report."""
    chain.wait_until(chain.call("run_info", run_id=miner.run_id)["draw_height"])
    res = chain.call("issue_challenge", run_id=miner.run_id)
    mode = chain.call("challenge_info", challenge_id=res["challenge_ids"][0])["mode"]
    opened = []
    for cid, t in zip(res["challenge_ids"], res["steps"]):
        manifest, pre, post = miner.serve(cid, t)
        witnesses = verify_all(args, miner, cid, mode, t, manifest, pre, post, timings)
        for ident, _, _, commitment, _ in witnesses:
            if commitment:
                chain.call("commit_witness", caller=ident, challenge_id=cid, commitment=commitment)
        opened.append((cid, t, witnesses))
    info = chain.call("challenge_info", challenge_id=res["challenge_ids"][0])
    chain.wait_until(info["commit_deadline"] + 1)
    for cid, t, witnesses in opened:
        for ident, statement, salt, commitment, _ in witnesses:
            if commitment:
                # The reveal carries the finding; the ledger knows the
                # challenge the statement is bound to.
                finding = {k: v for k, v in statement.items() if k not in ("run_id", "step", "challenge_id", "mode")}
                chain.call("reveal_witness_value", caller=ident, challenge_id=cid, salt=salt, **finding)
    chain.wait_until(info["reveal_deadline"] + 1)
    records = []
    for cid, t, witnesses in opened:
        fin = chain.call("finalize_challenge", challenge_id=cid)
        checks = [w[4] for w in witnesses]
        failed = next((c for c in checks[:2] if c != "ok"), "ok")
        records.append({"step": t, "mode": mode, "verdict": fin["verdict"], "check": failed,
                        "reason": fin["reason"], "witness_checks": checks})
        misconfigured = " (Python on 2 threads: misconfigured for a bitwise step, not counted)" \
            if fin["misconfigured"] and len(records) == 1 else ""
        say(f"    step {t:3d} ({mode:11s}) C++: {checks[0]:15s} Go: {checks[1]:15s} Python on 2 threads: "
            f"{checks[2]:15s} -> {fin['verdict'].upper()}{misconfigured}")
    return records


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pot", required=True, help="the pot command-line tool")
    ap.add_argument("--go-verifier", required=True, help="the built samples/go-verifier")
    ap.add_argument("--out", default="demo-run", help="run directory (report.json, report.html)")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    t_all = time.perf_counter()
    chain = Chain()
    timings = {"C++": 0.0, "Go": 0.0, "Python": 0.0}
    counts = {"C++": 0, "Go": 0, "Python": 0}

    say("== 0. A task owner posts the task: program, data, S_0, schedule, spec, steps, challenge policy")
    task, program = trainer.make_task(os.path.join(out, "task"), owner=OWNER, rounds=ROUNDS, steps=STEPS)
    chain.call("deposit", identity=OWNER.hex(), amount=TASK_BOND)
    task_id = chain.call("post_task", caller=OWNER.hex(), task=task.encode().hex())["task_id"]
    say(f"  task {task_id[:16]}...: {STEPS} steps, {ROUNDS} bitwise challenges per run; a run bonds "
        f"{MINER_BOND} (pot security: one forged step of {STEPS} is found with p = "
        f"{pot.detection_probability(STEPS, 1, ROUNDS):.3f}, so a reward of {REWARD} needs that bond)")
    for _, lang, ident in VERIFIERS:
        chain.call("register_verifier", caller=ident, stake=STAKES[lang])
    say("  verifiers registered with stakes " + ", ".join(f"{lang} {STAKES[lang]}" for _, lang, _ in VERIFIERS) +
        f"; each challenge's committee of {len(VERIFIERS)} is drawn by stake, and its stake majority decides")
    say("  a miner's commitment with an S_0 of its own choosing is refused:")
    try:
        mine = json.loads(task.to_json())
        chain.call("start_training_commitment", caller="6c617a79", commitment=pot.Commitment({
            "task_id": task_id, "initial_state_digest": "ab" * 32, "schedule_root": mine["schedule"]["listed_root"],
            "dataset_root": mine["dataset_root"], "dataset_size": mine["dataset_size"],
            "spec_digest": str(task.spec.digest()), "declared_steps": STEPS, "miner_identity": "6c617a79"})
            .encode().hex())
        sys.exit("the ledger admitted a commitment its task does not")
    except pot.InvalidArgumentError as e:
        say(f"    {e.message[:120]}...")

    say("== 1. An honest miner trains and records 200 steps (pot.torch.Recorder)")
    honest = Miner("honest miner", os.path.join(out, "honest"), chain, "6d696e6572", task, program)
    say(f"  run {honest.run_id[:16]}...: loss {honest.r['losses'][0]:.3f} -> {honest.r['losses'][-1]:.3f} in "
        f"{honest.r['train_seconds']:.1f} s; roots posted at sizes {honest.posts} with consistency proofs; "
        f"{len(os.listdir(os.path.join(honest.out, 'ckpt', 'checkpoints')))} of 201 states stored")

    say("== 2-3. The ledger draws challenges; the miner opens them; three verifiers replay and witness")
    runs = []
    recs = challenge(args, chain, honest, timings)
    for k in counts:
        counts[k] += len(recs)
    runs.append(("honest miner", honest, recs, []))

    say("== 4. Cheaters")
    say("  a miner trains steps 1-100, then commits a pre-trained model's states as steps 101-200")
    kept = {}

    def keep(t, model, opt, loss):
        if t > STEPS // 2:
            kept[t] = (copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict()), loss)

    shutil.rmtree(os.path.join(out, "pretrained"), ignore_errors=True)
    trainer.train(os.path.join(out, "pretrained"), steps=STEPS, init_seed=5, data_seed=99, every=STEPS,
                  after_step=keep, progress=bar("pre-training elsewhere"))

    def substitute(t, model, opt):
        if t <= STEPS // 2:
            return None
        sd, osd, loss = kept[t]
        group = dict(opt.param_groups[0])
        model.load_state_dict(sd)
        opt.load_state_dict(osd)
        # The forger keeps the spec's learning rate (the recorder refuses any
        # other); the weights and moments are the pre-trained model's.
        opt.param_groups[0]["lr"], opt.param_groups[0]["initial_lr"] = group["lr"], group["initial_lr"]
        return loss

    sub = Miner("substituting miner", os.path.join(out, "substituting"), chain, "6d616c6c6f7279", task, program,
                every=1, substitute=substitute)
    recs = challenge(args, chain, sub, timings)
    for k in counts:
        counts[k] += len(recs)
    runs.append(("substituting miner", sub, recs, []))

    say("  a miner commits to one data set and trains on another")
    other = Miner("other-data miner", os.path.join(out, "other-data"), chain, "6d616c6c6f727932", task, program,
                  every=1, train_data_seed=8, self_check=False)  # the recorder's self-check would stop it
    recs = challenge(args, chain, other, timings)
    for k in counts:
        counts[k] += len(recs)
    runs.append(("other-data miner", other, recs, []))

    say("  a miner that trains nothing and reports a constant loss")
    frozen = Miner("frozen miner", os.path.join(out, "frozen"), chain, "6c617a79", task, program, every=STEPS,
                   frozen=True, self_check=False)
    flags = pot.check_losses(frozen.r["losses"])
    for f in flags:
        say(f"    loss check: {f}")
    runs.append(("frozen miner", frozen, [], flags))

    # 5. Summary.
    train_s = honest.r["train_seconds"]
    honest_recs = runs[0][2]
    verify_s = {k: timings[k] / counts[k] * len(honest_recs) for k in timings}
    served = honest.bytes_served
    p_sub = pot.detection_probability(STEPS, STEPS // 2, 8)
    p_1pct = pot.detection_probability(STEPS, 2, 5)
    need = pot.challenges_needed(STEPS, 2, 0.99)
    say("== 5. Summary")
    rows = [
        ("steps trained (honest miner)", f"{STEPS}"),
        ("challenges (honest / substituting / other-data)",
         f"{len(runs[0][2])} / {len(runs[1][2])} / {len(runs[2][2])}"),
        ("verdicts (honest)", ", ".join(r["verdict"].upper() for r in runs[0][2])),
        ("substituting miner caught", f"{sum(r['verdict'] == 'fail' for r in runs[1][2])} of {len(runs[1][2])} "
                                      f"challenges FAIL at {', '.join(sorted({r['check'] for r in runs[1][2] if r['verdict'] == 'fail'}))}"),
        ("other-data miner caught", f"{sum(r['verdict'] == 'fail' for r in runs[2][2])} of {len(runs[2][2])} "
                                    f"challenges FAIL at {', '.join(sorted({r['check'] for r in runs[2][2] if r['verdict'] == 'fail'}))}"),
        ("frozen run flagged", ", ".join(str(f.kind) for f in flags) or "no"),
        ("miner bond (pot security, reward %d)" % REWARD,
         f"{MINER_BOND}; honest miner's still locked: "
         f"{chain.call('account_info', identity=honest.identity)['locked']}, "
         f"burned by FAILs: {chain.call('ledger_info')['burned']}"),
        ("bytes served for the honest openings", f"{served:,}"),
        ("training time (honest miner)", f"{train_s:.1f} s"),
    ]
    for k, secs in verify_s.items():
        rows.append((f"{k} verifier time for the {len(honest_recs)} honest challenges",
                     f"{secs:.1f} s = {100 * secs / train_s:.1f}% of the training time"))
    rows += [
        ("detection probability, 100 of 200 steps forged, 8 challenges", f"{p_sub:.4f}"),
        ("detection probability, 1% forged, 5 challenges", f"{p_1pct:.3f} ({need} challenges reach 99%)"),
    ]
    width = max(len(a) for a, _ in rows)
    for a, b in rows:
        say(f"  {a:{width}s}  {b}")

    report = {
        "title": "pot demo: Proof of Training end to end",
        "runs": [{"name": name, "run_id": m.run_id, "steps": STEPS,
                  "losses": [x if x == x and abs(x) != float("inf") else None for x in m.r["losses"]],
                  "challenges": [{k: r[k] for k in ("step", "mode", "verdict", "check", "reason")} for r in recs],
                  "flags": [{"kind": str(f.kind), "first_step": f.first_step, "last_step": f.last_step,
                             "message": f.message} for f in fl],
                  "verdict": ("FAIL" if any(r["verdict"] == "fail" for r in recs) else
                              "FLAGGED" if fl else "PASS" if recs else "not challenged")}
                 for name, m, recs, fl in runs],
        "verifiers": [{"name": VERIFIERS[i][0], "language": lang, "threads": 2 if lang == "Python" else 1,
                       "mode": "norm_bucket" if lang == "Python" else "bitwise", "steps_verified": counts[lang],
                       "seconds": timings[lang]} for i, lang in enumerate(("C++", "Go", "Python"))],
        "summary": [{"label": a, "value": b} for a, b in rows],
        "timings": {"training_seconds": train_s, "verification_seconds": sum(timings.values())},
    }
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    rc, _, err, _ = run_cmd([args.pot, "report", out])
    if rc != 0:
        sys.exit(f"pot report failed: {err}")
    say(f"report: {os.path.join(out, 'report.html')}  (demo took {time.perf_counter() - t_all:.0f} s)")
    ok = (all(r["verdict"] == "pass" for r in runs[0][2]) and any(r["verdict"] == "fail" for r in runs[1][2])
          and all(r["verdict"] == "fail" for r in runs[2][2]) and flags)
    for _, m, _, _ in runs:
        m.rec.close()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
