"""The spec's learning-rate schedule against torch 1.13's schedulers, bit
for bit: pot.Spec.learning_rates (libpot's evaluation) must equal
optimizer.param_groups[0]["lr"] before every optimizer step of a loop that
steps the scheduler after each optimizer step. make_spec(scheduler=) reads
the scheduler; what it cannot replay it refuses by name."""
import math
import struct

import pytest

torch = pytest.importorskip("torch")
import pot  # noqa: E402
import pot.torch as pt  # noqa: E402

L = torch.optim.lr_scheduler
STEPS = 400
BASE = 3e-3


def program(tmp_path):
    path = tmp_path / "program.pt"
    if not path.exists():
        pt.save_program(Tiny(), str(path))
    return str(path)


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(2))

    def forward(self, x):
        return (self.w * x).sum()


def torch_rates(make, steps=STEPS, optim="sgd", every=1):
    """Runs a loop of `steps` optimizer steps (no gradients: the rates only)
    stepping its scheduler after every `every`-th, and returns the optimizer,
    the scheduler and the rates torch used."""
    model = Tiny()
    opt = (torch.optim.SGD(model.parameters(), lr=BASE) if optim == "sgd"
           else torch.optim.AdamW(model.parameters(), lr=BASE))
    sched = make(opt)
    out = []
    for t in range(1, steps + 1):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        if t % every == 0:
            sched.step()
    return opt, sched, out


CASES = {
    "step": lambda o: L.StepLR(o, 7, 0.5),
    "multistep": lambda o: L.MultiStepLR(o, [10, 30, 30, 50], 0.3),
    "exponential": lambda o: L.ExponentialLR(o, 0.97),
    "cosine": lambda o: L.CosineAnnealingLR(o, 37, 1e-5),  # with restarts past T_max
    "cosine-to-zero": lambda o: L.CosineAnnealingLR(o, STEPS),
    "linear": lambda o: L.LinearLR(o, 0.1, 1.0, 25),
    "linear-decay": lambda o: L.LinearLR(o, 1.0, 0.0, STEPS),
    "constant": lambda o: L.ConstantLR(o, 0.25, 9),
    "warmup-cosine": lambda o: L.SequentialLR(o, [L.LinearLR(o, 0.01, 1.0, 40), L.CosineAnnealingLR(o, 360, 1e-6)],
                                              [40]),
    "warmup-linear": lambda o: L.SequentialLR(o, [L.LinearLR(o, 0.1, 1.0, 10), L.LinearLR(o, 1.0, 0.05, 390)],
                                              [10]),
    "constant-exp-step": lambda o: L.SequentialLR(o, [L.ConstantLR(o, 0.5, 3), L.ExponentialLR(o, 0.99),
                                                      L.StepLR(o, 13, 0.7)], [20, 150]),
    "multistep-after-cosine": lambda o: L.SequentialLR(o, [L.CosineAnnealingLR(o, 25, 1e-4),
                                                           L.MultiStepLR(o, [5, 60, 60], 0.5)], [100]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rates_equal_torch_bit_for_bit(tmp_path, name):
    model = Tiny()
    opt = torch.optim.SGD(model.parameters(), lr=BASE)
    sched = CASES[name](opt)
    spec = pt.make_spec(opt, program(tmp_path), dtype=torch.float32, batch_size=1, seed_policy="none",
                        intra_op_threads=1, scheduler=sched)
    _, _, want = torch_rates(CASES[name])
    got = spec.learning_rates(1, STEPS)
    bits = lambda xs: [struct.pack("<d", x) for x in xs]  # noqa: E731
    bad = [t for t, (a, b) in enumerate(zip(bits(got), bits(want)), start=1) if a != b]
    assert not bad, f"{name}: first rates differ at steps {bad[:5]}: {got[bad[0] - 1]!r} != {want[bad[0] - 1]!r}"
    # A later window equals the walk from step 1.
    assert spec.learning_rates(301, 50) == got[300:350]
    assert spec.learning_rate(STEPS) == want[-1]


def test_no_scheduler_is_a_constant_rate_and_an_attached_one_must_be_named(tmp_path):
    model = Tiny()
    opt = torch.optim.AdamW(model.parameters(), lr=BASE)
    spec = pt.make_spec(opt, program(tmp_path), dtype=torch.float32, batch_size=1, seed_policy="none",
                        intra_op_threads=1)
    assert "lr_schedule" not in spec.to_dict()
    assert spec.learning_rates(1, 3) == [BASE] * 3
    L.StepLR(opt, 3)
    with pytest.raises(pot.InvalidArgumentError, match="scheduler=") as e:
        pt.make_spec(opt, program(tmp_path), dtype=torch.float32, batch_size=1, seed_policy="none",
                     intra_op_threads=1)
    assert "LR scheduler attached" in e.value.message


def test_schedulers_pot_cannot_replay_are_refused_by_name(tmp_path):
    def spec_of(make):
        model = Tiny()
        opt = torch.optim.SGD(model.parameters(), lr=BASE)
        return pt.make_spec(opt, program(tmp_path), dtype=torch.float32, batch_size=1, seed_policy="none",
                            intra_op_threads=1, scheduler=make(opt))

    with pytest.raises(pot.InvalidArgumentError, match="OneCycleLR is not replayed"):
        spec_of(lambda o: L.OneCycleLR(o, max_lr=0.1, total_steps=100))
    with pytest.raises(pot.InvalidArgumentError, match="MultiplicativeLR is not replayed"):
        spec_of(lambda o: L.MultiplicativeLR(o, lambda e: 0.5))

    class MyStep(L.StepLR):  # a subclass may compute other rates
        pass

    with pytest.raises(pot.InvalidArgumentError, match="MyStep is not replayed"):
        spec_of(lambda o: MyStep(o, 3))
    with pytest.raises(pot.InvalidArgumentError, match="ReduceLROnPlateau is not replayed"):
        spec_of(lambda o: L.ReduceLROnPlateau(o))

    def stepped(o):
        s = L.ExponentialLR(o, 0.5)
        o.step()
        s.step()
        return s

    with pytest.raises(pot.InvalidArgumentError, match="already stepped"):
        spec_of(stepped)
    # gamma > 1 (a growing rate) is outside what a spec admits.
    with pytest.raises(pot.InvalidArgumentError, match="gamma = 1.5 is outside"):
        spec_of(lambda o: L.ExponentialLR(o, 1.5))


def test_spec_json_round_trip_and_rate_bounds(tmp_path):
    model = Tiny()
    opt = torch.optim.SGD(model.parameters(), lr=BASE)
    sched = CASES["warmup-cosine"](opt)
    spec = pt.make_spec(opt, program(tmp_path), dtype=torch.float32, batch_size=1, seed_policy="none",
                        intra_op_threads=1, scheduler=sched)
    j = spec.to_dict()
    assert j["lr_schedule"] == {"phases": [{"kind": "linear", "start_factor": 0.01, "end_factor": 1.0,
                                            "total_iters": 40},
                                           {"kind": "cosine", "t_max": 360, "eta_min": 1e-6}],
                                "milestones": [40]}
    assert pot.Spec.decode(spec.encode()).digest() == spec.digest() == pot.Spec(j).digest()
    with pytest.raises(pot.InvalidArgumentError):
        spec.learning_rates(0, 1)
    with pytest.raises(pot.OutOfRangeError):
        spec.learning_rates(2 ** 32, 2)
    with pytest.raises(ValueError, match="POT_MAX_RATES_PER_CALL"):  # before anything is allocated
        spec.learning_rates(1, 2 ** 24 + 1)
    assert spec.learning_rates(5, 0) == []


def hf_linear(warmup, total):
    """The factor of a linear warm-up then linear decay to 0, as Hugging
    Face's get_linear_schedule_with_warmup defines it."""
    def factor(step):
        if step < warmup:
            return float(step) / float(max(1, warmup))
        return max(0.0, float(total - step) / float(max(1, total - warmup)))
    return factor


def nanogpt_lr(it, lr=6e-4, warmup=40, decay=300, min_lr=6e-5):
    """A rate set by hand at the top of the loop, as nanoGPT-style scripts
    compute it: linear warm-up, cosine decay, then a floor."""
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay:
        return min_lr
    ratio = (it - warmup) / (decay - warmup)
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))
    return min_lr + coeff * (lr - min_lr)


LAMBDA_CASES = {
    "hf-linear": lambda o: L.LambdaLR(o, hf_linear(30, 300)),
    "warmup-times-cosine": lambda o: L.LambdaLR(
        o, lambda e: min(1.0, (e + 1) / 20) * 0.5 * (1 + math.cos(math.pi * e / STEPS))),
    "int-factors": lambda o: L.LambdaLR(o, lambda e: 1 if e < 50 else 0),
    "lambda-then-cosine": lambda o: L.SequentialLR(o, [L.LambdaLR(o, lambda e: (e + 1) / 10),
                                                       L.CosineAnnealingLR(o, 100, 1e-5)], [10]),
    "cosine-then-lambda": lambda o: L.SequentialLR(o, [L.CosineAnnealingLR(o, 50),
                                                       L.LambdaLR(o, lambda e: 0.99 ** e)], [50]),
}


def bits(xs):
    return [struct.pack("<d", x) for x in xs]


@pytest.mark.parametrize("name", sorted(LAMBDA_CASES))
def test_a_lambda_scheduler_is_listed_and_equals_torch(tmp_path, name):
    model = Tiny()
    opt = torch.optim.SGD(model.parameters(), lr=BASE)
    sched = LAMBDA_CASES[name](opt)
    spec = pt.make_spec(opt, program(tmp_path), dtype=torch.float32, batch_size=1, seed_policy="none",
                        intra_op_threads=1, scheduler=sched, steps=STEPS)
    _, _, want = torch_rates(LAMBDA_CASES[name])
    assert bits(spec.learning_rates(1, STEPS)) == bits(want), name
    # The table stops where the factor stops changing: a run as long as the
    # task allows needs no more.
    phases = spec.to_dict()["lr_schedule"]["phases"]
    assert all(len(p["factors"]) <= STEPS + 1 for p in phases if p["kind"] == "lambda")
    if name == "int-factors":
        assert phases[0]["factors"] == [1.0] * 50 + [0.0]


@pytest.mark.parametrize("name", ["step", "cosine", "warmup-cosine", "hf-linear"])
def test_a_scheduler_stepped_per_epoch_equals_torch_with_lr_every(tmp_path, name):
    make = {**CASES, **LAMBDA_CASES}[name]
    every = 7
    model = Tiny()
    opt = torch.optim.SGD(model.parameters(), lr=BASE)
    spec = pt.make_spec(opt, program(tmp_path), dtype=torch.float32, batch_size=1, seed_policy="none",
                        intra_op_threads=1, scheduler=make(opt), lr_every=every, steps=STEPS)
    assert spec.to_dict()["lr_schedule"]["interval"] == every
    _, _, want = torch_rates(make, every=every)
    assert bits(spec.learning_rates(1, STEPS)) == bits(want), name
    assert len(set(want)) > 3  # the rate does change, once per epoch


def test_rates_set_by_hand_are_every_groups_rate(tmp_path):
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW([{"params": [model.weight]}, {"params": [model.bias], "weight_decay": 0.0}], lr=6e-4)
    rates = [nanogpt_lr(it) for it in range(STEPS)]
    spec = pt.make_spec(opt, program(tmp_path), dtype=torch.float32, batch_size=1, seed_policy="none",
                        intra_op_threads=1, rates=rates, model=model)
    table = spec.to_dict()["lr_schedule"]["rates"]
    assert len(table) == 301  # the floor (reached at iteration 300: cos(pi) = -1) is listed once
    for g in range(2):
        assert bits(spec.group_learning_rates(g, 1, STEPS)) == bits(rates)
    # Per epoch: one rate per epoch of 5 steps.
    per_epoch = pt.make_spec(opt, program(tmp_path), dtype=torch.float32, batch_size=1, seed_policy="none",
                             intra_op_threads=1, rates=[0.1, 0.01, 0.001], lr_every=5, model=model)
    assert per_epoch.learning_rates(1, 16) == [0.1] * 5 + [0.01] * 5 + [0.001] * 6


def test_tables_are_refused_where_they_cannot_be_what_the_loop_does(tmp_path):
    model = Tiny()
    kw = dict(dtype=torch.float32, batch_size=1, seed_policy="none", intra_op_threads=1)
    opt = torch.optim.SGD(model.parameters(), lr=BASE)
    lam = L.LambdaLR(opt, lambda e: 0.5)
    with pytest.raises(pot.InvalidArgumentError, match="steps="):
        pt.make_spec(opt, program(tmp_path), scheduler=lam, **kw)
    with pytest.raises(pot.InvalidArgumentError, match="one schedule"):
        pt.make_spec(opt, program(tmp_path), scheduler=lam, rates=[0.1], steps=3, **kw)
    two = torch.optim.SGD([{"params": [model.w]}, {"params": [torch.nn.Parameter(torch.zeros(1))]}], lr=BASE)
    with pytest.raises(pot.InvalidArgumentError, match="differ between parameter groups"):
        pt.make_spec(two, program(tmp_path), scheduler=L.LambdaLR(two, [lambda e: 1.0, lambda e: 0.5]), steps=3,
                     **kw)
    fresh = torch.optim.SGD(Tiny().parameters(), lr=BASE)
    with pytest.raises(pot.InvalidArgumentError, match="constant rate has no interval"):
        pt.make_spec(fresh, program(tmp_path), lr_every=4, **kw)
    with pytest.raises(pot.InvalidArgumentError, match=r"rates\[2\] = -0: each value"):
        pt.make_spec(fresh, program(tmp_path), rates=[0.1, 0.0, -0.0], **kw)  # not a repeat of +0
    with pytest.raises(pot.InvalidArgumentError, match=r"rates\[1\] = -0.1"):
        pt.make_spec(fresh, program(tmp_path), rates=[0.1, -0.1], **kw)
    with pytest.raises(pot.InvalidArgumentError, match="factors\\[2\\]"):
        pt.make_spec(fresh, program(tmp_path), scheduler=L.LambdaLR(fresh, lambda e: 1.0 - e), steps=5, **kw)
