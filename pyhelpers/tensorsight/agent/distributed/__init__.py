"""Rank awareness under torch.distributed / torchrun.

Runs in every process of a distributed run; armed by ``agent.runtime.install``.
"""
