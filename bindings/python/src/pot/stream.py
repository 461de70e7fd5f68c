"""Token-stream datasets (docs/PROTOCOL.md 15.1): token files committed over
their bytes, sample i the i-th window of W tokens, proven by the chunks that
hold it. No file per sample: a train.bin is committed where it lies."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Mapping, Tuple, Union

from . import _pot
from ._core import Digest, _digest
from ._handle import Handle, _new
from .hash import Buffer, DType
from .spec import _json_text

PathLike = Union[str, "os.PathLike[str]"]


class Stream(Handle):
    """A validated stream dataset (pot_stream): the token and output dtypes,
    the window length W, the views a window gives (x = tokens [0, W-1),
    y = [1, W) for next-token prediction) and each shard's token count and
    root. Immutable: threads may read one at once.

    >>> root, n = shard_root_file("train.bin")                   # doctest: +SKIP
    >>> s = Stream({"token_dtype": "U16", "output_dtype": "I64", "window": 257,
    ...             "views": [{"name": "x", "start": 0, "length": 256},
    ...                       {"name": "y", "start": 1, "length": 256}],
    ...             "shards": [{"tokens": n, "root": root.hex()}]})  # doctest: +SKIP
    >>> s.root, s.size                                          # doctest: +SKIP
    """

    _free = staticmethod(_pot.pot_stream_free)
    _shared_reads = True

    def __init__(self, json_text: Union[str, bytes, Mapping[str, Any]]) -> None:
        """Same as Stream.from_json."""
        super().__init__(_pot.pot_stream_from_json(_json_text(json_text)))

    @classmethod
    def from_json(cls, json_text: Union[str, bytes, Mapping[str, Any]]) -> "Stream":
        """From the JSON form (docs/cli.md "Stream dataset"); InvalidArgumentError
        names the rule or key, LimitError a bound."""
        return cls(json_text)

    @classmethod
    def decode(cls, data: Buffer) -> "Stream":
        """From the descriptor bytes (UnsupportedError for another version,
        MalformedError for a truncated record or a trailing byte)."""
        return _new(cls, _pot.pot_stream_decode(data))

    def encode(self) -> bytes:
        """The descriptor bytes."""
        with self._read() as h:
            return _pot.pot_stream_encode(h)

    def to_json(self) -> str:
        with self._read() as h:
            return _pot.pot_stream_to_json(h).decode("utf-8")

    def to_dict(self) -> Dict[str, Any]:
        return json.loads(self.to_json())

    @property
    def root(self) -> Digest:
        """dataset_root = tagged("pot/v2/stream", descriptor)."""
        with self._read() as h:
            return _digest(_pot.pot_stream_root(h))

    @property
    def size(self) -> int:
        """The number of windows: the dataset_size."""
        with self._read() as h:
            return int(_pot.pot_stream_size(h))

    def locate(self, index: int) -> Tuple[int, int]:
        """(shard, first token) of window `index`; OutOfRangeError past the size."""
        with self._read() as h:
            shard, offset = _pot.pot_stream_locate(h, index)
            return int(shard), int(offset)

    def prove_window(self, index: int, shard_path: PathLike) -> bytes:
        """The proof of window `index`, read from its shard's file."""
        with self._read() as h:
            return _pot.pot_stream_prove_window(h, index, shard_path)

    def sample(self, index: int, shard_path: PathLike) -> bytes:
        """The sample of window `index` (safetensors bytes) read from its
        shard's file: what the trainer feeds the model. Not checked against
        the shard root here; the opening's window proof binds it."""
        with self._read() as h:
            return _pot.pot_stream_sample(h, index, shard_path)

    def check_window(self, index: int, proof: Buffer) -> bytes:
        """Checks a window proof; the window's sample as safetensors bytes.
        ProofMismatchError when its chunks do not give the shard's root."""
        with self._read() as h:
            return _pot.pot_stream_check_window(h, index, proof)

    def _describe(self) -> str:
        return f"{self.root} ({self.size} windows)"


def shard_root_file(path: PathLike, token_dtype: Union[str, DType] = "U16") -> Tuple[Digest, int]:
    """The shard root and token count of a token file (U16 or U32)."""
    dt = DType[token_dtype] if isinstance(token_dtype, str) else DType(token_dtype)
    root, tokens = _pot.pot_stream_shard_root_file(path, dt)
    return _digest(root), int(tokens)


__all__ = ["Stream", "shard_root_file"]
