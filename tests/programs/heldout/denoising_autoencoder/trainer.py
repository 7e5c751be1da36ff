"""A small Trainer with callbacks (in the style of Keras / Lightning loops): fit() runs the epochs, callbacks see the
trainer and the epoch's logs after each epoch."""


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
                running += loss.item()
            if self.scheduler is not None:
                self.scheduler.step()
            logs = {"loss": running / len(loader)}
            for callback in self.callbacks:
                callback.on_epoch_end(self, epoch, logs)
