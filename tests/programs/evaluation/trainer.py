"""A small trainer class, in its own module as projects keep it: fit() trains an epoch and validates.

validate() runs under torch.no_grad() but forgets ``self.model.eval()``: the model's dropout stays on while it is
scored on the validation loader.
"""

import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer, train_loader, val_loader):
        self.model = model
        self.optimizer = optimizer
        self.train_loader = train_loader
        self.val_loader = val_loader

    def train_epoch(self):
        self.model.train()
        for inputs, targets in self.train_loader:
            self.optimizer.zero_grad()
            loss = F.mse_loss(self.model(inputs), targets)
            loss.backward()
            self.optimizer.step()
        return loss.item()

    def validate(self):
        total = 0.0
        with torch.no_grad():
            for inputs, targets in self.val_loader:
                predictions = self.model(inputs)  # BUG: training-logic
                total += F.mse_loss(predictions, targets, reduction="sum").item()
        return total / len(self.val_loader.dataset)

    def fit(self, epochs):
        for epoch in range(epochs):
            train_loss = self.train_epoch()
            print(f"epoch {epoch}: train {train_loss:.4f} val {self.validate():.4f}")
