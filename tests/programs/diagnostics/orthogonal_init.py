"""Clean: weights initialised with nn.init (orthogonal, kaiming, xavier): no internal error from the sentinel."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 16, batch_first=True)
        self.fc = nn.Linear(16, 4)
        self.proj = nn.Linear(4, 4)
        for name, weight in self.rnn.named_parameters():
            if "weight" in name:
                nn.init.orthogonal_(weight)
        nn.init.kaiming_normal_(self.fc.weight, nonlinearity="relu")
        nn.init.xavier_uniform_(self.proj.weight)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.proj(F.relu(self.fc(out[:, -1])))


def train(model, X, y, optimizer, epoch):
    model.train()
    for start in range(0, len(X), 16):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(X[start : start + 16]), y[start : start + 16])
        loss.backward()
        optimizer.step()
        if start == 16:  # re-initialise one layer during training (a restart trick), while the sentinel is armed
            nn.init.orthogonal_(model.proj.weight)
            nn.init.kaiming_uniform_(model.fc.weight, a=0.1)
            nn.init.xavier_normal_(model.proj.weight)
    print(f"epoch {epoch}: loss {loss.item():.3f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    X = torch.randn(64, 5, 8)
    y = torch.randint(4, (64,))
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(1, args.epochs + 1):
        train(model, X, y, optimizer, epoch)


if __name__ == "__main__":
    main()
