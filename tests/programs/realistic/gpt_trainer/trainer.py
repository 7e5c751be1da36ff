"""A minimal trainer in the minGPT style: an infinite sampler over the dataset, AdamW with gradient clipping, and
callbacks triggered by name (``on_batch_end``) so the script can log and evaluate without touching the loop."""

from collections import defaultdict
from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader
from torch.utils.data.sampler import RandomSampler


@dataclass
class TrainerConfig:
    max_iters: int = 200
    batch_size: int = 32
    learning_rate: float = 3e-3
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

    def add_callback(self, onevent, callback):
        self.callbacks[onevent].append(callback)

    def set_callback(self, onevent, callback):
        self.callbacks[onevent] = [callback]

    def trigger_callbacks(self, onevent):
        for callback in self.callbacks.get(onevent, []):
            callback(self)

    def run(self):
        model, config = self.model, self.config
        self.optimizer = torch.optim.AdamW(
            model.parameters(), lr=config.learning_rate, betas=config.betas, weight_decay=config.weight_decay
        )
        sampler = RandomSampler(self.train_dataset, replacement=True, num_samples=config.max_iters * config.batch_size)
        train_loader = DataLoader(
            self.train_dataset, sampler=sampler, batch_size=config.batch_size, num_workers=config.num_workers
        )
        model.train()
        self.iter_num = 0
        for x, y in train_loader:
            _, self.loss = model(x, y)
            model.zero_grad(set_to_none=True)
            self.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_norm_clip)
            self.optimizer.step()
            self.iter_num += 1
            self.trigger_callbacks("on_batch_end")
            if self.iter_num >= config.max_iters:
                break
