"""Replay through the binding: program digests, Replay.step against eager
PyTorch bit for bit, the recorder and checkpoint store, verify_step with
its partial result, and the run of tests/replay/make_fixture.sh when
POT_REPLAY_FIXTURE names one."""

import hashlib
import json
import os
import shutil
import struct

import pytest

import pot
from conftest import spec_json, want_error

torch = pytest.importorskip("torch")

needs_torch = pytest.mark.skipif(not pot.replay_available(), reason="libpot was built without LibTorch "
                                 "(test_availability checks UnsupportedError)")


def test_program_digest_file(tmp_path):
    path = tmp_path / "program.pt"
    path.write_bytes(b"abc")
    # tagged(tag, data) = SHA-256(u8(len(tag)) || tag || data), with hashlib.
    assert pot.program_digest_file(path) == hashlib.sha256(b"\x0epot/v1/program" + b"abc").digest()
    with pytest.raises(pot.IoError) as e:
        pot.program_digest_file(tmp_path / "missing.pt")
    want_error(e, pot.IoError, pot.Status.IO)


def test_availability(tmp_path):
    """replay_available() tells what the replay, recorder and checkpoint
    constructors do."""
    program = tmp_path / "program.pt"
    program.write_bytes(b"abc")
    spec = pot.Spec(spec_json(pot.program_digest_file(program)))
    other = pot.Spec(spec_json(bytes([1]) * 32))
    if not pot.replay_available():
        for fn in (lambda: pot.Replay(spec, program), lambda: pot.Recorder(tmp_path / "ck", spec, program, 1),
                   lambda: pot.Checkpoints(tmp_path / "ck")):
            with pytest.raises(pot.UnsupportedError):
                fn()
        return
    with pytest.raises(pot.IoError):
        pot.Replay(spec, tmp_path / "missing.pt")
    with pytest.raises(pot.ProofMismatchError):
        pot.Replay(other, program)  # not the spec's program
    with pytest.raises(pot.InvalidArgumentError):
        pot.Replay(spec, program)  # the spec's digest, but not TorchScript
    with pytest.raises(pot.IoError):
        pot.Recorder(tmp_path / "ck-missing", spec, tmp_path / "missing.pt", 1)
    with pytest.raises(pot.ProofMismatchError):
        pot.Recorder(tmp_path / "ck-other", other, program, 1)
    with pytest.raises(pot.InvalidArgumentError):
        pot.Recorder(tmp_path / "ck-zero", spec, program, 0)
    with pytest.raises(pot.NotFoundError):
        pot.Checkpoints(tmp_path / "nothing-here")


# --------------------------------------------------------------------------
# A tiny model program, trained eagerly here and replayed by libpot.

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 1)

    def forward(self, x, y):
        return torch.nn.functional.mse_loss(self.lin(x).squeeze(-1), y)


LR = 0.1
BASE_SEED = 7
RUN = hashlib.sha256(b"the tiny run").digest()  # a run id for replays outside a recorded run
N_SAMPLES = 4


def sample_bytes(dir_, i, nan=False):
    """Sample i as a safetensors file of the dataset directory."""
    x = torch.tensor([float(i), 1.0, -0.5 * i]) if not nan else torch.tensor([float("nan"), 1.0, 0.0])
    y = torch.tensor(0.25 * i)
    path = dir_ / f"{i:06d}.safetensors"
    with pot.SafetensorsWriter() as w:
        w.add("x", "F32", x.shape, x)
        w.add("y", "F32", y.shape, y)
        w.write(path)
    return path.read_bytes()


def state_writer(model, lr):
    """The canonical state of docs/PROTOCOL.md 21.1 (SGD without momentum:
    no optimizer entries), the tensors borrowed without copies."""
    w = pot.SafetensorsWriter()
    for name, p in model.named_parameters():
        w.add("param/" + name, "F32", p.shape, p.detach())
    w.add("hparam/lr", "F64", [], struct.pack("<d", lr))
    return w


def eager_step(model, opt, batch, grads=None):
    """One step as section 21.3 says, one micro-batch. `grads`, a dict, gets
    the gradient the optimizer consumes, as the state of docs/PROTOCOL.md 19
    digests it: {"grad/<name>": (dtype, shape, bytes)}."""
    model.train()
    opt.zero_grad(set_to_none=True)
    xs = torch.stack([b[0] for b in batch])
    ys = torch.stack([b[1] for b in batch])
    loss = model(xs, ys) / 1
    loss.backward()
    if grads is not None:
        for name, p in model.named_parameters():
            grads["grad/" + name] = ("F32", list(p.grad.shape), p.grad.detach().clone().numpy().tobytes())
    opt.step()
    return float(loss.item())


@pytest.fixture
def tiny(tmp_path):
    torch.manual_seed(0)
    model = Tiny()
    program = tmp_path / "program.pt"
    torch.jit.script(model).save(str(program))
    spec = pot.Spec(spec_json(pot.program_digest_file(program), optimizer={"kind": "sgd", "lr": LR},
                              seed_policy={"kind": "per_step", "base_seed": BASE_SEED}))
    data = tmp_path / "samples"
    data.mkdir()
    samples = [sample_bytes(data, i) for i in range(N_SAMPLES)]
    yield {"model": model, "program": program, "spec": spec, "data": data, "samples": samples, "dir": tmp_path}
    spec.close()


def load_sample(raw):
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".safetensors") as f:
        f.write(raw)
        f.flush()
        with pot.Safetensors(f.name) as s:
            return tuple(torch.frombuffer(bytearray(s.tensor_data(n)), dtype=torch.float32).reshape(s.tensor(n).shape)
                         for n in ("x", "y"))


@needs_torch
def test_replay_step_matches_eager_pytorch(tiny):
    model, spec, program = tiny["model"], tiny["spec"], tiny["program"]
    s0 = tiny["dir"] / "s0.safetensors"
    with state_writer(model, LR) as w:
        w.write(s0)
    entry = pot.ScheduleEntry(1, [[2, 3]]).encode(N_SAMPLES)
    batch = [tiny["samples"][2], tiny["samples"][3]]

    with pot.Replay(spec, program) as r:
        assert r.input_names == ["x", "y"] and r.input_name(1) == "y"
        with pytest.raises(pot.OutOfRangeError):
            r.input_name(2)
        # Under per_step the seed names the run: a step without its run is refused.
        with pytest.raises(pot.InvalidArgumentError, match="names its run"):
            r.step(s0, entry, batch)
        got = r.step(s0, entry, batch, tiny["dir"] / "s1.safetensors", run_id=RUN)
        # A NaN input gives a NaN loss: POT_E_NONFINITE.
        nan = sample_bytes(tiny["dir"], 99, nan=True)
        with pytest.raises(pot.NonFiniteError) as e:
            r.step(s0, entry, [nan, batch[1]], run_id=RUN)
        want_error(e, pot.NonFiniteError, pot.Status.NONFINITE)
        with pytest.raises(pot.InvalidArgumentError):
            r.step(s0, entry, batch[:1], run_id=RUN)  # a batch that does not fit the entry
        # The rate is the spec's, not the state's: S_0 holding another one is refused.
        with state_writer(model, 2 * LR) as w:
            w.write(tiny["dir"] / "s0-fast.safetensors")
        with pytest.raises(pot.InvalidArgumentError, match="hparam/lr = 0.20000000000000001, the spec's "
                                                            "learning-rate schedule gives step 1 the rate 0.1"):
            r.step(tiny["dir"] / "s0-fast.safetensors", entry, batch, run_id=RUN)
    with pytest.raises(pot.StateError):
        r.step(s0, entry, batch)

    torch.manual_seed(pot.seed(BASE_SEED, RUN, 1))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    grads = {}
    loss = eager_step(model, opt, [load_sample(b) for b in batch], grads)
    with state_writer(model, LR) as w:
        w.write(tiny["dir"] / "eager1.safetensors")
    # The gradient digest a witness states is the digest of eager PyTorch's
    # gradient, bit for bit (docs/PROTOCOL.md 19).
    assert got.gradient_digest == pot.state_digest(grads)
    assert got.gradient_digest != pot.state_digest({k: (d, s, bytes(len(b))) for k, (d, s, b) in grads.items()})
    want = pot.safetensors_digest_file(tiny["dir"] / "eager1.safetensors")
    assert got.post_state_digest == want == pot.safetensors_digest_file(tiny["dir"] / "s1.safetensors")
    assert struct.pack("<d", got.loss) == struct.pack("<d", loss)
    assert got.norm_bucket == pot.norm_bucket(got.update_norm, spec.norm_bucket_resolution)


def record(tiny, ck, tamper_step=None, every=2, steps=3):
    """Trains `steps` steps eagerly under a Recorder; returns (commitment,
    root, entries, state digests)."""
    model, spec = tiny["model"], tiny["spec"]
    dataset = pot.Tree()
    for raw in tiny["samples"]:
        dataset.append(pot.sample_digest(raw))
    entries = [pot.seeded_schedule_entry(5, N_SAMPLES, 2, 1, t) for t in range(1, steps + 1)]
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    with pot.Recorder(ck, spec, tiny["program"], every) as rec:
        with pytest.raises(pot.StateError):
            rec.begin_step(1)  # S_0 first
        with state_writer(model, LR) as w:
            d0 = rec.start(w)
        # Under per_step the seed names the run: no step before the commitment.
        with pytest.raises(pot.StateError, match="names the run; set the commitment"):
            rec.begin_step(1)
        commitment = pot.Commitment({
            "initial_state_digest": str(d0), "schedule_root": str(pot.seeded_schedule_root(5, N_SAMPLES, 2, 1, steps)),
            "task_id": "77" * 32, "dataset_root": str(dataset.root()), "dataset_size": N_SAMPLES,
            "spec_digest": str(spec.digest()), "declared_steps": steps, "miner_identity": "6d696e6572"})
        dataset.close()
        with pytest.raises(pot.InvalidArgumentError):
            rec.set_commitment(commitment, entries[:-1])
        rec.set_commitment(commitment, entries)
        states = [d0]
        for t in range(1, steps + 1):
            seed = rec.begin_step(t)
            # The seed policy went to the generator torch itself uses.
            assert seed == pot.seed(BASE_SEED, commitment.run_id, t) == torch.initial_seed()
            batch = [load_sample(tiny["samples"][i]) for i in pot.ScheduleEntry.decode(entries[t - 1]).indices]
            loss = eager_step(model, opt, batch)
            if t == tamper_step:
                with torch.no_grad():
                    model.lin.bias.add_(1e-3)  # a forged update
            with state_writer(model, LR) as w:
                d = rec.end_step(w, loss)
            states.append(d)
        with pytest.raises(pot.OutOfRangeError):
            rec.begin_step(steps + 1)  # past the declared steps
        assert rec.size == len(rec) == steps
        root = rec.finish()
        assert root == rec.root() and rec.root(1) != root
        pot.verify_consistency(1, steps, rec.root(1), root, rec.consistency_proof(1))
    return commitment, root, entries, states


@needs_torch
def test_recorder_refuses_states_its_leaf_norm_cannot_cover(tiny):
    """Each leaf commits the update norm over the param/ tensors from S_{t-1}
    to S_t (docs/PROTOCOL.md section 10): a state without parameters, or a
    step whose parameters change shape, is refused when it is recorded, not
    when a verifier meets it."""
    model, spec = tiny["model"], tiny["spec"]
    with pot.Recorder(tiny["dir"] / "ck-noparam", spec, tiny["program"], 1) as rec:
        with pot.SafetensorsWriter() as w:
            w.add("hparam/lr", "F64", [], struct.pack("<d", LR))
            with pytest.raises(pot.InvalidArgumentError, match=r"S_0 has no tensor named 'param/\*'"):
                rec.start(w)
    entries = [pot.seeded_schedule_entry(5, N_SAMPLES, 2, 1, 1)]
    dataset = pot.Tree()
    for raw in tiny["samples"]:
        dataset.append(pot.sample_digest(raw))
    with pot.Recorder(tiny["dir"] / "ck-reshape", spec, tiny["program"], 1) as rec:
        with state_writer(model, LR) as w:
            d0 = rec.start(w)
        commitment = pot.Commitment({
            "initial_state_digest": str(d0), "schedule_root": str(pot.seeded_schedule_root(5, N_SAMPLES, 2, 1, 1)),
            "task_id": "77" * 32, "dataset_root": str(dataset.root()), "dataset_size": N_SAMPLES,
            "spec_digest": str(spec.digest()), "declared_steps": 1, "miner_identity": "6d696e6572"})
        rec.set_commitment(commitment, entries)
        rec.begin_step(1)
        with pot.SafetensorsWriter() as w:
            for name, p in model.named_parameters():
                t = p.detach().reshape(-1) if p.dim() > 1 else p.detach()
                w.add("param/" + name, "F32", t.shape, t)
            w.add("hparam/lr", "F64", [], struct.pack("<d", LR))
            with pytest.raises(pot.InvalidArgumentError, match="the update norm from S_0 to S_1: tensor 'param/"):
                rec.end_step(w, 1.0)
        assert rec.size == 0  # nothing was appended
    dataset.close()


@needs_torch
def test_recorder_checkpoints_and_verify_step(tiny):
    ck = tiny["dir"] / "ck"
    commitment, root, entries, states = record(tiny, ck)
    with pytest.raises(pot.ConflictError) as e:
        pot.Recorder(ck, tiny["spec"], tiny["program"], 1)
    want_error(e, pot.ConflictError, pot.Status.CONFLICT)
    spec, program, data = tiny["spec"], tiny["program"], tiny["data"]
    with commitment, pot.Checkpoints(ck) as cp:
        assert cp.size == 3 and repr(cp) == f"<pot.Checkpoints {str(ck)!r}, 3 steps>"
        # Checkpoints every 2 steps: S_1 is re-derived from S_0 (one replay).
        pre, n = cp.state_path(1, data)
        assert n == 1 and pot.safetensors_digest_file(pre) == states[1]
        assert cp.state_path(1, data) == (pre, 0)  # cached
        with pytest.raises(pot.OutOfRangeError):
            cp.state_path(4, data)
        m = cp.opening(2, 3, data)
        pot.verify_opening(commitment, 2, 3, root, m, pre)
        # A miner's claim in a ledger dispute: the committed leaf of a step
        # and its proof in the sealed root (docs/ledger.md 2.13).
        for t in (1, 2, 3):
            leaf, proof = cp.leaf(t)
            assert cp.leaf(t, 3) == (leaf, proof)
            decoded = pot.StepLeaf.decode(leaf)
            assert (decoded.run_id, decoded.step, decoded.state_digest) == (commitment.run_id, t, states[t])
            pot.verify_inclusion(t - 1, 3, pot.leaf_hash(leaf), proof, root)
        first_two = pot.Tree()
        for t in (1, 2):
            first_two.append(cp.leaf(t)[0])
        leaf, proof = cp.leaf(1, 2)  # against the log's first two leaves
        pot.verify_inclusion(0, 2, pot.leaf_hash(leaf), proof, first_two.root())
        for bad in ((0, 3), (4, 3), (2, 1), (1, 4)):
            with pytest.raises(pot.OutOfRangeError):
                cp.leaf(*bad)
        res = pot.verify_step(commitment, spec, program, 2, 3, root, m, pre)
        assert res.ok and res.check is pot.OpeningCheck.OK and res.replayed
        assert res.replayed_state_digest == res.committed_state_digest == states[2]
        assert res.replay == pot.ReplayResult(states[2], res.loss, res.update_norm, res.norm_bucket, res.gradient,
                                              res.gradient_digest)
        # Check 27's evidence: the honest step's gradient moved its parameters.
        g = res.gradient
        assert isinstance(g, pot.GradientTrace) and not g.ignored and g.learning_rate == spec.learning_rate(2)
        assert 0 < g.gradient_elements <= g.param_elements and 0 < g.moved_elements <= g.param_elements
        # The cross-architecture path, S_2 served too.
        mp = cp.opening(2, 3, data, serve_post_state=True)
        post, _ = cp.state_path(2, data)
        res = pot.verify_step(commitment, spec, program, 2, 3, root, mp, pre, post, pot.VerifyMode.NORM_BUCKET)
        assert res.ok and pot.norm_buckets_match(res.committed_norm_bucket, res.norm_bucket)
        # What a committee member commits to (docs/PROTOCOL.md 19): the
        # replayed value, in the environment this process replays in.
        st = pot.witness_statement(res, spec, commitment.run_id, 2, 5, pot.VerifyMode.NORM_BUCKET, 3)
        assert st == {"run_id": str(commitment.run_id), "step": 2, "challenge_id": 5, "mode": "norm_bucket",
                      "environment": {"framework_version": pot.framework_version(), "intra_op_threads": 3,
                                      "hardware_class": pot.hardware_class()},
                      "kind": "replayed", "replayed_state": str(res.replayed_state_digest),
                      "bucket": res.norm_bucket, "gradient_digest": str(res.gradient_digest)}
        # The release of the torch this process trains with.
        assert pot.framework_version().split(".")[:2] == torch.__version__.split(".")[:2]
        salt = pot.witness_salt()
        pot.verify_witness_reveal(pot.witness_commitment(st, salt, b"w"), st, salt, b"w")
        # Failures carry the check and the partial result.
        with pytest.raises(pot.ProofMismatchError) as e:
            pot.verify_step(commitment, spec, program, 2, 3, root, m, post)  # S_2 as the pre-state
        assert e.value.check is pot.OpeningCheck.PRE_STATE_DIGEST and e.value.result.replayed is False
        # ... and the statement names it; threads 0 are the spec's.
        st = pot.witness_statement(e.value.result, spec, commitment.run_id, 2, 5, pot.VerifyMode.BITWISE)
        assert (st["kind"], st["check"], st["environment"]["intra_op_threads"]) == \
            ("invalid_opening", "pre_state_digest", spec.intra_op_threads)
        assert "replayed_state" not in st
        assert e.value.result.replay is None  # the opening's checks come first
        with pytest.raises(pot.InvalidArgumentError) as e:
            pot.verify_step(commitment, spec, program, 2, 3, root, m, pre, None, pot.VerifyMode.NORM_BUCKET)
        assert e.value.check is pot.OpeningCheck.OK  # refused before any check
        with pot.Spec(spec_json(bytes(32))) as other:
            with pytest.raises(pot.ProofMismatchError) as e:
                pot.verify_step(commitment, other, program, 2, 3, root, m, pre)
            assert e.value.check is pot.OpeningCheck.SPEC
        # The run record (check 32): this honest run flags no step, seals
        # with none, and an opening verifies against that; a ledger naming a
        # step (or a miner hiding one) fails every opening of the run.
        assert cp.run_flags() == [] and cp.run_flags(2) == []
        commitment.set_sealed_flags([])
        assert pot.verify_step(commitment, spec, program, 2, 3, root, m, pre).ok
        commitment.set_sealed_flags([1])
        with pytest.raises(pot.ProofMismatchError, match="the run sealed on the ledger with 1") as e:
            pot.verify_step(commitment, spec, program, 2, 3, root, m, pre)
        assert e.value.check is pot.OpeningCheck.RUN_FLAGS and str(e.value.check) == "run_flags"
        with pytest.raises(pot.InvalidArgumentError):
            commitment.set_sealed_flags([2, 1])
        with pytest.raises(pot.OutOfRangeError):
            cp.run_flags(4)
    with pytest.raises(pot.StateError):
        cp.opening(2, 3, data)


@needs_torch
def test_a_forged_step_fails_its_replay(tiny):
    ck = tiny["dir"] / "ck-forged"
    commitment, root, entries, states = record(tiny, ck, tamper_step=2, every=1)
    with commitment, pot.Checkpoints(ck) as cp:
        m = cp.opening(2, 3, tiny["data"])
        pre, n = cp.state_path(1, tiny["data"])
        assert n == 0  # a checkpoint every step
        with pytest.raises(pot.ProofMismatchError) as e:
            pot.verify_step(commitment, tiny["spec"], tiny["program"], 2, 3, root, m, pre)
        r = e.value.result
        assert e.value.check is pot.OpeningCheck.REPLAYED_STATE and str(e.value.check) == "replayed_state"
        assert r.replayed and r.replayed_state_digest != r.committed_state_digest == states[2]
        # The honest steps around it verify.
        for step in (1, 3):
            pre, _ = cp.state_path(step - 1, tiny["data"])
            assert pot.verify_step(commitment, tiny["spec"], tiny["program"], step, 3, root,
                                   cp.opening(step, 3, tiny["data"]), pre).ok


# --------------------------------------------------------------------------
# The fixture of tests/replay/make_fixture.sh (Go and Rust read it too).

@pytest.fixture
def fixture():
    d = os.environ.get("POT_REPLAY_FIXTURE")
    if not d:
        pytest.skip("POT_REPLAY_FIXTURE is not set (make one with tests/replay/make_fixture.sh BUILD_DIR OUT_DIR)")
    if not pot.replay_available():
        pytest.fail("POT_REPLAY_FIXTURE is set but the loaded libpot was built without LibTorch")
    from pathlib import Path
    d = Path(d)
    with open(d / "record.json") as f:
        rec = json.load(f)
    with open(d / "run" / "run.json") as f:
        meta = json.load(f)
    with open(d / "run" / "schedule.json") as f:
        schedule = json.load(f)
    return d, rec, meta, schedule


def test_fixture_end_to_end(fixture, tmp_path):
    d, rec, meta, schedule = fixture
    step, run = 5, d / "run"
    samples = run / "samples"
    ck = tmp_path / "ck"  # a private copy: re-derived states are cached in it
    shutil.copytree(d / "ck", ck)
    with pot.Spec.from_json((run / "spec.json").read_text()) as spec, \
            pot.Commitment.decode((ck / "commitment.bin").read_bytes()) as commitment, \
            pot.Checkpoints(ck) as cp:
        assert str(commitment.run_id) == rec["run_id"] and rec["size"] == cp.size == 6
        root = pot.Digest(rec["root"])
        program = run / "program.pt"
        pre, n = cp.state_path(step - 1, samples)
        assert n == 1  # S_4 re-derived from S_3
        m = cp.opening(step, rec["size"], samples)
        want = pot.safetensors_digest_file(run / "states" / f"{step:06d}.safetensors")
        pot.verify_opening(commitment, step, rec["size"], root, m, pre)
        res = pot.verify_step(commitment, spec, program, step, rec["size"], root, m, pre)
        assert res.ok and res.replayed_state_digest == res.committed_state_digest == want
        assert struct.pack("<d", res.loss) == struct.pack("<d", res.committed_loss)
        other, n = cp.state_path(2, samples)
        assert n == 2
        with pytest.raises(pot.ProofMismatchError) as e:
            pot.verify_step(commitment, spec, program, step, rec["size"], root, m, other)
        assert e.value.check is pot.OpeningCheck.PRE_STATE_DIGEST and not e.value.result.replayed

        with pot.Replay(spec, program) as r, \
                pot.Safetensors(run / "states" / f"{step:06d}.safetensors") as s5:
            assert r.input_names == meta["forward_args"]
            entry = pot.ScheduleEntry(step, schedule[step - 1]).encode(meta["dataset_size"])
            batch = [(samples / f"{i:06d}.safetensors").read_bytes() for mb in schedule[step - 1] for i in mb]
            # The rates are the spec's: S_t's hparam/lr (torch's scheduler) is the rate of step t+1.
            assert struct.unpack("<d", s5.tensor_data("hparam/lr"))[0] == spec.learning_rate(step + 1)
            got = r.step(run / "states" / f"{step - 1:06d}.safetensors", entry, batch, run_id=commitment.run_id)
            assert got.post_state_digest == want and got == res.replay
            assert struct.pack("<d", got.loss).hex() == \
                int(meta["loss_bits"][step - 1], 16).to_bytes(8, "big")[::-1].hex()
