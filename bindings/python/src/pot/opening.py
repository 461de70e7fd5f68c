"""Openings of challenged steps (docs/PROTOCOL.md section 18)."""

from __future__ import annotations

import enum
from typing import Optional, Sequence, Union

from . import _pot
from ._core import Digest, _digest
from ._errors import Error
from ._handle import Handle
from .commitment import Commitment
from .hash import Buffer
from .safetensors import PathLike
from .statecheck import StateStats


class OpeningCheck(enum.IntEnum):
    """The checks of verify_opening (and verify_step), in the order they
    run (pot_opening_check); str() is the stable name ("post_leaf_proof")."""

    OK = _pot.POT_CHECK_OK
    MANIFEST = _pot.POT_CHECK_MANIFEST
    RUN_ID = _pot.POT_CHECK_RUN_ID
    STEP = _pot.POT_CHECK_STEP
    LOG_SIZE = _pot.POT_CHECK_LOG_SIZE
    POST_LEAF = _pot.POT_CHECK_POST_LEAF
    POST_LEAF_PROOF = _pot.POT_CHECK_POST_LEAF_PROOF
    PRE_STATE_COMMITTED = _pot.POT_CHECK_PRE_STATE_COMMITTED
    PRE_LEAF = _pot.POT_CHECK_PRE_LEAF
    PRE_LEAF_PROOF = _pot.POT_CHECK_PRE_LEAF_PROOF
    SCHEDULE_ENTRY = _pot.POT_CHECK_SCHEDULE_ENTRY
    SCHEDULE_PROOF = _pot.POT_CHECK_SCHEDULE_PROOF
    SAMPLE_COUNT = _pot.POT_CHECK_SAMPLE_COUNT
    SAMPLE_INDEX = _pot.POT_CHECK_SAMPLE_INDEX
    SAMPLE_PAYLOAD = _pot.POT_CHECK_SAMPLE_PAYLOAD
    SAMPLE_PROOF = _pot.POT_CHECK_SAMPLE_PROOF
    PRE_STATE_DIGEST = _pot.POT_CHECK_PRE_STATE_DIGEST
    POST_STATE_DIGEST = _pot.POT_CHECK_POST_STATE_DIGEST
    SPEC = _pot.POT_CHECK_SPEC
    PROGRAM = _pot.POT_CHECK_PROGRAM
    REPLAY = _pot.POT_CHECK_REPLAY
    REPLAYED_STATE = _pot.POT_CHECK_REPLAYED_STATE
    REPLAYED_LOSS = _pot.POT_CHECK_REPLAYED_LOSS
    REPLAYED_BUCKET = _pot.POT_CHECK_REPLAYED_BUCKET
    NONFINITE = _pot.POT_CHECK_NONFINITE
    LEARNING_RATE = _pot.POT_CHECK_LEARNING_RATE
    COMMITTED_NORM = _pot.POT_CHECK_COMMITTED_NORM
    GRADIENT_IGNORED = _pot.POT_CHECK_GRADIENT_IGNORED
    SUBNORMAL = _pot.POT_CHECK_SUBNORMAL
    REPLAYED_UPDATE = _pot.POT_CHECK_REPLAYED_UPDATE
    TASK_PROGRAM = _pot.POT_CHECK_TASK_PROGRAM
    STATE_STATS = _pot.POT_CHECK_STATE_STATS
    RUN_FLAGS = _pot.POT_CHECK_RUN_FLAGS

    def __str__(self) -> str:
        return _pot.pot_opening_check_name(self)


def opening_check_name(check: int) -> str:
    """pot_opening_check_name: "post_leaf_proof", or "unknown"."""
    return _pot.pot_opening_check_name(int(check))


def _check(value: int) -> "OpeningCheck | int":
    try:
        return OpeningCheck(value)
    except ValueError:
        return value


class Opening(Handle):
    """An opening manifest being built by the miner (pot_opening). States are
    not part of it: name the served files with set_state_refs."""

    _free = staticmethod(_pot.pot_opening_free)

    def __init__(self, run_id: Buffer, step: int, log_size: int, pre_state_digest: Buffer) -> None:
        """Starts a manifest for step `step` of run `run_id`, whose leaf
        proofs are made against the posted log root of `log_size` leaves,
        with the digest of the state before the step."""
        super().__init__(_pot.pot_opening_new(run_id, step, log_size, pre_state_digest))
        self.step = step

    def set_pre_leaf(self, leaf: Buffer, proof: Buffer) -> None:
        """Leaf t-1 and its inclusion proof (not for step 1)."""
        with self._use() as h:
            _pot.pot_opening_set_pre_leaf(h, leaf, proof)

    def set_post_leaf(self, leaf: Buffer, proof: Buffer) -> None:
        """Leaf t and its inclusion proof."""
        with self._use() as h:
            _pot.pot_opening_set_post_leaf(h, leaf, proof)

    def set_schedule(self, entry: Buffer, proof: Buffer) -> None:
        """Schedule entry of step t and its inclusion proof in the schedule root."""
        with self._use() as h:
            _pot.pot_opening_set_schedule(h, entry, proof)

    def add_sample(self, index: int, payload: Buffer, proof: Buffer) -> None:
        """Appends the batch's next sample: its dataset index, its
        safetensors bytes (copied) and its inclusion proof in the dataset root."""
        with self._use() as h:
            _pot.pot_opening_add_sample(h, index, payload, proof)

    def set_stream(self, descriptor: Buffer) -> None:
        """A token-stream dataset (docs/PROTOCOL.md 15.1, 18): the descriptor
        (Stream.encode()) its windows are proven against."""
        with self._use() as h:
            _pot.pot_opening_set_stream(h, descriptor)

    def add_window(self, index: int, proof: Buffer) -> None:
        """Appends the batch's next sample of a stream dataset: its window
        index and window proof (Stream.prove_window); the verifier rebuilds
        the sample from it."""
        with self._use() as h:
            _pot.pot_opening_add_window(h, index, proof)

    def set_state_refs(self, pre_state_ref: Optional[str] = None, post_state_ref: Optional[str] = None) -> None:
        """Where the state files are served (paths or URIs; None for none)."""
        with self._use() as h:
            _pot.pot_opening_set_state_refs(h, pre_state_ref, post_state_ref)

    def set_run_record(self, leaves: Buffer, tables: Sequence[Union[StateStats, Buffer]],
                       flagged_steps: Sequence[int]) -> None:
        """The run record every opening serves since 0.3.0 (docs/PROTOCOL.md
        18, check 32): the log_size step leaves concatenated, the statistics
        table of S_1..S_{log_size} in order, and the steps those tables flag
        (pot.run_flags), ascending."""
        with self._use() as h:
            raw = [t.encode() if isinstance(t, StateStats) else bytes(t) for t in tables]
            _pot.pot_opening_set_run_record(h, leaves, raw, [int(s) for s in flagged_steps])

    def encode(self) -> bytes:
        """Canonical manifest bytes (a pot.v2.OpeningManifest); LimitError
        past 256 MiB."""
        with self._use() as h:
            return _pot.pot_opening_encode(h)

    def digest(self) -> Digest:
        """tagged("pot/v2/opening", canonical bytes): what the ledger records."""
        with self._use() as h:
            return _digest(_pot.pot_opening_digest(h))

    def _describe(self) -> str:
        return f"step {self.step}"


def verify_opening(commitment: Commitment, challenged_step: int, log_size: int, log_root: Buffer,
                   manifest: Buffer, pre_state_path: Optional[PathLike] = None,
                   post_state_path: Optional[PathLike] = None, threads: int = 0) -> None:
    """Verifies manifest bytes as the opening of `challenged_step` against
    the commitment and the posted log root of log_size leaves, and the served
    state files when their paths are given (pot_opening_verify): every check
    but the replay itself.

    Returns when every check passes. Otherwise raises the status of the
    first failed check (ProofMismatchError, MalformedError, IoError...) with
    its OpeningCheck as the exception's `check`.
    """
    with commitment._read() as c:
        try:
            _pot.pot_opening_verify(c, challenged_step, log_size, log_root, manifest, pre_state_path,
                                    post_state_path, threads)
        except Error as e:
            if e.partial is not None:
                e.check = _check(e.partial)
            raise


__all__ = ["OpeningCheck", "opening_check_name", "Opening", "verify_opening"]
