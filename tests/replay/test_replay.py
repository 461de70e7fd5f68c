"""Real PyTorch training runs replayed step by step by the C++ LibTorch
replay through the C API (pot_check_run), bit for bit, and the ways a run can
be wrong, each caught with the right outcome. Run with Debian's
/usr/bin/python3 (python3-torch); see tests/replay/README.md."""
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import potstate  # noqa: E402

STEPS = 20


def train(out, *args):
    cmd = [sys.executable, os.path.join(HERE, "train.py"), "--out", str(out), *map(str, args)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return str(out)


def check(check_run_bin, run, *args):
    """Runs pot_check_run; returns (exit code, per-step rows, last line)."""
    p = subprocess.run([check_run_bin, run, *map(str, args)], capture_output=True, text=True)
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    assert lines, p.stderr
    return p.returncode, [l for l in lines if "step" in l], lines[-1]


# The determinism matrix (docs/determinism.md): every step of every run must
# replay bit for bit (state digest and loss).
MATRIX = [
    ("mlp-sgd-f32", ["--model", "mlp", "--optim", "sgd"]),
    ("mlp-adam-f32-clip-accum", ["--model", "mlp", "--optim", "adam", "--clip", "1.0", "--accum", "2"]),
    ("mlp-adamw-amsgrad-f64", ["--model", "mlp", "--optim", "adamw", "--amsgrad", "--dtype", "f64"]),
    ("mlp-adamw-f32-single-seed", ["--model", "mlp", "--optim", "adamw", "--seed-policy", "single_seed"]),
    ("transformer-adamw-f32", ["--model", "transformer", "--optim", "adamw"]),
    ("transformer-adamw-amsgrad-f32-clip-accum",
     ["--model", "transformer", "--optim", "adamw", "--amsgrad", "--clip", "1.0", "--accum", "2"]),
    ("transformer-sgd-f64-clip", ["--model", "transformer", "--optim", "sgd", "--dtype", "f64", "--clip", "0.5"]),
    ("transformer-adam-bf16", ["--model", "transformer", "--optim", "adam", "--dtype", "bf16"]),
    ("transformer-adamw-f32-2threads", ["--model", "transformer", "--optim", "adamw", "--threads", "2"]),
    ("cnn-sgd-f32", ["--model", "cnn", "--optim", "sgd"]),
    ("cnn-adamw-f32-clip-accum", ["--model", "cnn", "--optim", "adamw", "--clip", "1.0", "--accum", "2"]),
    ("cnn-adam-amsgrad-f64", ["--model", "cnn", "--optim", "adam", "--amsgrad", "--dtype", "f64"]),
    ("cnn-sgd-bf16-accum", ["--model", "cnn", "--optim", "sgd", "--dtype", "bf16", "--accum", "4"]),
]


@pytest.mark.parametrize("name,args", MATRIX, ids=[m[0] for m in MATRIX])
def test_every_step_replays_bit_for_bit(tmp_path, check_run_bin, name, args):
    run = train(tmp_path / name, "--steps", STEPS, *args)
    rc, rows, summary = check(check_run_bin, run)
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    bad = [r["step"] for r in rows if not r["match"]]
    assert rc == 0 and not bad, f"{name}: steps {bad} differ"
    assert summary == {"summary": True, "matched": STEPS, "mismatched": 0}
    # The loss the replay reports is the trainer's, bit for bit.
    meta = json.load(open(os.path.join(run, "run.json")))
    assert [r["loss_bits"] for r in rows] == meta["loss_bits"]
    print(f"\nDETERMINISM {name}: {STEPS}/{STEPS} steps bit-exact")


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    return train(tmp_path_factory.mktemp("honest"), "--model", "transformer", "--optim", "adamw", "--steps", STEPS)


@pytest.fixture(scope="module")
def other(tmp_path_factory):
    # Another run of the same task: other initial weights, trained longer
    # (a "pretrained" state a cheater could substitute).
    return train(tmp_path_factory.mktemp("other"), "--model", "transformer", "--optim", "adamw",
                 "--steps", 2 * STEPS, "--init-seed", 99)


def test_state_of_another_run_is_detected(check_run_bin, honest, other):
    rc, rows, summary = check(check_run_bin, honest, "--pre-dir", os.path.join(other, "states"))
    assert rc == 1 and summary["matched"] == 0 and summary["mismatched"] == STEPS
    assert not any(r["digest_match"] for r in rows)


def test_batch_of_another_step_is_detected(check_run_bin, honest):
    rc, rows, summary = check(check_run_bin, honest, "--shift-batch", 1, "--steps", f"1-{STEPS - 1}")
    assert rc == 1 and summary["matched"] == 0


def test_substituted_model_program_is_refused(check_run_bin, honest, other):
    # Same architecture, other weights baked in: its digest is not the spec's.
    rc, _, last = check(check_run_bin, honest, "--program", os.path.join(other, "program.pt"))
    assert rc == 3 and last["error"] == "POT_E_PROOF_MISMATCH", last
    assert "model_program_digest" in last["message"]


def test_one_forged_step_among_honest_ones(tmp_path, check_run_bin, honest):
    forged = str(tmp_path / "forged")
    shutil.copytree(honest, forged)
    k = 10
    path = os.path.join(forged, "states", f"{k:06d}.safetensors")
    state = potstate.read_safetensors(path)
    name = "param/net.wte.weight"
    state[name] = state[name] + 1e-3  # a small forged update
    potstate.write_safetensors(path, state)
    rc, rows, _ = check(check_run_bin, forged)
    bad = [r["step"] for r in rows if not r["match"]]
    # Step k does not lead to the forged S_k, and S_k does not lead to the
    # honest S_{k+1}: both are caught, every other step replays.
    assert rc == 1 and bad == [k, k + 1], bad


def test_seed_policy_not_applied_is_detected(tmp_path, check_run_bin):
    run = train(tmp_path / "noseed", "--model", "mlp", "--optim", "sgd", "--steps", STEPS, "--skip-seed")
    rc, rows, summary = check(check_run_bin, run)
    assert rc == 1 and summary["matched"] == 0, "dropout without the committed seed must not replay"


def test_thread_count_other_than_spec(tmp_path, check_run_bin):
    """Trained on 1 thread, replayed on 2: the bits differ, the norm bucket
    path accepts. Over >= 200 replays: measured relative norm difference and
    false-reject rate (docs/determinism.md)."""
    steps = 200
    run = train(tmp_path / "threads", "--model", "transformer", "--optim", "adamw", "--steps", steps,
                "--batch", "16", "--dataset-size", "256")
    spec = json.load(open(os.path.join(run, "spec.json")))
    spec["intra_op_threads"] = 2
    spec2 = str(tmp_path / "spec2.json")
    json.dump(spec, open(spec2, "w"))
    rc, rows, summary = check(check_run_bin, run, "--spec", spec2)
    assert len(rows) == steps
    mismatched = sum(not r["digest_match"] for r in rows)
    false_rejects = sum(not r["bucket_match"] for r in rows)
    rel = [abs(r["update_norm"] - r["committed_update_norm"]) / r["committed_update_norm"] for r in rows]
    print(f"\nTHREADS bitwise mismatches {mismatched}/{steps}, bucket false rejects {false_rejects}/{steps}, "
          f"relative norm difference max {max(rel):.3e} median {sorted(rel)[len(rel) // 2]:.3e}")
    assert mismatched > 0, "a different thread count changed no bit: the spec's pin would be pointless"
    assert false_rejects == 0


def edit_state(src_dir, dst_dir, t, edit):
    shutil.copytree(src_dir, dst_dir)
    path = os.path.join(dst_dir, f"{t:06d}.safetensors")
    state = potstate.read_safetensors(path)
    edit(state)
    potstate.write_safetensors(path, state)
    return dst_dir


def test_missing_optimizer_entry_is_named(tmp_path, check_run_bin, honest):
    pre = edit_state(os.path.join(honest, "states"), str(tmp_path / "pre"), 4,
                     lambda s: s.pop("optim/net.ln_f.weight/exp_avg_sq"))
    rc, _, last = check(check_run_bin, honest, "--pre-dir", pre, "--steps", "5-5")
    assert rc == 3 and last["error"] == "POT_E_INVALID_ARGUMENT"
    assert "optim/net.ln_f.weight/exp_avg_sq" in last["message"]


def test_wrong_dtype_and_shape_are_named(tmp_path, check_run_bin, honest):
    pre = edit_state(os.path.join(honest, "states"), str(tmp_path / "pre"), 2,
                     lambda s: s.update({"param/net.wpe.weight": s["param/net.wpe.weight"].double()}))
    rc, _, last = check(check_run_bin, honest, "--pre-dir", pre, "--steps", "3-3")
    assert rc == 3 and last["error"] == "POT_E_INVALID_ARGUMENT" and "param/net.wpe.weight" in last["message"]
    pre2 = edit_state(os.path.join(honest, "states"), str(tmp_path / "pre2"), 2,
                      lambda s: s.update({"param/net.wpe.weight": s["param/net.wpe.weight"][:-1].clone()}))
    rc, _, last = check(check_run_bin, honest, "--pre-dir", pre2, "--steps", "3-3")
    assert rc == 3 and "shape" in last["message"], last


def test_unknown_tensor_in_state_is_refused(tmp_path, check_run_bin, honest):
    pre = edit_state(os.path.join(honest, "states"), str(tmp_path / "pre"), 0,
                     lambda s: s.update({"param/extra": torch.zeros(3)}))
    rc, _, last = check(check_run_bin, honest, "--pre-dir", pre, "--steps", "1-1")
    assert rc == 3 and last["error"] == "POT_E_INVALID_ARGUMENT" and "param/extra" in last["message"]


def test_nan_loss_is_reported(tmp_path, check_run_bin, honest):
    def poison(s):
        s["param/net.ln_f.weight"] = torch.full_like(s["param/net.ln_f.weight"], float("nan"))
    pre = edit_state(os.path.join(honest, "states"), str(tmp_path / "pre"), 6, poison)
    rc, _, last = check(check_run_bin, honest, "--pre-dir", pre, "--steps", "7-7")
    assert rc == 3 and last["error"] == "POT_E_NONFINITE" and "loss" in last["message"], last


def test_forward_that_does_not_return_a_scalar(tmp_path, check_run_bin, honest):
    run = str(tmp_path / "vector")
    shutil.copytree(honest, run)

    class Bad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))

        def forward(self, tokens):
            return self.w * tokens[0, :3].float()

    program = os.path.join(run, "program.pt")
    torch.jit.script(Bad()).save(program)
    spec = json.load(open(os.path.join(run, "spec.json")))
    spec["model_program_digest"] = potstate.program_digest(program).hex()
    json.dump(spec, open(os.path.join(run, "spec.json"), "w"))
    pre = str(tmp_path / "pre")
    os.makedirs(pre)
    potstate.write_safetensors(os.path.join(pre, "000000.safetensors"),
                               {"param/w": torch.ones(3), "hparam/lr": torch.tensor(1e-3, dtype=torch.float64)})
    rc, _, last = check(check_run_bin, run, "--pre-dir", pre, "--steps", "1-1")
    assert rc == 3 and last["error"] == "POT_E_INVALID_ARGUMENT" and "not a scalar" in last["message"], last
