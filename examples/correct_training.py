"""A correct training script: TensorSight reports nothing on it.

Splits made once with ``random_split`` (no overlap), shapes that match (``CrossEntropyLoss`` on ``[N, C]`` logits
and ``[N]`` class labels), model and data on one device with each batch moved once, ``zero_grad`` before every
``backward``, evaluation under ``model.eval()`` and ``torch.no_grad()``. The tests run the doctor on it and assert
silence; use it as the reference when reading the ``bug_*.py`` examples.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, random_split


def main() -> None:
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    inputs = torch.randn(2048, 20)
    labels = (inputs[:, :3].sum(dim=1) > 0).long()
    dataset = TensorDataset(inputs, labels)
    train_set, val_set = random_split(dataset, [1792, 256], generator=torch.Generator().manual_seed(0))
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
    val_loader = DataLoader(val_set, batch_size=256, num_workers=2, persistent_workers=True)

    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(4):
        model.train()
        for xb, yb in train_loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for xb, yb in val_loader:
                xb, yb = xb.to(device), yb.to(device)
                correct += (model(xb).argmax(dim=1) == yb).sum().item()
        print(f"epoch {epoch}: loss {loss.item():.3f}, val accuracy {correct / len(val_set):.3f}")


if __name__ == "__main__":
    main()
