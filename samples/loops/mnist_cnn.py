"""A convolutional classifier trained the way PyTorch's MNIST example
trains one: a DataLoader shuffling each epoch, Adadelta, and a StepLR
stepped once per epoch, an evaluation after each epoch. The images are
synthetic 28x28 digits (nothing is downloaded). The lines marked `# pot`
hook it (a line `# pot-was: <code>` replaced that code); without them it is
the plain script (bindings/python/tests/test_loop_scripts.py runs both).

    python mnist_cnn.py --out DIR [--epochs N]
"""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR

import pot.torch as pt  # pot


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.25)  # the example's second is 0.5: a spec has one dropout probability
        self.fc1 = nn.Linear(16 * 12 * 12, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


class Digits(torch.utils.data.Dataset):
    """Synthetic digits: a bright bar whose position is the label, plus noise."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.y = torch.randint(0, 10, (n,), generator=g)
        self.x = torch.rand(n, 1, 28, 28, generator=g) * 0.3
        for i in range(n):
            self.x[i, 0, 2 + 2 * int(self.y[i]), 4:24] = 1.0

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def test(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in loader:
            correct += (model(data).argmax(dim=1) == target).sum().item()
    return correct / len(loader.dataset)


p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--epochs", type=int, default=3)
args = p.parse_args()
os.makedirs(args.out, exist_ok=True)
torch.manual_seed(1)
torch.set_num_threads(1)

train_set, test_set = Digits(48, 0), Digits(32, 1)
train_loader = torch.utils.data.DataLoader(train_set, batch_size=12, shuffle=True, generator=torch.Generator().manual_seed(7))
test_loader = torch.utils.data.DataLoader(test_set, batch_size=16)
model = Net()
optimizer = optim.Adadelta(model.parameters(), lr=1.0)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)

# The task (its owner's part): the samples, the schedule the loader draws, the per-epoch StepLR.
pt.write_dataset(({"x": x, "y": y} for x, y in train_set), os.path.join(args.out, "data"))  # pot
program = pt.with_loss(model, F.nll_loss, target="y", inputs=["x"]); pt.save_program(program, os.path.join(args.out, "model.pt"))  # pot
spec = pt.make_spec(optimizer, os.path.join(args.out, "model.pt"), dtype=torch.float32, batch_size=12, dropout=0.25, scheduler=scheduler, lr_every=len(train_loader)); open(os.path.join(args.out, "spec.json"), "w").write(spec.to_json())  # pot
schedule = pt.plan_schedule(train_loader, args.epochs * len(train_loader)); task = pt.make_task(program, optimizer, spec, dataset_dir=os.path.join(args.out, "data"), schedule=schedule, owner=b"owner", end_height=10**6, challenge_rounds=2)  # pot
rec = pt.Recorder(program, optimizer, task, os.path.join(args.out, "model.pt"), os.path.join(args.out, "ckpt"), dataset_dir=os.path.join(args.out, "data"), schedule=schedule, checkpoint_every=3)  # pot

for epoch in range(1, args.epochs + 1):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        rec.begin_step()  # pot
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        rec.end_step(loss)  # pot
    print(f"epoch {epoch}: loss {loss.item():.4f}, accuracy {test(model, test_loader):.2f}")
    scheduler.step()
rec.finish(); rec.close()  # pot
