"""A whole opening flow through the binding: a toy run (8 samples, 6 steps
of batch 2, as samples/protocol_flow makes one), challenges, the miner's
openings and their verification, honest and tampered."""

from array import array

import pytest

import pot
from conftest import f32bytes, want_error

SAMPLES, STEPS, BATCH, SEED = 8, 6, 2, 1234


def write_vector(path, name, values):
    with pot.SafetensorsWriter() as w:
        w.add(name, "F32", [len(values)], f32bytes(*values))
        w.write(path)


class Run:
    """With `streamed`, the dataset is a token stream (docs/PROTOCOL.md 15.1):
    train.bin of 3000 uint16 tokens, windows of 17, opened as window proofs."""

    def __init__(self, d, streamed=False):
        self.dir = d
        self.dataset, self.schedule, self.log = pot.Tree(), pot.Tree(), pot.Tree()
        self.stream = None
        self.n = SAMPLES
        if streamed:
            tokens = array("H", [(7 * j + 3) % 50257 for j in range(3000)])
            with open(d / "train.bin", "wb") as f:
                tokens.tofile(f)
            root, count = pot.shard_root_file(d / "train.bin")
            self.stream = pot.Stream({"token_dtype": "U16", "output_dtype": "I64", "window": 17,
                                      "views": [{"name": "x", "start": 0, "length": 16},
                                                {"name": "y", "start": 1, "length": 16}],
                                      "shards": [{"tokens": count, "root": root.hex()}]})
            self.n = self.stream.size
        for i in range(0 if streamed else SAMPLES):
            p = d / f"sample-{i}.safetensors"
            write_vector(p, "x", [float(i), float(i * i)])
            self.dataset.append(pot.sample_digest(p.read_bytes()))
        w = [0.5, -1.0, 2.0, 0.25]
        self.states = []
        for step in range(STEPS + 1):
            if step:
                w = [x * 0.9 + 0.01 * step for x in w]
                self.schedule.append(pot.seeded_schedule_entry(SEED, self.n, BATCH, 1, step))
            write_vector(self.state_path(step), "param/w", w)
            self.states.append(pot.safetensors_digest_file(self.state_path(step), 1))
        self.commitment = pot.Commitment({
            "initial_state_digest": str(self.states[0]), "schedule_root": str(self.schedule.root()),
            "task_id": "77" * 32,
            "dataset_root": str(self.stream.root if self.stream else self.dataset.root()), "dataset_size": self.n,
            "spec_digest": "00" * 32, "declared_steps": STEPS, "miner_identity": "6d696e6572"})
        self.run_id = self.commitment.run_id
        # The leaves name the run and commit each step's update norm.
        for step in range(1, STEPS + 1):
            self.log.append(self.leaf(step).encode())
        self.log_root = self.log.root(STEPS)

    def leaf(self, step):
        with pot.Safetensors(self.state_path(step - 1)) as a, pot.Safetensors(self.state_path(step)) as b:
            norm = pot.update_norm(a, b, "param/")
        stats = pot.state_stats(self.state_path(step)).digest
        return pot.StepLeaf(self.run_id, step, self.states[step], stats, 1 / step, norm)

    def state_path(self, t):
        return self.dir / f"state-{t}.safetensors"

    def open(self, step, window_of=None):
        """The manifest of `step` as the miner serves it (window_of: serve
        the proof of window window_of(i) for scheduled window i)."""
        with pot.Opening(self.run_id, step, STEPS, self.states[step - 1]) as o:
            if step > 1:
                o.set_pre_leaf(self.leaf(step - 1).encode(),
                               self.log.inclusion_proof(step - 2, STEPS))
            o.set_post_leaf(self.leaf(step).encode(),
                            self.log.inclusion_proof(step - 1, STEPS))
            entry = pot.seeded_schedule_entry(SEED, self.n, BATCH, 1, step)
            o.set_schedule(entry, self.schedule.inclusion_proof(step - 1, STEPS))
            e = pot.ScheduleEntry.decode(entry)
            assert e.step == step and len(e.microbatches) == 1 and len(e.indices) == BATCH
            if self.stream:
                o.set_stream(self.stream.encode())
            for idx in e.indices:
                if self.stream:
                    served = window_of(idx) if window_of else idx
                    o.add_window(idx, self.stream.prove_window(served, self.dir / "train.bin"))
                    continue
                o.add_sample(idx, (self.dir / f"sample-{idx}.safetensors").read_bytes(),
                             self.dataset.inclusion_proof(idx, SAMPLES))
            o.set_state_refs(self.state_path(step - 1).name, None)
            # The run record (check 32): every leaf, every table, the flags.
            tables = [pot.state_stats(self.state_path(t)) for t in range(1, STEPS + 1)]
            o.set_run_record(b"".join(self.leaf(t).encode() for t in range(1, STEPS + 1)), tables,
                             [s.step for s in pot.run_flags(tables)])
            assert repr(o) == f"<pot.Opening step {step}>"
            assert o.digest() != bytes(32)
            return o.encode()

    def close(self):
        for h in (self.dataset, self.schedule, self.log, self.commitment, self.stream):
            if h is not None:
                h.close()


@pytest.fixture
def run(tmp_path):
    r = Run(tmp_path)
    yield r
    r.close()


def test_opening_flow(run):
    steps = pot.challenge_derive(b"beacon", run.run_id, STEPS, 2)
    for step in steps + [1]:
        m = run.open(step)
        assert pot.verify_opening(run.commitment, step, STEPS, run.log_root, m, run.state_path(step - 1),
                                  run.state_path(step), 1) is None
        # Without state files only the manifest is checked.
        pot.verify_opening(run.commitment, step, STEPS, run.log_root, m)


def test_stream_opening_flow(tmp_path):
    """Windows of a token stream opened as window proofs verify; the proof of
    another window for a scheduled one (training on other tokens) does not."""
    run = Run(tmp_path, streamed=True)
    try:
        assert run.n == 3000 - 16
        for step in (1, 4):
            pot.verify_opening(run.commitment, step, STEPS, run.log_root, run.open(step), run.state_path(step - 1),
                               run.state_path(step), 1)
        forged = run.open(2, window_of=lambda i: (i + 1) % run.n)
        with pytest.raises(pot.ProofMismatchError) as e:
            pot.verify_opening(run.commitment, 2, STEPS, run.log_root, forged)
        assert e.value.check is pot.OpeningCheck.SAMPLE_PROOF
        assert "the proof is of window" in str(e.value)
    finally:
        run.close()


@pytest.mark.parametrize("case", ["wrong log root", "truncated manifest", "wrong pre-state", "wrong post-state",
                                  "missing state", "other run", "another step"])
def test_tampered_openings(run, case):
    step = 3
    m = run.open(step)
    args = dict(commitment=run.commitment, challenged_step=step, log_size=STEPS, log_root=run.log_root,
                manifest=m, pre_state_path=None, post_state_path=None, threads=1)
    check, cls, code = {
        "wrong log root": (pot.OpeningCheck.POST_LEAF_PROOF, pot.ProofMismatchError, pot.Status.PROOF_MISMATCH),
        "truncated manifest": (pot.OpeningCheck.MANIFEST, pot.MalformedError, pot.Status.MALFORMED),
        "wrong pre-state": (pot.OpeningCheck.PRE_STATE_DIGEST, pot.ProofMismatchError, pot.Status.PROOF_MISMATCH),
        "wrong post-state": (pot.OpeningCheck.POST_STATE_DIGEST, pot.ProofMismatchError,
                             pot.Status.PROOF_MISMATCH),
        "missing state": (pot.OpeningCheck.PRE_STATE_DIGEST, pot.IoError, pot.Status.IO),
        "other run": (pot.OpeningCheck.RUN_ID, pot.ProofMismatchError, pot.Status.PROOF_MISMATCH),
        "another step": (pot.OpeningCheck.STEP, pot.ProofMismatchError, pot.Status.PROOF_MISMATCH),
    }[case]
    other = None
    if case == "wrong log root":
        args["log_root"] = run.states[0]
    elif case == "truncated manifest":
        args["manifest"] = m[:-1]
    elif case == "wrong pre-state":
        args["pre_state_path"] = run.state_path(step)
    elif case == "wrong post-state":
        args["pre_state_path"] = args["post_state_path"] = run.state_path(step - 1)
    elif case == "missing state":
        args["pre_state_path"] = run.dir / "missing"
    elif case == "other run":
        other = pot.Commitment({
            "initial_state_digest": str(run.states[0]), "schedule_root": str(run.states[0]), "task_id": "77" * 32,
            "dataset_root": str(run.states[0]), "dataset_size": 8, "spec_digest": "00" * 32, "declared_steps": 6,
            "miner_identity": "6f74686572"})
        args["commitment"] = other
    elif case == "another step":
        args["challenged_step"] = step + 1  # a valid opening of 3 answers no challenge of 4
    try:
        with pytest.raises(pot.Error) as e:
            pot.verify_opening(**args)
        want_error(e, cls, code)
        assert e.value.check is check, f"{case}: {e.value.check} ({e.value})"
    finally:
        if other is not None:
            other.close()


def test_opening_setters():
    with pot.Opening(pot.sha256(b"r"), 1, 1, pot.sha256(b"s")) as o:
        before = o.encode()
        o.set_state_refs("pre.safetensors", None)
        assert o.encode() != before
    with pytest.raises(pot.StateError):
        o.set_state_refs("pre.safetensors", None)
