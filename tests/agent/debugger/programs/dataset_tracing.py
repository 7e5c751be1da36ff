"""Batches whose samples say whether the debugger traced the ``__getitem__`` that made them, in this process and in a
DataLoader worker (tests/agent/debugger/test_untraced_hooks.py); with ``--forever`` the worker keeps fetching until a
breakpoint set while it runs stops it."""

import sys

import torch
from torch.utils.data import DataLoader, Dataset


class TracedFlags(Dataset):
    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        traced = sys.gettrace() is not None  # @bp getitem
        return torch.tensor([float(traced)])


def traced_share(num_workers):
    batches = list(DataLoader(TracedFlags(8), batch_size=4, num_workers=num_workers))
    return float(torch.cat(batches).mean())


def main():
    if "--forever" in sys.argv:
        for _batch in DataLoader(TracedFlags(10**9), batch_size=4, num_workers=1):
            pass
    print(f"traced in worker {traced_share(1):.2f}")  # first: no batch of ours has run in this process before the fork
    print(f"traced in main {traced_share(0):.2f}")
    print("done")  # @bp end


if __name__ == "__main__":
    main()
