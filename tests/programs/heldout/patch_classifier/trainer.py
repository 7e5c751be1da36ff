"""A minimal Trainer with callbacks (in the spirit of Keras / Lightning loops, without the framework)."""

import torch
import torch.nn.functional as F


class Callback:
    def on_train_begin(self, trainer):
        pass

    def on_epoch_end(self, trainer, epoch, logs):
        pass


class EvaluationCallback(Callback):
    """Scores the model on a held-out loader after every epoch and adds val_ce / val_acc to the logs."""

    def __init__(self, loader):
        self.loader = loader

    def on_epoch_end(self, trainer, epoch, logs):
        model = trainer.model
        model.eval()
        total, correct, ce = 0, 0, 0.0
        with torch.no_grad():
            for images, labels in self.loader:
                logits = model(images)
                ce += F.cross_entropy(logits, labels, reduction="sum").item()
                correct += (logits.argmax(1) == labels).sum().item()
                total += labels.numel()
        logs["val_ce"] = ce / total
        logs["val_acc"] = correct / total
        model.train()


class LoggingCallback(Callback):
    def __init__(self, every=1):
        self.every = every

    def on_epoch_end(self, trainer, epoch, logs):
        if (epoch + 1) % self.every == 0:
            parts = [f"epoch {epoch + 1:2d}", f"train loss: {logs['loss']:.4f}"]
            if "val_acc" in logs:
                parts.append(f"val ce {logs['val_ce']:.4f}")
                parts.append(f"val acc {logs['val_acc']:.3f}")
            parts.append(f"lr {logs['lr']:.2e}")
            print(" | ".join(parts))


class Trainer:
    def __init__(self, model, optimizer, criterion, scheduler=None, callbacks=(), grad_clip=None):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion
        self.scheduler = scheduler
        self.callbacks = list(callbacks)
        self.grad_clip = grad_clip
        self.history = []

    def train_epoch(self, loader):
        running_loss, seen = 0.0, 0
        for images, labels in loader:
            self.optimizer.zero_grad()
            logits = self.model(images)
            loss = self.criterion(logits, labels)
            loss.backward()
            if self.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
            self.optimizer.step()
            running_loss += loss.item() * labels.size(0)
            seen += labels.size(0)
        return running_loss / seen

    def fit(self, train_loader, epochs):
        for cb in self.callbacks:
            cb.on_train_begin(self)
        self.model.train()
        for epoch in range(epochs):
            logs = {"lr": self.optimizer.param_groups[0]["lr"]}
            logs["loss"] = self.train_epoch(train_loader)
            if self.scheduler is not None:
                self.scheduler.step()
            for cb in self.callbacks:
                cb.on_epoch_end(self, epoch, logs)
            self.history.append(logs)
        return self.history
