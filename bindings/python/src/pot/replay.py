"""Replay (docs/PROTOCOL.md section 21): single-step replay, full step
verification, the trainer-side recorder and its checkpoint store.

Every call here needs a libpot built with LibTorch (replay_available());
without it they raise UnsupportedError. A replay changes process-wide
LibTorch state (the default CPU generator, the intra-op thread count), so
libpot runs replays one at a time, and no torch work of the program's own
may run in another thread meanwhile (the GIL is released during a replay).
Recorder.begin_step seeds the default CPU generator of this process, which
is torch's own when torch is imported.
"""

from __future__ import annotations

import enum
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _pot
from ._core import Digest, _digest
from ._errors import Error
from ._handle import Handle, _new
from ._step import GradientTrace, ReplayResult, _gradient_trace, _replay_result
from .commitment import Commitment
from .dispute import OpRuling, OpTrace
from .hash import Buffer
from .opening import OpeningCheck, _check
from .safetensors import PathLike, SafetensorsWriter
from .spec import Spec
from .statecheck import FlaggedStep, _flagged_steps


def program_digest_file(path: PathLike) -> Digest:
    """The model program digest a spec carries: tagged("pot/v1/program", the
    TorchScript file's bytes). Available in every build; IoError when the
    file cannot be read."""
    return _digest(_pot.pot_program_digest_file(path))


def replay_available() -> bool:
    """True when the loaded libpot was built with the LibTorch replay layer."""
    return bool(_pot.pot_replay_available())


def hardware_class() -> str:
    """This process's hardware class (pot_replay_hardware_class,
    docs/PROTOCOL.md 14.4): the value a spec's hardware_class must hold for
    its steps to be trained or replayed bit for bit here, e.g.
    "cpu-x86_64/aten:avx2/onednn:avx2". ATen's CPU capability
    (ATEN_CPU_CAPABILITY) and oneDNN's ISA (ONEDNN_MAX_CPU_ISA) are fixed
    when torch first uses them. UnsupportedError without LibTorch."""
    return _pot.pot_replay_hardware_class()


def framework_version() -> str:
    """The LibTorch version this libpot replays with
    (pot_replay_framework_version, e.g. "1.13.0"): the framework_version a
    witness states in its environment (docs/PROTOCOL.md 19).
    UnsupportedError without LibTorch."""
    return _pot.pot_replay_framework_version()


class VerifyMode(enum.IntEnum):
    """How verify_step compares the replayed step (pot_verify_mode)."""

    BITWISE = _pot.POT_VERIFY_BITWISE
    NORM_BUCKET = _pot.POT_VERIFY_NORM_BUCKET

    def __str__(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class VerifyResult:
    """What verify_step found (pot_verify_result). The replay's values are
    set when `replayed` is true."""

    check: Union[OpeningCheck, int]
    replayed: bool
    replayed_state_digest: Digest
    loss: float
    update_norm: float
    norm_bucket: int
    committed_state_digest: Digest
    committed_loss: float
    committed_update_norm: float
    committed_norm_bucket: int
    gradient: GradientTrace  # of the replay, when it ran
    gradient_digest: Digest  # of the replay, when it ran: the step's gradient (PROTOCOL 19)
    # NORM_BUCKET, when the replay ran (0 otherwise; docs/PROTOCOL.md 21.5):
    # the committed loss's relative distance from the replayed one, the served
    # update's from the replayed update, and the largest of one tensor's.
    loss_error: float = 0.0
    update_error: float = 0.0
    tensor_update_error: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the step verified."""
        return self.check == OpeningCheck.OK

    @property
    def replay(self) -> Optional[ReplayResult]:
        """The replay's result, when the replay ran."""
        if not self.replayed:
            return None
        return ReplayResult(self.replayed_state_digest, self.loss, self.update_norm, self.norm_bucket, self.gradient,
                            self.gradient_digest)


def _verify_result(d: Dict[str, Any]) -> VerifyResult:
    return VerifyResult(
        check=_check(d["check"]), replayed=d["replayed"],
        replayed_state_digest=_digest(d["replayed_state_digest"]), loss=d["loss"],
        update_norm=d["update_norm"], norm_bucket=d["norm_bucket"],
        committed_state_digest=_digest(d["committed_state_digest"]), committed_loss=d["committed_loss"],
        committed_update_norm=d["committed_update_norm"], committed_norm_bucket=d["committed_norm_bucket"],
        gradient=_gradient_trace(d["gradient"]), gradient_digest=_digest(d["gradient_digest"]),
        loss_error=d["loss_error"], update_error=d["update_error"], tensor_update_error=d["tensor_update_error"])


class StepInput(Handle):
    """The inputs of one step (pot_step_input): the run, the S_{t-1} file,
    the step's canonical schedule entry and one safetensors sample per
    index of the entry, in order. Built once, it may be passed to several
    replays (Replay.step, trace, open_op_node, referee_decide_op take
    either one or the same values, from which they build one).

    MalformedError for an entry that does not decode or a sample that is
    not safetensors (naming the sample and its dataset index),
    OutOfRangeError for more samples than the entry lists.
    """

    _free = staticmethod(_pot.pot_step_input_free)

    def __init__(self, pre_state_path: PathLike, schedule_entry: Buffer, samples: Sequence[Buffer] = (), *,
                 run_id: Optional[Buffer] = None) -> None:
        super().__init__(_pot.pot_step_input_new(run_id, pre_state_path, schedule_entry))
        for sample in samples:
            self.add_sample(sample)

    def add_sample(self, sample: Buffer) -> None:
        """Appends the payload of the entry's next index."""
        with self._use() as h:
            _pot.pot_step_input_add_sample(h, sample)

    @property
    def sample_count(self) -> int:
        """Samples added so far."""
        with self._use() as h:
            return _pot.pot_step_input_sample_count(h)

    @property
    def step(self) -> int:
        """The step its schedule entry names."""
        with self._use() as h:
            return _pot.pot_step_input_step(h)


class Replay(Handle):
    """A TorchScript model program bound to a spec (pot_replay).

    ProofMismatchError when the program's digest is not the spec's
    model_program_digest, InvalidArgumentError when it is not a TorchScript
    module whose forward takes tensors, IoError when it cannot be read.
    """

    _free = staticmethod(_pot.pot_replay_free)

    def __init__(self, spec: Spec, program_path: PathLike) -> None:
        with spec._read() as s:
            super().__init__(_pot.pot_replay_new(s, program_path))
        self.program_path = os.fsdecode(program_path)

    def input_name(self, index: int) -> str:
        """The forward's argument `index` (a sample tensor name);
        OutOfRangeError past the last."""
        with self._use() as h:
            return _pot.pot_replay_input_name(h, index)

    @property
    def input_names(self) -> List[str]:
        """The forward's argument names, in order."""
        names: List[str] = []
        with self._use() as h:
            while True:
                try:
                    names.append(_pot.pot_replay_input_name(h, len(names)))
                except IndexError:
                    return names

    def step(self, pre_state_path: PathLike, schedule_entry: Buffer, samples: Sequence[Buffer],
             post_state_path: Optional[PathLike] = None, *, run_id: Optional[Buffer] = None) -> ReplayResult:
        """Replays one step from the state file S_{t-1} (pot_replay_step).

        run_id: the run the step belongs to (Commitment.run_id); required
        when the spec's seed policy is per_step, whose seeds name the run
        (InvalidArgumentError without it).
        schedule_entry: the step's canonical entry (ScheduleEntry.encode);
        samples: the safetensors payloads of its indices, in order;
        post_state_path: where to write S_t, if given. The learning rates are
        the spec's (Spec.learning_rates): InvalidArgumentError when S_{t-1}'s
        hparam/lr is not step t's rate, or for a state or batch that does
        not fit the program and spec; NonFiniteError for a
        NaN or infinite loss, BackendError for a LibTorch failure.
        """
        return self.step_with(StepInput(pre_state_path, schedule_entry, samples, run_id=run_id), post_state_path)

    def step_with(self, step: StepInput, post_state_path: Optional[PathLike] = None) -> ReplayResult:
        """step() of a StepInput built beforehand."""
        with self._use() as h, step._read() as i:
            return _replay_result(_pot.pot_replay_step(h, i, post_state_path))

    def trace(self, pre_state_path: PathLike, schedule_entry: Buffer, samples: Sequence[Buffer], *,
              run_id: Optional[Buffer] = None) -> OpTrace:
        """Replays one step as step() does and records its operator trace
        (pot_replay_trace, docs/PROTOCOL.md 22.2): an OpTrace, whose
        replay_result is step()'s result. Same errors as step()."""
        step = StepInput(pre_state_path, schedule_entry, samples, run_id=run_id)
        with self._use() as h, step._read() as i:
            return OpTrace(_pot.pot_replay_trace(h, i))

    def open_op_node(self, pre_state_path: PathLike, schedule_entry: Buffer, samples: Sequence[Buffer], index: int,
                     *, run_id: Optional[Buffer] = None) -> bytes:
        """This party's opening of node `index` of its trace of the step
        (pot_replay_open_op_node): replays the step again and returns the
        node, its proofs, the sources its inputs name and its input tensors'
        bytes. OutOfRangeError past the trace's end."""
        step = StepInput(pre_state_path, schedule_entry, samples, run_id=run_id)
        with self._use() as h, step._read() as i:
            return _pot.pot_replay_open_op_node(h, i, index)

    def referee_decide_op(self, pre_state_path: PathLike, pre_state_digest: Buffer, schedule_entry: Buffer,
                          samples: Sequence[Buffer], index: int, *, agreed_root: Buffer, a_root: Buffer,
                          b_root: Buffer, a_opening: Buffer, b_opening: Buffer,
                          run_id: Optional[Buffer] = None) -> OpRuling:
        """The referee's ruling on node `index` after an operator bisection
        (pot_referee_decide_op): the agreed root of the first `index` nodes,
        each party's root of the first index + 1 and its opening. This
        Replay must hold the task's spec; the pre-state file must be the
        agreed S_{t-1} (ProofMismatchError otherwise)."""
        step = StepInput(pre_state_path, schedule_entry, samples, run_id=run_id)
        with self._use() as h, step._read() as i:
            raw = _pot.pot_referee_decide_op(h, i, pre_state_digest, index, agreed_root, a_root, b_root, a_opening,
                                             b_opening)
        d = json.loads(raw)
        return OpRuling(d["a_loses"], d["b_loses"], d["rule"], d["reason"], d["executed"], d["replayed"])

    def _describe(self) -> str:
        return repr(self.program_path)


def verify_step(commitment: Commitment, spec: Spec, program_path: PathLike, challenged_step: int, log_size: int,
                log_root: Buffer, manifest: Buffer, pre_state_path: PathLike,
                post_state_path: Optional[PathLike] = None, mode: Union[VerifyMode, int] = VerifyMode.BITWISE,
                intra_op_threads: int = 0) -> VerifyResult:
    """Verifies a challenged step completely (docs/PROTOCOL.md 21.5): every
    check of verify_opening, the spec against the commitment, the program
    against the spec, the replay from the served S_{t-1} and the comparison
    of `mode` (NORM_BUCKET needs post_state_path).

    Returns the VerifyResult when the step verified. Otherwise raises the
    status of the first failed check (ProofMismatchError for a replay that
    differs) with the exception's `check` (OpeningCheck) and `result` (the
    VerifyResult, with the replay's values when it ran).
    """
    with commitment._read() as c, spec._read() as s:
        try:
            raw = _pot.pot_verify_step(c, s, program_path, challenged_step, log_size, log_root, manifest,
                                       pre_state_path, post_state_path, int(mode), intra_op_threads)
        except Error as e:
            if isinstance(e.partial, dict):
                e.result = _verify_result(e.partial)
                e.check = e.result.check
            raise
    return _verify_result(raw)


def _writer(w: SafetensorsWriter) -> Any:
    return w._use()


class Recorder(Handle):
    """The trainer-side recorder (pot_recorder, docs/PROTOCOL.md 21.4):
    digests every state, appends the step leaves to the log and keeps every
    k-th state as a checkpoint in a directory that Checkpoints serves
    openings from. States are SafetensorsWriters holding the tensors under
    canonical names.

    ConflictError when the directory holds a run, ProofMismatchError when
    the program's digest is not the spec's.
    """

    _free = staticmethod(_pot.pot_recorder_free)

    def __init__(self, dir: PathLike, spec: Spec, program_path: PathLike, checkpoint_every: int) -> None:
        with spec._read() as s:
            super().__init__(_pot.pot_recorder_new(dir, s, program_path, checkpoint_every))
        self.dir = os.fsdecode(dir)

    @classmethod
    def resume(cls, dir: PathLike) -> Tuple["Recorder", int, str]:
        """Reopens the directory of a recorder whose process stopped (killed
        at any point, crashed, or closed early): (recorder, c, path of S_c).
        The run continues after the last stored checkpoint c that the log and
        steps.jsonl hold whole; later records are cut back. StateError for a
        directory without a commitment (no step ever began), MalformedError
        naming the file for what no crash leaves."""
        raw, step, path = _pot.pot_recorder_resume(dir)
        r = _new(cls, raw)
        r.dir = os.fsdecode(dir)
        return r, int(step), bytes(path).decode("utf-8")

    def start(self, s0: SafetensorsWriter) -> Digest:
        """Records S_0 (checkpoint 0); returns its digest, the commitment's
        initial state digest."""
        with self._use() as h, _writer(s0) as w:
            return _digest(_pot.pot_recorder_start(h, w))

    def set_commitment(self, commitment: Commitment, entries: Sequence[Buffer]) -> None:
        """The training commitment and its schedule entries (steps 1..n, in
        order), checked against it (ProofMismatchError); needed to serve
        openings."""
        with self._use() as h, commitment._read() as c:
            _pot.pot_recorder_set_commitment(h, c, list(entries))

    def begin_step(self, step: int) -> int:
        """Starts step `step` (the next one; StateError otherwise) and applies
        the seed policy to LibTorch's default CPU generator: per_step seeds
        it and returns the seed (0 for the other policies)."""
        with self._use() as h:
            return _pot.pot_recorder_begin_step(h, step)

    def end_step(self, state: SafetensorsWriter, loss: float) -> Digest:
        """Ends the step begun with S_t and the step's loss; returns S_t's digest."""
        with self._use() as h, _writer(state) as w:
            return _digest(_pot.pot_recorder_end_step(h, w, loss))

    @property
    def size(self) -> int:
        """Number of steps recorded."""
        with self._use() as h:
            return _pot.pot_recorder_size(h)

    def __len__(self) -> int:
        return self.size

    def root(self, size: Optional[int] = None) -> Digest:
        """Root of the log's first `size` leaves (default: all), to post on chain."""
        with self._use() as h:
            return _digest(_pot.pot_recorder_root(h, _pot.pot_recorder_size(h) if size is None else size))

    def consistency_proof(self, size1: int, size2: Optional[int] = None) -> bytes:
        """RFC 6962 consistency proof from size1 to size2 (default: all)."""
        with self._use() as h:
            return _pot.pot_recorder_consistency_proof(h, size1,
                                                       _pot.pot_recorder_size(h) if size2 is None else size2)

    def finish(self) -> Digest:
        """Flushes the log and returns its root; with a commitment, every
        declared step must be recorded (StateError)."""
        with self._use() as h:
            return _digest(_pot.pot_recorder_finish(h))

    def _describe(self) -> str:
        return f"{self.dir!r}, {self.size} steps"


class Checkpoints(Handle):
    """A recorder's checkpoint directory, opened to serve openings
    (pot_checkpoints). It caches re-derived states."""

    _free = staticmethod(_pot.pot_checkpoints_free)

    def __init__(self, dir: PathLike) -> None:
        super().__init__(_pot.pot_checkpoints_open(dir))
        self.dir = os.fsdecode(dir)

    @classmethod
    def open(cls, dir: PathLike) -> "Checkpoints":
        """Same as Checkpoints(dir)."""
        return cls(dir)

    @property
    def size(self) -> int:
        """Steps recorded."""
        with self._use() as h:
            return _pot.pot_checkpoints_size(h)

    def __len__(self) -> int:
        return self.size

    def state_path(self, step: int, dataset_dir: PathLike) -> Tuple[str, int]:
        """(path, replayed): a file holding S_step, re-derived from the
        nearest checkpoint before it when needed with the samples of
        dataset_dir (one %06d.safetensors file per index), and the number of
        steps replayed for it. Each replayed state must match the log
        (ProofMismatchError)."""
        with self._use() as h:
            raw, replayed = _pot.pot_checkpoints_state_path(h, step, dataset_dir)
        return os.fsdecode(raw.rstrip(b"\0")), replayed

    def opening(self, step: int, log_size: int, dataset_dir: PathLike, serve_post_state: bool = False) -> bytes:
        """The opening manifest of step `step` against the log's first
        log_size leaves, naming the (re-derived) S_{t-1} file and, with
        serve_post_state, S_t (for the cross-architecture path)."""
        with self._use() as h:
            return _pot.pot_checkpoints_opening(h, step, log_size, dataset_dir, int(bool(serve_post_state)))

    def leaf(self, step: int, log_size: Optional[int] = None) -> Tuple[bytes, bytes]:
        """(step leaf, inclusion proof): the committed leaf of step `step`
        and its proof in the log's first log_size leaves (default: all),
        what the miner posts for that step in a ledger dispute
        (docs/ledger.md 2.12, 2.13: open_dispute's hi_leaf / lo_leaf,
        claim_dispute's claims). Replays nothing. OutOfRangeError unless
        1 <= step <= log_size <= size."""
        with self._use() as h:
            size = _pot.pot_checkpoints_size(h) if log_size is None else log_size
            leaf, proof = _pot.pot_checkpoints_leaf(h, step, size)
        return leaf, proof

    def run_flags(self, log_size: Optional[int] = None) -> List[FlaggedStep]:
        """The flagged steps of the log's first log_size leaves (default:
        all; pot_checkpoints_run_flags), from the tables kept in stats/:
        what the miner seals its run with on the ledger (docs/ledger.md
        2.3: post_checkpoint_root's flagged_steps). Every opening lists
        them (check 32)."""
        with self._use() as h:
            size = _pot.pot_checkpoints_size(h) if log_size is None else log_size
            text = _pot.pot_checkpoints_run_flags(h, size)
        return _flagged_steps(text)

    def _describe(self) -> str:
        return f"{self.dir!r}, {self.size} steps"


__all__ = ["program_digest_file", "replay_available", "VerifyMode", "GradientTrace", "ReplayResult", "VerifyResult",
           "StepInput", "Replay", "verify_step", "Recorder", "Checkpoints"]
