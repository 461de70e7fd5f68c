"""The values a replayed step gives (pot_replay_result): what pot.replay
returns and pot.dispute's OpTrace carries. Kept apart from both so that
neither imports the other's module for them."""

from __future__ import annotations

from typing import Any, Dict, NamedTuple

from ._core import Digest, _digest


class GradientTrace(NamedTuple):
    """What the step's gradient did (pot_gradient_trace, check 27
    `gradient_ignored`): the update applied with the step's gradient and, from
    the same S_{t-1}, with a zero gradient. An element differs when its bits
    differ; parameters without a gradient are not counted."""

    learning_rate: float
    param_elements: int           # elements of the updated parameters
    moved_elements: int           # ... that differ from S_{t-1}
    gradient_elements: int        # ... that differ from the zero-gradient update
    optim_elements: int           # optimizer-state elements written (no step counters)
    optim_gradient_elements: int  # ... that differ from the zero-gradient update
    ignored: bool                 # check 27 fails on this trace


def _gradient_trace(d: Dict[str, Any]) -> GradientTrace:
    return GradientTrace(**d)


class ReplayResult(NamedTuple):
    """What a replayed step gives (pot_replay_result)."""

    post_state_digest: Digest
    loss: float
    update_norm: float
    norm_bucket: int
    gradient: GradientTrace
    # State digest of the gradient the optimizer consumed, tensors named
    # "grad/<parameter>" (docs/PROTOCOL.md 19): what only a replay gives.
    gradient_digest: Digest


def _replay_result(d: Dict[str, Any]) -> ReplayResult:
    return ReplayResult(_digest(d["post_state_digest"]), d["loss"], d["update_norm"], d["norm_bucket"],
                        _gradient_trace(d["gradient"]), _digest(d["gradient_digest"]))
