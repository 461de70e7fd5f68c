"""Training loops as people write them, and the mistakes that make a run
unverifiable, caught while recording (docs/python.md "Self-checks"): each
pitfall is a loop that trains without complaint and would fail every
verifier; the recorder must name it at step 1 (or at the first step after a
checkpoint), and the honest loop must still record and verify."""
import os
import struct
import subprocess
import sys
import textwrap
from typing import Tuple

import pytest

torch = pytest.importorskip("torch")
import pot  # noqa: E402
import pot.torch as pt  # noqa: E402

if not pot.replay_available():
    pytest.skip("libpot was built without LibTorch", allow_module_level=True)

STEPS, BATCH = 6, 4


class Classifier(torch.nn.Module):
    """A model as most code writes it: forward returns logits."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class LogitsAndLoss(torch.nn.Module):
    """A model returning (logits, loss), as small GPT repositories do."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x, y):
        logits = self.fc(x)
        return logits, torch.nn.functional.cross_entropy(logits, y)


class Recurrent(torch.nn.Module):
    """A recurrent cell whose hidden state the loop may carry."""

    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(8, 8)
        self.rec = torch.nn.Linear(8, 8)
        self.out = torch.nn.Linear(8, 3)

    def step(self, x, h):
        h = torch.tanh(self.inp(x) + self.rec(h))
        return self.out(h), h

    def forward(self, x, y):
        logits, _ = self.step(x, torch.zeros(x.shape[0], 8))
        return torch.nn.functional.cross_entropy(logits, y)


class LstmLM(torch.nn.Module):
    """A recurrent model as language-model examples write it: the hidden
    state goes in and comes out, and the loop carries it to the next batch."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.rnn = torch.nn.LSTM(8, 8, batch_first=True)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x, hidden: Tuple[torch.Tensor, torch.Tensor]):
        out, hidden = self.rnn(torch.tanh(self.proj(x)).unsqueeze(1), hidden)
        return self.head(out[:, -1]), hidden


class GruLM(torch.nn.Module):
    """The same with one state tensor."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(8, 8, batch_first=True)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x, h):
        out, h = self.rnn(x.unsqueeze(1), h)
        return self.head(out[:, -1]), h


def data(tmp):
    g = torch.Generator().manual_seed(5)
    xs, ys = torch.randn(24, 8, generator=g), torch.randint(0, 3, (24,), generator=g)
    pt.write_dataset(({"x": xs[i], "y": ys[i]} for i in range(24)), os.path.join(tmp, "data"))
    schedule = [[[(t * BATCH + j) % 24 for j in range(BATCH)]] for t in range(STEPS)]
    return xs, ys, schedule


def make_run(tmp, program_module, model_for_recorder=None, lr=0.05, scheduler=None, every=3, self_check=True,
             sched_factory=None, **spec_kw):
    """Program, spec, task and recorder for a plain SGD loop."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    os.makedirs(tmp, exist_ok=True)
    xs, ys, schedule = data(tmp)
    program = os.path.join(tmp, "program.pt")
    pt.save_program(program_module, program)
    opt = torch.optim.SGD(program_module.parameters(), lr=lr, momentum=0.9)
    sched = sched_factory(opt) if sched_factory else None
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=BATCH, seed_policy="none", scheduler=sched,
                        **spec_kw)
    task = pt.make_task(program_module, opt, spec, dataset_dir=os.path.join(tmp, "data"), schedule="run_seeded",
                        steps=STEPS, owner=b"owner", end_height=10**6, challenge_rounds=2)
    rec = pt.Recorder(model_for_recorder or program_module, opt, task, program, os.path.join(tmp, "ckpt"),
                      dataset_dir=os.path.join(tmp, "data"), steps=STEPS, checkpoint_every=every,
                      self_check=self_check)
    return rec, opt, sched, xs, ys, spec, program


def batch(rec, xs, ys, t):
    idx = [i for mb in rec.schedule[t - 1] for i in mb]
    return idx, xs[idx], ys[idx]


def test_a_model_returning_logits_is_saved_with_its_loss_and_verifies(tmp_path):
    # Saved as it is, the model's forward takes x and returns logits: the
    # recorder names it before training.
    with pytest.raises(pot.InvalidArgumentError, match=r"forward takes \(x\), the samples hold \(x, y\).*with_loss"):
        make_run(str(tmp_path / "as-is"), Classifier())
    # Saved with its loss, the same loop records and verifies.
    model = Classifier()
    program_module = pt.with_loss(model, torch.nn.functional.cross_entropy, target="y")
    rec, opt, _, xs, ys, spec, program = make_run(str(tmp_path / "run"), program_module)
    for t in range(1, STEPS + 1):
        idx, x, y = batch(rec, xs, ys, t)
        rec.begin_step(idx)
        loss = torch.nn.functional.cross_entropy(model(x), y)  # the loop is unchanged
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        rec.end_step(loss)
    root = rec.finish()
    for t in (2, 5):
        r = pot.verify_step(rec.commitment, spec, program, t, STEPS, root, rec.serve(t), rec.state_path(t - 1))
        assert r.ok, t
    rec.close()


def test_a_model_returning_logits_and_loss_uses_an_output_index(tmp_path):
    model = LogitsAndLoss()
    with pytest.raises(pot.InvalidArgumentError, match="output=1"):
        pt.save_program(model, str(tmp_path / "p.pt"))
    program_module = pt.with_loss(model, output=1)
    rec, opt, _, xs, ys, _, _ = make_run(str(tmp_path / "run"), program_module)
    for t in range(1, 3):
        idx, x, y = batch(rec, xs, ys, t)
        rec.begin_step(idx)
        _, loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        rec.end_step(loss)  # the self-check of step 1 replays it
    rec.close()


def test_the_inner_model_handed_to_the_recorder_is_refused_at_construction(tmp_path):
    model = Classifier()
    program_module = pt.with_loss(model, torch.nn.CrossEntropyLoss(), target="y")
    with pytest.raises(pot.InvalidArgumentError, match="with_loss") as e:
        make_run(str(tmp_path / "run"), program_module, model_for_recorder=model)
    assert "param/model.fc1.weight" in str(e.value)


def test_a_forward_that_does_not_return_a_scalar_is_caught_at_step_1(tmp_path):
    class Mean(torch.nn.Module):
        # Returns one tensor, but not a scalar: the program saves, and the
        # replay of step 1 names it.
        def __init__(self):
            super().__init__()
            self.model = Classifier()

        def forward(self, x, y):
            return torch.nn.functional.cross_entropy(self.model(x), y, reduction="none")

    program_module = Mean()
    rec, opt, _, xs, ys, _, _ = make_run(str(tmp_path / "run"), program_module)
    idx, x, y = batch(rec, xs, ys, 1)
    rec.begin_step(idx)
    loss = program_module(x, y).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    with pytest.raises(pot.InvalidArgumentError, match="self-check of step 1: .*scalar"):
        rec.end_step(loss)
    with pytest.raises(pot.StateError, match="stopped"):
        rec.begin_step()
    rec.close()


def test_a_learning_rate_set_by_hand_is_refused_before_the_step(tmp_path):
    model = Recurrent()
    rec, opt, _, xs, ys, _, _ = make_run(str(tmp_path / "run"), model, lr=0.05)
    for t in range(1, 3):
        lr = 0.05 * t / 2  # warm-up code at the top of the loop
        for g in opt.param_groups:
            g["lr"] = lr
        idx, x, y = batch(rec, xs, ys, t)
        with pytest.raises(pot.InvalidArgumentError, match="learning rate 0.025.* gives 0.05"):
            rec.begin_step(idx)
        break
    rec.close()


def test_a_scheduler_stepped_per_epoch_is_refused_before_the_step_its_rate_differs(tmp_path):
    model = Recurrent()
    rec, opt, sched, xs, ys, _, _ = make_run(
        str(tmp_path / "run"), model, sched_factory=lambda o: torch.optim.lr_scheduler.StepLR(o, 1, gamma=0.5))
    idx, x, y = batch(rec, xs, ys, 1)
    rec.begin_step(idx)
    model(x, y).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    rec.end_step(1.0)  # S_1 holds the spec's rate of step 2
    # The loop steps its scheduler at the end of an epoch, not here: the
    # spec (stepped after every step) trains step 2 at half the rate.
    idx, x, y = batch(rec, xs, ys, 2)
    with pytest.raises(pot.InvalidArgumentError, match="learning rate 0.05, the spec's schedule gives 0.025.*lr_every"):
        rec.begin_step(idx)
    rec.close()


def record_all(rec, opt, xs, ys, set_rate=None, after_step=None):
    """The loop: a rate set by hand before each step, or a scheduler hook
    after each; every step recorded."""
    for t in range(1, STEPS + 1):
        if set_rate:
            for g in opt.param_groups:
                g["lr"] = set_rate(t - 1)
        idx, x, y = batch(rec, xs, ys, t)
        rec.begin_step(idx)
        loss = rec.model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        rec.end_step(loss)
        if after_step:
            after_step(t)
    return rec.finish()


def verify_all(rec, spec, program, root):
    for t in range(1, STEPS + 1):
        r = pot.verify_step(rec.commitment, spec, program, t, STEPS, root, rec.serve(t), rec.state_path(t - 1))
        assert r.ok, (t, r.failed_check, r.message)


def warmup_lr(it, lr=0.05, warmup=2, decay=5, min_lr=0.005):
    """nanoGPT-style rate set at the top of the loop."""
    import math
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay:
        return min_lr
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * (it - warmup) / (decay - warmup))) * (lr - min_lr)


def test_a_rate_set_by_hand_records_and_verifies_with_its_rates_in_the_spec(tmp_path):
    rates = [warmup_lr(it) for it in range(STEPS)]
    rec, opt, _, xs, ys, spec, program = make_run(str(tmp_path / "run"), Recurrent(), every=2, rates=rates)
    assert spec.learning_rates(1, STEPS) == rates
    root = record_all(rec, opt, xs, ys, set_rate=warmup_lr)
    verify_all(rec, spec, program, root)
    # S_t holds the rate of step t + 1, as a verifier replays it.
    with pot.Safetensors(rec.state_path(3)) as f:
        assert struct.unpack("<d", f.tensor_data("hparam/lr"))[0] == rates[3]
    rec.close()


def test_a_miner_training_at_a_rate_of_its_own_is_refused_at_that_step(tmp_path):
    # The attack: the task's table, but a loop that trains step 3 at rate 0
    # (parameters frozen, paid for nothing) or at another rate.
    rates = [warmup_lr(it) for it in range(STEPS)]
    for bad in (0.0, rates[2] * 2):
        rec, opt, _, xs, ys, _, _ = make_run(str(tmp_path / f"run-{bad}"), Recurrent(), rates=rates)
        with pytest.raises(pot.InvalidArgumentError, match=f"step 3 would train parameter group 0 at learning rate "
                                                            f"{bad!r}"):
            record_all(rec, opt, xs, ys, set_rate=lambda it: bad if it == 2 else warmup_lr(it))
        assert rec.steps_recorded == 2
        rec.close()
    # Set after begin_step, the rate escapes the check before the step, not
    # the one after it.
    rec, opt, _, xs, ys, _, _ = make_run(str(tmp_path / "late"), Recurrent(), rates=rates)
    idx, x, y = batch(rec, xs, ys, 1)
    for g in opt.param_groups:
        g["lr"] = rates[0]
    rec.begin_step(idx)
    for g in opt.param_groups:
        g["lr"] = 0.0
    rec.model(x, y).backward()
    opt.step()
    with pytest.raises(pot.InvalidArgumentError, match="holds learning rate 0.0 after step 1"):
        rec.end_step(1.0)
    with pytest.raises(pot.StateError, match="the recorder stopped: .*holds learning rate 0.0"):
        rec.begin_step()
    assert rec.steps_recorded == 0
    rec.close()


def test_a_scheduler_stepped_per_epoch_records_and_verifies_with_lr_every(tmp_path):
    per_epoch = 2
    rec, opt, sched, xs, ys, spec, program = make_run(
        str(tmp_path / "run"), Recurrent(), every=3, lr_every=per_epoch,
        sched_factory=lambda o: torch.optim.lr_scheduler.StepLR(o, 1, gamma=0.5))
    assert spec.learning_rates(1, STEPS) == [0.05, 0.05, 0.025, 0.025, 0.0125, 0.0125]
    root = record_all(rec, opt, xs, ys, after_step=lambda t: sched.step() if t % per_epoch == 0 else None)
    verify_all(rec, spec, program, root)
    rec.close()


def test_a_lambda_scheduler_records_and_verifies(tmp_path):
    def factor(step):  # a linear warm-up then decay, as Hugging Face's default schedule
        return step / 2 if step < 2 else max(0.0, (STEPS - step) / (STEPS - 2))
    rec, opt, sched, xs, ys, spec, program = make_run(
        str(tmp_path / "run"), Recurrent(), steps=STEPS,
        sched_factory=lambda o: torch.optim.lr_scheduler.LambdaLR(o, factor))
    root = record_all(rec, opt, xs, ys, after_step=lambda t: sched.step())
    verify_all(rec, spec, program, root)
    rec.close()


def test_state_carried_between_batches_is_caught_at_the_first_step_after_a_checkpoint(tmp_path):
    model = Recurrent()
    rec, opt, _, xs, ys, _, _ = make_run(str(tmp_path / "run"), model, every=1, self_check="checkpoints")
    h = torch.zeros(BATCH, 8)
    with pytest.raises(pot.InvalidArgumentError, match="self-check of step 2: .*carried from batch to batch"):
        for t in range(1, STEPS + 1):
            idx, x, y = batch(rec, xs, ys, t)
            rec.begin_step(idx)
            logits, h = model.step(x, h)  # the hidden state crosses batches
            h = h.detach()
            loss = torch.nn.functional.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            rec.end_step(loss)
    assert rec.steps_recorded == 2  # step 1 started from zeros, as the program does
    rec.close()


def test_the_same_module_saves_to_the_same_digest_in_every_process(tmp_path):
    """TorchScript lists a module's constants in the order of a Python set
    (by string hash, a per-process seed); the weights are random. Neither
    reaches the file, scripted or traced."""
    (tmp_path / "netdef.py").write_text(textwrap.dedent('''
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
                self.bn = torch.nn.BatchNorm2d(4)
                self.fc = torch.nn.Linear(4, 3)
            def forward(self, x):
                return self.fc(self.bn(self.conv(x)).mean((2, 3)))
    '''))
    script = textwrap.dedent(f'''
        import sys, torch
        sys.path.insert(0, {str(tmp_path)!r})
        import pot.torch as pt
        from netdef import Net
        program = pt.with_loss(Net(), torch.nn.functional.cross_entropy, target="y")
        print(pt.save_program(program, sys.argv[1]).hex())
        # Traced (save_program(example=)): the same module, the same file.
        example = dict(x=torch.randn(2, 1, 5, 5), y=torch.tensor([0, 2]))
        print(pt.save_program(program, sys.argv[1] + ".traced", example=example).hex())
    ''')
    digests = set()
    for seed in ("1", "2", "3"):
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path / f"p{seed}.pt")], capture_output=True,
                             text=True, env={**os.environ, "PYTHONHASHSEED": seed})
        assert out.returncode == 0, out.stderr
        digests.add(tuple(out.stdout.split()))
    assert len(digests) == 1 and len(set(next(iter(digests)))) == 2, digests


def test_the_same_module_saves_to_the_same_digest_whatever_the_process_did_before_and_wherever_it_lives(tmp_path):
    """TorchScript names a module's type after its class and mangles the
    name when the process already made a type of that name (the same class
    traced before, or scripted with another constant), and keeps the
    source's file path and lines (the whole call stack of a trace) in the
    archive. A task owner saving the program again after other work, or
    from a copy of the code in another directory, got another digest, so
    another task. None of them reaches the file."""
    netdef = textwrap.dedent('''
        import torch
        class Net(torch.nn.Module):
            def __init__(self, p=0.1):
                super().__init__()
                self.fc = torch.nn.Linear(4, 3)
                self.drop = torch.nn.Dropout(p)
            def forward(self, x):
                return self.drop(self.fc(x))
    ''')
    script = textwrap.dedent('''
        import sys, torch
        sys.path.insert(0, sys.argv[1])
        import pot.torch as pt
        from netdef import Net
        def save(path):
            torch.manual_seed(0)
            program = pt.with_loss(Net(), torch.nn.functional.cross_entropy, target="y")
            example = dict(x=torch.randn(2, 4), y=torch.tensor([0, 2]))
            return (pt.save_program(program, path).hex(),
                    pt.save_program(program, path + ".traced", example=example).hex())
        if sys.argv[3] == "after-other-work":
            torch.jit.script(Net(0.5))
            torch.jit.trace(Net(), (torch.randn(2, 4),), check_trace=False)
            pt.save_program(pt.with_loss(Net(0.3), torch.nn.functional.cross_entropy, target="y"), sys.argv[2])
            save(sys.argv[2])
        print(*save(sys.argv[2]))
    ''')
    digests = set()
    for where, history in (("a", "fresh"), ("b/c", "fresh"), ("a", "after-other-work")):
        (tmp_path / where).mkdir(parents=True, exist_ok=True)
        (tmp_path / where / "netdef.py").write_text(netdef)
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path / where), str(tmp_path / "p.pt"), history],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-3000:]
        digests.add(tuple(out.stdout.split()))
    assert len(digests) == 1 and len(set(next(iter(digests)))) == 2, digests


def test_a_torchscript_error_names_the_class_and_the_line(tmp_path):
    (tmp_path / "baddef.py").write_text(textwrap.dedent('''
        import torch
        class Bad(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 3)
            def forward(self, x):
                d = {1: x, "a": x}
                return self.fc(x).sum()
    '''))
    sys.path.insert(0, str(tmp_path))
    try:
        from baddef import Bad
        with pytest.raises(pot.InvalidArgumentError) as e:
            pt.save_program(Bad(), str(tmp_path / "p.pt"))
    finally:
        sys.path.remove(str(tmp_path))
    msg = str(e.value)
    assert "baddef.py:3" in msg and "line 8" in msg, msg


class Indexed(torch.utils.data.Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return i


@pytest.mark.parametrize("workers,persistent", [(0, False), (2, False), (2, True)])
def test_plan_schedule_draws_what_the_loader_draws_epoch_after_epoch(workers, persistent):
    """The planned batches are the ones the loop then gets, over four epochs;
    with persistent workers, epochs after the first draw no new base seed
    (the planner used to assume they did: a ConflictError from epoch 2)."""
    loader = torch.utils.data.DataLoader(Indexed(), batch_size=3, shuffle=True, drop_last=True, num_workers=workers,
                                         persistent_workers=persistent, generator=torch.Generator().manual_seed(4))
    plan = pt.plan_schedule(loader, 12)
    got = []
    while len(got) < 12:
        for b in loader:
            got.append([[int(i) for i in b]])
    assert got == plan
    # Planning again after the loop has iterated (a persistent iterator
    # exists): still the batches it draws next.
    plan = pt.plan_schedule(loader, 6)
    got = []
    while len(got) < 6:
        for b in loader:
            got.append([[int(i) for i in b]])
    assert got[:6] == plan


def test_plan_schedule_of_a_loop_that_stops_at_the_loader_s_length():
    """A loop that ends each epoch after len(loader) batches without asking
    for the next (Lightning's Trainer) leaves the RandomSampler's last draw
    (the permutation of its empty remainder) undone: from the second epoch
    on it draws another order than a `for b in loader` loop. Planned with
    stops_at_length=True, the plan is what such a loop draws; the default
    plan is what the `for` loop draws, and the two differ."""
    def loader():
        return torch.utils.data.DataLoader(Indexed(), batch_size=3, shuffle=True, drop_last=True,
                                           generator=torch.Generator().manual_seed(4))
    steps, stopping = 9, loader()
    got = []
    while len(got) < steps:
        for _, b in zip(range(len(stopping)), stopping):  # never asks for a fourth batch
            got.append([[int(i) for i in b]])
    assert pt.plan_schedule(loader(), steps, stops_at_length=True) == got
    assert pt.plan_schedule(loader(), steps) == _drawn(loader(), steps) != got
    assert got[:3] == _drawn(loader(), 3)  # the first epoch is the same


def _drawn(loader, steps, set_epoch=None):
    """The batches a loop draws, epoch after epoch (calling set_epoch as a
    DistributedSampler loop does)."""
    got, epoch = [], 0
    while len(got) < steps:
        if set_epoch:
            set_epoch(epoch)
        epoch += 1
        for b in loader:
            got.append([[int(i) for i in b]])
    return got[:steps]


@pytest.mark.parametrize("kind", ["with_replacement", "subset", "weighted", "batch_sampler"])
def test_plan_schedule_follows_the_random_samplers(kind):
    """RandomSampler with replacement, SubsetRandomSampler,
    WeightedRandomSampler, and a BatchSampler over one: planned ahead, then
    drawn by the loop, the same batches over several epochs."""
    g = torch.Generator().manual_seed(11)
    if kind == "with_replacement":
        sampler = torch.utils.data.RandomSampler(Indexed(), replacement=True, num_samples=7, generator=g)
    elif kind == "subset":
        sampler = torch.utils.data.SubsetRandomSampler([1, 3, 5, 7, 9, 2], generator=g)
    else:
        sampler = torch.utils.data.WeightedRandomSampler([1.0] * 5 + [3.0] * 5, 8, generator=g)
    if kind == "batch_sampler":
        loader = torch.utils.data.DataLoader(
            Indexed(), batch_sampler=torch.utils.data.BatchSampler(sampler, batch_size=2, drop_last=True))
    else:
        loader = torch.utils.data.DataLoader(Indexed(), batch_size=2, sampler=sampler, drop_last=True)
    plan = pt.plan_schedule(loader, 10)
    assert _drawn(loader, 10) == plan
    # Without a generator the sampler draws from the global RNG, which the
    # seed policy owns: refused, naming the sampler.
    free = torch.utils.data.RandomSampler(Indexed(), replacement=True, num_samples=4)
    with pytest.raises(pot.InvalidArgumentError, match="RandomSampler without a generator"):
        pt.plan_schedule(torch.utils.data.DataLoader(Indexed(), batch_size=2, sampler=free), 2)


def test_plan_schedule_follows_a_distributed_sampler_across_epochs():
    """A DistributedSampler shuffles by seed and epoch: each rank's plan is
    the batches its loop draws when it calls set_epoch(e) every epoch (the
    planner used to plan every epoch as the first: a ConflictError at the
    second)."""
    for rank in (0, 1):
        sampler = torch.utils.data.distributed.DistributedSampler(Indexed(), num_replicas=2, rank=rank, seed=3,
                                                                  drop_last=True)
        loader = torch.utils.data.DataLoader(Indexed(), batch_size=2, sampler=sampler, drop_last=True)
        plan = pt.plan_schedule(loader, 8)
        assert sampler.epoch == 0  # restored
        assert _drawn(loader, 8, sampler.set_epoch) == plan
        assert plan[0] != plan[2]  # epoch 1 is another permutation than epoch 0
    # The two ranks split the data: disjoint within an epoch.
    ranks = [pt.plan_schedule(torch.utils.data.DataLoader(
        Indexed(), batch_size=2, drop_last=True,
        sampler=torch.utils.data.distributed.DistributedSampler(Indexed(), num_replicas=2, rank=r, seed=3)), 2)
        for r in (0, 1)]
    assert not {i for s in ranks[0] for mb in s for i in mb} & {i for s in ranks[1] for mb in s for i in mb}


def test_plan_function_is_the_schedule_of_a_plain_function():
    def windows(seed, t):
        g = torch.Generator().manual_seed(seed * 1000 + t)
        return torch.randint(100, (4,), generator=g).tolist()

    plan = pt.plan_function(windows, 5, seed=9, microbatches=2)
    assert [i for mb in plan[2] for i in mb] == windows(9, 3)
    assert all(len(mb) == 2 for step in plan for mb in step)
    with pytest.raises(pot.InvalidArgumentError, match="step 1"):
        pt.plan_function(lambda s, t: [1, 2, 3], 2, seed=0, microbatches=2)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_a_hidden_state_declared_as_carried_records_and_verifies(tmp_path, kind):
    # The loop carried `hidden` itself; declared to with_loss, the program
    # holds it as buffers that every S_t records, and each step replays from
    # the state it started with.
    model = LstmLM() if kind == "lstm" else GruLM()
    zeros = torch.zeros(1, BATCH, 8)
    init = (zeros, zeros) if kind == "lstm" else zeros
    program_module = pt.with_loss(model, torch.nn.functional.cross_entropy, target="y", carry=init)
    rec, opt, _, xs, ys, spec, program = make_run(str(tmp_path / "run"), program_module, every=2,
                                                  self_check="checkpoints")
    root = record_all(rec, opt, xs, ys)
    verify_all(rec, spec, program, root)
    with pot.Safetensors(rec.state_path(STEPS)) as f:
        assert "buffer/carry_0" in f.names and ("buffer/carry_1" in f.names) == (kind == "lstm")
        assert f.tensor_data("buffer/carry_0") != bytes(4 * 8 * BATCH)  # the state moved
    rec.close()


def test_a_carried_state_reset_between_steps_is_caught_by_the_self_check(tmp_path):
    # Resetting the carried state between steps (at an epoch start, say) is
    # a change no step makes: the step after it does not replay.
    program_module = pt.with_loss(GruLM(), torch.nn.functional.cross_entropy, target="y",
                                  carry=torch.zeros(1, BATCH, 8))
    rec, opt, _, xs, ys, _, _ = make_run(str(tmp_path / "run"), program_module, every=1, self_check="checkpoints")

    def reset(t):
        if t == 3:
            program_module.carry_0.zero_()
    with pytest.raises(pot.InvalidArgumentError, match="self-check of step 4: .*buffer/carry_0"):
        record_all(rec, opt, xs, ys, after_step=reset)
    rec.close()


def test_with_loss_refuses_a_carry_it_cannot_hold():
    with pytest.raises(pot.InvalidArgumentError, match="tensor or a tuple of tensors"):
        pt.with_loss(GruLM(), torch.nn.functional.cross_entropy, target="y", carry=[])
    with pytest.raises(pot.InvalidArgumentError, match="both element 1"):
        pt.with_loss(GruLM(), torch.nn.functional.cross_entropy, target="y", carry=torch.zeros(1), output=1)


def test_a_moving_average_of_the_weights_records_and_verifies(tmp_path):
    # with_loss(ema=) keeps an EMA of every parameter as buffers; the
    # Recorder runs the program's pot_after_step at end_step and the replay
    # runs it after the optimizer update, so S_t holds it bit for bit.
    model = Classifier()
    decay = 0.9
    program_module = pt.with_loss(model, torch.nn.functional.cross_entropy, target="y", ema=decay)
    rec, opt, _, xs, ys, spec, program = make_run(str(tmp_path / "run"), program_module, every=2,
                                                  self_check="checkpoints")
    ema = pt.ema_parameters(program_module)
    assert list(ema) == [n for n, _ in model.named_parameters()]
    want = {n: p.detach().clone() for n, p in model.named_parameters()}
    for t in range(1, STEPS + 1):
        idx, x, y = batch(rec, xs, ys, t)
        rec.begin_step(idx)
        loss = torch.nn.functional.cross_entropy(model(x), y)  # the loop calls the model as before
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        rec.end_step(loss)
        for n, p in model.named_parameters():  # the same average, computed here
            want[n].mul_(decay).add_(p.detach(), alpha=1.0 - decay)
    assert all(torch.equal(ema[n], want[n]) for n in want)
    verify_all(rec, spec, program, rec.finish())
    with pot.Safetensors(rec.state_path(STEPS)) as f:
        assert f.tensor_data("buffer/ema_0") == want["fc1.weight"].numpy().tobytes()
    rec.close()


class RestoresWeights(torch.nn.Module):
    """The attack: an after-step hook that undoes the update (the step then
    trains nothing after check 27 has seen the gradient move it)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)
        self.register_buffer("keep", torch.zeros(3, 8))

    def forward(self, x, y):
        self.keep.copy_(self.fc.weight.detach())
        return torch.nn.functional.cross_entropy(self.fc(x), y)

    @torch.jit.export
    def pot_after_step(self) -> None:
        self.fc.weight.copy_(self.keep)


class BadHook(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.fc(x), y)

    @torch.jit.export
    def pot_after_step(self, scale: float) -> None:
        self.fc.weight.mul_(scale)


def test_an_after_step_hook_may_write_buffers_only(tmp_path):
    model = RestoresWeights()
    rec, opt, _, xs, ys, _, _ = make_run(str(tmp_path / "run"), model)
    with pytest.raises(pot.InvalidArgumentError, match="self-check of step 1: .*pot_after_step wrote parameter "
                                                       "'fc.weight': it may write the program's buffers only"):
        record_all(rec, opt, xs, ys)
    rec.close()
    with pytest.raises(pot.InvalidArgumentError, match="pot_after_step must take no argument besides self"):
        make_run(str(tmp_path / "bad"), BadHook())


def test_a_loop_checks_the_batch_it_trains_on_before_the_forward(tmp_path):
    """Recorder.check_batch, what the framework callbacks call: a loop whose
    loader gives tensors rather than indices compares them with the
    committed batch. A batch of another order (a miner's own choice) is
    refused at step 1, by name of the tensor that differs; tensors the
    program does not take, or a tuple of the wrong length, are named too;
    the committed batch, as a mapping or in the forward's order, passes."""
    model = Classifier()
    program_module = pt.with_loss(model, torch.nn.functional.cross_entropy, target="y")
    rec, opt, _, xs, ys, _, _ = make_run(str(tmp_path / "run"), program_module)
    assert rec.input_names == ["x", "y"]
    idx, x, y = batch(rec, xs, ys, 1)
    rec.check_batch({"x": x, "y": y})
    rec.check_batch((x, y))
    # (Labels changed, and the samples of step 2: both differ from step 1's
    # whatever the run's schedule draws.)
    with pytest.raises(pot.StateError, match=r"check_batch: step 1: the batch is not the committed schedule's "
                                             r"\('y' differs\)"):
        rec.check_batch((x, (y + 1) % 3))
    _, x2, y2 = batch(rec, xs, ys, 2)
    with pytest.raises(pot.StateError, match=r"'x' differs"):
        rec.check_batch({"x": x2, "y": y2})
    with pytest.raises(pot.InvalidArgumentError, match=r"the batch holds \(mask, x, y\), the program takes \(x, y\)"):
        rec.check_batch({"x": x, "y": y, "mask": torch.ones(len(idx))})
    with pytest.raises(pot.InvalidArgumentError, match=r"the batch is a tuple of 3, not a mapping of the program's "
                                                       r"inputs \(x, y\)"):
        rec.check_batch((x, y, y))
    rec.begin_step(idx)
    rec.check_batch((x, y))  # the step begun
    with pytest.raises(pot.StateError, match="step 2: the batch is not the committed"):
        rec.check_batch((x, y), step=2)
    rec.close()


def test_save_program_traces_with_an_example_batch_by_name(tmp_path):
    """save_program(example=): the batch names the forward's arguments; a
    batch of other names, something that is not a batch, or a forward that
    fails while traced is refused, naming what the forward takes or the
    class and its file."""
    program_module = pt.with_loss(Classifier(), torch.nn.functional.cross_entropy, target="y")
    x, y = torch.randn(4, 8), torch.tensor([0, 1, 2, 0])
    path = str(tmp_path / "p.pt")
    assert pt.save_program(program_module, path, example={"y": y, "x": x}) == pot.program_digest_file(path)
    with pytest.raises(pot.InvalidArgumentError, match=r"forward takes \(x, y\), the example batch holds "
                                                       r"\(x, target\)"):
        pt.save_program(program_module, path, example={"x": x, "target": y})
    with pytest.raises(pot.InvalidArgumentError, match="example is a batch: a mapping of sample tensor names"):
        pt.save_program(program_module, path, example=[x, y])
    with pytest.raises(pot.InvalidArgumentError, match=r"TorchScript cannot trace .*PotProgram .*: .*"):
        pt.save_program(program_module, path, example={"x": torch.randn(4, 5), "y": y})  # 5 features, not 8
