"""pot.torch.LightningCallback: a Lightning Trainer run recorded,
self-checked and verified, and each way a Lightning run departs from its
task refused by name before the step is recorded (torch 2.x with Lightning:
the torch2 stage)."""
import os

import pytest

torch = pytest.importorskip("torch")
import pot  # noqa: E402
from conftest import assert_every_step_verifies  # noqa: E402
import pot.torch as pt  # noqa: E402

if not pot.replay_available():
    pytest.skip("libpot was built without LibTorch", allow_module_level=True)
if not os.environ.get("POT_REQUIRE_FRAMEWORKS"):
    pytest.importorskip("lightning")
import lightning.pytorch as L  # noqa: E402

STEPS, BATCH, N = 7, 4, 12  # three batches an epoch: the run crosses two epoch ends


def samples(seed=5):
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(N, 6, generator=g), torch.randint(0, 3, (N,), generator=g)
    return [{"x": x[i], "y": y[i]} for i in range(N)]


class Lit(L.LightningModule):
    """A LightningModule as its users write one: the network, a
    training_step computing the loss from the batch, configure_optimizers
    returning an optimizer and a scheduler with its interval."""

    def __init__(self, interval="step", lr=0.05):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Dropout(0.1),
                                       torch.nn.Linear(16, 3))
        self.interval = interval
        self.opt = torch.optim.AdamW(self.parameters(), lr=lr, weight_decay=0.01)
        self.sched = (torch.optim.lr_scheduler.LambdaLR(self.opt, lambda s: min(1.0, (s + 1) / 3)) if interval == "step"
                      else torch.optim.lr_scheduler.StepLR(self.opt, step_size=1, gamma=0.5))

    def training_step(self, batch, batch_idx):
        loss = torch.nn.functional.cross_entropy(self.net(batch["x"]), batch["y"])
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return {"optimizer": self.opt, "lr_scheduler": {"scheduler": self.sched, "interval": self.interval}}


def loader(seed=7):
    return torch.utils.data.DataLoader(samples(), batch_size=BATCH, shuffle=True, drop_last=True,
                                       generator=torch.Generator().manual_seed(seed))


def trainer(**kw):
    args = dict(max_steps=STEPS, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                enable_progress_bar=False, enable_model_summary=False, gradient_clip_val=1.0)
    args.update(kw)
    return L.Trainer(**args)


def recorder(tmp_path, lit, train_loader, plan_loader=None, spec_interval=None):
    """The task owner's part, then the miner's recorder."""
    program = pt.with_loss(lit.net, torch.nn.functional.cross_entropy, target="y", inputs=["x"])
    path = str(tmp_path / "model.pt")
    pt.save_program(program, path)
    pt.write_dataset(samples(), str(tmp_path / "data"))
    interval = spec_interval or lit.interval
    spec = pt.make_spec(lit.opt, path, dtype=torch.float32, batch_size=BATCH, dropout=0.1, grad_clip_max_norm=1.0,
                        scheduler=lit.sched, steps=STEPS, lr_every=1 if interval == "step" else len(train_loader))
    schedule = pt.plan_schedule(plan_loader or train_loader, STEPS, stops_at_length=True)
    task = pt.make_task(program, lit.opt, spec, dataset_dir=str(tmp_path / "data"), schedule=schedule, owner=b"owner",
                        end_height=10**6, challenge_rounds=2)
    return pt.Recorder(program, lit.opt, task, path, str(tmp_path / "ckpt"), dataset_dir=str(tmp_path / "data"),
                       schedule=schedule, checkpoint_every=2)


@pytest.mark.parametrize("interval", ["step", "epoch"])
def test_a_lightning_run_is_recorded_and_every_step_replays(tmp_path, interval):
    """The honest run: AdamW, a warm-up LambdaLR stepped every batch or a
    StepLR stepped every epoch, clipping at 1.0, dropout, a shuffling
    loader over three epochs: recorded by the callback, step 1
    self-checked, and every step replays to its recorded state."""
    torch.manual_seed(0)
    lit, train_loader = Lit(interval), loader()
    rec = recorder(tmp_path, lit, train_loader)
    trainer(callbacks=[pt.LightningCallback(rec)]).fit(lit, train_loader)
    assert rec.steps_recorded == STEPS  # and on_train_end finished the log
    assert_every_step_verifies(rec, tmp_path / "model.pt", STEPS)
    rec.close()


def test_a_loader_of_another_order_is_refused_at_step_1(tmp_path):
    """Attack: the task's schedule is one loader's order, the Trainer draws
    from another (a miner training on batches of its choosing): refused
    before step 1 begins."""
    torch.manual_seed(0)
    lit = Lit()
    rec = recorder(tmp_path, lit, loader(seed=7), plan_loader=loader(seed=8))
    with pytest.raises(pot.StateError, match="LightningCallback: step 1: the batch is not the committed schedule's"):
        trainer(callbacks=[pt.LightningCallback(rec)]).fit(lit, loader(seed=7))
    assert rec.steps_recorded == 0
    rec.close()


@pytest.mark.parametrize("kw,match", [
    (dict(accumulate_grad_batches=2), "accumulate_grad_batches=2"),
    (dict(gradient_clip_val=0.5), r"gradient_clip_val=0.5 \(gradient_clip_algorithm 'norm'\), the spec's "
                                  r"grad_clip_max_norm is 1.0"),
    (dict(gradient_clip_algorithm="value"), "gradient_clip_algorithm 'value'"),
    (dict(precision="bf16-mixed"), "precision 'bf16-mixed', the spec's dtype is F32"),
])
def test_trainer_settings_the_replay_does_not_follow_are_refused(tmp_path, kw, match):
    """A Lightning Trainer whose settings the task's spec does not describe
    is refused when training begins, naming the setting: no step is
    recorded."""
    torch.manual_seed(0)
    lit, train_loader = Lit(), loader()
    rec = recorder(tmp_path, lit, train_loader)
    with pytest.raises(pot.InvalidArgumentError, match=match):
        trainer(callbacks=[pt.LightningCallback(rec)], **kw).fit(lit, train_loader)
    assert rec.steps_recorded == 0
    rec.close()


def test_another_optimizer_or_scheduler_interval_is_refused(tmp_path):
    """configure_optimizers returning an optimizer the task was not made
    from is refused when training begins; a scheduler stepped every batch
    where the task's is stepped every epoch (a miner warming up faster)
    is refused by the recorder at step 1, which it does not record."""
    torch.manual_seed(0)
    lit, train_loader = Lit("epoch"), loader()
    rec = recorder(tmp_path, lit, train_loader)
    other = Lit("epoch")
    other.net = lit.net
    other.opt = torch.optim.AdamW(lit.parameters(), lr=0.05)
    other.sched = torch.optim.lr_scheduler.StepLR(other.opt, step_size=1, gamma=0.5)
    with pytest.raises(pot.InvalidArgumentError, match="configure_optimizers returned other optimizers than the "
                                                       "recorder's"):
        trainer(callbacks=[pt.LightningCallback(rec)]).fit(other, train_loader)
    lit.interval = "step"
    with pytest.raises(pot.InvalidArgumentError, match=r"end_step: parameter group 0 holds learning rate 0.025 after "
                                                       r"step 1, the spec's schedule gives 0.05 for step 1 and 0.05 "
                                                       r"for step 2"):
        trainer(callbacks=[pt.LightningCallback(rec)]).fit(lit, loader())  # (the refused fit drew a batch)
    assert rec.steps_recorded == 0
    rec.close()


def test_a_trainer_resumed_at_another_step_than_the_recorder_is_refused(tmp_path):
    """A Lightning checkpoint of step 3 resumed (fit(ckpt_path=...)) with a
    recorder that starts at step 0: the Trainer would train step 4 and the
    recorder record it as step 1. Refused when training begins, naming
    both steps."""
    torch.manual_seed(0)
    first = trainer(max_steps=3)
    first.fit(Lit(), loader())
    first.save_checkpoint(str(tmp_path / "step3.ckpt"))
    torch.manual_seed(0)
    lit, train_loader = Lit(), loader()
    rec = recorder(tmp_path, lit, train_loader)
    with pytest.raises(pot.InvalidArgumentError, match=r"LightningCallback: the Trainer starts after step 3, the "
                                                       r"recorder after step 0: resume both from the same step"):
        trainer(callbacks=[pt.LightningCallback(rec)]).fit(lit, loader(), ckpt_path=str(tmp_path / "step3.ckpt"))
    assert rec.steps_recorded == 0
    rec.close()
