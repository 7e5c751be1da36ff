"""DistributedDataParallel on two CPU processes (gloo), where one rank's data shard holds a corrupt record.

Run it the way a cluster job runs (no GPU needed):

    python -m torch.distributed.run --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:0 \
        --local-addr 127.0.0.1 examples/ddp_nan.py

The bug: one record of the data set is constant (a sensor that got stuck), and the per-sample standardisation
divides by its standard deviation, 0. The record sits in rank 1's shard, so at step 3 only rank 1 computes 0/0 = NaN;
DDP's gradient all-reduce then spreads the NaN to rank 0's weights, and from step 4 on both ranks print `loss nan`.
A plain log shows every rank failing at once; TensorSight names rank 1, step 3 and the `# @nan` line, and while the
debugger holds rank 1 there, it reports rank 0 as waiting in the all-reduce, not hung.
"""

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

STEPS = 6
BATCH = 8
FEATURES = 12
BAD_STEP = 3  # the step (1-based optimizer step) whose batch on rank 1 holds the stuck record


def make_data(world_size: int) -> TensorDataset:
    """A regression data set made in code; one record is stuck at a constant value."""
    generator = torch.Generator().manual_seed(0)
    records = STEPS * BATCH * world_size
    features = torch.randn(records, FEATURES, generator=generator)
    targets = features[:, :3].sum(dim=1, keepdim=True)
    # DistributedSampler(shuffle=False) hands rank r the records r, r + world, r + 2 * world, ...: this one is the
    # first record of rank 1's batch at BAD_STEP.
    stuck = (BAD_STEP - 1) * BATCH * world_size + 1
    features[stuck] = 0.5
    return TensorDataset(features, targets)


def standardise(batch: torch.Tensor) -> torch.Tensor:
    """Per-record standardisation (zero mean, unit spread over the features)."""
    centred = batch - batch.mean(dim=1, keepdim=True)
    spread = batch.std(dim=1, keepdim=True)
    return centred / spread  # @nan


def main() -> None:
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # same initial weights on every rank (DDP also broadcasts rank 0's)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = make_data(world_size)
    loader = DataLoader(data, batch_size=BATCH, sampler=DistributedSampler(data, shuffle=False))

    for step, (features, targets) in enumerate(loader, start=1):
        inputs = standardise(features)
        loss = nn.functional.mse_loss(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()  # @allreduce
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)

    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"done: {STEPS} steps on {world_size} ranks (pid {os.getpid()})", flush=True)


if __name__ == "__main__":
    main()
