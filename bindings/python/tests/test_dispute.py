"""The step bisection of a refereed dispute (docs/PROTOCOL.md 22.1) over
real PyTorch training: an honest trainer that keeps every 10th state and
answers each round by retraining from its nearest state, against a forger
that replaced the weights at one step and trained on from there. At every
tried position the bisection ends at exactly the forged step, within the
k-ary bound, and the referee's one retrained step names the forger. The
same dispute is then played as reference-ledger calls, the miner answering
with its committed leaves."""
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
    # torch 2.x's Optimizer.load_state_dict keeps the given tensors as the
    # optimizer's state (1.13 deep-copied them): without a copy the steps
    # after a restore would change the snapshot itself.
    opt.load_state_dict(copy.deepcopy(snap[1]))
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


# --- The same dispute on the reference ledger (docs/ledger.md 2.12-2.14) ---

from conftest import LEDGER_BONDS, fund, spec_json  # noqa: E402

MINER, VERIFIER = b"miner", b"verifier"


def ledger_with_run(miner_digests, s0, steps=STEPS, referee=b""):
    """A ledger (with `referee`, if given) with a task whose S_0 is `s0`, a
    registered verifier, and the miner's sealed run of `steps` steps: its
    step leaves commit `miner_digests[t]`. Returns (ledger, run id, leaves,
    log)."""
    ledger = pot.Ledger(draw_delay=1, opening_window=5, commit_window=5, reveal_window=5, max_committee_size=4,
                        min_stake=1, max_rounds=2, max_attempts=1, dispute_window=3, dispute_arity=4,
                        referee=referee, **LEDGER_BONDS)
    fund(ledger, 100, b"owner", VERIFIER, MINER)
    h = pot.sha256
    task = pot.Task({
        "owner": b"owner".hex(), "spec": spec_json(h(b"program"), dropout=0.1), "dataset_root": h(b"dataset").hex(),
        "dataset_size": 1000, "initial_state": {"published_digest": s0.hex()},
        "schedule": {"listed_root": h(b"schedule").hex()}, "min_steps": steps, "max_steps": steps,
        "challenge_policy": {"rounds": 1, "mode": "bitwise", "committee_size": 4}, "end_height": 10**6})
    ledger.apply({"call": "post_task", "caller": b"owner".hex(), "now": 100, "task": task.encode().hex()})
    ledger.apply({"call": "register_verifier", "caller": VERIFIER.hex(), "now": 100, "stake": 10})
    c = pot.Commitment({
        "task_id": task.id.hex(), "initial_state_digest": s0.hex(), "schedule_root": h(b"schedule").hex(),
        "dataset_root": h(b"dataset").hex(), "dataset_size": 1000, "spec_digest": task.spec.digest().hex(),
        "declared_steps": steps, "miner_identity": MINER.hex()})
    run = ledger.apply({"call": "start_training_commitment", "caller": MINER.hex(), "now": 100,
                        "commitment": c.encode().hex()})["run_id"]
    leaves = [pot.StepLeaf(c.run_id, t, miner_digests[t], h(b"stats %d" % t), 1.0, 1.0) for t in range(1, steps + 1)]
    log = pot.Tree()
    for leaf in leaves:
        log.append(leaf.encode())
    ledger.apply({"call": "post_checkpoint_root", "caller": MINER.hex(), "now": 101, "run_id": run, "size": steps,
                  "root": log.root().hex(), "consistency_proof": ""})
    return ledger, run, leaves, log


@pytest.mark.parametrize("miner_forges", [True, False])
def test_on_the_ledger_the_dispute_ends_at_the_forged_step(miner_forges):
    """Real training, a ledger dispute: a miner that forged step f (or an
    honest miner disputed by a verifier that forged it in its own replay)
    against the honest party retraining from every 10th state. The miner
    answers with its committed leaves only; the verifier with digests. The
    dispute record names step f, the agreed S_{f-1}, and the referee's one
    retrained step from it agrees with the honest side only. A miner that
    then stops answering loses at the deadline."""
    honest_digests, kept = train()
    for f in (1, 17, 43, STEPS):
        forged, _ = train(forged_at=f)
        miner_digests = forged if miner_forges else honest_digests
        ledger, run, leaves, log = ledger_with_run(miner_digests, honest_digests[0])
        verifier = Honest(kept)
        verifier_view = (lambda p: verifier.claim(p)) if miner_forges else (lambda p: forged[p])
        now = 102
        r = ledger.apply({"call": "open_dispute", "caller": VERIFIER.hex(), "now": now, "run_id": run,
                          "lo_leaf": "", "lo_proof": "", "hi_leaf": leaves[-1].encode().hex(),
                          "hi_proof": log.inclusion_proof(STEPS - 1, STEPS).hex(),
                          "claim": verifier_view(STEPS).hex()})
        while not r["ended"]:
            now += 1
            points = r["points"]
            ledger.apply({"call": "claim_dispute", "caller": MINER.hex(), "now": now, "dispute_id": 0,
                          "claims": [{"step_leaf": leaves[p - 1].encode().hex(),
                                      "leaf_proof": log.inclusion_proof(p - 1, STEPS).hex()} for p in points]})
            r = ledger.apply({"call": "claim_dispute", "caller": VERIFIER.hex(), "now": now, "dispute_id": 0,
                              "claims": [verifier_view(p).hex() for p in points]})
        o = r["outcome"]
        assert (o["end"], o["step"]) == ("step_found", f)
        assert o["rounds"] <= pot.bisection_rounds(0, STEPS, 4)
        assert o["agreed"] == honest_digests[f - 1].hex()
        assert o["miner_digest"] == miner_digests[f].hex()
        assert pot.decode_outcome(bytes.fromhex(r["record"])) == o
        true_state = referee(f, snapshot(*Honest(kept).state_at(f - 1)), honest_digests[f - 1])
        honest_side = "challenger_digest" if miner_forges else "miner_digest"
        liar_side = "miner_digest" if miner_forges else "challenger_digest"
        assert o[honest_side] == true_state.hex() and o[liar_side] != true_state.hex()
    # A forging miner that stops answering once the rounds close in loses.
    ledger, run, leaves, log = ledger_with_run(forged, honest_digests[0])
    r = ledger.apply({"call": "open_dispute", "caller": VERIFIER.hex(), "now": 102, "run_id": run, "lo_leaf": "",
                      "lo_proof": "", "hi_leaf": leaves[-1].encode().hex(),
                      "hi_proof": log.inclusion_proof(STEPS - 1, STEPS).hex(), "claim": honest_digests[STEPS].hex()})
    ledger.apply({"call": "claim_dispute", "caller": VERIFIER.hex(), "now": 103, "dispute_id": 0,
                  "claims": [honest_digests[p].hex() for p in r["points"]]})
    with pytest.raises(pot.StateError, match="open until height 105"):
        ledger.apply({"call": "settle_dispute", "now": 105, "dispute_id": 0})
    end = ledger.apply({"call": "settle_dispute", "now": 106, "dispute_id": 0})
    assert end["outcome"]["end"] == "miner_default" and end["outcome"]["losers"] == ["miner"]
