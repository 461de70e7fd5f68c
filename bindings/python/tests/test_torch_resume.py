"""Crash and resume (docs/python.md "Crash and resume"): a recording process
killed with SIGKILL at random points (while it loads, trains, digests,
writes checkpoints or appends to the log) and started again with
Recorder(..., resume="auto") finishes a run whose log root is the
uninterrupted run's, and whose directory opens and serves like it: no leaf
lost or corrupted. POT_KILL_POINTS sets the number of kill points (default
50, about 15 s)."""
import copy
import json
import os
import random
import signal
import time

import pytest

torch = pytest.importorskip("torch")
import pot  # noqa: E402
import pot.torch as pt  # noqa: E402

if not pot.replay_available():
    pytest.skip("libpot was built without LibTorch", allow_module_level=True)

STEPS, EVERY, BATCH = 24, 4, 8
KILL_POINTS = int(os.environ.get("POT_KILL_POINTS", "50"))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(128, 1024)  # states of 6 MB with Adam's: writes take a while
        self.fc2 = torch.nn.Linear(1024, 4)

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.fc2(torch.relu(self.fc1(x))), y)


def fresh():
    """S_0, as the training script builds it every time it starts."""
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    return model, opt, sched


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    torch.set_num_threads(1)  # forked children: no OpenMP pool in the parent
    d = tmp_path_factory.mktemp("resume")
    g = torch.Generator().manual_seed(1)
    xs, ys = torch.randn(64, 128, generator=g), torch.randint(0, 4, (64,), generator=g)
    pt.write_dataset(({"x": xs[i], "y": ys[i]} for i in range(64)), d / "data")
    model, opt, sched = fresh()
    program = str(d / "program.pt")
    pt.save_program(model, program)
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=BATCH, seed_policy="none", scheduler=sched)
    task = pt.make_task(model, opt, spec, dataset_dir=d / "data", schedule="run_seeded", steps=STEPS,
                        owner=b"owner", end_height=10**6, challenge_rounds=2)
    return d, program, spec, task, xs, ys


def train_steps(rec, model, opt, sched, xs, ys, sched_every=1, stop_after=None):
    """The loop: from the step after the recorder's last to the end, the
    scheduler stepped after every sched_every-th step. Stops after step
    stop_after (before its scheduler step: the process ends there) and
    returns None; else finishes and returns the root."""
    for t in range(rec.steps_recorded + 1, STEPS + 1):
        idx = [i for mb in rec.schedule[t - 1] for i in mb]
        rec.begin_step(idx)
        loss = model(xs[idx], ys[idx])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        rec.end_step(loss)
        if t == stop_after:
            return None
        if t % sched_every == 0:
            sched.step()
    return rec.finish()


def train(setup, ckpt, ready_fd=None):
    """The training script: build S_0, record (resuming whatever the
    directory holds), train to the end. Returns the root."""
    d, program, _, task, xs, ys = setup
    model, opt, sched = fresh()
    rec = pt.Recorder(model, opt, task, program, ckpt, dataset_dir=d / "data", steps=STEPS, checkpoint_every=EVERY,
                      resume="auto", scheduler=sched)
    if ready_fd is not None:
        os.write(ready_fd, b"r")
    root = train_steps(rec, model, opt, sched, xs, ys)
    rec.close()
    return root


def in_child(fn):
    """Runs fn in a forked child; its exit status (0: fn returned)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fn()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status


def test_a_run_killed_anywhere_resumes_to_the_uninterrupted_root(setup, tmp_path):
    d = setup[0]
    reference = train(setup, str(tmp_path / "reference"))
    # How long a child takes to build its recorder and to train: the kill
    # points fall in both.
    r, w = os.pipe()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            train(setup, str(tmp_path / "timing"), w)
        finally:
            os._exit(0)
    os.read(r, 1)
    t_ready = time.monotonic() - t0
    os.waitpid(pid, 0)
    t_total = time.monotonic() - t0
    rng = random.Random(20261204)
    resumed_from = []
    for k in range(KILL_POINTS):
        ckpt = str(tmp_path / f"run{k}")
        # Some kills while the first process sets up, most while it trains
        # (digests, checkpoint writes, log appends); a second kill during
        # the resumed run every fourth time.
        kills = 2 if k % 4 == 3 else 1
        for _ in range(kills):
            delay = rng.uniform(0, t_ready) if rng.random() < 0.25 else t_ready + rng.uniform(0, t_total - t_ready)
            pid = os.fork()
            if pid == 0:
                try:
                    train(setup, ckpt)
                finally:
                    os._exit(0)
            time.sleep(delay)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        if os.path.exists(os.path.join(ckpt, "steps.jsonl")):
            with open(os.path.join(ckpt, "steps.jsonl"), "rb") as f:
                resumed_from.append(f.read().count(b"\n"))
        # Started again: it resumes (or starts afresh when the kill came
        # before the commitment) and finishes.
        out_r, out_w = os.pipe()

        def finish():
            os.write(out_w, train(setup, ckpt))

        assert in_child(finish) == 0, f"kill point {k}: the resumed run failed"
        root = os.read(out_r, 64)
        assert root == reference, f"kill point {k}: root {root.hex()} is not the uninterrupted {reference.hex()}"
        # The directory is whole: every leaf rebuilt from steps.jsonl is the
        # log's, and a re-derived state replays to the logged digest.
        with pot.Checkpoints(ckpt) as c:
            assert c.size == STEPS
            c.state_path(STEPS - 2, str(d / "data"))
    print(f"\nkill points {KILL_POINTS}: ready {t_ready:.3f} s, total {t_total:.3f} s, steps.jsonl lines at the kills {sorted(resumed_from)}")
    # The kills landed at many places of the run, not all before it.
    assert len(set(resumed_from)) >= min(4, KILL_POINTS // 4), resumed_from


def test_resume_refuses_what_no_crash_leaves(setup, tmp_path):
    ckpt = str(tmp_path / "run")
    train(setup, ckpt)
    d, program, _, task, _, _ = setup
    # A steps.jsonl line rewritten (not torn): the log contradicts it.
    path = os.path.join(ckpt, "steps.jsonl")
    lines = open(path).read().splitlines()
    record = json.loads(lines[2])
    record["loss_bits"] = "3ff0000000000000"  # 1.0
    lines[2] = json.dumps(record, separators=(",", ":"))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    model, opt, sched = fresh()
    with pytest.raises(pot.MalformedError, match="disagree at step 3"):
        pt.Recorder(model, opt, task, program, ckpt, dataset_dir=d / "data", steps=STEPS, checkpoint_every=EVERY,
                    resume=True, scheduler=sched)
    # Another run's directory is not resumed under this one's commitment.
    other = str(tmp_path / "other")
    train(setup, other)
    model, opt, sched = fresh()
    with pytest.raises(pot.ConflictError, match="another run"):
        pt.Recorder(model, opt, task, program, other, dataset_dir=d / "data", steps=STEPS, checkpoint_every=EVERY,
                    resume=True, miner_identity=b"somebody else", scheduler=sched)
    # No commitment: nothing to resume (resume="auto" starts afresh instead).
    os.makedirs(tmp_path / "empty")
    model, opt, sched = fresh()
    with pytest.raises(pot.NotFoundError):
        pt.Recorder(model, opt, task, program, str(tmp_path / "empty"), dataset_dir=d / "data", steps=STEPS,
                    resume=True)


def test_a_per_epoch_scheduler_resumes_where_its_epoch_was(setup, tmp_path):
    """A loop stepping its scheduler once per epoch of 3 steps (make_spec
    lr_every=3), stopped after step 6 (an epoch's last step, before its
    scheduler step) and resumed from checkpoint 4: the scheduler is put back
    at epoch 4 // 3 and the run ends at the uninterrupted root."""
    d, program, _, _, xs, ys = setup
    per_epoch = 3

    def build():
        torch.manual_seed(0)
        model = Net()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        return model, opt, torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    model, opt, sched = build()
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=BATCH, seed_policy="none", scheduler=sched,
                        lr_every=per_epoch)
    task = pt.make_task(model, opt, spec, dataset_dir=d / "data", schedule="run_seeded", steps=STEPS,
                        owner=b"owner", end_height=10**6, challenge_rounds=2)

    started = []

    def run(ckpt, stop_after=None):
        model, opt, sched = build()
        rec = pt.Recorder(model, opt, task, program, ckpt, dataset_dir=d / "data", steps=STEPS,
                          checkpoint_every=EVERY, resume="auto", scheduler=sched)
        started.append((rec.steps_recorded, sched.last_epoch, opt.param_groups[0]["lr"]))
        root = train_steps(rec, model, opt, sched, xs, ys, sched_every=per_epoch, stop_after=stop_after)
        rec.close()
        return root

    want = run(str(tmp_path / "whole"))
    assert run(str(tmp_path / "cut"), stop_after=6) is None
    assert run(str(tmp_path / "cut")) == want
    # Resumed after checkpoint 4: epoch 1 of the scheduler, the rate of step 5.
    assert started[2] == (4, 1, spec.learning_rate(5)) and spec.learning_rate(5) == 1e-3 * 0.5


def test_a_resumed_loop_training_from_another_state_is_refused_at_its_first_step(setup, tmp_path):
    """The recorder resumed from checkpoint 4 loads S_4 into the model; the
    loop then loads its own checkpoint of step 6 over it (a mistake a
    framework's resume makes the same way) and trains step 5 from there.
    The first step a resumed process records is self-checked as step 1 is:
    refused at step 5, naming the resume. The same loop without the stale
    load resumes and ends at the uninterrupted root, its step 5 checked."""
    d, program, _, task, xs, ys = setup
    own = {}

    def run(ckpt, stop_after=None, load_own=False):
        model, opt, sched = fresh()
        rec = pt.Recorder(model, opt, task, program, ckpt, dataset_dir=d / "data", steps=STEPS,
                          checkpoint_every=EVERY, resume="auto", scheduler=sched)
        if load_own:
            model.load_state_dict(own["model"])
        try:
            root = train_steps(rec, model, opt, sched, xs, ys, stop_after=stop_after)
            own["model"] = copy.deepcopy(model.state_dict())  # the loop's own checkpoint
            return root
        finally:
            rec.close()

    want = run(str(tmp_path / "whole"))
    assert run(str(tmp_path / "cut"), stop_after=6) is None
    with pytest.raises(pot.InvalidArgumentError, match=r"self-check of step 5: replaying it from S_4 .*gives another "
                                                       r"S_5: \d+ tensors differ .*The usual causes: this process "
                                                       r"resumed from checkpoint 4"):
        run(str(tmp_path / "cut"), load_own=True)
    assert run(str(tmp_path / "cut")) == want


def _warmup_cosine(opt):
    L = torch.optim.lr_scheduler
    return L.SequentialLR(opt, [L.LinearLR(opt, start_factor=0.1, total_iters=10),
                                L.CosineAnnealingLR(opt, T_max=15, eta_min=1e-5)], milestones=[10])


def _three_phases(opt):
    L = torch.optim.lr_scheduler
    return L.SequentialLR(opt, [L.ConstantLR(opt, factor=0.5, total_iters=3), L.ExponentialLR(opt, gamma=0.9),
                                L.StepLR(opt, step_size=3, gamma=0.5)], milestones=[8, 16])


@pytest.mark.parametrize("composite, checkpoints", [(_warmup_cosine, (4, 8, 12, 16, 20)),
                                                    (_three_phases, (8, 12, 16, 20))],
                         ids=["warmup-cosine", "three-phases"])
def test_a_sequential_scheduler_resumes_in_every_phase(setup, tmp_path, composite, checkpoints):
    """A SequentialLR (the composite scheduler docs/python.md lists) resumed
    from checkpoints inside each phase and at each milestone: the recorder
    puts back the SequentialLR and the scheduler of the phase it was in
    (each holds a position of its own; before, the inner ones restarted
    their schedules and step c+2 was refused for its rate), and every
    resumed run ends at the uninterrupted root."""
    d, program, _, _, xs, ys = setup

    def build():
        torch.manual_seed(0)
        model = Net()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        return model, opt, composite(opt)

    model, opt, sched = build()
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=BATCH, seed_policy="none", scheduler=sched)
    task = pt.make_task(model, opt, spec, dataset_dir=d / "data", schedule="run_seeded", steps=STEPS,
                        owner=b"owner", end_height=10**6, challenge_rounds=2)

    def run(ckpt, stop_after=None):
        model, opt, sched = build()
        rec = pt.Recorder(model, opt, task, program, ckpt, dataset_dir=d / "data", steps=STEPS,
                          checkpoint_every=EVERY, resume="auto", scheduler=sched)
        try:
            return train_steps(rec, model, opt, sched, xs, ys, stop_after=stop_after)
        finally:
            rec.close()

    want = run(str(tmp_path / "whole"))
    for c in checkpoints:
        ckpt = str(tmp_path / f"cut-{c}")
        assert run(ckpt, stop_after=c + 1) is None  # killed after step c+1: resumes from checkpoint c
        # What a kill inside the self-check's write or the steps file's
        # leaves (a temporary file of up to a whole state): removed.
        left = [os.path.join(ckpt, f"self-check-{c + 1:012d}.safetensors.tmp-pot.4242.0"),
                os.path.join(ckpt, "steps.jsonl.tmp-pot.4242.1")]
        for f in left:
            with open(f, "wb") as out:
                out.write(b"\0" * 4096)
        assert run(ckpt) == want, c
        assert not any(os.path.exists(f) for f in left), os.listdir(ckpt)
    # A composite the recorder is not given restarts its schedule on
    # resuming: refused at the first step whose rate differs, naming the
    # resume.
    ckpt = str(tmp_path / "not-given")
    assert run(ckpt, stop_after=13) is None
    model, opt, sched = build()
    rec = pt.Recorder(model, opt, task, program, ckpt, dataset_dir=d / "data", steps=STEPS, checkpoint_every=EVERY,
                      resume="auto")
    try:
        with pytest.raises(pot.InvalidArgumentError, match=r"begin_step: step \d+ would train .* This process "
                                                           r"resumed from checkpoint 12: the scheduler passed"):
            train_steps(rec, model, opt, sched, xs, ys)
    finally:
        rec.close()
