"""tests/vectors/*.json checked with the independent implementation."""
import json
import struct
import os

import pytest

import independent as ind

VECTORS = os.path.join(os.path.dirname(__file__), "..", "vectors")


def load(name):
    with open(os.path.join(VECTORS, name)) as f:
        return json.load(f)


def test_rfc6962_roots_with_independent_mth():
    v = load("rfc6962.json")
    leaves = [bytes.fromhex(x["hex"]) for x in v["leaf_inputs"]]
    assert ind.mth([]).hex() == v["empty_tree_root"]["hex"]
    for r in v["roots"]:
        assert ind.mth(leaves[: r["tree_size"]]).hex() == r["hex"]


def test_rfc6962_proofs_with_independent_path_and_proof():
    """The independent PATH, PROOF and consistency verifier (used to build
    and check the transcript's operator openings) against the published
    proofs."""
    v = load("rfc6962.json")
    hashes = [ind.leaf_hash(bytes.fromhex(x["hex"])) for x in v["leaf_inputs"]]
    for c in v["inclusion_proofs"]:
        path = [h.hex() for h in ind.inclusion_path(c["leaf_index"], hashes[: c["tree_size"]])]
        assert path == c["proof"], c
    checked = 0
    for c in v["consistency_proofs"]:
        m, n = c["size1"], c["size2"]
        proof = [bytes.fromhex(h) for h in c["proof"]]
        if 0 < m < n:
            assert [h.hex() for h in ind.consistency_proof(m, hashes[:n])] == c["proof"], c
            checked += 1
        assert ind.verify_consistency(m, n, bytes.fromhex(c["root1"]), bytes.fromhex(c["root2"]), proof), c
    assert checked >= 4


def test_tensor_digests():
    v = load("hash.json")
    assert v["chunk_size"] == ind.CHUNK
    for t in v["tensor_digests"]:
        data = ind.stream(t["seed"], t["nbytes"])
        assert ind.tensor_digest(t["name"], t["dtype"], t["shape"], data).hex() == t["digest"], t["comment"]


def test_state_digests():
    v = load("hash.json")
    by_name = {t["name"]: t for t in v["tensor_digests"]}
    for s in v["state_digests"]:
        digests = {}
        for n in s["tensors"]:
            t = by_name[n]
            digests[n] = ind.tensor_digest(n, t["dtype"], t["shape"], ind.stream(t["seed"], t["nbytes"]))
        assert ind.state_digest(digests).hex() == s["digest"], s["comment"]
        names = sorted(digests, key=lambda n: n.encode())
        for tp in s["tensor_proofs"]:
            proof = bytes.fromhex(tp["proof"])
            assert int.from_bytes(proof[:8], "little") == names.index(tp["tensor"])
            state = bytes.fromhex(s["digest"])
            assert ind.verify_tensor_proof(state, digests[tp["tensor"]], proof)
            other = next(n for n in names if n != tp["tensor"]) if len(names) > 1 else None
            if other:
                assert not ind.verify_tensor_proof(state, digests[other], proof)


def test_state_stats_tables_and_flags():
    """PROTOCOL 5.2-5.3 recomputed from the tensor bytes: every table byte
    (the lanes, the pairwise and chunk-order additions, each class of
    element), its digest, and the flags of each pair of tables."""
    v = load("hash.json")
    by_name = {t["name"]: t for t in v["tensor_digests"]}
    assert len(v["state_stats"]) >= 3
    for s in v["state_stats"]:
        tensors = [(n, by_name[n]["dtype"], ind.stream(by_name[n]["seed"], by_name[n]["nbytes"])) for n in s["tensors"]]
        tensors += [(t["name"], t["dtype"], ind.narrow(t["seed"], t["dtype"], t["elements"])) for t in s["narrow_tensors"]]
        table = ind.state_stats_table(tensors)
        assert table.hex() == s["table"], s["comment"]
        assert ind.state_stats_digest(table).hex() == s["digest"], s["comment"]
    assert len(v["state_flags"]) >= 4
    for f in v["state_flags"]:
        assert ind.state_flags(bytes.fromhex(f["before"]), bytes.fromhex(f["after"])) == f["flags"], f["comment"]
    (r,) = v["run_flags"]
    assert [s["step"] for s in r["flagged"]] == [3, 5], r["comment"]
    assert ind.run_flags([bytes.fromhex(t) for t in r["tables"]]) == r["flagged"], r["comment"]


def test_chunk_range_records():
    v = load("hash.json")
    by_name = {t["name"]: t for t in v["tensor_digests"]}
    for c in v["chunk_ranges"]:
        t = by_name[c["tensor"]]
        data = ind.stream(t["seed"], t["nbytes"])
        records = []
        for r in c["records"]:
            rec = bytes.fromhex(r["record"])
            total, offset, length, subtrees = ind.decode_range(rec)
            assert (total, offset, length) == (t["nbytes"], r["offset"], r["length"])
            # Each subtree hash is the MTH of the chunks it covers.
            for start, level, h in subtrees:
                lo = start * ind.CHUNK
                hi = min(len(data), (start + (1 << level)) * ind.CHUNK)
                assert ind.mth([data[i:i + ind.CHUNK] for i in range(lo, hi, ind.CHUNK)]) == h
            records.append(rec)
        assembled = ind.assemble(t["name"], t["dtype"], t["shape"], records)
        assert assembled.hex() == c["digest"] == ind.tensor_digest(t["name"], t["dtype"], t["shape"], data).hex()


def test_log_states():
    v = load("hash.json")
    for l in v["log_states"]:
        leaves = [i.to_bytes(8, "little") for i in range(l["leaves"])]
        assert ind.mth(leaves).hex() == l["root"]
        assert ind.log_saved(leaves).hex() == l["saved"]


def test_protocol_worked_example():
    # docs/PROTOCOL.md section 4.1.
    import struct
    data = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
    assert data.hex() == "0000803f000000400000404000008040"
    body = bytes.fromhex("01000000770c0200000002000000000000000200000000000000100000000000000000000100")
    body += ind.sha256(b"\x00" + data)
    assert ind.sha256(b"\x0d" + b"pot/v1/tensor" + body) == ind.tensor_digest("w", "F32", [2, 2], data)


def test_protocol_seeds_leaves_challenges_buckets():
    v = load("protocol.json")
    assert len({s["run_id"] for s in v["seeds"]}) == 2
    for s in v["seeds"]:
        assert ind.derive_seed(s["base_seed"], bytes.fromhex(s["run_id"]), s["step"]) == s["seed"]
    for l in v["step_leaves"]:
        leaf = ind.step_leaf(bytes.fromhex(l["run_id"]), l["step"], bytes.fromhex(l["state_digest"]),
                             bytes.fromhex(l["stats_digest"]), bytes.fromhex(l["loss_bits"]),
                             bytes.fromhex(l["update_norm_bits"]))
        assert leaf.hex() == l["leaf"], l["comment"]
        assert ind.leaf_hash(leaf).hex() == l["leaf_hash"]
    for c in v["challenges"]:
        got = ind.derive_challenges(bytes.fromhex(c["beacon"]), bytes.fromhex(c["run_id"]), c["num_steps"], c["rounds"])
        assert got == c["steps"], c["comment"]
    for d in v["detection"]:
        exact = ind.detection_probability(d["steps"], d["forged"], d["challenges"])
        assert abs(float(exact) - d["probability"]) < 1e-12, d
    for b in v["norm_buckets"]:
        assert ind.norm_bucket(b["norm"], b["resolution"]) == b["bucket"], b


def test_canonical_spec_commitment_schedules_witnesses():
    v = load("protocol.json")
    for s in v["specs"]:
        canon = ind.spec_canonical(s["json"])
        assert canon.hex() == s["canonical"]
        assert ind.tagged("pot/v2/spec", canon).hex() == s["digest"]
    kinds = set()
    for lr in v["learning_rates"]:
        j = v["specs"][lr["spec"]]["json"]
        rates = ind.learning_rates(j, len(lr["rates_le"]), lr["group"])
        assert [struct.pack("<d", r).hex() for r in rates] == lr["rates_le"]
        sched = j["lr_schedule"]
        kinds |= {"rates"} if "rates" in sched else {p["kind"] for p in sched["phases"]}
    # Every kind of schedule, and an interval, has rates to check.
    assert kinds == set(ind.LR_KINDS) | {"rates"}, kinds
    assert any(v["specs"][lr["spec"]]["json"]["lr_schedule"].get("interval") for lr in v["learning_rates"])
    tasks = {}
    for t in v["tasks"]:
        canon = ind.task_canonical(t["json"])
        assert canon.hex() == t["canonical"]
        assert ind.task_id(t["json"]).hex() == t["task_id"]
        tasks[t["task_id"]] = t["json"]
    assert tasks
    for c in v["commitments"]:
        canon = ind.commitment_canonical(c["json"])
        assert canon.hex() == c["canonical"]
        assert ind.run_id(c["json"]).hex() == c["run_id"]
        # The commitment is one its task admits: every field the task fixes agrees.
        t = tasks[c["json"]["task_id"]]
        assert c["json"]["initial_state_digest"] == t["initial_state"]["published_digest"]
        miner = bytes.fromhex(c["json"]["miner_identity"])
        assert c["json"]["schedule_root"] == ind.run_schedule_root(t, miner, c["json"]["declared_steps"]).hex()
        assert c["json"]["dataset_root"] == t["dataset_root"]
        assert c["json"]["dataset_size"] == t["dataset_size"]
        assert c["json"]["spec_digest"] == ind.spec_digest(t["spec"]).hex()
        assert t["min_steps"] <= c["json"]["declared_steps"] <= t["max_steps"]
    assert any("run_seeded" in t["schedule"] for t in tasks.values())
    for r in v["run_schedule_seeds"]:
        assert ind.run_schedule_seed(bytes.fromhex(r["task_id"]), bytes.fromhex(r["miner_identity"]),
                                     r["declared_steps"]) == r["seed"]
    for e in v["schedule_entries"]:
        assert ind.schedule_entry(e["step"], e["microbatches"]).hex() == e["entry"]
    for u in v["uniform_streams"]:
        got = [ind.uniform_draw(u["seed"], p, u["dataset_size"]) for p in range(u["first"], u["first"] + len(u["indices"]))]
        assert got == u["indices"], u
    assert any(t["json"]["schedule"].get("run_seeded_uniform") == {} for t in v["tasks"])
    for s in v["seeded_schedules"]:
        entries = ind.seeded_entries(s["seed"], s["dataset_size"], s["batch_size"], s["microbatches"], s["steps"])
        assert [e.hex() for e in entries] == s["entries"]
        assert ind.mth(entries).hex() == s["root"]
    kinds = set()
    for w in v["witness_commitments"]:
        got = ind.witness_commitment(w["statement"], bytes.fromhex(w["salt"]), bytes.fromhex(w["identity"]))
        assert got.hex() == w["commitment"], w["comment"]
        kinds.add((w["statement"]["kind"], w["statement"]["mode"]))
    # Every kind, and both modes, are covered.
    assert kinds >= {("replayed", "bitwise"), ("replayed", "norm_bucket"), ("unavailable", "bitwise"),
                     ("invalid_opening", "bitwise")}


def test_verdicts():
    for v in load("protocol.json")["verdicts"]:
        got = ind.verdict(v["mode"], v["quorum"], v["reveals"], v.get("committed_state"), v.get("committed_bucket"))
        assert got == (v["verdict"], v["cluster_size"]), v["comment"]


def test_every_vector_entry_says_what_it_exercises():
    for name in ("hash.json", "protocol.json"):
        for key, entries in load(name).items():
            if isinstance(entries, list):
                for e in entries:
                    assert "comment" in e, (name, key, e)


def test_ledger_transcript_draws():
    """The ledger transcript's challenged steps (the drawn round, then step 1)
    and committee are the draws of section 11 and 11.1, recomputed here from its calls: the randomness
    of the first block at or after the seal height + draw_delay, and the
    verifiers registered below that height."""
    t = load("ledger_transcript.json")
    ok = [c for c in t["calls"] if c["expect"] == "ok"]
    run = next(c for c in ok if c["call"] == "run_info")["result"]
    assert run["drawn_from"]["height"] >= run["seal_height"] + t["config"]["draw_delay"]
    posts = {c["now"]: c["randomness"] for c in ok if c["call"] == "post_randomness"}
    height = min(h for h in posts if h >= run["draw_height"])
    assert run["drawn_from"] == {"height": height, "value": posts[height]}
    value, run_id = bytes.fromhex(posts[height]), bytes.fromhex(run["run_id"])
    issued = next(c for c in ok if c["call"] == "issue_challenge")["result"]
    rounds = next(c for c in ok if c["call"] == "task_info")["result"]["task"]["challenge_policy"]["rounds"]
    want = ind.challenged_steps(value, run_id, run["declared_steps"], rounds, run["flagged_steps"])
    assert issued["steps"] == want and 1 in want
    candidates = [(bytes.fromhex(c["caller"]), c["stake"]) for c in ok
                  if c["call"] == "register_verifier" and c["now"] < height and c["caller"] != run["miner_identity"]]
    # The task sets the committee's size (docs/PROTOCOL.md 17.1).
    size = next(c for c in ok if c["call"] == "task_info")["result"]["task"]["challenge_policy"]["committee_size"]
    assert size <= t["config"]["max_committee_size"]
    want = ind.draw_committee(value, run_id, 0, candidates, size)
    assert len(want) == size < len(candidates)  # a real draw, not everyone
    info = next(c for c in ok if c["call"] == "challenge_info")["result"]
    assert [(m["identity"], m["stake"]) for m in info["committee"]] == sorted((i.hex(), s) for i, s in want)
    # The re-run's committee: drawn from the first value posted at or after
    # the failed attempt's finalization + draw_delay, without the members
    # that attempt names silent, misconfigured or unreplayed.
    failed = next(c for c in ok if c["call"] == "finalize_challenge" and c["result"]["rerun"])
    redraw = next(c for c in ok if c["call"] == "redraw_committee")
    height = min(h for h in posts if h >= failed["now"] + t["config"]["draw_delay"])
    excluded = {bytes.fromhex(x) for k in ("silent", "misconfigured", "unreplayed") for x in failed["result"][k]}
    assert excluded
    again = ind.draw_committee(bytes.fromhex(posts[height]), run_id, 0,
                               [(i, s) for i, s in candidates if i not in excluded], size)
    assert [(m["identity"], m["stake"]) for m in redraw["result"]["committee"]] == sorted((i.hex(), s) for i, s in again)
    assert redraw["result"]["attempt"] == 2


def test_ledger_transcript_outcome_records():
    """Each finalization's outcome record (section 20.1), encoded here from
    the challenge as challenge_info gave it before and the verdict the call
    returned, and the outcome log's root over the records in order."""
    t = load("ledger_transcript.json")
    info, records = {}, []
    for c in t["calls"]:
        if c["expect"] != "ok":
            continue
        if c["call"] == "challenge_info":
            info[c["challenge_id"]] = c["result"]
        if c["call"] == "finalize_challenge":
            r = c["result"]
            record = ind.outcome_record(c["challenge_id"], info[c["challenge_id"]], r)
            assert r["outcome"] == record.hex()
            assert r["outcome_index"] == len(records)
            records.append(record)
            assert r["outcome_root"] == ind.mth(records).hex()
        if c["result"].get("ended"):  # a dispute's end (any of its calls)
            r = c["result"]
            assert r["outcome_index"] == len(records)
            records.append(bytes.fromhex(r["record"]))  # checked by test_ledger_transcript_disputes
            assert r["outcome_root"] == ind.mth(records).hex()
    assert records
    ledger = next(c for c in t["calls"] if c["call"] == "ledger_info")["result"]
    assert ledger["outcome_count"] == len(records) and ledger["outcome_root"] == ind.mth(records).hex()



def test_ledger_transcript_disputes():
    """The transcript's disputes (docs/ledger.md 2.12-2.17) played here from
    their calls: the interval from the leaves each opening proves (from S_0,
    the commitment's, without lo_leaf), the miner's claims read from its
    leaves, each round per section 22.1, the deadlines (a round or phase
    lasts dispute_window blocks from the call that started it); with the
    config's referee, the traces (each post-state node gives the party's
    S_t and is proven last), the operator bisection over node counts, the
    openings checked as the ledger checks them (rules 1 and 2), the
    referee's one operator run (aten::add.Tensor of two F32 tensors, here
    in struct), and the record of section 20.2 each end returns."""
    t = load("ledger_transcript.json")
    window, arity = t["config"]["dispute_window"], t["config"]["dispute_arity"]
    grace = t["config"]["miner_grace"]  # the miner's calls may come this much after a deadline
    referee = t["config"]["referee"]
    assert referee
    ok = [c for c in t["calls"] if c["expect"] == "ok"]
    s0 = next(c for c in ok if c["call"] == "task_info")["result"]["task"]["initial_state"]["published_digest"]
    miner = bytes.fromhex(next(x for x in ok if x["call"] == "run_info")["result"]["miner_identity"])
    disputes, ended = {}, []

    def play(d, now, a, b):
        """One round of the current bisection, from both parties' claims."""
        b_ = d["bis"]
        b_["lo"], b_["hi"], b_["agreed"], b_["a"], b_["b"] = ind.bisection_round(
            b_["lo"], b_["hi"], b_["agreed"], b_["a"], b_["b"], ind.bisection_points(b_["lo"], b_["hi"], arity), a, b)
        b_["rounds"] += 1
        d["claims"] = {}
        d["deadline"] = now + window
        if b_["hi"] == b_["lo"] + 1:  # one step (node) left: the phase ends
            d["phase"] = {"steps": "traces", "operators": "openings"}[d["phase"]]

    for c in ok:
        if c["call"] == "open_dispute":
            run = bytes.fromhex(c["run_id"])
            lo, agreed = 0, bytes.fromhex(s0)
            if c["lo_leaf"]:
                r, lo, agreed = ind.step_leaf_fields(bytes.fromhex(c["lo_leaf"]))
                assert r == run
            r, hi, miner_hi = ind.step_leaf_fields(bytes.fromhex(c["hi_leaf"]))
            d = {"run": run, "challenger": c["caller"], "lo0": lo, "hi0": hi, "phase": "steps",
                 "bis": {"lo": lo, "hi": hi, "agreed": agreed, "a": miner_hi, "b": bytes.fromhex(c["claim"]),
                         "rounds": 0},
                 "deadline": c["now"] + window, "claims": {}, "traces": {}, "openings": {}}
            disputes[c["result"]["dispute_id"]] = d
            assert (c["result"]["lo"], c["result"]["hi"], c["result"]["deadline"]) == (lo, hi, d["deadline"])
        else:
            if c.get("dispute_id") not in disputes or c["call"] == "dispute_info":
                continue
            d = disputes[c["dispute_id"]]
            role = "miner" if c.get("caller") == miner.hex() else "challenger"
            if c["call"] != "settle_dispute":
                assert c["now"] <= d["deadline"] + (grace if role == "miner" else 0)
                assert role == "miner" or c["caller"] in (d["challenger"], referee)
        if c["call"] == "claim_dispute":
            points = ind.bisection_points(d["bis"]["lo"], d["bis"]["hi"], arity)
            if d["phase"] == "steps" and role == "miner":
                fields = [ind.step_leaf_fields(bytes.fromhex(x["step_leaf"])) for x in c["claims"]]
                assert [(r, step) for r, step, _ in fields] == [(d["run"], p) for p in points]
                d["claims"]["miner"] = [state for _, _, state in fields]
            else:
                assert d["phase"] in ("steps", "operators")
                d["claims"][role] = [bytes.fromhex(x) for x in c["claims"]]
            if len(d["claims"]) == 2:
                play(d, c["now"], d["claims"]["miner"], d["claims"]["challenger"])
                if d["phase"] == "traces" and not referee:
                    d["end"] = "step_found"
        elif c["call"] == "commit_trace":
            assert d["phase"] == "traces"
            post = bytes.fromhex(c["post_node"])
            node = ind.op_node_decode(post)
            claimed = d["bis"]["a" if role == "miner" else "b"]
            assert node["name"] == "pot::post_state" and node["outputs"] == [{"digest": claimed.hex()}]
            assert ind.post_state_digest(node) == claimed  # the transcript's traces are honest about S_t
            proof = bytes.fromhex(c["post_proof"])
            assert ind.verify_inclusion(c["size"] - 1, c["size"], ind.leaf_hash(post),
                                        [proof[i:i + 32] for i in range(0, len(proof), 32)], bytes.fromhex(c["root"]))
            d["traces"][role] = (c["size"], bytes.fromhex(c["root"]))
            if len(d["traces"]) == 2:
                (na, ra), (nb, rb) = d["traces"]["miner"], d["traces"]["challenger"]
                d["steps"] = d["bis"]
                d["bis"] = {"lo": 0, "hi": max(na, nb), "agreed": ind.sha256(b""), "a": ra, "b": rb, "rounds": 0}
                d["phase"] = "operators" if max(na, nb) > 1 else "openings"
                d["deadline"] = c["now"] + window
        elif c["call"] == "open_node":
            assert d["phase"] == "openings"
            i = d["bis"]["lo"]
            check = ind.check_op_opening(i, d["bis"]["agreed"], d["bis"]["a" if role == "miner" else "b"],
                                         d["steps"]["agreed"], bytes.fromhex(c["opening"]))
            assert c["result"]["check"]["failure_rule"] == check["failure"], c["result"]["check"]
            assert c["result"]["check"]["batch_deferred"] == check["deferred"]
            d["openings"][role] = (check, ind.op_opening_decode(bytes.fromhex(c["opening"])))
            if len(d["openings"]) == 2:
                (ca, _), (cb, _) = d["openings"]["miner"], d["openings"]["challenger"]
                if ca["failure"] or cb["failure"]:
                    d["end"], d["rule"] = "ruled", ca["failure"] or cb["failure"]
                    d["losers"] = (1 if ca["failure"] else 0) | (2 if cb["failure"] else 0)
                else:
                    d["phase"] = "referee"  # the transcript has no post-state node opened
                    d["deadline"] = c["now"] + window
        elif c["call"] == "rule_dispute":
            assert d["phase"] == "referee" and c["caller"] == referee
            # Rule 3, the referee's one operator run, redone here: both
            # openings hold the same add(a, b, alpha=1) of F32 tensors.
            (ca, oa), (cb, _) = d["openings"]["miner"], d["openings"]["challenger"]
            key = [dict(n, outputs=[]) for n in (ca["node"], cb["node"])]
            assert key[0] == key[1] and ca["node"]["name"] == "aten::add" and ca["node"]["inputs"][2] == {"int": 1}
            x, y = (struct.unpack("<2f", b) for b in oa["tensors"])
            true = ind.chunk_root(struct.pack("<2f", *(p + q for p, q in zip(x, y)))).hex()
            lose = [n["outputs"][0]["tensor"]["chunk_root"] != true for n in (ca["node"], cb["node"])]
            assert (c["miner_loses"], c["challenger_loses"], c["rule"]) == (lose[0], lose[1], "operator")
            d["end"], d["rule"], d["losers"] = "referee_ruled", "operator", lose[0] | lose[1] << 1
        elif c["call"] == "settle_dispute":
            assert c["now"] > d["deadline"]
            if d["phase"] == "referee":
                d["end"] = "referee_default"
            else:
                done = set(d["claims"] if d["phase"] in ("steps", "operators") else
                           d["traces"] if d["phase"] == "traces" else d["openings"])
                late = {"miner": d["deadline"] + grace, "challenger": d["deadline"]}
                missing = [p for p in ("miner", "challenger") if p not in done and c["now"] > late[p]]
                assert missing
                d["end"] = "both_default" if len(missing) == 2 else missing[0] + "_default"
        elif c["call"] != "open_dispute":
            continue
        i = c.get("dispute_id", c["result"]["dispute_id"])
        d = disputes[i]
        assert c["result"]["ended"] == ("end" in d), (c, d)
        if not c["result"]["ended"]:
            assert c["result"]["phase"] == d["phase"]
            continue
        steps = d.get("steps", d["bis"])
        found = steps["hi"] == steps["lo"] + 1
        ops = d["bis"] if "steps" in d else None
        want = ind.dispute_record(
            i, d["run"], miner, bytes.fromhex(d["challenger"]), d["lo0"], d["hi0"], d["end"], steps["rounds"],
            *((steps["hi"], steps["agreed"], steps["a"], steps["b"]) if found else ()),
            phase=d["phase"], losers=d.get("losers"),
            miner_trace=d["traces"].get("miner", (0, bytes(32))),
            challenger_trace=d["traces"].get("challenger", (0, bytes(32))),
            op_rounds=ops["rounds"] if ops else 0, node=ops["lo"] if ops and ops["hi"] == ops["lo"] + 1 else 0,
            rule=d.get("rule"))
        assert c["result"]["record"] == want.hex(), (i, d)
        ended.append((i, c["result"]["outcome"]["end"], c["result"]["outcome"]["rule"]))
    assert ended == [(2, "ruled", "source"), (1, "miner_default", None), (0, "referee_ruled", "operator")]


def test_ledger_transcript_task_end():
    """The task's end (docs/ledger.md 2.11): after end_height no root is
    taken, pruning is refused up to end_height and accepted after it with
    the task's closed and void runs counted, and the pruned task cannot be
    posted again."""
    t = load("ledger_transcript.json")
    end = next(c for c in t["calls"] if c["call"] == "task_info")["result"]["task"]["end_height"]
    prunes = [c for c in t["calls"] if c["call"] == "prune_task"]
    assert [(c["now"], c["expect"]) for c in prunes] == [(end, "POT_E_STATE"), (end + 1, "ok")]
    assert {k: prunes[1]["result"][k] for k in ("ok", "closed_runs", "void_runs")} == \
        {"ok": True, "closed_runs": 1, "void_runs": 1}
    late = [c for c in t["calls"] if c.get("now", 0) > end and c["call"] in ("post_checkpoint_root", "post_task")]
    assert late and all(c["expect"] == "POT_E_STATE" for c in late)
    info = [c for c in t["calls"] if c["call"] == "ledger_info"][-1]["result"]
    assert (info["tasks"], info["open_runs"], info["closed_runs"]) == (0, 0, 0)


def test_ledger_transcript_bonds():
    """The bonds (docs/ledger.md 2.18) followed here from the accepted calls
    alone: deposits and withdrawals move free balances; a new task locks the
    owner's task bond, a new run its miner's bond, a dispute its
    challenger's; a dispute's end moves them by its losers (the miner alone:
    the challenger's back, and the challenger's costs, dispute_bond at most,
    from the miner's, whose rest burns; the challenger alone: its bond to the
    miner; both: both burn; none: the challenger's back); a
    FAIL burns the miner's; pruning gives back the task's and the unslashed
    runs'. Every account_info and ledger_info result must agree."""
    t = load("ledger_transcript.json")
    cfg = t["config"]
    free, locked = {}, {}
    burned = 0
    runs = {}       # run id -> [miner, task id, bond still held]
    disputes = {}   # dispute id -> (run id, challenger)
    challenges = {}  # challenge id -> run id
    tasks = {}      # task id -> owner

    def move(who, df=0, dl=0):
        free[who] = free.get(who, 0) + df
        locked[who] = locked.get(who, 0) + dl
        assert free[who] >= 0 and locked[who] >= 0, who

    def end_dispute(i, losers):
        nonlocal burned
        run, challenger = disputes.pop(i)
        miner, _, held = runs[run]
        if losers == ["miner"]:
            move(challenger, cfg["dispute_bond"], -cfg["dispute_bond"])
            if held:
                costs = min(cfg["dispute_bond"], cfg["miner_bond"])
                move(miner, 0, -cfg["miner_bond"])
                move(challenger, costs)
                burned += cfg["miner_bond"] - costs
        elif losers == ["challenger"]:
            move(challenger, 0, -cfg["dispute_bond"])
            move(miner, cfg["dispute_bond"])
        elif losers:
            move(challenger, 0, -cfg["dispute_bond"])
            burned += cfg["dispute_bond"]
            if held:
                move(miner, 0, -cfg["miner_bond"])
                burned += cfg["miner_bond"]
        else:
            move(challenger, cfg["dispute_bond"], -cfg["dispute_bond"])
        if "miner" in losers:
            runs[run][2] = False

    for c in (c for c in t["calls"] if c["expect"] == "ok"):
        call, r = c["call"], c["result"]
        if call == "deposit":
            move(c["identity"], c["amount"])
        elif call == "withdraw":
            move(c["caller"], -c["amount"])
        elif call == "post_task":
            task = ind.tagged("pot/v2/task", bytes.fromhex(c["task"])).hex()
            if task not in tasks:
                tasks[task] = c["caller"]
                move(c["caller"], -cfg["task_bond"], cfg["task_bond"])
        elif call == "start_training_commitment" and r["run_id"] not in runs:
            # The canonical commitment opens with protocol_version (08 02),
            # then task_id (12 20 and its 32 bytes).
            commitment = bytes.fromhex(c["commitment"])
            assert commitment[:4] == bytes([0x08, 0x02, 0x12, 0x20])
            task = commitment[4:36].hex()
            runs[r["run_id"]] = [c["caller"], task, True]
            move(c["caller"], -cfg["miner_bond"], cfg["miner_bond"])
        elif call == "issue_challenge":
            challenges.update((i, c["run_id"]) for i in r["challenge_ids"])
        elif call == "finalize_challenge" and r["verdict"] == "fail":
            run = challenges[c["challenge_id"]]
            if runs[run][2]:
                move(runs[run][0], 0, -cfg["miner_bond"])
                burned += cfg["miner_bond"]
                runs[run][2] = False
        elif call == "prune_task":
            move(tasks.pop(c["task_id"]), cfg["task_bond"], -cfg["task_bond"])
            released = cfg["task_bond"]
            for run, (miner, task, held) in list(runs.items()):
                if task == c["task_id"]:
                    if held:
                        move(miner, cfg["miner_bond"], -cfg["miner_bond"])
                        released += cfg["miner_bond"]
                    del runs[run]
            assert r["released"] == released
        elif call == "account_info":
            who = c["identity"]
            assert (r["free"], r["locked"]) == (free.get(who, 0), locked.get(who, 0)), (who, r)
        elif call == "ledger_info":
            assert (r["held"], r["burned"]) == (sum(free.values()) + sum(locked.values()), burned)
        if call == "open_dispute":
            disputes[r["dispute_id"]] = (c["run_id"], c["caller"])
            move(c["caller"], -cfg["dispute_bond"], cfg["dispute_bond"])
        if isinstance(r, dict) and r.get("ended"):
            end_dispute(c.get("dispute_id", r.get("dispute_id")), r["outcome"]["losers"])
    # Everything came back or moved: the task is pruned, no bond is left.
    assert not tasks and not disputes and all(v == 0 for v in locked.values())
    assert sum(c["call"] == "account_info" for c in t["calls"]) >= 8


def test_bisection_points_and_rounds():
    """Section 22.1's points and round bound, recomputed in plain Python."""
    cases = load("protocol.json")["bisection_points"]
    assert len(cases) >= 8
    for c in cases:
        assert ind.bisection_points(c["lo"], c["hi"], c["arity"]) == c["points"], c
        assert ind.bisection_rounds(c["lo"], c["hi"], c["arity"]) == c["rounds"], c


def test_bisection_dispute():
    """A dispute played round by round: each round's points are the
    interval's, the claims are the stated states, and the rounds narrow it
    to the first step where B's states leave A's."""
    for d in load("protocol.json")["bisection_disputes"]:
        lo, hi, k = d["lo"], d["hi"], d["arity"]
        agreed, a_hi, b_hi = d["agreed"], d["a_hi"], d["b_hi"]
        for r in d["rounds"]:
            assert (r["lo"], r["hi"]) == (lo, hi)
            assert r["points"] == ind.bisection_points(lo, hi, k)
            assert r["a"] == [ind.sha256(f"S_{p}".encode()).hex() for p in r["points"]]
            lo, hi, agreed, a_hi, b_hi = ind.bisection_round(lo, hi, agreed, a_hi, b_hi, r["points"], r["a"], r["b"])
        end = d["end"]
        assert (end["lo"], end["hi"], end["agreed"], end["a_hi"], end["b_hi"]) == (lo, hi, agreed, a_hi, b_hi)
        assert hi == lo + 1 == 37 and agreed == ind.sha256(b"S_36").hex()
        assert b_hi == ind.sha256(b"B's S_37").hex()
        assert end["rounds_played"] == len(d["rounds"]) <= ind.bisection_rounds(d["lo"], d["hi"], k)


def test_op_nodes():
    """Section 22.2's node encoding, written from the document: every
    vector's leaf data from its JSON, its leaf hash, the trace root, and the
    post-state node's digest from the tensors it lists."""
    p = load("protocol.json")
    nodes = p["op_nodes"]
    assert len(nodes) >= 7
    kinds = set()
    for n in nodes:
        data = ind.op_node_leaf_data(n["node"])
        assert data.hex() == n["leaf_data"], n["comment"]
        assert ind.leaf_hash(data).hex() == n["leaf_hash"]
        kinds |= {k for v in n["node"]["inputs"] + n["node"]["outputs"] for k in v}
    assert kinds >= {"tensor", "int", "bits", "none", "list", "device", "bool", "generator", "opaque", "digest"}
    root = p["op_trace_root"]
    assert root["size"] == len(nodes)
    assert ind.mth([bytes.fromhex(n["leaf_data"]) for n in nodes]).hex() == root["root"]
    post = nodes[-1]["node"]
    assert post["name"] == "pot::post_state"
    assert ind.post_state_digest(post).hex() == post["outputs"][0]["digest"]


def test_streams_from_the_text_alone():
    """Section 15.1: the shards regenerated from their seeds, their roots, the
    descriptor bytes, dataset root and size, and every window proof checked
    into the digest of the sample the verifier rebuilds."""
    v = load("protocol.json")["streams"]
    assert len(v) == 2
    for case in v:
        j = case["stream"]
        b = 2 if j["token_dtype"] == "U16" else 4
        shards = [ind.stream(f"{case['seed']}/{s}", sh["tokens"] * b) for s, sh in enumerate(j["shards"])]
        for data, sh in zip(shards, j["shards"]):
            assert ind.shard_root(data).hex() == sh["root"], case["comment"]
        assert ind.stream_descriptor(j).hex() == case["descriptor"]
        assert ind.stream_root(j).hex() == case["dataset_root"]
        assert ind.stream_size(j) == case["dataset_size"]
        for w in case["windows"]:
            assert ind.stream_locate(j, w["index"]) == (w["shard"], w["offset"])
            proof = bytes.fromhex(w["proof"])
            window = ind.check_window_proof(j, w["index"], proof)
            o = w["offset"] * b
            assert window == shards[w["shard"]][o:o + j["window"] * b]
            assert ind.window_sample_digest(j, window).hex() == w["sample_digest"], (case["comment"], w["index"])
            forged = bytearray(proof)
            forged[13] ^= 1  # the first byte of the chunks
            with pytest.raises(ValueError):
                ind.check_window_proof(j, w["index"], bytes(forged))
