"""Tasks (docs/PROTOCOL.md section 17.1): what a task owner fixes before
anyone trains, and the check that a training commitment answers to it."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Union

from . import _pot
from ._core import Digest, _digest
from ._handle import Handle, _new
from .commitment import Commitment
from .hash import Buffer
from .spec import Spec, _json_text


class Task(Handle):
    """A validated task (pot_task): the execution spec (with the model
    program digest), the dataset, the published S_0, the listed schedule,
    the step bounds and the challenge policy. Immutable: threads may read one
    task at once.

    >>> task = Task.from_json(open("task.json").read())      # doctest: +SKIP
    >>> task.id, task.spec.digest()                           # doctest: +SKIP
    """

    _free = staticmethod(_pot.pot_task_free)
    _shared_reads = True

    def __init__(self, json_text: Union[str, bytes, Mapping[str, Any]]) -> None:
        """Same as Task.from_json."""
        super().__init__(_pot.pot_task_from_json(_json_text(json_text)))

    @classmethod
    def from_json(cls, json_text: Union[str, bytes, Mapping[str, Any]]) -> "Task":
        """From the JSON form (docs/cli.md "Task"; a str or a dict whose
        "spec" is the spec's JSON object). InvalidArgumentError names the
        rule or key, UnsupportedError another protocol_version."""
        return cls(json_text)

    @classmethod
    def decode(cls, data: Buffer) -> "Task":
        """From canonical pot.v2.Task bytes: UnsupportedError for another
        protocol version, MalformedError unless canonical, LimitError past
        73728 bytes."""
        return _new(cls, _pot.pot_task_decode(data))

    def encode(self) -> bytes:
        """The canonical bytes (what post_task carries)."""
        with self._read() as h:
            return _pot.pot_task_encode(h)

    def to_json(self) -> str:
        """The JSON form."""
        with self._read() as h:
            return _pot.pot_task_to_json(h).decode("utf-8")

    def to_dict(self) -> Dict[str, Any]:
        """The JSON form as a dict."""
        return json.loads(self.to_json())

    @property
    def id(self) -> Digest:
        """The task id: tagged("pot/v2/task", canonical bytes)."""
        with self._read() as h:
            return _digest(_pot.pot_task_id(h))

    @property
    def spec(self) -> Spec:
        """The task's execution spec (a new Spec handle)."""
        with self._read() as h:
            return _new(Spec, _pot.pot_task_spec(h))

    def check_commitment(self, commitment: Commitment) -> None:
        """Returns when the task admits the commitment; otherwise
        InvalidArgumentError naming the first field that differs from what
        the task fixes, or OutOfRangeError for declared steps outside the
        task's bounds. The ledger's start_training_commitment runs this
        check."""
        with self._read() as h, commitment._read() as c:
            _pot.pot_task_check_commitment(h, c)

    @property
    def schedule_rule(self) -> str:
        """"listed" (every run follows the task's listed schedule),
        "run_seeded" (each run trains on its own seeded order,
        docs/PROTOCOL.md 17.3) or "run_seeded_uniform" (its own indices drawn
        with replacement, 16.3)."""
        with self._read() as h:
            return {2: "run_seeded", 3: "run_seeded_uniform"}.get(_pot.pot_task_schedule_rule(h), "listed")

    def run_schedule_seed(self, miner_identity: Buffer, declared_steps: int) -> int:
        """Under a run-seeded task, the seed of the schedule of the run of
        `miner_identity` for `declared_steps` steps (docs/PROTOCOL.md 17.3);
        InvalidArgumentError for a listed task, OutOfRangeError for a step
        count outside the task's bounds."""
        with self._read() as h:
            return _pot.pot_task_run_schedule_seed(h, miner_identity, declared_steps)

    def run_schedule(self, miner_identity: Buffer, declared_steps: int) -> List[List[List[int]]]:
        """The schedule of that run: for each step 1..declared_steps, its
        micro-batches of dataset indices, in order (what the training loop
        must feed, e.g. through a torch Sampler). A listed task's schedule
        is its owner's list; this is for run-seeded tasks."""
        seed = self.run_schedule_seed(miner_identity, declared_steps)
        draw = (_pot.pot_uniform_schedule_stream if self.schedule_rule == "run_seeded_uniform"
                else _pot.pot_seeded_schedule_stream)
        d = self.to_dict()
        n, batch, micro = d["dataset_size"], d["spec"]["batch_size"], d["spec"].get("grad_accum_microbatches", 1)
        total, chunk = declared_steps * batch, _pot.POT_MAX_STREAM_POSITIONS
        stream: List[int] = []
        for first in range(0, total, chunk):
            stream += draw(min(chunk, total - first), seed, n, first)
        per = batch // micro
        return [[stream[(t * batch) + j * per:(t * batch) + (j + 1) * per] for j in range(micro)]
                for t in range(declared_steps)]

    def commitment(self, miner_identity: Buffer, declared_steps: int) -> Commitment:
        """The training commitment of `miner_identity` for `declared_steps`
        steps: every other field is the task's (a run-seeded task's schedule
        root is the run's own)."""
        with self._read() as h:
            return _new(Commitment, _pot.pot_task_commitment(h, miner_identity, declared_steps))

    def _describe(self) -> str:
        return f"task {self.id}"


__all__ = ["Task"]
