"""A small Trainer in the style of minGPT's: it owns the optimizer, iterates over batches of a stream and calls the
callbacks registered for "on_batch_end" and "on_epoch_end"; the loss is computed by the function it is given."""

from collections import defaultdict

import torch


class Trainer:
    def __init__(self, model, loss_fn, train_stream, lr=3e-3, batch_size=16, epochs=3, grad_clip=1.0):
        self.model, self.loss_fn, self.train_stream = model, loss_fn, train_stream
        self.batch_size, self.epochs, self.grad_clip = batch_size, epochs, grad_clip
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.01)
        self.callbacks = defaultdict(list)
        self.iter_num, self.epoch, self.loss = 0, 0, None

    def add_callback(self, event, callback):
        self.callbacks[event].append(callback)

    def trigger(self, event):
        for callback in self.callbacks[event]:
            callback(self)

    def run(self):
        rows = self.train_stream.size(0)
        for epoch in range(1, self.epochs + 1):
            self.epoch = epoch
            self.model.train()
            order = torch.randperm(rows)
            for start in range(0, rows - self.batch_size + 1, self.batch_size):
                batch = self.train_stream[order[start : start + self.batch_size]]
                self.loss = self.loss_fn(self.model, batch)
                self.optimizer.zero_grad(set_to_none=True)
                self.loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
                self.optimizer.step()
                self.iter_num += 1
                self.trigger("on_batch_end")
            self.trigger("on_epoch_end")
