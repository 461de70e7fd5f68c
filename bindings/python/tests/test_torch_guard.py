"""One torch per process (issue 16, docs/python.md): pot refuses to load
beside a torch of another release than the LibTorch libpot replays with,
as an ImportError naming both, before loading libpot; loading the two
LibTorch releases in one process used to abort or crash."""
import os
import re
import subprocess
import sys
import types

import pytest

import pot
from pot._torch_guard import check_torch


def fake_torch(root, version):
    """A torch package and distribution of `version` under `root` (put first
    on the path: it shadows the environment's torch)."""
    (root / "torch").mkdir()
    (root / "torch" / "__init__.py").write_text(f"__version__ = {version!r}\n")
    info = root / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    return root


def run(code, path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(path), os.environ.get("PYTHONPATH")) if p))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


@pytest.mark.skipif(not pot.replay_available(), reason="libpot was built without LibTorch")
@pytest.mark.parametrize("code", ["import torch; import pot", "import pot"])
def test_another_torch_release_is_an_import_error_naming_both(tmp_path, code):
    """Imported first or only installed: either way pot does not load."""
    other = "1.13.1" if pot.framework_version().startswith("2.") else "2.15.0"
    done = run(code, fake_torch(tmp_path, other))
    assert done.returncode == 1, done
    assert "ImportError: pot: this libpot replays with LibTorch " + pot.framework_version() in done.stderr, done.stderr
    assert f"torch {other}" in done.stderr
    # The environment's own torch (same release) loads with pot, either order.
    assert run("import torch; import pot; import pot.torch", tmp_path / "nothing").returncode == 0


def test_the_check_compares_releases(monkeypatch):
    fake = types.ModuleType("torch")
    monkeypatch.setitem(sys.modules, "torch", fake)
    for have, ok in [("1.13.1", True), ("1.13.0a0+gitunknown", True), ("2.15.0+cu132", False), ("1.12.1", False),
                     ("", False)]:
        fake.__version__ = have
        if ok:
            check_torch("1.13.0")
        else:
            want = re.escape(f"LibTorch 1.13.0, but the imported torch module is torch {have}:")
            with pytest.raises(ImportError, match=want):
                check_torch("1.13.0")
    check_torch("")  # a libpot without the replay layer: any torch
