"""Zero-copy views of the tensor-like objects that lack the buffer protocol.

pot._pot takes any object with the buffer protocol directly (bytes,
bytearray, memoryview, numpy arrays, array.array, mmap...). For anything
else its typemaps call as_buffer(), which exposes, without copying:

  - CPU torch tensors (strided, contiguous; any dtype, bfloat16 included),
  - objects with __array_interface__ whose data is C-contiguous.

The view keeps the object alive while it exists.
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional, Tuple

from ._errors import InvalidArgumentError


def _raw_view(address: int, nbytes: int, owner: Any, readonly: bool) -> memoryview:
    if nbytes == 0:
        return memoryview(b"")
    arr = (ctypes.c_ubyte * nbytes).from_address(address)
    arr._pot_owner = owner  # type: ignore[attr-defined]  # keeps the memory alive
    view = memoryview(arr)
    return view.toreadonly() if readonly else view


def _is_torch_tensor(obj: Any) -> bool:
    t = type(obj)
    return any(c.__module__ == "torch" and c.__name__ == "Tensor" for c in t.__mro__)


def _torch_view(t: Any) -> memoryview:
    if t.device.type != "cpu":
        raise TypeError(f"pot reads CPU tensors only, not a tensor on {t.device} (call .cpu())")
    if str(t.layout) != "torch.strided":
        raise TypeError(f"pot reads strided tensors only, not {t.layout}")
    if not t.is_contiguous():
        raise InvalidArgumentError("the tensor is not contiguous (call .contiguous())")
    if getattr(t, "is_conj", None) is not None and (t.is_conj() or t.is_neg()):
        raise InvalidArgumentError("the tensor has a lazy conjugate/negative bit (call .resolve_conj()/.resolve_neg())")
    t = t.detach()
    return _raw_view(t.data_ptr(), t.element_size() * t.numel(), t, readonly=False)


def _c_contiguous(shape: Tuple[int, ...], strides: Optional[Tuple[int, ...]], itemsize: int) -> bool:
    if strides is None:
        return True
    expected = itemsize
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


def _array_interface_view(obj: Any, ai: Any) -> memoryview:
    data = ai.get("data")
    shape = tuple(ai.get("shape", ()))
    typestr = ai.get("typestr", "|u1")
    itemsize = int(typestr[2:]) if len(typestr) > 2 and typestr[2:].isdigit() else 0
    if not itemsize:
        raise TypeError(f"unsupported __array_interface__ typestr {typestr!r}")
    if not isinstance(data, tuple):
        if data is None:
            raise TypeError("__array_interface__ without a data pointer")
        return memoryview(data)  # a buffer object
    if not _c_contiguous(shape, ai.get("strides"), itemsize):
        raise InvalidArgumentError("the array is not C-contiguous")
    n = itemsize
    for dim in shape:
        n *= dim
    return _raw_view(int(data[0]), n, obj, readonly=bool(data[1]))


def as_buffer(obj: Any) -> memoryview:
    """A zero-copy memoryview of a CPU torch tensor or an __array_interface__
    object (TypeError for anything else)."""
    if _is_torch_tensor(obj):
        return _torch_view(obj)
    ai = getattr(obj, "__array_interface__", None)
    if isinstance(ai, dict):
        return _array_interface_view(obj, ai)
    raise TypeError(f"a bytes-like object is required, not '{type(obj).__name__}'")


def hold(obj: Any) -> memoryview:
    """A view of obj that keeps it exported: for the buffers that libpot
    borrows beyond a call (SafetensorsWriter). A bytearray cannot be resized
    while the view exists."""
    try:
        return memoryview(obj)
    except TypeError:
        return as_buffer(obj)
