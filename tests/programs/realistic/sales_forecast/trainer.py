"""A small fit/evaluate loop with callbacks, in the manner of the trainers public examples write for themselves."""

import torch


class PrintLoss:
    def on_epoch_end(self, trainer, epoch, train_loss, valid_loss):
        print(f"epoch {epoch:2d} loss: {train_loss:.4f} valid: {valid_loss:.4f}")


class Trainer:
    def __init__(self, model, optimizer, loss_fn, callbacks=()):
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.callbacks = list(callbacks)

    def _run(self, loader, train):
        self.model.train(train)
        total, rows = 0.0, 0
        with torch.set_grad_enabled(train):
            for features, target in loader:
                loss = self.loss_fn(self.model(features), target)
                if train:
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
                total += loss.item() * len(target)
                rows += len(target)
        return total / rows

    def fit(self, train_loader, valid_loader, epochs):
        for epoch in range(epochs):
            train_loss = self._run(train_loader, train=True)
            valid_loss = self._run(valid_loader, train=False)
            for callback in self.callbacks:
                callback.on_epoch_end(self, epoch, train_loss, valid_loss)
