#!/usr/bin/python3
"""PyTorch trainer side of the pot replay determinism test.

Trains a small model on a synthetic data set for N steps and records
everything the C++ LibTorch replay (src/replay/) needs to re-execute each
step and compare bits: the TorchScript program, the samples, the schedule,
the execution spec and the canonical state S_t after every step.

    /usr/bin/python3 tests/replay/train.py --out DIR --model mlp --optim adamw --dtype f32 --steps 3

Run directory (see tests/replay/README.md):

    DIR/program.pt                  torch.jit.script(task).save(), before any step
    DIR/samples/%06d.safetensors    sample i of the data set (tensor names = forward argument names)
    DIR/states/%06d.safetensors     canonical state S_t (t = 0 before step 1)
    DIR/spec.json                   execution spec (docs/cli.md "Execution spec")
    DIR/schedule.json               explicit schedule (docs/cli.md "Explicit schedule"):
                                    [[[idx, ...] per micro-batch] per step]
    DIR/task.json                   the task the run answers to (docs/cli.md "Task"): its S_0,
                                    listed schedule and dataset, one bitwise challenge
    DIR/commitment.json             the run's training commitment (miner --identity)
    DIR/run.json                    run description (with the run id), per-step losses and timings

Everything a commitment binds is fixed before step 1: the schedule is
planned from a twin of the data loader, and the run id is computed with
tests/interop/independent.py (written from docs/PROTOCOL.md alone), because
per-step seeds name the run (section 9). pot_record_run computes the same
commitment through the C API; the tests check that the two run ids agree.

Every file is byte-identical between two runs with the same arguments,
except the "step_seconds" of run.json (wall-clock timings).
"""

import argparse
import io
import json
import math
import os
import shutil
import struct
import sys
import time

# TorchScript stores a module's __constants__ in the order of a Python set of
# strings, which follows the per-process string hash: program.pt differs from
# run to run unless the hash seed is fixed. Re-execute with PYTHONHASHSEED=0.
if __name__ == "__main__" and os.environ.get("PYTHONHASHSEED") != "0":
    os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, PYTHONHASHSEED="0"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import Tensor  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import independent  # noqa: E402
import potstate  # noqa: E402

DROPOUT = 0.1
NUM_CLASSES = 4
# The release of the torch training here: Debian's python3-torch 1.13.1
# reports __version__ "1.13.0a0"; PyPI's wheels "2.15.0+cu132" (the local
# part names the CUDA build, which the CPU kernels do not depend on).
TORCH_RELEASE = "1.13.1" if torch.__version__.startswith("1.13.") else torch.__version__.split("+")[0]

# --------------------------------------------------------------------------
# Models. Each Task's forward takes the sample tensors by name and returns
# the scalar cross-entropy loss.


def mlp(d_in: int, hidden: int, n_out: int, p: float) -> nn.Module:
    return nn.Sequential(
        nn.Linear(d_in, hidden), nn.LayerNorm(hidden), nn.GELU(), nn.Dropout(p),
        nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.GELU(), nn.Dropout(p),
        nn.Linear(hidden, n_out),
    )


class CNN(nn.Module):
    def __init__(self, n_out: int, p: float):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.drop = nn.Dropout(p)
        self.fc = nn.Linear(8 * 4 * 4, n_out)

    def forward(self, x: Tensor) -> Tensor:
        h = self.drop(self.pool(F.relu(self.bn(self.conv(x)))))
        return self.fc(torch.flatten(h, 1))


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, n_head: int, p: float):
        super().__init__()
        assert d % n_head == 0
        self.n_head = n_head
        self.head_dim = d // n_head
        self.sqrt_head_dim = math.sqrt(self.head_dim)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.attn_drop = nn.Dropout(p)
        self.resid_drop = nn.Dropout(p)

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / self.sqrt_head_dim
        causal = torch.tril(torch.ones([T, T], dtype=torch.bool, device=x.device))
        att = att.masked_fill(causal.logical_not(), float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_drop(att)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.proj(y))


class Block(nn.Module):
    def __init__(self, d: int, n_head: int, p: float):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, n_head, p)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.Dropout(p))

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """A small GPT: token + learned position embeddings, pre-LN blocks, tied head."""

    def __init__(self, vocab: int, d: int, n_layer: int, n_head: int, context: int, p: float):
        super().__init__()
        self.context = context
        self.wte = nn.Embedding(vocab, d)  # registered before head: its name is kept for the tie
        self.wpe = nn.Embedding(context, d)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList([Block(d, n_head, p) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.apply(self._init)
        self.head.weight = self.wte.weight  # tied embeddings

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, idx: Tensor) -> Tensor:
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class ClassifierTask(nn.Module):
    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        return F.cross_entropy(self.net(x), y)


class LanguageModelTask(nn.Module):
    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, tokens: Tensor) -> Tensor:
        logits = self.net(tokens[:, :-1])
        targets = tokens[:, 1:]
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


# model -> (vocab, d, layers, heads, context) for the GPTs
GPT_CONFIGS = {
    "transformer": (64, 32, 2, 2, 16),
    "transformer5m": (2048, 256, 6, 4, 64),
}
DATASET_SIZES = {"mlp": 256, "cnn": 256, "transformer": 128, "transformer5m": 128}


def build_task(model: str) -> nn.Module:
    if model == "mlp":
        return ClassifierTask(mlp(16, 64, NUM_CLASSES, DROPOUT))
    if model == "cnn":
        return ClassifierTask(CNN(NUM_CLASSES, DROPOUT))
    vocab, d, layers, heads, ctx = GPT_CONFIGS[model]
    return LanguageModelTask(GPT(vocab, d, layers, heads, ctx, DROPOUT))


# --------------------------------------------------------------------------
# Synthetic data, from its own generator (the global RNG is not touched).


def make_samples(model: str, n: int, data_seed: int, dtype: torch.dtype) -> list:
    g = torch.Generator().manual_seed(data_seed)
    samples = []
    if model in ("mlp", "cnn"):
        d_in = 16 if model == "mlp" else 64
        teacher = torch.randn(d_in, NUM_CLASSES, generator=g, dtype=torch.float64)
        for _ in range(n):
            x = torch.randn(d_in, generator=g, dtype=torch.float64)
            noise = 0.5 * torch.randn(NUM_CLASSES, generator=g, dtype=torch.float64)
            y = torch.argmax(x @ teacher + noise).to(torch.int64).reshape(())
            if model == "cnn":
                x = x.reshape(1, 8, 8)
            samples.append({"x": x.to(dtype).contiguous(), "y": y})
    else:
        vocab, _, _, _, ctx = GPT_CONFIGS[model]
        length = ctx + 1
        for _ in range(n):
            # a noisy repeating pattern: a random motif of period 2..8, ~10% of tokens replaced
            period = int(torch.randint(2, 9, (1,), generator=g))
            motif = torch.randint(0, vocab, (period,), generator=g)
            tokens = motif.repeat(length // period + 1)[:length].clone()
            noisy = torch.rand(length, generator=g) < 0.1
            tokens[noisy] = torch.randint(0, vocab, (int(noisy.sum()),), generator=g)
            samples.append({"tokens": tokens.to(torch.int64).contiguous()})
    return samples


class FileDataset(torch.utils.data.Dataset):
    """The samples as read back from DIR/samples: __getitem__ returns (index, {name: tensor})."""

    def __init__(self, paths: list):
        self.samples = [potstate.read_safetensors(p) for p in paths]

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int):
        return i, self.samples[i]


class IndexDataset(torch.utils.data.Dataset):
    """n items that are their own index: a twin of FileDataset for planning the schedule."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        return i


def tensor_digests(tensors: dict) -> dict:
    """name -> tensor digest (PROTOCOL.md section 4), by the independent implementation."""
    return {name: independent.tensor_digest(name, potstate.dtype_name(t.dtype), list(t.shape),
                                            potstate.tensor_bytes(t))
            for name, t in tensors.items()}


def sample_digest(tensors: dict) -> bytes:
    """Section 15: the state-digest construction under the tag pot/v1/sample."""
    d = tensor_digests(tensors)
    names = sorted(d, key=lambda s: s.encode("utf-8"))
    return independent.tagged("pot/v1/sample", struct.pack("<Q", len(names)) +
                              independent.mth([d[k] for k in names]))


def batches(loader):
    while True:  # epochs until the caller stops
        for item in loader:
            yield item


# --------------------------------------------------------------------------


def parse_steps(text: str, n: int) -> set:
    """'0,2,5-7' -> {0, 2, 5, 6, 7}; 'all' -> 0..n; 'none' -> {}; 'last' allowed."""
    text = text.strip()
    if text == "all":
        return set(range(n + 1))
    out = set()
    if text in ("", "none"):
        return out
    for part in text.split(","):
        part = part.strip()
        if part == "last":
            out.add(n)
        elif "-" in part:
            a, b = part.split("-", 1)
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    bad = [s for s in out if not 0 <= s <= n]
    if bad:
        raise SystemExit("--dump-states: steps %s outside 0..%d" % (sorted(bad), n))
    return out


# The optimizers of the matrix and their hyper-parameters (the spec's JSON
# form, docs/cli.md): each kind's update paths (weight decay, momentum,
# centering...) on, with values that make a wrong port visible.
OPTIMIZER_KINDS = {
    "sgd": {"lr": 0.05, "momentum": 0.9, "dampening": 0.0, "nesterov": True, "weight_decay": 1e-4},
    "adam": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01},
    "adamw": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01},
    "adadelta": {"lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 1e-4},
    "adagrad": {"lr": 0.01, "lr_decay": 1e-3, "weight_decay": 1e-4, "initial_accumulator_value": 0.1,
                "eps": 1e-10},
    "rmsprop": {"lr": 1e-3, "alpha": 0.99, "eps": 1e-8, "weight_decay": 1e-4, "momentum": 0.9, "centered": True},
    "adamax": {"lr": 2e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 1e-4},
    "nadam": {"lr": 2e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 1e-4, "momentum_decay": 4e-3},
    "radam": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 1e-4},
    "muon": {"lr": 0.02, "weight_decay": 0.1, "momentum": 0.95, "nesterov": True, "ns_a": 3.4445, "ns_b": -4.7750,
             "ns_c": 2.0315, "ns_steps": 5, "eps": 1e-7, "adjust_lr_fn": "original"},
}


def optimizer_config(kind: str, a) -> dict:
    cfg = dict(OPTIMIZER_KINDS[kind], kind=kind)
    if kind in ("adam", "adamw"):
        cfg["amsgrad"] = bool(a.amsgrad)
    if a.maximize and kind != "muon":
        cfg["maximize"] = True
    if a.decoupled and kind in ("nadam", "radam"):
        cfg["decoupled_weight_decay"] = True
    return cfg


def torch_group_options(cfg: dict) -> dict:
    """The torch.optim keyword arguments of a spec optimizer config."""
    out = {k: v for k, v in cfg.items() if k not in ("kind", "beta1", "beta2", "ns_a", "ns_b", "ns_c")}
    if "beta1" in cfg:
        out["betas"] = (cfg["beta1"], cfg["beta2"])
    if "ns_a" in cfg:
        out["ns_coefficients"] = (cfg["ns_a"], cfg["ns_b"], cfg["ns_c"])
    return out


def make_optimizer(cfg: dict, groups: list):
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
           "adadelta": torch.optim.Adadelta, "adagrad": torch.optim.Adagrad, "rmsprop": torch.optim.RMSprop,
           "adamax": torch.optim.Adamax, "nadam": torch.optim.NAdam, "radam": torch.optim.RAdam,
           "muon": getattr(torch.optim, "Muon", None)}[cfg["kind"]]
    if cls is None:
        raise SystemExit("torch %s has no torch.optim.Muon" % torch.__version__)
    return cls(groups, **torch_group_options(cfg))


def loss_bits(d: float) -> str:
    return struct.pack(">d", d).hex()


def write_json(path, obj) -> None:
    potstate.write_bytes_atomic(path, (json.dumps(obj, indent=1) + "\n").encode("utf-8"))


def forward_arg_names(scripted) -> list:
    args = [a.name for a in scripted.forward.schema.arguments]
    if not args or args[0] != "self":
        raise RuntimeError("unexpected forward schema %s" % scripted.forward.schema)
    return args[1:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="Train a small model for N steps and record program, samples, schedule, spec and "
                    "canonical states S_0..S_N for the C++ replay.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--out", required=True, help="run directory (created; existing samples/ and states/ are replaced)")
    ap.add_argument("--model", required=True, choices=["mlp", "transformer", "cnn", "transformer5m"])
    ap.add_argument("--optim", required=True, choices=sorted(OPTIMIZER_KINDS))
    ap.add_argument("--amsgrad", action="store_true", help="adam/adamw: amsgrad=True")
    ap.add_argument("--maximize", action="store_true", help="maximize=True (every optimizer but muon)")
    ap.add_argument("--decoupled", action="store_true", help="nadam/radam: decoupled_weight_decay=True (torch 2.x)")
    ap.add_argument("--groups", type=int, default=1, choices=[1, 2],
                    help="2: a second parameter group (the parameters of fewer than 2 dimensions) without weight "
                         "decay and at half the rate; muon: always 2 (muon for the matrices, adamw for the rest, "
                         "two optimizers)")
    ap.add_argument("--clip-value", type=float, default=0.0, help="clip_grad_value_ clip value; 0 = none")
    ap.add_argument("--dtype", default="f32", choices=["f32", "f64", "bf16"],
                    help="parameter and input dtype (task.to(dtype) before the optimizer is built)")
    ap.add_argument("--clip", type=float, default=0.0, help="clip_grad_norm_ max norm; 0 = no clipping")
    ap.add_argument("--accum", type=int, default=1, help="micro-batches per step (gradient accumulation)")
    ap.add_argument("--steps", type=int, default=20, help="optimizer steps")
    ap.add_argument("--t-max", type=int, default=0, help="T_max of the cosine LR schedule (default: --steps)")
    ap.add_argument("--batch", type=int, default=8, help="samples per step (a multiple of --accum)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--seed-policy", default="per_step", choices=["per_step", "single_seed"],
                    help="per_step: torch.manual_seed(step_seed(base, t)) before step t; single_seed: "
                         "torch.manual_seed(base) once, the RNG state is part of each state (rng/cpu)")
    ap.add_argument("--base-seed", type=int, default=20261130, help="per_step base seed / single_seed seed")
    ap.add_argument("--data-seed", type=int, default=7, help="seed of the synthetic data and of the shuffle")
    ap.add_argument("--init-seed", type=int, default=1, help="torch.manual_seed before building the model")
    ap.add_argument("--dataset-size", type=int, default=0,
                    help="number of samples (0: 256 for mlp/cnn, 128 for the transformers)")
    ap.add_argument("--skip-seed", action="store_true",
                    help="negative test: per_step run that does NOT reseed before each step "
                         "(the spec still claims per_step, so a replay should not match)")
    ap.add_argument("--identity", default="6d696e6572",
                    help="the miner identity of the run's commitment (hex; default \"miner\")")
    ap.add_argument("--dump-states", "--no-dump-states-except", dest="dump_states", default="all",
                    help="which states S_t to write: 'all', 'none', or a list like '0,1,5-7,last'")
    a = ap.parse_args(argv)

    if a.steps < 1 or a.accum < 1 or a.batch < 1 or a.threads < 1:
        ap.error("--steps, --accum, --batch and --threads must be >= 1")
    if a.batch % a.accum:
        ap.error("--batch must be a multiple of --accum")
    if a.skip_seed and a.seed_policy != "per_step":
        ap.error("--skip-seed only applies to --seed-policy per_step")
    if not 0 <= a.base_seed < 2 ** 64 or not 0 <= a.data_seed < 2 ** 63 or not 0 <= a.init_seed < 2 ** 64:
        ap.error("seeds must be unsigned 64-bit (data seed: below 2^63)")
    dump = parse_steps(a.dump_states, a.steps)

    torch.set_num_threads(a.threads)
    dtype = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16}[a.dtype]
    n = a.dataset_size or DATASET_SIZES[a.model]
    if n < a.batch:
        ap.error("the data set (%d samples) is smaller than a batch" % n)

    out = a.out
    os.makedirs(out, exist_ok=True)
    for sub in ("samples", "states"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
        os.makedirs(os.path.join(out, sub))

    # 1. data: written to DIR/samples, then trained on as read back
    sample_paths = []
    for i, s in enumerate(make_samples(a.model, n, a.data_seed, dtype)):
        p = os.path.join(out, "samples", "%06d.safetensors" % i)
        potstate.write_safetensors(p, s)
        sample_paths.append(p)
    dataset = FileDataset(sample_paths)
    sample_names = sorted(dataset.samples[0], key=lambda s: s.encode("utf-8"))

    # 2. model, program
    torch.manual_seed(a.init_seed)
    task = build_task(a.model)
    if dtype != torch.float32:
        task = task.to(dtype)
    params = sum(p.numel() for p in task.parameters())  # tied weights counted once
    print("model %s: %d parameters" % (a.model, params), flush=True)

    scripted = torch.jit.script(task)
    arg_names = forward_arg_names(scripted)
    if sorted(arg_names, key=lambda s: s.encode("utf-8")) != sample_names:
        raise RuntimeError("forward arguments %s != sample tensor names %s" % (arg_names, sample_names))
    buf = io.BytesIO()  # in memory: the archive's inner folder name does not depend on the path
    torch.jit.save(scripted, buf)
    program_path = os.path.join(out, "program.pt")
    potstate.write_bytes_atomic(program_path, buf.getvalue())
    del scripted, buf
    digest = potstate.program_digest(program_path)

    # 3. optimizer(s), scheduler(s)
    named = list(task.named_parameters())
    if a.optim == "muon" or a.groups == 2:
        first = [(n, p) for n, p in named if p.dim() >= 2]
        second = [(n, p) for n, p in named if p.dim() < 2]
    else:
        first, second = named, []
    cfg0 = optimizer_config(a.optim, a)
    if a.optim == "muon":
        cfg1 = optimizer_config("adamw", a)
    else:
        cfg1 = dict(cfg0, lr=cfg0["lr"] * 0.5)
        if "weight_decay" in cfg1:
            cfg1["weight_decay"] = 0.0
    if second:
        if a.optim == "muon":  # two optimizers, as Muon is used
            opts = [make_optimizer(cfg0, [{"params": [p for _, p in first]}]),
                    make_optimizer(cfg1, [{"params": [p for _, p in second]}])]
        else:  # one optimizer, two groups (decay / no decay, as GPT training code builds them)
            opts = [make_optimizer(cfg0, [{"params": [p for _, p in first]},
                                          dict(torch_group_options(cfg1), params=[p for _, p in second])])]
    else:
        opts = [make_optimizer(cfg0, [{"params": [p for _, p in first]}])]
    t_max = a.t_max or a.steps
    scheds = [torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=t_max) for o in opts]
    opt = opts if len(opts) > 1 else opts[0]
    param_groups = ([{"optimizer": cfg1, "params": sorted((n for n, _ in second), key=lambda x: x.encode("utf-8"))}]
                    if second else [])

    # 4. data order
    def loader_for(ds: torch.utils.data.Dataset) -> torch.utils.data.DataLoader:
        # One definition for the training loader and its planning twin, so
        # the planned schedule is the order the loader gives.
        return torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True,
                                           generator=torch.Generator().manual_seed(a.data_seed),
                                           drop_last=True, num_workers=0)

    stream = batches(loader_for(dataset))
    mb = a.batch // a.accum

    single = a.seed_policy == "single_seed"

    def dump_state(t: int) -> None:
        if t in dump:
            potstate.write_safetensors(os.path.join(out, "states", "%06d.safetensors" % t),
                                       potstate.canonical_state(task, opt, rng=single))

    rng_state = None
    if single:
        torch.manual_seed(a.base_seed)
        rng_state = torch.get_rng_state()
    dump_state(0)

    # 5. everything the commitment binds, before step 1 (per-step seeds name the run)
    spec = {
        "framework": "pytorch",
        "framework_version": TORCH_RELEASE,
        "model_program_digest": digest.hex(),
        "dtype": {"f32": "F32", "f64": "F64", "bf16": "BF16"}[a.dtype],
        "attention_backend": "math",
        "dropout": DROPOUT,
        "optimizer": cfg0,
        "grad_clip_max_norm": float(a.clip),
        "grad_accum_microbatches": a.accum,
        "batch_size": a.batch,
        "deterministic_algorithms": False,
        "intra_op_threads": a.threads,
        "hardware_class": potstate.hardware_class(),
        "seed_policy": ({"kind": "single_seed", "seed": a.base_seed} if single
                        else {"kind": "per_step", "base_seed": a.base_seed}),
        "norm_bucket_resolution": 16,
        "lr_schedule": {"phases": [{"kind": "cosine", "t_max": t_max, "eta_min": 0.0}]},
    }
    if param_groups:
        spec["param_groups"] = param_groups
    if a.clip_value > 0:
        spec["grad_clip_value"] = float(a.clip_value)
    s0 = potstate.canonical_state(task, opt, rng=single)
    initial = independent.state_digest(tensor_digests(s0))
    del s0
    planned, plan = [], batches(loader_for(IndexDataset(n)))
    for _ in range(a.steps):
        idx = [int(i) for i in next(plan)]
        planned.append([idx[i * mb:(i + 1) * mb] for i in range(a.accum)])
    dataset_root = independent.mth([sample_digest(x) for x in dataset.samples])
    schedule_root = independent.mth([independent.schedule_entry(t + 1, e) for t, e in enumerate(planned)])
    task_json = {
        "owner": "6f776e6572", "spec": spec, "dataset_root": dataset_root.hex(), "dataset_size": n,
        "initial_state": {"published_digest": initial.hex()}, "schedule": {"listed_root": schedule_root.hex()},
        "min_steps": a.steps, "max_steps": a.steps, "challenge_policy": {"rounds": 1, "mode": "bitwise", "committee_size": 1}, "end_height": 1000000,
    }
    commitment_json = {
        "task_id": independent.task_id(task_json).hex(), "initial_state_digest": initial.hex(),
        "schedule_root": schedule_root.hex(), "dataset_root": dataset_root.hex(), "dataset_size": n,
        "spec_digest": independent.spec_digest(spec).hex(), "declared_steps": a.steps,
        "miner_identity": a.identity,
    }
    run_id = independent.run_id(commitment_json)

    # 6. steps
    schedule, losses, seconds = [], [], []
    for t in range(1, a.steps + 1):
        before = torch.get_rng_state()
        idx, batch = next(stream)  # fetched before seeding; must not touch the global RNG
        if not torch.equal(before, torch.get_rng_state()):
            raise RuntimeError("the data loader used the global RNG")
        idx = [int(i) for i in idx]
        schedule.append([idx[i * mb:(i + 1) * mb] for i in range(a.accum)])
        if schedule[-1] != planned[t - 1]:
            raise RuntimeError("step %d: the loader gave %s, the planned schedule %s" % (t, schedule[-1], planned[t - 1]))

        if a.seed_policy == "per_step" and not a.skip_seed:
            torch.manual_seed(potstate.step_seed(a.base_seed, run_id, t))
        if single:
            torch.set_rng_state(rng_state)
        t0 = time.perf_counter()
        task.train()
        total = 0.0
        for i in range(a.accum):
            args = [batch[name][i * mb:(i + 1) * mb] for name in arg_names]
            loss_i = task(*args) / a.accum
            loss_i.backward()
            d = float(loss_i)  # exact widening to binary64
            total = d if i == 0 else total + d
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(task.parameters(), a.clip)
        if a.clip_value > 0:
            torch.nn.utils.clip_grad_value_(task.parameters(), a.clip_value)
        for o in opts:
            o.step()
        for sc in scheds:
            sc.step()
        for o in opts:
            o.zero_grad(set_to_none=True)
        seconds.append(time.perf_counter() - t0)

        if single:
            rng_state = torch.get_rng_state()
        losses.append(total)
        dump_state(t)
        print("step %d loss %.6f (%s) %.3fs" % (t, total, loss_bits(total), seconds[-1]), flush=True)

    write_json(os.path.join(out, "spec.json"), spec)
    write_json(os.path.join(out, "task.json"), task_json)
    write_json(os.path.join(out, "commitment.json"), commitment_json)
    potstate.write_bytes_atomic(os.path.join(out, "schedule.json"),  # one step per line
                                ("[\n" + ",\n".join(json.dumps(e) for e in schedule) + "\n]\n").encode("ascii"))
    run = {
        "model": a.model, "optim": a.optim, "amsgrad": bool(a.amsgrad), "dtype": a.dtype,
        "maximize": bool(a.maximize), "decoupled": bool(a.decoupled), "groups": 2 if second else 1,
        "clip": float(a.clip), "clip_value": float(a.clip_value), "accum": a.accum, "steps": a.steps, "batch": a.batch,
        "threads": a.threads, "seed_policy": a.seed_policy, "skip_seed": bool(a.skip_seed),
        "base_seed": a.base_seed, "data_seed": a.data_seed, "init_seed": a.init_seed,
        "dataset_size": n, "forward_args": arg_names, "params": params,
        "run_id": run_id.hex(), "task_id": commitment_json["task_id"], "identity": a.identity,
        "dumped_states": sorted(dump),
        "losses": losses, "loss_bits": [loss_bits(d) for d in losses],
        "step_seconds": seconds,
    }
    write_json(os.path.join(out, "run.json"), run)
    print("program digest %s; mean step %.3fs" % (digest.hex(), sum(seconds) / len(seconds)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
