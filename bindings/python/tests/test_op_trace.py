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


# --------------------------------------------------------------------------
# The referee (docs/PROTOCOL.md 22.3). Openings are encoded and decoded here
# from the document's description, so a forger can edit an honest one.

OPENING_TAG = b"pot/v1/op-opening"


class Opening:
    def __init__(self, raw):
        p = 0

        def take(n):
            nonlocal p
            assert p + n <= len(raw)
            p += n
            return raw[p - n:p]

        u32 = lambda: struct.unpack("<I", take(4))[0]  # noqa: E731
        u64 = lambda: struct.unpack("<Q", take(8))[0]  # noqa: E731
        hashes = lambda: take(32 * u32())  # noqa: E731
        assert take(1)[0] == len(OPENING_TAG) and take(len(OPENING_TAG)) == OPENING_TAG
        self.node = take(u64()) if take(1)[0] else None
        self.inclusion, self.consistency = hashes(), hashes()
        self.producers = {}
        for _ in range(u32()):
            j = u64()
            self.producers[j] = (take(u64()), hashes())
        self.state = [(take(u64()), take(u64())) for _ in range(u32())]
        self.tensors = [take(u64()) for _ in range(u32())]
        assert p == len(raw)

    def encode(self):
        u32 = lambda v: struct.pack("<I", v)  # noqa: E731
        u64 = lambda v: struct.pack("<Q", v)  # noqa: E731
        blob = lambda b: u64(len(b)) + b  # noqa: E731
        hashes = lambda h: u32(len(h) // 32) + h  # noqa: E731
        out = bytes([len(OPENING_TAG)]) + OPENING_TAG
        out += b"\x01" + blob(self.node) if self.node is not None else b"\x00"
        out += hashes(self.inclusion) + hashes(self.consistency) + u32(len(self.producers))
        for j, (node, proof) in sorted(self.producers.items()):
            out += u64(j) + blob(node) + hashes(proof)
        out += u32(len(self.state)) + b"".join(blob(n) + blob(p) for n, p in self.state)
        return out + u32(len(self.tensors)) + b"".join(blob(t) for t in self.tensors)


class Step:
    """Step 5 of the fixture run: the honest trace, and openings of it."""

    def __init__(self, run, step=5):
        d, meta, schedule = run
        self.d, self.step = d, step
        self.spec = pot.Spec.from_json((d / "spec.json").read_text())
        self.replay = pot.Replay(self.spec, d / "program.pt")
        self.entry = pot.ScheduleEntry(step, schedule[step - 1]).encode(meta["dataset_size"])
        self.batch = [(d / "samples" / f"{i:06d}.safetensors").read_bytes() for mb in schedule[step - 1] for i in mb]
        self.pre = d / "states" / f"{step - 1:06d}.safetensors"
        self.pre_digest = pot.safetensors_digest_file(self.pre)
        self.run_id = bytes.fromhex(meta["run_id"])
        self.trace = self.replay.trace(self.pre, self.entry, self.batch, run_id=self.run_id)
        self.nodes = [self.trace.node(i) for i in range(len(self.trace))]

    def close(self):
        self.trace.close()
        self.replay.close()
        self.spec.close()

    def opening(self, index):
        return self.replay.open_op_node(self.pre, self.entry, self.batch, index, run_id=self.run_id)

    def forge(self, index, node):
        """A forger's trace: the honest one with node `index` replaced, and
        its opening of that node (the honest opening's sources and tensors)."""
        tree = pot.Tree.in_memory()
        for i, x in enumerate(self.nodes):
            tree.append(node if i == index else x)
        o = Opening(self.opening(index))
        o.node = node
        o.inclusion = tree.inclusion_proof(index, index + 1)
        o.consistency = tree.consistency_proof(index, index + 1) if index else b""
        return tree, o

    def dispute(self, forger_tree, forger_opening, forger_is_a, arity=4):
        """Bisects the honest trace against the forger's; the referee rules on
        the node it ends at."""
        n = len(self.nodes)
        roots = {True: lambda p: self.trace.root(p), False: lambda p: forger_tree.root(p)}
        a, b = roots[not forger_is_a], roots[forger_is_a]
        bis = pot.StepBisection(0, n, arity, agreed=self.trace.root(0), a_hi=a(n), b_hi=b(n))
        while not bis.state.done:
            pts = bis.points()
            bis.play_round([a(x) for x in pts], [b(x) for x in pts])
        index = bis.state.hi - 1
        honest_open = self.opening(index)
        forged_open = forger_opening if isinstance(forger_opening, bytes) else forger_opening.encode()
        ruling = self.replay.referee_decide_op(
            self.pre, self.pre_digest, self.entry, self.batch, index, agreed_root=bis.state.agreed,
            a_root=a(index + 1), b_root=b(index + 1), a_opening=forged_open if forger_is_a else honest_open,
            b_opening=honest_open if forger_is_a else forged_open, run_id=self.run_id)
        return index, ruling


@pytest.fixture
def step5(run):
    s = Step(run)
    yield s
    s.close()


def forged_output(node: bytes) -> bytes:
    """The node with its first tensor result's chunk root replaced."""
    j = pot.op_node_json(node)
    root = bytes.fromhex(next(v for v in flat(j["outputs"]) if "tensor" in v)["tensor"]["chunk_root"])
    at = node.rindex(root)
    return node[:at] + hashlib.sha256(root).digest() + node[at + 32:]


def forger_loses(ruling, forger_is_a):
    return (ruling.a_loses, ruling.b_loses) == (forger_is_a, not forger_is_a)


@pytest.mark.parametrize("op", ["aten::linear", "aten::mm", "aten::addcdiv_"])
def test_attack_a_forged_result_loses_to_one_operator_run(step5, op):
    """Forged results of a forward (linear), backward (mm) and optimizer
    update (addcdiv_) operator: the bisection ends at that node and the
    referee, running that one operator on the agreed inputs, names the
    forger, whichever side it plays."""
    s = step5
    names = [pot.op_node_json(x)["name"] for x in s.nodes]
    k = names.index(op)
    for forger_is_a in (True, False):
        tree, o = s.forge(k, forged_output(s.nodes[k]))
        index, ruling = s.dispute(tree, o, forger_is_a)
        assert index == k
        assert ruling.rule == "operator" and ruling.executed and not ruling.replayed, ruling
        assert forger_loses(ruling, forger_is_a), ruling


def test_against_an_honest_party_the_forger_always_loses(step5):
    """Randomized over forged positions (every operator the referee can run
    alone), sides and arities."""
    s = step5
    rng = random.Random(20261203)
    js = [pot.op_node_json(x) for x in s.nodes]
    runnable = [i for i, j in enumerate(js)
                if j["name"] not in ("pot::post_state", "aten::dropout")
                and any("tensor" in v for v in flat(j["outputs"]))]
    assert len(runnable) > 100
    for k in rng.sample(runnable, 12):
        forger_is_a = rng.random() < 0.5
        tree, o = s.forge(k, forged_output(s.nodes[k]))
        index, ruling = s.dispute(tree, o, forger_is_a, arity=rng.choice([2, 3, 8]))
        assert index == k and forger_loses(ruling, forger_is_a), (k, js[k]["name"], ruling)
        assert ruling.executed


def rewire(node: bytes, trace_nodes, index):
    """The node with its first node-sourced input wired to another earlier
    node's result of the same dtype and shape but other bytes, the input's
    chunk root set to match (a consistent, wrong wiring)."""
    j = pot.op_node_json(node)
    for v in j["inputs"]:
        t = v.get("tensor")
        if not t or t["source"]["kind"] != "node":
            continue
        for other in range(index - 1, -1, -1):
            outs = [o["tensor"] for o in flat(pot.op_node_json(trace_nodes[other])["outputs"]) if "tensor" in o]
            for slot, o in enumerate(outs):
                if o["dtype"] == t["dtype"] and o["shape"] == t["shape"] and o["chunk_root"] != t["chunk_root"]:
                    old_src = struct.pack("<BQI", 1, t["source"]["node"], t["source"]["slot"])
                    new_src = struct.pack("<BQI", 1, other, slot)
                    at = node.index(bytes.fromhex(t["chunk_root"]) + old_src)
                    return (node[:at] + bytes.fromhex(o["chunk_root"]) + new_src +
                            node[at + 32 + len(old_src):]), other
    return None, None


def test_attack_wrong_input_wiring(step5):
    """A forger wires an operator's input to another earlier result: the
    first differing node is that one; consistent wiring sends the referee
    to the step (another program than the spec's), inconsistent wiring
    fails its source check; the forger loses both ways."""
    s = step5
    names = [pot.op_node_json(x)["name"] for x in s.nodes]
    k = names.index("aten::mm")
    wired, other = rewire(s.nodes[k], s.nodes, k)
    assert wired is not None
    tree, o = s.forge(k, wired)
    o.producers[other] = (s.nodes[other], tree.inclusion_proof(other, k))  # it opens its new source too
    index, ruling = s.dispute(tree, o, True)
    assert index == k and ruling.rule == "step" and ruling.replayed and forger_loses(ruling, True), ruling
    # The same wiring with the input's old bytes: the source does not hold them.
    j = pot.op_node_json(s.nodes[k])
    first = next(v["tensor"] for v in j["inputs"] if "tensor" in v and v["tensor"]["source"]["kind"] == "node")
    lying = wired.replace(bytes.fromhex(pot.op_node_json(wired)["inputs"][j["inputs"].index(
        next(v for v in j["inputs"] if v.get("tensor") == first))]["tensor"]["chunk_root"]),
        bytes.fromhex(first["chunk_root"]), 1)
    tree, o = s.forge(k, lying)
    o.producers[other] = (s.nodes[other], tree.inclusion_proof(other, k))
    index, ruling = s.dispute(tree, o, False)
    assert index == k and ruling.rule == "source" and forger_loses(ruling, False), ruling


def test_attack_forged_post_state_and_random_operator(step5):
    """The post-state node with another digest loses without running
    anything; a forged dropout (a random operator the referee cannot run
    alone) loses to the replayed step."""
    s = step5
    n = len(s.nodes)
    post = s.nodes[n - 1]
    digest = bytes.fromhex(pot.op_node_json(post)["outputs"][0]["digest"])
    tree, o = s.forge(n - 1, post.replace(digest, bytes(32)))
    index, ruling = s.dispute(tree, o, True)
    assert index == n - 1 and ruling.rule == "post_state" and not ruling.executed and forger_loses(ruling, True)

    names = [pot.op_node_json(x)["name"] for x in s.nodes]
    k = names.index("aten::dropout")
    tree, o = s.forge(k, forged_output(s.nodes[k]))
    index, ruling = s.dispute(tree, o, False)
    assert index == k and ruling.rule == "step" and ruling.replayed and forger_loses(ruling, False), ruling


def test_attack_bad_openings_lose(step5):
    """An opening that does not prove against its claimed root, garbage, or
    a claimed end of trace that is not one: its party loses."""
    s = step5
    names = [pot.op_node_json(x)["name"] for x in s.nodes]
    k = names.index("aten::mm")
    tree, o = s.forge(k, forged_output(s.nodes[k]))
    o.inclusion = bytes(32) * (len(o.inclusion) // 32)
    index, ruling = s.dispute(tree, o, True)
    assert ruling.rule == "opening" and forger_loses(ruling, True), ruling
    index, ruling = s.dispute(tree, b"not an opening", False)
    assert ruling.rule == "opening" and forger_loses(ruling, False), ruling
    o = Opening(s.opening(k))
    o.node = None
    index, ruling = s.dispute(tree, o, True)
    assert ruling.rule == "opening" and forger_loses(ruling, True), ruling


def test_referee_refuses_another_pre_state_and_no_dispute(step5):
    s = step5
    o = s.opening(3)
    with pytest.raises(pot.ProofMismatchError):
        s.replay.referee_decide_op(s.pre, bytes(32), s.entry, s.batch, 3, agreed_root=s.trace.root(3),
                                   a_root=s.trace.root(4), b_root=bytes(32), a_opening=o, b_opening=o,
                                   run_id=s.run_id)
    with pytest.raises(pot.InvalidArgumentError):
        s.replay.referee_decide_op(s.pre, s.pre_digest, s.entry, s.batch, 3, agreed_root=s.trace.root(3),
                                   a_root=s.trace.root(4), b_root=s.trace.root(4), a_opening=o, b_opening=o,
                                   run_id=s.run_id)
    with pytest.raises(pot.OutOfRangeError):
        s.opening(len(s.nodes) + 1)


def write_step(tmp_path, model, samples, lr, **spec_over):
    """A one-step run of `model`: its program, a spec (SGD at lr unless
    spec_over says otherwise), the samples (dicts of name -> tensor) as
    safetensors payloads, and S_0 (its parameters and lr)."""
    from conftest import spec_json

    program = tmp_path / "program.pt"
    torch.jit.script(model).save(str(program))
    spec = spec_json(pot.program_digest_file(program), **{"optimizer": {"kind": "sgd", "lr": lr}, **spec_over})
    payloads = []
    for i, tensors in enumerate(samples):
        with pot.SafetensorsWriter() as w:
            for name, t in tensors.items():
                w.add(name, {torch.float32: "F32", torch.int64: "I64"}[t.dtype], list(t.shape), t)
            w.write(tmp_path / f"s{i}.safetensors")
        payloads.append((tmp_path / f"s{i}.safetensors").read_bytes())
    pre = tmp_path / "pre.safetensors"
    with pot.SafetensorsWriter() as w:
        for name, p in model.named_parameters():
            w.add("param/" + name, "F32", list(p.shape), p.detach())
        w.add("hparam/lr", "F64", [], struct.pack("<d", lr))
        w.write(pre)
    return program, spec, payloads, pre, pot.ScheduleEntry(1, [list(range(len(samples)))]).encode(len(samples))


class Wide(torch.nn.Module):
    """A loss whose forward sums 2^19 products: a reduction whose rounding
    depends on how many threads split it."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(1 << 18) * 0.01)

    def forward(self, x, y):
        return ((self.w * x).sum() - y.sum()) ** 2


def test_attack_a_verifier_with_the_wrong_thread_count_is_named(tmp_path):
    """The task says one intra-op thread; a verifier replays with four and
    disputes an honest miner. The traces first differ at a reduction; run
    alone under the task's spec it gives the miner's bits: the verifier
    loses."""
    if not pot.replay_available():
        pytest.skip("libpot was built without LibTorch")
    torch.manual_seed(0)
    model = Wide()
    gens = [torch.Generator().manual_seed(i) for i in range(2)]
    program, task_spec, samples, pre, entry = write_step(
        tmp_path, model, [{"x": torch.randn(1 << 18, generator=g), "y": torch.tensor(float(i))}
                          for i, g in enumerate(gens)], 0.01)
    wrong_spec = dict(task_spec, intra_op_threads=4)
    run_id = hashlib.sha256(b"the wide run").digest()
    with pot.Spec(task_spec) as ts, pot.Spec(wrong_spec) as ws, pot.Replay(ts, program) as miner, \
            pot.Replay(ws, program) as verifier:
        m = miner.trace(pre, entry, samples, run_id=run_id)
        v = verifier.trace(pre, entry, samples, run_id=run_id)
        with m, v:
            n = len(m)
            assert len(v) == n and m.root(n) != v.root(n)
            bis = pot.StepBisection(0, n, 2, agreed=m.root(0), a_hi=m.root(n), b_hi=v.root(n))
            while not bis.state.done:
                p = bis.points()
                bis.play_round([m.root(x) for x in p], [v.root(x) for x in p])
            k = bis.state.hi - 1
            assert m.node_json(k)["name"] in ("aten::sum", "aten::mul", "aten::sub", "aten::pow")
            ruling = miner.referee_decide_op(  # the referee runs the task's spec: the miner's Replay's
                pre, pot.safetensors_digest_file(pre), entry, samples, k, agreed_root=bis.state.agreed,
                a_root=m.root(k + 1), b_root=v.root(k + 1),
                a_opening=miner.open_op_node(pre, entry, samples, k, run_id=run_id),
                b_opening=verifier.open_op_node(pre, entry, samples, k, run_id=run_id), run_id=run_id)
            assert ruling.rule == "operator" and ruling.executed, ruling
            assert (ruling.a_loses, ruling.b_loses) == (False, True), ruling
            print(f"first differing node {k}: {m.node_json(k)['name']}; {ruling.reason}")


class Nested(torch.nn.Module):
    """Arguments built inside another call's argument list: the TorchScript
    interpreter keeps the first on its stack while it computes the second."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 4)

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.lin(x).reshape(-1, 4), y.reshape(-1))


def test_every_operator_of_a_step_is_decided_by_running_it_alone(tmp_path):
    """Each node of a real step (forward, backward, SGD with momentum),
    forged in its result, is decided by running its operator alone: the
    recorded arguments are exactly the operator's (a boxed call's callback
    sees the interpreter's whole stack; the node keeps the last ones)."""
    if not pot.replay_available():
        pytest.skip("libpot was built without LibTorch")
    torch.manual_seed(0)
    model = Nested()
    gens = [torch.Generator().manual_seed(i) for i in range(2)]
    program, spec, samples, pre, entry = write_step(
        tmp_path, model, [{"x": torch.randn(3, 6, generator=g), "y": torch.randint(0, 4, (3,), generator=g)}
                          for g in gens], 0.1, optimizer={"kind": "sgd", "lr": 0.1, "momentum": 0.9,
                                                         "weight_decay": 0.01})
    run_id = hashlib.sha256(b"the nested run").digest()
    with pot.Spec(spec) as s, pot.Replay(s, program) as r:
        t = r.trace(pre, entry, samples, run_id=run_id)
        with t:
            nodes = [t.node(i) for i in range(len(t))]
            js = [pot.op_node_json(x) for x in nodes]
            assert "aten::reshape" in [j["name"] for j in js]
            decided = 0
            for k, j in enumerate(js[:-1]):
                if not any("tensor" in v for v in flat(j["outputs"])):
                    continue
                tree = pot.Tree.in_memory()
                for i, x in enumerate(nodes[:k + 1]):
                    tree.append(forged_output(x) if i == k else x)
                honest = r.open_op_node(pre, entry, samples, k, run_id=run_id)
                o = Opening(honest)
                o.node = forged_output(nodes[k])
                o.inclusion = tree.inclusion_proof(k, k + 1)
                o.consistency = tree.consistency_proof(k, k + 1) if k else b""
                ruling = r.referee_decide_op(pre, pot.safetensors_digest_file(pre), entry, samples, k,
                                             agreed_root=t.root(k), a_root=t.root(k + 1), b_root=tree.root(k + 1),
                                             a_opening=honest, b_opening=o.encode(), run_id=run_id)
                assert (ruling.rule, ruling.a_loses, ruling.b_loses) == ("operator", False, True), (k, j["name"],
                                                                                                   ruling)
                decided += 1
            assert decided > 20


# --- The operator phase as ledger calls (docs/ledger.md 2.15-2.17) ---

REFEREE = b"referee"


def ledger_dispute(s, miner_nodes, steps=8):
    """A ledger with a referee and a run of `steps` steps whose miner
    committed, at step s.step, the digest its trace `miner_nodes` ends in
    (its post-state node); S_{step-1} is the fixture's. The honest verifier
    disputes it and the step bisection is played; returns (ledger, the
    miner's tree, the last result)."""
    from test_dispute import MINER, VERIFIER, ledger_with_run

    t = s.step
    true_st = post_digest(s.nodes[-1])
    label = lambda who, i: hashlib.sha256(f"{who} {i}".encode()).digest()  # noqa: E731
    both = {i: label("both", i) for i in range(t - 1)}
    both[t - 1] = s.pre_digest
    miner = [both[i] if i < t else post_digest(miner_nodes[-1]) if i == t else label("m", i)
             for i in range(steps + 1)]
    verifier = [both[i] if i < t else true_st if i == t else label("v", i) for i in range(steps + 1)]
    ledger, run, leaves, log = ledger_with_run(miner, both[0], steps=steps, referee=REFEREE)
    now = 102
    r = ledger.apply({"call": "open_dispute", "caller": VERIFIER.hex(), "now": now, "run_id": run, "lo_leaf": "",
                      "lo_proof": "", "hi_leaf": leaves[-1].encode().hex(),
                      "hi_proof": log.inclusion_proof(steps - 1, steps).hex(), "claim": verifier[steps].hex()})
    while r["phase"] == "steps":
        now += 1
        ledger.apply({"call": "claim_dispute", "caller": MINER.hex(), "now": now, "dispute_id": 0,
                      "claims": [{"step_leaf": leaves[p - 1].encode().hex(),
                                  "leaf_proof": log.inclusion_proof(p - 1, steps).hex()} for p in r["points"]]})
        r = ledger.apply({"call": "claim_dispute", "caller": VERIFIER.hex(), "now": now, "dispute_id": 0,
                          "claims": [verifier[p].hex() for p in r["points"]]})
    assert (r["phase"], r["lo"], r["hi"]) == ("traces", t - 1, t)
    tree = pot.Tree.in_memory()
    for x in miner_nodes:
        tree.append(x)
    n = len(miner_nodes)
    for who, size, root, last, proof in (
            (MINER, n, tree.root(n), miner_nodes[-1], tree.inclusion_proof(n - 1, n)),
            (VERIFIER, len(s.trace), s.trace.root(len(s.trace)), s.nodes[-1],
             s.trace.inclusion_proof(len(s.trace) - 1, len(s.trace)))):
        r = ledger.apply({"call": "commit_trace", "caller": who.hex(), "now": now + 1, "dispute_id": 0, "size": size,
                          "root": root.hex(), "post_node": last.hex(), "post_proof": proof.hex()})
    now += 1
    roots = {MINER: lambda p: tree.root(min(p, n)), VERIFIER: lambda p: s.trace.root(min(p, len(s.trace)))}
    while r["phase"] == "operators":
        now += 1
        points = r["points"]
        for who in (MINER, VERIFIER):
            r = ledger.apply({"call": "claim_dispute", "caller": who.hex(), "now": now, "dispute_id": 0,
                              "claims": [roots[who](p).hex() for p in points]})
    assert r["phase"] == "openings"
    return ledger, now, r


def post_digest(node: bytes) -> bytes:
    """The post-state node's digest: its one result, the node's last 32 bytes."""
    assert pot.op_node_json(node)["name"] == "pot::post_state"
    return node[-32:]


def test_on_the_ledger_a_forged_operator_loses_to_the_referees_one_run(step5):
    """The fixture's real AdamW step 5 disputed on a ledger with a referee: a
    miner that committed a forged S_5, its trace forging aten::linear's
    result and ending in its forged digest, against an honest verifier. The
    step bisection finds step 5; the traces (each ending in its party's
    S_5) are bisected to the forged node; both openings are sound, so the
    ledger hands the node to the referee, whose one operator run names the
    miner, and the record says so."""
    from test_dispute import MINER, VERIFIER

    s = step5
    k = [pot.op_node_json(x)["name"] for x in s.nodes].index("aten::linear")
    forged = list(s.nodes)
    forged[k] = forged_output(s.nodes[k])
    forged[-1] = s.nodes[-1][:-32] + hashlib.sha256(b"the forger's S_5").digest()
    ledger, now, r = ledger_dispute(s, forged)
    assert r["node"] == k
    _, miner_opening = s.forge(k, forged[k])
    honest_opening = s.opening(k)
    r = ledger.apply({"call": "open_node", "caller": MINER.hex(), "now": now + 1, "dispute_id": 0,
                      "opening": miner_opening.encode().hex()})
    assert r["check"]["failure_rule"] is None and r["check"]["has_node"]
    r = ledger.apply({"call": "open_node", "caller": VERIFIER.hex(), "now": now + 1, "dispute_id": 0,
                      "opening": honest_opening.hex()})
    assert r["phase"] == "referee" and not r["ended"]
    ops = r["operators"]
    ruling = s.replay.referee_decide_op(
        s.pre, s.pre_digest, s.entry, s.batch, k, agreed_root=bytes.fromhex(ops["agreed"]),
        a_root=bytes.fromhex(ops["miner_hi"]), b_root=bytes.fromhex(ops["challenger_hi"]),
        a_opening=miner_opening.encode(), b_opening=honest_opening, run_id=s.run_id)
    assert ruling.rule == "operator" and ruling.executed and (ruling.a_loses, ruling.b_loses) == (True, False)
    with pytest.raises(pot.PermissionDeniedError):
        ledger.apply({"call": "rule_dispute", "caller": VERIFIER.hex(), "now": now + 2, "dispute_id": 0,
                      "miner_loses": True, "challenger_loses": False, "rule": "operator"})
    end = ledger.apply({"call": "rule_dispute", "caller": REFEREE.hex(), "now": now + 2, "dispute_id": 0,
                        "miner_loses": ruling.a_loses, "challenger_loses": ruling.b_loses, "rule": ruling.rule})
    o = end["outcome"]
    assert (o["end"], o["rule"], o["losers"], o["step"], o["node"]) == ("referee_ruled", "operator", ["miner"], 5, k)
    assert o["miner_trace"]["size"] == o["challenger_trace"]["size"] == len(s.nodes)
    assert pot.decode_outcome(bytes.fromhex(end["record"])) == o


def test_on_the_ledger_a_forged_post_state_digest_is_ruled_without_the_referee(step5):
    """A miner whose trace is the true one but for its last node's digest
    (the forged S_5 it committed): the bisection ends at the post-state
    node, and the ledger recomputes the digest from the tensors the node
    lists: the miner loses by rule post_state, no referee asked."""
    from test_dispute import MINER, VERIFIER

    s = step5
    forged = list(s.nodes)
    forged[-1] = s.nodes[-1][:-32] + hashlib.sha256(b"the forger's S_5").digest()
    ledger, now, r = ledger_dispute(s, forged)
    last = len(s.nodes) - 1
    assert r["node"] == last
    tree, opening = s.forge(last, forged[-1])
    ledger.apply({"call": "open_node", "caller": MINER.hex(), "now": now + 1, "dispute_id": 0,
                  "opening": opening.encode().hex()})
    end = ledger.apply({"call": "open_node", "caller": VERIFIER.hex(), "now": now + 1, "dispute_id": 0,
                        "opening": s.opening(last).hex()})
    o = end["outcome"]
    assert (o["end"], o["rule"], o["losers"], o["node"]) == ("ruled", "post_state", ["miner"], last)
