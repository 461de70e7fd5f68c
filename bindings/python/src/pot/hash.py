"""Digests: SHA-256, canonical tensor and state digests, sharded tensors."""

from __future__ import annotations

import enum
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Union

from . import _pot
from ._core import Digest, _digest
from ._handle import Handle

Buffer = Any  # bytes, bytearray, memoryview, numpy array, CPU torch tensor...


class DType(enum.IntEnum):
    """Element types (pot_dtype). The values are part of the tensor digest."""

    BOOL = _pot.POT_DTYPE_BOOL
    U8 = _pot.POT_DTYPE_U8
    I8 = _pot.POT_DTYPE_I8
    I16 = _pot.POT_DTYPE_I16
    U16 = _pot.POT_DTYPE_U16
    I32 = _pot.POT_DTYPE_I32
    U32 = _pot.POT_DTYPE_U32
    I64 = _pot.POT_DTYPE_I64
    U64 = _pot.POT_DTYPE_U64
    F16 = _pot.POT_DTYPE_F16
    BF16 = _pot.POT_DTYPE_BF16
    F32 = _pot.POT_DTYPE_F32
    F64 = _pot.POT_DTYPE_F64

    @property
    def size(self) -> int:
        """Bytes per element (pot_dtype_size)."""
        return _pot.pot_dtype_size(self)

    @property
    def safetensors_name(self) -> str:
        """The safetensors name, "F32", "BF16"... (pot_dtype_name)."""
        name = _pot.pot_dtype_name(self)
        assert name is not None
        return name

    @classmethod
    def from_name(cls, name: str) -> "DType":
        """Inverse of safetensors_name (pot_dtype_from_name); UnsupportedError
        for an unknown name."""
        return cls(_pot.pot_dtype_from_name(name))

    def __str__(self) -> str:
        return self.safetensors_name


DTypeLike = Union[DType, int, str]


def _dtype(d: DTypeLike) -> int:
    """A DType, its int value or its safetensors name, as the C value."""
    if isinstance(d, str):
        return int(DType.from_name(d))
    return int(d)


def _as_dtype(value: int) -> Union[DType, int]:
    try:
        return DType(value)
    except ValueError:
        return value


def sha256(data: Buffer) -> Digest:
    """Plain SHA-256 of data, no domain tag (pot_sha256)."""
    return _digest(_pot.pot_sha256(data))


def tensor_digest(name: str, dtype: DTypeLike, shape: Sequence[int], data: Buffer, threads: int = 0) -> Digest:
    """Canonical digest of one tensor (pot_tensor_digest): its little-endian
    row-major bytes hashed as CHUNK_SIZE chunks under an RFC 6962 tree, bound
    with name, dtype and shape. data must hold dtype.size * prod(shape)
    bytes (InvalidArgumentError otherwise). threads = 0 uses every core; the
    digest does not depend on it. The GIL is released while hashing."""
    return _digest(_pot.pot_tensor_digest(name, _dtype(dtype), shape, data, threads))


class State(Handle):
    """A state being digested: named tensors digested as they are added
    (pot_state). The bytes are not kept.

    >>> with State() as s:
    ...     s.add_tensor("w", DType.F32, [2], b"\\0\\0\\x80?\\0\\0\\0@")
    ...     len(s)
    1
    """

    _free = staticmethod(_pot.pot_state_free)

    def __init__(self, threads: Optional[int] = None) -> None:
        super().__init__(_pot.pot_state_new())
        if threads is not None:
            self.set_threads(threads)

    def set_threads(self, threads: int) -> None:
        """Threads used to hash each tensor added later (0 = all cores, the default)."""
        with self._use() as h:
            _pot.pot_state_set_threads(h, threads)

    def add_tensor(self, name: str, dtype: DTypeLike, shape: Sequence[int], data: Buffer) -> None:
        """Digests a tensor and adds it (arguments as tensor_digest);
        DuplicateError when the name is present."""
        with self._use() as h:
            _pot.pot_state_add_tensor(h, name, _dtype(dtype), shape, data)

    def add_tensor_digest(self, name: str, tensor_digest: Buffer) -> None:
        """Adds a tensor digest computed elsewhere (tensor_digest, or a
        TensorAssembler on another rank of a sharded run)."""
        with self._use() as h:
            _pot.pot_state_add_tensor_digest(h, name, tensor_digest)

    @property
    def count(self) -> int:
        """Number of tensors added."""
        with self._use() as h:
            return _pot.pot_state_tensor_count(h)

    def __len__(self) -> int:
        return self.count

    def digest(self) -> Digest:
        """The state digest over the tensors added so far (canonical name order)."""
        with self._use() as h:
            return _digest(_pot.pot_state_digest(h))

    def tensor_proof(self, name: str) -> bytes:
        """Proof that the named tensor belongs to the state (docs/PROTOCOL.md
        5.1), for verify_tensor_proof; NotFoundError when absent."""
        with self._use() as h:
            return _pot.pot_state_tensor_proof(h, name)

    def _describe(self) -> str:
        return f"{self.count} tensors"


def state_digest(tensors: Union[Mapping[str, Tuple[DTypeLike, Sequence[int], Buffer]],
                                Iterable[Tuple[str, DTypeLike, Sequence[int], Buffer]]],
                 threads: int = 0) -> Digest:
    """The state digest of named tensors, given as {name: (dtype, shape, data)}
    or as (name, dtype, shape, data) tuples."""
    items: Iterable[Tuple[str, DTypeLike, Sequence[int], Buffer]]
    if isinstance(tensors, Mapping):
        items = ((name, *spec) for name, spec in tensors.items())
    else:
        items = tensors
    with State(threads) as s:
        for name, dtype, shape, data in items:
            s.add_tensor(name, dtype, shape, data)
        return s.digest()


def verify_tensor_proof(state_digest: Buffer, tensor_digest: Buffer, proof: Buffer) -> None:
    """Returns when tensor_digest is part of the state with state_digest by
    the proof of State.tensor_proof (pot_state_verify_tensor); raises
    ProofMismatchError when it is not, MalformedError/LimitError for proof
    bytes that do not decode, OutOfRangeError/ProofLengthError for
    inconsistent positions."""
    _pot.pot_state_verify_tensor(state_digest, tensor_digest, proof)


def chunk_range_hash(data: Buffer, offset: int, total_bytes: int, threads: int = 0) -> bytes:
    """The chunk-range record of bytes [offset, offset + len(data)) of a
    tensor of total_bytes bytes, for a TensorAssembler on another rank
    (pot_chunk_range_hash). offset must be a multiple of CHUNK_SIZE, and the
    length too unless the range ends the tensor."""
    return _pot.pot_chunk_range_hash(data, offset, total_bytes, threads)


class TensorAssembler(Handle):
    """Joins chunk-range records into the tensor digest tensor_digest gives
    for the whole tensor (pot_tensor_assembler)."""

    _free = staticmethod(_pot.pot_tensor_assembler_free)

    def __init__(self, name: str, dtype: DTypeLike, shape: Sequence[int]) -> None:
        super().__init__(_pot.pot_tensor_assembler_new(name, _dtype(dtype), shape))
        self.name = name

    def add(self, record: Buffer) -> None:
        """Adds a record (any order). MalformedError when it does not decode,
        InvalidArgumentError when it is for another size or overlaps one added."""
        with self._use() as h:
            _pot.pot_tensor_assembler_add(h, record)

    def finish(self) -> Digest:
        """The tensor digest; InvalidArgumentError while bytes are not covered."""
        with self._use() as h:
            return _digest(_pot.pot_tensor_assembler_finish(h))

    def _describe(self) -> str:
        return repr(self.name)


class StatePart(enum.IntEnum):
    """The tensor names and prefixes of a training state (pot_state_part,
    docs/PROTOCOL.md 21.1), spelled by libpot: StatePart.LR.state_name is
    "hparam/lr"."""

    PARAM_PREFIX = _pot.POT_STATE_PARAM_PREFIX    # "param/<parameter>"
    BUFFER_PREFIX = _pot.POT_STATE_BUFFER_PREFIX  # "buffer/<buffer>"
    OPTIM_PREFIX = _pot.POT_STATE_OPTIM_PREFIX    # "optim/<parameter>/<key>"
    LR = _pot.POT_STATE_LR                        # group 0's rate; group g's is state_name + "/<g>"
    RNG = _pot.POT_STATE_RNG                      # the CPU generator's state
    GRAD_PREFIX = _pot.POT_STATE_GRAD_PREFIX      # a witness's gradient state, "grad/<parameter>"

    @property
    def state_name(self) -> str:
        """The name or prefix (pot_state_part_name)."""
        return _pot.pot_state_part_name(self)


__all__ = ["DType", "sha256", "tensor_digest", "State", "state_digest", "verify_tensor_proof",
           "chunk_range_hash", "TensorAssembler", "StatePart"]

