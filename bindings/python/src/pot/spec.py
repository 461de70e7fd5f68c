"""The canonical execution spec (docs/PROTOCOL.md section 14)."""

from __future__ import annotations

import enum
import json
from typing import Any, List, Mapping, Tuple, Union

from . import _pot
from ._core import Digest, _digest
from ._handle import Handle, _new
from .hash import Buffer


class SeedPolicy(enum.IntEnum):
    """pot_seed_policy; str() is the JSON kind ("per_step")."""

    PER_STEP = _pot.POT_SEED_PER_STEP
    SINGLE_SEED = _pot.POT_SEED_SINGLE_SEED
    NONE = _pot.POT_SEED_NONE

    def __str__(self) -> str:
        return self.name.lower()


def _json_text(value: Union[str, bytes, Mapping[str, Any]]) -> Union[str, bytes]:
    if isinstance(value, Mapping):
        return json.dumps(value)
    return value


class Spec(Handle):
    """A validated execution spec (pot_spec). Immutable: threads may read
    one spec at once.

    >>> spec = Spec.from_json(open("spec.json").read())   # doctest: +SKIP
    >>> spec.seed_policy, spec.seed, spec.digest()         # doctest: +SKIP
    """

    _free = staticmethod(_pot.pot_spec_free)
    _shared_reads = True

    def __init__(self, json_text: Union[str, bytes, Mapping[str, Any]]) -> None:
        """Same as Spec.from_json."""
        super().__init__(_pot.pot_spec_from_json(_json_text(json_text)))

    @classmethod
    def from_json(cls, json_text: Union[str, bytes, Mapping[str, Any]]) -> "Spec":
        """Parses the JSON form (docs/cli.md; a str, or a dict) and validates
        it. InvalidArgumentError names the first rule broken or the bad key,
        MalformedError for text that is not JSON."""
        return cls(json_text)

    @classmethod
    def decode(cls, data: Buffer) -> "Spec":
        """From canonical bytes: MalformedError unless exactly canonical,
        InvalidArgumentError when a rule is broken, LimitError past 65536 bytes."""
        return _new(cls, _pot.pot_spec_decode(data))

    def encode(self) -> bytes:
        """The canonical bytes (a pot.v2.ExecutionSpec message)."""
        with self._read() as h:
            return _pot.pot_spec_encode(h)

    def to_json(self) -> str:
        """The JSON form."""
        with self._read() as h:
            return _pot.pot_spec_to_json(h).decode("utf-8")

    def to_dict(self) -> Any:
        """The JSON form, parsed."""
        return json.loads(self.to_json())

    def digest(self) -> Digest:
        """tagged("pot/v2/spec", canonical bytes)."""
        with self._read() as h:
            return _digest(_pot.pot_spec_digest(h))

    def _policy(self) -> Tuple[SeedPolicy, int]:
        with self._read() as h:
            policy, seed = _pot.pot_spec_seed_policy(h)
        return SeedPolicy(policy), seed

    @property
    def seed_policy(self) -> SeedPolicy:
        """The seed policy."""
        return self._policy()[0]

    @property
    def seed(self) -> int:
        """The policy's seed: the base seed for PER_STEP, 0 for NONE."""
        return self._policy()[1]

    @property
    def intra_op_threads(self) -> int:
        """The pinned intra-op thread count."""
        with self._read() as h:
            return _pot.pot_spec_intra_op_threads(h)

    @property
    def norm_bucket_resolution(self) -> int:
        """Norm-bucket resolution (buckets per doubling)."""
        with self._read() as h:
            return _pot.pot_spec_norm_bucket_resolution(h)

    def learning_rates(self, first: int, count: int) -> List[float]:
        """The learning rates of training steps first..first+count-1
        (pot_spec_learning_rates): the optimizer's lr through the spec's
        lr_schedule, as torch 1.13's schedulers give
        param_groups[0]["lr"] before each optimizer step, bit for bit. S_t's
        hparam/lr must be the rate of step t+1. O(first + count): ask for a
        run's rates in chunks (at most 2^24 per call), not once per step.
        InvalidArgumentError for first = 0, OutOfRangeError past step 2^32."""
        if count < 0:
            raise ValueError("count must be >= 0")
        with self._read() as h:
            return list(_pot.pot_spec_learning_rates(count, h, first))  # (count, spec, first)

    def learning_rate(self, step: int) -> float:
        """The learning rate of training step `step` (>= 1)."""
        return self.learning_rates(step, 1)[0]

    @property
    def group_count(self) -> int:
        """The parameter groups (docs/PROTOCOL.md 14.5): 1 + the spec's param_groups."""
        with self._read() as h:
            return _pot.pot_spec_group_count(h)

    def group_learning_rates(self, group: int, first: int, count: int) -> List[float]:
        """learning_rates for parameter group `group` (pot_spec_group_learning_rates):
        its optimizer's lr through the one lr_schedule; S_t holds group g's
        rate of step t+1 as hparam/lr/<g>. OutOfRangeError for a group past
        group_count."""
        if count < 0:
            raise ValueError("count must be >= 0")
        with self._read() as h:
            return list(_pot.pot_spec_group_learning_rates(count, h, group, first))  # (count, spec, group, first)

    def _describe(self) -> str:
        return f"{self.digest()}"


__all__ = ["SeedPolicy", "Spec"]
