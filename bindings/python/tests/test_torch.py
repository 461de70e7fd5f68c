"""pot.torch end to end: an ordinary PyTorch loop (DataLoader with shuffling,
dropout, AdamW, a cosine LR schedule, gradient clipping, accumulation,
zero_grad(set_to_none=True)) hooked with the three lines of docs/python.md;
five beacon-challenged steps are served from the checkpoint directory and
verified by the C++ replay called from Python; a tampered run fails."""
import json
import os

import pytest

torch = pytest.importorskip("torch")
import pot  # noqa: E402
import pot.torch as pt  # noqa: E402

if not pot.replay_available():
    pytest.skip("libpot was built without LibTorch", allow_module_level=True)

STEPS, EVERY, BATCH, ACCUM = 12, 4, 8, 2


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.LayerNorm(32), torch.nn.GELU(),
                                        torch.nn.Dropout(0.1), torch.nn.Linear(32, 4))

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.body(x), y)


class Data(torch.utils.data.Dataset):
    def __init__(self, n=64):
        g = torch.Generator().manual_seed(3)
        self.x = torch.randn(n, 12, generator=g)
        self.y = torch.randint(0, 4, (n,), generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return i, self.x[i], self.y[i]

    def sample(self, i):
        return {"x": self.x[i], "y": self.y[i]}


def adamw(model):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    return [opt], [torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS)]


def train(tmp, forge_at=None, skip_seed_at=None, optimizers=adamw, stepped_schedulers=None):
    """Trains STEPS steps with the recorder; returns (recorder, spec, program).
    optimizers(model) gives the loop's optimizers and their schedulers; the
    loop steps the first stepped_schedulers of them (default: all)."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model, data = Net(), Data()
    os.makedirs(tmp, exist_ok=True)
    program = os.path.join(tmp, "program.pt")
    pt.save_program(model, program)
    pt.write_dataset((data.sample(i) for i in range(len(data))), os.path.join(tmp, "data"))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True, drop_last=True,
                                         generator=torch.Generator().manual_seed(11))
    opts, scheds = optimizers(model)
    opt = opts[0] if len(opts) == 1 else opts
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=BATCH, microbatches=ACCUM, dropout=0.1,
                        grad_clip_max_norm=1.0, seed=2026, scheduler=scheds, model=model)
    schedule = pt.plan_schedule(loader, STEPS, ACCUM)
    # The task owner fixes S_0, the data, the schedule and the spec.
    task = pt.make_task(model, opt, spec, dataset_dir=os.path.join(tmp, "data"), schedule=schedule, end_height=10**6, owner=b"owner",
                        challenge_rounds=5)
    # The three lines: 1.
    rec = pt.Recorder(model, opt, task, program, os.path.join(tmp, "ckpt"), dataset_dir=os.path.join(tmp, "data"),
                      schedule=schedule, checkpoint_every=EVERY)
    t = 0
    while t < STEPS:
        for idx, x, y in loader:
            t += 1
            if t > STEPS:
                break
            rec.begin_step(idx)  # 2.
            if skip_seed_at == t:
                torch.manual_seed(12345)  # the trainer overrides the committed seed
            losses = []
            for xs, ys in zip(x.chunk(ACCUM), y.chunk(ACCUM)):
                loss = model(xs, ys) / ACCUM
                loss.backward()
                losses.append(loss)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            for o in opts:
                o.step()
            for sc in scheds[:stepped_schedulers]:
                sc.step()
            for o in opts:
                o.zero_grad(set_to_none=True)
            if forge_at == t:
                with torch.no_grad():
                    model.body[0].weight.mul_(0.9)  # an update the step did not compute
            rec.end_step(losses)  # 3.
    rec.finish()
    return rec, spec, program


def verify(rec, spec, program, t, mode=pot.VerifyMode.BITWISE, threads=0):
    manifest = rec.serve(t, post_state=mode == pot.VerifyMode.NORM_BUCKET)
    post = rec.state_path(t) if mode == pot.VerifyMode.NORM_BUCKET else None
    return pot.verify_step(rec.commitment, spec, program, t, rec.steps_recorded, rec.root(), manifest,
                           rec.state_path(t - 1), post, mode, threads)


def test_recorded_loop_verifies_at_challenged_steps(tmp_path):
    rec, spec, program = train(str(tmp_path / "honest"))
    assert rec.steps_recorded == STEPS
    # Only every EVERY-th state (and S_0, S_n) is stored.
    stored = sorted(os.listdir(tmp_path / "honest" / "ckpt" / "checkpoints"))
    assert stored == [f"{t:012d}.safetensors" for t in (0, 4, 8, 12)]
    steps = pot.challenge_derive(b"beacon of the day", rec.run_id, STEPS, 5)
    assert len(set(steps)) == 5
    for t in steps:
        r = verify(rec, spec, program, t)
        assert r.ok and r.replayed and r.replayed_state_digest == r.committed_state_digest, t
    # The cross-architecture path on another thread count.
    r = verify(rec, spec, program, 7, pot.VerifyMode.NORM_BUCKET, threads=2)
    assert r.ok
    rec.close()


def test_tampered_runs_fail_at_the_named_check(tmp_path):
    rec, spec, program = train(str(tmp_path / "forged"), forge_at=6)
    with pytest.raises(pot.ProofMismatchError) as e:
        verify(rec, spec, program, 6)
    assert e.value.check == pot.OpeningCheck.REPLAYED_STATE
    assert verify(rec, spec, program, 5).ok  # honest steps still verify
    rec.close()
    rec, spec, program = train(str(tmp_path / "noseed"), skip_seed_at=3)
    with pytest.raises(pot.ProofMismatchError) as e:
        verify(rec, spec, program, 3)
    assert e.value.check == pot.OpeningCheck.REPLAYED_STATE
    rec.close()


def test_recorder_checks_the_schedule_and_the_call_order(tmp_path):
    torch.manual_seed(0)
    model, data = Net(), Data()
    tmp = str(tmp_path)
    program = os.path.join(tmp, "program.pt")
    pt.save_program(model, program)
    pt.write_dataset((data.sample(i) for i in range(len(data))), os.path.join(tmp, "data"))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=4, dropout=0.1, seed=1)
    schedule = [[[0, 1, 2, 3]], [[4, 5, 6, 7]]]
    task = pt.make_task(model, opt, spec, dataset_dir=os.path.join(tmp, "data"), schedule=schedule, end_height=10**6, owner=b"owner",
                        challenge_rounds=1)
    with pytest.raises(TypeError):
        pt.Recorder(model, opt, spec, program, os.path.join(tmp, "ck0"), dataset_dir=os.path.join(tmp, "data"),
                    schedule=schedule)
    # What the task does not admit is refused before anything is written.
    with pytest.raises(pot.InvalidArgumentError, match="schedule_root"):
        pt.Recorder(model, opt, task, program, os.path.join(tmp, "ck1"), dataset_dir=os.path.join(tmp, "data"),
                    schedule=[[[0, 1, 2, 3]], [[4, 5, 6, 8]]])
    with pytest.raises(pot.InvalidArgumentError, match="dataset_root"):  # 63 of the 64 samples
        pt.Recorder(model, opt, task, program, os.path.join(tmp, "ck2"), dataset_dir=os.path.join(tmp, "data"),
                    schedule=schedule, dataset_size=63)
    saved = model.body[0].bias.detach().clone()
    with torch.no_grad():
        model.body[0].bias.add_(1.0)  # a model that is not the task's S_0
    with pytest.raises(pot.InvalidArgumentError, match="initial_state_digest"):
        pt.Recorder(model, opt, task, program, os.path.join(tmp, "ck3"), dataset_dir=os.path.join(tmp, "data"),
                    schedule=schedule)
    with torch.no_grad():
        model.body[0].bias.copy_(saved)
    assert not any(os.path.exists(os.path.join(tmp, d)) for d in ("ck0", "ck1", "ck2", "ck3"))
    rec = pt.Recorder(model, opt, task, program, os.path.join(tmp, "ckpt"), dataset_dir=os.path.join(tmp, "data"),
                      schedule=schedule)
    assert rec.commitment.task_id == task.id
    with pytest.raises(pot.StateError):
        rec.end_step(1.0)
    with pytest.raises(pot.ConflictError):
        rec.begin_step([0, 1, 2, 4])
    with pytest.raises(pot.InvalidArgumentError, match="ASGD: pot replays"):
        pt.make_spec(torch.optim.ASGD(model.parameters()), program, dtype=torch.float32, batch_size=4)

    class MySGD(torch.optim.SGD):  # a subclass may step otherwise: refused by class
        pass
    with pytest.raises(pot.InvalidArgumentError, match="MySGD: pot replays"):
        pt.make_spec(MySGD(model.parameters(), lr=0.1), program, dtype=torch.float32, batch_size=4)
    loader = torch.utils.data.DataLoader(data, batch_size=4, shuffle=True)
    with pytest.raises(pot.InvalidArgumentError):
        pt.plan_schedule(loader, 2)
    rec.close()


@pytest.mark.parametrize("flag", ["capturable", "differentiable", "fused", "foreach"])
def test_make_spec_refuses_an_option_it_does_not_replay_by_name(tmp_path, flag):
    """An optimizer option that changes the update is refused at make_spec,
    naming it, never recorded as a spec that replays another update. (Set
    on the parameter group as torch 2.x's constructors set it; torch 1.13's
    Adam takes no `fused` argument on CPU.)"""
    model = Net()
    program = str(tmp_path / "program.pt")
    pt.save_program(model, program)
    opt = torch.optim.Adam(model.parameters())
    opt.param_groups[0][flag] = True
    with pytest.raises(pot.InvalidArgumentError, match=f"{flag}=True is not replayed"):
        pt.make_spec(opt, program, dtype=torch.float32, batch_size=4)


def test_make_spec_reads_adamw_from_the_decoupled_weight_decay_flag(tmp_path):
    """torch 2.x expresses AdamW as Adam(..., decoupled_weight_decay=True);
    make_spec used to record it as "adam" (L2 decay, another update). The
    flag is set on the group as torch 2.x's Adam sets it."""
    model = Net()
    program = str(tmp_path / "program.pt")
    pt.save_program(model, program)
    opt = torch.optim.Adam(model.parameters(), weight_decay=0.01)
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=4)
    assert json.loads(spec.to_json())["optimizer"]["kind"] == "adam"
    opt.param_groups[0]["decoupled_weight_decay"] = True
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=4)
    assert json.loads(spec.to_json())["optimizer"]["kind"] == "adamw"
    assert json.loads(spec.to_json())["optimizer"]["weight_decay"] == 0.01


def decay_groups(model):
    """Adagrad over two groups, as GPT code builds them: matrices with weight
    decay, biases and norms without, at half the rate."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.Adagrad([{"params": decay, "weight_decay": 1e-3},
                               {"params": rest, "weight_decay": 0.0, "lr": 5e-3}], lr=1e-2, lr_decay=1e-3,
                              initial_accumulator_value=0.1)
    return [opt], [torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS)]


def muon_and_adamw(model):
    """Muon for the matrices beside AdamW for the rest: two optimizers."""
    muon = torch.optim.Muon([p for p in model.parameters() if p.dim() == 2], lr=0.02)
    adamw_ = torch.optim.AdamW([p for p in model.parameters() if p.dim() != 2], lr=3e-3, weight_decay=0.01)
    return [muon, adamw_], [torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=STEPS) for o in (muon, adamw_)]


@pytest.mark.parametrize("optimizers", [decay_groups, muon_and_adamw], ids=["adagrad-groups", "muon-adamw"])
def test_parameter_groups_and_several_optimizers_verify(tmp_path, optimizers):
    """Each torch parameter group is a group of the spec with its own
    hyper-parameters and rate (hparam/lr/<g>); a forged step still fails."""
    if optimizers is muon_and_adamw and not hasattr(torch.optim, "Muon"):
        pytest.skip(f"torch {torch.__version__} has no torch.optim.Muon")
    rec, spec, program = train(str(tmp_path / "run"), forge_at=5, optimizers=optimizers)
    groups = json.loads(spec.to_json())["param_groups"]
    assert len(groups) == 1 and groups[0]["params"] == sorted(
        ["body.0.bias", "body.1.bias", "body.1.weight", "body.4.bias"], key=lambda n: n.encode())
    for t in (1, 4, 9):
        r = verify(rec, spec, program, t)
        assert r.ok and r.replayed_state_digest == r.committed_state_digest, t
    with pytest.raises(pot.ProofMismatchError) as e:
        verify(rec, spec, program, 5)
    assert e.value.check == pot.OpeningCheck.REPLAYED_STATE
    rec.close()


def test_make_spec_refuses_groups_it_cannot_name_or_that_miss_a_parameter(tmp_path):
    model = Net()
    program = str(tmp_path / "program.pt")
    pt.save_program(model, program)
    params = list(model.parameters())
    opt = torch.optim.SGD([{"params": params[:2]}, {"params": params[2:], "lr": 0.05}], lr=0.1, maximize=True)
    with pytest.raises(pot.InvalidArgumentError, match="pass model="):
        pt.make_spec(opt, program, dtype=torch.float32, batch_size=4)
    spec = json.loads(pt.make_spec(opt, program, dtype=torch.float32, batch_size=4, model=model).to_json())
    assert spec["optimizer"]["maximize"] and spec["param_groups"][0]["optimizer"]["lr"] == 0.05
    partial = torch.optim.SGD([{"params": params[:2]}, {"params": params[2:4]}], lr=0.1)
    with pytest.raises(pot.InvalidArgumentError, match="requires a gradient but is in no optimizer group"):
        pt.make_spec(partial, program, dtype=torch.float32, batch_size=4, model=model)
    s1 = torch.optim.lr_scheduler.CosineAnnealingLR(torch.optim.SGD(params[:2], lr=0.1), T_max=5)
    s2 = torch.optim.lr_scheduler.StepLR(torch.optim.SGD(params[2:], lr=0.1), step_size=2)
    with pytest.raises(pot.InvalidArgumentError, match="different schedules"):
        pt.make_spec([s1.optimizer, s2.optimizer], program, dtype=torch.float32, batch_size=4, model=model,
                     scheduler=[s1, s2])


def test_recorder_refuses_a_group_whose_rate_left_the_schedule(tmp_path):
    """Two optimizers, two schedulers, and a loop that steps only the first:
    the second group's rate stays put while the spec's schedule moves it.
    The recorder refuses the step at once, naming the group, rather than
    recording a run no verifier will accept."""
    def two_sgd(model):
        mats = [p for p in model.parameters() if p.dim() == 2]
        rest = [p for p in model.parameters() if p.dim() != 2]
        a, b = torch.optim.SGD(mats, lr=0.05, momentum=0.9), torch.optim.SGD(rest, lr=0.01)
        return [a, b], [torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5) for o in (a, b)]
    with pytest.raises(pot.InvalidArgumentError, match="step 2 would train parameter group 1 at learning rate 0.01,"):
        train(str(tmp_path / "run"), optimizers=two_sgd, stepped_schedulers=1)
