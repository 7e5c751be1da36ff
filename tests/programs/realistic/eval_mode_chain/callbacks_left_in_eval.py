"""Training callbacks, Keras/Lightning style; this validation callback never switches the model back to train mode."""

import torch
import torch.nn.functional as F


def evaluate(model, images, labels):
    model.eval()  # BUG: training-logic the model is left in eval mode for the rest of training
    with torch.no_grad():
        return F.cross_entropy(model(images), labels).item()


class ValidationCallback:
    """Scores the model on a held-out split at the end of each epoch."""

    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def on_epoch_end(self, trainer, epoch):
        loss = evaluate(trainer.model, self.images, self.labels)
        print(f"epoch {epoch}: val loss {loss:.4f}")
