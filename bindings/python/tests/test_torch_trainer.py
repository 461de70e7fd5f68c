"""pot.torch.TrainerCallback: a Hugging Face Trainer run recorded and
self-checked, and each way a Trainer run departs from its task refused by
name before the step is recorded (torch 2.x with transformers and
accelerate: the torch2 stage; samples/loops/hf_finetune.py is the whole
script, verified by another process in test_loop_scripts.py)."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
import pot  # noqa: E402
from conftest import assert_every_step_verifies  # noqa: E402
import pot.torch as pt  # noqa: E402

if not pot.replay_available():
    pytest.skip("libpot was built without LibTorch", allow_module_level=True)
if not os.environ.get("POT_REQUIRE_FRAMEWORKS"):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
import safetensors.torch  # noqa: E402
from torch.utils.data import default_collate  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments  # noqa: E402

STEPS, BATCH, BLOCK, VOCAB = 6, 4, 8, 17


class Blocks(torch.utils.data.Dataset):
    def __init__(self, n=20, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.blocks = torch.randint(0, VOCAB, (n, BLOCK), generator=g)

    def __len__(self):
        return len(self.blocks)

    def __getitem__(self, i):
        return {"input_ids": self.blocks[i], "labels": self.blocks[i]}


def trainer_args(tmp_path, **kw):
    args = dict(output_dir=str(tmp_path / "trainer"), max_steps=STEPS, per_device_train_batch_size=BATCH,
                learning_rate=1e-3, warmup_steps=2, weight_decay=0.01, save_strategy="no", report_to=[],
                disable_tqdm=True, seed=0, data_seed=0, optim="adamw_torch", dataloader_drop_last=True,
                logging_steps=100)
    args.update(kw)
    return TrainingArguments(**args)


class Run:
    """The task owner's part, as samples/loops/hf_finetune.py writes it:
    the Trainer's optimizer and schedule, its batch order, the traced
    program; then the miner's recorder and callback."""

    def __init__(self, tmp_path, plan_args=None, resume=False, **kw):
        torch.manual_seed(0)
        self.data = Blocks()
        self.model = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=BLOCK, n_embd=16, n_layer=1, n_head=2))
        self.model.train()
        self.trainer = Trainer(model=self.model, args=trainer_args(tmp_path, **kw), train_dataset=self.data)
        t = self.trainer
        t.create_optimizer_and_scheduler(num_training_steps=STEPS)
        self.program = pt.with_loss(self.model, inputs=["input_ids", "labels"], output=0)
        path = str(tmp_path / "model.pt")
        pt.save_program(self.program, path, example=default_collate([self.data[i] for i in range(BATCH)]))
        if not resume:
            pt.write_dataset((self.data[i] for i in range(len(self.data))), str(tmp_path / "data"))
        spec = pt.make_spec(t.optimizer, path, model=self.program, dtype=torch.float32, batch_size=BATCH,
                            dropout=0.1, grad_clip_max_norm=1.0, scheduler=t.lr_scheduler, steps=STEPS)
        # The plan: the Trainer's loader, or (an attack) another one.
        loader = (Trainer(model=self.model, args=trainer_args(tmp_path, **plan_args), train_dataset=self.data)
                  if plan_args else t).get_train_dataloader()
        schedule = pt.plan_schedule(loader, STEPS)
        task = pt.make_task(self.program, t.optimizer, spec, dataset_dir=str(tmp_path / "data"), schedule=schedule,
                            owner=b"owner", end_height=10**6, challenge_rounds=2)
        self.rec = pt.Recorder(self.program, t.optimizer, task, path, str(tmp_path / "ckpt"),
                               dataset_dir=str(tmp_path / "data"), schedule=schedule, checkpoint_every=2,
                               resume=resume, scheduler=t.lr_scheduler)


def test_a_trainer_run_is_recorded_and_every_step_replays(tmp_path):
    """The honest run: the Trainer's own AdamW (two parameter groups), its
    linear warm-up LambdaLR, clipping at 1.0, GPT-2's dropout, its
    SeedableRandomSampler over two epochs of five batches, the loss it
    computes from num_items_in_batch: recorded by the callback, step 1
    self-checked, and every step replays to its recorded state."""
    run = Run(tmp_path)
    run.trainer.add_callback(pt.TrainerCallback(run.rec))
    run.trainer.train()
    rec = run.rec
    assert rec.steps_recorded == STEPS  # and on_train_end finished the log
    assert_every_step_verifies(rec, tmp_path / "model.pt", STEPS)
    rec.close()


def test_a_trainer_feeding_another_order_is_refused_at_step_1(tmp_path):
    """Attack: the schedule is the order of a loader with another data seed
    (a miner training on batches of its choosing). The callback compares
    the Trainer's batch with the committed one before the forward."""
    run = Run(tmp_path, plan_args=dict(data_seed=1))
    run.trainer.add_callback(pt.TrainerCallback(run.rec))
    with pytest.raises(pot.StateError, match="TrainerCallback: step 1: the batch is not the committed schedule's "
                                              "\\('input_ids' differs\\)"):
        run.trainer.train()
    run.rec.close()


@pytest.mark.parametrize("kw,match", [
    (dict(gradient_accumulation_steps=2), "gradient_accumulation_steps=2"),
    (dict(max_grad_norm=0.5), "max_grad_norm=0.5, the spec's grad_clip_max_norm is 1.0"),
])
def test_trainer_arguments_the_replay_does_not_follow_are_refused(tmp_path, kw, match):
    """A Trainer run with arguments the task's spec does not describe
    (accumulation, another clipping norm) is refused when training begins,
    naming the argument: no step is recorded."""
    run = Run(tmp_path)
    for k, v in kw.items():
        setattr(run.trainer.args, k, v)
    run.trainer.add_callback(pt.TrainerCallback(run.rec))
    with pytest.raises(pot.InvalidArgumentError, match=match):
        run.trainer.train()
    assert run.rec.steps_recorded == 0
    run.rec.close()


def test_a_trainer_with_its_own_optimizer_or_rate_is_refused(tmp_path):
    """The Trainer's optimizer must be the recorder's; a Trainer training
    at a rate the spec does not give (a miner raising learning_rate) is
    refused by the recorder at step 1, which it does not record."""
    run = Run(tmp_path)
    other = Trainer(model=run.model, args=trainer_args(tmp_path), train_dataset=run.data)
    other.add_callback(pt.TrainerCallback(run.rec))
    with pytest.raises(pot.InvalidArgumentError, match="the Trainer's optimizer is not the recorder's"):
        other.train()
    # The miner skips the warm-up: the Trainer builds its scheduler again in
    # train() from its arguments, and step 1 would train at the full rate.
    run.trainer.args.warmup_steps = 0
    run.trainer.add_callback(pt.TrainerCallback(run.rec))
    with pytest.raises(pot.InvalidArgumentError, match=r"begin_step: step 1 would train parameter group 0 at "
                                                       r"learning rate 0.001, the spec's schedule gives 0.0"):
        run.trainer.train()
    assert run.rec.steps_recorded == 0
    run.rec.close()


def test_the_callback_needs_the_loss_wrapper_and_the_samples_tensors(tmp_path):
    """A recorder of the bare model is refused when the callback is made; a
    collator adding a tensor the program does not take (attention_mask) is
    refused at step 1."""
    run = Run(tmp_path)

    class Bare:
        model = None
    with pytest.raises(pot.InvalidArgumentError, match="not a with_loss"):
        pt.TrainerCallback(Bare())

    def with_mask(samples):
        batch = default_collate(samples)
        batch["attention_mask"] = torch.ones_like(batch["input_ids"])
        return batch
    run.trainer.data_collator = with_mask
    run.trainer.add_callback(pt.TrainerCallback(run.rec))
    with pytest.raises(pot.InvalidArgumentError, match=r"TrainerCallback: step 1: the batch holds \(attention_mask, "
                                                       r"input_ids, labels\), the program takes \(input_ids, labels\)"):
        run.trainer.train()
    run.rec.close()


def test_a_traced_gpt2_saves_to_the_same_digest_in_every_process(tmp_path):
    """The program of a Hugging Face model is traced: two processes with
    other hash seeds, weights and example batches write the same file, so
    the same model_program_digest (and run ids)."""
    script = textwrap.dedent('''
        import sys, torch, pot.torch as pt
        from transformers import GPT2Config, GPT2LMHeadModel
        torch.manual_seed(int(sys.argv[2]))
        m = GPT2LMHeadModel(GPT2Config(vocab_size=17, n_positions=8, n_embd=16, n_layer=1, n_head=2))
        m.train()
        x = torch.randint(0, 17, (4, 8))
        program = pt.with_loss(m, inputs=["input_ids", "labels"], output=0)
        print(pt.save_program(program, sys.argv[1], example={"input_ids": x, "labels": x}).hex())
    ''')
    digests = set()
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path / f"p{seed}.pt"), seed], capture_output=True,
                             text=True, env={**os.environ, "PYTHONHASHSEED": seed})
        assert out.returncode == 0, out.stderr[-2000:]
        digests.add(out.stdout.strip())
    assert len(digests) == 1, digests


class Crash(Exception):
    pass


class CrashAt(TrainerCallback):
    """Stops the process's training before step `after + 1` begins, as a
    kill would (the Trainer has saved its checkpoint of step `after`)."""

    def __init__(self, after):
        self.after = after

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == self.after:
            raise Crash(f"stopped after step {self.after}")


def test_a_stopped_trainer_run_resumed_from_both_checkpoints_ends_at_the_uninterrupted_root(tmp_path):
    """A Trainer run stopped after step 4 resumes with the recorder resumed
    from its directory (resume=True) and the Trainer from its checkpoint of
    step 4: the final root is the uninterrupted run's. A Trainer and a
    recorder starting at different steps are refused when training begins,
    naming both steps: the Trainer not resumed (it would train step 1
    again, recorded as step 5), or resumed with a fresh recorder (step 5
    recorded as step 1). A Trainer checkpoint whose weights are not the
    recorder's S_4 is refused by the self-check of step 5."""
    whole = Run(tmp_path / "whole")
    whole.trainer.add_callback(pt.TrainerCallback(whole.rec))
    whole.trainer.train()
    root = whole.rec.root()
    whole.rec.close()

    cut = Run(tmp_path / "cut", save_strategy="steps", save_steps=2)
    cut.trainer.add_callback(CrashAt(4))
    cut.trainer.add_callback(pt.TrainerCallback(cut.rec))
    with pytest.raises(Crash):
        cut.trainer.train()
    cut.rec.close()
    checkpoint = str(tmp_path / "cut" / "trainer" / "checkpoint-4")

    # The Trainer's checkpoint of step 4 with other weights than the
    # recorder's S_4 (another run's, or changed).
    tampered = str(tmp_path / "tampered-checkpoint-4")
    shutil.copytree(checkpoint, tampered)
    weights = safetensors.torch.load_file(os.path.join(tampered, "model.safetensors"))
    name = next(n for n in sorted(weights) if n.endswith("c_fc.weight"))
    weights[name] = weights[name] + 1e-3
    safetensors.torch.save_file(weights, os.path.join(tampered, "model.safetensors"), metadata={"format": "pt"})
    refused = [
        # a fresh recorder beside a resumed Trainer
        ("fresh", False, checkpoint, r"TrainerCallback: the Trainer starts after step 4, the recorder after step 0: "
                                     r"resume both from the same step"),
        # a resumed recorder beside a Trainer started afresh
        ("cut", True, None, "the Trainer starts after step 0, the recorder after step 4"),
        # the Trainer loads its weights over S_4 and trains step 5 from them
        ("cut", True, tampered, r"self-check of step 5: .*The usual causes: this process resumed from checkpoint 4"),
    ]
    for where, resume, trainer_checkpoint, match in refused:
        run = Run(tmp_path / where, resume=resume, save_strategy="steps", save_steps=2)
        run.trainer.add_callback(pt.TrainerCallback(run.rec))
        with pytest.raises(pot.InvalidArgumentError, match=match):
            run.trainer.train(resume_from_checkpoint=trainer_checkpoint)
        run.rec.close()

    again = Run(tmp_path / "cut", resume=True, save_strategy="steps", save_steps=2)
    again.trainer.add_callback(pt.TrainerCallback(again.rec))
    again.trainer.train(resume_from_checkpoint=checkpoint)
    assert again.rec.steps_recorded == STEPS
    assert again.rec.root() == root
    assert_every_step_verifies(again.rec, tmp_path / "cut" / "model.pt", STEPS)
    again.rec.close()
