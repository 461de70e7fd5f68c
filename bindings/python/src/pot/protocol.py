"""Protocol arithmetic: seeds, step leaves, challenges, security, norm buckets."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import List, Optional

from . import _pot
from ._core import Digest, _digest
from .hash import Buffer
from .safetensors import Safetensors


def seed(base_seed: int, run_id: Buffer, step: int) -> int:
    """Seed of step `step` of run `run_id` (32 bytes, Commitment.run_id)
    under the per_step seed policy (pot_seed_derive): the first 8 bytes,
    little-endian, of a tagged SHA-256 of (base_seed, run_id, step)."""
    return _pot.pot_seed_derive(base_seed, run_id, step)


seed_derive = seed


@dataclass(frozen=True)
class StepLeaf:
    """The leaf the checkpoint log holds for step `step` (from 1) of run
    `run_id`: the state digest after the step, the digest of that state's
    statistics table (StateStats.digest, docs/PROTOCOL.md 5.2), the loss and
    the update norm from S_{step-1} to S_step over the "param/" tensors
    (update_norm(), sections 10 and 13). The norm and the table are
    committed at training time: the cross-architecture check compares
    replays with the norm, and every verifier reading a state checks its
    table (check STATE_STATS)."""

    run_id: Digest
    step: int
    state_digest: Digest
    stats_digest: Digest
    loss: float
    update_norm: float

    def encode(self) -> bytes:
        """The STEP_LEAF_SIZE leaf bytes (pot_step_leaf_encode), to append at
        leaf index step - 1; InvalidArgumentError for step 0 or a norm with
        its sign bit set."""
        return _pot.pot_step_leaf_encode(self.run_id, self.step, self.state_digest, self.stats_digest, self.loss,
                                         self.update_norm)

    @classmethod
    def decode(cls, leaf: Buffer) -> "StepLeaf":
        """Parses leaf bytes (pot_step_leaf_decode); MalformedError unless
        they are exactly what encode() produces (a version-1 or version-2
        leaf is refused naming its version)."""
        run_id, step, digest, stats, loss, norm = _pot.pot_step_leaf_decode(leaf)
        return cls(_digest(run_id), step, _digest(digest), _digest(stats), loss, norm)

    @property
    def loss_bits(self) -> int:
        """The loss's IEEE-754 binary64 bits, as the leaf holds them."""
        return int.from_bytes(struct.pack("<d", self.loss), "little")

    @property
    def update_norm_bits(self) -> int:
        """The update norm's IEEE-754 binary64 bits, as the leaf holds them."""
        return int.from_bytes(struct.pack("<d", self.update_norm), "little")


def challenge_derive(beacon: Buffer, run_id: Buffer, num_steps: int, rounds: int) -> List[int]:
    """`rounds` distinct challenged steps in 1..num_steps derived from the
    beacon and the run id, uniform, without modulo bias (pot_challenge_derive).
    InvalidArgumentError when num_steps is 0, rounds > num_steps or the beacon
    is empty; LimitError past MAX_CHALLENGE_ROUNDS or MAX_BEACON_BYTES."""
    return _pot.pot_challenge_derive(rounds, beacon, run_id, num_steps)


def detection_probability(steps: int, forged: int, challenges: int) -> float:
    """1 - C(n-m, k) / C(n, k): the probability that `challenges` distinct
    challenges over `steps` steps hit one of `forged` forged steps."""
    return _pot.pot_security_detection_probability(steps, forged, challenges)


def challenges_needed(steps: int, forged: int, target: float) -> int:
    """Smallest number of challenges whose detection probability reaches
    target (0 < target < 1); LimitError past MAX_CHALLENGE_ROUNDS."""
    return _pot.pot_security_challenges_needed(steps, forged, target)


def security_bond(reward: int, detection_probability: float) -> int:
    """The least bond B with p * B >= (1 - p) * reward (docs/PROTOCOL.md
    12.2): forging then gains nothing in expectation (pot_security_bond).
    InvalidArgumentError unless 0 < p <= 1; OutOfRangeError past 2^64 - 1."""
    return _pot.pot_security_bond(reward, detection_probability)


#: Bucket of an exact-zero norm (matches only itself).
NORM_BUCKET_ZERO: int = _pot.pot_norm_bucket_zero()
#: Bucket of a NaN or infinite norm (matches only itself).
NORM_BUCKET_NONFINITE: int = _pot.pot_norm_bucket_nonfinite()


def norm_bucket(norm: float, resolution: int) -> int:
    """floor(resolution * log2(norm)) (pot_norm_bucket), resolution buckets
    per doubling (1..65536); the sentinels for 0 and NaN/Inf.
    InvalidArgumentError for a negative norm or a resolution out of range."""
    return _pot.pot_norm_bucket(norm, resolution)


def norm_buckets_match(declared: int, observed: int) -> bool:
    """True when the buckets are equal or adjacent (sentinels: only equal)."""
    return bool(_pot.pot_norm_buckets_match(declared, observed))


def update_norm(pre: Safetensors, post: Safetensors, prefix: Optional[str] = "") -> float:
    """L2 norm of post - pre over the floating-point tensors whose names
    start with prefix ("" = all), in float64, in the order of
    docs/PROTOCOL.md section 13 (pot_update_norm). InvalidArgumentError when
    the states hold different such tensors, or none."""
    with pre._read() as a, post._read() as b:
        return _pot.pot_update_norm(a, b, prefix)


__all__ = ["seed", "seed_derive", "StepLeaf", "challenge_derive", "detection_probability",
           "challenges_needed", "NORM_BUCKET_ZERO", "NORM_BUCKET_NONFINITE", "norm_bucket",
           "norm_buckets_match", "update_norm"]
