"""pot.torch.TrainerCallback: a Hugging Face transformers.Trainer run
recorded by a pot.torch.Recorder (docs/python.md "Hugging Face Trainer").

Imported on first use of pot.torch.TrainerCallback, so that pot.torch does
not need transformers.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import torch
import transformers

from ._errors import InvalidArgumentError, StateError


def _loss_of(out: Any) -> Optional[torch.Tensor]:
    """The loss a Hugging Face forward returned: element 0 of a tuple
    (torchscript=True, return_dict=False), or .loss of a ModelOutput."""
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        return out[0]
    loss = getattr(out, "loss", None)
    return loss if isinstance(loss, torch.Tensor) else None


class TrainerCallback(transformers.TrainerCallback):  # type: ignore[misc]
    """Records every optimizer step of a transformers.Trainer with
    `recorder`: begin_step at on_step_begin, end_step at on_step_end with
    the loss the model's forward returned, finish at on_train_end.

    The recorder's module is the program: with_loss(model, inputs=[...],
    output=0) of the model the Trainer trains (the Trainer calls the model
    with the batch's tensors by keyword; the program does the same). Add it
    with trainer.add_callback(callback) or Trainer(..., callbacks=[...]).
    The callback takes num_items_in_batch out of the model's arguments: with
    one batch per step the Trainer's sum / num_items_in_batch is the model's
    own mean, which is what the program computes (the replay needs the same
    bits, not only the same value).

    Refused when training begins, naming the argument: gradient
    accumulation, mixed precision (fp16/bf16), torch_compile, more than one
    device, a Trainer optimizer that is not the recorder's, clipping other
    than the spec's (TrainingArguments.max_grad_norm is
    grad_clip_max_norm). Refused at each step, before its forward: a batch
    that is not the committed schedule's (plan it with
    pot.torch.plan_schedule(trainer.get_train_dataloader(), steps))."""

    def __init__(self, recorder: Any) -> None:
        program = recorder.model
        model = getattr(program, "model", None)
        if not isinstance(model, torch.nn.Module):
            raise InvalidArgumentError(
                "TrainerCallback: the recorder's module is not a with_loss(model, ...) wrapper: the Trainer calls "
                "the model, which returns (loss, logits, ...); record pot.torch.with_loss(model, inputs=[...], "
                "output=0) and hand the model itself to the Trainer")
        self.recorder, self.model = recorder, model
        self._training = False
        self._loss: Optional[torch.Tensor] = None
        self._forwards = 0
        self._hooks = [model.register_forward_pre_hook(self._before_forward, with_kwargs=True),
                       model.register_forward_hook(self._after_forward)]

    # -- the checks -----------------------------------------------------
    def _refuse(self, what: str) -> None:
        raise InvalidArgumentError(f"TrainerCallback: {what}")

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if kwargs.get("model") is not None and kwargs["model"] is not self.model:
            self._refuse("the Trainer trains another model than the recorder's program holds (hand the Trainer "
                         "the model given to with_loss)")
        self.recorder._check_start(state.global_step, "TrainerCallback", "trainer.train(resume_from_checkpoint=...)")
        if args.gradient_accumulation_steps != 1:
            self._refuse(f"gradient_accumulation_steps={args.gradient_accumulation_steps}: a step is one forward "
                         "and backward of one batch here (the Trainer scales accumulated losses its own way)")
        if args.fp16 or args.bf16:
            self._refuse("mixed precision (fp16/bf16): the replay computes in the spec's dtype")
        if getattr(args, "torch_compile", False):
            self._refuse("torch_compile: the replay runs the TorchScript program, not compiled kernels")
        if args.world_size != 1 or args.n_gpu > 1:
            self._refuse(f"{max(args.world_size, args.n_gpu)} devices: a recorded run trains on one")
        opt = kwargs.get("optimizer")
        inner = getattr(opt, "optimizer", opt)  # accelerate's AcceleratedOptimizer wraps it
        if inner is not None and inner is not self.recorder.optimizer:
            self._refuse("the Trainer's optimizer is not the recorder's: create the optimizer and scheduler first "
                         "and pass Trainer(..., optimizers=(optimizer, scheduler))")
        spec = self.recorder.spec.to_dict()
        clip = float(args.max_grad_norm or 0.0)
        if spec.get("grad_clip_value", 0.0):
            self._refuse(f"the spec clips by value ({spec['grad_clip_value']}); the Trainer clips by norm only")
        if clip != float(spec.get("grad_clip_max_norm", 0.0)):
            self._refuse(f"TrainingArguments.max_grad_norm={args.max_grad_norm}, the spec's grad_clip_max_norm is "
                         f"{spec.get('grad_clip_max_norm', 0.0)}: the Trainer clips by max_grad_norm "
                         "(make_spec(grad_clip_max_norm=args.max_grad_norm))")

    def _before_forward(self, module: torch.nn.Module, args: Tuple[Any, ...],
                        kwargs: Dict[str, Any]) -> Optional[Tuple[Tuple[Any, ...], Dict[str, Any]]]:
        if not self._training or not module.training:
            return None  # an evaluation, outside the recorded steps
        t = self.recorder._step
        if self._forwards:
            self._refuse(f"step {t}: a second training forward in one step")
        if args:
            self._refuse(f"step {t}: the model is called with {len(args)} positional arguments; the Trainer passes "
                         "the batch by keyword")
        # With one batch per step the Trainer's sum / num_items_in_batch is
        # the model's own mean; the program computes the mean, so the model
        # does too (the same value, in the program's bits).
        kwargs = {k: v for k, v in kwargs.items() if k != "num_items_in_batch"}
        self.recorder.check_batch(kwargs, where="TrainerCallback")
        return args, kwargs

    def _after_forward(self, module: torch.nn.Module, args: Tuple[Any, ...], out: Any) -> None:
        if not self._training or not module.training:
            return
        self._forwards += 1
        self._loss = _loss_of(out)

    # -- the steps ------------------------------------------------------
    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._loss, self._forwards = None, 0
        self.recorder.begin_step()
        self._training = True

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._training = False
        t = self.recorder._step
        if self._loss is None:
            self._refuse(f"step {t}: the model's forward returned no loss (a batch without labels, or a model "
                         "that returns none)")
        self.recorder.end_step(self._loss)
        self._loss = None

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._training = False
        self.recorder.finish()

    def remove(self) -> None:
        """Removes the callback's hooks from the model (the recorder stays
        open)."""
        for h in self._hooks:
            h.remove()
        self._hooks = []
