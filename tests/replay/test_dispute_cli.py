"""`pot dispute` (docs/cli.md) on a real run of train.py: the trace of a
step is the same twice, a node decodes, a party's opening is written, and
the referee's ruling names the party whose claimed root its opening does
not prove against; a pre-state other than the agreed one is refused."""
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_hostile_replay import recorded, run_pot, small, step3  # noqa: E402,F401

sys.path.insert(0, os.path.join(HERE, "..", "interop"))
import independent  # noqa: E402


def step_args(a):
    return ["--spec", a["spec"], "--program", a["program"], "--pre-state", a["pre"], "--entry", a["entry"],
            "--sample", *a["samples"], "--run-id", a["run_id"]]


def test_dispute_commands(pot_cli, step3, tmp_path):  # noqa: F811
    rc, out, err, _ = run_pot(pot_cli, "dispute", "trace", *step_args(step3), "--root-at", 5, "--root-at", 6,
                              "--out", tmp_path / "trace.json", "--json")
    assert rc == 0, err
    t = json.loads(out)
    rc, again, err, _ = run_pot(pot_cli, "dispute", "trace", *step_args(step3), "--json")
    assert rc == 0 and json.loads(again)["root"] == t["root"], err
    nodes = json.loads((tmp_path / "trace.json").read_text())
    assert len(nodes) == t["nodes"] > 50
    rc, node, err, _ = run_pot(pot_cli, "dispute", "node", nodes[5])
    assert rc == 0 and json.loads(node)["name"].startswith("aten::"), err
    rc, out, err, _ = run_pot(pot_cli, "dispute", "points", "--lo", 0, "--hi", t["nodes"], "--arity", 4, "--json")
    assert rc == 0 and len(json.loads(out)["points"]) == 3, err

    rc, out, err, _ = run_pot(pot_cli, "dispute", "open", *step_args(step3), "--node", 5,
                              "--out", tmp_path / "open5.bin")
    assert rc == 0 and (tmp_path / "open5.bin").stat().st_size == int(out), err
    rc, pre, err, _ = run_pot(pot_cli, "hash", "state", step3["pre"])
    assert rc == 0, err
    decide = ["dispute", "decide", *step_args(step3), "--node", 5, "--agreed-root", t["roots"]["5"],
              "--a-root", t["roots"]["6"], "--b-root", "ab" * 32, "--a-opening", tmp_path / "open5.bin",
              "--b-opening", tmp_path / "open5.bin"]
    rc, out, err, _ = run_pot(pot_cli, *decide, "--pre-state-digest", pre.split()[0], "--json")
    assert rc == 0, err
    ruling = json.loads(out)
    assert (ruling["a_loses"], ruling["b_loses"], ruling["rule"]) == (False, True, "opening"), ruling
    rc, out, err, _ = run_pot(pot_cli, *decide, "--pre-state-digest", "00" * 32)
    assert rc != 0 and "POT_E_PROOF_MISMATCH" in err, (rc, err)


def test_dispute_leaves_are_the_committed_leaves(pot_cli, recorded):  # noqa: F811
    """The miner's side of a ledger dispute: `pot dispute leaves` gives each
    committed leaf of a recorded run with its inclusion proof in the run's
    root (checked here with hashlib alone), in the order asked, in the form
    claim_dispute takes; a step past the log is refused."""
    ck, info = recorded
    steps = [info["size"], 1, 2]
    args = [a for t in steps for a in ("--step", t)]
    rc, out, err, _ = run_pot(pot_cli, "dispute", "leaves", ck, *args, "--json")
    assert rc == 0, err
    claims = json.loads(out)["claims"]
    assert len(claims) == len(steps)
    root = bytes.fromhex(info["root"])
    for t, c in zip(steps, claims):
        leaf, proof = bytes.fromhex(c["step_leaf"]), bytes.fromhex(c["leaf_proof"])
        run_id, step, _ = independent.step_leaf_fields(leaf)
        assert (run_id.hex(), step) == (info["run_id"], t)
        hashes = [proof[i:i + 32] for i in range(0, len(proof), 32)]
        assert independent.verify_inclusion(t - 1, info["size"], independent.leaf_hash(leaf), hashes, root)
    rc, out, err, _ = run_pot(pot_cli, "dispute", "leaves", ck, "--step", info["size"] + 1)
    assert rc == 2 and "POT_E_OUT_OF_RANGE" in err, (rc, err)


def test_checkpoints_flags_are_the_runs_tables_flags(pot_cli, recorded):  # noqa: F811
    """What a miner seals with (docs/ledger.md 2.3): `pot checkpoints flags`
    gives the flagged steps of the recorded run's statistics tables, which
    independent.py recomputes from the stats/ files after checking each
    against the digest steps.jsonl (and the leaf) commits. An honest run
    flags no step; a log size past the run is refused."""
    ck, info = recorded
    rc, out, err, _ = run_pot(pot_cli, "checkpoints", "flags", ck, "--json")
    assert rc == 0, err
    got = json.loads(out)
    assert got["log_size"] == info["size"]
    lines = [json.loads(line) for line in open(os.path.join(ck, "steps.jsonl"))]
    tables = []
    for t in range(1, info["size"] + 1):
        with open(os.path.join(ck, "stats", f"{t:012d}.stats"), "rb") as f:
            table = f.read()
        assert independent.tagged("pot/v1/state-stats", table).hex() == lines[t - 1]["stats_digest"], t
        tables.append(table)
    want = independent.run_flags(tables)
    assert got["steps"] == want and got["flagged_steps"] == [s["step"] for s in want] == []
    rc, out, err, _ = run_pot(pot_cli, "checkpoints", "flags", ck)
    assert rc == 0 and out.strip() == "no step is flagged", (out, err)
    rc, out, err, _ = run_pot(pot_cli, "checkpoints", "flags", ck, "--size", info["size"] + 1)
    assert rc == 2 and "POT_E_OUT_OF_RANGE" in err, (rc, err)
