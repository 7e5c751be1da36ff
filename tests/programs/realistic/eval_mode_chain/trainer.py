"""A minimal trainer: runs epochs over in-memory batches and calls its callbacks after each epoch."""

import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer, callbacks=()):
        self.model, self.optimizer, self.callbacks = model, optimizer, list(callbacks)

    def fit(self, images, labels, epochs, batch_size):
        self.model.train()
        for epoch in range(1, epochs + 1):
            total = 0.0
            for start in range(0, len(images), batch_size):
                xb, yb = images[start : start + batch_size], labels[start : start + batch_size]
                self.optimizer.zero_grad()
                loss = F.cross_entropy(self.model(xb), yb)
                loss.backward()
                self.optimizer.step()
                total += loss.item() * len(xb)
            print(f"epoch {epoch}: loss {total / len(images):.4f}")
            for callback in self.callbacks:
                callback.on_epoch_end(self, epoch)
