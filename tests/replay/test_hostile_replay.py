"""Hostile replay inputs (docs/security.md section 4): model programs, state
files, samples and checkpoint directories that are empty, truncated, garbage,
non-finite or inconsistent. Each is refused by the CLI (which goes through the
C API) with a non-zero exit code (docs/cli.md) and one line naming the problem
and its status, never POT_E_INTERNAL, a crash (a signal), a hang or a served
file that does not match the log."""
import json
import os
import shutil
import struct
import subprocess
import sys
import time

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import potstate  # noqa: E402
from test_replay import pot, record, train  # noqa: E402

STEPS = 6
TIMEOUT = 120  # a hang guard, not a performance target


def run_pot(pot_cli, *args):
    t0 = time.monotonic()
    p = subprocess.run([pot_cli, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode >= 0, f"killed by signal {-p.returncode}: {p.stderr}"
    return p.returncode, p.stdout.strip(), p.stderr.strip(), time.monotonic() - t0


def assert_refused(rc, err, *statuses):
    """Refused with a status (one of `statuses` when given), not a bug."""
    assert rc in (1, 2, 3), (rc, err)
    assert "(POT_E_" in err and "POT_E_INTERNAL" not in err, err
    if statuses:
        assert any(f"({s})" in err for s in statuses), (statuses, err)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return train(tmp_path_factory.mktemp("small"), "--model", "mlp", "--optim", "adamw", "--steps", STEPS)


@pytest.fixture(scope="module")
def step3(pot_cli, small):
    """Arguments of `pot replay` for step 3 of the small run."""
    meta = json.load(open(os.path.join(small, "run.json")))
    rc, sched, err = pot(pot_cli, "commit", "schedule", "--dataset-size", meta["dataset_size"], "--entries",
                         os.path.join(small, "schedule.json"), "--prove", 3, "--json")
    assert rc == 0, err
    indices = [i for mb in json.load(open(os.path.join(small, "schedule.json")))[2] for i in mb]
    return {
        "spec": os.path.join(small, "spec.json"),
        "program": os.path.join(small, "program.pt"),
        "pre": os.path.join(small, "states", "000002.safetensors"),
        "entry": sched["leaf"],
        "samples": [os.path.join(small, "samples", f"{i:06d}.safetensors") for i in indices],
        "run_id": meta["run_id"],
    }


def replay(pot_cli, a, **over):
    a = {**a, **over}
    return run_pot(pot_cli, "replay", "--spec", a["spec"], "--program", a["program"], "--pre-state", a["pre"],
                   "--entry", a["entry"], "--sample", *a["samples"], "--run-id", a["run_id"], "--json")


def test_the_honest_step_replays(pot_cli, step3):
    rc, out, err, _ = replay(pot_cli, step3)
    assert rc == 0, err


def spec_for_program(tmp_path, step3, program_bytes):
    """A spec whose model_program_digest is that of program_bytes, so the
    loader itself sees the bytes."""
    prog = str(tmp_path / "program.pt")
    with open(prog, "wb") as f:
        f.write(program_bytes)
    spec = json.load(open(step3["spec"]))
    spec["model_program_digest"] = potstate.program_digest(prog).hex()
    path = str(tmp_path / "spec.json")
    json.dump(spec, open(path, "w"))
    return {"spec": path, "program": prog}


def program_cases(step3):
    good = open(step3["program"], "rb").read()
    tail = bytearray(good)
    for i in range(len(tail) - 64, len(tail)):  # the zip's central directory
        tail[i] ^= 0xFF
    return {
        "empty": b"",
        "garbage": bytes(range(256)) * 64,
        "truncated zip": good[: len(good) // 2],
        "zip with a corrupted directory": bytes(tail),
        "not torchscript (a safetensors file)": open(step3["pre"], "rb").read(),
    }


@pytest.mark.parametrize("case", ["empty", "garbage", "truncated zip", "zip with a corrupted directory",
                                  "not torchscript (a safetensors file)"])
def test_hostile_model_programs_are_refused(tmp_path, pot_cli, step3, case):
    over = spec_for_program(tmp_path, step3, program_cases(step3)[case])
    rc, out, err, _ = replay(pot_cli, step3, **over)
    assert_refused(rc, err, "POT_E_INVALID_ARGUMENT", "POT_E_MALFORMED")
    assert "model program" in err, err


def test_corrupted_program_records_do_not_crash(tmp_path, pot_cli, step3):
    # Bytes changed inside the zip's records: LibTorch may or may not notice
    # (its reader does not check every record's CRC); the digest already
    # makes it another program. Either way: a result or a refusal, no crash.
    good = bytearray(open(step3["program"], "rb").read())
    for start in range(0, len(good) - 64, max(64, len(good) // 16)):
        bad = bytearray(good)
        for i in range(start, start + 64):
            bad[i] ^= 0xFF
        over = spec_for_program(tmp_path, step3, bytes(bad))
        rc, out, err, _ = replay(pot_cli, step3, **over)
        if rc != 0:
            assert_refused(rc, err)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def test_hostile_state_files_are_refused(tmp_path, pot_cli, step3):
    good = open(step3["pre"], "rb").read()
    header_len = struct.unpack("<Q", good[:8])[0]
    cases = {
        "empty": (b"", "too short"),
        "truncated in the header": (good[: 8 + header_len // 2], "header"),
        "truncated in the data": (good[: len(good) - 7], ""),
        "header claims 2^62 bytes": (struct.pack("<Q", 1 << 62) + good[8:], "limit"),
    }
    for name, (data, words) in cases.items():
        rc, out, err, _ = replay(pot_cli, step3, pre=write(tmp_path / "pre.safetensors", data))
        assert_refused(rc, err, "POT_E_MALFORMED", "POT_E_LIMIT")
        assert words.lower() in err.lower(), (name, err)


def test_duplicate_tensor_names_are_refused(tmp_path, pot_cli, step3):
    good = open(step3["pre"], "rb").read()
    n = struct.unpack("<Q", good[:8])[0]
    header = json.loads(good[8 : 8 + n])
    name = next(k for k in header if k != "__metadata__")
    # The same key twice in the JSON text (json.dumps cannot write it).
    text = json.dumps(header)
    entry = json.dumps({name: header[name]})[1:-1]
    dup = ("{" + entry + ", " + text[1:]).encode()
    dup += b" " * ((8 - len(dup) % 8) % 8)
    rc, out, err, _ = replay(pot_cli, step3,
                             pre=write(tmp_path / "dup.safetensors", struct.pack("<Q", len(dup)) + dup + good[8 + n :]))
    assert_refused(rc, err, "POT_E_MALFORMED")
    assert "repeats the key" in err, err


def test_non_finite_states_and_samples(tmp_path, pot_cli, step3):
    # NaN weights: the step runs, its loss is NaN, and the replay refuses to
    # call that a result (POT_E_NONFINITE).
    state = potstate.read_safetensors(step3["pre"])
    for k, v in state.items():
        if k.startswith("param/") and v.is_floating_point():
            state[k] = torch.full_like(v, float("nan"))
    path = str(tmp_path / "nan.safetensors")
    potstate.write_safetensors(path, state)
    rc, out, err, _ = replay(pot_cli, step3, pre=path)
    assert_refused(rc, err, "POT_E_NONFINITE")
    # An infinite input sample: the same.
    sample = potstate.read_safetensors(step3["samples"][0])
    for k, v in sample.items():
        if v.is_floating_point():
            sample[k] = torch.full_like(v, float("inf"))
    spath = str(tmp_path / "inf-sample.safetensors")
    potstate.write_safetensors(spath, sample)
    rc, out, err, _ = replay(pot_cli, step3, samples=[spath] + step3["samples"][1:])
    assert_refused(rc, err, "POT_E_NONFINITE")


def test_hostile_samples_are_refused(tmp_path, pot_cli, step3):
    good = open(step3["samples"][0], "rb").read()
    for name, data in {"empty": b"", "truncated": good[: len(good) // 2], "garbage": b"\xff" * 64}.items():
        rc, out, err, _ = replay(pot_cli, step3, samples=[write(tmp_path / "s.safetensors", data)] +
                                 step3["samples"][1:])
        assert_refused(rc, err, "POT_E_MALFORMED", "POT_E_LIMIT")
    # A sample of another shape than the program takes: refused by the
    # program's forward (LibTorch's error, as POT_E_INVALID_ARGUMENT or
    # POT_E_BACKEND), not a crash.
    sample = potstate.read_safetensors(step3["samples"][0])
    sample = {k: torch.cat([v, v]) if v.dim() > 0 else v for k, v in sample.items()}
    spath = str(tmp_path / "wide.safetensors")
    potstate.write_safetensors(spath, sample)
    rc, out, err, _ = replay(pot_cli, step3, samples=[spath] + step3["samples"][1:])
    assert_refused(rc, err, "POT_E_INVALID_ARGUMENT", "POT_E_BACKEND")


# Checkpoint directories: every file of docs/PROTOCOL.md section 21.4
# damaged in turn; opening or serving from the directory must refuse.

@pytest.fixture(scope="module")
def recorded(tmp_path_factory, record_run_bin, small):
    ck = tmp_path_factory.mktemp("rec") / "ck"
    info = record(record_run_bin, small, ck, "--every", 3)
    return str(ck), info


def damaged(tmp_path, recorded, name, edit):
    src, _ = recorded
    dst = str(tmp_path / "ck")
    shutil.copytree(src, dst)
    path = os.path.join(dst, name)
    data = open(path, "rb").read() if os.path.exists(path) else b""
    new = edit(data)
    if new is None:
        os.remove(path)
    else:
        write(path, new)
    return dst


CHECKPOINT_CASES = {
    "pot-run.json missing": ("pot-run.json", lambda b: None),
    "pot-run.json not JSON": ("pot-run.json", lambda b: b"{not json"),
    "pot-run.json empty": ("pot-run.json", lambda b: b""),
    "steps.jsonl truncated mid-line": ("steps.jsonl", lambda b: b[: len(b) - 20]),
    "steps.jsonl with an extra line": ("steps.jsonl", lambda b: b + b.splitlines(keepends=True)[-1]),
    "steps.jsonl with a non-hex digest": ("steps.jsonl", lambda b: b.replace(b'"state_digest":"', b'"state_digest":"zz', 1)),
    "schedule.bin claims a 4 GiB entry": ("schedule.bin", lambda b: struct.pack("<I", 0xFFFFFFFF) + b[4:]),
    "schedule.bin truncated": ("schedule.bin", lambda b: b[: len(b) - 3]),
    "schedule.bin empty": ("schedule.bin", lambda b: b""),
    "commitment.bin garbage": ("commitment.bin", lambda b: b"\x08" * 40),
    "commitment.bin missing": ("commitment.bin", lambda b: None),
    "log.tree torn": ("log.tree", lambda b: b[: len(b) - 5]),
    "log.tree foreign": ("log.tree", lambda b: b"NOTATREE" + b[8:]),
    "program.pt changed": ("program.pt", lambda b: b + b"\0"),
}


@pytest.mark.parametrize("case", sorted(CHECKPOINT_CASES))
def test_damaged_checkpoint_directories_are_refused(tmp_path, pot_cli, small, recorded, case):
    name, edit = CHECKPOINT_CASES[case]
    ck = damaged(tmp_path, recorded, name, edit)
    rc, out, err, secs = run_pot(pot_cli, "checkpoints", "state", ck, "--step", 2, "--dataset",
                                 os.path.join(small, "samples"))
    assert_refused(rc, err)


@pytest.mark.parametrize("old", [b"1", b"2"])
def test_an_earlier_checkpoint_directory_is_refused_naming_the_version(tmp_path, pot_cli, small, recorded, old):
    # Format 1 carried the miner's next_lr per step; format 2 (pot 0.2) has
    # version-2 leaves, which commit no statistics table: neither is served.
    ck = damaged(tmp_path, recorded, "pot-run.json",
                 lambda b: b.replace(b'"pot-checkpoints/3"', b'"pot-checkpoints/' + old + b'"'))
    rc, out, err, _ = run_pot(pot_cli, "checkpoints", "state", ck, "--step", 2, "--dataset",
                              os.path.join(small, "samples"))
    assert_refused(rc, err, "POT_E_UNSUPPORTED")
    assert "pot-checkpoints/" + old.decode() in err and "protocol version 1" in err and "pot 0.2" in err, err


def test_damaged_checkpoint_files_are_not_served(tmp_path, pot_cli, small, recorded):
    # A checkpoint emptied, and a re-derived state in the cache tampered with:
    # neither is served; the tampered cache entry is derived again.
    ck = damaged(tmp_path, recorded, "checkpoints/000000000003.safetensors", lambda b: b"")
    rc, out, err, _ = run_pot(pot_cli, "checkpoints", "state", ck, "--step", 4, "--dataset",
                              os.path.join(small, "samples"))
    assert_refused(rc, err)
    src, _ = recorded
    ck2 = str(tmp_path / "ck2")
    shutil.copytree(src, ck2)
    rc, first, err, _ = run_pot(pot_cli, "checkpoints", "state", ck2, "--step", 2, "--dataset",
                                os.path.join(small, "samples"))
    assert rc == 0, err
    want = subprocess.run([pot_cli, "hash", "state", first], capture_output=True, text=True).stdout.strip()
    state = potstate.read_safetensors(first)
    k = next(k for k in state if k.startswith("param/"))
    state[k] = state[k] + 1
    potstate.write_safetensors(first, state)
    rc, again, err, _ = run_pot(pot_cli, "checkpoints", "state", ck2, "--step", 2, "--dataset",
                                os.path.join(small, "samples"))
    assert rc == 0, err
    got = subprocess.run([pot_cli, "hash", "state", again], capture_output=True, text=True).stdout.strip()
    assert got == want
    assert not [f for f in os.listdir(os.path.join(ck2, "derived")) if ".tmp" in f]


def test_step_numbers_out_of_range(tmp_path, pot_cli, small, recorded):
    ck, _ = recorded
    for step in (STEPS + 1, 2**63, 2**64 - 1):
        rc, out, err, _ = run_pot(pot_cli, "checkpoints", "state", ck, "--step", step, "--dataset",
                                  os.path.join(small, "samples"))
        assert_refused(rc, err, "POT_E_OUT_OF_RANGE")
