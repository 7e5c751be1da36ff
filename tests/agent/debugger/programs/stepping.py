"""A training step written the usual way, stepped through in a debugger (tests/agent/debugger/test_stepping_dap.py):
the agent's hooks run inside every line of the loop (module hooks, the NaN sentinel's modes, step listeners, the
backward hooks), and Step Into / Step Over must reach only the program's lines and torch's, never TensorSight's."""

import torch
from torch import nn


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(4, 8)
        self.second = nn.Linear(8, 1)

    def forward(self, inputs):
        hidden = torch.relu(self.first(inputs))  # @bp forward
        return self.second(hidden)


def train(model, optimizer, inputs, targets, steps):
    for step in range(steps):
        optimizer.zero_grad()
        outputs = model(inputs)  # @bp call
        loss = nn.functional.mse_loss(outputs, targets)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {float(loss):.4f}")
    return float(loss)


def main():
    torch.manual_seed(0)
    model = TwoLayer()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs, targets = torch.randn(16, 4), torch.randn(16, 1)
    print(f"final loss {train(model, optimizer, inputs, targets, steps=3):.4f}")


if __name__ == "__main__":
    main()
