"""Witnesses: salted commit/reveal and the largest-cluster verdict
(docs/PROTOCOL.md section 19)."""

from __future__ import annotations

import enum
from typing import NamedTuple, Optional, Union

from . import _pot
from ._core import Digest, _digest
from ._handle import Handle
from .hash import Buffer


def witness_salt() -> bytes:
    """WITNESS_SALT_SIZE fresh bytes from OpenSSL's CSPRNG (pot_witness_salt)."""
    return _pot.pot_witness_salt()


def witness_commitment(run_id: Buffer, step: int, replayed_state: Buffer, bucket: int, salt: Buffer,
                       identity: Buffer) -> Digest:
    """The commitment a verifier posts before revealing: binds run, step,
    replayed state digest, bucket, salt (16..64 bytes) and identity (1..256
    bytes)."""
    return _digest(_pot.pot_witness_commitment(run_id, step, replayed_state, bucket, salt, identity))


def verify_witness_reveal(commitment: Buffer, run_id: Buffer, step: int, replayed_state: Buffer, bucket: int,
                          salt: Buffer, identity: Buffer) -> None:
    """Returns when the reveal opens the commitment; ProofMismatchError when
    the value, the salt or the identity differ from those committed."""
    _pot.pot_witness_verify_reveal(commitment, run_id, step, replayed_state, bucket, salt, identity)


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


__all__ = ["witness_salt", "witness_commitment", "verify_witness_reveal", "WitnessMode", "VerdictOutcome",
           "Decision", "Verdict"]
