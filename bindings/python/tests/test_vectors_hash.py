"""tests/vectors/hash.json: tensor and state digests, tensor proofs, chunk
ranges, log states."""

import pytest

import pot
from conftest import load_vectors, stream, u64le, want_error

V = load_vectors("hash.json")
TENSORS = {t["name"]: t for t in V["tensor_digests"]}
DATA = {t["name"]: stream(t["seed"], t["nbytes"]) for t in V["tensor_digests"]}


def test_chunk_size():
    assert V["chunk_size"] == pot.CHUNK_SIZE == 65536


@pytest.mark.parametrize("tv", V["tensor_digests"], ids=lambda t: t["name"])
def test_tensor_digests(tv):
    for threads in (0, 1, 3):
        d = pot.tensor_digest(tv["name"], tv["dtype"], tv["shape"], DATA[tv["name"]], threads)
        assert str(d) == tv["digest"], tv["comment"]
        assert isinstance(d, pot.Digest)


def test_tensor_vector_count():
    assert len(V["tensor_digests"]) == 20


@pytest.mark.parametrize("i", range(len(V["state_digests"])))
def test_state_digests(i, tmp_path):
    sv = V["state_digests"][i]
    want = pot.Digest(sv["digest"])
    with pot.State() as st, pot.SafetensorsWriter() as w:
        for name in sv["tensors"]:
            tv = TENSORS[name]
            st.add_tensor(name, tv["dtype"], tv["shape"], DATA[name])
            w.add(name, tv["dtype"], tv["shape"], DATA[name])
        assert len(st) == len(sv["tensors"])
        assert st.digest() == want, sv["comment"]
        for tp in sv["tensor_proofs"]:
            proof = st.tensor_proof(tp["tensor"])
            assert proof.hex() == tp["proof"]
            tv = TENSORS[tp["tensor"]]
            td = pot.tensor_digest(tv["name"], tv["dtype"], tv["shape"], DATA[tv["name"]])
            pot.verify_tensor_proof(want, td, proof)
            # Another tensor's digest, or a flipped proof byte, must not verify.
            other = bytes([td[0] ^ 1]) + td[1:]
            with pytest.raises(pot.ProofMismatchError) as e:
                pot.verify_tensor_proof(want, other, proof)
            want_error(e, pot.ProofMismatchError, pot.Status.PROOF_MISMATCH)
            bad = proof[:-1] + bytes([proof[-1] ^ 1])
            with pytest.raises(pot.ProofMismatchError):
                pot.verify_tensor_proof(want, td, bad)
        # The same tensors written as safetensors digest the same.
        path = tmp_path / "state.safetensors"
        w.write(path)
    assert pot.safetensors_digest_file(path) == want
    with pot.Safetensors(path) as f:
        assert f.digest(threads=2) == want
        assert f.names == sorted(sv["tensors"], key=lambda s: s.encode())
        for name in sv["tensors"]:
            assert f.tensor_data(name) == DATA[name]
            info = f.tensor(name)
            assert (info.dtype.safetensors_name, list(info.shape)) == (TENSORS[name]["dtype"], TENSORS[name]["shape"])
    # state_digest takes a mapping too.
    assert pot.state_digest({n: (TENSORS[n]["dtype"], TENSORS[n]["shape"], DATA[n]) for n in sv["tensors"]}) == want


@pytest.mark.parametrize("cv", V["chunk_ranges"], ids=lambda c: c["tensor"])
def test_chunk_ranges(cv):
    tv = TENSORS[cv["tensor"]]
    b = DATA[cv["tensor"]]
    with pot.TensorAssembler(tv["name"], tv["dtype"], tv["shape"]) as a:
        # Add the records last to first: the assembler orders them.
        for r in reversed(cv["records"]):
            rec = pot.chunk_range_hash(memoryview(b)[r["offset"]:r["offset"] + r["length"]], r["offset"], len(b), 1)
            assert rec.hex() == r["record"], cv["comment"]
            a.add(rec)
        got = a.finish()
    assert str(got) == cv["digest"] == tv["digest"]


@pytest.mark.parametrize("lv", V["log_states"], ids=lambda l: str(l["leaves"]))
def test_log_states(lv):
    n = lv["leaves"]
    with pot.Log() as log, pot.Tree.in_memory() as tree:
        for i in range(n):
            log.append(u64le(i))
            assert tree.append_hash(pot.leaf_hash(u64le(i))) == i
        assert str(log.root()) == lv["root"] == str(tree.root(n))
        saved = log.save()
        assert saved.hex() == lv["saved"]
        with pot.Log.load(saved) as loaded:
            assert loaded.size == n
            # The restored log goes on as the original.
            loaded.append(u64le(n))
            log.append(u64le(n))
            assert loaded.root() == log.root()
        if len(saved) > 8:
            with pytest.raises(pot.MalformedError) as e:
                pot.Log.load(saved[:-1])
            want_error(e, pot.MalformedError, pot.Status.MALFORMED)


@pytest.mark.parametrize("sv", V["state_stats"], ids=lambda s: s["comment"][:40])
def test_state_stats_tables(sv, tmp_path):
    """PROTOCOL 5.2: the table's digest, and for states of stream tensors the
    table recomputed from a file (tests/interop checks the narrow ones)."""
    table = bytes.fromhex(sv["table"])
    s = pot.StateStats(table)
    assert s.digest.hex() == sv["digest"]
    assert s.tensors == sv["rows"]
    if sv["narrow_tensors"]:
        return
    path = str(tmp_path / "s.safetensors")
    with pot.SafetensorsWriter() as w:
        for n in sv["tensors"]:
            w.add(n, TENSORS[n]["dtype"], TENSORS[n]["shape"], DATA[n])
        w.write(path)
    for threads in (0, 1, 3):
        assert pot.state_stats(path, threads).encode() == table, sv["comment"]


@pytest.mark.parametrize("fv", V["state_flags"], ids=lambda f: f["comment"][:40])
def test_state_flags(fv):
    flags = pot.state_flags(pot.StateStats(bytes.fromhex(fv["before"])), pot.StateStats(bytes.fromhex(fv["after"])))
    assert [f.__dict__ for f in flags] == fv["flags"], fv["comment"]
