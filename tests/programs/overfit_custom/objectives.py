"""Training objectives of the overfit_custom programs, in their own module as training code keeps them."""

import torch
import torch.nn.functional as F


def label_smoothed_nll(logits, target, smoothing=0.1):
    """Cross-entropy against smoothed one-hot targets, written out by hand."""
    classes = logits.size(-1)
    log_probs = torch.log_softmax(logits, dim=-1)
    smooth = torch.full_like(log_probs, smoothing / classes)
    smooth.scatter_(1, target.unsqueeze(1), 1.0 - smoothing + smoothing / classes)
    return -(smooth * log_probs).sum(dim=-1).mean()


def compute_loss(model, batch, smoothing=0.0, weight_decay=1e-5):
    """The loss of one (features, labels) batch, plus an L2 penalty read straight from the model's parameters."""
    features, labels = batch
    logits = model(features)
    penalty = sum(p.pow(2).sum() for p in model.parameters() if p.dim() > 1)
    return label_smoothed_nll(logits, labels, smoothing) + weight_decay * penalty


def masked_token_loss(logits, tags, mask):
    """Per-token cross-entropy over the real (unpadded) tokens of a batch of sequences."""
    batch, length, classes = logits.shape
    flat = F.log_softmax(logits.reshape(batch * length, classes), dim=-1)
    picked = flat.gather(1, tags.reshape(batch * length, 1)).squeeze(1)
    weights = mask.reshape(batch * length).float()
    return -(picked * weights).sum() / weights.sum().clamp(min=1.0)
