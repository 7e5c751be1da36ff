"""Fine-tuning: the backbone is frozen on purpose and only the neck and head should train, on synthetic 8x8 images
whose class is the quadrant holding a bright square. The model wrapper below runs the backbone *and the neck* under
``torch.no_grad()`` to save memory: the neck is in the optimizer and requires gradients, but never gets any.
"""

import argparse

import torch
import torch.nn.functional as F
from model import Classifier


def make_images(n, generator):
    labels = torch.randint(0, 4, (n,), generator=generator)
    images = 0.1 * torch.randn(n, 1, 8, 8, generator=generator)
    for i, label in enumerate(labels.tolist()):
        row, col = divmod(label, 2)
        images[i, 0, row * 4 : row * 4 + 4, col * 4 : col * 4 + 4] += 1.0
    return images, labels


def freeze(module):
    for param in module.parameters():
        param.requires_grad = False


class FrozenFeatures(torch.nn.Module):
    """Runs the frozen part without recording a graph (the neck slipped into it)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        with torch.no_grad():
            features = torch.relu(self.model.neck(self.model.backbone(x)))
        return self.model.head(features)


def train(args, model, optimizer, images, labels):
    model.train()
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        for start in range(0, len(images), args.batch_size):
            xb, yb = images[start : start + args.batch_size], labels[start : start + args.batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(xb)
        print(f"epoch {epoch}: loss {total / len(images):.4f}")


def main():
    parser = argparse.ArgumentParser(description="fine-tune a classifier head on a frozen backbone")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    images, labels = make_images(512, generator)
    model = Classifier(classes=4)
    freeze(model.backbone)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(trainable, lr=args.lr)  # BUG: training-logic the neck never gets a gradient
    train(args, FrozenFeatures(model), optimizer, images, labels)


if __name__ == "__main__":
    main()
