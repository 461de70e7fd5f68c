"""safetensors state files, read and written by libpot."""

from __future__ import annotations

import ctypes
import os
import weakref
from typing import Any, Iterator, List, NamedTuple, Sequence, Tuple, Union

from . import _buffers, _pot
from ._core import Digest, _digest
from ._handle import Handle
from .hash import Buffer, DType, DTypeLike, _as_dtype, _dtype

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


class TensorInfo(NamedTuple):
    """A tensor of a safetensors file."""

    name: str
    dtype: Union[DType, int]
    shape: Tuple[int, ...]
    nbytes: int


class _Pin:
    """Keeps a Safetensors handle's proxy (and so its mapping) alive."""

    __slots__ = ("h", "__weakref__")

    def __init__(self, h: Any) -> None:
        self.h = h


class Safetensors(Handle):
    """A safetensors file mapped read-only, its header validated
    (pot_safetensors). Tensors are indexed in bytewise name order. Read-only:
    threads may read one file at once.

    IoError when the file cannot be opened or mapped, MalformedError for a
    bad header, LimitError past the bounds, UnsupportedError for a dtype.

    >>> with Safetensors("model.safetensors") as f:     # doctest: +SKIP
    ...     for t in f: print(t.name, t.dtype, t.shape)
    ...     w = f.tensor_data("weight")
    """

    _shared_reads = True

    _free = staticmethod(_pot.pot_safetensors_free)

    def __init__(self, path: PathLike) -> None:
        # Views from tensor_view hold a pin each: while one lives, the file
        # stays mapped (freed by the handle's proxy once the last pin goes).
        self._pins: "weakref.WeakSet[_Pin]" = weakref.WeakSet()
        Handle.__init__(self, _pot.pot_safetensors_open(path))
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, Safetensors._finalize_file, self._h, self._pins)
        self.path = os.fsdecode(path)

    @staticmethod
    def _finalize_file(h: Any, pins: "weakref.WeakSet[_Pin]") -> None:
        if not len(pins):
            _pot.pot_safetensors_free(h)

    @classmethod
    def open(cls, path: PathLike) -> "Safetensors":
        """Same as Safetensors(path)."""
        return cls(path)


    @property
    def count(self) -> int:
        """Number of tensors."""
        with self._read() as h:
            return _pot.pot_safetensors_count(h)

    def __len__(self) -> int:
        return self.count

    def _index(self, h: Any, key: Union[int, str]) -> int:
        if isinstance(key, str):
            return _pot.pot_safetensors_find(h, key)
        return int(key)

    def tensor(self, key: Union[int, str]) -> TensorInfo:
        """Name, dtype, shape and size of tensor `key` (an index, or a name);
        OutOfRangeError for a bad index, NotFoundError for an absent name."""
        with self._read() as h:
            name, dtype, shape, _, nbytes = _pot.pot_safetensors_tensor(h, self._index(h, key))
            return TensorInfo(name, _as_dtype(dtype), shape, nbytes)

    def __iter__(self) -> Iterator[TensorInfo]:
        for i in range(self.count):
            yield self.tensor(i)

    @property
    def names(self) -> List[str]:
        """The tensor names, in index (bytewise) order."""
        return [t.name for t in self]

    def find(self, name: str) -> int:
        """Index of the named tensor; NotFoundError when absent."""
        with self._read() as h:
            return _pot.pot_safetensors_find(h, name)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self.find(name)
        except LookupError:
            return False
        return True

    def tensor_data(self, key: Union[int, str]) -> bytes:
        """A copy of the tensor's bytes (little-endian, row-major)."""
        with self._read() as h:
            _, _, _, address, nbytes = _pot.pot_safetensors_tensor(h, self._index(h, key))
            return ctypes.string_at(address, nbytes) if nbytes else b""

    def tensor_view(self, key: Union[int, str]) -> memoryview:
        """A read-only view of the tensor's bytes in the mapping, without a
        copy (numpy.frombuffer, torch.frombuffer...). The file stays mapped
        while a view exists, even after close()."""
        with self._read() as h:
            _, _, _, address, nbytes = _pot.pot_safetensors_tensor(h, self._index(h, key))
            pin = _Pin(h)
            self._pins.add(pin)
            return _buffers._raw_view(address, nbytes, pin, readonly=True)

    def metadata(self, key: str) -> str:
        """Value of a __metadata__ entry; NotFoundError when absent."""
        with self._read() as h:
            return _pot.pot_safetensors_metadata(h, key)

    def digest(self, threads: int = 0) -> Digest:
        """State digest of the tensors (metadata excluded), hashed from the
        mapping: equal to a State with the same tensors."""
        with self._read() as h:
            return _digest(_pot.pot_safetensors_digest(h, threads))

    def _describe(self) -> str:
        return f"{self.path!r}, {self.count} tensors"


def safetensors_digest_file(path: PathLike, threads: int = 0) -> Digest:
    """Opens, digests and closes a safetensors file (pot_safetensors_digest_file)."""
    return _digest(_pot.pot_safetensors_digest_file(path, threads))


class SafetensorsWriter(Handle):
    """Collects tensors and writes a canonical safetensors file
    (pot_safetensors_writer).

    libpot borrows each tensor's bytes until the file is written or the
    writer closed: the writer keeps every buffer added exported (a bytearray
    cannot be resized meanwhile) and referenced until close(). Change no
    tensor between add() and write().
    """

    _free = staticmethod(_pot.pot_safetensors_writer_free)

    def __init__(self) -> None:
        super().__init__(_pot.pot_safetensors_writer_new())
        self._held: List[memoryview] = []

    def add(self, name: str, dtype: DTypeLike, shape: Sequence[int], data: Buffer) -> None:
        """Validates (as tensor_digest; DuplicateError for a repeated name)
        and records the tensor, without copying its bytes."""
        view = _buffers.hold(data)
        with self._use() as h:
            _pot.pot_safetensors_writer_add(h, name, _dtype(dtype), shape, view)
            self._held.append(view)

    def set_metadata(self, key: str, value: str) -> None:
        """Sets a __metadata__ string entry (replacing an earlier value)."""
        with self._use() as h:
            _pot.pot_safetensors_writer_set_metadata(h, key, value)

    def write(self, path: PathLike) -> None:
        """Writes the file through a temporary file and a rename (IoError on
        failure). The writer may be written again."""
        with self._use() as h:
            _pot.pot_safetensors_writer_write(h, path)

    def to_bytes(self) -> bytes:
        """The same canonical file as bytes in memory."""
        with self._use() as h:
            return _pot.pot_safetensors_writer_bytes(h)

    def __len__(self) -> int:
        return len(self._held)

    def close(self) -> None:
        """Frees the writer and releases the buffers it borrowed."""
        super().close()
        held, self._held = self._held, []
        for view in held:
            view.release()

    def _describe(self) -> str:
        return f"{len(self._held)} tensors"


__all__ = ["TensorInfo", "Safetensors", "safetensors_digest_file", "SafetensorsWriter"]
