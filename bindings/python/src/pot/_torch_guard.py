"""One torch per process (checked before libpot is loaded).

A libpot built with the LibTorch replay layer links one LibTorch. A
Python torch of another release in the same process brings its own
libtorch, and the two in one process abort or crash (seen: `import torch;
import pot` with torch 2.15 beside a libpot of LibTorch 1.13 aborts,
the other order segfaults). So, before loading libpot, the package
compares the torch release this libpot was built with (written at build
time into pot._build_torch by setup.py, from
pot_replay_framework_version) with the environment's: the imported torch
module's __version__, else the installed distribution's version. A
different major.minor is an ImportError naming both; no torch at all is
fine (the replay uses libpot's own LibTorch). Two builds of one release
(a PyPI wheel and Debian's libtorch of the same version) are not told
apart by this check.
"""

import importlib.metadata
import re
import sys


def _release(version: str):
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_torch(built: str = None) -> None:
    """Raises ImportError when the process's torch is of another release
    than the LibTorch libpot was built with (`built`, by default
    pot._build_torch.TORCH_VERSION; None or "" for a libpot without the
    replay layer)."""
    if built is None:
        try:
            from ._build_torch import TORCH_VERSION as built
        except ImportError:  # a package built before the check existed
            return
    if not built:
        return
    module = sys.modules.get("torch")
    if module is not None:
        have, where = str(getattr(module, "__version__", "")), "the imported torch module"
    else:
        try:
            have, where = importlib.metadata.version("torch"), "the installed torch distribution"
        except importlib.metadata.PackageNotFoundError:
            return
    if _release(have) != _release(built):
        raise ImportError(
            f"pot: this libpot replays with LibTorch {built}, but {where} is torch {have}: two LibTorch "
            f"releases cannot share a process (it aborts or crashes). Use pot in an environment whose torch is "
            f"{'.'.join(map(str, _release(built) or ()))}.x, or build libpot against this torch (docs/python.md, "
            f"\"One torch per process\").")
