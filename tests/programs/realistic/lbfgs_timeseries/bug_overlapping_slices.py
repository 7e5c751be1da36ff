"""LBFGS sine-wave prediction, with a held-out slice that overlaps the training slice of the same tensor.

The training waves are rows 3 onward, the test waves rows 0-4: waves 3 and 4 are in both, so the test loss partly
measures memorisation.
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=input.dtype)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=input.dtype)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=input.dtype)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=input.dtype)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs.append(output)
        for _ in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs.append(output)
        return torch.cat(outputs, dim=1)


def sine_waves(count=12, length=40, period=16.0, seed=2):
    """Sine waves with a random phase each, sampled once per time step."""
    generator = torch.Generator().manual_seed(seed)
    shifts = torch.randint(-40, 40, (count, 1), generator=generator)
    t = torch.arange(length).view(1, -1) + shifts
    return torch.sin(t.double() * 2 * math.pi / period)


def train(model, optimizer, input, target, step):
    def closure():
        optimizer.zero_grad()
        out = model(input)
        loss = F.mse_loss(out, target)
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    print(f"STEP: {step} loss: {loss.item():.6f}")


def test(model, test_input, test_target, future):
    with torch.no_grad():
        pred = model(test_input, future=future)
        loss = F.mse_loss(pred[:, :-future], test_target)
    print(f"test loss: {loss.item():.6f}")
    return pred


def main():
    parser = argparse.ArgumentParser(description="LBFGS sine-wave prediction")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.8)
    parser.add_argument("--max-iter", type=int, default=6)
    parser.add_argument("--future", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    data = sine_waves()
    input, target = data[3:, :-1], data[3:, 1:]
    test_input, test_target = data[:5, :-1], data[:5, 1:]  # BUG: leakage (rows 3 and 4 are also training rows)

    model = Sequence().double()
    optimizer = optim.LBFGS(model.parameters(), lr=args.lr, max_iter=args.max_iter)
    test(model, test_input, test_target, args.future)
    for step in range(args.steps):
        train(model, optimizer, input, target, step)
        test(model, test_input, test_target, args.future)


if __name__ == "__main__":
    main()
