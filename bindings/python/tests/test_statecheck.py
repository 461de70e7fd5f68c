"""State statistics and the rules over consecutive states (docs/PROTOCOL.md
5.2-5.3), on tables computed by hand and on a real PyTorch training run."""
import hashlib
import math
import struct

import pytest
import torch

import pot
import pot.torch as pt


def write_state(path, tensors):
    with pot.SafetensorsWriter() as w:
        for name, dtype, values in tensors:
            fmt = {"F32": "f", "F64": "d", "I64": "q"}[dtype]
            w.add(name, dtype, [len(values)], struct.pack(f"<{len(values)}{fmt}", *values))
        w.write(path)
    return path


def test_table_of_a_state_by_hand(tmp_path):
    path = write_state(str(tmp_path / "s.safetensors"), [
        ("param/w", "F32", [3.0, -4.0, float("nan"), 0.0, -0.0, 1e-40]),
        ("step", "I64", [0, 7]),
    ])
    s = pot.state_stats(path)
    w, step = s.tensors
    assert w["name"] == "param/w" and w["dtype"] == "F32" and w["elements"] == 6
    assert w["max_abs"] == 4.0 and w["nonfinite"] == 1 and w["zeros"] == 2 and w["subnormal"] == 1
    sub = struct.unpack("<f", struct.pack("<f", 1e-40))[0]
    assert w["l2_norm"] == math.sqrt(9.0 + 16.0 + sub * sub)
    assert step == {"name": "step", "dtype": "I64", "elements": 2, "max_abs": 0.0, "l2_norm": 0.0,
                    "nonfinite": 0, "subnormal": 0, "zeros": 1}
    # The digest, recomputed here from the bytes (PROTOCOL 2 and 5.2).
    tag = b"pot/v1/state-stats"
    assert s.digest == hashlib.sha256(bytes([len(tag)]) + tag + s.encode()).digest()
    with pot.Safetensors(path) as f:
        assert pot.state_stats(f, threads=1) == pot.state_stats(f, threads=2) == s
    assert pot.StateStats(s.encode()) == s


def test_bytes_that_are_no_table_are_refused(tmp_path):
    s = pot.state_stats(write_state(str(tmp_path / "s.safetensors"), [("param/w", "F32", [1.0, 2.0])]))
    b = bytearray(s.encode())
    with pytest.raises(pot.MalformedError, match="truncated|cannot hold"):
        pot.StateStats(bytes(b[:-1]))
    b[-8] = 3  # zeros: 3 of 2 elements
    with pytest.raises(pot.MalformedError, match="counts more elements"):
        pot.StateStats(bytes(b))
    with pytest.raises(pot.MalformedError, match="shorter than the count"):
        pot.StateStats(b"\x01")


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab=32, ctx=8, d=16):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, d)
        self.wpe = torch.nn.Embedding(ctx, d)
        self.block = torch.nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True)
        self.ln = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, x):
        h = self.wte(x) + self.wpe(torch.arange(x.shape[1]))
        return self.head(self.ln(self.block(h)))


def poison(model, opt):
    """Round 3, attack 1: 1e15 into four columns of the positional
    embedding, every Adam moment saturated."""
    with torch.no_grad():
        model.wpe.weight[:, :4] = 1e15
    for st in opt.state.values():
        st["exp_avg"].fill_(2.0 ** 63)
        st["exp_avg_sq"].fill_(2.0 ** 126)


def trained_tables(tmp_path, steps, poison_at=None):
    torch.manual_seed(0)
    model = TinyGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.randint(0, 32, (64, 9))

    def table(t):
        path = str(tmp_path / f"s{t}.safetensors")
        with pt.state_writer(pt.canonical_state(model, opt)) as w:
            w.write(path)
        return pot.state_stats(path)

    tables = [table(0)]
    for t in range(1, steps + 1):
        batch = data[(8 * t) % 64:(8 * t) % 64 + 8]
        opt.zero_grad()
        logits = model(batch[:, :-1])
        torch.nn.functional.cross_entropy(logits.reshape(-1, 32), batch[:, 1:].reshape(-1)).backward()
        opt.step()
        if t == poison_at:
            poison(model, opt)
        tables.append(table(t))
    return tables


def test_attack_the_step_that_poisons_a_state_is_flagged(tmp_path):
    (tmp_path / "honest").mkdir()
    honest = trained_tables(tmp_path / "honest", 6)
    for t in range(1, 7):
        assert pot.state_flags(honest[t - 1], honest[t]) == [], f"honest step {t} flagged"
    (tmp_path / "forged").mkdir()
    forged = trained_tables(tmp_path / "forged", 6, poison_at=3)
    flags = pot.state_flags(forged[2], forged[3])
    rules = {(f.rule, f.tensor) for f in flags}
    assert ("max_abs_jump", "param/wpe.weight") in rules and ("norm_jump", "param/wpe.weight") in rules
    saturated = {f.tensor for f in flags if f.rule == "saturated"}
    assert saturated == {n for n in (t["name"] for t in forged[3].tensors) if n.startswith("optim/")
                         and (n.endswith("/exp_avg") or n.endswith("/exp_avg_sq"))}
    # Saturated on both sides, the next steps are not flagged: the certain
    # challenge replays the step that poisoned the state.
    assert all(f.rule != "saturated" for t in range(4, 7) for f in pot.state_flags(forged[t - 1], forged[t]))
    # The steps before it are the honest run's.
    assert forged[:3] == honest[:3]
    # The run's flags (what it seals with on the ledger, docs/ledger.md 2.3)
    # name the poisoning step first: it is challenged for certain. (Later
    # steps may trip a rule too as the network reacts: torch 2.x flags step 4
    # as well.)
    assert pot.run_flags(honest[1:]) == []
    run = pot.run_flags(forged[1:])
    assert run[0].step == 3 and run[0].flags == flags
    assert pot.run_flags([t.encode() for t in forged[1:]]) == run
    with pytest.raises(pot.MalformedError, match="the statistics table of S_2"):
        pot.run_flags([forged[1], b"\x01"])


def test_a_state_in_memory_has_the_files_table(tmp_path):
    """pot_state_stats: the table of a pot.State, computed as tensors are
    added, is the one of the same tensors in a file."""
    path = write_state(str(tmp_path / "s.safetensors"), [("param/w", "F32", [3.0, -4.0, 0.5]), ("step", "I64", [2])])
    with pot.State() as s:
        s.add_tensor("step", pot.DType.I64, [1], struct.pack("<q", 2))
        s.add_tensor("param/w", pot.DType.F32, [3], struct.pack("<3f", 3.0, -4.0, 0.5))
        assert pot.state_stats(s) == pot.state_stats(path)
        s.add_tensor_digest("sharded", pot.sha256(b"a rank's tensor"))
        with pytest.raises(pot.StateError, match="added by its digest"):
            pot.state_stats(s)
