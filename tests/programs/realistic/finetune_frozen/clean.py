"""Fine-tuning: the backbone is frozen on purpose (``requires_grad=False``, left out of the optimizer) and only the
neck and head train, on synthetic 8x8 images whose class is the quadrant holding a bright square.
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
    optimizer = torch.optim.Adam(trainable, lr=args.lr)
    train(args, model, optimizer, images, labels)


if __name__ == "__main__":
    main()
