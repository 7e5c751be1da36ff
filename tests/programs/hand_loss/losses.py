"""Loss functions of the hand_loss training program (kept in their own module, as training code often does)."""

import torch
import torch.nn.functional as F


def soft_cross_entropy(logits, target, num_classes, smoothing=0.0):
    """Cross-entropy written out by hand, with optional label smoothing."""
    onehot = F.one_hot(target, num_classes).float()
    if smoothing:
        onehot = onehot * (1 - smoothing) + smoothing / num_classes
    probs = torch.softmax(logits, dim=1)
    return -(onehot * torch.log(probs)).sum(dim=1).mean()  # @nan


def per_class_recall(logits, target, num_classes):
    predicted = logits.argmax(dim=1)
    recalls = []
    for c in range(num_classes):
        members = target == c
        hits = (predicted[members] == c).float().sum()
        recalls.append(hits / members.sum().clamp(min=1))
    return torch.stack(recalls)
