"""Witnesses: salted commit/reveal and the largest-cluster verdict
(docs/PROTOCOL.md section 19)."""

from __future__ import annotations

import enum
import json
from typing import Any, Dict, Mapping, NamedTuple, Optional, Union

from . import _pot
from ._core import Digest, _digest
from ._handle import Handle
from .hash import Buffer
from .replay import VerifyMode, VerifyResult
from .spec import Spec


def witness_salt() -> bytes:
    """WITNESS_SALT_SIZE fresh bytes from OpenSSL's CSPRNG (pot_witness_salt)."""
    return _pot.pot_witness_salt()


Statement = Union[Mapping[str, Any], str]
"""A witness statement (docs/PROTOCOL.md section 19): its JSON form as a
dict (or the JSON text): run_id (hex), step, challenge_id, mode
("bitwise" / "norm_bucket"), environment {framework_version,
intra_op_threads, hardware_class}, kind ("replayed" with replayed_state and
bucket, "unavailable", or "invalid_opening" with check)."""


def _statement_text(statement: Statement) -> str:
    return statement if isinstance(statement, str) else json.dumps(statement)


def witness_commitment(statement: Statement, salt: Buffer, identity: Buffer) -> Digest:
    """The commitment a committee member posts before revealing
    (pot_witness_commitment): tagged("pot/v2/witness", ...) of the statement,
    salt (16..64 bytes) and identity (1..256 bytes). InvalidArgumentError
    naming the key for a statement outside the rules of PROTOCOL 19."""
    return _digest(_pot.pot_witness_commitment(_statement_text(statement), salt, identity))


def verify_witness_reveal(commitment: Buffer, statement: Statement, salt: Buffer, identity: Buffer) -> None:
    """Returns when the reveal opens the commitment; ProofMismatchError when
    the statement (another challenge, environment or finding), the salt or
    the identity differ from those committed."""
    _pot.pot_witness_verify_reveal(commitment, _statement_text(statement), salt, identity)


def witness_statement(result: VerifyResult, spec: Spec, run_id: Buffer, step: int, challenge_id: int,
                      mode: Union[VerifyMode, int], intra_op_threads: int = 0) -> Dict[str, Any]:
    """The statement to commit to after verify_step (pot_witness_statement):
    the challenge, this process's environment (intra_op_threads as passed to
    verify_step, 0 for the spec's) and the finding: "replayed" with the
    replayed digest and bucket when the opening passed its checks and the
    replay ran, else "invalid_opening" naming the failed check. A member that
    received no opening states {"kind": "unavailable", ...} itself.
    UnsupportedError without LibTorch."""
    with spec._read() as s:
        text = _pot.pot_witness_statement((int(result.check), result.replayed, result.replayed_state_digest,
                                           result.norm_bucket, result.gradient_digest), s, run_id, step,
                                          challenge_id, int(mode), intra_op_threads)
    return json.loads(text)


class WitnessMode(enum.IntEnum):
    """What the verdict clusters (pot_witness_mode); str() is "bitwise" / "norm_bucket"."""

    BITWISE = _pot.POT_WITNESS_BITWISE
    NORM_BUCKET = _pot.POT_WITNESS_NORM_BUCKET

    def __str__(self) -> str:
        return self.name.lower()


class VerdictOutcome(enum.IntEnum):
    """pot_verdict_outcome; str() is "pass" / "fail" / "inconclusive"."""

    PASS = _pot.POT_VERDICT_PASS
    FAIL = _pot.POT_VERDICT_FAIL
    INCONCLUSIVE = _pot.POT_VERDICT_INCONCLUSIVE

    def __str__(self) -> str:
        return self.name.lower()


class Decision(NamedTuple):
    """What Verdict.decide decided, the size of the largest cluster and why."""

    outcome: VerdictOutcome
    cluster_size: int
    reason: str


class Verdict(Handle):
    """Collects revealed values and decides (pot_verdict)."""

    _free = staticmethod(_pot.pot_verdict_free)

    def __init__(self, mode: Union[WitnessMode, int], quorum: int) -> None:
        super().__init__(_pot.pot_verdict_new(int(mode), quorum))
        self.mode = WitnessMode(mode)
        self.quorum = quorum

    def add_reveal(self, identity: Buffer, replayed_state: Buffer, bucket: int = 0) -> None:
        """Adds one verifier's revealed value (its replayed digest and bucket)."""
        with self._use() as h:
            _pot.pot_verdict_add_reveal(h, identity, replayed_state, bucket)

    def decide(self, committed_state: Optional[Buffer] = None, committed_bucket: Optional[int] = None) -> Decision:
        """The largest cluster of equal values must reach the quorum and be
        strictly larger than any other (else INCONCLUSIVE); it is compared
        with the committed state digest (bitwise) or, allowing adjacent
        buckets, with the committed bucket: the bucket of the opened leaf's
        update norm (norm-bucket mode).
        InvalidArgumentError for an identity revealed twice."""
        with self._use() as h:
            outcome, size = _pot.pot_verdict_decide(h, committed_state, committed_bucket)
            return Decision(VerdictOutcome(outcome), size, _pot.pot_verdict_reason(h))

    @property
    def reason(self) -> str:
        """Why the last decide() decided as it did ("" before)."""
        with self._use() as h:
            return _pot.pot_verdict_reason(h)

    def _describe(self) -> str:
        return f"{self.mode}, quorum {self.quorum}"


__all__ = ["Statement", "witness_salt", "witness_commitment", "verify_witness_reveal", "witness_statement", "WitnessMode", "VerdictOutcome",
           "Decision", "Verdict"]
