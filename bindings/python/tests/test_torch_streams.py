"""A small-LLM loop on a token file (docs/python.md "Token streams"): a
train.bin of uint16 ids committed where it lies (pot.torch.commit_stream),
random windows planned as a get_batch draws them (plan_windows), the batch
read by rec.batch() in place of get_batch; recorded, opened with window
proofs (states between checkpoints re-derived from the stream) and
verified. Then what a miner cannot do with it: train on other tokens than
the committed ones, or commit the same tokens read another way."""
import json
import os
import subprocess
import sys
from array import array

import pytest

torch = pytest.importorskip("torch")
import pot  # noqa: E402
import pot.torch as pt  # noqa: E402
from conftest import VECTORS  # noqa: E402

if not pot.replay_available():
    pytest.skip("libpot was built without LibTorch", allow_module_level=True)

VOCAB, BLOCK, BATCH, STEPS, EVERY = 64, 16, 4, 7, 3


class TinyLM(torch.nn.Module):
    """A bigram language model in the shape of nanoGPT's (with its dropout):
    forward(x, y) returns the cross-entropy of next-token logits."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, 24)
        self.drop = torch.nn.Dropout(0.1)
        self.head = torch.nn.Linear(24, VOCAB)

    def forward(self, x, y):
        logits = self.head(self.drop(self.emb(x)))
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())


def write_train_bin(path, n=3000):
    ids = array("H", [(j * j + 7 * j) % VOCAB for j in range(n)])
    with open(path, "wb") as f:
        ids.tofile(f)  # little-endian on every machine pot supports
    return ids


def make_run(tmp, stream_file=None, uniform=False):
    """A run on a token file under a listed schedule of get_batch's windows,
    or (uniform) under a run-seeded uniform task: each miner's own."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    tokens = write_train_bin(os.path.join(tmp, "train.bin"))
    stream = pt.commit_stream(os.path.join(tmp, "train.bin"), os.path.join(tmp, "stream.json"), window=BLOCK + 1)
    model = TinyLM()
    program = os.path.join(tmp, "program.pt")
    pt.save_program(model, program)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    # A listed schedule (every miner trains on the same windows) needs
    # per-step randomness so that each run is its own trajectory: dropout
    # under per_step seeds.
    spec = pt.make_spec(opt, program, dtype=torch.float32, batch_size=BATCH, dropout=0.1, seed_policy="per_step")
    schedule = None if uniform else pt.plan_windows(stream.size, STEPS, BATCH, seed=1337)
    task = pt.make_task(model, opt, spec, dataset_dir=os.path.join(tmp, "stream.json"),
                        schedule=pt.RUN_SEEDED_UNIFORM if uniform else schedule,
                        steps=STEPS if uniform else None, owner=b"owner", end_height=10**6, challenge_rounds=2)
    rec = pt.Recorder(model, opt, task, program, os.path.join(tmp, "ckpt"),
                      dataset_dir=stream_file or os.path.join(tmp, "stream.json"), schedule=schedule,
                      steps=STEPS if uniform else None, miner_identity=b"miner", checkpoint_every=EVERY)
    return rec, model, opt, spec, program, stream, tokens, rec.schedule


def train(rec, model, opt):
    """The loop, every step on rec.batch() (in place of get_batch); the root."""
    for _ in range(STEPS):
        rec.begin_step()
        b = rec.batch()
        loss = model(b["x"], b["y"])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        rec.end_step(loss)
    return rec.finish()


def test_plan_windows_draws_what_get_batch_draws(tmp_path):
    """nanoGPT's get_batch with a seeded generator: torch.randint over
    len(data) - block_size offsets; window i of one token file starts at
    token i, so the plan is the offsets it draws."""
    tokens = write_train_bin(str(tmp_path / "train.bin"))
    stream = pt.commit_stream(str(tmp_path / "train.bin"), str(tmp_path / "stream.json"), window=BLOCK + 1)
    assert stream.size == len(tokens) - BLOCK
    g = torch.Generator().manual_seed(1337)
    plan = pt.plan_windows(stream.size, 5, BATCH, seed=1337, microbatches=2)
    for step in plan:
        ix = torch.randint(len(tokens) - BLOCK, (BATCH,), generator=g)
        assert [i for mb in step for i in mb] == ix.tolist()
        assert [len(mb) for mb in step] == [2, 2]
    with pytest.raises(pot.InvalidArgumentError):
        pt.plan_windows(stream.size, 5, 3, seed=1, microbatches=2)


def test_a_token_stream_run_records_opens_and_verifies(tmp_path):
    rec, model, opt, spec, program, stream, tokens, schedule = make_run(str(tmp_path))
    for t in range(1, STEPS + 1):
        rec.begin_step()
        b = rec.batch()  # in place of get_batch: the committed windows
        # The windows are the token file's: x the block, y shifted by one.
        offsets = [i for mb in schedule[t - 1] for i in mb]
        assert b["x"].dtype == torch.int64 and list(b["x"].shape) == [BATCH, BLOCK]
        assert b["x"][0].tolist() == list(tokens[offsets[0]:offsets[0] + BLOCK])
        assert b["y"][0].tolist() == list(tokens[offsets[0] + 1:offsets[0] + BLOCK + 1])
        loss = model(b["x"], b["y"])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        rec.end_step(loss)
    root = rec.finish()
    # Step 5's pre-state is between checkpoints: re-derived by replaying
    # step 4 on windows read from the stream.
    for t in (1, 5, STEPS):
        manifest = rec.serve(t)
        r = pot.verify_step(rec.commitment, spec, program, t, STEPS, root, manifest, rec.state_path(t - 1))
        assert r.ok, (t, r.message)
    with pytest.raises(pot.InvalidArgumentError, match="outside"):
        rec.batch(STEPS + 1)
    rec.close()


def test_tokens_changed_after_the_commitment_are_not_served(tmp_path):
    """A miner whose token file is not the committed one (it trained on
    other tokens, or the file changed) cannot open a step: the checkpoint
    store checks the shard's chunk tree against the descriptor."""
    rec, model, opt, _, _, _, _, _ = make_run(str(tmp_path))
    train(rec, model, opt)
    with open(tmp_path / "train.bin", "r+b") as f:
        f.seek(4000)
        f.write(b"\x01\x00")
    with pytest.raises(pot.ProofMismatchError, match="train.bin"):
        rec.serve(2)
    rec.close()


def test_the_same_tokens_read_another_way_are_another_dataset(tmp_path):
    """The views are part of the commitment: the same train.bin committed
    with y = x (no next-token shift) has another root, and a recorder on it
    is refused by the task before anything is written."""
    os.makedirs(tmp_path / "other")
    write_train_bin(str(tmp_path / "train.bin"))
    pt.commit_stream(str(tmp_path / "train.bin"), str(tmp_path / "other" / "stream.json"), window=BLOCK + 1,
                     views={"x": (0, BLOCK), "y": (0, BLOCK)})
    with pytest.raises(pot.InvalidArgumentError, match="dataset_root"):
        make_run(str(tmp_path), stream_file=str(tmp_path / "other" / "stream.json"))
    assert not os.path.exists(tmp_path / "ckpt")


def test_a_verifier_in_another_process_checks_a_stream_run_with_the_cli(tmp_path):
    """What the miner publishes (commitment.bin, the spec, the program, the
    root) and serves (`pot open make --dataset stream.json`: window proofs,
    the pre-state re-derived from the stream) verified by `pot verify` in
    another process, which reads no token file."""
    cli = os.path.join(os.environ.get("POT_PREFIX", ""), "bin", "pot")
    if not os.path.exists(cli):
        pytest.skip("no installed bin/pot (run through bindings/python/run-tests.sh PREFIX)")
    rec, model, opt, spec, program, _, _, _ = make_run(str(tmp_path))
    root = train(rec, model, opt)
    rec.close()
    (tmp_path / "spec.bin").write_bytes(spec.encode())
    ck = str(tmp_path / "ckpt")

    def pot(*args):
        p = subprocess.run([cli, *map(str, args)], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    for t in (2, 5):
        rc, out, err = pot("open", "make", ck, "--step", t, "--dataset", tmp_path / "stream.json", "--out",
                           tmp_path / f"m{t}.bin", "--json")
        assert rc == 0, err
        served = json.loads(out)
        rc, out, err = pot("verify", tmp_path / f"m{t}.bin", "--step", t, "--commitment", os.path.join(ck, "commitment.bin"),
                           "--spec", tmp_path / "spec.bin", "--program", program, "--root", root.hex(), "--size", STEPS,
                           "--pre-state", served["pre_state"], "--json")
        assert rc == 0, (out, err)
        assert json.loads(out)["valid"] is True
    # The manifest carries the windows, not the token file: the verifier
    # replays step 5 with train.bin gone.
    os.remove(tmp_path / "train.bin")
    rc, out, err = pot("verify", tmp_path / "m5.bin", "--step", 5, "--commitment", os.path.join(ck, "commitment.bin"),
                       "--spec", tmp_path / "spec.bin", "--program", program, "--root", root.hex(), "--size", STEPS,
                       "--pre-state", served["pre_state"], "--json")
    assert rc == 0 and json.loads(out)["valid"] is True, (out, err)
    # The miner cannot serve without its tokens.
    rc, _, err = pot("open", "make", ck, "--step", 6, "--dataset", tmp_path / "stream.json", "--out",
                     tmp_path / "m6.bin")
    assert rc != 0 and "train.bin" in err


def test_a_run_seeded_uniform_task_gives_each_miner_its_own_windows(tmp_path):
    """A task whose runs each draw their windows with replacement (docs/
    PROTOCOL.md 16.3): the schedule is the miner's own, and a run records
    and verifies."""
    rec, model, opt, spec, program, stream, _, mine = make_run(str(tmp_path), uniform=True)
    task = rec.task
    assert task.schedule_rule == "run_seeded_uniform"
    assert mine == task.run_schedule(b"miner", STEPS) != task.run_schedule(b"thief", STEPS)
    assert all(0 <= i < stream.size for step in mine for mb in step for i in mb)
    # The run's windows are the independent draws of PROTOCOL.md 16.3.
    seed = task.run_schedule_seed(b"miner", STEPS)
    sys.path.insert(0, str(VECTORS.parent / "interop"))
    import independent as ind  # the implementation written from docs/PROTOCOL.md alone
    assert [i for step in mine for mb in step for i in mb] == [ind.uniform_draw(seed, p, stream.size)
                                                               for p in range(STEPS * BATCH)]
    root = train(rec, model, opt)
    for t in (1, STEPS):
        r = pot.verify_step(rec.commitment, spec, program, t, STEPS, root, rec.serve(t), rec.state_path(t - 1))
        assert r.ok, (t, r.message)
    # The thief's commitment for this trajectory names another schedule root.
    stolen = task.commitment(b"thief", STEPS)
    assert json.loads(stolen.to_json())["schedule_root"] != json.loads(rec.commitment.to_json())["schedule_root"]
    rec.close()
