"""No leak over 10,000 create/free cycles of every handle type: neither in
Python objects (tracemalloc) nor in C memory (the process's RSS)."""

import ctypes
import gc
import os
import tracemalloc

import pytest

import pot
from pot import _pot
from conftest import LEDGER_BONDS, spec_json

CYCLES = 10_000
RSS_BOUND = 1 << 20
HEAP_BOUND = 64 << 10
COMMITMENT = {"initial_state_digest": "aa" * 32, "schedule_root": "bb" * 32, "task_id": "77" * 32,
              "dataset_root": "cc" * 32, "dataset_size": 10, "spec_digest": "dd" * 32, "declared_steps": 4,
              "miner_identity": "6d696e6572"}


def rss():
    """Resident set size of this process, in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _mallinfo2():
    try:
        f = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return None
    f.restype = _Mallinfo2
    return f


MALLINFO2 = _mallinfo2()


def c_heap():
    """Bytes malloc has handed out and not got back (glibc's mallinfo2):
    libpot's C and C++ allocations, exactly, unlike the RSS, which does not
    grow while freed memory is reused. None without glibc >= 2.33."""
    if MALLINFO2 is None:
        return None
    m = MALLINFO2()
    return m.uordblks + m.hblkhd


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("leaks")
    st = d / "s.safetensors"
    with pot.SafetensorsWriter() as w:
        w.add("w", "F32", [4, 4], bytes(64))
        w.set_metadata("k", "v")
        w.write(st)
    return {"safetensors": st, "tree": d / "tree", "dir": d}


def cycle(files, i):
    """One of everything: create, use, free (explicitly, by `with`, or by
    dropping the last reference), including failing calls."""
    with pot.State() as s:
        s.add_tensor("w", "F32", [4], bytes(16))
        s.digest()
        s.tensor_proof("w")
        try:
            s.tensor_proof("absent")
        except pot.NotFoundError:
            pass
    with pot.TensorAssembler("w", "U8", [8]) as a:
        a.add(pot.chunk_range_hash(bytes(8), 0, 8))
        a.finish()
    with pot.Safetensors(files["safetensors"]) as f:
        f.tensor_data(0)
        f.metadata("k")
        f.digest(1)
        v = f.tensor_view(0)
        del v
    w = pot.SafetensorsWriter()
    w.add("x", "U8", [4], bytearray(4))
    w.close()
    log = pot.Log()
    log.append(b"leaf")
    with pot.Log.load(log.save()) as again:
        again.root()
    del log  # freed by its finalizer
    with pot.Tree.in_memory() as t:
        t.append(b"a")
        t.append(b"b")
        t.inclusion_proof(0)
        t.consistency_proof(1)
    with pot.Spec(spec_json(bytes(32))) as sp:
        sp.encode()
        sp.to_json()
    with pot.Commitment(COMMITMENT) as c:
        c.run_id
        try:
            pot.verify_opening(c, 1, 1, bytes(32), b"junk")
        except pot.Error:
            pass
    with pot.Opening(bytes(32), 2, 4, bytes(32)) as o:
        o.set_post_leaf(b"leaf", bytes(32))
        o.add_sample(1, b"payload", b"")
        o.set_state_refs("pre", None)
        o.encode()
    with pot.Verdict(pot.WitnessMode.BITWISE, 1) as vd:
        vd.add_reveal(b"a", bytes(32))
        vd.decide(bytes(32))
    with pot.Ledger(draw_delay=1, opening_window=1, commit_window=1, reveal_window=1, max_committee_size=1, min_stake=1, max_rounds=1, max_attempts=1, dispute_window=1, dispute_arity=2, **LEDGER_BONDS) as ledger:
        try:
            ledger.apply({"call": "nothing"})
        except pot.InvalidArgumentError:
            pass
        ledger.save()
    with pot.LossCheck(window=5) as lc:
        lc.run([3.0, 2.0, 1.0] * 4)
    pot.check_losses([1.0, float("nan")])
    pot.ScheduleEntry.decode(pot.ScheduleEntry(1, [[1, 2], [3]]).encode())
    pot.challenge_derive(b"beacon", bytes(32), 100, 4)
    try:
        pot.Spec.from_json("{")
    except pot.MalformedError:
        pass
    if i % 10 == 0 and pot.replay_available():
        try:
            pot.Checkpoints(files["dir"] / "none")
        except pot.Error:
            pass


def test_no_leak_over_10000_cycles(files):
    for i in range(300):  # warm up: caches, allocator arenas, interned strings
        cycle(files, i)
    gc.collect()
    # C memory first, without tracemalloc (whose own tables would count).
    heap0, rss0 = c_heap(), rss()
    for i in range(CYCLES):
        cycle(files, i)
    gc.collect()
    heap1, rss1 = c_heap(), rss()
    # Then the Python heap.
    tracemalloc.start()
    try:
        snap0 = tracemalloc.take_snapshot()
        py0 = tracemalloc.get_traced_memory()[0]
        for i in range(CYCLES):
            cycle(files, i)
        gc.collect()
        py1 = tracemalloc.get_traced_memory()[0]
        snap1 = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    heap = "n/a" if heap0 is None else f"{heap1 - heap0:+d}"
    print(f"after {CYCLES} cycles: malloc in use {heap} bytes, RSS {rss1 - rss0:+d} bytes, "
          f"Python heap {py1 - py0:+d} bytes")
    for stat in snap1.compare_to(snap0, "lineno")[:3]:
        print("  ", stat)
    # One leaked handle or buffer per cycle is 10,000 of them: above these
    # bounds (test_the_bounds_see_a_leak).
    if heap0 is not None:
        assert heap1 - heap0 < HEAP_BOUND, f"malloc'd memory grew by {heap1 - heap0} bytes"
    assert rss1 - rss0 < RSS_BOUND, f"RSS grew by {rss1 - rss0} bytes"
    assert py1 - py0 < HEAP_BOUND, f"Python heap grew by {py1 - py0} bytes"


def test_the_bounds_see_a_leak():
    """The control: 10,000 deliberately leaked pot_log handles (the smallest
    handle) grow malloc'd memory past the bound."""
    if c_heap() is None:
        pytest.skip("no mallinfo2 (glibc >= 2.33)")
    for _ in range(100):
        _pot.pot_log_free(_pot.pot_log_new())
    heap0 = c_heap()
    for _ in range(CYCLES):
        _pot.pot_log_new().thisown = False  # leaked on purpose
    grew = c_heap() - heap0
    print(f"{CYCLES} leaked pot_log handles: malloc in use {grew:+d} bytes")
    assert grew > HEAP_BOUND


def test_ownership_flags():
    """%newobject: each constructor's proxy owns its handle; %delobject:
    the free function disowns it."""
    for h, free in [
        (_pot.pot_state_new(), _pot.pot_state_free),
        (_pot.pot_log_new(), _pot.pot_log_free),
        (_pot.pot_tree_open(None), _pot.pot_tree_free),
        (_pot.pot_safetensors_writer_new(), _pot.pot_safetensors_writer_free),
        (_pot.pot_tensor_assembler_new("w", 2, [1]), _pot.pot_tensor_assembler_free),
        (_pot.pot_spec_from_json(pot.spec.json.dumps(spec_json(bytes(32)))), _pot.pot_spec_free),
        (_pot.pot_commitment_from_json(pot.spec.json.dumps(COMMITMENT)), _pot.pot_commitment_free),
        (_pot.pot_opening_new(bytes(32), 1, 1, bytes(32)), _pot.pot_opening_free),
        (_pot.pot_verdict_new(1, 1), _pot.pot_verdict_free),
        (_pot.pot_ledger_new('{"draw_delay": 1, "opening_window": 1, "commit_window": 1, "reveal_window": 1, '
                             '"max_committee_size": 1, "min_stake": 1, "max_rounds": 1, "max_attempts": 1, '
                             '"dispute_window": 1, "dispute_arity": 2, "task_bond": 1, "miner_bond": 1, "dispute_bond": 1, '
                             '"max_task_blocks": 1, "max_open_tasks": 1, "miner_grace": 0}'), _pot.pot_ledger_free),
        (_pot.pot_losscheck_params_new(), _pot.pot_losscheck_params_free),
        (_pot.pot_losscheck_run([1.0], None), _pot.pot_losscheck_report_free),
    ]:
        assert h.thisown, h
        free(h)
        assert not h.thisown, h
    # A dropped proxy frees its handle, and no double free follows an
    # explicit free (the proxy is disowned). SWIG's type information stays
    # intact through it all (it counts its owned objects).
    for _ in range(1000):
        _pot.pot_state_new()
        _pot.pot_log_free(_pot.pot_log_new())
    h = _pot.pot_state_new()
    _pot.pot_state_free(h)
    del h
    assert type(_pot.pot_state_new()) is _pot.pot_state and type(_pot.pot_log_new()) is _pot.pot_log
