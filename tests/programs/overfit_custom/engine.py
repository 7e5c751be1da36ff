"""A small trainer class, the way training code wraps its loop: the step calls a loss function from objectives.py."""

import torch
from objectives import compute_loss


class Trainer:
    def __init__(self, model, loader, lr, smoothing, log_every=10):
        self.model = model
        self.loader = loader
        self.smoothing = smoothing
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
        self.log_every = log_every
        self.history = []

    def training_step(self, batch):
        self.model.train()
        loss = compute_loss(self.model, batch, smoothing=self.smoothing)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=5.0)
        self.optimizer.step()
        return loss.item()

    def fit(self, epochs):
        for epoch in range(epochs):
            for batch in self.loader:
                self.history.append(self.training_step(batch))
            if epoch % self.log_every == 0:
                print(f"epoch {epoch} loss {self.history[-1]:.4f}")
        return self.history
