"""Smoke program: a tensor and the builtin, for the injection test."""

import torch

x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
has_builtin = (
    "tensorsight" in dir(__builtins__) if isinstance(__builtins__, dict) is False else "tensorsight" in __builtins__
)
print("ready")  # @bp
