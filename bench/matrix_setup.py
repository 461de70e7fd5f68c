"""The replay matrix's training setup, shared by the measurement scripts of
bench/ (gradient_dependence, subnormal_census, state_flags): the models and
data of tests/replay/train.py, its optimizers' hyper-parameters and a cosine
schedule over the run."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "replay"))
import train as T  # noqa: E402,F401  (re-exported: the scripts use T.build_task and T.make_samples)


def make_optimizer(optim, params):
    """tests/replay/train.py's hyper-parameters for "sgd", "adam", "adamw"."""
    if optim == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    cls = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[optim]
    return cls(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)


def matrix_run(model_name, optim, dtype, steps, n_samples=64):
    """(model task, samples, optimizer, scheduler, the samples' tensor names)
    of one configuration, every script seeding it alike."""
    torch.manual_seed(1)
    task = T.build_task(model_name).to(dtype)
    samples = T.make_samples(model_name, n_samples, 7, dtype)
    opt = make_optimizer(optim, list(task.parameters()))
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    return task, samples, opt, sched, list(samples[0].keys())
