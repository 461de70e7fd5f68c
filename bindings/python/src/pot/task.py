"""Tasks (docs/PROTOCOL.md section 17.1): what a task owner fixes before
anyone trains, and the check that a training commitment answers to it."""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Union

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
        8192 bytes."""
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

    def _describe(self) -> str:
        return f"task {self.id}"


__all__ = ["Task"]
