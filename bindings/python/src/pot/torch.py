"""pot.torch: record an ordinary PyTorch training loop for Proof of Training.

The task owner fixes the training first (`make_task`: the spec, the program,
the dataset, S_0 and the schedule); three lines then hook a miner's loop
(docs/python.md)::

    rec = pot.torch.Recorder(model, optimizer, task, "model.pt", "ckpt/", dataset_dir="data/", schedule=schedule)
    for t, (indices, batch) in enumerate(loader, start=1):
        rec.begin_step(indices)              # seed policy applied; the batch checked against the schedule
        loss = model(*batch)
        loss.backward(); optimizer.step(); scheduler.step(); optimizer.zero_grad(set_to_none=True)
        rec.end_step(loss)                   # S_t digested, leaf appended, a checkpoint every k steps

The recorder states the model and optimizer in the canonical names of
docs/PROTOCOL.md section 21.1 (`param/`, `buffer/`, `optim/<param>/<key>`,
`hparam/lr`, `rng/cpu`), hands contiguous CPU tensors to libpot without
copying them, keeps a checkpoint directory and serves openings from it
(re-deriving pre-states from the nearest checkpoint).

Helpers prepare what the task needs before training: `save_program`
(the TorchScript model program), `make_spec` (the execution spec from the
optimizer and the loop's settings), `write_dataset` (one safetensors file per
sample) or `commit_stream` (token files committed where they lie, samples
their windows), `plan_schedule` (the batches a DataLoader will draw, computed
ahead without disturbing it) or `plan_windows` (random windows as a
`get_batch` draws them) and `make_task` (the task from all of them).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import os
import warnings
from array import array
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from ._core import Digest
from ._errors import ConflictError, Error, InvalidArgumentError, LimitError, NonFiniteError, StateError
from .commitment import Commitment, sample_digest, schedule_entry_encode
from .hash import State, StatePart

# The state names, as libpot spells them (docs/PROTOCOL.md 21.1).
_PARAM = StatePart.PARAM_PREFIX.state_name
_BUFFER = StatePart.BUFFER_PREFIX.state_name
_OPTIM = StatePart.OPTIM_PREFIX.state_name
_LR = StatePart.LR.state_name
_RNG = StatePart.RNG.state_name
from .merkle import Tree
from .replay import Checkpoints, Recorder as _CRecorder, Replay as _Replay, program_digest_file
from .replay import hardware_class as _hardware_class
from .safetensors import SafetensorsWriter
from .spec import SeedPolicy, Spec
from .statecheck import StateStats, state_flags
from .task import Task
from ._torch_data import (Dataset, commit_stream, open_dataset, plan_windows, sample_path, sample_tensors,
                          stack_samples)
from ._torch_program import check_model_matches_program, ema_parameters, save_program, with_loss

# (Not listed: TrainerCallback and LightningCallback, imported on use, so
# that `from pot.torch import *` needs neither framework.)
__all__ = ["RUN_SEEDED", "RUN_SEEDED_UNIFORM", "Recorder", "canonical_state", "commit_stream", "ema_parameters",
           "lr_schedule", "make_spec", "make_task", "plan_function", "plan_schedule", "plan_windows", "save_program",
           "state_writer", "step_loss", "with_loss", "write_dataset", "DTYPE_NAMES"]


def __getattr__(name: str) -> Any:
    """The framework callbacks are imported on first use: pot.torch itself
    needs neither transformers nor Lightning."""
    if name == "TrainerCallback":
        try:
            from ._torch_trainer import TrainerCallback
        except ImportError as e:
            raise ImportError(f"pot.torch.TrainerCallback needs transformers (and accelerate): {e}") from e
        return TrainerCallback
    if name == "LightningCallback":
        try:
            from ._torch_lightning import LightningCallback
        except ImportError as e:
            raise ImportError(f"pot.torch.LightningCallback needs Lightning (lightning.pytorch): {e}") from e
        return LightningCallback
    raise AttributeError(f"module 'pot.torch' has no attribute '{name}'")


# torch dtype -> safetensors dtype name (docs/PROTOCOL.md section 4).
DTYPE_NAMES: Dict[torch.dtype, str] = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
    torch.bool: "BOOL",
}

_OPTIM_KEYS = ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "square_avg", "acc_delta", "sum",
               "grad_avg", "exp_inf", "mu_product")

Optimizers = Union[torch.optim.Optimizer, Sequence[torch.optim.Optimizer]]


def _groups(optimizer: Optimizers) -> List[Tuple[torch.optim.Optimizer, Dict[str, Any]]]:
    """The parameter groups of one optimizer, or of several in order (Muon
    beside AdamW): the spec's groups 0, 1, ..."""
    opts = [optimizer] if isinstance(optimizer, torch.optim.Optimizer) else list(optimizer)
    if not opts or not all(isinstance(o, torch.optim.Optimizer) for o in opts):
        raise InvalidArgumentError("optimizer must be a torch.optim.Optimizer or a non-empty list of them")
    return [(o, g) for o in opts for g in o.param_groups]


def group_lr_name(g: int) -> str:
    """The state name of parameter group g's learning rate (docs/PROTOCOL.md 21.1)."""
    return _LR if g == 0 else f"{_LR}/{g}"


def canonical_state(model: torch.nn.Module, optimizer: Optimizers,
                    rng: bool = False) -> Dict[str, torch.Tensor]:
    """The training state in canonical names (docs/PROTOCOL.md section 21.1).

    `param/<name>` for each of model.named_parameters() (tied parameters
    once, under their first name), `buffer/<name>` for each buffer, the
    optimizer's per-parameter state as `optim/<name>/<key>`, each parameter
    group's learning rate as it is now (the rate the next step uses):
    `hparam/lr` for the first group, `hparam/lr/<g>` for group g of the
    optimizer's param_groups (of several optimizers, their groups in order)
    and, with rng, `rng/cpu` (torch.get_rng_state()). The tensors are the
    live ones (detached), not copies. torch 1.13's RMSprop and Adadelta
    count steps in a Python int that no update reads: it is not state.
    Every optimized tensor must be a parameter of the model
    (InvalidArgumentError otherwise)."""
    names = {id(p): n for n, p in model.named_parameters()}
    state: Dict[str, torch.Tensor] = {}
    for n, p in model.named_parameters():
        state[_PARAM + n] = p.detach()
    for n, b in model.named_buffers():
        state[_BUFFER + n] = b.detach()
    for gi, (opt, group) in enumerate(_groups(optimizer)):
        for p in group["params"]:
            if id(p) not in names:
                raise InvalidArgumentError("the optimizer updates a tensor that is not a parameter of the model")
            for key, value in opt.state.get(p, {}).items():
                if key not in _OPTIM_KEYS:
                    raise InvalidArgumentError(f"optimizer state '{key}' of {type(opt).__name__} has no canonical "
                                               "name")
                if value is None or (key == "step" and isinstance(value, (int, float))):
                    continue
                state[f"{_OPTIM}{names[id(p)]}/{key}"] = value.detach()
        state[group_lr_name(gi)] = torch.tensor(float(group["lr"]), dtype=torch.float64)
    if rng:
        state[_RNG] = torch.get_rng_state()
    return state


def _buffer(t: torch.Tensor) -> Any:
    """A buffer-protocol view of a CPU tensor's bytes, without a copy when it
    is contiguous (one copy otherwise)."""
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)  # numpy has no bfloat16: the same bytes as int16
    return t.numpy()


def state_writer(state: Mapping[str, torch.Tensor]) -> SafetensorsWriter:
    """A SafetensorsWriter borrowing the tensors' bytes (zero copies for
    contiguous CPU tensors). Close it (or use it in a with block) once done;
    change no tensor meanwhile."""
    w = SafetensorsWriter()
    try:
        for name, t in state.items():
            if t.dtype not in DTYPE_NAMES:
                raise InvalidArgumentError(f"tensor '{name}' has dtype {t.dtype}, which safetensors cannot hold")
            w.add(name, DTYPE_NAMES[t.dtype], list(t.shape), _buffer(t))
    except BaseException:
        w.close()
        raise
    return w


def step_loss(loss: Union[float, torch.Tensor, Sequence[Union[float, torch.Tensor]]]) -> float:
    """The step's loss as the leaf records it (docs/PROTOCOL.md section
    21.3): one value, or the micro-batches' scaled losses (loss_j / M) in
    order, summed in binary64 from the first."""
    if isinstance(loss, torch.Tensor):
        return float(loss.item())
    if isinstance(loss, (int, float)):
        return float(loss)
    if not loss:
        raise InvalidArgumentError("no micro-batch loss given")
    total = float(loss[0])
    for x in loss[1:]:
        total = total + float(x)
    return total


def _table(values: Iterable[float]) -> List[float]:
    """A spec table (docs/PROTOCOL.md 14.3) of these values: the repeats at
    the end dropped, since the table keeps its last value. -0.0 is not a
    repeat of +0.0: the spec refuses it rather than reading it as +0."""
    table = [float(v) for v in values]
    while len(table) > 1 and table[-1] == table[-2] and math.copysign(1, table[-1]) == math.copysign(1, table[-2]):
        table.pop()
    return table


def _factors(s: Any, span: Optional[int]) -> List[float]:
    """A LambdaLR's factors at its scheduler steps 0..span-1 (every group's
    function must give the same), the repeats at the end dropped: the
    spec's table keeps its last factor."""
    if span is None:
        raise InvalidArgumentError("a LambdaLR is listed step by step in the spec: pass steps= (the run's training "
                                   "steps) so its function can be evaluated")
    tables = []
    for fn in s.lr_lambdas:
        tables.append([float(fn(e)) for e in range(max(span, 1))])
    if any(t != tables[0] for t in tables):
        raise InvalidArgumentError("the LambdaLR's functions differ between parameter groups: the spec has one "
                                   "schedule, every group follows it")
    return _table(tables[0])


def _phase(s: Any, span: Optional[int] = None) -> Dict[str, Any]:
    """One scheduler as a phase of the spec's lr_schedule, `span` scheduler
    steps long (None: to the end of an unknown run). Exact types only: a
    subclass may compute its rates otherwise."""
    L = torch.optim.lr_scheduler
    kind = type(s)
    if kind is L.LambdaLR:
        return {"kind": "lambda", "factors": _factors(s, span)}
    if kind is L.StepLR:
        return {"kind": "step", "step_size": s.step_size, "gamma": float(s.gamma)}
    if kind is L.MultiStepLR:
        return {"kind": "multi_step", "milestones": sorted(s.milestones.elements()), "gamma": float(s.gamma)}
    if kind is L.ExponentialLR:
        return {"kind": "exponential", "gamma": float(s.gamma)}
    if kind is L.CosineAnnealingLR:
        return {"kind": "cosine", "t_max": s.T_max, "eta_min": float(s.eta_min)}
    if kind is L.LinearLR:
        return {"kind": "linear", "start_factor": float(s.start_factor), "end_factor": float(s.end_factor),
                "total_iters": s.total_iters}
    if kind is L.ConstantLR:
        return {"kind": "constant", "factor": float(s.factor), "total_iters": s.total_iters}
    raise InvalidArgumentError(
        f"LR scheduler {kind.__module__}.{kind.__qualname__} is not replayed (StepLR, MultiStepLR, ExponentialLR, "
        "CosineAnnealingLR, LinearLR, ConstantLR, LambdaLR, or a SequentialLR of them; a rate computed by the "
        "loop itself is make_spec(rates=...))")


def _place_scheduler(sched: Any, epoch: int) -> None:
    """Puts a freshly built scheduler where it is after `epoch` step()
    calls, the optimizer's rates being already those of that point (the
    resumed state's). A SequentialLR's phases each hold a position of their
    own: the phases before the one `epoch` is in ran to their milestones,
    that one from its milestone (where SequentialLR restarted it with
    step(0)) to `epoch`, the later ones have not begun (left as built)."""
    rates = [float(g["lr"]) for g in sched.optimizer.param_groups]
    sched.last_epoch = epoch
    sched._step_count = epoch + 1
    sched._last_lr = list(rates)
    if type(sched) is torch.optim.lr_scheduler.SequentialLR:
        starts = [0] + [int(m) for m in sched._milestones]
        phase = bisect.bisect_right(starts, epoch) - 1
        for i, sub in enumerate(sched._schedulers[:phase + 1]):
            sub.last_epoch = (epoch if i == phase else starts[i + 1] - 1) - starts[i]
            sub._step_count = sub.last_epoch + 1
            sub._last_lr = list(rates)


def _scheduler_steps(steps: Optional[int], every: int) -> Optional[int]:
    """The scheduler steps a run of `steps` training steps reaches, the one
    after its last step included (S_n holds lr(n + 1))."""
    return None if steps is None else steps // every + 1


def lr_schedule(scheduler: Any, *, steps: Optional[int] = None, every: int = 1) -> Optional[Dict[str, Any]]:
    """The spec's lr_schedule (JSON form, docs/PROTOCOL.md 14.3) of a fresh
    torch.optim.lr_scheduler object that the loop steps once after every
    `every` optimizer steps (1: after each; len(train_loader) for once per
    epoch); None for no scheduler. A LambdaLR is listed as a table of its
    function's values, so it needs steps= (the run's training steps).
    InvalidArgumentError for a scheduler pot does not replay or one that has
    already stepped."""
    if scheduler is None:
        return None
    if not isinstance(every, int) or every < 1:
        raise InvalidArgumentError(f"every must be a positive step count, not {every!r}")
    if type(scheduler) is torch.optim.lr_scheduler.SequentialLR:
        subs, milestones = list(scheduler._schedulers), [int(m) for m in scheduler._milestones]
    else:
        subs, milestones = [scheduler], []
    total = _scheduler_steps(steps, every)
    bounds = [0] + milestones + [total]
    phases = [_phase(s, None if bounds[i + 1] is None else max(bounds[i + 1] - bounds[i], 1))
              for i, s in enumerate(subs)]
    if scheduler.last_epoch != 0:
        raise InvalidArgumentError(f"the LR scheduler has already stepped (last_epoch = {scheduler.last_epoch}): "
                                   "build the spec before training")
    # Each group follows the schedule from its own base rate (PROTOCOL.md
    # 14.5); the phases of a SequentialLR must agree on them.
    if any([float(b) for b in s.base_lrs] != [float(b) for b in subs[0].base_lrs] for s in subs):
        raise InvalidArgumentError("the schedulers of the SequentialLR have different base learning rates")
    out: Dict[str, Any] = {"phases": phases, "milestones": milestones}
    if every > 1:
        out["interval"] = every
    return out


# The optimizer classes pot replays, by exact type (a subclass may override
# step()), and their spec kind.
_KIND_OF = {torch.optim.SGD: "sgd", torch.optim.Adam: "adam", torch.optim.AdamW: "adamw",
            torch.optim.Adadelta: "adadelta", torch.optim.Adagrad: "adagrad", torch.optim.RMSprop: "rmsprop",
            torch.optim.Adamax: "adamax", torch.optim.NAdam: "nadam", torch.optim.RAdam: "radam"}
if hasattr(torch.optim, "Muon"):
    _KIND_OF[torch.optim.Muon] = "muon"


def _optimizer_json(opt: torch.optim.Optimizer, g: Dict[str, Any], lr: float) -> Dict[str, Any]:
    """One parameter group as the spec's optimizer object (docs/cli.md)."""
    kind = _KIND_OF.get(type(opt))
    if kind is None:
        names = ", ".join(sorted(c.__name__ for c in _KIND_OF))
        raise InvalidArgumentError(f"{type(opt).__module__}.{type(opt).__name__}: pot replays {names} "
                                   "(by exact class: a subclass may change step())")
    # Options whose update pot does not replay, refused by name rather than
    # recorded as a spec that replays another update (fused: torch 2.x's
    # fused CPU kernels round differently from the single-tensor path).
    for flag in ("capturable", "differentiable", "fused"):
        if g.get(flag):
            raise InvalidArgumentError(f"optimizer option {flag}=True is not replayed")
    if g.get("foreach"):
        raise InvalidArgumentError("optimizer option foreach=True is not replayed (use the default)")
    j: Dict[str, Any] = {"kind": kind, "lr": lr}
    if kind in ("adam", "adamw"):
        # torch 2.x spells AdamW as Adam(decoupled_weight_decay=True) (and
        # makes AdamW a subclass of Adam): the flag, not the class, decides
        # where the weight decay goes.
        j["kind"] = "adamw" if kind == "adamw" or g.get("decoupled_weight_decay") else "adam"
    if "betas" in g:
        j["beta1"], j["beta2"] = float(g["betas"][0]), float(g["betas"][1])
    plain = {"sgd": ("momentum", "dampening", "nesterov", "weight_decay"),
             "adam": ("eps", "weight_decay", "amsgrad"), "adamw": ("eps", "weight_decay", "amsgrad"),
             "adadelta": ("rho", "eps", "weight_decay"),
             "adagrad": ("lr_decay", "weight_decay", "eps"),
             "rmsprop": ("alpha", "eps", "weight_decay", "momentum", "centered"),
             "adamax": ("eps", "weight_decay"),
             "nadam": ("eps", "weight_decay", "momentum_decay", "decoupled_weight_decay"),
             "radam": ("eps", "weight_decay", "decoupled_weight_decay"),
             "muon": ("weight_decay", "momentum", "nesterov", "ns_steps", "eps")}[kind]
    for k in plain:
        if k in g:
            j[k] = g[k]
    if kind != "muon" and g.get("maximize"):
        j["maximize"] = True
    if kind == "adagrad":
        # Adagrad fills its state with the constructor's value, whatever a
        # group says (torch reads self.defaults).
        j["initial_accumulator_value"] = float(opt.defaults["initial_accumulator_value"])
    if kind == "muon":
        j["ns_a"], j["ns_b"], j["ns_c"] = (float(c) for c in g["ns_coefficients"])
        j["adjust_lr_fn"] = g.get("adjust_lr_fn") or "original"
    return j


def _spec_schedule(scheds: List[Any], rates: Optional[Sequence[float]], lr_every: int,
                   steps: Optional[int]) -> Optional[Dict[str, Any]]:
    """make_spec's lr_schedule: the schedulers' one schedule, or the rates
    set by hand, or None (a constant rate)."""
    if rates is not None and scheds:
        raise InvalidArgumentError("rates set by hand and a scheduler: the spec has one schedule, pass one of them")
    schedules = [lr_schedule(sc, steps=steps, every=lr_every) for sc in scheds]
    if any(sch != schedules[0] for sch in schedules):
        raise InvalidArgumentError("the schedulers give different schedules: the spec has one, every group follows it")
    schedule = schedules[0] if schedules else None
    if rates is not None:
        schedule = {"rates": _table(rates)}
        if lr_every > 1:
            schedule["interval"] = lr_every
    elif lr_every != 1 and not scheds:
        raise InvalidArgumentError("lr_every without a scheduler or rates: a constant rate has no interval")
    return schedule


def _spec_param_groups(groups: List[Tuple[Any, Dict[str, Any]]], opts: List[Dict[str, Any]],
                       model: Optional[torch.nn.Module]) -> List[Dict[str, Any]]:
    """make_spec's param_groups (groups after the first, each naming its
    parameters): every parameter that requires a gradient in exactly one
    group."""
    if len(groups) <= 1:
        return []
    if model is None:
        raise InvalidArgumentError(f"{len(groups)} parameter groups: pass model= so the spec can name their "
                                   "parameters")
    names = {id(p): n for n, p in model.named_parameters()}
    seen: Dict[int, int] = {}
    for gi, (_, g) in enumerate(groups):
        for p in g["params"]:
            if id(p) not in names:
                raise InvalidArgumentError(f"parameter group {gi} updates a tensor that is not a parameter of "
                                           "the model")
            if id(p) in seen:
                raise InvalidArgumentError(f"parameter '{names[id(p)]}' is in groups {seen[id(p)]} and {gi}")
            seen[id(p)] = gi
    for n, p in model.named_parameters():
        if p.requires_grad and id(p) not in seen:
            raise InvalidArgumentError(f"parameter '{n}' requires a gradient but is in no optimizer group: "
                                       "the spec's first group would update it")
    param_groups: List[Dict[str, Any]] = []
    for gi in range(1, len(groups)):
        members = sorted((names[id(p)] for p in groups[gi][1]["params"]), key=lambda x: x.encode("utf-8"))
        param_groups.append({"optimizer": opts[gi], "params": members})
    return param_groups


def make_spec(optimizer: Optimizers, program: Union[str, "os.PathLike[str]"], *, dtype: torch.dtype,
              batch_size: int, microbatches: int = 1, dropout: float = 0.0, grad_clip_max_norm: float = 0.0,
              grad_clip_value: float = 0.0, intra_op_threads: Optional[int] = None, seed_policy: str = "per_step",
              seed: int = 0, norm_bucket_resolution: int = 16, hardware_class: Optional[str] = None,
              attention_backend: str = "math", other_rng_use: bool = False, deterministic_algorithms: bool = False,
              scheduler: Any = None, model: Optional[torch.nn.Module] = None,
              rates: Optional[Sequence[float]] = None, lr_every: int = 1, steps: Optional[int] = None,
              arithmetic: str = "native") -> Spec:
    """The execution spec of a loop using this optimizer (SGD, Adam, AdamW,
    Adadelta, Adagrad, RMSprop, Adamax, NAdam, RAdam or Muon; several
    optimizers side by side as a list, e.g. [Muon(matrices), AdamW(rest)])
    with the program at `program`. Each parameter group becomes a group of
    the spec (docs/PROTOCOL.md 14.5) with its own hyper-parameters and rate;
    with more than one group, pass `model=` so the groups can name their
    parameters (every parameter that requires a gradient must be in exactly
    one group). intra_op_threads defaults to torch.get_num_threads(); the
    loop must keep it. hardware_class defaults to this process's
    (pot.hardware_class(), docs/PROTOCOL.md 14.4): the recorder refuses any
    other, and a task owner writing a spec for other machines names theirs
    (a libpot without LibTorch needs it named: UnsupportedError otherwise).
    grad_clip_max_norm / grad_clip_value: the loop calls
    torch.nn.utils.clip_grad_norm_ / clip_grad_value_ on model.parameters()
    after the backward passes (one of them).

    scheduler: the loop's torch.optim.lr_scheduler object (a list, one per
    optimizer, for several), fresh, stepped once after every step
    (lr_schedule()); the spec then fixes the learning rate of every step of
    every group, and the recorder refuses a state whose rate differs. An
    optimizer with a scheduler attached must name it. A LambdaLR is listed
    step by step: pass steps= (the run's training steps).

    rates: the rates a loop sets by hand (warm-up code writing
    param_groups[g]["lr"] before each step), one per training step from
    step 1, e.g. [get_lr(it) for it in range(max_iters)]; every group trains
    at them (docs/PROTOCOL.md 14.3). lr_every: the loop changes the rate
    (steps the scheduler, or sets a rate of `rates`) once every lr_every
    training steps: len(train_loader) for once per epoch; `rates` then
    holds one rate per epoch.

    arithmetic: "native" (ATen's own kernels: the thread count and the
    hardware class pin the bits) or "pot-repro/1", pot's reproducible
    arithmetic (docs/PROTOCOL.md 14.6): the steps give the same bits on
    every CPU and thread count, so intra_op_threads and hardware_class are
    left out (naming either is an InvalidArgumentError). The recorder then
    computes each step's operators in it, and refuses a step that ran an
    operator the arithmetic lacks (UnsupportedError naming it)."""
    groups = _groups(optimizer)
    scheds = [] if scheduler is None else list(scheduler) if isinstance(scheduler, (list, tuple)) else [scheduler]
    schedule = _spec_schedule(scheds, rates, lr_every, steps)
    for _, g in groups:
        if not scheds and "initial_lr" in g:
            raise InvalidArgumentError("the optimizer has an LR scheduler attached (param_groups[...]['initial_lr']): "
                                       "pass it as make_spec(..., scheduler=...)")
    # A scheduler's constructor already changed each group's "lr": the
    # spec's lr is the rate the schedule starts from.
    opts = [_optimizer_json(o, g, float(g["initial_lr"]) if scheds else g["lr"]) for o, g in groups]
    param_groups = _spec_param_groups(groups, opts, model)
    for (o, g), j in zip(groups, opts):
        if j["kind"] == "muon":
            for p in g["params"]:
                if p.dim() != 2:
                    raise InvalidArgumentError(f"muon updates 2-D parameters only; a group holds one of shape "
                                               f"{list(p.shape)}")
    g = groups[0][1]
    policy: Dict[str, Any] = {"kind": seed_policy}
    if seed_policy in ("per_step", "single_seed"):
        policy["base_seed" if seed_policy == "per_step" else "seed"] = seed
    j: Dict[str, Any] = {
        "framework": "pytorch", "framework_version": torch.__version__.split("a")[0].split("+")[0],
        "model_program_digest": program_digest_file(program).hex(), "dtype": DTYPE_NAMES[dtype],
        "attention_backend": attention_backend, "dropout": dropout, "other_rng_use": other_rng_use,
        "optimizer": opts[0], "grad_clip_max_norm": grad_clip_max_norm, "grad_accum_microbatches": microbatches,
        "batch_size": batch_size, "deterministic_algorithms": deterministic_algorithms,
        "seed_policy": policy, "norm_bucket_resolution": norm_bucket_resolution,
    }
    if arithmetic == "native":
        j["intra_op_threads"] = intra_op_threads or torch.get_num_threads()
        j["hardware_class"] = hardware_class or _hardware_class()
    else:
        j["arithmetic"] = arithmetic
        if intra_op_threads is not None:
            j["intra_op_threads"] = intra_op_threads
        if hardware_class is not None:
            j["hardware_class"] = hardware_class
    if schedule is not None:
        j["lr_schedule"] = schedule
    if param_groups:
        j["param_groups"] = param_groups
    if grad_clip_value:
        j["grad_clip_value"] = grad_clip_value
    spec = Spec.from_json(j)
    if rates is None and spec.learning_rate(1) != g["lr"]:
        raise InvalidArgumentError(f"the optimizer's rate now is {g['lr']!r}, the spec's rate of step 1 is "
                                   f"{spec.learning_rate(1)!r}: build the spec before the first step")
    return spec


def write_dataset(samples: Iterable[Mapping[str, torch.Tensor]], directory: Union[str, "os.PathLike[str]"]) -> int:
    """Writes each sample (a mapping of the forward's argument names to
    tensors) as DIR/%06d.safetensors in dataset order, the layout the
    checkpoint store reads; returns the number of samples. Each file appears
    whole (written under a temporary name, then renamed) and the whole
    directory is synced once at the end rather than every file on its own:
    when it returns, the dataset is on disk. For token data, commit_stream
    writes no file per sample at all."""
    os.makedirs(directory, exist_ok=True)
    n = 0
    for i, sample in enumerate(samples):
        with state_writer(sample) as w:
            data = w.to_bytes()
        path = sample_path(directory, i)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        n = i + 1
    os.sync()
    return n


def plan_schedule(loader: "torch.utils.data.DataLoader[Any]", steps: int, microbatches: int = 1,
                  first_epoch: int = 0, *, stops_at_length: bool = False) -> List[List[List[int]]]:
    """The dataset indices a DataLoader will draw for `steps` steps (epoch
    after epoch), each step's batch split into `microbatches` equal parts:
    what the schedule commitment needs before training starts. The loader's
    sampler is iterated ahead with its generator's state saved and restored,
    so the loop then draws exactly these batches (with workers, persistent
    or not; RandomSampler with or without replacement, SubsetRandomSampler,
    WeightedRandomSampler, a BatchSampler of any of them). A random sampler
    needs an explicit generator (shuffle=True: DataLoader(...,
    generator=torch.Generator().manual_seed(s)); a sampler of one's own:
    its generator=):
    without one it would draw from the global RNG the seed policy controls.
    A sampler with set_epoch (DistributedSampler, accelerate's
    SeedableRandomSampler, which the Hugging Face Trainer uses) draws from
    its seed and epoch: the loop calls sampler.set_epoch(e) at the start of
    each epoch, e counting from `first_epoch` (the Trainer does), and the
    plan does the same.

    A `for batch in loader` loop runs the sampler to its end each epoch,
    and a RandomSampler draws once more there (the permutation of its last,
    empty part). A loop that ends its epoch after len(loader) batches
    without asking for another (Lightning's Trainer does) never makes that
    draw, and every later epoch is another order: plan it with
    stops_at_length=True."""
    bs = loader.batch_sampler
    if bs is None:
        raise InvalidArgumentError("the DataLoader has no batch sampler (batch_size=None)")
    sampler = getattr(bs, "sampler", None)
    gen = getattr(sampler, "generator", None) if sampler is not None else None
    random_samplers = (torch.utils.data.RandomSampler, torch.utils.data.SubsetRandomSampler,
                       torch.utils.data.WeightedRandomSampler)
    distributed = callable(getattr(sampler, "set_epoch", None))
    if isinstance(sampler, random_samplers) and gen is None and not distributed:
        raise InvalidArgumentError(f"a {type(sampler).__name__} without a generator draws from the global RNG: "
                                   "give it generator=torch.Generator().manual_seed(seed) (for shuffle=True, the "
                                   "DataLoader's) for its schedule to be planned and committed")
    saved_epoch = getattr(sampler, "epoch", None) if distributed else None
    # Every generator the loop's iteration draws from, saved and restored.
    loader_gen = loader.generator
    gens = [g for g in {id(g): g for g in (gen, loader_gen) if g is not None}.values()]
    saved = [g.get_state() for g in gens]
    plan: List[List[List[int]]] = []
    # Each epoch, DataLoader.__iter__ (map-style, any num_workers) first
    # draws a base seed from loader.generator, then the sampler draws its
    # permutation: mirror that order. With persistent workers only the
    # iterator's creation draws it: later epochs reset the same iterator
    # (and a loader iterated before planning has its iterator already).
    persistent = bool(loader.persistent_workers and loader.num_workers > 0)
    draws_seed = not (persistent and getattr(loader, "_iterator", None) is not None)
    epoch = first_epoch
    try:
        while len(plan) < steps:
            before = len(plan)
            if distributed:
                sampler.set_epoch(epoch)
            epoch += 1
            if loader_gen is not None and draws_seed:
                torch.empty((), dtype=torch.int64).random_(generator=loader_gen)
            if persistent:
                draws_seed = False
            for k, batch in enumerate(bs, 1):
                batch = [int(i) for i in batch]
                if len(batch) % microbatches:
                    raise InvalidArgumentError(f"a batch of {len(batch)} does not split into {microbatches} "
                                               "equal micro-batches (use drop_last=True)")
                m = len(batch) // microbatches
                plan.append([batch[j * m:(j + 1) * m] for j in range(microbatches)])
                if len(plan) == steps or (stops_at_length and k == len(bs)):
                    break
            if len(plan) == before:
                raise InvalidArgumentError("the DataLoader yields no batch")
    finally:
        for g, st in zip(gens, saved):
            g.set_state(st)
        if distributed and saved_epoch is not None:
            sampler.set_epoch(saved_epoch)
    return plan


def plan_function(fn: Callable[[int, int], Sequence[int]], steps: int, *, seed: int,
                  microbatches: int = 1) -> List[List[List[int]]]:
    """The schedule of a sampler written as a plain function: step t's batch
    is fn(seed, t) (dataset indices, in order; t from 1), split into
    `microbatches` equal parts. The function must be deterministic: the
    recorder compares every batch with this plan."""
    plan: List[List[List[int]]] = []
    for t in range(1, steps + 1):
        batch = [int(i) for i in fn(seed, t)]
        if not batch or len(batch) % microbatches:
            raise InvalidArgumentError(f"plan_function: step {t}'s batch of {len(batch)} does not split into "
                                       f"{microbatches} equal, non-empty micro-batches")
        m = len(batch) // microbatches
        plan.append([batch[j * m:(j + 1) * m] for j in range(microbatches)])
    return plan


def _schedule_entries(schedule: Sequence[Sequence[Sequence[int]]], dataset_size: int) -> List[bytes]:
    return [schedule_entry_encode(t, [int(i) for mb in step for i in mb], [len(mb) for mb in step], dataset_size)
            for t, step in enumerate(schedule, start=1)]


def _schedule_root(entries: Sequence[bytes]) -> bytes:
    with Tree.in_memory() as tree:
        for e in entries:
            tree.append(e)
        return tree.root()


def _initial_state(model: torch.nn.Module, optimizer: Optimizers, spec: Spec) -> Dict[str, torch.Tensor]:
    """S_0 as a run of `spec` starts from it: under single_seed the generator
    is seeded with the spec's seed first (rng/cpu is part of S_0). Each
    group's rate is the spec's of step 1 (the one step 1 trains at), whatever
    the optimizer holds before a loop setting its rate by hand has set it."""
    single = spec.seed_policy == SeedPolicy.SINGLE_SEED
    if single:
        torch.manual_seed(spec.seed)
    state = canonical_state(model, optimizer, rng=single)
    for g in range(spec.group_count):
        state[group_lr_name(g)] = torch.tensor(spec.group_learning_rates(g, 1, 1)[0], dtype=torch.float64)
    return state


def _state_digest(state: Mapping[str, torch.Tensor]) -> Any:
    """The state digest of canonical tensors, without writing them."""
    with State() as st:
        for name, t in state.items():
            if t.dtype not in DTYPE_NAMES:
                raise InvalidArgumentError(f"tensor '{name}' has dtype {t.dtype}, which safetensors cannot hold")
            st.add_tensor(name, DTYPE_NAMES[t.dtype], list(t.shape), _buffer(t))
        return st.digest()


def _check_initial_state(state: Mapping[str, torch.Tensor], optimizer: Optimizers) -> None:
    """What a verifier refuses in S_0 (docs/PROTOCOL.md 21.1, 21.3): optimizer
    state (a run starts from the optimizer's fresh state: none, or
    Adagrad's, made by its constructor) and non-finite values."""
    for opt, g in _groups(optimizer):
        for p in g["params"]:
            st = opt.state.get(p, {})
            if not st:
                continue
            if type(opt) is torch.optim.Adagrad:
                init = float(opt.defaults["initial_accumulator_value"])
                step, acc = st.get("step"), st.get("sum")
                if (set(st) == {"step", "sum"} and float(step) == 0 and acc is not None and
                        bool((acc == init).all())):
                    continue
            raise InvalidArgumentError("S_0 holds optimizer state: a run starts from the optimizer's fresh state "
                                       "(build the task before the first optimizer step)")
    for name, t in state.items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise NonFiniteError(f"S_0: tensor '{name}' holds a NaN or an infinity")
    # Check 28 `subnormal` (docs/PROTOCOL.md 18): the bounds every verifier
    # and the recorder apply, so that a task is not posted with an S_0 no
    # miner can record from.
    counts = {True: [0, 0, ""], False: [0, 0, ""]}
    for name, t in sorted(state.items()):
        if t.dtype not in (torch.bfloat16, torch.float32, torch.float64):
            continue
        c = counts[name.startswith("param/")]
        sub = int(((t != 0) & (t.abs() < torch.finfo(t.dtype).tiny)).sum())
        c[0] += t.numel()
        c[1] += sub
        if sub and not c[2]:
            c[2] = name
    for param, share, what in ((True, 4096, "parameter"), (False, 16, "optimizer-state")):
        n, sub, first = counts[param]
        if sub > n // share:
            raise InvalidArgumentError(f"S_0 holds {sub} subnormal {what} values of {n} (tensor '{first}' first); at "
                                       f"most 1 in {share} is allowed: every verifier refuses such a state (check "
                                       "subnormal)")


RUN_SEEDED = "run_seeded"
RUN_SEEDED_UNIFORM = "run_seeded_uniform"


def make_task(model: torch.nn.Module, optimizer: Optimizers, spec: Spec, *,
              dataset_dir: Union[str, "os.PathLike[str]"],
              schedule: Union[Sequence[Sequence[Sequence[int]]], str],
              owner: bytes, end_height: int, challenge_rounds: int = 8, challenge_mode: str = "bitwise", committee_size: int = 3,
              dataset_size: Optional[int] = None, steps: Optional[int] = None,
              max_steps: Optional[int] = None,
              program: Optional[Union[str, "os.PathLike[str]"]] = None) -> Task:
    """The task a task owner posts before anyone trains (docs/PROTOCOL.md
    section 17.1): the spec (which names the model program), the dataset
    root over dataset_dir, S_0 = the model and optimizer as they are now (a
    fresh optimizer: no state yet), the schedule rule and the challenge
    policy (`challenge_rounds` distinct steps per run, "bitwise" or
    "norm_bucket", `committee_size` verifiers drawn to judge each challenge,
    1..1024, at most the ledger's max_committee_size) and `end_height`, the
    last block height at which the ledger registers runs of the task and
    takes their roots (a run not sealed by then is void; afterwards the task
    can be pruned, docs/ledger.md 2.11). The schedule is either a list (one step per entry, so a
    run has exactly len(schedule) steps, the same order for every run; with
    a spec whose steps draw no per-run random numbers (no per_step seeds
    with dropout or other_rng_use) every run is one trajectory, which the
    ledger pays once: docs/ledger.md 2.3) or
    RUN_SEEDED: every run trains on its own seeded order (17.3; the
    schedule of one trajectory verifies under no other miner's commitment),
    for steps..max_steps steps (max_steps defaults to steps), or
    RUN_SEEDED_UNIFORM: the same, each step's samples drawn with
    replacement (16.3), for datasets of any size (the windows of a token
    stream: nanoGPT's get_batch draws this way). Miners then
    train from the same S_0 and data and Recorder(task=...) refuses anything
    else.

    program: the model program the spec names (the file make_spec read).
    Given, the task is dry-run before it is made: step 1 replayed from S_0
    on the first scheduled batch as every verifier replays it, so a program
    or spec no verifier can replay is refused now, not after training. A
    pot-repro/1 spec requires it: the dry run records every operator the
    step dispatches (forward, backward, optimizer) and an operator the
    arithmetic lacks is an UnsupportedError naming it (docs/PROTOCOL.md
    14.6). Under the native arithmetic the dry run needs this machine's
    hardware class to be the spec's."""
    data = open_dataset(dataset_dir, dataset_size)
    dataset_size = data.size
    if isinstance(schedule, str):
        if schedule not in (RUN_SEEDED, RUN_SEEDED_UNIFORM):
            raise InvalidArgumentError(f"schedule must be a list of steps, {RUN_SEEDED!r} or {RUN_SEEDED_UNIFORM!r}, "
                                       f"not {schedule!r}")
        if steps is None:
            raise InvalidArgumentError("a run-seeded task needs steps= (and optionally max_steps=)")
        rule: Dict[str, Any] = {schedule: {}}
        bounds = (steps, steps if max_steps is None else max_steps)
    else:
        if not schedule:
            raise InvalidArgumentError("the schedule is empty")
        if steps is not None or max_steps is not None:
            raise InvalidArgumentError("a listed schedule fixes the number of steps: pass no steps= or max_steps=")
        rule = {"listed_root": _schedule_root(_schedule_entries(schedule, dataset_size)).hex()}
        bounds = (len(schedule), len(schedule))
    state = _initial_state(model, optimizer, spec)
    _check_initial_state(state, optimizer)
    initial = _state_digest(state)
    arithmetic = spec.to_dict().get("arithmetic", "native")
    if program is None and arithmetic != "native":
        raise InvalidArgumentError(f"a {arithmetic} task is dry-run before it is made, so that an operator the "
                                   "arithmetic lacks is refused now: pass program= (the file the spec names)")
    if program is not None:
        first = [list(map(int, mb)) for mb in schedule[0]] if not isinstance(schedule, str) else None
        _dry_run(spec, program, state, data, first)
    return Task.from_json({
        "owner": bytes(owner).hex(), "spec": json.loads(spec.to_json()),
        "dataset_root": data.root.hex(), "dataset_size": dataset_size,
        "initial_state": {"published_digest": initial.hex()},
        "schedule": rule,
        "min_steps": bounds[0], "max_steps": bounds[1],
        "challenge_policy": {"rounds": challenge_rounds, "mode": challenge_mode, "committee_size": committee_size},
        "end_height": end_height,
    })


def _dry_run(spec: Spec, program: Union[str, "os.PathLike[str]"], state: Mapping[str, torch.Tensor], data: Dataset,
             first: Optional[List[List[int]]]) -> None:
    """make_task's dry run: step 1 replayed from S_0 through the replay every
    verifier runs (its program checks, its operator gate under pot-repro/1),
    on the listed schedule's first batch or, under a run-seeded rule, on
    the dataset's first batch_size samples; the result is discarded."""
    import tempfile
    if first is None:
        size = data.size
        declared = spec.to_dict()
        micro = int(declared["grad_accum_microbatches"])
        per = int(declared["batch_size"]) // micro
        first = [[(j * per + i) % size for i in range(per)] for j in range(micro)]
    entry = _schedule_entries([first], data.size)[0]
    samples = [data.sample(i) for mb in first for i in mb]
    replay = _Replay(spec, program)
    # A replay seeds the process's default generator; the caller's draws
    # (and a single_seed S_0, which holds its state) stay as they were.
    rng = torch.random.get_rng_state()
    try:
        with tempfile.TemporaryDirectory(prefix="pot-dry-run.") as tmp:
            pre = os.path.join(tmp, "s0.safetensors")
            with state_writer(state) as w:
                w.write(pre)
            # per_step seeds name a run: the dry run's is a fixed one.
            run = hashlib.sha256(b"pot/dry-run").digest()
            try:
                replay.step(pre, entry, samples, run_id=run)
            except Error as e:
                raise type(e)(f"make_task: the dry run of step 1 (replayed from S_0 as every verifier replays a "
                              f"step) fails: {e.message}", e.code) from e
    finally:
        replay.close()
        torch.random.set_rng_state(rng)


def _group_rates(spec: Spec, group: int, steps: int) -> "array[float]":
    out: "array[float]" = array("d")
    chunk = 1 << 24
    for first in range(1, steps + 1, chunk):
        out.extend(spec.group_learning_rates(group, first, min(chunk, steps + 1 - first)))
    return out


def _state_difference(replayed_path: str, recorded: Mapping[str, torch.Tensor], t: int,
                      resumed: bool = False) -> str:
    """What differs between the replayed S_t (a file) and the recorded one,
    and what usually causes it (first, for the first step of a process that
    resumed from checkpoint t-1, the state it trained from)."""
    from .safetensors import Safetensors
    with Safetensors(replayed_path) as f:
        replayed = set(f.names)
        differ = [n for n in f.names if n in recorded and f.tensor_data(n) != _buffer(recorded[n]).tobytes()]
    missing = sorted(set(recorded) - replayed)
    extra = sorted(replayed - set(recorded))
    parts = []
    if differ:
        parts.append(f"{len(differ)} tensors differ ({', '.join(differ[:4])}{'...' if len(differ) > 4 else ''})")
    if missing or extra:
        parts.append(f"the names differ (recorded only: {missing[:4]}, replayed only: {extra[:4]})")
    what = "; ".join(parts) or "the digests differ"
    causes = ("the step read something S_{t-1} does not hold (state carried from batch to batch, such as a "
              "recurrent hidden state: declare it, pot.torch.with_loss(model, loss, carry=initial_state)), drew "
              "random numbers the seed policy does not fix, or ran code the program does not (the loop's forward "
              "or loss is not the program's)")
    if differ and all(n.startswith(_LR) for n in differ):
        causes = "the learning rate after the step is not the spec's (a scheduler stepped otherwise than once per step)"
    elif differ and all(n.startswith(_OPTIM) or n.startswith(_LR) for n in differ):
        causes = "the optimizer's state moved otherwise than the spec's optimizer (its options differ from the spec)"
    if resumed:
        causes = (f"this process resumed from checkpoint {t - 1}, whose S_{t - 1} Recorder(resume=...) loaded into "
                  f"the model and optimizer, and step {t} trained from another state (a checkpoint of the loop's own "
                  f"or a framework's loaded over it, of another step or run); or {causes}")
    return (f"replaying it from S_{t - 1} as every verifier does gives another S_{t}: {what}. The usual causes: "
            f"{causes}. The run would fail verification; the recorder stopped")


# The files a recorder writes (docs/PROTOCOL.md 21.4).
_RECORDER_FILES = ("pot-run.json", "program.pt", "log.tree", "steps.jsonl", "schedule.bin", "commitment.bin")


# The state a self-check replays to: <checkpoint dir>/self-check-<t>.safetensors,
# removed once compared (and on resuming, with its temporary file).
_SELF_CHECK = "self-check-"


def _clear_unstarted(directory: str) -> None:
    """A recorder killed before its commitment was written began no step:
    nothing of it was published. Its files are removed so that the run can
    start again in the directory (resume="auto")."""
    if not os.path.isdir(directory) or os.path.exists(os.path.join(directory, "commitment.bin")):
        return
    for name in _RECORDER_FILES:
        path = os.path.join(directory, name)
        if os.path.exists(path):
            os.remove(path)
    for sub in ("checkpoints", "derived", "stats"):
        path = os.path.join(directory, sub)
        if os.path.isdir(path):
            for f in os.listdir(path):
                os.remove(os.path.join(path, f))
            os.rmdir(path)
    for f in os.listdir(directory):  # temporary files of writes the process did not finish
        if ".tmp-pot." in f:
            os.remove(os.path.join(directory, f))


def _load_canonical_state(model: torch.nn.Module, optimizer: Optimizers, state: Mapping[str, torch.Tensor],
                          step: int) -> None:
    """Puts a canonical state (docs/PROTOCOL.md 21.1) back into the model and
    optimizer: what canonical_state reads, written. The inverse the resumed
    run needs; InvalidArgumentError for a state that is not theirs."""
    names = {id(p): n for n, p in model.named_parameters()}
    with torch.no_grad():
        for n, p in model.named_parameters():
            if _PARAM + n not in state:
                raise InvalidArgumentError(f"resume: the checkpoint has no 'param/{n}'")
            p.copy_(state[_PARAM + n])
        for n, b in model.named_buffers():
            if _BUFFER + n in state:
                b.copy_(state[_BUFFER + n])
    for gi, (opt, group) in enumerate(_groups(optimizer)):
        group["lr"] = float(state[group_lr_name(gi)])
        for p in group["params"]:
            prefix = f"{_OPTIM}{names[id(p)]}/"
            held = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
            opt.state.pop(p, None)
            if not held:
                continue
            st = opt.state[p]
            for key, value in held.items():
                st[key] = value.clone()
            if "step" not in st and isinstance(opt, (torch.optim.RMSprop, torch.optim.Adadelta)):
                st["step"] = step  # torch 1.13 counts in a Python int no update reads: not state


class Recorder:
    """Records a PyTorch training loop: begin_step() before the forward
    pass, end_step(loss) after the optimizer (and LR scheduler) step.

    It trains for a task (make_task): the spec is the task's. At construction
    it records S_0 (the model and optimizer as they are), builds the training
    commitment (the task id, S_0, the schedule, the dataset in dataset_dir,
    the spec, the declared steps, the miner identity), refuses it unless the
    task admits it (InvalidArgumentError naming the field that differs: a
    model that is not the task's S_0, another schedule, other data), and
    creates the checkpoint directory. `commitment` and `run_id` are what the
    miner publishes before training. Under a listed task pass its schedule;
    under a run-seeded task pass steps= and read the run's own order from
    `schedule` (Task.run_schedule), which the loop must feed.

    Before anything is written it also refuses a program that is not the
    spec's, a model that is not the program's (with_loss) and a forward
    whose inputs are not the samples' tensors. self_check (docs/python.md
    "Self-checks"): True replays step 1 from S_0 at end_step(1) as every
    verifier does and stops the recorder, naming what differs, when it
    would not verify; "checkpoints" also checks the step after every
    checkpoint (state carried between batches shows there); False skips it.
    """

    def __init__(self, model: torch.nn.Module, optimizer: Optimizers, task: Task,
                 program: Union[str, "os.PathLike[str]"], checkpoint_dir: Union[str, "os.PathLike[str]"], *,
                 dataset_dir: Union[str, "os.PathLike[str]"],
                 schedule: Optional[Sequence[Sequence[Sequence[int]]]] = None,
                 dataset_size: Optional[int] = None, checkpoint_every: int = 10,
                 miner_identity: bytes = b"miner", steps: Optional[int] = None,
                 self_check: Union[bool, str] = True, resume: Union[bool, str] = False,
                 scheduler: Any = None) -> None:
        if not isinstance(task, Task):
            raise TypeError(f"Recorder takes the task the run answers to (pot.Task, see pot.torch.make_task), "
                            f"not {type(task).__name__}")
        spec = task.spec
        self._rec: Optional[_CRecorder] = None  # set once the task admits the run
        self.task, self.model, self.optimizer, self.spec = task, model, optimizer, spec
        self.checkpoint_dir, self.dataset_dir = os.fspath(checkpoint_dir), os.fspath(dataset_dir)
        if schedule is None:
            # A run-seeded task: the run's own order (Task.run_schedule).
            if task.schedule_rule == "listed":
                raise InvalidArgumentError("the task's schedule is listed: pass it as schedule=")
            if steps is None:
                raise InvalidArgumentError("a run-seeded task needs steps= (the run's declared steps)")
            schedule = task.run_schedule(miner_identity, steps)
        elif steps is not None and steps != len(schedule):
            raise InvalidArgumentError(f"steps={steps}, but the schedule has {len(schedule)} steps")
        self.schedule = [[list(map(int, mb)) for mb in step] for step in schedule]
        if not self.schedule:
            raise InvalidArgumentError("the schedule is empty")
        self._data: Optional[Dataset] = None
        data = self._data = open_dataset(self.dataset_dir, dataset_size)
        self.dataset_size = dataset_size = data.size
        # 0 under pot-repro/1: any thread count gives the step's bits.
        if spec.intra_op_threads and spec.intra_op_threads != torch.get_num_threads():
            torch.set_num_threads(spec.intra_op_threads)
        # deterministic_algorithms is applied by every replay: train the same way.
        self._deterministic = bool(spec.to_dict()["deterministic_algorithms"])
        if torch.are_deterministic_algorithms_enabled() != self._deterministic:
            torch.use_deterministic_algorithms(self._deterministic)
        self._single_seed = spec.seed_policy == SeedPolicy.SINGLE_SEED
        # The program's RNG use is the spec's, both ways: a step that moves
        # the generator under a spec declaring none, or leaves it under one
        # declaring dropout or other_rng_use, is refused here, as every
        # verifier would.
        declared = spec.to_dict()
        self._probe_rng = True
        self._dropout = float(declared["dropout"])
        self._declares_rng = bool(declared.get("other_rng_use", False)) or self._dropout > 0
        self._rng_probe: Optional[torch.Tensor] = None
        if self_check not in (True, False, "checkpoints"):
            raise InvalidArgumentError(f"self_check must be True, False or 'checkpoints', not {self_check!r}")
        # A program every verifier refuses (its operators, its forward) is
        # refused now, not after training: loading it runs those checks;
        # then the model must be the program's. The replay is kept for the
        # self-checks.
        self._replay: Optional[_Replay] = _Replay(spec, program)
        check_model_matches_program(model, program, "Recorder")
        self._check_sample_names()
        self.input_names: List[str] = list(self._replay.input_names)  # the forward's, in order
        s0 = _initial_state(model, optimizer, spec)
        self._rng = s0.get(_RNG)
        initial = _state_digest(s0)
        entries = _schedule_entries(self.schedule, dataset_size)
        # Checked before anything is written: a run the task would refuse is
        # refused here, not by the ledger after training.
        self.commitment = Commitment.from_json({
            "task_id": task.id.hex(), "initial_state_digest": initial.hex(),
            "schedule_root": _schedule_root(entries).hex(),
            "dataset_root": data.root.hex(), "dataset_size": dataset_size,
            "spec_digest": spec.digest().hex(), "declared_steps": len(entries),
            "miner_identity": bytes(miner_identity).hex(),
        })
        task.check_commitment(self.commitment)
        self._self_check, self._every = self_check, checkpoint_every
        self._first_step = 1  # the first step this process records (after resuming: the checkpoint's + 1)
        self._entries = entries
        self._failed: Optional[str] = None
        # Every group's learning rate of every step, as the spec gives it
        # (begin_step compares the optimizer's before the step runs).
        self._rates = [_group_rates(spec, g, len(entries) + 1) for g in range(spec.group_count)]
        self._lr_interval = int(declared.get("lr_schedule", {}).get("interval", 0)) or 1
        if resume not in (True, False, "auto"):
            raise InvalidArgumentError(f"resume must be True, False or 'auto', not {resume!r}")
        committed = os.path.join(self.checkpoint_dir, "commitment.bin")
        if resume == "auto":
            resume = os.path.exists(committed)
            if not resume:
                _clear_unstarted(self.checkpoint_dir)
        self.run_id = self.commitment.run_id
        self._step = 0  # the step begun, 0 between steps
        self._flagged = 0  # the run's flagged steps so far (_note_flags)
        if resume:
            self._resume(committed, initial, scheduler)
            self._flagged = len(self.flagged_steps())
            return
        self._rec = _CRecorder(self.checkpoint_dir, spec, program, checkpoint_every)
        with state_writer(s0) as w:
            self.initial_state_digest = self._rec.start(w)
        self._rec.set_commitment(self.commitment, entries)

    def _resume(self, committed: str, initial: Digest, scheduler: Any) -> None:
        """Recorder(resume=...): continues the run of checkpoint_dir from its
        last checkpoint, loading S_at into the model and optimizer and
        placing the schedulers where they were after step `at`."""
        # The directory is this run's before anything in it is cut back.
        if os.path.exists(committed):
            with open(committed, "rb") as f:
                if f.read() != self.commitment.encode():
                    raise ConflictError(f"'{self.checkpoint_dir}' holds another run's commitment than this "
                                        "task, model, schedule and miner give: resume it with what it began "
                                        "with")
        self._rec, at, path = _CRecorder.resume(self.checkpoint_dir)
        self.initial_state_digest = initial
        # The first step this process records is self-checked as step 1 is:
        # the loop must train it from S_at, which it may not (a framework's
        # own checkpoint loaded over it). A self-check the killed process
        # left is removed, finished or not, and so are the temporary files of
        # its other unfinished writes.
        self._first_step = at + 1
        for f in os.listdir(self.checkpoint_dir):
            if f.startswith(_SELF_CHECK) or ".tmp-pot." in f:
                os.remove(os.path.join(self.checkpoint_dir, f))
        with open(path, "rb") as f:
            state = sample_tensors(f.read())
        _load_canonical_state(self.model, self.optimizer, state, at)
        if self._single_seed:
            self._rng = state[_RNG]
        for sched in ([] if scheduler is None else scheduler if isinstance(scheduler, (list, tuple))
                      else [scheduler]):
            # The schedulers the loop steps after each optimizer step: where
            # they were after step `at`.
            _place_scheduler(sched, at // self._lr_interval)

    def _check_sample_names(self) -> None:
        """The program's forward takes the samples' tensors by name
        (docs/PROTOCOL.md 21.2): compared on the first sample, so that a
        forward written for other inputs (a model returning logits, saved
        without its loss) is named before training."""
        assert self._replay is not None and self._data is not None
        takes = self._replay.input_names
        holds = sorted(sample_tensors(self._data.sample(0)))
        if sorted(takes) != holds:
            raise InvalidArgumentError(
                f"Recorder: the program's forward takes ({', '.join(takes)}), the samples hold "
                f"({', '.join(holds)}): the forward takes the sample tensors by name and returns the loss; for a "
                "model returning logits save and record pot.torch.with_loss(model, loss, target=<name>)")

    @property
    def steps_recorded(self) -> int:
        return self._rec.size

    def begin_step(self, indices: Optional[Iterable[int]] = None) -> int:
        """Starts the next step and applies the seed policy (per_step:
        torch.manual_seed(seed(base, t)); single_seed: the RNG state of
        S_{t-1}). With indices (the batch's dataset indices, in order), checks
        them against the committed schedule (ConflictError). Returns t."""
        if self._failed:
            raise StateError(f"begin_step: the recorder stopped: {self._failed}")
        if self._step:
            raise StateError(f"begin_step: step {self._step} has not ended")
        t = self._rec.size + 1
        if t > len(self.schedule):
            raise StateError(f"begin_step: the commitment declares {len(self.schedule)} steps")
        for g, (_, group) in enumerate(_groups(self.optimizer)):
            want = self._rates[g][t - 1]
            if float(group["lr"]) != want:
                resumed = ""
                if self._first_step > 1:
                    resumed = (f" This process resumed from checkpoint {self._first_step - 1}: the scheduler "
                               "passed to Recorder(scheduler=...) was put back where it was after that step; one "
                               "not passed to it (or stepped or restored by the loop) restarts its schedule.")
                raise InvalidArgumentError(
                    f"begin_step: step {t} would train parameter group {g} at learning rate {group['lr']!r}, the "
                    f"spec's schedule gives {want!r}: every verifier replays the spec's rate.{resumed} Pass the "
                    "loop's scheduler to make_spec(scheduler=..., lr_every=<steps between its step() calls>), or "
                    "the rates it sets by hand as make_spec(rates=[...]); a loop setting its rate by hand sets it "
                    "before begin_step")
        if indices is not None:
            got = [int(i) for i in indices]
            want = [i for mb in self.schedule[t - 1] for i in mb]
            if got != want:
                raise ConflictError(f"step {t}: the batch holds dataset indices {got[:8]}..., the committed "
                                    f"schedule {want[:8]}...")
        if torch.are_deterministic_algorithms_enabled() != self._deterministic:
            raise StateError(f"begin_step: torch.use_deterministic_algorithms is "
                             f"{torch.are_deterministic_algorithms_enabled()}, the spec's deterministic_algorithms "
                             f"is {self._deterministic}: every verifier replays in the spec's mode")
        seed = self._rec.begin_step(t)
        if self.spec.seed_policy == SeedPolicy.PER_STEP:
            torch.manual_seed(seed)
        elif self._single_seed:
            assert self._rng is not None
            torch.set_rng_state(self._rng)
        self._rng_probe = torch.get_rng_state() if self._probe_rng else None
        self._step = t
        return t

    def end_step(self, loss: Union[float, torch.Tensor, Sequence[Union[float, torch.Tensor]]]) -> bytes:
        """Ends the step: digests the model and optimizer (call it after
        optimizer.step(), and after scheduler.step() when the loop steps it
        every batch; S_t records the spec's rate of step t+1, see
        docs/python.md "The learning rate"), appends the step leaf with the
        loss (one value, or the micro-batches' scaled losses in order) and
        writes a checkpoint every k steps. Returns the state digest."""
        if not self._step:
            raise StateError("end_step: no step begun (call begin_step first)")
        drew = self._rng_probe is not None and not torch.equal(torch.get_rng_state(), self._rng_probe)
        if self._probe_rng and drew and not self._declares_rng:
            raise InvalidArgumentError(
                f"end_step: step {self._step} drew random numbers, but the spec declares no RNG use (dropout 0, "
                "other_rng_use false): every verifier refuses the step; declare other_rng_use=True with a seed "
                "policy in make_spec")
        if self._probe_rng and not drew and self._declares_rng:
            what = f"dropout {self._dropout}" if self._dropout > 0 else "other_rng_use (dropout 0)"
            raise InvalidArgumentError(
                f"end_step: step {self._step} drew no random numbers, but the spec declares {what}: every verifier "
                "refuses the step; declare randomness only for a program that draws (a dropout module the forward "
                "never calls draws nothing)")
        after = getattr(self.model, "pot_after_step", None)
        if after is not None:
            # What the replay runs after the optimizer update (an EMA of
            # the weights): run here, once per step, before S_t is read.
            with torch.no_grad():
                after()
        state = canonical_state(self.model, self.optimizer, rng=self._single_seed)
        t = self._step
        try:
            self._next_rates(state, t)
        except InvalidArgumentError as e:
            # The step trained at a rate no verifier replays: nothing of it
            # is recorded, and the recorder stops.
            self._failed, self._step = str(e), 0
            raise
        with state_writer(state) as w:
            digest = self._rec.end_step(w, step_loss(loss))
        if self._single_seed:
            self._rng = state[_RNG]
        self._step = 0
        self._note_flags(t)
        if self._self_check and (t == self._first_step or
                                 (self._self_check == "checkpoints" and (t - 1) % self._every == 0)):
            self._check_step(t, digest, state)
        return digest

    def _note_flags(self, t: int) -> None:
        """Says at once what the seal would say later: a step whose
        statistics trip a rule (docs/PROTOCOL.md 5.3; an honest run flags
        none) is challenged for certain, with a RuntimeWarning naming the
        rule; a run flagging more steps than the task's challenge rounds
        cannot seal on the ledger (docs/ledger.md 2.3, rule 14), so the
        flagged step past them raises LimitError (the step is recorded)."""
        def table(step: int) -> StateStats:
            if step == 0:
                return StateStats(bytes(4))  # S_0's table is bound by no leaf: step 1 against an empty one
            with open(os.path.join(self.checkpoint_dir, "stats", f"{step:012d}.stats"), "rb") as f:
                return StateStats(f.read())
        flags = state_flags(table(t - 1), table(t))
        if not flags:
            return
        self._flagged += 1
        first = flags[0]
        what = f"{first.rule} on {first.tensor}" + (f" and {len(flags) - 1} more" if len(flags) > 1 else "")
        rounds = self.task.to_dict()["challenge_policy"]["rounds"]
        if self._flagged > rounds:
            raise LimitError(
                f"end_step: step {t} is flagged ({what}), the run's flagged step {self._flagged}, past the task's "
                f"{rounds} challenge rounds: the ledger refuses to seal a run with more flagged steps than rounds "
                f"(docs/ledger.md 2.3), so this run cannot be paid; step {t} is recorded")
        warnings.warn(f"step {t} is flagged by its statistics ({what}; docs/PROTOCOL.md 5.3): the ledger challenges "
                      f"it for certain; an honest run flags no step", RuntimeWarning, stacklevel=3)

    def _next_rates(self, state: Dict[str, torch.Tensor], t: int) -> None:
        """S_t holds the rate step t+1 trains at (docs/PROTOCOL.md 14.3). A
        scheduler stepped after every step has set it already; one stepped
        per epoch, or a loop setting its rate by hand, changes it later, after
        end_step: the optimizer then still holds step t's rate, and S_t
        records the spec's next one. Any other value is a rate the loop
        trained at or will train at that the spec does not give."""
        for g, (_, group) in enumerate(_groups(self.optimizer)):
            now, ran, nxt = float(group["lr"]), self._rates[g][t - 1], self._rates[g][t]
            if now != ran and now != nxt:
                raise InvalidArgumentError(
                    f"end_step: parameter group {g} holds learning rate {now!r} after step {t}, the spec's schedule "
                    f"gives {ran!r} for step {t} and {nxt!r} for step {t + 1}: a loop setting its rate by hand sets "
                    "it before begin_step, and a scheduler steps as make_spec(lr_every=...) says")
            state[group_lr_name(g)] = torch.tensor(nxt, dtype=torch.float64)

    def _check_step(self, t: int, digest: bytes, state: Mapping[str, torch.Tensor]) -> None:
        """The self-check: replays step t from the checkpoint S_{t-1} as a
        verifier would and compares with the state just recorded. On any
        difference the recorder stops (begin_step refuses) and the error
        names what differs and the usual causes."""
        assert self._replay is not None
        pre = os.path.join(self.checkpoint_dir, "checkpoints", f"{t - 1:012d}.safetensors")
        post = os.path.join(self.checkpoint_dir, f"{_SELF_CHECK}{t:012d}.safetensors")
        assert self._data is not None
        samples = [self._data.sample(i) for mb in self.schedule[t - 1] for i in mb]
        try:
            try:
                res = self._replay.step(pre, self._entries[t - 1], samples, post, run_id=self.run_id)
            except Exception as e:
                self._failed = (f"self-check of step {t}: the replay every verifier runs fails: {e} (the forward must "
                                "take the samples' tensors and return the loss; see pot.torch.with_loss)")
                raise InvalidArgumentError(self._failed) from e
            if res.post_state_digest == digest:
                self._check_seed_matters(t, pre, samples, post, digest)
                return
            resumed = t > 1 and t == self._first_step
            self._failed = f"self-check of step {t}: {_state_difference(post, state, t, resumed)}"
            raise InvalidArgumentError(self._failed)
        finally:
            if os.path.exists(post):
                os.remove(post)

    def _check_seed_matters(self, t: int, pre: str, samples: list, post: str, digest: bytes) -> None:
        """Declared randomness under per_step seeds must change the step:
        every verifier replays a verified step once more under the seeds of
        tagged("pot/v2/seed-probe", run id) and fails the same S_t at check
        30 task_program (docs/PROTOCOL.md 21.5). The self-check does so too,
        so a program that draws random numbers and discards them is known
        before the run is trained, not at its first challenge."""
        if self.spec.seed_policy != SeedPolicy.PER_STEP or not self._declares_rng:
            return
        tag = b"pot/v2/seed-probe"
        probe_run = hashlib.sha256(bytes([len(tag)]) + tag + bytes(self.run_id)).digest()
        assert self._replay is not None
        res = self._replay.step(pre, self._entries[t - 1], samples, post, run_id=probe_run)
        if res.post_state_digest == digest:
            self._failed = (f"self-check of step {t}: the spec declares randomness, but step {t} replays to the same "
                            "state under another run's seeds: the program draws random numbers that change nothing, "
                            "so every verifier fails its steps at check 30 task_program (the task's fault; a listed "
                            "task's runs would be one trajectory any identity can copy)")
            raise InvalidArgumentError(self._failed)

    def root(self, size: Optional[int] = None) -> bytes:
        """The log root over the first `size` steps (default: all), to post."""
        return self._rec.root(size)

    def consistency_proof(self, size1: int, size2: Optional[int] = None) -> bytes:
        return self._rec.consistency_proof(size1, size2)

    def finish(self) -> bytes:
        """Flushes the log; every declared step must be recorded. The root."""
        return self._rec.finish()

    def serve(self, step: int, log_size: Optional[int] = None, post_state: bool = False) -> bytes:
        """The opening manifest of a challenged step against the posted root
        of log_size leaves (default: all recorded), its pre-state re-derived
        from the nearest checkpoint when needed."""
        with Checkpoints(self.checkpoint_dir) as c:
            return c.opening(step, log_size if log_size is not None else c.size, self.dataset_dir, post_state)

    def flagged_steps(self, size: Optional[int] = None) -> List[int]:
        """The steps the run's statistics flag over the first `size` steps
        (default: all recorded; docs/PROTOCOL.md 5.3): what the sealing
        root is posted with (the ledger's post_checkpoint_root
        flagged_steps, docs/ledger.md 2.3), each challenged for certain.
        An honest run flags none."""
        with Checkpoints(self.checkpoint_dir) as c:
            return [s.step for s in c.run_flags(size if size is not None else c.size)]

    def state_path(self, step: int) -> str:
        """A file holding S_step (re-derived when it is not a checkpoint)."""
        with Checkpoints(self.checkpoint_dir) as c:
            return c.state_path(step, self.dataset_dir)[0]

    def _step_or_next(self, step: Optional[int]) -> int:
        """`step`, or by default the step begun, else the next one."""
        return step if step is not None else (self._step or self._rec.size + 1)

    def batch(self, step: Optional[int] = None, micro: Optional[int] = None) -> Dict[str, torch.Tensor]:
        """The committed batch of `step` (default: the step begun, else the
        next one) read from the dataset, each sample tensor stacked along a
        new first dimension ({"x": [B, W-1], "y": [B, W-1]} for a stream's
        next-token windows); `micro` selects one micro-batch. The one line
        that replaces a get_batch: the loop then trains on exactly what the
        schedule commits to."""
        assert self._data is not None
        t = self._step_or_next(step)
        if not 1 <= t <= len(self.schedule):
            raise InvalidArgumentError(f"batch: step {t} is outside 1..{len(self.schedule)}")
        parts = self.schedule[t - 1]
        if micro is not None and not 0 <= micro < len(parts):
            raise InvalidArgumentError(f"batch: step {t} has {len(parts)} micro-batches, not {micro + 1}")
        indices = parts[micro] if micro is not None else [i for mb in parts for i in mb]
        return stack_samples([self._data.sample(i) for i in indices])

    def check_batch(self, batch: Union[Mapping[str, torch.Tensor], Sequence[torch.Tensor]],
                    step: Optional[int] = None, *, where: str = "check_batch") -> None:
        """Compares the batch a loop is about to train on with the committed
        batch of `step` (default: the step begun, else the next one): a
        mapping of the program's input names to tensors, or a sequence in
        the order of the program's forward. StateError naming the first
        tensor that differs; InvalidArgumentError when the names are not the
        program's. Training loops that do not take their batch from
        batch() (a framework's own DataLoader) check it here before the
        forward, so a schedule that is not the loop's is found at step 1."""
        t = self._step_or_next(step)
        want = self.batch(t)
        if isinstance(batch, Mapping):
            got = {k: v for k, v in batch.items() if v is not None}
        elif isinstance(batch, (list, tuple)) and len(batch) == len(self.input_names):
            got = dict(zip(self.input_names, batch))
        else:
            raise InvalidArgumentError(
                f"{where}: step {t}: the batch is a {type(batch).__name__}"
                f"{f' of {len(batch)}' if isinstance(batch, (list, tuple)) else ''}, not a mapping of the program's "
                f"inputs ({', '.join(self.input_names)}) or a sequence of {len(self.input_names)} tensors in that order")
        if sorted(got) != sorted(want):
            raise InvalidArgumentError(
                f"{where}: step {t}: the batch holds ({', '.join(sorted(got))}), the program takes "
                f"({', '.join(sorted(want))}): the loader (its collate function) must give exactly the sample tensors")
        for name in self.input_names:
            have, tensor = got[name], want[name]
            if (not isinstance(have, torch.Tensor) or have.shape != tensor.shape or have.dtype != tensor.dtype
                    or not torch.equal(have.detach().cpu(), tensor)):
                raise StateError(
                    f"{where}: step {t}: the batch is not the committed schedule's ('{name}' differs): plan the "
                    "schedule from the loop's own loader (pot.torch.plan_schedule), which must then draw it")

    def _check_start(self, loop_step: int, where: str, resume_with: str) -> None:
        """A framework loop about to train after its step `loop_step` starts
        where the recorder does: InvalidArgumentError naming both otherwise
        (a loop started afresh beside a resumed recorder, or resumed beside
        a fresh one). `resume_with` says how the loop resumes."""
        done = self.steps_recorded
        if loop_step != done:
            raise InvalidArgumentError(
                f"{where}: the Trainer starts after step {loop_step}, the recorder after step {done}: resume both "
                f"from the same step ({resume_with} from the checkpoint of the step the recorder resumed at, "
                "Recorder(..., resume=True))")

    def close(self) -> None:
        if self._data is not None:
            self._data.close()
            self._data = None
        if self._replay is not None:
            self._replay.close()
            self._replay = None
        if self._rec is not None:
            self._rec.close()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        done = self._rec.size if self._rec is not None else 0
        return f"<pot.torch.Recorder {self.checkpoint_dir!r}: {done} of {len(self.schedule)} steps>"
