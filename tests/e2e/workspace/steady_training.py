"""A training loop doing the same work every step, for the phase-timing walk in real VS Code: a long pause at a
breakpoint in the middle of the run must leave the measured time per step as it was without the pause.

Each step does tens of milliseconds of matrix work, so the phase shares are the loop's own: with a breakpoint in
``train`` the debugger traces every line of it, a fixed cost per line that, on steps of a few milliseconds, made
"other" swing around half of the step from run to run."""

import torch


def train() -> None:
    torch.manual_seed(0)
    features = torch.randn(2048, 256)
    targets = torch.randn(2048, 1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)  # @bp before-loop
    accumulation = 2.0
    for step in range(12):
        optimizer.zero_grad()
        loss = ((model(features) - targets) ** 2).mean()
        (loss / accumulation).backward()  # @bp chained-backward
        optimizer.step()
        if step == 6:
            print(f"halfway, loss {loss.item():.4f}")  # @bp pause
    print("done")


if __name__ == "__main__":
    train()
