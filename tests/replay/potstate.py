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


# oneDNN's ISA lists, written from oneDNN's documentation of each release
# (dnnl_cpu_isa_t, "CPU Dispatcher Control"), independently of libpot's
# (src/spec/cpu_isa.cpp). An entry is (level, parents, /proc/cpuinfo flags
# it adds); the kernel lists a flag only when the OS saves its registers.
# An ISA is itself and its parents' ISAs; the effective ISA is the highest
# entry the CPU has and the ONEDNN_MAX_CPU_ISA cap contains (later entries
# rank higher; the AVX-512 branch outranks the AVX2-VNNI one). Levels in
# capitals are the ones whose name depends on the release (_LEVEL_NAMES).
_LIST_2_6 = [
    ("sse41", (), {"sse4_1"}),
    ("avx", ("sse41",), {"avx"}),
    ("avx2", ("avx",), {"avx2"}),
    ("avx2_vnni", ("avx2",), {"avx_vnni"}),
    ("avx512_core", ("avx2",), {"avx512f", "avx512dq", "avx512bw", "avx512vl"}),
    ("avx512_core_vnni", ("avx512_core",), {"avx512_vnni"}),
    ("avx512_core_bf16", ("avx512_core_vnni",), {"avx512_bf16"}),
    # 2.6: AMX on AVX512-BF16, no FP16 level.
    ("AMX", ("avx512_core_bf16",), {"amx_tile", "amx_int8", "amx_bf16"}),
]
_LIST_3 = [
    ("sse41", (), {"sse4_1"}),
    ("avx", ("sse41",), {"avx"}),
    ("avx2", ("avx",), {"avx2"}),
    ("avx2_vnni", ("avx2",), {"avx_vnni"}),
    ("avx2_vnni_2", ("avx2_vnni",), {"avx_vnni_int8", "avx_ne_convert"}),
    ("avx512_core", ("avx2",), {"avx512f", "avx512dq", "avx512bw", "avx512vl"}),
    ("avx512_core_vnni", ("avx512_core",), {"avx512_vnni"}),
    ("avx512_core_bf16", ("avx512_core_vnni",), {"avx512_bf16"}),
    # 3.x: the FP16 level stands on AVX512-BF16 and AVX-VNNI; AMX on it.
    ("FP16", ("avx512_core_bf16", "avx2_vnni"), {"avx512_fp16"}),
    ("AMX", ("FP16",), {"amx_tile", "amx_int8", "amx_bf16"}),
    ("AMX_FP16", ("AMX",), {"amx_fp16"}),
]
_LEVEL_NAMES = {  # release -> the names of the capital levels
    "2.6": {"AMX": "avx512_core_amx"},
    "3.0": {"FP16": "avx512_core_fp16", "AMX": "avx512_core_amx", "AMX_FP16": "avx512_core_amx_fp16"},
    "3.6": {"FP16": "avx10_1_512", "AMX": "avx10_1_512_amx", "AMX_FP16": "avx10_1_512_amx_fp16"},
}


def onednn_version(config=None):
    """(major, minor) of the oneDNN torch carries, from its build report
    (torch.__config__.show(): "Intel(R) MKL-DNN v3.13.3 ..."); None if it
    names none."""
    m = re.search(r"(?:MKL-DNN|oneDNN) v(\d+)\.(\d+)", torch.__config__.show() if config is None else config)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _release(version):
    """The release whose list and names `version` follows, or None."""
    major, minor = version
    if (major, minor) == (2, 6):
        return "2.6", _LIST_2_6
    if major == 3:
        return ("3.0" if minor <= 5 else "3.6"), _LIST_3
    return None


def onednn_level_name(level, version):
    """The name release `version` gives a level of its list."""
    release, _ = _release(version)
    return _LEVEL_NAMES[release].get(level, level)


def onednn_caps(version):
    """Every ONEDNN_MAX_CPU_ISA value release `version` takes (lower case),
    with the level each one caps at; 3.6 on also take the 3.0 names."""
    release, entries = _release(version)
    caps = {onednn_level_name(level, version): level for level, _, _ in entries}
    if release == "3.6":
        caps.update({name: level for level, name in _LEVEL_NAMES["3.0"].items()})
    return caps


def derived_onednn_isa(flags=None, cap=None, version=None):
    """oneDNN's effective ISA for the CPU flags under the ONEDNN_MAX_CPU_ISA
    cap, named as oneDNN `version` names it (defaults: this machine's
    /proc/cpuinfo, environment and torch). A cap the release does not name
    is ignored, as oneDNN ignores it."""
    if flags is None:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^flags\s*:(.*)$", f.read(), re.M)
        flags = set(m.group(1).split()) if m else set()
    if cap is None:
        cap = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "all"
    version = version or onednn_version()
    _, entries = _release(version)
    contents = {}
    for level, parents, _ in entries:
        contents[level] = set().union(*(contents[p] for p in parents)) | {level}
    capped = onednn_caps(version).get(cap.lower())
    allowed = contents[capped] if capped else set(contents)
    have = set()
    for level, parents, need in entries:
        if need <= flags and all(p in have for p in parents):
            have.add(level)
    best = "none"
    for level, _, _ in entries:  # later entries rank higher
        if contents[level] <= have and contents[level] <= allowed:
            best = onednn_level_name(level, version)
    return best


# How oneDNN describes its ISA in its verbose output ("onednn_verbose,...,
# info,cpu,isa:<description>"), per level; " (preview support)" and trailing
# blanks stripped. 2.6 describes AMX with only one of INT8 and BF16 apart,
# and runs it as avx512_core_bf16.
_DESCRIPTIONS = {
    "Intel 64": "none",
    "Intel SSE4.1": "sse41",
    "Intel AVX": "avx",
    "Intel AVX2": "avx2",
    "Intel AVX2 with Intel DL Boost": "avx2_vnni",
    "Intel AVX2 with Intel DL Boost, float16 and bfloat16 support": "avx2_vnni_2",
    "Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions": "avx512_core",
    "Intel AVX-512 with Intel DL Boost": "avx512_core_vnni",
    "Intel AVX-512 with Intel DL Boost and bfloat16 support": "avx512_core_bf16",
    "Intel AVX-512 with Intel DL Boost and bfloat16 support on Ymm/Zmm": "avx512_core_bf16",
    "Intel AVX-512 with Intel DL Boost and bfloat16 support and Intel AMX with bfloat16 support": "avx512_core_bf16",
    "Intel AVX-512 with Intel DL Boost and bfloat16 support and Intel AMX with 8-bit integer support":
        "avx512_core_bf16",
    "Intel AVX-512 with Intel DL Boost and bfloat16 support and Intel AMX with bfloat16 and 8-bit integer support":
        "AMX",
    "Intel AVX-512 with float16, Intel DL Boost and bfloat16 support": "FP16",
    # oneDNN 3.6 on names the FP16 level avx10_1_512 and describes it so.
    "Intel AVX 10.1": "FP16",
    "Intel AVX-512 with float16, Intel DL Boost and bfloat16 support and Intel AMX with bfloat16 and 8-bit integer "
    "support": "AMX",
    "Intel AVX-512 with float16, Intel DL Boost and bfloat16 support and Intel AMX with bfloat16, float16 and 8-bit "
    "integer support": "AMX_FP16",
}

# Runs one convolution through oneDNN in a fresh process with verbose output
# on, and prints oneDNN's own API answer where the library's C API is
# reachable (Debian's torch), then oneDNN's verbose lines.
_PROBE = """
import sys
sys.path.insert(0, %r)
import torch, potstate
torch.nn.functional.conv2d(torch.ones(8, 16, 32, 32), torch.ones(32, 16, 3, 3))
print("api:%%s" %% potstate.onednn_api_isa(), flush=True)
"""


def onednn_reported_isa(env=None):
    """oneDNN's own answer in a fresh process under `env` (added to this
    one's): (api, reported, version) where api is dnnl_get_effective_cpu_isa
    named by dnnl_cpu_isa2str (None where the C API is hidden: the PyPI
    wheels), reported is the ISA oneDNN's verbose output describes, named as
    its release names it, and version is the oneDNN release it prints.
    Raises AssertionError when oneDNN prints no ISA or one not described here."""
    import subprocess
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([sys.executable, "-c", _PROBE % here], capture_output=True, text=True, check=True,
                       env={**os.environ, "ONEDNN_VERBOSE": "1", **(env or {})})
    api = re.search(r"^api:(.*)$", p.stdout, re.M).group(1)
    m = re.search(r"^onednn_verbose,(?:v1,)?info,oneDNN v(\d+)\.(\d+)", p.stdout, re.M)
    d = re.search(r"^onednn_verbose,(?:v1,)?info,cpu,isa:(.*)$", p.stdout, re.M)
    assert m and d, f"oneDNN printed no version or ISA line under {env}:\n{p.stdout[:2000]}"
    version = (int(m.group(1)), int(m.group(2)))
    described = d.group(1).replace(" (preview support)", "").strip()
    assert described in _DESCRIPTIONS, f"oneDNN {version} describes an ISA potstate does not know: {described!r}"
    level = _DESCRIPTIONS[described]
    return (None if api == "None" else api), onednn_level_name(level, version), version


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
