"""Synthetic segmentation data: noisy images of axis-aligned boxes on a coarse grid, their masks, and a Dataset.

Boxes start and end on a 4-pixel grid, so the same mask comes back many times across the pool while every image has
its own noise (an image and its mask together make one sample).
"""

import torch
from torch.utils.data import Dataset


def make_pool(n=1200, size=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    grid = torch.arange(size)
    masks = torch.zeros(n, 1, size, size)
    corners = torch.randint(0, 3, (n, 2), generator=g) * 4
    extents = torch.randint(1, 3, (n, 2), generator=g) * 4
    for i in range(n):
        top, left = corners[i].tolist()
        height, width = extents[i].tolist()
        rows = (grid >= top) & (grid < top + height)
        cols = (grid >= left) & (grid < left + width)
        masks[i, 0] = (rows[:, None] & cols[None, :]).float()
    images = masks * 1.5 + torch.randn(n, 1, size, size, generator=g) * 0.6
    return images, masks


class BoxSegmentation(Dataset):
    def __init__(self, images, masks, augment=False):
        self.masks = masks
        self.images = images
        self.augment = augment

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image, mask = self.images[index], self.masks[index]
        if self.augment and torch.rand(1).item() < 0.5:
            image, mask = image.flip(-1), mask.flip(-1)
        return image, mask
