"""Input buffers: every buffer-protocol object, numpy arrays and CPU torch
tensors give the same digests, without a copy."""

import array
import mmap
import tracemalloc

import pytest

import pot
from conftest import stream

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

N = 4096  # float32 elements
RAW = stream("buffers", 4 * N)
WANT = pot.tensor_digest("x", pot.DType.F32, [N], RAW)


class ArrayInterface:
    """An object that only has __array_interface__ (as some libraries export)."""

    def __init__(self, arr):
        self._arr = arr
        self.__array_interface__ = arr.__array_interface__


def sources():
    a = np.frombuffer(RAW, dtype=np.float32).copy()
    t = torch.from_numpy(a.copy())
    m = mmap.mmap(-1, len(RAW))
    m.write(RAW)
    return {
        "bytes": RAW,
        "bytearray": bytearray(RAW),
        "memoryview": memoryview(RAW),
        "memoryview_cast": memoryview(bytearray(RAW)).cast("f"),
        "memoryview_slice": memoryview(b"pad" + RAW)[3:],
        "array.array": array.array("f", RAW),
        "mmap": m,
        "numpy": a,
        "numpy_2d": a.reshape(64, 64),
        "numpy_u8": a.view(np.uint8),
        "numpy_scalarless_slice": np.concatenate([a, a])[:N],
        "torch": t,
        "torch_2d": t.reshape(64, 64),
        "torch_requires_grad": t.clone().requires_grad_(True),
        "torch_offset_view": torch.cat([torch.zeros(3), t])[3:],
        "array_interface": ArrayInterface(a),
    }


@pytest.mark.parametrize("name", sorted(sources()))
def test_same_digest(name):
    src = sources()[name]
    assert pot.tensor_digest("x", pot.DType.F32, [N], src) == WANT
    assert pot.sha256(src) == pot.sha256(RAW)
    with pot.State() as s:
        s.add_tensor("x", "F32", [N], src)
        assert s.digest() == pot.state_digest([("x", "F32", [N], RAW)])


def test_shapes_from_numpy_and_torch():
    a = np.frombuffer(RAW, dtype=np.float32).reshape(16, 256)
    assert pot.tensor_digest("x", "F32", a.shape, a) == pot.tensor_digest("x", "F32", [16, 256], RAW)
    assert pot.tensor_digest("x", "F32", torch.from_numpy(a.copy()).shape, a) == \
        pot.tensor_digest("x", "F32", (16, 256), RAW)
    assert pot.tensor_digest("x", "F32", np.array([16, 256], dtype=np.uint64), a) == \
        pot.tensor_digest("x", "F32", [16, 256], RAW)


def test_bfloat16_and_bool_tensors():
    t = torch.arange(10, dtype=torch.float32).to(torch.bfloat16)
    raw = t.view(torch.int16).numpy().tobytes()
    assert pot.tensor_digest("b", "BF16", t.shape, t) == pot.tensor_digest("b", "BF16", [10], raw)
    b = torch.tensor([True, False, True])
    assert pot.tensor_digest("m", "BOOL", [3], b) == pot.tensor_digest("m", "BOOL", [3], b"\1\0\1")
    s = torch.tensor(0.5, dtype=torch.float64)  # 0-dim
    assert pot.tensor_digest("lr", "F64", [], s) == pot.tensor_digest("lr", "F64", [], np.float64(0.5))
    e = torch.zeros(0)
    assert pot.tensor_digest("e", "F32", [0], e) == pot.tensor_digest("e", "F32", [0], b"")


def test_non_contiguous_inputs_are_refused():
    a = np.frombuffer(RAW, dtype=np.float32).reshape(64, 64)
    with pytest.raises((ValueError, BufferError)):
        pot.tensor_digest("x", "F32", [N], a.T)
    t = torch.from_numpy(a.copy())
    with pytest.raises(pot.InvalidArgumentError, match="contiguous"):
        pot.tensor_digest("x", "F32", [N], t.t())
    with pytest.raises(TypeError, match="strided"):
        pot.sha256(t.to_sparse())
    # After .contiguous() both digest as the transposed data.
    want = pot.tensor_digest("x", "F32", [N], np.ascontiguousarray(a.T))
    assert pot.tensor_digest("x", "F32", [N], t.t().contiguous()) == want
    with pytest.raises(TypeError, match="bytes-like"):
        pot.sha256(object())
    with pytest.raises(TypeError):
        pot.sha256([1, 2, 3])


def test_no_copy_of_large_inputs():
    """A 32 MiB numpy array and torch tensor are digested in place: Python
    allocates next to nothing meanwhile."""
    a = np.ones(8 << 20, dtype=np.float32)
    t = torch.ones(8 << 20)
    tracemalloc.start()
    try:
        pot.tensor_digest("x", "F32", a.shape, a, 1)
        pot.tensor_digest("x", "F32", t.shape, t, 1)
        pot.sha256(memoryview(a))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{peak} bytes allocated while digesting 32 MiB inputs"


def test_writer_keeps_borrowed_buffers(tmp_path):
    """libpot borrows the writer's tensors until it is written or freed: the
    writer keeps them alive and un-resizable meanwhile."""
    ba = bytearray(RAW)
    path = tmp_path / "s.safetensors"
    w = pot.SafetensorsWriter()
    w.add("a", "F32", [N], ba)
    w.add("t", "F32", [N], torch.from_numpy(np.frombuffer(RAW, dtype=np.float32).copy()))  # only ref: the writer
    w.add("n", "F32", [64, 64], np.frombuffer(RAW, dtype=np.float32).reshape(64, 64).copy())
    with pytest.raises(BufferError):
        ba.extend(b"1234")  # would move the bytes libpot points at
    import gc
    gc.collect()
    w.write(path)
    w.close()
    ba.extend(b"1234")  # released on close
    with pot.Safetensors(path) as f:
        assert f.names == ["a", "n", "t"]
        for name in f.names:
            assert f.tensor_data(name) == RAW
        shapes = {"a": [N], "n": [64, 64], "t": [N]}
        assert f.digest() == pot.state_digest([(n, "F32", shapes[n], RAW) for n in shapes])


def test_tensor_view_is_zero_copy_and_outlives_close(tmp_path):
    path = tmp_path / "v.safetensors"
    with pot.SafetensorsWriter() as w:
        w.add("x", "F32", [N], RAW)
        w.write(path)
    f = pot.Safetensors(path)
    v = f.tensor_view("x")
    assert v.readonly and v.nbytes == len(RAW)
    f.close()  # the mapping stays while the view lives
    assert bytes(v) == RAW and np.frombuffer(v, dtype=np.float32).shape == (N,)
    assert pot.sha256(v) == pot.sha256(RAW)
    del v
