"""safetensors interoperability with the official package, both directions,
and the pot CLI's digests against the independent implementation."""
import json
import os
import subprocess

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

import independent as ind

POT = os.environ["POT_CLI"]
FIXTURE = os.environ["POT_FIXTURE"]
NP_TO_ST = {np.bool_: "BOOL", np.uint8: "U8", np.int8: "I8", np.int16: "I16", np.uint16: "U16",
            np.int32: "I32", np.uint32: "U32", np.int64: "I64", np.uint64: "U64", np.float16: "F16",
            np.float32: "F32", np.float64: "F64"}


def pot_json(*args):
    out = subprocess.run([POT, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def independent_state(tensors: dict) -> str:
    return ind.state_digest({
        n: ind.tensor_digest(n, NP_TO_ST[a.dtype.type], list(a.shape), np.ascontiguousarray(a).tobytes())
        for n, a in tensors.items()}).hex()


def test_official_writer_pot_reader(tmp_path):
    rng = np.random.default_rng(7)
    tensors = {
        "model.layers.0.weight": rng.standard_normal((64, 33)).astype(np.float32),
        "model.layers.0.bias": rng.standard_normal(33).astype(np.float32),
        "model.embed": rng.standard_normal((300, 257)).astype(np.float16),  # > 2 chunks
        "optimizer.step": np.array(12, dtype=np.int64),
        "mask": rng.integers(0, 2, (4, 4)).astype(np.bool_),
        "ids": rng.integers(-5, 5, 17).astype(np.int8),
        "big": rng.standard_normal(70_000).astype(np.float64),
        "empty": np.zeros((0, 3), dtype=np.float32),
        "nan_and_negzero": np.array([np.nan, -0.0, np.inf], dtype=np.float32),
    }
    for t in [np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.uint64]:
        tensors["t_" + np.dtype(t).name] = rng.integers(0, 100, (3, 2)).astype(t)
    path = tmp_path / "official.safetensors"
    save_file(tensors, str(path), metadata={"format": "np"})
    got = pot_json("hash", "state", str(path), "--tensors")
    assert got["tensors"] == len(tensors)
    assert got["digest"] == independent_state(tensors)
    for n, a in tensors.items():
        want = ind.tensor_digest(n, NP_TO_ST[a.dtype.type], list(a.shape), a.tobytes()).hex()
        assert got["tensor_digests"][n] == want, n
    # Thread count does not change the digest.
    assert pot_json("hash", "state", str(path), "--threads", "1")["digest"] == got["digest"]


def test_pot_writer_official_reader(tmp_path):
    path = tmp_path / "pot.safetensors"
    subprocess.run([FIXTURE, str(path)], check=True)
    loaded = load_file(str(path))
    assert sorted(loaded) == sorted(NP_TO_ST.values())
    for name, arr in loaded.items():
        assert NP_TO_ST[arr.dtype.type] == name
        assert arr.shape == (3, 5)
        want = bytearray(ind.stream(name, arr.nbytes))
        if name == "BOOL":
            want = bytearray(b & 1 for b in want)
        assert arr.tobytes() == bytes(want), name
    with safe_open(str(path), framework="np") as f:
        assert f.metadata() == {"written_by": "pot"}
    assert pot_json("hash", "state", str(path))["digest"] == independent_state(loaded)


@pytest.mark.parametrize("header, why", [
    (b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}}', "offsets past the data"),
    (b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', "duplicate key"),
    (b'not json', "not JSON"),
])
def test_cli_rejects_hostile_files_with_one_line_error(tmp_path, header, why):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header + bytes(8))
    out = subprocess.run([POT, "hash", "state", str(path)], capture_output=True, text=True)
    assert out.returncode == 2, why
    assert out.stdout == ""
    assert out.stderr.startswith("pot: error: ") and out.stderr.count("\n") == 1, out.stderr
