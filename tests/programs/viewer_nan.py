"""A stop with a tensor holding NaNs and an Inf, for tests/agent/display/test_viewer_dap.py (View Tensor)."""

import torch

weights = torch.linspace(-1.0, 1.0, 600 * 400).reshape(600, 400)
weights[10, 20] = float("nan")
weights[599, 399] = float("nan")
weights[300, 0] = float("inf")
version = weights._version
print("ready", weights.shape)  # @bp
print("done", weights._version == version)
