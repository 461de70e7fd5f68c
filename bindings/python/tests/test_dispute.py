"""The step bisection of a refereed dispute (docs/PROTOCOL.md 22.1) over
real PyTorch training: an honest trainer that keeps every 10th state and
answers each round by retraining from its nearest state, against a forger
that replaced the weights at one step and trained on from there. At every
tried position the bisection ends at exactly the forged step, within the
k-ary bound, and the referee's one retrained step names the forger."""
import copy
import random

import pytest

import pot

torch = pytest.importorskip("torch")
import pot.torch as pt  # noqa: E402

STEPS, EVERY = 60, 10


def make():
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return model, opt


def batch(t):
    g = torch.Generator().manual_seed(1000 + t)
    return torch.randn(16, 8, generator=g), torch.randint(0, 2, (16,), generator=g)


def step(model, opt, t):
    x, y = batch(t)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


def digest(model, opt):
    return pt._state_digest(pt.canonical_state(model, opt))


def snapshot(model, opt):
    return copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict())


def restore(snap):
    model, opt = make()
    model.load_state_dict(snap[0])
    opt.load_state_dict(snap[1])
    return model, opt


def train(forged_at=None):
    """Every state's digest, and the states kept every EVERY steps."""
    torch.set_num_threads(1)
    model, opt = make()
    digests, kept = [digest(model, opt)], {0: snapshot(model, opt)}
    for t in range(1, STEPS + 1):
        step(model, opt, t)
        if t == forged_at:  # a state the miner did not compute
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(0.01)
        digests.append(digest(model, opt))
        if t % EVERY == 0:
            kept[t] = snapshot(model, opt)
    return digests, kept


class Honest:
    """Answers a point by retraining from the nearest state it holds at or
    below it (a kept checkpoint, or a state it reached in an earlier round)."""

    def __init__(self, kept):
        self.held = dict(kept)
        self.replayed = 0

    def state_at(self, p):
        base = max(t for t in self.held if t <= p)
        model, opt = restore(self.held[base])
        for t in range(base + 1, p + 1):
            step(model, opt, t)
        self.replayed += p - base
        self.held[p] = snapshot(model, opt)
        return model, opt

    def claim(self, p):
        return digest(*self.state_at(p))


def referee(i, pre_state, agreed):
    """Retrains step i from S_{i-1} (served by the honest party, checked
    against the agreed digest): the true S_i."""
    model, opt = restore(pre_state)
    assert digest(model, opt) == agreed
    step(model, opt, i)
    return digest(model, opt)


def test_the_bisection_finds_the_forged_step_of_a_real_run():
    honest_digests, kept = train()
    rng = random.Random(15)
    positions = sorted(rng.sample(range(1, STEPS + 1), 6)) + [1, STEPS]
    for arity in (2, 4):
        bound = pot.bisection_rounds(0, STEPS, arity)
        for f in positions:
            forged, _ = train(forged_at=f)
            assert forged[f - 1] == honest_digests[f - 1] and forged[f] != honest_digests[f]
            honest = Honest(kept)
            forger_is_a = f % 2 == 0
            b = pot.StepBisection(0, STEPS, arity, agreed=honest_digests[0],
                                  a_hi=forged[STEPS] if forger_is_a else honest_digests[STEPS],
                                  b_hi=honest_digests[STEPS] if forger_is_a else forged[STEPS])
            while not b.state.done:
                points = b.points()
                truth = [honest.claim(p) for p in points]
                lies = [forged[p] for p in points]
                b.play_round(lies if forger_is_a else truth, truth if forger_is_a else lies)
            s = b.state
            assert (s.lo, s.hi) == (f - 1, f), (arity, f)
            assert s.rounds_played <= bound
            assert s.agreed == honest_digests[f - 1]
            # The referee retrains the one step from the agreed state.
            true_state = referee(f, snapshot(*honest.state_at(f - 1)), s.agreed)
            assert (s.b_hi if forger_is_a else s.a_hi) == true_state
            assert (s.a_hi if forger_is_a else s.b_hi) != true_state
            # The honest party never retrained more than a checkpoint
            # stretch per point.
            assert honest.replayed <= bound * (arity - 1) * (EVERY - 1) + EVERY


def test_rounds_and_refusals():
    assert pot.bisection_points(0, 200, 4) == [50, 100, 150]
    assert pot.bisection_points(10, 13, 8) == [11, 12]
    assert pot.bisection_points(41, 42, 2) == []
    assert pot.bisection_rounds(0, 200, 2) == 8
    assert pot.bisection_rounds(0, 2**64 - 1, 2) == 64
    with pytest.raises(pot.InvalidArgumentError, match="holds no step"):
        pot.bisection_points(5, 5, 2)
    with pytest.raises(pot.InvalidArgumentError, match="arity 257"):
        pot.bisection_rounds(0, 5, 257)
    s0, x, y = (pot.sha256(w) for w in (b"S_0", b"x", b"y"))
    with pytest.raises(pot.InvalidArgumentError, match="nothing is disputed"):
        pot.StepBisection(0, 10, 2, agreed=s0, a_hi=x, b_hi=x)
    with pytest.raises(pot.InvalidArgumentError):
        pot.StepBisection(0, 10, 2, agreed=b"short", a_hi=x, b_hi=y)
    with pot.StepBisection(0, 10, 4, agreed=s0, a_hi=x, b_hi=y) as b:
        assert b.points() == [2, 5, 7]
        before = b.state
        with pytest.raises(pot.InvalidArgumentError, match="claims 2 digests"):
            b.play_round([x, x], [x, x])
        with pytest.raises(pot.InvalidArgumentError, match="A claims 3 digests and B 2"):
            b.play_round([x, x, x], [x, x])
        with pytest.raises(pot.InvalidArgumentError):
            b.play_round([x, None, x], [x, x, x])
        with pytest.raises(pot.InvalidArgumentError):
            b.play_round([x] * 300, [x] * 300)
        assert b.state == before
        while not b.state.done:
            n = len(b.points())
            b.play_round([x] * n, [x] * n)  # agreeing everywhere: the end is disputed
        assert (b.state.lo, b.state.hi, b.state.agreed) == (9, 10, x)
        with pytest.raises(pot.StateError, match="done at step 10"):
            b.points()
        with pytest.raises(pot.StateError):
            b.play_round([], [])
    with pytest.raises(pot.StateError):
        b.points()  # closed
