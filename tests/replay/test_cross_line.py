"""A step trained on one torch line and verified on the other (Debian's 1.13
and torch 2.x from PyPI, docs/determinism.md "Two torch lines"): the bits
differ (torch changed its kernels and its optimizer code), so a verifier of
the other line must refuse the step before replaying it, naming both
releases (POT_E_UNSUPPORTED, never a verdict), while each line replays its
own run bit for bit. Run by scripts/test's torch-2 stage with both builds:

    python -m pytest tests/replay/test_cross_line.py --check-run BUILD2/tests/pot_check_run \\
        --other-check-run BUILD/tests/pot_check_run --other-python /usr/bin/python3 ...
"""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 4


@pytest.fixture(scope="session")
def other(request):
    check_run = request.config.getoption("--other-check-run")
    python = request.config.getoption("--other-python")
    if not check_run or not python:
        pytest.skip("needs --other-check-run and --other-python (the other torch line's build)")
    return check_run, python


def train(python, out):
    subprocess.run([python, os.path.join(HERE, "train.py"), "--out", str(out), "--model", "cnn", "--optim", "adamw",
                    "--steps", str(STEPS)], check=True, stdout=subprocess.DEVNULL)
    return json.load(open(os.path.join(out, "spec.json")))["framework_version"]


def check(check_run, run):
    p = subprocess.run([check_run, str(run)], capture_output=True, text=True)
    return p.returncode, [json.loads(l) for l in p.stdout.splitlines() if l.strip()]


def release(version):
    return ".".join(version.split(".")[:2])


def test_a_step_of_the_other_torch_line_is_refused_naming_both(tmp_path, check_run_bin, other):
    other_check_run, other_python = other
    ours = train(sys.executable, tmp_path / "ours")
    theirs = train(other_python, tmp_path / "theirs")
    assert release(ours) != release(theirs), (ours, theirs)
    for check_run, run, trained, replays in ((check_run_bin, tmp_path / "ours", ours, ours),
                                             (other_check_run, tmp_path / "theirs", theirs, theirs),
                                             (check_run_bin, tmp_path / "theirs", theirs, ours),
                                             (other_check_run, tmp_path / "ours", ours, theirs)):
        rc, lines = check(check_run, run)
        if trained == replays:  # its own line: every step bit for bit
            assert rc == 0 and lines[-1] == {"summary": True, "matched": STEPS, "mismatched": 0}, lines
            continue
        assert rc != 0 and lines[-1]["error"] == "POT_E_UNSUPPORTED", lines
        msg = lines[-1]["message"]
        assert f"framework_version '{trained}'" in msg and f"replays pytorch {release(replays)}.x" in msg, msg
        print(f"\nCROSS-LINE trained on torch {trained}, verifier of torch {release(replays)}: refused: {msg}")
