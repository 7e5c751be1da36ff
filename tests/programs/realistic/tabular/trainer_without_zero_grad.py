"""The tabular example's Trainer with `zero_grad()` lost from train_step (used by bug_trainer_no_zero_grad.py).

backward() adds into .grad, so each optimizer step applies the sum of every earlier step's gradients.
"""

import torch.nn.functional as F


class Trainer:
    """Owns the model, its optimizer and scheduler; engine.train_one_epoch feeds it batches."""

    def __init__(self, model, optimizer, scheduler, device, max_grad_norm=5.0):
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.device = device
        self.max_grad_norm = max_grad_norm
        self.global_step = 0

    def train_step(self, features, labels):
        features, labels = features.to(self.device), labels.to(self.device)
        logits = self.model(features)
        loss = F.cross_entropy(logits, labels)
        loss.backward()  # BUG: training-logic (nothing clears the gradients between steps)
        self.optimizer.step()
        self.global_step += 1
        return loss.item()

    def end_epoch(self):
        self.scheduler.step()
        return self.scheduler.get_last_lr()[0]
