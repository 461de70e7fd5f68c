"""An LSTM language model trained the way PyTorch's word_language_model
example trains one: the corpus batchified into columns, consecutive bptt
chunks, the hidden state carried from batch to batch (detached), gradient
clipping at 0.25. The corpus is a token file written here; the model is
batch-first. The lines marked `# pot` hook it (a line `# pot-was: <code>`
replaced that code); without them it is the plain script
(bindings/python/tests/test_loop_scripts.py runs both).

    python lstm_lm.py --out DIR
"""
import argparse
import os
from typing import Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import pot.torch as pt  # pot

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
args = p.parse_args()
os.makedirs(args.out, exist_ok=True)
torch.manual_seed(1111)
torch.set_num_threads(1)

ntokens, emsize, nhid, bptt, bsz, lr, clip = 20, 16, 16, 8, 4, 1.0, 0.25
ids = np.array([(i * 7 + i // 5) % ntokens for i in range(4 * 8 * 8 + 1)], dtype=np.uint16)
ids.tofile(os.path.join(args.out, "train.bin"))
nbatch = (len(ids) - 1) // bsz  # each column: nbatch tokens (+1 for the last target)


def get_batch(i):
    # rows of the batch-first layout: column b, tokens [b*nbatch + i, ... + bptt]
    starts = [b * nbatch + i for b in range(bsz)]
    x = torch.stack([torch.from_numpy(ids[s:s + bptt].astype(np.int64)) for s in starts])
    y = torch.stack([torch.from_numpy(ids[s + 1:s + 1 + bptt].astype(np.int64)) for s in starts])
    return x, y


class RNNModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(ntokens, emsize)
        self.rnn = nn.LSTM(emsize, nhid, 1, batch_first=True)
        self.decoder = nn.Linear(nhid, ntokens)

    def forward(self, input, hidden: Tuple[torch.Tensor, torch.Tensor]):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(self.drop(output)), hidden

    def init_hidden(self, bsz):
        return (torch.zeros(1, bsz, nhid), torch.zeros(1, bsz, nhid))


def criterion(output, target):
    return F.cross_entropy(output.reshape(-1, output.size(-1)), target.reshape(-1))


def repackage_hidden(h):
    return tuple(v.detach() for v in h)


model = RNNModel()
optimizer = torch.optim.SGD(model.parameters(), lr=lr)  # pot (the example updates p.data by hand: the same SGD step)

# The task (its owner's part): the token file's windows, the consecutive chunks of every column, the carried state.
stream = pt.commit_stream(os.path.join(args.out, "train.bin"), os.path.join(args.out, "stream.json"), window=bptt + 1)  # pot
program = pt.with_loss(model, criterion, target="y", inputs=["x"], carry=model.init_hidden(bsz)); pt.save_program(program, os.path.join(args.out, "model.pt"))  # pot
spec = pt.make_spec(optimizer, os.path.join(args.out, "model.pt"), dtype=torch.float32, batch_size=bsz, dropout=0.2, grad_clip_max_norm=clip); open(os.path.join(args.out, "spec.json"), "w").write(spec.to_json())  # pot
schedule = [[[b * nbatch + i for b in range(bsz)]] for i in range(0, nbatch - bptt + 1, bptt)]; task = pt.make_task(program, optimizer, spec, dataset_dir=os.path.join(args.out, "stream.json"), schedule=schedule, owner=b"owner", end_height=10**6, challenge_rounds=2)  # pot
rec = pt.Recorder(program, optimizer, task, os.path.join(args.out, "model.pt"), os.path.join(args.out, "ckpt"), dataset_dir=os.path.join(args.out, "stream.json"), schedule=schedule, checkpoint_every=2)  # pot

model.train()
hidden = model.init_hidden(bsz)
for batch, i in enumerate(range(0, nbatch - bptt + 1, bptt)):
    data, targets = get_batch(i)
    rec.begin_step()  # pot
    hidden = repackage_hidden(hidden)
    model.zero_grad()
    loss = program(data, targets)  # pot-was: output, hidden = model(data, hidden); loss = criterion(output, targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()  # pot-was: for p in model.parameters(): p.data.add_(p.grad, alpha=-lr)
    rec.end_step(loss)  # pot
    print(f"batch {batch}: loss {loss.item():.4f}")
rec.finish(); rec.close()  # pot
