"""Attacks on what a PASS means, rebuilt through the public API with the
reference ledger and real PyTorch training (docs/security.md section 5).
Each attack must fail at its named check while the same run built honestly
passes."""
import os

import pytest

torch = pytest.importorskip("torch")
import pot  # noqa: E402
import pot.torch as pt  # noqa: E402

if not pot.replay_available():
    pytest.skip("libpot was built without LibTorch", allow_module_level=True)

STEPS, BATCH = 6, 4
OWNER, MINER, THIEF = b"task owner", b"honest miner", b"lazy miner"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))

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
    """A task owner's task on a reference ledger, and an honest run of it."""

    def __init__(self, tmp):
        self.tmp = str(tmp)
        self.ledger = pot.Ledger(commit_window=5, reveal_window=5, quorum=1, max_rounds=8)
        self.now = 100
        torch.manual_seed(0)
        torch.set_num_threads(1)
        self.samples = data()
        self.data_dir = os.path.join(self.tmp, "data")
        pt.write_dataset(self.samples, self.data_dir)
        self.program = os.path.join(self.tmp, "program.pt")
        self.model = Net()
        pt.save_program(self.model, self.program)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9)
        spec = pt.make_spec(self.opt, self.program, dtype=torch.float32, batch_size=BATCH, seed=7)
        self.schedule = [[[(BATCH * t + i) % len(self.samples) for i in range(BATCH)]] for t in range(STEPS)]
        self.task = pt.make_task(self.model, self.opt, spec, dataset_dir=self.data_dir, schedule=self.schedule,
                                 owner=OWNER, challenge_rounds=2)
        self.call("post_task", caller=OWNER.hex(), task=self.task.encode().hex())

    def call(self, name, **args):
        return self.ledger.apply({"call": name, "now": self.now, **args})

    def train_honestly(self):
        rec = pt.Recorder(self.model, self.opt, self.task, self.program, os.path.join(self.tmp, "ckpt"),
                          dataset_dir=self.data_dir, schedule=self.schedule, checkpoint_every=2,
                          miner_identity=MINER)
        run_id = self.call("start_training_commitment", caller=MINER.hex(),
                           commitment=rec.commitment.encode().hex())["run_id"]
        for step in self.schedule:
            rec.begin_step(step[0])
            batch = [self.samples[i] for i in step[0]]
            loss = self.model(torch.stack([b["x"] for b in batch]), torch.stack([b["y"] for b in batch]))
            loss.backward()
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
            rec.end_step(loss)
        root = rec.finish()
        self.call("post_checkpoint_root", caller=MINER.hex(), run_id=run_id, size=STEPS, root=root.hex(),
                  consistency_proof="")
        return rec, run_id, root


def test_honest_run_of_the_task_passes(tmp_path):
    w = World(tmp_path)
    rec, run_id, root = w.train_honestly()
    issued = w.call("issue_challenge", run_id=run_id, beacon=b"block 200".hex())
    assert len(issued["steps"]) == 2  # the task's rounds, not the caller's
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
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=1, seed=7)
    own = pt.make_task(trivial, opt, spec, dataset_dir=os.path.join(thief_dir, "data"), schedule=[[[0]]] * 20000,
                       owner=THIEF, challenge_rounds=2)
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

    # Everything its own: the first field the task fixes is named.
    refused(pot.InvalidArgumentError, "initial_state_digest is")
    # The task's S_0, schedule and data, but its own program and spec.
    copied = {"initial_state_digest": fixed["initial_state"]["published_digest"],
              "schedule_root": fixed["schedule"]["listed_root"], "dataset_root": fixed["dataset_root"],
              "dataset_size": fixed["dataset_size"]}
    refused(pot.InvalidArgumentError, "spec_digest is", **copied)
    # Everything the task's, but 20,000 steps of it.
    refused(pot.OutOfRangeError, "declared_steps 20000 is outside 6..6",
            spec_digest=str(w.task.spec.digest()), **copied)
    # The recorder refuses it too, before training: the trivial model is not the task's S_0.
    with pytest.raises(pot.InvalidArgumentError, match="initial_state_digest"):
        pt.Recorder(trivial, opt, w.task, program, os.path.join(thief_dir, "ckpt"),
                    dataset_dir=os.path.join(thief_dir, "data"), schedule=[[[0]]] * STEPS, miner_identity=THIEF)
    # A task of its own can be posted, but it is another task id: a run of it
    # answers to nobody's task but the thief's.
    assert w.call("post_task", caller=THIEF.hex(), task=own.encode().hex())["task_id"] != str(w.task.id)
