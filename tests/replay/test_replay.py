"""Real PyTorch training runs replayed step by step by the C++ LibTorch
replay through the C API (pot_check_run), bit for bit, and the ways a run can
be wrong, each caught with the right outcome. Run with Debian's
/usr/bin/python3 (python3-torch); see tests/replay/README.md."""
import json
import os
import shutil
import struct
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

# Every other optimizer on every model, each with its own mix of dtype,
# clipping (by norm, by value), accumulation, maximize and two parameter
# groups (decay / no decay at half the rate), on both torch lines; 10 steps
# each (RAdam's rectified branch starts at step 6). TORCH2_ONLY: what torch
# 1.13 lacks (Muon; NAdam and RAdam's maximize and decoupled weight decay).
OPTIM_STEPS = 10
OPTIM_MATRIX = [
    ("mlp-adadelta-f32-groups2", ["--model", "mlp", "--optim", "adadelta", "--groups", "2"]),
    ("cnn-adadelta-bf16-clipvalue", ["--model", "cnn", "--optim", "adadelta", "--dtype", "bf16", "--clip-value", "0.05"]),
    ("transformer-adadelta-f64-maximize", ["--model", "transformer", "--optim", "adadelta", "--dtype", "f64",
                                          "--maximize"]),
    ("mlp-adagrad-f64-maximize", ["--model", "mlp", "--optim", "adagrad", "--dtype", "f64", "--maximize"]),
    ("transformer-adagrad-bf16-groups2", ["--model", "transformer", "--optim", "adagrad", "--dtype", "bf16",
                                         "--groups", "2"]),
    ("cnn-adagrad-f32-clip-accum", ["--model", "cnn", "--optim", "adagrad", "--clip", "1.0", "--accum", "2"]),
    ("mlp-rmsprop-bf16-clipvalue", ["--model", "mlp", "--optim", "rmsprop", "--dtype", "bf16", "--clip-value", "0.05"]),
    ("transformer-rmsprop-f32-groups2-accum", ["--model", "transformer", "--optim", "rmsprop", "--groups", "2",
                                              "--accum", "2"]),
    ("cnn-rmsprop-f64-maximize", ["--model", "cnn", "--optim", "rmsprop", "--dtype", "f64", "--maximize"]),
    ("mlp-adamax-f32-clip", ["--model", "mlp", "--optim", "adamax", "--clip", "0.5"]),
    ("transformer-adamax-bf16-groups2", ["--model", "transformer", "--optim", "adamax", "--dtype", "bf16",
                                        "--groups", "2"]),
    ("cnn-adamax-f64-accum-maximize", ["--model", "cnn", "--optim", "adamax", "--dtype", "f64", "--accum", "2",
                                      "--maximize"]),
    ("mlp-nadam-f64-groups2", ["--model", "mlp", "--optim", "nadam", "--dtype", "f64", "--groups", "2"]),
    ("transformer-nadam-f32-clipvalue", ["--model", "transformer", "--optim", "nadam", "--clip-value", "0.05"]),
    ("cnn-nadam-bf16-clip", ["--model", "cnn", "--optim", "nadam", "--dtype", "bf16", "--clip", "1.0"]),
    ("mlp-radam-bf16", ["--model", "mlp", "--optim", "radam", "--dtype", "bf16"]),
    ("transformer-radam-f64-groups2-clip", ["--model", "transformer", "--optim", "radam", "--dtype", "f64",
                                           "--groups", "2", "--clip", "1.0"]),
    ("cnn-radam-f32-accum", ["--model", "cnn", "--optim", "radam", "--accum", "2"]),
    ("mlp-sgd-f32-groups2-maximize", ["--model", "mlp", "--optim", "sgd", "--groups", "2", "--maximize"]),
    ("transformer-adamw-bf16-groups2", ["--model", "transformer", "--optim", "adamw", "--dtype", "bf16",
                                       "--groups", "2"]),
    ("cnn-adam-f32-maximize-clipvalue", ["--model", "cnn", "--optim", "adam", "--maximize", "--clip-value", "0.05"]),
    ("mlp-muon-f32", ["--model", "mlp", "--optim", "muon"]),
    ("transformer-muon-bf16-clip", ["--model", "transformer", "--optim", "muon", "--dtype", "bf16", "--clip", "1.0"]),
    ("cnn-nadam-f32-decoupled-maximize", ["--model", "cnn", "--optim", "nadam", "--decoupled", "--maximize"]),
    ("mlp-radam-f64-decoupled-maximize-groups2", ["--model", "mlp", "--optim", "radam", "--dtype", "f64",
                                                 "--decoupled", "--maximize", "--groups", "2"]),
]
TORCH2_ONLY = {"mlp-muon-f32", "transformer-muon-bf16-clip", "cnn-nadam-f32-decoupled-maximize",
               "mlp-radam-f64-decoupled-maximize-groups2"}
TORCH2 = int(torch.__version__.split(".")[0]) >= 2
CASES = ([(n, a, STEPS) for n, a in MATRIX] +
         [(n, a, OPTIM_STEPS) for n, a in OPTIM_MATRIX if TORCH2 or n not in TORCH2_ONLY])


@pytest.mark.parametrize("name,args,steps", CASES, ids=[c[0] for c in CASES])
def test_every_step_replays_bit_for_bit(tmp_path, check_run_bin, name, args, steps):
    run = train(tmp_path / name, "--steps", steps, *args)
    rc, rows, summary = check(check_run_bin, run)
    assert [r["step"] for r in rows] == list(range(1, steps + 1))
    bad = [r["step"] for r in rows if not r["match"]]
    assert rc == 0 and not bad, f"{name}: steps {bad} differ"
    assert summary == {"summary": True, "matched": steps, "mismatched": 0}
    # The loss the replay reports is the trainer's, bit for bit.
    meta = json.load(open(os.path.join(run, "run.json")))
    assert [r["loss_bits"] for r in rows] == meta["loss_bits"]
    # Check 27: every honest step's update depends on its gradient.
    ignored = [r["step"] for r in rows if r["gradient_ignored"]]
    assert not ignored, f"{name}: honest steps {ignored} fail gradient_ignored"
    least = min(rows, key=lambda r: r["gradient_elements"])
    print(f"\nDETERMINISM {name}: {steps}/{steps} steps bit-exact; the gradient changed at least "
          f"{least['gradient_elements']} of {least['param_elements']} parameter elements (step {least['step']})")


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    return train(tmp_path_factory.mktemp("honest"), "--model", "transformer", "--optim", "adamw", "--steps", STEPS)


@pytest.fixture(scope="module")
def other(tmp_path_factory):
    # Another run of the same task: other initial weights, trained longer
    # (a "pretrained" state a cheater could substitute), on the same learning
    # rate schedule (its states hold the rates the honest spec gives).
    return train(tmp_path_factory.mktemp("other"), "--model", "transformer", "--optim", "adamw",
                 "--steps", 2 * STEPS, "--t-max", STEPS, "--init-seed", 99)


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
    # Check 27 over a whole cosine schedule, down to the last step's rate.
    assert not [r["step"] for r in rows if r["gradient_ignored"]]
    least = min(rows, key=lambda r: r["gradient_elements"])
    print(f"GRADIENT the gradient changed at least {least['gradient_elements']} of {least['param_elements']} "
          f"parameter elements (step {least['step']}); step {steps}: {rows[-1]['gradient_elements']}")


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


@pytest.fixture(scope="module")
def adagrad_groups(tmp_path_factory):
    """Adagrad (state from the constructor) with a second parameter group."""
    return train(tmp_path_factory.mktemp("adagrad"), "--model", "mlp", "--optim", "adagrad", "--groups", "2",
                 "--steps", 4)


def test_attack_saturated_adagrad_accumulator_in_s0_is_refused(tmp_path, check_run_bin, adagrad_groups):
    """A miner seeds S_0's Adagrad accumulators with 1e30: every update is
    then ~0 and no step needs a backward pass. S_0 must hold the fresh state
    bit for bit (docs/PROTOCOL.md 21.1)."""
    states = os.path.join(adagrad_groups, "states")
    rc, rows, _ = check(check_run_bin, adagrad_groups, "--steps", "1-1")
    assert rc == 0 and rows[0]["match"]  # the honest S_0, with its step-0 state, passes
    for name, edit in [
        ("saturated", lambda s: s.update({k: torch.full_like(v, 1e30) for k, v in s.items() if k.endswith("/sum")})),
        ("counted", lambda s: s.update({k: torch.full_like(v, 3.0) for k, v in s.items() if k.endswith("/step")})),
        ("dropped", lambda s: [s.pop(k) for k in [k for k in s if k.startswith("optim/")]]),
    ]:
        pre = edit_state(states, str(tmp_path / name), 0, edit)
        rc, _, last = check(check_run_bin, adagrad_groups, "--pre-dir", pre, "--steps", "1-1")
        assert rc == 3 and last["error"] == "POT_E_INVALID_ARGUMENT", (name, last)
        assert any(w in last["message"] for w in ("fresh state", "missing tensor", "updates of a parameter")), \
            (name, last)


def test_attack_a_group_rate_other_than_the_schedule_is_refused(tmp_path, check_run_bin, adagrad_groups):
    """Group 1's rate in S_{t-1} is the spec's, as group 0's is: a state
    that doubles it (a miner stepping the no-decay group faster) is refused
    before the step runs, naming the group."""
    pre = edit_state(os.path.join(adagrad_groups, "states"), str(tmp_path / "pre"), 2,
                     lambda s: s.update({"hparam/lr/1": s["hparam/lr/1"] * 2}))
    rc, _, last = check(check_run_bin, adagrad_groups, "--pre-dir", pre, "--steps", "3-3")
    assert rc == 3 and last["error"] == "POT_E_INVALID_ARGUMENT" and "parameter group 1" in last["message"], last
    gone = edit_state(os.path.join(adagrad_groups, "states"), str(tmp_path / "gone"), 2,
                      lambda s: s.pop("hparam/lr/1"))
    rc, _, last = check(check_run_bin, adagrad_groups, "--pre-dir", gone, "--steps", "3-3")
    assert rc == 3 and "hparam/lr/1" in last["message"], last


def test_attack_other_group_hyper_parameters_than_committed_fail_the_replay(tmp_path, check_run_bin,
                                                                            adagrad_groups):
    """A miner trains the second group with weight decay the spec does not
    have: every step fails the replay; and a spec whose group names a tensor
    the program does not have is refused, naming it."""
    spec = json.load(open(os.path.join(adagrad_groups, "spec.json")))
    decayed = json.loads(json.dumps(spec))
    decayed["param_groups"][0]["optimizer"]["weight_decay"] = 0.01
    path = str(tmp_path / "decayed.json")
    json.dump(decayed, open(path, "w"))
    rc, rows, summary = check(check_run_bin, adagrad_groups, "--spec", path)
    assert rc == 1 and summary["mismatched"] == len(rows) == 4, summary
    bogus = json.loads(json.dumps(spec))
    bogus["param_groups"][0]["params"] = sorted(bogus["param_groups"][0]["params"] + ["zz.not_a_parameter"])
    path = str(tmp_path / "bogus.json")
    json.dump(bogus, open(path, "w"))
    rc, _, last = check(check_run_bin, adagrad_groups, "--spec", path, "--steps", "1-1")
    assert rc == 3 and last["error"] == "POT_E_INVALID_ARGUMENT" and "zz.not_a_parameter" in last["message"], last


def test_an_optimizer_this_torch_line_lacks_is_refused_before_replaying(tmp_path, check_run_bin, adagrad_groups):
    """Muon on torch 1.13 (it has none): POT_E_UNSUPPORTED naming it; on
    2.x, Muon on a parameter that is not a matrix: POT_E_INVALID_ARGUMENT."""
    spec = json.load(open(os.path.join(adagrad_groups, "spec.json")))
    spec["optimizer"] = {"kind": "muon", "lr": spec["optimizer"]["lr"], "weight_decay": 0.1, "momentum": 0.95, "nesterov": True,
                         "ns_a": 3.4445, "ns_b": -4.775, "ns_c": 2.0315, "ns_steps": 5, "eps": 1e-7,
                         "adjust_lr_fn": "original"}
    del spec["param_groups"]  # Muon for every parameter, the biases included
    path = str(tmp_path / "muon.json")
    json.dump(spec, open(path, "w"))
    rc, _, last = check(check_run_bin, adagrad_groups, "--spec", path, "--steps", "1-1")
    if TORCH2:
        assert rc == 3 and last["error"] == "POT_E_INVALID_ARGUMENT" and "2-D parameters only" in last["message"]
    else:
        assert rc == 3 and last["error"] == "POT_E_UNSUPPORTED" and "Muon" in last["message"], last


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


# ---------------------------------------------------------------------------
# The recorder, the checkpoint store and pot verify, end to end: a real
# PyTorch run recorded through the C API with a checkpoint every 5 steps,
# challenged by a beacon, served from the checkpoint directory (re-deriving
# pre-states) and verified by the CLI.

EVERY = 5


def record(record_run_bin, run, out, *args):
    if "--every" not in args:
        args = ("--every", EVERY, *args)
    p = subprocess.run([record_run_bin, run, str(out), *map(str, args)],
                       capture_output=True, text=True)
    info = json.loads(p.stdout.strip().splitlines()[-1])
    assert p.returncode == 0, info
    return info


def pot(pot_cli, *args, env=None):
    p = subprocess.run([pot_cli, *map(str, args)], capture_output=True, text=True,
                       env=None if env is None else {**os.environ, **env})
    out = p.stdout.strip()
    return p.returncode, (json.loads(out) if out.startswith("{") else out), p.stderr.strip()


def serve_and_verify(pot_cli, run, ck, info, t, samples=None, extra=(), verifier_env=None):
    samples = samples or os.path.join(run, "samples")
    manifest = os.path.join(str(ck), f"m{t}.bin")
    bucket = "bucket" in extra
    rc, served, err = pot(pot_cli, "open", "make", ck, "--step", t, "--dataset", samples, "--out", manifest, "--json",
                          *(["--post-state"] if bucket else []))
    assert rc == 0, err
    post = ["--post-state", served["post_state"]] if bucket else []
    rc, res, err = pot(pot_cli, "verify", manifest, "--step", t, "--commitment", os.path.join(str(ck), "commitment.bin"),
                       "--spec", os.path.join(run, "spec.json"), "--program", os.path.join(run, "program.pt"),
                       "--root", info["root"], "--size", info["size"], "--pre-state", served["pre_state"],
                       *post, "--json", *extra, env=verifier_env)
    return rc, res, err


def test_recorded_run_serves_openings_that_verify(tmp_path, record_run_bin, pot_cli, honest):
    ck = tmp_path / "ck"
    info = record(record_run_bin, honest, ck)
    assert info["size"] == STEPS
    meta = json.load(open(os.path.join(honest, "run.json")))
    # The C API builds the commitment train.py computed with the independent
    # implementation, and begin_step's seeds (which name the run) are the
    # trainer's torch.manual_seed values.
    assert info["run_id"] == meta["run_id"]
    run_id = bytes.fromhex(meta["run_id"])
    assert info["seeds"] == [potstate.step_seed(meta["base_seed"], run_id, t) for t in range(1, STEPS + 1)]
    # Only every 5th state is stored.
    assert sorted(os.listdir(ck / "checkpoints")) == [f"{t:012d}.safetensors" for t in range(0, STEPS + 1, EVERY)]
    rc, chal, err = pot(pot_cli, "challenge", "--beacon", "0123456789abcdef", "--run-id", info["run_id"],
                        "--steps", STEPS, "--rounds", 5, "--json")
    assert rc == 0, err
    steps = chal["steps"]
    assert len(set(steps)) == 5
    for t in steps:
        rc, res, err = serve_and_verify(pot_cli, honest, ck, info, t)
        assert rc == 0 and res["valid"] and res["check"] == "ok", (t, err)
        assert res["replayed_state"] == res["committed_state"]
    # The pre-state of a step between checkpoints was re-derived: k steps
    # replayed from the checkpoint before it, each checked against the log.
    shutil.rmtree(ck / "derived", ignore_errors=True)
    rc, st, err = pot(pot_cli, "checkpoints", "state", ck, "--step", 13, "--dataset",
                      os.path.join(honest, "samples"), "--json")
    assert rc == 0 and st["replayed_steps"] == 3, (st, err)
    digest = subprocess.run([pot_cli, "hash", "state", st["path"]], capture_output=True, text=True).stdout.strip()
    want = subprocess.run([pot_cli, "hash", "state", os.path.join(honest, "states", "000013.safetensors")],
                          capture_output=True, text=True).stdout.strip()
    assert digest == want
    # The cross-architecture path: 2 threads instead of the spec's 1, the
    # norm buckets of the replayed and the served update match.
    rc, res, err = serve_and_verify(pot_cli, honest, ck, info, 14, extra=("--mode", "bucket", "--threads", "2"))
    assert rc == 0 and res["valid"], err
    assert res["replayed_state"] != res["committed_state"]
    # ... while the bitwise path on 2 threads names the replayed state.
    rc, res, err = serve_and_verify(pot_cli, honest, ck, info, 14, extra=("--threads", "2"))
    assert rc == 1 and res["check"] == "replayed_state", res


def loaded_libraries(pot_cli, *args):
    """The file names of the shared objects the dynamic loader initialised
    for one CLI call (LD_DEBUG=libs), and the call's exit status."""
    p = subprocess.run([pot_cli, *map(str, args)], capture_output=True, text=True,
                       env={**os.environ, "LD_DEBUG": "libs"})
    return p.returncode, {os.path.basename(line.split("calling init: ")[1].strip()) for line in p.stderr.splitlines()
                          if "calling init: " in line}


def test_checkpoints_info_reads_a_recorder_directory_without_libtorch(tmp_path, record_run_bin, pot_cli, honest):
    """What a miner publishes, read from the directory the recorder wrote:
    the run id, the log's size and root (the values a ledger registers),
    with the core only. The protocol commands and --version never load
    LibTorch; a replay loads it through libpot's replay module."""
    ck = tmp_path / "ck"
    info = record(record_run_bin, honest, ck)
    rc, got, err = pot(pot_cli, "checkpoints", "info", ck, "--json")
    assert rc == 0, err
    assert (got["run_id"], got["log_root"], got["recorded_steps"], got["declared_steps"], got["complete"]) == \
        (info["run_id"], info["root"], STEPS, STEPS, True)
    assert got["stored_states"] == STEPS // EVERY + 1 and got["checkpoint_every"] == EVERY
    rc, digest, err = pot(pot_cli, "spec", "digest", os.path.join(honest, "spec.json"))
    assert rc == 0 and got["spec_digest"] == digest, err
    # The commitment as the recorder wrote it (canonical bytes).
    rc, tr, err = pot(pot_cli, "commit", "training", ck / "commitment.bin", "--json")
    assert rc == 0 and tr["run_id"] == info["run_id"], err

    for args in (("--version",), ("checkpoints", "info", ck), ("commit", "training", ck / "commitment.bin")):
        rc, libs = loaded_libraries(pot_cli, *args)
        assert rc == 0 and any(lib.startswith("libpot.so") for lib in libs), (args, libs)
        assert not [lib for lib in libs if lib.startswith(("libtorch", "libc10", "libpot-replay"))], (args, libs)
    rc, libs = loaded_libraries(pot_cli, "spec", "hardware-class")
    assert rc == 0 and any(lib.startswith("libpot-replay.so") for lib in libs), libs
    assert any(lib.startswith("libtorch_cpu") for lib in libs) and any(lib.startswith("libc10") for lib in libs), libs

    # What it refuses: a directory without its log; a pot-run.json whose
    # spec is not the one the commitment names.
    bad = tmp_path / "bad"
    shutil.copytree(ck, bad)
    os.remove(bad / "log.tree")
    rc, _, err = pot(pot_cli, "checkpoints", "info", bad)
    assert rc == 2 and "no log.tree" in err, err
    shutil.rmtree(bad)
    shutil.copytree(ck, bad)
    spec = json.load(open(os.path.join(honest, "spec.json")))
    spec["batch_size"] += 1
    (tmp_path / "other.json").write_text(json.dumps(spec))
    rc, other, err = pot(pot_cli, "spec", "encode", tmp_path / "other.json")
    assert rc == 0, err
    meta = json.load(open(bad / "pot-run.json"))
    meta["spec"] = other if isinstance(other, str) else other["canonical"]
    (bad / "pot-run.json").write_text(json.dumps(meta))
    rc, _, err = pot(pot_cli, "checkpoints", "info", bad)
    assert rc == 1 and "the commitment names spec" in err, err


def test_a_verifier_of_another_hardware_class_refuses_bitwise_and_compares_buckets(tmp_path, record_run_bin,
                                                                                    pot_cli, honest):
    """docs/PROTOCOL.md 14.4. The trainer (train.py, torch's own report),
    the recorder and `pot spec hardware-class` (libpot) name one class. A
    verifier computing as another class (ATen's baseline kernels, or
    oneDNN's SSE4.1 ones) replays other bits: bitwise it would FAIL the
    honest miner, so it refuses instead (check 20, UNSUPPORTED, naming both
    classes); its norm-bucket path verifies the step."""
    spec = json.load(open(os.path.join(honest, "spec.json")))
    rc, ours, err = pot(pot_cli, "spec", "hardware-class")
    assert rc == 0 and ours == spec["hardware_class"] == potstate.hardware_class(), (ours, spec, err)
    other_env = ({"ATEN_CPU_CAPABILITY": "default"} if "/aten:default/" not in ours
                 else {"ONEDNN_MAX_CPU_ISA": "SSE41"})
    rc, theirs, err = pot(pot_cli, "spec", "hardware-class", env=other_env)
    assert rc == 0 and theirs != ours, (other_env, theirs, err)
    ck = tmp_path / "ck"
    info = record(record_run_bin, honest, ck)
    for t in (1, 9):
        rc, res, err = serve_and_verify(pot_cli, honest, ck, info, t, verifier_env=other_env)
        assert rc == 1 and res["check"] == "replay" and res["status"] == "POT_E_UNSUPPORTED", (t, res, err)
        assert f"hardware_class '{ours}': this process computes as '{theirs}'" in res["message"], res
        assert not res["replayed"]
        rc, res, err = serve_and_verify(pot_cli, honest, ck, info, t, extra=("--mode", "bucket"),
                                        verifier_env=other_env)
        assert rc == 0 and res["valid"], (t, res, err)
        # The class changed the bits: a bitwise comparison would have failed.
        assert res["replayed_state"] != res["committed_state"], t
        # ... while on the spec's class the same step verifies bit for bit.
        rc, res, err = serve_and_verify(pot_cli, honest, ck, info, t)
        assert rc == 0 and res["replayed_state"] == res["committed_state"], (t, res, err)


ONEDNN_CAPS = [None, "SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI",
               "AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX512_CORE_AMX", "AVX512_CORE_AMX_FP16", "AVX10_1_512",
               "AVX10_1_512_AMX", "AVX10_1_512_AMX_FP16", "ALL"]


def test_onednn_isa_is_named_as_onednn_names_it(pot_cli, capsys):
    """The `onednn:<isa>` part under every ONEDNN_MAX_CPU_ISA cap, three ways,
    in the names of the oneDNN release torch carries (2.6 on Debian's torch,
    3.x in the PyPI wheel; they name the AMX and FP16 levels differently):
    libpot's (`pot spec hardware-class`: oneDNN's C API where LibTorch
    exposes it, Debian's; else derived from CPUID, src/spec/cpu_isa.cpp,
    the PyPI wheels), potstate's derivation from /proc/cpuinfo (written
    independently) and oneDNN's own answer after a convolution ran: the ISA
    its verbose output describes and, where reachable, its C API's."""
    version = potstate.onednn_version()
    assert version, "torch's build report names no oneDNN version"
    _, uncapped, printed = potstate.onednn_reported_isa()
    assert printed == version, (printed, version)
    rows = []
    for cap in ONEDNN_CAPS:
        env = {} if cap is None else {"ONEDNN_MAX_CPU_ISA": cap}
        api, reported, _ = potstate.onednn_reported_isa(env)
        if api is not None:
            assert api == reported, (cap, api, reported)
        derived = potstate.derived_onednn_isa(cap=cap or "all", version=version)
        assert derived == reported, (cap, derived, reported)
        rc, cls, err = pot(pot_cli, "spec", "hardware-class", env=env)
        known = cap is None or cap.lower() == "all" or cap.lower() in potstate.onednn_caps(version)
        if known or api is not None:
            assert rc == 0 and "/onednn:" in cls, (cap, cls, err)
            ours = cls.split("/onednn:")[1]
            assert ours == reported, (cap, ours, reported)
        else:
            # A cap this release does not name: oneDNN ignores it; libpot,
            # deriving, cannot tell which ISA the user meant, and refuses.
            assert reported == uncapped, (cap, reported, uncapped)
            assert rc != 0 and f"ONEDNN_MAX_CPU_ISA='{cap}' is no ISA of oneDNN {version[0]}.{version[1]}" in err, (
                cap, rc, cls, err)
            ours = "(refused)"
        rows.append(f"  {str(cap):22} libpot {ours:22} derived {derived:22} oneDNN {reported:22} C API {api}")
    with capsys.disabled():
        print(f"\noneDNN {version[0]}.{version[1]}, torch {torch.__version__}:\n" + "\n".join(rows))
    # A cap oneDNN does not name: libpot refuses to name a class (it cannot
    # tell what oneDNN runs) where it derives the ISA itself.
    if potstate.onednn_api_isa() is None:
        rc, out, err = pot(pot_cli, "spec", "hardware-class", env={"ONEDNN_MAX_CPU_ISA": "AVX9000"})
        assert rc != 0 and "ONEDNN_MAX_CPU_ISA='AVX9000' is no ISA of oneDNN" in err, (rc, out, err)


def test_potstate_names_each_releases_isa_on_the_cpus_of_the_ladder():
    """potstate's derivation (the reference of the test above) on CPUs this
    machine is not: the /proc/cpuinfo flags of each, the names of each
    release (tests/unit/test_cpu_isa.cpp holds libpot's side)."""
    avx2 = {"sse4_1", "avx", "avx2"}
    skx = avx2 | {"avx512f", "avx512dq", "avx512bw", "avx512vl"}
    cpx = skx | {"avx512_vnni", "avx512_bf16"}
    spr = cpx | {"avx_vnni", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16"}
    gnr = spr | {"amx_fp16"}
    adl = avx2 | {"avx_vnni"}
    want = {  # cpu, cap: names under 2.6, 3.5, 3.13
        ("avx2", "all"): ("avx2",) * 3,
        ("adl", "all"): ("avx2_vnni",) * 3,
        ("adl+", "all"): ("avx2_vnni", "avx2_vnni_2", "avx2_vnni_2"),
        ("cpx", "all"): ("avx512_core_bf16",) * 3,
        ("spr", "all"): ("avx512_core_amx", "avx512_core_amx", "avx10_1_512_amx"),
        ("gnr", "all"): ("avx512_core_amx", "avx512_core_amx_fp16", "avx10_1_512_amx_fp16"),
        ("spr-amx", "all"): ("avx512_core_bf16", "avx512_core_fp16", "avx10_1_512"),
        ("spr", "AVX512_CORE_BF16"): ("avx512_core_bf16",) * 3,
        ("spr", "AVX2_VNNI"): ("avx2_vnni",) * 3,
        ("cpx", "AVX2_VNNI"): ("avx2",) * 3,
        # Unknown to 2.6 (ignored: the whole CPU), and to 3.5 for the 3.6 names.
        ("spr", "AVX512_CORE_FP16"): ("avx512_core_amx", "avx512_core_fp16", "avx10_1_512"),
        ("gnr", "AVX10_1_512_AMX"): ("avx512_core_amx", "avx512_core_amx_fp16", "avx10_1_512_amx"),
    }
    cpus = {"avx2": avx2, "adl": adl, "adl+": adl | {"avx_vnni_int8", "avx_ne_convert"}, "cpx": cpx, "spr": spr,
            "gnr": gnr, "spr-amx": spr - {"amx_tile", "amx_int8", "amx_bf16"}}
    for (cpu, cap), names in want.items():
        got = tuple(potstate.derived_onednn_isa(cpus[cpu], cap, v) for v in ((2, 6), (3, 5), (3, 13)))
        assert got == names, (cpu, cap, got, names)


def test_copied_run_under_another_identity_fails_every_step(tmp_path, record_run_bin, pot_cli, check_run_bin,
                                                           honest):
    # Attack 5 under a listed schedule: a second identity registers the
    # honest run's states under its own commitment (same task, same S_0 and
    # schedule). The per-step seeds name the run, so the dropout masks of
    # the copier's run are not the ones the states were trained with.
    ck = tmp_path / "ck"
    info = record(record_run_bin, honest, ck, "--identity", "7468696566", "--every", 1)  # "thief"
    meta = json.load(open(os.path.join(honest, "run.json")))
    assert info["run_id"] != meta["run_id"]
    for t in (1, 7, STEPS):
        rc, res, err = serve_and_verify(pot_cli, honest, ck, info, t)
        assert rc == 1 and res["check"] == "replayed_state", (t, res, err)
    rc, _, summary = check(check_run_bin, honest, "--run-id", info["run_id"])
    assert rc == 1 and summary["matched"] == 0, summary
    # Trained for its own commitment, the second identity's run verifies
    # (its first steps: the same task, so the same run id as the copy's).
    own = train(tmp_path / "own", "--model", "transformer", "--optim", "adamw", "--steps", STEPS,
                "--identity", "7468696566", "--dump-states", "0-3")
    rc, _, summary = check(check_run_bin, own, "--steps", "1-3")
    assert rc == 0 and summary["matched"] == 3, summary
    assert json.load(open(os.path.join(own, "run.json")))["run_id"] == info["run_id"]


def test_forged_step_fails_at_the_replayed_state(tmp_path, record_run_bin, pot_cli, honest):
    forged = str(tmp_path / "forged")
    shutil.copytree(honest, forged)
    path = os.path.join(forged, "states", "000010.safetensors")
    state = potstate.read_safetensors(path)
    state["param/net.wpe.weight"] = state["param/net.wpe.weight"] * 0.5
    potstate.write_safetensors(path, state)
    ck = tmp_path / "ck"
    info = record(record_run_bin, forged, ck)
    for t in (10, 11):
        rc, res, err = serve_and_verify(pot_cli, forged, ck, info, t)
        assert rc == 1 and res["check"] == "replayed_state", (t, res)
        assert "leaf" in res["message"]
    # Honest steps of the same run still verify.
    rc, res, err = serve_and_verify(pot_cli, forged, ck, info, 9)
    assert rc == 0, err
    # A pre-state that would have to be re-derived through the forged step
    # cannot be served at all: the replay from checkpoint 10 does not reach
    # the logged S_11.
    manifest = str(tmp_path / "m12.bin")
    rc, _, err = pot(pot_cli, "open", "make", ck, "--step", 13, "--dataset", os.path.join(forged, "samples"),
                     "--out", manifest)
    assert rc == 1 and "re-deriving S_12 from checkpoint 10: step 11" in err, err


def test_training_on_other_data_than_committed_is_caught(tmp_path, record_run_bin, pot_cli, honest):
    # Trained on data set B, committed to data set A (the honest run's
    # samples): the served samples are A's, the replay diverges.
    other_data = train(tmp_path / "b", "--model", "transformer", "--optim", "adamw", "--steps", STEPS,
                       "--data-seed", 8)
    ck = tmp_path / "ck"
    # A cheater keeps every state: nothing to re-derive (which would fail).
    info = record(record_run_bin, other_data, ck, "--samples", os.path.join(honest, "samples"), "--every", 1)
    rc, res, err = serve_and_verify(pot_cli, other_data, ck, info, 6, samples=os.path.join(honest, "samples"))
    assert rc == 1 and res["check"] == "replayed_state", res


def test_substituted_pre_state_fails_at_pre_state_digest(tmp_path, record_run_bin, pot_cli, honest, other):
    ck = tmp_path / "ck"
    info = record(record_run_bin, honest, ck)
    t = 10
    manifest = str(tmp_path / "m.bin")
    rc, served, err = pot(pot_cli, "open", "make", ck, "--step", t, "--dataset", os.path.join(honest, "samples"),
                          "--out", manifest, "--json")
    assert rc == 0, err
    pretrained = os.path.join(other, "states", f"{2 * STEPS:06d}.safetensors")
    rc, res, err = pot(pot_cli, "verify", manifest, "--step", t, "--commitment", ck / "commitment.bin",
                       "--spec", os.path.join(honest, "spec.json"), "--program", os.path.join(honest, "program.pt"),
                       "--root", info["root"], "--size", info["size"], "--pre-state", pretrained, "--json")
    assert rc == 1 and res["check"] == "pre_state_digest" and not res["replayed"], res


def test_corrupted_checkpoint_is_not_served(tmp_path, record_run_bin, pot_cli, honest):
    ck = tmp_path / "ck"
    record(record_run_bin, honest, ck)
    path = str(ck / "checkpoints" / f"{EVERY:012d}.safetensors")
    state = potstate.read_safetensors(path)
    state["param/net.ln_f.bias"] = state["param/net.ln_f.bias"] + 1
    potstate.write_safetensors(path, state)
    rc, _, err = pot(pot_cli, "checkpoints", "state", ck, "--step", EVERY + 2, "--dataset",
                     os.path.join(honest, "samples"))
    assert rc == 1 and "does not digest to the state the log records" in err, err


def test_recorder_refuses_misuse(tmp_path, record_run_bin, honest):
    ck = tmp_path / "ck"
    record(record_run_bin, honest, ck)
    # The directory already holds a run.
    p = subprocess.run([record_run_bin, honest, str(ck)], capture_output=True, text=True)
    assert p.returncode == 3 and json.loads(p.stdout)["error"] == "POT_E_CONFLICT"
    # A program that is not the spec's.
    bad = str(tmp_path / "bad")
    shutil.copytree(honest, bad)
    with open(os.path.join(bad, "program.pt"), "ab") as f:
        f.write(b"\0")
    p = subprocess.run([record_run_bin, bad, str(tmp_path / "ck2")], capture_output=True, text=True)
    assert p.returncode == 3 and json.loads(p.stdout)["error"] == "POT_E_PROOF_MISMATCH"


def test_pot_replay_cli_reproduces_a_step(tmp_path, pot_cli, honest):
    meta = json.load(open(os.path.join(honest, "run.json")))
    t = 7
    rc, sched, err = pot(pot_cli, "commit", "schedule", "--dataset-size", meta["dataset_size"], "--entries",
                         os.path.join(honest, "schedule.json"), "--prove", t, "--json")
    assert rc == 0, err
    indices = [i for mb in json.load(open(os.path.join(honest, "schedule.json")))[t - 1] for i in mb]
    samples = [os.path.join(honest, "samples", f"{i:06d}.safetensors") for i in indices]
    out = str(tmp_path / "s7.safetensors")
    rc, res, err = pot(pot_cli, "replay", "--spec", os.path.join(honest, "spec.json"), "--program",
                       os.path.join(honest, "program.pt"), "--pre-state",
                       os.path.join(honest, "states", f"{t - 1:06d}.safetensors"), "--entry", sched["leaf"],
                       "--sample", *samples, "--out", out, "--run-id", meta["run_id"], "--json")
    assert rc == 0, err
    want = subprocess.run([pot_cli, "hash", "state", os.path.join(honest, "states", f"{t:06d}.safetensors")],
                          capture_output=True, text=True).stdout.strip()
    assert res["state_digest"] == want
    got = subprocess.run([pot_cli, "hash", "state", out], capture_output=True, text=True).stdout.strip()
    assert got == want
    assert struct.pack(">d", res["loss"]).hex() == meta["loss_bits"][t - 1]
    # Samples in another order are another batch: the bits change.
    rc, res2, err = pot(pot_cli, "replay", "--spec", os.path.join(honest, "spec.json"), "--program",
                        os.path.join(honest, "program.pt"), "--pre-state",
                        os.path.join(honest, "states", f"{t - 1:06d}.safetensors"), "--entry", sched["leaf"],
                        "--sample", *reversed(samples), "--run-id", meta["run_id"], "--json")
    assert rc == 0 and res2["state_digest"] != want
    # Too few samples for the entry.
    rc, _, err = pot(pot_cli, "replay", "--spec", os.path.join(honest, "spec.json"), "--program",
                     os.path.join(honest, "program.pt"), "--pre-state",
                     os.path.join(honest, "states", f"{t - 1:06d}.safetensors"), "--entry", sched["leaf"],
                     "--sample", *samples[:-1], "--run-id", meta["run_id"])
    assert rc == 2 and f"holds {len(samples) - 1} samples" in err and f"lists {len(samples)}" in err, err
    # Too many: refused as the extra sample is added, naming the entry's count.
    rc, _, err = pot(pot_cli, "replay", "--spec", os.path.join(honest, "spec.json"), "--program",
                     os.path.join(honest, "program.pt"), "--pre-state",
                     os.path.join(honest, "states", f"{t - 1:06d}.safetensors"), "--entry", sched["leaf"],
                     "--sample", *samples, samples[0], "--run-id", meta["run_id"])
    assert rc == 2 and f"lists {len(samples)} samples, all of them added" in err, err
    # Without the run, a per_step step has no seed.
    rc, _, err = pot(pot_cli, "replay", "--spec", os.path.join(honest, "spec.json"), "--program",
                     os.path.join(honest, "program.pt"), "--pre-state",
                     os.path.join(honest, "states", f"{t - 1:06d}.safetensors"), "--entry", sched["leaf"],
                     "--sample", *samples)
    assert rc == 2 and "names its run" in err, err
