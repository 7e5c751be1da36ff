"""The tabular example's epoch loops, with evaluate() missing model.eval() (used by bug_engine_no_eval.py).

Under torch.no_grad() nothing is learnt, but dropout drops activations and batch norm normalises with, and updates
its running statistics from, the validation batches.
"""

import torch
import torch.nn.functional as F


def train_one_epoch(trainer, loader, epoch, log_interval=10):
    trainer.model.train()
    running = 0.0
    for batch_idx, (features, labels) in enumerate(loader):
        running += trainer.train_step(features, labels)
        if batch_idx % log_interval == 0:
            print(f"epoch {epoch} batch {batch_idx}/{len(loader)} loss: {running / (batch_idx + 1):.4f}")
    return running / len(loader)


def evaluate(model, loader, device):
    total_loss, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for features, labels in loader:
            features, labels = features.to(device), labels.to(device)
            logits = model(features)  # BUG: training-logic (dropout and batch norm in training mode)
            total_loss += F.cross_entropy(logits, labels, reduction="sum").item()
            correct += (logits.argmax(1) == labels).sum().item()
            seen += len(labels)
    return total_loss / seen, correct / seen
