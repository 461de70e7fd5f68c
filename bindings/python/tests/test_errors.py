"""Every pot_status maps to its exception class; each reachable one is
provoked through the library."""

import pickle

import pytest

import pot
from pot import _pot
from conftest import LEDGER_BONDS, spec_json, want_error

CLASSES = {
    pot.Status.INVALID_ARGUMENT: (pot.InvalidArgumentError, ValueError),
    pot.Status.OUT_OF_MEMORY: (pot.OutOfMemoryError, MemoryError),
    pot.Status.IO: (pot.IoError, OSError),
    pot.Status.MALFORMED: (pot.MalformedError, ValueError),
    pot.Status.LIMIT: (pot.LimitError, ValueError),
    pot.Status.OUT_OF_RANGE: (pot.OutOfRangeError, IndexError),
    pot.Status.PROOF_LENGTH: (pot.ProofLengthError, pot.Error),
    pot.Status.PROOF_MISMATCH: (pot.ProofMismatchError, pot.Error),
    pot.Status.DUPLICATE: (pot.DuplicateError, pot.Error),
    pot.Status.STATE: (pot.StateError, pot.Error),
    pot.Status.UNSUPPORTED: (pot.UnsupportedError, pot.Error),
    pot.Status.BACKEND: (pot.BackendError, pot.Error),
    pot.Status.INTERNAL: (pot.InternalError, pot.Error),
    pot.Status.NOT_FOUND: (pot.NotFoundError, LookupError),
    pot.Status.PERMISSION: (pot.PermissionDeniedError, pot.Error),
    pot.Status.CONFLICT: (pot.ConflictError, pot.Error),
    pot.Status.NONFINITE: (pot.NonFiniteError, pot.Error),
}


def test_status_values_and_names_match_the_library():
    # The binding's list is libpot's, no more and no fewer (pot_status_count).
    assert sorted(int(s) for s in pot.Status) == list(range(_pot.pot_status_count()))
    for s in pot.Status:
        assert int(s) == getattr(_pot, s.c_name) if s is not pot.Status.OK else _pot.POT_OK == 0
        assert pot.status_name(s) == s.c_name == str(s)
    assert pot.status_name(999) == "POT_E_UNKNOWN"
    # One class per status, each a pot.Error (and the builtin it extends).
    assert set(CLASSES) == set(pot.Status) - {pot.Status.OK}
    for code, (cls, base) in CLASSES.items():
        assert pot.error_class(code) is cls
        assert issubclass(cls, pot.Error) and issubclass(cls, base)
        assert cls.__module__ == "pot" and getattr(pot, cls.__name__) is cls
    assert pot.error_class(999) is pot.Error


@pytest.mark.parametrize("code", sorted(CLASSES), ids=lambda c: c.name)
def test_raised_from_a_status(code):
    """The path the typemaps take (pot._errors._from_status), for every
    status, the unreachable ones (OUT_OF_MEMORY, BACKEND, INTERNAL) too."""
    from pot._errors import _from_status
    e = _from_status(int(code), "msg \xe9".encode(), None)
    assert type(e) is CLASSES[code][0]
    assert (e.code, e.status, e.message, str(e)) == (code, code.c_name, "msg \xe9", f"{code.c_name}: msg \xe9")
    assert e.check is None and e.result is None and e.partial is None
    again = pickle.loads(pickle.dumps(e))
    assert type(again) is type(e) and (again.code, again.message) == (e.code, e.message)
    # Messages that are not UTF-8 are still readable.
    assert _from_status(int(code), b"\xff", None).message == "\ufffd"


def test_unknown_status_is_the_base_class():
    from pot._errors import _from_status
    e = _from_status(99, b"later", None)
    assert type(e) is pot.Error and e.code == 99 and e.status == "POT_E_UNKNOWN"


def expect(cls, code, fn, *args, **kwargs):
    with pytest.raises(pot.Error) as e:
        fn(*args, **kwargs)
    return want_error(e, cls, code)


def test_provoked(tmp_path):
    """Each status the core can be driven to from Python."""
    S = pot.Status
    expect(pot.InvalidArgumentError, S.INVALID_ARGUMENT, pot.tensor_digest, "w", "F32", [2], b"\0" * 4)
    expect(pot.IoError, S.IO, pot.Safetensors, tmp_path / "missing.safetensors")
    expect(pot.MalformedError, S.MALFORMED, pot.Digest.from_hex, "zz" * 32)
    expect(pot.LimitError, S.LIMIT, pot.challenge_derive, b"b", bytes(32), 10**6, pot.MAX_CHALLENGE_ROUNDS + 1)
    expect(pot.LimitError, S.LIMIT, pot.tensor_digest, "w", "U8", [1] * (pot.MAX_DIMS + 1), b"\0")
    with pot.Tree.in_memory() as t:
        t.append(b"a")
        expect(pot.OutOfRangeError, S.OUT_OF_RANGE, t.root, 2)
        root, leaf = t.root(), t.leaf_hash(0)
    expect(pot.ProofLengthError, S.PROOF_LENGTH, pot.verify_inclusion, 0, 1, leaf, bytes(32), root)
    expect(pot.ProofMismatchError, S.PROOF_MISMATCH, pot.verify_inclusion, 0, 1, leaf, b"", pot.sha256(b"x"))
    expect(pot.MalformedError, S.MALFORMED, pot.verify_inclusion, 0, 2, leaf, bytes(31), root)
    with pot.State() as st:
        st.add_tensor("w", "U8", [1], b"\1")
        expect(pot.DuplicateError, S.DUPLICATE, st.add_tensor, "w", "U8", [1], b"\1")
        expect(pot.NotFoundError, S.NOT_FOUND, st.tensor_proof, "v")
    expect(pot.UnsupportedError, S.UNSUPPORTED, pot.DType.from_name, "F128")
    with pot.Ledger(draw_delay=1, opening_window=1, commit_window=1, reveal_window=1, max_committee_size=1, min_stake=1, max_rounds=1, max_attempts=1, dispute_window=1, dispute_arity=2, **LEDGER_BONDS) as ledger:
        e = expect(pot.NotFoundError, S.NOT_FOUND, ledger.apply, {"call": "post_checkpoint_root", "caller": "00",
                                                                 "now": 1, "run_id": "00" * 32, "size": 1,
                                                                 "root": "00" * 32, "consistency_proof": ""})
        assert "run" in e.message
        assert pot.MAX_JSON_BYTES == 1 << 20
        expect(pot.LimitError, S.LIMIT, ledger.apply_json, " " * pot.MAX_JSON_BYTES + "{}")
    e = expect(pot.InvalidArgumentError, S.INVALID_ARGUMENT, pot.Ledger, draw_delay=1, opening_window=0,
               commit_window=1, reveal_window=1, max_committee_size=1, min_stake=1, max_rounds=1, max_attempts=1, dispute_window=1, dispute_arity=2, **LEDGER_BONDS)
    assert "opening_window" in e.message
    with pytest.raises(TypeError, match="max_committee_size must be an int"):
        pot.Ledger(draw_delay=1, opening_window=1, commit_window=1, reveal_window=1, max_committee_size=1.0, min_stake=1, max_rounds=1, max_attempts=1, dispute_window=1, dispute_arity=2, **LEDGER_BONDS)
    with pytest.raises(TypeError, match="referee must be bytes"):
        pot.Ledger(draw_delay=1, opening_window=1, commit_window=1, reveal_window=1, max_committee_size=1, min_stake=1, max_rounds=1, max_attempts=1, dispute_window=1, dispute_arity=2, **LEDGER_BONDS, referee="ref")
    e = expect(pot.InvalidArgumentError, S.INVALID_ARGUMENT, pot.Ledger, draw_delay=1, opening_window=1,
               commit_window=1, reveal_window=1, max_committee_size=1, min_stake=1, max_rounds=1, max_attempts=1,
               dispute_window=1, dispute_arity=2, **LEDGER_BONDS, referee=b"r" * 257)
    assert "referee" in e.message
    with pot.Verdict(pot.WitnessMode.BITWISE, 1) as v:
        v.add_reveal(b"a", bytes(32))
        v.add_reveal(b"a", bytes(32))
        expect(pot.InvalidArgumentError, S.INVALID_ARGUMENT, v.decide, bytes(32))
    expect(pot.InvalidArgumentError, S.INVALID_ARGUMENT, pot.norm_bucket, -1.0, 16)
    with pot.LossCheck() as lc:
        expect(pot.InvalidArgumentError, S.INVALID_ARGUMENT, lc.set, pot.LossCheckParam.WINDOW, 0)
        assert lc.window == 20  # unchanged
    # PERMISSION, STATE: the ledger transcript (test_vectors_ledger); CONFLICT
    # and NONFINITE: the recorder and the replay (test_replay).


def test_conflict_from_the_ledger():
    """A size already posted with another root is POT_E_CONFLICT: driven
    through the transcript's first calls."""
    from conftest import load_vectors, transcript_ledger
    v = load_vectors("ledger_transcript.json")
    calls = [{k: x for k, x in c.items() if k not in ("expect", "result")} for c in v["calls"]]
    cfg = v["config"]
    with transcript_ledger(cfg) as ledger:
        posted = None
        for c, raw in zip(calls, v["calls"]):
            if raw.get("expect", "ok") != "ok":
                continue
            ledger.apply(c)
            if c["call"] == "post_checkpoint_root":
                posted = c
                break
        assert posted is not None
        other = dict(posted, root="11" * 32)
        if posted.get("size", 0) > 1:
            other["consistency_proof"] = posted["consistency_proof"]
        expect(pot.ConflictError, pot.Status.CONFLICT, ledger.apply, other)


def test_binding_side_errors():
    """What the typemaps check before calling: digest sizes, NUL characters,
    types, closed handles."""
    with pytest.raises(pot.InvalidArgumentError, match="32 bytes, got 31"):
        pot.node_hash(bytes(31), bytes(32))
    with pytest.raises(pot.InvalidArgumentError):
        pot.Digest(bytes(33))
    with pytest.raises(pot.InvalidArgumentError, match="NUL"):
        pot.tensor_digest("a\0b", "U8", [1], b"\0")
    with pytest.raises(pot.InvalidArgumentError, match="NUL"):
        pot.safetensors_digest_file("a\0b")
    with pytest.raises(TypeError):
        pot.sha256("text is not bytes")
    with pytest.raises(TypeError):
        pot.tensor_digest("w", "U8", "not a shape", b"\0")
    with pytest.raises(OverflowError):
        pot.tensor_digest("w", "U8", [-1], b"\0")
    # NULL where libpot needs a value: its own POT_E_INVALID_ARGUMENT.
    expect(pot.InvalidArgumentError, pot.Status.INVALID_ARGUMENT, _pot.pot_state_digest, None)
    expect(pot.InvalidArgumentError, pot.Status.INVALID_ARGUMENT, _pot.pot_merkle_node_hash, None, bytes(32))
    # A handle of another type is a TypeError from SWIG.
    with pot.Log() as log, pytest.raises(TypeError):
        _pot.pot_state_digest(log._h)


def test_closed_handles_raise_state_error(tmp_path):
    s = pot.State()
    s.close()
    s.close()  # idempotent
    assert s.closed and repr(s) == "<pot.State closed>"
    e = expect(pot.StateError, pot.Status.STATE, s.digest)
    assert "closed" in e.message
    t = pot.Tree.in_memory()
    t.close()
    expect(pot.StateError, pot.Status.STATE, lambda: t.size)
    with pot.Spec(spec_json(bytes(32))) as spec:
        pass
    expect(pot.StateError, pot.Status.STATE, spec.digest)


def test_opening_verify_reports_the_failed_check():
    """pot_opening_verify sets *check on failure: the exception's `check`."""
    c = pot.Commitment({"initial_state_digest": "00" * 32, "schedule_root": "00" * 32, "task_id": "77" * 32,
                        "dataset_root": "00" * 32, "dataset_size": 1, "spec_digest": "00" * 32,
                        "declared_steps": 1, "miner_identity": "6d696e6572"})
    with c:
        with pytest.raises(pot.MalformedError) as e:
            pot.verify_opening(c, 1, 1, bytes(32), b"not a manifest")
        assert e.value.check is pot.OpeningCheck.MANIFEST and e.value.partial == int(pot.OpeningCheck.MANIFEST)
        assert str(e.value.check) == "manifest"
        # The raw call returns the check on success and carries it on failure.
        with pytest.raises(pot.Error) as e:
            _pot.pot_opening_verify(c._h, 1, 1, bytes(32), b"x", None, None, 0)
        assert e.value.partial == pot.OpeningCheck.MANIFEST
