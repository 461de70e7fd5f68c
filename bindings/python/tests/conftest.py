"""Shared helpers of the pot binding tests."""

import hashlib
import json
import os
import struct
from pathlib import Path

import pytest

import pot

HERE = Path(__file__).resolve().parent
#: The repository's shared known-answer vectors (tests/vectors).
VECTORS = Path(os.environ.get("POT_VECTORS_DIR", HERE.parent.parent.parent / "tests" / "vectors"))


def load_vectors(name):
    """tests/vectors/<name>, parsed (integers stay exact in Python)."""
    with open(VECTORS / name, encoding="utf-8") as f:
        return json.load(f)


#: The bonds (docs/ledger.md 2.18) of the tests' ledgers: what a task's
#: owner, a run's miner and a disputant lock, how long a task may run, how
#: many tasks an owner holds, and the miner's grace in disputes (0: the
#: tests' dispute timings are the window's).
LEDGER_BONDS = dict(task_bond=10, miner_bond=1000, dispute_bond=100, max_task_blocks=10**7, max_open_tasks=8,
                    miner_grace=0)
#: What the tests deposit for each identity that bonds: far more than any bond.
FUNDS = 10**6


def fund(ledger, now, *identities, amount=FUNDS):
    """The runtime's deposits of `amount` for each identity (bytes)."""
    for who in identities:
        ledger.apply({"call": "deposit", "identity": who.hex(), "amount": amount, "now": now})


def transcript_ledger(cfg):
    """A pot.Ledger from a transcript's config (its referee is hex in JSON,
    bytes in Python)."""
    import pot
    cfg = dict(cfg)
    if "referee" in cfg:
        cfg["referee"] = bytes.fromhex(cfg["referee"])
    return pot.Ledger(**cfg)


def stream(seed, n):
    """The tensor bytes of hash.json: the first n bytes of
    SHA-256(seed || u64le(0)) || SHA-256(seed || u64le(1)) || ...,
    computed with hashlib, independently of libpot."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(seed.encode() + struct.pack("<Q", i)).digest()
        i += 1
    return bytes(out[:n])


def u64le(v):
    return struct.pack("<Q", v)


def f32bytes(*vs):
    return struct.pack("<%df" % len(vs), *vs)


def want_error(excinfo, cls, code):
    """The raised error is exactly of class cls (a pot.Error), with the code,
    the status name and a message."""
    e = excinfo.value
    assert type(e) is cls, f"{type(e).__name__}: {e}"
    assert e.code == code and isinstance(e.code, pot.Status)
    assert e.status == pot.status_name(code) == code.c_name
    assert e.message, "an error without a message"
    return e


# The torch release libpot replays (Debian's 1.13, or a torch 2.x wheel's):
# the spec's framework_version must name it.
FRAMEWORK_VERSION = pot.framework_version() if pot.replay_available() else "1.13.1"


def spec_json(program_digest, **over):
    """A valid execution spec whose model program has the given digest
    (SGD, per_step seeds from base seed 7), of this process's hardware class
    where libpot has the replay."""
    spec = {
        "framework": "pytorch", "framework_version": FRAMEWORK_VERSION, "model_program_digest": bytes(program_digest).hex(),
        "dtype": "F32", "attention_backend": "math", "dropout": 0.0, "optimizer": {"kind": "sgd", "lr": 0.1},
        "batch_size": 2, "intra_op_threads": 1, "norm_bucket_resolution": 16,
        "hardware_class": pot.hardware_class() if pot.replay_available() else "cpu-x86_64/aten:avx2/onednn:avx2",
        "seed_policy": {"kind": "per_step", "base_seed": 7},
    }
    spec.update(over)
    return spec


@pytest.fixture
def hash_vectors():
    return load_vectors("hash.json")


def assert_every_step_verifies(rec, program, steps):
    """Every step of a finished pot.torch.Recorder run, served and verified
    against its root, as a verifier would (the callbacks' honest runs)."""
    import pot
    root = rec.root()
    for t in range(1, steps + 1):
        r = pot.verify_step(rec.commitment, rec.spec, str(program), t, steps, root, rec.serve(t),
                            rec.state_path(t - 1))
        assert r.ok, (t, r)
