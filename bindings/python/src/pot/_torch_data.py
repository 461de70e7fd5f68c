"""The datasets pot.torch trains on (docs/python.md "Datasets"): a directory
of samples (one safetensors file per sample, DIR/%06d.safetensors, the
layout the checkpoint store reads) or a token stream (docs/PROTOCOL.md 15.1:
token files committed where they lie, sample i the i-th window; named by its
stream file, stream.json, or a directory holding one: docs/cli.md "Stream
file")."""

from __future__ import annotations

import json
import os
import struct
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import torch

from ._errors import InvalidArgumentError, UnsupportedError
from .commitment import sample_digest
from .merkle import Tree
from .stream import Stream, shard_root_file

PathLike = Union[str, "os.PathLike[str]"]

STREAM_FILE_FORMAT = "pot-stream/1"
STREAM_FILE_NAME = "stream.json"

# safetensors dtype name -> torch dtype, for the samples' tensors.
_TORCH_DTYPES: Dict[str, torch.dtype] = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}


def sample_path(directory: PathLike, index: int) -> str:
    """Sample `index` of a directory of samples: DIR/%06d.safetensors."""
    return os.path.join(directory, f"{index:06d}.safetensors")


def stream_file_of(dataset: PathLike) -> Optional[str]:
    """The stream file a dataset location names (the file itself, or
    stream.json in a directory), None for a directory of samples: the rule
    the checkpoint store follows."""
    path = os.fspath(dataset)
    if os.path.isfile(path):
        return path
    inside = os.path.join(path, STREAM_FILE_NAME)
    return inside if os.path.isfile(inside) else None


class Dataset:
    """A dataset opened for training and recording: its commitment (root,
    size) and its samples as safetensors bytes."""

    location: str
    size: int

    @property
    def root(self) -> bytes:
        raise NotImplementedError

    def sample(self, index: int) -> bytes:
        raise NotImplementedError

    def close(self) -> None:
        pass


class SampleDirectory(Dataset):
    def __init__(self, directory: PathLike, size: Optional[int] = None) -> None:
        self.location = os.fspath(directory)
        if size is None:
            size = sum(1 for f in os.listdir(self.location) if f.endswith(".safetensors"))
        self.size = size
        self._root: Optional[bytes] = None

    @property
    def root(self) -> bytes:
        if self._root is None:
            with Tree.in_memory() as tree:
                for i in range(self.size):
                    tree.append(sample_digest(self.sample(i)))
                self._root = tree.root()
        return self._root

    def sample(self, index: int) -> bytes:
        with open(sample_path(self.location, index), "rb") as f:
            return f.read()


class StreamDataset(Dataset):
    """A token stream read from its stream file. The files are not hashed
    here: the task's dataset root binds the descriptor, and every window an
    opening serves is proven against it (the checkpoint store checks each
    shard's chunk tree once)."""

    def __init__(self, stream_file: PathLike, size: Optional[int] = None) -> None:
        self.location = os.fspath(stream_file)
        with open(self.location, "rb") as f:
            try:
                doc = json.loads(f.read())
            except ValueError as e:
                raise InvalidArgumentError(f"stream file '{self.location}' is not JSON: {e}") from None
        if not isinstance(doc, dict) or set(doc) != {"format", "stream", "files"}:
            raise InvalidArgumentError(f"stream file '{self.location}': an object of format, stream and files")
        if doc["format"] != STREAM_FILE_FORMAT:
            raise UnsupportedError(f"stream file '{self.location}' has the format {doc['format']!r}, this pot reads "
                                   f"{STREAM_FILE_FORMAT!r}")
        self.stream = Stream(doc["stream"])
        base = os.path.dirname(os.path.abspath(self.location))
        files = doc["files"]
        if not isinstance(files, list) or len(files) != len(doc["stream"]["shards"]):
            raise InvalidArgumentError(f"stream file '{self.location}': one file per shard")
        self.files = [f if os.path.isabs(f) else os.path.join(base, f) for f in files]
        self.size = self.stream.size
        if size is not None and size != self.size:
            raise InvalidArgumentError(f"dataset_size={size}, but the stream '{self.location}' has {self.size} "
                                       "windows")

    @property
    def root(self) -> bytes:
        return bytes(self.stream.root)

    def sample(self, index: int) -> bytes:
        shard, _ = self.stream.locate(index)
        return self.stream.sample(index, self.files[shard])

    def close(self) -> None:
        self.stream.close()


def open_dataset(location: PathLike, size: Optional[int] = None) -> Dataset:
    """A stream when `location` names a stream file (or a directory holding
    stream.json), else a directory of samples (`size` of them, default: the
    .safetensors files it holds)."""
    stream_file = stream_file_of(location)
    if stream_file is not None:
        return StreamDataset(stream_file, size)
    return SampleDirectory(location, size)


def commit_stream(shards: Union[PathLike, Sequence[PathLike]], out: PathLike, *, window: int,
                  views: Optional[Mapping[str, Sequence[int]]] = None, token_dtype: str = "U16",
                  output_dtype: str = "I64") -> Stream:
    """Commits token files where they lie (a `train.bin` of uint16 ids, or
    several shards in order) as a stream dataset of windows of `window`
    tokens and writes its stream file `out` (stream.json: the descriptor and
    the shards' paths relative to it), which make_task, the Recorder and
    `pot open make --dataset` read. `views` maps each sample tensor's name
    to (start, length) in the window; the default is next-token prediction,
    x = tokens [0, window-1) and y = [1, window). One pass over the tokens;
    nothing else is written. Returns the Stream (its root and size are the
    task's dataset_root and dataset_size)."""
    paths = [os.fspath(shards)] if isinstance(shards, (str, os.PathLike)) else [os.fspath(p) for p in shards]
    if not paths:
        raise InvalidArgumentError("commit_stream: no token file")
    if views is None:
        views = {"x": (0, window - 1), "y": (1, window - 1)}
    desc: Dict[str, Any] = {
        "token_dtype": token_dtype, "output_dtype": output_dtype, "window": window,
        "views": [{"name": n, "start": int(v[0]), "length": int(v[1])} for n, v in sorted(views.items())],
        "shards": [],
    }
    for p in paths:
        root, tokens = shard_root_file(p, token_dtype)
        desc["shards"].append({"tokens": tokens, "root": root.hex()})
    stream = Stream(desc)  # validated before anything is written
    base = os.path.dirname(os.path.abspath(os.fspath(out)))
    doc = {"format": STREAM_FILE_FORMAT, "stream": desc,
           "files": [os.path.relpath(os.path.abspath(p), base) for p in paths]}
    tmp = f"{os.fspath(out)}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, out)
    return stream


def plan_windows(dataset_size: int, steps: int, batch_size: int, *, seed: int,
                 microbatches: int = 1) -> List[List[List[int]]]:
    """The schedule of a loop drawing random windows the way small-LLM
    repositories do, `torch.randint(n, (batch_size,), generator=g)` each
    step from g = torch.Generator().manual_seed(seed): step t's batch is
    the t-th draw, split into `microbatches` equal parts. With one token
    file and windows of block_size + 1 tokens, window i starts at token i
    and n = len(data) - block_size: exactly the offsets nanoGPT's
    get_batch draws with that generator."""
    if batch_size < 1 or steps < 1 or microbatches < 1 or batch_size % microbatches:
        raise InvalidArgumentError(f"plan_windows: {steps} steps of {batch_size} windows in {microbatches} equal "
                                   "micro-batches")
    g = torch.Generator().manual_seed(seed)
    m = batch_size // microbatches
    plan = []
    for _ in range(steps):
        ix = [int(i) for i in torch.randint(dataset_size, (batch_size,), generator=g)]
        plan.append([ix[j * m:(j + 1) * m] for j in range(microbatches)])
    return plan


def sample_tensors(payload: bytes) -> Dict[str, torch.Tensor]:
    """The tensors of a sample's safetensors bytes (copies, in name order)."""
    (n,) = struct.unpack_from("<Q", payload, 0)
    header = json.loads(payload[8:8 + n])
    data = memoryview(payload)[8 + n:]
    out: Dict[str, torch.Tensor] = {}
    for name in sorted(k for k in header if k != "__metadata__"):
        info = header[name]
        begin, end = info["data_offsets"]
        dtype = _TORCH_DTYPES[info["dtype"]]
        raw = bytearray(data[begin:end])
        t = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(info["shape"]).clone()
    return out


def stack_samples(payloads: Sequence[bytes]) -> Dict[str, torch.Tensor]:
    """The samples' tensors stacked along a new first dimension, by name."""
    samples = [sample_tensors(p) for p in payloads]
    return {name: torch.stack([s[name] for s in samples]) for name in samples[0]}
