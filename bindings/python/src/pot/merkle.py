"""RFC 6962 / RFC 9162 Merkle trees: hashes, proofs, the streaming log and
the stored tree."""

from __future__ import annotations

import os
from typing import Optional, Union

from . import _pot
from ._core import Digest, _digest
from ._handle import Handle, _new
from .hash import Buffer

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


def leaf_hash(data: Buffer) -> Digest:
    """SHA-256(0x00 || data) (pot_merkle_leaf_hash)."""
    return _digest(_pot.pot_merkle_leaf_hash(data))


def node_hash(left: Buffer, right: Buffer) -> Digest:
    """SHA-256(0x01 || left || right) of two 32-byte hashes (pot_merkle_node_hash)."""
    return _digest(_pot.pot_merkle_node_hash(left, right))


def verify_inclusion(index: int, size: int, leaf_hash: Buffer, proof: Buffer, root: Buffer) -> None:
    """Returns when leaf_hash is leaf `index` of the tree of `size` leaves
    with `root` (RFC 9162 2.1.3.2); raises OutOfRangeError when index >=
    size, ProofLengthError for a proof of the wrong length, ProofMismatchError
    when it does not lead to root, MalformedError/LimitError for proof bytes
    that are not up to 128 whole hashes."""
    _pot.pot_merkle_verify_inclusion(index, size, leaf_hash, proof, root)


def verify_consistency(size1: int, size2: int, root1: Buffer, root2: Buffer, proof: Buffer) -> None:
    """Returns when the tree of size2 leaves with root2 extends the tree of
    size1 leaves with root1 (RFC 9162 2.1.4.2); OutOfRangeError when size1 ==
    0 or size1 > size2, ProofLengthError, ProofMismatchError as above."""
    _pot.pot_merkle_verify_consistency(size1, size2, root1, root2, proof)


class Log(Handle):
    """The trainer-side log (pot_log): appends leaves and gives the root in
    O(log n) memory (it keeps the tree's right border only)."""

    _free = staticmethod(_pot.pot_log_free)

    def __init__(self) -> None:
        super().__init__(_pot.pot_log_new())

    @classmethod
    def load(cls, data: Buffer) -> "Log":
        """Restores a saved log (pot_log_load); MalformedError unless the
        bytes are exactly what save() produces for some size."""
        return _new(cls, _pot.pot_log_load(data))

    def append(self, data: Buffer) -> None:
        """Appends a leaf whose hash is SHA-256(0x00 || data)."""
        with self._use() as h:
            _pot.pot_log_append(h, data)

    def append_hash(self, leaf_hash: Buffer) -> None:
        """Appends a leaf given by its 32-byte leaf hash."""
        with self._use() as h:
            _pot.pot_log_append_hash(h, leaf_hash)

    @property
    def size(self) -> int:
        """Number of leaves."""
        with self._use() as h:
            return _pot.pot_log_size(h)

    def __len__(self) -> int:
        return self.size

    def root(self) -> Digest:
        """Root of the leaves appended so far (SHA-256 of nothing when empty)."""
        with self._use() as h:
            return _digest(_pot.pot_log_root(h))

    def save(self) -> bytes:
        """The log's state (u64le size, then its border hashes), for load()."""
        with self._use() as h:
            return _pot.pot_log_save(h)

    def _describe(self) -> str:
        return f"size={self.size}"


class Tree(Handle):
    """The prover-side tree (pot_tree): stores every node, in a file or in
    memory, and serves roots, leaf hashes and proofs for any earlier size.
    Reads may run on several threads at once; appends and flushes take the
    tree alone.

    >>> with Tree.in_memory() as t:
    ...     t.append(b"leaf")
    ...     t.size, len(t.inclusion_proof(0))
    0
    (1, 0)
    """

    _free = staticmethod(_pot.pot_tree_free)
    _shared_reads = True

    def __init__(self, path: Optional[PathLike] = None) -> None:
        """Opens the tree file at path, creating it when missing; None keeps
        the tree in memory. IoError, or MalformedError for a file that is not
        a tree file or whose last append was interrupted."""
        super().__init__(_pot.pot_tree_open(path))
        self.path: Optional[str] = None if path is None else os.fsdecode(path)

    @classmethod
    def open(cls, path: PathLike) -> "Tree":
        """The tree stored in the file at path (created when missing)."""
        return cls(path)

    @classmethod
    def in_memory(cls) -> "Tree":
        """A tree kept in memory."""
        return cls(None)

    def append(self, data: Buffer) -> int:
        """Appends a leaf (hash SHA-256(0x00 || data)); returns its index."""
        with self._use() as h:
            return _pot.pot_tree_append(h, data)

    def append_hash(self, leaf_hash: Buffer) -> int:
        """Appends a leaf given by its leaf hash; returns its index."""
        with self._use() as h:
            return _pot.pot_tree_append_hash(h, leaf_hash)

    def flush(self) -> None:
        """Writes buffered appends to the file (close() flushes too, but
        loses the errors)."""
        with self._use() as h:
            _pot.pot_tree_flush(h)

    @property
    def size(self) -> int:
        """Number of leaves."""
        with self._read() as h:
            return _pot.pot_tree_size(h)

    def __len__(self) -> int:
        return self.size

    def root(self, size: Optional[int] = None) -> Digest:
        """Root of the first `size` leaves (default: all); OutOfRangeError
        past the tree's size."""
        with self._read() as h:
            return _digest(_pot.pot_tree_root(h, _pot.pot_tree_size(h) if size is None else size))

    def leaf_hash(self, index: int) -> Digest:
        """Leaf hash of leaf `index`."""
        with self._read() as h:
            return _digest(_pot.pot_tree_leaf_hash(h, index))

    def inclusion_proof(self, index: int, size: Optional[int] = None) -> bytes:
        """Inclusion proof of leaf `index` in the tree of its first `size`
        leaves (default: all); OutOfRangeError unless index < size <= self.size."""
        with self._read() as h:
            return _pot.pot_tree_inclusion_proof(h, index, _pot.pot_tree_size(h) if size is None else size)

    def consistency_proof(self, size1: int, size2: Optional[int] = None) -> bytes:
        """Consistency proof from size1 to size2 leaves (default: all);
        OutOfRangeError unless 0 < size1 <= size2 <= self.size."""
        with self._read() as h:
            return _pot.pot_tree_consistency_proof(h, size1, _pot.pot_tree_size(h) if size2 is None else size2)

    def _describe(self) -> str:
        where = "in memory" if self.path is None else repr(self.path)
        return f"{where}, size={self.size}"


__all__ = ["leaf_hash", "node_hash", "verify_inclusion", "verify_consistency", "Log", "Tree"]

