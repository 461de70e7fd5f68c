"""Attacks on what a PASS means, rebuilt through the public API with the
reference ledger and real PyTorch training (docs/security.md section 5).
Each attack must fail at its named check while the same run built honestly
passes."""
import hashlib
import dataclasses
import json
import math
import copy
import os
import re
import struct
import warnings

import pytest

torch = pytest.importorskip("torch")
import pot  # noqa: E402
import pot.torch as pt  # noqa: E402
from conftest import LEDGER_BONDS, fund  # noqa: E402

if not pot.replay_available():
    pytest.skip("libpot was built without LibTorch", allow_module_level=True)

STEPS, BATCH = 6, 4
OWNER, MINER, THIEF = b"task owner", b"honest miner", b"lazy miner"
END_HEIGHT = 10**6  # the tasks' end: later than any height these tests reach


class Net(torch.nn.Module):
    """The model: with p > 0 (the world's, 0.1), dropout on the hidden layer,
    so that a listed task's runs differ by their per-step seeds."""

    def __init__(self, p: float = 0.0):
        super().__init__()
        drop = [torch.nn.Dropout(p)] if p > 0 else []
        self.body = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), *drop, torch.nn.Linear(16, 3))

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.body(x), y)


class Trivial(torch.nn.Module):
    """One parameter, a loss that ignores its input: nothing to learn."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(1))

    def forward(self, x, y):
        return (self.w * self.w).sum() + x.sum() * 0


def data(n=32):
    g = torch.Generator().manual_seed(5)
    x, y = torch.randn(n, 6, generator=g), torch.randint(0, 3, (n,), generator=g)
    return [{"x": x[i], "y": y[i]} for i in range(n)]


class World:
    """A task owner's task on a reference ledger, and an honest run of it.
    The optimizer is SGD with momentum, or Adam (lr 0.01) with adam=True."""

    def __init__(self, tmp, adam=False, dropout=0.1):
        self.tmp = str(tmp)
        self.dropout = dropout
        self.ledger = pot.Ledger(draw_delay=1, opening_window=5, commit_window=5, reveal_window=5,
                                 max_committee_size=3, min_stake=1, max_rounds=8, max_attempts=1, dispute_window=1, dispute_arity=2,
                                 **LEDGER_BONDS)
        self.now = 100
        fund(self.ledger, self.now, OWNER, MINER, THIEF)
        torch.manual_seed(0)
        torch.set_num_threads(1)
        self.samples = data()
        self.data_dir = os.path.join(self.tmp, "data")
        pt.write_dataset(self.samples, self.data_dir)
        self.program = os.path.join(self.tmp, "program.pt")
        self.model = Net(dropout)
        pt.save_program(self.model, self.program)
        if adam:
            self.opt = torch.optim.Adam(self.model.parameters(), lr=0.01)
        else:
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9)
        # Linear warm-up over 2 steps, then cosine decay: the spec fixes every step's rate.
        L = torch.optim.lr_scheduler
        self.sched = L.SequentialLR(self.opt, [L.LinearLR(self.opt, 0.25, 1.0, 2),
                                               L.CosineAnnealingLR(self.opt, STEPS - 2, 0.001)], [2])
        spec = pt.make_spec(self.opt, self.program, dtype=torch.float32, batch_size=BATCH, seed=7, dropout=dropout,
                            scheduler=self.sched)
        self.schedule = [[[(BATCH * t + i) % len(self.samples) for i in range(BATCH)]] for t in range(STEPS)]
        self.task = pt.make_task(self.model, self.opt, spec, dataset_dir=self.data_dir, schedule=self.schedule,
                                 end_height=END_HEIGHT, owner=OWNER, challenge_rounds=2)
        self.call("post_task", caller=OWNER.hex(), task=self.task.encode().hex())

    def call(self, name, **args):
        return self.ledger.apply({"call": name, "now": self.now, **args})

    def issue(self, run_id):
        """The next block, its randomness as the runtime posts it, and the
        run's challenges drawn from it."""
        self.now += 1
        self.call("post_randomness", randomness=hashlib.sha256(b"block %d" % self.now).hexdigest())
        return self.call("issue_challenge", run_id=run_id)

    def recorder_in_step_one(self):
        """A recorder of the task with step 1 begun and its forward and
        backward run (drawing the spec's dropout, as every step must): the
        caller changes the state before end_step reads it."""
        rec = pt.Recorder(self.model, self.opt, self.task, self.program, os.path.join(self.tmp, "ckpt"),
                          dataset_dir=self.data_dir, schedule=self.schedule, miner_identity=MINER)
        rec.begin_step(self.schedule[0][0])
        batch = [self.samples[i] for i in self.schedule[0][0]]
        self.model(torch.stack([b["x"] for b in batch]), torch.stack([b["y"] for b in batch])).backward()
        return rec

    def train_step(self, rec, step):
        """Step `step` (a schedule entry) begun and trained as the task says:
        forward, backward, optimizer and scheduler steps. Returns the loss;
        the caller ends the step."""
        rec.begin_step(step[0])
        batch = [self.samples[i] for i in step[0]]
        loss = self.model(torch.stack([b["x"] for b in batch]), torch.stack([b["y"] for b in batch]))
        loss.backward()
        self.opt.step()
        self.sched.step()
        self.opt.zero_grad(set_to_none=True)
        return loss

    def train_honestly(self):
        rec = pt.Recorder(self.model, self.opt, self.task, self.program, os.path.join(self.tmp, "ckpt"),
                          dataset_dir=self.data_dir, schedule=self.schedule, checkpoint_every=2,
                          miner_identity=MINER)
        run_id = self.call("start_training_commitment", caller=MINER.hex(),
                           commitment=rec.commitment.encode().hex())["run_id"]
        self.honest_states, self.honest_losses = [], []
        for step in self.schedule:
            loss = self.train_step(rec, step)
            rec.end_step(loss)
            self.honest_states.append({k: v.clone() for k, v in pt.canonical_state(self.model, self.opt).items()})
            self.honest_losses.append(float(loss))
        root = rec.finish()
        seal = {}
        if self.dropout == 0:  # a one-trajectory task: the seal shows the final state (docs/ledger.md 2.3)
            with pot.Checkpoints(rec.checkpoint_dir) as c:
                leaf, proof = c.leaf(STEPS, STEPS)
            seal = dict(final_leaf=leaf.hex(), final_leaf_proof=proof.hex())
        self.call("post_checkpoint_root", caller=MINER.hex(), run_id=run_id, size=STEPS, root=root.hex(),
                  consistency_proof="", **seal)
        return rec, run_id, root


def test_honest_run_of_the_task_passes(tmp_path):
    w = World(tmp_path)
    rec, run_id, root = w.train_honestly()
    issued = w.issue(run_id)
    # The task's rounds, not the caller's, and step 1 (challenged for certain).
    assert len(issued["steps"]) == 2 + (1 not in issued["steps"][:2]) and 1 in issued["steps"]
    for t in issued["steps"]:
        r = pot.verify_step(rec.commitment, w.task.spec, w.program, t, STEPS, root, rec.serve(t), rec.state_path(t - 1))
        assert r.ok, t
    rec.close()


def test_attack_a_task_of_the_miners_choosing_is_refused(tmp_path):
    """Attack 1: a one-parameter program whose loss ignores its input, a
    one-sample dataset and 20,000 declared steps, registered under an
    existing task id. The ledger refuses each variant at the field that
    differs from the task."""
    w = World(tmp_path)
    thief_dir = os.path.join(w.tmp, "thief")
    pt.write_dataset([w.samples[0]], os.path.join(thief_dir, "data"))
    trivial = Trivial()
    program = os.path.join(thief_dir, "program.pt")
    pt.save_program(trivial, program)
    opt = torch.optim.SGD(trivial.parameters(), lr=0.05)
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=1, seed=7, other_rng_use=True)
    own = pt.make_task(trivial, opt, spec, dataset_dir=os.path.join(thief_dir, "data"), schedule=[[[0]]] * 20000,
                       end_height=END_HEIGHT, owner=THIEF, challenge_rounds=2)
    fixed = w.task.to_dict()
    mine = own.to_dict()

    def commitment(**fields):
        j = {"task_id": str(w.task.id), "initial_state_digest": mine["initial_state"]["published_digest"],
             "schedule_root": mine["schedule"]["listed_root"], "dataset_root": mine["dataset_root"],
             "dataset_size": mine["dataset_size"], "spec_digest": str(spec.digest()), "declared_steps": 20000,
             "miner_identity": THIEF.hex()}
        j.update(fields)
        return pot.Commitment(j).encode().hex()

    def refused(error, field, **fields):
        with pytest.raises(error, match=field):
            w.call("start_training_commitment", caller=THIEF.hex(), commitment=commitment(**fields))

    # Everything its own: the step count, checked first, is named; with the
    # task's step count, the first field the task fixes.
    refused(pot.OutOfRangeError, "declared_steps 20000 is outside 6..6")
    refused(pot.InvalidArgumentError, "initial_state_digest is", declared_steps=STEPS)
    # The task's S_0, schedule and data, but its own program and spec.
    copied = {"initial_state_digest": fixed["initial_state"]["published_digest"],
              "schedule_root": fixed["schedule"]["listed_root"], "dataset_root": fixed["dataset_root"],
              "dataset_size": fixed["dataset_size"]}
    refused(pot.InvalidArgumentError, "spec_digest is", declared_steps=STEPS, **copied)
    # Everything the task's, but 20,000 steps of it.
    refused(pot.OutOfRangeError, "declared_steps 20000 is outside 6..6",
            spec_digest=str(w.task.spec.digest()), **copied)
    # The recorder refuses it too, before training: the trivial program is
    # not the task's; with the task's program, the trivial model is not the
    # program's; with a model of the program's shape but its own weights,
    # it is not the task's S_0.
    with pytest.raises(pot.ProofMismatchError, match="not the spec's model_program_digest"):
        pt.Recorder(trivial, opt, w.task, program, os.path.join(thief_dir, "ckpt"),
                    dataset_dir=os.path.join(thief_dir, "data"), schedule=[[[0]]] * STEPS, miner_identity=THIEF)
    with pytest.raises(pot.InvalidArgumentError, match="the model is not the program's"):
        pt.Recorder(trivial, opt, w.task, w.program, os.path.join(thief_dir, "ckpt"),
                    dataset_dir=os.path.join(w.tmp, "data"), schedule=w.schedule, miner_identity=THIEF)
    own_weights = copy.deepcopy(w.model)
    with torch.no_grad():
        for p in own_weights.parameters():
            p.mul_(0.5)
    own_opt = torch.optim.SGD(own_weights.parameters(), lr=w.opt.param_groups[0]["lr"], momentum=0.9)
    with pytest.raises(pot.InvalidArgumentError, match="initial_state_digest"):
        pt.Recorder(own_weights, own_opt, w.task, w.program, os.path.join(thief_dir, "ckpt"),
                    dataset_dir=os.path.join(w.tmp, "data"), schedule=w.schedule, miner_identity=THIEF)
    # A task of its own can be posted, but it is another task id: a run of it
    # answers to nobody's task but the thief's.
    assert w.call("post_task", caller=THIEF.hex(), task=own.encode().hex())["task_id"] != str(w.task.id)


def forged_run(w, tmp, corrupt, task=None, s0_path=None):
    """A miner that trains step 1 honestly, then corrupts S_1 with
    `corrupt(state)` (a dict of canonical tensors, changed in place) and
    fabricates S_2..S_n without training: each is S_1 again. The run answers
    to `task` (default: the world's), whose S_0 file is `s0_path`. Returns
    (commitment, root, serve(t) -> (manifest, pre-state path))."""
    x = torch.stack([w.samples[i]["x"] for i in w.schedule[0][0]])
    y = torch.stack([w.samples[i]["y"] for i in w.schedule[0][0]])
    torch.manual_seed(pot.seed(7, thief_run_id(task or w.task), 1))
    loss = w.model(x, y)
    loss.backward()
    w.opt.step()
    w.sched.step()
    w.opt.zero_grad(set_to_none=True)
    state = {k: v.clone() for k, v in pt.canonical_state(w.model, w.opt).items()}
    corrupt(state)
    losses = [float(loss)] + [float(loss) * 0.9 ** t for t in range(1, STEPS)]
    return served_run(w, tmp, [state] * STEPS, losses, task, s0_path)


def served_run(w, tmp, states, losses, task=None, s0_path=None, commitment=None, schedule=None, norm_of=None,
               hide_flags=False):
    """What a miner posts and serves for the states S_1..S_n it made
    (canonical tensors) and the losses it claims: a commitment to `task`
    (default: the world's; or `commitment`) under the thief's identity, the
    log root, and serve(t) -> (manifest, pre-state path), opening the
    entries of `schedule` (default: the world's listed one). Leaf t commits
    norm_of(t, norm of the served states) (default: that norm)."""
    task = task or w.task
    schedule = schedule or w.schedule
    rec_dir = os.path.join(tmp, "forged")
    os.makedirs(rec_dir)
    paths, digests = [s0_path], [task.to_dict()["initial_state"]["published_digest"]]
    for t, state in enumerate(states, start=1):
        path = os.path.join(rec_dir, f"S_{t}.safetensors")
        with pt.state_writer(state) as sw:
            sw.write(path)
        paths.append(path)
        digests.append(str(pot.safetensors_digest_file(path)))
    if commitment is None:
        commitment = pot.Commitment(dict(json_of(task), miner_identity=THIEF.hex(), declared_steps=STEPS))

    def leaf(t):
        # The leaf names the run and commits the update norm of the served
        # states. A forger commits a finite norm (a NaN one fails check 24 at
        # the leaf) and, without an S_0 file, 0 for step 1.
        norm = 0.0
        if paths[t - 1] is not None and os.path.exists(paths[t - 1]):
            with pot.Safetensors(paths[t - 1]) as a, pot.Safetensors(paths[t]) as b:
                norm = pot.update_norm(a, b, "param/")
            norm = norm if math.isfinite(norm) else 1.0
        if norm_of is not None:
            norm = norm_of(t, norm)
        return pot.StepLeaf(commitment.run_id, t, pot.Digest(digests[t]), tables[t].digest, losses[t - 1],
                            norm).encode()

    def table(t):
        # The statistics of the state it serves (PROTOCOL 5.2): a table of
        # another state fails check 31 before any replay. Without a state
        # file (or of a file that is no state) the forger commits an empty
        # table, which every opening's run record carries (check 32).
        if paths[t] is not None and os.path.exists(paths[t]):
            try:
                return pot.state_stats(paths[t])
            except pot.Error:
                pass  # a served file that is no state fails before its table is read
        return pot.StateStats(bytes(4))

    tables = [None] + [table(t) for t in range(1, STEPS + 1)]
    leaves = [None] + [leaf(t) for t in range(1, STEPS + 1)]
    # The steps its tables flag: listed (it seals with them on the ledger),
    # or, with hide_flags, left out.
    flagged = [] if hide_flags else [s.step for s in pot.run_flags(tables[1:])]
    log = pot.Tree()
    for t in range(1, STEPS + 1):
        log.append(leaves[t])
    dataset, sched = pot.Tree(), pot.Tree()
    for i in range(len(w.samples)):
        with open(os.path.join(w.data_dir, f"{i:06d}.safetensors"), "rb") as f:
            dataset.append(pot.sample_digest(f.read()))
    entries = [pot.ScheduleEntry(t, step).encode(len(w.samples)) for t, step in enumerate(schedule, start=1)]
    for e in entries:
        sched.append(e)

    def serve(t):
        with pot.Opening(commitment.run_id, t, STEPS, pot.Digest(digests[t - 1])) as o:
            if t > 1:
                o.set_pre_leaf(leaves[t - 1], log.inclusion_proof(t - 2, STEPS))
            o.set_post_leaf(leaves[t], log.inclusion_proof(t - 1, STEPS))
            o.set_schedule(entries[t - 1], sched.inclusion_proof(t - 1, STEPS))
            for i in schedule[t - 1][0]:
                with open(os.path.join(w.data_dir, f"{i:06d}.safetensors"), "rb") as f:
                    o.add_sample(i, f.read(), dataset.inclusion_proof(i, len(w.samples)))
            o.set_run_record(b"".join(leaves[1:]), tables[1:], flagged)
            return o.encode(), paths[t - 1]

    serve.state_path = lambda t: paths[t]
    serve.leaf = lambda t: (leaves[t], log.inclusion_proof(t - 1, STEPS))
    serve.flagged = [s.step for s in pot.run_flags(tables[1:])]
    return commitment, log.root(STEPS), serve


def test_attack_one_listed_training_registered_by_two_identities(tmp_path):
    """Attack 5 under a listed schedule: every run of the task trains on the
    same samples in the same order from the same S_0, so a second identity
    registers the honest states under its own commitment (accepted: only the
    miner differs) and serves them. The per-step seeds name the run
    (docs/PROTOCOL.md section 9): the dropout masks of the thief's steps are
    not the ones the honest states were trained with, and every copied step
    fails at `replayed_state`. A listed task whose steps draw no random
    numbers is a one-trajectory task (since 0.3.0): every run is the same
    trajectory, which the ledger pays once (docs/ledger.md 2.3,
    `Ledger.AOneTrajectoryTaskPaysItsTrajectoryOnce`)."""
    w = World(tmp_path)
    rec, run_id, root = w.train_honestly()
    for t in range(1, STEPS + 1):
        assert pot.verify_step(rec.commitment, w.task.spec, w.program, t, STEPS, root, rec.serve(t),
                               rec.state_path(t - 1)).ok, t
    copy = pot.Commitment(dict(json.loads(rec.commitment.to_json()), miner_identity=THIEF.hex()))
    thief_run = w.call("start_training_commitment", caller=THIEF.hex(), commitment=copy.encode().hex())["run_id"]
    assert thief_run == str(copy.run_id) != run_id
    base = w.task.spec.seed
    assert all(pot.seed(base, copy.run_id, t) != pot.seed(base, rec.commitment.run_id, t) for t in range(1, STEPS + 1))
    commitment, copied_root, serve = served_run(w, str(tmp_path / "thief"), w.honest_states, w.honest_losses,
                                                s0_path=rec.state_path(0), commitment=copy)
    assert copied_root != root  # the leaves name the run: the copy needs a log of its own
    for t in range(1, STEPS + 1):
        manifest, pre = serve(t)
        with pytest.raises(pot.ProofMismatchError) as e:
            pot.verify_step(copy, w.task.spec, w.program, t, STEPS, copied_root, manifest, pre)
        assert e.value.check == pot.OpeningCheck.REPLAYED_STATE, t
    rec.close()
    # Without per-step randomness the task is a one-trajectory task.
    torch.manual_seed(0)
    quiet = Net(0.0)
    program = str(tmp_path / "quiet.pt")
    pt.save_program(quiet, program)
    opt = torch.optim.SGD(quiet.parameters(), lr=0.05)
    for policy in (dict(seed_policy="none"), dict(seed_policy="per_step", seed=7)):
        spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=BATCH, **policy)
        assert pt.make_task(quiet, opt, spec, dataset_dir=w.data_dir, schedule=w.schedule, end_height=END_HEIGHT,
                            owner=OWNER, challenge_rounds=2).schedule_rule == "listed"
        # ... while a run-seeded one gives each run its own order instead.
        assert pt.make_task(quiet, opt, spec, dataset_dir=w.data_dir, schedule=pt.RUN_SEEDED, steps=STEPS,
                            end_height=END_HEIGHT, owner=OWNER, challenge_rounds=2).schedule_rule == "run_seeded"


def test_attack_a_one_trajectory_task_pays_its_trajectory_once(tmp_path):
    """Copies stopped without forcing randomness (round 3): a dropout-free
    model reading a listed schedule makes every run of the task one
    trajectory. The honest run seals with its final leaf and verifies; a
    second identity that copies its states (only the miner differs) is
    refused at its seal, `POT_E_CONFLICT` naming the run it copies; and no
    run of the task is drawn before its end height, so no state is opened
    while a copy could still seal (docs/ledger.md 2.3-2.4)."""
    w = World(tmp_path, dropout=0.0)
    assert w.task.schedule_rule == "listed"
    rec, run_id, root = w.train_honestly()
    assert w.ledger.apply({"call": "run_info", "run_id": run_id})["final_state"] == str(pot.safetensors_digest_file(
        rec.state_path(STEPS)))
    copy = pot.Commitment(dict(json.loads(rec.commitment.to_json()), miner_identity=THIEF.hex()))
    thief_run = w.call("start_training_commitment", caller=THIEF.hex(), commitment=copy.encode().hex())["run_id"]
    _, copied_root, serve = served_run(w, str(tmp_path / "thief"), w.honest_states, w.honest_losses,
                                       s0_path=rec.state_path(0), commitment=copy)
    # Without per-step randomness the copy replays bit for bit: only the seal can refuse it.
    manifest, pre = serve(3)
    assert pot.verify_step(copy, w.task.spec, w.program, 3, STEPS, copied_root, manifest, pre).ok
    leaf, proof = serve.leaf(STEPS)
    with pytest.raises(pot.ConflictError, match=f"run {run_id} of the task sealed with the same final state"):
        w.call("post_checkpoint_root", caller=THIEF.hex(), run_id=thief_run, size=STEPS, root=copied_root.hex(),
               consistency_proof="", final_leaf=leaf.hex(), final_leaf_proof=proof.hex())
    # The honest run is drawn after the task's end, and its steps verify.
    with pytest.raises(pot.StateError, match="one-trajectory task"):
        w.issue(run_id)
    w.now = END_HEIGHT
    issued = w.issue(run_id)
    for t in issued["steps"]:
        assert pot.verify_step(rec.commitment, w.task.spec, w.program, t, STEPS, root, rec.serve(t),
                               rec.state_path(t - 1)).ok, t
    rec.close()


def test_attack_a_copied_log_root_opens_no_challenge_of_another_run(tmp_path):
    """Attack 5 at the ledger: a second identity registers its own commitment
    to the task and posts the honest miner's log root, then answers its
    challenges with the honest miner's leaves and proofs. Each leaf names
    the run it was recorded for (docs/PROTOCOL.md section 10), so the ledger
    refuses it as an opening of the copier's challenge, and a leaf rewritten
    with the copier's run is not in the posted root: nothing opens, the
    challenge ends FAIL and the copier is slashable."""
    w = World(tmp_path)
    rec, run_id, root = w.train_honestly()
    copy = pot.Commitment(dict(json.loads(rec.commitment.to_json()), miner_identity=THIEF.hex()))
    thief_run = w.call("start_training_commitment", caller=THIEF.hex(), commitment=copy.encode().hex())["run_id"]
    w.call("post_checkpoint_root", caller=THIEF.hex(), run_id=thief_run, size=STEPS, root=root.hex(),
           consistency_proof="")  # accepted: a root is only a hash
    # The honest leaves, as the recorder wrote them (steps.jsonl): rebuilt
    # here, they give the honest root.
    with open(os.path.join(rec.checkpoint_dir, "steps.jsonl")) as f:
        lines = [json.loads(x) for x in f]
    bits = lambda h: struct.unpack(">d", bytes.fromhex(h))[0]  # noqa: E731
    honest = [pot.StepLeaf(rec.commitment.run_id, x["step"], pot.Digest(x["state_digest"]),
                           pot.Digest(x["stats_digest"]), bits(x["loss_bits"]), bits(x["update_norm_bits"]))
              for x in lines]
    log = pot.Tree()
    for leaf in honest:
        log.append(leaf.encode())
    assert log.root() == root
    issued = w.issue(thief_run)
    for cid, t in zip(issued["challenge_ids"], issued["steps"]):
        proof = log.inclusion_proof(t - 1, STEPS).hex()
        with pytest.raises(pot.InvalidArgumentError, match="is a step of run"):
            w.call("submit_opening", caller=THIEF.hex(), challenge_id=cid, manifest_digest="00" * 32,
                   step_leaf=honest[t - 1].encode().hex(), leaf_proof=proof)
        rewritten = dataclasses.replace(honest[t - 1], run_id=copy.run_id).encode()
        with pytest.raises(pot.ProofMismatchError):
            w.call("submit_opening", caller=THIEF.hex(), challenge_id=cid, manifest_digest="00" * 32,
                   step_leaf=rewritten.hex(), leaf_proof=proof)
    w.now += 100
    for cid in issued["challenge_ids"]:
        v = w.call("finalize_challenge", challenge_id=cid)
        assert (v["verdict"], v["reason"]) == ("fail", "no opening within the opening window")
    assert w.ledger.apply({"call": "run_info", "run_id": thief_run})["slashable"]
    assert not w.ledger.apply({"call": "run_info", "run_id": run_id})["slashable"]
    rec.close()


def test_attack_committed_norm_the_states_do_not_give_fails(tmp_path):
    """The committed norm: the cross-architecture check compares a replay's
    update norm with the one leaf t committed at training time, never with
    a value given after the challenge. A miner who commits a norm of its
    choosing (here 1.5 times the real one, as it would to make a substituted
    S_t look like one step of training) fails `committed_norm` in both
    paths: against the replayed S_t (bitwise) and against the served S_t
    (norm bucket), even off by one unit in the last place. The honest leaves
    pass both."""
    w = World(tmp_path)
    rec, run_id, root = w.train_honestly()
    for t in (1, 4):
        post = rec.state_path(t)
        r = pot.verify_step(rec.commitment, w.task.spec, w.program, t, STEPS, root, rec.serve(t, post_state=True),
                            rec.state_path(t - 1), post, mode=pot.VerifyMode.NORM_BUCKET)
        assert r.ok and r.committed_update_norm > 0, t
        with pot.Safetensors(rec.state_path(t - 1)) as a, pot.Safetensors(post) as b:
            assert r.committed_update_norm == pot.update_norm(a, b, "param/")
    for lie in (lambda t, n: 1.5 * n, lambda t, n: math.nextafter(n, math.inf)):
        commitment, forged_root, serve = served_run(
            w, str(tmp_path / f"liar-{lie(1, 1.0)}"), w.honest_states, w.honest_losses,
            s0_path=rec.state_path(0), commitment=rec.commitment, norm_of=lie)
        for t in (1, 4):
            manifest, pre = serve(t)
            with pytest.raises(pot.ProofMismatchError, match="commits to") as e:
                pot.verify_step(commitment, w.task.spec, w.program, t, STEPS, forged_root, manifest, pre)
            assert e.value.check == pot.OpeningCheck.COMMITTED_NORM, t
            assert e.value.result.replayed and e.value.result.replayed_state_digest == \
                e.value.result.committed_state_digest  # the state itself is the honest one
            with pytest.raises(pot.ProofMismatchError) as e:
                pot.verify_step(commitment, w.task.spec, w.program, t, STEPS, forged_root, manifest, pre,
                                serve.state_path(t), mode=pot.VerifyMode.NORM_BUCKET)
            assert e.value.check == pot.OpeningCheck.COMMITTED_NORM, t
            assert not e.value.result.replayed  # refused before the replay
    rec.close()


def test_attack_one_training_registered_by_two_identities(tmp_path):
    """Attack 5: a second identity registers the honest miner's run with only
    miner_identity changed and serves the honest states. Under a run-seeded
    task (docs/PROTOCOL.md 17.3) every run trains on its own sample order,
    seeded by task, miner and step count: the copied commitment is refused
    at start_training_commitment (its schedule root is the honest miner's
    order, not the thief's), and the thief's own commitment makes the copied
    states fail at `replayed_state` on every step, since S_{t-1} trained on
    the thief's batch t is not the honest S_t. Both miners' honest runs of
    the task pass."""
    w = World(tmp_path)
    task = pt.make_task(w.model, w.opt, w.task.spec, dataset_dir=w.data_dir, schedule=pt.RUN_SEEDED, steps=STEPS,
                        max_steps=STEPS + 2, end_height=END_HEIGHT, owner=OWNER, challenge_rounds=2)
    assert task.schedule_rule == "run_seeded" and w.task.schedule_rule == "listed"
    w.call("post_task", caller=OWNER.hex(), task=task.encode().hex())
    # Another miner, or another step count, is another order.
    honest_order, thief_order = task.run_schedule(MINER, STEPS), task.run_schedule(THIEF, STEPS)
    assert honest_order != thief_order and honest_order != task.run_schedule(MINER, STEPS + 1)[:STEPS]
    with pytest.raises(pot.OutOfRangeError):
        task.run_schedule(MINER, STEPS + 3)
    with pytest.raises(pot.InvalidArgumentError, match="listed schedule"):
        w.task.run_schedule(MINER, STEPS)

    def train(identity, directory, ledger=True):
        torch.manual_seed(0)
        model = Net(0.1)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        L = torch.optim.lr_scheduler
        sched = L.SequentialLR(opt, [L.LinearLR(opt, 0.25, 1.0, 2), L.CosineAnnealingLR(opt, STEPS - 2, 0.001)], [2])
        rec = pt.Recorder(model, opt, task, w.program, directory, dataset_dir=w.data_dir, steps=STEPS,
                          checkpoint_every=2, miner_identity=identity)
        assert rec.schedule == task.run_schedule(identity, STEPS)
        if ledger:
            run_id = w.call("start_training_commitment", caller=identity.hex(),
                            commitment=rec.commitment.encode().hex())["run_id"]
        states, losses = [], []
        for step in rec.schedule:
            rec.begin_step(step[0])
            batch = [w.samples[i] for i in step[0]]
            loss = model(torch.stack([b["x"] for b in batch]), torch.stack([b["y"] for b in batch]))
            loss.backward()
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            rec.end_step(loss)
            states.append({k: v.clone() for k, v in pt.canonical_state(model, opt).items()})
            losses.append(float(loss))
        root = rec.finish()
        if ledger:
            w.call("post_checkpoint_root", caller=identity.hex(), run_id=run_id, size=STEPS, root=root.hex(),
                   consistency_proof="")
        return rec, root, states, losses

    rec, root, states, losses = train(MINER, str(tmp_path / "honest"))
    for t in range(1, STEPS + 1):
        assert pot.verify_step(rec.commitment, task.spec, w.program, t, STEPS, root, rec.serve(t),
                               rec.state_path(t - 1)).ok, t
    # The honest commitment under the thief's name: refused, naming the schedule root.
    stolen = pot.Commitment(dict(json.loads(rec.commitment.to_json()), miner_identity=THIEF.hex()))
    with pytest.raises(pot.InvalidArgumentError, match="schedule_root is .*, the run-seeded schedule of this miner"):
        w.call("start_training_commitment", caller=THIEF.hex(), commitment=stolen.encode().hex())
    with pytest.raises(pot.InvalidArgumentError, match="schedule_root"):
        task.check_commitment(stolen)
    # The thief's own commitment (its order), serving the honest states: every step fails.
    theirs = task.commitment(THIEF, STEPS)
    w.call("start_training_commitment", caller=THIEF.hex(), commitment=theirs.encode().hex())
    commitment, copied_root, serve = served_run(w, str(tmp_path / "thief"), states, losses, task=task,
                                                s0_path=rec.state_path(0), commitment=theirs, schedule=thief_order)
    assert copied_root != root  # the leaves name the run: the copy needs a log of its own
    for t in range(1, STEPS + 1):
        manifest, pre = serve(t)
        with pytest.raises(pot.ProofMismatchError) as e:
            pot.verify_step(theirs, task.spec, w.program, t, STEPS, copied_root, manifest, pre)
        assert e.value.check == pot.OpeningCheck.REPLAYED_STATE, t
    # Training its own order is what the thief has to do; that run passes.
    mine, my_root, _, _ = train(THIEF, str(tmp_path / "retrained"), ledger=False)
    assert mine.commitment.encode() == theirs.encode()
    for t in range(1, STEPS + 1):
        assert pot.verify_step(mine.commitment, task.spec, w.program, t, STEPS, my_root, mine.serve(t),
                               mine.state_path(t - 1)).ok, t
    rec.close()
    mine.close()


def refused_at(w, commitment, root, serve, t, check, match=None):
    """verify_step of step t of a served run of the world's task fails at
    `check` (with a message matching `match`); returns the error (its
    .message, its .result)."""
    manifest, pre = serve(t)
    with pytest.raises(pot.ProofMismatchError, match=match) as e:
        pot.verify_step(commitment, w.task.spec, w.program, t, STEPS, root, manifest, pre)
    assert e.value.check == check, t
    return e.value


def thief_run_id(task):
    """The run id of the thief's commitment to `task` (served_run's default):
    its per-step seeds name it, so a miner fabricating that run seeds with it."""
    return pot.Commitment(dict(json_of(task), miner_identity=THIEF.hex(), declared_steps=STEPS)).run_id


def json_of(task):
    """The commitment fields a task fixes."""
    j = task.to_dict()
    return {"task_id": str(task.id), "initial_state_digest": j["initial_state"]["published_digest"],
            "schedule_root": j["schedule"]["listed_root"], "dataset_root": j["dataset_root"],
            "dataset_size": j["dataset_size"], "spec_digest": str(task.spec.digest())}


def test_attack_learning_rate_zero_fails_at_learning_rate(tmp_path):
    """Attack 2: the spec trains with a warm-up and cosine decay, but the
    miner runs every step after the first at learning rate 0: forward and
    backward passes whose update changes no weight (the loss falls only if
    the schedule of samples is ordered by a pre-trained model's loss). Every
    challenged step t >= 2 fails at `learning_rate` (S_{t-1} holds 0, the
    spec's schedule gives step t another rate), step 1 at `replayed_state`
    (the replay writes the spec's rate of step 2 into S_1), and the
    recorder refuses to record such a state."""
    w = World(tmp_path)
    weights = {n: p.detach().clone() for n, p in w.model.named_parameters()}
    states, losses = [], []
    for t, step in enumerate(w.schedule, start=1):
        torch.manual_seed(pot.seed(7, thief_run_id(w.task), t))
        batch = [w.samples[i] for i in step[0]]
        loss = w.model(torch.stack([b["x"] for b in batch]), torch.stack([b["y"] for b in batch]))
        loss.backward()
        w.opt.step()
        w.opt.zero_grad(set_to_none=True)
        w.opt.param_groups[0]["lr"] = 0.0  # the miner's rate from step 2 on
        states.append({k: v.clone() for k, v in pt.canonical_state(w.model, w.opt).items()})
        losses.append(float(loss))
    # Step 1 moved the weights; steps 2..n did not.
    assert any(not torch.equal(weights[n], states[0]["param/" + n]) for n in weights)
    assert all(torch.equal(states[0]["param/" + n], states[-1]["param/" + n]) for n in weights)
    # The task's S_0 (the world's fresh model, rebuilt from its seed) as the served pre-state of step 1.
    s0 = str(tmp_path / "S_0.safetensors")
    torch.manual_seed(0)
    fresh = Net(0.1)
    fresh_opt = torch.optim.SGD(fresh.parameters(), lr=0.05, momentum=0.9)
    L = torch.optim.lr_scheduler
    L.SequentialLR(fresh_opt, [L.LinearLR(fresh_opt, 0.25, 1.0, 2), L.CosineAnnealingLR(fresh_opt, STEPS - 2, 0.001)],
                   [2])
    with pt.state_writer(pt.canonical_state(fresh, fresh_opt)) as sw:
        sw.write(s0)
    assert str(pot.safetensors_digest_file(s0)) == w.task.to_dict()["initial_state"]["published_digest"]
    commitment, root, serve = served_run(w, str(tmp_path), states, losses, s0_path=s0)
    w.task.check_commitment(commitment)
    refused_at(w, commitment, root, serve, 1, pot.OpeningCheck.REPLAYED_STATE)
    for t in range(2, STEPS + 1):
        e = refused_at(w, commitment, root, serve, t, pot.OpeningCheck.LEARNING_RATE)
        assert f"hparam/lr = 0, the spec's learning-rate schedule gives step {t} the rate" in e.message
    # The recorder stops a loop whose rate is not the spec's at the first
    # step: the miner's rate 0 set after step 1 at end_step(1); a loop that
    # leaves the rate where it was (no scheduler step) before step 2 trains.
    for how in ("zero", "unstepped"):
        w2 = World(tmp_path / f"again-{how}")
        rec = pt.Recorder(w2.model, w2.opt, w2.task, w2.program, os.path.join(w2.tmp, "ckpt"),
                          dataset_dir=w2.data_dir, schedule=w2.schedule, miner_identity=MINER)
        rec.begin_step(w2.schedule[0][0])
        batch = [w2.samples[i] for i in w2.schedule[0][0]]
        w2.model(torch.stack([b["x"] for b in batch]), torch.stack([b["y"] for b in batch])).backward()
        w2.opt.step()
        if how == "zero":
            w2.opt.param_groups[0]["lr"] = 0.0
            with pytest.raises(pot.InvalidArgumentError, match="holds learning rate 0.0 after step 1"):
                rec.end_step(1.0)
        else:
            rec.end_step(1.0)
            with pytest.raises(pot.InvalidArgumentError, match="step 2 would train parameter group 0 at learning "
                                                                "rate 0.0125, the spec's schedule gives"):
                rec.begin_step(w2.schedule[1][0])
        rec.close()


def test_attack_non_finite_states_fail_at_every_challenged_step(tmp_path):
    """Attack 4: NaN weights after one real step, the remaining steps
    fabricated (a NaN compares like any other bits, so a replay of NaN
    reproduces NaN). Every challenged step after the NaN fails at
    `nonfinite`; the recorder and the task builder refuse such states."""
    w = World(tmp_path)

    def nan(state):
        state["param/body.0.weight"][0, 0] = float("nan")

    commitment, root, serve = forged_run(w, str(tmp_path), nan)
    w.task.check_commitment(commitment)  # a commitment the task admits: the forgery is in the log
    for t in range(2, STEPS + 1):
        manifest, pre = serve(t)
        with pytest.raises(pot.NonFiniteError) as e:
            pot.verify_step(commitment, w.task.spec, w.program, t, STEPS, root, manifest, pre)
        assert e.value.check == pot.OpeningCheck.NONFINITE, t
        assert "tensor 'param/body.0.weight' element 0 is NaN" in e.value.message
        # The commit layer alone (no LibTorch: a chain client) refuses it too.
        with pytest.raises(pot.NonFiniteError):
            pot.verify_opening(commitment, t, STEPS, root, manifest, pre)
    # The honest trainer is stopped at once: a NaN state is never recorded.
    w2 = World(tmp_path / "again")
    rec = w2.recorder_in_step_one()  # then the weight overwritten with an infinity
    with torch.no_grad():
        w2.model.body[0].weight[0, 0] = float("inf")
    with pytest.raises(pot.NonFiniteError, match="param/body.0.weight"):
        rec.end_step(1.0)
    with pytest.raises(pot.NonFiniteError, match="loss"):
        rec.end_step(float("nan"))
    rec.close()
    # A task cannot publish a non-finite S_0.
    with pytest.raises(pot.NonFiniteError, match="S_0"):
        pt.make_task(w2.model, w2.opt, w2.task.spec, dataset_dir=w2.data_dir, schedule=w2.schedule, end_height=END_HEIGHT, owner=OWNER)


def test_attack_subnormal_states_fail_before_any_replay(tmp_path):
    """Round 3, attack 7: a committed state of subnormal weights (1e-40)
    makes a replay many times slower on CPUs that take a microcode assist
    per subnormal operand (16-19x measured by the red team), and its forger
    computes nothing for it; a verifier killed by its timeout would count as
    silent. Check `subnormal` (docs/PROTOCOL.md 18) refuses such a served
    state before any replay reads it, blaming the miner, in the commit layer
    too (a chain client); the recorder refuses to record one and make_task
    to publish one. The same bound holds for the optimizer state (one
    element in 16), whose honest moments do pass through the subnormal
    range when a gradient stays zero."""
    w = World(tmp_path)

    def subnormal_weights(state):
        state["param/body.0.weight"].fill_(1e-40)

    commitment, root, serve = forged_run(w, str(tmp_path / "weights"), subnormal_weights)
    for t in (2, STEPS):
        manifest, pre = serve(t)
        with pytest.raises(pot.InvalidArgumentError) as e:
            pot.verify_step(commitment, w.task.spec, w.program, t, STEPS, root, manifest, pre)
        assert e.value.check == pot.OpeningCheck.SUBNORMAL, t
        assert f"served S_{t - 1}: " in e.value.message and "subnormal parameter values" in e.value.message
        assert "(tensor 'param/body.0.weight' first); at most 1 in 4096 is allowed" in e.value.message
        with pytest.raises(pot.InvalidArgumentError) as e:
            pot.verify_opening(commitment, t, STEPS, root, manifest, pre)
        assert e.value.check == pot.OpeningCheck.SUBNORMAL
    # Subnormal momentum buffers: bounded at one element in 64.
    w2 = World(tmp_path / "moments")

    def subnormal_moments(state):
        for name, t in state.items():
            if name.startswith("optim/") and t.is_floating_point() and t.numel() > 1:
                t.fill_(-1e-41)

    commitment, root, serve = forged_run(w2, str(tmp_path / "moments"), subnormal_moments)
    manifest, pre = serve(3)
    with pytest.raises(pot.InvalidArgumentError) as e:
        pot.verify_step(commitment, w2.task.spec, w2.program, 3, STEPS, root, manifest, pre)
    assert e.value.check == pot.OpeningCheck.SUBNORMAL
    assert "subnormal optimizer-state values" in e.value.message and "at most 1 in 16" in e.value.message
    # The honest trainer is stopped at once: such a state is never recorded.
    w3 = World(tmp_path / "again")
    rec = w3.recorder_in_step_one()
    with torch.no_grad():
        w3.model.body[0].weight.fill_(1e-40)
    with pytest.raises(pot.InvalidArgumentError, match="end_step: S_1: .* subnormal parameter values"):
        rec.end_step(1.0)
    rec.close()
    # A task cannot publish an S_0 of subnormal weights.
    with pytest.raises(pot.InvalidArgumentError, match="S_0 holds .* subnormal parameter values"):
        pt.make_task(w3.model, w3.opt, w3.task.spec, dataset_dir=w3.data_dir, schedule=w3.schedule,
                     end_height=END_HEIGHT, owner=OWNER)
    # The honest run of the same task verifies.
    w4 = World(tmp_path / "honest")
    rec, run_id, root = w4.train_honestly()
    assert pot.verify_step(rec.commitment, w4.task.spec, w4.program, 3, STEPS, root, rec.serve(3),
                           rec.state_path(2)).ok
    rec.close()


def test_attack_saturated_optimizer_state_in_s0_is_refused(tmp_path):
    """Attack 3: S_0 whose optimizer moments are so large that no gradient
    moves them (every later state computable without a backward pass). S_0
    must be the optimizer's fresh state: the task builder, the recorder and
    the replay of step 1 refuse optimizer state in it."""
    w = World(tmp_path)
    rec, run_id, root = w.train_honestly()
    # The honest run's step 1 verifies.
    assert pot.verify_step(rec.commitment, w.task.spec, w.program, 1, STEPS, root, rec.serve(1), rec.state_path(0)).ok
    rec.close()
    # After one optimizer step the optimizer holds state: not a fresh S_0.
    torch.manual_seed(0)
    model = Net(0.1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = torch.stack([w.samples[i]["x"] for i in range(BATCH)])
    y = torch.stack([w.samples[i]["y"] for i in range(BATCH)])
    model(x, y).backward()
    opt.step()
    for buf in (opt.state[p]["momentum_buffer"] for p in model.parameters()):
        buf.fill_(2.0 ** 63)
    with pytest.raises(pot.InvalidArgumentError, match="optimizer state"):
        pt.make_task(model, opt, w.task.spec, dataset_dir=w.data_dir, schedule=w.schedule, end_height=END_HEIGHT, owner=OWNER)
    # A task published by hand with that S_0: the replay of step 1 refuses it.
    opt.param_groups[0]["lr"] = w.task.spec.learning_rate(1)  # the forger takes care of the rate
    saturated = pt.canonical_state(model, opt)
    path = str(tmp_path / "saturated.safetensors")
    with pt.state_writer(saturated) as sw:
        sw.write(path)
    j = w.task.to_dict()
    j["initial_state"]["published_digest"] = str(pot.safetensors_digest_file(path))
    task = pot.Task(j)
    with pytest.raises(pot.InvalidArgumentError, match="optimizer state"):
        pt.Recorder(model, opt, task, w.program, str(tmp_path / "ck"), dataset_dir=w.data_dir, schedule=w.schedule)
    commitment, root, serve = forged_run(w, str(tmp_path), lambda state: None, task, path)
    manifest, pre = serve(1)
    with pytest.raises(pot.InvalidArgumentError) as e:
        pot.verify_step(commitment, task.spec, w.program, 1, STEPS, root, manifest, pre)
    assert e.value.check == pot.OpeningCheck.REPLAY
    assert "S_0 holds optimizer state" in e.value.message


def saturate(opt, keep=()):
    """What a forged step 1 leaves: the optimizer's moments (or momentum
    buffers) set so large that a gradient's share rounds away in float32;
    the parameters in `keep` left as trained."""
    g = torch.Generator().manual_seed(3)
    for p, st in opt.state.items():
        if any(p is k for k in keep):
            continue
        for k in ("exp_avg", "momentum_buffer"):
            if k in st:
                st[k].copy_(torch.where(torch.rand(st[k].shape, generator=g) < 0.5, -1.0, 1.0) * 2.0 ** 63)
        if "exp_avg_sq" in st:
            st["exp_avg_sq"].fill_(2.0 ** 126)


def saturated_run(w, tmp, live=None, hide_flags=False):
    """A miner that runs one backward pass, for step 1, forges S_1 with
    saturated optimizer state, and then makes every later S_t without a
    backward pass: a forward for the loss (under the run's seed, as the
    replay draws dropout), a zero gradient, the optimizer step. With `live`
    (a parameter), that parameter's state is left as trained and its true
    gradient computed in every step (the last bias: the forward and one
    node of the backward), the others' gradients zero."""
    run = thief_run_id(w.task)
    s0 = os.path.join(tmp, "S_0.safetensors")  # the task's published S_0
    with pt.state_writer(pt.canonical_state(w.model, w.opt)) as sw:
        sw.write(s0)
    states, losses = [], []
    for t, step in enumerate(w.schedule, start=1):
        x = torch.stack([w.samples[i]["x"] for i in step[0]])
        y = torch.stack([w.samples[i]["y"] for i in step[0]])
        torch.manual_seed(pot.seed(7, run, t))
        if t == 1:
            loss = w.model(x, y)
            loss.backward()
        elif live is not None:
            loss = w.model(x, y)
            (live_grad,) = torch.autograd.grad(loss, [live])
            for p in w.model.parameters():
                p.grad = live_grad if p is live else torch.zeros_like(p)
        else:
            with torch.no_grad():
                loss = w.model(x, y)
            for p in w.model.parameters():
                p.grad = torch.zeros_like(p)
        w.opt.step()
        w.sched.step()
        w.opt.zero_grad(set_to_none=True)
        if t == 1:
            saturate(w.opt, keep=() if live is None else (live,))
        states.append({k: v.clone() for k, v in pt.canonical_state(w.model, w.opt).items()})
        losses.append(float(loss))
    return served_run(w, tmp, states, losses, s0_path=s0, hide_flags=hide_flags)


@pytest.mark.parametrize("adam", [False, True], ids=["sgd-momentum", "adam"])
def test_attack_saturated_optimizer_state_after_a_forged_step_fails_gradient_ignored(tmp_path, adam):
    """Attack 3 after step 1: S_0 must be fresh, so the forger saturates the
    state it serves as S_1 and computes S_2..S_n from zero gradients (no
    backward pass). Step 1 fails at `replayed_state`; every later step
    replays bit for bit to the committed state and loss, and fails at
    `gradient_ignored` (check 27), in both comparison modes. The same task
    trained honestly passes every step, its gradient moving parameters."""
    honest = World(tmp_path / "honest", adam)
    rec, run_id, root = honest.train_honestly()
    for t in range(1, STEPS + 1):
        r = pot.verify_step(rec.commitment, honest.task.spec, honest.program, t, STEPS, root, rec.serve(t),
                            rec.state_path(t - 1))
        assert r.ok and not r.gradient.ignored and r.gradient.gradient_elements > 0, t
    rec.close()

    w = World(tmp_path / "forger", adam)
    commitment, root, serve = saturated_run(w, str(tmp_path))
    # The poisoning step is flagged by the run's own statistics (saturated
    # moments appear in S_1): the run seals with it and the ledger
    # challenges it for certain (docs/ledger.md 2.3), where it fails.
    assert serve.flagged[:1] == [1], serve.flagged
    refused_at(w, commitment, root, serve, 1, pot.OpeningCheck.REPLAYED_STATE)
    for t in range(2, STEPS + 1):
        r = refused_at(w, commitment, root, serve, t, pot.OpeningCheck.GRADIENT_IGNORED,
                       "a zero gradient gives the same").result
        # Every other check passed: the replay agrees with the forger bit for bit.
        assert r.replayed_state_digest == r.committed_state_digest and r.loss == r.committed_loss, t
        g = r.gradient
        assert g.ignored and g.gradient_elements == 0 and g.optim_gradient_elements == 0 and g.moved_elements > 0, t
    # Cross-architecture: the verifier's own replay from the served S_{t-1}.
    manifest, pre = serve(3)
    with pytest.raises(pot.ProofMismatchError) as e:
        pot.verify_step(commitment, w.task.spec, w.program, 3, STEPS, root, manifest, pre, serve.state_path(3),
                        pot.VerifyMode.NORM_BUCKET)
    assert e.value.check == pot.OpeningCheck.GRADIENT_IGNORED


def test_attack_one_live_tensor_does_not_excuse_the_others(tmp_path):
    """Round 3, attack 1's engine: after a forged step 1 the optimizer
    state of every tensor but one is saturated, and the forger computes the
    gradient of that one only (here the last bias: the forward and one node
    of the backward; in the red team's transformer, embedding, LayerNorm and
    head, ~9x cheaper than a step). The state as a whole keeps a trace of
    the gradient, so the rule "some element" passed. Check 27 per tensor
    fails every later step, naming the largest untraced tensor the gradient
    reached (body.0.weight: 96 elements; tensors under 64 elements are not
    held to it). Step 1 fails at `replayed_state`; the honest run passes
    every step (test above).

    Adam: its saturated update is lr per element, so the weights stay in
    range and their gradients stay non-zero. Saturated SGD momentum moves
    the weights by lr * 2^63, the tanh saturates and body.0.weight's
    gradient is exactly zero from step 3: a tensor the gradient does not
    reach is exempt from the rule (an honest zero-initialised gate gives
    such steps), so such a run passes check 27 from step 3; its moments
    saturating at step 1 and its weights' norm jumping at step 2 are
    flagged by the run's statistics, so those steps are challenged for
    certain (docs/PROTOCOL.md 5.3, docs/ledger.md 2.3), and a forger that
    hides the flags fails every step at check 32 `run_flags`."""
    w = World(tmp_path / "forger", True)
    live = w.model.body[-1].bias
    commitment, root, serve = saturated_run(w, str(tmp_path), live=live)
    assert serve.flagged[:1] == [1], serve.flagged
    refused_at(w, commitment, root, serve, 1, pot.OpeningCheck.REPLAYED_STATE)
    for t in range(2, STEPS + 1):
        r = refused_at(w, commitment, root, serve, t, pot.OpeningCheck.GRADIENT_IGNORED,
                       r"a zero gradient gives the same 'param/body.0.weight' \(96 elements\)").result
        # The replay agrees with the forger bit for bit, and the state as a
        # whole holds a trace (the live bias): only the per-tensor rule fails.
        assert r.replayed_state_digest == r.committed_state_digest and r.loss == r.committed_loss, t
        g = r.gradient
        assert g.ignored and g.gradient_elements + g.optim_gradient_elements > 0, t
    manifest, pre = serve(3)
    with pytest.raises(pot.ProofMismatchError, match="'param/body.0.weight'") as e:
        pot.verify_step(commitment, w.task.spec, w.program, 3, STEPS, root, manifest, pre, serve.state_path(3),
                        pot.VerifyMode.NORM_BUCKET)
    assert e.value.check == pot.OpeningCheck.GRADIENT_IGNORED


@pytest.mark.parametrize("adam", [False, True], ids=["sgd-momentum", "adam"])
def test_attack_a_forger_hiding_its_flagged_steps_fails_every_challenge(tmp_path, adam):
    """Round 3, attack 1, against the certain challenge: the forger of the
    saturated run above leaves its flagged steps out of its openings (and
    its seal), so that only the random draw could pick step 1. Every
    opening carries the run's tables (check 32 recomputes their flags), so
    every step fails at `run_flags` before any replay; with the flags
    listed but the run sealed on the ledger without them, every step fails
    the same way. The honest run flags nothing and passes (test above)."""
    w = World(tmp_path / "forger", adam)
    commitment, root, serve = saturated_run(w, str(tmp_path), hide_flags=True)
    assert serve.flagged[:1] == [1]
    for t in range(1, STEPS + 1):
        refused_at(w, commitment, root, serve, t, pot.OpeningCheck.RUN_FLAGS, "the manifest lists none")
    (tmp_path / "listed").mkdir()
    listed = World(tmp_path / "listed", adam)
    commitment, root, serve = saturated_run(listed, str(tmp_path / "listed"))
    commitment.set_sealed_flags([])
    for t in (2, STEPS):
        refused_at(listed, commitment, root, serve, t, pot.OpeningCheck.RUN_FLAGS, "the run sealed on the ledger with none")


def test_attack_a_poisoned_step_1_is_challenged_for_certain(tmp_path):
    """Round 3, attack 1 at the one step no flag can see: S_1 with a weight
    blown up 2^12 times (finite, nothing saturated), every later state S_1
    again. Step 1 is compared with an empty table (no leaf binds S_0's
    statistics), so the run's tables flag nothing and it seals with no
    flagged step; the ledger challenges step 1 anyway, whatever the draw
    (docs/ledger.md 2.4), and its replay from the task's S_0 fails at
    replayed_state. The honest run of the task passes (test above)."""
    w = World(tmp_path)
    s0 = str(tmp_path / "S_0.safetensors")  # the task's published S_0
    with pt.state_writer(pt.canonical_state(w.model, w.opt)) as sw:
        sw.write(s0)

    def blow_up(state):
        name = next(k for k in state if k.startswith("param/") and k.endswith("weight"))
        state[name].mul_(4096.0)

    commitment, root, serve = forged_run(w, str(tmp_path), blow_up, s0_path=s0)
    assert serve.flagged == []
    w.call("start_training_commitment", caller=THIEF.hex(), commitment=commitment.encode().hex())
    run_id = commitment.run_id.hex()
    w.call("post_checkpoint_root", caller=THIEF.hex(), run_id=run_id, size=STEPS, root=root.hex(),
           consistency_proof="", flagged_steps=[])
    issued = w.issue(run_id)
    drawn = issued["steps"][:2]  # the task's rounds
    # The draw follows the run id, which names the spec and so this
    # machine's hardware class: where it holds step 1 the certain challenge
    # adds none (the ledger's unit tests fix the draws: step 1 challenged
    # for certain when missed, Ledger.AFlaggedStepIsChallengedForCertain);
    # step 1 is challenged either way.
    assert issued["steps"] == (drawn if 1 in drawn else drawn + [1]), issued
    refused_at(w, commitment, root, serve, 1, pot.OpeningCheck.REPLAYED_STATE)


def test_a_run_whose_record_no_opening_can_carry_is_refused_after_one_step(tmp_path):
    """Every opening carries the run's record, each step's leaf and
    statistics table (docs/PROTOCOL.md 18), within the manifest's 256 MiB.
    A run of 600,000 steps of even this small state would need more, so no
    challenge of it could ever be opened: the recorder refuses it at its
    first end_step (POT_E_LIMIT, naming the most steps such a run may
    declare), not after the run is trained. The same state for that many
    steps records."""
    w = World(tmp_path)
    many = 600_000
    task = pt.make_task(w.model, w.opt, w.task.spec, dataset_dir=w.data_dir, schedule=pt.RUN_SEEDED_UNIFORM,
                        steps=many, end_height=END_HEIGHT, owner=OWNER, challenge_rounds=2)

    def first_step(steps, directory):
        torch.manual_seed(0)
        model = Net(0.1)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        L = torch.optim.lr_scheduler
        sched = L.SequentialLR(opt, [L.LinearLR(opt, 0.25, 1.0, 2), L.CosineAnnealingLR(opt, STEPS - 2, 0.001)], [2])
        rec = pt.Recorder(model, opt, task, w.program, str(tmp_path / directory), dataset_dir=w.data_dir,
                          steps=steps)
        rec.begin_step(rec.schedule[0][0])
        batch = [w.samples[i] for i in rec.schedule[0][0]]
        loss = model(torch.stack([b["x"] for b in batch]), torch.stack([b["y"] for b in batch]))
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        return rec, loss

    rec, loss = first_step(many, "too-long")
    with pytest.raises(pot.LimitError, match=r"every opening of the run carries its run record") as e:
        rec.end_step(loss)
    most = int(re.search(r"declares at most (\d+) steps", e.value.message).group(1))
    assert 100_000 < most < many, e.value.message
    assert rec.steps_recorded == 0  # nothing of the refused step is recorded


def test_the_recorder_says_at_once_which_steps_the_ledger_challenges_for_certain(tmp_path):
    """A miner learns of its flagged steps while it records, not at the seal:
    each flagged step is a RuntimeWarning naming the rule (it is challenged
    for certain), and the flagged step past the task's challenge rounds (2
    here) raises LimitError, since the ledger refuses to seal such a run
    (docs/ledger.md 2.3). Here the loop blows a weight up 4096 times after
    steps 2, 3 and 4; the honest run of the task warns of nothing (the
    tests above record it)."""
    w = World(tmp_path)
    rec = pt.Recorder(w.model, w.opt, w.task, w.program, str(tmp_path / "ckpt"), dataset_dir=w.data_dir,
                      schedule=w.schedule, miner_identity=MINER)
    weight = next(p for n, p in w.model.named_parameters() if n.endswith("weight"))
    for t, step in enumerate(w.schedule, start=1):
        loss = w.train_step(rec, step)
        if t >= 2:
            with torch.no_grad():
                weight.mul_(4096.0)
        if t == 1:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                rec.end_step(loss)
            assert not [m for m in seen if "flagged" in str(m.message)], [str(m.message) for m in seen]
        elif t < 4:
            with pytest.warns(RuntimeWarning, match=rf"step {t} is flagged by its statistics \((norm_jump|max_abs_jump)"):
                rec.end_step(loss)
        else:
            with pytest.raises(pot.LimitError, match="the run's flagged step 3, past the task's 2 challenge rounds"):
                rec.end_step(loss)
            break
    assert rec.steps_recorded == 4 and rec.flagged_steps() == [2, 3, 4]


class FileToucher(Net):
    """Attack 6: a forward that maps a file of the verifier's and writes it."""

    def __init__(self, victim: str):
        super().__init__()
        self.victim = victim

    def forward(self, x, y):
        hit = torch.from_file(self.victim, True, 4, dtype=torch.uint8)
        hit.fill_(0)
        return torch.nn.functional.cross_entropy(self.body(x), y) + hit.sum() * 0


class Printer(Net):
    def forward(self, x, y):
        print("the verifier runs my code")
        return torch.nn.functional.cross_entropy(self.body(x), y)


def test_attack_a_program_with_side_effects_is_refused_before_it_runs(tmp_path):
    """Attack 6: the model program is the miner's code, run by every
    verifier. A program that maps and overwrites a file during verify_step
    (torch.from_file(path, shared=True)), or prints, is refused when it is
    loaded, naming the operator and the method, before any of it runs; the
    recorder refuses it before training."""
    w = World(tmp_path)
    victim = tmp_path / "verifier-secret.bin"
    victim.write_bytes(b"AAAA")
    for model, op in ((FileToucher(str(victim)), "aten::from_file"), (Printer(), "prim::Print")):
        program = str(tmp_path / f"{type(model).__name__}.pt")
        pt.save_program(model, program)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=BATCH, seed=7, other_rng_use=True)
        with pytest.raises(pot.UnsupportedError) as e:
            pot.Replay(spec, program)
        assert op in e.value.message and "forward" in e.value.message, e.value.message
        task = pt.make_task(model, opt, spec, dataset_dir=w.data_dir, schedule=w.schedule, end_height=END_HEIGHT, owner=OWNER,
                            challenge_rounds=2)
        with pytest.raises(pot.UnsupportedError, match=op):
            pt.Recorder(model, opt, task, program, str(tmp_path / f"ck-{op}"), dataset_dir=w.data_dir,
                        schedule=w.schedule)
        # The verifier's check blames the task's program (check 30) and touches nothing.
        commitment, root, serve = forged_run(w, str(tmp_path / op), lambda state: None, task,
                                             str(tmp_path / "unused"))
        manifest, pre = serve(2)
        with pytest.raises(pot.UnsupportedError) as e:
            pot.verify_step(commitment, task.spec, program, 2, STEPS, root, manifest, pre)
        assert e.value.check == pot.OpeningCheck.TASK_PROGRAM
    assert victim.read_bytes() == b"AAAA"
    # The honest program of the same task loads.
    pot.Replay(w.task.spec, w.program).close()


class GradSwitch(Net):
    """Switches the thread's autograd mode, state outside the step's tensors
    (the replay's guard restores it after the step, an embedding
    application's own code between its calls would see it): the deny-list
    let it through (aten::set_grad_enabled is neither a file, printing,
    seeding nor RPC operator)."""

    def forward(self, x, y):
        torch.set_grad_enabled(False)
        loss = torch.nn.functional.cross_entropy(self.body(x), y)
        torch.set_grad_enabled(True)
        return loss


class NoGradBlock(Net):
    """A with-statement: TorchScript creates an object and runs its
    __enter__/__exit__ (prim::CreateObject, prim::Enter, prim::Exit)."""

    def forward(self, x, y):
        with torch.no_grad():
            z = x * 2
        return torch.nn.functional.cross_entropy(self.body(z), y)


def refused_when_loaded(tmp_path, model):
    """Saves `model` as a program under a spec without randomness; returns
    (program, optimizer, spec, the UnsupportedError pot.Replay raised)."""
    program = str(tmp_path / f"{type(model).__name__}.pt")
    pt.save_program(model, program)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=BATCH, seed_policy="none")
    with pytest.raises(pot.UnsupportedError) as e:
        pot.Replay(spec, program)
    return program, opt, spec, e.value


def test_attack_program_operators_outside_the_allow_list_are_refused(tmp_path):
    """Attack 6, by allow-list rather than deny-list: a prim:: operator that
    is not one of TorchScript's structural ones, or an ATen operator whose
    schema returns nothing and writes none of its arguments (its effect is
    elsewhere: grad mode, printing, seeding, threads), is refused when the
    program is loaded, naming the operator and the function. The honest
    program of the same task still loads."""
    w = World(tmp_path)
    cases = ((GradSwitch(), ("aten::set_grad_enabled",), "returns nothing and writes none of its arguments"),
             (NoGradBlock(), ("prim::CreateObject", "prim::Enter", "aten::set_grad_enabled"), "not allowed"))
    for model, ops, why in cases:
        error = refused_when_loaded(tmp_path, model)[3]
        assert any(op in error.message for op in ops) and why in error.message, error.message
    pot.Replay(w.task.spec, w.program).close()


class WhileOnData(Net):
    """Loops while a parameter's values say so: a served state with a huge
    weight (the miner's choice) keeps every verifier's replay spinning, and
    a verifier that gives up counts as silent instead of failing the step."""

    def forward(self, x, y):
        n = torch.zeros(())
        while bool(n < self.body[0].weight.abs().sum()):
            n = n + 1.0
        return torch.nn.functional.cross_entropy(self.body(x), y)


class RangeOfData(Net):
    def forward(self, x, y):
        h = self.body(x)
        for _ in range(int(self.body[0].bias.abs().sum())):
            h = h * 1.0
        return torch.nn.functional.cross_entropy(h, y)


class SizedByData(Net):
    def forward(self, x, y):
        pad = torch.zeros(int(self.body[0].weight.abs().max().item()))
        return torch.nn.functional.cross_entropy(self.body(x), y) + pad.sum()


class ArangeOfData(Net):
    def forward(self, x, y):
        steps = torch.arange(self.body[0].weight.abs().max().item())
        return torch.nn.functional.cross_entropy(self.body(x), y) + steps.sum() * 0


class Bincount(Net):
    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.body(x), y) + torch.bincount(y).sum() * 0


class RepeatByData(Net):
    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.body(x).repeat_interleave(y + 1, dim=0),
                                                 y.repeat_interleave(y + 1, dim=0))


class BoundedByShapes(Net):
    """What stays allowed: branches on tensor values (each is bounded),
    loops over a tensor's rows and over constant ranges, an LSTM."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(3, 3, batch_first=True)

    def forward(self, x, y):
        h = self.body(x)
        if bool(h.sum() > 0):
            h = h * 1.0
        rows = []
        for r in h.unbind(0):
            rows.append(r)
        h = torch.stack(rows)
        for _ in range(2):
            h = h + 0.0
        out, _ = self.rnn(h.unsqueeze(0))
        return torch.nn.functional.cross_entropy(out.squeeze(0), y)


def test_attack_a_served_state_cannot_decide_how_long_a_replay_runs(tmp_path):
    """Round 3, attack 7 beyond subnormals: the program is the task's, but
    the state it runs on is the miner's. A program whose loop count,
    condition or tensor sizes are computed from tensor values lets a forged
    S_{t-1} make every verifier's replay arbitrarily slow (or allocate
    without bound), so that a forged step ends INCONCLUSIVE for want of
    witnesses instead of FAIL. Such programs are refused when loaded, naming
    the operator and the rule; the recorder and every verifier load them
    the same way. Branches on tensor values, loops over rows and
    constant ranges, and an LSTM stay allowed."""
    w = World(tmp_path)
    cases = ((WhileOnData(), "prim::Loop", "condition is computed from tensor values"),
             (RangeOfData(), "prim::Loop", "trip count is computed from tensor values"),
             (SizedByData(), "aten::zeros", "argument 'size' from tensor values"),
             (ArangeOfData(), "aten::arange", "from tensor values"),
             (Bincount(), "aten::bincount", "size is its input's values"),
             (RepeatByData(), "aten::repeat_interleave", "repeats"))
    for model, op, why in cases:
        program, opt, spec, error = refused_when_loaded(tmp_path, model)
        assert op in error.message and why in error.message, error.message
        assert "not by the values of a state the miner serves" in error.message
        task = pt.make_task(model, opt, spec, dataset_dir=w.data_dir, schedule=pt.RUN_SEEDED, steps=STEPS,
                            end_height=END_HEIGHT, owner=OWNER, challenge_rounds=2)
        with pytest.raises(pot.UnsupportedError, match=re.escape(op)):
            pt.Recorder(model, opt, task, program, str(tmp_path / f"ck-{type(model).__name__}"),
                        dataset_dir=w.data_dir, steps=STEPS)
    torch.manual_seed(0)
    bounded = BoundedByShapes()
    program = str(tmp_path / "bounded.pt")
    pt.save_program(bounded, program)
    spec = pt.make_spec(torch.optim.SGD(bounded.parameters(), lr=0.05), program, dtype=torch.float32,
                        batch_size=BATCH, seed_policy="none")
    assert replay_step_one(w, bounded, spec, tmp_path, program=program)


class Noisy(Net):
    """Draws random numbers in its forward (input noise) whatever the spec says."""

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.body(x + 0.01 * torch.randn_like(x)), y)


class WithDropoutZero(Net):
    def __init__(self):
        super().__init__()
        self.drop = torch.nn.Dropout(0.0)

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.body(self.drop(x)), y)


class WithDropout(Net):
    def __init__(self, p: float):
        super().__init__()
        self.drop = torch.nn.Dropout(p)

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.body(self.drop(x)), y)


class FunctionalDropout(Net):
    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.body(torch.nn.functional.dropout(x, 0.3, self.training)), y)


class WithPut(Net):
    """Uses Tensor.put_, which has no deterministic implementation."""

    def forward(self, x, y):
        z = x.clone()
        z.put_(torch.tensor([0, 1]), torch.tensor([0.5, -0.5]))
        return torch.nn.functional.cross_entropy(self.body(z), y)


def replay_step_one(w, model, spec, tmp_path, s0_state=None, program=None):
    """Replays step 1 of the world's schedule for `model` under `spec`, from
    the model's fresh state (or s0_state); returns the result. The program
    is `program`, or `model` scripted."""
    if program is None:
        program = str(tmp_path / f"{type(model).__name__}-{spec.digest()}.pt")
        if not os.path.exists(program):
            pt.save_program(model, program)
    s0 = str(tmp_path / f"S0-{spec.digest()}.safetensors")
    state = s0_state if s0_state is not None else dict(pt.canonical_state(model, torch.optim.SGD(model.parameters(),
                                                                                                    lr=0.05)))
    state["hparam/lr"] = torch.tensor(spec.learning_rate(1), dtype=torch.float64)
    with pt.state_writer(state) as sw:
        sw.write(s0)
    entry = pot.ScheduleEntry(1, w.schedule[0]).encode(len(w.samples))
    batch = [open(os.path.join(w.data_dir, f"{i:06d}.safetensors"), "rb").read() for i in w.schedule[0][0]]
    with pot.Replay(spec, program) as r:
        return r.step(s0, entry, batch, run_id=hashlib.sha256(b"a run of the attack world").digest())


def first_step_refused(w, model, opt, rec, match):
    """Trains step 1 of `rec`'s schedule on `model` and expects end_step to
    refuse it with `match`."""
    rec.begin_step(rec.schedule[0][0])
    batch = [w.samples[i] for i in rec.schedule[0][0]]
    model(torch.stack([b["x"] for b in batch]), torch.stack([b["y"] for b in batch])).backward()
    opt.step()
    with pytest.raises(pot.InvalidArgumentError, match=match):
        rec.end_step(1.0)
    rec.close()


class SdpaDropout(Net):
    """Attention whose dropout probability is an argument of the attention
    operator (torch 2.x), as Hugging Face models call it."""

    def forward(self, x, y):
        q = x.unsqueeze(1)
        a = torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.3 if self.training else 0.0)
        return torch.nn.functional.cross_entropy(self.body(a.squeeze(1)), y)


def test_attack_a_traced_program_drops_out_at_another_probability(tmp_path):
    """A task declaring dropout 0.1 for a traced program dropping 0.25: a
    traced dropout module keeps no p, so its literal probability in the
    graph is what the replay compares (before the fix such a program could
    not be loaded at all). Refused when the program is loaded; under its
    honest spec the traced program replays step 1. And a probability given
    to the attention operator (scaled_dot_product_attention's dropout_p,
    torch 2.x) is compared too. A module traced in eval mode (no dropout
    in its graph) is refused when saved."""
    w = World(tmp_path)
    rng = dict(seed_policy="per_step", seed=3, dtype=torch.float32, batch_size=BATCH, intra_op_threads=1)
    first = [w.samples[i] for i in w.schedule[0][0]]
    example = {k: torch.stack([b[k] for b in first]) for k in ("x", "y")}
    models = [WithDropout(0.25)]
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        models.append(SdpaDropout())
    for model, p, op in zip(models, (0.25, 0.3), ("aten::dropout", "aten::scaled_dot_product_attention")):
        torch.manual_seed(0)
        model.train()
        program = str(tmp_path / f"traced-{type(model).__name__}.pt")
        pt.save_program(model, program, example=example)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        with pytest.raises(pot.InvalidArgumentError, match=f"forward calls {op} with p = {p}, the spec's dropout is "
                                                           "0.1"):
            replay_step_one(w, model, pt.make_spec(opt, program, dropout=0.1, **rng), tmp_path, program=program)
        assert replay_step_one(w, model, pt.make_spec(opt, program, dropout=p, **rng), tmp_path, program=program)
    # Traced in eval mode, the graph holds no dropout at all (and would
    # pass the check): refused when saved, naming the mode.
    model = WithDropout(0.25).eval()
    with pytest.raises(pot.InvalidArgumentError, match="WithDropout is in eval mode: a trace records the mode"):
        pt.save_program(model, str(tmp_path / "eval.pt"), example=example)


class DropoutNeverDrawn(Net):
    """Holds a dropout module (its p is the spec's) that its forward never calls."""

    def __init__(self):
        super().__init__()
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.body(x), y)


def declared_dropout(tmp_path, model, name):
    """`model` saved as the program `name`.pt, an SGD optimizer and a spec
    declaring dropout 0.1 under per-step seeds."""
    program = str(tmp_path / f"{name}.pt")
    pt.save_program(model, program)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=BATCH, dropout=0.1, seed_policy="per_step",
                        seed=3, intra_op_threads=1)
    return program, opt, spec


def test_attack_declared_dropout_never_drawn_is_refused(tmp_path):
    """Round 3, attack 3: a listed task (every run follows one schedule)
    whose program holds nn.Dropout(0.1) that the forward never calls. The
    spec declares dropout, so the task is accepted as drawing per-step
    randomness; the program draws nothing, so every run of the task is one
    trajectory and a second identity could post the first run's states.
    The replay now probes the generator whenever randomness is declared and
    refuses a step that drew none, naming the dropout; the recorder refuses
    step 1 while training. The same model calling its dropout replays."""
    w = World(tmp_path)
    torch.manual_seed(0)
    copyable = DropoutNeverDrawn()
    program, opt, spec = declared_dropout(tmp_path, copyable, "never-drawn")
    with pytest.raises(pot.InvalidArgumentError,
                       match="step 1: the spec declares dropout 0.1, but the program drew no random numbers"):
        replay_step_one(w, copyable, spec, tmp_path, program=program)
    listed = pt.make_task(copyable, opt, spec, dataset_dir=w.data_dir, schedule=w.schedule, end_height=END_HEIGHT,
                          owner=OWNER, challenge_rounds=2)
    rec = pt.Recorder(copyable, opt, listed, program, str(tmp_path / "ck-never-drawn"), dataset_dir=w.data_dir,
                      schedule=w.schedule)
    first_step_refused(w, copyable, opt, rec, "step 1 drew no random numbers, but the spec declares dropout 0.1")
    # Honest: the same layers with the dropout called, under the same spec.
    torch.manual_seed(0)
    honest = WithDropout(0.1)
    honest_program = str(tmp_path / "with-dropout.pt")
    pt.save_program(honest, honest_program)
    honest_spec = pt.make_spec(torch.optim.SGD(honest.parameters(), lr=0.05), honest_program, dtype=torch.float32,
                               batch_size=BATCH, dropout=0.1, seed_policy="per_step", seed=3, intra_op_threads=1)
    assert replay_step_one(w, honest, honest_spec, tmp_path, program=honest_program)


class DropoutDiscarded(Net):
    """Draws its dropout mask, as the spec says, and throws it away: the
    generator moves, so the RNG probe of the recorder and the replay passes,
    but the step is the same whatever the seed."""

    def __init__(self):
        super().__init__()
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x, y):
        self.drop(x)
        return torch.nn.functional.cross_entropy(self.body(x), y)


def test_attack_declared_dropout_drawn_and_discarded_is_blamed_on_the_task(tmp_path):
    """Round 3, attack 3, draw-and-discard: a listed task whose program
    draws its declared dropout and ignores it. Every run of the task is one
    trajectory: a second identity registers the honest run's states under
    its own commitment, and before 0.3.0 every copied step verified bit for
    bit. The verifier now replays a step of declared randomness a second time
    under another run's seeds; the same S_t is check 30 `task_program` (the
    task's fault, never counted against a miner), for the copy and the
    original alike, so neither earns a PASS. The world's program, whose
    dropout is used, verifies."""
    w = World(tmp_path)
    torch.manual_seed(0)
    model = DropoutDiscarded()
    program, opt, spec = declared_dropout(tmp_path, model, "discarded")
    task = pt.make_task(model, opt, spec, dataset_dir=w.data_dir, schedule=w.schedule, end_height=END_HEIGHT,
                        owner=OWNER, challenge_rounds=2)
    # The recorder's self-check probes the seed as verifiers do: the run is
    # refused at step 1, before it is trained (check 30's message).
    checked = pt.Recorder(model, opt, task, program, str(tmp_path / "ck-checked"), dataset_dir=w.data_dir,
                          schedule=w.schedule, miner_identity=MINER)
    first_step_refused(w, model, opt, checked, "step 1 replays to the same state under another run's seeds")
    # A miner that records without the self-check trains a run anyway.
    torch.manual_seed(0)
    model = DropoutDiscarded()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    rec = pt.Recorder(model, opt, task, program, str(tmp_path / "ck-discarded"), dataset_dir=w.data_dir,
                      schedule=w.schedule, miner_identity=MINER, self_check=False)
    states, losses = [], []
    for step in w.schedule:
        rec.begin_step(step[0])
        batch = [w.samples[i] for i in step[0]]
        loss = model(torch.stack([b["x"] for b in batch]), torch.stack([b["y"] for b in batch]))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        rec.end_step(loss)  # the recorder sees the generator move
        states.append({k: v.clone() for k, v in pt.canonical_state(model, opt).items()})
        losses.append(float(loss))
    root = rec.finish()
    copy = pot.Commitment(dict(json.loads(rec.commitment.to_json()), miner_identity=THIEF.hex()))
    commitment, copied_root, serve = served_run(w, str(tmp_path / "thief"), states, losses, task=task,
                                                s0_path=rec.state_path(0), commitment=copy)
    for t in range(1, STEPS + 1):
        for c, log_root, (manifest, pre) in ((copy, copied_root, serve(t)),
                                             (rec.commitment, root, (rec.serve(t), rec.state_path(t - 1)))):
            with pytest.raises(pot.InvalidArgumentError) as e:
                pot.verify_step(c, task.spec, program, t, STEPS, log_root, manifest, pre)
            assert e.value.check == pot.OpeningCheck.TASK_PROGRAM, (t, e.value.message)
            assert f"step {t} replays to the same state" in e.value.message
            assert "under another run's seeds" in e.value.message and "attack 3" in e.value.message
    rec.close()
    # The world's program uses its dropout: its honest run verifies, steps
    # replayed under the probe's seeds and all.
    honest, run_id, honest_root = w.train_honestly()
    for t in range(1, STEPS + 1):
        assert pot.verify_step(honest.commitment, w.task.spec, w.program, t, STEPS, honest_root, honest.serve(t),
                               honest.state_path(t - 1)).ok, t
    honest.close()


def test_attack_spec_fields_the_replay_never_read_are_enforced(tmp_path):
    """Attack 7: fields declared in the spec but never read by the replay.
    Each is now applied or checked, and a run that departs from it is
    refused by name: undeclared RNG use, declared RNG use the program does
    not make, another framework version,
    attention backend or hardware class (refused as not replayable here,
    never judged),
    parameters of another dtype, a single_seed S_0 whose generator is not
    the spec's seed's. The same program under its honest spec replays."""
    w = World(tmp_path)

    def spec_for(model, **kw):
        program = str(tmp_path / f"{type(model).__name__}.pt")
        pt.save_program(model, program)
        args = dict(dtype=torch.float32, batch_size=BATCH, seed_policy="none", intra_op_threads=1)
        args.update(kw)
        return pt.make_spec(torch.optim.SGD(model.parameters(), lr=0.05), program, **args)

    # Undeclared RNG use: dropout 0, other_rng_use false, yet the forward draws noise.
    torch.manual_seed(0)
    noisy = Noisy()
    with pytest.raises(pot.InvalidArgumentError, match="draws random numbers, but the spec declares no RNG use"):
        replay_step_one(w, noisy, spec_for(noisy), tmp_path)
    # The recorder refuses such a step while training, before recording it.
    spec = spec_for(noisy)
    # (A listed task must declare per-step randomness; this one gives each run its own order.)
    task = pt.make_task(noisy, torch.optim.SGD(noisy.parameters(), lr=0.05), spec, dataset_dir=w.data_dir,
                        schedule=pt.RUN_SEEDED, steps=STEPS, end_height=END_HEIGHT, owner=OWNER, challenge_rounds=2)
    opt = torch.optim.SGD(noisy.parameters(), lr=0.05)
    rec = pt.Recorder(noisy, opt, task, str(tmp_path / "Noisy.pt"), str(tmp_path / "ck-noisy"),
                      dataset_dir=w.data_dir, steps=STEPS)
    first_step_refused(w, noisy, opt, rec, "step 1 drew random numbers")
    # Declared, with a seed policy: it replays.
    assert replay_step_one(w, noisy, spec_for(noisy, other_rng_use=True, seed_policy="per_step", seed=3), tmp_path)
    # Dropout(p=0) draws nothing: a spec without RNG use is right for it.
    torch.manual_seed(0)
    quiet = WithDropoutZero()
    assert replay_step_one(w, quiet, spec_for(quiet), tmp_path)
    # Declared but unused: other_rng_use for a program that draws nothing.
    # A listed task is accepted only with per-step randomness (what tells its
    # runs apart); with this program every run would be one trajectory. The
    # replay refuses each step, the recorder the first one.
    unused = spec_for(quiet, other_rng_use=True, seed_policy="per_step", seed=3)
    with pytest.raises(pot.InvalidArgumentError, match="declares other_rng_use .dropout 0., but the program drew no"):
        replay_step_one(w, quiet, unused, tmp_path)
    opt = torch.optim.SGD(quiet.parameters(), lr=0.05)
    listed = pt.make_task(quiet, opt, unused, dataset_dir=w.data_dir, schedule=w.schedule, end_height=END_HEIGHT, owner=OWNER,
                          challenge_rounds=2)
    rec = pt.Recorder(quiet, opt, listed, str(tmp_path / "WithDropoutZero.pt"), str(tmp_path / "ck-unused"),
                      dataset_dir=w.data_dir, schedule=w.schedule)
    first_step_refused(w, quiet, opt, rec, "step 1 drew no random numbers")

    torch.manual_seed(0)
    model = Net()  # Dropout(p=0): a spec without RNG use is right for it
    honest = spec_for(model)
    assert replay_step_one(w, model, honest, tmp_path)
    # Another framework version, another attention backend: not replayable here.
    j = honest.to_dict()
    j["framework_version"] = "2.5.0"
    ours = ".".join(pot.framework_version().split(".")[:2])
    with pytest.raises(pot.UnsupportedError, match=f"framework_version '2.5.0': this verifier replays pytorch {ours}"):
        replay_step_one(w, model, pot.Spec(j), tmp_path)
    with pytest.raises(pot.UnsupportedError, match="attention_backend 'flash'"):
        replay_step_one(w, model, spec_for(model, attention_backend="flash"), tmp_path)
    # The recorder refuses both before training: every verifier would.
    for i, other in enumerate((pot.Spec(j), spec_for(model, attention_backend="flash"))):
        with pytest.raises(pot.UnsupportedError, match="recorder: every verifier of this build would refuse"):
            pot.Recorder(str(tmp_path / f"ck-unreplayable-{i}"), other, str(tmp_path / "Net.pt"), 1)
    # Another hardware class (section 14.4): ATen's capability or oneDNN's ISA
    # changes the bits, so the bitwise replay refuses a step of another class
    # rather than failing it, and the recorder refuses to train one. The
    # spec make_spec writes is this process's class.
    ours = pot.hardware_class()
    assert honest.to_dict()["hardware_class"] == ours
    aten = "default" if "/aten:default/" not in ours else "avx2"
    elsewhere = spec_for(model, hardware_class=ours.replace(ours.split("/")[1], "aten:" + aten))
    with pytest.raises(pot.UnsupportedError, match=f"hardware_class '{re.escape(elsewhere.to_dict()['hardware_class'])}'"
                                                   f": this process computes as '{re.escape(ours)}'"):
        replay_step_one(w, model, elsewhere, tmp_path)
    with pytest.raises(pot.UnsupportedError, match="recorder: this process would not train the spec's steps"):
        pot.Recorder(str(tmp_path / "ck-elsewhere"), elsewhere, str(tmp_path / "Net.pt"), 1)
    # A label of protocol version 1 is no class at all.
    with pytest.raises(pot.InvalidArgumentError, match="hardware_class 'cpu-x86_64': it has no '/aten:' part"):
        spec_for(model, hardware_class="cpu-x86_64")
    # The parameters are F32, the spec says F64.
    with pytest.raises(pot.InvalidArgumentError, match="is Float, the spec's dtype is F64"):
        replay_step_one(w, model, spec_for(model, dtype=torch.float64), tmp_path)
    # single_seed: S_0's generator must be torch.manual_seed(seed)'s.
    single = spec_for(model, seed_policy="single_seed", seed=7)
    state = dict(pt.canonical_state(model, torch.optim.SGD(model.parameters(), lr=0.05)))
    torch.manual_seed(7)
    state["rng/cpu"] = torch.get_rng_state()
    assert replay_step_one(w, model, single, tmp_path, dict(state))
    torch.manual_seed(8)
    state["rng/cpu"] = torch.get_rng_state()
    with pytest.raises(pot.InvalidArgumentError, match=r"not the generator state of torch.manual_seed\(7\)"):
        replay_step_one(w, model, single, tmp_path, dict(state))
    # dropout: the program's dropout modules and literal dropout probabilities
    # are the spec's (a task declaring 0.1 for a program dropping 0.25 is
    # refused when the program is loaded, by every verifier and the recorder).
    torch.manual_seed(0)
    dropped = WithDropout(0.25)
    rng = dict(seed_policy="per_step", seed=3)
    with pytest.raises(pot.InvalidArgumentError, match=r"module 'drop' \(Dropout\) has p = 0.25, the spec's dropout "
                                                       r"is 0.1"):
        replay_step_one(w, dropped, spec_for(dropped, dropout=0.1, **rng), tmp_path)
    assert replay_step_one(w, dropped, spec_for(dropped, dropout=0.25, **rng), tmp_path)
    torch.manual_seed(0)
    literal = FunctionalDropout()
    with pytest.raises(pot.InvalidArgumentError, match=r"calls aten::dropout_? with p = 0.3, the spec's dropout is 0.1"):
        replay_step_one(w, literal, spec_for(literal, dropout=0.1, **rng), tmp_path)
    assert replay_step_one(w, literal, spec_for(literal, dropout=0.3, **rng), tmp_path)
    # deterministic_algorithms is applied by the replay: Tensor.put_ has no
    # deterministic implementation, so under a spec that asks for one the
    # step cannot be replayed (and the recorder trains in the same mode).
    torch.manual_seed(0)
    putter = WithPut()
    assert replay_step_one(w, putter, spec_for(putter), tmp_path)
    with pytest.raises(pot.InvalidArgumentError, match="the forward failed: (.|\n)*put_ does not have a deterministic "
                                                       "implementation"):
        replay_step_one(w, putter, spec_for(putter, deterministic_algorithms=True), tmp_path)
    det = spec_for(putter, deterministic_algorithms=True)
    task = pt.make_task(putter, torch.optim.SGD(putter.parameters(), lr=0.05), det, dataset_dir=w.data_dir,
                        schedule=pt.RUN_SEEDED, steps=STEPS, end_height=END_HEIGHT, owner=OWNER, challenge_rounds=2)
    try:
        rec = pt.Recorder(putter, torch.optim.SGD(putter.parameters(), lr=0.05), task,
                          str(tmp_path / f"WithPut-{det.digest()}.pt"), str(tmp_path / "ck-det"),
                          dataset_dir=w.data_dir, steps=STEPS)
        assert torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(False)
        with pytest.raises(pot.StateError, match="use_deterministic_algorithms is False, the spec's "
                                                 "deterministic_algorithms is True"):
            rec.begin_step(rec.schedule[0][0])
        rec.close()
    finally:
        torch.use_deterministic_algorithms(False)


def test_the_recorder_commits_each_states_statistics_and_keeps_the_table(tmp_path):
    """Leaf t commits the digest of S_t's statistics table (docs/PROTOCOL.md
    5.2, 10); the recorder keeps the table in stats/, so anyone reads the
    flags of the run (5.3) without its states. The honest run trips none."""
    w = World(tmp_path, adam=True)
    rec, run_id, root = w.train_honestly()
    ckpt = os.path.join(str(tmp_path), "ckpt")
    with open(os.path.join(ckpt, "steps.jsonl")) as f:
        lines = [json.loads(x) for x in f]
    before = pot.state_stats(os.path.join(ckpt, "checkpoints", "%012d.safetensors" % 0))
    for t, line in enumerate(lines, 1):
        with open(os.path.join(ckpt, "stats", "%012d.stats" % t), "rb") as f:
            table = pot.StateStats(f.read())
        assert str(table.digest) == line["stats_digest"]
        path = str(tmp_path / f"s{t}.safetensors")
        with pt.state_writer(w.honest_states[t - 1]) as sw:
            sw.write(path)
        assert pot.state_stats(path) == table  # the table of the state the step produced
        assert pot.state_flags(before, table) == [], f"honest step {t} flagged"
        before = table
