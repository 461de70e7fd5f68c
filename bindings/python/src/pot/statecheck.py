"""State statistics and the rules over consecutive states
(docs/PROTOCOL.md 5.2-5.3): per tensor of a state its element count, max |x|,
L2 norm and its non-finite, subnormal and zero elements, in a table whose
bytes and digest every implementation computes alike; and the flags of a
step, the things honest training does not do in one step (a magnitude
jumping by 2^10, moments saturating at 2^40, a norm collapsing...). A flag
is a reason to replay the step, never a verdict."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _pot
from ._core import Digest, _digest
from .hash import Buffer, State
from .safetensors import Safetensors

PathLike = Union[str, "os.PathLike[str]"]


class StateStats:
    """A statistics table (its canonical bytes, validated)."""

    def __init__(self, table: Buffer):
        self._bytes = bytes(table)
        self._digest = _digest(_pot.pot_state_stats_digest(self._bytes))  # MalformedError / LimitError
        self._rows: Optional[List[Dict[str, Any]]] = None  # parsed on first use

    @property
    def digest(self) -> Digest:
        """tagged("pot/v1/state-stats", table) (pot_state_stats_digest)."""
        return self._digest

    def encode(self) -> bytes:
        return self._bytes

    def to_json(self) -> str:
        return _pot.pot_state_stats_to_json(self._bytes).decode("utf-8")

    @property
    def tensors(self) -> List[Dict[str, Any]]:
        """Per tensor in name order: name, dtype, elements, max_abs, l2_norm
        (None when the sum of squares overflows binary64), nonfinite,
        subnormal, zeros. (A copy of the rows parsed once.)"""
        if self._rows is None:
            self._rows = json.loads(self.to_json())["tensors"]
        return [dict(r) for r in self._rows]

    def __getitem__(self, name: str) -> Dict[str, Any]:
        for t in self.tensors:
            if t["name"] == name:
                return t
        raise KeyError(name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateStats) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __repr__(self) -> str:
        return f"StateStats({len(self.tensors)} tensors, digest {self._digest.hex()[:16]}...)"


def state_stats(state: Union[Safetensors, State, PathLike], threads: int = 0) -> StateStats:
    """The statistics table of a safetensors state (pot_safetensors_stats), from
    an open Safetensors or a path; the bytes do not depend on `threads`
    (0 = every core). Of a pot.State (pot_state_stats): the table of the
    tensors added so far, computed as each was added (StateError when one
    was added by its digest alone)."""
    if isinstance(state, State):
        with state._use() as h:
            return StateStats(_pot.pot_state_stats(h))
    if isinstance(state, Safetensors):
        with state._read() as h:
            return StateStats(_pot.pot_safetensors_stats(h, threads))
    with Safetensors(state) as f:
        return state_stats(f, threads)


@dataclass(frozen=True)
class StateFlag:
    """One rule a step trips: "max_abs_jump", "norm_jump", "norm_collapse",
    "saturated", "nonfinite" or "changed", the tensor, and the compared
    statistic before and after (None for an overflowed norm)."""
    rule: str
    tensor: str
    before: Any
    after: Any


def state_flags(before: StateStats, after: StateStats) -> List[StateFlag]:
    """The flags of the step from the state of `before` to that of `after`
    (pot_state_flags), by tensor in name order; [] when none."""
    text = _pot.pot_state_flags(before.encode(), after.encode()).decode("utf-8")
    return [StateFlag(f["rule"], f["tensor"], f["before"], f["after"]) for f in json.loads(text)]


@dataclass(frozen=True)
class FlaggedStep:
    """A step of a run whose statistics trip a rule, with its flags."""
    step: int
    flags: List[StateFlag]


def _flagged_steps(text: bytes) -> List[FlaggedStep]:
    return [FlaggedStep(s["step"], [StateFlag(f["rule"], f["tensor"], f["before"], f["after"]) for f in s["flags"]])
            for s in json.loads(text.decode("utf-8"))]


def run_flags(tables: Sequence[Union[StateStats, Buffer]]) -> List[FlaggedStep]:
    """The flagged steps of a run (pot_run_flags, docs/PROTOCOL.md 5.3):
    tables[i] is the table of S_{i+1}; step 1 is compared with an empty
    table. What a miner seals its run with on the ledger (docs/ledger.md
    2.3) and lists in every opening (check 32, run_flags)."""
    raw = [t.encode() if isinstance(t, StateStats) else bytes(t) for t in tables]
    return _flagged_steps(_pot.pot_run_flags(raw))


__all__ = ["StateStats", "StateFlag", "FlaggedStep", "state_stats", "state_flags", "run_flags"]
