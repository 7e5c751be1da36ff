"""The box segmentation Dataset with a horizontal-flip augmentation written for the image only."""

import torch
from torch.utils.data import Dataset


class FlippedBoxes(Dataset):
    def __init__(self, images, masks, flip_prob=0.5):
        self.masks = masks
        self.images = images
        self.flip_prob = flip_prob

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image = self.images[index]
        mask = self.masks[index]
        if torch.rand(1).item() < self.flip_prob:
            image = torch.flip(image, dims=[-1])  # BUG: training-logic the mask keeps its orientation
        return image, mask
