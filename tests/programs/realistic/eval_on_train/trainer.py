"""The training and evaluation loops of the eval_on_train example (kept apart from the script, as many projects do)."""

import torch
import torch.nn.functional as F


class Trainer:
    """Runs one epoch of training over a loader, and evaluates the model over another."""

    def __init__(self, model, optimizer, device, log_interval=10):
        self.model = model
        self.optimizer = optimizer
        self.device = device
        self.log_interval = log_interval

    def train_epoch(self, loader, epoch):
        self.model.train()
        for batch_idx, (data, target) in enumerate(loader):
            data, target = data.to(self.device), target.to(self.device)
            self.optimizer.zero_grad()
            loss = F.cross_entropy(self.model(data), target)
            loss.backward()
            self.optimizer.step()
            if batch_idx % self.log_interval == 0:
                print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}]\tLoss: {loss.item():.6f}")

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        total_loss, correct = 0.0, 0
        for data, target in loader:
            data, target = data.to(self.device), target.to(self.device)
            output = self.model(data)
            total_loss += F.cross_entropy(output, target, reduction="sum").item()
            correct += int((output.argmax(dim=1) == target).sum())
        count = len(loader.dataset)
        accuracy = 100.0 * correct / count
        print(f"Test set: average loss: {total_loss / count:.4f}, accuracy: {correct}/{count} ({accuracy:.0f}%)")
        return correct / count
