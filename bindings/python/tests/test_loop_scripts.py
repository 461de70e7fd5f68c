"""The proof of docs/python.md on scripts written the way public
repositories write them (samples/loops): a character-level GPT on a token
file with get_batch/torch.randint and a warm-up rate set by hand, a CNN with
a per-epoch StepLR, an LSTM carrying its hidden state, a GPT-2 fine-tuned by
the Hugging Face Trainer (pot.torch.TrainerCallback). Each is hooked by the
lines marked `# pot` (a `# pot-was: <code>` line replaced that code):

1. without them the script is the plain training script, and it runs;
2. the hook changes at most 12 lines, the task owner's included;
3. hooked, it records in a process of its own;
4. a verifier in other processes, with only what the miner publishes and
   the installed CLI, draws the challenges (`pot challenge`), has them
   served (`pot open make`) and verifies them (`pot verify`)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import pot  # noqa: E402

if not pot.replay_available():
    pytest.skip("libpot was built without LibTorch", allow_module_level=True)

LOOPS = Path(__file__).resolve().parent.parent.parent.parent / "samples" / "loops"
# script, its dataset as `pot open make --dataset` takes it, steps
def _have(*modules):
    try:
        for m in modules:
            __import__(m)
    except ImportError:
        return False
    return True


SCRIPTS = [("char_gpt.py", "stream.json", 12), ("mnist_cnn.py", "data", 12), ("lstm_lm.py", "stream.json", 8),
           # The Trainer needs torch 2.x: the torch2 stage's environment has it
           # (scripts/torch2-requirements.txt) and sets POT_REQUIRE_FRAMEWORKS.
           pytest.param("hf_finetune.py", "data", 12, marks=pytest.mark.skipif(
               not _have("transformers", "accelerate") and not os.environ.get("POT_REQUIRE_FRAMEWORKS"),
               reason="transformers and accelerate are not installed"))]
# A hook comment, not its mention in a docstring (`# pot`).
HOOK = re.compile(r"\s(?<!`)# pot(?: \(.*\))?$")
WAS = re.compile(r"^(\s*)\S.*\s(?<!`)# pot-was: (.*)$")


def original(source: str) -> "tuple[str, int]":
    """The script without its hook, and the number of lines the hook changes."""
    out, changed = [], 0
    for line in source.splitlines():
        was = WAS.match(line)
        if was:
            out.append(was.group(1) + was.group(2))
            changed += 1
        elif HOOK.search(line):
            changed += 1
        else:
            out.append(line)
    return "\n".join(out) + "\n", changed


def run(args, cwd):
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("script,dataset,steps", SCRIPTS)
def test_a_script_hooked_in_a_few_lines_is_verified_by_another_process(tmp_path, script, dataset, steps):
    cli = os.path.join(os.environ.get("POT_PREFIX", ""), "bin", "pot")
    if not os.path.exists(cli):
        pytest.skip("no installed bin/pot (run through bindings/python/run-tests.sh PREFIX)")
    source = (LOOPS / script).read_text()
    plain, changed = original(source)
    assert "pot" not in re.sub(r"#.*|\"\"\"[\s\S]*?\"\"\"", "", plain), "the plain script still uses pot"
    assert 0 < changed <= 12, f"{script}: the hook changes {changed} lines"
    (tmp_path / "plain.py").write_text(plain)
    rc, out, err = run([sys.executable, "plain.py", "--out", str(tmp_path / "plain")], tmp_path)
    assert rc == 0, f"the plain {script} does not run: {err[-2000:]}"

    # The miner: the hooked script, in a process of its own.
    out_dir = tmp_path / "run"
    rc, out, err = run([sys.executable, str(LOOPS / script), "--out", str(out_dir)], tmp_path)
    assert rc == 0, f"{script}: {err[-3000:]}"
    # The same loop: as many steps (the losses differ where the task fixes
    # what the plain script left to its own generator: the windows of a
    # run-seeded task, the per-step dropout seeds).
    _, plain_out, _ = run([sys.executable, "plain.py", "--out", str(tmp_path / "plain2")], tmp_path)
    assert len(out.splitlines()) == len(plain_out.splitlines()) > 0, (out, plain_out)

    # The verifier: what the miner publishes (commitment, root, spec, program).
    rc, info, err = run([cli, "checkpoints", "info", "ckpt", "--json"], out_dir)
    assert rc == 0, err
    info = json.loads(info)
    assert info["complete"] and info["recorded_steps"] == steps
    rc, drawn, err = run([cli, "challenge", "--beacon", "5a" * 32, "--run-id", info["run_id"], "--steps", str(steps),
                          "--rounds", "3"], out_dir)
    assert rc == 0, err
    for t in [int(x) for x in drawn.split()]:
        rc, served, err = run([cli, "open", "make", "ckpt", "--step", str(t), "--dataset", dataset, "--out",
                               f"m{t}.bin", "--json"], out_dir)
        assert rc == 0, err
        rc, verdict, err = run([cli, "verify", f"m{t}.bin", "--step", str(t), "--commitment", "ckpt/commitment.bin",
                                "--spec", "spec.json", "--program", "model.pt", "--root", info["log_root"], "--size",
                                str(steps), "--pre-state", json.loads(served)["pre_state"], "--json"], out_dir)
        assert rc == 0 and json.loads(verdict)["valid"] is True, (t, verdict, err)
    # Served for another step, the same manifest is refused.
    rc, verdict, _ = run([cli, "verify", f"m{t}.bin", "--step", str(t % steps + 1), "--commitment",
                          "ckpt/commitment.bin", "--spec", "spec.json", "--program", "model.pt", "--root",
                          info["log_root"], "--size", str(steps), "--pre-state", json.loads(served)["pre_state"],
                          "--json"], out_dir)
    assert rc == 1 and json.loads(verdict)["valid"] is False
