"""pot-repro/1, the reproducible arithmetic (docs/PROTOCOL.md 14.6): a run
trained on one thread with the machine's own CPU kernels is replayed bit
for bit by verifiers on another thread count and with ATen's other kernel
set (ATEN_CPU_CAPABILITY=default), each in a process of its own; a step that
runs an operator the arithmetic lacks is refused while recording, naming
the operator, never recorded."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import pot  # noqa: E402
import pot.safetensors  # noqa: E402
import pot.torch as pt  # noqa: E402

STEPS = 6
BATCH = 64
SAMPLES = 256
# Wide enough that ATen's thread pool splits every kind of work: matrix
# rows, the optimizer's element-wise loops over the 64 x 1024 weight (more
# elements than ATen's grain of 32768), the reductions' rows.
FEATURES, HIDDEN, CLASSES = 64, 1024, 10
REPRO = "pot-repro/1"


class Mlp(torch.nn.Module):
    """Linear, ReLU, Linear and cross-entropy: the arithmetic's first model."""

    def __init__(self, activation="relu"):
        super().__init__()
        self.fc1 = torch.nn.Linear(FEATURES, HIDDEN)
        self.fc2 = torch.nn.Linear(HIDDEN, CLASSES)
        self.act = torch.nn.ReLU() if activation == "relu" else torch.nn.SiLU()

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.fc2(self.act(self.fc1(x))), y)


def samples():
    g = torch.Generator().manual_seed(3)
    return [{"x": torch.randn(FEATURES, generator=g), "y": torch.randint(0, CLASSES, (), generator=g)}
            for _ in range(SAMPLES)]


def matrix_module():
    """tests/replay/train.py: the determinism matrix's models, samples and
    optimizer settings."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))), "tests", "replay"))
    import train
    return train


def make_optimizer(kind, params):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    cls = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[kind]
    return cls(params, lr=1e-2, weight_decay=0.01, amsgrad=kind == "adamw")


class Run:
    """An honest run recorded on one thread: this file's MLP by default, or
    a model and samples of the determinism matrix (tests/replay/train.py)."""

    def __init__(self, tmp, optim, arithmetic=REPRO, activation="relu", clip=0.0, model=None, data=None,
                 dropout=0.0, dtype=torch.float32, optimizer=None):
        os.makedirs(tmp, exist_ok=True)
        torch.set_num_threads(1)
        torch.manual_seed(1)
        self.model = model if model is not None else Mlp(activation)
        self.data_dir = os.path.join(tmp, "data")
        self.samples = data if data is not None else samples()
        pt.write_dataset(self.samples, self.data_dir)
        self.program = os.path.join(tmp, "program.pt")
        pt.save_program(self.model, self.program)
        self.opt = (optimizer or (lambda params: make_optimizer(optim, params)))(self.model.parameters())
        self.clip = clip
        n = len(self.samples)
        batch = min(BATCH, n)
        spec = pt.make_spec(self.opt, self.program, dtype=dtype, batch_size=batch,
                            seed_policy="per_step" if dropout else "none", seed=7 if dropout else 0,
                            dropout=dropout, grad_clip_max_norm=clip, arithmetic=arithmetic,
                            **({"intra_op_threads": 1} if arithmetic == "native" else {}))
        self.schedule = [[[(batch * t + i) % n for i in range(batch)]] for t in range(STEPS)]
        self.task = pt.make_task(self.model, self.opt, spec, dataset_dir=self.data_dir, schedule=self.schedule,
                                 end_height=10 ** 6, owner=b"owner", challenge_rounds=3, program=self.program)
        self.rec = pt.Recorder(self.model, self.opt, self.task, self.program, os.path.join(tmp, "ckpt"),
                               dataset_dir=self.data_dir, schedule=self.schedule, checkpoint_every=1,
                               miner_identity=b"miner")

    def batch(self, t):
        b = [self.samples[i] for i in self.schedule[t - 1][0]]
        return [torch.stack([s[name] for s in b]) for name in self.rec.input_names]

    def step(self, t):
        self.rec.begin_step(self.schedule[t - 1][0])
        loss = self.model(*self.batch(t))
        loss.backward()
        if self.clip:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return self.rec.end_step(loss)

    def train(self):
        self.leaves = [self.step(t) for t in range(1, STEPS + 1)]
        self.root = self.rec.finish()
        return self

    def openings(self):
        out = []
        for t in range(1, STEPS + 1):
            path = os.path.join(self.rec.checkpoint_dir, f"manifest-{t}.bin")
            with open(path, "wb") as f:
                f.write(self.rec.serve(t))
            out.append((t, path, self.rec.state_path(t - 1), self.rec.state_path(t)))
        return out


# The verifier, in a process of its own so that ATEN_CPU_CAPABILITY is read
# when torch starts: one JSON line per step.
CHILD = r"""
import json, sys
import pot
a = json.load(open(sys.argv[1]))
commitment = pot.Commitment.decode(bytes.fromhex(a["commitment"]))
spec = pot.Spec.from_json(a["spec"])
for t, manifest, pre, post in a["openings"]:
    try:
        pot.verify_step(commitment, spec, a["program"], t, a["steps"], bytes.fromhex(a["root"]),
                        open(manifest, "rb").read(), pre, post, pot.VerifyMode.BITWISE, a["threads"])
        check = "ok"
    except pot.Error as e:
        check = f"{e.check}: {e}"
    blas = sorted({l.split()[-1] for l in open("/proc/self/maps") if "/libblas.so" in l})
    print(json.dumps({"step": t, "check": check, "class": pot.hardware_class(), "blas": blas}), flush=True)
"""


def loaded_blas():
    """The libblas.so.3 files this process has mapped: Debian's torch calls
    the generic BLAS (its provider is the machine's alternative); PyPI's
    wheels link MKL inside and map none."""
    with open("/proc/self/maps") as f:
        return sorted({line.split()[-1] for line in f if "/libblas.so" in line})


def openblas_dir():
    """Debian's OpenBLAS unpacked, not installed (scripts/openblas; installing
    it would switch the machine's libblas.so.3 alternative): None where this
    torch maps no libblas.so.3, so that a BLAS provider is no input of it."""
    if not loaded_blas():
        return None
    d = os.environ.get("POT_OPENBLAS_DIR")
    if not d:
        pytest.skip("this torch calls libblas.so.3: set POT_OPENBLAS_DIR=$(scripts/openblas DIR) (scripts/test does)")
    assert os.path.isfile(os.path.join(d, "libblas.so.3")), f"POT_OPENBLAS_DIR={d} holds no libblas.so.3"
    return d


def verify_elsewhere(run, tmp, threads, capability=None, onednn=None, blas=None):
    args = {"commitment": run.rec.commitment.encode().hex(), "spec": run.task.spec.to_json(),
            "program": run.program, "steps": STEPS, "root": run.root.hex(), "openings": run.openings(),
            "threads": threads}
    path = os.path.join(tmp, f"verify-{threads}-{capability}-{onednn}-{bool(blas)}.json")
    with open(path, "w") as f:
        json.dump(args, f)
    env = dict(os.environ)
    if capability:
        env["ATEN_CPU_CAPABILITY"] = capability
    if onednn:
        env["ONEDNN_MAX_CPU_ISA"] = onednn
    if blas:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in [blas, env.get("LD_LIBRARY_PATH")] if p)
    out = subprocess.run([sys.executable, "-c", CHILD, path], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    results = [json.loads(line) for line in out.stdout.splitlines()]
    if blas:
        # The verifier really computed with OpenBLAS's library, not the
        # machine's: an LD_LIBRARY_PATH that changed nothing proves nothing.
        assert results and all(r["blas"] == [os.path.join(blas, "libblas.so.3")] for r in results), results
    return results


@pytest.mark.parametrize("optim,clip", [("sgd", 0.0), ("adam", 1.0), ("adamw", 0.0)])
def test_every_step_replays_bit_for_bit_on_other_threads_and_kernels(tmp_path, optim, clip):
    run = Run(str(tmp_path / "run"), optim, clip=clip).train()
    spec = run.task.spec.to_dict()
    assert spec["arithmetic"] == REPRO and "intra_op_threads" not in spec and "hardware_class" not in spec
    for threads, capability in [(2, None), (3, None), (1, "default"), (2, "default")]:
        results = verify_elsewhere(run, str(tmp_path), threads, capability)
        assert [r["step"] for r in results] == list(range(1, STEPS + 1))
        assert all(r["check"] == "ok" for r in results), (threads, capability, results)
        if capability:
            assert "aten:default" in results[0]["class"]


@pytest.mark.parametrize("name,dtype", [("mlp", "f32"), ("transformer", "f32"), ("cnn", "f32"),
                                        ("transformer", "bf16"), ("cnn", "bf16")])
def test_the_matrix_models_replay_bit_for_bit_with_dropout(tmp_path, name, dtype):
    """The determinism matrix's MLP (Linear, LayerNorm, GELU, Dropout), GPT
    (embeddings, causal attention, softmax, LayerNorm, GELU, dropout, tied
    head) and CNN (Conv2d, BatchNorm2d, MaxPool2d, Dropout), AdamW with
    clipping, dropout 0.1 from per_step seeds, in F32 and (the GPT and the
    CNN, as the determinism matrix has them) in BF16: every
    step verified bit for bit on 2 threads, with the default kernels, with
    oneDNN capped at SSE4.1 (each a hardware class of its own under native)
    and, where this torch calls libblas.so.3, with OpenBLAS's in place of the
    machine's (a provider no class names)."""
    T = matrix_module()
    torch.manual_seed(1)
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    model = T.build_task(name).to(dt)
    data = T.make_samples(name, 32, 7, dt)
    run = Run(str(tmp_path / name), "adamw", clip=1.0, model=model, data=data, dropout=T.DROPOUT, dtype=dt).train()
    assert run.task.spec.to_dict()["dtype"] == dtype.upper()
    blas = openblas_dir()
    configs = [(2, None, None, None), (1, "default", None, None), (1, None, "SSE41", None)]
    configs += [(1, None, None, blas)] if blas else []
    for threads, capability, onednn, provider in configs:
        results = verify_elsewhere(run, str(tmp_path), threads, capability, onednn, provider)
        assert [r["step"] for r in results] == list(range(1, STEPS + 1))
        assert all(r["check"] == "ok" for r in results), (name, dtype, threads, capability, onednn, provider, results)


def test_under_native_openblas_gives_other_bits_in_the_same_hardware_class(tmp_path):
    """The control of the OpenBLAS column above: the same library swap under
    `native` changes a step's bits (Debian's 1.13 computes its matrix
    products in libblas.so.3) while the verifier's hardware class stays the
    recorded one, so the bitwise replay answers a mismatch, not a refusal.
    That is why the column proves something, and a limit of `native`
    (docs/determinism.md, "The BLAS provider")."""
    blas = openblas_dir()
    if blas is None:
        pytest.skip("this torch maps no libblas.so.3 (PyPI's wheels link MKL inside)")
    run = Run(str(tmp_path / "run"), "sgd", arithmetic="native").train()
    results = verify_elsewhere(run, str(tmp_path), 1, blas=blas)
    assert [r["class"] for r in results] == [run.task.spec.to_dict()["hardware_class"]] * STEPS
    # An honest miner, an honest verifier, and every step a mismatch.
    assert all(r["check"].startswith("replayed_state: POT_E_PROOF_MISMATCH") for r in results), results


@pytest.mark.parametrize("kind,dtype", [(k, "f32") for k in ("adadelta", "adagrad", "rmsprop", "adamax", "nadam",
                                                               "radam")] + [("adamax", "bf16")])
def test_the_matrix_optimizers_replay_bit_for_bit(tmp_path, kind, dtype):
    """The determinism matrix's other optimizers (its settings, from
    tests/replay/train.py: centered RMSprop with momentum, Adagrad's decay,
    NAdam's momentum decay...) on its MLP with dropout: every step verified
    on 2 threads with ATen's default kernels. Adamax on torch 1.13 folds its
    infinity norm through cat and amax.out (on 2.x through maximum)."""
    T = matrix_module()
    torch.manual_seed(1)
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    model = T.build_task("mlp").to(dt)
    cfg = dict(T.OPTIMIZER_KINDS[kind], kind=kind)
    run = Run(str(tmp_path / kind), kind, model=model, data=T.make_samples("mlp", 32, 7, dt), dropout=T.DROPOUT,
              dtype=dt, optimizer=lambda params: T.make_optimizer(cfg, [{"params": list(params)}])).train()
    results = verify_elsewhere(run, str(tmp_path), 2, "default")
    assert [r["check"] for r in results] == ["ok"] * STEPS, (kind, dtype, results)


class LstmLm(torch.nn.Module):
    """An LSTM language model: embeddings, one LSTM layer (sigmoid and tanh
    gates), a linear head, next-token cross-entropy."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(40, 16)
        self.lstm = torch.nn.LSTM(16, 32, batch_first=True)
        self.head = torch.nn.Linear(32, 40)

    def forward(self, tokens):
        h, _ = self.lstm(self.emb(tokens[:, :-1]))
        return torch.nn.functional.cross_entropy(self.head(h).reshape(-1, 40), tokens[:, 1:].reshape(-1))


def test_an_lstm_replays_bit_for_bit(tmp_path):
    """sigmoid, tanh and their backward; torch 2's CPU LSTM would call
    oneDNN's fused mkldnn_rnn_layer, which a pot-repro/1 step switches off."""
    g = torch.Generator().manual_seed(5)
    data = [{"tokens": torch.randint(0, 40, (13,), generator=g)} for _ in range(32)]
    torch.manual_seed(1)
    run = Run(str(tmp_path / "lstm"), "adam", clip=1.0, model=LstmLm(), data=data).train()
    for threads, capability in [(2, None), (1, "default")]:
        results = verify_elsewhere(run, str(tmp_path), threads, capability)
        assert all(r["check"] == "ok" for r in results), (threads, capability, results)
    assert torch._C._get_mkldnn_enabled()  # restored after every step


class ThreadFingerprint(torch.nn.Module):
    """Round 3, attack 8 (test_tolerance.py): a program that sums a million
    constants, a sum whose native rounding depends on how the reduction is
    split across threads, and triples its loss when the sum is one
    thread's. Its loss also adds an MSE term and a whole-tensor mean."""

    def __init__(self, expected):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.Tanh(), torch.nn.Linear(32, CLASSES))
        self.register_buffer("expected", torch.tensor(expected))

    def forward(self, x, y):
        probe = (torch.full([1000003], 0.1, dtype=torch.float32) * 1.0001).sum()
        logits = self.body(x)
        loss = (torch.nn.functional.cross_entropy(logits, y) + torch.nn.functional.mse_loss(
            logits, torch.zeros_like(logits))) + logits.mean()
        if bool(probe == self.expected):
            loss = loss * 3.0
        return loss


def native_probe(threads):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return float((torch.full([1000003], 0.1, dtype=torch.float32) * 1.0001).sum())
    finally:
        torch.set_num_threads(before)


def test_the_thread_fingerprinting_program_gives_one_sum_everywhere(tmp_path):
    """Natively the probe's sum differs between thread counts (the attack);
    under pot-repro/1 it is one sum, so every verifier takes the program's
    branch alike and replays each step bit for bit."""
    one = native_probe(1)
    if all(native_probe(n) == one for n in (2, 3, 4)):
        pytest.skip("this machine sums the probe alike on 1 to 4 threads natively")
    run = Run(str(tmp_path / "fingerprint"), "adamw", model=ThreadFingerprint(one)).train()
    for threads, capability in [(2, None), (3, None), (1, "default")]:
        results = verify_elsewhere(run, str(tmp_path), threads, capability)
        assert all(r["check"] == "ok" for r in results), (threads, capability, results)


def test_the_arithmetic_is_what_computes_the_steps(tmp_path):
    """The same run under native gives other states: pot-repro/1 kernels,
    not ATen's, computed the recorded steps."""
    repro = Run(str(tmp_path / "repro"), "adam").train()
    native = Run(str(tmp_path / "native"), "adam", arithmetic="native").train()
    repro_states = [pot.safetensors.safetensors_digest_file(repro.rec.state_path(t)) for t in range(1, STEPS + 1)]
    native_states = [pot.safetensors.safetensors_digest_file(native.rec.state_path(t)) for t in range(1, STEPS + 1)]
    assert all(a != b for a, b in zip(repro_states, native_states))
    # S_0 is the same: only the arithmetic differs.
    assert pot.safetensors.safetensors_digest_file(repro.rec.state_path(0)) == pot.safetensors.safetensors_digest_file(native.rec.state_path(0))


def test_a_task_whose_program_lacks_a_kernel_is_refused_when_made(tmp_path):
    """A task owner's program that computes SiLU (no pot-repro/1 kernel
    yet): make_task's dry run replays step 1 as every verifier would and
    refuses the task, naming the operator of the forward and of the
    backward, before anyone trains."""
    with pytest.raises(pot.UnsupportedError, match=r"make_task: the dry run of step 1") as e:
        Run(str(tmp_path / "silu"), "sgd", activation="silu")
    assert "aten::silu.default has no pot-repro/1 kernel" in e.value.message
    assert "aten::silu_backward" in e.value.message
    # Without the program there is no dry run, so no task.
    run = Run(str(tmp_path / "relu"), "sgd")
    with pytest.raises(pot.InvalidArgumentError, match="pass program="):
        pt.make_task(run.model, run.opt, run.task.spec, dataset_dir=run.data_dir, schedule=run.schedule,
                     end_height=10 ** 6, owner=b"owner")


def finish_first_step(run):
    """Step 1 of a run whose begin_step the caller made (and computed in
    its scope): the honest step, recorded."""
    xs, ys = run.batch(1)
    loss = run.model(xs, ys)
    loss.backward()
    run.opt.step()
    run.opt.zero_grad(set_to_none=True)
    run.rec.end_step(loss)


def defined_sum(values):
    """PROTOCOL 14.6's sum order, written again in numpy's binary32: element
    j adds to lane j mod 32 in element order, then the lanes pairwise."""
    import numpy as np
    lanes = np.zeros(32, dtype=np.float32)
    for j, v in enumerate(np.asarray(values, dtype=np.float32)):
        lanes[j % 32] = np.float32(lanes[j % 32] + v)
    while len(lanes) > 1:
        lanes = (lanes[0::2] + lanes[1::2]).astype(np.float32)
    return lanes[0]


def test_sums_over_leading_dims_follow_the_defined_order(tmp_path):
    """A bias gradient sums a batch's rows: pot-repro/1 sums such columns in
    place (no transposing copy), each in the defined order over the rows,
    the same bits as the row sums of the transposed copy and as an
    independent computation of the order."""
    import numpy as np
    run = Run(str(tmp_path / "sums"), "sgd")
    g = torch.Generator().manual_seed(5)
    x = torch.randn(70, 3, 11, generator=g) * 100
    run.rec.begin_step(run.schedule[0][0])
    over_rows = x.sum(0)
    over_two = x.sum((0, 1))
    means = x.mean((0, 1), keepdim=True)
    by_copy = x.permute(1, 2, 0).contiguous().sum(2)
    finish_first_step(run)
    a = x.numpy()
    assert torch.equal(over_rows, by_copy)
    for i in range(3):
        for j in range(11):
            assert over_rows[i, j].item() == defined_sum(a[:, i, j]), (i, j)
    for j in range(11):
        col = a[:, :, j].reshape(-1)
        assert over_two[j].item() == defined_sum(col), j
        assert means[0, 0, j].item() == np.float32(defined_sum(col) / np.float32(210)), j
    # ATen's own sum of the same columns is another order (this is what
    # the arithmetic replaces).
    assert not torch.equal(x.sum(0), over_rows)


def test_repeated_operands_give_the_bits_of_their_copies(tmp_path):
    """An operand repeated along the inner loop (a Python scalar, a column
    broadcast across a row, whose value changes from row to row) is read
    from copies of its value: the same bits as the operand expanded into a
    tensor of its own."""
    run = Run(str(tmp_path / "bcast"), "sgd")
    g = torch.Generator().manual_seed(6)
    x = torch.randn(37, 600, generator=g)
    col, row = torch.rand(37, 1, generator=g) + 0.5, torch.rand(1, 600, generator=g) + 0.5
    run.rec.begin_step(run.schedule[0][0])
    pairs = [(x * col, x * col.expand_as(x).contiguous()), (x / col, x / col.expand_as(x).contiguous()),
             (x - row, x - row.expand_as(x).contiguous()), (x * 0.37, x * torch.full_like(x, 0.37)),
             (torch.addcdiv(x, x, col, value=0.5), torch.addcdiv(x, x, col.expand_as(x).contiguous(), value=0.5)),
             (torch.addcmul(x, row, col, value=0.5),
              torch.addcmul(x, row.expand_as(x).contiguous(), col.expand_as(x).contiguous(), value=0.5))]
    finish_first_step(run)
    for i, (a, b) in enumerate(pairs):
        assert torch.equal(a, b), i


def test_a_bf16_operator_is_its_binary32_definition_rounded_once(tmp_path):
    """PROTOCOL 14.6, "BF16": each operator on bfloat16 operands is the
    binary32 definition on the widened operands, each result rounded once
    to bfloat16 (a returned tensor; a tensor written in place), and a
    binary32 operand makes the result binary32."""
    run = Run(str(tmp_path / "bf16"), "sgd")
    g = torch.Generator().manual_seed(8)
    a, b = torch.randn(33, 300, generator=g).bfloat16(), torch.randn(300, 17, generator=g).bfloat16()
    w, f32 = torch.randn(300, generator=g).bfloat16(), torch.randn(33, 300, generator=g)
    run.rec.begin_step(run.schedule[0][0])
    wa, wb, ww = a.float(), b.float(), w.float()
    pairs = [
        (a @ b, (wa @ wb).bfloat16()),
        (torch.nn.functional.gelu(a), torch.nn.functional.gelu(wa).bfloat16()),
        (torch.softmax(a, 1), torch.softmax(wa, 1).bfloat16()),
        (torch.nn.functional.layer_norm(a, (300,), w, w), torch.nn.functional.layer_norm(wa, (300,), ww, ww).bfloat16()),
        (a.sum(0), wa.sum(0).bfloat16()),
        (a.clone().mul_(w).add_(a, alpha=0.3), (wa * ww).bfloat16().float().add(wa, alpha=0.3).bfloat16()),
        (a.clone().lerp_(a * 2, 0.1), wa.lerp((wa * 2).bfloat16().float(), 0.1).bfloat16()),
    ]
    mixed = a * f32
    want_mixed = wa * f32
    finish_first_step(run)
    for i, (got, want) in enumerate(pairs):
        assert got.dtype == torch.bfloat16, i
        assert torch.equal(got, want), i
    assert mixed.dtype == torch.float32 and torch.equal(mixed, want_mixed)
    # Rounding once at the end is not rounding the binary32 chain's terms:
    # the product differs from one computed on bfloat16 partial results.
    assert not torch.equal(pairs[0][0], (wa[:, :150] @ wb[:150]).bfloat16().float().add(
        (wa[:, 150:] @ wb[150:]).bfloat16().float()).bfloat16())


def test_an_operator_that_converts_inside_is_refused_naming_the_conversion(tmp_path):
    """A miner whose loop sums in binary64 (sum with dtype=, which ATen's
    kernel would compute natively, in a thread-dependent order) is refused
    at end_step, naming the operator and the conversion."""
    run = Run(str(tmp_path / "f64sum"), "sgd")
    run.rec.begin_step(run.schedule[0][0])
    xs, ys = run.batch(1)
    loss = run.model(xs, ys) + 0.0 * xs.sum(0, dtype=torch.float64).sum().float()
    loss.backward()
    run.opt.step()
    with pytest.raises(pot.UnsupportedError, match=r"aten::sum\.dim_IntList from Float to Double"):
        run.rec.end_step(loss)
    assert run.rec.steps_recorded == 0


def test_a_step_with_an_operator_outside_the_arithmetic_is_refused_naming_it(tmp_path):
    """A miner whose loop computes SiLU on the batch (no pot-repro/1 kernel
    yet) with ATen's own kernel: its bits are the machine's, so the recorder
    refuses the step at end_step, naming the operator, and records nothing."""
    run = Run(str(tmp_path / "silu"), "sgd")
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(64, 1024, generator=g), torch.randn(1024, 64, generator=g)
    native = a @ b  # outside any step: ATen's own kernel
    run.rec.begin_step(run.schedule[0][0])
    x, y = run.batch(1)
    loss = run.model(torch.nn.functional.silu(x), y)
    loss.backward()
    run.opt.step()
    with pytest.raises(pot.UnsupportedError, match=r"aten::silu\.default has no pot-repro/1 kernel"):
        run.rec.end_step(loss)
    assert run.rec.steps_recorded == 0
    # The voided step is over: this thread computes natively again (the
    # product's bits are ATen's, not pot-repro/1's), and the step stays
    # refused.
    assert torch.equal(a @ b, native)
    with pytest.raises(pot.UnsupportedError, match=r"aten::silu\.default"):
        run.rec.end_step(loss)


def test_a_step_ended_on_another_thread_is_still_refused(tmp_path):
    """The same step with end_step called from another thread: the gate's
    violations are the thread's that began the step, not end_step's."""
    import threading
    run = Run(str(tmp_path / "silu-thread"), "sgd")
    run.rec.begin_step(run.schedule[0][0])
    x, y = run.batch(1)
    loss = run.model(torch.nn.functional.silu(x), y)
    loss.backward()
    run.opt.step()
    raised = []

    def end():
        try:
            run.rec.end_step(loss)
        except pot.Error as e:
            raised.append(e)

    t = threading.Thread(target=end)
    t.start()
    t.join()
    assert len(raised) == 1 and isinstance(raised[0], pot.UnsupportedError), raised
    assert "aten::silu.default has no pot-repro/1 kernel" in raised[0].message
    assert run.rec.steps_recorded == 0


# The referee in a process of its own, on 2 threads and ATen's default
# kernels: its own trace of the step, then each forged node decided by
# running the operator alone (test_op_trace.py's opening codec).
REFEREE = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
import pot
from test_op_trace import Opening, flat, forged_output
a = json.load(open(sys.argv[1]))
samples = [open(p, "rb").read() for p in a["samples"]]
entry, run_id = bytes.fromhex(a["entry"]), bytes.fromhex(a["run_id"])
out = {"decided": 0, "wrong": [], "class": pot.hardware_class()}
with pot.Spec(a["spec"]) as s, pot.Replay(s, a["program"]) as r, r.trace(a["pre"], entry, samples, run_id=run_id) as t:
    out["root"] = t.root(len(t)).hex()
    nodes = [t.node(i) for i in range(len(t))]
    for k in range(0, len(nodes) - 1, a["every"]):
        if not any("tensor" in v for v in flat(pot.op_node_json(nodes[k])["outputs"])):
            continue
        tree = pot.Tree.in_memory()
        for i, x in enumerate(nodes[:k + 1]):
            tree.append(forged_output(x) if i == k else x)
        honest = r.open_op_node(a["pre"], entry, samples, k, run_id=run_id)
        o = Opening(honest)
        o.node = forged_output(nodes[k])
        o.inclusion = tree.inclusion_proof(k, k + 1)
        o.consistency = tree.consistency_proof(k, k + 1) if k else b""
        ruling = r.referee_decide_op(a["pre"], pot.safetensors_digest_file(a["pre"]), entry, samples, k,
                                     agreed_root=t.root(k), a_root=t.root(k + 1), b_root=tree.root(k + 1),
                                     a_opening=honest, b_opening=o.encode(), run_id=run_id)
        if (ruling.rule, ruling.a_loses, ruling.b_loses) == ("operator", False, True):
            out["decided"] += 1
        else:
            out["wrong"].append([k, pot.op_node_json(nodes[k])["name"], str(ruling)])
print(json.dumps(out))
"""


def test_a_referee_on_other_threads_and_kernels_decides_a_pot_repro_step(tmp_path):
    """Disputes across hardware: a miner's pot-repro/1 step traced on one
    thread with this CPU's kernels, and a referee on two threads with ATen's
    default kernels (another hardware class, which a native task's referee
    refuses). The referee's own trace has the miner's root, and every other
    operator of the step (forward, backward, SGD with momentum), forged in
    its result, is decided for the honest party by running it alone."""
    import hashlib
    from test_op_trace import write_step
    torch.manual_seed(0)
    model = Mlp()
    gens = [torch.Generator().manual_seed(i) for i in range(4)]
    program, spec, samples, pre, entry = write_step(
        tmp_path, model, [{"x": torch.randn(FEATURES, generator=g), "y": torch.randint(0, CLASSES, (), generator=g)}
                          for g in gens], 0.01, optimizer={"kind": "sgd", "lr": 0.01, "momentum": 0.9,
                                                          "weight_decay": 0.01})
    spec = {k: v for k, v in spec.items() if k not in ("intra_op_threads", "hardware_class")}
    spec.update(arithmetic=REPRO, batch_size=4)
    run_id = hashlib.sha256(b"the repro dispute").digest()
    torch.set_num_threads(1)
    with pot.Spec(spec) as s, pot.Replay(s, program) as r, r.trace(pre, entry, samples, run_id=run_id) as t:
        root, n = t.root(len(t)).hex(), len(t)
    paths = [str(tmp_path / f"s{i}.safetensors") for i in range(len(samples))]  # write_step's files
    args = tmp_path / "referee.json"
    args.write_text(json.dumps({"spec": spec, "program": str(program), "pre": str(pre), "samples": paths,
                                "entry": entry.hex(), "run_id": run_id.hex(), "every": 2}))
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default", OMP_NUM_THREADS="2")
    child = subprocess.run([sys.executable, "-c", REFEREE, str(args), os.path.dirname(os.path.abspath(__file__))],
                           env=env, capture_output=True, text=True)
    assert child.returncode == 0, child.stderr
    out = json.loads(child.stdout.splitlines()[-1])
    assert "aten:default" in out["class"], out["class"]
    assert out["root"] == root, "the referee's trace of the step differs from the miner's"
    assert out["wrong"] == [], out["wrong"]
    assert out["decided"] > n // 6, (out["decided"], n)


def test_a_spec_under_the_arithmetic_refuses_a_thread_count_or_class():
    base = {"framework": "pytorch", "framework_version": "1.13.1", "model_program_digest": "00" * 32,
            "dtype": "F32", "attention_backend": "math", "dropout": 0.0,
            "optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": 8, "seed_policy": {"kind": "none"},
            "norm_bucket_resolution": 16, "arithmetic": REPRO}
    spec = pot.Spec.from_json(base)
    assert spec.to_dict()["arithmetic"] == REPRO
    with pytest.raises(pot.InvalidArgumentError, match="same bits on every thread count"):
        pot.Spec.from_json(dict(base, intra_op_threads=2))
    with pytest.raises(pot.InvalidArgumentError, match="same bits on every CPU"):
        pot.Spec.from_json(dict(base, hardware_class="cpu-x86_64/aten:avx2/onednn:avx2"))
    for dtype in ("F64", "F16"):
        with pytest.raises(pot.InvalidArgumentError, match=r"defines binary32 \(F32\) and bfloat16 \(BF16\)"):
            pot.Spec.from_json(dict(base, dtype=dtype))
    assert pot.Spec.from_json(dict(base, dtype="BF16")).to_dict()["dtype"] == "BF16"
    with pytest.raises(pot.UnsupportedError, match="pot-repro/2"):
        pot.Spec.from_json(dict(base, arithmetic="pot-repro/2"))
