"""Writes the calls of tests/vectors/ledger_transcript.json (stdout).

The docs/ledger.md example session: a task posted by its owner, a 4-step run
of miner "miner" that answers to it, five verifiers registered with stakes,
the runtime's randomness of each block, a norm-bucket challenge drawn from
it whose first committee mostly stays silent, so the challenge is re-run
with a committee drawn without the silent members, which witnesses it;
with refused calls inserted. Everything is
computed here with tests/interop/independent.py (hashlib only); the
results are recorded by the reference ledger:

    python3 tests/vectors/make_ledger_transcript.py > /tmp/calls.json
    build/src/cli/pot ledger --record /tmp/calls.json > tests/vectors/ledger_transcript.json
"""
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "interop"))
import independent as ind  # noqa: E402

OWNER, MINER, MALLORY = (s.encode().hex() for s in ("owner", "miner", "mallory"))
# The registered verifiers and their stakes; a committee of 3 is drawn by
# stake (docs/PROTOCOL.md section 11.1).
VERIFIERS = [(name.encode(), stake) for name, stake in
             (("alice", 60), ("bob", 40), ("carol", 25), ("dave", 10), ("erin", 5))]
COMMITTEE_SIZE = 3
STEPS = 4
# The last height at which the task registers runs and takes their roots.
END_HEIGHT = 150


def digest(label: str) -> str:
    return ind.sha256(label.encode()).hex()


# The run's states: one tensor "w" (F32 [2]), w_t = [1, 2] * 1.5^t, exact in
# float32; S(t) its state digest (docs/PROTOCOL.md 5). A step multiplies by
# 1.5 as two operators (section "operator traces" below).
def w_bytes(values) -> bytes:
    return struct.pack("<2f", *values)


def w_at(t: int) -> list:
    return [1.5 ** t, 2 * 1.5 ** t]


def state_of(values) -> str:
    return ind.state_digest({"w": ind.tensor_digest("w", "F32", [2], w_bytes(values))}).hex()


def S(t: int) -> str:
    """S_t's digest; S_0, the task's published model, is a label (the draws
    depend on the run id, so on it)."""
    return digest("S_0") if t == 0 else state_of(w_at(t))


HARDWARE_CLASS = "cpu-x86_64/aten:avx2/onednn:avx2"
SPEC = {"framework": "pytorch", "framework_version": "1.13.1", "model_program_digest": digest("program"),
        "dtype": "F32", "attention_backend": "math", "dropout": 0.1,
        "optimizer": {"kind": "sgd", "lr": 0.01}, "batch_size": 4, "intra_op_threads": 1,
        "hardware_class": HARDWARE_CLASS, "seed_policy": {"kind": "per_step", "base_seed": 7},
        "norm_bucket_resolution": 16}  # a listed task draws per-step random numbers (docs/PROTOCOL.md 17.1)
TASK = {"owner": OWNER, "spec": SPEC, "dataset_root": digest("dataset"), "dataset_size": 100,
        "initial_state": {"published_digest": S(0)}, "schedule": {"listed_root": digest("schedule")},
        "min_steps": STEPS, "max_steps": STEPS, "challenge_policy": {"rounds": 1, "mode": "norm_bucket", "committee_size": COMMITTEE_SIZE},
        "end_height": END_HEIGHT}
COMMITMENT = {"task_id": ind.task_id(TASK).hex(), "initial_state_digest": S(0),
              "schedule_root": digest("schedule"), "dataset_root": digest("dataset"), "dataset_size": 100,
              "spec_digest": ind.spec_digest(SPEC).hex(), "declared_steps": STEPS, "miner_identity": MINER}
RUN = ind.run_id(COMMITMENT).hex()
# A second miner's run that is never sealed: void once the task ends.
IDLE = dict(COMMITMENT, miner_identity=MALLORY)

# Each leaf commits an update norm in bucket -1200 at the task's resolution
# (16 * log2(1.02 * 2^-75) = -1199.54...): the reference witnesses are judged by.
NORM = math.ldexp(1.02, -75)
# The ledger reads no statistics table: each leaf commits a stand-in digest.
def STATS(t):
    return ind.sha256(b"statistics of S_%d" % t)


leaves = [ind.step_leaf(bytes.fromhex(RUN), t, bytes.fromhex(S(t)), STATS(t), struct.pack("<d", 1.0 / t),
                        struct.pack("<d", NORM)) for t in range(1, STEPS + 1)]
# The same step of another run (a trajectory copied from it).
OTHER_RUN = ind.sha256(b"another run")
hashes = [ind.leaf_hash(x) for x in leaves]
root2 = ind.mth(leaves[:2])
root4 = ind.mth(leaves)
pair = [ind.node_hash(hashes[0], hashes[1]), ind.node_hash(hashes[2], hashes[3])]


def inclusion(i: int) -> str:
    """RFC 6962 PATH(i, D[4]), deepest hash first."""
    return (hashes[i ^ 1] + pair[1 - i // 2]).hex()


# The runtime's randomness of blocks 102, 103 and 126 (drand or a VRF output
# on a chain). The run is sealed at 102 and the draw delay is 1: its steps
# come from the value of block 103, which the miner could not know when it
# sealed.
RANDOMNESS = {h: digest(f"randomness of block {h}") for h in (102, 103, 126)}
STEP = ind.derive_challenges(bytes.fromhex(RANDOMNESS[103]), bytes.fromhex(RUN), STEPS, 1)[0]
COMMITTEE = ind.draw_committee(bytes.fromhex(RANDOMNESS[103]), bytes.fromhex(RUN), 0, VERIFIERS, COMMITTEE_SIZE)
MANIFEST = digest("opening manifest")
# Attempt 1: only the committee's smallest stake shows up and replays; the
# others stay silent, so too little stake is counted (participation). The
# attempt is finalized at 125, the new committee drawn from block 126's
# randomness without the silent members.
REVEALER = min(COMMITTEE, key=lambda m: m[1])
SILENT = [m for m in COMMITTEE if m != REVEALER]
assert REVEALER[1] * 2 <= sum(st for _, st in COMMITTEE)
SECOND = ind.draw_committee(bytes.fromhex(RANDOMNESS[126]), bytes.fromhex(RUN), 0,
                            [v for v in VERIFIERS if v not in SILENT], COMMITTEE_SIZE)
# Attempt 2: the first two members drawn replay, each on its own
# architecture (the task's mode is norm_bucket), so digests differ and
# buckets are close; the third states that the sample it was served fails
# its proof (check 15).
ENVIRONMENTS = [{"framework_version": "1.13.1", "intra_op_threads": 1, "hardware_class": HARDWARE_CLASS},
                {"framework_version": "1.13.0", "intra_op_threads": 4,
                 "hardware_class": "cpu-aarch64/aten:default/onednn:any"},
                {"framework_version": "1.13.1", "intra_op_threads": 2, "hardware_class": HARDWARE_CLASS}]


def replayed(who: bytes, environment: dict) -> dict:
    return {"environment": environment, "kind": "replayed", "replayed_state": digest(f"{who.decode()}'s replay"),
            "bucket": -1199, "gradient_digest": digest(f"{who.decode()}'s gradient")}


FINDINGS = [replayed(SECOND[0][0], ENVIRONMENTS[0]), replayed(SECOND[1][0], ENVIRONMENTS[1]),
            {"environment": ENVIRONMENTS[2], "kind": "invalid_opening", "check": "sample_proof"}]
assert (SECOND[0][1] + SECOND[1][1]) * 2 > sum(st for _, st in SECOND)  # the replays decide: PASS
WITNESSES = [(who.hex(), finding, salt) for (who, _), finding, salt in
             zip(SECOND, FINDINGS, ("000102030405060708090a0b0c0d0e0f", "ab" * 16, "cd" * 20))]
FIRST_WITNESS = (REVEALER[0].hex(), replayed(REVEALER[0], ENVIRONMENTS[0]), "ef" * 16)
OUTSIDER = next(who for who, _ in VERIFIERS if all(who != m for m, _ in COMMITTEE)).hex()


def witness(who, finding, salt):
    statement = dict(finding, run_id=RUN, step=STEP, challenge_id=0, mode="norm_bucket")
    return ind.witness_commitment(statement, bytes.fromhex(salt), bytes.fromhex(who)).hex()


# --- Operator traces (docs/ledger.md 2.15-2.17) --------------------------
# With a referee configured, a dispute that found step 3 goes on to the
# parties' operator traces of step 3 (docs/PROTOCOL.md 22.2). The honest
# trace: h = w * 0.5 (node 0), w' = w + h (node 1), the post-state node (2).
REFEREE = b"referee".hex()
# The outsider (carol) forged node 1's result; the third verifier (erin)
# wired node 1 to a tensor node 0 never produced. Both dispute the miner
# from their own S_3.
THIRD = next(who for who, _ in VERIFIERS
             if who.hex() not in (OUTSIDER, FIRST_WITNESS[0]) and all(who != m for m, _ in COMMITTEE)).hex()
assert (bytes.fromhex(OUTSIDER), bytes.fromhex(THIRD)) == (b"carol", b"erin")  # as docs/ledger.md 5.1 tells
HALF = "3fe0000000000000"  # 0.5 as IEEE 754 bits


def tensor(values, source):
    return {"tensor": {"dtype": "F32", "shape": [2], "strides": [1],
                       "chunk_root": ind.chunk_root(w_bytes(values)).hex(), "source": source}}


def trace(h, out):
    """The step-3 trace of a party whose node 1 adds h and gives out: its
    nodes' leaf data, and the bytes of node 1's tensor arguments (w_2, h)."""
    w2 = w_at(2)
    nodes = [
        {"name": "aten::mul", "overload": "Scalar",
         "inputs": [tensor(w2, {"kind": "state", "name": "w"}), {"double": 0.5, "bits": HALF}],
         "outputs": [tensor([x * 0.5 for x in w2], {"kind": "none"})]},
        {"name": "aten::add", "overload": "Tensor",
         "inputs": [tensor(w2, {"kind": "state", "name": "w"}), tensor(h, {"kind": "node", "node": 0, "slot": 0}),
                    {"int": 1}],
         "outputs": [tensor(out, {"kind": "none"})]},
        {"name": "pot::post_state", "overload": "",
         "inputs": [{"string": "w"}, tensor(out, {"kind": "node", "node": 1, "slot": 0})],
         "outputs": [{"digest": state_of(out)}]},
    ]
    return [ind.op_node_leaf_data(n) for n in nodes], [w_bytes(w2), w_bytes(h)]


HONEST = trace([x * 0.5 for x in w_at(2)], w_at(3))
FORGED = [3.375, 6.5]  # the outsider's w_3: node 1's second value forged
CAROLS = trace([x * 0.5 for x in w_at(2)], FORGED)
WIRED = [1.0, 1.0]  # erin's "h": not node 0's result
ERIN_W3 = [a + b for a, b in zip(w_at(2), WIRED)]
ERINS = trace(WIRED, ERIN_W3)
assert state_of([2.25 + 1.125, 4.5 + 2.25]) == S(3)


def root(nodes, n=None):
    return ind.mth(nodes[:len(nodes) if n is None else n]).hex()


def commit_trace(who, now, dispute_id, party_trace, **extra):
    nodes, _ = party_trace
    hashes = [ind.leaf_hash(x) for x in nodes]
    return dict({"call": "commit_trace", "caller": who, "now": now, "dispute_id": dispute_id, "size": len(nodes),
                 "root": root(nodes), "post_node": nodes[-1].hex(),
                 "post_proof": b"".join(ind.inclusion_path(len(nodes) - 1, hashes)).hex()}, **extra)


def op_claims(who, now, dispute_id, party_trace, points, **extra):
    nodes, _ = party_trace
    return dict({"call": "claim_dispute", "caller": who, "now": now, "dispute_id": dispute_id,
                 "claims": [root(nodes, p) for p in points]}, **extra)


def open_node(who, now, dispute_id, party_trace, i, **extra):
    """Node i's opening: its proofs, its producer nodes, the S_2 tensor
    proof of w, and (node 1's) argument bytes."""
    nodes, args = party_trace
    hashes = [ind.leaf_hash(x) for x in nodes[:i + 1]]
    node = ind.op_node_decode(nodes[i])
    producers = sorted({t["source"]["node"] for t in ind._tensors(node["inputs"]) if t["source"]["kind"] == "node"})
    w2 = {"w": ind.tensor_digest("w", "F32", [2], w_bytes(w_at(2)))}
    opening = ind.op_opening(nodes[i], ind.inclusion_path(i, hashes), ind.consistency_proof(i, hashes) if i else [],
                             [(j, nodes[j], ind.inclusion_path(j, hashes[:i])) for j in producers],
                             [("w", ind.tensor_proof(w2, "w"))],
                             args)
    return dict({"call": "open_node", "caller": who, "now": now, "dispute_id": dispute_id,
                 "opening": opening.hex()}, **extra)


# Bonds (docs/ledger.md 2.18): the owner's task bond, each run's miner
# bond, each dispute's challenger bond, taken from what the runtime
# deposited for each identity.
BONDS = {"task_bond": 100, "miner_bond": 1000, "dispute_bond": 50, "max_task_blocks": 100, "max_open_tasks": 4,
         "miner_grace": 2}
DEPOSITS = [(OWNER, 150), (MINER, 1000), (MALLORY, 1000)] + [(who.hex(), 200) for who, _ in VERIFIERS]

mine = dict(COMMITMENT, initial_state_digest=digest("a model obtained elsewhere"))
calls = [
    {"call": "start_training_commitment", "caller": MINER, "now": 99,
     "commitment": ind.commitment_canonical(COMMITMENT).hex(), "expect": "POT_E_NOT_FOUND"},
    # Nothing deposited yet: the task bond is not there.
    {"call": "post_task", "caller": OWNER, "now": 99, "task": ind.task_canonical(TASK).hex(),
     "expect": "POT_E_STATE"},
    {"call": "deposit", "identity": OWNER, "now": 99, "amount": 0, "expect": "POT_E_INVALID_ARGUMENT"},
] + [
    {"call": "deposit", "identity": who, "now": 99, "amount": amount} for who, amount in DEPOSITS
] + [
    {"call": "withdraw", "caller": OWNER, "now": 99, "amount": 151, "expect": "POT_E_STATE"},
    {"call": "withdraw", "caller": OWNER, "now": 99, "amount": 50},
    # A task ending more than max_task_blocks after its post is refused.
    {"call": "post_task", "caller": OWNER, "now": 99, "task": ind.task_canonical(dict(TASK, end_height=200)).hex(),
     "expect": "POT_E_OUT_OF_RANGE"},
    {"call": "post_task", "caller": MINER, "now": 99, "task": ind.task_canonical(TASK).hex(),
     "expect": "POT_E_PERMISSION"},
    {"call": "post_task", "caller": OWNER, "now": 99, "task": ind.task_canonical(TASK).hex()},
    {"call": "start_training_commitment", "caller": MINER, "now": 100,
     "commitment": ind.commitment_canonical(mine).hex(), "expect": "POT_E_INVALID_ARGUMENT"},
    {"call": "start_training_commitment", "caller": MINER, "now": 100,
     "commitment": ind.commitment_canonical(COMMITMENT).hex()},
    {"call": "start_training_commitment", "caller": MALLORY, "now": 100,
     "commitment": ind.commitment_canonical(IDLE).hex()},
    # Verifiers register with a stake before the randomness that draws
    # their committees exists.
    {"call": "register_verifier", "caller": VERIFIERS[0][0].hex(), "now": 100, "stake": 0,
     "expect": "POT_E_INVALID_ARGUMENT"},
] + [
    {"call": "register_verifier", "caller": who.hex(), "now": 100, "stake": stake} for who, stake in VERIFIERS
] + [
    {"call": "post_checkpoint_root", "caller": MALLORY, "now": 100, "run_id": RUN, "size": 1, "root": "00" * 32,
     "consistency_proof": "", "expect": "POT_E_PERMISSION"},
    {"call": "issue_challenge", "now": 101, "run_id": RUN, "expect": "POT_E_STATE"},
    # Only the sealing post carries the steps the run's statistics flag.
    {"call": "post_checkpoint_root", "caller": MINER, "now": 101, "run_id": RUN, "size": 2, "root": root2.hex(),
     "consistency_proof": "", "flagged_steps": [1], "expect": "POT_E_INVALID_ARGUMENT"},
    {"call": "post_checkpoint_root", "caller": MINER, "now": 101, "run_id": RUN, "size": 2, "root": root2.hex(),
     "consistency_proof": ""},
    # PROOF(2, D[4]) = [MTH(D[2:4])]: D[0:2] is a complete subtree of both.
    # More flagged steps than the task's one round: not a run honest
    # training makes (docs/ledger.md 2.3).
    {"call": "post_checkpoint_root", "caller": MINER, "now": 102, "run_id": RUN, "size": 4, "root": root4.hex(),
     "consistency_proof": pair[1].hex(), "flagged_steps": [1, 3], "expect": "POT_E_LIMIT"},
    {"call": "post_checkpoint_root", "caller": MINER, "now": 102, "run_id": RUN, "size": 4, "root": root4.hex(),
     "consistency_proof": pair[1].hex(), "flagged_steps": []},
    {"call": "post_randomness", "now": 102, "randomness": RANDOMNESS[102]},
    # Sealed at 102: the value of block 102 is not the one.
    {"call": "issue_challenge", "now": 102, "run_id": RUN, "expect": "POT_E_STATE"},
    {"call": "post_randomness", "now": 103, "randomness": RANDOMNESS[103]},
    {"call": "post_randomness", "now": 103, "randomness": RANDOMNESS[102], "expect": "POT_E_CONFLICT"},
    # Protocol 2 drafts took a beacon from the caller.
    {"call": "issue_challenge", "now": 103, "run_id": RUN, "beacon": digest("a ground beacon"),
     "expect": "POT_E_INVALID_ARGUMENT"},
    {"call": "issue_challenge", "now": 103, "run_id": RUN},
    # Once per run: anyone may ask again and gets the same challenge.
    {"call": "issue_challenge", "now": 104, "run_id": RUN},
    {"call": "submit_opening", "caller": MINER, "now": 104, "challenge_id": 0, "manifest_digest": MANIFEST,
     "step_leaf": ind.step_leaf(OTHER_RUN, STEP, bytes.fromhex(S(STEP)), STATS(STEP), struct.pack("<d", 1.0 / STEP),
                                struct.pack("<d", NORM)).hex(),
     "leaf_proof": inclusion(STEP - 1), "expect": "POT_E_INVALID_ARGUMENT"},
    {"call": "submit_opening", "caller": MINER, "now": 104, "challenge_id": 0, "manifest_digest": MANIFEST,
     "step_leaf": leaves[STEP - 1].hex(), "leaf_proof": inclusion(STEP - 1)},
    # Protocol 2 drafts let the miner declare the reference bucket after the
    # challenge; the leaf commits it now, and the call is gone.
    {"call": "declare_witness_norm_bucket", "caller": MINER, "now": 104, "challenge_id": 0, "bucket": -1200,
     "expect": "POT_E_INVALID_ARGUMENT"},
] + [
    # Attempt 1: the committee of the run's draw.
    {"call": "commit_witness", "caller": FIRST_WITNESS[0], "now": 105, "challenge_id": 0,
     "commitment": witness(*FIRST_WITNESS)},
    # Not on the committee: a registered verifier left out of the draw, and
    # an identity that never registered. Both refused.
    {"call": "commit_witness", "caller": OUTSIDER, "now": 105, "challenge_id": 0,
     "commitment": witness(OUTSIDER, FINDINGS[0], "cd" * 16), "expect": "POT_E_PERMISSION"},
    {"call": "commit_witness", "caller": MALLORY, "now": 105, "challenge_id": 0,
     "commitment": witness(MALLORY, FINDINGS[0], "cd" * 16), "expect": "POT_E_PERMISSION"},
    {"call": "reveal_witness_value", "caller": FIRST_WITNESS[0], "now": 106, "challenge_id": 0, **FIRST_WITNESS[1],
     "salt": FIRST_WITNESS[2], "expect": "POT_E_STATE"},
    # A protocol-1 reveal (a bare value: no kind, no environment) is refused.
    {"call": "reveal_witness_value", "caller": FIRST_WITNESS[0], "now": 115, "challenge_id": 0,
     "replayed_state": FIRST_WITNESS[1]["replayed_state"], "bucket": -1199, "salt": FIRST_WITNESS[2],
     "expect": "POT_E_INVALID_ARGUMENT"},
    {"call": "reveal_witness_value", "caller": FIRST_WITNESS[0], "now": 115, "challenge_id": 0, **FIRST_WITNESS[1],
     "salt": FIRST_WITNESS[2]},
    # Disputes (docs/ledger.md 2.12-2.14). The outsider replays the run and
    # disagrees from step 3 on: it disputes the miner's S_4 from the agreed
    # S_0 (the commitment's). Round 1's point is step 2 (they agree), round
    # 2's step 3 (they differ): the record names step 3.
    {"call": "open_dispute", "caller": MINER, "now": 116, "run_id": RUN, "lo_leaf": "", "lo_proof": "",
     "hi_leaf": leaves[3].hex(), "hi_proof": inclusion(3), "claim": state_of([1.5 * x for x in FORGED]),
     "expect": "POT_E_PERMISSION"},
    {"call": "open_dispute", "caller": OUTSIDER, "now": 116, "run_id": RUN, "lo_leaf": "", "lo_proof": "",
     "hi_leaf": leaves[3].hex(), "hi_proof": inclusion(3), "claim": S(4),
     "expect": "POT_E_INVALID_ARGUMENT"},  # the miner's own digest: nothing disputed
    {"call": "open_dispute", "caller": OUTSIDER, "now": 116, "run_id": RUN, "lo_leaf": "", "lo_proof": "",
     "hi_leaf": leaves[3].hex(), "hi_proof": inclusion(2), "claim": state_of([1.5 * x for x in FORGED]),
     "expect": "POT_E_PROOF_MISMATCH"},
    {"call": "open_dispute", "caller": OUTSIDER, "now": 116, "run_id": RUN, "lo_leaf": "", "lo_proof": "",
     "hi_leaf": leaves[3].hex(), "hi_proof": inclusion(3), "claim": state_of([1.5 * x for x in FORGED])},
    {"call": "open_dispute", "caller": OUTSIDER, "now": 116, "run_id": RUN, "lo_leaf": "", "lo_proof": "",
     "hi_leaf": leaves[3].hex(), "hi_proof": inclusion(3), "claim": state_of([1.5 * x for x in FORGED]),
     "expect": "POT_E_DUPLICATE"},
    # A second dispute from step 2 (agreed: the miner's leaf) that the
    # miner leaves unanswered: settled past the round's deadline and the
    # miner's grace (121 + 2 + 1),
    # the miner the loser.
    {"call": "open_dispute", "caller": FIRST_WITNESS[0], "now": 116, "run_id": RUN,
     "lo_leaf": leaves[1].hex(), "lo_proof": inclusion(1), "hi_leaf": leaves[3].hex(), "hi_proof": inclusion(3),
     "claim": digest("another S_4")},
    # Erin disputes from step 2 too, with a trace wired wrongly: its one
    # round finds step 3 at 117 (dispute 2).
    {"call": "open_dispute", "caller": THIRD, "now": 116, "run_id": RUN,
     "lo_leaf": leaves[1].hex(), "lo_proof": inclusion(1), "hi_leaf": leaves[3].hex(), "hi_proof": inclusion(3),
     "claim": state_of([1.5 * x for x in ERIN_W3])},
    {"call": "claim_dispute", "caller": MINER, "now": 117, "dispute_id": 0, "claims": [S(2)],
     "expect": "POT_E_INVALID_ARGUMENT"},  # the miner claims with its leaves
    {"call": "claim_dispute", "caller": MINER, "now": 117, "dispute_id": 0,
     "claims": [{"step_leaf": leaves[2].hex(), "leaf_proof": inclusion(2)}], "expect": "POT_E_INVALID_ARGUMENT"},
    {"call": "claim_dispute", "caller": MINER, "now": 117, "dispute_id": 0,
     "claims": [{"step_leaf": leaves[1].hex(), "leaf_proof": inclusion(1)}]},
    {"call": "claim_dispute", "caller": MINER, "now": 117, "dispute_id": 0,
     "claims": [{"step_leaf": leaves[1].hex(), "leaf_proof": inclusion(1)}], "expect": "POT_E_DUPLICATE"},
    {"call": "claim_dispute", "caller": MINER, "now": 117, "dispute_id": 2,
     "claims": [{"step_leaf": leaves[2].hex(), "leaf_proof": inclusion(2)}]},
    {"call": "claim_dispute", "caller": THIRD, "now": 117, "dispute_id": 2, "claims": [state_of(ERIN_W3)]},
    {"call": "dispute_info", "dispute_id": 0},
    # Dispute 2's traces (phase from 117): each party's post-state node
    # gives its S_3; the operator bisection starts at 118.
    commit_trace(MINER, 118, 2, HONEST),
    commit_trace(THIRD, 118, 2, ERINS),
    {"call": "claim_dispute", "caller": OUTSIDER, "now": 118, "dispute_id": 0, "claims": [S(2)]},
    {"call": "claim_dispute", "caller": OUTSIDER, "now": 119, "dispute_id": 0,
     "claims": [state_of(FORGED)]},
    {"call": "claim_dispute", "caller": MINER, "now": 119, "dispute_id": 0,
     "claims": [{"step_leaf": leaves[2].hex(), "leaf_proof": inclusion(2)}]},
    # Step 3 found: with a referee, dispute 0 enters its traces phase.
    {"call": "dispute_info", "dispute_id": 0},
    op_claims(MINER, 119, 2, HONEST, [1]),
    op_claims(THIRD, 119, 2, ERINS, [1]),  # the roots of node 0 agree
    {"call": "claim_dispute", "caller": FIRST_WITNESS[0], "now": 120, "dispute_id": 1,
     "claims": [digest("another S_3")]},
    # Carol cannot bring the honest trace: its post-state node gives the
    # miner's S_3, not carol's.
    commit_trace(OUTSIDER, 120, 0, HONEST, expect="POT_E_INVALID_ARGUMENT"),
    commit_trace(MINER, 120, 0, HONEST),
    commit_trace(OUTSIDER, 120, 0, CAROLS),
    op_claims(MINER, 120, 2, HONEST, [2]),
    op_claims(THIRD, 120, 2, ERINS, [2]),  # the roots of nodes 0-1 differ: node 1
    {"call": "settle_dispute", "now": 121, "dispute_id": 1, "expect": "POT_E_STATE"},
    op_claims(MINER, 121, 0, HONEST, [1]),
    open_node(MINER, 121, 0, HONEST, 1, expect="POT_E_STATE"),  # the operators phase
    op_claims(OUTSIDER, 121, 0, CAROLS, [1]),
    # Dispute 2's openings of node 1: erin's names node 0's result as its
    # second argument, but node 0 gave another tensor. The ledger rules
    # (rule 2, source): erin loses.
    open_node(MINER, 121, 2, HONEST, 1),
    open_node(THIRD, 121, 2, ERINS, 1),
    {"call": "dispute_info", "dispute_id": 2, "expect": "POT_E_NOT_FOUND"},  # ended: in the outcome log
    # Dispute 1's round closed at 121 for alice; the miner has its grace
    # of 2 blocks, until 123.
    {"call": "settle_dispute", "now": 122, "dispute_id": 1, "expect": "POT_E_STATE"},
    op_claims(OUTSIDER, 122, 0, CAROLS, [2]),
    op_claims(MINER, 122, 0, HONEST, [2]),
    # Node 1 of dispute 0: the same add of the same tensors, different
    # results. The ledger cannot run an operator: the referee phase.
    open_node(OUTSIDER, 123, 0, CAROLS, 1),
    open_node(MINER, 123, 0, HONEST, 1),
    {"call": "dispute_info", "dispute_id": 0},
    # Past the miner's grace: its claim is refused and it loses dispute 1 by
    # default; its bond goes to alice, who gets hers back.
    {"call": "claim_dispute", "caller": MINER, "now": 124, "dispute_id": 1,
     "claims": [{"step_leaf": leaves[2].hex(), "leaf_proof": inclusion(2)}], "expect": "POT_E_STATE"},
    {"call": "settle_dispute", "now": 124, "dispute_id": 1},
    {"call": "account_info", "identity": FIRST_WITNESS[0]},
    {"call": "rule_dispute", "caller": OUTSIDER, "now": 124, "dispute_id": 0, "miner_loses": True,
     "challenger_loses": False, "rule": "operator", "expect": "POT_E_PERMISSION"},
    {"call": "rule_dispute", "caller": REFEREE, "now": 124, "dispute_id": 0, "miner_loses": False,
     "challenger_loses": True, "rule": "opening", "expect": "POT_E_INVALID_ARGUMENT"},
    # The referee ran aten::add.Tensor on the opened arguments ([2.25, 4.5]
    # + [1.125, 2.25] = [3.375, 6.75]): carol's result is not it.
    {"call": "rule_dispute", "caller": REFEREE, "now": 124, "dispute_id": 0, "miner_loses": False,
     "challenger_loses": True, "rule": "operator"},
    {"call": "finalize_challenge", "now": 124, "challenge_id": 0, "expect": "POT_E_STATE"},
    {"call": "challenge_info", "challenge_id": 0},
    {"call": "finalize_challenge", "now": 125, "challenge_id": 0},
    # Re-run: a new committee, from randomness posted after the attempt
    # ended, without its silent members.
    {"call": "redraw_committee", "now": 125, "challenge_id": 0, "expect": "POT_E_STATE"},
    {"call": "post_randomness", "now": 126, "randomness": RANDOMNESS[126]},
    {"call": "redraw_committee", "now": 126, "challenge_id": 0},
    {"call": "commit_witness", "caller": SILENT[0][0].hex(), "now": 127, "challenge_id": 0,
     "commitment": witness(SILENT[0][0].hex(), FINDINGS[0], "cd" * 16), "expect": "POT_E_PERMISSION"},
] + [
    {"call": "commit_witness", "caller": w, "now": 127, "challenge_id": 0, "commitment": witness(w, f, s)}
    for w, f, s in WITNESSES
] + [
    {"call": "reveal_witness_value", "caller": w, "now": 137, "challenge_id": 0, **f, "salt": s}
    for w, f, s in WITNESSES
] + [
    {"call": "finalize_challenge", "now": 146, "challenge_id": 0, "expect": "POT_E_STATE"},
    {"call": "challenge_info", "challenge_id": 0},
    {"call": "run_info", "run_id": RUN},
    # Finalizing it logs its outcome record; the run stays open while its
    # other challenge, step 1's (challenged for certain: S_0's statistics
    # are bound by no leaf), is not final. The miner never opened it: FAIL
    # (its bond already went in dispute 1). The run closes, its challenges
    # pruned.
    {"call": "finalize_challenge", "now": 147, "challenge_id": 0},
    {"call": "run_info", "run_id": RUN},
    {"call": "challenge_info", "challenge_id": 1},
    {"call": "finalize_challenge", "now": 147, "challenge_id": 1},
    {"call": "challenge_info", "challenge_id": 0, "expect": "POT_E_STATE"},
    {"call": "issue_challenge", "now": 147, "run_id": RUN, "expect": "POT_E_STATE"},
    {"call": "ledger_info"},
    {"call": "verifier_info", "identity": VERIFIERS[0][0].hex()},
    {"call": "task_info", "task_id": COMMITMENT["task_id"]},
    {"call": "run_info", "run_id": RUN},
    # The task's end: no root after it, and the unsealed run is void; the
    # task is pruned (anyone may ask) once its end has passed, with its
    # closed and void runs, and cannot be posted again.
    {"call": "prune_task", "now": END_HEIGHT, "task_id": COMMITMENT["task_id"], "expect": "POT_E_STATE"},
    {"call": "post_checkpoint_root", "caller": MALLORY, "now": END_HEIGHT + 1, "run_id": ind.run_id(IDLE).hex(),
     "size": 1, "root": ind.leaf_hash(leaves[0]).hex(), "consistency_proof": "", "expect": "POT_E_STATE"},
    {"call": "prune_task", "now": END_HEIGHT + 1, "task_id": COMMITMENT["task_id"]},
    {"call": "run_info", "run_id": RUN, "expect": "POT_E_NOT_FOUND"},
    {"call": "post_task", "caller": OWNER, "now": END_HEIGHT + 1, "task": ind.task_canonical(TASK).hex(),
     "expect": "POT_E_STATE"},
    {"call": "ledger_info"},
] + [
    # Where the bonds went: the owner's task bond and mallory's (void run)
    # came back; the miner's went to alice (dispute 1), carol's and erin's
    # to the miner (disputes 0 and 2).
    {"call": "account_info", "identity": who} for who in [OWNER, MINER, MALLORY] + [v.hex() for v, _ in VERIFIERS]
]
for c in calls:
    c.setdefault("expect", "ok")
json.dump({
    "description": "A ledger transcript: the docs/ledger.md example session with refused calls inserted (a "
                   "commitment before its task is posted, a task posted by another identity than its owner, a "
                   "commitment with an S_0 of the miner's choosing, a verifier without stake, another identity "
                   "posting a root, a challenge before the run is sealed, a challenge drawn from the randomness of "
                   "the sealing block, a second value for one block, a challenge with a caller's beacon, an opening "
                   "with the leaf of another run, the withdrawn call of a miner-declared bucket, two witnesses not on "
                   "the committee, a reveal before the commit phase closes, a protocol-1 reveal, a finalization before the reveal phase "
                   "closes, a redraw before its randomness, a silent member of the first committee committing to the "
                   "second, the pruned challenge and a new draw on the closed run after the finalization, a pruning "
                   "before the task's end, a root after it, the pruned run, the pruned task posted again; in disputes, one opened by the miner, one disputing "
                   "the miner's own digest, one with another leaf's proof, a second one by the same verifier, the "
                   "miner claiming with a digest and with the leaf of another step, a second claim in a round, the "
                   "ended dispute queried, a settlement before the deadline and a claim after it, a challenger committing the "
                   "miner's trace, an opening in the operators phase, a ruling by a party and one by a rule the "
                   "referee cannot use; in bonds, a task posted before its bond is deposited, a deposit of 0, a "
                   "withdrawal past the free balance, a task ending too late, a settlement within the miner's grace "
                   "and a claim after it). Made by "
                   "tests/vectors/make_ledger_transcript.py; each call carries the outcome and result the "
                   "reference ledger gives; `pot ledger` replays it and fails on any difference, including the "
                   "final state's SHA-256.",
    "config": {"draw_delay": 1, "opening_window": 10, "commit_window": 10, "reveal_window": 10,
               "max_committee_size": COMMITTEE_SIZE,
               "min_stake": 1, "max_rounds": 4, "max_attempts": 2,
               "dispute_window": 5, "dispute_arity": 2, "referee": REFEREE, **BONDS},
    "calls": calls}, sys.stdout, indent=1, sort_keys=True)
print()
