"""Refereed disputes: the step bisection (docs/PROTOCOL.md section 22.1).

Two parties that agree on the state digest of step `lo` and claim different
digests of step `hi` narrow (lo, hi] round by round to one step: each round
both claim the digests of the round's points, and the interval becomes the
stretch before the first point where they differ. With one honest party the
agreed digests are true ones, so the referee's decision of the last step
(from the agreed S_{i-1}) goes against the dishonest party.

>>> import pot
>>> pot.bisection_points(0, 200, 4)
[50, 100, 150]
>>> pot.bisection_rounds(0, 200, 2)
8
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, NamedTuple, Sequence, Union

from . import _pot
from ._core import Digest, _digest
from ._step import ReplayResult, _replay_result
from ._errors import StateError
from ._handle import Handle
from .hash import Buffer

MIN_ARITY: int = _pot.POT_BISECTION_MIN_ARITY
MAX_ARITY: int = _pot.POT_BISECTION_MAX_ARITY
MAX_POINTS: int = _pot.POT_BISECTION_MAX_POINTS


def bisection_points(lo: int, hi: int, arity: int) -> List[int]:
    """The steps both parties claim in a round over (lo, hi]: lo + floor(j
    (hi - lo) / arity) for j = 1..arity-1, or every step of lo+1..hi-1 when
    the interval is shorter than the arity (pot_bisection_points).
    InvalidArgumentError for lo >= hi or an arity outside 2..256."""
    return _pot.pot_bisection_points(lo, hi, arity)


def bisection_rounds(lo: int, hi: int, arity: int) -> int:
    """The most rounds a bisection of (lo, hi] takes: ceil(log_arity(hi - lo))
    (pot_bisection_rounds)."""
    return _pot.pot_bisection_rounds(lo, hi, arity)


class BisectionState(NamedTuple):
    """Where a step bisection stands (pot_bisection_info)."""

    lo: int             # the interval (lo, hi] still disputed
    hi: int
    arity: int
    rounds_played: int
    done: bool          # hi == lo + 1: the dispute is step hi
    agreed: Digest      # the digest both claim for S_lo
    a_hi: Digest        # A's claim for S_hi
    b_hi: Digest        # B's claim for S_hi


class StepBisection(Handle):
    """One dispute's step bisection (pot_bisection), played round by round:

    >>> b = StepBisection(0, 8, 2, agreed=s0, a_hi=a8, b_hi=b8)  # doctest: +SKIP
    >>> while not b.state.done:                                   # doctest: +SKIP
    ...     p = b.points()
    ...     b.play_round([a_state(x) for x in p], [b_state(x) for x in p])

    InvalidArgumentError for lo >= hi, an arity outside 2..256 or a_hi ==
    b_hi (nothing is disputed)."""

    _free = staticmethod(_pot.pot_bisection_free)

    def __init__(self, lo: int, hi: int, arity: int, *, agreed: Buffer, a_hi: Buffer, b_hi: Buffer) -> None:
        super().__init__(_pot.pot_bisection_new(lo, hi, arity, agreed, a_hi, b_hi))

    @property
    def state(self) -> BisectionState:
        with self._use() as h:
            i = _pot.pot_bisection_info_get(h)
        return BisectionState(i["lo"], i["hi"], i["arity"], i["rounds_played"], i["done"], _digest(i["agreed"]),
                              _digest(i["a_hi"]), _digest(i["b_hi"]))

    def points(self) -> List[int]:
        """The steps both parties claim this round. StateError once done."""
        s = self.state
        if s.done:
            raise StateError(f"the step bisection is done at step {s.hi}")
        return bisection_points(s.lo, s.hi, s.arity)

    def play_round(self, a_claims: Sequence[Buffer], b_claims: Sequence[Buffer]) -> None:
        """Plays the current round: A's and B's digests for points(), in
        order. StateError once done; InvalidArgumentError (nothing changes)
        when a list is not one digest per point."""
        with self._use() as h:
            _pot.pot_bisection_play_round(h, (list(a_claims), list(b_claims)))

    def _describe(self) -> str:
        s = self.state
        return f"({s.lo}, {s.hi}], arity {s.arity}, {s.rounds_played} rounds" + (", done" if s.done else "")


class OpTrace(Handle):
    """The operator trace of one replayed step (pot_op_trace,
    docs/PROTOCOL.md 22.2), made by Replay.trace: the top-level ATen
    operators of its forward, backward, clipping and optimizer update, in
    order, then a node listing S_t; the leaves of an RFC 6962 tree.

    The operator bisection is a StepBisection over node counts: each party
    claims root(p) at every point p, agreed at 0 (the empty tree's root),
    disputed at the trace's size. Immutable: safe to read from threads."""

    _free = staticmethod(_pot.pot_op_trace_free)

    def __len__(self) -> int:
        with self._use() as h:
            return _pot.pot_op_trace_size(h)

    def root(self, size: int) -> Digest:
        """The root of the first `size` nodes; OutOfRangeError past len()."""
        with self._use() as h:
            return _digest(_pot.pot_op_trace_root(h, size))

    def node(self, index: int) -> bytes:
        """Node `index`'s leaf data (its leaf hash is SHA-256(0x00 || data))."""
        with self._use() as h:
            return _pot.pot_op_trace_node(h, index)

    def node_json(self, index: int) -> Dict[str, Any]:
        """Node `index` decoded (op_node_json)."""
        return op_node_json(self.node(index))

    def inclusion_proof(self, index: int, size: int) -> bytes:
        """RFC 6962 inclusion proof of node `index` among the first `size`."""
        with self._use() as h:
            return _pot.pot_op_trace_inclusion_proof(h, index, size)

    def consistency_proof(self, size1: int, size2: int) -> bytes:
        """RFC 6962 consistency proof from the first size1 nodes to size2."""
        with self._use() as h:
            return _pot.pot_op_trace_consistency_proof(h, size1, size2)

    @property
    def replay_result(self) -> ReplayResult:
        """The ReplayResult of the replay that recorded the trace."""
        with self._use() as h:
            return _replay_result(_pot.pot_op_trace_replay_result(h))

    def _describe(self) -> str:
        return f"{len(self)} nodes"


class OpRuling(NamedTuple):
    """The referee's ruling on a disputed node (pot_referee_decide_op,
    docs/PROTOCOL.md 22.3)."""

    a_loses: bool
    b_loses: bool
    rule: str  # "opening", "source", "operator", "post_state", "step"
    reason: str
    executed: bool  # one operator was run
    replayed: bool  # the whole step was


def op_node_json(node: Buffer) -> Dict[str, Any]:
    """A node's leaf data decoded (pot_op_node_json): name, overload, inputs,
    outputs, each value a one-key dict naming its kind. MalformedError /
    LimitError for bytes that are not one node."""
    return json.loads(_pot.pot_op_node_json(node))


def op_node_from_json(node: Union[Dict[str, Any], str]) -> bytes:
    """The inverse of op_node_json (pot_op_node_from_json): a node's JSON
    (a dict or its text) to its leaf data. MalformedError naming the field,
    LimitError past a bound."""
    return _pot.pot_op_node_from_json(node if isinstance(node, str) else json.dumps(node))


__all__ = ["MIN_ARITY", "MAX_ARITY", "MAX_POINTS", "bisection_points", "bisection_rounds", "BisectionState",
           "StepBisection", "OpTrace", "OpRuling", "op_node_json", "op_node_from_json"]
