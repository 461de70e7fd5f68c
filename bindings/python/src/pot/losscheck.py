"""Loss-curve checks (docs/losscheck.md)."""

from __future__ import annotations

import enum
from typing import Any, Iterable, List, NamedTuple, Optional, Union

from . import _pot
from ._handle import Handle


class LossCheckParam(enum.IntEnum):
    """The parameters of the loss-curve checks (pot_losscheck_param)."""

    WINDOW = _pot.POT_LOSSCHECK_WINDOW
    DECREASE_TOLERANCE = _pot.POT_LOSSCHECK_DECREASE_TOLERANCE
    DECREASE_SIGMAS = _pot.POT_LOSSCHECK_DECREASE_SIGMAS
    MAX_DROP = _pot.POT_LOSSCHECK_MAX_DROP
    FROZEN_MIN_STEPS = _pot.POT_LOSSCHECK_FROZEN_MIN_STEPS
    FROZEN_EPSILON = _pot.POT_LOSSCHECK_FROZEN_EPSILON
    REGRESSION_SIGMAS = _pot.POT_LOSSCHECK_REGRESSION_SIGMAS
    REGRESSION_MIN_INCREASE = _pot.POT_LOSSCHECK_REGRESSION_MIN_INCREASE
    MAX_FLAGS = _pot.POT_LOSSCHECK_MAX_FLAGS


class LossFlagKind(enum.IntEnum):
    """What a loss flag reports (pot_loss_flag_kind); str() is the stable
    name ("no_decrease", ...)."""

    NO_DECREASE = _pot.POT_LOSS_NO_DECREASE
    IMPLAUSIBLE_RATE = _pot.POT_LOSS_IMPLAUSIBLE_RATE
    FROZEN = _pot.POT_LOSS_FROZEN
    REGRESSION = _pot.POT_LOSS_REGRESSION
    NON_FINITE = _pot.POT_LOSS_NON_FINITE

    def __str__(self) -> str:
        return _pot.pot_loss_flag_name(self)


class LossFlag(NamedTuple):
    """A flagged stretch of the loss curve: steps first..last (inclusive, from 1)."""

    kind: Union[LossFlagKind, int]
    first_step: int
    last_step: int
    message: str

    def __str__(self) -> str:
        return f"{self.kind} at steps {self.first_step}..{self.last_step}: {self.message}"


ParamLike = Union[LossCheckParam, int, str]


def _param(p: ParamLike) -> int:
    if isinstance(p, str):
        return int(LossCheckParam[p.upper()])
    return int(p)


def _param_property(p: LossCheckParam) -> Any:
    def fget(self: "LossCheck") -> float:
        return self.get(p)

    def fset(self: "LossCheck", value: float) -> None:
        self.set(p, value)

    return property(fget, fset, doc=f"The {p.name.lower()} parameter (POT_LOSSCHECK_{p.name}).")


class LossCheck(Handle):
    """Parameters of the loss-curve checks with their documented defaults
    (pot_losscheck_params), and the checks themselves.

    Parameters are set as keyword arguments, items (check[param] = value)
    or attributes (check.window = 50); an out-of-range value raises
    InvalidArgumentError and leaves the parameters unchanged.

    >>> with LossCheck(window=10) as check:
    ...     [str(f.kind) for f in check.run([1.0] * 30)]
    ['no_decrease', 'frozen']
    """

    _free = staticmethod(_pot.pot_losscheck_params_free)

    def __init__(self, **params: float) -> None:
        super().__init__(_pot.pot_losscheck_params_new())
        for name, value in params.items():
            self.set(name, value)

    def set(self, param: ParamLike, value: float) -> None:
        """Sets one parameter; integer parameters need an integral value."""
        with self._use() as h:
            _pot.pot_losscheck_params_set(h, _param(param), float(value))

    def get(self, param: ParamLike) -> float:
        """The value of one parameter."""
        with self._use() as h:
            return _pot.pot_losscheck_params_get(h, _param(param))

    __getitem__ = get
    __setitem__ = set

    window: float = _param_property(LossCheckParam.WINDOW)
    decrease_tolerance: float = _param_property(LossCheckParam.DECREASE_TOLERANCE)
    decrease_sigmas: float = _param_property(LossCheckParam.DECREASE_SIGMAS)
    max_drop: float = _param_property(LossCheckParam.MAX_DROP)
    frozen_min_steps: float = _param_property(LossCheckParam.FROZEN_MIN_STEPS)
    frozen_epsilon: float = _param_property(LossCheckParam.FROZEN_EPSILON)
    regression_sigmas: float = _param_property(LossCheckParam.REGRESSION_SIGMAS)
    regression_min_increase: float = _param_property(LossCheckParam.REGRESSION_MIN_INCREASE)
    max_flags: float = _param_property(LossCheckParam.MAX_FLAGS)

    def run(self, losses: Iterable[float]) -> List[LossFlag]:
        """Runs the checks over losses[i] = loss of step i + 1. NaN and
        infinite losses are flagged, never skipped."""
        values = [float(x) for x in losses]
        with self._use() as h:
            return _run(values, h)

    def _describe(self) -> str:
        return ", ".join(f"{p.name.lower()}={self.get(p):g}" for p in LossCheckParam)


#: The C API's name for the parameters handle.
LossCheckParams = LossCheck


def _run(losses: List[float], params: Any) -> List[LossFlag]:
    report = _pot.pot_losscheck_run(losses, params)
    try:
        flags = []
        for i in range(_pot.pot_losscheck_report_count(report)):
            kind, first, last, message = _pot.pot_losscheck_report_flag(report, i)
            try:
                kind = LossFlagKind(kind)
            except ValueError:
                pass
            flags.append(LossFlag(kind, first, last, message))
        return flags
    finally:
        _pot.pot_losscheck_report_free(report)


def check_losses(losses: Iterable[float], params: Optional[LossCheck] = None, **kwargs: float) -> List[LossFlag]:
    """Runs the loss-curve checks over losses[i] = loss of step i + 1, with
    the given parameters (a LossCheck, or keyword arguments; default: the
    documented defaults)."""
    if params is not None and kwargs:
        raise TypeError("pass either a LossCheck or keyword parameters")
    if kwargs:
        with LossCheck(**kwargs) as check:
            return check.run(losses)
    if params is not None:
        return params.run(losses)
    return _run([float(x) for x in losses], None)


__all__ = ["LossCheckParam", "LossFlagKind", "LossFlag", "LossCheck", "LossCheckParams", "check_losses"]
