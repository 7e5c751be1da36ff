"""A loop over a DataLoader with worker processes: debugpy follows the workers as child debug sessions."""

import torch
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=16, num_workers=2)
    total = 0.0
    for features, _targets in loader:
        total += float(features.sum())  # @bp worker-loop
    print(f"done {total:.3f}")


if __name__ == "__main__":
    main()
