"""The operator trace of a replayed step (docs/PROTOCOL.md 22.2) on the
real PyTorch run of tests/replay/make_fixture.sh: two honest replays give
the same nodes and root; the nodes are the forward, backward and optimizer
operators with their inputs wired to the pre-state, the batch and earlier
nodes; the last node lists S_t; and the operator bisection over prefix
roots ends at exactly the first node that differs."""

import hashlib
import json
import os
import random
import shutil
import struct
from pathlib import Path

import pytest

import pot

torch = pytest.importorskip("torch")


@pytest.fixture
def run():
    d = os.environ.get("POT_REPLAY_FIXTURE")
    if not d:
        pytest.skip("POT_REPLAY_FIXTURE is not set (make one with tests/replay/make_fixture.sh BUILD_DIR OUT_DIR)")
    if not pot.replay_available():
        pytest.fail("POT_REPLAY_FIXTURE is set but the loaded libpot was built without LibTorch")
    d = Path(d) / "run"
    meta = json.loads((d / "run.json").read_text())
    schedule = json.loads((d / "schedule.json").read_text())
    return d, meta, schedule


def trace_step(d, meta, schedule, step, pre_path=None, spec_text=None):
    with pot.Spec.from_json(spec_text or (d / "spec.json").read_text()) as spec, \
            pot.Replay(spec, d / "program.pt") as r:
        entry = pot.ScheduleEntry(step, schedule[step - 1]).encode(meta["dataset_size"])
        batch = [(d / "samples" / f"{i:06d}.safetensors").read_bytes() for mb in schedule[step - 1] for i in mb]
        pre = pre_path or d / "states" / f"{step - 1:06d}.safetensors"
        return r.trace(pre, entry, batch, run_id=bytes.fromhex(meta["run_id"])), r.step(pre, entry, batch,
                                                                                         run_id=bytes.fromhex(
                                                                                             meta["run_id"]))


def leaf(node: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + node).digest()


def mth(leaves):
    """RFC 6962 MTH, written from the RFC for the check."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:])).digest()


def test_two_honest_replays_give_one_trace(run):
    d, meta, schedule = run
    a, plain = trace_step(d, meta, schedule, 5)
    b, _ = trace_step(d, meta, schedule, 5)
    with a, b:
        n = len(a)
        assert n == len(b) and n > 50
        assert a.root(n) == b.root(n)
        assert [a.node(i) for i in range(n)] == [b.node(i) for i in range(n)]
        # The trace does not change the step: same results as a plain replay.
        assert a.replay_result == plain
        want = pot.safetensors_digest_file(d / "states" / "000005.safetensors")
        assert plain.post_state_digest == want
        # The root is RFC 6962 over the node leaves.
        leaves = [leaf(a.node(i)) for i in range(n)]
        assert bytes(a.root(n)) == mth(leaves)
        assert bytes(a.root(0)) == hashlib.sha256(b"").digest()
        assert bytes(a.root(17)) == mth(leaves[:17])


def test_nodes_are_the_steps_operators_wired_to_their_sources(run):
    d, meta, schedule = run
    t, res = trace_step(d, meta, schedule, 5)
    with t:
        nodes = [t.node_json(i) for i in range(len(t))]
    names = [n["name"] for n in nodes]
    # Forward (the program's linear layers), backward (the gradient of
    # addmm is mm), the AdamW update of torch.optim (addcdiv_), in order.
    assert names.index("aten::linear") < names.index("aten::mm") < names.index("aten::addcdiv_")
    last = nodes[-1]
    assert last["name"] == "pot::post_state"
    assert last["outputs"] == [{"digest": bytes(res.post_state_digest).hex()}]
    listed = [v["string"] for v in last["inputs"][0::2]]
    assert listed == sorted(listed) and any(s.startswith("param/") for s in listed)

    sources = [v["tensor"]["source"] for n in nodes for v in n["inputs"] if "tensor" in v]
    kinds = {s["kind"] for s in sources}
    assert {"state", "batch", "node"} <= kinds
    assert {s["name"] for s in sources if s["kind"] == "batch"} == set(meta["forward_args"])
    # Every node source points back, at a tensor result with that content.
    for i, n in enumerate(nodes):
        for v in n["inputs"]:
            src = v.get("tensor", {}).get("source", {})
            if src.get("kind") != "node":
                continue
            assert src["node"] < i
            produced = [o["tensor"] for o in flat(nodes[src["node"]]["outputs"]) if "tensor" in o]
            got = produced[src["slot"]]
            for k in ("dtype", "shape", "chunk_root"):
                assert got[k] == v["tensor"][k]
    # S_t's parameters come from the optimizer's last writes.
    post = {last["inputs"][i]["string"]: last["inputs"][i + 1]["tensor"] for i in range(0, len(last["inputs"]), 2)}
    for name, tensor in post.items():
        if name.startswith("param/"):
            assert tensor["source"]["kind"] == "node", name
            assert nodes[tensor["source"]["node"]]["name"] in ("aten::addcdiv_", "aten::add_", "aten::mul_")


def flat(values):
    for v in values:
        if "list" in v:
            yield from flat(v["list"])
        else:
            yield v


def test_node_json_refuses_bytes_that_are_not_a_node():
    with pytest.raises(pot.MalformedError):
        pot.op_node_json(b"")
    with pytest.raises(pot.MalformedError):
        pot.op_node_json(b"\x0epot/v1/op-nodX" + bytes(16))
    with pytest.raises(pot.LimitError):
        # a name of 2^32 - 1 bytes announced in 8 bytes
        pot.op_node_json(b"\x0epot/v1/op-node" + b"\xff\xff\xff\xff")


def test_operator_bisection_ends_at_the_first_differing_node(run, tmp_path):
    """A pre-state whose one weight is nudged: the traces agree until the
    first operator that reads it. The bisection over prefix roots (a
    StepBisection over node counts) finds exactly that node, within the
    k-ary bound, and its openings prove against the claimed roots."""
    d, meta, schedule = run
    honest, _ = trace_step(d, meta, schedule, 5)
    pre = d / "states" / "000004.safetensors"
    with pot.Safetensors(pre) as s, pot.SafetensorsWriter() as w:
        nudged = [n for n in s.names if n.startswith("optim/") and n.endswith("/exp_avg")][-1]
        for info in s:
            data = bytearray(s.tensor_data(info.name))
            if info.name == nudged:  # read by the update only, near the end
                data[0:4] = struct.pack("<f", struct.unpack("<f", data[0:4])[0] + 1e-3)
            w.add(info.name, info.dtype, info.shape, bytes(data))
        w.write(tmp_path / "pre.safetensors")
    other, _ = trace_step(d, meta, schedule, 5, pre_path=tmp_path / "pre.safetensors")
    with honest, other:
        n = len(honest)
        assert len(other) == n
        first = next(i for i in range(n) if honest.node(i) != other.node(i))
        assert honest.node_json(first)["name"] != "aten::linear"  # the forward does not read it
        for arity in (2, 4, 16):
            b = pot.StepBisection(0, n, arity, agreed=honest.root(0), a_hi=honest.root(n), b_hi=other.root(n))
            while not b.state.done:
                p = b.points()
                b.play_round([honest.root(x) for x in p], [other.root(x) for x in p])
            s = b.state
            assert s.hi == first + 1 and s.rounds_played <= pot.bisection_rounds(0, n, arity)
            # Node `first` opens against each side's claimed root of size
            # first + 1, which extends the agreed root of size first.
            for t in (honest, other):
                pot.verify_inclusion(first, first + 1, leaf(t.node(first)), t.inclusion_proof(first, first + 1),
                                     t.root(first + 1))
                if first > 0:
                    pot.verify_consistency(first, first + 1, s.agreed, t.root(first + 1),
                                           t.consistency_proof(first, first + 1))
