"""pot.torch.LightningCallback: a Lightning (lightning.pytorch) training
run recorded by a pot.torch.Recorder (docs/python.md "Lightning").

Imported on first use of pot.torch.LightningCallback, so that pot.torch
does not need Lightning.
"""

from __future__ import annotations

from typing import Any

import torch

try:
    import lightning.pytorch as pl
except ImportError:  # the older package name
    import pytorch_lightning as pl  # type: ignore[no-redef]

from ._errors import InvalidArgumentError

# Lightning's precision names for the spec's dtypes.
_PRECISION = {"F32": ("32-true", "32"), "F64": ("64-true", "64")}


class LightningCallback(pl.Callback):  # type: ignore[misc]
    """Records every training batch of a Lightning Trainer with
    `recorder`: the batch compared with the committed one and begin_step at
    on_train_batch_start, end_step with training_step's loss at
    on_train_batch_end, finish at on_train_end.

    The recorder's module is the program: the LightningModule itself when
    its forward takes the batch's tensors and returns the loss that
    training_step returns, or a with_loss(...) of the model it holds. Its
    parameters must be the LightningModule's. The loader is the one the
    module or datamodule returns; its order is planned with
    pot.torch.plan_schedule(loader, steps, stops_at_length=True) before
    training (Lightning ends an epoch after len(loader) batches; a
    shuffling loader needs a generator). A batch is a mapping of the sample tensors by name or a
    tuple in the program forward's order.

    Refused when training begins, naming the setting: manual optimization,
    accumulate_grad_batches other than 1, a precision other than the spec's
    dtype ("32-true" for F32), more than one device, optimizers other than
    the recorder's, and clipping (gradient_clip_val and
    gradient_clip_algorithm) other than the spec's. The learning rate
    scheduler is the spec's: make_spec(scheduler=..., lr_every=1) for
    interval "step", lr_every=len(loader) for "epoch"; the recorder refuses
    any other rate at the step that trains at it."""

    def __init__(self, recorder: Any) -> None:
        super().__init__()
        self.recorder = recorder

    def _refuse(self, what: str) -> None:
        raise InvalidArgumentError(f"LightningCallback: {what}")

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        rec = self.recorder
        if not pl_module.automatic_optimization:
            self._refuse("manual optimization: the callback records Lightning's automatic optimization (one "
                         "optimizer step per batch)")
        rec._check_start(trainer.global_step, "LightningCallback", "trainer.fit(..., ckpt_path=...)")
        if trainer.accumulate_grad_batches != 1:
            self._refuse(f"accumulate_grad_batches={trainer.accumulate_grad_batches}: a step is one forward and "
                         "backward of one batch here")
        spec = rec.spec.to_dict()
        dtype = str(spec.get("dtype", "F32"))
        if str(trainer.precision) not in _PRECISION.get(dtype, ()):
            self._refuse(f"precision '{trainer.precision}', the spec's dtype is {dtype}: the replay computes in the "
                         f"spec's dtype (Trainer(precision='{_PRECISION.get(dtype, ('?',))[0]}'))")
        if trainer.world_size != 1:
            self._refuse(f"{trainer.world_size} processes: a recorded run trains on one device")
        opts = list(trainer.optimizers)
        mine = rec.optimizer if isinstance(rec.optimizer, (list, tuple)) else [rec.optimizer]
        if len(opts) != len(mine) or any(a is not b for a, b in zip(opts, mine)):
            self._refuse("configure_optimizers returned other optimizers than the recorder's: return the "
                         "optimizer (and scheduler) the task was made from")
        ours = {id(p) for p in rec.model.parameters()}
        theirs = {id(p) for p in pl_module.parameters() if p.requires_grad}
        if not theirs <= ours:
            self._refuse("the LightningModule trains parameters the recorder's program does not hold: record the "
                         "LightningModule, or with_loss(...) of the model it trains")
        clip = float(trainer.gradient_clip_val or 0.0)
        algorithm = trainer.gradient_clip_algorithm or "norm"
        algorithm = str(getattr(algorithm, "value", algorithm))  # an enum: GradClipAlgorithmType.NORM
        norm, value = float(spec.get("grad_clip_max_norm", 0.0)), float(spec.get("grad_clip_value", 0.0))
        want = (norm, 0.0) if norm else (0.0, value)
        have = (clip, 0.0) if algorithm == "norm" else (0.0, clip)
        if have != want:
            self._refuse(f"gradient_clip_val={trainer.gradient_clip_val} (gradient_clip_algorithm "
                         f"'{algorithm}'), the spec's grad_clip_max_norm is {norm} and grad_clip_value {value}")

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        # Compared before begin_step: a batch of another order is refused
        # with nothing begun.
        self.recorder.check_batch(batch, where="LightningCallback")
        self.recorder.begin_step()

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if not isinstance(loss, torch.Tensor):
            self._refuse(f"step {self.recorder._step}: training_step returned no loss")
        self.recorder.end_step(loss)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.recorder.finish()
