"""Two persistent DataLoader workers feeding a short loop, as a training script's loader does
(tests/agent/debugger/test_debugpy_waits.py): the process and its forked workers each open their own link to the
adapter, start, and end under the debugger.
"""

import torch
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    torch.manual_seed(0)
    dataset = TensorDataset(torch.arange(64, dtype=torch.float32).reshape(32, 2))
    loader = DataLoader(dataset, batch_size=4, num_workers=2, persistent_workers=True)
    total = 0.0
    for _epoch in range(2):
        for (batch,) in loader:
            total += float(batch.sum())  # @bp in-loop
    print(f"total {total:.0f}", flush=True)


if __name__ == "__main__":
    main()
