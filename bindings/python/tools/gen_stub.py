#!/usr/bin/env python3
"""Writes src/pot/_pot.pyi, the type stub of the SWIG module pot._pot, from
include/pot.h, following the typemaps of pot.i (which parameters are inputs,
which come back as outputs and as what).

Usage: tools/gen_stub.py [PATH/TO/pot.h] > src/pot/_pot.pyi
tests/test_stub.py checks that the committed stub is what this writes.
"""

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEADER = HERE.parent.parent.parent / "include" / "pot.h"
INTERNAL = {"pot_error_code", "pot_error_message", "pot_error_free", "pot_bytes_free"}
PATHS = {"path", "program_path", "pre_state_path", "post_state_path", "dir", "dataset_dir"}
ENUMS = {"pot_status", "pot_dtype", "pot_seed_policy", "pot_opening_check", "pot_witness_mode",
         "pot_verdict_outcome", "pot_losscheck_param", "pot_loss_flag_kind", "pot_verify_mode",
         "pot_schedule_rule", "pot_state_part"}
INTS = {"uint64_t", "int64_t", "uint32_t", "size_t", "int"} | ENUMS

# Multi-parameter typemaps: (C parameters) -> (Python inputs, Python outputs).
MULTI = [
    (("const uint64_t *shape", "size_t shape_len"), [("shape", "Sequence[int]")], []),
    (("const uint64_t *indices", "size_t indices_len"), [("indices", "Sequence[int]")], []),
    (("const uint32_t *microbatch_sizes", "size_t microbatch_sizes_len"), [("microbatch_sizes", "Sequence[int]")],
     []),
    (("const double *losses", "size_t losses_len"), [("losses", "Sequence[float]")], []),
    (("double *out", "size_t out_len"), [("out", "int")], [("out", "List[float]")]),  # out: the count
    (("uint64_t *out", "size_t out_len"), [("out", "int")], [("out", "List[int]")]),  # out: the count
    (("const uint8_t *const *entries", "const size_t *entries_lens", "size_t entries_len"),
     [("entries", "Sequence[Buffer]")], []),
    (("const uint8_t *const *tables", "const size_t *tables_lens", "size_t tables_len"),
     [("tables", "Sequence[Buffer]")], []),
    (("const uint64_t *flagged_steps", "size_t flagged_steps_len"), [("flagged_steps", "Sequence[int]")], []),
    (("const uint64_t **shape", "size_t *shape_len"), [], [("shape", "Tuple[int, ...]")]),
    (("const void **data", "size_t *data_len"), [], [("data_address", "int"), ("data_len", "int")]),
    # SWIG names a multi-parameter input after its first C parameter: here
    # `steps` is the number of rounds.
    (("uint64_t *steps", "size_t steps_len"), [("steps", "int")], [("steps", "List[int]")]),
    (("uint64_t *points", "size_t *points_len"), [], [("points", "List[int]")]),
    # SWIG names it `a_claims`: the pair (A's digests, B's digests).
    (("const pot_digest *a_claims", "const pot_digest *b_claims", "size_t claims_len"),
     [("a_claims", "ClaimPair")], []),
    (("uint64_t *indices", "size_t *indices_len", "uint32_t *microbatch_sizes", "size_t *microbatch_sizes_len",
      "const uint8_t *entry", "size_t entry_len"), [("indices", "Buffer")],
     [("indices", "List[int]"), ("microbatch_sizes", "List[int]")]),
]


def norm(p):
    return " ".join(p.replace("*", " * ").split()).replace(" * ", " *").replace("* *", "**").replace(" *const *",
                                                                                                     " *const *")


def split_param(p):
    m = re.match(r"(.*?)(\w+)(\[.*\])?$", p)
    return m.group(1).strip(), m.group(2), m.group(3)


def buffer_pair(a, b):
    ta, na, _ = split_param(a)
    tb, _, _ = split_param(b)
    return ta in ("const void *", "const uint8_t *") and tb == "size_t"


def convert(params):
    """(inputs, outputs) of a function's C parameters."""
    ins, outs = [], []
    params = [norm(p) for p in params if p != "void"]
    i = 0
    while i < len(params):
        for cparams, pins, pouts in MULTI:
            if tuple(params[i:i + len(cparams)]) == tuple(norm(c) for c in cparams):
                ins += pins
                outs += pouts
                i += len(cparams)
                break
        else:
            p = params[i]
            if i + 1 < len(params) and buffer_pair(p, params[i + 1]):
                ins.append((split_param(p)[1], "Buffer"))
                i += 2
                continue
            ctype, name, dim = split_param(p)
            i += 1
            if ctype == "pot_error **":
                continue
            if dim:
                outs.append((name, "str" if ctype == "char" else "bytes"))
            elif ctype.endswith("**") and ctype.startswith("pot_"):
                outs.append((name, ctype[:-3].strip()))
            elif ctype == "const char **":
                outs.append((name, "str"))
            elif ctype == "const char *":
                ins.append((name, "Optional[StrPath]" if name in PATHS else "Optional[Text]"))
            elif ctype == "const pot_digest *":
                ins.append((name, "Optional[Buffer]"))
            elif ctype == "pot_digest *":
                outs.append((name, "bytes"))
            elif ctype == "pot_bytes *":
                outs.append((name, "bytes"))
            elif ctype == "const pot_verify_result *":
                # pot.i reads a verification as (check, replayed, digest, bucket).
                ins.append((name, "VerifyFinding"))
            elif ctype in ("pot_verify_result *", "pot_replay_result *", "pot_bisection_info *"):
                outs.append((name, "Dict[str, Any]"))
            elif ctype == "const int64_t *":
                ins.append((name, "Optional[int]"))
            elif ctype.endswith("*") and ctype.rstrip(" *").replace("const ", "") in INTS | {"double"}:
                base = ctype.rstrip(" *")
                outs.append((name, "float" if base == "double" else "int"))
            elif ctype.endswith("*"):
                handle = ctype.replace("const ", "").rstrip(" *")
                assert handle.startswith("pot_"), p
                ins.append((name, f"Optional[{handle}]"))
            elif ctype == "double":
                ins.append((name, "float"))
            elif ctype in INTS:
                ins.append((name, "int"))
            else:
                raise SystemExit(f"gen_stub.py: no stub rule for parameter {p!r}")
    return ins, outs


def returns(ret, fname, outs):
    ret = ret.strip()
    if ret == "pot_status":
        if not outs:
            return "None", ""
        if len(outs) == 1:
            return outs[0][1], ""
        return "List[Any]", "  # [" + ", ".join(f"{n}: {t}" for n, t in outs) + "]"
    if ret == "void":
        return "None", ""
    if ret == "const char *":
        return ("Optional[str]" if fname == "pot_dtype_name" else "str"), ""
    if ret in INTS:
        return "int", ""
    raise SystemExit(f"gen_stub.py: no stub rule for the return type of {fname}: {ret!r}")


def main():
    header = Path(sys.argv[1]) if len(sys.argv) > 1 else HEADER
    text = header.read_text()
    code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = [
        '"""Type stub of pot._pot, the SWIG module generated from include/pot.h.',
        "",
        "Written by tools/gen_stub.py from pot.h and the typemaps of pot.i: buffers",
        "in (anything with the buffer protocol, CPU torch tensors), bytes out,",
        "handles as opaque proxy objects; a failed status raises pot.Error. A",
        "function with several outputs returns them as a list, in parameter order.",
        '"""',
        "",
        "import os",
        "from typing import Any, Dict, List, Optional, Sequence, Tuple, Union",
        "",
        "Buffer = Any  # an object with the buffer protocol, or a CPU torch tensor",
        "StrPath = Union[str, bytes, os.PathLike[str], os.PathLike[bytes]]",
        "Text = Union[str, bytes]",
        "VerifyFinding = Tuple[int, bool, Buffer, int, Buffer]"
        "  # (check, replayed, replayed_state_digest, norm_bucket, gradient_digest)",
        "ClaimPair = Tuple[Sequence[Buffer], Sequence[Buffer]]  # (A's digests, B's digests)",
        "",
    ]
    for macro, value in re.findall(r"#define (POT_[A-Z_0-9]+) (.+)", code):
        if macro in ("POT_H", "POT_API"):
            continue
        out.append(f"{macro}: {'str' if value.strip().startswith(chr(34)) else 'int'}")
    for name in re.findall(r"^\s+(POT_[A-Z_0-9]+) = ", code, re.M):
        if not name.endswith("_MAX_ENUM_"):
            out.append(f"{name}: int")
    out.append("")
    handles = sorted(set(re.findall(r"typedef struct (pot_\w+) \1;", code)) - {"pot_error"})
    for h in handles:
        out += ["", f"class {h}:", "    thisown: bool", ""]
    out.append("")
    for m in re.finditer(r"^POT_API\s+([^;(]*?)\b(pot_\w+)\s*\(([^)]*)\)\s*;", code, re.S | re.M):
        ret, fname, params = m.group(1), m.group(2), m.group(3)
        if fname in INTERNAL:
            continue
        ins, outs = convert([p.strip() for p in " ".join(params.split()).split(",")])
        rtype, comment = returns(ret, fname, outs)
        args = ", ".join(f"{n}: {t}" for n, t in ins)
        out.append(f"def {fname}({args}) -> {rtype}: ...{comment}")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
