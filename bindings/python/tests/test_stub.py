"""The type stub of pot._pot (src/pot/_pot.pyi) is what tools/gen_stub.py
writes from pot.h, and agrees with the module SWIG generated."""

import inspect
import re
import subprocess
import sys

import pot
from pot import _pot
from conftest import HERE

ROOT = HERE.parent
STUB = ROOT / "src" / "pot" / "_pot.pyi"


def test_stub_is_current():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_stub.py")], check=True, capture_output=True,
                         text=True).stdout
    assert out == STUB.read_text(), "src/pot/_pot.pyi is stale: run tools/gen_stub.py > src/pot/_pot.pyi"


def test_stub_matches_the_swig_module():
    """Each stubbed function takes the Python parameters SWIG generated (the
    stub follows pot.i's typemaps, SWIG applies them: two derivations)."""
    stub = STUB.read_text()
    funcs = re.findall(r"^def (\w+)\((.*?)\) -> ", stub, re.M)
    assert len(funcs) == 229  # pot.h functions less the error and bytes helpers pot.i handles itself
    for name, params in funcs:
        stubbed = [p.split(":")[0].strip() for p in params.split(", ") if p]
        swig = list(inspect.signature(getattr(_pot, name)).parameters)
        assert stubbed == swig, f"{name}: stub {stubbed}, SWIG {swig}"
    for cls in re.findall(r"^class (\w+):", stub, re.M):
        assert isinstance(getattr(_pot, cls), type)
    # The installed package ships the stub and py.typed.
    pkg = pot.__file__.rsplit("/", 1)[0]
    import os
    assert os.path.exists(os.path.join(pkg, "_pot.pyi")) and os.path.exists(os.path.join(pkg, "py.typed"))
