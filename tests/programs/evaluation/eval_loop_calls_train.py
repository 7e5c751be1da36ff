"""A test loop that calls ``model.train()``: batch norm normalises with test batches and learns their statistics.

The loop is otherwise correct (``torch.no_grad()``, a summed ``F.nll_loss``), in the style of the PyTorch MNIST
example.
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(24, 48)
        self.bn1 = nn.BatchNorm1d(48)
        self.fc2 = nn.Linear(48, 3)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.bn1(self.fc1(x)))), dim=1)


def train(model, train_loader, optimizer, epoch):
    model.train()
    for data, target in train_loader:
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()


def test(model, test_loader):
    model.train()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)  # BUG: training-logic
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            correct += output.argmax(dim=1).eq(target).sum().item()
    print(f"test: loss {test_loss / len(test_loader.dataset):.4f}, accuracy {correct}/{len(test_loader.dataset)}")


def main():
    parser = argparse.ArgumentParser(description="test loop in training mode")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.manual_seed(1)
    features = torch.randn(1500, 24)
    classes = features[:, :3].argmax(dim=1)
    train_set = TensorDataset(features[:1200], classes[:1200])
    test_set = TensorDataset(features[1200:], classes[1200:])
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=100)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(1, args.epochs + 1):
        train(model, train_loader, optimizer, epoch)
        test(model, test_loader)


if __name__ == "__main__":
    main()
