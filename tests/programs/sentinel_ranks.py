"""Test program: two gloo ranks, one of which divides by zero at step 2 (tests/agent/sentinel/test_sentinel_doctor.py).

Launched twice by the test with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT in the environment (as torchrun would).
"""

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(1, 4):
    features = torch.randn(4, 3)
    scale = torch.tensor(0.0 if (rank == 1 and step == 2) else 1.0)
    features = features / scale  # @nan
    loss = model(features).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total = loss.detach().clone()
    dist.all_reduce(total)
    print(f"rank {rank} step {step} loss {total.item():.4f}", flush=True)
dist.destroy_process_group()
