"""Small helpers shared by the PyTorch side of the replay determinism test.

Dependencies: the Python standard library and torch (plus the numpy that
torch uses for Tensor.numpy()). Everything here follows docs/PROTOCOL.md:

- section 2: ``tagged(tag, body)``;
- section 9: ``step_seed(base_seed, run_id, t)``;
- section 8: the safetensors files (``write_safetensors`` / ``read_safetensors``),
  written from the format description, not copied from the safetensors package;
- the canonical naming of a training state (``canonical_state``), which the
  C++ replay (src/replay/) reads back:

      param/<name>              every parameter of task.named_parameters()
                                (tied parameters appear once, under their first name)
      buffer/<name>             every buffer of task.named_buffers()
      optim/<param>/<key>       torch.optim's per-parameter state, key in
                                step, exp_avg, exp_avg_sq, max_exp_avg_sq, momentum_buffer
      hparam/lr                 F64 scalar: the lr the NEXT step will use
      rng/cpu                   U8 [5056]: torch.get_rng_state() (single_seed runs only)

- section 14.4: ``hardware_class()``, this process's hardware class, read from
  torch's own report and oneDNN's C API (not from libpot).
"""

import ctypes
import hashlib
import json
import os
import platform
import re
import struct
import sys

import torch

ATEN_CAPABILITIES = {"NO AVX": "default", "DEFAULT": "default", "AVX2": "avx2", "AVX512": "avx512", "VSX": "vsx",
                     "Z VECTOR": "zvector"}


def hardware_class() -> str:
    """cpu-<arch>/aten:<capability>/onednn:<isa> (docs/PROTOCOL.md 14.4) of this
    process: ATen's CPU capability as torch.__config__.show() prints it, and
    oneDNN's effective ISA from the libdnnl torch loaded."""
    m = re.search(r"CPU capability usage: ([^\n]*)", torch.__config__.show())
    if not m or m.group(1).strip() not in ATEN_CAPABILITIES:
        raise SystemExit("potstate: torch does not report a known CPU capability")
    aten = ATEN_CAPABILITIES[m.group(1).strip()]
    isa = "none"
    if torch.backends.mkldnn.is_available():
        isa = onednn_api_isa()
        if isa is None:  # oneDNN linked into torch with its API hidden (PyPI's wheels)
            isa = derived_onednn_isa()
    return f"cpu-{platform.machine()}/aten:{aten}/onednn:{isa}"


def onednn_api_isa():
    """oneDNN's own answer, from the libdnnl torch loaded (Debian's torch);
    None when no libdnnl is loaded."""
    try:
        dnnl = ctypes.CDLL("libdnnl.so.2", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return None
    dnnl.dnnl_get_effective_cpu_isa.restype = ctypes.c_int
    dnnl.dnnl_cpu_isa2str.restype = ctypes.c_char_p
    dnnl.dnnl_cpu_isa2str.argtypes = [ctypes.c_int]
    isa = dnnl.dnnl_cpu_isa2str(dnnl.dnnl_get_effective_cpu_isa()).decode()
    return isa[len("cpu_isa_"):] if isa.startswith("cpu_isa_") else isa


# oneDNN's ISA ladder, lowest first: (name, parent, /proc/cpuinfo flags it
# adds). The kernel lists a flag only when the OS saves its registers. An
# ISA is its chain of parents; the effective ISA is the highest one the CPU
# has and the ONEDNN_MAX_CPU_ISA cap contains (the AVX-512 branch outranks
# the AVX2-VNNI one). The C++ side derives the same from CPUID
# (src/commit/cpu_isa.cpp); this is written from oneDNN's documentation,
# independently of it.
_ISA_LADDER = [
    ("sse41", None, {"sse4_1"}),
    ("avx", "sse41", {"avx"}),
    ("avx2", "avx", {"avx2"}),
    ("avx2_vnni", "avx2", {"avx_vnni"}),
    ("avx2_vnni_2", "avx2_vnni", {"avx_vnni_int8", "avx_ne_convert"}),
    ("avx512_core", "avx2", {"avx512f", "avx512dq", "avx512bw", "avx512vl"}),
    ("avx512_core_vnni", "avx512_core", {"avx512_vnni"}),
    ("avx512_core_bf16", "avx512_core_vnni", {"avx512_bf16"}),
    ("avx10_1_512", "avx512_core_bf16", {"avx512_fp16"}),
    ("avx10_1_512_amx", "avx10_1_512", {"amx_tile", "amx_int8", "amx_bf16"}),
    ("avx10_1_512_amx_fp16", "avx10_1_512_amx", {"amx_fp16"}),
]
_CAP_ALIASES = {"avx512_core_fp16": "avx10_1_512", "avx512_core_amx": "avx10_1_512_amx",
                "avx512_core_amx_fp16": "avx10_1_512_amx_fp16"}


def derived_onednn_isa(flags=None, cap=None):
    """oneDNN's effective ISA for the CPU flags under the ONEDNN_MAX_CPU_ISA
    cap (default: this machine's /proc/cpuinfo and environment)."""
    if flags is None:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^flags\s*:(.*)$", f.read(), re.M)
        flags = set(m.group(1).split()) if m else set()
    if cap is None:
        cap = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "all"
    chain = {}
    for name, parent, _ in _ISA_LADDER:
        chain[name] = (chain[parent] if parent else set()) | {name}
    cap = _CAP_ALIASES.get(cap.lower(), cap.lower())
    allowed = set(chain) if cap == "all" else chain[cap]
    have = set()
    for name, parent, need in _ISA_LADDER:
        if need <= flags and (parent is None or parent in have):
            have.add(name)
    best = "none"
    for name, _, _ in _ISA_LADDER:  # later entries rank higher
        if chain[name] <= have and chain[name] <= allowed:
            best = name
    return best


if sys.byteorder != "little":  # the raw bytes below are the machine's
    raise RuntimeError("potstate assumes a little-endian machine")

# --------------------------------------------------------------------------
# Hashing (PROTOCOL.md sections 2 and 9)


def tagged(tag: str, body: bytes) -> bytes:
    """SHA-256(u8(len(tag)) || tag || body)."""
    t = tag.encode("ascii")
    if not 2 <= len(t) <= 255:
        raise ValueError("tag length must be 2..255 bytes")
    return hashlib.sha256(bytes([len(t)]) + t + bytes(body)).digest()


def _u64le(v: int) -> bytes:
    return struct.pack("<Q", v)


def step_seed(base_seed: int, run_id: bytes, t: int) -> int:
    """The per_step seed of step t of run run_id (32 bytes): u64 LE of the
    first 8 bytes of tagged("pot/v2/seed", u64le(base) || run_id || u64le(t))."""
    if len(run_id) != 32:
        raise ValueError("a run id is 32 bytes")
    d = tagged("pot/v2/seed", _u64le(base_seed) + bytes(run_id) + _u64le(t))
    return int.from_bytes(d[:8], "little")


def program_digest(path) -> bytes:
    """tagged("pot/v1/program", file bytes): the spec's model_program_digest."""
    with open(path, "rb") as f:
        return tagged("pot/v1/program", f.read())


# --------------------------------------------------------------------------
# safetensors (PROTOCOL.md section 8)

_DTYPE_NAMES = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
_DTYPES = {v: k for k, v in _DTYPE_NAMES.items()}
_ELEMENT_SIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def dtype_name(dtype: torch.dtype) -> str:
    try:
        return _DTYPE_NAMES[dtype]
    except KeyError:
        raise ValueError("unsupported dtype %s" % dtype) from None


def tensor_bytes(t: torch.Tensor) -> bytes:
    """The raw little-endian row-major bytes of t."""
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: reinterpret the bits
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def _name_key(name: str) -> bytes:
    return name.encode("utf-8")  # bytewise order of the UTF-8 bytes


def safetensors_bytes(tensors: dict) -> bytes:
    """The file image: u64le(N) || header (padded with spaces to a multiple of 8) || data."""
    header = {}
    chunks = []
    offset = 0
    for name in sorted(tensors, key=_name_key):
        if not isinstance(name, str) or not name or "\0" in name:
            raise ValueError("bad tensor name %r" % (name,))
        if name == "__metadata__":
            raise ValueError("'__metadata__' is not a tensor name")
        t = tensors[name]
        dt = dtype_name(t.dtype)
        b = tensor_bytes(t)
        shape = [int(s) for s in t.shape]
        n = _ELEMENT_SIZE[dt]
        for s in shape:
            n *= s
        if n != len(b):
            raise AssertionError("%s: %d bytes for shape %s %s" % (name, len(b), shape, dt))
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [offset, offset + len(b)]}
        chunks.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(chunks)


def write_bytes_atomic(path, data: bytes) -> None:
    """Write a temporary file next to path, fsync it, rename it into place."""
    path = os.fspath(path)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_safetensors(path, tensors: dict) -> None:
    write_bytes_atomic(path, safetensors_bytes(tensors))


def parse_safetensors(data: bytes) -> dict:
    if len(data) < 8:
        raise ValueError("safetensors: shorter than 8 bytes")
    (n,) = struct.unpack_from("<Q", data, 0)
    if 8 + n > len(data):
        raise ValueError("safetensors: header length %d exceeds the file" % n)
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = memoryview(data)[8 + n:]
    out = {}
    spans = []
    for name, e in header.items():
        if name == "__metadata__":
            continue
        dt = e["dtype"]
        if dt not in _DTYPES:
            raise ValueError("safetensors: %s: unsupported dtype %s" % (name, dt))
        shape = [int(s) for s in e["shape"]]
        begin, end = (int(v) for v in e["data_offsets"])
        size = _ELEMENT_SIZE[dt]
        for s in shape:
            size *= s
        if not 0 <= begin <= end <= len(body) or end - begin != size:
            raise ValueError("safetensors: %s: bad data_offsets" % name)
        spans.append((begin, end))
        dtype = _DTYPES[dt]
        if size == 0:
            out[name] = torch.empty(shape, dtype=dtype)
            continue
        raw = bytearray(body[begin:end])  # a private, writable copy
        if dtype == torch.bfloat16:
            t = torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16)
        else:
            t = torch.frombuffer(raw, dtype=dtype)
        out[name] = t.reshape(shape)
    pos = 0
    for begin, end in sorted(spans):
        if begin != pos:
            raise ValueError("safetensors: gap or overlap in the data section")
        pos = end
    if pos != len(body):
        raise ValueError("safetensors: trailing bytes in the data section")
    return out


def read_safetensors(path) -> dict:
    with open(path, "rb") as f:
        return parse_safetensors(f.read())


# --------------------------------------------------------------------------
# Canonical training state

OPTIM_KEYS = ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "square_avg", "acc_delta", "sum",
              "grad_avg", "exp_inf", "mu_product")


def canonical_state(task_module: torch.nn.Module, optimizer, rng: bool) -> dict:
    """The named tensors of the training state, under the canonical names.

    The tensors are detached views of the live ones: write them out before the
    next step changes them.
    """
    state = {}
    names = {}
    for name, p in task_module.named_parameters():  # tied parameters: first name only
        state["param/" + name] = p.detach()
        names[id(p)] = name
    for name, b in task_module.named_buffers():
        state["buffer/" + name] = b.detach()
    if optimizer is not None:
        # One optimizer or a list of them (Muon and AdamW side by side): their
        # groups, in order, are the spec's groups 0, 1, ...; group g's rate is
        # hparam/lr (g = 0) or hparam/lr/<g>.
        optimizers = optimizer if isinstance(optimizer, (list, tuple)) else [optimizer]
        groups = [(o, g) for o in optimizers for g in o.param_groups]
        for gi, (opt, group) in enumerate(groups):
            for p in group["params"]:
                if id(p) not in names:
                    raise ValueError("canonical_state: an optimizer parameter is not a parameter of the task")
                st = opt.state.get(p, {})
                for key, v in st.items():
                    if key not in OPTIM_KEYS:
                        raise ValueError("canonical_state: unexpected optimizer state key %r" % key)
                    if v is None:
                        continue
                    if key == "step" and isinstance(v, (int, float)):
                        continue  # torch 1.13's RMSprop and Adadelta: a Python counter no update reads
                    if not isinstance(v, torch.Tensor):
                        raise ValueError("canonical_state: optimizer state %r is not a tensor" % key)
                    state["optim/%s/%s" % (names[id(p)], key)] = v.detach()
            state["hparam/lr" if gi == 0 else "hparam/lr/%d" % gi] = torch.tensor(float(group["lr"]),
                                                                                 dtype=torch.float64)
    if rng:
        state["rng/cpu"] = torch.get_rng_state()
    return state
