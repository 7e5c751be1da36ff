"""Synthetic 1-d signals streamed in batches: a numpy buffer is refilled for each batch (as a reader of a file or a
socket would) and handed to torch with ``torch.from_numpy``."""

import numpy as np


def make_signals(n, length=24, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, length, dtype=np.float32)
    freq = rng.uniform(1.0, 3.0, size=(n, 1)).astype(np.float32)
    clean = np.sin(2 * np.pi * freq * t).astype(np.float32)
    noisy = (clean + rng.normal(0.0, 0.3, size=clean.shape)).astype(np.float32)
    return noisy, clean


class BufferedBatches:
    """Copies each batch into one preallocated buffer pair (no allocation per batch)."""

    def __init__(self, inputs, targets, batch_size):
        self.inputs, self.targets, self.batch_size = inputs, targets, batch_size
        self.input_buffer = np.empty((batch_size, inputs.shape[1]), dtype=np.float32)
        self.target_buffer = np.empty((batch_size, targets.shape[1]), dtype=np.float32)

    def __len__(self):
        return len(self.inputs) // self.batch_size

    def __iter__(self):
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            self.input_buffer[:] = self.inputs[start : start + self.batch_size]
            self.target_buffer[:] = self.targets[start : start + self.batch_size]
            yield self.input_buffer, self.target_buffer
