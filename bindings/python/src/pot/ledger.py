"""The reference ledger (docs/ledger.md)."""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Union

from . import _pot
from ._handle import Handle, _new
from .hash import Buffer


class Ledger(Handle):
    """A deterministic state machine with the extrinsics' rules
    (pot_ledger): post_task, start_training_commitment,
    post_checkpoint_root, issue_challenge, submit_opening, commit_witness,
    reveal_witness_value, finalize_challenge. Calls are JSON
    documents (docs/ledger.md).

    >>> with Ledger(commit_window=10, reveal_window=10, quorum=2, max_rounds=4) as ledger:
    ...     ledger.apply({"call": "no_such_call"})
    Traceback (most recent call last):
    ...
    pot.InvalidArgumentError: POT_E_INVALID_ARGUMENT: ...
    """

    _free = staticmethod(_pot.pot_ledger_free)

    def __init__(self, commit_window: int, reveal_window: int, quorum: int, max_rounds: int) -> None:
        """A new ledger: witness commit and reveal windows (in blocks), the
        verdict's quorum and the most challenge rounds a task may ask for
        (all >= 1, else InvalidArgumentError)."""
        super().__init__(_pot.pot_ledger_new(commit_window, reveal_window, quorum, max_rounds))

    @classmethod
    def load(cls, state: Buffer) -> "Ledger":
        """Restores a saved state; MalformedError unless the bytes are exactly
        a state save() produces (every invariant re-checked), LimitError past
        64 MiB."""
        return _new(cls, _pot.pot_ledger_load(state))

    def save(self) -> bytes:
        """The canonical state bytes (save, load, save gives the same bytes)."""
        with self._use() as h:
            return _pot.pot_ledger_save(h)

    def apply_json(self, call_json: Union[str, bytes]) -> str:
        """Applies one call given as JSON text and returns its JSON result.
        A refused call raises its status (StateError, PermissionDeniedError,
        ConflictError, NotFoundError, ProofMismatchError...) and leaves the
        ledger exactly as it was."""
        with self._use() as h:
            return _pot.pot_ledger_apply(h, call_json).decode("utf-8")

    def apply(self, call: Union[str, bytes, Mapping[str, Any]]) -> Dict[str, Any]:
        """apply_json for a call given as a dict (or JSON text); the result parsed."""
        text = json.dumps(call) if isinstance(call, Mapping) else call
        result: Dict[str, Any] = json.loads(self.apply_json(text))
        return result


__all__ = ["Ledger"]
