"""tests/vectors/ledger_transcript.json: the reference ledger, call by call."""

import pytest

import pot
from conftest import load_vectors, transcript_ledger, want_error

V = load_vectors("ledger_transcript.json")


def test_ledger_transcript():
    cfg = V["config"]
    ledger = transcript_ledger(cfg)
    with ledger:
        for i, call in enumerate(V["calls"]):
            expect = call.get("expect", "ok")
            args = {k: v for k, v in call.items() if k not in ("expect", "result")}
            before = ledger.save()
            try:
                result = ledger.apply(args)
                outcome = "ok"
            except pot.Error as e:
                outcome = e.status
                result = {"ok": False, "status": e.status, "message": e.message}
                # The exception class is the one of the status.
                assert type(e) is pot.error_class(e.code)
                # A refused call leaves the ledger exactly as it was.
                assert ledger.save() == before, f"call {i}: a refused call changed the state"
            assert outcome == expect, f"call {i} ({args['call']}): {result}"
            if "result" in call:
                assert result == call["result"], f"call {i} ({args['call']})"
        assert len(V["calls"]) == 134

        state = ledger.save()
        assert str(pot.sha256(state)) == V["state_sha256"]
        # Saving, loading and saving again gives the same bytes.
        with pot.Ledger.load(state) as loaded:
            assert loaded.save() == state
        with pytest.raises(pot.MalformedError) as e:
            pot.Ledger.load(state + b"\0")
        want_error(e, pot.MalformedError, pot.Status.MALFORMED)
        with pytest.raises(pot.InvalidArgumentError) as e:
            ledger.apply_json('{"call": "no_such_call"}')
        want_error(e, pot.InvalidArgumentError, pot.Status.INVALID_ARGUMENT)


def test_ledger_refusals_raise_their_status():
    """The refused calls of the transcript raise the class of their status
    (a commitment before its task, a task from another identity than its
    owner, a commitment the task does not admit, a root from another
    identity, calls in the wrong phase), carrying the transcript's messages."""
    cfg = V["config"]
    seen = {}
    with transcript_ledger(cfg) as ledger:
        for call in V["calls"]:
            args = {k: v for k, v in call.items() if k not in ("expect", "result")}
            if call.get("expect", "ok") == "ok":
                ledger.apply(args)
                continue
            with pytest.raises(pot.Error) as e:
                ledger.apply(args)
            seen[e.value.status] = type(e.value)
            assert e.value.message == call["result"]["message"]
    assert seen == {"POT_E_PERMISSION": pot.PermissionDeniedError, "POT_E_STATE": pot.StateError,
                    "POT_E_NOT_FOUND": pot.NotFoundError, "POT_E_INVALID_ARGUMENT": pot.InvalidArgumentError,
                    "POT_E_CONFLICT": pot.ConflictError, "POT_E_DUPLICATE": pot.DuplicateError,
                    "POT_E_PROOF_MISMATCH": pot.ProofMismatchError, "POT_E_OUT_OF_RANGE": pot.OutOfRangeError,
                    "POT_E_LIMIT": pot.LimitError}


def test_outcome_records_decode_to_the_verdicts_they_record():
    """Each finalization's outcome record, decoded from its bytes alone (a
    light client holding a record and an inclusion proof), says what the
    finalize_challenge result said; broken records are refused by name."""
    calls = [c for c in V["calls"] if c["call"] == "finalize_challenge" and c["expect"] == "ok"]
    finals = [c["result"] for c in calls]
    # Challenge 0 twice (a re-run), then step 1's challenge, never opened.
    assert [(c["challenge_id"]) for c in calls] == [0, 0, 1]
    for (attempt, cid), r in zip([(1, 0), (2, 0), (1, 1)], finals):
        o = pot.decode_outcome(bytes.fromhex(r["outcome"]))
        assert o["attempt"] == attempt and o["challenge_id"] == cid
        for key in ("verdict", "cause", "cluster_size", "cluster_stake", "minority", "silent", "misconfigured",
                    "unreplayed"):
            assert o[key] == r[key], key
    record = bytes.fromhex(finals[0]["outcome"])
    with pytest.raises(pot.MalformedError, match="bytes after the last list"):
        pot.decode_outcome(record + b"\0")
    with pytest.raises(pot.MalformedError, match="this SDK reads 'pot/v2/outcome'"):
        pot.decode_outcome(record.replace(b"pot/v2/outcome", b"pot/v1/outcome"))
    with pytest.raises(pot.MalformedError, match="attempt 0"):
        pot.decode_outcome(record[:23] + b"\0\0\0\0" + record[27:])
    with pytest.raises(pot.LimitError):
        pot.decode_outcome(bytes(266351))


def test_dispute_records_decode_to_the_ends_they_record():
    """Each ended dispute's record (docs/PROTOCOL.md 20.2), decoded from its
    bytes alone, says what the call that ended it said: the ledger's own
    ruling on an opening, the party that missed a deadline, the referee's
    ruling; broken records are refused by name."""
    ends = [c["result"] for c in V["calls"] if c["expect"] == "ok" and c["result"].get("ended")]
    assert [(r["outcome"]["end"], r["outcome"]["rule"], r["outcome"]["losers"]) for r in ends] == [
        ("ruled", "source", ["challenger"]), ("miner_default", None, ["miner"]),
        ("referee_ruled", "operator", ["challenger"])]
    for r in ends:
        assert pot.decode_outcome(bytes.fromhex(r["record"])) == r["outcome"]
    ruled = pot.decode_outcome(bytes.fromhex(ends[0]["record"]))
    assert (ruled["step"], ruled["node"], ruled["phase"]) == (3, 1, "openings")
    record = bytes.fromhex(ends[0]["record"])
    with pytest.raises(pot.MalformedError, match=r"this SDK reads 'pot/v3/dispute-outcome' \(protocol version 3\)"):
        pot.decode_outcome(record.replace(b"pot/v3/dispute-outcome", b"pot/v2/dispute-outcome"))
    with pytest.raises(pot.MalformedError, match="bytes after the rule"):
        pot.decode_outcome(record + b"\0")
    # The challenger's digest is the miner's (93 bytes of traces, rounds,
    # node and rule follow the digests).
    with pytest.raises(pot.MalformedError, match="nothing is disputed"):
        pot.decode_outcome(record[:-125] + record[-157:-125] + record[-93:])
