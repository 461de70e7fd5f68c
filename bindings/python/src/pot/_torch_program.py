"""The model program (docs/PROTOCOL.md 21.2) as pot.torch writes it:
save_program and the checks a program and a model must pass before a run.

A program file is named by the digest of its bytes, so the same module must
give the same bytes in every process: save_program saves a copy whose
parameters and buffers are zero (the replay sets every one of them from
S_{t-1}; the values in the file are never read), makes TorchScript list a
module's constants in one order (it walks a Python set of their names,
whose order follows the process's string-hash seed), compiles or traces
with TorchScript's type registry empty (it mangles a type's name when the
process already made one of that name), and writes the archive without
the Python source's locations (a script's file path and lines, a trace's
call stack).
"""

from __future__ import annotations

import contextlib
import copy
import gc
import hashlib
import inspect
import io
import keyword
import linecache
import os
import tempfile
import threading
import zipfile
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from ._errors import InvalidArgumentError
from .hash import StatePart
from .replay import program_digest_file

PathLike = Union[str, "os.PathLike[str]"]

_script_lock = threading.Lock()


class _SortedSet(set):  # type: ignore[type-arg]
    """A set iterated in sorted order: what torch.jit._recursive builds its
    sets with while save_program scripts (constant names, attribute names)."""

    def __iter__(self) -> Iterator[Any]:
        return iter(sorted(set.__iter__(self), key=repr))


@contextlib.contextmanager
def _sorted_sets() -> Iterator[None]:
    """While scripting or tracing: TorchScript's module types list their
    constants in sorted order."""
    import torch.jit._recursive as recursive
    with _script_lock:
        saved = recursive.__dict__.get("set")
        recursive.set = _SortedSet  # type: ignore[attr-defined]
        try:
            yield
        finally:
            if saved is None:
                del recursive.set  # type: ignore[attr-defined]
            else:
                recursive.set = saved  # type: ignore[attr-defined]


# TorchScript's process-wide type registry: the compilation unit its types
# and functions are made in, and the caches that hand back earlier ones.
_REGISTRY = ("_python_cu", "_script_classes", "_name_to_pyclass", "_jit_caching_layer",
             "_jit_function_overload_caching")


@contextlib.contextmanager
def _fresh_types() -> Iterator[Any]:
    """While scripting, tracing or loading a program: sets sorted
    (_sorted_sets, under its lock) and TorchScript's type registry empty,
    as in a new process; yields the compilation unit. TorchScript names a
    module's type after its class and, when the process already holds a
    type of that name (the same class traced before, a Dropout of another
    p scripted before), mangles it (___torch_mangle_<n>, n counting the
    process's types): the program's bytes depended on what the process had
    compiled earlier."""
    import torch.jit._recursive as recursive
    import torch.jit._state as state
    with _sorted_sets():
        saved = {n: getattr(state, n) for n in _REGISTRY}
        saved_store, saved_cu = recursive.concrete_type_store, recursive.__dict__.get("_python_cu")
        cu = torch._C.CompilationUnit()
        for n in _REGISTRY:
            setattr(state, n, cu if n == "_python_cu" else type(saved[n])())
        recursive.concrete_type_store = recursive.ConcreteTypeStore()
        recursive._python_cu = cu
        try:
            yield cu
        finally:
            for n, v in saved.items():
                setattr(state, n, v)
            recursive.concrete_type_store = saved_store
            recursive._python_cu = saved_cu


def _script(module: torch.nn.Module) -> Any:
    """torch.jit.script with the module's constants in sorted order, in an
    empty type registry."""
    with _fresh_types():
        return torch.jit.script(module)  # type: ignore[attr-defined,no-untyped-call]


def _write_archive(archive: io.BytesIO, path: str) -> None:
    """Writes the program file to path from the archive torch.jit.save
    wrote of the scripted or traced module, without the Python source's
    locations. TorchScript keeps, per code file, a debug record of where
    each node came from: the class's source file path and lines when
    scripted, the whole Python call stack of the tracing call when traced;
    so the same module saved from another directory, another line or
    another caller got other bytes. The debug records are dropped and the
    archive loaded and saved again: the records torch.jit.save then writes
    point into the archive's own code. The stripped archive goes through a
    temporary file beside path, and `archive` is closed as soon as it is
    read: each copy holds every parameter (zeroed), about the model's size,
    and no more of them are held at once than saving once needs."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-pot.", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as out, zipfile.ZipFile(archive) as src, \
                zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for info in src.infolist():
                if not info.filename.endswith(".debug_pkl"):
                    dst.writestr(zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0)), src.read(info))
        archive.close()
        with _fresh_types():
            reloaded = torch.jit.load(tmp, map_location="cpu")  # type: ignore[attr-defined,no-untyped-call]
    finally:
        os.remove(tmp)
    # A file object, not a name: a name would name the archive's inner
    # folder after the path, so the same module saved in two places would
    # get two digests.
    with open(path, "wb") as f:
        torch.jit.save(reloaded, f)  # type: ignore[attr-defined,no-untyped-call]


def _where(obj: Any) -> str:
    """'file.py:line' of a class or function, or its qualified name."""
    try:
        return f"{inspect.getsourcefile(obj)}:{inspect.getsourcelines(obj)[1]}"
    except (OSError, TypeError):
        return getattr(obj, "__qualname__", type(obj).__name__)


_WRAPPER_SOURCE = '''\
class PotProgram(torch.nn.Module):
    """A model and its loss, as pot.torch.with_loss made it."""

    def __init__(self, model, loss, carry, averaged):
        super().__init__()
        self.model = model
        self.loss = loss
        for i, c in enumerate(carry):
            self.register_buffer(f"carry_{{i}}", c.detach().clone())
        for i, p in enumerate(averaged):
            self.register_buffer(f"ema_{{i}}", p.detach().clone())

    def forward(self, {params}) -> torch.Tensor:
        res = self.model({args})
        out = res{index}{store}
        return {ret}
{after}'''

_AFTER_STEP_SOURCE = '''
    @torch.jit.export
    def pot_after_step(self) -> None:
        """The exponential moving average of every parameter, after the
        optimizer step (docs/PROTOCOL.md 21.3)."""{updates}
'''


def _attribute_path(name: str) -> str:
    """`self.model.<name>` as TorchScript reads it: `layers.0.weight` is
    `.layers[0].weight`."""
    return "".join(f"[{part}]" if part.isdigit() else f".{part}" for part in name.split("."))


def with_loss(model: torch.nn.Module, loss: Optional[Callable[..., Any]] = None, *, target: str = "target",
              output: Optional[int] = None, inputs: Optional[Sequence[str]] = None,
              carry: Union[None, torch.Tensor, Sequence[torch.Tensor]] = None,
              carry_output: int = 1, ema: Optional[float] = None) -> torch.nn.Module:
    """The module whose forward takes the samples' tensors and returns the
    loss, built around a model that returns something else: the program to
    save (save_program) and the module to hand to make_spec, make_task and
    the Recorder. It holds `model` itself (not a copy) as its submodule
    "model", so its parameters are the model's, named model.<name>; the
    training loop goes on calling the model as before.

    - loss: a loss module (torch.nn.CrossEntropyLoss()) or a scriptable
      function (torch.nn.functional.cross_entropy), called as
      loss(model_output, target); the forward then takes the model's inputs
      and `target`, the name of the target tensor in the samples.
    - output: for a model returning a tuple, the index of the element to
      use (1 for a forward returning (logits, loss)).
    - inputs: the names of the model's inputs in the samples (default: the
      parameter names of model.forward), passed in order; when they are
      names of model.forward's parameters but not its first ones (a Hugging
      Face model's ["input_ids", "labels"]), passed by keyword.
    - carry: state the model carries from batch to batch (a recurrent
      hidden state: a tensor, or a tuple such as an LSTM's (h, c)), given as
      its initial value. The model's forward takes it as its last argument
      and returns (output, new state, ...): element `output` (default 0) is
      the output and element `carry_output` (default 1) the new state. The
      wrapper holds the state as its buffers carry_0, carry_1, ... (part of
      every S_t, so each step replays from the state it started with),
      passes a copy to the model and stores the new state, detached, after
      the forward: the loop calls this module, not the model, and no longer
      keeps the hidden state itself.
    - ema: the decay of an exponential moving average of every parameter,
      updated after each optimizer step as `ema.mul_(decay).add_(p,
      alpha=1 - decay)`: held as buffers ema_0, ema_1, ... (in the order of
      model.named_parameters(); ema_parameters() names them), part of every
      S_t, and replayed by the program's pot_after_step, which the Recorder
      calls at end_step (the loop does not).
    """
    if ema is not None and not (isinstance(ema, float) and 0.0 < ema < 1.0):
        raise InvalidArgumentError(f"with_loss: ema is a decay in (0, 1), not {ema!r}")
    if loss is None and output is None and carry is None:
        raise InvalidArgumentError("with_loss: give loss= or output= (a model returning its loss is its own program)")
    carried, output = _carried_state(carry, output, carry_output)
    names_in = list(inputs) if inputs is not None else _forward_inputs(model)
    if carried and inputs is None:
        names_in = names_in[:-1]  # the last argument takes the carried state
    names = names_in + ([target] if loss is not None else [])
    _check_argument_names(names)
    module_loss = isinstance(loss, torch.nn.Module)
    state_in, store = _carry_source(len(carried), carry_output)
    call_args = _call_args(model, names_in, by_name=inputs is not None and not carried)
    named = list(model.named_parameters()) if ema is not None else []
    after = "" if ema is None else _AFTER_STEP_SOURCE.format(updates="".join(
        f"\n        self.ema_{i}.mul_({ema!r}).add_(self.model{_attribute_path(n)}.detach(), alpha={1.0 - ema!r})"
        for i, (n, _) in enumerate(named)))
    source = _WRAPPER_SOURCE.format(after=after,
        params=", ".join(f"{n}: torch.Tensor" for n in names), args=", ".join(call_args + ([state_in] if state_in else [])),
        # An element typed Optional[Tensor] (a forward returning (logits,
        # loss) whose loss is None without targets) is refined by the assert.
        index="" if output is None else f"[{int(output)}]\n        assert out is not None", store=store,
        ret="out" if loss is None else f"self.loss(out, {target})" if module_loss else f"loss_fn(out, {target})")
    namespace = _compile_wrapper(source, None if loss is None or module_loss else loss)
    return namespace["PotProgram"](model, loss if module_loss else None, carried,  # type: ignore[no-any-return]
                                   [p for _, p in named])


def _carried_state(carry: Union[None, torch.Tensor, Sequence[torch.Tensor]], output: Optional[int],
                   carry_output: int) -> Tuple[List[torch.Tensor], Optional[int]]:
    """with_loss's carried tensors, and the output index (0 by default when
    state is carried)."""
    if carry is None:
        return [], output
    carried = [carry] if isinstance(carry, torch.Tensor) else list(carry)
    if not carried or not all(isinstance(c, torch.Tensor) for c in carried):
        raise InvalidArgumentError("with_loss: carry is a tensor or a tuple of tensors (the state's initial value)")
    if output is None:
        output = 0
    if carry_output == output:
        raise InvalidArgumentError(f"with_loss: output and carry_output are both element {output}")
    return carried, output


def _check_argument_names(names: List[str]) -> None:
    for n in names:
        if not n.isidentifier() or keyword.iskeyword(n) or n in ("self", "torch", "loss_fn"):
            raise InvalidArgumentError(f"with_loss: '{n}' cannot name a forward argument (sample tensor names must "
                                       "be Python identifiers)")
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"with_loss: the forward's arguments {names} repeat a name")


def _carry_source(count: int, carry_output: int) -> Tuple[str, str]:
    """The model gets a copy of the carried state (autograd may keep the
    tensor it was given for the backward pass); the new state is stored
    detached, so no graph reaches into the next step. Returns the argument
    and the statements storing the new state."""
    if count == 0:
        return "", ""
    if count == 1:
        return "self.carry_0.clone()", f"\n        self.carry_0.copy_(res[{int(carry_output)}].detach())"
    state_in = "(" + ", ".join(f"self.carry_{i}.clone()" for i in range(count)) + ")"
    store = f"\n        new = res[{int(carry_output)}]" + "".join(
        f"\n        self.carry_{i}.copy_(new[{i}].detach())" for i in range(count))
    return state_in, store


def _call_args(model: torch.nn.Module, names_in: List[str], by_name: bool) -> List[str]:
    """inputs= naming some of the model's own parameters (a Hugging Face
    model's input_ids and labels among its dozen optional arguments) are
    passed by keyword, as the model's training loop passes them."""
    if by_name:
        own = _parameter_names(model)
        if all(n in own for n in names_in) and names_in != own[:len(names_in)]:
            return [f"{n}={n}" for n in names_in]
    return list(names_in)


def _compile_wrapper(source: str, loss_fn: Optional[Callable[..., Any]]) -> Dict[str, Any]:
    """Runs the generated source of the wrapper class. TorchScript compiles a
    class from its source: the source is registered with linecache under a
    name that depends on it alone, so every process scripts it to the same
    bytes."""
    filename = f"<pot.torch.with_loss {hashlib.sha256(source.encode()).hexdigest()[:16]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace: Dict[str, Any] = {"torch": torch, "__name__": "pot_program"}
    if loss_fn is not None:
        if not callable(loss_fn):
            raise InvalidArgumentError(f"with_loss: loss must be a module or a function, not {type(loss_fn).__name__}")
        namespace["loss_fn"] = loss_fn
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own generated source
    return namespace


def ema_parameters(program_module: torch.nn.Module) -> Dict[str, torch.Tensor]:
    """The moving averages a with_loss(..., ema=) module holds, by the
    model's parameter name (the live buffers, not copies)."""
    model = getattr(program_module, "model", None)
    if model is None or not hasattr(program_module, "ema_0"):
        raise InvalidArgumentError("ema_parameters: the module holds no moving average (with_loss(..., ema=decay))")
    return {n: getattr(program_module, f"ema_{i}") for i, (n, _) in enumerate(model.named_parameters())}


def _parameter_names(model: torch.nn.Module) -> List[str]:
    """The named parameters of model.forward (not *args or **kwargs)."""
    return [p.name for p in inspect.signature(model.forward).parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _forward_inputs(model: torch.nn.Module) -> List[str]:
    names = []
    for p in inspect.signature(model.forward).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise InvalidArgumentError(f"with_loss: {type(model).__name__}.forward takes *{p.name}: name the sample "
                                       "tensors it is called with (inputs=[...])")
        names.append(p.name)
    return names


def _zero_weights(module: torch.nn.Module) -> None:
    with torch.no_grad():
        for t in list(module.parameters()) + list(module.buffers()):
            t.zero_()


def _trace(module: torch.nn.Module, example: Mapping[str, torch.Tensor]) -> Any:
    """torch.jit.trace of `module` called with the example batch, by the
    names of its forward's arguments."""
    if not isinstance(example, Mapping) or not all(isinstance(v, torch.Tensor) for v in example.values()):
        raise InvalidArgumentError("save_program: example is a batch: a mapping of sample tensor names to tensors")
    if not module.training:
        raise InvalidArgumentError(
            f"save_program: {type(module).__qualname__} is in eval mode: a trace records the mode (no dropout, "
            "BatchNorm's running statistics), and the replay runs the step in training mode; call module.train() "
            "before tracing")
    names = [p.name for p in inspect.signature(module.forward).parameters.values()]
    missing = [n for n in names if n not in example]
    if missing or len(names) != len(example):
        raise InvalidArgumentError(
            f"save_program: {type(module).__qualname__}.forward takes ({', '.join(names)}), the example batch holds "
            f"({', '.join(example)}): a traced program takes exactly the sample tensors, by name")
    # Traced in the module's mode: a dropout traced in train mode keeps its
    # probability as a literal the replay checks against the spec's.
    # check_trace is off: a second run differs whenever dropout draws.
    with _fresh_types() as cu:
        return torch.jit.trace(module, tuple(example[n] for n in names),  # type: ignore[no-untyped-call]
                               check_trace=False, _compilation_unit=cu)


def save_program(module: torch.nn.Module, path: PathLike, *,
                 example: Optional[Mapping[str, torch.Tensor]] = None) -> bytes:
    """Writes the model program (docs/PROTOCOL.md 21.2) of `module` to path
    and returns its digest, the spec's model_program_digest.

    The module's forward takes the batch tensors, named as the sample
    tensors, and returns the loss; for a model that returns logits, or
    (logits, loss), save with_loss(model, ...) and hand that same module to
    make_spec, make_task and the Recorder. The same module gives the same
    bytes, so the same digest, in every process: the file holds zeros for
    every parameter and buffer (the replay sets them all from S_{t-1}).
    The module itself is not changed.

    The module is scripted (torch.jit.script), or with `example` (a batch:
    sample tensor name -> tensor, as the forward takes it) traced
    (torch.jit.trace): for models TorchScript cannot compile, such as
    Hugging Face transformers. A trace records the operators one call ran:
    a forward whose operators depend on the data (control flow over tensor
    values, shapes that vary from batch to batch) is not the same program
    for another batch, and the replay of such a step fails. A trace also
    records the module's mode, so a module in eval mode is refused: traced
    in training mode, the dropout probability is a literal of the graph,
    checked against the spec's.

    InvalidArgumentError when TorchScript cannot compile or trace the
    module (the message names the class's file and line and holds
    TorchScript's, which points at the failing source line) or when its
    forward does not return one tensor."""
    if not isinstance(module, torch.nn.Module):
        raise InvalidArgumentError(f"save_program takes a torch.nn.Module, not {type(module).__name__}")
    copy_of = copy.deepcopy(module)
    how = "compile" if example is None else "trace"
    try:
        if example is None:
            _zero_weights(copy_of)
            program = _script(copy_of)
        else:
            # Traced with the weights the module has (the forward runs), then
            # zeroed: the traced module holds its own copies.
            program = _trace(copy_of, example)
            _zero_weights(program)
    except InvalidArgumentError:
        raise
    except Exception as e:  # TorchScript raises RuntimeError, NotSupportedError, OSError, ...
        cls = type(module)
        msg = str(e).strip()
        if isinstance(e, OSError) and "source" in msg:
            msg += (" (TorchScript compiles a module from its Python source: define the class in a .py file, "
                    "not in an interactive session or exec)")
        hint = "" if example is not None else (" (a model TorchScript cannot compile may still be traced: "
                                               "save_program(module, path, example=batch))")
        raise InvalidArgumentError(f"save_program: TorchScript cannot {how} {cls.__module__}.{cls.__qualname__} "
                                   f"(defined at {_where(cls)}): {msg}{hint}") from e
    returns = [str(r.type) for r in program.forward.schema.returns]
    if returns != ["Tensor"]:
        raise InvalidArgumentError(
            f"save_program: {type(module).__qualname__}.forward returns {', '.join(returns) or 'nothing'}, not the "
            "loss (one scalar floating tensor, docs/PROTOCOL.md 21.2): save pot.torch.with_loss(model, loss) for a "
            "model returning logits, with_loss(model, output=1) for one returning (logits, loss)")
    archive = io.BytesIO()
    torch.jit.save(program, archive)  # type: ignore[attr-defined,no-untyped-call]
    # The archive holds what the file needs; a traced module sits in
    # reference cycles, which only the collector frees.
    del program, copy_of
    gc.collect()
    archive.seek(0)
    _write_archive(archive, os.fspath(path))
    return program_digest_file(path)


def program_parameters(path: PathLike) -> Dict[str, Tuple[List[int], torch.dtype]]:
    """The parameters and buffers a program declares, by state name
    (param/<name>, buffer/<name>), with shape and dtype."""
    program = torch.jit.load(os.fspath(path), map_location="cpu")  # type: ignore[attr-defined,no-untyped-call]
    out: Dict[str, Tuple[List[int], torch.dtype]] = {}
    for n, p in program.named_parameters():
        out[StatePart.PARAM_PREFIX.state_name + n] = (list(p.shape), p.dtype)
    for n, b in program.named_buffers():
        out[StatePart.BUFFER_PREFIX.state_name + n] = (list(b.shape), b.dtype)
    return out


def check_model_matches_program(model: torch.nn.Module, path: PathLike, where: str) -> None:
    """Refuses a model whose parameters and buffers are not the program's
    (names, shapes, dtypes): the replay sets the program's from S_t, which
    holds the model's. The usual cause is handing the inner model to the
    Recorder while the program is its loss wrapper, or the other way round."""
    want = program_parameters(path)
    have: Dict[str, Tuple[List[int], torch.dtype]] = {}
    for n, p in model.named_parameters():
        have[StatePart.PARAM_PREFIX.state_name + n] = (list(p.shape), p.dtype)
    for n, b in model.named_buffers():
        have[StatePart.BUFFER_PREFIX.state_name + n] = (list(b.shape), b.dtype)
    hint = "pass the module save_program was given"
    if want and all(k.split("/", 1)[1].startswith("model.") for k in want):
        hint += " (a with_loss(model, ...) holds the model as .model: pass it, not the model)"
    elif have and all(k.split("/", 1)[1].startswith("model.") for k in have):
        hint += " (this is a with_loss(...) of the program's model: save that, or pass the model)"
    missing = sorted(set(want) - set(have))
    extra = sorted(set(have) - set(want))
    if missing or extra:
        detail = []
        if missing:
            detail.append(f"the program has {', '.join(missing[:4])}{'...' if len(missing) > 4 else ''} that the "
                          "model has not")
        if extra:
            detail.append(f"the model has {', '.join(extra[:4])}{'...' if len(extra) > 4 else ''} that the program "
                          "has not")
        raise InvalidArgumentError(
            f"{where}: the model is not the program's ({'; '.join(detail)}): {hint}")
    for k, (shape, dtype) in want.items():
        if have[k] != (shape, dtype):
            raise InvalidArgumentError(f"{where}: '{k}' is {have[k][1]} of shape {have[k][0]} in the model, "
                                       f"{dtype} of shape {shape} in the program")
