"""The Trainer of bug_running_loss_graph.py: trainer.py, but the running loss is summed as a tensor."""


class Callback:
    def on_epoch_end(self, trainer, epoch, logs):
        pass


class Trainer:
    def __init__(self, model, optimizer, loss_fn, scheduler=None, device="cpu", callbacks=()):
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.scheduler = scheduler
        self.device = device
        self.callbacks = list(callbacks)

    def fit(self, loader, epochs):
        self.model.train()
        for epoch in range(epochs):
            running = 0.0
            for inputs, targets in loader:
                inputs, targets = inputs.to(self.device), targets.to(self.device)
                self.optimizer.zero_grad()
                outputs = self.model(inputs)
                loss = self.loss_fn(outputs, targets)
                loss.backward()
                self.optimizer.step()
                running += loss  # BUG: memory|training-logic keeps every step's graph alive
            if self.scheduler is not None:
                self.scheduler.step()
            logs = {"loss": float(running) / len(loader)}
            for callback in self.callbacks:
                callback.on_epoch_end(self, epoch, logs)
