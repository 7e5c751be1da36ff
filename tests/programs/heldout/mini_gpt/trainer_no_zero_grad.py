"""The Trainer of trainer.py with one change: the step never clears the gradients, so every backward() adds to
the sum of all earlier ones.

A small minGPT-style Trainer: a config dataclass, an endless loop over a DataLoader with a hand-set warmup and
cosine learning-rate schedule, gradient clipping, and callbacks fired by name."""

import math
from collections import defaultdict
from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader, RandomSampler


@dataclass
class TrainerConfig:
    max_iters: int = 200
    batch_size: int = 16
    learning_rate: float = 3e-3
    min_lr: float = 3e-4
    warmup_iters: int = 20
    betas: tuple = (0.9, 0.95)
    weight_decay: float = 0.1
    grad_norm_clip: float = 1.0
    num_workers: int = 0


class Trainer:
    def __init__(self, config, model, train_dataset):
        self.config = config
        self.model = model
        self.train_dataset = train_dataset
        self.optimizer = None
        self.callbacks = defaultdict(list)
        self.iter_num = 0
        self.loss = None
        self.smooth_loss = None
        self.lr = config.learning_rate

    def add_callback(self, onevent, callback):
        self.callbacks[onevent].append(callback)

    def trigger_callbacks(self, onevent):
        for callback in self.callbacks.get(onevent, []):
            callback(self)

    def get_lr(self, it):
        """Linear warmup to ``learning_rate``, then cosine decay to ``min_lr`` at ``max_iters``."""
        config = self.config
        if it < config.warmup_iters:
            return config.learning_rate * (it + 1) / config.warmup_iters
        progress = (it - config.warmup_iters) / max(1, config.max_iters - config.warmup_iters)
        coeff = 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))
        return config.min_lr + coeff * (config.learning_rate - config.min_lr)

    @torch.no_grad()
    def evaluate(self, dataset, max_batches=8):
        """Mean loss of the model over the first ``max_batches`` batches of ``dataset``, in eval mode; the model's
        mode is restored afterwards."""
        was_training = self.model.training
        self.model.eval()
        loader = DataLoader(dataset, batch_size=self.config.batch_size, shuffle=False)
        losses = []
        for i, (x, y) in enumerate(loader):
            if i >= max_batches:
                break
            _, loss = self.model(x, y)
            losses.append(loss.item())
        self.model.train(was_training)
        return sum(losses) / len(losses)

    def run(self):
        model, config = self.model, self.config
        self.optimizer = model.configure_optimizers(config)
        sampler = RandomSampler(self.train_dataset, replacement=True, num_samples=10**9)
        train_loader = DataLoader(
            self.train_dataset,
            sampler=sampler,
            batch_size=config.batch_size,
            num_workers=config.num_workers,
        )

        model.train()
        self.iter_num = 0
        data_iter = iter(train_loader)
        while True:
            x, y = next(data_iter)

            self.lr = self.get_lr(self.iter_num)
            for group in self.optimizer.param_groups:
                group["lr"] = self.lr

            _, self.loss = model(x, y)
            self.loss.backward()  # BUG: training-logic gradients never cleared (model.zero_grad() dropped)
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_norm_clip)
            self.optimizer.step()

            if self.smooth_loss is None:
                self.smooth_loss = self.loss.item()
            else:
                self.smooth_loss = 0.9 * self.smooth_loss + 0.1 * self.loss.item()

            self.trigger_callbacks("on_batch_end")
            self.iter_num += 1
            if self.iter_num >= config.max_iters:
                break
