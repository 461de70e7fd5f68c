"""The pot CLI (docs/cli.md): merkle subcommands on the RFC 6962 vectors,
exit statuses and one-line errors."""
import json
import os
import subprocess

POT = os.environ["POT_CLI"]
VECTORS = os.path.join(os.path.dirname(__file__), "..", "vectors")


def run(*args, stdin=None):
    return subprocess.run([POT, *args], input=stdin, capture_output=True, text=True)


def rfc():
    with open(os.path.join(VECTORS, "rfc6962.json")) as f:
        return json.load(f)


def leaves_file(tmp_path, n=8):
    p = tmp_path / "leaves.txt"
    p.write_text("".join(l["hex"] + "\n" for l in rfc()["leaf_inputs"][:n]))
    return str(p)


def test_root_prove_consistency_match_vectors(tmp_path):
    v = rfc()
    leaves = leaves_file(tmp_path)
    for r in v["roots"]:
        out = run("merkle", "root", leaves_file(tmp_path, r["tree_size"]))
        assert out.returncode == 0 and out.stdout.strip() == r["hex"]
    for p in v["inclusion_proofs"]:
        out = run("merkle", "prove", leaves, "--index", str(p["leaf_index"]), "--size", str(p["tree_size"]), "--json")
        assert json.loads(out.stdout)["proof"] == p["proof"]
        assert json.loads(out.stdout)["root"] == p["root"]
    for p in v["consistency_proofs"]:
        out = run("merkle", "consistency", leaves, "--old", str(p["size1"]), "--new", str(p["size2"]))
        assert out.stdout.split() == p["proof"]


def test_stdin_raw_and_hashed_leaves_agree(tmp_path):
    v = rfc()
    text = "".join(l["hex"] + "\n" for l in v["leaf_inputs"])
    assert run("merkle", "root", "-", stdin=text).stdout.strip() == v["roots"][-1]["hex"]
    files = []
    for l in v["leaf_inputs"]:
        f = tmp_path / f"leaf{l['index']}"
        f.write_bytes(bytes.fromhex(l["hex"]))
        files.append(str(f))
    assert run("merkle", "root", "--raw", *files).stdout.strip() == v["roots"][-1]["hex"]
    hashed = "".join(json.loads(run("merkle", "prove", "-", "--index", str(i), "--json", stdin=text).stdout)["leaf_hash"]
                     + "\n" for i in range(8))
    assert run("merkle", "root", "-", "--hashed", stdin=hashed).stdout.strip() == v["roots"][-1]["hex"]


def test_stored_tree_file(tmp_path):
    v = rfc()
    tree = str(tmp_path / "t.tree")
    assert run("merkle", "build", "--tree", tree, leaves_file(tmp_path, 3)).stdout.strip() == v["roots"][2]["hex"]
    # Appending the rest to the same file continues the log.
    rest = tmp_path / "rest.txt"
    rest.write_text("".join(l["hex"] + "\n" for l in v["leaf_inputs"][3:]))
    assert run("merkle", "build", "--tree", tree, str(rest)).stdout.strip() == v["roots"][-1]["hex"]
    out = json.loads(run("merkle", "consistency", "--tree", tree, "--old", "3", "--json").stdout)
    proof = tmp_path / "p.txt"
    proof.write_text("\n".join(out["proof"]) + "\n")
    ok = run("merkle", "verify-consistency", "--old", "3", "--new", "8", "--old-root", out["old_root"],
             "--new-root", out["new_root"], "--proof", str(proof))
    assert ok.returncode == 0 and ok.stdout.strip() == "OK"


def test_verify_exit_statuses_and_errors(tmp_path):
    v = rfc()
    p = v["inclusion_proofs"][-1]
    proof = tmp_path / "p.txt"
    proof.write_text("\n".join(p["proof"]) + "\n")
    args = ["merkle", "verify-inclusion", "--index", str(p["leaf_index"]), "--size", str(p["tree_size"]),
            "--leaf", p["leaf_input_hex"], "--root", p["root"], "--proof", str(proof)]
    assert run(*args).returncode == 0
    assert json.loads(run(*args, "--json").stdout) == {"valid": True}
    bad_root = list(args)
    bad_root[bad_root.index("--root") + 1] = "00" * 32
    out = run(*bad_root)
    assert out.returncode == 1 and "POT_E_PROOF_MISMATCH" in out.stderr and out.stderr.count("\n") == 1
    proof.write_text("\n".join(p["proof"][:-1]) + "\n")
    out = run(*args)
    assert out.returncode == 1 and "POT_E_PROOF_LENGTH" in out.stderr
    proof.write_text("zz\n")
    assert run(*args).returncode == 2
    out = run("merkle", "prove", leaves_file(tmp_path), "--index", "8")
    assert out.returncode == 2 and "POT_E_OUT_OF_RANGE" in out.stderr
    assert run("merkle", "root", str(tmp_path / "missing")).returncode == 3
    assert run("merkle", "frobnicate").returncode == 2
    assert run("--version").stdout.startswith("pot ")


def protocol_vectors():
    with open(os.path.join(VECTORS, "protocol.json")) as f:
        return json.load(f)


def test_seed_leaf_challenge_security_match_vectors():
    v = protocol_vectors()
    for s in v["seeds"]:
        out = run("seed", "--base", str(s["base_seed"]), "--run-id", s["run_id"], "--step", str(s["step"]))
        assert out.stdout.strip() == str(s["seed"])
    assert run("seed", "--base", "1", "--step", "1").returncode == 2  # the run is required
    import struct
    for l in v["step_leaves"]:
        loss = struct.unpack("<d", bytes.fromhex(l["loss_bits"]))[0]
        norm = struct.unpack("<d", bytes.fromhex(l["update_norm_bits"]))[0]
        out = json.loads(run("leaf", "--run-id", l["run_id"], "--step", str(l["step"]), "--state", l["state_digest"],
                             "--stats", l["stats_digest"], "--loss", repr(loss), "--update-norm", repr(norm),
                             "--json").stdout)
        assert out == {"leaf": l["leaf"], "leaf_hash": l["leaf_hash"]}, l["comment"]
    assert run("leaf", "--step", "1", "--state", "00" * 32, "--loss", "1", "--update-norm", "0").returncode == 2
    for c in v["challenges"]:
        out = run("challenge", "--beacon", c["beacon"], "--run-id", c["run_id"], "--steps", str(c["num_steps"]),
                  "--rounds", str(c["rounds"]), "--json")
        assert json.loads(out.stdout)["steps"] == c["steps"], c["comment"]
    d = v["detection"][2]
    out = json.loads(run("security", "--steps", str(d["steps"]), "--forged-steps", str(d["forged"]),
                         "--challenges", str(d["challenges"]), "--json").stdout)
    assert out["detection_probability"] == d["probability"]
    assert run("security", "--steps", "10000", "--forged-fraction", "0.01", "--target", "0.99").stdout.strip() == "448"
    assert run("challenge", "--beacon", "", "--run-id", "00" * 32, "--steps", "5").returncode == 2
    assert run("challenge", "--beacon", "01", "--run-id", "00" * 32, "--steps", "5", "--rounds", "6").returncode == 2
    assert run("security", "--steps", "10", "--challenges", "3").returncode == 2


def test_security_bond_is_the_least_that_deters():
    """`pot security --reward`: the least integer B with p B >= (1 - p) R for
    the double p printed (docs/PROTOCOL.md 12.2), recomputed here in exact
    rationals."""
    from fractions import Fraction
    for steps, forged, k, reward in ((200, 1, 8, 1000), (10, 2, 3, 7), (10000, 100, 448, 10**12)):
        out = json.loads(run("security", "--steps", str(steps), "--forged-steps", str(forged), "--challenges", str(k),
                             "--reward", str(reward), "--json").stdout)
        p = Fraction(out["detection_probability"])
        need = (1 - p) * reward / p
        least = need.numerator // need.denominator + (need.denominator != 1 and need.numerator % need.denominator != 0)
        assert out["bond"] == least, (out, least)
    # With a target, the bond is that of the challenges needed.
    plain = run("security", "--steps", "200", "--forged-steps", "1", "--target", "0.5", "--reward", "1000").stdout
    assert plain.split() == ["101", "981"]
    bad = run("security", "--steps", "200", "--forged-steps", "0", "--challenges", "8", "--reward", "1")
    assert bad.returncode != 0 and "no bond deters" in bad.stderr


def test_witness_bucket_of_two_states(tmp_path):
    import math
    import numpy as np
    from safetensors.numpy import save_file
    pre = {"model.w": np.array([1.0, 2.0, -3.0], dtype=np.float32), "step": np.array([1], dtype=np.int64)}
    post = {"model.w": np.array([1.5, 2.0, -2.0], dtype=np.float32), "step": np.array([2], dtype=np.int64)}
    save_file(pre, str(tmp_path / "pre.safetensors"))
    save_file(post, str(tmp_path / "post.safetensors"))
    out = json.loads(run("witness", "bucket", "--pre", str(tmp_path / "pre.safetensors"), "--post",
                         str(tmp_path / "post.safetensors"), "--resolution", "16", "--json").stdout)
    assert out["norm"] == math.sqrt(1.25)
    assert out["bucket"] == math.floor(16 * math.log2(math.sqrt(1.25)))
    bad = run("witness", "bucket", "--pre", str(tmp_path / "pre.safetensors"), "--post",
              str(tmp_path / "post.safetensors"), "--resolution", "0")
    assert bad.returncode == 2 and "POT_E_INVALID_ARGUMENT" in bad.stderr


def test_protocol_flow_files_check_out_with_the_cli(tmp_path):
    """samples/protocol_flow writes a run through the C API; the CLI
    recomputes its commitments and verifies its openings."""
    flow = os.environ["POT_PROTOCOL_FLOW"]
    out = subprocess.run([flow, str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    commitment = json.loads((tmp_path / "commitment.json").read_text())
    log = json.loads((tmp_path / "log.json").read_text())
    samples = [str(tmp_path / f"sample-{i}.safetensors") for i in range(commitment["dataset_size"])]
    assert run("commit", "dataset", *samples).stdout.strip() == commitment["dataset_root"]
    sched = run("commit", "schedule", "--seed", "1234", "--dataset-size", "8", "--batch", "2", "--steps", "6")
    assert sched.stdout.strip() == commitment["schedule_root"]
    run_id = run("commit", "training", str(tmp_path / "commitment.json")).stdout.strip()
    # The commitment is one its task admits (what the ledger's
    # start_training_commitment checks), and the task fixes the same roots.
    task = json.loads((tmp_path / "task.json").read_text())
    assert task["initial_state"]["published_digest"] == commitment["initial_state_digest"]
    assert task["schedule"]["listed_root"] == commitment["schedule_root"]
    task_id = run("task", "build", str(tmp_path / "task.json")).stdout.strip()
    assert task_id == commitment["task_id"]
    checked = run("task", "check", str(tmp_path / "task.json"), str(tmp_path / "commitment.json"))
    assert checked.returncode == 0 and checked.stdout.strip() == f"OK {run_id}", checked.stderr
    challenged = [int(x) for x in (tmp_path / "challenges.txt").read_text().split()]
    got = run("challenge", "--beacon", b"beacon".hex(), "--run-id", run_id, "--steps", "6", "--rounds", "2")
    assert [int(x) for x in got.stdout.split()] == challenged
    for t in challenged:
        args = ["open", "verify", str(tmp_path / f"opening-{t}.bin"), "--commitment", str(tmp_path / "commitment.json"),
                "--root", log["root"], "--size", str(log["size"]), "--step", str(t)]
        ok = run(*args, "--pre-state", str(tmp_path / f"state-{t - 1}.safetensors"),
                 "--post-state", str(tmp_path / f"state-{t}.safetensors"))
        assert ok.returncode == 0 and ok.stdout.strip() == "OK", ok.stderr
        wrong = run(*args, "--pre-state", str(tmp_path / f"state-{t}.safetensors"), "--json")
        assert wrong.returncode == 1
        assert json.loads(wrong.stdout)["check"] == "pre_state_digest"
        other_root = run(*[a if a != log["root"] else "00" * 32 for a in args])
        assert other_root.returncode == 1 and "post_leaf_proof" in other_root.stderr
        manifest = (tmp_path / f"opening-{t}.bin").read_bytes()
        (tmp_path / "cut.bin").write_bytes(manifest[:-1])
        cut = run("open", "verify", str(tmp_path / "cut.bin"), *args[3:])
        assert cut.returncode == 1 and "manifest" in cut.stderr
        other = [c for c in challenged if c != t][0]  # a valid opening of another step
        swapped = run("open", "verify", str(tmp_path / f"opening-{other}.bin"), *args[3:], "--json")
        assert swapped.returncode == 1 and json.loads(swapped.stdout)["check"] == "step"
        # The run sealed on the ledger with no flagged step (its tables flag
        # none): the same; a ledger naming one fails check 32.
        sealed = run(*args, "--sealed-flags", "none")
        assert sealed.returncode == 0 and sealed.stdout.strip() == "OK", sealed.stderr
        named = run(*args, "--sealed-flags", "2", "--json")
        assert named.returncode == 1 and json.loads(named.stdout)["check"] == "run_flags", named.stdout
        bad = run(*args, "--sealed-flags", "3,2")
        assert bad.returncode != 0 and "--sealed-flags" in bad.stderr
        assert run(*args, "--sealed-flags", "x").returncode == 2


SPEC = os.path.join(os.path.dirname(__file__), "..", "..", "samples", "specs", "adamw_per_step.json")


def test_spec_validate_digest_encode(tmp_path):
    import independent as ind
    spec = json.load(open(SPEC))
    ok = run("spec", "validate", SPEC, "--json")
    assert ok.returncode == 0
    digest = json.loads(ok.stdout)["digest"]
    assert digest == ind.tagged("pot/v2/spec", ind.spec_canonical(spec)).hex()
    out = tmp_path / "spec.bin"
    assert run("spec", "encode", SPEC, "--out", str(out)).returncode == 0
    assert out.read_bytes() == ind.spec_canonical(spec)
    assert run("spec", "digest", "--binary", str(out)).stdout.strip() == digest
    for key, value, words in [("dropout", 1.5, "dropout = 1.5"), ("intra_op_threads", 0, "pinned"),
                              ("seed_policy", {"kind": "none"}, "seed policy"), ("colour", "red", "unknown key")]:
        bad = dict(spec)
        bad[key] = value
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        r = run("spec", "validate", str(tmp_path / "bad.json"))
        assert r.returncode == 2 and words in r.stderr, r.stderr
    (tmp_path / "extra.bin").write_bytes(out.read_bytes() + b"\x38\x00")
    r = run("spec", "validate", "--binary", str(tmp_path / "extra.bin"))
    assert r.returncode == 2 and "canonical" in r.stderr


def test_losscheck_flags_and_json(tmp_path):
    import math
    honest = [2.5 * math.exp(-i / 60) + 0.01 * (((i * 7919) % 13) - 6) / 6 for i in range(300)]
    (tmp_path / "honest.txt").write_text("\n".join(repr(x) for x in honest))
    assert run("losscheck", str(tmp_path / "honest.txt")).stdout.startswith("no flags")
    frozen = honest[:100] + [honest[99]] * 30 + honest[100:]
    (tmp_path / "frozen.json").write_text(json.dumps(frozen))
    flags = json.loads(run("losscheck", str(tmp_path / "frozen.json"), "--json").stdout)["flags"]
    assert {"kind": "frozen", "first_step": 100, "last_step": 130} == {k: flags[0][k] for k in ("kind", "first_step", "last_step")}
    spiky = list(honest)
    spiky[150] *= 5
    (tmp_path / "spiky.json").write_text(json.dumps(spiky))
    flags = json.loads(run("losscheck", str(tmp_path / "spiky.json"), "--json").stdout)["flags"]
    assert [(f["kind"], f["first_step"]) for f in flags] == [("regression", 151)]
    (tmp_path / "nan.json").write_text(json.dumps(honest[:50] + [None] + honest[51:]))
    flags = json.loads(run("losscheck", str(tmp_path / "nan.json"), "--json").stdout)["flags"]
    assert ("non_finite", 51) in [(f["kind"], f["first_step"]) for f in flags]
    assert run("losscheck", str(tmp_path / "honest.txt"), "--window", "0").returncode == 2


def test_witness_commit_reveal_verdict(tmp_path):
    import independent as ind
    run_id, replayed = "11" * 32, "22" * 32
    statement = {"run_id": run_id, "step": 4, "challenge_id": 3, "mode": "norm_bucket",
                 "environment": {"framework_version": "1.13.1", "intra_op_threads": 2,
                                 "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2"},
                 "kind": "replayed", "replayed_state": replayed, "bucket": -80, "gradient_digest": "33" * 32}
    (tmp_path / "st.json").write_text(json.dumps(statement))
    out = json.loads(run("witness", "commit", str(tmp_path / "st.json"), "--identity", "616c696365", "--json").stdout)
    salt = bytes.fromhex(out["salt"])
    assert len(salt) == 32
    assert out["commitment"] == ind.witness_commitment(statement, salt, b"alice").hex()
    args = ["witness", "reveal", str(tmp_path / "st.json"), "--commitment", out["commitment"], "--salt", out["salt"]]
    assert run(*args, "--identity", "616c696365").returncode == 0
    assert run(*args, "--identity", "626f62").returncode == 1
    # The same finding on another challenge does not open it.
    (tmp_path / "other.json").write_text(json.dumps(dict(statement, challenge_id=4)))
    assert run("witness", "reveal", str(tmp_path / "other.json"), "--commitment", out["commitment"], "--salt",
               out["salt"], "--identity", "616c696365").returncode == 1
    # A statement of protocol 1 (a bare value) is bad usage, naming the key.
    (tmp_path / "v1.json").write_text(json.dumps({"run_id": run_id, "step": 4, "replayed_state": replayed,
                                                  "bucket": -80}))
    bad = run("witness", "commit", str(tmp_path / "v1.json"), "--identity", "616c696365")
    assert bad.returncode == 2 and "missing key 'kind'" in bad.stderr, bad
    reveals = [{"identity": "01", "replayed_state": replayed, "bucket": -80},
               {"identity": "02", "replayed_state": replayed, "bucket": -79},
               {"identity": "03", "replayed_state": "33" * 32, "bucket": 12}]
    (tmp_path / "r.json").write_text(json.dumps(reveals))
    assert run("witness", "verdict", str(tmp_path / "r.json"), "--committed", replayed, "--quorum", "2").stdout.startswith("PASS")
    assert run("witness", "verdict", str(tmp_path / "r.json"), "--committed", "33" * 32, "--quorum", "2").stdout.startswith("FAIL")
    assert run("witness", "verdict", str(tmp_path / "r.json"), "--mode", "bucket", "--declared", "-80",
               "--quorum", "2").stdout.startswith("INCONCLUSIVE")  # buckets -80, -79, 12: no cluster of 2


def test_task_build_and_check(tmp_path):
    with open(os.path.join(VECTORS, "protocol.json")) as f:
        v = json.load(f)
    task = tmp_path / "task.json"
    task.write_text(json.dumps(v["tasks"][0]["json"]))
    out = run("task", "build", str(task), "--json")
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)
    assert (j["task_id"], j["canonical"]) == (v["tasks"][0]["task_id"], v["tasks"][0]["canonical"])
    assert run("task", "build", str(task)).stdout.strip() == v["tasks"][0]["task_id"]
    good = tmp_path / "commitment.json"
    good.write_text(json.dumps(v["commitments"][0]["json"]))
    out = run("task", "check", str(task), str(good))
    assert out.returncode == 0 and out.stdout.strip() == "OK " + v["commitments"][0]["run_id"]
    # A commitment with 20,000 steps: exit 1, the field named.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(v["commitments"][0]["json"], declared_steps=20000)))
    out = run("task", "check", str(task), str(bad))
    assert out.returncode == 1 and "declared_steps 20000 is outside 200..200" in out.stderr
    # A task of protocol version 1: refused, the version named.
    old = tmp_path / "old.json"
    old.write_text(json.dumps(dict(v["tasks"][0]["json"], protocol_version=1)))
    out = run("task", "build", str(old))
    assert out.returncode != 0 and "protocol version 1" in out.stderr


def test_task_commitment_of_a_run_seeded_task(tmp_path):
    """pot task commitment prints the commitment the task gives a miner: under
    the vectors' run-seeded task, each miner's own schedule root."""
    import independent as ind
    with open(os.path.join(VECTORS, "protocol.json")) as f:
        v = json.load(f)
    t = next(t for t in v["tasks"] if "run_seeded" in t["json"]["schedule"])
    task = tmp_path / "task.json"
    task.write_text(json.dumps(t["json"]))
    canon = {c["canonical"] for c in v["commitments"] if c["json"]["task_id"] == t["task_id"]}
    for r in (r for r in v["run_schedule_seeds"] if r["task_id"] == t["task_id"]):
        out = run("task", "commitment", str(task), "--miner", r["miner_identity"], "--steps", str(r["declared_steps"]))
        assert out.returncode == 0, out.stderr
        mine = tmp_path / "mine.json"
        mine.write_text(out.stdout)
        checked = run("task", "check", str(task), str(mine))
        assert checked.returncode == 0, checked.stderr
        assert ind.commitment_canonical(json.loads(out.stdout)).hex() in canon
    # Another miner's commitment under this miner's name: the schedule root is named.
    theirs = json.loads(run("task", "commitment", str(task), "--miner", "6d696e6572", "--steps", "10").stdout)
    stolen = tmp_path / "stolen.json"
    stolen.write_text(json.dumps(dict(theirs, miner_identity=b"thief".hex())))
    out = run("task", "check", str(task), str(stolen))
    assert out.returncode == 1 and "the run-seeded schedule of this miner" in out.stderr
    out = run("task", "commitment", str(task), "--miner", "6d696e6572", "--steps", "13")
    assert out.returncode != 0 and "declared_steps 13 is outside 10..12" in out.stderr


def test_commit_stream_agrees_with_the_independent_implementation(tmp_path):
    """docs/PROTOCOL.md 15.1 implemented twice: the root and size `pot commit
    stream` prints, and every proof it serves, checked by independent.py."""
    import struct
    import independent as ind
    shards = []
    for s, n in enumerate((6000, 2500)):
        p = tmp_path / f"train{s}.bin"
        p.write_bytes(b"".join(struct.pack("<H", (s * 7 + 31 * j) % 50257) for j in range(n)))
        shards.append(str(p))
    out = run("commit", "stream", "--window", "65", *shards, "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    desc = got["stream"]
    for s, path in enumerate(shards):
        data = open(path, "rb").read()
        assert desc["shards"][s] == {"tokens": len(data) // 2, "root": ind.shard_root(data).hex()}
    assert got["dataset_root"] == ind.stream_root(desc).hex()
    assert got["dataset_size"] == ind.stream_size(desc) == (6000 - 64) + (2500 - 64)
    for i in (0, 2030, 2047, 5935, 5936, got["dataset_size"] - 1):
        out = run("commit", "stream", "--window", "65", *shards, "--prove", str(i), "--json")
        w = json.loads(out.stdout)["window"]
        proof = bytes.fromhex(w["proof"])
        data = open(shards[w["shard"]], "rb").read()
        assert ind.check_window_proof(desc, i, proof) == data[w["offset"] * 2:(w["offset"] + 65) * 2]
        forged = bytearray(proof)
        forged[20] ^= 1
        try:
            ind.check_window_proof(desc, i, bytes(forged))
            raise AssertionError("a forged chunk verified")
        except ValueError:
            pass
    # --out writes the stream file: the descriptor and the shards' paths
    # relative to it (docs/cli.md "Stream file").
    (tmp_path / "meta").mkdir()
    out = run("commit", "stream", "--window", "65", *shards, "--out", str(tmp_path / "meta" / "stream.json"))
    assert out.returncode == 0, out.stderr
    doc = json.loads((tmp_path / "meta" / "stream.json").read_text())
    assert doc == {"format": "pot-stream/1", "stream": desc, "files": ["../train0.bin", "../train1.bin"]}
    # Refused: a window of one token, a view outside the window.
    assert run("commit", "stream", "--window", "1", *shards).returncode == 2
    bad = run("commit", "stream", "--window", "9", "--view", "x:5:5", *shards)
    assert bad.returncode == 2 and "leave the window" in bad.stderr


def write_safetensors(path, tensors):
    """tensors: (name, dtype, raw bytes, shape), written by hand (the format's
    u64le header length, JSON header, data)."""
    import struct
    header, data = {}, b""
    for name, dtype, raw, shape in sorted(tensors):
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def test_hash_stats_and_flags_agree_with_the_independent_tables(tmp_path):
    """`pot hash stats` writes the table PROTOCOL 5.2 defines, recomputed by
    independent.py from the same bytes, and `pot hash flags` the flags of
    5.3 (round 3, attack 1's poisoned embedding and saturated moments)."""
    import struct

    import independent as ind
    n = 20000  # two chunks of F32 and a tail
    w0 = ind.narrow("cli-w", "F32", n)
    m0 = ind.narrow("cli-m", "F64", 9000)
    w1 = struct.pack("<f", 1e15) + w0[4:]
    m1 = struct.pack(f"<{9000}d", *([2.0 ** 63] * 9000))
    before, after = str(tmp_path / "s0.safetensors"), str(tmp_path / "s1.safetensors")
    write_safetensors(before, [("param/wpe", "F32", w0, [n]), ("optim/wpe/exp_avg", "F64", m0, [9000])])
    write_safetensors(after, [("param/wpe", "F32", w1, [n]), ("optim/wpe/exp_avg", "F64", m1, [9000])])
    table = ind.state_stats_table([("param/wpe", "F32", w0), ("optim/wpe/exp_avg", "F64", m0)])
    out = run("hash", "stats", "--threads", "2", "--out", str(tmp_path / "s0.stats"), before)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == ind.state_stats_digest(table).hex()
    assert (tmp_path / "s0.stats").read_bytes() == table
    run("hash", "stats", "--out", str(tmp_path / "s1.stats"), after)
    want = ind.state_flags(table, (tmp_path / "s1.stats").read_bytes())
    assert {(f["rule"], f["tensor"]) for f in want} >= {("max_abs_jump", "param/wpe"), ("saturated", "optim/wpe/exp_avg")}
    got = json.loads(run("hash", "flags", "--json", before, after).stdout)["flags"]
    assert got == want
    tables = json.loads(run("hash", "flags", "--tables", "--json", str(tmp_path / "s0.stats"),
                            str(tmp_path / "s1.stats")).stdout)["flags"]
    assert tables == want
    assert run("hash", "flags", before, before).stdout.strip() == "no flags"
    bad = run("hash", "flags", "--tables", before, str(tmp_path / "s1.stats"))
    assert bad.returncode == 2 and "POT_E_MALFORMED" in bad.stderr
