"""Imports torch, then reaches two breakpoints (tests/agent/debugger/test_untraced.py)."""

import torch


def double(values):
    doubled = values * 2  # @bp in-function
    return doubled


zeros = torch.zeros(2, 3)  # @bp after-import
print("result", double(zeros).sum().item())
