"""tests/vectors/protocol.json: seeds, step leaves, challenges, security,
norm buckets, specs, commitments, schedules, witnesses and verdicts."""

import json
import struct

import pytest

import pot
from conftest import load_vectors, want_error

V = load_vectors("protocol.json")


def test_seeds():
    runs = set()
    for s in V["seeds"]:
        run = bytes.fromhex(s["run_id"])
        runs.add(run)
        assert pot.seed(s["base_seed"], run, s["step"]) == s["seed"]
        assert pot.seed_derive(s["base_seed"], run, s["step"]) == s["seed"]
    assert len(runs) == 2  # the same steps of two runs draw other seeds


def test_step_leaves():
    for leaf in V["step_leaves"]:
        loss = struct.unpack("<d", bytes.fromhex(leaf["loss_bits"]))[0]
        norm = struct.unpack("<d", bytes.fromhex(leaf["update_norm_bits"]))[0]
        sl = pot.StepLeaf(pot.Digest(leaf["run_id"]), leaf["step"], pot.Digest(leaf["state_digest"]),
                          pot.Digest(leaf["stats_digest"]), loss, norm)
        enc = sl.encode()
        assert len(enc) == pot.STEP_LEAF_SIZE and enc.hex() == leaf["leaf"]
        assert str(pot.leaf_hash(enc)) == leaf["leaf_hash"]
        dec = pot.StepLeaf.decode(enc)
        assert (dec.run_id, dec.step, dec.state_digest) == (sl.run_id, sl.step, sl.state_digest)
        assert struct.pack("<d", dec.update_norm) == bytes.fromhex(leaf["update_norm_bits"])
        assert struct.pack("<d", dec.loss) == bytes.fromhex(leaf["loss_bits"])  # bit for bit, NaN too
        assert dec.loss_bits == int.from_bytes(bytes.fromhex(leaf["loss_bits"]), "little")
        with pytest.raises(pot.MalformedError) as e:
            pot.StepLeaf.decode(enc[:-1])
        want_error(e, pot.MalformedError, pot.Status.MALFORMED)


def test_challenges():
    for c in V["challenges"]:
        got = pot.challenge_derive(bytes.fromhex(c["beacon"]), bytes.fromhex(c["run_id"]), c["num_steps"], c["rounds"])
        assert got == c["steps"], c["comment"]


def test_detection():
    for d in V["detection"]:
        assert pot.detection_probability(d["steps"], d["forged"], d["challenges"]) == d["probability"]
    # PROTOCOL.md section 12: n = 10000, m = 100, p = 0.99 needs 448.
    assert pot.challenges_needed(10000, 100, 0.99) == 448


def test_norm_buckets():
    for b in V["norm_buckets"]:
        assert pot.norm_bucket(b["norm"], b["resolution"]) == b["bucket"], b["comment"]


@pytest.mark.parametrize("i", range(len(V["specs"])))
def test_specs(i):
    s = V["specs"][i]
    with pot.Spec.from_json(json.dumps(s["json"])) as spec:
        enc = spec.encode()
        assert enc.hex() == s["canonical"]
        d = spec.digest()
        assert str(d) == s["digest"]
        # The canonical bytes decode to the same spec, and its JSON form
        # parses back to it (from a str or from a dict).
        with pot.Spec.decode(enc) as dec, pot.Spec.from_json(dec.to_json()) as again, \
                pot.Spec(dec.to_dict()) as again2:
            assert again.digest() == d == again2.digest()
        with pytest.raises(pot.MalformedError):
            pot.Spec.decode(enc + b"\0")  # extra bytes are not canonical
        policy = s["json"]["seed_policy"]
        assert str(spec.seed_policy) == policy["kind"]
        assert spec.seed == policy.get("base_seed", 0) + policy.get("seed", 0)
        assert spec.intra_op_threads == s["json"].get("intra_op_threads", 0)  # 0: pot-repro/1 (14.6)
        assert spec.norm_bucket_resolution == s["json"]["norm_bucket_resolution"]
        # Parameter groups (PROTOCOL.md 14.5): without a schedule each
        # group's rate is its optimizer's lr.
        groups = s["json"].get("param_groups", [])
        assert spec.group_count == 1 + len(groups)
        for g, grp in enumerate(groups, start=1):
            rates = spec.group_learning_rates(g, 1, 2)
            if "lr_schedule" not in s["json"]:
                assert rates == [grp["optimizer"]["lr"]] * 2
        with pytest.raises(pot.OutOfRangeError):
            spec.group_learning_rates(spec.group_count, 1, 1)


def test_learning_rates():
    # Each schedule's rates, every kind and both tables, bit for bit
    # (docs/PROTOCOL.md 14.3), through the binding.
    assert len(V["learning_rates"]) >= 4
    for lr in V["learning_rates"]:
        spec = pot.Spec.from_json(json.dumps(V["specs"][lr["spec"]]["json"]))
        got = spec.group_learning_rates(lr["group"], lr["first"], len(lr["rates_le"]))
        assert [struct.pack("<d", r).hex() for r in got] == lr["rates_le"]


def test_spec_errors():
    with pytest.raises(pot.InvalidArgumentError) as e:
        pot.Spec.from_json('{"framework": "pytorch"}')
    want_error(e, pot.InvalidArgumentError, pot.Status.INVALID_ARGUMENT)
    with pytest.raises(pot.MalformedError) as e:
        pot.Spec.from_json("not json")
    want_error(e, pot.MalformedError, pot.Status.MALFORMED)
    with pytest.raises(pot.LimitError) as e:
        pot.Spec.decode(bytes(65537))
    want_error(e, pot.LimitError, pot.Status.LIMIT)


@pytest.mark.parametrize("i", range(len(V["tasks"])))
def test_tasks(i):
    t = V["tasks"][i]
    with pot.Task.from_json(t["json"]) as task:
        assert task.encode().hex() == t["canonical"]
        assert str(task.id) == t["task_id"]
        with pot.Task.decode(task.encode()) as dec, pot.Task.from_json(dec.to_json()) as again:
            assert again.id == task.id and dec.to_dict() == task.to_dict()
        with task.spec as spec:
            assert spec.to_dict() == pot.Spec(t["json"]["spec"]).to_dict()
        # The vectors' commitments of this task answer to it.
        own = [c for c in V["commitments"] if c["json"]["task_id"] == t["task_id"]]
        assert own
        for c in own:
            with pot.Commitment(c["json"]) as cm:
                task.check_commitment(cm)
        if "run_seeded" in t["json"]["schedule"]:
            # Each miner's schedule seed, its schedule and the commitment the task gives it.
            assert task.schedule_rule == "run_seeded"
            runs = [r for r in V["run_schedule_seeds"] if r["task_id"] == t["task_id"]]
            assert runs
            for r in runs:
                miner = bytes.fromhex(r["miner_identity"])
                assert task.run_schedule_seed(miner, r["declared_steps"]) == r["seed"]
                schedule = task.run_schedule(miner, r["declared_steps"])
                assert len(schedule) == r["declared_steps"]
                with task.commitment(miner, r["declared_steps"]) as cm:
                    assert any(cm.encode().hex() == c["canonical"] for c in own)
        elif "run_seeded_uniform" in t["json"]["schedule"]:
            # Each miner's commitment is the one the task gives it, its
            # schedule the uniform draws of its seed (PROTOCOL.md 16.3).
            assert task.schedule_rule == "run_seeded_uniform"
            for c in own:
                miner, steps = bytes.fromhex(c["json"]["miner_identity"]), c["json"]["declared_steps"]
                with task.commitment(miner, steps) as cm:
                    assert cm.encode().hex() == c["canonical"]
                flat = [i for step in task.run_schedule(miner, steps) for mb in step for i in mb]
                seed = task.run_schedule_seed(miner, steps)
                assert flat == pot.uniform_schedule_stream(seed, t["json"]["dataset_size"], 0, len(flat))
                assert all(i < t["json"]["dataset_size"] for i in flat)
        else:
            assert task.schedule_rule == "listed"
            with pytest.raises(pot.InvalidArgumentError, match="listed schedule"):
                task.run_schedule_seed(b"m", t["json"]["min_steps"])
        with pytest.raises(pot.MalformedError):
            pot.Task.decode(task.encode()[:-1])


@pytest.mark.parametrize("i", range(len(V["commitments"])))
def test_commitments(i):
    c = V["commitments"][i]
    j = c["json"]
    with pot.Commitment.from_json(json.dumps(j)) as cm:
        enc = cm.encode()
        assert enc.hex() == c["canonical"]
        assert str(cm.run_id) == c["run_id"]
        assert cm.digests == pot.CommitmentDigests(
            pot.Digest(j["initial_state_digest"]), pot.Digest(j["schedule_root"]), pot.Digest(j["dataset_root"]),
            pot.Digest(j["spec_digest"]))
        assert (cm.declared_steps, cm.dataset_size) == (j["declared_steps"], j["dataset_size"])
        with pot.Commitment.decode(enc) as dec, pot.Commitment.from_json(dec.to_json()) as again:
            assert again.run_id == cm.run_id
        with pytest.raises(pot.MalformedError):
            pot.Commitment.decode(enc + b"\0")


def test_schedule_entries():
    for e in V["schedule_entries"]:
        entry = pot.ScheduleEntry(e["step"], e["microbatches"])
        enc = entry.encode()
        assert enc.hex() == e["entry"]
        assert pot.schedule_entry_encode(e["step"], entry.indices, [len(m) for m in e["microbatches"]]) == enc
        assert pot.ScheduleEntry.decode(enc) == entry
        # Index 9 is outside a dataset of 5 samples.
        with pytest.raises(pot.OutOfRangeError) as exc:
            entry.encode(5)
        want_error(exc, pot.OutOfRangeError, pot.Status.OUT_OF_RANGE)
        with pytest.raises(pot.MalformedError):
            pot.ScheduleEntry.decode(enc[:-1])


def test_seeded_schedules():
    for s in V["seeded_schedules"]:
        with pot.Tree.in_memory() as tree:
            for i, want in enumerate(s["entries"]):
                e = pot.seeded_schedule_entry(s["seed"], s["dataset_size"], s["batch_size"], s["microbatches"], i + 1)
                assert e.hex() == want
                tree.append(e)
            root = pot.seeded_schedule_root(s["seed"], s["dataset_size"], s["batch_size"], s["microbatches"],
                                            s["steps"])
            assert str(root) == s["root"] == str(tree.root(s["steps"]))


def test_witness_commitments():
    for w in V["witness_commitments"]:
        st = w["statement"]
        salt, ident = bytes.fromhex(w["salt"]), bytes.fromhex(w["identity"])
        c = pot.witness_commitment(st, salt, ident)
        assert str(c) == w["commitment"], w["comment"]
        pot.verify_witness_reveal(c, st, salt, ident)
        with pytest.raises(pot.ProofMismatchError):
            pot.verify_witness_reveal(c, dict(st, challenge_id=st["challenge_id"] + 1), salt, ident)
        with pytest.raises(pot.ProofMismatchError):
            pot.verify_witness_reveal(c, st, salt, b"someone else")


@pytest.mark.parametrize("v", V["verdicts"], ids=lambda v: v["comment"])
def test_verdicts(v):
    with pot.Verdict(pot.WitnessMode[v["mode"].upper()], v["quorum"]) as verdict:
        for r in v["reveals"]:
            verdict.add_reveal(bytes.fromhex(r["identity"]), pot.Digest(r["replayed_state"]), r["bucket"])
        committed = v.get("committed_state")
        decision = verdict.decide(None if committed is None else pot.Digest(committed), v.get("committed_bucket"))
        assert str(decision.outcome) == v["verdict"]
        assert decision.cluster_size == v["cluster_size"]
        assert decision.reason and decision.reason == verdict.reason


@pytest.mark.parametrize("v", V["bisection_points"], ids=lambda v: f"({v['lo']}, {v['hi']}] k={v['arity']}")
def test_bisection_points(v):
    assert pot.bisection_points(v["lo"], v["hi"], v["arity"]) == v["points"]
    assert pot.bisection_rounds(v["lo"], v["hi"], v["arity"]) == v["rounds"]


@pytest.mark.parametrize("d", V["bisection_disputes"], ids=lambda d: d["comment"][:40])
def test_bisection_disputes(d):
    with pot.StepBisection(d["lo"], d["hi"], d["arity"], agreed=pot.Digest(d["agreed"]), a_hi=pot.Digest(d["a_hi"]),
                           b_hi=pot.Digest(d["b_hi"])) as b:
        for r in d["rounds"]:
            assert (b.state.lo, b.state.hi) == (r["lo"], r["hi"])
            assert b.points() == r["points"]
            b.play_round([pot.Digest(x) for x in r["a"]], [pot.Digest(x) for x in r["b"]])
        s, end = b.state, d["end"]
        assert s.done and (s.lo, s.hi, s.rounds_played) == (end["lo"], end["hi"], end["rounds_played"])
        assert (str(s.agreed), str(s.a_hi), str(s.b_hi)) == (end["agreed"], end["a_hi"], end["b_hi"])


@pytest.mark.parametrize("v", V["op_nodes"], ids=lambda v: v["comment"][:40])
def test_op_nodes(v):
    """Section 22.2's encoding both ways: JSON to leaf data and back."""
    data = bytes.fromhex(v["leaf_data"])
    assert pot.op_node_from_json(v["node"]) == data
    assert pot.op_node_json(data) == v["node"]
    assert bytes(pot.leaf_hash(data)).hex() == v["leaf_hash"]


def test_op_trace_root():
    log = pot.Log()
    for v in V["op_nodes"]:
        log.append(bytes.fromhex(v["leaf_data"]))
    assert str(log.root()) == V["op_trace_root"]["root"] and len(log) == V["op_trace_root"]["size"]


def test_op_node_json_is_strict():
    node = dict(V["op_nodes"][0]["node"])
    for bad in (dict(node, extra=1), {k: v for k, v in node.items() if k != "overload"},
                dict(node, inputs=[{"tensor": {}}]), dict(node, inputs=[{"int": 1, "bool": True}]),
                dict(node, inputs=[{"bits": "00"}]), dict(node, inputs=[{"nothing": None}])):
        with pytest.raises(pot.MalformedError):
            pot.op_node_from_json(bad)
    with pytest.raises(pot.LimitError):
        pot.op_node_from_json(dict(node, name="x" * 5000))
