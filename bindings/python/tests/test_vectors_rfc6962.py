"""tests/vectors/rfc6962.json: the published RFC 6962 / RFC 9162 vectors."""

import hashlib

import pytest

import pot
from conftest import load_vectors, want_error

V = load_vectors("rfc6962.json")
LEAVES = [bytes.fromhex(leaf["hex"]) for leaf in sorted(V["leaf_inputs"], key=lambda x: x["index"])]


def tree_of(leaves):
    t = pot.Tree.in_memory()
    for i, leaf in enumerate(leaves):
        assert t.append(leaf) == i
    return t


@pytest.fixture(scope="module")
def tree():
    with tree_of(LEAVES) as t:
        yield t


def join(hs):
    return b"".join(bytes.fromhex(h) for h in hs)


def all32(*hs):
    return all(len(h) == 2 * pot.DIGEST_SIZE for h in hs)


def test_empty():
    want = pot.Digest(V["empty_tree_root"]["hex"])
    with pot.Tree.in_memory() as t, pot.Log() as log:
        assert t.root(0) == want == log.root() == pot.sha256(b"")


def test_hasher():
    n = 0
    for k in V["hasher_kats"]:
        if k["op"] == "empty_root":
            got = pot.sha256(b"")
        elif k["op"] == "leaf":
            got = pot.leaf_hash(bytes.fromhex(k["data_hex"]))
        else:
            continue  # "children" uses 4-byte children: not digests
        assert str(got) == k["hex"]
        n += 1
    assert n == 3


def test_roots(tree):
    with pot.Log() as log:
        for r in V["roots"]:
            while log.size < r["tree_size"]:
                log.append(LEAVES[log.size])
            assert str(tree.root(r["tree_size"])) == r["hex"] == str(log.root())
    assert len(V["roots"]) == 8


def test_nodes():
    for n in V["node_hashes"]:
        a, b = n["covers_leaves"]
        with tree_of(LEAVES[a:b]) as sub:
            assert str(sub.root()) == n["hex"]


def test_inclusion_proofs(tree):
    for p in V["inclusion_proofs"]:
        want = join(p["proof"])
        assert tree.inclusion_proof(p["leaf_index"], p["tree_size"]) == want
        lh = pot.leaf_hash(bytes.fromhex(p["leaf_input_hex"]))
        pot.verify_inclusion(p["leaf_index"], p["tree_size"], lh, want, bytes.fromhex(p["root"]))
        assert pot.join_proof(pot.split_proof(want)) == want
    # CT's invalid request (leaf 0 of snapshot 0) is out of range here.
    with pytest.raises(pot.OutOfRangeError) as e:
        tree.inclusion_proof(0, 0)
    want_error(e, pot.OutOfRangeError, pot.Status.OUT_OF_RANGE)


def test_consistency_proofs(tree):
    for p in V["consistency_proofs"]:
        want = join(p["proof"])
        assert tree.consistency_proof(p["size1"], p["size2"]) == want
        pot.verify_consistency(p["size1"], p["size2"], pot.Digest(p["root1"]), pot.Digest(p["root2"]), want)


def test_verifier_probes():
    run = total = 0
    for p in V["verifier_probes"]["inclusion"]:
        total += 1
        if not all32(p["leaf_hash"], p["root"], *p["proof"]):
            continue
        run += 1
        try:
            pot.verify_inclusion(p["leaf_index"], p["tree_size"], bytes.fromhex(p["leaf_hash"]), join(p["proof"]),
                                 bytes.fromhex(p["root"]))
            failed = False
        except pot.Error:
            failed = True
        assert failed == p["want_error"], p["desc"]
    for p in V["verifier_probes"]["consistency"]:
        total += 1
        if not all32(p["root1"], p["root2"], *p["proof"]):
            continue
        run += 1
        try:
            pot.verify_consistency(p["size1"], p["size2"], bytes.fromhex(p["root1"]), bytes.fromhex(p["root2"]),
                                   join(p["proof"]))
            failed = False
        except pot.Error:
            failed = True
        assert failed == p["want_error"], p["desc"]
    assert (run, total) == (143, 196)


def test_aggregate():
    # d[i] = bytes([i]) for i < 130; one tree per start holds d[start:].
    n = 130
    trees = [tree_of([bytes([i]) for i in range(start, n)]) for start in range(n + 1)]

    def valid(start, end):
        if start == 0 or start == end:
            return True
        return start % (1 << (end - start - 1).bit_length()) == 0

    hashes, proofs = hashlib.sha256(), hashlib.sha256()
    for end in range(n + 1):
        for start in range(end + 1):
            if not valid(start, end):
                continue
            size = end - start
            hashes.update(f"[{start}, {end}) {trees[start].root(size)}\n".encode())
            for index in range(start, end):
                hs = pot.split_proof(trees[start].inclusion_proof(index - start, size))
                proofs.update((f"{index} [{start}, {end})" + "".join(f" {h}" for h in hs) + "\n").encode())
    for t in trees:
        t.close()
    got = {"subtree_hash_rolling_sha256": hashes.hexdigest(), "subtree_inclusion_rolling_sha256": proofs.hexdigest()}
    assert len(V["aggregate_vectors"]) == 2
    for a in V["aggregate_vectors"]:
        assert got[a["name"]] == a["hex"]
