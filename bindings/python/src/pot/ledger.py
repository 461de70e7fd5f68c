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
    reveal_witness_value, finalize_challenge, redraw_committee,
    prune_task, the disputes' open_dispute, claim_dispute, settle_dispute,
    and the runtime's post_randomness. Calls are JSON documents
    (docs/ledger.md), and the bonds' deposit, withdraw and account_info
    (docs/ledger.md 2.18).

    >>> with Ledger(draw_delay=1, opening_window=10, commit_window=10, reveal_window=10,
    ...             max_committee_size=3, min_stake=1, max_rounds=4, max_attempts=2,
    ...             dispute_window=5, dispute_arity=2, task_bond=10, miner_bond=1000, dispute_bond=100,
    ...             max_task_blocks=100000, max_open_tasks=8, miner_grace=10) as ledger:
    ...     ledger.apply({"call": "no_such_call"})
    Traceback (most recent call last):
    ...
    pot.InvalidArgumentError: POT_E_INVALID_ARGUMENT: ...
    """

    _free = staticmethod(_pot.pot_ledger_free)

    def __init__(self, *, draw_delay: int, opening_window: int, commit_window: int, reveal_window: int,
                 max_committee_size: int, min_stake: int, max_rounds: int, max_attempts: int,
                 dispute_window: int, dispute_arity: int, task_bond: int, miner_bond: int, dispute_bond: int,
                 max_task_blocks: int, max_open_tasks: int, miner_grace: int, referee: bytes = b"") -> None:
        """A new ledger (docs/ledger.md section 1): the blocks from a run's
        seal to the randomness that draws its challenges, the opening,
        commit and reveal windows (in blocks), the verifiers drawn to judge
        each challenge (at most 1024), the least stake a verifier registers
        with, the most challenge rounds a task may ask for, the most
        committees a challenge gets (1..16), and for disputes the blocks
        each bisection round lasts and the bisection's arity (2..256); the
        bonds (docs/ledger.md 2.18) a task's owner, a run's miner and a
        disputant lock, the most blocks a task may run, the most tasks an
        owner holds at once, and the blocks a miner may answer a dispute
        past each deadline (0: none); all >= 1 but ``miner_grace``, else
        InvalidArgumentError naming the field; ``referee``, the
        identity that rules on an operator dispute where the ledger cannot
        (docs/ledger.md 2.17; empty: none, and a dispute ends when its step
        is found). A transcript's ``config`` is passed as
        ``Ledger(**config)`` (its ``referee`` hex as bytes)."""
        config = {"draw_delay": draw_delay, "opening_window": opening_window, "commit_window": commit_window,
                  "reveal_window": reveal_window, "max_committee_size": max_committee_size, "min_stake": min_stake,
                  "max_rounds": max_rounds, "max_attempts": max_attempts, "dispute_window": dispute_window,
                  "dispute_arity": dispute_arity, "task_bond": task_bond, "miner_bond": miner_bond,
                  "dispute_bond": dispute_bond, "max_task_blocks": max_task_blocks, "max_open_tasks": max_open_tasks,
                  "miner_grace": miner_grace}
        for key, value in config.items():
            # JSON has no other integers; a float or a bool would be refused
            # by the C API with a less direct message.
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"Ledger: {key} must be an int, not {type(value).__name__}")
        if not isinstance(referee, (bytes, bytearray)):
            raise TypeError(f"Ledger: referee must be bytes, not {type(referee).__name__}")
        if referee:
            config["referee"] = bytes(referee).hex()
        super().__init__(_pot.pot_ledger_new(json.dumps(config)))

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


def decode_outcome(record: Buffer) -> Dict[str, Any]:
    """Decodes an outcome record (docs/PROTOCOL.md 20.1: the bytes of a
    finalize_challenge result's "outcome" hex, a leaf of the outcome log):
    challenge_id, attempt, run_id, step, mode, verdict, cause, cluster_size,
    cluster_stake, committee_stake and the minority, silent, misconfigured
    and unreplayed identities (hex). MalformedError naming the broken rule,
    LimitError past 266,350 bytes (pot_ledger_outcome_decode)."""
    result: Dict[str, Any] = json.loads(_pot.pot_ledger_outcome_decode(record).decode("utf-8"))
    return result


__all__ = ["Ledger", "decode_outcome"]
