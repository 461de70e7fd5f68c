"""A causal language model fine-tuned with the Hugging Face Trainer, the way
the transformers examples (run_clm.py) do it: a token file cut into blocks
(group_texts), labels equal to the inputs, the Trainer's AdamW, linear
warm-up and decay, clipping at 1.0. The model is a tiny GPT-2 built from a
config, standing in for from_pretrained (nothing is downloaded). The lines marked `# pot` hook it (a line
`# pot-was: <code>` replaced that code); without them it is the plain
script (bindings/python/tests/test_loop_scripts.py runs both).

    python hf_finetune.py --out DIR [--steps N]
"""
import argparse
import os

import numpy as np
import torch
from torch.utils.data import default_collate
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

import pot.torch as pt  # pot

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--block", type=int, default=16)
args_cli = p.parse_args()
os.makedirs(args_cli.out, exist_ok=True)
torch.manual_seed(0)
torch.set_num_threads(1)

# The corpus: a token file of uint16 ids (a character-level vocabulary).
text = "".join(f"the {w} sat on the mat and saw {v} birds. " for w in ("cat", "dog") for v in range(5))
vocab = sorted(set(text))
np.array([vocab.index(c) for c in text], dtype=np.uint16).tofile(os.path.join(args_cli.out, "train.bin"))


class Blocks(torch.utils.data.Dataset):
    """run_clm's group_texts: the token file cut into blocks, labels = inputs."""

    def __init__(self, path, block):
        ids = torch.from_numpy(np.fromfile(path, dtype=np.uint16).astype(np.int64))
        self.blocks = ids[: len(ids) // block * block].view(-1, block)

    def __len__(self):
        return len(self.blocks)

    def __getitem__(self, i):
        return {"input_ids": self.blocks[i], "labels": self.blocks[i]}


train_set = Blocks(os.path.join(args_cli.out, "train.bin"), args_cli.block)
config = GPT2Config(vocab_size=len(vocab), n_positions=args_cli.block, n_embd=32, n_layer=2, n_head=2)
model = GPT2LMHeadModel(config)
model.train()

args = TrainingArguments(output_dir=os.path.join(args_cli.out, "trainer"), max_steps=args_cli.steps, per_device_train_batch_size=4, learning_rate=3e-3, warmup_steps=3, weight_decay=0.01, logging_steps=5, save_strategy="no", report_to=[], disable_tqdm=True, seed=0, data_seed=0, optim="adamw_torch", dataloader_drop_last=True)  # pot-was: args = TrainingArguments(output_dir=os.path.join(args_cli.out, "trainer"), max_steps=args_cli.steps, per_device_train_batch_size=4, learning_rate=3e-3, warmup_steps=3, weight_decay=0.01, logging_steps=5, save_strategy="no", report_to=[], disable_tqdm=True, seed=0)
trainer = Trainer(model=model, args=args, train_dataset=train_set)

# The task (its owner's part): the blocks, the traced program, the Trainer's optimizer and schedule, its batch order.
trainer.create_optimizer_and_scheduler(num_training_steps=args.max_steps); out = lambda f: os.path.join(args_cli.out, f)  # pot
pt.write_dataset((train_set[i] for i in range(len(train_set))), out("data")); program = pt.with_loss(model, inputs=["input_ids", "labels"], output=0); pt.save_program(program, out("model.pt"), example=default_collate([train_set[i] for i in range(4)]))  # pot
spec = pt.make_spec(trainer.optimizer, out("model.pt"), model=program, dtype=torch.float32, batch_size=4, dropout=config.resid_pdrop, grad_clip_max_norm=args.max_grad_norm, scheduler=trainer.lr_scheduler, steps=args.max_steps); open(out("spec.json"), "w").write(spec.to_json())  # pot
schedule = pt.plan_schedule(trainer.get_train_dataloader(), args.max_steps); task = pt.make_task(program, trainer.optimizer, spec, dataset_dir=out("data"), schedule=schedule, owner=b"owner", end_height=10**6, challenge_rounds=2)  # pot
rec = pt.Recorder(program, trainer.optimizer, task, out("model.pt"), out("ckpt"), dataset_dir=out("data"), schedule=schedule, checkpoint_every=3); trainer.add_callback(pt.TrainerCallback(rec))  # pot

result = trainer.train()
print(f"trained {result.global_step} steps, final loss {result.training_loss:.4f}")
rec.close()  # pot
