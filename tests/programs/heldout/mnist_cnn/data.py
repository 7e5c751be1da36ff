"""Synthetic stand-in for MNIST: 12x12 single-channel images, each class a fixed random stroke pattern plus noise."""

import numpy as np


def make_digits(n, num_classes=10, seed=0):
    rng = np.random.default_rng(seed)
    templates = (np.random.default_rng(1234).random((num_classes, 12, 12)) > 0.7).astype(np.float32)
    labels = rng.integers(0, num_classes, size=n)
    images = templates[labels] * 255.0
    images += rng.normal(0.0, 90.0, size=images.shape)
    images = np.clip(images, 0, 255).astype(np.float32)
    return images[:, None, :, :], labels.astype(np.int64)
