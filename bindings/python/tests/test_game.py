"""The challenge and witness game on the reference ledger (docs/ledger.md),
attacked as an adversarial miner would (docs/security.md section 6). Each
attack is rebuilt through the public API on real commitments, leaves, RFC
6962 trees and witness commitments, and must end in FAIL or be refused,
while the honest counterpart ends in PASS. The chain's runtime is played by
`Chain`: it posts each block's randomness (a SHA-256 of the height, standing
in for a drand round) as the block begins."""

import hashlib
import json
import random
import sys

import pytest

import pot
from conftest import FUNDS, LEDGER_BONDS, VECTORS, fund, spec_json

# docs/PROTOCOL.md written out independently (hashlib only): every outcome
# record the ledger logs here is checked against it.
sys.path.insert(0, str(VECTORS.parent / "interop"))
import independent  # noqa: E402

STEPS, ROUNDS = 200, 8
OWNER = b"task owner"
MINER = b"miner"
WITNESSES = [b"alice", b"bob", b"carol"]  # registered with stake 10 each unless a test says otherwise
CONFIG = dict(draw_delay=1, opening_window=5, commit_window=5, reveal_window=5, max_committee_size=8, min_stake=1,
              max_rounds=ROUNDS, max_attempts=1, dispute_window=1, dispute_arity=2, **LEDGER_BONDS)


def d(label: str) -> pot.Digest:
    return pot.sha256(label.encode())


def spec_environment(chain) -> dict:
    """An environment that can judge the task's steps bitwise: the spec's
    release, threads and hardware class, as pot's replay reports them."""
    spec = json.loads(chain.task.spec.to_json())
    return {"framework_version": spec["framework_version"], "intra_op_threads": spec["intra_op_threads"],
            "hardware_class": spec["hardware_class"]}


def replayed(state: pot.Digest, bucket: int = 0, grad: pot.Digest = None) -> dict:
    """The finding of a member whose replay gave `state` (and the gradient
    `grad`; by default the honest gradient of the step the state names)."""
    return {"kind": "replayed", "replayed_state": state.hex(), "bucket": bucket,
            "gradient_digest": (grad or d(f"gradient behind {state.hex()}")).hex()}


UNAVAILABLE = {"kind": "unavailable"}


def invalid_opening(check: str) -> dict:
    return {"kind": "invalid_opening", "check": check}


def honest_state(t: int) -> pot.Digest:
    """What a replay of step t gives (the leaves' state digests stand for
    real states: the ledger only compares digests)."""
    return d(f"S_{t}")


class Chain:
    """A task on a reference ledger, and the runtime that posts each block's
    randomness."""

    def __init__(self, verifiers=None, config=None, end_height=10**6):
        self.ledger = pot.Ledger(**(config or CONFIG))
        self.records = []  # the outcome log's records, as encoded independently
        self.now = 100
        self.post_randomness()
        self.verifiers = dict(verifiers or {w: 10 for w in WITNESSES})
        fund(self.ledger, self.now, OWNER, *self.verifiers)
        for who, stake in self.verifiers.items():
            self.call("register_verifier", caller=who.hex(), stake=stake)
        self.task = pot.Task({
            "owner": OWNER.hex(), "spec": spec_json(d("program"), dropout=0.1), "dataset_root": d("dataset").hex(),
            "dataset_size": 1000, "initial_state": {"published_digest": d("S_0").hex()},
            "schedule": {"listed_root": d("schedule").hex()}, "min_steps": STEPS, "max_steps": STEPS,
            "challenge_policy": {"rounds": ROUNDS, "mode": "bitwise",
                                 "committee_size": (config or CONFIG)["max_committee_size"]},
            "end_height": end_height})
        self.call("post_task", caller=OWNER.hex(), task=self.task.encode().hex())

    @staticmethod
    def randomness(height: int) -> bytes:
        return hashlib.sha256(b"drand round %d" % height).digest()

    def post_randomness(self):
        self.ledger.apply({"call": "post_randomness", "now": self.now, "randomness": self.randomness(self.now).hex()})

    def block(self, n: int = 1):
        """The next n blocks, each with its randomness."""
        for _ in range(n):
            self.now += 1
            self.post_randomness()

    def call(self, name, **args):
        return self.ledger.apply({"call": name, "now": self.now, **args})

    def finalize(self, cid: int) -> dict:
        """Finalizes a challenge; its outcome record and the log's new root
        must be the ones docs/PROTOCOL.md 20.1 gives, computed independently
        from the challenge as it stood and the verdict."""
        info = self.ledger.apply({"call": "challenge_info", "challenge_id": cid})
        v = self.call("finalize_challenge", challenge_id=cid)
        record = independent.outcome_record(cid, info, v)
        assert (v["outcome"], v["outcome_index"]) == (record.hex(), len(self.records))
        self.records.append(record)
        assert v["outcome_root"] == independent.mth(self.records).hex()
        return v

    def run(self, miner: bytes, forged=(), deposit=True):
        """Registers and seals a run of the task: its log holds honest
        states, except the listed steps, whose states the miner never
        computed (the runtime first deposits the miner's bond, unless
        `deposit` is false). Returns (run id, leaves, log)."""
        c = pot.Commitment({
            "task_id": self.task.id.hex(), "initial_state_digest": d("S_0").hex(),
            "schedule_root": d("schedule").hex(), "dataset_root": d("dataset").hex(), "dataset_size": 1000,
            "spec_digest": self.task.spec.digest().hex(), "declared_steps": STEPS, "miner_identity": miner.hex()})
        # Exactly the miner's bond: all of it is locked, so a miner's account
        # adds nothing to the saved state until its bond comes back.
        if deposit:
            fund(self.ledger, self.now, miner, amount=LEDGER_BONDS["miner_bond"])
        run = self.call("start_training_commitment", caller=miner.hex(), commitment=c.encode().hex())["run_id"]
        assert run == c.run_id.hex()
        leaves = [pot.StepLeaf(c.run_id, t, d(f"forged {t}") if t in forged else honest_state(t), d(f"stats {t}"),
                                1.0 / t, 0.5)
                  for t in range(1, STEPS + 1)]
        log = pot.Tree()
        for leaf in leaves:
            log.append(leaf.encode())
        self.call("post_checkpoint_root", caller=miner.hex(), run_id=run, size=STEPS, root=log.root().hex(),
                  consistency_proof="")
        return run, leaves, log

    def first_challenge(self, miner: bytes, forged=()):
        """Seals a run (forging the listed steps), draws its challenges in
        the next block and opens the first. Returns (run id, challenge id,
        step, the leaves)."""
        run, leaves, log = self.run(miner, forged)
        self.block()
        issued = self.call("issue_challenge", run_id=run)
        cid, step = issued["challenge_ids"][0], issued["steps"][0]
        self.open(miner, cid, step, leaves, log)
        return run, cid, step, leaves

    def open(self, miner: bytes, cid: int, step: int, leaves, log):
        self.call("submit_opening", caller=miner.hex(), challenge_id=cid, manifest_digest=d("manifest").hex(),
                  step_leaf=leaves[step - 1].encode().hex(), leaf_proof=log.inclusion_proof(step - 1, STEPS).hex())

    def statement(self, run: str, cid: int, step: int, finding: dict, environment=None) -> dict:
        """A member's statement on challenge `cid` (docs/PROTOCOL.md 19)."""
        return {"run_id": run, "step": step, "challenge_id": cid, "mode": "bitwise",
                "environment": environment or spec_environment(self), **finding}

    def judge(self, run: str, cid: int, step: int, reveals, environments=None):
        """One challenge's committee at work: `reveals` maps a member to the
        state digest it reveals, or to a finding (a dict: unavailable,
        invalid_opening), or None (it commits and stays silent); members not
        in it do nothing; `environments` maps members to the environment
        they state (the spec's by default). Returns the verdict."""
        info = self.ledger.apply({"call": "challenge_info", "challenge_id": cid})
        environments = environments or {}

        def salt(w):
            return hashlib.sha256(w + b"salt %d" % cid).digest()

        def finding(value):
            return value if isinstance(value, dict) else replayed(value or d("silent"))
        for w, value in reveals.items():
            st = self.statement(run, cid, step, finding(value), environments.get(w))
            c = pot.witness_commitment(st, salt(w), w)
            self.call("commit_witness", caller=w.hex(), challenge_id=cid, commitment=c.hex())
        self.now = max(self.now, info["commit_deadline"] + 1)
        for w, value in reveals.items():
            if value is not None:
                self.call("reveal_witness_value", caller=w.hex(), challenge_id=cid, **finding(value),
                          environment=environments.get(w) or spec_environment(self), salt=salt(w).hex())
        self.now = max(self.now, info["reveal_deadline"] + 1)
        return self.finalize(cid)

    def committee(self, cid: int):
        info = self.ledger.apply({"call": "challenge_info", "challenge_id": cid})
        return {bytes.fromhex(m["identity"]): m["stake"] for m in info["committee"]}

    def witness(self, run: str, challenges):
        """Every witness commits what its replay of each challenged step gave
        (the honest state), reveals it once the commit phase is over, and the
        challenges are finalized. `challenges` are (id, step) pairs opened at
        one height. Returns the verdicts, in order."""
        opened = {self.ledger.apply({"call": "challenge_info", "challenge_id": cid})["opened_height"]
                  for cid, _ in challenges}
        assert len(opened) == 1, "opened at different heights"
        opened = opened.pop()

        def salt(w, cid):
            return hashlib.sha256(w + b"salt %d" % cid).digest()
        for cid, step in challenges:
            for w in WITNESSES:
                c = pot.witness_commitment(self.statement(run, cid, step, replayed(honest_state(step))), salt(w, cid),
                                           w)
                self.call("commit_witness", caller=w.hex(), challenge_id=cid, commitment=c.hex())
        self.now = max(self.now, opened + CONFIG["commit_window"] + 1)
        for cid, step in challenges:
            for w in WITNESSES:
                self.call("reveal_witness_value", caller=w.hex(), challenge_id=cid, **replayed(honest_state(step)),
                          environment=spec_environment(self), salt=salt(w, cid).hex())
        self.now = max(self.now, opened + CONFIG["commit_window"] + CONFIG["reveal_window"] + 1)
        return [self.finalize(cid) for cid, _ in challenges]


def test_attack_a_ground_beacon_is_no_argument():
    """Attack 4: a miner that forged half of a 200-step run ground a beacon
    in a few hundred tries that draws none of its forged steps (the stated
    detection probability with 8 rounds is 0.9966), and issued the challenge
    with it. Now the ledger draws the steps itself from the randomness of the
    block after the seal: a beacon is not an argument, and a value the miner
    may have seen or produced in its sealing block is not used."""
    chain = Chain()
    forged = set(range(2, STEPS + 1, 2))
    assert pot.detection_probability(STEPS, len(forged), ROUNDS) > 0.996
    run, leaves, log = chain.run(MINER, forged)
    run_id = bytes.fromhex(run)
    ground = next(b for b in (b"beacon %d" % i for i in range(100000))
                  if not set(pot.challenge_derive(b, run_id, STEPS, ROUNDS)) & forged)
    with pytest.raises(pot.InvalidArgumentError, match="unknown key 'beacon'"):
        chain.call("issue_challenge", run_id=run, beacon=ground.hex())
    # The sealing block's randomness is known to the miner: not the one.
    with pytest.raises(pot.StateError, match="waits for the chain randomness"):
        chain.call("issue_challenge", run_id=run)
    chain.block()
    issued = chain.call("issue_challenge", run_id=run)
    drawn = pot.challenge_derive(Chain.randomness(chain.now), run_id, STEPS, ROUNDS)
    assert issued["steps"] == drawn + ([] if 1 in drawn else [1])  # step 1 is challenged for certain
    assert chain.ledger.apply({"call": "run_info", "run_id": run})["drawn_from"] == {
        "height": chain.now, "value": Chain.randomness(chain.now).hex()}
    caught = [s for s in issued["steps"] if s in forged]
    assert caught, "this block's randomness draws no forged step"
    for cid, step in zip(issued["challenge_ids"], issued["steps"]):
        chain.open(MINER, cid, step, leaves, log)
    pairs = list(zip(issued["challenge_ids"], issued["steps"]))
    verdicts = {step: v["verdict"] for (_, step), v in zip(pairs, chain.witness(run, pairs))}
    assert all(v == ("fail" if s in forged else "pass") for s, v in verdicts.items()), verdicts
    assert chain.ledger.apply({"call": "run_info", "run_id": run})["slashable"]


def test_attack_free_challenges_do_not_bury_an_offline_honest_miner():
    """Attack 4, the other half: 50 issue_challenge calls by anyone opened
    400 challenges on a 200-step run, and an honest miner offline for 5
    blocks was slashable. Now a run is drawn once: every later call returns
    the same challenges. The honest miner, back in the last block of the
    opening window, opens them all; each ends in PASS."""
    chain = Chain()
    run, leaves, log = chain.run(MINER)
    chain.block()
    first = chain.call("issue_challenge", run_id=run)
    # The task's rounds, and step 1 when the draw missed it (challenged for certain).
    assert len(first["challenge_ids"]) == ROUNDS + (1 not in first["steps"][:ROUNDS])
    assert 1 in first["steps"]
    for _ in range(50):
        chain.block()
        assert chain.call("issue_challenge", run_id=run) == first
    with pytest.raises(pot.NotFoundError):
        chain.ledger.apply({"call": "challenge_info", "challenge_id": len(first["challenge_ids"])})
    # 50 blocks later the opening window (5 blocks from the issue) is over:
    # had the miner been offline that long, each challenge would be a FAIL.
    # Back within the window instead, on a fresh chain:
    chain = Chain()
    run, leaves, log = chain.run(MINER)
    chain.block()
    issued = chain.call("issue_challenge", run_id=run)
    for _ in range(CONFIG["opening_window"]):
        chain.block()
        chain.call("issue_challenge", run_id=run)  # anyone, every block
    for cid, step in zip(issued["challenge_ids"], issued["steps"]):
        chain.open(MINER, cid, step, leaves, log)
    for v in chain.witness(run, list(zip(issued["challenge_ids"], issued["steps"]))):
        assert (v["verdict"], v["cluster_size"]) == ("pass", len(WITNESSES)), v
    assert not chain.ledger.apply({"call": "run_info", "run_id": run})["slashable"]


def test_attack_an_opening_in_the_last_block_leaves_witnesses_their_window():
    """Attack 2, the late opening: a forger that opened in the last block of
    the commit window left witnesses no block to commit in, and the
    challenge ended INCONCLUSIVE. Now the commit phase starts when the
    opening lands, so an opening in the last block of the opening window
    still gets the whole commit window, and the forged step ends in FAIL.
    A forger that does not open at all is FAIL once the window closes."""
    chain = Chain()
    forged = set(range(1, STEPS + 1))  # nothing was trained
    run, leaves, log = chain.run(MINER, forged)
    chain.block()
    issued = chain.call("issue_challenge", run_id=run)
    (late_cid, late_step), *rest = zip(issued["challenge_ids"], issued["steps"])
    info = chain.ledger.apply({"call": "challenge_info", "challenge_id": late_cid})
    chain.now = info["opening_deadline"]
    chain.open(MINER, late_cid, late_step, leaves, log)
    info = chain.ledger.apply({"call": "challenge_info", "challenge_id": late_cid})
    assert info["commit_deadline"] == chain.now + CONFIG["commit_window"]
    chain.now += 1
    for cid, step in rest:  # the opening window is over
        with pytest.raises(pot.StateError, match="opening phase of challenge .* closed"):
            chain.open(MINER, cid, step, leaves, log)
    [v] = chain.witness(run, [(late_cid, late_step)])
    assert (v["verdict"], v["cluster_size"]) == ("fail", len(WITNESSES)), v
    for cid, _ in rest:
        v = chain.finalize(cid)
        assert (v["verdict"], v["reason"]) == ("fail", "no opening within the opening window")
    assert chain.ledger.apply({"call": "run_info", "run_id": run})["slashable"]


def test_the_state_keeps_only_the_randomness_a_run_waits_for():
    """A block's randomness is kept only while a sealed run waits for it:
    a thousand blocks leave the saved state as large as one."""
    chain = Chain()
    size = len(chain.ledger.save())
    chain.block(1000)
    # Only the heights grew (the ledger's and the latest post's: 100 and 1100
    # are 1 and 2 varint bytes); none of the thousand values is kept.
    assert len(chain.ledger.save()) == size + 2
    run, _, _ = chain.run(MINER)
    draw = chain.ledger.apply({"call": "run_info", "run_id": run})["draw_height"]
    assert draw == chain.now + CONFIG["draw_delay"]
    chain.block(3)
    state = chain.ledger.save()
    # The draw height's value is kept until the draw, the next one is not,
    # the latest post is.
    assert Chain.randomness(draw) in state
    assert Chain.randomness(draw + 1) not in state
    assert Chain.randomness(chain.now) in state
    # Drawn: the run records the value it was drawn from, and it is no
    # longer kept for waiting runs (it would then appear twice).
    chain.call("issue_challenge", run_id=run)
    assert chain.ledger.apply({"call": "run_info", "run_id": run})["drawn_from"]["height"] == draw
    assert chain.ledger.save().count(Chain.randomness(draw)) == 1
    state = chain.ledger.save()
    with pot.Ledger.load(state) as loaded:
        assert loaded.save() == state


HONEST = {b"honest 1": 30, b"honest 2": 30}
COLLUDERS = {b"colluder %d" % i: 10 for i in range(4)}


def test_attack_free_identities_copying_the_opened_digest_decide_nothing():
    """Attack 3: four free identities copying `opened_state` made a forged
    step PASS, and 1024 filler commitments locked honest witnesses out.
    Now only the committee (registered verifiers drawn by stake) commits:
    unregistered identities are refused, and four registered colluders
    holding 40 of the committee's 100 cannot outvote 60 of honest stake,
    even revealing last, after the honest reveals are public."""
    chain = Chain({**HONEST, **COLLUDERS})
    run, leaves, log = chain.run(MINER, forged=set(range(1, STEPS + 1)))
    chain.block()
    issued = chain.call("issue_challenge", run_id=run)
    cid, step = issued["challenge_ids"][0], issued["steps"][0]
    assert chain.committee(cid) == {**HONEST, **COLLUDERS}  # committee_size 8: everyone registered
    chain.open(MINER, cid, step, leaves, log)
    opened = leaves[step - 1].state_digest
    for i in range(1024):
        with pytest.raises(pot.PermissionDeniedError, match="not on the committee"):
            chain.call("commit_witness", caller=(b"filler %d" % i).hex(), challenge_id=cid, commitment=opened.hex())
    v = chain.judge(run, cid, step, {**{w: honest_state(step) for w in HONEST}, **{w: opened for w in COLLUDERS}})
    assert (v["verdict"], v["cluster_stake"]) == ("fail", 60), v
    # The outcome record: the miner is slashable, the colluders are the
    # minority, nobody was silent.
    assert (v["miner_slashable"], v["minority"], v["silent"]) == (True, sorted(w.hex() for w in COLLUDERS), [])
    assert chain.ledger.apply({"call": "run_info", "run_id": run})["slashable"]


def test_attack_random_digests_cannot_fail_an_honest_step():
    """Attack 3, against an honest miner: four identities posting random
    digests (or one agreed digest) made an honest step FAIL. Registered and
    on the committee, they hold a minority of its stake: PASS."""
    for agreed in (False, True):
        chain = Chain({**HONEST, **COLLUDERS})
        run, cid, step, leaves = chain.first_challenge(MINER)
        lies = {w: d("agreed lie") if agreed else d(f"random {w!r}") for w in COLLUDERS}
        v = chain.judge(run, cid, step, {**{w: honest_state(step) for w in HONEST}, **lies})
        assert (v["verdict"], v["cluster_stake"]) == ("pass", 60), v
        assert not chain.ledger.apply({"call": "run_info", "run_id": run})["slashable"]


def test_a_dishonest_stake_minority_never_decides_wrongly():
    """Randomized: 200 runs, each with a fresh registry of 4..12 verifiers
    of random stakes, committees of up to 8 drawn from them, a forged or an
    honest step, and a dishonest coalition holding less than half of the
    committee's stake that copies the opened digest, posts lies, claims it
    was served nothing or an invalid opening, stays silent or tells the
    truth, member by member, while some honest members are offline and a
    forging miner serves its opening to half of the honest ones. A forged step never ends in PASS, an honest one never in
    FAIL, and when the honest members who reveal hold a majority the
    verdict is the right one."""
    rng = random.Random(14)
    decided = 0
    for trial in range(200):
        verifiers = {b"v%d.%d" % (trial, i): rng.randint(1, 100) for i in range(rng.randint(4, 12))}
        chain = Chain(verifiers)
        forged = rng.random() < 0.5
        run, leaves, log = chain.run(MINER, forged=set(range(1, STEPS + 1)) if forged else set())
        chain.block()
        issued = chain.call("issue_challenge", run_id=run)
        cid, step = issued["challenge_ids"][0], issued["steps"][0]
        committee = chain.committee(cid)
        total = sum(committee.values())
        members = list(committee)
        rng.shuffle(members)
        dishonest, stake = set(), 0
        for m in members:  # a coalition below half of the committee's stake
            if rng.random() < 0.5 and 2 * (stake + committee[m]) < total:
                dishonest.add(m)
                stake += committee[m]
        chain.open(MINER, cid, step, leaves, log)
        opened = leaves[step - 1].state_digest
        reveals = {}
        for m in members:
            if m in dishonest:
                reveals[m] = rng.choice([opened, d("lie"), d(f"lie {m!r}"), None, honest_state(step), UNAVAILABLE,
                                         invalid_opening("sample_proof")])
            elif rng.random() < 0.8:  # honest and online
                # A forger serves its opening to whom it likes; an honest
                # miner serves everyone.
                served = not forged or rng.random() < 0.5
                reveals[m] = honest_state(step) if served else UNAVAILABLE
        out = chain.judge(run, cid, step, reveals)
        v = out["verdict"]
        assert v != ("pass" if forged else "fail"), (trial, forged, v)
        honest_revealed = sum(committee[m] for m, r in reveals.items() if m not in dishonest and r is not None)
        if 2 * honest_revealed > total:
            assert v == ("fail" if forged else "pass"), (trial, forged, v)
            decided += 1
            # Every member outside the deciding group is a dishonest one
            # that revealed; every silent one revealed nothing.
            assert {bytes.fromhex(m) for m in out["minority"]} <= {m for m in dishonest if reveals.get(m)}
        assert {bytes.fromhex(m) for m in out["silent"]} == {m for m in committee if reveals.get(m) is None}
    assert decided > 100  # most trials had an honest majority online



def test_re_runs_never_decide_wrongly_and_decide_more():
    """Randomized, with re-runs (max_attempts 3): 150 runs, each with a
    fresh registry of 6..14 verifiers, a dishonest set of them that lies,
    copies, claims or stays silent at random, committees of up to 5, and
    honest members offline one time in three. Whenever every committee a
    challenge gets has a dishonest stake minority, a forged step never ends
    in PASS and an honest one never in FAIL; a participation failure is
    re-run without its silent members, so more challenges end decided than
    their first committees alone decided."""
    rng = random.Random(15)
    config = dict(CONFIG, max_committee_size=5, max_attempts=3)
    first_decided = decided = reruns = assumed = 0
    for trial in range(150):
        verifiers = {b"v%d.%d" % (trial, i): rng.randint(1, 100) for i in range(rng.randint(6, 14))}
        dishonest = {v for v in verifiers if rng.random() < 0.3}
        chain = Chain(verifiers, config=config)
        forged = rng.random() < 0.5
        run, leaves, log = chain.run(MINER, forged=set(range(1, STEPS + 1)) if forged else set())
        chain.block()
        issued = chain.call("issue_challenge", run_id=run)
        cid, step = issued["challenge_ids"][0], issued["steps"][0]
        chain.open(MINER, cid, step, leaves, log)
        opened = leaves[step - 1].state_digest
        minority_throughout = True
        for attempt in range(1, config["max_attempts"] + 1):
            committee = chain.committee(cid)
            total = sum(committee.values())
            minority_throughout &= 2 * sum(committee[m] for m in committee if m in dishonest) < total
            reveals = {}
            for m in committee:
                if m in dishonest:
                    reveals[m] = rng.choice([opened, d("lie"), None, None, UNAVAILABLE, invalid_opening("sample_proof")])
                elif rng.random() < 2 / 3:
                    reveals[m] = honest_state(step)
            out = chain.judge(run, cid, step, reveals)
            assert out["outcome"][46:54] == "%02x000000" % attempt  # the record's attempt
            if attempt == 1 and out["verdict"] != "inconclusive":
                first_decided += 1
            if not out["rerun"]:
                break
            reruns += 1
            chain.block(config["draw_delay"])
            chain.call("redraw_committee", challenge_id=cid)
        if out["verdict"] != "inconclusive":
            decided += 1
        if minority_throughout:
            assumed += 1
            assert out["verdict"] != ("pass" if forged else "fail"), (trial, forged, out)
    print(f"re-runs {reruns}; decided {decided} of 150 (first committees {first_decided}); "
          f"{assumed} with a dishonest minority on every committee")
    assert reruns > 30 and assumed > 100, (reruns, assumed)
    assert decided > first_decided, (decided, first_decided)


def test_attack_serving_nothing_or_a_corrupted_sample_ends_in_fail():
    """Attack 2, withholding: challenged on a forged step, a miner that
    posts its opening but serves nobody the files, or serves a corrupted
    sample, or serves one member only, left witnesses nothing to replay
    and escaped to INCONCLUSIVE. Now members state what they got:
    `unavailable`, `invalid_opening` naming the failed check, or the value
    they replayed; all of them blame the miner, and together they hold the
    committee's majority: FAIL, and the miner is slashable: its bond burns
    (docs/ledger.md 2.18)."""
    alice, bob, carol = WITNESSES
    cases = [
        {w: UNAVAILABLE for w in WITNESSES},  # nobody is served the files
        {w: invalid_opening("sample_proof") for w in WITNESSES},  # a corrupted sample
        {alice: "replays", bob: invalid_opening("sample_proof"), carol: UNAVAILABLE},  # one member only
    ]
    for case in cases:
        chain = Chain()
        run, cid, step, leaves = chain.first_challenge(MINER, forged=set(range(1, STEPS + 1)))
        # Whoever got valid files replays the honest state (not the forged
        # leaf's); whoever did not says what it got.
        v = chain.judge(run, cid, step, {w: honest_state(step) if f == "replays" else f for w, f in case.items()})
        assert (v["verdict"], v["cause"], v["miner_slashable"], v["minority"]) == ("fail", "blame", True, []), v
        assert v["cluster_stake"] == 30
        assert chain.ledger.apply({"call": "run_info", "run_id": run})["slashable"]
        assert chain.ledger.apply({"call": "account_info", "identity": MINER.hex()}) == \
            {"ok": True, "identity": MINER.hex(), "free": 0, "locked": 0}
        assert chain.ledger.apply({"call": "ledger_info"})["burned"] == LEDGER_BONDS["miner_bond"]


def test_attack_members_claiming_they_were_served_nothing_cannot_fail_an_honest_step():
    """The griefer's side of withholding: against an honest miner that
    served everyone, a coalition holding a minority of the committee's stake
    claims it got nothing or a corrupted sample. The honest majority
    replayed the opened state: PASS, and the claimants are the minority."""
    chain = Chain({**HONEST, **COLLUDERS})
    run, cid, step, leaves = chain.first_challenge(MINER)
    claims = {w: UNAVAILABLE if i % 2 else invalid_opening("pre_state_digest") for i, w in enumerate(COLLUDERS)}
    v = chain.judge(run, cid, step, {**{w: honest_state(step) for w in HONEST}, **claims})
    assert (v["verdict"], v["cluster_stake"], v["miner_slashable"]) == ("pass", 60, False), v
    assert v["minority"] == sorted(w.hex() for w in COLLUDERS)


def test_attack_misconfigured_verifiers_do_not_slash_an_honest_miner():
    """Attack 6: three verifiers replaying an honest run on 2 threads (the
    spec pins 1) agreed on one wrong digest: FAIL, and the honest miner was
    slashable. Each member now states the environment pot's replay ran in;
    an environment that cannot judge the step bitwise is recorded as
    misconfigured and not counted, so the challenge is INCONCLUSIVE (not
    FAIL) and the record names them. Stated as the spec's, the same three
    would be a provably wrong majority: accountable, not anonymous."""
    chain = Chain({b"m1": 10, b"m2": 10, b"m3": 10, b"honest": 10})
    run, cid, step, leaves = chain.first_challenge(MINER)
    two_threads = dict(spec_environment(chain), intra_op_threads=2)
    wrong = d("a 2-thread replay")
    v = chain.judge(run, cid, step, {b"m1": wrong, b"m2": wrong, b"m3": wrong, b"honest": honest_state(step)},
                    environments={b"m1": two_threads, b"m2": two_threads, b"m3": two_threads})
    assert (v["verdict"], v["miner_slashable"]) == ("inconclusive", False), v
    assert v["misconfigured"] == sorted(w.hex() for w in (b"m1", b"m2", b"m3"))
    assert v["cause"] == "participation"  # a new committee could decide; not a split for the dispute game
    assert "30 misconfigured" in v["reason"]
    assert not chain.ledger.apply({"call": "run_info", "run_id": run})["slashable"]
    # Verifiers fed another program or spec than the task's (checks 19, 18)
    # state a fault of their own inputs, not of the opening: not counted.
    chain = Chain({b"m1": 10, b"m2": 10, b"m3": 10, b"honest": 10})
    run, cid, step, leaves = chain.first_challenge(MINER)
    v = chain.judge(run, cid, step, {b"m1": invalid_opening("program"), b"m2": invalid_opening("program"),
                                     b"m3": invalid_opening("spec"), b"honest": honest_state(step)})
    assert (v["verdict"], v["miner_slashable"]) == ("inconclusive", False), v
    assert v["misconfigured"] == sorted(w.hex() for w in (b"m1", b"m2", b"m3"))
    # The honest counterpart: verifiers configured as the spec says replay
    # the opened state: PASS.
    chain = Chain({b"m1": 10, b"m2": 10, b"m3": 10, b"honest": 10})
    run, cid, step, leaves = chain.first_challenge(MINER)
    v = chain.judge(run, cid, step, {w: honest_state(step) for w in (b"m1", b"m2", b"m3", b"honest")})
    assert (v["verdict"], v["misconfigured"]) == ("pass", []), v


def test_a_statement_committed_for_one_challenge_opens_on_no_other():
    """A member cannot carry a commitment (its own, or one copied from
    another member) across challenges: the statement binds the challenge id
    and mode, and the commitment the identity."""
    chain = Chain()
    run, leaves, log = chain.run(MINER)
    chain.block()
    issued = chain.call("issue_challenge", run_id=run)
    (c0, s0), (c1, s1) = list(zip(issued["challenge_ids"], issued["steps"]))[:2]
    for cid, step in ((c0, s0), (c1, s1)):
        chain.open(MINER, cid, step, leaves, log)
    salt = b"s" * 32
    st = chain.statement(run, c0, s0, replayed(honest_state(s0)))
    chain.call("commit_witness", caller=b"alice".hex(), challenge_id=c1,
               commitment=pot.witness_commitment(st, salt, b"alice").hex())
    chain.now += CONFIG["commit_window"] + 1
    with pytest.raises(pot.ProofMismatchError, match="does not open"):
        chain.call("reveal_witness_value", caller=b"alice".hex(), challenge_id=c1, **replayed(honest_state(s0)),
                   environment=spec_environment(chain), salt=salt.hex())


def test_attack_a_lazy_witness_copying_the_opened_digest_is_recorded_unreplayed():
    """Attack 5: `opened_state` is public before witnesses commit, so a
    witness could commit the right answer for an honest run without
    replaying anything. A bitwise statement now also carries the digest of
    the step's gradient, which only a replay gives (the miner never
    publishes it, docs/PROTOCOL.md 19): the lazy members, guessing it, stand
    apart from the ones that replayed, are recorded as `unreplayed` and are
    not counted. Against a forger, a copied digest is simply wrong."""
    for forged in (False, True):
        chain = Chain({**HONEST, **COLLUDERS})
        run, cid, step, leaves = chain.first_challenge(MINER, forged=set(range(1, STEPS + 1)) if forged else set())
        opened = leaves[step - 1].state_digest
        lazy = {w: replayed(opened, grad=d("a guessed gradient")) for w in COLLUDERS}
        v = chain.judge(run, cid, step, {**{w: honest_state(step) for w in HONEST}, **lazy})
        colluders = sorted(w.hex() for w in COLLUDERS)
        if forged:
            assert (v["verdict"], v["minority"], v["unreplayed"]) == ("fail", colluders, []), v
        else:
            assert (v["verdict"], v["cluster_stake"], v["minority"]) == ("pass", 60, []), v
            assert v["unreplayed"] == colluders


def test_attack_history_does_not_fill_the_state():
    """Attack 7: finalized challenges were never pruned, so history alone,
    honest or not, pushed the saved state past the 64 MiB save() cap. Now a
    run whose challenges are all final closes: its challenges and
    commitment are pruned, each outcome is a record in the outcome log (its
    root in the state, its records in the finalize results), and the closed
    run keeps its key (task, miner), its slashable flag and what a dispute
    after the close needs (final root, size, S_0). Thirty
    honest runs, each challenged 8 or 9 times (step 1 for certain) and witnessed, leave the state
    larger by that residue alone; a chain proves any record against the
    logged root with an RFC 9162 inclusion proof. Once the task's end has
    passed, the task is pruned with its closed runs (and its void ones),
    and the residue goes too."""
    end = 1000
    chain = Chain(end_height=end)
    empty = len(chain.ledger.save())
    sizes, records = [], pot.Tree()
    for i in range(30):
        miner = b"miner %d" % i
        run, leaves, log = chain.run(miner)
        chain.block()
        issued = chain.call("issue_challenge", run_id=run)
        pairs = list(zip(issued["challenge_ids"], issued["steps"]))
        for cid, step in pairs:
            chain.open(miner, cid, step, leaves, log)
        open_size = len(chain.ledger.save())
        for v in chain.witness(run, pairs):
            assert v["verdict"] == "pass"
            records.append(bytes.fromhex(v["outcome"]))
        assert v["run_closed"]
        info = chain.ledger.apply({"call": "run_info", "run_id": run})
        assert (info["closed"], info["slashable"], info["declared_steps"]) == (True, False, STEPS)
        assert (info["latest_root"], info["seal_height"]) == (log.root().hex(), None)  # kept for disputes
        with pytest.raises(pot.StateError, match="final and pruned"):
            chain.ledger.apply({"call": "challenge_info", "challenge_id": pairs[0][0]})
        # Registering the run again names the closed run (the key is kept),
        # which takes no root and no new draw: finished work is not paid twice.
        with pytest.raises(pot.StateError, match="is closed"):
            chain.run(miner, deposit=False)
        with pytest.raises(pot.StateError, match="is closed"):
            chain.call("issue_challenge", run_id=run)
        sizes.append(len(chain.ledger.save()))
        assert sizes[-1] < open_size
    # The closed runs' residue: a run id, a task id, the miner's name, the
    # step count, the final root and S_0 (a dispute may follow the close)
    # and a few tags; the outcome log's border; nothing per challenge.
    per_run = (sizes[-1] - sizes[0]) / 29
    assert per_run < 160, per_run
    assert sizes[-1] - empty < 30 * 160 + 8 + 64 * 32
    ledger = chain.ledger.apply({"call": "ledger_info"})
    # 8 drawn rounds per run, and step 1 where the draw missed it.
    assert (ledger["outcome_count"], ledger["closed_runs"], ledger["kept_challenges"]) == (len(records), 30, 0)
    assert 240 < len(records) <= 270
    assert ledger["outcome_root"] == records.root().hex()
    # Any record against the logged root.
    index = 77
    pot.verify_inclusion(index, len(records), pot.leaf_hash(chain.records[index]), records.inclusion_proof(index),
                         bytes.fromhex(ledger["outcome_root"]))

    # A run registered but never sealed by the end is void; nothing
    # registers or seals after the end; pruning waits for it.
    idle = b"idle miner"
    c = pot.Commitment({
        "task_id": chain.task.id.hex(), "initial_state_digest": d("S_0").hex(),
        "schedule_root": d("schedule").hex(), "dataset_root": d("dataset").hex(), "dataset_size": 1000,
        "spec_digest": chain.task.spec.digest().hex(), "declared_steps": STEPS, "miner_identity": idle.hex()})
    fund(chain.ledger, chain.now, idle, amount=LEDGER_BONDS["miner_bond"])
    idle_run = chain.call("start_training_commitment", caller=idle.hex(), commitment=c.encode().hex())["run_id"]
    assert chain.now < end
    chain.now = end
    with pytest.raises(pot.StateError, match="until height 1000"):
        chain.call("prune_task", task_id=chain.task.id.hex())
    chain.now = end + 1
    with pytest.raises(pot.StateError, match="ended at height 1000"):
        chain.call("post_checkpoint_root", caller=idle.hex(), run_id=idle_run, size=STEPS, root=d("late").hex(),
                   consistency_proof="")
    with pytest.raises(pot.StateError, match="ended at height 1000"):
        chain.run(b"late miner")
    before = len(chain.ledger.save())
    bond = LEDGER_BONDS["miner_bond"]
    assert chain.call("prune_task", task_id=chain.task.id.hex()) == \
        {"ok": True, "closed_runs": 30, "void_runs": 1, "released": LEDGER_BONDS["task_bond"] + 31 * bond}
    # The miners take their bonds back (docs/ledger.md 2.18).
    for who in [b"miner %d" % i for i in range(30)] + [idle]:
        assert chain.ledger.apply({"call": "account_info", "identity": who.hex()})["free"] == bond
        chain.call("withdraw", caller=who.hex(), amount=bond)
    after = len(chain.ledger.save())
    assert before - after > 30 * 70 and after < empty  # the residue and the task are gone
    ledger = chain.ledger.apply({"call": "ledger_info"})
    assert (ledger["tasks"], ledger["open_runs"], ledger["closed_runs"]) == (0, 0, 0)
    assert (ledger["outcome_count"], ledger["outcome_root"]) == (len(records), records.root().hex())
    # A judged run cannot be registered again: its task is gone, and cannot
    # be posted again past its end.
    with pytest.raises(pot.NotFoundError):
        chain.run(b"miner 0")
    with pytest.raises(pot.StateError, match="ended at height 1000"):
        chain.call("post_task", caller=OWNER.hex(), task=chain.task.encode().hex())


def test_attack_a_silent_coalition_is_replaced_and_the_forged_step_fails():
    """A coalition holding two thirds of a forged step's committee stays
    silent (one commits and never reveals, one does nothing): a third of
    the stake is counted, too little to decide, and the step used to end
    INCONCLUSIVE: the forger escaped slashing. Now the attempt is logged,
    naming the coalition silent, and the challenge is re-run with a
    committee drawn from randomness posted after the failure, without
    them. The new committee replays honestly: FAIL, slashable."""
    verifiers = {b"verifier %d" % i: 10 for i in range(9)}
    chain = Chain(verifiers, config=dict(CONFIG, max_committee_size=3, max_attempts=3))
    run, cid, step, _ = chain.first_challenge(MINER, forged=set(range(1, STEPS + 1)))
    honest, *coalition = sorted(chain.committee(cid))
    v = chain.judge(run, cid, step, {honest: honest_state(step), coalition[0]: None})
    assert (v["verdict"], v["cause"], v["rerun"]) == ("inconclusive", "participation", True)
    assert v["silent"] == [c.hex() for c in coalition]
    assert not chain.ledger.apply({"call": "run_info", "run_id": run})["slashable"]
    info = chain.ledger.apply({"call": "challenge_info", "challenge_id": cid})
    assert (info["final"], info["attempt"], info["committee"]) == (False, 1, [])
    assert info["excluded"] == [c.hex() for c in coalition]
    # The coalition cannot come back; the new committee is unknown until
    # the next block's randomness.
    with pytest.raises(pot.StateError, match="awaits a new committee"):
        chain.call("commit_witness", caller=coalition[0].hex(), challenge_id=cid, commitment=d("late").hex())
    with pytest.raises(pot.StateError, match="waits for the chain randomness"):
        chain.call("redraw_committee", challenge_id=cid)
    chain.block(CONFIG["draw_delay"])
    redraw = chain.call("redraw_committee", challenge_id=cid)
    new = [bytes.fromhex(m["identity"]) for m in redraw["committee"]]
    assert redraw["attempt"] == 2 and len(new) == 3 and not set(new) & set(coalition)
    v = chain.judge(run, cid, step, {w: honest_state(step) for w in new})
    assert (v["verdict"], v["cause"], v["rerun"]) == ("fail", "blame", False)
    assert chain.ledger.apply({"call": "run_info", "run_id": run})["slashable"]
    # Both attempts are in the outcome log (checked against the
    # independent encoding by Chain.finalize).
    assert [r[23:27] for r in chain.records] == [b"\x01\0\0\0", b"\x02\0\0\0"]



def test_attack_a_split_committee_is_settled_by_a_dispute_after_the_run_closed():
    """docs/security.md 6.1: a forger's accomplices reveal its forged digests
    with as much stake as the honest members, so every challenge ends
    INCONCLUSIVE `split` and the last finalization closes the run. The
    closed run keeps its final root (ledger state format 5), so an honest
    member disputes a challenged step after the close; the forger, whose
    forged digest no honest trace ends in, stays silent and loses by
    default: its closed run is slashable, and the record names it. Carol
    gets her dispute bond back and her costs from the miner's bond; the
    rest of it burns (docs/ledger.md 2.18)."""
    verifiers = {b"alice": 10, b"bob": 10, b"carol": 10, b"dave": 10}
    chain = Chain(verifiers, config=dict(CONFIG, dispute_window=5, referee=b"referee"))
    run, leaves, log = chain.run(MINER, forged=set(range(1, STEPS + 1)))
    chain.block()
    issued = chain.call("issue_challenge", run_id=run)
    challenges = list(zip(issued["challenge_ids"], issued["steps"]))
    for cid, step in challenges:
        chain.open(MINER, cid, step, leaves, log)
    accomplices, honest = (b"alice", b"bob"), (b"carol", b"dave")

    def finding(w, step):
        return replayed(leaves[step - 1].state_digest if w in accomplices else honest_state(step))

    def salt(w, cid):
        return hashlib.sha256(w + b"salt %d" % cid).digest()
    for cid, step in challenges:
        for w in verifiers:
            st = chain.statement(run, cid, step, finding(w, step))
            chain.call("commit_witness", caller=w.hex(), challenge_id=cid,
                       commitment=pot.witness_commitment(st, salt(w, cid), w).hex())
    info = chain.ledger.apply({"call": "challenge_info", "challenge_id": challenges[0][0]})
    chain.now = info["commit_deadline"] + 1
    for cid, step in challenges:
        for w in verifiers:
            chain.call("reveal_witness_value", caller=w.hex(), challenge_id=cid, **finding(w, step),
                       environment=spec_environment(chain), salt=salt(w, cid).hex())
    chain.now = info["reveal_deadline"] + 1
    verdicts = [chain.finalize(cid) for cid, _ in challenges]
    assert {(v["verdict"], v["cause"]) for v in verdicts} == {("inconclusive", "split")}
    closed = chain.ledger.apply({"call": "run_info", "run_id": run})
    assert (closed["closed"], closed["slashable"], closed["latest_root"]) == (True, False, log.root().hex())

    # Carol disputes the first challenged step t from the miner's S_{t-1}.
    _, t = challenges[0]
    lo = ({"lo_leaf": leaves[t - 2].encode().hex(), "lo_proof": log.inclusion_proof(t - 2, STEPS).hex()} if t > 1
          else {"lo_leaf": "", "lo_proof": ""})
    opened = chain.call("open_dispute", caller=honest[0].hex(), run_id=run, **lo,
                        hi_leaf=leaves[t - 1].encode().hex(), hi_proof=log.inclusion_proof(t - 1, STEPS).hex(),
                        claim=honest_state(t).hex())
    assert (opened["ended"], opened["phase"]) == (False, "traces")
    # Her trace of step t (here its post-state node alone, giving her S_t).
    post = pot.op_node_from_json({"name": "pot::post_state", "overload": "", "inputs": [],
                                  "outputs": [{"digest": honest_state(t).hex()}]})
    chain.call("commit_trace", caller=honest[0].hex(), dispute_id=opened["dispute_id"], size=1,
               root=pot.sha256(b"\0" + post).hex(), post_node=post.hex(), post_proof="")
    # The forger cannot bring a trace ending in its digest that an honest
    # referee would uphold; it stays silent and loses at the deadline.
    chain.now = opened["deadline"] + 1
    end = chain.call("settle_dispute", dispute_id=opened["dispute_id"])
    assert (end["outcome"]["end"], end["outcome"]["losers"], end["outcome"]["step"]) == ("miner_default", ["miner"], t)
    assert chain.ledger.apply({"call": "run_info", "run_id": run})["slashable"]
    assert pot.Ledger.load(chain.ledger.save()).apply({"call": "run_info", "run_id": run})["slashable"]
    costs = LEDGER_BONDS["dispute_bond"]
    assert chain.ledger.apply({"call": "account_info", "identity": honest[0].hex()})["free"] == FUNDS + costs
    assert chain.ledger.apply({"call": "account_info", "identity": MINER.hex()})["locked"] == 0
    assert chain.ledger.apply({"call": "ledger_info"})["burned"] == LEDGER_BONDS["miner_bond"] - costs
