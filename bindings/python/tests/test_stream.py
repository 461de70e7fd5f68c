"""Token-stream datasets from Python (docs/PROTOCOL.md 15.1): a train.bin of
uint16 tokens committed where it lies, windows proven from it and checked
into their samples (x and y shifted by one token), a forged proof refused."""
import os
from array import array

import pytest

import pot


def write_tokens(path, n, seed):
    a = array("H", [(seed + 31 * j) % 50257 for j in range(n)])
    assert a.itemsize == 2
    with open(path, "wb") as f:
        a.tofile(f)  # little-endian on every machine pot supports


def stream_of(tmp_path, window=33):
    shards = []
    for s, n in enumerate((4000, 1500)):
        path = tmp_path / f"train{s}.bin"
        write_tokens(path, n, s)
        root, tokens = pot.shard_root_file(path, "U16")
        assert tokens == n
        shards.append({"tokens": tokens, "root": root.hex()})
    return pot.Stream({"token_dtype": "U16", "output_dtype": "I64", "window": window,
                       "views": [{"name": "x", "start": 0, "length": window - 1},
                                 {"name": "y", "start": 1, "length": window - 1}],
                       "shards": shards})


def test_windows_prove_their_samples(tmp_path):
    s = stream_of(tmp_path)
    assert s.size == (4000 - 32) + (1500 - 32)
    assert pot.Stream.decode(s.encode()).root == s.root
    assert pot.Stream(s.to_dict()).root == s.root
    for i in (0, 2030, 3967, 3968, s.size - 1):
        shard, offset = s.locate(i)
        proof = s.prove_window(i, tmp_path / f"train{shard}.bin")
        sample = s.check_window(i, proof)
        assert s.sample(i, tmp_path / f"train{shard}.bin") == sample
        path = tmp_path / "sample.safetensors"
        path.write_bytes(sample)
        with pot.Safetensors(path) as f:
            assert f.names == ["x", "y"]
            y = array("q", f.tensor_data("y"))
            x = array("q", f.tensor_data("x"))
        assert list(x[1:]) == list(y[:-1])
        assert y[0] == (shard + 31 * (offset + 1)) % 50257
        forged = bytearray(proof)
        forged[20] ^= 1
        with pytest.raises(pot.ProofMismatchError):
            s.check_window(i, bytes(forged))
    with pytest.raises(pot.OutOfRangeError):
        s.locate(s.size)


def test_descriptors_are_checked(tmp_path):
    good = stream_of(tmp_path).to_dict()
    for change, match in (({"window": 1}, "window"), ({"token_dtype": "F32"}, "token_dtype"),
                          ({"views": []}, "views"), ({"extra": 0}, "extra")):
        with pytest.raises(pot.InvalidArgumentError, match=match):
            pot.Stream({**good, **change})
    # A shard file that is not the shard the dataset names.
    s = pot.Stream(good)
    with pytest.raises(pot.InvalidArgumentError, match="bytes, the dataset says"):
        s.prove_window(0, tmp_path / "train1.bin")
    with pytest.raises(pot.IoError):
        pot.shard_root_file(tmp_path / "missing.bin")
