"""A loss written as a plain class with ``__call__``, in the style of small loss libraries: a Dice-plus-focal loss
for binary segmentation."""

import torch


class FocalDiceLoss:
    def __init__(self, gamma: float = 2.0, smooth: float = 0.0) -> None:
        self.gamma = gamma
        self.smooth = smooth

    def focal(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        p = torch.sigmoid(logits)
        pt = torch.where(target > 0.5, p, 1 - p)
        return (-((1 - pt) ** self.gamma) * torch.log(pt)).mean()

    def dice(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        p = torch.sigmoid(logits)
        inter = (p * target).sum(dim=(1, 2))
        union = p.sum(dim=(1, 2)) + target.sum(dim=(1, 2))
        return (1 - (2 * inter + self.smooth) / (union + self.smooth)).mean()  # @nan

    def __call__(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return self.focal(logits, target) + self.dice(logits, target)
