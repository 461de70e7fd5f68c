"""The spec's learning-rate schedule against torch 1.13's schedulers, bit
for bit: pot.Spec.learning_rates (libpot's evaluation) must equal
optimizer.param_groups[0]["lr"] before every optimizer step of a loop that
steps the scheduler after each optimizer step. make_spec(scheduler=) reads
the scheduler; what it cannot replay it refuses by name."""
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


def torch_rates(make, steps=STEPS, optim="sgd"):
    """Runs a loop of `steps` optimizer steps (no gradients: the rates only)
    and returns the spec make_spec builds before the first step and the
    rates torch used."""
    model = Tiny()
    opt = (torch.optim.SGD(model.parameters(), lr=BASE) if optim == "sgd"
           else torch.optim.AdamW(model.parameters(), lr=BASE))
    sched = make(opt)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
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
    with pytest.raises(pot.InvalidArgumentError, match="LambdaLR is not replayed"):
        spec_of(lambda o: L.LambdaLR(o, lambda e: 0.5 ** e))

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
