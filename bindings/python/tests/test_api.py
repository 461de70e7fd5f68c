"""The API itself: reachability of every function of pot.h, versions,
digests, dtypes, safetensors, trees, logs, protocol helpers, witnesses,
loss checks, reprs."""

import json
import math
import os
import re
import struct
from pathlib import Path

import pytest

import pot
from pot import _pot
from conftest import HERE, f32bytes, spec_json, u64le, want_error

HEADER = Path(os.environ.get("POT_HEADER", HERE.parent.parent.parent / "include" / "pot.h"))
# Used by the typemaps only: errors become exceptions, pot_bytes become bytes.
INTERNAL = {"pot_error_code", "pot_error_message", "pot_error_free", "pot_bytes_free"}


def header_functions():
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    return re.findall(r"POT_API\s+[^;(]*?\b(pot_\w+)\s*\(", text)


def test_every_function_of_pot_h_is_wrapped():
    names = header_functions()
    assert len(names) > 150
    missing = [n for n in names if n not in INTERNAL and not callable(getattr(_pot, n, None))]
    assert not missing, f"functions of pot.h missing from pot._pot: {missing}"
    # And the constants.
    text = HEADER.read_text()
    # The result structs' initialisers (POT_X_INIT, C braces) are not
    # constants: the typemaps set struct_size themselves (test below).
    for macro in re.findall(r"#define (POT_[A-Z_0-9]+) ", text):
        if macro not in ("POT_H", "POT_API") and not macro.endswith("_INIT"):
            assert hasattr(_pot, macro), macro
    init = re.findall(r"#define (POT_[A-Z_]+_INIT) \{sizeof\((pot_\w+)\)\}", text)
    assert {t for _, t in init} == {"pot_bisection_info", "pot_replay_result", "pot_verify_result"}
    # Every input typemap that makes one sets its struct_size (a zero size
    # is refused by libpot: the calls of the other tests would fail).
    iface = (HERE.parent / "pot.i").read_text()
    for _, t in init:
        head = r"%typemap\(in[^)]*\) (?:const )?" + t + r" \*\w+ \(" + t + r" temp\) \{"
        blocks = re.findall(head + r"(.*?)\n\}", iface, re.S)
        assert blocks and all("temp.struct_size = sizeof temp;" in b for b in blocks), t
    for enum_value in re.findall(r"^\s+(POT_[A-Z_0-9]+) = ", text, re.M):
        if not enum_value.endswith("_MAX_ENUM_"):
            assert hasattr(_pot, enum_value), enum_value


def test_versions():
    assert pot.version() == _pot.pot_version_string() == pot.BUILT_VERSION == _pot.POT_VERSION_STRING
    assert pot.abi_version() == pot.ABI_VERSION == 4
    assert re.fullmatch(r"\d+\.\d+\.\d+", pot.version())
    assert (pot.DIGEST_SIZE, pot.CHUNK_SIZE, pot.STEP_LEAF_SIZE, pot.WITNESS_SALT_SIZE) == (32, 65536, 132, 32)
    assert (pot.MAX_NAME_BYTES, pot.MAX_DIMS) == (_pot.POT_MAX_NAME_BYTES, _pot.POT_MAX_DIMS)
    assert (pot.MAX_CHALLENGE_ROUNDS, pot.MAX_BEACON_BYTES) == (65536, 1024)


def test_abi_check():
    from pot._core import _check_abi
    _check_abi(1, 1)
    with pytest.raises(ImportError, match="ABI version 2"):
        _check_abi(2, 1)


def test_digest_text():
    h = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    d = pot.sha256(b"")
    assert str(d) == h == d.hex() == pot.digest_to_hex(d) and f"{d}" == h
    assert repr(d) == f"Digest('{h}')"
    assert pot.Digest(h) == d == pot.Digest.from_hex(h.upper()) == pot.Digest(bytes.fromhex(h))
    assert d == bytes.fromhex(h) and isinstance(d, bytes) and len(d) == 32
    assert {d: 1}[bytes.fromhex(h)] == 1
    with pytest.raises(pot.MalformedError):
        pot.Digest(h[:-1])
    with pytest.raises(pot.InvalidArgumentError):
        pot.Digest(b"short")
    assert pot.split_proof(d + d) == [d, d] and pot.join_proof([d, d]) == d + d
    with pytest.raises(pot.MalformedError):
        pot.split_proof(b"x" * 33)


def test_dtypes():
    assert [d.safetensors_name for d in pot.DType] == \
        ["BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64", "F16", "BF16", "F32", "F64"]
    for d in pot.DType:
        assert pot.DType.from_name(d.safetensors_name) is d and str(d) == d.safetensors_name
    assert [pot.DType.F32.size, pot.DType.BF16.size, pot.DType.BOOL.size, pot.DType.F64.size] == [4, 2, 1, 8]
    assert _pot.pot_dtype_name(99) is None and _pot.pot_dtype_size(99) == 0
    # A dtype may be given as DType, int or name.
    assert pot.tensor_digest("w", "F32", [1], f32bytes(1)) == pot.tensor_digest("w", 12, [1], f32bytes(1))


def test_worked_example_independently():
    """docs/PROTOCOL.md 4.1 (tensor "w", F32 [2, 2], 1..4) and section 5,
    computed with hashlib from the formulas."""
    import hashlib

    def tagged(tag, body):
        return hashlib.sha256(bytes([len(tag)]) + tag.encode() + body).digest()

    data = f32bytes(1, 2, 3, 4)
    chunk_root = hashlib.sha256(b"\0" + data).digest()
    body = (struct.pack("<I", 1) + b"w" + bytes([12]) + struct.pack("<I", 2) + struct.pack("<QQ", 2, 2)
            + struct.pack("<Q", 16) + struct.pack("<I", 65536) + chunk_root)
    assert pot.tensor_digest("w", "F32", [2, 2], data) == tagged("pot/v1/tensor", body)
    # The per_step seed of section 9.
    run = hashlib.sha256(b"a run").digest()
    seed = int.from_bytes(tagged("pot/v2/seed", struct.pack("<Q", 7) + run + struct.pack("<Q", 3))[:8], "little")
    assert pot.seed(7, run, 3) == seed
    # The program digest of section 21.2 is over the file's bytes.
    assert pot.sha256(b"abc") == hashlib.sha256(b"abc").digest()


def test_state(tmp_path):
    with pot.State(threads=2) as s:
        s.set_threads(1)
        s.add_tensor("b", "F32", [2], f32bytes(1, 2))
        td = pot.tensor_digest("a", "U8", [3], b"abc")
        s.add_tensor_digest("a", td)
        assert len(s) == s.count == 2 and repr(s) == "<pot.State 2 tensors>"
        d = s.digest()
        pot.verify_tensor_proof(d, td, s.tensor_proof("a"))
    assert pot.state_digest({"b": ("F32", [2], f32bytes(1, 2)), "a": ("U8", [3], b"abc")}) == d


def test_safetensors(tmp_path):
    path = tmp_path / "s.safetensors"
    with pot.SafetensorsWriter() as w:
        w.add("w", pot.DType.F32, [2, 2], f32bytes(1, 2, 3, 4))
        w.add("step", pot.DType.I64, [], u64le(7))
        w.set_metadata("format", "pt")
        w.set_metadata("format", "pot")  # replaced
        assert len(w) == 2 and "2 tensors" in repr(w)
        with pytest.raises(pot.DuplicateError):
            w.add("w", "F32", [1], f32bytes(0))
        with pytest.raises(pot.InvalidArgumentError):
            w.add("x", "F32", [3], f32bytes(0))  # wrong size
        w.write(str(path))
        w.write(path)  # again: same bytes
        assert w.to_bytes() == path.read_bytes()
    with pot.Safetensors.open(path) as f:
        assert len(f) == 2 and f.names == ["step", "w"]
        assert f.tensor(1) == pot.TensorInfo("w", pot.DType.F32, (2, 2), 16) == f.tensor("w")
        assert f.find("w") == 1 and "w" in f and "nope" not in f and 3 not in f
        assert f.tensor_data("step") == u64le(7)
        assert f.metadata("format") == "pot"
        with pytest.raises(pot.NotFoundError):
            f.metadata("nope")
        with pytest.raises(pot.NotFoundError):
            f.tensor("nope")
        with pytest.raises(pot.OutOfRangeError):
            f.tensor(2)
        assert f.digest() == pot.safetensors_digest_file(path) == pot.state_digest(
            [("w", "F32", [2, 2], f32bytes(1, 2, 3, 4)), ("step", "I64", [], u64le(7))])
        assert repr(f) == f"<pot.Safetensors {str(path)!r}, 2 tensors>"
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x08\0\0\0\0\0\0\0{}garbage")
    with pytest.raises(pot.MalformedError):
        pot.Safetensors(bad)


def test_safetensors_reads_the_official_format(tmp_path):
    """A file written by numpy's own byte layout, as the safetensors package
    would (header JSON, little-endian data)."""
    import numpy as np
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    header = json.dumps({"x": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}).encode()
    header += b" " * (-len(header) % 8)
    path = tmp_path / "o.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + a.tobytes())
    with pot.Safetensors(path) as f:
        assert np.array_equal(np.frombuffer(f.tensor_view("x"), dtype=np.float32).reshape(f.tensor("x").shape), a)


def test_tree_file(tmp_path):
    path = tmp_path / "log.tree"
    with pot.Tree.open(path) as t:
        for i in range(5):
            assert t.append(u64le(i)) == i
        assert t.append_hash(pot.leaf_hash(u64le(5))) == 5
        t.flush()
        root5 = t.root(5)
        assert repr(t) == f"<pot.Tree {str(path)!r}, size=6>"
    with pot.Tree(path) as t:
        assert t.size == len(t) == 6 and t.root(5) == root5
        pot.verify_consistency(5, 6, root5, t.root(), t.consistency_proof(5))
        pot.verify_inclusion(3, 6, t.leaf_hash(3), t.inclusion_proof(3), t.root())
        with pytest.raises(pot.OutOfRangeError):
            t.consistency_proof(0, 6)
        with pytest.raises(pot.OutOfRangeError):
            t.leaf_hash(6)
    path.write_bytes(b"not a tree file at all, really")
    with pytest.raises(pot.MalformedError):
        pot.Tree(path)
    with pytest.raises(pot.IoError):
        pot.Tree(tmp_path / "no" / "such" / "dir" / "t")


def test_log():
    with pot.Log() as log:
        assert log.size == 0 and log.root() == pot.sha256(b"")
        log.append(b"a")
        log.append_hash(pot.leaf_hash(b"b"))
        assert len(log) == 2 and repr(log) == "<pot.Log size=2>"
        assert log.root() == pot.node_hash(pot.leaf_hash(b"a"), pot.leaf_hash(b"b"))
    with pytest.raises(pot.MalformedError):
        pot.Log.load(b"")


def test_protocol_helpers():
    run = pot.sha256(b"run")
    leaf = pot.StepLeaf(run, 3, pot.sha256(b"s"), pot.sha256(b"t"), float("nan"), 0.5)
    back = pot.StepLeaf.decode(leaf.encode())
    assert math.isnan(back.loss) and back.run_id == run and back.update_norm == 0.5
    with pytest.raises(pot.InvalidArgumentError):
        pot.StepLeaf(run, 0, pot.sha256(b"s"), pot.sha256(b"t"), 1.0, 0.0).encode()
    with pytest.raises(pot.InvalidArgumentError, match="sign bit"):
        pot.StepLeaf(run, 1, pot.sha256(b"s"), pot.sha256(b"t"), 1.0, -0.0).encode()
    # A protocol-1 leaf (no run, no norm) is refused naming its version.
    v1 = bytes([11]) + b"pot/v1/step" + (3).to_bytes(8, "little") + bytes(pot.sha256(b"s")) + bytes(8)
    with pytest.raises(pot.MalformedError, match="protocol version 1"):
        pot.StepLeaf.decode(v1)
    # So is a version-2 leaf of pot 0.2 (no statistics table).
    v2 = bytes([11]) + b"pot/v2/step" + bytes(run) + (3).to_bytes(8, "little") + bytes(pot.sha256(b"s")) + bytes(16)
    with pytest.raises(pot.MalformedError, match="version 2"):
        pot.StepLeaf.decode(v2)
    steps = pot.challenge_derive(b"beacon", pot.sha256(b"run"), 10, 10)
    assert sorted(steps) == list(range(1, 11))
    with pytest.raises(pot.InvalidArgumentError):
        pot.challenge_derive(b"", pot.sha256(b"run"), 10, 1)
    with pytest.raises(pot.InvalidArgumentError):
        pot.challenge_derive(b"b", pot.sha256(b"run"), 10, 11)
    with pytest.raises(pot.LimitError):
        pot.challenge_derive(b"b" * 1025, pot.sha256(b"run"), 10, 1)
    assert pot.detection_probability(10, 10, 1) == 1.0
    with pytest.raises(pot.LimitError):
        pot.challenges_needed(10**9, 1, 0.999999)
    assert pot.security_bond(100, 0.25) == 300
    with pytest.raises(pot.InvalidArgumentError, match="no bond deters"):
        pot.security_bond(1, 0.0)
    with pytest.raises(pot.OutOfRangeError):
        pot.security_bond(2**64 - 1, 1e-3)
    assert pot.norm_bucket(0.0, 16) == pot.NORM_BUCKET_ZERO
    assert pot.norm_bucket(float("inf"), 16) == pot.NORM_BUCKET_NONFINITE == pot.norm_bucket(float("nan"), 16)
    assert pot.norm_bucket(2.0, 16) == 16
    assert pot.norm_buckets_match(16, 17) is True and pot.norm_buckets_match(16, 18) is False
    with pytest.raises(pot.InvalidArgumentError):
        pot.norm_bucket(1.0, 0)


def test_update_norm(tmp_path):
    def write(path, w):
        with pot.SafetensorsWriter() as sw:
            sw.add("param/w", "F32", [2], f32bytes(*w))
            sw.add("hparam/lr", "F64", [], struct.pack("<d", 0.1))
            sw.write(path)

    write(tmp_path / "a", [1, 2])
    write(tmp_path / "b", [4, 6])
    with pot.Safetensors(tmp_path / "a") as a, pot.Safetensors(tmp_path / "b") as b:
        assert pot.update_norm(a, b, "param/") == 5.0
        assert pot.update_norm(a, a) == 0.0
        with pytest.raises(pot.InvalidArgumentError):
            pot.update_norm(a, b, "nothing/")


def test_witness_and_verdict():
    salt = pot.witness_salt()
    assert len(salt) == pot.WITNESS_SALT_SIZE and salt != pot.witness_salt()
    run, state = pot.sha256(b"run"), pot.sha256(b"state")
    statement = {"run_id": str(run), "step": 4, "challenge_id": 9, "mode": "norm_bucket",
                 "environment": {"framework_version": "1.13.0", "intra_op_threads": 2, "hardware_class": "cpu"},
                 "kind": "replayed", "replayed_state": str(state), "bucket": -3,
                 "gradient_digest": str(pot.sha256(b"gradient"))}
    c = pot.witness_commitment(statement, salt, b"verifier")
    pot.verify_witness_reveal(c, statement, salt, b"verifier")
    pot.verify_witness_reveal(c, json.dumps(statement), salt, b"verifier")  # the JSON text works too
    with pytest.raises(pot.ProofMismatchError):
        pot.verify_witness_reveal(c, dict(statement, challenge_id=10), salt, b"verifier")
    with pytest.raises(pot.InvalidArgumentError):
        pot.witness_commitment(statement, b"short", b"verifier")
    with pytest.raises(pot.InvalidArgumentError, match="missing key 'kind'"):
        pot.witness_commitment({k: v for k, v in statement.items() if k != "kind"}, salt, b"verifier")
    with pytest.raises(pot.InvalidArgumentError, match="state kind 'replayed'"):
        bare = {k: v for k, v in statement.items() if k not in ("replayed_state", "bucket", "gradient_digest")}
        pot.witness_commitment(dict(bare, kind="invalid_opening", check="replayed_state"), salt, b"verifier")
    with pot.Verdict(pot.WitnessMode.NORM_BUCKET, 2) as v:
        assert v.reason == "" and repr(v) == "<pot.Verdict norm_bucket, quorum 2>"
        for ident, bucket in ((b"a", 10), (b"b", 10), (b"c", 30)):
            v.add_reveal(ident, state, bucket)
        d = v.decide(None, 11)
        assert d == pot.Decision(pot.VerdictOutcome.PASS, 2, v.reason) and str(d.outcome) == "pass"
        with pytest.raises(pot.InvalidArgumentError):
            v.decide(None, None)  # norm-bucket mode needs the committed bucket


def test_losscheck():
    with pot.LossCheck(window=4, max_flags=10) as lc:
        assert lc.window == 4 and lc[pot.LossCheckParam.MAX_FLAGS] == 10 and lc["max_drop"] == 0.9
        lc.frozen_min_steps = 3
        lc[pot.LossCheckParam.DECREASE_SIGMAS] = 1
        assert lc.get("decrease_sigmas") == 1 and lc.frozen_min_steps == 3
        with pytest.raises(pot.InvalidArgumentError):
            lc.window = 2.5  # integral
        assert "window=4" in repr(lc)
        flags = lc.run([4.0, 3.0, 2.0, 1.0, float("nan"), 1.0, 1.0, 1.0, 1.0, 1.0])
    kinds = {f.kind for f in flags}
    assert pot.LossFlagKind.NON_FINITE in kinds and pot.LossFlagKind.FROZEN in kinds
    nonfinite = next(f for f in flags if f.kind == pot.LossFlagKind.NON_FINITE)
    assert (nonfinite.first_step, nonfinite.last_step) == (5, 5) and nonfinite.message
    assert str(nonfinite).startswith("non_finite at steps 5..5: ")
    assert [str(k) for k in pot.LossFlagKind] == ["no_decrease", "implausible_rate", "frozen", "regression",
                                                  "non_finite"]
    assert pot.check_losses([5.0, 4.0, 3.0, 2.0, 1.0] * 2) == pot.check_losses([5.0, 4.0, 3.0, 2.0, 1.0] * 2,
                                                                              pot.LossCheck())
    assert pot.check_losses(range(100, 0, -1)) == []
    with pytest.raises(TypeError):
        pot.check_losses([1.0], pot.LossCheck(), window=3)


def test_enums_follow_pot_h():
    assert [int(c) for c in pot.OpeningCheck] == list(range(33))
    assert str(pot.OpeningCheck.REPLAYED_UPDATE) == "replayed_update" and pot.OpeningCheck.REPLAYED_UPDATE == 29
    assert str(pot.OpeningCheck.SUBNORMAL) == "subnormal" and pot.OpeningCheck.SUBNORMAL == 28
    assert str(pot.OpeningCheck.GRADIENT_IGNORED) == "gradient_ignored" and pot.OpeningCheck.GRADIENT_IGNORED == 27
    assert str(pot.OpeningCheck.LEARNING_RATE) == "learning_rate" and pot.OpeningCheck.LEARNING_RATE == 25
    assert str(pot.OpeningCheck.COMMITTED_NORM) == "committed_norm" and pot.OpeningCheck.COMMITTED_NORM == 26
    assert str(pot.OpeningCheck.POST_LEAF_PROOF) == "post_leaf_proof" == pot.opening_check_name(6)
    assert pot.opening_check_name(99) == "unknown"
    assert str(pot.OpeningCheck.NONFINITE) == "nonfinite" and pot.OpeningCheck.NONFINITE == 24
    assert [str(m) for m in pot.VerifyMode] == ["bitwise", "norm_bucket"]
    assert [str(p) for p in pot.SeedPolicy] == ["per_step", "single_seed", "none"]
    assert [str(o) for o in pot.VerdictOutcome] == ["pass", "fail", "inconclusive"]


def test_spec_and_commitment_accessors():
    with pot.Spec(spec_json(pot.sha256(b"p"), seed_policy={"kind": "none"})) as s:
        assert s.seed_policy is pot.SeedPolicy.NONE and s.seed == 0
        assert s.to_dict()["model_program_digest"] == str(pot.sha256(b"p"))
        assert repr(s) == f"<pot.Spec {s.digest()}>"
    c = pot.Commitment({"initial_state_digest": "aa" * 32, "schedule_root": "bb" * 32, "task_id": "77" * 32,
                        "dataset_root": "cc" * 32, "dataset_size": 9, "spec_digest": "dd" * 32,
                        "declared_steps": 3, "miner_identity": "6d696e6572"})
    with c:
        assert c.digests.initial_state == pot.Digest("aa" * 32) and c.dataset_size == 9
        assert repr(c) == f"<pot.Commitment run {c.run_id}, 3 steps>"
        assert json.loads(c.to_json())["declared_steps"] == 3
    with pytest.raises(pot.InvalidArgumentError):
        pot.Commitment({"declared_steps": 3})


def test_path_like_and_bytes_paths(tmp_path):
    path = tmp_path / "p.safetensors"
    with pot.SafetensorsWriter() as w:
        w.add("x", "U8", [1], b"\1")
        w.write(os.fsencode(path))
    assert pot.safetensors_digest_file(path) == pot.safetensors_digest_file(str(path)) == \
        pot.safetensors_digest_file(os.fsencode(path))


def test_pot_i_owns_every_handle():
    """pot.i declares every opaque type of pot.h a handle (POT_HANDLE, whose
    free is %delobject), and every function returning a new handle
    (T **out) %newobject; test_leaks checks the flags at run time."""
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    iface = (HERE.parent / "pot.i").read_text()
    handles = set(re.findall(r"typedef struct (pot_\w+) \1;", text)) - {"pot_error"}
    declared = dict(re.findall(r"^POT_HANDLE\((pot_\w+), (pot_\w+)\)", iface, re.M))
    assert set(declared) == handles
    frees = {m for m in re.findall(r"\b(pot_\w+_free)\s*\(", text)} - {"pot_error_free", "pot_bytes_free"}
    assert set(declared.values()) == frees
    constructors = {m.group(1) for m in re.finditer(r"\b(pot_\w+)\s*\(\s*pot_\w+\s*\*\*\s*out\b", text)}
    assert constructors == set(re.findall(r"^%newobject (pot_\w+);", iface, re.M))
    assert len(constructors) == 30


def test_step_input_holds_one_parsed_sample_per_index(tmp_path):
    """pot.StepInput (pot_step_input): built once for several replays; a bad
    sample is refused as it is added, naming its position and dataset index,
    and one too many with OutOfRangeError. No LibTorch needed."""
    w = pot.SafetensorsWriter()
    w.add("x", "F32", [2], f32bytes(1.0, 2.0))
    good = w.to_bytes()
    entry = pot.ScheduleEntry(7, [[3, 5]]).encode()
    step = pot.StepInput(tmp_path / "pre.safetensors", entry, [good], run_id=bytes(32))
    assert (step.step, step.sample_count) == (7, 1)
    with pytest.raises(pot.MalformedError) as e:
        step.add_sample(good[:5])
    assert "sample 1 (dataset index 5)" in want_error(e, pot.MalformedError, pot.Status.MALFORMED).message
    assert step.sample_count == 1
    step.add_sample(good)
    with pytest.raises(pot.OutOfRangeError) as e:
        step.add_sample(good)
    assert "lists 2 samples" in want_error(e, pot.OutOfRangeError, pot.Status.OUT_OF_RANGE).message
    with pytest.raises(pot.MalformedError):
        pot.StepInput(tmp_path / "pre.safetensors", entry[:-1])
    step.close()


def test_state_part_names_are_the_protocols():
    """pot.StatePart (pot_state_part_name): the names of docs/PROTOCOL.md
    21.1, written out here independently of libpot."""
    want = {pot.StatePart.PARAM_PREFIX: "param/", pot.StatePart.BUFFER_PREFIX: "buffer/",
            pot.StatePart.OPTIM_PREFIX: "optim/", pot.StatePart.LR: "hparam/lr", pot.StatePart.RNG: "rng/cpu",
            pot.StatePart.GRAD_PREFIX: "grad/"}
    assert {p: p.state_name for p in pot.StatePart} == want
    assert _pot.pot_state_part_name(0) is None
