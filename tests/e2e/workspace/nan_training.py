"""A tiny regression whose loss turns NaN at step 3; the end-to-end tests debug it in real VS Code."""

import torch


def train() -> None:
    torch.manual_seed(0)
    features = torch.randn(64, 16)
    targets = torch.randn(64, 1)
    model = torch.nn.Linear(16, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(6):
        scale = torch.tensor(0.0) if step == 3 else torch.tensor(1.0)
        optimizer.zero_grad()
        prediction = model(features)
        loss = ((prediction - targets) ** 2).mean() / scale * scale  # @bp nan-origin
        loss.backward()  # @bp tensor-breakpoint
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    train()
