"""Commitments: dataset samples, schedules, the training commitment."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Mapping, NamedTuple, Sequence, Union

from . import _pot
from ._core import Digest, _digest
from ._handle import Handle, _new
from .hash import Buffer
from .spec import _json_text


def sample_digest(safetensors: Buffer) -> Digest:
    """Digest of one dataset sample given as safetensors bytes
    (pot_sample_digest). The dataset root is the RFC 6962 root over the
    sample digests appended as leaf data (Tree.append) in dataset order.
    MalformedError for bytes that are not safetensors or hold no tensor,
    LimitError past 64 MiB."""
    return _digest(_pot.pot_sample_digest(safetensors))


@dataclass
class ScheduleEntry:
    """Schedule entry of step `step` (from 1): the dataset indices of its
    consecutive micro-batches (docs/PROTOCOL.md section 16.1)."""

    step: int
    microbatches: List[List[int]] = field(default_factory=list)

    @property
    def indices(self) -> List[int]:
        """All the entry's dataset indices, in order."""
        return [i for mb in self.microbatches for i in mb]

    def encode(self, dataset_size: int = 0) -> bytes:
        """The entry's canonical bytes, the leaf data of the schedule tree
        (pot_schedule_entry_encode). OutOfRangeError for an index >=
        dataset_size (0 skips that check)."""
        return _pot.pot_schedule_entry_encode(self.step, self.indices, [len(mb) for mb in self.microbatches],
                                              dataset_size)

    @classmethod
    def decode(cls, entry: Buffer) -> "ScheduleEntry":
        """Parses an entry (pot_schedule_entry_decode); MalformedError for
        bytes that are not a canonical entry."""
        step, indices, sizes = _pot.pot_schedule_entry_decode(entry)
        mbs, at = [], 0
        for n in sizes:
            mbs.append(indices[at:at + n])
            at += n
        return cls(step, mbs)


def schedule_entry_encode(step: int, indices: Sequence[int], microbatch_sizes: Sequence[int],
                          dataset_size: int = 0) -> bytes:
    """pot_schedule_entry_encode: `indices` split into consecutive
    micro-batches of the given sizes (which must sum to len(indices))."""
    return _pot.pot_schedule_entry_encode(step, indices, microbatch_sizes, dataset_size)


def seeded_schedule_entry(seed: int, dataset_size: int, batch_size: int, microbatches: int, step: int) -> bytes:
    """Entry `step` of the seeded schedule (epoch-wise permutations of the
    dataset from `seed`, docs/PROTOCOL.md 16.2); batch_size must be a
    multiple of microbatches."""
    return _pot.pot_seeded_schedule_entry(seed, dataset_size, batch_size, microbatches, step)


def seeded_schedule_root(seed: int, dataset_size: int, batch_size: int, microbatches: int, steps: int) -> Digest:
    """Root of the seeded schedule's first `steps` entries."""
    return _digest(_pot.pot_seeded_schedule_root(seed, dataset_size, batch_size, microbatches, steps))


def uniform_schedule_stream(seed: int, dataset_size: int, first: int, count: int) -> List[int]:
    """Positions first .. first + count - 1 of the uniform schedule's index
    stream (docs/PROTOCOL.md 16.3): each an index drawn uniformly from
    [0, dataset_size) on its own, with replacement. Step t's entry holds
    positions (t-1)*B .. t*B - 1. At most POT_MAX_STREAM_POSITIONS (2^24)
    per call (ValueError past it)."""
    return list(_pot.pot_uniform_schedule_stream(count, seed, dataset_size, first))


class CommitmentDigests(NamedTuple):
    """The digests a training commitment binds."""

    initial_state: Digest
    schedule_root: Digest
    dataset_root: Digest
    spec: Digest


class Commitment(Handle):
    """A validated training commitment (pot_commitment, docs/PROTOCOL.md
    section 17). Threads may read one commitment at once; set_sealed_flags,
    its one change, waits for them."""

    _free = staticmethod(_pot.pot_commitment_free)
    _shared_reads = True

    def __init__(self, json_text: Union[str, bytes, Mapping[str, Any]]) -> None:
        """Same as Commitment.from_json."""
        super().__init__(_pot.pot_commitment_from_json(_json_text(json_text)))

    @classmethod
    def from_json(cls, json_text: Union[str, bytes, Mapping[str, Any]]) -> "Commitment":
        """From the JSON form (docs/cli.md; a str or a dict);
        InvalidArgumentError names the rule broken."""
        return cls(json_text)

    @classmethod
    def decode(cls, data: Buffer) -> "Commitment":
        """From canonical bytes; MalformedError unless canonical, LimitError
        past 1024 bytes."""
        return _new(cls, _pot.pot_commitment_decode(data))

    def encode(self) -> bytes:
        """The canonical bytes."""
        with self._read() as h:
            return _pot.pot_commitment_encode(h)

    def to_json(self) -> str:
        """The JSON form."""
        with self._read() as h:
            return _pot.pot_commitment_to_json(h).decode("utf-8")

    def set_sealed_flags(self, flagged_steps: Sequence[int]) -> None:
        """The flagged steps the run sealed with on the ledger (run_info's
        "flagged_steps", docs/ledger.md 2.3): verify_opening and
        verify_step then fail an opening that lists other steps (check 32,
        OpeningCheck.RUN_FLAGS), so a flag hidden from the ledger fails
        every challenge. InvalidArgumentError unless ascending within
        1..declared_steps."""
        with self._use() as h:
            _pot.pot_commitment_set_sealed_flags(h, [int(s) for s in flagged_steps])

    @property
    def run_id(self) -> Digest:
        """The run id: tagged("pot/v2/run", canonical bytes)."""
        with self._read() as h:
            return _digest(_pot.pot_commitment_run_id(h))

    @property
    def task_id(self) -> Digest:
        """The id of the task the run answers to."""
        with self._read() as h:
            return _digest(_pot.pot_commitment_task_id(h))

    @property
    def digests(self) -> CommitmentDigests:
        """Initial state, schedule root, dataset root and spec digest."""
        with self._read() as h:
            return CommitmentDigests(*(_digest(d) for d in _pot.pot_commitment_digests(h)))

    @property
    def declared_steps(self) -> int:
        """Declared steps (= schedule entries)."""
        with self._read() as h:
            return _pot.pot_commitment_declared_steps(h)

    @property
    def dataset_size(self) -> int:
        """Dataset size."""
        with self._read() as h:
            return _pot.pot_commitment_dataset_size(h)

    def _describe(self) -> str:
        return f"run {self.run_id}, {self.declared_steps} steps"


__all__ = ["sample_digest", "ScheduleEntry", "schedule_entry_encode", "seeded_schedule_entry",
           "seeded_schedule_root", "CommitmentDigests", "Commitment"]
